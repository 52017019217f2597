"""The Score page's estimate tells duplicate outputs (identical requests, sent once) from cache hits (replies an
earlier run left in the cache): issue 8, "the Score estimate ... tells duplicate outputs from cache hits"."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evalcore.judge.client import Endpoint
from evalcore.store import Store
from evalcore.types import Capabilities
from evalcore.model import Dataset
from evalcore.testing.loopback import serve

from tests.test_judge_runner import CRIT, TinyMethod, tiny_dataset
from tests import judge_calls


def dataset_with_duplicates() -> Dataset:
    """3 documents x 2 systems, where both systems wrote the same summary of d0: 6 items, 5 distinct texts."""
    ds = tiny_dataset(3, 2)
    items = ds.items.copy()
    items.loc[items["doc_id"] == "d0", "output"] = "the same summary of d0"
    return replace(ds, items=items)


def only_document(ds: Dataset, doc: str) -> Dataset:
    items = ds.items[ds.items["doc_id"] == doc].reset_index(drop=True)
    human = ds.human_scores[ds.human_scores["item_id"].isin(items["item_id"])].reset_index(drop=True)
    return replace(ds, items=items, human_scores=human)


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "judge.db")


def test_duplicates_are_counted_apart_from_cache_hits(store):
    ds = dataset_with_duplicates()
    m = TinyMethod()
    est = judge_calls.estimate(ds, method=m, criteria_by_dim=CRIT, endpoint=Endpoint("http://127.0.0.1:9/v1", "gpt-4o"),
                          store=store, capabilities=Capabilities())
    # 6 items x 2 dimensions = 12 requests; d0's two identical summaries make 1 duplicate per dimension
    assert (est.requests, est.duplicates, est.cache_hits, est.calls) == (12, 2, 0, 10)
    assert est.cached == est.duplicates + est.cache_hits

    with serve() as srv:
        e = Endpoint(srv.base_url, "gpt-4o", provider="openai")
        # an earlier run scored d1: its 2 items x 2 dimensions are cache hits now
        judge_calls.score_dataset(only_document(ds, "d1"), method=m, criteria_by_dim=CRIT, endpoint=e, api_key="k", store=store)
        est2 = judge_calls.estimate(ds, method=m, criteria_by_dim=CRIT, endpoint=e, store=store)
    assert (est2.requests, est2.duplicates, est2.cache_hits, est2.calls) == (12, 2, 4, 6)
    assert est2.cached == 6

