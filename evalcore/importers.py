"""Loading a user's own human-rated dataset (CSV, TSV, JSON, JSONL, Parquet) into :class:`evalcore.model.Dataset`.

Two table shapes are understood:

WIDE  one row per item (or per item x annotator, when an annotator column is mapped), one column per dimension;
      a dimension may instead map annotator names to columns (``{"coherence": {"a1": "coh_1", "a2": "coh_2"}}``).
LONG  one row per item x dimension (x annotator), with a dimension column and a value column.

The caller says which column is which with a :class:`ColumnMapping`; :func:`suggest_mapping` guesses one from the
column names so a form can be prefilled. :func:`load_user_dataset` either returns a complete Dataset or raises
:class:`DatasetValidationError` listing every problem found (file, row, column, what is wrong): an invalid file
imports nothing.

Rows are numbered as a person finds them in the file: CSV/TSV by physical line number counting the header as line 1
(so a quoted field spanning several lines is numbered by the line its record starts on), JSON and JSONL by record
number (1 = the first record), Parquet by data row (1 = the first row).

Texts are kept verbatim: nothing is stripped, unescaped or HTML-escaped here (the UI escapes on display).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from evalcore.model import (
    ANNOTATION_COLUMNS,
    DOCUMENT_COLUMNS,
    HUMAN_SCORE_COLUMNS,
    ITEM_COLUMNS,
    Dataset,
    Dimension,
)

__all__ = [
    "FORMATS",
    "ColumnMapping",
    "DatasetValidationError",
    "Problem",
    "detect_format",
    "load_user_dataset",
    "read_table",
    "suggest_mapping",
]

# extension -> format name
FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}

# What a row number means, per format: (unit word used in messages, sentence explaining it).
_ROW_CONVENTIONS: dict[str, tuple[str, str]] = {
    "csv": ("line", "rows are CSV line numbers, counting the header as line 1"),
    "tsv": ("line", "rows are TSV line numbers, counting the header as line 1"),
    "json": ("record", "rows are record numbers in the JSON list (1 = the first record)"),
    "jsonl": ("record", "rows are record numbers (1 = the first JSON object in the file; blank lines not counted)"),
    "parquet": ("row", "rows are data row numbers (1 = the first row)"),
}

REFERENCE_SEPARATOR = "|||"
DEFAULT_GROUP = "annotator"
PREFERRED_GROUP = "expert"
MAX_PROBLEMS_SHOWN = 50


# --------------------------------------------------------------------------------------------------------------------
# Problems


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


# --------------------------------------------------------------------------------------------------------------------
# Column mapping


@dataclass
class ColumnMapping:
    """Which column of the user's table holds what.

    Identity and text fields name one column each (``reference`` may name several: their references are
    concatenated). Ratings are either WIDE (``dimensions``: dimension name -> column, or dimension name ->
    {annotator name -> column}) or LONG (``dimension`` and ``value`` columns). ``annotator`` / ``group`` name columns
    of per-annotator rows; ``default_group`` is the group given to annotators without one. ``scales`` declares each
    dimension's rating scale; a dimension without one gets the min/max seen in the data (and the Dataset says so).
    ``allow_missing_ratings`` lets a blank rating cell mean "not rated" instead of being a problem.
    """

    doc_id: str | None = None
    system_id: str | None = None
    output: str | None = None
    source: str | None = None
    reference: str | list[str] | None = None
    context: str | None = None
    item_id: str | None = None
    dimensions: dict[str, str | dict[str, str]] = field(default_factory=dict)
    dimension: str | None = None
    value: str | None = None
    annotator: str | None = None
    group: str | None = None
    attributes: list[str] = field(default_factory=list)
    scales: dict[str, tuple[float, float]] = field(default_factory=dict)
    default_group: str = DEFAULT_GROUP
    allow_missing_ratings: bool = False

    @property
    def shape(self) -> str:
        """"wide", "long", or "unknown" when neither (or both) kinds of rating column are mapped."""
        wide = bool(self.dimensions)
        long = self.dimension is not None or self.value is not None
        if wide and not long:
            return "wide"
        if long and not wide:
            return "long"
        return "unknown"

    @property
    def references(self) -> list[str]:
        if self.reference is None:
            return []
        return [self.reference] if isinstance(self.reference, str) else list(self.reference)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scales"] = {k: [float(lo), float(hi)] for k, (lo, hi) in sorted(self.scales.items())}
        return d

    def to_json(self) -> str:
        """Canonical JSON (sorted keys): part of the dataset id, so the same upload + mapping gives the same id."""
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ColumnMapping":
        d = dict(d)
        d["scales"] = {k: (float(v[0]), float(v[1])) for k, v in (d.get("scales") or {}).items()}
        d["attributes"] = list(d.get("attributes") or [])
        d["dimensions"] = dict(d.get("dimensions") or {})
        return cls(**d)

    def _column_fields(self) -> list[tuple[str, str]]:
        """(what it is mapped as, column name) for every mapped column."""
        out: list[tuple[str, str]] = []
        for name in ("item_id", "doc_id", "system_id", "output", "source", "context", "dimension", "value",
                     "annotator", "group"):
            col = getattr(self, name)
            if col is not None:
                out.append((name, col))
        out += [("reference", c) for c in self.references]
        out += [("attribute", c) for c in self.attributes]
        for dim, spec in self.dimensions.items():
            if isinstance(spec, dict):
                out += [(f"dimension {dim!r}, annotator {ann!r}", c) for ann, c in spec.items()]
            else:
                out.append((f"dimension {dim!r}", spec))
        return out


# --------------------------------------------------------------------------------------------------------------------
# Guessing a mapping from column names


def _norm(name: Any) -> str:
    return re.sub(r"[^0-9a-z]+", "_", str(name).strip().lower()).strip("_")


# Ordered by preference: the first alias present wins.
_ALIASES: dict[str, list[str]] = {
    "item_id": ["item_id", "itemid", "item", "example_id", "sample_id", "instance_id", "uid"],
    "doc_id": ["doc_id", "docid", "document_id", "doc", "document", "id", "article_id", "source_id", "dialogue_id",
               "dialog_id", "conversation_id", "context_id", "input_id"],
    "system_id": ["system_id", "system", "model", "model_id", "model_name", "system_name", "sys", "sys_id",
                  "generator"],
    "output": ["output", "summary", "response", "system_output", "hypothesis", "hyp", "generation", "generated_text",
               "candidate", "prediction", "completion", "decoded"],
    "source": ["source", "article", "src", "document_text", "dialogue", "dialog", "source_text", "article_text",
               "input", "conversation", "dialogue_history", "history"],
    "reference": ["reference", "references", "ref", "refs", "reference_summary", "reference_summaries", "gold",
                  "target"],
    "context": ["context", "fact", "facts", "knowledge"],
    "attributes": ["written_by", "writer", "author_type", "system_type", "model_type", "model_family"],
    "annotator": ["annotator", "annotator_id", "rater", "rater_id", "worker", "worker_id", "annotator_name"],
    "group": ["group", "annotator_group", "annotator_type", "rater_group", "rater_type", "worker_type"],
    "dimension": ["dimension", "aspect", "criterion", "criteria", "metric", "quality_dimension"],
    "value": ["value", "score", "rating", "human_score", "human_rating"],
}

# canonical dimension name -> names and abbreviations seen in released datasets
_DIMENSION_ALIASES: dict[str, list[str]] = {
    "coherence": ["coherence", "coh", "coherent"],
    "consistency": ["consistency", "con", "cons", "consistent"],
    "fluency": ["fluency", "flu", "fluent"],
    "relevance": ["relevance", "rel", "relevant"],
    "naturalness": ["naturalness", "nat", "natural"],
    "engagingness": ["engagingness", "engaging", "eng"],
    "groundedness": ["groundedness", "grounded", "gro"],
    "understandability": ["understandability", "understandable", "und"],
    "maintains_context": ["maintains_context"],
    "interestingness": ["interestingness", "interesting"],
    "uses_knowledge": ["uses_knowledge"],
    "overall": ["overall", "overall_quality", "overall_score"],
    "informativeness": ["informativeness", "informative", "inf"],
    "faithfulness": ["faithfulness", "faithful"],
    "factuality": ["factuality", "factual", "factual_consistency", "factuality_score"],
    "grammaticality": ["grammaticality", "grammar", "grammatical"],
    "readability": ["readability"],
    "correctness": ["correctness", "correct"],
    "helpfulness": ["helpfulness", "helpful"],
    "harmlessness": ["harmlessness", "harmless"],
    "adequacy": ["adequacy"],
    "specificity": ["specificity", "specific"],
    "accuracy": ["accuracy"],
}
_DIMENSION_LOOKUP = {alias: canon for canon, aliases in _DIMENSION_ALIASES.items() for alias in aliases}


def _dimension_of(norm_name: str) -> str | None:
    """The canonical dimension a (normalised) column name denotes, allowing "_score"/"_rating"/"human_" around it."""
    candidates = [norm_name]
    for prefix in ("human_", "avg_", "mean_", "expert_"):
        if norm_name.startswith(prefix):
            candidates.append(norm_name[len(prefix):])
    for suffix in ("_score", "_rating", "_avg", "_mean"):
        candidates += [c[: -len(suffix)] for c in list(candidates) if c.endswith(suffix)]
    for c in candidates:
        if c in _DIMENSION_LOOKUP:
            return _DIMENSION_LOOKUP[c]
    return None


def _per_annotator_dimension(norm_name: str) -> tuple[str, str] | None:
    """("coherence", "a1") for names like coherence_a1, coh_1, coherence2, coherence_expert_3."""
    # the longest leading part that names a dimension, followed by an annotator tag that ends in a number
    for cut in range(len(norm_name) - 1, 0, -1):
        head, tail = norm_name[:cut].rstrip("_"), norm_name[cut:].lstrip("_")
        if tail and re.fullmatch(r"(?:[a-z]+_?)?\d+", tail):
            dim = _dimension_of(head)
            if dim is not None:
                return dim, tail
    return None


def suggest_mapping(columns: Iterable[Any], sample: pd.DataFrame | None = None) -> ColumnMapping:
    """Guess a ColumnMapping from column names (for prefilling a form; the user confirms it).

    Long shape is guessed when both a dimension-like column (dimension/aspect/criterion/metric) and a value-like
    column (value/score/rating) exist; otherwise columns named after known dimensions (coherence, coh, fluency, ...)
    become wide dimensions, names like ``coherence_a1`` / ``coh_2`` become per-annotator columns, and, given a
    ``sample`` of the table, any other unmapped column whose values are all numbers becomes a dimension too.
    Scales are not guessed: the importer infers them from the data unless the user declares them.
    """
    cols = [str(c) for c in columns]
    by_norm: dict[str, str] = {}
    for c in cols:
        by_norm.setdefault(_norm(c), c)
    used: set[str] = set()

    def pick(role: str) -> str | None:
        for alias in _ALIASES[role]:
            c = by_norm.get(alias)
            if c is not None and c not in used:
                used.add(c)
                return c
        return None

    m = ColumnMapping()
    # Order matters: the most specific roles claim their columns first ("document_text" is a source, "id" a doc_id).
    m.item_id = pick("item_id")
    m.doc_id = pick("doc_id")
    m.system_id = pick("system_id")
    m.output = pick("output")
    m.source = pick("source")
    m.context = pick("context")
    m.reference = pick("reference")
    m.annotator = pick("annotator")
    m.group = pick("group")
    m.attributes = [by_norm[a] for a in _ALIASES["attributes"] if a in by_norm and by_norm[a] not in used]
    used |= set(m.attributes)

    dim_col = next((by_norm[a] for a in _ALIASES["dimension"] if a in by_norm and by_norm[a] not in used), None)
    val_col = next((by_norm[a] for a in _ALIASES["value"] if a in by_norm and by_norm[a] not in used), None)
    if dim_col is not None and val_col is not None:
        m.dimension, m.value = dim_col, val_col
        used |= {dim_col, val_col}
    else:
        dims: dict[str, str | dict[str, str]] = {}
        for c in cols:
            if c in used:
                continue
            n = _norm(c)
            dim = _dimension_of(n)
            if dim is not None and dim not in dims:
                dims[dim] = c
                used.add(c)
                continue
            per = _per_annotator_dimension(n) if m.annotator is None else None
            if per is not None:
                d, ann = per
                spec = dims.get(d)
                if not isinstance(spec, dict):
                    if isinstance(spec, str):
                        used.discard(spec)  # per-annotator columns carry more than a precomputed mean
                    spec = {}
                    dims[d] = spec
                spec[ann] = c
                used.add(c)
        if sample is not None:
            for c in cols:
                if c in used or c not in sample.columns:
                    continue
                values = [v for v in sample[c].tolist() if not _is_blank(v)]
                if values and all(_parse_rating(v)[1] is None for v in values):
                    dims[c] = c
                    used.add(c)
        if not dims and val_col is not None:
            dims["overall"] = val_col  # a lone "score"/"rating" column is one overall judgement
            used.add(val_col)
        m.dimensions = dims
    if m.group is not None and m.annotator is None and not any(isinstance(s, dict) for s in m.dimensions.values()):
        m.group = None  # a group without annotators means nothing
    return m


# --------------------------------------------------------------------------------------------------------------------
# Reading files


def detect_format(filename: str) -> str | None:
    """Format name from a file name's extension ("csv", "tsv", "json", "jsonl", "parquet"), or None."""
    return FORMATS.get(Path(filename).suffix.lower())


