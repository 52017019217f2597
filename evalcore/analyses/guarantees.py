"""Selective evaluation on a run (evalcore.meta.selective; Jung, Brahman & Choi 2025): each item's verdict, the
humans', whether they agree, and the judge's confidence, then the threshold certified on a random part of the
documents and what it keeps on the rest. ``meta --selective`` and the Guarantees section render ``selective``.

Confidence, the first the run has (``source`` names it):

- ``logprob``: the judge's own probability of its verdict, from the score distribution a log-prob run keeps per
  item (G-Eval's Eq. 1 weighting, Liu et al. 2023): for a rating the probability mass within the tolerance of the
  judge's score, for a label the probability of the label given;
- ``draws``: the share of the run's K draws that agree with its verdict (within the tolerance for a rating);
- ``orders``: a pairwise run judged in both presentation orders: the share of the two orders that give its verdict
  (1 when both agree; 0 when they differ, the verdict then being a tie that neither order gave);
- ``jury``: other runs given as a jury: the share of all the judges (this run included) that agree with its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from evalcore import runs as runs_mod
from evalcore.meta import selective as sel
from evalcore.meta.preference import align_to_preferences, judge_outcomes, majority_votes
from evalcore.model import Dataset, Run

if TYPE_CHECKING:  # scikit-learn loads where a calibration is fitted
    from sklearn.isotonic import IsotonicRegression


@dataclass(frozen=True)
class Verdicts:
    """One row per item (or pair): item_id, doc_id, judge, human, agree, confidence; the kind and the source."""

    frame: pd.DataFrame
    kind: str
    source: str  # "" when the run has no confidence
    tolerance: float | None


def _kind(dataset: Dataset, dim: str) -> str:
    d = dataset.dimension(dim)
    return d.kind if d.is_categorical else "interval"


def _logprob_confidence(run: Run, dim: str, frame: pd.DataFrame, kind: str, tol: float) -> pd.Series | None:
    j = run.judgments
    if j.empty or "detail" not in j.columns:
        return None
    j = j[(j["dimension"] == dim) & (j["status"] == "ok")]
    judge = frame.set_index("item_id")["judge"]
    out = {}
    for item, detail in zip(j["item_id"], j["detail"]):
        dist = detail.get("distribution") if isinstance(detail, dict) else None
        if not dist or item not in judge.index:
            continue
        v = np.array([float(k) for k in dist], dtype=float)
        p = np.array(list(dist.values()), dtype=float)
        if p.sum() <= 0:
            continue
        near = np.abs(v - judge[item]) <= (tol + 1e-9 if kind == "interval" else 1e-9)
        out[item] = float(p[near].sum() / p.sum())
    return pd.Series(out, dtype=float) if out else None


def _share_agreeing(values: pd.DataFrame, verdict: pd.Series, kind: str, tol: float) -> pd.Series:
    """item_id -> share of the rows of ``values`` (item_id, judge) that agree with the item's verdict."""
    v = values.dropna(subset=["judge"])
    ref = v["item_id"].map(verdict)
    hit = sel.agrees(v["judge"].to_numpy(), ref.to_numpy(), kind=kind, tolerance=tol)
    n_all = values.groupby("item_id").size()
    return (pd.Series(hit, index=v.index).groupby(v["item_id"]).sum() / n_all).astype(float)


def score_verdicts(dataset: Dataset, run: Run, dim: str, *, tolerance: float = sel.DEFAULT_TOLERANCE,
                   jury: list[Run] | None = None) -> Verdicts:
    """A rated or labelled dimension's verdicts, agreement and confidence (module docstring)."""
    kind = _kind(dataset, dim)
    frame = runs_mod.score_frame(dataset, run, dim)
    frame["agree"] = sel.agrees(frame["judge"], frame["human"], kind=kind, tolerance=tolerance)
    verdict = frame.set_index("item_id")["judge"]
    conf, source = _logprob_confidence(run, dim, frame, kind, tolerance), "logprob"
    if conf is None and run.n_draws > 1:
        conf, source = _share_agreeing(run.draw_scores(dim), verdict, kind, tolerance), "draws"
    if conf is None and jury:
        votes = pd.concat([m.scores(dim)[["item_id", "judge"]] for m in [run, *jury]], ignore_index=True)
        votes = votes[votes["item_id"].isin(verdict.index)]
        conf, source = _share_agreeing(votes, verdict, kind, tolerance), "jury"
    if conf is None:
        conf, source = pd.Series(dtype=float), ""
    frame["confidence"] = frame["item_id"].map(conf).astype(float)
    frame.loc[frame["judge"].isna(), "confidence"] = np.nan  # a failed parse is never kept
    return Verdicts(frame, kind, source, tolerance if kind == "interval" else None)


