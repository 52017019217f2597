"""Prediction-powered estimates of each system's mean human score from a judge's scores on every item and human
ratings on some (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference", Science 2023;
power-tuned PPI++: Angelopoulos, Duchi & Zrnic, "PPI++: Efficient prediction-powered inference", arXiv:2311.01453).

Within one system a document usually holds one output, so the items are the units (pairwise data: a prompt holds
several of a model's pairs, and the prompts are the units: clusters below). With n rated items (human Y, judge Yhat)
and N unrated ones (judge Yhat~), the estimate of the mean human score is

    theta_lambda = lambda * mean(Yhat~) + mean(Y - lambda * Yhat)

- classic PPI: lambda = 1 (the judge's mean on the unrated items, corrected by the mean of human - judge on the rated
  ones: the "rectifier");
- PPI++: lambda = cov(Y, Yhat) / ((1 + n/N) var(Yhat)), clipped to [0, 1], an estimate of the value that minimises
  the estimate's variance (ADZ23, the mean case of their Eq. for lambda-hat); lambda = 0 is the human-only mean.
  Being estimated (the judge's variance pooled over rated and unrated items), it does not always give an interval
  narrower than the humans' alone (tests/test_meta_ppi.py builds a case).

What is estimated, and on what condition: the target is the system's mean human score over the population of
documents the judged ones are drawn from (the superpopulation mean), not the mean over these documents alone; the
interval's coverage requires the rated documents to be a uniform random sample of the judged ones (ratings missing
completely at random). Documents chosen for rating by how they look, or by what the judge said, break it.

The 95% interval is the normal (CLT) one, theta +- z * se with se^2 = sd(lambda Yhat~)^2 / N + sd(Y - lambda Yhat)^2 / n
and population standard deviations, as ppi_py's ``ppi_mean_ci``, when the rated items fall in 30 documents or more;
covariance with 1/n and the judge's variance over all items with 1/(n + N - 1) in lambda, as ppi_py's
``_calc_lam_glm``. The tests hold every system's figures to ppi_py's ``ppi_mean_pointestimate`` / ``ppi_mean_ci``
there (it is a test dependency, not imported here: the formula is a few lines, while the package pulls numba,
statsmodels and a downloader in). Departures, each for a case ppi_py does not cover:

- clusters: where one document (a prompt) holds several items of a system (pairwise data: a model meets several
  opponents on a prompt with the same response), se^2 is the cluster-robust (sandwich) variance of the estimate,
  sum over documents of the squared sum of the items' influence terms; with one item per document it is the formula
  above exactly;
- fewer than 30 rated documents (SMALL_SAMPLE): Student's t with (rated documents - 1) degrees of freedom instead of
  z, and each part's variance times G / (G - 1) (G its documents: the unbiased variance for one item per document,
  CR1 for clusters). One rated document gives no interval (the whole scale where it is known);
- no spread among the rated values (every Y - lambda Yhat alike, e.g. all 20 ratings 5 and lambda 0): the sample
  says nothing of the spread, and a zero-width interval would claim certainty. Its variance is then bounded instead:
  with G rated documents all alike, the share of the population that differs is below p = 1 - (alpha/2)^(1/G) at
  (1 - alpha/2) confidence (Clopper-Pearson with no event), and a variable equal to a constant except on a share p,
  where it may lie up to D away (D: the scale's range, plus lambda times the judge's range), has a variance of at
  most D^2 p (1 - p); that bound is used as the variance;
- the interval is clipped to the scale where the scale is known (a mean lies within it).

Beside it: the human-only estimate (the rated items' mean, lambda = 0, the same interval) and the judge-only one
(the judge's mean on every item: its interval is about the judge's mean, and the distance to the human-only value is
the judge's bias).

Differences between systems and the ranking rest on documents that several systems share: their intervals come from
resampling documents with replacement (evalcore.meta.resampling's draws), every system's estimate recomputed on the
resample, PPI++'s lambda re-estimated on each resample as on the data (the resample's rated and unrated items), so
that the interval carries lambda's own variation. A system with no unrated item is estimated by its humans alone
(lambda = 0: PPI has nothing to add).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from evalcore.meta.arrays import BoolArray, FloatArray, IntArray, Seed
from evalcore.meta.resampling import BLOCK_CELLS, resample_counts
from evalcore.meta.intervals import percentile_ci
from evalcore.meta.results import Estimate, JsonKeys
from evalcore.meta.validation import check_confidence_level
from evalcore.model import natural_key

METHODS = ("ppi", "ppi++")
SMALL_SAMPLE = 30  # fewer rated documents than this: a Student t interval with unbiased variances (module docstring)
FRAME_COLUMNS = ["item_id", "doc_id", "system_id", "judge", "human"]


# The keys ``meta --json`` writes for a classical mean (README: ``human_only`` / ``judge_only``).
MEAN_KEYS: JsonKeys = (("estimate", "statistic"), ("ci_low", "ci_low"), ("ci_high", "ci_high"), ("n", "n"))


@dataclass(frozen=True)
class SystemEstimate:
    system: str
    ppi: Estimate  # the prediction-powered mean and its interval (n: the rated items, as human_only's)
    lam: float
    n_labelled: int
    n_unlabelled: int
    human_only: Estimate  # the classical mean of the labelled items' human scores, beside the PPI estimate
    judge_only: Estimate  # the mean of the judge's scores on every item (biased by the judge's own bias)
    interval: str = "normal"  # how the interval was made: "normal", or "t" below SMALL_SAMPLE rated documents
    rated_documents: int = 0  # documents (prompts) holding the rated items: the units the interval counts
    floored: bool = False     # no spread among the rated values: their variance bounded instead (module docstring)
    clustered: bool = False   # some document holds several of the system's items: cluster-robust variance
    end_share: float = math.nan  # share of the rated values within a tenth of the scale of one of its ends (NaN: no scale)

    @property
    def estimate(self) -> float:
        return self.ppi.statistic

    @property
    def ci_low(self) -> float:
        return self.ppi.ci_low

    @property
    def ci_high(self) -> float:
        return self.ppi.ci_high

    @property
    def effective_labels(self) -> float:
        """The human-only sample size whose interval would be as narrow as this one: n * (human-only width / PPI
        width)^2, the width shrinking as 1 / sqrt(n) at a fixed spread (NaN where either width is missing or 0)."""
        wh = self.human_only.ci_high - self.human_only.ci_low
        wp = self.ci_high - self.ci_low
        if not (math.isfinite(wh) and math.isfinite(wp)) or wp <= 0 or wh <= 0:
            return math.nan
        return self.n_labelled * (wh / wp) ** 2

    @property
    def label_saving(self) -> float:
        """effective_labels / the labels used: how many times fewer human labels PPI needs for this width."""
        return self.effective_labels / self.n_labelled if self.n_labelled else math.nan

    @property
    def saving_note(self) -> str:
        """Below a factor of 2, the regime of Dorner, Nastl & Hardt (ICLR 2025): a judge no more accurate than the
        model it evaluates can at most halve the human labels."""
        f = self.label_saving
        if not math.isfinite(f):
            return ""
        if f < 1:
            return (f"the prediction-powered interval is wider than the humans' alone (as {f:.2f} times the labels): "
                    f"the judge saves no human labels here")
        if f < 2:
            return (f"the judge saves a factor of {f:.2f} in human labels, below 2: the regime Dorner, Nastl & Hardt "
                    f"(ICLR 2025) describe, where a judge no better than the evaluated model cannot more than halve "
                    f"the labels")
        return f"the judge saves a factor of {f:.2f} in human labels"

    json_keys: ClassVar[JsonKeys] = (
        ("system", "system"), ("estimate", "ppi.statistic"), ("ci_low", "ppi.ci_low"), ("ci_high", "ppi.ci_high"),
        ("lambda", "lam"), ("n_labelled", "n_labelled"), ("n_unlabelled", "n_unlabelled"),
        ("human_only", "human_only", MEAN_KEYS), ("judge_only", "judge_only", MEAN_KEYS), ("interval", "interval"),
        ("rated_documents", "rated_documents"), ("spread_floored", "floored"), ("clustered", "clustered"),
        ("share_at_scale_end", "end_share"), ("effective_labels", "effective_labels"),
        ("label_saving", "label_saving"), ("saving_note", "saving_note"))


@dataclass(frozen=True)
class Difference:
    system_a: str
    system_b: str
    difference: Estimate  # theta_a - theta_b, its percentile interval over the document resamples

    @property
    def estimate(self) -> float:
        return self.difference.statistic

    @property
    def ci_low(self) -> float:
        return self.difference.ci_low

    @property
    def ci_high(self) -> float:
        return self.difference.ci_high

    json_keys: ClassVar[JsonKeys] = (("system_a", "system_a"), ("system_b", "system_b"),
                                     ("estimate", "difference.statistic"), ("ci_low", "difference.ci_low"),
                                     ("ci_high", "difference.ci_high"))


@dataclass(frozen=True)
class Rank:
    system: str
    rank: int       # 1 = highest estimate
    rank_low: float  # the 2.5th and 97.5th percentiles of its rank over the document resamples, as ranks taken
    rank_high: float  # (the nearest rank below / above: an interval of ranks holds whole ranks; NaN without one)


@dataclass(frozen=True)
class PPIResult:
    method: str
    confidence_level: float
    per_system: tuple[SystemEstimate, ...]
    differences: tuple[Difference, ...]
    ranking: tuple[Rank, ...]
    n_resamples: int
    judge_failed: int  # items left out: the judge has no score for them

    json_keys: ClassVar[JsonKeys] = (("method", "method"), ("confidence_level", "confidence_level"),
                                     ("per_system", "per_system"), ("differences", "differences"),
                                     ("ranking", "ranking"), ("n_resamples", "n_resamples"),
                                     ("lambda_in_resamples", "lambda_in_resamples"), ("judge_failed", "judge_failed"))

    @property
    def lambda_in_resamples(self) -> str:
        """How lambda is set on each document resample (module docstring)."""
        return "re-estimated" if self.method == "ppi++" else "fixed at 1"


def _z(confidence_level: float) -> float:
    check_confidence_level(confidence_level)
    return float(sps.norm.ppf(0.5 + confidence_level / 2))


def power_tuned_lambda(y: FloatArray, yhat: FloatArray, yhat_unlabelled: FloatArray) -> float:
    """PPI++'s variance-minimising lambda for a mean, clipped to [0, 1] (ppi_py's ``_calc_lam_glm`` for the mean:
    cov(Y, Yhat) with 1/n over ((1 + n/N) var(Yhat) over labelled and unlabelled items with 1/(n + N - 1)))."""
    n, big_n = len(y), len(yhat_unlabelled)
    all_hat = np.concatenate([yhat, yhat_unlabelled])
    var_hat = float(np.var(all_hat, ddof=1)) if len(all_hat) > 1 else 0.0
    if big_n == 0 or var_hat == 0:
        return 0.0  # nothing unrated, or a constant judge: the judge carries no information
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    return float(np.clip(cov / ((1 + n / big_n) * var_hat), 0.0, 1.0))


@dataclass(frozen=True)
class MeanInterval:
    """A prediction-powered mean with its interval as an Estimate (``n``: the rated items; ``method``: the interval's
    distribution), and how the interval was made (module docstring)."""

    point: Estimate
    lam: float
    interval: str        # "normal" or "t"
    rated_documents: int  # the distinct documents (groups) of the rated items
    floored: bool = False
    clustered: bool = False

    @property
    def estimate(self) -> float:
        return self.point.statistic

    @property
    def ci_low(self) -> float:
        return self.point.ci_low

    @property
    def ci_high(self) -> float:
        return self.point.ci_high


def ppi_mean(y: npt.ArrayLike, yhat: npt.ArrayLike, yhat_unlabelled: npt.ArrayLike, *, lam: float | None = 1.0,
             confidence_level: float = 0.95) -> tuple[float, float, float, float]:
    """(estimate, ci_low, ci_high, lambda) of the mean of Y: lambda 1 = classic PPI, None = PPI++ (power-tuned),
    0 = the labelled items' mean alone; one item per document (``ppi_interval`` for the rest)."""
    m = ppi_interval(y, yhat, yhat_unlabelled, lam=lam, confidence_level=confidence_level)
    return m.estimate, m.ci_low, m.ci_high, m.lam


