"""Improve the judge page: the split, the development disagreements, the candidates' development agreement and the
final check on test, as frames, plotly figures and view blocks (evalcore.views.blocks), and what the page reads from
the store through a :class:`Workspace` (no Streamlit here; the page, pages/improve.py, lays them out).

Nothing here reads a test-part human label except :func:`test_table` and :func:`test_figure`, which the page calls
only after the final check (evalcore.align.loop.final_check) has been run.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

import json
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Callable

from evalcore.align.candidates import Candidate, Proposal
from evalcore.align.disagreement import Disagreement
from evalcore.align.loop import (MIN_TEST_DOCUMENTS, Agreement, FinalCheck, FinalCheckUnavailable, PartEstimate,
                                 Scored, Settings, agreement_of, beat_baseline, estimate_part, final_check,
                                 gain_sentence, own_run, part_frame, run_id_for)
from evalcore.align.split import DEV, TEST, Split
from evalcore.meta.compare_labels import LABEL_STATISTICS
from evalcore.model import Dataset, Dimension, Run, counted
from evalcore.types import Criteria
from evalcore.views.blocks import Block, Expander, Figure, Metric, Metrics, Note, Table, Text
from evalcore.views.format import esc, fmt

if TYPE_CHECKING:
    from evalcore.align.queue import ScoringQueue
    from evalcore.identity import Viewer
    from evalcore.judge.client import Endpoint
    from evalcore.meta.alt_test import AltTestResult
    from evalcore.store import Store

PART_NAMES = {"dev": "development", "test": "test"}
# what an agreement without an interval says instead (one document: evalcore.meta.correlation gives none)
NO_INTERVAL = ("No 95% interval: the bootstrap over documents gave none (the part holds one document, or the "
               "agreement is undefined on its resamples)")


def candidate_name(source: str, version: str) -> str:
    """How a candidate is named on the page: its source and the first 8 characters of its criteria version."""
    return f"{source} {version[:8]}"


# ------------------------------------------------------------------------------------------------------- split


def split_overview(split: Split) -> pd.DataFrame:
    """One row per part: documents (no labels: the test part's human scores stay unseen until the final check)."""
    return pd.DataFrame([{"part": PART_NAMES[p], "documents": len(split.docs(p))} for p in ("dev", "test")])


def split_by_system(dataset: Dataset, split: Split) -> pd.DataFrame:
    """Items of each system in each part (counts only: which outputs fall where, not how they were rated)."""
    items = dataset.items.assign(doc_id=dataset.items["doc_id"].astype(str),
                                 system_id=dataset.items["system_id"].astype(str))
    known = set(split.dev_docs) | set(split.test_docs)
    items = items[items["doc_id"].isin(known)]
    items = items.assign(part=items["doc_id"].map(lambda d: PART_NAMES[split.part_of(d)]))
    counts = items.groupby(["system_id", "part"]).size().unstack("part", fill_value=0)
    counts = counts.reindex(columns=["development", "test"], fill_value=0).astype(int)
    counts["test share"] = counts["test"] / counts.sum(axis=1)
    return counts.rename(columns={"development": "development items", "test": "test items"}) \
        .reset_index().rename(columns={"system_id": "system"})


def split_label(split: Split) -> str:
    """A saved split in a list: its id, rule and sizes, and how many final checks its test part has had."""
    checks = f", {split.final_checks} final check{'s' * (split.final_checks != 1)}" if split.final_checks else ""
    return (f"{split.split_id[:8]} · seed {split.seed} · test share {split.test_share:g} · "
            f"{len(split.dev_docs)} development / {counted(len(split.test_docs), 'test document')}{checks}")


# ----------------------------------------------------------------------------------------------- disagreements


def disagreement_table(dis: Disagreement, top: int = 20) -> pd.DataFrame:
    """The ``top`` development items with the largest gap, with the judge's reply (its reasoning)."""
    t = dis.top(top)
    if dis.kind == "nominal":  # labels without order: their names, and whether they differ
        names = dict(enumerate(dis.label_names))
        return pd.DataFrame({
            "item_id": t["item_id"].astype(str), "system": t["system_id"].astype(str),
            "human label": t["human"].round().astype(int).map(names), "judge label":
            t["judge"].round().astype(int).map(names), "labels differ": t["gap"].map({1.0: "yes", 0.0: "no"}),
            "judge's reply": t["raw"].fillna("").astype(str), "document": t["doc_id"].astype(str),
        })
    return pd.DataFrame({
        "item_id": t["item_id"].astype(str), "system": t["system_id"].astype(str), "human": t["human"].astype(float),
        "judge on the human scale": t["judge_on_human_scale"].astype(float), "gap": t["gap"].astype(float),
        "judge's reply": t["raw"].fillna("").astype(str), "judge": t["judge"].astype(float),
        "document": t["doc_id"].astype(str),
    })


def by_system_figure(dis: Disagreement):
    """Mean |judge - human| per system on the development part (largest first)."""
    import plotly.express as px

    t = dis.by_system.assign(system_id=dis.by_system["system_id"].astype(str))
    nominal = dis.kind == "nominal"
    fig = px.bar(t, x="system_id", y="mean_gap",
                 hover_data={"n": True} if nominal else {"n": True, "mean_judge": ":.2f", "mean_human": ":.2f"},
                 labels={"system_id": "System", "mean_gap": "Share of items labelled differently" if nominal else
                         "Mean |judge - human| (human scale)", "n": "items", "mean_judge": "mean judge",
                         "mean_human": "mean human"},
                 title="Disagreement by system (development part)")
    fig.update_xaxes(type="category")
    return fig


def by_human_figure(dis: Disagreement):
    """Mean judge score (on the human scale) against the human score, with the agreement line: where the judge
    is too harsh or too lenient."""
    import plotly.express as px

    t = dis.by_human.copy()
    if dis.kind == "nominal":  # no order, no "too harsh": how often each human label is missed
        t["human_label"] = t["human_score"].round().astype(int).map(dict(enumerate(dis.label_names)))
        fig = px.bar(t, x="human_label", y="mean_gap", hover_data={"n": True},
                     labels={"human_label": "Human label", "mean_gap": "Share the judge labelled differently",
                             "n": "items"},
                     title="Judge vs human label (development part)")
        fig.update_xaxes(type="category")
        fig.update_yaxes(range=[0, 1.05])
        return fig
    fig = px.scatter(t, x="human_score", y="mean_judge", size="n", hover_data={"n": True, "mean_gap": ":.2f"},
                     labels={"human_score": "Human score (rounded)", "mean_judge": "Mean judge score (human scale)",
                             "n": "items", "mean_gap": "mean |judge - human|"},
                     title="Judge vs human score (development part)")
    lo, hi = dis.human_scale
    fig.add_shape(type="line", x0=lo, y0=lo, x1=hi, y1=hi, line={"dash": "dot", "color": "grey"})
    fig.update_yaxes(range=[lo - 0.2, hi + 0.2])
    return fig


def confusion_table(dis: Disagreement, max_ids: int = 5) -> pd.DataFrame:
    """The confusion cells (categorical dimensions) with a few of each cell's items."""
    if dis.confusion is None:
        return pd.DataFrame()
    c = dis.confusion
    return pd.DataFrame({"human label": c["human_label"].astype(str), "judge label": c["judge_label"].astype(str),
                         "items": c["count"].astype(int), "agree": c["agree"].map({True: "yes", False: "no"}),
                         "some items": [", ".join(ids[:max_ids]) + (" …" if len(ids) > max_ids else "")
                                        for ids in c["item_ids"]]})


# -------------------------------------------------------------------------------------------------- candidates


def candidates_table(baseline: Scored | None, scored: list[Scored], unscored: Sequence[Candidate] = (),
                     chosen: str | None = None) -> pd.DataFrame:
    """Every candidate with its development agreement (statistic and 95% CI), its gain over the baseline, and
    whether it is the one chosen; candidates not scored yet have empty cells and say so in ``status``."""
    base_stat = baseline.agreement.statistic if baseline is not None else math.nan
    rows = []
    for s in ([baseline] if baseline is not None else []) + list(scored):
        a, c = s.agreement, s.candidate
        rows.append({"candidate": candidate_name(c.source, c.version), "development agreement": a.statistic,
                     "ci_low": a.ci_low, "ci_high": a.ci_high, "gain over baseline": a.statistic - base_stat,
                     "items": a.n, "failed": a.failed, "status": "scored",
                     "chosen": "yes" if c.version == chosen else "", "source": c.source, "version": c.version,
                     "how it was made": c.note})
    for c in unscored:
        rows.append({"candidate": candidate_name(c.source, c.version), "development agreement": math.nan,
                     "ci_low": math.nan, "ci_high": math.nan, "gain over baseline": math.nan, "items": 0, "failed": 0,
                     "status": "not scored yet", "chosen": "", "source": c.source, "version": c.version,
                     "how it was made": c.note})
    return pd.DataFrame(rows)


AGREEMENT_NAMES = {"spearman": "Spearman's rho", "kendall": "Kendall's tau", "pearson": "Pearson's r",
                   "cohen_kappa": "Cohen's kappa", "weighted_kappa": "quadratic-weighted kappa",
                   "accuracy": "accuracy"}


def agreement_choices(dim: Dimension) -> list[str]:
    """The agreement measures the loop can take on a dimension (``loop.Settings.check``), the default first:
    correlations on a scale (Spearman first), and on a categorical one the label statistics too (Cohen's kappa
    first on a nominal one, which has no order for a correlation or the weighted kappa)."""
    def allowed(coefficient: str) -> bool:
        try:
            Settings(coefficient=coefficient).check(dim)
        except ValueError:
            return False
        return True

    return [c for c in ("spearman", "kendall", "pearson", *LABEL_STATISTICS) if allowed(c)]


def agreement_name(coefficient: str, level: str = "dataset") -> str:
    """How the loop's agreement reads on an axis: "Spearman's rho with the humans (dataset level)", "Cohen's kappa
    with the human labels" (a label statistic is over all items: no level)."""
    name = AGREEMENT_NAMES.get(coefficient, coefficient)
    if coefficient in LABEL_STATISTICS:
        return f"{name[0].upper()}{name[1:]} with the human labels"
    return f"{name} with the humans ({level} level)"


def candidates_figure(table: pd.DataFrame, coefficient: str = "spearman", level: str = "dataset"):
    """Development agreement per scored candidate with its 95% CI (error bars), the baseline's as a line."""
    import plotly.express as px

    t = table[table["status"] == "scored"].copy()
    t["err_plus"] = t["ci_high"] - t["development agreement"]
    t["err_minus"] = t["development agreement"] - t["ci_low"]
    fig = px.scatter(t, x="candidate", y="development agreement", color="source", error_y="err_plus",
                     error_y_minus="err_minus", hover_data={"how it was made": True, "err_plus": False,
                                                            "err_minus": False},
                     labels={"candidate": "Candidate (source, criteria version)",
                             "development agreement": f"{agreement_name(coefficient, level)}, development",
                             "source": "source"},
                     title="Agreement on the development part, with 95% CIs")
    base = t[t["source"] == "baseline"]
    if not base.empty:
        fig.add_hline(y=float(base["development agreement"].iloc[0]), line_dash="dot", line_color="grey",
                      annotation_text="baseline")
    fig.update_xaxes(type="category")
    return fig


def default_choice(baseline: Scored | None, scored: list[Scored]) -> Scored | None:
    """The candidate offered for the final check: the best development agreement among those that beat the
    baseline there (``loop.choose``: ties, the earlier one); None when none did (nothing to confirm on test)."""
    from evalcore.align.loop import choose

    better = beat_baseline(baseline, scored)
    return choose(better) if better else None


def choice_label(baseline: Scored | None, s: Scored) -> str:
    """A candidate in the picker: its name, its development agreement and its gain over the baseline there."""
    stat = s.agreement.statistic
    gain = "" if baseline is None else f" ({_num(stat - baseline.agreement.statistic, '+.3f')} over the baseline)"
    return f"{candidate_name(s.candidate.source, s.candidate.version)} · development {_num(stat, '.3f')}{gain}"


def selection_sentence(baseline: Scored, scored: list[Scored], chosen: Scored) -> str | None:
    """None when ``chosen`` beat the baseline on development; else what a final check of it would mean: no
    development gain for the test part to confirm, and one more counted look at that test part."""
    b, c = baseline.agreement.statistic, chosen.agreement.statistic
    if c > b:
        return None
    better = beat_baseline(baseline, scored)
    name = candidate_name(chosen.candidate.source, chosen.candidate.version)
    if better:
        head = (f"{name} did not beat the baseline on the development part ({_num(c, '.3f')} against "
                f"{_num(b, '.3f')}), while {len(better)} other candidate{'s' * (len(better) != 1)} did.")
    else:
        head = (f"No candidate beat the baseline on the development part: the baseline agrees {_num(b, '.3f')} with "
                f"the humans there, {name} {_num(c, '.3f')}" + ("" if len(scored) == 1 else
                                                                 f" (of {len(scored)} candidates scored)") + ".")
    return (head + " Selection on development does not favour it, so a final check of it has no development gain to "
            "confirm: it would only say how it compares on held-out documents, and it counts as a look at this "
            "split's test part like any other (a later, better candidate's check would no longer be the first). "
            "Make a better candidate first, or check it anyway.")


def _num(x: float, spec: str) -> str:
    return "undefined" if x != x else format(x, spec)


# ------------------------------------------------------------------------------------------------ final check


def test_table(check: FinalCheck, baseline_dev: Scored, chosen_dev: Scored) -> pd.DataFrame:
    """Baseline and chosen on both parts, then the paired difference on test (chosen - baseline)."""
    rows = []
    for name, dev, test in (("", baseline_dev, check.baseline), ("chosen: ", chosen_dev, check.chosen)):
        rows.append({"prompt": name + candidate_name(dev.candidate.source, dev.candidate.version),
                     "development": dev.agreement.statistic, "test": test.agreement.statistic,
                     "test ci_low": test.agreement.ci_low, "test ci_high": test.agreement.ci_high,
                     "test items": test.agreement.n, "test failed": test.agreement.failed})
    return pd.DataFrame(rows)


def difference_table(check: FinalCheck) -> pd.DataFrame:
    d = check.difference
    return pd.DataFrame([{"difference on test (chosen - baseline)": d.statistic, "ci_low": d.ci_low,
                          "ci_high": d.ci_high, "pvalue": d.pvalue, "pvalue (paired bootstrap)": d.pvalue_bootstrap,
                          "pvalue (document swaps)": d.pvalue_permutation, "items": d.n,
                          "test documents": d.n_documents, "ci method": d.ci_method,
                          "development gain": check.dev_gain, "test gain": check.test_gain,
                          "optimism": check.optimism, "verdict": check.verdict,
                          "final check on this split": check.check_number}])


def test_figure(check: FinalCheck, baseline_dev: Scored, chosen_dev: Scored, coefficient: str = "spearman",
                level: str = "dataset"):
    """Baseline and chosen, development vs test, with the test part's 95% CIs (development ones too)."""
    import plotly.express as px

    rows = []
    for name, dev, test in (("baseline", baseline_dev, check.baseline), ("chosen", chosen_dev, check.chosen)):
        for part, a in (("development", dev.agreement), ("test", test.agreement)):
            rows.append({"prompt": name, "part": part, "agreement": a.statistic, "plus": a.ci_high - a.statistic,
                         "minus": a.statistic - a.ci_low})
    t = pd.DataFrame(rows)
    fig = px.scatter(t, x="part", y="agreement", color="prompt", error_y="plus", error_y_minus="minus",
                     hover_data={"plus": False, "minus": False},
                     labels={"part": "Part of the split", "agreement": agreement_name(coefficient, level),
                             "prompt": "prompt"},
                     title="Baseline and chosen prompt: development vs held-out test (95% CIs)")
    fig.update_traces(mode="lines+markers")
    return fig


def verdict_sentences(check: FinalCheck) -> list[str]:
    """The final check in words: the verdict, the optimism, and which look at the test part this was."""
    d = check.difference
    out = []
    if check.verdict == "improved":
        out.append(f"On the held-out test documents the chosen prompt agrees better with the humans than the "
                   f"baseline: difference {d.statistic:+.3f} (95% CI {d.ci_low:+.3f} to {d.ci_high:+.3f}, "
                   f"p = {_p(d.pvalue)}).")
    elif check.verdict == "worse":
        out.append(f"On the held-out test documents the chosen prompt agrees WORSE with the humans than the "
                   f"baseline: difference {d.statistic:+.3f} (95% CI {d.ci_low:+.3f} to {d.ci_high:+.3f}, "
                   f"p = {_p(d.pvalue)}).")
    else:
        out.append(f"On the held-out test documents the chosen prompt is not significantly different from the "
                   f"baseline: difference {d.statistic:+.3f} (95% CI {d.ci_low:+.3f} to {d.ci_high:+.3f}, "
                   f"p = {_p(d.pvalue)}).")
    out.append(optimism_sentence(check))
    if check.check_number > 1:
        out.append(f"This is final check number {check.check_number} on this split's test part: it had been looked "
                   "at before, so its verdict is no longer a clean held-out result (report the count).")
    else:
        out.append("This is the first final check on this split's test part.")
    if d.pvalue_bootstrap == d.pvalue_bootstrap:  # recorded (not NaN)
        out.append(f"The p-value is the larger of two paired tests over the {counted(d.n_documents, 'test document')}: the paired "
                   f"bootstrap (equal agreement, p = {_p(d.pvalue_bootstrap)}) and the permutation test swapping the "
                   f"two prompts on whole documents (exchangeable judges, p = {_p(d.pvalue_permutation)}); the verdict "
                   "needs both, because the bootstrap's interval is too narrow on few documents.")
    return out


def optimism_sentence(check: FinalCheck) -> str:
    """The two gains, their difference (the optimism), and what they say together (:func:`gain_sentence`)."""
    dev, test, opt = check.dev_gain, check.test_gain, check.optimism
    base = f"Development gain {dev:+.3f}, test gain {test:+.3f}: optimism (development gain - test gain) {opt:+.3f}."
    return f"{base} {gain_sentence(dev, test, check.verdict)}"


def final_checks_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Every final check recorded on a split's test part (``Store.final_checks``), oldest first: which prompt was
    checked and what it found; a look at a test part's run on another page is a check too (its method says so,
    its figures are empty). A figure the check could not compute is empty, never "None"."""
    def num(x: float | None) -> float:
        return math.nan if x is None else float(x)

    out = []
    for n, r in enumerate(rows, start=1):
        res = r.get("result") or {}
        d = res.get("difference") or {}
        look = res.get("look")  # a test part's run opened on another page (evalcore.align.loop.count_look)
        out.append({"check": n, "at": str(r.get("created_at") or ""),
                    "method": f"look on {look}: {res.get('run', '')}" if look else str(r.get("method") or ""),
                    "chosen version": str(r.get("chosen_hash") or "")[:8],
                    "difference on test": num(d.get("statistic")), "ci_low": num(d.get("ci_low")),
                    "ci_high": num(d.get("ci_high")), "pvalue": num(d.get("pvalue")),
                    "development gain": num(res.get("dev_gain")), "optimism": num(res.get("optimism"))})
    return pd.DataFrame(out)


def saved_candidates(versions: list[dict[str, Any]]) -> list[Candidate]:
    """The candidates the loop saved as criteria versions (``Store.list_criteria_versions``, newest first; their
    note reads "align <source>: <how>"), oldest first. The page keeps those already scored on the split in use."""
    from evalcore.align.candidates import SAVED_NOTE_PREFIX, SOURCES

    out: dict[str, Candidate] = {}
    for v in reversed(versions):
        note = str(v.get("note") or "")
        if not note.startswith(SAVED_NOTE_PREFIX):
            continue
        source, _, how = note[len(SAVED_NOTE_PREFIX):].partition(": ")
        if source in SOURCES and source != "baseline":
            c = Candidate(criteria=v["criteria"], source=source, note=how)
            out.setdefault(c.version, c)
    return list(out.values())


def alt_test_check(dataset: Dataset, baseline_run: Run, chosen_run: Run, dimension: str, *, epsilon: float = 0.2
                   ) -> tuple[str, pd.DataFrame]:
    """The final check's Alt-Test (evalcore.views.inference): does the chosen prompt's judge pass on the test part
    where the baseline's failed? (the sentence, and one row per prompt). Each run holds the test part's items only."""
    from evalcore.views import inference as iv

    views = {"baseline": iv.alt_test_for_run(dataset, baseline_run, dimension, epsilon=epsilon),
             "chosen": iv.alt_test_for_run(dataset, chosen_run, dimension, epsilon=epsilon)}
    rows = [{"prompt": name, **{k: v for k, v in iv.alt_test_summary([view]).iloc[0].items() if k != "run"}}
            for name, view in views.items()]
    b, c = views["baseline"].result, views["chosen"].result
    if b is None or c is None:
        why = (views["baseline"] if b is None else views["chosen"]).error
        return f"No Alt-Test on the test part: {why}.", pd.DataFrame(rows)

    def figs(r: AltTestResult) -> str:
        return f"winning rate {100 * r.winning_rate:.0f}%, rho {r.advantage_probability:.3f}"

    at = f"the Alt-Test at epsilon {epsilon:g} on the test part"
    if c.passed and not b.passed:
        text = (f"With the chosen prompt the judge passes {at} ({figs(c)}) where the baseline failed ({figs(b)}): it "
                "can replace the annotators.")
    elif c.passed:
        text = f"With both prompts the judge passes {at}: chosen {figs(c)}, baseline {figs(b)}."
    elif b.passed:
        text = (f"With the chosen prompt the judge FAILS {at} ({figs(c)}) where the baseline passed ({figs(b)}).")
    else:
        text = (f"With neither prompt does the judge pass {at} (chosen {figs(c)}, baseline {figs(b)}): it cannot "
                "replace the annotators yet.")
    return text, pd.DataFrame(rows)


def _p(p: float) -> str:
    from evalcore.views.format import format_pvalue

    return format_pvalue(p)



# ------------------------------------------------------------------------------------------- the page's view model
# What pages/improve.py shows between its widgets, as blocks (evalcore.views.blocks), and what it reads from the
# store, through a Workspace: the page lays the blocks out and wires its widgets to these calls.

HELP = {
    "test_share": "The share of documents held out for the final check.",
    "loop_docs": "Work on K whole documents drawn at random (seeded by the split seed), then split them: a cheaper "
                 "loop, with wider intervals.",
    "make_split": "Documents, not items, are split (every output of a document falls on the same side), stratified "
                  "by system (and by label for a categorical dimension). Saved with the dataset.",
    "agreement": "How each prompt's agreement is measured, on development and in the final check. A correlation at "
                 "the dataset level; on a categorical dimension also Cohen's kappa, the quadratic-weighted kappa "
                 "(ordinal) or accuracy of the judge's labels (a nominal dimension has no order: only those).",
    "fewshot_how": "disagreement: the development items the baseline got most wrong; coverage: items spread over the "
                   "human scale; random: seeded",
}


def intro(dataset_id: str, dimension: str, has_store: bool) -> list[Block]:
    """The page's opening caption, and why it stops without the local store."""
    out: list[Block] = [Note(
        f"Dataset **{esc(dataset_id)}** · dimension **{esc(dimension)}** (change them in the sidebar). Split the "
        "documents, learn from the judge's disagreements on the development part, try candidate prompts there, and "
        "check the chosen one once on held-out documents it never saw.", "caption")]
    if not has_store:
        out.append(Note("The loop needs the local store (splits, criteria versions and every judge call are kept "
                        "there): see the message above.", "info"))
    return out


