"""The Label page under AppTest: two annotators label 10 items each (two sessions at once), one reloads mid-way,
nothing is lost; their alpha and the labels' correlation with a bundled run then appear on the Data and Alignment
pages, equal to the figures computed here from the store with krippendorff and scipy."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 90
RUN = "summeval/shen-gpt-3.5-turbo-0301-rts"
ANN = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
BOB = [1, 2, 3, 4, 4, 2, 2, 3, 5, 5]


pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py


def label_page(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page("pages/label.py").run()  # a link to the page (the Data page keeps only its own parameters)
    clean(at)
    return at


def clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def shown_output(at: AppTest) -> str:
    """The output text on the card: the first st.code block (the source follows it)."""
    return at.code[0].value


def rate(at: AppTest, value: int) -> None:
    at.button(key=f"label_rate_{value}").click().run()
    clean(at)


def frame_with(at: AppTest, *columns: str):
    for d in at.dataframe:
        if all(c in d.value.columns for c in columns):
            return d.value
    raise AssertionError(f"no table with {columns}: {[list(d.value.columns) for d in at.dataframe]}")


def test_two_annotators_reload_and_every_page_sees_the_labels():
    import krippendorff
    from scipy.stats import spearmanr

    from evalcore import labels, runs
    from evalcore.store import default_store

    ds = runs.get_dataset("summeval", with_labels=False)
    order = labels.random_order(ds)
    outputs = ds.items.assign(item_id=ds.items["item_id"].astype(str)).set_index("item_id")["output"]

    a = label_page(annotator="ann", label_dims="coherence")
    b = label_page(annotator="bob", label_dims="coherence")
    assert shown_output(a) == outputs[order[0]]  # the shared random order: both start on the same item
    for k in range(5):  # the two sessions interleave, as two browser tabs would
        assert shown_output(a) == outputs[order[k]]
        rate(a, ANN[k])
        if k == 2:
            rate(b, BOB[k] % 5 + 1)  # bob mis-clicks, then undoes it
            b.button(key="label_undo").click().run()
        rate(b, BOB[k])
    # ann reloads the page mid-way: a new session from the same URL continues where she stopped
    a = label_page(annotator="ann", label_dims="coherence")
    assert shown_output(a) == outputs[order[5]]
    for k in range(5, 10):
        rate(a, ANN[k])
        rate(b, BOB[k])

    rows = default_store().label_rows("summeval")
    latest = labels.latest_labels(rows)
    # 21 rows were written; bob's mis-click was undone (deleted); nothing else is missing
    assert len(latest) == 20 and len(rows) == 20 and rows["label_id"].max() == 21
    for name, values in (("ann", ANN), ("bob", BOB)):
        mine = latest[latest["annotator"] == name].set_index("item_id")["value"]
        assert [mine[i] for i in order[:10]] == values
    assert sorted(rows.loc[rows["annotator"] == "ann", "position"]) == list(range(1, 11))

    # the Label page's own alpha, live
    expected_alpha = krippendorff.alpha(reliability_data=[ANN, BOB], level_of_measurement="interval")
    shown = frame_with(a.run(), "alpha", "level")
    assert math.isclose(shown["alpha"].iloc[0], expected_alpha, rel_tol=1e-9)
    assert shown["n_items"].iloc[0] == 10

    # the Data page of the labels view: the labels' alpha
    d = AppTest.from_file(APP, default_timeout=TIMEOUT)
    d.query_params["dataset"] = "summeval@labels"
    d.query_params["data_section"] = "Human agreement"
    d.run()
    clean(d)
    agreement = frame_with(d, "alpha", "group")
    row = agreement[agreement["group"] == labels.LABEL_GROUP].iloc[0]
    assert math.isclose(row["alpha"], expected_alpha, rel_tol=1e-9) and row["n_items"] == 10
    # Alignment on the labels view: the bundled run against the mean of the two annotators
    al = AppTest.from_file(APP, default_timeout=TIMEOUT)
    al.query_params["dataset"] = "summeval@labels"
    al.query_params["runs"] = [RUN]
    al.run()
    al.switch_page("pages/alignment.py").run()
    clean(al)
    table = frame_with(al, "run", "level", "coefficient", "statistic")
    cell = table[(table["level"] == "dataset") & (table["coefficient"] == "spearman")].iloc[0]
    judge = runs.load_run(RUN).scores("coherence").set_index("item_id")["judge"]
    both = [i for i in order[:10] if i in judge.index]
    mean = {i: (x + y) / 2 for i, x, y in zip(order[:10], ANN, BOB)}
    expected = spearmanr([judge[i] for i in both], [mean[i] for i in both]).statistic
    assert cell["n"] == len(both) and math.isclose(cell["statistic"], expected, rel_tol=1e-9)


def test_label_page_texts_only_dataset_and_plan():
    import pandas as pd

    from evalcore.store import default_store
    from evalcore.model import HUMAN_SCORE_COLUMNS, Dataset, Dimension, empty_frame

    docs = pd.DataFrame({"doc_id": ["d1", "d2"], "source": ["<b>src</b> one", "src two"], "references": [[], []],
                         "context": ["", ""]})
    items = pd.DataFrame({"item_id": ["a", "b", "c", "d"], "doc_id": ["d1", "d1", "d2", "d2"],
                          "system_id": ["x", "y", "x", "y"], "output": ["out a", "out b", "out c", "out d"]})
    default_store().save_dataset(Dataset(id="texts", name="Texts only", task="summarization",
                                         dimensions=[Dimension("ok", 0, 1, kind="binary", labels=("no", "yes")),
                                                     Dimension("score", 0, 100)],
                                         documents=docs, items=items,
                                         human_scores=empty_frame(HUMAN_SCORE_COLUMNS)))
    at = label_page(dataset="texts", annotator="ann", label_dims="ok")
    # a binary dimension with named labels: one button per label, the code stored
    assert [b.label for b in at.button if b.key and b.key.startswith("label_rate_")] == ["no", "yes"]
    sources = [c.value for c in at.code]
    assert "<b>src</b> one" in sources or "src two" in sources  # texts as plain text blocks
    at.button(key="label_rate_1").click().run()
    assert any("rated yes" in c.value for c in at.caption)
    at.button(key="label_skip").click().run()
    clean(at)
    rows = default_store().label_rows("texts")
    assert rows["skipped"].tolist() == [0, 1]
    assert any("1 of" in str(p.value) or "1 of" in str(getattr(p, "text", "")) for p in at.get("progress"))
    # the label means become the texts-only dataset's human scores; the page says so
    from evalcore import runs

    assert runs.get_dataset("texts").human_scores["score"].tolist() == [1.0]
    assert any("gets the mean of its random" in c.value for c in at.caption)

    # a 0-100 scale is rated with a number field and a save button, not 101 buttons
    at = label_page(dataset="texts", annotator="bob", label_dims="score")
    assert not [b for b in at.button if b.key and b.key.startswith("label_rate_")]
    at.number_input(key=next(n.key for n in at.number_input if n.key.startswith("label_value"))).set_value(73).run()
    at.button(key="label_save").click().run()
    clean(at)
    assert default_store().label_rows("texts").iloc[-1][["annotator", "dimension", "value"]].tolist() == \
        ["bob", "score", 73.0]


def test_orders_stratified_and_where_the_judge_is_least_certain():
    """Stratified and uncertainty orders on the page: the item shown first is the one the library orders first, and
    a label given under the uncertainty order is kept out of the random part (the page says so)."""
    from evalcore import labels, runs
    from evalcore.store import default_store

    ds = runs.get_dataset("summeval", with_labels=False)
    outputs = ds.items.set_index("item_id")["output"]
    at = label_page(annotator="ann", label_dims="coherence", label_order="stratified")
    strat, rand = labels.stratified_order(ds), labels.random_order(ds)
    assert shown_output(at) == outputs[strat[0]]
    k = next(i for i in range(16) if strat[i] != rand[i])  # where the two orders part
    for _ in range(k):
        rate(at, 3)
    assert shown_output(at) == outputs[strat[k]]
    assert default_store().label_rows("summeval")["strategy"].tolist() == ["stratified"] * k

    # a local G-Eval run whose score distributions are widest on three known items
    store = default_store()
    run_id = "summeval/local-geval-test"
    store.create_run(run_id=run_id, dataset_id="summeval", method="geval", model="m", status="done")
    widest = list(ds.items["item_id"][[7, 70, 700]])
    for k, item in enumerate(ds.items["item_id"][:800]):
        dist = {"1": 0.5, "5": 0.5} if item in widest else {"3": 0.9, "4": 0.1}
        store.save_judgment(run_id, {"item_id": item, "dimension": "coherence", "raw": "3", "value": 3.0,
                                     "status": "ok", "estimator": "geval", "detail": {"distribution": dist}})
    st.cache_resource.clear()
    at = label_page(annotator="ann", label_dims="coherence", label_order="uncertain",
                    label_uncertainty="G-Eval score distribution", label_geval_run=run_id)
    first = shown_output(at)
    assert first in {outputs[i] for i in widest}
    rate(at, 4)
    row = store.label_rows("summeval").iloc[-1]
    assert row["strategy"] == f"uncertain:geval:{run_id}" and row["item_id"] in widest
    assert any("chosen where the judge is least certain are left out" in c.value.replace("\\", "")
               for c in at.caption)

    # disagreement between two bundled runs
    pair = ["summeval/shen-gpt-4-0314-rts", "summeval/shen-gpt-3.5-turbo-0301-rts"]
    at = label_page(annotator="bob", label_dims="coherence", label_order="uncertain",
                    label_uncertainty="two runs disagreeing", label_disagree_runs=pair)
    a, b = (runs.load_run(r) for r in pair)
    top = labels.uncertain_order(ds, labels.run_disagreement(a, b, "coherence"))[0]
    assert shown_output(at) == outputs[top]


def test_export_reads_as_a_long_upload():
    """The exported file is also a long-layout dataset file for the Data page's importer (annotator column)."""
    import tempfile

    from evalcore import importers, labels, runs
    from evalcore.store import default_store

    ds = runs.get_dataset("summeval", with_labels=False)
    store = default_store()
    for name in ("ann", "bob"):
        for k, item in enumerate(labels.random_order(ds)[:5]):
            store.save_label("summeval", item, "coherence", name, k + 1)
    path = Path(tempfile.mkdtemp()) / "labels.csv"
    labels.export_frame(ds, store.label_rows("summeval")).to_csv(path, index=False)
    mapping = importers.ColumnMapping(item_id="item_id", doc_id="doc_id", system_id="system_id", output="output",
                                      source="source", dimension="dimension", value="value", annotator="annotator",
                                      scales={"coherence": (1.0, 5.0)})
    new = importers.load_user_dataset(path, mapping, name="labels again")
    assert sorted(new.items["item_id"]) == sorted(labels.random_order(ds)[:5])
    assert len(new.annotations) == 10 and set(new.annotations["annotator"]) == {"ann", "bob"}


