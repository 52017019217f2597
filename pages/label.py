"""Label: rate items one at a time (blind to the judge), several annotators, alpha as labels arrive, how many
labels a run's agreement needs, export and re-import. Every label is written to the store the moment it is given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from evalcore import labels
from evalcore.model import counted
from evalcore.store import default_store
from evalcore.views import common as common_views
from evalcore.views import label as label_views
from evalcore.views import sharing
from pages import _compute as compute
from pages import _handoff as handoff
from pages import _identity as identity
from pages import _render as render
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
store = default_store()
ds_id = labels.base_id(ctx.dataset_id)  # the labels view of a dataset is labelled as that dataset
ds = ui.load_dataset(ds_id)

st.title("Label")
st.caption(ui.esc(f"Dataset {ds.name} ({ds_id}), picked in the sidebar. Judge scores are hidden while you label; "
                  "every rating is saved to the store the moment you give it (a reload or a crash loses nothing)."))

c1, c2, c3 = st.columns([1, 2, 1])
# Signed in (pages/_identity.py), the annotator is the user: no field, and a link's ?annotator= is not read, so
# nobody labels, undoes or imports in another's name (issue 21, item 6). Labels and statistics are scoped to what the
# user may see: their own and those shared with the lab.
signed_in = identity.sign_in_configured()
me = identity.owner()  # None: sign-in off, or a visitor not signed in
viewer = identity.viewer()
if signed_in:
    c1.text_input("Annotator", value=me or "", disabled=True, key="annotator_signed_in",
                  help="Signed in: your labels are kept under your user name.")
    annotator = me or ""
else:
    # A form: the name changes only when submitted (Enter or the button). Typed straight into the field, digit keys
    # meant as ratings used to extend the name ("carol4") and the next click started a new annotator at item 1
    # (issue 18.11). Once submitted, the field gives way to the name as text and a Change button: the browser's
    # focus stayed in the field after Enter, and the digit shortcuts typed into it ("bob3324352344").
    url.key("annotator", "")
    if not (st.session_state.get("annotator") or "").strip():
        st.session_state["_annotator_editing"] = True
    if st.session_state.get("_annotator_editing"):
        def _named() -> None:
            st.session_state["_annotator_editing"] = not (st.session_state.get("annotator") or "").strip()

        with c1.form("annotator_form", border=False, enter_to_submit=True):
            st.text_input("Annotator", key="annotator", placeholder="your name",
                          help="Your labels are kept under this name; several annotators can label the same items. "
                               "Press Enter (or Start) to begin; the digit keys rate once you are on an item.")
            st.form_submit_button("Start labelling", key="label_start", on_click=_named)
    else:
        c1.text(f"Annotator: {st.session_state['annotator'].strip()}")  # text: a name is never Markdown
        c1.button("Change annotator", key="annotator_change", icon=":material/edit:",
                  on_click=lambda: st.session_state.update(_annotator_editing=True))
    annotator = (st.session_state.get("annotator") or "").strip()
scope = identity.scope_key(viewer)
dims = c2.multiselect("Dimensions to label", ds.dimension_names,
                      key=url.key("label_dims", [ds.dimension_names[0]], options=ds.dimension_names),
                      help="Each item is rated on these, one after the other.")
orders = list(label_views.ORDERS)
order_kind = c3.selectbox("Which item next", orders, format_func=label_views.ORDERS.get,
                          key=url.key("label_order", "random", options=orders), help=label_views.ORDER_HELP)


# ------------------------------------------------------------------------------------------------ item order
@st.cache_data(show_spinner=False, max_entries=32)
def _order(dataset_id: str, kind: str, source: tuple, dimension: str, parse: str) -> tuple[list[str], int]:
    runs = tuple(ui.load_run(run_id, parse) for run_id in source[1:])
    return labels.order_for(ui.load_dataset(dataset_id), kind, source, runs, dimension)


def uncertainty_source(ctx, ds_id: str) -> tuple:
    """The run(s) the judge's uncertainty comes from, as picked: ("geval", run), ("disagree", run a, run b), or ()
    while not picked."""
    item_runs = label_views.item_runs(ctx.all_runs)
    run_names = common_views.run_names(item_runs)  # names, not ids, in the pickers
    u1, u2 = st.columns([1, 2])
    sources = label_views.UNCERTAINTY_SOURCES
    how = u1.radio("Judge uncertainty from", sources, key=url.key("label_uncertainty", sources[0], options=sources))
    ids = [r.run_id for r in item_runs]
    if how == sources[2]:  # the items a run abstained on, handed over by the Alignment page's Guarantees section
        queue = handoff.label_queue(ds_id)
        if queue is None:
            render.blocks([label_views.NO_QUEUE])
            st.stop()
        return ("abstained", queue["run"])
    if how == sources[0]:
        gevals = [r.run_id for r in item_runs if r.method == "geval"]
        pick = u2.selectbox("G-Eval run (its score distributions)", gevals, format_func=run_names.get,
                            key=url.key("label_geval_run", gevals[0], options=gevals) if gevals else "label_geval_run")
        return ("geval", pick) if pick else ()
    pair = u2.multiselect("Two runs to compare", ids, max_selections=2, format_func=run_names.get,
                          key=url.key("label_disagree_runs", [], options=ids))
    return ("disagree", *pair) if len(pair) == 2 else ()


source = uncertainty_source(ctx, ds_id) if order_kind == "uncertain" else ()
if order_kind == "uncertain" and not source:
    render.blocks([label_views.PICK_SOURCE])
    st.stop()
strategy = labels.order_strategy(order_kind, source)
if not dims:
    render.blocks([label_views.PICK_DIMENSION])
    st.stop()
if source[:1] == ("abstained",):
    order = labels.handed_order(ds, handoff.label_queue(ds_id)["items"])
    render.blocks([label_views.queue_note(order, handoff.label_queue(ds_id))])
else:
    with st.spinner("Ordering the items…"):
        order, n_known = _order(ds_id, order_kind, source, dims[0], ctx.parse)
    render.blocks([n for n in [label_views.order_note(order, n_known, order_kind, dims[0])] if n is not None])
if not order:
    st.stop()


@dataclass(frozen=True)
class _Labelling:
    """What the labelling, statistics and export parts work with: the store, the dataset, who labels (and who is
    signed in and sees what), the dimensions, the item order and how it was chosen, the sidebar's context."""

    ctx: Any
    store: Any
    ds_id: str
    ds: Any
    me: str | None
    viewer: Any
    signed_in: bool
    annotator: str
    scope: str
    dims: list
    order: list
    strategy: Any


