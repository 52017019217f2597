"""How often the dataset-level Spearman BCa interval covers the truth, by the number of documents, simulated.

The interval every page and ``meta`` report (evalcore.meta.correlation.correlate: documents resampled, BCa with the
jackknife over documents) promises 95%. On few documents it covers less: the bootstrap sees only the documents at
hand, and the scores cluster by document. This bench measures the coverage for each number of documents and prints
the number below which it falls under ``--floor`` (0.93 by default): where the few-documents warning must start
(evalcore.meta.inference.MIN_DOCUMENTS).

The population: 16 fixed systems (the interval holds the systems fixed and resamples documents), each document with
its own difficulty, humans as the mean of 3 annotators on a 1-5 scale, a judge on 1-5 whose errors cluster by
document (as a real judge's do: one misread source article moves all its summaries). The truth is the Spearman
correlation over 40,000 documents of the same population. Each study draws ``docs`` documents and asks whether its
interval holds the truth.

Run: python bench/bench_ci_coverage.py [--studies 400] [--docs 5,10,20,30,50,75,100,150,300] [--resamples 1000]
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
from evalcore.meta.inference import MIN_DOCUMENTS  # noqa: E402

def system_quality(n_systems: int) -> np.ndarray:
    return np.random.default_rng(2026).normal(size=n_systems)  # fixed systems: the population's


def study(n_docs: int, rng: np.random.Generator, n_systems: int = 16) -> pd.DataFrame:
    """One simulated study: item_id, doc_id, system_id, judge, human."""
    docs, systems = np.repeat(np.arange(n_docs), n_systems), np.tile(np.arange(n_systems), n_docs)
    latent = 0.5 * system_quality(n_systems)[systems] + 0.7 * rng.normal(size=n_docs)[docs] + rng.normal(size=len(docs))
    votes = np.clip(np.round(3 + latent[:, None] + 0.6 * rng.normal(size=(len(docs), 3))), 1, 5)
    human = votes.mean(axis=1)
    judge = np.clip(np.round(3 + 0.6 * latent + 0.8 * rng.normal(size=n_docs)[docs]
                             + 0.8 * rng.normal(size=len(docs))), 1, 5)
    return pd.DataFrame({"item_id": np.arange(len(docs)), "doc_id": docs, "system_id": systems, "judge": judge,
                         "human": human})


def truth(rng: np.random.Generator, n_systems: int, n_docs: int = 40_000) -> float:
    big = study(n_docs, rng, n_systems)
    return float(st.spearmanr(big["judge"], big["human"]).statistic)


def coverage_at(n_docs: int, rho: float, studies: int, resamples: int, n_systems: int) -> tuple[float, float]:
    """(share of studies whose interval holds rho, mean interval width)."""
    rng = np.random.default_rng(10_000 + n_docs)
    hits, widths = 0, []
    for i in range(studies):
        r = correlate(study(n_docs, rng, n_systems), level="dataset", coefficient="spearman", n_resamples=resamples,
                      random_state=i)
        hits += r.ci_low <= rho <= r.ci_high
        widths.append(r.ci_high - r.ci_low)
    return hits / studies, float(np.mean(widths))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=400)
    ap.add_argument("--docs", default="5,10,20,30,50,75,100,150,300")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--floor", type=float, default=0.93)
    ap.add_argument("--systems", type=int, default=16, help="outputs per document")
    args = ap.parse_args(argv)
    rho = truth(np.random.default_rng(1), args.systems)
    se = (0.95 * 0.05 / args.studies) ** 0.5
    print(f"dataset-level Spearman, BCa over documents, {args.systems} systems; truth {rho:.4f} (40,000 documents); "
          f"{args.studies} studies per row (Monte-Carlo SE at 0.95: {se:.3f}); {args.resamples} resamples")
    print(f"{'documents':>10} {'coverage':>9} {'mean width':>11} {'s/row':>7}")
    rows = []
    for d in (int(x) for x in args.docs.split(",")):
        t0 = time.perf_counter()
        cov, width = coverage_at(d, rho, args.studies, args.resamples, args.systems)
        rows.append((d, cov))
        print(f"{d:>10} {cov:>9.3f} {width:>11.3f} {time.perf_counter() - t0:>7.1f}", flush=True)
    under = [d for d, cov in rows if cov < args.floor]
    holds = [d for d, _ in rows if not under or d > max(under)]
    print(f"under {args.floor}: {under or 'none'}; covered from {min(holds) if holds else 'none of these'} "
          f"documents on (the warning starts below MIN_DOCUMENTS = {MIN_DOCUMENTS})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
