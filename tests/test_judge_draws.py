"""K draws per item through the engine, against the loopback judge: each draw its own cache key and seed (draw 0 the
one-draw run's key), every draw stored, the judgment their mean, the cost estimate and request count times K, a judge
that refuses seeds still drawn, a sampling method's samples each a draw, the resume command carrying --draws."""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import dataclass

import pytest

from evalcore.judge import runner
from evalcore.judge.contract import LEAVE_OUT, Contract, read_refusal
from evalcore.judge.draws import DRAW_SEED_STRIDE, draw_request
from evalcore.judge.spec import EngineOptions, ScoringSpec
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_profiles import Profile, _openai_error
from evalcore.testing.replies import Reply, plain_tokens
from evalcore.types import ChatRequest, Outcome
from tests.test_judge_runner import CRIT, SECRET, TinyMethod, ep, tiny_dataset


class Varying:
    """A judge whose every reply differs from the one before: scores 1, 2, ... 5, 1, ... in the order asked."""

    def __init__(self) -> None:
        self._next = itertools.count()
        self._lock = threading.Lock()

    def __call__(self, prompt: str, *, sample: int = 0, temperature: float = 0.0) -> Reply:
        with self._lock:
            k = next(self._next)
        return Reply(plain_tokens(f"Score: {k % 5 + 1}"))


@dataclass(frozen=True)
class NoSeed(Profile):
    """A contract that refuses ``seed`` as OpenAI words an unsupported parameter."""

    def refusal(self, req):
        if req.get("seed") is not None:
            return _openai_error("Unsupported parameter: 'seed' is not supported with this model.", "seed",
                                 "unsupported_parameter")
        return super().refusal(req)


class TinySampler(TinyMethod):
    """Three samples in one request at temperature 1, averaged: a method that already samples."""

    name = "tinysampler"

    def build_requests(self, task, criteria, config):
        return [ChatRequest(messages=(("user", f"Rate {task.output} from 1 to 5."),), temperature=1.0, n=3,
                            max_tokens=config.max_tokens)]

    def score(self, task, criteria, config, responses, *, parse_mode="robust"):
        texts = [c.text for r in responses for c in r.choices]
        values = [float(re.search(r"\d", t).group()) for t in texts]
        return Outcome(value=sum(values) / len(values), status="ok", raw=json.dumps(texts),
                       estimator=f"sample-mean(n={len(texts)})")


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "judge.db")


def spec(ds, method=None, draws=1, **kw):
    return ScoringSpec(ds, method or TinyMethod(), ["coherence"], {"coherence": CRIT["coherence"]}, draws=draws, **kw)


def score(srv, store, sp, **kw):
    return runner.score_dataset(sp, EngineOptions(ep(srv), api_key=SECRET, concurrency=4, **kw), store=store)


def test_draw_zero_is_the_request_itself_and_later_draws_have_their_own_key_and_seed():
    r = ChatRequest(messages=(("user", "x"),))
    assert draw_request(r, 0) is r and "draw" not in r.params()
    keys = {json.dumps(draw_request(r, d).params(), sort_keys=True) for d in range(4)}
    assert len(keys) == 4
    assert [draw_request(r, d).seed for d in range(3)] == [None, DRAW_SEED_STRIDE, 2 * DRAW_SEED_STRIDE]
    spread = ChatRequest(messages=(("user", "x"),), seed=2)  # a method's third sample request
    assert draw_request(spread, 1).seed == DRAW_SEED_STRIDE + 2


def test_three_draws_stored_judgment_is_their_mean_and_rerun_is_all_cache(store):
    ds = tiny_dataset(3, 2)  # 6 items
    with serve(scorer=Varying(), record_bodies=True) as srv:
        one = score(srv, store, spec(ds))
        sent_one = srv.requests_seen
        run = score(srv, store, spec(ds, draws=3))
        sent_three = srv.requests_seen - sent_one
        again = score(srv, store, spec(ds, draws=3))
        assert srv.requests_seen == sent_one + sent_three  # the rerun sent nothing
        bodies = [json.loads(b) for p, b in srv.bodies if p.endswith("/chat/completions")]
    assert one.draws.empty  # a one-draw run keeps no draws table, as before
    assert sent_three == 6 * 2  # draw 0 of every item was the one-draw run's request, answered from the cache
    seeds = sorted(b.get("seed") for b in bodies[-12:])
    assert seeds == [DRAW_SEED_STRIDE] * 6 + [2 * DRAW_SEED_STRIDE] * 6
    d = run.draws
    assert len(d) == 18 and d.groupby("item_id")["draw"].apply(sorted).tolist() == [[0, 1, 2]] * 6
    by_hand = d.groupby("item_id")["value"].mean()
    j = run.judgments.set_index("item_id")["value"]
    assert (j.loc[by_hand.index] == by_hand).all()
    assert d.groupby("item_id")["value"].nunique().max() > 1  # the draws differ: the judge varies per request
    zero = d[d["draw"] == 0].set_index("item_id")["value"]
    assert (zero == one.judgments.set_index("item_id")["value"].loc[zero.index]).all()
    assert again.config.stats.requests == 0 and again.config.stats.cached == 18
    assert again.judgments["value"].tolist() == run.judgments["value"].tolist()
    assert run.config.spec.get("draws") == 3


