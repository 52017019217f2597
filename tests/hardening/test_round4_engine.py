"""A shared lab server, round 4, the judge engine's side: a replica never answers for the operator's endpoint (cache,
learned contract, remembered probe refusals), the spending cap counts what replies cost, "Check this judge" is no
way to read an internal service, and hostile numbers in a reply are counted failures. Two users (alice, bob), the
operator's judge and bob's own server on the loopback."""

from __future__ import annotations


import dataclasses

import pytest

from evalcore.judge.client import endpoint_from_preset
from evalcore.judge.spec import ScoringSpec
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_profiles import PROFILES, Profile
from evalcore.testing.replies import Reply
from evalcore.views import score as score_views

from _judging import CRITERIA, ROOT, dataset

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


def start_as(owner, endpoint, store, *, replicas: str = "", api_key=None, spec=None, concurrency=4,
             charged_usd=None):
    """A job as the Score page starts one ("Start scoring": evalcore.views.score.new_job, then the job's thread),
    waited for."""
    job = score_views.new_job(spec or geval_spec(), endpoint, replica_text=replicas, use_batch=False, api_key=api_key,
                              concurrency=concurrency, reprobe=False, store=store, owner=owner,
                              charged_usd=charged_usd)
    job.start()
    assert job.wait(120)
    return job


def score_as(owner, endpoint, store, **kw):
    job = start_as(owner, endpoint, store, **kw)
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


# ------------------------------------------------------------------------------------------------ finding 5
PRICE_PER_TOKEN = 1e-5  # the test's own price: 10 USD per million tokens, prompt and completion alike


@pytest.fixture
def reasoning_operator(monkeypatch, tmp_path):
    """The operator's judge is a reasoning model (hidden reasoning tokens, billed as completion tokens), priced by
    an override price table."""
    import json

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"loop-reasoner": {"input": 10.0, "output": 10.0}}))
    monkeypatch.setenv("EVALCORE_PRICES", str(prices))
    with serve(profile=PROFILES["openai-reasoning"]) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", OPERATOR_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        yield endpoint_from_preset("openai", model="loop-reasoner", base_url=srv.base_url)


def click_start(owner, endpoint, store, spec):
    """The page's estimate and "Start scoring": the estimate charged to ``owner`` (evalcore.judge.spending.charge)."""
    from evalcore.judge import runner, spending
    from evalcore.judge.spec import EngineOptions

    est = runner.estimate(spec, EngineOptions(endpoint), store=store)
    d = spending.charge(est.cost_usd, est.calls, local=False, spender=owner, store=store, what="score")
    assert d.allowed, d.reason
    return est


def replies_cost(stats) -> float:
    return (stats["prompt_tokens"] + stats["completion_tokens"]) * PRICE_PER_TOKEN


def test_finding5_a_run_is_charged_what_its_replies_cost_not_its_estimate(tmp_path, reasoning_operator,
                                                                           monkeypatch):
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    store, spec = Store(tmp_path / "judge.db"), geval_spec(8)
    est = click_start("alice", reasoning_operator, store, spec)
    assert "not probed" in est.note  # the estimate knows nothing of the reasoning yet
    run = score_as("alice", reasoning_operator, store, spec=spec, charged_usd=est.cost_usd)
    cost = replies_cost(run.config["stats"])
    assert run.config["stats"]["reasoning_tokens"] > 0 and cost > 3 * est.cost_usd
    assert store.spent_usd("alice") == pytest.approx(cost)  # the record is the replies' usage, not the estimate
    assert store.spent_usd(None) == 0.0  # and it is alice's, not the server's


