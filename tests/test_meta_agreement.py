"""evalcore.meta.agreement: Krippendorff's alpha against a from-the-definition computation, and the human ceiling."""

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from evalcore.meta import human_ceiling, krippendorff_alpha


def annotations_table(values: np.ndarray, group="expert", dimension="coherence") -> pd.DataFrame:
    """values: annotators x items (NaN = not rated)."""
    rows = []
    for a, i in itertools.product(range(values.shape[0]), range(values.shape[1])):
        if not np.isnan(values[a, i]):
            rows.append({"item_id": f"d{i // 4}/M{i % 4}", "dimension": dimension, "annotator": f"e{a + 1}",
                         "group": group, "value": values[a, i]})
    return pd.DataFrame(rows)


def interval_alpha_by_definition(values: np.ndarray) -> float:
    """Krippendorff's alpha, interval metric, from pairable values: 1 - D_o / D_e with
    D_o = sum_u sum_{i != j in u} (v_i - v_j)^2 / (m_u - 1) / n and D_e = sum_{i != j} (v_i - v_j)^2 / (n (n - 1))."""
    units = [col[~np.isnan(col)] for col in values.T]
    units = [u for u in units if len(u) >= 2]
    pooled = np.concatenate(units)
    n = len(pooled)
    d_o = sum(((u[:, None] - u[None, :]) ** 2).sum() / (len(u) - 1) for u in units) / n
    d_e = ((pooled[:, None] - pooled[None, :]) ** 2).sum() / (n * (n - 1))
    return 1 - d_o / d_e


RNG = np.random.default_rng(0)
TRUE = RNG.integers(1, 6, 24).astype(float)
VALUES = np.clip(TRUE[None, :] + RNG.integers(-1, 2, (3, 24)), 1, 5)
VALUES[2, 5] = np.nan  # one missing rating
VALUES[1, 7] = np.nan
VALUES[2, 7] = np.nan  # item 7 rated once: not pairable


def test_alpha_interval_matches_definition():
    r = krippendorff_alpha(annotations_table(VALUES), "coherence")
    assert r.statistic == pytest.approx(interval_alpha_by_definition(VALUES), abs=1e-12)
    assert (r.n, r.n_annotators) == (23, 3)


def test_alpha_perfect_agreement_and_group_filter():
    same = np.tile(TRUE, (3, 1))
    table = pd.concat([annotations_table(same), annotations_table(VALUES, group="crowd")])
    assert krippendorff_alpha(table, "coherence", group="expert").statistic == pytest.approx(1.0)
    assert krippendorff_alpha(table, "coherence", group="crowd").statistic < 1.0
    assert krippendorff_alpha(table, "coherence", group="expert", level_of_measurement="ordinal").statistic == \
        pytest.approx(1.0)
    with pytest.raises(ValueError, match="no ratings"):
        krippendorff_alpha(table, "fluency")


def test_alpha_bootstrap_interval():
    r = krippendorff_alpha(annotations_table(VALUES), "coherence", n_resamples=200, random_state=1)
    assert r.ci_low <= r.statistic <= r.ci_high and r.ci_low < r.ci_high
    again = krippendorff_alpha(annotations_table(VALUES), "coherence", n_resamples=200, random_state=1)
    assert (again.ci_low, again.ci_high) == (r.ci_low, r.ci_high)


def test_human_ceiling_each_annotator_against_the_others():
    ann = annotations_table(VALUES)
    items = pd.DataFrame({"item_id": [f"d{i // 4}/M{i % 4}" for i in range(24)],
                          "doc_id": [f"d{i // 4}" for i in range(24)], "system_id": [f"M{i % 4}" for i in range(24)]})
    t = human_ceiling(ann, items, "coherence", level="dataset", coefficient="spearman")
    assert list(t.annotator) == ["e1", "e2", "e3", "mean"]
    # e1 against the mean of e2 and e3 (or the one of them who rated the item)
    rated = ~np.isnan(VALUES[1:])
    others = np.where(rated, VALUES[1:], 0).sum(axis=0) / np.maximum(rated.sum(axis=0), 1)
    ok = rated.any(axis=0) & ~np.isnan(VALUES[0])
    assert t.statistic[0] == pytest.approx(st.spearmanr(VALUES[0, ok], others[ok]).statistic)
    assert t.n_items[0] == ok.sum()
    assert t.statistic.iloc[-1] == pytest.approx(t.statistic.iloc[:3].mean())
    s = human_ceiling(ann, items, "coherence", level="system", coefficient="kendall")
    assert set(s.level) == {"system"} and s.n[0] == 4


