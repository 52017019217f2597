"""Run bundles: one run in one JSONL file, to move it to another store and get the same analysis there.

Line 1 is the header (``"type": "header"``): the bundle kind and version, the run (id, dataset, method, model, label,
parser, config, status, stats), the dataset it was scored on (id, name, number of items and ``items_sha256``, a
content hash of its items) and counts. Then, for a run the engine scored, its scoring spec (``"type": "spec"``:
``evalcore.spec.ScoringSpec.to_dict``, with its own version: dataset and documents, method, dimensions, criteria,
config, limit, pairs, parse mode), which the import restores with the run so that scoring it again (a resume)
sends the same requests. Then one line per criteria version the run's config names
(``"type": "criteria"``, the task introduction, definition, scale and evaluation steps), per judgment
(``"type": "judgment"``: item, dimension, criteria hash, raw reply, value, status, reason, estimator, detail) and per
pairwise comparison. A bundle of a run on an uploaded dataset also carries that dataset (``"type": "dataset"`` and
one ``"type": "dataset_row"`` line per row of its tables), so the receiving store needs nothing else; a run on a
bundled dataset (SummEval, ...) does not, since every installation ships those.

Importing checks the dataset: present with the same items hash, or carried by the bundle; otherwise it says exactly
which dataset to import first.

Version 2 added the spec line; a version-1 bundle (none) still imports, its run's spec then read from its config
(``ScoringSpec.from_run_config``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pandas as pd

from evalcore import datasets as bundled
from evalcore import runs as runs_mod
from evalcore.model import COMPARISON_COLUMNS, DRAW_COLUMNS, JUDGMENT_COLUMNS, Dataset, Dimension, Run
from evalcore.spec import ScoringSpec, SpecError

if TYPE_CHECKING:
    from evalcore.store import Store

KIND = "evalcore-run-bundle"
VERSION = 2  # 2: the run's scoring spec on a line of its own
READS = (1, 2)  # the versions this evalcore imports
FRAMES = ("documents", "items", "human_scores", "annotations", "preferences")


class BundleError(ValueError):
    """A bundle that cannot be imported here, with what to do about it."""


def items_sha256(dataset: Dataset) -> str:
    """A content hash of a dataset's items (id, document, system, output), independent of row order."""
    items = dataset.items[["item_id", "doc_id", "system_id", "output"]].astype(str)
    lines = sorted("\x1f".join(r) for r in items.itertuples(index=False, name=None))
    return hashlib.sha256("\x1e".join(lines).encode("utf-8")).hexdigest()


def _json_value(x: object) -> object:
    if isinstance(x, float) and math.isnan(x):
        return None
    if hasattr(x, "tolist"):
        return x.tolist()
    if hasattr(x, "item"):
        return x.item()
    return x


def _line(obj: Mapping[str, object]) -> str:
    return json.dumps(obj, ensure_ascii=False, default=_json_value, allow_nan=False)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _json_value(v) for k, v in r.items()} for r in frame.to_dict("records")]


def _store(store: Store | None) -> Store:
    if store is not None:
        return store
    from evalcore.store import default_store

    return default_store()


# ---------------------------------------------------------------------------------------------------------- export


