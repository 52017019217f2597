"""Pairwise preferences as the field reports them: a judge's A / B / tie verdicts against human votes.

Inputs follow evalcore.model: ``preferences`` (pair_id, doc_id, item_a, item_b, dimension, annotator, preferred in
"a" | "b" | "tie") and a run's ``comparisons`` (one row per pair and presentation order; order "ab" shows item_a
first, "ba" shows item_b first; verdict "first" | "second" | "tie", status "ok" | "failed").

Conventions (each cited where it follows a paper):

- One judge verdict per pair (Zheng et al. 2023, MT-Bench §4.2): a judge run in both orders gives the verdict when
  both orders agree and a tie otherwise. A run with one order gives that order's verdict. An unreadable verdict is
  never guessed: the pair has no combined verdict and is counted (``n_unreadable``); so is a pair of a both-orders
  run that lacks one of its orders (``n_missing_order``).
- Agreement "with ties" (S1) counts every (judge, human vote) pair, tie being a third class; "without ties" (S2)
  leaves out the pairs where either side says tie (FastChat's ``compute_agreement.py`` rule).
- Human-human agreement: the same two agreements over all pairs of different annotators' votes on a pair.
- Majority vote: the most frequent vote of a pair; a pair whose top votes are tied gets "tie".
- Both-order statistics as LLMBar's ``statistics.json`` (Zeng et al. 2024): accuracy per order (correct verdicts over
  the pairs judged in that order, an unreadable verdict counting as not correct), right in both orders, and
  positional agreement (the same readable winner in both orders). One difference: LLMBar's ``equal`` compares the
  two orders' parsed winners as they are, so a pair unreadable in both orders counts as agreeing; ours does not (an
  unreadable verdict agrees with nothing). Their count is offered beside ours, labelled, as
  ``positional_agreement_llmbar`` (the two differ only by the pairs unreadable in both orders).
- A figure that rests on no readable verdict (every reply in that order unreadable) is no figure: its statistic and
  interval are null with the reason, never a measured 0 with a zero-width interval.
- Every statistic comes with a percentile bootstrap interval over prompts (documents): the documents are resampled
  with replacement (evalcore.meta.resampling) and the statistic recomputed; ``n`` is the number of units it counts.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from itertools import combinations
from typing import Any, TypedDict, Unpack

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from evalcore.meta.arrays import FloatArray, IntArray, Seed
from evalcore.meta import fastboot
from evalcore.meta.classification import stats_from_confusion
from evalcore.meta.correlation import replicate_function
from evalcore.meta.resampling import bootstrap_counts
from evalcore.meta.intervals import percentile_ends
from evalcore.meta.results import Estimate, missing, none_if_missing
from evalcore.meta.scoreframe import PreparedFrame
from evalcore.model import STATUS_OK, natural_key

OUTCOMES = ("a", "b", "tie")
N_RESAMPLES = 1000


# The keys ``meta --json`` writes for each figure here (README "Pairwise"): null where there is no figure, and the
# reason beside it.
STAT_KEYS = ("statistic", "ci_low", "ci_high", "n")

NO_VERDICT = "no readable verdict"


class Boot(TypedDict, total=False):
    """The bootstrap settings every figure here is computed with (``**boot``)."""

    n_resamples: int
    random_state: Seed


def stat_dict(e: Estimate) -> dict[str, Any]:
    """A figure as ``meta --json`` writes it: statistic, ci_low, ci_high (null where missing), n, and ``reason``
    where there is no figure."""
    out = e.as_dict(*STAT_KEYS, missing_as_none=True)
    out["n"] = int(e.n)
    if e.notes:
        out["reason"] = e.note
    return out


def to_json(x: Mapping[str, object]) -> dict[str, Any]:
    """``x`` with every Estimate in it written as stat_dict (dicts and lists walked)."""
    return {k: _with_figures(v) for k, v in x.items()}


def _with_figures(x: object) -> object:
    if isinstance(x, Estimate):
        return stat_dict(x)
    if isinstance(x, dict):
        return {k: _with_figures(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_with_figures(v) for v in x]
    return x


def no_figure(n: int, reason: str) -> Estimate:
    """A statistic that cannot be computed, with its reason (``n``: the units it would have counted)."""
    return missing(n, reason)


def _percentile(point: float, lo: float, hi: float, n: int, n_resamples: int) -> Estimate:
    """A figure with its 95% percentile interval over documents (prompts)."""
    return Estimate(point, lo, hi, n=int(n), method="percentile", n_resamples=int(n_resamples),
                    resampling="documents")


def _doc_codes(docs: Iterable[object]) -> tuple[IntArray, int]:
    codes, uniques = pd.factorize(pd.Series(docs, dtype="object"))
    return codes, len(uniques)


def _per_doc(codes: IntArray, n_docs: int, values: FloatArray) -> FloatArray:
    # weighted counts are floats (numpy's stubs type every bincount as integers)
    return np.asarray(np.bincount(codes, weights=np.asarray(values, dtype=float), minlength=n_docs), dtype=np.float64)


def ratio_stat(docs: Iterable[object], numerator: npt.ArrayLike, denominator: npt.ArrayLike | None = None, *,
               n_resamples: int = N_RESAMPLES, random_state: Seed = 0) -> Estimate:
    """sum(numerator) / sum(denominator) over rows (denominator 1 per row by default), CI over documents."""
    num = np.asarray(numerator, dtype=float)
    den = np.ones_like(num) if denominator is None else np.asarray(denominator, dtype=float)
    n = int(den.sum())
    if n == 0:
        return Estimate(math.nan, n=0)
    codes, g = _doc_codes(docs)
    pn, pd_ = _per_doc(codes, g, num), _per_doc(codes, g, den)
    counts = bootstrap_counts(g, n_resamples, random_state)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (counts @ pn) / (counts @ pd_)
    lo, hi = percentile_ends(boot)
    return _percentile(float(num.sum() / den.sum()), lo, hi, n, n_resamples)


def _codes(labels: Iterable[str]) -> IntArray:
    index = {o: i for i, o in enumerate(OUTCOMES)}
    return np.array([index[x] for x in labels], dtype=int)


def _kappa(x: Iterable[str], y: Iterable[str]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one category on both sides: undefined, and NaN says so
        return float(cohen_kappa_score(list(x), list(y), labels=list(OUTCOMES)))


def kappa_stat(docs: Iterable[object], human: Iterable[str], judge: Iterable[str], *, n_resamples: int = N_RESAMPLES,
               random_state: Seed = 0) -> Estimate:
    """Cohen's kappa over A / B / tie (scikit-learn's point estimate; bootstrap over documents)."""
    human, judge = list(human), list(judge)
    if not human:
        return Estimate(math.nan, n=0)
    point = _kappa(human, judge)
    codes, g = _doc_codes(docs)
    cell = _codes(human) * 3 + _codes(judge)
    per_doc = np.zeros((g, 9))
    np.add.at(per_doc, (codes, cell), 1.0)
    counts = bootstrap_counts(g, n_resamples, random_state)
    boot = stats_from_confusion((counts @ per_doc).reshape(-1, 3, 3))["cohen_kappa"]
    lo, hi = percentile_ends(boot)
    return _percentile(point if np.isfinite(point) else math.nan, lo, hi, len(human), n_resamples)


# ---------------------------------------------------------------------------------------------- one verdict per pair

JUDGE_COLUMNS = ["pair_id", "doc_id", "item_a", "item_b", "ab", "ba", "status_ab", "status_ba", "verdict", "why"]


def _outcome(order: str, verdict: object) -> str | None:
    """The verdict as the item it favours: "a" (item_a), "b" or "tie"."""
    if verdict == "tie":
        return "tie"
    if verdict not in ("first", "second"):
        return None
    return "a" if (verdict == "first") == (order == "ab") else "b"


def judge_outcomes(comparisons: pd.DataFrame, dimension: str | None = None) -> pd.DataFrame:
    """One row per pair: the outcome in each order (None where absent or unreadable), the status of each order and
    the combined verdict (module docstring); ``why`` says why a pair has no combined verdict."""
    c = comparisons
    if dimension is not None and "dimension" in c.columns:
        c = c[c["dimension"] == dimension]
    if c.empty:
        return pd.DataFrame(columns=JUDGE_COLUMNS)
    bad = ~c["order"].isin(["ab", "ba"])
    if bad.any():
        raise ValueError(f"comparisons: order {c.loc[bad, 'order'].iloc[0]!r} (pair {c.loc[bad, 'pair_id'].iloc[0]!r})"
                         " is neither 'ab' nor 'ba'")
    orders_used = set(c["order"])
    rows: dict[object, dict[str, Any]] = {}
    for r in c.itertuples(index=False):
        ok = r.status == STATUS_OK and r.verdict in ("first", "second", "tie")
        item_a, item_b = (r.item_first, r.item_second) if r.order == "ab" else (r.item_second, r.item_first)
        row = rows.setdefault(r.pair_id, {"pair_id": r.pair_id, "doc_id": r.doc_id, "item_a": item_a,
                                          "item_b": item_b, "ab": None, "ba": None, "status_ab": None,
                                          "status_ba": None})
        row[r.order] = _outcome(r.order, r.verdict) if ok else None
        row[f"status_{r.order}"] = "ok" if ok else "unreadable"
    out = pd.DataFrame(list(rows.values()))
    verdicts: list[str | None] = []
    whys: list[str | None] = []
    for r in out.itertuples(index=False):
        present = [o for o in ("ab", "ba") if pd.notna(getattr(r, f"status_{o}"))]
        if any(getattr(r, f"status_{o}") == "unreadable" for o in present):
            verdicts.append(None)
            whys.append("unreadable")
        elif len(present) < len(orders_used):
            verdicts.append(None)
            whys.append("missing order")
        elif len(present) == 1:
            verdicts.append(getattr(r, present[0]))
            whys.append("")
        else:  # Zheng et al. 2023 §4.2: agree in both orders, else a tie
            verdicts.append(r.ab if r.ab == r.ba else "tie")
            whys.append("")
    out["verdict"] = verdicts
    out["why"] = whys
    return out[JUDGE_COLUMNS]


def majority_votes(preferences: pd.DataFrame) -> pd.DataFrame:
    """pair_id, doc_id, item_a, item_b, majority ("tie" when the top votes are tied), n_votes."""
    cols = ["pair_id", "doc_id", "item_a", "item_b", "majority", "n_votes"]
    if preferences.empty:
        return pd.DataFrame(columns=cols)
    counts = pd.crosstab(preferences["pair_id"], preferences["preferred"]).reindex(columns=list(OUTCOMES),
                                                                                   fill_value=0)
    top = counts.to_numpy()
    best = top.max(axis=1, keepdims=True)
    unique = (top == best).sum(axis=1) == 1
    majority = np.where(unique, np.array(OUTCOMES, dtype=np.object_)[top.argmax(axis=1)], "tie")
    first = preferences.drop_duplicates("pair_id").set_index("pair_id").reindex(counts.index)
    out = pd.DataFrame({"pair_id": counts.index, "doc_id": first["doc_id"].to_numpy(),
                        "item_a": first["item_a"].to_numpy(), "item_b": first["item_b"].to_numpy(),
                        "majority": majority, "n_votes": top.sum(axis=1)})
    return out[cols].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------- agreements


def agreement(docs: Iterable[object], human: Iterable[str], judge: Iterable[str], *, ties: bool,
              n_resamples: int = N_RESAMPLES, random_state: Seed = 0) -> Estimate:
    """Share of (human, judge) label pairs that agree; ``ties=False`` leaves out pairs where either says tie (S2)."""
    h, j = np.asarray(list(human), dtype=np.object_), np.asarray(list(judge), dtype=np.object_)
    d = np.asarray(list(docs), dtype=np.object_)
    keep = np.ones(len(h), dtype=bool) if ties else (h != "tie") & (j != "tie")
    return ratio_stat(d[keep], (h[keep] == j[keep]).astype(float), n_resamples=n_resamples,
                      random_state=random_state)


def vote_pairs(preferences: pd.DataFrame) -> pd.DataFrame:
    """All pairs of different annotators' votes on the same pair: pair_id, doc_id, vote_1, vote_2."""
    v = preferences[["pair_id", "doc_id", "annotator", "preferred"]].reset_index(drop=True)
    v["k"] = np.arange(len(v))
    m = v.merge(v, on="pair_id", suffixes=("_1", "_2"))
    m = m[(m["k_1"] < m["k_2"]) & (m["annotator_1"] != m["annotator_2"])]
    return pd.DataFrame({"pair_id": m["pair_id"].to_numpy(), "doc_id": m["doc_id_1"].to_numpy(),
                         "vote_1": m["preferred_1"].to_numpy(), "vote_2": m["preferred_2"].to_numpy()})


