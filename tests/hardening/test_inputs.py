"""Hostile and broken input files (issue 9): each case goes through ``python -m evalcore import-dataset`` (in process)
into an empty store and asserts the exact outcome: imported with the right values, or exit status 2 with one message
naming the file, the row and the column, and nothing written to the store. A few cases also go through the Data page
(AppTest), where the same files used to crash the preview or the scale prefill.
"""

from __future__ import annotations

import decimal
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore import cli
from evalcore.store import Store

HEADER = "doc,system,output,coh\n"
GOOD_ROWS = "d1,A,first text,1\nd1,B,second text,5\nd2,A,third text,3\n"


def parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


@dataclass
class Case:
    """A file, the command's extra options, and what must come of it."""

    name: str
    data: bytes
    args: list[str] = field(default_factory=list)
    # an error: (row as the message counts it, column, words the message must hold); row "-" = whole file
    error: tuple[Any, str, str] | None = None
    check: Callable[[Any], None] | None = None  # for an import: checks on the saved dataset (and runs)
    unit: str = "line"


def _values(ds, col: str = "score") -> dict:
    return dict(zip(ds.human_scores["item_id"], ds.human_scores[col]))


def ok_three(ds) -> None:
    assert _values(ds) == {"d1/A": 1.0, "d1/B": 5.0, "d2/A": 3.0}
    assert ds.items["output"].tolist() == ["first text", "second text", "third text"]


