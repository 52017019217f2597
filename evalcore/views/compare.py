"""Compare page: two runs' difference in correlation (paired test) and the items where they disagree most."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from evalcore import runs as runs_mod
from evalcore.model import Dataset, Run
from evalcore.views.blocks import Block, Expander, Heading, Metric, Metrics, Note, Table, Text
from evalcore.views.format import esc, fmt, format_pvalue

if TYPE_CHECKING:  # scipy loads where a comparison is computed
    from evalcore.meta.compare import PairedComparisonResult


def paired_comparison(dataset: Dataset, run_a: Run, run_b: Run, dimension: str, *, level: str, coefficient: str,
                      n_resamples: int = 1000, method: str = "bootstrap", systems: list[str] | None = None
                      ) -> PairedComparisonResult:
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


def _s(x: object) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return str(x)


def paired_summary(res: PairedComparisonResult, name_a: str, name_b: str) -> pd.DataFrame:
    """The paired comparison as a one-row table (for display and CSV)."""
    return pd.DataFrame([{
        "run_a": name_a, "run_b": name_b, "level": res.level, "coefficient": res.coefficient,
        "statistic_a": res.statistic_a, "statistic_b": res.statistic_b, "difference": res.difference,
        "ci_low": res.ci_low, "ci_high": res.ci_high, "pvalue": res.pvalue, "n": res.n, "test": res.method,
    }])


# ------------------------------------------------------------------------------------- the page's view model

TEST_NAMES = {"bootstrap": "equal correlation (paired bootstrap)",
              "permutation": "exchangeable judges (permutation)"}
TEST_HELP = ("equal correlation (paired bootstrap): documents resampled jointly for both runs; tests whether the two "
             "runs correlate equally well with the humans (its size is checked by simulation in "
             "tests/test_meta_compare.py). exchangeable judges (permutation): A/B scores swapped per document; tests "
             "the stronger null that the two judges' scores are interchangeable, so it can reject when the "
             "correlations are equal but the judges differ (scale, ties, spread)")
NO_CANDIDATES = Note("Comparing needs two runs with per-item scores on this dataset. Score the dataset on the "
                     "**Score** page (for example the same method with two prompt versions, or two models).")
SAME_RUN = Note("Pick two different runs.", "warning")
DISAGREEMENTS_HEADING = Heading("Where the two runs disagree most")


def candidates(runs: list[Run]) -> list[Run]:
    """The runs that can be compared: those with per-item scores."""
    return [r for r in runs if r.method not in ("h2h", "pairwise")]


def default_pair(selected: list[str], ids: list[str]) -> tuple[str, str]:
    """Runs A and B before any choice: the sidebar's first two runs among ``ids``, else the first two of ``ids``."""
    sel = [r for r in selected if r in ids]
    a = sel[0] if sel else ids[0]
    return a, (sel[1] if len(sel) > 1 else next(i for i in ids if i != a))


def shared_dimension_note(run_a: Run, run_b: Run, dimension: str) -> list[Block]:
    """[] when both runs scored ``dimension``; else what they share, to pick in the sidebar."""
    shared = [d for d in run_a.dimensions if d in run_b.dimensions]
    if dimension in shared:
        return []
    return [Note(esc(f"The two runs do not both score {dimension!r}; dimensions they share: "
                     f"{', '.join(shared) or 'none'}. Pick one in the sidebar."))]


def difference_heading(coefficient: str, level: str, dimension: str) -> Heading:
    return Heading(f"Difference in {coefficient} ({level} level) on {esc(dimension)}")


def headline(res: PairedComparisonResult, test: str, state: str = "") -> Metrics:
    """The two correlations and their difference; the interval and p-value once the resamples are done (``state``
    says what happens to them meanwhile: "computing…" or "stopped")."""
    return Metrics((Metric("Run A", fmt(res.statistic_a)), Metric("Run B", fmt(res.statistic_b)),
                    Metric("A − B", fmt(res.difference),
                           help=f"95% CI {state}" if state else f"95% CI [{fmt(res.ci_low)}, {fmt(res.ci_high)}]"),
                    Metric("p-value", state or format_pvalue(res.pvalue), help=f"{TEST_NAMES[test]}, n = {res.n}")))


def result_blocks(res: PairedComparisonResult, name_a: str, name_b: str, dimension: str) -> list[Block]:
    """The paired test's table, after a warning when it rests on few documents."""
    from evalcore.meta.compare import few_documents_warning

    few = few_documents_warning(res)
    warning: list[Block] = [Note(esc(few), "warning")] if few else []
    return warning + [
        Table(paired_summary(res, name_a, name_b), f"paired difference {dimension} {res.level} {res.coefficient}",
              "paired")]


def test_note(test: str, level: str, systems: list[str] | None) -> Note:
    """What the p-value answers and which items both runs are compared on."""
    if test == "bootstrap":
        answers = "The p-value answers: do the two runs correlate equally well with the humans? "
    else:
        answers = ("The p-value answers: are the two judges' scores interchangeable? A small p does not by itself "
                   "say that one correlates better with the humans; read the paired bootstrap for that. ")
    items = "Both runs are compared on the same items (those both parsed" + (
        f", of the systems {', '.join(systems)})" if systems else ")")
    if level == "summary":
        items += (", and at the summary level averaged over the documents where both runs' correlations are "
                  "defined, so a run's figure here can differ from the Alignment page, which averages each run over "
                  "its own defined documents")
    return Note(esc(f"Test: {TEST_NAMES[test]}. {answers}{items}."), "caption")


def disagreement_blocks(table: pd.DataFrame, dimension: str) -> list[Block]:
    """The items the two runs rank furthest apart (``disagreements``)."""
    if table.empty:
        return [Note("The runs share no parsed items on this dimension.")]
    return [Table(table, f"disagreements {dimension}", "disagreements"),
            Note("rank_gap: difference of the items' percentile ranks under the two runs (scales may differ).",
                 "caption")]


def scores_line(table: pd.DataFrame, item_id: str) -> str:
    """One disagreement's three scores, as a line of plain text."""
    row = table[table["item_id"] == item_id].iloc[0]
    return f"Run A: {row['judge_a']:.4g}   Run B: {row['judge_b']:.4g}   human: {row['human']:.4g}"


def item_blocks(dataset: Dataset, item_id: str, runs: dict[str, Run], names: dict[str, str], dimension: str
                ) -> list[Block]:
    """An item's texts and the two judges' replies (``runs``: {"A": run, "B": run}), shown verbatim."""
    texts = item_texts(dataset, item_id)
    out: list[Block] = [Text("Evaluated output", texts.get("output", "")), Text("Source", texts.get("source", ""))]
    out += [Text(label, texts[k]) for k, label in (("context", "Context"), ("references", "References"))
            if texts.get(k)]
    replies = []
    for name, run in runs.items():
        j = run.judgments[(run.judgments["item_id"] == item_id) & (run.judgments["dimension"] == dimension)]
        replies.append(Text(f"Run {name} ({names[run.run_id]})", "" if j.empty else str(j["raw"].iloc[0])))
    return out + [Expander("Judge replies", tuple(replies))]