def ppi_interval(y: npt.ArrayLike, yhat: npt.ArrayLike, yhat_unlabelled: npt.ArrayLike, *, lam: float | None = 1.0,
                 confidence_level: float = 0.95,
                 groups: npt.ArrayLike | None = None, groups_unlabelled: npt.ArrayLike | None = None,
                 scale: tuple[float, float] | None = None) -> MeanInterval:
    """The mean of Y from rated items (Y, Yhat) and unrated ones (Yhat~): estimate and interval (module docstring).
    ``groups`` / ``groups_unlabelled``: each item's document (None: one item per document); ``scale``: the (lowest,
    highest) value Y can take, for the spread bound and the clipping (None: unknown)."""
    y, yhat, yu = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_unlabelled))
    if len(y) != len(yhat):
        raise ValueError(f"ppi_mean: {len(y)} human ratings but {len(yhat)} judge scores on the rated items")
    n, big_n = len(y), len(yu)
    if n == 0:
        return MeanInterval(Estimate(math.nan, method=_interval_method(False, 0), confidence_level=confidence_level),
                            math.nan, "normal", 0)
    if big_n == 0:
        lam = 0.0  # every item rated: the estimate is the humans' mean
    elif lam is None:
        lam = power_tuned_lambda(y, yhat, yu)
    lam = float(lam)
    rect = y - lam * yhat
    est = float((lam * yu).mean() + rect.mean()) if big_n else float(rect.mean())
    code_r, code_u = _group_codes(groups, groups_unlabelled, n, big_n)
    g_r, g_u = len(np.unique(code_r)), len(np.unique(code_u))
    small = g_r < SMALL_SAMPLE
    size = max(int(code_r.max(initial=-1)), int(code_u.max(initial=-1))) + 1
    s_r = np.bincount(code_r, (rect - rect.mean()) / n, minlength=size)
    s_u = np.bincount(code_u, lam * (yu - yu.mean()) / big_n, minlength=size) if big_n else np.zeros(size)
    f_r, f_u = (g / (g - 1) if small and g > 1 else 1.0 for g in (g_r, g_u))
    var = f_r * float(s_r @ s_r) + f_u * float(s_u @ s_u) + 2 * math.sqrt(f_r * f_u) * float(s_r @ s_u)
    floored = bool(np.ptp(rect) <= 1e-12 * (1 + float(np.abs(rect).max())))
    if floored:  # no spread among the rated values: their variance bounded (module docstring)
        var += _spread_bound(y, yhat, yu, lam, scale, g_r, confidence_level)
    lo, hi = _bounds(est, var, g_r, small, confidence_level, scale)
    clustered = bool(len(code_r) + len(code_u) > len(np.unique(np.r_[code_r, code_u])))
    point = Estimate(est, lo, hi, n=n, method=_interval_method(small, g_r), confidence_level=confidence_level)
    return MeanInterval(point, lam, "t" if small else "normal", g_r, floored, clustered)


