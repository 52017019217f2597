"""The human ceiling's interval: the mean over annotators of "one annotator against the mean of the others", with a
document bootstrap that draws the same documents for every annotator (so the interval is of the mean, not a band
between annotators), and the ceiling computed on exactly the items a run is correlated on.

Why on the run's items: a judge scored on 20 items, or on three systems, is compared with humans on those items; a
ceiling over every rated item answers another question (issue 18.1: M8-M10 relevance 0.729 drawn against a ceiling
of 0.439 from all 12 systems).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.meta.arrays import FloatArray, Seed
from evalcore.meta.correlation import distribution_from_counts
from evalcore.meta.intervals import bootstrap_interval
from evalcore.meta.resampling import bootstrap_indices, jackknife_counts, resample_counts
from evalcore.meta.scoreframe import PreparedFrame, prepare_frame


def _mean_over_annotators(ps: list[PreparedFrame], union: pd.Index, C: FloatArray, *, level: str, coefficient: str,
                          skip_constant: bool) -> FloatArray:
    parts = []
    for p in ps:
        pos = union.get_indexer(p.doc_ids)
        parts.append(distribution_from_counts(p, level=level, coefficient=coefficient, counts=C[:, pos],
                                              skip_constant=skip_constant))
    # NaN where any annotator's value is undefined: that resample is left out
    result: FloatArray = np.mean(parts, axis=0)
    return result


def mean_ceiling_interval(frames: list[pd.DataFrame], estimate: float, *, level: str, coefficient: str,
                          n_resamples: int, confidence_level: float = 0.95, random_state: Seed = 0,
                          skip_constant: bool = True,
                          ci_method: str = "bca") -> tuple[float, float, str]:
    """(low, high, interval used) of the mean of the annotators' correlations: each resample draws documents once
    (from the union of the annotators' documents) and recomputes every annotator's statistic on them."""
    ps = [prepare_frame(f, name="ceiling frame") for f in frames]
    union = pd.Index(sorted(set().union(*(p.doc_ids.tolist() for p in ps))))
    if n_resamples <= 0 or len(union) < 2:  # one document: every resample is it, no interval (not a zero-width one)
        return float("nan"), float("nan"), ci_method
    C = resample_counts(bootstrap_indices(len(union), n_resamples, random_state), len(union))
    dist = _mean_over_annotators(ps, union, C, level=level, coefficient=coefficient, skip_constant=skip_constant)
    jack = None
    if ci_method == "bca":
        jack = _mean_over_annotators(ps, union, jackknife_counts(len(union)), level=level, coefficient=coefficient,
                                     skip_constant=skip_constant)
    lo, hi, _, used = bootstrap_interval(dist, confidence_level=confidence_level, method=ci_method,
                                         estimate=estimate, jackknife=jack)
    return lo, hi, used
