"""The Alignment page's reliability section: how much the judge agrees with itself across its draws, and what that
does to its agreement with the humans (evalcore.meta.draw_reliability; ``meta --reliability`` on the command line
computes the same report)."""

from __future__ import annotations

import pandas as pd

from evalcore import runs as runs_mod
from evalcore.meta.draw_reliability import ReliabilityReport, reliability_report
from evalcore.meta.results import Estimate
from evalcore.model import Dataset, Run
from evalcore.views.blocks import Block, Figure, Heading, Metric, Metrics, Note, Table, Text
from evalcore.views.format import esc, fmt

TITLE = "How much would the figure move on a rerun? The judge's draws"
UNSTABLE_SHOWN = 15


def drawn_runs(runs: list[Run], dimension: str) -> list[Run]:
    """The runs with per-item judgments on ``dimension``, those with several draws first."""
    scored = [r for r in runs if not r.judgments.empty and dimension in r.dimensions]
    return sorted(scored, key=lambda r: r.n_draws == 1)


def report(dataset: Dataset, run: Run, dimension: str, *, level: str, coefficient: str,
           n_resamples: int) -> ReliabilityReport:
    frame = runs_mod.score_frame(dataset, run, dimension)
    return reliability_report(run.draw_scores(dimension), frame, level=level, coefficient=coefficient,
                              n_resamples=n_resamples,
                              level_of_measurement=dataset.dimension(dimension).alpha_level)


def _ci(e: Estimate) -> str:
    return f"95% CI [{fmt(e.ci_low)}, {fmt(e.ci_high)}]"


def headline(rep: ReliabilityReport) -> Metrics:
    return Metrics((
        Metric("Draws per item", str(rep.draws), help=f"{rep.items:,} items"),
        Metric("ICC(1,1): one draw", fmt(rep.icc1.statistic, 2), help=_ci(rep.icc1) + ", F distribution"),
        Metric(f"ICC(1,{rep.draws}): mean of draws", fmt(rep.icc1k.statistic, 2), help=_ci(rep.icc1k)),
        Metric("Draw pairs that differ", f"{rep.disagreement:.0%}" if rep.disagreement == rep.disagreement
               else "n/a", help="share of pairs of draws of the same item that give different scores"),
        Metric(f"Draws for reliability {rep.target}", str(rep.draws_needed) if rep.draws_needed else "n/a",
               help="Spearman-Brown: the fewest draws whose mean reaches that reliability"),
    ))


def agreement_table(rep: ReliabilityReport, coefficient: str) -> pd.DataFrame:
    s = rep.single_draw_summary()
    m = rep.mean_of_draws
    return pd.DataFrame([
        {"what": "one draw (min over the draws)", coefficient: s["min"], "95% CI": ""},
        {"what": "one draw (median)", coefficient: s["median"], "95% CI": ""},
        {"what": "one draw (max)", coefficient: s["max"], "95% CI": ""},
        {"what": f"mean of {rep.draws} draws", coefficient: m.statistic,
         "95% CI": f"[{fmt(m.ci_low)}, {fmt(m.ci_high)}] ({m.resampling or 'no interval'})"},
    ])


def projection_figure(rep: ReliabilityReport, coefficient: str):
    """Expected correlation with the humans by number of draws (Spearman-Brown and the correction for attenuation),
    with the draws actually observed: the single draws and their mean."""
    import plotly.graph_objects as go

    m = list(rep.projected)
    fig = go.Figure(go.Scatter(x=m, y=[rep.projected[k] for k in m], mode="lines+markers",
                               name="projected (Spearman-Brown)"))
    fig.add_trace(go.Scatter(x=[1] * len(rep.single_draw), y=list(rep.single_draw), mode="markers",
                             name="each single draw", marker={"symbol": "x"}))
    fig.add_trace(go.Scatter(x=[rep.draws], y=[rep.mean_of_draws.statistic], mode="markers",
                             name=f"mean of the {rep.draws} draws", marker={"size": 12}))
    fig.update_layout(xaxis_title="draws averaged per item", yaxis_title=f"{coefficient} with the humans",
                      height=360, margin={"t": 30})
    return fig


