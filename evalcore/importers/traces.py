"""Judge and human scores kept on traces by an observability tool: MLflow assessments and Langfuse scores.

MLflow (mlflow.org/docs/latest/genai/concepts/trace/feedback, and ``mlflow.entities.Assessment``): the frame
``mlflow.search_traces`` returns, saved with ``DataFrame.to_json(orient="records")`` or ``to_parquet``: one record per trace with
``trace_id``, ``request``, ``response`` and ``assessments``, each assessment ``{assessment_id, assessment_name
(or name), source: {source_type, source_id}, feedback: {value}, rationale, overrides, valid}``. ``source_type``
``LLM_JUDGE`` is the judge's (a run per ``source_id``), ``HUMAN`` a person's (the annotator is the ``source_id``);
``CODE`` (a programmatic check) and expectations (no feedback) are left out and counted. A human's correction of a
judge's assessment is a new assessment whose ``overrides`` names the judge's, which MLflow marks ``valid: false``:
the judge's stays the judge's score, the correction is the human's rating (the comparison the two make is the point).

Langfuse (langfuse.com/docs/evaluation/.../custom-scores, and the public API's ``GET /api/public/scores``): the pages
saved as JSON, one page ``{data: [...], meta: {...}}`` or a list of pages; each score ``{id, traceId, name, value,
stringValue, source, dataType, authorUserId, observationId, comment}``. ``source`` ``EVAL`` (an LLM-as-a-judge
evaluator) is the judge's, ``ANNOTATION`` a person's (the annotator ``authorUserId``); ``API`` scores (written by
code, whoever it was) are left out and counted. A score's ``name`` is the dimension: a judge and its humans are
compared where they give the same name.

Both are turned into one long table (trace, dimension, annotator, human rating, a column per judge) and imported by
:func:`evalcore.importers.api.import_table`: a trace is a document with one item (system "app"); its request the
source and its response the output where the export has them. A value that is no number (True / False and MLflow's
"yes" / "no" are 1 / 0) is a problem for a human rating and a counted failure for a judge's score, never a 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evalcore.importers.mapping import ColumnMapping, JudgeColumn

if TYPE_CHECKING:
    from evalcore.importers.api import ImportResult

MLFLOW, LANGFUSE = "mlflow", "langfuse"
_BOOL_WORDS = {"yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0, "pass": 1.0, "fail": 0.0}


class TraceFormatError(ValueError):
    """The file is not a trace export this module reads, or lacks a field it needs (the message names it)."""


@dataclass
class Scores:
    """What a trace export holds, before import: human ratings and judge scores by (trace, dimension)."""

    fmt: str
    human: list[dict] = field(default_factory=list)  # trace, dimension, annotator, value
    judge: list[dict] = field(default_factory=list)  # trace, dimension, judge, value
    texts: dict[str, tuple[str, str]] = field(default_factory=dict)  # trace -> (request, response)
    left_out: dict[str, int] = field(default_factory=dict)  # why -> how many


def _number(v: object) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        w = v.strip().lower()
        if w in _BOOL_WORDS:
            return _BOOL_WORDS[w]
        try:
            return float(w)
        except ValueError:
            return None
    return None


def detect(obj: object) -> str | None:
    """MLFLOW, LANGFUSE or None, from the JSON's shape."""
    pages = obj if isinstance(obj, list) else [obj]
    if pages and all(isinstance(p, dict) and isinstance(p.get("data"), list) for p in pages):
        return LANGFUSE
    if pages and all(isinstance(p, dict) and "assessments" in p for p in pages):
        return MLFLOW
    return None


def _text(v: object) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def mlflow_scores(records: list[dict]) -> Scores:
    """The assessments of ``mlflow.search_traces`` records (module note)."""
    out = Scores(MLFLOW)
    for k, rec in enumerate(records, start=1):
        trace = rec.get("trace_id") or (rec.get("info") or {}).get("trace_id")
        if not trace:
            raise TraceFormatError(f"MLflow export, record {k}: no 'trace_id' (the trace each assessment belongs "
                                   "to): export with mlflow.search_traces(...).to_json(orient='records')")
        out.texts[trace] = (_text(rec.get("request")), _text(rec.get("response")))
        assessments = rec.get("assessments")
        if isinstance(assessments, str):
            assessments = json.loads(assessments)
        for a in assessments or []:
            _mlflow_assessment(out, trace, a, k)
    return out


