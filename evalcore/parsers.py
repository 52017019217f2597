"""Reading a score (or a verdict) out of an LLM judge's reply.

Every parser returns a :class:`Parsed` (or a :class:`Verdict` for pairwise methods): either a value, or a failure with
a reason. A reply that states no usable score is a *counted failure*, never a silent 0 — that is the ``"robust"``
mode, the default everywhere.

Each parser also has a ``"paper"`` mode that reproduces the quirks of a paper's released evaluation script, so that
published figures can be reproduced and shown side by side with the sound reading:

* G-Eval (000) form filling: the script read ``^ ?([\\d.]+)`` and scored an unparseable reply as 0, kept in the mean.
* Shen et al. (003) RTS: four rules tried in order (``score: N``, number words, ``score ... N``, the last 1-5 digit);
  a reply where none matches is kept as -1.
* Shen et al. (003) H2H: an unreadable verdict counts as a tie.

Every value a paper rule produced says so in ``reason`` (``"paper rule (...): ..."``) so that a kept quirk (a 0, a -1,
a tie) is never mistaken for a reading of the reply. Robust successes have an empty reason.

Robust reading in short: the score the reply *states* — an explicit final score, then a "score"/"rating" label, then
a fraction of the scale or a verb of scoring, then "<Dimension>: N", then a bare number; never a stray number
("scored 15 penalties"), never a counterfactual ("keeps it from being a 5"), and never a value off the scale.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Callable

__all__ = [
    "PARSE_MODES",
    "MAX_REPLY_CHARS",
    "Parsed",
    "Verdict",
    "parse_form_score",
    "parse_rts",
    "parse_mcq",
    "parse_stars",
    "parse_explicit",
    "parse_pairwise",
    "sample_mean",
    "parse_reply",
    "PARSERS",
    "REASONING_TAGS",
    "ReasoningSplit",
    "split_reasoning",
]

PARSE_MODES = ("robust", "paper")


@dataclass(frozen=True)
class Parsed:
    """A score read from a reply. ``value`` is None iff ``ok`` is False; ``reason`` says why it failed, or in paper
    mode which paper rule produced the value."""

    value: float | None
    ok: bool
    reason: str = ""

    def __post_init__(self) -> None:
        if self.ok and self.value is None:
            raise ValueError("Parsed(ok=True) needs a value")
        if not self.ok and self.value is not None:
            raise ValueError("Parsed(ok=False) must have value None")


@dataclass(frozen=True)
class Verdict:
    """A pairwise judgement: "first" | "second" | "tie", or None when the reply could not be read."""

    verdict: str | None
    ok: bool
    reason: str = ""

    def __post_init__(self) -> None:
        if self.ok and self.verdict not in ("first", "second", "tie"):
            raise ValueError(f"Verdict(ok=True) needs first/second/tie, got {self.verdict!r}")
        if not self.ok and self.verdict is not None:
            raise ValueError("Verdict(ok=False) must have verdict None")


def _fail(reason: str) -> Parsed:
    return Parsed(None, False, reason)


# The longest reply each parser reads, in characters (the answer after any reasoning block): far above what a judge
# answers (the bundled runs' longest reply is 1,698 characters), low enough that a runaway or hostile reply costs
# milliseconds. A longer one is a counted failure that says so; it is never cut and read in part.
MAX_REPLY_CHARS = {"form": 20_000, "explicit": 20_000, "mcq": 20_000, "rts": 50_000, "stars": 50_000,
                   "pairwise": 50_000}


def _too_long(text: str | None, parser: str) -> str | None:
    """Why ``text`` is not read (None: it may be): longer than MAX_REPLY_CHARS[parser]."""
    limit = MAX_REPLY_CHARS[parser]
    n = 0 if text is None else len(str(text))
    if n <= limit:
        return None
    return (f"reply too long to read: {n:,} characters, over the {limit:,} a {parser} reply may have "
            "(a judge's answer is far shorter: a runaway reply?)")


def _check_mode(mode: str) -> None:
    if mode not in PARSE_MODES:
        raise ValueError(f"unknown parse mode {mode!r}; expected one of {PARSE_MODES}")


def _fmt(x: float) -> str:
    return f"{x:g}"


# ----------------------------------------------------------------------------------------------------------------
# Shared vocabulary
# ----------------------------------------------------------------------------------------------------------------

_WORD_VALUES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}
_WORD = r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten)"
# A number: not glued to a word or to another number ("M8", "v1.2", "2015" stays 2015). A trailing full stop is
# allowed ("4."), a decimal part is kept ("3.5"), a sign is kept ("Score: -3" is off the scale, not 3).
_NUM = r"(?<![\w.])(?:(?<![\d\-–])-)?(?:\d+(?:\.\d+)?|\.\d+)(?!\w|\.\d)"
_VALUE = rf"(?P<v>{_NUM}|\b{_WORD}\b)"
# "1 to 5", "1-5", "1 – 5": the value is the low end of a range, not a score.
_NOT_RANGE = r"(?!\s{0,3}(?:-|–|to)\s{0,3}\d)"
# "4/5", "4 out of 5", "4 on a scale of 5": a denominator that names the scale.
_DENOM = rf"(?:\s{{0,3}}(?:/|out\s+of|on\s+a\s+scale\s+of)\s{{0,3}}(?P<d>\d+(?:\.\d+)?|\b{_WORD}\b))?"

_REFUSAL = re.compile(
    r"\b(?:I'?m sorry|I am sorry|I apologi[sz]e|I (?:cannot|can ?not|can't|won't|am unable to|'m unable to)"
    r"|as an AI(?: language model)?|I am not able to|I'm not able to)\b",
    re.IGNORECASE,
)


def _to_float(token: str) -> float | None:
    t = token.strip().lower()
    if t in _WORD_VALUES:
        return float(_WORD_VALUES[t])
    try:
        x = float(t)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class _Candidate:
    value: float
    tier: int  # lower = more explicit
    pos: int
    denominator: float | None = None
    in_list: bool = False  # stated on a bullet / numbered line of a breakdown ("1. Grammar: 3/5")
    counterfactual: bool = False  # "keeps it from being a 5 out of 5", "would make it a 5"


# Said of a score the text does NOT get: "The only thing that keeps it from being a 5 out of 5", "which would make
# it a 5", "prevent it from being a perfect 5", "rather than a 3". Looked for in the sentence before the number.
_CF_LEAD = (  # each starts a word (a "\b" before it in _CF_WORDS)
    r"from\s+(?:being|getting|receiving|earning|achieving)|would\s+(?:make|have\s+been|be|get|earn|deserve|raise"
    r"|bring|improve)|could\s+(?:make|be|get|earn|have)|not\s+(?:a|an|quite\s+a)\b|rather\s+than|instead\s+of"
    r"|to\s+(?:get|reach|achieve|earn|be)\b|if\b|short\s+of"
)
_CF_TAIL = r"n't\s+(?:get|be|a)\b"
_CF_WORDS = rf"(?:\b(?:{_CF_LEAD})|{_CF_TAIL})"
# The rule on one sentence: such words, and no sentence end after them. (What the tests hold _collect to; _collect
# itself finds the words once per reply, below.)
_COUNTERFACTUAL = re.compile(_CF_WORDS + r"[^.!?\n]*$", re.IGNORECASE)
_CF_STARTS = re.compile(rf"(?={_CF_WORDS})", re.IGNORECASE)  # a lookahead: overlapping starts are all found
# At a window cut the sentence, as a string of its own, starts a word there even inside one: no "\b" to check.
_CF_AT_CUT = re.compile(rf"(?:{_CF_LEAD}|{_CF_TAIL})", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?\n]")
_CF_WINDOW = 300  # how far back "the sentence before the number" reaches, in characters
_LIST_LINE = re.compile(r"^[ \t]*(?:\d+[.)]|[*\-•])[ \t]")
_LIST_AT = re.compile(r"[ \t]*(?:\d+[.)]|[*\-•])[ \t]")  # the same, matched at a line's start inside the reply


class _Context:
    """What every candidate of one reply asks about the text before it (its line's start, the last sentence end,
    where counterfactual words begin), found once per reply: a candidate then costs a binary search, not a copy of
    its line and a regex over its sentence (which made a long reply on one line quadratic)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.ends = [m.start() for m in _SENTENCE_END.finditer(text)]
        self.cf_starts = [m.start() for m in _CF_STARTS.finditer(text)]
        self.list_end: dict[int, int] = {}  # line start -> end of its list marker (-1: none)

    def in_list(self, start: int) -> bool:
        """``_LIST_LINE`` on the line up to ``start``: the line opens with a list marker that ends by ``start``."""
        i = bisect.bisect_left(self.newlines, start) - 1
        line = self.newlines[i] + 1 if i >= 0 else 0
        if line not in self.list_end:
            m = _LIST_AT.match(self.text, line)
            self.list_end[line] = m.end() if m else -1
        return 0 <= self.list_end[line] <= start

    def counterfactual(self, start: int) -> bool:
        """``_COUNTERFACTUAL`` on the sentence before ``start`` (back to the last sentence end or line break, at most
        _CF_WINDOW characters). The words hold no ``.!?`` or line break and none may follow them, so the question
        is whether they start at or after ``lo``, past the last such character."""
        window = max(0, start - _CF_WINDOW)
        i = bisect.bisect_left(self.ends, start) - 1
        lo = max(window, self.ends[i] + 1 if i >= 0 else 0)
        k = bisect.bisect_left(self.cf_starts, lo)
        if k < len(self.cf_starts) and self.cf_starts[k] < start:
            return True
        return lo == window > 0 and _CF_AT_CUT.match(self.text, window, start) is not None


