"""The numbers and charts of the Data, Alignment and Bias pages in chromium (issue 8): count axes ticked on every
histogram panel, the headline chart drawn by default, p-values and rates as a reader expects them, no "None" cell,
the human- vs LLM-written view on Topical-Chat, the pooled position-bias row. Screenshots go to
artifacts/screenshots/ (charts-*.png) to be looked at."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def plotly_charts(app):
    return app.page.locator('[data-testid="stPlotlyChart"]')


def svg_text(locator) -> str:
    """All text a plotly chart draws (SVG text has no innerText)."""
    return locator.evaluate("el => [...el.querySelectorAll('text')].map(t => t.textContent).join(' | ')")


def wait_for_charts(app, n: int) -> None:
    app.page.locator('[data-testid="stPlotlyChart"] .main-svg').nth(n - 1).wait_for()
    app.idle()


def grid_cells(app) -> list[str]:
    """Every cell text of every dataframe shown on the page (their accessible tables; one inside a closed expander
    is not drawn)."""
    cells: list[str] = []
    for grid in app.page.locator('[data-testid="stDataFrame"]').all():
        if not grid.is_visible():
            continue
        for row in app.grid(grid):
            cells += list(row.values())
    return cells


def grid_beside(app, csv_key: str) -> list[dict[str, str]]:
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(has=app.page.locator(f".st-key-{csv_key}"))
    return app.grid(block.locator('[data-testid="stDataFrame"]').first)


def test_data_page_histograms(app):
    app.open("?data_section=Rating+distributions", "Data")  # the histograms are drawn on their tab
    wait_for_charts(app, 1)
    chart = plotly_charts(app).first
    # one count axis per dimension, each with its own tick labels and title
    y_titles = chart.evaluate("""el => [...el.querySelectorAll('text[class^="y"][class$="title"]')]
                                      .map(t => t.textContent)""")
    assert y_titles.count("items") == 4, y_titles
    ticks_per_axis = chart.evaluate(
        """el => [...el.querySelectorAll('g.yaxislayer-above')]
                 .map(g => g.querySelectorAll('g[class^="y"][class$="tick"] text').length)""")
    assert len(ticks_per_axis) == 4 and all(n >= 2 for n in ticks_per_axis), ticks_per_axis
    labels = chart.evaluate("""el => [...el.querySelectorAll('g.yaxislayer-above g[class$="tick"] text')]
                                    .map(t => t.textContent)""")
    assert all("." not in t for t in labels), labels  # whole counts only
    assert "None" not in grid_cells(app)
    app.screenshot("charts-data")
    assert app.problems() == []


def test_alignment_headline_and_items(app):
    app.open("alignment", "Alignment")
    # the headline chart (Vega-Lite) is drawn by default, above the table
    headline = app.page.locator('[data-testid="stVegaLiteChart"]').first
    headline.locator("canvas, svg").first.wait_for()
    app.idle()
    box = headline.bounding_box()
    assert box and box["height"] > 80 and box["width"] > 400
    rows = grid_beside(app, "csv_correlations")
    assert len(rows) == 2 and {r.get("level") for r in rows} == {"dataset"}
    assert {r.get("pvalue") for r in rows} == {"<0.001"}
    assert "None" not in grid_cells(app)
    app.screenshot("charts-alignment")
    assert app.problems() == []

    app.open("alignment?section=Judge+vs+human+scores", "Alignment")
    wait_for_charts(app, 1)
    text = svg_text(plotly_charts(app).first)
    assert "human score on coherence" in text and "judge score" in text
    assert "None" not in grid_cells(app)
    app.screenshot("charts-alignment-items")
    assert app.problems() == []
    app.page.get_by_text("Every item as a jittered dot", exact=True).click()
    app.idle()
    wait_for_charts(app, 1)
    assert "items_points=true" in app.page.url  # the choice is part of the link
    app.screenshot("charts-alignment-items-jitter")
    assert app.problems() == []

    app.open("alignment?section=Per+system+%26+meta-correlation", "Alignment")
    wait_for_charts(app, 2)
    assert "None" not in grid_cells(app)
    app.screenshot("charts-alignment-per-system")
    assert app.problems() == []


def test_bias_pages(app):
    app.open("bias", "Bias")
    wait_for_charts(app, 2)
    app.screenshot("charts-bias-summeval")
    rows = {r.get("dimension"): r for r in grid_beside(app, "csv_position_bias")}
    assert rows["all"]["n_pairs"] in ("4400", "4,400")
    # the accessible table holds the cell's number (the canvas draws it as "32.0%": see the screenshot)
    assert float(rows["all"]["flip_rate"].rstrip("%")) == pytest.approx(32.0)
    assert float(rows["relevance"]["flip_rate"].rstrip("%")) == pytest.approx(29.45, abs=0.05)
    assert "None" not in grid_cells(app)
    app.screenshot("charts-bias-summeval")
    assert app.problems() == []

    app.open("bias?dataset=topical_chat&dimension=coherence", "Bias")
    wait_for_charts(app, 1)
    app.screenshot("charts-bias-topical-chat")
    text = svg_text(plotly_charts(app).first)
    assert "human-written" in text and "LLM-written" in text and "Liu et al. 2023, Fig. 2" in text
    assert "None" not in grid_cells(app)
    app.screenshot("charts-bias-topical-chat")
    assert app.problems() == []
