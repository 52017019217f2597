"""Real layouts on the Data page. LMSYS Chatbot Arena's layout (tests/fixtures/importers/arena_lmsys_train.csv, synthetic, in the
columns of the Kaggle "lmsys-chatbot-arena" train.csv): offered as pairwise preferences with the three one-hot vote
columns prefilled as such, imported with the file's own counts (39 A, 35 B, 6 tie); given one of the 0/1 columns as
the winner, the import is refused with a message about the page's role menu, not the command line. HelpSteer2 as it
ships (tests/fixtures/importers/helpsteer2.jsonl: no system, two responses per prompt, 0-4 ratings): the page says
what stands in for the document id and system before the import and shows the scales inferred from the ratings."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from tests.test_app_pages import assert_clean, new_app  # noqa: E402

pytestmark = pytest.mark.usefixtures("first_start")
FIXTURE = Path(__file__).parent / "fixtures" / "importers" / "arena_lmsys_train.csv"


def _uploaded():
    at = new_app()
    at.run()
    at.file_uploader(key="upload").upload(FIXTURE.name, FIXTURE.read_bytes(), "text/csv")
    at.run()
    assert_clean(at)
    return at


def test_the_arena_layout_is_offered_with_one_hot_roles_and_imports_its_counts():
    at = _uploaded()
    assert at.radio(key="upload_holds").value == "pairwise preferences"
    roles = {c: at.selectbox(key=f"pairrole_{c}").value for c in
             ("prompt", "response_a", "response_b", "model_a", "model_b", "winner_model_a", "winner_model_b",
              "winner_tie")}
    assert roles == {"prompt": "prompt", "response_a": "output A", "response_b": "output B", "model_a": "model A",
                     "model_b": "model B", "winner_model_a": "A wins (0/1)", "winner_model_b": "B wins (0/1)",
                     "winner_tie": "tie (0/1)"}
    at.button(key="import_pairs").click().run()
    assert_clean(at)
    done = " ".join(str(s.value) for s in at.success)
    assert "80 pairs, 80 votes" in done and "votes 39 A, 35 B, 6 tie" in done, done
    warned = " ".join(str(w.value) for w in at.warning).replace("\\", "")  # Markdown escapes
    assert "one-hot" in warned and "JSON lists of turns" in warned


def test_a_zero_one_winner_column_is_refused_in_the_pages_words():
    at = _uploaded()
    at.selectbox(key="pairrole_winner_model_a").set_value("winner").run()
    at.selectbox(key="pairrole_winner_model_b").set_value("ignored").run()
    at.selectbox(key="pairrole_winner_tie").set_value("ignored").run()
    at.button(key="import_pairs").click().run()
    errors = " ".join(str(e.value) for e in at.error).replace("\\", "")  # Markdown escapes
    assert "holds only 0 and 1" in errors and "one-hot" in errors and "role menu" in errors, errors
    assert "--winner" not in errors and "--one-hot" not in errors and "give --" not in errors
    assert not at.success


HELPSTEER2 = Path(__file__).parent / "fixtures" / "importers" / "helpsteer2.jsonl"


def test_helpsteer2_as_it_ships_shows_its_implicit_ids_and_inferred_scales_then_imports():
    at = new_app()
    at.run()
    at.file_uploader(key="upload").upload(HELPSTEER2.name, HELPSTEER2.read_bytes(), "application/jsonl")
    at.run()
    assert_clean(at)
    assert at.radio(key="upload_holds").value == "ratings of outputs"
    assert (at.selectbox(key="role_prompt").value, at.selectbox(key="role_response").value) == ("source", "output")
    said = " ".join(str(i.value) for i in at.info).replace("\\", "")
    assert "No document id column" in said and "No system column" in said and "output-1, output-2" in said
    # the scales shown before the import: inferred from the ratings (0-4, and 0-2, 0-3 where that is all they reach)
    scales = {d: (at.number_input(key=f"scale_min_{d}").value, at.number_input(key=f"scale_max_{d}").value)
              for d in ("helpfulness", "complexity", "verbosity")}
    assert scales == {"helpfulness": (0.0, 4.0), "complexity": (0.0, 2.0), "verbosity": (0.0, 3.0)}
    at.number_input(key="scale_max_complexity").set_value(4.0).run()  # HelpSteer2's scale is 0-4: widened here
    at.button(key="import_dataset").click().run()
    assert_clean(at)
    done = " ".join(str(s.value) for s in at.success)
    assert "12 items" in done, done
    warned = " ".join(str(w.value) for w in at.warning).replace("\\", "")
    assert "numbered in file order (output-1 to output-2)" in warned


ALT_HUMANS = Path(__file__).parent / "fixtures" / "importers" / "alt_test_human_annotations.json"
ALT_LLMS = Path(__file__).parent / "fixtures" / "importers" / "alt_test_llm_annotations.json"


def test_the_alt_test_authors_files_import_on_the_page_humans_then_one_run_per_llm():
    at = new_app()
    at.run()
    at.file_uploader(key="upload").upload(ALT_HUMANS.name, ALT_HUMANS.read_bytes(), "application/json")
    at.run()
    assert_clean(at)
    roles = {c: at.selectbox(key=f"role_{c}").value for c in ("annotator", "item_id", "label")}
    assert roles == {"annotator": "annotator", "item_id": "item_id", "label": "human"}
    said = " ".join(str(i.value) for i in at.info).replace("\\", "")
    assert "No system column" in said and "No output column" in said and "a document of its own" in said
    at.button(key="import_dataset").click().run()
    assert_clean(at)
    assert any("45 items" in str(s.value) for s in at.success), [s.value for s in at.success]
    at.file_uploader(key="upload_scores").upload(ALT_LLMS.name, ALT_LLMS.read_bytes(), "application/json")
    at.run()
    assert_clean(at)
    assert any("for 2 judges" in str(c.value) for c in at.caption)
    at.button(key="import_scores").click().run()
    assert_clean(at)
    done = " ".join(str(s.value) for s in at.success).replace("\\", "")  # Markdown escapes
    assert "gemini_flash" in done and "gpt4o" in done and "45 judgments" in done, done
