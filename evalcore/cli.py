"""``python -m evalcore``: the command line mirrors the library.

    python -m evalcore datasets [--json]
    python -m evalcore runs --dataset summeval [--json]
    python -m evalcore meta --dataset summeval --run RUN_ID [--dimension D] [--level L] [--coefficient C]
                            [--parse robust|paper] [--resamples N] [--json]
    python -m evalcore bias --dataset summeval --run RUN_ID [--dimension D] [--parse robust|paper] [--json]
    python -m evalcore score ... / steps ... / export ...      (judging engine, see evalcore/judge/cli.py)
    python -m evalcore import-dataset / import-run / export-run (your own data and run bundles, evalcore/import_cli.py)
    python -m evalcore plan --dataset D --run R --dimension DIM [--coefficient C] [--half-width 0.05] [--json]
    python -m evalcore labels list|export|import [FILE] --dataset D [--json]
    python -m evalcore align --dataset D --dimension DIM --method M --base-url URL [--model M] [--candidates N]
                             [--test-share 0.3] [--seed S] [--json]   (evalcore/align/cli.py)

With ``--json`` the result is one JSON document on stdout (keys documented in README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from evalcore import guarantees_cli, panel_cli
from evalcore import runs as runs_mod
from evalcore.judge.cli_common import json_safe
from evalcore.model import counted

if TYPE_CHECKING:  # types only: the analyses load where a command runs them
    import pandas as pd

    from evalcore.analyses.evaluation import DimensionAnalysis
    from evalcore.model import Dataset, Run


def cmd_datasets(args: argparse.Namespace) -> int:
    rows = runs_mod.list_all_datasets()
    if args.json:
        print(json.dumps(json_safe(rows), indent=2))
        return 0
    print(f"{'id':<16}{'items':>7}{'systems':>9}{'annotators':>12}{'runs':>6}  dimensions")
    for r in rows:
        print(f"{r['id']:<16}{r['items']:>7}{r['systems']:>9}{r['annotators']:>12}{r.get('runs', 0):>6}  "
              f"{', '.join(r['dimensions'])}")
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    listed = runs_mod.list_runs(args.dataset)
    # A listing carries no judgments (cheap for a picker): --json counts them from the loaded run, as `meta` reads
    # it (the current criteria version's judgments, published replies parsed robustly), never a listing's 0.
    rows = [(runs_mod.load_run(r.run_id) if args.json else r).summary()
            | {"parser": r.parser, "status": r.config.status or "done"} for r in listed]
    if args.json:
        print(json.dumps(json_safe(rows), indent=2))
        return 0
    for r in rows:
        print(f"{r['run_id']:<48} {r['method']:<10} {r['model']:<26} {r['origin']:<10} {r['status']}")
    return 0


def meta_report(dataset_id: str, run_id: str, *, dimensions: list[str] | None = None,
                levels: tuple[str, ...] | None = None, coefficients: tuple[str, ...] | None = None,
                parse: str = "robust", n_resamples: int = 1000, random_state: int = 0,
                systems: list[str] | None = None, ci_resampling: str = "documents",
                summary_constant: str = "skip", inference: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything ``meta`` prints, as a dict (the CLI's --json output). ``systems`` restricts the run and its human
    ceiling to those systems; ``ci_resampling`` is the system level's interval ("documents" or "both");
    ``summary_constant``: a document where either side is constant is skipped ("skip", G-Eval's rule, default) or
    counts as correlation 0 ("zero") at the summary level. ``inference`` (``_inference_options``) adds the Alt-Test,
    prediction-powered estimates and Bradley-Terry rankings asked for; None leaves them out."""
    dataset = runs_mod.get_dataset(dataset_id)
    run = runs_mod.load_run(run_id, parse=parse)
    _check_meta_options(dataset, dataset_id, n_resamples, summary_constant, systems)
    return meta_document(dataset, run, dimensions=dimensions, levels=levels, coefficients=coefficients, parse=parse,
                         n_resamples=n_resamples, random_state=random_state, systems=systems,
                         ci_resampling=ci_resampling, summary_constant=summary_constant, inference=inference)


