"""What was spent on the operator's key, kept in the store (schema version 6) so that the operator's cap
(evalcore.judge.spending) holds across sessions: a new browser session is no new budget.

spending  spend_id, spender, usd, calls, what, created_at: one row per run, proposal or step generation started on
          a paid endpoint. ``spender`` is the signed-in user's name, or '' for everyone who is not signed in (and
          for every session of a server without sign-in): those share one budget, the server's.
"""

from __future__ import annotations

from evalcore.store.connection import Connection, now

_SPENT = "SELECT COALESCE(SUM(usd), 0) FROM spending WHERE spender = ?"


class SpendingStore(Connection):
    def spent_usd(self, spender: str | None) -> float:
        """What ``spender`` (a user's name; None or '': everyone not signed in) has started so far, in USD."""
        return float(self.conn.execute(_SPENT, (spender or "",)).fetchone()[0])

    def charge(self, spender: str | None, usd: float, *, calls: int, what: str, cap: float | None) -> float | None:
        """Record ``usd`` spent by ``spender`` unless it would take them past ``cap`` (None: no cap): checked and
        written in ONE write transaction, so two sessions of one user cannot both pass the cap. The total spent
        before this charge when it was recorded, None when the cap refused it (nothing written)."""
        with self.write() as c:
            before = float(c.execute(_SPENT, (spender or "",)).fetchone()[0])
            if cap is not None and before + usd > cap:
                return None
            self._insert("spending", [{"spender": spender or "", "usd": float(usd), "calls": int(calls), "what": what,
                                       "created_at": now()}])
            return before


__all__ = ["SpendingStore"]