def _collect(text: str, patterns: list[tuple[int, re.Pattern[str]]]) -> list[_Candidate]:
    out: list[_Candidate] = []
    ctx: _Context | None = None
    for tier, pat in patterns:
        for m in pat.finditer(text):
            v = _to_float(m.group("v"))
            if v is None:
                continue
            d = m.groupdict().get("d")
            start = m.start("v")
            ctx = ctx or _Context(text)
            out.append(_Candidate(v, tier, start, _to_float(d) if d else None, in_list=ctx.in_list(start),
                                  counterfactual=ctx.counterfactual(start)))
    return out


def _choose(cands: list[_Candidate], scale: tuple[float, float]) -> _Candidate | None:
    """The most explicit tier wins. A fraction of another scale ("8/10" when asked for 1-5) and a counterfactual
    ("keeps it from being a 5") only count when nothing else is stated; a sub-score on a bullet line of a breakdown
    loses to one stated in prose. Within what is left, a value on the scale beats one off it, and the last
    statement wins (a reason-then-score reply states its score last; a reply that corrects itself means its last
    figure)."""
    if not cands:
        return None
    lo, hi = scale

    def rank(c: _Candidate) -> int:
        other_scale = c.denominator is not None and c.denominator != hi
        # A bullet line only counts as a sub-score against prose scores; in a filled form ("- Coherence: 3",
        # tier 3) bullets are the answer itself.
        return 2 * (c.tier + 10 * other_scale + 20 * c.counterfactual) + (c.in_list and c.tier < 3)

    best = min(rank(c) for c in cands)
    top = [c for c in cands if rank(c) == best]
    on_scale = [c for c in top if lo <= c.value <= hi]
    return max(on_scale or top, key=lambda c: c.pos)


