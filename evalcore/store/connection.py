"""The store's connection handling and errors. The embedded default is one SQLite file in WAL mode with a busy
timeout, so the app, a CLI run and a bench can write to it at the same time; ``EVALCORE_DB=postgresql://...`` is a
PostgreSQL database instead (what differs goes through evalcore.store.dialect). Each thread gets its own connection;
every write is one short transaction that takes the store's write lock up front (SQLite: ``BEGIN IMMEDIATE``, which
avoids the deadlock-prone read-to-write upgrade; PostgreSQL: an advisory lock on the store).

A store that cannot be read, stays locked, or was written by a newer release raises a :class:`StoreError` whose
``str()`` names the store and the way out, instead of a bare sqlite3 or psycopg error.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import math
import os
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, SupportsFloat, TypeVar

import pandas as pd
import sqlite_utils

from evalcore.store.dialect import (BUSY_TIMEOUT_S, Args, DbConnection, PostgresDialect, SqliteDialect,
                                    for_location as dialect_for)
from evalcore.store.postgres import PgConnection

F = TypeVar("F", bound=Callable[..., Any])


def now() -> str:
    """UTC now, ISO 8601 with milliseconds (two writes within one second still order by time)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def canonical_json(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _json_default(x: object) -> object:
    if hasattr(x, "item"):
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)


def dumps(x: object) -> str:
    return json.dumps(x, ensure_ascii=False, default=_json_default)


