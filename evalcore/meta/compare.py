"""Is judge A closer to the humans than judge B? A paired test on the same items.

Both judges scored the same items, so their correlations with the same human scores are dependent; comparing two
independent CIs would be wrong. Both methods keep the pairing by working per document (the resampling unit used for
every CI in evalcore.meta):

- ``method="bootstrap"`` (default): resample documents with replacement, recompute both correlations on the same
  resample, and take the interval of the difference A - B: BCa by default (``ci_method="bca"``, Efron 1987, with
  the acceleration from the jackknife over documents, both judges' correlations recomputed on each leave-one-out
  replicate, or beyond fastboot.JACKKNIFE_MAX_UNITS documents on each left-out group of the grouped jackknife, as
  correlate does and ``ci_method`` says; see evalcore.meta.intervals.bca_levels), or the percentile interval
  (``ci_method="percentile"``). Both judges read the same blocks of resample counts (fastboot.count_blocks), so
  memory stays flat in the resamples and the caller's progress and stop points are consulted between blocks. The
  p-value is two-sided, about 2 * min(share of resampled differences <= 0, share >= 0) (capped at 1): the smallest
  level at which the *percentile* interval excludes 0, with the observed sample counted among the resamples so it is
  never exactly 0 (see bootstrap_pvalue); near the boundary it can disagree with the BCa interval. It tests "the two
  judges correlate equally well with the humans".
- ``method="permutation"``: under the null that A and B are exchangeable (same correlation with the humans, in
  distribution), swapping the two judges' scores on all items of a document leaves the difference's distribution
  unchanged. ``scipy.stats.permutation_test(permutation_type="samples")`` swaps the labels per document and gives a
  two-sided p-value: exact, by enumerating all 2^documents arrangements, up to ``EXACT_SWAP_MAX_DOCUMENTS`` (13)
  documents whatever ``n_resamples`` says (8,192 arrangements at most, vectorised), else from ``n_resamples``
  seeded random arrangements (see swap_resamples). The reported interval is still the
  paired bootstrap's (BCa or percentile as ``ci_method`` says). Its null is exchangeability of the two judges, which
  is stronger than equal correlation: two judges equally correlated with the humans but on different scales, with
  different ties or differently clustered errors are not exchangeable, and the test can reject them (issue 18.4
  measured 13% at alpha 0.05 with equal correlations). The pages therefore offer the paired bootstrap first, as
  the test of equal correlation; its size under equal correlations is checked by simulation in
  tests/test_meta_compare.py (0.0475 at alpha 0.05 over 400 data sets).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats as st

from evalcore.meta.arrays import BoolArray, FloatArray, OfCounts, PermutationStatistic, Seed
from evalcore.meta import fastboot
from evalcore.meta.coefficients import COEFFICIENTS, rows_correlation, scipy_correlation, snap_ties
from evalcore.meta.correlation import (
    LEVELS, per_document, point_estimate, replicate_function, replicate_rows, system_sums,
)
from evalcore.meta.intervals import CI_METHODS, bootstrap_interval
from evalcore.meta.results import Estimate
from evalcore.meta.scoreframe import PreparedFrame, prepare_frame
from evalcore.meta.validation import check_choice, check_n_resamples
from evalcore.model import counted

METHODS = ("bootstrap", "permutation")

# Up to this many documents the document-swap permutation test enumerates every one of the 2^documents arrangements
# (8,192 at 13), so its p-value is exact; beyond, it draws n_resamples random ones.
EXACT_SWAP_MAX_DOCUMENTS = 13
# Arrangements handed to the vectorised statistic at once: a dataset-level statistic holds arrangements x items
# values, so memory stays bounded on documents with many items.
SWAP_BATCH = 1024


def swap_resamples(n_documents: int, n_resamples: int) -> float:
    """The ``n_resamples`` to hand scipy.stats.permutation_test(permutation_type="samples"): infinity (every
    arrangement, exact) up to EXACT_SWAP_MAX_DOCUMENTS documents, else the caller's count. scipy alone enumerates only
    while 2^documents <= n_resamples (9 documents at 1,000), which would make the p-value of 10-13 documents random."""
    return np.inf if n_documents <= EXACT_SWAP_MAX_DOCUMENTS else n_resamples


@dataclass(frozen=True)
class PairedComparisonResult:
    """Two judges' statistics and their difference a - b as an Estimate: its interval (``method``: the interval
    actually used, "bca", or "percentile" asked for or BCa's fallback), its p-value (``pvalue_method``: the test,
    "bootstrap" or "permutation"), ``n`` as correlate's (items / documents used / systems), ``dropped`` the items
    left out because either judge's value is missing (or only one frame has the item). The old flat names are
    properties."""

    statistic_a: float
    statistic_b: float
    estimate: Estimate
    level: str
    coefficient: str
    n_documents: int = 0  # the documents both frames share: the resampling (and swapping) unit

    difference = property(lambda self: self.estimate.statistic)  # statistic_a - statistic_b
    ci_low = property(lambda self: self.estimate.ci_low)
    ci_high = property(lambda self: self.estimate.ci_high)
    pvalue = property(lambda self: self.estimate.pvalue)
    n = property(lambda self: self.estimate.n)
    method = property(lambda self: self.estimate.pvalue_method)
    dropped = property(lambda self: self.estimate.dropped)
    n_resamples = property(lambda self: self.estimate.n_resamples)
    confidence_level = property(lambda self: self.estimate.confidence_level)
    ci_method = property(lambda self: self.estimate.method)


def paired_result(stat_a: float, stat_b: float, difference: float, lo: float, hi: float, pvalue: float, *, n: int,
                  level: str, coefficient: str, method: str, dropped: int, n_resamples: int, confidence_level: float,
                  ci_method: str, n_documents: int) -> PairedComparisonResult:
    """The result of a paired comparison (here and in evalcore.meta.compare_labels), its difference an Estimate."""
    e = Estimate(float(difference), float(lo), float(hi), n=int(n), method=ci_method, pvalue=float(pvalue),
                 pvalue_method=method, confidence_level=float(confidence_level), n_resamples=int(n_resamples),
                 resampling="documents", dropped=int(dropped))
    return PairedComparisonResult(float(stat_a), float(stat_b), e, level, coefficient, int(n_documents))


def _paired_frames(frame_a: pd.DataFrame, frame_b: pd.DataFrame) -> tuple[PreparedFrame, PreparedFrame, int]:
    for name, f in (("frame_a", frame_a), ("frame_b", frame_b)):
        if "item_id" not in f.columns:
            raise ValueError(f"{name}: missing column 'item_id' (the two frames are matched on it)")
        prepare_frame(f, name=name)  # validation with a message naming the frame
    cols = ["item_id", "doc_id", "system_id", "judge", "human"]
    m = frame_a[cols].merge(frame_b[["item_id", "judge", "human"]], on="item_id", how="inner", suffixes=("_a", "_b"))
    if m.empty:
        raise ValueError("frame_a and frame_b share no item_id")
    ha = m["human_a"].astype(float).to_numpy()
    hb = m["human_b"].astype(float).to_numpy()
    diff = ~np.isclose(ha, hb, rtol=1e-12, atol=1e-12)
    if diff.any():
        i = diff.nonzero()[0][0]
        raise ValueError(f"frame_a and frame_b disagree on the human score of item {m['item_id'].iloc[i]!r} "
                         f"({ha[i]} vs {hb[i]}); compare judges against the same human scores")
    union = len(set(frame_a["item_id"]) | set(frame_b["item_id"]))
    ja = pd.to_numeric(m["judge_a"], errors="coerce")
    jb = pd.to_numeric(m["judge_b"], errors="coerce")
    both = ja.notna() & jb.notna()
    m = m[both.to_numpy()]
    dropped = union - len(m)
    base = m[["item_id", "doc_id", "system_id"]].assign(human=m["human_a"].astype(float))
    pa = prepare_frame(base.assign(judge=ja[both].astype(float).to_numpy()), name="frame_a")
    pb = prepare_frame(base.assign(judge=jb[both].astype(float).to_numpy()), name="frame_b")
    return pa, pb, dropped


def _summary_common(pa: PreparedFrame, pb: PreparedFrame, coefficient: str,
                    skip_constant: bool) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Per-document correlations of both judges on the documents where both are defined (skip_constant=True), or on
    all documents with undefined ones as 0 (skip_constant=False)."""
    ra = per_document(pa, coefficient)
    rb = per_document(pb, coefficient)
    if skip_constant:
        used = ~(np.isnan(ra) | np.isnan(rb))
    else:
        used = np.ones(len(ra), dtype=bool)
    return np.where(np.isnan(ra), 0.0, ra), np.where(np.isnan(rb), 0.0, rb), used


