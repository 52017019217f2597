"""Campaigns: a dataset's items (or a sample) spread over k signed-in annotators each; each labels their own queue, an
item locked while they have it open; the annotators' agreement; the items they disagree on, adjudicated by the
campaign's creator. Every label is an ordinary label (the Label and Data pages read it) that keeps its campaign."""

from __future__ import annotations

from typing import Any

import streamlit as st

from evalcore import labels
from evalcore.store import default_store
from evalcore.views import campaigns as campaign_views
from evalcore.views import common as common_views
from evalcore.views import label as label_views
from pages import _identity as identity
from pages import _render as render
from pages import _shared as ui
from pages import _url as url


def who(signed_in: bool) -> str | None:
    """The user: the signed-in name (sign-in on), else the name typed here (a laptop: names are not checked)."""
    if signed_in:
        return identity.owner()
    name = st.text_input("Your name", key=url.key("campaign_user", ""),
                         help="Without sign-in, the name you label and adjudicate as (nobody checks it).")
    return name.strip() or None


def new_campaign(store: Any, ds: Any, ctx: Any, user: str | None, expanded: bool) -> None:
    with st.expander("New campaign", expanded=expanded), st.form("campaign_new", border=False):
        c1, c2, c3 = st.columns(3)
        name = c1.text_input("Campaign name", key="campaign_name")
        dim = c2.selectbox("Dimension", ds.dimension_names, key="campaign_dimension")
        how = c3.selectbox("Items", list(campaign_views.SELECTIONS), format_func=campaign_views.SELECTIONS.get,
                           key="campaign_items")
        r1, r2, r3, r4 = st.columns(4)
        n = int(r1.number_input("n (sample size)", min_value=1, value=20, key="campaign_n"))
        seed = int(r2.number_input("Seed", min_value=0, value=0, key="campaign_seed"))
        names = common_views.run_names(ctx.all_runs)  # the sidebar's runs, by name
        picked = "The runs selected in the sidebar: pick them there first."
        run_a = r3.selectbox("Run (unstable, abstained; first of two)", ctx.run_ids, key="campaign_run_a",
                             index=None, format_func=lambda r: names.get(r, r), help=picked)
        run_b = r4.selectbox("Second run (disagreements)", ctx.run_ids, key="campaign_run_b", index=None,
                             format_func=lambda r: names.get(r, r), help=picked)
        a1, a2, a3 = st.columns([3, 1, 1])
        people = a1.text_input("Annotators (user names, comma-separated)", key="campaign_annotators")
        k = int(a2.number_input("Annotators per item (k)", min_value=1, max_value=20, value=2, key="campaign_k"))
        threshold = float(a3.number_input("Disagreement threshold", min_value=0.0, value=1.0, key="campaign_thr",
                                          help="On a numeric scale, labels of one item further apart than this are "
                                               "a disagreement to adjudicate (categories: any difference)."))
        if not st.form_submit_button("Create campaign", disabled=not user):
            if not user:
                st.caption("Sign in (or give your name) to make a campaign: you will be its adjudicator.")
            return
    try:
        cid, said = campaign_views.create(store, ds, how=how, dimension=dim, annotators=people, k=k, creator=user,
                                          name=name, n=n, seed=seed, threshold=threshold,
                                          runs=ctx.runs if how not in ("all", "random") else [], run_a=run_a,
                                          run_b=run_b)
    except ValueError as e:
        st.error(ui.esc(str(e)))
        return
    st.session_state["campaign"] = cid
    st.success(ui.esc(said))


def _forget_dataset(store: Any, ds_id: str) -> None:
    """Every page reads labels and final labels through the cached dataset: drop it after a label or adjudication."""
    ui.load_dataset.clear(ds_id)
    ui.load_dataset.clear(labels.view_id(ds_id))
    if labels.view_may_change(store, ds_id):  # the dataset's labels view appears with its first label
        ui.dataset_list.clear()


def _save(store: Any, ds: Any, view: Any, task: Any, user: str, value: float, owner: str | None,
          shown_at: str) -> None:
    st.session_state["_campaign_msg"] = campaign_views.save_label(store, ds, view.campaign, task, user, value,
                                                                  owner=owner, shown_at=shown_at)
    _forget_dataset(store, ds.id)


