"""Prediction-powered estimates (evalcore.meta.ppi): the formula by hand, every system equal to ppi_py's
ppi_mean_pointestimate / ppi_mean_ci, the document resamples against a plain recomputation, the planning view."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import ppi_py  # the authors' package (the test extra): the reference every per-system figure is held to
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from evalcore.meta import ppi
Z = 1.959963984540054


def test_classic_ppi_by_hand():
    # rated: Y = (3, 4), Yhat = (2, 5); unrated Yhat~ = (1, 2, 3).
    # theta = mean(Yhat~) + mean(Y - Yhat) = 2 + 0 = 2
    # se^2 = var0(Yhat~) / 3 + var0(Y - Yhat) / 2 = (2/3) / 3 + 1 / 2
    est, lo, hi, lam = ppi.ppi_mean([3, 4], [2, 5], [1, 2, 3], lam=1.0)
    half = Z * math.sqrt(2 / 9 + 1 / 2)
    assert (est, lam) == (2.0, 1.0)
    assert (lo, hi) == (pytest.approx(2 - half, abs=1e-12), pytest.approx(2 + half, abs=1e-12))


def test_power_tuned_lambda_by_hand():
    # cov(Y, Yhat) with 1/n: ((-0.5)(-1.5) + (0.5)(1.5)) / 2 = 0.75; var of all five Yhat (2, 5, 1, 2, 3) with
    # 1/(5-1): 9.2 / 4 = 2.3; lambda = 0.75 / ((1 + 2/3) * 2.3)
    lam = 0.75 / ((1 + 2 / 3) * 2.3)
    est, _, _, got = ppi.ppi_mean([3, 4], [2, 5], [1, 2, 3], lam=None)
    assert got == pytest.approx(lam, abs=1e-12)
    assert est == pytest.approx(lam * 2 + (3.5 - lam * 3.5), abs=1e-12)
    # lambda 0: the rated items' mean alone; every item rated: the same, whatever lambda was asked
    assert ppi.ppi_mean([3, 4], [2, 5], [1, 2, 3], lam=0.0)[0] == 3.5
    assert ppi.ppi_mean([3, 4], [2, 5], [], lam=1.0)[0] == 3.5


def study(seed: int, n_docs: int = 60, n_systems: int = 4, rated_docs: int = 15, bias: float = 0.8) -> pd.DataFrame:
    """Systems sharing documents; humans rated some documents; the judge is biased and noisy."""
    rng = np.random.default_rng(seed)
    rows = []
    quality = rng.normal(3, 0.5, n_systems)
    difficulty = rng.normal(0, 0.5, n_docs)
    rated = set(rng.choice(n_docs, rated_docs, replace=False).tolist())
    for d in range(n_docs):
        for s in range(n_systems):
            h = quality[s] + difficulty[d] + rng.normal(0, 0.7)
            j = 0.6 * h + bias + rng.normal(0, 0.5)
            rows.append({"item_id": f"d{d}/s{s}", "doc_id": f"d{d}", "system_id": f"S{s}", "judge": j,
                         "human": h if d in rated else np.nan})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("method, lam", [("ppi", 1), ("ppi++", None)])
def test_every_system_equals_ppi_py(method, lam):
    frame = study(1)
    res = ppi.ppi_by_system(frame, method=method, n_resamples=0)
    for s in res.per_system:
        g = frame[frame["system_id"] == s.system]
        rated = g["human"].notna()
        Y, Yhat, Yu = g.loc[rated, "human"].to_numpy(), g.loc[rated, "judge"].to_numpy(), g.loc[~rated, "judge"].to_numpy()
        point = np.asarray(ppi_py.ppi_mean_pointestimate(Y, Yhat, Yu, lam=lam)).item()
        lo, hi = (np.asarray(x).item() for x in ppi_py.ppi_mean_ci(Y, Yhat, Yu, alpha=0.05, lam=lam))
        assert s.estimate == pytest.approx(point, abs=1e-10)
        assert (s.ci_low, s.ci_high) == (pytest.approx(lo, abs=1e-10), pytest.approx(hi, abs=1e-10))
        assert (s.n_labelled, s.n_unlabelled) == (15, 45)
        # human-only is PPI with lambda 0 (ppi_py's classical interval); judge-only is the judge's mean everywhere
        lo0, hi0 = (np.asarray(x).item() for x in ppi_py.ppi_mean_ci(Y, Yhat, Yu, alpha=0.05, lam=0))
        assert (s.human_only.ci_low, s.human_only.ci_high) == (pytest.approx(lo0), pytest.approx(hi0))
        assert s.judge_only.statistic == pytest.approx(g["judge"].mean())


def test_document_resamples_equal_a_plain_recomputation():
    frame = study(2, n_docs=20, n_systems=3, rated_docs=8)
    res = ppi.ppi_by_system(frame, method="ppi++", n_resamples=0)
    lams = {s.system: s.lam for s in res.per_system}
    systems = [s.system for s in res.per_system]
    boot = ppi.document_resamples(frame, systems, lams, 5, random_state=11)
    docs = np.unique(frame["doc_id"].astype(str))
    draws = np.random.default_rng(11).integers(0, len(docs), size=(5, len(docs)))
    for r in range(5):
        resampled = pd.concat([frame[frame["doc_id"] == docs[k]] for k in draws[r]])
        for i, s in enumerate(systems):
            g = resampled[resampled["system_id"] == s]
            rated = g["human"].notna()
            want = lams[s] * g.loc[~rated, "judge"].mean() + (g.loc[rated, "human"] - lams[s] * g.loc[rated, "judge"]).mean()
            assert boot[r, i] == pytest.approx(want, abs=1e-10)


def test_differences_and_ranking():
    frame = study(3, n_systems=3)
    res = ppi.ppi_by_system(frame, method="ppi", n_resamples=300, random_state=0)
    est = {s.system: s.estimate for s in res.per_system}
    assert [(d.system_a, d.system_b) for d in res.differences] == [("S0", "S1"), ("S0", "S2"), ("S1", "S2")]
    for d in res.differences:
        assert d.estimate == pytest.approx(est[d.system_a] - est[d.system_b])
        assert d.ci_low < d.ci_high
    order = sorted(est, key=est.get, reverse=True)
    assert [r.system for r in res.ranking] == order and [r.rank for r in res.ranking] == [1, 2, 3]
    assert all(1 <= r.rank_low <= r.rank <= r.rank_high <= 3 for r in res.ranking)
    d = res.as_dict()
    assert set(d) >= {"method", "per_system", "differences", "ranking"}
    assert set(d["per_system"][0]) >= {"system", "estimate", "ci_low", "ci_high", "lambda", "n_labelled",
                                       "n_unlabelled", "human_only", "judge_only"}


def test_failed_judge_scores_are_left_out_and_counted():
    frame = study(4, n_systems=2)
    frame.loc[[0, 5], "judge"] = np.nan
    res = ppi.ppi_by_system(frame, n_resamples=0)
    assert res.judge_failed == 2
    with pytest.raises(ValueError, match="method"):
        ppi.ppi_by_system(frame, method="ppi+")


def test_pairwise_frame_by_hand():
    prefs = pd.DataFrame({"pair_id": ["p1", "p1", "p1"], "doc_id": "d1", "item_a": "x1", "item_b": "y1",
                          "dimension": "preference", "annotator": ["u", "v", "w"], "preferred": ["a", "tie", "b"]})
    comps = pd.DataFrame({"pair_id": ["p1", "p2"], "doc_id": ["d1", "d2"], "item_first": ["x1", "x2"],
                          "item_second": ["y1", "y2"], "dimension": "preference", "order": "ab", "raw": "",
                          "verdict": ["first", "tie"], "status": "ok", "reason": ""})
    items = pd.DataFrame({"item_id": ["x1", "y1", "x2", "y2"], "doc_id": ["d1", "d1", "d2", "d2"],
                          "system_id": ["X", "Y", "X", "Y"], "output": ""})
    f = ppi.pairwise_frame(prefs, comps, items, dimension="preference").set_index(["item_id", "system_id"])
    # p1: votes a, tie, b -> X's points (1 + 0.5 + 0) / 3 = 0.5; the judge says first = a: X 1, Y 0
    assert f.loc[("p1", "X"), ["judge", "human"]].tolist() == [1.0, 0.5]
    assert f.loc[("p1", "Y"), ["judge", "human"]].tolist() == [0.0, 0.5]
    # p2: nobody voted (unrated); the judge says tie: 0.5 each
    assert f.loc[("p2", "X"), "judge"] == 0.5 and math.isnan(f.loc[("p2", "X"), "human"])
    # two outputs of one model say nothing about its win rate: left out, and said when nothing else is left
    same = items.assign(system_id="X")
    with pytest.raises(ValueError, match="two different models"):
        ppi.pairwise_frame(prefs, comps, same, dimension="preference")


def test_hide_ratings_keeps_the_asked_documents():
    frame = study(5)
    out = ppi.hide_ratings(ppi.check_frame(study(5, rated_docs=60)), 10, random_state=1)
    assert out.loc[out["human"].notna(), "doc_id"].nunique() == 10
    with pytest.raises(ValueError, match="n_documents"):
        ppi.hide_ratings(frame, 16)


def test_planning_by_hand_and_ppi_needs_fewer_with_a_good_judge():
    rng = np.random.default_rng(0)
    y = rng.normal(3, 1, 400)
    frame = pd.DataFrame({"item_id": range(400), "doc_id": range(400), "system_id": "S",
                          "judge": y + rng.normal(0, 0.3, 400) + 1.0, "human": np.where(np.arange(400) < 50, y, np.nan)})
    (row,) = ppi.plan_rated_documents(frame, 0.4, method="ppi++")
    # humans alone: the smallest n with 2 z sd(Y) / sqrt(n) <= 0.4
    sd = float(np.std(y[:50]))
    assert row.human_only == math.ceil((2 * Z * sd / 0.4) ** 2)
    assert row.ppi < row.human_only
    wh, wp, _ = ppi.interval_widths(np.array([row.ppi - 1, row.ppi]), 400, float(np.var(y[:50])),
                                    float(np.var(frame["judge"], ddof=1)),
                                    float(np.cov(y[:50], frame["judge"][:50], ddof=0)[0, 1]), method="ppi++")
    assert wp[0] > 0.4 >= wp[1]
    (unreachable,) = ppi.plan_rated_documents(frame, 0.001)
    assert unreachable.ppi is None and unreachable.human_only is None


@settings(max_examples=30, deadline=None)
@given(seed=hst.integers(0, 10_000), bias=hst.floats(-5, 5), method=hst.sampled_from(["ppi", "ppi++"]))
def test_property_a_judge_bias_leaves_ppi_unchanged(seed, bias, method):
    """Adding a constant to every judge score (a biased judge) moves the judge-only estimate by that constant and
    leaves the prediction-powered estimate and its interval where they were: PPI is valid whatever the bias."""
    rng = np.random.default_rng(seed)
    y, yhat, yu = rng.normal(0, 1, 12), rng.normal(0, 1, 12), rng.normal(0, 1, 30)
    yhat = 0.5 * y + yhat
    lam = 1.0 if method == "ppi" else None
    base = ppi.ppi_mean(y, yhat, yu, lam=lam)
    moved = ppi.ppi_mean(y, yhat + bias, yu + bias, lam=lam)
    assert moved[:3] == pytest.approx(base[:3], abs=1e-9)
    assert 0 <= base[3] <= 1