def _permutation_statistic(pa: PreparedFrame, pb: PreparedFrame, level: str, coefficient: str,
                           skip_constant: bool) -> PermutationStatistic:
    """statistic(x, y) for scipy.stats.permutation_test: x holds document indices, shifted by n_docs where A and B
    are swapped on that document; returns the difference A - B for every row (vectorised)."""
    D = pa.n_docs
    if level == "summary":
        ra, rb, used = _summary_common(pa, pb, coefficient, skip_constant)
        delta = (ra - rb) * used
        total = used.sum()

        def summary_stat(x: FloatArray, y: FloatArray, axis: int = -1) -> FloatArray | float:
            sign = np.where(np.atleast_2d(x) >= D, -1.0, 1.0)
            out = (sign @ delta) / total
            result: FloatArray | float = out if np.ndim(x) > 1 else out[0]
            return result

        return summary_stat
    if level == "system":
        sxa, sy, n = system_sums(pa)
        sxb, _, _ = system_sums(pb)
        tot = n.sum(axis=0)
        my = sy.sum(axis=0) / tot

        def system_stat(x: FloatArray, y: FloatArray, axis: int = -1) -> FloatArray | float:
            S = (np.atleast_2d(x) >= D).astype(float)
            ma = ((1 - S) @ sxa + S @ sxb) / tot
            mb = (S @ sxa + (1 - S) @ sxb) / tot
            Y = np.broadcast_to(my, ma.shape)
            if coefficient != "pearson":
                ma, mb, Y = snap_ties(ma), snap_ties(mb), snap_ties(Y)
            out = rows_correlation(ma, Y, coefficient) - rows_correlation(mb, Y, coefficient)
            return out if np.ndim(x) > 1 else out[0]

        return system_stat

    def stat(x: FloatArray, y: FloatArray, axis: int = -1) -> FloatArray | float:
        S = np.atleast_2d(x) >= D
        swapped = S[:, pa.doc]
        XA = np.where(swapped, pb.x, pa.x)
        XB = np.where(swapped, pa.x, pb.x)
        if coefficient == "kendall":
            # Row-wise tau-b over all item pairs would be O(items^2) per row; scipy's O(n log n) per row is cheaper.
            out = np.array([scipy_correlation(a, pa.y, "kendall")[0] - scipy_correlation(b, pa.y, "kendall")[0]
                            for a, b in zip(XA, XB)])
        else:
            Y = np.broadcast_to(pa.y, XA.shape)
            out = rows_correlation(XA, Y, coefficient) - rows_correlation(XB, Y, coefficient)
        return out if np.ndim(x) > 1 else out[0]

    return stat


