"""Loopback profiles: the loopback judge (``evalcore.testing.loopback``) following one provider's documented contract.

Each profile is written from the provider's own documentation page (cited on the profile) and changes only what
that page says: which parameters are refused and with which error, which are silently ignored or capped, where the
judge's reasoning goes (hidden and counted, a ``<think>`` block in the content, a separate message field) and what
the completion budget covers. The answer after the reasoning is the plain loopback's answer to the same prompt
(``default_reply``), so a test knows exactly which score each reply implies; the reasoning holds a decoy ("Score: 1",
"[[C]]", "Answer: (E)") that any parser reading it would take instead.

    with serve(profile=PROFILES["openai-reasoning"]) as srv: ...
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from evalcore.testing.replies import Reply, pad_alternatives, plain_tokens, stable_hash

# What a parser would read if it looked at the reasoning: a score, a pairwise verdict, a multiple-choice letter.
DECOY_REASONING = ("The summary covers the main event but skips details. A first draft of the verdict, to be "
                   "checked: Score: 1. [[C]] Answer: (E). Checking the criteria again before answering.")


def _openai_error(message: str, param: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


@dataclass(frozen=True)
class Profile:
    """One documented contract. ``reasoning``: "" (none), "hidden" (counted in usage, never shown), "content"
    (a ``<think>`` block before the answer), or the message field it is returned in ("reasoning_content",
    "reasoning"). ``reasoning_tokens``: what hidden reasoning costs before the answer, out of the budget."""

    name: str
    doc: str
    refuse_max_tokens: bool = False
    default_only: tuple[str, ...] = ()  # temperature / top_p refused unless 1 (the default)
    refuse_logprobs: bool = False
    ignore_logprobs: bool = False
    n_must_be_1: bool = False
    ignore_n: bool = False
    cap_temperature: float | None = None
    reasoning: str = ""
    reasoning_tokens: int = 0
    effort_none_relaxes: bool = False  # reasoning_effort "none" (the default) accepts temperature and log-probs
    anthropic_errors: bool = False

    def _relaxed(self, req: dict[str, Any]) -> bool:
        return self.effort_none_relaxes and str(req.get("reasoning_effort") or "none") == "none"

    def refusal(self, req: dict[str, Any]) -> dict[str, Any] | None:
        """The 400 body this contract answers ``req`` with, or None when it is accepted."""
        if self.refuse_max_tokens and "max_tokens" in req:
            return _openai_error("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                 "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
        relaxed = self._relaxed(req)
        for p in () if relaxed else self.default_only:
            if p in req and req[p] is not None and float(req[p]) != 1.0:
                return _openai_error(f"Unsupported value: '{p}' does not support {req[p]:g} with this model. Only "
                                     f"the default (1) value is supported.", p, "unsupported_value")
        if self.refuse_logprobs and not relaxed and (req.get("logprobs") or req.get("top_logprobs")):
            p = "logprobs" if req.get("logprobs") else "top_logprobs"
            return _openai_error(f"Unsupported parameter: '{p}' is not supported with this model.", p,
                                 "unsupported_parameter")
        if self.n_must_be_1 and int(req.get("n") or 1) != 1:
            return {"type": "error", "error": {"type": "invalid_request_error", "message": "n: must be exactly 1"}}
        return None

    # ------------------------------------------------------------------------------------------------ replies
    def chat(self, answer: Callable[[dict[str, Any], int], list[Reply]], req: dict[str, Any], prompt: str,
             model: str) -> dict[str, Any]:
        """The chat-completions body under this contract (refusals are answered before, by ``refusal``): the
        loopback's own ``n`` replies to the request (``answer(request, n)``) shaped as the provider documents;
        ``model``: the server's, named when the request names none."""
        budget = req.get("max_completion_tokens") or req.get("max_tokens")
        budget = int(budget) if budget is not None else None
        temperature = float(req["temperature"]) if req.get("temperature") is not None else 1.0
        if self.cap_temperature is not None:
            temperature = min(temperature, self.cap_temperature)
        n = 1 if self.ignore_n else int(req.get("n") or 1)
        unbounded = {k: v for k, v in req.items() if k not in ("max_tokens", "max_completion_tokens")}
        answers = answer({**unbounded, "temperature": temperature}, n)
        want_lp = bool(req.get("logprobs")) and not self.ignore_logprobs
        k = int(req.get("top_logprobs") or 0)
        hidden = 0 if self._relaxed(req) else self.reasoning_tokens
        choices, spent, thought = [], 0, 0
        for i, r in enumerate(answers):
            message, tokens, finish, used, secret = self._shape(r, budget, hidden)
            spent += used
            thought += secret
            lp = None
            if want_lp and tokens:
                lp = {"content": [{"token": t, "logprob": top[0][1], "bytes": list(t.encode()),
                                   "top_logprobs": [{"token": a, "logprob": b, "bytes": list(a.encode())}
                                                    for a, b in pad_alternatives(top, k)[:k]]} for t, top in tokens],
                      "refusal": None}
            choices.append({"index": i, "message": message, "logprobs": lp, "finish_reason": finish})
        p = len(prompt.split())
        usage: dict[str, Any] = {"prompt_tokens": p, "completion_tokens": spent, "total_tokens": p + spent}
        if thought:
            usage["completion_tokens_details"] = {"reasoning_tokens": thought}
        return {"id": f"chatcmpl-{stable_hash(prompt, time.time()):x}", "object": "chat.completion",
                "created": int(time.time()), "model": req.get("model", model), "choices": choices,
                "usage": usage}

    def _shape(self, r: Reply, budget: int | None, hidden: int
               ) -> tuple[dict[str, Any], list, str, int, int]:
        """(message, the content's tokens, finish_reason, completion tokens spent, hidden reasoning tokens) of one
        reply: the reasoning first, out of the same budget, then the answer."""
        if r.refusal:
            return {"role": "assistant", "content": None, "refusal": r.refusal}, [], r.finish_reason, len(r.tokens), 0
        think = plain_tokens(DECOY_REASONING) if self.reasoning in ("content", "reasoning_content", "reasoning") else []
        if self.reasoning == "content":
            think = plain_tokens("<think>") + think + plain_tokens("</think>")
        before = hidden if self.reasoning == "hidden" else len(think)
        room = None if budget is None else budget - before
        finish = r.finish_reason
        answer = r.tokens
        if room is not None and room < len(answer):
            answer, finish = answer[:max(room, 0)], "length"
        shown_think = think if budget is None else think[:budget]
        secret = min(hidden, budget) if budget is not None else hidden
        message: dict[str, Any] = {"role": "assistant", "refusal": None}
        if self.reasoning == "content":
            tokens = shown_think + answer
            message["content"] = "".join(t for t, _ in tokens)
        else:
            tokens = answer
            message["content"] = "".join(t for t, _ in answer) if answer else ("" if room is None or room > 0
                                                                              else None)
            if self.reasoning in ("reasoning_content", "reasoning") and shown_think:
                message[self.reasoning] = "".join(t for t, _ in shown_think)
        spent = len(answer) + (secret if self.reasoning == "hidden" else len(shown_think))
        return message, tokens, finish, spent, secret if self.reasoning == "hidden" else 0


