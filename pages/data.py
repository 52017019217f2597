"""Data: uploading your own work (a human-rated file whose judge-score columns become runs, or judge scores for the
dataset in use), then the dataset in use: overview, preview, rating distributions, human agreement."""

from __future__ import annotations

import streamlit as st

from evalcore.views import data as data_views
from evalcore.views import sharing
from pages import _identity as identity
from pages import _render as render
from pages import _shared as ui
from pages import _upload as upload_ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset
store = ui.store_or_none()  # None: the store cannot be read (the banner says why); nothing to share then

st.title("Data")
# on a server with sign-in, an upload belongs to who made it (only they see it until they share it): no upload
# without a name to record
may_upload = not identity.sign_in_configured() or identity.owner() is not None
# Orientation on first open (issue 18.15): what is loaded, where the answer is, how to bring your own.
st.info(data_views.orientation(ds, len(ctx.run_ids), may_upload=may_upload).text, icon=":material/info:")
upload_ui.messages()
if (deleted := st.session_state.pop("_data_deleted", None)) is not None:  # delete_section's, before its rerun
    render.blocks([deleted])

# ----------------------------------------------------------------------------------------------------- upload
intro = data_views.upload_notes(may_upload=may_upload)
render.blocks(intro[:2])
up_left, up_right = st.columns(2)
render.blocks(intro[2:])  # below the two uploaders: why they are disabled
upload = up_left.file_uploader("Upload a dataset file (human ratings, optionally judge scores)",
                               type=data_views.upload_types(), key="upload", disabled=not may_upload)
scores = up_right.file_uploader("Add judge scores to the dataset in use (a file keyed by item_id, or by doc_id and "
                                "system_id)", type=data_views.upload_types(), key="upload_scores",
                                disabled=not may_upload)
if upload is not None:
    upload_ui.dataset_form(upload)
if scores is not None:
    upload_ui.scores_form(scores, ds)


def share_toggles(entry: dict, ds, store) -> None:
    """The dataset's toggle for its uploader, and beside it one for the judge-score runs imported with it (private
    until shared: sharing the dataset alone would leave the lab without its judge scores)."""
    me = identity.owner()
    offer = sharing.dataset_offer(entry, me)
    if offer is None or store is None:
        return

    def share_dataset(on: bool) -> None:
        sharing.share_dataset(store, ds.id, me, on)
        ui.forget_runs()

    identity.offer_toggle(offer, share_dataset)
    runs_offer = sharing.imported_runs_offer(store, ui.run_index(ds.id), me)
    if runs_offer is not None:
        def share_runs(on: bool) -> None:
            sharing.share_runs(store, runs_offer.keys, me, on)
            ui.forget_runs()

        identity.offer_toggle(runs_offer, share_runs)


def delete_section(ds, store) -> None:
    """"Delete this dataset" for an upload: what it deletes, its id typed to confirm, then the deletion (the store
    checks again who may: the uploader, or anyone on a machine without sign-in)."""
    offer = data_views.delete_offer(store, ds, identity.viewer()) if store is not None else None
    if offer is None:  # a bundled dataset
        return
    with st.expander("Delete this dataset"):
        render.blocks([offer.what] + ([offer.why_not] if offer.why_not else []))
        typed = st.text_input(f"Type the dataset's id, {offer.confirm}, to confirm", key="delete_confirm",
                              disabled=not offer.allowed)
        if st.button("Delete this dataset", key="delete_dataset", disabled=not offer.allowed or
                     typed.strip() != offer.confirm):
            done = data_views.delete_dataset(store, ds.id, identity.viewer())
            if done.kind == "success":  # the sidebar opens the default dataset: this one is gone
                ui.forget_runs()
                ui.load_dataset.clear()
                st.session_state["_data_deleted"] = done
                st.rerun()
            render.blocks([done])


st.divider()
st.subheader("Dataset in use")
st.text(f"{ds.name}  ·  {ds.task}  ·  id {ds.id}")
owned = sharing.dataset_owner(ui.dataset_list(), ds.id)
if owned is not None:
    st.text(sharing.dataset_owner_line(owned))
    share_toggles(owned, ds, store)
delete_section(ds, store)
if ds.description:
    st.text(ds.description)
render.blocks(data_views.overview(ds))

# The sections below the dimensions table are tabs that run only when open (st.tabs with on_change="rerun"), as on
# the Alignment page: drawing the charts in the same run as the first table kept the browser busy for seconds
# before the table showed (bench/bench_pages.py), and the agreement bootstrap runs only when asked for (cached).
SECTIONS = ["Preview", "Rating distributions", "Human agreement"]
tab_of = dict(zip(SECTIONS, st.tabs(SECTIONS, key=url.key("data_section", SECTIONS[0], options=SECTIONS),
                                    on_change="rerun")))

with tab_of["Preview"]:
    if tab_of["Preview"].open:
        n_preview = st.number_input("Rows to preview", min_value=5, max_value=500, step=5,
                                    key=url.key("preview_rows", 20, bounds=(5, 500)))
        ui.table(data_views.preview_frame(ds, int(n_preview)), f"{ds.id} preview", "preview")

with tab_of["Rating distributions"]:
    if tab_of["Rating distributions"].open:
        render.blocks(data_views.ratings_blocks(ds))

with tab_of["Human agreement"]:
    if tab_of["Human agreement"].open:
        no_alpha = data_views.agreement_note(ds)
        if no_alpha is not None:
            render.blocks([no_alpha])
        else:
            from pages import _compute as compute  # the statistics (scipy) load when this tab first opens

            with st.spinner(f"Krippendorff's alpha with {ctx.n_resamples} bootstrap resamples…"):
                alpha = compute.agreement(ds.id, ctx.n_resamples)
            render.blocks(data_views.agreement_blocks(ds.id, alpha))

if ds.citation or ds.origin:
    # Drawn only when opened: st.code's highlighter is a 1.5 MB script, and the browser holds back the whole first
    # render (the dimensions table included) until it is compiled, about 0.4 s even from the HTTP cache.
    source = st.expander("Source and citation", key=url.key("data_source_open", False), on_change="rerun")
    if source.open:
        with source:
            if ds.origin:
                st.text(ds.origin)
            if ds.citation:
                st.code(ds.citation, language=None, wrap_lines=True)
