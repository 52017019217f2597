"""A judge as a distribution and as a panel, on the command line: ``meta --reliability`` (the reliability of a run's
repeated draws, evalcore.meta.draw_reliability), ``meta --run A --run B ... --agreement-matrix`` (the judge-by-judge
agreement matrix with the humans, evalcore.jury) and the ``jury`` command (a derived run from two or more runs).

``evalcore.cli`` registers these; their JSON keys are listed in docs/statistics.md and docs/cli.md.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalcore import jury as jury_mod
from evalcore import runs as runs_mod
from evalcore.meta import draw_reliability
from evalcore.meta.results import Estimate

if TYPE_CHECKING:
    from evalcore.model import Dataset, Run

UNSTABLE_LISTED = 10  # the most unstable items listed per dimension


class RunsAction(argparse.Action):
    """``--run`` given once or more: ``args.run`` is the first (the run ``meta`` reports on), ``args.runs`` all of
    them in order (the judges of an agreement matrix or a jury)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        runs = list(getattr(namespace, "runs", None) or [])
        runs.append(values)
        namespace.runs = runs
        namespace.run = runs[0]


def _num(x: object) -> object:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return float(x) if hasattr(x, "__float__") and not isinstance(x, (int, bool)) else x


def _est(e: Estimate) -> dict[str, Any]:
    return e.as_dict(missing_as_none=True)


# ------------------------------------------------------------------------------------------------ meta's blocks
def add_meta_arguments(m: argparse.ArgumentParser) -> None:
    m.add_argument("--reliability", action="store_true",
                   help="add the reliability of the run's repeated draws per dimension: ICC(1,1), ICC(1,K), alpha "
                        "among draws, the share of draw pairs that differ, each draw's correlation with the "
                        "humans beside the mean of the draws (two-stage bootstrap interval), the projection for "
                        "1..2K draws and the draws needed (a run of one draw reports that its noise is unmeasured)")
    m.add_argument("--reliability-target", type=float, default=0.8, metavar="R",
                   help="the reliability the draws needed are counted for (default 0.8)")
    m.add_argument("--agreement-matrix", action="store_true",
                   help="with --run A --run B [...]: add every pair of runs' agreement and each run's agreement "
                        "with the human score, per dimension")


def reliability_block(dataset: Dataset, run: Run, dim: str, *, level: str, coefficient: str, n_resamples: int,
                      random_state: int, target: float) -> dict[str, Any]:
    """``meta --reliability``'s block for one dimension."""
    frame = runs_mod.score_frame(dataset, run, dim)
    rep = draw_reliability.reliability_report(
        run.draw_scores(dim), frame, level=level, coefficient=coefficient, n_resamples=n_resamples,
        random_state=random_state, target=target, level_of_measurement=dataset.dimension(dim).alpha_level)
    unstable = rep.spread.head(UNSTABLE_LISTED)
    return {
        "level": level, "coefficient": coefficient,
        "draws": rep.draws, "items": rep.items,
        "icc1": _est(rep.icc1), "icc1k": _est(rep.icc1k), "alpha": _est(rep.alpha),
        "disagreement": _num(rep.disagreement),
        "single_draw": {**{k: _num(v) for k, v in rep.single_draw_summary().items()},
                        "each": [_num(v) for v in rep.single_draw]},
        "mean_of_draws": _est(rep.mean_of_draws),
        "projected": {str(m): _num(v) for m, v in rep.projected.items()},
        "draws_needed": rep.draws_needed, "target": target,
        "unstable_items": [{k: _num(v) for k, v in r.items()} for r in unstable.to_dict("records")],
        "notes": list(rep.notes),
    }


def matrix_block(dataset: Dataset, members: list[Run], dim: str, *, coefficient: str, n_resamples: int,
                 random_state: int) -> dict[str, Any]:
    """``meta --agreement-matrix``'s block for one dimension."""
    matrix, humans = jury_mod.agreement_matrix(dataset, members, dim, coefficient=coefficient,
                                               n_resamples=n_resamples, random_state=random_state)
    return {"coefficient": jury_mod.agreement_measure(dataset, dim, coefficient), "runs": [m.run_id for m in members],
            "matrix": [[_est(e) for e in row] for row in matrix], "humans": [_est(e) for e in humans]}


