"""Judging exactly the annotated pairs: an MT-Bench-format upload is judged through the loopback by the MT-Bench
pairwise prompt in both orders by default, and only the pairs the humans voted on are sent (requests counted);
``orders`` narrows the orders, ``annotated=False`` asks for every same-prompt pair; the verdicts then meet the votes
in the pairwise statistics."""

from __future__ import annotations

import pytest

from evalcore.importers.pairs import import_pairs
from evalcore.judge import runner
from evalcore.judge.client import Endpoint
from evalcore.store import Store
from evalcore.types import Criteria, PairTask
from evalcore.meta.preference import pairwise_summary
from evalcore.methods import render_prompt
from evalcore.methods.mtbench import parse_mtbench
from evalcore.testing.loopback import serve
from tests import judge_calls

HEADER = "question_id,model_a,model_b,winner,judge,turn,question,answer_a,answer_b\n"
ROWS = [
    '81,gpt-4,llama-13b,model_a,author_0,1,Write a haiku about rain.,Soft rain on the roof,Rain is wet.',
    '81,llama-13b,gpt-4,model_b,author_1,1,Write a haiku about rain.,Rain is wet.,Soft rain on the roof',
    '81,gpt-4,vicuna-13b,tie (bothbad),author_0,1,Write a haiku about rain.,Soft rain on the roof,Drops fall',
    '82,vicuna-13b,llama-13b,model_a,author_1,1,Name three primes.,"2, 3, 5","1, 2, 3"',
]
CRIT = {"preference": Criteria("preference", "Compare two answers to a user question.", "Which answer is better.",
                               0, 1)}


@pytest.fixture
def mt_dataset():
    return import_pairs(((HEADER + "\n".join(ROWS) + "\n").encode(), "mt.csv"), name="mt").dataset


def _chat_calls(srv) -> int:
    return srv.by_path.get("/v1/chat/completions", 0)


def _score(ds, store, srv, **kw):
    return judge_calls.score_dataset(ds, method="mtbench", criteria_by_dim=CRIT, endpoint=Endpoint(srv.base_url, "loop",
                                provider="local"), store=store, concurrency=2, **kw)


def test_only_annotated_pairs_in_both_orders_are_sent(mt_dataset, tmp_path):
    # 3 annotated pairs (haiku/rain, haiku/drops, primes); the haiku prompt has a 4th, unannotated pair rain/drops
    assert len(runner.pair_tasks(mt_dataset, "preference", runner.PairSelection(annotated=False))) == 8
    with serve() as srv:
        run = _score(mt_dataset, Store(tmp_path / "a.db"), srv)
        probes = _chat_calls(srv) - 6
        assert probes >= 0 and len(run.comparisons) == 6
        assert set(run.comparisons["order"]) == {"ab", "ba"}
        with serve() as srv2:
            one = _score(mt_dataset, Store(tmp_path / "b.db"), srv2, pairs={"orders": ["ab"]})
            assert _chat_calls(srv2) == 3 + probes and set(one.comparisons["order"]) == {"ab"}
        with serve() as srv3:
            every = _score(mt_dataset, Store(tmp_path / "c.db"), srv3, pairs={"annotated": False})
            assert _chat_calls(srv3) == 8 + probes and len(every.comparisons) == 8
    assert run.comparisons["status"].eq("ok").all()
    s = pairwise_summary(mt_dataset.preferences, run.comparisons, mt_dataset.items, n_resamples=20)
    assert s["counts"]["judged_pairs"] == 3 and s["counts"]["with_verdict"] == 3
    assert s["agreement"]["with_ties"]["n"] == 4 and "positional_agreement" in s
    s_every = pairwise_summary(mt_dataset.preferences, every.comparisons, mt_dataset.items, n_resamples=20)
    assert s_every["counts"]["not_annotated"] == 1  # the extra pair is judged but never meets a vote


def test_mtbench_prompt_with_and_without_reference_and_its_verdict():
    task = PairTask(pair_id="p", doc_id="d", dimension="preference", item_first="x", item_second="y",
                    output_first="four", output_second="five", source="What is 2+2?", order="ab")
    plain = render_prompt("mtbench", task, CRIT["preference"])
    assert "[User Question]\nWhat is 2+2?" in plain and "[The Start of Assistant A's Answer]\nfour" in plain
    assert "Reference Answer" not in plain and '"[[C]]" for a tie' in plain
    ref = PairTask(**{**task.__dict__, "references": ("4",)})
    guided = render_prompt("mtbench", ref, CRIT["preference"])
    assert "[The Start of Reference Answer]\n4\n[The End of Reference Answer]" in guided
    assert "comparing both assistants' answers with the reference answer" in guided
    never = render_prompt("mtbench", ref, CRIT["preference"], {"reference": "never"})
    assert "Reference Answer" not in never
    assert parse_mtbench("A is fine but [[B]] ... final: [[A]]") == "first"
    assert parse_mtbench("[[C]]") == "tie" and parse_mtbench("I prefer B") is None


def test_score_cli_orders_flag(mt_dataset, tmp_path, monkeypatch):
    from evalcore.judge import cli as judge_cli

    assert judge_cli._pairs_arg(judge_cli_args(orders="ab")) == {"orders": ["ab"]}
    assert judge_cli._pairs_arg(judge_cli_args(orders="ab,ba", all_pairs=True)) == {"orders": ["ab", "ba"],
                                                                                   "annotated": False}
    with pytest.raises(ValueError, match="orders must be 'ab' and/or 'ba'"):
        runner.PairSelection.from_arg({"orders": ["ab", "xy"]})


def judge_cli_args(**kw):
    import argparse

    base = {"orders": None, "all_pairs": False, "pair_sample": None, "pairs": None, "pair_seed": 0}
    return argparse.Namespace(**{**base, **kw})
