"""What the app's pages show, as plain frames and plotly figures (no Streamlit here).

Each page is a thin layer: widgets, one call into this module, a chart. Keeping the frames and figures here means
the same analysis feeds the HTML report (``evalcore.report``) and is testable without a browser.

The functions take loaded objects (``Dataset``, ``Run``) and the view's parameters; caching by ids is the app's
business.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from evalcore import runs as runs_mod
from evalcore.meta.correlation import COEFFICIENTS, LEVELS
from evalcore.model import STATUS_OK, Dataset, Run
from evalcore.parsers import PARSE_MODES

# LEVELS, COEFFICIENTS and PARSE_MODES are re-exported for the pages' pickers.

# Which bundled runs the app opens on (the issue: SummEval with Shen et al.'s GPT-4 and ChatGPT RTS judgments).
DEFAULT_DATASET = "summeval"
DEFAULT_RUNS = ("summeval/shen-gpt-4-0314-rts", "summeval/shen-gpt-3.5-turbo-0301-rts")


# ------------------------------------------------------------------------------------------------ run choice


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


# --------------------------------------------------------------------------------------------------- Data page


def dataset_overview(dataset: Dataset) -> pd.DataFrame:
    """One row per dimension: scale, items rated, mean and sd of the gold human score."""
    rows = []
    for d in dataset.dimensions:
        s = dataset.human_scores.loc[dataset.human_scores["dimension"] == d.name, "score"].astype(float)
        rows.append({
            "dimension": d.name,
            "scale": f"{d.scale_min:g}-{d.scale_max:g}",
            "items": int(s.notna().sum()),
            "mean": float(s.mean()) if len(s) else math.nan,
            "sd": float(s.std()) if len(s) > 1 else math.nan,
            "description": d.description,
        })
    return pd.DataFrame(rows)


def preview_frame(dataset: Dataset, n: int = 50) -> pd.DataFrame:
    """The first items with their source and output text (shown in a dataframe: text, never HTML)."""
    texts = dataset.texts()
    cols = [c for c in ["item_id", "doc_id", "system_id", "output", "source", "context"] if c in texts.columns]
    extra = [c for c in dataset.items.columns if c not in cols and c not in ("references",)]
    return texts[cols + extra].head(n).reset_index(drop=True)


def rating_histogram(dataset: Dataset) -> go.Figure:
    """Distribution of the gold human score, one panel per dimension."""
    hs = dataset.human_scores.copy()
    hs["score"] = hs["score"].astype(float)
    fig = px.histogram(hs, x="score", facet_col="dimension", facet_col_wrap=4, nbins=20,
                       title=f"Human ratings on {dataset.name}")
    fig.update_yaxes(matches=None)
    fig.update_xaxes(matches=None)
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    return fig


def agreement_table(dataset: Dataset, *, n_resamples: int = 1000) -> pd.DataFrame:
    """Krippendorff's alpha (interval) per dimension and annotator group, with a bootstrap CI.

    Empty when the dataset has no per-annotator ratings."""
    from evalcore.meta.agreement import krippendorff_alpha

    ann = dataset.annotations
    if ann.empty:
        return pd.DataFrame(columns=["dimension", "group", "alpha", "ci_low", "ci_high", "n_items", "n_annotators"])
    rows = []
    groups = [g for g in ann["group"].dropna().unique()] or [None]
    for dim in dataset.dimension_names:
        if not (ann["dimension"] == dim).any():
            continue
        for g in groups:
            sub = ann[(ann["dimension"] == dim) & (ann["group"] == g)] if g is not None else ann
            if sub.empty or sub["annotator"].nunique() < 2:
                continue
            r = krippendorff_alpha(ann, dim, group=g, n_resamples=n_resamples)
            rows.append({"dimension": dim, "group": g if g is not None else "all", "alpha": r.alpha,
                         "ci_low": r.ci_low, "ci_high": r.ci_high, "n_items": r.n_items,
                         "n_annotators": r.n_annotators})
    return pd.DataFrame(rows)


def agreement_figure(table: pd.DataFrame) -> go.Figure:
    t = table.copy()
    fig = go.Figure()
    for g, sub in t.groupby("group", sort=False):
        fig.add_trace(go.Bar(
            x=sub["dimension"], y=sub["alpha"], name=str(g),
            error_y=dict(type="data", symmetric=False, array=(sub["ci_high"] - sub["alpha"]).tolist(),
                         arrayminus=(sub["alpha"] - sub["ci_low"]).tolist()),
        ))
    fig.update_layout(barmode="group", title="Inter-annotator agreement (Krippendorff's alpha, interval)",
                      yaxis_title="alpha", xaxis_title="dimension")
    return fig


# ---------------------------------------------------------------------------------------------- Alignment page


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


def alignment_table(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000,
                    systems: list[str] | None = None) -> pd.DataFrame:
    """Correlation of each run with the humans: level x coefficient, with CI, n, skipped and dropped counts."""
    from evalcore.meta.correlation import correlation_table

    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        t = correlation_table(frame, n_resamples=n_resamples)
        t.insert(0, "run", labels[run_id])
        t.insert(1, "run_id", run_id)
        parts.append(t)
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    keep = ["run", "level", "coefficient", "statistic", "ci_low", "ci_high", "n", "skipped", "dropped", "pvalue",
            "run_id"]
    return table[[c for c in keep if c in table.columns]]


def alignment_figure(table: pd.DataFrame, coefficient: str) -> go.Figure:
    """Correlation per level with its CI for one coefficient, one bar per run."""
    t = table[table["coefficient"] == coefficient]
    fig = go.Figure()
    for run, sub in t.groupby("run", sort=False):
        fig.add_trace(go.Bar(
            x=sub["level"], y=sub["statistic"], name=str(run),
            error_y=dict(type="data", symmetric=False, array=(sub["ci_high"] - sub["statistic"]).tolist(),
                         arrayminus=(sub["statistic"] - sub["ci_low"]).tolist()),
        ))
    fig.update_layout(barmode="group", title=f"{coefficient.title()} correlation with human ratings (95% CI)",
                      yaxis_title=coefficient, xaxis_title="level")
    return fig


def ceiling_table(dataset: Dataset, dimension: str, *, level: str, coefficient: str) -> pd.DataFrame:
    """Each expert against the mean of the others (the human ceiling), at the same level and coefficient."""
    from evalcore.meta.agreement import human_ceiling

    ann = dataset.annotations
    if ann.empty or not (ann["dimension"] == dimension).any():
        return pd.DataFrame()
    groups = list(ann.loc[ann["dimension"] == dimension, "group"].dropna().unique())
    group = "expert" if "expert" in groups else (groups[0] if groups else None)
    sub = ann[(ann["dimension"] == dimension) & (ann["group"] == group)] if group is not None else ann
    if sub["annotator"].nunique() < 2:
        return pd.DataFrame()
    t = human_ceiling(ann, dataset.items, dimension, group=group, level=level, coefficient=coefficient)
    t = t.copy()
    t.insert(0, "group", group)
    return t


def per_system_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *, coefficient: str,
                     systems: list[str] | None = None) -> pd.DataFrame:
    """P_i (003 Eq. 2) and Q_i (Eq. 1) for every run, dimension and system."""
    from evalcore.meta.systems import per_system

    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for dim in dimensions:
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            if frame["system_id"].nunique() < 2:
                continue
            t = per_system(frame, coefficient=coefficient).copy()
            t.insert(0, "run", labels[run_id])
            t.insert(1, "dimension", dim)
            parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def per_system_box(table: pd.DataFrame, coefficient: str) -> go.Figure:
    """003 Fig. 1: the spread of per-system correlations in each dimension (one box per run and dimension)."""
    fig = px.box(table, x="dimension", y="correlation", color="run", points="all",
                 hover_data=["system_id"] if "system_id" in table.columns else None,
                 title=f"Per-system {coefficient} correlation (003 Fig. 1)")
    fig.update_layout(yaxis_title=f"{coefficient} per system (P_i)")
    return fig


def meta_correlation_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *, coefficient: str,
                           systems: list[str] | None = None) -> pd.DataFrame:
    """M (003 Eq. 3) per run and dimension, with its p-value and the systems dropped as undefined."""
    from evalcore.meta.systems import meta_correlation

    labels = {r.run_id: run_label(r) for r in runs}
    rows = []
    for dim in dimensions:
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            if frame["system_id"].nunique() < 3:
                continue
            r = meta_correlation(frame, coefficient=coefficient)
            rows.append({"run": labels[run_id], "dimension": dim, "M": r.statistic, "pvalue": r.pvalue,
                         "n_systems": r.n_systems, "dropped_systems": ", ".join(map(str, r.dropped_systems))})
    return pd.DataFrame(rows)


def meta_scatter(per_system: pd.DataFrame, meta_table: pd.DataFrame, dimension: str, coefficient: str) -> go.Figure:
    """003 Fig. 2-3: system quality Q_i against the judge's per-system correlation P_i; M and p in the legend."""
    t = per_system[per_system["dimension"] == dimension].copy()
    fig = go.Figure()
    for run, sub in t.groupby("run", sort=False):
        m = meta_table[(meta_table["run"] == run) & (meta_table["dimension"] == dimension)]
        tag = f" (M={m['M'].iloc[0]:.3f}, p={m['pvalue'].iloc[0]:.3g})" if len(m) else ""
        fig.add_trace(go.Scatter(x=sub["quality"], y=sub["correlation"], mode="markers+text",
                                 text=sub["system_id"].astype(str), textposition="top center",
                                 name=f"{run}{tag}"))
    fig.update_layout(title=f"Meta-correlation on {dimension}: Q_i vs P_i (003 Fig. 2-3)",
                      xaxis_title="system quality Q_i (mean human score)",
                      yaxis_title=f"judge-human {coefficient} on the system (P_i)")
    return fig


