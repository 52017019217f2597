"""Pairwise meta-evaluation: Shen et al.'s head-to-head (H2H, 003) and Chen et al.'s pairwise Kendall tau-b by
difficulty (002).

H2H verdicts arrive as a run's ``comparisons`` table (evalcore.model): one row per presentation order ("ab": item_a
shown first; "ba": shown second), verdict "first" | "second" | "tie" relative to that order, status "ok" | "failed".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from evalcore.meta.arrays import BoolArray, FloatArray, Seed
from evalcore.meta.scoreframe import REQUIRED_COLUMNS
from evalcore.meta.resampling import bootstrap_counts
from evalcore.meta.intervals import percentile_ends
from evalcore.meta.systems import CorrectPreferencesResult, points, tally_preferences
from evalcore.model import STATUS_OK, natural_key

UNREADABLE = ("drop", "tie")

H2H_COLUMNS = ["system_a", "system_b", "doc_id", "item_a", "item_b", "judge_points_a", "human_points_a",
               "n_verdicts", "n_unreadable"]


def _check_columns(frame: pd.DataFrame, columns: Iterable[str], name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}")


def _verdict_points(comparisons: pd.DataFrame, unreadable: str) -> pd.DataFrame:
    """One row per readable (or tie-counted) verdict: pair_id, doc_id, item_a, item_b, points for item_a.

    item_a is the item shown first in order "ab" (= shown second in order "ba"). A verdict for the first position
    favours item_a in order "ab" and item_b in order "ba".
    """
    _check_columns(comparisons, ["pair_id", "doc_id", "item_first", "item_second", "order", "verdict", "status"],
                   "comparisons")
    c = comparisons.copy()
    bad_order = ~c["order"].isin(["ab", "ba"])
    if bad_order.any():
        row = bad_order.to_numpy().nonzero()[0][0]
        raise ValueError(f"comparisons: column 'order' row {row} holds {c['order'].iloc[row]!r}; expected 'ab' or 'ba'")
    readable = (c["status"] == STATUS_OK) & c["verdict"].isin(["first", "second", "tie"])
    bad_verdict = (c["status"] == STATUS_OK) & ~readable
    if bad_verdict.any():
        row = bad_verdict.to_numpy().nonzero()[0][0]
        raise ValueError(f"comparisons: row {row} has status 'ok' but verdict {c['verdict'].iloc[row]!r}; expected "
                         "'first', 'second' or 'tie'")
    c["readable"] = readable
    ab = c["order"] == "ab"
    c["item_a"] = np.where(ab, c["item_first"], c["item_second"])
    c["item_b"] = np.where(ab, c["item_second"], c["item_first"])
    first = c["verdict"] == "first"
    second = c["verdict"] == "second"
    favours_a = (first & ab) | (second & ~ab)
    favours_b = (second & ab) | (first & ~ab)
    c["points_a"] = np.where(favours_a, 1.0, np.where(favours_b, 0.0, 0.5))
    if unreadable == "drop":
        c.loc[~readable, "points_a"] = np.nan
    # unreadable == "tie": 003's rule, an unreadable verdict is a tie (0.5 to each side of that order).
    return c


def h2h_preferences(comparisons: pd.DataFrame, items: pd.DataFrame, human_scores: pd.DataFrame, dimension: str | None,
                    *,
                    unreadable: str = "drop") -> pd.DataFrame:
    """003 H2H per (pair of systems, document): the judge's points for system a, averaged over both orders.

    Each pair is judged twice with the order swapped (003 3.1); each verdict is worth 0.5 of the document's point:
    a verdict for a gives a 0.5, a tie 0.25 to each, so judge_points_a is in {0, 0.25, 0.5, 0.75, 1} (the mean of
    the two verdicts' 1 / 0.5 / 0). Unreadable verdicts (status "failed"): ``unreadable="drop"`` (default) leaves
    them out and the document's points are the mean of the readable verdicts (n_unreadable counts them; a document
    with no readable verdict is dropped); ``unreadable="tie"`` counts them as ties, as 003's released code does.
    Runs parsed in paper mode already carry such verdicts as "tie" with status "ok".

    human_points_a = 1 / 0.5 / 0 as a's human score is higher / equal / lower (003 4.2.1).
    ``items``: item_id, doc_id, system_id; ``human_scores``: item_id, dimension, score.
    """
    if unreadable not in UNREADABLE:
        raise ValueError(f"unreadable must be one of {list(UNREADABLE)}, got {unreadable!r}")
    _check_columns(items, ["item_id", "system_id"], "items")
    _check_columns(human_scores, ["item_id", "dimension", "score"], "human_scores")
    comp = comparisons
    if "dimension" in comp.columns:
        comp = comp[comp["dimension"] == dimension]
    c = _verdict_points(comp, unreadable)
    system_of = items.set_index("item_id")["system_id"]
    hs = human_scores[human_scores["dimension"] == dimension].set_index("item_id")["score"].astype(float)
    for col in ("item_a", "item_b"):
        unknown = ~c[col].isin(system_of.index)
        if unknown.any():
            raise ValueError(f"comparisons: item {c.loc[unknown, col].iloc[0]!r} is not in the items table")
    c["n_unreadable"] = (~c["readable"]).astype(int)
    # Group on the items, not pair_id, so the two orders meet even if a producer gave them different pair ids.
    g = c.groupby(["doc_id", "item_a", "item_b"], sort=False).agg(
        judge_points_a=("points_a", "mean"), n_verdicts=("points_a", "count"), n_unreadable=("n_unreadable", "sum"),
    ).reset_index()
    g = g[g["n_verdicts"] > 0].copy()
    g["system_a"] = system_of.reindex(g["item_a"]).to_numpy()
    g["system_b"] = system_of.reindex(g["item_b"]).to_numpy()
    ha = hs.reindex(g["item_a"]).to_numpy()
    hb = hs.reindex(g["item_b"]).to_numpy()
    if np.isnan(ha).any() or np.isnan(hb).any():
        miss = g["item_a"][np.isnan(ha)].tolist() + g["item_b"][np.isnan(hb)].tolist()
        raise ValueError(f"human_scores: no {dimension!r} score for item {miss[0]!r}")
    g["human_points_a"] = points(ha, hb)
    return g[H2H_COLUMNS].reset_index(drop=True)


def h2h_correct_preferences(comparisons: pd.DataFrame, items: pd.DataFrame, human_scores: pd.DataFrame,
                            dimension: str | None,
                            *, pairs: Iterable[tuple[str, str]] | None = None,
                            unreadable: str = "drop") -> CorrectPreferencesResult:
    """#CP (003 4.2.1) from H2H verdicts: per system pair, a's points summed over documents against n_docs / 2.

    ``pairs`` None = every system pair in the comparisons, oriented in natural system order; otherwise the given
    (a, b) pairs (e.g. the challenge pairs of 003 App. E), each oriented as given (b's points are 1 - a's).
    """
    per_doc = h2h_preferences(comparisons, items, human_scores, dimension, unreadable=unreadable)
    # Orient every document row as (lo, hi) in natural order, then flip to the requested orientation.
    swap = np.array([natural_key(a) > natural_key(b) for a, b in zip(per_doc["system_a"], per_doc["system_b"])],
                    dtype=bool)
    d = per_doc.copy()
    d.loc[swap, ["system_a", "system_b"]] = d.loc[swap, ["system_b", "system_a"]].to_numpy()
    d.loc[swap, "judge_points_a"] = 1.0 - d.loc[swap, "judge_points_a"]
    d.loc[swap, "human_points_a"] = 1.0 - d.loc[swap, "human_points_a"]
    sums = d.groupby(["system_a", "system_b"]).agg(n_docs=("doc_id", "count"), judge=("judge_points_a", "sum"),
                                                   human=("human_points_a", "sum"))
    if pairs is None:
        wanted = sorted(sums.index, key=lambda ab: (natural_key(ab[0]), natural_key(ab[1])))
    else:
        wanted = [tuple(p) for p in pairs]
    rows = []
    for a, b in wanted:
        lo, hi = sorted((a, b), key=natural_key)
        if (lo, hi) not in sums.index:
            raise ValueError(f"no H2H comparisons on {dimension!r} for the system pair ({a!r}, {b!r})")
        s = sums.loc[(lo, hi)]
        n = int(s["n_docs"])
        ja, hum = float(s["judge"]), float(s["human"])
        if (a, b) != (lo, hi):
            ja, hum = n - ja, n - hum
        rows.append({"system_a": a, "system_b": b, "n_docs": n, "judge_points_a": ja, "human_points_a": hum})
    return tally_preferences(rows)


def position_bias(comparisons: pd.DataFrame, *, dimension: str | None = None) -> dict[str, Any]:
    """How much the judge's H2H verdicts depend on presentation order.

    first_position_win_rate: of the decisive verdicts ("first" or "second"), the fraction for the first position
    (0.5 = no bias). tie_rate: ties among readable verdicts. flip_rate: of the pairs with both orders readable, the
    fraction where the verdict follows the position, not the text (the same position wins both times), so the
    preferred system flips with the order. inconsistent_rate: fraction of those pairs whose two verdicts do not name
    the same outcome (includes a tie in one order and a win in the other). n_pairs: pairs with both orders readable,
    a pair being (dimension, pair_id) when the frame holds several dimensions.
    """
    c = comparisons
    if dimension is not None and "dimension" in c.columns:
        c = c[c["dimension"] == dimension]
    _check_columns(c, ["pair_id", "order", "verdict", "status"], "comparisons")
    readable = (c["status"] == STATUS_OK) & c["verdict"].isin(["first", "second", "tie"])
    r = c[readable]
    decisive = r["verdict"].isin(["first", "second"])
    n_dec = int(decisive.sum())
    # Map each verdict to the system it favours: "a" (item_a wins), "b", or "tie".
    ab = r["order"] == "ab"
    outcome = np.where(r["verdict"] == "tie", "tie",
                       np.where((r["verdict"] == "first") == ab, "a", "b"))
    inconsistent, positional, _ = _both_order_pairs(r, outcome)
    n_pairs = len(inconsistent)
    return {
        "first_position_win_rate": float((r["verdict"] == "first").sum() / n_dec) if n_dec else float("nan"),
        "tie_rate": float((r["verdict"] == "tie").mean()) if len(r) else float("nan"),
        "flip_rate": float(positional.mean()) if n_pairs else float("nan"),
        "inconsistent_rate": float(inconsistent.mean()) if n_pairs else float("nan"),
        "n_pairs": int(n_pairs),
        "n_verdicts": int(len(r)),
        "n_decisive": n_dec,
        "n_unreadable": int((~readable).sum()),
    }


def _both_order_pairs(r: pd.DataFrame, outcome: FloatArray) -> tuple[pd.Series, pd.Series, FloatArray]:
    """Over the pairs with both orders readable: (inconsistent, positional, each pair's document). ``r``: the
    readable verdicts; ``outcome``: the item each favours ("a", "b", "tie")."""
    # A pair is one pair of texts judged on one dimension: pair_id repeats across dimensions (Shen's H2H run judges
    # the same 1,100 pairs on four), so pooling over dimensions must key by both, or the "all" row would keep only
    # the last dimension's verdicts.
    dims = r["dimension"].astype(str).to_numpy() if "dimension" in r.columns else np.full(len(r), "")
    docs = r["doc_id"].astype(str).to_numpy() if "doc_id" in r.columns else np.full(len(r), "")
    o = pd.DataFrame({"dimension": dims, "pair_id": r["pair_id"].to_numpy(), "doc_id": docs,
                      "order": r["order"].to_numpy(), "outcome": outcome, "verdict": r["verdict"].to_numpy()})
    both = o.pivot_table(index=["dimension", "pair_id", "doc_id"], columns="order", values=["outcome", "verdict"],
                         aggfunc="last")
    if ("outcome", "ab") not in both.columns or ("outcome", "ba") not in both.columns:
        empty = pd.Series(dtype=bool)
        return empty, empty, np.array([], dtype=object)
    both = both.dropna()
    inconsistent = both[("outcome", "ab")] != both[("outcome", "ba")]
    positional = (both[("verdict", "ab")] == both[("verdict", "ba")]) & (both[("verdict", "ab")] != "tie")
    return inconsistent, positional, both.index.get_level_values("doc_id").to_numpy()


def position_bias_intervals(comparisons: pd.DataFrame, *, dimension: str | None = None, n_resamples: int = 1000,
                            random_state: Seed = 0) -> dict[str, Any]:
    """position_bias's four rates, each as an Estimate with its 95% percentile interval over documents
    (prompts resampled with replacement, the rate recomputed as a ratio of sums: preference.ratio_stat), as every
    pairwise figure's interval is computed."""
    from evalcore.meta.preference import Boot, ratio_stat

    c = comparisons
    if dimension is not None and "dimension" in c.columns:
        c = c[c["dimension"] == dimension]
    _check_columns(c, ["pair_id", "doc_id", "order", "verdict", "status"], "comparisons")
    r = c[(c["status"] == STATUS_OK) & c["verdict"].isin(["first", "second", "tie"])]
    ab = r["order"] == "ab"
    outcome = np.where(r["verdict"] == "tie", "tie", np.where((r["verdict"] == "first") == ab, "a", "b"))
    inconsistent, positional, pair_docs = _both_order_pairs(r, outcome)
    boot: Boot = {"n_resamples": n_resamples, "random_state": random_state}
    dec = r[r["verdict"].isin(["first", "second"])]
    return {"first_position_win_rate": ratio_stat(dec["doc_id"], (dec["verdict"] == "first").astype(float), **boot),
            "tie_rate": ratio_stat(r["doc_id"], (r["verdict"] == "tie").astype(float), **boot),
            "flip_rate": ratio_stat(pair_docs, positional.astype(float).to_numpy(), **boot),
            "inconsistent_rate": ratio_stat(pair_docs, inconsistent.astype(float).to_numpy(), **boot)}


# --------------------------------------------------------------------------------------------------------------------
# 002: pairwise Kendall tau-b by difficulty

DIFFICULTY_BUCKETS = ("hard", "medium", "easy")


def _item_pairs(frame: pd.DataFrame) -> pd.DataFrame:
    """All pairs of items of the same document (i before j in row order), with judge and human differences."""
    parts = []
    for _, g in frame.groupby("doc_id", sort=True):
        k = len(g)
        if k < 2:
            continue
        iu, ju = np.triu_indices(k, 1)
        j = g["judge"].to_numpy()
        h = g["human"].to_numpy()
        parts.append(pd.DataFrame({"doc_id": g["doc_id"].iloc[0], "judge_diff": j[iu] - j[ju],
                                   "human_diff": h[iu] - h[ju]}))
    if not parts:
        return pd.DataFrame(columns=["doc_id", "judge_diff", "human_diff"])
    return pd.concat(parts, ignore_index=True)


def pairwise_tau_b(human_diff: FloatArray, judge_diff: FloatArray) -> dict[str, Any]:
    """002 App. C, Eq. 2: tau_B = (P - Q) / sqrt((P + Q + T)(P + Q + U)) over item pairs, where P = concordant
    pairs (judge and humans prefer the same item), Q = discordant, T = tied only by the humans, U = tied only by the
    judge; pairs tied by both count in neither (002's table marks them "-")."""
    sh = np.sign(human_diff)
    sj = np.sign(judge_diff)
    P = int(((sh * sj) > 0).sum())
    Q = int(((sh * sj) < 0).sum())
    T = int(((sh == 0) & (sj != 0)).sum())
    U = int(((sh != 0) & (sj == 0)).sum())
    both = int(((sh == 0) & (sj == 0)).sum())
    den = np.sqrt(float(P + Q + T) * float(P + Q + U))
    tau = (P - Q) / den if den > 0 else float("nan")
    return {"tau": float(tau), "concordant": P, "discordant": Q, "ties_human": T, "ties_judge": U,
            "ties_both": both}


def _tau_b_counts(sh: FloatArray, sj: FloatArray) -> FloatArray:
    """Per item pair, the indicator of each of P, Q, T, U (pairwise_tau_b's counts): pairs x 4."""
    return np.stack([(sh * sj) > 0, (sh * sj) < 0, (sh == 0) & (sj != 0), (sh != 0) & (sj == 0)], axis=1
                    ).astype(float)


def _tau_b_interval(pairs: pd.DataFrame, mask: BoolArray, counts: FloatArray, docs: pd.Index
                    ) -> tuple[float, float]:
    """The percentile interval of tau_B over document resamples (``counts``: resamples x documents): each document's
    P, Q, T, U summed, then weighted by how often the resample drew it (the bucket's cuts held fixed)."""
    sh, sj = np.sign(pairs["human_diff"].to_numpy(dtype=float)), np.sign(pairs["judge_diff"].to_numpy(dtype=float))
    per_doc = np.zeros((len(docs), 4))
    np.add.at(per_doc, docs.get_indexer(pairs["doc_id"].to_numpy()[mask]), _tau_b_counts(sh[mask], sj[mask]))
    P, Q, T, U = (counts @ per_doc).T
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (P - Q) / np.sqrt((P + Q + T) * (P + Q + U))
    return percentile_ends(tau)


def pairwise_kendall_by_difficulty(frame: pd.DataFrame, *, n_pairs: int | None = None,
                                   buckets: str | tuple[float, float] = "tertiles", random_state: Seed = 0,
                                   n_resamples: int = 0) -> pd.DataFrame:
    """002's pairwise Kendall tau-b (App. C, Eq. 2) over pairs of items of the same document, by difficulty.

    002 sorts pairs into hard / medium / easy by the size of the human score difference (larger = easier) without
    publishing the thresholds, so they are a parameter: ``buckets="tertiles"`` (default) cuts |human difference| at
    its 1/3 and 2/3 quantiles over the pairs (hard: <= first cut; medium: <= second; easy: above); a pair of numbers
    (t1, t2) gives fixed cuts on the same rule. Pairs the humans tie on (difference 0) are the hardest and fall in
    "hard". ``n_pairs``: sample that many pairs uniformly without replacement (002 sampled 200 per dataset); None
    uses every pair. Items with a missing judge value are dropped first.

    Columns: bucket (hard, medium, easy, all), low, high (|human difference| range of the bucket), n_pairs, tau,
    concordant, discordant, ties_human, ties_judge, ties_both; with ``n_resamples`` > 0 also tau_ci_low, tau_ci_high:
    the 95% percentile interval over documents (resampled with replacement, seeded by ``random_state``; a pair
    belongs to its document; the bucket cuts stay those of the data).
    """
    _check_columns(frame, REQUIRED_COLUMNS, "score frame")
    f = frame[pd.to_numeric(frame["judge"], errors="coerce").notna()].copy()
    f["judge"] = f["judge"].astype(float)
    f["human"] = f["human"].astype(float)
    pairs = _item_pairs(f)
    if n_pairs is not None:
        if n_pairs < 1:
            raise ValueError(f"n_pairs must be positive, got {n_pairs}")
        if n_pairs < len(pairs):
            rng = np.random.default_rng(random_state)
            pairs = pairs.iloc[np.sort(rng.choice(len(pairs), size=n_pairs, replace=False))]
    gap = np.abs(pairs["human_diff"].to_numpy(dtype=float))
    if isinstance(buckets, str):
        if buckets != "tertiles":
            raise ValueError(f"buckets must be 'tertiles' or a pair of thresholds, got {buckets!r}")
        t1, t2 = (np.quantile(gap, [1 / 3, 2 / 3]) if len(gap) else (np.nan, np.nan))
    else:
        t1, t2 = (float(v) for v in buckets)
        if t1 > t2:
            raise ValueError(f"bucket thresholds must be increasing, got {buckets!r}")
    masks = {"hard": gap <= t1, "medium": (gap > t1) & (gap <= t2), "easy": gap > t2,
             "all": np.ones(len(gap), dtype=bool)}
    bounds = {"hard": (0.0, t1), "medium": (t1, t2), "easy": (t2, float(gap.max()) if len(gap) else np.nan),
              "all": (0.0, float(gap.max()) if len(gap) else np.nan)}
    rows = []
    hd = pairs["human_diff"].to_numpy(dtype=float)
    jd = pairs["judge_diff"].to_numpy(dtype=float)
    docs = pd.Index(sorted(f["doc_id"].unique()))
    counts = bootstrap_counts(len(docs), n_resamples, random_state) if n_resamples > 0 else None
    for name, m in masks.items():
        row = {"bucket": name, "low": float(bounds[name][0]), "high": float(bounds[name][1]), "n_pairs": int(m.sum())}
        row.update(pairwise_tau_b(hd[m], jd[m]))
        if counts is not None:
            row["tau_ci_low"], row["tau_ci_high"] = _tau_b_interval(pairs, m, counts, docs)
        rows.append(row)
    return pd.DataFrame(rows)
