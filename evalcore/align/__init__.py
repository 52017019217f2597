"""Judge alignment, honestly (issue 22): from development disagreements to a better prompt, proven on a held-out
test part the loop never looked at.

* :mod:`evalcore.align.split`: a seeded, stratified split of the DOCUMENTS into development and test, kept in the
  store with the dataset (``Split``, ``make_split``, ``save_split``, ``load_split``, ``list_splits``,
  ``split_dataset``);
* :mod:`evalcore.align.disagreement`: on the development part, the items where judge and humans disagree most, with
  the judge's reply, per system and per human score, and confusion cells for categorical dimensions;
* :mod:`evalcore.align.candidates`: candidate criteria versions: the researcher's edit, an LLM proposal from the
  development disagreements (visible, editable META_PROMPT; shown as a diff), few-shot examples from development;
* :mod:`evalcore.align.loop`: candidates scored on development (cost estimate first), one chosen, then the baseline
  and the chosen one scored once on test and compared by the paired test (difference, CI, p-value), optimism =
  development gain - test gain, every final check counted;
* :mod:`evalcore.align.queue`: the Improve page's scoring jobs, one after another (what is done, running, pending);
* :mod:`evalcore.align.auto`: the whole loop unattended (``python -m evalcore align``), its knobs in ``AlignSettings``.

No Streamlit here; the page builds on these functions.
"""

from evalcore.align.candidates import (
    FEWSHOT_HOW, META_PROMPT, SOURCES, Candidate, Proposal, baseline_candidate, baseline_criteria, build_meta_prompt,
    edit_candidate,
    example_pool, fewshot_candidate, parse_proposal, propose, save_candidate,
)
from evalcore.align.disagreement import Disagreement, disagreements
from evalcore.align.loop import (
    CHOOSE_BEST_DEV, Agreement, AlignReport, Difference, FinalCheck, Scored, Settings, agreement_of, choose,
    compare_on_test, estimate_dev, estimate_part, final_check, part_frame, run_id_for, score_candidate, score_on_dev,
    verdict_of,
)
from evalcore.align.split import (
    DEV, TEST, Split, check_dev_only, list_splits, load_split, make_split, save_split, split_dataset,
)
from evalcore.align.auto import AlignSettings, align, make_candidates

__all__ = [
    "Split", "make_split", "save_split", "load_split", "list_splits", "split_dataset", "check_dev_only", "DEV", "TEST",
    "Disagreement", "disagreements",
    "Candidate", "Proposal", "SOURCES", "FEWSHOT_HOW", "META_PROMPT", "baseline_candidate", "baseline_criteria",
    "edit_candidate",
    "build_meta_prompt", "parse_proposal", "propose", "example_pool", "fewshot_candidate", "save_candidate",
    "Settings", "Agreement", "Scored", "Difference", "FinalCheck", "AlignReport", "CHOOSE_BEST_DEV", "estimate_dev",
    "estimate_part", "score_candidate", "score_on_dev", "choose", "final_check", "agreement_of", "part_frame",
    "run_id_for", "compare_on_test", "verdict_of",
    "AlignSettings", "align", "make_candidates",
]