def export_run(run_id: str, out: str | Path, *, store: Store | None = None, with_dataset: bool | None = None) -> dict[str, Any]:
    """Write ``run_id`` as a bundle to ``out``. ``with_dataset``: carry the dataset (default: when it is not one of the
    bundled datasets). Returns the header's summary."""
    st = _store(store)
    run = runs_mod.load_run(run_id, store=st)
    dataset = runs_mod.get_dataset(run.dataset_id, store=st)
    is_bundled = run.dataset_id in bundled.DATASET_IDS
    carry = (not is_bundled) if with_dataset is None else bool(with_dataset)
    config = run.config.to_dict(without=("status", "stats", "spec"))
    spec = _spec_of(run, dataset)
    hashes = {dim: (c or {}).get("hash") for dim, c in (run.config.criteria or {}).items()}
    criteria = _criteria_rows(st, run.dataset_id, hashes)
    header: dict[str, Any] = {
        "type": "header", "kind": KIND, "version": VERSION,
        "run": {"run_id": run.run_id, "dataset_id": run.dataset_id, "method": run.method, "model": run.model,
                "label": run.label, "parser": run.parser, "origin": run.origin, "created_at": run.created_at,
                "status": run.config.status or "done", "stats": run.config.stats.to_dict(),
                "config": config},
        "dataset": {"id": dataset.id, "name": dataset.name, "items": len(dataset.items),
                    "items_sha256": items_sha256(dataset), "source_file": dataset.meta.get("source_file"),
                    "bundled": is_bundled},
        "carries_dataset": carry,
        "counts": {"judgments": len(run.judgments), "comparisons": len(run.comparisons),
                   "criteria": len(criteria), **({"draws": len(run.draws)} if not run.draws.empty else {})},
        "has_spec": spec is not None,
    }
    path = Path(out)
    if not path.parent.is_dir():
        raise BundleError(f"cannot write {path}: the folder {path.parent} does not exist")
    tmp = path.with_name(path.name + ".part")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            f.write(_line(header) + "\n")
            if spec is not None:
                f.write(_line({"type": "spec", "spec": spec}) + "\n")
            for c in criteria:
                f.write(_line({"type": "criteria", **c}) + "\n")
            for r in _records(_with_hash(run.judgments, JUDGMENT_COLUMNS, hashes)):
                f.write(_line({"type": "judgment", **r}) + "\n")
            for r in _records(_with_hash(run.comparisons, COMPARISON_COLUMNS, hashes)):
                f.write(_line({"type": "comparison", **r}) + "\n")
            for r in _records(_with_hash(run.draws, DRAW_COLUMNS, hashes)):  # a judge drawn K times per item
                f.write(_line({"type": "draw", **r}) + "\n")
            if carry:
                _write_dataset(f, dataset)
        tmp.replace(path)  # a bundle is whole or absent, never half-written
    finally:
        tmp.unlink(missing_ok=True)
    return {"run": run.run_id, "dataset": dataset.id, "out": str(path), **header["counts"],
            "carries_dataset": carry}


def _spec_of(run: Run, dataset: Dataset) -> dict[str, Any] | None:
    """The run's scoring spec as JSON: as the engine recorded it, else (a run scored before runs recorded their
    spec) as its config describes it; None for a run the engine did not score (judge scores from a file, a
    published run)."""
    config = run.config
    if not config.spec and not ("method_config" in config and config.criteria):
        return None
    try:
        spec = ScoringSpec.from_run_config(config, dataset, run_id=run.run_id, label=run.label)
    except (KeyError, TypeError, SpecError):
        return None  # a config that does not describe a spec: the bundle goes without one, as a version-1 did
    return spec.to_dict()


def _with_hash(frame: pd.DataFrame, columns: list[str], hashes: dict[str, str | None]) -> pd.DataFrame:
    if frame.empty:
        return frame
    keep = [c for c in columns + ["value", "estimator", "detail"] if c in frame.columns]
    out = frame[list(dict.fromkeys(keep))].copy()
    out["criteria_hash"] = [hashes.get(d) or "" for d in out["dimension"]]
    return out


def _criteria_rows(store: Store, dataset_id: str, hashes: dict[str, str | None]) -> list[dict[str, Any]]:
    rows = []
    for dim, h in hashes.items():
        if not h:
            continue
        for v in store.list_criteria_versions(dataset_id, dim):
            if v["hash"] == h:
                rows.append({"dataset_id": dataset_id, "dimension": dim, "hash": h, "note": v["note"],
                             "created_at": v["created_at"], **asdict(v["criteria"])})
    return rows


def _write_dataset(f: TextIO, dataset: Dataset) -> None:
    f.write(_line({"type": "dataset", "id": dataset.id, "name": dataset.name, "task": dataset.task,
                   "description": dataset.description, "citation": dataset.citation, "origin": dataset.origin,
                   "dimensions": [asdict(d) for d in dataset.dimensions], "meta": dataset.meta,
                   "columns": {t: [str(c) for c in getattr(dataset, t).columns] for t in FRAMES}}) + "\n")
    for table in FRAMES:
        for r in _records(getattr(dataset, table)):
            f.write(_line({"type": "dataset_row", "table": table, "row": r}) + "\n")


# ---------------------------------------------------------------------------------------------------------- import


@dataclass
class Bundle:
    header: dict[str, Any]
    criteria: list[dict[str, Any]] = field(default_factory=list)
    judgments: list[dict[str, Any]] = field(default_factory=list)
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    draws: list[dict[str, Any]] = field(default_factory=list)
    dataset: Dataset | None = None
    spec: dict[str, Any] | None = None  # ScoringSpec.to_dict() (version 2), None in a version-1 bundle
    spec_line: int = 0

    @property
    def run_id(self) -> str:
        return self.header["run"]["run_id"]

    @property
    def dataset_id(self) -> str:
        return self.header["dataset"]["id"]


def is_bundle(path: str | Path) -> bool:
    """Whether the file's first line is a run bundle's header."""
    try:
        with Path(path).open("r", encoding="utf-8-sig") as f:
            first = f.readline(1 << 20)
        head = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        return False
    return isinstance(head, dict) and head.get("kind") == KIND