def pair_sets(dataset: Dataset, systems: list[str] | None = None) -> dict[str, list[tuple[str, str]] | None]:
    """The system pairs #CP is counted on (003 4.2.1): all pairs of the abstractive systems (SummEval) or of every
    system, and the challenge pairs (adjacent in average human score over all dimensions, 003 App. E)."""
    from evalcore.meta.systems import challenge_pairs

    pool = list(dataset.meta.get("abstractive_systems") or dataset.systems)
    if systems is not None:
        pool = [s for s in pool if s in systems]
    full = list(itertools.combinations(sorted(pool, key=str), 2))
    if dataset.meta.get("challenge_pairs") and systems is None:
        challenge = [tuple(p) for p in dataset.meta["challenge_pairs"]]
    else:
        hs = dataset.human_scores.merge(dataset.items[["item_id", "system_id"]], on="item_id")
        hs = hs[hs["system_id"].isin(pool)]
        means = hs.groupby("system_id")["score"].mean() if not hs.empty else pd.Series(dtype=float)
        challenge = challenge_pairs(means) if len(means) > 1 else []
    return {"full": full, "challenge": challenge}


def correct_preferences_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *,
                              systems: list[str] | None = None) -> pd.DataFrame:
    """#CP per run and dimension on the full and the challenge pair sets."""
    from evalcore.meta.systems import correct_preferences

    sets = pair_sets(dataset, systems)
    labels = {r.run_id: run_label(r) for r in runs}
    rows = []
    for dim in dimensions:
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            row: dict[str, Any] = {"run": labels[run_id], "dimension": dim}
            scored = set(frame.loc[frame["judge"].notna(), "system_id"])
            for name, pairs in sets.items():
                # a run that scored only some systems (a first try on a few items) is counted on the pairs it
                # covers; "total" says how many that is
                pairs = [p for p in pairs if p[0] in scored and p[1] in scored]
                if not pairs:
                    continue
                r = correct_preferences(frame, pairs=pairs)
                row[f"{name} correct"] = r.correct
                row[f"{name} total"] = r.total
            rows.append(row)
    # Pairwise (H2H) runs: the judge's points come from its verdicts, not from per-item scores.
    for run in runs:
        if run.comparisons.empty:
            continue
        for dim in dimensions:
            comps = run.comparisons[run.comparisons["dimension"] == dim]
            if comps.empty:
                continue
            row = {"run": labels[run.run_id], "dimension": dim}
            for name, pairs in sets.items():
                if not pairs:
                    continue
                r = h2h_cp(dataset, comps, dim, pairs)
                if r is None:
                    continue
                row[f"{name} correct"] = r.correct
                row[f"{name} total"] = r.total
            rows.append(row)
    table = pd.DataFrame(rows)
    if not table.empty:
        for name in ("full", "challenge"):
            if f"{name} correct" in table.columns:
                table[f"{name} %"] = 100.0 * table[f"{name} correct"] / table[f"{name} total"]
    return table


