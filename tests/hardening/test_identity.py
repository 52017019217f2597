"""Identity on a shared server (issue 21, items 6, 8 and 13): who is signed in (a trusted proxy's header, or OIDC
claims), what each user sees (their own rows, the lab's shared ones, rows written without sign-in), who a label is
saved under and whose label an Undo removes, and which criteria a new session starts from.

The pages under AppTest are in tests/hardening/test_identity_pages.py; two users in a real browser, signed in through
the proxy header, in tests/browser/test_identity_browser.py."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore import labels
from evalcore.identity import (IdentityError, User, Viewer, header_name, user_from_claims, user_from_headers,
                               valid_name)
from evalcore.judge import runner, spec
from evalcore.judge.spec import EngineOptions, ScoringSpec
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.types import Criteria

from _judging import CAPS, CRITERIA, OneShot, dataset, endpoint

ALICE, BOB, VISITOR = Viewer("alice"), Viewer("bob"), Viewer(None)


pytest_plugins = ["tests.store_backends"]  # the store fixture on SQLite and on PostgreSQL


@pytest.fixture
def store(store_at) -> Store:
    return Store(store_at("lab.db"))


# ----------------------------------------------------------------------------------------------- who is signed in
@pytest.mark.parametrize("env,expected", [
    ({}, None),  # sign-in by header off: no header is ever read
    ({"EVALCORE_USER_HEADER": ""}, None),
    ({"EVALCORE_USER_HEADER": " X-Forwarded-User "}, "X-Forwarded-User"),
    ({"EVALCORE_USER_HEADER": "Remote-User"}, "Remote-User"),
])
def test_header_name_from_the_operators_setting(env, expected):
    assert header_name(env) == expected


@pytest.mark.parametrize("bad", ["X Forwarded User", "X-User:", "X-User\r\nEvil: 1", "(user)"])
def test_a_header_name_that_is_no_http_token_is_refused(bad):
    with pytest.raises(IdentityError, match="EVALCORE_USER_HEADER"):
        header_name({"EVALCORE_USER_HEADER": bad})


@pytest.mark.parametrize("headers,header,expected", [
    ({"X-Forwarded-User": "alice"}, "X-Forwarded-User", User("alice", "header")),
    ({"x-forwarded-user": "alice"}, "X-Forwarded-User", User("alice", "header")),  # HTTP names ignore case
    ({"X-Forwarded-User": "  bob@lab.example.org "}, "X-Forwarded-User", User("bob@lab.example.org", "header")),
    ({"X-Forwarded-User": "alice"}, None, None),  # not configured: the header a visitor sends is ignored
    ({"X-Remote-User": "alice"}, "X-Forwarded-User", None),  # another header than the operator named
    ({"X-Forwarded-User": ""}, "X-Forwarded-User", None),
    ({}, "X-Forwarded-User", None),
])
def test_user_from_the_trusted_header(headers, header, expected):
    assert user_from_headers(headers, header) == expected


@pytest.mark.parametrize("value", ["alice bob", "<img src=x>", "![x](http://evil/)", "-alice", "a" * 129,
                                   "alice\nbob", "al/ice"])
def test_an_unusable_user_name_is_refused_never_cleaned(value):
    with pytest.raises(IdentityError, match="not usable"):
        user_from_headers({"X-Forwarded-User": value}, "X-Forwarded-User")
    with pytest.raises(IdentityError):
        valid_name(value)


@pytest.mark.parametrize("claims,expected", [
    ({"is_logged_in": True, "email": "alice@lab.org", "sub": "123"}, User("alice@lab.org", "oidc")),
    ({"is_logged_in": True, "preferred_username": "bob", "sub": "123"}, User("bob", "oidc")),
    ({"is_logged_in": True, "sub": "auth0|123"}, User("auth0|123", "oidc")),
    ({"is_logged_in": False}, None),
    ({"email": "alice@lab.org"}, None),  # claims without is_logged_in: not a sign-in
    ({}, None),
])
def test_user_from_oidc_claims(claims, expected):
    assert user_from_claims(claims) == expected


@pytest.mark.parametrize("viewer,owner,shared,sees", [
    (BOB, "alice", False, False), (BOB, "alice", True, True), (BOB, "bob", False, True),
    (BOB, None, False, True), (BOB, "", False, True),  # written without sign-in: everyone's
    (VISITOR, "alice", False, False), (VISITOR, "alice", True, True), (VISITOR, None, False, True),
])
def test_the_visibility_rule(viewer, owner, shared, sees):
    assert viewer.sees(owner, shared) is sees


# ------------------------------------------------------------------------------------------------------ scoping
def test_bob_cannot_see_alices_private_upload_until_she_shares_it(store):
    store.save_dataset(dataset(dataset_id="alice-data"), owner="alice")
    store.save_dataset(dataset(dataset_id="laptop-data"))  # written without sign-in
    ids = lambda v: [d["id"] for d in store.list_datasets(viewer=v)]  # noqa: E731
    assert ids(BOB) == ["laptop-data"]
    assert ids(VISITOR) == ["laptop-data"]
    assert ids(ALICE) == ["alice-data", "laptop-data"]
    assert ids(None) == ["alice-data", "laptop-data"]  # unscoped: the CLI, a laptop
    assert store.share("datasets", ("alice-data",), "bob") is False  # only the owner shares
    assert ids(BOB) == ["laptop-data"]
    assert store.share("datasets", ("alice-data",), "alice") is True
    assert ids(BOB) == ["alice-data", "laptop-data"] and ids(VISITOR) == ["alice-data", "laptop-data"]
    entry = store.list_datasets(viewer=BOB)[0]
    assert (entry["owner"], entry["shared"]) == ("alice", True)
    assert store.share("datasets", ("alice-data",), "alice", False) is True
    assert ids(BOB) == ["laptop-data"]


def test_an_upload_never_replaces_another_users_dataset(store):
    store.save_dataset(dataset(dataset_id="same-id"), owner="alice")
    with pytest.raises(ValueError, match="uploaded by another user"):
        store.save_dataset(dataset(3, dataset_id="same-id"), overwrite=True, owner="bob")
    assert len(store.load_dataset("same-id").items) == 4 and store.owner_of("datasets", ("same-id",)) == \
        ("alice", False)
    store.share("datasets", ("same-id",), "alice")
    store.save_dataset(dataset(2, dataset_id="same-id"), overwrite=True, owner="alice")  # her own: replaced, shared
    assert len(store.load_dataset("same-id").items) == 2
    assert store.owner_of("datasets", ("same-id",)) == ("alice", True)


def test_runs_are_scoped_and_shared_by_their_owner(store):
    from evalcore import runs as runs_mod

    store.create_run(run_id="r-alice", dataset_id="summeval", method="geval", model="m", owner="alice")
    store.create_run(run_id="r-bob", dataset_id="summeval", method="geval", model="m", owner="bob")
    store.create_run(run_id="r-old", dataset_id="summeval", method="geval", model="m")
    local = lambda v: [r.run_id for r in runs_mod.list_runs("summeval", store, viewer=v)  # noqa: E731
                       if r.origin == "local"]
    assert sorted(local(BOB)) == ["r-bob", "r-old"]
    assert sorted(local(ALICE)) == ["r-alice", "r-old"]
    assert sorted(local(VISITOR)) == ["r-old"]
    published = [r for r in runs_mod.list_runs("summeval", store, viewer=VISITOR) if r.origin != "local"]
    assert len(published) == len([r for r in runs_mod.list_runs("summeval", store) if r.origin != "local"]) > 0
    store.share("runs", ("r-alice",), "alice")
    assert sorted(local(BOB)) == ["r-alice", "r-bob", "r-old"]
    run = next(r for r in store.list_runs("summeval", viewer=BOB) if r.run_id == "r-alice")
    assert (run.config["owner"], run.config["shared"]) == ("alice", True)
    with pytest.raises(ValueError, match="belongs to another user"):  # bob cannot resume (rewrite) alice's run
        store.create_run(run_id="r-alice", dataset_id="summeval", method="geval", model="m2", owner="bob")
    assert store.owner_of("runs", ("r-alice",)) == ("alice", True) and store.run_row("r-alice")["model"] == "m"
    store.create_run(run_id="r-alice", dataset_id="summeval", method="geval", model="m2", owner="alice")  # her resume
    assert store.owner_of("runs", ("r-alice",)) == ("alice", True) and store.run_row("r-alice")["model"] == "m2"


def test_a_scoring_run_records_who_started_it(store, monkeypatch):
    monkeypatch.setenv("EVALCORE_HARDENING_KEY", "k")
    ds = dataset(2)
    with serve() as srv:
        run = runner.score_dataset(ScoringSpec(ds, OneShot(), ["coherence"], CRITERIA, owner="alice"),
                                   EngineOptions(endpoint(srv), capabilities=CAPS, concurrency=1), store=store)
    assert store.owner_of("runs", (run.run_id,)) == ("alice", False)
    assert [r.run_id for r in store.list_runs(ds.id, viewer=BOB)] == []
    assert [r.run_id for r in store.list_runs(ds.id, viewer=ALICE)] == [run.run_id]


def test_an_imported_upload_and_its_runs_belong_to_the_uploader(store):
    from evalcore.importers import ImportResult, save_import
    from evalcore.model import Run

    ds = dataset(dataset_id="up-1")
    judged = pd.DataFrame({"item_id": ds.items["item_id"], "dimension": "coherence", "raw": "3", "value": 3.0,
                           "status": "ok"})
    run = Run(run_id="up-1/scores-x", dataset_id="up-1", method="imported", model="x", label="x",
              judgments=judged)
    save_import(ImportResult(ds, [run], []), store, owner="alice")
    assert store.owner_of("datasets", ("up-1",)) == ("alice", False)
    assert store.owner_of("runs", ("up-1/scores-x",)) == ("alice", False)
    assert store.list_datasets(viewer=BOB) == [] and store.list_runs("up-1", viewer=BOB) == []


# -------------------------------------------------------------------------------------------------------- labels
def test_a_signed_in_user_labels_in_their_own_name_only(store):
    with pytest.raises(ValueError, match="signed in as 'bob'"):
        store.save_label("summeval", "i1", "coherence", "alice", 3.0, owner="bob")
    assert len(store.label_rows("summeval")) == 0
    store.save_label("summeval", "i1", "coherence", "bob", 3.0, owner="bob")
    rows = store.label_rows("summeval")
    assert rows["annotator"].tolist() == ["bob"]


def test_bobs_undo_never_deletes_alices_labels(store):
    for i in range(3):
        store.save_label("summeval", f"a{i}", "coherence", "alice", 4.0, owner="alice")
    store.save_label("summeval", "old", "coherence", "bob", 2.0)  # a 'bob' typed on a laptop before sign-in
    store.save_label("summeval", "b0", "coherence", "bob", 1.0, owner="bob")
    with pytest.raises(ValueError, match="signed in as 'bob'"):
        store.undo_label("summeval", "alice", owner="bob")
    undone = store.undo_label("summeval", "bob", owner="bob")
    assert undone["item_id"] == "b0"
    assert store.undo_label("summeval", "bob", owner="bob") is None  # the unsigned 'bob' row is not his to undo
    rows = store.label_rows("summeval")
    assert sorted(rows["item_id"]) == ["a0", "a1", "a2", "old"]


def test_label_sets_are_private_until_shared(store):
    store.save_label("summeval", "i1", "coherence", "alice", 4.0, owner="alice")
    store.save_label("summeval", "i1", "coherence", "bob", 2.0, owner="bob")
    store.save_label("summeval", "i1", "coherence", "carol", 3.0)  # without sign-in
    seen = lambda v: sorted(store.label_rows("summeval", viewer=v)["annotator"])  # noqa: E731
    assert seen(BOB) == ["bob", "carol"] and seen(ALICE) == ["alice", "carol"] and seen(VISITOR) == ["carol"]
    assert seen(None) == ["alice", "bob", "carol"]
    assert store.labelled_datasets(viewer=VISITOR) == ["summeval"]
    store.share_labels("summeval", "alice")
    store.save_label("summeval", "i2", "coherence", "alice", 5.0, owner="alice")  # after sharing: shared too
    assert seen(BOB) == ["alice", "alice", "bob", "carol"] and store.labels_shared("summeval", "alice")
    store.share_labels("summeval", "alice", False)
    assert seen(BOB) == ["bob", "carol"]


def test_a_labels_file_naming_another_annotator_imports_nothing(store):
    from evalcore.datasets import load_dataset

    ds = load_dataset("summeval")
    item = str(ds.items["item_id"].iloc[0])
    frame = pd.DataFrame({"item_id": [item, item], "dimension": "coherence", "annotator": ["bob", "alice"],
                          "value": [3, 4]})
    with pytest.raises(labels.LabelImportError, match=r"row 2, column annotator: 'alice' is not you"):
        labels.import_labels(store, ds, frame, file="l.csv", owner="bob")
    assert len(store.label_rows("summeval")) == 0
    assert labels.import_labels(store, ds, frame.iloc[:1], file="l.csv", owner="bob") == 1
    assert store.label_rows("summeval", viewer=ALICE).empty


# ------------------------------------------------------------------------------------------------------ criteria
def _edited(base: Criteria, definition: str) -> Criteria:
    return Criteria(base.dimension, base.task_introduction, definition, base.scale_min, base.scale_max, base.steps)


def test_a_version_someone_saved_is_nobody_elses_default(store):
    from evalcore.datasets import load_dataset

    ds = load_dataset("summeval")
    paper = spec.default_criteria(ds, "coherence", "geval", None)
    h = store.save_criteria(ds.id, _edited(paper, "attacker's definition"), owner="mallory",
                            steps_by="evil-model")
    store.save_criteria(ds.id, _edited(paper, "a laptop edit"))  # without sign-in, from another session
    assert spec.default_criteria(ds, "coherence", "geval", store) == paper  # a new session without sign-in
    assert spec.default_criteria(ds, "coherence", "geval", store, owner="bob") == paper
    mine = _edited(paper, "bob's own")
    store.save_criteria(ds.id, mine, owner="bob")
    assert spec.default_criteria(ds, "coherence", "geval", store, owner="bob") == mine  # his own choice
    assert spec.default_criteria(ds, "coherence", "geval", store, owner="alice") == paper
    assert spec.default_criteria(ds, "coherence", "geval", store, version=h[:8]).definition == \
        "attacker's definition"  # chosen explicitly
    listed = store.list_criteria_versions(ds.id, "coherence", viewer=ALICE)
    assert [v["note"] or v["criteria"].definition for v in listed] == ["a laptop edit"]  # mallory's is private
    store.share("criteria", (ds.id, "coherence", h), "mallory")
    listed = store.list_criteria_versions(ds.id, "coherence", viewer=ALICE)
    assert [(v["owner"], v["steps_by"]) for v in listed] == [("", ""), ("mallory", "evil-model")]
    assert spec.default_criteria(ds, "coherence", "geval", store, owner="alice") == paper  # shared, still not hers


def test_the_versions_table_says_who_saved_each_and_who_wrote_its_steps():
    from evalcore.views.criteria import versions_table

    c = Criteria("coherence", "intro", "def", 1, 5, "1. Read.")
    table = versions_table([
        {"hash": "h1", "created_at": "2026-11-24T20:00:00", "note": "", "owner": "alice", "shared": False,
         "steps_by": "gpt-4o-mini", "criteria": c},
        {"hash": "h2", "created_at": "2026-11-23T20:00:00", "note": "n", "owner": "", "shared": False,
         "steps_by": "", "criteria": Criteria("coherence", "intro", "def", 1, 5, "")},
    ])
    assert table.to_dict("records") == [
        {"version": "h1", "saved": "2026-11-24T20:00:00", "saved by": "alice", "shared": "no",
         "steps": "generated by gpt-4o-mini (8 chars)", "note": ""},
        {"version": "h2", "saved": "2026-11-23T20:00:00", "saved by": "(no sign-in)", "shared": "yes",
         "steps": "none", "note": "n"}]


def test_an_imported_run_never_replaces_another_users_run(store):
    from evalcore.model import Run

    def run(value: float) -> Run:
        judged = pd.DataFrame({"item_id": ["i1", "i2"], "dimension": "coherence", "raw": str(value),
                               "value": value, "status": "ok"})
        return Run(run_id="summeval/scores-mine", dataset_id="summeval", method="imported", model="x", label="mine",
                   judgments=judged)

    store.save_imported_run(run(4.0), owner="alice")
    with pytest.raises(ValueError, match="belongs to another user"):
        store.save_imported_run(run(1.0), owner="bob")
    with pytest.raises(ValueError, match="belongs to another user"):
        store.save_imported_run(run(1.0))  # nor by a visitor without sign-in
    assert store.load_run("summeval/scores-mine").judgments["value"].tolist() == [4.0, 4.0]
    store.share("runs", ("summeval/scores-mine",), "alice")
    store.save_imported_run(run(5.0), owner="alice")  # her own again: replaced, still hers and shared
    assert store.load_run("summeval/scores-mine").judgments["value"].tolist() == [5.0, 5.0]
    assert store.owner_of("runs", ("summeval/scores-mine",)) == ("alice", True)


OWNERS = [None, "", "alice", "bob"]


@pytest.mark.parametrize("viewer", [ALICE, BOB, VISITOR, Viewer("carol")])
def test_the_stores_sql_and_the_rule_agree_on_every_owner_and_sharing(tmp_path, viewer):
    """Every (owner, shared) combination as a run, a dataset and a criteria version: what each listing returns is
    exactly what Viewer.sees keeps (the SQL in evalcore.store.owners against the rule in evalcore.identity)."""
    store = Store(tmp_path / "rule.db")
    combos = [(o, sh) for o in OWNERS for sh in (False, True)]
    base = Criteria("coherence", "intro", "def", 1, 5, "")
    for i, (owner, shared) in enumerate(combos):
        store.create_run(run_id=f"r{i}", dataset_id="summeval", method="geval", model="m", owner=owner)
        store.save_dataset(dataset(dataset_id=f"d{i}"), owner=owner)
        store.save_criteria("summeval", _edited(base, f"def {i}"), owner=owner)
        if shared and owner:
            h = _edited(base, f"def {i}").version_hash()
            assert store.share("runs", (f"r{i}",), owner) and store.share("datasets", (f"d{i}",), owner)
            assert store.share("criteria", ("summeval", "coherence", h), owner)
    expected = {i for i, (o, sh) in enumerate(combos) if viewer.sees(o, sh and bool(o))}
    assert {int(r.run_id[1:]) for r in store.list_runs("summeval", viewer=viewer)} == expected
    assert {int(d["id"][1:]) for d in store.list_datasets(viewer=viewer)} == expected
    assert {int(v["criteria"].definition.split()[1])
            for v in store.list_criteria_versions("summeval", "coherence", viewer=viewer)} == expected
    assert len(expected) == {ALICE: 7, BOB: 7, VISITOR: 6, Viewer("carol"): 6}[viewer]


def test_a_labels_view_is_listed_once_its_labels_are_the_labs(store):
    """The app merges the labels every session may see into its datasets (pages/_loaders.load_dataset): bob's
    private labels make no ``summeval@labels`` view in the list until he shares them."""
    from evalcore import runs as runs_mod
    from evalcore.datasets import load_dataset

    items = load_dataset("summeval").items["item_id"].astype(str).tolist()[:2]
    for item in items:
        store.save_label("summeval", item, "coherence", "bob", 3.0, owner="bob")
    ids = lambda: [d["id"] for d in runs_mod.list_all_datasets(store, viewer=BOB,  # noqa: E731
                                                               labels_viewer=VISITOR)]
    assert "summeval@labels" not in ids()
    assert "summeval@labels" in [d["id"] for d in runs_mod.list_all_datasets(store, viewer=BOB)]  # his own view
    store.share_labels("summeval", "bob")
    assert "summeval@labels" in ids()
    assert len(runs_mod.get_dataset("summeval@labels", store, viewer=VISITOR).items) == 2
