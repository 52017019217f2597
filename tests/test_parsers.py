"""Parsers: every phrase form the papers' judges actually wrote, the paper-mode quirks, and failure reasons.

The example replies below are written by hand in the styles found in the released reply files (003's ChatGPT /
GPT-4 / Llama-2 RTS, MCQ, StarEval and H2H replies; Chiang & Lee's G-Eval Topical-Chat samples); the expected value
of each is read off the text by a person.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.parsers import (
    PARSE_MODES,
    Parsed,
    Verdict,
    parse_explicit,
    parse_form_score,
    parse_mcq,
    parse_pairwise,
    parse_reply,
    parse_rts,
    parse_stars,
    sample_mean,
)

FAST = settings(max_examples=60, deadline=None)


def ok(value: float) -> Parsed:
    return Parsed(float(value), True, "")


# ---------------------------------------------------------------------------------------------------------------
# Robust reading of reason-then-score replies
# ---------------------------------------------------------------------------------------------------------------

RTS_CASES = [
    ("Score: 4", 4),
    ("score:4", 4),
    ("2 out of 5", 2),
    ("The summary lacks coherence as it presents disjointed statements, resulting in a score of 2.", 2),
    ("The summary misses the main event, giving it a score of one.", 1),
    ("1.5/5", 1.5),
    ("The summary is disfluent and contains several errors. Score: 1.5/5.", 1.5),
    ("The summary presents some key findings but lacks transitions. Score: 3/5.", 3),
    ("Final score: 4.", 4),
    ("**Score:** 4", 4),
    ("Rating: 3", 3),
    ("The summary is concise and well-written, earning a score of 4.5 out of 5.", 4.5),
    ("The summary presents disjointed statements and lacks coherence, scoring a 2 out of 5.", 2),
    ("The summary only covers a small portion of the article, therefore it scores a 2.", 2),
    ("The summary covers the main points but misses the verdict; 3 out of 5.", 3),
    ("The summary is incomplete, therefore it is irrelevant (1).", 1),
    ("The summary is well-written, grammatically correct, and readable on the sentence level. 5", 5),
    ("The summary is a four out of five in terms of coherence because it is organised.", 4),
    ("The summary is a 5, perfect relevance, as it summarises the main point.", 5),
    ("The summary is a perfect fluency, 5.\n\nThe summary is well-written.", 5),
    ("The score for Naturalness for this response is 2.", 2),
    ("On a scale of 1 to 5, I would rate it 4.", 4),
    (" Relevance Score: 4/5\nThe summary mentions Baines' record of scoring 15 penalties in the league.", 4),
    # a count after a verb of scoring is not a score
    ("The summary wrongly says Martinez has scored 15 penalties from 16 attempts. 2.", 2),
    # the second figure is what the summary does NOT get
    (
        "The summary is a 4 out of 5 in terms of coherence, as it is clear.\n\n"
        "The only thing that keeps it from being a 5 out of 5 is an abrupt transition.",
        4,
    ),
    # a breakdown of sub-scores after the overall score
    (
        "The summary is mostly consistent, resulting in a score of 4 out of 5 for consistency.\n\n"
        "Here's my breakdown of the score:\n\n1. Factual alignment: accurate. Score: 5/5.\n"
        "2. Context: thin. Score: 3/5.",
        4,
    ),
    # a final score on another scale does not override the one asked for
    ("Consistency rating: 4/5\n\nThe summary is accurate.\n\nFinal score: 8/10", 4),
]


@pytest.mark.parametrize("text,expected", RTS_CASES)
def test_rts_robust_reads_the_stated_score(text, expected):
    assert parse_rts(text) == ok(expected)


def test_rts_prefers_score_label_over_stray_numbers():
    text = "The 2 summaries mention 3 players from 2015. Score: 4"
    assert parse_rts(text).value == 4.0


def test_rts_failures_have_reasons():
    assert parse_rts("") == Parsed(None, False, "empty reply")
    assert parse_rts("   \n ") == Parsed(None, False, "empty reply")
    assert parse_rts("I'm sorry, I cannot evaluate this summary.") == Parsed(None, False, "refusal")
    assert parse_rts("As an AI language model, I can't judge that.") == Parsed(None, False, "refusal")
    assert parse_rts("The summary is inconsistent with the article.") == Parsed(None, False, "no score found")
    assert parse_rts("Score: 7") == Parsed(None, False, "value 7 outside scale 1-5")
    assert parse_rts("a score of 0") == Parsed(None, False, "value 0 outside scale 1-5")
    r = parse_rts("Final score: 8/10")
    assert not r.ok and r.reason == "value 8 outside scale 1-5 (the reply rates out of 10)"


def test_rts_range_is_not_a_score():
    # "score of 1 to 5" names the scale; the score is the 3.
    assert parse_rts("On a score of 1 to 5, this is a 3.").value == 3.0
    assert parse_rts("Please rate on a scale of 1-5.") == Parsed(None, False, "no score found")


def test_rts_other_scale_accepted_when_asked():
    assert parse_rts("Score: 7", scale=(1, 10)) == ok(7)


# ---------------------------------------------------------------------------------------------------------------
# Paper mode of RTS (Shen et al. 003's released rule order)
# ---------------------------------------------------------------------------------------------------------------


def test_rts_paper_rule_order_and_quirks():
    # rule 1: "score: N" keeps one decimal
    p = parse_rts("Score: 1.5/5.", mode="paper")
    assert (p.value, p.ok) == (1.5, True) and "score: N" in p.reason
    # rule 2: "score: <word>"
    assert parse_rts("Final Score: Four.", mode="paper").value == 4.0
    # rule 3: "score"/"scoring", then the first 1-5 digit in the same sentence
    p = parse_rts("The summary only captures one aspect of the article, resulting in a score of 2.", mode="paper")
    assert p.value == 2.0 and "scoring ... N" in p.reason
    assert parse_rts("The summary lacks coherence, scoring a 2 out of 5.", mode="paper").value == 2.0
    assert parse_rts("resulting in a score of 3.5 out of 5", mode="paper").value == 3.5
    # the sentence ends at a full stop: a digit in the next sentence is not rule 3's
    p = parse_rts("It deserves a high score. Rated 4 overall.", mode="paper")
    assert p.value == 4.0 and "last" in p.reason
    # rule 4: "score ... <word>" in the same sentence
    assert parse_rts("I would score it a solid three", mode="paper").value == 3.0
    # rule 6: the last "N" / "N out of M" anywhere; number words elsewhere are NOT read
    assert parse_rts("Only one aspect is covered; 2 out of 5", mode="paper").value == 2.0
    assert parse_rts("rated 7/10", mode="paper").value == 1.0  # the "1" of "10" is the last 1-5 digit
    # nothing matches: -1, kept
    assert parse_rts("The summary is inconsistent.", mode="paper") == Parsed(
        -1.0, True, "paper rule (003 script): no score -> -1 kept"
    )
    assert parse_rts("", mode="paper").value == -1.0


def test_rts_paper_and_robust_differ_where_the_paper_rule_misreads():
    # paper rule 1 stops at the first digit after "score:", robust reads the whole statement
    text = "Score: 4 out of 5 for coherence, but only 2 for style. Final score: 3."
    assert parse_rts(text).value == 3.0
    assert parse_rts(text, mode="paper").value == 4.0
    # a reply with no score: robust fails with a reason, paper keeps -1
    assert not parse_rts("The summary is inconsistent.").ok


def test_unknown_mode_rejected():
    with pytest.raises(ValueError, match="unknown parse mode"):
        parse_rts("Score: 3", mode="lenient")
    assert PARSE_MODES == ("robust", "paper")


# ---------------------------------------------------------------------------------------------------------------
# G-Eval form filling
# ---------------------------------------------------------------------------------------------------------------

FORM_CASES = [
    ("4", (1, 5), 4),
    ("4.5", (1, 5), 4.5),
    ("3.", (1, 3), 3),
    (" 2", (1, 3), 2),
    ("Coherence: 4", (1, 5), 4),
    ("- Coherence: 3.5", (1, 5), 3.5),
    ("- Engagingness: 1", (1, 3), 1),
    ("Engagingness:\n2", (1, 3), 2),
    ("1. Coherence: 1", (1, 3), 1),
    ("1. 2", (1, 3), 2),
    ("- 2", (1, 3), 2),
    ("1 (dull)", (1, 3), 1),
    ("Good (3)", (1, 3), 3),
    ("Response: 2", (1, 3), 2),
    ("2. somewhat interesting", (1, 3), 2),
    ("0.5", (0, 1), 0.5),
    ("- Groundedness: 0", (0, 1), 0),
    ("Example: \n- Engagingness: 2", (1, 3), 2),
    ("Fact: 84 per cent of genes have counterparts in the zebrafish\n\n- Groundedness: 0", (0, 1), 0),
]


@pytest.mark.parametrize("text,scale,expected", FORM_CASES)
def test_form_robust(text, scale, expected):
    assert parse_form_score(text, scale) == ok(expected)


def test_form_robust_failures():
    assert parse_form_score("N/A", (0, 1)) == Parsed(None, False, "no score found")
    assert parse_form_score("3", (0, 1)) == Parsed(None, False, "value 3 outside scale 0-1")
    # a list marker before a cut-off label is not a score
    assert parse_form_score("1. Natural", (1, 3)) == Parsed(None, False, "no score found")
    # an echoed prompt without the answer
    echoed = "Fact: the NFL is popular.\n\nResponse: I like the NFL.\n\nEvaluation Form (scores ONLY):\n- Ground"
    assert parse_form_score(echoed, (0, 1)) == Parsed(None, False, "no score found")


def test_form_paper_is_geval_leading_number():
    unparseable = Parsed(0.0, True, "paper rule (000 script): unparseable -> 0 kept")
    assert parse_form_score("4", mode="paper").value == 4.0
    assert parse_form_score(" 3.5 points", mode="paper").value == 3.5
    assert parse_form_score("1. Coherence: 3", mode="paper").value == 1.0  # the list marker is read
    assert parse_form_score("Coherence: 4", mode="paper") == unparseable
    assert parse_form_score("  4", mode="paper") == unparseable  # the regex allows one leading space only
    assert parse_form_score(".", mode="paper") == unparseable  # matched but not a number
    assert parse_form_score("2.5.1", mode="paper") == unparseable
    assert parse_form_score("", mode="paper") == unparseable
    # no scale check in the script
    assert parse_form_score("7", (1, 5), mode="paper").value == 7.0


# ---------------------------------------------------------------------------------------------------------------
# StarEval, explicit scores
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("4 stars", 4),
        ("Four stars. The summary covers the main points of the news article.", 4),
        ("Three stars. The summary covers one aspect of the story.", 3),
        ("I'd give it a 3-star rating.", 3),
        ("2 out of 5 stars", 2),
        ("★★★★☆", 4),
    ],
)
def test_stars(text, expected):
    assert parse_stars(text) == ok(expected)


def test_stars_failures_and_paper():
    assert parse_stars("Six stars!") == Parsed(None, False, "value 6 outside scale 1-5")
    assert parse_stars("A fine summary.") == Parsed(None, False, "no score found")
    # paper mode reads the token before "star" (Shen's StarEval reader); no star rating -> -1 kept
    assert parse_stars("Three stars. It covers one aspect.", mode="paper").value == 3.0
    assert parse_stars("I give it 2 stars, not 4 stars", mode="paper").value == 2.0
    assert parse_stars("A fine summary, 4/5.", mode="paper").value == -1.0


@pytest.mark.parametrize(
    "text,expected",
    [("85", 85), ("Score: 70", 70), ("I would give it 60 out of 100.", 60), ("The dialogue merits a 92/100.", 92)],
)
def test_explicit(text, expected):
    assert parse_explicit(text) == ok(expected)


def test_explicit_scale_and_paper():
    assert parse_explicit("Score: 120") == Parsed(None, False, "value 120 outside scale 0-100")
    assert parse_explicit("Score: 7", scale=(0, 10)) == ok(7)
    kept_zero = Parsed(0.0, True, "paper rule (000 script): unparseable -> 0 kept")
    assert parse_explicit("Score: 70", mode="paper") == kept_zero


# ---------------------------------------------------------------------------------------------------------------
# MCQ
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [("A", 1), ("B", 2), ("(C)", 3), ("D.", 4), ("E", 5), ("Answer: C", 3), ("**B**", 2), ("Option D", 4),
     ("The answer is (E).", 5), ("B) The summary has minor problems.", 2), ("d", 4)],
)
def test_mcq_robust(text, expected):
    assert parse_mcq(text) == ok(expected)


def test_mcq_failures():
    assert parse_mcq("") == Parsed(None, False, "empty reply")
    r = parse_mcq("Answer: B, or maybe (D)")
    assert not r.ok and r.reason == "ambiguous: several options named (B, D)"
    assert parse_mcq("The summary is fine.") == Parsed(None, False, "no option found")
    assert parse_mcq("I think the answer is a hard one.") == Parsed(None, False, "no option found")
    assert parse_mcq("F") == Parsed(None, False, "no option found")


def test_mcq_paper_first_character():
    assert parse_mcq("C", mode="paper") == Parsed(3.0, True, "paper rule (003 script): first character")
    assert parse_mcq("Answer: C", mode="paper").value == 1.0  # the "A" of "Answer"
    r = parse_mcq("(D)", mode="paper")
    assert not r.ok and "first character '('" in r.reason


def test_mcq_options():
    assert parse_mcq("C", options="ABC") == ok(3)
    assert parse_mcq("D", options="ABC") == Parsed(None, False, "no option found")


# ---------------------------------------------------------------------------------------------------------------
# Pairwise
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("A", "first"),
        ("B", "second"),
        ("C", "tie"),
        ("(A)", "first"),
        ("A: Summary #1 is more consistent.", "first"),
        ("B: Summary #2 is more coherent.", "second"),
        ("C: Both Summary #1 and Summary #2 are equally fluent.", "tie"),
        ("Summary #2", "second"),
        ("Response 1", "first"),
        ("tie", "tie"),
        ("Both are equally good.", "tie"),
        ("Summary #2 is more consistent than Summary #1.", "second"),
        ("The answer is (B).", "second"),
        ("The first summary is better.", "first"),
    ],
)
def test_pairwise_robust(text, expected):
    assert parse_pairwise(text) == Verdict(expected, True, "")


def test_pairwise_failures_and_paper():
    assert parse_pairwise("") == Verdict(None, False, "empty reply")
    assert parse_pairwise("Hmm, hard to say.") == Verdict(None, False, "no verdict found")
    assert not parse_pairwise("Summary #1 and Summary #2 cover different things.").ok
    assert parse_pairwise("The output is a bit long either way.") == Verdict(None, False, "no verdict found")
    v = parse_pairwise("Hmm, hard to say.", mode="paper")
    assert v.verdict == "tie" and v.ok and "paper rule (003 H2H)" in v.reason
    # readable verdicts are the same in both modes
    assert parse_pairwise("B", mode="paper") == Verdict("second", True, "")


# ---------------------------------------------------------------------------------------------------------------
# Sample mean (G-Eval n samples)
# ---------------------------------------------------------------------------------------------------------------


def test_sample_mean_robust_and_paper():
    fail = Parsed(None, False, "no score found")
    samples = [ok(3), fail, ok(2), ok(2)]
    assert sample_mean(samples) == Parsed(7 / 3, True, "1 of 4 samples unparseable")
    p = sample_mean(samples, mode="paper")
    assert p.ok and p.value == pytest.approx(7 / 4) and "1 of 4 samples unparseable, scored 0" in p.reason
    assert sample_mean([fail, fail]) == Parsed(None, False, "2 of 2 samples unparseable")
    assert sample_mean([fail, fail], mode="paper").value == 0.0
    assert sample_mean([]) == Parsed(None, False, "no samples")
    assert sample_mean([ok(1), ok(2)]) == Parsed(1.5, True, "")


def test_sample_mean_paper_from_paper_parsed_samples():
    # the G-Eval estimator end to end on the script's own reading: "Coherence: 3" scores 0 and is kept
    replies = ["3", "Coherence: 3", "2", "3"]
    paper = sample_mean([parse_form_score(r, mode="paper") for r in replies], mode="paper")
    robust = sample_mean([parse_form_score(r) for r in replies])
    assert paper.value == pytest.approx(2.0)
    assert robust == Parsed(2.75, True, "")


# ---------------------------------------------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------------------------------------------


def test_parse_reply_dispatch():
    assert parse_reply("form", "Coherence: 2", scale=(1, 3)) == ok(2)
    assert parse_reply("rts", "Score: 4") == ok(4)
    assert parse_reply("rts", "nothing", mode="paper").value == -1.0
    assert parse_reply("mcq", "(B)") == ok(2)
    assert parse_reply("mcq", "C", scale=(1, 3)) == ok(3)
    assert parse_reply("mcq", "D", scale=(1, 3)) == Parsed(None, False, "no option found")
    assert parse_reply("stars", "Four stars.") == ok(4)
    assert parse_reply("explicit", "73", scale=(0, 100)) == ok(73)
    with pytest.raises(KeyError, match="unknown parser"):
        parse_reply("gptscore", "x")


def test_parsed_invariants():
    with pytest.raises(ValueError):
        Parsed(None, True)
    with pytest.raises(ValueError):
        Parsed(3.0, False, "x")
    with pytest.raises(ValueError):
        Verdict("maybe", True)


# ---------------------------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------------------------

_scales = st.sampled_from([(1, 5), (1, 3), (0, 1), (1, 10), (0, 100)])


@FAST
@given(scale=_scales, data=st.data())
def test_prop_labelled_integer_in_scale_parses(scale, data):
    s = data.draw(st.integers(scale[0], scale[1]))
    template = data.draw(st.sampled_from(
        ["Score: {s}", "score of {s}", "**Score:** {s}", "Final score: {s}.", "Coherence: {s}", "{s}",
         "The summary is fine. Rating: {s}", "I would rate it {s}."]
    ))
    text = template.format(s=s)
    assert parse_rts(text, scale) == ok(s)
    assert parse_form_score(text, scale) == ok(s)


@FAST
@given(s=st.integers(1, 5), prefix=st.text(alphabet=st.characters(categories=["Ll", "Lu", "Zs"]), max_size=40))
def test_prop_score_label_wins_over_digitless_prose(s, prefix):
    assert parse_rts(f"{prefix}. Score: {s}").value == float(s)


_NUMBER_WORDS = re.compile(r"zero|one|two|three|four|five|six|seven|eight|nine|ten", re.IGNORECASE)


@FAST
@given(text=st.text(alphabet=st.characters(blacklist_categories=["Nd", "No", "Nl", "Cs"]), max_size=120))
def test_prop_no_digits_no_number_words_fails(text):
    if _NUMBER_WORDS.search(text) or "★" in text or "⭐" in text:
        return
    for fn in (parse_rts, parse_form_score, parse_stars):
        r = fn(text)
        assert not r.ok and r.value is None and r.reason in {"empty reply", "refusal", "no score found"}
    # paper RTS keeps such a reply as -1
    assert parse_rts(text, mode="paper").value == -1.0


@FAST
@given(values=st.lists(st.floats(1, 5, allow_nan=False), min_size=1, max_size=25))
def test_prop_sample_mean_of_ok_is_arithmetic_mean(values):
    parsed = [Parsed(v, True) for v in values]
    expected = math.fsum(values) / len(values)
    assert sample_mean(parsed).value == pytest.approx(expected)
    assert sample_mean(parsed, mode="paper").value == pytest.approx(expected)


@FAST
@given(values=st.lists(st.one_of(st.none(), st.floats(1, 5, allow_nan=False)), min_size=1, max_size=25))
def test_prop_paper_mean_counts_failures_as_zero(values):
    parsed = [Parsed(v, True) if v is not None else Parsed(None, False, "x") for v in values]
    good = [v for v in values if v is not None]
    assert sample_mean(parsed, mode="paper").value == pytest.approx(math.fsum(good) / len(values))
    robust = sample_mean(parsed)
    assert robust.ok == bool(good)
    if good:
        assert robust.value == pytest.approx(math.fsum(good) / len(good))
        assert robust.value >= sample_mean(parsed, mode="paper").value - 1e-9


@FAST
@given(
    out=st.integers(-50, 200).filter(lambda v: not 1 <= v <= 5),
)
def test_prop_out_of_scale_rejected(out):
    r = parse_rts(f"Score: {out}")
    assert not r.ok
    assert r.reason in {f"value {out} outside scale 1-5", "no score found"}


@FAST
@given(text=st.lists(st.sampled_from(["score", "Score", "SCORE", " ", "\n", "1", "3", "5", "7", "0", "x", ":"]),
                     max_size=30).map("".join))
def test_prop_paper_rts_always_returns_a_kept_value(text):
    # the paper rule never fails: a value on the 1-5 scale (decimals allowed) or the kept -1
    p = parse_rts(text, mode="paper")
    assert p.ok and (p.value == -1.0 or 1.0 <= p.value <= 5.9)
    assert p.reason.startswith("paper rule (003 script)")
