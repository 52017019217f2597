"""One analysis, three renderings: for every bundled run that ``meta`` analyses, the Alignment page's blocks
(evalcore.views.alignment), ``meta --json`` (evalcore.cli) and the exported report (evalcore.views.report) show the
same numbers: correlations at every level and coefficient with their intervals, the human ceiling, per-system
correlations, the meta-correlation and #CP; for a run of pairwise verdicts, its agreement with the human votes; the Alt-Test, PPI and Bradley-Terry sections. Each is read from what that rendering shows (the page's tables, the JSON
document, the report's tables), never from the analysis the three share."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from evalcore import cli
from evalcore import runs as runs_mod
from evalcore.meta.correlation import COEFFICIENTS, LEVELS
from evalcore.views import alignment as av
from evalcore.views import report as report_views
from evalcore.views.blocks import tables

N = 20  # resamples: the three renderings draw the same ones (seed 0); few keep the quick pass under a minute


def _manifest() -> list[dict]:
    return json.loads((Path(__file__).resolve().parents[1] / "data" / "runs" / "manifest.json").read_text())["runs"]


def _runs(kind: str, datasets: set[str] | None = None) -> list:
    """Every bundled run of ``kind`` ("judgments": per-item scores; "comparisons": pairwise verdicts): each
    dataset's first in the quick pass (under a minute together), the others marked slow: about three minutes more,
    which CI runs (``python -m pytest -m slow``)."""
    seen: set[str] = set()
    out = []
    for r in _manifest():
        if r["kind"] != kind or (datasets is not None and r["dataset_id"] not in datasets):
            continue
        first = r["dataset_id"] not in seen
        seen.add(r["dataset_id"])
        out.append(pytest.param(r["dataset_id"], r["run_id"], marks=() if first else pytest.mark.slow))
    return out


# Shen's H2H run on SummEval has verdicts but no human votes to meet: ``meta`` refuses it; the page counts it in #CP
WITH_VOTES = {"pandalm", "llmbar_natural"}


def same(a, b) -> bool:
    """Equal numbers, a blank (None / NaN) equal to a blank."""
    blank = lambda x: x is None or (isinstance(x, float) and math.isnan(x))  # noqa: E731
    if blank(a) or blank(b):
        return blank(a) and blank(b)
    return math.isclose(float(a), float(b), rel_tol=0, abs_tol=1e-12)


def _page(dataset, run, dim: str, level: str, coefficient: str) -> dict[str, pd.DataFrame]:
    """What the Alignment page shows for one level and coefficient, by its blocks' keys."""
    table = av.alignment_table(dataset, [run], dim, n_resamples=N)
    view = av.correlations_view(table, dim, level=level, coefficient=coefficient)
    ceiling = av.run_ceilings(dataset, [run], dim, level=level, coefficient=coefficient, n_resamples=N)
    blocks = view.table + (av.ceiling_blocks(table, ceiling, dim, level=level, coefficient=coefficient)
                           if not ceiling.empty else [])
    dims = list(av.scored_dimensions(dataset, [run]))
    ps = av.per_system_table(dataset, [run], dims, coefficient=coefficient)
    if not ps.empty:
        meta = av.meta_correlation_table(dataset, [run], dims, coefficient=coefficient)
        blocks += av.per_system_blocks(ps, meta, dim, coefficient)
    blocks += av.cp_blocks(av.correct_preferences_table(dataset, [run], dims))
    return {t.key: t.frame for t in tables(blocks)}


def _report(dataset, run, dim: str, level: str, coefficient: str) -> dict[str, pd.DataFrame]:
    p = report_views.AnalysisParams(dataset_id=dataset.id, run_ids=[run.run_id], dimension=dim, level=level,
                                    coefficient=coefficient, n_resamples=N)
    return {t.title: t.frame for s in report_views.analysis_sections(dataset, [run], p) for t in s.tables}


def _check_correlations(entry: dict, page: dict, report: dict, level: str, coefficient: str) -> int:
    cli_rows = {(r["level"], r["coefficient"]): r for r in entry["correlations"]}
    full = report["Correlations"]
    for (lv, co), c in cli_rows.items():
        r = full[(full["level"] == lv) & (full["coefficient"] == co)].iloc[0]
        for k in ("statistic", "ci_low", "ci_high", "n", "pvalue"):
            assert same(c[k], r[k]), (lv, co, k, c[k], r[k])
    shown = page["correlations"].iloc[0]  # the page's cell on show
    c = cli_rows[(level, coefficient)]
    for k in ("statistic", "ci_low", "ci_high", "n"):
        assert same(c[k], shown[k]), (k, c[k], shown[k])
    return len(cli_rows)


