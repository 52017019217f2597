"""Selective evaluation (Jung, Brahman & Choi 2025): the threshold and its bound against a direct implementation of
the paper's fixed-sequence test (exact binomial p-values), on a case computed by hand and on random cases."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from evalcore.meta import selective as sel


def paper_threshold(conf, agree, alpha, delta):
    """Algorithm 1 of Jung et al. written out: candidates from strictest to loosest; H_lambda (risk > alpha) is
    rejected when BinomCDF(k; n, alpha) <= delta; stop at the first non-rejection. Candidates that keep fewer items
    than can ever be rejected (BinomCDF(0; n, alpha) > delta) are not tested."""
    conf, agree = np.asarray(conf, float), np.asarray(agree, bool)
    chosen = None
    for lam in sorted(set(conf.tolist()), reverse=True):
        kept = conf >= lam
        n, k = int(kept.sum()), int((~agree[kept]).sum())
        if binom.cdf(0, n, alpha) > delta:
            continue
        if binom.cdf(k, n, alpha) <= delta:
            chosen = lam
        else:
            break
    return chosen


def hand_case():
    # 11 items at 0.9, all agree; 4 at 0.8, all agree; 3 at 0.7, all disagree; 30 at 0.6, all agree
    conf = [0.9] * 11 + [0.8] * 4 + [0.7] * 3 + [0.6] * 30
    agree = [True] * 15 + [False] * 3 + [True] * 30
    return conf, agree


def test_hand_case_threshold_and_bound():
    conf, agree = hand_case()
    cal = sel.choose_threshold(conf, agree, alpha=0.2, delta=0.1)
    # by hand: 0.9 keeps 11 agreeing items, p = 0.8^11 = 0.0859 <= 0.1: rejected; 0.8 keeps 15, p = 0.8^15 = 0.0352:
    # rejected; 0.7 keeps 18 with 3 disagreeing, p = P(Bin(18, 0.2) <= 3) = 0.501 > 0.1: stop. 0.6 would pass
    # (48 kept, 3 disagree) but is never tested.
    assert cal.threshold == 0.8
    assert [s.threshold for s in cal.steps] == [0.9, 0.8, 0.7]
    assert [s.passed for s in cal.steps] == [True, True, False]
    # the bound at 0.8: 15 agreeing items, 1 - 0.1^(1/15)
    assert math.isclose(cal.upper_bound, 1 - 0.1 ** (1 / 15), rel_tol=1e-9)
    assert math.isclose(cal.upper_bound, 0.14231, abs_tol=1e-5)
    assert math.isclose(cal.steps[2].upper_bound, sel.clopper_pearson_upper(3, 18, 0.1))
    assert paper_threshold(conf, agree, 0.2, 0.1) == 0.8


def test_nothing_certified_says_why():
    conf, agree = [0.9] * 10, [True] * 10  # 10 agreeing items bound the rate at 1 - 0.1^(1/10) = 0.206 > 0.2
    cal = sel.choose_threshold(conf, agree, alpha=0.2, delta=0.1)
    assert cal.threshold is None and cal.steps == ()
    assert sel.fewest_items(0.2, 0.1) == 11  # 0.8^10 = 0.107 > 0.1 >= 0.8^11 = 0.086
    assert "fewer than the 11" in cal.reason
    res = sel.evaluate(cal, ["a", "b"], [0.95, 0.5], [True, False], alpha=0.2, delta=0.1)
    assert res.coverage.statistic == 0 and res.abstained == ("a", "b")
    assert math.isnan(res.agreement_kept.statistic)
    assert "No confidence threshold is certified" in res.sentence
    cal2 = sel.choose_threshold([0.9] * 11 + [0.5], [False] + [True] * 11, alpha=0.2, delta=0.1)
    assert cal2.threshold is None and "1 of the 11" in cal2.reason


def test_evaluate_counts_and_interval():
    cal = sel.Calibration(0.8, 0.1, 10, ())
    res = sel.evaluate(cal, ["a", "b", "c", "d"], [0.9, 0.8, 0.5, np.nan], [True, False, True, True],
                       alpha=0.2, delta=0.1)
    assert res.coverage.statistic == 0.5 and res.coverage.n == 4
    assert res.agreement_kept.statistic == 0.5 and res.agreement_kept.n == 2
    from scipy.stats import beta
    assert math.isclose(res.agreement_kept.ci_low, beta.ppf(0.025, 1, 2))
    assert math.isclose(res.agreement_kept.ci_high, beta.ppf(0.975, 2, 1))
    assert res.abstained == ("c", "d")


def test_agreement_rules():
    assert sel.agrees([4, 5, np.nan], [3.33, 3.33, 3], kind="interval").tolist() == [True, False, False]
    assert sel.agrees([4, 5], [3.5, 3.5], kind="interval", tolerance=0.5).tolist() == [True, False]
    assert sel.agrees(["a", "tie", None], ["a", "b", "a"], kind="pairwise").tolist() == [True, False, False]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans(), st.booleans()), min_size=1, max_size=80),
       st.sampled_from([0.05, 0.1, 0.2, 0.3]), st.sampled_from([0.05, 0.1, 0.2]))
def test_matches_paper_algorithm(rows, alpha, delta):
    conf = [c / 6 for c, _, _ in rows]
    agree = [a or b for _, a, b in rows]  # three quarters agree on average
    assert sel.choose_threshold(conf, agree, alpha=alpha, delta=delta).threshold == \
        paper_threshold(conf, agree, alpha, delta)


def test_cascade_costs():
    rng = np.random.default_rng(0)
    n = 400
    calib = np.arange(n) < 200
    s1 = sel.Stage("cheap", rng.uniform(size=n), rng.uniform(size=n) < 0.97, 1.0)
    s2 = sel.Stage("strong", rng.uniform(size=n), rng.uniform(size=n) < 0.99, 10.0)
    out = sel.cascade([s1, s2], calib, alpha=0.1, delta=0.1, human_cost=100.0)
    r1, r2 = out["stages"]
    assert r1["reached"] == 200 and r2["reached"] == 200 - r1["kept"]
    assert out["to_humans"] == r2["reached"] - r2["kept"]
    assert math.isclose(out["cost_per_item"], (200 * 1 + r2["reached"] * 10 + out["to_humans"] * 100) / 200)


def test_every_outcome_has_a_true_sentence():
    # certified, but nothing held out reaches it
    cal = sel.Calibration(0.9, 0.1, 20, ())
    res = sel.evaluate(cal, ["a"], [0.5], [True], alpha=0.2, delta=0.1)
    assert "abstains on all of them" in res.sentence and res.coverage.statistic == 0
    # certified and keeping some
    res = sel.evaluate(cal, ["a", "b"], [0.95, 0.5], [True, True], alpha=0.2, delta=0.1)
    assert res.sentence.startswith("At confidence >= 0.9 the judge keeps 50% of the 2 held-out items")
    # first tested candidate fails with no disagreement (rounding at the boundary): said as such
    steps = [sel.Step(1.0, 2, 0, 0.5000001, False)]
    assert "all agree" in sel._why_nothing(steps, 2, 0.5, 0.25)
