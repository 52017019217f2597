"""The HTML report of the current analysis (the sidebar's "Export report"): the analyses of evalcore.analyses, the
same the page computes, rendered as report sections, mostly through the page's own blocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.analyses.ceiling import run_ceilings
from evalcore.analyses.common import scored_dimensions
from evalcore.analyses.correlations import alignment_table, filter_correlations, support_notes
from evalcore.analyses.systems import correct_preferences_table, meta_correlation_table, per_system_table
from evalcore.model import Dataset, Run
from evalcore.views.alignment import (
    alignment_figure,
    ceiling_blocks,
    ceiling_note,
    cp_blocks,
    headline_figure,
    judge_by_human_blocks,
    judge_by_human_table,
    per_system_blocks,
)
from evalcore.views.common import label_colors, run_label, run_names
from evalcore.views.blocks import Block
from evalcore.views.format import cite, sources_key
from evalcore.views.html_report import ReportSection
from evalcore.views.provenance import provenance_section

if TYPE_CHECKING:  # scipy loads where a comparison is computed
    import pandas as pd

    from evalcore.meta.compare import PairedComparisonResult


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


@dataclass
class Computed:
    """What a caller may have computed already (the app caches both per cell and shares them between sessions):
    the full correlation table (``alignment_table`` of every level and coefficient) and the paired comparison of the
    first two runs (``compare_pair``). None: the report computes it."""
    correlations: pd.DataFrame | None = None
    comparison: PairedComparisonResult | None = None


def compare_pair(runs: list[Run], dimension: str) -> tuple[Run, Run] | None:
    """The two runs the report's Compare section tests: the first two per-item runs that scored the dimension."""
    scored = [r for r in runs if not r.judgments.empty and dimension in r.dimensions]
    return (scored[0], scored[1]) if len(scored) >= 2 else None


def analysis_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams, computed: Computed | None = None
                      ) -> list:
    """The alignment analysis of the current view as report sections (tables + figures)."""
    from evalcore.views.html_report import ReportFigure, ReportTable

    computed = computed or Computed()
    sections = label_sections(dataset, runs, p)  # binary / nominal / ordinal dimensions only (issue 7.4)
    sections += pairwise_sections(dataset, runs, p)  # human pairwise votes and a judge's A / B / tie verdicts
    colors = report_colors(dataset, runs)
    table = (computed.correlations if computed.correlations is not None
             else alignment_table(dataset, runs, p.dimension, n_resamples=p.n_resamples, systems=p.systems))
    sec = ReportSection(title=f"Correlation with human ratings: {p.dimension}",
                        text=f"Bootstrap 95% CIs over {p.n_resamples} resamples; parse mode {p.parse}. "
                             "n = items (dataset level), documents (summary level) or systems (system level); "
                             "skipped = documents with a constant side (summary level); "
                             "dropped = items whose judge reply could not be parsed.")
    ceiling = run_ceilings(dataset, runs, p.dimension, level=p.level, coefficient=p.coefficient, systems=p.systems,
                           n_resamples=p.n_resamples)
    if not table.empty:
        if not filter_correlations(table, level=p.level, coefficient=p.coefficient).empty:
            sec.figures.append(ReportFigure(f"Correlation against the human ceiling ({p.level}, {p.coefficient})",
                                            headline_figure(table, ceiling, level=p.level,
                                                            coefficient=p.coefficient, colors=colors)))
        sec.tables.append(ReportTable("Correlations", table))
        sec.figures.append(ReportFigure("Correlation by level", alignment_figure(table, p.coefficient, colors)))
    if not ceiling.empty:
        page_parts(sec, ceiling_blocks(table, ceiling, p.dimension, level=p.level, coefficient=p.coefficient),
                   tables={"ceiling": f"Human ceiling ({p.level}, {p.coefficient}) on each run's items"})
        two = ceiling_note(table, ceiling, level=p.level, coefficient=p.coefficient)
        if two:  # two annotators: what the ceiling is then, and why a judge can exceed it
            sec.text += "\n" + two
    notes = support_notes(dataset, runs, p.dimension, systems=p.systems)
    if notes:  # what a figure rests on, as the page says it (issue 18.5)
        sec.text += "\nWarning: " + "\nWarning: ".join(notes)
    items = judge_by_human_table(dataset, runs, p.dimension, systems=p.systems)
    page_parts(sec, judge_by_human_blocks(items, p.dimension, colors=colors),
               figures={"judge_by_human": "Judge score per human score (items)"})
    sections.append(sec)

    per_system = per_system_sections(dataset, runs, p, colors)
    sections += per_system
    from evalcore.views.inference import report_sections as inference_sections  # the Alt-Test and PPI

    sections += inference_sections(dataset, runs, p.dimension, systems=p.systems) + guarantees_sections(dataset, runs, p)
    sections += registered_sections(dataset, runs, p)  # the analyses installed packages add
    sections += bias_sections(dataset, runs, p) + compare_sections(dataset, runs, p, computed.comparison)
    if per_system:
        sections.append(ReportSection(title="Sources", text="\n".join(sources_key(["003"]))))
    return sections


