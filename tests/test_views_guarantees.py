"""The Guarantees section's view model (evalcore.views.guarantees) carries the analysis' figures: LLMBar's two GPT-4
runs (both presentation orders as confidence), PandaLM's one-order run (no confidence: nothing kept, and why), and
the Alignment page's expander under AppTest."""

from __future__ import annotations

import math

import pytest

from evalcore import runs as R
from evalcore.analyses import guarantees as ga
from evalcore.views import guarantees as gv
from evalcore.views.blocks import Table
from evalcore.views.common import run_names


def _tables(blocks) -> dict[str, object]:
    return {b.key: b.frame for b in blocks if isinstance(b, Table)}


def test_llmbar_rows_match_the_analysis():
    d = R.get_dataset("llmbar_natural")
    runs = [R.load_run(r.run_id) for r in R.list_runs("llmbar_natural")]
    t = _tables(gv.blocks(d, runs, run_names(runs), "preference"))["guar_selective"]
    assert len(t) == 2 * len(runs) and set(t["alpha"]) == {0.1, 0.2} and set(t["confidence"]) == {"orders"}
    for run in runs:
        a = ga.selective(d, run, "preference", alpha=0.2, delta=0.1, calibration_docs=50)
        row = t[(t["run"] == run_names(runs)[run.run_id]) & (t["alpha"] == 0.2)].iloc[0]
        assert row["coverage"] == a.result.coverage.statistic
        assert row["what_it_means"] == a.result.sentence
        if a.result.agreement_kept.n:
            assert math.isclose(row["agreement_kept"], a.result.agreement_kept.statistic)


def test_no_confidence_says_so():
    d = R.get_dataset("pandalm")
    runs = [R.load_run(r.run_id) for r in R.list_runs("pandalm")]
    t = _tables(gv.blocks(d, runs, run_names(runs), "preference"))["guar_selective"]
    assert set(t["confidence"]) == {"none"} and set(t["coverage"]) == {0.0}
    assert all("keeps nothing" in s for s in t["what_it_means"])


def test_expander_on_the_alignment_page():
    pytest.importorskip("streamlit")
    from tests.test_app_pages import assert_clean, new_app

    at = new_app(dataset="llmbar_natural", dimension="preference", resamples="50", guarantees_open="true")
    at.switch_page("pages/alignment.py").run()
    assert_clean(at)
    assert any("Selective evaluation" in str(h.value) for h in at.markdown) or \
        any("Selective evaluation" in str(h.value) for h in at.subheader)


def test_report_carries_the_guarantees_section():
    """The exported report's Guarantees section holds the figures the analysis computes: selective coverage at
    alpha 0.1 and 0.2 with delta 0.1, the reason where nothing is kept, and the conformal coverage."""
    from evalcore.views import report as report_views
    from evalcore.views.html_report import format_cell

    d = R.get_dataset("summeval")
    runs = [R.load_run("summeval/shen-gpt-4-0314-rts"), R.load_run("summeval/shen-gpt-3.5-turbo-0301-rts")]
    p = report_views.AnalysisParams(dataset_id="summeval", run_ids=[r.run_id for r in runs], dimension="coherence",
                                    n_resamples=20)
    (sec,) = report_views.guarantees_sections(d, runs, p)
    assert sec.title == "Guarantees: coherence" and "alpha 0.1 and 0.2, delta 0.1" in sec.text
    tables = {t.title: t.frame for t in sec.tables}
    sel_t, conf_t = tables["Selective evaluation"], tables["Intervals for each item's human score (90%)"]
    html = report_views.analysis_report(d, runs, p)
    assert "<h2>Guarantees: coherence</h2>" in html
    for run in runs:
        name = run_names(runs)[run.run_id]
        for alpha in (0.1, 0.2):
            a = ga.selective(d, run, "coherence", alpha=alpha, delta=0.1, calibration_docs=50, jury=[
                r for r in runs if r is not run])
            row = sel_t[(sel_t["run"] == name) & (sel_t["alpha"] == alpha)].iloc[0]
            expect = 0.0 if a.result is None else a.result.coverage.statistic
            assert row["coverage"] == expect
            said = a.reason if a.result is None else a.result.sentence
            assert row["what_it_means"] == said
            assert html_escape(said) in html
        c = ga.conformal(d, run, "coherence", level=0.9, calibration_docs=50)
        assert conf_t[conf_t["run"] == name].iloc[0]["coverage"] == c["coverage"]
        assert format_cell(float(c["coverage"])) in html or f"{100 * c['coverage']:.1f}%" in html


