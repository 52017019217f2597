"""Share links carry their whole state (issue 8): the app writes every piece of view state to the URL, defaults
included, so a link opens the same view after other runs were scored; a dataset opens on a dimension its runs
scored; the navigation lives in pages/_nav.py, which imports neither app.py nor pages/_shared.py.

AppTest, as in test_app_pages.py: a temporary store, few resamples, no OPENAI_* variable.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
import inspect  # noqa: E402

from streamlit.testing.v1 import AppTest, app_test  # noqa: E402

# The server keeps blank parameters (``?runs=``: no runs); older AppTests drop them when they read the URL back.
APPTEST_KEEPS_BLANK = "keep_blank_values=True" in inspect.getsource(app_test)

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
TIMEOUT = 60
GPT4_RTS = "summeval/shen-gpt-4-0314-rts"
CHATGPT_RTS = "summeval/shen-gpt-3.5-turbo-0301-rts"


pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py


def open_link(page: str | None = None, **query) -> AppTest:
    """A new session on ``page`` (pages/<page>.py; None: "/") with ``query`` as its URL's query string."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    if page:
        at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def link_of(at: AppTest) -> dict[str, list[str]]:
    """The URL's query string after the last run (what a user copies): each parameter's values as a list."""
    def values(v) -> list[str]:
        return list(v) if isinstance(v, (list, tuple)) else [v]

    return {k: values(at.query_params[k]) for k in at.query_params}


def test_default_state_is_in_the_url():
    """Defaults are written out: a link copied from a fresh start names its dataset, runs, dimension and the rest."""
    at = open_link()
    q = link_of(at)
    assert q["dataset"] == ["summeval"]
    assert q["runs"] == [GPT4_RTS, CHATGPT_RTS]
    assert q["dimension"] == ["coherence"] and q["parse"] == ["robust"] and q["resamples"] == ["20"]
    assert q["data_section"] == ["Preview"] and q["preview_rows"] == ["20"]

    al = open_link("alignment")
    q = link_of(al)
    assert q["level"] == ["dataset"] and q["coefficient"] == ["spearman"] and q["section"] == ["Correlations"]
    if APPTEST_KEEPS_BLANK:
        assert q["systems"] == [""]  # and so is empty
    assert "api_key" not in q
    items = open_link("alignment", section="Judge vs human scores")
    assert link_of(items)["items_points"] == ["false"]  # off is explicit too


def test_explicit_empty_runs_stay_empty():
    at = open_link("alignment", runs="")
    assert at.sidebar.multiselect(key="runs").value == []
    if APPTEST_KEEPS_BLANK:
        assert link_of(at)["runs"] == [""]


def test_link_reopens_the_same_runs_after_another_run_was_scored():
    """zhang_pairs ships no run: it opens on the newest local run. A link copied before a second run was scored
    must still open the first one (before the fix the preselected run was left out of the URL)."""
    from evalcore.datasets import load_dataset
    from evalcore.judge.client import endpoint_from_preset
    from tests.judge_calls import score_dataset
    from evalcore.methods.presets import criteria_for
    from evalcore.testing.loopback import serve

    ds = load_dataset("zhang_pairs")
    crit = {"overall": criteria_for("rts", ds.id, "overall") or _criteria(ds)}
    with serve() as judge:
        ep = endpoint_from_preset("vllm", model="loopback-judge", base_url=judge.base_url)
        first = score_dataset(ds, method="rts", criteria_by_dim=crit, endpoint=ep, limit=4, run_id="zhang_pairs/first")
        at = open_link("alignment", dataset="zhang_pairs")
        assert at.sidebar.multiselect(key="runs").value == [first.run_id]
        link = link_of(at)
        score_dataset(ds, method="rts", criteria_by_dim=crit, endpoint=ep, limit=4, run_id="zhang_pairs/second",
                      label="second")
    from pages import _loaders

    _loaders.forget_runs()  # what 30 s (the run list's time to live) would do in a running app
    fresh = open_link("alignment", dataset="zhang_pairs")
    assert fresh.sidebar.multiselect(key="runs").value == ["zhang_pairs/second"]  # the newest: the default moved
    again = open_link("alignment", **link)
    assert again.sidebar.multiselect(key="runs").value == [first.run_id]
    assert link_of(again) == link


def _criteria(ds):
    from evalcore.types import Criteria

    return Criteria("overall", "Rate the text.", "Overall quality", 1, 5, "1. Read.")


def test_dataset_opens_on_a_dimension_its_runs_scored():
    """Topical-Chat's first dimension, understandability, is one its bundled G-Eval run did not score."""
    from evalcore.runs import run_dimensions

    at = open_link(dataset="topical_chat")
    runs = at.sidebar.multiselect(key="runs").value
    assert runs == ["topical_chat/chiang-lee-gpt-3.5-geval"]
    assert "understandability" not in run_dimensions(runs[0])
    assert at.sidebar.selectbox(key="dimension").value == "naturalness"  # the first dimension the run scored
    assert link_of(at)["dimension"] == ["naturalness"]

    # switching datasets in a session starts the new one on a dimension its runs scored, too
    at = open_link(dataset="summeval", dimension="fluency")
    at.sidebar.selectbox(key="dataset").set_value("topical_chat").run()
    assert at.sidebar.selectbox(key="dimension").value == "naturalness"
    # while a link's explicit dimension is kept
    at = open_link(dataset="topical_chat", dimension="understandability")
    assert at.sidebar.selectbox(key="dimension").value == "understandability"


def test_link_values_that_no_longer_exist_fall_back_to_defaults():
    at = open_link("alignment", dataset="summeval", runs=[GPT4_RTS, "summeval/deleted-run"], dimension="nope",
                   level="galaxy", resamples="5")
    assert at.sidebar.multiselect(key="runs").value == [GPT4_RTS]
    assert at.sidebar.selectbox(key="dimension").value == "coherence"
    assert at.selectbox(key="level").value == "dataset"
    assert at.sidebar.number_input(key="resamples").value == 20  # below the minimum of 10: the default


def test_navigation_module_imports_neither_app_nor_shared():
    """pages/_nav.py builds the navigation and sidebar; pages reach it through pages/_shared.py: no import cycle."""
    def imports(path: Path) -> set[str]:
        tree = ast.parse(path.read_text())
        out = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                out |= {f"{node.module}.{a.name}" for a in node.names} | {node.module}
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
        return out

    nav = imports(ROOT / "pages" / "_nav.py")
    assert "app" not in nav and "pages._shared" not in nav
    loaders = imports(ROOT / "pages" / "_loaders.py")
    # the loaders import only the sign-in reader (their lists are per user), which imports only the session's
    # hand-offs between pages, which import no page module
    assert {m for m in loaders if m.startswith("pages")} <= {"pages", "pages._identity"}
    assert {m for m in imports(ROOT / "pages" / "_identity.py") if m.startswith("pages")} <= {"pages", "pages._handoff"}
    assert not {m for m in imports(ROOT / "pages" / "_handoff.py") if m.startswith("pages")}
    for page in (ROOT / "pages").glob("*.py"):
        assert "app" not in imports(page), page
    app_imports = imports(ROOT / "app.py")
    assert "pages._nav" in app_imports
