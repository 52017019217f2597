"""A look at a held-out test part outside the Improve page's final check is a counted check (evalcore.align.loop):
a run the loop scored on a test part, opened on Compare, Alignment or any page that loads runs, is recorded as a
final check of the viewer on that test part, once per session and test part (Compare's two runs are one look), and
the page says so."""

from __future__ import annotations

import streamlit as st

from evalcore.align import loop
from pages import _identity as identity


def count_look(run_id: str) -> None:
    """Count ``run_id`` as a look at its test part for this session's user (nothing for any other run)."""
    part = loop.test_part_of(run_id)
    if part is None:
        return
    seen = st.session_state.setdefault("_test_part_looks", set())
    if part in seen:
        return
    from evalcore.store import StoreError, default_store
    from pages._loaders import esc

    try:
        number = loop.count_look(default_store(), run_id, identity.owner(), "a page other than Improve")
    except StoreError:
        return  # no store: no run of the loop to load either
    seen.add(part)
    if number is not None:
        st.info(esc(f"Run {run_id} was scored on a held-out test part by the Improve page: looking at its agreement "
                    f"is a final check, counted as your check number {number} on that test part."))
