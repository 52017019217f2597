"""One run's whole meta-evaluation, dimension by dimension: its correlations with the humans at every level and
coefficient, the human ceiling on the same items, what the figures rest on, its system-level figures (P_i, M, #CP)
and, on a categorical dimension, its label agreement. ``meta --json`` renders it (evalcore.cli); the Alignment page
and the report render the same analyses over several runs (evalcore.views)."""

from __future__ import annotations

from dataclasses import dataclass

from evalcore import runs as runs_mod
from evalcore.analyses.ceiling import CeilingCell, run_ceiling
from evalcore.analyses.common import has_correlations, run_label
from evalcore.analyses.correlations import RunCorrelations, frame_support, run_correlations
from evalcore.analyses.systems import SystemLevel, pair_sets, system_level
from evalcore.model import Dataset, Run


@dataclass(frozen=True)
class DimensionAnalysis:
    """One run on one dimension. ``correlations`` and ``ceiling`` are None on a nominal dimension (codes of
    unordered categories have no correlation), as ``systems`` is there and on a run of one system; ``agreement`` is
    the LabelAgreement of a categorical dimension (None on an interval one), or the error that prevented it."""

    dimension: str
    items: int
    failed: int
    correlations: RunCorrelations | None
    ceiling: list[CeilingCell] | None
    warnings: list[str]
    systems: SystemLevel | None
    agreement: object = None


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


def _label_agreement(dataset: Dataset, run: Run, dim: str, s: Settings):
    if not dataset.dimension(dim).is_categorical:
        return None
    from evalcore.meta import classification

    try:
        return classification.label_agreement(dataset, run, dim, n_resamples=s.n_resamples,
                                              random_state=s.random_state)
    except ValueError as e:  # labels that are no category of the dimension: said, the rest of the analysis stands
        return e


def dimension_analysis(dataset: Dataset, run: Run, dim: str, s: Settings) -> DimensionAnalysis:
    """Everything of one run on one dimension (``DimensionAnalysis``)."""
    frame = runs_mod.score_frame(dataset, run, dim, systems=s.systems)
    skip = s.summary_constant == "skip"
    ordered = has_correlations(dataset, dim)
    corr = ceiling = systems = None
    if ordered:
        corr = run_correlations(frame, run_id=run.run_id, run=run_label(run), levels=s.levels,
                                coefficients=s.coefficients, n_resamples=s.n_resamples,
                                random_state=s.random_state, ci_resampling=s.ci_resampling, skip_constant=skip)
        ceiling = run_ceiling(dataset, frame, dim, levels=s.levels, coefficients=s.coefficients,
                              n_resamples=s.n_resamples, skip_constant=skip, random_state=s.random_state)
        if frame["system_id"].nunique() > 1:
            systems = system_level(frame, s.coefficients, pair_sets(dataset, s.systems))
    return DimensionAnalysis(dim, int(len(frame)), int(frame["judge"].isna().sum()), corr, ceiling,
                             frame_support(frame, s.levels), systems, _label_agreement(dataset, run, dim, s))


def run_analysis(dataset: Dataset, run: Run, dimensions: list[str] | None, s: Settings
                 ) -> dict[str, DimensionAnalysis]:
    """``dimension_analysis`` of every dimension asked (default: those the run scored that the dataset has)."""
    dims = dimensions or [d for d in run.dimensions if d in dataset.dimension_names]
    return {dim: dimension_analysis(dataset, run, dim, s) for dim in dims}


def pairwise_analysis(dataset: Dataset, run: Run, dimensions: list[str] | None, *, n_resamples: int,
                      random_state: int) -> dict[str, dict]:
    """A pairwise run (verdicts, no per-item scores) against the dataset's human votes, per dimension
    (evalcore.analyses.preferences.run_pairwise)."""
    from evalcore.analyses.preferences import run_pairwise

    judged = set(run.comparisons["dimension"])
    dims = dimensions or [d for d in dict.fromkeys(dataset.preferences["dimension"]) if d in judged]
    return {dim: run_pairwise(dataset, run, dim, n_resamples=n_resamples, random_state=random_state) for dim in dims}
