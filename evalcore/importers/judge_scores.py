"""Judge scores as runs: judge-score columns of an uploaded table, or a judge-score file for a dataset already in the
store.

A judge score needs no scale: any finite real number is valid (an LLM's 1-5 score, a negative log-likelihood). A
cell that holds no number becomes a failed judgment with its reason, counted like an unparsable reply, never a
silent 0; a column without a single number is a problem. A judge-score file is keyed by ``item_id`` or by
(``doc_id``, ``system_id``), optionally with a ``dimension`` column; keys that match no item are problems that name
them, and partial coverage is allowed and reported.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from evalcore.importers.categories import encode_column
from evalcore.importers.cells import id_column, near_keys, rating_column
from evalcore.importers.mapping import JudgeColumn, column_key, suggest_mapping
from evalcore.importers.problems import Problems
from evalcore.importers.readers import Source, open_upload
from evalcore.model import JUDGMENT_COLUMNS, STATUS_FAILED, STATUS_OK, Dataset, Dimension, Run

if TYPE_CHECKING:
    from evalcore.importers.dataset import TableCheck

METHOD = "imported"  # Run.method of judge scores brought from a file
ESTIMATOR = "score as given"


def run_slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "judge"


def run_id_for(dataset_id: str, name: str) -> str:
    """Deterministic: importing the same judge scores again replaces the run rather than adding a copy."""
    return f"{dataset_id}/scores-{run_slug(name)}"


def _raw_text(column: pd.Series) -> np.ndarray:
    """The cell as written (the 'raw reply' of an imported score)."""
    if pd.api.types.is_string_dtype(column.dtype) and column.dtype != object:
        return column.fillna("").to_numpy(dtype=object)
    return np.array(["" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in column],
                    dtype=object)


def judgments_from_cells(items: np.ndarray, dims: np.ndarray, column: pd.Series) -> pd.DataFrame:
    """JUDGMENT_COLUMNS from one column of scores: ok where the cell is a finite number, failed with a reason else."""
    values, blank, why = rating_column(column)
    ok = ~np.isnan(values)
    why_not = np.where(ok, "", np.where(blank, "blank cell: no score given",
                                        why.fillna("").to_numpy(dtype=object)))
    reason = [r.replace("rating", "score", 1) if r else r for r in why_not]
    return pd.DataFrame({"item_id": items, "dimension": dims, "raw": _raw_text(column), "value": values,
                         "status": np.where(ok, STATUS_OK, STATUS_FAILED), "reason": reason,
                         "estimator": ESTIMATOR})[JUDGMENT_COLUMNS]


def verdict_words(frame: pd.DataFrame, column: pd.Series, rows: np.ndarray, dimensions: dict[str, Dimension],
                  name: str, problems: Problems) -> pd.DataFrame:
    """Judge verdicts written as words (pass/fail, A/B/tie) for a dimension with labels: the code of the label they
    name (``Dimension.encode``: case and surrounding spaces ignored), a judgment like any score. A word that is no
    label of its dimension is a problem naming its row (a blank cell stays a failed judgment: no verdict given).
    ``frame``: judgments_from_cells of ``column``, row for row; ``rows``: the rows as a person counts them."""
    dims = frame["dimension"].to_numpy(dtype=object)
    failed = (frame["status"] != STATUS_OK).to_numpy() & (frame["raw"].str.strip() != "").to_numpy()
    for dim in [d for d in pd.unique(dims[failed]) if d in dimensions and dimensions[d].labels]:
        sel = failed & (dims == dim)
        d = dimensions[dim]
        enc = encode_column(column[sel], d)
        idx = np.flatnonzero(sel)
        ok = idx[~np.isnan(enc.values)]
        frame.loc[ok, "value"] = enc.values[~np.isnan(enc.values)]
        frame.loc[ok, ["status", "reason"]] = [STATUS_OK, ""]
        for r, v in zip(rows[idx[enc.unknown]].tolist(), column[sel][enc.unknown].tolist()):
            problems.add(int(r), name, f"judge verdict {str(v)[:40]!r} is not one of the labels of {dim!r}: "
                                       f"{', '.join(map(repr, d.labels))} (leave the cell blank where the judge gave "
                                       "no verdict)", phase=9)
    return frame


def _dedupe(frame: pd.DataFrame, rows: np.ndarray, column: str, unit: str, problems: Problems) -> pd.DataFrame:
    """The same (item, dimension) on several rows (per-annotator rows) must carry the same score; keep the first."""
    key = ["item_id", "dimension"]
    frame = frame.assign(_row=rows)
    first = frame.groupby(key, sort=False)[["value", "raw", "_row"]].transform("first")
    same = (frame["value"] == first["value"]) | (frame["value"].isna() & first["value"].isna())
    for r, i, d, r0 in zip(frame.loc[~same, "_row"], frame.loc[~same, "item_id"], frame.loc[~same, "dimension"],
                           first.loc[~same, "_row"]):
        problems.add(int(r), column, f"judge score for item {i!r}, dimension {d!r} differs from the one on {unit} "
                                     f"{int(r0)}", phase=9)
    return frame[~frame.duplicated(key, keep="first")].drop(columns="_row").reset_index(drop=True)


def column_runs(check: TableCheck, dataset_id: str, dimensions: list[Dimension], source_file: str, digest: str,
                problems: Problems) -> list[Run]:
    """The runs of the mapping's judge columns, from a table the dataset checks have run over (verdict words map
    through their dimension's labels)."""
    m = check.mapping
    runs: list[Run] = []
    names: dict[str, str] = {}
    for j in m.judges:
        if j.column not in check.present:
            continue  # reported by check_mapping
        rid = run_id_for(dataset_id, j.run_name)
        if rid in names:
            problems.add("-", j.column, f"judge columns {names[rid]!r} and {j.column!r} would both become run "
                                        f"{j.run_name!r}; name them apart", block=Problems.AFTER)
            continue
        names[rid] = j.column
        frame = _column_frame(check, j, dimensions, problems)
        if frame is None:
            continue
        runs.append(_run(rid, dataset_id, j.run_name, frame,
                         {"file": source_file, "sha256": digest, "column": j.column}))
    return runs


