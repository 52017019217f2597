"""import-pairs / import-verdicts: an MT-Bench-format file and a PandaLM-style wide file import with no hand work;
each bad file (unknown winner value, identical outputs, unknown pair id, bad order) gives one clear message and
writes nothing; meta --json then reports the pairwise block."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.importers import DatasetValidationError
from evalcore.importers.pairs import guess_pair_mapping, import_pairs, import_verdicts, looks_pairwise

MTBENCH_HEADER = ["question_id", "model_a", "model_b", "winner", "judge", "turn", "question", "answer_a", "answer_b"]
HAIKU, RAIN, DROPS = "Soft rain on the roof", "Rain is wet.", "Drops fall, clouds weep"
MTBENCH_ROWS = [
    [81, "gpt-4", "llama-13b", "model_a", "author_0", 1, "Write a haiku about rain.", HAIKU, RAIN],
    [81, "gpt-4", "llama-13b", "tie", "author_1", 1, "Write a haiku about rain.", HAIKU, RAIN],
    # the same pair shown the other way round: one pair, the vote flipped onto the first orientation
    [81, "llama-13b", "gpt-4", "model_b", "author_2", 1, "Write a haiku about rain.", RAIN, HAIKU],
    [81, "gpt-4", "vicuna-13b", "tie (bothbad)", "author_0", 1, "Write a haiku about rain.", HAIKU, DROPS],
    [82, "vicuna-13b", "llama-13b", "tie (inconsistent)", "author_0", 1, "Name three primes.", "2, 3, 5", "1, 2, 3"],
]


def write_csv(path: Path, header, rows) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_mtbench_columns_are_guessed():
    m = guess_pair_mapping(MTBENCH_HEADER)
    assert (m.prompt, m.output_a, m.output_b, m.model_a, m.model_b, m.annotator, m.turn, m.winners) == (
        "question", "answer_a", "answer_b", "model_a", "model_b", "judge", "turn", ["winner"])
    assert looks_pairwise(MTBENCH_HEADER)
    assert not looks_pairwise(["doc_id", "system_id", "output", "coherence"])


def test_mtbench_file_imports(tmp_path):
    res = import_pairs(write_csv(tmp_path / "mt.csv", MTBENCH_HEADER, MTBENCH_ROWS), name="mt")
    s = res.summary()
    assert s["pairs"] == 3 and s["votes"] == 5
    assert s["annotators"] == ["author_0", "author_1", "author_2"]
    assert s["models"] == ["gpt-4", "llama-13b", "vicuna-13b"]
    p = res.dataset.preferences
    first = p[p["pair_id"] == p["pair_id"].iloc[0]]
    assert first["preferred"].tolist() == ["a", "tie", "a"]  # author_2's model_b (gpt-4) flipped onto item_a
    assert p["tie_variant"].tolist()[-2:] == ["bothbad", "inconsistent"]
    # the haiku answer appears in two pairs: one item
    items = res.dataset.items
    assert (items["output"] == HAIKU).sum() == 1 and len(items) == 5


def test_wide_file_one_winner_column_per_annotator(tmp_path):
    rows = [["Fix: teh cat", "", "the cat", "teh cat", 1, 1, 0],
            ["Sum 2+2", "", "4", "5", 1, 2, 1]]
    f = write_csv(tmp_path / "w.csv", ["instruction", "input", "response1", "response2", "annotator1", "annotator2",
                                       "annotator3"], rows)
    res = import_pairs(f, name="w")
    s = res.summary()
    assert s["pairs"] == 2 and s["votes"] == 6 and s["annotators"] == ["annotator1", "annotator2", "annotator3"]
    assert res.dataset.preferences["preferred"].tolist() == ["a", "a", "tie", "a", "b", "a"]
    explicit = import_pairs(f, name="w", winners=["annotator1", "annotator3"]).summary()
    assert explicit["votes"] == 4


def test_unknown_winner_value_names_file_row_and_column(tmp_path):
    rows = [r[:] for r in MTBENCH_ROWS]
    rows[2][3] = "model_c"
    f = write_csv(tmp_path / "bad.csv", MTBENCH_HEADER, rows)
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(f, name="bad")
    msg = str(e.value)
    assert "bad.csv" in msg and "line 4" in msg and "'winner'" in msg and "'model_c'" in msg
    assert "nothing was imported" in msg


def test_identical_outputs_are_an_error(tmp_path):
    rows = [r[:] for r in MTBENCH_ROWS]
    rows[1][8] = rows[1][7]
    with pytest.raises(DatasetValidationError, match=r"line 3, column 'answer_b': the two outputs are identical"):
        import_pairs(write_csv(tmp_path / "same.csv", MTBENCH_HEADER, rows), name="same")


def _imported(tmp_path):
    return import_pairs(write_csv(tmp_path / "mt.csv", MTBENCH_HEADER, MTBENCH_ROWS), name="mt").dataset


def test_verdicts_import_names_the_output_in_either_order(tmp_path):
    ds = _imported(tmp_path)
    pids = list(dict.fromkeys(ds.preferences["pair_id"]))
    f = write_csv(tmp_path / "v.csv", ["pair_id", "order", "verdict", "raw"],
                  [[pids[0], "ab", "a", "[[A]]"], [pids[0], "ba", "a", "[[B]]"], [pids[1], "ab", "2", "[[B]]"],
                   [pids[1], "ba", "", "no idea"]])
    run = import_verdicts(f, ds, name="other tool")
    c = run.comparisons.set_index(["pair_id", "order"])
    # "a" names output A: shown first in order ab, second in order ba
    assert c.loc[(pids[0], "ab"), "verdict"] == "first" and c.loc[(pids[0], "ba"), "verdict"] == "second"
    assert c.loc[(pids[1], "ab"), "verdict"] == "second"
    assert c.loc[(pids[1], "ba"), "status"] == "failed" and c.loc[(pids[1], "ba"), "raw"] == "no idea"


def test_unknown_pair_ids_are_listed_and_bad_order_is_an_error(tmp_path):
    ds = _imported(tmp_path)
    pid = ds.preferences["pair_id"].iloc[0]
    f = write_csv(tmp_path / "v.csv", ["pair_id", "order", "verdict"],
                  [[pid, "ab", "a"], ["nope-1", "ab", "a"], ["nope-2", "ba", "b"]])
    with pytest.raises(DatasetValidationError, match=r"2 pair ids are not pairs of dataset .*'nope-1' \(line 3\), "
                                                     r"'nope-2' \(line 4\)"):
        import_verdicts(f, ds, name="x")
    f = write_csv(tmp_path / "o.csv", ["pair_id", "order", "verdict"], [[pid, "first", "a"]])
    with pytest.raises(DatasetValidationError, match=r"line 2, column 'order': order 'first' is neither 'ab'"):
        import_verdicts(f, ds, name="x")


def _cli(args, db):
    env = {**os.environ, "EVALCORE_DB": str(db)}
    return subprocess.run([sys.executable, "-m", "evalcore", *args], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parent.parent, timeout=120)


def test_cli_import_pairs_verdicts_and_meta(tmp_path):
    db = tmp_path / "s.db"
    f = write_csv(tmp_path / "mt.csv", MTBENCH_HEADER, MTBENCH_ROWS)
    out = _cli(["import-pairs", str(f), "--name", "mt", "--json"], db)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert set(s) == {"dataset", "pairs", "votes", "outcomes", "annotators", "models", "warnings"} and s["pairs"] == 3
    from evalcore.store import Store

    ds = Store(db).load_dataset(s["dataset"])
    rows = []
    for pid in dict.fromkeys(ds.preferences["pair_id"]):
        rows += [[pid, "ab", "a"], [pid, "ba", "a"]]
    v = _cli(["import-verdicts", str(write_csv(tmp_path / "v.csv", ["pair_id", "order", "verdict"], rows)),
              "--dataset", s["dataset"], "--name", "judge", "--json"], db)
    assert v.returncode == 0, v.stderr
    got = json.loads(v.stdout)
    assert got["verdicts"] == 6 and got["unmatched"] == 0
    m = _cli(["meta", "--dataset", s["dataset"], "--run", got["run"], "--json", "--resamples", "50"], db)
    assert m.returncode == 0, m.stderr
    p = json.loads(m.stdout)["dimensions"]["preference"]["pairwise"]
    # the judge says "a" on every pair in both orders: the votes are a, tie, a | tie | tie -> 2 of 5 agree
    assert p["agreement"]["with_ties"]["statistic"] == pytest.approx(2 / 5)
    assert p["positional_agreement"]["statistic"] == 1.0 and p["accuracy_ab"]["n"] == 3


def test_cli_bad_file_writes_nothing(tmp_path):
    db = tmp_path / "s.db"
    rows = [r[:] for r in MTBENCH_ROWS]
    rows[0][3] = "maybe"
    out = _cli(["import-pairs", str(write_csv(tmp_path / "bad.csv", MTBENCH_HEADER, rows)), "--name", "bad"], db)
    assert out.returncode == 2 and "'maybe' is not a known value" in out.stderr
    from evalcore.store import Store

    assert not [d for d in Store(db).list_datasets()]


def test_anonymous_votes_and_a_pair_id_naming_two_pairs(tmp_path):
    rows = [["p1", "Q", "x", "y", "a"], ["p1", "Q", "x", "y", "b"], ["p2", "Q", "x", "z", "tie"]]
    res = import_pairs(write_csv(tmp_path / "anon.csv", ["pair_id", "prompt", "output_a", "output_b", "winner"], rows),
                       name="anon")
    assert res.dataset.preferences["annotator"].tolist() == ["vote-1", "vote-2", "vote-1"]
    assert res.dataset.preferences["pair_id"].tolist() == ["p1", "p1", "p2"]
    assert any("anonymous" in w for w in res.warnings)
    rows[2][0] = "p1"
    with pytest.raises(DatasetValidationError, match=r"line 4, column 'pair_id': pair id 'p1' names another pair"):
        import_pairs(write_csv(tmp_path / "bad.csv", ["pair_id", "prompt", "output_a", "output_b", "winner"], rows),
                     name="bad")
