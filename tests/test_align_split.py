"""The alignment split (issue 22): documents, not items; deterministic given the seed; disjoint; covering every
document; stratified by system (and by label for a categorical dimension); kept in the store (schema version 5,
migrated from the last release's store) and read back; final checks counted."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from evalcore import datasets
from evalcore.align import split as sp
from evalcore.model import Dataset, Dimension
from evalcore.sampling import documents_subset
from evalcore.store import Store, schema

FIXTURE_V3 = Path(__file__).parent / "fixtures" / "store_v3.db"


@pytest.fixture(scope="module")
def summeval24() -> Dataset:
    ds = datasets.load_dataset("summeval")
    return documents_subset(ds, list(dict.fromkeys(ds.items["doc_id"]))[:24])


def toy_dataset(systems_per_doc: list[list[str]], labels: list[float] | None = None, kind: str = "interval"
                ) -> Dataset:
    """One item per (document, system); human score = the document's label (or 3) for every item."""
    rows, scores = [], []
    for d, systems in enumerate(systems_per_doc):
        for s in systems:
            item = f"d{d}-{s}"
            rows.append({"item_id": item, "doc_id": f"d{d}", "system_id": s, "output": f"text {item}"})
            scores.append({"item_id": item, "dimension": "q", "score": labels[d] if labels else 3.0})
    dim = Dimension("q", 0 if kind == "binary" else 1, 1 if kind == "binary" else 5, kind=kind)
    docs = pd.DataFrame({"doc_id": [f"d{d}" for d in range(len(systems_per_doc))], "source": "",
                         "references": None, "context": ""})
    return Dataset(id="toy", name="toy", task="summarization", dimensions=[dim], documents=docs,
                   items=pd.DataFrame(rows), human_scores=pd.DataFrame(scores))


def test_a_split_covers_every_document_once_and_is_the_same_for_the_same_seed(summeval24):
    a = sp.make_split(summeval24, "coherence", test_share=0.3, seed=7)
    b = sp.make_split(summeval24, "coherence", test_share=0.3, seed=7)
    docs = set(summeval24.items["doc_id"].astype(str))
    assert a == b and a.split_id == b.split_id
    assert set(a.dev_docs).isdisjoint(a.test_docs)
    assert set(a.dev_docs) | set(a.test_docs) == docs
    assert len(a.test_docs) == round(24 * 0.3) == 7
    assert a.strata == "system"  # SummEval: every document has all 16 systems, one stratum
    others = {sp.make_split(summeval24, "coherence", test_share=0.3, seed=s).test_docs for s in range(8)}
    assert len(others) > 4  # the seed matters
    # all of a document's items fall on one side
    dev = sp.split_dataset(summeval24, a, "dev")
    test = sp.split_dataset(summeval24, a, "test")
    assert set(dev.items["item_id"]).isdisjoint(test.items["item_id"])
    assert len(dev.items) + len(test.items) == len(summeval24.items)
    assert set(test.items["doc_id"].astype(str)) == set(a.test_docs)


def test_strata_by_system_each_get_their_share():
    # 10 documents written by systems A and B, 10 by C only: each group must be split 30 / 70 on its own
    ds = toy_dataset([["A", "B"]] * 10 + [["C"]] * 10)
    s = sp.make_split(ds, "q", test_share=0.3, seed=1)
    test = set(s.test_docs)
    assert sum(f"d{d}" in test for d in range(10)) == 3
    assert sum(f"d{d}" in test for d in range(10, 20)) == 3


def test_a_categorical_dimension_is_stratified_by_label_too():
    labels = [1.0] * 4 + [0.0] * 16  # 4 "pass" documents among 20
    ds = toy_dataset([["A"]] * 20, labels=labels, kind="binary")
    s = sp.make_split(ds, "q", test_share=0.25, seed=3)
    assert s.strata == "system+label"
    test = set(s.test_docs)
    assert sum(f"d{d}" in test for d in range(4)) == 1  # the rare label gets its share: 4 x 0.25
    assert sum(f"d{d}" in test for d in range(4, 20)) == 4


def test_bad_settings_are_clear_errors(summeval24):
    with pytest.raises(ValueError, match="test-share"):
        sp.make_split(summeval24, "coherence", test_share=1.0)
    with pytest.raises(ValueError, match="two"):
        sp.make_split(toy_dataset([["A", "B"]]), "q")
    with pytest.raises(KeyError):
        sp.make_split(summeval24, "nope")


def test_check_dev_only_refuses_a_test_document(summeval24):
    s = sp.make_split(summeval24, "coherence", seed=0)
    frame = summeval24.items.assign(doc_id=summeval24.items["doc_id"].astype(str))
    with pytest.raises(ValueError, match="test part"):
        sp.check_dev_only(frame, s, what="the examples")
    sp.check_dev_only(frame[frame["doc_id"].isin(s.dev_docs)], s, what="the examples")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=hs.lists(hs.integers(min_value=1, max_value=12), min_size=1, max_size=4),
       share=hs.floats(min_value=0.05, max_value=0.95), seed=hs.integers(min_value=0, max_value=2**32 - 1))
