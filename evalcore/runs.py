"""Runs from every place they live, and the score frame that every statistic takes.

Published runs ship in ``data/`` (``evalcore.datasets``); runs scored here live in the store (``evalcore.store``: a
SQLite file or PostgreSQL). Callers ask this module and do not care which.
"""

from __future__ import annotations

import dataclasses

import enum
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from evalcore import datasets
from evalcore.identity import Viewer
from evalcore.model import STATUS_OK, Dataset, Run

if TYPE_CHECKING:
    from evalcore.store import Store

log = logging.getLogger(__name__)

def is_published(run_id: str) -> bool:
    """Whether ``run_id`` is a published run shipped with the package: read from the bundled runs' manifest
    (data/runs/manifest.json), the record of where a run came from, never from the id's text."""
    return run_id in datasets.bundled_run_ids()


def _store(store: Store | None = None) -> Store:
    if store is not None:
        return store
    from evalcore.store import default_store

    return default_store()


def get_dataset(dataset_id: str, store: Store | None = None, *, with_labels: bool = True,
                viewer: Viewer | None = None) -> Dataset:
    """A bundled dataset, or a user dataset saved in the store, with the labels made on the Label page merged in
    (evalcore.labels.merge_labels: per-annotator ratings, and the label mean as the human score where an item has
    no gold score, or a campaign's final label where an adjudicator set one): those ``viewer`` sees (None: all;
    evalcore.identity). ``<id>@labels`` is the labels-only view of a dataset (evalcore.labels.labels_view)."""
    from evalcore import labels

    if labels.is_view(dataset_id):
        base = _raw_dataset(labels.base_id(dataset_id), store)
        return labels.labels_view(base, _label_rows(base.id, store, viewer), _adjudications(base.id, store))
    ds = _raw_dataset(dataset_id, store)
    if not with_labels:
        return ds
    rows = _label_rows(ds.id, store, viewer)
    if not len(rows):
        return ds
    adjudications = _adjudications(ds.id, store)
    merged = labels.merge_labels(ds, rows, adjudications)
    if adjudications is None:  # said where the dataset is described, not only in the server's log
        merged = dataclasses.replace(merged, description=merged.description + "\nThe campaigns' final labels could "
                                     "not be read from the store: adjudicated items show their labels' mean.")
    return merged


def _raw_dataset(dataset_id: str, store: Store | None = None) -> Dataset:
    bundled = {d["id"] for d in datasets.list_datasets()}
    if dataset_id in bundled:
        return datasets.load_dataset(dataset_id)
    return _store(store).load_dataset(dataset_id)


def _label_rows(dataset_id: str, store: Store | None = None, viewer: Viewer | None = None) -> pd.DataFrame:
    try:
        return _store(store).label_rows(dataset_id, viewer=viewer)
    except Exception as e:  # noqa: BLE001 - an unreadable local store must not hide the dataset itself
        log.warning("labels unreadable, dataset %s shown without them: %s: %s", dataset_id, type(e).__name__, e)
        return pd.DataFrame()


def _adjudications(dataset_id: str, store: Store | None = None) -> pd.DataFrame | None:
    """The final labels set in the dataset's campaigns (evalcore.labels.adjudicated keeps those whose campaign's
    labels the viewer sees); None when unreadable: the labels' means stand."""
    try:
        return _store(store).dataset_adjudications(dataset_id)
    except Exception as e:  # noqa: BLE001 - as with the labels: the dataset is shown without them
        log.warning("adjudications unreadable, dataset %s shown with label means: %s: %s", dataset_id,
                    type(e).__name__, e)
        return None


class _Same(enum.Enum):
    """The default of ``labels_viewer``: the same as ``viewer`` (None means all, so it cannot be the default)."""

    SAME = 0


_SAME = _Same.SAME


def list_all_datasets(store: Store | None = None, *, viewer: Viewer | None = None,
                      labels_viewer: Viewer | None | _Same = _SAME) -> list[dict]:
    """The bundled datasets (always), the uploads ``viewer`` sees (None: all), and their labels views made of the
    labels ``labels_viewer`` sees (default: ``viewer``'s; the app passes the lab's, as its datasets merge them)."""
    out = list(datasets.list_datasets())
    try:
        out += list(_store(store).list_datasets(viewer=viewer))
    except Exception as e:  # noqa: BLE001 - an unreadable local store must not hide the bundled data
        log.warning("local store unreadable, listing bundled datasets only: %s: %s", type(e).__name__, e)
    out += _label_views(out, store, viewer if labels_viewer is _SAME else labels_viewer)
    return out