def test_finding5_the_cap_stops_the_run_when_reached(tmp_path, reasoning_operator, monkeypatch):
    store, spec = Store(tmp_path / "judge.db"), geval_spec(8)
    cap = 0.03
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", str(cap))
    est = click_start("alice", reasoning_operator, store, spec)
    assert est.cost_usd < cap  # the estimate passed the cap's check at the click
    job = start_as("alice", reasoning_operator, store, spec=spec, concurrency=1, charged_usd=est.cost_usd)
    assert job.error is not None and "spending cap of $0.0300 per user was reached" in job.error
    row, stats = store.run_row(job.run_id), store.run_stats(job.run_id)
    assert row["status"] == "stopped" and 0 < stats["judged_this_session"] < 8
    spent = store.spent_usd("alice")
    assert spent == pytest.approx(replies_cost(stats))
    per_task = replies_cost(stats) / stats["judged_this_session"]
    assert cap <= spent <= cap + 2 * per_task  # stopped at the cap (one request in flight at a time)
    # a resume does not start past the cap
    job.resume(None)
    assert job.wait(60) and "spending cap" in (job.error or "")
    assert store.spent_usd("alice") == pytest.approx(spent)


@pytest.mark.parametrize("spelling", ["{url}#again", "{url}/", "{url}/#again", "HTTP://{hostport}/v1"])
def test_finding5_another_spelling_of_the_url_is_the_same_endpoint(tmp_path, spelling):
    """A fragment, a trailing slash or the scheme's case make no new endpoint: not "not probed" again, and its
    cached replies are its own."""
    from evalcore.judge import runner
    from evalcore.judge.client import Endpoint
    from evalcore.judge.spec import EngineOptions

    store = Store(tmp_path / "judge.db")
    with serve() as srv:
        ep = Endpoint(srv.base_url, MODEL, provider="vllm", api_key_env="VLLM_API_KEY")
        score_as(None, ep, store, spec=geval_spec(4))
    other = dataclasses.replace(ep, base_url=spelling.format(url=srv.base_url, hostport=f"127.0.0.1:{srv.port}"))
    assert other.identity() == ep.identity()
    est = runner.estimate(geval_spec(4), EngineOptions(other), store=store)
    assert "not probed" not in est.note and est.calls == 0 and est.cache_hits == 4


@pytest.mark.parametrize("a,b", [
    ("https://API.OpenAI.com/v1", "https://api.openai.com/v1"),  # the host's case
    ("https://api.openai.com:443/v1", "https://api.openai.com/v1"),  # the default port
    ("http://localhost:80/v1/", "http://localhost/v1"),
    ("https://x.example/v1?api-version=1#frag", "https://x.example/v1?api-version=1"),  # the query is sent: kept
])
def test_finding5_identity_is_one_spelling_per_address(a, b):
    from evalcore.judge.client import Endpoint

    assert Endpoint(a, MODEL).identity() == Endpoint(b, MODEL).identity()
    assert Endpoint(b, MODEL).identity()["base_url"] == b


def test_finding5_a_path_or_another_port_is_another_endpoint():
    from evalcore.judge.client import Endpoint

    ids = {Endpoint(u, MODEL).identity()["base_url"] for u in ("http://h/v1", "http://h/V1", "http://h:8000/v1",
                                                                "https://h/v1")}
    assert len(ids) == 4


# ------------------------------------------------------------------------------------------------ finding 6
INTERNAL_SECRET = "admin token tok-INTERNAL-4711"


class InternalService:
    """A service of the lab's network that is no judge: every POST is answered 403 with a secret in its error body.
    Counts the connections it gets."""

    def __init__(self) -> None:
        import http.server
        import json
        import threading

        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                owner.posts += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.dumps({"error": {"message": INTERNAL_SECRET, "type": "forbidden"}}).encode()
                self.send_response(403)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.posts = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def local_endpoint(url):
    return endpoint_from_preset("vllm", model=MODEL, base_url=url)


