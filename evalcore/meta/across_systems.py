"""An interval for a correlation computed across systems: 003's validation of the RTS-MCQ reliability indicator
(Shen et al. 2023, Table 7) correlates, over the systems, each system's reliability R_i (Eq. 4) with its per-system
correlation P_i (Eq. 2). Sixteen systems make a wide interval; the page drew the figure without one.

The systems are the sampling unit of that figure, so they are resampled (with replacement, R_i and P_i kept
together): a percentile bootstrap through ``scipy.stats.bootstrap`` (paired). The per-system values are held fixed,
so the interval leaves out their own noise from the documents: it is a lower bound on the uncertainty, as the
caption says.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from evalcore.meta.arrays import FloatArray
from evalcore.meta.coefficients import COEFFICIENTS
from evalcore.meta.intervals import percentile_ends
from evalcore.meta.results import Estimate, HoldsEstimate

MIN_SYSTEMS = 4  # fewer than this and most resamples repeat one system: no interval


@dataclass(frozen=True)
class AcrossSystems(HoldsEstimate):
    """The correlation across systems as an Estimate: ``n`` the systems with both values, its percentile interval
    over systems (NaN ends: none). The flat names are properties."""

    estimate: Estimate

    @property
    def statistic(self) -> float:
        return self.estimate.statistic

    @property
    def n_systems(self) -> int:
        return self.estimate.n


def _corr(x: FloatArray, y: FloatArray, coefficient: str) -> float:
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if coefficient == "pearson":
            return float(stats.pearsonr(x, y)[0])
        if coefficient == "spearman":
            return float(stats.spearmanr(x, y)[0])
        return float(stats.kendalltau(x, y)[0])  # tau-b, as everywhere in evalcore


def across_systems_interval(x: npt.ArrayLike, y: npt.ArrayLike, *, coefficient: str = "kendall",
                            n_resamples: int = 1000, confidence: float = 0.95,
                            random_state: int = 0) -> AcrossSystems:
    """``coefficient`` correlation of ``x`` and ``y`` (one value each per system; pairs with a NaN left out) with
    its percentile bootstrap interval over systems. NaN ends below ``MIN_SYSTEMS`` systems or when ``n_resamples``
    is 0."""
    if coefficient not in COEFFICIENTS:
        raise ValueError(f"coefficient must be one of {', '.join(COEFFICIENTS)}, not {coefficient!r}")
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(xa) & np.isfinite(ya)
    xs, ys = xa[ok], ya[ok]
    r = _corr(xs, ys, coefficient)
    if len(xs) < MIN_SYSTEMS or n_resamples <= 0 or not math.isfinite(r):
        return AcrossSystems(Estimate(r, n=len(xs)))
    res = stats.bootstrap((xs, ys), lambda a, b: _corr(a, b, coefficient), paired=True, vectorized=False,
                          n_resamples=n_resamples, confidence_level=confidence, method="percentile",
                          random_state=np.random.default_rng(random_state))  # scipy < 1.15 names it so
    # resamples that repeat one system's value on a side have no correlation: scipy's percentile ignores no NaN,
    # so the ends are taken over the defined resamples here, as numpy's nanpercentile does
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    dist = dist[np.isfinite(dist)]
    if len(dist) < n_resamples / 2:
        return AcrossSystems(Estimate(r, n=len(xs)))
    alpha = (1 - confidence) / 2
    lo, hi = percentile_ends(dist, 100 * alpha, 100 * (1 - alpha))
    return AcrossSystems(Estimate(r, lo, hi, n=len(xs), method="percentile", confidence_level=confidence,
                                  n_resamples=n_resamples, undefined_resamples=n_resamples - len(dist),
                                  resampling="systems"))
