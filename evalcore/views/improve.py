"""Improve the judge page: the split, the development disagreements, the candidates' development agreement and the
final check on test, as frames and plotly figures (no Streamlit here; the page is pages/improve.py).

Nothing here reads a test-part human label except :func:`test_table` and :func:`test_figure`, which the page calls
only after the final check (evalcore.align.loop.final_check) has been run.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from evalcore.align.candidates import Candidate
from evalcore.align.disagreement import Disagreement
from evalcore.align.loop import FinalCheck, Scored, Settings, beat_baseline, gain_sentence
from evalcore.align.split import Split
from evalcore.meta.compare_labels import LABEL_STATISTICS
from evalcore.model import Dataset

PART_NAMES = {"dev": "development", "test": "test"}


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
            f"{len(split.dev_docs)} development / {len(split.test_docs)} test documents{checks}")


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


def candidates_table(baseline: Scored | None, scored: list[Scored], unscored: list[Any] = (),
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


def agreement_choices(dim) -> list[str]:
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
        out.append(f"The p-value is the larger of two paired tests over the {d.n_documents} test documents: the paired "
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
    def num(x: Any) -> float:
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


def alt_test_check(dataset, baseline_run, chosen_run, dimension: str, *, epsilon: float = 0.2
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

    def figs(r) -> str:
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


__all__ = ["candidate_name", "split_overview", "split_by_system", "split_label", "disagreement_table",
           "by_system_figure", "by_human_figure", "confusion_table", "candidates_table", "candidates_figure",
           "beat_baseline", "default_choice", "choice_label", "selection_sentence", "gain_sentence", "test_table",
           "difference_table", "test_figure", "verdict_sentences", "optimism_sentence", "final_checks_table", "saved_candidates"]