def pairwise_verdicts(dataset: Dataset, run: Run, dim: str) -> Verdicts:
    """A pairwise dimension: the judge's combined verdict per pair against the humans' majority; confidence from
    the two presentation orders (module docstring)."""
    prefs = dataset.preferences[dataset.preferences["dimension"] == dim]
    comps = align_to_preferences(run.comparisons[run.comparisons["dimension"] == dim], prefs)
    judged = judge_outcomes(comps)
    gold = majority_votes(prefs)[["pair_id", "majority"]]
    f = judged.merge(gold, on="pair_id", how="inner")
    both = f["ab"].notna() & f["ba"].notna()
    conf = np.where(both, (f["ab"].eq(f["verdict"]).astype(float) + f["ba"].eq(f["verdict"]).astype(float)) / 2,
                    np.nan)
    source = "orders" if both.any() else ""
    frame = pd.DataFrame({"item_id": f["pair_id"].astype(str), "doc_id": f["doc_id"].astype(str),
                          "judge": f["verdict"], "human": f["majority"],
                          "agree": sel.agrees(f["verdict"], f["majority"], kind="pairwise"),
                          "confidence": np.where(f["verdict"].isna(), np.nan, conf)})
    return Verdicts(frame, "pairwise", source, None)


@dataclass(frozen=True)
class SelectiveAnalysis:
    """``selective`` for one dimension: the verdicts' source, the split, and the held-out result."""

    verdicts: Verdicts
    result: sel.SelectiveResult | None  # None when the run has no confidence
    calibration_docs: int
    test_docs: int
    reason: str = ""  # why there is no result

    def as_dict(self) -> dict:
        v, r = self.verdicts, self.result
        out = {"confidence": v.source or None, "agreement": _agreement_rule(v),
               "calibration_docs": self.calibration_docs, "test_docs": self.test_docs}
        if r is None:
            return {**out, "threshold": None, "coverage": None, "agreement_kept": None, "abstained": [],
                    "guarantee": None, "sentence": self.reason}
        return {**out, "threshold": r.threshold, "coverage": r.coverage, "agreement_kept": r.agreement_kept,
                "guarantee": {"alpha": r.alpha, "delta": r.delta},
                "calibration_bound": r.calibration.upper_bound, "calibration_items": r.calibration.n_calibration,
                "abstained": list(r.abstained), "sentence": r.sentence}


def _agreement_rule(v: Verdicts) -> str:
    if v.kind == "interval":
        return f"|judge - human| <= {v.tolerance:g} scale points"
    return "the same preference (a / b / tie) as the humans' majority" if v.kind == "pairwise" else \
        "the same label as the humans'"


def verdicts(dataset: Dataset, run: Run, dim: str, *, tolerance: float = sel.DEFAULT_TOLERANCE,
             jury: list[Run] | None = None) -> Verdicts:
    if run.is_pairwise or dim not in set(run.judgments.get("dimension", [])):
        return pairwise_verdicts(dataset, run, dim)
    return score_verdicts(dataset, run, dim, tolerance=tolerance, jury=jury)


def selective(dataset: Dataset, run: Run, dim: str, *, alpha: float, delta: float, calibration_docs: int,
              seed: int = 0, tolerance: float = sel.DEFAULT_TOLERANCE, jury: list[Run] | None = None
              ) -> SelectiveAnalysis:
    """Certify a threshold on ``calibration_docs`` random documents and apply it to the others."""
    v = verdicts(dataset, run, dim, tolerance=tolerance, jury=jury)
    f = v.frame
    if f.empty:
        return SelectiveAnalysis(v, None, 0, 0, f"the run has no item with a human {dim!r} to compare with")
    cal_docs, test_docs = sel.split_documents(f["doc_id"], calibration_docs, seed)
    if not v.source:
        why = ("the run has no confidence per item (no log-prob distribution, one draw per item, one "
               "presentation order, no jury given): nothing can be certified, and the judge keeps nothing")
        return SelectiveAnalysis(v, None, len(cal_docs), len(test_docs), why)
    is_cal = f["doc_id"].astype(str).isin(cal_docs).to_numpy()
    c, a = f["confidence"].to_numpy(dtype=float), f["agree"].to_numpy(dtype=bool)
    calib = sel.choose_threshold(c[is_cal], a[is_cal], alpha=alpha, delta=delta)
    res = sel.evaluate(calib, f["item_id"].to_numpy()[~is_cal], c[~is_cal], a[~is_cal], alpha=alpha, delta=delta)
    return SelectiveAnalysis(v, res, len(cal_docs), len(test_docs))


