"""The Jury page: several judges side by side (the agreement matrix with the humans as a row), a jury made from
them (evalcore.jury), the jury against the best single judge with the Compare page's paired test, and each judge's
cost from its recorded usage with the cost-agreement Pareto front."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from evalcore import jury as jury_mod
from evalcore import runs as runs_mod
from evalcore.meta import correlate
from evalcore.meta.results import Estimate
from evalcore.model import Dataset, Run
from evalcore.views import compare as compare_views
from evalcore.views.blocks import Block, Figure, Heading, Note, Table
from evalcore.views.common import run_names
from evalcore.views.format import esc, fmt

if TYPE_CHECKING:  # plotly loads where the figure is drawn
    import plotly.graph_objects as go

HUMANS = "humans"
AGGREGATE_HELP = {"mean": "the mean of the judges' scores", "median": "their median",
                  "trimmed": "the mean without the highest and the lowest score",
                  "majority": "the commonest score (a vote), ties broken by the rule chosen"}
TIE_HELP = {"low": "the lowest tied score", "high": "the highest tied score",
            "first": "the tied score of the first judge in the list"}


def candidates(runs: list[Run], dimension: str) -> list[Run]:
    """Runs with per-item judgments on ``dimension`` (a jury aggregates scores, not pairwise verdicts)."""
    return [r for r in runs if not r.judgments.empty and dimension in r.dimensions]


def matrix_figure(names: list[str], matrix: list[list[Estimate]], humans: list[Estimate], coefficient: str
                  ) -> go.Figure:
    """The judge-by-judge agreement matrix with the humans as the last row and column (a plotly heatmap)."""
    import plotly.graph_objects as go

    labels = names + [HUMANS]
    z = [[e.statistic for e in row] + [h.statistic] for row, h in zip(matrix, humans)]
    z.append([h.statistic for h in humans] + [1.0])
    text = [[fmt(v, 2) for v in row] for row in z]
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels, text=text, texttemplate="%{text}", zmin=-1, zmax=1,
                               colorscale="RdBu", colorbar={"title": coefficient}))
    fig.update_layout(height=120 + 60 * len(labels), margin={"t": 30}, yaxis={"autorange": "reversed"})
    return fig


def correlation_rows(dataset: Dataset, runs: list[Run], dimension: str, *, coefficient: str,
                     n_resamples: int) -> pd.DataFrame:
    """Each run's correlation with the human score (dataset level) with its 95% interval, best first."""
    names = run_names(runs)
    rows = []
    for r in runs:
        e = correlate(runs_mod.score_frame(dataset, r, dimension), coefficient=coefficient, n_resamples=n_resamples)
        rows.append({"run": names[r.run_id], "run_id": r.run_id, coefficient: e.statistic, "ci_low": e.ci_low,
                     "ci_high": e.ci_high, "items": e.n, "jury": r.method == jury_mod.METHOD})
    t = pd.DataFrame(rows)
    return t.sort_values(coefficient, ascending=False, kind="stable", na_position="last", ignore_index=True)


def best_single(table: pd.DataFrame, coefficient: str) -> str | None:
    """The run id of the best judge that is not a jury (None when there is none)."""
    singles = table[~table["jury"] & table[coefficient].notna()]
    return None if singles.empty else str(singles.iloc[0]["run_id"])


def run_cost(run: Run) -> float | None:
    """What the run cost from its recorded usage (tokens x the price table), None when it recorded none (a
    published run's authors released no usage)."""
    from evalcore.judge.cost import cost_usd, price_for

    st = run.config.stats
    tokens = (st.prompt_tokens or 0) + (st.completion_tokens or 0)
    if tokens == 0 or price_for(run.model) is None:
        return None
    cost = cost_usd(st.prompt_tokens, st.completion_tokens, model=run.model)
    return None if cost is None else float(cost)


