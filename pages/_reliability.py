"""The Alignment page's reliability expander: how much the judge agrees with itself across its draws
(evalcore.views.reliability), for one of the selected runs, drawn only when opened (its state in the URL)."""

from __future__ import annotations

import streamlit as st

from evalcore.views import reliability as rv
from evalcore.views.common import run_names
from pages import _render as render
from pages import _shared as ui
from pages import _url as url

LEVELS = ("dataset", "summary", "system")
COEFFICIENTS = ("spearman", "kendall", "pearson")


@st.cache_resource(show_spinner=False, max_entries=32)
def _report(dataset_id: str, run_id: str, version: str, dimension: str, parse: str, level: str, coefficient: str,
            n_resamples: int):
    ds = ui.load_dataset(dataset_id)
    return rv.report(ds, ui.load_run(run_id, parse), dimension, level=level, coefficient=coefficient,
                     n_resamples=n_resamples)


def show_reliability(ctx) -> None:
    """The expander, for the sidebar's dataset, runs and dimension."""
    warned = rv.one_draw_samplers_note(ctx.runs, run_names(ctx.runs), ctx.dimension)
    if warned is not None:
        render.block(warned)
    box = st.expander(rv.TITLE, key=url.key("reliability_open", False), on_change="rerun")
    if not box.open:
        return
    with box:
        runs = rv.drawn_runs(ctx.runs, ctx.dimension)
        if not runs:
            st.info("No selected run scored this dimension item by item.")
            return
        names = run_names(runs)
        ids = [r.run_id for r in runs]
        run_id = st.selectbox("Run", ids, format_func=names.get, key=url.key("rel_run", ids[0], options=ids))
        c1, c2 = st.columns(2)
        level = c1.selectbox("Level", LEVELS, key=url.key("rel_level", "dataset", options=LEVELS))
        coefficient = c2.selectbox("Coefficient", COEFFICIENTS,
                                   key=url.key("rel_coefficient", "spearman", options=COEFFICIENTS))
        with st.spinner("Reliability of the draws…"):
            rep = _report(ctx.dataset.id, run_id, ui.run_versions((run_id,))[0], ctx.dimension, ctx.parse, level,
                          coefficient, ctx.n_resamples)
        run = next(r for r in runs if r.run_id == run_id)
        render.blocks(rv.blocks(ctx.dataset, names[run_id], ctx.dimension, rep, coefficient=coefficient, run=run))
