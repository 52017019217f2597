"""CSV that a spreadsheet opens as data, never as formulas (CSV/formula injection).

A cell whose text begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is run as a formula by Excel,
LibreOffice and Google Sheets (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``). Dataset, system and dimension names
come from uploaded files, so every CSV the product writes passes through here. Following OWASP's "CSV Injection"
advice, such a text cell gets a leading single quote, which spreadsheets show as text. Numbers stay numbers: a
numeric column is left alone, and so is a text cell that is a plain number ("-0.5", "+3", "-1e-3"), which no
spreadsheet runs as a formula.

A cell is also quoted whenever it holds a field separator of any common locale (``,`` ``;`` tab ``|``), as OWASP
advises: a spreadsheet set to split on ``;`` (German, French, ... Excel) would otherwise cut ``ok;=1+2`` into two
cells, the second of them a formula that no leading quote protects.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Iterable, Mapping, TextIO

import pandas as pd

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
# Characters that make a field quoted: the separators of the common locales, the quote itself and line breaks.
QUOTED_IF = frozenset(',;\t|"\r\n')


def _is_plain_number(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and "(" not in text


def safe_cell(value: object) -> object:
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


def _line(fields: list[str], sep: str = ",") -> str:
    """One CSV line (CRLF, RFC 4180): a field holding any QUOTED_IF character is quoted (its quotes doubled); a
    lone empty field is quoted too, so the line is not read as a blank one (as the csv module writes it)."""
    if fields == [""]:
        return '""\r\n'
    return sep.join('"' + f.replace('"', '""') + '"' if not QUOTED_IF.isdisjoint(f) or sep in f else f
                    for f in fields) + "\r\n"


def to_csv_safe(frame: pd.DataFrame, **kw: object) -> str:
    """``frame.to_csv`` (index off unless asked) after ``neutralise``: the one way the product writes a frame.
    Lines end in CRLF (RFC 4180). pandas writes each value as it does (numbers, missing cells); the fields are then
    quoted by QUOTED_IF (read back with the csv module, which undoes pandas' own quoting exactly)."""
    kw.setdefault("index", False)
    kw.setdefault("lineterminator", "\r\n")
    sep = str(kw.get("sep", ","))
    text = neutralise(frame).to_csv(**kw)
    return "".join(_line(row, sep) for row in csv.reader(io.StringIO(text, newline=""), delimiter=sep))


def _text(value: object) -> str:
    """A cell as the csv module writes it: None empty, anything else its str()."""
    return "" if value is None else str(safe_cell(value))


def write_rows(out: TextIO, columns: list[str], rows: Iterable[Mapping[str, object]]) -> int:
    """Write dict rows as CSV to the text stream ``out`` (None -> empty cell, a missing key too), every cell through
    ``safe_cell`` and quoted by QUOTED_IF. A key that is not a column is an error, as with csv.DictWriter."""
    out.write(_line([_text(c) for c in columns]))
    n = 0
    for r in rows:
        extra = set(r) - set(columns)
        if extra:
            raise ValueError(f"dict contains fields not in fieldnames: {', '.join(map(repr, sorted(extra)))}")
        out.write(_line([_text(r.get(c)) for c in columns]))
        n += 1
    return n


def rows_to_csv(columns: list[str], rows: Iterable[Mapping[str, object]]) -> str:
    buf = io.StringIO(newline="")
    write_rows(buf, columns, rows)
    return buf.getvalue()


__all__ = ["TRIGGERS", "QUOTED_IF", "safe_cell", "neutralise", "to_csv_safe", "write_rows", "rows_to_csv"]
