"""Bias page: writer bias (000 Fig. 2), mean judge vs human score per system (003 Fig. 4), score distributions
(002 Fig. 3-4), position bias of pairwise runs: the tables of evalcore.analyses.bias as blocks and figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from evalcore.analyses.bias import (  # noqa: F401  (computed there; the page, the report and the CLI call them here)
    GROUPS, WRITER_COLUMNS, _is_human, has_writer_info, human_preference_by_pair, human_written_systems,
    item_writers, mean_scores_table, position_bias_table, score_bias_table, score_distribution_table, writer_bias_pairs,
    writer_bias_table, writer_column, writer_pairs, POSITION_MEASURES,
)
from evalcore.model import Dataset, Run, counted
from evalcore.views.blocks import Block, Expander, Figure, Heading, Note, Table, tables
from evalcore.views.common import run_label
from evalcore.views.format import cite, esc


def writer_bias_figure(table: pd.DataFrame, run_name: str) -> go.Figure:
    from evalcore.views.common import HUMAN_COLOR
    from evalcore.views.format import cite

    x = [f"{g} ({counted(n, 'pair')})" for g, n in zip(table["group"], table["pairs"])]
    fig = go.Figure([
        go.Bar(x=x, y=table["human_written"], name="human-written", marker_color=HUMAN_COLOR,
               text=[f"{v:.2f}" for v in table["human_written"]], textposition="outside"),
        go.Bar(x=x, y=table["llm_written"], name="LLM-written", marker_color="#EF553B",
               text=[f"{v:.2f}" for v in table["llm_written"]], textposition="outside"),
    ])
    fig.update_layout(barmode="group",
                      title=f"{run_name}: mean judge score by the humans' preference ({cite('000', 'Fig. 2')})",
                      xaxis_title="which text the humans preferred", yaxis_title="mean judge score",
                      legend_title_text="text written by")
    return fig


def mean_scores_figure(table: pd.DataFrame, colors: dict[str, str] | None = None) -> go.Figure:
    """Shen et al. 2023 Fig. 4: mean human score and mean judge score per dimension (means over systems' means)."""
    from evalcore.views.common import HUMAN_COLOR
    from evalcore.views.format import cite

    per_dim = table.groupby(["run", "dimension"], sort=False).agg(judge=("judge", "mean"),
                                                                  human=("human", "mean")).reset_index()
    fig = go.Figure()
    human = per_dim.drop_duplicates("dimension")
    fig.add_trace(go.Bar(x=human["dimension"], y=human["human"], name="human", marker_color=HUMAN_COLOR))
    for run, sub in per_dim.groupby("run", sort=False):
        fig.add_trace(go.Bar(x=sub["dimension"], y=sub["judge"], name=str(run),
                             marker_color=(colors or {}).get(str(run))))
    fig.update_layout(barmode="group", title=f"Mean judge score vs mean human score ({cite('003', 'Fig. 4')})",
                      xaxis_title="dimension", yaxis_title="mean score (over systems)", legend_title_text="rater")
    return fig


def mean_scores_system_figure(table: pd.DataFrame, dimension: str, colors: dict[str, str] | None = None
                              ) -> go.Figure:
    t = table[table["dimension"] == dimension]
    fig = px.scatter(t, x="human", y="judge", color="run", text="system_id", color_discrete_map=colors or {},
                     title=f"Mean judge vs mean human score per system ({dimension})")
    lo = float(np.nanmin([t["human"].min(), t["judge"].min()])) if len(t) else 0.0
    hi = float(np.nanmax([t["human"].max(), t["judge"].max()])) if len(t) else 1.0
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(dash="dot", color="grey"),
                             name="judge = human"))
    fig.update_traces(textposition="top center", selector=dict(mode="markers+text"))
    fig.update_layout(xaxis_title="mean human score of the system", yaxis_title="mean judge score of the system")
    return fig


