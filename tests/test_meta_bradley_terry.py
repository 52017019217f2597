"""Bradley-Terry rankings (evalcore.meta.bradley_terry): scikit-learn's fit against Zermelo's / Hunter's MM iteration
written here, the Elo scale and tie convention by hand, length control against a direct likelihood maximisation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from scipy.optimize import minimize

from evalcore.meta import bradley_terry as bt
from evalcore.meta.results import to_dict


def battles(rows, doc="d", lengths=(10, 10)) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=["model_a", "model_b", "outcome"])
    out.insert(0, "doc_id", [f"{doc}{i}" for i in range(len(out))])
    out["len_a"], out["len_b"] = lengths
    return out


def test_two_models_by_hand_and_ties_count_half():
    # A beats B 3 times out of 4: P = 0.75 = 1 / (1 + 10^(-(R_A - R_B) / 400)) -> R_A - R_B = 400 log10(3)
    s = bt.bt_scores(battles([("A", "B", "a")] * 3 + [("A", "B", "b")]))
    gap = 400 * math.log10(3)
    assert s == pytest.approx([1000 + gap / 2, 1000 - gap / 2], abs=1e-4)
    # one win and one tie for A out of 2: 1.5 points of 2, the same 0.75
    s2 = bt.bt_scores(battles([("A", "B", "a"), ("B", "A", "tie")] + [("A", "B", "b"), ("A", "B", "a")]
                              + [("A", "B", "a")]))
    assert s2[0] - s2[1] == pytest.approx(400 * math.log10(3.5 / 1.5), abs=1e-4)


def mm_scores(b: pd.DataFrame, models: list[str], iterations: int = 5000) -> np.ndarray:
    """Zermelo's iteration (Hunter 2004, MM): p_i <- W_i / sum_j n_ij / (p_i + p_j), a tie half a win each side."""
    idx = {m: i for i, m in enumerate(models)}
    k = len(models)
    wins, n = np.zeros(k), np.zeros((k, k))
    for a, c, o in zip(b["model_a"], b["model_b"], b["outcome"]):
        i, j = idx[a], idx[c]
        n[i, j] += 1
        n[j, i] += 1
        wins[i] += {"a": 1.0, "b": 0.0, "tie": 0.5}[o]
        wins[j] += {"a": 0.0, "b": 1.0, "tie": 0.5}[o]
    p = np.ones(k)
    for _ in range(iterations):
        p = wins / (n / (p[:, None] + p[None, :])).sum(axis=1)
        p /= np.exp(np.log(p).mean())
    r = 400 * np.log10(p)
    return r - r.mean() + 1000


def random_battles(seed: int, n: int = 400, models=("m1", "m2", "m3", "m4", "m5")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strength = dict(zip(models, rng.normal(0, 150, len(models))))
    rows, lens = [], []
    for k in range(n):
        a, b = rng.choice(models, 2, replace=False)
        p = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400))
        u = rng.random()
        rows.append((f"doc{k // 4}", a, b, "tie" if abs(u - p) < 0.08 else ("a" if u < p else "b")))
        lens.append(rng.integers(20, 400, 2))
    out = pd.DataFrame(rows, columns=["doc_id", "model_a", "model_b", "outcome"])
    out["len_a"], out["len_b"] = np.array(lens).T
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_logistic_regression_fit_equals_the_mm_iteration(seed):
    b = random_battles(seed)
    models = bt._models(b)
    assert bt.bt_scores(b, models) == pytest.approx(mm_scores(b, models), abs=1e-3)


def test_length_coefficient_equals_a_direct_likelihood_maximisation():
    b = random_battles(5, n=300)
    rng = np.random.default_rng(5)
    # make longer outputs win more often: flip some decisive outcomes toward the longer side
    longer_a = b["len_a"] > b["len_b"]
    flip = (rng.random(len(b)) < 0.3) & (b["outcome"] != "tie")
    b.loc[flip, "outcome"] = np.where(longer_a[flip], "a", "b")
    models = bt._models(b)
    X, y, w, rows = bt.design(b, models)
    Xl = np.column_stack([X, bt.length_feature(b)[rows]])
    coef = bt._fit(Xl, y, w, len(models))

    def nll(beta):  # the weighted Bernoulli log-likelihood, written out
        z = Xl @ beta
        return float(np.sum(w * (np.logaddexp(0, z) - y * z)))

    direct = minimize(nll, np.zeros(Xl.shape[1]), method="BFGS", options={"gtol": 1e-9}).x
    assert coef[-1] == pytest.approx(direct[-1], abs=1e-4)
    assert coef[-1] > 0  # the longer output is favoured
    scores = 400 * (direct[:-1] - direct[:-1].mean()) + 1000
    assert coef[:-1] == pytest.approx(scores, abs=1e-2)


