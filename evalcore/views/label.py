"""Label page: the annotators' agreement as labels arrive, the sample-size plan, what the statistics are taken from."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from evalcore import labels
from evalcore.model import Dataset, Run, counted
from evalcore.types import Criteria
from evalcore.views.blocks import Block, Figure, Metric, Metrics, Note, Table
from evalcore.views.format import esc, fmt

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
    text = (f"Estimates (alpha, the plan, the human scores taken from labels) use the random part only: "
            f"{counted(len(rp), 'labelled item-dimension pair')} drawn by the random or system-stratified order (a random sample of "
            "the dataset; stratified draws are proportional, so self-weighting).")
    if other:
        text += (f" {counted(other, 'pair')} chosen where the judge is least certain are left out: they over-represent "
                 "hard items and would bias the estimates. They remain in the dataset's annotations.")
    return text


def plan_notes(dataset: Dataset, run: Run, rows: pd.DataFrame, dimension: str, plan: dict) -> list[str]:
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
        notes.append(f"n now is {n_now} of the {counted(len(labelled), 'item')} labelled on {dimension} (random part): "
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


# ---------------------------------------------------------------------------------------------- what to label

ORDERS = {"random": "random", "stratified": "stratified by system", "uncertain": "judge least certain"}
ORDER_HELP = ("random (default): a fixed random order, a random sample of the dataset. Stratified: the same, "
              "interleaved so every system is represented in proportion. Judge least certain: widest G-Eval score "
              "distribution or largest disagreement of two runs first, or only the items a judge abstained on, as "
              "handed over by the Alignment page's Guarantees section (kept out of the estimates). Every annotator "
              "follows the same order, so that items get several ratings.")
UNCERTAINTY_SOURCES = ["G-Eval score distribution", "two runs disagreeing", "items a judge abstained on"]
NO_QUEUE = Note("No abstained items have been handed over for this dataset: open the Alignment page's section "
                "\"Where may I use the judge's verdict? Guarantees\" and press a run's \"Label its abstained "
                "items\".", "info")
PICK_SOURCE = Note("Pick the run(s) the judge's uncertainty comes from (a G-Eval run scored here keeps its score "
                   "distributions; or any two runs of this dataset).")
PICK_DIMENSION = Note("Pick at least one dimension to label.")
REFRESH_S = 30  # other annotators' labels show up in the statistics at least this often, without a click


def item_runs(runs: list) -> list:
    """The runs that score items one at a time (a pairwise run gives no score per item to order or plan by)."""
    return [r for r in runs if r.method not in ("h2h", "pairwise")]


def order_note(order: list[str], n_known: int, kind: str, dimension: str) -> Note | None:
    """What the page says about the order: an uncertain order with no uncertainty stops the page (a warning);
    an uncertain order says which items it ranks and that they are kept out of the estimates."""
    if not order:
        return Note(esc(f"The chosen run(s) give no uncertainty for {dimension!r} (no score distributions, or no "
                        "items scored by both). Pick other runs or another order."), "warning")
    if kind == "uncertain":
        return Note(f"{counted(n_known, 'item')} ordered by the judge's uncertainty on {esc(dimension)}, the most uncertain "
                    "first; these labels are kept out of the estimates below (not a random sample).", "caption")
    return None


def queue_note(order: list[str], queue: dict) -> Note:
    """What the page says about a queue of abstained items: whose, on which dimension, how many are items of the
    dataset, and that their labels stay out of the estimates (not a random sample)."""
    n_left = len(queue["items"]) - len(order)
    left = f" ({counted(n_left, 'id')} not an item of this dataset, left out)" if n_left else ""
    if not order:
        return Note(esc(f"None of the {len(queue['items'])} ids {queue['run_name']} abstained on is an item of this "
                        "dataset: this page labels items one at a time, not pairs."), "warning")
    return Note(esc(f"{counted(len(order), 'item')} {queue['run_name']} abstained on for {queue['dimension']} at "
                    f"the Guarantees section's first alpha{left}: a stronger judge or people must see them. These "
                    "labels are kept out of the estimates below (not a random sample)."), "caption")


def saved_message(dataset: Dataset, dimension: str, value: float | None, label_id: int) -> str:
    """What the page says after a rating or a skip is saved (the point's name on a named scale)."""
    d = dataset.dimension(dimension)
    names = dict(zip(labels.scale_points(d) or [], labels.point_names(d)))
    what = "skipped" if value is None else f"rated {names.get(value, format(value, 'g'))}"
    return f"Saved: {dimension} {what} (label #{label_id})."


def undone_message(row: dict | None) -> str:
    """What the page says after Undo (``labels.undo``'s row)."""
    if row is None:
        return "Nothing to undo."
    return (f"Undone: {row['dimension']} {'skip' if row['skipped'] else format(row['value'], 'g')} on your item "
            f"#{row['position']}.")


def no_annotator_note(signed_in: bool) -> Note:
    return Note("Sign in to label: labels are kept under your user name." if signed_in else
                "Type your name in **Annotator** to start labelling.")


def progress_text(progress: labels.Progress, goal: int, annotator: str, n_items: int, n_dims: int) -> str:
    return esc(f"{progress.labelled} of {goal} labelled by {annotator} ({progress.skipped} skipped; "
               f"{counted(n_items, 'item')} x {counted(n_dims, 'dimension')} in all)")


# -------------------------------------------------------------------------------------------------- the card


@dataclass(frozen=True)
class Card:
    """One item to rate on one dimension: its texts, what the dimension asks, and the buttons' labels and keys
    (``points`` None: a scale with too many points for buttons, rated with a number field)."""

    output: str
    source: str
    context: str
    heading: str  # the dimension and its scale, Markdown (escaped)
    definition: str  # plain text
    description: Note | None
    points: list[float] | None
    buttons: list[str]
    keys: list[str | None]
    keys_note: Note


def card(dataset: Dataset, item_id: str, dimension: str, criteria: Criteria | None = None) -> Card:
    texts = dataset.texts()
    row = texts[texts["item_id"].astype(str) == item_id].iloc[0]
    d = dataset.dimension(dimension)
    what = f"{d.kind}: {' / '.join(d.labels)}" if d.labels else f"scale {d.scale_min:g} to {d.scale_max:g}"
    definition = criteria.definition if criteria is not None and criteria.definition else ""
    points = labels.scale_points(d)
    keys = labels.digit_keys(d) if points is not None else []
    # a numeric point's button says "rate 3", not "3 3" (its label next to its shortcut: issue 18.11)
    buttons = [esc(n) if d.labels else f"rate {n}" for n in labels.point_names(d)] if points is not None else []
    return Card(output=str(row.get("output") or ""), source=str(row.get("source") or ""),
                context=str(row.get("context") or ""), heading=f"**{esc(dimension)}** · {esc(what)}",
                definition=definition or (d.description or dimension),
                description=(Note(esc(d.description), "caption")
                             if d.description and definition and d.description not in definition else None),
                points=points, buttons=buttons, keys=keys,
                keys_note=Note(esc("Keys: " + (", ".join(k for k in keys if k) if points is not None else "Ctrl+Enter")
                                   + " rate · S skip · U undo (your last label or skip)."), "caption"))


# -------------------------------------------------------------------------------------------- the statistics


def sample_caption(rows: pd.DataFrame, dimensions: list[str], random_only: bool) -> Note:
    if random_only:
        return Note(esc(sample_note(rows, dimensions)), "caption")
    return Note("All labels, however their items were chosen: items picked for judge uncertainty over-represent hard "
                "items, so these figures do not describe the dataset as a whole.", "caption")


def alpha_blocks(dataset_id: str, table: pd.DataFrame, trajectory: pd.DataFrame, dimensions: list[str],
                 n_resamples: int) -> list[Block]:
    """The annotators' alpha per dimension (``alpha_table``), why a cell is blank, and how alpha moved as labels
    arrived on the first dimension (``alpha_trajectory``)."""
    if table.empty:
        return [Note("Alpha needs labels from at least two annotators on the same items.")]
    out: list[Block] = [Table(table, f"{dataset_id} labels alpha", "label_alpha")]
    blank = table[table["alpha"].isna()]
    if not blank.empty:  # a blank cell says why
        out.append(Note(esc("Blank alpha on " + ", ".join(blank["dimension"]) + ": no item has labels from two "
                            "annotators yet (n_items counts the items that do), or the labels on them hold one "
                            "value only."), "caption"))
    out.append(Note(f"Krippendorff's alpha at each dimension's level (its kind: interval, ordinal, or nominal for "
                    f"binary and nominal labels, as on the Data page); "
                    f"95% BCa CI over items, {n_resamples} resamples. Updates with every label saved, by anyone "
                    f"(other annotators' labels appear within {REFRESH_S} s).", "caption"))
    cur = table[table["dimension"] == dimensions[0]]
    if not trajectory.empty:
        out.append(Figure(alpha_figure(trajectory, cur.iloc[0] if len(cur) else None, dimensions[0]), "label_alpha"))
    return out


def plan_blocks(dataset: Dataset, run: Run, rows: pd.DataFrame, dimension: str, plan: dict, target: float
                ) -> list[Block]:
    """The planning tile (``labels.plan``): the figures now, the n needed for the target half-width, why a figure
    is what it is, and the half-width against n."""
    coef = plan["coefficient"]
    return [Metrics((Metric("Labelled items with a judge score (n now)", f"{plan['n_now']}"),
                     Metric(f"{coef} with the labels", fmt(plan["statistic"]),
                            help=f"95% CI [{fmt(plan['ci_low'])}, {fmt(plan['ci_high'])}]"),
                     Metric("CI half-width now", fmt(plan["half_width_now"])),
                     Metric(f"n needed for ±{target:g}", f"{plan['n_needed']}" if plan["n_needed"] else "n/a"))),
            # why "n now" is below the labels given, why a figure is n/a
            *[Note(esc(n), "caption") for n in plan_notes(dataset, run, rows, dimension, plan)],
            Note(esc(f"Method: {plan['method']}. Sample: {plan['sample']}; {counted(plan['dropped'], 'item')} the judge "
                     "failed on are left out."), "caption"),
            Figure(plan_figure(plan), "label_plan")]


def how_labels_join(dataset: Dataset) -> str:
    """How the labels are used on the dataset (plain words, escaped)."""
    if dataset.human_scores.empty or dataset.meta.get("labels", {}).get("human_scores_from_labels"):
        text = ("How the labels are used: they are this dataset's per-annotator ratings (group 'labels') on every "
                "page, and an item without a gold score gets the mean of its random-part labels as its human score.")
    else:
        text = ("How the labels are used: they join this dataset's per-annotator ratings (group 'labels'; the Data "
                "page's alpha); its gold human scores stay. To compare judges with the labels, pick the dataset "
                f"'{labels.view_id(labels.base_id(dataset.id))}' in the sidebar: there the human scores are the "
                "label means.")
    return esc(text)
