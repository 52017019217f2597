"""The Alignment page's two questions after agreement: may the judge replace the annotators (the Alt-Test), and what
may a study conclude from few human labels (prediction-powered estimates; Bradley-Terry rankings of pairwise data).

One function, ``show_inference``, lays out evalcore.views.inference's blocks in two expanders drawn only when opened
(their state in the URL like the rest of the view); the computations are cached in pages/_compute.py.
"""

from __future__ import annotations

import streamlit as st

from evalcore.views import inference as iv
from pages import _compute as compute
from pages import _render as render
from pages import _url as url

EPSILONS = (0.2, 0.15, 0.1)
METHODS = ("ppi++", "ppi")


def show_inference(ctx) -> None:
    """The two expanders, for the sidebar's dataset, runs and dimension."""
    runs = iv.inference_runs(ctx.dataset, ctx.runs, ctx.dimension)
    alt = st.expander(iv.ALT_TEST_TITLE, key=url.key("alt_test_open", False), on_change="rerun")
    if alt.open:
        with alt:
            _alt_test_section(ctx, runs)
    ppi = st.expander(iv.ppi_title(runs), key=url.key("ppi_open", False), on_change="rerun")
    if ppi.open:
        with ppi:
            _ppi_section(ctx, runs)


def _intro(ctx, runs) -> bool:
    """The expander's first note; False when no run applies."""
    render.blocks(iv.intro_blocks(runs, ctx.dimension, bool(st.session_state.get("systems"))))
    return bool(runs)


def _alt_test_section(ctx, runs) -> None:
    if not _intro(ctx, runs):
        return
    epsilon = st.radio("Epsilon (the cost-benefit margin)", list(EPSILONS), horizontal=True,
                       format_func=iv.epsilon_label, help=iv.EPSILON_HELP,
                       key=url.key("alt_epsilon", EPSILONS[0], options=EPSILONS))
    render.blocks([iv.EPSILON_NOTE])
    small = st.radio("Annotators with fewer than 30 items", list(iv.SMALL_SAMPLE_LABELS), horizontal=True,
                     format_func=iv.SMALL_SAMPLE_LABELS.get, help=iv.SMALL_SAMPLE_HELP,
                     key=url.key("alt_small", "skip", options=tuple(iv.SMALL_SAMPLE_LABELS)))
    with st.spinner("Alt-Test…"):
        views = compute.alt_tests(ctx.dataset_id, tuple(r.run_id for r in runs), ctx.dimension, ctx.parse, epsilon,
                                  small)
    render.blocks(iv.alt_test_blocks(views, ctx.dimension))


def _rated_documents(ctx, runs) -> int | None:
    """The "rated documents" slider on a fully rated dataset (None: the data as it is)."""
    full, n = compute.rating_coverage(ctx.dataset_id, tuple(r.run_id for r in runs), ctx.dimension, ctx.parse)
    if not full or n < 3:
        return None
    pairwise = all(iv.is_pairwise(r) for r in runs)
    return st.slider(iv.rated_documents_label(pairwise), min_value=2, max_value=n,
                     help=iv.rated_documents_help(n, pairwise),
                     key=url.key("ppi_rated", iv.default_rated_documents(n), bounds=(2, n)))


class _Progress:
    """One bar over the expander's computations (each run's PPI, then Bradley-Terry): on a first open they take a
    while (a large pairwise dataset, a minute on a busy machine), then each is cached under its run's version
    (pages/_compute.py) and the bar only flashes. Emptied when the section is drawn."""

    def __init__(self, total: int) -> None:
        self.slot, self.total = st.empty(), max(1, total)

    def step(self, i: int, what: str) -> None:
        self.slot.progress(i / self.total, text=f"{what} ({i + 1} of {self.total}; computed once per run version)")

    def done(self) -> None:
        self.slot.empty()


def _ppi_section(ctx, runs) -> None:
    if not _intro(ctx, runs):
        return
    c1, c2 = st.columns([1, 2])
    method = c1.radio("Estimator", list(METHODS), horizontal=True, format_func=iv.ESTIMATOR_LABELS.get,
                      help=iv.ESTIMATOR_HELP, key=url.key("ppi_method", METHODS[0], options=METHODS))
    with c2:
        rated = _rated_documents(ctx, runs)
    pairwise = [r for r in runs if iv.is_pairwise(r)]
    progress = _Progress(len(runs) + bool(pairwise))
    views = compute.ppi_estimates(ctx.dataset_id, tuple(r.run_id for r in runs), ctx.dimension, ctx.parse, method,
                                  rated, ctx.n_resamples,
                                  step=lambda i, n: progress.step(i, "Prediction-powered estimates"))
    render.blocks(iv.ppi_missing_blocks(views, ctx.dimension))
    shown = [v for v in views if v.result is not None]
    if shown:
        names = [v.run for v in shown]
        picked = (st.selectbox("Run for the chart and the ranking", names,
                               key=url.key("ppi_run", names[0], options=names)) if len(names) > 1 else names[0])
        view = shown[names.index(picked)]
        render.blocks(iv.ppi_run_blocks(view, shown, ctx.dimension, ctx.n_resamples))
        _planning(ctx, runs[[v.run for v in views].index(picked)], view, method, rated)
    if pairwise:
        _bradley_terry(ctx, pairwise, progress)
    progress.done()
    render.blocks([iv.sources_note(bool(pairwise))])


def _planning(ctx, run, view, method: str, rated: int | None) -> None:
    """How many rated documents an interval of a chosen width needs, with the humans alone and with PPI."""
    render.blocks([iv.planning_heading(view.pairwise)])
    default = iv.default_target_width(ctx.dataset, ctx.dimension, view.pairwise)
    width = st.number_input("Target width of the 95% interval (full width)", min_value=0.001, max_value=1000.0,
                            step=0.05, format="%.3f", key=url.key("ppi_width", default, bounds=(0.001, 1000.0)))
    try:
        plan = compute.ppi_plan(ctx.dataset_id, run.run_id, ctx.dimension, ctx.parse, float(width), method, rated)
    except ValueError as e:
        plan = e
    render.blocks(iv.planning_blocks(plan, view, ctx.dimension, float(width), rated))


def _bradley_terry(ctx, pairwise, progress: _Progress) -> None:
    n = iv.bt_resamples(ctx.n_resamples)
    render.blocks([iv.bt_heading(n)])
    names = {r.run_id: iv.run_label(r) for r in pairwise}
    run_id = (st.selectbox("Pairwise run", list(names), format_func=names.get,
                           key=url.key("bt_run", next(iter(names)), options=list(names)))
              if len(names) > 1 else next(iter(names)))
    progress.step(progress.total - 1, f"Bradley-Terry fits on {n} prompt resamples")
    comparison = compute.bradley_terry(ctx.dataset_id, run_id, ctx.dimension, ctx.parse, n)
    render.blocks(iv.bt_blocks(comparison, names[run_id], ctx.dimension, n))