def make_loop_split(store: Store, dataset: Dataset, dimension: str, *, docs: int, seed: int, test_share: float
                    ) -> Split:
    """Make and save the split the page's "Make the split" button asks for: on ``docs`` whole documents drawn at
    random (seeded by ``seed``; 0: all), ``test_share`` of them held out. ValueError when it cannot be made."""
    from evalcore.align.split import make_split, save_split
    from evalcore.sampling import documents_subset, sample_documents

    if 0 < docs < 2:  # said of the choice, not of the dataset (a one-document subset is not what the dataset holds)
        n_all = int(dataset.items["doc_id"].nunique())
        raise ValueError(f"Documents in the loop: {docs} of {dataset.id}'s {counted(n_all, 'document')} chosen; a "
                         "development / test split needs two or more (0 takes them all).")
    sub = dataset if not docs else documents_subset(dataset, sample_documents(dataset, docs, seed=seed, how="random",
                                                                              dimension=dimension))
    made = make_split(sub, dimension, test_share=test_share, seed=seed)
    save_split(store, made)
    return made


@dataclass
class SplitView:
    """The split section: its parts (left), its systems (right), then its warnings."""

    parts: list[Block]
    systems: list[Block]
    warnings: list[Block]


def split_section(dataset: Dataset, split: Split) -> SplitView:
    """The split in use as counts only, and what a part too small for the intervals or the permutation test means."""
    sid = split.split_id
    parts: list[Block] = [Table(split_overview(split), f"split {sid[:8]} parts", "split_parts", static=True),
                          Note(f"Stratified by {esc(split.strata)}; the test part's human scores stay hidden here "
                               "until the final check.", "caption")]
    systems: list[Block] = [Table(split_by_system(dataset, split), f"split {sid[:8]} by system", "split_systems",
                                  height=240)]
    warnings: list[Block] = []
    few = [name for name, docs in (("development", split.dev_docs), ("test", split.test_docs)) if len(docs) < 10]
    if few:
        warnings.append(Note(
            f"The {' and '.join(few)} part{'s' * (len(few) > 1)} of this split {'hold' if len(few) > 1 else 'holds'} "
            "fewer than 10 documents: every interval resamples documents, and on so few it is too narrow to trust; "
            "the final check's verdict also needs the permutation test that swaps the two prompts on whole "
            "documents, exact on so few.", "warning"))
    n = len(split.test_docs)
    if n < 6:
        warnings.append(Note(
            (f"The test part holds {counted(n, 'document')}: no final check can run on it (swapping two prompts "
             "on whole documents, and resampling documents, need two or more)" if n < MIN_TEST_DOCUMENTS else
             f"The test part holds {counted(n, 'document')}: swapping two prompts on whole documents gives "
             f"{2 ** n} arrangements, so no p-value can fall below {2 / 2 ** n:.3f} and no final check can come out "
             "significant at 5%") +
            ". Hold out more documents (a larger test share or more documents in the loop).", "warning"))
    return SplitView(parts, systems, warnings)


