"""Alignment: how far each judge run agrees with the humans (correlations, per-system view, #CP, reliability)."""

from __future__ import annotations

import contextlib

import streamlit as st

from evalcore import views
from evalcore.views import alignment as alignment_views
from evalcore.views import common as common_views
from evalcore.views import preference as preference_views
from evalcore.views.format import cite, format_pvalue
from pages import _compute as compute
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset
st.title("Alignment")
st.caption(f"Dimension **{ui.esc(ctx.dimension)}** · parse mode **{ctx.parse}** · {ctx.n_resamples} bootstrap resamples "
           "(change them in the sidebar)")

# A dataset whose humans only voted on pairs (PandaLM, LLMBar, an MT-Bench upload) has no scores per item to correlate:
# its page is the pairwise section alone, without the level, coefficient and systems that would not apply to it.
pairwise_only = ds.human_scores.empty and not ds.preferences.empty
if pairwise_only:
    level, coefficient, systems = views.LEVELS[0], views.COEFFICIENTS[1], []
    st.caption("This dataset's humans voted on pairs of outputs: the agreement below is with their votes (accuracy, kappa, "
               "win rates), so no correlation level, coefficient or system filter applies.")
else:
    c1, c2, c3 = st.columns([1, 1, 2])
    level = c1.selectbox("Level", list(views.LEVELS), key=url.key("level", views.LEVELS[0], options=views.LEVELS),
                         help="dataset: all items pooled; summary: per document, averaged; system: per-system means")
    coefficient = c2.selectbox("Coefficient", list(views.COEFFICIENTS), help="Kendall is tau-b",
                               key=url.key("coefficient", views.COEFFICIENTS[1], options=views.COEFFICIENTS))
    systems = c3.multiselect("Systems (empty = all)", ds.systems, key=url.key("systems", [], options=ds.systems),
                             help="Restrict every statistic on this page to these systems")
sys_t = tuple(systems) if systems else None
RESAMPLING = ("documents", "both")
ci_resampling = "documents"
if level == "system":
    from evalcore.meta.inference import CI_RESAMPLING_HELP

    ci_resampling = st.radio(
        "System-level interval resamples", list(RESAMPLING), horizontal=True,
        key=url.key("ci_resampling", RESAMPLING[0], options=RESAMPLING),
        format_func=lambda v: {"documents": "documents (systems fixed)", "both": "systems and documents"}[v],
        help="documents: " + CI_RESAMPLING_HELP["documents"] + ". both: " + CI_RESAMPLING_HELP["both"] + ".")
    st.caption(ui.esc(f"This interval: {CI_RESAMPLING_HELP[ci_resampling]}."))
CONSTANT = ("skip", "zero")
summary_constant = "skip"
if level == "summary":
    summary_constant = st.radio(
        "Documents where one side is constant", list(CONSTANT), horizontal=True,
        key=url.key("summary_constant", CONSTANT[0], options=CONSTANT),
        format_func=lambda v: {"skip": "skipped (G-Eval's script)", "zero": "counted as correlation 0"}[v],
        help="A document whose judge (or human) scores are all equal has no correlation. Skipping it (the default, "
             "as G-Eval's released script does) can flatter a judge that often gives all outputs the same score; "
             "counting it as 0 does not. The skipped column counts them either way.")
skip_constant = summary_constant == "skip"

runs = ctx.item_runs
run_ids = tuple(r.run_id for r in runs)
dims = tuple(d for d in ds.dimension_names if any(d in r.dimensions for r in runs))

if not ui.need_runs(runs + ctx.pairwise_runs, "per-item scores or pairwise verdicts"):
    if not ds.preferences.empty and ds.preferences["annotator"].nunique() > 1:
        # the humans' own agreement needs no judge: shown before one is chosen
        st.subheader("Pairwise votes: the annotators' agreement with each other")
        ui.table(preference_views.annotators_agreement_table(ds.preferences), "annotator kappa", "annotator_kappa")
        st.caption("Cohen's kappa for each pair of annotators over the pairs both voted on (A, B or tie). Blank: no "
                   "kappa, the note says why. A judge's agreement with these votes appears here once a run with "
                   "pairwise verdicts is chosen.")
    st.stop()
# one colour per run on every chart (and in the report): keyed over all of the dataset's runs
colors = common_views.label_colors(ctx.all_runs + [r for r in ctx.runs if r.run_id not in
                                                   {a.run_id for a in ctx.all_runs}])