def _in_scale(c: _Candidate, scale: tuple[float, float]) -> Parsed:
    lo, hi = scale
    if lo <= c.value <= hi:
        return Parsed(float(c.value), True)
    note = ""
    if c.denominator is not None and c.denominator != hi:
        note = f" (the reply rates out of {_fmt(c.denominator)})"
    return _fail(f"value {_fmt(c.value)} outside scale {_fmt(lo)}-{_fmt(hi)}{note}")


def _no_score(text: str, what: str = "score") -> Parsed:
    if _REFUSAL.search(text):
        return _fail("refusal")
    return _fail(f"no {what} found")


def _compile(*patterns: tuple[int, str]) -> list[tuple[int, re.Pattern[str]]]:
    return [(t, re.compile(p, re.IGNORECASE | re.MULTILINE)) for t, p in patterns]


# Candidates are ranked by how explicitly the reply states them (lower tier = more explicit):
#   0  the reply names its final score ("Final score: 4", "overall rating of 3")
#   1  a "score"/"rating" label ("Score: 4", "a score of 2", "**Rating:** 3", "The score for X is 2")
#   2  a fraction of the scale ("3/5", "2 out of 5") or a verb of scoring ("I would rate it 4", "scoring a 3",
#      "scores the summary as 5", "a perfect 5")
#   3  "<Label>: N" at the start of a line ("Coherence: 4", "- Engagingness: 2", "Response: 2")
#   4  the reply is (or starts with) the number ("4", "- 2", "3.", "1 (dull)", "2. somewhat interesting")
#   5  last resort: a number closing the reply ("... on the sentence level. 5") or a lone "(N)" ("irrelevant (1).")
# Stray numbers elsewhere ("scored 15 penalties", "50 international caps", "the 1990s") are never read.
_MD = r"[*_`\"']{0,3}"  # markdown emphasis / quotes around labels and values ("**Score:** 4")
_SCORE_WORD = r"(?:score|rating|grade|mark)"
# Horizontal white space: a label and its number sit on one line ("breakdown of the score:\n1. ..." is no score).
# Quantifiers are bounded throughout so that a long adversarial reply costs linear time.
_H = r"[^\S\n]{0,3}"
_LINK = (
    rf"{_MD}{_H}(?:\((?:[^()\n]{{0,40}})\))?{_H}(?:[:=\-–]|is|of|would\s+be|will\s+be|should\s+be|as|at)?"
    rf"{_H}{_MD}{_H}(?:(?:a|an|about|around|approximately|roughly)\s+)?{_MD}{_H}"
)
# After a verb of scoring, the number must end the clause or be followed by a scale word: "rate it 4 because ..."
# is a score, "scored 15 penalties" / "earning 50 international caps" are counts.
_VERB_FOLLOW = (
    r"(?=\s{0,3}(?:$|[.,;:!?)\-–(]|/|\s(?:out|of|on|for|in|as|and|but|because|since|due|given|which|to|stars?|points?"
    r"|overall|with|is|indicating|reflecting|showing|meaning|\(|-)\b))"
)
_VERBS = (
    r"(?:rate|rated|rates|rating|give|gives|given|giving|assign|assigns|assigned|assigning|award|awards|awarded"
    r"|deserves?|deserving|earns?|earned|earning|scores?|scored|scoring|receives?|received|receiving|merits?"
    r"|gets?|getting)"
)
_SCORE_PATTERNS = _compile(
    (0, rf"\b(?:final|overall|total)\s+{_SCORE_WORD}s?\b{_LINK}{_VALUE}{_NOT_RANGE}{_DENOM}"),
    (1, rf"\b{_SCORE_WORD}s?\b{_LINK}{_VALUE}{_NOT_RANGE}{_DENOM}"),
    # "The score for Naturalness for this response is 2."
    (
        1,
        rf"\b{_SCORE_WORD}\s+(?:for|of)\s+[^\d.\n:]{{1,60}}?\s(?:is|would\s+be|=|:)\s{{0,3}}{_MD}(?P<v>{_NUM})"
        rf"{_NOT_RANGE}{_DENOM}",
    ),
    (2, rf"{_VALUE}\s{{0,3}}(?:/|out\s+of)\s{{0,3}}(?P<d>\d+(?:\.\d+)?|\b{_WORD}\b)"),
    (
        2,
        rf"\b{_VERBS}\b(?:\s{{1,3}}(?:it|this|that|the|summary|response|text|output|answer|dialogue|a|an|as|of|with|at"
        rf"|score|rating|only|just|solid|high|low|perfect|overall|final|me|mere|strong)){{0,8}}\s{{1,3}}{_MD}{_VALUE}"
        rf"{_NOT_RANGE}{_DENOM}{_VERB_FOLLOW}",
    ),
    # "I would score the consistency of the Summary with respect to the Article as 2", "scoring a perfect fluency
    # of 5": a verb of scoring, a short phrase, then "as/of/a" and a digit, all in one sentence.
    (
        2,
        rf"\b{_VERBS}\b[^\d.!?\n]{{1,100}}?\b(?:as|of|a|an|perfect|solid)\s+{_MD}(?P<v>{_NUM}){_NOT_RANGE}{_DENOM}"
        rf"{_VERB_FOLLOW}",
    ),
    (2, rf"\b(?:a|an)\s+(?:perfect|solid|strong|mere|low|high)\s+{_MD}(?P<v>{_NUM}){_NOT_RANGE}{_DENOM}{_VERB_FOLLOW}"),
    # "The summary is a 5, perfect relevance", "making it a 5 in terms of coherence" (digits only: "is a one-off")
    (2, rf"\b(?:is|it|as)\s+(?:a|an)\s+{_MD}(?P<v>{_NUM}){_NOT_RANGE}{_DENOM}{_VERB_FOLLOW}"),
    # "The summary is a perfect fluency, 5."
    (
        2,
        rf"\b(?:a|an)\s+(?:perfect|solid|strong|low|high)\s+[a-z]{{1,20}}\s{{0,3}}(?:,|\(|:|of)\s{{0,3}}(?P<v>{_NUM})"
        rf"{_NOT_RANGE}{_DENOM}",
    ),
)
_LABEL_LINE = _compile(
    (
        3,
        rf"^[ \t>*\-•#]{{0,6}}(?:\d+[.)]\s{{1,3}})?{_MD}[A-Za-z][A-Za-z \-]{{0,40}}?{_MD}{_H}:"
        rf"{_H}{_MD}{_H}\n?{_H}{_MD}{_VALUE}{_NOT_RANGE}{_DENOM}{_VERB_FOLLOW}",
    ),
)
_LAST_RESORT = _compile(
    # A number closing the reply after a sentence: "... readable on the sentence level. 5", "... killed. 4.5"
    (5, rf"(?:[.!?:\n]|^)\s{{0,4}}{_MD}(?P<v>{_NUM}){_MD}\s{{0,3}}[.!]?\s*\Z"),
    # A lone parenthesised number: "therefore it is irrelevant (1).", "a perfect relevance (5)"
    (5, rf"\({_H}(?P<v>{_NUM}){_H}\)"),
)
# The whole reply is the number, perhaps with a bullet, a full stop, markdown or a short gloss: "4", "- 2", "3.",
# "1 (dull)", "**4**", "2. somewhat interesting", "Good (3)".
_BARE = re.compile(
    rf"^\s{{0,3}}[\-*•>]{{0,3}}\s{{0,3}}{_MD}{_VALUE}{_NOT_RANGE}{_MD}{_H}(?:[.!,;:\-–)]|$|\s)",
    re.IGNORECASE,
)
_PAREN_ONLY = re.compile(rf"^[A-Za-z][A-Za-z ]{{0,30}}\({_H}{_VALUE}{_H}\){_H}\.?$", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^\s*1[.)]\s+(?=\S)")