def read_bundle(path: str | Path) -> Bundle:
    name = str(path)
    bundle: Bundle | None = None
    ds_head: dict[str, Any] | None = None
    tables: dict[str, list[dict[str, Any]]] = {t: [] for t in FRAMES}
    with Path(path).open("r", encoding="utf-8-sig") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError, ValueError) as e:
                raise BundleError(f"{name}, line {n}: not a JSON object ({e})") from None
            kind = obj.get("type") if isinstance(obj, dict) else None
            if bundle is None:
                if kind != "header" or obj.get("kind") != KIND:
                    raise BundleError(f"{name}, line 1: not an evalcore run bundle (no bundle header)")
                if obj.get("version") not in READS:
                    raise BundleError(f"{name}, line 1: bundle version {obj.get('version')!r}; this evalcore reads "
                                      f"versions {', '.join(map(str, READS))}")
                bundle = Bundle(obj)
            elif kind == "spec" and isinstance(obj.get("spec"), dict):
                bundle.spec = obj["spec"]
                bundle.spec_line = n
            elif kind == "criteria":
                bundle.criteria.append(obj)
            elif kind == "judgment":
                bundle.judgments.append(obj)
            elif kind == "comparison":
                bundle.comparisons.append(obj)
            elif kind == "draw":
                bundle.draws.append(obj)
            elif kind == "dataset":
                ds_head = obj
            elif kind == "dataset_row" and obj.get("table") in tables:
                tables[obj["table"]].append(obj["row"])
            else:
                raise BundleError(f"{name}, line {n}: unknown line type {kind!r}")
    if bundle is None:
        raise BundleError(f"{name}: the file is empty")
    if ds_head is not None:
        bundle.dataset = _dataset_from(ds_head, tables)
    return bundle


def _dataset_from(head: dict[str, Any], tables: dict[str, list[dict[str, Any]]]) -> Dataset:
    frames = {t: pd.DataFrame(rows, columns=head["columns"][t]) for t, rows in tables.items()}
    for t in ("human_scores", "annotations"):
        col = "score" if t == "human_scores" else "value"
        if col in frames[t].columns:
            frames[t][col] = frames[t][col].astype("float64")
    return Dataset(id=head["id"], name=head["name"], task=head["task"],
                   dimensions=[Dimension(**d) for d in head["dimensions"]], description=head["description"],
                   citation=head["citation"], origin=head["origin"], meta=head["meta"], **frames)


def _target_dataset(bundle: Bundle, store: Store, name: str) -> tuple[Dataset, bool]:
    """The dataset the run belongs to in this store (saving the carried one if the store lacks it)."""
    want = bundle.header["dataset"]
    try:
        have = runs_mod.get_dataset(bundle.dataset_id, store=store)
    except KeyError:
        have = None
    if have is None:
        if bundle.dataset is None:
            src = f" (imported from the file {want['source_file']!r})" if want.get("source_file") else ""
            raise BundleError(
                f"{name}: run {bundle.run_id!r} was scored on dataset {bundle.dataset_id!r} "
                f"(name {want['name']!r}, {want['items']} items{src}), which this store does not have: import that "
                f"dataset first (python -m evalcore import-dataset FILE --name {want['name']!r}, with the same file "
                "and options), or export the run again with its dataset")
        if bundle.dataset_id in {d["id"] for d in bundled.list_datasets()}:
            raise BundleError(f"{name}: dataset {bundle.dataset_id!r} ships with every installation: a bundle "
                              "cannot replace it")
        carried = items_sha256(bundle.dataset)
        if carried != want["items_sha256"]:  # the items the run was scored on are the ones carried, or none
            raise BundleError(f"{name}: the dataset it carries has other items (sha256 {carried[:12]}) than the "
                              f"run {bundle.run_id!r} says it was scored on ({want['items_sha256'][:12]})")
        store.save_dataset(bundle.dataset)
        return bundle.dataset, True
    if items_sha256(have) != want["items_sha256"]:
        raise BundleError(
            f"{name}: dataset {bundle.dataset_id!r} in this store has other items than the one run "
            f"{bundle.run_id!r} was scored on (items sha256 {items_sha256(have)[:12]} here, "
            f"{want['items_sha256'][:12]} in the bundle)")
    return have, False


