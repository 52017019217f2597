"""Capability-probe requests an endpoint rejected (evalcore.judge.probes decides which to remember)."""

from __future__ import annotations

import json
from typing import Any

from evalcore.store.connection import Connection, canonical_json, now


class ProbeFailuresStore(Connection):
    def probe_failure(self, key: str) -> str | None:
        """The reason a probe request was rejected, or None."""
        row = self.conn.execute("SELECT reason FROM probe_failures WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def remember_probe_failure(self, key: str, *, endpoint: dict[str, Any], request: dict[str, Any],
                               reason: str) -> None:
        with self.write():
            self._insert("probe_failures", [{"key": key, "endpoint": canonical_json(endpoint),
                                             "request": canonical_json(request), "reason": reason,
                                             "created_at": now()}], replace=True)

    def forget_probe_failure(self, key: str) -> None:
        with self.write() as c:
            c.execute("DELETE FROM probe_failures WHERE key = ?", (key,))

    # The endpoint's learned contract (evalcore.judge.contract): one row per refused parameter, in the same table,
    # keyed by (endpoint identity, parameter); its ``request`` column holds the rule, its ``reason`` the provider's
    # message. Kept with the probe cache because it is what the probe cache is: what this endpoint and model accept.
    def contract_rules(self, endpoint: dict[str, Any]) -> list[dict[str, Any]]:
        """The rules learned for this endpoint identity (provider, base URL, model), oldest first."""
        rows = self.conn.execute("SELECT request FROM probe_failures WHERE endpoint = ? ORDER BY created_at",
                                 (canonical_json(endpoint),)).fetchall()
        out = []
        for (request,) in rows:
            rule = json.loads(request)
            if isinstance(rule, dict) and rule.get("kind") == "contract":
                out.append({k: v for k, v in rule.items() if k != "kind"})
        return out

    def remember_contract_rule(self, key: str, *, endpoint: dict[str, Any], rule: dict[str, Any]) -> None:
        self.remember_probe_failure(key, endpoint=endpoint, request={"kind": "contract", **rule},
                                    reason=str(rule.get("message") or rule.get("param")))

    def forget_contract(self, endpoint: dict[str, Any]) -> None:
        """Drop what was learned for this endpoint (a re-probe: the server's settings may have changed)."""
        keys = [r[0] for r in self.conn.execute("SELECT key, request FROM probe_failures WHERE endpoint = ?",
                                                (canonical_json(endpoint),)).fetchall()
                if '"kind":"contract"' in r[1].replace(" ", "")]
        with self.write() as c:
            c.executemany("DELETE FROM probe_failures WHERE key = ?", [(k,) for k in keys])
