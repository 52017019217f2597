"""Agreement among human annotators: Krippendorff's alpha and the human ceiling a judge can be held to.

``annotations`` is a Dataset's per-annotator table: item_id, dimension, annotator, group, value.
"""

from __future__ import annotations

from dataclasses import dataclass

import krippendorff
import numpy as np
import pandas as pd

from evalcore.meta.correlation import (
    CI_METHODS, COEFFICIENTS, LEVELS, _check_choice, bootstrap_interval, correlate, jackknife_values,
)

ALPHA_LEVELS = ("interval", "ordinal", "nominal", "ratio")


@dataclass(frozen=True)
class AlphaResult:
    alpha: float
    ci_low: float
    ci_high: float
    n_items: int
    n_annotators: int
    level_of_measurement: str
    n_resamples: int = 0
    confidence_level: float = 0.95
    ci_method: str = "bca"  # interval actually used: "bca", or "percentile" (asked for, or BCa's fallback)


def _select(annotations: pd.DataFrame, dimension, group) -> pd.DataFrame:
    need = ["item_id", "dimension", "annotator", "value"] + (["group"] if group is not None else [])
    missing = [c for c in need if c not in annotations.columns]
    if missing:
        raise ValueError(f"annotations: missing column(s) {missing}")
    a = annotations[annotations["dimension"] == dimension]
    if group is not None:
        a = a[a["group"] == group]
    if a.empty:
        what = f"dimension {dimension!r}" + (f", group {group!r}" if group is not None else "")
        raise ValueError(f"annotations: no ratings for {what}")
    value = pd.to_numeric(a["value"], errors="coerce")
    bad = value.isna() & a["value"].notna()
    if bad.any():
        row = a.index[bad.to_numpy()][0]
        raise ValueError(f"annotations: column 'value' row {row} holds {a['value'].loc[row]!r}, which is not a number")
    a = a.assign(value=value.astype(float))
    dup = a.duplicated(["item_id", "annotator"], keep=False)
    if dup.any():
        r = a[dup].iloc[0]
        raise ValueError(f"annotations: annotator {r['annotator']!r} rated item {r['item_id']!r} on {dimension!r} "
                         "more than once")
    return a


def reliability_matrix(annotations: pd.DataFrame, dimension, *, group=None) -> pd.DataFrame:
    """annotators x items table of ratings (NaN where an annotator did not rate an item)."""
    a = _select(annotations, dimension, group)
    return a.pivot(index="annotator", columns="item_id", values="value")