def _mlflow_assessment(out: Scores, trace: str, a: dict, k: int) -> None:
    name = a.get("assessment_name") or a.get("name")
    source = a.get("source") or {}
    kind = str(source.get("source_type", "")).upper()
    if not name or not kind:
        missing = "assessment_name" if not name else "source.source_type"
        raise TraceFormatError(f"MLflow export, record {k}: an assessment has no {missing!r} (MLflow's "
                               "Assessment.to_dictionary() writes it): export the assessments as MLflow gives them")
    if "feedback" not in a:
        out.left_out["expectations (no feedback)"] = out.left_out.get("expectations (no feedback)", 0) + 1
        return
    value = (a.get("feedback") or {}).get("value")
    who = str(source.get("source_id") or kind.lower())
    if kind == "LLM_JUDGE":  # an overridden one (valid: false) stays the judge's
        out.judge.append({"trace": trace, "dimension": name, "judge": who, "value": value})
    elif kind == "HUMAN":
        out.human.append({"trace": trace, "dimension": name, "annotator": who, "value": value, "record": k})
    else:
        why = f"{kind} assessments (neither LLM_JUDGE nor HUMAN)"
        out.left_out[why] = out.left_out.get(why, 0) + 1


def langfuse_scores(pages: list[dict]) -> Scores:
    """The scores of Langfuse's public scores API pages (module note)."""
    out = Scores(LANGFUSE)
    k = 0
    for page in pages:
        for s in page["data"]:
            k += 1
            for need in ("traceId", "name", "source"):
                if not s.get(need):
                    raise TraceFormatError(f"Langfuse scores, score {k}: no {need!r} (the scores API gives each "
                                           "score traceId, name and source): save the API's pages as they come")
            value = s.get("stringValue") if s.get("dataType") == "CATEGORICAL" else s.get("value")
            if s["source"] == "EVAL":
                out.judge.append({"trace": s["traceId"], "dimension": s["name"], "judge": "langfuse-eval",
                                  "value": value})
            elif s["source"] == "ANNOTATION":
                out.human.append({"trace": s["traceId"], "dimension": s["name"],
                                  "annotator": s.get("authorUserId") or "annotator", "value": value, "record": k})
            else:
                why = f"{s['source']} scores (neither EVAL nor ANNOTATION)"
                out.left_out[why] = out.left_out.get(why, 0) + 1
            out.texts.setdefault(s["traceId"], ("", ""))
    return out


# The CSV of scores as Langfuse exports it (the UI's export of the scores table, "all columns are always exported":
# langfuse.com/docs/api-and-data-platform/features/export-from-ui; the score columns as the blob storage export
# field reference names them: langfuse.com/docs/api-and-data-platform/features/blob-storage-export-fields), read
# with either spelling of a column: the export's snake_case or the scores API's camelCase.
_CSV_COLUMNS = {"trace_id": "traceId", "string_value": "stringValue", "data_type": "dataType",
                "author_user_id": "authorUserId", "observation_id": "observationId"}


def langfuse_csv(path: str | Path) -> Scores:
    """The scores of Langfuse's CSV export (the note above), as the scores API's records."""
    return langfuse_csv_frame(pd.read_csv(path, dtype=str, keep_default_na=False), Path(path).name)


def _langfuse_columns(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns={c: _CSV_COLUMNS.get(str(c).strip(), str(c).strip()) for c in frame.columns})


def langfuse_csv_frame(frame: pd.DataFrame, name: str) -> Scores:
    """The scores of Langfuse's CSV export read as text cells (blank = none), ``name`` the file's for the errors."""
    frame = _langfuse_columns(frame)
    missing = [c for c in ("traceId", "name", "value", "source") if c not in frame.columns]
    if missing:
        raise TraceFormatError(f"{name}: no column {missing[0]!r} (a Langfuse scores export has "
                               "trace_id, name, value, source): export the scores table from Langfuse as CSV")
    records = [{k: (v if v != "" else None) for k, v in r.items()} for r in frame.to_dict("records")]
    for r in records:  # a CSV cell is text: a numeric score's value as the API gives it, a number
        r["value"] = _number(r["value"]) if _number(r["value"]) is not None else r["value"]
    return langfuse_scores([{"data": records}])