def import_bundle(path: str | Path, *, store: Store | None = None, dataset_id: str | None = None,
                  name: str | None = None) -> dict[str, Any]:
    """Import a bundle into ``store``. ``dataset_id``, when given, must be the bundle's dataset; ``name`` relabels
    the run. Returns {"run", "judgments", "comparisons", "unmatched": 0, "dataset", "dataset_imported"}."""
    st = _store(store)
    bundle = read_bundle(path)
    if dataset_id is not None and dataset_id != bundle.dataset_id:
        raise BundleError(f"{path}: the bundle's run {bundle.run_id!r} belongs to dataset {bundle.dataset_id!r}, "
                          f"not {dataset_id!r}")
    if bundle.header["run"].get("origin") == "published" and bundle.run_id in {
            r.run_id for r in bundled.list_bundled_runs(bundle.dataset_id)}:
        # a run the papers' authors released ships with every installation: a local copy would only shadow it
        return {"run": bundle.run_id, "judgments": len(bundle.judgments), "comparisons": len(bundle.comparisons),
                "unmatched": 0, "dataset": bundle.dataset_id, "dataset_imported": False, "published": True,
                "warnings": [f"run {bundle.run_id!r} is a published run shipped with every installation: "
                             "nothing was imported"]}
    _check_items(bundle, st, str(path))
    spec = _checked_spec(bundle, st, str(path))
    dataset, imported = _target_dataset(bundle, st, str(path))
    head = bundle.header["run"]
    run_id = _free_run_id(head["run_id"], head["dataset_id"], st)
    config = {**head["config"], "stats": head.get("stats") or {}}
    if spec is not None:  # under the run's id and label here, so that a resume scores this run
        config["spec"] = dataclasses.replace(spec, run_id=run_id, label=name or head["label"]).to_dict()
    run = Run(run_id=run_id, dataset_id=head["dataset_id"], method=head["method"], model=head["model"],
              label=name or head["label"], config=config,
              parser=head["parser"], created_at=head.get("created_at") or "",
              judgments=pd.DataFrame(bundle.judgments).drop(columns="type", errors="ignore"),
              comparisons=pd.DataFrame(bundle.comparisons).drop(columns="type", errors="ignore"))
    if bundle.draws:
        run.draws = pd.DataFrame(bundle.draws).drop(columns="type", errors="ignore")
    st.save_imported_run(run, status=head.get("status") or "done",
                         criteria=[{k: v for k, v in c.items() if k != "type"} for c in bundle.criteria])
    out = {"run": run.run_id, "judgments": len(bundle.judgments), "comparisons": len(bundle.comparisons),
           "unmatched": 0, "dataset": dataset.id, "dataset_imported": imported}
    if run_id != head["run_id"]:
        out["renamed_from"] = head["run_id"]
        out["warnings"] = [f"a run {head['run_id']!r} exists already (in this store or shipped with the app): the "
                           f"bundle was imported as {run_id!r}, and the existing run is unchanged"]
    return out


def _free_run_id(run_id: str, dataset_id: str, store: Store) -> str:
    """``run_id`` unless a run of that id exists (another user's, or a published one): then a new id beside it, so
    an import never replaces a run (issue 21, item 9)."""
    shipped = dataset_id in {d["id"] for d in bundled.list_datasets()}
    published = {r.run_id for r in bundled.list_bundled_runs(dataset_id)} if shipped else set()
    candidate, n = run_id, 0
    while store.run_exists(candidate) or candidate in published:
        n += 1
        candidate = f"{run_id}-import{n}"
    return candidate


def _checked_spec(bundle: Bundle, store: Store, name: str) -> ScoringSpec | None:
    """The bundle's spec read against the run's dataset (carried, or in the store), before anything is written: a
    spec from a newer evalcore, or one whose criteria do not hash to their recorded versions, stops the import."""
    if bundle.spec is None:
        return None
    ds = bundle.dataset
    if ds is None:
        try:
            ds = runs_mod.get_dataset(bundle.dataset_id, store=store)
        except KeyError:
            return None  # _target_dataset says which dataset to import first
    try:
        return ScoringSpec.from_dict(bundle.spec, ds)
    except (SpecError, KeyError, TypeError) as e:
        raise BundleError(f"{name}, line {bundle.spec_line}: the run's scoring spec cannot be read: {e}") from None


def _check_items(bundle: Bundle, store: Store, name: str) -> None:
    """Every judgment's item must be in the dataset (carried, or in the store): list the ones that are not."""
    ds = bundle.dataset
    if ds is None:
        try:
            ds = runs_mod.get_dataset(bundle.dataset_id, store=store)
        except KeyError:
            return  # _target_dataset says which dataset to import first
    known = set(ds.items["item_id"].astype(str))
    missing = sorted({str(j["item_id"]) for j in bundle.judgments if str(j["item_id"]) not in known})
    if missing:
        shown = ", ".join(map(repr, missing[:10])) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise BundleError(f"{name}: {len(missing)} judged items are not in dataset {bundle.dataset_id!r}: {shown}")
