"""Correlation of judge scores with human scores at dataset, summary and system level, with bootstrap CIs.

Input is a *score frame*: one row per item with columns ``item_id, doc_id, system_id, judge, human``. ``judge`` may be
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
``scipy.stats.pearsonr / spearmanr / kendalltau``.

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
set by the largest few resamples); such a cell says the document bootstrap is not reliable for it. See bca_levels
for the formulas, the tie rule and the degenerate cases (where it falls back to the percentile interval and says so
in ``ci_method``). The acceleration comes from the jackknife over the resampling unit, the document: one
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

import warnings
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd
import scipy.sparse as sp
import scipy.special as special
import scipy.stats as st

from evalcore.meta import fastboot
from evalcore.meta.resampling import (  # noqa: F401  (re-exported: evalcore.meta and callers import them here)
    BLOCK_CELLS, bootstrap_indices, jackknife_counts, jackknife_values, resample_counts,
)

COEFFICIENTS = ("pearson", "spearman", "kendall")  # kendall = tau-b
LEVELS = ("dataset", "summary", "system")
CI_METHODS = ("bca", "percentile")
CI_RESAMPLING = ("documents", "both")  # see evalcore.meta.inference

REQUIRED_COLUMNS = ("doc_id", "system_id", "judge", "human")

# Above this many (judge value x human value) cells the contingency-table bootstrap would cost more than explicit
# resampling; dataset-level Spearman then uses item weights and Kendall the exact slow path (scipy per resample).
MAX_KENDALL_TABLE_CELLS = 50_000
# Largest number of float64 cells one vectorised block may hold (about 32 MB); bigger work is chunked over resamples.
_BLOCK_CELLS = BLOCK_CELLS
# Bootstrap values within this distance (relative to max(1, |estimate|)) of the estimate count as ties with it in
# BCa's bias correction: the vectorised paths and scipy can round the same correlation differently in the last bits.
_TIE_RTOL = 1e-12


@dataclass(frozen=True)
class CorrelationResult:
    statistic: float
    ci_low: float
    ci_high: float
    n: int  # items (dataset level), documents used (summary level), systems (system level)
    skipped: int  # documents with an undefined (constant) correlation at summary level; 0 elsewhere
    dropped: int  # items dropped because the judge's value is missing (failed parse)
    level: str
    coefficient: str
    pvalue: float | None  # scipy's p-value at dataset/system level; None at summary level
    n_resamples: int
    confidence_level: float
    skip_constant: bool = True  # summary level: constant documents skipped (True) or counted as 0 (False)
    undefined_resamples: int = 0  # bootstrap resamples whose statistic was undefined, left out of the interval
    ci_method: str = "bca"  # interval actually used: "bca", or "percentile" (asked for, or BCa's fallback)
    # Set when the point estimate lies outside its own interval. That happens at the system level when
    # resampling documents adds noise to the system means and pulls every resampled correlation one way (the bias
    # is then so large, |z0| > 1.96, that neither the percentile nor the BCa interval covers the estimate).
    ci_note: str = ""
    # How the p-value was computed (evalcore.meta.inference.correlation_pvalue): "exact permutation",
    # "permutation (9999 resamples)", "exact" (Kendall, no ties), "exact under normality" (Pearson from 30 pairs) or
    # "asymptotic" (inference.scipy_pvalue_method); "" where there is none.
    pvalue_method: str = ""
    # What the interval resamples: "documents" (systems held fixed) or "both" (systems and documents, Deutsch et al.
    # 2021 boot-both; system level only, percentile interval).
    ci_resampling: str = "documents"

    def as_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------------------------------
# Input


@dataclass(frozen=True)
class PreparedFrame:
    """A validated score frame as arrays: judge ``x``, human ``y``, document and system codes (sorted ids)."""

    x: np.ndarray
    y: np.ndarray
    doc: np.ndarray
    system: np.ndarray
    doc_ids: np.ndarray
    system_ids: np.ndarray
    dropped: int

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    @property
    def n_systems(self) -> int:
        return len(self.system_ids)


def prepare_frame(frame: pd.DataFrame, *, name: str = "score frame") -> PreparedFrame:
    """Validate a score frame and drop (and count) items whose judge value is missing.

    Raises ValueError naming the column and row for missing columns, non-numeric values, a missing human score,
    infinite values or duplicated item ids.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}; a score frame needs {list(REQUIRED_COLUMNS)}")
    if "item_id" in frame.columns:
        dup = frame["item_id"].duplicated(keep=False)
        if dup.any():
            first = frame.loc[dup, "item_id"].iloc[0]
            raise ValueError(f"{name}: item_id {first!r} appears {int((frame['item_id'] == first).sum())} times; "
                             "a score frame has one row per item")
    cols = {}
    for col in ("judge", "human"):
        raw = frame[col]
        num = pd.to_numeric(raw, errors="coerce")
        bad = num.isna() & raw.notna()
        if bad.any():
            row = bad.to_numpy().nonzero()[0][0]
            raise ValueError(f"{name}: column {col!r} row {row} holds {raw.iloc[row]!r}, which is not a number")
        arr = num.to_numpy(dtype=float)
        if np.isinf(arr).any():
            row = np.isinf(arr).nonzero()[0][0]
            raise ValueError(f"{name}: column {col!r} row {row} is infinite")
        cols[col] = arr
    hnan = np.isnan(cols["human"])
    if hnan.any():
        row = hnan.nonzero()[0][0]
        ident = frame["item_id"].iloc[row] if "item_id" in frame.columns else row
        raise ValueError(f"{name}: column 'human' row {row} (item {ident!r}) is missing; every item needs a human "
                         "score (join the judge's scores onto the human table, not the other way round)")
    for col in ("doc_id", "system_id"):
        if frame[col].isna().any():
            row = frame[col].isna().to_numpy().nonzero()[0][0]
            raise ValueError(f"{name}: column {col!r} row {row} is missing")
    keep = ~np.isnan(cols["judge"])
    dropped = int((~keep).sum())
    doc, doc_ids = pd.factorize(frame["doc_id"].to_numpy()[keep], sort=True)
    system, system_ids = pd.factorize(frame["system_id"].to_numpy()[keep], sort=True)
    return PreparedFrame(
        x=cols["judge"][keep], y=cols["human"][keep], doc=doc.astype(np.int64), system=system.astype(np.int64),
        doc_ids=np.asarray(doc_ids), system_ids=np.asarray(system_ids), dropped=dropped,
    )


