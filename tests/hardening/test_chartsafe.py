"""Charts carry no links or markup from the data (evalcore.chartsafe; issue 21, item 7)."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from hypothesis import given
from hypothesis import strategies as st

from evalcore.chartsafe import plain, plain_figure
from evalcore.views.html_report import ReportFigure, ReportSection, render_report

EVIL = '<a href="https://evil.example/x">M1</a>'
IMG = '<img src="https://evil.example/p.png">'


def _html_unescape(s: str) -> str:
    return s.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@given(st.text())
def test_plain_reads_as_typed_once_plotly_decodes_it(text):
    """What plotly shows (entities decoded) is the text as typed, except the attribute-free layout tags."""
    out = plain(text)
    assert "<a " not in out and "<img" not in out
    if not any(t in text.lower() for t in ("<br>", "<b>", "<i>", "<sup>", "<sub>", "<extra>", "</")):
        assert _html_unescape(out) == text


def test_the_views_own_layout_tags_survive():
    assert plain("M1<br>(12 items)") == "M1<br>(12 items)"
    assert plain(f"{EVIL}<br>x") == '&lt;a href="https://evil.example/x"&gt;M1&lt;/a&gt;<br>x'


def test_system_ids_run_labels_and_facets_are_plain_in_app_and_report():
    df = pd.DataFrame({"system_id": [EVIL, "M2"], "r": [0.1, 0.2], "run": [IMG, "ok"]})
    fig = px.bar(df, x="system_id", y="r", color="run", facet_col="run", hover_data=["system_id"])
    fig.add_trace(go.Scatter(x=[1], y=[1], name=EVIL, hovertemplate=f"{IMG}<br>%{{x}}<extra>{EVIL}</extra>"))
    safe = plain_figure(fig)
    blob = safe.to_json()
    assert "<a " not in blob and "<img" not in blob and "\\u003ca " not in blob and "\\u003cimg" not in blob
    assert "<br>" in safe.data[-1].hovertemplate and "<extra>" in safe.data[-1].hovertemplate
    html = render_report("r", [ReportSection("s", figures=[ReportFigure("f", fig)])])
    assert 'href="https://evil.example' not in html and 'src="https://evil.example' not in html
    assert fig.data[0].x[0] == EVIL  # the caller's figure is left as it was
