"""evalcore.views.improve: the Improve page's frames and figures, checked against independent counts and by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from evalcore import datasets
from evalcore.align import make_split
from evalcore.align.candidates import Candidate, baseline_candidate
from evalcore.align.disagreement import Disagreement
from evalcore.align.loop import Agreement, Difference, FinalCheck, Scored, Settings
from evalcore.types import Criteria
from evalcore.views import improve as views


@pytest.fixture(scope="module")
def summeval():
    return datasets.load_dataset("summeval")


def crit(definition: str) -> Criteria:
    return Criteria(dimension="coherence", task_introduction="Rate the summary.", definition=definition,
                    scale_min=1, scale_max=5, steps="1. Read.")


def scored(c: Candidate, stat: float, lo: float, hi: float, part: str = "dev", n: int = 80) -> Scored:
    return Scored(candidate=c, part=part, run_id=f"r-{c.version[:4]}-{part}", agreement=Agreement(stat, lo, hi, n))


def test_split_by_system_counts_items_of_each_part(summeval):
    split = make_split(summeval, "coherence", test_share=0.3, seed=3)
    t = views.split_by_system(summeval, split).set_index("system")
    items = summeval.items.assign(test=summeval.items["doc_id"].astype(str).isin(set(split.test_docs)))
    expected = items.groupby(items["system_id"].astype(str))["test"].agg(["sum", "size"])
    assert t["test items"].to_dict() == expected["sum"].to_dict()
    assert (t["development items"] + t["test items"]).to_dict() == expected["size"].to_dict()
    assert t["test share"].tolist() == pytest.approx([30 / 100] * 16)  # every SummEval document has all 16
    parts = views.split_overview(split).set_index("part")["documents"].to_dict()
    assert parts == {"development": 70, "test": 30}
    assert "70 development / 30 test documents" in views.split_label(split)
    # counts only: no human score of either part in what the split section shows
    assert not {"human", "score", "label"} & set(t.columns)


def test_candidates_table_gain_and_unscored_rows():
    base = baseline_candidate(crit("Coherence."))
    good = Candidate(crit("Coherence, built sentence by sentence."), "proposal", note="proposed")
    new = Candidate(crit("Coherence with examples."), "fewshot", note="few-shot")
    t = views.candidates_table(scored(base, 0.25, 0.1, 0.4), [scored(good, 0.9, 0.85, 0.95)], [new],
                               chosen=good.version)
    assert list(t["source"]) == ["baseline", "proposal", "fewshot"]
    assert t.loc[1, "gain over baseline"] == pytest.approx(0.65) and t.loc[0, "gain over baseline"] == 0
    assert list(t["chosen"]) == ["", "yes", ""] and t.loc[2, "status"] == "not scored yet"
    assert math.isnan(t.loc[2, "development agreement"])
    assert t.loc[1, "candidate"] == f"proposal {good.version[:8]}"
    fig = views.candidates_figure(t)
    assert len(fig.data) == 2  # the unscored candidate is not drawn
    err = fig.data[1].error_y
    assert err.array[0] == pytest.approx(0.05) and err.arrayminus[0] == pytest.approx(0.05)


def _check(dev_gain: float, diff: Difference, number: int = 1) -> tuple[FinalCheck, Scored, Scored]:
    base = baseline_candidate(crit("Coherence."))
    chosen = Candidate(crit("Coherence, memorised."), "edit")
    b_dev, c_dev = scored(base, 0.2, 0.0, 0.4), scored(chosen, 0.2 + dev_gain, 0.1, 0.95)
    verdict = "improved" if diff.ci_low > 0 else "worse" if diff.ci_high < 0 else "no significant difference"
    check = FinalCheck(baseline=scored(base, 0.3, 0.1, 0.5, "test"),
                       chosen=scored(chosen, 0.3 + diff.statistic, 0.1, 0.6, "test"), difference=diff,
                       dev_gain=dev_gain, test_gain=diff.statistic, optimism=dev_gain - diff.statistic,
                       check_number=number, verdict=verdict)
    return check, b_dev, c_dev


def test_the_verdict_in_words():
    # a development gain that does not carry over (the designed overfitting case): said so, with the optimism
    check, b, c = _check(0.6, Difference.of(0.02, -0.1, 0.14, 0.7, 80))
    words = views.verdict_sentences(check)
    assert words[0].startswith("On the held-out test documents the chosen prompt is not significantly different")
    assert "+0.020 (95% CI -0.100 to +0.140, p = 0.700)" in words[0]
    assert words[1] == ("Development gain +0.600, test gain +0.020: optimism (development gain - test gain) +0.580. "
                        "The held-out documents do not confirm the development gain: the test gain is positive but "
                        "not significantly different from zero, and less than half of the development gain.")
    assert words[2] == "This is the first final check on this split's test part."
    # a real improvement, looked at for the third time
    check, b, c = _check(0.5, Difference.of(0.45, 0.3, 0.6, 0.004, 80, pvalue_bootstrap=0.002,
                                         pvalue_permutation=0.004, n_documents=10), number=3)
    words = views.verdict_sentences(check)
    assert "agrees better" in words[0] and "carried over" in words[1] and "did not" not in words[1]
    assert "final check number 3" in words[2]
    assert words[3].startswith("The p-value is the larger of two paired tests over the 10 test documents")
    assert "p = 0.002" in words[3] and "p = 0.004" in words[3]
    t = views.difference_table(check)
    assert t.loc[0, "optimism"] == pytest.approx(0.05) and t.loc[0, "final check on this split"] == 3
    table = views.test_table(check, b, c)
    assert table["test"].tolist() == pytest.approx([0.3, 0.75]) and table["development"].tolist() == [0.2, 0.7]


def test_every_figure_labels_its_axes(summeval):
    dis = Disagreement(
        dimension="coherence",
        items=pd.DataFrame(), confusion=None, judge_scale=(1.0, 5.0), human_scale=(1.0, 5.0),
        by_system=pd.DataFrame({"system_id": ["M1", "M2"], "n": [3, 3], "mean_gap": [1.2, 0.4],
                                "mean_judge": [3.0, 3.1], "mean_human": [4.0, 3.0]}),
        by_human=pd.DataFrame({"human_score": [2.0, 4.0], "n": [2, 4], "mean_gap": [1.0, 0.5],
                               "mean_judge": [3.0, 3.5]}))
    base = baseline_candidate(crit("Coherence."))
    check, b, c = _check(0.3, Difference.of(0.2, 0.1, 0.3, 0.01, 80))
    figs = [views.by_system_figure(dis), views.by_human_figure(dis),
            views.candidates_figure(views.candidates_table(scored(base, 0.2, 0.1, 0.3), [])),
            views.test_figure(check, b, c)]
    for fig in figs:
        layout = fig.layout
        assert layout.xaxis.title.text and layout.yaxis.title.text, layout.title.text
        assert layout.title.text


def test_final_checks_table_and_saved_candidates():
    rows = [{"created_at": "2026-11-24T20:00:00", "method": "geval", "chosen_hash": "abcdef0123456789",
             "result": {"difference": {"statistic": 0.2, "ci_low": 0.1, "ci_high": 0.3, "pvalue": 0.01},
                        "dev_gain": 0.3, "optimism": 0.1}},
            {"created_at": "2026-11-24T20:05:00", "method": "geval", "chosen_hash": "abcdef0123456789",
             "result": {"difference": {"statistic": 0.2, "ci_low": None, "ci_high": None, "pvalue": None},
                        "dev_gain": 0.3, "optimism": 0.1}}]
    t = views.final_checks_table(rows)
    assert t["check"].tolist() == [1, 2] and t.loc[0, "chosen version"] == "abcdef01"
    assert math.isnan(t.loc[1, "ci_low"])  # a figure the check could not compute is empty, never "None"
    from evalcore.views.format import display_table

    assert "None" not in display_table(t).as_text().to_string()
    a, b = crit("A."), crit("B.")
    versions = [  # newest first, as the store lists them
        {"note": "align fewshot: few-shot: 4 development examples by coverage, seed 0", "criteria": b},
        {"note": "my own version", "criteria": crit("C.")},
        {"note": "align proposal: proposed by m from 8 development disagreements", "criteria": a}]
    got = views.saved_candidates(versions)
    assert [(c.source, c.criteria.definition) for c in got] == [("proposal", "A."), ("fewshot", "B.")]
    assert got[1].note == "few-shot: 4 development examples by coverage, seed 0"


def test_confusion_cells_of_a_binary_dimension_match_a_crosstab():
    """The confusion cells shown for a categorical dimension: counts equal a pandas crosstab of the development
    items' human and judge labels (evalcore.testing.labels: a seeded binary dataset and judge run)."""
    from evalcore.align.disagreement import disagreements
    from evalcore.testing.labels import label_dataset, label_run

    ds, truth = label_dataset(kind="binary", n_docs=20)
    run = label_run(ds, truth)
    split = make_split(ds, "faithful", test_share=0.3, seed=0)
    dis = disagreements(ds, run, "faithful", split)
    t = views.confusion_table(dis)
    assert set(t["human label"]) == {"fail", "pass"} and t["items"].sum() == len(dis.items)
    items = dis.items
    expected = pd.crosstab(items["human"].round().astype(int), items["judge_on_human_scale"].round().astype(int))
    for r in t.itertuples(index=False):
        h, j = ("fail", "pass").index(r[0]), ("fail", "pass").index(r[1])
        assert r[2] == (expected.loc[h, j] if h in expected.index and j in expected.columns else 0)
    assert set(items["doc_id"]) <= set(split.dev_docs)  # development items only
    assert views.confusion_table(Disagreement("x", items.head(0), items.head(0), items.head(0), None, (1, 5),
                                              (1, 5))).empty