def _group_codes(groups: npt.ArrayLike | None, groups_unlabelled: npt.ArrayLike | None, n: int,
                 big_n: int) -> tuple[IntArray, IntArray]:
    """Integer codes of the rated and unrated items' documents, one code per document across both (one document
    per item where ``groups`` is None)."""
    if groups is None:
        return np.arange(n), np.arange(n, n + big_n)
    labels = np.r_[np.asarray(groups, dtype=object), np.asarray(groups_unlabelled if big_n else [], dtype=object)]
    codes = pd.factorize(pd.Series(labels).astype(str))[0]
    return codes[:n], codes[n:]


def _spread_bound(y: FloatArray, yhat: FloatArray, yu: FloatArray, lam: float, scale: tuple[float, float] | None,
                  g_r: int, confidence_level: float) -> float:
    """The variance of the rated part's mean when its values are all alike: D^2 p (1 - p) / G with p the
    Clopper-Pearson (1 - alpha/2) bound of the share that differs after G alike documents, D the range the
    rectifier Y - lambda Yhat may take (module docstring)."""
    judge = np.r_[yhat, yu]
    span_y = float(scale[1] - scale[0]) if scale is not None else float(np.ptp(np.r_[y, judge]))
    span = span_y + lam * float(np.ptp(judge))
    p = 1 - ((1 - confidence_level) / 2) ** (1 / g_r)
    result: float = span ** 2 * p * (1 - p) / g_r
    return result


