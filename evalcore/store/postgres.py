"""The store on a PostgreSQL server (``EVALCORE_DB=postgresql://...``), through psycopg 3.

The store's modules speak one SQL, written for SQLite with ``?`` placeholders; this module makes a psycopg
connection answer it the way ``sqlite3`` does, so that the store's methods are the same code on both backends:

* :class:`PgConnection` / :class:`PgCursor`: ``execute(sql, args)`` with ``?`` placeholders (turned into psycopg's
  ``%s``, a literal ``%`` doubled), ``fetchone`` / ``fetchall`` / iteration over tuples, ``description``,
  ``rowcount``, ``in_transaction``. The connection is in autocommit mode, as the store's SQLite connections are
  (``isolation_level=None``): a read is its own statement, and a write is the ``BEGIN`` ... ``COMMIT`` the store's
  ``write()`` issues.
* :func:`ddl`: a migration step's SQLite DDL as PostgreSQL's (``BLOB`` -> ``BYTEA``, ``REAL`` -> ``DOUBLE
  PRECISION``, ``INTEGER PRIMARY KEY AUTOINCREMENT`` -> an identity column, ``TEXT`` compared bytewise as SQLite
  does (``COLLATE "C"``: the same ORDER BY on both backends), ``INSERT OR IGNORE`` -> ``ON CONFLICT DO NOTHING``).
  PostgreSQL has no ``rowid``: each table gets a ``rowid`` identity column that the store's "in the order written"
  reads use, and that a ``SELECT *`` does not return (:class:`PgCursor` leaves it out), as SQLite's does not.
* :func:`insert`: sqlite-utils' ``insert_all`` (rows by column name; ``replace`` / ``ignore``) as ``INSERT ... ON
  CONFLICT``, with the conflict target read from the table's primary key.

psycopg is imported only here and only when a PostgreSQL store is opened: a SQLite store needs nothing of it
(``pip install "judgescope[postgres]"``).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import threading
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:  # pragma: no cover
    import psycopg

URL_SCHEMES = ("postgresql://", "postgres://")
# the version row that stands for SQLite's PRAGMA user_version
VERSION_TABLE = "evalcore_schema_version"
LOCK_TIMEOUT_S = 30.0  # as SQLite's busy timeout (connection.BUSY_TIMEOUT_S)


def is_url(location: str) -> bool:
    return location.startswith(URL_SCHEMES)


def redacted(url: str) -> str:
    """The URL without its password: what messages and logs show."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


@functools.lru_cache(maxsize=2048)
def placeholders(sql: str) -> str:
    """``?`` outside quotes -> ``%s``; every ``%`` doubled (psycopg reads ``%`` everywhere, in literals too)."""
    out: list[str] = []
    quote = ""
    for ch in sql:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "?":
            out.append("%s")
            continue
        out.append("%%" if ch == "%" else ch)
    return "".join(out)


_STAR = re.compile(r"^\s*SELECT\s+(DISTINCT\s+)?(\w+\.)?\*", re.IGNORECASE)


class PgCursor:
    """What the store reads of a sqlite3 cursor. A ``SELECT *`` leaves out the hidden ``rowid`` column."""

    def __init__(self, cur: psycopg.Cursor[tuple[object, ...]], sql: str) -> None:
        self._cur = cur
        names = [d.name for d in cur.description] if cur.description else []
        # the hidden rowid of each table a SELECT * reads (a join: several)
        self._drop = {i for i, n in enumerate(names) if n == "rowid"} if _STAR.match(sql) else set()

    @property
    def description(self) -> list[tuple[str, None, None, None, None, None, None]] | None:
        if self._cur.description is None:
            return None
        return [(d.name, None, None, None, None, None, None) for i, d in enumerate(self._cur.description)
                if i not in self._drop]

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    def _row(self, row: tuple[object, ...]) -> tuple[object, ...]:
        return row if not self._drop else tuple(v for i, v in enumerate(row) if i not in self._drop)

    # typed as sqlite3's cursor is (typeshed: Any): a row's values are what the query selected
    def fetchone(self) -> Any:
        row = self._cur.fetchone()
        return None if row is None else self._row(row)

    def fetchall(self) -> list[Any]:
        return [self._row(r) for r in self._cur.fetchall()]

    def __iter__(self) -> Iterator[Any]:
        return (self._row(r) for r in self._cur)