# Below this many shared pairs one vote moves the observed agreement by more than 0.1: a kappa there comes with a
# caveat (over one shared pair it is 0 or undefined whatever the annotators' skill).
FEW_SHARED_PAIRS = 10


def shared_pairs_note(n: int) -> str:
    """The caveat a kappa over few shared pairs carries ("" from FEW_SHARED_PAIRS on)."""
    if n >= FEW_SHARED_PAIRS:
        return ""
    if n == 0:
        return "no shared pair: no kappa"
    return (f"over {n} shared pair{'s' if n != 1 else ''} only: one vote moves the agreement by {1 / n:.2f}; not a "
            "reliable measure of agreement")


def annotator_kappas(preferences: pd.DataFrame) -> list[dict[str, Any]]:
    """Cohen's kappa for every pair of annotators over the pairs both voted on: [{a, b, kappa, n}], with a ``note``
    where they share fewer than FEW_SHARED_PAIRS pairs."""
    wide = preferences.pivot_table(index="pair_id", columns="annotator", values="preferred", aggfunc="last")
    names = sorted(wide.columns, key=natural_key)
    out = []
    for a, b in combinations(names, 2):
        both = wide[[a, b]].dropna()
        k = _kappa(both[a], both[b]) if len(both) else math.nan
        row = {"a": a, "b": b, "kappa": none_if_missing(k), "n": int(len(both))}
        if shared_pairs_note(len(both)):
            row["note"] = shared_pairs_note(len(both))
        out.append(row)
    return out