def _check_choice(value: str, choices: tuple[str, ...], what: str) -> None:
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of {list(choices)}")


# --------------------------------------------------------------------------------------------------------------------
# Point estimates (scipy)


def _is_constant(v: np.ndarray) -> bool:
    return len(v) == 0 or bool(np.all(v == v[0]))


def scipy_correlation(x: np.ndarray, y: np.ndarray, coefficient: str) -> tuple[float, float]:
    """(statistic, p-value) from scipy; (nan, nan) when undefined (fewer than 2 values or a constant side)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) < 2 or _is_constant(x) or _is_constant(y):
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if coefficient == "pearson":
            res = st.pearsonr(x, y)
        elif coefficient == "spearman":
            res = st.spearmanr(x, y)
        elif coefficient == "kendall":
            res = st.kendalltau(x, y)  # tau-b, scipy's default variant
        else:
            raise ValueError(f"unknown coefficient {coefficient!r}; choose one of {list(COEFFICIENTS)}")
    return float(res.statistic), float(res.pvalue)


# --------------------------------------------------------------------------------------------------------------------
# Row-wise coefficients (NaN marks an absent value; X and Y must have NaN in the same places)


def rows_pearson(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Pearson r of each row of X with the same row of Y, ignoring NaN; NaN where undefined."""
    m = ~np.isnan(X)
    n = m.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.where(m, X, 0.0).sum(axis=1) / n
        my = np.where(m, Y, 0.0).sum(axis=1) / n
        xc = np.where(m, X - mx[:, None], 0.0)
        yc = np.where(m, Y - my[:, None], 0.0)
        r = (xc * yc).sum(axis=1) / np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    r = np.clip(r, -1.0, 1.0)
    r[_rows_undefined(X, Y)] = np.nan
    return r


