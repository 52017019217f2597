"""A self-contained HTML report of an analysis: tables and interactive plotly charts in one file.

The file must open offline and be safe to pass around, so:

* plotly.js is inlined once (``include_plotlyjs=True`` on the first chart, ``False`` after): no CDN, no external
  ``<script src>``;
* every text that comes from a dataset or a judge reply (item ids, system names, notes) is HTML-escaped; a table
  cell holding ``<script>`` shows the characters, it never runs;
* each table also carries its CSV inside a ``data:`` link so a reader can take the numbers away without the app.

No Streamlit here: the app hands the result to ``st.download_button``; the CLI or a notebook can write it to disk.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import math
from dataclasses import dataclass, field
from typing import Any, SupportsFloat, SupportsInt

import pandas as pd

from evalcore.chartsafe import plain_figure

FLOAT_FORMAT = "{:.4f}"


@dataclass
class ReportTable:
    title: str
    frame: pd.DataFrame
    note: str = ""


@dataclass
class ReportFigure:
    title: str
    figure: Any  # plotly.graph_objects.Figure
    note: str = ""


@dataclass
class ReportSection:
    title: str
    text: str = ""  # plain text; escaped and shown with line breaks kept
    tables: list[ReportTable] = field(default_factory=list)
    figures: list[ReportFigure] = field(default_factory=list)


def format_cell(x: object) -> str:
    """How a table cell is written: floats with 4 decimals, missing as an empty cell, everything else as str."""
    if x is None:
        return ""
    if isinstance(x, float):
        if math.isnan(x):
            return ""
        return FLOAT_FORMAT.format(x)
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        try:
            return format_cell(x.item())
        except (ValueError, AttributeError):
            pass
    if isinstance(x, (list, tuple)):
        return ", ".join(format_cell(v) for v in x)
    return str(x)


def _whole_column(col: pd.Series) -> bool:
    """A float column whose every value is a whole number (counts such as n, which a NaN made float)."""
    if not pd.api.types.is_float_dtype(col):
        return False
    v = col.dropna().to_numpy()
    return len(v) > 0 and bool((v == v.round()).all())


def _whole_cell(x: SupportsInt | None) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else str(int(x))


def _percent_cell(x: SupportsFloat | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{float(x):.1f}%"


def table_html(frame: pd.DataFrame) -> str:
    """An escaped HTML table (written by hand rather than DataFrame.to_html so every cell goes through one
    formatter and one escaper)."""
    from evalcore.views.format import format_pvalue, format_rate, is_percent_column, is_pvalue_column, is_rate_column

    cols = [str(c) for c in frame.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    # p-values as "<0.001"/"0.961", rates and percent columns as percentages, counts held as floats as whole
    # numbers, as on the pages (issue 18.13: "1200.0000", "83.3333")
    formatters = [(lambda v: format_pvalue(v, missing="")) if is_pvalue_column(c) else
                  (lambda v: format_rate(v, missing="")) if is_rate_column(c) else
                  _percent_cell if is_percent_column(c) else
                  _whole_cell if _whole_column(frame.iloc[:, i]) else format_cell for i, c in enumerate(cols)]
    rows = []
    for rec in frame.itertuples(index=False, name=None):
        cells = []
        for v, fmt in zip(rec, formatters):
            try:
                text = fmt(v)
            except (TypeError, ValueError):
                text = format_cell(v)
            # a short text (a run's name, a system id) stays on one line: squeezed by a wide table it wrapped a
            # word per line ("Shen / et al. / · / gpt-4-..."); long notes still wrap
            cls = (' class="num"' if isinstance(v, (int, float)) and not isinstance(v, bool) else
                   ' class="short"' if len(text) <= 40 else "")
            cells.append(f"<td{cls}>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            '</div>')


def _csv_link(frame: pd.DataFrame, name: str) -> str:
    from evalcore.csvsafe import to_csv_safe

    data = base64.b64encode(to_csv_safe(frame).encode("utf-8")).decode("ascii")
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:60] or "table"
    return f'<a class="csv" download="{safe}.csv" href="data:text/csv;base64,{data}">CSV</a>'


_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
h1{font-size:1.6rem} h2{font-size:1.25rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
h3{font-size:1.05rem;margin-bottom:.3rem}
table{border-collapse:collapse;font-size:.85rem;margin:.4rem 0 1rem 0}
th,td{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums} th{background:#f5f5f5}
td.num,td.short{white-space:nowrap} div.scroll{overflow-x:auto;max-width:100%}
.note,.meta{color:#555;font-size:.85rem;white-space:pre-wrap} a.csv{font-size:.8rem;margin-left:.6rem}
"""


def render_report(title: str, sections: list[ReportSection], *, meta: dict[str, Any] | None = None) -> str:
    """One HTML document holding every section; plotly.js inlined once so the file works offline."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    meta = dict(meta or {})
    meta.setdefault("generated", _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    parts.append('<div class="meta">' + "<br>".join(
        f"<b>{html.escape(str(k))}</b>: {html.escape(format_cell(v))}" for k, v in meta.items()) + "</div>")
    plotly_included = False
    for section in sections:
        parts.append(f"<section><h2>{html.escape(section.title)}</h2>")
        if section.text:
            parts.append(f'<p class="note">{html.escape(section.text)}</p>')
        for t in section.tables:
            parts.append(f"<h3>{html.escape(t.title)}{_csv_link(t.frame, t.title)}</h3>")
            if t.note:
                parts.append(f'<p class="note">{html.escape(t.note)}</p>')
            parts.append(table_html(t.frame))
        for f in section.figures:
            parts.append(f"<h3>{html.escape(f.title)}</h3>")
            if f.note:
                parts.append(f'<p class="note">{html.escape(f.note)}</p>')
            # The first chart carries plotly.js itself; the others reuse it. No CDN: the file must open offline.
            parts.append(plain_figure(f.figure).to_html(full_html=False, include_plotlyjs=not plotly_included,
                                          config={"displaylogo": False}))
            plotly_included = True
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
