"""A run bundle carries the run's ScoringSpec (issue 20: the spec passes as one value through CLI, pages, batch and
bundles): exported from one store and imported into a fresh one, the spec read back equals the one the run was
scored with, and scoring it again sends the same requests, byte for byte."""

from __future__ import annotations

import dataclasses
import json

import pytest

from evalcore import bundles
from evalcore.datasets import load_dataset
from evalcore.judge import runner
from evalcore.judge.client import endpoint_from_preset
from evalcore.judge.spec import EngineOptions, ScoringSpec, default_criteria, method_config, recorded_spec
from evalcore.sampling import documents_subset, sample_documents
from evalcore.store import Store
from evalcore.testing.loopback import serve

SCORING_PATHS = ("/v1/chat/completions", "/v1/completions")
RUN_ID = "summeval/geval-spec-in-bundle"


def scoring_bodies(srv) -> list[tuple[str, bytes]]:
    return [(p, b) for p, b in srv.bodies if p in SCORING_PATHS]


def sampled_spec() -> ScoringSpec:
    """A partial run as the Score page makes one: two whole documents, drawn seeded."""
    ds = load_dataset("summeval")
    docs = sample_documents(ds, 2, seed=3)
    return ScoringSpec(documents_subset(ds, docs), "geval", ["coherence"],
                       {"coherence": default_criteria(ds, "coherence", "geval")}, method_config("geval", ds),
                       label="two documents", run_id=RUN_ID, documents=tuple(str(d) for d in docs))


def options(srv) -> EngineOptions:
    endpoint = endpoint_from_preset("vllm", model="loopback-judge", base_url=srv.base_url)
    return EngineOptions(endpoint, concurrency=1)  # one at a time: the bodies come in the same order


@pytest.fixture
def scored(tmp_path):
    """(the spec, the loopback bodies its run sent, the bundle file)."""
    spec, source = sampled_spec(), Store(tmp_path / "a.db")
    with serve(record_bodies=True) as srv:
        runner.score_dataset(spec, options(srv), store=source)
        bodies = scoring_bodies(srv)
    out = tmp_path / "run.jsonl"
    bundles.export_run(RUN_ID, out, store=source)
    return spec, bodies, out, source


def lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_the_bundle_records_the_spec_on_its_own_line(scored):
    spec, _, out, _ = scored
    header, second = lines(out)[:2]
    assert header["version"] == bundles.VERSION == 2 and header["has_spec"] is True
    assert "spec" not in header["run"]["config"]  # once, on its line
    assert second["type"] == "spec" and second["spec"] == spec.to_dict()
    assert second["spec"]["documents"] == list(spec.documents) and len(spec.documents) == 2


def test_an_imported_run_has_the_same_spec_and_sends_the_same_requests(scored, tmp_path):
    spec, bodies, out, source = scored
    target = Store(tmp_path / "b.db")
    assert bundles.import_bundle(out, store=target)["run"] == RUN_ID
    restored = recorded_spec(RUN_ID, target)
    assert restored.to_dict() == spec.to_dict() == recorded_spec(RUN_ID, source).to_dict()
    assert list(restored.dataset.items["item_id"]) == list(spec.dataset.items["item_id"])  # the two documents
    assert len(restored.dataset.items) == 2 * restored.dataset.items["system_id"].nunique()
    with serve(record_bodies=True) as srv:
        # scored again under a new id, in a store whose cache is empty: the original run's requests, byte for byte
        # (the endpoint's capability probe first, as the first time)
        runner.score_dataset(dataclasses.replace(restored, run_id=RUN_ID + "-again"), options(srv), store=target)
        again = scoring_bodies(srv)
        # resumed: every judgment is current (criteria hashes equal), nothing is judged again
        resumed = runner.score_dataset(restored, options(srv), store=target)
        assert resumed.config.stats.judged_this_session == 0
    assert again and again == bodies


def test_a_renamed_import_resumes_under_its_new_id(scored, tmp_path):
    _, _, out, source = scored
    result = bundles.import_bundle(out, store=source, name="copy")  # the id exists here: imported beside it
    assert result["renamed_from"] == RUN_ID
    restored = recorded_spec(result["run"], source)
    assert (restored.run_id, restored.label) == (result["run"], "copy")


def test_a_version_1_bundle_without_a_spec_still_imports(scored, tmp_path):
    spec, _, out, _ = scored
    rows = lines(out)
    rows[0]["version"] = 1
    del rows[0]["has_spec"]
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(r) + "\n" for r in rows if r["type"] != "spec"), encoding="utf-8")
    target = Store(tmp_path / "b.db")
    bundles.import_bundle(old, store=target)
    restored = recorded_spec(RUN_ID, target)  # from the run's config: all but the document sample
    assert restored.criteria == spec.criteria and restored.method == "geval" and restored.documents is None
    assert restored.config == json.loads(json.dumps(dataclasses.asdict(spec.config)))


def test_a_spec_from_a_newer_evalcore_is_refused_and_nothing_is_written(scored, tmp_path):
    _, _, out, _ = scored
    rows = lines(out)
    rows[1]["spec"]["version"] = 99
    newer = tmp_path / "newer.jsonl"
    newer.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    target = Store(tmp_path / "b.db")
    with pytest.raises(bundles.BundleError, match=r"newer\.jsonl, line 2: .*spec version 99"):
        bundles.import_bundle(newer, store=target)
    assert not target.run_exists(RUN_ID)


def test_a_tampered_criteria_text_is_refused(scored, tmp_path):
    _, _, out, _ = scored
    rows = lines(out)
    rows[1]["spec"]["criteria"]["coherence"]["definition"] += " (edited)"
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(bundles.BundleError, match="criteria of 'coherence': recorded hash"):
        bundles.import_bundle(edited, store=Store(tmp_path / "b.db"))
