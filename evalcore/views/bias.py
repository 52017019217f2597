"""Bias page: writer bias (000 Fig. 2), mean judge vs human score per system (003 Fig. 4), score distributions
(002 Fig. 3-4), position bias of pairwise runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from evalcore.model import STATUS_OK, Dataset, Run, counted
from evalcore.views.blocks import Block, Expander, Figure, Heading, Note, Table, tables
from evalcore.views.common import frames_for, run_label
from evalcore.views.format import cite, esc

WRITER_COLUMNS = ("written_by", "writer", "author", "source_type")
GROUPS = ("human preferred", "equally good", "LLM preferred")


def writer_column(dataset: Dataset) -> str | None:
    for c in WRITER_COLUMNS:
        if c in dataset.items.columns:
            return c
    return None


def human_written_systems(dataset: Dataset) -> list[str]:
    """Systems whose outputs people wrote (dataset meta ``human_written_systems``: Topical-Chat's "Original Ground
    Truth" and "New Human Generated" turns), present in the items."""
    declared = [str(s) for s in (dataset.meta.get("human_written_systems") or [])]
    return [s for s in declared if s in set(dataset.items["system_id"].astype(str))]


def item_writers(dataset: Dataset, human_systems: list[str] | None = None) -> pd.Series:
    """"human" or "llm" per item_id: from a writer attribute of the items (zhang_pairs' ``written_by``), else from
    the systems known to be human-written (``human_systems``, default the dataset's ``human_written_systems``).
    Empty when the dataset says neither."""
    items = dataset.items.set_index("item_id")
    col = writer_column(dataset)
    if col is not None and human_systems is None:
        return items[col].astype(str).map(lambda w: "human" if _is_human(w) else "llm")
    systems = human_systems if human_systems is not None else human_written_systems(dataset)
    if not systems:
        return pd.Series(dtype=object)
    return pd.Series(np.where(items["system_id"].astype(str).isin([str(s) for s in systems]), "human", "llm"),
                     index=items.index)


def has_writer_info(dataset: Dataset) -> bool:
    return not item_writers(dataset).empty


def human_preference_by_pair(dataset: Dataset, dimension: str | None = None) -> pd.DataFrame:
    """pair_id, item_a, item_b, preferred ("a" | "b" | "tie") by majority of the annotators' votes.

    Votes count +1 for a, -1 for b, 0 for a tie; the sign of the sum decides (a zero sum is a tie). The paper
    (Liu et al. 2023 Sec. 4, after Zhang et al. 2023) groups pairs by the judges' preference; majority is how we
    aggregate several judges of one pair."""
    prefs = dataset.preferences
    if prefs.empty:
        return pd.DataFrame(columns=["pair_id", "doc_id", "item_a", "item_b", "preferred", "votes"])
    if dimension is not None and (prefs["dimension"] == dimension).any():
        prefs = prefs[prefs["dimension"] == dimension]
    vote = prefs["preferred"].map({"a": 1, "b": -1, "tie": 0}).fillna(0)
    g = prefs.assign(vote=vote).groupby(["pair_id", "doc_id", "item_a", "item_b"], as_index=False)
    out = g.agg(votes=("vote", "sum"), annotators=("vote", "size"))
    out["preferred"] = np.where(out["votes"] > 0, "a", np.where(out["votes"] < 0, "b", "tie"))
    return out


def writer_pairs(dataset: Dataset, dimension: str, *, human_systems: list[str] | None = None) -> pd.DataFrame:
    """Pairs of a human-written and an LLM-written text of the same document, with which one the humans preferred.

    Columns: pair_id, doc_id, human_item, llm_item, group (``GROUPS``), basis. With annotators' pairwise votes
    (zhang_pairs) the majority decides (basis "votes"); otherwise every human-written output of a document is paired
    with every model-written one and the higher gold score on ``dimension`` is preferred, an equal score "equally
    good" (basis "human scores": Topical-Chat, whose scores are means of 3 annotators)."""
    cols = ["pair_id", "doc_id", "human_item", "llm_item", "group", "basis"]
    writers = item_writers(dataset, human_systems)
    if writers.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    if not dataset.preferences.empty and human_systems is None:
        for p in human_preference_by_pair(dataset, dimension).itertuples(index=False):
            wa, wb = writers.get(p.item_a), writers.get(p.item_b)
            if wa is None or wb is None or wa == wb:
                continue
            human_side = "a" if wa == "human" else "b"
            human_item, llm_item = (p.item_a, p.item_b) if human_side == "a" else (p.item_b, p.item_a)
            group = ("equally good" if p.preferred == "tie" else
                     "human preferred" if p.preferred == human_side else "LLM preferred")
            rows.append((p.pair_id, p.doc_id, human_item, llm_item, group, "votes"))
        return pd.DataFrame(rows, columns=cols)
    gold = dataset.human_scores
    gold = gold[gold["dimension"] == dimension].set_index("item_id")["score"].astype(float)
    items = dataset.items[["item_id", "doc_id"]].assign(writer=lambda f: f["item_id"].map(writers))
    items = items[items["item_id"].isin(gold.index)]
    for doc, g in items.groupby("doc_id", sort=True):
        humans = g.loc[g["writer"] == "human", "item_id"].tolist()
        llms = g.loc[g["writer"] == "llm", "item_id"].tolist()
        for h in humans:
            for m in llms:
                gh, gm = gold[h], gold[m]
                # scores are means of a few ratings (k/3): equal within rounding is a tie
                group = ("equally good" if abs(gh - gm) < 1e-9 else
                         "human preferred" if gh > gm else "LLM preferred")
                rows.append((f"{h}|{m}", doc, h, m, group, "human scores"))
    return pd.DataFrame(rows, columns=cols)


def writer_bias_pairs(dataset: Dataset, run: Run, dimension: str, *,
                      human_systems: list[str] | None = None) -> pd.DataFrame:
    """``writer_pairs`` with the run's score of each side (judge_human_written, judge_llm_written); only pairs whose
    two texts the judge scored (a partial run must not compare different sets of texts)."""
    pairs = writer_pairs(dataset, dimension, human_systems=human_systems)
    if pairs.empty or run.judgments.empty or dimension not in run.dimensions:
        return pd.DataFrame()
    scores = run.scores(dimension)
    s = scores[scores["status"] == STATUS_OK].set_index("item_id")["judge"]
    t = pairs.assign(judge_human_written=pairs["human_item"].map(s), judge_llm_written=pairs["llm_item"].map(s))
    return t.dropna(subset=["judge_human_written", "judge_llm_written"]).reset_index(drop=True)


def writer_bias_table(dataset: Dataset, run: Run, dimension: str, *,
                      human_systems: list[str] | None = None) -> pd.DataFrame:
    """Liu et al. 2023 Fig. 2: the judge's mean score of the human-written and the LLM-written text of each pair,
    grouped by which one the humans preferred (human preferred / equally good / LLM preferred).

    Works from items with a writer attribute (zhang_pairs) or from systems known to be human-written (Topical-Chat;
    or ``human_systems``). Empty when the run did not score these items."""
    t = writer_bias_pairs(dataset, run, dimension, human_systems=human_systems)
    if t.empty:
        return pd.DataFrame()
    agg = t.groupby("group").agg(
        pairs=("pair_id", "size"),
        human_written=("judge_human_written", "mean"),
        llm_written=("judge_llm_written", "mean"),
    ).reset_index()
    agg["difference"] = agg["human_written"] - agg["llm_written"]
    agg.insert(0, "dimension", dimension)
    agg["basis"] = t["basis"].iloc[0]
    order = {g: i for i, g in enumerate(GROUPS)}
    return agg.sort_values("group", key=lambda x: x.map(order)).reset_index(drop=True)


def _is_human(writer: str) -> bool:
    w = writer.lower()
    return w.startswith("human") or w in ("writer", "freelance", "freelancer", "reference")


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


def mean_scores_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *,
                      systems: list[str] | None = None) -> pd.DataFrame:
    """Mean judge and mean human score per run, dimension and system (003 Fig. 4 and App. F); ``systems``: only
    these (the Alignment page's filter, as the exported report applies it)."""
    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for dim in dimensions:
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            g = frame.groupby("system_id").agg(judge=("judge", "mean"), human=("human", "mean"),
                                               items=("item_id", "size"),
                                               failed=("judge", lambda x: int(x.isna().sum()))).reset_index()
            g.insert(0, "run", labels[run_id])
            g.insert(1, "dimension", dim)
            parts.append(g)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


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