def _resolve_source(source: Any, filename: str | None) -> tuple[str, bytes]:
    """(name used in messages, file bytes) from a path, bytes (+ filename), a (bytes, filename) pair, or an upload."""
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[0], (bytes, bytearray)):
        data, name = source
        return str(filename or name), bytes(data)
    if isinstance(source, (bytes, bytearray, memoryview)):
        if not filename:
            raise ValueError("bytes given without a filename: pass filename=... so the format can be detected")
        return filename, bytes(source)
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise DatasetValidationError(
                [Problem(str(filename or source), "-", "-", f"cannot read the file: {e.strerror or e}")]
            ) from None
        return str(filename or source), data
    # Streamlit's UploadedFile (getvalue + name) or any binary file object
    if hasattr(source, "getvalue") or hasattr(source, "read"):
        data = source.getvalue() if hasattr(source, "getvalue") else source.read()
        name = filename or getattr(source, "name", None)
        if not name:
            raise ValueError("file object without a name: pass filename=... so the format can be detected")
        if isinstance(data, str):
            data = data.encode("utf-8")
        return str(name), bytes(data)
    raise TypeError(f"cannot read a dataset from {type(source).__name__}: give a path, bytes or (bytes, filename)")


def _decode(name: str, data: bytes, unit: str) -> tuple[str | None, list[Problem]]:
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        bad = data[e.start: e.start + 1].hex()
        # for CSV/TSV the row convention is the physical line, so the bad byte's line is the row
        return None, [Problem(
            name, line if unit == "line" else "-", "-",
            f"the file is not UTF-8 text (byte 0x{bad} on physical line {line}, offset {e.start}); "
            "save it as UTF-8 (in Excel: 'CSV UTF-8') and upload again",
            unit,
        )]