def test_count_and_estimate_count_every_draw(store):
    ds = tiny_dataset(3, 2)
    caps = runner.Capabilities(chat_logprobs=False, top_logprobs=0, honours_n=True)
    with serve() as srv:
        opts = EngineOptions(ep(srv), api_key=SECRET, capabilities=caps)
        e1 = runner.estimate(spec(ds), opts, store=store)
        e3 = runner.estimate(spec(ds, draws=3), opts, store=store)
    assert runner.count_requests(spec(ds)) == 6 and runner.count_requests(spec(ds, draws=3)) == 18
    assert (e1.calls, e3.calls) == (6, 18)
    assert e3.prompt_tokens == 3 * e1.prompt_tokens and e3.completion_tokens == 3 * e1.completion_tokens


def test_a_judge_that_refuses_seeds_is_drawn_without_them(store):
    ds = tiny_dataset(2, 2)
    profile = NoSeed(name="no-seed", doc="test")
    with serve(profile=profile, record_bodies=True) as srv:
        run = score(srv, store, spec(ds, draws=2))
        accepted = [json.loads(b) for p, b in srv.bodies if p.endswith("/chat/completions")]
    assert run.config.status == "done" and (run.judgments["status"] == "ok").all()
    assert len(run.draws) == 8
    assert run.config.contract["seed"]["action"] == LEAVE_OUT
    assert "seed left out" in run.config.variant
    assert sum(1 for b in accepted if "seed" in b) == 1  # the one refusal that taught the contract
    rule = read_refusal({"param": "seed", "code": "unsupported_parameter", "message": "no"})
    c = Contract()
    c.learn(rule)
    a, b = (c.adapt(draw_request(ChatRequest(messages=(("user", "x"),)), d)) for d in (1, 2))
    assert "seed" in a.omit and a.params() != b.params()  # left out of the body, not of the key


def test_a_sampling_method_keeps_each_sample_as_a_draw(store):
    ds = tiny_dataset(2, 2)
    with serve(scorer=Varying()) as srv:
        caps = runner.Capabilities(chat_logprobs=False, top_logprobs=0, honours_n=True)
        one = score(srv, store, spec(ds, TinySampler()), capabilities=caps)
        three = score(srv, store, spec(ds, TinySampler(), draws=2), capabilities=caps)
    assert len(one.draws) == 4 * 3  # three samples per item, one draw of the method
    per_item = one.draws.groupby("item_id")["value"].mean()
    assert (one.judgments.set_index("item_id")["value"].loc[per_item.index] == per_item).all()
    assert len(three.draws) == 4 * 6 and sorted(set(three.draws["draw"])) == list(range(6))


def test_pairwise_methods_refuse_draws(store):
    from tests.test_judge_runner import TinyPairwise

    ds = tiny_dataset(2, 2)
    with serve() as srv, pytest.raises(ValueError, match="draws per item"):
        score(srv, store, spec(ds, TinyPairwise(), draws=2))


def test_spec_records_draws_only_when_more_than_one():
    ds = tiny_dataset(1, 1)
    assert "draws" not in spec(ds).to_dict()
    back = ScoringSpec.from_dict(spec(ds, draws=4).to_dict(), ds)
    assert back.draws == 4
    with pytest.raises(ValueError, match="draws"):
        spec(ds, draws=0)


def test_the_resume_command_carries_the_draws_and_the_cli_reads_them():
    from evalcore import cli
    from tests.test_views_score import ENDPOINT, _run

    run = _run({"endpoint": ENDPOINT, "spec": {"method": "rts", "draws": 3}, "status": "interrupted",
                "criteria": {"coherence": {}}})
    command = cli.resume_command(run)  # parsed back by the command line's own parser, draws compared
    assert command.endswith("--draws 3 --run summeval/rts-m-1")
    assert cli.parse_checked(cli.resume_args(run)).draws == 3
    one = _run({"endpoint": ENDPOINT, "spec": {"method": "rts"}, "status": "interrupted"})
    assert "--draws" not in cli.resume_command(one)
    with pytest.raises(ValueError, match="draws"):
        cli.parse_checked(["score", "--dataset", "x", "--method", "rts", "--model", "m", "--draws", "0"])


def test_the_batch_api_refuses_draws_before_anything_is_written(store):
    from evalcore.judge import batch

    ds = tiny_dataset(1, 2)
    with serve() as srv, pytest.raises(ValueError, match="one draw per item"):
        batch.submit(spec(ds, draws=2), EngineOptions(ep(srv), api_key=SECRET), store=store)
    assert store.list_runs() == []


