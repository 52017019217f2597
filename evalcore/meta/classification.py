"""Agreement of a judge with the humans on categorical labels: Cohen's kappa, quadratic-weighted kappa (ordinal),
accuracy, precision / recall / F1, the confusion matrix, and the calibration of the judge's probabilities.

Input is a *label frame*: one row per item with ``item_id, doc_id, system_id, judge, human`` where ``human`` is a
category value of the dimension (``evalcore.model.Dimension.categories``: codes 0..K-1 when the dimension has
labels) and ``judge`` the judge's value, NaN where its reply could not be read (dropped and counted, never a class).
A judge value that is no category is read as follows (``judge_codes``): binary and ordinal take the nearest category
(G-Eval's probability-weighted 3.6 on a 1-5 ordinal scale is a 4; a 0.7 on a 0/1 scale is a 1); nominal categories
have no "nearest", so such a value is dropped and counted in ``invalid``. A ``human`` value between categories is a
mean of annotators' labels (0.67 = two of three said "pass"): binary and ordinal take the nearest category (for
binary, the majority; counted in ``human_rounded``), a value exactly halfway has no label and is left out
(``human_ties``); a nominal human value must be a category.

Point estimates come from scikit-learn (``cohen_kappa_score``, ``confusion_matrix``, ``accuracy_score``,
``precision_recall_fscore_support``, ``brier_score_loss``, ``calibration_curve``). Precision / recall / F1 are of the
positive class for a binary dimension (code 1: the second label, see evalcore.model) and macro averages otherwise;
a class the judge never predicts has no precision and a class the humans never chose has no recall (NaN, left out of
the macro average: scikit-learn's ``zero_division=np.nan``), which a bootstrap resample that loses a rare class would
otherwise turn into a spurious 0.

Confidence intervals: bootstrap over *documents*, as for correlations (evalcore.meta.resampling: same resampling,
``bootstrap_counts``, and the same BCa interval with the jackknife over documents). Every
statistic here is a function of the confusion matrix, so a resample is (counts of each document) @ (each document's
confusion table), all resamples in one product; the statistics are then computed from the stacked matrices by the
textbook formulas (``stats_from_confusion``; Cohen 1960 and 1968 for kappa and weighted kappa), which the tests check
against scikit-learn with the resample's item weights. The confusion matrix's own interval is per cell (the
percentile interval of that cell's count across resamples).

Calibration (``calibration``): where the judge gives a probability (G-Eval's score distribution, 002's p(yes)),
the Brier score, the expected calibration error (ECE: sum over equal-width bins of bin share x |fraction positive -
mean predicted|, Naeini et al. 2015; Guo et al. 2017 eq. 3) and the reliability diagram's points (scikit-learn's
``calibration_curve``). For a binary dimension the probability is that of the positive class; for more categories
it is *top-label* calibration (Guo et al. 2017): the probability of the judge's own choice against whether it is
right.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp
from sklearn.calibration import calibration_curve
from sklearn.metrics import (
    accuracy_score, brier_score_loss, cohen_kappa_score, confusion_matrix, precision_recall_fscore_support,
)

from evalcore.meta.arrays import FloatArray, IntArray, Seed
from evalcore.meta.intervals import CI_METHODS, bootstrap_interval, percentile_interval
from evalcore.meta.resampling import bootstrap_counts, jackknife_blocks
from evalcore.meta.scoreframe import numeric_column
from evalcore.meta.results import Estimate
from evalcore.meta.validation import check_choice, check_n_resamples
from evalcore.model import CATEGORICAL_KINDS, Dataset, Dimension, Run

STATISTICS = ("cohen_kappa", "weighted_kappa", "accuracy", "precision", "recall", "f1")
REQUIRED_COLUMNS = ("doc_id", "judge", "human")


# The keys ``meta --json`` writes for each statistic here (README "meta --json": agreement, calibration).
ESTIMATE_KEYS = ("statistic", "ci_low", "ci_high")


@dataclass(frozen=True)
class ClassificationResult:
    """Agreement of the judge's labels with the human labels (see the module docstring)."""

    kind: str
    labels: tuple[str, ...]  # names of the categories, in code order
    confusion: FloatArray  # K x K counts, rows = human label, columns = judge label
    confusion_low: FloatArray  # per-cell percentile interval of the count over document resamples
    confusion_high: FloatArray
    cohen_kappa: Estimate
    weighted_kappa: Estimate | None  # quadratic weights; ordinal dimensions only
    accuracy: Estimate
    precision: Estimate
    recall: Estimate
    f1: Estimate
    average: str  # "binary" (positive class) or "macro"
    n: int  # items compared
    dropped: int  # items whose judge value is missing (failed parse)
    invalid: int  # items whose judge value is no category (nominal only)
    human_rounded: int = 0  # human values (means) taken to the nearest category
    human_ties: int = 0  # human values halfway between two categories, left out
    n_resamples: int = 0
    confidence_level: float = 0.95

    def estimates(self) -> dict[str, Estimate]:
        out = {"cohen_kappa": self.cohen_kappa, "weighted_kappa": self.weighted_kappa, "accuracy": self.accuracy,
               "precision": self.precision, "recall": self.recall, "f1": self.f1}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class CalibrationResult:
    brier: Estimate
    ece: Estimate
    n: int
    n_bins: int
    target: str  # "positive class" (binary) or "top label"
    bins: pd.DataFrame = field(default_factory=pd.DataFrame)  # bin, lower, upper, mean_predicted, fraction_positive, count