def score_distribution_figure(table: pd.DataFrame, dimension: str, colors: dict[str, str] | None = None
                              ) -> go.Figure:
    """Chen et al. 2023 Fig. 3-4: how each run's scores are spread (a peaked distribution cannot rank texts).

    The density is drawn over the scores seen only (``spanmode="hard"``): a kernel estimate left to run on would
    draw scores below 1 and above 5 on a 1-5 scale, which no judge gave."""
    from evalcore.views.format import cite

    fig = go.Figure()
    for run, sub in table.groupby("run", sort=False):
        method = str(sub["method"].iloc[0])
        fig.add_trace(go.Violin(x=[f"{run}"] * len(sub), y=sub["judge"], name=str(run), spanmode="hard",
                                box_visible=True, meanline_visible=True, points=False,
                                line_color=(colors or {}).get(str(run)),
                                hovertemplate=f"{method}: %{{y}}<extra>{run}</extra>"))
    lo, hi = float(table["judge"].min()), float(table["judge"].max())
    pad = 0.05 * (hi - lo or 1.0)
    fig.update_layout(title=f"Distribution of judge scores on {dimension} ({cite('002', 'Fig. 3-4')})",
                      xaxis_title="run", yaxis_title="judge score", showlegend=False,
                      yaxis_range=[lo - pad, hi + pad])
    return fig


def position_bias_figure(table: pd.DataFrame) -> go.Figure:
    """Each rate as a bar with its 95% interval over documents (the table's ``<rate>_ci_low`` / ``_ci_high``)."""
    rate_cols = [c for c in POSITION_MEASURES if c in table.columns]
    long = table.melt(id_vars=["run", "dimension"], value_vars=rate_cols, var_name="measure", value_name="value")
    for end in ("ci_low", "ci_high"):
        ends = table.melt(id_vars=["run", "dimension"], value_vars=[f"{c}_{end}" for c in rate_cols],
                          value_name=end)
        long[end] = 100.0 * ends[end].to_numpy()
    long["value"] = 100.0 * long["value"]
    long["above"], long["below"] = long["ci_high"] - long["value"], long["value"] - long["ci_low"]
    long["measure"] = long["measure"].map(POSITION_MEASURES)
    fig = px.bar(long, x="dimension", y="value", color="measure", barmode="group", facet_col="run",
                 error_y="above", error_y_minus="below",
                 title="Position bias of pairwise runs (50% first-position wins = no bias; 95% CIs over documents)",
                 labels={"value": "% of verdicts or pairs", "dimension": "dimension", "measure": "measure"})
    fig.add_hline(y=50, line_dash="dot", line_color="grey")
    blank = [POSITION_MEASURES[c] for c in ("flip_rate", "inconsistent_rate") if c in table.columns
             and table[c].isna().all()]
    if blank:  # a legend entry with no bar anywhere: say why, on the chart itself
        fig.add_annotation(text=f"no bars for {' and '.join(blank)}: pairs judged in one order only",
                           xref="paper", yref="paper", x=1, y=0.97, xanchor="right", yanchor="top",
                           showarrow=False, font={"color": "#555555"})
    fig.update_yaxes(ticksuffix="%", range=[0, 100])
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    return fig


def position_bias_note(runs: list[Run]) -> str:
    """What the position-bias table rests on, true for the runs given: the both-orders reading where every run
    judged each pair in both orders, else which runs judged one order only and why their flip and inconsistency
    rates are blank (they need a pair's two verdicts)."""
    both: list[Run] = []
    one: list[Run] = []
    for run in runs:
        c = run.comparisons
        if c is None or c.empty:
            continue
        orders = c.groupby(["dimension", "pair_id"])["order"].nunique() if "dimension" in c.columns else \
            c.groupby("pair_id")["order"].nunique()
        (both if bool((orders > 1).any()) else one).append(run)
    text = ""
    if both:
        text += (("Every pair is judged in both orders" if not one else
                  f"{', '.join(run_label(r) for r in both)}: pairs judged in both orders")
                 + ": an unbiased judge gives the first position half of the decided comparisons and keeps its "
                   "verdict when the order flips. flip_rate: pairs where the same position won both times; "
                   "inconsistent_rate: pairs whose two verdicts name different outcomes (a tie against a win "
                   "included). ")
    for r in one:
        shown = r.comparisons["order"].value_counts()
        which = ", ".join(f"{n:,} with {'A' if o == 'ab' else 'B'} shown first" for o, n in shown.items())
        text += (f"{run_label(r)} judged each pair in one order only ({which}): flip_rate and inconsistent_rate "
                 "need a pair's verdicts in both orders, so they are blank; first_position_win_rate (decided "
                 "verdicts for the output shown first) and tie_rate still apply. ")
    return text + "The \"all\" row pools every (dimension, pair)."


