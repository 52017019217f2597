"""``python -m evalcore gate``: each status and its exit code produced by a run built for it (a dataset of 60
documents, a baseline judge close to the humans), through the command line as CI runs it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from evalcore.gate import EXIT_CODES
from evalcore.model import Dataset, Dimension, Run
from tests.test_byo_import import cli

N_DOCS, SYSTEMS = 60, ("A", "B")
JUDGE = {"method": "tiny", "endpoint": {"provider": "openai", "base_url": "http://judge/v1", "model": "m-1"},
         "criteria": {"quality": {"hash": "c1"}}, "method_config": {"temperature": 0}}


def dataset(rng: np.random.Generator) -> Dataset:
    items = pd.DataFrame([{"item_id": f"d{d}/{s}", "doc_id": f"d{d}", "system_id": s, "output": f"text {d} {s}"}
                          for d in range(N_DOCS) for s in SYSTEMS])
    docs = pd.DataFrame({"doc_id": [f"d{d}" for d in range(N_DOCS)], "source": "src", "references": [[]] * N_DOCS,
                         "context": ""})
    human = pd.DataFrame({"item_id": items["item_id"], "dimension": "quality",
                          "score": rng.integers(1, 6, len(items)).astype(float)})
    return Dataset(id="user-gatetest0001", name="gate", task="t", dimensions=[Dimension("quality", 1, 5)],
                   documents=docs, items=items, human_scores=human)


def run(ds: Dataset, name: str, judge: np.ndarray, config: dict | None = None, draws: np.ndarray | None = None) -> Run:
    config = config or JUDGE
    version = config["criteria"]["quality"]["hash"]  # the store reads a run's rows under its criteria's version
    j = pd.DataFrame({"item_id": ds.human_scores["item_id"], "dimension": "quality", "raw": "", "value": judge,
                      "status": "ok", "reason": "", "estimator": "greedy", "criteria_hash": version})
    out = Run(run_id=f"{ds.id}/{name}", dataset_id=ds.id, method="tiny", model="m-1", label=name, config=config,
              judgments=j)
    if draws is not None:
        out.draws = pd.DataFrame([{"item_id": i, "dimension": "quality", "draw": k, "raw": "", "value": v,
                                   "status": "ok", "reason": "", "criteria_hash": version}
                                  for i, row in zip(ds.human_scores["item_id"], draws) for k, v in enumerate(row)])
    return out


@pytest.fixture
def study(own_store):
    from evalcore.store import Store

    rng = np.random.default_rng(7)
    ds = dataset(rng)
    h = ds.human_scores["score"].to_numpy()
    close = lambda: h + rng.normal(0, 0.5, len(h))  # noqa: E731 - a judge close to the humans
    steady = np.stack([np.round(h), np.round(h)], axis=1)  # two draws that agree
    shaky = np.stack([h, rng.integers(1, 6, len(h))], axis=1).astype(float)  # two draws that mostly differ
    store = Store(own_store)
    store.save_dataset(ds, overwrite=True)
    for r in (run(ds, "baseline", close()), run(ds, "same", close()), run(ds, "worse", rng.normal(0, 1, len(h))),
              run(ds, "steady", steady.mean(axis=1), draws=steady),
              run(ds, "shaky", shaky.mean(axis=1), draws=shaky),
              run(ds, "newprompt", close(), {**JUDGE, "criteria": {"quality": {"hash": "c2"}}})):
        store.save_imported_run(r)
    return ds, own_store


def gate(study, name: str, *extra: str) -> tuple[int, dict]:
    ds, db = study
    out = cli("gate", "--dataset", ds.id, "--run", f"{ds.id}/{name}", "--baseline", f"{ds.id}/baseline",
              "--resamples", "300", *extra, "--json", db=db, check=False)
    return out.returncode, json.loads(out.stdout)


@pytest.mark.parametrize("name, extra, status", [
    ("same", (), "OK"),
    ("steady", (), "OK"),
    ("worse", (), "REGRESSED"),
    ("same", ("--min-agreement", "0.99"), "REGRESSED"),
    ("shaky", (), "FLAKY"),
    ("newprompt", (), "JUDGE_CHANGED"),
    ("newprompt", ("--allow-judge-change",), "OK"),
    ("same", ("--labels-hash", "0" * 64), "LABELS_CHANGED"),
])
def test_each_status_has_its_exit_code(study, name, extra, status):
    rc, doc = gate(study, name, *extra)
    assert (doc["status"], rc, doc["exit_code"]) == (status, EXIT_CODES[status], EXIT_CODES[status]), doc["reasons"]
    assert bool(doc["reasons"]) == (status != "OK")


def test_the_labels_hash_of_an_ok_gate_passes_the_next(study):
    from evalcore.fingerprint import labels_hash

    rc, doc = gate(study, "same")
    assert rc == 0 and doc["labels_hash"] == labels_hash(study[0], ["quality"])
    assert gate(study, "same", "--labels-hash", doc["labels_hash"])[0] == 0
    assert doc["comparisons"]["quality"]["ci_low"] <= doc["comparisons"]["quality"]["difference"]


def test_a_mistake_exits_2(study):
    ds, db = study
    out = cli("gate", "--dataset", ds.id, "--run", f"{ds.id}/same", "--baseline", f"{ds.id}/baseline",
              "--dimension", "fluency", db=db, check=False)
    assert out.returncode == 2 and "fluency" in out.stderr
