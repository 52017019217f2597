"""Judging-engine subcommands of ``python -m evalcore``: ``score``, ``steps``, ``export``.

    python -m evalcore score --dataset summeval --dimension coherence --method geval --model M --base-url URL
                             [--provider openai|azure|vllm|ollama|llamacpp] [--api-key-env VAR] [--limit N]
                             [--concurrency C] [--estimate-only] [--json] [--db PATH] [--run RUN_ID (resume)]
                             [--base-url URL2 ... (replicas)] [--batch [--no-wait] [--poll S]] [--schedule S]
    python -m evalcore batch status|collect|cancel RUN_ID      (Batch API runs: evalcore/judge/batch_cli.py)
    python -m evalcore steps --dataset D --dimension X --model M --base-url URL [--timeout S] [--max-retries N]
                                                                                     (G-Eval auto-CoT)
    python -m evalcore export --run RUN_ID --format csv|jsonl [--out FILE]

The API key is read from the environment variable named by ``--api-key-env`` (default: the provider's, e.g.
OPENAI_API_KEY); there is deliberately no option to pass it on the command line (shell history, process lists).
Criteria for a dimension: the saved version named by ``--criteria-version`` (``steps`` saves one and prints its
hash), else the method presets (``evalcore.methods.presets``), else the dataset's own description of the dimension.
The newest saved version is never taken by default: on a shared store it may be anyone's (issue 21, item 8).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from evalcore import registry
from evalcore.judge.cli_common import endpoint_of, json_safe, store_of
from evalcore.model import counted
from evalcore.types import Criteria

if TYPE_CHECKING:
    from evalcore.judge.client import Endpoint
    from evalcore.judge.runner import Estimate, Progress
    from evalcore.judge.spec import EngineOptions, ScoringSpec
    from evalcore.model import Dataset, Run
    from evalcore.store import Store


def providers() -> tuple[str, ...]:
    """The registered providers' names (evalcore.judge.providers and plugins), read without importing openai."""
    return tuple(sorted(registry.PROVIDERS))


def _dataset(dataset_id: str, store: Store) -> Dataset:
    from evalcore import runs

    return runs.get_dataset(dataset_id, store, with_labels=False)


def criteria_for(dataset: Dataset, dimension: str, store: Store, *, version: str | None = None,
                 method: str = "geval") -> Criteria:
    """The criteria a CLI run uses: the library's one rule (``evalcore.judge.spec.default_criteria``), as the Score
    page uses it."""
    from evalcore.judge.spec import default_criteria

    return default_criteria(dataset, dimension, method, store, version=version)