def krippendorff_alpha(annotations: pd.DataFrame, dimension, *, group=None, level_of_measurement: str = "interval",
                       n_resamples: int = 0, confidence_level: float = 0.95, random_state=0,
                       ci_method: str = "bca") -> AlphaResult:
    """Krippendorff's alpha (``krippendorff`` package) among the annotators of ``group`` (None = all) on one dimension.

    ``level_of_measurement``: "interval" (default; Likert means treated as numbers) or "ordinal" (only the order of
    the scale points matters), also "nominal"/"ratio". ``n_resamples`` > 0 adds a bootstrap interval over items
    (units, i.e. the reliability matrix's columns, resampled with replacement, the value domain held fixed): BCa by
    default (``ci_method="bca"``; Efron 1987, acceleration from the jackknife leaving out one item at a time, all
    through alpha_from_unit_weights; see evalcore.meta.correlation.bca_levels), or ``"percentile"``.
    """
    _check_choice(level_of_measurement, ALPHA_LEVELS, "level_of_measurement")
    _check_choice(ci_method, CI_METHODS, "ci_method")
    m = reliability_matrix(annotations, dimension, group=group)
    data = m.to_numpy(dtype=float)
    domain = np.unique(data[~np.isnan(data)])
    pairable = (~np.isnan(data)).sum(axis=0) >= 2  # items rated by one annotator carry no agreement information
    if domain.size < 2 or pairable.sum() < 1:
        alpha = float("nan")
    else:
        alpha = float(krippendorff.alpha(reliability_data=data, value_domain=domain,
                                         level_of_measurement=level_of_measurement))
    lo = hi = float("nan")
    used_method = ci_method
    if n_resamples > 0 and not np.isnan(alpha):
        rng = np.random.default_rng(random_state)
        k = data.shape[1]
        weights = np.stack([np.bincount(rng.integers(0, k, size=k), minlength=k) for _ in range(n_resamples)])
        boot = alpha_from_unit_weights(data, domain, weights, level_of_measurement)
        # The jackknife over the same unit as the bootstrap (items): each leave-one-out replicate is a weight row
        # with one item at 0. Items rated once leave alpha unchanged; they are jackknifed like the others.
        jack = (jackknife_values(k, lambda w: alpha_from_unit_weights(data, domain, w, level_of_measurement))
                if ci_method == "bca" else None)
        lo, hi, _, used_method = bootstrap_interval(boot, confidence_level=confidence_level, method=ci_method,
                                                    estimate=alpha, jackknife=jack)
    return AlphaResult(alpha=alpha, ci_low=lo, ci_high=hi, n_items=int(pairable.sum()), n_annotators=int(data.shape[0]),
                       level_of_measurement=level_of_measurement, n_resamples=int(n_resamples),
                       confidence_level=float(confidence_level), ci_method=used_method)


def alpha_from_unit_weights(data: np.ndarray, domain: np.ndarray, weights: np.ndarray,
                            level_of_measurement: str) -> np.ndarray:
    """Krippendorff's alpha for many resamples of units at once.

    Why by hand: the bootstrap needs ~1,000 alphas per dimension and the package computes one at a time (about 13 s
    for SummEval's Data page). Alpha is a function of the coincidence matrix o_ck, which is a SUM over units of
    (n_uc n_uk - [c=k] n_uc) / (m_u - 1) (Krippendorff 2011, "Computing Krippendorff's alpha-reliability", eq. for
    o_ck). A resample of units with multiplicities w is therefore w @ per-unit coincidences, for all resamples in one
    matrix product; alpha = 1 - (n - 1) sum(o * delta) / sum(n_c n_k delta) with the metric delta of the level.
    Checked against ``krippendorff.alpha`` on every resample in tests/test_meta_agreement.py.

    data: annotators x units; domain: the sorted value domain; weights: resamples x units (counts).
    Returns one alpha per resample (NaN where it is undefined: a resample with a single observed value).
    """
    values = np.asarray(domain, dtype=float)
    v = values.size
    idx = np.searchsorted(values, data)
    counts = np.zeros((data.shape[1], v))
    for row_idx, row in zip(idx, data):
        ok = ~np.isnan(row)
        np.add.at(counts, (np.nonzero(ok)[0], row_idx[ok]), 1.0)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m, w = counts[pairable], m[pairable], np.asarray(weights, dtype=float)[:, pairable]
    per_unit = (counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(v)[None]) / (m - 1)[:, None, None]
    o = (w @ per_unit.reshape(len(m), v * v)).reshape(-1, v, v)  # resamples x v x v
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    c, k = np.meshgrid(values, values, indexing="ij")
    if level_of_measurement == "interval":
        delta = np.broadcast_to((c - k) ** 2, o.shape)
    elif level_of_measurement == "nominal":
        delta = np.broadcast_to((c != k).astype(float), o.shape)
    elif level_of_measurement == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(c + k == 0, 0.0, ((c - k) / (c + k)) ** 2)
        delta = np.broadcast_to(r, o.shape)
    else:  # ordinal: (sum of n_g from c to k - (n_c + n_k) / 2) ** 2, which depends on each resample's marginals
        cum = np.cumsum(n_c, axis=1)
        lo_i, hi_i = np.minimum(*np.meshgrid(np.arange(v), np.arange(v), indexing="ij")), \
            np.maximum(*np.meshgrid(np.arange(v), np.arange(v), indexing="ij"))
        between = cum[:, hi_i] - cum[:, lo_i] + n_c[:, lo_i]
        delta = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2) ** 2
    observed = (o * delta).sum(axis=(1, 2))
    expected = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    alpha[(n_c > 0).sum(axis=1) < 2] = np.nan
    return alpha


