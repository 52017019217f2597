"""The Alternative Annotator Test (evalcore.meta.alt_test): indicators, t-test, the exact small-sample test and
Benjamini-Yekutieli steps by hand, and the whole procedure against a plain re-implementation of the authors' code
(an annotator with fewer than 30 items skipped)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from scipy import stats as sps

from evalcore.meta import alt_test as at
from evalcore.meta.results import to_dict

NAN = np.nan


def test_indicators_by_hand_accuracy():
    # annotators A, B, C on 4 items; the judge says 0, 0, 0, 1. Leave A out:
    # item 1: others {0, 1}: S(judge=0) = 1/2, S(A=0) = 1/2 -> both indicators 1
    # item 2: others {1, 1}: S(judge=0) = 0,   S(A=1) = 1   -> W^judge 0, W^A 1
    # item 3: others {0, 0}: S(judge=0) = 1,   S(A=1) = 0   -> W^judge 1, W^A 0
    # item 4: others {0} (C did not rate it): S(judge=1) = 0, S(A=0) = 1 -> W^judge 0, W^A 1
    R = np.array([[0, 1, 1, 0], [0, 1, 0, 0], [1, 1, 0, NAN]], dtype=float)
    w_judge, w_a = at.indicators(R, np.array([0, 0, 0, 1.0]), 0, "accuracy")
    assert w_judge.tolist() == [1, 0, 1, 0]
    assert w_a.tolist() == [1, 1, 0, 1]
    # Leave C out: only items 1-3 (C did not rate item 4)
    w_judge, w_c = at.indicators(R, np.array([0, 0, 0, 1.0]), 2, "accuracy")
    assert len(w_judge) == 3


def test_alignment_scores_neg_rmse_by_hand():
    # label 3 against others (1, 5): -sqrt(((3-1)^2 + (3-5)^2) / 2) = -2; label 5 against (5, NaN): 0
    others = np.array([[1.0, 5.0], [5.0, NAN]])
    s = at.alignment_scores(np.array([3.0, 5.0]), others, "neg_rmse")
    assert s.tolist() == [-2.0, 0.0]


def test_t_test_step_by_hand():
    # 40 items: d = W^j - W^judge is -1 ten times, 0 twenty times, 1 ten times: mean 0, sd sqrt(20/39)
    d = np.array([-1.0] * 10 + [0.0] * 20 + [1.0] * 10)
    t = (0 - 0.2) / (math.sqrt(20 / 39) / math.sqrt(40))
    test, stat, p = at.one_sided_test(d, 0.2)
    assert test == "t-test"
    assert stat == pytest.approx(t, abs=1e-12)
    assert p == pytest.approx(sps.t.cdf(t, df=39), abs=1e-12)
    assert p == pytest.approx(0.0426, abs=5e-4)


def test_fewer_than_30_items_are_not_tested_with_wilcoxon():
    # the audit's case: four items where the annotator beats the judge, 21 ties. Wilcoxon of d - 0.2 called the judge
    # a winner (p 0.023) though mean(d) = 0.16 is hardly below 0.2; the t-test gives 0.30. The exact test gives more.
    d = np.r_[np.ones(4), np.zeros(21)]
    test, stat, p = at.one_sided_test(d, 0.2)
    assert (test, stat) == ("exact", pytest.approx(0.16))
    assert p > sps.ttest_1samp(d, 0.2, alternative="less").pvalue > 0.05
    with pytest.raises(ValueError, match="below 30"):
        at.one_sided_test(d, 0.2, small_sample="skip")


def test_exact_test_by_hand():
    # one item where the judge wins (d = -1): outcomes ordered -1 < 0 < 1; P(d = -1) on the null's boundary is
    # (1 - eps - p0) / 2, largest at p0 = 0 (inside the 99.9% interval of the tie share: no tie seen): 0.4, + 0.001
    assert at.exact_mean_test(np.array([-1.0]), 0.2) == pytest.approx(0.401, abs=1e-9)
    # two ties, eps 0.5: t = -inf (mean 0 < 0.5, no spread); at or below it: (0, 0) and (-1, -1), probability
    # p0^2 + ((0.5 - p0) / 2)^2, largest at p0 = 0.5 (the null's end; the tie share's interval is [0.0224, 1]): 0.25
    assert at.exact_mean_test(np.zeros(2), 0.5) == pytest.approx(0.251, abs=1e-9)
    # 29 ties at eps 0.2: under H0 P(d = 1) >= 0.2, so no 1 in 29 items has probability at most 0.8^29; the tie
    # share's 99.9% interval starts at 0.0005^(1/29) = 0.769, inside [0, 0.8]: the p-value is 0.8^29 + 0.001
    assert at.exact_mean_test(np.zeros(29), 0.2) == pytest.approx(0.8 ** 29 + 0.001, abs=1e-9)
    with pytest.raises(ValueError, match="-1, 0 and 1"):
        at.exact_mean_test(np.array([0.5]), 0.2)


def test_exact_test_by_enumeration_of_the_trinomial():
    # a second method: every outcome enumerated with scipy's multinomial and ordered by scipy's t statistic, the tail
    # maximised on a fine grid of tie shares within the 99.9% Clopper-Pearson interval (scipy's binomtest)
    n, eps = 7, 0.15
    d = np.r_[-np.ones(3), np.zeros(3), np.ones(1)]

    def t_of(j, k):
        x = np.r_[np.ones(j), -np.ones(k), np.zeros(n - j - k)]
        return -np.inf if x.std() == 0 and x.mean() < eps else sps.ttest_1samp(x, eps).statistic

    t_obs = t_of(1, 3)
    at_or_below = [(j, k) for j in range(n + 1) for k in range(n + 1 - j) if t_of(j, k) <= t_obs + 1e-12]
    ci = sps.binomtest(3, n).proportion_ci(0.999, method="exact")
    best = 0.0
    for p0 in np.linspace(ci.low, min(ci.high, 1 - eps), 4001):
        minus = (1 - eps - p0) / 2
        best = max(best, sum(sps.multinomial.pmf([j, n - j - k, k], n, [minus + eps, p0, minus])
                             for j, k in at_or_below))
    assert at.exact_mean_test(d, eps) == pytest.approx(best + 0.001, abs=1e-7)


@settings(max_examples=20, deadline=None)
@given(n=hst.integers(1, 24), eps=hst.floats(0.0, 0.6), share=hst.floats(0.0, 1.0))
def test_property_exact_test_never_rejects_a_true_null_more_than_its_level(n, eps, share):
    """The exact test's size, computed exactly (every outcome's probability times whether its p-value is at most
    5%), is at most 5% at any point of the null's boundary: P(d = 0) = p0, P(d = 1) - P(d = -1) = eps."""
    p0 = share * (1 - eps)
    table = at._exact_table(n, round(eps, 12))
    pmf = table.pmf(np.array([p0]))[0]
    p_values = np.array([at.exact_mean_test(np.r_[np.ones(j), -np.ones(k), np.zeros(n - j - k)], eps)
                         for j, k in zip(table.j, table.k)])
    assert float(pmf[p_values <= 0.05].sum()) <= 0.05 + 1e-9