# Each section runs only when its tab is open (st.tabs with on_change="rerun"): drawing every chart at once made the
# page slow to appear in the browser. The open tab is part of the view, so it lives in the URL like the rest.
SECTIONS = ["Correlations", "Judge vs human scores", "Per system & meta-correlation", "#CP", "RTS-MCQ reliability",
            "Difficulty", "Pairwise preferences"]
# a dataset of human pairwise votes (PandaLM, LLMBar, an MT-Bench upload) opens on what it is about
has_preferences = not ds.preferences.empty


class _Section(contextlib.nullcontext):
    """A section drawn without a tab (``open``: whether it is drawn at all)."""

    def __init__(self, open_: bool) -> None:
        super().__init__()
        self.open = open_


if pairwise_only:
    tab_of = {name: _Section(name == "Pairwise preferences") for name in SECTIONS}
else:
    tabs = st.tabs(SECTIONS, key=url.key("section", SECTIONS[-1] if has_preferences else SECTIONS[0],
                                         options=SECTIONS), on_change="rerun")
    tab_of = dict(zip(SECTIONS, tabs))


# ------------------------------------------------------------------------------------ label agreement (issue 7.4)
def label_agreement_section() -> None:
    """Binary / nominal / ordinal dimension: kappa & co with CIs, the confusion matrix, calibration."""
    dim = ds.dimension(ctx.dimension)
    if not dim.is_categorical or not runs:
        return
    st.subheader(f"Agreement on {dim.kind} labels")
    with st.spinner("Kappa, confusion matrices and calibration with bootstrap CIs…"):
        try:
            reports = compute.label_agreements(ds.id, run_ids, ctx.dimension, ctx.parse, ctx.n_resamples, sys_t)
        except ValueError as e:  # e.g. an annotator's value that is no category of the dimension
            st.warning(ui.esc(f"No label agreement for {ctx.dimension!r}: {e}"))
            return
    if not reports:
        st.info(ui.esc(f"None of the selected runs scored {ctx.dimension!r}."))
        return
    stats = alignment_views.label_agreement_table(reports)
    undefined = stats[stats["value"].isna()]
    ui.table(stats[stats["value"].notna()], f"label agreement {ctx.dimension}", "label_agreement")
    if not undefined.empty:  # e.g. precision of a class the judge never chose: no value, rather than a 0
        st.caption(ui.esc("Undefined here (a class never chosen by the judge or by the humans): "
                          + "; ".join(f"{r.run}: {r.statistic}" for r in undefined.itertuples())))
    first = next(iter(reports.values()))
    st.caption(ui.esc(f"Human label: {first.gold}. Categories: {', '.join(first.labels)}"
                      + (f" (positive class: {first.positive})" if first.positive else "")
                      + ". 95% CIs resample documents; n = items compared, dropped = judge replies that could not "
                        "be read, ties = items whose annotators tie (no majority), left out."))
    names = list(reports)
    picked = (st.selectbox("Confusion matrix of", names, key=url.key("confusion_run", names[0], options=names))
              if len(names) > 1 else names[0])
    ui.chart(alignment_views.confusion_figure(reports[picked], picked), "confusion")
    per_annotator = alignment_views.per_annotator_kappa_table(reports)
    if not per_annotator.empty:
        st.markdown("**The judge against each annotator** (Cohen's kappa)")
        ui.table(per_annotator, f"kappa per annotator {ctx.dimension}", "kappa_per_annotator")
        alpha = compute.agreement(ds.id, ctx.n_resamples)  # the Data page's table: same numbers, same cache
        alpha = alpha[alpha["dimension"] == ctx.dimension] if not alpha.empty else alpha
        for r in alpha.itertuples():
            st.caption(ui.esc(f"The annotators among themselves ({r.group}): Krippendorff's alpha ({r.level}) "
                              f"{ui.fmt(r.alpha)} [{ui.fmt(r.ci_low)}, {ui.fmt(r.ci_high)}], {r.n_items} items."))
    cal = alignment_views.calibration_table(reports)
    if not cal.empty:
        st.markdown("**Calibration of the judge's probabilities**")
        ui.table(cal, f"calibration {ctx.dimension}", "calibration")
        ui.chart(alignment_views.reliability_figure(reports), "reliability")
        st.caption("Brier score: mean squared error of the probability (0 is best). ECE: share-weighted gap between "
                   "predicted probability and observed frequency over 10 equal-width bins.")


