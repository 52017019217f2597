"""One run's whole meta-evaluation, dimension by dimension: every analysis registered in ``evalcore.registry
.ANALYSES`` computed on the run's score frame. The built-ins, registered here in the order ``meta --json`` prints
them: its correlations with the humans at every level and coefficient, the human ceiling on the same items, what the
figures rest on, its system-level figures (P_i, M, #CP) and, on a categorical dimension, its label agreement; an
installed package adds its own (entry-point group ``judgescope.analyses``, docs/extending.md). ``meta --json``
renders it (evalcore.cli); the Alignment page and the report render the same analyses over several runs
(evalcore.views)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import pandas as pd

from evalcore import registry
from evalcore import runs as runs_mod
from evalcore.analyses.ceiling import CeilingCell, run_ceiling
from evalcore.analyses.common import has_correlations, run_label, run_names
from evalcore.analyses.correlations import RunCorrelations, frame_support, run_correlations
from evalcore.analyses.systems import SystemLevel, pair_sets, system_level
from evalcore.model import Dataset, Run

if TYPE_CHECKING:  # imported where used: sklearn loads only for a categorical dimension
    from evalcore.meta.classification import LabelAgreement


@dataclass(frozen=True)
class Settings:
    """What the analysis was asked: levels and coefficients, resamples and their seed, the systems it is restricted
    to, the system level's interval ("documents" or "both") and the summary level's constant documents ("skip" or
    "zero")."""

    levels: tuple[str, ...]
    coefficients: tuple[str, ...]
    n_resamples: int = 1000
    random_state: int = 0
    systems: list[str] | None = None
    ci_resampling: str = "documents"
    summary_constant: str = "skip"


@dataclass(frozen=True)
class AnalysisInput:
    """What every registered analysis is computed from: one run on one dimension, its score frame (item_id, doc_id,
    system_id, judge, human: ``evalcore.runs.score_frame``, restricted to ``settings.systems``) and the settings
    asked."""

    dataset: Dataset
    run: Run
    dimension: str
    frame: pd.DataFrame
    settings: Settings


@dataclass(frozen=True)
class DimensionAnalysis:
    """One run on one dimension: ``results`` holds each registered analysis's result by name (those that apply).
    ``correlations`` and ``ceiling`` are None on a nominal dimension (codes of unordered categories have no
    correlation), as ``systems`` is there and on a run of one system; ``agreement`` is the LabelAgreement of a
    categorical dimension (None on an interval one), or the error that prevented it."""

    dimension: str
    items: int
    failed: int
    results: dict[str, object] = field(default_factory=dict)

    @property
    def correlations(self) -> RunCorrelations | None:
        return cast("RunCorrelations | None", self.results.get("correlations"))

    @property
    def ceiling(self) -> list[CeilingCell] | None:
        return cast("list[CeilingCell] | None", self.results.get("human_ceiling"))

    @property
    def warnings(self) -> list[str]:
        return cast("list[str]", self.results.get("warnings", []))

    @property
    def systems(self) -> SystemLevel | None:
        return cast("SystemLevel | None", self.results.get("systems"))

    @property
    def agreement(self) -> LabelAgreement | ValueError | None:
        return cast("LabelAgreement | ValueError | None", self.results.get("agreement"))


# ------------------------------------------------------------------------------------------ the built-in analyses


def _correlations_json(r: RunCorrelations) -> dict[str, object]:
    return {"correlations": r.rows()}


@registry.register_analysis("correlations", label="Correlation with the human ratings at every level and "
                            "coefficient, with its interval", as_dict=_correlations_json)
def correlations_of(data: AnalysisInput) -> RunCorrelations | None:
    s = data.settings
    if not has_correlations(data.dataset, data.dimension):
        return None
    return run_correlations(data.frame, run_id=data.run.run_id, run=run_label(data.run), levels=s.levels,
                            coefficients=s.coefficients, n_resamples=s.n_resamples, random_state=s.random_state,
                            ci_resampling=s.ci_resampling, skip_constant=s.summary_constant == "skip")


def _ceiling_json(cells: list[CeilingCell]) -> dict[str, object]:
    return {"human_ceiling": [c.as_dict() for c in cells]}


@registry.register_analysis("human_ceiling", label="The human ceiling on the run's own items",
                            as_dict=_ceiling_json)
def ceiling_of(data: AnalysisInput) -> list[CeilingCell] | None:
    s = data.settings
    if not has_correlations(data.dataset, data.dimension):
        return None
    return run_ceiling(data.dataset, data.frame, data.dimension, levels=s.levels, coefficients=s.coefficients,
                       n_resamples=s.n_resamples, skip_constant=s.summary_constant == "skip",
                       random_state=s.random_state)


def _warnings_json(notes: list[str]) -> dict[str, object]:
    return {"warnings": notes}


@registry.register_analysis("warnings", label="What the figures rest on: few documents or systems, in words",
                            as_dict=_warnings_json)
def support_of(data: AnalysisInput) -> list[str]:
    return frame_support(data.frame, data.settings.levels)


def system_level_json(sl: SystemLevel) -> dict[str, object]:
    """A run over several systems: per-system correlations P_i, the meta-correlation M (003 Eq. 2-3) and the
    correct preferences #CP on all system pairs and on the challenge pairs (003 §4.2.1), each counted on the pairs
    the run covers ("total" says how many)."""
    entry: dict[str, object] = {"per_system": {c: r.table.to_dict(orient="records")
                                               for c, r in sl.meta_correlation.items()}}
    entry["meta_correlation"] = {c: {"statistic": r.statistic, "pvalue": r.pvalue, "n_systems": r.n_systems,
                                     "dropped_systems": list(r.dropped_systems)}
                                 for c, r in sl.meta_correlation.items()}
    cp = {name: ({"correct": r.correct, "total": r.total} if r is not None else None)
          for name, r in sl.correct_preferences.items()}
    counts: dict[str, object] = {"full": cp["full"] or {"correct": 0, "total": 0}}
    if cp.get("challenge"):
        counts["challenge"] = cp["challenge"]
    entry["correct_preferences"] = counts
    return entry


@registry.register_analysis("systems", label="Per-system correlations P_i, the meta-correlation M and #CP",
                            as_dict=system_level_json,
                            keys=("per_system", "meta_correlation", "correct_preferences"))
def systems_of(data: AnalysisInput) -> SystemLevel | None:
    if not has_correlations(data.dataset, data.dimension) or data.frame["system_id"].nunique() <= 1:
        return None
    return system_level(data.frame, data.settings.coefficients, pair_sets(data.dataset, data.settings.systems))


def _agreement_json(a: LabelAgreement | ValueError) -> dict[str, object]:
    if isinstance(a, Exception):  # labels that are no category of the dimension: said, the rest of the analysis stands
        return {"agreement": {"error": str(a)}}
    from evalcore.meta import classification

    return {"agreement": classification.agreement_dict(a)}


@registry.register_analysis("agreement", label="Agreement on labels: kappa, accuracy, P/R/F1, confusion, calibration",
                            as_dict=_agreement_json)
def agreement_of(data: AnalysisInput) -> LabelAgreement | ValueError | None:
    if not data.dataset.dimension(data.dimension).is_categorical:
        return None
    from evalcore.meta import classification

    s = data.settings
    try:
        return classification.label_agreement(data.dataset, data.run, data.dimension, n_resamples=s.n_resamples,
                                              random_state=s.random_state)
    except ValueError as e:  # labels that are no category of the dimension: said, the rest of the analysis stands
        return e


# ---------------------------------------------------------------------------------------------------- whole runs


@dataclass(frozen=True)
class AnalysisFailed:
    """An installed package's analysis that raised: said in its place (``meta --json``: ``{"error": ...}`` under its
    first key), the other analyses stand. A built-in's error is raised as it always was."""

    message: str


