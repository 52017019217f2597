"""A development / test split of a dataset's DOCUMENTS that cannot leak.

Why documents, not items: every output of one source document shares that document (its text, its difficulty,
often its annotators' mood), and every interval in evalcore.meta resamples documents. A prompt tuned on some
outputs of a document and tested on its other outputs is tested on items it has half seen. So the unit of the split
is the document: all of a document's outputs fall on the same side.

Stratified: documents are grouped into strata and each stratum is split in the same proportion, so both parts hold
every system (and, for a categorical dimension, every human label) in about the same share as the dataset.

* stratum of a document = the set of systems that have an output for it (on SummEval every document has all 16,
  so one stratum; on a dataset where each document was written by one or a few systems, one stratum per set);
* for a binary / nominal / ordinal dimension, also the document's most frequent human label (ties: the lowest).

Within a stratum of n documents, round(n x test_share) go to test by the largest-remainder rule over the strata
(so the whole test part has round(N x test_share) documents and each stratum gets floor or ceil of its share),
drawn with ``numpy.random.default_rng(seed)`` from the stratum's documents in sorted order: the same dataset, seed
and share always give the same split, and its ``split_id`` (a hash of what it is) names it in the store.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from evalcore.model import Dataset, counted

if TYPE_CHECKING:  # types only
    from evalcore.identity import Viewer
    from evalcore.store import Store

DEV, TEST = "dev", "test"
STRATA_SYSTEM = "system"
STRATA_SYSTEM_LABEL = "system+label"


@dataclass(frozen=True)
class Split:
    """Which documents of ``dataset_id`` are for development and which are held out for the final test.

    ``strata`` is the rule that stratified it ("system", or "system+label" for a categorical dimension);
    ``dimension`` the dimension it was made for (its labels stratify a categorical one). ``final_checks`` is how
    many final checks the store has recorded on its test part (filled by :func:`load_split`; 0 for a new split)."""

    dataset_id: str
    dimension: str
    seed: int
    test_share: float
    strata: str
    dev_docs: tuple[str, ...]
    test_docs: tuple[str, ...]
    created_at: str = field(default="", compare=False)
    final_checks: int = field(default=0, compare=False)

    @property
    def split_id(self) -> str:
        """A hash of what the split is (dataset, dimension, rule, seed, share and both document lists)."""
        blob = json.dumps([self.dataset_id, self.dimension, self.strata, self.seed, round(self.test_share, 9),
                           sorted(self.dev_docs), sorted(self.test_docs)])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def part_of(self, doc_id: object) -> str:
        """"dev" or "test" (KeyError for a document the split does not know)."""
        doc = str(doc_id)
        if doc in self._dev:
            return DEV
        if doc in self._test:
            return TEST
        raise KeyError(f"document {doc!r} is in neither part of split {self.split_id}")

    @property
    def _dev(self) -> frozenset[str]:
        return frozenset(self.dev_docs)

    @property
    def _test(self) -> frozenset[str]:
        return frozenset(self.test_docs)

    def docs(self, part: str) -> tuple[str, ...]:
        if part not in (DEV, TEST):
            raise ValueError(f"part must be 'dev' or 'test', got {part!r}")
        return self.dev_docs if part == DEV else self.test_docs

    def summary(self) -> dict:
        """What the CLI's ``split`` key and the page show: the rule and the documents in each part."""
        return {"split_id": self.split_id, "seed": self.seed, "test_share": self.test_share, "strata": self.strata,
                "dimension": self.dimension, "dev_documents": list(self.dev_docs),
                "test_documents": list(self.test_docs), "final_checks": self.final_checks}


def _doc_strata(dataset: Dataset, dimension: str, by_label: bool) -> pd.Series:
    """doc_id (as str) -> stratum key (a string), for every document with at least one item."""
    items = dataset.items.assign(doc_id=dataset.items["doc_id"].astype(str), system_id=dataset.items["system_id"]
                                 .astype(str))
    systems = items.groupby("doc_id")["system_id"].agg(lambda s: ",".join(sorted(set(s))))
    if not by_label:
        return systems
    dim = dataset.dimension(dimension)
    human = dataset.human_table(dimension)
    human = human.assign(doc_id=human["doc_id"].astype(str))
    from evalcore.meta.classification import judge_codes  # nearest category, as the agreement statistics do

    human["label"] = judge_codes(human["human"].to_numpy(dtype=float), dim.categories, "ordinal")
    # the document's most frequent label; ties: the lowest code; no rated item: -1
    mode = human[human["label"] >= 0].groupby("doc_id")["label"].agg(lambda s: int(s.value_counts()
                                                                                   .sort_index()
                                                                                   .idxmax()))
    labels = mode.reindex(systems.index).fillna(-1).astype(int)
    return systems + "|" + labels.astype(str)


def _allocate(sizes: list[int], share: float, total: int) -> list[int]:
    """Test documents per stratum: floor(n x share), plus one for the strata with the largest remainders until
    ``total`` (ties: the earlier stratum in sorted key order)."""
    exact = [n * share for n in sizes]
    base = [math.floor(x) for x in exact]
    left = total - sum(base)
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order[:max(0, left)]:
        if base[i] < sizes[i]:
            base[i] += 1
    return base


