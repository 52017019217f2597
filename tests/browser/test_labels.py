"""End-to-end (issue 7.4): a user dataset with a binary dimension and a judge run, saved through the store API into
the app's store, shows Cohen's kappa with its CI, the confusion matrix as a labelled heatmap with counts, and the
reliability diagram on Alignment, and nominal-level alpha on the Data page (screenshots in artifacts/screenshots/).
"""

from __future__ import annotations

import math
import time

import pytest

pytestmark = pytest.mark.browser

DATASET = "user-binary-e2e"


def grid_beside(app, key: str):
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(has=app.page.locator(f".st-key-csv_{key}"))
    return block.locator('[data-testid="stDataFrame"]').first


def open_dataset(app, path: str, heading: str) -> None:
    """Open ``path`` on the user dataset. The app lists datasets from a cache that lives 30 s, so a dataset saved a
    moment ago may take that long to appear in the picker: reload until it does."""
    deadline = time.monotonic() + 45
    while True:
        app.open(f"{path}?dataset={DATASET}", heading)
        if app.selected_dataset() == DATASET:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the dataset picker never offered {DATASET}")
        app.page.wait_for_timeout(2000)


def test_binary_dataset_shows_kappa_and_confusion_matrix(app, app_server):
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    from evalcore.store import Store
    from evalcore.testing.labels import save_label_example

    ds, run = save_label_example(Store(app_server.db_path), kind="binary", dataset_id=DATASET, seed=3)

    open_dataset(app, "alignment", "Alignment")
    app.heading("Agreement on binary labels", level=3).wait_for()
    assert app.problems() == []
    rows = app.grid(grid_beside(app, "label_agreement"))
    stats = {r["statistic"]: r for r in rows}
    assert {"Cohen's kappa", "accuracy", "precision (pass)", "recall (pass)", "F1 (pass)"} <= set(stats)

    # the same kappa, computed here: majority of the three raters vs the judge's p(yes) >= 0.5
    votes = ds.annotations.pivot(index="item_id", columns="annotator", values="value")
    human = (votes.sum(axis=1) >= 2).astype(int)
    detail = run.judgments.set_index("item_id").loc[human.index, "detail"]
    judge = [int(d["p_yes"] / (d["p_yes"] + d["p_no"]) >= 0.5) for d in detail]
    kappa = stats["Cohen's kappa"]
    assert math.isclose(float(kappa["value"]), cohen_kappa_score(human, judge), rel_tol=1e-9)
    assert float(kappa["ci_low"]) <= float(kappa["value"]) <= float(kappa["ci_high"])

    # the confusion matrix heatmap: labelled axes, both labels, each count written in its cell
    chart = app.page.locator(".st-key-chart_confusion")
    chart.locator(".main-svg").first.wait_for()
    text = chart.inner_text() + " " + " ".join(chart.locator("text").all_text_contents())
    assert "judge label" in text and "human label" in text
    assert "fail" in text and "pass" in text
    for count in confusion_matrix(human, judge).ravel():
        assert str(count) in text
    app.page.locator(".st-key-chart_reliability .main-svg").first.wait_for()
    app.screenshot("alignment-binary-labels")

    app.nav("Data")
    app.page.get_by_role("tab", name="Human agreement").click()  # a tab that runs when opened (bench_pages.py)
    app.idle()
    rows = app.grid(grid_beside(app, "agreement"))
    assert rows and rows[0]["level"] == "nominal"
    assert app.problems() == []
    app.screenshot("data-binary-labels")
