"""Data: uploading your own work (a human-rated file whose judge-score columns become runs, or judge scores for the
dataset in use), then the dataset in use: overview, preview, rating distributions, human agreement."""

from __future__ import annotations

import streamlit as st

from evalcore.views import common as common_views
from evalcore.views import data as data_views
from evalcore.views import preference as preference_views
from pages import _identity as identity
from pages import _shared as ui
from pages import _upload as upload_ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset

st.title("Data")
# on a server with sign-in, an upload belongs to who made it (only they see it until they share it): no upload
# without a name to record
may_upload = not identity.sign_in_configured() or identity.owner() is not None
# Orientation on first open (issue 18.15): what is loaded, where the answer is, how to bring your own.
n_runs = len(ctx.run_ids)
held = ("rated outputs" if not ds.human_scores.empty or ds.preferences.empty else
        "outputs voted on in pairs")  # a dataset of pairwise votes: nobody rated an output alone
st.info(ui.esc(f"Loaded: {ds.name}, {len(ds.items):,} {held} of {len(ds.systems)} systems, with "
               f"{n_runs} judge run(s) selected in the sidebar. How far each judge agrees with the humans, against "
               "the human ceiling, is on the Alignment page.")
        + ("  \nTo use your own ratings, upload a file below (**Bring your own data**)" if may_upload else
           "  \nTo use your own ratings, sign in, then upload a file below (**Bring your own data**)")
        + "; to judge with your own model, set its endpoint on the **Score** page.", icon=":material/info:")
upload_ui.messages()

# ----------------------------------------------------------------------------------------------------- upload
st.subheader("Bring your own data")
st.caption("CSV (comma or semicolon), TSV, JSON, JSONL or Parquet: one row per item (a column per dimension) or one "
           "row per item and dimension. Give each column its role: judge-score columns become runs, with no scale "
           "needed. Nothing is imported unless the whole file is valid.")
up_left, up_right = st.columns(2)
if not may_upload:
    st.caption("Sign in to upload: an upload is yours until you share it with the lab.")
upload = up_left.file_uploader("Upload a dataset file (human ratings, optionally judge scores)",
                               type=["csv", "tsv", "json", "jsonl", "ndjson", "parquet"], key="upload",
                               disabled=not may_upload)
scores = up_right.file_uploader("Add judge scores to the dataset in use (a file keyed by item_id, or by doc_id and "
                                "system_id)", type=["csv", "tsv", "json", "jsonl", "ndjson", "parquet"],
                                key="upload_scores", disabled=not may_upload)
if upload is not None:
    upload_ui.dataset_form(upload)
if scores is not None:
    upload_ui.scores_form(scores, ds)

def _share_imported_runs(me: str) -> None:
    """The judge scores imported in the same file as the dataset are runs of their own, private until shared: offered
    beside the dataset's toggle, so that sharing the dataset does not leave the lab without its judge scores."""
    from evalcore.store import default_store

    store = default_store()
    imported = [r for r in ui.run_index(ds.id) if r.method == "imported" or (r.config or {}).get("imported_from")]
    mine = [r for r in imported if store.owner_of("runs", (r.run_id,))[0] == me]
    if not mine:
        return
    shared = all(store.owner_of("runs", (r.run_id,))[1] for r in mine)
    names = common_views.run_names(mine)

    def _share_runs(on: bool) -> None:
        for r in mine:
            store.share("runs", (r.run_id,), me, on)
        ui.forget_runs()

    what = ("its judge-score run " if len(mine) == 1 else "its judge-score runs ") + ", ".join(names.values())
    identity.share_toggle(ui.esc(what) + " (imported with it)", "dataset_runs", shared, _share_runs)


st.divider()
st.subheader("Dataset in use")
st.text(f"{ds.name}  ·  {ds.task}  ·  id {ds.id}")
_owned = next((d for d in ui.dataset_list() if d["id"] == ds.id and d.get("owner")), None)
if _owned is not None:
    st.text(f"Uploaded by {_owned['owner']}" + (", shared with the lab" if _owned["shared"] else ", private"))
    me = identity.owner()
    if me and _owned["owner"] == me:
        def _share(on: bool) -> None:
            from evalcore.store import default_store

            default_store().share("datasets", (ds.id,), me, on)
            ui.forget_runs()

        identity.share_toggle("this dataset", "dataset", _owned["shared"], _share)
        _share_imported_runs(me)
if ds.description:
    st.text(ds.description)

c1, c2, c3, c4 = st.columns(4)
c1.metric("Items", len(ds.items))
c2.metric("Documents", ds.items["doc_id"].nunique())
c3.metric("Systems", len(ds.systems))
annotators = set(ds.annotators) | set(ds.preferences["annotator"]) if not ds.preferences.empty else ds.annotators
c4.metric("Annotators", len(annotators))

st.subheader("Dimensions")
ui.static_table(data_views.dataset_overview(ds), f"{ds.id} dimensions", "dimensions")
if not ds.preferences.empty:  # pairwise votes (A / B / tie): what the Alignment page's Pairwise tab compares with
    st.markdown("**Pairwise votes**")
    ui.static_table(preference_views.votes_overview(ds), f"{ds.id} pairwise votes", "pairwise_votes")
if any(d.is_categorical for d in ds.dimensions):  # label kinds (issue 7.4): categories, positive class, alpha level
    ui.static_table(data_views.dimension_kinds(ds), f"{ds.id} label kinds", "label_kinds")

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

votes_only = ds.human_scores.empty and not ds.preferences.empty  # PandaLM, LLMBar, an MT-Bench upload
with tab_of["Rating distributions"]:
    if tab_of["Rating distributions"].open:
        if votes_only:
            st.info(ui.esc(data_views.votes_only_note(ds, "ratings")))
        else:
            ui.chart(data_views.rating_histogram(ds), "ratings")

with tab_of["Human agreement"]:
    if tab_of["Human agreement"].open:
        if ds.annotations.empty and not ds.preferences.empty:
            st.info(ui.esc(data_views.votes_only_note(ds, "agreement")))
        elif ds.annotations.empty:
            st.info("This dataset has no per-annotator ratings, so inter-annotator agreement cannot be computed.")
        else:
            from pages import _compute as compute  # the statistics (scipy) load when this tab first opens

            with st.spinner(f"Krippendorff's alpha with {ctx.n_resamples} bootstrap resamples…"):
                alpha = compute.agreement(ds.id, ctx.n_resamples)
            if alpha.empty:
                st.info("No dimension has ratings from two or more annotators.")
            else:
                ui.table(alpha, f"{ds.id} krippendorff alpha", "agreement")
                ui.chart(data_views.agreement_figure(alpha), "agreement")
                st.caption("Alpha per annotator group at each dimension's level (column level: interval, ordinal, "
                           "or nominal for binary and nominal labels); 95% CIs resample items.")

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