def meta_document(dataset: Dataset, run: Run, *, dimensions: list[str] | None = None,
                  levels: tuple[str, ...] | None = None,
                  coefficients: tuple[str, ...] | None = None, parse: str = "robust", n_resamples: int = 1000,
                  random_state: int = 0, systems: list[str] | None = None, ci_resampling: str = "documents",
                  summary_constant: str = "skip", inference: dict[str, Any] | None = None) -> dict[str, Any]:
    """``meta_report`` of a dataset and run already loaded: evalcore.analyses.evaluation's analysis, rendered."""
    from evalcore import meta
    from evalcore.analyses import evaluation
    from evalcore.fingerprint import provenance
    from evalcore.meta.inference import CI_RESAMPLING_HELP

    out: dict[str, Any] = {"dataset": dataset.id, "run": run.run_id, "parse": parse, "n_resamples": n_resamples,
                           "systems": systems, "ci_resampling": ci_resampling, "summary_constant": summary_constant,
                           "ci_resampling_means": CI_RESAMPLING_HELP[ci_resampling], "dimensions": {}}
    if run.config.variant:  # the method as it ran on this judge: what its contract changed (absent: as asked)
        out["variant"] = run.config.variant
    out.update(provenance(dataset, run, dimensions))  # the judge's fingerprint, the hash of the ratings used
    entry: dict[str, Any]
    if run.judgments.empty:
        if dataset.preferences.empty:
            raise SystemExit(f"run {run.run_id} has no per-item judgments (pairwise run) and dataset {dataset.id} "
                             "has no pairwise preferences to compare its verdicts with")
        for dim, summary in evaluation.pairwise_analysis(dataset, run, dimensions, n_resamples=n_resamples,
                                                         random_state=random_state).items():
            out["dimensions"][dim] = entry = {"pairwise": summary}
            if inference:
                _add_pairwise_inference(entry, dataset, run, dim, inference, n_resamples, random_state)
        return json_safe(out)
    settings = evaluation.Settings(levels or meta.LEVELS, coefficients or meta.COEFFICIENTS, n_resamples,
                                   random_state, systems, ci_resampling, summary_constant)
    for dim, analysis in evaluation.run_analysis(dataset, run, dimensions, settings).items():
        entry = dimension_entry(analysis)
        if inference:
            _add_inference(entry, dataset, run, dim, inference, n_resamples, random_state, systems)
        out["dimensions"][dim] = entry
    return json_safe(out)


def dimension_entry(a: DimensionAnalysis) -> dict[str, object]:
    """``dimensions.<dim>`` of ``meta --json``: an evalcore.analyses.evaluation.DimensionAnalysis as a dict, each
    registered analysis's keys in the registry's order (``evaluation.dimension_json``)."""
    from evalcore.analyses.evaluation import dimension_json

    return dimension_json(a)


def _check_meta_options(dataset: Dataset, dataset_id: str, n_resamples: int, summary_constant: str,
                        systems: list[str] | None) -> None:
    """The options ``meta`` cannot use, named, before any statistic is computed."""
    if n_resamples < 0:
        raise ValueError(f"--resamples must be 0 or more, got {n_resamples}")
    if summary_constant not in ("skip", "zero"):
        raise ValueError(f"--summary-constant must be skip or zero, got {summary_constant!r}")
    if systems is not None:
        unknown = sorted(set(systems) - set(map(str, dataset.systems)))
        if unknown:
            raise KeyError(f"dataset {dataset_id!r} has no system {unknown[0]!r}; it has "
                           f"{', '.join(map(str, dataset.systems))}")


# ------------------------------------------------------------------------------- meta: Alt-Test, PPI, Bradley-Terry