def per_system_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams, colors: dict[str, str]
                        ) -> list[ReportSection]:
    """Per-system correlations with the meta-correlation, and #CP (Gao et al.'s system-level views); none when no
    system has enough items."""
    from evalcore.views.html_report import ReportSection

    dims = list(scored_dimensions(dataset, runs))
    ps = per_system_table(dataset, runs, dims, coefficient=p.coefficient, systems=p.systems)
    if ps.empty:
        return []
    mt = meta_correlation_table(dataset, runs, dims, coefficient=p.coefficient, systems=p.systems)
    s2 = ReportSection(title=f"Per-system correlations and meta-correlation ({cite('003')})")
    page_parts(s2, per_system_blocks(ps, mt, p.dimension, p.coefficient, colors),  # the page's own blocks
               figures={"per_system": "Per-system correlation", "meta_scatter": "Q_i vs P_i"},
               tables={"meta_correlation": "Meta-correlation M", "per_system": "Per-system correlation P_i"})
    sections = [s2]
    cp = correct_preferences_table(dataset, runs, dims, systems=p.systems)
    if not cp.empty:
        s3 = ReportSection(title=f"Correct preferences #CP ({cite('003', 'Sec. 4.2.1')})")
        page_parts(s3, cp_blocks(cp), tables={"cp": "#CP"})
        sections.append(s3)
    return sections


def registered_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams) -> list[ReportSection]:
    """A section per analysis an installed package registered (``evalcore.registry.ANALYSES``, those with tables;
    the built-ins have the sections above): its tables over the runs that scored the dimension, one row per run."""
    from evalcore import registry
    from evalcore.analyses.evaluation import Settings, registered_tables
    from evalcore.meta.coefficients import COEFFICIENTS
    from evalcore.meta.correlation import LEVELS
    from evalcore.views.html_report import ReportTable

    settings = Settings(LEVELS, COEFFICIENTS, p.n_resamples, 0, p.systems)
    return [ReportSection(title=f"{registry.ANALYSES[name].label}: {p.dimension}",
                          text=f"Added by {registry.ANALYSES.origin(name)} ({registry.ANALYSES[name].module})"
                               f"{systems_note(p)}.",
                          tables=[ReportTable(title, frame) for title, frame in shown.items()])
            for name, shown in registered_tables(dataset, runs, p.dimension, settings).items()]