@pytest.mark.parametrize("level", ["interval", "ordinal", "nominal", "ratio"])
def test_vectorised_bootstrap_alpha_equals_the_package_on_every_resample(level):
    # second method: krippendorff.alpha on each explicitly resampled reliability matrix
    import krippendorff
    import numpy as np

    from evalcore.meta.agreement import alpha_from_unit_weights

    rng = np.random.default_rng(7)
    data = rng.integers(1, 6, size=(4, 30)).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan  # missing ratings
    domain = np.unique(data[~np.isnan(data)])
    picks = [rng.integers(0, 30, size=30) for _ in range(25)]
    weights = np.stack([np.bincount(p, minlength=30) for p in picks])
    fast = alpha_from_unit_weights(data, domain, weights, level)
    for p, a in zip(picks, fast):
        slow = krippendorff.alpha(reliability_data=data[:, p], value_domain=domain, level_of_measurement=level)
        assert a == pytest.approx(slow, abs=1e-9)
    # the unresampled weights give the point estimate
    ones = np.ones((1, 30))
    assert alpha_from_unit_weights(data, domain, ones, level)[0] == pytest.approx(
        krippendorff.alpha(reliability_data=data, value_domain=domain, level_of_measurement=level), abs=1e-9)


def test_alpha_bca_interval_equals_scipy_bootstrap():
    """scipy.stats.bootstrap(method="BCa") resampling items (the columns) with krippendorff.alpha on each explicit
    resample and on each leave-one-item-out matrix; our vectorised BCa on the resamples scipy drew."""
    import krippendorff

    from evalcore.meta.agreement import alpha_from_unit_weights
    from evalcore.meta.correlation import bootstrap_interval, jackknife_values

    data = VALUES.copy()
    domain = np.unique(data[~np.isnan(data)])
    k = data.shape[1]
    drawn = []

    def package_alpha(cols):
        return krippendorff.alpha(reliability_data=data[:, cols], value_domain=domain,
                                  level_of_measurement="interval")

    def statistic(idx, axis=-1):
        if np.ndim(idx) == 1:
            return package_alpha(idx)
        if idx.shape[-1] == k:
            drawn.append(np.array(idx))
        return np.array([package_alpha(row) for row in idx])

    ci = st.bootstrap((np.arange(k),), statistic, vectorized=True, n_resamples=150, method="BCa",
                      random_state=np.random.default_rng(4)).confidence_interval
    weights = np.stack([np.bincount(row, minlength=k) for row in np.concatenate(drawn)])
    boot = alpha_from_unit_weights(data, domain, weights, "interval")
    jack = jackknife_values(k, lambda w: alpha_from_unit_weights(data, domain, w, "interval"))
    estimate = krippendorff_alpha(annotations_table(VALUES), "coherence").statistic
    lo, hi, _, method = bootstrap_interval(boot, confidence_level=0.95, estimate=estimate, jackknife=jack)
    assert method == "bca"
    assert (lo, hi) == (pytest.approx(ci.low, abs=1e-9), pytest.approx(ci.high, abs=1e-9))


def test_alpha_interval_method_is_recorded():
    bca = krippendorff_alpha(annotations_table(VALUES), "coherence", n_resamples=200, random_state=1)
    pct = krippendorff_alpha(annotations_table(VALUES), "coherence", n_resamples=200, random_state=1,
                             ci_method="percentile")
    assert (bca.method, pct.method) == ("bca", "percentile")
    assert bca.statistic == pct.statistic and (bca.ci_low, bca.ci_high) != (pct.ci_low, pct.ci_high)
    same = np.tile(TRUE, (3, 1))  # perfect agreement on every resample: BCa undefined, recorded fallback
    perfect = krippendorff_alpha(annotations_table(same), "coherence", n_resamples=50)
    assert perfect.method == "percentile" and perfect.ci_low == perfect.ci_high == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------------------------------
# The coincidence-matrix engine (rating patterns) against the krippendorff package


from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as hst  # noqa: E402

from evalcore.meta.agreement import (  # noqa: E402
    alpha_from_pattern_weights, alpha_from_unit_weights, jackknife_pattern_alphas, rating_patterns,
)

LEVEL_NAMES = ("interval", "ordinal", "nominal", "ratio")


def package_alpha(data: np.ndarray, domain: np.ndarray, level: str) -> float:
    """krippendorff.alpha, NaN where alpha is undefined (fewer than two values among the pairable ratings)."""
    import krippendorff

    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    seen = np.unique(data[:, pairable][~np.isnan(data[:, pairable])])
    if seen.size < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=data, value_domain=domain, level_of_measurement=level))


