"""The Label, Criteria and Data pages' library side, without Streamlit: labels written and read through
``evalcore.labels`` with a store, who may share what (``evalcore.views.sharing``), and the view blocks each page lays
out (``evalcore.views.label``, ``criteria``, ``data``), checked by value."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from evalcore import labels, runs
from evalcore.model import JUDGMENT_COLUMNS, Run
from evalcore.store import Store
from evalcore.types import Criteria
from evalcore.views import criteria as criteria_views
from evalcore.views import data as data_views
from evalcore.views import label as label_views
from evalcore.views import sharing
from evalcore.views.format import esc
from evalcore.views.blocks import Figure, Metrics, Note, Table, notes, tables


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "pages.db")
    yield s
    s.close()


@pytest.fixture(scope="module")
def summeval():
    return runs.get_dataset("summeval", with_labels=False)


# -------------------------------------------------------------------------------------------------------- labels
def test_labels_saved_undone_and_read_back_through_the_library(store, summeval):
    order = labels.item_order(summeval, "random")
    assert labels.version_of(store, "summeval") == (0, 0)
    first = labels.save(store, "summeval", order[0], "coherence", "ann", 4.0, strategy="random", shown_at="t0")
    assert labels.view_may_change(store, "summeval")  # the first label makes the labels view appear
    labels.save(store, "summeval@labels", order[1], "coherence", "ann", None)  # the view is labelled as its dataset
    assert not labels.view_may_change(store, "summeval")
    rows = labels.rows_of(store, "summeval")
    assert rows["item_id"].tolist() == [order[0], order[1]] and rows["skipped"].astype(bool).tolist() == [False, True]
    assert labels.version_of(store, "summeval") == (2, first + 1)
    row = labels.undo(store, "summeval", "ann", dimensions=["coherence"])
    assert row["item_id"] == order[1] and row["skipped"]
    assert label_views.undone_message(row) == "Undone: coherence skip on your item #2."
    assert label_views.undone_message(None) == "Nothing to undo."
    assert label_views.saved_message(summeval, "coherence", 4.0, first) == f"Saved: coherence rated 4 (label #{first})."
    assert label_views.saved_message(summeval, "coherence", None, 9) == "Saved: coherence skipped (label #9)."


def test_shown_at_is_utc_to_the_millisecond():
    from datetime import datetime, timedelta

    shown = labels.shown_now()
    assert datetime.fromisoformat(shown).utcoffset() == timedelta(0) and len(shown.split(".")[1]) == len("123+00:00")


def test_the_order_and_its_recorded_strategy(summeval):
    assert labels.order_strategy("random") == "random"
    assert labels.order_strategy("uncertain", ("disagree", "a", "b")) == "uncertain:disagree:a:b"
    order, n = labels.order_for(summeval, "stratified")
    assert order == labels.stratified_order(summeval) and n == 0
    run = lambda v: Run(run_id=f"r{v}", dataset_id="summeval", method="rts", model="m", label=f"r{v}",  # noqa: E731
                        judgments=pd.DataFrame({"item_id": summeval.items["item_id"].astype(str)[:3],
                                                "dimension": "coherence", "raw": "", "value": [1.0, 2.0, v],
                                                "status": "ok", "reason": "", "estimator": ""}))
    order, n = labels.order_for(summeval, "uncertain", ("disagree", "r1", "r5"), (run(1.0), run(5.0)), "coherence")
    assert n == 3 and order[0] == str(summeval.items["item_id"].iloc[2])  # the one they disagree on, first
    assert labels.order_for(summeval, "uncertain", ("disagree", "a", "b"), (run(1.0), run(1.0)), "fluency") == ([], 0)
    assert label_views.order_note([], 0, "uncertain", "fluency").kind == "warning"
    assert label_views.order_note(order, 3, "uncertain", "coherence").text.startswith("3 items ordered by")
    assert label_views.order_note(order, 0, "random", "coherence") is None


def test_the_card_says_what_to_rate_and_its_keys(summeval):
    item = str(summeval.items["item_id"].iloc[0])
    card = label_views.card(summeval, item, "coherence")
    assert card.output == summeval.texts()["output"].iloc[0]
    assert card.points == [1.0, 2.0, 3.0, 4.0, 5.0] and card.keys == ["1", "2", "3", "4", "5"]
    assert card.buttons == ["rate 1", "rate 2", "rate 3", "rate 4", "rate 5"]
    assert card.heading == "**coherence** · scale 1 to 5" and card.definition.startswith("The collective quality")
    assert card.description is None  # no criteria: the description is the definition, said once
    crit = Criteria(dimension="coherence", task_introduction="", definition="Is it well organised?")
    card = label_views.card(summeval, item, "coherence", crit)
    assert card.definition == "Is it well organised?" and card.description.text.startswith("The collective quality")
    assert card.keys_note.text == esc("Keys: 1, 2, 3, 4, 5 rate · S skip · U undo (your last label or skip).")


def test_alpha_and_plan_blocks(summeval):
    assert notes(label_views.alpha_blocks("summeval", pd.DataFrame(), pd.DataFrame(), ["coherence"], 20)) == [
        "Alpha needs labels from at least two annotators on the same items."]
    table = pd.DataFrame({"dimension": ["coherence", "fluency"], "alpha": [0.5, math.nan]})
    blocks = label_views.alpha_blocks("summeval", table, pd.DataFrame(), ["coherence"], 20)
    assert [t.name for t in tables(blocks)] == ["summeval labels alpha"]
    assert notes(blocks, "caption")[0].startswith("Blank alpha on fluency\\: no item has labels")
    assert "20 resamples" in notes(blocks, "caption")[1] and not any(isinstance(b, Figure) for b in blocks)
    run = Run(run_id="r", dataset_id="summeval", method="rts", model="m", label="r",
              judgments=pd.DataFrame(columns=JUDGMENT_COLUMNS))
    plan = labels.plan(summeval, run, None, "coherence", half_width=0.1, reference="labels")
    metrics = next(b for b in label_views.plan_blocks(summeval, run, None, "coherence", plan, 0.1)
                   if isinstance(b, Metrics))
    assert [(m.label, m.value) for m in metrics.items] == [
        ("Labelled items with a judge score (n now)", "0"), ("spearman with the labels", "n/a"),
        ("CI half-width now", "n/a"), ("n needed for ±0.1", str(plan["n_needed"]))]
    joined = label_views.how_labels_join(summeval)
    assert joined.startswith(esc("How the labels are used: they join")) and esc("'summeval@labels'") in joined


# ------------------------------------------------------------------------------------------------------- sharing
def test_only_the_uploader_is_offered_the_dataset_and_its_imported_runs(store):
    store.create_run(run_id="up/scores-a", dataset_id="up", method="imported", model="x", owner="alice")
    store.create_run(run_id="up/scores-b", dataset_id="up", method="imported", model="x", owner="bob")
    store.create_run(run_id="up/geval", dataset_id="up", method="geval", model="x", owner="alice")
    index = [Run(run_id=r, dataset_id="up", method=m, model="x", label=r.split("/")[1])
             for r, m in (("up/scores-a", "imported"), ("up/scores-b", "imported"), ("up/geval", "geval"))]
    entry = {"id": "up", "owner": "alice", "shared": False}
    assert sharing.dataset_owner([{"id": "summeval"}, entry], "up") is entry
    assert sharing.dataset_owner([{"id": "summeval"}], "summeval") is None  # bundled: nobody's
    assert sharing.dataset_owner_line(entry) == "Uploaded by alice, private"
    assert sharing.dataset_offer(entry, "bob") is None and sharing.dataset_offer(entry, None) is None
    assert sharing.dataset_offer(entry, "alice") == sharing.ShareOffer("this dataset", "dataset", False, ("up",))
    offer = sharing.imported_runs_offer(store, index, "alice")  # hers and imported: not bob's, not a scored run
    assert offer.keys == ("up/scores-a",) and offer.key == "dataset_runs" and not offer.shared
    assert offer.what == "its judge\\-score run scores\\-a (imported with it)"
    assert sharing.imported_runs_offer(store, index, "carol") is None
    assert sharing.share_runs(store, ["up/scores-a", "up/scores-b"], "alice", True) == 1  # bob's left alone
    assert store.owner_of("runs", ("up/scores-b",)) == ("bob", False)
    assert sharing.imported_runs_offer(store, index, "alice").shared


def test_criteria_and_labels_offers(store):
    v = {"hash": "0123456789ab", "owner": "alice", "shared": False}
    assert sharing.criteria_offer(v, "alice") == sharing.ShareOffer("version 01234567", "criteria", False,
                                                                    ("0123456789ab",))
    assert sharing.criteria_offer(v, "bob") is None and sharing.criteria_offer({**v, "owner": None}, None) is None
    assert sharing.labels_offer(store, "summeval", None) is None
    assert not sharing.labels_offer(store, "summeval", "alice").shared
    sharing.share_labels(store, "summeval", "alice", True)
    assert sharing.labels_offer(store, "summeval", "alice").shared


# ------------------------------------------------------------------------------------------------------ criteria
def test_criteria_versions_saved_listed_diffed_and_shared(store):
    c = Criteria(dimension="fluency", task_introduction="Rate it.", definition="Reads well.", steps="1. Read.")
    saved = criteria_views.save_version(store, "summeval", c, note="first", owner="alice", steps_by="judge-x")
    assert saved.kind == "success" and saved.text.startswith("Saved version ")
    c2 = Criteria(dimension="fluency", task_introduction="Rate it.", definition="Reads well.", steps="")
    criteria_views.save_version(store, "summeval", c2, owner="alice", steps_by="judge-x")  # no steps: nobody's
    view = criteria_views.versions_view(store, "summeval", "fluency", me="alice")
    assert len(view.versions) == 2 and view.diff_defaults() == (view.hashes[1], view.hashes[0])
    table = tables(view.blocks)[0].frame
    assert table["steps"].tolist() == ["none", "generated by judge-x (8 chars)"]
    assert notes(view.blocks)[0].endswith("or the newest version you saved.")
    assert "-1. Read." in criteria_views.version_diff(store, "summeval", "fluency", *view.diff_defaults())
    assert criteria_views.version_diff(store, "summeval", "fluency", view.hashes[0], view.hashes[0]) == \
        "(no difference)"
    offer = sharing.criteria_offer(view.version(view.hashes[0]), "alice")
    assert sharing.share_criteria(store, "summeval", "fluency", offer.keys[0], "alice", True)
    assert criteria_views.versions_view(store, "summeval", "fluency").version(view.hashes[0])["shared"]
    assert notes(criteria_views.versions_view(store, "summeval", "coherence").blocks) == [
        "No saved version of these criteria yet: press **Save version**."]
    assert notes(criteria_views.versions_view(None, "summeval", "coherence").blocks, "caption")[0].startswith(
        "Saved versions are kept in the local store")


def test_criteria_page_checks_and_messages():
    assert criteria_views.scale_problem(Criteria("x", "", "", scale_min=5, scale_max=5)) == \
        "Scale min must be below scale max."
    assert criteria_views.scale_problem(Criteria("x", "", "")) is None
    assert criteria_views.preview_warning("4").text == esc("Look before using them: the judge answered '4', which "
                                                           "does not read as evaluation steps.")
    assert criteria_views.preview_warning("1. Read the text. 2. Rate its fluency.") is None
    err = criteria_views.generation_error(RuntimeError("401 for key sk-secret-123"), "sk-secret-123")
    assert "sk-secret-123" not in err and err.startswith("Could not generate steps")
    assert "geval: " in criteria_views.methods_help()


def test_steps_plan_counts_one_request_on_a_local_endpoint(store):
    from evalcore.judge.client import Endpoint

    c = Criteria(dimension="fluency", task_introduction="Rate it.", definition="Reads well.", steps="old steps")
    ep = Endpoint(provider="vllm", base_url="http://127.0.0.1:9/v1", model="m")
    plan = criteria_views.steps_plan("summeval", c, ep, store)
    assert plan.criteria.steps == "" and plan.calls == 1
    assert plan.sig[:4] == ("summeval", "fluency", "http://127.0.0.1:9/v1", "m")


# ---------------------------------------------------------------------------------------------------------- data
def test_data_page_blocks(summeval):
    note = data_views.orientation(summeval, 2, may_upload=False)
    assert note.text.startswith(f"Loaded\\: {esc(summeval.name)}, 1,600 rated outputs of 16 systems, with 2 judge "
                                "runs selected")
    assert "sign in, then upload" in note.text
    assert notes(data_views.upload_notes(may_upload=True))[0].startswith("CSV (comma or semicolon), TSV, JSON")
    assert len(data_views.upload_notes(may_upload=True)) == 2  # heading and how to read it: no sign-in note
    assert notes(data_views.upload_notes(may_upload=False))[-1].startswith("Sign in to upload")
    blocks = data_views.overview(summeval)
    metrics = {m.label: m.value for m in next(b for b in blocks if isinstance(b, Metrics)).items}
    assert metrics == {"Items": "1600", "Documents": "100", "Systems": "16", "Annotators": "8"}
    assert [t.key for t in tables(blocks)] == ["dimensions"] and tables(blocks)[0].static
    assert isinstance(data_views.ratings_blocks(summeval)[0], Figure)
    assert data_views.agreement_note(summeval) is None
    assert notes(data_views.agreement_blocks("summeval", pd.DataFrame())) == [
        "No dimension has ratings from two or more annotators."]
    alpha = pd.DataFrame({"dimension": ["coherence"], "group": ["expert"], "alpha": [0.4], "ci_low": [0.3],
                          "ci_high": [0.5], "level": ["interval"]})
    blocks = data_views.agreement_blocks("summeval", alpha)
    assert isinstance(blocks[0], Table) and blocks[0].name == "summeval krippendorff alpha"
    assert isinstance(blocks[-1], Note) and blocks[-1].kind == "caption"