def h2h_cp(dataset: Dataset, comparisons: pd.DataFrame, dimension: str, pairs):
    """#CP of a pairwise run (003 H2H), through evalcore.meta.pairwise; None when the run did not judge every pair
    of the set (Shen's H2H run covers only the 11 challenge pairs)."""
    from evalcore.meta import pairwise

    try:
        return pairwise.h2h_correct_preferences(comparisons, dataset.items, dataset.human_scores, dimension,
                                                pairs=pairs)
    except ValueError:
        return None


def reliability_pairs(runs: list[Run]) -> list[tuple[Run, Run]]:
    """(RTS run, MCQ run) pairs from the same judge model: the inputs of 003's reliability indicator (Eq. 4).

    When a model has several prompt variants of each (Shen's RTS/MCQ and RTS2/MCQ2), a run is paired with the MCQ
    run whose id is its own with "rts" replaced by "mcq"; otherwise with every MCQ run of the same model."""
    rts = [r for r in runs if r.method == "rts"]
    mcq = [r for r in runs if r.method == "mcq"]
    by_id = {r.run_id: r for r in mcq}
    out = []
    for a in rts:
        twin = by_id.get(a.run_id.replace("rts", "mcq"))
        if twin is not None and twin.model == a.model:
            out.append((a, twin))
        else:
            out += [(a, b) for b in mcq if b.model == a.model and b.run_id.replace("mcq", "rts") not in
                    {r.run_id for r in rts}]
    return out


