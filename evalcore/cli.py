"""``python -m evalcore``: the command line mirrors the library.

    python -m evalcore datasets [--json]
    python -m evalcore runs --dataset summeval [--json]
    python -m evalcore meta --dataset summeval --run RUN_ID [--dimension D] [--level L] [--coefficient C]
                            [--parse robust|paper] [--resamples N] [--json]
    python -m evalcore score ... / steps ... / export ...      (judging engine, see evalcore/judge/cli.py)
    python -m evalcore import-dataset / import-run / export-run (your own data and run bundles, evalcore/import_cli.py)

With ``--json`` the result is one JSON document on stdout (keys documented in README.md).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from typing import Any

from evalcore import runs as runs_mod


def _clean(x: Any) -> Any:
    """JSON-safe: NaN -> null, numpy scalars -> Python."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        try:
            x = x.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def cmd_datasets(args: argparse.Namespace) -> int:
    rows = runs_mod.list_all_datasets()
    if args.json:
        print(json.dumps(_clean(rows), indent=2))
        return 0
    print(f"{'id':<16}{'items':>7}{'systems':>9}{'annotators':>12}{'runs':>6}  dimensions")
    for r in rows:
        print(f"{r['id']:<16}{r['items']:>7}{r['systems']:>9}{r['annotators']:>12}{r.get('runs', 0):>6}  "
              f"{', '.join(r['dimensions'])}")
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    rows = [r.summary() | {"parser": r.parser, "status": r.config.get("status") or "done"}
            for r in runs_mod.list_runs(args.dataset)]
    if args.json:
        print(json.dumps(_clean(rows), indent=2))
        return 0
    for r in rows:
        print(f"{r['run_id']:<48} {r['method']:<10} {r['model']:<26} {r['origin']:<10} {r['status']}")
    return 0


def meta_report(dataset_id: str, run_id: str, *, dimensions: list[str] | None = None,
                levels: tuple[str, ...] | None = None, coefficients: tuple[str, ...] | None = None,
                parse: str = "robust", n_resamples: int = 1000, random_state: int = 0) -> dict[str, Any]:
    """Everything ``meta`` prints, as a dict (the CLI's --json output)."""
    from evalcore import meta

    dataset = runs_mod.get_dataset(dataset_id)
    run = runs_mod.load_run(run_id, parse=parse)
    dims = dimensions or [d for d in run.dimensions if d in dataset.dimension_names]
    levels = levels or meta.LEVELS
    coefficients = coefficients or meta.COEFFICIENTS
    challenge = [tuple(p) for p in dataset.meta.get("challenge_pairs", [])]
    out: dict[str, Any] = {"dataset": dataset_id, "run": run_id, "parse": parse, "n_resamples": n_resamples,
                           "dimensions": {}}
    if run.judgments.empty:
        raise SystemExit(f"run {run_id} has no per-item judgments (pairwise run): see the Alignment page / meta.pairwise")
    for dim in dims:
        frame = runs_mod.score_frame(dataset, run, dim)
        table = meta.correlation_table(frame, levels=levels, coefficients=coefficients, n_resamples=n_resamples,
                                       random_state=random_state)
        entry: dict[str, Any] = {
            "items": int(len(frame)),
            "failed": int(frame["judge"].isna().sum()),
            "correlations": table.to_dict(orient="records"),
        }
        if frame["system_id"].nunique() > 1:
            entry["per_system"] = {c: meta.per_system(frame, coefficient=c).to_dict(orient="records")
                                   for c in coefficients}
            mc = {}
            for c in coefficients:
                r = meta.meta_correlation(frame, coefficient=c)
                mc[c] = {"statistic": r.statistic, "pvalue": r.pvalue, "n_systems": r.n_systems,
                         "dropped_systems": list(r.dropped_systems)}
            entry["meta_correlation"] = mc
            scored = set(frame.loc[frame["judge"].notna(), "system_id"])
            # 003's full set is every pair of SummEval's 12 abstractive systems; elsewhere every pair of systems
            pool = sorted(set(dataset.meta.get("abstractive_systems") or scored) & scored)
            full = meta.correct_preferences(frame, pairs=list(itertools.combinations(pool, 2)))
            entry["correct_preferences"] = {"full": {"correct": full.correct, "total": full.total}}
            covered = [p for p in challenge if p[0] in scored and p[1] in scored]
            if covered:  # a partial run is counted on the challenge pairs it covers ("total" says how many)
                ch = meta.correct_preferences(frame, pairs=covered)
                entry["correct_preferences"]["challenge"] = {"correct": ch.correct, "total": ch.total}
        _add_label_agreement(entry, dataset, run, dim, n_resamples=n_resamples, random_state=random_state)
        out["dimensions"][dim] = entry
    return _clean(out)


def _add_label_agreement(entry: dict[str, Any], dataset, run, dim: str, *, n_resamples: int,
                         random_state: int) -> None:
    """Binary / nominal / ordinal dimensions: kappa, accuracy, P/R/F1, confusion matrix, calibration (issue 7.4)."""
    if not dataset.dimension(dim).is_categorical:
        return
    from evalcore.meta import classification

    try:
        report = classification.label_agreement(dataset, run, dim, n_resamples=n_resamples,
                                                 random_state=random_state)
    except ValueError as e:  # labels that are no category of the dimension: say which, keep the rest of the report
        entry["agreement"] = {"error": str(e)}
        return
    entry["agreement"] = classification.agreement_dict(report)


