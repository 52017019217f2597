"""G-Eval (000, Liu et al. 2023): auto chain-of-thought evaluation steps, a form-filling prompt, and the
probability-weighted score of Eq. 1, score = sum_i p(s_i) * s_i.

The prompt (000 Appendix A) is: task introduction, "Evaluation Criteria:", "Evaluation Steps:" (generated once per
criteria by ``steps_request``/``parse_steps``, then editable), the texts, and "Evaluation Form (scores ONLY):
- <Dimension>:".

p(s_i) comes from one of three estimators, recorded in ``Outcome.estimator``:

* ``logprob-weighted``: one greedy reply with ``top_logprobs`` alternatives. At the position where the score is
  written (the first generated token that begins with a digit: "Coherence: 4" skips "Co", "herence", ":"), keep
  the alternatives that are valid scale values (spaces stripped, " 4" and "4" pooled), renormalise, weigh.
* ``sample-mean(n=20)``: what 000 did for GPT-4, which gave no log-probs: n = 20 samples at temperature 1, top_p 1,
  each parsed with ``parsers.parse_form_score``, averaged by ``parsers.sample_mean`` (the same estimator with
  empirical probabilities). ``plan`` switches to it when the endpoint returns no log-probs.
* ``greedy``: the -Probs ablation of 000 Table 1, one greedy reply parsed.

Multi-token scale values (0-100 with a tokenizer that writes "85" as "8", "5") need the probability of the whole
number, the product along its tokens. The API only shows the top-k alternatives at each generated position, so only
the chain along the *generated* path is observed:

    p("85") = p("8" at the score position) * p("5" | "8")         (observed: "8" was generated)
    p("8")  = p("8") * p(the number ends after "8")                (end = a non-digit alternative after "8")
    p("75") = ?                                                     ("7" was not generated: its continuation unseen)

``unseen_continuation="drop"`` (default) leaves such prefixes out and reports their probability as
``unresolved_mass``: the distribution is exact for what it covers, conditional on the covered values.
``"assume-same"`` gives an unseen prefix the continuation distribution observed after the generated one (p("75") =
p("7") * p("5" | "8")): an assumption, labelled in the detail, that keeps the uncertainty over the leading digit.
A value that is complete and cannot be extended into another valid value ("4" on 1-5) needs no continuation.
Probability mass beyond the top-k is never seen; ``covered_mass`` says how much of the total the weighting rests on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from evalcore import parsers
from evalcore.registry import register_method
from evalcore.types import (
    Capabilities,
    ChatRequest,
    Choice,
    Criteria,
    ItemTask,
    Outcome,
    Request,
    Response,
    TokenLogprob,
)
from evalcore.methods.base import (
    PromptLabels,
    SamplingPlan,
    all_choices,
    chat,
    failed,
    fill,
    load_config,
    ok,
    raw_of,
    sample_requests,
    sampling_note,
    scale_values,
    slot_values,
    token_alternatives,
)

ESTIMATOR_LOGPROBS = "logprob-weighted"
ESTIMATOR_GREEDY = "greedy"


@dataclass(frozen=True)
class GEvalConfig(PromptLabels):
    # G-Eval's own labels and layout (000 Appendix A: "Source Text:\n\n{{Document}}")
    source_label: str = "Source Text"
    output_label: str = "Summary"
    block_format: str = "{label}:\n\n{text}"
    use_probs: bool = True  # False = -Probs ablation: one greedy reply, parsed
    use_steps: bool = True  # False = -CoT ablation: no "Evaluation Steps" section
    use_description: bool = True  # False = -Description ablation: criteria reduced to "<Dimension> (lo-hi)"
    probs_source: str = "logprobs"  # "logprobs" | "samples"; plan() switches to samples without log-probs
    top_logprobs: int = 20  # the OpenAI maximum
    max_tokens: int = 5  # the released script's value; room for "Coherence: 4" or a 3-digit number
    n_samples: int = 20  # 000 §3.1: n = 20 for GPT-4
    samples_per_request: int = 20  # 1 when the endpoint ignores n (plan sets it)
    sample_temperature: float = 1.0  # 000 §3.1 (the released script used 2)
    sample_top_p: float = 1.0
    unseen_continuation: str = "drop"  # multi-token values: "drop" | "assume-same" (see module doc)
    criteria_line: str = "{Dimension} ({scale_min}-{scale_max}) - {definition}"
    # 000's fluency prompt shows only the summary, not the article
    omit_source_for: tuple[str, ...] = ("fluency",)

    @property
    def estimator(self) -> str:
        if not self.use_probs:
            return ESTIMATOR_GREEDY
        if self.probs_source == "samples":
            return f"sample-mean(n={self.n_samples})"
        return ESTIMATOR_LOGPROBS


# ----------------------------------------------------------------------------------------------------------------
# prompts

STEPS_TEMPLATE = """{task_introduction}

