"""The Score page's view model (evalcore.views.score), the resume command it shows (evalcore.judge.resume,
checked by the command line's own parser in evalcore.cli.resume_command), and the run outcome the page and ``score``
both say (evalcore.runs)."""

from __future__ import annotations

import argparse
import json
import math
import threading
from types import SimpleNamespace

import pandas as pd
import pytest

from evalcore import cli
from evalcore import runs as runs_mod
from evalcore.datasets import load_dataset
from evalcore.model import Run
from evalcore.views import score as score_views
from evalcore.views.blocks import Action, Expander, Metrics, Note, Table, notes, tables
from evalcore.views.format import esc


def _run(config: dict, **kw) -> Run:
    return Run(run_id="summeval/rts-m-1", dataset_id="summeval", method="rts", model="gpt-4o-mini", config=config,
               **kw)


ENDPOINT = {"provider": "vllm", "base_url": "http://gpu1:8000/v1", "model": "gpt-4o-mini"}


# ------------------------------------------------------------------------------------------- resume command
def test_a_run_that_recorded_its_spec_resumes_as_recorded():
    run = _run({"endpoint": ENDPOINT, "spec": {"method": "rts"}, "status": "interrupted",
                "criteria": {"coherence": {}}, "limit": 20})
    command = cli.resume_command(run)
    assert command == ("python -m evalcore score --dataset summeval --method rts --model gpt-4o-mini --provider vllm "
                       "--base-url http://gpu1:8000/v1 --run summeval/rts-m-1")
    args = cli.parse_checked(cli.resume_args(run))
    assert (args.command, args.run, args.limit, args.dimension) == ("score", "summeval/rts-m-1", None, None)


def test_an_older_run_is_described_by_its_flags_and_they_parse_back():
    run = _run({"endpoint": ENDPOINT, "status": "stopped", "criteria": {"coherence": {}, "fluency": {}}, "limit": 20,
                "requested_config": {"n_samples": 5}})
    command = cli.resume_command(run)
    assert "--limit 20" in command and "'{\"n_samples\": 5}'" in command
    args = cli.parse_checked(cli.resume_args(run))
    assert args.func.__name__ == "cmd_score"  # the command `main` would run
    assert (args.dataset, args.method, args.model, args.provider) == ("summeval", "rts", "gpt-4o-mini", "vllm")
    assert args.base_url == ["http://gpu1:8000/v1"] and args.run == "summeval/rts-m-1"
    assert args.dimension == ["coherence", "fluency"] and args.limit == 20 and args.config == '{"n_samples": 5}'


@pytest.mark.parametrize("config", [
    {"endpoint": ENDPOINT, "spec": {"method": "rts"}},
    {"endpoint": ENDPOINT, "status": "stopped", "criteria": {"coherence": {}, "fluency": {}}, "limit": 20,
     "requested_config": {"n_samples": 5}},
    {"status": "interrupted"},
])
def test_the_page_shows_the_command_the_cli_parser_checked(config):
    """The Score page reads the command from the library (evalcore.judge.resume), not the command line: it is the
    one cli.resume_command parses back with ``python -m evalcore``'s own parser."""
    from evalcore.judge import resume

    run = _run(config)
    assert resume.resume_command(run) == cli.resume_command(run)
    assert resume.resume_command(run).startswith("python -m evalcore score --dataset summeval --method rts ")


def test_an_option_the_parser_no_longer_takes_breaks_the_resume_command(monkeypatch):
    real = cli.build_parser

    def renamed() -> argparse.ArgumentParser:  # as if --limit had been renamed --max-items
        p = real()
        score = p._subparsers._group_actions[0].choices["score"]
        action = next(a for a in score._actions if "--limit" in a.option_strings)
        score._option_string_actions.pop("--limit")
        action.option_strings = ["--max-items"]
        score._option_string_actions["--max-items"] = action
        return p

    monkeypatch.setattr(cli, "build_parser", renamed)
    run = _run({"endpoint": ENDPOINT, "status": "stopped", "criteria": {"coherence": {}}, "limit": 20})
    with pytest.raises(ValueError, match="unrecognized arguments: --limit 20"):
        cli.resume_command(run)


