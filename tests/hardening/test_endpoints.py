"""Hostile and broken endpoints through the loopback server: every item ends scored, or failed with an honest
reason; an endpoint that cannot be used at all stops the run with one line (CLI exit 2), no traceback."""

from __future__ import annotations

import socket

import pytest

from evalcore.judge import runner
from evalcore.judge.client import Endpoint, EndpointUnusable, _expect_json, RequestFailed
from evalcore.store import Store
from evalcore.testing.loopback import Fault, serve

from _judging import CAPS, CRITERIA, KEY_ENV, SECRET, OneShot, dataset, endpoint, files_bytes, integrity_ok
from tests import judge_calls

D0 = "summary d0 of"  # the fault hits item d0 only; d1..d3 must be scored


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return tmp_path


def _run(srv, store, *, n=4, concurrency=4, **kw):
    return judge_calls.score_dataset(dataset(n), method=OneShot(), criteria_by_dim=CRITERIA, endpoint=endpoint(srv),
                                store=store, capabilities=CAPS, concurrency=concurrency, **kw)


# (fault, runner options, expected status of d0, what its reason must say, what it must not say)
CASES = {
    "429-retry-after-honoured": (Fault("429", on_requests=(1,), retry_after=0.05), dict(concurrency=1), "ok", "", ""),
    "429-retry-after-3600-over-limit": (Fault("429", match=D0, retry_after=3600), dict(max_retries=3), "failed",
                                        "asked to wait 3600 s before retrying (Retry-After), over the 120 s",
                                        "after retries"),
    "429-persistent-after-retries": (Fault("429", match=D0, retry_after=0.05), dict(max_retries=2), "failed",
                                     "HTTP 429 after retries: Rate limit reached", ""),
    "500-transient-retried": (Fault("500", on_requests=(1,)), dict(concurrency=1), "ok", "", ""),
    "500-after-retries": (Fault("500", match=D0), dict(max_retries=1), "failed", "HTTP 500 after retries", ""),
    "500-not-retried": (Fault("500", match=D0), dict(max_retries=0), "failed", "HTTP 500: Internal error",
                        "after retries"),
    "timeout-hang": (Fault("timeout", match=D0, hang_s=5), dict(max_retries=0, timeout_s=1.0), "failed",
                     "HTTP timeout (no complete answer within the timeout; not retried)", ""),
    "timeout-after-retries": (Fault("timeout", match=D0, hang_s=5), dict(max_retries=1, timeout_s=1.0), "failed",
                              "HTTP timeout after retries", ""),
    "drip-one-byte-at-a-time": (Fault("drip", match=D0, drip_s=0.1), dict(max_retries=0, timeout_s=1.0), "failed",
                                "HTTP timeout", ""),
    "dropped-connection": (Fault("drop", match=D0), dict(max_retries=0), "failed", "connection failed", ""),
    "malformed-json": (Fault("malformed", match=D0), {}, "failed", "malformed response body", ""),
    "garbage-body": (Fault("garbage", match=D0), {}, "failed", "malformed response body", ""),
    "empty-choices": (Fault("empty_choices", match=D0), {}, "failed", "the answer has no choices", ""),
    "html-body-200": (Fault("html", match=D0), {}, "failed", "the endpoint returned HTML, not JSON", ""),
    "401-echoing-the-key": (Fault("key_echo", match=D0), {}, "failed", "HTTP 401: Invalid key: Bearer [redacted]",
                            SECRET),
    "unparseable-reply": (Fault("unparseable", match=D0), {}, "failed", "no score found in reply", ""),
    "truncated-reply": (Fault("truncated", match=D0), {}, "failed", "reply truncated (finish_reason=length", ""),
    "refusal": (Fault("refusal", match=D0), {}, "failed", "judge refused: \"I'm sorry", ""),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fault_ends_scored_or_failed_with_honest_reason(case, env):
    fault, kw, status, says, never = CASES[case]
    store = Store(env / "judge.db")
    with serve(faults=[fault]) as srv:
        run = _run(srv, store, **kw)
    j = run.judgments.set_index("item_id")
    assert j.loc["d0", "status"] == status, j.loc["d0", "reason"]
    assert says in j.loc["d0", "reason"]
    if never:
        assert never not in j.loc["d0", "reason"]
    assert (j.drop(index="d0")["status"] == "ok").all()  # the other items are scored
    assert j.loc[j["status"] == "ok", "value"].between(1, 5).all()
    if status == "ok":
        assert run.config["stats"]["retries"] >= 1
    store.close()
    assert integrity_ok(env / "judge.db")
    assert SECRET.encode() not in files_bytes(env)


def test_retry_after_over_limit_is_asked_once(env):
    store = Store(env / "judge.db")
    with serve(faults=[Fault("429", match=D0, retry_after=3600)]) as srv:
        with pytest.raises(EndpointUnusable, match="asked to wait 3600 s"):  # the one request failed: stop
            _run(srv, store, n=1, max_retries=5)
        assert srv.requests_seen == 1  # not retried: the server asked for an hour


def test_drip_is_cut_at_the_deadline(env):
    """A body dripped at 10 bytes/s (a ~200-byte answer: 20 s) is cut at --timeout, per attempt."""
    with serve(faults=[Fault("drip", fraction=1.0, drip_s=0.1)]) as srv:
        store = Store(env / "judge.db")
        with pytest.raises(EndpointUnusable, match="HTTP timeout"):  # the 20 s body never arrives: timed out
            _run(srv, store, n=1, max_retries=1, timeout_s=0.6)
        assert srv.requests_seen == 2  # two attempts (one retry), each cut at the deadline


def test_endpoint_down_stops_before_anything_is_stored(env):
    port = _free_port()
    store = Store(env / "judge.db")
    ep = Endpoint(f"http://127.0.0.1:{port}/v1", "m", api_key_env=KEY_ENV, operator_configured=True)
    with pytest.raises(EndpointUnusable, match=r"did not answer the capability probe: connection failed"):
        judge_calls.score_dataset(dataset(3), method=OneShot(), criteria_by_dim=CRITERIA, endpoint=ep, store=store,
                             max_retries=0, timeout_s=1)
    assert store.list_runs() == [] and store.cache_count() == 0


def test_every_probe_404_suggests_the_v1_base_url(env):
    store = Store(env / "judge.db")
    with serve() as srv:
        root = srv.base_url[: -len("/v1")]
        with pytest.raises(EndpointUnusable, match=r"HTTP 404.*usually end in /v1"):
            judge_calls.score_dataset(dataset(3), method=OneShot(), criteria_by_dim=CRITERIA,
                                 endpoint=endpoint(srv, base_url=root), store=store, max_retries=0)


def test_html_answer_suggests_v1_when_the_url_lacks_it():
    with pytest.raises(RequestFailed, match=r"returned HTML, not JSON .*try http://host:8000/v1"):
        _expect_json("<!DOCTYPE html><html></html>", Endpoint("http://host:8000", "m"))


def test_every_request_failing_the_same_way_stops_the_run_early(env):
    store = Store(env / "judge.db")
    with serve(faults=[Fault("key_echo", fraction=1.0)]) as srv:
        with pytest.raises(EndpointUnusable) as ei:
            _run(srv, store, n=40, concurrency=2)
        sent = srv.requests_seen
    assert sent <= runner.FAIL_FAST_AFTER + 2  # 8 failures then stop (2 more may be in flight), not 40
    msg = str(ei.value)
    assert "all failed the same way" in msg and "HTTP 401" in msg and SECRET not in msg
    (run,) = store.list_runs()
    assert run.config["status"] == "stopped"


def test_different_failures_do_not_stop_the_run(env):
    store = Store(env / "judge.db")
    faults = [Fault("500", match="summary d1 of"), Fault("html", match="summary d2 of")]
    with serve(faults=faults) as srv:
        run = _run(srv, store, n=12, concurrency=1, max_retries=0)
    assert len(run.judgments) == 12 and run.config["status"] == "done"
    assert (run.judgments["status"] == "ok").sum() == 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("kind", ["endpoint-down", "html-everywhere"])
def test_cli_unusable_endpoint_one_line_exit_2(kind, env, capsys):
    from evalcore.cli import main

    base = ["score", "--dataset", "summeval", "--dimension", "coherence", "--method", "geval", "--model", "m",
            "--limit", "2", "--quiet", "--max-retries", "0", "--timeout", "15", "--db", str(env / "cli.db"),
            "--api-key-env", KEY_ENV]
    if kind == "endpoint-down":
        code = main(base + ["--base-url", f"http://127.0.0.1:{_free_port()}/v1"])
        expected = "did not answer the capability probe: connection failed"
    else:
        with serve(faults=[Fault("html", fraction=1.0)]) as srv:
            code = main(base + ["--base-url", srv.base_url])
        expected = "the endpoint returned HTML, not JSON"
    out = capsys.readouterr()
    assert code == 2, out.err
    lines = [ln for ln in out.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], out.err
    assert "Traceback" not in out.err and SECRET not in out.err + out.out


def test_html_body_labelled_as_json_is_named_html():
    import json

    import openai

    from evalcore.judge.client import _describe_error

    try:
        json.loads("<!DOCTYPE html><html><body>Login</body></html>")
    except json.JSONDecodeError as e:
        err = e
    assert _describe_error(err).startswith("the endpoint returned HTML, not JSON")
    assert isinstance(err, ValueError) and not isinstance(err, openai.APIError)


def test_cli_steps_with_endpoint_down_one_line_exit_2(env, capsys):
    from evalcore.cli import main

    code = main(["steps", "--dataset", "summeval", "--dimension", "coherence", "--model", "m", "--db",
                 str(env / "cli.db"), "--api-key-env", KEY_ENV, "--max-retries", "0", "--base-url", f"http://127.0.0.1:{_free_port()}/v1"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "connection failed" in err, err


@pytest.mark.parametrize("path,cut", [("/v1/chat/completions", True), ("/v1/completions", True),
                                      ("/v1/files/file-1/content", False)], ids=["chat", "completions", "file"])
def test_deadline_applies_to_judge_calls_only(path, cut):
    """A judge call must finish within the deadline; a file download (batch results) may take longer."""
    import asyncio

    from evalcore.judge.client import _DeadlineTransport, _httpx

    httpx = _httpx()

    class Slow:
        async def handle_async_request(self, request):
            await asyncio.sleep(0.3)
            return httpx.Response(200, content=b"{}", request=request)

    async def go():
        req = httpx.Request("POST", f"http://h{path}")
        return await _DeadlineTransport(Slow(), 0.1).handle_async_request(req)

    if cut:
        with pytest.raises(httpx.ReadTimeout, match="no complete answer within 0.1 s"):
            asyncio.run(go())
    else:
        assert asyncio.run(go()).status_code == 200
