"""The import entry points: a table -> a Dataset and the runs of its judge-score columns, checked as a whole.

:func:`import_table` either returns everything (:class:`ImportResult`) or raises :class:`DatasetValidationError`
listing every problem found (file, row, column, what is wrong): an invalid file imports nothing. :func:`save_import`
writes a result to the store. The dataset id is ``"user-" + sha256(file bytes + mapping JSON)[:12]``, so re-uploading
the same file with the same mapping gives the same id; judge-score runs get ids derived from it and their names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evalcore.importers import dataset as build
from evalcore.importers.cells import near_keys
from evalcore.importers.judge_scores import column_runs
from evalcore.importers.mapping import ColumnMapping
from evalcore.importers.pairs import PAIRWISE_ROUTE, looks_pairwise
from evalcore.importers.problems import Problems
from evalcore.identity import upload_id
from evalcore.importers.readers import Source, open_upload
from evalcore.model import Dataset, Run, counted

if TYPE_CHECKING:
    from evalcore.store import Store

NEAR_DUPLICATE_COLUMNS = ("system_id", "doc_id", "item_id", "annotator", "dimension")


@dataclass
class ImportResult:
    dataset: Dataset
    runs: list[Run] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The CLI's --json document."""
        ds = self.dataset
        rated = set(ds.human_scores["dimension"])
        return {"dataset": ds.id, "runs": [r.run_id for r in self.runs], "items": len(ds.items),
                "dimensions": ds.dimension_names, "warnings": list(self.warnings),
                "kinds": {d.name: d.kind for d in ds.dimensions},
                "labels": {d.name: list(d.labels) for d in ds.dimensions if d.labels},
                "unrated": [d.name for d in ds.dimensions if d.name not in rated]}


def near_duplicates(values: pd.Series, what: str, limit: int = 5) -> list[str]:
    """Warnings for distinct ids that differ only by surrounding/inner whitespace, case or leading zeros
    (``gpt`` vs ``gpt ``, ``Doc7`` vs ``doc07``): they are imported as different ids, which is rarely meant."""
    uniq = pd.Series(pd.unique(values.dropna()), dtype="str")
    if len(uniq) < 2:
        return []
    key = near_keys(uniq)
    clash = key.duplicated(keep=False).to_numpy()
    if not clash.any():
        return []
    groups = uniq[clash].groupby(key[clash].to_numpy(), sort=False).agg(list)
    clashes = [g for g in groups if len(g) > 1]
    out = [f"{what}: {' and '.join(map(repr, g[:4]))} differ only by whitespace, case or leading zeros; they are "
           f"imported as {len(g)} different {what} values (fix the file if they are the same)" for g in clashes[:limit]]
    if len(clashes) > limit:
        out.append(f"{what}: {len(clashes) - limit} more groups of {what} values differ only by whitespace, case or "
                   "leading zeros")
    return out


def _id_warnings(check: build.TableCheck, ratings: build.Ratings) -> list[str]:
    found = {"system_id": check.system, "doc_id": pd.Series(check.doc_names, dtype="str"),
             "annotator": pd.Series(check.ann_names, dtype="str"),
             "dimension": pd.Series(ratings.dimension_order, dtype="str")}
    if check.col(check.mapping.item_id):
        found["item_id"] = pd.Series(check.item_names, dtype="str")
    return [w for what in NEAR_DUPLICATE_COLUMNS if what in found for w in near_duplicates(found[what], what)]


