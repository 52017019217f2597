"""Bootstrap confidence intervals from a distribution of resampled statistics: the percentile interval and BCa
(bias-corrected and accelerated; Efron 1987, "Better bootstrap confidence intervals", JASA 82), shared by every
statistic of evalcore.meta that resamples (correlations, paired differences, kappa, alpha, the human ceiling).
NaN marks an undefined resample: it is left out of the interval and counted.
"""

from __future__ import annotations

import numpy as np
import scipy.special as special

from evalcore.meta.arrays import FloatArray

CI_METHODS = ("bca", "percentile")

# Bootstrap values within this distance (relative to max(1, |estimate|)) of the estimate count as ties with it in
# BCa's bias correction: the vectorised paths and scipy can round the same correlation differently in the last bits.
TIE_RTOL = 1e-12


def percentile_interval(values: FloatArray, confidence_level: float) -> tuple[float, float, int]:
    """(low, high, undefined count): the percentile bootstrap interval over the defined resamples."""
    ok = values[~np.isnan(values)]
    undefined = int(len(values) - len(ok))
    if len(ok) == 0:
        return float("nan"), float("nan"), undefined
    alpha = 1.0 - confidence_level
    lo, hi = np.quantile(ok, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi), undefined


def percentile_ends(values: FloatArray, low: float = 2.5, high: float = 97.5) -> tuple[float, float]:
    """The ``low``-th and ``high``-th percentiles (in percent, numpy's linear interpolation) of the finite values: a
    percentile bootstrap interval's ends; (NaN, NaN) when no value is finite. ``tail_percent`` gives ``low`` for a
    confidence level (``high`` = 100 - low)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(v, [low, high])
    return float(lo), float(hi)


def tail_percent(confidence_level: float) -> float:
    """The percent of resamples left out below a two-sided interval of ``confidence_level`` (2.5 for 0.95, to the
    last bit as this expression rounds it)."""
    return (1 - confidence_level) / 2 * 100


def percentile_ci(values: FloatArray, confidence_level: float) -> tuple[float, float]:
    """The two-sided percentile bootstrap interval of ``confidence_level`` over the finite values (``percentile_ends``
    at ``tail_percent`` and 100 minus it); (NaN, NaN) when none is finite."""
    a = tail_percent(confidence_level)
    return percentile_ends(values, a, 100 - a)


def bca_levels(values: FloatArray, estimate: float, jackknife: FloatArray, confidence_level: float
               ) -> tuple[float, float] | None:
    """BCa's adjusted quantile levels (alpha1, alpha2) of the bootstrap distribution (Efron 1987; Efron & Tibshirani
    1993, eq. 14.10, 14.14 and 14.15), or None where BCa is undefined.

    - bias correction z0 = Phi^-1(share of bootstrap values below the estimate), counting a value tied with the
      estimate as half (scipy.stats.bootstrap's rule; ties are common for rank coefficients on a few systems). Ties
      are within TIE_RTOL, since the vectorised paths and scipy may round one value differently.
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
    tol = TIE_RTOL * max(1.0, abs(estimate))
    below = np.count_nonzero(ok < estimate - tol)
    ties = np.count_nonzero(np.abs(ok - estimate) <= tol)
    share = (below + ties / 2) / len(ok)
    if not 0 < share < 1:
        return None
    z0 = special.ndtri(share)
    d = jk.mean() - jk
    if np.ptp(jk) <= TIE_RTOL * max(1.0, abs(jk.mean())):
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


def bootstrap_interval(values: FloatArray, *, confidence_level: float, method: str = "bca", estimate: float = np.nan,
                       jackknife: FloatArray | None = None) -> tuple[float, float, int, str]:
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