def _add_inference_arguments(m: argparse.ArgumentParser) -> None:
    m.add_argument("--alt-test", action="store_true",
                   help="add the Alternative Annotator Test (Calderon et al. 2025): may the judge replace the "
                        "annotators? (also turned on by --alt-epsilon / --alt-scoring)")
    m.add_argument("--alt-epsilon", type=float, metavar="E",
                   help="the Alt-Test's cost-benefit margin (default 0.2; the authors suggest 0.2 experts, 0.15 "
                        "skilled annotators, 0.1 crowd workers)")
    m.add_argument("--alt-scoring", choices=["accuracy", "neg_rmse"],
                   help="the Alt-Test's alignment score (default: accuracy for labels and pairwise verdicts, "
                        "neg_rmse for numeric ratings)")
    m.add_argument("--ppi", nargs="?", const="ppi++", choices=["ppi", "ppi++"],
                   help="add prediction-powered estimates of each system's mean human score (pairwise: win rate): "
                        "ppi (lambda = 1) or ppi++ (power-tuned, the default when --ppi is given alone)")
    m.add_argument("--ppi-rated-docs", type=int, metavar="K",
                   help="with --ppi: keep the human ratings of K documents drawn at random (seed 0) and hide the rest, "
                        "to see what PPI gives from fewer ratings")
    m.add_argument("--bradley-terry", action="store_true",
                   help="pairwise runs: Bradley-Terry scores (Elo scale) from the votes and from the verdicts, with "
                        "length control; refitted on every resample, so it takes a few seconds per 100 resamples")


def _inference_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """What of the Alt-Test, PPI and Bradley-Terry ``meta`` was asked for; None when nothing (the report is then
    exactly what it was without these flags)."""
    alt = args.alt_test or args.alt_epsilon is not None or args.alt_scoring is not None
    if args.alt_epsilon is not None and not 0 <= args.alt_epsilon <= 1:
        raise ValueError(f"--alt-epsilon must be between 0 and 1 (a share of items), got {args.alt_epsilon}")
    if args.ppi_rated_docs is not None and args.ppi_rated_docs < 1:
        raise ValueError(f"--ppi-rated-docs must be 1 or more, got {args.ppi_rated_docs}")
    ppi = args.ppi or ("ppi++" if args.ppi_rated_docs is not None else None)
    if not (alt or ppi or args.bradley_terry):
        return None
    return {"alt_test": {"epsilon": 0.2 if args.alt_epsilon is None else args.alt_epsilon,
                         "scoring": args.alt_scoring} if alt else None,
            "ppi": ppi, "ppi_rated_docs": args.ppi_rated_docs, "bradley_terry": args.bradley_terry}


def _add_inference(entry: dict[str, Any], dataset: Dataset, run: Run, dim: str, opts: dict[str, Any], n_resamples: int,
                   random_state: int, systems: list[str] | None) -> None:
    """``alt_test`` and ``ppi`` of a score run's dimension (README "meta --json"; evalcore.analyses.inference)."""
    from evalcore.analyses.inference import score_inference

    for name, outcome in score_inference(dataset, run, dim, opts, n_resamples, random_state, systems).items():
        entry[name] = outcome.as_dict()


def _add_pairwise_inference(entry: dict[str, Any], dataset: Dataset, run: Run, dim: str, opts: dict[str, Any],
                            n_resamples: int, random_state: int) -> None:
    """``alt_test`` (votes scored by accuracy), ``ppi`` (each model's win rate) and ``pairwise.bradley_terry``."""
    from evalcore.analyses.inference import pairwise_inference

    for name, outcome in pairwise_inference(dataset, run, dim, opts, n_resamples, random_state).items():
        (entry["pairwise"] if name == "bradley_terry" else entry)[name] = outcome.as_dict()


def _print_inference(e: dict[str, Any]) -> None:
    """A few lines for the Alt-Test, PPI and Bradley-Terry blocks (the figures in full: --json)."""
    a = e.get("alt_test")
    if a is not None:
        if "error" in a:
            print(f"Alt-Test: {a['error']}")
        else:
            verdict = "passes" if a["passed"] else "does not pass"
            print(f"Alt-Test (epsilon {a['epsilon']:g}, {a['scoring']}): the judge {verdict}: winning rate "
                  f"{a['winning_rate']:.2f}, advantage probability {a['advantage_probability']:.3f} "
                  f"({a['n_items']} items, {a['dropped_items']} with fewer than two annotators dropped)")
            for r in a["per_annotator"]:
                pval = "nan" if r["p_value"] is None else f"{r['p_value']:.3g}"
                print(f"  vs {r['annotator']}: n={r['n']}, {r['test']} p={pval}, rho={r['advantage_probability']:.3f}"
                      f"{', judge wins' if r['rejected'] else ''}")
    p = e.get("ppi")
    if p is not None:
        if "error" in p:
            print(f"PPI: {p['error']}")
        else:
            print(f"{p['method'].upper()} mean per system (95% CI) | humans only | judge only")
            for r in p["per_system"]:
                h, j = r["human_only"], r["judge_only"]
                lam = "nan" if r["lambda"] is None else f"{r['lambda']:.3f}"
                print(f"  {r['system']:<20}{_fmt_ci(r)} lambda={lam} ({r['n_labelled']} rated, {r['n_unlabelled']} "
                      f"not) | {_fmt_ci(h)} | {_fmt_ci(j)}")
    b = (e.get("pairwise") or {}).get("bradley_terry")
    if b is not None:
        _print_bradley_terry(b)


