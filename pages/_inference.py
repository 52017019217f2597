"""The Alignment page's two questions after agreement: may the judge replace the annotators (the Alt-Test), and what
may a study conclude from few human labels (prediction-powered estimates; Bradley-Terry rankings of pairwise data).

One function, ``show_inference``, lays out evalcore.views.inference in two expanders drawn only when opened (their
state in the URL like the rest of the view); the computations are cached in pages/_compute.py.
"""

from __future__ import annotations

import streamlit as st

from evalcore.views import inference as inference_views
from pages import _compute as compute
from pages import _shared as ui
from pages import _url as url

EPSILONS = (0.2, 0.15, 0.1)
METHODS = ("ppi++", "ppi")
BT_RESAMPLES_MAX = 200  # every resample refits two logistic regressions per source: 200 keep the page quick
ALT_TEST_SOURCE = ("Calderon, Reichart & Dror (2025). The Alternative Annotator Test for LLM-as-a-Judge: How to "
                   "Statistically Justify Replacing Human Annotators with LLMs. ACL 2025.")
PPI_SOURCES = ("Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023). Prediction-powered inference. Science 382. "
               "Angelopoulos, Duchi & Zrnic (2023). PPI++: Efficient prediction-powered inference. arXiv:2311.01453.")
BT_SOURCE = ("Chiang et al. (2024). Chatbot Arena: An Open Platform for Evaluating LLMs by Human Preference. ICML "
             "2024; length as a covariate as Arena's style control (LMSYS, 2024).")


def show_inference(ctx) -> None:
    """The two expanders, for the sidebar's dataset, runs and dimension."""
    runs = inference_views.inference_runs(ctx.dataset, ctx.runs, ctx.dimension)
    alt = st.expander("Can the judge replace the annotators? (the Alternative Annotator Test)",
                      key=url.key("alt_test_open", False), on_change="rerun")
    if alt.open:
        with alt:
            _alt_test_section(ctx, runs)
    ppi = st.expander("What may I conclude from few labels? (prediction-powered estimates"
                      + (", Bradley-Terry rankings)" if any(inference_views.is_pairwise(r) for r in runs) else ")"),
                      key=url.key("ppi_open", False), on_change="rerun")
    if ppi.open:
        with ppi:
            _ppi_section(ctx, runs)


def _filter_note() -> None:
    if st.session_state.get("systems"):  # the Alignment page's systems filter
        st.caption("These figures cover every system the runs judged: the systems filter above does not apply here.")


def _no_runs(ctx) -> None:
    st.info(ui.esc(f"No selected run judged {ctx.dimension!r} against human ratings or votes: pick one in the "
                   "sidebar."))


def _alt_test_section(ctx, runs) -> None:
    if not runs:
        _no_runs(ctx)
        return
    _filter_note()
    epsilon = st.radio("Epsilon (the cost-benefit margin)", list(EPSILONS), horizontal=True,
                       format_func=inference_views.epsilon_label, help=inference_views.EPSILON_HELP,
                       key=url.key("alt_epsilon", EPSILONS[0], options=EPSILONS))
    st.caption(inference_views.EPSILON_HELP)
    with st.spinner("Alt-Test…"):
        views = compute.alt_tests(ctx.dataset_id, tuple(r.run_id for r in runs), ctx.dimension, ctx.parse, epsilon)
    for v in views:
        say = st.success if v.result is not None and v.result.passed else st.info
        say(ui.esc(inference_views.alt_test_verdict(v)))
    scorings = sorted({v.result.scoring for v in views if v.result is not None})
    if scorings:
        st.caption(ui.esc("Alignment score with the other annotators: "
                          + "; ".join(inference_views.SCORING_WORDS[s] for s in scorings) + "."))
    ui.table(inference_views.alt_test_summary(views), f"alt-test {ctx.dimension}", "alt_test")
    ui.table(inference_views.alt_test_annotator_table(views), f"alt-test per annotator {ctx.dimension}",
             "alt_test_annotators")
    for note in inference_views.alt_test_notes(views):
        st.caption(ui.esc(note))
    st.caption("Each annotator is left out in turn: on every item they rated with at least one other annotator, "
               "the judge and the left-out annotator are each scored against the remaining annotators. H0: the "
               "share of items where the annotator does at least as well as the judge exceeds the judge's share "
               "(where the judge does at least as well as the annotator) by epsilon or more; a one-sided t-test, or a Wilcoxon signed-rank test where fewer than 30 items (the authors' "
               "advice); Benjamini-Yekutieli over the annotators at q = 0.05. judge_wins = that null rejected. "
               "winning_rate = the share of annotators the judge wins against (it passes at 50%). rho (the average "
               "advantage probability) = how often the judge is at least as good as an annotator, averaged over "
               "them: it does not depend on epsilon and is the figure to compare judges by. rho_j: the same "
               "against one annotator; annotator_advantage: how often that annotator is at least as good as the "
               "judge.")
    st.caption(ui.esc(f"Source: {ALT_TEST_SOURCE}"))


def _rated_documents(ctx, runs) -> int | None:
    """The "rated documents" slider on a fully rated dataset (None: the data as it is)."""
    full, n = compute.rating_coverage(ctx.dataset_id, tuple(r.run_id for r in runs), ctx.dimension, ctx.parse)
    if not full or n < 3:
        return None
    default = inference_views.default_rated_documents(n)
    return st.slider("Rated documents", min_value=2, max_value=n, key=url.key("ppi_rated", default, bounds=(2, n)),
                     help=f"Humans rated every judged item here. Keep the ratings of this many of the {n} documents "
                          "(drawn at random) and treat the rest as unrated, to see what PPI concludes from fewer "
                          f"labels. All {n}: PPI is then the humans' mean.")


