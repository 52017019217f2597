"""Agreement among human annotators: Krippendorff's alpha and the human ceiling a judge can be held to.

``annotations`` is a Dataset's per-annotator table: item_id, dimension, annotator, group, value.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from evalcore.meta.arrays import BoolArray, FloatArray, IntArray, Seed
from evalcore.meta.coefficients import COEFFICIENTS
from evalcore.meta.correlation import LEVELS, correlate
from evalcore.meta.intervals import CI_METHODS, bootstrap_interval
from evalcore.meta.resampling import BLOCK_CELLS, bootstrap_group_counts
from evalcore.meta.results import Estimate
from evalcore.meta.validation import check_choice

ALPHA_LEVELS = ("interval", "ordinal", "nominal", "ratio")


def _select(annotations: pd.DataFrame, dimension: str, group: str | None) -> pd.DataFrame:
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


def reliability_matrix(annotations: pd.DataFrame, dimension: str, *, group: str | None = None) -> pd.DataFrame:
    """annotators x items table of ratings (NaN where an annotator did not rate an item)."""
    a = _select(annotations, dimension, group)
    return a.pivot(index="annotator", columns="item_id", values="value")


def krippendorff_alpha(annotations: pd.DataFrame, dimension: str, *, group: str | None = None,
                       level_of_measurement: str = "interval",
                       n_resamples: int = 0, confidence_level: float = 0.95, random_state: Seed = 0,
                       ci_method: str = "bca") -> Estimate:
    """Krippendorff's alpha among the annotators of ``group`` (None = all) on one dimension, as an Estimate: ``n``
    counts the pairable items (rated at least twice), ``n_annotators`` the annotators, ``method`` the interval used
    ("bca", or "percentile": asked for, or BCa's fallback; the method asked for when there is no interval).

    ``level_of_measurement``: "interval" (default; Likert means treated as numbers) or "ordinal" (only the order of
    the scale points matters), also "nominal"/"ratio". ``n_resamples`` > 0 adds a bootstrap interval over items
    (units, i.e. the reliability matrix's columns, resampled with replacement, the value domain held fixed): BCa by
    default (``ci_method="bca"``; Efron 1987, acceleration from the jackknife leaving out one item at a time; see
    evalcore.meta.intervals.bca_levels), or ``"percentile"``.

    The estimate, every resample and every jackknife replicate come from the coincidence matrix summed over
    ``rating_patterns`` (alpha_from_pattern_weights), so the cost is linear in the number of items; the
    ``krippendorff`` package is the reference the tests hold every one of them to (1e-9).
    """
    check_choice(level_of_measurement, ALPHA_LEVELS, "level_of_measurement")
    check_choice(ci_method, CI_METHODS, "ci_method")
    m = reliability_matrix(annotations, dimension, group=group)
    data = m.to_numpy(dtype=float)
    domain = np.unique(data[~np.isnan(data)])
    pat = rating_patterns(data, domain)
    if domain.size < 2 or pat.n_patterns < 1:  # items rated by one annotator carry no agreement information
        alpha = float("nan")
    else:
        alpha = float(alpha_from_pattern_weights(pat, pat.multiplicity[None, :], level_of_measurement)[0])
    lo = hi = float("nan")
    used_method = ci_method
    if n_resamples > 0 and not np.isnan(alpha):
        # The same draws as bootstrap_indices(n_items, n_resamples, random_state), counted per pattern.
        weights = bootstrap_group_counts(pat.of_unit, pat.n_patterns, n_resamples, random_state)
        boot = alpha_from_pattern_weights(pat, weights, level_of_measurement)
        # The jackknife over the same unit as the bootstrap (items). Items rated once leave alpha unchanged; they
        # are jackknifed like the others.
        jack = None
        if ci_method == "bca":
            per_pattern = jackknife_pattern_alphas(pat, level_of_measurement)
            jack = np.where(pat.of_unit >= 0, per_pattern[np.maximum(pat.of_unit, 0)] if len(per_pattern) else alpha,
                            alpha)
        lo, hi, _, used_method = bootstrap_interval(boot, confidence_level=confidence_level, method=ci_method,
                                                    estimate=alpha, jackknife=jack)
    return Estimate(statistic=alpha, ci_low=lo, ci_high=hi, n=int((pat.of_unit >= 0).sum()), method=used_method,
                    n_annotators=int(data.shape[0]), n_resamples=int(n_resamples),
                    confidence_level=float(confidence_level), resampling="items" if n_resamples > 0 else "")


# --------------------------------------------------------------------------------------------------------------------
# Alpha from the coincidence matrix, for many weightings of the units at once
#
# Krippendorff (2011, "Computing Krippendorff's alpha-reliability") writes alpha = 1 - (n - 1) sum_ck o_ck delta_ck
# / sum_ck n_c n_k delta_ck, where the coincidence matrix o_ck is a SUM over units u of (n_uc n_uk - [c=k] n_uc) /
# (m_u - 1) (n_uc: how many of unit u's m_u pairable values are c) and n_c = sum_k o_ck = sum_u n_uc. A resample of
# units with multiplicities w is therefore a weighted sum of per-unit terms, and units with the same multiset of
# ratings (a "pattern": on a 1-5 scale with 3 annotators there are at most 50) have the same terms. Everything below
# works on patterns, with the terms each level needs:
# - interval (delta = (c - k)^2): the disagreement within a unit is 2 m_u sum_i (x_i - mean_u)^2 / (m_u - 1) and
#   the expected one is 2 (n sum_c n_c c^2 - (sum_c n_c c)^2), i.e. sums of powers of the values, whatever the number of distinct
#   values (continuous ratings included: no binning);
# - nominal and ratio: delta is fixed, so each pattern's observed disagreement is one number and the expected one
#   is a quadratic form of the resample's value counts N_c;
# - ordinal: delta_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 = (M_k - M_c)^2 with M_c = cumsum(N)_c - N_c / 2 (the
#   value's mid-rank), which depends on the resample's counts: interval on the mid-rank scale of each resample.
# The krippendorff package is the reference (tests/test_meta_agreement.py: every resample, every level).


@dataclass(frozen=True)
class RatingPatterns:
    """The pairable units (items rated at least twice) of a reliability matrix, grouped by multiset of ratings."""

    values: FloatArray        # the value domain, sorted (v,)
    counts: sp.csr_matrix     # patterns x v: n_pc, how many of a unit's ratings are value c
    m: FloatArray             # patterns: pairable ratings per unit (>= 2)
    multiplicity: FloatArray  # patterns: how many units of the data have the pattern
    of_unit: IntArray         # units (columns of the data): pattern code, -1 for a unit rated fewer than twice

    @property
    def n_patterns(self) -> int:
        return len(self.m)


def rating_patterns(data: FloatArray, domain: FloatArray) -> RatingPatterns:
    """Group the columns (units) of ``data`` (annotators x units, NaN = not rated) by their multiset of ratings."""
    values = np.asarray(domain, dtype=float)
    data = np.asarray(data, dtype=float)
    v = values.size
    rated = ~np.isnan(data)
    code = np.full(data.shape, v, dtype=np.int64)  # v = not rated (sorts last)
    if v:
        pos = np.minimum(np.searchsorted(values, data[rated]), v - 1)
        if not np.array_equal(values[pos], data[rated]):
            raise ValueError("rating_patterns: a rating is not in the value domain")
        code[rated] = pos
    elif rated.any():
        raise ValueError("rating_patterns: ratings but an empty value domain")
    n_units, n_annotators = data.shape[1], data.shape[0]
    pairable = rated.sum(axis=0) >= 2
    of_unit = np.full(n_units, -1, dtype=np.int64)
    units = np.sort(code.T[pairable], axis=1)
    if len(units):
        if float(v + 1) ** n_annotators < 2.0 ** 62:  # one integer per sorted row: a 1-D unique, much faster
            key = units @ ((v + 1) ** np.arange(n_annotators, dtype=np.int64))
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            patterns = units[first]
        else:
            patterns, inverse = np.unique(units, axis=0, return_inverse=True)
        of_unit[pairable] = np.asarray(inverse).ravel()
    else:
        patterns = np.empty((0, n_annotators), dtype=np.int64)
    n_pat = len(patterns)
    rows = np.repeat(np.arange(n_pat), n_annotators)
    cols = patterns.ravel()
    keep = cols < v
    counts = sp.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])), shape=(n_pat, v))
    counts.sum_duplicates()
    counts.sort_indices()
    m = np.asarray(counts.sum(axis=1), dtype=float).ravel()
    multiplicity = np.bincount(of_unit[pairable], minlength=n_pat).astype(float)
    return RatingPatterns(values=values, counts=counts, m=m, multiplicity=multiplicity, of_unit=of_unit)


@dataclass(frozen=True)
class _PatternTerms:
    """What a level needs of each pattern, independent of the weights."""

    observed: FloatArray | None  # per pattern: sum_ck o_ck delta_ck of one unit (None: ordinal, depends on weights)
    s1: FloatArray | None = None  # interval: sum of a unit's centred values
    s2: FloatArray | None = None  # interval: sum of their squares
    delta: FloatArray | None = None  # ratio: the v x v metric (nominal's 1 - [c = k] is used in closed form)

    def term(self, name: str) -> FloatArray:
        """A term the level computed (ValueError for one it has none of: a caller asking the wrong level)."""
        value = {"observed": self.observed, "s1": self.s1, "s2": self.s2, "delta": self.delta}[name]
        if value is None:
            raise ValueError(f"the {name!r} term is not computed for this level of measurement")
        return value


def _row_of_nonzeros(counts: sp.csr_matrix) -> IntArray:
    return np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))


def _pairs_within_rows(counts: sp.csr_matrix) -> tuple[IntArray, IntArray]:
    """All ordered pairs (i, j) of stored entries that share a row (i = j included): positions into counts.data."""
    per_row = np.diff(counts.indptr)
    row = _row_of_nonzeros(counts)
    q = per_row[row]  # each entry pairs with every entry of its row
    first = np.repeat(np.arange(len(row)), q)
    offset = np.arange(len(first)) - np.repeat(np.cumsum(q) - q, q)
    second = np.repeat(counts.indptr[row], q) + offset
    return first, second


def _ratio_metric(values: FloatArray) -> FloatArray:
    c, k = np.meshgrid(values, values, indexing="ij")
    with np.errstate(invalid="ignore", divide="ignore"):  # 0 where c + k = 0 (both 0: no difference)
        return np.where(c + k == 0, 0.0, ((c - k) / (c + k)) ** 2)


def _center(pat: RatingPatterns) -> float:
    total = pat.multiplicity @ pat.m
    return float(pat.multiplicity @ (pat.counts @ pat.values) / total) if total else 0.0


def _pattern_terms(pat: RatingPatterns, level: str) -> _PatternTerms:
    counts, m = pat.counts, pat.m
    row = _row_of_nonzeros(counts)
    n = counts.data
    cols = counts.indices
    if level == "interval":
        # centred on the data's mean so that n S2 - S1^2 does not cancel (interval delta ignores a shift)
        x = pat.values - _center(pat)
        s1 = counts @ x
        s2 = counts @ (x * x)
        dev = x[cols] - (s1 / m)[row]
        within = np.bincount(row, weights=n * dev * dev, minlength=len(m))
        return _PatternTerms(observed=2.0 * m * within / (m - 1), s1=s1, s2=s2)
    if level == "ordinal":
        return _PatternTerms(observed=None)
    if level == "nominal":
        same = np.bincount(row, weights=n * n, minlength=len(m))
        return _PatternTerms(observed=(m * m - same) / (m - 1))
    delta = _ratio_metric(pat.values)
    i, j = _pairs_within_rows(counts)
    within = np.bincount(row[i], weights=n[i] * n[j] * delta[cols[i], cols[j]], minlength=len(m))
    return _PatternTerms(observed=within / (m - 1), delta=delta)


def _defined(pat: RatingPatterns, W: FloatArray) -> BoolArray:
    """Resamples with at least two distinct values among their pairable ratings (alpha is NaN otherwise)."""
    distinct = np.diff(pat.counts.indptr)
    mixed = distinct >= 2
    ok: BoolArray = np.asarray((W[:, mixed] > 0).any(axis=1), dtype=bool)
    single = ~mixed
    if single.any():
        value = pat.counts.indices[pat.counts.indptr[:-1][single]]
        present = W[:, single] > 0
        lo = np.where(present, value, np.iinfo(np.int64).max).min(axis=1)
        hi = np.where(present, value, -1).max(axis=1)
        ok = ok | np.asarray(hi > lo, dtype=bool)
    return ok


def _alpha_block(pat: RatingPatterns, terms: _PatternTerms, W: FloatArray, level: str) -> FloatArray:
    n = W @ pat.m
    if level == "interval":
        s1, s2 = W @ terms.term("s1"), W @ terms.term("s2")
        observed = W @ terms.term("observed")
        expected = 2.0 * (n * s2 - s1 * s1)
    else:
        N = np.asarray((pat.counts.T @ W.T).T)  # resamples x v: the value counts n_c
        if level == "ordinal":
            M = np.cumsum(N, axis=1) - N / 2 - n[:, None] / 2  # mid-ranks, centred
            expected = 2.0 * (n * (N * M * M).sum(axis=1) - (N * M).sum(axis=1) ** 2)
            mixed = np.diff(pat.counts.indptr) >= 2  # a unit with one value has no disagreement, on any scale
            cm, mm = pat.counts[mixed], pat.m[mixed]
            a1 = np.asarray(cm @ M.T)  # mixed patterns x resamples
            a2 = np.asarray(cm @ (M * M).T)
            per = 2.0 * (mm[:, None] * a2 - a1 * a1) / (mm - 1)[:, None]
            observed = (W[:, mixed] * per.T).sum(axis=1)
        elif level == "nominal":
            observed = W @ terms.term("observed")
            expected = n * n - (N * N).sum(axis=1)
        else:
            observed = W @ terms.term("observed")
            expected = (N * (N @ terms.term("delta"))).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    alpha[~_defined(pat, W)] = np.nan
    # no expected disagreement (one value left in the pairable data, up to rounding): undefined, as the package says,
    # never -inf
    alpha[~np.isfinite(alpha)] = np.nan
    return alpha


def alpha_from_pattern_weights(pat: RatingPatterns, weights: FloatArray, level_of_measurement: str) -> FloatArray:
    """Krippendorff's alpha for many weightings of the units at once: ``weights`` is resamples x patterns (how many
    units of each pattern the resample holds; ``pat.multiplicity`` is the data itself). One alpha per row, NaN where
    undefined (fewer than two distinct values). Time linear in the patterns, rows processed in blocks."""
    check_choice(level_of_measurement, ALPHA_LEVELS, "level_of_measurement")
    W = np.atleast_2d(np.asarray(weights, dtype=float))
    if W.shape[1] != pat.n_patterns:
        raise ValueError(f"weights have {W.shape[1]} columns for {pat.n_patterns} patterns")
    if pat.n_patterns == 0:
        return np.full(len(W), np.nan)
    terms = _pattern_terms(pat, level_of_measurement)
    width = max(pat.n_patterns, pat.values.size, 1)
    step = max(1, BLOCK_CELLS // width)
    return np.concatenate([_alpha_block(pat, terms, W[s:s + step], level_of_measurement)
                           for s in range(0, len(W), step)]) if len(W) else np.empty(0)


def jackknife_pattern_alphas(pat: RatingPatterns, level_of_measurement: str) -> FloatArray:
    """Alpha with one unit of each pattern left out (one value per pattern; every unit of a pattern gives the same).

    Interval, nominal and ratio: the totals minus the pattern's terms, linear in the patterns. Ordinal: the
    mid-ranks move with every left-out unit, so the replicates go through alpha_from_pattern_weights (patterns x
    patterns weights, in blocks): quadratic in the number of patterns, which is small on a rating scale (at most 50
    for 3 annotators on 1-5) but not for continuous ratings (use ci_method="percentile" there, or interval).
    """
    check_choice(level_of_measurement, ALPHA_LEVELS, "level_of_measurement")
    P = pat.n_patterns
    if P == 0:
        return np.empty(0)
    base = pat.multiplicity
    if level_of_measurement == "ordinal":
        step = max(1, BLOCK_CELLS // max(P, pat.values.size))
        parts = []
        for s in range(0, P, step):
            rows = np.arange(s, min(P, s + step))
            W = np.tile(base, (len(rows), 1))
            W[np.arange(len(rows)), rows] -= 1.0
            parts.append(alpha_from_pattern_weights(pat, W, "ordinal"))
        return np.concatenate(parts)
    terms = _pattern_terms(pat, level_of_measurement)
    counts = pat.counts
    n_full = base @ pat.m
    n = n_full - pat.m
    observed = base @ terms.term("observed") - terms.term("observed")
    N = counts.T @ base  # value counts of the data (v,)
    if level_of_measurement == "interval":
        s1 = base @ terms.term("s1") - terms.term("s1")
        s2 = base @ terms.term("s2") - terms.term("s2")
        expected = 2.0 * (n * s2 - s1 * s1)
    else:
        # (N - n_p)' delta (N - n_p) = N' delta N - 2 n_p' (delta N) + n_p' delta n_p, the last being the pattern's
        # own observed disagreement times (m_p - 1) since delta_cc = 0
        dN = n_full - N if level_of_measurement == "nominal" else terms.term("delta") @ N
        expected = N @ dN - 2.0 * (counts @ dN) + terms.term("observed") * (pat.m - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    # defined: at least two values keep a positive count once the unit is out
    row = _row_of_nonzeros(counts)
    emptied = np.bincount(row, weights=(counts.data >= N[counts.indices]).astype(float), minlength=P)
    alpha[(N > 0).sum() - emptied < 2] = np.nan
    alpha[~np.isfinite(alpha)] = np.nan  # no expected disagreement left: undefined, never +-inf
    return alpha


def alpha_from_unit_weights(data: FloatArray, domain: FloatArray, weights: FloatArray,
                            level_of_measurement: str) -> FloatArray:
    """Krippendorff's alpha for many resamples of units at once (weights: resamples x units, counts; data:
    annotators x units; domain: the sorted value domain). One alpha per resample, NaN where undefined. The units
    are grouped into rating_patterns and their weights summed per pattern (alpha_from_pattern_weights)."""
    pat = rating_patterns(data, domain)
    W = np.atleast_2d(np.asarray(weights, dtype=float))
    ok = pat.of_unit >= 0
    onehot = sp.csr_matrix((np.ones(int(ok.sum())), (np.nonzero(ok)[0], pat.of_unit[ok])),
                           shape=(len(pat.of_unit), pat.n_patterns))
    return alpha_from_pattern_weights(pat, np.asarray((onehot.T @ W.T).T), level_of_measurement)


def _ceiling_matrix(annotations: pd.DataFrame, items: pd.DataFrame, dimension: str, group: str | None,
                    item_ids: Collection[str] | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(annotators x items ratings, restricted to ``item_ids``; each item's doc_id and system_id), checked."""
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
    if item_ids is not None:
        m = m.loc[:, m.columns.isin(pd.Index(item_ids))]
    return m, info


