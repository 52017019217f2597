"""Agreement on labels (binary, nominal or ordinal dimensions): each run's kappa & co against the humans
(evalcore.meta.classification.label_agreement), for the page and the report; ``meta --json`` takes one run's from
evalcore.analyses.evaluation."""

from __future__ import annotations

from evalcore.analyses.common import run_label
from evalcore.model import Dataset, Run


def label_agreements(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000,
                     systems: list[str] | None = None) -> dict:
    """run label -> evalcore.meta.classification.LabelAgreement for every per-item run that judged a binary,
    nominal or ordinal ``dimension``; {} for an interval dimension."""
    from evalcore.meta.classification import label_agreement

    if not dataset.dimension(dimension).is_categorical:
        return {}
    out = {}
    for run in runs:
        if run.judgments.empty or dimension not in run.dimensions:
            continue
        out[run_label(run)] = label_agreement(dataset, run, dimension, n_resamples=n_resamples, systems=systems,
                                              human_alpha=False)  # the page shows the Data page's alpha
    return out
