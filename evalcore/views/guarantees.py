"""The Alignment page's Guarantees section: where the judge may be trusted with a guarantee and where it must escalate
(selective evaluation, Jung, Brahman & Choi 2025), and per-item intervals for the human score (split conformal).
``meta --selective`` / ``--conformal`` compute the same figures (evalcore.analyses.guarantees)."""

from __future__ import annotations

import pandas as pd

from evalcore.analyses import guarantees as ga
from evalcore.model import Dataset, Run
from evalcore.views.blocks import Block, Heading, Note, Table
from evalcore.views.format import counted, esc

TITLE = "Where may I use the judge's verdict? Guarantees"
ALPHAS = (0.1, 0.2)
DELTA = 0.1
LEVEL = 0.9


def scored_documents(dataset: Dataset, run: Run, dimension: str) -> int:
    """How many documents ``run`` judged on ``dimension`` (its items' documents, or its pairs')."""
    j = run.judgments
    if not j.empty and dimension in set(j["dimension"]):
        items = set(j.loc[j["dimension"] == dimension, "item_id"].astype(str))
        return int(dataset.items.loc[dataset.items["item_id"].astype(str).isin(items), "doc_id"].nunique())
    c = run.comparisons
    return int(c.loc[c["dimension"] == dimension, "doc_id"].nunique()) if not c.empty else 0


def _calibration_docs(dataset: Dataset, runs: list[Run] | None = None, dimension: str | None = None) -> int:
    """Half the documents: of the dataset, or of the fewest any selected run judged (a partial run is split among
    its own documents, so that every run has a calibration part and a held-out part)."""
    if runs and dimension is not None:
        return min(scored_documents(dataset, r, dimension) for r in runs) // 2
    return dataset.items["doc_id"].nunique() // 2


def scored_runs(runs: list[Run], dimension: str) -> list[Run]:
    """The runs with verdicts on ``dimension`` (item by item, or pairwise)."""
    return [r for r in runs if dimension in r.dimensions]


def selective_table(dataset: Dataset, runs: list[Run], names: dict[str, str], dimension: str, *,
                    seed: int = 0) -> tuple[pd.DataFrame, dict[str, tuple[str, ...]]]:
    """Per run and alpha (delta 0.1, half the documents calibrating): the confidence used, the threshold, coverage
    and agreement on the kept held-out items, and the sentence; and each run's abstained items at the first alpha.
    A run with no confidence of its own has the other selected runs as its jury."""
    rows, abstained = [], {}
    n_cal = _calibration_docs(dataset, runs, dimension)
    for run in runs:
        jury = [r for r in runs if r is not run and not r.judgments.empty] or None
        for alpha in ALPHAS:
            a = ga.selective(dataset, run, dimension, alpha=alpha, delta=DELTA, calibration_docs=n_cal, seed=seed,
                             jury=jury)
            r = a.result
            rows.append({"run": names.get(run.run_id, run.run_id), "alpha": alpha, "delta": DELTA,
                         "confidence": a.verdicts.source or "none",
                         "threshold": None if r is None else r.threshold,
                         "coverage": 0.0 if r is None else r.coverage.statistic,
                         "agreement_kept": None if r is None else r.agreement_kept.statistic,
                         "agreement_ci_low": None if r is None else r.agreement_kept.ci_low,
                         "agreement_ci_high": None if r is None else r.agreement_kept.ci_high,
                         "held_out_items": None if r is None else r.coverage.n,
                         "what_it_means": a.reason if r is None else r.sentence})
            if r is not None and alpha == ALPHAS[0]:
                abstained[run.run_id] = r.abstained
    return pd.DataFrame(rows), abstained


def _usd_per_item(run: Run) -> float | None:
    """The run's recorded cost (tokens x the price table) over the items or pairs it judged; None when unknown."""
    from evalcore.views.jury import run_cost

    usd = run_cost(run)
    n = run.judgments["item_id"].nunique() if not run.judgments.empty else len(run.comparisons)
    return None if usd is None or not n else usd / n


