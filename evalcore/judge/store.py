"""The local SQLite store: response cache, runs and their judgments, criteria versions, user datasets.

One file (default ``$EVALCORE_DB`` or ``~/.evalcore/evalcore.db``) in WAL mode with a busy timeout, so the app, a
CLI run and a bench can write to it at the same time. Each thread gets its own connection; every write is one short
``BEGIN IMMEDIATE`` transaction (taking the write lock up front avoids the deadlock-prone read-to-write upgrade).
Tables are created with sqlite-utils; the per-judgment hot path uses plain prepared statements.

Nothing here ever holds an API key: cache keys and run configs are built from ``Endpoint.identity()``.

Tables
------
cache        key (sha256 of canonical JSON of endpoint identity + model + request.params()), endpoint, model,
             request, response (JSON), usage (JSON), latency_s, created_at
runs         run_id, dataset_id, method, model, label, config (JSON), parser, created_at, updated_at, status, stats
judgments    run_id, item_id, dimension, criteria_hash, raw, value, status, reason, estimator, detail (JSON)
comparisons  run_id, pair_id, doc_id, item_first, item_second, dimension, order, criteria_hash, raw, verdict, value,
             status, reason, estimator, detail (JSON)
criteria     dataset_id, dimension, hash, task_introduction, definition, scale_min, scale_max, steps, note, created_at
datasets     id, name, task, description, citation, origin, dimensions (JSON), meta (JSON), created_at,
             + the frames (documents, items, human_scores, annotations, preferences) as parquet blobs
leases       run_id, pid, host, started (the process's start time, to tell a reused pid), since, token: the one
             process scoring a run; a "running" run whose holder is gone is listed "interrupted"
labels       human labels made on the Label page, one row per label or skip (see "human labels" below)
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import io
import json
import math
import os
import socket
import sqlite3
import threading
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import sqlite_utils

from evalcore.judge.types import Criteria
from evalcore.model import (
    COMPARISON_COLUMNS,
    JUDGMENT_COLUMNS,
    Dataset,
    Dimension,
    Run,
    empty_frame,
)

BUSY_TIMEOUT_S = 30.0
FRAMES = ("documents", "items", "human_scores", "annotations", "preferences")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(identity: dict[str, Any], params: dict[str, Any]) -> str:
    """The cache key: sha256 of canonical JSON of (endpoint identity without key, model, request params)."""
    return hashlib.sha256(canonical_json([identity, identity.get("model"), params]).encode()).hexdigest()


def _json_default(x: Any) -> Any:
    if hasattr(x, "item"):
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)


def _value(row: dict[str, Any]) -> float | None:
    """A row's score as stored: a float, or NULL for none or NaN."""
    value = row.get("value")
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _dumps(x: Any) -> str:
    return json.dumps(x, ensure_ascii=False, default=_json_default)