def both_order_stats(judged: pd.DataFrame, gold: pd.DataFrame, **boot: Unpack[Boot]) -> dict[str, Estimate]:
    """LLMBar's statistics.json figures: accuracy_ab, accuracy_ba, both_orders_correct, positional_agreement, and
    positional_agreement_llmbar (their convention: a pair unreadable in both orders agrees).

    ``judged``: judge_outcomes; ``gold``: pair_id -> majority. An absent order leaves the pair out of that order's
    accuracy and out of the both-order figures; an unreadable verdict is present and not correct. An order with no
    readable verdict has no accuracy, and the both-order figures need a pair readable in both orders (no_figure)."""
    j = judged.merge(gold[["pair_id", "majority"]], on="pair_id", how="inner")
    out = {}
    for o in ("ab", "ba"):
        m = j[j[f"status_{o}"].notna()]
        out[f"accuracy_{o}"] = (
            ratio_stat(m["doc_id"], (m[o] == m["majority"]).astype(float), **boot) if m[o].notna().any()
            else no_figure(len(m), f"{NO_VERDICT}: all {len(m)} verdicts in this order were unreadable"))
    both = j[j["status_ab"].notna() & j["status_ba"].notna()]
    if len(both):
        readable = both["ab"].notna() & both["ba"].notna()
        if not readable.any():
            why = f"{NO_VERDICT}: none of the {len(both)} pairs was read in both orders"
            return {**out, **{k: no_figure(len(both), why) for k in
                              ("both_orders_correct", "positional_agreement", "positional_agreement_llmbar")}}
        ok_ab, ok_ba = both["ab"] == both["majority"], both["ba"] == both["majority"]
        out["both_orders_correct"] = ratio_stat(both["doc_id"], (ok_ab & ok_ba).astype(float), **boot)
        same = readable & (both["ab"] == both["ba"])
        out["positional_agreement"] = ratio_stat(both["doc_id"], same.astype(float), **boot)
        # LLMBar's `equal` compares the parsed winners as they are: two unreadable ones are equal
        unread_both = both["ab"].isna() & both["ba"].isna()
        out["positional_agreement_llmbar"] = ratio_stat(both["doc_id"], (same | unread_both).astype(float), **boot)
    return out


