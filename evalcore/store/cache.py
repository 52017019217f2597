"""The response cache: one row per request an endpoint answered, keyed by :func:`request_key`.

Nothing here ever holds an API key: keys are built from ``Endpoint.identity()``."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

from evalcore.store.connection import Connection, canonical_json, dumps, now


def request_key(identity: dict[str, Any], params: dict[str, Any]) -> str:
    """The cache key: sha256 of canonical JSON of (endpoint identity without key, model, request params)."""
    return hashlib.sha256(canonical_json([identity, identity.get("model"), params]).encode()).hexdigest()


def cache_rows(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Entries {key, endpoint (identity), request (params), response, latency_s} as rows of the cache table."""
    return [{"key": e["key"], "endpoint": canonical_json(e["endpoint"]), "model": e["endpoint"].get("model", ""),
             "request": canonical_json(e["request"]), "response": dumps(e["response"]),
             "usage": dumps(e["response"].get("usage", {})), "latency_s": e.get("latency_s", 0.0), "created_at": now()}
            for e in entries]


class CacheStore(Connection):
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

    def cache_put(self, key: str, *, endpoint: dict[str, Any], request: dict[str, Any], response: dict[str, Any],
                  latency_s: float = 0.0) -> None:
        self.cache_put_many([{"key": key, "endpoint": endpoint, "request": request, "response": response,
                              "latency_s": latency_s}])

    def cache_put_many(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Several entries (as ``cache_put`` takes them, with their ``key``) in one transaction."""
        rows = cache_rows(list(entries))
        if rows:
            with self.write():
                self._insert("cache", rows, replace=True)

    def cache_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM cache").fetchone()[0])