class Store:
    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            path = os.environ.get("EVALCORE_DB") or Path.home() / ".evalcore" / "evalcore.db"
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._init_schema()

    # ------------------------------------------------------------------------------------------ connections
    @property
    def conn(self) -> sqlite3.Connection:
        c = getattr(self._local, "conn", None)
        if c is None:
            # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves
            c = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            c.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("PRAGMA synchronous = NORMAL")  # safe with WAL: a crash loses at most the last commits
            self._local.conn = c
            with self._conns_lock:
                self._conns.append(c)
        return c

    @property
    def db(self) -> sqlite_utils.Database:
        d = getattr(self._local, "db", None)
        if d is None:
            d = sqlite_utils.Database(self.conn)
            self._local.db = d
        return d

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction. Re-entrant: inside an open one (this thread's connection), the block joins it, so
        several writes (a dataset and its runs, evalcore.importers.save_import) commit or roll back together."""
        c = self.conn
        if c.in_transaction:
            yield c
            return
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        else:
            c.execute("COMMIT")

    def close(self) -> None:
        with self._conns_lock:
            for c in self._conns:
                try:
                    c.close()
                except sqlite3.ProgrammingError:
                    pass  # made on another thread; the process exit closes it
            self._conns = []
        self._local = threading.local()

    def _init_schema(self) -> None:
        db = self.db
        with self.write():
            db["cache"].create({"key": str, "endpoint": str, "model": str, "request": str, "response": str,
                                "usage": str, "latency_s": float, "created_at": str}, pk="key", if_not_exists=True)
            db["runs"].create({"run_id": str, "dataset_id": str, "method": str, "model": str, "label": str,
                               "config": str, "parser": str, "created_at": str, "updated_at": str, "status": str,
                               "stats": str}, pk="run_id", if_not_exists=True)
            db["judgments"].create({"run_id": str, "item_id": str, "dimension": str, "criteria_hash": str,
                                    "raw": str, "value": float, "status": str, "reason": str, "estimator": str,
                                    "detail": str, "created_at": str},
                                   pk=("run_id", "item_id", "dimension", "criteria_hash"), if_not_exists=True)
            db["comparisons"].create({"run_id": str, "pair_id": str, "doc_id": str, "item_first": str,
                                      "item_second": str, "dimension": str, "order": str, "criteria_hash": str,
                                      "raw": str, "verdict": str, "value": float, "status": str, "reason": str,
                                      "estimator": str, "detail": str, "created_at": str},
                                     pk=("run_id", "pair_id", "order", "dimension", "criteria_hash"),
                                     if_not_exists=True)
            db["criteria"].create({"dataset_id": str, "dimension": str, "hash": str, "task_introduction": str,
                                   "definition": str, "scale_min": int, "scale_max": int, "steps": str, "note": str,
                                   "created_at": str}, pk=("dataset_id", "dimension", "hash"), if_not_exists=True)
            db["datasets"].create({"id": str, "name": str, "task": str, "description": str, "citation": str,
                                   "origin": str, "dimensions": str, "meta": str, "created_at": str,
                                   **{f: bytes for f in FRAMES}}, pk="id", if_not_exists=True)
            db["runs"].create_index(["dataset_id"], if_not_exists=True)
            db["leases"].create({"run_id": str, "pid": int, "host": str, "started": str, "since": str,
                                 "token": str}, pk="run_id", if_not_exists=True)
            # which endpoint answered each request a run sent (several endpoints: evalcore.judge.routing)
            db["answers"].create({"run_id": str, "key": str, "task": str, "dimension": str, "answered_by": str,
                                  "prompt_tokens": int, "cached_tokens": int, "latency_s": float, "created_at": str},
                                 pk=("run_id", "key", "task"), if_not_exists=True)

    # ------------------------------------------------------------------------------------------ cache
    def cache_get(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT response, latency_s FROM cache WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return {"response": json.loads(row[0]), "latency_s": row[1]}

    def cache_has(self, keys: list[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            q = f"SELECT key FROM cache WHERE key IN ({','.join('?' * len(chunk))})"
            found.update(r[0] for r in self.conn.execute(q, chunk))
        return found

    def _cache_rows(self, entries: list[dict[str, Any]]) -> list[tuple]:
        return [(e["key"], canonical_json(e["endpoint"]), e["endpoint"].get("model", ""), canonical_json(e["request"]),
                 _dumps(e["response"]), _dumps(e["response"].get("usage", {})), e.get("latency_s", 0.0), now())
                for e in entries]

    _CACHE_SQL = ("INSERT OR REPLACE INTO cache (key, endpoint, model, request, response, usage, latency_s, created_at)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?, ?)")

    def cache_put(self, key: str, *, endpoint: dict[str, Any], request: dict[str, Any], response: dict[str, Any],
                  latency_s: float = 0.0) -> None:
        rows = self._cache_rows([{"key": key, "endpoint": endpoint, "request": request, "response": response,
                                  "latency_s": latency_s}])
        with self.write() as c:
            c.executemany(self._CACHE_SQL, rows)

    def cache_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM cache").fetchone()[0])

    # ------------------------------------------------------------------------------------------ runs
    def create_run(self, *, run_id: str, dataset_id: str, method: str, model: str, label: str = "",
                   config: dict[str, Any] | None = None, parser: str = "", status: str = "running") -> None:
        """Create the run row, or update the config/status of an existing one (resume keeps created_at)."""
        cfg = _dumps(config or {})
        with self.write() as c:
            existing = c.execute("SELECT created_at FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if existing:
                c.execute("UPDATE runs SET dataset_id=?, method=?, model=?, label=?, config=?, parser=?, status=?,"
                          " updated_at=? WHERE run_id=?",
                          (dataset_id, method, model, label, cfg, parser, status, now(), run_id))
            else:
                c.execute("INSERT INTO runs (run_id, dataset_id, method, model, label, config, parser, created_at,"
                          " updated_at, status, stats) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                          (run_id, dataset_id, method, model, label, cfg, parser, now(), now(), status, "{}"))

    def finish_run(self, run_id: str, *, status: str, stats: dict[str, Any]) -> None:
        with self.write() as c:
            c.execute("UPDATE runs SET status=?, stats=?, updated_at=? WHERE run_id=?",
                      (status, _dumps(stats), now(), run_id))

    def run_exists(self, run_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    def run_row(self, run_id: str) -> dict[str, Any]:
        cur = self.conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        row = cur.fetchone()
        if row is None:
            raise KeyError(f"no run {run_id!r} in the store {self.path}")
        d = dict(zip([c[0] for c in cur.description], row))
        d["config"] = json.loads(d["config"] or "{}")
        d["stats"] = json.loads(d["stats"] or "{}")
        return d

    def run_stats(self, run_id: str) -> dict[str, Any]:
        return self.run_row(run_id)["stats"]

    _JUDGMENT_SQL = ("INSERT OR REPLACE INTO judgments (run_id, item_id, dimension, criteria_hash, raw, value, status,"
                     " reason, estimator, detail, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)")
    _COMPARISON_SQL = ('INSERT OR REPLACE INTO comparisons (run_id, pair_id, doc_id, item_first, item_second,'
                       ' dimension,'
                       ' "order", criteria_hash, raw, verdict, value, status, reason, estimator, detail, created_at)'
                       " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")

    def save_judgment(self, run_id: str, row: dict[str, Any], *, cache: list[dict[str, Any]] = (),
                      answers: list[tuple] = ()) -> None:
        """One judgment (and the cache entries of the responses it came from) in one transaction."""
        value = _value(row)
        args = (run_id, row["item_id"], row["dimension"], row.get("criteria_hash", ""), row.get("raw", ""), value,
                row["status"], row.get("reason", ""), row.get("estimator", ""), _dumps(row.get("detail") or {}), now())
        self._save_with_cache(run_id, self._JUDGMENT_SQL, args, cache, answers)

    def save_comparison(self, run_id: str, row: dict[str, Any], *, cache: list[dict[str, Any]] = (),
                        answers: list[tuple] = ()) -> None:
        value = _value(row)
        args = (run_id, row["pair_id"], row["doc_id"], row["item_first"], row["item_second"], row["dimension"],
                row["order"], row.get("criteria_hash", ""), row.get("raw", ""), row.get("verdict"), value,
                row["status"], row.get("reason", ""), row.get("estimator", ""), _dumps(row.get("detail") or {}), now())
        self._save_with_cache(run_id, self._COMPARISON_SQL, args, cache, answers)

    def _save_with_cache(self, run_id: str, sql: str, args: tuple, cache: list[dict[str, Any]],
                         answers: list[tuple]) -> None:
        """One judgment or comparison row with its responses' cache entries and answers rows, in one transaction."""
        cache_rows = self._cache_rows(list(cache))
        with self.write() as c:
            if cache_rows:
                c.executemany(self._CACHE_SQL, cache_rows)
            if answers:
                c.executemany(self._ANSWER_SQL, [(run_id, *a, now()) for a in answers])
            c.execute(sql, args)

    # answers rows: (key, task, dimension, answered_by, prompt_tokens, cached_tokens, latency_s)
    _ANSWER_SQL = ("INSERT OR REPLACE INTO answers (run_id, key, task, dimension, answered_by, prompt_tokens,"
                   " cached_tokens, latency_s, created_at) VALUES (?,?,?,?,?,?,?,?,?)")

    def answers(self, run_id: str) -> pd.DataFrame:
        """Which endpoint answered each request the run sent (cache hits are not listed)."""
        return pd.read_sql_query("SELECT key, task, dimension, answered_by, prompt_tokens, cached_tokens, latency_s,"
                                 " created_at FROM answers WHERE run_id = ? ORDER BY created_at", self.conn,
                                 params=(run_id,))

    def done_keys(self, run_id: str, *, pairwise: bool) -> dict[tuple, str]:
        """What a run already holds: key -> status. Items: (item_id, dimension, criteria_hash);
        pairs: (pair_id, order, dimension, criteria_hash)."""
        if pairwise:
            q = 'SELECT pair_id, "order", dimension, criteria_hash, status FROM comparisons WHERE run_id = ?'
        else:
            q = "SELECT item_id, dimension, criteria_hash, status FROM judgments WHERE run_id = ?"
        return {tuple(r[:-1]): r[-1] for r in self.conn.execute(q, (run_id,))}

    def _run_from_row(self, d: dict[str, Any]) -> Run:
        cfg = dict(d["config"])
        cfg.setdefault("stats", d.get("stats") or {})
        cfg["status"] = self.live_status(d["run_id"], d.get("status"))
        return Run(run_id=d["run_id"], dataset_id=d["dataset_id"], method=d["method"], model=d["model"],
                   label=d["label"] or "", config=cfg, parser=d["parser"] or "", origin="local",
                   created_at=d["created_at"] or "")

    def list_runs(self, dataset_id: str | None = None) -> list[Run]:
        """Runs (newest first) WITHOUT their judgments: cheap enough for a picker."""
        where, args = ("WHERE dataset_id = ?", (dataset_id,)) if dataset_id else ("", ())
        cur = self.conn.execute(f"SELECT * FROM runs {where} ORDER BY created_at DESC, run_id", args)
        cols = [c[0] for c in cur.description]
        out = []
        for row in cur.fetchall():
            d = dict(zip(cols, row))
            d["config"] = json.loads(d["config"] or "{}")
            d["stats"] = json.loads(d["stats"] or "{}")
            out.append(self._run_from_row(d))
        return out

    def load_run(self, run_id: str) -> Run:
        """A run with its judgments (or comparisons) under the criteria versions its config names, in a stable
        order (dimension, item), whatever order they completed in."""
        d = self.run_row(run_id)
        run = self._run_from_row(d)
        hashes = {dim: c.get("hash") for dim, c in (d["config"].get("criteria") or {}).items()}
        j = pd.read_sql_query("SELECT * FROM judgments WHERE run_id = ? ORDER BY dimension, item_id", self.conn,
                              params=(run_id,))
        c = pd.read_sql_query('SELECT * FROM comparisons WHERE run_id = ? ORDER BY dimension, pair_id, "order"',
                              self.conn, params=(run_id,))
        run.judgments = _current(j, hashes, JUDGMENT_COLUMNS)
        run.comparisons = _current(c, hashes, COMPARISON_COLUMNS)
        return run

    def delete_run(self, run_id: str) -> None:
        with self.write() as c:
            for t in ("judgments", "comparisons", "answers", "runs"):
                c.execute(f"DELETE FROM {t} WHERE run_id = ?", (run_id,))

    # ------------------------------------------------------------------------------------------ imported runs
    def save_imported_run(self, run: Run, *, status: str = "done", criteria: list[dict[str, Any]] = ()) -> None:
        """A whole run brought from a file (judge scores, a run bundle) in one transaction: it replaces any run with
        the same id, so importing again never leaves a mix of old and new judgments."""
        stats = dict(run.config.get("stats") or {})
        config = {k: v for k, v in run.config.items() if k not in ("stats", "status")}
        rows = []
        for r in run.judgments.to_dict("records"):
            v = r.get("value")
            v = None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
            rows.append((run.run_id, r["item_id"], r["dimension"], r.get("criteria_hash") or "", r.get("raw") or "",
                         v, r["status"], r.get("reason") or "", r.get("estimator") or "",
                         _dumps(r.get("detail") or {}), r.get("created_at") or now()))
        comparisons = []
        for r in run.comparisons.to_dict("records"):
            v = r.get("value")
            v = None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
            comparisons.append((run.run_id, r["pair_id"], r["doc_id"], r["item_first"], r["item_second"],
                                r["dimension"], r["order"], r.get("criteria_hash") or "", r.get("raw") or "",
                                r.get("verdict"), v, r["status"], r.get("reason") or "", r.get("estimator") or "",
                                _dumps(r.get("detail") or {}), r.get("created_at") or now()))
        with self.write() as c:
            for t in ("judgments", "comparisons", "runs"):
                c.execute(f"DELETE FROM {t} WHERE run_id = ?", (run.run_id,))
            c.execute("INSERT INTO runs (run_id, dataset_id, method, model, label, config, parser, created_at,"
                      " updated_at, status, stats) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                      (run.run_id, run.dataset_id, run.method, run.model, run.label, _dumps(config), run.parser,
                       run.created_at or now(), now(), status, _dumps(stats)))
            for cr in criteria:
                c.execute("INSERT OR IGNORE INTO criteria (dataset_id, dimension, hash, task_introduction, definition,"
                          " scale_min, scale_max, steps, note, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                          tuple(cr[k] for k in ("dataset_id", "dimension", "hash", "task_introduction", "definition",
                                                "scale_min", "scale_max", "steps", "note", "created_at")))
            c.executemany(self._JUDGMENT_SQL, rows)
            c.executemany(self._COMPARISON_SQL, comparisons)

    # ------------------------------------------------------------------------------------------ criteria versions
    def save_criteria(self, dataset_id: str, criteria: Criteria, *, note: str = "") -> str:
        h = criteria.version_hash()
        with self.write() as c:
            c.execute("INSERT OR IGNORE INTO criteria (dataset_id, dimension, hash, task_introduction, definition,"
                      " scale_min, scale_max, steps, note, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                      (dataset_id, criteria.dimension, h, criteria.task_introduction, criteria.definition,
                       criteria.scale_min, criteria.scale_max, criteria.steps, note, now()))
        return h

    def list_criteria_versions(self, dataset_id: str, dimension: str) -> list[dict[str, Any]]:
        """Newest first: {"hash", "created_at", "note", "criteria": Criteria}."""
        cur = self.conn.execute("SELECT * FROM criteria WHERE dataset_id = ? AND dimension = ?"
                                " ORDER BY created_at DESC, rowid DESC", (dataset_id, dimension))
        cols = [c[0] for c in cur.description]
        out = []
        for row in cur.fetchall():
            d = dict(zip(cols, row))
            out.append({"hash": d["hash"], "created_at": d["created_at"], "note": d["note"] or "",
                        "criteria": _criteria_from_row(d)})
        return out

    def load_criteria(self, dataset_id: str, dimension: str, version: str | None = None) -> Criteria | None:
        """A saved version by hash (prefix allowed), or the newest one; None when there is none."""
        versions = self.list_criteria_versions(dataset_id, dimension)
        if version is None:
            return versions[0]["criteria"] if versions else None
        for v in versions:
            if v["hash"].startswith(version):
                return v["criteria"]
        raise KeyError(f"no criteria version {version!r} for {dataset_id}/{dimension}")

    def diff_criteria(self, dataset_id: str, dimension: str, hash_a: str, hash_b: str) -> str:
        """A unified diff of two saved versions, field by field."""
        a = self.load_criteria(dataset_id, dimension, hash_a)
        b = self.load_criteria(dataset_id, dimension, hash_b)
        return criteria_diff(a, b, name_a=hash_a, name_b=hash_b)

    # ------------------------------------------------------------------------------------------ user datasets
    def save_dataset(self, dataset: Dataset, *, overwrite: bool = False) -> None:
        if not overwrite and self.conn.execute("SELECT 1 FROM datasets WHERE id = ?", (dataset.id,)).fetchone():
            raise ValueError(f"a dataset with id {dataset.id!r} is already saved in {self.path}; "
                             "pass overwrite=True to replace it")
        row = {"id": dataset.id, "name": dataset.name, "task": dataset.task, "description": dataset.description,
               "citation": dataset.citation, "origin": dataset.origin,
               "dimensions": _dumps([asdict(d) for d in dataset.dimensions]), "meta": _dumps(dataset.meta),
               "created_at": now()}
        for f in FRAMES:
            row[f] = _frame_to_blob(getattr(dataset, f))
        with self.write():
            self.db["datasets"].insert(row, replace=True)

    def load_dataset(self, dataset_id: str) -> Dataset:
        cur = self.conn.execute("SELECT * FROM datasets WHERE id = ?", (dataset_id,))
        row = cur.fetchone()
        if row is None:
            raise KeyError(f"no dataset {dataset_id!r} (neither bundled nor saved in {self.path})")
        d = dict(zip([c[0] for c in cur.description], row))
        frames = {f: _with_columns(_frame_from_blob(d[f]), f) for f in FRAMES}
        return Dataset(id=d["id"], name=d["name"], task=d["task"],
                       dimensions=[Dimension(**x) for x in json.loads(d["dimensions"])],
                       description=d["description"] or "", citation=d["citation"] or "", origin=d["origin"] or "",
                       meta=json.loads(d["meta"] or "{}"), **frames)

    def has_dataset(self, dataset_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM datasets WHERE id = ?", (dataset_id,)).fetchone() is not None

    def list_datasets(self) -> list[dict[str, Any]]:
        out = []
        for (did,) in self.conn.execute("SELECT id FROM datasets ORDER BY id").fetchall():
            ds = self.load_dataset(did)
            n_runs = self.conn.execute("SELECT count(*) FROM runs WHERE dataset_id = ?", (did,)).fetchone()[0]
            out.append({"id": ds.id, "name": ds.name, "task": ds.task, "items": int(len(ds.items)),
                        "systems": len(ds.systems), "dimensions": ds.dimension_names,
                        "annotators": len(ds.annotators), "runs": int(n_runs), "origin": "user"})
        return out

    def delete_dataset(self, dataset_id: str) -> None:
        with self.write() as c:
            c.execute("DELETE FROM datasets WHERE id = ?", (dataset_id,))

    # ------------------------------------------------------------------------------ health, leases (issue 9)
    def check(self, *, full_up_to_bytes: int = 256 * 2**20) -> None:
        """Read every page (``PRAGMA quick_check``, for a file up to ``full_up_to_bytes``; a bigger one reads the
        tables the app lists: runs, datasets, criteria, leases); raise StoreUnreadable unless all is well."""
        size = self.path.stat().st_size if self.path.exists() else 0
        if size > full_up_to_bytes:
            for table in ("runs", "datasets", "criteria", "leases"):
                self.conn.execute(f"SELECT count(*), max(rowid) FROM {table}").fetchall()
            return
        rows = [r[0] for r in self.conn.execute("PRAGMA quick_check").fetchall()]
        if rows != ["ok"]:
            raise StoreUnreadable(unreadable_message(self.path, "; ".join(str(r) for r in rows[:3])), path=self.path,
                                  detail="; ".join(str(r) for r in rows))

    def acquire_lease(self, run_id: str) -> dict[str, Any]:
        """Take the run's lease for this process (one writer per run): raise ``RunLeased`` when a live process holds
        it; a lease whose process is gone (killed) is taken over. Returns the lease (pass it to ``release_lease``)."""
        import uuid

        mine = {"run_id": run_id, "pid": os.getpid(), "host": _HOST, "started": _proc_start(os.getpid()),
                "since": now(), "token": uuid.uuid4().hex}
        with self.write() as c:
            held = _lease_row(c, run_id)
            if held is not None and process_alive(held["pid"], held["host"], held["started"] or "") is not False:
                raise RunLeased(run_id, held)
            c.execute("INSERT OR REPLACE INTO leases (run_id, pid, host, started, since, token) VALUES (?,?,?,?,?,?)",
                      tuple(mine[k] for k in ("run_id", "pid", "host", "started", "since", "token")))
        return mine

    def release_lease(self, lease: dict[str, Any] | None) -> None:
        if lease is None:
            return
        with self.write() as c:
            c.execute("DELETE FROM leases WHERE run_id = ? AND token = ?", (lease["run_id"], lease["token"]))

    def lease_holder(self, run_id: str) -> dict[str, Any] | None:
        return _lease_row(self.conn, run_id)

    def live_status(self, run_id: str, status: str | None) -> str | None:
        """A run stored as "running" whose process is gone (killed, crashed) is "interrupted"."""
        if status != "running":
            return status
        held = _lease_row(self.conn, run_id)
        if held is None or process_alive(held["pid"], held["host"], held["started"] or "") is False:
            return "interrupted"
        return status
    # ------------------------------------------------------------------------------------------ human labels
    # labels  label_id (autoincrement), dataset_id, item_id, dimension, annotator, value (NULL for a skip), skipped,
    #         strategy (how the item was chosen: random | stratified | uncertain:...), position (the annotator's
    #         running count on the dataset: the order items were shown in), shown_at, created_at, session
    # Append-only, the latest row of (dataset, item, dimension, annotator) winning (evalcore.labels.latest_labels).
    # Why not a unique key with replace: two tabs of one annotator can each write a row without either replacing
    # the other's (both are kept, the later wins, nothing is lost), a relabel keeps its history, and undo (delete the
    # annotator's last row) brings the previous label of that item back instead of erasing it.
    LABEL_COLUMNS = ["label_id", "dataset_id", "item_id", "dimension", "annotator", "value", "skipped", "strategy",
                     "position", "shown_at", "created_at", "session"]

    def _labels_table(self) -> None:
        """Create the labels table on first use (kept out of _init_schema so this block stands alone)."""
        if getattr(self, "_labels_ready", False):
            return
        with self.write() as c:
            c.execute("CREATE TABLE IF NOT EXISTS labels (label_id INTEGER PRIMARY KEY AUTOINCREMENT,"
                      " dataset_id TEXT NOT NULL, item_id TEXT NOT NULL, dimension TEXT NOT NULL,"
                      " annotator TEXT NOT NULL, value REAL, skipped INTEGER NOT NULL DEFAULT 0,"
                      " strategy TEXT NOT NULL DEFAULT 'random', position INTEGER NOT NULL, shown_at TEXT,"
                      " created_at TEXT NOT NULL, session TEXT)")
            c.execute("CREATE INDEX IF NOT EXISTS labels_by_annotator ON labels (dataset_id, annotator, label_id)")
            c.execute("CREATE INDEX IF NOT EXISTS labels_by_item ON labels (dataset_id, dimension, item_id)")
        self._labels_ready = True

    def save_label(self, dataset_id: str, item_id: str, dimension: str, annotator: str, value: float | None, *,
                   skipped: bool = False, strategy: str = "random", shown_at: str | None = None,
                   session: str = "", created_at: str | None = None) -> int:
        """One label (or a skip: value None, skipped=True) as one row, committed before returning; its label_id."""
        if not annotator or not str(annotator).strip():
            raise ValueError("a label needs an annotator name")
        if value is None and not skipped:
            raise ValueError("a label needs a value (or skipped=True)")
        if value is not None and (isinstance(value, float) and math.isnan(value)):
            raise ValueError("a label's value cannot be NaN")
        self._labels_table()
        with self.write() as c:
            pos = c.execute("SELECT COALESCE(MAX(position), 0) + 1 FROM labels WHERE dataset_id = ? AND annotator = ?",
                            (dataset_id, annotator)).fetchone()[0]
            cur = c.execute("INSERT INTO labels (dataset_id, item_id, dimension, annotator, value, skipped, strategy,"
                            " position, shown_at, created_at, session) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                            (dataset_id, str(item_id), dimension, annotator, None if value is None else float(value),
                             int(bool(skipped)), strategy, int(pos), shown_at, created_at or now(), session))
            return int(cur.lastrowid)

    def undo_label(self, dataset_id: str, annotator: str, *, dimensions: list[str] | None = None
                   ) -> dict[str, Any] | None:
        """Delete the annotator's last row on the dataset (on ``dimensions`` if given); the deleted row, or None."""
        self._labels_table()
        where, args = "dataset_id = ? AND annotator = ?", [dataset_id, annotator]
        if dimensions:
            where += f" AND dimension IN ({','.join('?' * len(dimensions))})"
            args += list(dimensions)
        with self.write() as c:
            cur = c.execute(f"SELECT * FROM labels WHERE {where} ORDER BY label_id DESC LIMIT 1", args)
            row = cur.fetchone()
            if row is None:
                return None
            d = dict(zip([x[0] for x in cur.description], row))
            c.execute("DELETE FROM labels WHERE label_id = ?", (d["label_id"],))
        return d

    def label_rows(self, dataset_id: str | None = None) -> pd.DataFrame:
        """Every label row (skips included) in the order written; LABEL_COLUMNS."""
        self._labels_table()
        where, args = ("WHERE dataset_id = ?", (dataset_id,)) if dataset_id is not None else ("", ())
        frame = pd.read_sql_query(f"SELECT * FROM labels {where} ORDER BY label_id", self.conn, params=args)
        frame["value"] = frame["value"].astype(float)
        return frame[self.LABEL_COLUMNS]

    def labels_version(self, dataset_id: str) -> tuple[int, int]:
        """(row count, last label_id): changes whenever a label is written or undone (for cache keys)."""
        self._labels_table()
        n, last = self.conn.execute("SELECT count(*), COALESCE(MAX(label_id), 0) FROM labels WHERE dataset_id = ?",
                                    (dataset_id,)).fetchone()
        return int(n), int(last)

    def labelled_datasets(self) -> list[str]:
        """Ids of the datasets that have at least one (non-skip) label."""
        self._labels_table()
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT dataset_id FROM labels WHERE skipped = 0 ORDER BY dataset_id")]

    def insert_labels(self, rows: list[dict[str, Any]]) -> int:
        """Rows (as label_rows gives them, label_id ignored) in one transaction: all or nothing."""
        self._labels_table()
        args = [(r["dataset_id"], str(r["item_id"]), r["dimension"], r["annotator"],
                 None if r.get("value") is None or (isinstance(r["value"], float) and math.isnan(r["value"]))
                 else float(r["value"]), int(bool(r.get("skipped"))), r.get("strategy") or "random",
                 int(r["position"]), r.get("shown_at"), r.get("created_at") or now(), r.get("session") or "")
                for r in rows]
        with self.write() as c:
            c.executemany("INSERT INTO labels (dataset_id, item_id, dimension, annotator, value, skipped, strategy,"
                          " position, shown_at, created_at, session) VALUES (?,?,?,?,?,?,?,?,?,?,?)", args)
        return len(args)

    def delete_labels(self, dataset_id: str, annotator: str | None = None) -> int:
        self._labels_table()
        where, args = ("dataset_id = ?", [dataset_id]) if annotator is None else \
            ("dataset_id = ? AND annotator = ?", [dataset_id, annotator])
        with self.write() as c:
            return int(c.execute(f"DELETE FROM labels WHERE {where}", args).rowcount)


