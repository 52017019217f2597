"""Data: the dataset in use (overview, preview, rating distributions, human agreement) and uploading your own."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore import importers
from evalcore.views import data as data_views
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset

st.title("Data")
st.text(f"{ds.name}  ·  {ds.task}  ·  id {ds.id}")
if ds.description:
    st.text(ds.description)

c1, c2, c3, c4 = st.columns(4)
c1.metric("Items", len(ds.items))
c2.metric("Documents", ds.items["doc_id"].nunique())
c3.metric("Systems", len(ds.systems))
c4.metric("Annotators", len(ds.annotators))

st.subheader("Dimensions")
ui.table(data_views.dataset_overview(ds), f"{ds.id} dimensions", "dimensions")

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
        ui.chart(data_views.rating_histogram(ds), "ratings")

with tab_of["Human agreement"]:
    if tab_of["Human agreement"].open:
        if ds.annotations.empty:
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
                st.caption("Interval-level alpha per annotator group; 95% CIs resample items.")

if ds.citation or ds.origin:
    with st.expander("Source and citation"):
        if ds.origin:
            st.text(ds.origin)
        if ds.citation:
            st.code(ds.citation, language=None, wrap_lines=True)

# ----------------------------------------------------------------------------------------------------- upload

st.divider()
st.subheader("Upload a dataset")
st.caption("CSV, TSV, JSON, JSONL or Parquet: one row per item (one column per dimension) or one row per item and "
           "dimension. Nothing is imported unless the whole file is valid.")
upload = st.file_uploader("Upload a dataset file", type=["csv", "tsv", "json", "jsonl", "ndjson", "parquet"],
                          key="upload")

NONE = "(none)"
ROLES = [("item_id", "Item id column"), ("doc_id", "Document id column"), ("system_id", "System column"),
         ("output", "Output (evaluated text) column"), ("source", "Source text column"),
         ("reference", "Reference column"), ("context", "Context column"), ("annotator", "Annotator column"),
         ("group", "Annotator group column")]


def show_problems(err: importers.DatasetValidationError) -> None:
    """Every problem with file, row and column, inline (st.error), plus the table of them."""
    lines = [str(p) for p in err.problems[: importers.MAX_PROBLEMS_SHOWN]]
    more = len(err.problems) - len(lines)
    head = f"{len(err.problems)} problem(s) found, nothing was imported"
    if err.convention:
        head += f" ({err.convention})"
    st.error(head + ":\n\n" + "\n".join(f"- {ui.esc(x)}" for x in lines) + (f"\n- … and {more} more" if more else ""))
    frame = pd.DataFrame([{"file": p.file, "row": str(p.row), "column": p.column, "problem": p.message}
                          for p in err.problems])
    ui.table(frame, "upload problems", "upload_problems")


if upload is not None:
    try:
        raw = importers.read_table(upload)
    except importers.DatasetValidationError as e:
        show_problems(e)
        raw = None
    if raw is not None:
        st.text(f"{upload.name}: {len(raw)} rows, {len(raw.columns)} columns")
        st.dataframe(raw.head(20), key="upload_preview")
        cols = [str(c) for c in raw.columns]
        guess = importers.suggest_mapping(cols, raw.head(200))
        options = [NONE] + cols
        st.markdown("**Column mapping** (guessed from the column names; correct it if needed)")
        mcols = st.columns(3)
        chosen: dict[str, str | None] = {}
        for i, (role, label) in enumerate(ROLES):
            g = getattr(guess, role)
            if isinstance(g, list):
                g = g[0] if g else None
            idx = options.index(g) if g in options else 0
            with mcols[i % 3]:
                v = st.selectbox(label, options, index=idx, key=f"map_{role}")
            chosen[role] = None if v == NONE else v
        shape_default = guess.shape if guess.shape in ("wide", "long") else "wide"
        shape = st.radio("Rating layout", ["wide", "long"], index=["wide", "long"].index(shape_default),
                         key="map_shape", horizontal=True,
                         help="wide: one column per dimension; long: a dimension column and a value column")
        mapping = importers.ColumnMapping(**{k: v for k, v in chosen.items()})
        if shape == "long":
            lc = st.columns(2)
            d = lc[0].selectbox("Dimension column", options, index=options.index(guess.dimension)
                                if guess.dimension in options else 0, key="map_dimension")
            v = lc[1].selectbox("Value column", options, index=options.index(guess.value)
                                if guess.value in options else 0, key="map_value")
            mapping.dimension = None if d == NONE else d
            mapping.value = None if v == NONE else v
        else:
            # A rating column is a dimension (named by the guess: "coh" -> coherence) unless it is one of several
            # per-annotator columns the guess grouped under a dimension.
            column_dim: dict[str, tuple[str, str | None]] = {}
            for dim, spec in guess.dimensions.items():
                if isinstance(spec, dict):
                    for ann, c in spec.items():
                        column_dim[c] = (dim, ann)
                else:
                    column_dim[spec] = (dim, None)
            rating_cols = st.multiselect("Rating columns", cols, default=[c for c in cols if c in column_dim],
                                         key="map_ratings")
            dims: dict[str, str | dict[str, str]] = {}
            for c in rating_cols:
                dim, ann = column_dim.get(c, (c, None))
                if ann is None:
                    dims[dim] = c
                else:
                    spec = dims.setdefault(dim, {})
                    if isinstance(spec, dict):
                        spec[ann] = c
            mapping.dimensions = dims
        # The rating scale: declared, not inferred from the ratings present (a 1-5 scale whose ratings happen to
        # run 2-5 would otherwise be stored as 2-5). Prefilled with the usual scale the values fit in.
        if shape == "long":
            dim_names = (sorted(raw[mapping.dimension].dropna().astype(str).unique())
                         if mapping.dimension in raw.columns else [])
            value_cols = [mapping.value] if mapping.value in raw.columns else []
        else:
            dim_names = list(mapping.dimensions)
            value_cols = [c for spec in mapping.dimensions.values()
                          for c in (spec.values() if isinstance(spec, dict) else [spec])]
        lo_default, hi_default = data_views.scale_guess(raw, value_cols)
        declare = st.checkbox("All dimensions are rated on one scale", value=True, key="map_declare_scale",
                              help="Untick to infer each dimension's scale from its ratings (noted on import).")
        if declare:
            sc = st.columns(2)
            lo = sc[0].number_input("Scale min", value=lo_default, key="map_scale_min")
            hi = sc[1].number_input("Scale max", value=hi_default, key="map_scale_max")
            mapping.scales = {d: (float(lo), float(hi)) for d in dim_names}
        mapping.attributes = st.multiselect("Extra item attributes to keep", [c for c in cols],
                                            default=[c for c in guess.attributes if c in cols], key="map_attributes")
        allow_missing = st.checkbox("A blank rating means 'not rated'", key="map_allow_missing")
        mapping.allow_missing_ratings = bool(allow_missing)
        name = st.text_input("Dataset name", value=upload.name.rsplit(".", 1)[0], key="upload_name")
        if st.button("Import dataset", key="import_dataset", type="primary"):
            try:
                with st.spinner("Validating and importing…"):
                    new = importers.load_user_dataset(upload, mapping, name=name or upload.name)
            except importers.DatasetValidationError as e:
                show_problems(e)
            else:
                from evalcore.judge.store import default_store

                default_store().save_dataset(new, overwrite=True)
                ui.forget_runs()
                ui.load_dataset.clear()
                st.session_state["_pending_dataset"] = new.id
                st.session_state["_imported"] = f"Imported {new.name!r} as {new.id}: {len(new.items)} items, " \
                                                f"dimensions {', '.join(new.dimension_names)}."
                st.rerun()

msg = st.session_state.pop("_imported", None)
if msg:
    st.success(ui.esc(msg))
