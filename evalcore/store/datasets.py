"""User datasets (uploads): the dataset's fields, and its frames as parquet blobs."""

from __future__ import annotations

import io
import json
from dataclasses import asdict
from typing import Any

import pandas as pd

from evalcore import model
from evalcore.model import Dataset, Dimension, counted, empty_frame
from evalcore.identity import Viewer
from evalcore.store.connection import Connection, dumps, now
from evalcore.store.owners import visible_sql

FRAMES = ("documents", "items", "human_scores", "annotations", "preferences")
# What deleting a dataset deletes, counted before it is deleted: one query each, keyed by the dataset's id.
_RUNS_OF = "SELECT run_id FROM runs WHERE dataset_id = ?"
_FOOTPRINT_SQL = {
    "runs": "SELECT count(*) FROM runs WHERE dataset_id = ?",
    "judgments": f"SELECT count(*) FROM judgments WHERE run_id IN ({_RUNS_OF})",
    "comparisons": f"SELECT count(*) FROM comparisons WHERE run_id IN ({_RUNS_OF})",
    "labels": "SELECT count(*) FROM labels WHERE dataset_id = ?",
    "criteria": "SELECT count(*) FROM criteria WHERE dataset_id = ?",
    "splits": "SELECT count(*) FROM splits WHERE dataset_id = ?",
    "final_checks": "SELECT count(*) FROM final_checks WHERE dataset_id = ?",
}