def test_the_score_pages_job_scores_the_draws_and_resumes_them(tmp_path):
    """G-Eval through the Score page's job, 2 draws of 4 items: each stored, and a cancelled job resumed keeps K."""
    import dataclasses

    from evalcore.datasets import load_dataset
    from evalcore.judge.client import Endpoint
    from evalcore.judge.job import ScoringJob
    from evalcore.judge.spec import default_spec

    store = Store(tmp_path / "s.db")
    sp = dataclasses.replace(default_spec(load_dataset("summeval"), "geval", ["coherence"], limit=4), draws=2)
    with serve() as srv:
        engine = EngineOptions(Endpoint(srv.base_url, "loop-model", provider="local"), concurrency=2, max_retries=0,
                               timeout_s=10)
        job = ScoringJob(run_id="summeval/drawn", spec=sp, engine=engine, store=store, poll_s=0.02)
        job.start()
        job.cancel.set()
        assert job.wait(60)
        job.resume(None)
        assert job.wait(60)
    assert job.error is None
    run = store.load_run("summeval/drawn")
    assert run.config.status == "done" and len(run.judgments) == 4
    assert len(run.draws) == 8 and run.n_draws == 2
    assert run.config.spec["draws"] == 2


def test_geval_without_log_probs_keeps_its_20_samples_as_draws(store):
    """G-Eval's fallback (Liu et al. 2023, section 3.1: 20 samples at temperature 1) on a judge without log-probs: a
    one-draw run stores each sample as a draw, and its judgment (the method's sample mean) is their mean."""
    from evalcore.datasets import load_dataset
    from evalcore.judge.spec import default_spec
    from evalcore.testing.loopback import Switches

    sp = default_spec(load_dataset("summeval"), "geval", ["coherence"], limit=3)
    with serve(switches=Switches(no_logprobs=True)) as srv:
        run = score(srv, store, sp)
    assert run.judgments["estimator"].str.startswith("sample-mean").all()
    d = run.draws
    assert d.groupby("item_id").size().tolist() == [20, 20, 20]
    assert d["value"].notna().all() and d["value"].between(1, 5).all()
    by_hand = d.groupby("item_id")["value"].mean()
    j = run.judgments.set_index("item_id")["value"]
    assert j.loc[by_hand.index].tolist() == pytest.approx(by_hand.tolist(), abs=1e-12)


def test_a_draw_whose_request_failed_fails_the_item_and_a_resume_asks_only_that_request(store):
    from evalcore.testing.loopback import Fault

    ds = tiny_dataset(2, 2)  # 4 items x 3 draws = 12 requests after the probe
    with serve(scorer=Varying(), faults=[Fault("500", on_requests=(6,))]) as srv:
        first = score(srv, store, spec(ds, draws=3), max_retries=0)
        failed = first.judgments[first.judgments["status"] == "failed"]
        assert len(failed) == 1 and re.match(r"draw [0-2] of 3: ", failed["reason"].iloc[0])
        before = srv.requests_seen
        again = score(srv, store, spec(ds, draws=3, run_id=first.run_id), max_retries=0)
        assert srv.requests_seen - before == 1  # the one request that failed; the others from the cache
    assert (again.judgments["status"] == "ok").all()
    assert again.draws.groupby("item_id").size().tolist() == [3] * 4
    by_hand = again.draws.groupby("item_id")["value"].mean()
    assert (again.judgments.set_index("item_id")["value"].loc[by_hand.index] == by_hand).all()


def test_the_score_pages_run_details_say_the_draws(store):
    from evalcore.views import score as score_views
    from evalcore.views.blocks import Metrics

    ds = tiny_dataset(1, 2)
    with serve(scorer=Varying()) as srv:
        one, three = score(srv, store, spec(ds)), score(srv, store, spec(ds, draws=3))

    def labels(run):
        return [m.label for b in score_views.run_details(run) if isinstance(b, Metrics) for m in b.items]

    assert "Draws per item" not in labels(one)
    shown = {m.label: m.value for b in score_views.run_details(three) if isinstance(b, Metrics) for m in b.items}
    assert shown["Draws per item"] == "3"


def test_score_draws_on_the_command_line(tmp_path):
    """``python -m evalcore score --draws 2``: the estimate counts both draws, the run stores them, and
    ``--batch`` refuses them."""
    import contextlib
    import io

    from evalcore import cli

    db = tmp_path / "cli.db"
    Store(db).save_dataset(tiny_dataset(2, 2))

    def run(*argv):
        args = cli.parse_checked(list(argv))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert args.func(args) == 0
        return json.loads(buf.getvalue())

    with serve() as srv:
        base = ["score", "--dataset", "tiny", "--dimension", "coherence", "--method", "geval", "--model", "loop",
                "--base-url", srv.base_url, "--provider", "vllm", "--db", str(db), "--json", "--quiet"]
        one, two = run(*base, "--estimate-only"), run(*base, "--estimate-only", "--draws", "2")
        assert (one["calls"], two["calls"]) == (4, 8)
        summary = run(*base, "--draws", "2")
        batch = cli.parse_checked([*base, "--draws", "2", "--batch"])
        with pytest.raises(ValueError, match="one draw per item"):
            batch.func(batch)
    drawn = Store(db).load_run(summary["run_id"])
    assert len(drawn.draws) == 8 and drawn.config.spec["draws"] == 2
