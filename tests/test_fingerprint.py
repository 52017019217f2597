"""A judge's fingerprint: the same for a run cancelled then resumed, changed by a prompt edit; the hash of the human
ratings: the same for the same ratings in another order, changed by one changed rating; both in ``meta --json``."""

from __future__ import annotations

import threading

import pandas as pd
import pytest

from evalcore.fingerprint import PARTS, fingerprint, labels_hash, provenance
from evalcore.store import Store
from evalcore.testing.loopback import serve
from tests import judge_calls
from tests.test_judge_runner import CRIT, SECRET, TinyMethod, crit, ep, tiny_dataset


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "judge.db")


def test_resumed_run_keeps_its_fingerprint_and_a_prompt_edit_changes_it(store):
    ds = tiny_dataset(6, 2)
    one = {"coherence": CRIT["coherence"]}
    cancel = threading.Event()

    def on_progress(p):
        if p.done >= 4:
            cancel.set()

    with serve(latency_s=0.02) as srv:
        run = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=one, endpoint=ep(srv),
                                        api_key=SECRET, store=store, concurrency=1, progress=on_progress, cancel=cancel)
        assert run.config.status == "cancelled"
        resumed = judge_calls.score_dataset(ds, method=TinyMethod(), criteria_by_dim=one, endpoint=ep(srv),
                                            api_key=SECRET, store=store, run_id=run.run_id)
        edited = judge_calls.score_dataset(ds, method=TinyMethod(), store=store, endpoint=ep(srv), api_key=SECRET,
                                           criteria_by_dim={"coherence": crit("coherence", "1. Read twice.")})
    assert resumed.config.status == "done"
    before, after, other = fingerprint(run), fingerprint(resumed), fingerprint(edited)
    assert set(PARTS) <= set(before) and before == after
    assert before["model"] == "loop-model" and before["provider"] == "openai" and before["method"] == "tiny"
    assert before["reported_model"] == "loop-model"  # the response's own "model" field, as the loopback sends it
    assert SECRET not in repr(before)
    assert other["prompt_hash"] != before["prompt_hash"] and other["hash"] != before["hash"]
    # everything but the prompt is the same judge
    assert {k: v for k, v in other.items() if k not in ("prompt_hash", "hash")} == \
        {k: v for k, v in before.items() if k not in ("prompt_hash", "hash")}


def test_labels_hash_follows_the_ratings_not_their_order():
    ds = tiny_dataset(3, 2)
    ds.human_scores["score"] = range(len(ds.human_scores))
    first = labels_hash(ds, ["coherence"])
    shuffled = ds.human_scores.sample(frac=1.0, random_state=1)
    assert labels_hash(_with(ds, shuffled), ["coherence"]) == first
    changed = ds.human_scores.copy()
    changed.loc[changed.index[0], "score"] += 1
    assert labels_hash(_with(ds, changed), ["coherence"]) != first
    # a change on a dimension the figure did not use leaves its hash alone
    flu = ds.human_scores.copy()
    flu.loc[flu["dimension"] == "fluency", "score"] += 1
    assert labels_hash(_with(ds, flu), ["coherence"]) == first


def _with(ds, human: pd.DataFrame):
    import dataclasses

    return dataclasses.replace(ds, human_scores=human)


def test_meta_json_has_fingerprint_and_labels_hash():
    from evalcore.cli import meta_document
    from evalcore.datasets import load_dataset
    from evalcore.runs import load_run

    ds = load_dataset("summeval")
    run = load_run("summeval/shen-gpt-3.5-turbo-0301-rts")
    doc = meta_document(ds, run, dimensions=["coherence"], levels=("summary",), coefficients=("kendall",),
                        n_resamples=0)
    assert doc["fingerprint"] == fingerprint(run) and doc["labels_hash"] == labels_hash(ds, ["coherence"])
    assert provenance(ds, run, ["coherence"])["labels_hash"] == doc["labels_hash"]