def loop_methods() -> list[str]:
    """The methods the loop can measure (per-item scores: no pairwise method)."""
    from evalcore.methods import METHODS

    return [n for n, m in METHODS.items() if not m.pairwise]


def methods_help(methods: list[str]) -> str:
    """The method picker's help: each method's name and label."""
    from evalcore.methods import METHODS

    return ", ".join(f"{n}: {getattr(METHODS[n], 'label', n)}" for n in methods)


def baseline_caption(base: Criteria, settings: Settings) -> Note:
    return Note(f"Baseline: criteria version {base.version_hash()} (what the Score page would use, the loop's own "
                f"saved candidates aside). Agreement = {agreement_name(settings.coefficient)}, 95% BCa interval "
                f"over documents ({settings.n_resamples} resamples, set in the sidebar).", "caption")


def estimate_note(est: PartEstimate, what: str, endpoint: Endpoint) -> Note:
    """What scoring ``what`` would send and cost (``loop.estimate_part``), as the caption under its button."""
    from evalcore.judge.cost import FREE_PROVIDERS
    from evalcore.judge.spending import usd

    if est.calls == 0:
        return Note(esc(f"Estimate for {what}: nothing to send (its {est.cached:,} requests are repeats or "
                        "already in the cache)."), "caption")
    cost = ("a local server: no price" if endpoint.provider in FREE_PROVIDERS else
            "unknown price (the model is not in the price table)" if est.cost_usd is None else
            f"about {usd(est.cost_usd)}")
    return Note(esc(f"Estimate for {what}: {counted(est.calls, 'request')} to send ({est.cached:,} more are repeats "
                    f"or already in the cache), about {est.prompt_tokens:,} prompt tokens, {cost}."), "caption")