def why_no_verdict(judged: pd.DataFrame) -> str:
    """Why the judged pairs give no combined verdict, in words (the reason a figure on them is null)."""
    if judged.empty:
        return "no annotated pair was judged"
    why = judged["why"].value_counts()
    parts = [f"{int(why[k])} {k}" for k in ("unreadable", "missing order") if why.get(k, 0)]
    return f"{NO_VERDICT}: {' and '.join(parts) or 'none'} of the {len(judged)} judged pairs"


def judge_vs_humans(votes: pd.DataFrame, judged: pd.DataFrame, **boot: Unpack[Boot]) -> dict[str, Estimate]:
    """Zheng et al.'s S1 / S2: the pair's combined judge verdict against every human vote."""
    v = votes.merge(judged[["pair_id", "verdict"]], on="pair_id", how="inner")
    v = v[v["verdict"].notna()]
    if v.empty:
        why = why_no_verdict(judged)
        return {"with_ties": no_figure(0, why), "without_ties": no_figure(0, why)}
    return {"with_ties": agreement(v["doc_id"], v["preferred"], v["verdict"], ties=True, **boot),
            "without_ties": agreement(v["doc_id"], v["preferred"], v["verdict"], ties=False, **boot)}


def human_vs_human(preferences: pd.DataFrame, **boot: Unpack[Boot]) -> dict[str, Estimate]:
    vp = vote_pairs(preferences)
    if vp.empty:
        return {}
    return {"with_ties": agreement(vp["doc_id"], vp["vote_1"], vp["vote_2"], ties=True, **boot),
            "without_ties": agreement(vp["doc_id"], vp["vote_1"], vp["vote_2"], ties=False, **boot)}


