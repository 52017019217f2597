"""Every chart the product draws (the pages and the report) goes through here, like every CSV through csvsafe.

Charts carry no markup from the data: plotly draws a few HTML tags in any text it shows (names, tick labels,
hover texts, annotations), ``<a href>`` among them, so a system id or run label such as
``<a href="https://evil.example">M1</a>`` would become a live link in the app and the report (issue 21, item 7).

``plain_figure`` escapes ``&``, ``<`` and ``>`` in every string a figure's traces and layout carry, then gives back
the handful of attribute-free tags the views write themselves for layout (``<br>``, ``<b>``, ``<i>``, ``<sup>``,
``<sub>``, ``<extra>``): plotly decodes the entities, so the text reads exactly as typed, and no tag with an
attribute (a link, an image, a style) survives.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # plotly loads where a figure is drawn
    import plotly.graph_objects as go

_ALLOWED = re.compile(r"&lt;(/?(?:br|b|i|sup|sub|extra))&gt;")
_TRACE_TEXT = ("name", "x", "y", "z", "text", "hovertext", "customdata", "hovertemplate", "texttemplate", "labels",
               "ids", "legendgroup", "offsetgroup", "alignmentgroup", "parents", "values")


def plain(text: str) -> str:
    """``text`` with every tag but the views' own layout tags shown as typed."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _ALLOWED.sub(r"<\1>", escaped)


def _plain_value(v: object) -> object:
    if isinstance(v, str):
        return plain(v)
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "OUS":
            return np.array([_plain_value(x) for x in v.tolist()], dtype=object).reshape(v.shape) \
                if v.ndim == 1 else np.array(_plain_value(v.tolist()), dtype=object)
        return v
    if isinstance(v, (list, tuple)):
        return type(v)(_plain_value(x) for x in v)
    return v


def plain_figure(fig: object) -> go.Figure:
    """A copy of ``fig`` whose every text is plain (see the module docstring)."""
    import plotly.graph_objects as go

    out = go.Figure(fig)
    for trace in out.data:
        for attr in _TRACE_TEXT:
            if attr in trace and trace[attr] is not None:
                trace[attr] = _plain_value(trace[attr])
    for ann in out.layout.annotations or ():
        if ann.text:
            ann.text = plain(ann.text)
    for axis in [k for k in out.layout if k.startswith(("xaxis", "yaxis"))]:
        ax = out.layout[axis]
        for attr in ("ticktext", "categoryarray"):
            if ax[attr] is not None:
                ax[attr] = _plain_value(ax[attr])
        if ax.title and ax.title.text:
            ax.title.text = plain(ax.title.text)
    if out.layout.title and out.layout.title.text:
        out.layout.title.text = plain(out.layout.title.text)
    if out.layout.legend and out.layout.legend.title and out.layout.legend.title.text:
        out.layout.legend.title.text = plain(out.layout.legend.title.text)
    return out
