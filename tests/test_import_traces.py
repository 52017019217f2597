"""Judge and human scores kept on traces: MLflow assessments and Langfuse scores, each read from a file in the layout
its documentation gives (fixtures written here by hand, not by the tools, which are not installed):

- MLflow: the frame mlflow.search_traces returns, saved with to_json(orient="records"); each assessment as
  mlflow.entities.Assessment.to_dictionary writes it (mlflow.org/docs/latest/api_reference/python_api/
  mlflow.entities.html: assessment_id, assessment_name, trace_id, source {source_type, source_id}, feedback {value},
  rationale, overrides, valid), source_type HUMAN / LLM_JUDGE / CODE (mlflow.org/docs/latest/genai/concepts/trace/
  feedback "Feedback Sources"); a human's override is a new assessment whose ``overrides`` names the judge's, the
  judge's marked valid = false (mlflow.org/docs/latest/genai/assessments/feedback, "override_feedback").
- Langfuse: pages of GET /api/public/scores ({data: [...], meta: {page, limit, totalItems, totalPages}}), each score
  id, traceId, name, value, source (ScoreSource: ANNOTATION, API, EVAL), dataType, authorUserId
  (langfuse.com/docs/evaluation/evaluation-methods/custom-scores; the OpenAPI ScoreSource enum); and the scores table
  exported as CSV (langfuse.com/docs/api-and-data-platform/features/export-from-ui: every column exported), its
  columns as the score export's field reference names them (id, timestamp, project_id, environment, trace_id,
  observation_id, name, value, source, comment, data_type, string_value, author_user_id:
  langfuse.com/docs/api-and-data-platform/features/blob-storage-export-fields).
Expected values are read from the fixtures with the json module."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from evalcore.importers.traces import TraceFormatError, import_traces, read_scores

HERE = Path(__file__).parent / "fixtures" / "importers"
MLFLOW = HERE / "mlflow_traces.json"
LANGFUSE = HERE / "langfuse_scores.json"
LANGFUSE_CSV = HERE / "langfuse_scores.csv"


def assessments():
    return [(r["trace_id"], a) for r in json.loads(MLFLOW.read_text()) for a in r["assessments"]]


def test_mlflow_judge_and_human_assessments_and_overrides():
    res = import_traces(MLFLOW, name="ml")
    ds, run = res.dataset, res.runs[0]
    assert run.label == "gpt-4o-judge" and len(res.runs) == 1
    judge = {t: a["feedback"]["value"] for t, a in assessments() if a["source"]["source_type"] == "LLM_JUDGE"}
    human = {t: a["feedback"]["value"] for t, a in assessments()
             if a["source"]["source_type"] == "HUMAN" and "feedback" in a}
    overridden = {a["overrides"] for _, a in assessments() if a.get("overrides")}
    assert len(overridden) == 3  # three judge assessments a human corrected: still the judge's scores
    got_judge = dict(zip(run.judgments["item_id"].str.removesuffix("/app"), run.judgments["value"]))
    assert got_judge == judge
    got_human = dict(zip(ds.human_scores["item_id"].str.removesuffix("/app"), ds.human_scores["score"]))
    assert got_human == human
    ann = ds.annotations.set_index("item_id")["annotator"]
    assert ann["tr-0000/app"] == "expert@lab.org" and ann["tr-0001/app"] == "rater@lab.org"
    assert "8 CODE assessments (neither LLM_JUDGE nor HUMAN) left out" in res.warnings
    assert "1 expectations (no feedback) left out" in res.warnings
    items = ds.items.set_index("item_id")
    assert items.loc["tr-0001/app", "output"] == "Answer 1."


def test_langfuse_eval_against_annotation_by_name():
    res = import_traces(LANGFUSE, name="lf")
    ds, run = res.dataset, res.runs[0]
    scores = [s for p in json.loads(LANGFUSE.read_text()) for s in p["data"]]
    ev = {s["traceId"]: s["value"] for s in scores if s["source"] == "EVAL"}
    ann = [s for s in scores if s["source"] == "ANNOTATION"]
    assert ds.dimension_names == ["helpfulness"]
    assert dict(zip(run.judgments["item_id"].str.removesuffix("/app"), run.judgments["value"])) == ev
    assert len(ds.annotations) == len(ann) == 16
    assert set(ds.annotations["annotator"]) == {"user-ana", "user-bo"}
    # the item's human score is the annotators' mean: the dataset-level Pearson recomputed here
    mean = {t: np.mean([s["value"] for s in ann if s["traceId"] == t]) for t in ev}
    got = dict(zip(ds.human_scores["item_id"].str.removesuffix("/app"), ds.human_scores["score"]))
    assert got == pytest.approx(mean)
    r = stats.pearsonr([ev[t] for t in sorted(ev)], [mean[t] for t in sorted(ev)])[0]
    from evalcore.analyses.evaluation import Settings, dimension_analysis

    a = dimension_analysis(ds, run, "helpfulness", Settings(levels=("dataset",), coefficients=("pearson",),
                                                            n_resamples=50))
    assert a.correlations.cells[("dataset", "pearson")].statistic == pytest.approx(r)
    assert "1 API scores (neither EVAL nor ANNOTATION) left out" in res.warnings


def test_langfuse_csv_export_eval_against_annotation():
    import csv

    rows = list(csv.DictReader(LANGFUSE_CSV.open(encoding="utf-8")))
    res = import_traces(LANGFUSE_CSV, name="lfcsv")
    ds, run = res.dataset, res.runs[0]
    assert read_scores(LANGFUSE_CSV).fmt == "langfuse" and run.label == "langfuse-eval"
    ev = {r["trace_id"]: float(r["value"]) for r in rows if r["source"] == "EVAL"}
    assert dict(zip(run.judgments["item_id"].str.removesuffix("/app"), run.judgments["value"])) == ev
    ann = [r for r in rows if r["source"] == "ANNOTATION"]
    assert len(ds.annotations) == len(ann) == 8 and set(ds.annotations["annotator"]) == {"user-ana", "user-bo"}
    mean = {t: np.mean([float(r["value"]) for r in ann if r["trace_id"] == t]) for t in ev}
    assert dict(zip(ds.human_scores["item_id"].str.removesuffix("/app"), ds.human_scores["score"])) == \
        pytest.approx(mean)
    assert "1 API scores (neither EVAL nor ANNOTATION) left out" in res.warnings


def test_langfuse_csv_without_a_needed_column_names_it(tmp_path):
    bad = tmp_path / "scores.csv"
    bad.write_text(LANGFUSE_CSV.read_text().replace(",source,", ",origin,", 1))
    with pytest.raises(TraceFormatError, match=r"scores.csv: no column 'source'.*export the scores table"):
        import_traces(bad)


def test_the_format_is_recognised_from_the_shape():
    assert read_scores(MLFLOW).fmt == "mlflow" and read_scores(LANGFUSE).fmt == "langfuse"


def test_a_missing_field_is_one_error_naming_it(tmp_path):
    recs = json.loads(MLFLOW.read_text())
    del recs[2]["trace_id"]
    bad = tmp_path / "ml.json"
    bad.write_text(json.dumps(recs))
    with pytest.raises(TraceFormatError, match=r"record 3: no 'trace_id'.*search_traces"):
        import_traces(bad)
    pages = json.loads(LANGFUSE.read_text())
    del pages[0]["data"][1]["source"]
    bad.write_text(json.dumps(pages))
    with pytest.raises(TraceFormatError, match=r"score 2: no 'source'"):
        import_traces(bad)
    bad.write_text(json.dumps({"data": [s for p in json.loads(LANGFUSE.read_text()) for s in p["data"]
                                        if s["source"] != "ANNOTATION"]}))
    with pytest.raises(TraceFormatError, match="no human rating .source ANNOTATION."):
        import_traces(bad)


def test_a_human_rating_that_is_no_number_is_said_a_judges_is_a_counted_failure(tmp_path):
    recs = json.loads(MLFLOW.read_text())
    recs[1]["assessments"][0]["feedback"]["value"] = "unsure"  # the judge's
    f = tmp_path / "ml.json"
    f.write_text(json.dumps(recs))
    run = import_traces(f).runs[0]
    row = run.judgments.set_index("item_id").loc["tr-0001/app"]
    assert row["status"] == "failed" and np.isnan(row["value"])
    recs[1]["assessments"][1]["feedback"]["value"] = "great"  # the human's
    f.write_text(json.dumps(recs))
    with pytest.raises(TraceFormatError, match="record 2: the human rating 'great' of 'correctness' is no number"):
        import_traces(f)


def test_cli_import_traces(tmp_path, monkeypatch, capsys):
    from evalcore.cli import main

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "s.db"))
    assert main(["import-traces", str(MLFLOW), "--name", "ml", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "mlflow" and out["items"] == 8 and out["dimensions"] == ["correctness"]
    assert main(["import-traces", str(LANGFUSE), "--name", "lf"]) == 0
    assert "(langfuse): 8 traces" in capsys.readouterr().out
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    assert main(["import-traces", str(bad)]) == 2
    assert "neither MLflow traces" in capsys.readouterr().err


@pytest.mark.parametrize("one_page", [False, True])
def test_the_data_page_reads_an_export_as_one_row_per_human_rating(tmp_path, one_page):
    """What the Data page's upload does: read_table, the roles guessed by name, import_table."""
    from evalcore.importers import import_table, read_table, suggest_mapping

    path = LANGFUSE
    if one_page:  # a single page saved as it came from the API
        path = tmp_path / "page.json"
        pages = json.loads(LANGFUSE.read_text())
        path.write_text(json.dumps({"data": pages[0]["data"] + pages[1]["data"], "meta": pages[0]["meta"]}))
    t = read_table(path)
    assert t.attrs["format"] == "traces" and len(t) == 16 and list(t.index[:2]) == [1, 2]
    m = suggest_mapping(t.columns, t)
    assert (m.doc_id, m.dimension, m.value, m.annotator) == ("doc_id", "dimension", "value", "annotator")
    assert [j.column for j in m.judges] == ["judge langfuse-eval"]
    res = import_table(path, m, table=t)
    cli = import_traces(LANGFUSE)
    assert res.runs[0].judgments["value"].tolist() == cli.runs[0].judgments["value"].tolist()
    assert res.dataset.human_scores["score"].tolist() == cli.dataset.human_scores["score"].tolist()
    assert "read as Langfuse scores: one row per human rating, a column per judge" in res.dataset.meta["import_notes"]