def judge_vs_majority(gold: pd.DataFrame, judged: pd.DataFrame, **boot: Unpack[Boot]) -> dict[str, Any]:
    """Accuracy, Cohen's kappa and the A / B / tie confusion matrix (rows: majority, columns: judge); with no
    readable verdict the three are null with the reason (an all-zero matrix is no data)."""
    m = gold.merge(judged[["pair_id", "verdict"]], on="pair_id", how="inner")
    m = m[m["verdict"].notna()]
    layout = {"labels": list(OUTCOMES), "rows": "majority vote", "columns": "judge"}
    if m.empty:
        why = why_no_verdict(judged)
        return {"accuracy": no_figure(0, why), "cohen_kappa": no_figure(0, why),
                "confusion_matrix": {**layout, "counts": None, "reason": why}}
    cm = confusion_matrix(m["majority"], m["verdict"], labels=list(OUTCOMES))
    return {"accuracy": ratio_stat(m["doc_id"], (m["majority"] == m["verdict"]).astype(float), **boot),
            "cohen_kappa": kappa_stat(m["doc_id"], m["majority"], m["verdict"], **boot),
            "confusion_matrix": {**layout, "counts": np.asarray(cm, dtype=int).tolist()}}


def per_annotator(preferences: pd.DataFrame, judged: pd.DataFrame, **boot: Unpack[Boot]) -> list[dict[str, Any]]:
    out = []
    for name, g in sorted(preferences.groupby("annotator"), key=lambda kv: natural_key(kv[0])):
        m = g.merge(judged[["pair_id", "verdict"]], on="pair_id", how="inner")
        m = m[m["verdict"].notna()]
        if m.empty:
            why = why_no_verdict(judged[judged["pair_id"].isin(g["pair_id"])])
            out.append({"annotator": name, **{k: no_figure(0, why)
                                              for k in ("with_ties", "without_ties", "cohen_kappa")}})
            continue
        out.append({"annotator": name,
                    "with_ties": agreement(m["doc_id"], m["preferred"], m["verdict"], ties=True, **boot),
                    "without_ties": agreement(m["doc_id"], m["preferred"], m["verdict"], ties=False,
                                              **boot),
                    "cohen_kappa": kappa_stat(m["doc_id"], m["preferred"], m["verdict"], **boot)})
    return out


# ---------------------------------------------------------------------------------------------- models


def _points(labels: Iterable[str]) -> FloatArray:
    """Points for item_a: 1 for "a", 0 for "b", 0.5 for a tie (the usual win-rate convention, ties halved)."""
    return np.array([1.0 if x == "a" else 0.0 if x == "b" else 0.5 for x in labels])


def _long_games(frame: pd.DataFrame, label_col: str, system_of: pd.Series) -> pd.DataFrame:
    """Each vote/verdict as two rows, one per model: doc_id, model, opponent, points."""
    pts = _points(frame[label_col])
    sa = system_of.reindex(frame["item_a"]).to_numpy()
    sb = system_of.reindex(frame["item_b"]).to_numpy()
    docs = frame["doc_id"].to_numpy()
    return pd.DataFrame({"doc_id": np.concatenate([docs, docs]), "model": np.concatenate([sa, sb]),
                         "opponent": np.concatenate([sb, sa]), "points": np.concatenate([pts, 1 - pts])})


def model_win_rates(preferences: pd.DataFrame, judged: pd.DataFrame, items: pd.DataFrame, *,
                    n_resamples: int = N_RESAMPLES, random_state: Seed = 0) -> dict[str, Any] | None:
    """Per model and per model pair: win rate (ties count 0.5) by the humans' votes and by the judge's combined
    verdicts, and the Spearman correlation of the two win-rate rankings of the models (CI over prompts).

    None when the items name fewer than 2 models."""
    system_of = items.drop_duplicates("item_id").set_index("item_id")["system_id"].astype(str)
    j = judged[judged["verdict"].notna()]
    human = _long_games(preferences, "preferred", system_of)
    judge = _long_games(j, "verdict", system_of)
    models = sorted(set(human["model"]) | set(judge["model"]), key=natural_key)
    if len(models) < 2:
        return None
    none = no_figure(0, why_no_verdict(judged)) if j.empty else None  # the judge's side rests on no verdict
    per_model = []
    for m in models:
        h, jj = human[human["model"] == m], judge[judge["model"] == m]
        per_model.append({"model": m,
                          "human_win_rate": ratio_stat(h["doc_id"], h["points"], n_resamples=n_resamples,
                                                       random_state=random_state),
                          "judge_win_rate": none or ratio_stat(jj["doc_id"], jj["points"], n_resamples=n_resamples,
                                                               random_state=random_state)})
    per_pair = []
    for a, b in combinations(models, 2):
        h = human[(human["model"] == a) & (human["opponent"] == b)]
        jj = judge[(judge["model"] == a) & (judge["opponent"] == b)]
        if h.empty and jj.empty:
            continue
        per_pair.append({"model_a": a, "model_b": b,
                         "human_win_rate_a": ratio_stat(h["doc_id"], h["points"], n_resamples=n_resamples,
                                                        random_state=random_state),
                         "judge_win_rate_a": none or ratio_stat(jj["doc_id"], jj["points"], n_resamples=n_resamples,
                                                                random_state=random_state)})
    rho = none or _ranking_correlation(human, judge, models, n_resamples=n_resamples, random_state=random_state)
    return {"ranking": "win rate (ties count 0.5), Spearman correlation of the per-model win rates",
            "per_model": per_model, "per_pair": per_pair, "ranking_spearman": rho}


