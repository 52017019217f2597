"""What every analysis shares: how a run is named in its tables, and the score frame of each run."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from evalcore import runs as runs_mod
from evalcore.model import Dataset, Run


def run_label(run: Run) -> str:
    """What a run is called in tables, pickers and legends: its label, else method and model."""
    if run.label:
        return run.label
    return f"{run.method} · {run.model}" if run.model else run.run_id


def run_names(runs: Iterable[Run]) -> dict[str, str]:
    """{run_id: the name people gave it} for pickers, chips and tables; where two runs share a name, the end of the
    id tells them apart (ids such as ``summeval/geval-fake-judge-20261124-144845-ee30a6`` are no name)."""
    names = {r.run_id: run_label(r) for r in runs}
    counts: dict[str, int] = {}
    for n in names.values():
        counts[n] = counts.get(n, 0) + 1
    return {rid: n if counts[n] == 1 else f"{n} ({rid.rsplit('-', 1)[-1]})" for rid, n in names.items()}


def frames_for(dataset: Dataset, runs: list[Run], dimension: str, *, systems: list[str] | None = None
               ) -> dict[str, pd.DataFrame]:
    """Score frames (item_id, doc_id, system_id, judge, human) of each per-item run that judged ``dimension``."""
    out = {}
    for run in runs:
        if run.judgments.empty or dimension not in run.dimensions:
            continue
        frame = runs_mod.score_frame(dataset, run, dimension, systems=systems)
        if not frame.empty:
            out[run.run_id] = frame
    return out


def documents_per_run(frames: dict[str, pd.DataFrame]) -> dict[str, int]:
    """Documents each run's correlations resample (those with a parsed judge value): what sets the jackknife's
    replicates, hence the rows a progress bar counts."""
    return {run_id: int(f.loc[f["judge"].notna(), "doc_id"].nunique()) for run_id, f in frames.items()}


def scored_dimensions(dataset: Dataset, runs: list[Run]) -> tuple[str, ...]:
    """The dataset's dimensions some run scored, in the dataset's order."""
    return tuple(d for d in dataset.dimension_names if any(d in r.dimensions for r in runs))


def has_correlations(dataset: Dataset, dimension: str) -> bool:
    """Whether ``dimension``'s values have an order to correlate: codes of nominal categories (A / B / tie) have no
    mean and no correlation, so no correlation, ceiling, per-system figure or #CP is computed on them."""
    return dataset.dimension(dimension).kind != "nominal"
