"""Labelling campaigns (schema version 9): a dataset's items spread over k annotators each, locks on open items,
which campaign a label was given in, and the final label an adjudicator set.

campaigns               one row per campaign: the dataset and dimension, who made it (``creator``, the adjudicator),
                        k, how its items were chosen (``selection``, in words), the seed of the assignment, how long a
                        lock lasts (``lock_ttl_s``) and the numeric disagreement threshold.
campaign_assignments    (campaign, item, slot) -> annotator: slot 0..k-1 of an item is one of its k annotators;
                        ``position`` is the item's place in that annotator's queue.
campaign_locks          (campaign, item, slot) -> annotator, expires_at (seconds since the epoch): the item is open.
                        A lock whose expires_at has passed is free again; the ADJUDICATION slot is the adjudicator's.
campaign_labels         label_id -> campaign, slot: the label is an ordinary row of ``labels`` (annotator, value,
                        created_at, owner), so every analysis of labels reads it; this row says which campaign.
campaign_adjudications  appended, the latest per item winning: value, adjudicator, note, created_at. The one in
                        force is the item's human score on the campaign's dimension (evalcore.labels reads
                        ``dataset_adjudications``).

Every time is the caller's (``now``: seconds since the epoch from an injected clock), so lock expiry is tested on a
virtual clock. The rules (who may open, label, adjudicate) are in :mod:`evalcore.campaigns`; here each write is one
transaction that checks what it must atomically (a lock held by someone else is never overwritten).
"""

from __future__ import annotations

import uuid
from typing import Any

import pandas as pd

from evalcore.store.connection import now as utc_now
from evalcore.store.labels import LabelsStore

ADJUDICATION = -1  # the slot an adjudicator's lock takes
CAMPAIGN_COLUMNS = ("campaign_id", "dataset_id", "dimension", "name", "creator", "k", "selection", "seed",
                    "lock_ttl_s", "threshold", "created_at")
ASSIGNMENT_COLUMNS = ["item_id", "slot", "annotator", "position", "label_id", "value", "labelled_at"]
LABEL_COLUMNS = ["label_id", "item_id", "slot", "annotator", "value", "created_at", "shown_at"]
DATASET_ADJUDICATION_COLUMNS = ["campaign_id", "item_id", "dimension", "value", "adjudicator", "created_at"]


class LockHeld(Exception):
    """The item (or slot) is open by someone else until ``expires_at``."""

    def __init__(self, holder: str, expires_at: float) -> None:
        super().__init__(f"open by {holder} until {expires_at:.0f}")
        self.holder = holder
        self.expires_at = expires_at


def _campaign(d: dict[str, Any]) -> dict[str, Any]:
    return {**d, "k": int(d["k"]), "seed": int(d["seed"]), "lock_ttl_s": float(d["lock_ttl_s"]),
            "threshold": float(d["threshold"])}


