"""Selective evaluation with a guarantee: trust the judge where it is sure, escalate the rest (Jung, Brahman & Choi,
"Trust or Escalate: LLM Judges with Provable Guarantees for Human Agreement", ICLR 2025, arXiv:2407.18370).

Each item has a confidence c (the judge's probability of its verdict, the share of its draws that agree, or the share
of a jury's judges that agree) and an agreement flag a (the judge's verdict agrees with the humans'). The judge keeps
an item when c >= lambda and abstains otherwise. On a human-labelled calibration part, lambda is chosen so that

    P( P(agree | c >= lambda-hat) >= 1 - alpha ) >= 1 - delta        (their Eq. 1; the outer P over calibration sets)

by fixed-sequence testing (their Sec. 3.2, Algorithm 1): for each candidate lambda, from the strictest to the
loosest, test H_lambda: "the disagreement rate of the kept items exceeds alpha" with the exact binomial p-value

    p(lambda) = BinomCDF(k(lambda); n(lambda), alpha)

(k the kept calibration items that disagree, n those kept), reject while p(lambda) <= delta, and stop at the first
candidate that fails; lambda-hat is the loosest rejected one. Testing in a fixed order needs no multiplicity
correction, since a later hypothesis is only tested once all earlier ones were rejected. p(lambda) <= delta is the
same condition as the one-sided Clopper-Pearson (1 - delta) upper bound on the disagreement rate being <= alpha (the
binomial CDF falls as its rate rises), which is how the bound is reported here.

The candidates are the calibration items' distinct confidences (the paper uses a grid; any fixed order of candidates
chosen before the labels are seen keeps the guarantee). A candidate keeping fewer than ``fewest_items(alpha, delta)``
items, n with (1 - alpha)^n <= delta, can never be rejected, even with every kept item agreeing; the sequence starts
at the strictest candidate keeping that many, a choice made from the confidences alone (started above it, it would
stop at once whenever the top confidence is held by few items). When even that candidate fails, no threshold is
certified: the judge keeps nothing, and the result says why (too few calibration items for the bound to reach
alpha, or too many of the most confident ones disagree).

What the guarantee needs: the calibration and test items exchangeable (a random split of the documents, here), and
the humans' verdict taken as the truth. The held-out part then reports what the chosen threshold buys: the share of
items kept (coverage) and their agreement, with a two-sided Clopper-Pearson interval.

Agreement (``agrees``): the same preference (pairwise: a / b / tie), the same label (categorical), or for a rating
|judge - human| <= tolerance, by default one scale point (``DEFAULT_TOLERANCE``): a 1-5 judge that says 4 where the
experts' mean is 3.33 agrees; one that says 5 does not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, SupportsFloat

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from evalcore.meta.arrays import BoolArray, FloatArray
from evalcore.meta.results import Estimate, missing

DEFAULT_TOLERANCE = 1.0  # scale points within which a rating agrees with the humans' (stated in every result)


def clopper_pearson_upper(k: int, n: int, delta: float) -> float:
    """The one-sided (1 - delta) Clopper-Pearson upper bound on a rate with k events in n trials (1 when n is 0)."""
    if n <= 0 or k >= n:
        return 1.0
    return float(sps.beta.ppf(1.0 - delta, k + 1, n - k))


def clopper_pearson(k: int, n: int, confidence_level: float = 0.95) -> tuple[float, float]:
    """The two-sided exact (Clopper-Pearson) interval for a rate, k events in n trials."""
    a = 1.0 - confidence_level
    lo = 0.0 if k <= 0 else float(sps.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k >= n else float(sps.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


def agrees(judge: npt.ArrayLike, human: npt.ArrayLike, *, kind: str = "interval",
           tolerance: float = DEFAULT_TOLERANCE) -> BoolArray:
    """Whether each judge verdict agrees with the humans': equal for a label or preference (``kind`` "binary",
    "nominal", "ordinal", "pairwise"), within ``tolerance`` scale points for a rating ("interval"). A missing judge
    value (a failed parse) never agrees."""
    if kind == "interval":
        j = np.asarray(judge, dtype=float)
        h = np.asarray(human, dtype=float)
        with np.errstate(invalid="ignore"):
            result: BoolArray = np.abs(j - h) <= tolerance + 1e-9
            return result
    j = np.asarray(judge, dtype=object)
    h = np.asarray(human, dtype=object)
    return np.array([_same(a, b) for a, b in zip(j, h)], dtype=bool)


def _same(a: SupportsFloat | str | None, b: SupportsFloat | str | None) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return False
    try:
        return abs(float(a) - float(b)) < 1e-9
    except (TypeError, ValueError):
        return str(a) == str(b)


@dataclass(frozen=True)
class Step:
    """One candidate threshold of the fixed sequence: kept calibration items, those that disagree, the bound."""

    threshold: float
    n_kept: int
    n_disagree: int
    upper_bound: float  # one-sided (1 - delta) Clopper-Pearson bound on the kept items' disagreement rate
    passed: bool


@dataclass(frozen=True)
class Calibration:
    """The chosen threshold (None: nothing certified, the judge keeps nothing), the sequence tested, and why."""

    threshold: float | None
    upper_bound: float  # the bound at the chosen threshold (at the strictest candidate when none passed)
    n_calibration: int
    steps: tuple[Step, ...]
    reason: str = ""  # why nothing was certified ("" when a threshold was)


def choose_threshold(confidence: npt.ArrayLike, agree: npt.ArrayLike, *, alpha: float, delta: float,
                     candidates: npt.ArrayLike | None = None) -> Calibration:
    """Fixed-sequence testing (Jung et al. 2025, Algorithm 1) on calibration items: the loosest threshold whose
    kept items' disagreement has a (1 - delta) Clopper-Pearson upper bound <= alpha, testing from the strictest and
    stopping at the first failure. ``candidates`` default to the items' distinct confidences."""
    if not (0 < alpha < 1 and 0 < delta < 1):
        raise ValueError(f"alpha and delta must lie strictly between 0 and 1, got alpha={alpha}, delta={delta}")
    c = np.asarray(confidence, dtype=float)
    a = np.asarray(agree, dtype=bool)
    ok = ~np.isnan(c)
    c, a = c[ok], a[ok]
    cands = np.unique(c if candidates is None else np.asarray(candidates, dtype=float))[::-1]
    # kept and disagreeing counts at every candidate at once: items sorted by confidence, counted cumulatively
    order = np.argsort(-c, kind="stable")
    cum_k = np.concatenate([[0], np.cumsum(~a[order])])
    n_at = len(c) - np.searchsorted(np.sort(c), cands, side="left")
    steps: list[Step] = []
    chosen = None
    need = fewest_items(alpha, delta)
    for lam, n in zip(cands, n_at):
        if n < need:
            continue  # can never be rejected, whatever the labels: skipping it uses the confidences only
        n, k = int(n), int(cum_k[n])
        ub = clopper_pearson_upper(k, n, delta)
        passed = n > 0 and ub <= alpha
        steps.append(Step(float(lam), n, k, ub, passed))
        if not passed:
            break
        chosen = steps[-1]
    if chosen is not None:
        return Calibration(chosen.threshold, chosen.upper_bound, int(len(c)), tuple(steps))
    return Calibration(None, steps[0].upper_bound if steps else 1.0, int(len(c)), tuple(steps),
                       _why_nothing(steps, len(c), alpha, delta))