def test_benjamini_yekutieli_step_by_hand():
    # m = 3, H_3 = 11/6; thresholds k/3 * 0.05 / H_3 = 0.00909, 0.01818, 0.02727
    assert at.by_rejections(np.array([0.01, 0.02, 0.5]), 0.05).tolist() == [False, False, False]
    assert at.by_rejections(np.array([0.5, 0.001, 0.015]), 0.05).tolist() == [False, True, True]
    # step-up: the largest k with p_(k) <= its threshold rejects every smaller one (0.02 > 0.01818 is rejected)
    assert at.by_rejections(np.array([0.001, 0.02, 0.025]), 0.05).tolist() == [True, True, True]
    # an undefined p-value is one of the m hypotheses, never rejected
    assert at.by_rejections(np.array([0.001, NAN]), 0.05).tolist() == [True, False]


def reference_alt_test(humans: dict, llm: dict, scoring: str, epsilon: float, q: float = 0.05):
    """The procedure as the paper's Algorithm 1 states it and the authors' code runs it (an annotator with fewer than
    30 items skipped), item by item with Python loops (winning rate, rho)."""
    def score(x, anns):
        if scoring == "accuracy":
            return float(np.mean([x == a for a in anns]))
        return -math.sqrt(float(np.mean([(x - a) ** 2 for a in anns])))

    raters_of = {}
    for h, anns in humans.items():
        for i in anns:
            raters_of.setdefault(i, []).append(h)
    kept = {i for i, hs in raters_of.items() if len(hs) >= 2 and i in llm}
    ps, rhos = [], []
    for h, anns in humans.items():
        items = [i for i in anns if i in kept]
        if not items:
            continue
        wl, wh = [], []
        for i in items:
            rest = [humans[k][i] for k in raters_of[i] if k != h]
            sl, sh = score(llm[i], rest), score(anns[i], rest)
            wl.append(int(sl >= sh))
            wh.append(int(sh >= sl))
        if len(items) < 30:  # the authors' min_instances_per_human: the annotator is skipped
            continue
        d = np.array(wh) - np.array(wl)
        ps.append(sps.ttest_1samp(d, epsilon, alternative="less").pvalue)
        rhos.append(np.mean(wl))
    # Benjamini-Yekutieli written out: largest k with p_(k) <= k q / (m H_m)
    p = np.nan_to_num(np.array(ps), nan=1.0)
    m = len(p)
    order = np.argsort(p)
    ok = p[order] <= np.arange(1, m + 1) * q / (m * np.sum(1 / np.arange(1, m + 1)))
    n_rejected = (np.flatnonzero(ok).max() + 1) if ok.any() else 0
    return n_rejected / m, float(np.mean(rhos))


