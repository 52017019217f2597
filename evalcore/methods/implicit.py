"""Implicit Score (002, Chen et al. 2023, §2.1 Eq. 1): a yes/no question about the text; the score is the judge's
confidence in "yes" read from the top-5 log-probs of the token right after "Answer:":

    p(yes) = sum of p(t) over the top-5 tokens t in {"Yes", " Yes", "yes", " yes"}
    p(no)  = sum of p(t) over the top-5 tokens t in {"No", " No", "no", " no"}
    Implicit Score = max(p(yes), 1 - p(no))

002 used completions (text-davinci-003). Here the question goes to the chat endpoint when it returns top log-probs
(the first generated token is the one after "Answer:"; a leading whitespace-only token is skipped), or to the
completions endpoint when only that one returns log-probs (``api="completion"``).

When neither returns log-probs, ``plan`` falls back to sampling n answers (default 20, temperature 1) and uses
the empirical shares of "yes" and "no" replies in the same formula; the estimator is recorded as
``sample-yes-rate(n=20)``. That is a coarse stand-in (steps of 1/n), labelled as such, never mixed silently with
log-prob scores.

When none of the top-5 alternatives is a yes/no token, the formula gives max(0, 1 - 0) = 1. The robust default
counts that as a failure ("no yes/no token ..."); ``parse_mode="paper"`` keeps 002's value 1.0 and says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from evalcore.registry import register_method
from evalcore.types import Capabilities, CompletionRequest, Criteria, ItemTask, Outcome, Request, Response
from evalcore.methods.base import (
    PromptLabels,
    SamplingPlan,
    all_choices,
    chat,
    failed,
    item_prompt,
    load_config,
    ok,
    raw_of,
    sample_requests,
    sampling_note,
    token_alternatives,
)

YES_TOKENS = frozenset({"Yes", " Yes", "yes", " yes"})  # 002 Eq. 1
NO_TOKENS = frozenset({"No", " No", "no", " no"})

IMPLICIT_TEMPLATE = (
    "Consider the following {output_label_lc}{given_clause_lc}:\n\n"
    "{source_block}{context_block}{output_block}"
    "Note that {dimension} refers to {definition}\n\n"
    "Question: {question}\n\nAnswer:"
)
QUESTION_TEMPLATE = "Is the {output_label_lc} good in terms of {dimension}?"


@dataclass(frozen=True)
class ImplicitConfig(PromptLabels):
    template: str = IMPLICIT_TEMPLATE
    question: str = QUESTION_TEMPLATE
    prompts: dict[str, str] = field(default_factory=dict)  # per-dimension exact prompts (002's for FED)
    api: str = "chat"  # "chat" | "completion" (002 used completions)
    probs_source: str = "logprobs"  # "logprobs" | "samples" (plan's fallback)
    top_logprobs: int = 5  # 002: the API returned the top 5
    n_samples: int = 20
    samples_per_request: int = 20
    sample_temperature: float = 1.0
    max_tokens: int = 1

    @property
    def estimator(self) -> str:
        if self.probs_source == "samples":
            return f"sample-yes-rate(n={self.n_samples})"
        return "yes-probability(top-%d)" % self.top_logprobs


_FIRST_WORD = re.compile(r"[A-Za-z]+")


def _answer_word(text: str) -> str | None:
    m = _FIRST_WORD.search(text)
    if not m:
        return None
    w = m.group().lower()
    return w if w in ("yes", "no") else None


class Implicit:
    name = "implicit"
    label = "Implicit Score (Chen et al. 2023)"
    paper = "002"
    pairwise = False
    parser = ""  # the value comes from log-probs (or from yes/no counts)

    def default_config(self) -> ImplicitConfig:
        return ImplicitConfig()

    def load_config(self, data: dict[str, Any] | None) -> ImplicitConfig:
        return load_config(ImplicitConfig, data)

    def requirements(self, config: ImplicitConfig) -> set[str]:
        if config.probs_source == "samples":
            return {"n"} if config.samples_per_request > 1 else set()
        if config.api == "completion":
            # a completions endpoint that returns log-probs: what the probe reports as echo_logprobs
            return {"echo_logprobs"}
        return {"logprobs", "top_logprobs"}

    def plan(self, config: ImplicitConfig, caps: Capabilities) -> tuple[ImplicitConfig, str]:
        notes: list[str] = []
        if config.probs_source == "logprobs":
            if config.api == "chat" and caps.chat_logprobs and caps.top_logprobs >= 1:
                if caps.top_logprobs < config.top_logprobs:
                    notes.append(f"endpoint returns at most {caps.top_logprobs} alternatives: top_logprobs lowered")
                    config = replace(config, top_logprobs=caps.top_logprobs)
                return config, "; ".join(notes)
            if caps.echo_logprobs:
                if config.api != "completion":
                    notes.append("chat log-probs unavailable: completions endpoint with logprobs (as 002 did)")
                return replace(config, api="completion"), "; ".join(notes)
            config = replace(config, probs_source="samples")
            notes.append(
                f"log-probs unavailable: {config.n_samples} sampled yes/no answers, empirical p(yes), p(no)"
            )
        if not caps.honours_n and config.samples_per_request > 1:
            _, note = sampling_note(config.n_samples, caps)
            config = replace(config, samples_per_request=1)
            notes.append(note)
        return config, "; ".join(notes)

    def build_requests(self, task: ItemTask, criteria: Criteria, config: ImplicitConfig) -> list[Request]:
        prompt = item_prompt(task, criteria, config, {"question": config.question})
        if config.probs_source == "samples":
            plan = SamplingPlan(
                n=config.n_samples,
                per_request=config.samples_per_request,
                temperature=config.sample_temperature,
                top_p=1.0,
                max_tokens=max(config.max_tokens, 3),
            )
            return list(sample_requests(prompt, config, plan))
        if config.api == "completion":
            return [CompletionRequest(prompt=prompt, max_tokens=config.max_tokens, echo=False,
                                      logprobs=config.top_logprobs, temperature=0.0)]
        # two tokens: a chat model may open with a whitespace token before "Yes"
        return [chat(prompt, config, temperature=0.0, max_tokens=max(config.max_tokens, 2), logprobs=True,
                     top_logprobs=config.top_logprobs)]

    def score(self, task: ItemTask, criteria: Criteria, config: ImplicitConfig, responses: list[Response], *,
              parse_mode: str = "robust") -> Outcome:
        estimator = config.estimator
        choices = all_choices(responses)
        texts = [c.text for c in choices]
        raw = raw_of(texts)
        if not choices:
            return failed("no reply from the endpoint", estimator)
        if config.probs_source == "samples":
            words = [_answer_word(t) for t in texts]
            n = len(words)
            yes = sum(1 for w in words if w == "yes")
            no = sum(1 for w in words if w == "no")
            estimator = f"sample-yes-rate(n={n})"
            detail: dict[str, Any] = {"n_received": n, "yes": yes, "no": no, "other": n - yes - no}
            if yes + no == 0:
                return failed(f"none of the {n} sampled answers is yes or no", estimator, raw=raw, detail=detail)
            p_yes, p_no = yes / n, no / n
            detail.update(p_yes=p_yes, p_no=p_no)
            return ok(max(p_yes, 1.0 - p_no), estimator, raw=raw, detail=detail)
        choice = choices[0]
        if choice.tokens is None:
            return failed("endpoint returned no log-probs", estimator, raw=raw)
        pos = next((i for i, t in enumerate(choice.tokens) if t.token.strip()), None)
        if pos is None:
            return failed("reply has no answer token", estimator, raw=raw)
        alts = token_alternatives(choice.tokens[pos])
        p_yes = sum(p for t, p in alts.items() if t in YES_TOKENS)
        p_no = sum(p for t, p in alts.items() if t in NO_TOKENS)
        detail = {
            "p_yes": p_yes,
            "p_no": p_no,
            "answer_token": choice.tokens[pos].token,
            "alternatives": json.loads(json.dumps(alts)),
        }
        value = max(p_yes, 1.0 - p_no)
        if p_yes == 0.0 and p_no == 0.0:
            if parse_mode == "paper":
                return ok(value, estimator, raw=raw, detail=detail,
                          reason="paper rule: no yes/no token in the top alternatives -> max(0, 1 - 0) = 1")
            return failed("no yes/no token among the top alternatives after 'Answer:'", estimator, raw=raw,
                          detail=detail)
        return ok(value, estimator, raw=raw, detail=detail)


METHOD = register_method(Implicit())  # the one instance every caller shares (evalcore.registry)
