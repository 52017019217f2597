"""Selective evaluation's guarantee by simulation (Jung, Brahman & Choi 2025, fixed-sequence testing with a
Clopper-Pearson bound): over many calibration sets, how often the kept items' true disagreement rate exceeds alpha
(the guarantee says at most delta of them), and the coverage the certified threshold buys.

The simulated judge: confidence c uniform on [0, 1], agreement with the humans with probability 0.5 + 0.5 c, so the
kept items' true disagreement rate at threshold lambda is (1 - lambda) / 4 and their share is 1 - lambda; the
loosest threshold that truly meets alpha is 1 - 4 alpha (coverage 4 alpha). A second judge has confidences on five
levels only (0.2, 0.4, ..., 1.0; a jury of five or five draws) with agreement probability 0.55 + 0.4 c.

    python bench/bench_selective.py [--splits 1000]
"""

from __future__ import annotations

import argparse

import numpy as np

from evalcore.meta.selective import choose_threshold


def continuous(rng, n):
    c = rng.uniform(size=n)
    return c, rng.uniform(size=n) < 0.5 + 0.5 * c


def continuous_truth(lam):
    return (1 - lam) / 4, 1 - lam  # true disagreement rate of the kept items, true coverage


def levels(rng, n):
    c = rng.integers(1, 6, size=n) / 5
    return c, rng.uniform(size=n) < 0.55 + 0.4 * c


def levels_truth(lam):
    kept = np.arange(1, 6)[np.arange(1, 6) / 5 >= lam - 1e-12] / 5
    return float(np.mean(0.45 - 0.4 * kept)), len(kept) / 5


JUDGES = {"continuous": (continuous, continuous_truth), "five levels": (levels, levels_truth)}


def row(name, n_cal, alpha, delta, splits, seed):
    draw, truth = JUDGES[name]
    rng = np.random.default_rng(seed)
    viol, covs, none = 0, [], 0
    for _ in range(splits):
        c, a = draw(rng, n_cal)
        t = choose_threshold(c, a, alpha=alpha, delta=delta).threshold
        if t is None:
            none += 1
            covs.append(0.0)
            continue
        risk, cov = truth(t)
        viol += risk > alpha
        covs.append(cov)
    return viol / splits, float(np.mean(covs)), none / splits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", type=int, default=1000)
    args = ap.parse_args()
    print(f"{args.splits} calibration sets per row; violation: true disagreement of kept items > alpha")
    print(f"{'judge':<12} {'n_cal':>6} {'alpha':>6} {'delta':>6} {'violations':>11} {'coverage':>9} "
          f"{'best coverage':>14} {'none certified':>15}")
    for name in JUDGES:
        for n_cal in (100, 500):
            for alpha in (0.1, 0.2):
                delta = 0.1
                v, cov, none = row(name, n_cal, alpha, delta, args.splits, seed=n_cal)
                best = 4 * alpha if name == "continuous" else _best_levels(alpha)
                print(f"{name:<12} {n_cal:>6} {alpha:>6} {delta:>6} {v:>11.3f} {cov:>9.3f} {best:>14.3f} "
                      f"{none:>15.3f}")


def _best_levels(alpha):
    ok = [levels_truth(lam)[1] for lam in np.arange(1, 6)[::-1] / 5 if levels_truth(lam)[0] <= alpha]
    return max(ok) if ok else 0.0


if __name__ == "__main__":
    main()
