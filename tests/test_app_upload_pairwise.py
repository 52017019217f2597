"""The Data page on MT-Bench's published human-judgment layout (tests/fixtures/mtbench_human_judgments.jsonl, synthetic):
the file is offered as pairwise preferences, each column's pairwise role prefilled (conversations, question id,
judge as annotator) and correctable, and the import gives the pairs; read as ratings instead, the error points to the
pairwise route."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from tests.test_app_pages import PAGES, assert_clean, new_app  # noqa: E402

pytestmark = pytest.mark.usefixtures("first_start")
FIXTURE = Path(__file__).parent / "fixtures" / "mtbench_human_judgments.jsonl"


def _uploaded():
    at = new_app()
    at.run()  # the app opens on the Data page (a switch_page first loses the upload in the 1.56 floor's AppTest)
    at.file_uploader(key="upload").upload(FIXTURE.name, FIXTURE.read_bytes(), "application/jsonl")
    at.run()
    assert_clean(at)
    return at


def test_the_layout_is_offered_as_pairwise_with_its_roles_and_imports():
    at = _uploaded()
    assert at.radio(key="upload_holds").value == "pairwise preferences"
    roles = {c: at.selectbox(key=f"pairrole_{c}").value for c in
             ("question_id", "model_a", "model_b", "winner", "judge", "conversation_a", "conversation_b", "turn")}
    assert roles == {"question_id": "prompt id", "model_a": "model A", "model_b": "model B", "winner": "winner",
                     "judge": "annotator", "conversation_a": "conversation A", "conversation_b": "conversation B",
                     "turn": "turn"}
    assert "pair id" in at.selectbox(key="pairrole_judge").options  # the menu offers every pairwise role
    at.button(key="import_pairs").click().run()
    assert_clean(at)
    assert any("6 pairs, 7 votes by 3 annotators, 3 models" in str(s.value) for s in at.success)


def test_a_role_given_twice_is_said_and_blocks_the_import():
    at = _uploaded()
    at.selectbox(key="pairrole_turn").set_value("prompt id").run()
    assert any("2 columns are given the role 'prompt id'" in str(e.value) for e in at.error)
    assert at.button(key="import_pairs").disabled


def test_read_as_ratings_the_error_points_to_the_pairwise_route():
    at = _uploaded()
    at.radio(key="upload_holds").set_value("ratings of outputs").run()
    assert at.selectbox(key="role_question_id") is not None  # the ratings form, with its own role menu
    at.button(key="import_dataset").click().run()
    errors = " ".join(str(e.value) for e in at.error).replace("\\", "")  # Markdown escapes
    assert "pairwise preferences" in errors and "import-pairs" in errors


@pytest.mark.parametrize("dataset, method", [("pandalm", "mtbench"), ("summeval", "geval")])
def test_the_score_page_opens_on_a_pairwise_method_on_pairwise_data(dataset, method):
    at = new_app(dataset=dataset)
    at.run()
    at.switch_page(PAGES["score"]).run()
    assert_clean(at)
    assert at.selectbox(key="method").value == method