def _frame_to_blob(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.reset_index(drop=True).to_parquet(buf, index=False)
    return buf.getvalue()


def _frame_from_blob(blob: bytes | None) -> pd.DataFrame:
    if not blob:
        return pd.DataFrame()
    frame = pd.read_parquet(io.BytesIO(blob))
    for col in frame.columns:  # parquet gives numpy arrays for list columns; the model says list[str]
        if frame[col].dtype == object and len(frame) and hasattr(frame[col].iloc[0], "tolist") \
                and not isinstance(frame[col].iloc[0], str):
            frame[col] = [list(x) if x is not None else [] for x in frame[col]]
    return frame


def _with_columns(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """A frame with at least the model's columns: a dataset uploaded without ratings (texts only) has empty
    human_scores/annotations, possibly saved without columns, and every reader selects them by name."""
    columns = {"documents": model.DOCUMENT_COLUMNS, "items": model.ITEM_COLUMNS,
               "human_scores": model.HUMAN_SCORE_COLUMNS, "annotations": model.ANNOTATION_COLUMNS,
               "preferences": model.PREFERENCE_COLUMNS}[name]
    missing = [c for c in columns if c not in frame.columns]
    if not missing:
        return frame
    if not frame.empty:
        return frame  # a non-empty frame lacking a column is the loader's error to report, not ours to hide
    return empty_frame(list(frame.columns) + missing)


class DatasetsStore(Connection):
    def save_dataset(self, dataset: Dataset, *, overwrite: bool = False, owner: str | None = None) -> None:
        """Save an upload; ``owner``: the signed-in user who uploaded it (None without sign-in). Replacing keeps the
        row's sharing; a dataset another user uploaded is never replaced by someone else."""
        if not overwrite and self.has_dataset(dataset.id):
            raise ValueError(f"a dataset with id {dataset.id!r} is already saved in {self.path}; "
                             "pass overwrite=True to replace it")
        row: dict[str, Any] = {"id": dataset.id, "name": dataset.name, "task": dataset.task,
                               "description": dataset.description, "citation": dataset.citation,
                               "origin": dataset.origin, "dimensions": dumps([asdict(d) for d in dataset.dimensions]),
                               "meta": dumps(dataset.meta), "created_at": now(), "owner": owner, "shared": 0}
        for f in FRAMES:
            row[f] = _frame_to_blob(getattr(dataset, f))
        with self.write() as c:
            old = c.execute("SELECT owner, shared FROM datasets WHERE id = ?", (dataset.id,)).fetchone()
            if old is not None and old[0] and old[0] != owner:
                raise ValueError(f"a dataset with id {dataset.id!r} was uploaded by another user: pick another "
                                 "name for yours")
            if old is not None:
                row["owner"], row["shared"] = old[0] or owner, int(old[1] or 0)
            self._insert("datasets", [row], replace=True)

    def load_dataset(self, dataset_id: str) -> Dataset:
        rows = self.rows("SELECT * FROM datasets WHERE id = ?", (dataset_id,))
        if not rows:
            raise KeyError(f"no dataset {dataset_id!r} (neither bundled nor saved in {self.path})")
        d = rows[0]
        frames = {f: _with_columns(_frame_from_blob(d[f]), f) for f in FRAMES}
        return Dataset(id=d["id"], name=d["name"], task=d["task"],
                       dimensions=[Dimension(**x) for x in json.loads(d["dimensions"])],
                       description=d["description"] or "", citation=d["citation"] or "", origin=d["origin"] or "",
                       meta=json.loads(d["meta"] or "{}"), **frames)

    def find_datasets(self, id_or_name: str) -> list[str]:
        """The ids of the imported datasets whose id is ``id_or_name`` (that one alone), else whose name is."""
        if self.has_dataset(id_or_name):
            return [id_or_name]
        return [r[0] for r in self.conn.execute("SELECT id FROM datasets WHERE name = ? ORDER BY id", (id_or_name,))]

    def dataset_name(self, dataset_id: str) -> str:
        row = self.conn.execute("SELECT name FROM datasets WHERE id = ?", (dataset_id,)).fetchone()
        if row is None:
            raise KeyError(f"no imported dataset {dataset_id!r} in {self.path}")
        return str(row[0] or dataset_id)

    def datasets_version(self) -> str:
        """What changes whenever the list of uploads does (one imported, deleted or shared, labels made): a
        listing's cache keyed by it shows a deletion from the command line at once."""
        n, last, shared = self.conn.execute("SELECT count(*), max(created_at), COALESCE(SUM(shared), 0) FROM datasets").fetchone()
        labels = self.conn.execute("SELECT count(*), max(label_id) FROM labels").fetchone()
        return f"{n}|{last}|{int(shared)}|{labels[0]}|{labels[1]}"

    def has_dataset(self, dataset_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM datasets WHERE id = ?", (dataset_id,)).fetchone() is not None

    def list_datasets(self, *, viewer: Viewer | None = None) -> list[dict[str, Any]]:
        """The uploads ``viewer`` sees (None: all), with their owner ('' without sign-in) and sharing."""
        where, args = visible_sql(viewer)
        out = []
        for did, owner, shared in self.conn.execute(
                f"SELECT id, owner, shared FROM datasets WHERE {where} ORDER BY id", args).fetchall():
            ds = self.load_dataset(did)
            n_runs = self.conn.execute("SELECT count(*) FROM runs WHERE dataset_id = ?", (did,)).fetchone()[0]
            out.append({"id": ds.id, "name": ds.name, "task": ds.task, "items": int(len(ds.items)),
                        "systems": len(ds.systems), "dimensions": ds.dimension_names,
                        "annotators": len(ds.annotators), "runs": int(n_runs), "origin": "user",
                        "owner": owner or "", "shared": bool(shared)})
        return out

    def dataset_footprint(self, dataset_id: str) -> dict[str, int]:
        """What the store keeps for an imported dataset, counted per kind (DATASET_FOOTPRINT): what deleting it
        deletes. KeyError when no imported dataset has that id (a bundled one is not in the store)."""
        if not self.has_dataset(dataset_id):
            raise KeyError(f"no imported dataset {dataset_id!r} in {self.path} (a bundled dataset cannot be deleted)")
        return {what: int(self.conn.execute(sql, (dataset_id,)).fetchone()[0])
                for what, sql in _FOOTPRINT_SQL.items()}

    def others_relying_on(self, dataset_id: str, user: str | None) -> dict[str, int]:
        """Runs and labels on the dataset that are not ``user``'s own (another user's, or written without sign-in):
        what a signed-in user may not delete with their upload."""
        runs = self.conn.execute("SELECT count(*) FROM runs WHERE dataset_id = ? AND COALESCE(owner, '') != ?",
                                 (dataset_id, user or "")).fetchone()[0]
        labels = self.conn.execute("SELECT count(*) FROM labels WHERE dataset_id = ? AND COALESCE(owner, '') != ?",
                                   (dataset_id, user or "")).fetchone()[0]
        return {"runs": int(runs), "labels": int(labels)}

    def delete_dataset(self, dataset_id: str, *, by: Viewer | None = None) -> dict[str, int]:
        """Delete an imported dataset and everything the store keeps for it (its runs with their judgments,
        comparisons, draws, answers, leases and batches; labels and their sharing; criteria versions; splits and
        their final checks), in one transaction; what was deleted (``dataset_footprint``). The response cache and
        the spending record stay (they are not the dataset's).

        ``by`` None is the operator (the command line; a laptop without sign-in): any imported dataset. A signed-in
        viewer may delete only an upload of their own, and only while no one else's run or labels rely on it
        (PermissionError naming what does: the operator may delete it). KeyError when there is no such upload."""
        footprint = self.dataset_footprint(dataset_id)
        if by is not None:
            self.may_delete_dataset(dataset_id, by)
        run_ids = [r[0] for r in self.conn.execute("SELECT run_id FROM runs WHERE dataset_id = ?", (dataset_id,))]
        with self.write() as c:
            for start in range(0, len(run_ids), 500):  # SQLite's bound on a statement's parameters
                chunk = run_ids[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for t in ("judgments", "comparisons", "draws", "answers", "leases", "batches"):
                    c.execute(f'DELETE FROM "{t}" WHERE run_id IN ({marks})', chunk)
            for t in ("runs", "labels", "label_shares", "criteria", "final_checks", "splits"):
                c.execute(f'DELETE FROM "{t}" WHERE dataset_id = ?', (dataset_id,))
            c.execute("DELETE FROM datasets WHERE id = ?", (dataset_id,))
        return footprint

    def may_delete_dataset(self, dataset_id: str, by: Viewer) -> None:
        """PermissionError saying why the signed-in viewer ``by`` may not delete the dataset (see delete_dataset)."""
        owner, _shared = self.conn.execute("SELECT owner, shared FROM datasets WHERE id = ?", (dataset_id,)).fetchone()
        if not by.user:
            raise PermissionError("sign in to delete a dataset: only its uploader (or the server's operator) may")
        if not owner:
            raise PermissionError(f"dataset {dataset_id!r} was imported without sign-in, so it is everyone's: only "
                                  "the server's operator may delete it (python -m evalcore delete-dataset)")
        if owner != by.user:
            raise PermissionError(f"dataset {dataset_id!r} was uploaded by another user: only they (or the server's "
                                  "operator) may delete it")
        others = self.others_relying_on(dataset_id, by.user)
        if any(others.values()):
            raise PermissionError(
                f"dataset {dataset_id!r} holds {counted(others['runs'], 'run')} and {counted(others['labels'], 'label')} "
                "of other users (or made without sign-in): deleting it would delete their work; the server's "
                "operator may (python -m evalcore delete-dataset)")
