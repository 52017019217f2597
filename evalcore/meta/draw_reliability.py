"""How much a judge agrees with itself when asked again: the reliability of K draws per item, and what it does to
the judge's agreement with the humans.

A judge sampled at a temperature above 0 (or a reasoning model held at its default temperature) is a distribution,
not a number: each item has K draws. Classical test theory treats each draw as a rating with error, so:

- ICC(1,1) is the reliability of one draw and ICC(1,K) that of the mean of K draws: the one-way random-effects model
  (items random, draws exchangeable within an item; Shrout & Fleiss 1979 case 1, McGraw & Wong 1996), with their
  F-based intervals. Items with a failed draw are left out (the model needs every item drawn K times), and counted.
- Krippendorff's alpha among the draws (evalcore.meta.agreement, the draws as annotators) uses every draw that parsed.
- The share of draw pairs that differ, pooled over items: how often two draws of the same item disagree at all.
- Spearman-Brown: the mean of m draws has reliability R_m = m r / (1 + (m - 1) r), r = ICC(1,1) (Spearman 1910,
  Brown 1910). A judge's noise attenuates its correlation with anything (Spearman's correction for attenuation), so
  its expected correlation with the humans with m draws is rho_K * sqrt(R_m / R_K), rho_K being the correlation of
  the K-draw mean. The formula is exact for Pearson's r under the model; for rank coefficients it is the usual
  approximation, and says so.
- The interval of the K-draw mean's correlation with the humans resamples documents, each with its items' K draws
  as they were drawn: a new study draws new documents AND new draws for them, and since a judge's draws of an item
  are independent of other items', the documents-only bootstrap already carries the judge's noise.
  ``two_stage_correlation`` also resamples the draws within each drawn item (two-stage sampling, Davison & Hinkley
  1997 sec. 3.8): bench/bench_two_stage.py shows that this adds the judge's noise a second time, which attenuates
  every resampled correlation and puts the interval too low (it covers far less than 95% when the judge is noisy),
  while the documents-only interval covers about 95%. It is kept for that comparison; the report does not use it.

Inputs: ``draws`` has item_id, draw, judge (NaN where the draw failed to parse); ``frame`` is a score frame
(evalcore.runs.score_frame: item_id, doc_id, system_id, judge, human) whose judge column is ignored here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as st

from evalcore.meta.arrays import FloatArray, IntArray, Seed
from evalcore.meta.agreement import krippendorff_alpha
from evalcore.meta.coefficients import rows_correlation
from evalcore.meta.correlation import correlate
from evalcore.meta.intervals import percentile_interval
from evalcore.meta.results import Estimate, missing
from evalcore.meta.validation import check_choice, check_confidence_level, check_n_resamples

ICC_METHOD = "F distribution"
SPEARMAN_BROWN_NOTE = ("projection by Spearman-Brown and the correction for attenuation: exact for Pearson's r under "
                       "the one-way model, an approximation for rank coefficients")


# --------------------------------------------------------------------------------------------------- the draw matrix
def draw_matrix(draws: pd.DataFrame) -> tuple[FloatArray, FloatArray]:
    """(item ids, items x K matrix): each item's draws in draw order, NaN where a draw failed or is absent."""
    need = [c for c in ("item_id", "draw", "judge") if c not in draws.columns]
    if need:
        raise ValueError(f"draws: missing column(s) {need}; a draws table needs item_id, draw, judge")
    dup = draws.duplicated(["item_id", "draw"])
    if dup.any():
        r = draws[dup].iloc[0]
        raise ValueError(f"draws: item {r['item_id']!r} has draw {r['draw']} more than once")
    wide = draws.pivot(index="item_id", columns="draw", values="judge")
    return wide.index.to_numpy(), wide.to_numpy(dtype=float)


def complete_rows(M: FloatArray) -> FloatArray:
    """The rows of M with every draw present (what the one-way ANOVA needs)."""
    return M[~np.isnan(M).any(axis=1)] if M.size else M


