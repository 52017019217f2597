"""The Label page in headless chromium: two annotators in two browser contexts label 10 SummEval items each at the
same time (one by keyboard shortcuts, one by clicking), one reloads mid-way; nothing is lost, and the labels' alpha
and their correlation with a bundled run appear on the Data and Alignment pages of the dataset's labels view.
Screenshots: artifacts/screenshots/label-*.png."""

from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.browser

RUN = "summeval/shen-gpt-3.5-turbo-0301-rts"
RUN_NAME = "Shen et al. · gpt-3.5-turbo-0301 · RTS"
ANN = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
BOB = [1, 2, 3, 4, 4, 2, 2, 3, 5, 5]


def card_output(app) -> str:
    """The text of the item being rated: the first code block on the page (the source follows it)."""
    block = app.page.locator('[data-testid="stMain"] [data-testid="stCode"]').first
    return block.inner_text().strip()


def saved_caption(app, n_labels: int):
    return app.page.get_by_text(f"{n_labels} of 50 labelled by", exact=False)


def test_two_annotators_label_reload_and_pages_show_the_labels(open_app, app_server):
    import krippendorff
    from scipy.stats import spearmanr

    from evalcore import labels, runs
    from evalcore.store import Store

    ds = runs.get_dataset("summeval", with_labels=False)
    order = labels.random_order(ds)
    outputs = ds.items.set_index("item_id")["output"]

    a, b = open_app(), open_app()
    a.open("label?annotator=ann&label_dims=coherence", "Label")
    b.open("label?annotator=bob&label_dims=coherence", "Label")
    assert a.problems() == [] and b.problems() == []
    a.screenshot("label-start")

    for k in range(10):
        if k == 5:  # ann reloads mid-way: a new session from the same URL
            a.page.reload()
            a.heading("Label").wait_for()
            a.idle()
        assert card_output(a) == outputs[order[k]].strip()
        assert card_output(b) == outputs[order[k]].strip()
        # both act before either waits: the two sessions write to the store at the same time
        a.page.locator("body").press(str(ANN[k]))  # the rating's keyboard shortcut
        b.page.locator(f".st-key-label_rate_{BOB[k]} button").click()  # a click on the rating button
        for app in (a, b):
            saved_caption(app, k + 1).wait_for()
            app.idle()
    assert a.problems() == [] and b.problems() == []

    rows = Store(app_server.db_path).label_rows("summeval")
    latest = labels.latest_labels(rows)
    assert len(rows) == 20 and len(latest) == 20  # nothing lost, nothing doubled
    for name, values in (("ann", ANN), ("bob", BOB)):
        mine = latest[latest["annotator"] == name].set_index("item_id")["value"]
        assert [mine[i] for i in order[:10]] == values

    # the Label page's live alpha, as a user sees it after both are done
    a.page.reload()
    a.heading("Agreement among annotators", level=3).wait_for()
    a.idle()
    expected_alpha = krippendorff.alpha(reliability_data=[ANN, BOB], level_of_measurement="interval")
    block = a.page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=a.page.locator(".st-key-csv_label_alpha"))
    shown = a.grid(block.locator('[data-testid="stDataFrame"]').first)
    assert math.isclose(float(shown[0]["alpha"]), expected_alpha, abs_tol=5e-4)
    a.screenshot("label-done")

    # the export: one row per item, dimension and annotator, with the texts
    with a.page.expect_download() as dl:
        a.page.get_by_role("button", name="Download labels (CSV)").click()
    import pandas as pd

    exported = pd.read_csv(dl.value.path())
    assert len(exported) == 20 and set(exported["annotator"]) == {"ann", "bob"}
    assert list(exported.columns) == labels.EXPORT_COLUMNS

    # how many labels: open the plan for the bundled run (the labels so far give n and the CI half-width)
    a.page.get_by_text("Plan the number of labelled items").click()
    a.choose("Run", RUN_NAME)  # pickers show a run's name, not its id
    a.page.get_by_text("CI half-width now").wait_for()
    assert a.problems() == []
    a.screenshot("label-plan")

    # Data page of the labels view: the labels' alpha
    a.open("?dataset=summeval%40labels&data_section=Human+agreement", "Data")
    a.page.locator(".st-key-csv_agreement").wait_for()  # the Human agreement tab's table
    a.idle()
    assert a.problems() == []
    block = a.page.locator('[data-testid="stHorizontalBlock"]').filter(has=a.page.locator(".st-key-csv_agreement"))
    agreement = a.grid(block.locator('[data-testid="stDataFrame"]').first)
    row = next(r for r in agreement if r.get("group") == labels.LABEL_GROUP)
    assert math.isclose(float(row["alpha"]), expected_alpha, abs_tol=5e-4)
    a.screenshot("label-data-page")

    # Alignment on the labels view: the bundled run against the mean of the two annotators
    a.open(f"alignment?dataset=summeval%40labels&runs={RUN}", "Alignment")
    a.heading("Correlation with human ratings", level=3).wait_for()
    a.idle()
    assert a.problems() == []
    block = a.page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=a.page.locator(".st-key-csv_correlations"))
    table = a.grid(block.locator('[data-testid="stDataFrame"]').first)
    cell = next(r for r in table if r["level"] == "dataset" and r["coefficient"] == "spearman")
    judge = runs.load_run(RUN).scores("coherence").set_index("item_id")["judge"]
    both = [i for i in order[:10] if i in judge.index]
    mean = {i: (x + y) / 2 for i, x, y in zip(order[:10], ANN, BOB)}
    expected = spearmanr([judge[i] for i in both], [mean[i] for i in both]).statistic
    assert int(cell["n"]) == len(both) and math.isclose(float(cell["statistic"]), expected, abs_tol=5e-4)
    a.screenshot("label-alignment-page")
