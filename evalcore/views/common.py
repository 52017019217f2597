"""What every page view shares: which runs a dataset opens on, how a run is named, score frames per run."""

from __future__ import annotations

import pandas as pd

from evalcore import runs as runs_mod
from evalcore.model import Dataset, Run

# Which bundled runs the app opens on (the issue: SummEval with Shen et al.'s GPT-4 and ChatGPT RTS judgments).
DEFAULT_DATASET = "summeval"
DEFAULT_RUNS = ("summeval/shen-gpt-4-0314-rts", "summeval/shen-gpt-3.5-turbo-0301-rts")


def run_label(run: Run) -> str:
    """What a run is called in pickers and legends: its label, else method and model."""
    if run.label:
        return run.label
    return f"{run.method} · {run.model}" if run.model else run.run_id


def default_run_ids(dataset_id: str, available: list[str]) -> list[str]:
    """The runs preselected when a dataset opens: Shen's GPT-4 and ChatGPT RTS runs on SummEval, otherwise the
    first run there is (so every analysis page has something to show)."""
    if dataset_id == DEFAULT_DATASET:
        chosen = [r for r in DEFAULT_RUNS if r in available]
        if chosen:
            return chosen
    return available[:1]


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
