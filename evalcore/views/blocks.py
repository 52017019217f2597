"""The vocabulary of a page's view model: what a page shows, as plain values, in the order it shows them.

A view function (``evalcore.views.<page>``) returns a list of blocks (or a dataclass holding such lists, one per part
of the page between its widgets); the page lays the blocks out with ``pages._render.blocks`` and wires its widgets to
library calls. Nothing here imports Streamlit: the same blocks are what the tests read, and what the HTML report and
the CLI's ``--json`` are built from where they show the same thing (datasette's idea: a page is a data structure
first, then its rendering).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Union

import pandas as pd

NoteKind = Literal["info", "caption", "warning", "error", "success", "markdown"]


@dataclass(frozen=True)
class Heading:
    """A section's title (``level`` 2 is a subheader, 3 a smaller one)."""

    text: str
    level: int = 2


@dataclass(frozen=True)
class Note:
    """A sentence the page says: ``info`` (what to do next), ``caption`` (how to read a table), ``warning``,
    ``error``, ``success``, or ``markdown`` (plain text with emphasis). ``text`` is already escaped where it quotes
    user data (``evalcore.views.format.esc``) or is written to be shown as Markdown."""

    text: str
    kind: NoteKind = "info"


@dataclass(frozen=True)
class Table:
    """A table with its CSV download beside it; ``name`` is the download's name, ``key`` the widget key."""

    frame: pd.DataFrame
    name: str
    key: str
    height: int | str = "auto"
    static: bool = False  # a small table drawn as plain HTML


@dataclass(frozen=True)
class Figure:
    """A plotly figure."""

    figure: Any
    key: str


@dataclass(frozen=True)
class Text:
    """A dataset text or a judge's reply: shown verbatim, never interpreted as Markdown or HTML. ``label`` is plain
    text too (it may quote a run's name): the page escapes it when it draws it, so a view passes it unescaped."""

    label: str
    text: str
    key: str | None = None


@dataclass(frozen=True)
class Expander:
    """Blocks folded under a title."""

    title: str
    blocks: tuple["Block", ...] = ()
    expanded: bool = False


@dataclass(frozen=True)
class Metric:
    """A headline figure."""

    label: str
    value: str
    help: str | None = None


@dataclass(frozen=True)
class Metrics:
    """Headline figures in one row."""

    items: tuple[Metric, ...] = ()


@dataclass(frozen=True)
class Action:
    """A button the page offers and what pressing it costs: ``calls`` requests, ``cost_usd`` dollars (None: unknown),
    ``allowed`` False with ``reason`` when it cannot be pressed now."""

    label: str
    key: str
    calls: int = 0
    cost_usd: float | None = None
    allowed: bool = True
    reason: str | None = None


Block = Union[Heading, Note, Table, Figure, Text, Expander, Metrics, Action]


@dataclass
class Section:
    """A titled part of a page: its blocks in order. ``title`` None: no heading."""

    title: str | None
    blocks: list[Block] = field(default_factory=list)

    def all_blocks(self) -> list[Block]:
        return ([Heading(self.title)] if self.title else []) + list(self.blocks)


def tables(blocks: list[Block] | tuple[Block, ...]) -> list[Table]:
    """Every table among ``blocks``, those inside expanders included (what tests and ``--json`` read)."""
    out: list[Table] = []
    for b in blocks:
        if isinstance(b, Table):
            out.append(b)
        elif isinstance(b, Expander):
            out += tables(b.blocks)
    return out


def notes(blocks: list[Block] | tuple[Block, ...], kind: str | None = None) -> list[str]:
    """The text of every note among ``blocks`` (of one ``kind`` if given), those inside expanders included."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Note) and (kind is None or b.kind == kind):
            out.append(b.text)
        elif isinstance(b, Expander):
            out += notes(b.blocks, kind)
    return out