CASES = [
    # ------------------------------------------------------------------ the file as a whole
    Case("empty.csv", b"", error=("-", "-", "the file is empty")),
    Case("header_only.csv", HEADER.encode(), error=("-", "-", "the file has no data rows")),
    Case("notes.txt", b"a,b\n1,2\n", error=("-", "-", "unknown file type '.txt'")),
    Case("blank_lines_only.csv", b"\n\n\n", error=("-", "-", "the file is empty")),
    Case("bom.csv", ("\ufeff" + HEADER + GOOD_ROWS).encode(), check=ok_three),
    Case("crlf.csv", (HEADER + GOOD_ROWS).replace("\n", "\r\n").encode(), check=ok_three),
    Case("latin1.csv", (HEADER + "d1,A,caf\xe9,1\n").encode("latin-1"), error=(2, "-", "not UTF-8 text (byte 0xe9")),
    Case("utf16.csv", (HEADER + GOOD_ROWS).encode("utf-16"), error=(1, "-", "NUL byte")),
    Case("nul_byte.csv", (HEADER + "d1,A,te\x00xt,1\n").encode(), error=(2, "-", "holds a NUL byte")),
    Case("semicolon.csv", (HEADER + GOOD_ROWS).replace(",", ";").encode(), check=ok_three),
    Case("decimal_comma.csv", b"doc;system;output;coh\nd1;A;x;2,5\nd1;B;y;4\n", args=["--scale", "coherence=1:5"],
         error=(2, "coh", "'2,5' is not a number (use a dot as the decimal separator)")),
    Case("tabs.tsv", (HEADER + GOOD_ROWS).replace(",", "\t").encode(), check=ok_three),
    Case("ragged.csv", (HEADER + "d1,A,first text,1\nd1,B,an, unquoted comma,5\n").encode(),
         error=(3, "-", "this row has 5 fields but the header has 4")),
    Case("blank_line_numbering.csv", (HEADER + "\nd1,A,x,1\n\nd1,B,y,seven\n").encode(),
         error=(5, "coh", "rating 'seven' is not a number")),
    Case("quoted_newline.csv", (HEADER + 'd1,A,"two\nlines",1\nd1,B,y,9\n').encode(), args=["--scale", "coherence=1:5"],
         error=(4, "coh", "rating 9 is outside the declared scale 1-5")),
    Case("trailing_blank_header.csv", b"doc,system,output,coh,,\nd1,A,first text,1,,\nd1,B,second text,5,,\n"
         b"d2,A,third text,3,,\n", check=ok_three),
    # ------------------------------------------------------------------ cells
    Case("out_of_scale.csv", (HEADER + "d1,A,x,1\nd1,B,y,7\n").encode(), args=["--scale", "coherence=1:5"],
         error=(3, "coh", "rating 7 is outside the declared scale 1-5")),
    Case("nan_rating.csv", (HEADER + "d1,A,x,1\nd1,B,y,NaN\n").encode(), error=(3, "coh", "is not a finite number")),
    Case("inf_rating.csv", (HEADER + "d1,A,x,1\nd1,B,y,inf\n").encode(), error=(3, "coh", "is not a finite number")),
    Case("duplicate_rows.csv", (HEADER + "d1,A,x,1\nd1,A,x,4\nd1,B,y,2\n").encode(),
         error=(3, "coh", "duplicate rating: item 'd1/A', dimension 'coherence' was already rated on line 2")),
    Case("empty_output.csv", (HEADER + "d1,A,   ,1\nd1,B,y,2\n").encode(), error=(2, "output", "empty output text")),
    Case("missing_system.csv", (HEADER + "d1,,x,1\nd1,B,y,2\n").encode(),
         error=(2, "system", "missing system (empty cell)")),
    Case("hostile_names.csv",
         b'doc,system,output,coh\nd1,"=HYPERLINK(""http://x"",""click"")",<script>alert(1)</script>,1\n'
         b'd1,+SUM(1;2),@cmd,5\n',
         check=lambda ds: (
             ds.systems == ["+SUM(1;2)", '=HYPERLINK("http://x","click")'] or
             pytest.fail(ds.systems),
             ds.items["output"].tolist() == ["<script>alert(1)</script>", "@cmd"] or pytest.fail("texts"))),
    Case("hostile_dimension.csv", b"doc,system,output,=cmd|' /C calc'!A0\nd1,A,x,1\nd1,B,y,2\n",
         check=lambda ds: ds.dimension_names == ["=cmd|' /C calc'!A0"] or pytest.fail(ds.dimension_names)),
    Case("near_duplicate_ids.csv", (HEADER + "d1,gpt,x,1\nd1,gpt ,y,5\n").encode(),
         check=lambda ds: (ds.systems == ["gpt", "gpt "] or pytest.fail(ds.systems),
                           any("differ only by whitespace" in w for w in ds.meta["import_warnings"])
                           or pytest.fail("no warning"))),
    Case("big_cell.csv", (HEADER + 'd1,A,"' + "x" * 10_000_000 + '",1\nd1,B,y,5\n').encode(),
         check=lambda ds: len(ds.items.loc[0, "output"]) == 10_000_000 or pytest.fail("cell cut")),
    Case("too_big_cell.csv", (HEADER + 'd1,A,"' + "x" * 11_000_000 + '",1\nd1,B,y,5\n').encode(),
         error=(2, "output", "over the 10 MB a cell may hold")),
    Case("many_rows.csv", (HEADER + "".join(f"d{i // 4},S{i % 4},text {i},{1 + i % 5}\n"
                                            for i in range(40_000))).encode(),
         check=lambda ds: (len(ds.items) == 40_000 or pytest.fail(len(ds.items)),
                           ds.human_scores["score"].sum() == 8_000 * 15 or pytest.fail("sum"))),
    # ------------------------------------------------------------------ JSON and JSONL
    Case("broken_line.jsonl", b'{"doc": "d1", "system": "A", "output": "x", "coh": 1}\n{"doc": "d1", "sys\n',
         error=(2, "-", "malformed JSON on line 2"), unit="record"),
    Case("not_a_list.json", b'{"rows": []}', error=("-", "-", "expected a JSON list of records"), unit="record"),
    Case("deeply_nested.json", deep_json(100_000).encode(), error=("-", "-", "nested more deeply than the reader"),
         unit="record"),
    Case("deeply_nested.jsonl", (json.dumps({"doc": "d1", "system": "A", "output": "x", "coh": 1}) + "\n"
                                 + '{"doc": ' + deep_json(100_000) + "}\n").encode(),
         error=(2, "-", "line 2 is nested more deeply"), unit="record"),
    Case("huge_int.json", b'[{"doc": "d1", "system": "A", "output": "x", "coh": 1' + b"0" * 400 + b'},'
         b' {"doc": "d1", "system": "B", "output": "y", "coh": 2}]', error=(1, "coh", "is too large"), unit="record"),
    Case("huge_int.jsonl", b'{"doc": "d1", "system": "A", "output": "x", "coh": 2}\n'
         b'{"doc": "d1", "system": "B", "output": "y", "coh": 1' + b"0" * 400 + b"}\n",
         error=(2, "coh", "is too large"), unit="record"),
    Case("boolean_rating.json", b'[{"doc": "d1", "system": "A", "output": "x", "coh": true}, '
         b'{"doc": "d1", "system": "B", "output": "y", "coh": 2}]', error=(1, "coh", "not the boolean True"),
         unit="record"),
    # ------------------------------------------------------------------ Parquet
    Case("broken.parquet", b"PAR1 not really", error=("-", "-", "not a readable Parquet file"), unit="row"),
    Case("decimal128.parquet", parquet(pa.table({
        "doc": ["d1", "d1", "d2"], "system": ["A", "B", "A"], "output": ["first text", "second text", "third text"],
        "coh": pa.array([decimal.Decimal("1.00"), decimal.Decimal("5.00"), decimal.Decimal("3.00")],
                        type=pa.decimal128(5, 2))})), check=ok_three, unit="row"),
    # ------------------------------------------------------------------ shapes and scales (issue 9 items 8, 9)
    Case("long_blank_dimension.csv", b"doc,system,output,dimension,score\nd1,A,x,coherence,1\nd1,A,x,,3\n"
         b"d1,B,y,coherence,5\n", args=["--scale", "coherence=1:5"],
         error=(3, "dimension", "missing dimension name (empty cell)")),
    Case("all_ratings_equal.csv", (HEADER + "d1,A,x,3\nd1,B,y,3\nd2,A,z,3\n").encode(),
         error=("-", "coh", "every rating of 'coherence' is 3 (3 ratings), so its scale cannot be inferred")),
    Case("all_ratings_equal_declared.csv", (HEADER + "d1,A,x,3\nd1,B,y,3\n").encode(),
         args=["--scale", "coherence=1:5"],
         check=lambda ds: ds.dimension("coherence").scale == (1.0, 5.0) or pytest.fail("scale")),
    # ------------------------------------------------------------------ judge columns
    Case("judge_text_column.csv", (HEADER.strip() + ",judge\n" + "d1,A,x,1,good\nd1,B,y,5,bad\n").encode(),
         args=["--judge", "judge=coherence"], error=("-", "judge", "holds no number at all")),
    Case("judge_differs_across_annotator_rows.csv",
         b"doc,system,output,annotator,coh,judge\nd1,A,x,r1,1,4\nd1,A,x,r2,2,5\nd1,B,y,r1,5,2\n",
         args=["--scale", "coherence=1:5", "--judge", "judge=coherence"],
         error=(3, "judge", "judge score for item 'd1/A', dimension 'coherence' differs from the one on line 2")),
    Case("judge_unknown_column.csv", (HEADER + GOOD_ROWS).encode(), args=["--judge", "gpt5"],
         error=None, check=None),
    Case("judge_metric.csv", (HEADER.strip() + ",nll\n" + "d1,A,x,1,-11.5\nd1,B,y,5,-0.25\n").encode(),
         args=["--scale", "coherence=1:5"],
         check=lambda ds: None),
]


