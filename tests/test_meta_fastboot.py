"""evalcore.meta.fastboot: weighted rank statistics per replicate equal scipy on the expanded multiset; bootstrap
blocks are the same draws; the grouped jackknife partitions the documents; intervals on continuous scores equal
scipy.stats.bootstrap's BCa on the same resamples, and the grouped jackknife moves them by less than Monte-Carlo
error."""

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs

from evalcore.meta import correlate, fastboot, resampling
from evalcore.meta import correlation as corr
from tests.test_meta_correlation import scipy_bca_with_captured_resamples, slow_bootstrap, synthetic

# ---------------------------------------------------------------------------------------------------------------------
# Weighted statistics == scipy on the multiset that repeats item i W[i] times

pairs = hs.lists(hs.tuples(hs.integers(0, 12), hs.integers(1, 5), hs.integers(0, 3)), min_size=2, max_size=40)


def expand(values, w):
    return np.repeat(np.asarray(values, float), np.asarray(w, int))


def defined(a, b):
    return len(a) >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0


@settings(max_examples=80, deadline=None)
@given(pairs, hs.booleans(), hs.booleans())
def test_weighted_rank_statistics_equal_scipy_on_the_expanded_multiset(rows, continuous, unit_weights):
    x = np.array([r[0] for r in rows], float)
    if continuous:  # distinct values (continuous judge scores) with a few exact ties left in
        x = x + np.linspace(0, 0.5, len(x)) * (x % 2)
    y = np.array([r[1] for r in rows], float)
    w = np.ones(len(rows)) if unit_weights else np.array([r[2] for r in rows], float)
    xs, ys = expand(x, w), expand(y, w)
    if not defined(xs, ys):
        return
    for a, b, ea, eb in ((x, y, xs, ys), (y, x, ys, xs)):
        ws = fastboot.WeightedSpearman(a, b)
        assert ws.rho(w[ws.order][None, :])[0] == pytest.approx(st.spearmanr(ea, eb).statistic, abs=1e-10)
        wk = fastboot.WeightedKendall(a, b)
        assert wk.tau_b(w[wk.order][None, :])[0] == pytest.approx(st.kendalltau(ea, eb).statistic, abs=1e-10)


def test_level_kernels_equal_scipy_per_row_with_heavy_weights_and_ties():
    """Several replicate rows at once, weights up to 9 (a document drawn many times), x rounded so that x ties span
    human levels (items with lower-level items at their own x value) and a clipped end (one big tie group): the
    integer Kendall and the closed-form Spearman (y with few levels) equal scipy on each expanded multiset, and the
    Spearman equals the general mid-rank path."""
    rng = np.random.default_rng(3)
    y = rng.integers(1, 6, 300).astype(float)
    x = np.clip(np.round(y + rng.normal(0, 1.2, 300), 1), 1.0, 5.0)
    W = rng.integers(0, 10, (6, 300))
    ws, wk = fastboot.WeightedSpearman(x, y), fastboot.WeightedKendall(x, y)
    assert ws.ry.onehot is not None and len(ws.big_first) > 0
    rho, tau = ws.rho(W[:, ws.order]), wk.tau_b(W[:, wk.order])
    for r in range(len(W)):
        ex, ey = expand(x, W[r]), expand(y, W[r])
        assert rho[r] == pytest.approx(st.spearmanr(ex, ey).statistic, abs=1e-12)
        assert tau[r] == pytest.approx(st.kendalltau(ex, ey).statistic, abs=1e-12)
    ws.ry.onehot = None  # the general path: items-long mid-rank vectors on both sides
    np.testing.assert_allclose(ws.rho(W[:, ws.order].astype(float)), rho, atol=1e-12)


def test_replicate_weights_must_be_counts():
    with pytest.raises(ValueError, match="whole numbers"):
        fastboot.as_counts(np.array([[1.0, 0.5]]))
    assert fastboot.as_counts(np.array([[2.0, 0.0]])).dtype == np.int64


