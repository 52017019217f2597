"""How far this checkout's correlation intervals moved from another checkout's, on every bundled run.

    python bench/bench_meta_ci_drift.py --against /path/to/other/checkout [--resamples 1000]

For every bundled dataset, run and judged dimension, the full table (3 levels x 3 coefficients, 1,000-resample BCa
over documents, seed 0) is computed by both checkouts (each in its own process, importing its own evalcore), and
the largest |difference| of ci_low / ci_high is printed next to the Monte-Carlo standard error of a 2.5% quantile
of that many resamples (from the spread of the resampled values: sqrt(p (1 - p) / B) / phi(z_p) x sd, normal
approximation), i.e. the noise a change of seed alone would cause.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

CHILD = r"""
import json, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
from evalcore import datasets
from evalcore.meta import correlation_table
from evalcore.runs import score_frame
out = {}
for ds_id in datasets.DATASET_IDS:
    ds = datasets.load_dataset(ds_id)
    for listed in datasets.list_bundled_runs(ds_id):
        run = datasets.load_bundled_run(listed.run_id)
        if run.is_pairwise:
            continue
        for dim in sorted(set(run.judgments["dimension"]) & set(ds.dimension_names)):
            try:
                frame = score_frame(ds, run, dim)
            except Exception:
                continue
            if len(frame) < 3 or frame["judge"].notna().sum() < 3:
                continue
            t = correlation_table(frame, n_resamples=int(sys.argv[2]))
            for r in t.itertuples():
                out[f"{run.run_id} {dim} {r.level} {r.coefficient}"] = [r.statistic, r.ci_low, r.ci_high]
print(json.dumps(out))
"""


def tables(root: str, resamples: int) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, root, str(resamples)], capture_output=True, text=True,
                         cwd=root)
    if res.returncode:
        raise SystemExit(f"{root}: {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", required=True)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    here = str(Path(__file__).resolve().parents[1])
    new, old = tables(here, args.resamples), tables(args.against, args.resamples)
    common = sorted(set(new) & set(old))
    diffs = []
    for k in common:
        for i in (1, 2):
            a, b = new[k][i], old[k][i]
            if a is None or b is None or (np.isnan(a) and np.isnan(b)):
                continue
            diffs.append((abs(a - b), k, "ci_low" if i == 1 else "ci_high"))
    diffs.sort(reverse=True)
    print(f"{len(common)} cells in both checkouts ({len(set(new) ^ set(old))} in one only); "
          f"{args.resamples} resamples")
    print(f"largest |difference| of an interval end: {diffs[0][0]:.3g} ({diffs[0][1]} {diffs[0][2]})"
          if diffs else "no interval ends to compare")
    print(f"ends differing by more than 1e-9: {sum(d > 1e-9 for d, _, _ in diffs)} of {len(diffs)}")
    sd_like = [abs(new[k][2] - new[k][1]) / 3.92 for k in common if new[k][1] is not None]
    p = 0.025
    mc = float(np.sqrt(p * (1 - p) / args.resamples) / 0.0584 * np.median(sd_like)) if sd_like else float("nan")
    print(f"Monte-Carlo standard error of an interval end (median cell, sd ~ width / 3.92): {mc:.3g}")


if __name__ == "__main__":
    main()
