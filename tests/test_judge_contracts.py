"""The judges of 2026: each provider's documented contract (evalcore.testing.loopback_profiles), learned from its
refusals (evalcore.judge.contract), and the judge's reasoning kept apart from the answer before any parser runs.

The matrix test runs every chat method on every profile through the engine and checks each score against an
independent reference: the same method with the variant the run recorded, on the plain loopback, whose answers are
the profiles' answers without reasoning. The profiles' reasoning holds a decoy ("Score: 1", "[[C]]", "Answer: (E)"),
so a score read from the reasoning would differ from the reference."""

from __future__ import annotations

import dataclasses
import math

import pytest

from evalcore import parsers
from evalcore.datasets import load_dataset
from evalcore.judge import runner
from evalcore.judge.client import Endpoint, EndpointUnusable
from evalcore.judge.contract import (CAPABILITY, DEFAULT_ONLY, LEAVE_OUT, NO_SUBSTITUTE, RENAME, Contract,
                                     read_refusal)
from evalcore.judge.spec import EngineOptions, default_spec
from evalcore.methods import METHODS
from evalcore.methods.base import separate_reasoning
from evalcore.methods.geval import METHOD as GEVAL, GEvalConfig
from evalcore.spec import ScoringSpec
from evalcore.store import Store, request_key
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_profiles import DECOY_REASONING, PROFILES, Profile
from evalcore.types import Capabilities, ChatRequest, Choice, CompletionRequest, Criteria, ItemTask, Response, \
    TokenLogprob

REASONING_PROFILES = ("openai-reasoning", "openai-gpt-5.1", "vllm-think-in-content", "vllm-reasoning-parser", "ollama",
                      "llamacpp-deepseek", "llamacpp-none")
FULL = Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=True, echo_logprobs=True)


@pytest.fixture(scope="module")
def summeval():
    return load_dataset("summeval")


def _ep(srv):
    return Endpoint(srv.base_url, "judge-2026", provider="local")


# ------------------------------------------------------------------------------------------------ the reasoning
def test_split_reasoning_takes_the_answer_after_each_documented_block():
    for tag in ("think", "thinking", "reasoning"):
        s = parsers.split_reasoning(f"<{tag}>Draft: Score: 1.</{tag}>\n\nScore: 4")
        assert (s.answer, s.reasoning, s.unclosed) == ("Score: 4", "Draft: Score: 1.", False)
    # DeepSeek-R1 / Qwen3 templates put <think> in the prompt: the reply opens inside the reasoning
    s = parsers.split_reasoning("Draft: Score: 1.</think> Score: 5")
    assert (s.answer, s.reasoning) == ("Score: 5", "Draft: Score: 1.")
    # a tag quoted inside an answer is the answer's
    assert parsers.split_reasoning("Score: 3 (the text says <think> once)").answer == \
        "Score: 3 (the text says <think> once)"
    s = parsers.split_reasoning("<think>Score: 2 so far, but")
    assert s.unclosed and s.answer == "" and "never closed" in s.failure()


def test_parse_reply_never_reads_the_reasoning():
    assert parsers.parse_reply("rts", "<think>Score: 1</think>The summary is fine. Score: 4").value == 4.0
    p = parsers.parse_reply("rts", "<think>Score: 1, maybe")
    assert not p.ok and "reasoning" in p.reason


def _tok(t, *alts):
    return TokenLogprob(t, math.log(0.9), tuple(alts) or ((t, math.log(0.9)),))


def test_geval_reads_the_distribution_at_the_answer_not_in_the_reasoning():
    # the reasoning's "1" comes first among the tokens; the answer's "4" carries p(4)=0.6, p(5)=0.4
    tokens = (_tok("<think>"), _tok("1", ("1", math.log(0.9)), ("2", math.log(0.1))), _tok("</think>"),
              TokenLogprob("4", math.log(0.6), (("4", math.log(0.6)), ("5", math.log(0.4)))))
    text = "".join(t.token for t in tokens)
    sep = separate_reasoning([Response([Choice(text, tokens, "stop")])])
    crit = Criteria("coherence", "Rate it.", "Coherence", 1, 5)
    task = ItemTask("i", "d", "s", "coherence", "src", "out")
    out = GEVAL.score(task, crit, GEvalConfig(), sep.responses)
    assert out.value == pytest.approx(0.6 * 4 + 0.4 * 5)
    assert sep.reasoning == ["1"] and sep.failure == ""


