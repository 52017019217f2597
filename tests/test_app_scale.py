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
        return "\n".join(line for line in h.splitlines() if "Generated" not in line)

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
