"""The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025): may this judge replace the annotators?

Leave one annotator j out at a time and ask who represents the remaining annotators better on each item i, the
judge or j (the paper's Algorithm 1; the authors' reference code is github.com/nitaytech/AltTest):

- alignment score S(x, i) of a label x with the OTHER annotators' labels of item i: ``accuracy`` = the share of them
  x equals (categorical dimensions, pairwise verdicts a / b / tie), ``neg_rmse`` = minus the root mean squared
  difference from them (numeric ratings);
- indicators W_i^judge = [S(judge, i) >= S(j, i)] and W_i^j = [S(j, i) >= S(judge, i)] (both 1 on a tie);
- H0: mean(W^j - W^judge) >= epsilon against H1: < epsilon, a one-sided one-sample t-test
  (scipy.stats.ttest_1samp, alternative "less"). epsilon is the cost-benefit margin granted to the judge: the
  authors suggest 0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd workers (README FAQ);
- an annotator with fewer than 30 such items: by default left out, counted and named (``skipped``), as the authors'
  code does (``min_instances_per_human=30``: the t-test's normal approximation is not trusted below that). The
  winning rate and rho are then over the annotators tested. ``small_sample="exact"`` tests them instead with an exact
  test of the mean (``exact_mean_test``). A Wilcoxon signed-rank test of d - epsilon is not offered: it tests
  symmetry about epsilon, not the mean, and d = W^j - W^judge takes only the values -1, 0, 1 (mostly 0), so it
  rejects a true null far above its level (bench/bench_alt_test_size.py);
- the Benjamini-Yekutieli procedure at q = 0.05 over the annotators' p-values (scipy.stats.false_discovery_control,
  method "by": valid under any dependence, and the annotators' tests share items). The winning rate is the share of
  annotators whose null is rejected; the judge passes when it is at least 0.5. The average advantage probability
  rho is the mean over annotators of mean(W^judge): how often the judge is at least as good as an annotator, for
  comparing judges (it does not depend on epsilon).

Items rated by fewer than two annotators carry no "others" to align with: they are dropped and counted
(``dropped_items``), like items with no judge score (``items_without_judge``). A p-value the test cannot give (no
variance, every difference zero) is reported as NaN and counts as not rejected (as p = 1 in the BY step).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy import special
from scipy import stats as sps

from evalcore.meta.arrays import BoolArray, FloatArray, IntArray
from evalcore.meta.results import Estimate, JsonKeys
from evalcore.model import natural_key

SCORINGS = ("accuracy", "neg_rmse")
DEFAULT_EPSILON = 0.2
DEFAULT_Q = 0.05
MIN_ITEMS_T_TEST = 30  # the authors' code skips an annotator with fewer items (min_instances_per_human = 30)
SMALL_SAMPLE_RULES = ("skip", "exact")  # below MIN_ITEMS_T_TEST: leave the annotator out, or the exact test
EXACT_GRID = 2001  # tie shares where the exact test's tail probability is first evaluated, then refined
EXACT_GAMMA = 0.001  # Berger & Boos's beta: the tie share is maximised over its 99.9% interval, and 0.001 added
PAIRWISE_CODES = {"a": 0.0, "b": 1.0, "tie": 2.0}


@dataclass(frozen=True)
class AnnotatorTest:
    """One annotator left out: the judge against them on the items they and at least one other annotator rated."""

    annotator: str
    # the test's statistic as an Estimate: n the items, pvalue NaN where the test is undefined (counted as not
    # rejected), pvalue_method the test ("t-test" at n >= 30, or "exact" below, with small_sample="exact")
    result: Estimate
    advantage_probability: float  # mean(W^judge): the judge at least as good as this annotator
    annotator_advantage: float    # mean(W^j)
    rejected: bool                # after Benjamini-Yekutieli: the judge "wins" against this annotator

    json_keys: ClassVar[JsonKeys] = (("annotator", "annotator"), ("n", "result.n"), ("test", "result.pvalue_method"),
                                     ("statistic", "result.statistic"), ("p_value", "result.pvalue"),
                                     ("advantage_probability", "advantage_probability"),
                                     ("annotator_advantage", "annotator_advantage"), ("rejected", "rejected"))

    @property
    def n(self) -> int:
        return self.result.n

    @property
    def test(self) -> str:
        return self.result.pvalue_method

    @property
    def statistic(self) -> float:
        return self.result.statistic

    @property
    def p_value(self) -> float | None:
        return self.result.pvalue


@dataclass(frozen=True)
class AltTestResult:
    epsilon: float
    scoring: str
    q: float
    winning_rate: float
    advantage_probability: float
    passed: bool
    dropped_items: int            # items rated by fewer than two annotators
    items_without_judge: int      # items rated by two or more annotators that have no judge score
    n_items: int                  # items the test is run on
    per_annotator: tuple[AnnotatorTest, ...]
    small_sample: str = "skip"    # what was done below MIN_ITEMS_T_TEST items: "skip" (the authors' rule) or "exact"
    skipped: tuple[tuple[str, int], ...] = ()  # (annotator, items) left out of the winning rate: too few items

    min_items: ClassVar[int] = MIN_ITEMS_T_TEST
    json_keys: ClassVar[JsonKeys] = (("epsilon", "epsilon"), ("scoring", "scoring"), ("q", "q"),
                                     ("winning_rate", "winning_rate"),
                                     ("advantage_probability", "advantage_probability"), ("passed", "passed"),
                                     ("dropped_items", "dropped_items"), ("items_without_judge", "items_without_judge"),
                                     ("n_items", "n_items"), ("per_annotator", "per_annotator"),
                                     ("small_sample", "small_sample"), ("min_items", "min_items"),
                                     ("skipped", "skipped_annotators"))

    @property
    def skipped_annotators(self) -> list[dict[str, str | int]]:
        """``skipped`` as ``meta --json`` lists it: each annotator left out with its items."""
        return [{"annotator": a, "n": n} for a, n in self.skipped]


def alignment_scores(label: FloatArray, others: FloatArray, scoring: str) -> FloatArray:
    """S(label_i, others_i) per item: ``others`` is (annotators x items) with NaN where not rated; each item needs at
    least one rating in ``others``. accuracy: the share of the others' labels equal to label_i; neg_rmse: minus the
    root mean squared difference from them (the reference code's ``accuracy`` / ``neg_rmse``)."""
    rated = ~np.isnan(others)
    count = rated.sum(axis=0)
    result: FloatArray
    if scoring == "accuracy":
        result = ((others == label[None, :]) & rated).sum(axis=0) / count
        return result
    if scoring == "neg_rmse":
        sq = np.where(rated, (others - label[None, :]) ** 2, 0.0)
        result = -np.sqrt(sq.sum(axis=0) / count)
        return result
    raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, not {scoring!r}")


def indicators(R: FloatArray, judge: FloatArray, a: int, scoring: str,
               keep: BoolArray | None = None) -> tuple[FloatArray, FloatArray]:
    """(W^judge, W^a) over the items annotator ``a`` rated that at least one other annotator rated and the judge
    scored (and ``keep`` allows): W^judge_i = [S(judge, i) >= S(a, i)], W^a_i = [S(a, i) >= S(judge, i)], S against
    the other annotators' labels of item i (Calderon et al. 2025, Algorithm 1)."""
    others_all = np.delete(R, a, axis=0)
    mine = ~np.isnan(R[a]) & ~np.isnan(judge) & (~np.isnan(others_all)).any(axis=0)
    if keep is not None:
        mine &= keep
    others = others_all[:, mine]
    s_judge = alignment_scores(judge[mine], others, scoring)
    s_ann = alignment_scores(R[a, mine], others, scoring)
    return (s_judge >= s_ann).astype(float), (s_ann >= s_judge).astype(float)


def one_sided_test(d: FloatArray, epsilon: float, small_sample: str = "exact") -> tuple[str, float, float]:
    """(test, statistic, p-value) of H0: mean(d) >= epsilon against H1: mean(d) < epsilon: the authors' one-sided
    t-test from MIN_ITEMS_T_TEST items on; below that the exact test (``exact_mean_test``; its statistic is mean(d)).
    ``small_sample="skip"`` refuses fewer items (alt_test leaves such an annotator out before asking)."""
    if len(d) >= MIN_ITEMS_T_TEST:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # constant d: the statistic is +-inf or NaN, said below
            r = sps.ttest_1samp(d, epsilon, alternative="less")
        return "t-test", float(r.statistic), float(r.pvalue)
    if small_sample != "exact":
        raise ValueError(f"{len(d)} items: below {MIN_ITEMS_T_TEST} the t-test is not used (small_sample 'exact' "
                         "tests them exactly)")
    return "exact", float(np.mean(d)) if len(d) else math.nan, exact_mean_test(d, epsilon)


def exact_mean_test(d: FloatArray, epsilon: float) -> float:
    """p-value of H0: mean(d) >= epsilon against H1: mean(d) < epsilon for d in {-1, 0, 1}, valid at any number of
    items: an unconditional exact test with the nuisance parameter (the share of ties) handled as Berger & Boos
    (1994, JASA 89: 1012-1016).

    d's distribution is (P(d = -1), P(d = 0), P(d = 1)); given the tie share p0, the null's worst case is its
    boundary P(d = 1) - P(d = -1) = epsilon (turning a 1 into a -1 only lowers the statistic), a single trinomial.
    The statistic orders the outcomes (#1s, #-1s) by the one-sample t statistic of mean(d) - epsilon; the p-value is
    the largest probability of an outcome ordered at or below the observed one over the tie shares in a 99.9%
    Clopper-Pearson interval of p0 (within the null's [0, 1 - epsilon]), plus 0.001 for that interval's miss.

    It rests only on the items being independent draws of one distribution of d: no normality and no symmetry (a
    sign-flip test of d - epsilon would assume d - epsilon symmetric about 0, which a variable on {-1, 0, 1} with
    mean epsilon > 0 cannot be). Its size is at most the level by construction; it is conservative."""
    d = np.asarray(d, dtype=float)
    if len(d) == 0:
        return math.nan
    if not np.isin(d, (-1.0, 0.0, 1.0)).all():
        raise ValueError("exact_mean_test: the differences W^j - W^judge take the values -1, 0 and 1 only")
    n, eps = len(d), round(float(epsilon), 12)
    j, k = int((d == 1).sum()), int((d == -1).sum())
    ties = n - j - k
    lo = 0.0 if ties == 0 else float(sps.beta.ppf(EXACT_GAMMA / 2, ties, n - ties + 1))
    hi = 1.0 if ties == n else float(sps.beta.ppf(1 - EXACT_GAMMA / 2, ties + 1, n - ties))
    hi = min(hi, 1 - eps)
    if lo > hi:  # no tie share the null allows is plausible: the interval's miss alone
        return EXACT_GAMMA
    table = _exact_table(n, eps)
    o = int(np.flatnonzero((table.j == j) & (table.k == k))[0])
    inside = (table.p0 > lo) & (table.p0 < hi)
    p0 = np.r_[lo, table.p0[inside], hi]
    tails = np.r_[table.tail(np.array([lo]), o), table.grid_tails[inside, o], table.tail(np.array([hi]), o)]
    i = int(np.argmax(tails))
    fine = np.linspace(p0[max(i - 1, 0)], p0[min(i + 1, len(p0) - 1)], 41)  # the tail is smooth in p0
    return float(min(1.0, max(tails.max(), table.tail(fine, o).max()) + EXACT_GAMMA))


@dataclass(frozen=True)
class _ExactTable:
    """Every outcome (j = #1s, k = #-1s) of n items, ordered by the t statistic of mean(d) - epsilon."""

    n: int
    epsilon: float
    j: IntArray
    k: IntArray
    below: BoolArray  # below[o, o'] = outcome o' is ordered at or below outcome o
    log_coef: FloatArray
    p0: FloatArray     # the grid of tie shares the p-value is first maximised on
    grid_tails: FloatArray  # grid_tails[g, o] = tail(p0[g], o)

    def tail(self, p0: FloatArray, o: int) -> FloatArray:
        """P(an outcome at or below outcome o) at each tie share p0, on the null's boundary."""
        result: FloatArray = self.pmf(p0)[:, self.below[o]].sum(axis=1)
        return result

    def pmf(self, p0: FloatArray) -> FloatArray:
        """(len(p0) x outcomes) probabilities of every outcome on the null's boundary."""
        minus = np.clip((1 - self.epsilon - p0) / 2, 0.0, 1.0)
        result: FloatArray = np.exp(self.log_coef[None, :]
                                    + special.xlogy(self.j[None, :], (minus + self.epsilon)[:, None])
                                    + special.xlogy(self.k[None, :], minus[:, None])
                                    + special.xlogy((self.n - self.j - self.k)[None, :], p0[:, None]))
        return result


@functools.lru_cache(maxsize=64)
def _exact_table(n: int, epsilon: float) -> _ExactTable:
    j, k = (a.ravel() for a in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    ok = j + k <= n
    j, k = j[ok], k[ok]
    mean = (j - k) / n
    if n == 1:
        stat = mean - epsilon
    else:
        sd = np.sqrt(np.clip((j + k - n * mean ** 2) / (n - 1), 0.0, None))
        with np.errstate(divide="ignore", invalid="ignore"):
            # no spread: every item alike, at -inf / +inf beyond every other outcome, or 0 exactly at epsilon
            gap = np.round(mean - epsilon, 12)
            stat = np.where(sd > 0, (mean - epsilon) / (sd / math.sqrt(n)),
                            np.where(gap < 0, -np.inf, np.where(gap > 0, np.inf, 0.0)))
    log_coef = special.gammaln(n + 1) - special.gammaln(j + 1) - special.gammaln(k + 1) - special.gammaln(n - j - k + 1)
    below = stat[None, :] <= stat[:, None] + 1e-12
    grid = np.linspace(0.0, 1 - epsilon, EXACT_GRID)
    table = _ExactTable(n, epsilon, j, k, below, log_coef, grid, np.empty(0))
    return dataclasses.replace(table, grid_tails=table.pmf(grid) @ below.T.astype(float))


def by_rejections(p_values: FloatArray, q: float) -> BoolArray:
    """Benjamini-Yekutieli at level q: reject where the BY-adjusted p-value is <= q; an undefined p-value counts as 1
    (never rejected, still one of the m hypotheses)."""
    p = np.where(np.isfinite(p_values), p_values, 1.0)
    if len(p) == 0:
        return np.zeros(0, dtype=bool)
    result: BoolArray = sps.false_discovery_control(p, method="by") <= q
    return result


def alt_test(ratings: pd.DataFrame, judge: pd.Series, *, scoring: str, epsilon: float = DEFAULT_EPSILON,
             q: float = DEFAULT_Q, small_sample: str = "skip") -> AltTestResult:
    """The Alt-Test of ``judge`` (item -> label, NaN where it has none) against ``ratings`` (annotators x items, NaN
    where an annotator did not rate an item; categorical labels as codes). ``small_sample``: what to do with an
    annotator who has fewer than MIN_ITEMS_T_TEST items: "skip" (the authors' rule) or "exact"."""
    _check_arguments(scoring, epsilon, q, small_sample)
    R = ratings.to_numpy(dtype=float)
    if R.shape[0] < 2:
        raise ValueError(f"the Alt-Test needs at least two annotators; found {R.shape[0]}")
    j = pd.to_numeric(judge.reindex(ratings.columns), errors="coerce").to_numpy(dtype=float)
    multi = (~np.isnan(R)).sum(axis=0) >= 2
    rated_any = (~np.isnan(R)).any(axis=0)
    keep = multi & ~np.isnan(j)
    rows, ps, skipped = [], [], []
    for a, name in enumerate(ratings.index):
        w_judge, w_ann = indicators(R, j, a, scoring, keep)
        if len(w_judge) == 0:
            continue
        if len(w_judge) < MIN_ITEMS_T_TEST and small_sample == "skip":
            skipped.append((str(name), len(w_judge)))
            continue
        test, stat, p = one_sided_test(w_ann - w_judge, epsilon, small_sample)
        rows.append((str(name), len(w_judge), test, stat, float(w_judge.mean()), float(w_ann.mean())))
        ps.append(p)
    if not rows and not skipped:
        raise ValueError("the Alt-Test needs items rated by at least two annotators and scored by the judge; "
                         "there are none")
    if not rows:
        few = ", ".join(f"{a} ({n})" for a, n in skipped)
        raise ValueError(f"every annotator has fewer than {MIN_ITEMS_T_TEST} items the test can use ({few}): the "
                         f"authors' rule leaves such an annotator out. Rate more items, or ask for the exact "
                         "small-sample test")
    rejected = by_rejections(np.array(ps), q)
    per = tuple(AnnotatorTest(annotator=r[0], result=Estimate(r[3], n=r[1], pvalue=p, pvalue_method=r[2]),
                              advantage_probability=r[4], annotator_advantage=r[5], rejected=bool(rej))
                for r, p, rej in zip(rows, ps, rejected))
    winning = float(np.mean(rejected))
    return AltTestResult(epsilon=float(epsilon), scoring=scoring, q=float(q), winning_rate=winning,
                         advantage_probability=float(np.mean([a.advantage_probability for a in per])),
                         passed=winning >= 0.5, dropped_items=int((rated_any & ~multi).sum()),
                         items_without_judge=int((multi & np.isnan(j)).sum()), n_items=int(keep.sum()),
                         per_annotator=per, small_sample=small_sample, skipped=tuple(skipped))


def _check_arguments(scoring: str, epsilon: float, q: float, small_sample: str) -> None:
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, not {scoring!r}")
    if not (math.isfinite(epsilon) and 0 <= epsilon <= 1):
        raise ValueError(f"epsilon must be between 0 and 1 (a share of items), got {epsilon}")
    if not 0 < q < 1:
        raise ValueError(f"q must be between 0 and 1, got {q}")
    if small_sample not in SMALL_SAMPLE_RULES:
        raise ValueError(f"small_sample must be one of {', '.join(SMALL_SAMPLE_RULES)}, not {small_sample!r}")


def default_scoring(kind: str) -> str:
    """accuracy for categorical labels (binary, nominal, ordinal), neg_rmse for numeric ratings (interval)."""
    return "neg_rmse" if kind == "interval" else "accuracy"


def alt_test_scores(annotations: pd.DataFrame, judge_scores: pd.DataFrame, dimension: str, *, group: str | None = None,
                    scoring: str, epsilon: float = DEFAULT_EPSILON, q: float = DEFAULT_Q,
                    small_sample: str = "skip") -> AltTestResult:
    """The Alt-Test on a dimension of per-annotator ratings (evalcore.model ``annotations``: item_id, dimension,
    annotator, group, value; ``group`` None = every annotator) against a run's scores (item_id, judge; NaN where the
    reply could not be read)."""
    from evalcore.meta.agreement import reliability_matrix

    m = reliability_matrix(annotations, dimension, group=group)
    m = m.loc[sorted(m.index, key=natural_key)]
    judge = judge_scores.drop_duplicates("item_id").set_index("item_id")["judge"]
    return alt_test(m, judge, scoring=scoring, epsilon=epsilon, q=q, small_sample=small_sample)


def alt_test_pairwise(preferences: pd.DataFrame, comparisons: pd.DataFrame, *, dimension: str,
                      epsilon: float = DEFAULT_EPSILON, q: float = DEFAULT_Q,
                      small_sample: str = "skip") -> AltTestResult:
    """The Alt-Test on pairwise votes (evalcore.model ``preferences``) against a run's combined verdicts (one per
    pair, as evalcore.meta.preference.judge_outcomes combines the two orders); a / b / tie scored by accuracy."""
    from evalcore.meta.preference import align_to_preferences, judge_outcomes

    prefs = preferences[preferences["dimension"] == dimension]
    if prefs.empty:
        raise ValueError(f"no human preferences on dimension {dimension!r}")
    dup = prefs.duplicated(["pair_id", "annotator"], keep=False)
    if dup.any():
        r = prefs[dup].iloc[0]
        raise ValueError(f"preferences: annotator {r['annotator']!r} voted on pair {r['pair_id']!r} more than once")
    m = prefs.assign(code=prefs["preferred"].map(PAIRWISE_CODES)).pivot(index="annotator", columns="pair_id",
                                                                        values="code")
    m = m.loc[sorted(m.index, key=natural_key)]
    judged = judge_outcomes(align_to_preferences(comparisons, prefs), dimension)
    judge = pd.Series(judged["verdict"].map(PAIRWISE_CODES).to_numpy(dtype=float), index=judged["pair_id"])
    return alt_test(m, judge[~judge.index.duplicated()], scoring="accuracy", epsilon=epsilon, q=q,
                    small_sample=small_sample)
