"""The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025): may this judge replace the annotators?

Leave one annotator j out at a time and ask who represents the remaining annotators better on each item i, the
judge or j (the paper's Algorithm 1; the authors' reference code is github.com/nitaytech/AltTest):

- alignment score S(x, i) of a label x with the OTHER annotators' labels of item i: ``accuracy`` = the share of them
  x equals (categorical dimensions, pairwise verdicts a / b / tie), ``neg_rmse`` = minus the root mean squared
  difference from them (numeric ratings);
- indicators W_i^judge = [S(judge, i) >= S(j, i)] and W_i^j = [S(j, i) >= S(judge, i)] (both 1 on a tie);
- H0: mean(W^j - W^judge) >= epsilon against H1: < epsilon, a one-sided one-sample t-test
  (scipy.stats.ttest_1samp, alternative "less"). epsilon is the cost-benefit margin granted to the judge: the
  authors suggest 0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd workers (README FAQ). With fewer than
  30 items the t-test's normal approximation is not trusted and the authors' FAQ says to use the Wilcoxon
  signed-rank test instead (scipy.stats.wilcoxon on W^j - W^judge - epsilon, alternative "less"); ``test`` says
  which was used;
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

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from evalcore.model import natural_key

SCORINGS = ("accuracy", "neg_rmse")
DEFAULT_EPSILON = 0.2
DEFAULT_Q = 0.05
MIN_ITEMS_T_TEST = 30  # the authors' FAQ: below 30 items per annotator, a Wilcoxon signed-rank test
PAIRWISE_CODES = {"a": 0.0, "b": 1.0, "tie": 2.0}


@dataclass(frozen=True)
class AnnotatorTest:
    """One annotator left out: the judge against them on the items they and at least one other annotator rated."""

    annotator: str
    n: int
    test: str                     # "t-test" (n >= 30) or "wilcoxon" (n < 30)
    statistic: float
    p_value: float                # NaN where the test is undefined (counted as not rejected)
    advantage_probability: float  # mean(W^judge): the judge at least as good as this annotator
    annotator_advantage: float    # mean(W^j)
    rejected: bool                # after Benjamini-Yekutieli: the judge "wins" against this annotator

    def as_dict(self) -> dict:
        return {"annotator": self.annotator, "n": self.n, "test": self.test, "statistic": _num(self.statistic),
                "p_value": _num(self.p_value), "advantage_probability": _num(self.advantage_probability),
                "annotator_advantage": _num(self.annotator_advantage), "rejected": self.rejected}


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

    def as_dict(self) -> dict:
        return {"epsilon": self.epsilon, "scoring": self.scoring, "q": self.q,
                "winning_rate": _num(self.winning_rate), "advantage_probability": _num(self.advantage_probability),
                "passed": self.passed, "dropped_items": self.dropped_items,
                "items_without_judge": self.items_without_judge, "n_items": self.n_items,
                "per_annotator": [a.as_dict() for a in self.per_annotator]}


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def alignment_scores(label: np.ndarray, others: np.ndarray, scoring: str) -> np.ndarray:
    """S(label_i, others_i) per item: ``others`` is (annotators x items) with NaN where not rated; each item needs at
    least one rating in ``others``. accuracy: the share of the others' labels equal to label_i; neg_rmse: minus the
    root mean squared difference from them (the reference code's ``accuracy`` / ``neg_rmse``)."""
    rated = ~np.isnan(others)
    count = rated.sum(axis=0)
    if scoring == "accuracy":
        return ((others == label[None, :]) & rated).sum(axis=0) / count
    if scoring == "neg_rmse":
        sq = np.where(rated, (others - label[None, :]) ** 2, 0.0)
        return -np.sqrt(sq.sum(axis=0) / count)
    raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, not {scoring!r}")


def indicators(R: np.ndarray, judge: np.ndarray, a: int, scoring: str,
               keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
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


def one_sided_test(d: np.ndarray, epsilon: float) -> tuple[str, float, float]:
    """(test, statistic, p-value) of H0: mean(d) >= epsilon against H1: mean(d) < epsilon."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant d: the statistic is +-inf or NaN, said below
        if len(d) >= MIN_ITEMS_T_TEST:
            r = sps.ttest_1samp(d, epsilon, alternative="less")
            return "t-test", float(r.statistic), float(r.pvalue)
        try:
            # Wilcoxon's zero_method "wilcox" leaves out the differences equal to epsilon (zero after shifting)
            r = sps.wilcoxon(d - epsilon, alternative="less")
        except ValueError:  # every shifted difference is zero: no test
            return "wilcoxon", math.nan, math.nan
        return "wilcoxon", float(r.statistic), float(r.pvalue)


def by_rejections(p_values: np.ndarray, q: float) -> np.ndarray:
    """Benjamini-Yekutieli at level q: reject where the BY-adjusted p-value is <= q; an undefined p-value counts as 1
    (never rejected, still one of the m hypotheses)."""
    p = np.where(np.isfinite(p_values), p_values, 1.0)
    if len(p) == 0:
        return np.zeros(0, dtype=bool)
    return sps.false_discovery_control(p, method="by") <= q


def alt_test(ratings: pd.DataFrame, judge: pd.Series, *, scoring: str, epsilon: float = DEFAULT_EPSILON,
             q: float = DEFAULT_Q) -> AltTestResult:
    """The Alt-Test of ``judge`` (item -> label, NaN where it has none) against ``ratings`` (annotators x items, NaN
    where an annotator did not rate an item; categorical labels as codes)."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, not {scoring!r}")
    if not (math.isfinite(epsilon) and 0 <= epsilon <= 1):
        raise ValueError(f"epsilon must be between 0 and 1 (a share of items), got {epsilon}")
    if not 0 < q < 1:
        raise ValueError(f"q must be between 0 and 1, got {q}")
    R = ratings.to_numpy(dtype=float)
    if R.shape[0] < 2:
        raise ValueError(f"the Alt-Test needs at least two annotators; found {R.shape[0]}")
    j = pd.to_numeric(judge.reindex(ratings.columns), errors="coerce").to_numpy(dtype=float)
    multi = (~np.isnan(R)).sum(axis=0) >= 2
    rated_any = (~np.isnan(R)).any(axis=0)
    keep = multi & ~np.isnan(j)
    rows, ps = [], []
    for a, name in enumerate(ratings.index):
        w_judge, w_ann = indicators(R, j, a, scoring, keep)
        if len(w_judge) == 0:
            continue
        test, stat, p = one_sided_test(w_ann - w_judge, epsilon)
        rows.append((str(name), len(w_judge), test, stat, float(w_judge.mean()), float(w_ann.mean())))
        ps.append(p)
    if not rows:
        raise ValueError("the Alt-Test needs items rated by at least two annotators and scored by the judge; "
                         "there are none")
    rejected = by_rejections(np.array(ps), q)
    per = tuple(AnnotatorTest(annotator=r[0], n=r[1], test=r[2], statistic=r[3], p_value=p,
                              advantage_probability=r[4], annotator_advantage=r[5], rejected=bool(rej))
                for r, p, rej in zip(rows, ps, rejected))
    winning = float(np.mean(rejected))
    return AltTestResult(epsilon=float(epsilon), scoring=scoring, q=float(q), winning_rate=winning,
                         advantage_probability=float(np.mean([a.advantage_probability for a in per])),
                         passed=winning >= 0.5, dropped_items=int((rated_any & ~multi).sum()),
                         items_without_judge=int((multi & np.isnan(j)).sum()), n_items=int(keep.sum()),
                         per_annotator=per)


def default_scoring(kind: str) -> str:
    """accuracy for categorical labels (binary, nominal, ordinal), neg_rmse for numeric ratings (interval)."""
    return "neg_rmse" if kind == "interval" else "accuracy"


def alt_test_scores(annotations: pd.DataFrame, judge_scores: pd.DataFrame, dimension: str, *, group=None,
                    scoring: str, epsilon: float = DEFAULT_EPSILON, q: float = DEFAULT_Q) -> AltTestResult:
    """The Alt-Test on a dimension of per-annotator ratings (evalcore.model ``annotations``: item_id, dimension,
    annotator, group, value; ``group`` None = every annotator) against a run's scores (item_id, judge; NaN where the
    reply could not be read)."""
    from evalcore.meta.agreement import reliability_matrix

    m = reliability_matrix(annotations, dimension, group=group)
    m = m.loc[sorted(m.index, key=natural_key)]
    judge = judge_scores.drop_duplicates("item_id").set_index("item_id")["judge"]
    return alt_test(m, judge, scoring=scoring, epsilon=epsilon, q=q)


def alt_test_pairwise(preferences: pd.DataFrame, comparisons: pd.DataFrame, *, dimension: str,
                      epsilon: float = DEFAULT_EPSILON, q: float = DEFAULT_Q) -> AltTestResult:
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
    return alt_test(m, judge[~judge.index.duplicated()], scoring="accuracy", epsilon=epsilon, q=q)
