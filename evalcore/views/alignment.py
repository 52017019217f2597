"""Alignment page: correlation with the humans (levels x coefficients, CIs) against the human ceiling, the judge's
score per human score (item level), per-system correlations and the meta-correlation (Shen et al. 2023), #CP,
RTS-MCQ reliability, pairwise agreement by difficulty (Chen et al. 2023)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from evalcore import runs as runs_mod
from evalcore.model import Dataset, Run
from evalcore.views.blocks import Block, Figure, Heading, Metric, Metrics, Note, Table
from evalcore.views.common import frames_for, label_colors, run_label
from evalcore.views.format import cite, esc, fmt, format_pvalue


def alignment_table(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000,
                    systems: list[str] | None = None, ci_resampling: str = "documents",
                    skip_constant: bool = True, levels: tuple[str, ...] | None = None,
                    coefficients: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Correlation of each run with the humans: level x coefficient, with CI, n, skipped and dropped counts.
    ``ci_resampling``: the system level's interval, "documents" or "both" (evalcore.meta.inference).

    ``levels`` / ``coefficients`` restrict the cells computed (default: all), so a page can compute the one cell it
    shows first: on 200,000 items one cell takes seconds, the full table nine times that."""
    from evalcore.meta.correlation import COEFFICIENTS, LEVELS, correlation_table

    from evalcore.meta import fastboot
    from evalcore.meta.correlation import replicate_rows

    labels = {r.run_id: run_label(r) for r in runs}
    frames = frames_for(dataset, runs, dimension, systems=systems)
    levels, coefficients = levels or LEVELS, coefficients or COEFFICIENTS
    # the whole plan declared once, so a progress bar runs from 0 to 1 over every run and cell (boot-both cells
    # resample otherwise and report nothing)
    cells = len(coefficients) * sum(1 for lv in levels if not (lv == "system" and ci_resampling == "both"))
    plan = cells * sum(replicate_rows(n, n_resamples) for n in documents_per_run(frames).values())
    parts = []
    with fastboot.expecting(plan if n_resamples > 0 else 0):
        for run_id, frame in frames.items():
            t = correlation_table(frame, n_resamples=n_resamples, ci_resampling=ci_resampling,
                                  skip_constant=skip_constant, levels=levels, coefficients=coefficients)
            t.insert(0, "run", labels[run_id])
            t.insert(1, "run_id", run_id)
            parts.append(t)
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    keep = ["run", "level", "coefficient", "statistic", "ci_low", "ci_high", "n", "skipped", "dropped", "pvalue",
            "pvalue_method", "ci_resampling", "run_id"]
    if "ci_note" in table.columns and (table["ci_note"].fillna("") != "").any():
        keep.append("ci_note")  # an estimate outside its own interval is said, beside it
    return table[[c for c in keep if c in table.columns]]


def merge_cells(cells: list[pd.DataFrame], runs: list[Run]) -> pd.DataFrame:
    """The table ``alignment_table`` gives for every level and coefficient, from its cells computed one at a time
    (``alignment_table(..., levels=(lv,), coefficients=(co,))``): runs in their order, then level, then coefficient;
    ``ci_note`` kept where any cell has one."""
    from evalcore.meta.correlation import COEFFICIENTS, LEVELS

    parts = [c for c in cells if c is not None and not c.empty]
    if not parts:
        return pd.DataFrame()
    # a summary-level cell's p-values are all None (object), the others' floats: read together as floats again
    t = pd.concat(parts, ignore_index=True).infer_objects()
    order = {r.run_id: i for i, r in enumerate(runs)}
    t = t.assign(_run=t["run_id"].map(order), _level=t["level"].map(LEVELS.index),
                 _coef=t["coefficient"].map(COEFFICIENTS.index))
    t = t.sort_values(["_run", "_level", "_coef"], kind="stable").drop(columns=["_run", "_level", "_coef"])
    if "ci_note" in t.columns:
        t["ci_note"] = t["ci_note"].fillna("")
        if not (t["ci_note"] != "").any():
            t = t.drop(columns="ci_note")
    return t.reset_index(drop=True)


def documents_per_run(frames: dict[str, pd.DataFrame]) -> dict[str, int]:
    """Documents each run's correlations resample (those with a parsed judge value): what sets the jackknife's
    replicates, hence the rows a progress bar counts."""
    return {run_id: int(f.loc[f["judge"].notna(), "doc_id"].nunique()) for run_id, f in frames.items()}