def html_escape(s: str) -> str:
    import html

    return html.escape(s)


@pytest.mark.usefixtures("first_start")
def test_abstained_items_become_the_label_pages_queue():
    """The expander's button hands a run's abstained items (at alpha 0.1) to the Label page, which offers exactly
    those, in the random order's sequence, as its queue, its labels recorded as not a random sample."""
    pytest.importorskip("streamlit")
    from evalcore import labels
    from tests.test_app_pages import assert_clean, new_app

    gpt4, chatgpt = "summeval/shen-gpt-4-0314-rts", "summeval/shen-gpt-3.5-turbo-0301-rts"
    d = R.get_dataset("summeval", with_labels=False)
    runs = [R.load_run(gpt4), R.load_run(chatgpt)]
    _, abstained = gv.section(d, runs, run_names(runs), "coherence")
    want = gv.label_queues(d, abstained)[gpt4]
    assert want and set(want) <= set(abstained[gpt4])
    at = new_app(dataset="summeval", runs=[gpt4, chatgpt], dimension="coherence", guarantees_open="true")
    at.switch_page("pages/alignment.py").run()
    assert_clean(at)
    at.session_state["annotator"] = "ann"  # signed in as an annotator (the Label page's own field)
    at.button(key="guar_label_0").click().run()
    assert_clean(at)
    assert at.title[0].value == "Label"
    assert at.session_state["label_order"] == "uncertain" and at.session_state["label_dims"] == ["coherence"]
    captions = " ".join(str(c.value) for c in at.caption)
    assert f"{len(want)} items" in captions and "abstained on for coherence" in captions
    order = labels.handed_order(d, want)
    assert order == [i for i in labels.random_order(d) if i in set(want)] and len(order) == len(want)
    outputs = d.items.assign(item_id=d.items["item_id"].astype(str)).set_index("item_id")["output"]
    assert at.code[0].value == outputs[order[0]]  # the first item shown is the queue's first
    at.switch_page("pages/label.py")  # AppTest reruns the page it was last told; the browser stays on Label
    at.button(key="label_rate_3").click().run()
    assert_clean(at)
    from evalcore.store import default_store

    rows = default_store().label_rows("summeval")
    assert list(rows["item_id"].astype(str)) == [order[0]] and list(rows["strategy"]) == [f"uncertain:abstained:{gpt4}"]
    assert labels.random_part(rows) == set()  # kept out of the estimates
    assert at.code[0].value == outputs[order[1]]


def test_cascade_table_matches_the_analysis_and_orders_by_cost():
    """LLMBar's runs in the order selected (no recorded usage): the stages equal evalcore.analyses.guarantees.cascade
    on them; SummEval's runs with recorded usage: the cheapest per item first; people take the rest."""
    from evalcore.views.jury import run_cost

    d = R.get_dataset("llmbar_natural")
    runs = [R.load_run(r.run_id) for r in R.list_runs("llmbar_natural")]
    t = _tables(gv.blocks(d, runs, run_names(runs), "preference"))["guar_cascade"]
    k = ga.cascade(d, runs, "preference", alpha=0.1, delta=0.1, calibration_docs=50, costs=[0] * len(runs),
                   human_cost=0)
    assert list(t["stage"][:-1]) == [run_names(runs)[s["stage"]] for s in k["stages"]]
    assert list(t["kept"][:-1]) == [s["kept"] for s in k["stages"]] and t["kept"].iloc[-1] == k["to_humans"]
    assert sum(t["kept"]) == k["test_items"]  # every held-out item is kept by one stage or goes to people
    s = R.get_dataset("summeval")
    sruns = [R.load_run("summeval/shen-gpt-4-0314-rts"), R.load_run("summeval/shen-gpt-3.5-turbo-0301-rts")]
    c = gv.cascade_table(s, sruns, run_names(sruns), "coherence")
    per_item = {run_names(sruns)[r.run_id]: run_cost(r) / r.judgments["item_id"].nunique() for r in sruns}
    assert list(c["stage"][:-1]) == sorted(per_item, key=per_item.get)
    assert [math.isclose(c["usd_per_item_judged"].iloc[i], per_item[c["stage"].iloc[i]]) for i in (0, 1)] == [True] * 2