def test_finding6_check_this_judge_shows_a_status_line_not_the_endpoints_error_body(tmp_path):
    with InternalService() as internal:
        text, failed = score_views.judge_check(local_endpoint(internal.base_url), store=Store(tmp_path / "j.db"),
                                               api_key=None, reprobe=False, effort=None, budget=None)
        assert internal.posts > 0  # on a laptop (no sign-in, no listed endpoints) a local preset goes anywhere
    shown = failed.text.replace("\\", "")  # as drawn: Markdown escapes taken out
    assert text is None and "HTTP 403" in shown and "tok-INTERNAL" not in shown and "admin" not in shown


def test_finding6_on_a_lab_server_a_local_preset_goes_only_to_configured_hosts(tmp_path, monkeypatch):
    from evalcore.judge import trust

    store = Store(tmp_path / "j.db")
    with InternalService() as internal:
        ep = local_endpoint(internal.base_url)
        assert trust.shared_server(False, {"EVALCORE_ALLOWED_ENDPOINTS": "http://gpu1:8000/v1"})
        assert not trust.shared_server(False, {})
        text, failed = score_views.judge_check(ep, store=store, api_key=None, reprobe=False, effort=None,
                                               budget=None, shared=True)
        assert internal.posts == 0 and text is None
        assert "is not an endpoint this server's operator configured" in failed.text.replace("\\", "")
        # its own default address, and what the operator lists, stay usable
        assert trust.local_refusal(local_endpoint("http://localhost:8000/v1"), shared=True) is None
        monkeypatch.setenv("EVALCORE_ALLOWED_ENDPOINTS", internal.base_url)
        text, failed = score_views.judge_check(ep, store=store, api_key=None, reprobe=False, effort=None,
                                               budget=None, shared=True)
        assert internal.posts > 0 and "HTTP 403" in failed.text and "INTERNAL" not in failed.text


def test_finding6_the_score_page_of_a_lab_server_refuses_a_local_preset_to_another_host(first_start, monkeypatch):
    """Through the page, signed in by the proxy header: "Check this judge" and "Start scoring" stay off, nothing
    is posted."""
    from streamlit.testing.v1 import AppTest

    from pages import _identity

    monkeypatch.setenv("EVALCORE_USER_HEADER", "X-Forwarded-User")
    monkeypatch.setattr(_identity, "_request_headers", lambda: {"X-Forwarded-User": "bob"})
    with InternalService() as internal:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
        at.query_params.update({"method": "geval", "limit": "4"})
        at.switch_page("pages/score.py").run()
        at.selectbox(key="endpoint").set_value("vllm").run()
        at.text_input(key="base_url").input(internal.base_url).run()
        at.text_input(key="model").input(MODEL).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.button(key="check_judge").disabled and at.button(key="start_scoring").disabled
        shown = " ".join(str(e.value) for e in list(at.error) + list(at.warning) + list(at.info)).replace("\\", "")
        assert "not an endpoint this server's operator configured" in shown
        assert internal.posts == 0


# ------------------------------------------------------------------------------------------------ finding 8
HOSTILE = ("summary d0 of", "summary d1 of")  # the items whose replies carry a hostile number; d2, d3 are fine


def _nan_on_the_chosen_token(prompt, *, sample=0, temperature=0.0, **_):
    """For d0 and d1 the judge chooses 4 and reports its log-prob as NaN (the alternatives are numbers)."""
    from evalcore.testing.replies import default_reply

    if any(h in prompt for h in HOSTILE):
        return Reply([("4", [("4", float("nan")), ("3", -1.2), ("5", -2.3)])])
    return default_reply(prompt, sample=sample, temperature=temperature)


def _local(srv):
    from evalcore.judge.client import Endpoint

    return Endpoint(srv.base_url, MODEL, provider="vllm", api_key_env="VLLM_API_KEY")