# ------------------------------------------------------------------------------- conformal intervals, calibration
def _split_frame(dataset: Dataset, run: Run, dim: str, calibration_docs: int, seed: int):
    frame = runs_mod.score_frame(dataset, run, dim)
    cal_docs, test_docs = sel.split_documents(frame["doc_id"], calibration_docs, seed)
    is_cal = frame["doc_id"].astype(str).isin(cal_docs).to_numpy()
    return frame, is_cal, len(cal_docs), len(test_docs)


def human_step(human: pd.Series | np.ndarray) -> float:
    """The spacing of the points a human score can take: 1 for single ratings on an integer scale, 1/3 for the mean
    of three (SummEval's experts), the smallest gap between distinct scores when every score sits on its grid,
    else 1."""
    v = np.unique(np.asarray(human, dtype=float)[~np.isnan(np.asarray(human, dtype=float))])
    if len(v) < 2:
        return 1.0
    for k in range(1, 11):  # the mean of k ratings on an integer scale lies on a 1/k grid
        if np.allclose(v * k, np.round(v * k), atol=1e-6):
            return 1.0 / k
    return 1.0


def conformal(dataset: Dataset, run: Run, dim: str, *, level: float, calibration_docs: int, seed: int = 0,
              step: float | None = None, ties: str = "randomised") -> dict:
    """Split conformal intervals (evalcore.meta.conformal) calibrated on ``calibration_docs`` random documents,
    measured on the others: coverage, mean width, the midpoint's correlation with the human score beside the
    judge's, and the same per system. The intervals are sets of the points the human score takes (``human_step``
    unless ``step`` is given); ties among the residuals are broken at random by default (coverage the level, not
    the level plus the ties' mass; ``ties="conservative"``: the quantile widened outward)."""
    from evalcore.meta.conformal import split_conformal

    frame, is_cal, n_cal, n_test = _split_frame(dataset, run, dim, calibration_docs, seed)
    scale = dataset.dimension(dim).scale
    step = human_step(frame["human"]) if step is None else step
    cal, test = frame[is_cal], frame[~is_cal]
    res = split_conformal(cal["judge"], cal["human"], test["judge"], test["human"], level=level, scale=scale,
                          step=step, ties=ties, seed=seed)
    t = test.assign(low=res.low, high=res.high)
    t = t.assign(covered=(t["human"] >= t["low"] - 1e-9) & (t["human"] <= t["high"] + 1e-9),
                 width=t["high"] - t["low"])
    per_system = {str(s): {"coverage": float(g["covered"].mean()), "mean_width": float(g["width"].mean()),
                           "items": int(len(g))} for s, g in t.groupby("system_id", sort=True)}
    ok = t.dropna(subset=["judge", "human"])
    judge_r = float(ok["judge"].corr(ok["human"])) if len(ok) > 2 else float("nan")
    return {"level": level, "calibration_docs": n_cal, "test_docs": n_test, "test_items": int(len(t)),
            "half_width": res.q, "step": step, "ties": ties, "coverage": res.coverage, "mean_width": res.mean_width,
            "midpoint_correlation": res.midpoint_correlation, "judge_correlation": judge_r,
            "per_system": per_system, "note": res.note,
            "intervals": t[["item_id", "low", "high"]].assign(item_id=t["item_id"].astype(str))
            .to_dict("records")}


def _isotonic_fit(x: np.ndarray, y: np.ndarray) -> IsotonicRegression:
    from sklearn.isotonic import IsotonicRegression

    ok = ~(np.isnan(x) | np.isnan(y))
    return IsotonicRegression(out_of_bounds="clip").fit(x[ok], y[ok])


def _mae(pred: np.ndarray, y: np.ndarray) -> float:
    ok = ~(np.isnan(pred) | np.isnan(y))
    return float(np.mean(np.abs(pred[ok] - y[ok]))) if ok.any() else float("nan")