# ---------------------------------------------------------------------------------------------------------- codes


def judge_codes(values: npt.ArrayLike, categories: npt.ArrayLike, kind: str) -> IntArray:
    """Category index (0..K-1) of each value; -1 for a missing value, -2 for a nominal value that is no category.

    Binary and ordinal values that are not a category take the nearest one (halfway goes up: 2.5 -> 3)."""
    cats = np.asarray(categories, dtype=float)
    v = np.asarray(values, dtype=float)
    out = np.full(v.shape, -1, dtype=np.int64)
    ok = ~np.isnan(v)
    if kind == "nominal":
        exact = np.isclose(v[:, None], cats[None, :], rtol=0, atol=1e-9) if len(v) else np.zeros((0, len(cats)), bool)
        hit = exact.any(axis=1)
        out[ok & hit] = exact[ok & hit].argmax(axis=1)
        out[ok & ~hit] = -2
        return out
    # nearest category; a value exactly halfway between two goes to the upper one
    dist = np.abs(v[ok][:, None] - cats[None, :])
    best = dist.min(axis=1, keepdims=True)
    out[ok] = np.where(np.isclose(dist, best, rtol=0, atol=1e-12), np.arange(len(cats)), -1).max(axis=1)
    return out


@dataclass(frozen=True)
class PreparedLabels:
    judge: IntArray  # category index per item
    human: IntArray
    doc: IntArray  # document code per item
    n_docs: int
    k: int
    dropped: int
    invalid: int
    human_rounded: int = 0  # human values between categories taken to the nearest one (binary / ordinal)
    human_ties: int = 0  # human values exactly halfway between two categories: no label, left out


def _human_codes(values: FloatArray, cats: tuple[float, ...], kind: str, name: str) -> tuple[IntArray, int]:
    """Category index of each human value; -3 where a binary/ordinal value lies exactly halfway between two.

    A human value between categories is a mean of annotators' labels (e.g. 0.67 = two of three said "pass"):
    binary and ordinal take the nearest category, which for binary is the majority. Nominal values must be
    categories, and no value may be missing or outside the categories' range."""
    exact = judge_codes(values, cats, "nominal")
    off = exact == -2
    missing = np.isnan(values)
    lo, hi = min(cats), max(cats)
    outside = ~missing & ((values < lo - 1e-9) | (values > hi + 1e-9))
    bad = missing | outside | (off if kind == "nominal" else np.zeros_like(off))
    if bad.any():
        row = int(bad.nonzero()[0][0])
        what = "missing" if missing[row] else \
            f"{values[row]:g}, which is no category ({', '.join(f'{c:g}' for c in cats)})"
        raise ValueError(f"{name}: column 'human' row {row} is {what}")
    if not off.any():
        return exact, 0
    c = np.asarray(cats)
    dist = np.abs(values[off][:, None] - c[None, :])
    two_nearest = np.sort(dist, axis=1)[:, :2]
    nearest = dist.argmin(axis=1)
    halfway = np.isclose(two_nearest[:, 0], two_nearest[:, 1], rtol=0, atol=1e-9)
    exact[off] = np.where(halfway, -3, nearest)
    return exact, int((~halfway).sum())


def prepare_labels(frame: pd.DataFrame, categories: Sequence[float], kind: str, *,
                   name: str = "label frame") -> PreparedLabels:
    """Validate a label frame; drop (and count) items whose judge value is missing or no category.

    Raises ValueError naming the column and row for a missing column, a missing or non-category human label."""
    check_choice(kind, CATEGORICAL_KINDS, "kind")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}; a label frame needs {list(REQUIRED_COLUMNS)}")
    cats = tuple(float(c) for c in categories)
    if len(cats) < 2:
        raise ValueError(f"{name}: a categorical dimension needs at least 2 categories, got {list(cats)}")
    cols = {col: numeric_column(frame, col, name, "a category value (encode labels with Dimension.encode)")
            for col in ("judge", "human")}
    human, rounded = _human_codes(cols["human"], cats, kind, name)
    human_ties = human == -3
    judge = judge_codes(cols["judge"], cats, kind)
    keep = (judge >= 0) & ~human_ties
    doc, doc_ids = pd.factorize(frame["doc_id"].to_numpy()[keep], sort=True)
    return PreparedLabels(judge=judge[keep], human=human[keep], doc=doc.astype(np.int64), n_docs=len(doc_ids),
                          k=len(cats), dropped=int(((judge == -1) & ~human_ties).sum()),
                          invalid=int(((judge == -2) & ~human_ties).sum()), human_rounded=rounded,
                          human_ties=int(human_ties.sum()))