def fewest_items(alpha: float, delta: float) -> int:
    """The fewest kept calibration items that can certify a threshold: n with (1 - alpha)^n <= delta, where even n
    agreeing items bound the disagreement rate at alpha. A candidate keeping fewer can never be rejected whatever
    its labels, so the sequence starts at the strictest candidate keeping this many (a choice made from the
    confidences alone, which keeps the guarantee; starting above it would stop the sequence at once)."""
    return math.ceil(math.log(delta) / math.log(1 - alpha) - 1e-12)


def _why_nothing(steps: list[Step], n_items: int, alpha: float, delta: float) -> str:
    need = fewest_items(alpha, delta)
    if not steps:
        return (f"the calibration part has {n_items} items with a confidence, fewer than the {need} that even "
                f"in full agreement with the humans bound the disagreement rate at alpha {alpha:g} with "
                f"confidence {1 - delta:g}")
    s = steps[0]
    if s.n_disagree == 0:
        return (f"the {s.n_kept} most confident calibration items all agree with the humans, but they bound the "
                f"disagreement rate only at {s.upper_bound:.3f}, above alpha {alpha:g}")
    return (f"at the strictest threshold ({s.threshold:g}) {s.n_disagree} of the {s.n_kept} kept calibration "
            f"items disagree with the humans: the upper bound {s.upper_bound:.3f} on the disagreement rate exceeds "
            f"alpha {alpha:g}, so no threshold is certified and the judge keeps nothing")


@dataclass(frozen=True)
class SelectiveResult:
    """What the chosen threshold buys on the held-out (test) items."""

    threshold: float | None
    alpha: float
    delta: float
    calibration: Calibration
    coverage: Estimate  # share of test items kept (Clopper-Pearson 95% interval)
    agreement_kept: Estimate  # agreement with the humans on the kept test items (Clopper-Pearson 95% interval)
    abstained: tuple[str, ...]  # test items the judge abstains on: for a stronger judge or the humans
    kept: tuple[str, ...] = field(default=())

    @property
    def sentence(self) -> str:
        """The result in words, true for every outcome."""
        if self.threshold is None:
            return (f"No confidence threshold is certified at alpha {self.alpha:g}, delta {self.delta:g}: "
                    f"{self.calibration.reason}. Every held-out item goes to a stronger judge or to the humans.")
        cov, agr = self.coverage, self.agreement_kept
        if cov.n == 0:
            return f"Threshold {self.threshold:.3g} is certified on the calibration part; there is no held-out item."
        kept = f"the judge keeps {cov.statistic:.0%} of the {cov.n} held-out items"
        if agr.n == 0:
            return (f"Threshold {self.threshold:.3g} is certified on the calibration part, but {kept}: it abstains on "
                    f"all of them.")
        return (f"At confidence >= {self.threshold:.3g} {kept}; they agree with the humans at {agr.statistic:.0%} "
                f"(95% CI {agr.ci_low:.0%}-{agr.ci_high:.0%}); the guarantee asks at least {1 - self.alpha:.0%} "
                f"with probability {1 - self.delta:.0%} over calibration sets.")