def random_study(rng, n_annotators=3, n_items=60, categories=3, missing=0.2, numeric=False):
    truth = rng.integers(0, categories, n_items)
    noise = rng.random((n_annotators, n_items)) < 0.3
    R = np.where(noise, rng.integers(0, categories, (n_annotators, n_items)), truth).astype(float)
    if numeric:
        R = R + rng.normal(0, 0.5, R.shape)
    R[rng.random(R.shape) < missing] = np.nan
    judge = np.where(rng.random(n_items) < 0.35, rng.integers(0, categories, n_items), truth).astype(float)
    if numeric:
        judge = judge + rng.normal(0, 0.5, n_items)
    judge[rng.random(n_items) < 0.05] = np.nan
    return R, judge


@pytest.mark.parametrize("numeric", [False, True])
@pytest.mark.parametrize("n_items", [60, 80])  # 60 with missing ratings: some annotators below 30, skipped
def test_alt_test_matches_the_papers_procedure(numeric, n_items):
    rng = np.random.default_rng(7 + n_items)
    R, judge = random_study(rng, n_annotators=4, n_items=n_items, numeric=numeric, missing=0.35)
    items = [f"i{k}" for k in range(n_items)]
    ratings = pd.DataFrame(R, index=["h1", "h2", "h3", "h4"], columns=items)
    scoring = "neg_rmse" if numeric else "accuracy"
    res = at.alt_test(ratings, pd.Series(judge, index=items), scoring=scoring, epsilon=0.15)
    humans = {h: {i: v for i, v in zip(items, row) if not np.isnan(v)} for h, row in zip(ratings.index, R)}
    llm = {i: v for i, v in zip(items, judge) if not np.isnan(v)}
    winning, rho = reference_alt_test(humans, llm, scoring, 0.15)
    assert res.winning_rate == pytest.approx(winning)
    assert res.advantage_probability == pytest.approx(rho, abs=1e-12)
    assert {a.test for a in res.per_annotator} == {"t-test"}
    assert all(n < 30 for _, n in res.skipped) and all(a.n >= 30 for a in res.per_annotator)
    assert len(res.skipped) + len(res.per_annotator) == 4
    if n_items == 60:
        assert res.skipped  # the case the authors' rule is about
    multi = (~np.isnan(R)).sum(axis=0) >= 2
    assert res.dropped_items == int(((~np.isnan(R)).any(axis=0) & ~multi).sum())
    assert res.items_without_judge == int((multi & np.isnan(judge)).sum())


