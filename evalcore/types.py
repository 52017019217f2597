"""What passes between a scoring method and the judge client.

A method is two pure functions (the inspect_ai split of solver and scorer, without the framework):

* ``build_requests(task) -> list[Request]``: the prompts it needs for one item (or one ordered pair);
* ``score(task, responses) -> Outcome``: the value it derives from the judge's replies, or a failure with a reason.

The engine (``evalcore.judge.runner``) sends the requests through the client and the SQLite cache and hands the
responses back. Methods never talk to the network, so they are tested with hand-made ``Response`` objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completions call. ``n`` > 1 asks for several samples in one request."""

    messages: tuple[tuple[str, str], ...]  # ((role, content), ...): a tuple so requests hash
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    n: int = 1
    logprobs: bool = False
    top_logprobs: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    kind: Literal["chat"] = "chat"
    # What the endpoint's learned contract (evalcore.judge.contract) or the spec's reasoning options changed: the
    # name the completion budget is sent under ("max_completion_tokens" for OpenAI's reasoning models), the sampling
    # parameters left out because the endpoint only allows their default, the reasoning effort asked for. Part of
    # the cache key only when set, so the requests of 2023-style endpoints keep their keys.
    token_param: str = "max_tokens"
    omit: tuple[str, ...] = ()
    reasoning_effort: str | None = None
    # which of a run's K draws this request belongs to (evalcore.judge.draws): part of the cache key from draw 1 on,
    # so draw 2 is never served draw 1's reply (draw 0 keeps the key a one-draw run always had); never sent
    draw: int = 0

    def params(self) -> dict[str, Any]:
        """Every parameter that changes the reply: what the cache key is made of (with endpoint and model)."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "messages": [list(m) for m in self.messages],
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "n": self.n,
            "logprobs": self.logprobs,
            "top_logprobs": self.top_logprobs,
            "seed": self.seed,
            "stop": list(self.stop) if self.stop else None,
        }
        if self.token_param != "max_tokens":
            out["token_param"] = self.token_param
        if self.omit:
            out["omit"] = sorted(self.omit)
        if self.reasoning_effort is not None:
            out["reasoning_effort"] = self.reasoning_effort
        if self.draw:
            out["draw"] = self.draw
        return out


@dataclass(frozen=True)
class CompletionRequest:
    """One legacy completions call; with ``echo=True`` and ``logprobs`` it returns the prompt's token log-probs
    (what GPTScore needs)."""

    prompt: str
    max_tokens: int = 0
    echo: bool = True
    logprobs: int | None = 1
    temperature: float = 0.0
    n: int = 1
    seed: int | None = None
    kind: Literal["completion"] = "completion"
    draw: int = 0  # as ChatRequest.draw

    def params(self) -> dict[str, Any]:
        out = {
            "kind": self.kind,
            "prompt": self.prompt,
            "max_tokens": self.max_tokens,
            "echo": self.echo,
            "logprobs": self.logprobs,
            "temperature": self.temperature,
            "n": self.n,
            "seed": self.seed,
        }
        if self.draw:
            out["draw"] = self.draw
        return out


Request = ChatRequest | CompletionRequest


@dataclass(frozen=True)
class TokenLogprob:
    """One generated (or echoed) token with its log-prob and the top alternatives at that position."""

    token: str
    logprob: float | None  # None for the first echoed prompt token, which has no log-prob
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Choice:
    text: str
    tokens: tuple[TokenLogprob, ...] | None = None  # None when the endpoint returned no log-probs
    finish_reason: str | None = None
    # completions with echo: how many leading tokens belong to the prompt (filled by the client when it knows)
    prompt_token_count: int | None = None
    # the judge's reasoning, when the server returned it apart from the answer (``message.reasoning_content`` /
    # ``message.reasoning``); reasoning written inside the content is split off by ``parsers.split_reasoning``
    reasoning: str | None = None


@dataclass
class Response:
    choices: list[Choice]
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, completion_tokens, total_tokens
    latency_s: float = 0.0
    cached: bool = False
    answered_by: str = ""  # the base URL that answered (filled by the engine; "" for cache hits)
    model: str = ""  # the model (and snapshot) the endpoint says answered, "" where it did not say


@dataclass(frozen=True)
class Outcome:
    """What a method derives for one item and dimension (or one ordered pair).

    value is None exactly when status == "failed"; reason then says why ("no score found in reply",
    "endpoint returned no log-probs", ...). estimator records how the value was obtained, e.g.
    "logprob-weighted", "sample-mean(n=20)", "greedy", "mean-token-logprob".
    For pairwise methods, verdict is "first" | "second" | "tie" and value is 1.0 / 0.0 / 0.5 for the first text.
    """

    value: float | None
    status: str
    reason: str = ""
    estimator: str = ""
    verdict: str | None = None
    raw: str = ""  # the reply text(s) kept for the record; a JSON list when there were several samples
    detail: dict[str, Any] = field(default_factory=dict)  # e.g. the renormalised score distribution


@dataclass(frozen=True)
class Capabilities:
    """What an endpoint was found to support by the capability probe."""

    chat_logprobs: bool = False
    top_logprobs: int = 0  # how many alternatives it returns (0 = none)
    honours_n: bool = False
    echo_logprobs: bool = False  # completions with echo=True return prompt log-probs


class UnsupportedByEndpoint(Exception):
    """A method needs a capability (log-probs, echo) this endpoint lacks and has no recorded fallback."""


@dataclass(frozen=True)
class Criteria:
    """What the judge is asked to assess for one dimension: G-Eval's task introduction + evaluation criteria,
    the rating scale and (optionally) the evaluation steps (auto-CoT output, editable, versioned by ``version_hash``)."""

    dimension: str
    task_introduction: str
    definition: str
    scale_min: int = 1
    scale_max: int = 5
    steps: str = ""

    def version_hash(self) -> str:
        import hashlib
        import json

        blob = json.dumps(
            [self.dimension, self.task_introduction, self.definition, self.scale_min, self.scale_max, self.steps],
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ItemTask:
    """One item to score on one dimension, with the texts a prompt may need."""

    item_id: str
    doc_id: str
    system_id: str
    dimension: str
    source: str
    output: str
    references: tuple[str, ...] = ()
    context: str = ""


@dataclass(frozen=True)
class PairTask:
    """Two outputs for the same document, in the order they are presented ("ab": a first; "ba": b first)."""

    pair_id: str
    doc_id: str
    dimension: str
    item_first: str
    item_second: str
    output_first: str
    output_second: str
    source: str
    order: str = "ab"
    references: tuple[str, ...] = ()
    context: str = ""
