"""Batch API commands of ``python -m evalcore`` (registered by ``evalcore.judge.cli``)::

    python -m evalcore score ... --batch [--no-wait] [--poll SECONDS]     submit (and wait for, and score) a run
    python -m evalcore batch status RUN_ID [--json]                       where the run's batches are
    python -m evalcore batch collect RUN_ID [--no-wait] [--poll S]        wait, store the replies, score the run
    python -m evalcore batch cancel RUN_ID                                cancel the run's unfinished batches
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from evalcore.judge.cli_common import json_safe, store_of

if TYPE_CHECKING:
    from evalcore.judge.batch import BatchStatus
    from evalcore.model import Run
    from evalcore.spec import EngineOptions, ScoringSpec
    from evalcore.store import Store


def _line(st: BatchStatus, stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr  # looked up at the call: a default bound at import time may be closed by now
    c = st.counts
    states = ", ".join(sorted({b["status"] for b in st.batches})) or "no batch"
    stream.write(f"\rbatch {states}: {c['completed']}/{c['total']} answered, {c['failed']} failed   ")
    stream.flush()


def _print_status(st: BatchStatus, as_json: bool) -> None:
    if as_json:
        print(json.dumps(st.as_dict(), indent=2))
        return
    if not st.batches:
        print(f"run {st.run_id} has no batch (scored online, or everything was in the cache)")
    for b in st.batches:
        print(f"{b['batch_id']}  {b['route']:<22} {b['status']:<11} {b['completed'] or 0}/{b['total'] or 0} answered, "
              f"{b['failed'] or 0} failed{'  (collected)' if b['collected'] else ''}")


def _print_run(run: Run, as_json: bool, extra: dict[str, Any]) -> None:
    if as_json:
        print(json.dumps(json_safe(run.summary() | {"stats": run.config.stats.to_dict(), **extra}), indent=2))
    else:
        info = run.summary()
        print(f"{run.run_id}: {info.get('judgments', 0)} judgments, {info.get('failed', 0)} failed")


def score_batch(args: argparse.Namespace, *, spec: ScoringSpec, engine: EngineOptions, store: Store) -> int:
    """``score --batch``: submit; then, unless --no-wait, wait for the batches and score the run."""
    from evalcore.judge import batch

    dataset = spec.dataset
    sub = batch.submit(spec, engine, store=store)
    print(f"run {sub.run_id}: {sub.requests} requests in {len(sub.batch_ids)} batch(es) "
          f"({sub.cached} answered from the cache) {' '.join(sub.batch_ids)}", file=sys.stderr)
    if sub.note:
        print(f"note: {sub.note}", file=sys.stderr)
    if args.no_wait and sub.batch_ids:  # (nothing submitted: everything was cached, score it right away)
        if args.json:
            print(json.dumps({"run_id": sub.run_id, "batch_ids": sub.batch_ids, "requests": sub.requests,
                              "cached": sub.cached, "tasks": sub.tasks, "note": sub.note}, indent=2))
        else:
            print(sub.run_id)
        return 0
    col = batch.collect(sub.run_id, store=store, poll_s=args.poll, dataset=dataset,
                        confirmed_base_url=engine.first_endpoint.base_url, progress=None if args.quiet else _line)
    if not args.quiet:
        sys.stderr.write("\n")
    assert col.run is not None  # collect waited (wait=True): it returns once the batches ended, the run scored
    _print_run(col.run, args.json, {"batch": col.status.as_dict()})
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    from evalcore.judge import batch

    store = store_of(args)
    kw = dict(store=store, api_key_env=args.api_key_env, confirmed_base_url=args.base_url)
    if args.action == "status":
        _print_status(batch.status(args.run_id, **kw), args.json)
        return 0
    if args.action == "cancel":
        _print_status(batch.cancel(args.run_id, **kw), args.json)
        return 0
    col = batch.collect(args.run_id, wait=not args.no_wait, poll_s=args.poll,
                        progress=None if args.quiet else _line, **kw)
    if not args.quiet:
        sys.stderr.write("\n")
    if col.run is None:
        _print_status(col.status, args.json)
        print("not finished yet: run `batch collect` again later", file=sys.stderr)
        return 0
    _print_run(col.run, args.json, {"batch": col.status.as_dict()})
    return 0


def add_score_flags(s: argparse.ArgumentParser) -> None:
    s.add_argument("--batch", action="store_true",
                   help="score through the OpenAI Batch API (half price; waits unless --no-wait)")
    s.add_argument("--no-wait", action="store_true", help="with --batch: return after submitting")
    s.add_argument("--poll", type=float, default=30.0, help="with --batch: seconds between status checks")
    s.add_argument("--schedule", choices=["prefix", "as-given"], default="prefix",
                   help="request order: 'prefix' sends prompts sharing the longest prefix together (prompt caching)")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = subparsers.add_parser("batch", help="status / collect / cancel a run scored through the Batch API")
    b.add_argument("action", choices=["status", "collect", "cancel"])
    b.add_argument("run_id")
    b.add_argument("--no-wait", action="store_true", help="collect: return the status if not finished")
    b.add_argument("--poll", type=float, default=30.0, help="collect: seconds between status checks")
    b.add_argument("--api-key-env", help="environment variable with the API key (default: the one used to submit)")
    b.add_argument("--base-url", help="the run's recorded base URL, named again to confirm that the environment's "
                                      "key may go there (needed unless it is $OPENAI_BASE_URL or in "
                                      "$EVALCORE_ALLOWED_ENDPOINTS)")
    b.add_argument("--db", help="the store: a SQLite file or a postgresql:// URL (default $EVALCORE_DB or ~/.evalcore/evalcore.db)")
    b.add_argument("--json", action="store_true")
    b.add_argument("--quiet", action="store_true", help="no progress line")
    b.set_defaults(func=cmd_batch)


__all__ = ["register", "add_score_flags", "score_batch", "cmd_batch", "print_cost_table"]


def print_cost_table(rows: list[dict[str, Any]], stream: TextIO | None = None) -> None:
    """The estimate's cost table: tokens, USD per 1M and USD, online and through the Batch API."""
    stream = stream or sys.stdout

    def usd(x: float | None, fmt: str) -> str:
        return "unknown" if x is None else format(x, fmt)

    stream.write(f"{'':<28}{'tokens':>12}{'$/1M':>9}{'USD':>11}{'batch $/1M':>12}{'batch USD':>11}\n")
    for r in rows:
        per = "" if r["tokens"] == "total" else usd(r["usd_per_1m"], ".3f")
        bper = "" if r["tokens"] == "total" else usd(r["batch_usd_per_1m"], ".3f")
        stream.write(f"{r['tokens']:<28}{r['count']:>12,}{per:>9}{usd(r['usd'], '.4f'):>11}{bper:>12}"
                     f"{usd(r['batch_usd'], '.4f'):>11}\n")
