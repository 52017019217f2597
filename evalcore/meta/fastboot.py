"""Document-bootstrap and jackknife replicates of correlations whose cost stays linear in the items.

A replicate (bootstrap resample or jackknife replicate) is a row of integer *weights* per document (how often the
document is in the multiset); an item's weight is its document's. This module holds what lets the statistics be
computed from those weights without repeating items and without re-sorting per replicate:

- ``count_blocks``: the bootstrap's count rows in blocks of about BLOCK_CELLS cells, drawn from exactly the stream
  ``bootstrap_indices`` uses (so a seed gives the same resamples as before, whatever the block size), with memory
  flat in the number of resamples.
- ``jackknife_groups`` / ``jackknife_count_blocks``: the jackknife for BCa's acceleration. Up to
  JACKKNIFE_MAX_UNITS documents it leaves one document out at a time (as before); beyond, it is the grouped
  (delete-d) jackknife: documents are dealt at random (fixed seed) into JACKKNIFE_GROUPS groups of (almost) equal
  size and one group is left out at a time. The skewness estimate a = sum d^3 / (6 (sum d^2)^1.5) is the same
  functional of the influence values either way (for a mean, group sums of d iid influences give skew / sqrt(n),
  as single ones do; Efron & Tibshirani 1993, sec. 11.5 on the delete-d jackknife), at a cost of G replicates
  instead of n_docs.
- ``WeightedRanks``: mid-ranks of one side inside every weighted multiset from one global sort: the cumulative
  weight at the end of each tie group is the number of elements <= that value, so mid-rank = (# strictly smaller) +
  (weight of the tie group + 1) / 2, O(n) per replicate.
- ``weighted_kendall_numerator``: concordant minus discordant pairs of a weighted multiset, with one side sorted
  once and the other side's few distinct levels (a rating scale): for each level m, the cumulative weight of level-m
  items strictly before each item in the sorted order gives its pairs with level m, O(n x levels) per replicate.

Every function takes a block ``W`` (replicates x items) of item weights and returns one value per row.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
import scipy.sparse as sp

from evalcore.meta.arrays import FloatArray, IntArray, Seed
from evalcore.meta import resampling
from evalcore.meta.resampling import jackknife_blocks, resample_counts

# Up to this many documents the jackknife leaves one document out at a time (the classical BCa acceleration).
JACKKNIFE_MAX_UNITS = 2_000
# Beyond it, documents are dealt into this many groups and one group is left out at a time.
JACKKNIFE_GROUPS = 200
# Seed of the deal into groups: fixed, so an analysis (and two runs compared on the same documents) is repeatable.
JACKKNIFE_GROUP_SEED = 0
# The level-by-level Kendall needs one side with at most this many distinct values (a rating scale, or means of a
# few ratings); with more on both sides, callers fall back to explicit resampling.
KENDALL_MAX_LEVELS = 64
# A side with at most this many distinct values gets its ranks per level (one sparse product per replicate).
FEW_LEVELS = 64
# Item-level kernels work on blocks of about this many cells: a few MB, so the passes over a block stay in cache.
ITEM_BLOCK_CELLS = 1 << 18


# A caller's stop point, called between blocks of replicates (a few milliseconds of work apart): it may raise to abandon
# the computation (the app's pages raise Streamlit's stop when the session that asked has gone or asked for a
# rerun). Context-local, so concurrent callers (one thread per browser session) each have their own.
_STOP_POINT: ContextVar[Callable[[], None] | None] = ContextVar("evalcore_stop_point", default=None)


@contextmanager
def stop_point(check: Callable[[], None]) -> Iterator[None]:
    """Within this block, ``check()`` is called between blocks of bootstrap / jackknife replicates."""
    token = _STOP_POINT.set(check)
    try:
        yield
    finally:
        _STOP_POINT.reset(token)


def checkpoint() -> None:
    """Give the caller's stop point (if any) a chance to abandon the computation."""
    check = _STOP_POINT.get()
    if check is not None:
        check()


