"""The only module of the app that reaches into Streamlit's private internals; every use is wrapped here and
checked by tests/test_streamlit_internals.py, which fails loudly when an upgrade moves one of them.

Why each one is needed (no public API does it, as of Streamlit 1.56 to 1.67):
* a long numpy computation makes no st.* call, so it never notices that its session asked to stop or rerun (a
  Stop button, a widget change, the tab closed): ``stop_or_rerun_requested`` polls the session's script requests as
  Streamlit does at every st.* call, and raises the same exceptions;
* a progress bar drawn from inside an ``st.cache_data`` function would be recorded and replayed on every cache hit:
  ``outside_cache`` switches the recording flag off for the drawing;
* a page file opened by its URL on a fresh server runs in the legacy multipage mode that a top-level ``pages/``
  folder (fixed by the product card) puts Streamlit in, until ``st.navigation`` runs: ``legacy_pages_mode`` tells.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx, in_cached_function


def stop_or_rerun_requested() -> None:
    """Raise Streamlit's own RerunException / StopException when this session asked to rerun or stop."""
    ctx = get_script_run_ctx(suppress_warning=True)
    requests = getattr(ctx, "script_requests", None)
    if requests is None:
        return
    request = requests.on_scriptrunner_yield()
    if request is None:
        return
    if request.type == ScriptRequestType.RERUN:
        raise RerunException(request.rerun_data)
    raise StopException()


@contextlib.contextmanager
def outside_cache() -> Iterator[None]:
    """Draw while a cached computation runs without recording the drawing for replay on a cache hit."""
    token = in_cached_function.set(False)
    try:
        yield
    finally:
        in_cached_function.reset(token)


def legacy_pages_mode() -> bool:
    """True while Streamlit runs page files on their own (before the app's ``st.navigation`` ran)."""
    return bool(PagesManager.uses_pages_directory)


__all__ = ["stop_or_rerun_requested", "outside_cache", "legacy_pages_mode", "RerunException", "StopException"]
