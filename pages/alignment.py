"""Alignment: how far each judge run agrees with the humans (correlations, per-system view, #CP, reliability)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import streamlit as st

from evalcore import views
from evalcore.views import alignment as av
from evalcore.views import common as common_views
from evalcore.views import history as history_views
from evalcore.views import preference as preference_views
from pages import _compute as compute
from pages import _render as render
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset
st.title("Alignment")
render.blocks([av.page_caption(ctx.dimension, ctx.parse, ctx.n_resamples)])

pairwise_only = av.pairwise_only(ds)
if pairwise_only:
    level, coefficient, systems = views.LEVELS[0], views.COEFFICIENTS[1], []
    render.blocks([av.PAIRWISE_ONLY_NOTE])
else:
    c1, c2, c3 = st.columns([1, 1, 2])
    level = c1.selectbox("Level", list(views.LEVELS), key=url.key("level", views.LEVELS[0], options=views.LEVELS),
                         help="dataset: all items pooled; summary: per document, averaged; system: per-system means")
    coefficient = c2.selectbox("Coefficient", list(views.COEFFICIENTS), help="Kendall is tau-b",
                               key=url.key("coefficient", views.COEFFICIENTS[1], options=views.COEFFICIENTS))
    systems = c3.multiselect("Systems (empty = all)", ds.systems, key=url.key("systems", [], options=ds.systems),
                             help="Restrict every statistic on this page to these systems")
sys_t = tuple(systems) if systems else None
ci_resampling, summary_constant = "documents", "skip"
if level == "system":
    ci_resampling = st.radio("System-level interval resamples", list(av.CI_RESAMPLING_LABELS), horizontal=True,
                             key=url.key("ci_resampling", "documents", options=tuple(av.CI_RESAMPLING_LABELS)),
                             format_func=av.CI_RESAMPLING_LABELS.get, help=av.ci_resampling_help())
    render.blocks([av.ci_resampling_note(ci_resampling)])
if level == "summary":
    summary_constant = st.radio("Documents where one side is constant", list(av.SUMMARY_CONSTANT_LABELS),
                                horizontal=True, format_func=av.SUMMARY_CONSTANT_LABELS.get,
                                key=url.key("summary_constant", "skip", options=tuple(av.SUMMARY_CONSTANT_LABELS)),
                                help=av.SUMMARY_CONSTANT_HELP)
skip_constant = summary_constant == "skip"

runs = ctx.item_runs
run_ids = tuple(r.run_id for r in runs)
dims = av.scored_dimensions(ds, runs)

if not ui.need_runs(runs + ctx.pairwise_runs, "per-item scores or pairwise verdicts"):
    render.blocks(av.annotators_blocks(ds))  # the humans' own agreement needs no judge: shown before one is chosen
    st.stop()
colors = av.page_colors(ctx.all_runs, ctx.runs)  # one colour per run on every chart (and in the report)


class _Section(contextlib.nullcontext):
    """A section drawn without a tab (``open``: whether it is drawn at all)."""

    def __init__(self, open_: bool) -> None:
        super().__init__()
        self.open = open_


# Each section runs only when its tab is open (st.tabs with on_change="rerun"): drawing every chart at once made the
# page slow to appear in the browser. The open tab is part of the view, so it lives in the URL like the rest.
if pairwise_only:
    tab_of = {name: _Section(name == "Pairwise preferences") for name in av.SECTIONS}
else:
    tab_of = dict(zip(av.SECTIONS, st.tabs(list(av.SECTIONS), on_change="rerun", key=url.key(
        "section", av.default_section(ds), options=list(av.SECTIONS)))))


def label_agreement_section(v: _View) -> None:
    """Binary / nominal / ordinal dimension: kappa & co with CIs, the confusion matrix, calibration."""
    ctx, ds, run_ids, runs, sys_t = (v.ctx, v.ds, v.run_ids, v.runs, v.sys_t)
    heading = av.label_agreement_heading(ds, ctx.dimension, runs)
    if heading is None:
        return
    render.blocks([heading])
    with st.spinner("Kappa, confusion matrices and calibration with bootstrap CIs…"):
        view = compute.label_agreement_view(ds.id, run_ids, ctx.dimension, ctx.parse, ctx.n_resamples, sys_t)
    render.blocks(view.top)
    if view.confusion:
        names = list(view.confusion)
        picked = (st.selectbox("Confusion matrix of", names, key=url.key("confusion_run", names[0], options=names))
                  if len(names) > 1 else names[0])
        render.blocks([view.confusion[picked]] + view.bottom)


def correlations_section(v: _View):
    """The cell on show of the correlation table, the human ceiling and the headline chart above them; the
    placeholder where the other cells' progress goes (None: no table)."""
    ctx, ds, runs, run_ids, sys_t, colors = v.ctx, v.ds, v.runs, v.run_ids, v.sys_t, v.colors
    level, coefficient, ci_resampling, skip_constant = v.level, v.coefficient, v.ci_resampling, v.skip_constant
    label_agreement_section(v)
    render.blocks(av.correlations_intro(ds, ctx.dimension, runs))
    if not av.has_correlations(ds, ctx.dimension, runs):
        return None
    # The headline chart sits above the table but is sent after it, and drawn with Vega-Lite, not plotly: plotly's
    # 4.7 MB script, parsed on the page's first chart, held the table back by seconds (bench/bench_app_ready.py
    # times the table; see evalcore.views.alignment.headline_spec).
    headline = st.container()
    # Only the cell on show (level x coefficient) is computed: one ninth of the full table, which matters on a large
    # dataset; each cell is cached for every session, so switching back costs nothing. On a large study the cell
    # takes seconds: a progress bar and a Stop button (issue 19).
    cell = (ds.id, run_ids, ctx.dimension, ctx.parse, ctx.n_resamples, sys_t, level, coefficient, ci_resampling,
            skip_constant)
    table = compute.long_work(f"{level}-level {coefficient} correlations with {ctx.n_resamples} bootstrap resamples",
                              compute.work_key("alignment", *cell), lambda: compute.alignment_cell(*cell))
    render.blocks(av.support_blocks(compute.support_notes(ds.id, run_ids, ctx.dimension, ctx.parse, sys_t)))
    if table is None:  # stopped: long_work said so, with a button to compute it after all
        return None
    view = av.correlations_view(table, ctx.dimension, level=level, coefficient=coefficient)
    render.blocks(view.table)
    if table.empty:
        return None
    status = st.empty()  # the other cells' progress, filled at the end of the page
    render.blocks(view.notes)
    with st.spinner("Human ceiling with bootstrap intervals…"):
        ceil = compute.ceiling(ds.id, run_ids, ctx.dimension, level, coefficient, ctx.parse, ctx.n_resamples, sys_t,
                               skip_constant)
    render.blocks(av.ceiling_blocks(table, ceil, ctx.dimension, level=level, coefficient=coefficient))
    with headline:
        st.vega_lite_chart(av.headline_spec(table, ceil, level=level, coefficient=coefficient, colors=colors),
                           key="chart_headline", width="stretch")
        render.blocks(av.headline_notes(ceil))
    history_section(v)
    return status


