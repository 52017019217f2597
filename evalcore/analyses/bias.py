"""Bias: writer bias (human- vs LLM-written texts, 000 Fig. 2), mean judge vs mean human score per system (003 Fig.
4), score distributions per method (002 Fig. 3-4), position bias of pairwise runs and the verbosity and
self-preference of score runs. The Bias page (evalcore.views.bias), the report and ``bias --json`` render these
tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.analyses.common import frames_for, run_label
from evalcore.model import STATUS_OK, Dataset, Run


WRITER_COLUMNS = ("written_by", "writer", "author", "source_type")
GROUPS = ("human preferred", "equally good", "LLM preferred")


def writer_column(dataset: Dataset) -> str | None:
    for c in WRITER_COLUMNS:
        if c in dataset.items.columns:
            return c
    return None


def human_written_systems(dataset: Dataset) -> list[str]:
    """Systems whose outputs people wrote (dataset meta ``human_written_systems``: Topical-Chat's "Original Ground
    Truth" and "New Human Generated" turns), present in the items."""
    declared = [str(s) for s in (dataset.meta.get("human_written_systems") or [])]
    return [s for s in declared if s in set(dataset.items["system_id"].astype(str))]


def item_writers(dataset: Dataset, human_systems: list[str] | None = None) -> pd.Series:
    """"human" or "llm" per item_id: from a writer attribute of the items (zhang_pairs' ``written_by``), else from
    the systems known to be human-written (``human_systems``, default the dataset's ``human_written_systems``).
    Empty when the dataset says neither."""
    items = dataset.items.set_index("item_id")
    col = writer_column(dataset)
    if col is not None and human_systems is None:
        return items[col].astype(str).map(lambda w: "human" if _is_human(w) else "llm")
    systems = human_systems if human_systems is not None else human_written_systems(dataset)
    if not systems:
        return pd.Series(dtype=object)
    return pd.Series(np.where(items["system_id"].astype(str).isin([str(s) for s in systems]), "human", "llm"),
                     index=items.index)


def has_writer_info(dataset: Dataset) -> bool:
    return not item_writers(dataset).empty


def human_preference_by_pair(dataset: Dataset, dimension: str | None = None) -> pd.DataFrame:
    """pair_id, item_a, item_b, preferred ("a" | "b" | "tie") by majority of the annotators' votes.

    Votes count +1 for a, -1 for b, 0 for a tie; the sign of the sum decides (a zero sum is a tie). The paper
    (Liu et al. 2023 Sec. 4, after Zhang et al. 2023) groups pairs by the judges' preference; majority is how we
    aggregate several judges of one pair."""
    prefs = dataset.preferences
    if prefs.empty:
        return pd.DataFrame(columns=["pair_id", "doc_id", "item_a", "item_b", "preferred", "votes"])
    if dimension is not None and (prefs["dimension"] == dimension).any():
        prefs = prefs[prefs["dimension"] == dimension]
    vote = prefs["preferred"].map({"a": 1, "b": -1, "tie": 0}).fillna(0)
    g = prefs.assign(vote=vote).groupby(["pair_id", "doc_id", "item_a", "item_b"], as_index=False)
    out = g.agg(votes=("vote", "sum"), annotators=("vote", "size"))
    out["preferred"] = np.where(out["votes"] > 0, "a", np.where(out["votes"] < 0, "b", "tie"))
    return out


def writer_pairs(dataset: Dataset, dimension: str, *, human_systems: list[str] | None = None) -> pd.DataFrame:
    """Pairs of a human-written and an LLM-written text of the same document, with which one the humans preferred.

    Columns: pair_id, doc_id, human_item, llm_item, group (``GROUPS``), basis. With annotators' pairwise votes
    (zhang_pairs) the majority decides (basis "votes"); otherwise every human-written output of a document is paired
    with every model-written one and the higher gold score on ``dimension`` is preferred, an equal score "equally
    good" (basis "human scores": Topical-Chat, whose scores are means of 3 annotators)."""
    cols = ["pair_id", "doc_id", "human_item", "llm_item", "group", "basis"]
    writers = item_writers(dataset, human_systems)
    if writers.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    if not dataset.preferences.empty and human_systems is None:
        for p in human_preference_by_pair(dataset, dimension).itertuples(index=False):
            wa, wb = writers.get(p.item_a), writers.get(p.item_b)
            if wa is None or wb is None or wa == wb:
                continue
            human_side = "a" if wa == "human" else "b"
            human_item, llm_item = (p.item_a, p.item_b) if human_side == "a" else (p.item_b, p.item_a)
            group = ("equally good" if p.preferred == "tie" else
                     "human preferred" if p.preferred == human_side else "LLM preferred")
            rows.append((p.pair_id, p.doc_id, human_item, llm_item, group, "votes"))
        return pd.DataFrame(rows, columns=cols)
    gold = dataset.human_scores
    gold = gold[gold["dimension"] == dimension].set_index("item_id")["score"].astype(float)
    items = dataset.items[["item_id", "doc_id"]].assign(writer=lambda f: f["item_id"].map(writers))
    items = items[items["item_id"].isin(gold.index)]
    for doc, g in items.groupby("doc_id", sort=True):
        humans = g.loc[g["writer"] == "human", "item_id"].tolist()
        llms = g.loc[g["writer"] == "llm", "item_id"].tolist()
        for h in humans:
            for m in llms:
                gh, gm = gold[h], gold[m]
                # scores are means of a few ratings (k/3): equal within rounding is a tie
                group = ("equally good" if abs(gh - gm) < 1e-9 else
                         "human preferred" if gh > gm else "LLM preferred")
                rows.append((f"{h}|{m}", doc, h, m, group, "human scores"))
    return pd.DataFrame(rows, columns=cols)


def writer_bias_pairs(dataset: Dataset, run: Run, dimension: str, *,
                      human_systems: list[str] | None = None) -> pd.DataFrame:
    """``writer_pairs`` with the run's score of each side (judge_human_written, judge_llm_written); only pairs whose
    two texts the judge scored (a partial run must not compare different sets of texts)."""
    pairs = writer_pairs(dataset, dimension, human_systems=human_systems)
    if pairs.empty or run.judgments.empty or dimension not in run.dimensions:
        return pd.DataFrame()
    scores = run.scores(dimension)
    s = scores[scores["status"] == STATUS_OK].set_index("item_id")["judge"]
    t = pairs.assign(judge_human_written=pairs["human_item"].map(s), judge_llm_written=pairs["llm_item"].map(s))
    return t.dropna(subset=["judge_human_written", "judge_llm_written"]).reset_index(drop=True)


def writer_bias_table(dataset: Dataset, run: Run, dimension: str, *,
                      human_systems: list[str] | None = None) -> pd.DataFrame:
    """Liu et al. 2023 Fig. 2: the judge's mean score of the human-written and the LLM-written text of each pair,
    grouped by which one the humans preferred (human preferred / equally good / LLM preferred).

    Works from items with a writer attribute (zhang_pairs) or from systems known to be human-written (Topical-Chat;
    or ``human_systems``). Empty when the run did not score these items."""
    t = writer_bias_pairs(dataset, run, dimension, human_systems=human_systems)
    if t.empty:
        return pd.DataFrame()
    agg = t.groupby("group").agg(
        pairs=("pair_id", "size"),
        human_written=("judge_human_written", "mean"),
        llm_written=("judge_llm_written", "mean"),
    ).reset_index()
    agg["difference"] = agg["human_written"] - agg["llm_written"]
    agg.insert(0, "dimension", dimension)
    agg["basis"] = t["basis"].iloc[0]
    order = {g: i for i, g in enumerate(GROUPS)}
    return agg.sort_values("group", key=lambda x: x.map(order)).reset_index(drop=True)


def _is_human(writer: str) -> bool:
    w = writer.lower()
    return w.startswith("human") or w in ("writer", "freelance", "freelancer", "reference")


def mean_scores_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *,
                      systems: list[str] | None = None) -> pd.DataFrame:
    """Mean judge and mean human score per run, dimension and system (003 Fig. 4 and App. F); ``systems``: only
    these (the Alignment page's filter, as the exported report applies it)."""
    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for dim in dimensions:
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            g = frame.groupby("system_id").agg(judge=("judge", "mean"), human=("human", "mean"),
                                               items=("item_id", "size"),
                                               failed=("judge", lambda x: int(x.isna().sum()))).reset_index()
            g.insert(0, "run", labels[run_id])
            g.insert(1, "dimension", dim)
            parts.append(g)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def score_distribution_table(dataset: Dataset, runs: list[Run], dimension: str) -> pd.DataFrame:
    """Every parsed judge score of each run on one dimension (item_id, run, method, judge)."""
    parts = []
    for run in runs:
        if run.judgments.empty or dimension not in run.dimensions:
            continue
        s = run.scores(dimension)
        s = s[s["status"] == STATUS_OK][["item_id", "judge"]].copy()
        s.insert(0, "run", run_label(run))
        s.insert(1, "method", run.method)
        parts.append(s)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def position_bias_table(runs: list[Run], *, n_resamples: int = 1000) -> pd.DataFrame:
    """First-position win rate, tie rate, flip and inconsistency rates of each pairwise run, per dimension and
    pooled over dimensions ("all": every (dimension, pair) counted once, see meta.pairwise.position_bias), each
    with its 95% interval over documents (``<rate>_ci_low`` / ``_ci_high``, named after the rate so a table shows
    them in its unit; meta.pairwise.position_bias_intervals)."""
    from evalcore.meta.pairwise import position_bias, position_bias_intervals

    rows = []
    for run in runs:
        comps = run.comparisons
        if comps.empty:
            continue
        for dim in list(dict.fromkeys(comps["dimension"].tolist())) + [None]:
            sub = comps if dim is None else comps[comps["dimension"] == dim]
            d = position_bias(sub)
            cis = position_bias_intervals(sub, n_resamples=n_resamples)
            # what each row rests on first (a wide table scrolls: the pairs counted stay in view), then the rates
            row = {"run": run_label(run), "dimension": dim or "all", "n_pairs": _scalar(d["n_pairs"])}
            for rate in POSITION_MEASURES:
                row.update({rate: d[rate], f"{rate}_ci_low": cis[rate].ci_low, f"{rate}_ci_high": cis[rate].ci_high})
            rows.append(row | {k: _scalar(v) for k, v in d.items() if k not in POSITION_MEASURES and k not in row})
    return pd.DataFrame(rows)


