"""The Jury page and the Alignment page's reliability expander under AppTest: Shen et al.'s five SummEval judges
as a panel (the matrix with the humans, a jury made and stored, the jury against the best single judge, the cost
note for runs without recorded usage) and Chiang & Lee's 20 Topical-Chat draws (the one-draw vs mean-of-draws table
the command line reports too)."""

from __future__ import annotations

import pytest

from tests.test_app_pages import assert_clean, chart_specs, new_app

pytest.importorskip("streamlit")
pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py

SHEN = [f"summeval/shen-{m}-rts" for m in ("gpt-4-0314", "gpt-3.5-turbo-0301", "llama-2-7b-chat",
                                          "llama-2-13b-chat", "llama-2-70b-chat")]


def _tables(at) -> list:
    return [t.value for t in at.table]


def test_jury_page_shows_the_matrix_makes_a_jury_and_tests_it_against_the_best_judge():
    at = new_app(dataset="summeval", dimension="coherence", resamples="50")
    at.query_params["jury_runs"] = SHEN
    at.switch_page("pages/jury.py").run()
    assert_clean(at)
    heat = [s for s in chart_specs(at) if s["data"] and s["data"][0]["type"] == "heatmap"]
    assert heat and len(heat[0]["data"][0]["z"]) == 6  # five judges and the humans
    at.button(key="jury_make").click().run()
    assert_clean(at)
    assert any("summeval/jury-mean-of-5" in str(s.value).replace("\\", "") for s in at.success), at.success
    judges = [t for t in _tables(at) if "jury" in t.columns]
    assert judges and len(judges[0]) == 6
    assert any("best single judge" in str(h.value) for h in at.subheader) or \
        any("best single judge" in str(m.value) for m in at.markdown)
    assert any("No recorded usage" in str(i.value) for i in at.info)


def test_reliability_expander_on_topical_chat_draws():
    at = new_app(dataset="topical_chat", dimension="coherence", resamples="50", reliability_open="true")
    at.query_params["runs"] = ["topical_chat/chiang-lee-gpt-3.5-geval"]
    at.switch_page("pages/alignment.py").run()
    assert_clean(at)
    t = [x for x in _tables(at) if "what" in x.columns]
    assert t, [list(x.columns) for x in _tables(at)]
    rows = dict(zip(t[0]["what"].str.replace("\\", ""), t[0]["spearman"]))  # the table escapes Markdown
    assert rows["one draw (median)"] == "0.315" and rows["mean of 20 draws"] == "0.466"
    assert any(m.label.startswith("ICC(1,1)") and m.value == "0.45" for m in at.metric)
