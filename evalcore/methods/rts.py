"""Reason-then-Score, RTS (003, Shen et al. 2023, §3.1 and Table 1): the judge gives a one-sentence reason, then a
score on the human scale (1-5 for SummEval). Greedy decoding and a fresh conversation per item (003 §4.1:
temperature 0, history reset).

On SummEval, ``presets.config_for("rts", "summeval")`` puts 003's exact prompts in ``prompts`` (one per
dimension). Elsewhere the generic template below follows the same sentence pattern, filled from the ``Criteria``.
Replies are read by ``parsers.parse_rts``; its "paper" mode reproduces Shen's released parser (nothing found -> -1,
kept), the default "robust" mode counts such a reply as a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalcore import parsers
from evalcore.registry import register_method
from evalcore.types import Capabilities, Criteria, ItemTask, Outcome, Request, Response
from evalcore.methods.base import (
    PromptLabels,
    chat,
    failed,
    item_prompt,
    load_config,
    outcome_from_parsed,
    raw_of,
    reply_texts,
    scale_values,
)

RTS_TEMPLATE = (
    "Score the following {output_label}{given_clause} with respect to {dimension} from {scale_min_word} to "
    '{scale_max_word}, where {scale_min_word} indicates "{low_anchor}" and {scale_max_word} indicates '
    '"{high_anchor}". Note that {dimension} measures {definition}\n\n'
    "{source_block}{context_block}{output_block}"
    "Provide your reason in one sentence, then give a final score:"
)


@dataclass(frozen=True)
class RTSConfig(PromptLabels):
    template: str = RTS_TEMPLATE
    prompts: dict[str, str] = field(default_factory=dict)  # per-dimension exact prompts (003's for SummEval)
    low_anchor: str = "no {dimension}"  # 003 writes e.g. "incoherence" / "perfect coherence"
    high_anchor: str = "perfect {dimension}"
    temperature: float = 0.0  # 003 §4.1
    max_tokens: int = 256

    @property
    def estimator(self) -> str:
        return "greedy" if self.temperature == 0 else f"sampled(T={self.temperature:g})"


class RTS:
    name = "rts"
    label = "Reason-then-Score (Shen et al. 2023)"
    paper = "003"
    pairwise = False
    parser = "rts"

    def default_config(self) -> RTSConfig:
        return RTSConfig()

    def load_config(self, data: dict[str, Any] | None) -> RTSConfig:
        return load_config(RTSConfig, data)

    def requirements(self, config: RTSConfig) -> set[str]:
        return set()

    def plan(self, config: RTSConfig, caps: Capabilities) -> tuple[RTSConfig, str]:
        return config, ""

    def build_requests(self, task: ItemTask, criteria: Criteria, config: RTSConfig) -> list[Request]:
        scale_values(criteria)
        prompt = item_prompt(
            task, criteria, config, {"low_anchor": config.low_anchor, "high_anchor": config.high_anchor}
        )
        return [chat(prompt, config, temperature=config.temperature, max_tokens=config.max_tokens)]

    def score(self, task: ItemTask, criteria: Criteria, config: RTSConfig, responses: list[Response], *,
              parse_mode: str = "robust") -> Outcome:
        texts = reply_texts(responses)
        if not texts:
            return failed("no reply from the endpoint", config.estimator)
        parsed = parsers.parse_rts(texts[0], (criteria.scale_min, criteria.scale_max), mode=parse_mode)
        return outcome_from_parsed(parsed, config.estimator, raw_of(texts[:1]))


METHOD = register_method(RTS())  # the one instance every caller shares (evalcore.registry)