def _column_frame(check: TableCheck, j: JudgeColumn, dimensions: list[Dimension], problems: Problems
                  ) -> pd.DataFrame | None:
    m = check.mapping
    dimension_names = [d.name for d in dimensions]
    ok = check.valid_item.copy()
    if m.shape == "long":
        dims = id_column(check.frame[m.dimension]).to_numpy() if m.dimension in check.present else None
        if dims is None:
            return None
        ok &= pd.notna(dims)
    else:
        dim = j.dimension or (dimension_names[0] if len(dimension_names) == 1 else None)
        if dim is None or dim not in dimension_names:
            problems.add("-", j.column, (f"judge column {j.column!r} scores dimension {dim!r}, which has no human "
                                         if dim else f"judge column {j.column!r}: say which dimension it scores ")
                         + f"(dimensions: {', '.join(map(repr, dimension_names)) or 'none'})", block=Problems.AFTER)
            return None
        dims = np.full(len(check.frame), dim, dtype=object)
    col = check.frame[j.column][ok]
    frame = judgments_from_cells(check.item.to_numpy()[ok], dims[ok], col)
    frame = verdict_words(frame, col, check.rows[ok], {d.name: d for d in dimensions}, j.column, problems)
    frame = _dedupe(frame, check.rows[ok], j.column, check.unit, problems)
    if not (frame["status"] == STATUS_OK).any() and len(frame):
        problems.add("-", j.column, f"judge column {j.column!r} holds no number at all (first cell: "
                                    f"{frame['raw'].iloc[0][:40]!r}); is it the right column?", block=Problems.AFTER)
        return None
    return frame


def _run(run_id: str, dataset_id: str, name: str, judgments: pd.DataFrame, origin: dict[str, str]) -> Run:
    n_ok = int((judgments["status"] == STATUS_OK).sum())
    config = {"imported_from": origin, "kind": "judge scores", "parse_mode": "as given",
              "stats": {"total": len(judgments), "ok": n_ok, "failed": len(judgments) - n_ok}}
    return Run(run_id=run_id, dataset_id=dataset_id, method=METHOD, model=name, label=name, config=config,
               parser="", origin="local", created_at=datetime.now(UTC).isoformat(timespec="seconds"),
               judgments=judgments)