class Progress:
    """How far a long computation is, in replicate rows (bootstrap resamples and jackknife replicates).

    Computations declare the rows they will compute (``expecting``) and report each block done (``advance``); the
    caller's ``report(done, total)`` is called after each (the app's progress bar). Only the outermost declaration
    counts: a view that knows its whole plan (runs x cells) declares it once, and the cells it calls, which declare
    their own rows too, then only advance, so the bar never runs backwards."""

    def __init__(self, report: Callable[[int, int], None]) -> None:
        self.report = report
        self.total = 0
        self.done = 0
        self.depth = 0


_PROGRESS: ContextVar[Progress | None] = ContextVar("evalcore_progress", default=None)


@contextmanager
def progress_point(report: Callable[[int, int], None]) -> Iterator[None]:
    """Within this block, computations report ``report(rows done, rows expected)`` after each block of replicates."""
    token = _PROGRESS.set(Progress(report))
    try:
        yield
    finally:
        _PROGRESS.reset(token)


@contextmanager
def expecting(rows: int) -> Iterator[None]:
    """Declare the replicate rows of the work inside this block (ignored inside an outer declaration)."""
    p = _PROGRESS.get()
    if p is None:
        yield
        return
    if p.depth == 0:
        p.total += int(rows)
        p.report(p.done, p.total)
    p.depth += 1
    try:
        yield
    finally:
        p.depth -= 1


def rows_done() -> int:
    """Replicate rows reported done so far to the caller's progress point (0 without one)."""
    p = _PROGRESS.get()
    return 0 if p is None else p.done


def advance(rows: int) -> None:
    """Report ``rows`` replicate rows done to the caller's progress point (if any)."""
    p = _PROGRESS.get()
    if p is not None and rows:
        p.done += int(rows)
        p.report(p.done, max(p.total, p.done))


def over_blocks(of_counts: Callable[[FloatArray], FloatArray], blocks: Iterable[FloatArray]) -> FloatArray:
    """``of_counts(C)`` over blocks of count rows, concatenated: a stop point before each block and the rows done
    counted after it (the statistic's per-frame work is done once, inside ``of_counts``)."""
    parts = []
    for C in blocks:
        checkpoint()
        parts.append(np.asarray(of_counts(C), dtype=float))
        advance(len(C))
    return np.concatenate(parts) if parts else np.empty(0)


def workers() -> int:
    """Threads for the item-level kernels: the machine's cores, at most 4 (memory bandwidth is shared)."""
    return max(1, min(4, os.cpu_count() or 1))


def run_blocks(one: Callable[[int], None], starts: list[int]) -> None:
    """``one(s)`` for every block start, ``workers()`` at a time; the stop point is consulted between rounds in the
    caller's thread (the context holding it)."""
    n = workers()
    if n == 1 or len(starts) < 2 * n:
        for s in starts:
            checkpoint()
            one(s)
        return
    with ThreadPoolExecutor(n) as pool:
        for i in range(0, len(starts), n):
            checkpoint()
            list(pool.map(one, starts[i:i + n]))


