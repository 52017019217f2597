"""Scoring methods on hand-made responses: prompts, Eq. 1 weighting, fallbacks, verdicts, GPTScore token spans."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.types import (
    Capabilities,
    ChatRequest,
    Choice,
    CompletionRequest,
    ItemTask,
    PairTask,
    Response,
    TokenLogprob,
    UnsupportedByEndpoint,
)
from evalcore.methods import METHODS, get_method, parse_steps, render_prompt, steps_request
from evalcore.methods import paper_prompts as pp
from evalcore.methods import presets
from evalcore.methods.base import CAPABILITY_NAMES, fill
from evalcore.methods.geval import GEvalConfig, score_distribution
from evalcore.methods.gptscore import NO_ECHO, GPTScoreConfig, hypothesis_logprobs

L = math.log

TASK = ItemTask(
    item_id="doc1/M8",
    doc_id="doc1",
    system_id="M8",
    dimension="coherence",
    source="ARTICLE {with braces} about a cat.",
    output="The cat sat on the mat.",
    references=("A cat sat.", "The cat was sitting on a mat."),
)
PAIR = PairTask(
    pair_id="doc1/M8|M9",
    doc_id="doc1",
    dimension="coherence",
    item_first="doc1/M9",
    item_second="doc1/M8",
    output_first="FIRST summary text.",
    output_second="SECOND summary text.",
    source="ARTICLE about a cat.",
    order="ba",
)
COH = presets.PRESETS["summeval"]["coherence"]
NO_CAPS = Capabilities()
ALL_CAPS = Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=True, echo_logprobs=True)


def tok(token: str, p: float | None, top: dict[str, float] | None = None) -> TokenLogprob:
    return TokenLogprob(
        token=token,
        logprob=None if p is None else L(p),
        top=tuple((t, L(q)) for t, q in (top or {}).items()),
    )


def reply(text: str, tokens=None) -> Response:
    return Response(choices=[Choice(text=text, tokens=tokens)])


def replies(texts: list[str]) -> Response:
    return Response(choices=[Choice(text=t) for t in texts])


def prompt_of(request) -> str:
    return request.messages[-1][1] if isinstance(request, ChatRequest) else request.prompt


# ----------------------------------------------------------------------------------------------------------------
# registry


def test_registry_names_and_attributes():
    assert set(METHODS) == {"geval", "explicit", "implicit", "rts", "mcq", "pairwise", "h2h", "gptscore", "mtbench"}
    for name, m in METHODS.items():
        assert m.name == name
        assert m.pairwise == (name in ("pairwise", "h2h", "mtbench"))
        config = m.default_config()
        assert m.requirements(config) <= set(CAPABILITY_NAMES)
        # the config a run records survives a JSON round trip
        data = json.loads(json.dumps(dataclasses.asdict(config)))
        assert m.load_config(data) == config
    with pytest.raises(KeyError, match="unknown method"):
        get_method("nope")


def test_config_round_trip_with_tuples_and_dicts():
    m = get_method("gptscore")
    c = dataclasses.replace(
        m.default_config(), variant="IDM", demonstrations=(("src a", "hyp a"), ("src b", "hyp b")),
        instructions={"coherence": "Be coherent:"},
    )
    back = m.load_config(json.loads(json.dumps(dataclasses.asdict(c))))
    assert back == c and back.demonstrations[1] == ("src b", "hyp b")
    # keys from another version are ignored, not an error
    assert m.load_config({"variant": "VAL", "no_such_field": 1}).variant == "VAL"


def test_fill_leaves_unknown_braces_alone():
    assert fill("{a} and {b} and {c d}", {"a": "x{b}"}) == "x{b} and {b} and {c d}"


# ----------------------------------------------------------------------------------------------------------------
# G-Eval prompts


def test_geval_form_prompt_has_all_sections_in_order():
    (req,) = get_method("geval").build_requests(TASK, COH, GEvalConfig())
    text = prompt_of(req)
    parts = [
        "You will be given one summary written for a news article.",
        "Evaluation Criteria:",
        "Coherence (1-5) - the collective quality of all sentences.",
        "Evaluation Steps:",
        "1. Read the news article carefully",
        "Example:",
        "Source Text:\n\nARTICLE {with braces} about a cat.",
        "Summary:\n\nThe cat sat on the mat.",
        "Evaluation Form (scores ONLY):",
    ]
    positions = [text.index(p) for p in parts]
    assert positions == sorted(positions)
    assert text.endswith("- Coherence:")
    assert req.logprobs is True and req.top_logprobs == 20 and req.temperature == 0.0 and req.n == 1


def test_geval_matches_released_coherence_prompt_up_to_the_criteria_head():
    # 000's released coh_detailed.txt, with its "{{Document}}"/"{{Summary}}" slots; the only difference is
    # whitespace after "Example:" / before "Evaluation Form" being normalised by our template
    text = prompt_of(get_method("geval").build_requests(
        dataclasses.replace(TASK, source="DOC", output="SUM"), COH, GEvalConfig())[0])
    assert "Evaluation Steps:\n\n1. Read the news article carefully and identify the main topic and key points.\n" \
           "2. Read the summary" in text
    assert "\n\n\nExample:\n\n\nSource Text:\n\nDOC\n\nSummary:\n\nSUM\n\n\nEvaluation Form (scores ONLY):\n\n- " \
           "Coherence:" in text


def test_geval_ablations_and_fluency_layout():
    g = get_method("geval")
    no_cot = prompt_of(g.build_requests(TASK, COH, GEvalConfig(use_steps=False))[0])
    assert "Evaluation Steps" not in no_cot and "1. Read the news article" not in no_cot
    no_desc = prompt_of(g.build_requests(TASK, COH, GEvalConfig(use_description=False))[0])
    assert "Coherence (1-5)\n" in no_desc and "collective quality" not in no_desc
    flu = presets.PRESETS["summeval"]["fluency"]
    assert (flu.scale_min, flu.scale_max) == (1, 3)
    flu_text = prompt_of(g.build_requests(dataclasses.replace(TASK, dimension="fluency"), flu, GEvalConfig())[0])
    assert "Fluency (1-3) - the quality of the summary" in flu_text
    assert "ARTICLE" not in flu_text and "Evaluation Steps" not in flu_text  # 000's fluency prompt: summary only
    assert flu_text.endswith("- Fluency:")


def test_geval_topical_chat_layout():
    crit = presets.PRESETS["topical_chat"]["groundedness"]
    task = dataclasses.replace(TASK, dimension="groundedness", source="A: hi\nB: hello", output="Cats purr.",
                               context="Cats purr at 25 Hz.")
    config = presets.config_for("geval", "topical_chat")
    text = render_prompt("geval", task, crit, config)
    assert "Conversation History:\n\nA: hi\nB: hello\n\nCorresponding Fact:\n\nCats purr at 25 Hz.\n\n" \
           "Response:\n\nCats purr." in text
    assert "Groundedness (0-1) - given the fact" in text and text.endswith("- Groundedness:")


def test_steps_request_and_parse_steps():
    req = steps_request(COH)
    text = prompt_of(req)
    assert text.startswith("You will be given one summary") and text.endswith("Evaluation Steps:")
    assert "Coherence (1-5) - the collective quality" in text and "1. Read" not in text
    assert req.temperature == 0.0
    reply_text = (
        "Evaluation Steps:\n\n1. Read the article.\n2) Read the summary and\n   compare it.\nStep 3: Assign a score."
        "\n\nExample:\nSource Text: ..."
    )
    assert parse_steps(reply_text) == "1. Read the article.\n2. Read the summary and compare it.\n3. Assign a score."
    assert parse_steps("Just read it carefully.") == "Just read it carefully."
    with pytest.raises(ValueError):
        parse_steps("  \n ")


# ----------------------------------------------------------------------------------------------------------------
# G-Eval Eq. 1 from log-probs


def test_geval_logprob_weighting_exact():
    # top log-probs at the score position: "3" .5, "4" .3, "2" .1, "Hello" .1 -> renormalised over {2, 3, 4}
    tokens = (tok("3", 0.5, {"3": 0.5, "4": 0.3, "2": 0.1, "Hello": 0.1}),)
    out = get_method("geval").score(TASK, COH, GEvalConfig(), [reply("3", tokens)])
    assert out.status == "ok" and out.estimator == "logprob-weighted"
    assert out.value == pytest.approx((0.1 * 2 + 0.5 * 3 + 0.3 * 4) / 0.9)
    assert out.detail["covered_mass"] == pytest.approx(0.9)
    assert out.detail["distribution"] == pytest.approx({"2": 0.1 / 0.9, "3": 0.5 / 0.9, "4": 0.3 / 0.9})


def test_geval_skips_label_tokens_and_pools_spaced_tokens():
    tokens = (
        tok("Co", 0.9), tok("herence", 0.99), tok(":", 0.99),
        tok(" 4", 0.6, {" 4": 0.6, "4": 0.1, " 5": 0.2, " 7": 0.05}),
        tok("\n", 0.9),
    )
    dist = score_distribution(tokens, [1, 2, 3, 4, 5])
    assert dist.position == 3 and dist.token == " 4"
    assert dist.probabilities == pytest.approx({4: 0.7 / 0.9, 5: 0.2 / 0.9})  # "7" is off the 1-5 scale
    assert dist.expected == pytest.approx((0.7 * 4 + 0.2 * 5) / 0.9)


def test_geval_two_token_values_drop_and_assume_same():
    # 0-100 scale, digits tokenised one by one; the reply is "85"
    tokens = (
        tok("8", 0.6, {"8": 0.6, "7": 0.3, "9": 0.1}),
        tok("5", 0.5, {"5": 0.5, "0": 0.4, "\n": 0.1}),
    )
    values = list(range(0, 101))
    dropped = score_distribution(tokens, values)
    # chain along the generated path: p(85) = .6*.5, p(80) = .6*.4, p(8) = .6*.1 (the number ends after "8")
    assert dropped.covered_mass == pytest.approx(0.6)
    assert dropped.unresolved_mass == pytest.approx(0.4)  # "7", "9": their second digit was never shown
    assert dropped.probabilities == pytest.approx({8: 0.1, 80: 0.4, 85: 0.5})
    assert dropped.expected == pytest.approx(0.1 * 8 + 0.4 * 80 + 0.5 * 85)
    same = score_distribution(tokens, values, unseen_continuation="assume-same")
    by_hand = {85: .30, 80: .24, 8: .06, 75: .15, 70: .12, 7: .03, 95: .05, 90: .04, 9: .01}
    assert same.probabilities == pytest.approx(by_hand)
    assert same.covered_mass == pytest.approx(1.0) and same.assumed_mass == pytest.approx(0.4)
    assert same.expected == pytest.approx(sum(v * p for v, p in by_hand.items()))


def test_geval_multi_token_number_ending_and_whole_tokens():
    values = list(range(0, 101))
    # "1" then a newline: the number is 1, not 10-19
    one = (tok("1", 1.0, {"1": 1.0}), tok("\n", 0.8, {"\n": 0.8, "0": 0.2}))
    d = score_distribution(one, list(range(0, 51)))
    assert d.probabilities == pytest.approx({1: 0.8, 10: 0.2})
    # on 0-100 "10" may go on to "100": its continuation was not generated, so it is unresolved
    d = score_distribution(one, values)
    assert d.probabilities == pytest.approx({1: 1.0}) and d.unresolved_mass == pytest.approx(0.2)
    # tokenizers that write "85" in one token: whole-number alternatives need no chain
    d = score_distribution((tok("85", 0.5, {"85": 0.5, "90": 0.3, "80": 0.2}),), values)
    assert d.expected == pytest.approx(0.5 * 85 + 0.3 * 90 + 0.2 * 80)
    # 100 = "1", "0", "0"
    d = score_distribution((tok("1", 1.0), tok("0", 1.0), tok("0", 1.0)), values)
    assert d.probabilities == pytest.approx({100: 1.0})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0.01, max_value=1.0), min_size=5, max_size=5))
def test_geval_weighting_is_renormalised_expectation(weights):
    total = sum(weights)
    probs = [w / total * 0.95 for w in weights]  # leave 5% for a non-score token
    top = {str(s): p for s, p in zip(range(1, 6), probs)}
    top["The"] = 0.05
    dist = score_distribution((tok("3", probs[2], top),), [1, 2, 3, 4, 5])
    assert sum(dist.probabilities.values()) == pytest.approx(1.0)
    assert dist.expected == pytest.approx(sum(s * w for s, w in zip(range(1, 6), weights)) / total)
    assert 1.0 <= dist.expected <= 5.0


def test_geval_logprob_failures_have_reasons():
    g = get_method("geval")
    out = g.score(TASK, COH, GEvalConfig(), [reply("4", None)])
    assert out.status == "failed" and out.value is None and "no log-probs" in out.reason and out.raw == "4"
    out = g.score(TASK, COH, GEvalConfig(), [reply("Good", (tok("Good", 0.9, {"Good": 0.9}),))])
    assert out.status == "failed" and "no score" in out.reason
    out = g.score(TASK, COH, GEvalConfig(), [reply("9", (tok("9", 0.9, {"9": 0.9, "8": 0.1}),))])
    assert out.status == "failed" and "no valid scale value" in out.reason
    out = g.score(TASK, COH, GEvalConfig(), [])
    assert out.status == "failed"


# ----------------------------------------------------------------------------------------------------------------
# G-Eval fallbacks and plan()


def test_geval_plan_for_each_capability_combination():
    g = get_method("geval")
    base = GEvalConfig()
    c, note = g.plan(base, ALL_CAPS)
    assert c == base and note == ""
    c, note = g.plan(base, Capabilities(chat_logprobs=True, top_logprobs=5, honours_n=True))
    assert c.top_logprobs == 5 and c.probs_source == "logprobs" and "at most 5" in note
    c, note = g.plan(base, Capabilities(chat_logprobs=True, top_logprobs=0, honours_n=True))
    assert c.probs_source == "samples" and c.samples_per_request == 20 and "20-sample fallback" in note
    c, note = g.plan(base, Capabilities(honours_n=True))
    assert c.probs_source == "samples" and c.samples_per_request == 20
    assert c.estimator == "sample-mean(n=20)" and "log-probs unavailable" in note
    c, note = g.plan(base, NO_CAPS)
    assert c.probs_source == "samples" and c.samples_per_request == 1 and "20 separate requests" in note
    reqs = g.build_requests(TASK, COH, c)
    assert len(reqs) == 20 and len({r.seed for r in reqs}) == 20 and all(r.n == 1 for r in reqs)
    assert all(r.temperature == 1.0 and r.top_p == 1.0 for r in reqs)
    # -Probs needs nothing
    greedy = GEvalConfig(use_probs=False)
    assert g.plan(greedy, NO_CAPS) == (greedy, "") and g.requirements(greedy) == set()
    assert g.requirements(base) == {"logprobs", "top_logprobs"}
    assert g.requirements(dataclasses.replace(base, probs_source="samples")) == {"n"}


def test_geval_sample_fallback_one_request_and_mean():
    g = get_method("geval")
    config, _ = g.plan(GEvalConfig(), Capabilities(honours_n=True))
    (req,) = g.build_requests(TASK, COH, config)
    assert req.n == 20 and req.temperature == 1.0 and not req.logprobs
    texts = ["3"] * 10 + ["4"] * 8 + ["Coherence: 5", "no idea"]
    out = g.score(TASK, COH, config, [replies(texts)])
    assert out.status == "ok" and out.estimator == "sample-mean(n=20)"
    assert out.value == pytest.approx((30 + 32 + 5) / 19)
    assert "1 of 20" in out.reason and json.loads(out.raw) == texts
    assert out.detail["sample_counts"] == {"3": 10, "4": 8, "5": 1, "unparsed": 1}
    # the released script's rule: `^ ?([\d.]+)` per sample, no match scores 0 and stays in the mean
    # ("Coherence: 5" does not match it either)
    paper = g.score(TASK, COH, config, [replies(texts)], parse_mode="paper")
    assert paper.value == pytest.approx((30 + 32 + 0 + 0) / 20)
    # samples spread over separate requests are pooled the same way
    per1 = dataclasses.replace(config, samples_per_request=1)
    out = g.score(TASK, COH, per1, [replies([t]) for t in texts])
    assert out.value == pytest.approx((30 + 32 + 5) / 19)
    none = g.score(TASK, COH, config, [replies(["?"] * 20)])
    assert none.status == "failed" and none.value is None


def test_geval_greedy_ablation_parses_one_reply():
    g = get_method("geval")
    config = GEvalConfig(use_probs=False)
    (req,) = g.build_requests(TASK, COH, config)
    assert req.temperature == 0.0 and not req.logprobs and req.n == 1
    out = g.score(TASK, COH, config, [reply(" 4")])
    assert (out.value, out.estimator, out.status) == (4.0, "greedy", "ok")
    bad = g.score(TASK, COH, config, [reply("I cannot rate this.")])
    assert bad.status == "failed" and bad.reason and bad.raw == "I cannot rate this."


# ----------------------------------------------------------------------------------------------------------------
# Explicit / Implicit (002)


def test_explicit_prompt_scale_and_parse():
    m = get_method("explicit")
    crit = presets.criteria_for("explicit", "summeval", "coherence")
    config = presets.config_for("explicit", "summeval")
    (req,) = m.build_requests(TASK, crit, config)
    text = prompt_of(req)
    assert "from 0 (worst) to 100 (best)" in text and text.endswith("Score:")
    assert "Article: ARTICLE {with braces} about a cat." in text and "Summary: The cat sat on the mat." in text
    assert req.temperature == 0.0
    assert m.score(TASK, crit, config, [reply("85")]).value == 85.0
    bad = m.score(TASK, crit, config, [reply("It is quite good.")])
    assert bad.status == "failed" and bad.reason
    # the criteria's own scale when asked
    own = dataclasses.replace(config, scale_min=None, scale_max=None)
    assert "from 1 (worst) to 5 (best)" in prompt_of(m.build_requests(TASK, crit, own)[0])


def test_explicit_sampling_plan_and_mean():
    m = get_method("explicit")
    crit = presets.criteria_for("explicit", "summeval", "coherence")
    config = dataclasses.replace(m.default_config(), decoding="sampling", n_samples=3, samples_per_request=3)
    assert m.requirements(config) == {"n"}
    planned, note = m.plan(config, NO_CAPS)
    assert planned.samples_per_request == 1 and "3 separate requests" in note
    assert len(m.build_requests(TASK, crit, planned)) == 3
    out = m.score(TASK, crit, planned, [reply("80"), reply("90"), reply("n/a")])
    assert out.value == pytest.approx(85.0) and out.estimator == "sample-mean(n=3)"


def test_explicit_fed_uses_002_prompt():
    m = get_method("explicit")
    config = presets.config_for("explicit", "fed_dialogue", dimensions=["coherent", "Overall"])
    assert set(config.prompts) == {"coherent", "Overall"}
    task = dataclasses.replace(TASK, dimension="coherent", source="", output="Human: hi\nAI: hello")
    crit = presets.criteria_for("explicit", "fed_dialogue", "coherent")
    text = prompt_of(m.build_requests(task, crit, config)[0])
    assert text == pp.CHEN_FED_EXPLICIT["coherence"].replace("{output}", "Human: hi\nAI: hello")


def implicit_tokens(top: dict[str, float], first: str = "Yes") -> tuple[TokenLogprob, ...]:
    return (tok(first, top.get(first, 0.5), top),)


def test_implicit_formula():
    m = get_method("implicit")
    crit = presets.criteria_for("implicit", "summeval", "coherence")
    config = m.default_config()
    (req,) = m.build_requests(TASK, crit, config)
    assert prompt_of(req).endswith("Answer:") and req.top_logprobs == 5 and req.logprobs
    # p(yes) = .6 + .1, p(no) = .2 -> max(.7, 1 - .2) = .8
    out = m.score(TASK, crit, config, [reply("Yes", implicit_tokens({"Yes": .6, " yes": .1, "No": .2, "Maybe": .05}))])
    assert out.value == pytest.approx(0.8)
    assert out.detail["p_yes"] == pytest.approx(0.7) and out.detail["p_no"] == pytest.approx(0.2)
    # p(yes) = .3, p(no) = .5 + .1 -> max(.3, .4) = .4
    out = m.score(TASK, crit, config, [reply("No", implicit_tokens({"No": .5, " no": .1, "Yes": .3}, "No"))])
    assert out.value == pytest.approx(0.4)
    # a leading whitespace token is skipped
    toks = (tok("\n", 0.9, {"\n": 0.9}), tok("Yes", 0.9, {"Yes": 0.9, "No": 0.05}))
    assert m.score(TASK, crit, config, [reply("\nYes", toks)]).value == pytest.approx(0.95)


def test_implicit_failures_and_paper_rule():
    m = get_method("implicit")
    crit = presets.criteria_for("implicit", "summeval", "coherence")
    config = m.default_config()
    neither = [reply("Maybe", implicit_tokens({"Maybe": .7, "Perhaps": .2}, "Maybe"))]
    out = m.score(TASK, crit, config, neither)
    assert out.status == "failed" and "no yes/no token" in out.reason
    paper = m.score(TASK, crit, config, neither, parse_mode="paper")
    assert paper.value == 1.0 and "paper rule" in paper.reason
    out = m.score(TASK, crit, config, [reply("Yes", None)])
    assert out.status == "failed" and "no log-probs" in out.reason


def test_implicit_plan_fallbacks():
    m = get_method("implicit")
    base = m.default_config()
    assert m.plan(base, ALL_CAPS) == (base, "")
    c, note = m.plan(base, Capabilities(echo_logprobs=True))
    assert c.api == "completion" and "completions" in note
    (req,) = m.build_requests(TASK, presets.criteria_for("implicit", "summeval", "coherence"), c)
    assert isinstance(req, CompletionRequest) and req.logprobs == 5 and req.echo is False
    c, note = m.plan(base, Capabilities(honours_n=True))
    assert c.probs_source == "samples" and c.estimator == "sample-yes-rate(n=20)" and "sampled yes/no" in note
    c, note = m.plan(base, NO_CAPS)
    assert c.samples_per_request == 1 and "separate requests" in note
    crit = presets.criteria_for("implicit", "summeval", "coherence")
    assert len(m.build_requests(TASK, crit, c)) == 20
    texts = ["Yes."] * 12 + ["No"] * 6 + ["Hard to say", "It depends"]
    out = m.score(TASK, crit, c, [replies(texts)])
    assert out.value == pytest.approx(max(12 / 20, 1 - 6 / 20)) and out.estimator == "sample-yes-rate(n=20)"
    assert m.score(TASK, crit, c, [replies(["Hmm"] * 20)]).status == "failed"


# ----------------------------------------------------------------------------------------------------------------
# RTS and MCQ (003)


def test_rts_summeval_prompt_is_003s():
    m = get_method("rts")
    config = presets.config_for("rts", "summeval")
    crit = presets.criteria_for("rts", "summeval", "relevance")
    task = dataclasses.replace(TASK, dimension="relevance")
    (req,) = m.build_requests(task, crit, config)
    assert req.temperature == 0.0
    assert prompt_of(req) == (
        "Score the following Summary given the corresponding Article with respect to relevance from one to five, "
        'where one indicates "irrelevance", and five indicates "perfect relevance". Note that relevance measures the '
        "Summary's selection of important content from the Article, whether the Summary grasps the main message of "
        "the Article without being overwhelmed by unnecessary or less significant details.\n\n"
        "Article: ARTICLE {with braces} about a cat.\n\nSummary: The cat sat on the mat.\n\n"
        "Provide your reason in one sentence, then give a final score:"
    )


def test_rts_generic_prompt_and_scores():
    m = get_method("rts")
    crit = presets.PRESETS["topical_chat"]["naturalness"]
    config = presets.config_for("rts", "topical_chat")
    task = dataclasses.replace(TASK, dimension="naturalness", source="A: hi", output="Hello!", context="Fact.")
    text = prompt_of(m.build_requests(task, crit, config)[0])
    assert "Score the following Response given the corresponding Conversation History with respect to naturalness " \
           'from one to three, where one indicates "no naturalness" and three indicates "perfect naturalness".' in text
    assert "Conversation History: A: hi\n\nCorresponding Fact: Fact.\n\nResponse: Hello!" in text
    out = m.score(task, crit, config, [reply("Natural and fluent. Score: 3.")])
    assert out.value == 3.0 and out.estimator == "greedy"
    bad = m.score(task, crit, config, [reply("It reads well.")])
    assert bad.status == "failed" and bad.value is None and bad.reason
    paper = m.score(task, crit, config, [reply("It reads well.")], parse_mode="paper")
    assert paper.value == -1.0 and "paper rule" in paper.reason


def test_mcq_prompt_and_letter_mapping():
    m = get_method("mcq")
    config = presets.config_for("mcq", "summeval")
    crit = presets.criteria_for("mcq", "summeval", "fluency")
    task = dataclasses.replace(TASK, dimension="fluency")
    text = prompt_of(m.build_requests(task, crit, config)[0])
    assert text == pp.SHEN_MCQ["fluency"].replace("{source}", task.source).replace("{output}", task.output)
    assert "D: The majority of the Summary is fluent. Score: Four\n" in text
    assert m.score(task, crit, config, [reply("D")]).value == 4.0
    assert m.score(task, crit, config, [reply("E")]).value == 5.0
    assert m.score(task, crit, config, [reply("I pick none")]).status == "failed"
    # generic template on a 0-1 scale: A = 0, B = 1
    g = presets.PRESETS["topical_chat"]["groundedness"]
    gtask = dataclasses.replace(TASK, dimension="groundedness")
    gen = m.default_config()
    gtext = prompt_of(m.build_requests(gtask, g, gen)[0])
    assert "A: The Summary is poor in terms of groundedness. Score: Zero." in gtext
    assert gtext.endswith("(enter 1 letter from A to B):") and "C:" not in gtext
    assert m.score(gtask, g, gen, [reply("A")]).value == 0.0
    assert m.score(gtask, g, gen, [reply("B")]).value == 1.0


# ----------------------------------------------------------------------------------------------------------------
# pairwise (002) and H2H (003)


def test_pairwise_prompt_order_and_verdicts():
    m = get_method("pairwise")
    crit = presets.criteria_for("pairwise", "summeval", "coherence")
    config = presets.config_for("pairwise", "summeval")
    text = prompt_of(m.build_requests(PAIR, crit, config)[0])
    assert text.index("Summary-1: FIRST summary text.") < text.index("Summary-2: SECOND summary text.")
    assert "(C) Both summaries are equally good in terms of coherence." in text
    assert text.endswith("Answer: I will choose Option")
    expected = {" A": ("first", 1.0), "(B)": ("second", 0.0), "C": ("tie", 0.5)}
    for answer, (verdict, value) in expected.items():
        out = m.score(PAIR, crit, config, [reply(answer)])
        assert (out.verdict, out.value, out.status) == (verdict, value, "ok")
    bad = m.score(PAIR, crit, config, [reply("Both have issues.")])
    assert bad.status == "failed" and bad.value is None and bad.verdict is None and bad.reason
    with pytest.raises(TypeError):
        m.build_requests(TASK, crit, config)


def test_h2h_prompt_is_003s_and_paper_tie_rule():
    m = get_method("h2h")
    crit = presets.criteria_for("h2h", "summeval", "consistency")
    config = presets.config_for("h2h", "summeval")
    pair = dataclasses.replace(PAIR, dimension="consistency")
    text = prompt_of(m.build_requests(pair, crit, config)[0])
    assert text.startswith("Choose a more consistent summary from Summary #1 and Summary #2 with respect to the "
                           "corresponding Article by choosing an option from A, B, or C. Note that consistency "
                           "measures the factual alignment between the summary and the Article")
    assert "Summary #1: FIRST summary text.\n\nSummary #2: SECOND summary text." in text
    assert text.endswith("Your choice (enter 1 letter from A to C):")
    assert m.score(pair, crit, config, [reply("B")]).value == 0.0
    assert m.score(pair, crit, config, [reply("A: Summary #1 is more consistent.")]).verdict == "first"
    robust = m.score(pair, crit, config, [reply("Hmm, hard to tell.")])
    assert robust.status == "failed" and robust.reason
    paper = m.score(pair, crit, config, [reply("Hmm, hard to tell.")], parse_mode="paper")
    assert (paper.verdict, paper.value, paper.status) == ("tie", 0.5, "ok") and "paper rule" in paper.reason


def test_methods_without_capability_needs_plan_unchanged():
    for name in ("rts", "mcq", "pairwise", "h2h", "explicit"):
        m = get_method(name)
        c = m.default_config()
        assert m.requirements(c) == set()
        for caps in (NO_CAPS, ALL_CAPS):
            assert m.plan(c, caps) == (c, "")


# ----------------------------------------------------------------------------------------------------------------
# GPTScore (004)


def echo_tokens(prompt: str, hyp_start: int, hyp_logprobs: list[float]) -> tuple[TokenLogprob, ...]:
    """Split a prompt the way a BPE tokenizer would (leading spaces attached); prefix tokens get -9."""
    pieces = re.findall(r"\s*\S+|\s+", prompt)
    assert "".join(pieces) == prompt
    out, pos, k = [], 0, 0
    for i, piece in enumerate(pieces):
        end = pos + len(piece)
        if i == 0:
            lp = None
        elif end > hyp_start:
            lp = hyp_logprobs[k]
            k += 1
        else:
            lp = -9.0
        out.append(TokenLogprob(piece, lp))
        pos = end
    assert k == len(hyp_logprobs)
    return tuple(out)


def test_gptscore_mean_over_hypothesis_tokens_only():
    m = get_method("gptscore")
    crit = presets.criteria_for("gptscore", "summeval", "fluency")
    config = presets.config_for("gptscore", "summeval")
    task = dataclasses.replace(TASK, dimension="fluency")
    (req,) = m.build_requests(task, crit, config)
    assert isinstance(req, CompletionRequest) and req.echo and req.max_tokens == 0 and req.logprobs == 1
    # 004 §2.2's own example: "Generate a fluent and grammatical summary for the following text: {Text} Tl;dr {Summary}"
    assert req.prompt == ("Generate a fluent and grammatical summary for the following text:\n"
                          "ARTICLE {with braces} about a cat. Tl;dr The cat sat on the mat.")
    start = req.prompt.index("The cat sat")
    lps = [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]  # " The", " cat", " sat", " on", " the", " mat."
    out = m.score(task, crit, config, [Response(choices=[Choice(text="", tokens=echo_tokens(req.prompt, start, lps))])])
    assert out.status == "ok" and out.value == pytest.approx(-3.5)
    assert out.detail["hypothesis_tokens"] == [6] and out.estimator == "mean-token-logprob(IST, src->hypo)"


def test_gptscore_variants_and_reference_aggregation():
    m = get_method("gptscore")
    crit = presets.criteria_for("gptscore", "summeval", "coherence")
    val = GPTScoreConfig(variant="VAL")
    (req,) = m.build_requests(TASK, crit, val)
    assert req.prompt == "ARTICLE {with braces} about a cat. Tl;dr The cat sat on the mat."
    idm = GPTScoreConfig(variant="IDM", demonstrations=(("Doc one.", "Sum one."), ("Doc two.", "Sum two.")))
    (req,) = m.build_requests(TASK, crit, idm)
    assert "\nDoc one. Tl;dr Sum one.\n\nDoc two. Tl;dr Sum two.\n\nARTICLE" in req.prompt
    with pytest.raises(ValueError, match="demonstrations"):
        m.build_requests(TASK, crit, GPTScoreConfig(variant="IDM"))
    ref = GPTScoreConfig(direction="ref->hypo", variant="VAL")
    reqs = m.build_requests(TASK, crit, ref)
    assert [r.prompt for r in reqs] == [
        "A cat sat. In other words , \nThe cat sat on the mat.",
        "The cat was sitting on a mat. In other words , \nThe cat sat on the mat.",
    ]
    responses = []
    for r, lps in zip(reqs, ([-1.0] * 6, [-2.0, -2.0, -2.0, -2.0, -2.0, -5.0])):
        start = r.prompt.index("The cat sat on")
        responses.append(Response(choices=[Choice(text="", tokens=echo_tokens(r.prompt, start, lps))]))
    assert m.score(TASK, crit, ref, responses).value == pytest.approx(-1.0)  # max over references
    mean = dataclasses.replace(ref, reference_aggregation="mean")
    out = m.score(TASK, crit, mean, responses)
    assert out.value == pytest.approx((-1.0 + -2.5) / 2) and out.detail["per_context"] == pytest.approx([-1.0, -2.5])
    with pytest.raises(ValueError, match="no reference"):
        m.build_requests(dataclasses.replace(TASK, references=()), crit, ref)


def test_gptscore_plan_requirements_and_failures():
    m = get_method("gptscore")
    c = m.default_config()
    assert m.requirements(c) == {"echo_logprobs"}
    assert m.plan(c, Capabilities(echo_logprobs=True)) == (c, "")
    for caps in (NO_CAPS, Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=True)):
        with pytest.raises(UnsupportedByEndpoint) as e:
            m.plan(c, caps)
        assert str(e.value) == NO_ECHO and "echo" in str(e.value)
    crit = presets.criteria_for("gptscore", "summeval", "coherence")
    out = m.score(TASK, crit, c, [reply("", None)])
    assert out.status == "failed" and "no log-probs" in out.reason
    garbled = (TokenLogprob("bytes:\\xe2", None), TokenLogprob("junk", -1.0))
    out = m.score(TASK, crit, c, [reply("", garbled)])
    assert out.status == "failed" and "cannot locate the hypothesis" in out.reason


def test_hypothesis_span_with_generated_tokens_and_unicode_fallback():
    prefix, hyp = "Context Tl;dr ", "Über alles."
    prompt = prefix + hyp
    toks = echo_tokens(prompt, len(prefix), [-1.0, -3.0])
    # an endpoint that generated one token anyway: prompt_token_count cuts it off
    extra = toks + (TokenLogprob(" more", -0.1),)
    assert hypothesis_logprobs(Choice("", extra, prompt_token_count=len(toks)), prefix, hyp) == [-1.0, -3.0]
    # a byte-level token shown differently: located from the end of the token texts
    shown = (TokenLogprob("bytes:\\x43", None),) + toks[1:]
    assert hypothesis_logprobs(Choice("", shown), prefix, hyp) == [-1.0, -3.0]


# ----------------------------------------------------------------------------------------------------------------
# presets and render_prompt


def test_presets_scales_and_steps():
    se = presets.PRESETS["summeval"]
    assert {d: (c.scale_min, c.scale_max) for d, c in se.items()} == {
        "coherence": (1, 5), "consistency": (1, 5), "fluency": (1, 3), "relevance": (1, 5)}
    assert se["relevance"].steps.count("\n") == 3 and se["fluency"].steps == ""
    tc = presets.PRESETS["topical_chat"]
    assert {d: (c.scale_min, c.scale_max) for d, c in tc.items()} == {
        "naturalness": (1, 3), "coherence": (1, 3), "engagingness": (1, 3), "groundedness": (0, 1)}
    assert all(c.steps.startswith("1. ") for c in tc.values())
    assert presets.criteria_for("geval", "summeval", "coherence") is se["coherence"]
    assert presets.criteria_for("rts", "summeval", "coherence").definition == pp.SHEN_DEFINITIONS["coherence"]
    assert presets.criteria_for("rts", "topical_chat", "coherence") is tc["coherence"]
    assert presets.criteria_for("geval", "nope", "x") is None
    assert presets.criteria_for("implicit", "fed_dialogue", "likeable").dimension == "likeable"
    assert presets.criteria_for("mcq", "fed_dialogue", "likeable") is None
    # 003's prompts only where 003 used them
    assert presets.config_for("rts", "topical_chat").prompts == {}
    assert presets.config_for("rts", "summeval").prompts == pp.SHEN_RTS


def test_render_prompt_for_every_method_with_placeholders():
    for name, m in METHODS.items():
        crit = presets.criteria_for(name, "summeval", "coherence")
        text = render_prompt(name, None, crit)
        assert "<source text>" in text
        if m.pairwise:
            assert "<first text>" in text and "<second text>" in text
        else:
            assert "<text to evaluate>" in text
    many = render_prompt("gptscore", TASK, COH, {"direction": "ref->hypo"})
    assert "--- request 1 of 2 ---" in many and "--- request 2 of 2 ---" in many
    # 20 identical sample requests are shown once
    samples = render_prompt("geval", TASK, COH, GEvalConfig(probs_source="samples", samples_per_request=1))
    assert "--- request" not in samples and samples.count("Evaluation Form") == 1
