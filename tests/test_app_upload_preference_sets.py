"""The Data page on the published preference sets read by import-pairs (tests/test_import_preference_sets.py cites
their dataset cards): RewardBench and HelpSteer3 files are offered as pairwise preferences with their own roles
prefilled (chosen / rejected; the -3..3 preference and the annotators' list), and import as the CLI imports them;
and on MLflow and Langfuse exports, read as ratings with their judge's scores."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from tests.test_app_pages import assert_clean, new_app  # noqa: E402

pytestmark = pytest.mark.usefixtures("first_start")
HERE = Path(__file__).parent / "fixtures" / "importers"


def _uploaded(name: str):
    at = new_app()
    at.run()
    path = HERE / name
    at.file_uploader(key="upload").upload(path.name, path.read_bytes(), "application/jsonl")
    at.run()
    assert_clean(at)
    return at


def test_rewardbench_is_offered_with_chosen_and_rejected_and_imports():
    at = _uploaded("rewardbench_sample.jsonl")
    assert at.radio(key="upload_holds").value == "pairwise preferences"
    roles = {c: at.selectbox(key=f"pairrole_{c}").value for c in
             ("prompt", "chosen", "rejected", "chosen_model", "rejected_model", "id", "subset")}
    assert roles == {"prompt": "prompt", "chosen": "chosen (preferred)", "rejected": "rejected",
                     "chosen_model": "model A", "rejected_model": "model B", "id": "pair id", "subset": "ignored"}
    at.button(key="import_pairs").click().run()
    assert_clean(at)
    assert any("12 pairs, 12 votes" in str(s.value) for s in at.success)


def test_helpsteer3_is_offered_with_its_preference_roles_and_imports():
    at = _uploaded("helpsteer3_sample.jsonl")
    assert at.radio(key="upload_holds").value == "pairwise preferences"
    assert at.selectbox(key="pairrole_overall_preference").value == "preference -3..3 (negative: A)"
    assert at.selectbox(key="pairrole_individual_preference").value == "annotators' preferences (list)"
    assert at.selectbox(key="pairrole_context").value == "prompt"
    at.button(key="import_pairs").click().run()
    assert_clean(at)
    assert any("8 pairs, 22 votes by 3 annotators" in str(s.value) for s in at.success)


@pytest.mark.parametrize("name, runs", [("mlflow_traces.json", "gpt-4o-judge"),
                                        ("langfuse_scores.json", "langfuse-eval")])
def test_a_trace_export_imports_as_ratings_with_its_judge(name, runs):
    """MLflow assessments and Langfuse scores (tests/test_import_traces.py cites their documentation): the upload
    reads them as one row per human rating, the roles guessed, and imports the judge's scores as a run."""
    at = _uploaded(name)
    assert at.radio(key="upload_holds").value == "ratings of outputs"
    assert at.selectbox(key="role_doc_id").value is not None
    at.button(key="import_dataset").click().run()
    assert_clean(at)
    said = " ".join(str(s.value) for s in at.success).replace("\\", "")  # Markdown escapes
    assert "8 items" in said and f"1 judge run: judge {runs}." in said