def cost_table(table: pd.DataFrame, runs: dict[str, Run], coefficient: str) -> pd.DataFrame:
    """Each run's cost beside its agreement, a jury's cost being its members' sum; ``pareto`` marks the runs no
    other run beats on both (cheaper or as cheap, and agreeing better or as well)."""
    def cost_of(rid: str) -> float | None:
        r = runs[rid]
        if r.method == jury_mod.METHOD:
            parts = [cost_of(m) if m in runs else None for m in r.config["jury"]["members"]]
            known = [p for p in parts if p is not None]
            return None if len(known) < len(parts) else float(sum(known))
        return run_cost(r)

    t = table[["run", "run_id", coefficient]].copy()
    t["cost_usd"] = [cost_of(r) for r in t["run_id"]]
    known = t.dropna(subset=["cost_usd", coefficient])
    t["pareto"] = [(not math.isnan(c) if isinstance(c, float) else False) and not any(
        (o["cost_usd"] <= c and o[coefficient] >= a) and (o["cost_usd"] < c or o[coefficient] > a)
        for _, o in known.iterrows()) for c, a in zip(t["cost_usd"].astype(float), t[coefficient])]
    return t


def cost_figure(t: pd.DataFrame, coefficient: str):
    import plotly.graph_objects as go

    k = t.dropna(subset=["cost_usd"])
    front = k[k["pareto"]].sort_values("cost_usd")
    fig = go.Figure(go.Scatter(x=k["cost_usd"], y=k[coefficient], text=k["run"], mode="markers+text",
                               textposition="top center", name="runs"))
    fig.add_trace(go.Scatter(x=front["cost_usd"], y=front[coefficient], mode="lines", name="Pareto front"))
    fig.update_layout(xaxis_title="cost (USD, recorded usage)", yaxis_title=f"{coefficient} with the humans",
                      height=380, margin={"t": 30})
    return fig


def cost_blocks(t: pd.DataFrame, coefficient: str, sources: dict[str, str] | None = None) -> list[Block]:
    """The cost-agreement chart and table; ``sources``: where the prices of the runs' models come from
    (``price_sources``)."""
    out: list[Block] = [Heading("Cost and agreement", 3)]
    missing = t[t["cost_usd"].isna()]["run"].tolist()
    if missing:
        out.append(Note("No recorded usage or no known price (so no cost) for: " + esc(", ".join(missing)) + ". A "
                        "published run has usage only where its authors released token counts; runs scored here "
                        "record theirs.", "info"))
    if t["cost_usd"].notna().sum() >= 1:
        out.append(Figure(cost_figure(t, coefficient), "jury_cost"))
    out.append(Table(t.drop(columns=["run_id"]), "cost and agreement", "jury_cost_table", static=True))
    if sources:
        out.append(Note("Cost: each run's whole recorded usage (every dimension it scored) at the price table's "
                        "prices (editable: $EVALCORE_PRICES). " + " ".join(esc(f"{m}: {s}.") for m, s in
                                                                         sorted(sources.items())), "caption"))
    return out


def price_sources(runs: dict[str, Run]) -> dict[str, str]:
    """Model -> where its built-in price comes from, for the runs' models that have such a note (retired snapshots
    priced at their dated list price)."""
    from evalcore.judge.cost import PRICE_SOURCES

    return {r.model: PRICE_SOURCES[r.model] for r in runs.values() if r.model in PRICE_SOURCES}


def versus_best_blocks(dataset: Dataset, jury_run: Run, best: Run, dimension: str, *, coefficient: str,
                       n_resamples: int) -> list[Block]:
    """The jury against the best single judge: the Compare page's paired test on the same items."""
    names = run_names([jury_run, best])
    res = compare_views.paired_comparison(dataset, jury_run, best, dimension, level="dataset",
                                          coefficient=coefficient, n_resamples=n_resamples)
    return [Heading(f"The jury against the best single judge ({esc(names[best.run_id])})", 3),
            compare_views.headline(res, "bootstrap"),
            *compare_views.result_blocks(res, names[jury_run.run_id], names[best.run_id], dimension)]


def agreement_blocks(names: list[str], matrix: list[list[Estimate]], humans: list[Estimate], coefficient: str
                     ) -> list[Block]:
    rows = [{"run": n, **{m: e.statistic for m, e in zip(names, row)}, HUMANS: h.statistic,
             f"{HUMANS} 95% CI": f"[{fmt(h.ci_low)}, {fmt(h.ci_high)}]"}
            for n, row, h in zip(names, matrix, humans)]
    return [Heading("How the judges agree with each other and with the humans", 3),
            Figure(matrix_figure(names, matrix, humans, coefficient), "jury_matrix"),
            Table(pd.DataFrame(rows), "agreement matrix", "jury_matrix_table", static=True),
            Note("To rate the items two of these judges disagree on most, pick the Label page's order \"judge least "
                 "certain\" from two runs disagreeing.", "info")]