# ------------------------------------------------------------------------------------- the page's view model
# What the Bias page shows, section by section, as blocks (evalcore.views.blocks): the page lays them out between
# its widgets; the exported report and ``bias --json`` take their tables from the same functions.

WRITER_HEADING = f"Human-written vs LLM-written texts ({cite('000', 'Fig. 2')})"
MEAN_SCORES_HEADING = f"Mean judge score vs mean human score ({cite('003', 'Fig. 4')})"
SCORE_BIAS_HEADING = "Verbosity and self-preference of score runs"
DISTRIBUTION_HEADING = f"Score distributions per method ({cite('002', 'Fig. 3-4')})"
POSITION_HEADING = "Position bias of pairwise runs"
PAIRWISE_METHODS = ("h2h", "pairwise")


def scored_runs(dataset: Dataset, runs: list[Run]) -> list[Run]:
    """The dataset's runs that score items (the writer-bias section's choice)."""
    return [r for r in runs if r.dataset_id == dataset.id and r.method not in PAIRWISE_METHODS]


def pairwise_bias_runs(runs: list[Run]) -> list[Run]:
    """The runs with verdicts on pairs (the position-bias section's choice)."""
    return [r for r in runs if r.method in PAIRWISE_METHODS or (r.comparisons is not None
                                                                and not r.comparisons.empty)]


def writer_intro(dataset: Dataset, scored: list[Run]) -> list[Block]:
    """The writer-bias section's heading, and what to do when it has nothing to show yet."""
    out: list[Block] = [Heading(WRITER_HEADING)]
    if not has_writer_info(dataset):
        out.append(Note("This analysis needs human-written and LLM-written texts of the same documents: pick "
                        "**zhang_pairs** (Zhang et al. 2023: freelance writers' and text-davinci-002's news "
                        "summaries, with annotators' preferences) or **topical_chat** (human-written and "
                        "model-generated dialogue responses, with Chiang & Lee's gpt-3.5 G-Eval run) in the sidebar."))
    elif not scored:
        out.append(Note("No judge has scored these texts yet. Score them on the **Score** page: choose a method "
                        "(e.g. G-Eval or RTS), a judge endpoint and the dimension, then press **Start scoring**; the "
                        "run appears here when it is done."))
    return out


def writer_blocks(dataset: Dataset, run: Run, run_name: str, dimension: str, table: pd.DataFrame,
                  pairs: pd.DataFrame | None = None) -> list[Block]:
    """One run's writer bias (``writer_bias_table`` and ``writer_bias_pairs``; None: no table of pairs): figure,
    table and how the pairs were grouped, or which dimensions the run did score."""
    if table.empty:
        done = [d for d in run.dimensions if d in dataset.dimension_names]
        return [Note(esc(f"Run {run_name} has no parsed scores on {dimension!r} for these pairs.")
                     + (f" It scored: {esc(', '.join(done))} (pick one as the sidebar's Dimension)." if done else ""))]
    how = ("Pairs are grouped by the majority of the annotators' votes (a tie when the votes cancel)."
           if table["basis"].iloc[0] == "votes" else
           "Each human-written response is paired with each model-written response to the same context; the humans "
           "preferred the one with the higher gold score on this dimension (equal scores: equally good). Means are "
           "over pairs.")
    out: list[Block] = [Figure(writer_bias_figure(table, run_name), "writer_bias"),
                        Table(table, f"writer bias {dimension}", "writer_bias"), Note(how, "caption")]
    if pairs is not None:
        out.append(Expander("Every pair with the judge's two scores",
                            (Table(pairs, f"writer bias pairs {dimension}", "writer_pairs", height=300),)))
    return out


