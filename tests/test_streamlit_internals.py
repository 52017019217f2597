"""Streamlit's private internals the app relies on, all reached through pages/_streamlit_internals.py: each is checked
here for the shape that module expects, so an upgrade that moves or reshapes one fails here, by name, instead of
as a broken Stop button or a page that opens blank. The pages import no other private Streamlit module."""

from __future__ import annotations

import contextvars
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_wrapped_internals_exist_with_the_expected_shape():
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner_utils import exceptions, script_requests, script_run_context

    assert isinstance(PagesManager.uses_pages_directory, (bool, type(None)))
    assert issubclass(exceptions.RerunException, BaseException) and issubclass(exceptions.StopException,
                                                                                BaseException)
    assert {"RERUN", "STOP"} <= {t.name for t in script_requests.ScriptRequestType}
    assert callable(getattr(script_requests.ScriptRequests, "on_scriptrunner_yield"))
    assert isinstance(script_run_context.in_cached_function, contextvars.ContextVar)
    assert script_run_context.get_script_run_ctx(suppress_warning=True) is None  # outside a session


def test_outside_cache_switches_the_recording_flag_off_and_back():
    from streamlit.runtime.scriptrunner_utils.script_run_context import in_cached_function

    from pages import _streamlit_internals as internals

    token = in_cached_function.set(True)
    try:
        with internals.outside_cache():
            assert in_cached_function.get() is False
        assert in_cached_function.get() is True
    finally:
        in_cached_function.reset(token)


def test_no_request_outside_a_session_means_no_stop():
    from pages import _streamlit_internals as internals

    internals.stop_or_rerun_requested()  # outside a script run: nothing to stop, nothing raised


@pytest.mark.parametrize("folder", ["pages", "evalcore"])
def test_nothing_else_imports_private_streamlit_or_openai_modules(folder):
    private = re.compile(r"^\s*(from|import)\s+(streamlit\.(runtime|web|elements\.lib)|openai\._)", re.M)
    offenders = [str(p.relative_to(ROOT)) for p in sorted((ROOT / folder).rglob("*.py"))
                 if p.name != "_streamlit_internals.py" and private.search(p.read_text())]
    assert offenders == []
