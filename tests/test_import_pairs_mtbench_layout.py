"""MT-Bench's published human-judgment layout (question_id, model_a, model_b, winner, judge, conversation_a,
conversation_b, turn; conversations as lists of {role, content}; JSON Lines) reads as pairwise preferences: the
question and the two answers per turn from the conversations, question_id kept as the prompt id, judge as the
annotator; a file that looks pairwise but is imported as ratings says where it belongs. The fixture
(tests/fixtures/mtbench_human_judgments.jsonl) is synthetic, written for these tests in that exact layout."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evalcore.importers import DatasetValidationError, import_table, read_table, suggest_mapping
from evalcore.importers.pairs import guess_pair_mapping, import_pairs, looks_pairwise, mapping_from_roles

FIXTURE = Path(__file__).parent / "fixtures" / "mtbench_human_judgments.jsonl"
LAYOUT = ["question_id", "model_a", "model_b", "winner", "judge", "conversation_a", "conversation_b", "turn"]


def records() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_fixture_is_in_the_published_layout():
    recs = records()
    assert all(list(r) == LAYOUT for r in recs)
    assert all({tuple(sorted(m)) for m in r["conversation_a"]} == {("content", "role")} for r in recs)


def test_the_layout_is_guessed_as_pairwise():
    m = guess_pair_mapping(LAYOUT)
    assert (m.conversation_a, m.conversation_b, m.prompt_id, m.model_a, m.model_b, m.annotator, m.turn,
            m.winners) == ("conversation_a", "conversation_b", "question_id", "model_a", "model_b", "judge", "turn",
                           ["winner"])
    assert looks_pairwise(LAYOUT)


def test_conversations_become_question_and_answers_per_turn():
    res = import_pairs(FIXTURE, name="mt")
    ds = res.dataset
    s = res.summary()
    # 901 turn 1: gpt-4 v llama (2 votes, one on the swapped order) and gpt-4 v vicuna; 901 turn 2: the same two
    # pairs; 902 turn 1 and turn 2: gpt-4 v llama
    assert s["pairs"] == 6 and s["votes"] == 7
    assert s["annotators"] == ["author_0", "author_3", "expert_5"]
    assert s["models"] == ["gpt-4", "llama-13b", "vicuna-13b"]
    docs = ds.documents.set_index("doc_id")["source"]
    assert sorted(docs.index) == ["901-turn-1", "901-turn-2", "902-turn-1", "902-turn-2"]  # question_id kept
    assert docs["901-turn-1"] == "Write a two-line poem about a lighthouse."  # no stray "[turn 1]"
    # turn 2: the first question as context, then the second
    assert docs["901-turn-2"] == ("Turn 1 (earlier in the conversation, for context):\n"
                                  "Write a two-line poem about a lighthouse.\n\n"
                                  "Turn 2:\nNow make it rhyme, and keep it to two lines.")
    items = ds.items
    t1 = items[(items["doc_id"] == "902-turn-1") & (items["system_id"] == "llama-13b")]["output"].tolist()
    assert t1 == ["17 times 3 is 41."]
    t2 = items[(items["doc_id"] == "902-turn-2") & (items["system_id"] == "llama-13b")]["output"].tolist()
    assert t2 == ["Turn 1 (its earlier answer, for context):\n17 times 3 is 41.\n\n"
                  "Turn 2:\n41 divided by 3 is about 13.67."]


def test_winners_flip_onto_the_first_orientation_and_ties_keep_their_variant():
    p = import_pairs(FIXTURE, name="mt").dataset.preferences.set_index(["doc_id", "annotator"])
    # author_3 saw llama-13b as model_a and chose model_b (gpt-4): the pair's first orientation has gpt-4 as A
    assert p.loc[("901-turn-1", "author_3"), "preferred"].tolist() == ["a", "tie"]
    flat = p.reset_index()
    assert flat[(flat["doc_id"] == "901-turn-1") & (flat["annotator"] == "author_0")]["preferred"].tolist() == ["a"]
    row = flat[(flat["doc_id"] == "902-turn-2") & (flat["annotator"] == "expert_5")]
    assert row[["preferred", "tie_variant"]].values.tolist() == [["tie", "bothbad"]]


def test_tie_inconsistent_is_a_tie(tmp_path):
    recs = records()
    recs[3]["winner"] = "tie (inconsistent)"
    f = tmp_path / "mt.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    p = import_pairs(f, name="mt").dataset.preferences
    row = p[(p["doc_id"] == "901-turn-1") & (p["tie_variant"] == "inconsistent")]
    assert row["preferred"].tolist() == ["tie"]


def test_a_conversation_without_the_judged_turn_is_a_problem(tmp_path):
    recs = records()
    recs[1]["conversation_b"] = recs[1]["conversation_b"][:3]  # turn 2 judged, model B's reply to it missing
    recs[2]["conversation_a"] = "not a conversation"
    f = tmp_path / "mt.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    with pytest.raises(DatasetValidationError) as e:
        import_pairs(f, name="mt")
    text = str(e.value)
    assert "record 2, column 'conversation_b'" in text and "no assistant reply for turn 2" in text
    assert "record 3, column 'conversation_a'" in text and "list of {role, content}" in text


def test_two_conversations_asking_different_questions_is_a_problem(tmp_path):
    recs = records()
    recs[0]["conversation_b"][0]["content"] = "Another question."
    f = tmp_path / "mt.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    with pytest.raises(DatasetValidationError, match="the two conversations ask different questions"):
        import_pairs(f, name="mt")


def test_parquet_lists_of_dicts_read_too(tmp_path):
    frame = pd.DataFrame(records())
    f = tmp_path / "mt.parquet"
    frame.to_parquet(f)
    assert import_pairs(f, name="mt").summary()["pairs"] == 6


def test_roles_chosen_by_hand_override_the_guess(tmp_path):
    table = read_table(FIXTURE)
    roles = {c: r for c, r in zip(LAYOUT, ["prompt id", "model A", "model B", "winner", "annotator",
                                           "conversation A", "conversation B", "turn"])}
    m = mapping_from_roles(roles)
    assert m == guess_pair_mapping(LAYOUT)
    roles["judge"] = "ignored"  # the annotators unnamed: votes counted as vote-k
    res = import_pairs(FIXTURE, name="mt", mapping=mapping_from_roles(roles))
    assert res.summary()["annotators"] == ["vote-1", "vote-2"]
    with pytest.raises(ValueError, match="2 columns are given the role 'prompt id'"):
        mapping_from_roles({**roles, "turn": "prompt id"})
    assert table is not None


def test_importing_it_as_ratings_points_to_the_pairwise_route():
    table = read_table(FIXTURE)
    with pytest.raises(DatasetValidationError) as e:
        import_table(FIXTURE, suggest_mapping(table.columns, table))
    text = str(e.value)
    assert "pairwise preferences" in text and "import-pairs" in text
