"""Criteria page: method configs and the full prompt the judge would receive."""

from __future__ import annotations

from typing import Any

from evalcore.model import Dataset


def steps_problem(steps: str) -> str | None:
    """Why a judge's reply does not look like evaluation steps, or None (issue 18.12: a reply of "4" was saved as
    the steps). Steps are a few sentences: at least 20 characters and 4 words, some of them words, not numbers."""
    text = (steps or "").strip()
    words = [w for w in text.split() if any(ch.isalpha() for ch in w)]
    if not text:
        return "the judge returned nothing"
    if len(text) < 20 or len(words) < 4:
        return f"the judge answered {text[:60]!r}, which does not read as evaluation steps"
    return None


def method_config(method_name: str, dataset: Dataset) -> Any:
    """A method's config for a dataset: the one rule the CLI uses too (evalcore.judge.spec.method_config)."""
    from evalcore.judge.spec import method_config as config

    return config(method_name, dataset)


def rendered_prompt(dataset: Dataset, method_name: str, item_id: str, criteria: Any) -> str:
    """The full text the judge would receive for one item (for a pairwise method: the item first, then another
    output of the same document)."""
    from evalcore.judge import runner
    from evalcore.methods import get_method, render_prompt

    method = get_method(method_name)
    config = method_config(method_name, dataset)
    if method.pairwise:
        doc = dataset.items.loc[dataset.items["item_id"].astype(str) == str(item_id), "doc_id"]
        if doc.empty:
            raise KeyError(f"no item {item_id!r} in {dataset.id}")
        tasks = [t for t in runner.pair_tasks(_subset(dataset, doc_id=doc.iloc[0]), criteria.dimension,
                                              runner.PairSelection())
                 if t.item_first == str(item_id)]
        if not tasks:
            raise ValueError(f"document {doc.iloc[0]!r} has a single output: nothing to compare it with")
        task = tasks[0]
    else:
        task = runner.item_tasks(_subset(dataset, item_id=item_id), criteria.dimension)[0]
    return render_prompt(method, task, criteria, config)


def _subset(dataset: Dataset, *, item_id: str | None = None, doc_id: str | None = None) -> Dataset:
    """The dataset cut down to one item or one document (so task builders do not walk every item)."""
    items = dataset.items
    if item_id is not None:
        items = items[items["item_id"].astype(str) == str(item_id)]
        if items.empty:
            raise KeyError(f"no item {item_id!r} in {dataset.id}")
    if doc_id is not None:
        items = items[items["doc_id"] == doc_id]
    return Dataset(id=dataset.id, name=dataset.name, task=dataset.task, dimensions=dataset.dimensions,
                   documents=dataset.documents[dataset.documents["doc_id"].isin(items["doc_id"])], items=items,
                   human_scores=dataset.human_scores.iloc[0:0])
