"""Guarantees on the command line, each a block per dimension of ``meta`` (evalcore.analyses.guarantees):
``--selective`` (selective evaluation with a guarantee, Jung, Brahman & Choi 2025: evalcore.meta.selective),
``--conformal LEVEL`` (split conformal intervals for each item's human score: evalcore.meta.conformal) and
``--calibrate isotonic`` (a judge -> human map, its transfer to systems it was not fitted on)."""

from __future__ import annotations

import argparse
from typing import Any

from evalcore import runs as runs_mod
from evalcore.analyses import guarantees
from evalcore.meta.results import to_json
from evalcore.meta.selective import DEFAULT_TOLERANCE
from evalcore.model import Dataset, Run


def add_meta_arguments(m: argparse.ArgumentParser) -> None:
    m.add_argument("--selective", action="store_true",
                   help="add selective evaluation with a guarantee per dimension: the confidence threshold "
                        "certified on --calibration-docs random documents by fixed-sequence testing with an exact "
                        "binomial bound, so that the items kept agree with the humans at least 1 - alpha with "
                        "probability 1 - delta; coverage, agreement on the kept items and the abstained items on "
                        "the other documents (Jung, Brahman & Choi 2025)")
    m.add_argument("--alpha", type=float, default=0.1, metavar="A",
                   help="--selective: the disagreement rate the kept items may have (default 0.1)")
    m.add_argument("--delta", type=float, default=0.1, metavar="D",
                   help="--selective: the chance the guarantee fails over calibration sets (default 0.1)")
    m.add_argument("--calibration-docs", type=int, metavar="N",
                   help="--selective: documents whose human ratings calibrate the threshold (default half)")
    m.add_argument("--seed", type=int, default=0, help="--selective: which documents calibrate (default 0)")
    m.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="T",
                   help=f"--selective, ratings: a judge score within T scale points of the human score agrees "
                        f"(default {DEFAULT_TOLERANCE:g})")
    m.add_argument("--selective-jury", metavar="RUNS",
                   help="--selective: comma-separated run ids whose agreement with the run is its confidence where "
                        "the run has no log-probs or draws")


    m.add_argument("--cascade", metavar="RUNS",
                   help="--selective: comma-separated stronger runs that see, in turn, the items the run abstains "
                        "on; humans take the rest (each stage calibrated at the same alpha and delta)")
    m.add_argument("--stage-costs", metavar="C,...,H",
                   help="--cascade: cost per item of the run, of each cascade run and of a person, in one unit "
                        "(e.g. 0.001,0.01,0.5)")
    m.add_argument("--conformal", type=float, metavar="LEVEL",
                   help="add split conformal intervals for each item's human score from the judge's (e.g. 0.9), "
                        "calibrated on --calibration-docs random documents, snapped to the points the human score "
                        "takes: coverage and mean width on the other documents, per system too, and the interval "
                        "midpoint's correlation with the human score")
    m.add_argument("--calibrate", choices=["isotonic"],
                   help="add an isotonic map judge -> human fitted on --calibration-docs random documents: its "
                        "mean absolute error on the others, per system fitted on the other systems (transfer), and "
                        "PPI++ with the calibration documents rated, the cross-fitted map against the raw judge "
                        "as the predictor")
    m.add_argument("--stratified-plan", type=int, metavar="N",
                   help="binary dimensions: add a plan of N human labels on the documents --calibration-docs leaves "
                        "out, stratified by the judge's verdict (Neyman allocation, inverse-probability weights; "
                        "each stratum's positive share from the calibration documents) and its saving against "
                        "simple random sampling")


def _check(args: argparse.Namespace) -> None:
    if not (0 < args.alpha < 1 and 0 < args.delta < 1):
        raise SystemExit(f"meta --selective: --alpha and --delta must lie strictly between 0 and 1 "
                         f"(got {args.alpha:g}, {args.delta:g})")
    if args.tolerance < 0:
        raise SystemExit(f"meta --selective: --tolerance must be 0 or more (got {args.tolerance:g})")
    if args.conformal is not None and not 0 < args.conformal < 1:
        raise SystemExit(f"meta --conformal: LEVEL must lie strictly between 0 and 1 (got {args.conformal:g})")
    if getattr(args, "stratified_plan", None) is not None and args.stratified_plan < 1:
        raise SystemExit(f"meta --stratified-plan: N must be 1 or more (got {args.stratified_plan})")