def _label_views(listed: list[dict], store: Store | None = None, viewer: Viewer | None = None) -> list[dict]:
    """``<id>@labels`` for each listed dataset with labels in the random part and gold scores of its own (without
    gold, the labels already are the dataset's human scores)."""
    from evalcore import labels

    try:
        labelled = set(_store(store).labelled_datasets(viewer=viewer))
    except Exception as e:  # noqa: BLE001 - an unreadable labels table must not hide the datasets
        log.warning("labels unreadable, no labels views listed: %s: %s", type(e).__name__, e)
        return []
    out = []
    for entry in listed:
        if entry["id"] not in labelled:
            continue
        base = get_dataset(entry["id"], store, with_labels=False)
        if base.human_scores.empty:
            continue
        view = get_dataset(labels.view_id(entry["id"]), store, viewer=viewer)
        if view.items.empty:
            continue
        out.append({"id": view.id, "name": view.name, "task": view.task, "items": int(len(view.items)),
                    "systems": len(view.systems), "dimensions": view.dimension_names,
                    "annotators": len(view.annotators), "runs": entry.get("runs", 0), "origin": "labels"})
    return out


def list_runs(dataset_id: str, store: Store | None = None, *, viewer: Viewer | None = None) -> list[Run]:
    """Published runs shipped for a bundled dataset, then the store's runs ``viewer`` sees (None: all; an uploaded
    dataset has only those)."""
    from evalcore import labels

    if labels.is_view(dataset_id):  # the labels view of a dataset is judged by that dataset's runs
        # (a run scored on the view itself is stored under the view's id)
        return list_runs(labels.base_id(dataset_id), store, viewer=viewer) + \
            list(_store(store).list_runs(dataset_id, viewer=viewer))
    if dataset_id in datasets.DATASET_IDS:
        runs = list(datasets.list_bundled_runs(dataset_id))
        try:
            runs += list(_store(store).list_runs(dataset_id, viewer=viewer))
        except Exception as e:  # noqa: BLE001 - an unreadable local store must not hide the published runs
            log.warning("local store unreadable, listing published runs only: %s: %s", type(e).__name__, e)
        return runs
    st = _store(store)
    if not st.has_dataset(dataset_id):
        raise KeyError(f"unknown dataset {dataset_id!r}: bundled ones are {', '.join(datasets.DATASET_IDS)}; "
                       "uploaded ones are listed by `python -m evalcore datasets`")
    return list(st.list_runs(dataset_id, viewer=viewer))


def load_run(run_id: str, *, parse: str = "robust", store: Store | None = None) -> Run:
    """Load a run with values derived under ``parse`` ("robust" default, or the paper's rule).

    Published runs keep only raw replies, so ``parse`` chooses how they are read. A run scored here is returned as
    it was scored: its values came from its method's own scorer (e.g. G-Eval's probability-weighted score from the
    log-probs, which the reply text alone cannot give back), under the parse mode recorded in
    ``run.config["parse_mode"]``; to compare parse modes on a local run, score it again with the other mode (the
    cache makes that free)."""
    if is_published(run_id):
        return datasets.load_bundled_run(run_id, parse=parse)
    return _store(store).load_run(run_id)


def run_version(run_id: str, *, store: Store | None = None) -> str:
    """A string that changes whenever the run's judgments do (evalcore.store.runs.RunsStore.run_version); a bundled
    run never changes ("published"). Key caches of a run's figures by (run id, version), never by the id alone."""
    if is_published(run_id):
        return "published"
    return _store(store).run_version(run_id)


def runs_version(dataset_id: str, *, store: Store | None = None) -> str:
    """A string that changes whenever the store's list of the dataset's runs does (the runs of a labels view's base
    dataset included); "" when the store cannot be read (the bundled runs never change). Key a run list's cache by
    (dataset id, this), never by a time to live: a run scored elsewhere then shows at once."""
    from evalcore import labels

    ids = [labels.base_id(dataset_id), dataset_id] if labels.is_view(dataset_id) else [dataset_id]
    try:
        s = _store(store)
        return "/".join(s.runs_version(i) for i in ids)
    except Exception:  # noqa: BLE001 - an unreadable store lists the published runs only (list_runs says why)
        return ""


def datasets_version(*, store: Store | None = None) -> str:
    """A string that changes whenever the store's list of datasets does (``Store.datasets_version``); "" when the
    store cannot be read. Key a dataset list's cache by it: a dataset deleted elsewhere leaves the pickers at once."""
    try:
        return _store(store).datasets_version()
    except Exception:  # noqa: BLE001 - an unreadable store lists the bundled datasets only
        return ""