def _bounds(est: float, var: float, g_r: int, small: bool, confidence_level: float,
            scale: tuple[float, float] | None) -> tuple[float, float]:
    if small and g_r < 2:  # one rated document: no interval, the whole scale where it is known
        return (float(scale[0]), float(scale[1])) if scale is not None else (math.nan, math.nan)
    q = float(sps.t.ppf(0.5 + confidence_level / 2, g_r - 1)) if small else _z(confidence_level)
    half = q * math.sqrt(max(var, 0.0))
    lo, hi = est - half, est + half
    if scale is not None:
        lo, hi = max(lo, float(scale[0])), min(hi, float(scale[1]))
        if lo > hi:  # the whole interval lies beyond one end of the scale (a PPI estimate may): that end is all
            lo = hi = float(scale[1]) if est > scale[1] else float(scale[0])  # of it the mean can be, not inverted
    return lo, hi


def _mean_estimate(x: FloatArray, groups: npt.ArrayLike | None, confidence_level: float,
                   scale: tuple[float, float] | None) -> Estimate:
    """A plain mean (lambda 0) with the same interval as the PPI estimate's."""
    if len(x) == 0:
        return Estimate(math.nan, n=0)
    return ppi_interval(x, x, [], lam=0.0, confidence_level=confidence_level, groups=groups, scale=scale).point


