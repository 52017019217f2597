"""evalcore.meta.pairwise: H2H points and #CP (003), position bias, and 002's pairwise Kendall tau-b by difficulty."""

import math

import numpy as np
import pandas as pd
import pytest

from evalcore.meta import (
    h2h_correct_preferences, h2h_preferences, pairwise_kendall_by_difficulty, pairwise_tau_b, position_bias,
)
from evalcore.model import COMPARISON_COLUMNS

ITEMS = pd.DataFrame({
    "item_id": ["d1/A", "d1/B", "d2/A", "d2/B", "d3/A", "d3/B"],
    "doc_id": ["d1", "d1", "d2", "d2", "d3", "d3"],
    "system_id": ["A", "B", "A", "B", "A", "B"],
})
HUMAN = pd.DataFrame({"item_id": ITEMS.item_id, "dimension": "coherence", "score": [4, 2, 3, 3, 1, 5]})


def comp(rows):
    """rows: (doc, order, verdict or None). Order "ab" shows A first."""
    out = []
    for doc, order, verdict in rows:
        a, b = f"{doc}/A", f"{doc}/B"
        first, second = (a, b) if order == "ab" else (b, a)
        out.append({"pair_id": f"{doc}:A-B", "doc_id": doc, "item_first": first, "item_second": second,
                    "dimension": "coherence", "order": order, "raw": str(verdict), "verdict": verdict,
                    "status": "ok" if verdict else "failed", "reason": "" if verdict else "unreadable"})
    return pd.DataFrame(out, columns=COMPARISON_COLUMNS)


COMPARISONS = comp([
    ("d1", "ab", "first"), ("d1", "ba", "second"),  # A both times -> 0.5 + 0.5 = 1
    ("d2", "ab", "first"), ("d2", "ba", "first"),  # position wins: A then B -> 0.5
    ("d3", "ab", "tie"), ("d3", "ba", None),  # a tie and an unreadable verdict
])


def test_h2h_points_per_document():
    t = h2h_preferences(COMPARISONS, ITEMS, HUMAN, "coherence").set_index("doc_id")
    assert t.loc["d1", "judge_points_a"] == 1.0 and t.loc["d2", "judge_points_a"] == 0.5
    # robust: the unreadable verdict is dropped, the tie alone gives 0.5; it is counted
    assert t.loc["d3", "judge_points_a"] == 0.5 and t.loc["d3", "n_verdicts"] == 1
    assert t.loc["d3", "n_unreadable"] == 1
    assert list(t.human_points_a) == [1.0, 0.5, 0.0]  # 4>2, 3=3, 1<5
    assert set(t.system_a) == {"A"} and set(t.system_b) == {"B"}


def test_h2h_quarter_points_and_paper_rule():
    c = comp([("d1", "ab", "first"), ("d1", "ba", "tie"), ("d3", "ab", "second"), ("d3", "ba", None)])
    robust = h2h_preferences(c, ITEMS, HUMAN, "coherence").set_index("doc_id")
    assert robust.loc["d1", "judge_points_a"] == 0.75  # a win (0.5) plus a tie (0.25)
    assert robust.loc["d3", "judge_points_a"] == 0.0
    paper = h2h_preferences(c, ITEMS, HUMAN, "coherence", unreadable="tie").set_index("doc_id")
    assert paper.loc["d3", "judge_points_a"] == 0.25  # 003: the unreadable verdict is a tie
    with pytest.raises(ValueError, match="unreadable"):
        h2h_preferences(c, ITEMS, HUMAN, "coherence", unreadable="zero")


def test_h2h_correct_preferences_and_orientation():
    # judge: 1 + 0.5 + 0.5 = 2 of 3 -> A preferred; humans: 1 + 0.5 + 0 = 1.5 = 3/2 -> tie: incorrect.
    r = h2h_correct_preferences(COMPARISONS, ITEMS, HUMAN, "coherence")
    row = r.table.iloc[0]
    assert (row.system_a, row.n_docs, row.judge_points_a, row.human_points_a) == ("A", 3, 2.0, 1.5)
    assert (row.judge_preference, row.human_preference, r.correct, r.total) == ("a", "tie", 0, 1)
    rev = h2h_correct_preferences(COMPARISONS, ITEMS, HUMAN, "coherence", pairs=[("B", "A")]).table.iloc[0]
    assert (rev.system_a, rev.judge_points_a, rev.human_points_a, rev.judge_preference) == ("B", 1.0, 1.5, "b")
    with pytest.raises(ValueError, match="no H2H comparisons"):
        h2h_correct_preferences(COMPARISONS, ITEMS, HUMAN, "coherence", pairs=[("A", "C")])


def test_position_bias_counts():
    b = position_bias(COMPARISONS)
    # readable verdicts: first, second, first, first, tie -> decisive 4, 3 for the first position
    assert b["first_position_win_rate"] == 0.75
    assert b["tie_rate"] == pytest.approx(1 / 5)
    assert (b["n_pairs"], b["n_verdicts"], b["n_decisive"], b["n_unreadable"]) == (2, 5, 4, 1)
    # pairs with both orders readable: d1 consistent (A, A), d2 follows the position (first, first)
    assert b["flip_rate"] == 0.5 and b["inconsistent_rate"] == 0.5


def test_pairwise_tau_b_002_definition():
    # human diffs / judge diffs for 7 pairs: P=3 (1,2,3), Q=1 (4), T=1 (human tie only), U=1 (judge tie only),
    # one pair tied by both (excluded): tau = (3-1)/sqrt((3+1+1)(3+1+1)) = 2/5
    hd = np.array([1, -2, 0.5, 1, 0, 2, 0])
    jd = np.array([2, -1, 1, -1, 1, 0, 0])
    r = pairwise_tau_b(hd, jd)
    assert (r["concordant"], r["discordant"], r["ties_human"], r["ties_judge"], r["ties_both"]) == (3, 1, 1, 1, 1)
    assert r["tau"] == pytest.approx(2 / 5)