def test_an_option_read_into_another_name_is_caught_too(monkeypatch):
    real = cli.parse_checked

    def misread(argv):
        args = real(argv)
        args.run = None  # as if --run had come to mean something else
        return args

    monkeypatch.setattr(cli, "parse_checked", misread)
    with pytest.raises(ValueError, match="reads back as"):
        cli.resume_command(_run({"endpoint": ENDPOINT, "spec": {"method": "rts"}}))


# -------------------------------------------------------------------------------------------- run outcome
def _failed(n: int, reasons: list[str]) -> Run:
    j = pd.DataFrame({"item_id": [f"i{k}" for k in range(n)], "dimension": "coherence", "raw": "no score",
                      "value": math.nan, "status": "failed", "reason": reasons, "estimator": ""})
    return Run(run_id="x/y", dataset_id="x", method="rts", model="m", judgments=j)


def test_the_outcome_is_the_library_one_and_says_where_the_failures_are():
    assert score_views.run_outcome is runs_mod.run_outcome and score_views.RunOutcome is runs_mod.RunOutcome
    run = _failed(2, ["no score found", "no score found"])
    page = runs_mod.run_outcome(run)
    assert page.text == ("No item was scored: 2 of 2 items failed. Commonest reason (2 of 2 failures): no score "
                         "found. The failures and their raw replies are listed below.")
    cli_text = runs_mod.run_outcome(run, where_failures="See the export.").text
    assert cli_text == page.text.replace(runs_mod.LISTED_BELOW, "See the export.")


# ----------------------------------------------------------------------------------------- what to score
def test_sample_draws_whole_documents_or_says_what_a_limit_covers():
    ds = load_dataset("summeval")
    s = score_views.sample(ds, pairwise=False, limit=40, documents=5, seed=0, how="random", dimension="coherence")
    assert len(s.documents) == 5 and s.limit == 0 and len(s.dataset.items) == 80
    assert notes(s.notes, "caption")[0].replace("\\", "") == ("Scoring 5 whole documents (80 items, random, seed 0); "
                                                             "fewer than 10 documents: every interval will be "
                                                             "unreliable.")
    s = score_views.sample(ds, pairwise=False, limit=20, documents=0, seed=0, how="random", dimension=None)
    assert s.dataset is ds and s.documents is None and s.limit == 20 and "first N rows" in notes(s.notes)[0]
    s = score_views.sample(ds, pairwise=True, limit=20, documents=5, seed=0, how="random", dimension=None)
    assert s.dataset is ds and s.documents is None and s.limit == 20 and s.notes == ()


def test_replicas_are_said_unused_by_the_batch_api():
    assert score_views.replicas(" http://a/v1\n\n http://b/v1 ") == ["http://a/v1", "http://b/v1"]
    assert score_views.replica_notes("http://a/v1", use_batch=False) == []
    assert "replicas are used by online runs only" in notes(score_views.replica_notes("http://a/v1",
                                                                                      use_batch=True))[0]


# --------------------------------------------------------------------------------------------- estimate
def _estimate(cost=0.5, batch=0.25, note="prompts were shortened"):
    rows = [{"tokens": "prompt", "count": 1000, "usd_per_1m": 0.15, "usd": 0.00015, "batch_usd_per_1m": 0.075,
             "batch_usd": 0.000075},
            {"tokens": "total", "count": 1000, "usd_per_1m": None, "usd": None, "batch_usd_per_1m": None,
             "batch_usd": None}]
    return SimpleNamespace(requests=40, duplicates=5, cache_hits=3, calls=32, prompt_tokens=12_000,
                           completion_tokens=640, cost_usd=cost, cost_usd_batch=batch, note=note, cost_rows=rows)