def test_a_model_that_never_lost_has_no_score_and_the_reason_is_given():
    b = battles([("A", "B", "a"), ("A", "C", "a"), ("B", "C", "a"), ("C", "B", "a")])
    r, boot = bt.ranking(b, source="human", n_resamples=5)
    assert "'A' never lost" in r.problem
    assert all(math.isnan(s.score) for s in r.scores) and np.isnan(boot).all()


def test_bootstrap_is_reproducible_and_brackets_the_estimate():
    b = random_battles(3)
    r1, boot1 = bt.ranking(b, source="human", n_resamples=60, random_state=4)
    r2, boot2 = bt.ranking(b, source="human", n_resamples=60, random_state=4)
    assert np.array_equal(boot1, boot2, equal_nan=True)
    for s in r1.scores:
        assert s.ci_low < s.score < s.ci_high
    assert np.nanmean(boot1, axis=1) == pytest.approx(1000)  # every resample anchored at mean 1000
    assert r1.length is not None and r1.length.ci_low < r1.length.coefficient < r1.length.ci_high


def pairwise_study(judge_flips: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    models = ["alpha", "beta", "gamma", "delta"]
    strength = {"alpha": 200, "beta": 70, "gamma": -60, "delta": -210}
    items, prefs, comps = [], [], []
    for d in range(80):
        for m in models:
            items.append({"item_id": f"{d}/{m}", "doc_id": f"doc{d}", "system_id": m, "output": "x" * int(rng.integers(5, 90))})
        for k, (a, b) in enumerate([(0, 1), (2, 3), (0, 2), (1, 3)] if d % 2 else [(0, 3), (1, 2)]):
            ma, mb = models[a], models[b]
            p = 1 / (1 + 10 ** ((strength[mb] - strength[ma]) / 400))
            pid = f"p{d}-{k}"
            vote = "a" if rng.random() < p else "b"
            for ann in ("u", "v"):
                prefs.append({"pair_id": pid, "doc_id": f"doc{d}", "item_a": f"{d}/{ma}", "item_b": f"{d}/{mb}",
                              "dimension": "preference", "annotator": ann, "preferred": vote})
            verdict = "first" if vote == "a" else "second"
            if rng.random() < judge_flips:
                verdict = "second" if verdict == "first" else "first"
            comps.append({"pair_id": pid, "doc_id": f"doc{d}", "item_first": f"{d}/{ma}", "item_second": f"{d}/{mb}",
                          "dimension": "preference", "order": "ab", "raw": "", "verdict": verdict, "status": "ok",
                          "reason": ""})
    return pd.DataFrame(prefs), pd.DataFrame(comps), pd.DataFrame(items)


def test_compare_rankings_side_by_side():
    prefs, comps, items = pairwise_study(judge_flips=0.0)
    res = bt.compare_rankings(prefs, comps, items, dimension="preference", n_resamples=40)
    # the judge agrees with every vote: the same scores (each vote counted by two annotators changes no MLE)
    h = [s.score for s in res.human.scores]
    j = [s.score for s in res.judge.scores]
    assert h == pytest.approx(j, abs=1e-4)
    assert (res.kendall_tau, res.spearman_rho, res.n_models) == (pytest.approx(1.0), pytest.approx(1.0), 4)
    top = next(p for p in res.pairs if {p.model_a, p.model_b} == {"alpha", "delta"})
    assert top.human_separated and top.judge_separated
    d = to_dict(res)
    assert d["ties"] == "half a win for each side" and d["human"]["n_battles"] == 2 * d["judge"]["n_battles"]
    assert {"kendall_tau", "spearman_rho", "pairs", "human", "judge"} <= set(d)
    assert d["judge"]["length"]["coefficient"] is not None


@settings(max_examples=20, deadline=None)
@given(seed=hst.integers(0, 10_000))
def test_property_presentation_side_and_row_order_change_nothing(seed):
    """Writing a battle the other way round (b vs a, outcome mirrored) or shuffling the battles leaves the scores."""
    b = random_battles(seed, n=120)
    models = bt._models(b)
    if bt._problem(*bt.design(b, models)[:3], models):
        return
    mirrored = b.rename(columns={"model_a": "model_b", "model_b": "model_a", "len_a": "len_b", "len_b": "len_a"})
    mirrored["outcome"] = mirrored["outcome"].map({"a": "b", "b": "a", "tie": "tie"})
    base = bt.bt_scores(b, models)
    assert bt.bt_scores(mirrored, models) == pytest.approx(base, abs=1e-4)
    assert bt.bt_scores(b.sample(frac=1, random_state=seed), models) == pytest.approx(base, abs=1e-4)
    assert base.mean() == pytest.approx(1000)