def test_pairwise_kendall_by_difficulty_fixed_thresholds():
    # One document, four items: human (1, 2, 4, 4), judge (1, 3, 2, 5).
    f = pd.DataFrame({"item_id": list("abcd"), "doc_id": "d", "system_id": list("ABCD"),
                      "human": [1, 2, 4, 4], "judge": [1, 3, 2, 5]})
    t = pairwise_kendall_by_difficulty(f, buckets=(1.0, 2.0)).set_index("bucket")
    # pairs (human diff, judge diff): ab (-1,-2) P, ac (-3,-1) P, ad (-3,-4) P, bc (-2, 1) Q, bd (-2,-2) P, cd (0,-3) T
    # hard |d|<=1: ab, cd -> P=1, T=1: 1/sqrt(2*1); medium 1<|d|<=2: bc, bd -> 0/2 = 0; easy: ac, ad -> 1
    assert t.loc["hard", "n_pairs"] == 2 and t.loc["hard", "tau"] == pytest.approx(1 / math.sqrt(2))
    assert t.loc["medium", "tau"] == pytest.approx(0.0) and t.loc["easy", "tau"] == pytest.approx(1.0)
    assert t.loc["all", "n_pairs"] == 6 and t.loc["all", "tau"] == pytest.approx((4 - 1) / math.sqrt(6 * 5))


def test_pairwise_kendall_by_difficulty_tertiles_and_sampling():
    rng = np.random.default_rng(0)
    rows = []
    for d in range(20):
        for s in range(6):
            h = rng.integers(3, 16) / 3
            rows.append({"item_id": f"{d}/{s}", "doc_id": f"d{d}", "system_id": f"M{s}", "human": h,
                         "judge": float(np.clip(round(h + rng.normal(0, 1)), 1, 5))})
    f = pd.DataFrame(rows)
    t = pairwise_kendall_by_difficulty(f).set_index("bucket")
    assert t.loc["all", "n_pairs"] == 20 * 15
    assert t.loc[["hard", "medium", "easy"], "n_pairs"].sum() == 300
    assert t.loc["hard", "tau"] < t.loc["easy", "tau"]  # easier pairs are judged more reliably
    s = pairwise_kendall_by_difficulty(f, n_pairs=200, random_state=1).set_index("bucket")
    assert s.loc["all", "n_pairs"] == 200


def _flip_counts_by_merge(c: pd.DataFrame) -> tuple[int, int, int]:
    """(pairs, positional, inconsistent) counted a second way: join each pair's ab row to its ba row."""
    ok = c[(c["status"] == "ok") & c["verdict"].isin(["first", "second", "tie"])]
    ab = ok[ok["order"] == "ab"].set_index(["dimension", "pair_id"])["verdict"]
    ba = ok[ok["order"] == "ba"].set_index(["dimension", "pair_id"])["verdict"]
    j = pd.concat({"ab": ab, "ba": ba}, axis=1).dropna()
    positional = int(((j["ab"] == j["ba"]) & (j["ab"] != "tie")).sum())
    # the same system wins both times when the verdicts name opposite positions; a tie agrees only with a tie
    swapped = j["ba"].map({"first": "second", "second": "first", "tie": "tie"})
    inconsistent = int((j["ab"] != swapped).sum())
    return len(j), positional, inconsistent


def test_position_bias_pools_dimensions_by_dimension_and_pair():
    """pair_id repeats across dimensions: the pooled row counts every (dimension, pair), not the last dimension."""
    two = pd.concat([COMPARISONS, COMPARISONS.assign(dimension="fluency")], ignore_index=True)
    pooled = position_bias(two)
    one = position_bias(COMPARISONS)
    assert pooled["n_pairs"] == 2 * one["n_pairs"] == 4
    assert pooled["flip_rate"] == pytest.approx(one["flip_rate"])


def test_position_bias_pooled_on_shen_h2h_run():
    """Shen et al.'s gpt-3.5 H2H run (bundled): 1,100 pairs on each of four dimensions, 4,400 pooled."""
    from evalcore import runs

    c = runs.load_run("summeval/shen-gpt-3.5-turbo-0301-h2h").comparisons
    per_dim = {d: position_bias(c, dimension=d) for d in sorted(c["dimension"].unique())}
    pooled = position_bias(c)
    assert [v["n_pairs"] for v in per_dim.values()] == [1100] * 4
    assert pooled["n_pairs"] == sum(v["n_pairs"] for v in per_dim.values()) == 4400
    for key, rate in (("flip_rate", "flip_rate"), ("inconsistent_rate", "inconsistent_rate")):
        summed = sum(v[rate] * v["n_pairs"] for v in per_dim.values())
        assert pooled[key] == pytest.approx(summed / 4400)
    n, positional, inconsistent = _flip_counts_by_merge(c)
    assert n == 4400
    assert pooled["flip_rate"] == pytest.approx(positional / n) == pytest.approx(0.320, abs=5e-4)
    assert pooled["inconsistent_rate"] == pytest.approx(inconsistent / n) == pytest.approx(0.352, abs=5e-4)
    assert per_dim["relevance"]["flip_rate"] == pytest.approx(0.2945, abs=5e-5)
    assert pooled["flip_rate"] != pytest.approx(per_dim["relevance"]["flip_rate"])
