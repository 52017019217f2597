"""Speed of the label-agreement statistics (evalcore.meta.classification): kappa, accuracy, P/R/F1 and the confusion
matrix with 1,000-resample document-bootstrap BCa intervals, and calibration (Brier, ECE) with intervals, printed
beside the naive way (scikit-learn on every explicit resample) and the ratio.

    python bench/bench_labels.py

Synthetic binary run: 2,000 documents x 10 systems = 20,000 items, three annotators, a judge with p(yes).
The naive timing runs 20 resamples and is scaled to 1,000 (it is linear in resamples).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.meta.classification import (  # noqa: E402
    calibration, classify, label_agreement, prepare_labels, sklearn_statistics,
)
from evalcore.meta.correlation import bootstrap_indices  # noqa: E402
from evalcore.testing.labels import label_dataset, label_run  # noqa: E402

RESAMPLES = 1000
NAIVE_RESAMPLES = 20


def main() -> None:
    t = time.perf_counter()
    ds, truth = label_dataset(n_docs=2_000, n_systems=10, seed=0)
    run = label_run(ds, truth, seed=1)
    print(f"synthetic binary run: {len(ds.items):,} items, {ds.items['doc_id'].nunique():,} documents "
          f"(built in {time.perf_counter() - t:.1f} s)")

    from evalcore.meta.classification import label_frame

    frame, _, _, probs = label_frame(ds, run, "faithful")
    t = time.perf_counter()
    r = classify(frame, categories=(0, 1), kind="binary", n_resamples=RESAMPLES)
    fast = time.perf_counter() - t
    print(f"kappa {r.cohen_kappa.statistic:.4f} [{r.cohen_kappa.ci_low:.4f}, {r.cohen_kappa.ci_high:.4f}], "
          f"F1 {r.f1.statistic:.4f}")

    p = prepare_labels(frame, (0, 1), "binary")
    idx = bootstrap_indices(p.n_docs, NAIVE_RESAMPLES, 0)
    by_doc = [np.nonzero(p.doc == d)[0] for d in range(p.n_docs)]
    t = time.perf_counter()
    for b in range(NAIVE_RESAMPLES):
        take = np.concatenate([by_doc[d] for d in idx[b]])
        sklearn_statistics(p.human[take], p.judge[take], 2, average="binary")
    naive = (time.perf_counter() - t) * RESAMPLES / NAIVE_RESAMPLES
    print(f"{'6 statistics + confusion, 1,000 resamples, BCa (vectorised)':<64} {fast:8.2f} s")
    print(f"{'the same with scikit-learn per explicit resample (percentile)':<64} {naive:8.2f} s   "
          f"ratio {naive / fast:6.1f}x")

    f = frame.merge(probs, on="item_id")
    t = time.perf_counter()
    c = calibration((f["human"] == 1).astype(float), f["p1"], f["doc_id"], n_resamples=RESAMPLES)
    cal = time.perf_counter() - t
    print(f"{'Brier + ECE, 1,000 resamples':<64} {cal:8.2f} s   (Brier {c.brier.statistic:.4f}, "
          f"ECE {c.ece.statistic:.4f})")

    t = time.perf_counter()
    label_agreement(ds, run, "faithful", n_resamples=RESAMPLES, human_alpha=False)
    print(f"{'label_agreement as the app runs it (+ 3 annotators, calibration)':<64} {time.perf_counter() - t:8.2f} s")
    t = time.perf_counter()
    label_agreement(ds, run, "faithful", n_resamples=RESAMPLES)
    print(f"{'... + the annotators alpha with its BCa interval (meta --json)':<64} {time.perf_counter() - t:8.2f} s")


if __name__ == "__main__":
    main()
