"""Explicit Score (002, Chen et al. 2023, §2.1): the judge writes a number for the text, by default on 0-100
("on a continual scale from 0 (worst) to 100 (best)", 002 App. A, prompt V1), whatever scale the humans used
(rank correlations do not care). 002 recommends greedy decoding (§4.1); ``decoding="sampling"`` reproduces its
"ChatGPT (sampling)" rows (temperature 1, top_p 1; with ``n_samples`` > 1 the parsed samples are averaged, as 002
did for prompt V5). Replies are read by ``parsers.parse_explicit``.

For FED, ``presets.config_for("explicit", "fed_dialogue")`` puts 002's exact prompts in ``prompts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from evalcore import parsers
from evalcore.registry import register_method
from evalcore.types import Capabilities, Criteria, ItemTask, Outcome, Request, Response
from evalcore.methods.base import (
    PromptLabels,
    SamplingPlan,
    chat,
    failed,
    item_prompt,
    load_config,
    ok,
    outcome_from_parsed,
    raw_of,
    reply_texts,
    sample_requests,
    sampling_note,
)

EXPLICIT_TEMPLATE = (
    "Score the following {output_label_lc}{given_clause_lc} with respect to {dimension} on a continual scale from "
    '{scale_min} (worst) to {scale_max} (best), where a score of {scale_min} means "{low_anchor}" and a score of '
    '{scale_max} means "{high_anchor}". Note that {dimension} refers to {definition}\n\n'
    "{source_block}{context_block}{output_block}Score:"
)


@dataclass(frozen=True)
class ExplicitConfig(PromptLabels):
    template: str = EXPLICIT_TEMPLATE
    prompts: dict[str, str] = field(default_factory=dict)  # per-dimension exact prompts (002's for FED)
    scale_min: int | None = 0  # None: the criteria's scale
    scale_max: int | None = 100
    low_anchor: str = "The {output_label_lc} has no {dimension} at all"
    high_anchor: str = "The {output_label_lc} has perfect {dimension}"
    decoding: str = "greedy"  # "greedy" | "sampling"
    n_samples: int = 1  # with sampling
    samples_per_request: int = 1
    temperature: float = 1.0  # with sampling (ChatGPT's defaults)
    top_p: float = 1.0
    max_tokens: int = 32

    @property
    def estimator(self) -> str:
        if self.decoding == "greedy":
            return "greedy"
        return "sampled" if self.n_samples == 1 else f"sample-mean(n={self.n_samples})"


def explicit_criteria(criteria: Criteria, config: ExplicitConfig) -> Criteria:
    """The criteria with the scale the judge is asked to use (0-100 by default, not the human scale)."""
    lo = criteria.scale_min if config.scale_min is None else config.scale_min
    hi = criteria.scale_max if config.scale_max is None else config.scale_max
    return replace(criteria, scale_min=lo, scale_max=hi)


class Explicit:
    name = "explicit"
    label = "Explicit Score (Chen et al. 2023)"
    paper = "002"
    pairwise = False
    parser = "explicit"

    def default_config(self) -> ExplicitConfig:
        return ExplicitConfig()

    def load_config(self, data: dict[str, Any] | None) -> ExplicitConfig:
        return load_config(ExplicitConfig, data)

    def requirements(self, config: ExplicitConfig) -> set[str]:
        if config.decoding == "sampling" and config.n_samples > 1 and config.samples_per_request > 1:
            return {"n"}
        return set()

    def plan(self, config: ExplicitConfig, caps: Capabilities) -> tuple[ExplicitConfig, str]:
        if config.decoding == "sampling" and config.n_samples > 1 and config.samples_per_request > 1:
            per, note = sampling_note(config.n_samples, caps)
            if per == 1:
                return replace(config, samples_per_request=1), note
        return config, ""

    def build_requests(self, task: ItemTask, criteria: Criteria, config: ExplicitConfig) -> list[Request]:
        crit = explicit_criteria(criteria, config)
        prompt = item_prompt(task, crit, config, {"low_anchor": config.low_anchor, "high_anchor": config.high_anchor})
        if config.decoding == "greedy":
            return [chat(prompt, config, temperature=0.0, max_tokens=config.max_tokens)]
        if config.decoding != "sampling":
            raise ValueError(f"decoding must be 'greedy' or 'sampling', not {config.decoding!r}")
        plan = SamplingPlan(
            n=config.n_samples,
            per_request=config.samples_per_request,
            temperature=config.temperature,
            top_p=config.top_p,
            max_tokens=config.max_tokens,
        )
        return list(sample_requests(prompt, config, plan))

    def score(self, task: ItemTask, criteria: Criteria, config: ExplicitConfig, responses: list[Response], *,
              parse_mode: str = "robust") -> Outcome:
        texts = reply_texts(responses)
        if not texts:
            return failed("no reply from the endpoint", config.estimator)
        crit = explicit_criteria(criteria, config)
        scale = (crit.scale_min, crit.scale_max)
        if config.decoding == "greedy" or len(texts) == 1:
            parsed = parsers.parse_explicit(texts[0], scale, mode=parse_mode)
            return outcome_from_parsed(parsed, config.estimator, raw_of(texts[:1]))
        parsed_all = [parsers.parse_explicit(t, scale, mode=parse_mode) for t in texts]
        result = parsers.sample_mean(parsed_all, mode=parse_mode)
        detail = {"n_received": len(texts), "n_parsed": sum(1 for p in parsed_all if p.ok)}
        estimator = f"sample-mean(n={len(texts)})"
        if not result.ok or result.value is None:
            return failed(result.reason or "no sample could be parsed", estimator, raw=raw_of(texts), detail=detail)
        return ok(result.value, estimator, raw=raw_of(texts), reason=result.reason, detail=detail)


METHOD = register_method(Explicit())  # the one instance every caller shares (evalcore.registry)
