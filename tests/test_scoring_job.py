"""The scoring job the Score page starts (evalcore.judge.job.ScoringJob): it scores on its own thread, reports
progress, stops on cancel, resumes the same run, keeps an error as one line without the API key, and takes the
Batch API path to the same judgments."""

from __future__ import annotations

from evalcore.datasets import load_dataset
from evalcore.judge.client import Endpoint
from evalcore.judge.job import ScoringJob
from evalcore.judge.spec import EngineOptions, default_spec
from evalcore.store import Store
from evalcore.testing.loopback import Fault, serve

SECRET = "sk-test-do-not-show-0123456789"


def job_for(srv, store, *, run_id: str, batch: bool = False, api_key: str | None = None, limit: int = 4):
    ds = load_dataset("summeval")
    spec = default_spec(ds, "geval", ["coherence"], limit=limit)
    engine = EngineOptions(Endpoint(srv.base_url, "loop-model", provider="local"), api_key=api_key, concurrency=2,
                           max_retries=0, timeout_s=10)
    return ScoringJob(run_id=run_id, spec=spec, engine=engine, store=store, batch=batch, poll_s=0.02)


def test_a_job_scores_on_its_thread_and_stores_the_run(tmp_path):
    store = Store(tmp_path / "s.db")
    with serve() as srv:
        job = job_for(srv, store, run_id="summeval/job")
        job.start()
        assert job.wait(60)
    assert job.finished and job.error is None
    assert job.run.run_id == "summeval/job" and len(job.run.judgments) == 4
    assert job.progress.done == job.progress.total == 4
    assert store.load_run("summeval/job").config["status"] == "done"


def test_a_cancelled_job_resumes_the_same_run(tmp_path):
    store = Store(tmp_path / "s.db")
    with serve() as srv:
        job = job_for(srv, store, run_id="summeval/resumed")
        job.start()
        job.cancel.set()  # at once: the run stops wherever it is (or has just finished)
        assert job.wait(60)
        first = store.load_run("summeval/resumed")
        job.resume(None)
        assert job.wait(60)
    assert first.config["status"] in ("cancelled", "done")
    assert job.error is None and job.run.run_id == "summeval/resumed" and len(job.run.judgments) == 4
    assert store.load_run("summeval/resumed").config["status"] == "done"


def test_an_error_is_one_line_without_the_key(tmp_path):
    store = Store(tmp_path / "s.db")
    with serve(faults=[Fault("key_echo", fraction=1.0)]) as srv:
        job = job_for(srv, store, run_id="summeval/denied", api_key=SECRET)
        job.start()
        assert job.wait(60)
    assert job.finished and job.error
    assert SECRET not in job.error and "\n" not in job.error.strip()


def test_the_batch_path_gives_the_online_judgments(tmp_path):
    with serve() as srv:
        online = job_for(srv, Store(tmp_path / "online.db"), run_id="summeval/online")
        online.start()
        assert online.wait(60)
        batched = job_for(srv, Store(tmp_path / "batch.db"), run_id="summeval/batched", batch=True)
        batched.start()
        assert batched.wait(60)
    assert batched.error is None, batched.error
    assert batched.run.config["mode"] == "batch"
    a = online.run.judgments.set_index("item_id")["value"].sort_index()
    b = batched.run.judgments.set_index("item_id")["value"].sort_index()
    assert a.equals(b)
