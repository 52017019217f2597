"""End-to-end, in headless chromium: MT-Bench's own human-judgment layout (JSON lines with question_id, model_a,
model_b, winner, judge, turn, conversation_a, conversation_b) uploaded on the Data page is recognised as pairwise
preferences, each column prefilled with its pairwise role; imported, a judge's verdicts in both orders added, then
the Alignment page on the new dataset shows the pairwise section: the judge's agreement with the votes (equal to
evalcore's on the same files), its chart, and Cohen's kappa between the annotators.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalcore.importers.pairs import import_pairs, import_verdicts
from evalcore.meta.preference import pairwise_summary

pytestmark = pytest.mark.browser


def _role_of(app, col: str) -> str:
    """The role prefilled for ``col``. The widget's label escapes the column name's underscores for Markdown (a
    column name is the user's text), and the combobox's accessible name keeps the escapes: match either form."""
    name = re.compile(r"^Pairwise role of " + r"\\?_".join(map(re.escape, col.split("_"))) + "$")
    return app.page.get_by_role("combobox", name=name).input_value()

MTBENCH = Path(__file__).resolve().parents[1] / "fixtures" / "mtbench_human_judgments.jsonl"
# MT-Bench's columns and the pairwise role the Data page should prefill for each (pages/_upload.py, PAIR_ROLES)
ROLES = {"question_id": "prompt id", "model_a": "model A", "model_b": "model B", "winner": "winner",
         "judge": "annotator", "turn": "turn", "conversation_a": "conversation A", "conversation_b": "conversation B"}
# a judge's verdicts on the six pairs, in both orders (a disagreement between the orders becomes a tie)
VERDICTS = [("901-turn-1/00001", "ab", "a"), ("901-turn-1/00001", "ba", "b"),
            ("901-turn-2/00002", "ab", "a"), ("901-turn-2/00002", "ba", "a"),
            ("901-turn-1/00003", "ab", "b"), ("901-turn-1/00003", "ba", "a"),
            ("901-turn-2/00004", "ab", "b"), ("901-turn-2/00004", "ba", "a"),
            ("902-turn-1/00005", "ab", "b"), ("902-turn-1/00005", "ba", "a"),
            ("902-turn-2/00006", "ab", "tie"), ("902-turn-2/00006", "ba", "tie")]
VERDICTS_CSV = ("pair_id,order,verdict\n" + "".join(f"{p},{o},{v}\n" for p, o, v in VERDICTS)).encode()


def _cells(rows: list[dict[str, str]]) -> list[str]:
    return [c.strip() for r in rows for c in r.values()]


def test_mtbench_human_judgments_upload_to_alignment(app):
    expected = import_pairs(MTBENCH, name="mtbench_human_judgments").dataset
    assert set(expected.preferences["pair_id"]) == {p for p, _, _ in VERDICTS}  # the verdicts name the file's pairs

    # 1. upload: read as pairwise preferences, every column given its MT-Bench role
    app.open("", "Data")
    app.page.locator('.st-key-upload input[type="file"]').set_input_files(
        {"name": MTBENCH.name, "mimeType": "application/jsonl", "buffer": MTBENCH.read_bytes()})
    app.page.get_by_role("button", name="Import pairwise preferences").wait_for()
    app.idle()
    assert app.problems() == []
    holds = app.page.get_by_role("radiogroup", name="The file holds")
    assert holds.get_by_role("radio", name="pairwise preferences", exact=True).is_checked()
    assert not holds.get_by_role("radio", name="ratings of outputs", exact=True).is_checked()
    assert {col: _role_of(app, col) for col in ROLES} == ROLES
    app.screenshot("mtbench-upload-form")

    # 2. import: the dataset joins the sidebar, counted as the importer counts it
    app.page.get_by_role("button", name="Import pairwise preferences").click()
    app.page.get_by_text("Imported", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []
    assert app.selected_dataset() == expected.id
    app.page.get_by_text("6 pairs, 7 votes by 3 annotators, 3 models", exact=False).first.wait_for()
    app.screenshot("mtbench-imported")

    # 3. a judge's verdicts on those pairs, through the judge-score uploader
    app.page.locator('.st-key-upload_scores input[type="file"]').set_input_files(
        {"name": "my_judge.csv", "mimeType": "text/csv", "buffer": VERDICTS_CSV})
    app.page.get_by_role("button", name="Import judge scores").wait_for()
    app.idle()
    app.page.get_by_role("button", name="Import judge scores").click()
    app.page.get_by_text("12 pairwise verdicts", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []
    app.screenshot("mtbench-verdicts-imported")

    # 4. Alignment: the pairwise section alone (the humans only voted), no exception, no empty cell or chart
    app.nav("Alignment")
    app.heading("Pairwise preferences: judge vs human votes", level=3).wait_for()
    app.page.locator('[data-testid="stPlotlyChart"] .main-svg').first.wait_for()
    app.idle()
    assert app.problems() == []
    main = app.page.locator('[data-testid="stMain"]')
    agreement = app.grid(main.locator('[data-testid="stHorizontalBlock"]').filter(
        has=app.page.locator(".st-key-csv_pairwise_agreement")).locator('[data-testid="stDataFrame"]').first)
    # the judge's rows, then the annotators' agreement with each other ("humans")
    assert {r["run"] for r in agreement} == {"my_judge", "humans"}, agreement
    assert not {"None", "nan", "NaN"} & set(_cells(agreement)), agreement
    assert all(r["value"].strip() for r in agreement if "value" in r), agreement  # only the note may be blank
    # by hand: the one pair two annotators voted on (901 turn 1, gpt-4 vs llama-13b), both for gpt-4
    humans = next(r for r in agreement if r["statistic"] == "human vs human, with ties")
    assert (humans["run"], float(humans["value"]), humans["n"]) == ("humans", 1.0, "1"), humans
    # the page's figures are evalcore's on the same two files
    judge = import_verdicts((VERDICTS_CSV, "my_judge.csv"), expected, name="my_judge")
    want = pairwise_summary(expected.preferences, judge.comparisons, expected.items, n_resamples=20)
    shown = {r["statistic"]: float(r["value"]) for r in agreement if r["run"] == "my_judge"}
    assert shown["judge vs every vote, with ties (S1)"] == pytest.approx(
        want["agreement"]["with_ties"]["statistic"], abs=5e-4)
    assert shown["positional agreement (same winner in both orders)"] == pytest.approx(
        want["positional_agreement"]["statistic"], abs=5e-4)
    # the agreement chart draws a point per statistic shown (an empty figure has none), its legend names both
    chart = main.locator('[data-testid="stPlotlyChart"]').first
    assert chart.locator("path.point").count() >= len(agreement), chart.inner_html()[:2000]
    legend = chart.evaluate("el => [...el.querySelectorAll('g.legend text')].map(t => t.textContent)")
    assert {"my_judge", "humans"} <= set(legend), legend
    # the annotators' agreement with each other: a row per pair of annotators, by name
    kappas = app.grid(main.locator('[data-testid="stHorizontalBlock"]').filter(
        has=app.page.locator(".st-key-csv_annotator_kappa")).locator('[data-testid="stDataFrame"]').first)
    assert {(r["annotator_1"], r["annotator_2"]) for r in kappas} == {(k["a"], k["b"]) for k in want["annotator_kappa"]}
    assert not {"None", "nan", "NaN"} & set(_cells(kappas)), kappas
    app.screenshot("mtbench-alignment")