def _current(frame: pd.DataFrame, hashes: dict[str, str | None], columns: list[str]) -> pd.DataFrame:
    """Keep rows under each dimension's current criteria hash; decode detail; the model's column order."""
    extra = [c for c in ("value", "estimator", "detail") if c not in columns]
    if frame.empty:
        return empty_frame(columns + extra)
    if hashes:
        keep = [hashes.get(d) in (None, h) for d, h in zip(frame["dimension"], frame["criteria_hash"])]
        frame = frame[keep]
    frame = frame.copy()
    frame["detail"] = [json.loads(x) if x else {} for x in frame["detail"]]
    frame["value"] = frame["value"].astype(float)
    return frame[columns + extra].reset_index(drop=True)


def _criteria_from_row(d: dict[str, Any]) -> Criteria:
    return Criteria(dimension=d["dimension"], task_introduction=d["task_introduction"], definition=d["definition"],
                    scale_min=int(d["scale_min"]), scale_max=int(d["scale_max"]), steps=d["steps"] or "")


def criteria_diff(a: Criteria, b: Criteria, *, name_a: str = "a", name_b: str = "b") -> str:
    def lines(c: Criteria) -> list[str]:
        out = []
        for k, v in asdict(c).items():
            out.append(f"[{k}]")
            out.extend(str(v).splitlines() or [""])
        return [x + "\n" for x in out]

    return "".join(difflib.unified_diff(lines(a), lines(b), fromfile=name_a, tofile=name_b))