def _fmt_ci(x: dict[str, Any]) -> str:
    if x.get("estimate") is None:
        return "nan"
    ci = f" [{x['ci_low']:.3f}, {x['ci_high']:.3f}]" if x.get("ci_low") is not None else ""
    return f"{x['estimate']:.3f}{ci}"


def _print_bradley_terry(b: dict[str, Any]) -> None:
    if "error" in b:
        print(f"Bradley-Terry: {b['error']}")
        return
    print(f"Bradley-Terry ({b['scale']}; ties {b['ties']}): humans | judge")
    for src in ("human", "judge"):
        if b[src]["problem"]:
            print(f"  {src}: {b[src]['problem']}")
    judge = {s["model"]: s for s in b["judge"]["scores"]}
    for s in b["human"]["scores"]:
        j = judge.get(s["model"], {})
        h_txt = "nan" if s["score"] is None else f"{s['score']:.0f}"
        j_txt = "nan" if j.get("score") is None else f"{j['score']:.0f}"
        print(f"  {s['model']:<24}{h_txt:>6} | {j_txt:>6}")
    tau = "nan" if b["kendall_tau"] is None else f"{b['kendall_tau']:.3f}"
    print(f"  Kendall's tau between the rankings: {tau} ({b['n_models']} models)")
    for src in ("human", "judge"):
        length = b[src]["length"]
        if length and length["coefficient"] is not None:
            print(f"  length coefficient ({src}): {length['coefficient']:.3f} "
                  f"[{length['ci_low']:.3f}, {length['ci_high']:.3f}] log-odds per SD of the length difference")


def cmd_meta(args: argparse.Namespace) -> int:
    report = meta_report(
        args.dataset, args.run,
        dimensions=[args.dimension] if args.dimension else None,
        levels=(args.level,) if args.level else None,
        coefficients=(args.coefficient,) if args.coefficient else None,
        parse=args.parse, n_resamples=args.resamples,
        systems=[s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None,
        ci_resampling=args.ci_resampling, summary_constant=args.summary_constant,
        inference=_inference_options(args),
    )
    report = panel_cli.extend_meta_report(report, args)  # --reliability, --agreement-matrix
    report = guarantees_cli.extend_meta_report(report, args)  # --selective
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['run']} on {report['dataset']} (parse={report['parse']}, {report['n_resamples']} resamples)")
    for dim, e in report["dimensions"].items():
        if "pairwise" in e:
            _print_pairwise(dim, e["pairwise"])
            _print_inference(e)
            continue
        print(f"\n== {dim}: {e['items']} items, {e['failed']} failed parses")
        print(f"{'level':<9}{'coef':<10}{'value':>8}  {'95% CI':<17}{'n':>6}{'skipped':>9}")
        for r in e["correlations"]:
            ci = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r["ci_low"] is not None else "-"
            val = f"{r['statistic']:.3f}" if r["statistic"] is not None else "nan"
            print(f"{r['level']:<9}{r['coefficient']:<10}{val:>8}  {ci:<17}{r['n']:>6}{r['skipped']:>9}")
        for r in e["human_ceiling"]:
            ci = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r["ci_low"] is not None else "-"
            val = f"{r['statistic']:.3f}" if r["statistic"] is not None else "nan"
            print(f"human ceiling {r['level']} {r['coefficient']}: {val} {ci} (n = {r['n']})")
        for w in e["warnings"]:
            print(f"warning: {w}")
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
        _print_inference(e)
    panel_cli.print_blocks(report)
    guarantees_cli.print_blocks(report)
    return 0