def test_constant_resamples_equal_a_check_on_each_expanded_resample():
    """The one-product shortcut (a resample holding a document varied on both sides is not constant) gives the same
    flags as looking at every resample's values: documents constant on one side or both, resamples drawing only
    those."""
    frame = synthetic(n_docs=8, n_systems=3, seed=4)
    frame.loc[frame["doc_id"] == frame["doc_id"].unique()[0], "judge"] = 2.0
    frame.loc[frame["doc_id"] == frame["doc_id"].unique()[1], ["judge", "human"]] = 3.0
    frame.loc[frame["doc_id"] == frame["doc_id"].unique()[2], "human"] = 3.0
    p = corr.prepare_frame(frame)
    C = np.random.default_rng(0).integers(0, 3, (400, p.n_docs)).astype(float)
    C[:, 3:] *= np.random.default_rng(1).random((400, 1)) < 0.3  # many resamples draw only the first three documents
    flags = corr._constant_resamples(p, C)
    for b in range(len(C)):
        w = C[b][p.doc].astype(int)
        ex, ey = np.repeat(p.x, w), np.repeat(p.y, w)
        assert flags[b] == (len(ex) > 0 and (np.ptp(ex) == 0 or np.ptp(ey) == 0))
    assert flags.any() and not flags.all()


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(hs.floats(-5, 5, allow_nan=False), hs.integers(0, 3)), min_size=1, max_size=40))
def test_weighted_midranks_equal_rankdata_of_the_multiset(rows):
    v = np.round(np.array([r[0] for r in rows]), 1)  # rounding leaves ties
    w = np.array([r[1] for r in rows], float)
    for few in (True, False):
        wr = fastboot.WeightedRanks(v)
        if not few:
            wr.onehot = None  # force the sorted (many distinct values) path
        ranks = wr.midranks(w[None, :])[0]
        expected = st.rankdata(expand(v, w))
        # every copy of item i has the same mid-rank, so the expanded ranks are item i's rank repeated
        assert np.allclose(expand(ranks, w), expected, atol=1e-12)


def test_all_weights_one_equal_scipy_on_continuous_scores():
    rng = np.random.default_rng(3)
    x = rng.normal(size=500)
    y = np.clip(np.round(3 + x + rng.normal(size=500)), 1, 5)
    x[:40] = 0.25  # a block of tied judge scores
    for cls, fn, ref in ((fastboot.WeightedSpearman, "rho", st.spearmanr), (fastboot.WeightedKendall, "tau_b",
                                                                             st.kendalltau)):
        obj = cls(x, y)
        assert getattr(obj, fn)(np.ones((1, 500)))[0] == pytest.approx(ref(x, y).statistic, abs=1e-12)


# ---------------------------------------------------------------------------------------------------------------------
# Draws and jackknife groups


@pytest.mark.parametrize("block_cells", [1, 7, 64, 10_000])
def test_count_blocks_are_the_bootstrap_counts_whatever_the_block(monkeypatch, block_cells):
    monkeypatch.setattr(resampling, "BLOCK_CELLS", block_cells)
    whole = np.concatenate(list(fastboot.count_blocks(9, 37, random_state=5)))
    assert np.array_equal(whole, resampling.bootstrap_counts(9, 37, random_state=5))


def test_grouped_jackknife_leaves_each_group_out_once(monkeypatch):
    monkeypatch.setattr(fastboot, "JACKKNIFE_MAX_UNITS", 10)
    monkeypatch.setattr(fastboot, "JACKKNIFE_GROUPS", 4)
    monkeypatch.setattr(resampling, "BLOCK_CELLS", 30)  # blocks of one or two rows
    groups = fastboot.jackknife_groups(23)
    assert sorted(np.bincount(groups).tolist()) == [5, 6, 6, 6]  # almost equal sizes
    C = np.concatenate(list(fastboot.jackknife_count_blocks(23)))
    assert C.shape == (4, 23)
    assert np.array_equal(C, (groups[None, :] != np.arange(4)[:, None]).astype(float))
    assert fastboot.jackknife_groups(10) is None and fastboot.jackknife_label(10) == ""
    assert "4 groups" in fastboot.jackknife_label(23)


# ---------------------------------------------------------------------------------------------------------------------
# Intervals


@pytest.mark.parametrize("coefficient", ["spearman", "kendall"])
def test_continuous_dataset_level_bca_equals_scipy_bootstrap(coefficient, monkeypatch):
    """Continuous judge scores with the contingency table forbidden (the path large frames take): scipy.stats.bootstrap
    (BCa) over documents with the explicit statistic, same resamples, same interval."""
    monkeypatch.setattr(corr, "MAX_KENDALL_TABLE_CELLS", 0)
    frame = synthetic(n_docs=12, n_systems=5, seed=8, continuous=True)
    ci, idx = scipy_bca_with_captured_resamples(
        12, lambda rows: slow_bootstrap(frame, "dataset", coefficient, rows), n_resamples=150)
    p = corr.prepare_frame(frame)
    assert not corr._table_fits(p)
    boot = corr.bootstrap_distribution(p, level="dataset", coefficient=coefficient, indices=idx)
    jack = corr.jackknife_distribution(p, level="dataset", coefficient=coefficient)
    est = corr.point_estimate(p, level="dataset", coefficient=coefficient)[0]
    lo, hi, _, method = corr.bootstrap_interval(boot, confidence_level=0.95, estimate=est, jackknife=jack)
    assert method == "bca"
    assert (lo, hi) == (pytest.approx(ci.low, abs=1e-9), pytest.approx(ci.high, abs=1e-9))


