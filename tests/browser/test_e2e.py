"""End-to-end: the Streamlit app in headless chromium, as a user drives it.

What the issue asks the app to show, checked in a real browser against a real server:

1. every page renders without a Streamlit exception and shows its heading (screenshots in artifacts/screenshots/);
2. a small scoring job against the loopback judge, started from the Score page, ends in correlations on the
   Alignment page, and the number shown equals Spearman's rho computed here from the stored judgments;
3. a copied URL opened in a new browser context reopens the same view (dimension, level, coefficient, runs);
4. dataset text with HTML in it is shown as text and never executed.

One app server and one chromium serve the whole module (see conftest.py); each test has its own browser context.
"""

from __future__ import annotations

import math
import re
import time

import pytest

pytestmark = pytest.mark.browser

PAGES = ("Data", "Criteria", "Score", "Alignment", "Bias", "Compare")  # navigation titles = each page's h1
DEFAULT_RUNS = ("summeval/shen-gpt-4-0314-rts", "summeval/shen-gpt-3.5-turbo-0301-rts")
DEFAULT_LABELS = {"Shen et al. · gpt-4-0314 · RTS", "Shen et al. · gpt-3.5-turbo-0301 · RTS"}
XSS = "<script>window.__xss=1</script><b>bold</b>"


def correlation_grid(app):
    """The Alignment page's correlation table: the dataframe beside its CSV button (key csv_correlations)."""
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=app.page.locator(".st-key-csv_correlations"))
    return block.locator('[data-testid="stDataFrame"]').first


def test_every_page_renders(app):
    # The pages and their URLs as the app's own navigation lists them (the default page lives at "/").
    app.open("", "Data")
    links = app.page.locator('[data-testid="stSidebarNavLink"]').evaluate_all(
        "els => els.map(a => [a.querySelector('[data-testid=stMarkdownContainer]').textContent.trim(),"
        " a.getAttribute('href')])")
    pages = {title: href for title, href in links}
    assert set(PAGES) <= set(pages), f"navigation lists {sorted(pages)}"
    for title, href in pages.items():
        app.page.goto(href)
        app.heading(title).wait_for()
        app.idle()
        assert app.problems() == [], f"{href} ({title}) shows an exception or error: {app.problems()}"
        # Each page shows more than its title: its controls and results below it.
        assert app.page.locator('[data-testid="stMain"] [data-testid="stElementContainer"]').count() > 3, href
        shot = app.screenshot(title.lower())
        assert shot.stat().st_size > 10_000, f"screenshot of {href} looks empty"


def test_score_against_loopback_then_alignment(app, loopback, app_server):
    from scipy.stats import spearmanr

    from evalcore.datasets import load_dataset
    from evalcore.store import Store
    from evalcore.views import run_label

    n_items = 12
    app.open("score", "Score")
    app.type_into("Base URL", loopback.base_url)
    app.type_into("Model", "loopback-judge")
    app.type_into("API key", "sk-test-not-a-real-key")
    app.choose("Method", "rts")
    app.type_into("Items (0 = all)", str(n_items))
    assert app.multiselect_values("Dimensions to score") == ["coherence"]
    seen_before = loopback.requests_seen

    app.start_scoring()
    app.page.get_by_text("Done.", exact=True).wait_for(timeout=120_000)
    app.idle()
    assert app.problems() == []
    main_text = app.page.locator('[data-testid="stMain"]').inner_text()
    run_id = re.search(r"Run (summeval/\S+)", main_text).group(1)
    assert f"{n_items} / {n_items} done" in main_text
    assert loopback.requests_seen - seen_before >= n_items  # the judge really was asked
    app.screenshot("score-done")

    # Analyse only the new run: drop the preselected published runs, add ours, open Alignment in the same session.
    from evalcore.runs import list_runs
    from evalcore.views.common import run_names

    names = run_names(list_runs("summeval", Store(app_server.db_path)))
    app.select_only_run(run_id, names[run_id])  # the chips show names (issue 18.10)
    assert app.multiselect_values("Runs") == [names[run_id]]
    app.nav("Alignment")
    app.heading("Correlation with human ratings", level=3).wait_for()
    assert app.problems() == []

    run = Store(app_server.db_path).load_run(run_id)
    rows = app.grid(correlation_grid(app))
    assert rows, "the correlation table is empty"
    assert {r["run"] for r in rows} == {run_label(run)}
    # the Level and Coefficient selectors filter the table (the report holds every level and coefficient)
    assert {(r["level"], r["coefficient"]) for r in rows} == {("dataset", "spearman")}
    shown = next(r for r in rows if r["level"] == "dataset" and r["coefficient"] == "spearman")
    assert int(shown["n"]) == n_items

    # The same statistic, computed here from what the run stored and the dataset's gold scores.
    judged = run.judgments[run.judgments["dimension"] == "coherence"][["item_id", "value"]]
    frame = load_dataset("summeval").human_table("coherence").merge(judged, on="item_id")
    assert len(frame) == n_items
    expected = spearmanr(frame["value"].astype(float), frame["human"]).statistic
    assert math.isclose(float(shown["statistic"]), expected, rel_tol=1e-9, abs_tol=1e-12)
    app.screenshot("alignment-loopback-run")