def no_score_runs_note(dataset: Dataset) -> Note:
    """Without a score run the three sections that read per-item scores are one sentence, not three headings over
    nothing."""
    pairwise_only = dataset.human_scores.empty and not dataset.preferences.empty
    return Note("This dataset's humans voted on pairs of outputs and its runs give verdicts on pairs: mean scores "
                "per system, verbosity and self-preference of score runs and score distributions need scores per "
                "item, so only position bias (below) applies here. A pairwise judge's verbosity and self-preference "
                "are on the Alignment page's Pairwise preferences tab." if pairwise_only else
                "No selected run has per-item scores: mean scores per system, verbosity and self-preference of "
                "score runs and score distributions need them. Pick runs in the sidebar (**Runs**), or score the "
                "dataset on the **Score** page. Position bias of pairwise runs is below.")


def mean_scores_blocks(table: pd.DataFrame | None, dimension: str, colors: dict[str, str] | None = None
                       ) -> list[Block]:
    """Mean judge vs mean human score per system (``mean_scores_table``; None: the runs scored none of the
    dataset's dimensions)."""
    if table is None:
        return [Note("The selected runs scored none of this dataset's dimensions.")]
    if table.empty:
        return [Note("No scores to compare.")]
    out: list[Block] = [Figure(mean_scores_figure(table, colors), "mean_scores")]
    if (table["dimension"] == dimension).any():
        out.append(Figure(mean_scores_system_figure(table, dimension, colors), "mean_scores_system"))
    return out + [Table(table, "mean scores per system", "mean_scores"),
                  Note("Raw scores are only comparable when judge and humans use the same scale (G-Eval rates "
                       "fluency 1-3 while SummEval's humans rate 1-5).", "caption")]


def score_bias_blocks(table: pd.DataFrame, dimension: str) -> list[Block]:
    """Verbosity and self-preference of score runs (``score_bias_table``)."""
    if table.empty:
        return [Note(esc(f"No score run with human scores on {dimension!r}."))]
    return [Table(table, f"score bias {dimension}", "score_bias"),
            Note("Residual = judge z-score - human z-score of an item (both sides standardised, so scales need not "
                 "match). Verbosity: its Spearman correlation with the output's length in characters (above 0: the "
                 "judge favours longer outputs more than the humans). Self-preference: the mean residual on "
                 "outputs of the judge's model family beside the others (absent when the dataset has none). 95% "
                 "CIs resample documents. Pairwise runs: see the Alignment page's Pairwise tab.", "caption")]


def distribution_blocks(table: pd.DataFrame, dimension: str, colors: dict[str, str] | None = None) -> list[Block]:
    """Score distributions per method (``score_distribution_table``), with their summary per run."""
    if table.empty:
        return [Note(esc(f"No parsed scores on {dimension!r}."))]
    summary = table.groupby(["run", "method"])["judge"].describe().reset_index()
    return [Figure(score_distribution_figure(table, dimension, colors), "distributions"),
            Table(summary, f"score distribution {dimension}", "distributions")]


def position_intro(pairwise: list[Run]) -> list[Block]:
    out: list[Block] = [Heading(POSITION_HEADING)]
    if not pairwise:
        out.append(Note("No pairwise run on this dataset. Score one on the **Score** page with the H2H or Pairwise "
                        "method (SummEval ships Shen et al.'s ChatGPT H2H run)."))
    return out


def position_bias_blocks(table: pd.DataFrame, runs: list[Run]) -> list[Block]:
    """Position bias of the chosen pairwise runs (``position_bias_table``) and what it rests on."""
    if table.empty:
        return [Note("These runs hold no comparisons.")]
    return [Figure(position_bias_figure(table), "position_bias"), Table(table, "position bias", "position_bias"),
            Note(esc(position_bias_note(runs)), "caption")]


def shown_table(blocks: list[Block], key: str) -> pd.DataFrame | None:
    """The frame of the table ``key`` among a section's blocks (None: the section shows a note instead): what
    ``bias --json`` and the exported report take from the page's own view model."""
    return next((t.frame for t in tables(blocks) if t.key == key), None)
