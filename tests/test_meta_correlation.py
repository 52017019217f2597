"""evalcore.meta.correlation: hand-worked values, the vectorised bootstrap against explicit resampling + scipy, and
property tests."""

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs

from evalcore.meta import correlation as corr
from evalcore.meta import correlate, correlation_table

# ---------------------------------------------------------------------------------------------------------------------
# Helpers


def make_frame(rows):
    return pd.DataFrame(rows, columns=["item_id", "doc_id", "system_id", "judge", "human"])


def synthetic(n_docs=12, n_systems=5, seed=0, noise=1.0, continuous=False, missing=0.0, nan_judge=0.0):
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        for s in range(n_systems):
            if rng.random() < missing:
                continue
            h = rng.integers(3, 16) / 3  # means of three 1-5 ratings
            j = float(np.clip(round(h + rng.normal(0, noise)), 1, 5))
            if continuous:
                j = float(h + rng.normal(0, noise))
            if rng.random() < nan_judge:
                j = float("nan")
            rows.append((f"d{d}/M{s}", f"d{d}", f"M{s}", j, h))
    return make_frame(rows)


def slow_statistic(g: pd.DataFrame, level: str, coefficient: str, skip_constant: bool = True) -> float:
    """The obvious implementation: scipy on an explicit frame (g has columns doc, sys, x, y)."""
    def sc(a, b):
        return corr.scipy_correlation(np.asarray(a, float), np.asarray(b, float), coefficient)[0]

    if level == "dataset":
        return sc(g.x, g.y)
    if level == "summary":
        vals = [sc(d.x, d.y) for _, d in g.groupby("doc")]
        if skip_constant:
            vals = [v for v in vals if not math.isnan(v)]
        else:
            vals = [0.0 if math.isnan(v) else v for v in vals]
        return float(np.mean(vals)) if vals else float("nan")
    m = g.groupby("sys")[["x", "y"]].mean()
    x, y = m.x.to_numpy(), m.y.to_numpy()
    if coefficient != "pearson":  # the documented tie rule for system means (corr.snap_ties)
        x, y = corr.snap_ties(x)[0], corr.snap_ties(y)[0]
    return sc(x, y)


def slow_bootstrap(frame, level, coefficient, indices, skip_constant=True):
    """Explicit resampling: concatenate the drawn documents (a document drawn twice appears twice) and ask scipy."""
    p = corr.prepare_frame(frame)
    out = []
    for row in indices:
        parts = []
        for k, d in enumerate(row):
            m = p.doc == d
            parts.append(pd.DataFrame({"doc": k, "sys": p.system[m], "x": p.x[m], "y": p.y[m]}))
        out.append(slow_statistic(pd.concat(parts), level, coefficient, skip_constant))
    return np.array(out)


def assert_same(a, b, tol=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], atol=tol, rtol=0)


# ---------------------------------------------------------------------------------------------------------------------
# A 3-document x 3-system toy computed by hand

TOY = make_frame([
    # d1: judge agrees perfectly with humans
    ("d1/A", "d1", "A", 1, 1), ("d1/B", "d1", "B", 2, 2), ("d1/C", "d1", "C", 3, 3),
    # d2: judge (1, 3, 2) vs human (1, 2, 3)
    ("d2/A", "d2", "A", 1, 1), ("d2/B", "d2", "B", 3, 2), ("d2/C", "d2", "C", 2, 3),
    # d3: the judge gives every output the same score: correlation undefined
    ("d3/A", "d3", "A", 2, 1), ("d3/B", "d3", "B", 2, 2), ("d3/C", "d3", "C", 2, 3),
    # a failed parse: dropped and counted, system D then has no items
    ("d1/D", "d1", "D", float("nan"), 4),
])