@hst.composite
def rating_matrices(draw):
    """annotators x units with missing ratings; values from a 1-5 scale, or many distinct positive decimals."""
    a = draw(hst.integers(2, 5))
    u = draw(hst.integers(1, 14))
    if draw(hst.booleans()):
        cells = hst.one_of(hst.none(), hst.integers(1, 5).map(float))
    else:
        cells = hst.one_of(hst.none(), hst.floats(0.5, 100.0, allow_nan=False).map(lambda x: round(x, 2)))
    flat = draw(hst.lists(cells, min_size=a * u, max_size=a * u))
    return np.array([np.nan if x is None else x for x in flat], dtype=float).reshape(a, u)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=rating_matrices(), level=hst.sampled_from(LEVEL_NAMES), seed=hst.integers(0, 2**31))
@example(data=np.array([[1.0, 5.0, np.nan, np.nan], [np.nan, 5.0, np.nan, np.nan], [1.0, np.nan, np.nan, np.nan],
                        [np.nan, 5.0, np.nan, np.nan]]), level="interval", seed=0)  # a resample of one value: NaN
def test_pattern_alpha_equals_the_package_point_and_resample(data, level, seed):
    domain = np.unique(data[~np.isnan(data)])
    if domain.size < 2:
        return
    pat = rating_patterns(data, domain)
    point = alpha_from_pattern_weights(pat, pat.multiplicity[None, :], level)[0] if pat.n_patterns else np.nan
    expected = package_alpha(data, domain, level)
    assert np.isnan(point) == np.isnan(expected)
    if not np.isnan(expected):
        assert point == pytest.approx(expected, abs=1e-9)
    # one bootstrap resample of the units, explicit for the package, as unit weights for us
    k = data.shape[1]
    pick = np.random.default_rng(seed).integers(0, k, size=k)
    fast = alpha_from_unit_weights(data, domain, np.bincount(pick, minlength=k)[None, :], level)[0]
    slow = package_alpha(data[:, pick], domain, level)
    assert np.isnan(fast) == np.isnan(slow)
    if not np.isnan(slow):
        assert fast == pytest.approx(slow, abs=1e-9)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=rating_matrices(), level=hst.sampled_from(LEVEL_NAMES))
def test_jackknife_pattern_alphas_equal_the_package_leaving_each_item_out(data, level):
    domain = np.unique(data[~np.isnan(data)])
    if domain.size < 2:
        return
    pat = rating_patterns(data, domain)
    jack = jackknife_pattern_alphas(pat, level)
    assert len(jack) == pat.n_patterns
    for unit in range(data.shape[1]):
        p = pat.of_unit[unit]
        if p < 0:
            continue
        slow = package_alpha(np.delete(data, unit, axis=1), domain, level)
        assert np.isnan(jack[p]) == np.isnan(slow)
        if not np.isnan(slow):
            assert jack[p] == pytest.approx(slow, abs=1e-9)


def fixed_case() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    true = rng.integers(1, 6, 60)
    vals = np.clip(true[None, :] + rng.integers(-1, 2, (3, 60)), 1, 5).astype(float)
    vals[rng.random(vals.shape) < 0.15] = np.nan
    a, i = np.nonzero(~np.isnan(vals))
    return pd.DataFrame({"item_id": [f"i{j:03d}" for j in i], "dimension": "coh", "annotator": [f"a{x}" for x in a],
                         "group": "g", "value": vals[a, i]})


# (alpha, ci_low, ci_high) from the previous implementation (krippendorff.alpha for the estimate, a dense per-unit
# coincidence tensor for each resample and for the k x k jackknife), n_resamples=300, random_state=5.
OLD_IMPLEMENTATION = {
    ("interval", "bca"): (0.7278327119468309, 0.6440684330833232, 0.8103980963639553),
    ("interval", "percentile"): (0.7278327119468309, 0.6153756377161361, 0.8028826539670749),
    ("ordinal", "bca"): (0.722592176975573, 0.6186390600179027, 0.8034511951785686),
    ("ordinal", "percentile"): (0.722592176975573, 0.6076321641659026, 0.7879038763753461),
    ("nominal", "bca"): (0.3018065887353879, 0.2111603734941888, 0.4335995876266484),
    ("nominal", "percentile"): (0.3018065887353879, 0.18907992792702583, 0.41137301083029937),
    ("ratio", "bca"): (0.7032347035975137, 0.58626133697256, 0.808420561899392),
    ("ratio", "percentile"): (0.7032347035975137, 0.5711157384110452, 0.8004051951278152),
}