def _frame_to_blob(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.reset_index(drop=True).to_parquet(buf, index=False)
    return buf.getvalue()


def _frame_from_blob(blob: bytes | None) -> pd.DataFrame:
    if not blob:
        return pd.DataFrame()
    frame = pd.read_parquet(io.BytesIO(blob))
    for col in frame.columns:  # parquet gives numpy arrays for list columns; the model says list[str]
        if frame[col].dtype == object and len(frame) and hasattr(frame[col].iloc[0], "tolist") \
                and not isinstance(frame[col].iloc[0], str):
            frame[col] = [list(x) if x is not None else [] for x in frame[col]]
    return frame


def _with_columns(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """A frame with at least the model's columns: a dataset uploaded without ratings (texts only) has empty
    human_scores/annotations, possibly saved without columns, and every reader selects them by name."""
    from evalcore import model

    columns = {"documents": model.DOCUMENT_COLUMNS, "items": model.ITEM_COLUMNS,
               "human_scores": model.HUMAN_SCORE_COLUMNS, "annotations": model.ANNOTATION_COLUMNS,
               "preferences": model.PREFERENCE_COLUMNS}[name]
    missing = [c for c in columns if c not in frame.columns]
    if not missing:
        return frame
    if not frame.empty:
        return frame  # a non-empty frame lacking a column is the loader's error to report, not ours to hide
    return empty_frame(list(frame.columns) + missing)


_default: Store | None = None
_default_lock = threading.Lock()


def default_store() -> Store:
    """The one global handle (``$EVALCORE_DB`` or ``~/.evalcore/evalcore.db``)."""
    global _default
    with _default_lock:
        if _default is None or (os.environ.get("EVALCORE_DB") and Path(os.environ["EVALCORE_DB"]) != _default.path):
            _default = Store()
        return _default


__all__ = ["Store", "default_store", "request_key", "canonical_json", "criteria_diff"]


# ------------------------------------------------------------------------------------------ hardening (issue 9)
# A store that cannot be read, or stays locked, raises one of these instead of a bare sqlite3 error: the message
# names the file and the way out. One writer per run: a lease row (pid, host, since) that a second process meets.

class StoreError(RuntimeError):
    """The local store cannot be used; ``str()`` is the one line to show."""

    def __init__(self, message: str, *, path: Path, detail: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.detail = detail


class StoreUnreadable(StoreError):
    """Corrupt, truncated, not a database, or not openable."""


class StoreLocked(StoreError):
    """Another process held the write lock for longer than the busy timeout."""


class RunLeased(RuntimeError):
    """Another live process is scoring this run (one writer per run)."""

    def __init__(self, run_id: str, holder: dict[str, Any]) -> None:
        who = "another thread of this process" if _is_this_process(holder) else "another process"
        super().__init__(f"run {run_id!r} is being scored by {who} (pid {holder['pid']} on {holder['host']}) since "
                         f"{holder['since']}; wait for it to finish, or stop it (a lease whose process is gone is "
                         f"taken over)")
        self.run_id = run_id
        self.holder = holder


_UNREADABLE_CODES = ("SQLITE_NOTADB", "SQLITE_CORRUPT", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_READONLY",
                     "SQLITE_FULL", "SQLITE_PERM", "SQLITE_AUTH")
_UNREADABLE_TEXTS = ("file is not a database", "malformed", "disk i/o error", "unable to open database",
                     "readonly database", "database or disk is full")


def _sqlite_cause(err: BaseException) -> sqlite3.Error | None:
    """The sqlite3 error behind ``err`` (pandas wraps it in its own DatabaseError), or None."""
    seen = 0
    while err is not None and seen < 5:
        if isinstance(err, sqlite3.Error):
            return err
        err = err.__cause__ or err.__context__
        seen += 1
    return None


def store_error(path: Path, err: sqlite3.Error) -> StoreError | None:
    """The StoreError that explains ``err`` for the store at ``path``, or None (an error of another kind)."""
    code = str(getattr(err, "sqlite_errorname", "") or "")
    text = str(err)
    low = text.lower()
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in low or "database table is locked" \
            in low:
        return StoreLocked(
            f"the local store {path} stayed locked for more than {BUSY_TIMEOUT_S:g} s: another process (a scoring "
            f"run, the app) is writing to it. Wait for it and try again, or use another store (--db or "
            f"EVALCORE_DB).", path=path, detail=text)
    if code.startswith(_UNREADABLE_CODES) or any(t in low for t in _UNREADABLE_TEXTS):
        return StoreUnreadable(unreadable_message(path, text), path=path, detail=text)
    return None


def unreadable_message(path: Path, detail: str) -> str:
    return (f"the local store {path} cannot be read ({detail}). It is only a cache of judge replies, your runs, "
            f"uploads and criteria versions: move it aside (mv '{path}' '{path}.broken'; what it held stays in "
            f"that file) and the app and CLI start a fresh one, or point EVALCORE_DB (CLI: --db) at another file.")


def _guarded(fn: Any) -> Any:
    import functools

    @functools.wraps(fn)
    def wrapper(self: "Store", *args: Any, **kw: Any) -> Any:
        try:
            return fn(self, *args, **kw)
        except StoreError:
            raise
        except Exception as e:
            cause = _sqlite_cause(e)
            translated = store_error(Path(getattr(self, "path", "?")), cause) if cause is not None else None
            if translated is None:
                raise
            raise translated from e

    return wrapper


def store_problem(path: str | Path | None = None) -> str | None:
    """None when the store at ``path`` (default: the default store's) opens and passes ``PRAGMA quick_check``,
    else the one-line message to show (the app's banner)."""
    st = None
    try:
        st = Store(path) if path is not None else default_store()
        st.check()
    except StoreError as e:
        return str(e)
    finally:
        if st is not None and path is not None:
            st.close()
    return None


def default_path() -> Path:
    """Where the default store lives: ``$EVALCORE_DB`` or ``~/.evalcore/evalcore.db``."""
    return Path(os.environ.get("EVALCORE_DB") or Path.home() / ".evalcore" / "evalcore.db")


# ---------------------------------------------------------------------------------------- leases (one writer per run)
_HOST = socket.gethostname()
_LEASE_TOKEN_LOCK = threading.Lock()


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


def _lease_row(c: sqlite3.Connection, run_id: str) -> dict[str, Any] | None:
    cur = c.execute("SELECT run_id, pid, host, started, since, token FROM leases WHERE run_id = ?", (run_id,))
    row = cur.fetchone()
    return None if row is None else dict(zip([d[0] for d in cur.description], row))


# every public method (and the connection properties) turns a sqlite error of a broken or locked store into the
# StoreError that names the file and the way out
for _name in [n for n, v in list(vars(Store).items()) if callable(v) and (not n.startswith("_") or n == "__init__")]:
    setattr(Store, _name, _guarded(getattr(Store, _name)))
for _name in ("conn", "db"):  # properties: the first statement on a broken file fails here
    _prop = vars(Store)[_name]
    setattr(Store, _name, property(_guarded(_prop.fget)))
__all__ += ["StoreError", "StoreUnreadable", "StoreLocked", "RunLeased", "store_problem", "store_error",
            "process_alive", "default_path"]
