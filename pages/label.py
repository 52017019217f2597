"""Label: rate items one at a time (blind to the judge), several annotators, alpha as labels arrive, how many
labels a run's agreement needs, export and re-import. Every label is written to the store the moment it is given."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from evalcore import labels
from evalcore.store import default_store
from evalcore.views import common as common_views
from evalcore.views import label as label_views
from pages import _compute as compute
from pages import _identity as identity
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
store = default_store()
ds_id = labels.base_id(ctx.dataset_id)  # the labels view of a dataset is labelled as that dataset
ds = ui.load_dataset(ds_id)

st.title("Label")
st.caption(ui.esc(f"Dataset {ds.name} ({ds_id}), picked in the sidebar. Judge scores are hidden while you label; "
                  "every rating is saved to the store the moment you give it (a reload or a crash loses nothing)."))

ORDERS = {"random": "random", "stratified": "stratified by system", "uncertain": "judge least certain"}
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
order_kind = c3.selectbox("Which item next", list(ORDERS), format_func=ORDERS.get,
                          key=url.key("label_order", "random", options=list(ORDERS)),
                          help="random (default): a fixed random order, a random sample of the dataset. Stratified: "
                               "the same, interleaved so every system is represented in proportion. Judge least "
                               "certain: widest G-Eval score distribution or largest disagreement of two runs first "
                               "(kept out of the estimates). Every annotator follows the same order, so that items "
                               "get several ratings.")


# ------------------------------------------------------------------------------------------------ item order
@st.cache_data(show_spinner=False, max_entries=32)
def _order(dataset_id: str, kind: str, source: tuple, dimension: str, parse: str) -> tuple[list[str], int]:
    dataset = ui.load_dataset(dataset_id)
    if kind != "uncertain":
        return labels.item_order(dataset, kind), 0
    if source[0] == "geval":
        u = labels.geval_width(ui.load_run(source[1], parse), dimension)
    else:
        u = labels.run_disagreement(ui.load_run(source[1], parse), ui.load_run(source[2], parse), dimension)
    if u.empty:
        return [], 0
    return labels.item_order(dataset, "uncertain", u), len(u)


strategy = order_kind
source: tuple = ()
if order_kind == "uncertain":
    item_runs = [r for r in ctx.all_runs if r.method not in ("h2h", "pairwise")]
    run_names = common_views.run_names(item_runs)  # names, not ids, in the pickers
    u1, u2 = st.columns([1, 2])
    sources = ["G-Eval score distribution", "two runs disagreeing"]
    how = u1.radio("Judge uncertainty from", sources, key=url.key("label_uncertainty", sources[0], options=sources))
    ids = [r.run_id for r in item_runs]
    if how == "G-Eval score distribution":
        gevals = [r.run_id for r in item_runs if r.method == "geval"]
        pick = u2.selectbox("G-Eval run (its score distributions)", gevals, format_func=run_names.get,
                            key=url.key("label_geval_run", gevals[0], options=gevals) if gevals else "label_geval_run")
        source = ("geval", pick) if pick else ()
    else:
        pair = u2.multiselect("Two runs to compare", ids, max_selections=2, format_func=run_names.get,
                              key=url.key("label_disagree_runs", [], options=ids))
        source = ("disagree", *pair) if len(pair) == 2 else ()
    if not source:
        st.info("Pick the run(s) the judge's uncertainty comes from (a G-Eval run scored here keeps its score "
                "distributions; or any two runs of this dataset).")
        st.stop()
    strategy = ":".join(("uncertain", *source))

if not dims:
    st.info("Pick at least one dimension to label.")
    st.stop()

with st.spinner("Ordering the items…"):
    order, n_known = _order(ds_id, order_kind, source, dims[0], ctx.parse)
if not order:
    st.warning(ui.esc(f"The chosen run(s) give no uncertainty for {dims[0]!r} (no score distributions, or no items "
                      "scored by both). Pick other runs or another order."))
    st.stop()
if order_kind == "uncertain":
    st.caption(f"{n_known} items ordered by the judge's uncertainty on {ui.esc(dims[0])}, the most uncertain first; "
               "these labels are kept out of the estimates below (not a random sample).")


def forget_cached_dataset() -> None:
    """Every page reads labels through the cached dataset: drop it (and results built on it) after a change."""
    ui.load_dataset.clear(ds_id)
    ui.load_dataset.clear(labels.view_id(ds_id))
    if store.labels_version(ds_id)[0] <= 1:  # the dataset's labels view appears or goes: list it again now
        ui.dataset_list.clear()
    compute.agreement.clear()


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def save(item_id: str, dimension: str, value: float | None, shown_at: str, who: str) -> None:
    """Save under ``who``, the annotator named on the card when it was drawn (not whatever the name field says when
    the click arrives)."""
    label_id = store.save_label(ds_id, item_id, dimension, who, value, skipped=value is None,
                                strategy=strategy, shown_at=shown_at, owner=me)
    forget_cached_dataset()
    names = dict(zip(labels.scale_points(ds.dimension(dimension)) or [], labels.point_names(ds.dimension(dimension))))
    what = "skipped" if value is None else f"rated {names.get(value, format(value, 'g'))}"
    st.session_state["_label_msg"] = f"Saved: {dimension} {what} (label #{label_id})."


def undo() -> None:
    row = store.undo_label(ds_id, annotator, dimensions=dims, owner=me)
    forget_cached_dataset()
    st.session_state["_label_msg"] = ("Nothing to undo." if row is None else
                                      f"Undone: {row['dimension']} "
                                      f"{'skip' if row['skipped'] else format(row['value'], 'g')} on your item "
                                      f"#{row['position']}.")


# ---------------------------------------------------------------------------------------------------- labelling
REFRESH_S = 30  # other annotators' labels show up in the statistics at least this often, without a click


@st.fragment(run_every=REFRESH_S)
def labelling() -> None:
    rows = store.label_rows(ds_id, viewer=viewer)
    if not annotator:
        st.info("Sign in to label: labels are kept under your user name." if signed_in else
                "Type your name in **Annotator** to start labelling.")
    else:
        prog = labels.annotator_progress(rows, annotator, dims, len(ds.items))
        g1, g2 = st.columns([1, 4], vertical_alignment="bottom")
        goal = int(g1.number_input("Goal (labels)", min_value=1, max_value=max(1, prog.total),
                                   key=url.key("label_goal", max(1, min(50, prog.total)),
                                               bounds=(1, max(1, prog.total)))))
        g2.progress(min(1.0, prog.labelled / goal),
                    text=ui.esc(f"{prog.labelled} of {goal} labelled by {annotator} ({prog.skipped} skipped; "
                                f"{len(ds.items)} items x {len(dims)} dimension(s) in all)"))
        msg = st.session_state.pop("_label_msg", None)
        if msg:
            st.caption(ui.esc(msg))
        task = labels.next_task(order, rows, annotator, dims, strategy)
        if task is None:
            st.success("Every item in this order has your label on the chosen dimensions.")
            st.button("Undo", key="label_undo", shortcut="U", on_click=undo, icon=":material/undo:")
        else:
            item_card(*task, position=order.index(task[0]) + 1)
    statistics(rows)


def item_card(item_id: str, dimension: str, *, position: int) -> None:
    texts = ds.texts()
    row = texts[texts["item_id"].astype(str) == item_id].iloc[0]
    shown_key = f"_shown::{annotator}::{item_id}::{dimension}"  # each annotator's own time (issue 18.11)
    shown_at = st.session_state.setdefault(shown_key, now())
    d = ds.dimension(dimension)
    crit = ui.current_criteria(ds, dimension)
    st.subheader(f"Item {position} of {len(order)}", anchor=False)
    st.caption(ui.esc(f"Labelling as {annotator}."))
    if len(dims) > 1:
        st.caption(ui.esc(f"Dimension {dims.index(dimension) + 1} of {len(dims)} for this item."))
    left, right = st.columns([3, 2])
    with left:
        ui.plain("Output (rate this)", str(row.get("output") or ""))
        source = str(row.get("source") or "")
        if len(source) > 800:  # a long article scrolls in its own box, so the output and the buttons stay in view
            st.caption("Source")
            with st.container(height=320, key="label_source"):
                st.code(source, language=None, wrap_lines=True)
        else:
            ui.plain("Source", source)
        if str(row.get("context") or "").strip():
            ui.plain("Context", str(row["context"]))
    with right:
        what = (f"{d.kind}: {' / '.join(d.labels)}" if d.labels else f"scale {d.scale_min:g} to {d.scale_max:g}")
        st.markdown(f"**{ui.esc(dimension)}** · {ui.esc(what)}")
        st.text(crit.definition if crit is not None and crit.definition else (d.description or dimension))
        if d.description and crit is not None and crit.definition and d.description not in crit.definition:
            st.caption(ui.esc(d.description))
        points = labels.scale_points(d)
        if points is not None:
            names = labels.point_names(d)
            # digit keys: the value itself on a numeric scale (1-5), the button's place for named categories
            keys = [str(int(v)) if 0 <= v <= 9 and not d.labels else (str(i + 1) if i < 9 else None)
                    for i, v in enumerate(points)]
            cols = st.columns(len(points))
            for col, v, name, key in zip(cols, points, names, keys):
                # a numeric point's button says "rate 3", not "3 3" (its label next to its shortcut: issue 18.11)
                col.button(ui.esc(name) if d.labels else f"rate {name}", key=f"label_rate_{int(v)}", shortcut=key,
                           type="primary", width="stretch", on_click=save,
                           args=(item_id, dimension, v, shown_at, annotator))
        else:
            field = f"label_value::{item_id}::{dimension}"
            st.number_input(f"Rating ({d.scale_min:g}-{d.scale_max:g})", min_value=float(d.scale_min),
                            max_value=float(d.scale_max), key=field)
            # the value is read when the click arrives, not when the button was drawn (the field may have changed)
            st.button("Save rating", key="label_save", shortcut="Ctrl+Enter", type="primary",
                      on_click=lambda: save(item_id, dimension, float(st.session_state[field]), shown_at,
                                            annotator))
        b1, b2 = st.columns(2)
        b1.button("Skip", key="label_skip", shortcut="S", on_click=save,
                  args=(item_id, dimension, None, shown_at, annotator),
                  icon=":material/skip_next:", width="stretch")
        b2.button("Undo", key="label_undo", shortcut="U", on_click=undo, icon=":material/undo:", width="stretch")
        st.caption(ui.esc("Keys: " + (", ".join(k for k in keys if k) if points is not None else "Ctrl+Enter")
                          + " rate · S skip · U undo (your last label or skip)."))


# -------------------------------------------------------------------------------------------------- statistics
@st.cache_data(show_spinner=False, max_entries=64)
def _alpha(dataset_id: str, dims_t: tuple[str, ...], random_only: bool, n_resamples: int, version: tuple,
           scope: str):
    rows = store.label_rows(dataset_id, viewer=identity.viewer_of(scope))
    dataset = ui.load_dataset(dataset_id)
    table = label_views.alpha_table(dataset, rows, list(dims_t), random_only=random_only, n_resamples=n_resamples)
    traj = label_views.alpha_trajectory(dataset, rows, dims_t[0], random_only=random_only)
    return table, traj


@st.cache_data(show_spinner=False, max_entries=64)
def _plan(dataset_id: str, run_id: str, dimension: str, coefficient: str, target: float, parse: str,
          version: tuple, scope: str) -> dict:
    return labels.plan(ui.load_dataset(dataset_id), ui.load_run(run_id, parse),
                       store.label_rows(dataset_id, viewer=identity.viewer_of(scope)),
                       dimension, coefficient=coefficient, half_width=target, reference="labels")


def statistics(rows: pd.DataFrame) -> None:
    version = store.labels_version(ds_id)
    st.divider()
    st.subheader("Agreement among annotators", anchor=False)
    random_only = st.toggle("Random part only", key=url.key("label_random_only", True),
                            help="Leave out items chosen where the judge is least certain (they are not a random "
                                 "sample of the dataset).")
    st.caption(ui.esc(label_views.sample_note(rows, dims)) if random_only else
               "All labels, however their items were chosen: items picked for judge uncertainty over-represent hard "
               "items, so these figures do not describe the dataset as a whole.")
    table, traj = _alpha(ds_id, tuple(dims), random_only, ctx.n_resamples, version, scope)
    if table.empty:
        st.info("Alpha needs labels from at least two annotators on the same items.")
    else:
        ui.table(table, f"{ds_id} labels alpha", "label_alpha")
        blank = table[table["alpha"].isna()]
        if not blank.empty:  # a blank cell says why
            st.caption(ui.esc("Blank alpha on " + ", ".join(blank["dimension"]) + ": no item has labels from two "
                              "annotators yet (n_items counts the items that do), or the labels on them hold one "
                              "value only."))
        st.caption(f"Krippendorff's alpha at each dimension's level (its kind: interval, ordinal, or nominal for "
                   f"binary and nominal labels, as on the Data page); "
                   f"95% BCa CI over items, {ctx.n_resamples} resamples. Updates with every label saved, by anyone "
                   f"(other annotators' labels appear within {REFRESH_S} s).")
        cur = table[table["dimension"] == dims[0]]
        if not traj.empty:
            ui.chart(label_views.alpha_figure(traj, cur.iloc[0] if len(cur) else None, dims[0]), "label_alpha")

    st.subheader("How many labels you need", anchor=False)
    st.caption("Shows a judge run's agreement with the labels: open it when you are not labelling, to stay blind.")
    with st.expander("Plan the number of labelled items"):
        item_runs = [r for r in ctx.all_runs if r.method not in ("h2h", "pairwise")]
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
            plan = _plan(ds_id, run_id, pdim, coef, target, ctx.parse, version, scope)
            m1, m2, m3, m4 = st.columns(4)
            m1.metric("Labelled items with a judge score (n now)", plan["n_now"])
            m2.metric(f"{coef} with the labels", ui.fmt(plan["statistic"]),
                      help=f"95% CI [{ui.fmt(plan['ci_low'])}, {ui.fmt(plan['ci_high'])}]")
            m3.metric("CI half-width now", ui.fmt(plan["half_width_now"]))
            m4.metric(f"n needed for ±{target:g}", plan["n_needed"] if plan["n_needed"] else "n/a")
            for note in label_views.plan_notes(ds, ui.load_run(run_id, ctx.parse), rows, pdim, plan):
                st.caption(ui.esc(note))  # why "n now" is below the labels given, why a figure is n/a
            st.caption(ui.esc(f"Method: {plan['method']}. Sample: {plan['sample']}; {plan['dropped']} item(s) the "
                              "judge failed on are left out."))
            ui.chart(label_views.plan_figure(plan), "label_plan")


def export_and_import() -> None:
    """Outside the auto-refreshing fragment: a refresh must not replace the button while a download is running."""
    st.subheader("Export and re-import", anchor=False)

    def export_csv() -> bytes:
        # built when the button is pressed (on the download thread: plain evalcore calls only)
        from evalcore.csvsafe import to_csv_safe

        return to_csv_safe(labels.export_frame(ds, store.label_rows(ds_id, viewer=viewer))).encode("utf-8")

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
            forget_cached_dataset()
            st.success(f"Imported {n} labels.")
    st.caption(ui.esc(_how_labels_join()))
    if me:
        def share(on: bool) -> None:
            store.share_labels(ds_id, me, on)
            forget_cached_dataset()
            ui.dataset_list.clear()

        identity.share_toggle("your labels on this dataset", "labels", store.labels_shared(ds_id, me), share)


def _how_labels_join() -> str:
    if ds.human_scores.empty or ds.meta.get("labels", {}).get("human_scores_from_labels"):
        return ("How the labels are used: they are this dataset's per-annotator ratings (group 'labels') on every "
                "page, and an item without a gold score gets the mean of its random-part labels as its human score.")
    return ("How the labels are used: they join this dataset's per-annotator ratings (group 'labels'; the Data "
            "page's alpha); its gold human scores stay. To compare judges with the labels, pick the dataset "
            f"'{labels.view_id(ds_id)}' in the sidebar: there the human scores are the label means.")


labelling()
export_and_import()