@pytest.mark.parametrize("coefficient, d2, skip_mean, zero_mean", [
    # d2: Pearson of (1,3,2) with (1,2,3): centred (-1,1,0).(-1,0,1) = 1, norms 2 and 2 -> 0.5; Spearman the same
    # (the values are ranks); Kendall: pairs AB concordant, AC concordant, BC discordant -> (2-1)/3.
    ("pearson", 0.5, (1 + 0.5) / 2, (1 + 0.5 + 0) / 3),
    ("spearman", 0.5, (1 + 0.5) / 2, (1 + 0.5 + 0) / 3),
    ("kendall", 1 / 3, (1 + 1 / 3) / 2, (1 + 1 / 3 + 0) / 3),
])
def test_summary_level_by_hand(coefficient, d2, skip_mean, zero_mean):
    r = correlate(TOY, level="summary", coefficient=coefficient, n_resamples=0)
    assert r.statistic == pytest.approx(skip_mean, abs=1e-12)
    assert (r.n, r.skipped, r.dropped, r.pvalue) == (2, 1, 1, None)
    r0 = correlate(TOY, level="summary", coefficient=coefficient, n_resamples=0, skip_constant=False)
    assert r0.statistic == pytest.approx(zero_mean, abs=1e-12)
    assert (r0.n, r0.skipped, r0.skip_constant) == (3, 1, False)
    per_doc = corr.per_document(corr.prepare_frame(TOY), coefficient)
    assert per_doc[:2] == pytest.approx([1.0, d2], abs=1e-12) and math.isnan(per_doc[2])


@pytest.mark.parametrize("coefficient, expected", [
    # system means: judge A (1+1+2)/3 = 4/3, B (2+3+2)/3 = 7/3, C 7/3; human A 1, B 2, C 3.
    # Pearson: centred judge (-2/3, 1/3, 1/3), human (-1, 0, 1): cov 1, norms^2 6/9 and 2 -> 1/sqrt(4/3) = sqrt(3)/2.
    ("pearson", math.sqrt(3) / 2),
    # Spearman: judge ranks (1, 2.5, 2.5) vs (1, 2, 3) -> the same centred vectors up to scale -> sqrt(3)/2.
    ("spearman", math.sqrt(3) / 2),
    # Kendall tau-b: AB, AC concordant, BC tied in judge: 2 / sqrt((3 - 1) * 3).
    ("kendall", 2 / math.sqrt(6)),
])
def test_system_level_by_hand(coefficient, expected):
    r = correlate(TOY, level="system", coefficient=coefficient, n_resamples=0)
    assert r.statistic == pytest.approx(expected, abs=1e-12)
    assert (r.n, r.dropped, r.skipped) == (3, 1, 0)
    assert r.pvalue is not None and 0 <= r.pvalue <= 1


def test_dataset_level_pools_items_and_counts_dropped():
    r = correlate(TOY, level="dataset", coefficient="kendall", n_resamples=0)
    ok = TOY.dropna(subset=["judge"])
    ref = st.kendalltau(ok.judge, ok.human)
    assert r.statistic == pytest.approx(ref.statistic, abs=1e-12)
    assert r.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
    assert (r.n, r.dropped) == (9, 1)
    assert math.isnan(r.ci_low) and math.isnan(r.ci_high)


def test_rows_kendall_matches_scipy_with_ties_and_gaps():
    rng = np.random.default_rng(3)
    X = rng.integers(1, 4, (40, 7)).astype(float)
    Y = rng.integers(1, 4, (40, 7)).astype(float)
    X[rng.random(X.shape) < 0.2] = np.nan
    Y[np.isnan(X)] = np.nan
    got = corr.rows_kendall(X, Y)
    for i in range(len(X)):
        m = ~np.isnan(X[i])
        exp = corr.scipy_correlation(X[i, m], Y[i, m], "kendall")[0]
        assert (math.isnan(got[i]) and math.isnan(exp)) or got[i] == pytest.approx(exp, abs=1e-12)


# ---------------------------------------------------------------------------------------------------------------------
# Fast bootstrap paths == explicit resampling + scipy, on the same resample indices


