"""MCQ scoring (003, Shen et al. 2023, §3.1 and Table 2): the judge picks one option A-E, each a fixed reason with
its score ("A: The Summary is completely incoherent. Score: One."); A = 1 .. E = 5. Greedy, fresh conversation.

On SummEval, ``presets.config_for("mcq", "summeval")`` puts 003's exact prompts in ``prompts``. Elsewhere the
generic template offers one option per scale point (A = scale minimum), worded from ``option_levels``.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any

from evalcore import parsers
from evalcore.registry import register_method
from evalcore.types import Capabilities, Criteria, ItemTask, Outcome, Request, Response
from evalcore.methods.base import (
    PromptLabels,
    chat,
    dimension_prompt,
    failed,
    item_prompt,
    load_config,
    number_word,
    outcome_from_parsed,
    raw_of,
    reply_texts,
    scale_values,
)

MCQ_TEMPLATE = (
    "Choose an option from A to {last_letter} in order to score the following {output_label}{given_clause} with "
    "respect to {dimension} from {scale_min_word} to {scale_max_word}. Note that {dimension} measures {definition}"
    "\n\n{source_block}{context_block}{output_block}"
    "{options}\n\nYour Answer (enter 1 letter from A to {last_letter}):"
)

# wording of the generic options, lowest first, by number of scale points
DEFAULT_LEVELS: dict[int, tuple[str, ...]] = {
    2: ("poor", "good"),
    3: ("poor", "fair", "good"),
    4: ("very poor", "poor", "good", "very good"),
    5: ("very poor", "poor", "fair", "good", "excellent"),
}


@dataclass(frozen=True)
class MCQConfig(PromptLabels):
    template: str = MCQ_TEMPLATE
    prompts: dict[str, str] = field(default_factory=dict)  # per-dimension exact prompts (003's for SummEval)
    option_template: str = "The {output_label} is {level} in terms of {dimension}. Score: {score_word}."
    temperature: float = 0.0  # 003 §4.1
    max_tokens: int = 32

    @property
    def estimator(self) -> str:
        return "greedy" if self.temperature == 0 else f"sampled(T={self.temperature:g})"


def option_letters(criteria: Criteria, config: MCQConfig) -> str:
    """A..E for 003's prompts; one letter per scale point for the generic template."""
    if dimension_prompt(config.prompts, criteria.dimension) is not None:
        return "ABCDE"
    n = len(scale_values(criteria))
    if n > 26:
        raise ValueError(f"MCQ needs at most 26 scale points; {criteria.dimension!r} has {n}")
    return string.ascii_uppercase[:n]


def options_text(criteria: Criteria, config: MCQConfig) -> str:
    values = scale_values(criteria)
    levels = DEFAULT_LEVELS.get(len(values)) or tuple(f"at level {v}" for v in values)
    lines = []
    for letter, level, v in zip(string.ascii_uppercase, levels, values):
        text = (config.option_template.replace("{level}", level).replace("{score_word}", number_word(v).capitalize()))
        lines.append(f"{letter}: {text}")
    return "\n".join(lines)


class MCQ:
    name = "mcq"
    label = "MCQ scoring (Shen et al. 2023)"
    paper = "003"
    pairwise = False
    parser = "mcq"

    def default_config(self) -> MCQConfig:
        return MCQConfig()

    def load_config(self, data: dict[str, Any] | None) -> MCQConfig:
        return load_config(MCQConfig, data)

    def requirements(self, config: MCQConfig) -> set[str]:
        return set()

    def plan(self, config: MCQConfig, caps: Capabilities) -> tuple[MCQConfig, str]:
        return config, ""

    def build_requests(self, task: ItemTask, criteria: Criteria, config: MCQConfig) -> list[Request]:
        letters = option_letters(criteria, config)
        prompt = item_prompt(
            task, criteria, config, {"options": options_text(criteria, config), "last_letter": letters[-1]}
        )
        return [chat(prompt, config, temperature=config.temperature, max_tokens=config.max_tokens)]

    def score(self, task: ItemTask, criteria: Criteria, config: MCQConfig, responses: list[Response], *,
              parse_mode: str = "robust") -> Outcome:
        texts = reply_texts(responses)
        if not texts:
            return failed("no reply from the endpoint", config.estimator)
        letters = option_letters(criteria, config)
        parsed = parsers.parse_mcq(texts[0], letters, mode=parse_mode)
        offset = criteria.scale_min - 1

        def to_scale(v: float) -> float:
            # parse_mcq gives A=1 .. ; the option for letter k is scale point scale_min + k - 1. A value outside
            # 1..len (a paper-mode sentinel) is passed through unchanged.
            return v + offset if 1 <= v <= len(letters) else v

        return outcome_from_parsed(parsed, config.estimator, raw_of(texts[:1]), transform=to_scale)


METHOD = register_method(MCQ())  # the one instance every caller shares (evalcore.registry)
