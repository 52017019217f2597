"""An analysis from outside the package: the mean absolute difference between the judge's score and the human score
over the items the judge scored, with a percentile bootstrap interval over documents (the resampling unit of every
interval JudgeScope shows). Its one module is all a contributor writes, with its entry point; ``meta --json``, the
exported report, the Alignment page's registered-analysis blocks and the docs' table then show it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.analyses.evaluation import AnalysisInput
from evalcore.meta.intervals import percentile_ci
from evalcore.meta.resampling import bootstrap_counts
from evalcore.meta.results import Estimate, missing, to_json
from evalcore.registry import register_analysis


def _json(e: Estimate) -> dict[str, object]:
    """``dimensions.<dim>.mean_abs_difference`` of ``meta --json``."""
    return {"mean_abs_difference": to_json(e.as_dict("statistic", "ci_low", "ci_high", "n", "method", "resampling",
                                                     "n_resamples", "notes"))}


def _tables(e: Estimate) -> dict[str, pd.DataFrame]:
    """The report's and the page's table (one row here; the run is named in front of it)."""
    return {"Mean absolute difference |judge - human|": pd.DataFrame(
        [e.as_dict("statistic", "ci_low", "ci_high", "n", "n_resamples")])}


@register_analysis("mean_abs_difference", label="Mean absolute difference between judge and human scores",
                   as_dict=_json, tables=_tables)
def mean_abs_difference(data: AnalysisInput) -> Estimate | None:
    """Mean |judge - human| over the items with both scores (n = items); the interval resamples documents with
    evalcore.meta's resamples (``bootstrap_counts``: the same draws as every other interval with that seed), the
    mean of each resample being the per-document sums weighted by how often each document was drawn. Categorical
    dimensions have no difference of scores: not applicable there."""
    if data.dataset.dimension(data.dimension).is_categorical:
        return None
    f = data.frame.dropna(subset=["judge", "human"])
    if f.empty:
        return missing(0, "no item has both a judge and a human score")
    diff = (pd.to_numeric(f["judge"]) - pd.to_numeric(f["human"])).abs()
    per_doc = diff.groupby(f["doc_id"].to_numpy(), sort=True).agg(["sum", "count"])
    s = data.settings
    counts = bootstrap_counts(len(per_doc), s.n_resamples, s.random_state)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = (counts @ per_doc["sum"].to_numpy()) / (counts @ per_doc["count"].to_numpy())
    low, high = percentile_ci(replicates, 0.95) if s.n_resamples else (float("nan"), float("nan"))
    return Estimate(float(diff.mean()), low, high, n=int(len(diff)), method="percentile" if s.n_resamples else "",
                    n_resamples=s.n_resamples, resampling="documents")
