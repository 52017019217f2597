"""What typing a model's name into the Score page costs the server: the page's estimate (requests counted, the plan
estimated, its blocks laid out: what ``pages/score.py`` computes on every change of the model box) for the bundled
SummEval and the page's default method and dimension, first for one model, then for other names typed one after
another (warm: the same plan, another model), with the plan cache (``runner.estimate``'s default) and without it
(``reuse=False``: the plan counted and every request built again, as before the cache), one after the other in
one process.

    PYTHONPATH=. python bench/bench_score_typing.py [--names 8] [--dimensions 1] [--method NAME]

Each figure is the wall time of the computation in this process (``time.perf_counter``), on an empty store (no
cache hits: a name being typed has none). Target: a warm change under 1 s of server time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evalcore.datasets import load_dataset
from evalcore.judge import runner
from evalcore.judge.client import Endpoint
from evalcore.judge.spec import EngineOptions, ScoringSpec, default_spec
from evalcore.store import Store
from evalcore.views import score as score_views

TARGET_WARM_S = 1.0
NAMES = ("gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o4-mini", "gpt-5", "gpt-5-mini",
         "gpt-5-nano", "my-deployment", "gpt-4-turbo", "gpt-3.5-turbo")


def page_estimate(spec: ScoringSpec, model: str, store: Store, *, reuse: bool) -> runner.Estimate:
    """What the Score page computes for the estimate when the model's name changes: the plan's request count, its
    estimate for this model, and the blocks that show it."""
    endpoint = Endpoint("https://api.openai.com/v1", model)
    runner.count_requests(spec, reuse=reuse)
    est = runner.estimate(spec, EngineOptions(endpoint), store=store, reuse=reuse)
    score_views.estimate_blocks(est, use_batch=False)
    score_views.start_action(est, use_batch=False, running=False)
    return est


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run(spec: ScoringSpec, store: Store, names: list[str], *, reuse: bool) -> tuple[float, float, list[float]]:
    """(first estimate, median of the warm changes, the warm changes) with or without the plan cache."""
    runner.PLAN_CACHE.clear()
    first = timed(lambda: page_estimate(spec, names[0], store, reuse=reuse))
    warm = [timed(lambda: page_estimate(spec, name, store, reuse=reuse)) for name in names[1:]]
    return first, statistics.median(warm), warm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", type=int, default=8, help="model names typed one after another (2 or more)")
    ap.add_argument("--dimensions", type=int, default=1, help="the first N dimensions (the page opens on one)")
    ap.add_argument("--method", default=None, help="default: the page's default method for SummEval")
    args = ap.parse_args()
    ds = load_dataset("summeval")
    method = args.method or score_views.default_method(ds)
    spec = default_spec(ds, method, ds.dimension_names[:args.dimensions])
    names = [NAMES[i % len(NAMES)] + ("" if i < len(NAMES) else f"-{i}") for i in range(max(2, args.names))]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        est = page_estimate(spec, names[0], store, reuse=False)
        same = all(page_estimate(spec, n, store, reuse=True) == page_estimate(spec, n, store, reuse=False)
                   for n in names[:3])
        before = run(spec, store, names, reuse=False)
        after = run(spec, store, names, reuse=True)
        store.close()
    print(f"plan: SummEval, {method}, {', '.join(spec.dimensions)}: {len(ds.items):,} items, {est.requests:,} "
          f"requests ({est.calls:,} to send), {est.prompt_tokens:,} prompt tokens")
    print(f"same estimate cached and afresh: {same}")
    print(f"{'':<44}{'uncached':>12}{'cached':>12}{'ratio':>9}")
    print(f"{'first estimate (s)':<44}{before[0]:>12.3f}{after[0]:>12.3f}{before[0] / after[0]:>8.1f}x")
    label = f"model name changed, warm, median of {len(names) - 1} (s)"
    print(f"{label:<44}{before[1]:>12.3f}{after[1]:>12.3f}{before[1] / after[1]:>8.1f}x")
    print(f"{'  each warm change, cached (s)':<44}" + " ".join(f"{t:.3f}" for t in after[2]))
    print(f"warm change under {TARGET_WARM_S:g} s of server time: {after[1] < TARGET_WARM_S}")


if __name__ == "__main__":
    main()
