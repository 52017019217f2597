"""Who owns a row and who sees it, on a server with sign-in (schema version 4; the rule: evalcore.identity.Viewer).

``owner`` is the signed-in user's name, NULL for a row written without sign-in; ``shared`` 1 means the lab sees it.
A listing given ``viewer=None`` scopes nothing (the CLI, a laptop without sign-in); given a Viewer, it keeps the rows
without an owner, the shared ones, and the viewer's own. Only the owner can share or unshare a row.
"""

from __future__ import annotations

from typing import Any

from evalcore.identity import Viewer
from evalcore.store.connection import Connection, now

# what can be shared: the table and its key columns
_KEYS = {"datasets": ("id",), "runs": ("run_id",), "criteria": ("dataset_id", "dimension", "hash")}


def visible_sql(viewer: Viewer | None, alias: str = "") -> tuple[str, list[Any]]:
    """A WHERE condition (never empty: "1 = 1" when nothing is scoped) and its arguments: the rows ``viewer`` sees."""
    if viewer is None:
        return "1 = 1", []
    p = f"{alias}." if alias else ""
    cond = f'({p}"owner" IS NULL OR {p}"owner" = \'\' OR {p}"shared" = 1'
    if viewer.user is None:
        return cond + ")", []
    return cond + f' OR {p}"owner" = ?)', [viewer.user]


def visible_labels_sql(viewer: Viewer | None) -> tuple[str, list[Any]]:
    """The same rule for label rows: a user's labels on a dataset are shared as a set (the ``label_shares`` table)."""
    if viewer is None:
        return "1 = 1", []
    cond = ('(labels."owner" IS NULL OR labels."owner" = \'\' OR EXISTS (SELECT 1 FROM label_shares s'
            ' WHERE s.dataset_id = labels.dataset_id AND s.owner = labels.owner)')
    if viewer.user is None:
        return cond + ")", []
    return cond + ' OR labels."owner" = ?)', [viewer.user]


class OwnersStore(Connection):
    def share(self, table: str, key: tuple | list, owner: str, shared: bool = True) -> bool:
        """Share (or unshare) ``owner``'s row of ``table`` (datasets, runs, criteria) with the lab; True when a row
        of theirs changed (another user's row, or one without an owner, is left alone)."""
        cols = _KEYS[table]
        if len(key) != len(cols):
            raise ValueError(f"{table} rows are keyed by {', '.join(cols)}")
        where = " AND ".join(f'"{c}" = ?' for c in cols)
        with self.write() as c:
            cur = c.execute(f'UPDATE "{table}" SET "shared" = ? WHERE {where} AND "owner" = ?',
                            (int(bool(shared)), *key, owner))
            return cur.rowcount > 0

    def owner_of(self, table: str, key: tuple | list) -> tuple[str | None, bool]:
        """(owner, shared) of a row; (None, False) when there is no such row."""
        cols = _KEYS[table]
        where = " AND ".join(f'"{c}" = ?' for c in cols)
        row = self.conn.execute(f'SELECT "owner", "shared" FROM "{table}" WHERE {where}', tuple(key)).fetchone()
        return (None, False) if row is None else (row[0] or None, bool(row[1]))

    def share_labels(self, dataset_id: str, owner: str, shared: bool = True) -> None:
        """Share (or unshare) ``owner``'s labels on a dataset with the lab: those given later too."""
        with self.write() as c:
            if shared:
                self._insert("label_shares", [{"dataset_id": dataset_id, "owner": owner, "shared_at": now()}],
                             ignore=True)
            else:
                c.execute("DELETE FROM label_shares WHERE dataset_id = ? AND owner = ?", (dataset_id, owner))

    def labels_shared(self, dataset_id: str, owner: str) -> bool:
        return self.conn.execute("SELECT 1 FROM label_shares WHERE dataset_id = ? AND owner = ?",
                                 (dataset_id, owner)).fetchone() is not None