def _annotator_vs_others(m: pd.DataFrame, info: pd.DataFrame) -> Iterator[tuple[Hashable, pd.DataFrame]]:
    """Per annotator: a score frame (item_id, doc_id, system_id, judge = theirs, human = the mean of the others) on
    the items they and at least one other annotator rated; annotators with no such item are left out."""
    data = m.to_numpy(dtype=float)
    totals = np.nansum(data, axis=0)
    counts = (~np.isnan(data)).sum(axis=0)
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
        if not frame.empty:
            yield annotator, frame


def _ceiling_mean_row(rows: list[dict[str, Any]], frames: list[pd.DataFrame], *, level: str, coefficient: str,
                      n_resamples: int, skip_constant: bool, random_state: Seed) -> dict[str, Any]:
    """The "mean" row: the annotators' mean statistic, with a document-resample interval when asked for and every
    annotator's statistic is defined (evalcore.meta.ceiling)."""
    stats = np.array([r["statistic"] for r in rows], dtype=float)
    mean = float(np.nanmean(stats)) if np.isfinite(stats).any() else np.nan
    lo = hi = np.nan
    if n_resamples > 0 and np.isfinite(stats).all():
        from evalcore.meta.ceiling import mean_ceiling_interval

        lo, hi, _ = mean_ceiling_interval(frames, mean, level=level, coefficient=coefficient,
                                          n_resamples=n_resamples, random_state=random_state,
                                          skip_constant=skip_constant)
    return {"annotator": "mean", "statistic": mean, "ci_low": lo, "ci_high": hi, "pvalue": np.nan,
            "n": max(r["n"] for r in rows), "skipped": np.nan,
            "n_items": int(max(r["n_items"] for r in rows)), "level": level, "coefficient": coefficient,
            "pvalue_method": ""}


