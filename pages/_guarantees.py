"""The Alignment page's Guarantees expander: where the judge's verdict may be used with a guarantee, where it must
escalate, and per-item intervals for the human score (evalcore.views.guarantees), drawn only when opened (its state
in the URL)."""

from __future__ import annotations

import streamlit as st

from evalcore.views import guarantees as gv
from evalcore.views.common import run_names
from pages import _render as render
from pages import _shared as ui
from pages import _url as url


@st.cache_resource(show_spinner=False, max_entries=16)
def _blocks(dataset_id: str, run_ids: tuple[str, ...], versions: tuple[str, ...], dimension: str, parse: str):
    ds = ui.load_dataset(dataset_id)
    runs = [ui.load_run(r, parse) for r in run_ids]
    return gv.blocks(ds, runs, run_names(runs), dimension)


def show_guarantees(ctx) -> None:
    """The expander, for the sidebar's dataset, runs and dimension."""
    box = st.expander(gv.TITLE, key=url.key("guarantees_open", False), on_change="rerun")
    if not box.open:
        return
    with box:
        ids = tuple(r.run_id for r in gv.scored_runs(ctx.runs, ctx.dimension))
        if not ids:
            st.info("No selected run judged this dimension.")
            return
        with st.spinner("Calibrating thresholds and intervals…"):
            out = _blocks(ctx.dataset.id, ids, tuple(ui.run_versions(ids)), ctx.dimension, ctx.parse)
        render.blocks(out)
