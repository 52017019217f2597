"""What is wrong with an uploaded file: :class:`Problem` (file, row, column, message) and the error that lists them.

Rows are numbered as a person finds them in the file: CSV/TSV by physical line number counting the header as line 1
(so a quoted field spanning several lines is numbered by the line its record starts on), JSON and JSONL by record
number (1 = the first record), Parquet by data row (1 = the first row).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PROBLEMS_SHOWN = 50

# What a row number means, per format: (unit word used in messages, sentence explaining it).
ROW_CONVENTIONS: dict[str, tuple[str, str]] = {
    "csv": ("line", "rows are CSV line numbers, counting the header as line 1"),
    "tsv": ("line", "rows are TSV line numbers, counting the header as line 1"),
    "json": ("record", "rows are record numbers in the JSON list (1 = the first record)"),
    "jsonl": ("record", "rows are record numbers (1 = the first JSON object in the file; blank lines not counted)"),
    "parquet": ("row", "rows are data row numbers (1 = the first row)"),
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

    def __init__(self, problems: list[Problem], *, convention: str = "", max_shown: int = MAX_PROBLEMS_SHOWN):
        if not problems:
            raise ValueError("DatasetValidationError needs at least one problem")
        self.problems = list(problems)
        self.convention = convention
        self.max_shown = max_shown
        super().__init__(self._render())

    def _render(self) -> str:
        n = len(self.problems)
        files = sorted({p.file for p in self.problems})
        head = f"{', '.join(files)}: {n} problem{'s' if n != 1 else ''} found, nothing was imported"
        if self.convention:
            head += f"; {self.convention}"
        lines = [head + ":"]
        lines += [f"  - {p}" for p in self.problems[: self.max_shown]]
        if n > self.max_shown:
            lines.append(f"  ... and {n - self.max_shown} more")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._render()


class Problems:
    """Problems collected out of row order (checks run column-wise) and put back in the order a person reads them:
    whole-file problems of the reading and mapping first, then by row and, within a row, by the order of the checks
    (identifiers, texts, annotator, ratings left to right), then what only the whole table can show."""

    READ, ROWS, AFTER = 0, 1, 2

    def __init__(self, file: str, unit: str) -> None:
        self.file, self.unit = file, unit
        self._items: list[tuple[tuple, Problem]] = []

    def add(self, row: int | str, column: str, message: str, *, block: int = ROWS, phase: float = 0) -> None:
        order = (block, -1 if row == "-" else int(row), phase, len(self._items))
        self._items.append((order, Problem(self.file, row, column, message, self.unit)))

    def extend(self, problems: list[Problem], *, block: int = READ) -> None:
        for p in problems:
            self._items.append(((block, -1 if p.row == "-" else int(p.row), 0, len(self._items)), p))

    def any_whole_file(self) -> bool:
        return any(p.row == "-" for _, p in self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def sorted(self) -> list[Problem]:
        return [p for _, p in sorted(self._items, key=lambda kv: kv[0])]
