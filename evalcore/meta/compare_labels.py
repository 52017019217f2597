"""Does judge A label the items more like the humans than judge B? The paired test on a categorical dimension.

The categorical counterpart of evalcore.meta.compare.paired_difference: both judges labelled the same items, so
their agreements with the same human labels are dependent, and the comparison keeps the pairing by working per
document (the resampling unit of every interval in evalcore.meta).

The statistic is one of :data:`LABEL_STATISTICS`, all functions of the confusion matrix (human x judge label):
Cohen's kappa (Cohen 1960), quadratic-weighted kappa for an ordinal dimension (Cohen 1968), or accuracy; computed
as evalcore.meta.classification does (``prepare_labels`` reads the judge's values as categories, the point
estimates come from scikit-learn, the resamples from ``stats_from_confusion`` on each resample's matrix).

- ``method="bootstrap"``: documents resampled with replacement, both judges' confusion matrices rebuilt from the
  same resample (counts @ each document's confusion table), the difference's BCa interval (jackknife over
  documents for the acceleration) or percentile interval, and the two-sided bootstrap p-value of
  compare.bootstrap_pvalue (null: equal agreement).
- ``method="permutation"``: under the null that the two judges are exchangeable, swapping their labels on all items
  of a document leaves the difference's distribution unchanged; ``scipy.stats.permutation_test(permutation_type=
  "samples")`` swaps per document, exactly by enumeration up to compare.EXACT_SWAP_MAX_DOCUMENTS (13) documents
  whatever n_resamples says, else from n_resamples random arrangements. The interval reported is still the paired
  bootstrap's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import scipy.stats as st

from evalcore.meta.arrays import FloatArray, OfCounts, PermutationStatistic, Seed
from evalcore.meta.classification import (
    PreparedLabels, doc_tables, judge_codes, prepare_labels, sklearn_statistics, stats_from_confusion,
)
from evalcore.meta.compare import (
    METHODS, SWAP_BATCH, PairedComparisonResult, paired_inference, paired_result, swap_resamples,
)
from evalcore.meta.intervals import CI_METHODS
from evalcore.meta.validation import check_choice, check_n_resamples

# What the alignment loop and this test can compare on a categorical dimension (the weighted kappa needs an order)
LABEL_STATISTICS = ("cohen_kappa", "weighted_kappa", "accuracy")


def check_statistic(statistic: str, kind: str) -> None:
    """ValueError for a statistic this dimension's kind does not support."""
    check_choice(statistic, LABEL_STATISTICS, "statistic")
    if statistic == "weighted_kappa" and kind != "ordinal":
        raise ValueError(f"weighted_kappa weighs disagreements by the distance between ordered labels: it needs an "
                         f"ordinal dimension, this one is {kind}")


def _paired_labels(frame_a: pd.DataFrame, frame_b: pd.DataFrame, categories: Sequence[float], kind: str
                   ) -> tuple[PreparedLabels, PreparedLabels, int]:
    """Both frames on the items where both judges gave a readable category (same rows, same documents)."""
    for name, f in (("frame_a", frame_a), ("frame_b", frame_b)):
        missing = [c for c in ("item_id", "doc_id", "judge", "human") if c not in f.columns]
        if missing:
            raise ValueError(f"{name}: missing column(s) {missing} (the two frames are matched on item_id)")
    m = frame_a[["item_id", "doc_id", "judge", "human"]].merge(frame_b[["item_id", "judge", "human"]], on="item_id",
                                                               how="inner", suffixes=("_a", "_b"))
    if m.empty:
        raise ValueError("frame_a and frame_b share no item_id")
    ha, hb = (pd.to_numeric(m[c], errors="coerce").to_numpy(dtype=float) for c in ("human_a", "human_b"))
    differ = ~np.isclose(ha, hb, rtol=1e-12, atol=1e-12, equal_nan=True)
    if differ.any():
        i = int(differ.nonzero()[0][0])
        raise ValueError(f"frame_a and frame_b disagree on the human label of item {m['item_id'].iloc[i]!r} "
                         f"({ha[i]} vs {hb[i]}); compare judges against the same human labels")
    union = len(set(frame_a["item_id"]) | set(frame_b["item_id"]))
    codes = [judge_codes(pd.to_numeric(m[c], errors="coerce"), categories, kind) for c in ("judge_a", "judge_b")]
    both = (codes[0] >= 0) & (codes[1] >= 0)
    base = m.loc[both, ["item_id", "doc_id"]].assign(human=m.loc[both, "human_a"])
    pa = prepare_labels(base.assign(judge=m.loc[both, "judge_a"]), categories, kind, name="frame_a")
    pb = prepare_labels(base.assign(judge=m.loc[both, "judge_b"]), categories, kind, name="frame_b")
    return pa, pb, union - len(pa.human)


