"""Meta-evaluation at the scale of modern studies: the full 9-cell correlation table (dataset / summary / system level x
Pearson / Spearman / Kendall tau-b), each with a 1,000-resample BCa document-bootstrap interval, on 10,000 /
200,000 / 1,000,000 items; next to it scipy.stats.bootstrap (BCa, resampling documents) for the dataset-level
Spearman cell, the reference a researcher would otherwise reach for.

    python bench/bench_meta_scale.py [--sizes 10000 200000 1000000] [--resamples 1000] [--scipy-budget 120]

Data (seeded): 10 systems; n_items / 10 documents, each with one output per system. Human score = one 1-5 rating
(system quality + noise, rounded); judge score = continuous (human + system bias + noise, as G-Eval's
probability-weighted scores are). Each size runs in its own process so the peak RSS printed is that size's alone.
Targets on the 2-core machine: 200,000 items under 10 s, 1,000,000 under 60 s and under 2 GB.

scipy.stats.bootstrap needs the statistic of each resample of documents: it resamples document indices (paired,
vectorized=False) and the statistic expands them to items and calls scipy.stats.spearmanr; its BCa jackknife is
leave-one-document-out. Its time is measured where it is expected to finish within --scipy-budget seconds
(extrapolated from one spearmanr call: (resamples + documents) calls), else "skipped (est. X s)".
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N_SYSTEMS = 10
TARGETS = {200_000: 10.0, 1_000_000: 60.0}
RSS_TARGET_GB = 2.0


def synthetic_frame(n_items: int, seed: int = 0) -> pd.DataFrame:
    """n_items / 10 documents x 10 systems: 1-5 human ratings, continuous judge scores."""
    rng = np.random.default_rng(seed)
    n_docs = n_items // N_SYSTEMS
    doc = np.repeat(np.arange(n_docs), N_SYSTEMS)
    system = np.tile(np.arange(N_SYSTEMS), n_docs)
    quality = np.linspace(2.6, 4.0, N_SYSTEMS)
    difficulty = rng.normal(0, 0.5, n_docs)[doc]
    human = np.clip(np.round(quality[system] + difficulty + rng.normal(0, 0.8, len(doc))), 1, 5)
    bias = rng.normal(0, 0.2, N_SYSTEMS)[system]
    judge = np.clip(human + bias + rng.normal(0, 0.9, len(doc)), 1, 5)
    return pd.DataFrame({"item_id": np.arange(len(doc)), "doc_id": doc, "system_id": system,
                         "judge": judge, "human": human})


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2


def scipy_reference(frame: pd.DataFrame, n_resamples: int, budget_s: float) -> dict:
    import scipy.stats as st

    x, y, doc = frame["judge"].to_numpy(), frame["human"].to_numpy(), frame["doc_id"].to_numpy()
    n_docs = int(doc.max()) + 1
    starts = np.searchsorted(doc, np.arange(n_docs))  # items are grouped by document
    t0 = time.perf_counter()
    st.spearmanr(x, y)
    one = time.perf_counter() - t0
    est = one * (n_resamples + n_docs)
    if est > budget_s:
        return {"skipped": f"skipped (est. {est:,.0f} s)"}

    def statistic(docs):
        items = (starts[np.asarray(docs)][:, None] + np.arange(N_SYSTEMS)).ravel()
        return st.spearmanr(x[items], y[items]).statistic

    t0 = time.perf_counter()
    res = st.bootstrap((np.arange(n_docs),), statistic, n_resamples=n_resamples, vectorized=False,
                       method="BCa", random_state=0)
    return {"seconds": time.perf_counter() - t0, "ci": [float(res.confidence_interval.low),
                                                        float(res.confidence_interval.high)]}


def run_size(n_items: int, n_resamples: int, budget_s: float) -> dict:
    from evalcore.meta import correlation_table

    frame = synthetic_frame(n_items)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    table = correlation_table(frame, n_resamples=n_resamples)
    seconds = time.perf_counter() - t0
    load = [load_before, os.getloadavg()[0]]
    rss = peak_rss_gb()
    rows = table[["level", "coefficient", "statistic", "ci_low", "ci_high", "ci_method"]].to_dict("records")
    ref = scipy_reference(frame, n_resamples, budget_s)
    return {"n_items": n_items, "seconds": seconds, "peak_rss_gb": rss, "rows": rows, "scipy": ref, "load": load}


def report(r: dict) -> None:
    n = r["n_items"]
    target = TARGETS.get(n)
    verdict = "" if target is None else (
        f"   target {target:.0f} s: {'ok' if r['seconds'] <= target else 'OVER TARGET'}"
        f" (ratio {r['seconds'] / target:.2f})")
    print(f"\n{n:>9,} items ({n // N_SYSTEMS:,} documents x {N_SYSTEMS} systems): 9 cells in {r['seconds']:.2f} s, "
          f"peak RSS {r['peak_rss_gb']:.2f} GB (target {RSS_TARGET_GB:.0f} GB){verdict}")
    print(f"   load average (1 min) on {os.cpu_count()} cores: {r['load'][0]:.1f} before, {r['load'][1]:.1f} after "
          f"(other processes' work is in every figure)")
    for row in r["rows"]:
        print(f"   {row['level']:<8} {row['coefficient']:<9} {row['statistic']:+.4f}  "
              f"[{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]  {row['ci_method']}")
    ref = r["scipy"]
    if "skipped" in ref:
        print(f"   scipy.stats.bootstrap (BCa) dataset spearman: {ref['skipped']}")
    else:
        ours = next(x for x in r["rows"] if x["level"] == "dataset" and x["coefficient"] == "spearman")
        print(f"   scipy.stats.bootstrap (BCa) dataset spearman: [{ref['ci'][0]:+.4f}, {ref['ci'][1]:+.4f}] in "
              f"{ref['seconds']:.2f} s  (evalcore's cell above: [{ours['ci_low']:+.4f}, {ours['ci_high']:+.4f}])")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 200_000, 1_000_000])
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--scipy-budget", type=float, default=120.0)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child process: one size, JSON on stdout
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_size(args.one, args.resamples, args.scipy_budget)))
        return
    print(f"bench_meta_scale: {args.resamples} resamples, BCa, 95%; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores (others' work slows every figure; scipy's time is a yardstick of it)")
    for n in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--resamples", str(args.resamples),
                              "--scipy-budget", str(args.scipy_budget)], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"\n{n:>9,} items: failed\n{out.stderr[-2000:]}")
            continue
        report(json.loads(out.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
