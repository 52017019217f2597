"""End-to-end: a researcher's own wide file (one human rating column, two judge-score columns: an LLM's 1-5 score and
a negative log-likelihood metric) uploaded on the Data page in chromium; both judge columns become runs, appear in
the sidebar, and the Alignment page shows their correlations, equal to scipy's on the same file.
"""

from __future__ import annotations

import re

import math
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

WIDE = Path(__file__).resolve().parents[1] / "fixtures" / "byo" / "wide_judges.csv"


def test_upload_wide_file_with_two_judge_columns_then_alignment(app):
    from scipy.stats import spearmanr

    app.open("", "Data")
    uploader = app.page.locator('.st-key-upload input[type="file"]')
    uploader.set_input_files({"name": "my_study.csv", "mimeType": "text/csv", "buffer": WIDE.read_bytes()})
    app.page.get_by_role("button", name="Import dataset").wait_for()
    app.idle()
    assert app.problems() == []
    # the guess before import: human rating for coherence, judge scores for the two metric columns
    assert float(app.page.get_by_label("Scale min · coherence").input_value()) == 1.0
    assert float(app.page.get_by_label("Scale max · coherence").input_value()) == 5.0
    main = app.page.locator('[data-testid="stMain"]')
    assert main.get_by_text("judge score", exact=True).count() >= 2
    app.screenshot("byo-upload-form")
    app.page.get_by_role("button", name="Import dataset").click()
    app.page.get_by_text("Imported", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []
    app.screenshot("byo-imported")

    runs = app.selected_runs()
    assert len(runs) == 2 and {r.rsplit("/", 1)[1] for r in runs} == {"scores-gpt4_score", "scores-nll"}, runs
    sidebar = app.page.locator('[data-testid="stSidebar"]')
    # the dataset picker shows its name, not its id (the id is in the link)
    expect(sidebar.get_by_role("combobox", name="Dataset", exact=True)).to_have_value(re.compile(r"^my_study"))
    assert app.selected_dataset().startswith("user-")

    app.nav("Alignment")
    app.heading("Correlation with human ratings", level=3).wait_for()
    app.idle()
    assert app.problems() == []
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=app.page.locator(".st-key-csv_correlations"))
    rows = app.grid(block.locator('[data-testid="stDataFrame"]').first)
    assert {r["run"] for r in rows} == {"gpt4_score", "nll"}
    frame = pd.read_csv(WIDE)
    for run, column in (("gpt4_score", "gpt4_score"), ("nll", "nll")):
        shown = next(r for r in rows if r["run"] == run and r["level"] == "dataset" and r["coefficient"] == "spearman")
        expected = spearmanr(frame[column], frame["coherence"]).statistic
        assert math.isclose(float(shown["statistic"]), expected, abs_tol=5e-4), (run, shown, expected)
    app.screenshot("byo-alignment")