def test_estimate_blocks_show_requests_tokens_and_the_cost_of_the_route_taken():
    blocks = score_views.estimate_blocks(_estimate(), use_batch=False)
    figures = {m.label: m.value for b in blocks if isinstance(b, Metrics) for m in b.items}
    assert figures == {"Requests": "40", "Duplicate outputs": "5", "Cache hits": "3", "Calls to send": "32",
                       "Prompt tokens": "12,000", "Completion tokens (max)": "640", "Cost (USD)": "0.5000"}
    assert "prompts were shortened" in notes(blocks, "caption")
    cost = tables(blocks)[0].frame
    assert cost["USD (online)"].tolist() == ["0.0001", "unknown"] and cost["USD per 1M (online)"].tolist() == [
        "0.150", ""]
    batch = {m.label: m.value for b in score_views.estimate_blocks(_estimate(cost=2.5, batch=1234.5), use_batch=True)
             if isinstance(b, Metrics) for m in b.items}
    assert batch["Cost, Batch API (USD)"] == "1,234.50"
    unknown = {m.label: m.value for b in score_views.estimate_blocks(_estimate(cost=None), use_batch=False)
               if isinstance(b, Metrics) for m in b.items}
    assert unknown["Cost (USD)"] == "unknown"


def test_a_large_plan_is_estimated_when_asked():
    assert score_views.large_plan(score_views.EAGER_ESTIMATE_REQUESTS) is None
    blocks, action = score_views.large_plan(96_000)
    assert blocks[0].items[0].value == "96,000" and "over 5,000 requests" in notes(blocks)[0]
    assert action == Action("Estimate calls and cost", "estimate_now")


def test_start_action_carries_the_calls_and_cost_of_the_route():
    est = _estimate()
    assert score_views.start_action(est, use_batch=False, running=False) == Action(
        "Start scoring", "start_scoring", calls=32, cost_usd=0.5, allowed=True)
    assert score_views.start_action(est, use_batch=True, running=False).cost_usd == 0.25
    assert not score_views.start_action(est, use_batch=False, running=True).allowed
    assert not score_views.start_action(None, use_batch=False, running=False).allowed


def test_new_job_sends_online_runs_to_the_replicas_and_batches_to_the_first_endpoint():
    from evalcore.judge.client import Endpoint
    from evalcore.judge.spec import default_spec

    spec = default_spec(load_dataset("summeval"), "rts", ["coherence"], limit=4)
    ep = Endpoint("http://gpu1:8000/v1", "m", provider="vllm")
    job = score_views.new_job(spec, ep, replica_text="http://gpu2:8000/v1", use_batch=False, api_key=None,
                              concurrency=3, reprobe=False, store=None, owner="ann")
    assert [e.base_url for e in job.engine.endpoint] == ["http://gpu1:8000/v1", "http://gpu2:8000/v1"]
    assert job.spec.owner == "ann" and job.engine.concurrency == 3 and job.run_id.startswith("summeval/rts-m-")
    batch = score_views.new_job(spec, ep, replica_text="http://gpu2:8000/v1", use_batch=True, api_key=None,
                                concurrency=3, reprobe=False, store=None, owner=None)
    assert batch.engine.endpoint is ep and batch.batch


# --------------------------------------------------------------------------------------------- progress
def test_progress_line():
    assert score_views.progress_line(None) == (0.0, "starting (probing the endpoint)…")
    p = SimpleNamespace(done=10, total=40, cached=2, failed=1, retrying=0, eta_s=12.4)
    assert score_views.progress_line(p) == (0.25, "10 / 40 done · 2 from cache · 1 failed · 0 retrying · ETA 12 s")


def _job(*, error=None, cancelled=False, run=None):
    cancel = threading.Event()
    if cancelled:
        cancel.set()
    engine = SimpleNamespace(first_endpoint=SimpleNamespace(base_url="http://gpu1:8000/v1"))
    return SimpleNamespace(error=error, cancel=cancel, run=run, engine=engine)


def test_a_stopped_job_says_why_and_offers_resume_unless_the_typed_key_is_for_another_endpoint():
    stopped = _job(error="RuntimeError: the server went away")
    assert score_views.finished_blocks(stopped) == [Note(esc("The run stopped: the server went away"), "error")]
    blocks, action = score_views.resume_offer(stopped, ready=True, typed_for=None)
    assert blocks == [] and action == Action("Resume", "resume_scoring", allowed=True)
    blocks, action = score_views.resume_offer(stopped, ready=True, typed_for="https://api.openai.com/v1")
    assert not action.allowed and "gpu1" in notes(blocks)[0]
    cancelled = _job(cancelled=True)
    assert notes(score_views.finished_blocks(cancelled), "warning") == [
        "Cancelled. Finished judgments are kept; resume to score the rest."]
    assert score_views.resume_offer(_job(run=_failed(1, ["x"])), ready=True, typed_for=None) is None


