"""Prediction-powered estimates of each system's mean human score from a judge's scores on every item and human
ratings on some (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference", Science 2023;
power-tuned PPI++: Angelopoulos, Duchi & Zrnic, "PPI++: Efficient prediction-powered inference", arXiv:2311.01453).

Within one system each document holds one output, so the items are the units. With n rated items (human Y, judge
Yhat) and N unrated ones (judge Yhat~), the estimate of the mean human score is

    theta_lambda = lambda * mean(Yhat~) + mean(Y - lambda * Yhat)

- classic PPI: lambda = 1 (the judge's mean on the unrated items, corrected by the mean of human - judge on the rated
  ones: the "rectifier");
- PPI++: lambda = cov(Y, Yhat) / ((1 + n/N) var(Yhat)), clipped to [0, 1], the value that minimises the estimate's
  variance (ADZ23, the mean case of their Eq. for lambda-hat); lambda = 0 is the human-only mean.

The 95% interval is the normal (CLT) one, theta +- z * sqrt(sd(lambda Yhat~)^2 / N + sd(Y - lambda Yhat)^2 / n)
with population standard deviations, as ppi_py's ``ppi_mean_ci``; covariance with 1/n and the judge's variance
over all items with 1/(n + N - 1), as ppi_py's ``_calc_lam_glm``. The tests hold every system's figures to ppi_py's
``ppi_mean_pointestimate`` / ``ppi_mean_ci`` (it is a test dependency, not imported here: the formula is a few lines,
while the package pulls numba, statsmodels and a downloader in).

Beside it: the human-only estimate (the rated items' mean, lambda = 0) and the judge-only one (the judge's mean on
every item: its interval is about the judge's mean, and the distance to the human-only value is the judge's bias).

Differences between systems and the ranking rest on documents that several systems share: their intervals come from
resampling documents with replacement (evalcore.meta.resampling's draws), every system's estimate recomputed on the
resample with its lambda held at the full-data value (PPI++'s lambda is consistent, so its variation is second
order). A system with no unrated item is estimated by its humans alone (lambda = 0: PPI has nothing to add).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as sps

from evalcore.meta.resampling import BLOCK_CELLS, resample_counts
from evalcore.meta.results import Estimate
from evalcore.meta.validation import check_confidence_level
from evalcore.model import natural_key

METHODS = ("ppi", "ppi++")
FRAME_COLUMNS = ["item_id", "doc_id", "system_id", "judge", "human"]


def mean_dict(e: Estimate) -> dict:
    """A classical mean as ``meta --json`` writes it (README: ``human_only`` / ``judge_only``)."""
    return {"estimate": _num(e.statistic), "ci_low": _num(e.ci_low), "ci_high": _num(e.ci_high), "n": e.n}


@dataclass(frozen=True)
class SystemEstimate:
    system: str
    estimate: float
    ci_low: float
    ci_high: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    human_only: Estimate  # the classical mean of the labelled items' human scores, beside the PPI estimate
    judge_only: Estimate  # the mean of the judge's scores on every item (biased by the judge's own bias)

    def as_dict(self) -> dict:
        return {"system": self.system, "estimate": _num(self.estimate), "ci_low": _num(self.ci_low),
                "ci_high": _num(self.ci_high), "lambda": _num(self.lam), "n_labelled": self.n_labelled,
                "n_unlabelled": self.n_unlabelled, "human_only": mean_dict(self.human_only),
                "judge_only": mean_dict(self.judge_only)}


@dataclass(frozen=True)
class Difference:
    system_a: str
    system_b: str
    estimate: float  # theta_a - theta_b
    ci_low: float
    ci_high: float

    def as_dict(self) -> dict:
        return {"system_a": self.system_a, "system_b": self.system_b, "estimate": _num(self.estimate),
                "ci_low": _num(self.ci_low), "ci_high": _num(self.ci_high)}


@dataclass(frozen=True)
class Rank:
    system: str
    rank: int       # 1 = highest estimate
    rank_low: float  # the 2.5th and 97.5th percentiles of its rank over the document resamples
    rank_high: float

    def as_dict(self) -> dict:
        return {"system": self.system, "rank": self.rank, "rank_low": _num(self.rank_low),
                "rank_high": _num(self.rank_high)}


@dataclass(frozen=True)
class PPIResult:
    method: str
    confidence_level: float
    per_system: tuple[SystemEstimate, ...]
    differences: tuple[Difference, ...]
    ranking: tuple[Rank, ...]
    n_resamples: int
    judge_failed: int  # items left out: the judge has no score for them

    def as_dict(self) -> dict:
        return {"method": self.method, "confidence_level": self.confidence_level,
                "per_system": [s.as_dict() for s in self.per_system],
                "differences": [d.as_dict() for d in self.differences],
                "ranking": [r.as_dict() for r in self.ranking], "n_resamples": self.n_resamples,
                "judge_failed": self.judge_failed}


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _z(confidence_level: float) -> float:
    check_confidence_level(confidence_level)
    return float(sps.norm.ppf(0.5 + confidence_level / 2))


def power_tuned_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray) -> float:
    """PPI++'s variance-minimising lambda for a mean, clipped to [0, 1] (ppi_py's ``_calc_lam_glm`` for the mean:
    cov(Y, Yhat) with 1/n over ((1 + n/N) var(Yhat) over labelled and unlabelled items with 1/(n + N - 1)))."""
    n, big_n = len(y), len(yhat_unlabelled)
    all_hat = np.concatenate([yhat, yhat_unlabelled])
    var_hat = float(np.var(all_hat, ddof=1)) if len(all_hat) > 1 else 0.0
    if big_n == 0 or var_hat == 0:
        return 0.0  # nothing unrated, or a constant judge: the judge carries no information
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    return float(np.clip(cov / ((1 + n / big_n) * var_hat), 0.0, 1.0))


def ppi_mean(y, yhat, yhat_unlabelled, *, lam: float | None = 1.0,
             confidence_level: float = 0.95) -> tuple[float, float, float, float]:
    """(estimate, ci_low, ci_high, lambda) of the mean of Y: lambda 1 = classic PPI, None = PPI++ (power-tuned),
    0 = the labelled items' mean alone (module docstring)."""
    y, yhat, yu = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_unlabelled))
    if len(y) != len(yhat):
        raise ValueError(f"ppi_mean: {len(y)} human ratings but {len(yhat)} judge scores on the rated items")
    n, big_n = len(y), len(yu)
    if n == 0:
        return math.nan, math.nan, math.nan, math.nan
    if big_n == 0:
        lam = 0.0  # every item rated: the estimate is the humans' mean
    elif lam is None:
        lam = power_tuned_lambda(y, yhat, yu)
    rect = y - lam * yhat
    est = float((lam * yu).mean() + rect.mean()) if big_n else float(rect.mean())
    var = float(np.var(rect)) / n + (float(np.var(lam * yu)) / big_n if big_n else 0.0)
    half = _z(confidence_level) * math.sqrt(var)
    return est, est - half, est + half, float(lam)