def bootstrap_pvalue(differences: FloatArray) -> float:
    """Two-sided bootstrap p-value for "difference = 0": 2 * min(#(d* <= 0) + 1, #(d* >= 0) + 1) / (R + 1), capped at
    1. The +1s count the observed sample among the resamples, so a finite number of resamples never claims p = 0."""
    d = differences[~np.isnan(differences)]
    if len(d) == 0:
        return float("nan")
    r = len(d)
    return float(min(1.0, 2 * min(((d <= 0).sum() + 1) / (r + 1), ((d >= 0).sum() + 1) / (r + 1))))


def _permutation_pvalue(pa: PreparedFrame, pb: PreparedFrame, level: str, coefficient: str, skip_constant: bool,
                        n_resamples: int,
                        random_state: Seed) -> float:
    """The permutation test of exchangeable judges: each document's two judges swapped at random."""
    statistic = _permutation_statistic(pa, pb, level, coefficient, skip_constant)
    docs = np.arange(pa.n_docs)
    res = st.permutation_test((docs, docs + pa.n_docs), statistic, permutation_type="samples", vectorized=True,
                              n_resamples=swap_resamples(pa.n_docs, n_resamples), alternative="two-sided",
                              random_state=random_state, batch=SWAP_BATCH)
    return float(res.pvalue)


