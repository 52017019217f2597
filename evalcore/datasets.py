"""The bundled datasets and published judge runs under ``data/`` (built by ``scripts/build_data.py``).

Datasets: ``summeval``, ``topical_chat``, ``qags_cnndm``, ``qags_xsum``, ``fed_dialogue``, ``zhang_pairs``. Each is a
``dataset.json`` manifest (dimensions, description, citation, origin, meta) plus Parquet tables following the column
conventions of :mod:`evalcore.model`.

Published runs keep the judges' raw replies only. Their values (or pairwise verdicts) are derived here, at load time,
by :mod:`evalcore.parsers` under the parse mode asked for: ``"robust"`` (the default: an unreadable reply is a counted
failure) or ``"paper"`` (the released scripts' rules, e.g. Shen et al.'s RTS rule that keeps -1 for a reply with no
score). The same replies can therefore be shown under both readings side by side; ``run.config["parse_mode"]``
records which one a loaded run used.

Caching: files are read once per process and parsed runs are cached per (run id, parse mode) with
:func:`functools.lru_cache`. Every public function returns a *fresh copy* (new DataFrames, new config/meta dicts), so
callers may modify what they get. The copies are shallow below the frame level: the ``references`` lists inside
``documents`` are the cached objects — replace them rather than mutating them in place.

``DATA_DIR`` is ``<repo>/data``; set ``EVALCORE_DATA_DIR`` to point elsewhere (e.g. an installed copy).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from evalcore import parsed_cache, parsers, settings
from evalcore.parsed_cache import RunEntry
from evalcore.model import (
    ANNOTATION_COLUMNS,
    COMPARISON_COLUMNS,
    DRAW_COLUMNS,
    DOCUMENT_COLUMNS,
    HUMAN_SCORE_COLUMNS,
    ITEM_COLUMNS,
    JUDGMENT_COLUMNS,
    PREFERENCE_COLUMNS,
    STATUS_FAILED,
    STATUS_OK,
    Dataset,
    Dimension,
    Run,
    empty_frame,
)

__all__ = ["DATA_DIR", "DATASET_IDS", "list_datasets", "load_dataset", "list_bundled_runs", "load_bundled_run"]

DATA_DIR: Path = Path(settings.current().data_dir or Path(__file__).resolve().parent.parent / "data")
DATASET_IDS: tuple[str, ...] = ("summeval", "topical_chat", "qags_cnndm", "qags_xsum", "fed_dialogue", "zhang_pairs",
                                 "pandalm", "llmbar_natural")

_TABLES: dict[str, list[str]] = {
    "documents": DOCUMENT_COLUMNS,
    "items": ITEM_COLUMNS,
    "human_scores": HUMAN_SCORE_COLUMNS,
    "annotations": ANNOTATION_COLUMNS,
    "preferences": PREFERENCE_COLUMNS,
}
_REBUILD_HINT = "run `python scripts/build_data.py` to (re)build the bundled data"


# ----------------------------------------------------------------------------------------------------------------
# File access (cached; the cached objects are never handed out)
# ----------------------------------------------------------------------------------------------------------------


def _path(relpath: str) -> Path:
    path = DATA_DIR / relpath
    if not path.is_file():
        raise FileNotFoundError(f"bundled data file missing: {path} ({_REBUILD_HINT})")
    return path


@functools.lru_cache(maxsize=None)
def _json(relpath: str) -> Any:
    path = _path(relpath)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); {_REBUILD_HINT}") from exc


def _parquet(relpath: str, required: list[str]) -> pd.DataFrame:
    path = _path(relpath)
    table = pq.read_table(path)
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; has {table.column_names}. {_REBUILD_HINT}")
    frame = table.to_pandas()
    if "references" in table.column_names:
        # Arrow lists arrive as numpy arrays; the data model says list[str].
        frame["references"] = table.column("references").to_pylist()
    return frame


def _check_dataset_id(dataset_id: str) -> None:
    if dataset_id not in DATASET_IDS:
        raise KeyError(f"no bundled dataset {dataset_id!r}; bundled: {list(DATASET_IDS)}")


def _manifest(dataset_id: str) -> dict[str, Any]:
    _check_dataset_id(dataset_id)
    return _json(f"datasets/{dataset_id}/dataset.json")


def _run_entries() -> list[RunEntry]:
    return _json("runs/manifest.json")["runs"]


def bundled_run_dimensions(run_id: str) -> list[str] | None:
    """The dimensions a bundled run scored, read from one column of its file without building the run; None when
    ``run_id`` is not bundled."""
    entry = next((e for e in _run_entries() if e["run_id"] == run_id), None)
    if entry is None:
        return None
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    column = pq.read_table(_path(entry["file"]), columns=["dimension"])["dimension"]
    return [str(d) for d in pc.unique(column).to_pylist()]


@functools.lru_cache(maxsize=1)
def bundled_run_ids() -> frozenset[str]:
    """The ids of every published run shipped with the package (read once: the manifest never changes at run
    time). A membership test without building the runs (``list_bundled_runs`` builds each one)."""
    return frozenset(e["run_id"] for e in _run_entries())


def _run_entry(run_id: str) -> RunEntry:
    for entry in _run_entries():
        if entry["run_id"] == run_id:
            return entry
    known = [e["run_id"] for e in _run_entries()]
    raise KeyError(f"no bundled run {run_id!r}; bundled runs: {known}")


# ----------------------------------------------------------------------------------------------------------------
# Datasets
# ----------------------------------------------------------------------------------------------------------------


def list_datasets() -> list[dict[str, Any]]:
    """One summary row per bundled dataset (read from the small manifests; no table is loaded).

    ``annotators`` counts the distinct raters in the per-annotator ratings or, for pairwise data, in the
    preferences (0 when only aggregated scores were released); ``runs`` counts the bundled published runs."""
    runs_per_dataset: dict[str, int] = {}
    for entry in _run_entries():
        runs_per_dataset[entry["dataset_id"]] = runs_per_dataset.get(entry["dataset_id"], 0) + 1
    out = []
    for dataset_id in DATASET_IDS:
        m = _manifest(dataset_id)
        out.append({
            "id": m["id"],
            "name": m["name"],
            "task": m["task"],
            "items": m["counts"]["items"],
            "systems": m["counts"]["systems"],
            "dimensions": [d["name"] for d in m["dimensions"]],
            "annotators": m["counts"]["annotators"],
            "runs": runs_per_dataset.get(dataset_id, 0),
        })
    return out


@functools.lru_cache(maxsize=None)
def _dataset(dataset_id: str) -> Dataset:
    m = _manifest(dataset_id)
    tables = {
        name: (_parquet(f"datasets/{dataset_id}/{name}.parquet", columns) if name in m["tables"]
               else empty_frame(columns))
        for name, columns in _TABLES.items()
    }
    return Dataset(
        id=m["id"],
        name=m["name"],
        task=m["task"],
        dimensions=[Dimension(d["name"], float(d["scale_min"]), float(d["scale_max"]), d.get("description", ""))
                    for d in m["dimensions"]],
        documents=tables["documents"],
        items=tables["items"],
        human_scores=tables["human_scores"],
        annotations=tables["annotations"],
        preferences=tables["preferences"],
        description=m.get("description", ""),
        citation=m.get("citation", ""),
        origin=m.get("origin", ""),
        meta=m.get("meta", {}),
    )


def load_dataset(dataset_id: str) -> Dataset:
    """A bundled dataset with all its tables (a fresh copy: see the module docstring on caching)."""
    d = _dataset(dataset_id)
    return dataclasses.replace(
        d,
        dimensions=list(d.dimensions),
        documents=d.documents.copy(),
        items=d.items.copy(),
        human_scores=d.human_scores.copy(),
        annotations=d.annotations.copy(),
        preferences=d.preferences.copy(),
        meta=copy.deepcopy(d.meta),
    )


# ----------------------------------------------------------------------------------------------------------------
# Published runs
# ----------------------------------------------------------------------------------------------------------------


def _bare_run(entry: RunEntry) -> Run:
    return Run(
        run_id=entry["run_id"],
        dataset_id=entry["dataset_id"],
        method=entry["method"],
        model=entry["model"],
        label=entry["label"],
        config=copy.deepcopy(entry["config"]),
        parser=entry["parser"],
        origin=entry.get("origin", "published"),
        created_at=entry.get("created_at", ""),
    )


def list_bundled_runs(dataset_id: str) -> list[Run]:
    """The published runs on one dataset, without judgments (cheap: only the manifest is read)."""
    _check_dataset_id(dataset_id)
    return [_bare_run(e) for e in _run_entries() if e["dataset_id"] == dataset_id]


def _scale_for(entry: RunEntry, dimension: str) -> tuple[float, float]:
    config = entry["config"]
    if "scales" in config:
        lo, hi = config["scales"][dimension]
    else:
        lo, hi = config["scale"]
    return (float(lo), float(hi))


def _parse_judgments(raw: pd.DataFrame, entry: RunEntry, mode: str) -> pd.DataFrame:
    config = entry["config"]
    parser = entry["parser"]
    multi = int(config.get("n", 1)) > 1
    memo: dict[tuple[str, tuple[float, float]], parsers.Parsed] = {}

    def one(text: str, scale: tuple[float, float]) -> parsers.Parsed:
        # Replies repeat a lot ("3", "A", "Score: 4."), so each distinct text is parsed once per load.
        key = (text, scale)
        p = memo.get(key)
        if p is None:
            p = memo[key] = parsers.parse_reply(parser, text, mode=mode, scale=scale)
        return p

    values, statuses, reasons, estimators = [], [], [], []
    scales = {d: _scale_for(entry, d) for d in raw["dimension"].unique()}
    for text, dim in zip(raw["raw"].tolist(), raw["dimension"].tolist()):
        scale = scales[dim]
        if multi:
            # G-Eval's estimator (000 Eq. 1 with sampled probabilities): the mean of the parsed samples.
            samples = json.loads(text)
            p = parsers.sample_mean([one(s, scale) for s in samples], mode=mode)
            estimators.append(f"sample-mean(n={len(samples)})")
        else:
            p = one(text, scale)
            estimators.append("single")
        values.append(p.value if p.ok else math.nan)
        statuses.append(STATUS_OK if p.ok else STATUS_FAILED)
        reasons.append(p.reason)
    out = raw[["item_id", "dimension", "raw"]].copy()
    out["value"] = pd.Series(values, index=out.index, dtype="float64")
    out["status"] = statuses
    out["reason"] = reasons
    out["estimator"] = estimators
    return out[JUDGMENT_COLUMNS].reset_index(drop=True)


def _parse_comparisons(raw: pd.DataFrame, mode: str) -> pd.DataFrame:
    memo: dict[str, parsers.Verdict] = {}
    verdicts, statuses, reasons = [], [], []
    for text in raw["raw"].tolist():
        v = memo.get(text)
        if v is None:
            v = memo[text] = parsers.parse_pairwise(text, mode=mode)
        verdicts.append(v.verdict if v.ok else None)
        statuses.append(STATUS_OK if v.ok else STATUS_FAILED)
        reasons.append(v.reason)
    out = raw.copy()
    out["verdict"] = verdicts
    out["status"] = statuses
    out["reason"] = reasons
    return out[COMPARISON_COLUMNS].reset_index(drop=True)


def _raw_replies(entry: RunEntry) -> pd.DataFrame:
    if entry["kind"] == "comparisons":
        return _parquet(entry["file"], [c for c in COMPARISON_COLUMNS if c not in ("verdict", "status", "reason")])
    return _parquet(entry["file"], ["item_id", "dimension", "raw"])


def parse_bundled(entry: RunEntry, raw: pd.DataFrame, mode: str) -> pd.DataFrame:
    """The run's table with its replies parsed now (what ``scripts/build_parsed.py`` stores)."""
    if entry["kind"] == "comparisons":
        return _parse_comparisons(raw, mode)
    return _parse_judgments(raw, entry, mode)