def _unique_header(name: str, header: list[str], unit: str) -> tuple[list[str], list[Problem]]:
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


def _read_delimited(name: str, text: str, delimiter: str, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    problems: list[Problem] = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
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
                header, header_problems = _unique_header(name, record, unit)
                problems += header_problems
                continue
            if len(record) > len(header):
                extra = record[len(header):]
                if any(x != "" for x in extra):
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
        problems.append(Problem(name, reader.line_num, "-", f"cannot parse this line: {e}", unit))
    if header is None:
        problems.append(Problem(name, "-", "-", "the file is empty (no header line)", unit))
        return None, problems
    frame = pd.DataFrame(rows, columns=header, dtype=object) if rows else pd.DataFrame(
        {h: pd.Series(dtype=object) for h in header})
    frame.index = pd.Index(line_numbers, name=unit, dtype="int64")
    return frame, problems


def _records_frame(records: list[dict[str, Any]], numbers: list[int], unit: str) -> pd.DataFrame:
    columns: dict[str, None] = {}
    for r in records:
        for k in r:
            columns.setdefault(str(k), None)
    data = {c: pd.Series([r.get(c) for r in records], dtype=object) for c in columns}
    frame = pd.DataFrame(data) if data else pd.DataFrame(index=range(len(records)))
    frame.index = pd.Index(numbers, name=unit, dtype="int64")
    return frame


def _read_json(name: str, text: str, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return None, [Problem(name, "-", "-", f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}", unit)]
    if isinstance(obj, dict) and isinstance(obj.get("records"), list):
        raw = obj["records"]
    elif isinstance(obj, list):
        raw = obj
    else:
        return None, [Problem(name, "-", "-",
                              'expected a JSON list of records or an object {"records": [...]}', unit)]
    problems = [
        Problem(name, i, "-", f"record {i} is a JSON {type(r).__name__}, not an object with named fields", unit)
        for i, r in enumerate(raw, start=1) if not isinstance(r, dict)
    ]
    records = [r for r in raw if isinstance(r, dict)]
    numbers = [i for i, r in enumerate(raw, start=1) if isinstance(r, dict)]
    return _records_frame(records, numbers, unit), problems


def _read_jsonl(name: str, text: str, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    problems: list[Problem] = []
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
        if not isinstance(r, dict):
            problems.append(Problem(name, n, "-",
                                    f"line {line_no} is a JSON {type(r).__name__}, not an object with named fields",
                                    unit))
            continue
        records.append(r)
        numbers.append(n)
    return _records_frame(records, numbers, unit), problems


def _read_parquet(name: str, data: bytes, unit: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError, ValueError) as e:
        return None, [Problem(name, "-", "-", f"not a readable Parquet file: {e}", unit)]
    frame = table.to_pandas()
    header, problems = _unique_header(name, [str(c) for c in frame.columns], unit)
    frame.columns = header
    frame.index = pd.Index(range(1, len(frame) + 1), name=unit, dtype="int64")
    return frame, problems


def _read(name: str, data: bytes) -> tuple[pd.DataFrame | None, str, list[Problem]]:
    """The raw table (index = row numbers as a person counts them; None if unreadable), its format, read problems.

    Raises at once only for an unknown file type. Problems in a table that could still be read (a ragged CSV row, a
    malformed JSONL line) come back with the table, so the rows can be checked too and every problem reported.
    """
    fmt = detect_format(name)
    if fmt is None:
        raise DatasetValidationError([Problem(
            name, "-", "-",
            f"unknown file type {Path(name).suffix or '(no extension)'!r}; use one of {', '.join(sorted(FORMATS))}")])
    unit, convention = _ROW_CONVENTIONS[fmt]
    if fmt == "parquet":
        frame, problems = _read_parquet(name, data, unit)
    else:
        text, problems = _decode(name, data, unit)
        frame = None
        if text is not None:
            if fmt in ("csv", "tsv"):
                frame, problems = _read_delimited(name, text, "," if fmt == "csv" else "\t", unit)
            elif fmt == "json":
                frame, problems = _read_json(name, text, unit)
            else:
                frame, problems = _read_jsonl(name, text, unit)
    if frame is not None:
        frame.attrs["format"] = fmt
        frame.attrs["row_convention"] = convention
    return frame, fmt, problems


def read_table(source: Any, *, filename: str | None = None) -> pd.DataFrame:
    """The uploaded table as it is (for a preview), index = row numbers as :func:`load_user_dataset` reports them.

    ``source`` is a path, bytes (with ``filename``), a ``(bytes, filename)`` pair, or an upload object with
    ``getvalue()`` and ``name`` (Streamlit's UploadedFile). CSV/TSV cells are strings exactly as in the file.
    Raises DatasetValidationError when the file cannot be read at all (encoding, malformed JSON, ...).
    """
    name, data = _resolve_source(source, filename)
    frame, fmt, problems = _read(name, data)
    if problems or frame is None:
        raise DatasetValidationError(problems, convention=_ROW_CONVENTIONS[fmt][1])
    return frame


# --------------------------------------------------------------------------------------------------------------------
# Cell conversion


def _is_blank(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return isinstance(v, str) and v.strip() == ""


def _id_text(v: Any) -> str | None:
    """An identifier as text; None when blank. Integral floats (Parquet int columns with nulls) lose their ".0"."""
    if _is_blank(v):
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


def _text(v: Any) -> str | None:
    """A text verbatim; None when missing. Non-strings (a number as output) become their str()."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return v if isinstance(v, str) else str(v)


def _references(v: Any) -> list[str]:
    """A reference cell -> list of references: a JSON list, "|||"-separated strings, a list value, or one text."""
    if isinstance(v, (list, tuple, np.ndarray)):
        return [x if isinstance(x, str) else str(x) for x in v if not _is_blank(x)]
    if _is_blank(v):
        return []
    if not isinstance(v, str):
        return [str(v)]
    if v.lstrip().startswith("["):
        try:
            parsed = json.loads(v)
        except json.JSONDecodeError:
            parsed = None  # a reference may simply start with "[" ("[CNN] ..."): then it is one text
        if isinstance(parsed, list) and all(isinstance(x, str) for x in parsed):
            return [x for x in parsed if x.strip()]
    if REFERENCE_SEPARATOR in v:
        # the whitespace around the separator is layout, not part of a reference
        return [p.strip() for p in v.split(REFERENCE_SEPARATOR) if p.strip()]
    return [v]


def _parse_rating(v: Any) -> tuple[float | None, str | None]:
    """(value, None) for a number, (None, None) for a blank cell, (None, why) for anything else."""
    if _is_blank(v):
        return None, None
    if isinstance(v, (bool, np.bool_)):
        return None, f"a rating must be a number, not the boolean {v!r}"
    if isinstance(v, (int, float, np.integer, np.floating)):
        x = float(v)
    elif isinstance(v, str):
        s = v.strip()
        try:
            x = float(s)
        except ValueError:
            hint = ""
            if re.fullmatch(r"[+-]?\d+,\d+", s):
                hint = " (use a dot as the decimal separator)"
            return None, f"rating {v!r} is not a number{hint}"
    else:
        return None, f"rating {v!r} is not a number"
    if not math.isfinite(x):
        return None, f"rating {v!r} is not a finite number"
    return x, None


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _is_preferred(group: str) -> bool:
    return group.strip().lower() == PREFERRED_GROUP


def _mean(values: list[float]) -> float:
    # Sorted exact summation: the mean does not depend on the order annotators appear in the file, so the same
    # ratings give bit-identical human scores whatever the table's shape or row order.
    return math.fsum(sorted(values)) / len(values)


# --------------------------------------------------------------------------------------------------------------------
# Loading


def _valid_scale(scale: Any) -> tuple[float, float] | None:
    try:
        lo, hi = float(scale[0]), float(scale[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) and lo < hi and len(scale) == 2 else None


def _check_mapping(mapping: ColumnMapping, columns: list[str], name: str, unit: str) -> list[Problem]:
    problems: list[Problem] = []

    def whole(column: str, message: str) -> None:
        problems.append(Problem(name, "-", column, message, unit))

    for role, what in (("doc_id", "the document (source text) each output was generated from"),
                       ("system_id", "the system that produced each output"),
                       ("output", "the rated text")):
        if getattr(mapping, role) is None:
            whole("-", f"no column is mapped to {role} ({what})")
    shape = mapping.shape
    if shape == "unknown":
        if mapping.dimensions:
            whole("-", "both dimension columns (wide) and a dimension/value column pair (long) are mapped; "
                       "choose one shape")
        else:
            whole("-", "no ratings are mapped: map dimension columns (wide) or a dimension and a value column (long)")
    elif shape == "long":
        if mapping.dimension is None:
            whole("-", "long shape needs a dimension column (which quality each row rates)")
        if mapping.value is None:
            whole("-", "long shape needs a value column (the rating)")
    per_annotator_columns = any(isinstance(s, dict) for s in mapping.dimensions.values())
    if per_annotator_columns and mapping.annotator is not None:
        whole(mapping.annotator, "per-annotator dimension columns and an annotator column cannot be combined")
    if mapping.group is not None and mapping.annotator is None:
        whole(mapping.group, "a group column is mapped but no annotator column")
    for dim, spec in mapping.dimensions.items():
        if isinstance(spec, dict) and not spec:
            whole("-", f"dimension {dim!r} maps no annotator columns")
    for dim, scale in mapping.scales.items():
        try:
            lo, hi = float(scale[0]), float(scale[1])
        except (TypeError, ValueError, IndexError):
            whole("-", f"scale for {dim!r} must be (min, max) numbers, got {scale!r}")
            continue
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            whole("-", f"scale for {dim!r} must have min < max, got ({_fmt(lo)}, {_fmt(hi)})")
        if shape == "wide" and dim not in mapping.dimensions:
            whole("-", f"a scale is declared for {dim!r}, which is not a mapped dimension "
                       f"({', '.join(map(repr, mapping.dimensions)) or 'none'})")
    present = set(columns)
    for role, col in mapping._column_fields():
        if col not in present:
            shown = ", ".join(map(repr, columns[:30])) + (" ..." if len(columns) > 30 else "")
            whole(col, f"column {col!r} (mapped as {role}) is not in the file; its columns are: {shown}")
    return problems


@dataclass
class _ItemRecord:
    row: int
    doc_id: str
    system_id: str
    output: str | None
    attributes: dict[str, Any]


@dataclass
class _DocRecord:
    source: str | None = None
    source_row: int = 0
    references: list[str] | None = None
    references_row: int = 0
    context: str | None = None
    context_row: int = 0


def load_user_dataset(
    source: Any,
    mapping: ColumnMapping,
    *,
    filename: str | None = None,
    name: str | None = None,
    task: str = "user dataset",
) -> Dataset:
    """Import a human-rated table as a Dataset, or raise DatasetValidationError listing every problem.

    ``source``: as for :func:`read_table`. The dataset id is ``"user-" + sha256(file bytes + mapping JSON)[:12]``,
    so re-uploading the same file with the same mapping gives the same id. Per-annotator ratings go to
    ``annotations`` (group from the group column, else ``mapping.default_group``); ``human_scores`` is, per item and
    dimension, the mean over the "expert" group's ratings when there are any, else over all annotators' ratings.
    """
    fname, data = _resolve_source(source, filename)
    frame, fmt, problems = _read(fname, data)
    unit, convention = _ROW_CONVENTIONS[fmt]
    if frame is None:
        raise DatasetValidationError(problems, convention=convention)
    columns = [str(c) for c in frame.columns]
    problems += _check_mapping(mapping, columns, fname, unit)
    present = set(columns)

    def col(c: str | None) -> str | None:
        return c if c is not None and c in present else None

    def report(row: int | str, column: str, message: str) -> None:
        problems.append(Problem(fname, row, column, message, unit))

    if len(frame) == 0:
        report("-", "-", "the file has no data rows")

    c_item, c_doc, c_sys, c_out = col(mapping.item_id), col(mapping.doc_id), col(mapping.system_id), col(mapping.output)
    c_src, c_ctx = col(mapping.source), col(mapping.context)
    c_refs = [c for c in mapping.references if c in present]
    c_attrs = [c for c in mapping.attributes if c in present]
    c_dim, c_val = col(mapping.dimension), col(mapping.value)
    c_ann, c_grp = col(mapping.annotator), col(mapping.group)
    shape = mapping.shape
    has_annotators = mapping.annotator is not None or any(isinstance(s, dict) for s in mapping.dimensions.values())
    scales = {d: sc for d, sc in ((d, _valid_scale(s)) for d, s in mapping.scales.items()) if sc is not None}

    items: dict[str, _ItemRecord] = {}
    docs: dict[str, _DocRecord] = {}
    # (item_id, dimension, annotator, group, value)
    ratings: list[tuple[str, str, str | None, str, float]] = []
    seen: dict[tuple[str, str, str | None], int] = {}
    dimension_order: dict[str, None] = {d: None for d in mapping.dimensions} if shape == "wide" else {}
    missing_ratings = 0
    dims_with_bad_cells: set[str] = set()

    records = frame.to_dict("records")
    for row, rec in zip(frame.index.tolist(), records):
        doc_id = _id_text(rec[c_doc]) if c_doc else None
        system_id = _id_text(rec[c_sys]) if c_sys else None
        if c_doc and doc_id is None:
            report(row, c_doc, "missing doc_id (empty cell)")
        if c_sys and system_id is None:
            report(row, c_sys, "missing system_id (empty cell)")
        if c_item:
            item_id = _id_text(rec[c_item])
            if item_id is None:
                report(row, c_item, "missing item_id (empty cell)")
        else:
            item_id = f"{doc_id}/{system_id}" if doc_id is not None and system_id is not None else None
        output = _text(rec[c_out]) if c_out else None
        if c_out and (output is None or output.strip() == ""):
            report(row, c_out, "empty output text")
        attributes = {c: (None if _is_blank(rec[c]) else rec[c]) for c in c_attrs}

        # the item: the same item on several rows (long shape, per-annotator rows) must agree with itself
        if item_id is not None and doc_id is not None and system_id is not None:
            prior = items.get(item_id)
            if prior is None:
                items[item_id] = _ItemRecord(row, doc_id, system_id, output, attributes)
            else:
                for what, column, mine, theirs in (
                    ("doc_id", c_doc, doc_id, prior.doc_id),
                    ("system_id", c_sys, system_id, prior.system_id),
                    ("output", c_out, output, prior.output),
                    *((f"attribute {a!r}", a, attributes[a], prior.attributes.get(a)) for a in c_attrs),
                ):
                    if column and mine is not None and theirs is not None and mine != theirs:
                        report(row, column, f"item {item_id!r} has a different {what} here than on {unit} "
                                            f"{prior.row}")
                for a in c_attrs:  # an attribute given on a later row only still belongs to the item
                    if prior.attributes.get(a) is None and attributes[a] is not None:
                        prior.attributes[a] = attributes[a]

        # the document's texts: given once or repeated identically; blank repeats are fine
        if doc_id is not None:
            doc = docs.setdefault(doc_id, _DocRecord())
            if c_src:
                src = _text(rec[c_src])
                if src is not None and src != "":
                    if doc.source is None:
                        doc.source, doc.source_row = src, row
                    elif doc.source != src:
                        report(row, c_src, f"document {doc_id!r} has a different source text here than on {unit} "
                                           f"{doc.source_row}")
            if c_refs:
                refs = [r for c in c_refs for r in _references(rec[c])]
                if refs:
                    if doc.references is None:
                        doc.references, doc.references_row = refs, row
                    elif doc.references != refs:
                        report(row, c_refs[0], f"document {doc_id!r} has different references here than on "
                                               f"{unit} {doc.references_row}")
            if c_ctx:
                ctx = _text(rec[c_ctx])
                if ctx is not None and ctx != "":
                    if doc.context is None:
                        doc.context, doc.context_row = ctx, row
                    elif doc.context != ctx:
                        report(row, c_ctx, f"document {doc_id!r} has a different context here than on {unit} "
                                           f"{doc.context_row}")

        # the ratings this row carries: (dimension, annotator, group, cell, column)
        row_annotator: str | None = None
        row_group = mapping.default_group
        if c_ann:
            row_annotator = _id_text(rec[c_ann])
            if row_annotator is None:
                report(row, c_ann, "missing annotator (empty cell)")
            if c_grp:
                g = _id_text(rec[c_grp])
                row_group = g if g is not None else mapping.default_group
        cells: list[tuple[str, str | None, str, Any, str]] = []
        if shape == "wide":
            for dim, spec in mapping.dimensions.items():
                if isinstance(spec, dict):
                    cells += [(dim, str(ann), mapping.default_group, rec[c], c) for ann, c in spec.items()
                              if c in present]
                elif spec in present:
                    cells.append((dim, row_annotator, row_group, rec[spec], spec))
        elif shape == "long" and c_dim and c_val:
            dim = _id_text(rec[c_dim])
            if dim is None:
                report(row, c_dim, "missing dimension name (empty cell)")
            else:
                dimension_order.setdefault(dim, None)
                cells.append((dim, row_annotator, row_group, rec[c_val], c_val))

        for dim, annotator, group, cell, column in cells:
            value, why = _parse_rating(cell)
            if why is not None:
                report(row, column, why)
                dims_with_bad_cells.add(dim)
                continue
            if value is None:
                if mapping.allow_missing_ratings:
                    missing_ratings += 1
                else:
                    report(row, column, f"empty rating for {dim!r} (set allow_missing_ratings to treat a blank "
                                        "cell as not rated)")
                    dims_with_bad_cells.add(dim)
                continue
            if dim in scales:
                lo, hi = scales[dim]
                if not lo <= value <= hi:
                    report(row, column, f"rating {_fmt(value)} is outside the declared scale "
                                        f"{_fmt(lo)}-{_fmt(hi)} for {dim!r}")
                    continue
            if item_id is None or (mapping.annotator is not None and annotator is None):
                dims_with_bad_cells.add(dim)
                continue  # cannot tell whose rating it is (already reported); no duplicate check possible
            key = (item_id, dim, annotator if has_annotators else None)
            if key in seen:
                by = f", annotator {annotator!r}" if has_annotators else ""
                report(row, column, f"duplicate rating: item {item_id!r}, dimension {dim!r}{by} was already "
                                    f"rated on {unit} {seen[key]}")
                continue
            seen[key] = row
            ratings.append((item_id, dim, annotator, group, value))

    if shape == "long":
        for dim in scales:
            if dim not in dimension_order and not frame.empty:
                report("-", "-", f"a scale is declared for {dim!r}, but no row rates that dimension "
                                 f"(dimensions found: {', '.join(map(repr, dimension_order)) or 'none'})")

    # dimensions and their scales
    notes: list[str] = []
    values_by_dim: dict[str, list[float]] = {d: [] for d in dimension_order}
    for _, dim, _, _, value in ratings:
        values_by_dim[dim].append(value)
    dimensions: list[Dimension] = []
    for dim in dimension_order:
        if dim in scales:
            lo, hi = scales[dim]
            dimensions.append(Dimension(dim, lo, hi, f"scale {_fmt(lo)}-{_fmt(hi)} (declared)"))
        elif values_by_dim[dim]:
            lo, hi = min(values_by_dim[dim]), max(values_by_dim[dim])
            note = (f"scale of {dim!r} inferred from the data as {_fmt(lo)}-{_fmt(hi)} (the lowest and highest "
                    "rating given); declare it if the scale is wider")
            notes.append(note)
            dimensions.append(Dimension(dim, lo, hi, f"scale {_fmt(lo)}-{_fmt(hi)} (inferred from the data)"))
        elif dim not in dims_with_bad_cells and len(frame) and not any(p.row == "-" for p in problems):
            # only when nothing else explains it (e.g. every cell blank under allow_missing_ratings)
            spec = mapping.dimensions.get(dim)
            report("-", spec if isinstance(spec, str) else "-",
                   f"dimension {dim!r} has no ratings at all, so its scale cannot be inferred; declare it")

    if problems:
        raise DatasetValidationError(problems, convention=convention)

    # ---- everything checked: build the tables
    item_rows = [
        {"item_id": iid, "doc_id": r.doc_id, "system_id": r.system_id, "output": r.output, **r.attributes}
        for iid, r in items.items()
    ]
    items_frame = pd.DataFrame(item_rows, columns=ITEM_COLUMNS + c_attrs, dtype=object)
    doc_rows = [
        {"doc_id": d, "source": r.source if r.source is not None else "",
         "references": list(r.references or []), "context": r.context if r.context is not None else ""}
        for d, r in docs.items()
    ]
    documents = pd.DataFrame(doc_rows, columns=DOCUMENT_COLUMNS, dtype=object)

    by_cell: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for iid, dim, _, group, value in ratings:
        by_cell.setdefault((iid, dim), []).append((group, value))
    item_pos = {iid: i for i, iid in enumerate(items)}
    dim_pos = {d: i for i, d in enumerate(dimension_order)}
    score_rows = []
    fallback = 0
    any_preferred = any(_is_preferred(g) for _, _, _, g, _ in ratings)
    for (iid, dim), vals in sorted(by_cell.items(), key=lambda kv: (item_pos[kv[0][0]], dim_pos[kv[0][1]])):
        preferred = [v for g, v in vals if _is_preferred(g)]
        if has_annotators and not preferred and any_preferred:
            fallback += 1
        score_rows.append({"item_id": iid, "dimension": dim, "score": _mean(preferred or [v for _, v in vals])})
    human_scores = pd.DataFrame(score_rows, columns=HUMAN_SCORE_COLUMNS)
    human_scores["score"] = human_scores["score"].astype("float64")

    if has_annotators:
        annotations = pd.DataFrame(
            [{"item_id": i, "dimension": d, "annotator": a, "group": g, "value": v} for i, d, a, g, v in ratings],
            columns=ANNOTATION_COLUMNS,
        )
        annotations["value"] = annotations["value"].astype("float64")
        if any_preferred:
            notes.append(f"human scores are the mean of the {PREFERRED_GROUP!r} group's ratings"
                         + (f" ({fallback} item-dimension cells without expert ratings use all annotators)"
                            if fallback else ""))
        else:
            notes.append("human scores are the mean over all annotators' ratings")
    else:
        annotations = pd.DataFrame({c: pd.Series(dtype="object") for c in ANNOTATION_COLUMNS})
    if missing_ratings:
        notes.append(f"{missing_ratings} blank rating cells were treated as not rated")

    digest = hashlib.sha256(data + mapping.to_json().encode("utf-8")).hexdigest()
    file_digest = hashlib.sha256(data).hexdigest()
    display = name or Path(fname).stem
    return Dataset(
        id=f"user-{digest[:12]}",
        name=display,
        task=task,
        dimensions=dimensions,
        documents=documents,
        items=items_frame,
        human_scores=human_scores,
        annotations=annotations,
        description=f"Imported from {Path(fname).name}: {len(items_frame)} items, {len(documents)} documents, "
                    f"{items_frame['system_id'].nunique()} systems, {len(dimensions)} dimensions.",
        origin=f"uploaded file {Path(fname).name} (sha256 {file_digest})",
        meta={
            "source_file": Path(fname).name,
            "sha256": file_digest,
            "format": fmt,
            "shape": shape,
            "row_convention": convention,
            "mapping": mapping.to_dict(),
            "import_notes": notes,
        },
    )