def read_scores(path: str | Path) -> Scores:
    """A trace export's scores, its format recognised from the JSON's shape (a .csv file: Langfuse's export)."""
    if Path(path).suffix.lower() == ".csv":
        return langfuse_csv(path)
    if Path(path).suffix.lower() in (".parquet", ".pq"):
        return _mlflow_frame(pd.read_parquet(path), Path(path).name)
    obj = json.loads(Path(path).read_text(encoding="utf-8"))
    fmt = detect(obj)
    if fmt is None:
        raise TraceFormatError(f"{Path(path).name}: neither MLflow traces (records with 'trace_id' and "
                               "'assessments', from mlflow.search_traces) nor Langfuse score pages ({'data': [...]}, "
                               "from GET /api/public/scores)")
    pages = obj if isinstance(obj, list) else [obj]
    return mlflow_scores(pages) if fmt == MLFLOW else langfuse_scores(pages)


def score_table(sc: Scores) -> tuple[pd.DataFrame, ColumnMapping, list[str]]:
    """The long table import_table reads (trace, dimension, annotator, human, a column per judge), its roles, and the
    judges' columns. A (trace, dimension) a judge scored and no person rated is a row with a blank rating."""
    if not sc.human:
        raise TraceFormatError(f"{sc.fmt}: no human rating (" + ("source_type HUMAN" if sc.fmt == MLFLOW else
                                                                 "source ANNOTATION") + "): nothing to compare the "
                               "judge with; rate the traces in the tool, or import the judge's scores as a run")
    judges = sorted({j["judge"] for j in sc.judge})
    judged = {(j["trace"], j["dimension"], j["judge"]): j["value"] for j in sc.judge}
    rows = [{"trace": h["trace"], "dimension": h["dimension"], "annotator": h["annotator"], "human": h["value"]}
            for h in sc.human]
    rated = {(h["trace"], h["dimension"]) for h in sc.human}
    rows += [{"trace": t, "dimension": d, "annotator": "", "human": None}
             for t, d in dict.fromkeys((j["trace"], j["dimension"]) for j in sc.judge) if (t, d) not in rated]
    table = pd.DataFrame(rows)
    for name in judges:
        table[f"judge:{name}"] = [_judge_cell(judged.get((t, d, name)))
                                  for t, d in zip(table["trace"], table["dimension"])]
    table["human"] = [_human_cell(v) for v in table["human"]]
    table["system"] = "app"
    table["request"] = [sc.texts.get(t, ("", ""))[0] for t in table["trace"]]
    table["response"] = [sc.texts.get(t, ("", ""))[1] for t in table["trace"]]
    m = ColumnMapping(doc_id="trace", system_id="system", dimension="dimension", value="human",
                      annotator="annotator", allow_missing_ratings=True,
                      judges=[JudgeColumn(f"judge:{n}", None, name=n) for n in judges])
    if table["request"].str.len().any():
        m.source = "request"
    if table["response"].str.len().any():
        m.output = "response"
    return table, m, judges


def _human_cell(v: object) -> object:
    n = _number(v)
    return v if n is None else n  # a word stays a word: the importer names its row and column


def _judge_cell(v: object) -> float | str | None:
    if v is None:
        return None
    n = _number(v)
    return n if n is not None else str(v)  # the judge importer counts a word as a failure


def _check_human(sc: Scores) -> None:
    bad = [h for h in sc.human if _number(h["value"]) is None]
    if bad:
        h = bad[0]
        unit = "record" if sc.fmt == MLFLOW else "score"
        raise TraceFormatError(f"{sc.fmt}, {unit} {h['record']}: the human rating {h['value']!r} of "
                               f"{h['dimension']!r} is no number (numbers, true / false and yes / no are read)"
                               + (f"; {len(bad) - 1} more like it" if len(bad) > 1 else ""))


def import_traces(path: str | Path, *, name: str | None = None, owner: str | None = None) -> ImportResult:
    """An MLflow or Langfuse export as a dataset (the human ratings) and a run per judge (not saved); an
    ImportResult as :func:`evalcore.importers.api.import_table` returns, with what was left out in its warnings.
    TraceFormatError names the missing field or the value that is no number."""
    from evalcore.importers.api import import_table

    sc = read_scores(path)
    _check_human(sc)
    table, m, _ = score_table(sc)
    table.index = pd.RangeIndex(1, len(table) + 1)
    table.attrs["format"] = "json"
    label = "MLflow assessments" if sc.fmt == MLFLOW else "Langfuse scores"
    result = import_table((Path(path).read_bytes(), Path(path).name), m, name=name or Path(path).stem,
                          task=label, table=table, owner=owner)
    result.warnings += [f"{n} {why} left out" for why, n in sc.left_out.items()]
    result.dataset.meta["trace_format"] = sc.fmt
    return result


