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
from scipy import stats as sps

from evalcore.meta import ppi
from evalcore.meta.results import to_dict
Z = 1.959963984540054


def test_classic_ppi_by_hand():
    # rated: Y = (3, 4), Yhat = (2, 5); unrated Yhat~ = (1, 2, 3).
    # theta = mean(Yhat~) + mean(Y - Yhat) = 2 + 0 = 2
    # two rated documents (fewer than 30): Student t with 1 df and each part's variance times G / (G - 1):
    # se^2 = var0(Y - Yhat) / 2 * 2 + var0(Yhat~) / 3 * 3/2 = 1/2 * 2 + (2/9) * 3/2 = 1 + 1/3
    est, lo, hi, lam = ppi.ppi_mean([3, 4], [2, 5], [1, 2, 3], lam=1.0)
    half = sps.t.ppf(0.975, 1) * math.sqrt(1 + 1 / 3)
    assert (est, lam) == (2.0, 1.0)
    assert (lo, hi) == (pytest.approx(2 - half, abs=1e-12), pytest.approx(2 + half, abs=1e-12))


def test_small_samples_use_student_t_with_unbiased_variances():
    # 12 rated outputs, one per document: the humans-only interval is the textbook t interval (scipy's)
    rng = np.random.default_rng(3)
    y = rng.normal(3, 1, 12)
    m = ppi.ppi_interval(y, y, [], lam=0.0)
    lo, hi = sps.t.interval(0.95, 11, loc=y.mean(), scale=sps.sem(y))
    assert (m.ci_low, m.ci_high, m.interval, m.rated_documents) == (pytest.approx(lo), pytest.approx(hi), "t", 12)
    # from 30 rated documents on: the normal interval, ppi_py's
    y30 = rng.normal(3, 1, 30)
    m30 = ppi.ppi_interval(y30, y30, [], lam=0.0)
    lo30, hi30 = (np.asarray(v).item() for v in ppi_py.ppi_mean_ci(y30, y30, np.ones(5), alpha=0.05, lam=0))
    assert (m30.ci_low, m30.ci_high, m30.interval) == (pytest.approx(lo30), pytest.approx(hi30), "normal")


def test_ratings_all_alike_give_an_interval_that_does_not_collapse():
    # the audit's case: 20 rated documents all rated 5, PPI++ lambda 0 (no covariance): it was 5.0 [5.0, 5.0].
    # Now the rated part's variance is bounded: p = 1 - 0.025^(1/20) (Clopper-Pearson, no document unlike the
    # others), D = 4 (the 1-5 scale), variance D^2 p (1 - p) / 20, Student t with 19 df; clipped to the scale.
    rng = np.random.default_rng(0)
    m = ppi.ppi_interval(np.full(20, 5.0), rng.normal(4, 1, 20), rng.normal(4, 1, 80), lam=None, scale=(1.0, 5.0))
    p = 1 - 0.025 ** (1 / 20)
    half = sps.t.ppf(0.975, 19) * 4 * math.sqrt(p * (1 - p) / 20)
    assert (m.estimate, m.lam, m.floored) == (5.0, 0.0, True)
    assert (m.ci_low, m.ci_high) == (pytest.approx(5 - half, abs=1e-12), 5.0)
    assert 0.6 < m.ci_high - m.ci_low < 0.8
    # without a scale, the range of the values seen stands for it
    bare = ppi.ppi_interval(np.full(20, 5.0), np.full(20, 4.0), np.r_[np.full(79, 4.0), 2.0], lam=0.0)
    assert bare.ci_high - bare.ci_low == pytest.approx(2 * sps.t.ppf(0.975, 19) * 3 * math.sqrt(p * (1 - p) / 20))
    # one rated document: no interval but the scale itself
    one = ppi.ppi_interval([4.0], [4.0], [3.0, 5.0], lam=1.0, scale=(1.0, 5.0))
    assert (one.ci_low, one.ci_high) == (1.0, 5.0)


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
    frame = study(1, rated_docs=30)  # from 30 rated documents on, the interval is ppi_py's
    res = ppi.ppi_by_system(frame, method=method, n_resamples=0)
    for s in res.per_system:
        g = frame[frame["system_id"] == s.system]
        rated = g["human"].notna()
        Y, Yhat, Yu = g.loc[rated, "human"].to_numpy(), g.loc[rated, "judge"].to_numpy(), g.loc[~rated, "judge"].to_numpy()
        point = np.asarray(ppi_py.ppi_mean_pointestimate(Y, Yhat, Yu, lam=lam)).item()
        lo, hi = (np.asarray(x).item() for x in ppi_py.ppi_mean_ci(Y, Yhat, Yu, alpha=0.05, lam=lam))
        assert s.estimate == pytest.approx(point, abs=1e-10)
        assert (s.ci_low, s.ci_high) == (pytest.approx(lo, abs=1e-10), pytest.approx(hi, abs=1e-10))
        assert (s.n_labelled, s.n_unlabelled) == (30, 30) and s.interval == "normal"
        # human-only is PPI with lambda 0 (ppi_py's classical interval); judge-only is the judge's mean everywhere
        lo0, hi0 = (np.asarray(x).item() for x in ppi_py.ppi_mean_ci(Y, Yhat, Yu, alpha=0.05, lam=0))
        assert (s.human_only.ci_low, s.human_only.ci_high) == (pytest.approx(lo0), pytest.approx(hi0))
        assert s.judge_only.statistic == pytest.approx(g["judge"].mean())