# ----------------------------------------------------------------------------------------------- correlations
fill_status = None
with tab_of['Correlations']:
    if tab_of['Correlations'].open:
        label_agreement_section()
        nominal = ds.dimension(ctx.dimension).kind == "nominal"
        if nominal and runs:
            # issue 18.7: codes of unordered categories (A/B/tie) have no mean and no correlation; a Spearman of
            # codes against a "ceiling" reads as a result and is none
            st.info("Nominal labels have no order: no correlations, means or human ceiling are computed on their "
                    "codes. Read kappa, accuracy and the confusion matrix above.")
        else:
            st.subheader("Correlation with human ratings")
        if runs and not nominal:
            # The headline chart sits above the table but is sent after it, and drawn with Vega-Lite, not plotly:
            # plotly's 4.7 MB script, parsed on the page's first chart, held the table back by seconds
            # (bench/bench_app_ready.py times the table; see evalcore.views.alignment.headline_spec).
            headline = st.container()
            # Only the cell on show (level x coefficient) is computed: one ninth of the full table, which matters on
            # a large dataset; each cell is cached for every session, so switching back costs nothing.
            # On a large study the cell takes seconds: a progress bar and a Stop button (issue 19).
            cell = (ds.id, run_ids, ctx.dimension, ctx.parse, ctx.n_resamples, sys_t, level, coefficient,
                    ci_resampling, skip_constant)
            table = compute.long_work(f"{level}-level {coefficient} correlations with {ctx.n_resamples} bootstrap "
                                      "resamples", compute.work_key("alignment", *cell),
                                      lambda: compute.alignment_cell(*cell))
            for note in compute.support_notes(ds.id, run_ids, ctx.dimension, ctx.parse, sys_t):
                st.warning(ui.esc(note))
            if table is None:
                pass  # stopped: long_work said so, with a button to compute it after all
            elif table.empty:
                st.info(ui.esc(f"None of the selected runs scored {ctx.dimension!r}."))
            else:
                shown = alignment_views.filter_correlations(table, level=level, coefficient=coefficient)
                ui.table(shown, f"correlations {ctx.dimension} {level} {coefficient}", "correlations")
                fill_status = st.empty()  # the other cells' progress, filled at the end of the page
                st.caption(f"{level} level, {coefficient} (pick them above; the CSV of every level and coefficient "
                           "is in the exported report). n = items (dataset), documents used (summary) or systems "
                           "(system); skipped = documents where one side is constant (summary level); dropped = "
                           "replies that could not be parsed. A summary-level value is a mean of per-document "
                           "correlations: it has no p-value (blank), nor does the experts' mean in the ceiling table. "
                           "pvalue_method: below 30 pairs the p-value is a permutation test (exact, every ordering, "
                           "up to 9 pairs), never the t approximation.")
                st.markdown(f"**Human ceiling** ({level}, {coefficient}) on each run's items: each expert against "
                            "the mean of the others, on exactly the items (and systems) the run is correlated on")
                with st.spinner("Human ceiling with bootstrap intervals…"):
                    ceil = compute.ceiling(ds.id, run_ids, ctx.dimension, level, coefficient, ctx.parse,
                                           ctx.n_resamples, sys_t, skip_constant)
                if ceil.empty:
                    st.info("No per-annotator ratings for this dimension: no human ceiling.")
                else:
                    ui.table(ceil, f"human ceiling {ctx.dimension} {level} {coefficient}", "ceiling")
                    st.caption("mean = the experts' mean (the grey tick in the chart above); its 95% CI resamples "
                               "documents, the same draw for every expert.")
                    two = alignment_views.ceiling_note(table, ceil, level=level, coefficient=coefficient)
                    if two:  # two annotators: what the ceiling is then, and why a judge can exceed it
                        st.info(ui.esc(two))
                with headline:
                    st.vega_lite_chart(alignment_views.headline_spec(table, ceil, level=level,
                                                                     coefficient=coefficient, colors=colors),
                                       key="chart_headline", width="stretch")
                    if not ceil.empty:
                        st.caption("Dot and line: each run's correlation and its 95% CI. Grey tick and dashed line: "
                                   "the human ceiling on that run's own items, and its 95% CI.")
        elif not runs:
            st.info("The selected runs are pairwise: see #CP below and position bias on the Bias page.")

