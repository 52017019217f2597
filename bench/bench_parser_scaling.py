"""The score parser's time against the reply's length, on hostile replies with no line break: parse time at each
size and the ratio per doubling of the size (about 2 when linear, about 4 when quadratic).

    python bench/bench_parser_scaling.py [--sizes 100000 200000 400000 1000000] [--before 200000]

"after" is this checkout's parser, read without its length bound (the private readers the public functions call
once a reply is within ``parsers.MAX_REPLY_CHARS``), so that the scaling itself shows; the last line times the
public parser on the largest reply (refused by its length). ``--before N`` also times commit 051be06's parser
(read from git) on the sizes up to N characters: it was quadratic, so larger sizes take minutes.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore import parsers  # noqa: E402

# The replies of the review, and the paper rules' worst cases.
REPLIES = {
    "'Score: 3 ' repeated (robust)": ("Score: 3 ", "robust_rts"),
    "'if Score: 3 ' repeated (robust)": ("if Score: 3 ", "robust_rts"),
    "'score ' repeated (RTS paper rules)": ("score ", "paper_rts"),
    "one word, no space (StarEval paper rule)": ("a", "paper_stars"),
}


def readers(module) -> dict[str, Callable[[str], object]]:
    """The readers without the length bound (this checkout's private functions; 051be06 had no bound)."""
    if hasattr(module, "MAX_REPLY_CHARS"):
        return {"robust_rts": lambda t: module._robust_score(t, (1, 5)), "paper_rts": module._rts_paper,
                "paper_stars": module._stars_paper}
    return {"robust_rts": lambda t: module.parse_rts(t), "paper_rts": lambda t: module.parse_rts(t, mode="paper"),
            "paper_stars": lambda t: module.parse_stars(t, mode="paper")}


def before_module():
    source = subprocess.run(["git", "show", "051be06:evalcore/parsers.py"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "parsers_051be06.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("parsers_051be06", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def timed(fn: Callable[[str], object], text: str) -> float:
    t = time.perf_counter()
    fn(text)
    return time.perf_counter() - t


def table(name: str, fn: Callable[[str], object], unit: str, sizes: list[int]) -> None:
    prev: tuple[int, float] | None = None
    for size in sizes:
        text = (unit * (size // len(unit) + 1))[:size]
        s = timed(fn, text)
        ratio = ""
        if prev is not None:  # the ratio per doubling: (t2 / t1) ** (1 / log2(n2 / n1))
            import math

            per_doubling = (s / prev[1]) ** (1 / math.log2(size / prev[0])) if prev[1] > 0 else float("nan")
            ratio = f"x{per_doubling:.2f} per doubling"
        print(f"  {name:7s} {size / 1000:8,.0f} KB {s * 1000:10,.1f} ms  {ratio}", flush=True)
        prev = (size, s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 200_000, 400_000, 1_000_000])
    ap.add_argument("--before", type=int, default=0, metavar="N",
                    help="also time commit 051be06's parser on the sizes up to N characters (0: not at all)")
    args = ap.parse_args(argv)
    after = readers(parsers)
    before = readers(before_module()) if args.before else None
    for title, (unit, kind) in REPLIES.items():
        print(title)
        if before is not None:
            table("before", before[kind], unit, [s for s in args.sizes if s <= args.before])
        table("after", after[kind], unit, args.sizes)
    big = "Score: 3 " * (max(args.sizes) // 9)
    t = timed(parsers.parse_rts, big)
    print(f"public parse_rts on {len(big):,} characters: {t * 1000:.3f} ms ({parsers.parse_rts(big).reason})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
