"""A judge's pairwise verdicts against the humans' votes on pairs of outputs (evalcore.meta.preference
.pairwise_summary): agreement with and without ties, accuracy and kappa against the majority, position and length
bias, win rates per model. ``run_pairwise`` is one run's; the Alignment page's Pairwise tab and the report show
``summaries`` of the runs chosen, ``meta --json`` one run's (evalcore.analyses.evaluation)."""

from __future__ import annotations

from evalcore.analyses.common import run_names
from evalcore.model import Dataset, Run


def pairwise_runs(runs: list[Run], dimension: str) -> list[Run]:
    """The runs with verdicts on ``dimension``."""
    return [r for r in runs if not r.comparisons.empty and (r.comparisons["dimension"] == dimension).any()]


def run_pairwise(dataset: Dataset, run: Run, dimension: str, *, n_resamples: int = 1000, random_state: int = 0) -> dict:
    """One run's verdicts on ``dimension`` against the dataset's votes (the ``pairwise`` block of ``meta --json``)."""
    from evalcore.meta.preference import pairwise_summary

    return pairwise_summary(dataset.preferences, run.comparisons, dataset.items, dimension=dimension,
                            judge_model=run.model, n_resamples=n_resamples, random_state=random_state)


def summaries(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000) -> dict[str, dict]:
    """run name -> ``run_pairwise``, for the runs with verdicts on ``dimension`` (none without human preferences).
    Runs are named as in the pickers and legends (``run_names``: the label, the id's end where two share one)."""
    prefs = dataset.preferences
    if prefs.empty or not (prefs["dimension"] == dimension).any():
        return {}
    chosen = pairwise_runs(runs, dimension)
    names = run_names(chosen)
    return {names[r.run_id]: run_pairwise(dataset, r, dimension, n_resamples=n_resamples) for r in chosen}
