"""Correlation of each run with the humans, at each level and coefficient, with its interval: one ``Estimate`` per
cell (``RunCorrelations``), tabulated for the Alignment page and the report (``alignment_table``) and listed for
``meta --json`` (``RunCorrelations.rows``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from evalcore.analyses.common import documents_per_run, frames_for, has_correlations, run_label
from evalcore.meta.coefficients import COEFFICIENTS
from evalcore.meta.correlation import LEVELS, TABLE_COLUMNS, correlation_estimates, table_row
from evalcore.meta.results import Estimate
from evalcore.model import Dataset, Run


@dataclass(frozen=True)
class RunCorrelations:
    """One run's correlations on one dimension: ``cells[(level, coefficient)]`` in the order computed."""

    run_id: str
    run: str  # the run's label in tables
    cells: dict[tuple[str, str], Estimate]
    skip_constant: bool = True

    def rows(self) -> list[dict]:
        """One dict per cell with the columns of evalcore.meta.correlation.TABLE_COLUMNS (``meta --json``)."""
        return [table_row(e, level=lv, coefficient=co, skip_constant=self.skip_constant)
                for (lv, co), e in self.cells.items()]

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows(), columns=list(TABLE_COLUMNS))


def run_correlations(frame: pd.DataFrame, *, run_id: str = "", run: str = "", levels: Sequence[str] = LEVELS,
                     coefficients: Sequence[str] = COEFFICIENTS, n_resamples: int = 1000, random_state: int = 0,
                     ci_resampling: str = "documents", skip_constant: bool = True) -> RunCorrelations:
    """Every level x coefficient of one run's score frame, on the same document resamples."""
    cells = correlation_estimates(frame, levels=levels, coefficients=coefficients, n_resamples=n_resamples,
                                  random_state=random_state, ci_resampling=ci_resampling,
                                  skip_constant=skip_constant)
    return RunCorrelations(run_id, run, cells, skip_constant)


TABLE_KEEP = ["run", "level", "coefficient", "statistic", "ci_low", "ci_high", "n", "skipped", "dropped", "pvalue",
              "pvalue_method", "ci_resampling", "run_id"]


def correlations_frame(results: list[RunCorrelations]) -> pd.DataFrame:
    """The table the page and the report show: one row per run and cell, the run named; ``ci_note`` kept where a
    cell has one (an estimate outside its own interval is said, beside it)."""
    parts = []
    for r in results:
        t = r.table()
        t.insert(0, "run", r.run)
        t.insert(1, "run_id", r.run_id)
        parts.append(t)
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    keep = list(TABLE_KEEP)
    if "ci_note" in table.columns and (table["ci_note"].fillna("") != "").any():
        keep.append("ci_note")
    return table[[c for c in keep if c in table.columns]]


def correlations(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000,
                 systems: list[str] | None = None, ci_resampling: str = "documents", skip_constant: bool = True,
                 levels: tuple[str, ...] | None = None, coefficients: tuple[str, ...] | None = None,
                 random_state: int = 0) -> list[RunCorrelations]:
    """``run_correlations`` of every per-item run that scored ``dimension``, under one progress plan (a progress
    bar runs from 0 to 1 over every run and cell; boot-both cells resample otherwise and report nothing)."""
    from evalcore.meta import fastboot
    from evalcore.meta.correlation import replicate_rows

    if not has_correlations(dataset, dimension):  # codes of nominal categories: no correlation to compute
        return []
    frames = frames_for(dataset, runs, dimension, systems=systems)
    levels, coefficients = levels or LEVELS, coefficients or COEFFICIENTS
    labels = {r.run_id: run_label(r) for r in runs}
    cells = len(coefficients) * sum(1 for lv in levels if not (lv == "system" and ci_resampling == "both"))
    plan = cells * sum(replicate_rows(n, n_resamples) for n in documents_per_run(frames).values())
    with fastboot.expecting(plan if n_resamples > 0 else 0):
        return [run_correlations(frame, run_id=run_id, run=labels[run_id], levels=levels, coefficients=coefficients,
                                 n_resamples=n_resamples, random_state=random_state, ci_resampling=ci_resampling,
                                 skip_constant=skip_constant)
                for run_id, frame in frames.items()]


