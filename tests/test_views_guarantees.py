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