def _robust_score(
    text: str,
    scale: tuple[float, float],
    *,
    extra: Sequence[tuple[int, re.Pattern[str]]] = (),
    after_marker: bool = False,
) -> Parsed:
    if text is None or not str(text).strip():
        return _fail("empty reply")
    text = str(text)
    chosen = _choose(_collect(text, list(extra) + _SCORE_PATTERNS + _LABEL_LINE), scale)
    if chosen is not None:
        return _in_scale(chosen, scale)
    stripped = text.strip()
    # "1. Coherence: 1" / "1. 2": a list marker before the form's answer — read what follows it. A lone "1." before
    # a cut-off label ("1. Natural") is a list marker, not a score.
    m = None if after_marker else _LIST_MARKER.match(stripped)
    if m:
        rest = stripped[m.end():]
        inner = _robust_score(rest, scale, extra=extra, after_marker=True)
        if inner.ok or not inner.reason.startswith("no "):
            return inner
        if re.match(r"[A-Z]", rest):
            return _no_score(text)
    m = _BARE.match(stripped) or _PAREN_ONLY.match(stripped)
    if m:
        v = _to_float(m.group("v"))
        if v is not None:
            return _in_scale(_Candidate(v, 4, m.start("v")), scale)
    chosen = _choose(_collect(text, _LAST_RESORT), scale)
    if chosen is not None:
        return _in_scale(chosen, scale)
    return _no_score(text)


# ----------------------------------------------------------------------------------------------------------------
# Item scores
# ----------------------------------------------------------------------------------------------------------------

# G-Eval's released script (000): re.search(r'^ ?([\d.]+)', reply) and float(); anything else scored 0 and kept.
_GEVAL_PAPER = re.compile(r"^ ?([\d.]+)")


def parse_form_score(text: str, scale: tuple[float, float] = (1, 5), *, mode: str = "robust") -> Parsed:
    """G-Eval form filling (000): the reply is usually just "4", "Coherence: 4" or "- Coherence: 3.5".

    paper: G-Eval's script — the leading number (``^ ?([\\d.]+)``), no scale check; no match, or a match that is
    not a number (e.g. "."), scores 0 and is kept.
    """
    _check_mode(mode)
    if why := _too_long(text, "form"):
        return _fail(why)
    if mode == "paper":
        m = _GEVAL_PAPER.search(text or "")
        if m:
            v = _to_float(m.group(1))
            if v is not None:
                return Parsed(v, True, "paper rule (000 script): leading number")
        return Parsed(0.0, True, "paper rule (000 script): unparseable -> 0 kept")
    return _robust_score(text, scale)


