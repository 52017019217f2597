"""Jury: several judges as a panel. How they agree with each other and with the humans, a jury made from them (a
derived run every page reads), the jury against the best single judge, and cost against agreement."""

from __future__ import annotations

import streamlit as st

from evalcore import jury as jury_mod
from evalcore.views import jury as jv
from evalcore.views.common import run_names
from evalcore.views.blocks import Table
from pages import _handoff as handoff
from pages import _loaders as loaders
from pages import _render as render
from pages import _shared as ui
from pages import _url as url

COEFFICIENTS = ("spearman", "kendall", "pearson")


@st.cache_resource(show_spinner=False, max_entries=16)
def matrix(dataset_id: str, run_ids: tuple[str, ...], versions: tuple[str, ...], dimension: str, parse: str,
           coefficient: str, n_resamples: int):
    runs = [ui.load_run(r, parse) for r in run_ids]
    return jury_mod.agreement_matrix(ui.load_dataset(dataset_id), runs, dimension, coefficient=coefficient,
                                     n_resamples=n_resamples)


@st.cache_resource(show_spinner=False, max_entries=16)
def correlations(dataset_id: str, run_ids: tuple[str, ...], versions: tuple[str, ...], dimension: str, parse: str,
                 coefficient: str, n_resamples: int):
    runs = [ui.load_run(r, parse) for r in run_ids]
    return jv.correlation_rows(ui.load_dataset(dataset_id), runs, dimension, coefficient=coefficient,
                               n_resamples=n_resamples)


ctx = ui.context()
ds = ctx.dataset
st.title("Jury")
st.caption("Several judges as a panel: do they agree with each other, and does their jury agree with the humans "
           "better than the best of them alone?")
scored = [r for r in ui.run_index(ds.id) if ctx.dimension in loaders.run_dimensions(r.run_id)]
ids = [r.run_id for r in scored]
names = run_names(scored)
default = [r for r in ctx.run_ids if r in ids] or ids[:5]
coefficient = st.selectbox("Coefficient", COEFFICIENTS, key=url.key("jury_coefficient", "spearman",
                                                                    options=COEFFICIENTS))
chosen = st.multiselect("Judges", ids, key=url.key("jury_runs", default, options=ids), format_func=names.get,
                        help="Runs that scored this dimension item by item (a jury is one of them too).")
chosen = [r for r in chosen if not ui.load_run(r, ctx.parse).judgments.empty]
if len(chosen) < 2:
    st.info("Pick two or more judges that scored this dimension item by item.")
    st.stop()

key = (ds.id, tuple(chosen), ui.run_versions(tuple(chosen)), ctx.dimension, ctx.parse, coefficient,
       ctx.n_resamples)
with st.spinner("The agreement matrix…"):
    mat, humans = matrix(*key)
render.blocks(jv.agreement_blocks([names[r] for r in chosen], mat, humans,
                                  jury_mod.agreement_measure(ds, ctx.dimension, coefficient)))

# ---------------------------------------------------------------------------------------------- make a jury
st.subheader("Make a jury of these judges")
c1, c2, c3 = st.columns(3)
aggregate = c1.selectbox("Aggregate", jury_mod.AGGREGATES, format_func=lambda a: f"{a}: {jv.AGGREGATE_HELP[a]}",
                         key=url.key("jury_aggregate", "mean", options=jury_mod.AGGREGATES))
tie = c2.selectbox("Tie rule (majority)", jury_mod.TIE_RULES, format_func=jv.TIE_HELP.get,
                   key=url.key("jury_tie", "low", options=jury_mod.TIE_RULES))
weights = c3.selectbox("Weights", ("equal", "calibrated"), key=url.key("jury_weights", "equal",
                                                                      options=("equal", "calibrated")))
n_docs = ds.items["doc_id"].nunique()
cal = st.number_input("Calibration documents (calibrated weights: learned there, the jury holds the others)",
                      min_value=2, max_value=max(2, n_docs - 1), value=min(30, max(2, n_docs // 3)),
                      key="jury_cal_docs", disabled=weights == "equal")
name = st.text_input("Jury name", value=f"{aggregate}-of-{len(chosen)}", key="jury_name")
if st.button("Make the jury", type="primary", key="jury_make"):
    spec = jury_mod.JurySpec(tuple(chosen), aggregate=aggregate, tie=tie, weights=weights,
                             calibration_docs=int(cal) if weights == "calibrated" else 0)
    try:
        run = jury_mod.make_jury(ds.id, spec, name, parse=ctx.parse)
        jury_mod.save_jury(run)
    except ValueError as e:
        st.error(ui.esc(str(e)))
    else:
        ui.forget_runs()
        handoff.open_runs([run.run_id])
        st.session_state["jury_shown"] = run.run_id
        st.success(ui.esc(f"Saved as run {run.run_id}: every page reads it like any other run."))

# ------------------------------------------------------------------------------------- the jury and the best
juries = [r for r in ui.run_index(ds.id) if r.method == jury_mod.METHOD and ctx.dimension in
          loaders.run_dimensions(r.run_id)]
if juries:
    st.subheader("A jury against its judges")
    jids = [r.run_id for r in juries]
    jnames = run_names(juries)
    shown = st.session_state.get("jury_shown")
    jid = st.selectbox("Jury", jids, format_func=jnames.get,
                       key=url.key("jury_shown", shown if shown in jids else jids[0], options=jids))
    jury_run = ui.load_run(jid, ctx.parse)
    members = [m for m in jury_run.config["jury"]["members"]]
    all_ids = tuple(members + [jid])
    table = correlations(ds.id, all_ids, ui.run_versions(all_ids), ctx.dimension, ctx.parse, coefficient,
                         ctx.n_resamples)
    render.blocks([Table(table.drop(columns=["run_id"]), "jury and judges", "jury_judges", static=True)])
    best = jv.best_single(table, coefficient)
    if best:
        with st.spinner("Paired test against the best single judge…"):
            render.blocks(jv.versus_best_blocks(ds, jury_run, ui.load_run(best, ctx.parse), ctx.dimension,
                                                coefficient=coefficient, n_resamples=ctx.n_resamples))
    runs = {r: ui.load_run(r, ctx.parse) for r in all_ids}
    render.blocks(jv.cost_blocks(jv.cost_table(table, runs, coefficient), coefficient, jv.price_sources(runs)))

ui.sources("003")