# ------------------------------------------------------------------------------------------- the page's view model


def test_split_section_warns_about_parts_too_small(summeval):
    from evalcore.sampling import documents_subset
    from evalcore.views.blocks import Table, notes, tables

    ok = views.split_section(summeval, make_split(summeval, "coherence", test_share=0.3, seed=3))
    assert notes(ok.warnings) == [] and [t.key for t in tables(ok.parts + ok.systems)] == ["split_parts",
                                                                                           "split_systems"]
    assert isinstance(ok.parts[0], Table) and ok.parts[0].static and ok.systems[0].height == 240
    sub = documents_subset(summeval, list(dict.fromkeys(summeval.items["doc_id"]))[:8])
    small = views.split_section(sub, make_split(sub, "coherence", test_share=0.5, seed=0))
    [both, perm] = notes(small.warnings, "warning")
    assert both.startswith("The development and test parts of this split hold fewer than 10 documents")
    # 4 test documents: 2^4 = 16 arrangements, the smallest p-value 2/16
    assert perm.startswith("The test part holds 4 documents: swapping two prompts on whole documents gives 16 "
                           "arrangements, so no p-value can fall below 0.125")


def test_estimate_note_says_requests_cache_and_price():
    import dataclasses
    from types import SimpleNamespace

    from evalcore.align.loop import PartEstimate

    paid, local = SimpleNamespace(provider="openai"), SimpleNamespace(provider="vllm")
    est = PartEstimate("dev", 1, calls=1200, cached=30, prompt_tokens=480000, completion_tokens=0, cost_usd=0.5)
    note = views.estimate_note(est, "the baseline on the development part", paid)
    assert note.kind == "caption"
    plain = note.text.replace("\\", "")
    assert plain == ("Estimate for the baseline on the development part: 1,200 requests to send (30 more are "
                     "repeats or already in the cache), about 480,000 prompt tokens, about $0.5000.")
    assert "\\$" in note.text  # escaped: a dollar sign is never read as LaTeX
    assert views.estimate_note(dataclasses.replace(est, cost_usd=None), "x", paid).text.replace("\\", "").endswith(
        "unknown price (the model is not in the price table).")
    assert views.estimate_note(est, "x", local).text.replace("\\", "").endswith("a local server: no price.")
    assert views.estimate_note(dataclasses.replace(est, calls=0), "x", paid).text.replace("\\", "") == (
        "Estimate for x: nothing to send (its 30 requests are repeats or already in the cache).")