def no_estimate_note(error: Exception) -> Note:
    return Note(esc(f"No estimate: {error or 'no reason given'}"), "warning")


def queue_notes(q: ScoringQueue) -> list[Note]:
    """How the page's scoring queue (evalcore.align.queue) stopped early, if it did."""
    out = q.outcome()
    return [] if out is None else [Note(esc(out[1]) if out[0] == "error" else out[1], out[0])]


def baseline_metrics(base_dev: Scored, dis: Disagreement) -> Metrics:
    a = base_dev.agreement
    return Metrics((Metric("Baseline agreement (development)", fmt(a.statistic),
                           help=f"95% CI {fmt(a.ci_low)} to {fmt(a.ci_high)}" if a.ci_low == a.ci_low else
                           NO_INTERVAL),
                    Metric("Development items judged", f"{len(dis.items):,}"),
                    Metric("Failed (unreadable replies)", f"{dis.failed:,}")))


def item_view(dis: Disagreement, item_id: str) -> tuple[Note, Text, Text]:
    """One development item read closely: who scored what, the text judged and the judge's reply (verbatim)."""
    row = dis.items[dis.items["item_id"].astype(str) == item_id].iloc[0]
    if dis.kind == "nominal":
        says = (f"System {row['system_id']} · human label {dis.label_names[round(row['human'])]} · "
                f"judge label {dis.label_names[round(row['judge'])]}")
    else:
        says = (f"System {row['system_id']} · human {row['human']:.2f} · judge {row['judge']:.3g} "
                f"({row['judge_on_human_scale']:.2f} on the human scale)")
    return (Note(esc(says), "caption"), Text("The text judged", str(row["output"])),
            Text("The judge's reply", str(row["raw"] or "")))