def _clt_mean(x: np.ndarray, z: float) -> Estimate:
    """The mean with its normal-approximation (CLT) interval."""
    if len(x) == 0:
        return Estimate(math.nan, n=0)
    m, half = float(x.mean()), z * float(np.std(x)) / math.sqrt(len(x))
    return Estimate(m, m - half, m + half, n=len(x), method="normal (CLT)")


def check_frame(frame: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"ppi frame: missing column(s) {missing}; it needs {FRAME_COLUMNS}")
    return frame[FRAME_COLUMNS].assign(judge=pd.to_numeric(frame["judge"], errors="coerce").astype(float),
                                       human=pd.to_numeric(frame["human"], errors="coerce").astype(float))


def system_estimate(frame: pd.DataFrame, system: str, method: str, confidence_level: float) -> SystemEstimate:
    """One system's PPI / PPI++ estimate, human-only and judge-only means (``frame``: that system's items with a
    judge score; human NaN where unrated)."""
    rated = frame["human"].notna().to_numpy()
    y, yhat = frame["human"].to_numpy()[rated], frame["judge"].to_numpy()[rated]
    yu = frame["judge"].to_numpy()[~rated]
    est, lo, hi, lam = ppi_mean(y, yhat, yu, lam=1.0 if method == "ppi" else None,
                                confidence_level=confidence_level)
    z = _z(confidence_level)
    return SystemEstimate(system=str(system), estimate=est, ci_low=lo, ci_high=hi, lam=lam, n_labelled=int(len(y)),
                          n_unlabelled=int(len(yu)), human_only=_clt_mean(y, z),
                          judge_only=_clt_mean(frame["judge"].to_numpy(), z))


def ppi_by_system(frame: pd.DataFrame, *, method: str = "ppi++", n_resamples: int = 1000, random_state=0,
                  confidence_level: float = 0.95) -> PPIResult:
    """Per system: PPI (``method`` "ppi") or PPI++ ("ppi++") beside human-only and judge-only estimates; between
    systems: differences and ranks with document-resample intervals.

    ``frame``: item_id, doc_id, system_id, judge, human (NaN where no human rated the item; evalcore.runs'
    score_frame joined to every judged item). Items without a judge score are left out and counted."""
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
    per = tuple(system_estimate(f[f["system_id"] == s], s, method, confidence_level) for s in systems)
    boot = document_resamples(f, systems, {p.system: p.lam for p in per}, n_resamples, random_state)
    theta = np.array([p.estimate for p in per])
    return PPIResult(method=method, confidence_level=float(confidence_level), per_system=per,
                     differences=_differences(systems, theta, boot, confidence_level),
                     ranking=_ranking(systems, theta, boot, confidence_level), n_resamples=int(n_resamples),
                     judge_failed=failed)


