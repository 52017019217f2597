"""Reading an uploaded file (CSV, TSV, JSON, JSONL, Parquet) into a table whose index is the row number a person
finds in the file.

CSV/TSV go through pyarrow's multithreaded C reader, every cell read as text exactly as written; the line each
record starts on is found from the bytes with numpy (newlines outside quotes end records). Only a file pyarrow
cannot read cleanly (a ragged row, bad bytes) is read again with Python's csv module, which names the exact line.
The delimiter is sniffed from the header line, so a semicolon-separated export works. JSONL goes through pyarrow's
JSON reader when its records are flat and typed consistently, else line by line with the json module.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pandas as pd

from evalcore import registry
from evalcore.registry import register_format
from evalcore.importers.problems import ROW_CONVENTIONS, DatasetValidationError, Problem, Problems
from evalcore.importers.budget import UploadBudget, arrow_decoded_bytes

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = registry.FORMATS  # name -> evalcore.registry.Format: the readers registered below, and plugins'
MAX_CELL_BYTES = 10 * 1024 * 1024  # a text cell may hold up to 10 MB (a long document, a whole dialogue)
_BLOCK_BYTES = 1 << 25  # pyarrow's block must hold the largest record
DELIMITERS = (",", ";", "\t", "|")

# What a file to import may be given as: a path, its bytes (with a file name), a (bytes, file name) pair, or a binary
# file object with a name (Streamlit's UploadedFile is a BytesIO)
Source: TypeAlias = "str | os.PathLike[str] | bytes | bytearray | memoryview | tuple[bytes, str] | IO[bytes]"


def detect_format(filename: str) -> str | None:
    """Format name from a file name's extension ("csv", "tsv", "json", "jsonl", "parquet", a plugin's), or None."""
    found = registry.format_of(filename)
    return found.name if found else None


def row_convention(fmt: str) -> tuple[str, str]:
    """(unit word used in messages, the sentence explaining it) of a registered format or a layout of one."""
    if fmt in ROW_CONVENTIONS:
        return ROW_CONVENTIONS[fmt]
    spec = FORMATS[fmt]
    return spec.unit, spec.convention


def resolve_source(source: Source, filename: str | None = None) -> tuple[str, bytes]:
    """(name used in messages, file bytes) from a path, bytes (+ filename), a (bytes, filename) pair, or an upload."""
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[0], (bytes, bytearray)):
        data, name = source
        return str(filename or name), bytes(data)
    if isinstance(source, (bytes, bytearray, memoryview)):
        if not filename:
            raise ValueError("bytes given without a filename: pass filename=... so the format can be detected")
        return filename, bytes(source)
    if isinstance(source, (str, os.PathLike)):
        try:
            data = Path(source).read_bytes()
        except OSError as e:
            raise DatasetValidationError(
                [Problem(str(filename or source), "-", "-", f"cannot read the file: {e.strerror or e}")]
            ) from None
        return str(filename or source), data
    read_all = getattr(source, "getvalue", None) or getattr(source, "read", None)
    if read_all is not None:  # Streamlit's UploadedFile or a binary file object
        data = read_all()
        upload_name = filename or getattr(source, "name", None)
        if not upload_name:
            raise ValueError("file object without a name: pass filename=... so the format can be detected")
        if isinstance(data, str):
            data = data.encode("utf-8")
        return str(upload_name), bytes(data)
    raise TypeError(f"cannot read a dataset from {type(source).__name__}: give a path, bytes or (bytes, filename)")


# ------------------------------------------------------------------------------------------------------ helpers


def _decode(name: str, data: bytes, unit: str) -> tuple[str | None, list[Problem]]:
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        bad = data[e.start: e.start + 1].hex()
        return None, [Problem(
            name, line if unit == "line" else "-", "-",
            f"the file is not UTF-8 text (byte 0x{bad} on physical line {line}, offset {e.start}); "
            "save it as UTF-8 (in Excel: 'CSV UTF-8') and upload again", unit)]


def _nul_problem(name: str, data: bytes, unit: str) -> list[Problem]:
    at = data.find(b"\x00")
    if at < 0:
        return []
    line = data.count(b"\n", 0, at) + 1
    return [Problem(name, line if unit == "line" else "-", "-",
                    f"the file holds a NUL byte (offset {at}, physical line {line}): it is binary or not UTF-8 "
                    "(UTF-16?); save it as UTF-8 text and upload again", unit)]


def unique_header(name: str, header: list[str], unit: str) -> tuple[list[str], list[Problem]]:
    problems: list[Problem] = []
    out: list[str] = []
    seen: dict[str, int] = {}
    for i, h in enumerate(header, start=1):
        if h == "":
            h = f"(unnamed column {i})"  # spreadsheets leave trailing header cells blank; they cannot be mapped anyway
        if h in seen:
            problems.append(Problem(name, 1, h, f"the header names column {h!r} twice (columns {seen[h]} and {i})",
                                    unit))
            h = f"{h} (column {i})"  # keep the table readable so the rows can still be checked
        seen.setdefault(h, i)
        out.append(h)
    return out, problems


def sniff_delimiter(header_line: str, fmt: str) -> str:
    """The delimiter the header line uses most (outside quotes); a comma on a tie or when none is present."""
    if fmt == "tsv":
        return "\t"
    outside = header_line.split('"')[::2]
    counts = {d: sum(part.count(d) for part in outside) for d in DELIMITERS}
    best = max(DELIMITERS, key=lambda d: (counts[d], d == ","))
    return best if counts[best] > 0 else ","


def _record_lines(data: bytes, n_records: int) -> np.ndarray:
    """The physical line (1-based) each non-blank record starts on: newlines outside double quotes end records."""
    if data.count(b"\n") + (0 if data.endswith(b"\n") else 1) == n_records:
        # as many lines as records: no blank line, no line break inside quotes (both would leave fewer records)
        return np.arange(1, n_records + 1, dtype=np.int64)
    buf = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(buf == 10)
    quotes = np.flatnonzero(buf == 34)
    ends = nl[(np.searchsorted(quotes, nl) & 1) == 0]  # an even number of quotes before it: outside a field
    starts = np.concatenate(([0], ends + 1))
    stops = np.concatenate((ends, [len(buf)]))
    length = stops - starts
    first = buf[np.minimum(starts, max(len(buf) - 1, 0))] if len(buf) else np.zeros(len(starts), np.uint8)
    blank = (length == 0) | ((length == 1) & (first == 13))
    starts = starts[~blank]
    return np.searchsorted(nl, starts) + 1


# ------------------------------------------------------------------------------------------------------ CSV/TSV


def _read_delimited_fast(data: bytes, header: list[str], delimiter: str) -> pd.DataFrame | None:
    """Every cell as text via pyarrow; None when the file needs the exact (slow) reader to explain itself."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    invalid: list[object] = []

    def on_invalid(row: object) -> str:
        invalid.append(row)
        return "skip"

    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            # one thread: on a shared machine pyarrow's threads cost more than they bring, and fewer chunks make
            # the conversion to pandas cheap; a file without quotes cannot hold a line break inside a value
            read_options=pacsv.ReadOptions(column_names=header, skip_rows=1, block_size=_BLOCK_BYTES,
                                           use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=b'"' in data,
                                             invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(column_types={h: pa.string() for h in header},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowException, ValueError):
        return None
    if invalid:
        return None
    return table.to_pandas()


class _Unreadable(Exception):
    """A line that cannot be read at all (not UTF-8, or longer than a record may be): the file is refused."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _long_line_problem(name: str, line: int, limit: int, unit: str) -> Problem:
    return Problem(name, line if unit == "line" else "-", "-",
                   f"physical line {line} is longer than {limit / 2**20:.0f} MB (a cell may hold at most "
                   f"{MAX_CELL_BYTES / 2**20:.0f} MB): not a table of texts, or a text without its line breaks", unit)


def _longest_line(data: bytes, block: int = 1 << 24) -> tuple[int, int]:
    """(length, 1-based number) of the longest physical line, found with numpy 16 MB at a time."""
    buf = np.frombuffer(data, dtype=np.uint8)
    best, best_line, last_nl, seen = 0, 1, -1, 0
    for start in range(0, len(buf), block):
        nl = np.flatnonzero(buf[start: start + block] == 10) + start
        if not len(nl):
            continue
        lengths = nl - np.concatenate(([last_nl + 1], nl[:-1] + 1))
        k = int(np.argmax(lengths))
        if lengths[k] > best:
            best, best_line = int(lengths[k]), seen + k + 1
        seen, last_nl = seen + len(nl), int(nl[-1])
    if len(buf) - last_nl - 1 > best:
        best, best_line = len(buf) - last_nl - 1, seen + 1
    return best, best_line


def _text_lines(name: str, data: bytes, unit: str, limit: int = _BLOCK_BYTES) -> Iterator[str]:
    """The file's physical lines as text, decoded one at a time: a whole-file copy as text (and the csv module's
    own copy of it) would take several times the file's size. A line longer than ``limit`` is refused before it is
    copied: a record may hold several cells of up to 10 MB, not a 200 MB one."""
    buf = io.BytesIO(data)
    offset, line = 0, 0
    while True:
        raw = buf.readline(limit + 1)
        if not raw:
            return
        line += 1
        if len(raw) > limit:
            raise _Unreadable(_long_line_problem(name, line, limit, unit))
        try:
            yield raw.decode("utf-8-sig" if line == 1 else "utf-8")
        except UnicodeDecodeError as e:
            bad = raw[e.start: e.start + 1].hex()
            raise _Unreadable(Problem(
                name, line if unit == "line" else "-", "-",
                f"the file is not UTF-8 text (byte 0x{bad} on physical line {line}, offset {offset + e.start}); "
                "save it as UTF-8 (in Excel: 'CSV UTF-8') and upload again", unit)) from None
        offset += len(raw)


def _read_delimited_exact(name: str, data: bytes | str, delimiter: str, unit: str) -> tuple[pd.DataFrame | None,
                                                                                           list[Problem]]:
    """Python's csv module, record by record: slow, but names the line of every ragged row."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        return _read_records(name, _text_lines(name, data, unit), delimiter, unit)
    except _Unreadable as e:
        return None, [e.problem]