# Shen et al.'s RTS parser (003). RECIPES.md's one-line summary of it (``score: N``, number words, "score ... N",
# last digit) does NOT reproduce the published #CP (it gives 51/56/62/63). Read rule by rule, the authors' released
# reader works on the lower-cased reply and tries, in order (our own regexes, written from that description):
#   1. "score:" then a 1-5 digit with an optional one-digit decimal ("score: 3.5/5" -> 3.5)
#   2. "score:" then a number word one..five
#   3. "score"/"scoring", then up to the next full stop, the FIRST 1-5 digit there, decimal kept
#      ("scoring a 1 out of 5" -> 1)
#   4. "score"/"scoring" then a number word in the same sentence
#   5. "score of" then a number word
#   6. the LAST "N" or "N out of M" anywhere (1-5 digit), read as that digit
#   7. nothing: -1, kept in the scores (the paper's choice, which we only reproduce on request)
# This order reproduces 003 Table 5 exactly: #CP 54/56/62/62 of 66 and 28 of 44 challenge pairs (tests/test_datasets).
_WORD = r"(one|two|three|four|five)"
_RTS_SCORE_COLON_N = re.compile(r"score:\s*([1-5](?:\.\d)?)")
_RTS_SCORE_COLON_WORD = re.compile(r"score:\s*" + _WORD + r"\b")
_RTS_SCORE_OF_WORD = re.compile(r"score of\s+" + _WORD + r"\b")
_RTS_SCOR = re.compile(r"scor(?:e|ing)")
_RTS_DIGIT = re.compile(r"[1-5]")
_RTS_N = re.compile(r"[1-5](?:\.\d)?")
_RTS_WORD = re.compile(r"\b" + _WORD + r"\b")


def _after_score_in_sentence(low: str, first: re.Pattern[str], whole: re.Pattern[str]) -> str | None:
    """What ``re.search(r"scor(?:e|ing)[^.]*?" + whole.pattern, low)`` reads (rules 3 and 4), in linear time: the
    first "score"/"scoring" whose sentence (up to the next full stop) holds ``first`` after it. A later "score" of a
    sentence where an earlier one found nothing finds nothing either, so each sentence is read once (the regex
    rescans the rest of the sentence from every "score": quadratic on a long one)."""
    dot = -1
    for m in _RTS_SCOR.finditer(low):
        if m.start() < dot:
            continue
        dot = low.find(".", m.end())
        dot = len(low) if dot < 0 else dot
        hit = first.search(low, m.end(), dot)
        if hit:
            full = whole.match(low, hit.start())
            assert full is not None  # ``whole`` reads what ``first`` begins with, and ``first`` matched here
            return full.group(0)  # a decimal part may run past the full stop ("3.5")
    return None


_RTS_PAPER_RULES: tuple[tuple[str, Callable[[str], str | None]], ...] = (
    ("'score: N'", lambda low: (m := _RTS_SCORE_COLON_N.search(low)) and m.group(1)),
    ("'score: <word>'", lambda low: (m := _RTS_SCORE_COLON_WORD.search(low)) and m.group(1)),
    ("'score/scoring ... N' in the sentence", lambda low: _after_score_in_sentence(low, _RTS_DIGIT, _RTS_N)),
    ("'score/scoring ... <word>' in the sentence", lambda low: _after_score_in_sentence(low, _RTS_WORD, _RTS_WORD)),
    ("'score of <word>'", lambda low: (m := _RTS_SCORE_OF_WORD.search(low)) and m.group(1)),
)
_RTS_PAPER_LAST = re.compile(r"([1-5])(?:\s*out of\s*\d+)?")


def _rts_paper(text: str) -> Parsed:
    low = (text or "").lower()
    for label, rule in _RTS_PAPER_RULES:
        g = rule(low)
        if g:
            value = float(_WORD_VALUES[g]) if g in _WORD_VALUES else float(g)
            return Parsed(value, True, f"paper rule (003 script): {label}")
    matches = _RTS_PAPER_LAST.findall(low)
    if matches:
        return Parsed(float(matches[-1]), True, "paper rule (003 script): last 'N [out of M]'")
    return Parsed(-1.0, True, "paper rule (003 script): no score -> -1 kept")


# Shen's StarEval reader takes the token just before "star" (a digit or a number word); -1 when there is none. The
# token is a whole run of non-space ((?<!\S): the same leftmost match as "(\S+)\s+stars?\b", without retrying every
# position of a long run, which was quadratic).
_STARS_PAPER = re.compile(r"(?<!\S)(\S+)\s+stars?\b")


def _stars_paper(text: str) -> Parsed:
    m = _STARS_PAPER.search((text or "").lower())
    if m:
        tok = m.group(1).strip("(*:")
        if tok in _WORD_VALUES:
            return Parsed(float(_WORD_VALUES[tok]), True, "paper rule (003 script): word before 'star'")
        v = _to_float(tok)
        if v is not None:
            return Parsed(v, True, "paper rule (003 script): number before 'star'")
    return Parsed(-1.0, True, "paper rule (003 script): no star rating -> -1 kept")


