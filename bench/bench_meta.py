"""Speed of evalcore.meta: the full meta-evaluation of one SummEval-sized run, and dataset-level correlations over
1,000,000 pairs, each printed next to its 2 s target.

    python bench/bench_meta.py

1. Synthetic SummEval-shaped run (no data/ needed): 100 documents x 16 systems, 4 dimensions, integer judge scores
   1-5, human scores = means of three 1-5 ratings (thirds). Full table: 4 dimensions x 3 levels x 3 coefficients,
   each with a 1,000-resample document-bootstrap CI.
2. The same on the bundled SummEval data with Shen et al.'s ChatGPT RTS run, if evalcore.datasets can load them
   (1,200 items, 12 systems); also prints #CP next to 003's published figures.
3. Dataset-level Pearson, Spearman and Kendall tau-b (point estimates and p-values, scipy) over 1,000,000 synthetic
   pairs, input validation included.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.meta import (  # noqa: E402
    COEFFICIENTS, correct_preferences, correlate, correlation_table, meta_correlation,
)

TARGET_S = 2.0
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")


def line(label: str, seconds: float, target: float = TARGET_S) -> str:
    verdict = "ok" if seconds <= target else "OVER TARGET"
    return f"{label:<62} {seconds:7.3f} s   target {target:.1f} s   ratio {seconds / target:5.2f}  {verdict}"


def synthetic_run(n_docs=100, n_systems=16, seed=0) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    doc = np.repeat(np.arange(n_docs), n_systems)
    system = np.tile(np.arange(n_systems), n_docs)
    base = pd.DataFrame({"item_id": [f"doc{d}/M{s}" for d, s in zip(doc, system)],
                         "doc_id": [f"doc{d}" for d in doc], "system_id": [f"M{s}" for s in system]})
    quality = rng.normal(3.8, 0.4, n_systems)
    frames = {}
    for dim in DIMENSIONS:
        ratings = np.clip(np.round(quality[system][:, None] + rng.normal(0, 0.8, (len(doc), 3))), 1, 5)
        human = ratings.sum(axis=1) / 3
        judge = np.clip(np.round(human + rng.normal(-0.5, 0.9, len(doc))), 1, 5)
        frames[dim] = base.assign(judge=judge, human=human)
    return frames


def time_full_table(frames: dict[str, pd.DataFrame], n_resamples=1000) -> tuple[float, dict[str, pd.DataFrame]]:
    t0 = time.perf_counter()
    tables = {dim: correlation_table(f, n_resamples=n_resamples) for dim, f in frames.items()}
    return time.perf_counter() - t0, tables


def show_table(tables: dict[str, pd.DataFrame]) -> None:
    rows = []
    for dim, t in tables.items():
        for r in t.itertuples():
            rows.append(f"  {dim:<12} {r.level:<8} {r.coefficient:<9} {r.statistic:6.3f} "
                        f"[{r.ci_low:6.3f}, {r.ci_high:6.3f}]  n={r.n:<5} skipped={r.skipped} dropped={r.dropped}")
    print("\n".join(rows))


def real_frames():
    """(frames by dimension, dataset, run id) from the bundled data, or None with the reason."""
    try:
        from evalcore.datasets import load_bundled_run, load_dataset
    except Exception as exc:  # noqa: BLE001 - the bench reports and carries on
        return None, f"evalcore.datasets not importable: {exc!r}"
    run_id = "summeval/shen-gpt-3.5-turbo-0301-rts"
    try:
        ds = load_dataset("summeval")
        frames = {}
        for mode in ("robust", "paper"):
            run = load_bundled_run(run_id, parse=mode)
            frames[mode] = {dim: ds.human_table(dim).merge(run.scores(dim)[["item_id", "judge"]], on="item_id",
                                                           how="inner")
                            for dim in run.dimensions}
        return (frames, ds, run_id), ""
    except Exception as exc:  # noqa: BLE001
        return None, f"bundled data could not be loaded: {exc!r}"


def main() -> None:
    print(f"evalcore.meta benchmark (numpy {np.__version__}, pandas {pd.__version__})\n")
    section_synthetic()
    section_real()
    section_million()


def section_synthetic() -> None:
    """1. a synthetic SummEval-shaped run: the full correlation table with CIs."""
    frames = synthetic_run()
    correlation_table(frames["coherence"], n_resamples=10)  # warm-up: imports, first-call allocations
    seconds, tables = time_full_table(frames)
    print("1. synthetic run: 100 docs x 16 systems = 1,600 items, 4 dims x 3 levels x 3 coefficients, "
          "1,000 resamples each")
    print(line("   full correlation table (36 cells with CIs)", seconds))
    show_table({"coherence": tables["coherence"]})
    t0 = time.perf_counter()
    for dim, f in frames.items():
        for co in COEFFICIENTS:
            meta_correlation(f, coefficient=co)
        correct_preferences(f)
    print(f"   (extra, not in the target: meta-correlation x3 and #CP on 120 pairs, 4 dims: "
          f"{time.perf_counter() - t0:.3f} s)\n")


def section_real() -> None:
    """2. a real SummEval run: the full table, and #CP against the published figures (003 Table 5)."""
    real, why = real_frames()
    if real is None:
        print(f"2. real SummEval run: skipped ({why})\n")
        return
    by_mode, ds, run_id = real
    robust = by_mode["robust"]
    n_items = len(next(iter(robust.values())))
    seconds, tables = time_full_table(robust)
    print(f"2. real: summeval + {run_id} ({n_items} items, robust parse)")
    print(line("   full correlation table (36 cells with CIs)", seconds))
    show_table(tables)
    abstractive = ds.meta.get("abstractive_systems")
    challenge = [tuple(p) for p in ds.meta.get("challenge_pairs", [])]
    published = {"coherence": 54, "consistency": 56, "fluency": 62, "relevance": 62}
    for mode, fr in by_mode.items():
        parts = []
        for dim, f in fr.items():
            f = f[f.system_id.isin(abstractive)] if abstractive else f
            full = correct_preferences(f)
            ch = correct_preferences(f, pairs=challenge) if challenge else None
            parts.append(f"{dim} {full.correct}/{full.total}"
                         + (f" (challenge {ch.correct}/{ch.total})" if ch else ""))
        print(f"   #CP, {mode} parse: " + ", ".join(parts))
    print("   #CP published (003 Table 5, RTS full set): "
          + ", ".join(f"{d} {v}/66" for d, v in published.items()) + "\n")


