"""Juries: a derived run made from two or more runs on the same items, and the judge-by-judge agreement matrix.

A jury run is a run like any other (stored in the store, every analysis, link and export reads it): its judgments
are, per item and dimension, an aggregate of its members' values:

- ``mean``: the mean of the members that scored the item;
- ``median``: their median;
- ``trimmed``: the mean after dropping the highest and the lowest value (three members or more; with two it is
  the mean);
- ``majority``: the commonest value (a vote, for labels or integer scores); a tie is broken by ``tie``: "low" (the
  lowest tied value), "high" (the highest) or "first" (the tied value of the earliest-listed member);
- ``weights="calibrated"``: a weighted mean whose weights are learned on ``calibration_docs`` documents drawn with
  ``seed`` (non-negative least squares of the human score on the members' values, Lawson & Hanson 1974, normalised
  to sum 1), and the jury holds only the OTHER documents, so every figure read on it is out of sample.

A member that failed on an item is left out of that item's aggregate; an item no member scored is a failed judgment.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evalcore import runs as runs_mod
from evalcore.labels import base_id
from evalcore.model import JUDGMENT_COLUMNS, STATUS_FAILED, STATUS_OK, Dataset, Run
from evalcore.meta import correlate
from evalcore.meta.results import Estimate

if TYPE_CHECKING:  # types only
    from evalcore.store import Store

AGGREGATES = ("mean", "median", "trimmed", "majority")
TIE_RULES = ("low", "high", "first")
METHOD = "jury"


@dataclass(frozen=True)
class JurySpec:
    """What a jury is made of: its members (run ids, in order), the aggregate, the tie rule and calibration."""

    members: tuple[str, ...]
    aggregate: str = "mean"
    tie: str = "low"
    weights: str = "equal"  # or "calibrated"
    calibration_docs: int = 0
    seed: int = 0

    def check(self) -> None:
        if len(self.members) < 2 or len(set(self.members)) != len(self.members):
            raise ValueError("a jury needs two or more different runs (--run A --run B ...)")
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"unknown aggregate {self.aggregate!r}; choose one of {', '.join(AGGREGATES)}")
        if self.tie not in TIE_RULES:
            raise ValueError(f"unknown tie rule {self.tie!r}; choose one of {', '.join(TIE_RULES)}")
        if self.weights not in ("equal", "calibrated"):
            raise ValueError(f"unknown weights {self.weights!r}; choose equal or calibrated")
        if self.weights == "calibrated" and self.calibration_docs < 2:
            raise ValueError("calibrated weights need --calibration-docs N (2 or more documents to learn them on)")


def member_matrix(members: list[Run], dimension: str) -> pd.DataFrame:
    """items x members table of one dimension's values (NaN where a member failed or did not score the item), on the
    items every member judged; columns in member order."""
    cols = {}
    for r in members:
        s = r.scores(dimension).set_index("item_id")["judge"]
        cols[r.run_id] = pd.to_numeric(s, errors="coerce").astype(float)
    wide = pd.DataFrame(cols)
    judged = [set(r.scores(dimension)["item_id"]) for r in members]
    common = sorted(set.intersection(*judged))
    return wide.loc[common]


def _vote(row: np.ndarray, tie: str) -> float:
    v = row[~np.isnan(row)]
    if v.size == 0:
        return math.nan
    values, counts = np.unique(v, return_counts=True)
    tied = values[counts == counts.max()]
    if tie == "low":
        return float(tied.min())
    if tie == "high":
        return float(tied.max())
    return float(next(x for x in v if x in set(tied)))  # the earliest-listed member's among the tied


def _trimmed(row: np.ndarray) -> float:
    v = np.sort(row[~np.isnan(row)])
    if v.size == 0:
        return math.nan
    return float(v[1:-1].mean()) if v.size >= 3 else float(v.mean())


def aggregate(values: np.ndarray, how: str, *, tie: str = "low", weights: np.ndarray | None = None) -> np.ndarray:
    """One value per row of an items x members matrix (NaN: that member did not score the item)."""
    X = np.asarray(values, dtype=float)
    ok = ~np.isnan(X)
    with np.errstate(invalid="ignore", divide="ignore"):
        if weights is not None:
            w = np.where(ok, weights[None, :], 0.0)
            return np.where(w.sum(axis=1) > 0, np.nansum(X * w, axis=1) / w.sum(axis=1), np.nan)
        if how == "mean":
            # nanmean's own arithmetic (NaN as 0, divided by the count), without its warning on an unscored row
            n = ok.sum(axis=1)
            return np.where(n > 0, np.where(ok, X, 0.0).sum(axis=1) / np.maximum(n, 1), np.nan)
        if how == "median":
            return np.array([np.median(r[~np.isnan(r)]) if (~np.isnan(r)).any() else math.nan for r in X])
    if how == "trimmed":
        return np.array([_trimmed(r) for r in X])
    if how == "majority":
        return np.array([_vote(r, tie) for r in X])
    raise ValueError(f"unknown aggregate {how!r}; choose one of {', '.join(AGGREGATES)}")


def calibration_split(dataset: Dataset, n_docs: int, seed: int) -> list[str]:
    """The documents the weights are learned on: ``n_docs`` of the dataset's documents drawn with ``seed``."""
    docs = sorted(dataset.items["doc_id"].astype(str).unique())
    if n_docs >= len(docs):
        raise ValueError(f"--calibration-docs {n_docs} leaves no document to report on: the dataset has "
                         f"{len(docs)} documents")
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(docs, size=n_docs, replace=False).tolist())