HUMAN_CEILING_COLUMNS = ["annotator", "statistic", "ci_low", "ci_high", "pvalue", "n", "skipped", "n_items", "level",
                         "coefficient"]


def human_ceiling(annotations: pd.DataFrame, items: pd.DataFrame, dimension, *, group="expert",
                  level: str = "dataset", coefficient: str = "spearman", n_resamples: int = 0,
                  skip_constant: bool = True, random_state=0) -> pd.DataFrame:
    """How well one annotator agrees with the others: the ceiling to hold a judge to.

    Each annotator of ``group`` (None = everyone) plays the judge against the mean of the OTHER annotators of the
    group on the items they both cover, with the same level and coefficient as the judge's correlation (see
    evalcore.meta.correlation.correlate). Returns one row per annotator and a final "mean" row (the mean of the
    annotators' statistics; its other numeric columns are NaN except n_items). ``n_resamples`` > 0 adds document
    bootstrap intervals to the annotator rows.
    """
    _check_choice(level, LEVELS, "level")
    _check_choice(coefficient, COEFFICIENTS, "coefficient")
    missing = [c for c in ("item_id", "doc_id", "system_id") if c not in items.columns]
    if missing:
        raise ValueError(f"items: missing column(s) {missing}")
    m = reliability_matrix(annotations, dimension, group=group)
    if m.shape[0] < 2:
        raise ValueError(f"human_ceiling needs at least 2 annotators in group {group!r} on {dimension!r}; "
                         f"found {m.shape[0]}")
    info = items.set_index("item_id")[["doc_id", "system_id"]]
    unknown = m.columns.difference(info.index)
    if len(unknown):
        raise ValueError(f"annotations: item {unknown[0]!r} is not in the items table")
    data = m.to_numpy(dtype=float)
    totals = np.nansum(data, axis=0)
    counts = (~np.isnan(data)).sum(axis=0)
    rows = []
    for i, annotator in enumerate(m.index):
        own = data[i]
        has_own = ~np.isnan(own)
        others_n = counts - has_own
        ok = has_own & (others_n > 0)
        others_mean = (totals - np.where(has_own, own, 0.0))[ok] / others_n[ok]
        ids = m.columns[ok]
        frame = pd.DataFrame({"item_id": ids, "doc_id": info.loc[ids, "doc_id"].to_numpy(),
                              "system_id": info.loc[ids, "system_id"].to_numpy(), "judge": own[ok],
                              "human": others_mean})
        res = correlate(frame, level=level, coefficient=coefficient, n_resamples=n_resamples,
                        skip_constant=skip_constant, random_state=random_state)
        rows.append({"annotator": annotator, "statistic": res.statistic, "ci_low": res.ci_low, "ci_high": res.ci_high,
                     "pvalue": res.pvalue, "n": res.n, "skipped": res.skipped, "n_items": int(ok.sum()),
                     "level": level, "coefficient": coefficient})
    stats = np.array([r["statistic"] for r in rows], dtype=float)
    rows.append({"annotator": "mean", "statistic": float(np.nanmean(stats)) if np.isfinite(stats).any() else np.nan,
                 "ci_low": np.nan, "ci_high": np.nan, "pvalue": np.nan, "n": np.nan, "skipped": np.nan,
                 "n_items": int(max(r["n_items"] for r in rows)), "level": level, "coefficient": coefficient})
    return pd.DataFrame(rows, columns=HUMAN_CEILING_COLUMNS)
