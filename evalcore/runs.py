"""Runs from every place they live, and the score frame that every statistic takes.

Published runs ship in ``data/`` (``evalcore.datasets``); runs scored here live in the SQLite store
(``evalcore.judge.store``). Callers ask this module and do not care which.
"""

from __future__ import annotations

import logging

import pandas as pd

from evalcore import datasets
from evalcore.model import Dataset, Run

log = logging.getLogger(__name__)

PUBLISHED_PREFIXES = tuple(f"{d}/" for d in ("summeval", "topical_chat", "qags_cnndm", "qags_xsum", "fed_dialogue",
                                              "zhang_pairs"))


def _store(store=None):
    if store is not None:
        return store
    from evalcore.judge.store import default_store

    return default_store()


def get_dataset(dataset_id: str, store=None) -> Dataset:
    """A bundled dataset, or a user dataset saved in the store."""
    bundled = {d["id"] for d in datasets.list_datasets()}
    if dataset_id in bundled:
        return datasets.load_dataset(dataset_id)
    return _store(store).load_dataset(dataset_id)


def list_all_datasets(store=None) -> list[dict]:
    out = list(datasets.list_datasets())
    try:
        out += list(_store(store).list_datasets())
    except Exception as e:  # noqa: BLE001 - an unreadable local store must not hide the bundled data
        log.warning("local store unreadable, listing bundled datasets only: %s: %s", type(e).__name__, e)
    return out


def list_runs(dataset_id: str, store=None) -> list[Run]:
    """Published runs shipped for a bundled dataset, then the store's runs (an uploaded dataset has only those)."""
    if dataset_id in datasets.DATASET_IDS:
        runs = list(datasets.list_bundled_runs(dataset_id))
        try:
            runs += list(_store(store).list_runs(dataset_id))
        except Exception as e:  # noqa: BLE001 - an unreadable local store must not hide the published runs
            log.warning("local store unreadable, listing published runs only: %s: %s", type(e).__name__, e)
        return runs
    st = _store(store)
    if not st.has_dataset(dataset_id):
        raise KeyError(f"unknown dataset {dataset_id!r}: bundled ones are {', '.join(datasets.DATASET_IDS)}; "
                       "uploaded ones are listed by `python -m evalcore datasets`")
    return list(st.list_runs(dataset_id))


def load_run(run_id: str, *, parse: str = "robust", store=None) -> Run:
    """Load a run with values derived under ``parse`` ("robust" default, or the paper's rule).

    Published runs keep only raw replies, so ``parse`` chooses how they are read. A run scored here is returned as
    it was scored: its values came from its method's own scorer (e.g. G-Eval's probability-weighted score from the
    log-probs, which the reply text alone cannot give back), under the parse mode recorded in
    ``run.config["parse_mode"]``; to compare parse modes on a local run, score it again with the other mode (the
    cache makes that free)."""
    bundled_ids = set()
    if run_id.startswith(PUBLISHED_PREFIXES):
        dataset_id = run_id.split("/", 1)[0]
        bundled_ids = {r.run_id for r in datasets.list_bundled_runs(dataset_id)}
    if run_id in bundled_ids:
        return datasets.load_bundled_run(run_id, parse=parse)
    return _store(store).load_run(run_id)


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


def run_dimensions(run_id: str, *, store=None) -> list[str]:
    """The dimensions a run scored, read without parsing its replies (one column of a bundled run's file, or a
    DISTINCT query on the store): what the app needs to open a dataset on a dimension its runs scored."""
    if run_id.startswith(PUBLISHED_PREFIXES):
        entry = next((e for e in datasets._run_entries() if e["run_id"] == run_id), None)
        if entry is not None:
            import pyarrow.compute as pc
            import pyarrow.parquet as pq

            column = pq.read_table(datasets._path(entry["file"]), columns=["dimension"])["dimension"]
            return [str(d) for d in pc.unique(column).to_pylist()]
    conn = _store(store).conn
    rows = conn.execute("SELECT dimension FROM (SELECT DISTINCT dimension FROM judgments WHERE run_id = ? UNION "
                        "SELECT DISTINCT dimension FROM comparisons WHERE run_id = ?) ORDER BY dimension",
                        (run_id, run_id)).fetchall()
    return [r[0] for r in rows]