Evaluation Criteria:

{criteria}

Evaluation Steps:"""

FORM_TEMPLATE = """{task_introduction}

Evaluation Criteria:

{criteria}

{steps_section}
Example:


{source_block}{context_block}{output_block}
Evaluation Form (scores ONLY):

- {Dimension}:"""


def criteria_text(criteria: Criteria, config: GEvalConfig, *, use_description: bool = True) -> str:
    values = slot_values(None, criteria, config)
    if not use_description:
        # -Description (000 Table 1): the definition is removed; the name and scale stay so the form can be filled
        return fill("{Dimension} ({scale_min}-{scale_max})", values)
    return fill(config.criteria_line, values)


def steps_request(criteria: Criteria, config: GEvalConfig | None = None) -> ChatRequest:
    """The auto-CoT request (000 §2): task introduction + evaluation criteria, ending with "Evaluation Steps:",
    for the model to write the steps. Greedy, so the steps are reproducible and cacheable."""
    config = config or GEvalConfig()
    prompt = fill(
        STEPS_TEMPLATE,
        {"task_introduction": criteria.task_introduction.strip(), "criteria": criteria_text(criteria, config)},
    )
    return chat(prompt, config, temperature=0.0, max_tokens=512)


_STEP_LINE = re.compile(r"^\s*(?:step\s*)?(\d+)\s*[.):]\s*(.+)$", re.IGNORECASE)
_STOP = re.compile(r"^\s*(example|evaluation form|source text|summary)\s*:", re.IGNORECASE)


def parse_steps(text: str) -> str:
    """The numbered evaluation steps from an auto-CoT reply, one per line ("1. ...").

    An echoed "Evaluation Steps:" header, preambles and anything after the steps ("Example:", a filled form) are
    dropped; a reply without numbered lines is kept as written (stripped). Raises ValueError on an empty reply.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    steps: list[str] = []
    started = False
    for line in lines:
        if started and _STOP.match(line):
            break
        m = _STEP_LINE.match(line)
        if m:
            started = True
            steps.append(f"{len(steps) + 1}. {m.group(2).strip()}")
        elif started and line.strip() and steps:
            # a wrapped continuation line of the previous step
            steps[-1] = steps[-1] + " " + line.strip()
    if steps:
        return "\n".join(steps)
    cleaned = re.sub(r"^\s*evaluation steps:\s*", "", text.strip(), flags=re.IGNORECASE).strip()
    if not cleaned:
        raise ValueError("the auto-CoT reply holds no evaluation steps (empty reply)")
    return cleaned


def form_prompt(task: ItemTask | None, criteria: Criteria, config: GEvalConfig) -> str:
    values = slot_values(task, criteria, config)
    if criteria.dimension.lower() in {d.lower() for d in config.omit_source_for}:
        values["source_block"] = ""
    steps = criteria.steps.strip()
    values["criteria"] = criteria_text(criteria, config, use_description=config.use_description)
    values["steps_section"] = f"Evaluation Steps:\n\n{steps}\n\n" if (config.use_steps and steps) else ""
    return fill(FORM_TEMPLATE, values)


# ----------------------------------------------------------------------------------------------------------------
# Eq. 1 from log-probs


