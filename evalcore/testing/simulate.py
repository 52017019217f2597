"""Simulated score frames for checking the size of paired tests (tests/test_align_loop.py,
bench/bench_paired_size.py): never data shown as a result."""

from __future__ import annotations

import numpy as np
import pandas as pd


def exchangeable_judges(n_docs: int, rng: np.random.Generator, n_systems: int = 16
                        ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two score frames (item_id, doc_id, system_id, human, judge) of the same items by two equally weak judges
    (the same distribution of scores: exchangeable, the judge that a prompt change cannot improve), with errors
    clustered by document as a real judge's are, on integer 1-5 scales with ties; humans vary by document and
    system."""
    docs, systems = np.repeat(np.arange(n_docs), n_systems), np.tile(np.arange(n_systems), n_docs)
    human = np.clip(np.round(3 + 0.7 * rng.normal(size=n_docs)[docs] + 0.5 * rng.normal(size=n_systems)[systems]
                             + rng.normal(size=len(docs))), 1, 5)

    def judge() -> np.ndarray:
        noise = 0.8 * rng.normal(size=n_docs)[docs] + rng.normal(size=len(docs))
        return np.clip(np.round(3 + 0.3 * (human - 3) + noise), 1, 5)

    frame = pd.DataFrame({"item_id": [f"d{d}/S{s}" for d, s in zip(docs, systems)],
                          "doc_id": [f"d{d}" for d in docs], "system_id": [f"S{s}" for s in systems], "human": human})
    return frame.assign(judge=judge()), frame.assign(judge=judge())
