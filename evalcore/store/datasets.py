"""User datasets (uploads): the dataset's fields, and its frames as parquet blobs."""

from __future__ import annotations

import io
import json
from dataclasses import asdict
from typing import Any

import pandas as pd

from evalcore import model
from evalcore.model import Dataset, Dimension, empty_frame
from evalcore.identity import Viewer
from evalcore.store.connection import Connection, dumps, now
from evalcore.store.owners import visible_sql

FRAMES = ("documents", "items", "human_scores", "annotations", "preferences")


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

    def delete_dataset(self, dataset_id: str) -> None:
        with self.write() as c:
            c.execute("DELETE FROM datasets WHERE id = ?", (dataset_id,))