def test_selection_and_the_final_step_when_a_candidate_gained_and_when_none_did():
    base = baseline_candidate(crit("Coherence."))
    a = Candidate(crit("Coherence A."), "edit")
    b = Candidate(crit("Coherence B."), "proposal")
    b_dev = scored(base, 0.4, 0.2, 0.6)
    gained = [scored(a, 0.5, 0.3, 0.7), scored(b, 0.7, 0.5, 0.9)]
    pick = views.selection(b_dev, gained)
    assert pick.versions == [a.version, b.version] and pick.default == b.version
    assert pick.label(b.version) == f"proposal {b.version[:8]} · development 0.700 (+0.300 over the baseline)"
    offer = views.final_offer(b, 0, None)
    assert (offer.label, offer.primary, offer.anyway) == ("Run the final check on test", True, None)
    assert offer.caption.text.endswith("this split's test part has not been looked at yet.")
    again = views.final_offer(b, 2, None)
    assert again.label == "Run the final check again (check 3)"
    assert "has been looked at twice already; another check is allowed and will be reported as check number 3." \
        in again.caption.text
    # none beat the baseline: the best of them all is the default, and the check needs a ticked box
    worse = [scored(a, 0.1, 0.0, 0.3), scored(b, 0.3, 0.1, 0.5)]
    pick = views.selection(b_dev, worse)
    assert pick.default == b.version
    no_gain = views.selection_sentence(b_dev, worse, pick.by_version[pick.default])
    offer = views.final_offer(b, 1, no_gain)
    assert offer.label == "Run the final check anyway again (check 2)" and not offer.primary
    assert offer.anyway.startswith(f"Check proposal {b.version[:8]} on test anyway")
    assert views.picked(worse, a.version, worse[1]) is worse[0] and views.picked(worse, "gone", worse[1]) is worse[1]