def isotonic_calibration(dataset: Dataset, run: Run, dim: str, *, calibration_docs: int, seed: int = 0) -> dict:
    """An isotonic map judge -> human (scikit-learn's IsotonicRegression, clipped outside the fitted range) fitted
    on the calibration documents and applied to the others: mean absolute error to the human score of the mapped
    score, of the judge's own and of the calibration part's mean human score (the map should beat that constant).
    ``transfer``: for each system, the map fitted on the other systems' calibration items, tested on its held-out
    items (does a map learnt on some systems carry to a new one?)."""
    frame, is_cal, n_cal, n_test = _split_frame(dataset, run, dim, calibration_docs, seed)
    x, y = frame["judge"].to_numpy(dtype=float), frame["human"].to_numpy(dtype=float)
    fit = _isotonic_fit(x[is_cal], y[is_cal])
    test = ~is_cal
    mapped = np.where(np.isnan(x), np.nan, fit.predict(np.nan_to_num(x)))
    const = np.full(len(y), np.nanmean(y[is_cal]))
    systems = frame["system_id"].astype(str).to_numpy()
    transfer = {}
    for s in sorted(set(systems)):
        own, rest = systems == s, systems != s
        if not (own & test).any() or not (rest & is_cal).any():
            continue
        f = _isotonic_fit(x[rest & is_cal], y[rest & is_cal])
        m = own & test
        pred = np.where(np.isnan(x[m]), np.nan, f.predict(np.nan_to_num(x[m])))
        transfer[s] = {"items": int(m.sum()), "mae_mapped": _mae(pred, y[m]), "mae_judge": _mae(x[m], y[m]),
                       "mae_constant": _mae(np.full(m.sum(), np.nanmean(y[rest & is_cal])), y[m])}
    return {"method": "isotonic", "calibration_docs": n_cal, "test_docs": n_test,
            "mae_mapped": _mae(mapped[test], y[test]), "mae_judge": _mae(x[test], y[test]),
            "mae_constant": _mae(const[test], y[test]), "transfer": transfer}


def cascade(dataset: Dataset, runs: list[Run], dim: str, *, alpha: float, delta: float, calibration_docs: int,
            costs: list[float], human_cost: float, seed: int = 0,
            tolerance: float = sel.DEFAULT_TOLERANCE) -> dict:
    """A cascade of judges (Jung et al. 2025, Sec. 4): the first run keeps what it is sure of, the next sees what it
    abstains on, humans the rest (evalcore.meta.selective.cascade), on the items every run judged. ``costs``: each
    run's cost per item judged, ``human_cost`` a person's, in one unit."""
    if len(costs) != len(runs):
        raise ValueError(f"{len(runs)} runs in the cascade need {len(runs)} costs per item, got {len(costs)}")
    frames = [verdicts(dataset, r, dim, tolerance=tolerance).frame.set_index("item_id") for r in runs]
    common = frames[0].index
    for f in frames[1:]:
        common = common.intersection(f.index)
    if len(common) == 0:
        raise ValueError(f"the runs of the cascade share no item with a human {dim!r}")
    docs = frames[0].loc[common, "doc_id"].astype(str)
    cal_docs, test_docs = sel.split_documents(docs, calibration_docs, seed)
    is_cal = docs.isin(cal_docs).to_numpy()
    stages = [sel.Stage(r.run_id, f.loc[common, "confidence"].to_numpy(dtype=float),
                        f.loc[common, "agree"].to_numpy(dtype=bool), float(c))
              for r, f, c in zip(runs, frames, costs)]
    out = sel.cascade(stages, is_cal, alpha=alpha, delta=delta, human_cost=human_cost)
    return {**out, "guarantee": {"alpha": alpha, "delta": delta}, "calibration_docs": len(cal_docs),
            "test_docs": len(test_docs), "human_cost": human_cost}