@pytest.fixture()
def store_path(tmp_path, monkeypatch):
    path = tmp_path / "store.db"
    monkeypatch.setenv("EVALCORE_DB", str(path))
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_input_file(case: Case, tmp_path, store_path, capsys):
    path = tmp_path / case.name
    path.write_bytes(case.data)
    rc = cli.main(["import-dataset", str(path), "--name", "case", "--json", *case.args])
    out, err = capsys.readouterr()
    store = Store(store_path)
    if case.name == "judge_unknown_column.csv":  # a mistake in the command, not in the file: one line
        assert rc == 2 and err == "error: --judge 'gpt5': no such column; the columns are 'doc', 'system', " \
                                  "'output', 'coh'\n"
        assert store.list_datasets() == []
        return
    if case.error is not None:
        row, column, words = case.error
        assert rc == 2, out
        assert "Traceback" not in err and err.startswith("error: ")
        where = "whole file" if row == "-" else f"{case.unit} {row}"
        col = "-" if column == "-" else repr(column)
        assert f"{path}, {where}, column {col}: " in err, err[:2000]
        assert words in err, err[:2000]
        assert store.list_datasets() == [] and store.list_runs() == []  # nothing written
        return
    assert rc == 0, err[:2000]
    summary = json.loads(out)
    ds = store.load_dataset(summary["dataset"])
    if case.check is not None:
        case.check(ds)
    if case.name == "judge_metric.csv":
        (run_id,) = summary["runs"]
        assert store.load_run(run_id).judgments.set_index("item_id")["value"].to_dict() == {"d1/A": -11.5,
                                                                                          "d1/B": -0.25}