def test_share_link_reopens_same_view(app, open_app):
    app.open("alignment", "Alignment")
    app.choose("Dimension", "fluency")
    app.choose("Level", "summary")
    app.choose("Coefficient", "kendall")
    url = app.page.url
    assert "dimension=fluency" in url and "level=summary" in url and "coefficient=kendall" in url, url
    runs = app.selected_runs()
    assert runs == list(DEFAULT_RUNS)

    other = open_app()  # a new browser context: nothing shared but the link
    other.page.goto(url)
    other.heading("Alignment").wait_for()
    other.heading("Correlation with human ratings", level=3).wait_for()
    other.idle()
    assert other.problems() == []
    assert other.selected("Dimension") == "fluency"
    assert other.selected("Level") == "summary"
    assert other.selected("Coefficient") == "kendall"
    assert other.selected_runs() == runs
    # The page computes what the controls say: its caption and the human-ceiling title follow the link.
    other.page.get_by_text("Dimension fluency", exact=False).first.wait_for()
    other.page.get_by_text("Human ceiling (summary, kendall)", exact=False).first.wait_for()
    rows = other.grid(correlation_grid(other))
    assert rows and {r["run"] for r in rows} == DEFAULT_LABELS
    other.screenshot("alignment-shared-link")


def test_dataset_text_is_shown_as_text_not_html(app):
    csv = (
        "doc_id,system,article,summary,coherence\n"
        f'd1,sysA,"The council met on Monday.","{XSS}",4\n'
        'd1,sysB,"The council met on Monday.","The council met.",3\n'
        'd2,sysA,"Rain fell all week.","It rained.",5\n'
        'd2,sysB,"Rain fell all week.","Weather happened.",2\n'
    )
    app.open("", "Data")
    uploader = app.page.locator('.st-key-upload input[type="file"]')  # the dataset uploader (not the scores one)
    uploader.set_input_files({"name": "xss.csv", "mimeType": "text/csv", "buffer": csv.encode()})
    app.page.get_by_role("button", name="Import dataset").wait_for()
    app.idle()
    # A dataset name with markup too: it is shown in the sidebar, the success message and page captions.
    app.type_into("Dataset name", 'xss <img src=x onerror="window.__xss=2"> test')
    app.page.get_by_role("button", name="Import dataset").click()
    app.page.get_by_text("Imported", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []
    # The new dataset is the one in use, its name shown verbatim (sidebar and page text).
    assert app.selected_dataset().startswith("user-"), app.selected_dataset()
    # its name, not its id, verbatim in the sidebar's picker (plain text: no image, no script)
    assert app.selected("Dataset") == 'xss <img src=x onerror="window.__xss=2"> test'

    # The Data page's preview grid holds the text verbatim. Wait for the cell itself: the grids of the run before the
    # import (the bundled dataset's) can still be on screen while the new run draws.
    cell = app.page.locator('[data-testid="stDataFrame"] td', has_text=XSS).first
    cell.wait_for(state="attached")
    assert cell.text_content() == XSS

    # The Criteria page renders the full prompt for the first item, which is the one carrying the markup.
    app.nav("Criteria")
    app.heading("Full prompt for one item", level=3).wait_for()
    app.idle()
    assert app.problems() == []
    code = app.page.locator('[data-testid="stCode"]').filter(has_text=XSS)
    code.first.wait_for()
    assert code.first.is_visible()
    app.screenshot("criteria-xss-as-text")

    assert app.page.evaluate("typeof window.__xss") == "undefined"
    main = app.page.locator('[data-testid="stApp"]')
    assert main.locator("b", has_text="bold").count() == 0
    assert main.locator('img[src="x"]').count() == 0
    assert app.page.locator("script", has_text="__xss").count() == 0


# ------------------------------------------------------------------------------------------- share links (issue 8)


def score_on_score_page(app, loopback, n_items: int) -> str:
    """Score the first ``n_items`` of the dataset in use with the loopback judge (RTS) from the Score page; the run id."""
    app.nav("Score")
    app.type_into("Base URL", loopback.base_url)
    app.type_into("Model", "loopback-judge")
    app.choose("Endpoint preset", "vllm")
    app.choose("Method", "rts")
    app.type_into("Items (0 = all)", str(n_items))
    app.page.get_by_role("heading", name="Estimate", level=3).wait_for()
    main = app.page.locator('[data-testid="stMain"]')
    before = re.search(r"Run (\S+/rts-loopback-judge\S+)", main.inner_text())
    app.start_scoring()
    # wait for this run's "Done.", not the one a previous run left on the page
    deadline = time.monotonic() + 120
    while True:
        found = re.search(r"Run (\S+/rts-loopback-judge\S+)", main.inner_text())
        if found and (before is None or found.group(1) != before.group(1)) and \
                app.page.get_by_text("Done.", exact=True).count():
            break
        assert time.monotonic() < deadline, "the scoring run did not finish within 120 s"
        app.page.wait_for_timeout(250)
    app.idle()
    return found.group(1)


def test_copied_link_survives_scoring_another_run(app, open_app, loopback):
    """zhang_pairs ships no run, so it opens on its newest local run. Score one, copy the Alignment page's URL, score
    another (it joins the selection in this session, and is now the newest), then open the copied link in a fresh
    browser context: the same runs and the same view as when it was copied, not the new default."""
    app.open("alignment?dataset=zhang_pairs", "Alignment")
    first = score_on_score_page(app, loopback, 4)
    app.screenshot("score-estimate-and-done")
    assert app.selected_runs() == [first]  # selected in the same session
    app.nav("Alignment")
    app.choose("Coefficient", "kendall")
    copied = app.page.url
    runs_then = app.selected_runs()
    dim_then = app.selected("Dimension")
    assert "coefficient=kendall" in copied and "dataset=zhang_pairs" in copied, copied
    assert f"runs={first.replace('/', '%2F')}" in copied, copied

    second = score_on_score_page(app, loopback, 6)
    assert second != first
    # the finished run is selected in the sidebar of the same session, and the URL says so
    assert app.selected_runs() == [first, second]
    assert f"runs={second.replace('/', '%2F')}" in app.page.url
    app.screenshot("score-done-run-selected")
    fresh = open_app()
    fresh.open("alignment?dataset=zhang_pairs", "Alignment")
    assert fresh.selected_runs() == [second]  # without the link's runs, the newest run is the default

    other = open_app()  # a new browser context: nothing shared but the copied link
    other.page.goto(copied)
    other.heading("Alignment").wait_for()
    other.idle()
    assert other.problems() == []
    assert other.selected_runs() == runs_then == [first]
    assert other.selected_dataset() == "zhang_pairs"
    assert other.selected("Dimension") == dim_then
    assert other.selected("Coefficient") == "kendall"
    assert other.page.url == copied  # nothing added, nothing dropped
    other.screenshot("alignment-copied-link-after-scoring")


def test_data_path_opens_the_data_page(open_app):
    """/data (the Data page's own name) opens the Data page with the link's state, not "Page not found"."""
    page = open_app()
    page.page.goto(f"{page.base_url}/data?dataset=topical_chat&data_section=Human+agreement")
    page.heading("Data").wait_for()
    page.idle()
    assert page.problems() == []
    assert page.selected_dataset() == "topical_chat"
    # Topical-Chat opens on a dimension its bundled G-Eval run scored, not on "understandability"
    assert page.selected("Dimension") == "naturalness"
    assert "data_section=Human+agreement" in page.page.url or "data_section=Human%20agreement" in page.page.url
    page.page.get_by_role("tab", name="Human agreement", selected=True).wait_for()
    page.screenshot("data-topical-chat-agreement")
