"""Cells to values: identifiers, texts, references and ratings, one cell at a time and a whole column at once.

The column functions work on unique values only (a 1,000,000-row long file repeats its ids and texts), so the
per-cell Python functions run once per distinct cell, not once per row.
"""

from __future__ import annotations

import decimal
import json
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

REFERENCE_SEPARATOR = "|||"
_BLOCK = 100_000


def is_blank(v: object) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return isinstance(v, str) and v.strip() == ""


def id_text(v: object) -> str | None:
    """An identifier as text; None when blank. Integral floats (Parquet int columns with nulls) lose their ".0"."""
    if is_blank(v):
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def text(v: object) -> str | None:
    """A text verbatim; None when missing. Non-strings (a number as output) become their str()."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return v if isinstance(v, str) else str(v)


def references(v: object) -> tuple[str, ...]:
    """A reference cell -> references: a JSON list, "|||"-separated strings, a list value, or one text."""
    if isinstance(v, (list, tuple, np.ndarray)):
        return tuple(x if isinstance(x, str) else str(x) for x in v if not is_blank(x))
    if is_blank(v):
        return ()
    if not isinstance(v, str):
        return (str(v),)
    if v.lstrip().startswith("["):
        try:
            parsed = json.loads(v)
        except (json.JSONDecodeError, RecursionError):
            parsed = None  # a reference may simply start with "[" ("[CNN] ..."): then it is one text
        if isinstance(parsed, list) and all(isinstance(x, str) for x in parsed):
            return tuple(x for x in parsed if x.strip())
    if REFERENCE_SEPARATOR in v:
        # the whitespace around the separator is layout, not part of a reference
        return tuple(p.strip() for p in v.split(REFERENCE_SEPARATOR) if p.strip())
    return (v,)


def _shown(v: object) -> str:
    """A cell as quoted in a message: short, whatever its size."""
    try:
        s = repr(v) if isinstance(v, str) else str(v)
    except ValueError:  # an integer past Python's 4,300-digit conversion limit
        return "(an integer of more than 4,300 digits)"
    return s if len(s) <= 60 else s[:40] + f"... ({len(s)} characters)"


def parse_rating(v: object) -> tuple[float | None, str | None]:
    """(value, None) for a number, (None, None) for a blank cell, (None, why) for anything else."""
    if is_blank(v):
        return None, None
    if isinstance(v, (bool, np.bool_)):
        return None, f"a rating must be a number, not the boolean {v!r}"
    if isinstance(v, (int, np.integer)):
        try:
            x = float(v)
        except OverflowError:
            digits = int(int(v).bit_length() * 0.30103) + 1
            return None, (f"rating of about {digits} digits is too large: a rating must be a finite number "
                          "below 1.8e308")
    elif isinstance(v, (float, np.floating, decimal.Decimal)):
        x = float(v)
    elif isinstance(v, str):
        s = v.strip()
        try:
            x = float(s)
        except ValueError:
            hint = ""
            if re.fullmatch(r"[+-]?\d+,\d+", s):
                hint = " (use a dot as the decimal separator)"
            return None, f"rating {_shown(v)} is not a number{hint}"
    else:
        return None, f"rating {_shown(v)} is not a number"
    if not math.isfinite(x):
        return None, f"rating {_shown(v)} is not a finite number"
    return x, None


def near_keys(values: pd.Series) -> pd.Series:
    """What identifiers that differ only by whitespace, case or leading zeros (``gpt`` vs ``gpt ``, ``Doc7`` vs
    ``doc07``) have in common: the key both the dataset's near-duplicate warning and a judge-score file's unmatched-key
    hint compare."""
    if len(values) > _BLOCK:  # Python's casefold needs a Python string per cell: 100,000 at a time
        return pd.concat([near_keys(values.iloc[s: s + _BLOCK]) for s in range(0, len(values), _BLOCK)])
    return (values.astype("str").str.strip().str.casefold().str.replace(r"\s+", " ", regex=True)
            .str.replace(r"(?<!\d)0+(?=\d)", "", regex=True))


def fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


# ------------------------------------------------------------------------------------------------ whole columns


def by_unique(column: pd.Series, fn: Callable[[object], object]) -> pd.Series:
    """``column.map(fn)`` computed once per distinct cell of a text column (cell by cell for other columns: there
    1 and True would hash alike, and lists are not hashable)."""
    if not is_string_column(column):
        return pd.Series([fn(v) for v in column], index=column.index, dtype=object)
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    mapped = np.empty(len(uniques), dtype=object)
    mapped[:] = [fn(v) for v in uniques]
    return pd.Series(mapped[codes], index=column.index, dtype=object)


def is_string_column(column: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(column.dtype) and column.dtype != object


def _arrow(column: pd.Series) -> Any:
    """The Arrow array behind a pyarrow-backed string column (None for other columns)."""
    to_arrow = getattr(column.array, "__arrow_array__", None)
    return to_arrow() if to_arrow is not None else None


def blank_mask(column: pd.Series) -> np.ndarray:
    if is_string_column(column):
        arr = _arrow(column)
        if arr is not None:
            import pyarrow.compute as pc

            blank = pc.or_kleene(pc.equal(pc.utf8_length(arr), 0), pc.utf8_is_space(arr))
            return np.asarray(pc.fill_null(blank, True).to_numpy(zero_copy_only=False), dtype=bool)
        return (column.isna() | (column.str.strip() == "")).to_numpy(dtype=bool)
    if column.dtype == object:
        return by_unique(column, is_blank).to_numpy(dtype=bool)
    return column.isna().to_numpy(dtype=bool)


def id_column(column: pd.Series) -> pd.Series:
    """Identifiers as text (a "str" column, missing where blank), as :func:`id_text` gives them."""
    if is_string_column(column):
        return column.where(~blank_mask(column)).astype("str")
    if pd.api.types.is_integer_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype):
        # whole numbers written out in C (a Parquet id column of 3,000,000 rows), as id_text would write them
        return column.astype("str").where(column.notna())
    return pd.Series(by_unique(column, id_text).to_numpy(), index=column.index, dtype="str")


def text_column(column: pd.Series) -> pd.Series:
    """Texts verbatim (a "str" column, missing where the cell is null)."""
    if is_string_column(column):
        return column.astype("str")
    return pd.Series(by_unique(column, text).to_numpy(), index=column.index, dtype="str")


def _cast_numbers(column: pd.Series) -> np.ndarray | None:
    """Arrow's cast when every cell is a plain number (the usual case, and much faster); None otherwise."""
    arr = _arrow(column)
    if arr is None or arr.null_count:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return np.array(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False), dtype="float64")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def rating_column(column: pd.Series) -> tuple[np.ndarray, np.ndarray, pd.Series]:
    """(values: float array, NaN where blank or bad; blank mask; why: the problem text where a cell is bad, else
    None). Numbers in text are read by pandas' C parser; only the cells it rejects go through :func:`parse_rating`."""
    n = len(column)
    why = pd.Series([None] * n, index=column.index, dtype=object)
    if pd.api.types.is_bool_dtype(column.dtype):
        why[:] = [parse_rating(v)[1] for v in column] if n else []
        return np.full(n, np.nan), column.isna().to_numpy(), why
    if pd.api.types.is_numeric_dtype(column.dtype):
        values = np.array(column.to_numpy(dtype="float64", na_value=np.nan))
        bad = np.isinf(values)
        if bad.any():
            why[bad] = [parse_rating(v)[1] for v in values[bad]]
            values = np.where(bad, np.nan, values)
        return values, np.isnan(values) & ~bad, why
    if is_string_column(column):
        blank = blank_mask(column)
        cast = _cast_numbers(column)
        values = cast if cast is not None else np.array(
            pd.to_numeric(column.str.strip(), errors="coerce").to_numpy(dtype="float64", na_value=np.nan))
        odd = (np.isnan(values) | np.isinf(values)) & ~blank
    else:  # object: JSON values of mixed types, decimals, huge integers
        blank = blank_mask(column)
        values = np.full(n, np.nan)
        odd = ~blank
    if odd.any():
        parsed = by_unique(column[odd], parse_rating)
        values[odd] = [np.nan if x is None else x for x, _ in parsed]
        why[odd] = [w for _, w in parsed]
    return values, blank, why