def _check_ceiling(entry: dict, page: dict, report: dict, level: str, coefficient: str) -> None:
    rows = [r for r in entry["human_ceiling"] if (r["level"], r["coefficient"]) == (level, coefficient)]
    if not rows:
        assert "ceiling" not in page
        return
    c = rows[0]
    for t in (page["ceiling"], report[f"Human ceiling ({level}, {coefficient}) on each run's items"]):
        m = t[t["annotator"] == "mean"].iloc[0]
        for k in ("statistic", "ci_low", "ci_high", "n", "n_items"):
            assert same(c[k], m[k]), (k, c[k], m[k])
        assert c["annotators"] == int((t["annotator"] != "mean").sum())


def _check_systems(entry: dict, page: dict, report: dict, dim: str, coefficient: str) -> None:
    if "per_system" not in entry:
        assert "per_system" not in page and "cp" not in page
        return
    ps = {str(r["system_id"]): r for r in entry["per_system"][coefficient]}
    for t in (page["per_system"], report["Per-system correlation P_i"]):
        t = t[t["dimension"] == dim]
        assert sorted(map(str, t["system_id"])) == sorted(ps)
        for r in t.itertuples():
            for k in ("correlation", "pvalue", "n", "quality"):
                assert same(ps[str(r.system_id)][k], getattr(r, k)), (r.system_id, k)
    m = entry["meta_correlation"][coefficient]
    if m["n_systems"] >= 0 and "meta_correlation" in page:
        for t in (page["meta_correlation"], report["Meta-correlation M"]):
            row = t[t["dimension"] == dim].iloc[0]
            assert same(m["statistic"], row["M"]) and same(m["pvalue"], row["pvalue"])
            assert m["n_systems"] == row["n_systems"]
    cp = entry["correct_preferences"]
    for t in (page["cp"], report["#CP"]):
        row = t[t["dimension"] == dim].iloc[0]
        for name in ("full", "challenge"):
            if name in cp:
                assert (cp[name]["correct"], cp[name]["total"]) == (row[f"{name} correct"], row[f"{name} total"])
            else:
                assert f"{name} correct" not in t.columns or pd.isna(row[f"{name} correct"])