def test_the_data_page_reads_mlflow_traces_with_their_texts():
    from evalcore.importers import import_table, read_table, suggest_mapping

    t = read_table(MLFLOW)
    m = suggest_mapping(t.columns, t)
    assert (m.source, m.output) == ("source", "output") and [j.column for j in m.judges] == ["judge gpt-4o-judge"]
    ds = import_table(MLFLOW, m, table=t).dataset
    assert ds.items.set_index("item_id").loc["tr-0002/app", "output"] == "Answer 2."


def mlflow_parquet(tmp_path: Path, *, nested: bool) -> tuple[Path, list[dict]]:
    """The JSON fixture's records as ``mlflow.search_traces`` returns them, saved with ``DataFrame.to_parquet``
    (mlflow.org/docs/latest/api_reference/python_api/mlflow.html#mlflow.search_traces: a pandas DataFrame whose
    ``assessments`` column holds each trace's Assessment dicts). ``nested``: the lists of dicts as Parquet structs,
    which need one type per field, so the CODE assessments (true / false beside the numbers) are left out of the
    file; else the column as its JSON text (json.dumps), every record kept."""
    import pandas as pd

    recs = json.loads(MLFLOW.read_text())
    if nested:
        recs = [{**r, "assessments": [a for a in r["assessments"] if a["source"]["source_type"] != "CODE"]}
                for r in recs]
    frame = pd.DataFrame(recs)
    if not nested:
        frame["assessments"] = frame["assessments"].map(json.dumps)
    path = tmp_path / ("nested.parquet" if nested else "text.parquet")
    frame.to_parquet(path)
    return path, recs


