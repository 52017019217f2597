"""The reliability of repeated draws (evalcore.meta.draw_reliability): ICC(1,1) and ICC(1,K) with their F intervals
against pingouin (1e-9), alpha among draws against the krippendorff package, the share of differing pairs and the
per-item spread counted by hand, Spearman-Brown and the draws needed (hypothesis), the two-stage bootstrap."""

from __future__ import annotations

import itertools
import math

import krippendorff
import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from evalcore import runs
from evalcore.meta import correlate
from evalcore.meta import draw_reliability as R

TC = "topical_chat/chiang-lee-gpt-3.5-geval"


def _long(M: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame([(f"i{i}", j, M[i, j]) for i in range(M.shape[0]) for j in range(M.shape[1])],
                        columns=["item_id", "draw", "judge"])


def _pingouin(M: np.ndarray) -> pd.DataFrame:
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(pg.options, "round.column.CI95", None)
        t = pg.intraclass_corr(_long(M), "item_id", "draw", "judge").set_index("Type")
    # the names pingouin gave its rows and interval column changed (0.5: ICC1 / ICC1k, CI95%; 0.7: ICC(1,1) /
    # ICC(1,k), CI95); before 0.7 it rounds the interval to two decimals, hence CI_TOL
    return t.rename(index={"ICC1": "ICC(1,1)", "ICC1k": "ICC(1,k)"}, columns={"CI95%": "CI95"})


CI_TOL = 1e-9 if int(pg.__version__.split(".")[0]) > 0 or int(pg.__version__.split(".")[1]) >= 7 else 0.005


@pytest.mark.parametrize("seed,n,k", [(0, 30, 4), (1, 12, 2), (2, 200, 7)])
def test_icc_equals_pingouin_to_1e9(seed, n, k):
    rng = np.random.default_rng(seed)
    M = np.round(rng.normal(size=(n, 1)) + rng.normal(size=(n, k)) * 0.8, 1)
    icc1, icc1k = R.icc_oneway(M)
    ref = _pingouin(M)
    for mine, row in ((icc1, ref.loc["ICC(1,1)"]), (icc1k, ref.loc["ICC(1,k)"])):
        assert mine.statistic == pytest.approx(row["ICC"], abs=1e-9)
        assert mine.ci_low == pytest.approx(row["CI95"][0], abs=CI_TOL)
        assert mine.ci_high == pytest.approx(row["CI95"][1], abs=CI_TOL)
        assert mine.pvalue == pytest.approx(row["pval"], abs=1e-9) and mine.n == n


def test_icc_on_topical_chat_coherence_equals_pingouin_and_leaves_out_incomplete_items():
    ds, run = runs.get_dataset("topical_chat"), runs.load_run(TC)
    _, M = R.draw_matrix(run.draw_scores("naturalness"))
    icc1, _ = R.icc_oneway(M)
    ref = _pingouin(M[~np.isnan(M).any(axis=1)])  # pingouin's listwise deletion, done here to say it is ours too
    assert icc1.statistic == pytest.approx(ref.loc["ICC(1,1)", "ICC"], abs=1e-9)
    assert icc1.dropped == 1 and icc1.n == M.shape[0] - 1
    assert ds.dimension("naturalness").scale == (1.0, 3.0)


def test_alpha_among_draws_equals_the_krippendorff_package():
    rng = np.random.default_rng(3)
    M = rng.integers(1, 4, size=(40, 5)).astype(float)
    M[0, 2] = M[5, 0] = np.nan
    d = _long(M)
    mine = R.draws_alpha(d).statistic
    ref = krippendorff.alpha(reliability_data=M.T, level_of_measurement="interval")
    assert mine == pytest.approx(ref, abs=1e-9)


def test_pairs_differ_and_spread_by_hand():
    M = np.array([[1, 1, 2], [3, 3, 3], [1, np.nan, 2]], dtype=float)
    # pairs: item 0 (1,1) same, (1,2) x2 differ -> 2 of 3; item 1: 0 of 3; item 2: 1 of 1
    assert R.pairs_differ(M) == pytest.approx(3 / 7)
    sp = R.item_spread(_long(M))
    assert sp["item_id"].tolist()[0] == "i2" and sp.set_index("item_id").loc["i1", "sd"] == 0.0
    brute = [sum(a != b for a, b in itertools.combinations(r[~np.isnan(r)], 2)) for r in M]
    assert sum(brute) == 3


@settings(max_examples=200, deadline=None)
@given(r=hs.floats(0.01, 0.99), target=hs.floats(0.05, 0.95))
def test_draws_needed_is_the_fewest_whose_spearman_brown_reaches_the_target(r, target):
    m = R.draws_needed(r, target)
    assert R.spearman_brown(r, m) >= target - 1e-9
    assert m == 1 or R.spearman_brown(r, m - 1) < target


def test_spearman_brown_projection_passes_through_the_k_draw_mean():
    proj = R.projected_agreement(0.5, 0.3, 10, 20)
    assert proj[10] == pytest.approx(0.5) and proj[1] < proj[2] < proj[10] < proj[20]
    assert proj[1] == pytest.approx(0.5 * math.sqrt(0.3 / R.spearman_brown(0.3, 10)))
    assert R.draws_needed(-0.1) is None and math.isnan(R.projected_agreement(0.5, -0.1, 3, 6)[1])


def test_two_stage_point_is_the_mean_of_draws_correlation_and_the_interval_is_wider_with_noise():
    rng = np.random.default_rng(5)
    n_docs, per_doc, k = 60, 3, 6
    truth = rng.normal(size=n_docs * per_doc)
    frame = pd.DataFrame({"item_id": [f"i{i}" for i in range(len(truth))],
                          "doc_id": [f"d{i // per_doc}" for i in range(len(truth))], "system_id": "s",
                          "judge": np.nan, "human": truth + rng.normal(size=len(truth)) * 0.5})
    quiet = _long(np.repeat(truth[:, None], k, axis=1))
    noisy = _long(truth[:, None] + rng.normal(size=(len(truth), k)) * 2.0)
    for draws in (quiet, noisy):
        e = R.two_stage_correlation(draws, frame, n_resamples=300)
        mean = draws.groupby("item_id")["judge"].mean()
        ref = correlate(frame.assign(judge=frame["item_id"].map(mean)), n_resamples=0)
        assert e.statistic == pytest.approx(ref.statistic, abs=1e-12) and e.ci_low < e.statistic < e.ci_high
        assert e.resampling == R.TWO_STAGE and e.n_resamples == 300
    again = R.two_stage_correlation(noisy, frame, n_resamples=300)
    assert again == R.two_stage_correlation(noisy, frame, n_resamples=300)  # seeded
    summary = R.two_stage_correlation(noisy, frame, level="summary", n_resamples=30)
    assert summary.ci_low <= summary.ci_high


def test_a_draws_table_with_a_repeated_draw_is_refused_by_name():
    d = pd.DataFrame({"item_id": ["a", "a"], "draw": [0, 0], "judge": [1.0, 2.0]})
    with pytest.raises(ValueError, match="item 'a' has draw 0 more than once"):
        R.draw_matrix(d)


def test_an_item_with_one_parsed_draw_has_no_spread_rather_than_zero():
    M = np.array([[1, 1, 1], [2, np.nan, np.nan], [1, 3, 2]], dtype=float)
    sp = R.item_spread(_long(M)).set_index("item_id")
    assert sp.loc["i0", "sd"] == 0.0 and np.isnan(sp.loc["i1", "sd"]) and sp.loc["i2", "sd"] == pytest.approx(1.0)
    assert R.item_spread(_long(M))["item_id"].tolist() == ["i2", "i0", "i1"]  # the unmeasured item last