# ------------------------------------------------------------------------------------------------ the contracts
PROFILES: dict[str, Profile] = {p.name: p for p in (
    # The chat-completions contract of 2023 (GPT-4o / GPT-4.1 and most servers without a reasoning model).
    Profile("openai-2023", doc="https://platform.openai.com/docs/api-reference/chat/create"),
    # GPT-5 family and o-series (and Azure OpenAI's deployments of them): max_tokens refused for
    # max_completion_tokens, temperature / top_p only at 1, no log-probs, hidden reasoning tokens counted against
    # max_completion_tokens and reported in usage.completion_tokens_details.reasoning_tokens.
    Profile("openai-reasoning", doc="https://platform.openai.com/docs/guides/reasoning",
            refuse_max_tokens=True, default_only=("temperature", "top_p"), refuse_logprobs=True, reasoning="hidden",
            reasoning_tokens=48),
    # GPT-5.1 / 5.2: reasoning_effort defaults to "none", and with "none" temperature, top_p and log-probs are
    # accepted (max_tokens is still refused); with any other effort the reasoning contract above holds.
    Profile("openai-gpt-5.1", doc="https://platform.openai.com/docs/guides/latest-model",
            refuse_max_tokens=True, default_only=("temperature", "top_p"), refuse_logprobs=True, reasoning="hidden",
            reasoning_tokens=48, effort_none_relaxes=True),
    # Anthropic's OpenAI SDK compatibility: n must be exactly 1 (400 otherwise); logprobs / top_logprobs ignored;
    # temperature above 1 capped at 1; reasoning_effort ignored; the extended thinking is not returned.
    Profile("anthropic-openai-compat", doc="https://docs.anthropic.com/en/api/openai-sdk",
            n_must_be_1=True, ignore_logprobs=True, cap_temperature=1.0, anthropic_errors=True),
    # vLLM serving a reasoning model (Qwen3, DeepSeek-R1 distillations) without --reasoning-parser: the reasoning is
    # written in the content as a <think> ... </think> block before the answer, out of the same max_tokens.
    Profile("vllm-think-in-content", doc="https://docs.vllm.ai/en/latest/features/reasoning_outputs/",
            reasoning="content"),
    # vLLM with --reasoning-parser: the reasoning in message.reasoning (reasoning_content before 0.11), the content
    # holds the answer only.
    Profile("vllm-reasoning-parser", doc="https://docs.vllm.ai/en/latest/features/reasoning_outputs/",
            reasoning="reasoning"),
    # Ollama's OpenAI compatibility: log-probs supported, n not among the supported request fields (one choice),
    # the thinking of a thinking model returned apart from the content (message.reasoning).
    Profile("ollama", doc="https://docs.ollama.com/api/openai-compatibility", ignore_n=True, reasoning="reasoning"),
    # llama.cpp's llama-server with --reasoning-format deepseek: the thoughts in message.reasoning_content; one
    # choice per request.
    Profile("llamacpp-deepseek", doc="https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
            ignore_n=True, reasoning="reasoning_content"),
    # llama.cpp with --reasoning-format none: the <think> block left in the content.
    Profile("llamacpp-none", doc="https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
            ignore_n=True, reasoning="content"),
)}

__all__ = ["Profile", "PROFILES", "DECOY_REASONING"]
