"""End-to-end, in headless chromium: a file in LMSYS Chatbot Arena's layout (tests/fixtures/importers/
arena_lmsys_train.csv, synthetic, the columns of the Kaggle "lmsys-chatbot-arena" train.csv) uploaded on the Data
page is offered as pairwise preferences with its three one-hot vote columns prefilled as such, and imports with the
file's own counts, 39 A, 35 B, 6 tie (before, the page read winner_model_a as the winner: 39 A, 41 tie, no B)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalcore.importers.pairs import import_pairs

pytestmark = pytest.mark.browser

ARENA = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "arena_lmsys_train.csv"
ROLES = {"prompt": "prompt", "response_a": "output A", "response_b": "output B", "model_a": "model A",
         "model_b": "model B", "winner_model_a": "A wins (0/1)", "winner_model_b": "B wins (0/1)",
         "winner_tie": "tie (0/1)"}


def _role(app, col: str) -> str:
    """The role chosen for a column; the widget's label may carry the Markdown escape of the column's underscores."""
    name = re.compile(r"^Pairwise role of " + r"\\?_".join(map(re.escape, col.split("_"))) + "$")
    return app.page.get_by_role("combobox", name=name).input_value()


def test_arena_upload_imports_one_hot_votes_as_the_file_gives_them(app):
    expected = import_pairs(ARENA, name="arena_lmsys_train").dataset
    app.open("", "Data")
    app.page.locator('.st-key-upload input[type="file"]').set_input_files(
        {"name": ARENA.name, "mimeType": "text/csv", "buffer": ARENA.read_bytes()})
    app.page.get_by_role("button", name="Import pairwise preferences").wait_for()
    app.idle()
    assert app.problems() == []
    holds = app.page.get_by_role("radiogroup", name="The file holds")
    assert holds.get_by_role("radio", name="pairwise preferences", exact=True).is_checked()
    assert {col: _role(app, col) for col in ROLES} == ROLES
    app.screenshot("arena-upload-form")

    app.page.get_by_role("button", name="Import pairwise preferences").click()
    app.page.get_by_text("Imported", exact=False).first.wait_for()
    app.idle()
    assert app.problems() == []
    assert app.selected_dataset() == expected.id
    app.page.get_by_text("80 pairs, 80 votes", exact=False).first.wait_for()
    app.page.get_by_text("votes 39 A, 35 B, 6 tie", exact=False).first.wait_for()
    app.screenshot("arena-imported")
