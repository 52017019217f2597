"""Tests for evalcore.importers: a user's own human-rated file -> Dataset, or every problem named.

Expected values are written out by hand from the fixtures under tests/fixtures/importers/ (the same 4 items, 2
dimensions and 3 annotators stored as wide CSV, wide JSON list, long JSONL and long {"records": ...} JSON).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.importers import (
    ColumnMapping,
    DatasetValidationError,
    Problem,
    load_user_dataset,
    read_table,
    suggest_mapping,
)
from evalcore.model import ANNOTATION_COLUMNS, DOCUMENT_COLUMNS, HUMAN_SCORE_COLUMNS, ITEM_COLUMNS, Dataset

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
EXAMPLE = Path(__file__).parent.parent / "examples" / "my_ratings.csv"
SCALES = {"coherence": (1, 5), "fluency": (1, 3)}

WIDE_MAPPING = ColumnMapping(
    doc_id="doc", system_id="system", output="summary", source="article", reference="refs", context="fact",
    annotator="annotator", group="group", attributes=["written_by"],
    dimensions={"coherence": "coh", "fluency": "flu"}, scales=SCALES,
)
WIDE_JSON_MAPPING = ColumnMapping(
    doc_id="doc_id", system_id="model", output="response", source="document_text", reference="references",
    context="fact", annotator="annotator", group="group", attributes=["written_by"],
    dimensions={"coherence": "coherence", "fluency": "fluency"}, scales=SCALES,
)
LONG_MAPPING = ColumnMapping(
    doc_id="doc", system_id="system", output="summary", source="article", reference="refs", context="fact",
    annotator="annotator", group="group", attributes=["written_by"], dimension="dimension", value="score",
    scales=SCALES,
)

# By hand from the fixtures: the experts e1, e2 are averaged; the crowd worker c1 is not (experts preferred).
EXPECTED_HUMAN = {
    ("d1/M1", "coherence"): 4.5, ("d1/M1", "fluency"): 2.5,
    ("d1/M2", "coherence"): 2.5, ("d1/M2", "fluency"): 1.5,
    ("d2/M1", "coherence"): 5.0, ("d2/M1", "fluency"): 3.0,
    ("d2/M2", "coherence"): 1.5, ("d2/M2", "fluency"): 1.5,
}
ARTICLE_1 = "The council approved the new park on Monday. Work starts in May, weather permitting."
ARTICLE_2 = 'Line one of the report.\nLine two, with a "quote".'
EXPECTED_ITEMS = {
    ("d1/M1", "d1", "M1", "The council approved a park.", "model"),
    ("d1/M2", "d1", "M2", "Work starts in May & the park opens <b>2025</b>.", "human"),
    ("d2/M1", "d2", "M1", 'Rain ended the "long" drought.', "model"),
    ("d2/M2", "d2", "M2", "  Two spaces before and a trailing one. ", "human"),
}
EXPECTED_DOCUMENTS = {
    ("d1", ARTICLE_1, ("The council approved a park.", "A new park was approved on Monday."), "Parks in town: 12"),
    ("d2", ARTICLE_2, ("Rain ended the drought.",), ""),
}


def content(ds: Dataset) -> dict:
    """A Dataset's content, independent of row order (formats and shapes order rows differently)."""
    return {
        "dimensions": [(d.name, d.scale_min, d.scale_max) for d in ds.dimensions],
        "items": sorted(tuple(r) for r in ds.items.itertuples(index=False)),
        "documents": sorted(
            (r.doc_id, r.source, tuple(r.references), r.context) for r in ds.documents.itertuples(index=False)
        ),
        "human": sorted(tuple(r) for r in ds.human_scores.itertuples(index=False)),
        "annotations": sorted(tuple(r) for r in ds.annotations.itertuples(index=False)),
    }


def _long_records() -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / "long.jsonl").read_text(encoding="utf-8").splitlines()]


def _parquet_bytes() -> bytes:
    """The long fixture as Parquet, with references as a real list column and ratings as integers."""
    recs = _long_records()
    for r in recs:
        r["refs"] = json.loads(r["refs"])
        r["score"] = int(r["score"])
        r["fact"] = r["fact"] or None
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(recs), buf)
    return buf.getvalue()


