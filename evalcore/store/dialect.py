"""The one seam between the store and its database: where SQLite and PostgreSQL differ, the store asks its dialect.

``EVALCORE_DB`` (or ``--db``, or ``Store(location)``) chooses: a ``postgresql://`` (or ``postgres://``) URL is a
:class:`PostgresDialect`, anything else a file path and a :class:`SqliteDialect` (the embedded default, unchanged).
What goes through here, and nowhere else:

============================  ==========================================  ===========================================
                              SQLite (sqlite3 + sqlite-utils)             PostgreSQL (psycopg 3, evalcore.store.postgres)
============================  ==========================================  ===========================================
connecting                    one file, WAL, busy timeout                 autocommit connection, lock_timeout
a write transaction           ``BEGIN IMMEDIATE`` (the file's write       ``BEGIN`` + a transaction advisory lock on
                              lock)                                       the store (one writer at a time, as SQLite)
rows by column name           sqlite-utils ``insert_all`` (OR REPLACE /   ``INSERT ... ON CONFLICT`` on the primary
                              OR IGNORE)                                  key
placeholders                  ``?``                                       ``?`` turned into ``%s``
``rowid``                     built in                                    a hidden identity column named ``rowid``
the schema version            ``PRAGMA user_version``                     a row in ``evalcore_schema_version``
migrations                    the steps' SQL, a backup copy first         the steps' SQL translated (postgres.ddl), or
                                                                          its PostgreSQL version; no copy (pg_dump)
one writer per run (leases)   the holder's pid and /proc on its host      a session advisory lock, released by the
                                                                          server when the holder's connection ends
health check                  ``PRAGMA quick_check``                      the tables the app lists can be read
============================  ==========================================  ===========================================

The store's own SQL (evalcore.store.*) is written once, portable (``COALESCE(SUM(x), 0)``, not SQLite's ``total``).
"""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union, cast

import pandas as pd
import sqlite_utils
from sqlite_utils.db import Table

from evalcore.store import postgres
from evalcore.store.postgres import PgConnection

BUSY_TIMEOUT_S = 30.0

# what the store's modules hold: a sqlite3 connection, or a psycopg one answering the same calls
DbConnection = Union[sqlite3.Connection, PgConnection]
Args = Union[Sequence[object], Mapping[str, object]]


class _SchemaTable(Table):
    """A table as the migrations made it (evalcore.store.schema). sqlite-utils creates a table it does not find and
    asks sqlite_master on every insert to know; here the table always exists, so an insert neither creates one (a
    missing table is sqlite's "no such table" error) nor spends that query."""

    def exists(self) -> bool:
        return True


class SqliteDialect:
    """The embedded store: one SQLite file."""

    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path

    def connect(self) -> sqlite3.Connection:
        # isolation_level=None: the store issues BEGIN IMMEDIATE / COMMIT itself
        c = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        c.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        enter_wal(c)
        c.execute("PRAGMA synchronous = NORMAL")  # safe with WAL: a crash loses at most the last commits
        return c

    def begin(self, c: DbConnection) -> None:
        c.execute("BEGIN IMMEDIATE")  # the write lock up front: no deadlock-prone read-to-write upgrade

    def insert(self, db: sqlite_utils.Database, table: str, rows: list[Mapping[str, object]], *,
               replace: bool, ignore: bool) -> int | None:
        """sqlite-utils' ``insert_all`` (``alter=False``: a key that is not a column is an error, never a new one)."""
        written = _SchemaTable(db, table).insert_all(cast("list[dict[str, Any]]", rows), alter=False,
                                                     replace=replace, ignore=ignore)
        return written.last_rowid

    def rows(self, db: sqlite_utils.Database, sql: str, args: Args) -> list[dict[str, object]]:
        return list(db.query(sql, dict(args) if isinstance(args, Mapping) else args))

    def frame(self, c: DbConnection, sql: str, args: Args) -> pd.DataFrame:
        return pd.read_sql_query(sql, c, params=args)  # type: ignore[arg-type]


def enter_wal(c: sqlite3.Connection, *, clock: Callable[[], float] = time.monotonic,
              sleep: Callable[[float], None] = time.sleep, patience_s: float = BUSY_TIMEOUT_S) -> None:
    """Put the file in WAL mode (it stays so: later openers find it there and change nothing).

    Turning a rollback-journal file (a store from before WAL, or one copied in) into WAL takes its exclusive lock
    from a shared one. When several processes open such a file at once, two can hold the shared lock and both ask
    to upgrade; SQLite then answers one of them "database is locked" at once, without its busy handler, since
    waiting would deadlock (https://www.sqlite.org/lockingv3.html, "deadlock"; https://www.sqlite.org/c3ref/busy_handler.html).
    So the busy timeout does not cover this one statement: it is tried again, with a jittered pause, until
    ``patience_s`` has passed (the same patience as the busy timeout)."""
    if str(c.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return
    deadline = clock() + patience_s
    while True:
        try:
            c.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or clock() >= deadline:
                raise
        sleep(random.uniform(0.01, 0.05))


class PostgresDialect:
    """The shared store: a PostgreSQL database (``EVALCORE_DB=postgresql://user@host/db``)."""

    name = "postgresql"

    def __init__(self, url: str) -> None:
        self.url = url
        self.scope = ""  # the database and schema the URL lands in: advisory lock keys are scoped to it
        self.leases = postgres.LeaseLocks(url)

    def connect(self) -> PgConnection:
        c = postgres.connect(self.url)
        if not self.scope:
            row = c.execute("SELECT current_database(), current_schema()").fetchone()
            self.scope = f"{row[0]}.{row[1]}" if row else ""
        return c

    def store_lock(self) -> int:
        return postgres.lock_key(self.scope, "store")

    def lease_lock(self, run_id: str) -> int:
        return postgres.lock_key(self.scope, "lease", run_id)

    def begin(self, c: DbConnection) -> None:
        c.execute("BEGIN")
        try:  # one writer at a time, as SQLite's write lock: the store's check-then-write steps stay atomic
            c.execute("SELECT pg_advisory_xact_lock(?)", (self.store_lock(),))
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def insert(self, c: PgConnection, table: str, rows: list[Mapping[str, object]], *, replace: bool,
               ignore: bool) -> int | None:
        return postgres.insert(c, table, rows, replace=replace, ignore=ignore)

    def rows(self, c: PgConnection, sql: str, args: Args) -> list[dict[str, object]]:
        cur = c.execute(sql, args)
        names = [d[0] for d in cur.description or []]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def frame(self, c: PgConnection, sql: str, args: Args) -> pd.DataFrame:
        """As ``pd.read_sql_query`` builds its frame from a DB-API cursor (records, floats coerced)."""
        cur = c.execute(sql, args)
        names = [d[0] for d in cur.description or []]
        return pd.DataFrame.from_records(cur.fetchall(), columns=names, coerce_float=True)


Dialect = Union[SqliteDialect, PostgresDialect]


def for_location(location: str) -> tuple[Dialect, Path | str]:
    """The dialect for a store location (``EVALCORE_DB``'s value) and how messages name it: a file path, or the
    URL without its password."""
    name = location_name(location)
    return (SqliteDialect(name), name) if isinstance(name, Path) else (PostgresDialect(location), name)


def location_name(location: str) -> Path | str:
    """How a store location is named (a store's ``path``): the file's path, or the URL without its password."""
    return postgres.redacted(location) if postgres.is_url(location) else Path(location)