def quantile_mc_error(values: np.ndarray, p: float = 0.025) -> float:
    """Standard error of the p-quantile of B bootstrap values: sqrt(p (1 - p) / B) / density at the quantile, the
    density estimated from the spread of the values around it (normal approximation)."""
    sd = np.nanstd(values)
    return float(np.sqrt(p * (1 - p) / np.sum(~np.isnan(values))) / st.norm.pdf(st.norm.ppf(p)) * sd)


@pytest.mark.parametrize("level, coefficient", [(lv, co) for lv in corr.LEVELS for co in corr.COEFFICIENTS
                                                if lv != "system" or co == "pearson"])
def test_grouped_jackknife_interval_within_monte_carlo_error_of_leave_one_out(level, coefficient, monkeypatch):
    """2,400 documents: the grouped jackknife (the default beyond JACKKNIFE_MAX_UNITS) against leaving each document
    out, on the same 1,000 resamples. Only the acceleration differs; the ends must agree within the Monte-Carlo
    error of a 2.5% quantile of 1,000 resamples (one standard error: the jackknife is deterministic, the
    difference is far smaller than the resampling noise it sits inside). System-level rank coefficients over a few
    systems take a handful of values, where a quantile's standard error has no density to speak of: left out."""
    frame = synthetic(n_docs=2_400, n_systems=3, seed=1, continuous=True)
    grouped = correlate(frame, level=level, coefficient=coefficient, n_resamples=1000)
    assert grouped.method.startswith("bca (grouped jackknife") or grouped.method == "percentile"
    monkeypatch.setattr(fastboot, "JACKKNIFE_MAX_UNITS", 10_000)
    loo = correlate(frame, level=level, coefficient=coefficient, n_resamples=1000)
    p = corr.prepare_frame(frame)
    dist = np.concatenate([corr.replicate_function(p, level=level, coefficient=coefficient)(C)
                           for C in fastboot.count_blocks(p.n_docs, 1000, 0)])
    tol = quantile_mc_error(dist)
    assert grouped.statistic == loo.statistic
    assert abs(grouped.ci_low - loo.ci_low) <= tol and abs(grouped.ci_high - loo.ci_high) <= tol


def test_blocked_bootstrap_equals_one_piece(monkeypatch):
    """correlate draws its resamples in blocks; with tiny blocks the interval is the one from all resamples at once."""
    frame = synthetic(n_docs=30, n_systems=4, seed=2, continuous=True)
    whole = correlate(frame, level="dataset", coefficient="kendall", n_resamples=120)
    monkeypatch.setattr(resampling, "BLOCK_CELLS", 45)
    monkeypatch.setattr(fastboot, "ITEM_BLOCK_CELLS", 50)
    blocked = correlate(frame, level="dataset", coefficient="kendall", n_resamples=120)
    assert (blocked.ci_low, blocked.ci_high) == (pytest.approx(whole.ci_low, abs=1e-12),
                                                 pytest.approx(whole.ci_high, abs=1e-12))


class Abandon(Exception):
    pass


def test_a_stop_point_can_abandon_a_correlation_and_is_local_to_its_block():
    """The app's pages stop a computation whose session went away: the stop point is consulted between blocks of
    replicates, and outside its ``with`` block nothing is consulted."""
    frame = synthetic(n_docs=40, n_systems=4, seed=3, continuous=True)
    calls = []

    def stop():
        calls.append(1)
        if len(calls) > 2:
            raise Abandon

    with pytest.raises(Abandon):
        with fastboot.stop_point(stop):
            correlate(frame, level="dataset", coefficient="spearman", n_resamples=500)
    n = len(calls)
    r = correlate(frame, level="dataset", coefficient="spearman", n_resamples=500)
    assert len(calls) == n and not np.isnan(r.ci_low)