def rows_spearman(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Spearman rho per row: Pearson of the mid-ranks within each row."""
    rx = st.rankdata(X, axis=1, nan_policy="omit")
    ry = st.rankdata(Y, axis=1, nan_policy="omit")
    r = rows_pearson(rx, ry)
    r[_rows_undefined(X, Y)] = np.nan
    return r


def rows_kendall(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Kendall tau-b per row via pairwise sign products.

    tau-b = sum_{i<j} sx_ij sy_ij / sqrt(sum |sx_ij| * sum |sy_ij|), with sx_ij = sign(x_i - x_j): the denominator
    counts the pairs not tied in x (n0 - n1) and not tied in y (n0 - n2). Absent values give sign 0.
    """
    k = X.shape[1]
    iu, ju = np.triu_indices(k, 1)
    out = np.empty(X.shape[0])
    step = max(1, _BLOCK_CELLS // max(1, len(iu)))
    for s in range(0, X.shape[0], step):
        xs, ys = X[s:s + step], Y[s:s + step]
        sx = np.nan_to_num(np.sign(xs[:, iu] - xs[:, ju]))
        sy = np.nan_to_num(np.sign(ys[:, iu] - ys[:, ju]))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[s:s + step] = (sx * sy).sum(axis=1) / np.sqrt(np.abs(sx).sum(axis=1) * np.abs(sy).sum(axis=1))
    out = np.clip(out, -1.0, 1.0)
    out[_rows_undefined(X, Y)] = np.nan
    return out


_ROWS = {"pearson": rows_pearson, "spearman": rows_spearman, "kendall": rows_kendall}


def rows_correlation(X: np.ndarray, Y: np.ndarray, coefficient: str) -> np.ndarray:
    return _ROWS[coefficient](X, Y)


def _rows_undefined(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    n = (~np.isnan(X)).sum(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
        cx = np.nanmax(X, axis=1) == np.nanmin(X, axis=1)
        cy = np.nanmax(Y, axis=1) == np.nanmin(Y, axis=1)
    return (n < 2) | cx | cy


# --------------------------------------------------------------------------------------------------------------------
# Summary level


def document_matrix(p: PreparedFrame) -> tuple[np.ndarray, np.ndarray]:
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


def per_document(p: PreparedFrame, coefficient: str) -> np.ndarray:
    """The correlation over each document's items (NaN where undefined), vectorised across documents."""
    X, Y = document_matrix(p)
    return rows_correlation(X, Y, coefficient)


def _summary_values(p: PreparedFrame, coefficient: str, skip_constant: bool) -> tuple[np.ndarray, np.ndarray]:
    r = per_document(p, coefficient)
    undefined = np.isnan(r)
    if skip_constant:
        return np.where(undefined, 0.0, r), ~undefined
    # A constant document counts as correlation 0 (see module docstring).
    return np.where(undefined, 0.0, r), np.ones(len(r), dtype=bool)


def _boot_summary(p: PreparedFrame, coefficient: str, C: np.ndarray, skip_constant: bool) -> np.ndarray:
    vals, used = _summary_values(p, coefficient, skip_constant)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (C @ (vals * used)) / (C @ used.astype(float))


# --------------------------------------------------------------------------------------------------------------------
# System level


def _system_sums(p: PreparedFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(docs x systems) sums of judge, human and item counts."""
    cell = p.doc * p.n_systems + p.system
    size = p.n_docs * p.n_systems
    shape = (p.n_docs, p.n_systems)
    sx = np.bincount(cell, weights=p.x, minlength=size).reshape(shape)
    sy = np.bincount(cell, weights=p.y, minlength=size).reshape(shape)
    n = np.bincount(cell, minlength=size).reshape(shape).astype(float)
    return sx, sy, n


def system_means(p: PreparedFrame) -> tuple[np.ndarray, np.ndarray]:
    sx, sy, n = _system_sums(p)
    tot = n.sum(axis=0)
    return sx.sum(axis=0) / tot, sy.sum(axis=0) / tot


def snap_ties(M: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """Make values of each row that agree to ``rtol`` (relative to the row's largest magnitude) exactly equal.

    System means are sums divided by counts; two systems whose means are mathematically equal (say 11/3 and 11/3
    reached through different sums of thirds) can differ in the last bit depending on summation order, and a rank
    coefficient would then break a tie that is really there. Snapping makes the tie explicit. NaN stays NaN.
    """
    M = np.atleast_2d(np.asarray(M, dtype=float))
    order = np.argsort(M, axis=1, kind="stable")  # NaN sorts last
    S = np.take_along_axis(M, order, axis=1)
    scale = np.nanmax(np.abs(np.where(np.isnan(S), 0.0, S)), axis=1, keepdims=True)
    tol = rtol * np.maximum(scale, 1.0)
    new_group = np.ones_like(S, dtype=bool)
    new_group[:, 1:] = ~(np.abs(np.diff(S, axis=1)) <= tol)
    first = np.maximum.accumulate(np.where(new_group, np.arange(S.shape[1]), 0), axis=1)
    out = np.empty_like(M)
    np.put_along_axis(out, order, np.take_along_axis(S, first, axis=1), axis=1)
    return out


def _system_tables(sums) -> tuple[np.ndarray, np.ndarray, int]:
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


def _boot_system(p: PreparedFrame, coefficient: str, C: np.ndarray, sums=None, tables=None) -> np.ndarray:
    # One product of the counts with the distinct columns of the three tables (the counts are read once).
    distinct, where, k = tables if tables is not None else _system_tables(_system_sums(p) if sums is None else sums)
    cx, cy, cn = np.split((C @ distinct)[:, where], [k, 2 * k], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.where(cn > 0, cx / cn, np.nan)  # a system absent from a resample is left out of that resample
        my = np.where(cn > 0, cy / cn, np.nan)
    if coefficient != "pearson":
        mx, my = snap_ties(mx), snap_ties(my)
    return rows_correlation(mx, my, coefficient)


# --------------------------------------------------------------------------------------------------------------------
# Dataset level


def _levels(v: np.ndarray) -> tuple[np.ndarray, int]:
    codes, uniq = pd.factorize(v, sort=True)
    return codes.astype(np.int64), len(uniq)


def _doc_ranges(p: PreparedFrame) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per document, (lowest, highest) judge value and the same for human values."""
    out = []
    for v in (p.x, p.y):
        lo = np.full(p.n_docs, np.inf)
        hi = np.full(p.n_docs, -np.inf)
        np.minimum.at(lo, p.doc, v)
        np.maximum.at(hi, p.doc, v)
        out.append((lo, hi))
    return out


def _constant_resamples(p: PreparedFrame, C: np.ndarray, ranges=None) -> np.ndarray:
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


def _boot_dataset_pearson(p: PreparedFrame, C: np.ndarray) -> np.ndarray:
    xc = p.x - p.x.mean()  # centring first keeps the one-pass sums accurate
    yc = p.y - p.y.mean()
    cols = [np.ones_like(xc), xc, yc, xc * xc, yc * yc, xc * yc]
    per_doc = np.stack([np.bincount(p.doc, weights=c, minlength=p.n_docs) for c in cols], axis=1)
    n, sx, sy, sxx, syy, sxy = (C @ per_doc).T
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (sxy - sx * sy / n) / np.sqrt((sxx - sx * sx / n) * (syy - sy * sy / n))
    return np.clip(r, -1.0, 1.0)


def _weighted_midranks(v: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Mid-rank of every item within each resampled multiset (item i present W[b, i] times), ties included.

    From one fixed sort order: the cumulative weight at the end of each tie group gives how many elements of the
    multiset are <= that value; mid-rank = (# strictly smaller) + (group weight + 1) / 2.
    """
    codes, k = _levels(v)
    order = np.argsort(codes, kind="stable")
    ends = np.searchsorted(codes[order], np.arange(k), side="right") - 1
    cum = np.cumsum(W[:, order], axis=1)[:, ends]  # (b x levels): weight of values <= level
    group = np.diff(cum, axis=1, prepend=0.0)
    rank_of_level = cum - group + (group + 1.0) / 2.0
    return rank_of_level[:, codes]


def _boot_dataset_spearman_items(p: PreparedFrame, C: np.ndarray) -> np.ndarray:
    """Spearman per resample from item-level weights (any number of distinct values)."""
    out = np.empty(C.shape[0])
    step = max(1, _BLOCK_CELLS // max(1, len(p.x)))
    for s in range(0, C.shape[0], step):
        W = C[s:s + step][:, p.doc]
        n = W.sum(axis=1)
        mid = (n + 1.0) / 2.0  # mean of the ranks 1..n
        rx = _weighted_midranks(p.x, W) - mid[:, None]
        ry = _weighted_midranks(p.y, W) - mid[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[s:s + step] = (W * rx * ry).sum(axis=1) / np.sqrt((W * rx * rx).sum(axis=1) * (W * ry * ry).sum(axis=1))
    return np.clip(out, -1.0, 1.0)


def spearman_from_tables(T: np.ndarray) -> np.ndarray:
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
    return np.clip(r, -1.0, 1.0)


def kendall_from_tables(T: np.ndarray) -> np.ndarray:
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
    return np.clip(tau, -1.0, 1.0)


def _table_fits(p: PreparedFrame) -> bool:
    """Whether the contingency-table path is the cheaper one.

    It costs about resamples x cells; explicit resampling costs about resamples x items log items. Measured on
    2 cores (1,600 items), the two meet near 10 cells per item.
    """
    k = len(np.unique(p.x))
    l_ = len(np.unique(p.y))
    return k * l_ <= min(MAX_KENDALL_TABLE_CELLS, max(2_000, 10 * len(p.x)))


def _boot_dataset_tables(p: PreparedFrame, C: np.ndarray, from_tables) -> np.ndarray:
    kx, K = _levels(p.x)
    ky, L = _levels(p.y)
    # Per-document tables are sparse (a document holds a handful of items), so counts @ tables costs resamples x items.
    cells = sp.csr_matrix((np.ones(len(p.x)), (p.doc, kx * L + ky)), shape=(p.n_docs, K * L)).T.tocsr()
    out = np.empty(C.shape[0])
    step = max(1, _BLOCK_CELLS // (K * L))
    for s in range(0, C.shape[0], step):
        Cs = C[s:s + step]
        T = np.ascontiguousarray((cells @ Cs.T).T).reshape(len(Cs), K, L)
        out[s:s + step] = from_tables(T)
    return out


def _boot_dataset_explicit(p: PreparedFrame, C: np.ndarray, coefficient: str) -> np.ndarray:
    """The exact slow path: build each resample explicitly and ask scipy. Used for Kendall when both sides have so
    many distinct values that the contingency table would cost more than resampling itself (see _table_fits)."""
    out = np.empty(C.shape[0])
    for b in range(C.shape[0]):
        w = C[b][p.doc].astype(np.int64)
        out[b] = scipy_correlation(np.repeat(p.x, w), np.repeat(p.y, w), coefficient)[0]
    return out


def _items_in_blocks(C: np.ndarray, doc: np.ndarray, of_weights) -> np.ndarray:
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


def _dataset_spearman_replicates(p: PreparedFrame):
    """Spearman per replicate as the weighted Pearson of weighted mid-ranks (fastboot.WeightedSpearman), the side
    with more distinct values sorted once."""
    ws = (fastboot.WeightedSpearman(p.x, p.y) if fastboot.n_distinct(p.x) >= fastboot.n_distinct(p.y)
          else fastboot.WeightedSpearman(p.y, p.x))
    doc = p.doc[ws.order]
    return lambda C: _items_in_blocks(C, doc, ws.rho)


def _dataset_kendall_replicates(p: PreparedFrame):
    """Kendall tau-b per replicate: level by level over the side with fewer distinct values (fastboot.WeightedKendall);
    the exact slow path (scipy per resample) when both sides have many."""
    nx, ny = fastboot.n_distinct(p.x), fastboot.n_distinct(p.y)
    if min(nx, ny) > fastboot.KENDALL_MAX_LEVELS:
        return lambda C: _boot_dataset_explicit(p, C, "kendall")
    kd = fastboot.WeightedKendall(p.x, p.y) if ny <= nx else fastboot.WeightedKendall(p.y, p.x)
    doc = p.doc[kd.order]
    return lambda C: _items_in_blocks(C, doc, kd.tau_b)


def _dataset_replicates(p: PreparedFrame, coefficient: str):
    """A function counts (rows x docs) -> the dataset-level statistic per row, everything that does not depend on
    the weights (sorts, levels, per-document sums) prepared once."""
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

    def replicates(C: np.ndarray) -> np.ndarray:
        out = of_counts(C)
        out[_constant_resamples(p, C, ranges)] = np.nan
        return out

    return replicates


def _boot_dataset(p: PreparedFrame, coefficient: str, C: np.ndarray) -> np.ndarray:
    return _dataset_replicates(p, coefficient)(C)


def replicate_function(p: PreparedFrame, *, level: str, coefficient: str, skip_constant: bool = True):
    """A function counts (rows x docs: how often each document is in the multiset) -> the statistic per row (NaN
    where undefined), with the per-frame work done once, so bootstrap and jackknife blocks share it."""
    if level == "dataset":
        return _dataset_replicates(p, coefficient)
    if level == "summary":
        vals, used = _summary_values(p, coefficient, skip_constant)
        num_den = np.stack([vals * used, used.astype(float)], axis=1)  # one product reads the counts once

        def summary(C: np.ndarray) -> np.ndarray:
            num, den = (C @ num_den).T
            with np.errstate(invalid="ignore", divide="ignore"):
                return num / den

        return summary
    tables = _system_tables(_system_sums(p))
    return lambda C: _boot_system(p, coefficient, C, tables=tables)


def distribution_from_counts(p: PreparedFrame, *, level: str, coefficient: str, counts: np.ndarray,
                             skip_constant: bool = True) -> np.ndarray:
    """The statistic on every row of ``counts`` (rows x docs: how often each document is in the multiset; any
    non-negative integers, not necessarily summing to n_docs); NaN where undefined. Bootstrap resamples and jackknife
    (leave-one-out) replicates both go through here."""
    C = np.asarray(counts, dtype=float)
    return replicate_function(p, level=level, coefficient=coefficient, skip_constant=skip_constant)(C)


def bootstrap_distribution(p: PreparedFrame, *, level: str, coefficient: str, indices: np.ndarray,
                           skip_constant: bool = True) -> np.ndarray:
    """The statistic on every document resample in ``indices`` (resamples x docs); NaN where undefined."""
    return distribution_from_counts(p, level=level, coefficient=coefficient,
                                    counts=resample_counts(indices, p.n_docs), skip_constant=skip_constant)


def _over_blocks(of_counts, blocks) -> np.ndarray:
    parts = []
    for C in blocks:
        fastboot.checkpoint()
        parts.append(np.asarray(of_counts(C), dtype=float))
        fastboot.advance(len(C))
    return np.concatenate(parts) if parts else np.empty(0)


def jackknife_distribution(p: PreparedFrame, *, level: str, coefficient: str, skip_constant: bool = True
                           ) -> np.ndarray:
    """The jackknife replicates behind BCa's acceleration (NaN where undefined): each document left out in turn
    (n_docs values), or beyond fastboot.JACKKNIFE_MAX_UNITS documents each of fastboot.JACKKNIFE_GROUPS groups of
    documents left out in turn (see fastboot.jackknife_count_blocks)."""
    of_counts = replicate_function(p, level=level, coefficient=coefficient, skip_constant=skip_constant)
    return _over_blocks(of_counts, fastboot.jackknife_count_blocks(p.n_docs))


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


def level_values(p: PreparedFrame, *, level: str, coefficient: str) -> tuple[np.ndarray, np.ndarray]:
    """The (judge, human) pairs a dataset- or system-level correlation is computed on (system level: the system
    means, ties snapped for the rank coefficients as in point_estimate)."""
    if level == "dataset":
        return p.x, p.y
    mx, my = system_means(p)
    if coefficient != "pearson":
        mx, my = snap_ties(mx)[0], snap_ties(my)[0]
    return mx, my


def percentile_interval(values: np.ndarray, confidence_level: float) -> tuple[float, float, int]:
    """(low, high, undefined count): the percentile bootstrap interval over the defined resamples."""
    ok = values[~np.isnan(values)]
    undefined = int(len(values) - len(ok))
    if len(ok) == 0:
        return float("nan"), float("nan"), undefined
    alpha = 1.0 - confidence_level
    lo, hi = np.quantile(ok, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi), undefined


def bca_levels(values: np.ndarray, estimate: float, jackknife: np.ndarray, confidence_level: float
               ) -> tuple[float, float] | None:
    """BCa's adjusted quantile levels (alpha1, alpha2) of the bootstrap distribution (Efron 1987; Efron & Tibshirani
    1993, eq. 14.10, 14.14 and 14.15), or None where BCa is undefined.

    - bias correction z0 = Phi^-1(share of bootstrap values below the estimate), counting a value tied with the
      estimate as half (scipy.stats.bootstrap's rule; ties are common for rank coefficients on a few systems). Ties
      are within _TIE_RTOL, since the vectorised paths and scipy may round one value differently.
    - acceleration a = sum(d^3) / (6 (sum d^2)^1.5), d = mean(jackknife) - jackknife value, over the jackknife
      replicates that are defined (NaN replicates, e.g. leaving out a document makes a side constant, are left out).
    - alpha1 = Phi(z0 + (z0 + z) / (1 - a (z0 + z))) with z = Phi^-1((1 - confidence_level) / 2), alpha2 the same
      with -z.

    None (the caller falls back to the percentile interval) when: no defined bootstrap value, the estimate is NaN,
    the estimate lies outside the bootstrap distribution (z0 infinite), the jackknife values are all equal or fewer
    than 2 are defined (a = 0/0), or the adjustment is not monotone (1 - a (z0 +- z) <= 0).
    """
    ok = values[~np.isnan(values)]
    jk = np.asarray(jackknife, dtype=float)
    jk = jk[~np.isnan(jk)]
    if len(ok) == 0 or np.isnan(estimate) or len(jk) < 2:
        return None
    tol = _TIE_RTOL * max(1.0, abs(estimate))
    below = np.count_nonzero(ok < estimate - tol)
    ties = np.count_nonzero(np.abs(ok - estimate) <= tol)
    share = (below + ties / 2) / len(ok)
    if not 0 < share < 1:
        return None
    z0 = special.ndtri(share)
    d = jk.mean() - jk
    if np.ptp(jk) <= _TIE_RTOL * max(1.0, abs(jk.mean())):
        return None  # a = 0/0
    a = (d ** 3).sum() / (6.0 * (d ** 2).sum() ** 1.5)
    z = special.ndtri((1.0 - confidence_level) / 2)
    levels = []
    for zz in (z, -z):
        denom = 1.0 - a * (z0 + zz)
        if not denom > 0:
            return None
        levels.append(float(special.ndtr(z0 + (z0 + zz) / denom)))
    if not all(np.isfinite(levels)):
        return None
    return levels[0], levels[1]


def bootstrap_interval(values: np.ndarray, *, confidence_level: float, method: str = "bca", estimate: float = np.nan,
                       jackknife: np.ndarray | None = None) -> tuple[float, float, int, str]:
    """(low, high, undefined count, method used) for a bootstrap distribution (NaN = undefined resample, left out).

    ``method="bca"`` needs the point estimate and the jackknife values; where BCa is undefined (bca_levels) it falls
    back to the percentile interval and reports "percentile".
    """
    lo, hi, undefined = percentile_interval(values, confidence_level)
    if method == "percentile" or jackknife is None:
        return lo, hi, undefined, "percentile"
    levels = bca_levels(values, estimate, jackknife, confidence_level)
    if levels is None:
        return lo, hi, undefined, "percentile"
    lo, hi = np.quantile(values[~np.isnan(values)], levels)
    return float(lo), float(hi), undefined, "bca"


def _correlate_prepared(p: PreparedFrame, *, level: str, coefficient: str, n_resamples: int,
                        confidence_level: float, skip_constant: bool, random_state,
                        ci_method: str = "bca", ci_resampling: str = "documents",
                        drawn: list[np.ndarray] | None = None) -> CorrelationResult:
    from evalcore.meta import inference

    stat, pv, n, skipped = point_estimate(p, level=level, coefficient=coefficient, skip_constant=skip_constant)
    pv_method = ""
    if pv is not None:
        pv, pv_method = inference.correlation_pvalue(*level_values(p, level=level, coefficient=coefficient),
                                                     coefficient, random_state=random_state)
    lo = hi = float("nan")
    undefined = 0
    used_method = ci_method
    both = ci_resampling == "both" and level == "system"
    if both and n_resamples > 0 and p.n_docs > 0:
        lo, hi, undefined = inference.boot_both_interval(p, coefficient, n_resamples=n_resamples,
                                                         confidence_level=confidence_level,
                                                         random_state=random_state)
        used_method = "percentile"
    elif n_resamples > 0 and p.n_docs > 0:
        # The same resamples as bootstrap_indices(n_docs, n_resamples, random_state), drawn in blocks.
        of_counts = replicate_function(p, level=level, coefficient=coefficient, skip_constant=skip_constant)
        blocks = ((B.astype(float) for B in drawn) if drawn is not None
                  else fastboot.count_blocks(p.n_docs, n_resamples, random_state))
        with fastboot.expecting(replicate_rows(p.n_docs, n_resamples, ci_method)):
            dist = _over_blocks(of_counts, blocks)
            jack = (_over_blocks(of_counts, fastboot.jackknife_count_blocks(p.n_docs)) if ci_method == "bca"
                    else None)
        lo, hi, undefined, used_method = bootstrap_interval(dist, confidence_level=confidence_level, method=ci_method,
                                                            estimate=stat, jackknife=jack)
        if used_method == "bca" and fastboot.jackknife_label(p.n_docs):
            used_method = f"bca ({fastboot.jackknife_label(p.n_docs)})"
    return CorrelationResult(
        statistic=float(stat), ci_low=lo, ci_high=hi, n=int(n), skipped=int(skipped), dropped=p.dropped,
        level=level, coefficient=coefficient, pvalue=None if pv is None else float(pv), n_resamples=int(n_resamples),
        confidence_level=float(confidence_level), skip_constant=bool(skip_constant), undefined_resamples=undefined,
        ci_method=used_method, ci_note=_ci_note(float(stat), lo, hi), pvalue_method=pv_method,
        ci_resampling="both" if both else "documents",
    )


def replicate_rows(n_docs: int, n_resamples: int, ci_method: str = "bca") -> int:
    """The replicates one interval computes: the resamples, and the jackknife's for BCa (progress reports count
    these)."""
    return int(n_resamples) + (fastboot.jackknife_rows(n_docs) if ci_method == "bca" else 0)


# Rounding slack for "inside the interval": a Spearman of 8 system means computed as 0.7999999999999999 and an
# interval end at 0.8 are the same number (a rank correlation takes few distinct values, and the bootstrap hits
# the estimate exactly); only a real miss deserves the warning.
CI_NOTE_TOLERANCE = 1e-9


def _ci_note(stat: float, lo: float, hi: float) -> str:
    if np.isnan(stat) or np.isnan(lo) or np.isnan(hi):
        return ""
    if lo - CI_NOTE_TOLERANCE <= stat <= hi + CI_NOTE_TOLERANCE:
        return ""
    return ("estimate outside its bootstrap interval: resampling documents biases this statistic; "
            "read the interval with care")


def _check_args(level: str, coefficient: str, n_resamples: int, confidence_level: float,
                ci_method: str = "bca", ci_resampling: str = "documents") -> None:
    _check_choice(ci_resampling, CI_RESAMPLING, "ci_resampling")
    _check_choice(level, LEVELS, "level")
    _check_choice(coefficient, COEFFICIENTS, "coefficient")
    _check_choice(ci_method, CI_METHODS, "ci_method")
    if n_resamples < 0:
        raise ValueError(f"n_resamples must be >= 0, got {n_resamples}")
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be between 0 and 1, got {confidence_level}")


def correlate(frame: pd.DataFrame, *, level: str = "dataset", coefficient: str = "spearman", n_resamples: int = 1000,
              confidence_level: float = 0.95, skip_constant: bool = True, random_state=0,
              ci_method: str = "bca", ci_resampling: str = "documents") -> CorrelationResult:
    """Correlation of ``judge`` with ``human`` at one level, with a document-bootstrap CI (BCa by default).

    ``ci_resampling="both"`` gives the system level the boot-both interval instead (systems and documents resampled
    together, evalcore.meta.inference); other levels always resample documents. p-values at small n are permutation
    p-values (``pvalue_method`` says which).

    ``n_resamples=0`` skips the interval (ci_low/ci_high NaN). ``ci_method``: "bca" (default) or "percentile"; the
    result's ``ci_method`` says which was used (BCa falls back to percentile where it is undefined). See the module
    docstring for the levels, the ``skip_constant`` convention and how the interval is computed.
    """
    _check_args(level, coefficient, n_resamples, confidence_level, ci_method, ci_resampling)
    p = prepare_frame(frame)
    return _correlate_prepared(p, level=level, coefficient=coefficient, n_resamples=n_resamples,
                               confidence_level=confidence_level, skip_constant=skip_constant,
                               random_state=random_state, ci_method=ci_method, ci_resampling=ci_resampling)


def correlation_table(frame: pd.DataFrame, *, levels=LEVELS, coefficients=COEFFICIENTS, n_resamples: int = 1000,
                      skip_constant: bool = True, random_state=0, confidence_level: float = 0.95,
                      ci_method: str = "bca", ci_resampling: str = "documents") -> pd.DataFrame:
    """One row per level x coefficient; columns are the CorrelationResult fields.

    Every cell uses the same document resamples (same random_state), so cells are comparable resample by resample.
    ``ci_method`` as in correlate.
    """
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
    rows = [
        asdict(_correlate_prepared(p, level=lv, coefficient=co, n_resamples=n_resamples,
                                   confidence_level=confidence_level, skip_constant=skip_constant,
                                   random_state=random_state, ci_method=ci_method, ci_resampling=ci_resampling,
                                   drawn=drawn))
        for lv in levels for co in coefficients
    ]
    return pd.DataFrame(rows, columns=[f.name for f in fields(CorrelationResult)])