def guarantees_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams) -> list:
    """The Alignment page's Guarantees expander (evalcore.views.guarantees, the same blocks): selective evaluation
    at each alpha with its delta, and the conformal intervals' coverage, on the held-out documents."""
    from evalcore.views import guarantees as gv

    if not gv.scored_runs(runs, p.dimension):
        return []
    blocks = gv.blocks(dataset, runs, run_names(runs), p.dimension)
    alphas = " and ".join(f"{a:g}" for a in gv.ALPHAS)
    sec = ReportSection(
        title=f"Guarantees: {p.dimension}",
        text=f"Half the documents ({dataset.items['doc_id'].nunique() // 2}, drawn at random) calibrate a "
             "confidence threshold by fixed-sequence testing with an exact binomial bound (Jung, Brahman & Choi, "
             f"ICLR 2025) at alpha {alphas}, delta {gv.DELTA:g}: the items the judge keeps then agree with the "
             "humans at least 1 - alpha, with probability at least 1 - delta. Coverage and agreement on kept items "
             "(Clopper-Pearson 95% interval) are measured on the other documents; the abstained items go to a "
             f"stronger judge or to people. {gv.LEVEL:.0%} split conformal intervals for each item's human score "
             "from the judge's score, calibrated on the same documents: coverage and width on the held-out "
             "documents." + (" The systems filter does not apply to this section: every item is counted."
                             if p.systems else ""))
    page_parts(sec, blocks, tables={"guar_selective": "Selective evaluation",
                                    "guar_cascade": f"A cascade of the selected runs (alpha {gv.ALPHAS[0]:g})",
                                    "guar_conformal": f"Intervals for each item's human score ({gv.LEVEL:.0%})"})
    return [sec] if sec.tables else []


def bias_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams) -> list:
    """The Bias page's tables (issue 18.13: the report had no Bias section): mean judge vs mean human score per
    system (003 Fig. 4) and position bias of pairwise runs."""
    from evalcore.views.bias import mean_scores_blocks, mean_scores_table, position_bias_blocks, position_bias_table

    dims = [d for d in dataset.dimension_names if any(d in r.dimensions for r in runs)]
    means = mean_scores_table(dataset, runs, dims, systems=p.systems)
    pos = position_bias_table(runs)
    if means.empty and pos.empty:
        return []
    sec = ReportSection(title="Bias", text="Mean judge score vs mean human score per system (judge scales may "
                                           "differ from the human scale)" + systems_note(p) + "; position bias of "
                                           "pairwise runs" + (" (all of their pairs: the systems filter does not "
                                                              "apply to pairs)" if p.systems and not pos.empty
                                                              else "") + ".")
    # the Bias page's own blocks: the report keeps those it names
    page_parts(sec, mean_scores_blocks(means, p.dimension, report_colors(dataset, runs)),
               figures={"mean_scores": "Mean judge vs mean human score"},
               tables={"mean_scores": "Mean scores per system"})
    page_parts(sec, position_bias_blocks(pos, runs), tables={"position_bias": "Position bias"})
    return [sec]


def page_parts(sec: ReportSection, blocks: list[Block] | tuple[Block, ...], *, figures: dict[str, str] | None = None,
               tables: dict[str, str] | None = None) -> None:
    """The figures and tables of a page's view model (evalcore.views.blocks) that the report shows, added to
    ``sec`` under the report's titles (keyed by the blocks' keys); the page's other blocks, and empty tables (the
    page says "nothing to show"; the report leaves them out), are left out."""
    from evalcore.views.blocks import Figure, Table
    from evalcore.views.blocks import tables as all_tables
    from evalcore.views.html_report import ReportFigure, ReportTable

    # in the order the report names them (its own reading order, which may differ from the page's)
    shown_figures = {b.key: b.figure for b in blocks if isinstance(b, Figure)}
    shown_tables = {t.key: t.frame for t in all_tables(blocks) if isinstance(t, Table)}
    sec.figures += [ReportFigure(title, shown_figures[key]) for key, title in (figures or {}).items()
                    if key in shown_figures]
    sec.tables += [ReportTable(title, shown_tables[key]) for key, title in (tables or {}).items()
                   if key in shown_tables and not shown_tables[key].empty]


def compare_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams,
                     res: PairedComparisonResult | None = None) -> list[ReportSection]:
    """The Compare page's test for the first two per-item runs that scored the dimension (issue 18.13): the paired
    bootstrap of the difference in correlation with the humans, the test of equal correlation (``res``: that
    comparison computed already)."""
    from evalcore.views.compare import paired_comparison, result_blocks

    pair = compare_pair(runs, p.dimension)
    if pair is None:
        return []
    a, b = pair
    if res is None:
        res = paired_comparison(dataset, a, b, p.dimension, level=p.level, coefficient=p.coefficient,
                                n_resamples=p.n_resamples, systems=p.systems)
    text = (f"{run_label(a)} vs {run_label(b)} on {p.dimension}{systems_note(p)}, {p.level} level, "
            f"{p.coefficient}: paired "
            f"bootstrap over documents ({p.n_resamples} resamples) of the difference in correlation with the humans; "
            "its p-value tests equal correlation. Both runs on the items both parsed"
            + (", averaged over the documents where both are defined." if p.level == "summary" else "."))
    sec = ReportSection(title="Compare", text=text)
    page_parts(sec, result_blocks(res, run_label(a), run_label(b), p.dimension), tables={"paired": "Paired difference"})
    return [sec]