def reliability_view(dataset: Dataset, rts: Run, mcq: Run, dimension: str, *, coefficient: str):
    """R_i per system with P_i of both methods, and corr(R_i, P_i) for each (003 Eq. 4)."""
    from evalcore.meta.systems import reliability

    a = runs_mod.score_frame(dataset, rts, dimension)
    b = runs_mod.score_frame(dataset, mcq, dimension)
    return reliability(a, b, coefficient=coefficient)


def difficulty_table(dataset: Dataset, runs: list[Run], dimension: str, *, systems: list[str] | None = None
                     ) -> pd.DataFrame:
    """002's pairwise tau by difficulty bucket (hard/medium/easy by the human score gap) for each run."""
    from evalcore.meta.pairwise import pairwise_kendall_by_difficulty

    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        t = pairwise_kendall_by_difficulty(frame).copy()
        t.insert(0, "run", labels[run_id])
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def difficulty_figure(table: pd.DataFrame) -> go.Figure:
    fig = px.bar(table, x="bucket", y="tau", color="run", barmode="group",
                 hover_data=[c for c in ("n_pairs",) if c in table.columns],
                 title="Pairwise Kendall tau by difficulty (002)")
    return fig


# ---------------------------------------------------------------------------------------------------- Bias page


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


# ------------------------------------------------------------------------------------------------- Compare page


def paired_comparison(dataset: Dataset, run_a: Run, run_b: Run, dimension: str, *, level: str, coefficient: str,
                      n_resamples: int = 1000, method: str = "bootstrap"):
    """Does run A correlate better with the humans than run B on the same items? (meta.compare)"""
    from evalcore.meta.compare import paired_difference

    a = runs_mod.score_frame(dataset, run_a, dimension)
    b = runs_mod.score_frame(dataset, run_b, dimension)
    return paired_difference(a, b, level=level, coefficient=coefficient, n_resamples=n_resamples, method=method)


def disagreements(dataset: Dataset, run_a: Run, run_b: Run, dimension: str, *, top: int = 20) -> pd.DataFrame:
    """Items where two runs disagree most.

    The runs may score on different scales (1-5 vs 0-100), so each run's scores are turned into percentile ranks
    first; the gap is the difference of ranks (0 = same place, 1 = opposite ends)."""
    a = run_a.scores(dimension)[["item_id", "judge"]].rename(columns={"judge": "judge_a"})
    b = run_b.scores(dimension)[["item_id", "judge"]].rename(columns={"judge": "judge_b"})
    t = a.merge(b, on="item_id").dropna(subset=["judge_a", "judge_b"])
    if t.empty:
        return pd.DataFrame(columns=["item_id", "system_id", "judge_a", "judge_b", "human", "rank_gap", "doc_id"])
    t["rank_a"] = t["judge_a"].rank(pct=True)
    t["rank_b"] = t["judge_b"].rank(pct=True)
    t["rank_gap"] = (t["rank_a"] - t["rank_b"]).abs()
    human = dataset.human_table(dimension)[["item_id", "doc_id", "system_id", "human"]]
    t = t.merge(human, on="item_id", how="left")
    t = t.sort_values(["rank_gap", "item_id"], ascending=[False, True]).head(top)
    return t[["item_id", "system_id", "judge_a", "judge_b", "human", "rank_gap", "doc_id"]].reset_index(drop=True)