def history_section(v: _View) -> None:
    """A judge's agreement over time: its runs by date at the level and coefficient on show (evalcore.views.history),
    computed only when asked (each run's cell is the headline's, cached)."""
    found = history_views.judges(v.ctx.all_runs)
    render.blocks(history_views.intro(found))
    if not found or not st.toggle("Show a judge's runs by date", key=url.key("history", False)):
        return
    names = list(found)
    judge = (st.selectbox("Judge", names, key=url.key("history_judge", names[0], options=names))
             if len(names) > 1 else names[0])
    runs = found[judge]
    with st.spinner("The judge's correlation on each of its runs…"):
        table = compute.alignment_cell(v.ds.id, tuple(r.run_id for r in runs), v.ctx.dimension, v.ctx.parse,
                                       v.ctx.n_resamples, v.sys_t, v.level, v.coefficient, v.ci_resampling,
                                       v.skip_constant)
    render.blocks(history_views.history_blocks(history_views.history_frame(runs, table), runs, judge=judge,
                                               level=v.level, coefficient=v.coefficient))


def judge_by_human_section(v: _View) -> None:
    colors, ctx, ds, run_ids, runs, sys_t = (v.colors, v.ctx, v.ds, v.run_ids, v.runs, v.sys_t)
    render.blocks([av.JUDGE_BY_HUMAN_HEADING] + ([] if runs else [av.PAIRWISE_RUNS_NOTE]))
    if runs:
        with st.spinner("Item scores…"):
            items = compute.judge_by_human(ds.id, run_ids, ctx.dimension, ctx.parse, sys_t)
        points = not items.empty and st.toggle("Every item as a jittered dot", key=url.key("items_points", False))
        render.blocks(av.judge_by_human_blocks(items, ctx.dimension, points=points, colors=colors))


