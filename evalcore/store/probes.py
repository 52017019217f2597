"""Capability-probe requests an endpoint rejected (evalcore.judge.probes decides which to remember)."""

from __future__ import annotations

from typing import Any

from evalcore.store.connection import Connection, canonical_json, now


class ProbeFailuresStore(Connection):
    def probe_failure(self, key: str) -> str | None:
        """The reason a probe request was rejected, or None."""
        row = self.conn.execute("SELECT reason FROM probe_failures WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def remember_probe_failure(self, key: str, *, endpoint: dict[str, Any], request: dict[str, Any],
                               reason: str) -> None:
        with self.write() as c:
            c.execute("INSERT OR REPLACE INTO probe_failures (key, endpoint, request, reason, created_at)"
                      " VALUES (?,?,?,?,?)", (key, canonical_json(endpoint), canonical_json(request), reason, now()))

    def forget_probe_failure(self, key: str) -> None:
        with self.write() as c:
            c.execute("DELETE FROM probe_failures WHERE key = ?", (key,))