def score_distribution_table(dataset: Dataset, runs: list[Run], dimension: str) -> pd.DataFrame:
    """Every parsed judge score of each run on one dimension (item_id, run, method, judge)."""
    parts = []
    for run in runs:
        if run.judgments.empty or dimension not in run.dimensions:
            continue
        s = run.scores(dimension)
        s = s[s["status"] == STATUS_OK][["item_id", "judge"]].copy()
        s.insert(0, "run", run_label(run))
        s.insert(1, "method", run.method)
        parts.append(s)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


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


def position_bias_table(runs: list[Run], *, n_resamples: int = 1000) -> pd.DataFrame:
    """First-position win rate, tie rate, flip and inconsistency rates of each pairwise run, per dimension and
    pooled over dimensions ("all": every (dimension, pair) counted once, see meta.pairwise.position_bias), each
    with its 95% interval over documents (``<rate>_ci_low`` / ``_ci_high``, named after the rate so a table shows
    them in its unit; meta.pairwise.position_bias_intervals)."""
    from evalcore.meta.pairwise import position_bias, position_bias_intervals

    rows = []
    for run in runs:
        comps = run.comparisons
        if comps.empty:
            continue
        for dim in list(dict.fromkeys(comps["dimension"].tolist())) + [None]:
            sub = comps if dim is None else comps[comps["dimension"] == dim]
            d = position_bias(sub)
            cis = position_bias_intervals(sub, n_resamples=n_resamples)
            # what each row rests on first (a wide table scrolls: the pairs counted stay in view), then the rates
            row = {"run": run_label(run), "dimension": dim or "all", "n_pairs": _scalar(d["n_pairs"])}
            for rate in POSITION_MEASURES:
                row.update({rate: d[rate], f"{rate}_ci_low": cis[rate].ci_low, f"{rate}_ci_high": cis[rate].ci_high})
            rows.append(row | {k: _scalar(v) for k, v in d.items() if k not in POSITION_MEASURES and k not in row})
    return pd.DataFrame(rows)