def _tsv_bytes() -> bytes:
    rows = list(csv.reader(io.StringIO((FIXTURES / "wide_annotators.csv").read_text(encoding="utf-8"), newline="")))
    out = io.StringIO()
    csv.writer(out, delimiter="\t", lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8")


def _load(kind: str) -> Dataset:
    if kind == "csv-wide":
        return load_user_dataset(FIXTURES / "wide_annotators.csv", WIDE_MAPPING)
    if kind == "tsv-wide":
        return load_user_dataset(_tsv_bytes(), WIDE_MAPPING, filename="ratings.tsv")
    if kind == "json-list-wide":
        return load_user_dataset(FIXTURES / "wide_records.json", WIDE_JSON_MAPPING)
    if kind == "jsonl-long":
        return load_user_dataset(FIXTURES / "long.jsonl", LONG_MAPPING)
    if kind == "json-records-long":
        return load_user_dataset(FIXTURES / "long_records.json", LONG_MAPPING)
    if kind == "parquet-long":
        return load_user_dataset((_parquet_bytes(), "ratings.parquet"), LONG_MAPPING)
    raise AssertionError(kind)


KINDS = ["csv-wide", "tsv-wide", "json-list-wide", "jsonl-long", "json-records-long", "parquet-long"]


# ---------------------------------------------------------------------------------------------------------------
# formats and shapes


@pytest.mark.parametrize("kind", KINDS)
def test_each_format_and_shape_loads_the_hand_checked_content(kind):
    ds = _load(kind)
    c = content(ds)
    assert c["dimensions"] == [("coherence", 1.0, 5.0), ("fluency", 1.0, 3.0)]
    assert set(c["items"]) == EXPECTED_ITEMS
    assert set(c["documents"]) == EXPECTED_DOCUMENTS
    assert {(i, d): s for i, d, s in c["human"]} == EXPECTED_HUMAN
    assert len(c["annotations"]) == 4 * 2 * 3
    assert ("d1/M2", "coherence", "c1", "crowd", 5.0) in c["annotations"]
    assert ("d2/M2", "fluency", "e1", "expert", 2.0) in c["annotations"]
    assert list(ds.items.columns) == ITEM_COLUMNS + ["written_by"]
    assert list(ds.documents.columns) == DOCUMENT_COLUMNS
    assert list(ds.human_scores.columns) == HUMAN_SCORE_COLUMNS
    assert list(ds.annotations.columns) == ANNOTATION_COLUMNS
    assert ds.human_scores["score"].dtype == "float64"
    assert ds.id.startswith("user-") and re.fullmatch(r"user-[0-9a-f]{12}", ds.id)
    assert ds.systems == ["M1", "M2"] and ds.annotators == ["c1", "e1", "e2"]


def test_all_formats_and_shapes_give_the_same_dataset_content():
    contents = [content(_load(k)) for k in KINDS]
    for other in contents[1:]:
        assert other == contents[0]


def test_loaded_dataset_works_with_the_model_helpers():
    ds = _load("jsonl-long")
    table = ds.human_table("coherence").set_index("item_id")
    assert table.loc["d1/M1", "human"] == 4.5 and table.loc["d2/M2", "system_id"] == "M2"
    texts = ds.texts().set_index("item_id")
    assert texts.loc["d2/M1", "source"] == ARTICLE_2
    assert texts.loc["d1/M2", "context"] == "Parks in town: 12"


def test_wide_per_annotator_columns_give_the_same_human_scores():
    mapping = ColumnMapping(
        doc_id="doc_id", system_id="system_id", output="output", source="source",
        dimensions={"coherence": {"e1": "coherence_e1", "e2": "coherence_e2"},
                    "fluency": {"e1": "fluency_e1", "e2": "fluency_e2"}},
        default_group="expert", scales=SCALES,
    )
    ds = load_user_dataset(FIXTURES / "wide_columns.csv", mapping)
    assert {(r.item_id, r.dimension): r.score for r in ds.human_scores.itertuples()} == EXPECTED_HUMAN
    assert len(ds.annotations) == 16 and set(ds.annotations["group"]) == {"expert"}
    assert ds.annotations.query("item_id == 'd1/M2' and dimension == 'fluency' and annotator == 'e2'")[
        "value"].item() == 2.0


def test_rows_without_annotators_are_the_human_scores_themselves():
    data = b"doc,system,summary,coh\nd1,A,x,4\nd1,B,y,2.5\n"
    ds = load_user_dataset(data, ColumnMapping(doc_id="doc", system_id="system", output="summary",
                                               dimensions={"coherence": "coh"}), filename="plain.csv")
    assert ds.human_scores.values.tolist() == [["d1/A", "coherence", 4.0], ["d1/B", "coherence", 2.5]]
    assert ds.annotations.empty and ds.annotators == []


def test_expert_ratings_are_preferred_and_items_without_experts_use_everyone():
    data = (b"doc,system,out,annotator,group,coh\n"
            b"d1,A,x,e1,expert,4\nd1,A,x,e2,expert,5\nd1,A,x,w1,crowd,1\n"
            b"d1,B,y,w1,crowd,2\nd1,B,y,w2,crowd,3\n")
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", annotator="annotator", group="group",
                      dimensions={"coherence": "coh"})
    ds = load_user_dataset(data, m, filename="g.csv")
    assert dict(zip(ds.human_scores["item_id"], ds.human_scores["score"])) == {"d1/A": 4.5, "d1/B": 2.5}
    assert any("1 item-dimension cells without expert ratings" in n for n in ds.meta["import_notes"])