def forget_cached_dataset(store, ds_id: str) -> None:
    """Every page reads labels through the cached dataset: drop it (and results built on it) after a change."""
    ui.load_dataset.clear(ds_id)
    ui.load_dataset.clear(labels.view_id(ds_id))
    if labels.view_may_change(store, ds_id):  # the dataset's labels view appears or goes: list it again now
        ui.dataset_list.clear()
    compute.agreement.clear()


def save(lb: _Labelling, item_id: str, dimension: str, value: float | None, shown_at: str, who: str) -> None:
    """Save under ``who``, the annotator named on the card when it was drawn (not whatever the name field says when
    the click arrives)."""
    store, ds_id, ds, me, strategy = lb.store, lb.ds_id, lb.ds, lb.me, lb.strategy
    label_id = labels.save(store, ds_id, item_id, dimension, who, value, strategy=strategy, shown_at=shown_at,
                           owner=me)
    forget_cached_dataset(store, ds_id)
    st.session_state["_label_msg"] = label_views.saved_message(ds, dimension, value, label_id)


def undo(lb: _Labelling) -> None:
    store, ds_id, annotator, dims, me = lb.store, lb.ds_id, lb.annotator, lb.dims, lb.me
    row = labels.undo(store, ds_id, annotator, dimensions=dims, owner=me)
    forget_cached_dataset(store, ds_id)
    st.session_state["_label_msg"] = label_views.undone_message(row)


# ---------------------------------------------------------------------------------------------------- labelling
@st.fragment(run_every=label_views.REFRESH_S)
def labelling(lb: _Labelling) -> None:
    store, ds_id, ds, viewer, signed_in = lb.store, lb.ds_id, lb.ds, lb.viewer, lb.signed_in
    annotator, dims, order, strategy = lb.annotator, lb.dims, lb.order, lb.strategy
    rows = labels.rows_of(store, ds_id, viewer=viewer)
    if not annotator:
        render.blocks([label_views.no_annotator_note(signed_in)])
    else:
        prog = labels.annotator_progress(rows, annotator, dims, len(ds.items))
        g1, g2 = st.columns([1, 4], vertical_alignment="bottom")
        goal = int(g1.number_input("Goal (labels)", min_value=1, max_value=max(1, prog.total),
                                   key=url.key("label_goal", max(1, min(50, prog.total)),
                                               bounds=(1, max(1, prog.total)))))
        g2.progress(min(1.0, prog.labelled / goal),
                    text=label_views.progress_text(prog, goal, annotator, len(ds.items), len(dims)))
        msg = st.session_state.pop("_label_msg", None)
        if msg:
            st.caption(ui.esc(msg))
        task = labels.next_task(order, rows, annotator, dims, strategy)
        if task is None:
            st.success("Every item in this order has your label on the chosen dimensions.")
            st.button("Undo", key="label_undo", shortcut="U", on_click=undo, args=(lb,), icon=":material/undo:")
        else:
            item_card(lb, *task, position=order.index(task[0]) + 1)
    statistics(lb, rows)


