"""A method's prompt fits the data's task: on chat and instruction-following pairs (PandaLM bundled; MT-Bench's
human-judgment layout imported from tests/fixtures/mtbench_human_judgments.jsonl, synthetic) ``pairwise`` and ``h2h``
name instructions and responses, not articles and summaries, and judge by MT-Bench's criterion (Zheng et al. 2023:
helpfulness, relevance, accuracy, depth, creativity, level of detail), not by the dataset's description of its votes;
``mtbench``'s question carries no stray "[turn 1]"; the Score page opens on a pairwise method on pairwise data.
SummEval's prompts stay the papers' (003's for H2H)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from evalcore.datasets import load_dataset
from evalcore.importers.pairs import import_pairs
from evalcore.judge import runner
from evalcore.judge.spec import default_criteria, default_spec
from evalcore.methods import paper_prompts as pp
from evalcore.methods import presets, render_prompt
from evalcore.views.score import default_method

FIXTURE = Path(__file__).parent / "fixtures" / "mtbench_human_judgments.jsonl"
FACTORS = ("helpfulness", "relevance", "accuracy", "depth", "creativity", "level of detail")


def _prompt(ds, method: str, dimension: str = "preference", doc: str | None = None) -> str:
    spec = default_spec(ds, method, [dimension])
    tasks = runner.pair_tasks(ds, dimension, runner.PairSelection())
    task = next(t for t in tasks if doc is None or t.doc_id == doc)
    return render_prompt(method, task, spec.criteria[dimension], spec.config)


@pytest.fixture(scope="module")
def mtbench_ds():
    return import_pairs(FIXTURE, name="mt").dataset


@pytest.mark.parametrize("method", ["pairwise", "h2h"])
@pytest.mark.parametrize("which", ["pandalm", "mtbench file"])
def test_pairwise_prompts_on_chat_data_name_responses_and_a_real_criterion(method, which, request):
    ds = request.getfixturevalue("mtbench_ds") if which == "mtbench file" else load_dataset("pandalm")
    text = _prompt(ds, method)
    low = text.lower()
    assert "summar" not in low and "article" not in low, text
    assert "Response" in text and "Instruction" in text
    assert all(f in low for f in FACTORS), text
    assert "see the preferences" not in low and "preferences table" not in low, text


def test_the_chat_criterion_is_mtbench_s_for_every_method_and_only_for_an_overall_preference():
    for method in ("pairwise", "h2h", "mtbench", "geval"):
        c = default_criteria(load_dataset("pandalm"), "preference", method)
        assert c.definition == presets.CHAT_CRITERIA.definition and (c.scale_min, c.scale_max) == (1, 10)
    # a dimension that is no overall preference keeps the dataset's own description; summaries are no chat
    assert presets.chat_criteria("x", "pairwise preferences", "harmlessness", voted=True) is None
    assert presets.chat_criteria("zhang_pairs", "summary pairs", "overall", voted=True) is None
    assert presets.chat_criteria("x", "pairwise preferences", "preference", voted=False) is None


def test_mtbench_question_has_no_stray_turn_marker(tmp_path):
    rows = [["question_id", "model_a", "model_b", "winner", "judge", "turn", "question", "answer_a", "answer_b"],
            [81, "gpt-4", "llama-13b", "model_a", "author_0", 1, "Write a haiku about rain.", "Soft rain", "Wet."]]
    f = tmp_path / "mt.csv"
    with f.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    ds = import_pairs(f, name="mt").dataset
    text = _prompt(ds, "mtbench")
    assert "[User Question]\nWrite a haiku about rain.\n\n[The Start of Assistant A's Answer]" in text
    assert "[turn" not in text


def test_mtbench_question_of_a_second_turn_shows_the_first_as_context(mtbench_ds):
    """From MT-Bench's conversations: the first question as context, each answer after its own first."""
    text2 = _prompt(mtbench_ds, "mtbench", doc="902-turn-2")
    assert "Turn 1 (earlier in the conversation, for context):\nWhat is 17 times 3?" in text2
    assert "Turn 2:\nDivide your answer by 3 and explain the step." in text2
    assert "Turn 1 (its earlier answer, for context):\n17 times 3 is 41." in text2


def test_summeval_prompts_are_unchanged():
    ds = load_dataset("summeval")
    config = presets.config_for("h2h", "summeval", task=ds.task)
    assert (config.source_label, config.output_label) == ("Article", "Summary") and config.prompts == pp.SHEN_H2H
    assert default_criteria(ds, "coherence", "pairwise") == presets.SHEN_CRITERIA["summeval"]["coherence"]
    assert presets.config_for("pairwise", "zhang_pairs").output_label == "Summary"


def test_the_default_method_is_pairwise_on_pairwise_data():
    assert default_method(load_dataset("summeval")) == "geval"
    assert default_method(load_dataset("pandalm")) == "mtbench"
    assert default_method(load_dataset("llmbar_natural")) == "mtbench"
    assert default_method(load_dataset("zhang_pairs")) == "h2h"  # summaries voted on pairs: Shen et al.'s H2H


def test_the_default_method_on_an_imported_mtbench_file(mtbench_ds):
    assert default_method(mtbench_ds) == "mtbench"


def test_fixture_answers_are_ours():
    """The fixture is synthetic: every record's conversations are in the published layout's shape."""
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        assert [m["role"] for m in rec["conversation_a"]] == ["user", "assistant", "user", "assistant"]
