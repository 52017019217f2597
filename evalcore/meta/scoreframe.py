"""A *score frame* validated into arrays: one row per item with ``doc_id, system_id, judge, human`` (and
optionally ``item_id``), the judge's value NaN where its reply could not be read (dropped and counted, never 0).
Every correlation of evalcore.meta starts here (correlation, inference, compare, ceiling)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore.meta.arrays import FloatArray, IntArray, LabelArray

REQUIRED_COLUMNS = ("doc_id", "system_id", "judge", "human")


@dataclass(frozen=True)
class PreparedFrame:
    """A validated score frame as arrays: judge ``x``, human ``y``, document and system codes (sorted ids)."""

    x: FloatArray
    y: FloatArray
    doc: IntArray
    system: IntArray
    doc_ids: LabelArray
    system_ids: LabelArray
    dropped: int

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    @property
    def n_systems(self) -> int:
        return len(self.system_ids)


def numeric_column(frame: pd.DataFrame, col: str, name: str, expected: str = "a number") -> FloatArray:
    """``frame[col]`` as floats, a missing cell as NaN; ValueError naming the column, row and value of the first cell
    that is not ``expected`` (a number written as text is read as the number)."""
    raw = frame[col]
    num = pd.to_numeric(raw, errors="coerce")
    bad = num.isna() & raw.notna()
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise ValueError(f"{name}: column {col!r} row {row} holds {raw.iloc[row]!r}, which is not {expected}")
    result: FloatArray = num.to_numpy(dtype=float)
    return result


def prepare_frame(frame: pd.DataFrame, *, name: str = "score frame") -> PreparedFrame:
    """Validate a score frame and drop (and count) items whose judge value is missing.

    Raises ValueError naming the column and row for missing columns, non-numeric values, a missing human score,
    infinite values or duplicated item ids.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}; a score frame needs {list(REQUIRED_COLUMNS)}")
    if "item_id" in frame.columns:
        dup = frame["item_id"].duplicated(keep=False)
        if dup.any():
            first = frame.loc[dup, "item_id"].iloc[0]
            raise ValueError(f"{name}: item_id {first!r} appears {int((frame['item_id'] == first).sum())} times; "
                             "a score frame has one row per item")
    cols = {}
    for col in ("judge", "human"):
        arr = numeric_column(frame, col, name)
        if np.isinf(arr).any():
            row = np.isinf(arr).nonzero()[0][0]
            raise ValueError(f"{name}: column {col!r} row {row} is infinite")
        cols[col] = arr
    hnan = np.isnan(cols["human"])
    if hnan.any():
        row = hnan.nonzero()[0][0]
        ident = frame["item_id"].iloc[row] if "item_id" in frame.columns else row
        raise ValueError(f"{name}: column 'human' row {row} (item {ident!r}) is missing; every item needs a human "
                         "score (join the judge's scores onto the human table, not the other way round)")
    for col in ("doc_id", "system_id"):
        if frame[col].isna().any():
            row = frame[col].isna().to_numpy().nonzero()[0][0]
            raise ValueError(f"{name}: column {col!r} row {row} is missing")
    keep = ~np.isnan(cols["judge"])
    dropped = int((~keep).sum())
    doc, doc_ids = pd.factorize(frame["doc_id"].to_numpy()[keep], sort=True)
    system, system_ids = pd.factorize(frame["system_id"].to_numpy()[keep], sort=True)
    return PreparedFrame(
        x=cols["judge"][keep], y=cols["human"][keep], doc=doc.astype(np.int64), system=system.astype(np.int64),
        doc_ids=np.asarray(doc_ids), system_ids=np.asarray(system_ids), dropped=dropped,
    )
