"""The human ceiling: each annotator of one group against the mean of the others, on exactly the items a run is
correlated on (``run_ceiling``), at the same level and coefficient as the run's correlation. Its table (each
annotator, then their mean) is what the page and the report show; its mean, an ``Estimate``, what ``meta --json``
lists."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import pandas as pd

from evalcore.analyses.common import frames_for, has_correlations, run_label
from evalcore.meta.results import Estimate
from evalcore.model import Dataset, Run


def ceiling_group(dataset: Dataset, dimension: str):
    """The annotator group the ceiling is computed in ("expert" where there is one), or None when fewer than two
    annotators rated this dimension."""
    ann = dataset.annotations
    if ann.empty or not (ann["dimension"] == dimension).any():
        return None
    groups = list(ann.loc[ann["dimension"] == dimension, "group"].dropna().unique())
    group = "expert" if "expert" in groups else (groups[0] if groups else None)
    sub = ann[(ann["dimension"] == dimension) & (ann["group"] == group)] if group is not None else ann
    if sub["annotator"].nunique() < 2:
        return None
    return group


def ceiling_table(dataset: Dataset, dimension: str, *, level: str, coefficient: str,
                  item_ids: Collection[str] | pd.Series | None = None, n_resamples: int = 0,
                  skip_constant: bool = True, random_state: int = 0) -> pd.DataFrame:
    """Each expert against the mean of the others (the human ceiling), at the same level and coefficient, on
    ``item_ids`` (None: every rated item); ``random_state`` seeds its resamples and permutation p-values."""
    from evalcore.meta.agreement import human_ceiling

    group = ceiling_group(dataset, dimension)
    if group is None:
        return pd.DataFrame()
    t = human_ceiling(dataset.annotations, dataset.items, dimension, group=group, level=level,
                      coefficient=coefficient, item_ids=item_ids, n_resamples=n_resamples,
                      skip_constant=skip_constant, random_state=random_state)
    t = t.copy()
    t.insert(0, "group", group)
    return t


def correlated_items(frame: pd.DataFrame, *, level: str, skip_constant: bool = True) -> pd.Series:
    """The item ids a run's correlation at ``level`` is computed on: its parsed items, and at the summary level with
    constant documents skipped, only the documents where its per-document correlation is defined (the human
    ceiling is then computed on the same documents)."""
    scored = frame[frame["judge"].notna()]
    if level == "summary" and skip_constant and not scored.empty:
        g = scored.groupby("doc_id")
        defined = (g["judge"].nunique() > 1) & (g["human"].nunique() > 1)
        scored = scored[scored["doc_id"].isin(defined[defined].index)]
    return scored["item_id"]


@dataclass(frozen=True)
class CeilingCell:
    """The ceiling at one level and coefficient on one run's items: ``table`` each annotator then "mean" (the
    ``ceiling_table``), ``mean`` the experts' mean as an Estimate (``n`` as in the table; ``n_items`` the items)."""

    level: str
    coefficient: str
    group: str
    table: pd.DataFrame
    mean: Estimate
    n_items: int
    annotators: int

    def as_dict(self) -> dict:
        """``meta --json``'s ``human_ceiling`` row."""
        return {"level": self.level, "coefficient": self.coefficient, "statistic": self.mean.statistic,
                "ci_low": self.mean.ci_low, "ci_high": self.mean.ci_high, "n": self.mean.n,
                "n_items": self.n_items, "group": self.group, "annotators": self.annotators}


def _cell(t: pd.DataFrame, level: str, coefficient: str) -> CeilingCell:
    m = t[t["annotator"] == "mean"].iloc[0]
    n = m["n"].item() if hasattr(m["n"], "item") else m["n"]  # as the table holds it (an int; a float if a NaN)
    mean = Estimate(float(m["statistic"]), float(m["ci_low"]), float(m["ci_high"]), n=n)
    return CeilingCell(level, coefficient, t["group"].iloc[0], t, mean, int(m["n_items"]),
                       int((t["annotator"] != "mean").sum()))


def run_ceiling(dataset: Dataset, frame: pd.DataFrame, dimension: str, *, levels: Sequence[str],
                coefficients: Sequence[str], n_resamples: int = 0, skip_constant: bool = True, random_state: int = 0
                ) -> list[CeilingCell]:
    """The ceiling of one run's score frame at every level x coefficient, each on the items the run's correlation
    at that level uses; [] where fewer than two annotators rated the dimension (or share items)."""
    cells = []
    for lv in levels:
        items = correlated_items(frame, level=lv, skip_constant=skip_constant)
        for co in coefficients:
            t = ceiling_table(dataset, dimension, level=lv, coefficient=co, item_ids=items, n_resamples=n_resamples,
                              skip_constant=skip_constant, random_state=random_state)
            if t.empty:
                return []
            cells.append(_cell(t, lv, co))
    return cells


def run_ceilings(dataset: Dataset, runs: list[Run], dimension: str, *, level: str, coefficient: str,
                 systems: list[str] | None = None, n_resamples: int = 0, skip_constant: bool = True
                 ) -> pd.DataFrame:
    """The human ceiling on exactly the items each run is correlated on (its scored items, in the selected
    systems): one block of rows (each expert, then their mean) per run, with a ``run`` column."""
    if not has_correlations(dataset, dimension):  # no correlation of nominal codes, hence no ceiling to hold it to
        return pd.DataFrame()
    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        cells = run_ceiling(dataset, frame, dimension, levels=(level,), coefficients=(coefficient,),
                            n_resamples=n_resamples, skip_constant=skip_constant)
        if not cells:
            continue
        t = cells[0].table.copy()
        t.insert(0, "run", labels[run_id])
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def ceiling_means(ceiling: pd.DataFrame | None) -> pd.DataFrame:
    """The "mean" rows of ``run_ceilings`` (one per run: the ceiling on that run's items, with its interval)."""
    if ceiling is None or ceiling.empty or "run" not in ceiling.columns:
        return pd.DataFrame(columns=["run", "statistic", "ci_low", "ci_high"])
    return ceiling[ceiling["annotator"] == "mean"].reset_index(drop=True)