@dataclass(frozen=True)
class ScoreDistribution:
    probabilities: dict[int, float]  # renormalised over the resolved valid values
    covered_mass: float  # probability of the resolved values before renormalising
    unresolved_mass: float  # valid prefixes whose continuation was not observed (dropped)
    position: int  # index of the generated token where the score starts
    token: str  # that token
    assumed_mass: float = 0.0  # with "assume-same": mass given a continuation copied from the generated path

    @property
    def expected(self) -> float:
        return sum(p * v for v, p in self.probabilities.items())


def _norm(token: str) -> str:
    # SentencePiece / byte-level BPE markers some servers leave in token texts
    if token[:1] in ("\u2581", "\u0120"):
        return " " + token[1:]
    return token


_DIGITS = re.compile(r"\d+")


def score_position(tokens: tuple[TokenLogprob, ...] | list[TokenLogprob]) -> int | None:
    """The first generated token that begins (after whitespace) with a digit: where the score is written."""
    for i, tl in enumerate(tokens):
        if _norm(tl.token).lstrip()[:1].isdigit():
            return i
    return None


@dataclass
class _Step:
    """What one token position contributes: mass per value string, mass that reaches no value, the alternatives
    off the generated path (``unseen``), and the generated path's own continuation (``gen_string``, ``gen_sub``)."""

    mass: dict[str, float] = field(default_factory=dict)
    unresolved: float = 0.0
    unseen: list[tuple[str, float]] = field(default_factory=list)
    gen_string: str | None = None
    gen_sub: dict[str, float] = field(default_factory=dict)

    def add(self, value: str, p: float) -> None:
        self.mass[value] = self.mass.get(value, 0.0) + p


class _Resolver:
    """The chain rule along the generated path (see the module docstring): the probability of each scale value's
    string, token by token from the score position; ``assumed`` sums the mass "assume-same" gave."""

    def __init__(self, tokens: tuple[TokenLogprob, ...] | list[TokenLogprob], values: list[int],
                 unseen_continuation: str) -> None:
        self.tokens = tokens
        self.value_strs = {str(v): v for v in values}
        self.unseen_continuation = unseen_continuation
        self.assumed = 0.0

    def is_value(self, s: str) -> bool:
        return s in self.value_strs

    def extendable(self, s: str) -> bool:
        return any(v != s and v.startswith(s) for v in self.value_strs)

    def resolve(self, i: int, prefix: str, prob: float) -> tuple[dict[str, float], float]:
        """(mass per value string, unresolved mass) of the numbers that continue ``prefix`` (reached with
        probability ``prob``) at token ``i``."""
        step = _Step()
        for raw, p in token_alternatives(self.tokens[i]).items():
            self._alternative(step, i, prefix, raw, prob * p)
        self._unseen(step)
        return step.mass, step.unresolved

    def _alternative(self, step: _Step, i: int, prefix: str, raw: str, q: float) -> None:
        """One alternative token ``raw`` at position ``i``, reached with probability ``q``."""
        t = _norm(raw)
        if not prefix:
            t = t.lstrip()
        m = _DIGITS.match(t)
        if not m:
            if prefix and self.is_value(prefix):
                # a non-digit after the digits so far: the number ends here
                step.add(prefix, q)
            return  # at the score position a non-digit alternative ("Hello") is no scale value
        s = prefix + m.group()
        ends_inside = len(m.group()) < len(t)  # "4." or "4\n" in one token
        if ends_inside or not self.extendable(s):
            if self.is_value(s):
                step.add(s, q)
            return  # "7" on 1-5, "105" on 0-100: not a scale value
        # s is a proper prefix of a longer valid value
        generated = raw == self.tokens[i].token
        if generated and i + 1 < len(self.tokens):
            sub, sub_unresolved = self.resolve(i + 1, s, q)
            step.gen_string, step.gen_sub = s, sub
            for k, v in sub.items():
                step.add(k, v)
            step.unresolved += sub_unresolved
        elif generated:
            # the reply ends right after this token: the number ended here
            if self.is_value(s):
                step.add(s, q)
            else:
                step.unresolved += q
        else:
            step.unseen.append((s, q))

    def _unseen(self, step: _Step) -> None:
        """The alternatives off the generated path: unresolved ("drop"), or continued as the generated path was
        ("assume-same")."""
        if self.unseen_continuation == "assume-same" and step.gen_string is not None and step.gen_sub:
            total = sum(step.gen_sub.values())
            suffixes = {k[len(step.gen_string):]: v / total for k, v in step.gen_sub.items()}
            for s, p in step.unseen:
                for suffix, q in suffixes.items():
                    v = s + suffix
                    if self.is_value(v):
                        step.add(v, p * q)
                        self.assumed += p * q
                    else:
                        step.unresolved += p * q
        else:
            step.unresolved += sum(p for _, p in step.unseen)


