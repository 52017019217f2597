"""Issue 21 item 4, the Batch API path against the loopback's /v1/files and /v1/batches: a batch already completed
when created is collected; the same batch id from two servers makes two batches, both collected; a custom_id
answered twice fails its item and counts no token; output files are streamed to disk, not held in memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from tests import judge_calls

from evalcore.judge import batch
from evalcore.judge.client import Endpoint
from evalcore.model import Dataset, Dimension
from evalcore.store import Store
from evalcore.testing.loopback import BatchSwitches, serve
from evalcore.types import Criteria

ROOT = Path(__file__).resolve().parents[2]
CRIT = {"coherence": Criteria("coherence", "You will be given a summary.", "coherence definition", 1, 5,
                              "1. Read.\n2. Score.")}


def tiny(dataset_id: str = "tinybatch", n_docs: int = 4, n_systems: int = 3) -> Dataset:
    docs = [f"d{i}" for i in range(n_docs)]
    items = pd.DataFrame([{"item_id": f"{d}/S{j}", "doc_id": d, "system_id": f"S{j}", "output": f"summary {d} by S{j}"}
                          for d in docs for j in range(n_systems)])
    documents = pd.DataFrame({"doc_id": docs, "source": [f"article {d} " * 20 for d in docs],
                              "references": [[f"ref {d}"] for d in docs], "context": [""] * n_docs})
    human = pd.DataFrame([{"item_id": i, "dimension": "coherence", "score": 3.0} for i in items["item_id"]])
    return Dataset(id=dataset_id, name=dataset_id, task="summarization", dimensions=[Dimension("coherence", 1, 5)],
                   documents=documents, items=items, human_scores=human)


@pytest.fixture
def store(tmp_path):
    st = Store(tmp_path / "judge.db")
    yield st
    st.close()


def run_batch(ds, srv, store, **kw):
    return judge_calls.score_dataset_batch(ds, method="geval", dimensions=["coherence"], criteria_by_dim=CRIT,
                                           endpoint=Endpoint(srv.base_url, "loop-model", provider="local"), store=store,
                                           poll_s=0.02, **kw)


def _file_lines(srv, file_id: str) -> list[dict]:
    return [json.loads(ln) for ln in srv.batch_service.files[file_id]["_data"].decode().splitlines() if ln.strip()]


def test_a_batch_completed_when_created_is_collected_without_asking_again(store):
    with serve(batch=BatchSwitches(complete_at_create=True)) as srv:
        run = run_batch(tiny(), srv, store).run
        row = batch.batch_rows(store, run.run_id)[0]
        retrieved = srv.by_path.get("/v1/batches", 0)
    assert row["status"] == "completed" and row["output_file_id"] and row["collected"] == 1
    assert retrieved == 1  # the create call only: the recorded status and output file id were enough
    assert len(run.judgments) == 12 and (run.judgments["status"] == "ok").all()
    assert run.config["batch"]["answered_lines"] == 12 and run.config["batch"]["failed_lines"] == 0


def test_the_same_batch_id_from_two_servers_makes_two_batches_both_collected(store):
    with serve(batch=BatchSwitches(plain_ids=True)) as one, serve(batch=BatchSwitches(plain_ids=True)) as two:
        first = run_batch(tiny("first"), one, store).run
        second = run_batch(tiny("second"), two, store).run
    rows = [batch.batch_rows(store, r.run_id)[0] for r in (first, second)]
    assert rows[0]["batch_id"] == rows[1]["batch_id"]  # the servers handed out the same id
    assert [r["endpoint"] for r in rows] == [one.base_url.rstrip("/"), two.base_url.rstrip("/")]
    assert all(r["collected"] == 1 and r["status"] == "completed" for r in rows)
    for run in (first, second):
        assert len(run.judgments) == 12 and (run.judgments["status"] == "ok").all()


def test_a_server_reusing_a_batch_id_is_refused_with_a_message(store):
    store.add_batch("r1", "batch-1", endpoint="http://h/v1", route="/v1/chat/completions", input_file_id="f",
                    api_key_env=None, status="validating", total=1)
    with pytest.raises(ValueError, match="handed out batch id batch-1 again .*run r1"):
        store.add_batch("r2", "batch-1", endpoint="http://h/v1", route="/v1/chat/completions", input_file_id="f",
                        api_key_env=None, status="validating", total=1)
    store.update_batch("http://h/v1", "batch-1", status="completed")
    store.add_batch("r3", "batch-1", endpoint="http://other/v1", route="/v1/chat/completions", input_file_id="f",
                    api_key_env=None, status="validating", total=1)
    assert [(b["status"], b["endpoint"]) for b in store.batch_rows("r1") + store.batch_rows("r3")] == [
        ("completed", "http://h/v1"), ("validating", "http://other/v1")]


def test_a_custom_id_answered_twice_fails_its_item_and_counts_no_token(store):
    with serve(batch=BatchSwitches(repeat_lines=2)) as srv:
        run = run_batch(tiny(), srv, store).run
        out = _file_lines(srv, batch.batch_rows(store, run.run_id)[0]["output_file_id"])
    times = Counter(line["custom_id"] for line in out)
    assert len(out) == 14 and sorted(times.values()) == [1] * 10 + [2, 2]
    once = [line for line in out if times[line["custom_id"]] == 1]
    usage = lambda k: sum(line["response"]["body"]["usage"][k] for line in once)  # noqa: E731
    stats = run.config["batch"]
    assert stats["answered_lines"] == 10 and stats["failed_lines"] == 4 and stats["duplicate_lines"] == 4
    assert stats["prompt_tokens"] == usage("prompt_tokens") and stats["completion_tokens"] == usage("completion_tokens")
    j = run.judgments
    failed = j[j["status"] == "failed"]
    assert len(failed) == 2 and (j["status"] == "ok").sum() == 10
    assert failed["reason"].str.contains("custom_id answered 2 times").all() and failed["value"].isna().all()


SPOOL = textwrap.dedent("""
    import asyncio, sys, tempfile, tracemalloc
    from pathlib import Path
    import openai
    from evalcore.judge.batch import _lines, _spool

    async def main():
        api = openai.AsyncOpenAI(base_url=sys.argv[1], api_key="loopback")
        target = Path(tempfile.mkdtemp()) / "out.jsonl"
        tracemalloc.start()
        await _spool(api, sys.argv[2], target)
        n = sum(1 for _ in _lines(target))
        peak = tracemalloc.get_traced_memory()[1]
        await api.close()
        print(target.stat().st_size, n, peak)

    asyncio.run(main())
""")


def test_an_output_file_is_streamed_to_disk_not_held_in_memory():
    line = json.dumps({"custom_id": "k", "response": {"status_code": 200, "body": {"pad": "x" * 4000}}}) + "\n"
    data = (line * 10_000).encode()  # 40 MB
    with serve() as srv:
        fid = srv.batch_service._file(data, "batch_output", "output.jsonl")["id"]
        done = subprocess.run([sys.executable, "-c", SPOOL, srv.base_url, fid], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    size, lines, peak = map(int, done.stdout.split())
    assert size == len(data) and lines == 10_000
    assert peak < len(data) / 8, f"peak {peak} bytes traced for a {len(data)}-byte file"
