"""Alignment page: correlation with the humans (levels x coefficients, CIs) against the human ceiling, the judge's
score per human score (item level), per-system correlations and the meta-correlation (Shen et al. 2023), #CP,
RTS-MCQ reliability, pairwise agreement by difficulty (Chen et al. 2023)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, SupportsFloat

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from evalcore.analyses.ceiling import (  # noqa: F401  (the page's cached analyses call them here)
    ceiling_group, ceiling_means, ceiling_table, correlated_items, run_ceilings,
)
from evalcore.analyses.common import documents_per_run, scored_dimensions  # noqa: F401
from evalcore.analyses.common import has_correlations as ordered
from evalcore.analyses.items import human_score_bins, judge_by_human_table  # noqa: F401
from evalcore.analyses.labels import label_agreements  # noqa: F401
from evalcore.analyses.correlations import (  # noqa: F401
    alignment_table, cell_rows, filter_correlations, merge_cells, support_notes,
)
from evalcore.analyses.systems import (  # noqa: F401
    correct_preferences_table, difficulty_table, h2h_cp, meta_correlation_table, pair_sets, per_system_table,
    reliability_intervals, reliability_pairs, reliability_view,
)
from evalcore.meta.systems import ReliabilityResult
from evalcore.model import Dataset, Run
from evalcore.views.blocks import Block, Figure, Heading, Metric, Metrics, Note, Table
from evalcore.views.common import label_colors
from evalcore.views.format import cite, esc, fmt, format_pvalue

if TYPE_CHECKING:  # scikit-learn loads where labels are compared
    from evalcore.meta.classification import LabelAgreement


def alignment_figure(table: pd.DataFrame, coefficient: str, colors: dict[str, str] | None = None) -> go.Figure:
    """Correlation per level with its CI for one coefficient, one bar per run."""
    t = table[table["coefficient"] == coefficient]
    fig = go.Figure()
    for run, sub in t.groupby("run", sort=False):
        fig.add_trace(go.Bar(
            x=sub["level"], y=sub["statistic"], name=str(run), marker_color=(colors or {}).get(str(run)),
            error_y=dict(type="data", symmetric=False, array=(sub["ci_high"] - sub["statistic"]).tolist(),
                         arrayminus=(sub["statistic"] - sub["ci_low"]).tolist()),
        ))
    fig.update_layout(barmode="group", title=f"{coefficient.title()} correlation with human ratings (95% CI)",
                      yaxis_title=coefficient, xaxis_title="level")
    return fig


def headline_figure(table: pd.DataFrame, ceiling: pd.DataFrame | None, *, level: str, coefficient: str,
                    colors: dict[str, str] | None = None) -> go.Figure:
    """The page's headline: each run's correlation with the humans (95% CI) at one level and coefficient, against
    the human ceiling on that run's items (each expert against the mean of the others, averaged; grey tick and its
    95% CI), ``ceiling`` being a ``run_ceilings`` table."""
    t = filter_correlations(table, level=level, coefficient=coefficient)
    fig = go.Figure()
    for row in t.itertuples(index=False):
        run = str(row.run)
        lo = row.statistic - row.ci_low if pd.notna(row.ci_low) else 0.0
        hi = row.ci_high - row.statistic if pd.notna(row.ci_high) else 0.0
        fig.add_trace(go.Scatter(
            x=[row.statistic], y=[run], mode="markers", name=run, marker=dict(size=12, color=(colors or {}).get(run)),
            orientation="h", offsetgroup="run",
            error_x=dict(type="data", symmetric=False, array=[hi], arrayminus=[lo], thickness=2, width=8),
            hovertemplate=f"{run}<br>{coefficient} %{{x:.3f}} " + (
                f"[{row.ci_low:.3f}, {row.ci_high:.3f}]" if pd.notna(row.ci_low) else "(no interval)") + "<extra></extra>",
        ))
    for first_ceiling, row in zip([True] + [False] * len(t), ceiling_means(ceiling).itertuples(index=False)):
        lo = row.statistic - row.ci_low if pd.notna(row.ci_low) else 0.0
        hi = row.ci_high - row.statistic if pd.notna(row.ci_high) else 0.0
        fig.add_trace(go.Scatter(
            x=[row.statistic], y=[str(row.run)], mode="markers", name="human ceiling on the run's items (95% CI)",
            legendgroup="ceiling", showlegend=bool(first_ceiling), orientation="h", offsetgroup="ceiling",
            marker=dict(size=12, symbol="line-ns-open", color=HUMAN_CEILING_COLOR, line=dict(width=3)),
            error_x=dict(type="data", symmetric=False, array=[hi], arrayminus=[lo], thickness=1,
                         color=HUMAN_CEILING_COLOR),
            hovertemplate=f"human ceiling on {row.run}'s items %{{x:.3f}}<extra></extra>",
        ))
    # the run names are the y axis labels: automargin keeps them whole (issue 18.13: clipped to "'S"); the legend
    # names each run's colour and the ceiling's marker, at the foot of the figure under the axis title (placed in
    # the plot's fractions, it sat on the title). scattermode "group": each run's ceiling a little below the run's
    # own interval, which hid it on the same line.
    fig.update_layout(title=f"{coefficient.title()} correlation with the human ratings, {level} level (95% CI)",
                      xaxis_title=f"{coefficient} correlation with the human score", yaxis_title="run",
                      showlegend=True, scattermode="group", scattergap=0.4,
                      legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, x=0),
                      height=max(300, 190 + 60 * len(t)), margin=dict(l=10, r=30, t=60, b=110))
    fig.update_yaxes(autorange="reversed", automargin=True, type="category")
    return fig


def headline_spec(table: pd.DataFrame, ceiling: pd.DataFrame | None, *, level: str, coefficient: str,
                  colors: dict[str, str] | None = None) -> dict:
    """``headline_figure`` as a Vega-Lite spec (a plain dict; the page draws it with ``st.vega_lite_chart``).

    Why a second rendering: the page's first chart decides how soon its numbers appear. Plotly's browser bundle is
    about 4.7 MB and, parsed on the page's first chart, held the correlation table back by seconds
    (bench/bench_app_ready.py); Vega-Lite's is a sixth of that. The HTML report keeps the plotly figure."""
    t = filter_correlations(table, level=level, coefficient=coefficient)
    runs = [str(r) for r in t["run"]]
    values = [{"run": str(r.run), "statistic": _num(r.statistic), "ci_low": _num(r.ci_low),
               "ci_high": _num(r.ci_high)} for r in t.itertuples(index=False)]
    palette = [(colors or {}).get(r, "#636EFA") for r in runs]
    x_title = f"{coefficient} correlation with the human score"
    color = {"field": "run", "type": "nominal", "legend": None,
             "scale": {"domain": runs, "range": palette}}
    y = {"field": "run", "type": "nominal", "title": "run", "sort": runs, "axis": {"labelLimit": 320}}
    layers: list[dict] = []
    means = ceiling_means(ceiling)
    if not means.empty:
        cvals = [{"run": str(r.run), "ceiling": _num(r.statistic), "ceiling_low": _num(r.ci_low),
                  "ceiling_high": _num(r.ci_high)} for r in means.itertuples(index=False)]
        ctip = [{"field": "run"}, {"field": "ceiling", "format": ".3f", "title": "human ceiling on these items"},
                {"field": "ceiling_low", "format": ".3f"}, {"field": "ceiling_high", "format": ".3f"}]
        # drawn a little below the run's own interval in its band: on the same line, with one run, the run's
        # thicker interval hid the ceiling's
        layers.append({"data": {"values": cvals}, "mark": {"type": "rule", "color": HUMAN_CEILING_COLOR, "size": 1.5,
                                                           "strokeDash": [4, 3], "yOffset": CEILING_OFFSET},
                       "encoding": {"x": {"field": "ceiling_low", "type": "quantitative"},
                                    "x2": {"field": "ceiling_high"}, "y": y, "tooltip": ctip}})
        layers.append({"data": {"values": cvals}, "mark": {"type": "tick", "color": HUMAN_CEILING_COLOR,
                                                           "thickness": 3, "size": 16, "yOffset": CEILING_OFFSET},
                       "encoding": {"x": {"field": "ceiling", "type": "quantitative"}, "y": y, "tooltip": ctip}})
    tooltip = [{"field": "run"}, {"field": "statistic", "format": ".3f"}, {"field": "ci_low", "format": ".3f"},
               {"field": "ci_high", "format": ".3f"}]
    layers.append({"data": {"values": values}, "mark": {"type": "rule", "size": 2},
                   "encoding": {"x": {"field": "ci_low", "type": "quantitative", "title": x_title,
                                      "scale": {"zero": False}},
                                "x2": {"field": "ci_high"}, "y": y, "color": color, "tooltip": tooltip}})
    layers.append({"data": {"values": values}, "mark": {"type": "point", "filled": True, "size": 140,
                                                        "opacity": 1},
                   "encoding": {"x": {"field": "statistic", "type": "quantitative", "title": x_title},
                                "y": y, "color": color, "tooltip": tooltip}})
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": f"{coefficient.title()} correlation with the human ratings, {level} level (95% CI)",
        "height": {"step": 44},  # one band per run (a fixed height collapses the bands inside Streamlit)
        "layer": layers,
    }