def alignment_table(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000,
                    systems: list[str] | None = None, ci_resampling: str = "documents",
                    skip_constant: bool = True, levels: tuple[str, ...] | None = None,
                    coefficients: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Correlation of each run with the humans: level x coefficient, with CI, n, skipped and dropped counts
    (``correlations`` as the page's table). ``ci_resampling``: the system level's interval, "documents" or "both"
    (evalcore.meta.inference).

    ``levels`` / ``coefficients`` restrict the cells computed (default: all), so a page can compute the one cell it
    shows first: on 200,000 items one cell takes seconds, the full table nine times that."""
    return correlations_frame(correlations(dataset, runs, dimension, n_resamples=n_resamples, systems=systems,
                                           ci_resampling=ci_resampling, skip_constant=skip_constant, levels=levels,
                                           coefficients=coefficients))


def merge_cells(cells: list[pd.DataFrame], runs: list[Run]) -> pd.DataFrame:
    """The table ``alignment_table`` gives for every level and coefficient, from its cells computed one at a time
    (``alignment_table(..., levels=(lv,), coefficients=(co,))``): runs in their order, then level, then coefficient;
    ``ci_note`` kept where any cell has one."""
    parts = [c for c in cells if c is not None and not c.empty]
    if not parts:
        return pd.DataFrame()
    # a summary-level cell's p-values are all None (object), the others' floats: read together as floats again
    t = pd.concat(parts, ignore_index=True).infer_objects()
    order = {r.run_id: i for i, r in enumerate(runs)}
    t = t.assign(_run=t["run_id"].map(order), _level=t["level"].map(LEVELS.index),
                 _coef=t["coefficient"].map(COEFFICIENTS.index))
    t = t.sort_values(["_run", "_level", "_coef"], kind="stable").drop(columns=["_run", "_level", "_coef"])
    if "ci_note" in t.columns:
        t["ci_note"] = t["ci_note"].fillna("")
        if not (t["ci_note"] != "").any():
            t = t.drop(columns="ci_note")
    return t.reset_index(drop=True)


def cell_rows(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int,
              systems: list[str] | None = None) -> int:
    """Replicate rows of one cell (level x coefficient, documents resampled) of ``alignment_table`` over the runs."""
    from evalcore.meta.correlation import replicate_rows

    if n_resamples <= 0:
        return 0
    frames = frames_for(dataset, runs, dimension, systems=systems)
    return sum(replicate_rows(n, n_resamples) for n in documents_per_run(frames).values())


def filter_correlations(table: pd.DataFrame, *, level: str | None = None, coefficient: str | None = None
                        ) -> pd.DataFrame:
    """The rows of ``alignment_table`` for one level and coefficient (None keeps every value)."""
    if table.empty:
        return table
    keep = pd.Series(True, index=table.index)
    if level is not None:
        keep &= table["level"] == level
    if coefficient is not None:
        keep &= table["coefficient"] == coefficient
    return table[keep].reset_index(drop=True)


def frame_support(frame: pd.DataFrame, levels: Sequence[str] | None = None) -> list[str]:
    """What one run's figures rest on, in words: few documents (fewer than 10: unreliable; fewer than 100: too
    narrow, as simulated) or fewer than 5 systems (evalcore.meta.inference.support_warnings)."""
    from evalcore.meta.inference import Support, support_warnings

    scored = frame[frame["judge"].notna()]
    support = Support(int(scored["doc_id"].nunique()), int(scored["system_id"].nunique()))
    return support_warnings(support) if levels is None else support_warnings(support, levels=levels)


def support_notes(dataset: Dataset, runs: list[Run], dimension: str, *, systems: list[str] | None = None
                  ) -> list[str]:
    """One sentence per run whose figures rest on few documents or systems (``frame_support``), the run named."""
    labels = {r.run_id: run_label(r) for r in runs}
    return [f"{labels[run_id]}: {w}" for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items()
            for w in frame_support(frame)]