# --------------------------------------------------------------------------------------- judge vs human (items)
with tab_of['Judge vs human scores']:
    if tab_of['Judge vs human scores'].open:
        st.subheader("Judge score per human score (items)")
        if runs:
            with st.spinner("Item scores…"):
                items = compute.judge_by_human(ds.id, run_ids, ctx.dimension, ctx.parse, sys_t)
            if items.empty:
                st.info(ui.esc(f"None of the selected runs scored {ctx.dimension!r}."))
            else:
                as_points = st.toggle("Every item as a jittered dot", key=url.key("items_points", False))
                ui.chart(alignment_views.judge_by_human_figure(items, ctx.dimension, points=as_points,
                                                               colors=colors), "judge_by_human")
                st.caption("One box per human score and run: a judge aligned with the humans climbs from left to "
                           "right, with little overlap between neighbouring boxes. Human scores that are means of "
                           "several ratings are binned (the last bin includes its upper end).")
                summary = (items.groupby(["run", "human_bin", "bin_order"], sort=False)["judge"]
                           .describe()[["count", "mean", "std", "min", "50%", "max"]].reset_index()
                           .sort_values("bin_order", kind="stable").drop(columns="bin_order")
                           .rename(columns={"50%": "median", "count": "items"}))
                ui.table(summary, f"judge per human score {ctx.dimension}", "judge_by_human")
        else:
            st.info("The selected runs are pairwise: they give verdicts on pairs, not scores per item.")

# ------------------------------------------------------------------------------------------------ per system
with tab_of['Per system & meta-correlation']:
    if tab_of['Per system & meta-correlation'].open:
        if runs and dims and len(ds.systems) > 2:
            st.subheader(f"Per-system correlation ({cite('003', 'Fig. 1')})")
            with st.spinner("Per-system correlations…"):
                ps = compute.per_system(ds.id, run_ids, dims, coefficient, ctx.parse, sys_t)
            if ps.empty:
                st.info("Not enough systems for per-system correlations.")
            else:
                ui.chart(alignment_views.per_system_box(ps, coefficient, colors), "per_system")
                ui.table(ps, f"per-system {coefficient}", "per_system")

                st.subheader(f"Meta-correlation ({cite('003', 'Fig. 2-3')})")
                mt = compute.meta_correlation(ds.id, run_ids, dims, coefficient, ctx.parse, sys_t)
                if not mt.empty:
                    ui.table(mt, f"meta-correlation {coefficient}", "meta_correlation")
                    if (ps["dimension"] == ctx.dimension).any():
                        ui.chart(alignment_views.meta_scatter(ps, mt, ctx.dimension, coefficient, colors),
                                 "meta_scatter")
                    st.caption(f"M = corr(Q_i, P_i) over systems ({cite('003', 'Eq. 3')}). Near 0 is ideal; a "
                               "negative M means the judge "
                               "agrees less with humans on better systems.")

# ----------------------------------------------------------------------------------------------------- #CP
with tab_of['#CP']:
    if tab_of['#CP'].open:
        cp_runs = runs + ctx.pairwise_runs
        if len(ds.systems) > 1 and not ds.human_scores.empty and dims + tuple(d for r in ctx.pairwise_runs
                                                                               for d in r.dimensions):
            st.subheader(f"Correct preferences #CP ({cite('003', 'Sec. 4.2.1')})")
            cp_dims = tuple(dict.fromkeys(list(dims) + [d for r in ctx.pairwise_runs for d in r.dimensions
                                                         if d in ds.dimension_names]))
            with st.spinner("Counting correct system preferences…"):
                cp = compute.correct_preferences(ds.id, tuple(r.run_id for r in cp_runs), cp_dims, ctx.parse, sys_t)
            if cp.empty:
                st.info("No system pairs to compare.")
            else:
                ui.table(cp, "correct preferences", "cp")
                st.caption("full: all pairs of systems (SummEval: the 66 pairs of the 12 abstractive systems); challenge: "
                           f"pairs adjacent in average human score ({cite('003', 'App. E')}).")