def item_card(lb: _Labelling, item_id: str, dimension: str, *, position: int) -> None:
    ds, annotator, dims, order = lb.ds, lb.annotator, lb.dims, lb.order
    shown_key = f"_shown::{annotator}::{item_id}::{dimension}"  # each annotator's own time (issue 18.11)
    shown_at = st.session_state.setdefault(shown_key, labels.shown_now())
    card = label_views.card(ds, item_id, dimension, ui.current_criteria(ds, dimension))
    st.subheader(f"Item {position} of {len(order)}", anchor=False)
    st.caption(ui.esc(f"Labelling as {annotator}."))
    if len(dims) > 1:
        st.caption(ui.esc(f"Dimension {dims.index(dimension) + 1} of {len(dims)} for this item."))
    left, right = st.columns([3, 2])
    with left:
        ui.plain("Output (rate this)", card.output)
        if len(card.source) > 800:  # a long article scrolls in its own box, so the output and the buttons stay in view
            st.caption("Source")
            with st.container(height=320, key="label_source"):
                st.code(card.source, language=None, wrap_lines=True)
        else:
            ui.plain("Source", card.source)
        if card.context.strip():
            ui.plain("Context", card.context)
    with right:
        st.markdown(card.heading)
        st.text(card.definition)
        render.blocks([card.description] if card.description is not None else [])
        rating_buttons(lb, card, item_id, dimension, shown_at)
        b1, b2 = st.columns(2)
        b1.button("Skip", key="label_skip", shortcut="S", on_click=save,
                  args=(lb, item_id, dimension, None, shown_at, annotator),
                  icon=":material/skip_next:", width="stretch")
        b2.button("Undo", key="label_undo", shortcut="U", on_click=undo, args=(lb,), icon=":material/undo:",
                  width="stretch")
        render.blocks([card.keys_note])


def rating_buttons(lb: _Labelling, card: label_views.Card, item_id: str, dimension: str, shown_at: str) -> None:
    ds, annotator = lb.ds, lb.annotator
    if card.points is not None:
        for col, v, label, key in zip(st.columns(len(card.points)), card.points, card.buttons, card.keys):
            col.button(label, key=f"label_rate_{int(v)}", shortcut=key, type="primary", width="stretch",
                       on_click=save, args=(lb, item_id, dimension, v, shown_at, annotator))
        return
    d = ds.dimension(dimension)
    field = f"label_value::{item_id}::{dimension}"
    st.number_input(f"Rating ({d.scale_min:g}-{d.scale_max:g})", min_value=float(d.scale_min),
                    max_value=float(d.scale_max), key=field)
    # the value is read when the click arrives, not when the button was drawn (the field may have changed)
    st.button("Save rating", key="label_save", shortcut="Ctrl+Enter", type="primary",
              on_click=lambda: save(lb, item_id, dimension, float(st.session_state[field]), shown_at, annotator))


# -------------------------------------------------------------------------------------------------- statistics
@st.cache_data(show_spinner=False, max_entries=64)
def _alpha(dataset_id: str, dims_t: tuple[str, ...], random_only: bool, n_resamples: int, version: tuple,
           scope: str, *, _store):
    rows = labels.rows_of(_store, dataset_id, viewer=identity.viewer_of(scope))
    dataset = ui.load_dataset(dataset_id)
    table = label_views.alpha_table(dataset, rows, list(dims_t), random_only=random_only, n_resamples=n_resamples)
    traj = label_views.alpha_trajectory(dataset, rows, dims_t[0], random_only=random_only)
    return table, traj


@st.cache_data(show_spinner=False, max_entries=64)
def _plan(dataset_id: str, run_id: str, dimension: str, coefficient: str, target: float, parse: str,
          version: str, scope: str, *, _store) -> dict:
    return labels.plan(ui.load_dataset(dataset_id), ui.load_run(run_id, parse),
                       labels.rows_of(_store, dataset_id, viewer=identity.viewer_of(scope)),
                       dimension, coefficient=coefficient, half_width=target, reference="labels",
                       adjudications=labels.adjudications_of(_store, dataset_id))


