"""The judge's score beside the human score, item by item: the table the Alignment page's box plots and the
report draw (``judge_by_human_table``), with the human score binned when it takes many values."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.analyses.common import frames_for, run_label
from evalcore.model import Dataset, Run


def human_score_bins(human: pd.Series, *, scale: tuple[float, float] | None = None, max_values: int = 7,
                     max_bins: int = 8) -> pd.Series:
    """The human score as box-plot categories.

    Up to ``max_values`` distinct scores (integer ratings; 1-3 means of 3 annotators) are each their own category.
    More (SummEval's 1-5 means of 3 experts take 13 values) are binned: on whole numbers when the scale spans 3 to
    ``max_bins`` units ("[1, 2)", ..., "[4, 5]"), else in ``max_bins`` equal-width bins; the last bin is closed."""
    h = pd.to_numeric(human, errors="coerce")
    values = np.sort(h.dropna().unique())
    if len(values) <= max_values:
        return h.map(lambda v: "" if pd.isna(v) else f"{v:.3g}")
    lo, hi = float(values[0]), float(values[-1])
    if scale is not None:
        lo, hi = min(lo, float(scale[0])), max(hi, float(scale[1]))
    if 3 <= hi - lo <= max_bins and float(lo).is_integer() and float(hi).is_integer():
        edges = np.arange(lo, hi + 1)
    else:
        edges = np.linspace(lo, hi, max_bins + 1)
    idx = np.clip(np.searchsorted(edges, h.to_numpy(), side="right") - 1, 0, len(edges) - 2)
    labels = [f"[{edges[i]:.3g}, {edges[i + 1]:.3g}{']' if i == len(edges) - 2 else ')'}"
              for i in range(len(edges) - 1)]
    return pd.Series([labels[i] if pd.notna(v) else "" for i, v in zip(idx, h)], index=h.index)


def judge_by_human_table(dataset: Dataset, runs: list[Run], dimension: str, *, systems: list[str] | None = None
                         ) -> pd.DataFrame:
    """Item-level judge and human scores of each run on one dimension, with the human score's bin (``human_bin``,
    ordered by ``bin_order``). Items whose reply could not be parsed are left out (counted on the Score page)."""
    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        f = frame.dropna(subset=["judge", "human"])[["item_id", "system_id", "judge", "human"]].copy()
        f.insert(0, "run", labels[run_id])
        parts.append(f)
    if not parts:
        return pd.DataFrame(columns=["run", "item_id", "system_id", "judge", "human", "human_bin", "bin_order"])
    t = pd.concat(parts, ignore_index=True)
    dim = next((d for d in dataset.dimensions if d.name == dimension), None)
    t["human_bin"] = human_score_bins(t["human"], scale=(dim.scale_min, dim.scale_max) if dim else None)
    order = t.groupby("human_bin")["human"].min().sort_values()
    t["bin_order"] = t["human_bin"].map({b: i for i, b in enumerate(order.index)})
    return t.sort_values("bin_order", kind="stable").reset_index(drop=True)  # runs in the order selected
