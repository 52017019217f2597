"""The Alt-Test below 30 items: how often does each one-annotator test reject a true null (its size), and how often
does it pass a better judge (its power)?

    python bench/bench_alt_test_size.py [--studies 4000] [--seed 0]

Each simulated annotator comparison draws n items' d = W^annotator - W^judge on {-1, 0, 1}: P(d = 0) = ties (the two
equally aligned with the other annotators), P(d = 1) - P(d = -1) = the true mean. Under the null's boundary the mean
is exactly epsilon, so a valid 5% test rejects in at most 5% of studies. Tests, each at the 5% level, H1: mean < eps:

- Wilcoxon: scipy.stats.wilcoxon(d - epsilon, alternative="less"), what the product used below 30 items before;
- t-test: scipy.stats.ttest_1samp(d, epsilon, alternative="less"), the authors' test, used below 30 items;
- exact: evalcore.meta.alt_test.exact_mean_test, the exact test of the mean offered below 30 items.

Then the power: a judge better than the annotator (true mean epsilon - 0.3, 60% ties). Figures are shares of studies;
with 4000 studies a share near 5% has a standard error of about 0.35 points.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import stats as sps

from evalcore.meta import alt_test as at

SIZES = (10, 20, 29)


def draw(rng: np.random.Generator, n: int, studies: int, mean: float, ties: float) -> np.ndarray:
    """(studies x n) draws of d on {-1, 0, 1} with P(d = 0) = ties and P(d = 1) - P(d = -1) = mean."""
    minus = (1 - ties - mean) / 2
    if minus < -1e-12 or minus + mean < -1e-12:
        raise ValueError(f"no distribution on -1, 0, 1 has mean {mean} and {ties} ties")
    return rng.choice([-1.0, 0.0, 1.0], size=(studies, n), p=[max(minus, 0.0), ties, max(minus + mean, 0.0)])


def rejection_rates(d: np.ndarray, eps: float, alpha: float = 0.05) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p_t = sps.ttest_1samp(d, eps, axis=1, alternative="less").pvalue
        # d has three values, so each test's p-value depends on the counts of -1, 0, 1 only: one call per count
        counts = np.stack([(d == v).sum(axis=1) for v in (-1.0, 0.0, 1.0)], axis=1)
        seen, inverse = np.unique(counts, axis=0, return_inverse=True)
        rows = [np.repeat([-1.0, 0.0, 1.0], c) for c in seen]
        p_w = np.array([sps.wilcoxon(r - eps, alternative="less").pvalue if np.any(r != eps) else np.nan
                        for r in rows])[np.ravel(inverse)]
    p_x = np.array([at.exact_mean_test(r, eps) for r in rows])[np.ravel(inverse)]
    return {name: float(np.mean(np.nan_to_num(p, nan=1.0) <= alpha))
            for name, p in (("Wilcoxon", p_w), ("t-test", p_t), ("exact", p_x))}


def table(title: str, rows: list[tuple[str, dict[str, float]]]) -> None:
    print(title, flush=True)
    print(f"   {'case':<34}{'Wilcoxon':>10}{'t-test':>10}{'exact':>10}")
    for case, r in rows:
        print(f"   {case:<34}" + "".join(f"{100 * r[k]:>9.1f}%" for k in ("Wilcoxon", "t-test", "exact")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    size_rows = []
    for eps in (0.2, 0.1):
        for ties in (0.5, 0.7, round(1 - eps, 2)):
            for n in SIZES:
                d = draw(rng, n, args.studies, eps, ties)
                size_rows.append((f"eps {eps:g}, {ties:.0%} ties, n {n}", rejection_rates(d, eps)))
    table(f"Size: rejections of a true null (mean d = epsilon), 5% level, {args.studies} studies per row", size_rows)
    worst = {k: max(r[k] for _, r in size_rows) for k in ("Wilcoxon", "t-test", "exact")}
    print("   largest over the rows: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in worst.items()))
    power_rows = []
    for eps in (0.2, 0.1):
        for n in SIZES:
            d = draw(rng, n, args.studies, eps - 0.3, 0.6)
            power_rows.append((f"eps {eps:g}, mean d {eps - 0.3:+.1f}, n {n}", rejection_rates(d, eps)))
    print()
    table("Power: a better judge passes (mean d = epsilon - 0.3, 60% ties), 5% level", power_rows)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