HUMAN_CEILING_COLOR = "#555555"
CEILING_OFFSET = 10  # pixels below the middle of a run's band (44 px high) where its ceiling is drawn


def ceiling_note(table: pd.DataFrame, ceiling: pd.DataFrame | None, *, level: str, coefficient: str) -> str:
    """What the human ceiling is where two annotators rated the items, and why a judge can exceed it: each annotator
    "against the mean of the others" is then one annotator against the other, while the judge is correlated with the
    mean of both, whose averaging removes part of each one's noise (a mean of k raters is more reliable than one:
    the Spearman-Brown formula). Runs above their ceiling are named. "" where no ceiling rests on two annotators."""
    means = ceiling_means(ceiling)
    if ceiling is None or means.empty:
        return ""
    raters = ceiling[ceiling["annotator"] != "mean"].groupby("run")["annotator"].nunique()
    two = set(raters[raters == 2].index)
    if not two:
        return ""
    judged = filter_correlations(table, level=level, coefficient=coefficient).set_index("run")["statistic"]
    above = [(r.run, float(judged[r.run]), float(r.statistic)) for r in means.itertuples(index=False)
             if r.run in two and r.run in judged.index and pd.notna(judged[r.run]) and pd.notna(r.statistic)
             and judged[r.run] > r.statistic]
    text = ("With two annotators the human ceiling is one annotator against the other (\"the mean of the others\" "
            "is the other one), while each judge is correlated with the mean of both. A mean of two ratings has less "
            "noise than either rating (Spearman-Brown), so a judge can exceed this ceiling without agreeing with the "
            "humans better than one annotator agrees with another.")
    if above:
        text += " Above it here: " + "; ".join(f"{run} {j:.3f} vs ceiling {c:.3f}" for run, j, c in above) + "."
    return text


def _num(x: SupportsFloat | None) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def per_system_box(table: pd.DataFrame, coefficient: str, colors: dict[str, str] | None = None) -> go.Figure:
    """Shen et al. 2023 Fig. 1: the spread of per-system correlations in each dimension (a box per run and
    dimension)."""
    from evalcore.views.format import cite

    fig = px.box(table, x="dimension", y="correlation", color="run", points="all", color_discrete_map=colors or {},
                 hover_data=["system_id"] if "system_id" in table.columns else None,
                 title=f"Per-system {coefficient} correlation ({cite('003', 'Fig. 1')})")
    fig.update_layout(yaxis_title=f"{coefficient} per system (P_i)")
    return fig


