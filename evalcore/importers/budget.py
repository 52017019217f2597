"""What an upload may cost before it is materialised (issue 21, item 3: upload bombs).

A 68 KB Parquet file holding one dictionary-encoded text repeated a million times decodes to gigabytes; a 159 KB
CSV with 10,003 columns asks the upload form for 10,003 role pickers. Each is checked from what the file says about
itself before the table is built: rows x columns and column count from the header or Parquet's metadata, and the
bytes the text columns will take once decoded, counted on the dictionary (each distinct text once, times how often
it is used) instead of decoding it. Over budget, the file is refused with a message naming it and the limit.
The limits can be raised by the operator (``EVALCORE_MAX_UPLOAD_BYTES``, ``EVALCORE_MAX_UPLOAD_COLUMNS``,
``EVALCORE_MAX_UPLOAD_CELLS``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


def _env_int(name: str, default: int) -> int:
    try:
        v = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return v if v > 0 else default


@dataclass(frozen=True)
class UploadBudget:
    """The most an upload may decode to: bytes of cell data, columns, and cells (rows x columns)."""

    max_bytes: int = 1 << 30
    max_columns: int = 1_000
    max_cells: int = 50_000_000

    @classmethod
    def from_env(cls) -> "UploadBudget":
        d = cls()
        return cls(_env_int("EVALCORE_MAX_UPLOAD_BYTES", d.max_bytes),
                   _env_int("EVALCORE_MAX_UPLOAD_COLUMNS", d.max_columns),
                   _env_int("EVALCORE_MAX_UPLOAD_CELLS", d.max_cells))

    def shape_problem(self, rows: int, columns: int) -> str | None:
        """Why a table of this shape is refused, or None."""
        if columns > self.max_columns:
            return (f"the file has {columns:,} columns; an upload may have at most {self.max_columns:,} "
                    "(EVALCORE_MAX_UPLOAD_COLUMNS)")
        if rows * columns > self.max_cells:
            return (f"the file has {rows:,} rows x {columns:,} columns = {rows * columns:,} cells; an upload may "
                    f"have at most {self.max_cells:,} (EVALCORE_MAX_UPLOAD_CELLS)")
        return None

    def bytes_problem(self, decoded_bytes: int) -> str | None:
        if decoded_bytes > self.max_bytes:
            return (f"the file's cells decode to {decoded_bytes / 2**20:,.0f} MiB; an upload may decode to at most "
                    f"{self.max_bytes / 2**20:,.0f} MiB (EVALCORE_MAX_UPLOAD_BYTES)")
        return None


def arrow_decoded_bytes(table) -> int:
    """Bytes ``table`` takes once every dictionary column is decoded, computed without decoding: for a dictionary
    column, the length of each distinct value times the number of rows that use it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for col in table.columns:
        for chunk in col.chunks:
            if pa.types.is_dictionary(chunk.type):
                lengths = pc.binary_length(chunk.dictionary) if (
                    pa.types.is_string(chunk.dictionary.type) or pa.types.is_large_string(chunk.dictionary.type)
                    or pa.types.is_binary(chunk.dictionary.type)) else None
                if lengths is None:
                    total += chunk.nbytes
                    continue
                used = pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0
                total += int(used) + 8 * len(chunk)  # offsets
            else:
                total += chunk.nbytes
    return total
