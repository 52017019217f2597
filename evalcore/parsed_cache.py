"""Pre-parsed values of the bundled runs: ``data/parsed/<run file>.<mode>.parquet``, written by
``scripts/build_parsed.py``.

Why: reading a published run's raw replies is most of the time the app takes to open a page on a fresh server (the
robust reader tries a dozen patterns on each reply; SummEval's two default RTS runs take about 1 s, the three
Llama-2 runs 3.6 s). The parsed columns are derived data, so each file carries a fingerprint of everything that went
into it: the parser's source (``evalcore/parsers.py``), the code in ``evalcore/datasets.py`` that applies it, the
run's manifest entry (parser, scales, samples), the raw replies' file and the parse mode. A file whose fingerprint
does not match what this checkout would compute is ignored and the replies are parsed as before, so a stale file can
cost time but never change a number; ``tests/test_parsed_cache.py`` fails until ``scripts/build_parsed.py`` is run
again after a parser change.

Each file holds, row for row with the raw file, the columns that parsing adds: ``value``, ``status``, ``reason``,
``estimator`` for judgments; ``verdict``, ``status``, ``reason`` for comparisons.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from pathlib import Path
from typing import Any, Callable, NotRequired, TypedDict

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evalcore import parsers

FINGERPRINT_KEY = b"evalcore_parse_fingerprint"
JUDGMENT_PARSED = ["value", "status", "reason", "estimator"]
COMPARISON_PARSED = ["verdict", "status", "reason"]


class RunEntry(TypedDict):
    """A published run as ``data/runs/manifest.json`` lists it (written by ``scripts/build_data.py``)."""

    run_id: str
    dataset_id: str
    method: str
    model: str
    label: str
    parser: str  # the evalcore.parsers reader of its replies
    origin: NotRequired[str]
    created_at: NotRequired[str]
    kind: str  # "judgments" or "comparisons"
    file: str  # its raw replies (Parquet), relative to data/
    rows: NotRequired[int]
    config: dict[str, Any]  # the run's configuration as released (scale or scales, samples n, prompts, provenance)


def parsed_columns(entry: RunEntry) -> list[str]:
    """The columns parsing adds to this run's raw table (what a pre-parsed file holds)."""
    return COMPARISON_PARSED if entry["kind"] == "comparisons" else JUDGMENT_PARSED


def parsed_path(data_dir: Path, entry: RunEntry, mode: str) -> Path:
    return data_dir / "parsed" / f"{Path(entry['file']).stem}.{mode}.parquet"


@functools.lru_cache(maxsize=8)
def _code_digest(glue: tuple[Callable[..., object], ...]) -> str:
    """sha256 of the parser's source and of the functions that apply it; "" when there is no source to read."""
    h = hashlib.sha256()
    try:
        h.update(Path(parsers.__file__).read_bytes())
        for fn in glue:
            h.update(inspect.getsource(fn).encode("utf-8"))
    except (OSError, TypeError):  # a bytecode-only install: never trust a pre-parsed file
        return ""
    return h.hexdigest()


def fingerprint(data_dir: Path, entry: RunEntry, mode: str, glue: tuple[Callable[..., object], ...]) -> str:
    """sha256 over the parser's source, the functions that apply it (``glue``), the manifest entry, the raw file and
    the mode: any change to one of them makes a pre-parsed file stale."""
    code = _code_digest(glue)
    if not code:
        return ""
    h = hashlib.sha256(code.encode("ascii"))
    h.update(json.dumps(entry, sort_keys=True).encode("utf-8"))
    h.update((data_dir / entry["file"]).read_bytes())
    h.update(mode.encode("utf-8"))
    return h.hexdigest()


def read(path: Path, expected: str, columns: list[str], n_rows: int) -> pd.DataFrame | None:
    """The pre-parsed columns, or None when the file is missing, stale (another fingerprint) or of another shape."""
    if not path.is_file():
        return None
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException):
        return None
    meta = table.schema.metadata or {}
    if not expected or meta.get(FINGERPRINT_KEY, b"").decode("ascii", "replace") != expected:
        return None
    if table.column_names != columns or table.num_rows != n_rows:
        return None
    return table.to_pandas()


def write(path: Path, parsed: pd.DataFrame, columns: list[str], fp: str) -> None:
    """Write the parsed columns with their fingerprint (deterministic: the same input gives the same bytes)."""
    table = pa.Table.from_pandas(parsed[columns].reset_index(drop=True), preserve_index=False)
    table = table.replace_schema_metadata({FINGERPRINT_KEY: fp.encode("ascii")})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")