def disagreement_figures(dis: Disagreement) -> list[Figure]:
    """By system and by human score, side by side."""
    return [Figure(by_system_figure(dis), "align_by_system"), Figure(by_human_figure(dis), "align_by_human")]


def reply_expander(proposal: Proposal) -> Expander:
    """The judge's whole reply to the meta-prompt, verbatim."""
    return Expander("The judge's full reply", (Text("Reply", proposal.reply),))


def confusion_blocks(dis: Disagreement) -> list[Block]:
    if dis.confusion is None:
        return []
    return [Note("**Confusion cells** (human label x judge label, development items)", "markdown"),
            Table(confusion_table(dis), "development confusion cells", "align_confusion")]


def meta_prompt_note(n_examples: int, endpoint: Endpoint) -> Note:
    from evalcore.judge.trust import host_of

    return Note(f"It shows {counted(n_examples, 'development item')} with the largest disagreement. \"Propose\" sends it as "
                f"one request to {esc(host_of(endpoint.base_url))} (cached).", "caption")


@dataclass
class Selection:
    """The picker of the candidate to test: its options (criteria versions), the default, each one's label."""

    versions: list[str]
    default: str
    by_version: dict[str, Scored]
    baseline: Scored

    def label(self, version: str) -> str:
        return choice_label(self.baseline, self.by_version[version])