def extend_meta_report(report: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Add the blocks ``--reliability`` and ``--agreement-matrix`` ask for to ``meta``'s report (in place)."""
    run_ids = list(getattr(args, "runs", None) or [args.run])
    if len(run_ids) > 1 and not args.agreement_matrix:
        raise SystemExit("meta: several --run are read only with --agreement-matrix (the report is on the first)")
    if not (args.reliability or args.agreement_matrix):
        return report
    dataset = runs_mod.get_dataset(args.dataset)
    level, coefficient = args.level or "dataset", args.coefficient or "spearman"
    common = dict(n_resamples=args.resamples, random_state=0)
    if args.reliability:
        run = runs_mod.load_run(args.run, parse=args.parse)
        for dim, entry in report["dimensions"].items():
            if "pairwise" not in entry:
                entry["reliability"] = reliability_block(dataset, run, dim, level=level, coefficient=coefficient,
                                                         target=args.reliability_target, **common)
    if args.agreement_matrix:
        if len(run_ids) < 2:
            raise SystemExit("meta --agreement-matrix needs two or more runs: --run A --run B [...]")
        members = [runs_mod.load_run(r, parse=args.parse) for r in run_ids]
        for dim, entry in report["dimensions"].items():
            if "pairwise" not in entry and all(dim in m.dimensions for m in members):
                entry["agreement_matrix"] = matrix_block(dataset, members, dim, coefficient=coefficient, **common)
    return report


def print_blocks(report: dict[str, Any]) -> None:
    """The reliability and agreement-matrix blocks in words (``meta`` without --json)."""
    def f(x: float | None) -> str:
        return "nan" if x is None else f"{x:.3f}"

    for dim, e in report["dimensions"].items():
        r = e.get("reliability")
        if r:
            s = r["single_draw"]
            print(f"\nreliability of {dim}: {r['draws']} draws on {r['items']} items; ICC(1,1) {f(r['icc1']['statistic'])} "
                  f"[{f(r['icc1']['ci_low'])}, {f(r['icc1']['ci_high'])}], ICC(1,K) {f(r['icc1k']['statistic'])}, "
                  f"alpha {f(r['alpha']['statistic'])}; draw pairs that differ {f(r['disagreement'])}")
            m = r["mean_of_draws"]
            print(f"  one draw {r['coefficient']}: min {f(s['min'])} / median {f(s['median'])} / max {f(s['max'])}; "
                  f"mean of draws {f(m['statistic'])} [{f(m['ci_low'])}, {f(m['ci_high'])}] ({m['resampling'] or '-'})")
            print(f"  draws needed for reliability {r['target']}: {r['draws_needed']}")
        a = e.get("agreement_matrix")
        if a:
            print(f"\nagreement matrix of {dim} ({a['coefficient']}):")
            for rid, row, h in zip(a["runs"], a["matrix"], a["humans"]):
                print(f"  {rid:<44} " + " ".join(f"{f(c['statistic']):>6}" for c in row)
                      + f"   humans {f(h['statistic'])}")


# ------------------------------------------------------------------------------------------------------ jury
def cmd_jury(args: argparse.Namespace) -> int:
    spec = jury_mod.JurySpec(tuple(args.runs or []), aggregate=args.aggregate, tie=args.tie, weights=args.weights,
                             calibration_docs=args.calibration_docs or 0, seed=args.seed)
    try:
        run = jury_mod.make_jury(args.dataset, spec, args.name, parse=args.parse)
    except ValueError as e:
        raise SystemExit(f"jury: {e}") from None
    run_id = jury_mod.save_jury(run)
    j = run.config["jury"]
    out = {"run_id": run_id, "dataset": args.dataset, "members": j["members"], "aggregate": j["aggregate"],
           "tie": j["tie"], "weights": j["weights"], "learned": j["learned"],
           "calibration_docs": j["calibration_docs"], "dimensions": run.dimensions,
           "judgments": int(len(run.judgments)), "failed": int((run.judgments["status"] != "ok").sum())}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(run_id)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    j = sub.add_parser("jury", help="make a derived run from two or more runs on the same items (a jury)")
    j.add_argument("--dataset", required=True)
    j.add_argument("--run", dest="runs", action="append", required=True,
                   help="a member run (give two or more: --run A --run B ...)")
    j.add_argument("--aggregate", choices=jury_mod.AGGREGATES, default="mean",
                   help="mean, median, trimmed (highest and lowest dropped) or majority (the commonest value)")
    j.add_argument("--tie", choices=jury_mod.TIE_RULES, default="low",
                   help="majority's tie rule: the lowest tied value (default), the highest, or the first member's")
    j.add_argument("--weights", choices=["equal", "calibrated"], default="equal",
                   help="calibrated: weights learned on --calibration-docs documents, the jury holding the rest")
    j.add_argument("--calibration-docs", type=int, metavar="N", help="documents the calibrated weights are learned on")
    j.add_argument("--seed", type=int, default=0, help="which documents calibrate (default 0)")
    j.add_argument("--name", required=True, help="the jury's name (its run id is <dataset>/jury-<name>)")
    j.add_argument("--parse", choices=["robust", "paper"], default="robust")
    j.add_argument("--json", action="store_true")
    j.set_defaults(func=cmd_jury)
