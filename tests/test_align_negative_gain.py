"""``python -m evalcore align`` when no candidate beats the baseline on development: the progress lines say so before
the final check, and the text output reads the two gains as the Improve page does (evalcore.align.loop.gain_sentence),
never as a gain that carried over."""

from __future__ import annotations

from evalcore import datasets
from evalcore.cli import main
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_align import PromptQualityJudge

BASELINE_PHRASE = "heap of related information"  # in G-Eval's coherence definition, the baseline's


def test_no_candidate_beat_the_baseline_said_by_the_cli(tmp_path, capsys):
    # good with the baseline's definition, weak with the edit that drops the phrase
    judge = PromptQualityJudge.for_dataset(datasets.load_dataset("summeval"), "coherence",
                                           rubric_phrase=BASELINE_PHRASE)
    with serve(scorer=judge) as srv:
        code = main(["align", "--dataset", "summeval", "--dimension", "coherence", "--method", "geval", "--model",
                     "loopback-judge", "--provider", "vllm", "--sample-docs", "12", "--test-share", "0.5", "--seed",
                     "0", "--candidates", "0", "--edit-definition", "Coherence: how well the summary reads.",
                     "--resamples", "200", "--base-url", srv.base_url, "--db", str(tmp_path / "s.db")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert ("note: no candidate beat the baseline on development: the final check has no development gain to "
            "confirm, and it counts as a look at this test part") in out.err
    gain_line = next(line for line in out.out.splitlines() if line.startswith("development gain "))
    assert float(gain_line.split()[2].rstrip(",")) < 0  # the edit is worse than the baseline on development
    assert "there was no development gain to carry over" in out.out
    assert "carried over" not in out.out
