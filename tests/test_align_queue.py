"""evalcore.align.queue: the Improve loop's queue of scoring runs, one after another.

With fake jobs (started, finished, failed or cancelled by the test): the order, what is done, running and pending,
how an error or a cancel ends the queue, what the page's handle shows on a later rerun. With the real scoring job
against the loopback judge: the runs land in the store under the loop's ids, a second queue for the same
candidates (a session resumed later) sends nothing again, and another user's queue refuses those runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from evalcore import datasets
from evalcore.align import loop, make_split
from evalcore.align import queue as aq
from evalcore.align.candidates import Candidate, baseline_candidate
from evalcore.types import Criteria

DIM = "coherence"


@dataclass
class FakeProgress:
    total: int
    done: int
    cached: int = 0
    failed: int = 0


@dataclass
class FakeJob:
    spec: object
    started: bool = False
    alive: bool = False
    finished: bool = False
    error: str | None = None
    progress: FakeProgress | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def running(self) -> bool:
        return self.alive

    def start(self) -> None:
        self.started = self.alive = True

    def end(self, error: str | None = None) -> None:
        self.alive, self.finished, self.error = False, True, error


@dataclass
class Spec:
    run_id: str


def fake_queue(n: int = 3, kind: str = "dev") -> tuple[aq.ScoringQueue, list[FakeJob]]:
    jobs: list[FakeJob] = []

    def make(spec, _engine, _store):
        jobs.append(FakeJob(spec))
        return jobs[-1]

    items = [aq.Item(f"cand {i}", Spec(f"run-{i}")) for i in range(n)]
    return aq.ScoringQueue(kind=kind, split_id="s1", items=items, engine=None, store=None, make_job=make), jobs


def states(q: aq.ScoringQueue) -> list[str]:
    return [r["state"] for r in q.status()]


def test_items_run_one_after_another_in_order():
    q, jobs = fake_queue(3)
    assert q.pending() == ["cand 0", "cand 1", "cand 2"] and q.finished() == [] and not jobs
    q.advance()
    assert [j.spec.run_id for j in jobs] == ["run-0"] and jobs[0].started
    assert states(q) == ["running", "pending", "pending"]
    assert q.progress() == (0.0, "cand 0 (1 of 3): starting (probing the endpoint)…")
    jobs[0].progress = FakeProgress(total=40, done=10, cached=4, failed=1)
    frac, text = q.progress()
    assert frac == pytest.approx(0.25) and text == "cand 0 (1 of 3): 10 / 40 done · 4 from cache · 1 failed"
    for _ in range(3):  # every rerun advances: nothing new starts while the job runs
        q.advance()
    assert len(jobs) == 1 and q.busy()
    jobs[0].end()
    assert q.finished() == ["cand 0"] and q.pending() == ["cand 1", "cand 2"]  # over, not yet handed on
    q.advance()
    assert [j.spec.run_id for j in jobs] == ["run-0", "run-1"] and states(q) == ["done", "running", "pending"]
    jobs[1].end()
    q.advance()
    jobs[2].end()
    assert not q.done and q.finished() == ["cand 0", "cand 1", "cand 2"] and q.pending() == []
    assert not q.busy() and q.done and q.outcome() is None
    assert states(q) == ["done", "done", "done"] and [r["run_id"] for r in q.status()] == ["run-0", "run-1", "run-2"]
    assert len(jobs) == 3  # an ended queue starts nothing more


def test_an_error_or_a_cancel_ends_the_queue_with_the_rest_pending():
    q, jobs = fake_queue(3)
    q.advance()
    jobs[0].end()
    q.advance()
    jobs[1].end(error="RuntimeError: the endpoint refused the key")
    assert not q.busy() and q.done and len(jobs) == 2
    assert q.finished() == ["cand 0"] and q.pending() == ["cand 1", "cand 2"]
    assert states(q) == ["done", "failed", "pending"]
    assert q.outcome() == ("error", "Scoring stopped: RuntimeError: the endpoint refused the key")

    q, jobs = fake_queue(2)
    q.advance()
    q.cancel()
    assert jobs[0].cancel.is_set()
    jobs[0].end()  # the thread stops after a cancel: the run is marked cancelled
    assert not q.busy() and states(q) == ["cancelled", "pending"] and q.pending() == ["cand 0", "cand 1"]
    assert q.outcome() == ("warning", "Cancelled. Finished judgments are kept: start again to score the rest.")
    assert not q.claim_check("s1")  # not a final check's queue, and it did not finish


def test_what_a_later_rerun_of_the_page_sees_through_its_handle():
    """The page keeps only the queue in its session state: a rerun (the page left and opened again while the jobs
    ran) reads the same order and state, refreshes its run lists once, and computes the final check once."""
    q, jobs = fake_queue(2, kind="test")
    session = {"_align_queue": q}
    session["_align_queue"].advance()
    again = session["_align_queue"]  # a later rerun
    assert again is q and states(again) == ["running", "pending"] and not again.absorb()
    jobs[0].end()
    assert again.shown_for("test", "s1") and not again.shown_for("dev", "s1") and not again.shown_for("test", "s2")
    assert again.busy() and states(again) == ["done", "running"]  # the rerun handed over to the next job
    jobs[1].end()
    assert not again.claim_check("s1")  # not advanced past its last job yet
    assert again.absorb() and not again.absorb()  # once
    assert not again.claim_check("s2")  # another split in use
    assert again.claim_check("s1") and not again.claim_check("s1")  # once


def crit(definition: str) -> Criteria:
    return Criteria(dimension=DIM, task_introduction="Rate the summary.", definition=definition, scale_min=1,
                    scale_max=5, steps="1. Read the summary.\n2. Rate it.")


def test_plan_refuses_an_unknown_kind():
    with pytest.raises(ValueError, match="unknown queue kind"):
        aq.plan("final", None, None, "dev", DIM, "geval", [], [], None, None, None)


def test_real_runs_land_under_the_loops_ids_and_a_later_queue_sends_nothing_again(tmp_path):
    from evalcore.judge.client import Endpoint
    from evalcore.judge.spec import EngineOptions
    from evalcore.sampling import documents_subset
    from evalcore.store import Store
    from evalcore.testing.loopback import serve

    full = datasets.load_dataset("summeval")
    ds = documents_subset(full, list(dict.fromkeys(full.items["doc_id"]))[:4])
    split = make_split(ds, DIM, test_share=0.5, seed=0)
    store = Store(tmp_path / "s.db")
    cands = [baseline_candidate(crit("Coherence.")), Candidate(crit("Coherence, sentence by sentence."), "edit")]
    names = ["baseline", "edit"]
    with serve() as srv:
        endpoint = Endpoint(base_url=srv.base_url, model="loopback-judge", provider="vllm",
                            api_key_env="VLLM_API_KEY")
        engine = EngineOptions(endpoint, concurrency=8)
        est = loop.estimate_part(ds, split, "dev", DIM, "geval", cands, engine, store=store)
        q = aq.plan("dev", ds, split, "dev", DIM, "geval", cands, names, endpoint, engine, store, owner="ann")
        assert [it.run_id for it in q.items] == [loop.run_id_for(ds.id, split, "dev", c, "geval", endpoint, "ann")
                                                 for c in cands]
        assert all(it.spec.owner == "ann" for it in q.items) and q.pending() == names
        q.advance()
        while q.busy():
            q.job.wait(60)
        assert q.outcome() is None and q.finished() == names and states(q) == ["done", "done"]
        for it in q.items:
            row = loop.own_run(store, it.run_id, "ann", endpoint)
            assert row is not None and row["status"] == "done"
        sent = srv.requests_seen
        assert sent >= est.calls > 32  # both candidates' requests (and the endpoint's probe)

        # a session resumed later: the same candidates, the same runs; the cache answers, nothing is sent again
        later = aq.plan("dev", ds, split, "dev", DIM, "geval", cands, names, endpoint, engine, store, owner="ann")
        assert [it.run_id for it in later.items] == [it.run_id for it in q.items]
        later.advance()
        while later.busy():
            later.job.wait(60)
        assert later.finished() == names and later.outcome() is None and srv.requests_seen == sent

    # a run under bob's id that someone else made is never taken as bob's: refused before anything is charged
    bob_id = loop.run_id_for(ds.id, split, "dev", cands[1], "geval", endpoint, "bob")
    store.create_run(run_id=bob_id, dataset_id=ds.id, method="geval", model="loopback-judge", owner="eve")
    with pytest.raises(loop.RunNotReusable, match="another user"):
        aq.plan("dev", ds, split, "dev", DIM, "geval", cands, names, endpoint, engine, store, owner="bob")