def meta_scatter(per_system: pd.DataFrame, meta_table: pd.DataFrame, dimension: str, coefficient: str,
                 colors: dict[str, str] | None = None) -> go.Figure:
    """Shen et al. 2023 Fig. 2-3: system quality Q_i against the judge's per-system correlation P_i; M and p in the
    legend."""
    from evalcore.views.format import cite, format_pvalue

    t = per_system[per_system["dimension"] == dimension].copy()
    fig = go.Figure()
    for run, sub in t.groupby("run", sort=False):
        m = meta_table[(meta_table["run"] == run) & (meta_table["dimension"] == dimension)]
        tag = ""
        if len(m):
            mv = m["M"].iloc[0]
            tag = (f" (M={mv:.3f}, p={format_pvalue(m['pvalue'].iloc[0])})" if pd.notna(mv)
                   else f" ({m['note'].iloc[0]})" if "note" in m.columns else " (M undefined)")
        fig.add_trace(go.Scatter(x=sub["quality"], y=sub["correlation"], mode="markers+text",
                                 text=sub["system_id"].astype(str), textposition="top center",
                                 marker_color=(colors or {}).get(str(run)), name=f"{run}{tag}"))
    fig.update_layout(title=f"Meta-correlation on {dimension}: Q_i vs P_i ({cite('003', 'Fig. 2-3')})",
                      xaxis_title="system quality Q_i (mean human score)",
                      yaxis_title=f"judge-human {coefficient} on the system (P_i)")
    return fig


def difficulty_figure(table: pd.DataFrame, colors: dict[str, str] | None = None) -> go.Figure:
    from evalcore.views.format import cite

    bars = {}
    if {"tau_ci_low", "tau_ci_high"} <= set(table.columns):  # each bar with its 95% interval over documents
        table = table.assign(above=table["tau_ci_high"] - table["tau"], below=table["tau"] - table["tau_ci_low"])
        bars = {"error_y": "above", "error_y_minus": "below"}
    fig = px.bar(table, x="bucket", y="tau", color="run", barmode="group", color_discrete_map=colors or {},
                 hover_data=[c for c in ("n_pairs",) if c in table.columns], **bars,
                 title=f"Pairwise Kendall tau by difficulty ({cite('002')}"
                       + ("; 95% CIs over documents)" if bars else ")"))
    fig.update_layout(xaxis_title="difficulty (gap between the two human scores)", yaxis_title="pairwise Kendall tau")
    return fig


# ------------------------------------------------------------------------------ judge score per human score


# Beyond this many items of one run the boxes are sent as their five numbers, not as every item's score (plotly
# would embed them all: 200,000 items made a 21 MB report).
BOX_ITEMS_MAX = 20_000


def box_numbers(values: np.ndarray) -> dict[str, float]:
    """The numbers plotly draws a box from, as plotly computes them from the data: quartilemethod "linear" (method
    #10 of Langford 2006, J. Stat. Educ. 14(3): the value at rank n p + 1/2 interpolated, which is numpy's "hazen"),
    whiskers to the furthest values within 1.5 IQR of the box."""
    v = np.sort(np.asarray(values, dtype=float))
    q1, median, q3 = np.quantile(v, [0.25, 0.5, 0.75], method="hazen")
    iqr = q3 - q1
    inside = v[(v >= q1 - 1.5 * iqr) & (v <= q3 + 1.5 * iqr)]
    return {"q1": float(q1), "median": float(median), "q3": float(q3), "lowerfence": float(inside.min()),
            "upperfence": float(inside.max())}


def _box_from_quartiles(sub: pd.DataFrame, ticks: dict, order: list, name: str, color: str | None) -> go.Box:
    """One run's boxes from their five numbers per human-score bin (outliers beyond the whiskers not drawn)."""
    bins = [b for b in order if (sub["human_bin"] == b).any()]
    numbers = [box_numbers(sub.loc[sub["human_bin"] == b, "judge"].to_numpy()) for b in bins]
    return go.Box(x=[ticks[b] for b in bins], name=name, marker_color=color,
                  **{k: [n[k] for n in numbers] for k in ("q1", "median", "q3", "lowerfence", "upperfence")})


def judge_by_human_figure(table: pd.DataFrame, dimension: str, *, points: bool = False,
                          colors: dict[str, str] | None = None) -> go.Figure:
    """Box plots of the judge's score for each human score (bin), one colour per run; ``points`` draws every item
    as a jittered dot instead (the boxes hide how many items a bin holds)."""
    order = table.drop_duplicates("human_bin").sort_values("bin_order")["human_bin"].tolist()
    counts = table.groupby(["human_bin"])["item_id"].nunique()
    ticks = {b: f"{b}<br>({counts.get(b, 0)} items)" for b in order}
    fig = go.Figure()
    for run, sub in table.groupby("run", sort=False):
        color = (colors or {}).get(str(run))
        x = sub["human_bin"].map(ticks)
        if points:
            # every item as a dot spread sideways (judge scores are often whole numbers, so dots would stack);
            # a thin box outline stays for reference and gives the legend its colour swatch
            fig.add_trace(go.Box(x=x, y=sub["judge"], name=str(run), marker_color=color, boxpoints="all",
                                 jitter=1.0, pointpos=0, fillcolor="rgba(0,0,0,0)", line_width=1,
                                 marker=dict(size=4, opacity=0.45), customdata=sub[["item_id", "human"]],
                                 hovertemplate="%{customdata[0]}<br>human %{customdata[1]:.3g}, judge %{y:.3g}"
                                               "<extra>" + str(run) + "</extra>"))
        elif len(sub) > BOX_ITEMS_MAX:
            fig.add_trace(_box_from_quartiles(sub, ticks, order, str(run), color))
        else:
            fig.add_trace(go.Box(x=x, y=sub["judge"], name=str(run), marker_color=color, boxpoints="outliers"))
    fig.update_layout(boxmode="group", title=f"Judge score per human score on {dimension} (items)",
                      xaxis_title=f"human score on {dimension}", yaxis_title="judge score",
                      legend_title_text="run")
    fig.update_xaxes(categoryorder="array", categoryarray=[ticks[b] for b in order])
    return fig


