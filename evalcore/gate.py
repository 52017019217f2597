"""``python -m evalcore gate``: a check for CI. Does a judge's run agree with the humans at least as well as a
baseline run, on the same dataset, within noise?

    python -m evalcore gate --dataset D --run R --baseline B [--dimension DIM] [--min-agreement X]
                            [--labels-hash H] [--max-draw-disagreement S] [--allow-judge-change] [--json]

The checks, in this order; the first that fails decides the status and the exit code:

=====  ==================  ===================================================================================
exit   status              when
=====  ==================  ===================================================================================
0      ``OK``              none of the below: the run is not significantly worse than the baseline
4      ``JUDGE_CHANGED``   the run's fingerprint differs from the baseline's (evalcore.fingerprint: model,
                           endpoint, method, variant, prompt, parameters sent); ``--allow-judge-change`` goes on
                           to compare them (a prompt edit under review)
5      ``LABELS_CHANGED``  the hash of the human ratings used differs from ``--labels-hash`` (the
                           ``labels_hash`` the baseline's figures were computed on, as ``meta --json`` or an
                           earlier gate printed it)
3      ``FLAKY``           the run's draws of the same item disagree: the share of pairs of draws that differ
                           (evalcore.meta.draw_reliability.pairs_differ) is above ``--max-draw-disagreement``
1      ``REGRESSED``       the paired test the Compare page uses (evalcore.meta.compare.paired_difference,
                           documents resampled) puts the whole interval of run - baseline below 0, or the run's
                           correlation is below ``--min-agreement``
2                          a mistake in the command (unknown dataset, run or dimension)
=====  ==================  ===================================================================================
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalcore.model import Dataset, Run

EXIT_CODES = {"OK": 0, "REGRESSED": 1, "FLAKY": 3, "JUDGE_CHANGED": 4, "LABELS_CHANGED": 5}
DEFAULT_MAX_DRAW_DISAGREEMENT = 0.25


@dataclass
class GateResult:
    status: str
    reasons: list[str]
    dataset: str
    run: str
    baseline: str
    dimensions: list[str]
    fingerprint: dict[str, Any]
    baseline_fingerprint: dict[str, Any]
    labels_hash: str
    comparisons: dict[str, dict[str, Any]] = field(default_factory=dict)
    draw_disagreement: float | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "exit_code": self.exit_code}


@dataclass(frozen=True)
class GateOptions:
    dimension: str | None = None
    min_agreement: float | None = None
    labels_hash: str | None = None
    max_draw_disagreement: float = DEFAULT_MAX_DRAW_DISAGREEMENT
    allow_judge_change: bool = False
    level: str = "dataset"
    coefficient: str = "spearman"
    n_resamples: int = 1000
    random_state: int = 0


def _dimensions(dataset: Dataset, run: Run, baseline: Run, dimension: str | None) -> list[str]:
    shared = [d for d in run.dimensions if d in baseline.dimensions and d in dataset.dimension_names]
    if dimension:
        if dimension not in shared:
            raise ValueError(f"--dimension {dimension!r}: the run and the baseline both score only "
                             f"{', '.join(shared) or 'no dimension of this dataset'}")
        return [dimension]
    if not shared:
        raise ValueError(f"runs {run.run_id} and {baseline.run_id} score no common dimension of dataset {dataset.id}")
    return shared


def draw_disagreement(run: Run, dimensions: list[str]) -> float | None:
    """The share of pairs of draws of the same item that differ, over ``dimensions``; None for a run of one draw."""
    from evalcore.meta.draw_reliability import draw_matrix, pairs_differ

    if run.n_draws < 2:
        return None
    shares = [pairs_differ(draw_matrix(run.draw_scores(d))[1]) for d in dimensions]
    shares = [s for s in shares if not math.isnan(s)]
    return max(shares) if shares else None


def _compare(dataset: Dataset, run: Run, baseline: Run, dim: str, o: GateOptions) -> dict[str, Any]:
    from evalcore import runs as runs_mod
    from evalcore.meta.compare import paired_difference

    a, b = runs_mod.score_frame(dataset, run, dim), runs_mod.score_frame(dataset, baseline, dim)
    r = paired_difference(a, b, level=o.level, coefficient=o.coefficient, n_resamples=o.n_resamples,
                          random_state=o.random_state)
    return {"level": o.level, "coefficient": o.coefficient, "run": r.statistic_a, "baseline": r.statistic_b,
            "difference": r.difference, "ci_low": r.ci_low, "ci_high": r.ci_high, "pvalue": r.pvalue, "n": r.n,
            "n_documents": r.n_documents}


def _regressions(comparisons: dict[str, dict[str, Any]], o: GateOptions) -> list[str]:
    out = []
    for dim, c in comparisons.items():
        if c["ci_high"] < 0:
            out.append(f"{dim}: {c['coefficient']} {c['run']:.3f} against the baseline's {c['baseline']:.3f}, "
                       f"difference {c['difference']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}]: worse beyond noise")
        if o.min_agreement is not None and not c["run"] >= o.min_agreement:
            out.append(f"{dim}: {c['coefficient']} {c['run']:.3f} is below --min-agreement {o.min_agreement:g}")
    return out


def check(dataset: Dataset, run: Run, baseline: Run, options: GateOptions = GateOptions()) -> GateResult:
    """The gate's verdict on ``run`` against ``baseline`` on ``dataset`` (the module docstring says each status)."""
    from evalcore.fingerprint import fingerprint, labels_hash

    dims = _dimensions(dataset, run, baseline, options.dimension)
    fp, base_fp = fingerprint(run), fingerprint(baseline)
    result = GateResult("OK", [], dataset.id, run.run_id, baseline.run_id, dims, fp, base_fp,
                        labels_hash(dataset, dims))
    if fp["hash"] != base_fp["hash"] and not options.allow_judge_change:
        changed = [k for k in fp if k != "hash" and fp[k] != base_fp[k]]
        return _fail(result, "JUDGE_CHANGED", f"the judge changed: {', '.join(changed)} differ from the baseline's "
                                              "(pass --allow-judge-change to compare them anyway)")
    if options.labels_hash and options.labels_hash != result.labels_hash:
        return _fail(result, "LABELS_CHANGED", f"the human ratings changed: labels hash {result.labels_hash[:12]} "
                                               f"is not the baseline's {options.labels_hash[:12]}")
    result.draw_disagreement = draw_disagreement(run, dims)
    if result.draw_disagreement is not None and result.draw_disagreement > options.max_draw_disagreement:
        return _fail(result, "FLAKY", f"{result.draw_disagreement:.0%} of the pairs of draws of one item differ "
                                      f"(more than --max-draw-disagreement {options.max_draw_disagreement:g})")
    result.comparisons = {d: _compare(dataset, run, baseline, d, options) for d in dims}
    worse = _regressions(result.comparisons, options)
    return _fail(result, "REGRESSED", *worse) if worse else result


