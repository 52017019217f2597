"""Pairwise Comparison (002, Chen et al. 2023, §2.2): two texts for the same input, options "(A) text 1, (B) text 2,
(C) both equally good", the prompt ending in "Answer: I will choose Option". Greedy by default; 002 also reports
sampling (``decoding="sampling"``).

Tasks are ``PairTask``s, one per presentation order (the engine runs both orders); the outcome is the verdict for
this order, "first" / "second" / "tie", with value 1 / 0 / 0.5 for the first text presented.
For FED, ``presets.config_for("pairwise", "fed_dialogue")`` puts 002's exact prompts in ``prompts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalcore.registry import register_method
from evalcore.types import Capabilities, Criteria, Outcome, PairTask, Request, Response
from evalcore.methods._pairs import pair_outcome
from evalcore.methods.base import PromptLabels, chat, item_prompt, load_config

PAIRWISE_TEMPLATE = (
    "Consider the following two {outputs_label_lc}{given_clause_lc}:\n\n"
    "{source_block}{context_block}{first_block}{second_block}"
    "Question: Which {output_label_lc} is better in terms of {dimension}? Note that {dimension} refers to "
    "{definition} Please answer with one of the following options.\n\n"
    "Options:\n(A) {output_label}-1\n(B) {output_label}-2\n"
    "(C) Both {outputs_label_lc} are equally good in terms of {dimension}.\n\n"
    "Answer: I will choose Option"
)


@dataclass(frozen=True)
class PairwiseConfig(PromptLabels):
    template: str = PAIRWISE_TEMPLATE
    prompts: dict[str, str] = field(default_factory=dict)  # per-dimension exact prompts (002's for FED)
    decoding: str = "greedy"  # "greedy" | "sampling"
    temperature: float = 1.0  # with sampling
    top_p: float = 1.0
    max_tokens: int = 16

    @property
    def estimator(self) -> str:
        return "greedy" if self.decoding == "greedy" else "sampled"


class Pairwise:
    name = "pairwise"
    label = "Pairwise Comparison (Chen et al. 2023)"
    paper = "002"
    pairwise = True
    parser = "pairwise"

    def default_config(self) -> PairwiseConfig:
        return PairwiseConfig()

    def load_config(self, data: dict[str, Any] | None) -> PairwiseConfig:
        return load_config(PairwiseConfig, data)

    def requirements(self, config: PairwiseConfig) -> set[str]:
        return set()

    def plan(self, config: PairwiseConfig, caps: Capabilities) -> tuple[PairwiseConfig, str]:
        return config, ""

    def build_requests(self, task: PairTask, criteria: Criteria, config: PairwiseConfig) -> list[Request]:
        if not isinstance(task, PairTask):
            raise TypeError(f"pairwise comparison scores PairTask objects, not {type(task).__name__}")
        prompt = item_prompt(task, criteria, config)
        if config.decoding == "greedy":
            return [chat(prompt, config, temperature=0.0, max_tokens=config.max_tokens)]
        if config.decoding != "sampling":
            raise ValueError(f"decoding must be 'greedy' or 'sampling', not {config.decoding!r}")
        return [chat(prompt, config, temperature=config.temperature, top_p=config.top_p,
                     max_tokens=config.max_tokens)]

    def score(self, task: PairTask, criteria: Criteria, config: PairwiseConfig, responses: list[Response], *,
              parse_mode: str = "robust") -> Outcome:
        return pair_outcome(responses, config.estimator, parse_mode)


METHOD = register_method(Pairwise())  # the one instance every caller shares (evalcore.registry)
