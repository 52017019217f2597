"""The endpoint's contract, learned from its refusals instead of assumed.

The engine was written against the chat-completions API of 2023: every request carries ``max_tokens``, a
``temperature`` (0 for greedy methods), ``top_p``, and for G-Eval ``logprobs`` / ``top_logprobs``. The judges of 2026
document other contracts, and say so when refused:

* OpenAI's reasoning models (GPT-5 family, o-series; Azure OpenAI alike), https://platform.openai.com/docs/guides/reasoning
  and the chat-completions reference: ``max_tokens`` is refused (HTTP 400, ``param: max_tokens``,
  ``code: unsupported_parameter``, "Use 'max_completion_tokens' instead"); ``temperature`` / ``top_p`` other than 1
  are refused (``code: unsupported_value``, "Only the default (1) value is supported"); ``logprobs`` are refused.
* Anthropic's OpenAI SDK compatibility layer, https://docs.anthropic.com/en/api/openai-sdk: ``n`` "must be exactly 1".

A refusal that names a parameter is answered with its documented substitute, once per (endpoint, model): the rule
is stored with the probe cache (``evalcore.store.probes``) and every later request is shaped by it before its cache
key is made, so a refused parameter costs at most one refusal per run (and none in the next):

=====================  =====================================================================================
refused                substitute
=====================  =====================================================================================
``max_tokens``         the budget sent as ``max_completion_tokens`` (or the name the message gives)
``temperature``        left out where it is not the default (the judge samples at its default: the method's
``top_p``              variant says so, ``variant_notes``)
``logprobs``           no log-probs: the capability is absent, the method plans its sampling estimator
``top_logprobs``
``n``                  one sample per request: the method plans separate requests
``seed``               left out (the request keeps its seed in its cache key, so draws and the samples spread
                       over requests stay apart): the judge's replies are independent samples, not reproducible
anything else          none: the run pauses with the provider's message naming the parameter and the model
(no answer: the budget ``REASONING_BUDGET`` for every request (``reasoning_room``), when a reply spent its whole
ran out in reasoning)  budget reasoning and the run set no budget of its own
=====================  =====================================================================================
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from evalcore.types import Capabilities, ChatRequest, Choice, Request, Response

RENAME, DEFAULT_ONLY, CAPABILITY, NO_SUBSTITUTE = "rename", "default-only", "capability", "none"
LEAVE_OUT = "leave-out"  # a parameter the judge refuses that only made replies reproducible (seed): not sent
ROOM = "room"  # not a refusal: the judge reasons before answering, and every budget below this one ran out in it
# The completion budget a judge that reasons gets when the run set none. OpenAI advises reserving about 25,000
# tokens for reasoning and output while experimenting (https://platform.openai.com/docs/guides/reasoning, "Allocating
# space for reasoning"); a judge's answer is a few tokens, so the engine starts at 4,096 (a cap, not a charge: the
# cost is the tokens used), and a reply that still runs out says to raise it (--max-completion-tokens).
REASONING_BUDGET = 4096
CAPABILITY_PARAMS = ("logprobs", "top_logprobs", "n")
SAMPLING_DEFAULTS = {"temperature": 1.0, "top_p": 1.0}  # OpenAI's documented defaults
# parameters a refusal message may name (looked for when the error carries no ``param`` field)
KNOWN_PARAMS = ("max_completion_tokens", "max_tokens", "top_logprobs", "logprobs", "temperature", "top_p", "n",
                "seed", "stop", "reasoning_effort", "presence_penalty", "frequency_penalty")
_REFUSING = re.compile(r"unsupported|not supported|only the default|must be exactly|is not allowed|"
                       r"does not support|not available for this model", re.IGNORECASE)


@dataclass(frozen=True)
class Rule:
    """One learned clause: ``param`` was refused; ``action`` says what replaces it (see the module table);
    ``value``: the new name (rename) or the only allowed value (default-only); ``message``: the provider's words."""

    param: str
    action: str
    value: Any = None
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def read_refusal(refusal: dict[str, Any] | None) -> Rule | None:
    """The rule a refusal teaches, or None when it is not one naming a parameter (a context-length error, a bad key,
    anything else keeps its usual handling). ``refusal``: ``RequestFailed.refusal`` (status, param, code, message)."""
    if not refusal:
        return None
    message, code = str(refusal.get("message") or ""), str(refusal.get("code") or "")
    param = str(refusal.get("param") or "") or _named_param(message)
    if not param or not (code in ("unsupported_parameter", "unsupported_value") or _REFUSING.search(message)):
        return None
    param = param.split(".")[-1]
    if param == "max_tokens":
        m = re.search(r"use '?`?(\w+)'?`? instead", message, re.IGNORECASE)
        return Rule(param, RENAME, m.group(1) if m else "max_completion_tokens", message)
    if param in SAMPLING_DEFAULTS:
        m = re.search(r"only the default \(([\d.]+)\)", message, re.IGNORECASE)
        return Rule(param, DEFAULT_ONLY, float(m.group(1)) if m else SAMPLING_DEFAULTS[param], message)
    if param in CAPABILITY_PARAMS:
        return Rule(param, CAPABILITY, None, message)
    if param == "seed":
        return Rule(param, LEAVE_OUT, None, message)
    return Rule(param, NO_SUBSTITUTE, None, message)