def test_default_group_is_annotator_when_no_group_column():
    data = b"doc,system,out,rater,coh\nd1,A,x,r1,4\nd1,A,x,r2,1\n"
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", annotator="rater",
                      dimensions={"coherence": "coh"})
    ds = load_user_dataset(data, m, filename="g.csv")
    assert set(ds.annotations["group"]) == {"annotator"}
    assert ds.human_scores["score"].tolist() == [2.5]


def test_inputs_path_bytes_pair_and_upload_object_give_the_same_dataset():
    path = FIXTURES / "wide_annotators.csv"
    data = path.read_bytes()

    class Upload:  # the part of Streamlit's UploadedFile the importer uses
        name = "wide_annotators.csv"

        def getvalue(self):
            return data

    loaded = [
        load_user_dataset(path, WIDE_MAPPING),
        load_user_dataset(str(path), WIDE_MAPPING),
        load_user_dataset((data, "wide_annotators.csv"), WIDE_MAPPING),
        load_user_dataset(data, WIDE_MAPPING, filename="wide_annotators.csv"),
        load_user_dataset(Upload(), WIDE_MAPPING),
    ]
    assert {d.id for d in loaded} == {loaded[0].id}
    assert all(content(d) == content(loaded[0]) for d in loaded)
    assert loaded[2].name == "wide_annotators"
    assert load_user_dataset(data, WIDE_MAPPING, filename="x.csv", name="My study").name == "My study"


def test_dataset_id_is_sha256_of_bytes_and_mapping():
    import hashlib

    data = (FIXTURES / "long.jsonl").read_bytes()
    ds = load_user_dataset((data, "long.jsonl"), LONG_MAPPING)
    expected = hashlib.sha256(data + LONG_MAPPING.to_json().encode("utf-8")).hexdigest()[:12]
    assert ds.id == f"user-{expected}"
    again = load_user_dataset((data, "renamed.jsonl"), LONG_MAPPING)
    assert again.id == ds.id
    other = ColumnMapping.from_dict({**LONG_MAPPING.to_dict(), "scales": {"coherence": [0, 5], "fluency": [1, 3]}})
    assert load_user_dataset((data, "long.jsonl"), other).id != ds.id
    assert ColumnMapping.from_dict(json.loads(LONG_MAPPING.to_json())) == ColumnMapping.from_dict(
        LONG_MAPPING.to_dict())


def test_scales_absent_are_inferred_from_data_and_the_dataset_says_so():
    m = ColumnMapping.from_dict({**LONG_MAPPING.to_dict(), "scales": {"fluency": [1, 3]}})
    ds = load_user_dataset(FIXTURES / "long.jsonl", m)
    coh = ds.dimension("coherence")
    assert (coh.scale_min, coh.scale_max) == (1.0, 5.0) and "inferred" in coh.description
    assert "declared" in ds.dimension("fluency").description
    assert any("'coherence' inferred from the data as 1-5" in n for n in ds.meta["import_notes"])
    assert not any("'fluency'" in n for n in ds.meta["import_notes"])


def test_references_from_json_list_separator_plain_text_and_several_columns():
    data = (b'doc,system,out,ref,ref2,coh\n'
            b'd1,A,x,"[""r one"", ""r two""]",,3\n'
            b'd2,A,x,r three ||| r four,r five,3\n'
            b'd3,A,x,[CNN] starts with a bracket,,3\n'
            b'd4,A,x,,,3\n')
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", reference=["ref", "ref2"],
                      dimensions={"coherence": "coh"}, scales={"coherence": (1, 5)})  # all 3: not inferable
    ds = load_user_dataset(data, m, filename="refs.csv")
    refs = dict(zip(ds.documents["doc_id"], ds.documents["references"]))
    assert refs == {"d1": ["r one", "r two"], "d2": ["r three", "r four", "r five"],
                    "d3": ["[CNN] starts with a bracket"], "d4": []}
    assert ds.documents["source"].tolist() == ["", "", "", ""]  # no source column mapped