def test_baseline_metrics_and_the_verdict_blocks():
    from evalcore.views.blocks import Figure, notes, tables

    base = baseline_candidate(crit("Coherence."))
    dis = Disagreement(dimension="coherence", items=pd.DataFrame({"item_id": ["a", "b", "c"]}), confusion=None,
                       judge_scale=(1.0, 5.0), human_scale=(1.0, 5.0), by_system=pd.DataFrame(),
                       by_human=pd.DataFrame())
    m = views.baseline_metrics(scored(base, 0.41234, 0.2, math.nan), dis)
    assert [(x.label, x.value) for x in m.items] == [("Baseline agreement (development)", "0.412"),
                                                     ("Development items judged", "3"),
                                                     ("Failed (unreadable replies)", f"{dis.failed:,}")]
    assert m.items[0].help == "95% CI 0.200 to n/a"
    check, b, c = _check(0.5, Difference.of(0.45, 0.3, 0.6, 0.004, 80), number=2)
    blocks = views.verdict_blocks(check, b, c, Settings())
    assert [n.replace("\\", "") for n in notes(blocks, "success")] == [views.verdict_sentences(check)[0]]
    assert len(notes(blocks, "markdown")) == len(views.verdict_sentences(check)) - 1
    assert [t.key for t in tables(blocks)] == ["align_test_table", "align_difference"]
    assert all(t.static for t in tables(blocks)) and sum(isinstance(x, Figure) for x in blocks) == 1
    worse = views.verdict_blocks(*_check(0.5, Difference.of(-0.3, -0.5, -0.1, 0.01, 80)), Settings())
    assert len(notes(worse, "warning")) == 1 and not notes(worse, "success")


def test_keep_adds_a_candidate_once_and_saves_it(tmp_path):
    from evalcore.store import Store

    store = Store(tmp_path / "s.db")
    base = crit("Coherence.")
    ws = views.Workspace(dataset=type("D", (), {"id": "summeval"})(), dimension="coherence", split=None,
                         method="geval", endpoint=None, options=None, store=store, settings=Settings(), owner=None)
    cands: list = []
    new = Candidate(crit("Coherence, reworded."), "edit", note="edited")
    assert ws.keep(cands, baseline_candidate(base), base, may_act=True).text == (
        "This candidate is identical to the baseline: not added.")
    note = ws.keep(cands, new, base, may_act=False)
    assert note.kind == "warning" and note.text.startswith("Sign in to keep a candidate") and cands == []
    note = ws.keep(cands, new, base, may_act=True)
    assert note.kind == "success" and cands == [new]
    assert note.text.replace("\\", "") == f"Kept edit {new.version[:8]} as a candidate (saved as a criteria version)."
    assert ws.keep(cands, new, base, may_act=True).text == f"Candidate {new.version[:8]} is already in the list."
    assert cands == [new]
    # saved: it comes back among the loop's saved candidates (the baseline left out)
    assert [c.version for c in ws.saved_candidates(None, base)] == [new.version]
