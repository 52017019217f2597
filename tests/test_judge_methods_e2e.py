"""Every real method (evalcore.methods) run by the engine against the loopback server, with full capabilities and
with each capability switched off (fallbacks recorded, or a clear UnsupportedByEndpoint)."""

from __future__ import annotations

import json
import math

import pytest

from evalcore.datasets import load_dataset
from evalcore.judge import runner
from evalcore.judge.client import Endpoint
from evalcore.store import Store
from evalcore.types import UnsupportedByEndpoint
from evalcore.methods import METHODS
from evalcore.methods.presets import PRESETS
from evalcore.testing.loopback import Switches, serve
from tests import judge_calls

CRIT = {"coherence": PRESETS["summeval"]["coherence"]}


@pytest.fixture(scope="module")
def summeval():
    return load_dataset("summeval")


def _ep(srv):
    return Endpoint(srv.base_url, "loop", provider="local")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_scores_through_the_engine(name, summeval, tmp_path):
    m = METHODS[name]
    store = Store(tmp_path / "e2e.db")
    with serve() as srv:
        run = judge_calls.score_dataset(summeval, method=name, criteria_by_dim=CRIT, endpoint=_ep(srv), store=store,
                                   limit=3, concurrency=4)
        seen = srv.requests_seen
        again = judge_calls.score_dataset(summeval, method=name, criteria_by_dim=CRIT, endpoint=_ep(srv), store=store,
                                     limit=3)
        assert srv.requests_seen == seen  # the repeat is served wholly from the cache
    frame = run.comparisons if m.pairwise else run.judgments
    assert len(frame) == (6 if m.pairwise else 3)  # pairwise: 3 pairs x both orders
    assert frame["status"].eq("ok").all(), frame["reason"].tolist()
    values = frame["value"].astype(float)
    assert values.notna().all() and all(math.isfinite(v) for v in values)
    if m.pairwise:
        assert set(frame["order"]) == {"ab", "ba"}
        assert set(frame["verdict"]) <= {"first", "second", "tie"}
    elif name != "gptscore":
        lo, hi = (0, 1) if name == "implicit" else (CRIT["coherence"].scale_min, CRIT["coherence"].scale_max)
        if name == "explicit":
            lo, hi = 0, 100
        assert values.between(lo, hi).all(), values.tolist()
    else:
        assert (values < 0).all()  # mean token log-prob
    assert run.config["method"] == name and run.config["capabilities"]["chat_logprobs"] is True
    assert again.config["stats"]["requests"] == 0


def test_geval_falls_back_to_20_samples_without_logprobs(summeval, tmp_path):
    store = Store(tmp_path / "fb.db")
    with serve(switches=Switches(no_logprobs=True)) as srv:
        run = judge_calls.score_dataset(summeval, method="geval", criteria_by_dim=CRIT, endpoint=_ep(srv), store=store,
                                   limit=2)
        assert srv.by_path["/v1/chat/completions"] == 2 + 2  # one n=20 request per item (+ the 2 chat probes)
    j = run.judgments
    assert "20-sample fallback" in run.config["plan_note"]
    assert j["status"].eq("ok").all() and set(j["estimator"]) == {"sample-mean(n=20)"}
    assert all(len(json.loads(raw)) == 20 for raw in j["raw"])


def test_geval_samples_spread_over_requests_when_n_is_ignored(summeval, tmp_path):
    store = Store(tmp_path / "n.db")
    with serve(switches=Switches(no_logprobs=True, ignore_n=True)) as srv:
        run = judge_calls.score_dataset(summeval, method="geval", criteria_by_dim=CRIT, endpoint=_ep(srv), store=store,
                                   limit=2)
        assert srv.by_path["/v1/chat/completions"] == 2 * 20 + 2
    assert "ignores n" in run.config["plan_note"]
    assert run.judgments["status"].eq("ok").all()


def test_gptscore_without_echo_fails_clearly(summeval, tmp_path):
    store = Store(tmp_path / "echo.db")
    with serve(switches=Switches(no_echo=True)) as srv:
        with pytest.raises(UnsupportedByEndpoint):
            judge_calls.score_dataset(summeval, method="gptscore", criteria_by_dim=CRIT, endpoint=_ep(srv), store=store,
                                 limit=2)
    assert store.list_runs("summeval") == []  # nothing half-written


def test_generate_steps_saves_a_version(tmp_path):
    store = Store(tmp_path / "steps.db")
    base = CRIT["coherence"]
    with serve() as srv:
        out = runner.generate_steps(base.__class__(**{**base.__dict__, "steps": ""}), endpoint=_ep(srv), store=store,
                                    dataset_id="summeval")
    assert out.steps.splitlines()[0].startswith("1. ") and len(out.steps.splitlines()) == 3
    versions = store.list_criteria_versions("summeval", "coherence")
    assert versions[0]["hash"] == out.version_hash() and versions[0]["criteria"].steps == out.steps


def test_a_local_geval_run_keeps_its_weighted_scores_under_any_parse_mode(summeval, tmp_path):
    # The probability-weighted G-Eval score (000 Eq. 1) cannot be recovered from the reply text: asking for the
    # paper's parse rule must not silently replace it with the digit the judge happened to write.
    from evalcore.runs import load_run

    store = Store(tmp_path / "e2e.db")
    with serve() as srv:
        run = judge_calls.score_dataset(summeval, method="geval", criteria_by_dim=CRIT, endpoint=_ep(srv), store=store,
                                   limit=5)
    weighted = run.judgments.set_index("item_id")["value"].astype(float)
    assert (weighted != weighted.round()).any()  # real mixtures, not the written digits
    for mode in ("robust", "paper"):
        again = load_run(run.run_id, parse=mode, store=store)
        assert again.judgments.set_index("item_id")["value"].astype(float).equals(weighted)
    assert again.config["parse_mode"] == "robust"  # the mode it was scored under
