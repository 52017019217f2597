"""Issue 19 in chromium on a large study (60,000 items: 6,000 documents x 10 systems, two judge runs): the Compare
page shows both correlations before its paired bootstrap, whose progress bar has a Stop button that stops it; the
Alignment page fills the rest of its table after the first chart; Export report builds the report under a progress
bar and then downloads it. The study is made by a seeded generator and imported with the CLI into its own store, on
its own server; 5,000 resamples keep the paired bootstrap running long enough to be stopped by a click."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import REPO_ROOT, AppPage, screenshot, start_app, stop_app

pytestmark = pytest.mark.browser
N_DOCS, N_SYSTEMS = 6_000, 10
LONG_MS = 300_000


def big_csv(path: Path) -> None:
    """Documents x systems with one 1-5 human rating each, a continuous judge and a 1-5 judge (seeded)."""
    rng = np.random.default_rng(0)
    doc = np.repeat(np.arange(N_DOCS), N_SYSTEMS)
    system = np.tile(np.arange(N_SYSTEMS), N_DOCS)
    human = np.clip(np.round(np.linspace(2.6, 4.0, N_SYSTEMS)[system] + rng.normal(0, 0.9, len(doc))), 1, 5)
    pd.DataFrame({
        "doc_id": [f"doc{d}" for d in doc], "system": [f"sys{s}" for s in system],
        "summary": [f"summary {i}" for i in range(len(doc))], "quality": human,
        "judge_geval": np.clip(human + rng.normal(0, 0.9, len(doc)), 1, 5).round(4),
        "judge_likert": np.clip(np.round(human + rng.normal(0, 1, len(doc))), 1, 5),
    }).to_csv(path, index=False)


@pytest.fixture(scope="module")
def big_server(tmp_path_factory):
    work = tmp_path_factory.mktemp("big")
    big_csv(work / "big.csv")
    env = dict(os.environ, EVALCORE_DB=str(work / "evalcore.db"), PYTHONPATH=str(REPO_ROOT))
    out = subprocess.run([sys.executable, "-m", "evalcore", "import-dataset", str(work / "big.csv"), "--name", "big",
                          "--scale", "quality=1:5", "--judge", "judge_geval=quality", "--judge",
                          "judge_likert=quality", "--json"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                         check=True)
    server = start_app(work)
    try:
        yield server, json.loads(out.stdout)["dataset"]
    finally:
        stop_app(server)


def shot(page, name: str) -> None:
    """artifacts/screenshots/<name>.png (conftest.screenshot), and a copy under /tmp to look at."""
    import shutil

    shutil.copy(screenshot(page, name), f"/tmp/{name.replace('-', '_')}.png")


def metrics(page) -> dict[str, str]:
    out = {}
    for m in page.locator('[data-testid="stMetric"]').all():
        label = m.locator('[data-testid="stMetricLabel"]').inner_text().strip()
        out[label] = m.locator('[data-testid="stMetricValue"]').inner_text().strip()
    return out


def test_compare_stop_and_resume_on_a_large_study(page, big_server):
    server, dataset = big_server
    app = AppPage(page, server.url)
    page.goto(f"{server.url}/compare?dataset={dataset}&resamples=5000&runs={dataset}/scores-judge_geval"
              f"&runs={dataset}/scores-judge_likert")
    stop = page.get_by_role("button", name="Stop")
    stop.wait_for(timeout=LONG_MS)
    # the correlations are on the page while the test runs: numbers, and the p-value says it is being computed
    first = metrics(page)
    assert first["p-value"] == "computing…"
    assert all(float(first[k]) > 0 for k in ("Run A", "Run B"))
    # the progress line comes with the first block of replicates (a moment after the Stop button on a busy machine)
    page.get_by_text("bootstrap and jackknife replicates").wait_for(timeout=LONG_MS)
    shot(page, "scale-compare-progress")
    stop.click()
    resume = page.get_by_role("button", name="Compute it")
    resume.wait_for(timeout=LONG_MS)
    app.idle()
    assert metrics(page)["p-value"] == "stopped" and metrics(page)["Run A"] == first["Run A"]
    assert page.get_by_text("Stopped: Paired bootstrap test (5000 resamples)").count() == 1
    assert page.get_by_role("button", name="Stop").count() == 0
    shot(page, "scale-compare-stopped")
    resume.click()
    page.locator('[data-testid="stMetricValue"]').filter(has_text="computing").first.wait_for(timeout=LONG_MS)
    page.locator('[data-testid="stHorizontalBlock"]:has(.st-key-csv_paired)').first.wait_for(timeout=LONG_MS)
    app.idle()
    done = metrics(page)
    assert done["p-value"] not in ("computing…", "stopped") and done["A − B"] == first["A − B"]
    assert app.problems() == []
    shot(page, "scale-compare-done")


def test_alignment_fills_its_table_and_the_report_downloads(page, big_server):
    server, dataset = big_server
    app = AppPage(page, server.url)
    page.goto(f"{server.url}/alignment?dataset={dataset}&runs={dataset}/scores-judge_geval"
              f"&runs={dataset}/scores-judge_likert")
    page.locator('[data-testid="stVegaLiteChart"]').first.wait_for(timeout=LONG_MS)
    page.get_by_text("Every level and coefficient is ready (9 cells).").wait_for(timeout=LONG_MS)
    app.idle()
    shot(page, "scale-alignment-filled")
    # a filled cell shows without computing: the kendall cell's table is there on the first run after the switch
    app.choose("Coefficient", "kendall")
    app.idle()
    assert page.get_by_role("button", name="Stop").count() == 0
    assert "kendall" in page.locator('[data-testid="stMain"]').inner_text()
    page.get_by_role("button", name="Export report").click()
    download = page.get_by_role("button", name="Download report")
    download.wait_for(timeout=LONG_MS)
    with page.expect_download() as dl:
        download.click()
    html = Path(dl.value.path()).read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "judge_likert" in html and "Paired difference" in html
    assert len(html) < 8_000_000  # the item-level boxes go as their five numbers, not 120,000 scores
    app.idle()
    assert app.problems() == []
    shot(page, "scale-report-ready")