PAIRWISE_LINES = (("agreement.with_ties", "judge vs every vote, with ties (S1)"),
                  ("agreement.without_ties", "judge vs every vote, without ties (S2)"),
                  ("human_human.with_ties", "human vs human, with ties"),
                  ("human_human.without_ties", "human vs human, without ties"),
                  ("accuracy", "judge vs majority: accuracy"), ("cohen_kappa", "judge vs majority: Cohen's kappa"),
                  ("accuracy_ab", "accuracy, A shown first"), ("accuracy_ba", "accuracy, B shown first"),
                  ("both_orders_correct", "right in both orders"), ("positional_agreement", "positional agreement"),
                  ("positional_agreement_llmbar", "positional agreement, LLMBar's count"))


def _print_pairwise(dim: str, p: dict[str, Any]) -> None:
    c = p["counts"]
    print(f"\n== {dim}: {c['pairs']} pairs, {c['votes']} votes by {len(c['annotators'])} annotators; "
          f"{c['with_verdict']} pairs with a judge verdict ({c['unreadable']} unreadable, {c['missing_order']} "
          f"missing an order)")
    for key, label in PAIRWISE_LINES:
        block, _, sub = key.partition(".")
        x = p.get(block)
        x = x.get(sub) if (x is not None and sub) else x
        if x is None or x.get("statistic") is None:
            if x is not None and x.get("reason"):  # a figure that rests on no verdict: say so, never a 0
                print(f"{label:<42}{'-':>8}  {x['reason']}")
            continue
        ci = f"[{x['ci_low']:.3f}, {x['ci_high']:.3f}]" if x.get("ci_low") is not None else "-"
        print(f"{label:<42}{x['statistic']:>8.3f}  {ci:<17}{x['n']:>6}")
    for k in p.get("annotator_kappa", []):
        kappa = "nan" if k["kappa"] is None else f"{k['kappa']:.3f}"
        print(f"Cohen's kappa {k['a']} vs {k['b']}: {kappa} (n={k['n']})")


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


# --------------------------------------------------------------------------------------------------------- plan
def cmd_plan(args: argparse.Namespace) -> int:
    """How many labelled items a run's agreement with the labels needs (evalcore.labels.plan)."""
    from evalcore import labels
    from evalcore.store import default_store

    dataset = runs_mod.get_dataset(args.dataset, with_labels=False)
    run = runs_mod.load_run(args.run, parse=args.parse)
    if args.dimension not in dataset.dimension_names:
        raise KeyError(f"dataset {args.dataset!r} has no dimension {args.dimension!r}; it has "
                       f"{', '.join(dataset.dimension_names)}")
    store = default_store()
    rows = store.label_rows(labels.base_id(args.dataset))
    out = json_safe(labels.plan(dataset, run, rows, args.dimension, coefficient=args.coefficient,
                             half_width=args.half_width, reference=args.reference,
                             random_only=not args.all_labels, assurance=args.assurance,
                             adjudications=labels.adjudications_of(store, args.dataset)))
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    stat = "n/a" if out["statistic"] is None else f"{out['statistic']:.3f}"
    hw = "n/a" if out["half_width_now"] is None else f"+/-{out['half_width_now']:.3f}"
    print(f"{args.coefficient} of {args.run} with the {out['reference']} on {args.dimension} ({out['sample']}): "
          f"{stat} {hw} from n = {out['n_now']}")
    print(f"n needed for +/-{args.half_width:g}: {out['n_needed']}")
    print(f"method: {out['method']}")
    return 0


def cmd_labels(args: argparse.Namespace) -> int:
    """The labels made on the Label page: a summary, export to CSV, re-import onto the same dataset."""
    import pandas as pd

    from evalcore import labels
    from evalcore.csvsafe import to_csv_safe
    from evalcore.store import default_store

    store = default_store()
    dataset = runs_mod.get_dataset(labels.base_id(args.dataset), with_labels=False)
    if args.action == "import":
        if not args.file:
            raise SystemExit("error: labels import needs the CSV file to read")
        n = labels.import_labels(store, dataset, pd.read_csv(args.file), file=args.file)
        print(json.dumps({"imported": n}) if args.json else f"imported {n} labels onto {dataset.id}")
        return 0
    rows = store.label_rows(dataset.id)
    if args.action == "export":
        frame = labels.export_frame(dataset, rows)
        if args.file:
            with open(args.file, "w", encoding="utf-8", newline="") as f:
                f.write(to_csv_safe(frame))
            print(f"wrote {len(frame)} labels to {args.file}", file=sys.stderr)
        else:
            sys.stdout.write(to_csv_safe(frame))
        return 0
    latest = labels.latest_labels(rows)
    rp = labels.random_part(rows)
    out: dict[str, Any] = {"dataset": dataset.id, "rows": int(len(rows)), "labels": int(len(latest)),
           "random_part": int(sum((i, d) in rp for i, d in zip(latest["item_id"], latest["dimension"]))),
           "annotators": {a: int(n) for a, n in latest.groupby("annotator").size().items()},
           "dimensions": {d: int(n) for d, n in latest.groupby("dimension").size().items()}}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{out['labels']} labels ({out['random_part']} in the random part) on {dataset.id} from "
              f"{counted(len(out['annotators']), 'annotator')}: " + ", ".join(f"{a} {n}" for a, n in out["annotators"].items()))
    return 0


