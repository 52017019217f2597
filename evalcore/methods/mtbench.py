"""MT-Bench pairwise judge (Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", §3 and the
pairwise prompts of its appendix figures): an impartial judge compares assistant A's and assistant B's answers to a
user question, explains briefly, and ends with its verdict as "[[A]]", "[[B]]" or "[[C]]" (tie). A reference-guided
variant (for maths and reasoning questions) also shows a reference answer and asks to compare both answers with it.

The prompt text follows the paper's published figures (written out here, not copied from any code); it is a config
field, so it can be edited. ``reference``: "auto" (default) uses the reference-guided prompt when the task has a
reference answer (the dataset's ``references``), "always" / "never" force one or the other.

The verdict is the last "[[A]]" / "[[B]]" / "[[C]]" in the reply (the format the prompt asks for); a reply without
one is a counted failure (robust) or, with ``parse_mode="paper"``, a tie, as MT-Bench's own agreement scripts count
an "error" verdict as neither side winning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evalcore.registry import register_method
from evalcore.types import Capabilities, ChatRequest, Criteria, Outcome, PairTask, Request, Response
from evalcore.methods._pairs import VERDICT_VALUE
from evalcore.methods.base import PromptLabels, failed, fill, load_config, ok, raw_of, reply_texts, slot_values

MTBENCH_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to the "
    "user question displayed below. You should choose the assistant that follows the user's instructions and answers "
    "the user's question better. Your evaluation should consider factors such as the helpfulness, relevance, "
    "accuracy, depth, creativity, and level of detail of their responses. Begin your evaluation by comparing the two "
    "responses and provide a short explanation. Avoid any position biases and ensure that the order in which the "
    "responses were presented does not influence your decision. Do not allow the length of the responses to "
    "influence your evaluation. Do not favor certain names of the assistants. Be as objective as possible. After "
    "providing your explanation, output your final verdict by strictly following this format: \"[[A]]\" if "
    "assistant A is better, \"[[B]]\" if assistant B is better, and \"[[C]]\" for a tie."
)
MTBENCH_SYSTEM_REFERENCE = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to the "
    "user question displayed below. Your evaluation should consider correctness and helpfulness. You will be given a "
    "reference answer, assistant A's answer, and assistant B's answer. Your job is to evaluate which assistant's "
    "answer is better. Begin your evaluation by comparing both assistants' answers with the reference answer. "
    "Identify and correct any mistakes. Avoid any position biases and ensure that the order in which the responses "
    "were presented does not influence your decision. Do not allow the length of the responses to influence your "
    "evaluation. Do not favor certain names of the assistants. Be as objective as possible. After providing your "
    "explanation, output your final verdict by strictly following this format: \"[[A]]\" if assistant A is better, "
    "\"[[B]]\" if assistant B is better, and \"[[C]]\" for a tie."
)
MTBENCH_USER = (
    "[User Question]\n{source}\n\n"
    "[The Start of Assistant A's Answer]\n{first}\n[The End of Assistant A's Answer]\n\n"
    "[The Start of Assistant B's Answer]\n{second}\n[The End of Assistant B's Answer]"
)
MTBENCH_USER_REFERENCE = (
    "[User Question]\n{source}\n\n"
    "[The Start of Reference Answer]\n{reference}\n[The End of Reference Answer]\n\n"
    "[The Start of Assistant A's Answer]\n{first}\n[The End of Assistant A's Answer]\n\n"
    "[The Start of Assistant B's Answer]\n{second}\n[The End of Assistant B's Answer]"
)
REFERENCE_MODES = ("auto", "always", "never")
_VERDICT = re.compile(r"\[\[([ABC])\]\]")


def parse_mtbench(text: str) -> str | None:
    """The verdict the MT-Bench prompt asks for: the last [[A]] / [[B]] / [[C]] ("first" / "second" / "tie")."""
    found = _VERDICT.findall(text or "")
    if not found:
        return None
    return {"A": "first", "B": "second", "C": "tie"}[found[-1]]


@dataclass(frozen=True)
class MTBenchConfig(PromptLabels):
    system: str = MTBENCH_SYSTEM
    template: str = MTBENCH_USER
    system_reference: str = MTBENCH_SYSTEM_REFERENCE
    template_reference: str = MTBENCH_USER_REFERENCE
    reference: str = "auto"
    temperature: float = 0.0  # the paper's judges decode greedily
    max_tokens: int = 1024  # room for the short explanation before the verdict

    @property
    def estimator(self) -> str:
        return "greedy" if self.temperature == 0 else f"sampled(T={self.temperature:g})"


class MTBench:
    name = "mtbench"
    label = "MT-Bench pairwise judge (Zheng et al. 2023)"
    paper = "Zheng et al. 2023"
    pairwise = True
    parser = "mtbench"

    def default_config(self) -> MTBenchConfig:
        return MTBenchConfig()

    def load_config(self, data: dict[str, Any] | None) -> MTBenchConfig:
        return load_config(MTBenchConfig, data)

    def requirements(self, config: MTBenchConfig) -> set[str]:
        return set()

    def plan(self, config: MTBenchConfig, caps: Capabilities) -> tuple[MTBenchConfig, str]:
        return config, ""

    def build_requests(self, task: PairTask, criteria: Criteria, config: MTBenchConfig) -> list[Request]:
        if not isinstance(task, PairTask):
            raise TypeError(f"the MT-Bench judge scores PairTask objects, not {type(task).__name__}")
        if config.reference not in REFERENCE_MODES:
            raise ValueError(f"reference must be one of {REFERENCE_MODES}, not {config.reference!r}")
        with_ref = config.reference == "always" or (config.reference == "auto" and bool(task.references))
        values = slot_values(task, criteria, config)
        system = config.system_reference if with_ref else config.system
        user = fill(config.template_reference if with_ref else config.template, values)
        return [ChatRequest(messages=(("system", system), ("user", user)), temperature=config.temperature,
                            max_tokens=config.max_tokens)]

    def score(self, task: PairTask, criteria: Criteria, config: MTBenchConfig, responses: list[Response], *,
              parse_mode: str = "robust") -> Outcome:
        texts = reply_texts(responses)
        if not texts:
            return failed("no reply from the endpoint", config.estimator)
        raw = raw_of(texts[:1])
        verdict = parse_mtbench(texts[0])
        if verdict is None:
            if parse_mode == "paper":
                return ok(VERDICT_VALUE["tie"], config.estimator, raw=raw, verdict="tie",
                          reason="paper rule: no [[A]]/[[B]]/[[C]] -> tie")
            return failed("no [[A]], [[B]] or [[C]] verdict in the reply", config.estimator, raw=raw)
        return ok(VERDICT_VALUE[verdict], config.estimator, raw=raw, verdict=verdict)


METHOD = register_method(MTBench())  # the one instance every caller shares (evalcore.registry)