class ProgressBar:
    """One line on stderr, redrawn in place."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr  # the stream of the time it is made, not of import time
        self.width = width

    def __call__(self, p: Progress) -> None:
        frac = p.done / p.total if p.total else 1.0
        filled = int(frac * self.width)
        eta = "?" if p.eta_s is None else f"{p.eta_s:.0f}s"
        self.stream.write(f"\r[{'#' * filled}{'-' * (self.width - filled)}] {p.done}/{p.total} "
                          f"cached {p.cached} failed {p.failed} retrying {p.retrying} ETA {eta}   ")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def spec_from_args(args: argparse.Namespace, dataset: Dataset, store: Store, documents: tuple[str, ...] | None = None
                   ) -> tuple[ScoringSpec, EngineOptions]:
    """The run ``score`` was asked for, as the library's two values (evalcore.judge.spec). ``documents``: the whole
    documents ``--sample-docs`` drew (``dataset`` is restricted to them)."""
    from evalcore.judge.spec import EngineOptions, default_spec

    versions = {d: args.criteria_version for d in (args.dimension or dataset.dimension_names)} \
        if args.criteria_version else None
    spec = default_spec(dataset, args.method, args.dimension or None, store=store, criteria_versions=versions,
                        config_overrides=json.loads(args.config) if args.config else None, limit=args.limit,
                        pairs=_pairs_arg(args), parse_mode=args.parse, label=args.label or "", run_id=args.run,
                        documents=documents, reasoning_effort=getattr(args, "reasoning_effort", None),
                        max_completion_tokens=getattr(args, "max_completion_tokens", None),
                        draws=getattr(args, "draws", 1) or 1)
    first = endpoint_of(args)
    endpoint: Endpoint | list[Endpoint] = first
    if isinstance(args.base_url, list) and len(args.base_url) > 1:  # several replicas: evalcore.judge.routing
        endpoint = [first] + [dataclasses.replace(first, base_url=u) for u in args.base_url[1:]]
    engine = EngineOptions(endpoint, concurrency=args.concurrency, schedule=getattr(args, "schedule", "prefix"),
                           max_retries=args.max_retries, timeout_s=args.timeout, reprobe=args.reprobe)
    return spec, engine


def cmd_score(args: argparse.Namespace) -> int:
    from evalcore.judge import runner

    store = store_of(args)
    dataset = _dataset(args.dataset, store)
    resumed = _recorded(args, dataset, store)
    if resumed is None:
        dataset, documents = _sampled(dataset, args)
    spec, engine = spec_from_args(args, dataset, store, None if resumed else documents)
    spec = resumed or spec
    if getattr(args, "batch", False) and spec.draws > 1:
        raise ValueError(f"--batch sends one draw per item; score {spec.draws} draws per item without --batch")
    if getattr(args, "batch", False) and not args.estimate_only:
        from evalcore.judge.batch_cli import score_batch

        return score_batch(args, spec=spec, engine=engine, store=store)
    if args.estimate_only:
        return _print_estimate(runner.estimate(spec, engine, store=store), args.json)
    bar = ProgressBar() if not args.quiet else None
    t0 = time.perf_counter()
    try:
        run = runner.score_dataset(spec, engine, store=store, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        cfg = run.config
        summary = run.summary() | {"stats": cfg.stats.to_dict(), "plan_note": cfg.plan_note,
                                   "capabilities": cfg.capabilities, "variant": cfg.variant,
                                   "contract": cfg.contract or {}, "wall_s": round(time.perf_counter() - t0, 3),
                                   "outcome": outcome_of(run)}
        print(json.dumps(json_safe(summary), indent=2))
    else:
        if run.config.variant:  # the method as it ran on this judge (stderr: stdout is the run id alone)
            print(f"variant: {run.config.variant}", file=sys.stderr)
        print(outcome_of(run)["text"], file=sys.stderr)
        print(run.run_id)
    return 0


def outcome_of(run: Run) -> dict[str, Any]:
    """How the run went (level, text, scored, total), in the Score page's sentence (evalcore.runs.run_outcome),
    pointing at the export command where the page says the failures are listed below."""
    from evalcore.runs import run_outcome

    return dataclasses.asdict(run_outcome(run, where_failures="The failures and their raw replies: "
                                                              f"python -m evalcore export --run {run.run_id}"))


def cmd_check_judge(args: argparse.Namespace) -> int:
    """What this endpoint and model support, which variant of each method will run, the cost of an item."""
    from evalcore.judge.check import check_judge, format_check
    from evalcore.judge.contract import RequestOptions

    report = check_judge(endpoint_of(args), store=store_of(args), reprobe=args.reprobe, timeout_s=args.timeout,
                         options=RequestOptions(reasoning_effort=args.reasoning_effort,
                                                max_completion_tokens=args.max_completion_tokens))
    print(json.dumps(json_safe(report.as_dict()), indent=2) if args.json else format_check(report))
    return 0


def _print_estimate(est: Estimate, as_json: bool) -> int:
    out = {"tasks": est.tasks, "calls": est.calls, "cached": est.cached, "prompt_tokens": est.prompt_tokens,
           "completion_tokens": est.completion_tokens, "cost_usd": est.cost_usd, "note": est.note,
           "cached_prompt_tokens": est.cached_prompt_tokens, "cost_usd_batch": est.cost_usd_batch,
           "cost_table": est.cost_rows}
    if as_json:
        print(json.dumps(out, indent=2))
        return 0
    cost = "unknown (model not in the price table)" if est.cost_usd is None else f"${est.cost_usd:.4f}"
    print(f"{est.tasks} tasks, {est.calls} calls ({est.cached} cached), ~{est.prompt_tokens} prompt + "
          f"<= {est.completion_tokens} completion tokens, cost {cost}" + (f"\nnote: {est.note}" if est.note else ""))
    from evalcore.judge.batch_cli import print_cost_table

    print_cost_table(est.cost_rows)
    return 0


def _recorded(args: argparse.Namespace, dataset: Dataset, store: Store) -> ScoringSpec | None:
    """``--run ID`` naming a run that recorded its spec: that spec (its documents, dimensions, criteria, config),
    so that a resume sends the run's own requests whatever the other flags say; None for a new run or one recorded
    before runs recorded their spec (its flags then describe it, as before)."""
    if not args.run:
        return None
    from evalcore.judge.spec import recorded_spec

    try:
        row = store.run_row(args.run)
    except KeyError:
        return None
    recorded = (row.get("config") or {}).get("spec")
    if not recorded or row["dataset_id"] != dataset.id or recorded.get("method") != args.method:
        return None  # another dataset or method: the flags describe the run (the engine says what is wrong)
    spec = recorded_spec(args.run, store, dataset)
    if not args.quiet:
        docs = counted(len(spec.documents), "sampled document") if spec.documents else "the whole dataset"
        print(f"resuming run {args.run} as recorded: {spec.method} on "
              f"{', '.join(spec.dimensions or spec.criteria)}, {docs}", file=sys.stderr)
    return spec


def _sampled(dataset: Dataset, args: argparse.Namespace) -> tuple[Dataset, tuple[str, ...] | None]:
    """``--sample-docs K``: the dataset restricted to K whole documents (all their systems), seeded
    (evalcore.sampling); the run is stored against the full dataset. Returns (dataset, the documents or None)."""
    k = getattr(args, "sample_docs", None)
    if k is None:
        return dataset, None
    if args.limit is not None:
        raise ValueError("use either --sample-docs (whole documents) or --limit (first N items), not both")
    from evalcore.sampling import documents_subset, sample_documents

    docs = sample_documents(dataset, k, seed=args.seed, how=args.sample_how,
                            dimension=(args.dimension or [None])[0])
    print(f"scoring {counted(len(docs), 'document')} ({args.sample_how}, seed {args.seed}): " + ", ".join(map(str, docs)),
          file=sys.stderr)
    return documents_subset(dataset, docs), tuple(str(d) for d in docs)


def _pairs_arg(args: argparse.Namespace) -> Any:
    extra: dict[str, Any] = {}
    if getattr(args, "orders", None):
        extra["orders"] = [o.strip() for o in args.orders.split(",") if o.strip()]
    if getattr(args, "all_pairs", False):
        extra["annotated"] = False
    if getattr(args, "pair_sample", None):
        return {"sample": args.pair_sample, "seed": args.pair_seed, **extra}
    if getattr(args, "pairs", None):
        chosen = [p.split(",", 1) for p in args.pairs]
        return {"systems": chosen, **extra} if extra else chosen
    return extra or None


def cmd_steps(args: argparse.Namespace) -> int:
    from evalcore.judge import runner

    store = store_of(args)
    dataset = _dataset(args.dataset, store)
    base = criteria_for(dataset, args.dimension, store)
    out = runner.generate_steps(base, endpoint=endpoint_of(args), store=store, dataset_id=dataset.id,
                                timeout_s=args.timeout, max_retries=args.max_retries)
    if args.json:
        print(json.dumps({"dataset": dataset.id, "dimension": args.dimension, "hash": out.version_hash(),
                          "steps": out.steps}, indent=2))
    else:
        print(out.steps)
        print(f"(saved as criteria version {out.version_hash()} for {dataset.id}/{args.dimension}: score with it "
              f"by --criteria-version {out.version_hash()[:12]})", file=sys.stderr)
    return 0


EXPORT_COLUMNS = ["run_id", "item_id", "doc_id", "system_id", "dimension", "score", "estimator", "status", "reason",
                  "raw"]
EXPORT_PAIR_COLUMNS = ["run_id", "pair_id", "doc_id", "item_first", "item_second", "system_first", "system_second",
                       "dimension", "order", "verdict", "score", "estimator", "status", "reason", "raw"]


def export_rows(run: Run, dataset: Dataset | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per judgment (or per ordered comparison) with the item's document and system. Reasons are redacted
    again on the way out: a store written before keys were redacted may still hold an echoed one."""
    from evalcore.judge.redact import redact

    systems: dict[str, tuple[str, str]] = {}
    if dataset is not None:
        systems = {str(i): (str(d), str(s)) for i, d, s in
                   zip(dataset.items["item_id"], dataset.items["doc_id"], dataset.items["system_id"])}
    rows: list[dict[str, Any]] = []
    if not run.comparisons.empty and run.judgments.empty:
        for r in run.comparisons.to_dict(orient="records"):
            rows.append({"run_id": run.run_id, "pair_id": r["pair_id"], "doc_id": r["doc_id"],
                         "item_first": r["item_first"], "item_second": r["item_second"],
                         "system_first": systems.get(r["item_first"], ("", ""))[1],
                         "system_second": systems.get(r["item_second"], ("", ""))[1],
                         "dimension": r["dimension"], "order": r["order"], "verdict": r.get("verdict"),
                         "score": _num(r.get("value")), "estimator": r.get("estimator", ""), "status": r["status"],
                         "reason": redact(r.get("reason", "")), "raw": r.get("raw", "")})
        return EXPORT_PAIR_COLUMNS, rows
    for r in run.judgments.to_dict(orient="records"):
        doc, sysid = systems.get(str(r["item_id"]), ("", ""))
        rows.append({"run_id": run.run_id, "item_id": r["item_id"], "doc_id": doc, "system_id": sysid,
                     "dimension": r["dimension"], "score": _num(r.get("value")), "estimator": r.get("estimator", ""),
                     "status": r["status"], "reason": redact(r.get("reason", "")), "raw": r.get("raw", "")})
    return EXPORT_COLUMNS, rows