# ---------------------------------------------------------------------------------------------------------------
# A judge-score file for a dataset already imported


_SCORE_ALIASES = ("judge_score", "judge", "score", "value", "prediction", "predicted", "pred", "rating", "metric",
                  "verdict", "label", "judgment", "judgement", "decision", "preference", "winner")
_RAW_ALIASES = ("raw", "reply", "raw_reply", "judge_reply", "response_text")


@dataclass
class ImportedRun:
    """A judge-score file read against a dataset: the run, and how much of the dataset it covers."""

    run: Run
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)  # dimension -> {"scored", "items"}
    warnings: list[str] = field(default_factory=list)
    unmatched: int = 0


def _pick(columns: list[str], aliases: tuple[str, ...], used: set[str]) -> str | None:
    by_norm = {column_key(c): c for c in columns if c not in used}
    return next((by_norm[a] for a in aliases if a in by_norm), None)


def _score_column(frame: pd.DataFrame, used: set[str], score_column: str | None, problems: Problems) -> str | None:
    cols = [str(c) for c in frame.columns]
    if score_column is not None:
        if score_column not in cols:
            problems.add("-", score_column, f"no column {score_column!r}; the columns are {', '.join(map(repr, cols))}",
                         block=Problems.READ)
            return None
        return score_column
    found = _pick(cols, _SCORE_ALIASES, used)
    if found is None:
        numeric = [c for c in cols if c not in used and (~np.isnan(rating_column(frame[c].head(200))[0])).any()]
        found = numeric[0] if len(numeric) == 1 else None
    if found is None:
        problems.add("-", "-", "cannot tell which column holds the judge scores: name it 'score' (or give the "
                               "score column)", block=Problems.READ)
    return found


def _keys(frame: pd.DataFrame, dataset: Dataset, problems: Problems, unit: str) -> tuple[np.ndarray, set[str]]:
    """The dataset item id of every row (None where unmatched, each unmatched key reported)."""
    guess = suggest_mapping(frame.columns)
    rows = frame.index.to_numpy()
    if guess.item_id is not None:
        ids = id_column(frame[guess.item_id])
        known = ids.isin(dataset.items["item_id"]).to_numpy() & ids.notna().to_numpy()
        for r, v in zip(rows[~known].tolist(), ids[~known].tolist()):
            problems.add(r, guess.item_id, "missing item_id (empty cell)" if pd.isna(v) else
                         f"item_id {v!r} matches no item of dataset {dataset.id!r}")
        return np.where(known, ids.to_numpy(dtype=object), np.array(None)), {guess.item_id}
    if guess.doc_id is None or guess.system_id is None:
        problems.add("-", "-", "the file needs an item_id column, or doc_id and system_id columns, to say which item "
                               f"each score is for; its columns are {', '.join(map(repr, frame.columns))}",
                     block=Problems.READ)
        return np.full(len(frame), None, dtype=object), set()
    doc, sys_ = id_column(frame[guess.doc_id]), id_column(frame[guess.system_id])
    lookup = pd.Series(dataset.items["item_id"].to_numpy(),
                       index=pd.MultiIndex.from_arrays([dataset.items["doc_id"].astype(str),
                                                        dataset.items["system_id"].astype(str)]))
    lookup = lookup[~lookup.index.duplicated()]
    pos = lookup.index.get_indexer(pd.MultiIndex.from_arrays([doc.fillna(""), sys_.fillna("")]))
    found = pos >= 0
    hint = _near_match_hint(dataset)
    for r, d, s in zip(rows[~found].tolist(), doc[~found].tolist(), sys_[~found].tolist()):
        problems.add(r, guess.doc_id, f"no item of dataset {dataset.id!r} has doc_id {d!r} and system_id {s!r}"
                                      + hint(d, s))
    items = np.full(len(frame), None, dtype=object)
    items[found] = lookup.to_numpy()[pos[found]]
    return items, {guess.doc_id, guess.system_id}


def _near_match_hint(dataset: Dataset) -> Callable[[object, object], str]:
    """A function giving " (the dataset has ...)" when an unmatched key differs from an item's only by whitespace,
    case or leading zeros."""
    items = dataset.items
    known = dict(zip(zip(near_keys(items["doc_id"]), near_keys(items["system_id"])),
                     zip(items["doc_id"], items["system_id"])))

    def hint(doc: object, system: object) -> str:
        near = known.get(tuple(near_keys(pd.Series([doc, system], dtype=object))))
        return (f" (the dataset has doc_id {near[0]!r} and system_id {near[1]!r}: whitespace, case or leading zeros "
                "differ)") if near else ""

    return hint