def selection(base_dev: Scored, scored: list[Scored]) -> Selection:
    """The default is the best of those that beat the baseline on development; when none did, the best of them all,
    said to be no better than the baseline (:func:`selection_sentence`), never offered silently as a gain."""
    from evalcore.align.loop import choose

    best = default_choice(base_dev, scored) or (
        choose(scored) if any(s.agreement.statistic == s.agreement.statistic for s in scored) else scored[0])
    return Selection([s.candidate.version for s in scored], best.candidate.version,
                     {s.candidate.version: s for s in scored}, base_dev)


def candidates_blocks(base_dev: Scored, scored: list[Scored], unscored: list[Candidate], chosen: Scored | None,
                      settings: Settings, split_id: str, dimension: str) -> list[Block]:
    table = candidates_table(base_dev, scored, unscored, chosen.candidate.version if chosen else None)
    out: list[Block] = [Figure(candidates_figure(table, settings.coefficient, settings.level), "align_candidates"),
                        Table(table, f"candidates {split_id[:8]} {dimension}", "align_candidates_table")]
    if any(s.agreement.ci_low != s.agreement.ci_low for s in [base_dev, *scored]):  # NaN: no interval
        out.append(Note(esc(f"{NO_INTERVAL}: ci_low and ci_high are blank, and the chart draws no bars."), "caption"))
    return out


def times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


@dataclass
class FinalOffer:
    """The final check's step: its caption, its button's label and weight, and (no development gain) the box that
    must be ticked first."""

    caption: Note
    label: str | None  # None: no check can run on this split (the caption says why)
    primary: bool
    anyway: str | None = None


def final_offer(chosen: Candidate, checks_before: int, no_gain: str | None, blocked: str | None = None
                ) -> FinalOffer:
    """The final check's step; ``blocked`` (``loop.final_check_blocker``): why no check can run on this split, said
    instead of a button (``label`` None), since a check that cannot run is no look to offer."""
    if blocked is not None:
        return FinalOffer(Note(esc(blocked), "warning"), None, False)
    name = candidate_name(chosen.source, chosen.version)
    caption = Note(
        f"Scores the baseline and {esc(name)} once on the test part's documents and compares them by two paired "
        "tests over documents, both of which must reject for a verdict: the paired bootstrap (as on the Compare page) "
        "and the permutation test swapping the two prompts on whole documents (exact on few documents, where the "
        "bootstrap's interval is too narrow). Every final check is counted: " + (
            "this split's test part has not been looked at yet." if not checks_before else
            f"this split's test part has been looked at {times(checks_before)} already; another check is allowed "
            f"and will be reported as check number {checks_before + 1}."), "caption")
    label = "Run the final check on test" if not checks_before else \
        f"Run the final check again (check {checks_before + 1})"
    if no_gain is None:
        return FinalOffer(caption, label, True)
    # nothing gained on development: a check only on an explicit request, never the invited step
    return FinalOffer(caption, label.replace("Run the final check", "Run the final check anyway"), False,
                      f"Check {name} on test anyway, knowing it did not beat the baseline on development (a counted "
                      "look at the test part)")