def cross_fitted_map(frame: pd.DataFrame, labelled: np.ndarray, *, folds: int = 5, seed: int = 0) -> np.ndarray:
    """The isotonic map's predictions as a PPI predictor, cross-fitted so that no labelled item is predicted by a
    map fitted on its own label (Zrnic & Candes 2024, cross-prediction-powered inference): the labelled documents
    fall in ``folds`` random folds, a labelled item gets the map fitted on the other folds, an unlabelled item the
    mean of the fold maps."""
    x, y = frame["judge"].to_numpy(dtype=float), frame["human"].to_numpy(dtype=float)
    docs = frame["doc_id"].astype(str).to_numpy()
    lab_docs = np.array(sorted(set(docs[labelled])), dtype=object)
    fold_of = dict(zip(lab_docs, np.random.default_rng(seed).permutation(len(lab_docs)) % folds))
    fold = np.array([fold_of.get(d, -1) for d in docs])
    out = np.full(len(x), np.nan)
    unl = np.zeros(len(x))
    xs = np.nan_to_num(x)
    for k in range(folds):
        train = labelled & (fold != k)
        if not train.any():
            continue
        f = _isotonic_fit(x[train], y[train])
        out[labelled & (fold == k)] = f.predict(xs[labelled & (fold == k)])
        unl += f.predict(xs)
    out[~labelled] = unl[~labelled] / folds
    return np.where(np.isnan(x), np.nan, out)


def ppi_with_map(dataset: Dataset, run: Run, dim: str, *, calibration_docs: int, seed: int = 0) -> dict:
    """PPI++ of each system's mean human score with the calibration documents as the rated ones, the judge's raw
    score against the cross-fitted isotonic map as the predictor: interval width and label saving of each."""
    from evalcore.meta import ppi

    frame, is_cal, _, _ = _split_frame(dataset, run, dim, calibration_docs, seed)
    hidden = frame.assign(human=np.where(is_cal, frame["human"], np.nan))
    mapped = hidden.assign(judge=cross_fitted_map(frame, is_cal, seed=seed))
    scale = dataset.dimension(dim).scale
    raw = ppi.ppi_by_system(hidden, n_resamples=0, scale=scale).per_system
    via = {s.system: s for s in ppi.ppi_by_system(mapped, n_resamples=0, scale=scale).per_system}
    return {s.system: {"width_judge": s.ci_high - s.ci_low, "label_saving_judge": s.label_saving,
                       "width_map": via[s.system].ci_high - via[s.system].ci_low,
                       "label_saving_map": via[s.system].label_saving} for s in raw if s.system in via}


# ------------------------------------------------------------------------------ labelling stratified by the verdict
def stratified_plan(dataset: Dataset, run: Run, dim: str, *, n_labels: int, calibration_docs: int,
                    seed: int = 0) -> dict:
    """For a binary dimension: plan ``n_labels`` human labels over the held-out documents' items stratified by the
    judge's verdict (evalcore.meta.stratified: Neyman allocation, inverse-probability weights), each stratum's
    positive share p_j from the calibration documents' human labels, and the saving against simple random sampling
    (the labels it needs for the same variance). A failed parse is a stratum of its own ("no verdict"); a stratum
    with no calibration item takes p_j = 0.5, the largest variance, and the note says so."""
    from evalcore.meta import stratified

    d = dataset.dimension(dim)
    if d.kind != "binary":
        raise ValueError(f"a stratified labelling plan needs a binary dimension; {dim!r} is {d.kind}")
    frame, is_cal, n_cal, n_test = _split_frame(dataset, run, dim, calibration_docs, seed)
    positive = float(d.scale_max)
    stratum = np.where(frame["judge"].isna(), "no verdict",
                       np.where(frame["judge"].astype(float) == positive, "judge positive", "judge negative"))
    is_pos = (frame["human"].astype(float) == positive).to_numpy()
    test = stratum[~is_cal]
    share, guessed = {}, []
    for name in sorted(set(test)):
        cal = is_cal & (stratum == name)
        share[name] = float(is_pos[cal].mean()) if cal.any() else 0.5
        if not cal.any():
            guessed.append(name)
    p = stratified.plan(test, share, n_labels)
    note = (f"no calibration item in {', '.join(guessed)}: its positive share taken as 0.5 (the largest variance)"
            if guessed else "")
    return {"n_labels": n_labels, "n_allocated": int(sum(p.allocation)), "calibration_docs": n_cal,
            "test_docs": n_test, "test_items": int(len(test)), "positive": positive,
            "strata": [{"stratum": s, "items": n, "positive_share": q, "labels": a, "inclusion": w}
                       for s, n, q, a, w in zip(p.strata, p.sizes, p.positive_share, p.allocation, p.inclusion)],
            "variance_stratified": p.variance_stratified, "variance_random": p.variance_random,
            "saving": p.saving, "note": note}
