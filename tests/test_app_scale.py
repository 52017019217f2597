"""Issue 19 on the pages: long computations under a progress bar with a Stop button, what a stopped computation
leaves on the page, the Compare page's correlations before its paired bootstrap, the exported report built from
the pages' cached results, and the rest of the Alignment table filled after the first cell.

The progress bar and the Stop button appear only once a computation has run for a while (a cache miss on a large
study), so these tests stop a computation the way the Stop button's callback does (``pages._compute.stop``) and
check what the page then shows; tests/browser/test_scale_browser.py clicks the real button on a large study."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from evalcore import runs as runs_mod  # noqa: E402
from evalcore.views import alignment as alignment_views  # noqa: E402
from evalcore.views import compare as compare_views  # noqa: E402
from evalcore.views import report as report_views  # noqa: E402

APP = str(Path(__file__).resolve().parents[1] / "app.py")
GPT4_RTS = "summeval/shen-gpt-4-0314-rts"
CHATGPT_RTS = "summeval/shen-gpt-3.5-turbo-0301-rts"

pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py: 20 resamples, fresh store and caches


def app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    if page:
        at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def paired_key(level="dataset", coefficient="spearman", test="bootstrap"):
    from pages import _compute

    return _compute.work_key("paired", "summeval", GPT4_RTS, CHATGPT_RTS, "coherence", level, coefficient, 20, test,
                             "robust")


def test_compare_shows_a_stopped_test_and_computes_it_on_request():
    at = app("compare")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["p-value"] != "stopped"
    at.session_state["_stopped_work"] = {paired_key()}  # what the Stop button's callback records
    at.run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    # the two correlations stay (computed without resampling); the test says it was stopped, never a number
    ds = runs_mod.get_dataset("summeval")
    est = compare_views.paired_comparison(ds, runs_mod.load_run(GPT4_RTS), runs_mod.load_run(CHATGPT_RTS),
                                          "coherence", level="dataset", coefficient="spearman", n_resamples=0)
    assert metrics["Run A"] == f"{est.statistic_a:.3f}" and metrics["Run B"] == f"{est.statistic_b:.3f}"
    assert metrics["p-value"] == "stopped"
    assert any("Stopped: Paired bootstrap test (20 resamples)" in i.value for i in at.info)
    assert not any(list(d.value.columns)[:2] == ["run_a", "run_b"] for d in at.dataframe)  # no table of a test
    resume = next(b for b in at.button if b.label == "Compute it")
    resume.click().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["p-value"] not in ("stopped", "computing…")
    assert not any("Stopped" in i.value for i in at.info)


def test_alignment_stopped_cell_says_so_and_draws_no_chart():
    from pages import _compute

    key = _compute.work_key("alignment", "summeval", (GPT4_RTS, CHATGPT_RTS), "coherence", "robust", 20, None,
                            "dataset", "spearman", "documents", True)
    at = app("alignment")
    assert at.get("vega_lite_chart")
    at.session_state["_stopped_work"] = {key}
    at.run()
    assert not at.exception
    assert any("Stopped: dataset-level spearman correlations" in i.value for i in at.info)
    assert not at.get("vega_lite_chart")
    next(b for b in at.button if b.label == "Compute it").click().run()
    assert not at.exception and at.get("vega_lite_chart")


def test_export_report_builds_then_downloads_the_cached_report():
    at = app("alignment")
    assert not at.get("download_button") or all(b.proto.label != "Download report" for b in at.get("download_button"))
    at.sidebar.button(key="export_report").click().run()
    assert not at.exception
    download = [b for b in at.get("download_button") if b.proto.label == "Download report"]
    assert len(download) == 1
    # the same view's report, built from scratch by the library, equals the cached one the button offers
    from pages import _compute

    html = _compute.report("summeval", (GPT4_RTS, CHATGPT_RTS), "coherence", "dataset", "spearman", "robust", 20,
                           None)
    ds = runs_mod.get_dataset("summeval")
    runs = [runs_mod.load_run(GPT4_RTS), runs_mod.load_run(CHATGPT_RTS)]
    direct = report_views.analysis_report(ds, runs, report_views.AnalysisParams(
        dataset_id="summeval", run_ids=[GPT4_RTS, CHATGPT_RTS], dimension="coherence", n_resamples=20))
    def strip(h: str) -> str:  # the time it was made and plotly's random chart ids aside
        h = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", h)
        # the time sits in the header's "generated" field: two reports built a minute apart differ only there
        return re.sub(r"<b>generated</b>: [^<]*", "<b>generated</b>: TIME", h)

    assert strip(html) == strip(direct)
    # the view changes: the report is asked for again
    at.selectbox(key="coefficient").set_value("kendall").run()
    assert at.sidebar.button(key="export_report").label == "Export report"


def test_table_from_cells_equals_the_full_table():
    """The report's correlation table, put together from the cells the pages cache one at a time, is the full
    table alignment_table computes at once (same resamples per cell, same order, same columns)."""
    ds = runs_mod.get_dataset("summeval")
    runs = [runs_mod.load_run(GPT4_RTS), runs_mod.load_run(CHATGPT_RTS)]
    full = alignment_views.alignment_table(ds, runs, "coherence", n_resamples=30)
    from evalcore.meta.correlation import COEFFICIENTS, LEVELS

    cells = [alignment_views.alignment_table(ds, runs, "coherence", n_resamples=30, levels=(lv,), coefficients=(co,))
             for lv in reversed(LEVELS) for co in COEFFICIENTS]
    pd.testing.assert_frame_equal(alignment_views.merge_cells(cells, runs), full)


def test_alignment_table_progress_is_declared_once_and_ends_at_its_total():
    """Every run and cell reports into one plan: the bar never runs backwards and ends at runs x cells x (resamples
    + jackknife replicates: one per document up to 2,000 documents)."""
    from evalcore.meta import fastboot

    ds = runs_mod.get_dataset("summeval")
    runs = [runs_mod.load_run(GPT4_RTS), runs_mod.load_run(CHATGPT_RTS)]
    seen = []
    with fastboot.progress_point(lambda done, total: seen.append((done, total))):
        alignment_views.alignment_table(ds, runs, "coherence", n_resamples=25)
    docs = 100  # SummEval: 100 documents, each run scored them all
    assert {t for _, t in seen} == {2 * 9 * (25 + docs)}
    assert seen[-1][0] == seen[-1][1] and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_box_numbers_by_hand():
    """plotly's "linear" quartiles (Langford's method 10: rank n p + 1/2) and whiskers, worked by hand on ten values."""
    n = alignment_views.box_numbers([100, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    # ranks 3, 5.5 and 8 of 10 sorted values: 3, (5 + 6) / 2, 8; IQR 5, so the whiskers stop at 1 and 9 (100 is out)
    assert n == {"q1": 3.0, "median": 5.5, "q3": 8.0, "lowerfence": 1.0, "upperfence": 9.0}


def test_large_run_boxes_are_drawn_from_their_five_numbers(monkeypatch):
    ds = runs_mod.get_dataset("summeval")
    runs = [runs_mod.load_run(GPT4_RTS)]
    items = alignment_views.judge_by_human_table(ds, runs, "coherence")
    small = alignment_views.judge_by_human_figure(items, "coherence")
    assert small.data[0].y is not None and small.data[0].q1 is None
    monkeypatch.setattr(alignment_views, "BOX_ITEMS_MAX", 100)
    big = alignment_views.judge_by_human_figure(items, "coherence")
    box = big.data[0]
    assert box.y is None and len(box.x) == items["human_bin"].nunique()
    first_bin = items.sort_values("bin_order")["human_bin"].iloc[0]
    expected = alignment_views.box_numbers(items.loc[items["human_bin"] == first_bin, "judge"])
    assert (box.q1[0], box.median[0], box.q3[0], box.lowerfence[0], box.upperfence[0]) == (
        expected["q1"], expected["median"], expected["q3"], expected["lowerfence"], expected["upperfence"])
    assert list(big.layout.xaxis.categoryarray) == list(small.layout.xaxis.categoryarray)