def test_a_finished_job_says_how_many_it_scored():
    ok = _failed(2, ["", ""])
    ok.judgments["status"] = "ok"
    assert score_views.finished_blocks(_job(run=ok)) == [Note("Done.", "success"),
                                                         Note("2 of 2 items scored.", "caption")]
    failed = score_views.finished_blocks(_job(run=_failed(2, ["no score", "no score"])))
    assert failed[0].kind == "error" and failed[0].text.startswith("No item was scored")


# ------------------------------------------------------------------------------------- runs scored here
def test_run_labels_owner_and_resume_note():
    runs = [_run({"status": "interrupted", "owner": "ann", "shared": True}),
            Run(run_id="summeval/b", dataset_id="summeval", method="geval", model="m", config={"status": "done"})]
    labels = score_views.run_labels(runs)
    assert labels["summeval/rts-m-1"].endswith("  [interrupted]") and not labels["summeval/b"].endswith("]")
    assert score_views.owner_line(runs[0]) == "Started by ann, shared with the lab"
    assert score_views.owner_line(runs[1]) is None
    assert score_views.resume_note(runs[0]).startswith("This run is interrupted: its finished judgments are kept.")
    assert score_views.resume_note(runs[1]) is None


def test_run_details_cost_endpoints_counts_and_failures():
    run = _failed(3, ["no score found", "HTTP 500", "no score found"])
    run.judgments.loc[0, "status"] = "ok"
    run.config = run.config.replace(
        variant="20-sample fallback", endpoint={"model": "gpt-4o-mini", "provider": "openai"},
        stats={"prompt_tokens": 1_000_000, "completion_tokens": 0,
               "endpoints": [{"base_url": "http://a/v1", "answered": 3, "failed_attempts": 1, "drained": True,
                              "drain_reason": "HTTP 500 x3"}]})
    blocks = score_views.run_details(run)
    cost, endpoints, fp, failures = (t for t in tables(blocks))
    assert cost.key == "run_cost" and cost.frame["Tokens"].iloc[-1] == "total"
    assert endpoints.frame.to_dict("records") == [{"base URL": "http://a/v1", "answered": 3, "failed attempts": 1,
                                                   "answered 429": 0, "drained": "yes",
                                                   "why drained": "HTTP 500 x3"}]
    assert failures.frame["reason"].tolist() == ["HTTP 500", "no score found"] and failures.name == "failures x/y"
    figures = {m.label: m.value for b in blocks if isinstance(b, Metrics) for m in b.items}
    assert figures == {"Judgments": "3", "Failed": "2", "Dimensions": "coherence"}
    assert any("20\\-sample fallback" in n for n in notes(blocks, "caption"))
    assert isinstance(blocks[0], Expander)
    # the judge's fingerprint, each part as evalcore.fingerprint derives it from the record
    from evalcore.fingerprint import fingerprint

    want = fingerprint(run)
    shown = dict(zip(fp.frame["part"], fp.frame["value"]))
    assert shown["model"] == "gpt-4o-mini" and shown["provider"] == "openai"
    assert shown["variant"] == "20-sample fallback" and shown["fingerprint"] == want["hash"][:12]
    assert shown["endpoint"] == '{"provider": "openai"}' and shown["reported model"] == "-"
    assert json.loads(shown["parameters"]) == json.loads(json.dumps(want["parameters"], default=str))
    assert set(shown) == {"model", "reported model", "endpoint", "provider", "method", "variant", "prompt hash",
                          "parameters", "fingerprint"}
    assert any(b.title == f"Judge's fingerprint {want['hash'][:12]}" for b in blocks if isinstance(b, Expander))
    clean = _failed(1, [""])
    clean.judgments["status"] = "ok"
    assert notes(score_views.run_details(clean), "caption")[-1:] == ["No failures."]


