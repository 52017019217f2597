"""Labelling planned by the judge's verdict: for a binary human label, sample the items to be labelled stratified by
what the judge said, with Neyman allocation, and estimate the share of positives with inverse-probability
(Horvitz-Thompson) weights (Cochran 1977, ch. 5.5; the idea of spending labels where the judge is least informative
is that of active statistical inference, Zrnic & Candes 2024).

With strata j (judge says negative / positive) of sizes N_j, weights W_j = N_j / N and within-stratum standard
deviations s_j = sqrt(p_j (1 - p_j)) (p_j the share of human positives among the items the judge put in stratum j,
estimated from labelled items), Neyman allocation n_j = n W_j s_j / sum_k W_k s_k gives the estimate of the
positive share the variance (sum_j W_j s_j)^2 / n (finite-population correction left out), against p (1 - p) / n for
simple random sampling. The saving is their ratio: simple random sampling needs that many times the labels for the
same variance. It is 1 when the judge's verdict says nothing of the label (p_j alike) and grows as the strata purify.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from evalcore.meta.results import Estimate, missing


@dataclass(frozen=True)
class StratifiedPlan:
    strata: tuple[str, ...]
    sizes: tuple[int, ...]  # N_j
    positive_share: tuple[float, ...]  # p_j
    allocation: tuple[int, ...]  # n_j, Neyman, rounded (at least 1 where the stratum has items)
    inclusion: tuple[float, ...]  # n_j / N_j, the inverse-probability weights' denominators
    variance_stratified: float
    variance_random: float
    saving: float  # variance_random / variance_stratified: times the labels simple random sampling needs


def plan(strata_of_items: npt.ArrayLike, positive_share: Mapping[str, float], n_labels: int) -> StratifiedPlan:
    """Neyman allocation of ``n_labels`` over the strata of ``strata_of_items`` (one stratum name per item: the
    judge's verdict), ``positive_share`` p_j per stratum (from labelled items)."""
    names, sizes = np.unique(np.asarray(strata_of_items, dtype=object).astype(str), return_counts=True)
    if n_labels < len(names):
        raise ValueError(f"{n_labels} labels cannot cover {len(names)} strata (one label at least in each)")
    p = np.array([float(positive_share[n]) for n in names])
    w = sizes / sizes.sum()
    s = np.sqrt(p * (1 - p))
    share = w * s / (w * s).sum() if (w * s).sum() > 0 else w
    alloc = np.minimum(np.maximum(np.round(n_labels * share).astype(int), 1), sizes)
    pbar = float((w * p).sum())
    var_st = float((w * s).sum() ** 2 / n_labels)
    var_rs = pbar * (1 - pbar) / n_labels
    saving = var_rs / var_st if var_st > 0 else math.inf
    return StratifiedPlan(tuple(names.tolist()), tuple(int(x) for x in sizes), tuple(p.tolist()),
                          tuple(int(x) for x in alloc), tuple((alloc / sizes).tolist()), var_st, var_rs, saving)


def ipw_share(labels: npt.ArrayLike, strata: npt.ArrayLike, sizes: Mapping[str, int],
              confidence_level: float = 0.95) -> Estimate:
    """The positive share from labels sampled within strata: sum_j W_j * (mean label in j), the Horvitz-Thompson
    estimate with inclusion n_j / N_j, and its normal interval from the stratified variance sum_j W_j^2 s_j^2 / n_j
    (s_j^2 the sample variance, ddof 1). ``sizes``: N_j of every stratum."""
    y = np.asarray(labels, dtype=float)
    g = np.asarray(strata, dtype=object).astype(str)
    total = sum(sizes.values())
    est, var = 0.0, 0.0
    for name, n_big in sizes.items():
        yj = y[g == name]
        if len(yj) == 0:
            return missing(len(y), f"no labelled item in stratum {name!r}: its share cannot be estimated")
        w = n_big / total
        est += w * yj.mean()
        var += w ** 2 * (yj.var(ddof=1) if len(yj) > 1 else 0.25) / len(yj)  # one label: the largest variance
    z = float(sps.norm.ppf(0.5 + confidence_level / 2))
    half = z * math.sqrt(var)
    return Estimate(est, max(0.0, est - half), min(1.0, est + half), n=int(len(y)), method="stratified normal",
                    confidence_level=confidence_level)