def item_texts(dataset: Dataset, item_id: str) -> dict[str, str]:
    """Source, output, references and context of one item (shown as plain text)."""
    t = dataset.texts()
    row = t[t["item_id"] == item_id]
    if row.empty:
        return {}
    r = row.iloc[0]
    refs = r.get("references")
    if isinstance(refs, (list, tuple, np.ndarray)):
        refs = "\n---\n".join(map(str, refs))
    return {"output": _s(r.get("output")), "source": _s(r.get("source")), "context": _s(r.get("context")),
            "references": _s(refs)}


def _s(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return str(x)


# ------------------------------------------------------------------------------------------------- Score page


def failures_table(run: Run) -> pd.DataFrame:
    """The judgments (or comparisons) whose reply could not be read, with the raw reply and the reason."""
    if not run.judgments.empty:
        j = run.judgments[run.judgments["status"] != STATUS_OK]
        return j[["item_id", "dimension", "reason", "raw"]].reset_index(drop=True)
    if not run.comparisons.empty:
        c = run.comparisons[run.comparisons["status"] != STATUS_OK]
        return c[["pair_id", "dimension", "order", "reason", "raw"]].reset_index(drop=True)
    return pd.DataFrame(columns=["item_id", "dimension", "reason", "raw"])


# ------------------------------------------------------------------------------------------------------ report


@dataclass
class AnalysisParams:
    dataset_id: str
    run_ids: list[str]
    dimension: str
    level: str = "dataset"
    coefficient: str = "spearman"
    parse: str = "robust"
    n_resamples: int = 1000
    systems: list[str] | None = None


def analysis_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams) -> list:
    """The alignment analysis of the current view as report sections (tables + figures)."""
    from evalcore.report import ReportFigure, ReportSection, ReportTable

    sections = []
    table = alignment_table(dataset, runs, p.dimension, n_resamples=p.n_resamples, systems=p.systems)
    sec = ReportSection(title=f"Correlation with human ratings: {p.dimension}",
                        text=f"Bootstrap 95% CIs over {p.n_resamples} resamples; parse mode {p.parse}. "
                             "n = items (dataset level), documents (summary level) or systems (system level); "
                             "skipped = documents with a constant side (summary level); "
                             "dropped = items whose judge reply could not be parsed.")
    if not table.empty:
        sec.tables.append(ReportTable("Correlations", table))
        sec.figures.append(ReportFigure("Correlation by level", alignment_figure(table, p.coefficient)))
    ceiling = ceiling_table(dataset, p.dimension, level=p.level, coefficient=p.coefficient)
    if not ceiling.empty:
        sec.tables.append(ReportTable(f"Human ceiling ({p.level}, {p.coefficient})", ceiling))
    sections.append(sec)

    dims = [d for d in dataset.dimension_names if any(d in r.dimensions for r in runs)]
    ps = per_system_table(dataset, runs, dims, coefficient=p.coefficient, systems=p.systems)
    if not ps.empty:
        mt = meta_correlation_table(dataset, runs, dims, coefficient=p.coefficient, systems=p.systems)
        s2 = ReportSection(title="Per-system correlations and meta-correlation (003)")
        s2.figures.append(ReportFigure("Per-system correlation", per_system_box(ps, p.coefficient)))
        if not mt.empty:
            s2.tables.append(ReportTable("Meta-correlation M", mt))
            if (ps["dimension"] == p.dimension).any():
                s2.figures.append(ReportFigure("Q_i vs P_i", meta_scatter(ps, mt, p.dimension, p.coefficient)))
        s2.tables.append(ReportTable("Per-system correlation P_i", ps))
        sections.append(s2)
        cp = correct_preferences_table(dataset, runs, dims, systems=p.systems)
        if not cp.empty:
            sections.append(ReportSection(title="Correct preferences #CP (003 4.2.1)",
                                          tables=[ReportTable("#CP", cp)]))
    return sections


