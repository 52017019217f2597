"""evalcore.meta.resampling: the shared bootstrap set-up draws the same resamples however it is blocked."""

import numpy as np
import pytest

from evalcore.meta import resampling
from evalcore.meta.resampling import (
    bootstrap_counts, bootstrap_group_counts, bootstrap_indices, jackknife_blocks, jackknife_counts, resample_counts,
)


def test_bootstrap_counts_count_the_drawn_indices():
    idx = bootstrap_indices(7, 30, random_state=4)
    C = bootstrap_counts(7, 30, random_state=4)
    assert np.array_equal(C, resample_counts(idx, 7))
    for row, counts in zip(idx, C):
        assert np.array_equal(np.bincount(row, minlength=7), counts)
    assert (C.sum(axis=1) == 7).all()


@pytest.mark.parametrize("block_cells", [1, 13, 50, 10_000])
def test_group_counts_in_blocks_equal_unit_counts_summed_per_group(monkeypatch, block_cells):
    monkeypatch.setattr(resampling, "BLOCK_CELLS", block_cells)
    groups = np.array([2, -1, 0, 2, 1, 1, -1, 0, 2, 2, 0])
    G = bootstrap_group_counts(groups, 3, 40, random_state=8)
    C = bootstrap_counts(len(groups), 40, random_state=8)
    onehot = np.zeros((len(groups), 3))
    onehot[groups >= 0, groups[groups >= 0]] = 1
    assert np.array_equal(G, C @ onehot)


def test_jackknife_blocks_tile_the_leave_one_out_matrix(monkeypatch):
    monkeypatch.setattr(resampling, "BLOCK_CELLS", 12)
    whole = np.concatenate(list(jackknife_blocks(5)))
    assert np.array_equal(whole, 1 - np.eye(5)) and np.array_equal(whole, jackknife_counts(5))
    assert resampling.jackknife_values(5, lambda C: C @ np.arange(5.0)).tolist() == [10 - i for i in range(5)]