# ------------------------------------------------------------------------------------- statistics of a confusion


def stats_from_confusion(C: FloatArray, *, average: str = "macro") -> dict[str, FloatArray]:
    """Every statistic for each confusion matrix in ``C`` (b x K x K, rows human, columns judge; any non-negative
    weights). NaN where undefined.

    kappa = (p_o - p_e) / (1 - p_e), p_o = trace / n, p_e = sum_i row_i col_i / n^2 (Cohen 1960);
    quadratic-weighted kappa = 1 - sum w_ij O_ij / sum w_ij E_ij, w_ij = (i - j)^2, E = row col^T / n (Cohen 1968);
    per class c: precision = C_cc / col_c, recall = C_cc / row_c, F1 = 2 C_cc / (row_c + col_c);
    ``average="binary"`` reports class 1 (the positive class), ``"macro"`` the mean over classes where defined.
    """
    C = np.asarray(C, dtype=float)
    if C.ndim == 2:
        C = C[None]
    k = C.shape[1]
    n = C.sum(axis=(1, 2))
    rows = C.sum(axis=2)  # human marginals
    cols = C.sum(axis=1)  # judge marginals
    diag = np.diagonal(C, axis1=1, axis2=2)
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    w = (i - j) ** 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        po = diag.sum(axis=1) / n
        pe = (rows * cols).sum(axis=1) / n ** 2
        kappa = (po - pe) / (1 - pe)
        expected = rows[:, :, None] * cols[:, None, :] / n[:, None, None]
        wkappa = 1 - (w * C).sum(axis=(1, 2)) / (w * expected).sum(axis=(1, 2))
        precision = diag / cols
        recall = diag / rows
        f1 = 2 * diag / (rows + cols)
    kappa[np.isclose(pe, 1.0)] = np.nan  # one category on both sides: agreement by chance is certain
    if average == "binary":
        p, r, f = precision[:, 1], recall[:, 1], f1[:, 1]
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # nanmean of an all-NaN row: NaN is the answer
            p, r, f = np.nanmean(precision, axis=1), np.nanmean(recall, axis=1), np.nanmean(f1, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = diag.sum(axis=1) / n
    return {"cohen_kappa": kappa, "weighted_kappa": wkappa, "accuracy": accuracy, "precision": p, "recall": r,
            "f1": f}


def sklearn_statistics(human: IntArray, judge: IntArray, k: int, *, average: str,
                       sample_weight: FloatArray | None = None) -> dict[str, float]:
    """The point estimates, from scikit-learn (category indices 0..K-1 on both sides)."""
    labels = list(range(k))
    out: dict[str, float] = {}
    if len(human) == 0:
        return {s: float("nan") for s in STATISTICS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns where a statistic is undefined; the NaN says it
        out["cohen_kappa"] = float(cohen_kappa_score(human, judge, labels=labels, sample_weight=sample_weight))
        out["weighted_kappa"] = float(cohen_kappa_score(human, judge, labels=labels, weights="quadratic",
                                                        sample_weight=sample_weight))
        out["accuracy"] = float(accuracy_score(human, judge, sample_weight=sample_weight))
        if average == "binary":
            p, r, f, _ = precision_recall_fscore_support(human, judge, labels=labels, pos_label=1, average="binary",
                                                         zero_division=np.nan, sample_weight=sample_weight)
        else:
            p, r, f, _ = precision_recall_fscore_support(human, judge, labels=labels, average="macro",
                                                         zero_division=np.nan, sample_weight=sample_weight)
    out.update(precision=float(p), recall=float(r), f1=float(f))
    return out


def doc_tables(p: PreparedLabels) -> sp.csr_matrix:
    """(K*K x docs) sparse: each document's confusion counts, so counts @ tables.T gives resampled matrices."""
    return sp.csr_matrix((np.ones(len(p.human)), (p.human * p.k + p.judge, p.doc)), shape=(p.k * p.k, p.n_docs))


def confusion_from_counts(p: PreparedLabels, counts: FloatArray) -> FloatArray:
    """Confusion matrices (b x K x K) of the multisets of documents given by ``counts`` (b x docs)."""
    C = np.asarray(counts, dtype=float)
    return np.ascontiguousarray((doc_tables(p) @ C.T).T).reshape(len(C), p.k, p.k)


# ------------------------------------------------------------------------------------------------- public API


def classify(frame: pd.DataFrame, *, categories: Sequence[float], kind: str, labels: Sequence[str] | None = None,
             n_resamples: int = 1000,
             confidence_level: float = 0.95, random_state: Seed = 0, ci_method: str = "bca") -> ClassificationResult:
    """Agreement of ``judge`` with ``human`` on a categorical dimension, with document-bootstrap CIs.

    ``categories``: the dimension's category values (``Dimension.categories``); ``kind``: "binary", "ordinal" or
    "nominal"; ``labels``: their names (default: the values). ``n_resamples=0`` skips the intervals.
    """
    check_choice(ci_method, CI_METHODS, "ci_method")
    check_n_resamples(n_resamples)
    p = prepare_labels(frame, categories, kind)
    names = tuple(str(x) for x in (labels if labels is not None else [f"{float(c):g}" for c in categories]))
    if len(names) != p.k:
        raise ValueError(f"{len(names)} label names for {p.k} categories")
    average = "binary" if kind == "binary" else "macro"
    point = sklearn_statistics(p.human, p.judge, p.k, average=average)
    cm = confusion_matrix(p.human, p.judge, labels=list(range(p.k))) if len(p.human) else np.zeros((p.k, p.k), int)
    lo_cells = hi_cells = np.full((p.k, p.k), np.nan)
    intervals: dict[str, tuple[float, float, str]] = {}
    if n_resamples > 0 and p.n_docs > 1:  # one document: every resample is it, so no interval (not a zero-width one)
        C = confusion_from_counts(p, bootstrap_counts(p.n_docs, n_resamples, random_state))
        boot = stats_from_confusion(C, average=average)
        jack = (stats_from_confusion(_jackknife_confusions(p), average=average) if ci_method == "bca" else None)
        for s in STATISTICS:
            lo, hi, _, used = bootstrap_interval(boot[s], confidence_level=confidence_level, method=ci_method,
                                                 estimate=point[s], jackknife=None if jack is None else jack[s])
            intervals[s] = (lo, hi, used)
        alpha = 1 - confidence_level
        lo_cells, hi_cells = np.quantile(C, [alpha / 2, 1 - alpha / 2], axis=0, method="inverted_cdf")  # counts

    def est(s: str) -> Estimate:
        lo, hi, used = intervals.get(s, (float("nan"), float("nan"), ""))
        return Estimate(statistic=point[s], ci_low=lo, ci_high=hi, n=len(p.human), method=used,
                        confidence_level=float(confidence_level), n_resamples=int(n_resamples),
                        dropped=p.dropped, resampling="documents" if intervals else "")

    return ClassificationResult(
        kind=kind, labels=names, confusion=np.asarray(cm), confusion_low=np.asarray(lo_cells),
        confusion_high=np.asarray(hi_cells), cohen_kappa=est("cohen_kappa"),
        weighted_kappa=est("weighted_kappa") if kind == "ordinal" else None, accuracy=est("accuracy"),
        precision=est("precision"), recall=est("recall"), f1=est("f1"), average=average, n=len(p.human),
        dropped=p.dropped, invalid=p.invalid, human_rounded=p.human_rounded, human_ties=p.human_ties,
        n_resamples=int(n_resamples), confidence_level=float(confidence_level),
    )


def _jackknife_confusions(p: PreparedLabels) -> FloatArray:
    return np.concatenate([confusion_from_counts(p, c) for c in jackknife_blocks(p.n_docs)]) if p.n_docs else \
        np.zeros((0, p.k, p.k))


# ----------------------------------------------------------------------------------------------- gold labels


def gold_labels(annotations: pd.DataFrame, dimension: str, categories: Sequence[float], kind: str, *,
                group: str | None = None) -> pd.DataFrame:
    """Each item's human label from its annotators: item_id, human, n_annotators, tie.

    binary / nominal: the majority label; an item whose top labels tie has no majority (human NaN, ``tie`` True)
    and is left out of the comparison. ordinal: the lower median of the annotators' categories (always one of them,
    never a tie). Annotator values must be categories of the dimension."""
    a = annotations[annotations["dimension"] == dimension]
    if group is not None:
        a = a[a["group"] == group]
    cats = np.asarray(categories, dtype=float)
    value = pd.to_numeric(a["value"], errors="coerce").to_numpy(dtype=float)
    codes = judge_codes(value, cats, "nominal")
    bad = (codes < 0) & ~np.isnan(value)
    if bad.any():
        row = a.index[bad.nonzero()[0][0]]
        r = a.loc[row]
        raise ValueError(f"annotations: row {row} (annotator {r['annotator']!r}, item {r['item_id']!r}, dimension "
                         f"{dimension!r}) holds {value[bad.nonzero()[0][0]]:g}, which is no category "
                         f"({', '.join(f'{c:g}' for c in cats)})")
    a = a.assign(code=codes)[codes >= 0]
    if a.empty:
        return pd.DataFrame(columns=["item_id", "human", "n_annotators", "tie"])
    counts = pd.crosstab(a["item_id"], a["code"]).reindex(columns=range(len(cats)), fill_value=0)
    m = counts.to_numpy()
    n = m.sum(axis=1)
    if kind == "ordinal":
        cum = np.cumsum(m, axis=1)
        idx = (cum >= (n[:, None] + 1) // 2).argmax(axis=1)  # lower median: the ceil(n/2)-th smallest
        human, tie = cats[idx], np.zeros(len(m), dtype=bool)
    else:
        top = m.max(axis=1, keepdims=True)
        tie = (m == top).sum(axis=1) > 1
        human = np.where(tie, np.nan, cats[m.argmax(axis=1)])
    return pd.DataFrame({"item_id": counts.index.to_numpy(), "human": human, "n_annotators": n, "tie": tie})


# ----------------------------------------------------------------------------------------------- calibration


def calibration(y: npt.ArrayLike, prob: npt.ArrayLike, doc: npt.ArrayLike | None = None, *, n_bins: int = 10,
                target: str = "positive class", n_resamples: int = 1000,
                confidence_level: float = 0.95, random_state: Seed = 0) -> CalibrationResult:
    """Brier score, ECE and the reliability diagram of probabilities ``prob`` for outcomes ``y`` (0/1).

    Bins are ``n_bins`` equal widths on [0, 1], assigned as scikit-learn's ``calibration_curve`` does; the
    reliability points come from ``calibration_curve`` itself. ``doc`` (one document id per item) enables the
    bootstrap over documents (percentile intervals)."""
    y = np.asarray(y, dtype=float)
    p = np.asarray(prob, dtype=float)
    if len(y) != len(p):
        raise ValueError(f"calibration: {len(y)} outcomes but {len(p)} probabilities")
    if len(p) and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
        raise ValueError("calibration: probabilities must lie in [0, 1] (no NaN)")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("calibration: outcomes must be 0 or 1")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    binid = np.searchsorted(edges[1:-1], p)  # calibration_curve's rule
    total = np.bincount(binid, minlength=n_bins).astype(float)
    sum_y = np.bincount(binid, weights=y, minlength=n_bins)
    sum_p = np.bincount(binid, weights=p, minlength=n_bins)
    n = len(y)
    if n == 0:
        nan = Estimate(float("nan"))
        return CalibrationResult(brier=nan, ece=nan, n=0, n_bins=n_bins, target=target)
    brier = float(brier_score_loss(y, p, pos_label=1.0))
    ece = float(np.abs(sum_y - sum_p).sum() / n)
    nonzero = total > 0
    frac_true, mean_pred = calibration_curve(y, p, n_bins=n_bins, strategy="uniform", pos_label=1.0)
    bins = pd.DataFrame({"bin": np.nonzero(nonzero)[0], "lower": edges[:-1][nonzero], "upper": edges[1:][nonzero],
                         "mean_predicted": mean_pred, "fraction_positive": frac_true,
                         "count": total[nonzero].astype(int)})
    b_lo = b_hi = e_lo = e_hi = float("nan")
    if n_resamples > 0 and doc is not None:
        # Per-document sums (squared error; items, outcomes and probabilities per bin), so a resample is
        # counts (resamples x docs) @ sums (docs x ...), never a resamples x items matrix.
        codes, ids = pd.factorize(np.asarray(doc), sort=True)
        d = len(ids)
        sq = np.bincount(codes, weights=(p - y) ** 2, minlength=d)
        cell = codes * n_bins + binid
        per = [np.bincount(cell, weights=w, minlength=d * n_bins).reshape(d, n_bins) for w in (None, y, p)]
        W = bootstrap_counts(d, n_resamples, random_state)
        n_b, y_b, p_b = (W @ x for x in per)
        with np.errstate(invalid="ignore", divide="ignore"):
            total_b = n_b.sum(axis=1)
            brier_b = W @ sq / total_b
            ece_b = np.abs(y_b - p_b).sum(axis=1) / total_b
        # the package's percentile interval (every resample holds a document, so none is undefined here)
        b_lo, b_hi, _ = percentile_interval(brier_b, confidence_level)
        e_lo, e_hi, _ = percentile_interval(ece_b, confidence_level)
    method = "percentile" if n_resamples else ""
    resampling = "documents" if n_resamples > 0 and doc is not None else ""

    def with_interval(point: float, lo: float, hi: float) -> Estimate:
        return Estimate(point, float(lo), float(hi), n=n, method=method, confidence_level=float(confidence_level),
                        n_resamples=int(n_resamples), resampling=resampling)

    return CalibrationResult(brier=with_interval(brier, b_lo, b_hi), ece=with_interval(ece, e_lo, e_hi), n=n,
                             n_bins=n_bins, target=target, bins=bins)


# ----------------------------------------------------------------------------------- a dataset, a run, a dimension


def judge_probabilities(judgments: pd.DataFrame, dimension: Dimension) -> pd.DataFrame:
    """The judge's probability of each category, per item, where its judgments carry one: item_id + one column per
    category (``p0 .. p{K-1}``, rows summing to 1). Items without a probability are left out.

    Read from the ``detail`` the scorers store with each judgment (evalcore.methods):
    - 002's implicit score (``p_yes``, ``p_no``; binary only): p(positive) = p(yes) / (p(yes) + p(no)), the yes/no
      mass renormalised (the implicit score itself, max(p(yes), 1 - p(no)), is a confidence, not p(yes));
    - G-Eval's score distribution (``distribution``: scale value -> probability, Eq. 1), or its sampled scores
      (``sample_counts``), renormalised over the dimension's categories;
    - otherwise, on a binary dimension, a *graded* judge value (the run has values strictly between the two
      categories, e.g. an imported classifier's p(pass) or a probability-weighted score on a 0-1 scale) is read as
      p(positive) = (value - negative) / (positive - negative): the expected value of a distribution over two points
      is exactly that. A judge whose values are all 0 or 1 gives no probability.
    """
    cats = dimension.categories
    cols = [f"p{i}" for i in range(len(cats))]
    if judgments.empty or not cats:
        return pd.DataFrame(columns=["item_id", *cols])
    rows = []
    details = judgments["detail"] if "detail" in judgments.columns else [None] * len(judgments)
    for item_id, status, detail in zip(judgments["item_id"], judgments["status"], details):
        if status != "ok" or not isinstance(detail, dict):
            continue
        probs = _probabilities_of(detail, cats, dimension.kind)
        if probs is not None:
            rows.append([item_id, *probs])
    out = pd.DataFrame(rows, columns=["item_id", *cols])
    if dimension.kind == "binary" and "value" in judgments.columns:
        out = pd.concat([out, _graded_values(judgments, cats, exclude=set(out["item_id"]))], ignore_index=True)
    return out


def _graded_values(judgments: pd.DataFrame, cats: tuple[float, ...], *, exclude: set[str]) -> pd.DataFrame:
    """p(positive) from graded binary judge values (see judge_probabilities); empty when the values are all labels."""
    neg, pos = cats
    ok = judgments[(judgments["status"] == "ok") & ~judgments["item_id"].isin(exclude)]
    v = pd.to_numeric(ok["value"], errors="coerce").to_numpy(dtype=float)
    inside = ~np.isnan(v) & (v >= min(neg, pos)) & (v <= max(neg, pos))
    graded = inside & ~np.isin(v, cats)
    if not graded.any() or not inside.all():
        return pd.DataFrame(columns=["item_id", "p0", "p1"])
    p = (v - neg) / (pos - neg)
    return pd.DataFrame({"item_id": ok["item_id"].to_numpy(), "p0": 1 - p, "p1": p})


def _probabilities_of(detail: dict[str, Any], cats: tuple[float, ...], kind: str) -> list[float] | None:
    if kind == "binary" and "p_yes" in detail and "p_no" in detail:
        yes, no = float(detail["p_yes"]), float(detail["p_no"])
        if yes + no <= 0:
            return None
        return [no / (yes + no), yes / (yes + no)]
    mass = detail.get("distribution") or detail.get("sample_counts")
    if not isinstance(mass, dict):
        return None
    out = np.zeros(len(cats))
    for key, p in mass.items():
        try:
            v = float(key)
        except (TypeError, ValueError):
            continue  # "unparsed" samples
        hit = [i for i, c in enumerate(cats) if abs(c - v) < 1e-9]
        if hit:
            out[hit[0]] += float(p)
    total = out.sum()
    return list(out / total) if total > 0 else None


@dataclass(frozen=True)
class LabelAgreement:
    """Everything the Alignment page and ``meta --json`` show for one run on one categorical dimension."""

    dimension: str
    kind: str
    labels: tuple[str, ...]
    positive: str | None
    gold: str  # where the human label comes from
    ties: int  # items whose annotators tie (no majority), left out
    result: ClassificationResult
    per_annotator: pd.DataFrame  # annotator, n, cohen_kappa (+ CI), weighted_kappa (ordinal), accuracy
    human_alpha: dict[str, Any] | None  # Krippendorff's alpha among the annotators at the dimension's level
    calibration: CalibrationResult | None


def annotator_group(annotations: pd.DataFrame, dimension: str) -> str | None:
    """The annotator group the gold label comes from: experts when there are, else the first group, else all."""
    a = annotations[annotations["dimension"] == dimension] if not annotations.empty else annotations
    if a.empty:
        return None
    groups = list(a["group"].dropna().unique()) if "group" in a.columns else []
    return "expert" if "expert" in groups else (groups[0] if groups else None)


def judge_labels(dataset: Dataset, run: Run, dimension: str, *, systems: list[str] | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(item_id, doc_id, system_id, judge) for every item the run judged on ``dimension``, and its probabilities.

    The judge's label is its value, except where it gave probabilities: a binary judge says "positive" when
    p(positive) >= 0.5 and a nominal judge picks its most probable category (G-Eval's expected value of a nominal
    code means nothing). Ordinal judges keep their value, rounded to the nearest category by ``classify``."""
    dim = dataset.dimension(dimension)
    judged = run.scores(dimension)[["item_id", "judge"]]
    items = dataset.items[["item_id", "doc_id", "system_id"]]
    if systems is not None:
        items = items[items["system_id"].isin(systems)]
    frame = items.merge(judged, on="item_id")
    j = run.judgments
    probs = judge_probabilities(j[j["dimension"] == dimension], dim)
    if len(probs) and dim.kind in ("binary", "nominal"):
        pm = probs.set_index("item_id")
        has = frame["item_id"].isin(pm.index).to_numpy()
        if has.any():
            mat = pm.loc[frame.loc[has, "item_id"]].to_numpy(dtype=float)
            pick = (mat[:, 1] >= 0.5).astype(int) if dim.kind == "binary" else mat.argmax(axis=1)
            # positional, not frame.loc[has, ...] = array: pandas 1.5.0 scrambles an array set through an
            # all-True mask (pandas GH 48701)
            judge = frame["judge"].to_numpy(dtype=float, copy=True)
            judge[has] = np.asarray(dim.categories, dtype=float)[pick]
            frame["judge"] = judge
    return frame.reset_index(drop=True), probs


def label_frame(dataset: Dataset, run: Run, dimension: str, *, systems: list[str] | None = None
                ) -> tuple[pd.DataFrame, str, int, pd.DataFrame]:
    """(label frame, where the gold comes from, ties, probabilities) for one run on one categorical dimension.

    The human label is the annotators' majority (binary, nominal) or lower median (ordinal) when the dataset has
    per-annotator ratings of the dimension (experts when there are), else ``human_scores``. Judge labels as in
    ``judge_labels``."""
    dim = dataset.dimension(dimension)
    ann = dataset.annotations
    group = annotator_group(ann, dimension)
    has_ann = not ann.empty and (ann["dimension"] == dimension).any()
    if has_ann:
        g = gold_labels(ann, dimension, dim.categories, dim.kind, group=group)
        # an adjudicator's final label (a labelling campaign, evalcore.labels) settles its item: a tie is no longer
        # left out, and a majority is overridden, as the item's human score already is
        finals = dataset.meta.get("final_labels", {}).get(dimension, {})
        settled = g["item_id"].astype(str).map(finals)
        g = g.assign(human=settled.where(settled.notna(), g["human"]), tie=g["tie"] & settled.isna())
        ties = int(g["tie"].sum())
        human = g.loc[~g["tie"], ["item_id", "human"]]
        who = f"{'lower median' if dim.kind == 'ordinal' else 'majority'} of the annotators" + \
            (f" ({group})" if group is not None else "") + \
            (f", or an adjudicator's final label on {int(settled.notna().sum())}" if settled.notna().any() else "")
    else:
        human = dataset.human_scores.loc[dataset.human_scores["dimension"] == dimension, ["item_id", "score"]] \
            .rename(columns={"score": "human"})
        ties, who = 0, "human_scores"
    judged, probs = judge_labels(dataset, run, dimension, systems=systems)
    frame = judged.merge(human, on="item_id")
    return frame[["item_id", "doc_id", "system_id", "judge", "human"]].reset_index(drop=True), who, ties, probs


class _LabelOptions(TypedDict):
    """What ``label_agreement`` hands ``classify`` for the run and for each annotator alike."""

    categories: Sequence[float]
    kind: str
    labels: Sequence[str] | None
    random_state: Seed
    confidence_level: float


def _per_annotator(judged: pd.DataFrame, annotations: pd.DataFrame, *, n_resamples: int,
                   **kw: Unpack[_LabelOptions]) -> list[dict[str, object]]:
    """The judge against each annotator alone (their labels as the human side): n, kappa with its interval,
    weighted kappa (ordinal) and accuracy; annotators with no label on a judged item are left out."""
    rows = []
    for annotator, sub in annotations.groupby("annotator", sort=True):
        f = judged.merge(sub[["item_id", "value"]].rename(columns={"value": "human"}), on="item_id")
        f = f[pd.to_numeric(f["human"], errors="coerce").notna()]
        if f.empty:
            continue
        r = classify(f, n_resamples=n_resamples, **kw)
        row = {"annotator": annotator, "n": r.n, "cohen_kappa": r.cohen_kappa.statistic,
               "ci_low": r.cohen_kappa.ci_low, "ci_high": r.cohen_kappa.ci_high}
        if r.weighted_kappa is not None:
            row["weighted_kappa"] = r.weighted_kappa.statistic
        row["accuracy"] = r.accuracy.statistic
        rows.append(row)
    return rows


def _label_calibration(frame: pd.DataFrame, probs: pd.DataFrame, dim: Dimension, *, n_resamples: int,
                       confidence_level: float, random_state: Seed) -> CalibrationResult | None:
    """The calibration of the judge's probabilities: of the positive class (binary) or of its top label; None
    when no judged item has them."""
    f = frame.merge(probs, on="item_id")
    f = f[pd.to_numeric(f["judge"], errors="coerce").notna()]
    if not len(f):
        return None
    cats = np.asarray(dim.categories)
    human_idx = judge_codes(f["human"].to_numpy(float), cats, "nominal")
    mat = f[[f"p{i}" for i in range(len(cats))]].to_numpy(dtype=float)
    if dim.kind == "binary":
        y, p, target = (human_idx == 1).astype(float), mat[:, 1], "positive class"
    else:
        choice = mat.argmax(axis=1)
        y, p, target = (choice == human_idx).astype(float), mat.max(axis=1), "top label"
    return calibration(y, np.clip(p, 0.0, 1.0), f["doc_id"].to_numpy(), target=target,
                       n_resamples=n_resamples, confidence_level=confidence_level, random_state=random_state)


def label_agreement(dataset: Dataset, run: Run, dimension: str, *, n_resamples: int = 1000, random_state: Seed = 0,
                    confidence_level: float = 0.95, systems: list[str] | None = None,
                    human_alpha: bool = True) -> LabelAgreement:
    """Kappa & co of ``run`` against the humans on a binary / nominal / ordinal dimension, per annotator, the
    annotators' own alpha, and the calibration of the judge's probabilities where it has them. ``systems``
    restricts the judge's comparisons to those systems' items (the annotators' alpha stays over all items).
    ``human_alpha=False`` skips the annotators' alpha (its BCa interval costs more than everything else here on
    large datasets; the app takes it from the Data page's table, which computes the same call)."""
    from evalcore.meta.agreement import krippendorff_alpha

    dim = dataset.dimension(dimension)
    if not dim.is_categorical:
        raise ValueError(f"dimension {dimension!r} is {dim.kind}: label agreement needs a binary, ordinal or nominal "
                         "dimension")
    frame, who, ties, probs = label_frame(dataset, run, dimension, systems=systems)
    kw: _LabelOptions = {"categories": dim.categories, "kind": dim.kind, "labels": dim.category_names,
                         "random_state": random_state, "confidence_level": confidence_level}
    result = classify(frame, n_resamples=n_resamples, **kw)
    ann = dataset.annotations
    group = annotator_group(ann, dimension)
    rows, alpha = [], None
    if group is not None or (not ann.empty and (ann["dimension"] == dimension).any()):
        a = ann[ann["dimension"] == dimension]
        if group is not None:
            a = a[a["group"] == group]
        judged = judge_labels(dataset, run, dimension, systems=systems)[0][["item_id", "doc_id", "judge"]]
        rows = _per_annotator(judged, a, n_resamples=n_resamples, **kw)
        if human_alpha and a["annotator"].nunique() >= 2:
            al = krippendorff_alpha(ann, dimension, group=group, level_of_measurement=dim.alpha_level,
                                    n_resamples=n_resamples, random_state=random_state)
            alpha = {"statistic": al.statistic, "ci_low": al.ci_low, "ci_high": al.ci_high,
                     "level": dim.alpha_level, "n_items": al.n, "n_annotators": al.n_annotators}
    cal = _label_calibration(frame, probs, dim, n_resamples=n_resamples, confidence_level=confidence_level,
                             random_state=random_state) if len(probs) else None
    return LabelAgreement(dimension=dimension, kind=dim.kind, labels=dim.category_names, positive=dim.positive,
                          gold=who, ties=ties, result=result, per_annotator=pd.DataFrame(rows), human_alpha=alpha,
                          calibration=cal)


def agreement_dict(report: LabelAgreement) -> dict[str, Any]:
    """``meta --json``'s ``dimensions.<dim>.agreement`` (keys documented in README.md)."""
    r = report.result
    out: dict[str, Any] = {"kind": report.kind, "labels": list(report.labels), "positive": report.positive,
                 "average": r.average, "gold": report.gold, "n": r.n, "dropped": r.dropped, "invalid": r.invalid,
                 "ties": report.ties + r.human_ties, "rounded": r.human_rounded, "n_resamples": r.n_resamples}
    for name, e in r.estimates().items():
        out[name] = e.as_dict(*ESTIMATE_KEYS)
    out["confusion_matrix"] = {"rows": "human", "columns": "judge", "labels": list(report.labels),
                               "statistic": r.confusion.astype(int).tolist(), "ci_low": r.confusion_low.tolist(),
                               "ci_high": r.confusion_high.tolist()}
    out["per_annotator"] = report.per_annotator.to_dict(orient="records")
    out["human_alpha"] = report.human_alpha
    if report.calibration is not None:
        c = report.calibration
        out["calibration"] = {"target": c.target, "n": c.n, "n_bins": c.n_bins, "brier": c.brier.as_dict(*ESTIMATE_KEYS),
                              "ece": c.ece.as_dict(*ESTIMATE_KEYS), "bins": c.bins.to_dict(orient="records")}
    return out
