"""The Data page's upload form for ratings written as words and for texts with no ratings yet (issues 7 and 11):
the form prefills the labels of a word column in their default order (negative first), lets the user reorder them
(the last label of a binary dimension is the positive class), and declares dimensions to rate on the Label page
for a file of texts only. What the page imports equals what the library imports from the same declarations."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from evalcore import importers  # noqa: E402
from evalcore.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORDS = ROOT / "tests" / "fixtures" / "words"


pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py


def upload(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.file_uploader(key="upload").upload(name, (WORDS / name).read_bytes(), "text/csv")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def imported(at: AppTest, tmp_path: Path):
    at.button(key="import_dataset").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    store = Store(tmp_path / "evalcore.db")
    return store.load_dataset(at.sidebar.selectbox(key="dataset").value)


def test_word_labels_are_prefilled_negative_first_and_can_be_reordered(tmp_path):
    at = upload("faithfulness_annotators.csv")
    assert at.selectbox(key="kind_faithfulness").value == "binary"
    assert at.text_input(key="labels_faithfulness").value == "fail, pass"  # negative first: pass is the positive class
    at.text_input(key="labels_faithfulness").input("pass, fail").run()  # the user makes "fail" the positive class
    ds = imported(at, tmp_path)
    dim = ds.dimension("faithfulness")
    assert dim.kind == "binary" and list(dim.labels) == ["pass", "fail"]
    raw = pd.read_csv(WORDS / "faithfulness_annotators.csv")
    a = ds.annotations[ds.annotations["dimension"] == "faithfulness"]
    assert len(a) == len(raw)
    # codes: index of the word in the declared order
    assert (a["value"].map({0.0: "pass", 1.0: "fail"}).value_counts().sort_index()
            == raw["faithful"].str.strip().str.lower().value_counts().sort_index()).all()


def test_texts_only_file_gets_its_dimensions_declared_on_the_form(tmp_path):
    at = upload("texts_only.csv")
    assert at.number_input(key="unrated_n").value == 1  # no rating column: one dimension to declare, open
    at.number_input(key="unrated_n").set_value(2).run()
    at.text_input(key="unrated_dim_0").input("coherence").run()
    at.text_input(key="unrated_dim_1").input("faithful").run()
    at.selectbox(key="unrated_kind_1").set_value("binary").run()
    at.text_input(key="unrated_labels_1").input("no, yes").run()
    ds = imported(at, tmp_path)
    assert ds.dimension_names == ["coherence", "faithful"]
    assert (ds.dimension("coherence").scale_min, ds.dimension("coherence").scale_max) == (1.0, 5.0)
    assert ds.dimension("faithful").kind == "binary" and list(ds.dimension("faithful").labels) == ["no", "yes"]
    assert ds.human_scores.empty and ds.annotations.empty
    assert len(ds.items) == len(pd.read_csv(WORDS / "texts_only.csv"))
    # the same declarations through the library give the same dataset
    raw = importers.read_table((WORDS / "texts_only.csv").read_bytes(), filename="texts_only.csv")
    mapping = importers.mapping_from_guesses(importers.guess_columns(raw))
    mapping.unrated = ["coherence", "faithful"]
    mapping.scales = {"coherence": (1.0, 5.0), "faithful": (0.0, 1.0)}
    mapping.kinds = {"coherence": "interval", "faithful": "binary"}
    mapping.labels = {"faithful": ["no", "yes"]}
    lib = importers.import_table(((WORDS / "texts_only.csv").read_bytes(), "texts_only.csv"), mapping,
                                 name="texts_only", table=raw).dataset
    pd.testing.assert_frame_equal(lib.items.astype(str), ds.items.astype(str))
    assert [(d.name, d.kind, tuple(d.labels or ())) for d in lib.dimensions] == \
        [(d.name, d.kind, tuple(d.labels or ())) for d in ds.dimensions]
    # and the Label page opens on it
    at.switch_page("pages/label.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Label"


def test_texts_only_without_a_declared_dimension_says_how_to_declare_one(tmp_path):
    at = upload("texts_only.csv")
    at.button(key="import_dataset").click().run()
    assert not at.exception
    text = " ".join(e.value for e in at.error)
    assert "no dimension is declared" in text and "Dimensions to rate in the app" in text
    assert Store(tmp_path / "evalcore.db").list_datasets() == []


@pytest.mark.parametrize("cells, labels", [
    (["pass", "fail", "pass"], ("fail", "pass")),
    (["A", "B", "tie"], ("A", "B", "tie")),
    (["1", "inf", "3"], ()),  # a bad number, reported with its row at import: not a label
    (["1", "four", "3"], ()),  # numbers with a stray word: not labels either
])
def test_only_columns_of_words_are_guessed_as_labels(cells, labels):
    cells = cells * 4  # the guess wants repeated values
    raw = pd.DataFrame({"doc": [f"d{i}" for i in range(len(cells))], "system": ["A"] * len(cells),
                        "output": [f"text {i}" for i in range(len(cells))], "verdict": cells})
    guess = {g.column: g for g in importers.guess_columns(raw)}["verdict"]
    assert guess.labels == labels
