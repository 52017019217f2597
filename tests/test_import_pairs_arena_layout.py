"""LMSYS Chatbot Arena's published layout reads as it is meant: the votes are three one-hot columns (A wins, B wins,
tie), the prompt and response cells JSON lists of turns. The fixture (tests/fixtures/importers/arena_lmsys_train.csv,
synthetic, 80 rows) follows the columns of the Kaggle competition "LMSYS - Chatbot Arena Human Preference
Predictions" (kaggle.com/competitions/lmsys-chatbot-arena, train.csv: id, model_a, model_b, prompt, response_a,
response_b, winner_model_a, winner_model_b, winner_tie; prompts and responses JSON lists, one string per turn, null
for a missing reply). Its votes are 39 A, 35 B and 6 ties, counted here from the file with the csv module.

Before, given ``winner_model_a`` as the winner column, every 0 was read as a tie: 39 A / 41 tie, no B, no word."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from evalcore.importers import DatasetValidationError
from evalcore.importers.pairs import guess_pair_mapping, import_pairs, looks_pairwise, mapping_from_roles, pair_roles

FIXTURE = Path(__file__).parent / "fixtures" / "importers" / "arena_lmsys_train.csv"
LAYOUT = ["id", "model_a", "model_b", "prompt", "response_a", "response_b", "winner_model_a", "winner_model_b",
          "winner_tie"]


def rows() -> list[dict[str, str]]:
    with FIXTURE.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def file_outcomes() -> Counter:
    """The votes as the file gives them, read independently of the importer."""
    names = {"winner_model_a": "a", "winner_model_b": "b", "winner_tie": "tie"}
    return Counter(next(v for k, v in names.items() if r[k] == "1") for r in rows())


def test_fixture_is_in_the_published_layout():
    rs = rows()
    assert list(rs[0]) == LAYOUT and len(rs) == 80
    assert all(sum(int(r[k]) for k in LAYOUT[-3:]) == 1 for r in rs)  # one-hot: one 1 per row
    assert all(isinstance(json.loads(r[k]), list) for r in rs for k in ("prompt", "response_a", "response_b"))
    assert file_outcomes() == {"a": 39, "b": 35, "tie": 6}


def test_the_layout_is_recognised_by_its_column_names():
    m = guess_pair_mapping(LAYOUT)
    assert m.onehot == ("winner_model_a", "winner_model_b", "winner_tie") and m.winners == []
    assert (m.prompt, m.output_a, m.output_b, m.model_a, m.model_b) == ("prompt", "response_a", "response_b",
                                                                         "model_a", "model_b")
    assert looks_pairwise(LAYOUT)
    roles = pair_roles(m, LAYOUT)  # what the Data page's role menu is prefilled with
    assert (roles["winner_model_a"], roles["winner_model_b"], roles["winner_tie"]) == (
        "A wins (0/1)", "B wins (0/1)", "tie (0/1)")
    assert mapping_from_roles(roles).onehot == m.onehot


def test_one_hot_votes_come_out_as_the_file_gives_them():
    res = import_pairs(FIXTURE, name="arena")
    p = res.dataset.preferences
    assert len(p) == 80 and p["pair_id"].nunique() == 80
    assert Counter(p["preferred"]) == file_outcomes() == {"a": 39, "b": 35, "tie": 6}
    assert res.summary()["outcomes"] == {"a": 39, "b": 35, "tie": 6}
    assert res.outcome_text() == "39 A, 35 B, 6 tie"
    # vote by vote: the row's one-hot columns name the output the stored vote prefers (no pair repeats here, so
    # nothing is flipped onto another orientation)
    items = res.dataset.items.set_index("item_id")
    for r, (_, v) in zip(rows(), p.iterrows()):
        want = "a" if r["winner_model_a"] == "1" else "b" if r["winner_model_b"] == "1" else "tie"
        assert v["preferred"] == want
        assert items.loc[v["item_a"], "system_id"] == r["model_a"]
    assert any("one-hot" in w for w in res.warnings)


def test_json_list_cells_are_decoded_to_readable_text():
    res = import_pairs(FIXTURE, name="arena")
    ds = res.dataset
    texts = list(ds.documents["source"]) + list(ds.items["output"])
    assert not any(t.startswith("[") or '\\"' in t or "\\n" in t for t in texts)  # no brackets, no escapes
    first = rows()[0]
    assert json.loads(first["prompt"])[0] in set(ds.documents["source"])  # one turn: the text alone
    assert json.loads(first["response_a"])[0] in set(ds.items["output"])  # its \n escape a real newline
    assert "\n" in json.loads(first["response_a"])[0]
    two = rows()[3]  # a two-turn conversation
    q = json.loads(two["prompt"])
    assert f"Turn 1:\n{q[0]}\n\nTurn 2:\n{q[1]}" in set(ds.documents["source"])
    missing = rows()[13]  # response_b's second turn is null
    assert json.loads(missing["response_b"])[1] is None
    b = json.loads(missing["response_b"])[0]
    assert f"Turn 1:\n{b}\n\nTurn 2:\n(no text)" in set(ds.items["output"])
    assert any("JSON lists of turns" in w for w in res.warnings)


def test_a_zero_one_winner_column_is_refused_naming_the_one_hot_layout():
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(FIXTURE, name="arena", winners=["winner_model_a"])
    msg = str(e.value)
    assert "column 'winner_model_a'" in msg and "holds only 0 and 1" in msg and "one-hot" in msg
    assert "--one-hot winner_model_a,winner_model_b,winner_tie" in msg


def test_on_the_page_the_refusal_speaks_of_the_role_menu_not_the_command_line():
    roles = {c: "ignored" for c in LAYOUT}
    roles.update(prompt="prompt", response_a="output A", response_b="output B", winner_model_a="winner")
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(FIXTURE, name="arena", mapping=mapping_from_roles(roles), door="page")
    msg = str(e.value)
    assert "one-hot" in msg and "'A wins (0/1)', 'B wins (0/1)' and 'tie (0/1)'" in msg and "role menu" in msg
    assert "--" not in msg
    roles["winner_model_a"] = "ignored"  # no vote at all: the page's message names its roles
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(FIXTURE, name="arena", mapping=mapping_from_roles(roles), door="page")
    assert "role 'winner'" in str(e.value) and "--" not in str(e.value)


def test_a_one_hot_row_without_exactly_one_1_is_a_problem_naming_its_line(tmp_path):
    text = FIXTURE.read_text(encoding="utf-8").splitlines()
    text[2] = text[2][: -len("0,1,0")] + "1,1,0"  # line 3: A and B both marked
    text[4] = text[4][: -len("1,0,0")] + "1,0,x"  # line 5: not a 0/1 cell
    bad = tmp_path / "arena.csv"
    bad.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(bad, name="arena")
    msg = str(e.value)
    assert "line 3, column 'winner_model_a': a one-hot vote has exactly one 1" in msg and "this row has 2" in msg
    assert "line 5, column 'winner_tie': 'x' is not 0 or 1" in msg


def test_cli_import_pairs_reads_the_layout_and_says_the_counts(tmp_path, monkeypatch, capsys):
    from evalcore.cli import main

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "s.db"))
    assert main(["import-pairs", str(FIXTURE), "--name", "arena"]) == 0
    out = capsys.readouterr().out
    assert "80 pairs, 80 votes" in out and "votes 39 A, 35 B, 6 tie" in out
    assert main(["import-pairs", str(FIXTURE), "--name", "arena", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcomes"] == {"a": 39, "b": 35, "tie": 6}
    assert main(["import-pairs", str(FIXTURE), "--name", "arena", "--winner", "winner_model_a"]) == 2
    err = capsys.readouterr().err
    assert "one-hot" in err and "--one-hot" in err
    cols = "winner_model_a,winner_model_b,winner_tie"
    assert main(["import-pairs", str(FIXTURE), "--name", "arena", "--one-hot", cols]) == 0
    assert "votes 39 A, 35 B, 6 tie" in capsys.readouterr().out


def test_a_cell_that_breaks_a_column_of_json_lists_is_a_problem_not_kept_as_raw_text(tmp_path):
    text = FIXTURE.read_text(encoding="utf-8").splitlines()
    text[6] = text[6].replace('"[""', '"[oops ""', 1)  # line 7: its prompt opens with [ but is no JSON list
    bad = tmp_path / "arena.csv"
    bad.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(bad, name="arena")
    assert "line 7, column 'prompt': not a JSON list of turns" in str(e.value)