# ------------------------------------------------------------------------------------ categorical labels (issue 7.4)


STATISTIC_NAMES = {"cohen_kappa": "Cohen's kappa", "weighted_kappa": "quadratic-weighted kappa",
                   "accuracy": "accuracy", "precision": "precision", "recall": "recall", "f1": "F1"}


def label_agreement_table(reports: dict) -> pd.DataFrame:
    """One row per run and statistic: value, 95% CI, items compared, failed parses, ties left out."""
    rows = []
    for run, rep in reports.items():
        r = rep.result
        for key, e in r.estimates().items():
            what = STATISTIC_NAMES[key]
            if key in ("precision", "recall", "f1"):
                what += f" ({rep.positive})" if r.average == "binary" else " (macro)"
            rows.append({"run": run, "statistic": what, "value": e.statistic, "ci_low": e.ci_low,
                         "ci_high": e.ci_high, "n": r.n, "dropped": r.dropped + r.invalid, "ties": rep.ties + r.human_ties,
                         "gold": rep.gold})
    return pd.DataFrame(rows)


def per_annotator_kappa_table(reports: dict) -> pd.DataFrame:
    """The judge against each annotator on its own (kappa with CI, accuracy)."""
    parts = []
    for run, rep in reports.items():
        if rep.per_annotator.empty:
            continue
        t = rep.per_annotator.copy()
        t.insert(0, "run", run)
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def confusion_figure(report: LabelAgreement, run: str) -> go.Figure:
    """The confusion matrix as a heatmap: judge label across, human label down, each cell's count written in it."""
    r = report.result
    labels = [str(x) for x in r.labels]
    z = r.confusion.astype(int)
    share = z / z.sum(axis=1, keepdims=True).clip(min=1)
    text = [[f"{z[i, j]}<br>({100 * share[i, j]:.0f}% of row)" for j in range(len(labels))]
            for i in range(len(labels))]
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=labels, y=labels, text=text, texttemplate="%{text}", textfont={"size": 15},
        colorscale="Blues", zmin=0, showscale=True,
        colorbar=dict(title="items"),
        hovertemplate="human %{y}, judge %{x}: %{z} items<extra></extra>",
    ))
    fig.update_layout(title=f"Confusion matrix: {run} ({r.n} items)",
                      xaxis_title="judge label", yaxis_title="human label",
                      xaxis=dict(type="category", side="bottom"),
                      yaxis=dict(type="category", autorange="reversed"), height=360 + 40 * len(labels))
    return fig


def calibration_table(reports: dict) -> pd.DataFrame:
    """Brier score and ECE (with CIs) of every run that gave probabilities."""
    rows = []
    for run, rep in reports.items():
        c = rep.calibration
        if c is None:
            continue
        for name, e in (("Brier score", c.brier), ("ECE (10 bins)", c.ece)):
            rows.append({"run": run, "statistic": name, "value": e.statistic, "ci_low": e.ci_low,
                         "ci_high": e.ci_high, "n": c.n, "target": c.target})
    return pd.DataFrame(rows)


def reliability_figure(reports: dict) -> go.Figure:
    """The reliability diagram: mean predicted probability against the observed frequency per bin, one line per run,
    the diagonal is perfect calibration; marker size follows the bin's item count."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfectly calibrated",
                             line=dict(dash="dash", color="gray")))
    target = "positive class"
    for run, rep in reports.items():
        c = rep.calibration
        if c is None or c.bins.empty:
            continue
        target = c.target
        b = c.bins
        fig.add_trace(go.Scatter(
            x=b["mean_predicted"], y=b["fraction_positive"], mode="lines+markers", name=f"{run} (ECE {c.ece.statistic:.3f})",
            marker=dict(size=(6 + 14 * (b["count"] / b["count"].max()) ** 0.5).tolist()),
            customdata=b[["count", "lower", "upper"]].to_numpy(),
            hovertemplate="bin %{customdata[1]:.1f}-%{customdata[2]:.1f}: %{customdata[0]} items<br>"
                          "predicted %{x:.3f}, observed %{y:.3f}<extra></extra>",
        ))
    what = "positive (human) label" if target == "positive class" else "judge's label is right"
    fig.update_layout(title=f"Reliability diagram ({target})",
                      xaxis_title="judge's predicted probability (bin mean)",
                      yaxis_title=f"observed frequency: {what}",
                      xaxis={"range": [-0.02, 1.02]}, yaxis={"range": [-0.03, 1.05]})
    return fig


def page_colors(all_runs: list[Run], runs: list[Run]) -> dict[str, str]:
    """One colour per run on every chart of a page (and in the report): keyed over all of the dataset's runs, then
    the selected runs of other datasets."""
    known = {a.run_id for a in all_runs}
    return label_colors(list(all_runs) + [r for r in runs if r.run_id not in known])


# ------------------------------------------------------------------------------------- the page's view model
# What the Alignment page shows, tab by tab, as blocks (evalcore.views.blocks): the page lays them out between its
# widgets, and computes nothing itself.

SECTIONS = ("Correlations", "Judge vs human scores", "Per system & meta-correlation", "#CP", "RTS-MCQ reliability",
            "Difficulty", "Pairwise preferences")
CI_RESAMPLING_LABELS = {"documents": "documents (systems fixed)", "both": "systems and documents"}
SUMMARY_CONSTANT_LABELS = {"skip": "skipped (G-Eval's script)", "zero": "counted as correlation 0"}
SUMMARY_CONSTANT_HELP = ("A document whose judge (or human) scores are all equal has no correlation. Skipping it (the "
                         "default, as G-Eval's released script does) can flatter a judge that often gives all outputs "
                         "the same score; counting it as 0 does not. The skipped column counts them either way.")
PAIRWISE_RUNS_NOTE = Note("The selected runs are pairwise: they give verdicts on pairs, not scores per item.")


def page_caption(dimension: str, parse: str, n_resamples: int) -> Note:
    return Note(f"Dimension **{esc(dimension)}** · parse mode **{parse}** · {n_resamples} bootstrap resamples "
                "(change them in the sidebar)", "caption")


def pairwise_only(dataset: Dataset) -> bool:
    """A dataset whose humans only voted on pairs (PandaLM, LLMBar, an MT-Bench upload) has no scores per item to
    correlate: its page is the pairwise section alone, without the level, coefficient and systems that would not
    apply to it."""
    return dataset.human_scores.empty and not dataset.preferences.empty


PAIRWISE_ONLY_NOTE = Note("This dataset's humans voted on pairs of outputs: the agreement below is with their votes "
                          "(accuracy, kappa, win rates), so no correlation level, coefficient or system filter "
                          "applies.", "caption")


def ci_resampling_help() -> str:
    from evalcore.meta.inference import CI_RESAMPLING_HELP

    return "documents: " + CI_RESAMPLING_HELP["documents"] + ". both: " + CI_RESAMPLING_HELP["both"] + "."


def ci_resampling_note(choice: str) -> Note:
    from evalcore.meta.inference import CI_RESAMPLING_HELP

    return Note(esc(f"This interval: {CI_RESAMPLING_HELP[choice]}."), "caption")


def default_section(dataset: Dataset) -> str:
    """The tab a visit opens on: a dataset of human pairwise votes opens on what it is about."""
    return SECTIONS[-1] if not dataset.preferences.empty else SECTIONS[0]


def annotators_blocks(dataset: Dataset) -> list[Block]:
    """Before a judge is chosen: the annotators' agreement with each other on pairwise votes (needs no judge)."""
    from evalcore.views.preference import annotators_agreement_table

    prefs = dataset.preferences
    if prefs.empty or prefs["annotator"].nunique() < 2:
        return []
    return [Heading("Pairwise votes: the annotators' agreement with each other"),
            Table(annotators_agreement_table(prefs), "annotator kappa", "annotator_kappa"),
            Note("Cohen's kappa for each pair of annotators over the pairs both voted on (A, B or tie). Blank: no "
                 "kappa, the note says why. A judge's agreement with these votes appears here once a run with "
                 "pairwise verdicts is chosen.", "caption")]


