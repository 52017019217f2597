"""Bias: does the judge favour LLM-written text, score on a different scale than humans, or prefer a position?"""

from __future__ import annotations

import streamlit as st

from evalcore.views import alignment as alignment_views
from evalcore.views import bias as bias_views
from evalcore.views import common as common_views
from evalcore.views.blocks import Heading
from pages import _compute as compute
from pages import _render as render
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset
st.title("Bias")

# --------------------------------------------------------------- human- vs LLM-written (Liu et al. 2023, Fig. 2)
scored = bias_views.scored_runs(ds, ctx.all_runs)
render.blocks(bias_views.writer_intro(ds, scored))
if bias_views.has_writer_info(ds) and scored:
    labels = common_views.run_names(scored)
    run_id = st.selectbox("Judge run", list(labels), key=url.key("bias_run", list(labels)[0], options=labels),
                          format_func=labels.get)  # names, not ids
    with st.spinner("Grouping by the humans' preference…"):
        wb = compute.writer_bias(ds.id, run_id, ctx.dimension, ctx.parse)
        pairs = compute.writer_pairs(ds.id, run_id, ctx.dimension, ctx.parse)
    render.blocks(bias_views.writer_blocks(ds, ui.load_run(run_id, ctx.parse), labels[run_id], ctx.dimension, wb,
                                           pairs))

runs = ctx.item_runs
run_ids = tuple(r.run_id for r in runs)
dims = tuple(d for d in ds.dimension_names if any(d in r.dimensions for r in runs))
colors = alignment_views.page_colors(ctx.all_runs, ctx.runs)

if not runs:
    render.blocks([bias_views.no_score_runs_note(ds)])
else:
    # ------------------------------------------------------------------ judge vs human (Shen et al. 2023, Fig. 4)
    render.blocks([Heading(bias_views.MEAN_SCORES_HEADING)])
    with st.spinner("Means per system…"):
        ms = compute.mean_scores(ds.id, run_ids, dims, ctx.parse) if dims else None
    render.blocks(bias_views.mean_scores_blocks(ms, ctx.dimension, colors))

    # -------------------------------------------------------------------- verbosity and self-preference (scores)
    render.blocks([Heading(bias_views.SCORE_BIAS_HEADING)])
    args = (ds.id, run_ids, ctx.dimension, ctx.parse, ctx.n_resamples)
    sb = compute.long_work(f"Residuals against length and model family ({ctx.n_resamples} resamples)",
                           compute.work_key("score_bias", *args), lambda: compute.score_bias(*args))
    if sb is not None:  # None: stopped; long_work said so, with a button to compute it after all
        render.blocks(bias_views.score_bias_blocks(sb, ctx.dimension))

    # -------------------------------------------------------------- distributions (Chen et al. 2023, Fig. 3-4)
    render.blocks([Heading(bias_views.DISTRIBUTION_HEADING)])
    with st.spinner("Score distributions…"):
        dist = compute.distributions(ds.id, run_ids, ctx.dimension, ctx.parse)
    render.blocks(bias_views.distribution_blocks(dist, ctx.dimension, colors))

# ----------------------------------------------------------------------------------------------- position bias
pw = bias_views.pairwise_bias_runs(ctx.all_runs)
render.blocks(bias_views.position_intro(pw))
if pw:
    labels = common_views.run_names(pw)  # names, not ids (two runs of one name: the id's end tells them apart)
    default = [r.run_id for r in ctx.pairwise_runs] or list(labels)[:1]
    chosen = st.multiselect("Pairwise runs", list(labels), key=url.key("bias_pairwise", default, options=labels),
                            format_func=labels.get)
    if chosen:
        with st.spinner("Position bias…"):
            pb = compute.position_bias(tuple(chosen), ctx.parse)
        render.blocks(bias_views.position_bias_blocks(pb, [ui.load_run(r, ctx.parse) for r in chosen]))

ui.sources("000", "003", "002", "zhang", "chiang")