def learn_weights(X: np.ndarray, human: np.ndarray) -> np.ndarray:
    """Non-negative least-squares weights of the human score on the members' values (rows with every member and
    a human score), normalised to sum 1; equal weights when none is positive."""
    use = ~np.isnan(X).any(axis=1) & ~np.isnan(human)
    if use.sum() < 2:
        raise ValueError("the calibration documents hold fewer than two items every member scored")
    # centred, so that a member's offset on the scale is not mistaken for its weight
    from scipy.optimize import nnls  # imported here: scipy.optimize costs every CLI start otherwise

    Xc, yc = X[use] - X[use].mean(axis=0), human[use] - human[use].mean()
    w, _ = nnls(Xc, yc)
    return w / w.sum() if w.sum() > 0 else np.full(X.shape[1], 1.0 / X.shape[1])


def jury_run_id(dataset_id: str, name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "jury"
    return f"{dataset_id}/jury-{slug}"


def _dimension_rows(dataset: Dataset, members: list[Run], dim: str, spec: JurySpec,
                    calibration: list[str]) -> tuple[list[dict], dict]:
    """The jury's judgments on one dimension, and what was learned (weights)."""
    wide = member_matrix(members, dim)
    X = wide.to_numpy(dtype=float)
    weights = None
    doc_of = dataset.items.set_index("item_id")["doc_id"].astype(str)
    in_calibration = wide.index.map(lambda i: doc_of.get(i) in set(calibration)).to_numpy(dtype=bool)
    if spec.weights == "calibrated":
        human = dataset.human_table(dim).set_index("item_id")["human"].reindex(wide.index).to_numpy(dtype=float)
        weights = learn_weights(X[in_calibration], human[in_calibration])
        wide, X = wide[~in_calibration], X[~in_calibration]
    values = aggregate(X, spec.aggregate, tie=spec.tie, weights=weights)
    estimator = f"jury-{'weighted-mean' if weights is not None else spec.aggregate}({len(members)} judges)"
    rows = []
    for item, row, v in zip(wide.index, X, values):
        ok = not math.isnan(v)
        rows.append({"item_id": item, "dimension": dim, "raw": json.dumps(
            {m.run_id: (None if math.isnan(x) else float(x)) for m, x in zip(members, row)}),
            "value": v, "status": STATUS_OK if ok else STATUS_FAILED,
            "reason": "" if ok else "no member of the jury scored this item", "estimator": estimator})
    learned = {"weights": dict(zip(wide.columns, map(float, weights)))} if weights is not None else {}
    return rows, learned


def make_jury(dataset_id: str, spec: JurySpec, name: str, *, parse: str = "robust", store: Store | None = None
              ) -> Run:
    """The jury as a Run (not saved): its members' judgments aggregated per item and dimension, on the dimensions
    every member judged. See the module docstring for the aggregates and the calibrated weights."""
    spec.check()
    dataset = runs_mod.get_dataset(dataset_id, store)
    members = [runs_mod.load_run(r, parse=parse, store=store) for r in spec.members]
    for m in members:
        if m.dataset_id not in (dataset_id, base_id(dataset_id)):  # a labels view is judged by its base's runs
            raise ValueError(f"run {m.run_id} judged dataset {m.dataset_id}, not {dataset_id}")
        if m.judgments.empty:
            raise ValueError(f"run {m.run_id} holds no per-item judgments (a pairwise run cannot join a jury)")
    dims = [d for d in members[0].dimensions if all(d in m.dimensions for m in members[1:])
            and d in dataset.dimension_names]
    if not dims:
        raise ValueError("the runs share no dimension of the dataset: a jury aggregates one dimension at a time")
    calibration = calibration_split(dataset, spec.calibration_docs, spec.seed) if spec.weights == "calibrated" else []
    rows, learned = [], {}
    for dim in dims:
        r, info = _dimension_rows(dataset, members, dim, spec, calibration)
        rows += r
        if info:
            learned[dim] = info
    config: dict[str, Any] = {"method": METHOD, "jury": {"members": list(spec.members), "aggregate": spec.aggregate,
                                         "tie": spec.tie, "weights": spec.weights, "learned": learned,
                                         "calibration_docs": calibration, "seed": spec.seed},
              "parse_mode": parse, "estimator": rows[0]["estimator"] if rows else ""}
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
    config["jury"]["digest"] = digest
    label = f"Jury ({spec.aggregate if spec.weights == 'equal' else 'calibrated weights'}) of {len(members)}: {name}"
    return Run(run_id=jury_run_id(dataset_id, name), dataset_id=dataset_id, method=METHOD, model=name,
               label=label, config=config, parser="", origin="local",
               judgments=pd.DataFrame(rows, columns=JUDGMENT_COLUMNS))


def save_jury(run: Run, *, store: Store | None = None, owner: str | None = None) -> str:
    """Store the jury run (replacing a jury of the same name); its id."""
    from evalcore.store import default_store

    (store if store is not None else default_store()).save_imported_run(run, owner=owner)
    return run.run_id


# ------------------------------------------------------------------------------------------ the agreement matrix
def agreement_measure(dataset: Dataset, dimension: str, coefficient: str) -> str:
    """What the matrix holds: the correlation coefficient asked for, or for a label Cohen's kappa (quadratic-weighted
    for ordered categories), as the Alignment page reports labels."""
    dim = dataset.dimension(dimension)
    if not dim.is_categorical:
        return coefficient
    return "weighted_kappa" if dim.kind == "ordinal" else "cohen_kappa"


def _agreement(frame: pd.DataFrame, dataset: Dataset, dimension: str, measure: str, n_resamples: int,
               random_state: int) -> Estimate:
    if measure in ("cohen_kappa", "weighted_kappa"):
        from evalcore.meta.classification import classify

        dim = dataset.dimension(dimension)
        res = classify(frame, categories=dim.categories, kind=dim.kind, n_resamples=n_resamples,
                       random_state=random_state)
        return getattr(res, measure)
    return correlate(frame, coefficient=measure, n_resamples=n_resamples, random_state=random_state)


def agreement_matrix(dataset: Dataset, members: list[Run], dimension: str, *, coefficient: str = "spearman",
                     n_resamples: int = 1000, random_state: int = 0) -> tuple[list[list[Estimate]], list[Estimate]]:
    """Every pair of runs' agreement on the items both scored (dataset level, document-bootstrap interval) and each
    run's agreement with the human score: (matrix in member order, humans). The measure is ``agreement_measure``'s:
    ``coefficient``, or kappa on a label."""
    measure = agreement_measure(dataset, dimension, coefficient)
    frames = [runs_mod.score_frame(dataset, m, dimension) for m in members]
    matrix = []
    for i, a in enumerate(frames):
        row = []
        for j, b in enumerate(frames):
            if i == j:  # a judge with itself: 1 by definition, on the items it scored
                row.append(Estimate(1.0, 1.0, 1.0, n=int(a["judge"].notna().sum()), method="identity"))
                continue
            pair = a.drop(columns=["human"]).merge(b[["item_id", "judge"]].rename(columns={"judge": "human"}),
                                                   on="item_id").dropna(subset=["human"])
            row.append(_agreement(pair, dataset, dimension, measure, n_resamples, random_state))
        matrix.append(row)
    humans = [_agreement(f, dataset, dimension, measure, n_resamples, random_state) for f in frames]
    return matrix, humans