def extend_meta_report(report: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Add ``selective``, ``conformal`` and ``calibration`` to each dimension of ``meta``'s report, as asked (in
    place). Conformal intervals and the calibration map are for ratings: a pairwise or labelled dimension has
    neither block."""
    wanted = getattr(args, "selective", False) or getattr(args, "conformal", None) is not None \
        or getattr(args, "calibrate", None) or getattr(args, "stratified_plan", None) is not None
    if not wanted:
        return report
    _check(args)
    dataset = runs_mod.get_dataset(args.dataset)
    run = runs_mod.load_run(args.run, parse=args.parse)
    jury = [runs_mod.load_run(r.strip(), parse=args.parse)
            for r in (args.selective_jury or "").split(",") if r.strip()]
    n_docs = dataset.items["doc_id"].nunique()
    n_cal = args.calibration_docs if args.calibration_docs is not None else n_docs // 2
    for dim, entry in report["dimensions"].items():
        try:
            _add_blocks(entry, dataset, run, dim, args, n_cal, jury)
        except ValueError as e:
            raise SystemExit(f"meta: {e}") from None
    return report


def _add_blocks(entry: dict, dataset: Dataset, run: Run, dim: str, args: argparse.Namespace, n_cal: int,
                jury: list[Run]) -> None:
    common = dict(calibration_docs=n_cal, seed=args.seed)
    if args.selective:
        res = guarantees.selective(dataset, run, dim, alpha=args.alpha, delta=args.delta,
                                   tolerance=args.tolerance, jury=[m for m in jury if dim in m.dimensions] or None,
                                   **common)
        entry["selective"] = to_json(res.as_dict())
        if args.cascade:
            entry["selective"]["cascade"] = _cascade(dataset, run, dim, args, n_cal)
    rating = "pairwise" not in entry and not dataset.dimension(dim).is_categorical
    if args.conformal is not None and rating:
        block = guarantees.conformal(dataset, run, dim, level=args.conformal, **common)
        block.pop("intervals")
        entry["conformal"] = to_json(block)
    if args.calibrate and rating:
        entry["calibration"] = to_json(guarantees.isotonic_calibration(dataset, run, dim, **common))
        entry["calibration"]["ppi"] = to_json(guarantees.ppi_with_map(dataset, run, dim, **common))
    if getattr(args, "stratified_plan", None) is not None and dataset.dimension(dim).kind == "binary":
        entry["stratified_plan"] = to_json(guarantees.stratified_plan(dataset, run, dim, n_labels=args.stratified_plan,
                                                                      **common))


def _cascade(dataset: Dataset, run: Run, dim: str, args: argparse.Namespace, n_cal: int) -> object:
    ids = [r.strip() for r in args.cascade.split(",") if r.strip()]
    members = [run] + [runs_mod.load_run(r, parse=args.parse) for r in ids]
    try:
        costs = [float(c) for c in (args.stage_costs or "").split(",") if c.strip()]
    except ValueError:
        raise SystemExit(f"meta --stage-costs: numbers separated by commas, got {args.stage_costs!r}") from None
    if len(costs) != len(members) + 1:
        raise SystemExit(f"meta --cascade: --stage-costs needs {len(members) + 1} numbers (the run, "
                         f"{len(ids)} cascade run(s), a person), got {len(costs)}")
    out = guarantees.cascade(dataset, members, dim, alpha=args.alpha, delta=args.delta, calibration_docs=n_cal,
                             seed=args.seed, costs=costs[:-1], human_cost=costs[-1], tolerance=args.tolerance)
    return to_json(out)


def print_blocks(report: dict[str, Any]) -> None:
    """The selective blocks in words (``meta`` without --json)."""
    for dim, e in report["dimensions"].items():
        s = e.get("selective")
        if s:
            print(f"\nselective evaluation of {dim} (confidence: {s['confidence'] or 'none'}; agreement: "
                  f"{s['agreement']}; {s['calibration_docs']} calibration / {s['test_docs']} held-out documents):")
            print(f"  {s['sentence']}")
            if s["abstained"]:
                print(f"  abstained on {len(s['abstained'])} held-out items")
            for st in (s.get("cascade") or {}).get("stages", []):
                print(f"  cascade {st['stage']}: threshold {st['threshold']}, keeps {st['kept']} of the "
                      f"{st['reached']} items reaching it (cost {st['cost_per_item']:g} per item)")
            if s.get("cascade"):
                k = s["cascade"]
                print(f"  humans: {k['to_humans']} of {k['test_items']} items; cost per item {_f(k['cost_per_item'])}")
        c = e.get("conformal")
        if c:
            print(f"\nconformal intervals for {dim} at level {c['level']:g}: coverage {_f(c['coverage'])}, mean "
                  f"width {_f(c['mean_width'])} on {c['test_items']} items of {c['test_docs']} held-out documents; "
                  f"midpoint correlation {_f(c['midpoint_correlation'])} (judge {_f(c['judge_correlation'])})")
            if c["note"]:
                print(f"  {c['note']}")
        k = e.get("calibration")
        if k:
            print(f"\nisotonic map for {dim}: mean absolute error {_f(k['mae_mapped'])} (judge "
                  f"{_f(k['mae_judge'])}, calibration mean {_f(k['mae_constant'])}); transfer to "
                  f"{len(k['transfer'])} systems fitted on the others")


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"