def unstable_table(dataset: Dataset, rep: ReliabilityReport) -> pd.DataFrame:
    t = rep.spread.head(UNSTABLE_SHOWN).merge(dataset.items[["item_id", "system_id"]], on="item_id", how="left")
    return t[["item_id", "system_id", "draws", "mean", "sd", "range", "distinct"]]


SECOND_DRAW_DOCUMENTS = 10  # documents a second draw is offered on: 2 x their items, a small part of most runs


def one_draw_of_a_sampler(dataset: Dataset, run: Run, dimension: str) -> list[Block]:
    """What a one-draw run of a judge that samples owes its reader: its figure rests on one draw, its interval
    resamples documents only, and a command that measures the noise (a second draw of a few documents); [] for a
    greedy judge or a run with several draws."""
    from evalcore.judge import resume

    why = resume.sampling_reason(run)
    if why is None or run.n_draws > 1:
        return []
    n_docs = min(SECOND_DRAW_DOCUMENTS, int(dataset.items["doc_id"].nunique()))
    out: list[Block] = [Note(
        f"This figure rests on one draw of a judge that samples ({esc(why)}): another draw would give other "
        "scores, and the correlation's interval, which resamples documents only, leaves out the judge's own "
        "noise. Two draws of a few documents measure it (their reliability, and how far one draw's figure "
        "moves).", "warning")]
    args = resume.second_draw_args(run, dimension, documents=n_docs)
    if args is not None:
        out += [Text(f"Two draws of {n_docs} documents (a new run; its estimate first: add --estimate-only)",
                     resume.shell_line(args), key=f"second_draw_{dimension}")]
    return out


def one_draw_samplers_note(runs: list[Run], names: dict[str, str], dimension: str) -> Note | None:
    """One line, shown above the reliability section whether or not it is open: the selected runs that drew a
    sampling judge once on ``dimension`` (None when there are none)."""
    from evalcore.judge import resume

    once = [r for r in runs if dimension in r.dimensions and r.n_draws == 1 and resume.sampling_reason(r)]
    if not once:
        return None
    who = ", ".join(names.get(r.run_id, r.run_id) for r in once)
    return Note(f"{esc(who)}: one draw of a judge that samples, so the figure above would move on another draw and "
                "its interval leaves that out. The section below says how to measure it (a second draw of a few "
                "documents).", "warning")


def blocks(dataset: Dataset, run_label: str, dimension: str, rep: ReliabilityReport, *,
           coefficient: str, run: Run | None = None) -> list[Block]:
    """The section for one run and dimension (``run``: the run itself, to say what a one-draw run of a judge
    that samples leaves unmeasured)."""
    out: list[Block] = [Heading(f"{esc(run_label)} on {esc(dimension)}", 3)]
    sampler = one_draw_of_a_sampler(dataset, run, dimension) if run is not None else []
    if sampler:
        return out + sampler
    if rep.draws < 2:
        return out + [Note("This run drew the judge once per item, so its own noise is not measured: how far the "
                           "figure would move on another draw, and how much averaging draws would lift it, are "
                           "unknown. Score a few documents again with more draws to measure it.", "info")]
    out += [headline(rep),
            Table(agreement_table(rep, coefficient), f"draws vs humans {dimension}", "rel_agreement", static=True),
            Figure(projection_figure(rep, coefficient), "rel_projection"),
            Note(esc("; ".join(rep.notes)) + ".", "info"),
            Heading("The items whose draws disagree most", 3),
            Note("The Label page's order \"judge least certain\", with this run as its G-Eval source, offers "
                 "these items for rating first.", "info"),
            Table(unstable_table(dataset, rep), f"unstable items {dimension}", "rel_unstable")]
    return out