def _interval_method(small: bool, rated_documents: int) -> str:
    return f"Student t ({rated_documents - 1} df)" if small else "normal (CLT)"


def check_frame(frame: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"ppi frame: missing column(s) {missing}; it needs {FRAME_COLUMNS}")
    return frame[FRAME_COLUMNS].assign(judge=pd.to_numeric(frame["judge"], errors="coerce").astype(float),
                                       human=pd.to_numeric(frame["human"], errors="coerce").astype(float))


def system_estimate(frame: pd.DataFrame, system: str, method: str, confidence_level: float,
                    scale: tuple[float, float] | None = None) -> SystemEstimate:
    """One system's PPI / PPI++ estimate, human-only and judge-only means (``frame``: that system's items with a
    judge score; human NaN where unrated), each item's document its cluster."""
    rated = frame["human"].notna().to_numpy()
    y, yhat = frame["human"].to_numpy()[rated], frame["judge"].to_numpy()[rated]
    yu = frame["judge"].to_numpy()[~rated]
    docs = frame["doc_id"].astype(str).to_numpy()
    m = ppi_interval(y, yhat, yu, lam=1.0 if method == "ppi" else None, confidence_level=confidence_level,
                     groups=docs[rated], groups_unlabelled=docs[~rated], scale=scale)
    return SystemEstimate(system=str(system), ppi=m.point, lam=m.lam,
                          n_labelled=int(len(y)), n_unlabelled=int(len(yu)),
                          human_only=_mean_estimate(y, docs[rated], confidence_level, scale),
                          judge_only=_mean_estimate(frame["judge"].to_numpy(), docs, confidence_level, None),
                          interval=m.interval, rated_documents=m.rated_documents, floored=m.floored,
                          clustered=m.clustered, end_share=_end_share(y, scale))


def _end_share(y: FloatArray, scale: tuple[float, float] | None) -> float:
    """The share of ``y`` within a tenth of the scale's range of its lowest or highest value: ratings piled up at
    one end, where a normal or t interval is known to cover less than asked (bench/bench_ppi_small.py)."""
    if scale is None or len(y) == 0:
        return math.nan
    tenth = (scale[1] - scale[0]) / 10
    return float(np.mean((y <= scale[0] + tenth) | (y >= scale[1] - tenth)))