# ------------------------------------------------------------------------------------------------------------ ICC
def icc_oneway(M: FloatArray, *, confidence_level: float = 0.95) -> tuple[Estimate, Estimate]:
    """ICC(1,1) and ICC(1,K) of an items x K matrix, with their F-based intervals (Shrout & Fleiss 1979 eq. 2 and
    McGraw & Wong 1996 table 7, case 1): MSB and MSW of the one-way ANOVA, F = MSB / MSW on (n - 1, n (K - 1))
    degrees of freedom. Items with a missing draw are left out (``dropped`` counts them); ``n`` counts items."""
    check_confidence_level(confidence_level)
    full = complete_rows(np.asarray(M, dtype=float))
    dropped = int(M.shape[0] - full.shape[0]) if M.ndim == 2 else 0
    n, k = full.shape if full.ndim == 2 else (0, 0)
    if n < 2 or k < 2:
        why = "needs at least two items drawn at least twice each"
        return (Estimate(math.nan, n=n, dropped=dropped, notes=(why,)),) * 2
    row_means = full.mean(axis=1)
    grand = full.mean()
    msb = k * float(((row_means - grand) ** 2).sum()) / (n - 1)
    msw = float(((full - row_means[:, None]) ** 2).sum()) / (n * (k - 1))
    if msw == 0.0:
        why = "every item's draws are identical: the draws do not vary, so the ICC is 1 by definition"
        return (Estimate(1.0 if msb > 0 else math.nan, n=n, dropped=dropped, notes=(why,)),) * 2
    F = msb / msw
    df1, df2 = n - 1, n * (k - 1)
    q = 1.0 - (1.0 - confidence_level) / 2
    f_low = F / st.f.ppf(q, df1, df2)
    f_high = F * st.f.ppf(q, df2, df1)
    p = float(st.f.sf(F, df1, df2))
    common = dict(n=n, method=ICC_METHOD, pvalue=p, pvalue_method="F test", confidence_level=confidence_level,
                  dropped=dropped)
    f_low, f_high = float(f_low), float(f_high)
    icc1 = Estimate((msb - msw) / (msb + (k - 1) * msw), (f_low - 1) / (f_low + k - 1),
                    (f_high - 1) / (f_high + k - 1), **common)
    icc1k = Estimate((msb - msw) / msb, 1 - 1 / f_low, 1 - 1 / f_high, **common)
    return icc1, icc1k


# --------------------------------------------------------------------------------------------- agreement of draws
def draws_alpha(draws: pd.DataFrame, *, level_of_measurement: str = "interval", n_resamples: int = 0,
                confidence_level: float = 0.95, random_state: Seed = 0) -> Estimate:
    """Krippendorff's alpha with the draws as annotators (every draw that parsed; items drawn once carry none)."""
    ok = draws[draws["judge"].notna()]
    if ok.empty:
        return missing(0, "no draw parsed")
    ann = pd.DataFrame({"item_id": ok["item_id"].to_numpy(), "dimension": "d", "annotator": ok["draw"].to_numpy(),
                        "group": "draws", "value": ok["judge"].to_numpy(dtype=float)})
    return krippendorff_alpha(ann, "d", level_of_measurement=level_of_measurement, n_resamples=n_resamples,
                              confidence_level=confidence_level, random_state=random_state)