@pytest.mark.parametrize("nested", [True, False])
def test_mlflow_parquet_export_reads_as_the_json_one(tmp_path, nested):
    """The CLI's reader and the Data page's (read_table, suggest_mapping, import_table) on the Parquet file give the
    judge and human scores the JSON records hold."""
    from evalcore.importers import import_table, read_table, suggest_mapping

    path, recs = mlflow_parquet(tmp_path, nested=nested)
    pairs = [(r["trace_id"], a) for r in recs for a in r["assessments"]]
    judge = {t: a["feedback"]["value"] for t, a in pairs if a["source"]["source_type"] == "LLM_JUDGE"}
    human = {t: a["feedback"]["value"] for t, a in pairs if a["source"]["source_type"] == "HUMAN" and "feedback" in a}
    res = import_traces(path, name="mlpq")
    t = read_table(path)
    assert t.attrs["format"] == "traces"
    m = suggest_mapping(t.columns, t)
    page = import_table(path, m, table=t)
    for r in (res, page):
        got_judge = dict(zip(r.runs[0].judgments["item_id"].str.removesuffix("/app"), r.runs[0].judgments["value"]))
        assert got_judge == judge
        ds = r.dataset
        assert dict(zip(ds.human_scores["item_id"].str.removesuffix("/app"), ds.human_scores["score"])) == human
        assert ds.items.set_index("item_id").loc["tr-0001/app", "output"] == "Answer 1."
    assert "1 expectations (no feedback) left out" in res.warnings
    assert ("8 CODE assessments (neither LLM_JUDGE nor HUMAN) left out" in res.warnings) is not nested


def test_a_parquet_file_without_assessments_names_them(tmp_path):
    import pandas as pd

    path = tmp_path / "t.parquet"
    pd.DataFrame({"trace_id": ["a"], "request": ["q"]}).to_parquet(path)
    with pytest.raises(TraceFormatError, match=r"t.parquet: no 'trace_id' and 'assessments'.*to_parquet"):
        import_traces(path)


def test_the_data_page_recognises_a_langfuse_csv_export():
    """The scores table's CSV export uploaded: read as one row per human rating, roles guessed, imported as the
    CLI imports it."""
    from evalcore.importers import import_table, read_table, suggest_mapping

    t = read_table(LANGFUSE_CSV)
    assert t.attrs["format"] == "traces" and len(t) == 8
    m = suggest_mapping(t.columns, t)
    assert (m.doc_id, m.dimension, m.value, m.annotator) == ("doc_id", "dimension", "value", "annotator")
    assert [j.column for j in m.judges] == ["judge langfuse-eval"]
    res = import_table(LANGFUSE_CSV, m, table=t)
    cli = import_traces(LANGFUSE_CSV)
    assert res.runs[0].judgments["value"].tolist() == cli.runs[0].judgments["value"].tolist()
    assert res.dataset.human_scores["score"].tolist() == cli.dataset.human_scores["score"].tolist()
    assert "read as Langfuse scores: one row per human rating, a column per judge" in res.dataset.meta["import_notes"]
