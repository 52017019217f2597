"""Partial runs on whole documents: which documents to score when a run covers part of a dataset.

Why whole documents: every interval in evalcore.meta resamples documents, the summary level correlates within a
document, the system level averages systems over documents. A run on "the first 20 items" holds 16 systems of one
document and 4 of the next: every CI, #CP and meta-correlation then rests on two documents (issue 18.5). Sampling K
documents with all their systems keeps the design the statistics assume; the run still says (meta's warnings) when
K is below 10.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np
import pandas as pd

from evalcore.model import Dataset, counted

SAMPLING = ("random", "stratified")


def sample_documents(dataset: Dataset, k: int, *, seed: int = 0, how: str = "random",
                     dimension: str | None = None) -> list:
    """K document ids of ``dataset``, drawn without replacement with ``numpy.random.default_rng(seed)``.

    ``how="random"``: a simple random sample. ``how="stratified"``: the documents are ordered by their mean human
    score on ``dimension`` (default: the first dimension) and cut into K strata of (nearly) equal size; one document
    is drawn from each, so the sample spans easy and hard documents. Returned in the dataset's document order.
    """
    if how not in SAMPLING:
        raise ValueError(f"unknown document sampling {how!r}; choose one of {list(SAMPLING)}")
    docs = pd.Index(pd.unique(dataset.items["doc_id"]))
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"--sample-docs must be a whole number of at least 1, got {k!r}")
    if k > len(docs):
        raise ValueError(f"--sample-docs {k}: dataset {dataset.id!r} has only {counted(len(docs), 'document')}")
    rng = np.random.default_rng(seed)
    if how == "random":
        picked = set(rng.choice(len(docs), size=k, replace=False).tolist())
        return [d for i, d in enumerate(docs) if i in picked]
    dim = dimension or dataset.dimension_names[0]
    human = dataset.human_table(dim).groupby("doc_id")["human"].mean().reindex(docs)
    order = human.fillna(human.mean()).sort_values(kind="stable").index  # unrated documents sit in the middle
    strata = np.array_split(np.arange(len(order)), k)
    chosen = {order[s[rng.integers(0, len(s))]] for s in strata}
    return [d for d in docs if d in chosen]


def documents_subset(dataset: Dataset, doc_ids: Iterable[object]) -> Dataset:
    """The same dataset (same id, so a run on it is stored against the full dataset) restricted to these
    documents: their items with all their systems, ratings and annotations."""
    keep = pd.Index(doc_ids)
    items = dataset.items[dataset.items["doc_id"].isin(keep)]
    ids = pd.Index(items["item_id"])

    def rows(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["item_id"].isin(ids)] if "item_id" in frame.columns else frame

    return dataclasses.replace(
        dataset, items=items.reset_index(drop=True),
        documents=dataset.documents[dataset.documents["doc_id"].isin(keep)].reset_index(drop=True),
        human_scores=rows(dataset.human_scores).reset_index(drop=True),
        annotations=rows(dataset.annotations).reset_index(drop=True),
        preferences=dataset.preferences[dataset.preferences["doc_id"].isin(keep)].reset_index(drop=True)
        if "doc_id" in dataset.preferences.columns else dataset.preferences)