def section_million() -> None:
    """3. the dataset level on one million pairs: point estimates and p-values, with and without judge ties."""
    n = 1_000_000
    rng = np.random.default_rng(1)
    human = rng.integers(3, 16, n) / 3
    judge = np.clip(np.round(human + rng.normal(0, 1, n)), 1, 5)
    big = pd.DataFrame({"item_id": np.arange(n), "doc_id": np.arange(n) // 16, "system_id": np.arange(n) % 16,
                        "judge": judge, "human": human})
    t0 = time.perf_counter()
    results = [correlate(big, level="dataset", coefficient=co, n_resamples=0) for co in COEFFICIENTS]
    seconds = time.perf_counter() - t0
    print("3. dataset level, 1,000,000 pairs (SummEval-like ties), point estimates + p-values")
    print(line("   pearson + spearman + kendall", seconds))
    print("   " + ", ".join(f"{co} {r.statistic:.4f}" for co, r in zip(COEFFICIENTS, results)))
    cont = big.assign(judge=human + rng.normal(0, 1, n))
    t0 = time.perf_counter()
    results = [correlate(cont, level="dataset", coefficient=co, n_resamples=0) for co in COEFFICIENTS]
    seconds = time.perf_counter() - t0
    print(line("   same, continuous judge scores (no ties on the judge side)", seconds))


if __name__ == "__main__":
    main()
