"""The Alt-Test authors' own annotation files read as they are published (github.com/nitaytech/AltTest, data/<set>/
human_annotations.json and llm_annotations.json: {annotator: {item: label}}, one key per annotator or per LLM), with
no document, system or output column (the Alt-Test needs none of them). The fixtures (tests/fixtures/importers/
alt_test_human_annotations.json, alt_test_llm_annotations.json) are synthetic, written in that exact layout (the
10k_prompts set's: annotator uuids, "item_N" keys, labels 1-5; two LLMs).

Before: the JSON reader wanted a list of records, and doc_id, system_id and output were required; importing the
authors' files took a conversion script."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.importers import import_table, read_table, suggest_mapping
from evalcore.meta.alt_test import alt_test, alt_test_scores

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
HUMANS = FIXTURES / "alt_test_human_annotations.json"
LLMS = FIXTURES / "alt_test_llm_annotations.json"


def load(path: Path) -> dict[str, dict[str, int]]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_fixtures_are_in_the_authors_layout():
    for path in (HUMANS, LLMS):
        obj = load(path)
        assert isinstance(obj, dict) and all(isinstance(v, dict) for v in obj.values())
        assert all(isinstance(x, int) and 1 <= x <= 5 for v in obj.values() for x in v.values())
    assert len(load(HUMANS)) == 3 and sorted(load(LLMS)) == ["gemini_flash", "gpt4o"]


def test_the_layout_reads_as_one_row_per_annotation():
    frame = read_table(HUMANS)
    humans = load(HUMANS)
    assert list(frame.columns) == ["annotator", "item_id", "label"]
    assert len(frame) == sum(len(v) for v in humans.values()) and frame.index[0] == 1
    assert frame.attrs["format"] == "json-annotators" and "annotator's first item" in frame.attrs["row_convention"]
    got = set(zip(frame["annotator"], frame["item_id"], frame["label"]))
    assert got == {(a, i, v) for a, labels in humans.items() for i, v in labels.items()}


def test_it_imports_without_document_system_or_output():
    frame = read_table(HUMANS)
    m = suggest_mapping(frame.columns, frame)
    assert (m.item_id, m.annotator, m.dimensions) == ("item_id", "annotator", {"label": "label"})
    assert (m.doc_id, m.system_id, m.output) == (None, None, None)
    res = import_table(HUMANS, m, name="alt", table=frame)
    ds = res.dataset
    humans = load(HUMANS)
    items = {i for labels in humans.values() for i in labels}
    assert set(ds.items["item_id"]) == items and (ds.items["doc_id"] == ds.items["item_id"]).all()
    assert set(ds.items["output"]) == {""}
    ann = ds.annotations
    assert set(zip(ann["item_id"], ann["annotator"], ann["value"])) == {
        (i, a, float(v)) for a, labels in humans.items() for i, v in labels.items()}
    # the human score is each item's mean over its annotators
    means = pd.DataFrame([(i, v) for labels in humans.values() for i, v in labels.items()]).groupby(0)[1].mean()
    hs = ds.human_scores.set_index("item_id")["score"]
    assert np.allclose(hs.reindex(means.index).to_numpy(), means.to_numpy())
    said = " ".join(res.warnings)
    assert "no output column" in said and "each item ('item_id') is a document of its own" in said


def test_cli_imports_both_files_and_the_alt_test_equals_the_one_on_the_dicts(tmp_path, monkeypatch, capsys):
    from evalcore.cli import main
    from evalcore.store import Store

    db = tmp_path / "s.db"
    monkeypatch.setenv("EVALCORE_DB", str(db))
    assert main(["import-dataset", str(HUMANS), "--name", "alt", "--json"]) == 0
    dataset_id = json.loads(capsys.readouterr().out)["dataset"]
    assert main(["import-run", str(LLMS), "--dataset", dataset_id, "--name", "llm", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    runs = {r["run"]: r for r in out["runs"]}  # one run per LLM of the file
    assert sorted(runs) == [f"{dataset_id}/scores-llm-gemini_flash", f"{dataset_id}/scores-llm-gpt4o"]
    store = Store(db)
    ds = store.load_dataset(dataset_id)
    humans, llms = load(HUMANS), load(LLMS)
    for name, labels in llms.items():
        run = store.load_run(f"{dataset_id}/scores-llm-{name}")
        j = run.judgments.set_index("item_id")["value"]
        assert j.to_dict() == {i: float(v) for i, v in labels.items()}
        # the Alt-Test through the import equals the Alt-Test on the authors' dicts, read here with pandas alone
        ratings = pd.DataFrame(humans).T.astype(float)  # annotators x items, NaN where not rated
        direct = alt_test(ratings, pd.Series(labels, dtype=float), scoring="neg_rmse", epsilon=0.2)
        judge = run.judgments.rename(columns={"value": "judge"})[["item_id", "judge"]]
        imported = alt_test_scores(ds.annotations, judge, "label", scoring="neg_rmse", epsilon=0.2)
        assert imported.winning_rate == direct.winning_rate
        assert imported.advantage_probability == pytest.approx(direct.advantage_probability, abs=1e-12)
        assert {a.annotator: (a.n, round(a.p_value, 12)) for a in imported.per_annotator} == {
            a.annotator: (a.n, round(a.p_value, 12)) for a in direct.per_annotator}
