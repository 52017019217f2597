"""Resampling units (documents, items) with replacement and leaving one out: the set-up every bootstrap in
evalcore.meta shares (correlations, paired comparisons, classification agreement, calibration, Krippendorff's alpha).

A resample is a row of *counts*: how many times each unit was drawn. Statistics that are sums over units then take
all resamples at once as ``counts @ per_unit_sums``. The draws are ``numpy.random.default_rng(random_state)
.integers(0, n_units, size=(n_resamples, n_units))``, so a seed gives the same resamples everywhere; drawing the rows
in blocks consumes the generator's stream exactly as one call does (checked in tests/test_meta_resampling.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from evalcore.meta.arrays import FloatArray, IntArray, Seed

# Largest number of float64 cells one vectorised block may hold (about 32 MB); bigger work is chunked over resamples.
BLOCK_CELLS = 4_000_000


def bootstrap_indices(n_docs: int, n_resamples: int, random_state: Seed = 0) -> IntArray:
    """(n_resamples x n_docs) document indices drawn with replacement; deterministic for a given random_state."""
    rng = np.random.default_rng(random_state)
    return rng.integers(0, n_docs, size=(n_resamples, n_docs))


def resample_counts(indices: IntArray, n_docs: int) -> FloatArray:
    """How many times each document is drawn in each resample: (n_resamples x n_docs) float matrix."""
    b = indices.shape[0]
    flat = (indices + (np.arange(b) * n_docs)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n_docs).reshape(b, n_docs).astype(float)


def bootstrap_counts(n_units: int, n_resamples: int, random_state: Seed = 0) -> FloatArray:
    """(n_resamples x n_units) counts of the bootstrap resamples drawn by ``bootstrap_indices`` with that seed."""
    return resample_counts(bootstrap_indices(n_units, n_resamples, random_state), n_units)


def bootstrap_group_counts(groups: IntArray, n_groups: int, n_resamples: int, random_state: Seed = 0) -> FloatArray:
    """(n_resamples x n_groups) counts of *groups* of units in the same resamples as ``bootstrap_counts``.

    ``groups[u]`` is unit u's group code (0..n_groups-1, or -1 for a unit that belongs to none: it is drawn like
    the others but not counted). Equal to ``bootstrap_counts(len(groups), ...) @ one_hot(groups)``, without the
    resamples x units matrix: rows are drawn in blocks of about BLOCK_CELLS indices, so memory stays flat in the
    number of units while time is linear in it.
    """
    groups = np.asarray(groups, dtype=np.int64)
    n_units = len(groups)
    out = np.zeros((n_resamples, n_groups))
    if n_units == 0 or n_resamples == 0:
        return out
    rng = np.random.default_rng(random_state)
    code = np.where(groups < 0, n_groups, groups)  # the uncounted units go to one extra bin, dropped below
    width = n_groups + 1
    step = max(1, BLOCK_CELLS // n_units)
    for s in range(0, n_resamples, step):
        b = min(step, n_resamples - s)
        drawn = code[rng.integers(0, n_units, size=(b, n_units))]
        flat = (drawn + (np.arange(b) * width)[:, None]).ravel()
        out[s:s + b] = np.bincount(flat, minlength=b * width).reshape(b, width)[:, :n_groups]
    return out


def jackknife_counts(n_units: int, start: int = 0, stop: int | None = None) -> FloatArray:
    """Rows ``start:stop`` of the leave-one-out count matrix: row i holds every unit once except unit i (0)."""
    stop = n_units if stop is None else min(stop, n_units)
    C = np.ones((max(0, stop - start), n_units))
    rows = np.arange(start, stop)
    C[rows - start, rows] = 0.0
    return C


def jackknife_blocks(n_units: int) -> Iterator[FloatArray]:
    """The leave-one-out count matrix in consecutive row blocks of about BLOCK_CELLS cells (the whole is
    n_units^2)."""
    step = max(1, BLOCK_CELLS // max(1, n_units))
    for s in range(0, n_units, step):
        yield jackknife_counts(n_units, s, s + step)


def jackknife_values(n_units: int, statistic_of_counts: Callable[[FloatArray], FloatArray]) -> FloatArray:
    """``statistic_of_counts(C)`` over all n_units leave-one-out rows, in blocks (the full matrix is n_units^2)."""
    parts = [np.asarray(statistic_of_counts(C), dtype=float) for C in jackknife_blocks(n_units)]
    return np.concatenate(parts) if parts else np.empty(0)