def binary_study(n: int = 200, seed: int = 1):
    """A binary dimension ("ok", 0/1) and a judge right 85% of the time, imported as the Data page imports a file."""
    import numpy as np
    import pandas as pd

    from evalcore.api import _mapping
    from evalcore.importers.api import import_table

    rng = np.random.default_rng(seed)
    human = rng.integers(0, 2, n)
    judge = np.where(rng.random(n) < 0.85, human, 1 - human)
    f = pd.DataFrame({"document": [f"d{i // 2}" for i in range(n)], "system": ["x", "y"] * (n // 2),
                      "human": human, "judge": judge})
    table, m = _mapping(f, judge="judge", human="human", document="document", system="system", annotator=None,
                        dimension="ok", scale=(0, 1), kind="binary", labels=None)
    return import_table((table.to_json(orient="records", lines=True).encode(), "binary.jsonl"), m, name="binary",
                        task="binary verdicts")


def expected_saving(dataset, run, n_cal: int, seed: int = 0) -> tuple[dict, float]:
    """Strata sizes and the saving recomputed by hand: W_j, p_j from the calibration documents, saving
    p(1 - p) / (sum_j W_j sqrt(p_j (1 - p_j)))^2 (Cochran 1977, 5.5)."""
    import numpy as np

    from evalcore.meta import selective as sel

    f = R.score_frame(dataset, run, "ok")
    cal, _ = sel.split_documents(f["doc_id"], n_cal, seed)
    is_cal = f["doc_id"].isin(cal)
    sizes, ws, ps = {}, [], []
    for verdict, name in ((0, "judge negative"), (1, "judge positive")):
        test = ~is_cal & (f["judge"] == verdict)
        sizes[name] = int(test.sum())
        ps.append(f.loc[is_cal & (f["judge"] == verdict), "human"].mean())
        ws.append(test.sum() / (~is_cal).sum())
    ws, ps = np.array(ws), np.array(ps)
    pbar = (ws * ps).sum()
    return sizes, pbar * (1 - pbar) / (ws * np.sqrt(ps * (1 - ps))).sum() ** 2


def test_binary_dimension_shows_the_stratified_plan():
    res = binary_study()
    d, run = res.dataset, res.runs[0]
    t = _tables(gv.blocks(d, [run], run_names([run]), "ok"))["guar_stratified"]
    sizes, saving = expected_saving(d, run, gv._calibration_docs(d))
    assert dict(zip(t["stratum"], t["items"])) == sizes
    assert t["labels"].sum() == gv.plan_labels(d)
    assert t["saving_vs_random"].iloc[0] == pytest.approx(saving)
    assert saving > 1.5  # an 85%-right judge purifies the strata
    assert list(t["inclusion"]) == pytest.approx(list(t["labels"] / t["items"]))
    # a rating dimension has no such table
    sd = R.get_dataset("llmbar_natural")
    sruns = [R.load_run(r.run_id) for r in R.list_runs("llmbar_natural")]
    assert "guar_stratified" not in _tables(gv.blocks(sd, sruns, run_names(sruns), "preference"))


def test_a_run_on_one_document_gets_a_sentence_not_a_crash():
    """A partial run is split among the documents it judged; on one document there is no calibration part and no
    held-out part, and the section says so (the report's Guarantees section raised on it)."""
    import dataclasses

    from evalcore.views.blocks import Note

    d = R.get_dataset("summeval")
    full = R.load_run("summeval/shen-gpt-4-0314-rts")
    doc = d.items["doc_id"].iloc[0]
    ids = set(d.items.loc[d.items["doc_id"] == doc, "item_id"])
    one = dataclasses.replace(full, judgments=full.judgments[full.judgments["item_id"].isin(ids)])
    assert gv.scored_documents(d, one, "coherence") == 1
    blocks, abstained = gv.section(d, [one], {one.run_id: "one"}, "coherence")
    assert abstained == {} and [type(b) for b in blocks] == [Note]
    assert "judged 1 document on coherence" in blocks[0].text and "needs at least two" in blocks[0].text
    two = {doc, d.items["doc_id"].iloc[-1]}
    ids2 = set(d.items.loc[d.items["doc_id"].isin(two), "item_id"])
    part = dataclasses.replace(full, judgments=full.judgments[full.judgments["item_id"].isin(ids2)])
    assert gv._calibration_docs(d, [part], "coherence") == 1  # one calibrates, one is held out