def test_document_resamples_re_estimate_lambda_as_a_plain_recomputation():
    frame = study(2, n_docs=20, n_systems=3, rated_docs=8)
    res = ppi.ppi_by_system(frame, method="ppi++", n_resamples=0)
    systems = [s.system for s in res.per_system]
    boot = ppi.document_resamples(frame, systems, 5, random_state=11)
    held = ppi.document_resamples(frame, systems, 5, random_state=11, lams={s.system: s.lam for s in res.per_system})
    docs = np.unique(frame["doc_id"].astype(str))
    draws = np.random.default_rng(11).integers(0, len(docs), size=(5, len(docs)))
    for r in range(5):
        resampled = pd.concat([frame[frame["doc_id"] == docs[k]] for k in draws[r]])
        for i, s in enumerate(systems):
            g = resampled[resampled["system_id"] == s]
            rated = g["human"].notna()
            y, yhat, yu = g.loc[rated, "human"], g.loc[rated, "judge"], g.loc[~rated, "judge"]
            # lambda re-estimated on the resample, as on the data (ppi_py's point estimate with lam=None)
            want = np.asarray(ppi_py.ppi_mean_pointestimate(y.to_numpy(), yhat.to_numpy(), yu.to_numpy(),
                                                            lam=None)).item()
            assert boot[r, i] == pytest.approx(want, abs=1e-9)
            lam = res.per_system[i].lam
            assert held[r, i] == pytest.approx(lam * yu.mean() + (y - lam * yhat).mean(), abs=1e-10)
    assert not np.allclose(boot, held)  # the resamples' lambdas differ from the full data's


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
    assert all(float(r.rank_low).is_integer() and float(r.rank_high).is_integer() for r in res.ranking)
    d = to_dict(res)
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


def test_ppi_plus_plus_can_be_wider_than_the_humans_alone():
    """Its lambda is estimated (ppi_py's formula pools the judge's variance over rated and unrated items), so the
    interval is not always the narrower: here the judge's scores spread more on the 30 rated items than on the 300
    others, and PPI++ comes out wider (ppi_py's own figures). The page no longer says it never is."""
    from evalcore.views import inference as iv

    assert "never wider" not in iv.ESTIMATOR_HELP and "a little wider" in iv.ESTIMATOR_HELP
    for seed in range(50):
        rng = np.random.default_rng(seed)
        y = rng.normal(0, 1, 30)
        yhat, yu = y + rng.normal(0, 2, 30), rng.normal(0, 1, 300)
        lo, hi = (np.asarray(v).item() for v in ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=None))
        lo0, hi0 = (np.asarray(v).item() for v in ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=0))
        if hi - lo > hi0 - lo0:
            m, h = ppi.ppi_interval(y, yhat, yu, lam=None), ppi.ppi_interval(y, y, [], lam=0.0)
            assert (m.ci_high - m.ci_low, h.ci_high - h.ci_low) == (pytest.approx(hi - lo), pytest.approx(hi0 - lo0))
            return
    pytest.fail("no study where PPI++ is wider than the humans alone")


