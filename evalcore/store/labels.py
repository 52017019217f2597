"""Human labels made on the Label page.

labels  label_id (autoincrement), dataset_id, item_id, dimension, annotator, value (NULL for a skip), skipped,
        strategy (how the item was chosen: random | stratified | uncertain:...), position (the annotator's running
        count on the dataset: the order items were shown in), shown_at, created_at, session
Append-only, the latest row of (dataset, item, dimension, annotator) winning (evalcore.labels.latest_labels). Why not
a unique key with replace: two tabs of one annotator can each write a row without either replacing the other's (both
are kept, the later wins, nothing is lost), a relabel keeps its history, and undo (delete the annotator's last row)
brings the previous label of that item back instead of erasing it.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from evalcore.identity import Viewer
from evalcore.store.connection import Connection, float_or_null, now
from evalcore.store.owners import visible_labels_sql

LABEL_COLUMNS = ["label_id", "dataset_id", "item_id", "dimension", "annotator", "value", "skipped", "strategy",
                 "position", "shown_at", "created_at", "session"]


def _check_owner(annotator: str, owner: str | None) -> None:
    """A signed-in user labels in their own name only (issue 21, item 6: a link's ``?annotator=alice`` or a labels
    file naming alice must not write as alice)."""
    if owner and str(annotator) != owner:
        raise ValueError(f"signed in as {owner!r}: a label cannot be saved under the annotator name {annotator!r}")


class LabelsStore(Connection):
    LABEL_COLUMNS = LABEL_COLUMNS

    def save_label(self, dataset_id: str, item_id: str, dimension: str, annotator: str, value: float | None, *,
                   skipped: bool = False, strategy: str = "random", shown_at: str | None = None,
                   session: str = "", created_at: str | None = None, owner: str | None = None) -> int:
        """One label (or a skip: value None, skipped=True) as one row, committed before returning; its label_id.
        ``owner``: the signed-in user (then the annotator must be that user), None without sign-in."""
        if not annotator or not str(annotator).strip():
            raise ValueError("a label needs an annotator name")
        _check_owner(annotator, owner)
        if value is None and not skipped:
            raise ValueError("a label needs a value (or skipped=True)")
        if value is not None and (isinstance(value, float) and math.isnan(value)):
            raise ValueError("a label's value cannot be NaN")
        with self.write() as c:
            pos = c.execute("SELECT COALESCE(MAX(position), 0) + 1 FROM labels WHERE dataset_id = ? AND annotator = ?",
                            (dataset_id, annotator)).fetchone()[0]
            label_id = self._insert("labels", [{
                "dataset_id": dataset_id, "item_id": str(item_id), "dimension": dimension, "annotator": annotator,
                "value": None if value is None else float(value), "skipped": int(bool(skipped)),
                "strategy": strategy, "position": int(pos), "shown_at": shown_at,
                "created_at": created_at or now(), "session": session, "owner": owner}])
            assert label_id is not None
            return int(label_id)

    def undo_label(self, dataset_id: str, annotator: str, *, dimensions: list[str] | None = None,
                   owner: str | None = None) -> dict[str, Any] | None:
        """Delete the annotator's last row on the dataset (on ``dimensions`` if given); the deleted row, or None.
        ``owner`` (signed in): only a row that user wrote, whatever annotator name is asked for."""
        _check_owner(annotator, owner)
        where, args = "dataset_id = ? AND annotator = ?", [dataset_id, annotator]
        if owner:
            where += " AND owner = ?"
            args.append(owner)
        if dimensions:
            where += f" AND dimension IN ({','.join('?' * len(dimensions))})"
            args += list(dimensions)
        with self.write() as c:
            cur = c.execute(f"SELECT * FROM labels WHERE {where} ORDER BY label_id DESC LIMIT 1", args)
            row = cur.fetchone()
            if row is None:
                return None
            d = dict(zip([x[0] for x in cur.description or ()], row))
            c.execute("DELETE FROM labels WHERE label_id = ?", (d["label_id"],))
        return d

    def label_rows(self, dataset_id: str | None = None, *, viewer: Viewer | None = None) -> pd.DataFrame:
        """Every label row (skips included) ``viewer`` sees (None: all), in the order written; LABEL_COLUMNS."""
        where, args = visible_labels_sql(viewer)
        if dataset_id is not None:
            where, args = f"dataset_id = ? AND {where}", [dataset_id, *args]
        frame = self.frame(f"SELECT * FROM labels WHERE {where} ORDER BY label_id", args)
        frame["value"] = frame["value"].astype(float)
        return frame[LABEL_COLUMNS]

    def labels_version(self, dataset_id: str) -> tuple[int, int]:
        """(row count, last label_id): changes whenever a label is written or undone (for cache keys)."""
        n, last = self.conn.execute("SELECT count(*), COALESCE(MAX(label_id), 0) FROM labels WHERE dataset_id = ?",
                                    (dataset_id,)).fetchone()
        return int(n), int(last)

    def labelled_datasets(self, *, viewer: Viewer | None = None) -> list[str]:
        """Ids of the datasets that have at least one (non-skip) label ``viewer`` sees."""
        where, args = visible_labels_sql(viewer)
        return [r[0] for r in self.conn.execute(
            f"SELECT DISTINCT dataset_id FROM labels WHERE skipped = 0 AND {where} ORDER BY dataset_id", args)]

    def insert_labels(self, rows: list[dict[str, Any]], *, owner: str | None = None) -> int:
        """Rows (as label_rows gives them, label_id ignored) in one transaction: all or nothing. ``owner`` (signed
        in): every row must be that user's own."""
        for r in rows:
            _check_owner(r["annotator"], owner)
        values = [{"dataset_id": r["dataset_id"], "item_id": str(r["item_id"]), "dimension": r["dimension"],
                   "annotator": r["annotator"], "value": float_or_null(r.get("value")),
                   "skipped": int(bool(r.get("skipped"))), "strategy": r.get("strategy") or "random",
                   "position": int(r["position"]), "shown_at": r.get("shown_at"),
                   "created_at": r.get("created_at") or now(), "session": r.get("session") or "", "owner": owner}
                  for r in rows]
        with self.write():
            self._insert("labels", values)
        return len(values)

    def delete_labels(self, dataset_id: str, annotator: str | None = None) -> int:
        where, args = ("dataset_id = ?", [dataset_id]) if annotator is None else \
            ("dataset_id = ? AND annotator = ?", [dataset_id, annotator])
        with self.write() as c:
            return int(c.execute(f"DELETE FROM labels WHERE {where}", args).rowcount)
