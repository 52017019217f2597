"""Head-to-head comparison, H2H (003, Shen et al. 2023, §3.1 and Table 3): "Summary #1" and "Summary #2" of the same
article; the judge answers A (#1 is more <adjective>), B (#2) or C (both equally). Every pair is judged twice with
the order swapped (the engine schedules both orders); each order's verdict is worth 0.5 when the two are averaged.

Tasks are ``PairTask``s; the outcome is this order's verdict, value 1 / 0 / 0.5 for the first summary presented.
``parse_mode="paper"`` follows 003's analysis (an unreadable verdict counts as a tie, labelled in the reason);
the robust default counts it as a failure.
On SummEval, ``presets.config_for("h2h", "summeval")`` puts 003's exact prompts in ``prompts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalcore.registry import register_method
from evalcore.types import Capabilities, Criteria, Outcome, PairTask, Request, Response
from evalcore.methods._pairs import pair_outcome
from evalcore.methods.base import PromptLabels, chat, item_prompt, load_config

H2H_TEMPLATE = (
    "Choose a {comparative} {output_label_lc} from {output_label} #1 and {output_label} #2{given_clause} by "
    "choosing an option from A, B, or C. Note that {dimension} measures {definition}\n\n"
    "{source_block}{context_block}{output_label} #1: {first}\n\n{output_label} #2: {second}\n\n"
    "A: {output_label} #1 is {comparative}.\nB: {output_label} #2 is {comparative}.\n"
    "C: Both {output_label} #1 and {output_label} #2 are equally good.\n\n"
    "Your choice (enter 1 letter from A to C):"
)


@dataclass(frozen=True)
class H2HConfig(PromptLabels):
    template: str = H2H_TEMPLATE
    prompts: dict[str, str] = field(default_factory=dict)  # per-dimension exact prompts (003's for SummEval)
    comparative: str = "better"  # 003 writes "more relevant", "more coherent", ... in its own prompts
    temperature: float = 0.0  # 003 §4.1
    max_tokens: int = 32

    @property
    def estimator(self) -> str:
        return "greedy" if self.temperature == 0 else f"sampled(T={self.temperature:g})"


class H2H:
    name = "h2h"
    label = "Head-to-head (Shen et al. 2023)"
    paper = "003"
    pairwise = True
    parser = "pairwise"

    def default_config(self) -> H2HConfig:
        return H2HConfig()

    def load_config(self, data: dict[str, Any] | None) -> H2HConfig:
        return load_config(H2HConfig, data)

    def requirements(self, config: H2HConfig) -> set[str]:
        return set()

    def plan(self, config: H2HConfig, caps: Capabilities) -> tuple[H2HConfig, str]:
        return config, ""

    def build_requests(self, task: PairTask, criteria: Criteria, config: H2HConfig) -> list[Request]:
        if not isinstance(task, PairTask):
            raise TypeError(f"head-to-head scores PairTask objects, not {type(task).__name__}")
        prompt = item_prompt(task, criteria, config, {"comparative": config.comparative})
        return [chat(prompt, config, temperature=config.temperature, max_tokens=config.max_tokens)]

    def score(self, task: PairTask, criteria: Criteria, config: H2HConfig, responses: list[Response], *,
              parse_mode: str = "robust") -> Outcome:
        return pair_outcome(responses, config.estimator, parse_mode)


METHOD = register_method(H2H())  # the one instance every caller shares (evalcore.registry)