# -------------------------------------------------------------------------------------------- reliability
@st.cache_data(show_spinner=False, max_entries=32)
def reliability_intervals(table, coefficient: str, n_resamples: int) -> dict:
    """corr(R_i, P_i) of each run with its 95% interval over systems (evalcore.meta.across_systems)."""
    from evalcore.meta.across_systems import across_systems_interval

    return {side: across_systems_interval(table["reliability"], table[f"p_{side}"], coefficient=coefficient,
                                          n_resamples=n_resamples) for side in ("rts", "mcq")}


with tab_of['RTS-MCQ reliability']:
    if tab_of['RTS-MCQ reliability'].open:
        pairs = alignment_views.reliability_pairs([r for r in ctx.all_runs])
        if pairs:
            st.subheader(f"RTS-MCQ reliability ({cite('003', 'Eq. 4')})")
            labels = {f"{a.run_id} + {b.run_id}": (a, b) for a, b in pairs}
            names = common_views.run_names([r for pair in pairs for r in pair])
            choice = st.selectbox("RTS and MCQ runs", list(labels),
                                  key=url.key("reliability_pair", list(labels)[0], options=labels),
                                  format_func=lambda k: " + ".join(names[r.run_id] for r in labels[k]))
            a, b = labels[choice]
            if ctx.dimension in a.dimensions or not a.dimensions:
                with st.spinner("Reliability indicator…"):
                    rel = compute.reliability(ds.id, a.run_id, b.run_id, ctx.dimension, coefficient, ctx.parse)
                    # the page's systems filter: the across-system correlations over the chosen systems only
                    rel_table = rel.table[rel.table["system_id"].isin(systems)] if systems else rel.table
                    cis = reliability_intervals(rel_table, coefficient, ctx.n_resamples)
                m1, m2 = st.columns(2)
                for col, side, pv in ((m1, "rts", rel.pvalue_rts), (m2, "mcq", rel.pvalue_mcq)):
                    ci = cis[side]
                    col.metric(f"corr(R_i, P_i {side.upper()})", ui.fmt(ci.statistic),
                               help=(f"{ci.n_systems} systems" if systems else
                                     f"p = {format_pvalue(pv)}, {ci.n_systems} systems"))
                    col.caption(f"95% CI [{ui.fmt(ci.ci_low)}, {ui.fmt(ci.ci_high)}] over {ci.n_systems} systems"
                                if ci.n_systems >= 4 else "no interval: fewer than 4 systems")
                st.caption(f"{coefficient} across systems. The intervals resample the systems (percentile bootstrap, "
                           f"{ctx.n_resamples} resamples) with each system's R_i and P_i held fixed, so they leave out "
                           "the noise of those per-system values: read them as at least this wide.")
                ui.table(rel_table, f"reliability {ctx.dimension}", "reliability")
            else:
                st.info(ui.esc(f"These runs did not score {ctx.dimension!r}."))

# ----------------------------------------------------------------------------------------------- difficulty
with tab_of['Difficulty']:
    if tab_of['Difficulty'].open:
        if runs:
            st.subheader(f"Pairwise agreement by difficulty ({cite('002')})")
            with st.spinner("Pairwise Kendall tau by difficulty…"):
                diff = compute.difficulty(ds.id, run_ids, ctx.dimension, ctx.parse, sys_t)
            if diff.empty:
                st.info("Not enough pairs of outputs of the same document.")
            else:
                ui.chart(alignment_views.difficulty_figure(diff, colors), "difficulty")
                ui.table(diff, f"pairwise tau by difficulty {ctx.dimension}", "difficulty")

