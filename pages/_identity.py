"""Who is using the app, on a server whose operator turned sign-in on (evalcore.identity has the rules; this module
only reads Streamlit's request: the trusted proxy's header, or ``st.user`` after ``st.login``).

Off (the default, one researcher on a laptop): :func:`viewer` is None and nothing is scoped or fixed, as before.
On: :func:`user` is the signed-in user (or None for a visitor who has not signed in), :func:`viewer` scopes every
listing to what that user may see, :func:`owner` is the name recorded on what they write.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import streamlit as st

from evalcore.identity import (IdentityError, UntrustedRequest, User, Viewer, header_name, proxy_secret,
                               user_from_claims, user_from_headers)
from pages import _handoff as handoff


def _request_headers() -> list[tuple[str, str]]:
    """The headers of this session's websocket handshake (``st.context.headers``, Streamlit 1.37 and later) as
    (name, value) pairs, a repeated header once per value (``get_all``: its mapping view keeps one of them)."""
    try:
        h = st.context.headers
        return [(k, v) for k in h for v in (h.get_all(k) if hasattr(h, "get_all") else [h[k]])]
    except Exception:  # noqa: BLE001 - no request (a bare script run): no header
        return []


def oidc_configured() -> bool:
    """Streamlit's own sign-in is usable: ``st.login`` exists and the operator configured ``[auth]`` in secrets."""
    if not hasattr(st, "login") or not hasattr(st, "user"):
        return False
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file: not configured
        return False


def _header() -> str | None:
    return _setting(header_name)


def _secret() -> str | None:
    return _setting(proxy_secret)


def _setting(read: Callable[[Any], str | None]) -> str | None:
    """The operator's sign-in setting ``read`` from the environment; a page that says so and stops when unusable."""
    try:
        return read(os.environ)
    except IdentityError as e:
        st.error("Sign-in is misconfigured:")
        st.text(str(e))  # text: a message may quote the setting as written
        st.stop()


def _refused(what: str, e: IdentityError) -> None:
    """A refused sign-in: the message, then why as plain text (the value is the visitor's: as Markdown, an image in
    it would be fetched and a link drawn). Said once per script run, however many times the page asks who is
    signed in (pages/_nav.main clears the flag at the start of each run)."""
    if not handoff.first_refusal():
        return
    st.error(what)
    st.text(str(e))


def sign_in_configured() -> bool:
    return _header() is not None or oidc_configured()


def user() -> User | None:
    """The signed-in user of this session, or None (not signed in, or sign-in off)."""
    header = _header()
    if header is not None:
        try:
            return user_from_headers(_request_headers(), header, _secret())
        except UntrustedRequest as e:
            _refused("This request did not come through the sign-in proxy: not signed in.", e)
            return None
        except IdentityError as e:
            _refused(f"The sign-in header {header} holds no usable user name: not signed in.", e)
            return None
    if oidc_configured():
        try:
            return user_from_claims(st.user.to_dict())
        except IdentityError as e:
            _refused("The sign-in gave no usable user name: not signed in.", e)
    return None


def viewer() -> Viewer | None:
    """What this session may see: None (sign-in off: everything, as before), else the signed-in user's view."""
    if not sign_in_configured():
        return None
    u = user()
    return Viewer(u.name if u else None)


def lab_viewer() -> Viewer | None:
    """What every session may see (no one's private rows): for results cached for all sessions at once."""
    return Viewer(None) if sign_in_configured() else None


def owner() -> str | None:
    """The name recorded on what this session writes (None: sign-in off or not signed in)."""
    u = user() if sign_in_configured() else None
    return u.name if u else None


def scope_key(v: Viewer | None) -> str:
    """A cache key part for a viewer: "" unscoped, "-" not signed in, else the user's name."""
    return "" if v is None else ("-" if v.user is None else v.user)


def viewer_of(key: str) -> Viewer | None:
    return None if key == "" else Viewer(None if key == "-" else key)


def sidebar_box() -> None:
    """In the sidebar: who is signed in, and the way to sign in or out (only when the operator turned sign-in on)."""
    if not sign_in_configured():
        return
    u = user()
    if u is not None:
        st.text(f"Signed in as {u.name}")  # text, not Markdown: a name is never markup or a link
        if u.via == "oidc":
            st.button("Sign out", key="sign_out", on_click=st.logout, icon=":material/logout:")
        return
    st.caption("Not signed in: you see what the lab shares, and cannot label or save.")
    if oidc_configured():
        st.button("Sign in", key="sign_in", on_click=st.login, icon=":material/login:")


def share_toggle(what: str, key: str, shared: bool, on_change: Callable[[bool], Any]) -> None:
    """"Share with the lab" for a row the signed-in user owns (the caller checks that)."""
    widget = f"share_{key}"
    st.session_state[widget] = shared  # the store's value, not this session's memory of an older one

    def changed() -> None:
        on_change(bool(st.session_state[widget]))

    st.toggle(f"Share {what} with the lab", key=widget, on_change=changed,
              help="Off: only you see it. On: everyone signed in to this server sees it (read-only).")


_SHOWN = "_runs_shown"  # the ids of the runs loaded in this script run (pages/_loaders.load_run)


def note_shown(run_id: str) -> None:
    st.session_state.setdefault(_SHOWN, set()).add(run_id)


def forget_shown() -> None:
    """Before a page: no run loaded yet in this script run."""
    st.session_state.pop(_SHOWN, None)


def count_looks() -> None:
    """After a page: each run it loaded that the Improve loop scored on a held-out test part (its record says so)
    is a look at that test part (:func:`count_look`). Called by pages/_nav.main, never by a loader."""
    for run_id in sorted(st.session_state.pop(_SHOWN, set())):
        count_look(run_id)


def count_look(run_id: str) -> None:
    """A look at a held-out test part outside the Improve page's final check is a counted check of this user
    (evalcore.align.loop.count_look): a run the loop scored on a test part, loaded by any page (Compare, Alignment),
    is recorded once per session and test part (Compare's two runs are one look), and the page says so."""
    from evalcore.align import loop
    from evalcore.store import StoreError, default_store

    try:
        store = default_store()
        part = loop.test_part_of(store, run_id)
        if part is None or part in st.session_state.setdefault("_test_part_looks", set()):
            return
        number = loop.count_look(store, run_id, owner(), "a page other than Improve")
    except StoreError:
        return  # no store: no run of the loop to load either
    st.session_state["_test_part_looks"].add(part)
    if number is not None:
        st.info("A run scored on a held-out test part by the Improve page is shown here: looking at its agreement is "
                f"a final check, counted as your check number {number} on that test part.")


def offer_toggle(offer: Any, on_change: Callable[[bool], Any]) -> None:
    """The toggle of a share offer (evalcore.views.sharing.ShareOffer) the library made for this user."""
    share_toggle(offer.what, offer.key, offer.shared, on_change)