def test_label_name_changes_only_when_submitted_and_each_annotator_has_own_shown_at():
    """Issue 18.11: a name typed but not submitted (digit keys meant as ratings) does not change the annotator; a
    second annotator in the same session gets their own shown_at; numeric buttons read "rate 3", not "3 3"."""
    import time

    from evalcore.store import default_store

    at = label_page(annotator="dora", label_dims="coherence")
    assert [b.label for b in at.button if b.key and b.key.startswith("label_rate_")] == [
        "rate 1", "rate 2", "rate 3", "rate 4", "rate 5"]
    rate(at, 3)
    at.button(key="annotator_change").click().run()  # the field is shown again (it gives way once submitted)
    at.text_input(key="annotator").input("dora4")  # typed, not submitted
    rate(at, 4)
    rows = default_store().label_rows("summeval")
    assert rows[rows["annotator"] == "dora"]["value"].tolist()[-2:] == [3.0, 4.0]
    assert "dora4" not in set(rows["annotator"])
    time.sleep(0.05)
    at.text_input(key="annotator").input("erin")
    at.button(key="label_start").click().run()
    clean(at)
    assert any("Labelling as erin" in c.value for c in at.caption)
    rate(at, 2)
    rows = default_store().label_rows("summeval")
    first_item = rows[rows["annotator"] == "dora"].iloc[0]
    erin = rows[rows["annotator"] == "erin"].iloc[0]
    assert erin["item_id"] == first_item["item_id"]  # the same order for everyone
    assert erin["shown_at"] > first_item["shown_at"]  # erin's own time, not dora's
