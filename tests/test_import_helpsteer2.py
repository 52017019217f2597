"""HelpSteer2 as it ships imports: nvidia/HelpSteer2 (huggingface.co/datasets/nvidia/HelpSteer2, train.jsonl.gz)
has one record per response, two responses per prompt, no system column, and five ratings on 0-4 (prompt, response,
helpfulness, correctness, coherence, complexity, verbosity). The fixture (tests/fixtures/importers/helpsteer2.jsonl,
synthetic, 6 prompts x 2 responses) has that layout; its complexity ratings span only 0-2 and verbosity 0-3.

Before: the file could not be imported at all (no column mapped to doc_id / system_id: the error named internal
ids), the CLI could not assign roles, and the scales were prefilled as 0-5."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evalcore.importers import (
    ColumnMapping,
    DatasetValidationError,
    implicit_notes,
    import_table,
    read_table,
    scale_prefill,
    suggest_mapping,
)

FIXTURE = Path(__file__).parent / "fixtures" / "importers" / "helpsteer2.jsonl"
DIMS = ["helpfulness", "correctness", "coherence", "complexity", "verbosity"]


def records() -> list[dict]:
    return [json.loads(x) for x in FIXTURE.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_fixture_is_in_the_published_layout():
    recs = records()
    assert all(list(r) == ["prompt", "response", *DIMS] for r in recs)
    assert all(0 <= r[d] <= 4 for r in recs for d in DIMS)
    assert pd.Series([r["prompt"] for r in recs]).value_counts().eq(2).all()  # two responses per prompt


def test_the_layout_is_guessed_prompt_as_source_no_system():
    frame = read_table(FIXTURE)
    m = suggest_mapping(frame.columns, frame)
    assert (m.source, m.output, m.doc_id, m.system_id) == ("prompt", "response", None, None)
    assert list(m.dimensions) == DIMS
    notes = " ".join(implicit_notes(m))  # what the page says before the import
    assert "No document id column" in notes and "No system column" in notes and "output-1, output-2" in notes


def test_scales_are_inferred_from_the_values_not_prefilled_as_0_to_5():
    frame = read_table(FIXTURE)
    m = suggest_mapping(frame.columns, frame)
    recs = pd.DataFrame(records())
    want = {d: (0.0 if recs[d].min() == 0 else 1.0, float(recs[d].max())) for d in DIMS}
    assert want["helpfulness"] == (0.0, 4.0) and want["complexity"] == (0.0, 2.0) and want["verbosity"] == (0.0, 3.0)
    assert scale_prefill(frame, m) == want


def test_it_imports_with_prompts_as_documents_and_responses_numbered_within_them():
    frame = read_table(FIXTURE)
    m = suggest_mapping(frame.columns, frame)
    m.scales = {d: (0.0, 4.0) for d in DIMS}
    res = import_table(FIXTURE, m, name="hs2", table=frame)
    ds = res.dataset
    recs = records()
    assert len(ds.documents) == 6 and len(ds.items) == 12
    assert sorted(ds.systems) == ["output-1", "output-2"]
    docs = ds.documents.set_index("doc_id")["source"]
    items = ds.items.set_index("item_id")
    for k, r in enumerate(recs):  # record k: its prompt's document, its place among the prompt's responses
        item = f"doc-{k // 2 + 1}/output-{k % 2 + 1}"
        assert items.loc[item, "output"] == r["response"] and docs[items.loc[item, "doc_id"]] == r["prompt"]
        scores = ds.human_scores[ds.human_scores["item_id"] == item].set_index("dimension")["score"]
        assert scores.to_dict() == {d: float(r[d]) for d in DIMS}
    assert [(d.name, d.scale_min, d.scale_max) for d in ds.dimensions] == [(d, 0.0, 4.0) for d in DIMS]
    said = " ".join(res.warnings)
    assert "no document id column" in said and "numbered in file order (output-1 to output-2)" in said


def test_errors_name_roles_as_the_page_does():
    data = b"query,response,helpfulness\nq1,a,3\nq1,b,\n"
    with pytest.raises(DatasetValidationError) as e:
        import_table((data, "x.csv"), ColumnMapping(output="response", dimensions={"helpfulness": "helpfulness"}))
    msg = str(e.value)
    assert "'document id', 'source text' or 'item id'" in msg
    assert "doc_id" not in msg and "system_id" not in msg
    data = b"doc,system,response,helpfulness\nd1,,a,3\n,B,b,2\n"
    with pytest.raises(DatasetValidationError) as e:
        import_table((data, "y.csv"), ColumnMapping(doc_id="doc", system_id="system", output="response",
                                                    dimensions={"helpfulness": "helpfulness"}))
    msg = str(e.value)
    assert "line 2, column 'system': missing system (empty cell)" in msg
    assert "line 3, column 'doc': missing document id (empty cell)" in msg
    assert "doc_id" not in msg and "system_id" not in msg


def test_cli_imports_it_as_it_ships_and_takes_roles(tmp_path, monkeypatch, capsys):
    from evalcore.cli import main

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "s.db"))
    assert main(["import-dataset", str(FIXTURE), "--name", "hs2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["items"] == 12 and out["dimensions"] == DIMS
    said = " ".join(out["warnings"])
    assert "no --scale for 'complexity': 0-2, inferred from its ratings (0 to 2)" in said
    assert "no --scale for 'helpfulness': 0-4" in said and "0-5" not in said
    assert main(["import-dataset", str(FIXTURE), "--name", "hs2"]) == 0
    text = capsys.readouterr().out
    assert "helpfulness (0-4, interval)" in text and "complexity (0-2, interval)" in text
    # the same file with its prompt column named otherwise: the role given on the command line
    renamed = tmp_path / "hs2.csv"
    pd.DataFrame(records()).rename(columns={"prompt": "user_turn"}).to_csv(renamed, index=False)
    assert main(["import-dataset", str(renamed), "--name", "hs2"]) == 2
    assert "'document id', 'source text' or 'item id'" in capsys.readouterr().err
    assert main(["import-dataset", str(renamed), "--name", "hs2", "--role", "user_turn=source text",
                 "--role", "verbosity=ignored", "--scale", "complexity=0:4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["items"] == 12 and out["dimensions"] == DIMS[:4]
    assert main(["import-dataset", str(renamed), "--name", "hs2", "--role", "nope=source"]) == 2
    assert "no such column" in capsys.readouterr().err