def per_system_section(v: _View) -> None:
    ctx, ds, runs, run_ids, sys_t, colors = v.ctx, v.ds, v.runs, v.run_ids, v.sys_t, v.colors
    coefficient, dims = v.coefficient, v.dims
    if av.per_system_applies(ds, runs):
        render.blocks([av.PER_SYSTEM_HEADING])
        with st.spinner("Per-system correlations…"):
            ps = compute.per_system(ds.id, run_ids, dims, coefficient, ctx.parse, sys_t)
            mt = None if ps.empty else compute.meta_correlation(ds.id, run_ids, dims, coefficient, ctx.parse, sys_t)
        render.blocks(av.per_system_blocks(ps, mt, ctx.dimension, coefficient, colors))


def cp_section(v: _View) -> None:
    ctx, ds, runs, sys_t = (v.ctx, v.ds, v.runs, v.sys_t)
    cp_dims = av.cp_dimensions(ds, runs, ctx.pairwise_runs)
    if cp_dims is not None:
        render.blocks([av.CP_HEADING])
        with st.spinner("Counting correct system preferences…"):
            cp = compute.correct_preferences(ds.id, tuple(r.run_id for r in runs + ctx.pairwise_runs), cp_dims,
                                             ctx.parse, sys_t)
        render.blocks(av.cp_blocks(cp))


def reliability_section(v: _View) -> None:
    coefficient, ctx, ds, systems = (v.coefficient, v.ctx, v.ds, v.systems)
    pairs = av.reliability_pairs(list(ctx.all_runs))
    if not pairs:
        return
    render.blocks([av.RELIABILITY_HEADING])
    labels = {f"{a.run_id} + {b.run_id}": (a, b) for a, b in pairs}
    names = common_views.run_names([r for pair in pairs for r in pair])
    choice = st.selectbox("RTS and MCQ runs", list(labels), key=url.key("reliability_pair", list(labels)[0],
                                                                         options=labels),
                          format_func=lambda k: " + ".join(names[r.run_id] for r in labels[k]))
    a, b = labels[choice]
    missing = av.reliability_scored(a, ctx.dimension)
    if missing:
        render.blocks(missing)
        return
    with st.spinner("Reliability indicator…"):
        rel = compute.reliability(ds.id, a.run_id, b.run_id, ctx.dimension, coefficient, ctx.parse)
        table = av.reliability_rows(rel.table, systems)
        cis = compute.reliability_intervals(table, coefficient, ctx.n_resamples)
    view = av.reliability_blocks(rel, table, cis, ctx.dimension, coefficient=coefficient,
                                 n_resamples=ctx.n_resamples, filtered=bool(systems))
    for col, blocks in zip(st.columns(len(view.columns)), view.columns):
        with col:
            render.blocks(blocks)
    render.blocks(view.rest)