# ------------------------------------------------------------------------------------ pairwise preferences
def pairwise_section() -> None:
    """Judge verdicts on annotated pairs against the human votes, as MT-Bench, PandaLM and LLMBar report them."""
    st.subheader("Pairwise preferences: judge vs human votes")
    if not has_preferences:
        st.info("This dataset has no pairwise human votes: import some with the Data page's upload (a file with a "
                "prompt, two outputs and a winner column) or `python -m evalcore import-pairs`.")
        return
    prs = preference_views.pairwise_runs(ctx.pairwise_runs, ctx.dimension)
    if not prs:
        st.info(ui.esc(f"No selected run gave pairwise verdicts on {ctx.dimension!r}: pick one in the sidebar, "
                       "import one (`python -m evalcore import-verdicts`) or judge the pairs on the Score page."))
        return
    if systems:  # the filter above is for per-item scores; votes on pairs are counted whole
        st.caption(ui.esc(f"The systems filter ({', '.join(systems)}) does not apply here: every annotated pair is "
                          "counted."))
    with st.spinner("Agreements with bootstrap CIs over prompts…"):
        sums = compute.pairwise(ds.id, tuple(r.run_id for r in prs), ctx.dimension, ctx.parse, ctx.n_resamples)
    table = preference_views.agreement_table(sums)
    ui.chart(preference_views.agreement_figure(table, colors), "pairwise_agreement")
    ui.table(table, f"pairwise agreement {ctx.dimension}", "pairwise_agreement")
    st.caption("One judge verdict per pair: in both orders, the verdict when they agree, else a tie (Zheng et al. "
               "2023, MT-Bench Sec. 4.2). With ties (S1) every vote counts, tie being a third class; without ties "
               "(S2) leaves out the votes where either side says tie. Majority: the most frequent vote (a tie when "
               "the top votes tie). Per-order accuracy, right in both orders and positional agreement as LLMBar's "
               "statistics.json, but a pair unreadable in both orders agrees only in \"LLMBar's count\". n = votes, "
               "pairs or vote pairs counted; 95% CIs resample prompts.")
    ui.table(preference_views.counts_table(sums), "pairwise counts", "pairwise_counts")
    st.caption("unreadable: pairs with a verdict that could not be read (never guessed); missing_order: pairs of a "
               "both-orders run judged in one order only. Neither has a combined verdict.")
    names = list(sums)
    picked = (st.selectbox("Run for the confusion matrix and win rates", names,
                           key=url.key("pairwise_run", names[0], options=names)) if len(names) > 1 else names[0])
    first = sums[picked]
    c1, c2 = st.columns(2)
    with c1:
        ui.chart(preference_views.confusion_figure(first, picked), "pairwise_confusion")
    kappas = preference_views.annotator_kappa_table(first)
    with c2:
        if not kappas.empty:
            st.markdown("**Cohen's kappa between annotators**")
            ui.table(kappas, "annotator kappa", "annotator_kappa")
            if kappas["cohen_kappa"].isna().any():
                st.caption("Blank: no kappa; the note says why (no shared pair, or shared votes holding one "
                           "outcome only).")
        st.markdown("**The judge against each annotator**")
        ui.table(preference_views.per_annotator_table({picked: first}), "judge per annotator", "pairwise_per_ann")
    models = preference_views.model_table(sums)
    if not models.empty:
        st.markdown("**Win rates per model** (ties count 0.5)")
        ui.chart(preference_views.win_rate_figure(models, picked), "pairwise_win_rates")
        ui.table(models, "win rates per model", "pairwise_models")
        rho = (first.get("models") or {}).get("ranking_spearman") or {}
        if rho.get("statistic") is not None:
            st.caption(ui.esc(f"Ranking by win rate: Spearman correlation of the humans' and the judge's per-model "
                              f"win rates {ui.fmt(rho['statistic'])} [{ui.fmt(rho['ci_low'])}, "
                              f"{ui.fmt(rho['ci_high'])}] over {rho['n']} models."))
    bias = preference_views.bias_table(sums)
    if not bias.empty:
        st.markdown("**Bias**")
        ui.table(bias, "pairwise bias", "pairwise_bias")
        st.caption("Position: 0.5 means no preference for the first-shown output. Verbosity (AlpacaEval's "
                   "\"prefer longer\"): decisive verdicts for the longer output (characters), beside the humans' share. "
                   "Self-preference: the judge's win rate for outputs of its own model family against others, beside "
                   "the humans' win rate for the same outputs.")


with tab_of['Pairwise preferences']:
    if tab_of['Pairwise preferences'].open:
        pairwise_section()

# whatever the tab: may the judge replace the annotators, and what may be concluded from few labels
from pages._inference import show_inference  # noqa: E402

show_inference(ctx)

ui.sources("003", "002")

# ------------------------------------------------------------------------- the rest of the table (issue 19)
# On a large study the Correlations tab computed only the cell on show. Once everything above is drawn, the other
# cells are computed here, one cached cell at a time, so switching level or coefficient (and the exported report)
# finds them ready. Any click reruns the page and abandons the cell under way (``stoppable``); the cells done stay
# cached for every session.
if fill_status is not None:
    compute.fill_alignment_cells(ds.id, run_ids, ctx.dimension, ctx.parse, ctx.n_resamples, sys_t,
                                 (level, coefficient), fill_status, ci_resampling, skip_constant)