def compute(name: str, analysis: registry.Analysis, data: AnalysisInput) -> object:
    """``analysis.compute(data)``; a plugin's exception becomes an ``AnalysisFailed`` naming it and its package."""
    origin = registry.ANALYSES.origin(name)
    if origin == registry.BUILTIN:
        return analysis.compute(data)
    try:
        return analysis.compute(data)
    except Exception as e:  # noqa: BLE001 - third-party code: its failure is said, never fatal
        return AnalysisFailed(f"analysis {name!r} (from {origin}) failed: {type(e).__name__}: {e}")


def dimension_analysis(dataset: Dataset, run: Run, dim: str, s: Settings) -> DimensionAnalysis:
    """Every registered analysis of one run on one dimension (``DimensionAnalysis``), in the registry's order."""
    frame = runs_mod.score_frame(dataset, run, dim, systems=s.systems)
    data = AnalysisInput(dataset, run, dim, frame, s)
    results = {name: compute(name, a, data) for name, a in registry.ANALYSES.items()}
    return DimensionAnalysis(dim, int(len(frame)), int(frame["judge"].isna().sum()),
                             {name: r for name, r in results.items() if r is not None})


def dimension_json(a: DimensionAnalysis) -> dict[str, object]:
    """``dimensions.<dim>`` of ``meta --json``: the items and failed parses, then each registered analysis's keys
    (its ``as_dict``) in the registry's order. A nominal dimension has no correlations, ceiling or system-level
    figures: its codes have no order."""
    entry: dict[str, object] = {"items": a.items, "failed": a.failed}
    for name, analysis in registry.ANALYSES.items():
        result = a.results.get(name)
        if isinstance(result, AnalysisFailed):
            entry[analysis.keys[0]] = {"error": result.message}
        elif result is not None:
            entry.update(analysis.as_dict(result))
    return entry