def labelling(store: Any, ds: Any, view: Any, user: str | None, owner: str | None) -> None:
    st.subheader("Your queue", anchor=False)
    msg = st.session_state.pop("_campaign_msg", None)
    if msg:
        st.caption(ui.esc(msg))
    q = campaign_views.queue_view(store, view.campaign, view.assignments, user)
    render.blocks(q.notes)
    if q.task is None or not user:
        return
    dim = view.campaign["dimension"]
    card = label_views.card(ds, q.task.item_id, dim, ui.current_criteria(ds, dim))
    shown_at = st.session_state.setdefault(f"_campaign_shown::{view.campaign['campaign_id']}::{q.task.item_id}",
                                           labels.shown_now())
    st.caption(ui.esc(campaign_views.open_caption(q, user)))
    left, right = st.columns([3, 2])
    with left:
        ui.plain("Output (rate this)", card.output)
        if len(card.source) > 800:  # a long article scrolls in its own box: the buttons stay in view
            st.caption("Source")
            with st.container(height=320, key="campaign_source"):
                st.code(card.source, language=None, wrap_lines=True)
        else:
            ui.plain("Source", card.source)
    with right:
        st.markdown(card.heading)
        st.text(card.definition)
        if card.points is not None:
            for col, v, label in zip(st.columns(len(card.points)), card.points, card.buttons):
                col.button(label, key=f"campaign_rate_{int(v)}", type="primary", width="stretch", on_click=_save,
                           args=(store, ds, view, q.task, user, v, owner, shown_at))
        else:
            d = ds.dimension(dim)
            field = f"campaign_value::{q.task.item_id}"
            st.number_input(f"Rating ({d.scale_min:g}-{d.scale_max:g})", min_value=float(d.scale_min),
                            max_value=float(d.scale_max), key=field)
            # the value is read when the click arrives, not when the button was drawn (the field may have changed)
            st.button("Save rating", key="campaign_save", type="primary",
                      on_click=lambda: _save(store, ds, view, q.task, user, float(st.session_state[field]), owner,
                                             shown_at))


def adjudication(store: Any, ds: Any, view: Any, user: str | None) -> None:
    st.subheader("Disagreements and adjudication", anchor=False)
    render.blocks(view.adjudication)
    said = st.session_state.pop("_campaign_adj_msg", None)
    if said:
        st.caption(ui.esc(said))
    if view.disagreements.empty or user != view.campaign["creator"]:
        return
    choices = campaign_views.point_choices(ds, view.campaign["dimension"])
    with st.form("campaign_adjudicate", border=False):
        c1, c2, c3 = st.columns([1, 1, 2])
        item = c1.selectbox("Item", list(view.disagreements["item_id"]), key="campaign_adj_item")
        if choices is not None:
            value = c2.selectbox("Final label", choices[0], format_func=choices[1], key="campaign_adj_value")
        else:
            d = ds.dimension(view.campaign["dimension"])
            value = c2.number_input("Final label", min_value=float(d.scale_min), max_value=float(d.scale_max),
                                    key="campaign_adj_value")
        note = c3.text_input("Note (why)", key="campaign_adj_note")
        if st.form_submit_button("Set the final label"):
            st.session_state["_campaign_adj_msg"] = campaign_views.adjudicate(store, ds, view.campaign, item,
                                                                              float(value), by=user, note=note)
            _forget_dataset(store, ds.id)  # the final label is now the item's human score
            st.rerun()


def reassigning(store: Any, view: Any, user: str | None) -> None:
    """The creator gives an unlabelled item of one annotator's queue to another."""
    if user != view.campaign["creator"] or not view.reassignable:
        return
    said = st.session_state.pop("_campaign_moved_msg", None)
    with st.expander("Reassign an item", expanded=bool(said)):
        if said:
            st.caption(ui.esc(said))
        with st.form("campaign_reassign", border=False):
            c1, c2 = st.columns(2)
            key = c1.selectbox("Item not labelled yet", list(view.reassignable), format_func=view.reassignable.get,
                               key="campaign_move_item")
            to = c2.text_input("Give it to (user name)", key="campaign_move_to")
            if st.form_submit_button("Reassign"):
                st.session_state["_campaign_moved_msg"] = campaign_views.reassign(store, view.campaign, key, to,
                                                                                  by=user)
                st.rerun()


def campaign_page(store: Any, ds: Any, ctx: Any, user: str | None, owner: str | None, signed_in: bool) -> None:
    rows = campaign_views.visible(store, ds.id, user, signed_in=signed_in)
    new_campaign(store, ds, ctx, user, expanded=not rows)
    rows = campaign_views.visible(store, ds.id, user, signed_in=signed_in)
    if not rows:
        st.info("No campaign on this dataset that you take part in yet." if user else
                "Sign in (or give your name) to see the campaigns you take part in.")
        return
    names = campaign_views.campaign_names(rows)
    ids = list(names)
    cid = st.selectbox("Campaign", ids, format_func=names.get, key=url.key("campaign", ids[0], options=ids))
    view = campaign_views.view(store, ds, next(r for r in rows if r["campaign_id"] == cid))
    render.blocks(view.status)
    opened = st.container()  # filled once the queue below has opened the user's item
    reassigning(store, view, user)
    labelling(store, ds, view, user, owner)
    with opened:
        render.blocks(campaign_views.open_now(store, view.campaign))
    st.subheader("Agreement among the annotators", anchor=False)
    render.blocks(view.agreement)
    adjudication(store, ds, view, user)
    st.subheader("Every label", anchor=False)
    render.blocks(view.history)


ctx = ui.context()
ds_main = ui.load_dataset(labels.base_id(ctx.dataset_id))
st.title("Campaigns")
st.caption(ui.esc(f"Dataset {ds_main.name}, picked in the sidebar. A campaign spreads its items over k annotators "
                  "each; every label is saved the moment it is given, with who, when and which campaign."))
signed = identity.sign_in_configured()
campaign_page(default_store(), ds_main, ctx, who(signed), identity.owner(), signed)
