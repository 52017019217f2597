"""Speed of the annotators' Krippendorff's alpha with its bootstrap interval (evalcore.meta.agreement), before and
after the rating-pattern engine.

    python bench/bench_alpha.py [--sizes 1000 5000 20000 100000] [--old-max-items 20000] [--level interval]
                                [--resamples 1000] [--repeat 1]

Data: synthetic, 3 annotators on a 1-5 scale (true score + -1/0/+1 noise, clipped), 10% of ratings missing. Each
row times ``krippendorff_alpha(..., n_resamples=1000)`` (point estimate + BCa interval, the Data page's call) and the
previous implementation, kept below as ``old_krippendorff_alpha`` (the krippendorff package for the estimate, a
dense per-item coincidence tensor for each resample, and a leave-one-out jackknife through an items x items weight
matrix: quadratic in items). The old path is skipped above ``--old-max-items`` (at 100,000 items its weight
matrices alone take about 1.6 GB); the ratio column then says "skipped". |diff| is the largest difference between
the two results (estimate, interval ends): both draw the same resamples from the same seed.

A last row times continuous ratings (many distinct values: the exact interval-level closed form, no binning), which
the old path cannot do at that size (its per-item tensor is items x values^2).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.meta.agreement import krippendorff_alpha, reliability_matrix
from evalcore.meta.results import Estimate
from evalcore.meta.correlation import bootstrap_interval
from evalcore.meta.resampling import jackknife_values

TARGET_S = 2.0  # 20,000 items, estimate + 1,000-resample CI
DIMENSION = "coherence"


# ---------------------------------------------------------------------------------------------- the old code path


def old_alpha_from_unit_weights(data, domain, weights, level):
    """The previous alpha_from_unit_weights: a units x v x v coincidence tensor, resamples x units weights."""
    values = np.asarray(domain, dtype=float)
    v = values.size
    idx = np.searchsorted(values, data)
    counts = np.zeros((data.shape[1], v))
    for row_idx, row in zip(idx, data):
        ok = ~np.isnan(row)
        np.add.at(counts, (np.nonzero(ok)[0], row_idx[ok]), 1.0)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m, w = counts[pairable], m[pairable], np.asarray(weights, dtype=float)[:, pairable]
    per_unit = (counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(v)[None]) / (m - 1)[:, None, None]
    o = (w @ per_unit.reshape(len(m), v * v)).reshape(-1, v, v)
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    c, k = np.meshgrid(values, values, indexing="ij")
    if level == "interval":
        delta = np.broadcast_to((c - k) ** 2, o.shape)
    elif level == "nominal":
        delta = np.broadcast_to((c != k).astype(float), o.shape)
    elif level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(c + k == 0, 0.0, ((c - k) / (c + k)) ** 2)
        delta = np.broadcast_to(r, o.shape)
    else:
        cum = np.cumsum(n_c, axis=1)
        grid = np.meshgrid(np.arange(v), np.arange(v), indexing="ij")
        lo_i, hi_i = np.minimum(*grid), np.maximum(*grid)
        between = cum[:, hi_i] - cum[:, lo_i] + n_c[:, lo_i]
        delta = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2) ** 2
    observed = (o * delta).sum(axis=(1, 2))
    expected = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    alpha[(n_c > 0).sum(axis=1) < 2] = np.nan
    return alpha


def old_krippendorff_alpha(annotations, dimension, *, level_of_measurement="interval", n_resamples=0,
                           confidence_level=0.95, random_state=0, ci_method="bca") -> Estimate:
    data = reliability_matrix(annotations, dimension).to_numpy(dtype=float)
    domain = np.unique(data[~np.isnan(data)])
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    alpha = float(krippendorff.alpha(reliability_data=data, value_domain=domain,
                                     level_of_measurement=level_of_measurement))
    lo = hi = float("nan")
    used = ci_method
    if n_resamples > 0:
        rng = np.random.default_rng(random_state)
        k = data.shape[1]
        weights = np.stack([np.bincount(rng.integers(0, k, size=k), minlength=k) for _ in range(n_resamples)])
        boot = old_alpha_from_unit_weights(data, domain, weights, level_of_measurement)
        jack = (jackknife_values(k, lambda w: old_alpha_from_unit_weights(data, domain, w, level_of_measurement))
                if ci_method == "bca" else None)
        lo, hi, _, used = bootstrap_interval(boot, confidence_level=confidence_level, method=ci_method,
                                             estimate=alpha, jackknife=jack)
    return Estimate(statistic=alpha, ci_low=lo, ci_high=hi, n=int(pairable.sum()), n_annotators=data.shape[0],
                    n_resamples=n_resamples, method=used)


# ------------------------------------------------------------------------------------------------------ the data


def synthetic_annotations(n_items: int, *, continuous: bool = False, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    if continuous:
        values = np.round(rng.normal(50, 10, n_items)[None, :] + rng.normal(0, 5, (3, n_items)), 3)
    else:
        true = rng.integers(1, 6, n_items)
        values = np.clip(true[None, :] + rng.integers(-1, 2, (3, n_items)), 1, 5).astype(float)
    values[rng.random(values.shape) < 0.10] = np.nan
    a, i = np.nonzero(~np.isnan(values))
    return pd.DataFrame({"item_id": [f"item{j:06d}" for j in i], "dimension": DIMENSION,
                         "annotator": [f"annotator{x + 1}" for x in a], "group": "expert", "value": values[a, i]})


def timed(fn, repeat: int):
    best, result = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000, 100000])
    ap.add_argument("--old-max-items", type=int, default=20000)
    ap.add_argument("--level", default="interval", choices=["interval", "ordinal", "nominal", "ratio"])
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=1, help="best of this many runs per timing")
    args = ap.parse_args()
    kw = {"level_of_measurement": args.level, "n_resamples": args.resamples, "random_state": 0}
    print(f"Krippendorff's alpha ({args.level}) + {args.resamples}-resample BCa interval; 3 annotators, 1-5 scale, "
          "10% missing")
    print(f"{'items':>8} {'before s':>10} {'after s':>9} {'ratio':>8} {'|diff|':>9}   alpha [95% CI] (after)")
    for n in args.sizes:
        ann = synthetic_annotations(n)
        t_new, new = timed(lambda ann=ann: krippendorff_alpha(ann, DIMENSION, **kw), args.repeat)
        if n <= args.old_max_items:
            t_old, old = timed(lambda ann=ann: old_krippendorff_alpha(ann, DIMENSION, **kw), args.repeat)
            diff = max(abs(a - b) for a, b in zip((new.statistic, new.ci_low, new.ci_high),
                                                  (old.statistic, old.ci_low, old.ci_high)))
            before, ratio, d = f"{t_old:10.3f}", f"{t_old / t_new:7.1f}x", f"{diff:9.1e}"
        else:
            before, ratio, d = f"{'skipped':>10}", f"{'-':>8}", f"{'-':>9}"
        verdict = ""
        if n == 20000:
            verdict = f"   target {TARGET_S:.1f} s: {'ok' if t_new <= TARGET_S else 'OVER TARGET'}"
        print(f"{n:8d} {before} {t_new:9.3f} {ratio} {d}   {new.statistic:.4f} [{new.ci_low:.4f}, {new.ci_high:.4f}] "
              f"{new.method}{verdict}")
    if args.level == "interval":
        ann = synthetic_annotations(20000, continuous=True)
        t_new, new = timed(lambda ann=ann: krippendorff_alpha(ann, DIMENSION, **kw), args.repeat)
        distinct = ann["value"].nunique()
        print(f"{20000:8d} {'n/a':>10} {t_new:9.3f} {'-':>8} {'-':>9}   {new.statistic:.4f} [{new.ci_low:.4f}, "
              f"{new.ci_high:.4f}] {new.method}   continuous ratings ({distinct} distinct values)")


if __name__ == "__main__":
    main()