def _win_matrix(games: pd.DataFrame, docs: pd.Index, models: list[str]) -> tuple[FloatArray, FloatArray]:
    d = docs.get_indexer(games["doc_id"])
    m = pd.Index(models).get_indexer(games["model"])
    pts, n = np.zeros((len(docs), len(models))), np.zeros((len(docs), len(models)))
    np.add.at(pts, (d, m), games["points"].to_numpy(dtype=float))
    np.add.at(n, (d, m), 1.0)
    return pts, n


def _ranking_correlation(human: pd.DataFrame, judge: pd.DataFrame, models: list[str], *, n_resamples: int,
                         random_state: Seed) -> Estimate:
    docs = pd.Index(pd.unique(pd.concat([human["doc_id"], judge["doc_id"]])))
    hp, hn = _win_matrix(human, docs, models)
    jp, jn = _win_matrix(judge, docs, models)
    with np.errstate(invalid="ignore", divide="ignore"):
        hw, jw = hp.sum(0) / hn.sum(0), jp.sum(0) / jn.sum(0)
    ok = np.isfinite(hw) & np.isfinite(jw)
    if ok.sum() < 3 or np.ptp(hw[ok]) == 0 or np.ptp(jw[ok]) == 0:  # too few models, or a constant ranking
        return Estimate(math.nan, n=int(ok.sum()))
    point = float(sps.spearmanr(hw[ok], jw[ok]).statistic)
    counts = bootstrap_counts(len(docs), n_resamples, random_state)
    with np.errstate(invalid="ignore", divide="ignore"):
        bh, bj = (counts @ hp) / (counts @ hn), (counts @ jp) / (counts @ jn)
        rh, rj = sps.rankdata(bh[:, ok], axis=1), sps.rankdata(bj[:, ok], axis=1)
        rh, rj = rh - rh.mean(1, keepdims=True), rj - rj.mean(1, keepdims=True)
        boot = (rh * rj).sum(1) / np.sqrt((rh ** 2).sum(1) * (rj ** 2).sum(1))
    boot[~(np.isfinite(bh[:, ok]).all(1) & np.isfinite(bj[:, ok]).all(1))] = np.nan
    lo, hi = percentile_ends(boot)
    return _percentile(point, lo, hi, int(ok.sum()), n_resamples)


# ---------------------------------------------------------------------------------------------- bias


def position_bias_stat(comparisons: pd.DataFrame, dimension: str | None = None, **boot: Unpack[Boot]) -> Estimate:
    """Share of the decisive readable verdicts that favour the output shown first (0.5 = no position bias)."""
    c = comparisons
    if dimension is not None and "dimension" in c.columns:
        c = c[c["dimension"] == dimension]
    d = c[(c["status"] == STATUS_OK) & c["verdict"].isin(["first", "second"])]
    return ratio_stat(d["doc_id"], (d["verdict"] == "first").astype(float), **boot)


def _longer(frame: pd.DataFrame, label_col: str, length_of: pd.Series) -> pd.DataFrame:
    """Decisive labels between outputs of different length: doc_id, longer_wins (1/0)."""
    la = length_of.reindex(frame["item_a"]).to_numpy()
    lb = length_of.reindex(frame["item_b"]).to_numpy()
    lab = frame[label_col].to_numpy()
    keep = np.isin(lab, ["a", "b"]) & (la != lb)
    winner_longer = np.where(lab == "a", la > lb, lb > la)
    return pd.DataFrame({"doc_id": frame["doc_id"].to_numpy()[keep], "longer_wins": winner_longer[keep] * 1.0})


def verbosity_bias(preferences: pd.DataFrame, judged: pd.DataFrame, items: pd.DataFrame,
                   **boot: Unpack[Boot]) -> dict[str, Any]:
    """AlpacaEval-style "prefer longer": the share of decisive verdicts for the longer output (in characters),
    beside the humans' share of decisive votes for it. Pairs of equal length are left out."""
    length_of = items.drop_duplicates("item_id").set_index("item_id")["output"].astype(str).str.len()
    j = _longer(judged[judged["verdict"].notna()], "verdict", length_of)
    h = _longer(preferences, "preferred", length_of)
    return {"judge_prefers_longer": ratio_stat(j["doc_id"], j["longer_wins"], **boot),
            "humans_prefer_longer": ratio_stat(h["doc_id"], h["longer_wins"], **boot)}