def cmd_meta(args: argparse.Namespace) -> int:
    report = meta_report(
        args.dataset, args.run,
        dimensions=[args.dimension] if args.dimension else None,
        levels=(args.level,) if args.level else None,
        coefficients=(args.coefficient,) if args.coefficient else None,
        parse=args.parse, n_resamples=args.resamples,
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['run']} on {report['dataset']} (parse={report['parse']}, {report['n_resamples']} resamples)")
    for dim, e in report["dimensions"].items():
        print(f"\n== {dim}: {e['items']} items, {e['failed']} failed parses")
        print(f"{'level':<9}{'coef':<10}{'value':>8}  {'95% CI':<17}{'n':>6}{'skipped':>9}")
        for r in e["correlations"]:
            ci = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r["ci_low"] is not None else "-"
            val = f"{r['statistic']:.3f}" if r["statistic"] is not None else "nan"
            print(f"{r['level']:<9}{r['coefficient']:<10}{val:>8}  {ci:<17}{r['n']:>6}{r['skipped']:>9}")
        if "meta_correlation" in e:
            for c, m in e["meta_correlation"].items():
                print(f"meta-correlation M ({c}): {m['statistic']:.3f} (p={m['pvalue']:.3g}, {m['n_systems']} systems)")
            cp = e["correct_preferences"]
            line = f"#CP: {cp['full']['correct']}/{cp['full']['total']}"
            if "challenge" in cp:
                line += f", challenge {cp['challenge']['correct']}/{cp['challenge']['total']}"
            print(line)
        if "agreement" in e:
            _print_label_agreement(e["agreement"])
    return 0


def _print_label_agreement(a: dict[str, Any]) -> None:
    if "error" in a:
        print(f"label agreement: {a['error']}")
        return

    def fmt(x: dict[str, Any]) -> str:
        v = "nan" if x["statistic"] is None else f"{x['statistic']:.3f}"
        return v + (f" [{x['ci_low']:.3f}, {x['ci_high']:.3f}]" if x.get("ci_low") is not None else "")

    print(f"{a['kind']} labels {a['labels']} (gold: {a['gold']}; {a['n']} items, {a['ties']} ties left out)")
    for k in ("cohen_kappa", "weighted_kappa", "accuracy", "precision", "recall", "f1"):
        if k in a:
            print(f"  {k:<15}{fmt(a[k])}")
    cm = a["confusion_matrix"]
    width = max(8, *(len(x) + 2 for x in cm["labels"]))
    print("  confusion (rows human, columns judge)")
    print("  " + " " * width + "".join(f"{x:>{width}}" for x in cm["labels"]))
    for name, row in zip(cm["labels"], cm["statistic"]):
        print("  " + f"{name:>{width}}" + "".join(f"{v:>{width}}" for v in row))
    if "calibration" in a:
        c = a["calibration"]
        print(f"  calibration ({c['target']}, {c['n']} items): Brier {fmt(c['brier'])}, ECE {fmt(c['ece'])}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m evalcore", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("datasets", help="list datasets (bundled and uploaded)")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_datasets)

    r = sub.add_parser("runs", help="list judge runs of a dataset")
    r.add_argument("--dataset", required=True)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_runs)

    m = sub.add_parser("meta", help="meta-evaluate a run against the human ratings")
    m.add_argument("--dataset", required=True)
    m.add_argument("--run", required=True)
    m.add_argument("--dimension")
    m.add_argument("--level", choices=["dataset", "summary", "system"])
    m.add_argument("--coefficient", choices=["pearson", "spearman", "kendall"])
    m.add_argument("--parse", choices=["robust", "paper"], default="robust",
                   help="robust (default, failures excluded and counted) or the paper's own parse rule")
    m.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the 95%% CIs")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_meta)

    try:
        from evalcore.judge import cli as judge_cli
    except ImportError:  # the judging engine is optional for pure analysis
        judge_cli = None
    if judge_cli is not None:
        judge_cli.register(sub)

    from evalcore import import_cli  # import-dataset, import-run, export-run

    import_cli.register(sub)
    return p


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that describe a mistake in the command or its setting, printed as one line (no traceback)."""
    from evalcore.importers import DatasetValidationError
    from evalcore.judge.types import UnsupportedByEndpoint

    errors: list[type[BaseException]] = [KeyError, DatasetValidationError, UnsupportedByEndpoint, FileNotFoundError]
    from evalcore.bundles import BundleError
    from evalcore.import_cli import CommandError

    errors += [BundleError, CommandError]
    try:
        from evalcore.judge.client import MissingApiKey

        errors.append(MissingApiKey)
    except ImportError:
        pass
    errors += _hardening_errors()
    return tuple(errors)


def _hardening_errors() -> list[type[BaseException]]:
    """A broken or locked store, a run another process holds, an unusable endpoint, credentials in a URL, a
    request that failed for good: each says what to do in one line (issue 9)."""
    try:
        from evalcore.judge.client import EndpointUnusable, RequestFailed
        from evalcore.judge.redact import CredentialsInUrl
        from evalcore.judge.store import RunLeased, StoreError
    except ImportError:
        return []
    return [StoreError, RunLeased, EndpointUnusable, CredentialsInUrl, RequestFailed]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except _user_errors() as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        from evalcore.judge.redact import redact

        print(f"error: {redact(str(msg))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