def run_analysis(dataset: Dataset, run: Run, dimensions: list[str] | None, s: Settings
                 ) -> dict[str, DimensionAnalysis]:
    """``dimension_analysis`` of every dimension asked (default: those the run scored that the dataset has)."""
    dims = dimensions or [d for d in run.dimensions if d in dataset.dimension_names]
    return {dim: dimension_analysis(dataset, run, dim, s) for dim in dims}


def pairwise_analysis(dataset: Dataset, run: Run, dimensions: list[str] | None, *, n_resamples: int,
                      random_state: int) -> dict[str, dict[str, object]]:
    """A pairwise run (verdicts, no per-item scores) against the dataset's human votes, per dimension
    (evalcore.analyses.preferences.run_pairwise)."""
    from evalcore.analyses.preferences import run_pairwise

    judged = set(run.comparisons["dimension"])
    dims = dimensions or [d for d in dict.fromkeys(dataset.preferences["dimension"]) if d in judged]
    return {dim: run_pairwise(dataset, run, dim, n_resamples=n_resamples, random_state=random_state) for dim in dims}


def registered_tables(dataset: Dataset, runs: list[Run], dimension: str, s: Settings
                      ) -> dict[str, dict[str, pd.DataFrame]]:
    """analysis name -> title -> table, for each registered analysis that has ``tables`` (the built-ins have
    sections of their own): its tables over every per-item run that scored ``dimension``, one row per run and result
    row, the run named first (as in the pickers). What the report and the Alignment page show of a plugin's analysis;
    ``meta --json`` shows the same result of one run."""
    shown = {n: a for n, a in registry.ANALYSES.items() if a.tables is not None}
    scored = [r for r in runs if not r.judgments.empty and dimension in r.dimensions]
    if not shown or not scored:
        return {}
    names = run_names(scored)
    inputs = [AnalysisInput(dataset, r, dimension, runs_mod.score_frame(dataset, r, dimension, systems=s.systems), s)
              for r in scored]
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for name, analysis in shown.items():
        parts: dict[str, list[pd.DataFrame]] = {}
        for data in inputs:
            result = compute(name, analysis, data)
            if result is None or analysis.tables is None:
                continue
            shown_tables = ({"Errors": pd.DataFrame([{"error": result.message}])}
                            if isinstance(result, AnalysisFailed) else analysis.tables(result))
            for title, table in shown_tables.items():
                t = pd.DataFrame(table).copy()
                t.insert(0, "run", names[data.run.run_id])
                parts.setdefault(title, []).append(t)
        if parts:
            out[name] = {title: pd.concat(ts, ignore_index=True) for title, ts in parts.items()}
    return out