def rate_estimate(k: int, n: int, reason: str, confidence_level: float = 0.95) -> Estimate:
    """k of n as an Estimate with its Clopper-Pearson interval; missing with ``reason`` when n is 0."""
    if n == 0:
        return missing(0, reason)
    lo, hi = clopper_pearson(k, n, confidence_level)
    return Estimate(k / n, lo, hi, n=n, method="clopper-pearson", confidence_level=confidence_level)


def evaluate(cal: Calibration, item_ids: npt.ArrayLike, confidence: npt.ArrayLike, agree: npt.ArrayLike, *,
             alpha: float, delta: float) -> SelectiveResult:
    """Apply a calibration's threshold to held-out items: coverage, agreement on the kept ones, the abstained ids.
    An item without a confidence (a failed parse) is abstained on."""
    ids = np.asarray(item_ids, dtype=object).astype(str)
    c = np.asarray(confidence, dtype=float)
    a = np.asarray(agree, dtype=bool)
    if cal.threshold is None:
        kept = np.zeros(len(ids), dtype=bool)
    else:
        with np.errstate(invalid="ignore"):
            kept = c >= cal.threshold
    coverage = rate_estimate(int(kept.sum()), len(ids), "no held-out items")
    agreement = rate_estimate(int(a[kept].sum()), int(kept.sum()), "the judge keeps no held-out item")
    return SelectiveResult(cal.threshold, alpha, delta, cal, coverage, agreement,
                           tuple(ids[~kept].tolist()), tuple(ids[kept].tolist()))


def split_documents(doc_ids: Iterable[object], n_calibration: int, seed: int = 0) -> tuple[set[str], set[str]]:
    """A random split of the documents: ``n_calibration`` for calibration, the rest held out."""
    docs = sorted({str(d) for d in doc_ids})
    if not 1 <= n_calibration < len(docs):
        raise ValueError(f"calibration documents must be between 1 and {len(docs) - 1} (the dataset has "
                         f"{len(docs)} documents), got {n_calibration}")
    perm = np.random.default_rng(seed).permutation(len(docs))
    cal = {docs[i] for i in perm[:n_calibration]}
    return cal, set(docs) - cal


@dataclass(frozen=True)
class Stage:
    """One stage of a cascade: its confidence and agreement on every item, and its cost per item judged."""

    name: str
    confidence: FloatArray
    agree: FloatArray
    cost_per_item: float


def cascade(stages: list[Stage], calibration: FloatArray, *, alpha: float, delta: float,
            human_cost: float) -> dict[str, Any]:
    """A cascade (Jung et al. 2025, Sec. 4: Cascaded Selective Evaluation): each stage calibrated on the
    calibration items that reach it, keeps what it is sure of on the held-out items, and passes the rest on;
    humans take what the last stage abstains on. Each stage's threshold is tested at the same alpha and delta on
    the calibration items it sees, so every kept item carries its stage's guarantee (the paper's union bound over
    stages gives delta times the number of stages for all at once). Returns per stage: threshold, items kept,
    their agreement, cost; and the total cost per held-out item."""
    cal = np.asarray(calibration, dtype=bool)
    reach_cal, reach_test = cal.copy(), ~cal
    n_test = int((~cal).sum())
    rows, total = [], 0.0
    for st in stages:
        c = np.asarray(st.confidence, dtype=float)
        a = np.asarray(st.agree, dtype=bool)
        calib = choose_threshold(c[reach_cal], a[reach_cal], alpha=alpha, delta=delta)
        keep = np.zeros(len(c), dtype=bool) if calib.threshold is None else (np.nan_to_num(c, nan=-np.inf)
                                                                            >= calib.threshold)
        kept_test = reach_test & keep
        total += st.cost_per_item * int(reach_test.sum())
        rows.append({"stage": st.name, "threshold": calib.threshold, "reason": calib.reason,
                     "reached": int(reach_test.sum()), "kept": int(kept_test.sum()),
                     "agreement_kept": rate_estimate(int(a[kept_test].sum()), int(kept_test.sum()),
                                                     "this stage keeps no held-out item"),
                     "cost_per_item": st.cost_per_item})
        reach_cal, reach_test = reach_cal & ~keep, reach_test & ~keep
    humans = int(reach_test.sum())
    total += human_cost * humans
    return {"stages": rows, "to_humans": humans, "test_items": n_test,
            "cost_per_item": total / n_test if n_test else float("nan")}