def parse_rts(text: str, scale: tuple[float, float] = (1, 5), *, mode: str = "robust") -> Parsed:
    """Reason-then-score (003): "... Score: 4", "... a score of 2 out of 5", "a score of one", "1.5/5".

    paper: Shen et al.'s released reader, rule by rule (see ``_RTS_PAPER_RULES``); nothing matched -> -1, kept
    (ok=True). It reproduces 003's published #CP exactly (54/56/62/62 of 66; 28 of 44 challenge pairs).
    """
    _check_mode(mode)
    if why := _too_long(text, "rts"):
        return _fail(why)
    if mode == "paper":
        return _rts_paper(text)
    return _robust_score(text, scale)


_STAR_PATTERNS = _compile(
    (0, rf"{_VALUE}{_NOT_RANGE}{_H}(?:-{_H})?(?:out\s+of\s+\d+\s+)?stars?\b"),
)
_STAR_GLYPHS = re.compile(r"^\s*([★⭐]+)(☆*)\s*(?:[.!]|\s|$)")


def parse_stars(text: str, scale: tuple[float, float] = (1, 5), *, mode: str = "robust") -> Parsed:
    """StarEval (003): "4 stars", "Four stars. The summary ...", "3-star".

    paper: Shen's StarEval reader: the token just before "star" (digit or number word); none -> -1, kept.
    """
    _check_mode(mode)
    if why := _too_long(text, "stars"):
        return _fail(why)
    if mode == "paper":
        return _stars_paper(text)
    if text and (m := _STAR_GLYPHS.match(str(text))):
        return _in_scale(_Candidate(float(len(m.group(1))), 0, 0), scale)
    return _robust_score(text, scale, extra=_STAR_PATTERNS)


def parse_explicit(text: str, scale: tuple[float, float] = (0, 100), *, mode: str = "robust") -> Parsed:
    """Explicit score (002): a number on any scale (0-100 in the paper), e.g. "85", "Score: 70", "I'd give it 60/100".

    paper: 002 released no parser; the paper mode is G-Eval's reading (leading number, unparseable -> 0 kept).
    """
    _check_mode(mode)
    if why := _too_long(text, "explicit"):
        return _fail(why)
    if mode == "paper":
        return parse_form_score(text, scale, mode="paper")
    return _robust_score(text, scale)


# ----------------------------------------------------------------------------------------------------------------
# Multiple choice
# ----------------------------------------------------------------------------------------------------------------


def _options_named(text: str, stripped: str, letters: str) -> list[str]:
    """The distinct option letters a longer reply names (sorted)."""
    found: list[str] = []
    # Explicit labels anywhere: "Answer: C", "the answer is (B)", "option D", "choice E".
    for m in re.finditer(
        # the letter itself is case-sensitive: "the answer is a good one" names no option
        rf"\b(?:answer|option|choice)\s{{0,3}}(?:is|would\s+be|:)?\s{{0,3}}\(?\b(?-i:([{letters}]))\b\)?",
        text,
        re.IGNORECASE,
    ):
        found.append(m.group(1).upper())
    # A parenthesised letter: "(D)".
    found += [m.group(1) for m in re.finditer(rf"\(([{letters}])\)", text)]
    # An upper-case option letter leading the reply and followed by punctuation: "B) ...", "D. The summary", "E: ...".
    lead = re.match(rf"\s{{0,3}}([{letters}])\s{{0,3}}(?:[.):\-–]|$)", stripped)
    if lead:
        found.append(lead.group(1))
    return sorted(set(found))


def parse_mcq(text: str, options: str = "ABCDE", *, mode: str = "robust") -> Parsed:
    """Multiple choice (003 MCQ): a letter mapped to its rank, A=1 .. E=5.

    robust: "C", "(D)", "D.", "Answer: C", "Option B", "B) The summary ..."; several different options named -> failure.
    paper: the first character of the stripped reply, if it is an option letter (upper or lower case); else failure.
    """
    _check_mode(mode)
    if text is None or not str(text).strip():
        return _fail("empty reply")
    text = str(text)
    if why := _too_long(text, "mcq"):
        return _fail(why)
    letters = "".join(re.escape(c) for c in options)
    stripped = text.strip()
    if mode == "paper":
        first = stripped[0].upper()
        if first in options:
            return Parsed(float(options.index(first) + 1), True, "paper rule (003 script): first character")
        return _fail(f"paper rule (003 script): first character {stripped[0]!r} is not an option")

    def value_of(letter: str) -> Parsed:
        return Parsed(float(options.index(letter.upper()) + 1), True)

    # The whole reply is the option: "C", "(D)", "D.", "**B**", "Option B", "Answer: (C)".
    whole = re.fullmatch(
        rf"[\s*\"'`]{{0,6}}(?:(?:final\s+)?(?:answer|option|choice)\s{{0,3}}(?:is)?\s{{0,3}}:?\s{{0,3}})?"
        rf"[\s*\"'`]{{0,6}}"
        rf"\(?([{letters}])\)?[\s*\"'`.!]*",
        stripped,
        re.IGNORECASE,
    )
    if whole:
        return value_of(whole.group(1))
    several = re.fullmatch(
        rf"[\s*\"'`]{{0,6}}\(?([{letters}])\)?(?:\s{{0,3}}(?:,|/|or|and|&)\s{{0,3}}\(?[{letters}]\)?)+[\s*\"'`.!]*",
        stripped,
    )
    if several:
        named = sorted(set(re.findall(rf"\b[{letters}]\b", stripped)))
        return _fail(f"ambiguous: several options named ({', '.join(named)})")
    distinct = _options_named(text, stripped, letters)
    if len(distinct) == 1:
        return value_of(distinct[0])
    if len(distinct) > 1:
        return _fail(f"ambiguous: several options named ({', '.join(distinct)})")
    if _REFUSAL.search(text):
        return _fail("refusal")
    return _fail("no option found")