def systems_note(p: AnalysisParams) -> str:
    """" (systems: M8, M9)" when the view is restricted to some systems: said in each section it applies to."""
    return f" (systems: {', '.join(p.systems)})" if p.systems else ""


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


def pairwise_sections(dataset: Dataset, runs: list[Run], p: AnalysisParams) -> list:
    """The Alignment page's Pairwise preferences tab as a report section (absent without votes and verdicts)."""
    from evalcore.views.html_report import ReportFigure, ReportSection, ReportTable
    from evalcore.views import preference as pv

    sums = pv.summaries(dataset, runs, p.dimension, n_resamples=p.n_resamples)
    if not sums:
        return []
    sec = ReportSection(title=f"Pairwise preferences: {p.dimension}",
                        text="One judge verdict per pair (both orders: the verdict when they agree, else a tie; Zheng "
                             "et al. 2023 Sec. 4.2). With ties (S1) / without ties (S2); majority vote; per-order "
                             "accuracy, right in both orders and positional agreement as LLMBar's statistics.json, "
                             "except that a pair unreadable in both orders does not agree here (it does in the row "
                             "\"LLMBar's count\", their convention); a figure on no readable verdict is left blank "
                             "with the reason. "
                             f"95% percentile bootstrap CIs over prompts ({p.n_resamples} resamples)."
                             + (" The systems filter does not apply to this section: every annotated pair is "
                                "counted." if p.systems else ""))
    from evalcore.views.alignment import pairwise_blocks

    page_parts(sec, pairwise_blocks(sums, report_colors(dataset, runs), dimension=p.dimension),
               figures={"pairwise_agreement": "Agreement with human votes"},
               tables={"pairwise_agreement": "Pairwise agreement", "pairwise_counts": "Counts"})
    first_run, first = next(iter(sums.items()))
    kappas = pv.annotator_kappa_table(first)
    if not kappas.empty:
        sec.tables.append(ReportTable("Cohen's kappa between annotators", kappas))
    sec.tables.append(ReportTable("The judge against each annotator", pv.per_annotator_table(sums)))
    for run, s in sums.items():
        sec.figures.append(ReportFigure(f"Confusion matrix: {run}", pv.confusion_figure(s, run)))
    models = pv.model_table(sums)
    if not models.empty:
        sec.tables.append(ReportTable("Win rates per model (ties 0.5)", models))
        sec.figures.append(ReportFigure(f"Win rate per model: {first_run}", pv.win_rate_figure(models, first_run)))
    bias = pv.bias_table(sums)
    if not bias.empty:
        sec.tables.append(ReportTable("Bias: position, verbosity, self-preference", bias))
    return [sec]


def analysis_report(dataset: Dataset, runs: list[Run], p: AnalysisParams, computed: Computed | None = None) -> str:
    from evalcore.views.html_report import render_report

    meta = {"dataset": f"{dataset.name} ({dataset.id})", "runs": ", ".join(run_label(r) for r in runs),
            "dimension": p.dimension, "level": p.level, "coefficient": p.coefficient, "parse mode": p.parse,
            "bootstrap resamples": p.n_resamples}
    if p.systems:
        meta["systems"] = ", ".join(p.systems)
    variants = [f"{run_label(r)}: {r.config['variant']}" for r in runs if r.config and r.config.get("variant")]
    if variants:  # a method adapted to its judge's contract (greedy became sampled, ...): said with the figures
        meta["method as run on its judge"] = "; ".join(variants)
    sections = analysis_sections(dataset, runs, p, computed)
    sections.append(provenance_section(dataset, runs, p.dimension))  # each judge's fingerprint, the labels' hash
    return render_report(f"JudgeScope: {dataset.name}", sections, meta=meta)