def _ppi_section(ctx, runs) -> None:
    if not runs:
        _no_runs(ctx)
        return
    _filter_note()
    c1, c2 = st.columns([1, 2])
    method = c1.radio("Estimator", list(METHODS), horizontal=True,
                      format_func=lambda m: {"ppi++": "PPI++ (power-tuned)", "ppi": "PPI (classic)"}[m],
                      help="PPI: the judge's mean on the unrated items plus the mean of human - judge on the rated "
                           "ones. PPI++: the judge's weight lambda chosen to make the interval narrowest (never "
                           "wider than the humans alone).", key=url.key("ppi_method", METHODS[0], options=METHODS))
    with c2:
        rated = _rated_documents(ctx, runs)
    with st.spinner("Prediction-powered estimates…"):
        views = compute.ppi_estimates(ctx.dataset_id, tuple(r.run_id for r in runs), ctx.dimension, ctx.parse, method,
                                      rated, ctx.n_resamples)
    shown = [v for v in views if v.result is not None]
    for v in views:
        if v.result is None:
            st.info(ui.esc(inference_views.ppi_note(v, ctx.dimension)))
    if shown:
        names = [v.run for v in shown]
        picked = (st.selectbox("Run for the chart and the ranking", names,
                               key=url.key("ppi_run", names[0], options=names)) if len(names) > 1 else names[0])
        view = shown[names.index(picked)]
        ui.chart(inference_views.ppi_figure(view, ctx.dimension), "ppi")
        st.caption(ui.esc(inference_views.ppi_note(view, ctx.dimension)))
        ui.table(inference_views.ppi_table(shown), f"ppi {ctx.dimension}", "ppi")
        st.markdown("**Ranking by the PPI estimate**")
        ui.table(inference_views.ppi_ranking_table(view), f"ppi ranking {ctx.dimension}", "ppi_ranking")
        st.caption(ui.esc(f"rank_low / rank_high: the 95% interval of each rank over {ctx.n_resamples} resamples of "
                          "documents (documents are shared by the systems, so the ranks move together)."))
        _planning(ctx, runs[[v.run for v in views].index(picked)], view, method, rated)
    pairwise = [r for r in runs if inference_views.is_pairwise(r)]
    if pairwise:
        _bradley_terry(ctx, pairwise)
    st.caption(ui.esc(f"Sources: {PPI_SOURCES}" + (f" {BT_SOURCE}" if pairwise else "")))


def _planning(ctx, run, view, method: str, rated: int | None) -> None:
    """How many rated documents an interval of a chosen width needs, with the humans alone and with PPI."""
    st.markdown("**Planning: how many rated documents for an interval this wide?**")
    default = inference_views.default_target_width(ctx.dataset, ctx.dimension, view.pairwise)
    width = st.number_input("Target width of the 95% interval (full width)", min_value=0.001, max_value=1000.0,
                            step=0.05, format="%.3f", key=url.key("ppi_width", default, bounds=(0.001, 1000.0)))
    try:
        plan = compute.ppi_plan(ctx.dataset_id, run.run_id, ctx.dimension, ctx.parse, float(width), method, rated)
    except ValueError as e:
        st.info(ui.esc(f"No planning: {e}"))
        return
    ui.table(plan, f"ppi planning {ctx.dimension}", "ppi_plan")
    unit = "pairs of the model" if view.pairwise else "documents of the system"
    st.caption(ui.esc(f"{view.run}: rated {unit} needed for a 95% interval of width {width:g}, out of those judged, "
                      "with the humans alone and with the judge's scores on the rest; the variances are estimated "
                      "from the ratings " + ("kept." if rated is not None else "there are.")))


def _bradley_terry(ctx, pairwise) -> None:
    st.markdown("**Bradley-Terry rankings: humans vs judge**")
    names = {r.run_id: inference_views.run_label(r) for r in pairwise}
    run_id = (st.selectbox("Pairwise run", list(names), format_func=names.get,
                           key=url.key("bt_run", next(iter(names)), options=list(names)))
              if len(names) > 1 else next(iter(names)))
    n = min(ctx.n_resamples, BT_RESAMPLES_MAX)
    with st.spinner("Bradley-Terry fits with prompt resamples…"):
        comparison = compute.bradley_terry(ctx.dataset_id, run_id, ctx.dimension, ctx.parse, n)
    if isinstance(comparison, str):
        st.info(ui.esc(f"No Bradley-Terry ranking: {comparison}"))
        return
    ui.chart(inference_views.bt_figure(comparison, names[run_id]), "bradley_terry")
    st.caption(ui.esc(inference_views.bt_summary(comparison)))
    ui.table(inference_views.bt_table(comparison), f"bradley-terry {ctx.dimension}", "bradley_terry")
    ui.chart(inference_views.length_figure(comparison, names[run_id]), "bt_length")
    ui.table(inference_views.bt_length_table(comparison), f"length coefficient {ctx.dimension}", "bt_length")
    ui.table(inference_views.bt_pairs_table(comparison), f"bradley-terry pairs {ctx.dimension}", "bt_pairs")
    st.caption(ui.esc(f"Scores on the Elo scale (400 points = ten-to-one odds; mean 1000), a tie half a win for each "
                      f"side; 95% intervals from {n} resamples of prompts. The length coefficient is the log-odds of "
                      "winning per standard deviation of the normalised length difference, fitted with the models "
                      "(Arena's style control): above 0 the longer output is favoured. separate: the two models' 95% "
                      "intervals do not overlap; a_above_share: the share of resamples where model_a scores above "
                      "model_b."))
