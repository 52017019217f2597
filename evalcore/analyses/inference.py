"""May the judge replace the annotators, and what may be concluded from few labels, as ``meta`` computes them for one
run and dimension (``--alt-test``, ``--ppi``, ``--bradley-terry``): the Alternative Annotator Test (Calderon et al.
2025), prediction-powered estimates of each system's mean (PPI / PPI++) and Bradley-Terry rankings from the votes
and from the verdicts, each an ``Outcome``: the result of evalcore.meta, or why the data cannot give it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from evalcore.analyses.ceiling import ceiling_group
from evalcore.model import Dataset, Run


@dataclass(frozen=True)
class Outcome:
    """A result of evalcore.meta (its ``as_dict`` is what ``meta --json`` writes, with ``extra`` keys after it), or
    the reason there is none (``error``)."""

    result: Any = None
    error: str = ""
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"error": self.error} if self.error else self.result.as_dict() | self.extra


def _guarded(compute: Callable[[], Any], extra: dict | None = None) -> Outcome:
    """The result, or why its data cannot give it (the rest of the analysis stands)."""
    try:
        return Outcome(compute(), extra=extra or {})
    except ValueError as e:
        return Outcome(error=str(e))


def _ppi(frame, opts: dict[str, Any], n_resamples: int, random_state: int) -> Outcome:
    from evalcore.meta import ppi

    k = opts.get("ppi_rated_docs")

    def compute():
        f = ppi.hide_ratings(frame, k, random_state=random_state) if k is not None else frame
        return ppi.ppi_by_system(f, method=opts["ppi"], n_resamples=n_resamples, random_state=random_state)

    return _guarded(compute, {"rated_documents": k} if k is not None else None)


def score_inference(dataset: Dataset, run: Run, dim: str, opts: dict[str, Any], n_resamples: int, random_state: int,
                    systems: list[str] | None) -> dict[str, Outcome]:
    """``alt_test`` and ``ppi`` of a score run's dimension, as asked in ``opts`` (evalcore.cli._inference_options):
    the Alt-Test against the annotators of the human ceiling's group, PPI of each system's mean human score."""
    from evalcore.meta import alt_test as at
    from evalcore.meta import ppi

    scores = run.scores(dim)
    if systems is not None:
        scores = scores[scores["item_id"].isin(dataset.items.loc[dataset.items["system_id"].isin(systems), "item_id"])]
    d = dataset.dimension(dim)
    out: dict[str, Outcome] = {}
    if opts.get("alt_test"):
        a, group = opts["alt_test"], ceiling_group(dataset, dim)
        scoring = a["scoring"] or at.default_scoring(d.kind)
        out["alt_test"] = Outcome(error=f"fewer than two annotators rated {dim!r}: the Alt-Test needs per-annotator "
                                        "ratings from at least two") if group is None else _guarded(
            lambda: at.alt_test_scores(dataset.annotations, scores, dim, group=group, scoring=scoring,
                                       epsilon=a["epsilon"]), {"group": group})
    if opts.get("ppi"):
        if d.kind == "nominal":
            out["ppi"] = Outcome(error=f"{dim!r} is nominal: its categories have no mean to estimate")
        else:
            out["ppi"] = _ppi(ppi.judged_frame(dataset.items, dataset.human_scores, scores, dim), opts, n_resamples,
                              random_state)
    return out


def pairwise_inference(dataset: Dataset, run: Run, dim: str, opts: dict[str, Any], n_resamples: int,
                       random_state: int) -> dict[str, Outcome]:
    """``alt_test`` (the votes scored by accuracy), ``ppi`` (each model's win rate) and ``bradley_terry`` of a
    pairwise run, as asked in ``opts``."""
    from evalcore.meta import alt_test as at
    from evalcore.meta import bradley_terry as bt
    from evalcore.meta import ppi

    prefs, comps = dataset.preferences, run.comparisons
    out: dict[str, Outcome] = {}
    if opts.get("alt_test"):
        out["alt_test"] = _guarded(lambda: at.alt_test_pairwise(prefs, comps, dimension=dim,
                                                                epsilon=opts["alt_test"]["epsilon"]))
    if opts.get("ppi"):
        try:
            frame = ppi.pairwise_frame(prefs, comps, dataset.items, dimension=dim)
        except ValueError as e:
            out["ppi"] = Outcome(error=str(e))
        else:
            out["ppi"] = _ppi(frame, opts, n_resamples, random_state)
    if opts.get("bradley_terry"):
        out["bradley_terry"] = _guarded(lambda: bt.compare_rankings(
            prefs, comps, dataset.items, dimension=dim, n_resamples=n_resamples, random_state=random_state))
    return out