def test_script_output_text_stays_verbatim():
    xss = "<script>alert(1)</script>"
    records = [{"doc": "d1", "system": "A", "out": xss, "src": "<b>bold</b> &amp; co", "coh": 3}]
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", source="src", dimensions={"coherence": "coh"},
                      scales={"coherence": (1, 5)})
    for data, fname in ((json.dumps(records).encode(), "x.json"),
                        (f"doc,system,out,src,coh\nd1,A,{xss},<b>bold</b> &amp; co,3\n".encode(), "x.csv")):
        ds = load_user_dataset(data, m, filename=fname)
        assert ds.items["output"].tolist() == [xss]
        assert ds.documents["source"].tolist() == ["<b>bold</b> &amp; co"]


def test_read_table_previews_the_raw_file_with_row_numbers():
    t = read_table(FIXTURES / "wide_annotators.csv")
    assert t.index.name == "line"
    # records whose article spans two physical lines start on lines 8, 10, 12, ...
    assert t.index.tolist() == [2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18]
    assert t.loc[8, "article"] == ARTICLE_2 and t.loc[2, "coh"] == "4"  # CSV cells stay strings
    j = read_table(FIXTURES / "long.jsonl")
    assert j.index.name == "record" and j.index.tolist() == list(range(1, 25))
    p = read_table((_parquet_bytes(), "r.parquet"))
    assert p.index.name == "row" and len(p) == 24


# ---------------------------------------------------------------------------------------------------------------
# validation


BAD_MAPPING = ColumnMapping(doc_id="doc", system_id="system", output="summary", source="article", reference="refs",
                            dimensions={"coherence": "coh", "fluency": "flu"}, scales=SCALES)


def test_every_problem_in_a_bad_csv_is_named_with_its_line_and_column():
    path = FIXTURES / "bad_ratings.csv"
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(path, BAD_MAPPING)
    got = [(p.row, p.column, p.message) for p in info.value.problems]
    # (line counting the header as line 1, column, words the message must contain) -- read off the fixture by hand
    expected = [
        ("-", "refs", "is not in the file"),
        (3, "summary", "empty output text"),
        (4, "coh", "'four' is not a number"),
        (5, "coh", "rating 7 is outside the declared scale 1-5"),
        (6, "coh", "duplicate rating: item 'd1/M1', dimension 'coherence' was already rated on line 2"),
        (6, "flu", "duplicate rating: item 'd1/M1', dimension 'fluency' was already rated on line 2"),
        (7, "doc", "missing document id"),
        (8, "system", "missing system"),
        (9, "flu", "'2,5' is not a number (use a dot as the decimal separator)"),  # record on lines 9-10
        (11, "flu", "rating 0 is outside the declared scale 1-3"),
    ]
    assert len(got) == len(expected)
    for (row, column, message), (erow, ecolumn, words) in zip(got, expected):
        assert (row, column) == (erow, ecolumn)
        assert words in message
    for p in info.value.problems:
        assert p.file == str(path) and p.unit == "line"
        s = str(p)
        assert s.startswith(str(path)) and f"'{p.column}'" in s
        assert (f"line {p.row}," in s) if p.row != "-" else ("whole file" in s)
    text = str(info.value)
    assert "10 problems found, nothing was imported" in text
    assert "rows are CSV line numbers, counting the header as line 1" in text
    assert f"{path}, line 9, column 'flu': rating '2,5' is not a number" in text


def test_jsonl_problems_name_record_and_line():
    m = ColumnMapping(doc_id="doc", system_id="system", output="summary", dimensions={"coherence": "coh"})
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(FIXTURES / "bad_lines.jsonl", m)
    probs = info.value.problems
    assert [(p.row, p.column, p.unit) for p in probs] == [(2, "-", "record"), (4, "-", "record")]
    assert "malformed JSON on line 2" in probs[0].message
    assert "line 5 is a JSON list" in probs[1].message  # record 4 sits on line 5 after a blank line
    assert "record numbers" in str(info.value)


