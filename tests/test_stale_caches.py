"""Caches that cannot go stale: every cached figure of a run is keyed by the run's version (evalcore.runs.run_version)
and the dataset's labels version, so a resumed run shows new figures on every page without a list of caches to clear
(pages/_compute.cached_for_runs). Called here outside a Streamlit server, where st.cache_data keeps a memory cache
per process exactly as it does per server."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

from evalcore import runs
from evalcore.model import Dataset, Dimension
from evalcore.store import default_store

N_DOCS, SYSTEMS = 12, ("A", "B", "C")


def _dataset() -> Dataset:
    rng = np.random.default_rng(3)
    items = pd.DataFrame([{"item_id": f"d{d}/{s}", "doc_id": f"d{d}", "system_id": s, "output": f"out {d} {s}"}
                          for d in range(N_DOCS) for s in SYSTEMS])
    docs = pd.DataFrame({"doc_id": [f"d{d}" for d in range(N_DOCS)], "source": [f"src {d}" for d in range(N_DOCS)],
                         "references": [[] for _ in range(N_DOCS)], "context": [""] * N_DOCS})
    human = pd.DataFrame({"item_id": items["item_id"], "dimension": "coherence",
                          "score": rng.integers(1, 6, len(items)).astype(float)})
    return Dataset(id="stale", name="Stale", task="summarization", dimensions=[Dimension("coherence", 1, 5)],
                   documents=docs, items=items, human_scores=human)


def _judge(store, run_id: str, items: list[str], status: str, values: dict[str, float]) -> None:
    store.create_run(run_id=run_id, dataset_id="stale", method="geval", model="m", config={"method": "geval"},
                     status="running")
    for item in items:
        store.save_judgment(run_id, {"item_id": item, "dimension": "coherence", "value": values[item],
                                     "status": "ok", "raw": str(values[item])})
    store.finish_run(run_id, status=status, stats={})


@pytest.fixture
def half_scored_run():
    store = default_store()
    ds = _dataset()
    store.save_dataset(ds)
    rng = np.random.default_rng(7)
    values = {i: float(v) for i, v in zip(ds.items["item_id"], rng.integers(1, 6, len(ds.items)))}
    first = list(ds.items["item_id"][: len(ds.items) // 2])
    _judge(store, "stale/run", first, "stopped", values)
    return store, ds, values


def test_a_resumed_run_is_a_new_key_on_every_cached_function(half_scored_run):
    from pages import _compute as compute

    store, ds, values = half_scored_run
    args = dict(dataset_id="stale", run_ids=("stale/run",), dimension="coherence", parse="robust",
                systems=None)
    before = {"mean_scores": compute.mean_scores("stale", ("stale/run",), ("coherence",), "robust"),
              "distributions": compute.distributions("stale", ("stale/run",), "coherence", "robust"),
              "support_notes": compute.support_notes(**args),
              "alignment": compute.alignment(n_resamples=50, **args)}
    version_before = runs.run_version("stale/run")
    _judge(store, "stale/run", list(ds.items["item_id"]), "done", values)  # resumed: the other half scored
    assert runs.run_version("stale/run") != version_before
    after = {"mean_scores": compute.mean_scores("stale", ("stale/run",), ("coherence",), "robust"),
             "distributions": compute.distributions("stale", ("stale/run",), "coherence", "robust"),
             "support_notes": compute.support_notes(**args),
             "alignment": compute.alignment(n_resamples=50, **args)}
    for name in before:
        assert _shown(before[name]) != _shown(after[name]), f"{name} kept the half run's figures after the resume"
    full = compute.distributions("stale", ("stale/run",), "coherence", "robust")
    assert _shown(full) == _shown(after["distributions"])  # and the new figures are cached under the new version


def _shown(value) -> str:
    return value.to_csv() if isinstance(value, pd.DataFrame) else repr(value)


def test_every_cached_function_that_takes_a_run_is_keyed_by_its_version():
    """No run-keyed function can be cached by id alone: each one taking a run argument goes through
    cached_for_runs (which also covers the dataset's labels)."""
    from pages import _compute as compute

    run_args = set(compute._RUN_ARGS)
    offenders = []
    for name, f in vars(compute).items():
        if not callable(f) or not hasattr(f, "clear") or name.startswith("_"):
            continue
        params = set(inspect.signature(f).parameters)
        if params & run_args and f.__code__.co_name != "call":
            offenders.append(name)
    assert offenders == []


def test_run_and_dataset_versions(half_scored_run):
    store, ds, values = half_scored_run
    v1 = runs.run_version("stale/run")
    assert v1.endswith("|stopped")
    store.create_run(run_id="stale/run", dataset_id="stale", method="geval", model="m", status="running")
    v2 = runs.run_version("stale/run")
    store.save_judgment("stale/run", {"item_id": "d11/C", "dimension": "coherence", "value": 3.0, "status": "ok"})
    v3 = runs.run_version("stale/run")
    assert len({v1, v2, v3}) == 3  # a running run's version counts what it holds
    assert runs.run_version("summeval/gpt4-geval") in ("published", "")  # bundled runs never change
    d1 = runs.dataset_version("stale")
    store.insert_labels([{"dataset_id": "stale", "item_id": "d0/A", "dimension": "coherence", "annotator": "amy",
                          "value": 4.0, "position": 0}])
    assert runs.dataset_version("stale") != d1


def test_a_label_saved_by_another_server_is_read_on_the_next_rerun(half_scored_run):
    """The dataset and the Data page's agreement are keyed by the dataset's labels version, not its id alone: a
    label another app server (or session, or the CLI) saves on the same store shows without clearing a cache here."""
    from pages import _compute, _loaders

    store, ds, _ = half_scored_run
    before = _loaders.load_dataset(ds.id)
    assert before.annotations.empty
    _compute.agreement(ds.id, 20)
    item = str(ds.items["item_id"].iloc[0])
    store.save_label(ds.id, item, "coherence", "bob", 2.0)  # written as another server would: no cache cleared
    store.save_label(ds.id, item, "coherence", "carol", 4.0)
    after = _loaders.load_dataset(ds.id)
    assert sorted(after.annotations["annotator"]) == ["bob", "carol"]
    assert _loaders.load_dataset(ds.id) is after  # the same version: the cached dataset, not a new load


def test_an_upload_deleted_by_another_server_is_not_served_from_this_ones_cache(half_scored_run):
    """The loaded dataset's cache key holds whether the upload still exists: deleted through another app server on
    the same store (no cache cleared here), it is not served from this server's cache on the next rerun (the list
    leaves it by the datasets version; a link naming it says it is gone)."""
    from pages import _loaders

    store, ds, _ = half_scored_run
    listed = runs.dataset_version(ds.id)
    assert _loaders.load_dataset(ds.id).id == ds.id
    store.delete_dataset(ds.id)  # as another server would: nothing cleared in this process
    assert runs.dataset_version(ds.id) != listed
    with pytest.raises(KeyError):
        _loaders.load_dataset(ds.id)
    assert runs.dataset_version("summeval") == runs.dataset_version("summeval")  # a bundled one's key is stable