def cell_rows(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int,
              systems: list[str] | None = None) -> int:
    """Replicate rows of one cell (level x coefficient, documents resampled) of ``alignment_table`` over the runs."""
    from evalcore.meta.correlation import replicate_rows

    if n_resamples <= 0:
        return 0
    frames = frames_for(dataset, runs, dimension, systems=systems)
    return sum(replicate_rows(n, n_resamples) for n in documents_per_run(frames).values())


def support_notes(dataset: Dataset, runs: list[Run], dimension: str, *, systems: list[str] | None = None
                  ) -> list[str]:
    """One sentence per run whose figures rest on few documents (fewer than 10: unreliable; fewer than 100: too
    narrow, as simulated) or fewer than 5 systems (evalcore.meta.inference.support_warnings)."""
    from evalcore.meta.inference import Support, support_warnings

    labels = {r.run_id: run_label(r) for r in runs}
    notes = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        scored = frame[frame["judge"].notna()]
        for w in support_warnings(Support(int(scored["doc_id"].nunique()), int(scored["system_id"].nunique()))):
            notes.append(f"{labels[run_id]}: {w}")
    return notes


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


def filter_correlations(table: pd.DataFrame, *, level: str | None = None, coefficient: str | None = None
                        ) -> pd.DataFrame:
    """The rows of ``alignment_table`` for the page's Level and Coefficient selectors (None keeps every value)."""
    if table.empty:
        return table
    keep = pd.Series(True, index=table.index)
    if level is not None:
        keep &= table["level"] == level
    if coefficient is not None:
        keep &= table["coefficient"] == coefficient
    return table[keep].reset_index(drop=True)


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
            hovertemplate=f"{run}<br>{coefficient} %{{x:.3f}} [{row.ci_low:.3f}, {row.ci_high:.3f}]<extra></extra>",
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


def ceiling_means(ceiling: pd.DataFrame | None) -> pd.DataFrame:
    """The "mean" rows of ``run_ceilings`` (one per run: the ceiling on that run's items, with its interval)."""
    if ceiling is None or ceiling.empty or "run" not in ceiling.columns:
        return pd.DataFrame(columns=["run", "statistic", "ci_low", "ci_high"])
    return ceiling[ceiling["annotator"] == "mean"].reset_index(drop=True)


def ceiling_note(table: pd.DataFrame, ceiling: pd.DataFrame | None, *, level: str, coefficient: str) -> str:
    """What the human ceiling is where two annotators rated the items, and why a judge can exceed it: each annotator
    "against the mean of the others" is then one annotator against the other, while the judge is correlated with the
    mean of both, whose averaging removes part of each one's noise (a mean of k raters is more reliable than one:
    the Spearman-Brown formula). Runs above their ceiling are named. "" where no ceiling rests on two annotators."""
    means = ceiling_means(ceiling)
    if means.empty:
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


def _num(x) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def ceiling_group(dataset: Dataset, dimension: str):
    """The annotator group the ceiling is computed in ("expert" where there is one), or None when fewer than two
    annotators rated this dimension."""
    ann = dataset.annotations
    if ann.empty or not (ann["dimension"] == dimension).any():
        return None
    groups = list(ann.loc[ann["dimension"] == dimension, "group"].dropna().unique())
    group = "expert" if "expert" in groups else (groups[0] if groups else None)
    sub = ann[(ann["dimension"] == dimension) & (ann["group"] == group)] if group is not None else ann
    if sub["annotator"].nunique() < 2:
        return None
    return group


def ceiling_table(dataset: Dataset, dimension: str, *, level: str, coefficient: str, item_ids=None,
                  n_resamples: int = 0, skip_constant: bool = True, random_state=0) -> pd.DataFrame:
    """Each expert against the mean of the others (the human ceiling), at the same level and coefficient, on
    ``item_ids`` (None: every rated item); ``random_state`` seeds its resamples and permutation p-values."""
    from evalcore.meta.agreement import human_ceiling

    group = ceiling_group(dataset, dimension)
    if group is None:
        return pd.DataFrame()
    t = human_ceiling(dataset.annotations, dataset.items, dimension, group=group, level=level,
                      coefficient=coefficient, item_ids=item_ids, n_resamples=n_resamples,
                      skip_constant=skip_constant, random_state=random_state)
    t = t.copy()
    t.insert(0, "group", group)
    return t


