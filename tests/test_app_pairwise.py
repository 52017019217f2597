"""The app on the bundled pairwise datasets (PandaLM, LLMBar Natural) under AppTest: every page and every tab of
the Data and Alignment pages renders without an error, and the Alignment page opens on the Pairwise tab with the
published figures (PandaLM's annotator kappas)."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from tests.test_app_pages import PAGES, assert_clean, new_app  # noqa: E402

pytestmark = pytest.mark.usefixtures("first_start")


@pytest.mark.parametrize("dataset", ["pandalm", "llmbar_natural"])
@pytest.mark.parametrize("page", ["data", "score", "bias", "compare", "criteria"])
def test_pages_render_on_pairwise_datasets(dataset, page):
    at = new_app(dataset=dataset)
    at.run()
    at.switch_page(PAGES[page]).run()
    assert_clean(at)


@pytest.mark.parametrize("section", ["Rating distributions", "Human agreement"])
def test_data_tabs_on_pandalm(section):
    at = new_app(dataset="pandalm", data_section=section)
    at.run()
    at.switch_page(PAGES["data"]).run()
    assert_clean(at)


def test_alignment_opens_on_pairwise_tab_with_pandalm_kappas():
    at = new_app(dataset="pandalm", resamples="20")
    at.run()
    at.switch_page(PAGES["alignment"]).run()
    assert_clean(at)
    assert any("Pairwise preferences" in str(s.value) for s in at.subheader)
    kappas = next(df.value for df in at.dataframe if "cohen_kappa" in df.value.columns and "annotator_1" in
                  df.value.columns)
    assert [round(k, 2) for k in kappas["cohen_kappa"]] == [0.85, 0.88, 0.86]


@pytest.mark.parametrize("section", ["Correlations", "Judge vs human scores", "Per system & meta-correlation", "#CP",
                                     "RTS-MCQ reliability", "Difficulty"])
def test_a_pairwise_only_dataset_shows_its_pairwise_section_whatever_the_link_asks(section):
    """LLMBar's humans only voted on pairs: a link asking another section (or a level) still opens the pairwise
    section, without the level, coefficient and systems selectors that would not apply."""
    at = new_app(dataset="llmbar_natural", section=section, resamples="20", level="system")
    at.run()
    at.switch_page(PAGES["alignment"]).run()
    assert_clean(at)
    assert any("Pairwise preferences" in str(s.value) for s in at.subheader)
    assert not [w for w in at.selectbox if w.label in ("Level", "Coefficient")]
    assert any("voted on pairs of outputs" in str(c.value) for c in at.caption)


def test_report_has_the_pairwise_section():
    from evalcore import datasets
    from evalcore.views.report import AnalysisParams, pairwise_sections

    ds = datasets.load_dataset("llmbar_natural")
    runs = [datasets.load_bundled_run("llmbar_natural/llmbar-gpt-4-vanilla-norules")]
    [sec] = pairwise_sections(ds, runs, AnalysisParams("llmbar_natural", [runs[0].run_id], "preference",
                                                       n_resamples=20))
    table = next(t.frame for t in sec.tables if t.title == "Pairwise agreement")
    got = dict(zip(table["statistic"], table["value"]))
    # LLMBar statistics.json (GPT-4, Vanilla_NoRules): correct_False 92, correct_True 95, correct_both 92, equal 97
    assert got["accuracy, A shown first"] == 0.92 and got["accuracy, B shown first"] == 0.95
    assert got["right in both orders"] == 0.92 and got["positional agreement (same winner in both orders)"] == 0.97


def test_pairwise_votes_show_the_annotators_agreement_before_any_judge_run():
    """With no run chosen, a dataset of pairwise votes still shows what needs no judge: the annotators' kappas (the
    Data page points here for them), and says a judge run adds its agreement."""
    at = new_app(dataset="pandalm", resamples="20")
    at.run()
    at.switch_page(PAGES["alignment"]).run()
    at.sidebar.multiselect(key="runs").set_value([]).run()
    assert_clean(at)
    assert any("annotators' agreement with each other" in str(s.value) for s in at.subheader)
    kappas = next(df.value for df in at.dataframe if "cohen_kappa" in df.value.columns)
    assert [round(k, 2) for k in kappas["cohen_kappa"]] == [0.85, 0.88, 0.86]
    assert any("once a run with pairwise verdicts is chosen" in str(c.value) for c in at.caption)