def analysis_report(dataset: Dataset, runs: list[Run], p: AnalysisParams) -> str:
    from evalcore.report import render_report

    meta = {"dataset": f"{dataset.name} ({dataset.id})", "runs": ", ".join(run_label(r) for r in runs),
            "dimension": p.dimension, "level": p.level, "coefficient": p.coefficient, "parse mode": p.parse,
            "bootstrap resamples": p.n_resamples}
    if p.systems:
        meta["systems"] = ", ".join(p.systems)
    return render_report(f"LLM-judge workbench: {dataset.name}", analysis_sections(dataset, runs, p), meta=meta)


def paired_summary(res: Any, name_a: str, name_b: str) -> pd.DataFrame:
    """The paired comparison as a one-row table (for display and CSV)."""
    return pd.DataFrame([{
        "run_a": name_a, "run_b": name_b, "level": res.level, "coefficient": res.coefficient,
        "statistic_a": res.statistic_a, "statistic_b": res.statistic_b, "difference": res.difference,
        "ci_low": res.ci_low, "ci_high": res.ci_high, "pvalue": res.pvalue, "n": res.n, "test": res.method,
    }])


# ------------------------------------------------------------------------------------------ prompts and configs


def method_config(method_name: str, dataset: Dataset) -> Any:
    """A method's config for a dataset: the paper's labels ("Article"/"Summary", ...) and, where the paper published
    them for this dataset, its own prompts (evalcore.methods.presets.config_for)."""
    from evalcore.methods import presets

    return presets.config_for(method_name, dataset.id, task=dataset.task, dimensions=dataset.dimension_names)


def rendered_prompt(dataset: Dataset, method_name: str, item_id: str, criteria: Any) -> str:
    """The full text the judge would receive for one item (for a pairwise method: the item first, then another
    output of the same document)."""
    from evalcore.judge import runner
    from evalcore.methods import get_method, render_prompt

    method = get_method(method_name)
    config = method_config(method_name, dataset)
    if method.pairwise:
        doc = dataset.items.loc[dataset.items["item_id"].astype(str) == str(item_id), "doc_id"]
        if doc.empty:
            raise KeyError(f"no item {item_id!r} in {dataset.id}")
        tasks = [t for t in runner.pair_tasks(_subset(dataset, doc_id=doc.iloc[0]), criteria.dimension,
                                              runner.PairSelection())
                 if t.item_first == str(item_id)]
        if not tasks:
            raise ValueError(f"document {doc.iloc[0]!r} has a single output: nothing to compare it with")
        task = tasks[0]
    else:
        task = runner.item_tasks(_subset(dataset, item_id=item_id), criteria.dimension)[0]
    return render_prompt(method, task, criteria, config)


def _subset(dataset: Dataset, *, item_id: str | None = None, doc_id: str | None = None) -> Dataset:
    """The dataset cut down to one item or one document (so task builders do not walk every item)."""
    items = dataset.items
    if item_id is not None:
        items = items[items["item_id"].astype(str) == str(item_id)]
        if items.empty:
            raise KeyError(f"no item {item_id!r} in {dataset.id}")
    if doc_id is not None:
        items = items[items["doc_id"] == doc_id]
    return Dataset(id=dataset.id, name=dataset.name, task=dataset.task, dimensions=dataset.dimensions,
                   documents=dataset.documents[dataset.documents["doc_id"].isin(items["doc_id"])], items=items,
                   human_scores=dataset.human_scores.iloc[0:0])


def scale_guess(raw: pd.DataFrame, value_columns: list[str]) -> tuple[float, float]:
    """The usual rating scale that the numeric values of ``value_columns`` fit in: 1-5, 0-1, 1-3, 1-10, 0-100, else
    the data's own range. Used only to prefill the upload form; the user confirms it."""
    values = pd.concat([pd.to_numeric(raw[c], errors="coerce") for c in value_columns if c in raw.columns]
                       or [pd.Series(dtype=float)]).dropna()
    if values.empty:
        return 1.0, 5.0
    lo, hi = float(values.min()), float(values.max())
    for a, b in ((1, 5), (0, 1), (1, 3), (1, 10), (0, 100)):
        if a <= lo and hi <= b:
            return float(a), float(b)
    return float(np.floor(lo)), float(np.ceil(hi))