def test_annotators_below_30_items_are_skipped_counted_and_said_or_tested_exactly():
    rng = np.random.default_rng(5)
    R, judge = random_study(rng, n_annotators=3, n_items=60, missing=0.0)
    R[2, 25:] = np.nan  # the third annotator rated 25 items
    ratings, j = pd.DataFrame(R, index=["a", "b", "c"]), pd.Series(judge)
    res = at.alt_test(ratings, j, scoring="accuracy", epsilon=0.2)
    assert res.small_sample == "skip" and [a.annotator for a in res.per_annotator] == ["a", "b"]
    n_c = int((~np.isnan(judge[:25])).sum())
    assert res.skipped == (("c", n_c),)
    assert res.winning_rate == pytest.approx(np.mean([a.rejected for a in res.per_annotator]))
    assert to_dict(res)["skipped"] == [{"annotator": "c", "n": n_c}] and to_dict(res)["min_items"] == 30
    exact = at.alt_test(ratings, j, scoring="accuracy", epsilon=0.2, small_sample="exact")
    assert [a.test for a in exact.per_annotator] == ["t-test", "t-test", "exact"] and exact.skipped == ()
    w_judge, w_c = at.indicators(R, judge, 2, "accuracy", (~np.isnan(R)).sum(axis=0) >= 2)
    assert exact.per_annotator[2].p_value == pytest.approx(at.exact_mean_test(w_c - w_judge, 0.2))
    # every annotator below 30: no test, and the message says why and what to do
    with pytest.raises(ValueError, match="fewer than 30 items.*exact"):
        at.alt_test(ratings.iloc[:, :20], j, scoring="accuracy")
    with pytest.raises(ValueError, match="small_sample"):
        at.alt_test(ratings, j, scoring="accuracy", small_sample="wilcoxon")


def test_a_judge_that_copies_the_consensus_passes_and_the_result_says_so():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, 100).astype(float)
    R = np.vstack([np.where(rng.random(100) < 0.25, 1 - truth, truth) for _ in range(3)])
    ratings = pd.DataFrame(R, index=["a", "b", "c"], columns=range(100))
    res = at.alt_test(ratings, pd.Series(truth), scoring="accuracy", epsilon=0.2)
    assert res.passed and res.winning_rate == 1.0
    assert all(a.rejected and a.n == 100 and a.test == "t-test" for a in res.per_annotator)
    d = to_dict(res)
    assert set(d) >= {"epsilon", "scoring", "q", "winning_rate", "advantage_probability", "passed", "dropped_items",
                      "per_annotator"}
    assert set(d["per_annotator"][0]) >= {"annotator", "n", "p_value", "advantage_probability", "rejected"}


def test_bad_inputs_are_clear_errors():
    ratings = pd.DataFrame([[1.0, 2.0]], index=["only"], columns=["x", "y"])
    with pytest.raises(ValueError, match="at least two annotators"):
        at.alt_test(ratings, pd.Series([1.0, 2.0], index=["x", "y"]), scoring="neg_rmse")
    two = pd.DataFrame([[1.0, NAN], [NAN, 2.0]], index=["a", "b"], columns=["x", "y"])
    with pytest.raises(ValueError, match="rated by at least two annotators"):
        at.alt_test(two, pd.Series([1.0, 2.0], index=["x", "y"]), scoring="neg_rmse")
    with pytest.raises(ValueError, match="scoring"):
        at.alt_test(two, pd.Series([1.0, 2.0], index=["x", "y"]), scoring="kappa")
    with pytest.raises(ValueError, match="epsilon"):
        at.alt_test(two, pd.Series([1.0, 2.0], index=["x", "y"]), scoring="accuracy", epsilon=2)