def test_finding8_a_nan_log_prob_on_the_chosen_token_is_a_counted_failure(tmp_path):
    store = Store(tmp_path / "judge.db")
    with serve(scorer=_nan_on_the_chosen_token) as srv:
        run = score_as(None, _local(srv), store, spec=geval_spec(4))
    j = run.judgments.set_index("item_id")
    assert (j.loc[["d0", "d1"], "status"] == "failed").all() and j.loc[["d0", "d1"], "value"].isna().all()
    assert j.loc[["d0", "d1"], "reason"].str.contains("impossible log-prob (nan) for the token '4'", regex=False).all()
    assert (j.loc[["d2", "d3"], "status"] == "ok").all()
    stats = run.config["stats"]
    assert stats["failed"] == 2 and stats["ok"] == 2 and stats["failures"] >= 2
    # the NaN replies were not cached: only the probe's and d2, d3's replies were
    assert store.cache_count() == len(store.answers(run.run_id)) + stats["probe_requests"]


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": 10**15, "completion_tokens": 1, "total_tokens": 10**15 + 1},
    {"prompt_tokens": 12, "completion_tokens": -10**15, "total_tokens": 12},
    {"prompt_tokens": 12.5, "completion_tokens": 1, "total_tokens": 13},
])
def test_finding8_an_implausible_usage_is_refused_not_stored(tmp_path, usage):
    store = Store(tmp_path / "judge.db")
    with serve() as srv:
        real = srv._usage
        srv._usage = lambda prompt, replies, **kw: (usage if any(h in prompt for h in HOSTILE)
                                                    else real(prompt, replies, **kw))
        run = score_as(None, _local(srv), store, spec=geval_spec(4))
    j = run.judgments.set_index("item_id")
    assert (j.loc[["d0", "d1"], "status"] == "failed").all()
    assert j.loc[["d0", "d1"], "reason"].str.contains("implausible usage").all()
    assert (j.loc[["d2", "d3"], "status"] == "ok").all()
    stats = run.config["stats"]
    assert 0 <= stats["prompt_tokens"] < 10**7 and 0 <= stats["completion_tokens"] < 10**7  # not counted
    assert stats["failed"] == 2 and stats["failures"] >= 2