def parse_fingerprint(entry: RunEntry, mode: str) -> str:
    """What a pre-parsed file of this run must carry to be used (evalcore.parsed_cache)."""
    glue = (_scale_for, _parse_judgments, _parse_comparisons, parse_bundled, _with_parsed)
    return parsed_cache.fingerprint(DATA_DIR, entry, mode, glue)


def _with_parsed(entry: RunEntry, raw: pd.DataFrame, mode: str) -> pd.DataFrame:
    """The run's table: the pre-parsed columns when data/parsed holds a current file for them, else parsed now."""
    columns = parsed_cache.parsed_columns(entry)
    cached = parsed_cache.read(parsed_cache.parsed_path(DATA_DIR, entry, mode), parse_fingerprint(entry, mode),
                               columns, len(raw))
    if cached is None:
        return parse_bundled(entry, raw, mode)
    out = raw.reset_index(drop=True).copy()
    for c in columns:
        out[c] = cached[c]
    return out[COMPARISON_COLUMNS if entry["kind"] == "comparisons" else JUDGMENT_COLUMNS]


def _parse_draws(raw: pd.DataFrame, entry: RunEntry, mode: str) -> pd.DataFrame:
    """Every sample of a run that sampled n > 1 replies per item (raw a JSON list), parsed one by one: the run's
    draws (DRAW_COLUMNS; ``draw`` is the sample's position in the released list). A sample that cannot be read is
    a failed draw (value NaN) under either mode: the paper rule's 0 belongs to its estimator, not to the draw."""
    config = entry["config"]
    if entry["kind"] != "judgments" or int(config.get("n", 1)) <= 1:
        return empty_frame(DRAW_COLUMNS)
    lists = raw["raw"].map(json.loads)
    frame = raw[["item_id", "dimension"]].assign(raw=lists).explode("raw", ignore_index=False)
    frame["draw"] = frame.groupby(level=0).cumcount()
    frame = frame.reset_index(drop=True)
    scales = {d: _scale_for(entry, d) for d in frame["dimension"].unique()}
    memo: dict[tuple[str, str], parsers.Parsed] = {}
    values, statuses, reasons = [], [], []
    for text, dim in zip(frame["raw"].tolist(), frame["dimension"].tolist()):
        p = memo.get((text, dim))
        if p is None:
            p = memo[(text, dim)] = parsers.parse_reply(entry["parser"], text, mode=mode, scale=scales[dim])
        values.append(p.value if p.ok else math.nan)
        statuses.append(STATUS_OK if p.ok else STATUS_FAILED)
        reasons.append(p.reason)
    frame["value"] = pd.Series(values, index=frame.index, dtype="float64")
    frame["status"] = statuses
    frame["reason"] = reasons
    return frame[DRAW_COLUMNS]


@functools.lru_cache(maxsize=64)
def _parsed_run(run_id: str, mode: str) -> Run:
    entry = _run_entry(run_id)
    run = _bare_run(entry)
    run.config = run.config.replace(parse_mode=mode)
    table = _with_parsed(entry, _raw_replies(entry), mode)
    if entry["kind"] == "comparisons":
        run.comparisons = table
    else:
        run.judgments = table
        run.draws = _parse_draws(_raw_replies(entry), entry, mode)
    return run


def load_bundled_run(run_id: str, *, parse: str = "robust") -> Run:
    """A published run with its raw replies parsed under ``parse`` ("robust" or "paper"); a fresh copy."""
    if parse not in parsers.PARSE_MODES:
        raise ValueError(f"unknown parse mode {parse!r}; expected one of {parsers.PARSE_MODES}")
    run = _parsed_run(run_id, parse)
    return dataclasses.replace(
        run,
        config=copy.deepcopy(run.config),
        judgments=run.judgments.copy(),
        comparisons=run.comparisons.copy(),
        draws=run.draws.copy(),
    )
