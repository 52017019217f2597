"""Issue 21 item 10: the store file replaced under a process that has it open (a backup restored with ``mv`` or
``cp`` while a run scores). The next write stops with StoreReplaced naming the file (CLI: one line, exit 2, like
every StoreError) and writes nothing; the file now at the path keeps every dataset, run and label, byte for byte."""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from tests import judge_calls

from evalcore import cli
from evalcore.store import Store, StoreError, StoreReplaced

from evalcore.testing.loopback import serve

from _judging import CAPS, CRITERIA, OneShot, dataset, endpoint, integrity_ok


def _checkpointed(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def _other_store(path: Path) -> Path:
    """A store holding other data: 2 datasets, 3 runs, 2 labels; one self-contained file (WAL checkpointed)."""
    st = Store(path)
    for name in ("restored-a", "restored-b"):
        st.save_dataset(dataset(dataset_id=name))
    for i in range(3):
        st.create_run(run_id=f"restored-run-{i}", dataset_id="restored-a", method="geval", model="m", status="done")
    st.save_label("restored-a", "d0", "coherence", "alice", 4.0)
    st.save_label("restored-a", "d1", "coherence", "alice", 2.0)
    st.close()
    _checkpointed(path)
    return path


def _contents(path: Path) -> tuple:
    st = Store(path)
    try:
        return (sorted(d["id"] for d in st.list_datasets()), sorted(r.run_id for r in st.list_runs()),
                len(st.label_rows()))
    finally:
        st.close()


@pytest.fixture
def live(tmp_path):
    """A store in use: a dataset saved, a run created and written to."""
    path = tmp_path / "evalcore.db"
    st = Store(path)
    st.save_dataset(dataset(dataset_id="live"))
    st.create_run(run_id="live-run", dataset_id="live", method="geval", model="m")
    yield path, st
    st.close()


def test_a_store_moved_over_the_open_one_refuses_the_next_write_and_stays_byte_identical(live, tmp_path):
    path, st = live
    backup = _other_store(tmp_path / "backup.db")
    copy = tmp_path / "restoring.db"
    shutil.copy(backup, copy)
    os.replace(copy, path)  # a restore while the run is scoring
    restored = path.read_bytes()
    with pytest.raises(StoreReplaced) as err:
        st.finish_run("live-run", status="done", stats={"n": 1})
    message = str(err.value)
    assert str(path) in message and "replaced" in message and "nothing was written" in message
    assert isinstance(err.value, StoreError)  # the CLI and the app banner show it as one line
    with pytest.raises(StoreReplaced):  # every later write too, not only the first
        st.save_label("live", "d0", "coherence", "bob", 3.0)
    st.close()  # closing the old handle (its checkpoint goes to the unlinked file) leaves the new one alone
    assert path.read_bytes() == restored
    assert integrity_ok(path)
    assert _contents(path) == (["restored-a", "restored-b"], ["restored-run-0", "restored-run-1", "restored-run-2"],
                               2)


def test_a_store_deleted_under_the_open_one_is_not_recreated_by_a_write(live):
    path, st = live
    os.unlink(path)
    with pytest.raises(StoreReplaced, match="moved away or deleted"):
        st.save_label("live", "d0", "coherence", "bob", 3.0)
    assert not path.exists()


def test_reads_and_writes_of_an_untouched_store_go_on(live):
    path, st = live
    st.finish_run("live-run", status="done", stats={})
    st.save_label("live", "d0", "coherence", "bob", 3.0)
    assert st.run_row("live-run")["status"] == "done" and len(st.label_rows()) == 1


def test_cli_shows_store_replaced_as_one_line_exit_2(monkeypatch, tmp_path, capsys):
    def replaced(args):
        raise StoreReplaced(f"the local store {tmp_path / 'x.db'} was replaced", path=tmp_path / "x.db")

    monkeypatch.setattr(cli, "build_parser", lambda: _Fixed(argparse.Namespace(), replaced))
    assert cli.main([]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: the local store") and "replaced" in err


class _Fixed:
    def __init__(self, args, func):
        args.func = func
        self.args = args

    def parse_args(self, argv):
        return self.args


def test_a_restore_while_a_run_scores_stops_the_run_and_keeps_the_restored_file(tmp_path):
    """The issue's case: the backup restored with ``mv`` mid-run. The run stops with StoreReplaced at its next
    write; the restored file keeps its 2 datasets, 3 runs and 2 labels, and passes integrity_check."""
    path = tmp_path / "evalcore.db"
    st = Store(path)
    backup = _other_store(tmp_path / "backup.db")
    box: dict = {}
    with serve(latency_s=0.2) as srv:
        def score():
            try:
                box["run"] = judge_calls.score_dataset(dataset(8), method=OneShot(), criteria_by_dim=CRITERIA,
                                                       capabilities=CAPS, endpoint=endpoint(srv), api_key="k", store=st,
                                                       concurrency=1, run_id="tiny/restore")
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                box["error"] = e

        th = threading.Thread(target=score)
        th.start()
        assert _wait_for(lambda: st.conn.execute("SELECT count(*) FROM judgments").fetchone()[0] >= 2)
        shutil.copy(backup, tmp_path / "restoring.db")
        os.replace(tmp_path / "restoring.db", path)
        restored = path.read_bytes()
        th.join(60)
        sent = len(srv.prompt_log)
    assert isinstance(box.get("error"), StoreReplaced), box
    assert sent < 8  # the run stopped; it did not go on paying for replies it cannot keep
    st.close()
    assert path.read_bytes() == restored and integrity_ok(path)
    assert _contents(path) == (["restored-a", "restored-b"], ["restored-run-0", "restored-run-1", "restored-run-2"],
                               2)


def _wait_for(cond, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False