@pytest.mark.parametrize("level,method", sorted(OLD_IMPLEMENTATION))
def test_same_seed_same_interval_as_the_previous_implementation(level, method):
    r = krippendorff_alpha(fixed_case(), "coh", level_of_measurement=level, n_resamples=300, random_state=5,
                           ci_method=method)
    assert (r.statistic, r.ci_low, r.ci_high) == pytest.approx(OLD_IMPLEMENTATION[level, method], abs=1e-12)
    assert r.method == method and r.n == 56


def test_continuous_ratings_interval_alpha_and_its_interval_are_exact():
    """Many distinct values (no binning): the estimate against the package, the interval against the package on
    each resample drawn with the same seed."""
    from evalcore.meta.correlation import bootstrap_interval
    from evalcore.meta.resampling import bootstrap_indices

    rng = np.random.default_rng(3)
    true = rng.normal(50, 10, 40)
    vals = np.round(true[None, :] + rng.normal(0, 5, (3, 40)), 3)
    vals[rng.random(vals.shape) < 0.1] = np.nan
    table = annotations_table(vals)
    r = krippendorff_alpha(table, "coherence", n_resamples=60, random_state=9, ci_method="percentile")
    data = reliability_from(table)
    domain = np.unique(data[~np.isnan(data)])
    assert domain.size > 90
    assert r.statistic == pytest.approx(package_alpha(data, domain, "interval"), abs=1e-9)
    slow = np.array([package_alpha(data[:, idx], domain, "interval")
                     for idx in bootstrap_indices(data.shape[1], 60, random_state=9)])
    lo, hi, _, _ = bootstrap_interval(slow, confidence_level=0.95, method="percentile")
    assert (r.ci_low, r.ci_high) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))


def reliability_from(table: pd.DataFrame) -> np.ndarray:
    from evalcore.meta.agreement import reliability_matrix

    return reliability_matrix(table, "coherence").to_numpy(dtype=float)


def test_rating_patterns_group_units_by_their_multiset():
    data = np.array([[1, 2, np.nan, 3, 1], [2, 1, 4, np.nan, 1], [np.nan, np.nan, np.nan, 3, 1.0]])
    pat = rating_patterns(data, np.array([1.0, 2.0, 3.0, 4.0]))
    assert pat.of_unit[0] == pat.of_unit[1] and pat.of_unit[2] == -1  # {1, 2} twice; item 2 rated once
    assert pat.n_patterns == 3 and sorted(pat.multiplicity) == [1.0, 1.0, 2.0]
    assert pat.m[pat.of_unit[4]] == 3 and pat.counts[pat.of_unit[4]].toarray().tolist() == [[3, 0, 0, 0]]
    with pytest.raises(ValueError, match="not in the value domain"):
        rating_patterns(data, np.array([1.0, 2.0]))


@pytest.mark.parametrize("level", LEVEL_NAMES)
def test_jackknife_replicate_left_with_one_value_is_undefined(level):
    data = np.array([[1, 1, 1, 3.0], [1, 1, 2, np.nan]])  # leaving item 2 out leaves only 1s among pairable items
    pat = rating_patterns(data, np.array([1.0, 2.0, 3.0]))
    jack = jackknife_pattern_alphas(pat, level)
    assert np.isnan(jack[pat.of_unit[2]]) and np.isnan(package_alpha(np.delete(data, 2, axis=1), pat.values, level))
    assert jack[pat.of_unit[0]] == pytest.approx(package_alpha(np.delete(data, 0, axis=1), pat.values, level),
                                                 abs=1e-9)


def test_many_annotators_patterns_beyond_the_integer_key():
    """30 annotators on 1-5: (v + 1)^30 overflows one int64 key, so patterns are found row-wise; same alphas."""
    rng = np.random.default_rng(5)
    data = np.clip(rng.integers(1, 6, 12)[None, :] + rng.integers(-1, 2, (30, 12)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.4] = np.nan
    domain = np.unique(data[~np.isnan(data)])
    pat = rating_patterns(data, domain)
    assert pat.n_patterns == (np.sum(~np.isnan(data), axis=0) >= 2).sum()  # all distinct here
    for level in LEVEL_NAMES:
        got = alpha_from_pattern_weights(pat, pat.multiplicity[None, :], level)[0]
        assert got == pytest.approx(package_alpha(data, domain, level), abs=1e-9)
