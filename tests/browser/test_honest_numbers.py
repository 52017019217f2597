"""Issue 18 in a real browser: what a figure rests on is said beside it.

1. Alignment on three systems: a visible warning that the system level rests on 3 systems, the boot-both choice
   with one line on what the interval answers, the human ceiling computed per run on the run's items;
2. the level and coefficient picked there are Compare's too, whose run pickers show names and whose first test is
   the test of equal correlation;
3. the Score page samples whole documents.
Screenshots go to artifacts/screenshots/ (conftest.screenshot).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_alignment_says_what_its_numbers_rest_on_and_compare_keeps_the_view(app):
    app.open("alignment?systems=M8&systems=M9&systems=M10", "Alignment")
    app.heading("Correlation with human ratings", level=3).wait_for()
    app.choose("Level", "system")
    app.choose("Coefficient", "kendall")
    main = app.page.locator('[data-testid="stMain"]')
    main.get_by_text("rests on 3 systems", exact=False).first.wait_for()
    main.get_by_text("on each run's items", exact=False).first.wait_for()
    main.get_by_text("This interval: documents resampled", exact=False).first.wait_for()
    app.page.get_by_text("systems and documents", exact=True).click()
    app.idle()
    main.get_by_text("Deutsch et al. 2021 boot-both", exact=False).first.wait_for()
    assert app.problems() == []
    assert "ci_resampling=both" in app.page.url
    app.screenshot("honest-alignment-three-systems")

    app.nav("Compare")
    assert app.selected("Level") == "system" and app.selected("Coefficient") == "kendall"
    assert app.selected("Run A") == "Shen et al. · gpt-4-0314 · RTS"  # a name, not an id
    assert app.selected("Test") == "equal correlation (paired bootstrap)"
    main.get_by_text("correlate equally well with the humans", exact=False).first.wait_for()
    assert app.problems() == []
    app.screenshot("honest-compare-kept-view")
    app.nav("Alignment")
    assert app.selected("Level") == "system" and app.selected("Coefficient") == "kendall"


def test_score_page_samples_whole_documents(app):
    app.open("score", "Score")
    app.type_into("Whole documents (0 = all)", "5")
    main = app.page.locator('[data-testid="stMain"]')
    main.get_by_text("Scoring 5 whole documents (80 items", exact=False).first.wait_for()
    assert app.problems() == []
    app.screenshot("honest-score-whole-documents")