# --------------------------------------------------------------------------------- label agreement (issue 7.4)


@dataclass
class LabelAgreementView:
    """The label-agreement part of the Correlations tab: ``top`` before the choice of a run's confusion matrix,
    ``confusion`` the matrix of each run, ``bottom`` after it."""

    top: list[Block]
    confusion: dict[str, Figure] = field(default_factory=dict)
    bottom: list[Block] = field(default_factory=list)


def label_agreement_heading(dataset: Dataset, dimension: str, runs: list[Run]) -> Heading | None:
    """The section's heading on a binary / nominal / ordinal dimension with runs; None: no such section."""
    dim = dataset.dimension(dimension)
    return Heading(f"Agreement on {dim.kind} labels") if dim.is_categorical and runs else None


def label_agreement_view(reports: dict | Exception, dimension: str, alpha: Callable[[], pd.DataFrame]
                         ) -> LabelAgreementView:
    """Kappa & co with CIs, the confusion matrices and calibration (``label_agreements``, or the ValueError it
    raised: e.g. an annotator's value that is no category of the dimension). ``alpha`` gives the Data page's
    agreement table (the annotators among themselves), asked only where the judge is compared with each annotator."""
    if isinstance(reports, Exception):
        return LabelAgreementView([Note(esc(f"No label agreement for {dimension!r}: {reports}"), "warning")])
    if not reports:
        return LabelAgreementView([Note(esc(f"None of the selected runs scored {dimension!r}."))])
    stats = label_agreement_table(reports)
    undefined = stats[stats["value"].isna()]
    top: list[Block] = [Table(stats[stats["value"].notna()], f"label agreement {dimension}", "label_agreement")]
    if not undefined.empty:  # e.g. precision of a class the judge never chose: no value, rather than a 0
        top.append(Note(esc("Undefined here (a class never chosen by the judge or by the humans): "
                            + "; ".join(f"{r.run}: {r.statistic}" for r in undefined.itertuples())), "caption"))
    first = next(iter(reports.values()))
    top.append(Note(esc(f"Human label: {first.gold}. Categories: {', '.join(first.labels)}"
                        + (f" (positive class: {first.positive})" if first.positive else "")
                        + ". 95% CIs resample documents; n = items compared, dropped = judge replies that could not "
                          "be read, ties = items whose annotators tie (no majority), left out."), "caption"))
    confusion = {name: Figure(confusion_figure(rep, name), "confusion") for name, rep in reports.items()}
    return LabelAgreementView(top, confusion, _per_annotator_blocks(reports, dimension, alpha)
                              + _calibration_blocks(reports, dimension))


def _per_annotator_blocks(reports: dict, dimension: str, alpha: Callable[[], pd.DataFrame]) -> list[Block]:
    per_annotator = per_annotator_kappa_table(reports)
    if per_annotator.empty:
        return []
    out: list[Block] = [Note("**The judge against each annotator** (Cohen's kappa)", "markdown"),
                        Table(per_annotator, f"kappa per annotator {dimension}", "kappa_per_annotator")]
    table = alpha()  # the Data page's table: same numbers, same cache
    table = table[table["dimension"] == dimension] if not table.empty else table
    return out + [Note(esc(f"The annotators among themselves ({r.group}): Krippendorff's alpha ({r.level}) "
                           f"{fmt(r.alpha)} [{fmt(r.ci_low)}, {fmt(r.ci_high)}], {r.n_items} items."), "caption")
                  for r in table.itertuples()]


