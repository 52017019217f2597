"""Split conformal intervals: the quantile by hand, snapping, and coverage at least the level by simulation."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.meta import conformal as cf


def test_quantile_by_hand():
    # n = 9 residuals, level 0.8: ceil(10 * 0.8) = 8th smallest
    assert cf.conformal_quantile([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], 0.8) == 0.8
    assert math.isinf(cf.conformal_quantile([0.1, 0.2], 0.9))  # ceil(3 * 0.9) = 3 > 2


def test_snap_outward_and_clip():
    lo, hi = cf.snap([2.3, 0.2], [3.1, 4.6], (1, 5))
    assert lo.tolist() == [2.0, 1.0] and hi.tolist() == [4.0, 5.0]


def test_too_few_is_whole_scale():
    r = cf.split_conformal([3, 4], [3, 4], [2.0, np.nan], [1.0, 5.0], level=0.9, scale=(1, 5))
    assert r.low.tolist() == [1, 1] and r.high.tolist() == [5, 5] and "too few" in r.note and r.coverage == 1


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0.8, 0.9]))
def test_coverage_at_least_level_on_average(seed, level):
    rng = np.random.default_rng(seed)
    covs = []
    for _ in range(40):
        j = rng.uniform(1, 5, size=300)
        h = np.clip(np.round(j + rng.normal(0, 0.7, size=300)), 1, 5)
        r = cf.split_conformal(j[:100], h[:100], j[100:], h[100:], level=level, scale=(1, 5))
        covs.append(r.coverage)
    assert np.mean(covs) >= level - 0.02