def paired_difference(frame_a: pd.DataFrame, frame_b: pd.DataFrame, *, level: str = "dataset",
                      coefficient: str = "spearman", n_resamples: int = 1000, method: str = "bootstrap",
                      random_state: Seed = 0, confidence_level: float = 0.95, skip_constant: bool = True,
                      ci_method: str = "bca") -> PairedComparisonResult:
    """Difference (A - B) in correlation with the humans between two judges scored on the same items.

    The frames are inner-joined on item_id; items where either judge's value is missing are left out (``dropped``),
    so both statistics are computed on exactly the same items. At summary level both are averaged over the same
    documents (those defined for both judges when skip_constant=True), so statistic_a may differ slightly from
    ``correlate(frame_a)``. See the module docstring for the interval (``ci_method``: "bca" or "percentile") and the
    p-value of each method. ``n_resamples=0`` gives the two statistics and their difference alone (interval and
    p-value NaN): what a page shows first on a large study while the resamples run.
    """
    check_choice(level, LEVELS, "level")
    check_choice(coefficient, COEFFICIENTS, "coefficient")
    check_choice(method, METHODS, "method")
    check_choice(ci_method, CI_METHODS, "ci_method")
    check_n_resamples(n_resamples)
    pa, pb, dropped = _paired_frames(frame_a, frame_b)
    stat_a, stat_b, n, of_counts = _paired_replicates(pa, pb, level, coefficient, skip_constant)
    difference = stat_a - stat_b
    lo = hi = pvalue = float("nan")
    used_method = ci_method
    if n_resamples > 0:
        lo, hi, pvalue, used_method = paired_inference(
            pa.n_docs, of_counts, difference, n_resamples=n_resamples, random_state=random_state,
            ci_method=ci_method, confidence_level=confidence_level, method=method,
            permutation_pvalue=lambda: _permutation_pvalue(pa, pb, level, coefficient, skip_constant, n_resamples,
                                                           random_state))
    return paired_result(stat_a, stat_b, difference, lo, hi, pvalue, n=n, level=level, coefficient=coefficient,
                         method=method, dropped=dropped, n_resamples=n_resamples, confidence_level=confidence_level,
                         ci_method=used_method, n_documents=pa.n_docs)


# Below this many documents the paired bootstrap's interval is measurably too narrow: two equally weak judges with
# errors clustered by document were called different in 14% of simulated studies of 6-10 documents, 12% at 20, 7.5%
# at 40 and 6% at 80, against 5% asked (bench/bench_paired_size.py, 200 studies each).
FEW_DOCUMENTS_FOR_BOOTSTRAP = 50


def few_documents_warning(result: PairedComparisonResult) -> str | None:
    """What a paired comparison on few documents cannot promise, in words; None when nothing needs saying."""
    d = result.n_documents
    if result.method == "permutation" and 0 < d < 6:
        return (f"This comparison rests on {counted(d, 'document')}: swapping the two judges on whole documents gives "
                f"{2 ** d} arrangements, so the p-value cannot fall below {2 / 2 ** d:.3f}.")
    if result.method == "bootstrap" and 0 < d < FEW_DOCUMENTS_FOR_BOOTSTRAP:
        return (f"This comparison rests on {counted(d, 'document')}: on fewer than {FEW_DOCUMENTS_FOR_BOOTSTRAP} the paired "
                "bootstrap's interval is too narrow (two equally good judges came out different in 12-14% of "
                "simulated studies of 6-20 documents, 7.5% at 40, instead of 5%: bench/bench_paired_size.py). Read "
                "the permutation test too (Test: exchangeable judges), which is exact on few documents; a difference "
                "both call significant is one to trust.")
    return None


