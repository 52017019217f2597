"""A loopback judge whose QUALITY DEPENDS ON THE PROMPT, for the alignment loop's tests (issue 22).

Pass it as the loopback's scorer (``serve(scorer=PromptQualityJudge.for_dataset(ds, "coherence"))``). It knows every
item's human score (keyed by the item's output text) and rates the item found in the prompt (the known output
that ends last in it: the judged text comes after the criteria, the examples and the source):

* a prompt containing ``rubric_phrase``: a GOOD judge, the human score put on the prompt's scale plus small noise
  (sd ``good_noise`` scale points, seeded by the item only), rounded;
* a prompt containing ``memorised_phrase`` and judging one of ``memorised_outputs``: the same good judge. Told the
  development items' outputs, this is a candidate "tuned to development noise": good exactly where it was tuned,
  no better anywhere else;
* any other prompt: a WEAK judge, ``weak_signal`` x (human - mid-scale) + noise of sd ``weak_noise``, the noise
  seeded by the whole prompt (so each criteria version is a different draw of the same weak judge).

``rubric_phrase=None`` makes a judge that no prompt improves. A proposal meta-prompt (it holds
:data:`PROPOSAL_MARKER`) is answered with the current definition plus ``proposal_phrase`` in a <criteria> block,
as ``evalcore.align.candidates.parse_proposal`` reads it. Every reply has the shape ``default_reply`` gives that
prompt (the form-filling score with its top log-probs for G-Eval, "... Score: N" for reason-then-score, ...).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict, Unpack

from evalcore.testing.replies import Reply, default_reply, find_scale, hash_fraction, plain_tokens

if TYPE_CHECKING:
    from evalcore.model import Dataset

PROPOSAL_MARKER = "<current_criteria>"  # evalcore.align.candidates.META_PROMPT holds it
RUBRIC_PHRASE = ("Reward a text whose sentences build on each other in the source's order of events; penalise one "
                 "that jumps between unrelated facts.")
MEMORISED_PHRASE = "Apply the calibration memorised from the development items."

_DEFINITION_RE = re.compile(r"Definition of [^:\n]*:\s*(.*?)\n\s*\nEvaluation steps:", re.DOTALL)


def _normal(*parts: object) -> float:
    """A standard normal draw from a hash of ``parts`` (Box-Muller): deterministic, seedable."""
    u1 = max(hash_fraction(*parts, "u1"), 1e-12)
    u2 = hash_fraction(*parts, "u2")
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


class JudgeTraits(TypedDict, total=False):
    """``PromptQualityJudge``'s fields other than the human scores (what ``for_dataset`` takes from the dataset)."""

    rubric_phrase: str | None
    proposal_phrase: str
    memorised_phrase: str | None
    memorised_outputs: frozenset[str]
    good_noise: float
    weak_signal: float
    weak_noise: float
    seed: int


@dataclass
class PromptQualityJudge:
    """The scorer (see the module docstring). ``human_by_output``: output text -> human score on ``human_scale``."""

    human_by_output: dict[str, float]
    human_scale: tuple[float, float] = (1.0, 5.0)
    rubric_phrase: str | None = RUBRIC_PHRASE
    proposal_phrase: str = RUBRIC_PHRASE
    memorised_phrase: str | None = None
    memorised_outputs: frozenset[str] = field(default_factory=frozenset)
    good_noise: float = 0.3
    weak_signal: float = 0.3
    weak_noise: float = 1.3
    seed: int = 0

    def __post_init__(self) -> None:
        self._outputs = [o for o in self.human_by_output if o.strip()]

    @classmethod
    def for_dataset(cls, dataset: Dataset, dimension: str, **kw: Unpack[JudgeTraits]) -> "PromptQualityJudge":
        """Human scores of ``dimension`` keyed by output text (outputs written twice: the mean of their scores)."""
        h = dataset.human_table(dimension).merge(dataset.items[["item_id", "output"]], on="item_id")
        by_output = h.groupby(h["output"].astype(str))["human"].mean().to_dict()
        d = dataset.dimension(dimension)
        return cls(human_by_output=by_output, human_scale=(float(d.scale_min), float(d.scale_max)), **kw)

    def judged_output(self, prompt: str) -> str | None:
        """The known output that ends last in the prompt (None: no known item in it)."""
        best, best_end = None, -1
        for o in self._outputs:
            i = prompt.rfind(o)
            if i >= 0 and (i + len(o) > best_end or (i + len(o) == best_end and len(o) > len(best or ""))):
                best, best_end = o, i + len(o)
        return best

    def good(self, prompt: str, output: str) -> bool:
        if self.rubric_phrase and self.rubric_phrase in prompt:
            return True
        return bool(self.memorised_phrase and self.memorised_phrase in prompt and output in self.memorised_outputs)

    def score(self, prompt: str, output: str) -> int:
        lo, hi = find_scale(prompt)
        hl, hh = self.human_scale
        human = lo + (self.human_by_output[output] - hl) * (hi - lo) / ((hh - hl) or 1.0)
        if self.good(prompt, output):
            value = human + self.good_noise * _normal("good", output, self.seed)
        else:
            mid = (lo + hi) / 2
            value = mid + self.weak_signal * (human - mid) + self.weak_noise * _normal("weak", prompt, self.seed)
        return int(min(hi, max(lo, round(value))))

    def proposal(self, prompt: str) -> str:
        m = _DEFINITION_RE.search(prompt)
        current = m.group(1).strip() if m else ""
        revised = current if self.proposal_phrase in current else f"{current} {self.proposal_phrase}".strip()
        return f"Here is a revision.\n<criteria>{revised}</criteria>"

    def __call__(self, prompt: str, *, sample: int = 0, temperature: float = 0.0) -> Reply:
        if PROPOSAL_MARKER in prompt:
            return Reply(plain_tokens(self.proposal(prompt)))
        output = self.judged_output(prompt)
        if output is None or prompt.rstrip().endswith("Evaluation Steps:"):
            return default_reply(prompt, sample=sample, temperature=temperature)
        return default_reply(prompt, sample=sample, temperature=temperature, score=self.score(prompt, output))


__all__ = ["PromptQualityJudge", "PROPOSAL_MARKER", "RUBRIC_PHRASE", "MEMORISED_PHRASE"]