def _register_plan(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lb = sub.add_parser("labels", help="labels made on the Label page: list, export, import")
    lb.add_argument("action", choices=["list", "export", "import"])
    lb.add_argument("file", nargs="?", help="CSV to write (export; stdout if omitted) or to read (import)")
    lb.add_argument("--dataset", required=True)
    lb.add_argument("--json", action="store_true")
    lb.set_defaults(func=cmd_labels)

    pl = sub.add_parser("plan", help="labels needed for a target CI half-width of a run's agreement with them")
    pl.add_argument("--dataset", required=True)
    pl.add_argument("--run", required=True)
    pl.add_argument("--dimension", required=True)
    pl.add_argument("--coefficient", choices=["spearman", "kendall", "pearson"], default="spearman")
    pl.add_argument("--half-width", type=float, default=0.05, help="target half-width of the 95%% CI")
    pl.add_argument("--reference", choices=["auto", "labels", "gold"], default="auto",
                    help="auto (default): the labels made here if this dimension has any, else the gold scores")
    pl.add_argument("--all-labels", action="store_true",
                    help="use every label, not only the random part (biased when items were chosen by uncertainty)")
    pl.add_argument("--assurance", type=float, default=0.95,
                    help="probability that the planned n reaches the target (default 0.95)")
    pl.add_argument("--parse", choices=["robust", "paper"], default="robust")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plan)


# ------------------------------------------------------------------------------------------- bias (Bias page)

POSITION_BIAS_KEYS = ("first_position_win_rate", "tie_rate", "flip_rate", "inconsistent_rate", "n_pairs",
                      "n_verdicts", "n_unreadable")


def bias_report(dataset_id: str, run_id: str, *, dimension: str | None = None, parse: str = "robust"
                ) -> dict[str, Any]:
    """What the Bias page shows for one run, as a dict (``bias --json``): position bias per dimension and pooled
    ("all": every (dimension, pair) once), writer bias rows (Liu et al. 2023 Fig. 2) and mean judge vs human score
    rows per system (Shen et al. 2023 Fig. 4)."""
    from evalcore.meta.pairwise import position_bias
    from evalcore.views import bias as bias_views

    dataset = runs_mod.get_dataset(dataset_id)
    run = runs_mod.load_run(run_id, parse=parse)
    if run.dataset_id and run.dataset_id != dataset_id:
        raise KeyError(f"run {run_id} judged dataset {run.dataset_id!r}, not {dataset_id!r}")
    if dimension is not None and dimension not in dataset.dimension_names:
        raise KeyError(f"dimension {dimension!r} is not in {dataset_id}: {', '.join(dataset.dimension_names)}")
    dims = [dimension] if dimension else [d for d in dataset.dimension_names if d in run.dimensions]
    out: dict[str, Any] = {"dataset": dataset_id, "run": run_id, "parse": parse, "dimensions": dims,
                           "position_bias": {}, "writer_bias": [], "mean_scores": []}
    comps = run.comparisons
    if not comps.empty:
        if dimension:
            comps = comps[comps["dimension"] == dimension]
        for dim in dict.fromkeys(comps["dimension"].tolist()):
            d = position_bias(comps, dimension=dim)
            out["position_bias"][dim] = {k: d[k] for k in POSITION_BIAS_KEYS} | _first_position_ci(comps, dim)
        d = position_bias(comps)
        out["position_bias"]["all"] = {k: d[k] for k in POSITION_BIAS_KEYS} | _first_position_ci(comps, None)
    if not run.judgments.empty:
        out["verbosity"], out["self_preference"] = {}, {}
        for dim in dims:  # the page's tables, from its own view model (evalcore.views.bias)
            wb = bias_views.shown_table(bias_views.writer_blocks(
                dataset, run, run_id, dim, bias_views.writer_bias_table(dataset, run, dim)), "writer_bias")
            out["writer_bias"] += [] if wb is None else wb.to_dict(orient="records")
            _score_biases(out, dataset, run, dim)
        ms = bias_views.shown_table(bias_views.mean_scores_blocks(
            bias_views.mean_scores_table(dataset, [run], dims), dimension or ""), "mean_scores")
        if ms is not None:
            out["mean_scores"] = ms.drop(columns=["run"]).to_dict(orient="records")
    return json_safe(out)