def _fail(result: GateResult, status: str, *reasons: str) -> GateResult:
    result.status, result.reasons = status, [*result.reasons, *reasons]
    return result


def cmd_gate(args: argparse.Namespace) -> int:
    from evalcore.runs import get_dataset, load_run

    options = GateOptions(dimension=args.dimension, min_agreement=args.min_agreement, labels_hash=args.labels_hash,
                          max_draw_disagreement=args.max_draw_disagreement,
                          allow_judge_change=args.allow_judge_change, n_resamples=args.resamples)
    result = check(get_dataset(args.dataset), load_run(args.run), load_run(args.baseline), options)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, default=str))
    else:
        print(f"{result.status}: run {result.run} against baseline {result.baseline} on {result.dataset}")
        for r in result.reasons:
            print(f"  {r}")
    return result.exit_code


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    g = sub.add_parser("gate", help="a check for CI: exit 0 when a run agrees with the humans at least as well as a "
                                    "baseline run within noise; exit 1 REGRESSED, 3 FLAKY, 4 JUDGE_CHANGED, "
                                    "5 LABELS_CHANGED")
    g.add_argument("--dataset", required=True)
    g.add_argument("--run", required=True, help="the run to check")
    g.add_argument("--baseline", required=True, help="the run it must do at least as well as")
    g.add_argument("--dimension", help="one dimension (default: every dimension both runs score)")
    g.add_argument("--min-agreement", type=float, metavar="X",
                   help="the run's Spearman correlation with the humans over items must be at least X")
    g.add_argument("--labels-hash", metavar="H", help="the labels_hash the baseline was computed on (meta --json)")
    g.add_argument("--max-draw-disagreement", type=float, default=DEFAULT_MAX_DRAW_DISAGREEMENT, metavar="S",
                   help="the largest share of pairs of draws of one item that may differ (FLAKY above it)")
    g.add_argument("--allow-judge-change", action="store_true",
                   help="compare even when the run's judge fingerprint differs from the baseline's")
    g.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the paired test")
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_gate)