def score_bias_table(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000
                     ) -> pd.DataFrame:
    """Verbosity and self-preference of score runs on one dimension (evalcore.meta.preference): the Spearman
    correlation of the judge-human residual (z-scores) with output length, and the mean residual on outputs of the
    judge's own model family beside the other outputs, each with its 95% CI over documents."""
    from evalcore import runs as runs_mod
    from evalcore.meta import fastboot, preference

    cols = ["run", "statistic", "value", "ci_low", "ci_high", "n"]
    if dataset.human_scores.empty or not (dataset.human_scores["dimension"] == dimension).any():
        return pd.DataFrame(columns=cols)
    lengths = dataset.items.drop_duplicates("item_id").set_index("item_id")["output"].astype(str).str.len()
    rows = []
    scored = [run for run in runs if not run.judgments.empty and dimension in run.dimensions]
    with fastboot.expecting(n_resamples * len(scored)):  # the verbosity resamples of every run: one progress plan
        for run in scored:
            frame = runs_mod.score_frame(dataset, run, dimension)
            stats = {"verbosity: residual vs length (Spearman)": preference.score_verbosity(frame, lengths,
                                                                                            n_resamples=n_resamples)}
            sp = preference.score_self_preference(frame, run.model, n_resamples=n_resamples)
            if sp is not None:
                stats[f"self-preference: mean residual, {sp['family']} outputs"] = sp["residual_own"]
                stats["self-preference: mean residual, other outputs"] = sp["residual_other"]
            rows += [{"run": run_label(run), "statistic": k, "value": v.statistic, "ci_low": v.ci_low,
                      "ci_high": v.ci_high, "n": v.n} for k, v in stats.items()]
    return pd.DataFrame(rows, columns=cols)


def _scalar(v: Any) -> Any:
    if isinstance(v, (list, tuple, dict)):
        return str(v)
    return v


# the headline measure first: a wide table scrolls, and what the page is about stays in view
POSITION_MEASURES = {"flip_rate": "verdict follows the position", "first_position_win_rate": "first position wins",
                     "tie_rate": "ties", "inconsistent_rate": "inconsistent verdicts"}


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
    both, one = [], []
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
