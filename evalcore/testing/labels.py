"""A small categorical-label dataset and judge run for tests and demos (issue 7, "Label kinds").

Documents with several systems' outputs, a binary ``faithful`` dimension (fail / pass) or another kind, three
annotators who mostly agree with a hidden truth, and a judge run whose judgments carry 002-style ``p_yes`` /
``p_no`` in their ``detail`` (what evalcore.methods.implicit stores), so calibration has probabilities to read.
Everything is drawn from a seeded generator: the same arguments give the same data. A test double, never app data.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pandas as pd

from evalcore.model import ANNOTATION_COLUMNS, Dataset, Dimension, Run

LABELS = {"binary": ("fail", "pass"), "nominal": ("A", "B", "tie"), "ordinal": ("bad", "ok", "good")}


class LabelStore(Protocol):
    """What ``save_label_example`` calls of a store: ``evalcore.store.Store``'s methods of these names (described
    here: this package and the store's share a layer, so neither imports the other)."""

    def save_dataset(self, dataset: Dataset, *, overwrite: bool = False) -> None: ...

    def create_run(self, *, run_id: str, dataset_id: str, method: str, model: str, label: str = "",
                   config: dict[str, Any] | None = None, status: str = "running") -> None: ...

    def save_judgment(self, run_id: str, row: dict[str, Any]) -> None: ...

    def finish_run(self, run_id: str, *, status: str, stats: dict[str, Any]) -> None: ...

    def load_dataset(self, dataset_id: str) -> Dataset: ...

    def load_run(self, run_id: str) -> Run: ...


def label_dataset(*, kind: str = "binary", n_docs: int = 24, n_systems: int = 3, n_annotators: int = 3,
                  seed: int = 0, dataset_id: str = "user-labels", dimension: str = "faithful",
                  annotator_accuracy: float = 0.85) -> tuple[Dataset, np.ndarray]:
    """(dataset, hidden truth codes per item). Gold human_scores hold the annotators' majority (ties: the truth)."""
    rng = np.random.default_rng(seed)
    labels = LABELS[kind]
    k = len(labels)
    dim = Dimension(dimension, 0, k - 1, f"{kind} label: {' / '.join(labels)}", kind=kind, labels=labels)
    doc_ids = [f"doc{i:02d}" for i in range(n_docs)]
    documents = pd.DataFrame({"doc_id": doc_ids, "source": [f"Source text of {d}." for d in doc_ids],
                              "references": [[] for _ in doc_ids], "context": ""})
    items = pd.DataFrame([{"item_id": f"{d}-sys{s}", "doc_id": d, "system_id": f"sys{s}",
                           "output": f"Summary of {d} by system {s}."} for d in doc_ids for s in range(n_systems)])
    truth = rng.integers(0, k, len(items))
    votes = np.stack([np.where(rng.random(len(items)) < annotator_accuracy, truth, rng.integers(0, k, len(items)))
                      for _ in range(n_annotators)])
    ann = pd.DataFrame([{"item_id": item, "dimension": dimension, "annotator": f"rater{a + 1}", "group": "expert",
                         "value": float(votes[a, i])} for a in range(n_annotators)
                        for i, item in enumerate(items["item_id"])], columns=ANNOTATION_COLUMNS)
    counts = np.stack([(votes == c).sum(axis=0) for c in range(k)], axis=1)
    top = counts.max(axis=1, keepdims=True)
    majority = np.where((counts == top).sum(axis=1) > 1, truth, counts.argmax(axis=1))
    human = pd.DataFrame({"item_id": items["item_id"], "dimension": dimension, "score": majority.astype(float)})
    ds = Dataset(id=dataset_id, name=f"Synthetic {kind} labels", task="summarization", dimensions=[dim],
                 documents=documents, items=items, human_scores=human, annotations=ann,
                 description="seeded synthetic labels (evalcore.testing.labels)")
    return ds, truth


def label_run(dataset: Dataset, truth: np.ndarray, *, seed: int = 1, judge_accuracy: float = 0.75,
              run_id: str | None = None, failures: int = 0) -> Run:
    """A judge run on the dataset's first dimension: right with probability ``judge_accuracy``; for a binary
    dimension each judgment carries p_yes / p_no (a noisy confidence in its own answer). The first ``failures``
    items fail to parse (status "failed", value NaN)."""
    rng = np.random.default_rng(seed)
    dim = dataset.dimensions[0]
    k = len(dim.categories)
    judge = np.where(rng.random(len(truth)) < judge_accuracy, truth, rng.integers(0, k, len(truth)))
    rows = []
    for i, item in enumerate(dataset.items["item_id"]):
        detail: dict = {}
        if dim.kind == "binary":
            confident = float(np.clip(rng.beta(6, 2), 0.5, 0.99))
            p_yes = confident if judge[i] == 1 else 1 - confident
            detail = {"p_yes": p_yes, "p_no": 1 - p_yes}
        failed = i < failures
        rows.append({"item_id": item, "dimension": dim.name, "raw": "Yes" if judge[i] == 1 else "No",
                     "value": float("nan") if failed else float(judge[i]), "status": "failed" if failed else "ok",
                     "reason": "no yes/no token" if failed else "", "estimator": "yes-probability(top-5)",
                     "detail": {} if failed else detail})
    return Run(run_id=run_id or f"{dataset.id}/implicit-synthetic", dataset_id=dataset.id, method="implicit",
               model="synthetic-judge", label="synthetic judge", judgments=pd.DataFrame(rows))


def save_label_example(store: LabelStore, *, kind: str = "binary", seed: int = 0, n_docs: int = 24, n_systems: int = 3,
                       n_annotators: int = 3, dataset_id: str = "user-labels", dimension: str = "faithful",
                       annotator_accuracy: float = 0.85) -> tuple[Dataset, Run]:
    """Save the dataset and its run in ``store`` through the store's own API; returns them as loaded back. The
    dataset is ``label_dataset``'s with these arguments."""
    ds, truth = label_dataset(kind=kind, seed=seed, n_docs=n_docs, n_systems=n_systems, n_annotators=n_annotators,
                              dataset_id=dataset_id, dimension=dimension, annotator_accuracy=annotator_accuracy)
    run = label_run(ds, truth, seed=seed + 1)
    store.save_dataset(ds, overwrite=True)
    store.create_run(run_id=run.run_id, dataset_id=ds.id, method=run.method, model=run.model, label=run.label,
                     config={"method": run.method, "model": run.model}, status="running")
    for row in run.judgments.to_dict(orient="records"):
        store.save_judgment(run.run_id, row)
    store.finish_run(run.run_id, status="done", stats={"judgments": len(run.judgments)})
    return store.load_dataset(ds.id), store.load_run(run.run_id)