def _paired_replicates(pa: PreparedFrame, pb: PreparedFrame, level: str, coefficient: str,
                       skip_constant: bool) -> tuple[float, float, int, OfCounts]:
    """(statistic A, statistic B, n, replicate function): the function takes count rows (replicates x documents)
    and gives A - B on each, both judges' correlations recomputed on the same multiset of documents."""
    if level == "summary":
        ra, rb, used = _summary_common(pa, pb, coefficient, skip_constant)
        k = int(used.sum())
        stat_a = float(ra[used].mean()) if k else float("nan")
        stat_b = float(rb[used].mean()) if k else float("nan")
        num_den = np.stack([(ra - rb) * used, used.astype(float)], axis=1)  # one product reads the counts once

        def summary(C: FloatArray) -> FloatArray:
            num, den = (C @ num_den).T
            with np.errstate(invalid="ignore", divide="ignore"):
                result: FloatArray = num / den
                return result

        return stat_a, stat_b, k, summary
    stat_a, _, n, _ = point_estimate(pa, level=level, coefficient=coefficient)
    stat_b, _, _, _ = point_estimate(pb, level=level, coefficient=coefficient)
    of_a = replicate_function(pa, level=level, coefficient=coefficient)
    of_b = replicate_function(pb, level=level, coefficient=coefficient)
    return stat_a, stat_b, n, lambda C: of_a(C) - of_b(C)


def paired_inference(n_docs: int, of_counts: OfCounts, difference: float, *, n_resamples: int, random_state: Seed,
                     ci_method: str,
                     confidence_level: float, method: str,
                     permutation_pvalue: Callable[[], float]) -> tuple[float, float, float, str]:
    """(ci_low, ci_high, pvalue, interval method used) of a paired difference A - B over documents: ``of_counts``
    gives A - B on count rows (replicates x documents); the interval is the paired bootstrap's (BCa with the
    jackknife over documents, or percentile), the p-value the bootstrap's (``method="bootstrap"``) or what
    ``permutation_pvalue()`` returns. Shared by the correlation and the label comparisons."""
    if n_docs < 2:  # one document: every resample is that document (no interval), and swapping the two judges on
        # it only flips the difference's sign, so the exact two-sided permutation p-value is 1
        return float("nan"), float("nan"), float("nan") if method == "bootstrap" else 1.0, ci_method
    boot, jack = _paired_distribution(n_docs, of_counts, n_resamples, random_state, ci_method)
    lo, hi, _, used = bootstrap_interval(boot, confidence_level=confidence_level, method=ci_method,
                                         estimate=difference, jackknife=jack)
    if used == "bca" and fastboot.jackknife_label(n_docs):
        used = f"bca ({fastboot.jackknife_label(n_docs)})"
    pvalue = bootstrap_pvalue(boot[~np.isnan(boot)]) if method == "bootstrap" else permutation_pvalue()
    return lo, hi, pvalue, used


def _paired_distribution(n_docs: int, of_counts: OfCounts, n_resamples: int, random_state: Seed,
                         ci_method: str) -> tuple[FloatArray, FloatArray | None]:
    """(bootstrap differences, jackknife differences or None): the resamples of ``bootstrap_counts(n_docs,
    n_resamples, random_state)`` drawn in blocks (fastboot.count_blocks: memory flat in the resamples) and shared by
    both judges; the jackknife of correlate (leave one document out, or beyond fastboot.JACKKNIFE_MAX_UNITS
    documents the grouped jackknife), reporting progress and consulting the caller's stop point between blocks."""
    with fastboot.expecting(replicate_rows(n_docs, n_resamples, ci_method)):
        boot = fastboot.over_blocks(of_counts, fastboot.count_blocks(n_docs, n_resamples, random_state))
        jack = fastboot.over_blocks(of_counts, fastboot.jackknife_count_blocks(n_docs)) if ci_method == "bca" else None
    return boot, jack