def correlated_items(frame: pd.DataFrame, *, level: str, skip_constant: bool = True) -> pd.Series:
    """The item ids a run's correlation at ``level`` is computed on: its parsed items, and at the summary level with
    constant documents skipped, only the documents where its per-document correlation is defined (the human
    ceiling is then computed on the same documents: issue 18.1)."""
    scored = frame[frame["judge"].notna()]
    if level == "summary" and skip_constant and not scored.empty:
        g = scored.groupby("doc_id")
        defined = (g["judge"].nunique() > 1) & (g["human"].nunique() > 1)
        scored = scored[scored["doc_id"].isin(defined[defined].index)]
    return scored["item_id"]


def run_ceilings(dataset: Dataset, runs: list[Run], dimension: str, *, level: str, coefficient: str,
                 systems: list[str] | None = None, n_resamples: int = 0, skip_constant: bool = True
                 ) -> pd.DataFrame:
    """The human ceiling on exactly the items each run is correlated on (its scored items, in the selected
    systems): one block of rows (each expert, then their mean) per run, with a ``run`` column."""
    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        items = correlated_items(frame, level=level, skip_constant=skip_constant)
        t = ceiling_table(dataset, dimension, level=level, coefficient=coefficient, item_ids=items,
                          n_resamples=n_resamples, skip_constant=skip_constant)
        if t.empty:
            continue
        t.insert(0, "run", labels[run_id])
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


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
            t["note"] = [_undefined_p_i(frame, sid) if not ok else "" for sid, ok in zip(t["system_id"], t["defined"])]
            parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _undefined_p_i(frame: pd.DataFrame, system_id) -> str:
    """Why P_i is undefined for a system: too few scored items, or one side constant."""
    g = frame[(frame["system_id"] == system_id) & frame["judge"].notna()]
    if len(g) < 2:
        return f"n/a: {len(g)} scored item(s)"
    if g["judge"].nunique() < 2:
        return "n/a: the judge gave every item the same score"
    if g["human"].nunique() < 2:
        return "n/a: the humans gave every item the same score"
    return "n/a: undefined"


def per_system_box(table: pd.DataFrame, coefficient: str, colors: dict[str, str] | None = None) -> go.Figure:
    """Shen et al. 2023 Fig. 1: the spread of per-system correlations in each dimension (a box per run and
    dimension)."""
    from evalcore.views.format import cite

    fig = px.box(table, x="dimension", y="correlation", color="run", points="all", color_discrete_map=colors or {},
                 hover_data=["system_id"] if "system_id" in table.columns else None,
                 title=f"Per-system {coefficient} correlation ({cite('003', 'Fig. 1')})")
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
                         "n_systems": r.n_systems, "dropped_systems": ", ".join(map(str, r.dropped_systems)),
                         "note": _undefined_m(r) if pd.isna(r.statistic) else ""})
    return pd.DataFrame(rows)


def _undefined_m(r) -> str:
    """Why M (a correlation over systems of Q_i and P_i) is undefined."""
    t = r.table[r.table["defined"]]
    if len(t) < 3:
        return f"n/a: P_i is defined for {len(t)} system(s), fewer than 3"
    if t["correlation"].nunique() < 2:
        return "n/a: M undefined, all P_i are equal"
    if t["quality"].nunique() < 2:
        return "n/a: M undefined, all Q_i are equal"
    return "n/a: undefined"


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


def difficulty_table(dataset: Dataset, runs: list[Run], dimension: str, *, systems: list[str] | None = None,
                     n_resamples: int = 1000) -> pd.DataFrame:
    """002's pairwise tau by difficulty bucket (hard/medium/easy by the human score gap) for each run, with its 95%
    interval over documents (tau_ci_low, tau_ci_high)."""
    from evalcore.meta.pairwise import pairwise_kendall_by_difficulty

    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        t = pairwise_kendall_by_difficulty(frame, n_resamples=n_resamples).copy()
        t.insert(0, "run", labels[run_id])
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


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