def test_scores_and_pairwise_inputs_follow_the_data_model():
    ann = pd.DataFrame({"item_id": ["x", "x", "y", "y", "z"], "dimension": "q", "annotator": ["a", "b", "a", "b", "a"],
                        "group": "expert", "value": [1.0, 2.0, 3.0, 3.0, 5.0]})
    judge = pd.DataFrame({"item_id": ["x", "y", "z"], "judge": [2.0, NAN, 4.0]})
    res = at.alt_test_scores(ann, judge, "q", scoring="neg_rmse", epsilon=0.2, small_sample="exact")
    assert (res.n_items, res.dropped_items, res.items_without_judge) == (1, 1, 1)
    # pairwise: votes a / b / tie against the combined verdict of a one-order run
    prefs = pd.DataFrame({"pair_id": ["p1", "p1", "p2", "p2"], "doc_id": "d", "item_a": ["i1", "i1", "i3", "i3"],
                          "item_b": ["i2", "i2", "i4", "i4"], "dimension": "preference",
                          "annotator": ["u", "v", "u", "v"], "preferred": ["a", "a", "b", "tie"]})
    comps = pd.DataFrame({"pair_id": ["p1", "p2"], "doc_id": "d", "item_first": ["i1", "i3"],
                          "item_second": ["i2", "i4"], "dimension": "preference", "order": "ab", "raw": "",
                          "verdict": ["first", "second"], "status": "ok", "reason": ""})
    res = at.alt_test_pairwise(prefs, comps, dimension="preference", epsilon=0.2, small_sample="exact")
    # leave u out: p1 others {a}: judge a (1), u a (1); p2 others {tie}: judge b (0), u b (0): W^judge = W^u = 1, 1
    # leave v out: p1 others {a}: judge a (1), v a (1); p2 others {b}: judge b (1), v tie (0): W^judge 1, 1; W^v 1, 0
    assert [a.advantage_probability for a in res.per_annotator] == [1.0, 1.0]
    assert [a.annotator_advantage for a in res.per_annotator] == [1.0, 0.5]
    assert res.scoring == "accuracy" and res.n_items == 2


@settings(max_examples=25, deadline=None)
@given(seed=hst.integers(0, 10_000), eps=hst.floats(0.0, 0.3))
def test_property_winning_rate_grows_with_epsilon_and_rho_ignores_it(seed, eps):
    """With the t-test (>= 30 items), a larger margin can only lower the p-values; rho does not depend on it; the
    winning rate is a share of the annotators; the annotators' order changes nothing."""
    rng = np.random.default_rng(seed)
    R, judge = random_study(rng, n_annotators=3, n_items=60, missing=0.0)
    ratings = pd.DataFrame(R, index=["a", "b", "c"])
    j = pd.Series(judge)
    lo = at.alt_test(ratings, j, scoring="accuracy", epsilon=eps)
    hi = at.alt_test(ratings, j, scoring="accuracy", epsilon=eps + 0.1)
    assert hi.winning_rate >= lo.winning_rate
    assert hi.advantage_probability == lo.advantage_probability
    assert 0 <= lo.advantage_probability <= 1
    assert lo.winning_rate * len(lo.per_annotator) == pytest.approx(sum(a.rejected for a in lo.per_annotator))
    shuffled = at.alt_test(ratings.iloc[::-1], j, scoring="accuracy", epsilon=eps)
    assert shuffled.winning_rate == lo.winning_rate
    assert shuffled.advantage_probability == pytest.approx(lo.advantage_probability)