def _plain(v: object) -> Any:
    """A cell as the JSON export holds it: Parquet's nested values come back from pyarrow as numpy arrays of dicts
    with every struct field present (None where a record lacks it) and numpy scalars; here lists, dicts without the
    absent fields, Python numbers, and None for a missing number."""
    if isinstance(v, dict):
        return {k: x for k, x in ((k, _plain(x)) for k, x in v.items()) if x is not None}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    return None if isinstance(v, float) and v != v else v


def _mlflow_frame(frame: pd.DataFrame, name: str) -> Scores:
    """MLflow's search_traces frame saved with ``to_parquet`` (its ``assessments`` lists of dicts nested, or their
    JSON text)."""
    if not {"trace_id", "assessments"} <= {str(c) for c in frame.columns}:
        raise TraceFormatError(f"{name}: no 'trace_id' and 'assessments' columns: a Parquet file is read as MLflow "
                               "traces, saved with mlflow.search_traces(...).to_parquet(PATH)")
    return mlflow_scores(_plain(frame.to_dict("records")))


def _parquet_scores(frame: pd.DataFrame) -> Scores | None:
    """The assessments of a Parquet file the readers read, when it is MLflow's search_traces frame."""
    if not {"trace_id", "assessments"} <= {str(c) for c in frame.columns}:
        return None
    return _mlflow_frame(frame, "the Parquet file")


def _csv_scores(frame: pd.DataFrame) -> Scores | None:
    """The scores of a CSV file the readers read, when its columns are those of Langfuse's scores export."""
    cols = set(_langfuse_columns(frame).columns)
    if not {"traceId", "name", "value", "source"} <= cols:
        return None
    return langfuse_csv_frame(frame, "the CSV file")


def _exported_scores(frame: pd.DataFrame) -> Scores | None:
    """The scores of a JSON file the readers read as a table, when it is an MLflow or Langfuse export."""
    cols = {str(c) for c in frame.columns}
    if {"trace_id", "assessments"} <= cols:
        return mlflow_scores(_plain(frame.to_dict("records")))
    if "data" in cols and len(frame):
        pages = [{"data": json.loads(v) if isinstance(v, str) else v} for v in frame["data"]]
        if all(isinstance(p["data"], list) and all(isinstance(s, dict) and "traceId" in s for s in p["data"])
               for p in pages):
            return langfuse_scores(pages)
    return None


def trace_layout(frame: pd.DataFrame, fmt: str) -> tuple[pd.DataFrame | None, str, list[tuple[int | str, str, str]]] | None:
    """An MLflow or Langfuse export read by the JSON, Parquet (MLflow) or CSV (Langfuse) reader, as the table the Data page's roles are guessed on: one
    row per human rating, named as the guesses read them (doc_id, system_id, source, output, dimension, annotator,
    value, "judge NAME" per judge); None for any other file. Registered with the readers (NESTED_LAYOUTS)."""
    if fmt not in ("json", "parquet", "csv"):
        return None
    try:
        sc = {"json": _exported_scores, "csv": _csv_scores, "parquet": _parquet_scores}[fmt](frame)
        if sc is None:
            return None
        table, _, judges = score_table(sc)
    except TraceFormatError as e:
        return None, "traces", [("-", "-", str(e))]
    table = table[table["annotator"] != ""].rename(columns={
        "trace": "doc_id", "system": "system_id", "request": "source", "response": "output", "human": "value",
        **{f"judge:{n}": f"judge {n}" for n in judges}})
    table = table.drop(columns=[c for c in ("source", "output") if not table[c].str.len().any()])  # no texts
    table = table.reset_index(drop=True)
    table.index = pd.RangeIndex(1, len(table) + 1, name="rating")
    table.attrs["layout"] = "traces"
    label = "MLflow assessments" if sc.fmt == MLFLOW else "Langfuse scores"
    table.attrs["notes"] = [f"read as {label}: one row per human rating, a column per judge"] + [
        f"{n} {why} left out" for why, n in sc.left_out.items()]
    return table, "traces", []


def _register() -> None:
    from evalcore.importers import readers

    if trace_layout not in readers.NESTED_LAYOUTS:
        readers.NESTED_LAYOUTS.append(trace_layout)


_register()