@pytest.mark.parametrize("dataset_id, run_id", _runs("judgments"))
def test_page_cli_and_report_show_the_same_numbers(dataset_id, run_id):
    dataset = runs_mod.get_dataset(dataset_id)
    run = runs_mod.load_run(run_id)
    dim = next(d for d in run.dimensions if d in dataset.dimension_names)
    # the page shows one cell at a time: one level and coefficient per run, turning, so every one is checked
    i = sum(map(ord, run_id))
    level, coefficient = LEVELS[i % len(LEVELS)], COEFFICIENTS[(i // len(LEVELS)) % len(COEFFICIENTS)]
    entry = cli.meta_report(dataset_id, run_id, dimensions=[dim], n_resamples=N)["dimensions"][dim]
    page = _page(dataset, run, dim, level, coefficient)
    report = _report(dataset, run, dim, level, coefficient)
    assert _check_correlations(entry, page, report, level, coefficient) == len(LEVELS) * len(COEFFICIENTS)
    _check_ceiling(entry, page, report, level, coefficient)
    _check_systems(entry, page, report, dim, coefficient)


def test_a_nominal_dimension_has_no_correlations_in_any_rendering():
    """Codes of unordered categories (A / B / tie) have no correlation, ceiling or system-level figure: the page shows
    none, nor do ``meta --json`` and the report; all three show the same kappa."""
    from evalcore.testing.labels import label_dataset, label_run

    dataset, truth = label_dataset(kind="nominal")
    run = label_run(dataset, truth)
    entry = cli.meta_document(dataset, run, n_resamples=N)["dimensions"]["faithful"]
    assert not {"correlations", "human_ceiling", "per_system", "meta_correlation", "correct_preferences"} & set(entry)
    assert not av.has_correlations(dataset, "faithful", [run])
    assert av.alignment_table(dataset, [run], "faithful", n_resamples=N).empty
    assert av.run_ceilings(dataset, [run], "faithful", level="dataset", coefficient="spearman").empty
    assert av.per_system_table(dataset, [run], ["faithful"], coefficient="spearman").empty
    p = report_views.AnalysisParams(dataset_id=dataset.id, run_ids=[run.run_id], dimension="faithful", n_resamples=N)
    shown = {t.title: t.frame for s in report_views.analysis_sections(dataset, [run], p) for t in s.tables}
    assert not {"Correlations", "Per-system correlation P_i", "#CP"} & set(shown)
    assert not any(title.startswith("Human ceiling") for title in shown)
    kappa = entry["agreement"]["cohen_kappa"]
    for t in (shown["Label agreement"], av.label_agreement_table(av.label_agreements(dataset, [run], "faithful",
                                                                                    n_resamples=N))):
        row = t[t["statistic"] == "Cohen's kappa"].iloc[0]
        assert (row["value"], row["ci_low"], row["ci_high"]) == (kappa["statistic"], kappa["ci_low"], kappa["ci_high"])


def _pick(summary: dict, key: str):
    for part in key.split("."):
        summary = (summary or {}).get(part)
    return summary


@pytest.mark.parametrize("dataset_id, run_id", _runs("comparisons", WITH_VOTES))
def test_pairwise_page_cli_and_report_show_the_same_numbers(dataset_id, run_id):
    """A pairwise run: its agreement with the votes, as the Pairwise tab, ``meta --json`` and the report show it."""
    from evalcore.views import preference as pv

    dataset = runs_mod.get_dataset(dataset_id)
    run = runs_mod.load_run(run_id)
    dim = next(iter(dict.fromkeys(run.comparisons["dimension"])))
    entry = cli.meta_report(dataset_id, run_id, dimensions=[dim], n_resamples=N)["dimensions"][dim]["pairwise"]
    page = {t.key: t.frame for t in tables(av.pairwise_blocks(pv.summaries(dataset, [run], dim, n_resamples=N),
                                                              dimension=dim))}["pairwise_agreement"]
    p = report_views.AnalysisParams(dataset_id=dataset_id, run_ids=[run_id], dimension=dim, n_resamples=N)
    report = {t.title: t.frame for s in report_views.analysis_sections(dataset, [run], p)
              for t in s.tables}["Pairwise agreement"]
    checked = 0
    for key, name in pv.STATISTICS:
        c = _pick(entry, key)
        for t in (page, report):
            rows = t[t["statistic"] == name]
            if c is None:
                assert rows.empty or rows["value"].isna().all(), (key, name)
                continue
            row = rows.iloc[0]
            assert same(c["statistic"], row["value"]) and same(c["ci_low"], row["ci_low"]), (key, name)
            assert same(c["ci_high"], row["ci_high"]) and c["n"] == row["n"], (key, name)
            checked += 1
    assert checked >= 2 * 4  # at least agreement with and without ties, accuracy and kappa in both



# ------------------------------------------------------------------ Alt-Test, PPI and Bradley-Terry (``meta --alt-test
# --ppi --bradley-terry``; the page's two expanders; the report's inference section)

def _inference_runs() -> list:
    """One SummEval run and one PandaLM run in the quick pass; the other bundled runs with human data marked slow.
    SummEval's consistency: most ratings sit at the scale's top, so PPI's intervals reach past 5 unless clipped to
    the scale (the page clipped them and ``meta --ppi`` did not, before the two shared one analysis)."""
    quick = {"summeval/shen-gpt-4-0314-rts": "consistency", "pandalm/pandalm-gpt-3.5-turbo": None}
    return [pytest.param(r["dataset_id"], r["run_id"], quick.get(r["run_id"]),
                         marks=() if r["run_id"] in quick else pytest.mark.slow)
            for r in _manifest() if r["kind"] == "judgments" or r["dataset_id"] in WITH_VOTES]


def _inference_page(dataset, run, dim: str, rated: int | None) -> dict[str, pd.DataFrame]:
    """What the page's two expanders show for one run (epsilon 0.2, PPI++, the report's rated documents)."""
    from evalcore.views import inference as iv

    blocks = iv.alt_test_blocks([iv.alt_test_for_run(dataset, run, dim, epsilon=0.2)], dim)
    view = iv.ppi_for_run(dataset, run, dim, method="ppi++", rated=rated, n_resamples=N)
    blocks += iv.ppi_run_blocks(view, [view], dim, N)
    if iv.is_pairwise(run):
        blocks += iv.bt_blocks(iv.bradley_terry_for_run(dataset, run, dim, n_resamples=iv.bt_resamples(N)),
                               view.run, dim, N)
    return {t.key: t.frame for t in tables(blocks)}


def _check_alt_test(a: dict, page: dict, report: dict) -> int:
    if "error" in a:
        assert "winning_rate" not in page["alt_test"].columns or page["alt_test"]["winning_rate"].isna().all()
        return 0
    for t in (page["alt_test"], report["Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025)"]):
        row = t.iloc[0]
        assert same(a["winning_rate"], row["winning_rate"]) and same(a["advantage_probability"], row["rho"])
        assert (row["verdict"] == "passes") == a["passed"] and a["n_items"] == row["items"]
    for t in (page["alt_test_annotators"], report["Alt-Test per annotator left out"]):
        assert len(t) == len(a["per_annotator"])
        for x in a["per_annotator"]:
            row = t[t["annotator"].astype(str) == str(x["annotator"])].iloc[0]
            assert same(x["p_value"], row["p_value"]) and same(x["advantage_probability"], row["rho_j"])
            assert x["n"] == row["n"]
    return len(a["per_annotator"])


def _check_ppi(p: dict, page: dict, report: dict) -> int:
    if "error" in p:  # no estimate in any rendering
        assert page["ppi"].empty and "Prediction-powered estimates (PPI++) per system" not in report
        return 0
    for t in (page["ppi"], report["Prediction-powered estimates (PPI++) per system"]):
        assert len(t) == len(p["per_system"])
        for s in p["per_system"]:
            row = t[t["system"].astype(str) == str(s["system"])].iloc[0]
            for k, col in (("estimate", "estimate"), ("ci_low", "ci_low"), ("ci_high", "ci_high"),
                           ("lambda", "lambda")):
                assert same(s[k], row[col]), (s["system"], k, s[k], row[col])
            assert same(s["human_only"]["estimate"], row["human_only"])
            assert same(s["judge_only"]["ci_high"], row["judge_ci_high"])
    ranks = {str(r["system"]): r for r in p["ranking"]}
    for row in page["ppi_ranking"].itertuples():
        r = ranks[str(row.system)]
        assert r["rank"] == row.rank and same(r["rank_low"], row.rank_low) and same(r["rank_high"], row.rank_high)
    return len(p["per_system"])


def _check_bradley_terry(b: dict, page: dict) -> int:
    if "error" in b:
        assert "bradley_terry" not in page
        return 0
    assert len(page["bradley_terry"]) == len({s["model"] for side in ("human", "judge") for s in b[side]["scores"]})
    t = page["bradley_terry"]
    for side in ("human", "judge"):
        for s in b[side]["scores"]:
            row = t[t["model"].astype(str) == str(s["model"])].iloc[0]
            for k in ("score", "ci_low", "ci_high"):
                assert same(s[k], row[f"{side}_{k}"]), (side, s["model"], k)
    lengths = page["bt_length"]
    for side, source in (("human", "humans"), ("judge", "judge")):
        if b[side]["length"] is not None:
            row = lengths[lengths["source"] == source].iloc[0]
            assert same(b[side]["length"]["coefficient"], row["length_coefficient"])
            assert same(b[side]["length"]["ci_low"], row["ci_low"])
    return len(t)


@pytest.mark.parametrize("dataset_id, run_id, dim", _inference_runs())
def test_inference_sections_show_the_same_numbers(dataset_id, run_id, dim):
    """The Alt-Test, PPI++ (with the report's rated documents) and Bradley-Terry as the page's blocks, ``meta --json
    --alt-test --ppi --bradley-terry`` and the report show them: the same estimates and intervals, clipped alike to
    the human scale."""
    from evalcore.views import inference as iv

    dataset = runs_mod.get_dataset(dataset_id)
    run = runs_mod.load_run(run_id)
    dims = run.dimensions if not iv.is_pairwise(run) else list(dict.fromkeys(run.comparisons["dimension"]))
    dim = dim or next(d for d in dims if d in dataset.dimension_names)
    full, n = iv.rating_coverage(dataset, [run], dim)
    rated = iv.default_rated_documents(n) if full and n >= 3 else None  # as the report's section picks it
    opts = {"alt_test": {"epsilon": 0.2, "scoring": None}, "ppi": "ppi++", "ppi_rated_docs": rated,
            "bradley_terry": iv.is_pairwise(run)}
    entry = cli.meta_report(dataset_id, run_id, dimensions=[dim], n_resamples=N, inference=opts)["dimensions"][dim]
    page = _inference_page(dataset, run, dim, rated)
    p = report_views.AnalysisParams(dataset_id=dataset_id, run_ids=[run_id], dimension=dim, n_resamples=N)
    report = {t.title: t.frame for s in report_views.analysis_sections(dataset, [run], p) for t in s.tables}
    checked = _check_alt_test(entry["alt_test"], page, report) + _check_ppi(entry["ppi"], page, report)
    if iv.is_pairwise(run):
        checked += _check_bradley_terry(entry["pairwise"]["bradley_terry"], page)
    # LLMBar has one annotator and pits each output against one of the same model: no figure in any rendering
    assert checked > 0 or dataset_id == "llmbar_natural"
