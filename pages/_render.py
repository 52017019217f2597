"""Lays out a view model's blocks (evalcore.views.blocks) with Streamlit: the one place a block becomes a widget."""

from __future__ import annotations

from typing import Iterable

import streamlit as st

from evalcore.views.blocks import (
    Action,
    Block,
    Expander,
    Figure,
    Heading,
    Metrics,
    Note,
    Section,
    Table,
    Text,
)
from pages import _shared as ui

_NOTE = {"info": st.info, "caption": st.caption, "warning": st.warning, "error": st.error, "success": st.success,
         "markdown": st.markdown}


def blocks(items: Iterable[Block]) -> None:
    """Each block in order (an Action is drawn as a disabled-or-not button whose press the page reads itself: use
    ``action``)."""
    for b in items:
        block(b)


def sections(items: Iterable[Section]) -> None:
    for s in items:
        blocks(s.all_blocks())


def block(b: Block) -> bool | None:
    if isinstance(b, Heading):
        (st.subheader if b.level <= 2 else st.markdown)(b.text if b.level <= 2 else f"**{b.text}**")
    elif isinstance(b, Note):
        _NOTE[b.kind](b.text)
    elif isinstance(b, Table):
        (ui.static_table(b.frame, b.name, b.key) if b.static else ui.table(b.frame, b.name, b.key, height=b.height))
    elif isinstance(b, Figure):
        ui.chart(b.figure, b.key)
    elif isinstance(b, Text):
        ui.plain(b.label, b.text, b.key)
    elif isinstance(b, Expander):
        with st.expander(b.title, expanded=b.expanded):
            blocks(b.blocks)
    elif isinstance(b, Metrics):
        for col, m in zip(st.columns(max(1, len(b.items))), b.items):
            col.metric(m.label, m.value, help=m.help)
    elif isinstance(b, Action):
        return action(b)
    else:
        raise TypeError(f"not a view block: {type(b).__name__}")
    return None


def action(a: Action, **button_kw) -> bool:
    """The action's button (disabled with its reason when it cannot be pressed); True when pressed."""
    pressed = st.button(a.label, key=a.key, disabled=not a.allowed, help=a.reason if not a.allowed else None,
                        **button_kw)
    if not a.allowed and a.reason:
        st.caption(a.reason)
    return bool(pressed)