def human_score_bins(human: pd.Series, *, scale: tuple[float, float] | None = None, max_values: int = 7,
                     max_bins: int = 8) -> pd.Series:
    """The human score as box-plot categories.

    Up to ``max_values`` distinct scores (integer ratings; 1-3 means of 3 annotators) are each their own category.
    More (SummEval's 1-5 means of 3 experts take 13 values) are binned: on whole numbers when the scale spans 3 to
    ``max_bins`` units ("[1, 2)", ..., "[4, 5]"), else in ``max_bins`` equal-width bins; the last bin is closed."""
    h = pd.to_numeric(human, errors="coerce")
    values = np.sort(h.dropna().unique())
    if len(values) <= max_values:
        return h.map(lambda v: "" if pd.isna(v) else f"{v:.3g}")
    lo, hi = float(values[0]), float(values[-1])
    if scale is not None:
        lo, hi = min(lo, float(scale[0])), max(hi, float(scale[1]))
    if 3 <= hi - lo <= max_bins and float(lo).is_integer() and float(hi).is_integer():
        edges = np.arange(lo, hi + 1)
    else:
        edges = np.linspace(lo, hi, max_bins + 1)
    idx = np.clip(np.searchsorted(edges, h.to_numpy(), side="right") - 1, 0, len(edges) - 2)
    labels = [f"[{edges[i]:.3g}, {edges[i + 1]:.3g}{']' if i == len(edges) - 2 else ')'}"
              for i in range(len(edges) - 1)]
    return pd.Series([labels[i] if pd.notna(v) else "" for i, v in zip(idx, h)], index=h.index)


def judge_by_human_table(dataset: Dataset, runs: list[Run], dimension: str, *, systems: list[str] | None = None
                         ) -> pd.DataFrame:
    """Item-level judge and human scores of each run on one dimension, with the human score's bin (``human_bin``,
    ordered by ``bin_order``). Items whose reply could not be parsed are left out (counted on the Score page)."""
    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        f = frame.dropna(subset=["judge", "human"])[["item_id", "system_id", "judge", "human"]].copy()
        f.insert(0, "run", labels[run_id])
        parts.append(f)
    if not parts:
        return pd.DataFrame(columns=["run", "item_id", "system_id", "judge", "human", "human_bin", "bin_order"])
    t = pd.concat(parts, ignore_index=True)
    dim = next((d for d in dataset.dimensions if d.name == dimension), None)
    t["human_bin"] = human_score_bins(t["human"], scale=(dim.scale_min, dim.scale_max) if dim else None)
    order = t.groupby("human_bin")["human"].min().sort_values()
    t["bin_order"] = t["human_bin"].map({b: i for i, b in enumerate(order.index)})
    return t.sort_values("bin_order", kind="stable").reset_index(drop=True)  # runs in the order selected


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


def confusion_figure(report, run: str) -> go.Figure:
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


def scored_dimensions(dataset: Dataset, runs: list[Run]) -> tuple[str, ...]:
    """The dataset's dimensions some run scored, in the dataset's order."""
    return tuple(d for d in dataset.dimension_names if any(d in r.dimensions for r in runs))


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
    return bool(runs) and dataset.dimension(dimension).kind != "nominal"


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
              "others, on exactly the items (and systems) the run is correlated on", "markdown")])


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
                 "on that run's own items, and its 95% CI.", "caption")]


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


def reliability_intervals(table: pd.DataFrame, coefficient: str, n_resamples: int) -> dict:
    """corr(R_i, P_i) of RTS and MCQ with its 95% interval over systems (evalcore.meta.across_systems)."""
    from evalcore.meta.across_systems import across_systems_interval

    return {side: across_systems_interval(table["reliability"], table[f"p_{side}"], coefficient=coefficient,
                                          n_resamples=n_resamples) for side in ("rts", "mcq")}


@dataclass
class ReliabilityBlocks:
    """The two headline figures side by side (``columns``), then the rest."""

    columns: list[list[Block]]
    rest: list[Block]


def reliability_blocks(rel, table: pd.DataFrame, intervals: dict, dimension: str, *, coefficient: str,
                       n_resamples: int, filtered: bool) -> ReliabilityBlocks:
    """``reliability_view``'s result over ``table`` (its rows for the chosen systems; ``filtered``: some were
    chosen, so the p-value over every system is not shown) with ``reliability_intervals``."""
    columns = []
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