def float_or_null(value: SupportsFloat | str | None) -> float | None:
    """A score as stored: a float, or NULL for none or NaN."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def default_path() -> Path:
    """Where the default store lives: ``$EVALCORE_DB`` or ``~/.evalcore/evalcore.db``."""
    from evalcore import settings

    return settings.current().store_path()


# ------------------------------------------------------------------------------------------------------ errors
class StoreError(RuntimeError):
    """The local store cannot be used; ``str()`` is the one line to show on the command line (it names the file).
    ``public``: the same without the server's path or sqlite's words, for a visitor of a shared server
    (:func:`store_message`)."""

    public_text = "The server's local store cannot be used just now: nothing was saved. Tell the server's operator."

    def __init__(self, message: str, *, path: Path | str, detail: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.detail = detail

    @property
    def public(self) -> str:
        return self.public_text


def store_message(e: StoreError) -> str:
    """What a page shows a visitor for a store error: what happened and what to do, without the server's file path
    (the command line's ``str(e)`` names it; a web visitor has no use for it and should not learn it)."""
    return e.public


class StoreUnreadable(StoreError):
    """Corrupt, truncated, not a database, or not openable."""

    public_text = "The server's local store cannot be read: nothing was saved. Tell the server's operator."


class StoreReadOnly(StoreError):
    """The file (or its folder) cannot be written by this process: reading works, nothing can be saved."""

    public_text = ("The server's local store is read-only just now: nothing was saved. What is shown can still be "
                   "read; tell the server's operator.")


class StoreFull(StoreError):
    """The disk (or the quota) holding the store is full: the write was rolled back."""

    public_text = ("The server's disk is full: nothing was saved (what was saved before is intact). Tell the "
                   "server's operator.")


class StoreLocked(StoreError):
    """Another process held the write lock for longer than the busy timeout."""

    public_text = "The server's local store is busy with another write: nothing was saved. Try again in a moment."


class StoreTooNew(StoreError):
    """Written by a newer release (its schema version is above the one this code knows); left untouched."""


class StoreReplaced(StoreError):
    """The file at the store's path is no longer the one this handle opened (a backup restored over it, another
    store moved in): writing through the old handle would land in the unlinked file and its stale WAL would be
    replayed onto the new one, so the write is refused and the file at the path is left as it is. ``moved``: the
    path names another file (inode or device changed, or no file), not the same file rewritten in place."""

    def __init__(self, message: str, *, path: Path | str, detail: str = "", moved: bool = False) -> None:
        super().__init__(message, path=path, detail=detail)
        self.moved = moved


def replaced_message(path: Path | str, how: str) -> str:
    return (f"the local store {path} was replaced while this process had it open ({how}); nothing was written, "
            f"the file now at that path was left as it is. Restart the app or command to open the file now there.")


_UNREADABLE_CODES = ("SQLITE_NOTADB", "SQLITE_CORRUPT", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_AUTH")
_UNREADABLE_TEXTS = ("file is not a database", "malformed", "disk i/o error", "unable to open database")
# neither is a broken file: moving it aside would not help, and nothing in it is lost
_READONLY_CODES, _READONLY_TEXTS = ("SQLITE_READONLY", "SQLITE_PERM"), ("readonly database", "read-only")
_FULL_CODES, _FULL_TEXTS = ("SQLITE_FULL",), ("database or disk is full", "no space left")


def _is_db_error(err: BaseException) -> bool:
    return isinstance(err, sqlite3.Error) or type(err).__module__.startswith("psycopg")


def db_cause(err: BaseException | None) -> BaseException | None:
    """The sqlite3 or psycopg error behind ``err`` (pandas wraps it in its own DatabaseError), or None."""
    seen = 0
    while err is not None and seen < 5:
        if _is_db_error(err):
            return err
        err = err.__cause__ or err.__context__
        seen += 1
    return None


# PostgreSQL's SQLSTATE codes (Appendix A of its manual) for the same four ways a store cannot be used
_PG_LOCKED = ("55P03", "40P01", "40001")  # lock_not_available (lock_timeout), deadlock, serialization failure
_PG_READONLY = ("25006", "42501")  # read_only_sql_transaction, insufficient_privilege
_PG_FULL = ("53100",)  # disk_full
_PG_UNREACHABLE = ("08", "28", "3D000", "57P")  # connection, authorization, no such database, server shut down


def _pg_error(path: Path | str, err: BaseException) -> StoreError | None:
    """The StoreError for a psycopg error of a PostgreSQL store, or None."""
    code = str(getattr(err, "sqlstate", "") or "")
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if code in _PG_LOCKED:
        return StoreLocked(f"the store {path} stayed locked for more than {BUSY_TIMEOUT_S:g} s: another process (a "
                           f"scoring run, the app) is writing to it. Wait for it and try again.", path=path,
                           detail=text)
    if code in _PG_READONLY:
        return StoreReadOnly(f"the store {path} refuses writes from this user ({text}): nothing was written. Grant "
                             f"the database user the right to write, or point EVALCORE_DB at another database.",
                             path=path, detail=text)
    if code in _PG_FULL:
        return StoreFull(f"the disk of the PostgreSQL server holding the store {path} is full ({text}): the write "
                         f"was rolled back. Free some space there, then try again.", path=path, detail=text)
    if code.startswith(_PG_UNREACHABLE) or (not code and type(err).__name__ == "OperationalError"):
        return StoreUnreadable(f"the store {path} cannot be reached ({text}). Check that the PostgreSQL server "
                               f"runs and that EVALCORE_DB (CLI: --db) names its host, database and user.",
                               path=path, detail=text)
    return None


def store_error(path: Path | str, err: BaseException) -> StoreError | None:
    """The StoreError that explains ``err`` for the store at ``path``, or None (an error of another kind)."""
    if not isinstance(err, sqlite3.Error):
        return _pg_error(path, err) if _is_db_error(err) else None
    code = str(getattr(err, "sqlite_errorname", "") or "")
    text = str(err)
    low = text.lower()
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in low or "database table is locked" \
            in low:
        return StoreLocked(
            f"the local store {path} stayed locked for more than {BUSY_TIMEOUT_S:g} s: another process (a scoring "
            f"run, the app) is writing to it. Wait for it and try again, or use another store (--db or "
            f"EVALCORE_DB).", path=path, detail=text)
    if code.startswith(_READONLY_CODES) or any(t in low for t in _READONLY_TEXTS):
        return StoreReadOnly(
            f"the local store {path} is read-only for this process ({text}): nothing was written, and nothing in it "
            f"is lost. Make the file, its -wal and -shm files and their folder writable for the user running the "
            f"app or command, or point EVALCORE_DB (CLI: --db) at a writable file.", path=path, detail=text)
    if code.startswith(_FULL_CODES) or any(t in low for t in _FULL_TEXTS):
        return StoreFull(
            f"the disk holding the local store {path} is full ({text}): the write was rolled back, and what the "
            f"store held before is intact. Free some space there, then try again.", path=path, detail=text)
    if code.startswith(_UNREADABLE_CODES) or any(t in low for t in _UNREADABLE_TEXTS):
        return StoreUnreadable(unreadable_message(path, text), path=path, detail=text)
    return None


def unreadable_message(path: Path | str, detail: str) -> str:
    return (f"the local store {path} cannot be read ({detail}). It is only a cache of judge replies, your runs, "
            f"uploads and criteria versions: move it aside (mv '{path}' '{path}.broken'; what it held stays in "
            f"that file) and the app and CLI start a fresh one, or point EVALCORE_DB (CLI: --db) at another file.")


def guarded(fn: F) -> F:
    """``fn`` (a store method) with a database error of a broken or locked store turned into its StoreError."""

    @functools.wraps(fn)
    def wrapper(self: object, *args: object, **kw: object) -> object:
        try:
            return fn(self, *args, **kw)
        except StoreError:
            raise
        except Exception as e:
            cause = db_cause(e)
            translated = store_error(getattr(self, "path", "?"), cause) if cause is not None else None
            if translated is None:
                raise
            raise translated from e

    return wrapper  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------------- connections
def configured_location() -> str:
    """The store ``$EVALCORE_DB`` names (a file path or a ``postgresql://`` URL), else ``~/.evalcore/evalcore.db``."""
    from evalcore import settings

    return settings.current().db or str(settings.current().store_path())


class Connection:
    """Per-thread connections to one store (a SQLite file, or a PostgreSQL database: evalcore.store.dialect), and
    its write transaction."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.dialect, self.path = dialect_for(str(path) if path is not None else configured_location())
        if isinstance(self.dialect, SqliteDialect):
            self.dialect.path.parent.mkdir(parents=True, exist_ok=True)
        elif importlib.util.find_spec("psycopg") is None:
            raise StoreUnreadable(f"the store {self.path} is a PostgreSQL database, and its driver is not installed: "
                                  f"pip install 'judgescope[postgres]' (psycopg 3), or point EVALCORE_DB (CLI: --db) "
                                  f"at a SQLite file.", path=self.path, detail="psycopg is not installed")
        self._local = threading.local()
        self._conns: list[tuple[threading.Thread, DbConnection]] = []  # each connection and the thread it serves
        self._conns_lock = threading.Lock()
        self._identity: tuple[int, int, str | None] | None = None  # (st_dev, st_ino, store id) once identified
        self._replaced = False  # a write found another file at the path (StoreReplaced)

    @property
    def file(self) -> Path | None:
        """The SQLite file; None for a PostgreSQL store."""
        return self.dialect.path if isinstance(self.dialect, SqliteDialect) else None

    def identify(self) -> None:
        """Remember which store this handle opened: the store id kept inside it (the ``meta`` table, schema version
        2) and, for a file, its device and inode. Every write transaction checks them (:meth:`write`)."""
        st = os.stat(self.file) if self.file is not None else None
        self._identity = (st.st_dev if st else 0, st.st_ino if st else 0, self._store_id(self.conn))

    @staticmethod
    def _store_id(c: DbConnection) -> str | None:
        try:
            row = c.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        except sqlite3.OperationalError:  # no meta table: a file not migrated (yet)
            return None
        except Exception as e:  # the same on PostgreSQL (only ever asked outside a transaction before migrating)
            if not _is_db_error(e):
                raise
            return None
        return None if row is None else str(row[0])

    @staticmethod
    def _hand_back_wal(c: DbConnection) -> None:
        """The WAL file (``<path>-wal``, found by name) still holds this handle's last commits: the next process to
        open the file now at the path would replay them onto it and wipe what it holds. Checkpoint them into the
        file this handle opened (the moved or unlinked one: the connection keeps its descriptor) and empty the WAL.
        Best effort: a reader of this handle still inside a transaction keeps the checkpoint from finishing."""
        try:
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error:
            pass

    def _check_identity(self, c: DbConnection) -> None:
        """Raise StoreReplaced when the store is not the one identified: for a file, another inode or device (a file
        moved or restored over it, or none); for both backends, another store id (a connection of this handle
        opened after the swap; a PostgreSQL database dropped and made again). Not caught: a file copied over in
        place (same inode) while this handle's page cache looks valid to sqlite (in WAL mode it checks the WAL
        index, not the file), so restore with ``mv``, never ``cp`` over."""
        if self._identity is None:
            return
        dev, ino, store_id = self._identity
        if self.file is not None:
            try:
                st = os.stat(self.file)
            except FileNotFoundError:
                raise StoreReplaced(replaced_message(self.path, "the file was moved away or deleted"),
                                    path=self.path, moved=True) from None
            if (st.st_dev, st.st_ino) != (dev, ino):
                raise StoreReplaced(replaced_message(self.path, f"another file is at that path: inode {st.st_ino}, "
                                                                f"was {ino}"), path=self.path, moved=True)
        found = self._store_id(c)
        if store_id is not None and found != store_id:
            raise StoreReplaced(replaced_message(self.path, f"store id {found}, was {store_id}"), path=self.path)

    @property
    def conn(self) -> DbConnection:
        c = getattr(self._local, "conn", None)
        if c is None or (isinstance(c, PgConnection) and c.raw.closed):  # a server restart closed it: reconnect
            c = self.dialect.connect()
            self._local.conn = c
            self._local.db = None
            with self._conns_lock:
                self._release_ended_threads()
                self._conns.append((threading.current_thread(), c))
        return c

    def _release_ended_threads(self) -> None:
        """Let go of the connections of threads that have ended (with ``_conns_lock`` held). Streamlit runs every
        page load's script in a thread of its own: kept, one connection per page load ever served piled up (on
        PostgreSQL, 'too many clients' after a few hundred loads). A PostgreSQL connection is closed here; a SQLite
        one may only be closed on its own thread, so it is dropped and closes when collected."""
        live: list[tuple[threading.Thread, DbConnection]] = []
        for thread, c in self._conns:
            if thread.is_alive():
                live.append((thread, c))
            elif not isinstance(c, sqlite3.Connection):
                with contextlib.suppress(Exception):  # a connection the server already dropped
                    c.close()
        self._conns = live

    @property
    def db(self) -> sqlite_utils.Database:
        """sqlite-utils over this thread's connection (a SQLite store only)."""
        d = getattr(self._local, "db", None)
        if d is None:
            c = self.conn
            if not isinstance(c, sqlite3.Connection):
                raise TypeError(f"the store {self.path} is a PostgreSQL database: it has no sqlite-utils handle")
            d = sqlite_utils.Database(c)
            self._local.db = d
        return d

    @contextlib.contextmanager
    def write(self) -> Iterator[DbConnection]:
        """One write transaction. Re-entrant: inside an open one (this thread's connection), the block joins it, so
        several writes (a dataset and its runs, evalcore.importers.save_import) commit or roll back together."""
        c = self.conn
        if c.in_transaction:
            yield c
            return
        try:
            self.dialect.begin(c)
        except Exception as e:  # a caller's own ``with store.write():`` meets a locked store here
            cause = db_cause(e)
            translated = store_error(self.path, cause) if cause is not None else None
            if translated is None:
                raise
            raise translated from e
        try:
            self._check_identity(c)
        except BaseException as e:
            c.execute("ROLLBACK")
            if isinstance(e, StoreReplaced) and e.moved:
                self._replaced = True
                self._hand_back_wal(c)
            raise
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        else:
            c.execute("COMMIT")

    def _insert(self, table: str, rows: Iterable[Mapping[str, object]], *, replace: bool = False,
                ignore: bool = False) -> int | None:
        """Rows written into ``table`` by column name (sqlite-utils' ``insert_all``; on PostgreSQL ``INSERT ... ON
        CONFLICT``): ``replace`` is INSERT OR REPLACE, ``ignore`` INSERT OR IGNORE. Only inside :meth:`write` on this
        thread's connection: sqlite-utils then joins that transaction through a savepoint instead of committing its
        own, so the row commits or rolls back with the rest. A key that is not a column is an error, never a new
        column (the schema is the migrations'). Returns the last row's id (``last_rowid``)."""
        c = self.conn
        if not c.in_transaction:
            raise RuntimeError(f"a write to {table} outside a write transaction (use `with self.write():`)")
        if isinstance(self.dialect, SqliteDialect):
            return self.dialect.insert(self.db, table, list(rows), replace=replace, ignore=ignore)
        assert isinstance(c, PgConnection)
        return self.dialect.insert(c, table, list(rows), replace=replace, ignore=ignore)

    def rows(self, sql: str, args: Args = ()) -> list[dict[str, Any]]:
        """The rows of a query as dicts (sqlite-utils' reader on SQLite)."""
        if isinstance(self.dialect, SqliteDialect):
            return self.dialect.rows(self.db, sql, args)
        c = self.conn
        assert isinstance(c, PgConnection)
        return self.dialect.rows(c, sql, args)

    def frame(self, sql: str, args: Args = ()) -> pd.DataFrame:
        """The rows of a query as a frame (``pd.read_sql_query`` on SQLite; the same frame from PostgreSQL)."""
        c = self.conn
        if isinstance(self.dialect, SqliteDialect):
            return self.dialect.frame(c, sql, args)
        assert isinstance(c, PgConnection)
        return self.dialect.frame(c, sql, args)

    def close(self) -> None:
        with self._conns_lock:
            for _thread, c in self._conns:
                try:
                    if self._replaced:  # again, now that no read of this handle holds the WAL open
                        self._hand_back_wal(c)
                    c.close()
                except sqlite3.ProgrammingError:
                    pass  # made on another thread; the process exit closes it
            self._conns = []
        if isinstance(self.dialect, PostgresDialect):
            self.dialect.leases.close()
        self._local = threading.local()