def test_json_record_problems_use_record_numbers():
    records = [{"doc": "d1", "system": "A", "out": "x", "coh": 3},
               {"doc": "d1", "system": "B", "out": "", "coh": "high"},
               {"doc": "d2", "system": "A", "out": "z"}]
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"coherence": "coh"})
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(json.dumps({"records": records}).encode(), m, filename="r.json")
    assert [(p.row, p.column) for p in info.value.problems] == [(2, "out"), (2, "coh"), (3, "coh")]
    assert "empty rating" in info.value.problems[2].message
    assert str(info.value.problems[0]) == "r.json, record 2, column 'out': empty output text"


def test_parquet_problems_use_data_row_numbers(tmp_path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"doc": ["d1", None, "d2"], "system": ["A", "A", "A"], "out": ["x", "y", "z"],
                             "coh": [3.0, 4.0, 9.0]}), path)
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"coherence": "coh"},
                      scales={"coherence": (1, 5)})
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(path, m)
    assert [(p.row, p.column, p.unit) for p in info.value.problems] == [(2, "doc", "row"), (3, "coh", "row")]


def test_unreadable_files_are_problems_not_crashes():
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"coherence": "coh"})
    cases = [
        ((b"doc,system,out,coh\nd1,A,ok,3\nd1,B,caf\xe9,3\n", "latin1.csv"), (3, "not UTF-8 text (byte 0xe9")),
        ((b'[{"doc": "d1",}]', "bad.json"), ("-", "not valid JSON: Expecting property name")),
        ((b'{"rows": []}', "shape.json"), ("-", 'expected a JSON list of records, an object {"records": [...]}')),
        ((b"PAR1 not really", "broken.parquet"), ("-", "not a readable Parquet file")),
        ((b"doc,system,out,coh\n", "header_only.csv"), ("-", "no data rows")),
        ((b"", "empty.csv"), ("-", "the file is empty")),
        ((b"a,b", "notes.txt"), ("-", "unknown file type '.txt'")),
    ]
    for source, (row, words) in cases:
        with pytest.raises(DatasetValidationError) as info:
            load_user_dataset(source, m)
        (p,) = info.value.problems
        assert p.file == source[1] and p.row == row and words in p.message, (source, p)


def test_csv_structure_problems_name_the_line():
    data = b'doc,system,out,coh\nd1,A,x,3\nd1,B,"y",3,extra\nd2,A\ndoc2,,,,\n'
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"coherence": "coh"})
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(data, m, filename="ragged.csv")
    got = [(p.row, p.column) for p in info.value.problems]
    assert (3, "-") in got and (4, "-") in got  # too many fields / too few fields
    assert (5, "system") in got and (5, "out") in got  # trailing empty cells tolerated, empty values are not
    dup = b"doc,doc,out,coh\nd1,d1,x,3\n"
    with pytest.raises(DatasetValidationError, match=r"dup.csv, line 1, column 'doc': the header names column"):
        load_user_dataset(dup, m, filename="dup.csv")


def test_duplicates_and_conflicts_across_annotator_rows():
    data = (b"doc,system,out,src,ann,coh\n"
            b"d1,A,x,S,a1,3\n"
            b"d1,A,x,S,a2,4\n"
            b"d1,A,x,S,a1,5\n"       # line 4: a1 rated d1/A twice
            b"d1,A,changed,S,a3,2\n"  # line 5: the same item with another output
            b"d1,B,y,other,a1,2\n"    # line 6: document d1 with another source
            b"d1,B,y,,a2,2\n"         # line 7: blank source on a repeat is fine
            b"d2,B,z,T,,2\n")         # line 8: annotator missing
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", source="src", annotator="ann",
                      dimensions={"coherence": "coh"})
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(data, m, filename="dups.csv")
    got = [(p.row, p.column, p.message) for p in info.value.problems]
    assert [(r, c) for r, c, _ in got] == [(4, "coh"), (5, "out"), (6, "src"), (8, "ann")]
    assert "annotator 'a1' was already rated on line 2" in got[0][2]
    assert "item 'd1/A' has a different output here than on line 2" in got[1][2]
    assert "document 'd1' has a different source text here than on line 2" in got[2][2]
    assert "missing annotator" in got[3][2]


def test_mapping_problems_are_reported_with_row_dash():
    cases = [
        (ColumnMapping(system_id="system", output="out", dimensions={"c": "coh"}),
         "no column says which document"),
        (ColumnMapping(doc_id="doc", system_id="system", output="out"), "no ratings are mapped"),
        (ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"c": "coh"}, dimension="dim",
                       value="coh"), "choose one shape"),
        (ColumnMapping(doc_id="doc", system_id="system", output="out", value="coh"), "needs a dimension column"),
        (ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"c": "coh"}, group="g"),
         "group column is mapped but no annotator"),
        (ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"c": "coh"},
                       scales={"c": (5, 1)}), "min < max"),
        (ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"c": "coh"},
                       scales={"x": (1, 5)}), "not a mapped dimension"),
    ]
    data = b"doc,system,out,coh\nd1,A,x,3\n"
    for mapping, words in cases:
        with pytest.raises(DatasetValidationError) as info:
            load_user_dataset(data, mapping, filename="m.csv")
        assert any(p.row == "-" and words in p.message for p in info.value.problems), (words, info.value.problems)