def _value(x: object) -> object:
    """A value as sqlite3 would store it: a bool as 0/1, a NaN as NULL, a numpy scalar as its Python value."""
    if isinstance(x, bool):
        return int(x)
    item = getattr(x, "item", None)
    if item is not None and not isinstance(x, (str, bytes)):
        x = item()
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def _args(args: Sequence[object] | Mapping[str, object]) -> tuple[object, ...]:
    return tuple(_value(a) for a in (args.values() if isinstance(args, Mapping) else args))


class PgConnection:
    """One psycopg connection, answering the store's sqlite3-style calls (see the module's docstring)."""

    def __init__(self, raw: psycopg.Connection[tuple[object, ...]]) -> None:
        self.raw = raw
        self._columns: dict[str, list[str]] = {}
        self._keys: dict[str, list[str]] = {}
        self._ids: dict[str, str] = {}

    def execute(self, sql: str, args: Sequence[object] | Mapping[str, object] = ()) -> PgCursor:
        cur = self.raw.cursor()
        cur.execute(placeholders(sql), _args(args))  # type: ignore[arg-type]  # the SQL is the store's own
        return PgCursor(cur, sql)

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        with self.raw.cursor() as cur:
            cur.executemany(placeholders(sql), [_args(r) for r in rows])  # type: ignore[arg-type]

    def script(self, sql: str) -> None:
        """One statement as written (a migration step: no placeholders, its ``%`` left alone)."""
        with self.raw.cursor() as cur:
            cur.execute(sql.encode())  # bytes: psycopg sends it as is, without reading placeholders

    def commit(self) -> None:
        """As sqlite3's in autocommit mode outside a transaction: nothing to do (a write commits in ``write()``)."""
        if self.in_transaction:
            self.raw.execute("COMMIT")

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self.raw.close()

    def columns(self, table: str) -> list[str]:
        if table not in self._columns:
            rows = self.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                                "current_schema() AND table_name = ? ORDER BY ordinal_position", (table,)).fetchall()
            self._columns[table] = [str(r[0]) for r in rows]
        return self._columns[table]

    def id_column(self, table: str) -> str:
        """What SQLite's rowid is for ``table``: its integer primary key when it has one (``label_id``), else the
        hidden ``rowid`` column."""
        if table not in self._ids:
            key = self.primary_key(table)
            row = None if len(key) != 1 else self.execute(
                "SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = ? AND column_name = ?", (table, key[0])).fetchone()
            self._ids[table] = key[0] if row and str(row[0]) in ("bigint", "integer", "smallint") else "rowid"
        return self._ids[table]

    def primary_key(self, table: str) -> list[str]:
        if table not in self._keys:
            rows = self.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(?) AND i.indisprimary "
                "ORDER BY array_position(i.indkey::int2[], a.attnum)", (_quoted(table),)).fetchall()
            self._keys[table] = [str(r[0]) for r in rows]
        return self._keys[table]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def connect(url: str) -> PgConnection:
    import psycopg

    raw = psycopg.connect(url, autocommit=True)
    raw.execute(f"SET lock_timeout = '{int(LOCK_TIMEOUT_S * 1000)}ms'")
    return PgConnection(raw)


