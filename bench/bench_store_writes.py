"""The store's hot write paths, without any network: what a scoring run writes per judgment, and the bulk writes.

    python bench/bench_store_writes.py [--n 2000] [--repeat 3] [--db postgresql://...]

(a) ``save_judgment`` with one cache entry and one answers row (what the engine writes per item: one transaction),
    microseconds per judgment;
(b) ``cache_put_many`` of n entries in one transaction (a Batch API collection), microseconds per entry;
(c) ``insert_labels`` of n label rows in one transaction (a labels file imported), microseconds per row.
Best of ``--repeat`` runs, each on a fresh store file in a temporary folder; with ``--db URL`` of a PostgreSQL
server, each in a fresh schema of that database (made, then dropped), the same calls through evalcore.store.dialect.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.store import Store  # noqa: E402

ENDPOINT = {"provider": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "bench-model"}
RESPONSE = {"choices": [{"message": {"content": "4"}}], "usage": {"prompt_tokens": 812, "completion_tokens": 1}}


def _entry(i: int) -> dict:
    return {"key": f"k{i:08d}", "endpoint": ENDPOINT, "request": {"messages": [{"role": "user", "content": f"x{i}"}]},
            "response": RESPONSE, "latency_s": 0.25}


def _judgments(st: Store, n: int) -> float:
    st.create_run(run_id="r", dataset_id="d", method="geval", model="bench-model")
    t = time.perf_counter()
    for i in range(n):
        row = {"item_id": f"i{i}", "dimension": "coherence", "criteria_hash": "h", "raw": "4", "value": 4.0,
               "status": "ok", "reason": "", "estimator": "mean", "detail": {"n": 1}}
        st.save_judgment("r", row, cache=[_entry(i)],
                         answers=[(f"k{i:08d}", "score", "coherence", "bench-model", 812, 0, 0.25)])
    return time.perf_counter() - t


def _cache_bulk(st: Store, n: int) -> float:
    entries = [_entry(i) for i in range(n)]
    t = time.perf_counter()
    st.cache_put_many(entries)
    return time.perf_counter() - t


def _labels_bulk(st: Store, n: int) -> float:
    rows = [{"dataset_id": "d", "item_id": f"i{i}", "dimension": "coherence", "annotator": "ann", "value": 3.0,
             "skipped": False, "strategy": "random", "position": i + 1, "shown_at": None, "created_at": None,
             "session": "s"} for i in range(n)]
    t = time.perf_counter()
    st.insert_labels(rows)
    return time.perf_counter() - t


@contextlib.contextmanager
def _fresh_store(db: str | None) -> Iterator[str]:
    """A fresh store's location: a file in a temporary folder, or a new schema of the PostgreSQL database ``db``."""
    if not db:
        with tempfile.TemporaryDirectory() as tmp:
            yield str(Path(tmp) / "bench.db")
        return
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(db, autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield db + ("&" if "?" in db else "?") + "options=" + quote(f"-csearch_path={schema}", safe="")
    finally:
        with psycopg.connect(db, autocommit=True) as c:
            c.execute(f'DROP SCHEMA "{schema}" CASCADE')


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--db", help="a PostgreSQL server's URL (default: a SQLite file)")
    a = ap.parse_args()
    for name, fn in (("(a) save_judgment + cache + answers, per judgment", _judgments),
                     ("(b) cache_put_many, per entry", _cache_bulk),
                     ("(c) insert_labels, per row", _labels_bulk)):
        best = float("inf")
        for _ in range(a.repeat):
            with _fresh_store(a.db) as location:
                st = Store(location)
                best = min(best, fn(st, a.n))
                st.close()
        print(f"{name:<52} {best / a.n * 1e6:8.1f} us  (n={a.n}, best of {a.repeat})")


if __name__ == "__main__":
    main()
