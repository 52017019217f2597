"""The array and seed types the signatures of evalcore.meta share (numpy's typing): what a statistic takes and
returns, named once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]  # values, resampled statistics, counts as floats
IntArray: TypeAlias = npt.NDArray[np.signedinteger[Any]]  # codes, indices and counts, of whatever width numpy made
BoolArray: TypeAlias = npt.NDArray[np.bool_]  # masks
LabelArray: TypeAlias = npt.NDArray[np.generic]  # labels (document and system ids: text or numbers)
# What numpy.random.default_rng takes: a seed, or a generator to draw from (the same draws everywhere for a seed)
Seed: TypeAlias = int | np.random.Generator | None
# A statistic recomputed on resamples: count rows (replicates x units) in, one value per row out
OfCounts: TypeAlias = Callable[[FloatArray], FloatArray]
# scipy.stats.permutation_test's statistic(x, y, axis): one value, or one per row of a batch
PermutationStatistic: TypeAlias = Callable[[FloatArray, FloatArray, int], "FloatArray | float"]
