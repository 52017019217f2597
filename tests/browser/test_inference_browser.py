"""The Alignment page's "Can the judge replace the annotators?" and "What may I conclude from few labels?" in headless
chromium, on SummEval (three experts rate every summary) and PandaLM (three annotators vote on every pair): the
verdict in words follows the epsilon picked, the PPI chart and table are drawn, PandaLM's Bradley-Terry rankings
side by side, no exception box. Screenshots: artifacts/screenshots/inference-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import SCREENSHOT_DIR

pytestmark = pytest.mark.browser

OPEN = "alt_test_open=true&ppi_open=true"


def _shoot(app, key: str, name: str) -> None:
    """The expander alone (readable), beside the whole page's shot."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    size = app.page.viewport_size
    app.page.set_viewport_size({"width": size["width"], "height": 6000})  # Streamlit scrolls inside its main block
    app.page.wait_for_timeout(500)
    try:
        app.page.locator(f".st-key-{key}").screenshot(path=str(SCREENSHOT_DIR / f"{name}.png"))
    finally:
        app.page.set_viewport_size(size)


def _text(app, key: str) -> str:
    return app.page.locator(f".st-key-{key}").inner_text()


def test_alt_test_and_ppi_on_summeval(app):
    app.open(f"alignment?section=Difficulty&{OPEN}", "Alignment")
    app.page.get_by_text("the judge cannot replace the expert annotators at epsilon 0.2", exact=False).first.wait_for()
    app.page.get_by_text("Ranking by the PPI estimate", exact=False).wait_for()
    app.idle()
    assert app.problems() == []
    alt = _text(app, "alt_test_open")
    assert "Shen et al. · gpt-4-0314 · RTS: the judge cannot replace the expert annotators" in alt
    assert "0.2 (experts)" in alt and "0.1 (crowd workers)" in alt
    assert "negative RMSE" in alt
    _shoot(app, "alt_test_open", "inference-summeval-alt-test")
    ppi = _text(app, "ppi_open")
    assert "only 20 of them" in ppi and "Rated documents" in ppi
    _shoot(app, "ppi_open", "inference-summeval-ppi")

    # epsilon 0.1 (crowd workers): the verdict says the new margin
    app.page.get_by_text("0.1 (crowd workers)", exact=True).click()
    app.page.get_by_text("at epsilon 0.1:", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []
    app.screenshot("inference-summeval-page")


def test_alt_test_ppi_and_bradley_terry_on_pandalm(app):
    app.open(f"alignment?dataset=pandalm&{OPEN}", "Alignment")
    app.page.get_by_text("the judge cannot replace the annotators at epsilon 0.2", exact=False).first.wait_for()
    app.page.get_by_text("Bradley-Terry rankings: humans vs judge", exact=False).wait_for()
    app.page.get_by_text("Kendall's tau", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=app.page.locator(".st-key-csv_alt_test_annotators"))
    rows = app.grid(block.locator('[data-testid="stDataFrame"]').first)
    assert {r["annotator"] for r in rows} == {"annotator1", "annotator2", "annotator3"}
    assert {r["test"] for r in rows} == {"t-test"}
    _shoot(app, "alt_test_open", "inference-pandalm-alt-test")
    ppi = _text(app, "ppi_open")
    assert "win rate" in ppi and "Length: the judge's coefficient" in ppi
    _shoot(app, "ppi_open", "inference-pandalm-ppi-bt")
    app.screenshot("inference-pandalm-page")

    # the exported report carries the verdict and the PPI table
    app.page.get_by_role("button", name="Export report").click()
    download = app.page.get_by_role("button", name="Download report")
    download.wait_for()
    with app.page.expect_download() as dl:
        download.click()
    path = Path(dl.value.path())
    html = path.read_text(encoding="utf-8")
    assert "the judge cannot replace the annotators at epsilon 0.2" in html
    assert "Prediction-powered estimates (PPI++) per system" in html and "Alt-Test per annotator left out" in html
    report = app.page.context.new_page()
    report.set_content(html)
    section = report.locator("section").filter(
        has=report.get_by_role("heading", name="Can the judge replace the annotators", level=2))
    section.screenshot(path=str(SCREENSHOT_DIR / "inference-pandalm-report.png"))
    report.close()
