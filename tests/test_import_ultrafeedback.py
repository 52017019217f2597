"""UltraFeedback's published layout imports as a ratings dataset. The fixture
(tests/fixtures/importers/ultrafeedback_sample.jsonl, synthetic, 5 records x 4 completions) follows the dataset card
of openbmb/UltraFeedback (huggingface.co/datasets/openbmb/UltraFeedback: source, instruction, models, completions,
correct_answers, incorrect_answers; each completion annotations, critique, custom_system_prompt, fine-grained_score,
model, overall_score, principle, response; annotations per aspect instruction_following, honesty, truthfulness,
helpfulness, each with a Rating "1".."5" or "N/A" and its Rationale). Expected ratings are read here from the file
with the json module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.importers import DatasetValidationError, import_table, read_table, suggest_mapping

FIXTURE = Path(__file__).parent / "fixtures" / "importers" / "ultrafeedback_sample.jsonl"
ASPECTS = ["instruction_following", "honesty", "truthfulness", "helpfulness"]


def records(path: Path = FIXTURE) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def file_ratings() -> dict[tuple[str, str, str], float]:
    """(instruction, model, aspect) -> rating, "N/A" left out."""
    return {(r["instruction"], c["model"], a): float(c["annotations"][a]["Rating"])
            for r in records() for c in r["completions"] for a in ASPECTS
            if c["annotations"][a]["Rating"] != "N/A"}


def test_the_layout_reads_as_one_row_per_completion_with_roles_guessed():
    t = read_table(FIXTURE)
    assert len(t) == sum(len(r["completions"]) for r in records()) == 20
    assert list(t.index[:2]) == [1, 2] and t.attrs["format"] == "ultrafeedback"
    m = suggest_mapping(t.columns, t)
    assert (m.doc_id, m.system_id, m.output, m.source) == ("doc_id", "model", "response", "instruction")
    assert sorted(m.dimensions) == sorted(ASPECTS)


def test_every_aspect_rating_is_imported_and_na_is_no_rating():
    t = read_table(FIXTURE)
    m = suggest_mapping(t.columns, t)
    with pytest.raises(DatasetValidationError) as e:  # the one "N/A" is a blank rating, said with its completion
        import_table(FIXTURE, m, name="uf")
    assert "completion 12, column 'truthfulness'" in str(e.value) and "allow-missing-ratings" in str(e.value)
    m.allow_missing_ratings = True
    ds = import_table(FIXTURE, m, name="uf").dataset
    items = ds.items.set_index("item_id")
    docs = ds.documents.set_index("doc_id")["source"]
    got = {(docs[items.loc[h["item_id"], "doc_id"]], items.loc[h["item_id"], "system_id"], h["dimension"]):
           float(h["score"]) for _, h in ds.human_scores.dropna(subset=["score"]).iterrows()}
    assert got == file_ratings() and len(got) == 20 * 4 - 1
    assert any("written by GPT-4" in n for n in ds.meta["import_notes"])  # not people: said


def test_a_file_without_annotations_is_one_error_naming_the_field(tmp_path):
    recs = records()
    for r in recs:
        for c in r["completions"]:
            del c["annotations"]
    bad = tmp_path / "uf.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    with pytest.raises(DatasetValidationError) as e:
        read_table(bad)
    assert len(e.value.problems) == 1
    msg = str(e.value)
    assert "column 'completions.annotations'" in msg and "per-aspect ratings" in msg and "column per aspect" in msg