def test_the_catalogue_is_large_enough():
    assert len(CASES) >= 25


# ------------------------------------------------------------------------------------------------ the Data page


PAGE_CASES = {
    # issue 9 item 6: an inf rating used to crash the scale prefill (StreamlitJSNumberBoundsError)
    "inf_rating.csv": (HEADER + "d1,A,x,1\nd1,B,y,inf\nd2,A,z,4\n").encode(),
    # item 5: a 400-digit rating used to fail the preview's Arrow conversion
    "huge_int.json": b'[{"doc": "d1", "system": "A", "output": "x", "coh": 1' + b"0" * 400 + b'},'
                     b' {"doc": "d1", "system": "B", "output": "y", "coh": 2}]',
    # item 4: nested values in a JSON column used to raise RecursionError on the page
    "nested_cell.jsonl": (json.dumps({"doc": "d1", "system": "A", "output": "x", "coh": 1,
                                      "meta": {"a": [1, {"b": 2}]}})
                          + "\n" + json.dumps({"doc": "d1", "system": "B", "output": "y", "coh": 4, "meta": None})
                          + "\n").encode(),
    # item 8: a blank dimension cell used to give "a scale is declared for ''"
    "long_blank_dimension.csv": b"doc,system,output,dimension,score\nd1,A,x,coherence,1\nd1,A,x,,3\n"
                                b"d1,B,y,coherence,5\n",
}


@pytest.mark.parametrize("name", list(PAGE_CASES))
def test_data_page_survives_the_file(name, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "page.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "20")
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=90)
    at.run()
    at.file_uploader(key="upload").upload(name, PAGE_CASES[name], "application/octet-stream")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.button(key="import_dataset").click().run()
    assert not at.exception, [e.value for e in at.exception]
    store = Store(tmp_path / "page.db")
    if name == "nested_cell.jsonl":
        assert not at.error
        (ds,) = store.list_datasets()
        return
    problems = [tuple(r) for r in pd.DataFrame(
        next(d.value for d in at.dataframe if "problem" in d.value.columns))[["row", "column"]].itertuples(
        index=False)]
    expected = {"inf_rating.csv": [("3", "coh")], "huge_int.json": [("1", "coh")],
                "long_blank_dimension.csv": [("3", "dimension")]}[name]
    assert problems == expected
    assert not any("declared for ''" in e.value for e in at.error)
    assert store.list_datasets() == []
