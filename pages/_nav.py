"""JudgeScope's navigation and sidebar: the one place that builds them. ``app.py`` calls ``main()``; pages call
``pages/_shared.context()``, which comes here. This module imports pages/_loaders, pages/_identity and pages/_url only: no cycle.

Adding a page: append it to ``PAGE_SPECS``. Its file must be named after its URL path (``pages/<url>.py``):
when a ``pages/`` folder sits beside the main script, Streamlit (still in 1.67) serves the first run of a server
process, and every run under ``AppTest``, with its legacy folder-based navigation, which runs ``pages/<url path>.py``
on its own, without app.py. ``context()`` notices and runs ``main()`` from there: this navigation resolves the same
URL to the same page (same name, so the same widget ids as in later runs) and runs it, sidebar first.

The first page is the default one, served at "/". Streamlit gives a default page no other path, so ``/data`` (its
file's name, what a user types) is a hidden page that forwards to "/" with the same query string.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from evalcore.parsers import PARSE_MODES
from evalcore.views import common as common_views
from pages import _handoff as handoff
from pages import _identity as identity
from pages import _loaders as ui
from pages import _url as url

APP_NAME = "JudgeScope"
# the level and coefficient names (evalcore.meta.correlation's), here without importing the statistics modules in
# every run of the sidebar (the Data page needs none of them)
LEVELS = ("dataset", "summary", "system")
COEFFICIENTS = ("pearson", "spearman", "kendall")

# (file, title, icon, url path): the navigation's pages in order; the first is the default one, served at "/".
PAGE_SPECS = [
    ("pages/data.py", "Data", ":material/table:", "data-home"),
    ("pages/criteria.py", "Criteria", ":material/edit_note:", "criteria"),
    ("pages/score.py", "Score", ":material/play_circle:", "score"),
    ("pages/alignment.py", "Alignment", ":material/insights:", "alignment"),
    ("pages/bias.py", "Bias", ":material/balance:", "bias"),
    ("pages/compare.py", "Compare", ":material/compare_arrows:", "compare"),
    ("pages/jury.py", "Jury", ":material/groups:", "jury"),
    ("pages/improve.py", "Improve the judge", ":material/trending_up:", "improve"),
    ("pages/label.py", "Label", ":material/label:", "label"),
    ("pages/campaigns.py", "Campaigns", ":material/assignment_ind:", "campaigns"),
]
FIRST_PAGE_ALIAS_PATH = "data"


def pages() -> list:
    """Fresh ``st.Page`` objects for this run. Never module-level ones: ``st.navigation`` marks the page it returns
    as callable on the object itself, so objects shared by every session let one session's run unmark another's
    (six sessions opened at once: "This page cannot be called directly", issue 21 item 11)."""
    return [st.Page(f, title=t, icon=i, url_path=u, default=(n == 0)) for n, (f, t, i, u) in enumerate(PAGE_SPECS)]


def _to_first_page() -> None:
    """/data: forward to the first page at "/", keeping the query string (the link keeps its state)."""
    qp = st.query_params
    st.switch_page(pages()[0], query_params=[(k, v) for k in qp for v in qp.get_all(k)])


def _first_page_alias():
    return st.Page(_to_first_page, title="Data", url_path=FIRST_PAGE_ALIAS_PATH, visibility="hidden")


def default_dimension(dimensions: list[str], run_ids: list[str]) -> str:
    """The dimension a dataset opens on: the first one a selected run scored, else the dataset's first."""
    scored = {d for r in run_ids for d in ui.run_dimensions(r)}
    return next((d for d in dimensions if d in scored), dimensions[0])