def count_blocks(n_units: int, n_resamples: int, random_state: Seed = 0) -> Iterator[FloatArray]:
    """The rows of ``bootstrap_counts(n_units, n_resamples, random_state)`` in consecutive blocks."""
    if n_units == 0:
        return
    rng = np.random.default_rng(random_state)
    step = max(1, resampling.BLOCK_CELLS // n_units)
    for s in range(0, n_resamples, step):
        b = min(step, n_resamples - s)
        yield resample_counts(rng.integers(0, n_units, size=(b, n_units)), n_units)


def jackknife_groups(n_units: int) -> IntArray | None:
    """Each unit's jackknife group (0..JACKKNIFE_GROUPS-1), or None where the jackknife leaves one unit out."""
    if n_units <= JACKKNIFE_MAX_UNITS:
        return None
    perm = np.random.default_rng(JACKKNIFE_GROUP_SEED).permutation(n_units)
    groups = np.empty(n_units, dtype=np.int64)
    groups[perm] = np.arange(n_units) % JACKKNIFE_GROUPS
    return groups


def jackknife_rows(n_units: int) -> int:
    """How many jackknife replicates BCa's acceleration takes for ``n_units`` documents."""
    return n_units if n_units <= JACKKNIFE_MAX_UNITS else JACKKNIFE_GROUPS


def jackknife_label(n_units: int) -> str:
    """How the jackknife behind BCa's acceleration was made, for ``ci_method`` ("" = leave one document out)."""
    if jackknife_groups(n_units) is None:
        return ""
    return f"grouped jackknife: {JACKKNIFE_GROUPS} groups of documents"


def jackknife_count_blocks(n_units: int) -> Iterator[FloatArray]:
    """Count rows of the jackknife replicates, in blocks: leave-one-out rows, or one row per group left out."""
    groups = jackknife_groups(n_units)
    if groups is None:
        yield from jackknife_blocks(n_units)
        return
    step = max(1, resampling.BLOCK_CELLS // n_units)
    for s in range(0, JACKKNIFE_GROUPS, step):
        g = np.arange(s, min(s + step, JACKKNIFE_GROUPS))
        yield (groups[None, :] != g[:, None]).astype(float)


# --------------------------------------------------------------------------------------------------------------------
# Weighted ranks and pair counts over a fixed sort


def _ties(sorted_values: FloatArray) -> tuple[IntArray, IntArray, IntArray]:
    """(group of each sorted position, first position of each group, last position of each group)."""
    new = np.ones(len(sorted_values), dtype=bool)
    new[1:] = sorted_values[1:] != sorted_values[:-1]
    group = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(sorted_values) - 1)
    return group, first, last


class WeightedRanks:
    """Mid-ranks of the values ``v`` inside weighted multisets, from one sort of ``v``."""

    def __init__(self, v: FloatArray) -> None:
        self.order = np.argsort(v, kind="stable")
        self.group, first, self.last = _ties(v[self.order])
        self.first = first
        self.n_levels = len(self.last)
        self.identity = bool(np.array_equal(self.order, np.arange(len(v))))
        # Sorted positions inside tie groups of two or more, with their group's first and last position: only
        # those need the group's mid-rank; every other item's mid-rank is its cumulative weight - (weight - 1) / 2.
        size = (self.last - first + 1)[self.group]
        self.tied = np.flatnonzero(size > 1)
        self.tied_first = first[self.group[self.tied]]
        self.tied_last = self.last[self.group[self.tied]]
        # Few levels: the weight of each level is one sparse product (no per-replicate sort or scatter).
        self.onehot = None
        if self.n_levels <= FEW_LEVELS:
            code = np.empty(len(v), dtype=np.int64)
            code[self.order] = self.group
            self.code = code
            self.onehot = sp.csr_matrix((np.ones(len(v)), (np.arange(len(v)), code)), shape=(len(v), self.n_levels))
            self.onehot_t = self.onehot.T.tocsr()

    def level_weights(self, W: IntArray) -> FloatArray:
        """(replicates x levels) total weight of each distinct value."""
        if self.onehot is not None:
            return self.level_sums(W)
        cum = np.cumsum(W[:, self.order], axis=1)[:, self.last]
        return np.diff(cum, axis=1, prepend=0.0)

    def level_sums(self, M: FloatArray | IntArray) -> FloatArray:
        """(rows x levels) sum of each row of M over the items of each level (needs few levels)."""
        return np.stack([self.onehot_t @ row for row in M])  # sparse mat-vec per row: no copy of M

    def midranks(self, W: IntArray) -> FloatArray:
        """(replicates x items) mid-rank of every item in each weighted multiset (ties share their mid-rank)."""
        if self.onehot is not None:
            tot = self.level_weights(W)
            rank = np.cumsum(tot, axis=1) - (tot - 1.0) / 2.0
            return rank[:, self.code]
        Ws = W if self.identity else W[:, self.order]
        if len(self.tied) > len(self.group) // 4:
            # many ties (scores rounded to a few decimals): rank the distinct values, then hand them out
            tot = np.add.reduceat(Ws, self.first, axis=1)
            rank = np.cumsum(tot, axis=1) - (tot - 1.0) / 2.0
            ranks_sorted = rank[:, self.group]
        else:
            ranks_sorted = self._ranks_few_ties(Ws)
        if self.identity:
            return ranks_sorted
        out = np.empty_like(ranks_sorted)
        out[:, self.order] = ranks_sorted
        return out

    def _ranks_few_ties(self, Ws: IntArray) -> FloatArray:
        """Mid-ranks in sorted order when most values are distinct: cumulative weight - (weight - 1) / 2, then the
        few tie groups' items set to their group's mid-rank."""
        cum = np.cumsum(Ws, axis=1)
        ranks_sorted = cum - (Ws - 1.0) / 2.0
        if len(self.tied):
            below = cum[:, self.tied_first] - Ws[:, self.tied_first]  # weight strictly below the tie group
            ranks_sorted[:, self.tied] = (below + cum[:, self.tied_last] + 1.0) / 2.0
        return ranks_sorted


class WeightedKendall:
    """Kendall tau-b of weighted multisets of (x, y) pairs: x sorted once, y with few distinct levels.

    concordant - discordant = sum over levels l of sum_{i in l} W_i (F_i + G_i - W_<l), where F_i (G_i) is the
    weight of lower-level items with x < x_i (x <= x_i): each lower item j counts +1 when x_j < x_i, -1 when
    x_j > x_i and 0 when tied. F and G are read from one cumulative sum over the lower-level items in x order, at
    positions (how many lower items lie before i) fixed by the sort, so a replicate costs O(n x levels / 2) and needs
    no sort. The caller passes weights in x order (``self.order``).
    """

    def __init__(self, x: FloatArray, y: FloatArray) -> None:
        self.order = np.argsort(x, kind="stable")
        xs = x[self.order]
        group, first, last = _ties(xs)
        # Items inside tie groups of x (two or more equal values), for the pairs tied in x (n1): the group weights
        # come from those items alone (np.add.reduceat over their consecutive runs), singletons from W^2.
        size = (last - first + 1)[group]
        self.x_tied = np.flatnonzero(size > 1)
        big = np.flatnonzero(last > first)
        self.x_tie_starts = np.searchsorted(self.x_tied, first[big])
        codes, uniq = _codes(y[self.order])
        self.n_levels = len(uniq)
        self.levels = []  # per level: (its positions, lower positions, # lower before, # lower before or tied)
        for m in range(self.n_levels):
            here = np.flatnonzero(codes == m)
            lower = np.flatnonzero(codes < m)
            lt = np.searchsorted(xs[lower], xs[here], side="left")
            le = np.searchsorted(xs[lower], xs[here], side="right")
            # Only items with a lower item at their own x value (le > lt) need the second read of the cumulative
            # weight; for the others F_i = G_i.
            tie = np.flatnonzero(le > lt)
            self.levels.append((here, lower, lt, (tie, lt[tie], le[tie])))

    def tau_b(self, W: IntArray) -> FloatArray:
        """tau-b of each row of W (replicates x items, items in ``self.order``; integer weights).

        The pair counts are integers and are computed in int64: exact, and numpy's integer cumulative sum is several
        times faster than its floating-point one (no dependency on the previous addition's rounding)."""
        return np.array([self._tau_b_row(w) for w in as_counts(W)], dtype=np.float64)

    def _tau_b_row(self, w: IntArray) -> float:
        """tau-b of one replicate, on 1-d rows (numpy's 1-d gathers are cheaper than the same on a 2-d block)."""
        con_minus_dis = 0
        level_tot = np.empty(self.n_levels, dtype=np.int64)
        for m, (here, lower, lt, (tie, tie_lt, tie_le)) in enumerate(self.levels):
            wh = w[here]
            level_tot[m] = wh.sum()
            if len(lower) == 0:
                continue
            cz = np.empty(len(lower) + 1, dtype=np.int64)
            cz[0] = 0
            np.cumsum(w[lower], out=cz[1:])
            # sum_i W_i (F_i + G_i - W_<l) = 2 sum_i W_i F_i - W_l W_<l + sum over x-tied items W_i (G_i - F_i)
            before = cz[lt]
            before *= wh
            con_minus_dis += 2 * int(before.sum()) - int(level_tot[m]) * int(cz[-1])
            if len(tie):
                con_minus_dis += int((wh[tie] * (cz[tie_le] - cz[tie_lt])).sum())
        n = int(level_tot.sum())
        sq = int((w * w).sum())  # sum over x tie groups of (group weight)^2, singletons first
        if len(self.x_tied):
            wt = w[self.x_tied]
            tot = np.add.reduceat(wt, self.x_tie_starts)
            sq += int((tot * tot).sum()) - int((wt * wt).sum())
        n0 = n * (n - 1) // 2
        n1 = (sq - n) // 2
        n2 = int((level_tot * (level_tot - 1) // 2).sum())
        denom = float(n0 - n1) * float(n0 - n2)
        if denom <= 0:
            return np.nan
        return float(np.clip(con_minus_dis / np.sqrt(denom), -1.0, 1.0))


class WeightedSpearman:
    """Spearman rho of weighted multisets of (x, y) pairs: Pearson of the weighted mid-ranks, x sorted once.

    The mean mid-rank of a multiset of N elements is (N + 1) / 2 whatever the ties, so only sum W rx ry,
    sum W rx^2 and sum W ry^2 are needed. When y has few levels its ranks are per level: sum W rx ry =
    sum_l rank_l (sum_{i in l} W_i rx_i) and sum W ry^2 = sum_l tot_l rank_l^2, without an items-long y rank vector.
    The caller passes weights in x order (``self.order``).
    """

    def __init__(self, x: FloatArray, y: FloatArray) -> None:
        self.order = np.argsort(x, kind="stable")
        self.rx = WeightedRanks(x[self.order])
        self.ry = WeightedRanks(y[self.order])
        if self.ry.onehot is not None:
            self._prepare_levels()

    def _prepare_levels(self) -> None:
        """For y with few levels: integer (level x position) indicator matrices, one of all positions and one of the
        positions outside x tie groups (their x mid-rank is read off the cumulative weight), and the x tie groups'
        (group, level) cells."""
        rx, L = self.rx, self.ry.n_levels
        self.n_levels = L
        n = len(self.ry.code)
        pos = np.arange(n)
        self.level_of = sp.csr_matrix((np.ones(n, dtype=np.int64), (self.ry.code, pos)), shape=(L, n))
        untied = np.ones(n, dtype=bool)
        untied[rx.tied] = False
        self.untied_level_of = sp.csr_matrix((np.ones(untied.sum(), dtype=np.int64),
                                              (self.ry.code[untied], pos[untied])), shape=(L, n))
        big = np.flatnonzero(rx.last > rx.first)  # x tie groups of two or more items
        self.big_first, self.big_last = rx.first[big], rx.last[big]
        group_of_big = np.full(rx.n_levels, -1, dtype=np.int64)
        group_of_big[big] = np.arange(len(big))
        self.tied_cell = group_of_big[rx.group[rx.tied]] * L + self.ry.code[rx.tied]

    def rho(self, W: IntArray) -> FloatArray:
        if self.ry.onehot is not None:
            W = as_counts(W)
            return np.array([self._rho_levels(w) for w in W])
        rx = self.rx.midranks(W)
        q = W * rx
        sxx = np.einsum("ij,ij->i", q, rx)
        ry = self.ry.midranks(W)
        n = W.sum(axis=1)
        sxy = np.einsum("ij,ij->i", q, ry)
        syy = np.einsum("ij,ij->i", W * ry, ry)
        m2 = n * ((n + 1.0) / 2.0) ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            r = (sxy - m2) / np.sqrt((sxx - m2) * (syy - m2))
        result: FloatArray = np.clip(r, -1.0, 1.0)
        return result

    def _rho_levels(self, w: IntArray) -> float:
        """Spearman of one replicate (int64 weights in x order), y with few levels l, without an items-long rank vector:

        - sum w rx ry = sum_l rank_l Q_l, Q_l = sum_{i in l} w_i rx_i. Outside x tie groups rx_i = cum_i - (w_i - 1) / 2
          (cum = cumulative weight in x order, integers: int64, exact), so Q_l gathers w_i cum_i - w_i (w_i - 1) / 2
          by level; an x tie group g adds its mid-rank times its weight in level l.
        - sum w (r - mean r)^2 = (N^3 - N) / 12 - sum over tie groups t of (t^3 - t) / 12 (the mid-rank variance with
          ties), for x the tie groups being each untied item's w_i copies and each x tie group's total weight.
        """
        L = self.n_levels
        cum = np.cumsum(w)
        if len(cum) == 0 or cum[-1] == 0:
            return np.nan
        N = float(cum[-1])
        twice = 2 * cum  # 2 w_i rx_i = w_i (2 cum_i - w_i + 1) outside x tie groups, an integer
        twice -= w
        twice += 1
        twice *= w
        Q = (self.untied_level_of @ twice) / 2.0
        cube = w * w
        cube *= w
        cube -= w
        ties_x = float(cube.sum())  # sum of (w^3 - w), corrected below for x tie groups
        if len(self.big_first):
            wt = w[self.rx.tied]
            ties_x -= float(np.dot(wt, wt * wt) - wt.sum())
            cells = np.bincount(self.tied_cell, weights=wt, minlength=len(self.big_first) * L).reshape(-1, L)
            t = cells.sum(axis=1)
            mid = (cum[self.big_first] - w[self.big_first] + cum[self.big_last] + 1.0) / 2.0
            Q += mid @ cells
            ties_x += float((t * t * t - t).sum())
        tot = (self.level_of @ w).astype(float)
        rank_y = np.cumsum(tot) - (tot - 1.0) / 2.0
        sxy = float(Q @ rank_y) - N * ((N + 1.0) / 2.0) ** 2
        sxx = (N ** 3 - N - ties_x) / 12.0
        syy = (N ** 3 - N - float((tot ** 3 - tot).sum())) / 12.0
        with np.errstate(invalid="ignore", divide="ignore"):
            r = sxy / np.sqrt(sxx * syy)
        return float(np.clip(r, -1.0, 1.0))


def as_counts(W: FloatArray | IntArray) -> IntArray:
    """Replicate weights as int64 (they are counts: how often each item is in the multiset)."""
    w = np.asarray(W)
    if w.dtype.kind in "iu":
        return w.astype(np.int64, copy=False)
    Wi = w.astype(np.int64)
    if not np.array_equal(Wi, w):
        raise ValueError("replicate weights must be whole numbers (counts of each item in the multiset)")
    return Wi


def _codes(v: FloatArray) -> tuple[IntArray, FloatArray]:
    uniq, codes = np.unique(v, return_inverse=True)
    return codes.astype(np.int64), uniq


def n_distinct(v: FloatArray) -> int:
    return len(np.unique(v))