def test_batch_blocks_offer_collect_while_a_batch_is_out():
    rows = [{"batch_id": "b1", "status": "completed", "total": 4, "completed": 4, "failed": 0, "collected": 1},
            {"batch_id": "b2", "status": "in_progress", "total": 4, "completed": None, "failed": None,
             "collected": 0}]
    store = SimpleNamespace(batch_rows=lambda run_id: rows)
    run = _run({"endpoint": {"base_url": "https://api.openai.com/v1"}})
    blocks, action = score_views.batch_blocks(run, store=store, ready=True, typed_for=None, running=False)
    assert tables(blocks)[0].frame["collected"].tolist() == ["yes", "no"]
    assert action == Action("Check and collect batch results", "collect_batches", allowed=True)
    assert score_views.batch_blocks(run, store=store, ready=True, typed_for=None, running=True)[1] is None
    blocks, action = score_views.batch_blocks(run, store=store, ready=True, typed_for="http://gpu1:8000/v1",
                                              running=False)
    assert not action.allowed and notes(blocks, "caption")
    none = SimpleNamespace(batch_rows=lambda run_id: [])
    assert score_views.batch_blocks(run, store=none, ready=True, typed_for=None, running=False) == ([], None)
    assert isinstance(tables(blocks)[0], Table)


def test_score_on_the_command_line_ends_with_the_pages_sentence(tmp_path, capsys, monkeypatch):
    """A run whose replies cannot be read: ``score`` prints the Score page's outcome (the export command where the
    page lists the failures below), on stderr (stdout is the run id alone), and in ``--json``."""
    import json

    from evalcore.store import Store
    from evalcore.testing.loopback import Fault, serve

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    db = tmp_path / "cli.db"
    argv = ["score", "--dataset", "summeval", "--dimension", "coherence", "--method", "rts", "--provider", "vllm",
            "--model", "loop", "--limit", "3", "--quiet", "--max-retries", "0", "--db", str(db)]
    with serve(faults=[Fault("unparseable", fraction=1.0)]) as srv:
        assert cli.main([*argv, "--base-url", srv.base_url]) == 0
        out, err = capsys.readouterr()
        run = Store(db).load_run(out.strip())
        page = runs_mod.run_outcome(run)
        assert page.level == "error" and page.text.startswith("No item was scored: 3 of 3 items failed.")
        said = page.text.replace(runs_mod.LISTED_BELOW, "The failures and their raw replies: python -m evalcore "
                                                        f"export --run {run.run_id}")
        assert said in err.splitlines()
        assert cli.main([*argv, "--base-url", srv.base_url, "--json", "--run", run.run_id]) == 0
    outcome = json.loads(capsys.readouterr().out)["outcome"]
    assert outcome == {"level": "error", "text": said, "scored": 0, "total": 3}


# ------------------------------------------------------------------------------------------- typing a model's name
def test_typing_a_model_name_on_the_score_page_builds_and_counts_the_plan_once(first_start, monkeypatch):
    """The Score page estimates again on every change of the model's name: the plan's tasks are built and counted
    for the first name only (evalcore.judge.runner's plan cache), and each name gets its own price."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from evalcore.judge import runner

    runner.PLAN_CACHE.clear()
    runner._counted_once.cache_clear()
    built, counted = [], []
    build, count = runner.build_tasks, runner._tasks_per_document
    monkeypatch.setattr(runner, "build_tasks", lambda *a, **kw: built.append(1) or build(*a, **kw))
    monkeypatch.setattr(runner, "_tasks_per_document", lambda *a, **kw: counted.append(1) or count(*a, **kw))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=300)
    at.switch_page("pages/score.py").run()
    at.selectbox(key="endpoint").set_value("openai").run()
    costs = {}
    for model in ("gpt-4o-mini", "gpt-4o", "my-deployment"):
        at.text_input(key="model").input(model).run()
        assert not at.exception, [e.value for e in at.exception]
        metrics = {m.label: m.value for m in at.metric}
        assert metrics["Requests"] == "1,600" and metrics["Calls to send"] == "1,546"
        costs[model] = metrics["Cost (USD)"]
    assert (len(built), len(counted)) == (1, 1)
    assert costs["my-deployment"] == "unknown" and len(set(costs.values())) == 3
