"""What every scoring method shares: the Method protocol, prompt filling, sampling plans and outcome helpers.

A method turns one task (an item, or an ordered pair of items) into requests, and the judge's responses into an
``Outcome``. It never talks to the network (see ``evalcore.types``), so each one is tested on hand-made
``Response`` objects.

Prompts are plain strings with ``{name}`` slots. They are filled by ``fill`` (not ``str.format``): only known slot
names are replaced, so braces inside articles, code or user-edited templates are left alone.

Each method has a frozen config dataclass. ``dataclasses.asdict(config)`` is what a run records; ``load_config``
rebuilds it from that dict (JSON turns tuples into lists, and unknown keys from older versions are ignored).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar, Unpack, runtime_checkable

from evalcore.types import (
    Capabilities,
    ChatRequest,
    Choice,
    Criteria,
    ItemTask,
    Outcome,
    PairTask,
    Request,
    Response,
    TokenLogprob,
)
from evalcore.model import STATUS_FAILED, STATUS_OK

if TYPE_CHECKING:
    from evalcore.parsers import Parsed

CAPABILITY_NAMES = ("logprobs", "top_logprobs", "n", "echo_logprobs")


@runtime_checkable
class Method(Protocol):
    """A scoring method. ``config`` is the method's own frozen config dataclass, a subclass of ``PromptLabels``
    (``GEvalConfig``, ...): each method reads the fields of its own, so only the config it made or loaded goes in."""

    name: str  # "geval", "explicit", "implicit", "rts", "mcq", "pairwise", "h2h", "gptscore"
    label: str  # for display: "G-Eval (Liu et al. 2023)"
    paper: str  # "000", "002", "003", "004"
    pairwise: bool  # True: tasks are PairTask
    parser: str  # evalcore.parsers name used to read replies ("" when the value comes from log-probs)

    def default_config(self) -> PromptLabels: ...

    def load_config(self, data: dict[str, Any] | None) -> PromptLabels: ...

    def requirements(self, config: PromptLabels) -> set[str]: ...

    def plan(self, config: PromptLabels, caps: Capabilities) -> tuple[PromptLabels, str]: ...

    def build_requests(self, task: ItemTask | PairTask, criteria: Criteria, config: PromptLabels) -> list[Request]: ...

    def score(
        self,
        task: ItemTask | PairTask,
        criteria: Criteria,
        config: PromptLabels,
        responses: list[Response],
        *,
        parse_mode: str = "robust",
    ) -> Outcome: ...


# --------------------------------------------------------------------------------------------------------------
# configs


@dataclass(frozen=True)
class PromptLabels:
    """How the texts are named inside generic prompts ("Article" / "Summary"; "Conversation History" / "Response").

    Every method config inherits these fields; ``evalcore.methods.presets.config_for`` sets them per dataset.
    """

    source_label: str = "Article"
    output_label: str = "Summary"
    outputs_label: str = "Summaries"  # plural, for pairwise prompts
    context_label: str = "Corresponding Fact"
    reference_label: str = "Reference"
    # how one labelled text block is laid out: 002's story prompts put the text on the label's line, its FED
    # prompts on the next line
    block_format: str = "{label}: {text}"
    prompt_role: str = "user"  # "user" or "system": the chat role the whole prompt is sent as


_Config = TypeVar("_Config", bound=PromptLabels)  # one method's config class


def load_config(cls: type[_Config], data: dict[str, Any] | None) -> _Config:
    """Rebuild a config dataclass from ``asdict`` output (possibly round-tripped through JSON)."""
    if data is None:
        return cls()
    if isinstance(data, cls):
        return data
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        hint = str(hints.get(f.name, ""))
        if hint.startswith("tuple") and isinstance(value, list):
            value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        kwargs[f.name] = value
    return cls(**kwargs)


def config_json(config: PromptLabels) -> str:
    return json.dumps(dataclasses.asdict(config), sort_keys=True, ensure_ascii=False)


# --------------------------------------------------------------------------------------------------------------
# prompt filling

_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill(template: str, values: Mapping[str, object]) -> str:
    """Replace ``{name}`` for the names in ``values``; leave every other brace untouched."""

    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        return str(values[key]) if key in values else m.group(0)

    return _SLOT.sub(sub, template)


def block(labels: PromptLabels, label: str, text: str) -> str:
    """One labelled text followed by a blank line, or "" when the text is empty (no source for FED dialogues)."""
    if not text:
        return ""
    return fill(labels.block_format, {"label": label, "text": text}) + "\n\n"


def slot_values(task: ItemTask | PairTask | None, criteria: Criteria, config: PromptLabels) -> dict[str, str]:
    """Every slot a template may use. ``{source_block}`` etc. are labelled blocks that vanish when empty."""
    dim = criteria.dimension
    values = {
        "dimension": dim,
        "Dimension": dim[:1].upper() + dim[1:],
        "definition": criteria.definition.strip(),
        "task_introduction": criteria.task_introduction.strip(),
        "steps": criteria.steps.strip(),
        "scale_min": str(criteria.scale_min),
        "scale_max": str(criteria.scale_max),
        "scale_min_word": number_word(criteria.scale_min),
        "scale_max_word": number_word(criteria.scale_max),
        "source_label": config.source_label,
        "output_label": config.output_label,
        "outputs_label": config.outputs_label,
        "context_label": config.context_label,
        "source_label_lc": config.source_label.lower(),
        "output_label_lc": config.output_label.lower(),
        "outputs_label_lc": config.outputs_label.lower(),
    }
    if task is None:
        task = placeholder_task(criteria.dimension)
    values["definition_np"] = values["definition"].rstrip(". ")
    # "given the corresponding Article" only when there is one (FED dialogues are scored without a source)
    values["given_clause"] = f" given the corresponding {config.source_label}" if task.source else ""
    values["given_clause_lc"] = values["given_clause"].lower()
    values["source"] = task.source
    values["context"] = task.context
    values["reference"] = task.references[0] if task.references else ""
    values["source_block"] = block(config, config.source_label, task.source)
    values["context_block"] = block(config, config.context_label, task.context)
    if isinstance(task, PairTask):
        values["first"] = task.output_first
        values["second"] = task.output_second
        values["first_block"] = block(config, f"{config.output_label}-1", task.output_first)
        values["second_block"] = block(config, f"{config.output_label}-2", task.output_second)
    else:
        values["output"] = task.output
        values["output_block"] = block(config, config.output_label, task.output)
    return values


def placeholder_task(dimension: str = "") -> ItemTask:
    """What ``render_prompt`` shows when no real item is chosen yet."""
    return ItemTask(
        item_id="<item>",
        doc_id="<doc>",
        system_id="<system>",
        dimension=dimension,
        source="<source text>",
        output="<text to evaluate>",
        references=("<reference text>",),
        context="",
    )


def placeholder_pair(dimension: str = "") -> PairTask:
    return PairTask(
        pair_id="<pair>",
        doc_id="<doc>",
        dimension=dimension,
        item_first="<item 1>",
        item_second="<item 2>",
        output_first="<first text>",
        output_second="<second text>",
        source="<source text>",
    )


_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def number_word(n: int) -> str:
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)


class ChatParams(TypedDict, total=False):
    """The sampling parameters a method sets on a chat request (``ChatRequest``'s fields of the same names)."""

    temperature: float
    top_p: float
    max_tokens: int
    n: int
    logprobs: bool
    top_logprobs: int | None
    seed: int | None
    stop: tuple[str, ...] | None


def chat(prompt: str, config: PromptLabels, **params: Unpack[ChatParams]) -> ChatRequest:
    role = config.prompt_role if config.prompt_role in ("user", "system") else "user"
    return ChatRequest(messages=((role, prompt),), **params)


def request_text(request: Request) -> str:
    """The full prompt text of one request (what ``render_prompt`` shows)."""
    if isinstance(request, ChatRequest):
        if len(request.messages) == 1:
            return request.messages[0][1]
        return "\n\n".join(f"[{role}]\n{content}" for role, content in request.messages)
    return request.prompt


# --------------------------------------------------------------------------------------------------------------
# sampling: one request with n samples, or n separate requests where the endpoint ignores n


@dataclass(frozen=True)
class SamplingPlan:
    n: int
    per_request: int  # samples asked for in each request: n (one request) or 1 (n requests)
    temperature: float
    top_p: float
    max_tokens: int
    seed_base: int = 0


def sample_requests(prompt: str, config: PromptLabels, plan: SamplingPlan) -> list[ChatRequest]:
    """n samples of one prompt.

    With ``per_request == n`` this is one request (the G-Eval setting, n=20 in one call). Otherwise the samples are
    spread over several requests that differ by ``seed``: identical requests would share one cache entry and so
    return one reply n times, and where an endpoint honours seeds the samples are reproducible too.
    """
    per = max(1, min(plan.per_request, plan.n))
    if per >= plan.n:
        return [
            chat(prompt, config, temperature=plan.temperature, top_p=plan.top_p, max_tokens=plan.max_tokens, n=plan.n)
        ]
    requests = []
    remaining = plan.n
    k = 0
    while remaining > 0:
        m = min(per, remaining)
        requests.append(
            chat(
                prompt,
                config,
                temperature=plan.temperature,
                top_p=plan.top_p,
                max_tokens=plan.max_tokens,
                n=m,
                seed=plan.seed_base + k,
            )
        )
        remaining -= m
        k += 1
    return requests


def sampling_note(n: int, caps: Capabilities) -> tuple[int, str]:
    """(samples per request, note) for an endpoint: all n in one request when it honours n, else one each."""
    if n <= 1 or caps.honours_n:
        return max(1, n), ""
    return 1, f"endpoint ignores n: {n} separate requests (seeds 0..{n - 1})"


# --------------------------------------------------------------------------------------------------------------
# responses and outcomes


@dataclass(frozen=True)
class SeparatedReplies:
    """The replies with the judge's reasoning taken out (``responses``: answers only, what a method may parse), the
    reasoning of each choice (in order; "" where there was none) and, per choice, why it has no answer ("" where it
    has one): a reasoning block that never closed, or a budget spent on reasoning (empty content, finish_reason
    "length"). ``failure``: the reason when no choice has an answer."""

    responses: list[Response]
    reasoning: list[str]
    no_answer: list[str]
    # each reply as the judge wrote it, its reasoning (from the content or the server's field) first in a <think>
    # block: what a judgment stores as the judge's reply, so every view of the reply shows the reasoning too, and
    # parsing it again (parsers.parse_reply) still reads the answer alone
    written: list[str] = dataclasses.field(default_factory=list)

    @property
    def raw(self) -> str:
        return raw_of(self.written) if self.written else ""

    @property
    def failure(self) -> str:
        reasons = [r for r in self.no_answer if r]
        if not reasons or len(reasons) < len(self.no_answer):
            return ""
        head = reasons[0]
        return head if len(reasons) == 1 else f"{head} ({len(reasons)} of {len(self.no_answer)} replies)"

    def record(self) -> dict[str, Any]:
        """What the judgment keeps (its ``detail``): the reasoning, and how many replies had no answer."""
        out: dict[str, Any] = {}
        if any(self.reasoning):
            out["reasoning"] = self.reasoning[0] if len(self.reasoning) == 1 else list(self.reasoning)
        missing = sum(1 for r in self.no_answer if r)
        if missing and missing < len(self.no_answer):
            out["replies_without_answer"] = missing
        return out


BUDGET_SPENT_REASONING = "the completion budget ran out while the judge was reasoning"


def separate_reasoning(responses: list[Response], chat: list[bool] | None = None) -> SeparatedReplies:
    """Take the reasoning out of every chat reply before any parser runs: the server's own field
    (``Choice.reasoning``) and a leading ``<think>`` / ``<thinking>`` / ``<reasoning>`` block in the content
    (``parsers.split_reasoning``). The answer's token log-probs are those after the reasoning, so a log-prob method
    reads the score's distribution at the answer's position. ``chat``: per response, whether it answers a chat
    request (completions, e.g. GPTScore's echo with max_tokens=0, are passed through untouched)."""
    from evalcore import parsers

    out: list[Response] = []
    reasoning: list[str] = []
    no_answer: list[str] = []
    written: list[str] = []
    for i, resp in enumerate(responses):
        if chat is not None and not chat[i]:
            out.append(resp)
            reasoning += [""] * len(resp.choices)
            no_answer += [""] * len(resp.choices)
            written += [c.text for c in resp.choices]
            continue
        choices = []
        for c in resp.choices:
            split = parsers.split_reasoning(c.text)
            said = "\n\n".join(x for x in ((c.reasoning or "").strip(), split.reasoning) if x)
            why = ""
            if split.unclosed:
                why = split.failure()
            elif not split.answer.strip() and c.finish_reason == "length":
                hidden = int(resp.usage.get("reasoning_tokens", 0) or 0)
                why = (f"{BUDGET_SPENT_REASONING} (finish_reason=length, no answer"
                       + (f", {hidden} reasoning tokens" if hidden else "") + "): raise it (--max-completion-tokens)")
            if why:
                choices.append(dataclasses.replace(c, text="", tokens=None))
            elif split.tag:
                choices.append(dataclasses.replace(c, text=split.answer,
                                                   tokens=_answer_tokens(c.tokens, c.text, split.answer_start)))
            elif c.reasoning and c.tokens is not None:
                # reasoning in a server field, log-probs that may cover it too: keep those of the content only
                spelled = "".join(t.token for t in c.tokens)
                start = len(spelled) - len(c.text) if spelled.endswith(c.text) else -1
                choices.append(dataclasses.replace(
                    c, tokens=_answer_tokens(c.tokens, spelled, start) if start >= 0 else None))
            else:
                choices.append(c)
            reasoning.append(said)
            no_answer.append(why)
            written.append(c.text if not said else f"<think>\n{said}" if split.unclosed
                           else f"<think>\n{said}\n</think>\n\n{split.answer}")
        out.append(dataclasses.replace(resp, choices=choices))
    return SeparatedReplies(out, reasoning, no_answer, written)


def _answer_tokens(tokens: tuple[TokenLogprob, ...] | None, text: str, start: int
                   ) -> tuple[TokenLogprob, ...] | None:
    """The tokens of the answer that begins at character ``start`` of ``text``: every token ending after it. None
    when the token texts do not spell the reply (the answer's position among them is then unknown: no log-probs at
    the answer, never the reasoning's)."""
    if tokens is None:
        return None
    if "".join(t.token for t in tokens) != text:
        return None
    kept, pos = [], 0
    for t in tokens:
        pos += len(t.token)
        if pos > start:
            kept.append(t)
    return tuple(kept)


def all_choices(responses: list[Response]) -> list[Choice]:
    return [c for r in responses for c in r.choices]


def reply_texts(responses: list[Response]) -> list[str]:
    return [c.text for c in all_choices(responses)]


def raw_of(texts: list[str]) -> str:
    """One reply is kept as its text; several as a JSON list (the judgments table convention)."""
    if len(texts) == 1:
        return texts[0]
    return json.dumps(texts, ensure_ascii=False)


def ok(value: float, estimator: str, *, raw: str = "", reason: str = "", verdict: str | None = None,
       detail: dict[str, Any] | None = None) -> Outcome:
    return Outcome(
        value=float(value),
        status=STATUS_OK,
        reason=reason,
        estimator=estimator,
        verdict=verdict,
        raw=raw,
        detail=detail or {},
    )


def failed(reason: str, estimator: str = "", *, raw: str = "", detail: dict[str, Any] | None = None) -> Outcome:
    return Outcome(value=None, status=STATUS_FAILED, reason=reason, estimator=estimator, raw=raw, detail=detail or {})


def token_alternatives(tl: TokenLogprob) -> dict[str, float]:
    """Token text -> probability at one generated position: the top alternatives plus the generated token."""
    alts: dict[str, float] = {}
    for tok, lp in tl.top:
        if lp is None:
            continue
        alts[tok] = max(alts.get(tok, 0.0), math.exp(lp))
    if tl.logprob is not None and tl.token not in alts:
        alts[tl.token] = math.exp(tl.logprob)
    return alts


def outcome_from_parsed(parsed: Parsed, estimator: str, raw: str, *, detail: dict[str, Any] | None = None,
                        transform: Callable[[float], float] | None = None) -> Outcome:
    """An Outcome from a ``parsers.Parsed``: failures keep the parser's reason, paper-mode notes are kept too."""
    if not parsed.ok or parsed.value is None:
        return failed(parsed.reason or "no score found in reply", estimator, raw=raw, detail=detail)
    value = transform(parsed.value) if transform else parsed.value
    return ok(value, estimator, raw=raw, reason=parsed.reason, detail=detail)


def item_prompt(task: ItemTask | PairTask | None, criteria: Criteria, config: PromptLabels,
                extra: dict[str, str] | None = None) -> str:
    """The prompt for one task: the config's per-dimension paper prompt when it has one, else its generic template
    (the ``template`` field every method config that fills its prompt here declares; PromptLabels has none)."""
    template = dimension_prompt(getattr(config, "prompts", {}) or {}, criteria.dimension) or getattr(config, "template")
    values = slot_values(task, criteria, config)
    if extra:
        values.update({k: fill(v, values) for k, v in extra.items()})
    return fill(template, values)


def scale_values(criteria: Criteria) -> list[int]:
    lo, hi = int(criteria.scale_min), int(criteria.scale_max)
    if hi < lo:
        raise ValueError(
            f"criteria for {criteria.dimension!r}: scale_max {criteria.scale_max} is below scale_min {criteria.scale_min}"
        )
    return list(range(lo, hi + 1))


def dimension_prompt(prompts: dict[str, str], dimension: str) -> str | None:
    """A per-dimension full template (a paper's exact prompt) if the config holds one for this dimension."""
    if not prompts:
        return None
    if dimension in prompts:
        return prompts[dimension]
    low = dimension.lower()
    for k, v in prompts.items():
        if k.lower() == low:
            return v
    return None


__all__ = [
    "CAPABILITY_NAMES",
    "Method",
    "PromptLabels",
    "SamplingPlan",
    "all_choices",
    "BUDGET_SPENT_REASONING",
    "SeparatedReplies",
    "separate_reasoning",
    "block",
    "chat",
    "ChatParams",
    "config_json",
    "dimension_prompt",
    "failed",
    "fill",
    "load_config",
    "item_prompt",
    "outcome_from_parsed",
    "token_alternatives",
    "number_word",
    "ok",
    "placeholder_pair",
    "placeholder_task",
    "raw_of",
    "reply_texts",
    "request_text",
    "sample_requests",
    "sampling_note",
    "scale_values",
    "slot_values",
]