def picked(scored: list[Scored], version: str | None, default: Scored) -> Scored:
    """The candidate a finished final-check queue scored on test (it may no longer be the one in the picker)."""
    return next((s for s in scored if s.candidate.version == version), default)


def verdict_blocks(check: FinalCheck, baseline_dev: Scored, chosen_dev: Scored, settings: Settings) -> list[Block]:
    """The final check in words, figure and tables (the test part's labels: shown only after the check)."""
    lines = verdict_sentences(check)
    return [Note(esc(lines[0]), "success" if check.verdict == "improved" else "warning"),
            *(Note(esc(line), "markdown") for line in lines[1:]),
            Figure(test_figure(check, baseline_dev, chosen_dev, settings.coefficient, settings.level), "align_test"),
            Table(test_table(check, baseline_dev, chosen_dev), "final check agreement", "align_test_table",
                  static=True),
            Table(difference_table(check), "final check difference", "align_difference", static=True)]


def checks_expander(rows: list[dict[str, Any]], split_id: str) -> Expander:
    return Expander(f"Final checks on this split's test part: {len(rows)}",
                    (Table(final_checks_table(rows), f"final checks {split_id[:8]}", "align_checks"),))


@dataclass
class Workspace:
    """One loop on the page: the dataset, dimension and split in use, the method, endpoint and engine options, whose
    runs (``owner``: the signed-in user), the store and the agreement measure. What the page reads from the store
    goes through it. ``agreement_cache(run_id, updated_at, part)``: the page's cached :meth:`agreement`."""

    dataset: Dataset
    dimension: str
    split: Split
    method: str
    endpoint: Any
    options: Any
    store: Store
    settings: Settings
    owner: str | None = None
    agreement_cache: Callable[[str, str, str], Agreement] | None = None

    @property
    def key(self) -> tuple:
        """What a run's agreement depends on besides the run itself (a cache key)."""
        return (self.dataset.id, self.split.split_id, self.dimension, self.settings.coefficient,
                self.settings.n_resamples)

    @property
    def estimate_key(self) -> tuple:
        return (self.dataset.id, self.split.split_id, self.dimension, self.method,
                json.dumps(self.endpoint.identity(), sort_keys=True))

    def agreement(self, run_id: str, part: str) -> Agreement:
        """A stored run's agreement with the humans on ``part``."""
        frame = part_frame(self.dataset, self.store.load_run(run_id), self.dimension, self.split, part,
                           labels=self.settings.on_labels)
        return agreement_of(frame, self.settings, self.dataset.dimension(self.dimension))

    def run_id(self, part: str, c: Candidate) -> str:
        return run_id_for(self.dataset.id, self.split, part, c, self.method, self.endpoint, self.owner)

    def scored_on(self, part: str, c: Candidate) -> Scored | None:
        """The candidate's finished run on ``part``, or None. This user's own run on this endpoint only
        (``loop.own_run``): another user's run is never read here, whatever its id."""
        rid = self.run_id(part, c)
        row = own_run(self.store, rid, self.owner, self.endpoint)
        if row is None or row["status"] != "done":
            return None
        compute = self.agreement_cache or (lambda r, _at, p: self.agreement(r, p))
        return Scored(candidate=c, part=part, run_id=rid, agreement=compute(rid, str(row["updated_at"]), part))

    def partition(self, cands: list[Candidate]) -> tuple[list[Scored], list[Candidate]]:
        """(the candidates scored on development, those not yet), in the list's order."""
        scored: list[Scored] = []
        unscored: list[Candidate] = []
        for c in cands:
            s = self.scored_on(DEV, c)
            if s is not None:
                scored.append(s)
            else:
                unscored.append(c)
        return scored, unscored

    def estimate(self, part: str, cands: list[Candidate]) -> PartEstimate:
        return estimate_part(self.dataset, self.split, part, self.dimension, self.method, cands, self.options,
                             store=self.store)

    def queue(self, kind: str, part: str, cands: list[Candidate], *, chosen: str | None = None,
              charged_usd: float | None = None) -> ScoringQueue:
        """The scoring queue of ``cands`` on ``part`` (evalcore.align.queue; not started). RunNotReusable when a run
        under one of their ids is someone else's or another endpoint's. On a paid endpoint its runs count what their
        replies cost against the owner's budget (``charged_usd``: the estimate charged at the click, held for all of
        them) and stop at the operator's cap (evalcore.judge.spending.Meter)."""
        from evalcore import improve_jobs
        from evalcore.align import queue
        from evalcore.judge.spending import Meter

        meter = Meter.for_run(self.store, self.owner, self.endpoint, reserved=charged_usd,
                              what=f"improve {self.dataset.id} {self.dimension} {kind}")
        # on a PostgreSQL store (the operator's key) its runs go to the workers when it starts: it outlives the tab
        # (evalcore.improve_jobs), the click's reservation split among its runs, each stopped at the cap in its
        # worker; with a key typed into the browser it runs in this session, as on SQLite
        return improve_jobs.to_workers(queue.plan(
            kind, self.dataset, self.split, part, self.dimension, self.method, cands,
            [candidate_name(c.source, c.version) for c in cands], self.endpoint, self.options, self.store,
            owner=self.owner, chosen=chosen, meter=meter))

    def disagreements(self, base_dev: Scored) -> Disagreement:
        from evalcore.align.disagreement import disagreements

        return disagreements(self.dataset, self.store.load_run(base_dev.run_id), self.dimension, self.split)

    def candidates_key(self, base: Criteria) -> tuple[str, str, str, str, str]:
        return (self.dataset.id, self.dimension, self.split.split_id, self.method, base.version_hash())

    def saved_candidates(self, viewer: Viewer | None, base: Criteria) -> list[Candidate]:
        """The loop's candidates saved before that ``viewer`` may see (signed in: their own and the lab's shared
        ones), the baseline left out."""
        versions = self.store.list_criteria_versions(self.dataset.id, self.dimension, viewer=viewer)
        return [c for c in saved_candidates(versions) if c.version != base.version_hash()]

    def resumed_candidates(self, saved: list[Candidate]) -> list[Candidate]:
        """A new session on this split: the saved candidates already scored on its development part (this user's
        own runs on this endpoint) come back."""
        return [c for c in saved if own_run(self.store, self.run_id(DEV, c), self.owner, self.endpoint) is not None]

    def keep(self, cands: list[Candidate], c: Candidate, base: Criteria, *, may_act: bool) -> Note:
        """Add ``c`` to the list (saved as a criteria version in the owner's name), or say why not."""
        from evalcore.align.candidates import save_candidate
        from evalcore.store import StoreError, store_message

        if c.version == base.version_hash():
            return Note("This candidate is identical to the baseline: not added.", "warning")
        if any(x.version == c.version for x in cands):
            return Note(f"Candidate {c.version[:8]} is already in the list.", "info")
        if not may_act:
            return Note("Sign in to keep a candidate: it is saved as a criteria version in your name.", "warning")
        try:
            save_candidate(self.store, self.dataset.id, c, owner=self.owner)
        except StoreError as e:
            return Note(esc(store_message(e)), "error")
        cands.append(c)
        return Note(esc(f"Kept {candidate_name(c.source, c.version)} as a candidate (saved as a criteria "
                        "version)."), "success")

    def proposal_cost(self, prompt: str) -> tuple[int, float | None]:
        """(requests to send, their cost) of proposing from ``prompt`` (the cache's answer costs nothing)."""
        from evalcore.align.candidates import proposal_request
        from evalcore.judge.spending import requests_cost

        return requests_cost([proposal_request(prompt)], self.endpoint, self.store)

    def propose(self, base: Criteria, prompt: str, example_ids: tuple[str, ...], *, charged_usd: float | None = None
                ) -> Proposal:
        """The judge's proposal; on a paid endpoint the estimate charged at the click (``charged_usd``) is settled
        to what the reply's usage costs (evalcore.judge.spending.Meter)."""
        from evalcore.align.candidates import propose
        from evalcore.judge.spending import Meter

        meter = Meter.for_run(self.store, self.owner, self.endpoint, reserved=charged_usd,
                              what=f"improve {self.dataset.id} {self.dimension} proposal")
        return propose(base, prompt, endpoint=self.endpoint, api_key=self.options.api_key, store=self.store,
                       example_items=example_ids, timeout_s=self.options.timeout_s,
                       max_retries=self.options.max_retries, meter=meter)

    def fewshot(self, base: Criteria, dis: Disagreement, *, k: int, how: str, seed: int) -> Candidate:
        from evalcore.align.candidates import example_pool, fewshot_candidate

        pool = example_pool(self.dataset, self.dimension, self.split, dis)
        return fewshot_candidate(base, pool, self.split, k=k, how=how, seed=seed, human_scale=dis.human_scale)

    def checks(self, viewer: Viewer | None) -> list[dict[str, Any]]:
        """``viewer``'s own checks (and looks at this test part on other pages): another user's are not theirs to
        count, and their candidates' hashes and results are not listed here."""
        return self.store.final_checks(self.dataset.id, self.split.split_id, viewer=viewer)

    def final_check(self, base_dev: Scored, chosen_dev: Scored) -> FinalCheck | Note:
        """The check from the queue's stored test runs (nothing is sent again), recorded and counted; or, when it
        cannot be computed, why (an error note: nothing recorded, so it is no look)."""
        try:
            return final_check(self.dataset, self.split, self.dimension, self.method, base_dev, chosen_dev,
                               self.options, store=self.store, settings=self.settings, owner=self.owner)
        except FinalCheckUnavailable as e:
            return Note(esc(str(e)), "error")

    def final_blocks(self, check: FinalCheck | Note, baseline_dev: Scored, chosen_dev: Scored, epsilon: float
                     ) -> list[Block]:
        """What :meth:`final_check` gave, as the page shows it: the verdict and the Alt-Test, or why no check."""
        if isinstance(check, Note):
            return [check]
        return verdict_blocks(check, baseline_dev, chosen_dev, self.settings) + self.alt_test_blocks(check, epsilon)

    def alt_test_blocks(self, check: FinalCheck, epsilon: float) -> list[Block]:
        """May the judge now replace the annotators? The Alt-Test on the test part, at the Alignment page's
        epsilon."""
        from evalcore.align.split import split_dataset

        text, rows = alt_test_check(split_dataset(self.dataset, self.split, TEST),
                                    self.store.load_run(check.baseline.run_id),
                                    self.store.load_run(check.chosen.run_id), self.dimension, epsilon=epsilon)
        return [Note(esc(text), "markdown"), Table(rows, "final check alt-test", "align_alt_test", static=True)]

__all__ = ["candidate_name", "split_overview", "split_by_system", "split_label", "disagreement_table",
           "by_system_figure", "by_human_figure", "confusion_table", "candidates_table", "candidates_figure",
           "beat_baseline", "default_choice", "choice_label", "selection_sentence", "gain_sentence", "test_table",
           "difference_table", "test_figure", "verdict_sentences", "optimism_sentence", "final_checks_table", "saved_candidates",
           "alt_test_check", "HELP", "intro", "make_loop_split", "SplitView", "split_section", "loop_methods",
           "methods_help", "baseline_caption", "estimate_note", "no_estimate_note", "queue_notes", "baseline_metrics",
           "item_view", "disagreement_figures", "reply_expander", "confusion_blocks", "meta_prompt_note", "Selection", "selection", "candidates_blocks", "times",
           "FinalOffer", "final_offer", "picked", "verdict_blocks", "checks_expander", "Workspace"]