def _dimensions(frame: pd.DataFrame, dataset: Dataset, dimension: str | None, used: set[str],
                problems: Problems) -> np.ndarray:
    names = dataset.dimension_names
    dim_col = _pick([str(c) for c in frame.columns], ("dimension", "aspect", "criterion", "criteria"), used)
    rows = frame.index.to_numpy()
    if dim_col is not None and dimension is None:
        used.add(dim_col)
        dims = id_column(frame[dim_col])
        bad = ~dims.isin(names).to_numpy()
        for r, d in zip(rows[bad].tolist(), dims[bad].tolist()):
            problems.add(r, dim_col, "missing dimension (empty cell)" if pd.isna(d) else
                         f"dimension {d!r} is not one of dataset {dataset.id!r}'s: {', '.join(map(repr, names))}")
        return np.where(bad, np.array(None), dims.to_numpy(dtype=object))
    if dimension is None and len(names) == 1:
        dimension = names[0]
    if dimension is None or dimension not in names:
        problems.add("-", "-", (f"dimension {dimension!r} is not one of dataset {dataset.id!r}'s" if dimension else
                                "say which dimension the scores are for (a dimension column or --dimension)")
                     + f": {', '.join(map(repr, names))}", block=Problems.READ)
        return np.full(len(frame), None, dtype=object)
    return np.full(len(frame), dimension, dtype=object)


def load_run_scores(source: Source, dataset: Dataset, *, name: str, dimension: str | None = None,
                    score_column: str | None = None, filename: str | None = None) -> ImportedRun:
    """A judge-score file for ``dataset`` as a run named ``name``, or DatasetValidationError with every problem
    (each key that matches no item among them)."""
    upload = open_upload(source, filename)
    fname, data, frame, problems, unit = upload.name, upload.data, upload.frame, upload.problems, upload.problems.unit
    items, used = _keys(frame, dataset, problems, unit)
    dims = _dimensions(frame, dataset, dimension, used, problems)
    score = _score_column(frame, used, score_column, problems)
    upload.raise_if_problems()
    assert score is not None, "_score_column reports a file whose score column it cannot tell"
    judgments = judgments_from_cells(items, dims, frame[score])
    judgments = verdict_words(judgments, frame[score], frame.index.to_numpy(),
                              {d.name: d for d in dataset.dimensions}, score, problems)
    raw_col = _pick([str(c) for c in frame.columns], _RAW_ALIASES, used | {score})
    if raw_col is not None:
        judgments["raw"] = [r if r else s for r, s in zip(_raw_text(frame[raw_col]), judgments["raw"])]
    judgments = _dedupe(judgments, frame.index.to_numpy(), score, unit, problems)
    upload.raise_if_problems()
    digest = hashlib.sha256(data).hexdigest()
    run = _run(run_id_for(dataset.id, name), dataset.id, name, judgments,
               {"file": Path(fname).name, "sha256": digest, "column": score})
    return ImportedRun(run=run, coverage=coverage(run, dataset), warnings=_coverage_warnings(run, dataset))


def coverage(run: Run, dataset: Dataset) -> dict[str, dict[str, int]]:
    j = run.judgments
    return {d: {"scored": int(((j["dimension"] == d) & (j["status"] == STATUS_OK)).sum()),
                "failed": int(((j["dimension"] == d) & (j["status"] != STATUS_OK)).sum()),
                "items": len(dataset.items)} for d in run.dimensions}


def _coverage_warnings(run: Run, dataset: Dataset) -> list[str]:
    out = []
    for d, c in coverage(run, dataset).items():
        if c["scored"] + c["failed"] < c["items"]:
            out.append(f"{d}: {c['scored'] + c['failed']} of {c['items']} items have a score in the file "
                       "(partial coverage: the analysis uses those items)")
        if c["failed"]:
            out.append(f"{d}: {c['failed']} cells hold no usable number (counted as failed judgments)")
    return out