def insert(c: PgConnection, table: str, rows: list[Mapping[str, object]], *, replace: bool = False,
           ignore: bool = False) -> int | None:
    """Rows into ``table`` by column name, as sqlite-utils' ``insert_all`` writes them: ``replace`` is SQLite's
    ``INSERT OR REPLACE`` (a row with the same primary key is overwritten, columns not given set to their default),
    ``ignore`` its ``INSERT OR IGNORE``. The id of the row written when it is one (the table's integer key, else its
    ``rowid``), as ``last_rowid``."""
    if not rows:
        return None
    cols = list(dict.fromkeys(k for r in rows for k in r))
    sql = (f"INSERT INTO {_quoted(table)} ({', '.join(_quoted(k) for k in cols)}) "
           f"VALUES ({', '.join('?' for _ in cols)})")
    if replace:
        key = c.primary_key(table)
        sets = [f"{_quoted(k)} = EXCLUDED.{_quoted(k)}" for k in cols if k not in key]
        sets += [f"{_quoted(k)} = DEFAULT" for k in c.columns(table) if k not in cols and k not in key
                 and k != "rowid"]
        target = ", ".join(_quoted(k) for k in key)
        sql += f" ON CONFLICT ({target}) DO UPDATE SET {', '.join(sets)}" if sets else " ON CONFLICT DO NOTHING"
    elif ignore:
        sql += " ON CONFLICT DO NOTHING"
    values = [tuple(r.get(k) for k in cols) for r in rows]
    if len(values) > 1:
        c.executemany(sql, values)
        return None
    row = c.execute(sql + f" RETURNING {_quoted(c.id_column(table))}", values[0]).fetchone()
    return None if row is None else int(row[0])


# ------------------------------------------------------------------------------------------------ migrations
_AUTOINCREMENT = re.compile(r"INTEGER\s+PRIMARY\s+KEY\s+AUTOINCREMENT", re.IGNORECASE)
_OR_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+INTO", re.IGNORECASE)
_TYPES = [(re.compile(r"\bBLOB\b"), "BYTEA"), (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
          (re.compile(r"\bTEXT\b"), 'TEXT COLLATE "C"')]
_CREATE_TABLE = re.compile(r"^\s*CREATE\s+TABLE", re.IGNORECASE)
_ADD_COLUMN = re.compile(r"^\s*ALTER\s+TABLE\s+\S+\s+ADD\s+COLUMN", re.IGNORECASE)


def ddl(sql: str) -> str:
    """A migration statement written for SQLite, as PostgreSQL's (see the module's docstring). A statement using
    SQLite's own functions (json_extract, ...) has a PostgreSQL version written out beside it in
    :mod:`evalcore.store.schema` instead."""
    if _CREATE_TABLE.match(sql) or _ADD_COLUMN.match(sql):
        sql = _AUTOINCREMENT.sub("BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", sql)
        for pattern, pg in _TYPES:
            sql = pattern.sub(pg, sql)
    if _CREATE_TABLE.match(sql):
        end = sql.rstrip().rindex(")")
        sql = sql[:end] + ', "rowid" BIGINT GENERATED BY DEFAULT AS IDENTITY' + sql[end:]
    if _OR_IGNORE.match(sql):
        sql = _OR_IGNORE.sub("INSERT INTO", sql).rstrip().rstrip(";") + " ON CONFLICT DO NOTHING"
    return sql.replace("lower(hex(randomblob(16)))", "md5(random()::text || clock_timestamp()::text)")


# ---------------------------------------------------------------------------------------------------- locks
def lock_key(*parts: str) -> int:
    """A signed 64-bit advisory-lock key for ``parts`` (the store's database and schema, a run id)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class LeaseLocks:
    """Session advisory locks, one connection each, held while a run is scored: PostgreSQL releases a lock when its
    session ends, so a scorer killed on any host lets go of its run without a heartbeat or a look at /proc."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._held: dict[str, PgConnection] = {}
        self._lock = threading.Lock()

    def take(self, token: str, key: int) -> bool:
        c = connect(self.url)
        row = c.execute("SELECT pg_try_advisory_lock(?)", (key,)).fetchone()
        if not (row and row[0]):
            c.close()
            return False
        with self._lock:
            self._held[token] = c
        return True

    def give_back(self, token: str) -> None:
        with self._lock:
            c = self._held.pop(token, None)
        if c is not None:
            c.close()  # ends the session: the lock goes with it

    def close(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for c in held:
            c.close()


def lock_held(c: PgConnection, key: int) -> bool:
    """Whether some session (of any host) holds the advisory lock ``key`` in this database."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    row = c.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                    "AND classid::bigint = ? AND objid::bigint = ? AND objsubid = 1)",
                    (unsigned >> 32, unsigned & 0xFFFFFFFF)).fetchone()
    return bool(row and row[0])