def _calibration_blocks(reports: dict, dimension: str) -> list[Block]:
    cal = calibration_table(reports)
    if cal.empty:
        return []
    return [Note("**Calibration of the judge's probabilities**", "markdown"),
            Table(cal, f"calibration {dimension}", "calibration"), Figure(reliability_figure(reports), "reliability"),
            Note("Brier score: mean squared error of the probability (0 is best). ECE: share-weighted gap between "
                 "predicted probability and observed frequency over 10 equal-width bins.", "caption")]


# ------------------------------------------------------------------------------------------------ correlations


def correlations_intro(dataset: Dataset, dimension: str, runs: list[Run]) -> list[Block]:
    """The Correlations section's heading, or why it has no correlations."""
    nominal = dataset.dimension(dimension).kind == "nominal"
    out: list[Block] = []
    if nominal and runs:
        # issue 18.7: codes of unordered categories (A/B/tie) have no mean and no correlation; a Spearman of codes
        # against a "ceiling" reads as a result and is none
        out.append(Note("Nominal labels have no order: no correlations, means or human ceiling are computed on their "
                        "codes. Read kappa, accuracy and the confusion matrix above."))
    elif not nominal:
        out.append(Heading("Correlation with human ratings"))
    if not runs:
        out.append(Note("The selected runs are pairwise: see #CP below and position bias on the Bias page."))
    return out


def has_correlations(dataset: Dataset, dimension: str, runs: list[Run]) -> bool:
    return bool(runs) and ordered(dataset, dimension)


@dataclass
class CorrelationsView:
    """The correlation table of the cell on show (``table``: the table, or why there is none) and what follows it
    (``notes``: how to read it, then the ceiling's heading; empty when there is no table)."""

    table: list[Block]
    notes: list[Block] = field(default_factory=list)


def correlations_view(table: pd.DataFrame, dimension: str, *, level: str, coefficient: str) -> CorrelationsView:
    """One cell of ``alignment_table`` (``level`` x ``coefficient``) as the page shows it."""
    if table.empty:
        return CorrelationsView([Note(esc(f"None of the selected runs scored {dimension!r}."))])
    shown = filter_correlations(table, level=level, coefficient=coefficient)
    return CorrelationsView(
        [Table(shown, f"correlations {dimension} {level} {coefficient}", "correlations")],
        [Note(f"{level} level, {coefficient} (pick them above; the CSV of every level and coefficient is in the "
              "exported report). n = items (dataset), documents used (summary) or systems (system); skipped = "
              "documents where one side is constant (summary level); dropped = replies that could not be parsed. A "
              "summary-level value is a mean of per-document correlations: it has no p-value (blank), nor does the "
              "experts' mean in the ceiling table. pvalue_method: below 30 pairs the p-value is a permutation test "
              "(exact, every ordering, up to 9 pairs), never the t approximation.", "caption"),
         Note(f"**Human ceiling** ({level}, {coefficient}) on each run's items: each expert against the mean of the "
              "others, on the items (and systems) the run is correlated on that this expert and at least one other "
              "rated (n_items: how many; an item fewer than two experts rated has no ceiling)", "markdown")])


def support_blocks(notes: list[str]) -> list[Block]:
    """What a figure rests on (``support_notes``), as warnings."""
    return [Note(esc(n), "warning") for n in notes]


def ceiling_blocks(table: pd.DataFrame, ceiling: pd.DataFrame, dimension: str, *, level: str, coefficient: str
                   ) -> list[Block]:
    """The human ceiling on each run's items (``run_ceilings``), and what it is with two annotators."""
    if ceiling.empty:
        return [Note("No per-annotator ratings for this dimension: no human ceiling.")]
    out: list[Block] = [Table(ceiling, f"human ceiling {dimension} {level} {coefficient}", "ceiling"),
                        Note("mean = the experts' mean (the grey tick in the chart above); its 95% CI resamples "
                             "documents, the same draw for every expert.", "caption")]
    two = ceiling_note(table, ceiling, level=level, coefficient=coefficient)
    if two:  # two annotators: what the ceiling is then, and why a judge can exceed it
        out.append(Note(esc(two)))
    return out


def headline_notes(ceiling: pd.DataFrame) -> list[Block]:
    """Under the headline chart (``headline_spec``): how to read it, where it shows a ceiling."""
    if ceiling.empty:
        return []
    return [Note("Dot and line: each run's correlation and its 95% CI. Grey tick and dashed line: the human ceiling "
                 "on that run's own items, and its 95% CI. A run on one document has a dot and no line: a bootstrap "
                 "over one document has nothing to resample.", "caption")]


# ----------------------------------------------------------------------------------------- judge vs human (items)

JUDGE_BY_HUMAN_HEADING = Heading("Judge score per human score (items)")


def judge_by_human_summary(items: pd.DataFrame) -> pd.DataFrame:
    """The judge's scores per human-score bin and run (``judge_by_human_table``): count, mean, spread, quartiles."""
    return (items.groupby(["run", "human_bin", "bin_order"], sort=False)["judge"]
            .describe()[["count", "mean", "std", "min", "50%", "max"]].reset_index()
            .sort_values("bin_order", kind="stable").drop(columns="bin_order")
            .rename(columns={"50%": "median", "count": "items"}))


def judge_by_human_blocks(items: pd.DataFrame, dimension: str, *, points: bool = False,
                          colors: dict[str, str] | None = None) -> list[Block]:
    if items.empty:
        return [Note(esc(f"None of the selected runs scored {dimension!r}."))]
    return [Figure(judge_by_human_figure(items, dimension, points=points, colors=colors), "judge_by_human"),
            Note("One box per human score and run: a judge aligned with the humans climbs from left to right, with "
                 "little overlap between neighbouring boxes. Human scores that are means of several ratings are "
                 "binned (the last bin includes its upper end).", "caption"),
            Table(judge_by_human_summary(items), f"judge per human score {dimension}", "judge_by_human")]


# ------------------------------------------------------------------------------------------------ per system


