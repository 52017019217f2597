"""Deleting an imported dataset: the store deletes it and everything it keeps for it (runs and their judgments,
labels, criteria versions, splits and their final checks) in one transaction, counted beforehand; another dataset is
left whole; on a server with sign-in only the uploader may, and only while no one else's work relies on it; the
command line (the operator's) may delete any upload, never a bundled dataset, and only with ``--yes``; the Data
page offers it with what it deletes said first."""

from __future__ import annotations

import json

import pytest

from evalcore.align import make_split, save_split
from evalcore.identity import Viewer
from evalcore.store import Store
from evalcore.testing.labels import label_dataset, label_run, save_label_example
from evalcore.types import Criteria
from evalcore.views import data as data_views

MINE, OTHER = "user-mine", "user-other"

pytest_plugins = ["tests.store_backends"]  # the store-level tests run on SQLite and on PostgreSQL


def filled(store_at, *, owner: str | None = None) -> Store:
    """Two uploads, each with a judge run, two labels, a criteria version, a split and a final check."""
    store = Store(store_at("s.db"))
    for dataset_id, seed in ((MINE, 0), (OTHER, 1)):
        ds, _run = save_label_example(store, seed=seed, dataset_id=dataset_id, n_docs=6)
        if owner is not None:  # the example saves without an owner; a signed-in upload records its uploader
            with store.write() as c:
                c.execute("UPDATE datasets SET owner = ? WHERE id = ?", (owner, dataset_id))
                c.execute("UPDATE runs SET owner = ? WHERE dataset_id = ?", (owner, dataset_id))
        for item in ds.items["item_id"][:2]:
            store.save_label(dataset_id, item, "faithful", owner or "ann", 1.0, owner=owner)
        store.save_criteria(dataset_id, Criteria(dimension="faithful", task_introduction="Rate.", definition="d",
                                                 scale_min=0, scale_max=1), owner=owner)
        split = make_split(ds, "faithful", test_share=0.5, seed=0)
        save_split(store, split)
        store.record_final_check(dataset_id, split.split_id, dimension="faithful", method="implicit",
                                 baseline_hash="a", chosen_hash="b", baseline_run="r1", chosen_run="r2", result={},
                                 owner=owner)
    return store


def rows_of(store: Store, dataset_id: str) -> dict[str, int]:
    """Counted straight from the tables, independently of Store.dataset_footprint's queries."""
    q = store.conn.execute
    runs = [r[0] for r in q("SELECT run_id FROM runs WHERE dataset_id = ?", (dataset_id,))]
    judgments = sum(q("SELECT count(*) FROM judgments WHERE run_id = ?", (r,)).fetchone()[0] for r in runs)
    out = {"runs": len(runs), "judgments": judgments}
    for t in ("labels", "criteria", "splits", "final_checks"):
        out[t] = q(f"SELECT count(*) FROM {t} WHERE dataset_id = ?", (dataset_id,)).fetchone()[0]
    out["datasets"] = q("SELECT count(*) FROM datasets WHERE id = ?", (dataset_id,)).fetchone()[0]
    return out


def test_deleting_an_upload_deletes_what_the_store_keeps_for_it_and_nothing_else(store_at):
    store = filled(store_at)
    before, other = rows_of(store, MINE), rows_of(store, OTHER)
    assert before == {"runs": 1, "judgments": 18, "labels": 2, "criteria": 1, "splits": 1, "final_checks": 1,
                      "datasets": 1}
    gone = store.delete_dataset(MINE)
    assert gone == {"runs": 1, "judgments": 18, "comparisons": 0, "labels": 2, "criteria": 1, "splits": 1,
                    "final_checks": 1}
    assert set(rows_of(store, MINE).values()) == {0}
    assert rows_of(store, OTHER) == other
    with pytest.raises(KeyError, match="bundled dataset cannot be deleted"):
        store.delete_dataset("summeval")


def test_on_a_server_with_sign_in_only_the_uploader_may_delete_while_no_one_elses_work_relies_on_it(store_at):
    store = filled(store_at, owner="ann")
    with pytest.raises(PermissionError, match="uploaded by another user"):
        store.delete_dataset(MINE, by=Viewer("bob"))
    with pytest.raises(PermissionError, match="sign in"):
        store.delete_dataset(MINE, by=Viewer(None))
    store.save_label(MINE, "doc05-sys0", "faithful", "bob", 0.0, owner="bob")  # bob labelled ann's shared upload
    with pytest.raises(PermissionError, match="1 label of other users"):
        store.delete_dataset(MINE, by=Viewer("ann"))
    assert rows_of(store, MINE)["datasets"] == 1  # refused: nothing deleted
    assert store.delete_dataset(OTHER, by=Viewer("ann"))["runs"] == 1
    # an upload made without sign-in is everyone's: only the operator (by=None) deletes it
    store.conn.execute("UPDATE datasets SET owner = NULL WHERE id = ?", (MINE,))
    store.conn.commit()
    with pytest.raises(PermissionError, match="only the server's operator"):
        store.delete_dataset(MINE, by=Viewer("ann"))
    assert store.delete_dataset(MINE)["labels"] == 3