def make_split(dataset: Dataset, dimension: str, *, test_share: float = 0.3, seed: int = 0) -> Split:
    """A seeded, stratified document-level split (see the module docstring). Both parts get at least one
    document; a dataset with fewer than two documents cannot be split (ValueError)."""
    if not (isinstance(test_share, (int, float)) and 0 < float(test_share) < 1):
        raise ValueError(f"--test-share must be between 0 and 1 (exclusive), got {test_share!r}")
    dataset.dimension(dimension)  # KeyError naming the dimension when it is not there
    by_label = dataset.dimension(dimension).is_categorical
    strata = _doc_strata(dataset, dimension, by_label)
    n_docs = len(strata)
    if n_docs < 2:
        raise ValueError(f"dataset {dataset.id!r} has {counted(n_docs, 'document')}: a development / test "
                         "split needs two or more")
    total = min(n_docs - 1, max(1, round(n_docs * float(test_share))))
    keys = sorted(set(strata))
    members = [sorted(strata.index[strata == k]) for k in keys]
    counts = _allocate([len(m) for m in members], float(test_share), total)
    rng = np.random.default_rng(seed)
    test: set[str] = set()
    for docs, k in zip(members, counts):
        picked = rng.permutation(len(docs))[:k]
        test.update(docs[i] for i in picked)
    order = [str(d) for d in pd.unique(dataset.items["doc_id"].astype(str))]  # the dataset's document order
    return Split(dataset_id=dataset.id, dimension=dimension, seed=int(seed), test_share=float(test_share),
                 strata=STRATA_SYSTEM_LABEL if by_label else STRATA_SYSTEM,
                 dev_docs=tuple(d for d in order if d not in test), test_docs=tuple(d for d in order if d in test))


def save_split(store: Store, split: Split) -> str:
    """Keep the split with the dataset in the store (idempotent); its split_id."""
    return store.save_split({"dataset_id": split.dataset_id, "split_id": split.split_id,
                             "dimension": split.dimension, "seed": split.seed, "test_share": split.test_share,
                             "strata": split.strata, "dev_docs": list(split.dev_docs),
                             "test_docs": list(split.test_docs)})


def _from_row(row: dict, checks: int) -> Split:
    return Split(dataset_id=row["dataset_id"], dimension=row["dimension"], seed=row["seed"],
                 test_share=row["test_share"], strata=row["strata"], dev_docs=tuple(row["dev_docs"]),
                 test_docs=tuple(row["test_docs"]), created_at=row["created_at"], final_checks=checks)


def load_split(store: Store, dataset_id: str, split_id: str, *, viewer: Viewer | None = None) -> Split:
    """A stored split by id (or a unique prefix), with the number of final checks made on its test part (by
    ``viewer``, an evalcore.identity.Viewer, on a server with sign-in: each user's looks are theirs)."""
    row = store.load_split_row(dataset_id, split_id)
    if row is None:
        raise KeyError(f"no split {split_id!r} for dataset {dataset_id!r}")
    return _from_row(row, len(store.final_checks(dataset_id, row["split_id"], viewer=viewer)))


def list_splits(store: Store, dataset_id: str, dimension: str | None = None, *, viewer: Viewer | None = None
                ) -> list[Split]:
    """The dataset's stored splits, newest first (final checks counted as :func:`load_split` does)."""
    return [_from_row(r, len(store.final_checks(dataset_id, r["split_id"], viewer=viewer)))
            for r in store.list_split_rows(dataset_id, dimension)]


def split_dataset(dataset: Dataset, split: Split, part: str) -> Dataset:
    """The dataset restricted to one part's documents (same id: runs on it are stored against the dataset).
    The development page and the proposal work on ``split_dataset(ds, split, "dev")`` only."""
    from evalcore.sampling import documents_subset

    if split.dataset_id != dataset.id:
        raise ValueError(f"split {split.split_id} was made for dataset {split.dataset_id!r}, not {dataset.id!r}")
    keep = set(split.docs(part))
    docs = [d for d in pd.unique(dataset.items["doc_id"]) if str(d) in keep]
    return documents_subset(dataset, docs)


def check_dev_only(frame: pd.DataFrame, split: Split, *, what: str) -> None:
    """Refuse (ValueError) a frame holding any test-part document: what the proposal prompt and the few-shot
    examples are built from must come from the development part only."""
    docs = set(frame["doc_id"].astype(str)) if "doc_id" in frame.columns else set()
    leaked = sorted(docs & set(split.test_docs))
    if leaked:
        raise ValueError(f"{what} holds {counted(len(leaked), 'document')} of the test part (e.g. {leaked[0]!r}): only the "
                         "development part may be shown to the judge or used for examples")
    unknown = sorted(docs - set(split.dev_docs))
    if unknown:
        raise ValueError(f"{what} holds {counted(len(unknown), 'document')} the split does not know (e.g. "
                         f"{unknown[0]!r})")


__all__ = ["Split", "make_split", "save_split", "load_split", "list_splits", "split_dataset", "check_dev_only",
           "DEV", "TEST", "STRATA_SYSTEM", "STRATA_SYSTEM_LABEL"]