def per_system_applies(dataset: Dataset, runs: list[Run]) -> bool:
    """Per-system correlations need score runs on some dimension and more than two systems."""
    return bool(runs) and bool(scored_dimensions(dataset, runs)) and len(dataset.systems) > 2


PER_SYSTEM_HEADING = Heading(f"Per-system correlation ({cite('003', 'Fig. 1')})")


def per_system_blocks(per_system: pd.DataFrame, meta: pd.DataFrame | None, dimension: str, coefficient: str,
                      colors: dict[str, str] | None = None) -> list[Block]:
    """Per-system correlations P_i (``per_system_table``) and the meta-correlation M (``meta_correlation_table``;
    None when there are no per-system correlations)."""
    if per_system.empty:
        return [Note("Not enough systems for per-system correlations.")]
    out: list[Block] = [Figure(per_system_box(per_system, coefficient, colors), "per_system"),
                        Table(per_system, f"per-system {coefficient}", "per_system"),
                        Heading(f"Meta-correlation ({cite('003', 'Fig. 2-3')})")]
    if meta is None or meta.empty:
        return out
    out.append(Table(meta, f"meta-correlation {coefficient}", "meta_correlation"))
    if (per_system["dimension"] == dimension).any():
        out.append(Figure(meta_scatter(per_system, meta, dimension, coefficient, colors), "meta_scatter"))
    return out + [Note(f"M = corr(Q_i, P_i) over systems ({cite('003', 'Eq. 3')}). Near 0 is ideal; a negative M "
                       "means the judge agrees less with humans on better systems.", "caption")]


# ----------------------------------------------------------------------------------------------------- #CP


def cp_dimensions(dataset: Dataset, runs: list[Run], pairwise_runs: list[Run]) -> tuple[str, ...] | None:
    """The dimensions #CP counts (those of the score runs, then the pairwise runs'); None where it does not apply
    (one system, no human scores, or no run scored a dimension)."""
    pairwise_dims = [d for r in pairwise_runs for d in r.dimensions]
    if len(dataset.systems) < 2 or dataset.human_scores.empty or not (scored_dimensions(dataset, runs)
                                                                       or pairwise_dims):
        return None
    return tuple(dict.fromkeys(list(scored_dimensions(dataset, runs))
                               + [d for d in pairwise_dims if d in dataset.dimension_names]))


CP_HEADING = Heading(f"Correct preferences #CP ({cite('003', 'Sec. 4.2.1')})")


def cp_blocks(cp: pd.DataFrame) -> list[Block]:
    if cp.empty:
        return [Note("No system pairs to compare.")]
    return [Table(cp, "correct preferences", "cp"),
            Note("full: all pairs of systems (SummEval: the 66 pairs of the 12 abstractive systems); challenge: "
                 f"pairs adjacent in average human score ({cite('003', 'App. E')}).", "caption")]


# -------------------------------------------------------------------------------------------- reliability

RELIABILITY_HEADING = Heading(f"RTS-MCQ reliability ({cite('003', 'Eq. 4')})")


def reliability_rows(table: pd.DataFrame, systems: list[str] | None) -> pd.DataFrame:
    """The page's systems filter: the across-system correlations over the chosen systems only."""
    return table[table["system_id"].isin(systems)] if systems else table


@dataclass
class ReliabilityBlocks:
    """The two headline figures side by side (``columns``), then the rest."""

    columns: list[list[Block]]
    rest: list[Block]


def reliability_blocks(rel: ReliabilityResult, table: pd.DataFrame, intervals: dict, dimension: str, *,
                       coefficient: str, n_resamples: int, filtered: bool) -> ReliabilityBlocks:
    """``reliability_view``'s result over ``table`` (its rows for the chosen systems; ``filtered``: some were
    chosen, so the p-value over every system is not shown) with ``reliability_intervals``."""
    columns: list[list[Block]] = []
    for side, pv in (("rts", rel.pvalue_rts), ("mcq", rel.pvalue_mcq)):
        ci = intervals[side]
        columns.append([Metrics((Metric(f"corr(R_i, P_i {side.upper()})", fmt(ci.statistic),
                                        help=(f"{ci.n_systems} systems" if filtered else
                                              f"p = {format_pvalue(pv)}, {ci.n_systems} systems")),)),
                        Note(f"95% CI [{fmt(ci.ci_low)}, {fmt(ci.ci_high)}] over {ci.n_systems} systems"
                             if ci.n_systems >= 4 else "no interval: fewer than 4 systems", "caption")])
    return ReliabilityBlocks(columns, [
        Note(f"{coefficient} across systems. The intervals resample the systems (percentile bootstrap, {n_resamples} "
             "resamples) with each system's R_i and P_i held fixed, so they leave out the noise of those per-system "
             "values: read them as at least this wide.", "caption"),
        Table(table, f"reliability {dimension}", "reliability")])


def reliability_scored(rts: Run, dimension: str) -> list[Block]:
    """[] when the RTS run scored ``dimension`` (or names none); else why there is nothing to show."""
    if dimension in rts.dimensions or not rts.dimensions:
        return []
    return [Note(esc(f"These runs did not score {dimension!r}."))]


# ----------------------------------------------------------------------------------------------- difficulty

DIFFICULTY_HEADING = Heading(f"Pairwise agreement by difficulty ({cite('002')})")


def difficulty_blocks(table: pd.DataFrame, dimension: str, colors: dict[str, str] | None = None) -> list[Block]:
    if table.empty:
        return [Note("Not enough pairs of outputs of the same document.")]
    return [Figure(difficulty_figure(table, colors), "difficulty"),
            Table(table, f"pairwise tau by difficulty {dimension}", "difficulty")]


# ------------------------------------------------------------------------------------ pairwise preferences

PAIRWISE_HEADING = Heading("Pairwise preferences: judge vs human votes")


