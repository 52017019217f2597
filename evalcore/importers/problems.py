"""What is wrong with an uploaded file: :class:`Problem` (file, row, column, message) and the error that lists them.

Rows are numbered as a person finds them in the file: CSV/TSV by physical line number counting the header as line 1
(so a quoted field spanning several lines is numbered by the line its record starts on), JSON and JSONL by record
number (1 = the first record), Parquet by data row (1 = the first row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

MAX_PROBLEMS_SHOWN = 50

# What a row number means in a layout read from a registered format (the formats' own conventions are registered
# with them, evalcore.importers.readers): (unit word used in messages, sentence explaining it).
ROW_CONVENTIONS: dict[str, tuple[str, str]] = {
    # the Alt-Test authors' annotation files: {annotator: {item: label}} (github.com/nitaytech/AltTest, data/)
    "json-annotators": ("entry", "rows are entries of the {annotator: {item: label}} object in reading order (1 = the "
                                 "first annotator's first item)"),
    # UltraFeedback's records, one per instruction, flattened to one row per completion (rating_sets.py)
    "ultrafeedback": ("completion", "rows are UltraFeedback's completions in reading order (1 = the first record's "
                                    "first completion); doc_id is the record's number"),
    # MLflow assessments and Langfuse scores read as one row per human rating (traces.py)
    "traces": ("rating", "rows are the human ratings in reading order (1 = the first), one per annotator, dimension "
                         "and trace"),
}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an uploaded file. ``row`` is "-" when the problem concerns the whole file or column."""

    file: str
    row: int | str
    column: str
    message: str
    unit: str = "row"  # "line" (CSV/TSV), "record" (JSON/JSONL) or "row" (Parquet): how ``row`` counts

    def __str__(self) -> str:
        where = "whole file" if self.row == "-" else f"{self.unit} {self.row}"
        column = "-" if self.column == "-" else repr(self.column)
        return f"{self.file}, {where}, column {column}: {self.message}"


class DatasetValidationError(ValueError):
    """Raised with every problem found in an uploaded file; nothing from the file was imported."""

    def __init__(self, problems: list[Problem], *, convention: str = "", max_shown: int = MAX_PROBLEMS_SHOWN,
                 total: int | None = None):
        if not problems:
            raise ValueError("DatasetValidationError needs at least one problem")
        self.problems = list(problems)
        self.convention = convention
        self.max_shown = max_shown
        # problems found, listed or not: past Problems.KEEP only the first ones (in reading order) are kept
        self.total = max(total or 0, len(self.problems))
        super().__init__(self._render())

    def _render(self) -> str:
        n = self.total
        files = sorted({p.file for p in self.problems})
        head = f"{', '.join(files)}: {n:,} problem{'s' if n != 1 else ''} found, nothing was imported"
        if self.convention:
            head += f"; {self.convention}"
        lines = [head + ":"]
        lines += [f"  - {p}" for p in self.problems[: self.max_shown]]
        if n > min(self.max_shown, len(self.problems)):
            lines.append(f"  ... and {n - min(self.max_shown, len(self.problems)):,} more")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._render()


class Problems:
    """Problems collected out of row order (checks run column-wise) and put back in the order a person reads them:
    whole-file problems of the reading and mapping first, then by row and, within a row, by the order of the checks
    (identifiers, texts, annotator, ratings left to right), then what only the whole table can show."""

    READ, ROWS, AFTER = 0, 1, 2
    # A file refused for a million duplicate rows must not hold a million messages: only the first KEEP problems in
    # reading order are kept (a person reads the first 50; the rest are counted). Checks that find problems column
    # by column build messages for their first KEEP rows only (:meth:`first`).
    KEEP = 1_000

    def __init__(self, file: str, unit: str) -> None:
        self.file, self.unit = file, unit
        self._items: list[tuple[tuple, Problem]] = []
        self._added = 0
        self.omitted = 0

    def add(self, row: int | str, column: str, message: str, *, block: int = ROWS, phase: float = 0) -> None:
        order = (block, -1 if row == "-" else int(row), phase, self._added)
        self._push(order, Problem(self.file, row, column, message, self.unit))

    def extend(self, problems: list[Problem], *, block: int = READ) -> None:
        for p in problems:
            self._push((block, -1 if p.row == "-" else int(p.row), 0, self._added), p)

    def _push(self, order: tuple, problem: Problem) -> None:
        self._added += 1
        self._items.append((order, problem))
        if len(self._items) >= 2 * self.KEEP:  # keep the first KEEP in reading order, count the rest
            self._items.sort(key=lambda kv: kv[0])
            self.omitted += len(self._items) - self.KEEP
            del self._items[self.KEEP:]

    def omit(self, n: int) -> None:
        """Count ``n`` problems that were found but not built (they come after the first KEEP in reading order)."""
        self.omitted += int(n)

    def first(self, mask: np.ndarray, positions: np.ndarray | None = None) -> np.ndarray:
        """``mask`` (a boolean array of problem cells) with only its first KEEP cells in reading order (by
        ``positions``, else by index); the others are counted as omitted. The messages of a column-wise check are then
        built for those cells only: the problems listed are the same, the memory is bounded."""
        import numpy as np

        idx = np.flatnonzero(mask)
        if len(idx) <= self.KEEP:
            return mask
        if positions is not None:
            idx = idx[np.argsort(np.asarray(positions)[idx], kind="stable")]
        out = np.zeros(len(mask), bool)
        out[idx[: self.KEEP]] = True
        self.omit(len(idx) - self.KEEP)
        return out

    @property
    def total(self) -> int:
        return len(self._items) + self.omitted

    def any_whole_file(self) -> bool:
        return any(p.row == "-" for _, p in self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return self.total

    def sorted(self) -> list[Problem]:
        return [p for _, p in sorted(self._items, key=lambda kv: kv[0])]