def ppi_by_system(frame: pd.DataFrame, *, method: str = "ppi++", n_resamples: int = 1000, random_state: Seed = 0,
                  confidence_level: float = 0.95, scale: tuple[float, float] | None = None) -> PPIResult:
    """Per system: PPI (``method`` "ppi") or PPI++ ("ppi++") beside human-only and judge-only estimates; between
    systems: differences and ranks with document-resample intervals (lambda re-estimated on each resample).

    ``frame``: item_id, doc_id, system_id, judge, human (NaN where no human rated the item; evalcore.runs'
    score_frame joined to every judged item). Items without a judge score are left out and counted. ``scale``: the
    human scores' (lowest, highest) value where known (module docstring)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if n_resamples < 0:
        raise ValueError(f"n_resamples must be 0 or more, got {n_resamples}")
    f = check_frame(frame)
    failed = int(f["judge"].isna().sum())
    f = f[f["judge"].notna()]
    if f.empty:
        raise ValueError("no item has a judge score: nothing to estimate")
    systems = sorted(f["system_id"].astype(str).unique(), key=natural_key)
    f = f.assign(system_id=f["system_id"].astype(str))
    per = tuple(system_estimate(f[f["system_id"] == s], s, method, confidence_level, scale) for s in systems)
    boot = document_resamples(f, systems, n_resamples, random_state, method=method)
    theta = np.array([p.estimate for p in per])
    return PPIResult(method=method, confidence_level=float(confidence_level), per_system=per,
                     differences=_differences(systems, theta, boot, confidence_level),
                     ranking=_ranking(systems, theta, boot, confidence_level), n_resamples=int(n_resamples),
                     judge_failed=failed)


def document_resamples(frame: pd.DataFrame, systems: list[str], n_resamples: int, random_state: Seed = 0, *,
                       method: str = "ppi++", lams: dict[str, float] | None = None) -> FloatArray:
    """(n_resamples x systems) estimates on document resamples: the draws of
    ``bootstrap_indices(n_documents, n_resamples, random_state)``, taken in blocks; NaN where a resample holds no
    rated item of a system. lambda as on the data: 1 for PPI (0 without an unrated item), PPI++'s re-estimated on
    each resample from its own items (``power_tuned_lambda``'s formula on the resample's sums); ``lams`` holds it at
    given values instead (to measure what re-estimating changes)."""
    docs, doc_code = np.unique(frame["doc_id"].astype(str).to_numpy(), return_inverse=True)
    n_docs, n_sys = len(docs), len(systems)
    sys_code = pd.Index(systems).get_indexer(frame["system_id"])
    rated = frame["human"].notna().to_numpy()
    y, yhat = frame["human"].to_numpy(), frame["judge"].to_numpy()
    # per document and system: rated count, sum Y, sum Yhat, sum Y Yhat, sum Yhat^2; unrated count, sum, sum of squares
    cols = [np.ones(rated.sum()), y[rated], yhat[rated], y[rated] * yhat[rated], yhat[rated] ** 2]
    cols_u = [np.ones((~rated).sum()), yhat[~rated], yhat[~rated] ** 2]
    sums = np.zeros((8, n_docs, n_sys))
    for k, v in enumerate(cols):
        np.add.at(sums[k], (doc_code[rated], sys_code[rated]), v)
    for k, v in enumerate(cols_u):
        np.add.at(sums[5 + k], (doc_code[~rated], sys_code[~rated]), v)
    fixed = None if lams is None else np.nan_to_num(np.array([lams[s] for s in systems]))
    out = np.empty((n_resamples, n_sys))
    rng = np.random.default_rng(random_state)
    step = max(1, BLOCK_CELLS // max(1, n_docs * 8))
    for s in range(0, n_resamples, step):
        b = min(step, n_resamples - s)
        C = resample_counts(rng.integers(0, n_docs, size=(b, n_docs)), n_docs)
        out[s:s + b] = _resample_estimates([C @ sums[k] for k in range(8)], method, fixed)
    return out


def _resample_estimates(t: list[FloatArray], method: str, fixed: FloatArray | None) -> FloatArray:
    """Each system's estimate from a block of resamples' sums (``document_resamples``' eight, resamples x systems)."""
    n, sy, sh, syh, shh, nu, su, suu = t
    with np.errstate(invalid="ignore", divide="ignore"):
        if fixed is not None:
            lam = np.where(nu > 0, fixed[None, :], 0.0)
        elif method == "ppi":
            lam = np.where(nu > 0, 1.0, 0.0)
        else:  # PPI++: cov(Y, Yhat) with 1/n over ((1 + n/N) var(all Yhat) with 1/(n + N - 1)), clipped to [0, 1]
            total = n + nu
            cov = syh / n - (sy / n) * (sh / n)
            var = (shh + suu - (sh + su) ** 2 / total) / (total - 1)
            ok = (nu > 0) & (n > 0) & (total > 1) & (var > 1e-12)
            lam = np.where(ok, np.clip(cov / ((1 + n / np.where(nu > 0, nu, 1)) * np.where(ok, var, 1)), 0, 1), 0.0)
        imputed = np.where(nu > 0, lam * su / np.where(nu > 0, nu, 1), 0.0)
        return np.where(n > 0, imputed + (sy - lam * sh) / np.where(n > 0, n, 1), np.nan)


def _rank_bounds(ranks: FloatArray, confidence_level: float) -> tuple[float, float]:
    if len(ranks) == 0:
        return math.nan, math.nan
    a = (1 - confidence_level) / 2 * 100
    return (float(np.percentile(ranks, a, method="lower")), float(np.percentile(ranks, 100 - a, method="higher")))


def _differences(systems: list[str], theta: FloatArray, boot: FloatArray,
                 confidence_level: float) -> tuple[Difference, ...]:
    out = []
    for a, b in combinations(range(len(systems)), 2):
        lo, hi = percentile_ci(boot[:, a] - boot[:, b], confidence_level)
        out.append(Difference(systems[a], systems[b], Estimate(float(theta[a] - theta[b]), lo, hi,
                                                               n=len(boot), method="percentile" if len(boot) else "",
                                                               confidence_level=confidence_level)))
    return tuple(out)


def _ranking(systems: list[str], theta: FloatArray, boot: FloatArray, confidence_level: float) -> tuple[Rank, ...]:
    """Rank 1 = highest estimate (ties share the better rank); the rank's interval over the resamples where every
    system has an estimate, its ends whole ranks (the percentiles taken as the nearest rank outward)."""
    point = sps.rankdata(-np.nan_to_num(theta, nan=-np.inf), method="min")
    ok = np.isfinite(boot).all(axis=1)
    ranks = sps.rankdata(-boot[ok], axis=1, method="min") if ok.any() else np.empty((0, len(systems)))
    rows = [Rank(s, int(point[i]), *_rank_bounds(ranks[:, i], confidence_level)) for i, s in enumerate(systems)]
    return tuple(sorted(rows, key=lambda r: (r.rank, natural_key(r.system))))


# ------------------------------------------------------------------------------------------------ inputs


def judged_frame(items: pd.DataFrame, human_scores: pd.DataFrame, judge_scores: pd.DataFrame,
                 dimension: str) -> pd.DataFrame:
    """item_id, doc_id, system_id, judge, human for every item the judge scored (human NaN where nobody rated it):
    PPI's input. ``human_scores`` / ``judge_scores`` as evalcore.model's human_scores and Run.scores()."""
    hs = human_scores[human_scores["dimension"] == dimension][["item_id", "score"]].rename(columns={"score": "human"})
    judged = judge_scores[["item_id", "judge"]].drop_duplicates("item_id")
    out = items[["item_id", "doc_id", "system_id"]].merge(judged, on="item_id", how="inner")
    return out.merge(hs.drop_duplicates("item_id"), on="item_id", how="left")[FRAME_COLUMNS]


def pairwise_frame(preferences: pd.DataFrame, comparisons: pd.DataFrame, items: pd.DataFrame, *,
                   dimension: str) -> pd.DataFrame:
    """Each judged pair as two rows, one per model: item_id (the pair), doc_id, system_id (the model), judge (its
    points by the judge's combined verdict: 1 win, 0.5 tie, 0 loss; NaN if unreadable) and human (the mean of its
    points over the pair's votes; NaN where nobody voted). A model's mean is then its win rate, ties halved. Pairs of
    two outputs of the same model are left out."""
    from evalcore.meta.preference import align_to_preferences, judge_outcomes

    prefs = preferences[preferences["dimension"] == dimension]
    judged = judge_outcomes(align_to_preferences(comparisons, prefs), dimension)
    if judged.empty:
        raise ValueError(f"the run has no verdicts on dimension {dimension!r}")
    points = {"a": 1.0, "b": 0.0, "tie": 0.5}
    votes = prefs.assign(points=prefs["preferred"].map(points)).groupby("pair_id")["points"].mean()
    system_of = items.drop_duplicates("item_id").set_index("item_id")["system_id"].astype(str)
    judge_a = judged["verdict"].map(points).to_numpy(dtype=float)
    human_a = votes.reindex(judged["pair_id"]).to_numpy(dtype=float)
    half = {"item_id": judged["pair_id"].to_numpy(), "doc_id": judged["doc_id"].to_numpy()}
    a = pd.DataFrame({**half, "system_id": system_of.reindex(judged["item_a"]).to_numpy(), "judge": judge_a,
                      "human": human_a})
    b = pd.DataFrame({**half, "system_id": system_of.reindex(judged["item_b"]).to_numpy(), "judge": 1 - judge_a,
                      "human": 1 - human_a})
    # a pair of two outputs of the same model says nothing about that model's win rate
    differ = (a["system_id"] != b["system_id"]).to_numpy()
    both = pd.concat([a[differ], b[differ]], ignore_index=True)
    both = both[both["system_id"].notna()].reset_index(drop=True)
    if both.empty:
        raise ValueError("no judged pair compares outputs of two different models: there is no win rate to estimate")
    return both


def hide_ratings(frame: pd.DataFrame, n_documents: int, random_state: Seed = 0) -> pd.DataFrame:
    """The frame with human ratings kept on ``n_documents`` documents drawn at random (without replacement) and
    removed elsewhere: what PPI would give had the humans rated only those (for simulations and for trying PPI on a
    fully rated dataset)."""
    docs = np.array(sorted(frame.loc[frame["human"].notna(), "doc_id"].astype(str).unique()))
    if not 1 <= n_documents <= len(docs):
        raise ValueError(f"n_documents must be between 1 and the {len(docs)} rated documents, got {n_documents}")
    keep = set(np.random.default_rng(random_state).choice(docs, size=n_documents, replace=False))
    return frame.assign(human=frame["human"].where(frame["doc_id"].astype(str).isin(keep)))


# ------------------------------------------------------------------------------------------------ planning


@dataclass(frozen=True)
class PlanRow:
    """Rated documents a system needs for an interval of ``target_width`` (full width), out of ``n_documents``
    judged; None where even rating every judged document would not reach it."""

    system: str
    n_documents: int
    human_only: int | None
    ppi: int | None
    lam: float  # PPI's lambda at that many rated documents (1 for classic PPI)

    json_keys: ClassVar[JsonKeys] = (("system", "system"), ("n_documents", "n_documents"),
                                     ("human_only", "human_only"), ("ppi", "ppi"), ("lambda", "lam"))


def interval_widths(n: npt.ArrayLike, n_total: int, var_y: float, var_hat: float, cov: float, *, method: str,
                    confidence_level: float = 0.95) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(human-only width, PPI width, lambda) when n of n_total items are rated: widths 2 z se with
    se^2 = var(Y) / n for humans alone and lambda^2 var(Yhat) / (N) + var(Y - lambda Yhat) / n for PPI (N = n_total - n
    unrated; PPI++'s lambda = cov / ((1 + n/N) var(Yhat)), clipped to [0, 1])."""
    rated = np.asarray(n, dtype=float)
    big_n = n_total - rated
    if method == "ppi":
        lam = np.where(big_n > 0, 1.0, 0.0)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            lam = np.where(big_n > 0, np.clip(cov * big_n / (n_total * var_hat), 0, 1), 0.0) if var_hat > 0 \
                else np.zeros_like(rated)
    rect = var_y - 2 * lam * cov + lam ** 2 * var_hat
    with np.errstate(invalid="ignore", divide="ignore"):
        imputed = np.where(big_n > 0, lam ** 2 * var_hat / np.where(big_n > 0, big_n, 1), 0.0)
    z2 = 2 * _z(confidence_level)
    return z2 * np.sqrt(var_y / rated), z2 * np.sqrt(imputed + rect / rated), lam


def plan_rated_documents(frame: pd.DataFrame, target_width: float, *, method: str = "ppi++",
                         confidence_level: float = 0.95) -> tuple[PlanRow, ...]:
    """Per system: how many of its judged documents humans must rate for a ``target_width`` interval of its mean,
    with PPI and with humans alone; the variances and covariance come from the items rated so far (at least 2)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if not (math.isfinite(target_width) and target_width > 0):
        raise ValueError(f"target_width must be a positive number, got {target_width}")
    f = check_frame(frame)
    f = f[f["judge"].notna()].assign(system_id=f["system_id"].astype(str))
    rows = []
    for s in sorted(f["system_id"].unique(), key=natural_key):
        g = f[f["system_id"] == s]
        rated = g[g["human"].notna()]
        if len(rated) < 2:
            raise ValueError(f"system {s!r} has {len(rated)} rated item(s): planning needs at least 2 to estimate "
                             "the variances")
        y, yhat, all_hat = rated["human"].to_numpy(), rated["judge"].to_numpy(), g["judge"].to_numpy()
        var_hat = float(np.var(all_hat, ddof=1))
        cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
        n = np.arange(2, len(g) + 1)
        wh, wp, lam = interval_widths(n, len(g), float(np.var(y)), var_hat, cov, method=method,
                                      confidence_level=confidence_level)
        n_ppi = _first(n, wp <= target_width)
        rows.append(PlanRow(system=s, n_documents=int(len(g)), human_only=_first(n, wh <= target_width), ppi=n_ppi,
                            lam=float(lam[n_ppi - 2]) if n_ppi is not None else math.nan))
    return tuple(rows)


def _first(n: IntArray, ok: BoolArray) -> int | None:
    return int(n[np.argmax(ok)]) if ok.any() else None
