"""Compare: two runs side by side (prompt versions, methods or models): is one significantly better aligned?"""

from __future__ import annotations

import streamlit as st

from evalcore import views
from evalcore.views import common as common_views
from evalcore.views import compare as compare_views
from pages import _compute as compute
from evalcore.meta.compare import few_documents_warning
from evalcore.views.format import format_pvalue
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset
st.title("Compare")

candidates = [r for r in ctx.all_runs if r.method not in ("h2h", "pairwise")]
if len(candidates) < 2:
    st.info("Comparing needs two runs with per-item scores on this dataset. Score the dataset on the **Score** page "
            "(for example the same method with two prompt versions, or two models).")
    st.stop()

labels = common_views.run_names(candidates)
ids = list(labels)
sel = [r for r in ctx.run_ids if r in labels]
default_a = sel[0] if sel else ids[0]
default_b = sel[1] if len(sel) > 1 else next(i for i in ids if i != default_a)

c1, c2 = st.columns(2)
run_a = c1.selectbox("Run A", ids, key=url.key("run_a", default_a, options=ids), format_func=labels.get)
run_b = c2.selectbox("Run B", ids, key=url.key("run_b", default_b, options=ids), format_func=labels.get)
c3, c4, c5, c6 = st.columns([1, 1, 2, 2])
level = c3.selectbox("Level", list(views.LEVELS), key=url.key("level", views.LEVELS[0], options=views.LEVELS))
coefficient = c4.selectbox("Coefficient", list(views.COEFFICIENTS),
                           key=url.key("coefficient", views.COEFFICIENTS[1], options=views.COEFFICIENTS))
TEST_NAMES = {"bootstrap": "equal correlation (paired bootstrap)",
              "permutation": "exchangeable judges (permutation)"}
test = c5.selectbox("Test", list(TEST_NAMES), key=url.key("test", "bootstrap", options=tuple(TEST_NAMES)),
                    format_func=TEST_NAMES.get,
                    help="equal correlation (paired bootstrap): documents resampled jointly for both runs; tests "
                         "whether the two runs correlate equally well with the humans (its size is checked by "
                         "simulation in tests/test_meta_compare.py). exchangeable judges (permutation): A/B scores "
                         "swapped per document; tests the stronger null that the two judges' scores are "
                         "interchangeable, so it can reject when the correlations are equal but the judges differ "
                         "(scale, ties, spread)")
# The Alignment page's systems filter, the same key: it carries between the pages, stays in the link, and the
# exported report applies it too.
systems = c6.multiselect("Systems (empty = all)", ds.systems, key=url.key("systems", [], options=ds.systems),
                         help="Compare the two runs on these systems' outputs only (the test and the list of "
                              "disagreements)")
sys_t = tuple(systems) if systems else None

if run_a == run_b:
    st.warning("Pick two different runs.")
    st.stop()

run_a_obj = ui.load_run(run_a, ctx.parse)
run_b_obj = ui.load_run(run_b, ctx.parse)
shared = [d for d in run_a_obj.dimensions if d in run_b_obj.dimensions]
if ctx.dimension not in shared:
    st.info(ui.esc(f"The two runs do not both score {ctx.dimension!r}; dimensions they share: "
                   f"{', '.join(shared) or 'none'}. Pick one in the sidebar."))
    st.stop()

st.subheader(f"Difference in {coefficient} ({level} level) on {ui.esc(ctx.dimension)}")
head = st.empty()


def headline(r, state: str = "") -> None:
    """The two correlations and their difference; the interval and p-value once the resamples are done (``state``
    says what happens to them meanwhile: "computing…" or "stopped")."""
    with head.container():
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Run A", ui.fmt(r.statistic_a))
        m2.metric("Run B", ui.fmt(r.statistic_b))
        m3.metric("A − B", ui.fmt(r.difference),
                  help=f"95% CI {state}" if state else f"95% CI [{ui.fmt(r.ci_low)}, {ui.fmt(r.ci_high)}]")
        m4.metric("p-value", state or format_pvalue(r.pvalue), help=f"{TEST_NAMES[test]}, n = {r.n}")


# The two correlations first (no resampling: a fraction of a second on 200,000 items), then the paired test with
# its progress bar and Stop button (issue 19).
headline(compute.paired_estimates(ds.id, run_a, run_b, ctx.dimension, level, coefficient, ctx.parse, sys_t),
         "computing…")
what = f"Paired {test} test ({ctx.n_resamples} resamples)"
res = compute.long_work(what, compute.work_key("paired", ds.id, run_a, run_b, ctx.dimension, level, coefficient,
                                               ctx.n_resamples, test, ctx.parse, *([sys_t] if sys_t else [])),
                        lambda: compute.paired(ds.id, run_a, run_b, ctx.dimension, level, coefficient,
                                               ctx.n_resamples, test, ctx.parse, sys_t))
if res is None:
    headline(compute.paired_estimates(ds.id, run_a, run_b, ctx.dimension, level, coefficient, ctx.parse, sys_t),
             "stopped")
else:
    headline(res)
    few = few_documents_warning(res)
    if few:
        st.warning(ui.esc(few))
    summary = compare_views.paired_summary(res, labels[run_a], labels[run_b])
    ui.table(summary, f"paired difference {ctx.dimension} {level} {coefficient}", "paired")
if test == "bootstrap":
    answers = "The p-value answers: do the two runs correlate equally well with the humans? "
else:
    answers = ("The p-value answers: are the two judges' scores interchangeable? A small p does not by itself say "
               "that one correlates better with the humans; read the paired bootstrap for that. ")
items_note = "Both runs are compared on the same items (those both parsed" + (
    f", of the systems {', '.join(systems)})" if systems else ")")
if level == "summary":
    items_note += (", and at the summary level averaged over the documents where both runs' correlations are "
                   "defined, so a run's figure here can differ from the Alignment page, which averages each run over "
                   "its own defined documents")
st.caption(ui.esc(f"Test: {TEST_NAMES[test]}. {answers}{items_note}."))

st.subheader("Where the two runs disagree most")
top = st.number_input("Items to show", min_value=5, max_value=200, step=5, key=url.key("top", 20, bounds=(5, 200)))
with st.spinner("Ranking disagreements…"):
    dis = compute.disagreements(ds.id, run_a, run_b, ctx.dimension, ctx.parse, int(top), sys_t)
if dis.empty:
    st.info("The runs share no parsed items on this dimension.")
    st.stop()
ui.table(dis, f"disagreements {ctx.dimension}", "disagreements")
st.caption("rank_gap: difference of the items' percentile ranks under the two runs (scales may differ).")

item = st.selectbox("Show the texts of item", dis["item_id"].tolist(),
                    key=url.key("item", dis["item_id"].iloc[0], options=dis["item_id"].tolist()))
texts = compare_views.item_texts(ds, item)
row = dis[dis["item_id"] == item].iloc[0]
st.text(f"Run A: {row['judge_a']:.4g}   Run B: {row['judge_b']:.4g}   human: {row['human']:.4g}")
ui.plain("Evaluated output", texts.get("output", ""))
ui.plain("Source", texts.get("source", ""))
if texts.get("context"):
    ui.plain("Context", texts["context"])
if texts.get("references"):
    ui.plain("References", texts["references"])
with st.expander("Judge replies"):
    for name, run in (("A", run_a_obj), ("B", run_b_obj)):
        j = run.judgments[(run.judgments["item_id"] == item) & (run.judgments["dimension"] == ctx.dimension)]
        ui.plain(f"Run {name} ({labels[run.run_id]})", "" if j.empty else str(j["raw"].iloc[0]))