def pairs_differ(M: FloatArray) -> float:
    """The share of pairs of draws of the same item that differ, pooled over items (draws that parsed only)."""
    differ = total = 0
    for row in np.asarray(M, dtype=float):
        v = row[~np.isnan(row)]
        m = len(v)
        if m < 2:
            continue
        _, counts = np.unique(v, return_counts=True)
        pairs = m * (m - 1) // 2
        total += pairs
        differ += pairs - int((counts * (counts - 1) // 2).sum())
    return differ / total if total else math.nan


def item_spread(draws: pd.DataFrame) -> pd.DataFrame:
    """Per item: draws that parsed, their mean, standard deviation (ddof 1), range and number of distinct values;
    sorted most unstable first (largest SD, then range), the items a person might rate next. An item with one draw
    that parsed has no SD (missing, listed last): its spread was not measured, which is not a spread of 0."""
    ok = draws[draws["judge"].notna()]
    g = ok.groupby("item_id")["judge"]
    out = pd.DataFrame({"draws": g.size(), "mean": g.mean(), "sd": g.std(ddof=1), "range": g.max() - g.min(),
                        "distinct": g.nunique()}).reset_index()
    return out.sort_values(["sd", "range", "item_id"], ascending=[False, False, True], kind="stable",
                           ignore_index=True)


# ------------------------------------------------------------------------------------------------ Spearman-Brown
def spearman_brown(r: float, m: float) -> float:
    """Reliability of the mean of m parallel draws whose single-draw reliability is r (Spearman 1910, Brown 1910)."""
    if not np.isfinite(r) or m <= 0:
        return math.nan
    return m * r / (1 + (m - 1) * r)


def draws_needed(r: float, target: float = 0.8) -> int | None:
    """The fewest draws whose mean reaches reliability ``target`` (Spearman-Brown solved for m); None when a draw
    carries no reliable signal (r <= 0)."""
    if not 0 < target < 1:
        raise ValueError(f"target reliability must lie in (0, 1), got {target}")
    if not np.isfinite(r) or r <= 0:
        return None
    if r >= target:
        return 1
    return int(math.ceil(target * (1 - r) / (r * (1 - target)) - 1e-12))


def projected_agreement(rho_k: float, r1: float, k: int, upto: int) -> dict[int, float]:
    """Expected correlation with the humans of the mean of m = 1..upto draws, from the K-draw mean's correlation
    rho_k and the single-draw reliability r1: rho_m = rho_k * sqrt(R_m / R_K) (the correction for attenuation)."""
    rk = spearman_brown(r1, k)
    if not (np.isfinite(rho_k) and np.isfinite(rk)) or r1 <= 0 or rk <= 0:
        return {m: math.nan for m in range(1, upto + 1)}
    return {m: float(rho_k * math.sqrt(spearman_brown(r1, m) / rk)) for m in range(1, upto + 1)}


# ------------------------------------------------------------------------------------------ the two-stage bootstrap
TWO_STAGE = "documents, then draws within each drawn item"


def _resampled_means(S: FloatArray, k_ok: IntArray, idx: IntArray, rng: np.random.Generator) -> FloatArray:
    """The mean of each chosen item's draws resampled with replacement (S holds each item's parsed draws first)."""
    k = k_ok[idx]
    width = S.shape[1]
    pos = np.floor(rng.random((len(idx), width)) * np.maximum(k, 1)[:, None]).astype(np.int64)
    picked = S[idx[:, None], pos]
    use = np.arange(width)[None, :] < k[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        result: FloatArray = np.where(use, picked, 0.0).sum(axis=1) / np.where(k > 0, k, np.nan)
        return result


def _two_stage_dataset(S: FloatArray, k_ok: IntArray, human: FloatArray, items_of: list[IntArray], coefficient: str,
                       n_resamples: int, rng: np.random.Generator, block: int = 64) -> FloatArray:
    """Dataset-level replicates, ``block`` resamples at a time as rows padded with NaN (rows_correlation)."""
    n_docs = len(items_of)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, block):
        rows = []
        for _ in range(min(block, n_resamples - start)):
            idx = np.concatenate([items_of[d] for d in rng.integers(0, n_docs, n_docs)])
            rows.append((_resampled_means(S, k_ok, idx, rng), human[idx]))
        width = max(len(x) for x, _ in rows)
        X = np.full((len(rows), width), np.nan)
        Y = np.full((len(rows), width), np.nan)
        for i, (x, y) in enumerate(rows):
            keep = ~np.isnan(x)
            X[i, :keep.sum()] = x[keep]
            Y[i, :keep.sum()] = y[keep]
        out[start:start + len(rows)] = rows_correlation(X, Y, coefficient)
    return out


def _two_stage_other(S: FloatArray, k_ok: IntArray, frame: pd.DataFrame, items_of: list[IntArray], level: str,
                     coefficient: str, n_resamples: int, rng: np.random.Generator) -> FloatArray:
    """Summary- and system-level replicates: each resample's frame (a document drawn twice is two documents)."""
    n_docs = len(items_of)
    out = np.empty(n_resamples)
    for b in range(n_resamples):
        docs = rng.integers(0, n_docs, n_docs)
        idx = np.concatenate([items_of[d] for d in docs])
        copy = np.concatenate([np.full(len(items_of[d]), i) for i, d in enumerate(docs)])
        f = pd.DataFrame({"item_id": [f"{i}#{c}" for i, c in zip(frame["item_id"].to_numpy()[idx], copy)],
                          "doc_id": [f"{i}#{c}" for i, c in zip(frame["doc_id"].to_numpy()[idx], copy)],
                          "system_id": frame["system_id"].to_numpy()[idx],
                          "judge": _resampled_means(S, k_ok, idx, rng), "human": frame["human"].to_numpy()[idx]})
        out[b] = correlate(f, level=level, coefficient=coefficient, n_resamples=0).statistic
    return out


def two_stage_correlation(draws: pd.DataFrame, frame: pd.DataFrame, *, level: str = "dataset",
                          coefficient: str = "spearman", n_resamples: int = 1000, confidence_level: float = 0.95,
                          random_state: Seed = 0) -> Estimate:
    """The correlation of the mean of each item's draws with the humans, with a two-stage percentile bootstrap
    interval: documents drawn with replacement, then each drawn item's draws drawn with replacement from those that
    parsed. ``resampling`` says so; ``n`` and ``dropped`` are those of the point estimate (evalcore.meta.correlate).
    Biased low when the judge is noisy (module docstring, bench/bench_two_stage.py): for comparison only."""
    check_n_resamples(n_resamples)
    check_confidence_level(confidence_level)
    ids, M = draw_matrix(draws)
    pos = pd.Series(np.arange(len(ids)), index=ids)
    f = frame[frame["item_id"].isin(pos.index)].reset_index(drop=True)
    M = M[pos[f["item_id"]].to_numpy()]
    S = np.sort(M, axis=1)  # NaN last: each item's parsed draws first
    k_ok = (~np.isnan(M)).sum(axis=1)
    with np.errstate(invalid="ignore"):
        mean = np.where(k_ok > 0, np.nansum(M, axis=1) / np.maximum(k_ok, 1), np.nan)
    if k_ok.max(initial=0) <= 1:  # one draw: nothing to resample within items; the usual documents interval
        return correlate(f.assign(judge=mean), level=level, coefficient=coefficient, n_resamples=n_resamples,
                         confidence_level=confidence_level, random_state=random_state)
    point = correlate(f.assign(judge=mean), level=level, coefficient=coefficient, n_resamples=0)
    if n_resamples == 0 or np.isnan(point.statistic):
        return point
    codes, _ = pd.factorize(f["doc_id"])
    items_of = [np.flatnonzero(codes == d) for d in range(codes.max() + 1)]
    rng = np.random.default_rng(random_state)
    if level == "dataset":
        boot = _two_stage_dataset(S, k_ok, f["human"].to_numpy(dtype=float), items_of, coefficient, n_resamples, rng)
    else:
        boot = _two_stage_other(S, k_ok, f, items_of, level, coefficient, n_resamples, rng)
    lo, hi, undefined = percentile_interval(boot, confidence_level)
    return Estimate(point.statistic, lo, hi, n=point.n, method="percentile", notes=point.notes,
                    pvalue=point.pvalue, pvalue_method=point.pvalue_method, confidence_level=confidence_level,
                    n_resamples=n_resamples, undefined_resamples=undefined, resampling=TWO_STAGE,
                    dropped=point.dropped, skipped=point.skipped)


def mean_of_draws_correlation(draws: pd.DataFrame, frame: pd.DataFrame, *, level: str = "dataset",
                              coefficient: str = "spearman", n_resamples: int = 1000, confidence_level: float = 0.95,
                              random_state: Seed = 0) -> Estimate:
    """The correlation of the mean of each item's draws (those that parsed) with the humans, with the documents
    bootstrap of evalcore.meta.correlate (BCa): see the module docstring for why that interval carries the judge's
    noise."""
    mean = draws.groupby("item_id")["judge"].mean()
    f = frame[frame["item_id"].isin(mean.index)]
    return correlate(f.assign(judge=f["item_id"].map(mean).astype(float)), level=level, coefficient=coefficient,
                     n_resamples=n_resamples, confidence_level=confidence_level, random_state=random_state)


# -------------------------------------------------------------------------------------------------- the report
@dataclass(frozen=True)
class ReliabilityReport:
    """A judge's reliability on one dimension (see the module docstring): ``draws`` K (the most any item has),
    ``items`` the items drawn, ``single_draw`` each draw's correlation with the humans (in draw order),
    ``projected`` draws m -> expected correlation of the m-draw mean, ``spread`` per item (item_spread)."""

    draws: int
    items: int
    icc1: Estimate
    icc1k: Estimate
    alpha: Estimate
    disagreement: float
    single_draw: tuple[float, ...]
    mean_of_draws: Estimate
    projected: dict[int, float]
    draws_needed: int | None
    target: float
    spread: pd.DataFrame = field(repr=False, compare=False)
    notes: tuple[str, ...] = ()

    def single_draw_summary(self) -> dict[str, float]:
        """min / median / max of the single draws' correlations (NaN ones left out)."""
        v = np.array([x for x in self.single_draw if np.isfinite(x)])
        if v.size == 0:
            return {"min": math.nan, "median": math.nan, "max": math.nan}
        return {"min": float(v.min()), "median": float(np.median(v)), "max": float(v.max())}


def single_draw_correlations(draws: pd.DataFrame, frame: pd.DataFrame, *, level: str = "dataset",
                             coefficient: str = "spearman") -> tuple[float, ...]:
    """Each draw's correlation with the humans, as if the judge had been asked once (draw j of every item)."""
    out = []
    for j in sorted(draws["draw"].unique()):
        one = draws.loc[draws["draw"] == j, ["item_id", "judge"]]
        f = frame.drop(columns=["judge"]).merge(one, on="item_id", how="inner")
        out.append(float(correlate(f, level=level, coefficient=coefficient, n_resamples=0).statistic)
                   if len(f) else math.nan)
    return tuple(out)


def reliability_report(draws: pd.DataFrame, frame: pd.DataFrame, *, level: str = "dataset",
                       coefficient: str = "spearman", n_resamples: int = 1000, confidence_level: float = 0.95,
                       random_state: Seed = 0, target: float = 0.8,
                       level_of_measurement: str = "interval") -> ReliabilityReport:
    """Everything the reliability section shows for one run and dimension (see the module docstring)."""
    check_choice(level_of_measurement, ("interval", "ordinal", "nominal", "ratio"), "level_of_measurement")
    draws = draws[draws["item_id"].isin(frame["item_id"])]
    _, M = draw_matrix(draws)
    k = int(M.shape[1]) if M.size else 0
    icc1, icc1k = icc_oneway(M, confidence_level=confidence_level)
    alpha = draws_alpha(draws, level_of_measurement=level_of_measurement, n_resamples=n_resamples,
                        confidence_level=confidence_level, random_state=random_state)
    mean = mean_of_draws_correlation(draws, frame, level=level, coefficient=coefficient, n_resamples=n_resamples,
                                     confidence_level=confidence_level, random_state=random_state)
    notes = [SPEARMAN_BROWN_NOTE]
    if k < 2:
        notes.append("one draw per item: how far the figure would move on another draw, and how much averaging "
                     "draws would lift it, are not measured (a second draw of a few documents would measure them)")
    else:
        notes.append(f"the interval resamples documents, each with its items' {k} draws: it carries the judge's "
                     "noise as drawn")
    return ReliabilityReport(
        draws=k, items=int(M.shape[0]), icc1=icc1, icc1k=icc1k, alpha=alpha, disagreement=pairs_differ(M),
        single_draw=single_draw_correlations(draws, frame, level=level, coefficient=coefficient),
        mean_of_draws=mean, projected=projected_agreement(mean.statistic, icc1.statistic, k, 2 * max(k, 1)),
        draws_needed=draws_needed(icc1.statistic, target), target=target, spread=item_spread(draws),
        notes=tuple(notes))