def _num(x: float | None) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return float(x)


def cmd_export(args: argparse.Namespace) -> int:
    store = store_of(args)
    try:
        from evalcore import runs as runs_mod

        run = runs_mod.load_run(args.run, store=store)
    except ImportError:
        run = store.load_run(args.run)
    try:
        dataset = _dataset(run.dataset_id, store)
    except KeyError:
        dataset = None
    columns, rows = export_rows(run, dataset)
    out = open(args.out, "w", newline="", encoding="utf-8") if args.out else sys.stdout
    try:
        if args.format == "csv":
            from evalcore.csvsafe import write_rows

            write_rows(out, columns, rows)  # formula-like text cells quoted (CSV injection)
        else:
            for r in rows:
                out.write(json.dumps(json_safe(r), ensure_ascii=False) + "\n")
    finally:
        if args.out:
            out.close()
    if args.out:
        print(f"{len(rows)} rows written to {Path(args.out)}", file=sys.stderr)
    return 0


def _endpoint_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="model name (Azure: the deployment name)")
    p.add_argument("--base-url", action="append",
                   help="the endpoint's base URL (default: the provider preset's); score: repeat it for several "
                        "replicas of one model (least-outstanding-requests routing; each reply cached under the replica "
                        "that gave it)")
    p.add_argument("--provider", default="openai", choices=providers(),
                   help="the provider's preset: base URL, key variable, documented contract (docs/providers.md)")
    p.add_argument("--reasoning-effort", help="reasoning judges: the effort asked for (none, minimal, low, medium, "
                   "high), sent as reasoning_effort; recorded and part of the cache key")
    p.add_argument("--max-completion-tokens", type=int, metavar="N",
                   help="reasoning judges: the completion budget of every request, reasoning included (replaces "
                        "each method's own; a budget the reasoning spends is reported as such)")
    p.add_argument("--api-key-env", help="environment variable holding the API key (default: the provider's)")
    p.add_argument("--api-version", help="Azure OpenAI api_version")
    p.add_argument("--db", help="the store: a SQLite file or a postgresql:// URL (default $EVALCORE_DB or ~/.evalcore/evalcore.db)")
    p.add_argument("--json", action="store_true")


