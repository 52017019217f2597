"""A shared lab server, round 4, the judge engine's side: a replica never answers for the operator's endpoint (cache,
learned contract, remembered probe refusals), the spending cap counts what replies cost, "Check this judge" is no
way to read an internal service, and hostile numbers in a reply are counted failures. Two users (alice, bob), the
operator's judge and bob's own server on the loopback."""

from __future__ import annotations


import pytest

from evalcore.judge.client import endpoint_from_preset
from evalcore.judge.spec import ScoringSpec
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_profiles import Profile
from evalcore.testing.replies import Reply
from evalcore.views import score as score_views

from _judging import CRITERIA, dataset

MODEL = "loopback-judge"
OPERATOR_KEY = "sk-operator-round4"


@pytest.fixture
def operator(monkeypatch):
    """The operator's judge: $OPENAI_BASE_URL points at it and $OPENAI_API_KEY is the server's key."""
    with serve() as srv:
        monkeypatch.setenv("OPENAI_API_KEY", OPERATOR_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield srv


def _always_one(prompt, *, sample=0, temperature=0.0, **_):
    """Bob's server: every rating is 1 (and certain of it), whatever the text."""
    return Reply([("1", [("1", -0.001), ("2", -7.0)])])


def bobs_liar():
    """Bob's own server, answering as a judge does but rating everything 1."""
    return serve(scorer=_always_one)


def bobs_refuser():
    """Bob's own server, refusing log-probs (400, as a reasoning model does) and serving no completions route."""
    return serve(profile=Profile("bobs-server", doc="", refuse_logprobs=True))


def page_endpoint(srv):
    """The Score page's endpoint with preset openai and the base URL left empty: $OPENAI_BASE_URL."""
    return endpoint_from_preset("openai", model=MODEL, base_url=srv.base_url)


def geval_spec(n: int = 16) -> ScoringSpec:
    return ScoringSpec(dataset(n), "geval", ["coherence"], CRITERIA, None)


def score_as(owner, endpoint, store, *, replicas: str = "", api_key=None, spec=None):
    """A run as the Score page starts one ("Start scoring": evalcore.views.score.new_job, then the job's thread)."""
    job = score_views.new_job(spec or geval_spec(), endpoint, replica_text=replicas, use_batch=False, api_key=api_key,
                              concurrency=4, reprobe=False, store=store, owner=owner)
    job.start()
    assert job.wait(120)
    assert job.error is None, job.error
    return job.run


# ------------------------------------------------------------------------------------------------ finding 1
def _values(run):
    return run.judgments.set_index("item_id")["value"].sort_index().tolist()


def test_finding1_replies_of_bobs_replica_are_never_read_by_alices_run(tmp_path, operator):
    store = Store(tmp_path / "judge.db")
    clean = score_as("alice", page_endpoint(operator), Store(tmp_path / "clean.db"))  # nobody else wrote there
    with bobs_liar() as bob_srv:
        bob = score_as("bob", page_endpoint(operator), store, replicas=bob_srv.base_url, api_key="sk-bob-own")
        answered = store.answers(bob.run_id)["answered_by"].value_counts()
        assert answered.get(bob_srv.base_url, 0) > 0, "bob's server answered none of his run: nothing tested"
        seen_by_bob, before = bob_srv.requests_seen, operator.requests_seen
        alice = score_as("alice", page_endpoint(operator), store)
        assert bob_srv.requests_seen == seen_by_bob  # alice's run never reached bob's server
    assert _values(alice) == pytest.approx(_values(clean))  # none of bob's 1s
    assert alice.config["capabilities"] == clean.config["capabilities"]
    # what the operator's judge answered bob, alice may read; what bob's server answered, she asks again
    operator_answers = int(answered.get(operator.base_url, 0))
    assert alice.config["stats"]["tasks_from_cache"] <= operator_answers
    assert operator.requests_seen - before >= 16 - operator_answers


def test_finding1_a_refusal_of_bobs_replica_teaches_the_operators_endpoint_nothing(tmp_path, operator):
    store = Store(tmp_path / "judge.db")
    clean = score_as("alice", page_endpoint(operator), Store(tmp_path / "clean.db"))
    with bobs_refuser() as bob_srv:
        bob = score_as("bob", page_endpoint(operator), store, replicas=bob_srv.base_url, api_key="sk-bob-own")
        assert bob_srv.requests_seen > 0
        assert "logprobs" in bob.config["contract"]  # his set learned it (his server refused)
        seen_by_bob = bob_srv.requests_seen
        alice = score_as("alice", page_endpoint(operator), store)
        assert bob_srv.requests_seen == seen_by_bob
    # the operator's endpoint learned nothing from bob's server: the log-prob estimator, not the sampling fallback
    assert alice.config["contract"] == {} and alice.config["plan_note"] == clean.config["plan_note"] == ""
    assert alice.config["estimator"] == clean.config["estimator"]
    assert alice.config["capabilities"] == clean.config["capabilities"]
    assert _values(alice) == pytest.approx(_values(clean))
    # and bob's repeat keeps what his set learned: his set's own contract and remembered probe refusals
    again = score_as("bob", page_endpoint(operator), store, replicas=bob_srv.base_url, api_key="sk-bob-own")
    assert again.config["contract"] == bob.config["contract"] and "sample fallback" in again.config["plan_note"]


def test_finding1_a_replica_set_is_served_from_its_members_replies_and_the_estimate_never_undercounts(
        tmp_path, operator):
    """A repeat of bob's run is served from the cache (every member's replies are his set's); the estimate the page
    shows for the operator's endpoint never counts his server's replies as cached."""
    from evalcore.judge import runner
    from evalcore.judge.spec import EngineOptions

    store = Store(tmp_path / "judge.db")
    with bobs_liar() as bob_srv:
        first = score_as("bob", page_endpoint(operator), store, replicas=bob_srv.base_url, api_key="sk-bob-own")
        sent = operator.requests_seen + bob_srv.requests_seen
        again = score_as("bob", page_endpoint(operator), store, replicas=bob_srv.base_url, api_key="sk-bob-own")
        assert operator.requests_seen + bob_srv.requests_seen == sent
        assert again.config["stats"]["requests"] == 0 and _values(again) == pytest.approx(_values(first))
        answered = store.answers(first.run_id)["answered_by"].value_counts()
        est = runner.estimate(geval_spec(), EngineOptions(page_endpoint(operator)), store=store)
        assert est.cache_hits == int(answered.get(operator.base_url, 0)) and est.calls == 16 - est.cache_hits
