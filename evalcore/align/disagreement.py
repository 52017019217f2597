"""Why does the judge disagree with the humans? On the DEVELOPMENT part only.

The items are ranked by |judge - human| after putting the judge's score on the human scale (a judge asked for 1-3
while humans rated 1-5 is mapped linearly: judge' = h_min + (judge - j_min) * (h_max - h_min) / (j_max - j_min)),
each with the judge's reply as stored with its judgment (its reasoning, for methods that ask for one), and
summarised per system and per human score (the human score rounded to the nearest point of its scale). For a
binary / nominal / ordinal dimension the judge's and the humans' labels as the agreement statistics read them
(:func:`as_labels`), a nominal dimension's gap 1 where the labels differ (its codes have no distance), and the
confusion cells (human label x judge label, scikit-learn's confusion_matrix, the judge's value taken to the nearest
category) with their items.

Nothing here ever reads a test-part item: the frame is cut to the split's development documents before anything
is computed, and :func:`evalcore.align.split.check_dev_only` guards what leaves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore.align.split import Split, check_dev_only
from evalcore.model import Dataset, Dimension, Run

ITEM_COLUMNS = ["item_id", "doc_id", "system_id", "human", "judge", "judge_on_human_scale", "gap", "raw", "output",
                "source"]


@dataclass(frozen=True)
class Disagreement:
    """The development part's disagreements of one run on one dimension.

    ``items``: ITEM_COLUMNS, largest ``gap`` = |judge_on_human_scale - human| first (failed judgments left out and
    counted in ``failed``); ``by_system``: system_id, n, mean_gap, mean_judge (on the human scale), mean_human;
    ``by_human``: human_score (rounded to the scale), n, mean_gap, mean_judge; ``confusion``: for a categorical
    dimension, one row per (human_label, judge_label) cell with its count and item_ids, else None;
    ``judge_scale`` / ``human_scale``: the two scales the mapping used."""

    dimension: str
    items: pd.DataFrame
    by_system: pd.DataFrame
    by_human: pd.DataFrame
    confusion: pd.DataFrame | None
    judge_scale: tuple[float, float]
    human_scale: tuple[float, float]
    failed: int = 0
    kind: str = "interval"  # the dimension's kind: on a nominal one ``gap`` is 1 where the labels differ, else 0
    label_names: tuple[str, ...] = ()  # a categorical dimension's category names, in code order

    def top(self, k: int) -> pd.DataFrame:
        """The k items with the largest disagreement."""
        return self.items.head(k)


def judge_scale(run: Run, dimension: str, default: tuple[float, float]) -> tuple[float, float]:
    """The scale the run's criteria asked the judge for (its recorded criteria), else ``default``."""
    crit = (run.config.criteria or {}).get(dimension) or {}
    if "scale_min" in crit and "scale_max" in crit:
        return float(crit["scale_min"]), float(crit["scale_max"])
    return default


def to_human_scale(values: pd.Series | np.ndarray | list[float], judge: tuple[float, float],
                   human: tuple[float, float]) -> np.ndarray:
    """The judge's values mapped linearly from its scale onto the human one (identity when they are equal)."""
    v = np.asarray(values, dtype=float)
    (jl, jh), (hl, hh) = judge, human
    if (jl, jh) == (hl, hh) or jh == jl:
        return v
    return hl + (v - jl) * (hh - hl) / (jh - jl)


def dev_frame(dataset: Dataset, run: Run, dimension: str, split: Split) -> pd.DataFrame:
    """item_id, doc_id, system_id, human, judge, raw, output, source for the run's judgments on the development
    part's items (failed ones with judge NaN)."""
    human = dataset.human_table(dimension)
    human = human[human["doc_id"].astype(str).isin(set(split.dev_docs))]
    j = run.judgments[run.judgments["dimension"] == dimension]
    judged = j[["item_id", "value", "raw"]].rename(columns={"value": "judge"})
    texts = dataset.texts()
    cols = ["item_id"] + [c for c in ("output", "source") if c in texts.columns]
    frame = human.merge(judged, on="item_id", how="inner").merge(texts[cols], on="item_id", how="left")
    for c in ("output", "source"):
        if c not in frame.columns:
            frame[c] = ""
    check_dev_only(frame, split, what="the disagreement table")
    return frame.reset_index(drop=True)