def model_family(name: str) -> str:
    """A model's family: its name's first word, lower-cased (gpt-4 and gpt-3.5-turbo are both "gpt")."""
    head = str(name).strip().lower().split("/")[-1]
    for sep in ("-", "_", " ", ":"):
        head = head.split(sep)[0]
    return "".join(ch for ch in head if ch.isalpha()) or head


def self_preference(preferences: pd.DataFrame, judged: pd.DataFrame, items: pd.DataFrame, judge_model: str,
                    **boot: Unpack[Boot]) -> dict[str, Any] | None:
    """The judge's win rate for outputs of its own model family against other families, beside the humans' win
    rate for the same outputs (ties 0.5). None when no pair sets the judge's family against another."""
    fam = model_family(judge_model)
    system_of = items.drop_duplicates("item_id").set_index("item_id")["system_id"].astype(str)
    out = {}
    for key, frame, col in (("judge", judged[judged["verdict"].notna()], "verdict"),
                            ("humans", preferences, "preferred")):
        g = _long_games(frame, col, system_of)
        own = g["model"].map(model_family) == fam
        other = g["opponent"].map(model_family) != fam
        g = g[own & other]
        if g.empty:
            return None
        out[key] = ratio_stat(g["doc_id"], g["points"], **boot)
    return {"family": fam, "judge_win_rate_own": out["judge"], "human_win_rate_own": out["humans"]}


# ---------------------------------------------------------------------------------------------- everything at once


def align_to_preferences(comparisons: pd.DataFrame, preferences: pd.DataFrame) -> pd.DataFrame:
    """The comparisons with the pair ids and orientation of the annotated pairs they judged.

    A judge run (scored here, or imported) may name a pair differently ("item|item") or show the pair's item_b as
    its "ab" first: a comparison of the same two items gets the preference's pair_id, and its order is what was
    shown first relative to the preference's item_a ("ab" when item_a came first). Comparisons of pairs nobody voted
    on keep their ids (counted as not annotated)."""
    if comparisons.empty or preferences.empty:
        return comparisons
    pairs = preferences.drop_duplicates("pair_id")
    by_items = {frozenset((a, b)): (pid, a) for pid, a, b in zip(pairs["pair_id"], pairs["item_a"], pairs["item_b"])}
    c = comparisons.copy()
    hits = [by_items.get(frozenset((f, s))) for f, s in zip(c["item_first"], c["item_second"])]
    known = np.array([h is not None for h in hits], dtype=bool)
    if known.any():
        c.loc[known, "pair_id"] = [h[0] for h in hits if h is not None]
        c.loc[known, "order"] = ["ab" if f == h[1] else "ba" for f, h in zip(c.loc[known, "item_first"],
                                                                             [h for h in hits if h is not None])]
    return c


def pairwise_summary(preferences: pd.DataFrame, comparisons: pd.DataFrame, items: pd.DataFrame, *,
                     dimension: str = "preference", judge_model: str = "", n_resamples: int = N_RESAMPLES,
                     random_state: Seed = 0) -> dict[str, Any]:
    """The block ``meta --json`` reports under ``dimensions.<dim>.pairwise`` (keys in README "Pairwise").

    A block is absent where it does not apply: human_human with one annotator, the both-order figures for a
    one-order run, models when the items name fewer than 2 models, self_preference when no pair sets the judge's
    model family against another. Every figure is computed as an Estimate and written by stat_dict."""
    boot: Boot = {"n_resamples": n_resamples, "random_state": random_state}
    prefs = preferences[preferences["dimension"] == dimension] if "dimension" in preferences.columns else preferences
    if prefs.empty:
        raise ValueError(f"no human preferences on dimension {dimension!r}")
    comparisons = align_to_preferences(comparisons, prefs)
    judged = judge_outcomes(comparisons, dimension)
    annotated = set(prefs["pair_id"])
    judged_here = judged[judged["pair_id"].isin(annotated)]
    gold = majority_votes(prefs)
    out: dict[str, Any] = {
        "counts": {"pairs": int(len(annotated)), "votes": int(len(prefs)),
                   "annotators": sorted(prefs["annotator"].unique().tolist(), key=natural_key),
                   "judged_pairs": int(len(judged_here)),
                   "with_verdict": int(judged_here["verdict"].notna().sum()),
                   "unreadable": int((judged_here["why"] == "unreadable").sum()),
                   "missing_order": int((judged_here["why"] == "missing order").sum()),
                   "not_annotated": int(len(judged) - len(judged_here)),
                   "orders": sorted(set(comparisons["order"])) if len(comparisons) else []},
        "agreement": judge_vs_humans(prefs, judged_here, **boot),
    }
    hh = human_vs_human(prefs, **boot)
    if hh:
        out["human_human"] = hh
        out["annotator_kappa"] = annotator_kappas(prefs)
    vm = judge_vs_majority(gold, judged_here, **boot)
    out["accuracy"] = vm["accuracy"]
    out["cohen_kappa"] = vm["cohen_kappa"]
    out["confusion_matrix"] = vm["confusion_matrix"]
    out["per_annotator"] = per_annotator(prefs, judged_here, **boot)
    if set(out["counts"]["orders"]) == {"ab", "ba"}:
        out.update(both_order_stats(judged_here, gold, **boot))
    models = model_win_rates(prefs, judged_here, items, **boot)
    if models is not None:
        out["models"] = models
    bias = {"position_first_win_rate": position_bias_stat(
                comparisons[comparisons["pair_id"].isin(annotated)], dimension, **boot),
            **verbosity_bias(prefs, judged_here, items, **boot)}
    sp = self_preference(prefs, judged_here, items, judge_model, **boot) if judge_model else None
    if sp is not None:
        bias["self_preference"] = {"family": sp["family"], "judge_win_rate_own": sp["judge_win_rate_own"],
                                   "human_win_rate_own": sp["human_win_rate_own"]}
    out["bias"] = bias
    return to_json(out)


