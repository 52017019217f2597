"""Bias: does the judge favour LLM-written text, score on a different scale than humans, or prefer a position?"""

from __future__ import annotations

import streamlit as st

from evalcore.views import bias as bias_views
from evalcore.views import common as common_views
from evalcore.views.format import cite
from pages import _compute as compute
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset
st.title("Bias")

# --------------------------------------------------------------- human- vs LLM-written (Liu et al. 2023, Fig. 2)
st.subheader(f"Human-written vs LLM-written texts ({cite('000', 'Fig. 2')})")
if not bias_views.has_writer_info(ds):
    st.info("This analysis needs human-written and LLM-written texts of the same documents: pick **zhang_pairs** "
            "(Zhang et al. 2023: freelance writers' and text-davinci-002's news summaries, with annotators' "
            "preferences) or **topical_chat** (human-written and model-generated dialogue responses, with Chiang & "
            "Lee's gpt-3.5 G-Eval run) in the sidebar.")
else:
    scored = [r for r in ctx.all_runs if r.dataset_id == ds.id and r.method not in ("h2h", "pairwise")]
    if not scored:
        st.info("No judge has scored these texts yet. Score them on the **Score** page: choose a method (e.g. "
                "G-Eval or RTS), a judge endpoint and the dimension, then press **Start scoring**; the run appears "
                "here when it is done.")
    else:
        labels = common_views.run_names(scored)
        run_id = st.selectbox("Judge run", list(labels), key=url.key("bias_run", list(labels)[0], options=labels),
                              format_func=labels.get)  # names, not ids
        with st.spinner("Grouping by the humans' preference…"):
            wb = compute.writer_bias(ds.id, run_id, ctx.dimension, ctx.parse)
        if wb.empty:
            done = [d for d in ui.load_run(run_id, ctx.parse).dimensions if d in ds.dimension_names]
            st.info(ui.esc(f"Run {labels[run_id]} has no parsed scores on {ctx.dimension!r} for these pairs.")
                    + (f" It scored: {ui.esc(', '.join(done))} (pick one as the sidebar's Dimension)." if done else ""))
        else:
            ui.chart(bias_views.writer_bias_figure(wb, labels[run_id]), "writer_bias")
            ui.table(wb, f"writer bias {ctx.dimension}", "writer_bias")
            if wb["basis"].iloc[0] == "votes":
                st.caption("Pairs are grouped by the majority of the annotators' votes (a tie when the votes "
                           "cancel).")
            else:
                st.caption("Each human-written response is paired with each model-written response to the same "
                           "context; the humans preferred the one with the higher gold score on this dimension "
                           "(equal scores: equally good). Means are over pairs.")
            with st.expander("Every pair with the judge's two scores"):
                ui.table(compute.writer_pairs(ds.id, run_id, ctx.dimension, ctx.parse),
                         f"writer bias pairs {ctx.dimension}", "writer_pairs", height=300)

runs = ctx.item_runs
run_ids = tuple(r.run_id for r in runs)
dims = tuple(d for d in ds.dimension_names if any(d in r.dimensions for r in runs))
colors = common_views.label_colors(ctx.all_runs + [r for r in ctx.runs if r.run_id not in
                                                   {a.run_id for a in ctx.all_runs}])

if not runs:
    # The three sections below read per-item scores: without a score run they are one sentence, not three headings
    # over nothing.
    pairwise_only = ds.human_scores.empty and not ds.preferences.empty
    st.info("This dataset's humans voted on pairs of outputs and its runs give verdicts on pairs: mean scores per "
            "system, verbosity and self-preference of score runs and score distributions need scores per item, so "
            "only position bias (below) applies here. A pairwise judge's verbosity and self-preference are on the "
            "Alignment page's Pairwise preferences tab." if pairwise_only else
            "No selected run has per-item scores: mean scores per system, verbosity and self-preference of score "
            "runs and score distributions need them. Pick runs in the sidebar (**Runs**), or score the dataset on "
            "the **Score** page. Position bias of pairwise runs is below.")

