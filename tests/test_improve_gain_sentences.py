"""The Improve page's sentences about gains (evalcore.views.improve): every sentence true for every sign of the
development gain and of the test gain and for every verdict of the paired tests, as a table of cases; and the
candidate offered for the final check when none beat the baseline on development.

A walkthrough found "The development gain carried over to the held-out documents" under a development gain of
-0.007 and a test gain of -0.034, and the default candidate to test one that was worse than the baseline on
development, with nothing said. Each claim a sentence can make is listed below with the condition on the signs
and the verdict under which it is true; every case's sentences are checked against all of them.
"""

from __future__ import annotations

import itertools
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from evalcore.align.candidates import Candidate, baseline_candidate
from evalcore.align.loop import Agreement, Difference, FinalCheck, Scored, verdict_of
from evalcore.types import Criteria
from evalcore.views import improve as views

IMPROVED, WORSE, NS = "improved", "worse", "no significant difference"
NAN = math.nan


def crit(definition: str) -> Criteria:
    return Criteria(dimension="coherence", task_introduction="Rate the summary.", definition=definition,
                    scale_min=1, scale_max=5, steps="1. Read.")


BASE = baseline_candidate(crit("Coherence."))
EDIT = Candidate(crit("Coherence, sentence by sentence."), "edit", note="my edit")
FEW = Candidate(crit("Coherence with examples."), "fewshot", note="few-shot")


def scored(c: Candidate, stat: float, part: str = "dev") -> Scored:
    return Scored(candidate=c, part=part, run_id=f"r-{c.version[:4]}-{part}",
                  agreement=Agreement(stat, stat - 0.1, stat + 0.1, 80))


def difference(test_gain: float, verdict: str) -> Difference:
    """A paired difference on test whose verdict (loop.verdict_of) is ``verdict``: an interval on one side of 0 and
    p < 0.05 for a significant one, an interval across 0 and p = 0.6 otherwise."""
    if verdict == IMPROVED:
        lo, hi, p = test_gain / 2, test_gain * 1.5, 0.001
    elif verdict == WORSE:
        lo, hi, p = test_gain * 1.5, test_gain / 2, 0.001
    else:
        lo, hi, p = test_gain - 0.5, test_gain + 0.5, 0.6
    d = Difference.of(test_gain, lo, hi, p, 80, pvalue_bootstrap=p, pvalue_permutation=p, n_documents=20)
    assert verdict_of(d) == verdict  # the case is one the loop can produce
    return d


def final_check(dev_gain: float, test_gain: float, verdict: str) -> FinalCheck:
    diff = difference(test_gain, verdict)
    return FinalCheck(baseline=scored(BASE, 0.3, "test"), chosen=scored(EDIT, 0.3 + test_gain, "test"),
                      difference=diff, dev_gain=dev_gain, test_gain=test_gain, optimism=dev_gain - test_gain,
                      check_number=1, verdict=verdict)


def consistent(test_gain: float, verdict: str) -> bool:
    """The verdicts a test gain can have: "improved" needs an interval above 0 (so a positive gain), "worse" one
    below 0; an undefined gain (NaN) is never significant."""
    if test_gain != test_gain:
        return verdict == NS
    return {IMPROVED: test_gain > 0, WORSE: test_gain < 0}.get(verdict, True)


# dev gains: large, small, zero, the walkthrough's -0.007, undefined; test gains: as large as on development, a
# little, zero, the walkthrough's -0.034, a large loss, undefined
DEV_GAINS = (0.30, 0.04, 0.0, -0.007, NAN)
TEST_GAINS = (0.30, 0.02, 0.0, -0.034, -0.25, NAN)
CASES = [(d, t, v) for d, t, v in itertools.product(DEV_GAINS, TEST_GAINS, (IMPROVED, WORSE, NS)) if consistent(t, v)]


def _pos(x):
    return x == x and x > 0


def _nonpos(x):
    return x == x and x <= 0


# every claim a gain sentence can make, and when it is true (dev gain, test gain, verdict)
CLAIMS: list[tuple[str, object]] = [
    (r"^The development gain carried over", lambda d, t, v: _pos(d) and v == IMPROVED and t >= 0.5 * d),
    (r"Less than half of the development gain carried over", lambda d, t, v: _pos(d) and v == IMPROVED and t < 0.5 * d),
    (r"did not carry over", lambda d, t, v: _pos(d) and (v == WORSE or (v == NS and _nonpos(t)))),
    (r"do not confirm the development gain", lambda d, t, v: _pos(d) and v == NS),
    (r"test gain is positive", lambda d, t, v: _pos(t)),
    (r"less than half of the development gain", lambda d, t, v: _pos(d) and t < 0.5 * d),
    (r"no development gain to carry over", lambda d, t, v: _nonpos(d)),
    (r"agreed worse with the humans than the baseline on the development", lambda d, t, v: d == d and d < 0),
    (r"agreed no better with the humans than the baseline on the development", lambda d, t, v: d == 0),
    (r"significantly better", lambda d, t, v: v == IMPROVED),
    (r"significantly worse", lambda d, t, v: v == WORSE),
    (r"not significantly different", lambda d, t, v: v == NS),
    (r"did no better than the baseline", lambda d, t, v: _nonpos(t)),
    (r"development part did not predict", lambda d, t, v: _nonpos(d) and v == IMPROVED),
    (r"development gain is undefined", lambda d, t, v: d != d),
    (r"test gain is undefined", lambda d, t, v: d == d and t != t),
]