def test_finding8_a_cached_reply_with_a_nan_log_prob_is_not_scored_either():
    """Replies read back from the cache or a batch's results are checked as they are scored."""
    from evalcore.judge.runner import score_replies
    from evalcore.methods import METHODS
    from evalcore.types import Choice, ItemTask, Response, TokenLogprob

    m = METHODS["geval"]
    task = ItemTask("i", "d", "s", "coherence", "source", "output")
    resp = Response(choices=[Choice(text="4", tokens=(TokenLogprob("4", float("nan"), (("4", float("nan")),
                                                                                      ("3", -1.0))),))],
                    usage={"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}, cached=True)
    out = score_replies(m, task, CRITERIA["coherence"], m.default_config(), [resp])
    assert out.status == "failed" and out.value is None and "impossible log-prob" in out.reason


# ----------------------------------------------------------------------- finding 5: every path that spends
def improve_workspace(endpoint, store, *, owner="alice", concurrency=4, n_items=12):
    """The Improve page's workspace (evalcore.views.improve.Workspace) over a split of the tiny dataset, with the
    baseline and one edit as its candidates."""
    from evalcore.align import loop, make_split, save_split
    from evalcore.align.candidates import baseline_candidate, edit_candidate
    from evalcore.judge.spec import EngineOptions
    from evalcore.views import improve as improve_views

    ds = dataset(n_items)
    split = make_split(ds, "coherence", test_share=0.3, seed=0)
    save_split(store, split)
    base = CRITERIA["coherence"]
    cands = [baseline_candidate(base), edit_candidate(base, definition=base.definition + " Mind the order.")]
    ws = improve_views.Workspace(ds, "coherence", split, "geval", endpoint,
                                 EngineOptions(endpoint, concurrency=concurrency), store,
                                 loop.Settings(n_resamples=20), owner=owner)
    return ws, cands


def click_queue(ws, cands, owner="alice"):
    """The Improve page's "Score on development": its estimate charged at the click, then the queue run to its end
    (advanced as the page's reruns do)."""
    import time

    from evalcore.judge import spending

    est = ws.estimate("dev", cands)
    d = spending.charge(est.cost_usd, est.calls, local=False, spender=owner, store=ws.store, what="improve")
    assert d.allowed, d.reason
    q = ws.queue("dev", "dev", cands, charged_usd=est.cost_usd if est.calls else 0.0)
    q.advance()
    while q.busy():
        if q.job is not None:
            q.job.wait(60)
        time.sleep(0.01)
    return est, q


def test_finding5_improve_runs_are_charged_what_their_replies_cost(tmp_path, reasoning_operator, monkeypatch):
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    store = Store(tmp_path / "judge.db")
    ws, cands = improve_workspace(reasoning_operator, store)
    est, q = click_queue(ws, cands)
    assert q.ended_by is None and len(q.finished()) == 2
    cost = sum(replies_cost(store.run_stats(it.run_id)) for it in q.items)
    assert cost > 3 * est.cost_usd  # the estimate knew nothing of the reasoning
    assert store.spent_usd("alice") == pytest.approx(cost)  # charged the replies' usage, both runs
    assert store.spent_usd(None) == 0.0


def test_finding5_the_cap_stops_an_improve_queue(tmp_path, reasoning_operator, monkeypatch):
    cap = 0.03
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", str(cap))
    store = Store(tmp_path / "judge.db")
    ws, cands = improve_workspace(reasoning_operator, store, concurrency=1)
    est, q = click_queue(ws, cands)
    assert est.cost_usd < cap  # the estimate passed the cap's check at the click
    assert q.ended_by == "error" and "spending cap of $0.0300 per user was reached" in q.outcome()[1]
    runs = [store.run_stats(it.run_id) for it in q.items[:q.started]]
    cost = sum(replies_cost(s) for s in runs)
    spent = store.spent_usd("alice")
    assert spent == pytest.approx(cost)
    per_task = cost / sum(s["judged_this_session"] for s in runs)
    assert cap <= spent <= cap + 2 * per_task  # stopped at the cap, not after every candidate's run
    assert store.run_row(q.items[q.started - 1].run_id)["status"] == "stopped"


def _cached_reply_cost(store, endpoint, request) -> float:
    from evalcore.judge.runner import CachedSender

    usage = CachedSender(None, store, endpoint).lookup(request).usage
    return (usage["prompt_tokens"] + usage["completion_tokens"]) * PRICE_PER_TOKEN


def test_finding5_criteria_steps_are_charged_what_the_reply_costs(tmp_path, reasoning_operator, monkeypatch):
    from evalcore.judge import spending
    from evalcore.views import criteria as criteria_views

    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    store, ep = Store(tmp_path / "judge.db"), reasoning_operator
    plan = criteria_views.steps_plan("tiny", CRITERIA["coherence"], ep, store)
    assert spending.charge(plan.cost_usd, plan.calls, local=False, spender="alice", store=store,
                           what="criteria steps").allowed
    assert store.spent_usd("alice") == pytest.approx(plan.cost_usd)
    criteria_views.generate_steps(plan, ep, None, store, spender="alice")
    cost = _cached_reply_cost(store, ep, plan.request)
    assert cost > 0 and abs(cost - plan.cost_usd) > 1e-6
    assert store.spent_usd("alice") == pytest.approx(cost)  # settled to the reply's usage
    # asked again, the cache answers: nothing is charged
    plan2 = criteria_views.steps_plan("tiny", CRITERIA["coherence"], ep, store)
    assert plan2.calls == 0
    criteria_views.generate_steps(plan2, ep, None, store, spender="alice")
    assert store.spent_usd("alice") == pytest.approx(cost)


def test_finding5_an_improve_proposal_is_charged_what_the_reply_costs(tmp_path, reasoning_operator, monkeypatch):
    from evalcore.align.candidates import proposal_request
    from evalcore.judge import spending

    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    store = Store(tmp_path / "judge.db")
    ws, _ = improve_workspace(reasoning_operator, store)
    prompt = "Revise the criteria. Reply with <criteria><definition>...</definition></criteria>."
    calls, cost_est = ws.proposal_cost(prompt)
    assert spending.charge(cost_est, calls, local=False, spender="alice", store=store, what="proposal").allowed
    try:
        ws.propose(CRITERIA["coherence"], prompt, (), charged_usd=cost_est)
    except Exception:  # noqa: BLE001 - the loopback's reply holds no revision: what it cost is charged all the same
        pass
    cost = _cached_reply_cost(store, reasoning_operator, proposal_request(prompt))
    assert cost > 0 and store.spent_usd("alice") == pytest.approx(cost)


# ------------------------------------------------------------------- finding 6: the Score page's failures table
def test_finding6_on_a_lab_server_the_failures_table_shows_a_status_line_only(tmp_path, monkeypatch):
    from evalcore.testing.loopback import Fault

    store = Store(tmp_path / "judge.db")
    with serve(faults=[Fault("500", match="summary d1 ")]) as srv:  # the operator's judge, failing one item
        monkeypatch.setenv("OPENAI_API_KEY", OPERATOR_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        job = score_views.new_job(geval_spec(4), page_endpoint(srv), use_batch=False, api_key=None, concurrency=1,
                                  reprobe=False, store=store, owner="alice")
        job.engine = dataclasses.replace(job.engine, max_retries=0)
        job.start()
        assert job.wait(60) and job.error is None, job.error
    run = store.load_run(job.run_id)
    laptop = score_views.failures_table(run)
    assert list(laptop["item_id"]) == ["d1"] and "Internal error (loopback)" in laptop.loc[0, "reason"]
    shared = score_views.failures_table(run, shared=True)
    assert list(shared["item_id"]) == ["d1"] and shared.loc[0, "reason"].startswith("HTTP 500")
    assert "Internal error" not in shared.loc[0, "reason"] and shared.loc[0, "raw"] == ""
    from evalcore.views.blocks import Table

    drawn = [b.frame.to_csv() for b in score_views.run_details(run, shared=True) if isinstance(b, Table)]
    assert any("HTTP 500" in t for t in drawn) and not any("Internal error" in t for t in drawn)


def test_finding5_a_batch_run_is_charged_what_its_replies_cost_at_collection(tmp_path, monkeypatch):
    """The Score page's Batch API run: the estimate charged at the click (at batch prices) is settled, when the job
    collects the batch, to what the replies' reported usage costs at the Batch API's half price."""
    import json

    from evalcore.judge import runner, spending
    from evalcore.judge.spec import EngineOptions

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({MODEL: {"input": 10.0, "output": 10.0}}))
    monkeypatch.setenv("EVALCORE_PRICES", str(prices))
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    store, spec = Store(tmp_path / "judge.db"), geval_spec(8)
    with serve() as srv:
        monkeypatch.setenv("OPENAI_API_KEY", OPERATOR_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        ep = page_endpoint(srv)
        est = runner.estimate(spec, EngineOptions(ep), store=store)
        reserved = score_views.estimate_cost(est, use_batch=True)
        assert spending.charge(reserved, est.calls, local=False, spender="alice", store=store, what="score").allowed
        job = score_views.new_job(spec, ep, use_batch=True, api_key=None, concurrency=4, reprobe=False,
                                  store=store, owner="alice", charged_usd=reserved)
        job.poll_s = 0.05
        job.start()
        assert job.wait(60) and job.error is None, job.error
    b = job.run.config.batch
    cost = (b["prompt_tokens"] + b["completion_tokens"]) * PRICE_PER_TOKEN / 2  # the Batch API's half price
    assert cost > 0 and abs(cost - reserved) > 1e-9
    assert store.spent_usd("alice") == pytest.approx(cost)