HUMAN_CEILING_COLUMNS = ["annotator", "statistic", "ci_low", "ci_high", "pvalue", "n", "skipped", "n_items", "level",
                         "coefficient", "pvalue_method"]


def human_ceiling(annotations: pd.DataFrame, items: pd.DataFrame, dimension: str, *, group: str | None = "expert",
                  level: str = "dataset", coefficient: str = "spearman", n_resamples: int = 0,
                  skip_constant: bool = True, random_state: Seed = 0,
                  item_ids: Collection[str] | None = None) -> pd.DataFrame:
    """How well one annotator agrees with the others: the ceiling to hold a judge to.

    ``item_ids`` restricts every row to those items (a run's scored items: the ceiling is then computed on exactly
    what the run is correlated on). With ``n_resamples`` > 0 the "mean" row gets an interval too, from document
    resamples shared by all annotators (evalcore.meta.ceiling).

    Each annotator of ``group`` (None = everyone) plays the judge against the mean of the OTHER annotators of the
    group on the items they both cover, with the same level and coefficient as the judge's correlation (see
    evalcore.meta.correlation.correlate). Returns one row per annotator and a final "mean" row (the mean of the
    annotators' statistics; its other numeric columns are NaN except n_items). ``n_resamples`` > 0 adds document
    bootstrap intervals to the annotator rows.
    """
    check_choice(level, LEVELS, "level")
    check_choice(coefficient, COEFFICIENTS, "coefficient")
    m, info = _ceiling_matrix(annotations, items, dimension, group, item_ids)
    rows = []
    frames = []
    for annotator, frame in _annotator_vs_others(m, info):
        frames.append(frame)
        res = correlate(frame, level=level, coefficient=coefficient, n_resamples=n_resamples,
                        skip_constant=skip_constant, random_state=random_state)
        rows.append({"annotator": annotator, "statistic": res.statistic, "ci_low": res.ci_low, "ci_high": res.ci_high,
                     "pvalue": res.pvalue, "n": res.n, "skipped": res.skipped, "n_items": len(frame),
                     "level": level, "coefficient": coefficient, "pvalue_method": res.pvalue_method})
    if not rows:
        return pd.DataFrame(columns=HUMAN_CEILING_COLUMNS)
    rows.append(_ceiling_mean_row(rows, frames, level=level, coefficient=coefficient, n_resamples=n_resamples,
                                  skip_constant=skip_constant, random_state=random_state))
    return pd.DataFrame(rows, columns=HUMAN_CEILING_COLUMNS)


