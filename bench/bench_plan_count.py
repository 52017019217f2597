"""Issue 21, item 2: what opening a link to the largest Score plan costs, counted (``runner.count_requests``, what
the page shows first) against built (every task and request made, the first step of ``runner.estimate``, which the
page runs only when asked). The plan: h2h on every pair and every dimension of SummEval, 96,000 requests.

    PYTHONPATH=. python bench/bench_plan_count.py [--repeat N] [--estimate]

``--estimate`` also times the whole estimate (request keys, cache lookups, tokens, cached prefixes) on an empty
store, what "Estimate calls and cost" runs: about a minute on one core.
"""

from __future__ import annotations

import argparse
import time

from evalcore.datasets import load_dataset
from evalcore.judge import runner
from evalcore.judge.spec import ScoringSpec, default_spec


def timed(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def build(spec: ScoringSpec) -> int:
    m, dims, crit, planned = runner.resolve(spec.method, spec.dimensions, spec.criteria, spec.config)
    tasks = runner.build_tasks(spec.dataset, m, dims, limit=spec.limit, pairs=spec.pairs)
    return sum(len(m.build_requests(t, crit[t.dimension], planned)) for t in tasks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--estimate", action="store_true", help="also time runner.estimate (slow)")
    args = ap.parse_args()
    ds = load_dataset("summeval")
    spec = default_spec(ds, "h2h", ds.dimension_names)
    t_count, n_count = timed(lambda: runner.count_requests(spec), args.repeat)
    t_build, n_build = timed(lambda: build(spec), args.repeat)
    print(f"{'plan':<40} h2h, every pair, {len(ds.dimension_names)} dimensions, SummEval")
    print(f"{'requests counted (count_requests)':<40} {n_count:>10,}   {t_count:8.3f} s")
    print(f"{'requests built (tasks + requests)':<40} {n_build:>10,}   {t_build:8.3f} s")
    print(f"{'same count':<40} {str(n_count == n_build):>10}")
    print(f"{'built / counted time':<40} {t_build / t_count:10.0f}x")
    if args.estimate:
        import tempfile
        from pathlib import Path

        from evalcore.judge.client import Endpoint
        from evalcore.judge.spec import EngineOptions
        from evalcore.store import Store

        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "bench.db")
            options = EngineOptions(Endpoint("http://127.0.0.1:9/v1", "bench-model", provider="vllm"))
            t_est, est = timed(lambda: runner.estimate(spec, options, store=store), 1)
            store.close()
        print(f"{'whole estimate (runner.estimate)':<40} {est.requests:>10,}   {t_est:8.3f} s")
        print(f"{'estimate / counted time':<40} {t_est / t_count:10.0f}x")


if __name__ == "__main__":
    main()