# ---------------------------------------------------------------------- judge vs human (Shen et al. 2023, Fig. 4)
if runs:
    st.subheader(f"Mean judge score vs mean human score ({cite('003', 'Fig. 4')})")
if runs and not dims:
    st.info("The selected runs scored none of this dataset's dimensions.")
if runs and dims:
    with st.spinner("Means per system…"):
        ms = compute.mean_scores(ds.id, run_ids, dims, ctx.parse)
    if ms.empty:
        st.info("No scores to compare.")
    else:
        ui.chart(bias_views.mean_scores_figure(ms, colors), "mean_scores")
        if (ms["dimension"] == ctx.dimension).any():
            ui.chart(bias_views.mean_scores_system_figure(ms, ctx.dimension, colors), "mean_scores_system")
        ui.table(ms, "mean scores per system", "mean_scores")
        st.caption("Raw scores are only comparable when judge and humans use the same scale (G-Eval rates "
                   "fluency 1-3 while SummEval's humans rate 1-5).")

# ------------------------------------------------------------------------ verbosity and self-preference (scores)
if runs:
    st.subheader("Verbosity and self-preference of score runs")
    args = (ds.id, run_ids, ctx.dimension, ctx.parse, ctx.n_resamples)
    sb = compute.long_work(f"Residuals against length and model family ({ctx.n_resamples} resamples)",
                           compute.work_key("score_bias", *args), lambda: compute.score_bias(*args))
    if sb is None:
        pass  # stopped: long_work said so, with a button to compute it after all
    elif sb.empty:
        st.info(ui.esc(f"No score run with human scores on {ctx.dimension!r}."))
    else:
        ui.table(sb, f"score bias {ctx.dimension}", "score_bias")
        st.caption("Residual = judge z-score - human z-score of an item (both sides standardised, so scales need not "
                   "match). Verbosity: its Spearman correlation with the output's length in characters (above 0: "
                   "the judge favours longer outputs more than the humans). Self-preference: the mean residual on "
                   "outputs of the judge's model family beside the others (absent when the dataset has none). "
                   "95% CIs resample documents. Pairwise runs: see the Alignment page's Pairwise tab.")

# ------------------------------------------------------------------ distributions (Chen et al. 2023, Fig. 3-4)
if runs:
    st.subheader(f"Score distributions per method ({cite('002', 'Fig. 3-4')})")
    with st.spinner("Score distributions…"):
        dist = compute.distributions(ds.id, run_ids, ctx.dimension, ctx.parse)
    if dist.empty:
        st.info(ui.esc(f"No parsed scores on {ctx.dimension!r}."))
    else:
        ui.chart(bias_views.score_distribution_figure(dist, ctx.dimension, colors), "distributions")
        summary = dist.groupby(["run", "method"])["judge"].describe().reset_index()
        ui.table(summary, f"score distribution {ctx.dimension}", "distributions")

# ----------------------------------------------------------------------------------------------- position bias
st.subheader("Position bias of pairwise runs")
pw = [r for r in ctx.all_runs if r.method in ("h2h", "pairwise") or (r.comparisons is not None
                                                                     and not r.comparisons.empty)]
if not pw:
    st.info("No pairwise run on this dataset. Score one on the **Score** page with the H2H or Pairwise method "
            "(SummEval ships Shen et al.'s ChatGPT H2H run).")
else:
    labels = common_views.run_names(pw)  # names, not ids (two runs of one name: the id's end tells them apart)
    selected = [r.run_id for r in ctx.pairwise_runs]
    default = selected or list(labels)[:1]
    chosen = st.multiselect("Pairwise runs", list(labels), key=url.key("bias_pairwise", default, options=labels),
                            format_func=labels.get)
    if chosen:
        with st.spinner("Position bias…"):
            pb = compute.position_bias(tuple(chosen), ctx.parse)
        if pb.empty:
            st.info("These runs hold no comparisons.")
        else:
            ui.chart(bias_views.position_bias_figure(pb), "position_bias")
            ui.table(pb, "position bias", "position_bias")
            st.caption(ui.esc(bias_views.position_bias_note([ui.load_run(r, ctx.parse) for r in chosen])))

ui.sources("000", "003", "002", "zhang", "chiang")