def _named_param(message: str) -> str:
    """The parameter a message names: quoted ('n', `n`, "n") or as the message's subject ("n: must be ...")."""
    for p in KNOWN_PARAMS:
        if re.search(rf"(['`\"]){p}\1|^\s*{p}\s*:|\bparameter:?\s+{p}\b", message, re.IGNORECASE):
            return p
    return ""


@dataclass
class Contract:
    """What one (endpoint, model) was found to refuse, and how its requests are shaped around it."""

    rules: dict[str, Rule] = field(default_factory=dict)

    def learn(self, rule: Rule) -> bool:
        """Add a rule; False when it was known already (the same refusal twice: no progress to make)."""
        if self.rules.get(rule.param) == rule:
            return False
        self.rules[rule.param] = rule
        return True

    def adapt(self, request: Request) -> Request:
        """``request`` as this endpoint accepts it (unchanged when nothing was learned: the 2023 cache keys stay)."""
        if not isinstance(request, ChatRequest) or not self.rules:
            return request
        changes: dict[str, Any] = {}
        rename = self.rules.get("max_tokens")
        if rename is not None and rename.action == RENAME:
            changes["token_param"] = str(rename.value)
        omit = set(request.omit)
        for p in SAMPLING_DEFAULTS:
            r = self.rules.get(p)
            if r is not None and r.action == DEFAULT_ONLY and float(getattr(request, p)) != float(r.value):
                omit.add(p)
        seed = self.rules.get("seed")
        if seed is not None and seed.action == LEAVE_OUT and request.seed is not None:
            omit.add("seed")
        if omit != set(request.omit):
            changes["omit"] = tuple(sorted(omit))
        room = self.rules.get("reasoning")
        if room is not None and room.action == ROOM and request.max_tokens < int(room.value):
            changes["max_tokens"] = int(room.value)
        return dataclasses.replace(request, **changes) if changes else request

    def refuses(self, request: Request) -> Rule | None:
        """The capability rule ``request`` would meet again (log-probs or n > 1 asked of an endpoint that refused
        them), or None."""
        if not isinstance(request, ChatRequest):
            return None
        asks = {"logprobs": request.logprobs, "top_logprobs": bool(request.top_logprobs), "n": request.n > 1}
        for p in CAPABILITY_PARAMS:
            rule = self.rules.get(p)
            if rule is not None and rule.action == CAPABILITY and asks[p]:
                return rule
        return None

    def restrict(self, caps: Capabilities) -> Capabilities:
        """The probed capabilities less what this endpoint refused (a stale probe cannot promise log-probs again)."""
        if "logprobs" in self.rules or "top_logprobs" in self.rules:
            caps = dataclasses.replace(caps, chat_logprobs=False, top_logprobs=0)
        if "n" in self.rules:
            caps = dataclasses.replace(caps, honours_n=False)
        return caps

    def as_dict(self) -> dict[str, Any]:
        return {p: r.as_dict() for p, r in sorted(self.rules.items())}

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]]) -> "Contract":
        return cls({r["param"]: Rule(r["param"], r["action"], r.get("value"), r.get("message", "")) for r in rows})


