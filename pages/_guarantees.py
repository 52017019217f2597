"""The Alignment page's Guarantees expander: where the judge's verdict may be used with a guarantee, where it must
escalate, and per-item intervals for the human score (evalcore.views.guarantees), drawn only when opened (its state
in the URL)."""

from __future__ import annotations

import streamlit as st

from evalcore import labels
from evalcore.views import guarantees as gv
from evalcore.views import label as label_views
from evalcore.views.common import run_names
from pages import _handoff as handoff
from pages import _render as render
from pages import _shared as ui
from pages import _url as url


@st.cache_resource(show_spinner=False, max_entries=16)
def _blocks(dataset_id: str, run_ids: tuple[str, ...], versions: tuple[str, ...], dimension: str, parse: str):
    ds = ui.load_dataset(dataset_id)
    runs = [ui.load_run(r, parse) for r in run_ids]
    blocks, abstained = gv.section(ds, runs, run_names(runs), dimension)
    return blocks, gv.label_queues(ds, abstained), run_names(runs)


def _to_label_page(dataset_id: str, dimension: str, run_id: str, name: str, items: list[str]) -> None:
    """Hand the run's abstained items to the Label page as its queue, with its order and dimension set, and go."""
    handoff.queue_for_label(labels.base_id(dataset_id), dimension, run_id, name, items)
    st.session_state.update(label_order="uncertain", label_uncertainty=label_views.UNCERTAINTY_SOURCES[2],
                            label_dims=[dimension])
    st.switch_page("pages/label.py")


def _label_buttons(ctx, queues: dict[str, list[str]], names: dict[str, str]) -> None:
    for k, (run_id, items) in enumerate(queues.items()):
        if st.button(f"Label its abstained items: {names.get(run_id, run_id)} ({len(items)})", key=f"guar_label_{k}",
                     icon=":material/label:", help="The Label page then offers these items, and only these, as "
                                                   "its queue; their labels stay out of its estimates."):
            _to_label_page(ctx.dataset.id, ctx.dimension, run_id, names.get(run_id, run_id), items)


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
            out, queues, names = _blocks(ctx.dataset.id, ids, tuple(ui.run_versions(ids)), ctx.dimension, ctx.parse)
        render.blocks(out)
        _label_buttons(ctx, queues, names)
