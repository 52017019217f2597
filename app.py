"""LLM-judge workbench: the Streamlit app (``streamlit run app.py``).

The sidebar holds what every page shares (dataset, runs, dimension, parse mode, bootstrap resamples, report export);
each page in ``pages/`` is a thin view over ``evalcore.views``. All view state lives in the URL's query parameters
(widgets bound with ``bind="query-params"``), so a copied URL reopens the same view.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # evalcore from the checkout even when the package is not installed
    sys.path.insert(0, str(ROOT))

from evalcore import views  # noqa: E402
from evalcore.views import common as common_views  # noqa: E402
from evalcore.views import report as report_views  # noqa: E402
from pages import _shared as ui  # noqa: E402

# Page files are named after their URL paths. Why: when a pages/ folder exists, Streamlit serves the first run of a
# session (before any st.navigation call in the process) with its legacy folder-based navigation, which runs
# pages/<url path>.py directly instead of this script. Because the names match, a shared link such as
# /alignment?... still finds its page then (no "Page not found"), and pages/_shared.context() builds this navigation
# and sidebar itself (``main(run_page=False)``). The default page is the exception: its file must NOT be named after
# its URL path, so that the legacy navigation sends "/" to this script; otherwise its widgets would get other ids in
# that first run than later, and a user's first upload would be lost.
PAGES = [
    st.Page("pages/data_page.py", title="Data", icon=":material/table:", url_path="data", default=True),
    st.Page("pages/criteria.py", title="Criteria", icon=":material/edit_note:", url_path="criteria"),
    st.Page("pages/score.py", title="Score", icon=":material/play_circle:", url_path="score"),
    st.Page("pages/alignment.py", title="Alignment", icon=":material/insights:", url_path="alignment"),
    st.Page("pages/bias.py", title="Bias", icon=":material/balance:", url_path="bias"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
    st.Page("pages/label.py", title="Label", icon=":material/label:", url_path="label"),
]


def _view_value(key: str, allowed: tuple[str, ...], default: str) -> str:
    """A page widget's value for the report: its state if the page ran in this session, else the URL's."""
    v = st.session_state.get(key) or st.query_params.get(key)
    return v if v in allowed else default


def sidebar() -> ui.Context:
    ui.store_banner()  # a store that cannot be read: said once, on every page
    with st.sidebar:
        st.markdown("### LLM-judge workbench")
        datasets = ui.dataset_list()
        ids = [d["id"] for d in datasets]
        names = {d["id"]: d.get("name") or d["id"] for d in datasets}
        if not ids:
            st.error("No dataset found: the bundled data (data/) is missing. Run scripts/build_data.py.")
            st.stop()
        pending = st.session_state.pop("_pending_dataset", None)
        if pending in ids:  # set by the Data page after an upload, before the widget exists in this run
            st.session_state["dataset"] = pending
        default = ids.index(common_views.DEFAULT_DATASET) if common_views.DEFAULT_DATASET in ids else 0
        # options stay ids: a format_func would put the shown text into the share link instead of the id
        dataset_id = st.selectbox("Dataset", ids, index=default, key="dataset", bind="query-params")
        st.text(names.get(dataset_id, dataset_id))  # a user dataset's name: shown as text, never Markdown
        with st.spinner("Loading dataset…"):
            dataset = ui.load_dataset(dataset_id)

        index = ui.run_index(dataset_id)
        run_ids = [r.run_id for r in index]
        labels = {r.run_id: common_views.run_label(r) for r in index}
        current = st.session_state.get("runs")
        pending_runs = st.session_state.pop("_pending_runs", None)  # set by the Data page after an import
        if pending_runs and all(r in run_ids for r in pending_runs):
            st.session_state["runs"] = list(pending_runs)
        elif current is None:
            if "runs" not in st.query_params:
                st.session_state["runs"] = common_views.default_run_ids(dataset_id, run_ids)
        elif any(r not in run_ids for r in current):
            # another dataset was picked: its runs replace the old selection
            st.session_state["runs"] = common_views.default_run_ids(dataset_id, run_ids)
        chosen = st.multiselect("Runs", run_ids, key="runs",
                                bind="query-params", placeholder="Pick judge runs",
                                help="Judge runs to analyse: published runs shipped with the data and your own.")
        if chosen:
            st.text("\n".join(f"• {labels.get(r, r)}" for r in chosen))

        dims = dataset.dimension_names
        dimension = st.selectbox("Dimension", dims, key="dimension", bind="query-params")
        parse = st.radio("Parse mode", list(views.PARSE_MODES), key="parse", bind="query-params", horizontal=True,
                         help="robust (default): unreadable replies are failures, excluded and counted. "
                              "paper: the published scripts' own parse rules, to reproduce their numbers. Applies to the "
                              "published runs; a run scored here keeps the mode it was scored with.")
        n_resamples = int(st.number_input("Bootstrap resamples", min_value=10, max_value=100_000,
                                          value=ui.default_resamples(), step=100, key="resamples",
                                          bind="query-params"))
        with st.spinner("Loading runs…"):
            runs = ui.runs_by_ids(list(chosen), parse)
        ctx = ui.Context(dataset_id=dataset_id, dataset=dataset, run_ids=list(chosen), runs=runs,
                         dimension=dimension, parse=parse, n_resamples=n_resamples, all_runs=index)

        params = report_views.AnalysisParams(
            dataset_id=dataset_id, run_ids=list(chosen), dimension=dimension,
            level=_view_value("level", views.LEVELS, "dataset"),
            coefficient=_view_value("coefficient", views.COEFFICIENTS, "spearman"),
            parse=parse, n_resamples=n_resamples,
            systems=[s for s in (st.session_state.get("systems") or st.query_params.get_all("systems"))
                     if s in dataset.systems] or None)
        item_runs = [r for r in runs if not r.judgments.empty or not r.comparisons.empty]

        def build_report() -> str:
            # Runs on Streamlit's download thread: plain evalcore calls only, no st.* here.
            return report_views.analysis_report(dataset, item_runs, params)

        st.download_button("Export report", data=build_report, file_name=f"judgebench-{dataset_id}.html",
                           mime="text/html", key="export_report", icon=":material/download:",
                           disabled=not item_runs,
                           help="One self-contained HTML file (tables and interactive charts, opens offline) "
                                "of the current analysis.")
    return ctx


def main(*, run_page: bool = True) -> None:
    """Navigation + sidebar, then the chosen page (``run_page=False`` when a page is already running)."""
    st.set_page_config(page_title="LLM-judge workbench", page_icon=":material/balance:", layout="wide")
    page = st.navigation(PAGES)
    st.session_state["_ctx"] = sidebar()
    if run_page:
        page.run()


if __name__ == "__main__":  # streamlit runs this file as __main__; pages import it only for the legacy first run
    main()