def cascade_table(dataset: Dataset, runs: list[Run], names: dict[str, str], dimension: str, *,
                  seed: int = 0) -> pd.DataFrame:
    """The selected runs as a cascade (Jung et al. 2025, Sec. 4) at the first alpha: the cheapest first where every
    run's cost is known, else in the order selected; each stage keeps what it is sure of among the held-out items
    that reach it, people take the rest. Empty with fewer than two runs or no shared item."""
    if len(runs) < 2:
        return pd.DataFrame()
    usd = {r.run_id: _usd_per_item(r) for r in runs}
    if all(v is not None for v in usd.values()):
        runs = sorted(runs, key=lambda r: usd[r.run_id] or 0.0)  # every one priced (checked above)
    try:
        k = ga.cascade(dataset, runs, dimension, alpha=ALPHAS[0], delta=DELTA,
                       calibration_docs=_calibration_docs(dataset, runs, dimension), costs=[0.0] * len(runs), human_cost=0.0,
                       seed=seed)
    except ValueError:  # the runs share no item with a human score
        return pd.DataFrame()
    rows = [{"stage": names.get(st["stage"], st["stage"]), "threshold": st["threshold"], "reached": st["reached"],
             "kept": st["kept"], "agreement_kept": st["agreement_kept"].statistic,
             "agreement_ci_low": st["agreement_kept"].ci_low, "agreement_ci_high": st["agreement_kept"].ci_high,
             "usd_per_item_judged": usd[st["stage"]], "what_it_means": st["reason"] or ""}
            for st in k["stages"]]
    rows.append({"stage": "people", "reached": k["to_humans"], "kept": k["to_humans"],
                 "what_it_means": "every item the last judge abstains on"})
    return pd.DataFrame(rows)


def conformal_table(dataset: Dataset, runs: list[Run], names: dict[str, str], dimension: str, *,
                    seed: int = 0) -> pd.DataFrame:
    """Per run (ratings only): coverage and width of the 90% conformal intervals on the held-out documents, the
    midpoint's correlation beside the judge's."""
    rows = []
    for run in runs:
        if run.judgments.empty or dimension not in set(run.judgments["dimension"]):
            continue
        c = ga.conformal(dataset, run, dimension, level=LEVEL, calibration_docs=_calibration_docs(dataset, runs, dimension),
                         seed=seed)
        rows.append({"run": names.get(run.run_id, run.run_id), "level": LEVEL, "held_out_documents": c["test_docs"],
                     "held_out_items": c["test_items"], "coverage": c["coverage"], "mean_width": c["mean_width"],
                     "midpoint_correlation": c["midpoint_correlation"], "judge_correlation": c["judge_correlation"],
                     "note": c["note"]})
    return pd.DataFrame(rows)