def test_the_command_line_says_what_it_would_delete_and_deletes_only_with_yes(store_at, capsys):
    from evalcore.cli import main

    store = filled(store_at)
    db = store_at("s.db")
    assert main(["delete-dataset", MINE, "--db", db]) == 2
    said = capsys.readouterr()
    assert "1 judge run (18 judgments), 2 labels" in said.err + said.out and "--yes" in said.err + said.out
    assert rows_of(store, MINE)["datasets"] == 1
    name = store.dataset_name(OTHER)  # by name: both synthetic uploads share one, so the id is asked for
    assert main(["delete-dataset", name, "--db", db, "--yes"]) == 2
    assert "give one id of" in capsys.readouterr().err
    assert main(["delete-dataset", MINE, "--db", db, "--yes", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["deleted"] == MINE and out["runs"] == 1 and out["labels"] == 2
    assert rows_of(store, MINE)["datasets"] == 0 and rows_of(store, OTHER)["runs"] == 1
    assert main(["delete-dataset", "summeval", "--db", db, "--yes"]) == 2
    assert "bundled dataset cannot be deleted" in capsys.readouterr().err


def test_the_data_page_offers_deletion_of_an_upload_only_and_says_what_it_deletes(tmp_path):
    from evalcore import datasets

    store = filled(lambda name: str(tmp_path / name), owner="ann")
    assert data_views.delete_offer(store, datasets.load_dataset("summeval"), None) is None  # bundled
    ds = store.load_dataset(MINE)
    offer = data_views.delete_offer(store, ds, Viewer("ann"))
    assert offer.allowed and offer.confirm == MINE and offer.why_not is None
    text = offer.what.text.replace("\\", "")
    assert "1 judge run (18 judgments), 2 labels made on the Label page, 1 criteria version and 1 development / " \
           "test split (with 1 final check)" in text
    refused = data_views.delete_offer(store, ds, Viewer("bob"))
    assert not refused.allowed and "uploaded by another user" in refused.why_not.text
    note = data_views.delete_dataset(store, MINE, Viewer("bob"))  # the store checks again
    assert note.kind == "error" and rows_of(store, MINE)["datasets"] == 1
    note = data_views.delete_dataset(store, MINE, Viewer("ann"))
    assert note.kind == "success" and "1 judge run and 2 labels" in note.text
    assert rows_of(store, MINE)["datasets"] == 0


def test_label_example_is_independent_of_the_store_counts():
    """The fixture's sizes, computed from the generator alone: 6 documents x 3 systems = 18 judged items."""
    ds, truth = label_dataset(seed=0, dataset_id=MINE, n_docs=6)
    assert len(label_run(ds, truth).judgments) == 18


@pytest.mark.skipif(tuple(int(x) for x in __import__("streamlit").__version__.split(".")[:2]) < (1, 67),
                    reason="found at the dependency floors: streamlit 1.56's AppTest does not hand this test's "
                           "widget input to the page (passes on 1.67; the page's code path is the same)")
def test_the_data_page_deletes_an_upload_once_its_id_is_typed(first_start):
    """AppTest: the button stays disabled until the id is typed; then the upload is gone from the store and the
    sidebar, which opens the default dataset, and the page says what was deleted."""
    pytest.importorskip("streamlit")
    from tests.test_app_pages import assert_clean, new_app

    store = Store(first_start)
    save_label_example(store, dataset_id=MINE, n_docs=6)
    at = new_app(dataset=MINE)
    at.run()
    at.switch_page("pages/data.py").run()
    assert_clean(at)
    assert "Delete this dataset" in [e.label for e in at.expander]
    assert at.button(key="delete_dataset").disabled
    at.text_input(key="delete_confirm").input(MINE).run()
    assert not at.button(key="delete_dataset").disabled
    at.button(key="delete_dataset").click().run()
    assert_clean(at)
    assert any("1 judge run and 0 labels" in s.value.replace("\\", "") for s in at.success)
    assert not store.has_dataset(MINE)
    assert at.sidebar.selectbox(key="dataset").value == "summeval"
    assert "Synthetic binary labels" not in at.sidebar.selectbox(key="dataset").options


def test_an_upload_deleted_from_the_command_line_leaves_an_open_app_at_once(first_start):
    """The dataset list is keyed by the store's datasets version, not kept 30 s: a session that had the upload
    open falls back to the default dataset on its next rerun instead of offering one that is gone."""
    pytest.importorskip("streamlit")
    from evalcore.cli import main
    from tests.test_app_pages import assert_clean, new_app

    store = Store(first_start)
    save_label_example(store, dataset_id=MINE, n_docs=6)
    at = new_app(dataset=MINE)
    at.run()
    assert at.sidebar.selectbox(key="dataset").value == MINE
    assert "Synthetic binary labels" in at.sidebar.selectbox(key="dataset").options  # shown by its name
    assert main(["delete-dataset", MINE, "--yes"]) == 0  # the operator, in a terminal (EVALCORE_DB: this store)
    at.run()
    assert_clean(at)
    assert "Synthetic binary labels" not in at.sidebar.selectbox(key="dataset").options
    assert at.sidebar.selectbox(key="dataset").value == "summeval"
