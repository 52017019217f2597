"""Bias page: writer bias (000 Fig. 2), mean judge vs human score per system (003 Fig. 4), score distributions
(002 Fig. 3-4), position bias of pairwise runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from evalcore.model import STATUS_OK, Dataset, Run
from evalcore.views.common import frames_for, run_label

WRITER_COLUMNS = ("written_by", "writer", "author", "source_type")


def writer_column(dataset: Dataset) -> str | None:
    for c in WRITER_COLUMNS:
        if c in dataset.items.columns:
            return c
    return None


def human_preference_by_pair(dataset: Dataset, dimension: str | None = None) -> pd.DataFrame:
    """pair_id, item_a, item_b, preferred ("a" | "b" | "tie") by majority of the annotators' votes.

    Votes count +1 for a, -1 for b, 0 for a tie; the sign of the sum decides (a zero sum is a tie). The paper
    (000 Sec. 4, after Zhang et al. 2023) groups pairs by the judges' preference; majority is how we aggregate
    several judges of one pair."""
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


def writer_bias_table(dataset: Dataset, run: Run, dimension: str) -> pd.DataFrame:
    """000 Fig. 2: mean judge score of human-written and LLM-written texts, grouped by which one the humans
    preferred (human preferred / LLM preferred / equally good). Empty when the run did not score these items."""
    col = writer_column(dataset)
    if col is None or dataset.preferences.empty or run.judgments.empty:
        return pd.DataFrame()
    scores = run.scores(dimension)
    scores = scores[scores["status"] == STATUS_OK][["item_id", "judge"]]
    if scores.empty:
        return pd.DataFrame()
    writer = dataset.items.set_index("item_id")[col].astype(str)
    pairs = human_preference_by_pair(dataset, dimension)
    rows = []
    for p in pairs.itertuples(index=False):
        wa, wb = writer.get(p.item_a), writer.get(p.item_b)
        if wa is None or wb is None or wa == wb:
            continue
        human_side = "a" if _is_human(wa) else "b" if _is_human(wb) else None
        if human_side is None:
            continue
        human_item = p.item_a if human_side == "a" else p.item_b
        llm_item = p.item_b if human_side == "a" else p.item_a
        if p.preferred == "tie":
            group = "equally good"
        elif p.preferred == human_side:
            group = "human preferred"
        else:
            group = "LLM preferred"
        rows.append({"pair_id": p.pair_id, "group": group, "human_item": human_item, "llm_item": llm_item})
    if not rows:
        return pd.DataFrame()
    t = pd.DataFrame(rows)
    s = scores.set_index("item_id")["judge"]
    t["judge_human_written"] = t["human_item"].map(s)
    t["judge_llm_written"] = t["llm_item"].map(s)
    # only pairs where the judge scored both texts: a partial run must not compare different sets of articles
    t = t.dropna(subset=["judge_human_written", "judge_llm_written"])
    if t.empty:
        return pd.DataFrame()
    agg = t.groupby("group").agg(
        pairs=("pair_id", "size"),
        human_written=("judge_human_written", "mean"),
        llm_written=("judge_llm_written", "mean"),
    ).reset_index()
    agg["difference"] = agg["human_written"] - agg["llm_written"]
    order = {"human preferred": 0, "equally good": 1, "LLM preferred": 2}
    return agg.sort_values("group", key=lambda x: x.map(order)).reset_index(drop=True)


def _is_human(writer: str) -> bool:
    w = writer.lower()
    return w.startswith("human") or w in ("writer", "freelance", "freelancer", "reference")


def writer_bias_figure(table: pd.DataFrame, run_name: str) -> go.Figure:
    fig = go.Figure([
        go.Bar(x=table["group"], y=table["human_written"], name="human-written"),
        go.Bar(x=table["group"], y=table["llm_written"], name="LLM-written"),
    ])
    fig.update_layout(barmode="group", title=f"{run_name}: mean judge score by the humans' preference (000 Fig. 2)",
                      xaxis_title="humans preferred", yaxis_title="mean judge score")
    return fig


def mean_scores_table(dataset: Dataset, runs: list[Run], dimensions: list[str]) -> pd.DataFrame:
    """Mean judge and mean human score per run, dimension and system (003 Fig. 4 and App. F)."""
    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for dim in dimensions:
        for run_id, frame in frames_for(dataset, runs, dim).items():
            g = frame.groupby("system_id").agg(judge=("judge", "mean"), human=("human", "mean"),
                                               items=("item_id", "size"),
                                               failed=("judge", lambda x: int(x.isna().sum()))).reset_index()
            g.insert(0, "run", labels[run_id])
            g.insert(1, "dimension", dim)
            parts.append(g)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def mean_scores_figure(table: pd.DataFrame) -> go.Figure:
    """003 Fig. 4: mean human score and mean judge score per dimension (means over systems' means)."""
    per_dim = table.groupby(["run", "dimension"], sort=False).agg(judge=("judge", "mean"),
                                                                  human=("human", "mean")).reset_index()
    fig = go.Figure()
    human = per_dim.drop_duplicates("dimension")
    fig.add_trace(go.Bar(x=human["dimension"], y=human["human"], name="human"))
    for run, sub in per_dim.groupby("run", sort=False):
        fig.add_trace(go.Bar(x=sub["dimension"], y=sub["judge"], name=str(run)))
    fig.update_layout(barmode="group", title="Mean judge score vs mean human score (003 Fig. 4)",
                      yaxis_title="mean score")
    return fig


def mean_scores_system_figure(table: pd.DataFrame, dimension: str) -> go.Figure:
    t = table[table["dimension"] == dimension]
    fig = px.scatter(t, x="human", y="judge", color="run", text="system_id",
                     title=f"Mean judge vs mean human score per system ({dimension})")
    lo = float(np.nanmin([t["human"].min(), t["judge"].min()])) if len(t) else 0.0
    hi = float(np.nanmax([t["human"].max(), t["judge"].max()])) if len(t) else 1.0
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(dash="dot", color="grey"),
                             name="judge = human"))
    fig.update_traces(textposition="top center", selector=dict(mode="markers+text"))
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