@pytest.mark.parametrize("level", corr.LEVELS)
@pytest.mark.parametrize("coefficient", corr.COEFFICIENTS)
def test_bootstrap_matches_explicit_resampling(level, coefficient):
    frame = synthetic(n_docs=10, n_systems=5, seed=1, missing=0.1, nan_judge=0.05)
    idx = corr.bootstrap_indices(10, 40, random_state=7)
    fast = corr.bootstrap_distribution(corr.prepare_frame(frame), level=level, coefficient=coefficient, indices=idx)
    assert_same(fast, slow_bootstrap(frame, level, coefficient, idx))


@pytest.mark.parametrize("coefficient", corr.COEFFICIENTS)
def test_summary_bootstrap_counting_constant_documents_as_zero(coefficient):
    frame = synthetic(n_docs=10, n_systems=3, seed=2)
    frame.loc[frame.doc_id.isin(["d0", "d3"]), "judge"] = 3.0  # the judge rates every output of these alike
    p = corr.prepare_frame(frame)
    assert np.isnan(corr.per_document(p, coefficient)).any()
    idx = corr.bootstrap_indices(10, 30, random_state=1)
    fast = corr.bootstrap_distribution(p, level="summary", coefficient=coefficient, indices=idx, skip_constant=False)
    assert_same(fast, slow_bootstrap(frame, "summary", coefficient, idx, skip_constant=False))


@pytest.mark.parametrize("coefficient", ["spearman", "kendall"])
def test_dataset_bootstrap_many_distinct_values(coefficient, monkeypatch):
    """Continuous judge scores (G-Eval's probability-weighted scores): Spearman from item weights, Kendall from the
    table (still small here) and, with the table forbidden, the exact explicit path."""
    frame = synthetic(n_docs=8, n_systems=6, seed=4, continuous=True)
    idx = corr.bootstrap_indices(8, 25, random_state=3)
    slow = slow_bootstrap(frame, "dataset", coefficient, idx)
    p = corr.prepare_frame(frame)
    assert_same(corr.bootstrap_distribution(p, level="dataset", coefficient=coefficient, indices=idx), slow)
    monkeypatch.setattr(corr, "MAX_KENDALL_TABLE_CELLS", 0)
    assert not corr._table_fits(p)
    assert_same(corr.bootstrap_distribution(p, level="dataset", coefficient=coefficient, indices=idx), slow)


def test_table_coefficients_match_scipy_on_expanded_tables():
    rng = np.random.default_rng(5)
    T = rng.integers(0, 4, (6, 4, 5)).astype(float)
    for b in range(len(T)):
        kk, ll = np.nonzero(T[b])
        reps = T[b][kk, ll].astype(int)
        x, y = np.repeat(kk, reps), np.repeat(ll, reps)
        assert corr.kendall_from_tables(T[b:b + 1])[0] == pytest.approx(st.kendalltau(x, y).statistic, abs=1e-12)
        assert corr.spearman_from_tables(T[b:b + 1])[0] == pytest.approx(st.spearmanr(x, y).statistic, abs=1e-12)


def test_constant_resamples_are_undefined_and_counted():
    # Two documents; the second is constant on the judge side, so a resample drawing it twice is constant.
    frame = make_frame([("a1", "d1", "A", 1, 1), ("a2", "d1", "B", 2, 3), ("b1", "d2", "A", 3, 2),
                        ("b2", "d2", "B", 3, 1)])
    idx = np.array([[0, 1], [1, 1], [0, 0]])
    dist = corr.bootstrap_distribution(corr.prepare_frame(frame), level="dataset", coefficient="pearson", indices=idx)
    assert np.isnan(dist[1]) and not np.isnan(dist[0]) and not np.isnan(dist[2])
    r = correlate(frame, level="dataset", coefficient="pearson", n_resamples=200)
    assert r.undefined_resamples > 0


def test_ci_is_deterministic_and_row_order_free():
    frame = synthetic(n_docs=15, seed=6)
    a = correlate(frame, level="dataset", n_resamples=300, random_state=11)
    b = correlate(frame.sample(frac=1, random_state=0), level="dataset", n_resamples=300, random_state=11)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    c = correlate(frame, level="dataset", n_resamples=300, random_state=12)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)