def statistics(lb: _Labelling, rows: pd.DataFrame) -> None:
    ctx, store, ds_id, ds, dims, scope = lb.ctx, lb.store, lb.ds_id, lb.ds, lb.dims, lb.scope
    version = labels.version_of(store, ds_id)
    st.divider()
    st.subheader("Agreement among annotators", anchor=False)
    random_only = st.toggle("Random part only", key=url.key("label_random_only", True),
                            help="Leave out items chosen where the judge is least certain (they are not a random "
                                 "sample of the dataset).")
    render.blocks([label_views.sample_caption(rows, dims, random_only)])
    table, traj = _alpha(ds_id, tuple(dims), random_only, ctx.n_resamples, version, scope, _store=store)
    render.blocks(label_views.alpha_blocks(ds_id, table, traj, dims, ctx.n_resamples))

    st.subheader("How many labels you need", anchor=False)
    st.caption("Shows a judge run's agreement with the labels: open it when you are not labelling, to stay blind.")
    with st.expander("Plan the number of labelled items"):
        item_runs = label_views.item_runs(ctx.all_runs)
        runs, names = [r.run_id for r in item_runs], common_views.run_names(item_runs)
        p1, p2, p3, p4 = st.columns(4)
        run_id = p1.selectbox("Run", runs, key=url.key("plan_run", runs[0], options=runs) if runs else "plan_run",
                              format_func=names.get)
        pdim = p2.selectbox("Dimension", dims, key=url.key("plan_dimension", dims[0], options=dims))
        coefs = ["spearman", "kendall", "pearson"]
        coef = p3.selectbox("Coefficient", coefs, key=url.key("plan_coefficient", coefs[0], options=coefs))
        target = float(p4.number_input("Target CI half-width", min_value=0.005, max_value=0.5, step=0.01,
                                       format="%.3f", key=url.key("plan_half_width", 0.05, bounds=(0.005, 0.5))))
        if run_id:
            # keyed by the labels and the campaigns' final labels (which replace their items' label means)
            plan = _plan(ds_id, run_id, pdim, coef, target, ctx.parse, ui.dataset_version(ds_id), scope,
                         _store=store)
            render.blocks(label_views.plan_blocks(ds, ui.load_run(run_id, ctx.parse), rows, pdim, plan, target))


def export_and_import(lb: _Labelling) -> None:
    """Outside the auto-refreshing fragment: a refresh must not replace the button while a download is running."""
    store, ds_id, ds, me, viewer, signed_in = lb.store, lb.ds_id, lb.ds, lb.me, lb.viewer, lb.signed_in
    st.subheader("Export and re-import", anchor=False)

    def export_csv() -> bytes:
        # built when the button is pressed (on the download thread: plain evalcore calls only)
        from evalcore.csvsafe import to_csv_safe

        return to_csv_safe(labels.export_frame(ds, labels.rows_of(store, ds_id, viewer=viewer))).encode("utf-8")

    e1, e2 = st.columns([1, 2])
    e1.download_button("Download labels (CSV)", data=export_csv,
                       file_name=f"labels-{ds_id}.csv", mime="text/csv", key="label_export", on_click="ignore",
                       icon=":material/download:",
                       # not disabled while empty: labels given since this part last ran (the labelling fragment
                       # reruns alone) are in the file, which is built when the button is pressed
                       help="One row per item, dimension and annotator with the texts, every label saved so far; "
                            "re-imports here onto the same dataset, and reads as a long-layout upload on the Data "
                            "page.")
    up = e2.file_uploader("Re-import a labels file", type=["csv"], key="label_import", disabled=signed_in and not me,
                          help="Signed in: only your own labels (the annotator column must be your user name)."
                          if signed_in else None)
    if up is not None and st.button("Import labels", key="label_import_go"):
        try:
            n = labels.import_labels(store, ds, pd.read_csv(up), file=up.name, owner=me)
        except (labels.LabelImportError, ValueError) as e:
            st.error(ui.esc(str(e)))
        else:
            forget_cached_dataset(store, ds_id)
            st.success(f"Imported {counted(n, 'label')}.")
    st.caption(label_views.how_labels_join(ds))
    offer = sharing.labels_offer(store, ds_id, me)
    if offer is not None:
        def share(on: bool) -> None:
            sharing.share_labels(store, ds_id, me, on)
            forget_cached_dataset(store, ds_id)
            ui.dataset_list.clear()

        identity.offer_toggle(offer, share)


labelling_state = _Labelling(ctx, store, ds_id, ds, me, viewer, signed_in, annotator, scope, dims, order, strategy)
labelling(labelling_state)
export_and_import(labelling_state)
