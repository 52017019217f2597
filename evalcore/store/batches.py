"""The Batch API batches of a run (evalcore.judge.batch submits and collects them). A batch id is unique on its
server only, so a batch is keyed by (endpoint, batch id): ``endpoint`` is the run's base URL as
``Endpoint.identity()`` records it."""

from __future__ import annotations

import sqlite3
from typing import Any

from evalcore.store.connection import Connection, now

BATCH_COLUMNS = ("run_id", "batch_id", "route", "input_file_id", "api_key_env", "status", "total", "completed",
                 "failed", "output_file_id", "error_file_id", "errors", "collected", "created_at", "updated_at", "endpoint")
_UPDATABLE = {"status", "total", "completed", "failed", "output_file_id", "error_file_id", "errors", "collected"}


class BatchesStore(Connection):
    def batch_rows(self, run_id: str) -> list[dict[str, Any]]:
        """The batches of a run, oldest first."""
        return self.rows("SELECT * FROM batches WHERE run_id = ? ORDER BY created_at, batch_id", (run_id,))

    def add_batch(self, run_id: str, batch_id: str, *, endpoint: str, route: str, input_file_id: str, api_key_env: str | None,
                  status: str, total: int, output_file_id: str | None = None, error_file_id: str | None = None,
                  errors: str | None = None) -> None:
        stamp = now()
        row = {"run_id": run_id, "batch_id": batch_id, "route": route, "input_file_id": input_file_id,
               "api_key_env": api_key_env, "status": status, "total": total, "completed": 0, "failed": 0,
               "output_file_id": output_file_id, "error_file_id": error_file_id, "errors": errors, "collected": 0,
               "created_at": stamp, "updated_at": stamp, "endpoint": endpoint}
        with self.write() as c:
            clash = c.execute("SELECT run_id FROM batches WHERE endpoint = ? AND batch_id = ?",
                              (endpoint, batch_id)).fetchone()
            if clash is not None:
                raise ValueError(f"{endpoint} handed out batch id {batch_id} again (already recorded for run "
                                 f"{clash[0]}): the server reuses batch ids, so this batch cannot be told apart; "
                                 f"cancel it on the server")
            try:
                self._insert("batches", [row])
            except sqlite3.IntegrityError as e:  # pragma: no cover - the check above under the same write lock
                raise ValueError(f"{endpoint}: batch {batch_id} recorded twice") from e

    def update_batch(self, endpoint: str, batch_id: str, **fields: str | int | None) -> None:
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"not a batch field to update: {', '.join(sorted(unknown))}")
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self.write() as c:
            c.execute(f"UPDATE batches SET {sets}, updated_at = ? WHERE endpoint = ? AND batch_id = ?",
                      (*fields.values(), now(), endpoint, batch_id))