def _score_args(s: argparse.ArgumentParser) -> None:
    """The ``score`` command's options (its Batch API flags are batch_cli's)."""
    s.add_argument("--dataset", required=True)
    s.add_argument("--dimension", action="append", help="repeat for several; default all of the dataset's")
    s.add_argument("--method", required=True, choices=list(registry.METHODS), metavar="METHOD",
                   help="the scoring method: " + ", ".join(registry.METHODS) + " (docs/extending.md adds one)")
    _endpoint_args(s)
    s.add_argument("--limit", type=int, help="first N items (pairwise: first N pairs, both orders); a partial run "
                   "is better drawn with --sample-docs")
    s.add_argument("--sample-docs", type=int, metavar="K",
                   help="score K whole documents (every system's output for each), drawn at random with --seed")
    s.add_argument("--seed", type=int, default=0, help="seed of --sample-docs (default 0)")
    s.add_argument("--sample-how", choices=["random", "stratified"], default="random",
                   help="stratified: one document from each of K strata of the documents' mean human score")
    s.add_argument("--draws", type=_positive, default=1, metavar="K",
                   help="judge every item K times (default 1): each draw stored with its own cache key and seed, "
                        "the item's score the draws' mean (the mode for a label); the estimate counts K. Draws of a "
                        "greedy judge (temperature 0) measure only the endpoint's own nondeterminism")
    s.add_argument("--concurrency", type=int, default=16)
    s.add_argument("--estimate-only", action="store_true", help="print calls/tokens/cost and exit (no request)")
    s.add_argument("--run", help="resume this run id (its cached and finished work is not repeated)")
    s.add_argument("--label", help="a label for the run")
    s.add_argument("--config", help="method config overrides as JSON, e.g. '{\"n_samples\": 20}'")
    s.add_argument("--criteria-version", help="a saved criteria version hash (default: the method's paper preset, "
                                                 "never simply the newest saved version)")
    s.add_argument("--parse", choices=["robust", "paper"], default="robust")
    s.add_argument("--pairs", nargs="+", metavar="SYS_A,SYS_B", help="pairwise: only these system pairs")
    s.add_argument("--pair-sample", type=int, help="pairwise: a random sample of K pairs")
    s.add_argument("--pair-seed", type=int, default=0)
    s.add_argument("--orders", default="ab,ba",
                   help="pairwise: presentation orders to judge, 'ab' (A first), 'ba' or 'ab,ba' (default: both)")
    s.add_argument("--all-pairs", action="store_true",
                   help="pairwise on a dataset with human votes: judge every same-prompt pair, not only the voted ones")
    s.add_argument("--timeout", type=float, default=60.0,
                   help="seconds per HTTP attempt, the whole answer included (a dripping server is cut off)")
    s.add_argument("--max-retries", type=int, default=6)
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--reprobe", action="store_true",
                   help="probe the endpoint's capabilities again (the probe is cached like any request)")