def import_table(source: Source, mapping: ColumnMapping, *, filename: str | None = None, name: str | None = None,
                 task: str = "user dataset", table: pd.DataFrame | None = None,
                 owner: str | None = None) -> ImportResult:
    """Import a human-rated table (and its judge-score columns, ``mapping.judges``), or raise
    DatasetValidationError listing every problem. ``source``: a path, bytes (with ``filename``), a ``(bytes,
    filename)`` pair, or an upload object with ``getvalue()`` and ``name``. ``table``: the table
    :func:`read_table` already read from these bytes (the app keeps it), so the file is not parsed twice. ``owner``:
    the signed-in user importing it (evalcore.identity.upload_id)."""
    upload = open_upload(source, filename, table=table)
    fname, data, frame, fmt, problems = upload.name, upload.data, upload.frame, upload.format, upload.problems
    build.check_mapping(mapping, [str(c) for c in frame.columns], problems)
    check = build.TableCheck(frame, mapping, problems)
    check.identities()
    check.item_consistency()
    check.documents()
    check.annotators()
    ratings = check.ratings()
    notes: list[str] = []
    dimensions = check.dimensions(ratings, notes)
    file_hash = hashlib.sha256(data)
    file_digest = file_hash.hexdigest()
    id_hash = file_hash.copy()
    id_hash.update(mapping.to_json().encode("utf-8"))  # = sha256(file bytes + mapping JSON), without a copy
    digest = id_hash.hexdigest()
    dataset_id = upload_id(digest, owner)  # a signed-in user's upload is keyed by their name too
    runs = column_runs(check, dataset_id, dimensions, Path(fname).name, file_digest, problems)
    if problems and looks_pairwise(frame.columns):  # said first: the other problems come from the wrong route
        problems.add("-", "-", f"this file is not ratings: {PAIRWISE_ROUTE}", block=Problems.READ, phase=-1)
    upload.raise_if_problems()

    items = build.items_frame(check)
    documents = build.documents_frame(check)
    human = build.human_scores_frame(check, ratings, notes)
    annotations = build.annotations_frame(check, ratings)
    if ratings.missing:
        notes.append(f"{ratings.missing} blank rating cells were treated as not rated")
    warnings = check.implicit + check.label_warnings + _id_warnings(check, ratings)
    if frame.attrs.get("delimiter", ",") != "," and fmt == "csv":
        notes.append(f"fields are separated by {frame.attrs['delimiter']!r} (detected from the header line)")
    notes += frame.attrs.get("notes", [])  # what a published layout's reader says of it (rating_sets.py)
    unrated = [d.name for d in dimensions if not (human["dimension"] == d.name).any()]
    if unrated:
        notes.append(f"no ratings yet for {', '.join(map(repr, unrated))}: label them on the Label page")
    ds = Dataset(
        id=dataset_id, name=name or Path(fname).stem, task=task, dimensions=dimensions, documents=documents,
        items=items, human_scores=human, annotations=annotations,
        description=f"Imported from {Path(fname).name}: {counted(len(items), 'item')}, "
                    f"{counted(len(documents), 'document')}, {counted(items['system_id'].nunique(), 'system')}, "
                    f"{counted(len(dimensions), 'dimension')}"
                    + (f" ({len(unrated)} with no ratings yet, to label)." if unrated else "."),
        origin=f"uploaded file {Path(fname).name} (sha256 {file_digest})",
        meta={"source_file": Path(fname).name, "sha256": file_digest, "format": fmt, "shape": mapping.shape,
              "row_convention": upload.convention, "mapping": mapping.to_dict(), "import_notes": notes,
              "import_warnings": warnings},
    )
    return ImportResult(ds, runs, warnings + [w for r in runs for w in _run_warnings(r)])


def _run_warnings(run: Run) -> list[str]:
    failed = int((run.judgments["status"] != "ok").sum())
    if not failed:
        return []
    return [f"run {run.label!r}: {failed} of {len(run.judgments)} cells hold no usable number (counted as failed "
            "judgments)"]


def load_user_dataset(source: Source, mapping: ColumnMapping, *, filename: str | None = None, name: str | None = None,
                      task: str = "user dataset") -> Dataset:
    """Import a human-rated table as a Dataset, or raise DatasetValidationError listing every problem.

    Per-annotator ratings go to ``annotations`` (group from the group column, else ``mapping.default_group``);
    ``human_scores`` is, per item and dimension, the mean over the "expert" group's ratings when there are any, else
    over all annotators' ratings. Judge-score columns (``mapping.judges``) are checked too; their runs come with
    :func:`import_table`."""
    return import_table(source, mapping, filename=filename, name=name, task=task).dataset


def save_import(result: ImportResult, store: Store | None = None, *, owner: str | None = None) -> None:
    """Write the dataset and its judge-score runs (replacing earlier imports of the same ids) in one transaction:
    if any write fails, nothing of this import is left in the store (an earlier import of the same ids stays).
    ``owner``: the signed-in user uploading it (None without sign-in)."""
    if store is None:
        from evalcore.store import default_store

        store = default_store()
    with store.write():  # the store's writes below join this transaction (Store.write is re-entrant)
        store.save_dataset(result.dataset, overwrite=True, owner=owner)
        save_runs(result.runs, store, owner=owner)


def save_runs(runs: list[Run], store: Store, *, owner: str | None = None) -> None:
    """Every run, or none of them (one transaction)."""
    with store.write():
        for run in runs:
            store.save_imported_run(run, owner=owner)
