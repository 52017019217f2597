"""The correlation coefficients themselves: scipy's point estimates and p-values, and the same coefficients
row-wise over many resamples at once (NaN marks an absent value; X and Y must have NaN in the same places).

Kendall is tau-b (scipy's default, as 003 footnote 2 and 002 App. C). The row-wise versions are held to scipy in
tests/test_meta_correlation.py. ``snap_ties`` makes equal system means exactly equal before a rank coefficient.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.stats as st

from evalcore.meta.arrays import FloatArray
from evalcore.meta.resampling import BLOCK_CELLS

COEFFICIENTS = ("pearson", "spearman", "kendall")  # kendall = tau-b


def _is_constant(v: FloatArray) -> bool:
    return len(v) == 0 or bool(np.all(v == v[0]))


def scipy_correlation(x: FloatArray, y: FloatArray, coefficient: str) -> tuple[float, float]:
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


def rows_pearson(X: FloatArray, Y: FloatArray) -> FloatArray:
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
    result: FloatArray = r
    return result


def rows_spearman(X: FloatArray, Y: FloatArray) -> FloatArray:
    """Spearman rho per row: Pearson of the mid-ranks within each row."""
    rx = st.rankdata(X, axis=1, nan_policy="omit")
    ry = st.rankdata(Y, axis=1, nan_policy="omit")
    r = rows_pearson(rx, ry)
    r[_rows_undefined(X, Y)] = np.nan
    return r


def rows_kendall(X: FloatArray, Y: FloatArray) -> FloatArray:
    """Kendall tau-b per row via pairwise sign products.

    tau-b = sum_{i<j} sx_ij sy_ij / sqrt(sum |sx_ij| * sum |sy_ij|), with sx_ij = sign(x_i - x_j): the denominator
    counts the pairs not tied in x (n0 - n1) and not tied in y (n0 - n2). Absent values give sign 0.
    """
    k = X.shape[1]
    iu, ju = np.triu_indices(k, 1)
    out = np.empty(X.shape[0])
    step = max(1, BLOCK_CELLS // max(1, len(iu)))
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


def rows_correlation(X: FloatArray, Y: FloatArray, coefficient: str) -> FloatArray:
    return _ROWS[coefficient](X, Y)


def _rows_undefined(X: FloatArray, Y: FloatArray) -> FloatArray:
    n = (~np.isnan(X)).sum(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
        cx = np.nanmax(X, axis=1) == np.nanmin(X, axis=1)
        cy = np.nanmax(Y, axis=1) == np.nanmin(Y, axis=1)
    result: FloatArray = (n < 2) | cx | cy
    return result



def snap_ties(M: FloatArray, rtol: float = 1e-9) -> FloatArray:
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