def score_distribution(
    tokens: tuple[TokenLogprob, ...] | list[TokenLogprob],
    values: list[int],
    *,
    unseen_continuation: str = "drop",
) -> ScoreDistribution | str:
    """p(s) for each valid scale value from a reply's token log-probs, or a string saying why there is none.

    See the module docstring for the chain rule along the generated path and the two treatments of unseen
    continuations.
    """
    if unseen_continuation not in ("drop", "assume-same"):
        raise ValueError(f"unseen_continuation must be 'drop' or 'assume-same', not {unseen_continuation!r}")
    pos = score_position(tokens)
    if pos is None:
        return "no score in the reply (no generated token begins with a digit)"
    resolver = _Resolver(tokens, values, unseen_continuation)
    mass, unresolved = resolver.resolve(pos, "", 1.0)
    covered = sum(mass.values())
    if covered <= 0.0:
        return (
            f"no valid scale value ({values[0]}-{values[-1]}) among the top alternatives at the score position "
            f"(token {tokens[pos].token!r})"
        )
    value_of = resolver.value_strs
    probs = {value_of[k]: v / covered for k, v in sorted(mass.items(), key=lambda kv: value_of[kv[0]])}
    return ScoreDistribution(
        probabilities=probs,
        covered_mass=covered,
        unresolved_mass=unresolved,
        position=pos,
        token=tokens[pos].token,
        assumed_mass=resolver.assumed,
    )


# ----------------------------------------------------------------------------------------------------------------
# the method


