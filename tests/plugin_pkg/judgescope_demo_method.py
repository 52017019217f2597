"""A scoring method from outside the package: the judge is asked for the score alone, no reason (the smallest
useful method). Its one module is all a contributor writes, with its entry point (``pyproject.toml`` here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalcore import parsers
from evalcore.methods.base import PromptLabels, chat, failed, item_prompt, load_config, outcome_from_parsed, raw_of, \
    reply_texts
from evalcore.registry import register_method
from evalcore.types import Capabilities, Criteria, ItemTask, Outcome, Request, Response

TEMPLATE = ("Score the following {output_label}{given_clause} with respect to {dimension} from {scale_min_word} to "
            "{scale_max_word}. Note that {dimension} measures {definition}\n\n{source_block}{context_block}"
            "{output_block}Reply with the score only, as {dimension}: <score>")


@dataclass(frozen=True)
class BriefConfig(PromptLabels):
    template: str = TEMPLATE
    max_tokens: int = 8


@register_method
class Brief:
    name = "brief"
    label = "Score only (a plugin's example)"
    paper = ""
    pairwise = False
    parser = "form"

    def default_config(self) -> BriefConfig:
        return BriefConfig()

    def load_config(self, data: dict[str, Any] | None) -> BriefConfig:
        return load_config(BriefConfig, data)

    def requirements(self, config: BriefConfig) -> set[str]:
        return set()

    def plan(self, config: BriefConfig, caps: Capabilities) -> tuple[BriefConfig, str]:
        return config, ""

    def build_requests(self, task: ItemTask, criteria: Criteria, config: BriefConfig) -> list[Request]:
        return [chat(item_prompt(task, criteria, config), config, temperature=0.0, max_tokens=config.max_tokens)]

    def score(self, task: ItemTask, criteria: Criteria, config: BriefConfig, responses: list[Response], *,
              parse_mode: str = "robust") -> Outcome:
        texts = reply_texts(responses)
        if not texts:
            return failed("no reply from the endpoint", "greedy")
        parsed = parsers.parse_form_score(texts[0], (criteria.scale_min, criteria.scale_max), mode=parse_mode)
        return outcome_from_parsed(parsed, "greedy", raw_of(texts[:1]))