def test_pairwise_win_rates_cluster_by_prompt_by_hand():
    # model X on two prompts: p1 with two opponents (human points 1 and 0), p2 with one (1): mean 2/3.
    # Influence terms (x - 2/3) / 3: p1 sums (1/3 - 2/3) / 3 = -1/9, p2 (1/3) / 3 = 1/9; two rated prompts (< 30):
    # variance (1/81 + 1/81) * 2/1 = 4/81; Student t with 1 df; pairs taken as independent it would be
    # var0 / 3 * 3/2 with 2 df
    y = np.array([1.0, 0.0, 1.0])
    m = ppi.ppi_interval(y, y, [], lam=0.0, groups=["p1", "p1", "p2"])
    half = sps.t.ppf(0.975, 1) * math.sqrt(4 / 81)
    assert (m.estimate, m.rated_documents, m.clustered) == (pytest.approx(2 / 3), 2, True)
    assert (m.ci_low, m.ci_high) == (pytest.approx(2 / 3 - half), pytest.approx(2 / 3 + half))
    prefs = pd.DataFrame({"pair_id": ["q1", "q2", "q3"], "doc_id": ["p1", "p1", "p2"], "item_a": ["x1", "x1", "x2"],
                          "item_b": ["y1", "z1", "y2"], "dimension": "preference", "annotator": "u",
                          "preferred": ["a", "b", "a"]})
    comps = pd.DataFrame({"pair_id": ["q1", "q2", "q3"], "doc_id": ["p1", "p1", "p2"], "item_first": ["x1", "x1", "x2"],
                          "item_second": ["y1", "z1", "y2"], "dimension": "preference", "order": "ab", "raw": "",
                          "verdict": ["first", "second", "first"], "status": "ok", "reason": ""})
    items = pd.DataFrame({"item_id": ["x1", "y1", "z1", "x2", "y2"], "doc_id": ["p1", "p1", "p1", "p2", "p2"],
                          "system_id": ["X", "Y", "Z", "X", "Y"], "output": ""})
    res = ppi.ppi_by_system(ppi.pairwise_frame(prefs, comps, items, dimension="preference"), n_resamples=0)
    x = next(s for s in res.per_system if s.system == "X")
    assert (x.human_only.ci_low, x.human_only.ci_high) == (pytest.approx(m.ci_low), pytest.approx(m.ci_high))
    assert x.clustered and x.rated_documents == 2


@settings(max_examples=30, deadline=None)
@given(seed=hst.integers(0, 10_000), n=hst.integers(30, 60), lam=hst.sampled_from([0.0, 1.0, None]))
def test_property_a_prompt_repeated_counts_once(seed, n, lam):
    """Every rated and unrated item repeated within its own document (the same response met twice) leaves the
    clustered estimate and interval as they were: the documents, not the rows, are the units. One item per document
    is ppi_py's interval."""
    rng = np.random.default_rng(seed)
    y = rng.normal(3, 1, n)
    yhat, yu = y + rng.normal(0.5, 0.7, n), rng.normal(3.5, 1.2, 2 * n)
    g, gu = np.arange(n).astype(str), np.arange(n, 3 * n).astype(str)
    once = ppi.ppi_interval(y, yhat, yu, lam=lam, groups=g, groups_unlabelled=gu)
    twice = ppi.ppi_interval(np.repeat(y, 2), np.repeat(yhat, 2), np.repeat(yu, 2), lam=once.lam,
                             groups=np.repeat(g, 2), groups_unlabelled=np.repeat(gu, 2))
    assert (twice.estimate, twice.ci_low, twice.ci_high) == (pytest.approx(once.estimate),
                                                             pytest.approx(once.ci_low), pytest.approx(once.ci_high))
    lo, hi = (np.asarray(v).item() for v in ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=once.lam))
    assert (once.ci_low, once.ci_high) == (pytest.approx(lo, abs=1e-10), pytest.approx(hi, abs=1e-10))


@settings(max_examples=40, deadline=None)
@given(seed=hst.integers(0, 10_000), n=hst.integers(2, 40), alike=hst.booleans(),
       method=hst.sampled_from([0.0, 1.0, None]))
def test_property_intervals_hold_the_estimate_stay_in_the_scale_and_never_collapse(seed, n, alike, method):
    """With a known 1-5 scale and two rated documents or more, the interval holds the estimate, lies within the
    scale, and has a positive width, ratings all alike included."""
    rng = np.random.default_rng(seed)
    y = np.full(n, float(rng.integers(1, 6))) if alike else rng.integers(1, 6, n).astype(float)
    yhat, yu = rng.integers(1, 6, n).astype(float), rng.integers(1, 6, 50).astype(float)
    m = ppi.ppi_interval(y, yhat, yu, lam=method, scale=(1.0, 5.0))
    assert 1.0 <= m.ci_low <= min(max(m.estimate, 1.0), 5.0) and max(min(m.estimate, 5.0), 1.0) <= m.ci_high <= 5.0
    # positive width, except where the unclipped interval lies wholly beyond an end of the scale (plain PPI's
    # estimate may leave the scale): then the interval is that end, never inverted
    assert m.ci_high - m.ci_low > 0 or (m.ci_low == m.ci_high in (1.0, 5.0) and not 1.0 < m.estimate < 5.0)
