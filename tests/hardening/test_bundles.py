"""Run bundles never overwrite (issue 21, item 9): an imported run whose id exists gets a new id; a bundled dataset
is never replaced; a carried dataset must hold exactly the items the run says it was scored on."""

from __future__ import annotations

import json

import pytest

from evalcore import bundles
from evalcore.datasets import load_dataset
from evalcore.store import Store
from evalcore.types import Criteria


def _local_run(store: Store, run_id: str = "summeval/geval-x", label: str = "mine") -> None:
    h = store.save_criteria("summeval", Criteria("coherence", "Rate.", "def", 1, 5, "1. Read."))
    store.create_run(run_id=run_id, dataset_id="summeval", method="geval", model="m", label=label,
                     config={"criteria": {"coherence": {"hash": h}}})
    for i, item in enumerate(load_dataset("summeval").items["item_id"].tolist()[:3]):
        store.save_judgment(run_id, {"item_id": item, "dimension": "coherence", "criteria_hash": h, "raw": "Score: 2",
                                     "value": 2.0 + i, "status": "ok", "estimator": "weighted", "detail": {}})
    store.finish_run(run_id, status="done", stats={"ok": 3})


def _rewrite(path, tmp_path, name, edit):
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    edit(lines)
    out = tmp_path / name
    out.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return out


def test_an_imported_run_never_replaces_a_run_of_the_same_id(tmp_path):
    alice, bob = Store(tmp_path / "alice.db"), Store(tmp_path / "bob.db")
    _local_run(alice, label="alice's run")
    _local_run(bob, label="bob's run")
    path = tmp_path / "alice.jsonl"
    bundles.export_run("summeval/geval-x", path, store=alice)
    res = bundles.import_bundle(path, store=bob)
    assert res["run"] == "summeval/geval-x-import1" and res["renamed_from"] == "summeval/geval-x"
    assert "unchanged" in res["warnings"][0]
    assert bob.load_run("summeval/geval-x").label == "bob's run"  # bob's run is as it was
    assert bob.load_run("summeval/geval-x-import1").label == "alice's run"
    assert bundles.import_bundle(path, store=bob)["run"] == "summeval/geval-x-import2"  # again: another copy


def test_a_bundle_cannot_take_a_published_runs_id(tmp_path):
    """A forged bundle naming itself as a published run (not marked published) is imported beside it, never as it."""
    store = Store(tmp_path / "s.db")
    _local_run(store)
    path = tmp_path / "x.jsonl"
    bundles.export_run("summeval/geval-x", path, store=store)

    def forge(lines):
        lines[0]["run"]["run_id"] = "summeval/shen-gpt-4-0314-rts"
        lines[0]["run"]["label"] = "forged"

    res = bundles.import_bundle(_rewrite(path, tmp_path, "forged.jsonl", forge), store=Store(tmp_path / "o.db"))
    assert res["run"] == "summeval/shen-gpt-4-0314-rts-import1"


def test_a_bundle_cannot_replace_a_bundled_dataset_or_carry_unchecked_items(tmp_path):
    store = Store(tmp_path / "s.db")
    _local_run(store)
    path = tmp_path / "x.jsonl"
    bundles.export_run("summeval/geval-x", path, store=store, with_dataset=True)

    def rename(lines):  # the carried SummEval relabelled "fake summeval"
        next(x for x in lines if x.get("type") == "dataset")["name"] = "fake summeval"

    other = Store(tmp_path / "o.db")
    res = bundles.import_bundle(_rewrite(path, tmp_path, "fake.jsonl", rename), store=other)
    assert res["dataset_imported"] is False  # the shipped SummEval is used, not saved over
    with pytest.raises(KeyError):
        other.load_dataset("summeval")
    assert load_dataset("summeval").name != "fake summeval"

    def elsewhere(lines):  # the same run on a dataset this store lacks, one item's text changed after scoring
        lines[0]["run"]["dataset_id"] = lines[0]["dataset"]["id"] = "user-0123456789ab"
        for x in lines:
            if x.get("type") == "dataset":
                x["id"] = "user-0123456789ab"
        row = next(x for x in lines if x.get("type") == "dataset_row" and x["table"] == "items")
        row["row"]["output"] = "a text the judge never saw"

    with pytest.raises(bundles.BundleError, match="other items"):
        bundles.import_bundle(_rewrite(path, tmp_path, "swapped.jsonl", elsewhere), store=other)
    with pytest.raises(KeyError):
        other.load_dataset("user-0123456789ab")  # nothing half-imported: no dataset, no run
    assert not other.run_exists("summeval/geval-x-import1")
