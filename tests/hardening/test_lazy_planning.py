"""Request planning is counted before it is built (issue 21, item 2): ``runner.count_requests`` gives the number of
requests a plan sends from one task per document, and equals the built plan's length (``runner.estimate``'s
``requests``: every task's requests built) for every method, on item and pairwise datasets, with limits, pair
selections, several dimensions, and planned configs that send one request per sample."""

from __future__ import annotations

import pytest

from evalcore.datasets import load_dataset
from evalcore.judge import runner
from evalcore.judge.spec import ScoringSpec, default_spec
from evalcore.methods import METHODS
from evalcore.sampling import documents_subset
from evalcore.types import Capabilities

NO_N = Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=False, echo_logprobs=True)


def built(spec: ScoringSpec, planned=None) -> int:
    m, dims, crit, requested = runner.resolve(spec.method, spec.dimensions, spec.criteria, spec.config)
    planned = requested if planned is None else planned
    tasks = runner.build_tasks(spec.dataset, m, dims, limit=spec.limit, pairs=spec.pairs)
    return sum(len(m.build_requests(t, crit[t.dimension], planned)) for t in tasks)


def small(dataset_id: str, n_docs: int = 3):
    ds = load_dataset(dataset_id)
    return documents_subset(ds, list(ds.items["doc_id"].drop_duplicates().iloc[:n_docs]))


ITEM_METHODS = [n for n, m in METHODS.items() if not m.pairwise]
PAIR_METHODS = [n for n, m in METHODS.items() if m.pairwise]


@pytest.mark.parametrize("method", ITEM_METHODS)
@pytest.mark.parametrize("dataset_id,limit", [("summeval", None), ("summeval", 20), ("topical_chat", None)])
def test_the_count_equals_the_built_plan_for_item_methods(method, dataset_id, limit):
    ds = small(dataset_id)
    spec = default_spec(ds, method, ds.dimension_names[:2], limit=limit)
    n = runner.count_requests(spec)
    assert n == built(spec) > 0
    m = METHODS[method]
    planned, _ = m.plan(spec.config, NO_N)  # samples one request each where the server ignores n
    assert runner.count_requests(spec, planned) == built(spec, planned)


@pytest.mark.parametrize("method", PAIR_METHODS)
@pytest.mark.parametrize("dataset_id,pairs,limit", [
    ("summeval", None, None), ("summeval", {"orders": ["ba"]}, 7), ("summeval", {"sample": 5, "seed": 1}, None),
    ("pandalm", None, None), ("pandalm", {"orders": ["ab", "ba"], "annotated": False}, 9),
])
def test_the_count_equals_the_built_plan_for_pairwise_methods(method, dataset_id, pairs, limit):
    ds = small(dataset_id, 4)
    spec = default_spec(ds, method, ds.dimension_names[:2], limit=limit, pairs=pairs)
    assert runner.count_requests(spec) == built(spec) > 0


def test_gptscore_against_references_counts_one_request_per_reference():
    from _judging import dataset

    ds = dataset(4)  # documents with 1, 2, 3 and 4 references: one request per reference
    ds.documents["references"] = [[f"reference {k} of {d}" for k in range(i + 1)]
                                  for i, d in enumerate(ds.documents["doc_id"])]
    spec = default_spec(ds, "gptscore", ["coherence"])
    spec.config = runner.method_config_of(METHODS["gptscore"], {"direction": "ref->hypo"})
    assert runner.count_requests(spec) == built(spec) == 1 + 2 + 3 + 4


def test_the_count_is_the_estimates_request_count(tmp_path):
    from evalcore.judge.client import Endpoint
    from evalcore.judge.spec import EngineOptions
    from evalcore.store import Store

    ds = small("summeval", 2)
    spec = default_spec(ds, "h2h", ds.dimension_names)
    est = runner.estimate(spec, EngineOptions(Endpoint("http://127.0.0.1:9/v1", "m", provider="vllm")),
                          store=Store(tmp_path / "s.db"))
    assert runner.count_requests(spec) == est.requests == 2 * 120 * 2 * 4  # docs x C(16,2) pairs x orders x dims


def test_a_link_to_the_largest_plan_builds_no_request_until_asked(first_start, monkeypatch):
    """/score?method=h2h&limit=0&score_dims=<all four>: the page shows the 96,000 requests, counted, and builds the
    estimate only when "Estimate calls and cost" is pressed; nothing can start before."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    import dataclasses

    from evalcore.sampling import documents_subset

    calls = []
    real = runner.estimate

    def estimate_on_one_document(spec, *a, **kw):
        # what is checked here is WHEN the estimate is built; building the real one for 100 documents takes ~50 s
        # (bench/bench_plan_count.py), so it is built on the first document and scaled to the 100 (h2h's requests
        # are the same per document on SummEval; the counting is checked against the built plans above)
        calls.append(1)
        docs = list(dict.fromkeys(spec.dataset.items["doc_id"]))
        one = real(dataclasses.replace(spec, dataset=documents_subset(spec.dataset, docs[:1])), *a, **kw)
        k = len(docs)
        return dataclasses.replace(one, calls=one.calls * k, cached=one.cached * k, requests=one.requests * k,
                                   tasks=one.tasks * k, prompt_tokens=one.prompt_tokens * k,
                                   completion_tokens=one.completion_tokens * k)

    monkeypatch.setattr(runner, "estimate", estimate_on_one_document)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=300)
    at.query_params.update({"method": "h2h", "limit": "0"})
    at.query_params["score_dims"] = ["coherence", "consistency", "fluency", "relevance"]
    at.switch_page("pages/score.py").run()
    at.selectbox(key="endpoint").set_value("vllm").run()
    at.text_input(key="model").input("loop-model").run()
    assert not at.exception, [e.value for e in at.exception]
    assert {m.label: m.value for m in at.metric}["Requests"] == "96,000"
    assert calls == [] and at.button(key="start_scoring").disabled
    at.button(key="estimate_now").click().run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert calls == [1] and metrics["Requests"] == "96,000" and "Calls to send" in metrics
