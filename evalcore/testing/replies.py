"""How the loopback judge answers a prompt, as tokens with their top log-probs: a pairwise verdict, a multiple-choice
letter, yes / no, G-Eval's evaluation steps or a score on the scale the prompt names, each deterministic in the prompt
(a sample index varies it). The HTTP test double (evalcore.testing.loopback) serves these replies; its profiles
(loopback_profiles) and the prompt-quality judge (loopback_align) compose their own from the same pieces.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Callable

def stable_hash(*parts: object) -> int:
    return int(hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:12], 16)


def hash_fraction(*parts: object) -> float:
    return stable_hash(*parts) / float(16**12)


# ------------------------------------------------------------------------------------------------ reply composition
_SCALE_RE = re.compile(r"(?<![\d.])(\d{1,3})\s*(?:-|–|to|and)\s*(\d{1,3})(?!\d)(?!\.\d)")
_FORM_DIM_RE = re.compile(r"-\s*([A-Z][A-Za-z ]{2,30}?)\s*(?:\(\s*\d+\s*-\s*\d+\s*\))?\s*:\s*$")
_DIM_SCALE_RE = re.compile(r"([A-Z][A-Za-z]{2,30})\s*\(\s*\d{1,3}\s*-\s*\d{1,3}\s*\)")
_TOKEN_RE = re.compile(r"\s*[A-Za-z]+|\s*\d{1,3}|\s*[^\sA-Za-z\d]")


def find_scale(prompt: str) -> tuple[int, int]:
    """The rating scale the prompt names: the first "lo-hi" / "lo to hi" pair with lo < hi <= 100 (default 1-5)."""
    for m in _SCALE_RE.finditer(prompt):
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo < hi <= 100 and lo in (0, 1):
            return lo, hi
    return 1, 5


def _softmax_top(values: list[str], chosen: str, sharpness: float = 1.2) -> list[tuple[str, float]]:
    """A peaked distribution over ``values`` (chosen first), as (token, logprob) sorted by probability."""
    idx = values.index(chosen)
    weights = [math.exp(-sharpness * abs(i - idx)) for i in range(len(values))]
    z = sum(weights)
    pairs = [(v, math.log(w / z)) for v, w in zip(values, weights)]
    return sorted(pairs, key=lambda p: -p[1])


@dataclass
class Reply:
    """A reply as tokens, each with its top alternatives (the token itself first)."""

    tokens: list[tuple[str, list[tuple[str, float]]]]
    finish_reason: str = "stop"
    refusal: str | None = None

    @property
    def text(self) -> str:
        return "".join(t for t, _ in self.tokens)


def plain_tokens(text: str) -> list[tuple[str, list[tuple[str, float]]]]:
    out = []
    for tok in _TOKEN_RE.findall(text):
        alt = tok.strip().upper() if tok.strip().islower() else tok.strip().lower()
        out.append((tok, [(tok, -0.01 - (stable_hash(tok) % 7) / 1000), (alt, -4.6 - (stable_hash(alt) % 9) / 10)]))
    return out


# chooses one of ``options`` (its index ``base`` unless a sample varies it)
_Pick = Callable[[list[str], int], str]


def _picker(prompt: str, sample: int, vary: bool) -> _Pick:
    """The reply's choice among ``options``: ``options[base]``, or with ``vary`` a draw from the same peaked
    distribution the top log-probs report."""

    def pick(options: list[str], base: int) -> str:
        if vary:
            r = hash_fraction(prompt, "sample", sample)
            acc = 0.0
            for tok, lp in _softmax_top(options, options[base]):
                acc += math.exp(lp)
                if r <= acc:
                    return tok
        return options[base]

    return pick


def default_reply(prompt: str, *, sample: int = 0, temperature: float = 0.0, score: int | None = None) -> Reply:
    """The deterministic reply to one prompt (sample index varies it when temperature > 0): a verdict, a choice,
    yes / no, evaluation steps or a score, by what the prompt asks for. ``score``: the scale value a rating reply
    gives (instead of one drawn from the prompt's hash), for judges whose quality a test controls
    (evalcore.testing.loopback_align)."""
    key = stable_hash(prompt)
    vary = temperature > 0 and sample > 0
    pick = _picker(prompt, sample, vary)
    low = prompt.lower()
    reply = _choice_reply(prompt, low, key, pick)
    if reply is None:
        reply = _yes_no_reply(prompt, low, sample if vary else None)
    if reply is None and prompt.rstrip().endswith("Evaluation Steps:"):
        # G-Eval auto-CoT (000 §2): numbered steps
        reply = Reply(plain_tokens("1. Read the source text carefully and identify its main points.\n"
                             "2. Read the text to evaluate and compare it with the source.\n"
                             "3. Assign a score on the given scale according to the criteria."))
    return reply if reply is not None else _scale_reply(prompt, low, key, pick, score)


def _choice_reply(prompt: str, low: str, key: int, pick: _Pick) -> Reply | None:
    """A pairwise verdict or a multiple-choice answer, when the prompt asks for one."""
    # MT-Bench pairwise judge (Zheng et al. 2023): a short explanation, then "[[A]]", "[[B]]" or "[[C]]"
    if "[[a]]" in low and "[[b]]" in low and "[[c]]" in low:
        chosen = pick(["A", "B", "C"], key % 3)
        return Reply(plain_tokens(f"Both answers address the question; weighing them as asked: [[{chosen}]]"))
    # pairwise: two texts to compare (002 options (A)(B)(C); 003 H2H "Summary #1 / #2 / tie")
    if ("(a)" in low and "(b)" in low and "(c)" in low) or ("#1" in prompt and "#2" in prompt):
        options = ["A", "B", "C"]
        chosen = pick(options, key % 3)
        reply = plain_tokens(chosen)
        reply[0] = (chosen, _softmax_top(options, chosen))
        return Reply(reply)
    # multiple choice A-E (003 MCQ)
    if all(re.search(rf"(?m)^\s*\(?{c}[.):]", prompt) for c in "ABCDE"):
        options = list("ABCDE")
        chosen = pick(options, key % 5)
        head = plain_tokens("Answer:")
        return Reply(head + [(" " + chosen, [(" " + o, lp) for o, lp in _softmax_top(options, chosen)])])
    return None


def _yes_no_reply(prompt: str, low: str, sample: int | None) -> Reply | None:
    """Yes or No with a p(yes) drawn from the prompt (002 implicit score), when the prompt asks a yes / no question;
    ``sample``: a sampled reply's index (None: the most likely answer)."""
    if not (re.search(r"yes\s*(?:or|/)\s*no", low) or (
            re.search(r"question:\s*(?:is|are|does|do|can|would|will)\b", low) and low.rstrip().endswith("answer:"))):
        return None
    p_yes = 0.15 + 0.7 * hash_fraction(prompt, "yes")
    top = [("Yes", math.log(p_yes * 0.8)), (" Yes", math.log(p_yes * 0.2)),
           ("No", math.log((1 - p_yes) * 0.8)), (" No", math.log((1 - p_yes) * 0.2))]
    chosen = "Yes" if p_yes >= 0.5 else "No"
    if sample is not None:
        chosen = "Yes" if hash_fraction(prompt, "sample", sample) < p_yes else "No"
    return Reply([(chosen, sorted(top, key=lambda p: -p[1]))])


def _scale_reply(prompt: str, low: str, key: int, pick: _Pick, score: int | None = None) -> Reply:
    """A score on the scale the prompt names (``score`` when given and on it), written as the prompt's form asks
    (form filling, reason then score, "Dimension: score", or the number alone)."""
    lo, hi = find_scale(prompt)
    values = [str(v) for v in range(lo, hi + 1)]
    chosen = pick(values, values.index(str(score)) if score is not None and str(score) in values
                  else key % len(values))
    if hi - lo > 10:
        # wide scales (002 explicit 0-100): one number token, no distribution worth reading
        return Reply([(chosen, [(chosen, -0.05)])])
    score_tok = (" " + chosen, [(" " + v, lp) for v, lp in _softmax_top(values, chosen)])
    tail = prompt.rstrip()[-200:]
    if _FORM_DIM_RE.search(tail):
        # G-Eval form filling: the prompt ends "- Coherence:"; the judge writes just the score (checked first:
        # the texts inside the prompt may contain any word, the form's last line is unambiguous)
        return Reply([(chosen, _softmax_top(values, chosen))])
    if re.search(r"\b(reason|explain|explanation|rationale|justify)", low):
        # reason-then-score (003 RTS)
        return Reply(plain_tokens("The text is mostly adequate, with minor issues. Score:") + [score_tok])
    m = _DIM_SCALE_RE.search(prompt)
    if m:
        return Reply(plain_tokens(f"{m.group(1)}:") + [score_tok])
    return Reply([(chosen, _softmax_top(values, chosen))])


_FILLER = ["The", " The", "\n", " ", "I", "Score", " -", ":", "**", "Co", " is", "It", " a", "-", " (", ".", "This",
           " I", "Based", "After", "Overall", "Rating", " score", "Answer"]


def pad_alternatives(top: list[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    """Pad a short alternatives list to k entries with unlikely non-answer tokens, as a real model's top-k is."""
    if len(top) >= k:
        return top
    seen = {t for t, _ in top}
    floor = min(lp for _, lp in top) if top else -5.0
    out = list(top)
    for i, f in enumerate(t for t in _FILLER if t not in seen):
        if len(out) >= k:
            break
        out.append((f, floor - 2.0 - i * 0.37))
    return out