class CampaignsStore(LabelsStore):  # a campaign's label is a labels row
    def create_campaign(self, row: dict[str, Any], assignments: list[tuple[str, int, str, int]]) -> str:
        """The campaign (``row``: CAMPAIGN_COLUMNS but campaign_id and created_at) and its assignments
        (item_id, slot, annotator, position), in one transaction; its campaign_id."""
        campaign_id = uuid.uuid4().hex[:12]
        created = row.get("created_at") or utc_now()
        values = {**row, "campaign_id": campaign_id, "created_at": created}
        with self.write():
            self._insert("campaigns", [{c: values[c] for c in CAMPAIGN_COLUMNS}])
            self._insert("campaign_assignments", [
                {"campaign_id": campaign_id, "item_id": str(i), "slot": int(s), "annotator": a, "position": int(p),
                 "assigned_at": created} for i, s, a, p in assignments])
        return campaign_id

    def campaign_row(self, campaign_id: str) -> dict[str, Any] | None:
        rows = self.rows("SELECT * FROM campaigns WHERE campaign_id = ?", (campaign_id,))
        return _campaign(rows[0]) if rows else None

    def campaign_rows(self, dataset_id: str | None = None, member: str | None = None) -> list[dict[str, Any]]:
        """Campaigns, newest first: of ``dataset_id`` when given, and where ``member`` (a user name) is the creator or
        an annotator when given."""
        sql, args = "SELECT * FROM campaigns c WHERE 1 = 1", []
        if dataset_id is not None:
            sql += " AND c.dataset_id = ?"
            args.append(dataset_id)
        if member is not None:
            sql += (" AND (c.creator = ? OR EXISTS (SELECT 1 FROM campaign_assignments a"
                    " WHERE a.campaign_id = c.campaign_id AND a.annotator = ?))")
            args += [member, member]
        return [_campaign(r) for r in self.rows(sql + " ORDER BY c.created_at DESC, c.campaign_id", args)]

    def campaign_assignments(self, campaign_id: str) -> pd.DataFrame:
        """Every assignment with its label when given (label_id, value, labelled_at NULL while not): ASSIGNMENT_COLUMNS,
        by annotator and position."""
        rows = self.rows(
            "SELECT a.item_id, a.slot, a.annotator, a.position, g.label_id, g.value, g.created_at AS labelled_at"
            " FROM campaign_assignments a LEFT JOIN"
            " (SELECT cl.slot, l.item_id, l.label_id, l.value, l.created_at FROM campaign_labels cl"
            "  JOIN labels l ON l.label_id = cl.label_id WHERE cl.campaign_id = ?) g"
            " ON g.item_id = a.item_id AND g.slot = a.slot"
            " WHERE a.campaign_id = ? ORDER BY a.annotator, a.position, a.slot, g.label_id",
            (campaign_id, campaign_id))
        frame = pd.DataFrame(rows, columns=ASSIGNMENT_COLUMNS)
        frame["value"] = frame["value"].astype(float)
        return frame.drop_duplicates(["item_id", "slot"], keep="last").reset_index(drop=True)

    def campaign_labels(self, campaign_id: str) -> pd.DataFrame:
        """The labels given in the campaign, in the order written: LABEL_COLUMNS (the annotator and time are the
        label row's own)."""
        rows = self.rows(
            "SELECT l.label_id, l.item_id, cl.slot, l.annotator, l.value, l.created_at, l.shown_at"
            " FROM campaign_labels cl JOIN labels l ON l.label_id = cl.label_id"
            " WHERE cl.campaign_id = ? ORDER BY l.label_id", (campaign_id,))
        frame = pd.DataFrame(rows, columns=LABEL_COLUMNS)
        frame["value"] = frame["value"].astype(float)
        return frame

    def take_campaign_lock(self, campaign_id: str, item_id: str, slot: int, annotator: str, *, now: float,
                           ttl_s: float, blocking_slots: tuple[int, ...] = ()) -> float:
        """Open (or keep open) the item's ``slot`` for ``annotator`` until now + ttl_s; that time. LockHeld when
        another user holds that slot, or any of ``blocking_slots`` of the item, on a lock that has not lapsed
        (one whose expires_at is still after ``now``). Checked and written in one transaction."""
        with self.write() as c:
            for holder, s, expires in c.execute(
                    "SELECT annotator, slot, expires_at FROM campaign_locks WHERE campaign_id = ? AND item_id = ?",
                    (campaign_id, str(item_id))).fetchall():
                if float(expires) > now and holder != annotator and (s == slot or s in blocking_slots):
                    raise LockHeld(str(holder), float(expires))
            c.execute("DELETE FROM campaign_locks WHERE campaign_id = ? AND item_id = ? AND slot = ?",
                      (campaign_id, str(item_id), int(slot)))
            until = float(now) + float(ttl_s)
            c.execute("INSERT INTO campaign_locks (campaign_id, item_id, slot, annotator, expires_at)"
                      " VALUES (?, ?, ?, ?, ?)", (campaign_id, str(item_id), int(slot), annotator, until))
        return until

    def release_campaign_lock(self, campaign_id: str, item_id: str, slot: int, annotator: str) -> bool:
        """Close the item's slot if ``annotator`` holds it; whether a lock was released."""
        with self.write() as c:
            return c.execute("DELETE FROM campaign_locks WHERE campaign_id = ? AND item_id = ? AND slot = ?"
                             " AND annotator = ?", (campaign_id, str(item_id), int(slot), annotator)).rowcount > 0

    def campaign_locks(self, campaign_id: str, *, now: float) -> list[dict[str, Any]]:
        """The locks that have not lapsed at ``now``."""
        return self.rows("SELECT item_id, slot, annotator, expires_at FROM campaign_locks WHERE campaign_id = ?"
                         " AND expires_at > ? ORDER BY item_id, slot", (campaign_id, float(now)))

    def save_campaign_label(self, campaign: dict[str, Any], item_id: str, slot: int, annotator: str, value: float, *,
                            now: float, shown_at: str | None, strategy: str, owner: str | None) -> int:
        """The label as a row of ``labels`` and its campaign link, the annotator's lock released, in one
        transaction; its label_id. LockHeld when someone else holds the slot (or the adjudicator the item)."""
        cid = campaign["campaign_id"]
        with self.write() as c:
            for holder, s, expires in c.execute(
                    "SELECT annotator, slot, expires_at FROM campaign_locks WHERE campaign_id = ? AND item_id = ?",
                    (cid, str(item_id))).fetchall():
                if float(expires) > now and holder != annotator and s in (slot, ADJUDICATION):
                    raise LockHeld(str(holder), float(expires))
            label_id = self.save_label(campaign["dataset_id"], str(item_id), campaign["dimension"], annotator,
                                       float(value), strategy=strategy, shown_at=shown_at, owner=owner)
            c.execute("INSERT INTO campaign_labels (label_id, campaign_id, slot) VALUES (?, ?, ?)",
                      (int(label_id), cid, int(slot)))
            c.execute("DELETE FROM campaign_locks WHERE campaign_id = ? AND item_id = ? AND slot = ?",
                      (cid, str(item_id), int(slot)))
        return int(label_id)

    def reassign_campaign_slot(self, campaign_id: str, item_id: str, slot: int, annotator: str) -> None:
        """Give the item's slot to ``annotator`` (its label, if any, stays with whoever gave it)."""
        with self.write() as c:
            c.execute("UPDATE campaign_assignments SET annotator = ? WHERE campaign_id = ? AND item_id = ? AND slot = ?",
                      (annotator, campaign_id, str(item_id), int(slot)))

    def add_adjudication(self, campaign_id: str, item_id: str, value: float, adjudicator: str, note: str = "",
                         created_at: str | None = None) -> str:
        """Append the final label of an item; its adjudication_id."""
        adjudication_id = uuid.uuid4().hex
        with self.write():
            self._insert("campaign_adjudications", [{
                "adjudication_id": adjudication_id, "campaign_id": campaign_id, "item_id": str(item_id),
                "value": float(value), "adjudicator": adjudicator, "note": note, "created_at": created_at or utc_now()}])
        return adjudication_id

    def adjudications(self, campaign_id: str) -> pd.DataFrame:
        """Every adjudication, oldest first: item_id, value, adjudicator, note, created_at."""
        rows = self.rows("SELECT item_id, value, adjudicator, note, created_at FROM campaign_adjudications"
                         " WHERE campaign_id = ? ORDER BY created_at, adjudication_id", (campaign_id,))
        frame = pd.DataFrame(rows, columns=["item_id", "value", "adjudicator", "note", "created_at"])
        frame["value"] = frame["value"].astype(float)
        return frame

    def dataset_adjudications(self, dataset_id: str) -> pd.DataFrame:
        """Every adjudication of the dataset's campaigns, oldest first: campaign_id, item_id, dimension (the
        campaign's), value, adjudicator, created_at. evalcore.labels takes the latest per (item, dimension) as the
        item's human score there."""
        rows = self.rows("SELECT a.campaign_id, a.item_id, c.dimension, a.value, a.adjudicator, a.created_at"
                         " FROM campaign_adjudications a JOIN campaigns c ON c.campaign_id = a.campaign_id"
                         " WHERE c.dataset_id = ? ORDER BY a.created_at, a.adjudication_id", (dataset_id,))
        frame = pd.DataFrame(rows, columns=DATASET_ADJUDICATION_COLUMNS)
        frame["value"] = frame["value"].astype(float)
        return frame

    def adjudications_version(self, dataset_id: str) -> int:
        """How many adjudications the dataset's campaigns hold (append-only: changes with each one; cache keys)."""
        row = self.conn.execute("SELECT count(*) FROM campaign_adjudications a JOIN campaigns c"
                                " ON c.campaign_id = a.campaign_id WHERE c.dataset_id = ?", (dataset_id,)).fetchone()
        return int(row[0])
