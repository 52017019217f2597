"""Store faults: a truncated, garbled or foreign file, a store locked past the timeout, two processes on one run, a
run whose process was killed. Each ends with a clear message naming the file (CLI: one line, exit 2), ``PRAGMA
integrity_check`` ok where the file was sound, and no paid request sent twice."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from evalcore import store as store_mod
from evalcore.store import leases as leases_mod
from evalcore.store import RunLeased, Store, StoreLocked, StoreUnreadable, store_problem
from evalcore.testing.loopback import serve

from _judging import CAPS, CRITERIA, KEY_ENV, ROOT, SECRET, OneShot, dataset, endpoint, integrity_ok
from tests import judge_calls

HERE = Path(__file__).resolve().parent


def _sound_store(path: Path, rows: int = 1500) -> Path:
    st = Store(path)
    with st.write() as c:
        c.executemany("INSERT INTO cache (key, endpoint, model, request, response, usage, latency_s, created_at)"
                      " VALUES (?,?,?,?,?,?,?,?)", [(f"k{i}", "{}", "m", "{}", json.dumps({"pad": "x" * 400}), "{}", 0.0, "t")
                                                   for i in range(rows)])
    st.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    st.close()
    return path


def _break(kind: str, tmp: Path) -> Path:
    good = _sound_store(tmp / "good.db")
    data = bytearray(good.read_bytes())
    bad = tmp / f"{kind}.db"
    if kind == "not-a-database":
        bad.write_bytes(b"id,name\n1,this is a CSV file\n" * 200)
    elif kind == "truncated":
        bad.write_bytes(bytes(data[: len(data) // 2]))
    elif kind == "garbled-pages":
        data[4096 * 3: 4096 * 6] = bytes((i * 7919) % 251 for i in range(4096 * 3))
        bad.write_bytes(bytes(data))
    elif kind == "garbled-header":
        data[:100] = b"\xff" * 100
        bad.write_bytes(bytes(data))
    return bad


BROKEN = ["not-a-database", "truncated", "garbled-pages", "garbled-header"]


@pytest.mark.parametrize("kind", BROKEN)
def test_unreadable_store_names_the_file_and_the_way_out(kind, tmp_path):
    bad = _break(kind, tmp_path)
    with pytest.raises(StoreUnreadable) as ei:
        Store(bad).check()
    msg = str(ei.value)
    assert str(bad) in msg and "move it aside" in msg and f"mv '{bad}' '{bad}.broken'" in msg
    assert store_problem(bad) == msg  # what the app's banner shows


@pytest.mark.parametrize("kind", BROKEN)
def test_cli_on_an_unreadable_store_one_line_exit_2(kind, tmp_path, capsys):
    from evalcore.cli import main

    bad = _break(kind, tmp_path)
    before = bad.read_bytes()
    code = main(["score", "--dataset", "summeval", "--dimension", "coherence", "--method", "geval", "--model", "m",
                 "--estimate-only", "--db", str(bad)]) if kind != "garbled-pages" else \
        main(["export", "--run", "x", "--db", str(bad)])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the local store ") and str(bad) in lines[0], err
    assert bad.read_bytes() == before  # nothing written into the broken file


def test_garbled_pages_found_when_read(tmp_path):
    """A file whose header is sound opens; the damage shows when its pages are read: still the clear message."""
    bad = _break("garbled-pages", tmp_path)
    st = Store(bad)
    with pytest.raises(StoreUnreadable, match="cannot be read"):
        for i in range(0, 1500, 50):
            st.cache_get(f"k{i}")
        st.check()


def test_locked_past_the_timeout_says_so(tmp_path, monkeypatch, capsys):
    from evalcore.cli import main

    # the timeout a connection waits (evalcore.store.dialect) and the one its message names (connection)
    monkeypatch.setattr(store_mod.dialect, "BUSY_TIMEOUT_S", 0.3)
    monkeypatch.setattr(store_mod.connection, "BUSY_TIMEOUT_S", 0.3)
    path = _sound_store(tmp_path / "judge.db", rows=10)
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreLocked) as ei:
            Store(path).cache_put("k", endpoint={"model": "m"}, request={}, response={"choices": []})
        assert str(path) in str(ei.value) and "stayed locked for more than 0.3 s" in str(ei.value)
        # in WAL mode readers are not blocked, a writer is: an import through the CLI says so in one line
        monkeypatch.setenv("EVALCORE_DB", str(path))
        examples = Path(__file__).resolve().parents[2] / "examples" / "my_ratings.csv"
        assert main(["import-dataset", str(examples), "--name", "locked out"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "stayed locked" in err[0]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert integrity_ok(path)
    assert Store(path).cache_count() == 10  # nothing half-written


# ------------------------------------------------------------------------------------ one writer per run
CHILD = textwrap.dedent("""
    import sys, time
    sys.path[:0] = [{root!r}, {here!r}]  # this checkout's evalcore, whatever is pip-installed
    from _judging import CAPS, CRITERIA, OneShot, dataset
    from tests import judge_calls
    from evalcore.judge.client import Endpoint
    from evalcore.store import Store
    store = Store({db!r})
    ds = dataset({n})
    if not store.has_dataset(ds.id):
        store.save_dataset(ds)
    judge_calls.score_dataset(ds, method=OneShot(), criteria_by_dim=CRITERIA, capabilities=CAPS, api_key="k",
                         endpoint=Endpoint(sys.argv[1], "loop-model"), store=store, concurrency=1,
                         run_id="tiny/shared")