def _dataset_picker() -> str:
    datasets = ui.dataset_list()
    ids = [d["id"] for d in datasets]
    names = dataset_names(datasets)
    if not ids:
        st.error("No dataset found: the bundled data (data/) is missing. Run scripts/build_data.py.")
        st.stop()
    default = common_views.DEFAULT_DATASET if common_views.DEFAULT_DATASET in ids else ids[0]
    if "dataset" not in st.session_state and st.query_params.get("dataset", "") not in ("", *ids):
        _link_not_shown()  # the link's dataset is not this viewer's to open (or no longer exists)
    url.key("dataset", default, options=ids)
    pending = handoff.take_dataset()
    if pending in ids:  # set by the Data page after an upload, before the widget exists in this run
        st.session_state["dataset"] = pending
        url.key("dataset", default, options=ids)  # to the URL at once
    # by name (an upload's id is user-6a61f3048b88); a selectbox shows its options as plain text, never Markdown
    dataset_id = st.selectbox("Dataset", ids, key="dataset", format_func=lambda i: names.get(i, i),
                              help=ui.esc(f"{names.get(st.session_state.get('dataset'), '')} "
                                          f"(id {st.session_state.get('dataset')})"))  # the whole name, its id
    return dataset_id


def dataset_names(datasets: list[dict]) -> dict[str, str]:
    """{dataset id: what a picker shows}: the dataset's name; where two share a name, the id after it."""
    names = {d["id"]: (d.get("name") or d["id"]) for d in datasets}
    counts: dict[str, int] = {}
    for n in names.values():
        counts[n] = counts.get(n, 0) + 1
    return {i: n if counts[n] == 1 else f"{n} ({i})" for i, n in names.items()}


def _runs_picker(dataset_id: str, run_ids: list[str], labels: dict[str, str]) -> list[str]:
    if "runs" not in st.session_state and any(r and r not in run_ids for r in st.query_params.get_all("runs")):
        _link_not_shown()
    url.key("runs", common_views.default_run_ids(dataset_id, run_ids), options=run_ids)
    # A run that finished on the Score page joins the selection (set there; the widget exists only from here on).
    added = [r for r in handoff.take_runs() if r in run_ids]
    if added:
        st.session_state["runs"] = list(dict.fromkeys(list(st.session_state["runs"]) + added))
        url.key("runs", common_views.default_run_ids(dataset_id, run_ids), options=run_ids)  # to the URL at once
    # each run once, by its name (a second list of the same runs under the picker repeated them)
    chosen = st.multiselect("Runs", run_ids, key="runs", placeholder="Pick judge runs",
                            format_func=lambda r: labels.get(r, r),
                            help="Judge runs to analyse: published runs shipped with the data and your own.")
    return list(chosen)


LINK_NOT_SHOWN = ("This link points to a dataset or run that is not shared with you (or that no longer exists): "
                  "it is left out, and the page shows what you may see instead.")
_LINK_NOTE = "_link_not_shown"


def _link_not_shown() -> None:
    """A link naming a dataset or run this session may not see is not rewritten silently: the page says so (the
    same words whether it is someone's private upload or does not exist, so a link reveals nothing)."""
    st.session_state[_LINK_NOTE] = ""  # the page it is said on: filled in by main()


def sidebar() -> ui.Context:
    with st.sidebar:
        st.markdown(f"### {APP_NAME}")
        identity.sidebar_box()
        dataset_id = _dataset_picker()
        with st.spinner("Loading dataset…"):
            dataset = ui.load_dataset(dataset_id)

        index = ui.run_index(dataset_id)
        run_ids = [r.run_id for r in index]
        labels = common_views.run_names(index)
        chosen = _runs_picker(dataset_id, run_ids, labels)

        dims = dataset.dimension_names
        default_dim = default_dimension(dims, chosen)
        opened = st.session_state.get("_dimension_for")
        if opened is not None and opened != dataset_id:
            st.session_state["dimension"] = default_dim  # another dataset: start on a dimension its runs scored
        st.session_state["_dimension_for"] = dataset_id
        dimension = st.selectbox("Dimension", dims, key=url.key("dimension", default_dim, options=dims))
        parse_modes = list(PARSE_MODES)
        parse = st.radio("Parse mode", parse_modes, key=url.key("parse", parse_modes[0], options=parse_modes),
                         horizontal=True,
                         help="robust (default): unreadable replies are failures, excluded and counted. "
                              "paper: the published scripts' own parse rules, to reproduce their numbers. Applies to "
                              "the published runs; a run scored here keeps the mode it was scored with.")
        n_resamples = int(st.number_input("Bootstrap resamples", min_value=10, max_value=10_000, step=100,
                                          key=url.key("resamples", ui.default_resamples(), bounds=(10, 10_000))))
        ctx = ui.Context(dataset_id=dataset_id, dataset=dataset, run_ids=chosen, dimension=dimension, parse=parse, n_resamples=n_resamples, all_runs=index)
        _export_button(ctx)
    return ctx