def reasoning_room(response: Response, request: Request, options: "RequestOptions") -> Rule | None:
    """The rule a reply teaches when its every choice ended (finish_reason=length) before any answer because the
    judge was still reasoning (a ``<think>`` block never closed, a reasoning field or hidden reasoning tokens with no
    content), and the request's budget is below ``REASONING_BUDGET``; None otherwise, and always when the run set
    its own budget (then the failure says to raise it)."""
    from evalcore import parsers

    if options.max_completion_tokens or not isinstance(request, ChatRequest) or request.max_tokens >= REASONING_BUDGET:
        return None
    choices = list(getattr(response, "choices", None) or [])
    hidden = int((getattr(response, "usage", None) or {}).get("reasoning_tokens", 0) or 0)

    def spent(c: Choice) -> bool:
        split = parsers.split_reasoning(c.text or "")
        reasoned = bool(split.tag or getattr(c, "reasoning", None) or hidden)
        return c.finish_reason == "length" and reasoned and (split.unclosed or not split.answer.strip())

    if not choices or not all(spent(c) for c in choices):
        return None
    return Rule("reasoning", ROOM, REASONING_BUDGET,
                f"the judge reasons before answering and a budget of {request.max_tokens} tokens ran out in the "
                f"reasoning: requests get {REASONING_BUDGET} (set --max-completion-tokens to choose)")


def pause_message(rule: Rule, model: str, base_url: str) -> str:
    return (f"the endpoint {base_url} refuses the parameter '{rule.param}' for model {model}, and no documented "
            f"substitute exists: {rule.message or 'no message'}")


@dataclass(frozen=True)
class RequestOptions:
    """The spec's reasoning options, applied to every request of a run, the capability probe's included:
    ``reasoning_effort`` (sent as is; it changes what a model accepts: GPT-5.1 with "none" takes temperature and
    log-probs again) and ``max_completion_tokens``, the completion budget that replaces each method's own (a
    reasoning model spends it on reasoning first; the name it is sent under is the contract's)."""

    reasoning_effort: str | None = None
    max_completion_tokens: int | None = None

    def apply(self, request: Request, *, probe: bool = False) -> Request:
        if not isinstance(request, ChatRequest):
            return request
        changes: dict[str, Any] = {}
        if self.reasoning_effort and request.reasoning_effort is None:
            changes["reasoning_effort"] = self.reasoning_effort
        if self.max_completion_tokens:
            # the probe's requests too: a one-token probe of a reasoning judge ends inside its reasoning, and would
            # report no log-probs where the answer after the reasoning has them
            changes["max_tokens"] = int(self.max_completion_tokens)
        return dataclasses.replace(request, **changes) if changes else request


def variant_notes(before: list[Request], after: list[Request], contract: Contract) -> list[str]:
    """What the contract changed in one task's requests, in the words a reader of the run needs: greedy replies
    that became samples, a budget sent under another name."""
    notes: list[str] = []
    for p, default in SAMPLING_DEFAULTS.items():
        changed = [b for b, a in zip(before, after) if isinstance(a, ChatRequest) and p in a.omit]
        if changed:
            was = sorted({getattr(b, p) for b in changed})
            shown = ", ".join(f"{v:g}" for v in was)
            rule = contract.rules.get(p)
            only = f"{float(rule.value):g}" if rule is not None and rule.value is not None else f"{default:g}"
            what = "greedy replies became samples" if p == "temperature" and 0.0 in was else f"{p} {shown} left out"
            notes.append(f"{what} at the judge's default {p} {only}: this judge accepts no other")
    room = contract.rules.get("reasoning")
    if room is not None and any(isinstance(b, ChatRequest) and isinstance(a, ChatRequest) and a.max_tokens > b.max_tokens
                                for b, a in zip(before, after)):
        notes.append(f"completion budget raised to {int(room.value):,} tokens: the judge reasons before answering")
    if any(isinstance(a, ChatRequest) and "seed" in a.omit for a in after):
        notes.append("seed left out: this judge refuses one, so its draws are not reproducible")
    if any(isinstance(a, ChatRequest) and a.token_param != "max_tokens" for a in after):
        name = next(a.token_param for a in after if isinstance(a, ChatRequest) and a.token_param != "max_tokens")
        notes.append(f"completion budget sent as {name}")
    return notes


__all__ = ["Rule", "Contract", "RequestOptions", "read_refusal", "reasoning_room", "pause_message",
           "variant_notes", "CAPABILITY_PARAMS", "RENAME", "DEFAULT_ONLY", "CAPABILITY", "NO_SUBSTITUTE", "LEAVE_OUT",
           "ROOM",
           "REASONING_BUDGET"]
