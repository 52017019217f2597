"""Published preference sets read by file in their own layouts, through import-pairs and the Data page's role menu.

The fixtures (tests/fixtures/importers/, synthetic) follow each set's dataset card:
- RewardBench (huggingface.co/datasets/allenai/reward-bench, README "dataset_info": prompt, chosen, chosen_model,
  rejected, rejected_model, subset, id; "chosen: the response from the better model or the better rated prompt").
- JudgeBench (github.com/ScalerLab/JudgeBench, huggingface.co/datasets/ScalerLab/JudgeBench: pair_id, original_id,
  source, question, response_model, response_A, response_B, label, where label is "A>B" or "B>A").
- HelpSteer3 (huggingface.co/datasets/nvidia/HelpSteer3, README "dataset_info": domain, language, context a list of
  {role, content}, response1, response2, overall_preference int -3..3 where negative prefers response1, and
  individual_preference a list of {score, reasoning, feedback1, feedback2}, one per annotator).
Expected votes are computed here from the files with the json module, independently of the importer."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from evalcore.importers import DatasetValidationError
from evalcore.importers.pairs import guess_pair_mapping, import_pairs, looks_pairwise, mapping_from_roles, pair_roles

HERE = Path(__file__).parent / "fixtures" / "importers"
REWARDBENCH = HERE / "rewardbench_sample.jsonl"
JUDGEBENCH = HERE / "judgebench_sample.jsonl"
HELPSTEER3 = HERE / "helpsteer3_sample.jsonl"


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def sign(x: int) -> str:
    return "a" if x < 0 else "b" if x > 0 else "tie"


# ------------------------------------------------------------------------------------------------- RewardBench


def test_rewardbench_is_recognised_and_its_roles_prefilled():
    cols = list(records(REWARDBENCH)[0])
    assert cols == ["prompt", "chosen", "chosen_model", "rejected", "rejected_model", "subset", "id"]
    m = guess_pair_mapping(cols)
    assert (m.prompt, m.chosen, m.rejected, m.model_a, m.model_b, m.pair_id) == (
        "prompt", "chosen", "rejected", "chosen_model", "rejected_model", "id")
    assert looks_pairwise(cols)
    roles = pair_roles(m, cols)
    assert (roles["chosen"], roles["rejected"], roles["subset"]) == ("chosen (preferred)", "rejected", "ignored")
    assert mapping_from_roles(roles) == m


def test_rewardbench_chosen_is_preferred_wherever_it_is_placed():
    recs = records(REWARDBENCH)
    res = import_pairs(REWARDBENCH, name="rb")
    ds = res.dataset
    items = ds.items.set_index("item_id")
    p = ds.preferences.set_index("pair_id")
    assert len(p) == len(recs) == 12
    # the position rule, recomputed: chosen shown as B where the sha256's first byte of the texts is odd
    as_b = [hashlib.sha256("\x00".join((r["prompt"], r["chosen"], r["rejected"])).encode()).digest()[0] % 2 == 1
            for r in recs]
    assert 0 < sum(as_b) < len(recs)  # both positions used
    for r, b in zip(recs, as_b):
        v = p.loc[str(r["id"])]
        preferred = items.loc[v["item_b"] if v["preferred"] == "b" else v["item_a"]]
        assert v["preferred"] == ("b" if b else "a")
        assert preferred["output"] == r["chosen"] and preferred["system_id"] == r["chosen_model"]
    assert any("7 as A, 5 as B" in w for w in res.warnings) and sum(as_b) == 5
    # the same file gives the same positions
    assert import_pairs(REWARDBENCH, name="rb").dataset.preferences.equals(ds.preferences)


def test_rewardbench_without_rejected_is_one_error_naming_it(tmp_path):
    bad = tmp_path / "rb.jsonl"
    bad.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "rejected"}) + "\n"
                           for r in records(REWARDBENCH)), encoding="utf-8")
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(bad, name="rb")
    assert len(e.value.problems) == 1
    msg = str(e.value)
    assert "no 'rejected' column (the response not preferred)" in msg and "rename the column" in msg
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(bad, name="rb", mapping=guess_pair_mapping(list(records(bad)[0])), door="page")
    assert "role 'rejected' in the role menu" in str(e.value) and "--" not in str(e.value)


# -------------------------------------------------------------------------------------------------- JudgeBench


def test_judgebench_labels_read_as_votes():
    recs = records(JUDGEBENCH)
    cols = list(recs[0])
    m = guess_pair_mapping(cols)
    assert (m.prompt, m.output_a, m.output_b, m.pair_id, m.winners) == (
        "question", "response_A", "response_B", "pair_id", ["label"])
    assert looks_pairwise(cols) and pair_roles(m, cols)["label"] == "winner"
    res = import_pairs(JUDGEBENCH, name="jb")
    p = res.dataset.preferences.set_index("pair_id")
    want = {r["pair_id"]: {"A>B": "a", "B>A": "b"}[r["label"]] for r in recs}
    assert p["preferred"].to_dict() == want
    assert Counter(want.values()) == {"a": 5, "b": 5}


def test_judgebench_without_label_is_one_error_naming_the_winner_column(tmp_path):
    bad = tmp_path / "jb.jsonl"
    bad.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "label"}) + "\n"
                           for r in records(JUDGEBENCH)), encoding="utf-8")
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(bad, name="jb")
    assert len(e.value.problems) == 1
    assert "no winner column" in str(e.value) and "--winner COLUMN" in str(e.value)


# -------------------------------------------------------------------------------------------------- HelpSteer3


def test_helpsteer3_is_recognised_and_its_roles_prefilled():
    cols = list(records(HELPSTEER3)[0])
    m = guess_pair_mapping(cols)
    assert (m.prompt, m.output_a, m.output_b, m.signed, m.individual) == (
        "context", "response1", "response2", "overall_preference", "individual_preference")
    assert looks_pairwise(cols)
    roles = pair_roles(m, cols)
    assert roles["overall_preference"] == "preference -3..3 (negative: A)"
    assert roles["individual_preference"] == "annotators' preferences (list)"
    assert mapping_from_roles(roles) == m


def test_helpsteer3_each_annotator_votes_negative_prefers_response1():
    recs = records(HELPSTEER3)
    res = import_pairs(HELPSTEER3, name="hs3")
    ds = res.dataset
    p = ds.preferences
    items = ds.items.set_index("item_id")
    want = Counter()
    for r in recs:
        for k, a in enumerate(r["individual_preference"]):
            want[(r["response1"], f"annotator-{k + 1}", sign(a["score"]))] += 1
    got = Counter((items.loc[v["item_a"], "output"], v["annotator"], v["preferred"]) for _, v in p.iterrows())
    assert got == want and len(p) == 22
    # the context's turns are decoded: one user turn as itself, several as "User: ..." paragraphs
    sources = set(ds.documents["source"])
    assert recs[0]["context"][0]["content"] in sources
    assert "User: Hi, topic 1?\n\nAssistant: Sure, what about it?\n\nUser: Summarise topic 1." in sources
    assert any("not counted again" in w for w in res.warnings)


def test_helpsteer3_without_individual_scores_votes_the_overall_preference(tmp_path):
    recs = records(HELPSTEER3)
    f = tmp_path / "hs3.jsonl"
    f.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "individual_preference"}) + "\n"
                         for r in recs), encoding="utf-8")
    p = import_pairs(f, name="hs3").dataset.preferences
    assert list(p["preferred"]) == [sign(r["overall_preference"]) for r in recs]
    assert set(p["annotator"]) == {"vote-1"}  # one anonymous vote per pair, as for any single winner column


def test_helpsteer3_out_of_range_preference_names_its_line(tmp_path):
    recs = records(HELPSTEER3)
    recs[2] = {k: v for k, v in recs[2].items() if k != "individual_preference"} | {"overall_preference": 5}
    f = tmp_path / "hs3.jsonl"
    f.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "individual_preference"}) + "\n"
                         for r in recs), encoding="utf-8")
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(f, name="hs3")
    assert "record 3, column 'overall_preference': 5 is not an integer from -3 to 3" in str(e.value)


def test_helpsteer3_without_response2_is_one_error_naming_it(tmp_path):
    f = tmp_path / "hs3.jsonl"
    f.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "response2"}) + "\n"
                         for r in records(HELPSTEER3)), encoding="utf-8")
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(f, name="hs3")
    assert len(e.value.problems) == 1 and "no 'response2' column (the second response)" in str(e.value)


def test_cli_import_pairs_reads_each_layout(tmp_path, monkeypatch, capsys):
    from evalcore.cli import main

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "s.db"))
    for path, outcomes in ((REWARDBENCH, {"a": 7, "b": 5, "tie": 0}), (JUDGEBENCH, {"a": 5, "b": 5, "tie": 0}),
                           (HELPSTEER3, {"a": 9, "b": 10, "tie": 3})):
        assert main(["import-pairs", str(path), "--name", path.stem, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["outcomes"] == outcomes


def test_cli_import_pairs_by_dataset_name_reads_what_the_file_gives(tmp_path, monkeypatch, capsys):
    """--hf-dataset NAME: the set as datasets.load_dataset returns it (here a Dataset built from the fixture's records,
    no network) is recognised as its file is, with the same votes."""
    datasets = pytest.importorskip("datasets")
    import pandas as pd

    from evalcore.cli import main

    asked = []

    def load_dataset(name, split=None):
        asked.append((name, split))
        return datasets.Dataset.from_pandas(pd.DataFrame(records({"nvidia/HelpSteer3": HELPSTEER3,
                                                                   "allenai/reward-bench": REWARDBENCH}[name])))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "s.db"))
    for name, split, outcomes in (("nvidia/HelpSteer3", "validation", {"a": 9, "b": 10, "tie": 3}),
                                  ("allenai/reward-bench", "filtered", {"a": 7, "b": 5, "tie": 0})):
        assert main(["import-pairs", "--hf-dataset", name, "--split", split, "--name", "hub", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["outcomes"] == outcomes
    assert asked == [("nvidia/HelpSteer3", "validation"), ("allenai/reward-bench", "filtered")]


def test_cli_import_pairs_by_dataset_name_without_datasets_says_how_to_install(tmp_path, monkeypatch, capsys):
    import sys

    from evalcore.cli import main

    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed: importing it raises ImportError
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "s.db"))
    assert main(["import-pairs", "--hf-dataset", "allenai/reward-bench", "--name", "rb"]) != 0
    err = capsys.readouterr().err
    assert "needs the datasets library: pip install datasets" in err and "allenai/reward-bench" in err
    assert main(["import-pairs", "--name", "rb"]) != 0
    assert "give a FILE or --hf-dataset NAME" in capsys.readouterr().err
