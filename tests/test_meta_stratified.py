"""Labelling stratified by the judge's verdict: Neyman allocation and the saving by hand, the inverse-probability
estimate's coverage by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.meta import stratified as st


def test_plan_by_hand():
    items = ["neg"] * 800 + ["pos"] * 200
    p = st.plan(items, {"neg": 0.1, "pos": 0.5}, 100)
    # W = (0.8, 0.2), s = (0.3, 0.5): W s = (0.24, 0.10), shares 0.706 / 0.294
    assert p.allocation == (71, 29)
    assert p.variance_stratified == pytest.approx(0.34 ** 2 / 100)
    assert p.variance_random == pytest.approx(0.18 * 0.82 / 100)  # p = 0.8 * 0.1 + 0.2 * 0.5
    assert p.saving == pytest.approx(0.18 * 0.82 / 0.34 ** 2)  # 1.277
    assert p.inclusion == pytest.approx((71 / 800, 29 / 200))


def test_uninformative_judge_saves_nothing():
    p = st.plan(["a"] * 500 + ["b"] * 500, {"a": 0.3, "b": 0.3}, 50)
    assert p.saving == pytest.approx(1.0)


def test_ipw_covers_by_simulation():
    rng = np.random.default_rng(0)
    n_big = {"neg": 800, "pos": 200}
    truth_y = {"neg": rng.uniform(size=800) < 0.1, "pos": rng.uniform(size=200) < 0.6}
    truth = (truth_y["neg"].sum() + truth_y["pos"].sum()) / 1000
    hits = 0
    for _ in range(400):
        labels, strata = [], []
        for name, k in (("neg", 60), ("pos", 40)):
            pick = rng.choice(n_big[name], size=k, replace=False)
            labels += truth_y[name][pick].astype(float).tolist()
            strata += [name] * k
        e = st.ipw_share(labels, strata, n_big)
        hits += e.ci_low <= truth <= e.ci_high
    assert 0.92 <= hits / 400 <= 0.99


def test_missing_stratum_is_said():
    e = st.ipw_share([1, 0], ["pos", "pos"], {"neg": 10, "pos": 5})
    assert np.isnan(e.statistic) and "stratum 'neg'" in e.note