def test_long_shape_problems():
    data = (b"doc,system,out,dim,val\n"
            b"d1,A,x,coherence,3\n"
            b"d1,A,x,,3\n"            # line 3: no dimension
            b"d1,A,x,coherence,4\n"   # line 4: duplicate (no annotators)
            b"d1,A,x,fluency,9\n")    # line 5: outside 1-3
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimension="dim", value="val",
                      scales={"fluency": (1, 3), "relevance": (1, 5)})
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(data, m, filename="long.csv")
    got = [(p.row, p.column) for p in info.value.problems]
    assert got == [(3, "dim"), (4, "val"), (5, "val"), ("-", "-")]
    assert "no row rates that dimension" in info.value.problems[-1].message


def test_blank_ratings_are_problems_unless_allowed():
    data = b"doc,system,out,coh_1,coh_2\nd1,A,x,3,\nd1,B,y,,2\n"
    m = ColumnMapping(doc_id="doc", system_id="system", output="out",
                      dimensions={"coherence": {"r1": "coh_1", "r2": "coh_2"}})
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(data, m, filename="gaps.csv")
    assert [(p.row, p.column) for p in info.value.problems] == [(2, "coh_2"), (3, "coh_1")]
    m.allow_missing_ratings = True
    ds = load_user_dataset(data, m, filename="gaps.csv")
    assert ds.human_scores["score"].tolist() == [3.0, 2.0]
    assert "2 blank rating cells were treated as not rated" in ds.meta["import_notes"]


def test_error_lists_every_problem_but_shows_at_most_fifty():
    lines = ["doc,system,out,coh"] + [f"d{i},A,x,bad{i}" for i in range(120)]
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"coherence": "coh"})
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset("\n".join(lines).encode(), m, filename="many.csv")
    err = info.value
    assert len(err.problems) == 120
    assert [p.row for p in err.problems] == list(range(2, 122))
    text = str(err)
    assert "120 problems found" in text and "... and 70 more" in text
    assert "line 51, column 'coh'" in text and "line 52, column 'coh'" not in text


def test_an_invalid_file_imports_nothing_even_when_most_rows_are_good():
    good = (FIXTURES / "wide_annotators.csv").read_text(encoding="utf-8")
    one_bad = good.rstrip("\n") + "\nd3,M9,late row,article,,,model,e1,expert,4,eight\n"
    result = None
    with pytest.raises(DatasetValidationError) as info:
        result = load_user_dataset(one_bad.encode(), WIDE_MAPPING, filename="mostly_good.csv")
    assert result is None
    assert [(p.row, p.column) for p in info.value.problems] == [(20, "flu")]


def test_problem_str_formats():
    assert str(Problem("f.csv", 7, "coh", "bad")) == "f.csv, row 7, column 'coh': bad"
    assert str(Problem("f.csv", "-", "-", "bad", "line")) == "f.csv, whole file, column -: bad"
    with pytest.raises(ValueError):
        DatasetValidationError([])


# ---------------------------------------------------------------------------------------------------------------
# suggest_mapping


def test_suggest_mapping_wide_names():
    m = suggest_mapping(["id", "model", "hypothesis", "src", "ref", "coh", "Fluency", "written_by"])
    assert (m.doc_id, m.system_id, m.output, m.source, m.reference) == ("id", "model", "hypothesis", "src", "ref")
    assert m.dimensions == {"coherence": "coh", "fluency": "Fluency"}
    assert m.attributes == ["written_by"] and m.shape == "wide"


def test_suggest_mapping_prefers_specific_names():
    m = suggest_mapping(["document", "system_id", "response", "dialogue", "fact", "engaging", "naturalness"])
    assert (m.doc_id, m.system_id, m.output, m.source, m.context) == (
        "document", "system_id", "response", "dialogue", "fact")
    assert m.dimensions == {"engagingness": "engaging", "naturalness": "naturalness"}
    m = suggest_mapping(["doc_id", "id", "system", "summary", "article", "document_text", "references", "overall"])
    assert (m.doc_id, m.source, m.reference) == ("doc_id", "article", "references")
    assert m.dimensions == {"overall": "overall"}