def _read_records(name: str, lines: Iterable[str], delimiter: str, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    problems: list[Problem] = []
    csv.field_size_limit(MAX_CELL_BYTES)
    reader = csv.reader(lines, delimiter=delimiter)
    header: list[str] | None = None
    rows: list[list[str]] = []
    line_numbers: list[int] = []
    last_line = 0
    try:
        for record in reader:
            start = last_line + 1  # the physical line this record starts on (quoted fields may span lines)
            last_line = reader.line_num
            if not record or (len(record) == 1 and record[0] == "" and header is not None):
                continue  # blank line
            if header is None:
                header, header_problems = unique_header(name, record, unit)
                problems += header_problems
                continue
            if len(record) > len(header):
                if any(x != "" for x in record[len(header):]):
                    problems.append(Problem(
                        name, start, "-",
                        f"this row has {len(record)} fields but the header has {len(header)} "
                        "(an unquoted delimiter or line break in a text?)", unit))
                record = record[: len(header)]
            elif len(record) < len(header):
                problems.append(Problem(
                    name, start, "-",
                    f"this row has {len(record)} fields but the header has {len(header)} "
                    "(an unquoted line break in a text, or missing cells?)", unit))
                record = record + [""] * (len(header) - len(record))
            rows.append(record)
            line_numbers.append(start)
    except csv.Error as e:
        why = f"a cell here holds more than {MAX_CELL_BYTES / 2**20:.0f} MB, the most a cell may hold" \
            if "field limit" in str(e) else f"cannot parse this line: {e}"
        problems.append(Problem(name, reader.line_num, "-", why, unit))
    if header is None:
        problems.append(Problem(name, "-", "-", "the file is empty (no header line)", unit))
        return None, problems
    frame = pd.DataFrame(rows, columns=header, dtype=object) if rows else pd.DataFrame(
        {h: pd.Series(dtype=object) for h in header})
    frame = frame.astype("str") if rows else frame
    frame.index = pd.Index(line_numbers, name=unit, dtype="int64")
    return frame, problems


def _header_record(data: bytes, delimiter_fmt: str) -> tuple[str, list[str]] | None:
    """The header line's text and fields (None when the first line is not a complete header record)."""
    end = data.find(b"\n")
    first = data if end < 0 else data[:end]
    try:
        line = first.decode("utf-8-sig").rstrip("\r")
    except UnicodeDecodeError:
        return None
    if line.count('"') % 2:
        return None  # a header with a line break inside quotes: let the exact reader handle it
    delimiter = sniff_delimiter(line, delimiter_fmt)
    fields = next(csv.reader([line], delimiter=delimiter), [])
    return delimiter, fields


def _cell_size_problems(name: str, frame: pd.DataFrame, unit: str) -> list[Problem]:
    import pyarrow as pa
    import pyarrow.compute as pc

    problems = []
    for c in frame.columns:
        col = frame[c]
        if len(col) == 0:
            continue
        to_arrow = getattr(col.array, "__arrow_array__", None)
        # pandas before 3 hands pyarrow's text back as object columns, which have no Arrow array to measure
        text = to_arrow() if to_arrow is not None else pa.array(col.to_numpy(dtype=object), type=pa.string(),
                                                                from_pandas=True)
        lengths = pc.utf8_length(text)
        longest = pc.max(lengths).as_py()
        if longest is None or longest <= MAX_CELL_BYTES:
            continue  # the usual case: one pass in Arrow, nothing converted
        big = np.asarray(lengths.to_numpy(zero_copy_only=False), dtype="float64")
        for pos in np.flatnonzero(big > MAX_CELL_BYTES)[:10]:
            problems.append(Problem(name, int(frame.index[pos]), str(c),
                                    f"this cell holds {big[pos] / 1e6:.1f} million characters, over the 10 MB "
                                    "a cell may hold", unit))
    return problems


def read_delimited(name: str, data: bytes, fmt: str, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    problems = _nul_problem(name, data, unit)
    if problems:
        return None, problems
    head = _header_record(data, fmt)
    if head is not None:
        budget = UploadBudget.from_env()
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)  # at least as many as records
        too_big = budget.shape_problem(0, len(head[1])) or budget.memory_problem(
            max(lines - 1, 0) * len(head[1]), len(data), f"{lines - 1:,} lines after the header x {len(head[1]):,} "
                                                         "columns")
        if too_big:
            return None, [Problem(name, 1 if "columns;" in too_big else "-", "-", too_big, unit)]
    if len(data) > _BLOCK_BYTES:  # a line longer than a record may be is refused before any reader copies it
        longest, line = _longest_line(data)
        if longest > _BLOCK_BYTES:
            return None, [_long_line_problem(name, line, _BLOCK_BYTES, unit)]
    if head is not None and head[1] and data[:1] not in (b"\n", b"\r"):
        delimiter, fields = head
        header, problems = unique_header(name, fields, unit)
        frame = _read_delimited_fast(data, header, delimiter)
        starts = _record_lines(data, len(frame) + 1) if frame is not None else np.array([])
        if frame is not None and len(frame) == len(starts) - 1:
            frame.index = pd.Index(starts[1:].astype("int64"), name=unit)
            frame.attrs["delimiter"] = delimiter
            return frame, problems + _cell_size_problems(name, frame, unit)
    first = data[: data.find(b"\n")] if b"\n" in data[:_BLOCK_BYTES] else data[:_BLOCK_BYTES]
    delimiter = sniff_delimiter(first.decode("utf-8-sig", errors="replace"), fmt)
    frame, problems = _read_delimited_exact(name, data, delimiter, unit)
    if frame is not None:
        frame.attrs["delimiter"] = delimiter
    return frame, problems


# ------------------------------------------------------------------------------------------------------ JSON


def _cell(v: object) -> object:
    """A JSON value as a cell: scalars and lists of strings as they are, anything nested as its JSON text."""
    if isinstance(v, (dict, list)):
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            return v
        try:
            return json.dumps(v, ensure_ascii=False)
        except (RecursionError, ValueError):
            return "(a JSON value nested too deeply to show)"
    return v


def _records_frame(records: Sequence[Mapping[str, object]], numbers: list[int], unit: str) -> pd.DataFrame:
    columns: dict[str, None] = {}
    for r in records:
        for k in r:
            columns.setdefault(str(k), None)
    data = {c: pd.Series([_cell(r.get(c)) for r in records], dtype=object) for c in columns}
    frame = pd.DataFrame(data) if data else pd.DataFrame(index=range(len(records)))
    frame.index = pd.Index(numbers, name=unit, dtype="int64")
    return frame


_TOO_DEEP = "nested more deeply than the reader allows (about 1,000 levels); flatten it"


def read_json(name: str, text: str, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return None, [Problem(name, "-", "-", f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}", unit)]
    except RecursionError:
        return None, [Problem(name, "-", "-", f"the JSON is {_TOO_DEEP}", unit)]
    except ValueError as e:  # e.g. an integer over Python's 4,300-digit limit
        return None, [Problem(name, "-", "-", f"not readable JSON: {e}", unit)]
    if is_annotator_layout(obj):
        return annotator_frame(obj), []
    if isinstance(obj, dict) and isinstance(obj.get("records"), list):
        raw = obj["records"]
    elif isinstance(obj, list):
        raw = obj
    elif isinstance(obj, dict) and isinstance(obj.get("data"), list) and "meta" in obj:
        raw = [obj]  # one page of an API's list (Langfuse's scores: {data, meta}), a record of the pages' list
    else:
        return None, [Problem(name, "-", "-", 'expected a JSON list of records, an object {"records": [...]}, or '
                                              "annotations as {annotator: {item: label}}", unit)]
    problems = [
        Problem(name, i, "-", f"record {i} is a JSON {type(r).__name__}, not an object with named fields", unit)
        for i, r in enumerate(raw, start=1) if not isinstance(r, dict)
    ]
    records = [r for r in raw if isinstance(r, dict)]
    numbers = [i for i, r in enumerate(raw, start=1) if isinstance(r, dict)]
    return _records_frame(records, numbers, unit), problems


ANNOTATOR_COLUMNS = ("annotator", "item_id", "label")


def is_annotator_layout(obj: object) -> bool:
    """Whether a JSON value is annotations as the Alt-Test's authors publish them (github.com/nitaytech/AltTest,
    data/<dataset>/human_annotations.json and llm_annotations.json): an object whose every value is an object of
    item id -> one label (a number, a word or null), keyed by annotator (or LLM) name."""
    return (isinstance(obj, dict) and bool(obj) and "records" not in obj
            and all(isinstance(v, dict) and v for v in obj.values())
            and all(not isinstance(x, (dict, list)) for v in obj.values() for x in v.values()))


def annotator_frame(obj: Mapping[str, Mapping[str, object]]) -> pd.DataFrame:
    """{annotator: {item: label}} as a long table (annotator, item_id, label), one row per entry in reading order,
    numbered from 1: the roles are then guessed by name (annotator, item id, a rating column "label")."""
    rows = [(str(a), str(i), v) for a, labels in obj.items() for i, v in labels.items()]
    frame = pd.DataFrame({c: pd.Series([r[k] for r in rows], dtype=object) for k, c in enumerate(ANNOTATOR_COLUMNS)})
    frame.index = pd.Index(range(1, len(rows) + 1), name="entry", dtype="int64")
    frame.attrs["layout"] = "annotators"
    return frame


def annotator_sources(source: Source, filename: str | None = None) -> list[tuple[str, tuple[bytes, str]]] | None:
    """A file in the {annotator: {item: label}} layout holding several annotators (an llm_annotations.json with one
    key per LLM) as one source per annotator, (its name, (bytes, file name)), to import each as a run of its own;
    None for any other file."""
    name, data = resolve_source(source, filename)
    if detect_format(name) != "json":
        return None
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not is_annotator_layout(obj) or len(obj) < 2:
        return None
    return [(str(k), (json.dumps({k: v}, ensure_ascii=False).encode("utf-8"), name)) for k, v in obj.items()]


def _read_jsonl_fast(data: bytes) -> pd.DataFrame | None:
    """Flat, consistently typed JSONL via pyarrow; None when anything is unusual (the exact reader explains it)."""
    import pyarrow as pa
    import pyarrow.json as pajson

    try:
        table = pajson.read_json(io.BytesIO(data), read_options=pajson.ReadOptions(block_size=_BLOCK_BYTES))
    except (pa.ArrowException, ValueError):
        return None
    for f in table.schema:
        t = f.type
        flat = pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_floating(t) \
            or pa.types.is_boolean(t) or pa.types.is_null(t)
        strings = pa.types.is_list(t) and pa.types.is_string(t.value_type)
        if not (flat or strings):
            return None
        if pa.types.is_floating(t):
            import pyarrow.compute as pc

            if pc.any(pc.is_inf(table[f.name])).as_py():
                return None  # an integer too large for a double became inf: the exact reader says which
    frame = table.to_pandas()
    for c in frame.columns:
        if frame[c].dtype == object:  # list columns come back as numpy arrays
            frame[c] = [list(v) if isinstance(v, np.ndarray) else v for v in frame[c]]
    return frame


def _json_memory_problem(name: str, data: bytes, unit: str) -> list[Problem]:
    """The import's memory estimated before parsing: a JSON cell is a key and its value (``"key":``), so counting
    those counts the cells (a text that holds ``":`` only makes the estimate larger)."""
    cells = data.count(b'":') + data.count(b'" :')
    why = UploadBudget.from_env().memory_problem(cells, len(data), "its keys counted")
    return [Problem(name, "-", "-", why, unit)] if why else []


def read_jsonl(name: str, data: bytes, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    problems = _nul_problem(name, data, unit) or _json_memory_problem(name, data, unit)
    if problems:
        return None, problems
    frame = _read_jsonl_fast(data) if data.strip() else None
    if frame is not None:
        frame.index = pd.Index(np.arange(1, len(frame) + 1, dtype="int64"), name=unit)
        return frame, []
    text, problems = _decode(name, data, unit)
    if text is None:
        return None, problems
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    n = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        n += 1
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(Problem(name, n, "-", f"malformed JSON on line {line_no}: {e.msg} (column {e.colno})",
                                    unit))
            continue
        except RecursionError:
            problems.append(Problem(name, n, "-", f"line {line_no} is {_TOO_DEEP}", unit))
            continue
        except ValueError as e:  # e.g. an integer over Python's 4,300-digit limit
            problems.append(Problem(name, n, "-", f"line {line_no} is not readable JSON: {e}", unit))
            continue
        if not isinstance(r, dict):
            problems.append(Problem(name, n, "-",
                                    f"line {line_no} is a JSON {type(r).__name__}, not an object with named fields",
                                    unit))
            continue
        records.append(r)
        numbers.append(n)
    return _records_frame(records, numbers, unit), problems


# ------------------------------------------------------------------------------------------------------ Parquet


def read_parquet(name: str, data: bytes, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    budget = UploadBudget.from_env()
    try:
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
        too_big = budget.shape_problem(meta.num_rows, meta.num_columns)
        if too_big:
            return None, [Problem(name, "-", "-", too_big, unit)]
        table, too_big = _read_row_groups(data, budget, meta.num_rows * meta.num_columns)
        if too_big:
            return None, [Problem(name, "-", "-", too_big, unit)]
        table = _decode_dictionaries(table)
    except (pa.ArrowException, OSError, ValueError) as e:
        return None, [Problem(name, "-", "-", f"not a readable Parquet file: {e}", unit)]
    for i, f in enumerate(table.schema):
        if pa.types.is_decimal(f.type):  # decimal128 ratings: exact decimals, read as doubles like any number
            table = table.set_column(i, f.name, table.column(i).cast(pa.float64()))
    frame = table.to_pandas()
    header, problems = unique_header(name, [str(c) for c in frame.columns], unit)
    frame.columns = header
    frame.index = pd.Index(np.arange(1, len(frame) + 1, dtype="int64"), name=unit)
    return frame, problems


def _read_row_groups(data: bytes, budget: UploadBudget, cells: int) -> tuple[Any, str | None]:
    """(the table with its text columns still dictionary-encoded, None), or (None, why it is refused). Row group by
    row group: what the texts will decode to is counted on the dictionaries as each group is read, and the reading
    stops at the first group past the budget (decoded size, and the import's memory for the file's cells)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = pq.ParquetFile(io.BytesIO(data))
    texts = [x.name for x in f.schema_arrow
             if pa.types.is_string(x.type) or pa.types.is_large_string(x.type) or pa.types.is_binary(x.type)]
    f = pq.ParquetFile(io.BytesIO(data), read_dictionary=texts)
    groups, decoded = [], 0
    for i in range(f.num_row_groups):
        group = f.read_row_group(i)
        decoded += arrow_decoded_bytes(group)
        counted = f" (counted on its first {i + 1} of {f.num_row_groups} row groups)" \
            if i + 1 < f.num_row_groups else ""
        too_big = budget.bytes_problem(decoded) or budget.memory_problem(
            cells, decoded, "its rows x columns and the texts' decoded size")
        if too_big:
            return None, too_big + counted
        groups.append(group)
    table = pa.concat_tables(groups) if groups else f.schema_arrow.empty_table()
    return table, None


def _decode_dictionaries(table: pa.Table) -> pa.Table:
    import pyarrow as pa

    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(f.type.value_type))
    return table


# -------------------------------------------------------------------------------------------- the formats
# Each format registers its reader (evalcore.registry.register_format); a plugin's reader is called the same way.


@register_format("csv", extensions=(".csv",), unit="line", label="CSV (comma or semicolon)",
                 convention="rows are CSV line numbers, counting the header as line 1")
def _read_csv(name: str, data: bytes, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    return read_delimited(name, data, "csv", unit)


@register_format("tsv", extensions=(".tsv",), unit="line", label="TSV",
                 convention="rows are TSV line numbers, counting the header as line 1")
def _read_tsv(name: str, data: bytes, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    return read_delimited(name, data, "tsv", unit)


@register_format("json", extensions=(".json",), unit="record", label="JSON (a list of records, or "
                 "{annotator: {item: label}})", convention="rows are record numbers in the JSON list (1 = the first "
                 "record)")
def _read_json_file(name: str, data: bytes, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    problems = _nul_problem(name, data, unit) or _json_memory_problem(name, data, unit)
    text, more = (None, []) if problems else _decode(name, data, unit)
    if text is None:
        return None, problems + more
    return read_json(name, text, unit)


register_format("jsonl", extensions=(".jsonl", ".ndjson"), unit="record", label="JSONL (one record a line)",
                convention="rows are record numbers (1 = the first JSON object in the file; blank lines not counted)",
                )(read_jsonl)
register_format("parquet", extensions=(".parquet", ".pq"), unit="row", label="Parquet",
                convention="rows are data row numbers (1 = the first row)")(read_parquet)


def _run_reader(spec: registry.Format, name: str, data: bytes) -> tuple[pd.DataFrame | None, list[Problem]]:
    """The format's reader on the file; a plugin's reader that raises is a problem of the file naming the plugin
    (the built-ins' own errors are bugs, and surface as such)."""
    if FORMATS.origin(spec.name) == registry.BUILTIN:
        return spec.reader(name, data, spec.unit)
    try:
        return spec.reader(name, data, spec.unit)
    except Exception as exc:  # noqa: BLE001 - third-party code: its failure is reported, never a crash
        return None, [Problem(name, "-", "-", f"the {spec.label} reader of plugin {FORMATS.origin(spec.name)} "
                                              f"failed: {type(exc).__name__}: {exc}", spec.unit)]


# ------------------------------------------------------------------------------------------------------ entry


def _nested_ratings(name: str, frame: pd.DataFrame, fmt: str, problems: list[Problem]
                    ) -> tuple[pd.DataFrame | None, str, list[Problem]]:
    """A published rating set that nests its ratings in each record (UltraFeedback) as its flat table, one row per
    completion (evalcore.importers.rating_sets); any other table as it is."""
    from evalcore.importers import rating_sets

    unit = row_convention(fmt)[0]
    for layout in NESTED_LAYOUTS:  # registered by a module that imports the readers (traces.py)
        found = layout(frame, fmt)
        if found is not None:
            flat, layout_fmt, said = found
            more = [Problem(name, rec, col, msg, unit) for rec, col, msg in said]
            return (None if more else flat), layout_fmt, problems + more
    if not rating_sets.is_ultrafeedback(frame):
        return frame, fmt, problems
    flat, said = rating_sets.ultrafeedback_frame(frame)
    more = [Problem(name, rec, col, msg, unit) for rec, col, msg in said]
    return (None if more else flat), rating_sets.ULTRAFEEDBACK, problems + more


# Layouts of a JSON file read as another table (frame, format) -> (table, its format, problems as (row, column,
# message)) or None when the file is not of that layout; registered by the modules that read them (traces.py), which
# import the readers, so the readers need not import them.
NestedLayout: TypeAlias = Callable[[pd.DataFrame, str],
                                   "tuple[pd.DataFrame | None, str, list[tuple[int | str, str, str]]] | None"]
NESTED_LAYOUTS: list[NestedLayout] = []


def read(name: str, data: bytes) -> tuple[pd.DataFrame | None, str, list[Problem]]:
    """The raw table (index = row numbers as a person counts them; None if unreadable), its format, read problems.

    Raises at once only for an unknown file type. Problems in a table that could still be read (a ragged CSV row, a
    malformed JSONL line) come back with the table, so the rows can be checked too and every problem reported.
    """
    spec = registry.format_of(name)
    if spec is None:
        known = ", ".join(sorted(e for f in FORMATS.values() for e in f.extensions))
        raise DatasetValidationError([Problem(
            name, "-", "-", f"unknown file type {Path(name).suffix or '(no extension)'!r}; use one of {known}")])
    fmt, unit = spec.name, spec.unit
    frame, problems = _run_reader(spec, name, data)
    if frame is not None and frame.attrs.get("layout") == "annotators":
        fmt = "json-annotators"
    if frame is not None and fmt in ("json", "jsonl", "csv", "parquet"):  # csv, parquet: trace exports
        frame, fmt, problems = _nested_ratings(name, frame, fmt, problems)
    if frame is not None:
        too_big = UploadBudget.from_env().shape_problem(len(frame), len(frame.columns))
        if too_big:
            return None, fmt, [Problem(name, "-", "-", too_big, unit)]
        frame.attrs["format"] = fmt
        frame.attrs["row_convention"] = row_convention(fmt)[1]
    return frame, fmt, problems


def read_table(source: Source, *, filename: str | None = None) -> pd.DataFrame:
    """The uploaded table as it is (for a preview), index = row numbers as the importer reports them.

    ``source`` is a path, bytes (with ``filename``), a ``(bytes, filename)`` pair, or an upload object with
    ``getvalue()`` and ``name`` (Streamlit's UploadedFile). CSV/TSV cells are strings exactly as in the file.
    Raises DatasetValidationError when the file cannot be read at all (encoding, malformed JSON, ...).
    """
    name, data = resolve_source(source, filename)
    frame, fmt, problems = read(name, data)
    if problems or frame is None:
        raise DatasetValidationError(problems, convention=row_convention(fmt)[1])
    return frame


def _display(v: object) -> str:
    try:
        return str(v)
    except ValueError:
        return "(an integer of more than 4,300 digits)"


def preview_frame(frame: pd.DataFrame, n: int = 20) -> pd.DataFrame:
    """The first ``n`` rows, safe to show in a grid: mixed-type JSON columns (a 400-digit integer, nested values)
    become their text, long cells are cut to 2,000 characters."""
    head = frame.head(n).copy()
    for c in head.columns:
        col = head[c]
        if col.dtype == object:
            head[c] = [None if v is None else (v if isinstance(v, str) else json.dumps(v, default=str)
                                               if isinstance(v, list) else _display(v)) for v in col]
            col = head[c]
        if col.dtype == object or pd.api.types.is_string_dtype(col.dtype):
            head[c] = [v[:2000] + " …" if isinstance(v, str) and len(v) > 2000 else v for v in col]
    return head


@dataclass
class Upload:
    """An uploaded file read for checking: its name and bytes, the table (never None), its format, and the
    problems found so far (reading ones first). Both the dataset importer and the judge-score importer start
    here."""

    name: str
    data: bytes
    frame: pd.DataFrame
    format: str
    convention: str
    problems: Problems

    def raise_if_problems(self) -> None:
        """DatasetValidationError listing every problem found so far, if there is one."""
        if self.problems:
            raise DatasetValidationError(self.problems.sorted(), convention=self.convention,
                                         total=self.problems.total)


def open_upload(source: Source, filename: str | None = None, *, table: pd.DataFrame | None = None) -> Upload:
    """Read ``source`` for checking, or raise DatasetValidationError when no table can be read at all. ``table``:
    the table :func:`read_table` already read from these bytes (the app keeps it), so the file is not parsed twice.
    A table without data rows is a problem (the checks still run, so every problem is listed)."""
    name, data = resolve_source(source, filename)
    read_problems: list[Problem] = []
    if table is not None and (table.attrs.get("format") in ROW_CONVENTIONS or table.attrs.get("format") in FORMATS):
        frame, fmt = table, table.attrs["format"]
    else:
        frame, fmt, read_problems = read(name, data)
    unit, convention = row_convention(fmt)
    problems = Problems(name, unit)
    problems.extend(read_problems)
    if frame is None:
        raise DatasetValidationError(problems.sorted(), convention=convention, total=problems.total)
    if len(frame) == 0:
        problems.add("-", "-", "the file has no data rows", block=Problems.READ)
    return Upload(name, data, frame, fmt, convention, problems)
