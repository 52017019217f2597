"""One writer per run: a lease row (pid, host, process start, since, token) that a second process meets; a
"running" run whose holder is gone is listed "interrupted". Also the store's health check.

Whether the holder is gone: on SQLite (one host) its pid and /proc; on PostgreSQL (scorers on several hosts) a
session advisory lock the holder takes on its own connection for as long as it scores (evalcore.store.postgres
LeaseLocks): the server drops it when that connection ends, so a holder killed on any host lets go at once, with no
heartbeat and no clock to trust but the database's.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

from evalcore.store import postgres
from evalcore.store.connection import Connection, StoreUnreadable, now, unreadable_message
from evalcore.store.dialect import DbConnection, PostgresDialect

_HOST = socket.gethostname()


class RunLeased(RuntimeError):
    """Another live process is scoring this run (one writer per run)."""

    def __init__(self, run_id: str, holder: dict[str, Any]) -> None:
        who = "another thread of this process" if _is_this_process(holder) else "another process"
        super().__init__(f"run {run_id!r} is being scored by {who} (pid {holder['pid']} on {holder['host']}) since "
                         f"{holder['since']}; wait for it to finish, or stop it (a lease whose process is gone is "
                         f"taken over)")
        self.run_id = run_id
        self.holder = holder


def _proc_start(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux /proc), to tell a reused pid apart; "" elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()
    except (OSError, IndexError):
        return ""


def _proc_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return ""


def process_alive(pid: int, host: str, started: str = "") -> bool | None:
    """True/False for a process on this host; None when it runs on another host (cannot be checked from here)."""
    if host != _HOST:
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):
        return False
    if _proc_state(int(pid)) in ("Z", "X"):  # killed, not yet reaped by its parent
        return False
    if started and _proc_start(int(pid)) not in ("", started):
        return False  # the pid was reused by another process
    return True


def _is_this_process(holder: dict[str, Any]) -> bool:
    return holder.get("host") == _HOST and int(holder.get("pid", -1)) == os.getpid()


def _lease_row(c: DbConnection, run_id: str) -> dict[str, Any] | None:
    cur = c.execute("SELECT run_id, pid, host, started, since, token FROM leases WHERE run_id = ?", (run_id,))
    row = cur.fetchone()
    return None if row is None else dict(zip([d[0] for d in cur.description or ()], row))


class LeasesStore(Connection):
    def check(self, *, full_up_to_bytes: int = 256 * 2**20) -> None:
        """Read every page (``PRAGMA quick_check``, for a file up to ``full_up_to_bytes``; a bigger one reads the
        tables the app lists: runs, datasets, criteria, leases); raise StoreUnreadable unless all is well. A
        PostgreSQL store (the server checks its own pages) reads those tables."""
        size = self.file.stat().st_size if self.file is not None and self.file.exists() else 0
        if self.file is None or size > full_up_to_bytes:
            for table in ("runs", "datasets", "criteria", "leases"):
                self.conn.execute(f"SELECT count(*), max(rowid) FROM {table}").fetchall()
            return
        rows = [r[0] for r in self.conn.execute("PRAGMA quick_check").fetchall()]
        if rows != ["ok"]:
            raise StoreUnreadable(unreadable_message(self.path, "; ".join(str(r) for r in rows[:3])), path=self.path,
                                  detail="; ".join(str(r) for r in rows))

    def _holder_alive(self, held: dict[str, Any]) -> bool:
        """Whether the lease's holder may still be scoring (another host's process counts as alive on SQLite)."""
        if isinstance(self.dialect, PostgresDialect):
            return postgres.lock_held(self.conn, self.dialect.lease_lock(held["run_id"]))  # type: ignore[arg-type]
        return process_alive(held["pid"], held["host"], held["started"] or "") is not False

    def acquire_lease(self, run_id: str) -> dict[str, Any]:
        """Take the run's lease for this process (one writer per run): raise ``RunLeased`` when a live process holds
        it; a lease whose process is gone (killed) is taken over. Returns the lease (pass it to ``release_lease``)."""
        token = uuid.uuid4().hex
        mine = {"run_id": run_id, "pid": os.getpid(), "host": _HOST, "started": _proc_start(os.getpid()),
                "since": now(), "token": token}
        pg = self.dialect if isinstance(self.dialect, PostgresDialect) else None
        with self.write() as c:
            held = _lease_row(c, run_id)
            if held is not None and self._holder_alive(held):
                raise RunLeased(run_id, held)
            if pg is not None and not pg.leases.take(token, pg.lease_lock(run_id)):
                raise RunLeased(run_id, held or {"pid": 0, "host": "another session", "since": "?"})
            try:
                self._insert("leases", [mine], replace=True)
            except BaseException:
                if pg is not None:
                    pg.leases.give_back(token)
                raise
        return mine

    def release_lease(self, lease: dict[str, Any] | None) -> None:
        if lease is None:
            return
        try:
            with self.write() as c:
                c.execute("DELETE FROM leases WHERE run_id = ? AND token = ?", (lease["run_id"], lease["token"]))
        finally:
            if isinstance(self.dialect, PostgresDialect):
                self.dialect.leases.give_back(lease["token"])

    def lease_holder(self, run_id: str) -> dict[str, Any] | None:
        return _lease_row(self.conn, run_id)

    def live_status(self, run_id: str, status: str | None) -> str | None:
        """A run stored as "running" whose process is gone (killed, crashed) is "interrupted"."""
        if status != "running":
            return status
        held = _lease_row(self.conn, run_id)
        if held is None or not self._holder_alive(held):
            return "interrupted"
        return status