def pairwise_intro(dataset: Dataset, pairwise_runs: list[Run], dimension: str, systems: list[str] | None
                   ) -> list[Block]:
    """Why the tab has nothing to show (no votes, no run with verdicts), or the note that the systems filter does
    not apply to it."""
    if dataset.preferences.empty:
        return [Note("This dataset has no pairwise human votes: import some with the Data page's upload (a file with "
                     "a prompt, two outputs and a winner column) or `python -m evalcore import-pairs`.")]
    if not pairwise_runs:
        return [Note(esc(f"No selected run gave pairwise verdicts on {dimension!r}: pick one in the sidebar, import "
                         "one (`python -m evalcore import-verdicts`) or judge the pairs on the Score page."))]
    if systems:  # the filter above is for per-item scores; votes on pairs are counted whole
        return [Note(esc(f"The systems filter ({', '.join(systems)}) does not apply here: every annotated pair is "
                         "counted."), "caption")]
    return []


def pairwise_blocks(sums: dict[str, dict], colors: dict[str, str] | None = None, *, dimension: str) -> list[Block]:
    """Each run's agreement with the votes (``preference.summaries``) and what was counted."""
    from evalcore.views import preference as pv

    table = pv.agreement_table(sums)
    return [
        Figure(pv.agreement_figure(table, colors), "pairwise_agreement"),
        Table(table, f"pairwise agreement {dimension}", "pairwise_agreement"),
        Note("One judge verdict per pair: in both orders, the verdict when they agree, else a tie (Zheng et al. 2023, "
             "MT-Bench Sec. 4.2). With ties (S1) every vote counts, tie being a third class; without ties (S2) leaves "
             "out the votes where either side says tie. Majority: the most frequent vote (a tie when the top votes "
             "tie). Per-order accuracy, right in both orders and positional agreement as LLMBar's statistics.json, "
             "but a pair unreadable in both orders agrees only in \"LLMBar's count\". n = votes, pairs or vote pairs "
             "counted; 95% CIs resample prompts.", "caption"),
        Table(pv.counts_table(sums), "pairwise counts", "pairwise_counts"),
        Note("unreadable: pairs with a verdict that could not be read (never guessed); missing_order: pairs of a "
             "both-orders run judged in one order only. Neither has a combined verdict.", "caption")]


@dataclass
class PairwiseRunView:
    """One run's confusion matrix (``left``) beside the annotators' kappas and the judge against each (``right``),
    then the win rates and bias (``below``)."""

    left: list[Block]
    right: list[Block]
    below: list[Block]


def pairwise_run_view(sums: dict[str, dict], picked: str) -> PairwiseRunView:
    from evalcore.views import preference as pv

    first = sums[picked]
    right: list[Block] = []
    kappas = pv.annotator_kappa_table(first)
    if not kappas.empty:
        right += [Note("**Cohen's kappa between annotators**", "markdown"),
                  Table(kappas, "annotator kappa", "annotator_kappa")]
        if kappas["cohen_kappa"].isna().any():
            right.append(Note("Blank: no kappa; the note says why (no shared pair, or shared votes holding one "
                              "outcome only).", "caption"))
    right += [Note("**The judge against each annotator**", "markdown"),
              Table(pv.per_annotator_table({picked: first}), "judge per annotator", "pairwise_per_ann")]
    return PairwiseRunView([Figure(pv.confusion_figure(first, picked), "pairwise_confusion")], right,
                           _win_rate_blocks(sums, picked) + _pairwise_bias_blocks(sums))


def _win_rate_blocks(sums: dict[str, dict], picked: str) -> list[Block]:
    from evalcore.views import preference as pv

    models = pv.model_table(sums)
    if models.empty:
        return []
    out: list[Block] = [Note("**Win rates per model** (ties count 0.5)", "markdown"),
                        Figure(pv.win_rate_figure(models, picked), "pairwise_win_rates"),
                        Table(models, "win rates per model", "pairwise_models")]
    rho = (sums[picked].get("models") or {}).get("ranking_spearman") or {}
    if rho.get("statistic") is not None:
        out.append(Note(esc(f"Ranking by win rate: Spearman correlation of the humans' and the judge's per-model win "
                            f"rates {fmt(rho['statistic'])} [{fmt(rho['ci_low'])}, {fmt(rho['ci_high'])}] over "
                            f"{rho['n']} models."), "caption"))
    return out


def _pairwise_bias_blocks(sums: dict[str, dict]) -> list[Block]:
    from evalcore.views import preference as pv

    bias = pv.bias_table(sums)
    if bias.empty:
        return []
    return [Note("**Bias**", "markdown"), Table(bias, "pairwise bias", "pairwise_bias"),
            Note("Position: 0.5 means no preference for the first-shown output. Verbosity (AlpacaEval's \"prefer "
                 "longer\"): decisive verdicts for the longer output (characters), beside the humans' share. "
                 "Self-preference: the judge's win rate for outputs of its own model family against others, beside "
                 "the humans' win rate for the same outputs.", "caption")]


def registered_blocks(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000,
                      systems: list[str] | None = None) -> list[Block]:
    """The analyses installed packages add (``evalcore.registry.ANALYSES``, those with tables; docs/extending.md):
    each one's label as a heading, then its tables, one row per run. The report shows the same blocks."""
    from evalcore import registry
    from evalcore.analyses.evaluation import Settings, registered_tables
    from evalcore.meta.coefficients import COEFFICIENTS
    from evalcore.meta.correlation import LEVELS

    settings = Settings(LEVELS, COEFFICIENTS, n_resamples, 0, systems)
    blocks: list[Block] = []
    for name, shown in registered_tables(dataset, runs, dimension, settings).items():
        blocks.append(Heading(esc(registry.ANALYSES[name].label), level=3))
        for i, (title, frame) in enumerate(shown.items()):
            blocks += [Note(esc(title), "caption"),
                       Table(frame, name=f"{name}_{i}_{dimension}.csv", key=f"analysis_{name}_{i}")]
    return blocks