class GEval:
    name = "geval"
    label = "G-Eval (Liu et al. 2023)"
    paper = "000"
    pairwise = False
    parser = "form"

    def default_config(self) -> GEvalConfig:
        return GEvalConfig()

    def load_config(self, data: dict[str, Any] | None) -> GEvalConfig:
        return load_config(GEvalConfig, data)

    def requirements(self, config: GEvalConfig) -> set[str]:
        if not config.use_probs:
            return set()
        if config.probs_source == "samples":
            return {"n"} if config.samples_per_request > 1 else set()
        return {"logprobs", "top_logprobs"}

    def plan(self, config: GEvalConfig, caps: Capabilities) -> tuple[GEvalConfig, str]:
        if not config.use_probs:
            return config, ""
        notes: list[str] = []
        if config.probs_source == "logprobs":
            if caps.chat_logprobs and caps.top_logprobs >= 2:
                if caps.top_logprobs < config.top_logprobs:
                    notes.append(f"endpoint returns at most {caps.top_logprobs} alternatives: top_logprobs lowered")
                    config = replace(config, top_logprobs=caps.top_logprobs)
                return config, "; ".join(notes)
            why = "log-probs unavailable" if not caps.chat_logprobs else "no top log-prob alternatives"
            config = replace(config, probs_source="samples")
            notes.append(f"{why}: {config.n_samples}-sample fallback (Liu et al. 2023, §3.1)")
        if not caps.honours_n and config.samples_per_request > 1:
            _, note = sampling_note(config.n_samples, caps)
            config = replace(config, samples_per_request=1)
            notes.append(note)
        return config, "; ".join(notes)

    def build_requests(self, task: ItemTask, criteria: Criteria, config: GEvalConfig) -> list[Request]:
        scale_values(criteria)  # validates the scale
        prompt = form_prompt(task, criteria, config)
        if not config.use_probs:
            return [chat(prompt, config, temperature=0.0, max_tokens=config.max_tokens)]
        if config.probs_source == "samples":
            plan = SamplingPlan(
                n=config.n_samples,
                per_request=config.samples_per_request,
                temperature=config.sample_temperature,
                top_p=config.sample_top_p,
                max_tokens=config.max_tokens,
            )
            return list(sample_requests(prompt, config, plan))
        if config.probs_source != "logprobs":
            raise ValueError(f"probs_source must be 'logprobs' or 'samples', not {config.probs_source!r}")
        return [
            chat(
                prompt,
                config,
                temperature=0.0,
                max_tokens=config.max_tokens,
                logprobs=True,
                top_logprobs=config.top_logprobs,
            )
        ]

    def score(
        self,
        task: ItemTask,
        criteria: Criteria,
        config: GEvalConfig,
        responses: list[Response],
        *,
        parse_mode: str = "robust",
    ) -> Outcome:
        estimator = config.estimator
        choices = all_choices(responses)
        texts = [c.text for c in choices]
        raw = raw_of(texts)
        scale = (criteria.scale_min, criteria.scale_max)
        if not choices:
            return failed("no reply from the endpoint", estimator)
        if not config.use_probs:
            parsed = parsers.parse_form_score(texts[0], scale, mode=parse_mode)
            if not parsed.ok or parsed.value is None:
                return failed(parsed.reason or "no score found in reply", estimator, raw=raw)
            return ok(parsed.value, estimator, raw=raw, reason=parsed.reason)
        if config.probs_source == "samples":
            return self._sample_mean(texts, scale, config, parse_mode, raw)
        return self._weighted(choices[0], criteria, config, raw)

    @staticmethod
    def _sample_mean(texts: list[str], scale: tuple[int, int], config: GEvalConfig, parse_mode: str,
                     raw: str) -> Outcome:
        """The mean of the sampled replies' scores, with how many samples said what."""
        parsed_all = [parsers.parse_form_score(t, scale, mode=parse_mode) for t in texts]
        result = parsers.sample_mean(parsed_all, mode=parse_mode)
        counts: dict[str, int] = {}
        for p in parsed_all:
            key = "unparsed" if not p.ok else f"{p.value:g}"
            counts[key] = counts.get(key, 0) + 1
        detail = {
            "sample_counts": counts,
            "n_requested": config.n_samples,
            "n_received": len(texts),
            "n_parsed": sum(1 for p in parsed_all if p.ok),
        }
        # the estimator names the samples actually received, which an endpoint may cut short
        estimator = f"sample-mean(n={len(texts)})"
        if not result.ok or result.value is None:
            return failed(result.reason or "no sample could be parsed", estimator, raw=raw, detail=detail)
        return ok(result.value, estimator, raw=raw, reason=result.reason, detail=detail)

    @staticmethod
    def _weighted(choice: Choice, criteria: Criteria, config: GEvalConfig, raw: str) -> Outcome:
        """The log-prob weighted score (Eq. 1) from the reply's score distribution."""
        estimator = config.estimator
        if choice.tokens is None:
            return failed("endpoint returned no log-probs", estimator, raw=raw)
        if not choice.tokens:
            return failed("reply has no tokens", estimator, raw=raw)
        dist = score_distribution(
            choice.tokens, scale_values(criteria), unseen_continuation=config.unseen_continuation
        )
        if isinstance(dist, str):
            return failed(dist, estimator, raw=raw)
        detail = {
            "distribution": {str(k): v for k, v in dist.probabilities.items()},
            "covered_mass": dist.covered_mass,
            "unresolved_mass": dist.unresolved_mass,
            "score_token": dist.token,
            "score_position": dist.position,
            "top_k": len(choice.tokens[dist.position].top),
        }
        if config.unseen_continuation == "assume-same":
            detail["assumed_mass"] = dist.assumed_mass
        return ok(dist.expected, estimator, raw=raw, detail=detail)


METHOD = register_method(GEval())  # the one instance every caller shares (evalcore.registry)
