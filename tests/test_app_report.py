"""The HTML report export: one self-contained file (plotly.js inlined, no external script), holding the numbers of
the tables it was built from, with every dataset text escaped."""

from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go
import pytest
from scipy import stats

from evalcore import runs as runs_mod
from evalcore.views import alignment as alignment_views
from evalcore.views import report as report_views
from evalcore.views.html_report import ReportFigure, ReportSection, ReportTable, format_cell, render_report

GPT4_RTS = "summeval/shen-gpt-4-0314-rts"
CHATGPT_RTS = "summeval/shen-gpt-3.5-turbo-0301-rts"

EXTERNAL_SCRIPT = re.compile(r"<script[^>]*\bsrc\s*=\s*[\"']?\s*(https?:)?//", re.IGNORECASE)
EXTERNAL_LINK = re.compile(r"<link[^>]*\bhref\s*=\s*[\"']?\s*(https?:)?//", re.IGNORECASE)


@pytest.fixture(scope="module")
def summeval_report():
    dataset = runs_mod.get_dataset("summeval")
    runs = [runs_mod.load_run(GPT4_RTS), runs_mod.load_run(CHATGPT_RTS)]
    params = report_views.AnalysisParams(dataset_id="summeval", run_ids=[GPT4_RTS, CHATGPT_RTS], dimension="coherence",
                                  level="summary", coefficient="kendall", n_resamples=20)
    html = report_views.analysis_report(dataset, runs, params)
    table = alignment_views.alignment_table(dataset, runs, "coherence", n_resamples=20)
    return dataset, runs, html, table


def test_report_is_self_contained(summeval_report):
    _, _, html, _ = summeval_report
    assert html.startswith("<!DOCTYPE html>")
    assert "plotly.js v" in html  # the library itself is inlined ...
    assert html.count("plotly.js v") == 1  # ... once, however many charts
    assert html.count("Plotly.newPlot") >= 3  # correlation bars, per-system box plot, meta-correlation scatter
    assert not EXTERNAL_SCRIPT.search(html)
    assert not EXTERNAL_LINK.search(html)


def test_report_holds_the_table_numbers(summeval_report):
    dataset, runs, html, table = summeval_report
    for x in table["statistic"]:
        assert format_cell(float(x)) in html
    for x in table["ci_low"].tolist() + table["ci_high"].tolist():
        assert format_cell(float(x)) in html
    # one number checked against scipy directly: dataset-level Spearman of GPT-4 RTS on coherence
    frame = runs_mod.score_frame(dataset, runs[0], "coherence").dropna(subset=["judge"])
    rho = stats.spearmanr(frame["judge"], frame["human"]).statistic
    assert f"{rho:.4f}" in html
    assert "1200" in html  # n items at dataset level (12 abstractive systems x 100 documents)
    # the view's parameters are stated
    assert "kendall" in html and "coherence" in html and "Human ceiling (summary, kendall)" in html


def test_report_states_each_judges_fingerprint_and_the_labels_hash(summeval_report):
    from evalcore.fingerprint import fingerprint, labels_hash

    dataset, runs, html, _ = summeval_report
    assert "What these figures rest on" in html and "Judge fingerprints" in html
    assert f"labels hash {labels_hash(dataset, ['coherence'])}" in html
    for run in runs:
        fp = fingerprint(run)
        assert fp["hash"][:12] in html and run.run_id in html and fp["model"] in html
    for header in ("reported model", "endpoint", "provider", "method", "variant", "prompt hash", "parameters"):
        assert f"<th>{header}</th>" in html


def test_report_escapes_text_and_embeds_csv():
    hostile = '<script>alert("x")</script>'
    frame = pd.DataFrame({"item": [hostile], "score": [0.123456], "n": [7]})
    fig = go.Figure(go.Bar(x=[hostile], y=[1]))
    html = render_report("a <b>title</b>", [ReportSection(
        title="s <i>1</i>", text=hostile, tables=[ReportTable("t", frame)], figures=[ReportFigure("f", fig)])])
    assert hostile not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<title>a &lt;b&gt;title&lt;/b&gt;</title>" in html
    assert ">0.1235<" in html and ">7<" in html
    assert 'href="data:text/csv;base64,' in html


def test_format_cell():
    assert format_cell(0.5) == "0.5000"
    assert format_cell(float("nan")) == ""
    assert format_cell(None) == ""
    assert format_cell(3) == "3"
    assert format_cell(["a", 1.0]) == "a, 1.0000"


def test_report_charts_use_the_pages_run_colours(summeval_report):
    """A run has one colour in every chart of the report, the colour the pages give it."""
    from evalcore.views.common import label_colors

    dataset, runs, _, _ = summeval_report
    expected = label_colors(runs_mod.list_runs("summeval"))
    params = report_views.AnalysisParams(dataset_id="summeval", run_ids=[r.run_id for r in runs],
                                         dimension="coherence", level="summary", coefficient="kendall",
                                         n_resamples=20)
    seen: dict[str, set] = {}
    for section in report_views.analysis_sections(dataset, runs, params):
        for fig in section.figures:
            for trace in fig.figure.data:
                name = str(trace.name or "").split(" (M=")[0]
                if name in expected:
                    colour = trace.marker.color if trace.marker is not None else None
                    seen.setdefault(name, set()).add(colour)
    assert set(seen) == {r.label for r in runs}
    for name, colours in seen.items():
        assert colours == {expected[name]}, (name, colours)
    titles = [s.title for s in report_views.analysis_sections(dataset, runs, params)]
    assert "Per-system correlations and meta-correlation (Shen et al. 2023)" in titles and "Sources" in titles


def test_report_has_bias_and_compare_sections_whole_counts_and_a_readable_forest(summeval_report):
    """Issue 18.13: no "1200.0000" / "83.3333"; Bias and Compare sections; run names whole and a legend on the
    forest plot."""
    dataset, runs, html, _ = summeval_report
    assert "1200.0000" not in html and ".3333%" not in html
    assert re.search(r"<td class=\"num\">\d+\.\d%</td>", html)  # #CP's "full %" as a percentage
    assert "<h2>Bias</h2>" in html and "<h2>Compare</h2>" in html
    assert "its p-value tests equal correlation" in html
    from evalcore.views.compare import paired_comparison

    res = paired_comparison(dataset, runs[0], runs[1], "coherence", level="summary", coefficient="kendall",
                            n_resamples=20)
    assert format_cell(res.difference) in html
    table = alignment_views.alignment_table(dataset, runs, "coherence", n_resamples=0)
    ceiling = alignment_views.run_ceilings(dataset, runs, "coherence", level="summary", coefficient="kendall")
    fig = alignment_views.headline_figure(table, ceiling, level="summary", coefficient="kendall")
    assert fig.layout.showlegend and fig.layout.yaxis.automargin
    assert {t.y[0] for t in fig.data} == {"Shen et al. · gpt-4-0314 · RTS", "Shen et al. · gpt-3.5-turbo-0301 · RTS"}
    assert sum(bool(t.showlegend) for t in fig.data if t.legendgroup == "ceiling") == 1
