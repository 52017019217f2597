"""The Batch API batches of a run (evalcore.judge.batch submits and collects them)."""

from __future__ import annotations

from typing import Any

from evalcore.store.connection import Connection, now

BATCH_COLUMNS = ("run_id", "batch_id", "route", "input_file_id", "api_key_env", "status", "total", "completed",
                 "failed", "output_file_id", "error_file_id", "errors", "collected", "created_at", "updated_at")
_UPDATABLE = {"status", "total", "completed", "failed", "output_file_id", "error_file_id", "errors", "collected"}


class BatchesStore(Connection):
    def batch_rows(self, run_id: str) -> list[dict[str, Any]]:
        """The batches of a run, oldest first."""
        return self.rows("SELECT * FROM batches WHERE run_id = ? ORDER BY created_at, batch_id", (run_id,))

    def add_batch(self, run_id: str, batch_id: str, *, route: str, input_file_id: str, api_key_env: str | None,
                  status: str, total: int, output_file_id: str | None = None, error_file_id: str | None = None,
                  errors: str | None = None) -> None:
        stamp = now()
        row = {"run_id": run_id, "batch_id": batch_id, "route": route, "input_file_id": input_file_id,
               "api_key_env": api_key_env, "status": status, "total": total, "completed": 0, "failed": 0,
               "output_file_id": output_file_id, "error_file_id": error_file_id, "errors": errors, "collected": 0,
               "created_at": stamp, "updated_at": stamp}
        with self.write():
            self.db["batches"].insert(row)

    def update_batch(self, batch_id: str, **fields: Any) -> None:
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"not a batch field to update: {', '.join(sorted(unknown))}")
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self.write() as c:
            c.execute(f"UPDATE batches SET {sets}, updated_at = ? WHERE batch_id = ?", (*fields.values(), now(), batch_id))