def test_correlation_table_shape_and_agreement_with_correlate():
    frame = synthetic(n_docs=10, seed=8)
    t = correlation_table(frame, n_resamples=100)
    assert len(t) == 9 and set(t.level) == set(corr.LEVELS) and set(t.coefficient) == set(corr.COEFFICIENTS)
    row = t[(t.level == "summary") & (t.coefficient == "kendall")].iloc[0]
    one = correlate(frame, level="summary", coefficient="kendall", n_resamples=100)
    assert row.statistic == one.statistic and row.ci_low == one.ci_low and row.skipped == one.skipped


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="missing column"):
        correlate(TOY.drop(columns=["human"]))
    bad = TOY.copy()
    bad.loc[4, "human"] = float("nan")
    with pytest.raises(ValueError, match="human.*row 4"):
        correlate(bad)
    bad = TOY.copy().astype({"judge": object})
    bad.loc[2, "judge"] = "four"
    with pytest.raises(ValueError, match="judge.*row 2.*four"):
        correlate(bad)
    with pytest.raises(ValueError, match="unknown level"):
        correlate(TOY, level="corpus")
    with pytest.raises(ValueError, match="unknown coefficient"):
        correlate(TOY, coefficient="tau-a")


# ---------------------------------------------------------------------------------------------------------------------
# Properties

int_scores = hs.lists(hs.tuples(hs.integers(1, 5), hs.integers(1, 5)), min_size=12, max_size=12)


def frame_from_pairs(pairs, n_systems=4):
    return make_frame([(f"d{i // n_systems}/M{i % n_systems}", f"d{i // n_systems}", f"M{i % n_systems}",
                        float(j), float(h)) for i, (j, h) in enumerate(pairs)])


@settings(max_examples=30, deadline=None)
@given(int_scores, hs.sampled_from(["spearman", "kendall"]), hs.sampled_from(["dataset", "summary"]))
def test_rank_coefficients_invariant_to_increasing_transforms(pairs, coefficient, level):
    f = frame_from_pairs(pairs)
    g = f.assign(judge=np.exp(f.judge), human=f.human ** 3 + 2 * f.human)
    a = correlate(f, level=level, coefficient=coefficient, n_resamples=0)
    b = correlate(g, level=level, coefficient=coefficient, n_resamples=0)
    assert (math.isnan(a.statistic) and math.isnan(b.statistic)) or a.statistic == pytest.approx(b.statistic, abs=1e-12)
    assert a.skipped == b.skipped


@settings(max_examples=30, deadline=None)
@given(int_scores, hs.sampled_from(corr.COEFFICIENTS), hs.sampled_from(corr.LEVELS))
def test_swapping_judge_and_human_changes_nothing(pairs, coefficient, level):
    f = frame_from_pairs(pairs)
    g = f.assign(judge=f.human, human=f.judge)
    a = correlate(f, level=level, coefficient=coefficient, n_resamples=50)
    b = correlate(g, level=level, coefficient=coefficient, n_resamples=50)
    for x, y in ((a.statistic, b.statistic), (a.ci_low, b.ci_low), (a.ci_high, b.ci_high)):
        assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(hs.lists(hs.floats(-100, 100, allow_nan=False), min_size=3, max_size=30), hs.sampled_from(corr.COEFFICIENTS))
def test_correlation_with_itself_is_one(values, coefficient):
    if len(set(values)) < 2:
        values = values + [max(values) + 1.0]
    f = make_frame([(f"i{i}", f"d{i % 3}", f"M{i}", v, v) for i, v in enumerate(values)])
    assert correlate(f, coefficient=coefficient, n_resamples=0).statistic == pytest.approx(1.0, abs=1e-9)


@settings(max_examples=10, deadline=None)
@given(hs.integers(0, 10_000), hs.sampled_from(corr.COEFFICIENTS), hs.sampled_from(["dataset", "summary"]))
def test_ci_contains_point_estimate_on_typical_data(seed, coefficient, level):
    f = synthetic(n_docs=30, n_systems=6, seed=seed)
    r = correlate(f, level=level, coefficient=coefficient, n_resamples=300, random_state=seed)
    assert r.ci_low <= r.statistic <= r.ci_high