def dataset_version(dataset_id: str, *, store: Store | None = None) -> str:
    """A string that changes whenever the dataset's labels or its campaigns' final labels do, or the upload is
    deleted (a dataset's own rows never change otherwise: an upload under the same name is a new id), for the same
    use as ``run_version``: a dataset deleted through another app server on the same store is no longer served from
    this one's cache on the next rerun."""
    from evalcore.labels import base_id

    s = _store(store)
    base = base_id(dataset_id)
    n, last = s.labels_version(base)
    # a bundled dataset has no row: "" for it, as for a deleted upload (whose reload then says it is gone)
    stored = "stored" if s.has_dataset(base) else ""
    return f"{n}:{last}:{s.adjudications_version(base)}:{stored}"


def score_frame(dataset: Dataset, run: Run, dimension: str, *, systems: list[str] | None = None) -> pd.DataFrame:
    """item_id, doc_id, system_id, judge, human for one dimension: the input of every ``evalcore.meta`` function.

    Items the judge never scored are left out; items it failed on are kept with judge = NaN so the statistics can
    count them as dropped rather than silently losing them."""
    human = dataset.human_table(dimension)
    judged = run.scores(dimension)[["item_id", "judge"]]
    frame = human.merge(judged, on="item_id", how="inner")
    if systems is not None:
        frame = frame[frame["system_id"].isin(systems)]
    return frame[["item_id", "doc_id", "system_id", "judge", "human"]].reset_index(drop=True)


def run_dimensions(run_id: str, *, store: Store | None = None) -> list[str]:
    """The dimensions a run scored, read without parsing its replies (one column of a bundled run's file, or a
    DISTINCT query on the store): what the app needs to open a dataset on a dimension its runs scored."""
    if is_published(run_id):
        dims = datasets.bundled_run_dimensions(run_id)
        if dims is not None:
            return dims
    return _store(store).run_dimensions(run_id)


# ------------------------------------------------------------------------------------ how a finished run went
@dataclass(frozen=True)
class RunOutcome:
    """How a finished run went: ``level`` "success" (every judgment scored), "warning" (some failed) or "error"
    (none, or fewer than half, scored: the run says little), and the sentence that says it."""

    level: str
    text: str
    scored: int
    total: int


FEW = 0.5  # below this share of judgments scored, a run is reported as a failure, with its commonest reason
LISTED_BELOW = "The failures and their raw replies are listed below."  # where the Score page shows them


def run_outcome(run: Run | None, *, where_failures: str = LISTED_BELOW) -> RunOutcome:
    """How many items a finished run scored out of how many; when none or few, the commonest failure reason and
    ``where_failures`` (where the reader finds them: the Score page lists them below, the command line names the
    export command). The Score page and ``score`` on the command line say the same."""
    frame, unit = _judged(run)
    total = len(frame)
    ok = int((frame["status"] == STATUS_OK).sum()) if total else 0
    if total == 0:
        return RunOutcome("error", "Nothing was scored: the run holds no judgment.", 0, 0)
    text = f"{ok:,} of {total:,} {unit} scored"
    if ok == total:
        return RunOutcome("success", text + ".", ok, total)
    reasons = frame.loc[frame["status"] != STATUS_OK, "reason"].fillna("").astype(str).str.strip()
    reasons = reasons[reasons != ""]
    failed = total - ok
    why = ""
    if len(reasons):
        top = reasons.value_counts()
        why = f" Commonest reason ({int(top.iloc[0]):,} of {failed:,} failures): {top.index[0]}"
        why += "" if why.endswith(".") else "."
    if ok / total < FEW:
        head = "No item was scored" if ok == 0 else f"Only {ok:,} of {total:,} {unit} were scored"
        return RunOutcome("error", f"{head}: {failed:,} of {total:,} {unit} failed.{why} {where_failures}", ok, total)
    return RunOutcome("warning", f"{text}; {failed:,} failed.{why}", ok, total)


def _judged(run: Run | None) -> tuple[pd.DataFrame, str]:
    """The run's judgments (or comparisons) and what one of them is called."""
    if run is None:
        return pd.DataFrame(columns=["status", "reason"]), "items"
    if not run.judgments.empty:
        j = run.judgments
        return j, ("items" if j["dimension"].nunique() <= 1 else "item-dimension judgments")
    if not run.comparisons.empty:
        return run.comparisons, "pairwise verdicts"
    return pd.DataFrame(columns=["status", "reason"]), "items"
