"""Labels: the store's labels table (append-only, latest wins, undo, two writers), texts-only datasets, how labels
join a dataset, item orders, judge uncertainty, export/re-import, and the CLI's plan command."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from evalcore import labels, runs
from evalcore.store import Store
from evalcore.model import HUMAN_SCORE_COLUMNS, Dataset, Dimension, Run

pytest_plugins = ["tests.store_backends"]  # the store tests run on SQLite and PostgreSQL

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def store(store_at):
    s = Store(store_at("labels.db"))
    yield s
    s.close()


def texts_only(dataset_id: str = "mine", n: int = 6) -> Dataset:
    """A dataset uploaded without ratings: texts only (two systems, three documents)."""
    docs = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n // 2)], "source": [f"source {i}" for i in range(n // 2)],
                         "references": [[] for _ in range(n // 2)], "context": ["" for _ in range(n // 2)]})
    items = pd.DataFrame({"item_id": [f"i{k}" for k in range(n)], "doc_id": [f"d{k // 2}" for k in range(n)],
                          "system_id": ["A" if k % 2 == 0 else "B" for k in range(n)],
                          "output": [f"output {k}" for k in range(n)]})
    # human_scores as a column-less empty frame: what a careless caller passes; the store must cope
    return Dataset(id=dataset_id, name="Mine", task="summarization", dimensions=[Dimension("quality", 1, 5),
                                                                                Dimension("ok", 0, 1)],
                   documents=docs, items=items, human_scores=pd.DataFrame())


# ------------------------------------------------------------------------------------------------------- store


def test_texts_only_dataset_saves_and_loads(store):
    store.save_dataset(texts_only())
    ds = store.load_dataset("mine")
    assert list(ds.human_scores.columns) == HUMAN_SCORE_COLUMNS and ds.human_scores.empty
    assert ds.annotations.empty and "annotator" in ds.annotations.columns
    assert ds.human_table("quality").empty
    assert runs.get_dataset("mine", store).dimension_names == ["quality", "ok"]


def test_save_undo_latest_wins(store):
    a = store.save_label("ds", "x", "q", "ann", 3)
    store.save_label("ds", "y", "q", "ann", None, skipped=True)
    store.save_label("ds", "x", "q", "ann", 5)  # a relabel: a new row, the later wins
    rows = store.label_rows("ds")
    assert list(rows["position"]) == [1, 2, 3] and rows["label_id"].iloc[0] == a
    latest = labels.latest_labels(rows)
    assert latest[["item_id", "value"]].values.tolist() == [["x", 5.0]]  # the skip is not a label
    undone = store.undo_label("ds", "ann")
    assert undone["value"] == 5.0
    # undo brings the earlier label of the item back instead of erasing it
    assert labels.latest_labels(store.label_rows("ds"))["value"].tolist() == [3.0]
    assert store.undo_label("ds", "ann")["skipped"] == 1
    assert store.undo_label("ds", "ann")["value"] == 3.0
    assert store.undo_label("ds", "ann") is None
    with pytest.raises(ValueError, match="annotator"):
        store.save_label("ds", "x", "q", " ", 1)
    with pytest.raises(ValueError, match="value"):
        store.save_label("ds", "x", "q", "a", None)


def test_undo_is_per_annotator_and_dimension(store):
    store.save_label("ds", "x", "q", "ann", 1)
    store.save_label("ds", "x", "q", "bob", 2)
    store.save_label("ds", "x", "r", "ann", 4)
    assert store.undo_label("ds", "ann", dimensions=["q"])["value"] == 1.0
    assert set(store.label_rows("ds")["annotator"]) == {"ann", "bob"}
    assert store.labels_version("ds") == (2, 3)


def test_two_writers_at_once_lose_nothing(store_at):
    """Two tabs = two threads with their own connections (as Streamlit sessions), writing 100 labels each at once."""
    path = store_at("two.db")
    Store(path).close()
    errors = []

    def tab(name: str) -> None:
        s = Store(path)
        try:
            for k in range(100):
                s.save_label("ds", f"i{k}", "q", name, k % 5 + 1)
        except Exception as e:  # noqa: BLE001 - surfaced by the assert below
            errors.append(e)
        finally:
            s.close()

    threads = [threading.Thread(target=tab, args=(n,)) for n in ("ann", "ann", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = Store(path).label_rows("ds")
    assert len(rows) == 300  # every write kept, the same annotator's two tabs included
    ann = rows[rows["annotator"] == "ann"]
    assert sorted(ann["position"]) == list(range(1, 201))  # positions are handed out inside the write lock
    assert len(labels.latest_labels(rows)) == 200


# ---------------------------------------------------------------------------------------------- joining a dataset


def test_merge_into_texts_only_dataset(store):
    ds = texts_only()
    store.save_dataset(ds)
    for item, v in [("i0", 2), ("i1", 4), ("i2", 5)]:
        store.save_label("mine", item, "quality", "ann", v)
    store.save_label("mine", "i0", "quality", "bob", 3)
    store.save_label("mine", "i3", "quality", "bob", 1, strategy="uncertain:geval:r")
    merged = runs.get_dataset("mine", store)
    assert len(merged.annotations) == 5 and set(merged.annotations["group"]) == {labels.LABEL_GROUP}
    hs = merged.human_scores.set_index("item_id")["score"]
    # means of the random part only: i3 was chosen for judge uncertainty, so it has no human score
    assert hs.to_dict() == {"i0": 2.5, "i1": 4.0, "i2": 5.0}
    assert "mean of their labels" in merged.description
    assert merged.meta["labels"]["human_scores_from_labels"] == 3
    # no labels view for a dataset without gold scores: its own human scores already are the labels
    assert not any(d["id"] == "mine@labels" for d in runs.list_all_datasets(store))


def test_merge_keeps_gold_and_offers_view(store):
    gold = texts_only("gold")
    gold.human_scores = pd.DataFrame({"item_id": ["i0", "i1"], "dimension": ["quality", "quality"],
                                      "score": [1.0, 2.0]})
    store.save_dataset(gold)
    store.save_label("gold", "i0", "quality", "ann", 5)
    store.save_label("gold", "i4", "quality", "ann", 4)
    store.save_label("gold", "i4", "quality", "bob", 2)
    merged = runs.get_dataset("gold", store)
    hs = merged.human_scores.set_index("item_id")["score"].to_dict()
    assert hs == {"i0": 1.0, "i1": 2.0, "i4": 3.0}  # gold kept; the label mean only where no gold existed
    view = runs.get_dataset("gold@labels", store)
    assert view.human_scores.set_index("item_id")["score"].to_dict() == {"i0": 5.0, "i4": 3.0}
    assert sorted(view.items["item_id"]) == ["i0", "i4"] and view.annotators == ["ann", "bob"]
    listed = {d["id"]: d for d in runs.list_all_datasets(store)}
    assert listed["gold@labels"]["items"] == 2 and listed["gold@labels"]["origin"] == "labels"
    assert runs.get_dataset("gold", store, with_labels=False).annotations.empty


def test_view_of_bundled_dataset_has_bundled_runs(store):
    ds = runs.get_dataset("summeval", store)
    for item, v in zip(labels.random_order(ds)[:4], [1, 2, 3, 4]):
        store.save_label("summeval", item, "coherence", "ann", v)
    view = runs.get_dataset("summeval@labels", store)
    assert len(view.items) == 4 and view.dimension_names == ["coherence"]
    ids = {r.run_id for r in runs.list_runs("summeval@labels", store)}
    assert "summeval/shen-gpt-4-0314-rts" in ids
    merged = runs.get_dataset("summeval", store)
    assert (merged.annotations["group"] == labels.LABEL_GROUP).sum() == 4
    assert merged.human_scores.equals(runs.get_dataset("summeval", store, with_labels=False).human_scores)


# ---------------------------------------------------------------------------------------------------- orders


def test_orders_are_shared_permutations():
    ds = runs.get_dataset("summeval", with_labels=False)
    r1, r2 = labels.random_order(ds), labels.random_order(ds)
    assert r1 == r2 and sorted(r1) == sorted(ds.items["item_id"]) and r1 != list(ds.items["item_id"])
    strat = labels.stratified_order(ds)
    assert sorted(strat) == sorted(r1)
    system = ds.items.set_index("item_id")["system_id"]
    # SummEval has 16 systems of 100 items: every prefix of 16k items holds each system k times
    for k in (1, 3, 10):
        counts = system.loc[strat[: 16 * k]].value_counts()
        assert len(counts) == 16 and set(counts) == {k}


def test_next_task_item_major_and_uncertain_items_shown_again():
    rows = pd.DataFrame(columns=Store.LABEL_COLUMNS)
    order = ["a", "b", "c"]
    assert labels.next_task(order, rows, "ann", ["q", "r"], "random") == ("a", "q")
    rows = pd.DataFrame([
        {"label_id": 1, "dataset_id": "d", "item_id": "a", "dimension": "q", "annotator": "ann", "value": 3.0,
         "skipped": 0, "strategy": "uncertain:geval:x", "position": 1, "shown_at": None, "created_at": "t",
         "session": ""},
        {"label_id": 2, "dataset_id": "d", "item_id": "b", "dimension": "q", "annotator": "ann", "value": None,
         "skipped": 1, "strategy": "random", "position": 2, "shown_at": None, "created_at": "t", "session": ""},
    ])
    assert labels.next_task(order, rows, "ann", ["q"], "uncertain:geval:x") == ("c", "q")
    # the random order shows "a" again: labelled under "uncertain", it must be drawn at random to count
    assert labels.next_task(order, rows, "ann", ["q"], "random") == ("a", "q")
    assert labels.next_task(order, rows, "bob", ["q"], "random") == ("a", "q")
    assert labels.random_part(rows) == set()
    prog = labels.annotator_progress(rows, "ann", ["q"], 3)
    assert (prog.labelled, prog.skipped, prog.total, prog.random_part, prog.last_position) == (1, 1, 3, 0, 2)


def test_geval_width_by_hand():
    j = pd.DataFrame({"item_id": ["a", "b", "c"], "dimension": "q", "raw": "", "value": [3.0, 2.0, np.nan],
                      "status": ["ok", "ok", "failed"], "reason": "", "estimator": "",
                      "detail": [{"distribution": {"1": 0.5, "5": 0.5}}, {"distribution": {"2": 1.0}},
                                 {"distribution": {"1": 1.0}}]})
    run = Run(run_id="g", dataset_id="d", method="geval", model="m", judgments=j)
    w = labels.geval_width(run, "q")
    assert w.to_dict() == {"a": 2.0, "b": 0.0}  # sd of {1, 5} with equal mass is 2; the failed item is left out
    ds = texts_only()
    ds.items["item_id"] = ["a", "b", "c", "d", "e", "f"]
    order = labels.item_order(ds, "uncertain", w)
    assert order[:2] == ["a", "b"] and sorted(order) == sorted(ds.items["item_id"])
    with pytest.raises(ValueError, match="uncertainty"):
        labels.item_order(ds, "uncertain", pd.Series(dtype=float))


def test_run_disagreement_uses_ranks():
    def run(values):
        j = pd.DataFrame({"item_id": ["a", "b", "c", "d"], "dimension": "q", "raw": "", "value": values,
                          "status": "ok", "reason": "", "estimator": ""})
        return Run(run_id="r", dataset_id="d", method="rts", model="m", judgments=j)

    d = labels.run_disagreement(run([1.0, 2.0, 3.0, 4.0]), run([10.0, 20.0, 30.0, 40.0]), "q")
    assert d.max() == 0  # the same ranking on different scales: no disagreement
    d = labels.run_disagreement(run([1.0, 2.0, 3.0, 4.0]), run([40.0, 20.0, 30.0, 10.0]), "q")
    assert d.idxmax() in {"a", "d"} and math.isclose(d["a"], 0.75)


def test_scale_points_and_levels():
    assert labels.scale_points(Dimension("q", 1, 5)) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert labels.measurement_level(Dimension("q", 0, 1)) == "interval"  # the level follows the kind
    assert labels.measurement_level(Dimension("q", 0, 1, kind="binary")) == "nominal"
    assert labels.measurement_level(Dimension("q", 1, 5, kind="ordinal")) == "ordinal"
    named = Dimension("verdict", 0, 1, kind="binary", labels=("fail", "pass"))
    assert labels.scale_points(named) == [0.0, 1.0] and labels.point_names(named) == ["fail", "pass"]
    assert labels.point_names(Dimension("q", 1, 3)) == ["1", "2", "3"]
    assert labels.scale_points(Dimension("q", 0, 100)) is None
    assert labels.scale_points(Dimension("q", 0, 0.5)) is None


def test_alpha_from_labels_matches_krippendorff_package(store):
    import krippendorff

    a = [1, 2, 3, 4, 5, 3]
    b = [1, 2, 3, 5, 4, 3]
    for k, (x, y) in enumerate(zip(a, b)):
        store.save_label("ds", f"i{k}", "q", "ann", x)
        store.save_label("ds", f"i{k}", "q", "bob", y)
    res = labels.labels_alpha(store.label_rows("ds"), "q", n_resamples=0)
    expected = krippendorff.alpha(reliability_data=[a, b], level_of_measurement="interval")
    assert math.isclose(res.statistic, expected, rel_tol=1e-9) and res.n == 6
    assert labels.labels_alpha(store.label_rows("ds"), "other") is None


# ---------------------------------------------------------------------------------------------- export/import


def test_export_reimports_to_the_same_labels(store, tmp_path):
    ds = texts_only()
    store.save_dataset(ds)
    store.save_label("mine", "i0", "quality", "ann", 2)
    store.save_label("mine", "i1", "quality", "ann", 4)
    store.save_label("mine", "i1", "ok", "bob", 1, strategy="stratified")
    store.save_label("mine", "i2", "quality", "bob", None, skipped=True)
    before = labels.as_annotations(store.label_rows("mine"))
    path = tmp_path / "labels.csv"
    labels.export_frame(ds, store.label_rows("mine")).to_csv(path, index=False)
    frame = pd.read_csv(path)
    assert list(frame.columns) == labels.EXPORT_COLUMNS and len(frame) == 3
    assert frame.loc[0, "source"] == "source 0" and frame.loc[0, "output"] == "output 0"
    store.delete_labels("mine")
    assert labels.import_labels(store, ds, frame, file="labels.csv") == 3
    after = labels.as_annotations(store.label_rows("mine"))
    pd.testing.assert_frame_equal(before.sort_values(["item_id", "dimension"]).reset_index(drop=True),
                                  after.sort_values(["item_id", "dimension"]).reset_index(drop=True))
    assert set(store.label_rows("mine")["strategy"]) == {"random", "stratified"}
    # the merged dataset is the same as before the round trip
    hs = runs.get_dataset("mine", store).human_scores
    assert sorted(zip(hs["item_id"], hs["dimension"], hs["score"])) == [("i0", "quality", 2.0), ("i1", "ok", 1.0),
                                                                        ("i1", "quality", 4.0)]


def test_import_rejects_bad_rows_and_writes_nothing(store):
    ds = texts_only()
    bad = pd.DataFrame({"dataset_id": ["mine", "mine", "other"], "item_id": ["i0", "nope", "i1"],
                        "dimension": ["quality", "quality", "quality"], "annotator": ["a", "a", "a"],
                        "value": [9, 1, 1]})
    with pytest.raises(labels.LabelImportError) as e:
        labels.import_labels(store, ds, bad, file="x.csv")
    msg = str(e.value)
    assert "x.csv, row 1, column value" in msg and "row 2, column item_id" in msg and "row 3, column dataset_id" in msg
    assert store.label_rows("mine").empty
    with pytest.raises(labels.LabelImportError, match="missing column"):
        labels.import_labels(store, ds, bad.drop(columns=["annotator"]))


# -------------------------------------------------------------------------------------------------------- plan


def test_plan_uses_labels_then_gold(store):
    from scipy.stats import spearmanr

    ds = runs.get_dataset("summeval", store, with_labels=False)
    run = runs.load_run("summeval/shen-gpt-4-0314-rts")
    auto = labels.plan(ds, run, store.label_rows("summeval"), "coherence")
    assert auto["reference"] == "gold" and auto["n_now"] == 1200
    judged = run.scores("coherence").set_index("item_id")["judge"]
    ids = [i for i in labels.random_order(ds) if i in judged.index][:30]
    values = np.clip(np.round(judged.loc[ids].to_numpy() + np.arange(30) % 3 - 1), 1, 5)
    for i, v in zip(ids, values):
        store.save_label("summeval", i, "coherence", "ann", float(v))
    p = labels.plan(ds, run, store.label_rows("summeval"), "coherence")
    assert p["reference"] == "labels" and p["n_now"] == 30 and p["sample"] == "random part"
    assert math.isclose(p["statistic"], spearmanr(judged.loc[ids], values).statistic, rel_tol=1e-9)
    assert p["ci_low"] < p["statistic"] < p["ci_high"] and p["n_needed"] > 30


def test_cli_plan_json(tmp_path):
    db = tmp_path / "cli.db"
    s = Store(db)
    ds = runs.get_dataset("summeval", s, with_labels=False)
    run = runs.load_run("summeval/shen-gpt-4-0314-rts")
    judged = run.scores("coherence").set_index("item_id")["judge"]
    ids = [i for i in labels.random_order(ds) if i in judged.index][:40]
    for k, i in enumerate(ids):
        s.save_label("summeval", i, "coherence", "ann", float(np.clip(judged[i] + (k % 3 - 1), 1, 5)))
    s.close()
    env = {**os.environ, "EVALCORE_DB": str(db), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "evalcore", "plan", "--dataset", "summeval", "--run",
                          "summeval/shen-gpt-4-0314-rts", "--dimension", "coherence", "--coefficient", "kendall",
                          "--half-width", "0.05", "--json"], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert {"n_now", "statistic", "half_width_now", "n_needed", "method"} <= set(doc)
    assert doc["n_now"] == 40 and doc["reference"] == "labels" and "Fieller" in doc["method"]
    from evalcore.meta.planning import half_width

    assert math.isclose(doc["half_width_now"], float(half_width(doc["statistic"], 40, "kendall")), rel_tol=1e-9)
    from evalcore import cli

    with pytest.MonkeyPatch.context() as mp:  # the same command in this process: a clear one-line error
        mp.setenv("EVALCORE_DB", str(db))
        assert cli.main(["plan", "--dataset", "summeval", "--run", "summeval/shen-gpt-4-0314-rts", "--dimension",
                         "nope", "--json"]) == 2


def test_a_label_survives_the_process_being_killed(store_at):
    """A label is committed before save_label returns: SIGKILL right after it (a crash) loses nothing."""
    db = store_at("crash.db")
    code = ("import sys, time\n"
            "from evalcore.store import Store\n"
            f"s = Store({str(db)!r})\n"
            "for k in range(3):\n"
            "    s.save_label('ds', f'i{k}', 'q', 'ann', k + 1)\n"
            "print('saved', flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout.readline().strip() == "saved"
    finally:
        proc.kill()  # SIGKILL: no cleanup, no close, no checkpoint
        proc.wait(timeout=30)
    rows = Store(db).label_rows("ds")
    assert rows["value"].tolist() == [1.0, 2.0, 3.0]


def test_cli_labels_export_import_list(tmp_path, monkeypatch, capsys):
    from evalcore import cli

    db = tmp_path / "cli.db"
    monkeypatch.setenv("EVALCORE_DB", str(db))
    s = Store(db)
    ds = runs.get_dataset("summeval", with_labels=False)
    for k, item in enumerate(labels.random_order(ds)[:4]):
        s.save_label("summeval", item, "coherence", "ann", k + 1)
    out = tmp_path / "labels.csv"
    assert cli.main(["labels", "export", str(out), "--dataset", "summeval"]) == 0
    assert len(pd.read_csv(out)) == 4
    s.delete_labels("summeval")
    capsys.readouterr()
    assert cli.main(["labels", "import", str(out), "--dataset", "summeval", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"imported": 4}
    assert cli.main(["labels", "list", "--dataset", "summeval", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["labels"] == 4 and listed["annotators"] == {"ann": 4} and listed["random_part"] == 4
    assert cli.main(["labels", "import", str(tmp_path / "missing.csv"), "--dataset", "summeval"]) == 2


@settings(max_examples=40, deadline=None)
@given(ops=hs.lists(hs.tuples(hs.sampled_from(["ann", "bob"]), hs.sampled_from(["x", "y", "z"]),
                              hs.sampled_from([None, 1.0, 2.0, 3.0, "undo"])), max_size=25))
def test_latest_labels_match_a_simple_model(tmp_path_factory, ops):
    """Any sequence of labels, skips and undos: the labels in force are those of a plain model in which each
    annotator has a stack of actions, undo pops the top, and the latest non-skip action per item wins."""
    store = Store(tmp_path_factory.mktemp("prop") / "p.db")
    stacks: dict[str, list[tuple[str, float | None]]] = {"ann": [], "bob": []}
    for annotator, item, v in ops:
        if v == "undo":
            store.undo_label("ds", annotator)
            if stacks[annotator]:
                stacks[annotator].pop()
        else:
            store.save_label("ds", item, "q", annotator, v, skipped=v is None)
            stacks[annotator].append((item, v))
    expected = {}
    for annotator, stack in stacks.items():
        for item, v in stack:
            if v is not None:
                expected[(annotator, item)] = v
    got = labels.latest_labels(store.label_rows("ds"))
    assert {(a, i): v for a, i, v in zip(got["annotator"], got["item_id"], got["value"])} == expected
    store.close()
