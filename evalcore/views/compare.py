"""Compare page: two runs' difference in correlation (paired test) and the items where they disagree most."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from evalcore import runs as runs_mod
from evalcore.model import Dataset, Run


def paired_comparison(dataset: Dataset, run_a: Run, run_b: Run, dimension: str, *, level: str, coefficient: str,
                      n_resamples: int = 1000, method: str = "bootstrap", systems: list[str] | None = None):
    """Does run A correlate better with the humans than run B on the same items? (meta.compare) ``systems``: on
    these systems' outputs only (None: all)."""
    from evalcore.meta.compare import paired_difference

    a = runs_mod.score_frame(dataset, run_a, dimension, systems=systems)
    b = runs_mod.score_frame(dataset, run_b, dimension, systems=systems)
    return paired_difference(a, b, level=level, coefficient=coefficient, n_resamples=n_resamples, method=method)


def disagreements(dataset: Dataset, run_a: Run, run_b: Run, dimension: str, *, top: int = 20,
                  systems: list[str] | None = None) -> pd.DataFrame:
    """Items where two runs disagree most (``systems``: among these systems' outputs only).

    The runs may score on different scales (1-5 vs 0-100), so each run's scores are turned into percentile ranks
    first; the gap is the difference of ranks (0 = same place, 1 = opposite ends)."""
    a = run_a.scores(dimension)[["item_id", "judge"]].rename(columns={"judge": "judge_a"})
    b = run_b.scores(dimension)[["item_id", "judge"]].rename(columns={"judge": "judge_b"})
    t = a.merge(b, on="item_id").dropna(subset=["judge_a", "judge_b"])
    if systems is not None:
        kept = dataset.items.loc[dataset.items["system_id"].isin(systems), "item_id"]
        t = t[t["item_id"].isin(set(kept))]
    if t.empty:
        return pd.DataFrame(columns=["item_id", "system_id", "judge_a", "judge_b", "human", "rank_gap", "doc_id"])
    t["rank_a"] = t["judge_a"].rank(pct=True)
    t["rank_b"] = t["judge_b"].rank(pct=True)
    t["rank_gap"] = (t["rank_a"] - t["rank_b"]).abs()
    human = dataset.human_table(dimension)[["item_id", "doc_id", "system_id", "human"]]
    t = t.merge(human, on="item_id", how="left")
    t = t.sort_values(["rank_gap", "item_id"], ascending=[False, True]).head(top)
    return t[["item_id", "system_id", "judge_a", "judge_b", "human", "rank_gap", "doc_id"]].reset_index(drop=True)


def item_texts(dataset: Dataset, item_id: str) -> dict[str, str]:
    """Source, output, references and context of one item (shown as plain text)."""
    t = dataset.texts()
    row = t[t["item_id"] == item_id]
    if row.empty:
        return {}
    r = row.iloc[0]
    refs = r.get("references")
    if isinstance(refs, (list, tuple, np.ndarray)):
        refs = "\n---\n".join(map(str, refs))
    return {"output": _s(r.get("output")), "source": _s(r.get("source")), "context": _s(r.get("context")),
            "references": _s(refs)}


def _s(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return str(x)


def paired_summary(res: Any, name_a: str, name_b: str) -> pd.DataFrame:
    """The paired comparison as a one-row table (for display and CSV)."""
    return pd.DataFrame([{
        "run_a": name_a, "run_b": name_b, "level": res.level, "coefficient": res.coefficient,
        "statistic_a": res.statistic_a, "statistic_b": res.statistic_b, "difference": res.difference,
        "ci_low": res.ci_low, "ci_high": res.ci_high, "pvalue": res.pvalue, "n": res.n, "test": res.method,
    }])
