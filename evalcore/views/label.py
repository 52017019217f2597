"""Label page: the annotators' agreement as labels arrive, the sample-size plan, what the statistics are taken from."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from evalcore import labels
from evalcore.model import Dataset

ALPHA_COLUMNS = ["dimension", "level", "alpha", "ci_low", "ci_high", "n_items", "n_annotators", "sample"]


def alpha_table(dataset: Dataset, rows: pd.DataFrame, dimensions: list[str], *, random_only: bool = True,
                levels: dict[str, str] | None = None, n_resamples: int = 1000) -> pd.DataFrame:
    """Krippendorff's alpha among the annotators per dimension, at the dimension's level, with its bootstrap CI."""
    out = []
    for dim in dimensions:
        level = (levels or {}).get(dim) or labels.measurement_level(dataset.dimension(dim))
        r = labels.labels_alpha(rows, dim, level=level, random_only=random_only, n_resamples=n_resamples)
        if r is None:
            continue
        out.append({"dimension": dim, "level": level, "alpha": r.statistic, "ci_low": r.ci_low, "ci_high": r.ci_high,
                    "n_items": r.n, "n_annotators": r.n_annotators,
                    "sample": "random part" if random_only else "all labels"})
    return pd.DataFrame(out, columns=ALPHA_COLUMNS)


def alpha_trajectory(dataset: Dataset, rows: pd.DataFrame, dimension: str, *, random_only: bool = True,
                     level: str | None = None, max_points: int = 25) -> pd.DataFrame:
    """alpha (no CI) after each of the first k labels on the dimension, in the order they were saved: labels, alpha."""
    from evalcore.meta.agreement import krippendorff_alpha

    level = level or labels.measurement_level(dataset.dimension(dimension))
    sub = rows[(rows["dimension"] == dimension)].sort_values("label_id") if not rows.empty else rows
    n = int((sub["skipped"] == 0).sum()) if not sub.empty else 0
    if n < 2:
        return pd.DataFrame({"labels": pd.Series(dtype=int), "alpha": pd.Series(dtype=float)})
    ks = np.unique(np.linspace(2, len(sub), min(max_points, len(sub) - 1)).round().astype(int))
    out = []
    for k in ks:
        ann = labels.as_annotations(sub.iloc[:k], random_only=random_only)
        ann = ann[ann["dimension"] == dimension]
        if ann["annotator"].nunique() < 2:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):  # early prefixes may hold one value only: alpha NaN
            a = krippendorff_alpha(ann, dimension, level_of_measurement=level).statistic
        if math.isfinite(a):
            out.append({"labels": int((sub.iloc[:k]["skipped"] == 0).sum()), "alpha": a})
    return pd.DataFrame(out, columns=["labels", "alpha"])


def alpha_figure(trajectory: pd.DataFrame, current: pd.Series | None, dimension: str) -> go.Figure:
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=trajectory["labels"], y=trajectory["alpha"], mode="lines+markers", name="alpha"))
    if current is not None and math.isfinite(current["alpha"]):
        x = int(trajectory["labels"].max()) if not trajectory.empty else 0
        fig.add_trace(go.Scatter(x=[x], y=[current["alpha"]], mode="markers", name="now, with 95% CI",
                                 error_y=dict(type="data", symmetric=False,
                                              array=[current["ci_high"] - current["alpha"]],
                                              arrayminus=[current["alpha"] - current["ci_low"]])))
    fig.update_layout(title=f"Krippendorff's alpha on {dimension} as labels arrived",
                      xaxis_title="labels saved (all annotators)", yaxis_title="alpha", height=360)
    return fig


def plan_figure(plan: dict, *, n_points: int = 80) -> go.Figure:
    """The CI half-width against the number of labelled items: if the correlation stayed at its estimate, and as
    planned (with assurance); the target as a line, now and n_needed as points."""
    from evalcore.meta.planning import half_width_curve

    r, n_now, coef = plan["statistic"], plan["n_now"], plan["coefficient"]
    r = r if r is not None and np.isfinite(r) else math.nan
    top = max(n_now, plan["n_needed"] or 0, 50) * 1.3
    ns = np.unique(np.geomspace(5, top, n_points).round())
    curve = half_width_curve(r, n_now, coef, ns, confidence=plan["confidence"], assurance=plan["assurance"])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=curve["n"], y=curve["planned"], mode="lines",
                             name=f"planned ({plan['assurance']:.0%} assurance)"))
    if math.isfinite(r):
        fig.add_trace(go.Scatter(x=curve["n"], y=curve["at_estimate"], mode="lines", line=dict(dash="dot"),
                                 name=f"if {coef} stayed at {r:.2f}"))
    fig.add_hline(y=plan["target_half_width"], line_dash="dash", annotation_text="target")
    if plan["half_width_now"] is not None and np.isfinite(plan["half_width_now"]):
        fig.add_trace(go.Scatter(x=[n_now], y=[plan["half_width_now"]], mode="markers", name="now",
                                 marker=dict(size=11)))
    if plan["n_needed"]:
        fig.add_trace(go.Scatter(x=[plan["n_needed"]], y=[plan["target_half_width"]], mode="markers",
                                 name="n needed", marker=dict(size=11, symbol="diamond")))
    fig.update_layout(title="95% CI half-width against labelled items", xaxis_title="labelled items (n)",
                      yaxis_title="CI half-width", xaxis_type="log", height=380)
    return fig


def sample_note(rows: pd.DataFrame, dimensions: list[str]) -> str:
    """Which labels the estimates come from, in words."""
    sub = rows[rows["dimension"].isin(dimensions)] if not rows.empty else rows
    lab = labels.latest_labels(sub)
    pairs = set(zip(lab["item_id"], lab["dimension"]))
    rp = labels.random_part(sub) & pairs
    other = len(pairs) - len(rp)
    text = (f"Estimates (alpha, the plan, the human scores taken from labels) use the random part only: {len(rp)} "
            "labelled item-dimension pair(s) drawn by the random or system-stratified order (a random sample of "
            "the dataset; stratified draws are proportional, so self-weighting).")
    if other:
        text += (f" {other} pair(s) chosen where the judge is least certain are left out: they over-represent "
                 "hard items and would bias the estimates. They remain in the dataset's annotations.")
    return text


def plan_notes(dataset: Dataset, run, rows: pd.DataFrame, dimension: str, plan: dict) -> list[str]:
    """Why the planning tile's figures are what they are: how many of the labelled items the run scored (``n now``
    counts items with both a label and a judge score), and why a correlation or ``n needed`` is n/a."""
    from evalcore.meta.planning import min_n

    notes = []
    frame = labels.agreement_frame(dataset, run, rows, dimension, reference="labels")
    known = set(dataset.items["item_id"].astype(str))
    labelled: set[str] = set()
    if rows is not None and not rows.empty:
        means = labels.label_means(rows, random_only=True)
        labelled = {str(i) for i in means.loc[means["dimension"] == dimension, "item_id"] if str(i) in known}
    n_now, n_run = int(plan["n_now"]), len(frame)
    if plan.get("reference") == "labels" and len(labelled) > n_now:
        parts = []
        if len(labelled) > n_run:
            parts.append(f"{len(labelled) - n_run} were not scored by this run (outside its items or systems)")
        if n_run > n_now:
            parts.append(f"the judge's reply could not be read on {n_run - n_now}")
        notes.append(f"n now is {n_now} of the {len(labelled)} items labelled on {dimension} (random part): "
                     + " and ".join(parts) + ".")
    stat = plan.get("statistic")
    if stat is None or not math.isfinite(stat):
        ok = frame.dropna(subset=["judge", "human"])
        if n_now < min_n(plan["coefficient"]):
            why = f"it needs at least {min_n(plan['coefficient'])} items with both a label and a judge score"
        elif ok["judge"].nunique() <= 1:
            why = (f"the judge gave all {n_now} of these items the same score ({ok['judge'].iloc[0]:g}), so there "
                   "is no order to correlate with")
        elif ok["human"].nunique() <= 1:
            why = f"the labels of all {n_now} of these items are equal, so there is no order to correlate with"
        else:
            why = "the correlation is undefined on these items"
        needed = (" n needed is planned as if the correlation were 0, the widest interval, so it holds whatever the "
                  "correlation turns out to be." if plan.get("n_needed") else "")
        notes.append(f"{plan['coefficient']} with the labels is n/a: {why}.{needed}")
    elif not plan.get("n_needed"):
        notes.append("n needed is n/a: at this estimate no sample size up to the planner's limit reaches the "
                     "target half-width; a wider target can be reached.")
    return notes
