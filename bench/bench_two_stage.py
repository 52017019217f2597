"""How often the interval of a K-draw judge's correlation with the humans covers the truth, simulated: the two-stage
bootstrap (documents, then the draws within each drawn item: evalcore.meta.draw_reliability.two_stage_correlation)
beside the documents-only BCa bootstrap of the same K-draw means (evalcore.meta.correlate: what ``meta
--reliability`` reports as ``mean_of_draws``, each resampled document bringing its items' draws as drawn).

The population: documents with 4 items each; an item's quality q ~ N(0, 1) plus a document effect; humans see
q + N(0, 0.5^2) as the mean of 3 annotators on 1-5; the judge draws q + N(0, s^2) per draw, rounded and clipped to
1-5, independently across draws (s is the judge's noise: 0.5 quiet, 1.5 noisy, 3 very noisy). The truth is the
dataset-level Spearman correlation of the K-draw mean with the humans over 200,000 documents of that population:
what a study of the same design estimates. Each study draws ``docs`` documents and K draws per item and asks whether
each interval holds the truth. The table prints coverage, the median width, and the share of misses per side.

Run: python bench/bench_two_stage.py [--studies 300] [--docs 40] [--draws 5] [--resamples 500]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.meta.correlation import correlate  # noqa: E402
from evalcore.meta.draw_reliability import two_stage_correlation  # noqa: E402

PER_DOC = 4


def population(n_docs: int, k: int, noise: float, rng: np.random.Generator):
    """items (doc code, human) and the K draws of each item."""
    n = n_docs * PER_DOC
    doc = np.repeat(np.arange(n_docs), PER_DOC)
    q = rng.normal(size=n) + np.repeat(rng.normal(size=n_docs) * 0.5, PER_DOC)
    human = np.clip(np.round(q[:, None] + rng.normal(size=(n, 3)) * 0.5 + 3), 1, 5).mean(axis=1)
    draws = np.clip(np.round(q[:, None] + rng.normal(size=(n, k)) * noise + 3), 1, 5)
    return doc, human, draws


def truth(k: int, noise: float) -> float:
    _, human, draws = population(200_000, k, noise, np.random.default_rng(99))
    return float(st.spearmanr(draws.mean(axis=1), human).statistic)


def one_study(n_docs: int, k: int, noise: float, resamples: int, rng: np.random.Generator):
    doc, human, draws = population(n_docs, k, noise, rng)
    n = len(doc)
    ids = [f"i{i}" for i in range(n)]
    frame = pd.DataFrame({"item_id": ids, "doc_id": [f"d{d}" for d in doc], "system_id": "s",
                          "judge": draws.mean(axis=1), "human": human})
    long = pd.DataFrame({"item_id": np.repeat(ids, k), "draw": np.tile(np.arange(k), n), "judge": draws.ravel()})
    seed = int(rng.integers(2**31))
    two = two_stage_correlation(long, frame, n_resamples=resamples, random_state=seed)
    docs_only = correlate(frame, n_resamples=resamples, random_state=seed)
    return two, docs_only


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--studies", type=int, default=300)
    ap.add_argument("--docs", type=int, default=40)
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--resamples", type=int, default=500)
    ap.add_argument("--noise", default="0.5,1.5,3")
    args = ap.parse_args()
    print(f"{args.studies} studies of {args.docs} documents x {PER_DOC} items, K = {args.draws} draws, "
          f"{args.resamples} resamples; nominal 95%")
    print(f"{'judge noise':>11} {'truth':>6} | {'interval':<28} {'coverage':>8} {'width':>6} {'miss low':>8} "
          f"{'miss high':>9}")
    for noise in [float(x) for x in args.noise.split(",")]:
        t0 = time.perf_counter()
        rho = truth(args.draws, noise)
        rng = np.random.default_rng(2026)
        rows = {"two-stage (documents, draws)": [], "documents only (BCa)": []}
        for _ in range(args.studies):
            two, docs_only = one_study(args.docs, args.draws, noise, args.resamples, rng)
            rows["two-stage (documents, draws)"].append((two.ci_low, two.ci_high))
            rows["documents only (BCa)"].append((docs_only.ci_low, docs_only.ci_high))
        for name, ci in rows.items():
            lo, hi = np.array(ci).T
            cover = np.mean((lo <= rho) & (rho <= hi))
            print(f"{noise:>11.1f} {rho:>6.3f} | {name:<28} {cover:>8.3f} {np.median(hi - lo):>6.3f} "
                  f"{np.mean(rho < lo):>8.3f} {np.mean(rho > hi):>9.3f}")
        print(f"{'':>11} {'':>6} | ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
