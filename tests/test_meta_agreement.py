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
    assert r.alpha == pytest.approx(interval_alpha_by_definition(VALUES), abs=1e-12)
    assert (r.n_items, r.n_annotators, r.level_of_measurement) == (23, 3, "interval")


def test_alpha_perfect_agreement_and_group_filter():
    same = np.tile(TRUE, (3, 1))
    table = pd.concat([annotations_table(same), annotations_table(VALUES, group="crowd")])
    assert krippendorff_alpha(table, "coherence", group="expert").alpha == pytest.approx(1.0)
    assert krippendorff_alpha(table, "coherence", group="crowd").alpha < 1.0
    assert krippendorff_alpha(table, "coherence", group="expert", level_of_measurement="ordinal").alpha == \
        pytest.approx(1.0)
    with pytest.raises(ValueError, match="no ratings"):
        krippendorff_alpha(table, "fluency")


def test_alpha_bootstrap_interval():
    r = krippendorff_alpha(annotations_table(VALUES), "coherence", n_resamples=200, random_state=1)
    assert r.ci_low <= r.alpha <= r.ci_high and r.ci_low < r.ci_high
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
    estimate = krippendorff_alpha(annotations_table(VALUES), "coherence").alpha
    lo, hi, _, method = bootstrap_interval(boot, confidence_level=0.95, estimate=estimate, jackknife=jack)
    assert method == "bca"
    assert (lo, hi) == (pytest.approx(ci.low, abs=1e-9), pytest.approx(ci.high, abs=1e-9))


def test_alpha_interval_method_is_recorded():
    bca = krippendorff_alpha(annotations_table(VALUES), "coherence", n_resamples=200, random_state=1)
    pct = krippendorff_alpha(annotations_table(VALUES), "coherence", n_resamples=200, random_state=1,
                             ci_method="percentile")
    assert (bca.ci_method, pct.ci_method) == ("bca", "percentile")
    assert bca.alpha == pct.alpha and (bca.ci_low, bca.ci_high) != (pct.ci_low, pct.ci_high)
    same = np.tile(TRUE, (3, 1))  # perfect agreement on every resample: BCa undefined, recorded fallback
    perfect = krippendorff_alpha(annotations_table(same), "coherence", n_resamples=50)
    assert perfect.ci_method == "percentile" and perfect.ci_low == perfect.ci_high == pytest.approx(1.0)
