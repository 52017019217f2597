"""An import format from outside the package: pipe-separated values (``.psv``), a header line then one record a
line, every cell text as written. Its one module is all a contributor writes, with its entry point."""

from __future__ import annotations

import pandas as pd

from evalcore.importers import Problem
from evalcore.registry import register_format


@register_format("psv", extensions=(".psv",), unit="line", label="PSV (pipe-separated)",
                 convention="rows are PSV line numbers, counting the header as line 1")
def read_psv(name: str, data: bytes, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        return None, [Problem(name, "-", "-", f"the file is not UTF-8 text (offset {e.start})", unit)]
    header, problems, rows, numbers = lines[0].split("|") if lines else [], [], [], []
    for line_no, line in enumerate(lines[1:], start=2):  # the index: line numbers as a person counts them
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) != len(header):
            problems.append(Problem(name, line_no, "-", f"{len(cells)} cells where the header has {len(header)}", unit))
            continue
        rows.append(cells)
        numbers.append(line_no)
    frame = pd.DataFrame(rows, columns=header, index=pd.Index(numbers, name=unit), dtype=object)
    return frame, problems