def _first_position_ci(comps: pd.DataFrame, dimension: str | None) -> dict[str, Any]:
    from evalcore.meta.preference import position_bias_stat

    st = position_bias_stat(comps, dimension)
    return {"first_position_ci_low": st.ci_low, "first_position_ci_high": st.ci_high}


def _score_biases(out: dict[str, Any], dataset: Dataset, run: Run, dim: str) -> None:
    """Verbosity (judge-human residual vs output length) and self-preference of a score run on one dimension."""
    from evalcore.meta import preference

    if dataset.human_scores.empty or not (dataset.human_scores["dimension"] == dim).any():
        return
    frame = runs_mod.score_frame(dataset, run, dim)
    lengths = dataset.items.drop_duplicates("item_id").set_index("item_id")["output"].astype(str).str.len()
    verbosity = preference.score_verbosity(frame, lengths)
    out["verbosity"][dim] = {"residual_length_spearman": preference.stat_dict(verbosity)}
    sp = preference.score_self_preference(frame, run.model)
    if sp is not None:
        out["self_preference"][dim] = {"family": sp["family"], "residual_own": preference.stat_dict(sp["residual_own"]),
                                       "residual_other": preference.stat_dict(sp["residual_other"])}


def cmd_bias(args: argparse.Namespace) -> int:
    report = bias_report(args.dataset, args.run, dimension=args.dimension, parse=args.parse)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['run']} on {report['dataset']} (parse={report['parse']})")
    if report["position_bias"]:
        print(f"\n== position bias\n{'dimension':<16}{'1st wins':>10}{'ties':>8}{'flip':>8}{'inconsistent':>14}"
              f"{'pairs':>8}")
        for dim, r in report["position_bias"].items():
            cells = [r[k] for k in ("first_position_win_rate", "tie_rate", "flip_rate", "inconsistent_rate")]
            pct = [f"{100 * v:.1f}%" if v is not None else "n/a" for v in cells]
            print(f"{dim:<16}{pct[0]:>10}{pct[1]:>8}{pct[2]:>8}{pct[3]:>14}{r['n_pairs']:>8}")
    if report["writer_bias"]:
        print(f"\n== judge score of human- vs LLM-written texts, by the humans' preference\n"
              f"{'dimension':<16}{'group':<18}{'pairs':>6}{'human':>8}{'LLM':>8}{'diff':>8}")
        for r in report["writer_bias"]:
            print(f"{r['dimension']:<16}{r['group']:<18}{r['pairs']:>6}{r['human_written']:>8.3f}"
                  f"{r['llm_written']:>8.3f}{r['difference']:>8.3f}")
    if report["mean_scores"]:
        print(f"\n== mean judge vs mean human score per system\n{'dimension':<16}{'system':<28}{'judge':>8}"
              f"{'human':>8}{'items':>7}{'failed':>7}")
        for r in report["mean_scores"]:
            judge = f"{r['judge']:.3f}" if r["judge"] is not None else "n/a"
            print(f"{r['dimension']:<16}{str(r['system_id']):<28}{judge:>8}{r['human']:>8.3f}{r['items']:>7}"
                  f"{r['failed']:>7}")
    if not (report["position_bias"] or report["writer_bias"] or report["mean_scores"]):
        print("nothing to show: the run has no comparisons and no parsed scores on these dimensions")
    return 0