def disagreements(dataset: Dataset, run: Run, dimension: str, split: Split) -> Disagreement:
    """The development part's disagreements of ``run`` on ``dimension`` (see the module docstring)."""
    dim = dataset.dimension(dimension)
    hscale = (float(dim.scale_min), float(dim.scale_max))
    jscale = judge_scale(run, dimension, hscale)
    frame = dev_frame(dataset, run, dimension, split)
    if dim.is_categorical:
        frame = as_labels(frame, dataset, run, dimension)
    failed = int(frame["judge"].isna().sum())
    frame = frame[frame["judge"].notna()].copy()
    frame["judge_on_human_scale"] = to_human_scale(frame["judge"], jscale, hscale)
    if dim.kind == "nominal":  # no distance between unordered labels: a different label is a disagreement of 1
        frame["gap"] = (~np.isclose(frame["judge"].astype(float), frame["human"].astype(float))).astype(float)
    else:
        frame["gap"] = (frame["judge_on_human_scale"] - frame["human"].astype(float)).abs()
    items = frame.sort_values(["gap", "item_id"], ascending=[False, True], kind="stable")[ITEM_COLUMNS]
    by_system = (items.groupby("system_id", sort=True)
                 .agg(n=("gap", "size"), mean_gap=("gap", "mean"), mean_judge=("judge_on_human_scale", "mean"),
                      mean_human=("human", "mean"))
                 .reset_index().sort_values(["mean_gap", "system_id"], ascending=[False, True]))
    rounded = items["human"].astype(float).round().clip(hscale[0], hscale[1])
    by_human = (items.assign(human_score=rounded).groupby("human_score", sort=True)
                .agg(n=("gap", "size"), mean_gap=("gap", "mean"), mean_judge=("judge_on_human_scale", "mean"))
                .reset_index())
    confusion = _confusion_cells(items, dim) if dim.is_categorical else None
    return Disagreement(dimension=dimension, items=items.reset_index(drop=True),
                        by_system=by_system.reset_index(drop=True), by_human=by_human, confusion=confusion,
                        judge_scale=jscale, human_scale=hscale, failed=failed, kind=dim.kind,
                        label_names=tuple(dim.category_names) if dim.is_categorical else ())


def as_labels(frame: pd.DataFrame, dataset: Dataset, run: Run, dimension: str) -> pd.DataFrame:
    """The development frame with the judge's and the humans' LABELS, as the agreement statistics read them
    (``classification.label_frame``: the annotators' majority, or lower median for an ordinal dimension; a binary
    judge's p(positive) >= 0.5, a nominal judge's most probable category, where it gave probabilities). Items whose
    annotators tie have no human label and are left out."""
    from evalcore.meta.classification import label_frame

    labels = label_frame(dataset, run, dimension)[0][["item_id", "judge", "human"]]
    out = frame.drop(columns=["judge", "human"]).merge(labels, on="item_id", how="inner")
    return out[frame.columns].reset_index(drop=True)


def _confusion_cells(items: pd.DataFrame, dim: Dimension) -> pd.DataFrame:
    """One row per (human label, judge label) cell: count and the cell's item ids (scikit-learn's confusion
    matrix; a human value between categories goes to the nearest, as a judge value does)."""
    from sklearn.metrics import confusion_matrix

    from evalcore.meta.classification import judge_codes

    cats = dim.categories
    kind = "ordinal" if dim.kind == "nominal" else dim.kind  # a mapped judge value is never exactly a code
    h = judge_codes(items["human"].to_numpy(dtype=float), cats, kind)
    j = judge_codes(items["judge_on_human_scale"].to_numpy(dtype=float), cats, kind)
    ok = (h >= 0) & (j >= 0)
    k = len(cats)
    matrix = confusion_matrix(h[ok], j[ok], labels=list(range(k)))
    names = dim.category_names
    ids = items["item_id"].to_numpy()[ok]
    rows = []
    for a in range(k):
        for b in range(k):
            cell = ids[(h[ok] == a) & (j[ok] == b)]
            rows.append({"human_label": names[a], "judge_label": names[b], "count": int(matrix[a, b]),
                         "agree": a == b, "item_ids": [str(x) for x in cell]})
    return pd.DataFrame(rows)


__all__ = ["Disagreement", "disagreements", "dev_frame", "as_labels", "judge_scale", "to_human_scale", "ITEM_COLUMNS"]
