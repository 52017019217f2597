"""Simulated studies with a known truth: do the prediction-powered intervals cover it, and how often does the Alt-Test
pass a judge exactly as good as one annotator?

    python bench/bench_ppi_alt.py [--studies 1000] [--alt-studies 400] [--seed 0]

1. PPI coverage. Each study: one system's 600 outputs with human scores Y ~ N(3, 1) (the truth is the population
   mean, 3) and a biased, noisy judge Yhat = 0.7 Y + 1.5 + N(0, 0.6) (its mean is 3.6); humans rate 60 outputs drawn
   at random. The share of studies whose 95% interval covers 3, and the mean interval width, for classic PPI, PPI++,
   humans alone and the judge alone (evalcore.meta.ppi.ppi_mean).
2. Differences between systems. Three systems share 80 documents (a document effect N(0, 0.6) on every system's
   score, the truth being the systems' offsets 0, 0.3, 0.6); the judge is biased per system (it favours the best
   one); humans rate 15 documents. The share of studies whose document-bootstrap interval (200 resamples) of each
   difference covers the true one, by PPI++ (evalcore.meta.ppi.ppi_by_system).
3. The Alt-Test's pass rate (winning rate >= 0.5 after Benjamini-Yekutieli at q = 0.05) for a judge drawn from
   exactly the annotators' distribution (3 annotators; each label the true category with probability 0.7, else one of
   4 categories at random; accuracy scoring), at epsilon 0 and 0.2, on 50 and 100 items; and for a worse judge
   (true category with probability 0.5) and a better one (0.85).
"""

from __future__ import annotations

import argparse
import time
from itertools import combinations

import numpy as np
import pandas as pd

from evalcore.meta import alt_test as at
from evalcore.meta import ppi


def ppi_coverage(n_studies: int, rng: np.random.Generator) -> None:
    truth, n_total, n_rated = 3.0, 600, 60
    methods = {"PPI (lambda 1)": 1.0, "PPI++": None, "humans only": 0.0}
    hits = {m: 0 for m in [*methods, "judge only"]}
    widths = {m: [] for m in hits}
    for _ in range(n_studies):
        y = rng.normal(truth, 1.0, n_total)
        yhat = 0.7 * y + 1.5 + rng.normal(0, 0.6, n_total)
        rated = np.zeros(n_total, dtype=bool)
        rated[rng.choice(n_total, n_rated, replace=False)] = True
        for name, lam in methods.items():
            _, lo, hi, _ = ppi.ppi_mean(y[rated], yhat[rated], yhat[~rated], lam=lam)
            hits[name] += lo <= truth <= hi
            widths[name].append(hi - lo)
        half = 1.959963984540054 * yhat.std() / np.sqrt(n_total)
        hits["judge only"] += abs(yhat.mean() - truth) <= half
        widths["judge only"].append(2 * half)
    print(f"1. one system, {n_total} outputs, {n_rated} rated by humans; judge = 0.7 Y + 1.5 + noise (biased by "
          f"+0.6); {n_studies} studies")
    print(f"   {'estimate':<18}{'covers the truth':>18}{'mean width':>12}")
    for m in hits:
        print(f"   {m:<18}{hits[m] / n_studies:>17.1%}{np.mean(widths[m]):>12.3f}")


def difference_coverage(n_studies: int, rng: np.random.Generator) -> None:
    offsets, judge_bias = np.array([0.0, 0.3, 0.6]), np.array([0.0, 0.2, 0.8])
    n_docs, n_rated = 80, 15
    pairs = list(combinations(range(3), 2))
    hits = {p: 0 for p in pairs}
    for _ in range(n_studies):
        doc = rng.normal(0, 0.6, n_docs)
        y = 3 + doc[:, None] + offsets[None, :] + rng.normal(0, 0.5, (n_docs, 3))
        yhat = 0.8 * y + 0.5 + judge_bias[None, :] + rng.normal(0, 0.4, (n_docs, 3))
        rated = np.isin(np.arange(n_docs), rng.choice(n_docs, n_rated, replace=False))
        frame = pd.DataFrame({"item_id": np.arange(n_docs * 3), "doc_id": np.repeat(np.arange(n_docs), 3),
                              "system_id": np.tile(["S0", "S1", "S2"], n_docs), "judge": yhat.ravel(),
                              "human": np.where(np.repeat(rated, 3), y.ravel(), np.nan)})
        res = ppi.ppi_by_system(frame, method="ppi++", n_resamples=200, random_state=int(rng.integers(1 << 31)))
        for d, (a, b) in zip(res.differences, pairs):
            hits[(a, b)] += d.ci_low <= offsets[a] - offsets[b] <= d.ci_high
    print(f"\n2. three systems on {n_docs} shared documents, {n_rated} rated; the judge favours S2 by +0.8; "
          f"{n_studies} studies, PPI++ with a 200-resample document bootstrap")
    for (a, b), h in hits.items():
        print(f"   S{a} - S{b} (truth {offsets[a] - offsets[b]:+.1f}): covered in {h / n_studies:.1%}")


def labels(truth: np.ndarray, accuracy: float, rng: np.random.Generator, k: int = 4) -> np.ndarray:
    return np.where(rng.random(truth.shape) < accuracy, truth, rng.integers(0, k, truth.shape)).astype(float)


def alt_pass_rate(n_studies: int, n_items: int, judge_accuracy: float, epsilon: float,
                  rng: np.random.Generator) -> tuple[float, float]:
    passed, rho = 0, []
    for _ in range(n_studies):
        truth = rng.integers(0, 4, n_items)
        ratings = pd.DataFrame(np.vstack([labels(truth, 0.7, rng) for _ in range(3)]), index=["h1", "h2", "h3"])
        res = at.alt_test(ratings, pd.Series(labels(truth, judge_accuracy, rng)), scoring="accuracy", epsilon=epsilon)
        passed += res.passed
        rho.append(res.advantage_probability)
    return passed / n_studies, float(np.mean(rho))


def alt_test_rates(n_studies: int, rng: np.random.Generator) -> None:
    print(f"\n3. the Alt-Test: 3 annotators right 70% of the time (4 categories); {n_studies} studies each")
    print(f"   {'judge right':<13}{'items':>6}{'epsilon':>9}{'passes':>9}{'mean rho':>10}")
    for acc in (0.7, 0.5, 0.85):
        for n_items in (50, 100):
            for eps in (0.0, 0.2):
                rate, rho = alt_pass_rate(n_studies, n_items, acc, eps, rng)
                label = f"{acc:.0%}" + (" (=)" if acc == 0.7 else "")
                print(f"   {label:<13}{n_items:>6}{eps:>9.1f}{rate:>9.1%}{rho:>10.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=1000, help="studies for the PPI coverage (1)")
    ap.add_argument("--diff-studies", type=int, default=200, help="studies for the differences (2)")
    ap.add_argument("--alt-studies", type=int, default=300, help="studies per Alt-Test setting (3)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    ppi_coverage(args.studies, rng)
    difference_coverage(args.diff_studies, rng)
    alt_test_rates(args.alt_studies, rng)
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