def score_distribution_figure(table: pd.DataFrame, dimension: str) -> go.Figure:
    """002 Fig. 3-4: how each method's scores are spread (a peaked distribution cannot rank texts)."""
    fig = px.violin(table, x="run", y="judge", color="method", box=True, points=False,
                    title=f"Distribution of judge scores on {dimension} (002 Fig. 3-4)")
    fig.update_layout(xaxis_title="run", yaxis_title="judge score")
    return fig


def position_bias_table(runs: list[Run]) -> pd.DataFrame:
    """First-position win rate, tie rate and order-flip rate of each pairwise run, per dimension and overall."""
    from evalcore.meta.pairwise import position_bias

    rows = []
    for run in runs:
        comps = run.comparisons
        if comps.empty:
            continue
        for dim in list(dict.fromkeys(comps["dimension"].tolist())) + [None]:
            sub = comps if dim is None else comps[comps["dimension"] == dim]
            d = position_bias(sub)
            rows.append({"run": run_label(run), "dimension": dim or "all", **{k: _scalar(v) for k, v in d.items()}})
    return pd.DataFrame(rows)


def _scalar(v: Any) -> Any:
    if isinstance(v, (list, tuple, dict)):
        return str(v)
    return v


def position_bias_figure(table: pd.DataFrame) -> go.Figure:
    rate_cols = [c for c in table.columns if c.endswith("rate")]
    long = table.melt(id_vars=["run", "dimension"], value_vars=rate_cols, var_name="measure", value_name="value")
    fig = px.bar(long, x="dimension", y="value", color="measure", barmode="group", facet_col="run",
                 title="Position bias of pairwise runs (0.5 first-position win rate = no bias)")
    return fig
