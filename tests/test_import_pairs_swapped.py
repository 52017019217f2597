"""Records that repeat a pair with its outputs swapped (LLMBar's MT-Bench set: 5 of its 200 instances) are kept as
pairs of their own, as the source lists them, instead of refusing the file; a bad pairwise file through the CLI
names the file, row and column, and writes nothing."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.importers import DatasetValidationError
from evalcore.importers.pairs import import_pairs

ROOT = Path(__file__).resolve().parents[1]
HEADER = ["instruction", "output_1", "output_2", "label", "annotator"]
# LLMBar's shape: an instruction, two outputs, the gold label (1 or 2: which output follows the instruction)
RECORDS = [
    ["Name a prime.", "7", "8", "1", "gold"],
    ["Say hi in French.", "Hola", "Bonjour", "2", "gold"],
    ["Add 2 and 2.", "4", "5", "1", "gold"],
    ["Name a prime.", "8", "7", "2", "gold"],  # the first record again, outputs swapped: the gold label follows "7"
    ["Spell cat.", "c-a-t", "k-a-t", "1", "gold"],
]


def write(path: Path, rows, header=HEADER) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_a_swapped_repeat_is_a_pair_of_its_own_with_its_vote_as_written(tmp_path):
    res = import_pairs(write(tmp_path / "llmbar.csv", RECORDS), name="llmbar")
    s = res.summary()
    assert s["pairs"] == 5 and s["votes"] == 5 and s["annotators"] == ["gold"]  # as the source counts them
    assert any("1 records repeat a pair with its outputs swapped" in w and "kept as a pair of its own" in w
               for w in res.warnings)
    p = res.dataset.preferences.reset_index(drop=True)
    first, again = p.iloc[0], p.iloc[3]
    assert first["pair_id"] != again["pair_id"]
    # the same two items, each pair in its own record's order; both votes prefer the item whose output is "7"
    assert (first["item_a"], first["item_b"]) == (again["item_b"], again["item_a"])
    items = res.dataset.items.set_index("item_id")["output"]
    assert items[first["item_a"]] == "7" and first["preferred"] == "a"
    assert items[again["item_b"]] == "7" and again["preferred"] == "b"
    assert len(res.dataset.items) == 8  # "7" and "8" are one item each, whichever record showed them


def test_a_vote_on_the_other_order_by_another_annotator_still_joins_the_pair(tmp_path):
    rows = [["Name a prime.", "7", "8", "1", "alice"], ["Name a prime.", "8", "7", "1", "bob"]]
    s = import_pairs(write(tmp_path / "two.csv", rows), name="two").summary()
    assert s["pairs"] == 1 and s["votes"] == 2


def test_the_same_annotator_twice_in_the_same_order_is_still_a_problem(tmp_path):
    rows = RECORDS + [["Add 2 and 2.", "4", "5", "2", "gold"]]
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(write(tmp_path / "dup.csv", rows), name="dup")
    (problem,) = e.value.problems
    assert (problem.row, problem.column) == (7, "label")
    assert "annotator 'gold' already voted on this pair (line 4, the same two outputs in the same order)" in str(e.value)


def test_a_bad_pairwise_file_through_the_cli_names_file_row_and_column_and_writes_nothing(tmp_path):
    rows = [r[:] for r in RECORDS]
    rows[4][3] = "3"
    f = write(tmp_path / "bad.csv", rows)
    db = tmp_path / "store.db"
    p = subprocess.run([sys.executable, "-m", "evalcore", "import-pairs", str(f), "--name", "bad", "--json"],
                       cwd=ROOT, capture_output=True, text=True, env={**os.environ, "EVALCORE_DB": str(db)},
                       timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert "bad.csv, line 6, column 'label': winner '3' is not a known value" in p.stderr
    assert "nothing was imported" in p.stderr
    assert not db.exists()  # nothing half-written: the store was not even created
    good = subprocess.run([sys.executable, "-m", "evalcore", "import-pairs", str(write(tmp_path / "ok.csv", RECORDS)),
                           "--name", "ok", "--json"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "EVALCORE_DB": str(db)}, timeout=120)
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["pairs"] == 5
