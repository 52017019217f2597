"""Compare: two runs side by side (prompt versions, methods or models): is one significantly better aligned?"""

from __future__ import annotations

import streamlit as st

from evalcore import views
from evalcore.views import common as common_views
from evalcore.views import compare as compare_views
from pages import _compute as compute
from pages import _render as render
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset
st.title("Compare")

candidates = compare_views.candidates(ctx.all_runs)
if len(candidates) < 2:
    render.blocks([compare_views.NO_CANDIDATES])
    st.stop()

labels = common_views.run_names(candidates)
ids = list(labels)
default_a, default_b = compare_views.default_pair(ctx.run_ids, ids)

c1, c2 = st.columns(2)
run_a = c1.selectbox("Run A", ids, key=url.key("run_a", default_a, options=ids), format_func=labels.get)
run_b = c2.selectbox("Run B", ids, key=url.key("run_b", default_b, options=ids), format_func=labels.get)
c3, c4, c5, c6 = st.columns([1, 1, 2, 2])
level = c3.selectbox("Level", list(views.LEVELS), key=url.key("level", views.LEVELS[0], options=views.LEVELS))
coefficient = c4.selectbox("Coefficient", list(views.COEFFICIENTS),
                           key=url.key("coefficient", views.COEFFICIENTS[1], options=views.COEFFICIENTS))
TESTS = tuple(compare_views.TEST_NAMES)
test = c5.selectbox("Test", list(TESTS), key=url.key("test", "bootstrap", options=TESTS),
                    format_func=compare_views.TEST_NAMES.get, help=compare_views.TEST_HELP)
# The Alignment page's systems filter, the same key: it carries between the pages, stays in the link, and the
# exported report applies it too.
systems = c6.multiselect("Systems (empty = all)", ds.systems, key=url.key("systems", [], options=ds.systems),
                         help="Compare the two runs on these systems' outputs only (the test and the list of "
                              "disagreements)")
sys_t = tuple(systems) if systems else None

if run_a == run_b:
    render.blocks([compare_views.SAME_RUN])
    st.stop()

pair = {"A": ui.load_run(run_a, ctx.parse), "B": ui.load_run(run_b, ctx.parse)}
missing = compare_views.shared_dimension_note(pair["A"], pair["B"], ctx.dimension)
render.blocks(missing or [compare_views.difference_heading(coefficient, level, ctx.dimension)])
if missing:
    st.stop()

# The two correlations first (no resampling: a fraction of a second on 200,000 items), then the paired test with
# its progress bar and Stop button (issue 19).
head = st.empty()
cell = (ds.id, run_a, run_b, ctx.dimension, level, coefficient)
with head.container():
    render.blocks([compare_views.headline(compute.paired_estimates(*cell, ctx.parse, sys_t), test, "computing…")])
res = compute.long_work(f"Paired {test} test ({ctx.n_resamples} resamples)",
                        compute.work_key("paired", *cell, ctx.n_resamples, test, ctx.parse, *([sys_t] if sys_t else [])),
                        lambda: compute.paired(*cell, ctx.n_resamples, test, ctx.parse, sys_t))
with head.container():
    render.blocks([compare_views.headline(res, test) if res is not None else
                   compare_views.headline(compute.paired_estimates(*cell, ctx.parse, sys_t), test, "stopped")])
if res is not None:
    render.blocks(compare_views.result_blocks(res, labels[run_a], labels[run_b], ctx.dimension))
render.blocks([compare_views.test_note(test, level, systems), compare_views.DISAGREEMENTS_HEADING])

top = st.number_input("Items to show", min_value=5, max_value=200, step=5, key=url.key("top", 20, bounds=(5, 200)))
with st.spinner("Ranking disagreements…"):
    dis = compute.disagreements(ds.id, run_a, run_b, ctx.dimension, ctx.parse, int(top), sys_t)
render.blocks(compare_views.disagreement_blocks(dis, ctx.dimension))
if dis.empty:
    st.stop()

item = st.selectbox("Show the texts of item", dis["item_id"].tolist(),
                    key=url.key("item", dis["item_id"].iloc[0], options=dis["item_id"].tolist()))
st.text(compare_views.scores_line(dis, item))
render.blocks(compare_views.item_blocks(ds, item, pair, labels, ctx.dimension))