def test_suggest_mapping_long_shape():
    m = suggest_mapping(["Doc ID", "System", "Output", "Aspect", "Rating", "Rater", "Rater Type"])
    assert (m.doc_id, m.system_id, m.output) == ("Doc ID", "System", "Output")
    assert (m.dimension, m.value, m.annotator, m.group) == ("Aspect", "Rating", "Rater", "Rater Type")
    assert m.dimensions == {} and m.shape == "long"


def test_suggest_mapping_per_annotator_columns_and_numeric_sample():
    cols = ["doc_id", "system", "summary", "coherence_1", "coherence_2", "coh_expert3", "clarity", "notes"]
    sample = pd.DataFrame({"doc_id": ["d1", "d2"], "system": ["A", "B"], "summary": ["x", "y"],
                           "coherence_1": ["3", "4"], "coherence_2": ["2", "5"], "coh_expert3": ["1", ""],
                           "clarity": ["4", "2.5"], "notes": ["ok", "5"]})
    m = suggest_mapping(cols, sample)
    assert m.dimensions == {"coherence": {"1": "coherence_1", "2": "coherence_2", "expert3": "coh_expert3"},
                            "clarity": "clarity"}
    assert suggest_mapping(cols).dimensions == {
        "coherence": {"1": "coherence_1", "2": "coherence_2", "expert3": "coh_expert3"}}
    # a lone score column is one overall judgement
    assert suggest_mapping(["doc", "system", "output", "score"]).dimensions == {"overall": "score"}


def test_suggested_mapping_loads_the_example_file():
    table = read_table(EXAMPLE)
    m = suggest_mapping(table.columns, table)
    assert (m.doc_id, m.system_id, m.output, m.source, m.reference, m.annotator) == (
        "doc_id", "system", "summary", "article", "reference", "annotator")
    assert list(m.dimensions) == ["coherence", "consistency", "fluency", "relevance"]
    ds = load_user_dataset(EXAMPLE, m)
    assert len(ds.items) == 12 and ds.systems == ["sysA", "sysB", "sysC"] and ds.annotators == ["ann1", "ann2"]
    # n1/sysB: ann1 consistency 1, ann2 consistency 2
    hs = ds.human_scores.set_index(["item_id", "dimension"])["score"]
    assert hs[("n1/sysB", "consistency")] == 1.5 and hs[("n4/sysA", "fluency")] == 4.5


# ---------------------------------------------------------------------------------------------------------------
# property: wide -> long reshaping does not change the human scores


@st.composite
def rating_tables(draw):
    n_docs = draw(st.integers(1, 3))
    systems = [f"S{i}" for i in range(draw(st.integers(1, 3)))]
    dims = draw(st.lists(st.sampled_from(["coherence", "fluency", "relevance"]), min_size=1, max_size=3,
                         unique=True))
    annotators = [f"a{i}" for i in range(draw(st.integers(1, 3)))]
    groups = {a: draw(st.sampled_from(["expert", "crowd"])) for a in annotators}
    rating = st.one_of(st.integers(1, 5).map(float),
                       st.floats(1, 5, allow_nan=False, allow_infinity=False))
    rows = []
    for d in range(n_docs):
        for s in systems:
            for a in annotators:
                rows.append({"doc": f"d{d}", "system": s, "out": f"text {d} {s}", "annotator": a,
                             "group": groups[a], **{dim: draw(rating) for dim in dims}})
    shuffled = draw(st.permutations(rows))
    return shuffled, dims


