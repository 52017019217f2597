"""Label savings beside a prediction-powered estimate: effective labels and the saving factor by hand, and the
sentence for each regime (below 1, below 2 with Dorner, Nastl & Hardt's bound, 2 and above)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.meta import ppi
from evalcore.meta.results import Estimate, to_dict


def est(width_ppi: float, width_human: float, n: int = 30) -> ppi.SystemEstimate:
    return ppi.SystemEstimate(system="s", ppi=Estimate(3.0, 3 - width_ppi / 2, 3 + width_ppi / 2, n=n), lam=1.0,
                              n_labelled=n, n_unlabelled=70,
                              human_only=Estimate(3.0, 3 - width_human / 2, 3 + width_human / 2, n=n),
                              judge_only=Estimate(3.1, 3.0, 3.2, n=100))


def test_by_hand():
    e = est(0.2, 0.4)  # half the width: four times the labels, 30 * 4 = 120
    assert e.effective_labels == pytest.approx(120) and e.label_saving == pytest.approx(4)
    assert "Dorner" not in e.saving_note and "4.00" in e.saving_note
    assert to_dict(e)["effective_labels"] == pytest.approx(120)


def test_regimes():
    assert "Dorner, Nastl & Hardt" in est(0.4 / math.sqrt(1.5), 0.4).saving_note
    assert "saves no human labels" in est(0.5, 0.4).saving_note
    assert est(0.0, 0.4).saving_note == "" and math.isnan(est(0.0, 0.4).effective_labels)


def test_on_ppi_by_system_matches_widths():
    rng = np.random.default_rng(0)
    n = 400
    judge = rng.normal(3, 1, n)
    human = np.where(np.arange(n) < 100, judge + rng.normal(0, 0.3, n), np.nan)
    frame = __import__("pandas").DataFrame({"item_id": [f"i{i}" for i in range(n)], "doc_id": [f"d{i}" for i in range(n)],
                                            "system_id": "s", "judge": judge, "human": human})
    s = ppi.ppi_by_system(frame, n_resamples=0).per_system[0]
    wh = s.human_only.ci_high - s.human_only.ci_low
    assert s.effective_labels == pytest.approx(100 * (wh / (s.ci_high - s.ci_low)) ** 2)
    assert s.label_saving > 2  # a judge this close to the humans saves more than half