def _difference_of(pa: PreparedLabels, pb: PreparedLabels, statistic: str, average: str) -> OfCounts:
    """counts (replicates x documents) -> A - B on each multiset of documents."""
    ta, tb = doc_tables(pa), doc_tables(pb)

    def of_counts(C: FloatArray) -> FloatArray:
        C = np.asarray(C, dtype=float)
        ca = np.ascontiguousarray((ta @ C.T).T).reshape(len(C), pa.k, pa.k)
        cb = np.ascontiguousarray((tb @ C.T).T).reshape(len(C), pb.k, pb.k)
        return stats_from_confusion(ca, average=average)[statistic] - stats_from_confusion(cb, average=average)[
            statistic]

    return of_counts


def _swap_statistic(pa: PreparedLabels, pb: PreparedLabels, statistic: str, average: str) -> PermutationStatistic:
    """statistic(x, y) for scipy.stats.permutation_test: x holds document indices, shifted by n_docs where A and B
    are swapped on that document (as compare._permutation_statistic); A - B for every row."""
    D = pa.n_docs
    ta, tb = doc_tables(pa), doc_tables(pb)

    def stat(x: FloatArray, y: FloatArray, axis: int = -1) -> FloatArray | float:
        swapped = (np.atleast_2d(x) >= D).astype(float)
        kept = 1.0 - swapped
        ca = np.ascontiguousarray((ta @ kept.T + tb @ swapped.T).T).reshape(len(kept), pa.k, pa.k)
        cb = np.ascontiguousarray((tb @ kept.T + ta @ swapped.T).T).reshape(len(kept), pa.k, pa.k)
        out = stats_from_confusion(ca, average=average)[statistic] - stats_from_confusion(cb, average=average)[
            statistic]
        return out if np.ndim(x) > 1 else out[0]

    return stat


def paired_label_difference(frame_a: pd.DataFrame, frame_b: pd.DataFrame, *, categories: Sequence[float], kind: str,
                            statistic: str = "cohen_kappa", n_resamples: int = 1000, method: str = "bootstrap",
                            random_state: Seed = 0, confidence_level: float = 0.95, ci_method: str = "bca"
                            ) -> PairedComparisonResult:
    """Difference (A - B) in agreement with the human labels between two judges that labelled the same items.

    ``categories`` and ``kind`` are the dimension's (``Dimension.categories``, "binary" / "ordinal" / "nominal");
    items where either judge's value is missing or no category are left out of both (``dropped``). The result is a
    :class:`evalcore.meta.compare.PairedComparisonResult` with ``coefficient`` = the statistic and ``level``
    "dataset" (the statistics are over all items). See the module docstring for the interval and p-values.
    """
    check_statistic(statistic, kind)
    check_choice(method, METHODS, "method")
    check_choice(ci_method, CI_METHODS, "ci_method")
    check_n_resamples(n_resamples)
    pa, pb, dropped = _paired_labels(frame_a, frame_b, categories, kind)
    average = "binary" if kind == "binary" else "macro"
    stat_a = sklearn_statistics(pa.human, pa.judge, pa.k, average=average)[statistic]
    stat_b = sklearn_statistics(pb.human, pb.judge, pb.k, average=average)[statistic]
    difference = stat_a - stat_b
    lo = hi = pvalue = float("nan")
    used = ci_method
    if n_resamples > 0 and pa.n_docs > 0:
        docs = np.arange(pa.n_docs)
        lo, hi, pvalue, used = paired_inference(
            pa.n_docs, _difference_of(pa, pb, statistic, average), difference, n_resamples=n_resamples,
            random_state=random_state, ci_method=ci_method, confidence_level=confidence_level, method=method,
            permutation_pvalue=lambda: st.permutation_test(
                (docs, docs + pa.n_docs), _swap_statistic(pa, pb, statistic, average), permutation_type="samples",
                vectorized=True, n_resamples=swap_resamples(pa.n_docs, n_resamples), alternative="two-sided",
                random_state=random_state, batch=SWAP_BATCH).pvalue)
    return paired_result(stat_a, stat_b, difference, lo, hi, pvalue, n=len(pa.human), level="dataset",
                         coefficient=statistic, method=method, dropped=dropped, n_resamples=n_resamples,
                         confidence_level=confidence_level, ci_method=used, n_documents=pa.n_docs)


__all__ = ["LABEL_STATISTICS", "check_statistic", "paired_label_difference"]
