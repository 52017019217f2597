"""GPTScore (004, Fu et al. 2023, §2.2):

    GPTScore(h | d, a, S) = sum_t w_t log p(h_t | h_<t, T(d, a, S)),   equal weights w_t

computed here as the MEAN log-prob of the hypothesis tokens (equal weights normalised by length, so long and short
texts are comparable, as in the authors' scripts). T is a template holding the task description d and aspect
definition a (the instruction), and the context S: the source (src->hypo) or a reference (ref->hypo).

Variants (004 §5): VAL = no instruction, no demonstrations; IST = instruction; IDM = instruction + k demonstrations
(``config.demonstrations``: (context, hypothesis) pairs, instantiated with the same template).
Layout (004 §2.2 example, "Generate a fluent and grammatical summary for the following text: {Text} Tl;dr
{Summary}"; the released scripts put the instruction on its own line and separate demonstrations by blank lines):

    [instruction "\\n"] [demo_1 "\\n\\n" ... demo_k "\\n\\n"] template(S) hypothesis

(template(S) is left out when S is empty: FED dialogues have no source, so GPTScore is p(dialogue | instruction)).

src->hypo uses ``src_template`` ("{source} Tl;dr "), ref->hypo ``ref_template`` ("{reference} In other words , \\n",
the released GPT-3 script's template). With several references, one request per reference, and the scores are
combined by ``reference_aggregation``: "max" (the released scripts take the max over references, as BARTScore does)
or "mean". 004 does not say more; both are recorded.

The request is a completions call with echo=True, logprobs, max_tokens=0: the endpoint returns the prompt's own
token log-probs. Locating the hypothesis: the prompt is prefix + hypothesis with the prefix's length known in
characters; the echoed token texts are concatenated and each token's character span computed; a token belongs to the
hypothesis when it contains at least one hypothesis character (so " The" after "Tl;dr " counts, its leading space
being the tokenizer's). When the concatenated tokens do not reproduce the prompt exactly (byte-level tokens of
non-ASCII text may be shown as "bytes:\\xe2..."), the hypothesis is located from the end of the token texts if they
end with the hypothesis, and the item fails with a reason otherwise. Tokens after ``prompt_token_count`` (generated
ones, when an endpoint insists on max_tokens >= 1) are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalcore.registry import register_method
from evalcore.types import (
    Capabilities,
    Choice,
    CompletionRequest,
    Criteria,
    ItemTask,
    Outcome,
    Request,
    Response,
    UnsupportedByEndpoint,
)
from evalcore.methods.base import PromptLabels, failed, fill, load_config, ok, raw_of, slot_values, dimension_prompt

VARIANTS = ("VAL", "IST", "IDM")
DIRECTIONS = ("src->hypo", "ref->hypo")
NO_ECHO = (
    "this endpoint does not return prompt log-probs (needs completions with echo+logprobs, e.g. vLLM or a "
    "llama.cpp server)"
)


@dataclass(frozen=True)
class GPTScoreConfig(PromptLabels):
    variant: str = "IST"  # "VAL" | "IST" | "IDM"
    direction: str = "src->hypo"  # "src->hypo" | "ref->hypo"
    reference_aggregation: str = "max"  # "max" | "mean" over references (ref->hypo)
    instruction: str = "Generate a {output_label_lc}{given_clause_lc} that is good in terms of {dimension} ({definition_np}):"
    instructions: dict[str, str] | None = None  # per-dimension instructions (presets hold 004-style ones)
    src_template: str = "{source} Tl;dr "
    ref_template: str = "{reference} In other words , \n"
    demonstrations: tuple[tuple[str, str], ...] = ()  # IDM: (context, hypothesis) pairs
    logprobs: int = 1

    @property
    def estimator(self) -> str:
        return f"mean-token-logprob({self.variant}, {self.direction})"


def _instruction(task: ItemTask, criteria: Criteria, config: GPTScoreConfig) -> str:
    template = dimension_prompt(config.instructions or {}, criteria.dimension) or config.instruction
    return fill(template, slot_values(task, criteria, config))


def prompt_parts(task: ItemTask, criteria: Criteria, config: GPTScoreConfig) -> list[tuple[str, str]]:
    """(prefix, hypothesis) for each request: one, or one per reference for ref->hypo."""
    if config.variant not in VARIANTS:
        raise ValueError(f"GPTScore variant must be one of {VARIANTS}, not {config.variant!r}")
    if config.direction not in DIRECTIONS:
        raise ValueError(f"GPTScore direction must be one of {DIRECTIONS}, not {config.direction!r}")
    if config.variant == "IDM" and not config.demonstrations:
        raise ValueError("GPTScore IDM needs demonstrations: set config.demonstrations to (context, hypothesis) pairs")
    if config.direction == "ref->hypo":
        if not task.references:
            raise ValueError(f"item {task.item_id!r} has no reference: GPTScore ref->hypo needs one")
        contexts = list(task.references)
        template = config.ref_template
    else:
        contexts = [task.source]
        template = config.src_template
    head = ""
    if config.variant in ("IST", "IDM"):
        head = _instruction(task, criteria, config) + "\n"
    if config.variant == "IDM":
        demos = [fill(template, _context_values(c, task, config)) + h for c, h in config.demonstrations]
        head += "\n\n".join(demos) + "\n\n"
    # no conditioning text (FED dialogues have no source): the hypothesis follows the instruction directly
    return [(head + (fill(template, _context_values(c, task, config)) if c else ""), task.output) for c in contexts]


def _context_values(context: str, task: ItemTask, config: GPTScoreConfig) -> dict[str, str]:
    return {"source": context, "reference": context, "context": task.context}


def hypothesis_logprobs(choice: Choice, prefix: str, hypothesis: str) -> list[float] | str:
    """Log-probs of the echoed tokens that belong to the hypothesis, or a string saying why they cannot be found."""
    if choice.tokens is None:
        return "endpoint returned no log-probs"
    tokens = list(choice.tokens)
    if choice.prompt_token_count is not None:
        tokens = tokens[: choice.prompt_token_count]
    texts = [t.token for t in tokens]
    joined = "".join(texts)
    prompt = prefix + hypothesis
    if joined.startswith(prompt):
        start = len(prefix)
    elif joined.endswith(hypothesis) or joined.rstrip().endswith(hypothesis.rstrip()):
        start = len(joined.rstrip()) - len(hypothesis.rstrip())
    else:
        return "echoed tokens do not reproduce the prompt: cannot locate the hypothesis"
    end = start + len(hypothesis)
    values: list[float] = []
    pos = 0
    for tl, text in zip(tokens, texts):
        a, b = pos, pos + len(text)
        pos = b
        if b > start and a < end and tl.logprob is not None:
            values.append(tl.logprob)
    if not values:
        return "no hypothesis token with a log-prob in the echoed prompt"
    return values


class GPTScore:
    name = "gptscore"
    label = "GPTScore (Fu et al. 2023)"
    paper = "004"
    pairwise = False
    parser = ""  # the value comes from log-probs

    def default_config(self) -> GPTScoreConfig:
        return GPTScoreConfig()

    def load_config(self, data: dict[str, Any] | None) -> GPTScoreConfig:
        return load_config(GPTScoreConfig, data)

    def requirements(self, config: GPTScoreConfig) -> set[str]:
        return {"echo_logprobs"}

    def plan(self, config: GPTScoreConfig, caps: Capabilities) -> tuple[GPTScoreConfig, str]:
        if not caps.echo_logprobs:
            raise UnsupportedByEndpoint(NO_ECHO)
        return config, ""

    def build_requests(self, task: ItemTask, criteria: Criteria, config: GPTScoreConfig) -> list[Request]:
        return [
            CompletionRequest(prompt=prefix + hyp, max_tokens=0, echo=True, logprobs=config.logprobs, temperature=0.0)
            for prefix, hyp in prompt_parts(task, criteria, config)
        ]

    def score(self, task: ItemTask, criteria: Criteria, config: GPTScoreConfig, responses: list[Response], *,
              parse_mode: str = "robust") -> Outcome:
        estimator = config.estimator
        parts = prompt_parts(task, criteria, config)
        if len(responses) != len(parts):
            return failed(f"expected {len(parts)} responses, got {len(responses)}", estimator)
        scores: list[float] = []
        reasons: list[str] = []
        n_tokens: list[int] = []
        for (prefix, hyp), response in zip(parts, responses):
            if not response.choices:
                reasons.append("no reply from the endpoint")
                continue
            lps = hypothesis_logprobs(response.choices[0], prefix, hyp)
            if isinstance(lps, str):
                reasons.append(lps)
                continue
            scores.append(sum(lps) / len(lps))
            n_tokens.append(len(lps))
        detail: dict[str, Any] = {"per_context": scores, "hypothesis_tokens": n_tokens}
        if not scores:
            return failed(reasons[0] if reasons else "no score", estimator, detail=detail)
        if config.reference_aggregation not in ("max", "mean"):
            raise ValueError(f"reference_aggregation must be 'max' or 'mean', not {config.reference_aggregation!r}")
        value = max(scores) if config.reference_aggregation == "max" else sum(scores) / len(scores)
        reason = ""
        if reasons:
            reason = f"{len(reasons)} of {len(parts)} references failed ({reasons[0]}); aggregated over the rest"
            detail["failed_contexts"] = reasons
        if len(parts) > 1:
            detail["aggregation"] = config.reference_aggregation
        return ok(value, estimator, raw=raw_of([f"{s:.6f}" for s in scores]), reason=reason, detail=detail)


METHOD = register_method(GPTScore())  # the one instance every caller shares (evalcore.registry)
