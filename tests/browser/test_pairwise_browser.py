"""End-to-end: an MT-Bench-format file of human pairwise votes uploaded on the Data page is read as pairwise
preferences with no hand work; a judge's verdicts in both orders are added with the judge-score uploader; the
Alignment page opens on the Pairwise preferences tab and shows the agreement computed by evalcore on the same files.
"""

from __future__ import annotations

import csv
import io
import re
import shutil

import pytest

from evalcore.importers.pairs import import_pairs
from evalcore.meta.preference import pairwise_summary

pytestmark = pytest.mark.browser

HEADER = ["question_id", "model_a", "model_b", "winner", "judge", "turn", "question", "answer_a", "answer_b"]
HAIKU, RAIN, DROPS = "Soft rain on the roof", "Rain is wet.", "Drops fall, clouds weep"
ROWS = [
    [81, "gpt-4", "llama-13b", "model_a", "author_0", 1, "Write a haiku about rain.", HAIKU, RAIN],
    [81, "gpt-4", "llama-13b", "tie", "author_1", 1, "Write a haiku about rain.", HAIKU, RAIN],
    [81, "llama-13b", "gpt-4", "model_b", "author_2", 1, "Write a haiku about rain.", RAIN, HAIKU],
    [81, "gpt-4", "vicuna-13b", "tie (bothbad)", "author_0", 1, "Write a haiku about rain.", HAIKU, DROPS],
    [81, "vicuna-13b", "gpt-4", "model_a", "author_1", 1, "Write a haiku about rain.", DROPS, HAIKU],
    [82, "vicuna-13b", "llama-13b", "tie (inconsistent)", "author_0", 1, "Name three primes.", "2, 3, 5", "1, 2, 3"],
    [82, "vicuna-13b", "llama-13b", "model_a", "author_1", 1, "Name three primes.", "2, 3, 5", "1, 2, 3"],
]


def _csv(header, rows) -> bytes:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(header)
    w.writerows(rows)
    return out.getvalue().encode("utf-8")


def _save(app, name: str) -> None:
    path = app.screenshot(name)
    shutil.copy(path, f"/tmp/{name}.png")


def test_mtbench_upload_verdicts_then_pairwise_alignment(app, loopback, app_server):
    data = _csv(HEADER, ROWS)
    expected = import_pairs((data, "mtbench_human.csv"), name="mtbench_human").dataset
    pids = list(dict.fromkeys(expected.preferences["pair_id"]))
    # the judge: "a" in both orders on the first pair, a disagreement (-> tie) on the second, "b" on the third
    verdicts = [[pids[0], "ab", "a"], [pids[0], "ba", "a"], [pids[1], "ab", "a"], [pids[1], "ba", "b"],
                [pids[2], "ab", "b"], [pids[2], "ba", "b"]]

    app.open("", "Data")
    app.page.locator('.st-key-upload input[type="file"]').set_input_files(
        {"name": "mtbench_human.csv", "mimeType": "text/csv", "buffer": data})
    app.page.get_by_role("button", name="Import pairwise preferences").wait_for()
    app.idle()
    assert app.problems() == []
    _save(app, "pairwise-upload-form")
    app.page.get_by_role("button", name="Import pairwise preferences").click()
    app.page.get_by_text("Imported", exact=False).first.wait_for()
    app.idle()
    assert app.selected_dataset() == expected.id
    app.page.get_by_text("3 pairs, 7 votes by 3 annotators, 3 models", exact=False).first.wait_for()

    app.page.locator('.st-key-upload_scores input[type="file"]').set_input_files(
        {"name": "my_judge.csv", "mimeType": "text/csv", "buffer": _csv(["pair_id", "order", "verdict"], verdicts)})
    app.page.get_by_role("button", name="Import judge scores").wait_for()
    app.idle()
    app.page.get_by_role("button", name="Import judge scores").click()
    app.page.get_by_text("6 pairwise verdicts", exact=False).first.wait_for()
    app.idle()
    _save(app, "pairwise-verdicts-imported")

    app.nav("Alignment")
    app.heading("Pairwise preferences: judge vs human votes", level=3).wait_for()
    app.idle()
    assert app.problems() == []
    block = app.page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=app.page.locator(".st-key-csv_pairwise_agreement"))
    rows = app.grid(block.locator('[data-testid="stDataFrame"]').first)
    shown = {r["statistic"]: float(r["value"]) for r in rows if r["run"] == "my_judge"}
    import pandas as pd

    judge = pd.DataFrame([{"pair_id": p, "doc_id": expected.preferences.set_index("pair_id").loc[p, "doc_id"].iloc[0],
                           "item_first": "", "item_second": "", "dimension": "preference", "order": o, "raw": v,
                           "verdict": ("first" if (v == "a") == (o == "ab") else "second"), "status": "ok",
                           "reason": ""} for p, o, v in verdicts])
    want = pairwise_summary(expected.preferences, judge, expected.items, n_resamples=20)
    assert shown["judge vs every vote, with ties (S1)"] == pytest.approx(want["agreement"]["with_ties"]["statistic"],
                                                                        abs=5e-4)
    assert shown["positional agreement (same winner in both orders)"] == pytest.approx(
        want["positional_agreement"]["statistic"], abs=5e-4)
    _save(app, "pairwise-alignment")

    # Judge the annotated pairs here, through the loopback, with the MT-Bench prompt in both orders (the default)
    app.nav("Score")
    app.type_into("Base URL", loopback.base_url)
    app.type_into("Model", "loopback-judge")
    app.type_into("API key", "sk-test-not-a-real-key")
    app.choose("Method", "mtbench")
    assert app.multiselect_values("Presentation orders") == ["ab", "ba"]
    before = loopback.by_path.get("/v1/chat/completions", 0)
    app.start_scoring()  # confirms the spending step the Score page asks for, then starts
    app.page.get_by_text("Done.", exact=True).wait_for(timeout=120_000)
    app.idle()
    assert app.problems() == []
    sent = loopback.by_path.get("/v1/chat/completions", 0) - before
    main_text = app.page.locator('[data-testid="stMain"]').inner_text()
    run_id = re.search(r"Run (user-\S+)", main_text).group(1)
    from evalcore.store import Store

    run = Store(app_server.db_path).load_run(run_id)
    # only the 3 annotated pairs, each in both orders (the rain/drops pair nobody voted on is not sent); the rest of
    # what was sent are the endpoint's capability probes
    assert len(run.comparisons) == 6 and set(run.comparisons["order"]) == {"ab", "ba"}
    voted = {frozenset(x) for x in zip(expected.preferences["item_a"], expected.preferences["item_b"])}
    assert {frozenset(x) for x in zip(run.comparisons["item_first"], run.comparisons["item_second"])} == voted
    assert 6 <= sent <= 6 + 4, sent
    _save(app, "pairwise-score-done")
    assert run_id in app.selected_runs()  # a finished run joins the selection by itself
    app.nav("Alignment")
    app.heading("Pairwise preferences: judge vs human votes", level=3).wait_for()
    app.idle()
    assert app.problems() == []
    rows = app.grid(app.page.locator('[data-testid="stHorizontalBlock"]').filter(
        has=app.page.locator(".st-key-csv_pairwise_agreement")).locator('[data-testid="stDataFrame"]').first)
    shown_runs = {r["run"] for r in rows}  # the grid renders its first rows: both runs, by name, are among them
    assert {"my_judge", "mtbench · loopback-judge"} <= shown_runs, shown_runs
    _save(app, "pairwise-alignment-two-runs")
