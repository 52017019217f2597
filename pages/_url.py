"""View state in the URL, written out in full: a copied link reopens exactly the view it was copied from.

Streamlit's own ``bind="query-params"`` drops a parameter from the URL whenever the widget holds its default value,
and a value set through session state before the first render never reaches the URL. A link copied then depends
on defaults computed when it is opened: the runs preselected for a dataset, the first dimension, which change as
runs are scored. So the app keeps the URL itself:

* ``key("level", "dataset", options=LEVELS)`` before a widget created with ``key=`` (and no ``index=``,
  ``value=`` or ``default=`` of its own): the first time the key is met in a session its value comes from the URL,
  else from ``default``; a value that is no longer allowed (another dataset was picked) falls back to ``default``.
  The value is written to the URL right away (defaults too), so a page that stops early (``st.stop()``, after
  which Streamlit sends nothing more) still has its state in the URL. It returns the key, so the call reads
  ``st.selectbox("Level", LEVELS, key=url.key("level", "dataset", ...))``. A list that is empty is written as
  ``?runs=`` so that "no runs" stays explicit.
* ``sync()`` after the page ran (pages/_nav.py does it): parameters that no widget of this run owns are dropped.

The API key field never goes through here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import streamlit as st

_SEEN = "_url_keys"  # the keys met in the current run, in order
_STREAMLIT_OWN = ("embed", "embed_options")  # Streamlit's own parameters: left as they are


def begin() -> None:
    """Start of a script run: forget the keys of the previous run (pages/_nav.py calls it first thing)."""
    st.session_state[_SEEN] = {}


def _from_url(name: str, default: Any) -> Any:
    """The URL's value for ``name`` converted to the type of ``default``, or None when absent or unreadable."""
    if name not in st.query_params:
        return None
    if isinstance(default, (list, tuple)):
        return [v for v in st.query_params.get_all(name) if v != ""]
    raw = st.query_params.get(name, "")
    try:
        if isinstance(default, bool):
            return {"true": True, "false": False}.get(raw.lower())
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            x = float(raw)
            return x if math.isfinite(x) else None
    except ValueError:
        return None
    return raw


def _allowed(value: Any, default: Any, options: Iterable | None, bounds: tuple[float, float] | None) -> bool:
    if value is None:
        return False
    if isinstance(default, (list, tuple)):
        if not isinstance(value, list):
            return False
        return options is None or all(v in options for v in value)
    if type(value) is not type(default) and not (isinstance(default, float) and isinstance(value, int)):
        return False
    if options is not None and value not in options:
        return False
    if bounds is not None and not (bounds[0] <= value <= bounds[1]):
        return False
    return True


def key(name: str, default: Any, *, options: Iterable | None = None,
        bounds: tuple[float, float] | None = None) -> str:
    """Seed the widget state ``name`` (URL first, else ``default``), keep it valid, and write it to the URL."""
    options = list(options) if options is not None else None
    state = st.session_state
    if name not in state:
        from_url = _from_url(name, default)
        if isinstance(default, (list, tuple)) and from_url is not None and options is not None:
            from_url = [v for v in from_url if v in options]  # a run deleted since the link was copied
        state[name] = from_url if _allowed(from_url, default, options, bounds) else _copy(default)
    elif not _allowed(state[name], default, options, bounds):
        if isinstance(default, (list, tuple)) and isinstance(state[name], list) and options is not None:
            kept = [v for v in state[name] if v in options]
            state[name] = kept if kept else _copy(default)
        else:
            state[name] = _copy(default)
    else:
        # Re-set the value as the app's own: a widget of another page with the same key (Level, Coefficient on
        # Alignment and Compare) has another widget id, and Streamlit would give the new widget its default
        # instead of the value picked there (issue 18.9). Streamlit's documented way to carry a widget's value
        # across pages.
        state[name] = state[name]
    state.setdefault(_SEEN, {})[name] = default
    _write(name, _encode(state[name]))
    return name


def _write(name: str, value: list[str] | str) -> None:
    qp = st.query_params
    if qp.get_all(name) != (value if isinstance(value, list) else [value]):
        try:
            qp[name] = value
        except Exception:  # noqa: BLE001 - a parameter bound to a widget (bind="query-params") is Streamlit's
            pass


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


def _encode(value: Any) -> list[str] | str:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value] or [""]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def state() -> dict[str, list[str] | str]:
    """What the URL should say after this run: every key met, in order, with its value now."""
    seen = st.session_state.get(_SEEN, {})
    return {name: _encode(st.session_state.get(name, default)) for name, default in seen.items()}


def sync() -> None:
    """Make the URL say ``state()``: set what differs, drop parameters no widget of this run owns."""
    wanted = state()
    qp = st.query_params
    for name in [k for k in qp if k not in wanted and k not in _STREAMLIT_OWN]:
        try:
            del qp[name]
        except Exception:  # noqa: BLE001 - a parameter bound to a widget (bind="query-params") is Streamlit's
            pass
    for name, value in wanted.items():  # values changed after their widget's key() call (a page's own reset)
        _write(name, value)