def add_bias_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = sub.add_parser("bias", help="position bias, writer bias and mean scores of a run (the Bias page)")
    b.add_argument("--dataset", required=True)
    b.add_argument("--run", required=True)
    b.add_argument("--dimension", help="one dimension (default: every dimension the run judged)")
    b.add_argument("--parse", choices=["robust", "paper"], default="robust")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_bias)


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
    m.add_argument("--run", required=True, action=panel_cli.RunsAction,
                   help="the run reported on (given again, --run B ..., the judges of --agreement-matrix)")
    m.add_argument("--dimension")
    m.add_argument("--level", choices=["dataset", "summary", "system"])
    m.add_argument("--coefficient", choices=["pearson", "spearman", "kendall"])
    m.add_argument("--parse", choices=["robust", "paper"], default="robust",
                   help="robust (default, failures excluded and counted) or the paper's own parse rule")
    m.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the 95%% CIs")
    m.add_argument("--systems", help="comma-separated system ids: the run and its human ceiling on these only")
    m.add_argument("--ci-resampling", choices=["documents", "both"], default="documents",
                   help="system-level interval: resample documents (systems fixed, default) or both systems and "
                        "documents (Deutsch et al. 2021 boot-both)")
    m.add_argument("--summary-constant", choices=["skip", "zero"], default="skip",
                   help="summary level: a document where either side is constant is skipped (default, G-Eval's "
                        "script) or counts as correlation 0; either way `skipped` counts them")
    _add_inference_arguments(m)
    panel_cli.add_meta_arguments(m)
    guarantees_cli.add_meta_arguments(m)
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_meta)

    add_bias_command(sub)

    try:
        from evalcore.judge import cli as judge_cli
    except ImportError:  # the judging engine is optional for pure analysis
        pass
    else:
        judge_cli.register(sub)

    from evalcore import import_cli  # import-dataset, import-run, export-run

    import_cli.register(sub)
    panel_cli.register(sub)  # jury
    from evalcore import gate  # gate: a check for CI

    gate.register(sub)
    _register_plan(sub)
    from evalcore.align import cli as align_cli  # align: the judge-alignment loop (issue 22)

    align_cli.register(sub)
    from evalcore import workers  # worker: scores the queued runs of a PostgreSQL store

    workers.register(sub)
    return p


def resume_args(run: Run) -> list[str]:
    """The ``score`` arguments that resume ``run``: evalcore.judge.resume, where the Score page reads them too."""
    from evalcore.judge import resume

    return resume.resume_args(run)


def resume_command(run: Run) -> str:
    """The shell command that resumes ``run`` (evalcore.judge.resume), checked by parsing it back with this command
    line's own parser (the one ``main`` uses): an option renamed there fails here, and in the tests, rather than in
    the user's shell."""
    from evalcore.judge import resume

    args = parse_checked(resume.resume_args(run))
    wanted = resume.resumed_as(run)
    got = {k: getattr(args, k, None) for k in wanted}
    config = got.get("config")
    got["config"] = json.loads(config) if config else None
    if got != wanted:
        raise ValueError(f"the resume command of run {run.run_id} reads back as {got}, not {wanted}")
    return resume.resume_command(run)


def parse_checked(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed by ``python -m evalcore``'s parser; ValueError (with argparse's message) where it refuses
    them, instead of argparse's exit."""
    import contextlib
    import io

    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            return build_parser().parse_args(argv)
    except SystemExit:
        raise ValueError(f"python -m evalcore refuses {argv}: {said.getvalue().strip()}") from None


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that describe a mistake in the command or its setting, printed as one line (no traceback)."""
    from evalcore.importers import DatasetValidationError
    from evalcore.types import UnsupportedByEndpoint

    errors: list[type[BaseException]] = [KeyError, ValueError, DatasetValidationError, UnsupportedByEndpoint, FileNotFoundError]
    from evalcore.bundles import BundleError
    from evalcore.import_cli import CommandError

    errors += [BundleError, CommandError]
    from evalcore.labels import LabelImportError

    errors.append(LabelImportError)
    try:
        from evalcore.judge.client import MissingApiKey
        from evalcore.judge.trust import UntrustedEndpoint

        errors += [MissingApiKey, UntrustedEndpoint]
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
        from evalcore.store import RunLeased, StoreError
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
