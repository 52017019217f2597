"""The notebook door: a pandas frame of judge scores and human ratings in, the figures the app shows out.

``evaluate`` reads a plain frame (a judge column, a human column, document and system columns, and optionally an
annotator column with one row per annotator's rating) through the same importer as an uploaded file (so a bad cell is
said with its row and column, as on the Data page), then asks the same analyses the Alignment page and ``meta
--json`` use: :func:`evalcore.analyses.evaluation.dimension_analysis` (correlations at every level and coefficient,
the human ceiling, the system level, and on a categorical dimension the label agreement with Cohen's kappa) and
:func:`evalcore.analyses.inference.score_inference` (the Alternative Annotator Test and prediction-powered estimates
of each system's mean). Nothing is written to the store. Guide: docs/api.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any

import pandas as pd

from evalcore.analyses.correlations import RunCorrelations
from evalcore.analyses.evaluation import DimensionAnalysis, Settings, dimension_analysis
from evalcore.analyses.inference import Outcome, score_inference
from evalcore.importers import ColumnMapping, import_table
from evalcore.importers.mapping import JudgeColumn
from evalcore.meta.alt_test import DEFAULT_EPSILON
from evalcore.meta.coefficients import COEFFICIENTS
from evalcore.meta.correlation import LEVELS
from evalcore.model import Dataset, Run


@dataclass(frozen=True)
class Evaluation:
    """One judge against the humans on one dimension: each field an analysis result holding
    ``evalcore.meta.results.Estimate``s (a point, its interval, n), as the app shows them."""

    dimension: str
    analysis: DimensionAnalysis
    alt_test: Outcome
    ppi: Outcome
    dataset: Dataset
    run: Run

    @property
    def correlations(self) -> RunCorrelations | None:
        """Every (level, coefficient) -> Estimate; None on a nominal dimension."""
        return self.analysis.correlations

    @property
    def agreement(self) -> Any:
        """The label agreement (Cohen's kappa, weighted kappa, accuracy, ...) on a categorical dimension, else None."""
        return self.analysis.agreement

    @property
    def kappa(self):
        """Cohen's kappa (an Estimate) on a categorical dimension, else None."""
        a = self.agreement
        return a.result.cohen_kappa if a is not None and not isinstance(a, Exception) else None

    def correlation(self, level: str = "dataset", coefficient: str = "pearson"):
        """The Estimate of one level and coefficient."""
        if self.correlations is None:
            raise ValueError(f"{self.dimension!r} is nominal: its categories have no correlation")
        return self.correlations.cells[(level, coefficient)]

    def table(self) -> pd.DataFrame:
        """The correlations as the Alignment page's table (one row per level and coefficient)."""
        return self.correlations.table() if self.correlations is not None else pd.DataFrame()


def _mapping(frame: pd.DataFrame, *, judge: str, human: str, document: str, system: str, annotator: str | None,
             dimension: str, scale: tuple[float, float] | None, kind: str | None,
             labels: list[str] | None) -> tuple[pd.DataFrame, ColumnMapping]:
    """The frame as the importer's table and the roles of its columns."""
    for col in (judge, human, document, system, annotator):
        if col is not None and col not in frame.columns:
            raise KeyError(f"no column {col!r} in the frame (columns: {', '.join(map(str, frame.columns))})")
    table = frame.reset_index(drop=True)
    m = ColumnMapping(doc_id=document, system_id=system, judges=[JudgeColumn(judge, None if annotator else dimension,
                                                                              name=judge)])
    if annotator:  # one row per annotator's rating: the long shape, the dimension named in a column of its own
        table = table.assign(**{"__dimension__": dimension})
        m.dimension, m.value, m.annotator = "__dimension__", human, annotator
    else:
        m.dimensions = {dimension: human}
    if scale is not None:
        m.scales = {dimension: (float(scale[0]), float(scale[1]))}
    if kind:
        m.kinds = {dimension: kind}
    if labels:
        m.labels = {dimension: list(labels)}
    return table, m


def evaluate(frame: pd.DataFrame, *, judge: str = "judge", human: str = "human", document: str = "document",
             system: str = "system", annotator: str | None = None, dimension: str = "score",
             scale: tuple[float, float] | None = None, kind: str | None = None, labels: list[str] | None = None,
             levels: Iterable[str] = LEVELS, coefficients: Iterable[str] = COEFFICIENTS, n_resamples: int = 1000,
             random_state: int = 0, epsilon: float = DEFAULT_EPSILON, ppi: str = "ppi++",
             ppi_rated_docs: int | None = None, name: str = "notebook") -> Evaluation:
    """The judge column against the human column of ``frame`` (module note). ``annotator``: a column naming who gave
    each human rating (one row per rating; the judge's score repeated on an item's rows); without it each row is one
    item and its human rating. ``scale``, ``kind`` ("interval", "ordinal", "binary", "nominal") and ``labels`` as the
    Data page's; ``epsilon`` the Alt-Test's; ``ppi`` "ppi" or "ppi++", ``ppi_rated_docs`` how many documents keep
    their human ratings (the rest judge-only). Raises DatasetValidationError (row and column) on a bad cell."""
    table, m = _mapping(frame, judge=judge, human=human, document=document, system=system, annotator=annotator,
                        dimension=dimension, scale=scale, kind=kind, labels=labels)
    # handed over as JSON lines (not CSV): the cells keep their types (an id "007" stays text), and every CSV the
    # product writes goes through evalcore.csvsafe, which is for files people open, not for this hand-over
    lines = table.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")
    result = import_table((lines, f"{name}.jsonl"), m, name=name, task="notebook frame")
    dataset, run = result.dataset, result.runs[0]
    s = Settings(levels=tuple(levels), coefficients=tuple(coefficients), n_resamples=n_resamples,
                 random_state=random_state)
    analysis = dimension_analysis(dataset, run, dimension, s)
    opts = {"alt_test": {"scoring": None, "epsilon": epsilon}, "ppi": ppi, "ppi_rated_docs": ppi_rated_docs}
    inference = score_inference(dataset, run, dimension, opts, n_resamples, random_state, None)
    return Evaluation(dimension, analysis, inference["alt_test"], inference.get("ppi", Outcome(error="")),
                      dataset, run)