# ---------------------------------------------------------------------------------------------- score runs


def _z(x: FloatArray) -> FloatArray:
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)


def score_residuals(frame: pd.DataFrame) -> pd.DataFrame:
    """A score run's items with both sides standardised (z-scores: judge and humans may use different scales) and
    the residual judge - human: doc_id, system_id, residual (items with no judge value left out)."""
    f = frame[pd.to_numeric(frame["judge"], errors="coerce").notna()].copy()
    f["residual"] = _z(f["judge"].to_numpy(float)) - _z(f["human"].to_numpy(float))
    return f


def score_verbosity(frame: pd.DataFrame, lengths: pd.Series, *, n_resamples: int = N_RESAMPLES,
                    random_state: Seed = 0) -> Estimate:
    """Verbosity bias of a score run: Spearman correlation of the judge-human residual (z-scores) with the output's
    length in characters, CI over documents. Above 0: the judge rates longer outputs higher than the humans do."""
    f = score_residuals(frame)
    f["length"] = lengths.reindex(f["item_id"]).to_numpy(dtype=float)
    f = f[np.isfinite(f["length"])]
    if len(f) < 3 or f["length"].nunique() < 2 or f["residual"].nunique() < 2:
        return Estimate(math.nan, n=len(f))
    point = float(sps.spearmanr(f["residual"], f["length"]).statistic)
    codes, g = _doc_codes(f["doc_id"])
    lo, hi = percentile_ends(_spearman_document_bootstrap(f["residual"].to_numpy(float), f["length"].to_numpy(float),
                                                    np.asarray(codes, dtype=np.int64), g, n_resamples, random_state))
    return _percentile(point, lo, hi, len(f), n_resamples)


def _spearman_document_bootstrap(x: FloatArray, y: FloatArray, codes: IntArray, n_docs: int, n_resamples: int,
                                 random_state: Seed) -> FloatArray:
    """Spearman's rho on each document resample of ``bootstrap_counts(n_docs, n_resamples, random_state)`` (NaN where
    a side is constant): a rank correlation does not decompose over documents, so each resample is the weighted
    multiset of its documents' items, ranked from one sort (the correlation module's dataset-level replicates, in
    blocks of resamples; on 200,000 items 1,000 explicit resamples through scipy took 45 s)."""
    p = PreparedFrame(x=x, y=y, doc=codes, system=np.zeros(len(x), dtype=np.int64), doc_ids=np.arange(n_docs),
                      system_ids=np.zeros(1), dropped=0)
    of_counts = replicate_function(p, level="dataset", coefficient="spearman")
    with fastboot.expecting(n_resamples):
        return fastboot.over_blocks(of_counts, fastboot.count_blocks(n_docs, n_resamples, random_state))


def score_self_preference(frame: pd.DataFrame, judge_model: str, **boot: Unpack[Boot]) -> dict[str, Any] | None:
    """Self-preference of a score run: the mean judge-human residual (z-scores) on outputs of the judge's own model
    family, beside the same on the other outputs (CI over documents). None when no output is of that family."""
    fam = model_family(judge_model)
    f = score_residuals(frame)
    own = f["system_id"].astype(str).map(model_family) == fam
    if not own.any() or own.all():
        return None
    return {"family": fam, "residual_own": ratio_stat(f.loc[own, "doc_id"], f.loc[own, "residual"], **boot),
            "residual_other": ratio_stat(f.loc[~own, "doc_id"], f.loc[~own, "residual"], **boot)}