""")


def _child(tmp_path: Path, db: Path, base_url: str, n: int) -> subprocess.Popen:
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=str(ROOT), here=str(HERE), db=str(db), n=n))
    return subprocess.Popen([sys.executable, str(script), base_url], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(cond, timeout=300.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


def _lease(db: Path):
    try:
        con = sqlite3.connect(str(db), timeout=5)
        try:
            return con.execute("SELECT pid, host, since FROM leases WHERE run_id = 'tiny/shared'").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None


def test_second_process_on_the_same_run_exits_2_and_no_request_is_repeated(tmp_path, monkeypatch, capsys):
    """The run's holder is a child process; the second is this one, through the CLI's own entry point."""
    from evalcore.cli import main

    monkeypatch.setenv(KEY_ENV, SECRET)
    db = tmp_path / "judge.db"
    with serve(latency_s=2.0) as srv:  # slow while the second process starts: the first holds the run meanwhile
        first = _child(tmp_path, db, srv.base_url, n=8)
        assert _wait_for(lambda: _lease(db) is not None and srv.requests_seen >= 1), first.stderr
        pid, host, since = _lease(db)
        assert pid == first.pid
        code = main(["score", "--dataset", "tiny", "--method", "geval", "--model", "loop-model", "--base-url",
                     srv.base_url, "--run", "tiny/shared", "--db", str(db), "--quiet", "--api-key-env", KEY_ENV])
        err = capsys.readouterr().err
        srv.latency_s = 0.05
        assert first.wait(60) == 0, first.stderr
        sent = list(srv.prompt_log)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"is being scored by another process (pid {pid} on {host}) since {since}" in lines[0]
    assert len(sent) == 8 and len(set(sent)) == 8  # every paid request sent once, by the lease holder only
    run = Store(db).load_run("tiny/shared")
    assert run.judgments["status"].eq("ok").all() and len(run.judgments) == 8
    assert Store(db).lease_holder("tiny/shared") is None  # released when the run ended
    assert integrity_ok(db)


def test_killed_run_shows_interrupted_then_resumes_without_repeating(tmp_path, monkeypatch, capsys):
    from evalcore.cli import main

    db = tmp_path / "judge.db"
    monkeypatch.setenv("EVALCORE_DB", str(db))
    with serve() as srv:
        srv.hold(5)  # the 5th request is held unanswered: the child dies with exactly that one in flight, arrived
        child = _child(tmp_path, db, srv.base_url, n=10)
        try:
            assert _wait_for(lambda: srv.held == 1 or child.poll() is not None), child.stderr
            assert srv.held == 1, child.stderr
        finally:
            child.kill()  # SIGKILL: no finally, no finish_run; the lease stays behind
            child.wait()
            srv.release()
        capsys.readouterr()
        assert main(["runs", "--dataset", "tiny", "--json"]) == 0
        (listed,) = json.loads(capsys.readouterr().out)
        assert listed["status"] == "interrupted"
        assert integrity_ok(db)
        st = Store(db)
        answered = len(st.load_run("tiny/shared").judgments)
        assert 0 < answered < 10
        before = srv.requests_seen
        run = judge_calls.score_dataset(dataset(10), method=OneShot(), criteria_by_dim=CRITERIA, capabilities=CAPS,
                                   endpoint=endpoint(srv), api_key="k", store=st, run_id="tiny/shared")
        resent = srv.prompt_log[before:]
    assert run.config["status"] == "done" and len(run.judgments) == 10 and run.judgments["status"].eq("ok").all()
    assert len(resent) == 10 - answered and not set(resent) & set(srv.prompt_log[:before - 1])


def test_lease_of_a_dead_process_is_taken_over_and_listed_interrupted(tmp_path):
    st = Store(tmp_path / "judge.db")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    st.create_run(run_id="r", dataset_id="tiny", method="oneshot", model="m")
    with st.write() as c:
        c.execute("INSERT INTO leases (run_id, pid, host, started, since, token) VALUES (?,?,?,?,?,?)",
                  ("r", gone.pid, leases_mod._HOST, "", "2026-01-01T00:00:00+00:00", "t"))
    assert st.list_runs()[0].config["status"] == "interrupted"
    lease = st.acquire_lease("r")
    assert st.lease_holder("r")["pid"] == os.getpid()
    assert st.list_runs()[0].config["status"] == "running"
    st.release_lease(lease)


def test_lease_held_on_another_host_is_respected(tmp_path):
    st = Store(tmp_path / "judge.db")
    st.create_run(run_id="r", dataset_id="tiny", method="oneshot", model="m")
    with st.write() as c:
        c.execute("INSERT INTO leases (run_id, pid, host, started, since, token) VALUES (?,?,?,?,?,?)",
                  ("r", 4242, "another-host", "", "2026-01-01T00:00:00+00:00", "t"))
    with pytest.raises(RunLeased, match=r"another process \(pid 4242 on another-host\) since 2026-01-01"):
        st.acquire_lease("r")
    assert st.list_runs()[0].config["status"] == "running"  # cannot be checked from here: not called interrupted


def test_two_threads_of_one_process_on_one_run(tmp_path):
    st = Store(tmp_path / "judge.db")
    with serve() as srv:
        srv.hold(1)  # the first thread's run stays in flight (its lease held) until the second has been refused
        box: dict = {}

        def first():
            box["run"] = judge_calls.score_dataset(dataset(4), method=OneShot(), criteria_by_dim=CRITERIA,
                                              capabilities=CAPS, endpoint=endpoint(srv), api_key="k", store=st,
                                              concurrency=1, run_id="tiny/t")

        th = threading.Thread(target=first)
        th.start()
        try:
            assert _wait_for(lambda: st.lease_holder("tiny/t") is not None)
            with pytest.raises(RunLeased, match="another thread of this process"):
                judge_calls.score_dataset(dataset(4), method=OneShot(), criteria_by_dim=CRITERIA, capabilities=CAPS,
                                          endpoint=endpoint(srv), api_key="k", store=st, run_id="tiny/t")
        finally:
            srv.release()
            th.join(120)
        assert len(srv.prompt_log) == len(set(srv.prompt_log)) == 4
    assert box["run"].judgments["status"].eq("ok").all()


# ------------------------------------------------------------------------------------------------ the app
def test_app_pages_show_the_banner_and_no_exception_on_a_broken_store(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    bad = _break("not-a-database", tmp_path)
    monkeypatch.setenv("EVALCORE_DB", str(bad))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "10")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    for page in ("pages/data.py", "pages/criteria.py", "pages/score.py"):
        if page != "pages/data.py":
            at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        banners = [e.value for e in at.error if "cannot be read" in e.value]
        assert len(banners) == 1, (page, [e.value for e in at.error])
        assert "move it aside" in banners[0] and "datasets uploaded here and runs scored here are not listed" \
            in banners[0]
    assert at.title[0].value == "Score"


def test_cli_listings_on_a_broken_store_say_so_and_keep_the_bundled_data(tmp_path, monkeypatch, capsys, caplog):
    from evalcore.cli import main

    bad = _break("truncated", tmp_path)
    monkeypatch.setenv("EVALCORE_DB", str(bad))
    assert main(["datasets", "--json"]) == 0
    ids = {d["id"] for d in json.loads(capsys.readouterr().out)}
    assert "summeval" in ids  # the bundled data still listed
    warned = [r.getMessage() for r in caplog.records if "local store unreadable" in r.getMessage()]
    assert len(warned) == 1 and str(bad) in warned[0] and "move it aside" in warned[0]