@settings(max_examples=40, deadline=None)
@given(rating_tables())
def test_wide_and_long_reshaping_give_identical_human_scores(table):
    rows, dims = table
    base = ["doc", "system", "out", "annotator", "group"]
    wide = io.StringIO()
    w = csv.writer(wide, lineterminator="\n")
    w.writerow(base + dims)
    for r in rows:
        w.writerow([r[c] for c in base] + [repr(r[d]) for d in dims])
    long_lines = [json.dumps({**{c: r[c] for c in base}, "dimension": d, "value": r[d]})
                  for d in reversed(dims) for r in reversed(rows)]  # another row order on purpose
    common = dict(doc_id="doc", system_id="system", output="out", annotator="annotator", group="group")
    scales = {d: (1, 5) for d in dims}  # declared: a single rating (or equal ones) cannot tell the scale
    ds_wide = load_user_dataset(wide.getvalue().encode(),
                                ColumnMapping(**common, dimensions={d: d for d in dims}, scales=scales),
                                filename="wide.csv")
    ds_long = load_user_dataset("\n".join(long_lines).encode(),
                                ColumnMapping(**common, dimension="dimension", value="value", scales=scales),
                                filename="long.jsonl")

    def scores(ds):
        return ds.human_scores.sort_values(["item_id", "dimension"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(scores(ds_wide), scores(ds_long), check_exact=True)
    # and the gold score is the mean of the preferred group's ratings, computed independently here
    for (item, dim), score in scores(ds_wide).set_index(["item_id", "dimension"])["score"].items():
        doc, system = item.split("/")
        mine = [r for r in rows if r["doc"] == doc and r["system"] == system]
        experts = [r[dim] for r in mine if r["group"] == "expert"]
        values = experts or [r[dim] for r in mine]
        assert score == pytest.approx(sum(values) / len(values), rel=1e-12)


def test_a_missing_annotator_column_is_one_problem_not_a_flood_of_duplicates():
    data = b"doc,system,out,coh\nd1,A,x,3\nd1,A,x,4\n"
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", annotator="rater",
                      dimensions={"coherence": "coh"})
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(data, m, filename="noann.csv")
    assert [(p.row, p.column) for p in info.value.problems] == [("-", "rater")]


def test_a_dimension_with_no_ratings_at_all_needs_a_declared_scale():
    data = b"doc,system,out,coh,flu\nd1,A,x,3,\nd1,B,y,4,\n"
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"coherence": "coh", "fluency": "flu"},
                      allow_missing_ratings=True)
    with pytest.raises(DatasetValidationError) as info:
        load_user_dataset(data, m, filename="blank.csv")
    assert [(p.row, p.column) for p in info.value.problems] == [("-", "flu")]
    assert "scale cannot be inferred" in info.value.problems[0].message
    m.scales = {"fluency": (1, 3)}
    ds = load_user_dataset(data, m, filename="blank.csv")
    assert ds.dimension("fluency").scale == (1.0, 3.0)
    assert ds.human_scores["dimension"].tolist() == ["coherence", "coherence"]


def test_expert_group_is_matched_case_insensitively_and_attributes_fill_from_later_rows():
    data = (b"doc,system,out,ann,grp,who,coh\n"
            b"d1,A,x,e1,Expert,,4\n"
            b"d1,A,x,w1,crowd,model,1\n")
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", annotator="ann", group="grp",
                      attributes=["who"], dimensions={"coherence": "coh"})
    ds = load_user_dataset(data, m, filename="case.csv")
    assert ds.human_scores["score"].tolist() == [4.0]
    assert ds.items["who"].tolist() == ["model"]
    assert ds.annotations["group"].tolist() == ["Expert", "crowd"]  # stored as written


def test_judge_named_gpt4_dimension_and_wide_annotators_of_any_name(tmp_path):
    """Issue 18.14: ``gpt4_coherence`` scores ``coherence``; ``quality_ann1..3`` are one dimension with three
    annotators (not three dimensions), whatever the dimension is called; ``gpt4_quality`` scores it."""
    import pandas as pd

    from evalcore.importers import suggest_mapping
    from evalcore.importers.api import import_table

    rows = []
    for d in range(3):
        for s in range(2):
            rows.append({"doc_id": f"d{d}", "system_id": f"S{s}", "summary": f"text {d} {s}",
                         "quality_ann1": 1 + d, "quality_ann2": 2 + s, "quality_ann3": 3,
                         "coherence": 1 + s + d, "gpt4_coherence": 2.5 + d, "gpt4_quality": 1.5 + s})
    frame = pd.DataFrame(rows)
    path = tmp_path / "wide.csv"
    frame.to_csv(path, index=False)
    m = suggest_mapping(frame.columns, frame)
    assert m.dimensions["quality"] == {"ann1": "quality_ann1", "ann2": "quality_ann2", "ann3": "quality_ann3"}
    assert m.dimensions["coherence"] == "coherence"
    assert {j.column: j.dimension for j in m.judges} == {"gpt4_coherence": "coherence", "gpt4_quality": "quality"}
    m.scales = {"quality": (1, 5), "coherence": (1, 5)}
    result = import_table(str(path), m)
    ann = result.dataset.annotations
    assert ann[ann["dimension"] == "quality"]["annotator"].nunique() == 3
    assert sorted(result.dataset.dimension_names) == ["coherence", "quality"]
    assert {d for r in result.runs for d in r.dimensions} == {"coherence", "quality"}