# ----------------------------------------------------------------------------------------------------------------
# Pairwise
# ----------------------------------------------------------------------------------------------------------------

_TIE_WORDS = re.compile(
    r"\b(?:tie|tied|equally|equal|same|neither|both\s+(?:are\s+|summaries\s+are\s+|responses\s+are\s+)?"
    r"(?:equally|good|bad|similar|the\s+same)|no\s+(?:clear\s+)?(?:difference|preference|winner))\b",
    re.IGNORECASE,
)
# "Summary #1", "Summary 2", "Response 1", "Output (a)", "the first summary", "text 2", "Assistant B".
_ONE = r"(?:#\s*1|1|\(?a\)?|one)"
_TWO = r"(?:#\s*2|2|\(?b\)?|two)"
_NOUN = r"(?:summary|summaries|response|output|text|answer|option|candidate|dialogue|assistant|model)"
_MENTION_FIRST = re.compile(rf"\b{_NOUN}\s*{_ONE}(?![\w#])|\bthe\s+first\b|\bformer\b", re.IGNORECASE)
_MENTION_SECOND = re.compile(rf"\b{_NOUN}\s*{_TWO}(?![\w#])|\bthe\s+second\b|\blatter\b", re.IGNORECASE)
_BETTER = r"(?:is|was|seems|appears)\s+(?:\w+\s+){0,2}?(?:better|more|superior|preferred|preferable|stronger|higher)"


def _pairwise_robust(text: str) -> Verdict:
    if text is None or not str(text).strip():
        return Verdict(None, False, "empty reply")
    text = str(text)
    stripped = text.strip()
    letter_map = {"A": "first", "B": "second", "C": "tie"}
    # A leading option letter: "A", "(B)", "C: Both Summary #1 and Summary #2 are equally ...", "B." — in 003 H2H
    # and 002's pairwise prompt, C means "both equally good".
    m = re.match(r"[*\"'`]{0,3}\(?([ABC])\)?(?:[\s*\"'`]*$|\s{0,3}[.):\-–,]|\s{1,3}(?=[A-Z#]))", stripped)
    if m:
        return Verdict(letter_map[m.group(1)], True)
    m = re.search(
        r"\b(?:answer|option|choice|verdict|preference|output)\s{0,3}(?:is|:)?\s{0,3}\(?(?-i:([ABC]))\)?(?!\w)",
        text,
        re.IGNORECASE,
    )
    if m:
        return Verdict(letter_map[m.group(1)], True)
    if re.fullmatch(r"[\s*\"'`]*(?:#\s*)?1[\s*\"'`.!]*", stripped):
        return Verdict("first", True)
    if re.fullmatch(r"[\s*\"'`]*(?:#\s*)?2[\s*\"'`.!]*", stripped):
        return Verdict("second", True)
    first = [m.start() for m in _MENTION_FIRST.finditer(text)]
    second = [m.start() for m in _MENTION_SECOND.finditer(text)]
    if _TIE_WORDS.search(text) and (not first or not second or re.search(r"\bboth\b", text, re.IGNORECASE)):
        if not re.search(_BETTER, text, re.IGNORECASE):
            return Verdict("tie", True)
    if first and not second:
        return Verdict("first", True)
    if second and not first:
        return Verdict("second", True)
    if first and second:
        # "Summary #2 is more consistent than Summary #1": the one directly followed by a comparative wins.
        a = re.search(rf"(?:{_MENTION_FIRST.pattern})\s+{_BETTER}", text, re.IGNORECASE)
        b = re.search(rf"(?:{_MENTION_SECOND.pattern})\s+{_BETTER}", text, re.IGNORECASE)
        if a and not b:
            return Verdict("first", True)
        if b and not a:
            return Verdict("second", True)
        return Verdict(None, False, "ambiguous: both candidates named")
    if _REFUSAL.search(text):
        return Verdict(None, False, "refusal")
    return Verdict(None, False, "no verdict found")


def parse_pairwise(text: str, *, mode: str = "robust") -> Verdict:
    """Pairwise preference: "A", "B", "C" (tie), "(A)", "A: Summary #1 is more consistent.", "Summary #2",
    "Response 1", "tie", "both are equally good" -> "first" / "second" / "tie".

    paper (003 H2H): the same reading, but an unreadable verdict counts as a tie (ok=True, reason notes the rule).
    """
    _check_mode(mode)
    if why := _too_long(text, "pairwise"):
        return Verdict(None, False, why)  # in either mode: the paper's tie is for a reply read, not one refused
    v = _pairwise_robust(text)
    if mode == "paper" and not v.ok:
        return Verdict("tie", True, f"paper rule (003 H2H): unreadable ({v.reason}) -> tie")
    return v


# ----------------------------------------------------------------------------------------------------------------
# Several samples per item
# ----------------------------------------------------------------------------------------------------------------


