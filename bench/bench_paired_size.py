"""The size of the paired tests of two judges by the number of documents, simulated.

Two equally weak judges of the same items (the same distribution of scores: exchangeable), 16 systems, integer 1-5
scales, errors clustered by document as a real judge's are. For each number of documents, the share of data sets in
which each paired test calls them different at 5% (two-sided):

- the paired bootstrap's BCa interval over documents excludes 0 (the Compare page's default test);
- the permutation test swapping the two judges on whole documents rejects;
- both (the judge-improvement loop's verdict, evalcore.align.loop.compare_on_test).

Run: python bench/bench_paired_size.py [--sets 200] [--docs 6,10,20,40,80] [--resamples 500]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.meta.compare import paired_difference  # noqa: E402
from evalcore.testing.simulate import exchangeable_judges  # noqa: E402


def size_at(n_docs: int, sets: int, resamples: int) -> tuple[float, float, float]:
    rng = np.random.default_rng(1000 + n_docs)
    boot = perm = both = 0
    for i in range(sets):
        a, b = exchangeable_judges(n_docs, rng)
        r = paired_difference(a, b, n_resamples=resamples, random_state=i, method="permutation")
        ci_rejects = r.ci_low > 0 or r.ci_high < 0
        boot += ci_rejects
        perm += r.pvalue < 0.05
        both += ci_rejects and r.pvalue < 0.05
    return boot / sets, perm / sets, both / sets


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=200)
    ap.add_argument("--docs", default="6,10,20,40,80")
    ap.add_argument("--resamples", type=int, default=500)
    args = ap.parse_args(argv)
    se = (0.05 * 0.95 / args.sets) ** 0.5
    print(f"equally weak judges, 16 systems, {args.sets} data sets per row (Monte-Carlo SE at 5%: {se:.3f})")
    print(f"{'documents':>10} {'bootstrap CI':>13} {'doc swaps':>10} {'both':>6} {'s/row':>7}")
    for d in (int(x) for x in args.docs.split(",")):
        t0 = time.perf_counter()
        boot, perm, both = size_at(d, args.sets, args.resamples)
        print(f"{d:>10} {boot:>13.3f} {perm:>10.3f} {both:>6.3f} {time.perf_counter() - t0:>7.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
