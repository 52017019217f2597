"""Correlation of judge scores with human scores at dataset, summary and system level, with bootstrap CIs.

Input is a *score frame* (evalcore.meta.scoreframe): one row per item with columns ``item_id, doc_id, system_id,
judge, human``. ``judge`` may be
NaN where the judge's reply could not be parsed; such items are dropped and counted (``dropped``), never scored 0.

Levels (RECIPES.md, "Meta-evaluation"):

- ``dataset``: one correlation over all items pooled (003 Table 4; also 000's turn level on Topical-Chat).
- ``summary``: for each document, correlate over that document's items (the systems' outputs), then average over
  documents (000, following UniEval). A document where either side is constant has no correlation. By default
  (``skip_constant=True``, what G-Eval's released script does) it is skipped; with ``skip_constant=False`` it counts as
  correlation 0, which does not reward a judge for giving every output of a document the same score. Either way the
  number of such documents is reported (``skipped``; with ``skip_constant=False`` it counts the documents scored 0).
- ``system``: mean per system on each side, then one correlation across systems.

Kendall is tau-b (scipy's default, as 003 footnote 2 and 002 App. C). Point estimates and p-values come from
``scipy.stats.pearsonr / spearmanr / kendalltau`` (evalcore.meta.coefficients; small-n p-values from
evalcore.meta.inference). A correlation is returned as an Estimate (evalcore.meta.results).

Confidence intervals: bootstrap over *documents* (the clusters: a document's items share a source and are not
independent), ``n_resamples`` draws with replacement. At the system level each resample recomputes the system means
from the drawn documents. Resamples where the statistic is undefined (e.g. a constant side) are left out of the
interval and counted in ``undefined_resamples``.

The interval is BCa by default (``ci_method="bca"``, bias-corrected and accelerated; Efron 1987, "Better bootstrap
confidence intervals", JASA 82; the default of ``scipy.stats.bootstrap``); ``ci_method="percentile"`` gives the plain
percentile interval. Why BCa: resampling documents adds noise to every system mean, which attenuates the correlation
across systems, so at the system level the resampled correlations sit systematically below the point estimate and the
percentile interval can exclude it (synthetic SummEval-shaped run: Pearson 0.987, percentile interval [0.899, 0.979]).
BCa shifts the percentiles by the measured bias (z0) and the skewness (acceleration a) of the statistic, which
re-centres such lopsided intervals (synthetic 60 x 12 run: Pearson 0.942, percentile [0.680, 0.951], BCa
[0.923, 0.977]). It cannot rescue an estimate the percentile interval already excludes: with a ~ 0 that happens
exactly when z0 > 1.96, and BCa then excludes it from the other side, narrowly (the bench's 0.987 gets [0.991, 0.992],
set by the largest few resamples); such a cell says the document bootstrap is not reliable for it. See
intervals.bca_levels for the formulas, the tie rule and the degenerate cases (where it falls back to the percentile
interval and says so in the result's ``method``). The acceleration comes from the jackknife over the resampling unit, the document: one
replicate per document left out, computed through the same vectorised code as the bootstrap (a leave-one-out
replicate is just a count vector with one document at 0, see distribution_from_counts).

Speed: every level has a vectorised bootstrap (validated against explicit resampling + scipy in
tests/test_meta_correlation.py, to 1e-9):

- summary level: per-document correlations do not change when documents are resampled, so they are computed once
  (vectorised across documents) and only their mean is resampled: (resamples x docs) counts @ per-doc values.
- system level: (resamples x docs) counts @ (docs x systems) per-doc sums gives every resample's system means at once;
  the correlation across systems is then computed row-wise (ranks along an axis; Kendall via pairwise sign products).
- dataset level: a resample is integer weights per item (how often its document was drawn). Pearson from weighted
  sums; Spearman as the weighted Pearson of the mid-ranks of the resampled multiset (from a fixed sort order and
  cumulative weights, ties included); Kendall tau-b from the weighted (x value, y value) contingency table of each
  resample (counts @ sparse per-document tables) with concordant / discordant / tied pairs from 2-D cumulative sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp

from evalcore.meta.arrays import FloatArray, IntArray, OfCounts, Seed
from evalcore.meta import fastboot
# The coefficients, the score frame and the intervals live in the modules below this one (inference imports them
# too); they are re-exported here, where evalcore.meta and its callers have always found them.
from evalcore.meta.coefficients import COEFFICIENTS as COEFFICIENTS
from evalcore.meta.coefficients import rows_correlation as rows_correlation
from evalcore.meta.coefficients import rows_kendall as rows_kendall
from evalcore.meta.coefficients import rows_pearson as rows_pearson
from evalcore.meta.coefficients import rows_spearman as rows_spearman
from evalcore.meta.coefficients import scipy_correlation as scipy_correlation
from evalcore.meta.coefficients import snap_ties as snap_ties
from evalcore.meta.inference import CI_RESAMPLING, boot_both_interval, correlation_pvalue
from evalcore.meta.intervals import CI_METHODS as CI_METHODS
from evalcore.meta.intervals import bca_levels as bca_levels
from evalcore.meta.intervals import bootstrap_interval as bootstrap_interval
from evalcore.meta.intervals import percentile_interval as percentile_interval
from evalcore.meta.resampling import BLOCK_CELLS as BLOCK_CELLS
from evalcore.meta.resampling import bootstrap_indices as bootstrap_indices
from evalcore.meta.resampling import jackknife_counts as jackknife_counts
from evalcore.meta.resampling import jackknife_values as jackknife_values
from evalcore.meta.resampling import resample_counts as resample_counts
from evalcore.meta.results import Estimate
from evalcore.meta.scoreframe import REQUIRED_COLUMNS as REQUIRED_COLUMNS
from evalcore.meta.scoreframe import PreparedFrame as PreparedFrame
from evalcore.meta.scoreframe import prepare_frame as prepare_frame
from evalcore.meta.validation import check_choice, check_confidence_level, check_n_resamples

LEVELS = ("dataset", "summary", "system")

# Above this many (judge value x human value) cells the contingency-table bootstrap would cost more than explicit
# resampling; dataset-level Spearman then uses item weights and Kendall the exact slow path (scipy per resample).
MAX_KENDALL_TABLE_CELLS = 50_000

# The columns of correlation_table and of ``meta --json``'s ``correlations`` rows, in this order (README "meta
# --json"): the estimate's fields under the names the table has always used, with the level and coefficient asked.
TABLE_COLUMNS = ("statistic", "ci_low", "ci_high", "n", "skipped", "dropped", "level", "coefficient", "pvalue",
                 "n_resamples", "confidence_level", "skip_constant", "undefined_resamples", "ci_method", "ci_note",
                 "pvalue_method", "ci_resampling")


# --------------------------------------------------------------------------------------------------------------------
# Summary level


def document_matrix(p: PreparedFrame) -> tuple[FloatArray, FloatArray]:
    """(docs x max items per doc) matrices of judge and human values, NaN-padded (a row = one document's items)."""
    order = np.argsort(p.doc, kind="stable")
    doc_sorted = p.doc[order]
    starts = np.searchsorted(doc_sorted, np.arange(p.n_docs))
    pos = np.arange(len(order)) - starts[doc_sorted]
    width = int(pos.max()) + 1 if len(pos) else 1
    X = np.full((p.n_docs, width), np.nan)
    Y = np.full((p.n_docs, width), np.nan)
    X[doc_sorted, pos] = p.x[order]
    Y[doc_sorted, pos] = p.y[order]
    return X, Y


def per_document(p: PreparedFrame, coefficient: str) -> FloatArray:
    """The correlation over each document's items (NaN where undefined), vectorised across documents."""
    X, Y = document_matrix(p)
    return rows_correlation(X, Y, coefficient)


def _summary_values(p: PreparedFrame, coefficient: str, skip_constant: bool) -> tuple[FloatArray, FloatArray]:
    r = per_document(p, coefficient)
    undefined = np.isnan(r)
    if skip_constant:
        return np.where(undefined, 0.0, r), ~undefined
    # A constant document counts as correlation 0 (see module docstring).
    return np.where(undefined, 0.0, r), np.ones(len(r), dtype=bool)



# --------------------------------------------------------------------------------------------------------------------
# System level


# (docs x systems) judge sums, human sums, item counts; and the distinct columns of the three side by side, where
# each column came from, and the number of systems
SystemSums: TypeAlias = tuple[FloatArray, FloatArray, FloatArray]
SystemTables: TypeAlias = tuple[FloatArray, IntArray, int]


def system_sums(p: PreparedFrame) -> SystemSums:
    """(docs x systems) sums of judge, human and item counts."""
    cell = p.doc * p.n_systems + p.system
    size = p.n_docs * p.n_systems
    shape = (p.n_docs, p.n_systems)
    # weighted counts are floats (numpy's stubs type every bincount as integers)
    sx = np.asarray(np.bincount(cell, weights=p.x, minlength=size).reshape(shape), dtype=np.float64)
    sy = np.asarray(np.bincount(cell, weights=p.y, minlength=size).reshape(shape), dtype=np.float64)
    n = np.bincount(cell, minlength=size).reshape(shape).astype(float)
    return sx, sy, n


def system_means(p: PreparedFrame) -> tuple[FloatArray, FloatArray]:
    sx, sy, n = system_sums(p)
    tot = n.sum(axis=0)
    return sx.sum(axis=0) / tot, sy.sum(axis=0) / tot


def _system_tables(sums: SystemSums) -> SystemTables:
    """The (docs x systems) judge sums, human sums and item counts side by side, each distinct column once (every
    system's count column is the same where each document has one output per system), and where each came from."""
    sx, sy, n = sums
    cols = np.concatenate([sx, sy, n], axis=1).T
    keep: list[int] = []
    where = np.empty(len(cols), dtype=np.int64)
    by_head: dict[bytes, list[int]] = {}  # columns compared in full only when their first values agree
    for j, col in enumerate(cols):
        alike = by_head.setdefault(col[:32].tobytes(), [])
        same = next((i for i in alike if np.array_equal(cols[keep[i]], col)), None)
        if same is None:
            keep.append(j)
            same = len(keep) - 1
            alike.append(same)
        where[j] = same
    return np.ascontiguousarray(cols[keep].T), where, sx.shape[1]


def _boot_system(p: PreparedFrame, coefficient: str, C: FloatArray, sums: SystemSums | None = None,
                 tables: SystemTables | None = None) -> FloatArray:
    # One product of the counts with the distinct columns of the three tables (the counts are read once).
    distinct, where, k = tables if tables is not None else _system_tables(system_sums(p) if sums is None else sums)
    cx, cy, cn = np.split((C @ distinct)[:, where], [k, 2 * k], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.where(cn > 0, cx / cn, np.nan)  # a system absent from a resample is left out of that resample
        my = np.where(cn > 0, cy / cn, np.nan)
    if coefficient != "pearson":
        mx, my = snap_ties(mx), snap_ties(my)
    return rows_correlation(mx, my, coefficient)


# --------------------------------------------------------------------------------------------------------------------
# Dataset level


def _levels(v: FloatArray) -> tuple[IntArray, int]:
    codes, uniq = pd.factorize(v, sort=True)
    return codes.astype(np.int64), len(uniq)


def _doc_ranges(p: PreparedFrame) -> list[tuple[FloatArray, FloatArray]]:
    """Per document, (lowest, highest) judge value and the same for human values."""
    out = []
    for v in (p.x, p.y):
        lo = np.full(p.n_docs, np.inf)
        hi = np.full(p.n_docs, -np.inf)
        np.minimum.at(lo, p.doc, v)
        np.maximum.at(hi, p.doc, v)
        out.append((lo, hi))
    return out


def _constant_resamples(p: PreparedFrame, C: FloatArray,
                        ranges: list[tuple[FloatArray, FloatArray]] | None = None) -> FloatArray:
    """True where the resampled judge or human values are all equal (the coefficient is then undefined)."""
    out = np.zeros(C.shape[0], dtype=bool)
    ranges = ranges if ranges is not None else _doc_ranges(p)
    # A resample holding a document whose own values differ on both sides is not constant: one product settles
    # almost every resample; only the others need the per-document ranges.
    varied = (ranges[0][1] > ranges[0][0]) & (ranges[1][1] > ranges[1][0])
    maybe = np.flatnonzero(C @ varied.astype(float) == 0)
    if len(maybe) == 0:
        return out
    C = C[maybe]
    drawn = C > 0
    for lo, hi in ranges:
        rhi = np.where(drawn, hi[None, :], -np.inf).max(axis=1)
        rlo = np.where(drawn, lo[None, :], np.inf).min(axis=1)
        out[maybe] |= rhi == rlo
    return out


def _boot_dataset_pearson(p: PreparedFrame, C: FloatArray) -> FloatArray:
    xc = p.x - p.x.mean()  # centring first keeps the one-pass sums accurate
    yc = p.y - p.y.mean()
    cols = [np.ones_like(xc), xc, yc, xc * xc, yc * yc, xc * yc]
    per_doc = np.stack([np.bincount(p.doc, weights=c, minlength=p.n_docs) for c in cols], axis=1)
    n, sx, sy, sxx, syy, sxy = (C @ per_doc).T
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (sxy - sx * sy / n) / np.sqrt((sxx - sx * sx / n) * (syy - sy * sy / n))
    result: FloatArray = np.clip(r, -1.0, 1.0)
    return result


def spearman_from_tables(T: FloatArray) -> FloatArray:
    """Spearman rho for each (x level x y level) count table in T (b x K x L): Pearson of the mid-ranks, where every
    element of x level k has mid-rank (# elements in lower levels) + (row total + 1) / 2."""
    rows = T.sum(axis=2)
    cols = T.sum(axis=1)
    n = rows.sum(axis=1, keepdims=True)
    rx = np.cumsum(rows, axis=1) - rows + (rows + 1.0) / 2.0 - (n + 1.0) / 2.0
    ry = np.cumsum(cols, axis=1) - cols + (cols + 1.0) / 2.0 - (n + 1.0) / 2.0
    cov = np.einsum("bk,bkl,bl->b", rx, T, ry)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov / np.sqrt((rows * rx * rx).sum(axis=1) * (cols * ry * ry).sum(axis=1))
    result: FloatArray = np.clip(r, -1.0, 1.0)
    return result


def kendall_from_tables(T: FloatArray) -> FloatArray:
    """Kendall tau-b for each (x level x y level) count table in T (shape b x K x L), levels in increasing order.

    concordant = sum T[k,l] * #(k'<k, l'<l); discordant = sum T[k,l] * #(k'<k, l'>l), both from 2-D cumulative
    sums; tied pairs from the row and column totals, as scipy's tau-b.
    """
    below = np.cumsum(T, axis=1) - T  # below[k, l] = sum_{k'<k} T[k', l]
    cum_below = np.cumsum(below, axis=2)
    con = (T[:, :, 1:] * cum_below[:, :, :-1]).sum(axis=(1, 2))  # l' < l
    dis = (T * (cum_below[:, :, -1:] - cum_below)).sum(axis=(1, 2))  # l' > l
    n = T.sum(axis=(1, 2))
    rows = T.sum(axis=2)
    cols = T.sum(axis=1)
    n0 = n * (n - 1) / 2
    n1 = (rows * (rows - 1) / 2).sum(axis=1)
    n2 = (cols * (cols - 1) / 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (con - dis) / np.sqrt((n0 - n1) * (n0 - n2))
    result: FloatArray = np.clip(tau, -1.0, 1.0)
    return result


def _table_fits(p: PreparedFrame) -> bool:
    """Whether the contingency-table path is the cheaper one.

    It costs about resamples x cells; explicit resampling costs about resamples x items log items. Measured on
    2 cores (1,600 items), the two meet near 10 cells per item.
    """
    k = len(np.unique(p.x))
    l_ = len(np.unique(p.y))
    return k * l_ <= min(MAX_KENDALL_TABLE_CELLS, max(2_000, 10 * len(p.x)))


def _boot_dataset_tables(p: PreparedFrame, C: FloatArray,
                         from_tables: Callable[[FloatArray], FloatArray]) -> FloatArray:
    kx, K = _levels(p.x)
    ky, L = _levels(p.y)
    # Per-document tables are sparse (a document holds a handful of items), so counts @ tables costs resamples x items.
    cells = sp.csr_matrix((np.ones(len(p.x)), (p.doc, kx * L + ky)), shape=(p.n_docs, K * L)).T.tocsr()
    out = np.empty(C.shape[0])
    step = max(1, BLOCK_CELLS // (K * L))
    for s in range(0, C.shape[0], step):
        Cs = C[s:s + step]
        T = np.ascontiguousarray((cells @ Cs.T).T).reshape(len(Cs), K, L)
        out[s:s + step] = from_tables(T)
    return out


def _boot_dataset_explicit(p: PreparedFrame, C: FloatArray, coefficient: str) -> FloatArray:
    """The exact slow path: build each resample explicitly and ask scipy. Used for Kendall when both sides have so
    many distinct values that the contingency table would cost more than resampling itself (see _table_fits)."""
    out = np.empty(C.shape[0])
    for b in range(C.shape[0]):
        w = C[b][p.doc].astype(np.int64)
        out[b] = scipy_correlation(np.repeat(p.x, w), np.repeat(p.y, w), coefficient)[0]
    return out


def _items_in_blocks(C: FloatArray, doc: IntArray, of_weights: Callable[[IntArray], FloatArray]) -> FloatArray:
    """``of_weights(W)`` over row blocks of the item weights W = C[:, doc], fastboot.ITEM_BLOCK_CELLS cells at a
    time, on fastboot.workers() threads (numpy releases the GIL in these loops)."""
    out = np.empty(C.shape[0])
    step = max(1, fastboot.ITEM_BLOCK_CELLS // max(1, len(doc)))
    starts = list(range(0, C.shape[0], step))

    def one(s: int) -> None:
        # counts as integers before the gather: the kernels' cumulative sums are exact and fast in int64
        out[s:s + step] = of_weights(np.take(fastboot.as_counts(C[s:s + step]), doc, axis=1))

    fastboot.run_blocks(one, starts)
    return out


def _dataset_spearman_replicates(p: PreparedFrame) -> OfCounts:
    """Spearman per replicate as the weighted Pearson of weighted mid-ranks (fastboot.WeightedSpearman), the side
    with more distinct values sorted once."""
    ws = (fastboot.WeightedSpearman(p.x, p.y) if fastboot.n_distinct(p.x) >= fastboot.n_distinct(p.y)
          else fastboot.WeightedSpearman(p.y, p.x))
    doc = p.doc[ws.order]
    return lambda C: _items_in_blocks(C, doc, ws.rho)


def _dataset_kendall_replicates(p: PreparedFrame) -> OfCounts:
    """Kendall tau-b per replicate: level by level over the side with fewer distinct values (fastboot.WeightedKendall);
    the exact slow path (scipy per resample) when both sides have many."""
    nx, ny = fastboot.n_distinct(p.x), fastboot.n_distinct(p.y)
    if min(nx, ny) > fastboot.KENDALL_MAX_LEVELS:
        return lambda C: _boot_dataset_explicit(p, C, "kendall")
    kd = fastboot.WeightedKendall(p.x, p.y) if ny <= nx else fastboot.WeightedKendall(p.y, p.x)
    doc = p.doc[kd.order]
    return lambda C: _items_in_blocks(C, doc, kd.tau_b)


def _dataset_replicates(p: PreparedFrame, coefficient: str) -> OfCounts:
    """A function counts (rows x docs) -> the dataset-level statistic per row, everything that does not depend on
    the weights (sorts, levels, per-document sums) prepared once."""
    of_counts: OfCounts
    if coefficient == "pearson":
        of_counts = lambda C: _boot_dataset_pearson(p, C)  # noqa: E731  (per-document sums: cheap already)
    elif _table_fits(p):
        from_tables = spearman_from_tables if coefficient == "spearman" else kendall_from_tables
        of_counts = lambda C: _boot_dataset_tables(p, C, from_tables)  # noqa: E731
    elif coefficient == "spearman":
        of_counts = _dataset_spearman_replicates(p)
    else:
        of_counts = _dataset_kendall_replicates(p)
    ranges = _doc_ranges(p)

    def replicates(C: FloatArray) -> FloatArray:
        out = of_counts(C)
        out[_constant_resamples(p, C, ranges)] = np.nan
        return out

    return replicates


def replicate_function(p: PreparedFrame, *, level: str, coefficient: str,
                       skip_constant: bool = True) -> OfCounts:
    """A function counts (rows x docs: how often each document is in the multiset) -> the statistic per row (NaN
    where undefined), with the per-frame work done once, so bootstrap and jackknife blocks share it."""
    if level == "dataset":
        return _dataset_replicates(p, coefficient)
    if level == "summary":
        vals, used = _summary_values(p, coefficient, skip_constant)
        num_den = np.stack([vals * used, used.astype(float)], axis=1)  # one product reads the counts once

        def summary(C: FloatArray) -> FloatArray:
            num, den = (C @ num_den).T
            with np.errstate(invalid="ignore", divide="ignore"):
                result: FloatArray = num / den
                return result

        return summary
    tables = _system_tables(system_sums(p))
    return lambda C: _boot_system(p, coefficient, C, tables=tables)


def distribution_from_counts(p: PreparedFrame, *, level: str, coefficient: str, counts: FloatArray,
                             skip_constant: bool = True) -> FloatArray:
    """The statistic on every row of ``counts`` (rows x docs: how often each document is in the multiset; any
    non-negative integers, not necessarily summing to n_docs); NaN where undefined. Bootstrap resamples and jackknife
    (leave-one-out) replicates both go through here."""
    C = np.asarray(counts, dtype=float)
    return replicate_function(p, level=level, coefficient=coefficient, skip_constant=skip_constant)(C)


def bootstrap_distribution(p: PreparedFrame, *, level: str, coefficient: str, indices: IntArray,
                           skip_constant: bool = True) -> FloatArray:
    """The statistic on every document resample in ``indices`` (resamples x docs); NaN where undefined."""
    return distribution_from_counts(p, level=level, coefficient=coefficient,
                                    counts=resample_counts(indices, p.n_docs), skip_constant=skip_constant)


def jackknife_distribution(p: PreparedFrame, *, level: str, coefficient: str, skip_constant: bool = True
                           ) -> FloatArray:
    """The jackknife replicates behind BCa's acceleration (NaN where undefined): each document left out in turn
    (n_docs values), or beyond fastboot.JACKKNIFE_MAX_UNITS documents each of fastboot.JACKKNIFE_GROUPS groups of
    documents left out in turn (see fastboot.jackknife_count_blocks)."""
    of_counts = replicate_function(p, level=level, coefficient=coefficient, skip_constant=skip_constant)
    return fastboot.over_blocks(of_counts, fastboot.jackknife_count_blocks(p.n_docs))


# --------------------------------------------------------------------------------------------------------------------
# Public API


def point_estimate(p: PreparedFrame, *, level: str, coefficient: str, skip_constant: bool = True
                   ) -> tuple[float, float | None, int, int]:
    """(statistic, p-value, n, skipped) for a prepared frame."""
    if level == "dataset":
        stat, pv = scipy_correlation(p.x, p.y, coefficient)
        return stat, pv, len(p.x), 0
    if level == "summary":
        r = per_document(p, coefficient)
        undefined = np.isnan(r)
        skipped = int(undefined.sum())
        if skip_constant:
            used = r[~undefined]
        else:
            used = np.where(undefined, 0.0, r)
        stat = float(used.mean()) if len(used) else float("nan")
        return stat, None, int(len(used)), skipped
    mx, my = system_means(p)
    if coefficient != "pearson":
        mx, my = snap_ties(mx)[0], snap_ties(my)[0]
    stat, pv = scipy_correlation(mx, my, coefficient)
    return stat, pv, p.n_systems, 0


def level_values(p: PreparedFrame, *, level: str, coefficient: str) -> tuple[FloatArray, FloatArray]:
    """The (judge, human) pairs a dataset- or system-level correlation is computed on (system level: the system
    means, ties snapped for the rank coefficients as in point_estimate)."""
    if level == "dataset":
        return p.x, p.y
    mx, my = system_means(p)
    if coefficient != "pearson":
        mx, my = snap_ties(mx)[0], snap_ties(my)[0]
    return mx, my


def _correlate_prepared(p: PreparedFrame, *, level: str, coefficient: str, n_resamples: int,
                        confidence_level: float, skip_constant: bool, random_state: Seed,
                        ci_method: str = "bca", ci_resampling: str = "documents",
                        drawn: list[npt.NDArray[np.uint8]] | None = None) -> Estimate:
    stat, pv, n, skipped = point_estimate(p, level=level, coefficient=coefficient, skip_constant=skip_constant)
    pv_method = ""
    if pv is not None:
        pv, pv_method = correlation_pvalue(*level_values(p, level=level, coefficient=coefficient), coefficient,
                                           random_state=random_state)
    lo = hi = float("nan")
    undefined = 0
    used_method = ci_method
    both = ci_resampling == "both" and level == "system"
    if both and n_resamples > 0 and p.n_docs > 0:
        lo, hi, undefined = boot_both_interval(p, coefficient, n_resamples=n_resamples,
                                               confidence_level=confidence_level, random_state=random_state)
        used_method = "percentile"
    elif n_resamples > 0 and p.n_docs > 1:
        lo, hi, undefined, used_method = _document_interval(p, stat, level=level, coefficient=coefficient,
                                                            n_resamples=n_resamples, confidence_level=confidence_level,
                                                            skip_constant=skip_constant, random_state=random_state,
                                                            ci_method=ci_method, drawn=drawn)
    # one document: every resample is that document, so the "interval" would be the estimate itself (zero width)
    note = ONE_DOCUMENT_NOTE if n_resamples > 0 and p.n_docs == 1 and not both else _ci_note(float(stat), lo, hi)
    return Estimate(
        statistic=float(stat), ci_low=lo, ci_high=hi, n=int(n), method=used_method, notes=(note,) if note else (),
        pvalue=None if pv is None else float(pv), pvalue_method=pv_method, confidence_level=float(confidence_level),
        n_resamples=int(n_resamples), undefined_resamples=undefined, resampling="both" if both else "documents",
        dropped=p.dropped, skipped=int(skipped),
    )


def _document_interval(p: PreparedFrame, stat: float, *, level: str, coefficient: str, n_resamples: int,
                       confidence_level: float, skip_constant: bool, random_state: Seed, ci_method: str,
                       drawn: list[npt.NDArray[np.uint8]] | None) -> tuple[float, float, int, str]:
    """(low, high, undefined resamples, method used): the document bootstrap's interval, BCa by default."""
    # The same resamples as bootstrap_indices(n_docs, n_resamples, random_state), drawn in blocks.
    of_counts = replicate_function(p, level=level, coefficient=coefficient, skip_constant=skip_constant)
    blocks = ((B.astype(float) for B in drawn) if drawn is not None
              else fastboot.count_blocks(p.n_docs, n_resamples, random_state))
    with fastboot.expecting(replicate_rows(p.n_docs, n_resamples, ci_method)):
        dist = fastboot.over_blocks(of_counts, blocks)
        jack = (fastboot.over_blocks(of_counts, fastboot.jackknife_count_blocks(p.n_docs)) if ci_method == "bca"
                else None)
    lo, hi, undefined, used_method = bootstrap_interval(dist, confidence_level=confidence_level, method=ci_method,
                                                        estimate=stat, jackknife=jack)
    if used_method == "bca" and fastboot.jackknife_label(p.n_docs):
        used_method = f"bca ({fastboot.jackknife_label(p.n_docs)})"
    return lo, hi, undefined, used_method


def table_row(e: Estimate, *, level: str, coefficient: str, skip_constant: bool = True) -> dict[str, Any]:
    """One row of correlation_table (TABLE_COLUMNS): the estimate beside the level and coefficient asked for."""
    return {"statistic": e.statistic, "ci_low": e.ci_low, "ci_high": e.ci_high, "n": e.n, "skipped": e.skipped,
            "dropped": e.dropped, "level": level, "coefficient": coefficient, "pvalue": e.pvalue,
            "n_resamples": e.n_resamples, "confidence_level": e.confidence_level, "skip_constant": bool(skip_constant),
            "undefined_resamples": e.undefined_resamples, "ci_method": e.method, "ci_note": e.note,
            "pvalue_method": e.pvalue_method, "ci_resampling": e.resampling}


def replicate_rows(n_docs: int, n_resamples: int, ci_method: str = "bca") -> int:
    """The replicates one interval computes: the resamples, and the jackknife's for BCa (progress reports count
    these)."""
    return int(n_resamples) + (fastboot.jackknife_rows(n_docs) if ci_method == "bca" else 0)


# Rounding slack for "inside the interval": a Spearman of 8 system means computed as 0.7999999999999999 and an
# interval end at 0.8 are the same number (a rank correlation takes few distinct values, and the bootstrap hits
# the estimate exactly); only a real miss deserves the warning.
CI_NOTE_TOLERANCE = 1e-9


ONE_DOCUMENT_NOTE = "no interval: a bootstrap over one document has nothing to resample"


def _ci_note(stat: float, lo: float, hi: float) -> str:
    if np.isnan(stat) or np.isnan(lo) or np.isnan(hi):
        return ""
    if lo - CI_NOTE_TOLERANCE <= stat <= hi + CI_NOTE_TOLERANCE:
        return ""
    return ("estimate outside its bootstrap interval: resampling documents biases this statistic; "
            "read the interval with care")


def _check_args(level: str, coefficient: str, n_resamples: int, confidence_level: float,
                ci_method: str = "bca", ci_resampling: str = "documents") -> None:
    check_choice(ci_resampling, CI_RESAMPLING, "ci_resampling")
    check_choice(level, LEVELS, "level")
    check_choice(coefficient, COEFFICIENTS, "coefficient")
    check_choice(ci_method, CI_METHODS, "ci_method")
    check_n_resamples(n_resamples)
    check_confidence_level(confidence_level)


def correlate(frame: pd.DataFrame, *, level: str = "dataset", coefficient: str = "spearman", n_resamples: int = 1000,
              confidence_level: float = 0.95, skip_constant: bool = True, random_state: Seed = 0,
              ci_method: str = "bca", ci_resampling: str = "documents") -> Estimate:
    """Correlation of ``judge`` with ``human`` at one level, with a document-bootstrap CI (BCa by default), as an
    Estimate: ``n`` counts items (dataset level), documents used (summary level) or systems (system level);
    ``skipped`` the documents with an undefined correlation at the summary level (see ``skip_constant``);
    ``dropped`` the items whose judge value is missing; ``notes`` says when the estimate lies outside its own
    interval (at the system level resampling documents adds noise to the system means and can pull every resampled
    correlation one way); ``resampling`` what the interval resampled ("documents", or "both").

    ``ci_resampling="both"`` gives the system level the boot-both interval instead (systems and documents resampled
    together, evalcore.meta.inference); other levels always resample documents. p-values at small n are permutation
    p-values (``pvalue_method`` says which).

    ``n_resamples=0`` skips the interval (ci_low/ci_high NaN). ``ci_method``: "bca" (default) or "percentile"; the
    result's ``method`` says which was used (BCa falls back to percentile where it is undefined). See the module
    docstring for the levels, the ``skip_constant`` convention and how the interval is computed.
    """
    _check_args(level, coefficient, n_resamples, confidence_level, ci_method, ci_resampling)
    p = prepare_frame(frame)
    return _correlate_prepared(p, level=level, coefficient=coefficient, n_resamples=n_resamples,
                               confidence_level=confidence_level, skip_constant=skip_constant,
                               random_state=random_state, ci_method=ci_method, ci_resampling=ci_resampling)


def correlation_table(frame: pd.DataFrame, *, levels: Sequence[str] = LEVELS,
                      coefficients: Sequence[str] = COEFFICIENTS, n_resamples: int = 1000,
                      skip_constant: bool = True, random_state: Seed = 0, confidence_level: float = 0.95,
                      ci_method: str = "bca", ci_resampling: str = "documents") -> pd.DataFrame:
    """One row per level x coefficient; columns TABLE_COLUMNS (table_row).

    Every cell uses the same document resamples (same random_state), so cells are comparable resample by resample.
    ``ci_method`` as in correlate.
    """
    cells = correlation_estimates(frame, levels=levels, coefficients=coefficients, n_resamples=n_resamples,
                                  skip_constant=skip_constant, random_state=random_state,
                                  confidence_level=confidence_level, ci_method=ci_method, ci_resampling=ci_resampling)
    rows = [table_row(e, level=lv, coefficient=co, skip_constant=skip_constant) for (lv, co), e in cells.items()]
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def correlation_estimates(frame: pd.DataFrame, *, levels: Sequence[str] = LEVELS,
                          coefficients: Sequence[str] = COEFFICIENTS, n_resamples: int = 1000,
                          skip_constant: bool = True, random_state: Seed = 0, confidence_level: float = 0.95,
                          ci_method: str = "bca", ci_resampling: str = "documents"
                          ) -> dict[tuple[str, str], Estimate]:
    """{(level, coefficient): Estimate} for every cell, levels then coefficients in the order given: what
    ``correlation_table`` tabulates, every cell on the same document resamples."""
    for lv in levels:
        for co in coefficients:
            _check_args(lv, co, n_resamples, confidence_level, ci_method, ci_resampling)
    p = prepare_frame(frame)
    # The resamples are drawn once for all cells, kept as small integers (a document drawn more than 255 times in
    # one resample is beyond any realistic frame; counts are checked).
    drawn = None
    if n_resamples > 0 and p.n_docs > 0:
        drawn = [B.astype(np.uint8) for B in fastboot.count_blocks(p.n_docs, n_resamples, random_state)
                 if B.max() <= 255] or None
        if drawn is not None and sum(len(B) for B in drawn) != n_resamples:
            drawn = None
    return {(lv, co): _correlate_prepared(p, level=lv, coefficient=co, n_resamples=n_resamples,
                                          confidence_level=confidence_level, skip_constant=skip_constant,
                                          random_state=random_state, ci_method=ci_method,
                                          ci_resampling=ci_resampling, drawn=drawn)
            for lv in levels for co in coefficients}
