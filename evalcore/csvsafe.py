"""CSV that a spreadsheet opens as data, never as formulas (CSV/formula injection).

A cell whose text begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is run as a formula by Excel,
LibreOffice and Google Sheets (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``). Dataset, system and dimension names
come from uploaded files, so every CSV the product writes passes through here. Following OWASP's "CSV Injection"
advice, such a text cell gets a leading single quote, which spreadsheets show as text. Numbers stay numbers: a
numeric column is left alone, and so is a text cell that is a plain number ("-0.5", "+3", "-1e-3"), which no
spreadsheet runs as a formula.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Iterable, Mapping

import pandas as pd

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def _is_plain_number(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and "(" not in text


def safe_cell(value: Any) -> Any:
    """``value`` unchanged unless it is text a spreadsheet would run as a formula; then ``'`` + the text."""
    if isinstance(value, str) and value.startswith(TRIGGERS) and not _is_plain_number(value):
        return "'" + value
    return value


def neutralise(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every formula-like text cell (and column name) quoted; numeric columns untouched."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or isinstance(out[col].dtype, pd.StringDtype):
            out[col] = [safe_cell(v) for v in out[col]]
        elif isinstance(out[col].dtype, pd.CategoricalDtype):
            out[col] = [safe_cell(v) for v in out[col].astype(object)]
    out.columns = [safe_cell(c) if isinstance(c, str) else c for c in out.columns]
    return out


def to_csv_safe(frame: pd.DataFrame, **kw: Any) -> str:
    """``frame.to_csv`` (index off unless asked) after ``neutralise``: the one way the product writes a frame.
    Lines end in CRLF (RFC 4180), which also makes pandas quote a cell holding a bare CR: unquoted, a spreadsheet
    would start a new row there."""
    kw.setdefault("index", False)
    kw.setdefault("lineterminator", "\r\n")
    return neutralise(frame).to_csv(**kw)


def write_rows(out: Any, columns: list[str], rows: Iterable[Mapping[str, Any]]) -> int:
    """Write dict rows as CSV to the text stream ``out`` (None -> empty cell), every cell through ``safe_cell``."""
    w = csv.DictWriter(out, fieldnames=[safe_cell(c) for c in columns])
    w.writeheader()
    n = 0
    for r in rows:
        w.writerow({safe_cell(k): ("" if v is None else safe_cell(v)) for k, v in r.items()})
        n += 1
    return n


def rows_to_csv(columns: list[str], rows: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO(newline="")
    write_rows(buf, columns, rows)
    return buf.getvalue()


__all__ = ["TRIGGERS", "safe_cell", "neutralise", "to_csv_safe", "write_rows", "rows_to_csv"]
