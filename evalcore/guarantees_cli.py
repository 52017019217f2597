"""Guarantees on the command line: ``meta --selective`` (selective evaluation with a guarantee, Jung, Brahman & Choi
2025: evalcore.meta.selective through evalcore.analyses.guarantees) adds a ``selective`` block per dimension."""

from __future__ import annotations

import argparse
from typing import Any

from evalcore import runs as runs_mod
from evalcore.analyses import guarantees
from evalcore.meta.results import to_json
from evalcore.meta.selective import DEFAULT_TOLERANCE


def add_meta_arguments(m) -> None:
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


def _check(args: argparse.Namespace) -> None:
    if not (0 < args.alpha < 1 and 0 < args.delta < 1):
        raise SystemExit(f"meta --selective: --alpha and --delta must lie strictly between 0 and 1 "
                         f"(got {args.alpha:g}, {args.delta:g})")
    if args.tolerance < 0:
        raise SystemExit(f"meta --selective: --tolerance must be 0 or more (got {args.tolerance:g})")


def extend_meta_report(report: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Add ``selective`` to each dimension of ``meta``'s report when --selective is given (in place)."""
    if not getattr(args, "selective", False):
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
            res = guarantees.selective(dataset, run, dim, alpha=args.alpha, delta=args.delta,
                                       calibration_docs=n_cal, seed=args.seed, tolerance=args.tolerance,
                                       jury=[m for m in jury if dim in m.dimensions] or None)
        except ValueError as e:
            raise SystemExit(f"meta --selective: {e}") from None
        entry["selective"] = to_json(res.as_dict())
    return report


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