def fleiss_kappa(ratings: pd.DataFrame) -> Estimate:
    """Fleiss' kappa (Fleiss 1971, "Measuring nominal scale agreement among many raters") among raters who each put
    an item in one category: ``ratings`` holds item_id, annotator, value (the category). Fleiss' design: every item
    has the same number m >= 2 of ratings (not necessarily from the same raters); a ValueError names an item with
    another count. With n_ij the ratings of item i in category j over N items: p_j = sum_i n_ij / (N m),
    P_i = sum_j n_ij (n_ij - 1) / (m (m - 1)), kappa = (mean P_i - sum_j p_j^2) / (1 - sum_j p_j^2); NaN when every
    rating is in one category (chance agreement 1). ``n``: the items; ``n_annotators``: the distinct raters."""
    missing = [c for c in ("item_id", "annotator", "value") if c not in ratings.columns]
    if missing:
        raise ValueError(f"ratings: missing column(s) {missing}")
    counts = pd.crosstab(ratings["item_id"].astype(str), ratings["value"].astype(float)).to_numpy(dtype=float)
    m = counts.sum(axis=1)
    if len(m) == 0:
        raise ValueError("ratings: no item")
    if (m != m[0]).any() or m[0] < 2:
        bad = int(np.flatnonzero(m != m[0])[0]) if (m != m[0]).any() else 0
        raise ValueError(f"Fleiss' kappa needs the same number (at least 2) of ratings per item: one item has "
                         f"{int(m[bad])}, another {int(m[0])}")
    k = float(m[0])
    p = counts.sum(axis=0) / counts.sum()
    p_i = (counts * (counts - 1)).sum(axis=1) / (k * (k - 1))
    p_e = float((p ** 2).sum())
    kappa = float("nan") if np.isclose(p_e, 1.0) else float((p_i.mean() - p_e) / (1.0 - p_e))
    return Estimate(statistic=kappa, n=int(len(m)), n_annotators=int(ratings["annotator"].nunique()))
