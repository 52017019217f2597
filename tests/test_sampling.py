"""Issue 18.5: partial runs on whole documents (evalcore.sampling; ``score --sample-docs K``), and meta's warning
when such a run rests on fewer than 10 documents."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.store import Store
from evalcore.model import Dataset, Dimension
from evalcore.sampling import documents_subset, sample_documents
from evalcore.testing.loopback import serve


def tiny(n_docs: int = 12, n_systems: int = 3) -> Dataset:
    docs = [f"d{i:02d}" for i in range(n_docs)]
    items = pd.DataFrame([{"item_id": f"{d}/S{s}", "doc_id": d, "system_id": f"S{s}", "output": f"summary {d} {s}"}
                          for d in docs for s in range(n_systems)])
    documents = pd.DataFrame({"doc_id": docs, "source": [f"source of {d}" for d in docs],
                              "references": [[f"ref {d}"] for d in docs], "context": [""] * n_docs})
    # document i's items are rated i / 3 + system: documents differ in quality, systems too
    human = pd.DataFrame([{"item_id": f"{d}/S{s}", "dimension": "coherence", "score": 1 + (i % 4) + 0.1 * s}
                          for i, d in enumerate(docs) for s in range(n_systems)])
    return Dataset(id="tinysample", name="Tiny", task="summarization", dimensions=[Dimension("coherence", 1, 5)],
                   documents=documents, items=items, human_scores=human)


def test_random_sample_is_seeded_and_whole():
    ds = tiny()
    picked = sample_documents(ds, 5, seed=3)
    by_hand = sorted(np.random.default_rng(3).choice(12, size=5, replace=False).tolist())
    assert picked == [f"d{i:02d}" for i in by_hand]
    assert sample_documents(ds, 5, seed=3) == picked and sample_documents(ds, 5, seed=4) != picked
    sub = documents_subset(ds, picked)
    assert sorted(sub.items["doc_id"].unique()) == picked
    assert sub.items.groupby("doc_id").size().eq(3).all()  # every system of each document
    assert set(sub.human_scores["item_id"]) == set(sub.items["item_id"]) and sub.id == ds.id
    with pytest.raises(ValueError, match="only 12 documents"):
        sample_documents(ds, 13)


def test_stratified_sample_takes_one_document_per_quality_stratum():
    ds = tiny()
    picked = sample_documents(ds, 4, seed=0, how="stratified")
    quality = {f"d{i:02d}": 1 + (i % 4) for i in range(12)}  # the documents' mean human score, up to 0.1
    assert sorted(quality[d] for d in picked) == [1, 2, 3, 4]  # 4 strata of 3 documents, one from each


def test_score_sample_docs_scores_whole_documents_and_meta_warns(tmp_path, monkeypatch, capsys):
    db = tmp_path / "s.db"
    monkeypatch.setenv("EVALCORE_DB", str(db))
    ds = tiny()
    Store(db).save_dataset(ds)
    with serve() as srv:
        code = main(["score", "--dataset", ds.id, "--method", "rts", "--dimension", "coherence", "--model", "loop",
                     "--provider", "vllm", "--base-url", srv.base_url, "--sample-docs", "5", "--seed", "3",
                     "--quiet", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    run_id = json.loads(out.out)["run_id"]
    picked = sample_documents(ds, 5, seed=3)
    assert all(d in out.err for d in picked)  # the command says which documents it scored
    from evalcore.judge.spec import recorded_spec

    spec = recorded_spec(run_id, Store(db))  # the run records them: a resume or a bundle scores the same items
    assert spec.documents == tuple(str(d) for d in picked) and len(spec.dataset.items) == 15
    assert main(["meta", "--dataset", ds.id, "--run", run_id, "--resamples", "20", "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["dimensions"]["coherence"]
    assert entry["items"] == 15  # 5 documents x 3 systems
    assert any("rests on 5 documents" in w for w in entry["warnings"])
    assert any("3 systems" in w for w in entry["warnings"])
    assert main(["score", "--dataset", ds.id, "--method", "rts", "--model", "m", "--base-url", "http://x/v1",
                 "--sample-docs", "5", "--limit", "3"]) == 2
    assert "not both" in capsys.readouterr().err


def test_score_run_resumes_a_sampled_run_as_recorded(tmp_path, monkeypatch, capsys):
    """``score --run ID`` without --sample-docs (the Score page's resume command for a run that recorded its spec):
    the run's recorded 4 documents, not the whole dataset, and nothing asked again."""
    db = tmp_path / "r.db"
    monkeypatch.setenv("EVALCORE_DB", str(db))
    ds = tiny()
    Store(db).save_dataset(ds)
    common = ["--dataset", ds.id, "--method", "rts", "--model", "loop", "--provider", "vllm"]
    with serve() as srv:
        assert main(["score", *common, "--base-url", srv.base_url, "--dimension", "coherence", "--sample-docs", "4",
                     "--seed", "1", "--quiet", "--json"]) == 0
        run_id = json.loads(capsys.readouterr().out)["run_id"]
        sent = srv.requests_seen
        assert main(["score", *common, "--base-url", srv.base_url, "--run", run_id, "--json"]) == 0
        out = capsys.readouterr()
        assert srv.requests_seen == sent  # every answer is the run's own
    assert json.loads(out.out)["run_id"] == run_id
    assert f"resuming run {run_id} as recorded: rts on coherence, 4 sampled documents" in out.err
    judged = Store(db).rows("SELECT DISTINCT item_id FROM judgments WHERE run_id = ?", (run_id,))
    assert len(judged) == 12  # 4 documents x 3 systems, never the 36 items of the whole dataset
