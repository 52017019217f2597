"""Development / test splits of a dataset's documents (judge alignment, issue 22), and the final checks made on them.

splits        dataset_id, split_id (a hash of what the split is), dimension, seed, test_share, strata (the rule, in
              words), dev_docs, test_docs (JSON lists of document ids), created_at. Saving the same split again keeps
              the first row: a split is a fact about the dataset, not an event.
final_checks  one row per final check on a split's test part: which criteria versions were compared (baseline and
              chosen), their runs and the result (JSON). Appended, never replaced: how often a test part was looked
              at is what makes a re-run honest to report. ``owner`` (schema version 6): whose check it is. On a
              server with sign-in each user's looks are counted and listed for that user only (another user's
              check is not their look, and their private candidates' hashes and results are not to be listed).
              A look at a test part's agreement on another page is a row too (``result["look"]`` names the page).
"""

from __future__ import annotations

import json
from typing import Any

from evalcore.identity import Viewer
from evalcore.store.connection import Connection, canonical_json, now

SPLIT_COLUMNS = ("dataset_id", "split_id", "dimension", "seed", "test_share", "strata", "dev_docs", "test_docs",
                 "created_at")
# whose checks: the same owner ('' and NULL alike: written without sign-in)
_OWN = "COALESCE(owner, '') = ?"


def _split_row(d: dict[str, Any]) -> dict[str, Any]:
    return {**d, "seed": int(d["seed"]), "test_share": float(d["test_share"]),
            "dev_docs": json.loads(d["dev_docs"]), "test_docs": json.loads(d["test_docs"])}


class SplitsStore(Connection):
    def save_split(self, row: dict[str, Any]) -> str:
        """Keep a split (``row``: the SPLIT_COLUMNS but created_at, the doc lists as lists); its split_id. A split
        already stored under that id is left as it was."""
        values = {**row, "dev_docs": json.dumps([str(d) for d in row["dev_docs"]]),
                  "test_docs": json.dumps([str(d) for d in row["test_docs"]]),
                  "created_at": row.get("created_at") or now()}
        with self.write():
            self._insert("splits", [{k: values[k] for k in SPLIT_COLUMNS}], ignore=True)
        return str(row["split_id"])

    def load_split_row(self, dataset_id: str, split_id: str) -> dict[str, Any] | None:
        """The stored split (split_id or a unique prefix of it), or None."""
        rows = self.rows("SELECT * FROM splits WHERE dataset_id = ? AND split_id LIKE ? || '%' ORDER BY rowid",
                         (dataset_id, split_id))
        if len(rows) > 1:
            raise KeyError(f"split id {split_id!r} is ambiguous for dataset {dataset_id!r}: "
                           f"{', '.join(r['split_id'] for r in rows)}")
        return _split_row(rows[0]) if rows else None

    def list_split_rows(self, dataset_id: str, dimension: str | None = None) -> list[dict[str, Any]]:
        """The dataset's splits, newest first (of ``dimension`` when given)."""
        sql, args = "SELECT * FROM splits WHERE dataset_id = ?", [dataset_id]
        if dimension is not None:
            sql += " AND dimension = ?"
            args.append(dimension)
        return [_split_row(r) for r in self.rows(sql + " ORDER BY created_at DESC, rowid DESC", args)]

    def record_final_check(self, dataset_id: str, split_id: str, *, dimension: str, method: str,
                           baseline_hash: str, chosen_hash: str, baseline_run: str, chosen_run: str,
                           result: dict[str, Any], owner: str | None = None) -> int:
        """Append one final check (or look) on the split's test part by ``owner`` (the signed-in user; None without
        sign-in); how many checks that owner has made on that test part, this one included (1 = the first look)."""
        with self.write() as c:
            self._insert("final_checks", [{
                "dataset_id": dataset_id, "split_id": split_id, "dimension": dimension, "method": method,
                "baseline_hash": baseline_hash, "chosen_hash": chosen_hash, "baseline_run": baseline_run,
                "chosen_run": chosen_run, "result": canonical_json(result), "created_at": now(),
                "owner": owner or None}])
            return int(c.execute(f"SELECT count(*) FROM final_checks WHERE dataset_id = ? AND split_id = ? AND {_OWN}",
                                 (dataset_id, split_id, owner or "")).fetchone()[0])

    def final_checks(self, dataset_id: str, split_id: str, *, viewer: Viewer | None = None) -> list[dict[str, Any]]:
        """The final checks made on the split's test part, oldest first (``result`` decoded): every one for
        ``viewer`` None (the CLI, a laptop without sign-in), else that viewer's own only (a visitor not signed in:
        those made without sign-in)."""
        sql, args = "SELECT * FROM final_checks WHERE dataset_id = ? AND split_id = ?", [dataset_id, split_id]
        if viewer is not None:
            sql, args = f"{sql} AND {_OWN}", [*args, viewer.user or ""]
        rows = self.rows(sql + " ORDER BY check_id", args)
        return [{**r, "result": json.loads(r["result"]) if r["result"] else None} for r in rows]

__all__ = ["SplitsStore", "SPLIT_COLUMNS"]