def score_bias_table(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000
                     ) -> pd.DataFrame:
    """Verbosity and self-preference of score runs on one dimension (evalcore.meta.preference): the Spearman
    correlation of the judge-human residual (z-scores) with output length, and the mean residual on outputs of the
    judge's own model family beside the other outputs, each with its 95% CI over documents."""
    from evalcore import runs as runs_mod
    from evalcore.meta import fastboot, preference

    cols = ["run", "statistic", "value", "ci_low", "ci_high", "n"]
    if dataset.human_scores.empty or not (dataset.human_scores["dimension"] == dimension).any():
        return pd.DataFrame(columns=cols)
    lengths = dataset.items.drop_duplicates("item_id").set_index("item_id")["output"].astype(str).str.len()
    rows = []
    scored = [run for run in runs if not run.judgments.empty and dimension in run.dimensions]
    with fastboot.expecting(n_resamples * len(scored)):  # the verbosity resamples of every run: one progress plan
        for run in scored:
            frame = runs_mod.score_frame(dataset, run, dimension)
            stats = {"verbosity: residual vs length (Spearman)": preference.score_verbosity(frame, lengths,
                                                                                            n_resamples=n_resamples)}
            sp = preference.score_self_preference(frame, run.model, n_resamples=n_resamples)
            if sp is not None:
                stats[f"self-preference: mean residual, {sp['family']} outputs"] = sp["residual_own"]
                stats["self-preference: mean residual, other outputs"] = sp["residual_other"]
            rows += [{"run": run_label(run), "statistic": k, "value": v.statistic, "ci_low": v.ci_low,
                      "ci_high": v.ci_high, "n": v.n} for k, v in stats.items()]
    return pd.DataFrame(rows, columns=cols)


def _scalar(v: object) -> object:
    if isinstance(v, (list, tuple, dict)):
        return str(v)
    return v


# the headline measure first: a wide table scrolls, and what the page is about stays in view


POSITION_MEASURES = {"flip_rate": "verdict follows the position", "first_position_win_rate": "first position wins",
                     "tie_rate": "ties", "inconsistent_rate": "inconsistent verdicts"}