def plan_labels(dataset: Dataset) -> int:
    """How many labels the stratified plan spends: a quarter of the held-out half's items, 20 at least, 200 at most."""
    return int(min(200, max(20, len(dataset.items) // 8)))


def stratified_table(dataset: Dataset, runs: list[Run], names: dict[str, str], dimension: str, *,
                     seed: int = 0) -> pd.DataFrame:
    """Per run (binary dimensions only): the held-out items' labelling planned by the judge's verdict, each stratum's
    items, positive share (from the calibration documents) and labels, and the saving against simple random
    sampling (evalcore.analyses.guarantees.stratified_plan). Empty for any other kind."""
    if dataset.dimension(dimension).kind != "binary":
        return pd.DataFrame()
    rows = []
    for run in runs:
        if run.judgments.empty or dimension not in set(run.judgments["dimension"]):
            continue
        p = ga.stratified_plan(dataset, run, dimension, n_labels=plan_labels(dataset),
                               calibration_docs=_calibration_docs(dataset, runs, dimension), seed=seed)
        rows += [{"run": names.get(run.run_id, run.run_id), "stratum": st["stratum"], "items": st["items"],
                  "positive_share": st["positive_share"], "labels": st["labels"], "inclusion": st["inclusion"],
                  "saving_vs_random": p["saving"], "note": p["note"]} for st in p["strata"]]
    return pd.DataFrame(rows)


def blocks(dataset: Dataset, runs: list[Run], names: dict[str, str], dimension: str) -> list[Block]:
    """The section for the selected runs on one dimension."""
    return section(dataset, runs, names, dimension)[0]


def label_queues(dataset: Dataset, abstained: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    """Per run, the abstained ids that are items of the dataset (what the Label page can rate one at a time; a
    pairwise run abstains on pairs): the runs with none are left out."""
    items = set(dataset.items["item_id"].astype(str))
    out = {run_id: [i for i in map(str, ids) if i in items] for run_id, ids in abstained.items()}
    return {k: v for k, v in out.items() if v}


def section(dataset: Dataset, runs: list[Run], names: dict[str, str], dimension: str
            ) -> tuple[list[Block], dict[str, tuple[str, ...]]]:
    """The section's blocks, and each run's abstained held-out items at the first alpha (the Label page's queue)."""
    runs = scored_runs(runs, dimension)
    if not runs:
        return [Note("No selected run judged this dimension.", "info")], {}
    n_cal = _calibration_docs(dataset, runs, dimension)
    if n_cal < 1:
        fewest = min(scored_documents(dataset, r, dimension) for r in runs)
        return [Note(f"No guarantee: a selected run judged {counted(fewest, 'document')} on {esc(dimension)}, and "
                     "a guarantee needs at least two (some to calibrate the threshold, others to show what it "
                     "keeps).", "info")], {}
    sel_t, abstained = selective_table(dataset, runs, names, dimension)
    out: list[Block] = [
        Heading(f"Selective evaluation on {esc(dimension)}", 3),
        Note(f"Half the documents ({n_cal}, drawn at random) calibrate a confidence threshold by fixed-sequence "
             "testing with an exact binomial bound (Jung, Brahman & Choi, ICLR 2025): the items the judge keeps "
             "then agree with the humans at least 1 - alpha, with probability at least 1 - delta over the draw of "
             "the calibration documents. The other documents show what the threshold keeps (coverage) and how far "
             "those items agree (Clopper-Pearson 95% interval). A rating agrees when it lies within one scale "
             "point of the human score; a preference or label when it is the same.", "info"),
        Table(sel_t, f"selective {dimension}", "guar_selective"),
    ]
    n_abst = sum(len(v) for v in abstained.values())
    if n_abst:
        out.append(Note(f"At alpha {ALPHAS[0]:g} the selected runs abstain on {n_abst} held-out item(s) in all "
                        "(counted per run): those go to a stronger judge or to people. \"Label its abstained "
                        "items\" hands a run's abstained items to the Label page as its queue (order \"judge least "
                        "certain\", from \"items a judge abstained on\"); a pair is not an item to label there.",
                        "info"))
    casc = cascade_table(dataset, runs, names, dimension)
    if not casc.empty:
        out += [Heading(f"A cascade of the selected runs (alpha {ALPHAS[0]:g}, delta {DELTA:g})", 3),
                Note("Each judge, calibrated on the calibration items that reach it, keeps the held-out items it "
                     "is sure of and passes the rest on; people take what the last one abstains on (Jung, Brahman "
                     "& Choi 2025, Sec. 4). A judge without a confidence of its own (no log-probs, one draw, one "
                     "order) keeps nothing here. The cheapest first where every run's recorded cost is known (US "
                     "dollars per item judged, from its token usage), else in the order selected.", "info"),
                Table(casc, f"cascade {dimension}", "guar_cascade")]
    conf_t = conformal_table(dataset, runs, names, dimension)
    if not conf_t.empty:
        out += [Heading(f"Intervals for each item's human score ({LEVEL:.0%} split conformal)", 3),
                Note("Calibrated on the same documents, each held-out item gets an interval for its human score "
                     "from the judge's score: the points the human score takes, ties among the calibration residuals "
                     "broken at random so that coverage is the level rather than the level plus the ties' mass. "
                     "Coverage is measured on the held-out documents (the guarantee is over items, not per system); the midpoint is an "
                     "alternative score.", "info"),
                Table(conf_t, f"conformal {dimension}", "guar_conformal")]
    strat = stratified_table(dataset, runs, names, dimension)
    if not strat.empty:
        out += [Heading(f"Labelling planned by the judge's verdict ({plan_labels(dataset)} labels)", 3),
                Note("For a binary label: the held-out items split by what the judge said, each part's share of "
                     "human positives estimated on the calibration documents, the labels allocated where that "
                     "share is least certain (Neyman allocation) and the positive share estimated with "
                     "inverse-probability weights (inclusion = labels / items; Cochran 1977, ch. 5.5). The saving "
                     "is how many times the labels simple random sampling needs for the same variance: 1 when the "
                     "verdict says nothing of the label.", "info"),
                Table(strat, f"stratified plan {dimension}", "guar_stratified")]
    return out, abstained