def claims_made(sentence: str) -> list[str]:
    return [pattern for pattern, _ in CLAIMS if re.search(pattern, sentence, flags=re.IGNORECASE)]


def assert_true_claims(sentence: str, d: float, t: float, v: str) -> None:
    made = claims_made(sentence)
    assert made, f"a gain sentence that makes none of the known claims: {sentence!r}"
    for pattern, holds in CLAIMS:
        if pattern in made:
            assert holds(d, t, v), f"dev {d}, test {t}, {v}: {pattern!r} is false in {sentence!r}"


@pytest.mark.parametrize("dev_gain,test_gain,verdict", CASES,
                         ids=[f"dev{d:+}-test{t:+}-{v.split()[0]}" for d, t, v in CASES])
def test_every_gain_sentence_is_true_for_its_signs(dev_gain, test_gain, verdict):
    sentence = views.gain_sentence(dev_gain, test_gain, verdict)
    assert_true_claims(sentence, dev_gain, test_gain, verdict)
    # "carried over" is said only of a development gain the paired tests found again on test
    if "carried over" in sentence:
        assert dev_gain > 0 and verdict == IMPROVED
    # the final check's words, as the page shows them: the verdict first, then the gains with their numbers
    check = final_check(dev_gain, test_gain, verdict)
    words = views.verdict_sentences(check)
    first = {IMPROVED: "agrees better", WORSE: "agrees WORSE", NS: "is not significantly different"}[verdict]
    assert first in words[0]
    assert sum(phrase in words[0] for phrase in ("agrees better", "agrees WORSE", "not significantly")) == 1
    assert words[1] == (f"Development gain {dev_gain:+.3f}, test gain {test_gain:+.3f}: optimism (development gain - "
                        f"test gain) {dev_gain - test_gain:+.3f}. {sentence}")


def test_the_walkthroughs_case_says_there_was_no_gain_to_carry_over():
    """Development gain -0.007, test gain -0.034, not significant: the case the walkthrough found called carried
    over."""
    words = views.verdict_sentences(final_check(-0.007, -0.034, NS))
    assert words[1] == ("Development gain -0.007, test gain -0.034: optimism (development gain - test gain) +0.027. "
                        "The chosen prompt agreed worse with the humans than the baseline on the development part: "
                        "there was no development gain to carry over, and selection on development did not favour "
                        "it. On the held-out documents it is not significantly different from the baseline.")
    assert "carried over" not in " ".join(words)


@given(dev=hs.floats(-1, 1), test=hs.floats(-1, 1), verdict=hs.sampled_from([IMPROVED, WORSE, NS]))
def test_gain_sentences_are_true_for_any_gains(dev, test, verdict):
    if not consistent(test, verdict):
        verdict = NS
    assert_true_claims(views.gain_sentence(dev, test, verdict), dev, test, verdict)


# ------------------------------------------------------------------------------- the candidate offered for test


def test_no_candidate_beat_the_baseline_none_is_offered_as_if_it_had():
    base = scored(BASE, 0.42)
    edit, few = scored(EDIT, 0.413), scored(FEW, 0.30)
    assert views.beat_baseline(base, [edit, few]) == []
    assert views.default_choice(base, [edit, few]) is None  # nothing gained: no default "best" to check
    said = views.selection_sentence(base, [edit, few], edit)
    assert said.startswith("No candidate beat the baseline on the development part: the baseline agrees 0.420 "
                           f"with the humans there, edit {EDIT.version[:8]} 0.413 (of 2 candidates scored).")
    assert "no development gain to confirm" in said and "counts as a look" in said
    assert views.choice_label(base, edit) == f"edit {EDIT.version[:8]} · development 0.413 (-0.007 over the baseline)"


def test_a_tie_with_the_baseline_is_no_gain_and_an_undefined_agreement_never_beats_it():
    base = scored(BASE, 0.42)
    tie, undefined = scored(EDIT, 0.42), scored(FEW, NAN)
    assert views.default_choice(base, [tie, undefined]) is None
    said = views.selection_sentence(base, [tie, undefined], undefined)
    assert f"fewshot {FEW.version[:8]} undefined" in said and "nan" not in said
    assert views.choice_label(base, undefined).endswith("development undefined (undefined over the baseline)")


def test_the_best_of_those_that_beat_the_baseline_is_offered_and_a_worse_pick_is_said():
    base = scored(BASE, 0.42)
    edit, few = scored(EDIT, 0.40), scored(FEW, 0.55)
    assert views.beat_baseline(base, [edit, few]) == [few]
    assert views.default_choice(base, [edit, few]) == few
    assert views.selection_sentence(base, [edit, few], few) is None  # it gained: nothing to warn about
    said = views.selection_sentence(base, [edit, few], edit)  # the researcher picked the other one
    assert said.startswith(f"edit {EDIT.version[:8]} did not beat the baseline on the development part (0.400 "
                           "against 0.420), while 1 other candidate did.")