def difficulty_section(v: _View) -> None:
    colors, ctx, ds, run_ids, runs, sys_t = (v.colors, v.ctx, v.ds, v.run_ids, v.runs, v.sys_t)
    if runs:
        render.blocks([av.DIFFICULTY_HEADING])
        with st.spinner("Pairwise Kendall tau by difficulty…"):
            diff = compute.difficulty(ds.id, run_ids, ctx.dimension, ctx.parse, sys_t)
        render.blocks(av.difficulty_blocks(diff, ctx.dimension, colors))


def pairwise_section(v: _View) -> None:
    """Judge verdicts on annotated pairs against the human votes, as MT-Bench, PandaLM and LLMBar report them."""
    colors, ctx, ds, systems = (v.colors, v.ctx, v.ds, v.systems)
    prs = preference_views.pairwise_runs(ctx.pairwise_runs, ctx.dimension)
    intro = av.pairwise_intro(ds, prs, ctx.dimension, systems)
    render.blocks([av.PAIRWISE_HEADING] + intro)
    if ds.preferences.empty or not prs:
        return
    with st.spinner("Agreements with bootstrap CIs over prompts…"):
        sums = compute.pairwise(ds.id, tuple(r.run_id for r in prs), ctx.dimension, ctx.parse, ctx.n_resamples)
    render.blocks(av.pairwise_blocks(sums, colors, dimension=ctx.dimension))
    names = list(sums)
    picked = (st.selectbox("Run for the confusion matrix and win rates", names,
                           key=url.key("pairwise_run", names[0], options=names)) if len(names) > 1 else names[0])
    view = av.pairwise_run_view(sums, picked)
    for col, blocks in zip(st.columns(2), (view.left, view.right)):
        with col:
            render.blocks(blocks)
    render.blocks(view.below)


@dataclass(frozen=True)
class _View:
    """What the sections draw from: the sidebar's context and this page's choices, handed to each section."""

    ctx: Any
    ds: Any
    runs: list
    run_ids: tuple
    dims: list
    sys_t: tuple | None
    systems: list
    level: str
    coefficient: str
    ci_resampling: str
    skip_constant: bool
    colors: dict


view = _View(ctx, ds, runs, run_ids, dims, sys_t, systems, level, coefficient, ci_resampling, skip_constant, colors)
SECTION_OF = {"Correlations": correlations_section, "Judge vs human scores": judge_by_human_section,
              "Per system & meta-correlation": per_system_section, "#CP": cp_section,
              "RTS-MCQ reliability": reliability_section, "Difficulty": difficulty_section,
              "Pairwise preferences": pairwise_section}
fill_status = None
for name, tab in tab_of.items():
    with tab:
        if tab.open:
            drawn = SECTION_OF[name](view)
            fill_status = drawn if name == "Correlations" else fill_status

# whatever the tab: may the judge replace the annotators, and what may be concluded from few labels
from pages._inference import show_inference  # noqa: E402

show_inference(ctx)
# and how much the judge agrees with itself across its draws
from pages._reliability import show_reliability  # noqa: E402

show_reliability(ctx)
# and where the judge's verdict may be used with a guarantee
from pages._guarantees import show_guarantees  # noqa: E402

show_guarantees(ctx)
# and the analyses that installed packages add (docs/extending.md): nothing is drawn when none is installed
if runs:
    render.blocks(compute.registered_blocks(ds.id, run_ids, ctx.dimension, ctx.parse, ctx.n_resamples, sys_t))

ui.sources("003", "002")

# ------------------------------------------------------------------------- the rest of the table (issue 19)
# On a large study the Correlations tab computed only the cell on show. Once everything above is drawn, the other
# cells are computed here, one cached cell at a time, so switching level or coefficient (and the exported report)
# finds them ready. Any click reruns the page and abandons the cell under way (``stoppable``); the cells done stay
# cached for every session.
if fill_status is not None:
    compute.fill_alignment_cells(ds.id, run_ids, ctx.dimension, ctx.parse, ctx.n_resamples, sys_t,
                                 (level, coefficient), fill_status, ci_resampling, skip_constant)