def _positive(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of draws, 1 or more, not {text!r}") from None
    if k < 1:
        raise argparse.ArgumentTypeError(f"a whole number of draws, 1 or more, not {text!r}")
    return k


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``score``, ``steps``, ``export``, ``check-judge`` and ``batch`` to the ``python -m evalcore`` parser."""
    from evalcore.judge import batch_cli

    s = subparsers.add_parser("score", help="score a dataset with an LLM judge (resumable, cached)")
    _score_args(s)
    batch_cli.add_score_flags(s)  # --batch, --no-wait, --poll, --schedule
    s.set_defaults(func=cmd_score)

    t = subparsers.add_parser("steps", help="G-Eval auto-CoT: generate evaluation steps and save a criteria version")
    t.add_argument("--dataset", required=True)
    t.add_argument("--dimension", required=True)
    _endpoint_args(t)
    t.add_argument("--timeout", type=float, default=60.0, help="seconds per HTTP attempt, the whole answer included")
    t.add_argument("--max-retries", type=int, default=6)
    t.set_defaults(func=cmd_steps)

    e = subparsers.add_parser("export", help="export a run's judgments, one row per judgment")
    e.add_argument("--run", required=True)
    e.add_argument("--format", choices=["csv", "jsonl"], default="csv")
    e.add_argument("--out", help="file to write (default stdout)")
    e.add_argument("--db", help="the store: a SQLite file or a postgresql:// URL (default $EVALCORE_DB or ~/.evalcore/evalcore.db)")
    e.set_defaults(func=cmd_export)

    c = subparsers.add_parser("check-judge", help="what a judge supports, each method's variant on it and its cost "
                                                  "per item (a few probe requests, cached)")
    _endpoint_args(c)
    c.add_argument("--timeout", type=float, default=60.0, help="seconds per HTTP attempt")
    c.add_argument("--reprobe", action="store_true", help="ask again instead of reading the cached probe")
    c.set_defaults(func=cmd_check_judge)

    batch_cli.register(subparsers)  # batch status|collect|cancel RUN_ID


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (the lead's ``evalcore.cli`` is the usual one)."""
    p = argparse.ArgumentParser(prog="evalcore-judge")
    register(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
