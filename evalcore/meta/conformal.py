"""Per-item intervals for the human score from the judge's score by split conformal prediction (Vovk et al. 2005;
Lei et al. 2018; for LLM judges, Sheng et al., EMNLP 2025, arXiv:2509.18658).

On the calibration items the nonconformity score is the absolute residual |human - judge|; with n of them, q is the
ceil((n + 1) * level)-th smallest (Lei et al. 2018, split conformal); each other item's interval is
[judge - q, judge + q], widened outward to the scale's points (``step`` apart from the scale's low end) and clipped to
the scale. Widening only adds coverage, so P(human in interval) >= level holds for exchangeable items, marginally
(over items, not per system: the per-system figures show where it holds less). Where ceil((n + 1) * level) exceeds n
the interval is the whole scale, and the result says so.

Ties (``ties="randomised"``). The human score takes few values and the judge's often too, so the residuals tie:
many calibration residuals equal q, and P(|human - judge| <= q) exceeds the level by the mass of the tie (on
SummEval at 0.9, coverage up to 0.92-0.99 with or without snapping: the ties, not the snapping, widen it; snapping
inward instead gives the same coverage, since the human score lies on the points). The randomised rule removes that
excess (Vovk et al. 2005, smoothed conformal p-values): a scale point y is in the item's set when
p(y) = (#{i: r_i > s} + U (#{i: r_i = s} + 1)) / (n + 1) > 1 - level, with s = |y - judge| and one U ~ Uniform(0, 1)
per test item. p(Y) is exactly uniform for exchangeable items, so the coverage is exactly the level (over the
calibration draw, the items and U), never below it; p falls as s grows, so the set is the points within a radius of
the judge, an interval. A set left empty (U small) becomes the point nearest the judge: that only adds coverage.

The midpoint of an item's interval is offered as an alternative score beside the judge's."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from evalcore.meta.arrays import FloatArray


@dataclass(frozen=True)
class ConformalResult:
    level: float
    q: float  # the calibrated half-width before snapping (inf: too few calibration items)
    low: FloatArray
    high: FloatArray
    coverage: float  # share of test items whose human score lies in its interval (NaN without human scores)
    mean_width: float
    midpoint_correlation: float  # Pearson correlation of the midpoints with the human scores on the test items
    note: str = ""


def conformal_quantile(residuals: npt.ArrayLike, level: float) -> float:
    """The split-conformal half-width: the ceil((n + 1) level)-th smallest residual (inf when that exceeds n)."""
    r = np.sort(np.abs(np.asarray(residuals, dtype=float)))
    r = r[~np.isnan(r)]
    k = math.ceil((len(r) + 1) * level)
    return float("inf") if k > len(r) else float(r[k - 1])


def snap(low: npt.ArrayLike, high: npt.ArrayLike, scale: tuple[float, float],
         step: float = 1.0) -> tuple[FloatArray, FloatArray]:
    """Widen [low, high] outward to the scale's points and clip to the scale."""
    lo_s, hi_s = scale
    lo = lo_s + np.floor((np.asarray(low, dtype=float) - lo_s) / step + 1e-9) * step
    hi = lo_s + np.ceil((np.asarray(high, dtype=float) - lo_s) / step - 1e-9) * step
    return np.clip(lo, lo_s, hi_s), np.clip(hi, lo_s, hi_s)


def randomised_sets(residuals: npt.ArrayLike, judge_test: npt.ArrayLike, *, level: float, scale: tuple[float, float],
                    step: float,
                    rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    """Each test item's set of scale points by the smoothed p-value (module docstring, "Ties") as [low, high]; a
    missing judge score gets the whole scale."""
    r = np.sort(np.abs(np.asarray(residuals, dtype=float)))
    r = r[~np.isnan(r)]
    n = len(r)
    grid = np.arange(scale[0], scale[1] + step / 2, step)
    jt = np.asarray(judge_test, dtype=float)
    s = np.abs(grid[None, :] - np.nan_to_num(jt)[:, None])
    le = np.searchsorted(r, s + 1e-9, side="right")  # residuals <= s (1e-9: scores on a 1/3 grid tie in floats)
    eq = le - np.searchsorted(r, s - 1e-9, side="left")
    u = rng.uniform(size=(len(jt), 1))
    inside = (n - le + u * (eq + 1)) / (n + 1) > 1 - level
    nearest = np.argmin(s, axis=1)
    inside[np.arange(len(jt)), nearest] |= ~inside.any(axis=1)  # an empty set: the nearest point
    lo = np.where(inside, grid[None, :], np.inf).min(axis=1)
    hi = np.where(inside, grid[None, :], -np.inf).max(axis=1)
    return np.where(np.isnan(jt), scale[0], lo), np.where(np.isnan(jt), scale[1], hi)


def split_conformal(judge_cal: npt.ArrayLike, human_cal: npt.ArrayLike, judge_test: npt.ArrayLike,
                    human_test: npt.ArrayLike, *, level: float, scale: tuple[float, float],
                    step: float = 1.0, ties: str = "conservative", seed: int = 0) -> ConformalResult:
    """Intervals for the test items' human scores, calibrated on the calibration items (module docstring).
    ``ties``: "conservative" (the quantile, widened outward) or "randomised" (exact coverage; ``seed`` draws U)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    jc, hc = np.asarray(judge_cal, dtype=float), np.asarray(human_cal, dtype=float)
    ok = ~(np.isnan(jc) | np.isnan(hc))
    q = conformal_quantile(hc[ok] - jc[ok], level)
    jt, ht = np.asarray(judge_test, dtype=float), np.asarray(human_test, dtype=float)
    note = ""
    if math.isinf(q):
        note = (f"{int(ok.sum())} calibration items are too few for level {level:g}: every interval is the whole "
                f"scale (at least {math.ceil(level / (1 - level))} are needed)")
    if ties == "randomised" and not math.isinf(q):
        lo, hi = randomised_sets(hc[ok] - jc[ok], jt, level=level, scale=scale, step=step,
                                 rng=np.random.default_rng(seed))
    elif ties in ("conservative", "randomised"):
        # a failed parse has no judge score: its interval is the whole scale
        lo, hi = snap(np.where(np.isnan(jt), -np.inf, jt - q), np.where(np.isnan(jt), np.inf, jt + q), scale, step)
        lo = np.where(np.isnan(lo), scale[0], lo)
        hi = np.where(np.isnan(hi), scale[1], hi)
    else:
        raise ValueError(f"ties must be 'conservative' or 'randomised', got {ties!r}")
    has = ~np.isnan(ht)
    cover = float(np.mean((ht[has] >= lo[has] - 1e-9) & (ht[has] <= hi[has] + 1e-9))) if has.any() else float("nan")
    mid = (lo + hi) / 2
    both = has & ~np.isnan(jt)
    corr = float(sps.pearsonr(mid[both], ht[both])[0]) if both.sum() > 2 and np.ptp(mid[both]) > 0 else float("nan")
    return ConformalResult(level, q, lo, hi, cover, float(np.mean(hi - lo)) if len(hi) else float("nan"), corr, note)