def test_split_properties(groups, share, seed):
    """Any strata and share: disjoint, covering, deterministic, both parts non-empty, the test part of the size
    the share asks (round, kept within 1..N-1), each stratum within one document of its own share."""
    systems = [[f"S{g}"] for g, n in enumerate(groups) for _ in range(n)]
    n_docs = len(systems)
    if n_docs < 2:
        return
    ds = toy_dataset(systems)
    s = sp.make_split(ds, "q", test_share=share, seed=seed)
    assert s == sp.make_split(ds, "q", test_share=share, seed=seed)
    assert set(s.dev_docs).isdisjoint(s.test_docs)
    assert set(s.dev_docs) | set(s.test_docs) == {f"d{d}" for d in range(n_docs)}
    assert s.dev_docs and s.test_docs
    assert len(s.test_docs) == min(n_docs - 1, max(1, round(n_docs * share)))
    test = set(s.test_docs)
    clamped = not (1 <= round(n_docs * share) <= n_docs - 1)  # a part would be empty: one document moves
    start = 0
    for n in groups:
        got = sum(f"d{d}" in test for d in range(start, start + n))
        slack = 1 if clamped else 0
        assert math.floor(n * share) - slack <= got <= math.ceil(n * share) + slack
        start += n


def test_the_split_is_saved_with_the_dataset_and_read_back(tmp_path, summeval24):
    store = Store(tmp_path / "s.db")
    s = sp.make_split(summeval24, "coherence", test_share=0.3, seed=5)
    assert sp.save_split(store, s) == s.split_id
    sp.save_split(store, s)  # idempotent
    back = sp.load_split(store, "summeval", s.split_id[:6])
    assert back == s and back.created_at and back.final_checks == 0
    assert [x.split_id for x in sp.list_splits(store, "summeval", "coherence")] == [s.split_id]
    n1 = store.record_final_check("summeval", s.split_id, dimension="coherence", method="geval", baseline_hash="a",
                                  chosen_hash="b", baseline_run="r1", chosen_run="r2", result={"x": 1.0})
    n2 = store.record_final_check("summeval", s.split_id, dimension="coherence", method="geval", baseline_hash="a",
                                  chosen_hash="c", baseline_run="r1", chosen_run="r3", result={"x": 2.0})
    assert (n1, n2) == (1, 2)
    assert sp.load_split(store, "summeval", s.split_id).final_checks == 2
    assert [c["result"]["x"] for c in store.final_checks("summeval", s.split_id)] == [1.0, 2.0]
    with pytest.raises(KeyError):
        sp.load_split(store, "summeval", "ffffffff")


def test_version_5_migrates_the_last_releases_store_and_keeps_every_row(tmp_path):
    from tests.test_store_migrations import V4_ADDED, all_rows, copy_of, user_version

    path = copy_of(FIXTURE_V3, tmp_path)
    assert user_version(path) == 3
    before = all_rows(path)
    store = Store(path)
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION >= 5
    assert store.backup is not None and store.backup.name.startswith("evalcore.db.bak-v3-")
    for t, rows in before.items():
        got = store.conn.execute(f'SELECT * FROM "{t}" ORDER BY rowid').fetchall()
        added = len(V4_ADDED.get(t, ()))  # version 4's owner columns, last
        assert [r[:len(r) - added] for r in got] == rows, t
    cols = {r[1] for r in store.conn.execute('PRAGMA table_info("splits")')}
    assert {"dataset_id", "split_id", "dev_docs", "test_docs", "seed", "test_share", "strata"} <= cols
    # and it works: a split saved into the migrated store reads back
    ds = toy_dataset([["A", "B"]] * 6)
    s = sp.make_split(ds, "q", seed=2)
    sp.save_split(store, s)
    assert sp.load_split(store, "toy", s.split_id) == s
    store.close()
    fresh = Store(tmp_path / "fresh.db")
    fresh_cols = {t: [tuple(r[1:]) for r in fresh.conn.execute(f'PRAGMA table_info("{t}")')]
                  for t in ("splits", "final_checks")}
    fresh.close()
    again = Store(path)
    assert {t: [tuple(r[1:]) for r in again.conn.execute(f'PRAGMA table_info("{t}")')]
            for t in ("splits", "final_checks")} == fresh_cols
    assert again.backup is None


def test_a_parts_scoring_spec_names_its_documents_so_a_resume_scores_the_part(summeval24):
    """The loop's spec records the part's documents: a resume from the run's record (``score --run``, a worker)
    rebuilds the part, not the whole dataset (which would send and pay for every other document's items too)."""
    from evalcore.align.candidates import Candidate
    from evalcore.align.loop import spec_for
    from evalcore.judge.client import Endpoint
    from evalcore.judge.spec import default_criteria
    from evalcore.spec import ScoringSpec

    split = sp.make_split(summeval24, "coherence", test_share=0.3, seed=7)
    candidate = Candidate(default_criteria(summeval24, "coherence", "geval"), "baseline")
    endpoint = Endpoint(base_url="http://127.0.0.1:9/v1", model="m", provider="vllm", api_key_env="VLLM_API_KEY")
    for part, docs in (("dev", split.dev_docs), ("test", split.test_docs)):
        spec = spec_for(summeval24, split, part, "coherence", "geval", candidate, endpoint)
        assert set(spec.documents) == {str(d) for d in docs}
        again = ScoringSpec.from_dict(spec.to_dict(), summeval24)  # what a resume rebuilds from the record
        assert sorted(again.dataset.items["item_id"]) == sorted(spec.dataset.items["item_id"])
        assert len(again.dataset.items) < len(summeval24.items)