def document_resamples(frame: pd.DataFrame, systems: list[str], lams: dict[str, float], n_resamples: int,
                       random_state=0) -> np.ndarray:
    """(n_resamples x systems) estimates on document resamples: the draws of
    ``bootstrap_indices(n_documents, n_resamples, random_state)``, taken in blocks; NaN where a resample holds no
    rated item of a system."""
    docs, doc_code = np.unique(frame["doc_id"].astype(str).to_numpy(), return_inverse=True)
    n_docs, n_sys = len(docs), len(systems)
    sys_code = pd.Index(systems).get_indexer(frame["system_id"])
    lam = np.nan_to_num(np.array([lams[s] for s in systems]))
    rated = frame["human"].notna().to_numpy()
    y, yhat = frame["human"].to_numpy(), frame["judge"].to_numpy()
    sums = np.zeros((4, n_docs, n_sys))  # unrated judge sum, unrated count, rectifier sum, rated count
    np.add.at(sums[0], (doc_code[~rated], sys_code[~rated]), yhat[~rated])
    np.add.at(sums[1], (doc_code[~rated], sys_code[~rated]), 1.0)
    np.add.at(sums[2], (doc_code[rated], sys_code[rated]), y[rated] - lam[sys_code[rated]] * yhat[rated])
    np.add.at(sums[3], (doc_code[rated], sys_code[rated]), 1.0)
    out = np.empty((n_resamples, n_sys))
    rng = np.random.default_rng(random_state)
    step = max(1, BLOCK_CELLS // max(1, n_docs))
    for s in range(0, n_resamples, step):
        b = min(step, n_resamples - s)
        C = resample_counts(rng.integers(0, n_docs, size=(b, n_docs)), n_docs)
        ju, nu, rect, nr = (C @ sums[k] for k in range(4))
        with np.errstate(invalid="ignore", divide="ignore"):
            imputed = np.where(nu > 0, lam[None, :] * ju / np.where(nu > 0, nu, 1), 0.0)
            out[s:s + b] = np.where(nr > 0, imputed + rect / nr, np.nan)
    return out


def _percentiles(x: np.ndarray, confidence_level: float) -> tuple[float, float]:
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return math.nan, math.nan
    a = (1 - confidence_level) / 2 * 100
    lo, hi = np.percentile(x, [a, 100 - a])
    return float(lo), float(hi)


def _differences(systems, theta, boot, confidence_level) -> tuple[Difference, ...]:
    out = []
    for a, b in combinations(range(len(systems)), 2):
        lo, hi = _percentiles(boot[:, a] - boot[:, b], confidence_level)
        out.append(Difference(systems[a], systems[b], float(theta[a] - theta[b]), lo, hi))
    return tuple(out)


def _ranking(systems, theta, boot, confidence_level) -> tuple[Rank, ...]:
    """Rank 1 = highest estimate (ties share the better rank); the rank's interval over the resamples where every
    system has an estimate."""
    point = sps.rankdata(-np.nan_to_num(theta, nan=-np.inf), method="min")
    ok = np.isfinite(boot).all(axis=1)
    ranks = sps.rankdata(-boot[ok], axis=1, method="min") if ok.any() else np.empty((0, len(systems)))
    rows = [Rank(s, int(point[i]), *_percentiles(ranks[:, i], confidence_level)) for i, s in enumerate(systems)]
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


def hide_ratings(frame: pd.DataFrame, n_documents: int, random_state=0) -> pd.DataFrame:
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

    def as_dict(self) -> dict:
        return {"system": self.system, "n_documents": self.n_documents, "human_only": self.human_only,
                "ppi": self.ppi, "lambda": _num(self.lam)}


def interval_widths(n: np.ndarray, n_total: int, var_y: float, var_hat: float, cov: float, *, method: str,
                    confidence_level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(human-only width, PPI width, lambda) when n of n_total items are rated: widths 2 z se with
    se^2 = var(Y) / n for humans alone and lambda^2 var(Yhat) / (N) + var(Y - lambda Yhat) / n for PPI (N = n_total - n
    unrated; PPI++'s lambda = cov / ((1 + n/N) var(Yhat)), clipped to [0, 1])."""
    n = np.asarray(n, dtype=float)
    big_n = n_total - n
    if method == "ppi":
        lam = np.where(big_n > 0, 1.0, 0.0)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            lam = np.where(big_n > 0, np.clip(cov * big_n / (n_total * var_hat), 0, 1), 0.0) if var_hat > 0 \
                else np.zeros_like(n)
    rect = var_y - 2 * lam * cov + lam ** 2 * var_hat
    with np.errstate(invalid="ignore", divide="ignore"):
        imputed = np.where(big_n > 0, lam ** 2 * var_hat / np.where(big_n > 0, big_n, 1), 0.0)
    z2 = 2 * _z(confidence_level)
    return z2 * np.sqrt(var_y / n), z2 * np.sqrt(imputed + rect / n), lam


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


def _first(n: np.ndarray, ok: np.ndarray) -> int | None:
    return int(n[np.argmax(ok)]) if ok.any() else None
