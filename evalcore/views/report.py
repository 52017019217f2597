"""The HTML report of the current analysis (the sidebar's "Export report")."""

from __future__ import annotations

from dataclasses import dataclass

from evalcore.model import Dataset, Run
from evalcore.views.alignment import (
    alignment_figure,
    alignment_table,
    ceiling_table,
    correct_preferences_table,
    filter_correlations,
    headline_figure,
    judge_by_human_figure,
    judge_by_human_table,
    meta_correlation_table,
    meta_scatter,
    per_system_box,
    per_system_table,
)
from evalcore.views.common import label_colors, run_label
from evalcore.views.format import cite, sources_key


@dataclass
class AnalysisParams:
    dataset_id: str
    run_ids: list[str]
    dimension: str
    level: str = "dataset"
    coefficient: str = "spearman"
    parse: str = "robust"
    n_resamples: int = 1000
    systems: list[str] | None = None


def analysis_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams) -> list:
    """The alignment analysis of the current view as report sections (tables + figures)."""
    from evalcore.views.html_report import ReportFigure, ReportSection, ReportTable

    sections = label_sections(dataset, runs, p)  # binary / nominal / ordinal dimensions only (issue 7.4)
    colors = report_colors(dataset, runs)
    table = alignment_table(dataset, runs, p.dimension, n_resamples=p.n_resamples, systems=p.systems)
    sec = ReportSection(title=f"Correlation with human ratings: {p.dimension}",
                        text=f"Bootstrap 95% CIs over {p.n_resamples} resamples; parse mode {p.parse}. "
                             "n = items (dataset level), documents (summary level) or systems (system level); "
                             "skipped = documents with a constant side (summary level); "
                             "dropped = items whose judge reply could not be parsed.")
    ceiling = ceiling_table(dataset, p.dimension, level=p.level, coefficient=p.coefficient)
    if not table.empty:
        if not filter_correlations(table, level=p.level, coefficient=p.coefficient).empty:
            sec.figures.append(ReportFigure(f"Correlation against the human ceiling ({p.level}, {p.coefficient})",
                                            headline_figure(table, ceiling, level=p.level,
                                                            coefficient=p.coefficient, colors=colors)))
        sec.tables.append(ReportTable("Correlations", table))
        sec.figures.append(ReportFigure("Correlation by level", alignment_figure(table, p.coefficient, colors)))
    if not ceiling.empty:
        sec.tables.append(ReportTable(f"Human ceiling ({p.level}, {p.coefficient})", ceiling))
    items = judge_by_human_table(dataset, runs, p.dimension, systems=p.systems)
    if not items.empty:
        sec.figures.append(ReportFigure("Judge score per human score (items)",
                                        judge_by_human_figure(items, p.dimension, colors=colors)))
    sections.append(sec)

    dims = [d for d in dataset.dimension_names if any(d in r.dimensions for r in runs)]
    ps = per_system_table(dataset, runs, dims, coefficient=p.coefficient, systems=p.systems)
    if not ps.empty:
        mt = meta_correlation_table(dataset, runs, dims, coefficient=p.coefficient, systems=p.systems)
        s2 = ReportSection(title=f"Per-system correlations and meta-correlation ({cite('003')})")
        s2.figures.append(ReportFigure("Per-system correlation", per_system_box(ps, p.coefficient, colors)))
        if not mt.empty:
            s2.tables.append(ReportTable("Meta-correlation M", mt))
            if (ps["dimension"] == p.dimension).any():
                s2.figures.append(ReportFigure("Q_i vs P_i", meta_scatter(ps, mt, p.dimension, p.coefficient,
                                                                          colors)))
        s2.tables.append(ReportTable("Per-system correlation P_i", ps))
        sections.append(s2)
        cp = correct_preferences_table(dataset, runs, dims, systems=p.systems)
        if not cp.empty:
            sections.append(ReportSection(title=f"Correct preferences #CP ({cite('003', 'Sec. 4.2.1')})",
                                          tables=[ReportTable("#CP", cp)]))
        sections.append(ReportSection(title="Sources", text="\n".join(sources_key(["003"]))))
    return sections


def report_colors(dataset: Dataset, runs: list[Run]) -> dict[str, str]:
    """The pages' run colours: keyed over every run of the dataset, so the report matches the app."""
    from evalcore import runs as runs_mod

    try:
        every = runs_mod.list_runs(dataset.id)
    except (KeyError, OSError, ValueError):
        every = []
    known = {r.run_id for r in every}
    return label_colors(list(every) + [r for r in runs if r.run_id not in known])


def label_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams) -> list:
    """Kappa & co, the confusion matrices and calibration of a categorical dimension as report sections."""
    from evalcore.views.html_report import ReportFigure, ReportSection, ReportTable
    from evalcore.views.alignment import (
        calibration_table, confusion_figure, label_agreement_table, label_agreements, per_annotator_kappa_table,
        reliability_figure,
    )

    reports = label_agreements(dataset, runs, p.dimension, n_resamples=p.n_resamples, systems=p.systems)
    if not reports:
        return []
    first = next(iter(reports.values()))
    sec = ReportSection(title=f"Agreement on {first.kind} labels: {p.dimension}",
                        text=f"Human label: {first.gold}. Bootstrap 95% CIs over documents ({p.n_resamples} "
                             "resamples). Confusion matrices: rows = human label, columns = judge label.")
    sec.tables.append(ReportTable("Label agreement", label_agreement_table(reports)))
    for run, rep in reports.items():
        sec.figures.append(ReportFigure(f"Confusion matrix: {run}", confusion_figure(rep, run)))
    per_annotator = per_annotator_kappa_table(reports)
    if not per_annotator.empty:
        sec.tables.append(ReportTable("The judge against each annotator", per_annotator))
    cal = calibration_table(reports)
    if not cal.empty:
        sec.tables.append(ReportTable("Calibration", cal))
        sec.figures.append(ReportFigure("Reliability diagram", reliability_figure(reports)))
    return [sec]


def analysis_report(dataset: Dataset, runs: list[Run], p: AnalysisParams) -> str:
    from evalcore.views.html_report import render_report

    meta = {"dataset": f"{dataset.name} ({dataset.id})", "runs": ", ".join(run_label(r) for r in runs),
            "dimension": p.dimension, "level": p.level, "coefficient": p.coefficient, "parse mode": p.parse,
            "bootstrap resamples": p.n_resamples}
    if p.systems:
        meta["systems"] = ", ".join(p.systems)
    return render_report(f"JudgeScope: {dataset.name}", analysis_sections(dataset, runs, p), meta=meta)