def sample_mean(parsed: list[Parsed], *, mode: str = "robust") -> Parsed:
    """G-Eval's n-sample estimator (000 Eq. 1 with empirical probabilities): the mean of the sampled scores.

    robust: mean over the samples that parsed; failures are excluded and counted ("k of n samples unparseable");
    fails only if none parsed.
    paper: G-Eval's script — an unparseable sample scores 0 and is kept in the mean.
    """
    _check_mode(mode)
    parsed = list(parsed)
    n = len(parsed)
    if n == 0:
        return _fail("no samples")
    good = [p.value for p in parsed if p.ok and p.value is not None]  # a parsed sample has a value (Parsed)
    k = n - len(good)
    if mode == "paper":
        total = math.fsum(good)  # failed samples contribute 0
        reason = "paper rule (000 script): "
        reason += f"{k} of {n} samples unparseable, scored 0 and kept" if k else f"mean of {n} samples"
        return Parsed(total / n, True, reason)
    if not good:
        return _fail(f"{n} of {n} samples unparseable")
    return Parsed(math.fsum(good) / len(good), True, f"{k} of {n} samples unparseable" if k else "")


# ----------------------------------------------------------------------------------------------------------------
# Dispatch
# ----------------------------------------------------------------------------------------------------------------


def _mcq_dispatch(text: str, *, mode: str = "robust", scale: tuple[float, float] = (1, 5)) -> Parsed:
    # Options are the first (hi - lo + 1) letters, so a 1-5 scale is A-E.
    n = int(round(scale[1] - scale[0])) + 1
    p = parse_mcq(text, "ABCDEFGHIJ"[: max(1, min(n, 10))], mode=mode)
    if p.ok and p.value is not None and scale[0] != 1:
        return Parsed(p.value - 1 + scale[0], True, p.reason)
    return p


PARSERS: dict[str, Callable[..., Parsed]] = {
    "form": lambda text, *, mode, scale: parse_form_score(text, scale, mode=mode),
    "rts": lambda text, *, mode, scale: parse_rts(text, scale, mode=mode),
    "mcq": _mcq_dispatch,
    "stars": lambda text, *, mode, scale: parse_stars(text, scale, mode=mode),
    "explicit": lambda text, *, mode, scale: parse_explicit(text, scale, mode=mode),
}


def parse_reply(parser: str, text: str, *, mode: str = "robust", scale: tuple[float, float] = (1, 5)) -> Parsed:
    """Parse ``text`` with the parser named ``parser`` ("form", "rts", "mcq", "stars", "explicit"): its answer only,
    after any reasoning block (:func:`split_reasoning`); a reply that ends inside its reasoning is a failure.

    Raises KeyError on an unknown parser name."""
    try:
        fn = PARSERS[parser]
    except KeyError:
        raise KeyError(f"unknown parser {parser!r}; expected one of {sorted(PARSERS)}") from None
    split = split_reasoning(text)
    if split.unclosed:
        return _fail(split.failure())
    return fn(split.answer, mode=mode, scale=scale)


# ----------------------------------------------------------------------------------------------------------------
# reasoning written before the answer

# The tags open reasoning models write their reasoning in when the server has no reasoning parser: <think> (DeepSeek-R1
# and its distillations, Qwen3, QwQ: vLLM's deepseek_r1 / qwen3 parsers look for it,
# https://docs.vllm.ai/en/latest/features/reasoning_outputs/), <thinking> and <reasoning> (other chat templates).
REASONING_TAGS = ("think", "thinking", "reasoning")
_OPEN = re.compile(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)


@dataclass(frozen=True)
class ReasoningSplit:
    """A reply split into the judge's reasoning and its answer. ``answer_start``: where the answer begins in the
    reply (characters); ``unclosed``: the reply ended inside the reasoning (no answer: a failure, never a parse)."""

    answer: str
    reasoning: str = ""
    answer_start: int = 0
    unclosed: bool = False
    tag: str = ""

    def failure(self) -> str:
        return (f"the reply ended inside the judge's reasoning (<{self.tag}> never closed): no answer to read; "
                f"raise the completion budget (--max-completion-tokens)")


def split_reasoning(text: str) -> ReasoningSplit:
    """The reasoning block a reply opens with (``<think>...</think>``, ``<thinking>``, ``<reasoning>``) apart from the
    answer after it. A reply with a closing tag but no opening one (the chat template of DeepSeek-R1 and Qwen3 puts
    ``<think>`` in the prompt, so the reply starts inside the reasoning) is split at the closing tag. A block that
    never closes leaves no answer. A reply without such tags is all answer. Only the reply's leading block counts:
    a tag quoted later in the answer is the answer's."""
    text = text or ""
    m = _OPEN.match(text)
    if m:
        tag = m.group(1).lower()
        close = re.search(rf"</{tag}\s*>", text[m.end():], re.IGNORECASE)
        if close is None:
            return ReasoningSplit(answer="", reasoning=text[m.end():].strip(), answer_start=len(text), unclosed=True,
                                  tag=tag)
        end = m.end() + close.end()
        return ReasoningSplit(answer=text[end:].strip(), reasoning=text[m.end():m.end() + close.start()].strip(),
                              answer_start=end + (len(text[end:]) - len(text[end:].lstrip())), tag=tag)
    for tag in REASONING_TAGS:
        close = re.search(rf"</{tag}\s*>", text, re.IGNORECASE)
        if close is not None and not re.search(rf"<{tag}>", text[:close.start()], re.IGNORECASE):
            end = close.end()
            return ReasoningSplit(answer=text[end:].strip(), reasoning=text[:close.start()].strip(),
                                  answer_start=end + (len(text[end:]) - len(text[end:].lstrip())), tag=tag)
    return ReasoningSplit(answer=text)