def _export_button(ctx: ui.Context) -> None:
    """"Export report": a click builds the report of this view in this run, under a progress bar with a Stop button
    (on a large study it takes a while; issue 19), then offers it for download until the view changes. The report
    is built from the pages' cached results (pages/_compute.report) and cached for every session."""
    # The page's own controls, as this run knows them: its widget state if it ran in this session, else the URL's.
    view = {k: st.session_state.get(k) or st.query_params.get(k) for k in ("level", "coefficient")}
    systems = list(st.session_state.get("systems") or st.query_params.get_all("systems"))
    level = view["level"] if view["level"] in LEVELS else "dataset"
    coefficient = view["coefficient"] if view["coefficient"] in COEFFICIENTS else "spearman"
    args = (ctx.dataset_id, tuple(ctx.run_ids), ctx.dimension, level, coefficient, ctx.parse, ctx.n_resamples,
            tuple(s for s in systems if s in ctx.dataset.systems) or None)
    key = "report:" + hashlib.sha1(repr(args).encode()).hexdigest()[:12]
    if st.session_state.get("_report_ready") != key:
        asked = st.button("Export report", key="export_report", icon=":material/download:", disabled=not ctx.run_ids,
                          help="Build one self-contained HTML file (tables and interactive charts, opens offline) "
                               "of the current analysis, then download it.")
        if not asked:
            return
    # the statistics modules load here, not in every run of the sidebar (the Data page needs none of them)
    from pages import _compute as compute

    if st.session_state.get("_report_ready") != key:
        compute.stopped().discard(key)  # a click asks again for a report stopped before
        if compute.long_work("Building the report", key, lambda: compute.report(*args)) is None:
            return
        st.session_state["_report_ready"] = key
    st.download_button("Download report", data=compute.report(*args),
                       file_name=f"{APP_NAME.lower()}-{ctx.dataset_id}.html", mime="text/html",
                       key="download_report", icon=":material/download:", type="primary",
                       help="The report of the current analysis: one self-contained HTML file (tables and "
                            "interactive charts, opens offline).")


def context() -> ui.Context:
    """The sidebar's state for the page that is running (pages/_shared.context() is this)."""
    from pages._streamlit_internals import legacy_pages_mode

    if legacy_pages_mode() or st.session_state.get("_ctx") is None:
        # Legacy first run: this page file was run on its own. Run the app as app.py would (its st.navigation
        # ends the legacy mode), this page included, then stop this outer run, which has drawn nothing yet.
        # The legacy flag is the class's, shared by every session: two sessions opening at once on a fresh server
        # can find it already cleared by the other's st.navigation, with no sidebar state of their own yet (one
        # in ten of bench_pages.py --big's visits showed an error page), so a run with no context is one too.
        main()
        st.stop()
    return st.session_state["_ctx"]


def main() -> None:
    """Navigation, sidebar, the chosen page; then the URL is made to carry the whole view (pages/_url.py)."""
    st.set_page_config(page_title=APP_NAME, page_icon=":material/balance:", layout="wide")
    page = st.navigation([*pages(), _first_page_alias()])
    url.begin()
    handoff.new_script_run()  # a refused sign-in is said once per run (pages/_identity)
    if page.url_path == FIRST_PAGE_ALIAS_PATH:
        _to_first_page()
    st.session_state["_ctx"] = sidebar()
    if _LINK_NOTE in st.session_state:
        # said above the page the link opened, until another page is opened
        if st.session_state[_LINK_NOTE] in ("", page.url_path):
            st.session_state[_LINK_NOTE] = page.url_path
            st.warning(LINK_NOT_SHOWN, icon=":material/link_off:")
        else:
            del st.session_state[_LINK_NOTE]
    identity.forget_shown()  # the runs this script run loads: counted after the page
    try:
        page.run()
    finally:
        identity.count_looks()  # a held-out test part's run the page loaded is a counted look (pages/_identity)
        url.sync()