def test_reasoning_field_is_kept_and_the_budget_spent_on_it_is_its_own_failure():
    sep = separate_reasoning([Response([Choice("", None, "length", reasoning="thinking...")],
                                       usage={"reasoning_tokens": 64})])
    assert sep.failure.startswith("the completion budget ran out while the judge was reasoning")
    assert "64 reasoning tokens" in sep.failure and sep.record() == {"reasoning": "thinking..."}
    # a completion with echo and max_tokens=0 (GPTScore) is not a reasoning reply
    echo = Response([Choice("", (TokenLogprob("a", None),), "length", prompt_token_count=1)])
    assert separate_reasoning([echo], chat=[False]).failure == ""


# ------------------------------------------------------------------------------------------------ the refusals
def test_refusals_are_read_from_the_documented_fields_and_messages():
    r = read_refusal({"status": 400, "param": "max_tokens", "code": "unsupported_parameter",
                      "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                 "'max_completion_tokens' instead."})
    assert (r.param, r.action, r.value) == ("max_tokens", RENAME, "max_completion_tokens")
    r = read_refusal({"status": 400, "param": "temperature", "code": "unsupported_value",
                      "message": "Unsupported value: 'temperature' does not support 0 with this model. Only the "
                                 "default (1) value is supported."})
    assert (r.param, r.action, r.value) == ("temperature", DEFAULT_ONLY, 1.0)
    assert read_refusal({"status": 400, "param": "", "code": "", "message": "n: must be exactly 1"}).action == \
        CAPABILITY
    assert read_refusal({"status": 400, "param": "reasoning_effort", "code": "unsupported_parameter",
                         "message": "Unsupported parameter: 'reasoning_effort'."}).action == NO_SUBSTITUTE
    # a seed only made replies reproducible: left out (the request keeps it in its cache key), no pause
    assert read_refusal({"status": 400, "param": "seed", "code": "unsupported_parameter",
                         "message": "Unsupported parameter: 'seed'."}).action == LEAVE_OUT
    # a 400 that names no refused parameter keeps its usual handling
    assert read_refusal({"status": 400, "param": "messages", "code": "context_length_exceeded",
                         "message": "This model's maximum context length is 8192 tokens."}) is None


def test_requests_of_2023_endpoints_keep_their_cache_keys():
    ident = {"provider": "openai", "base_url": "https://api.openai.com/v1", "model": "gpt-4o"}
    lp = ChatRequest(messages=(("user", "Rate: 1-5"),), max_tokens=5, logprobs=True, top_logprobs=20)
    sampled = ChatRequest(messages=(("user", "Rate: 1-5"),), max_tokens=5, n=20, temperature=1.0)
    # the keys these requests had before contracts and reasoning options existed
    assert request_key(ident, Contract().adapt(lp).params()) == \
        "0b021c6d1a4df1d729abcc5eb3505215c1e59cb8121edce3a21c97d12884828e"
    assert request_key(ident, sampled.params()) == "a5fdea842a2d944b129da61ebe0e56bd45d7f095679ff0babce36f7d047462f2"
    assert request_key(ident, CompletionRequest(prompt="abc").params()) == \
        "af05cb7ad074b2cc58c678fccee448b33f1d542e30517de5293e250df0f1fbac"
    # a variant is its own request: the reasoning effort and an omitted temperature change the key
    assert request_key(ident, dataclasses.replace(lp, reasoning_effort="low").params()) != \
        request_key(ident, lp.params())


def test_spec_records_the_reasoning_options(summeval):
    spec = default_spec(summeval, "rts", ["coherence"], limit=2, reasoning_effort="low", max_completion_tokens=300)
    back = ScoringSpec.from_dict(spec.to_dict(), summeval)
    assert (back.reasoning_effort, back.max_completion_tokens) == ("low", 300)
    assert "reasoning_effort" not in default_spec(summeval, "rts", ["coherence"]).to_dict()
    with pytest.raises(ValueError, match="max_completion_tokens"):
        default_spec(summeval, "rts", ["coherence"], max_completion_tokens=0)


# ------------------------------------------------------------------------------------------------ the matrix
MATRIX_METHODS = ("geval", "rts", "mcq", "pairwise", "h2h")


def _frame(run):
    return run.comparisons if METHODS[run.method].pairwise else run.judgments


def _reference(summeval, spec, run, tmp_path):
    """The same method, with the config and sampling the run actually used, on the plain loopback."""
    ref_spec = dataclasses.replace(spec, config=run.config["method_config"], max_completion_tokens=None,
                                   reasoning_effort=None, run_id=None)
    with serve() as srv:
        return runner.score_dataset(ref_spec, EngineOptions(endpoint=_ep(srv), capabilities=FULL, concurrency=4),
                                    store=Store(tmp_path / "ref.db"))


@pytest.mark.parametrize("method", MATRIX_METHODS)
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_method_on_every_profile_scores_what_the_served_answers_imply(profile, method, summeval, tmp_path):
    budget = 512 if profile in REASONING_PROFILES else None
    spec = default_spec(summeval, method, ["coherence"], limit=2 if METHODS[method].pairwise else 3,
                        max_completion_tokens=budget)
    store = Store(tmp_path / "matrix.db")
    with serve(profile=PROFILES[profile]) as srv:
        run = runner.score_dataset(spec, EngineOptions(endpoint=_ep(srv), concurrency=4), store=store)
        again = runner.score_dataset(dataclasses.replace(spec, run_id=None), EngineOptions(endpoint=_ep(srv)),
                                     store=store)
    frame = _frame(run)
    assert frame["status"].eq("ok").all(), frame["reason"].tolist()
    stats = run.config["stats"]
    assert stats["refused_requests"] <= 3  # max_tokens, temperature, log-probs or n: one refusal each
    assert again.config["stats"]["requests"] == 0 and again.config["stats"]["refused_requests"] == 0
    ref = _frame(_reference(summeval, spec, run, tmp_path))
    key = ["pair_id", "order"] if METHODS[method].pairwise else ["item_id"]
    got = frame.set_index(key)["value"].astype(float).sort_index()
    want = ref.set_index(key)["value"].astype(float).sort_index()
    assert got.index.equals(want.index)
    assert (got - want).abs().max() < 1e-12, (got.tolist(), want.tolist())
    if PROFILES[profile].reasoning in ("content", "reasoning", "reasoning_content"):
        assert all(DECOY_REASONING in str(d.get("reasoning")) for d in frame["detail"])


def test_geval_on_a_reasoning_model_names_its_variant_and_learns_once(summeval, tmp_path):
    spec = default_spec(summeval, "geval", ["coherence"], limit=3, max_completion_tokens=512)
    with serve(profile=PROFILES["openai-reasoning"]) as srv:
        run = runner.score_dataset(spec, EngineOptions(endpoint=_ep(srv)), store=Store(tmp_path / "g.db"))
    assert run.config["estimator"] == "sample-mean(n=20)"
    assert "20-sample fallback" in run.config["variant"] and "max_completion_tokens" in run.config["variant"]
    assert set(run.config["contract"]) == {"max_tokens", "temperature", "logprobs"}
    assert run.config["stats"]["refused_requests"] == 3
    assert run.config["stats"]["reasoning_tokens"] > 0


def test_a_small_budget_fails_as_reasoning_never_as_a_parse(summeval, tmp_path):
    """A budget the run chose itself (--max-completion-tokens 5) and the reasoning spends: a failure saying so."""
    spec = dataclasses.replace(default_spec(summeval, "geval", ["coherence"], limit=2), max_completion_tokens=5)
    with serve(profile=PROFILES["vllm-think-in-content"]) as srv:
        run = runner.score_dataset(spec, EngineOptions(endpoint=_ep(srv)), store=Store(tmp_path / "b.db"))
    assert run.judgments["status"].eq("failed").all()
    assert run.judgments["reason"].str.contains("ended inside the judge's reasoning").all()


@pytest.mark.parametrize("profile", ["vllm-think-in-content", "llamacpp-deepseek", "openai-reasoning"])
def test_the_default_budget_makes_room_for_reasoning_after_one_reply(summeval, tmp_path, profile):
    """With no budget chosen, a method's own (G-Eval's 5 tokens) ends inside the reasoning once; the engine learns
    that the judge reasons (stored with the contract), gives every request contract.REASONING_BUDGET and says so in
    the variant: every item is scored, at the cost of the one request that taught it."""
    from evalcore.judge.contract import REASONING_BUDGET

    store = Store(tmp_path / "room.db")
    spec = default_spec(summeval, "geval", ["coherence"], limit=4)
    with serve(profile=PROFILES[profile]) as srv:
        run = runner.score_dataset(spec, EngineOptions(endpoint=_ep(srv), concurrency=4), store=store)
    assert run.judgments["status"].eq("ok").all()
    assert f"raised to {REASONING_BUDGET:,} tokens" in run.config["variant"]
    rules = run.config["contract"]
    assert rules["reasoning"]["value"] == REASONING_BUDGET


@dataclasses.dataclass(frozen=True)
class _EffortRefusing(Profile):
    """A contract that refuses a parameter with no documented substitute."""

    def refusal(self, req):
        if "reasoning_effort" in req:
            return {"error": {"message": "Unsupported parameter: 'reasoning_effort' is not supported with this "
                                         "model.", "type": "invalid_request_error", "param": "reasoning_effort",
                              "code": "unsupported_parameter"}}
        return super().refusal(req)


def test_a_refusal_without_substitute_pauses_and_the_resume_pays_nothing_twice(summeval, tmp_path):
    store = Store(tmp_path / "p.db")
    spec = default_spec(summeval, "geval", ["coherence"], limit=2, reasoning_effort="low")
    refusing = _EffortRefusing("effortless", doc="test", ignore_n=True, ignore_logprobs=True)
    with serve(profile=refusing) as srv:
        with pytest.raises(EndpointUnusable, match="'reasoning_effort'.*judge-2026.*resume") as info:
            runner.score_dataset(spec, EngineOptions(endpoint=_ep(srv), concurrency=1), store=store)
        run_id = str(info.value).split()[1]
        assert store.run_row(run_id)["status"] == "stopped"
        refused = srv.requests_seen
        srv.profile = dataclasses.replace(PROFILES["openai-2023"], ignore_n=True, ignore_logprobs=True)
        run = runner.score_dataset(dataclasses.replace(spec, run_id=run_id), EngineOptions(endpoint=_ep(srv)),
                                   store=store)
        first = srv.requests_seen - refused
        assert run.judgments["status"].eq("ok").all()
        # 2 items x 20 seeded samples, each asked once: nothing answered before the pause is asked again
        assert first <= 40


# ------------------------------------------------------------------------------------------------ presets and check
def test_the_cli_lists_every_preset_and_each_new_key_goes_only_to_its_documented_url(monkeypatch):
    from evalcore.judge import cli as judge_cli, trust
    from evalcore.judge.client import PRESETS, JudgeClient

    assert tuple(sorted(PRESETS)) == judge_cli.providers()
    for name in ("anthropic", "gemini", "openrouter", "litellm"):
        ep = PRESETS[name]
        monkeypatch.setenv(ep.api_key_env, "sk-test-0123456789abcdef")
        assert trust.DOCUMENTED_DEFAULTS[ep.api_key_env] == ep.base_url
        JudgeClient(dataclasses.replace(ep, model="m"))  # its own documented URL: the key may go there
        with pytest.raises(trust.UntrustedEndpoint):
            JudgeClient(dataclasses.replace(ep, model="m", base_url="https://judge.example.net/v1"))


def test_check_judge_says_each_methods_variant_and_survives_the_refusals(tmp_path, capsys):
    from evalcore.judge import cli as judge_cli

    import argparse

    parser = argparse.ArgumentParser()
    judge_cli.register(parser.add_subparsers(dest="command", required=True))
    with serve(profile=PROFILES["openai-reasoning"]) as srv:
        argv = ["check-judge", "--base-url", srv.base_url, "--model", "gpt-5-mini", "--provider", "vllm",
                "--max-completion-tokens", "512", "--db", str(tmp_path / "c.db"), "--json"]
        args = parser.parse_args(argv)
        assert args.func(args) == 0
        seen = srv.requests_seen
        args.func(parser.parse_args(argv))
        assert srv.requests_seen == seen  # a repeated check is read from the cache and the learned contract
    import json

    first = json.loads(capsys.readouterr().out.split("\n}\n")[0] + "\n}")
    assert first["refused_requests"] == 3 and set(first["contract"]) == {"max_tokens", "temperature", "logprobs"}
    by = {m["method"]: m for m in first["methods"]}
    assert by["geval"]["estimator"] == "sample-mean(n=20)"
    assert "20-sample fallback" in by["geval"]["variant"]
    assert "greedy replies became samples" in by["rts"]["variant"]
    assert not by["gptscore"]["available"]


def test_the_stored_reply_shows_the_reasoning_and_reads_back_to_the_same_score(summeval, tmp_path):
    from evalcore.views.score import failures_table

    store = Store(tmp_path / "r.db")
    with serve(profile=PROFILES["vllm-reasoning-parser"]) as srv:
        run = runner.score_dataset(default_spec(summeval, "rts", ["coherence"], limit=3, max_completion_tokens=512),
                                   EngineOptions(endpoint=_ep(srv)), store=store)
        short = runner.score_dataset(default_spec(summeval, "rts", ["coherence"], limit=2, max_completion_tokens=8),
                                     EngineOptions(endpoint=_ep(srv)), store=store)
    j = run.judgments
    assert j["raw"].str.startswith("<think>\n" + DECOY_REASONING).all()
    # the stored reply, parsed again (a re-parse in paper or robust mode), gives the judgment's own value
    assert [parsers.parse_reply("rts", r).value for r in j["raw"]] == j["value"].astype(float).tolist()
    failed = failures_table(short)
    assert len(failed) == 2 and failed["reason"].str.startswith("the completion budget ran out").all()
    # the reasoning it spent the budget on (its first 8 tokens) is shown with the failure
    assert failed["raw"].str.startswith("<think>\nThe summary covers the main").all()


def test_a_batch_sends_the_requests_the_learned_contract_shapes_under_the_online_keys(tmp_path):
    import json

    from evalcore.judge import batch
    from evalcore.judge.check import check_judge
    from evalcore.judge.contract import RequestOptions
    from tests.test_judge_batch import CRIT, tiny_dataset

    ds, store = tiny_dataset(), Store(tmp_path / "batch.db")
    spec = ScoringSpec(ds, "geval", ["coherence"], CRIT, max_completion_tokens=512)
    with serve(profile=PROFILES["openai-reasoning"]) as srv:
        check_judge(_ep(srv), store=store, options=RequestOptions(max_completion_tokens=512))  # learns the contract
        col = batch.score_dataset_batch(spec, EngineOptions(endpoint=_ep(srv)), store=store, poll_s=0.02)
        assert col.run.judgments["status"].eq("ok").all()
        sent = [json.loads(r[0]) for r in store.conn.execute(
            "SELECT request FROM cache WHERE request LIKE '%\"n\":20%'").fetchall()]
        assert sent and all(r["token_param"] == "max_completion_tokens" for r in sent)
        online = runner.score_dataset(dataclasses.replace(spec, run_id=None), EngineOptions(endpoint=_ep(srv)),
                                      store=store)
    assert online.config["stats"]["requests"] == 0  # the batch's replies are the online run's cache hits
    assert online.judgments.set_index("item_id")["value"].equals(col.run.judgments.set_index("item_id")["value"])


def test_the_estimate_keys_requests_as_the_contract_shapes_them_and_counts_the_reasoning_budget(summeval, tmp_path):
    store = Store(tmp_path / "e.db")
    spec = default_spec(summeval, "rts", ["coherence"], limit=3, max_completion_tokens=512)
    with serve(profile=PROFILES["openai-reasoning"]) as srv:
        runner.score_dataset(spec, EngineOptions(endpoint=_ep(srv)), store=store)
        done = runner.estimate(spec, EngineOptions(endpoint=_ep(srv)), store=store)
        more = runner.estimate(dataclasses.replace(spec, limit=5), EngineOptions(endpoint=_ep(srv)), store=store)
    assert (done.calls, done.cache_hits) == (0, 3)  # the run's shaped requests are found under the same keys
    assert (more.calls, more.completion_tokens) == (2, 2 * 512)
    assert "reasoning included" in more.note


def test_meta_json_and_the_report_name_the_variant(summeval):
    from evalcore.cli import meta_report
    from evalcore.store import default_store
    from evalcore.views.report import AnalysisParams, analysis_report

    spec = default_spec(summeval, "rts", ["coherence"], limit=16, max_completion_tokens=512)
    with serve(profile=PROFILES["openai-reasoning"]) as srv:
        run = runner.score_dataset(spec, EngineOptions(endpoint=_ep(srv), concurrency=8), store=default_store())
    said = "greedy replies became samples at the judge's default temperature 1"
    assert said in meta_report("summeval", run.run_id, n_resamples=0)["variant"]
    import html

    page = analysis_report(summeval, [run], AnalysisParams("summeval", [run.run_id], "coherence", n_resamples=0))
    assert html.escape(said) in page


def test_score_page_checks_the_judge_and_records_the_reasoning_options():
    pytest.importorskip("streamlit")
    from tests.test_app_pages import assert_clean, goto, new_app

    with serve(profile=PROFILES["openai-reasoning"]) as judge:
        at = new_app(dataset="summeval", dimension="coherence")
        at.run()
        goto(at, "score")
        at.selectbox(key="endpoint").set_value("vllm").run()
        at.text_input(key="base_url").input(judge.base_url).run()
        at.text_input(key="model").input("gpt-5-mini").run()
        at.number_input(key="max_completion_tokens").set_value(512).run()
        at.button(key="check_judge").click().run()
        assert_clean(at)
        shown = "\n".join(c.value for c in at.code)
        assert "refused 'max_tokens'" in shown and "greedy replies became samples" in shown
        assert judge.requests_seen <= 7  # the probe's few requests and its three refusals


def test_from_the_cli_a_reasoning_judge_scores_every_item_with_three_refusals(tmp_path):
    import json
    import os
    import subprocess
    import sys

    with serve(profile=PROFILES["openai-reasoning"]) as srv:
        cmd = [sys.executable, "-m", "evalcore", "score", "--dataset", "summeval", "--dimension", "coherence",
               "--method", "geval", "--provider", "vllm", "--base-url", srv.base_url, "--model", "gpt-5-mini",
               "--limit", "8", "--max-completion-tokens", "512", "--reasoning-effort", "low", "--quiet", "--json",
               "--db", str(tmp_path / "cli.db")]
        done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()},
                              timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["stats"]["ok"] == 8 and out["stats"]["refused_requests"] == 3
    assert "20-sample fallback" in out["variant"] and set(out["contract"]) == {"max_tokens", "temperature",
                                                                               "logprobs"}


def test_log_probs_that_cover_a_reasoning_field_are_read_at_the_answer_only():
    # a server returning the reasoning apart but log-probs over every generated token, the reasoning's "1" first
    tokens = (_tok("Score"), _tok("1", ("1", math.log(0.9)), ("2", math.log(0.1))), _tok("."),
              TokenLogprob("4", math.log(0.6), (("4", math.log(0.6)), ("5", math.log(0.4)))))
    resp = Response([Choice("4", tokens, "stop", reasoning="Score 1.")])
    sep = separate_reasoning([resp])
    assert [t.token for t in sep.responses[0].choices[0].tokens] == ["4"]
    crit = Criteria("coherence", "Rate it.", "Coherence", 1, 5)
    out = GEVAL.score(ItemTask("i", "d", "s", "coherence", "src", "out"), crit, GEvalConfig(), sep.responses)
    assert out.value == pytest.approx(4.4)
    # token texts that do not spell the content: no distribution at the answer, so the probe reports no log-probs
    from evalcore.judge.client import _answer_has_logprobs

    odd = Response([Choice("4", (_tok("\u0120Score"), _tok("x")), "stop", reasoning="Score 1.")])
    assert separate_reasoning([odd]).responses[0].choices[0].tokens is None
    assert not _answer_has_logprobs(odd) and _answer_has_logprobs(resp)
