"""The Alignment page's Alt-Test and prediction-powered sections under AppTest, on SummEval (three experts rate every
summary) and PandaLM (three annotators vote on every pair): drawn without exceptions, the verdict in words, the
tables without "None" cells, the charts' axes labelled."""

from __future__ import annotations

import pytest

from tests.test_app_pages import assert_clean, chart_specs, frame_with, goto, new_app, no_none_cells

pytest.importorskip("streamlit")
pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py


def _open(**query):
    at = new_app(alt_test_open="true", ppi_open="true", **query)
    return goto(at, "alignment")


def _verdicts(at) -> list[str]:
    """The verdict boxes as read (the page escapes Markdown in them)."""
    return [str(e.value).replace("\\", "") for e in list(at.success) + list(at.info)]


def _title(spec: dict) -> str:
    return str(spec["layout"].get("title", {}).get("text", ""))


def _ppi_chart(at) -> dict:
    specs = [s for s in chart_specs(at) if "by humans only" in _title(s)]
    assert specs, [_title(s) for s in chart_specs(at)]
    return specs[0]


def test_alignment_page_shows_alt_test_and_ppi_on_summeval():
    at = _open(section="Difficulty", alt_epsilon="0.15")
    verdicts = _verdicts(at)
    gpt4 = [v for v in verdicts if v.startswith("Shen et al. · gpt-4-0314 · RTS: the judge")]
    assert gpt4 and "replace the expert annotators at epsilon 0.15" in gpt4[0]
    annotators = frame_with(at, "annotator", "test", "p_value", "judge_wins")
    assert set(annotators["annotator"]) == {"expert_1", "expert_2", "expert_3"}
    assert set(annotators["test"]) == {"t-test"}  # 1,200 items per expert
    ppi = frame_with(at, "system", "estimate", "lambda", "n_labelled", "human_only", "judge_only")
    assert len(ppi) == 24  # two runs x 12 systems
    # a fully rated dataset: the slider's default keeps 20 of the 100 documents' ratings
    assert at.slider(key="ppi_rated").value == 20
    assert set(ppi["n_labelled"]) == {20} and set(ppi["n_unlabelled"]) == {80}
    spec = _ppi_chart(at)
    assert spec["layout"]["xaxis"]["title"]["text"] == "system"
    assert spec["layout"]["yaxis"]["title"]["text"] == "mean human coherence score"
    assert {t["name"] for t in spec["data"]} == {"humans only (95% CI)", "judge only (95% CI)", "PPI++ (95% CI)"}
    plan = frame_with(at, "system", "judged", "rated needed, humans only", "rated needed, PPI++")
    assert len(plan) == 12 and at.number_input(key="ppi_width").value == 0.4
    no_none_cells(at)

    at.radio(key="ppi_method").set_value("ppi").run()
    assert_clean(at)
    assert set(frame_with(at, "system", "lambda")["lambda"]) == {1.0}


def test_alignment_page_shows_alt_test_ppi_and_bradley_terry_on_pandalm():
    at = _open(dataset="pandalm")
    verdicts = _verdicts(at)
    assert any("the judge cannot replace the annotators at epsilon 0.2" in v for v in verdicts), verdicts
    annotators = frame_with(at, "annotator", "test", "p_value", "judge_wins")
    assert set(annotators["annotator"]) == {"annotator1", "annotator2", "annotator3"}
    spec = _ppi_chart(at)
    assert spec["layout"]["xaxis"]["title"]["text"] == "model"
    assert spec["layout"]["yaxis"]["title"]["text"] == "win rate (ties count 0.5)"
    bt = frame_with(at, "model", "human_score", "judge_score")
    assert len(bt) == 5 and bt["human_score"].notna().all()
    titles = {_title(s): s for s in chart_specs(at)}
    bt_spec = next(s for t, s in titles.items() if "Bradley-Terry scores" in t)
    assert bt_spec["layout"]["xaxis"]["title"]["text"] == "Bradley-Terry score (Elo scale, mean 1000)"
    length = frame_with(at, "source", "length_coefficient")
    assert list(length["source"]) == ["humans", "judge"]
    assert any("Kendall's tau" in str(c.value) for c in at.caption)
    no_none_cells(at)
