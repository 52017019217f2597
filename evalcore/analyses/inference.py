"""May the judge replace the annotators, and what may be concluded from few labels, as ``meta`` computes them for one
run and dimension (``--alt-test``, ``--ppi``, ``--bradley-terry``): the Alternative Annotator Test (Calderon et al.
2025), prediction-powered estimates of each system's mean (PPI / PPI++) and Bradley-Terry rankings from the votes
and from the verdicts, each an ``Outcome``: the result of evalcore.meta, or why the data cannot give it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd

from evalcore.analyses.ceiling import ceiling_group
from evalcore.meta.results import to_dict
from evalcore.model import Dataset, Run


@dataclass(frozen=True)
class Outcome:
    """A result of evalcore.meta (its ``to_dict`` is what ``meta --json`` writes, with ``extra`` keys after it), or
    the reason there is none (``error``)."""

    result: Any = None
    error: str = ""
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"error": self.error} if self.error else to_dict(self.result) | self.extra


def _guarded(compute: Callable[[], Any], extra: dict | None = None) -> Outcome:
    """The result, or why its data cannot give it (the rest of the analysis stands)."""
    try:
        return Outcome(compute(), extra=extra or {})
    except ValueError as e:
        return Outcome(error=str(e))


def is_pairwise(run: Run) -> bool:
    """A run of pairwise verdicts (no per-item scores)."""
    return run.judgments.empty and not run.comparisons.empty


def human_scale(dataset: Dataset, dim: str, pairwise: bool) -> tuple[float, float] | None:
    """The (lowest, highest) human score: 0-1 for a win rate, the dimension's scale where it has one. PPI clips its
    estimates and intervals to it (evalcore.meta.ppi's module docstring)."""
    if pairwise:
        return (0.0, 1.0)
    d = dataset.dimension(dim)
    lo, hi = getattr(d, "scale_min", None), getattr(d, "scale_max", None)
    return (float(lo), float(hi)) if lo is not None and hi is not None and hi > lo else None


def _restrict(scores: pd.DataFrame, dataset: Dataset, systems: list[str] | None) -> pd.DataFrame:
    if systems is None:
        return scores
    return scores[scores["item_id"].isin(dataset.items.loc[dataset.items["system_id"].isin(systems), "item_id"])]


def alt_test(dataset: Dataset, run: Run, dim: str, *, epsilon: float, scoring: str | None = None,
             small_sample: str = "skip", systems: list[str] | None = None) -> Outcome:
    """The Alt-Test of ``run`` on ``dim``: per-item ratings against the annotators of the human ceiling's group
    (``extra``: that group), pairwise verdicts against the votes (accuracy); ``systems`` restricts a score run's
    items to those systems."""
    from evalcore.meta import alt_test as at

    if is_pairwise(run):
        return _guarded(lambda: at.alt_test_pairwise(dataset.preferences, run.comparisons, dimension=dim,
                                                     epsilon=epsilon, small_sample=small_sample))
    group = ceiling_group(dataset, dim)
    if group is None:
        return Outcome(error=f"fewer than two annotators rated {dim!r}: the Alt-Test needs per-annotator "
                             "ratings from at least two")
    scores = _restrict(run.scores(dim), dataset, systems)
    scoring = scoring or at.default_scoring(dataset.dimension(dim).kind)
    return _guarded(lambda: at.alt_test_scores(dataset.annotations, scores, dim, group=group, scoring=scoring,
                                               epsilon=epsilon, small_sample=small_sample), {"group": group})


def ppi_frame(dataset: Dataset, run: Run, dim: str, systems: list[str] | None = None):
    """PPI's input: every judged item with its human score where there is one (pairwise: each model's points per
    pair, human = the votes' mean points). A ValueError where the data cannot give it."""
    from evalcore.meta import ppi as ppi_mod

    if is_pairwise(run):
        return ppi_mod.pairwise_frame(dataset.preferences, run.comparisons, dataset.items, dimension=dim)
    return ppi_mod.judged_frame(dataset.items, dataset.human_scores, _restrict(run.scores(dim), dataset, systems), dim)


def ppi(dataset: Dataset, run: Run, dim: str, *, method: str, rated: int | None = None, cap_rated: bool = False,
        n_resamples: int, random_state: int, systems: list[str] | None = None,
        frame: pd.DataFrame | None = None) -> Outcome:
    """PPI (``method`` "ppi" or "ppi++") of each system's mean human score (pairwise: each model's win rate), clipped
    to the human scale (``human_scale``); ``rated`` keeps the ratings of that many documents drawn at random and
    treats the rest as unrated (``cap_rated``: at most as many as are rated, else too many is an error; ``extra``:
    the count kept). ``frame``: ``ppi_frame``'s answer where the caller has it."""
    from evalcore.meta import ppi as ppi_mod

    pairwise = is_pairwise(run)
    if not pairwise and dataset.dimension(dim).kind == "nominal":
        return Outcome(error=f"{dim!r} is nominal: its categories have no mean to estimate")

    def compute():
        f = ppi_frame(dataset, run, dim, systems) if frame is None else frame
        k = rated
        if k is not None and cap_rated:
            k = min(int(k), int(f.loc[f["human"].notna() & f["judge"].notna(), "doc_id"].nunique()))
        f = ppi_mod.hide_ratings(f, k, random_state=random_state) if k is not None else f
        return Outcome(ppi_mod.ppi_by_system(f, method=method, n_resamples=n_resamples, random_state=random_state,
                                             scale=human_scale(dataset, dim, pairwise)),
                       extra={"rated_documents": k} if k is not None else {})

    try:
        return compute()
    except ValueError as e:
        return Outcome(error=str(e))


def bradley_terry(dataset: Dataset, run: Run, dim: str, *, n_resamples: int, random_state: int) -> Outcome:
    """The humans' and the judge's Bradley-Terry rankings of a pairwise run side by side."""
    from evalcore.meta import bradley_terry as bt

    return _guarded(lambda: bt.compare_rankings(dataset.preferences, run.comparisons, dataset.items, dimension=dim,
                                                n_resamples=n_resamples, random_state=random_state))


def score_inference(dataset: Dataset, run: Run, dim: str, opts: dict[str, Any], n_resamples: int, random_state: int,
                    systems: list[str] | None) -> dict[str, Outcome]:
    """``alt_test`` and ``ppi`` of a score run's dimension, as asked in ``opts`` (evalcore.cli._inference_options):
    the Alt-Test against the annotators of the human ceiling's group, PPI of each system's mean human score."""
    out: dict[str, Outcome] = {}
    if opts.get("alt_test"):
        a = opts["alt_test"]
        out["alt_test"] = alt_test(dataset, run, dim, epsilon=a["epsilon"], scoring=a["scoring"], systems=systems)
    if opts.get("ppi"):
        out["ppi"] = ppi(dataset, run, dim, method=opts["ppi"], rated=opts.get("ppi_rated_docs"),
                         n_resamples=n_resamples, random_state=random_state, systems=systems)
    return out


def pairwise_inference(dataset: Dataset, run: Run, dim: str, opts: dict[str, Any], n_resamples: int,
                       random_state: int) -> dict[str, Outcome]:
    """``alt_test`` (the votes scored by accuracy), ``ppi`` (each model's win rate) and ``bradley_terry`` of a
    pairwise run, as asked in ``opts``."""
    out: dict[str, Outcome] = {}
    if opts.get("alt_test"):
        out["alt_test"] = alt_test(dataset, run, dim, epsilon=opts["alt_test"]["epsilon"])
    if opts.get("ppi"):
        out["ppi"] = ppi(dataset, run, dim, method=opts["ppi"], rated=opts.get("ppi_rated_docs"),
                         n_resamples=n_resamples, random_state=random_state)
    if opts.get("bradley_terry"):
        out["bradley_terry"] = bradley_terry(dataset, run, dim, n_resamples=n_resamples, random_state=random_state)
    return out
