"""What an upload may cost before it is materialised (issue 21, item 3: upload bombs).

A 68 KB Parquet file holding one dictionary-encoded text repeated a million times decodes to gigabytes; a 159 KB
CSV with 10,003 columns asks the upload form for 10,003 role pickers. Each is checked from what the file says about
itself before the table is built: rows x columns and column count from the header or Parquet's metadata, and the
bytes the text columns will take once decoded, counted on the dictionary (each distinct text once, times how often
it is used) instead of decoding it. Over budget, the file is refused with a message naming it and the limit.
The limits can be raised by the operator (``EVALCORE_MAX_UPLOAD_BYTES``, ``EVALCORE_MAX_UPLOAD_COLUMNS``,
``EVALCORE_MAX_UPLOAD_CELLS``).

The memory an import takes is bounded the same way (``EVALCORE_MAX_UPLOAD_MEMORY``, 4 GiB by default): from what the
file says about itself (rows x columns and the bytes of its text, before anything is decoded: CSV from its header and
line count, Parquet from its metadata and dictionaries, JSON from its size), the import's working memory is estimated
with the costs measured by ``bench/bench_upload_memory.py`` and the file is refused when the estimate is over the
budget. Measured on the hardening cases, an import's peak stays below the estimate plus the interpreter's own
~150 MB, so on a 24 GB server four uploads at once take at most about 4 x 4.2 GB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore import settings

if TYPE_CHECKING:
    import pyarrow as pa


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


# What one cell and one byte of text cost an import at its peak, measured by bench/bench_upload_memory.py (peak
# resident memory of a fresh process, less the interpreter's own): a cell costs at most ~180 bytes (the table's
# copy, the identifiers' codes, the checks' masks, the built items and preferences); a byte of text ~3 (the
# file's bytes, the table's text, the items' copy). Rounded up, so the estimate bounds the peak.
CELL_COST = 200
TEXT_COST = 3
# ... and what any import takes whatever its size (Arrow's memory pool, the allocator's arenas, the store's cache):
# a 100,000-pair file of 2.3 MB took 119 MiB over the interpreter's resting size
FIXED_COST = 128 << 20


@dataclass(frozen=True)
class UploadBudget:
    """The most an upload may decode to (bytes of cell data, columns, cells = rows x columns) and the most memory
    its import may take."""

    max_bytes: int = 1 << 30
    max_columns: int = 1_000
    max_cells: int = 50_000_000
    max_memory: int = 4 << 30

    @classmethod
    def from_env(cls) -> "UploadBudget":
        d = cls()
        s = settings.current()
        return cls(_or(s.max_upload_bytes, d.max_bytes), _or(s.max_upload_columns, d.max_columns),
                   _or(s.max_upload_cells, d.max_cells), _or(s.max_upload_memory, d.max_memory))

    @staticmethod
    def memory_needed(cells: int, text_bytes: int) -> int:
        """The import's working memory for a table of ``cells`` cells holding ``text_bytes`` bytes of text."""
        return FIXED_COST + CELL_COST * int(cells) + TEXT_COST * int(text_bytes)

    def memory_problem(self, cells: int, text_bytes: int, what: str) -> str | None:
        """Why an import of this size is refused (``what``: how the size was found), or None."""
        need = self.memory_needed(cells, text_bytes)
        if need <= self.max_memory:
            return None
        return (f"importing it would take about {need / 2**20:,.0f} MiB of memory ({what}: {cells:,} cells, "
                f"{text_bytes / 2**20:,.1f} MiB of text); an import may take at most {self.max_memory / 2**20:,.0f} "
                "MiB (EVALCORE_MAX_UPLOAD_MEMORY): split the file, or ask the operator to raise the limit")

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


def arrow_decoded_bytes(table: pa.Table) -> int:
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
