"""evalcore.meta.systems: 003's per-system correlation, meta-correlation, #CP, challenge pairs and reliability."""

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs

from evalcore.meta import (
    challenge_pairs, correct_preferences, meta_correlation, per_system, reliability, system_quality,
)


def frame_from(judge: dict, human: dict) -> pd.DataFrame:
    """judge/human: {system: [score per document]}."""
    rows = []
    for sid in judge:
        for d, (j, h) in enumerate(zip(judge[sid], human[sid])):
            rows.append({"item_id": f"d{d}/{sid}", "doc_id": f"d{d}", "system_id": sid, "judge": j, "human": h})
    return pd.DataFrame(rows)


HUMAN = {"S1": [1, 2, 3, 4], "S2": [2, 2, 4, 5], "S3": [3, 4, 4, 5], "S4": [4, 5, 5, 5]}
JUDGE = {"S1": [1, 2, 3, 5], "S2": [3, 2, 1, 5], "S3": [2, 2, 2, 2], "S4": [5, 4, float("nan"), 3]}


def test_per_system_and_meta_correlation_by_scipy():
    f = frame_from(JUDGE, HUMAN)
    q = system_quality(f)
    # Eq. 1 by hand: mean human score over all the system's items (the NaN judge value does not matter here)
    assert q.to_dict() == pytest.approx({"S1": 2.5, "S2": 3.25, "S3": 4.0, "S4": 4.75})
    t = per_system(f, coefficient="kendall").set_index("system_id")
    assert t.loc["S1", "correlation"] == pytest.approx(1.0)
    assert t.loc["S2", "correlation"] == pytest.approx(st.kendalltau([3, 2, 1, 5], [2, 2, 4, 5]).statistic)
    assert math.isnan(t.loc["S3", "correlation"]) and not t.loc["S3", "defined"]  # constant judge
    assert t.loc["S4", "correlation"] == pytest.approx(st.kendalltau([5, 4, 3], [4, 5, 5]).statistic)
    assert (t.loc["S4", "n"], t.loc["S4", "dropped"]) == (3, 1)
    m = meta_correlation(f, coefficient="kendall")
    ok = ["S1", "S2", "S4"]
    ref = st.kendalltau(q[ok], t.loc[ok, "correlation"])
    assert m.statistic == pytest.approx(ref.statistic) and m.pvalue == pytest.approx(ref.pvalue)
    assert (m.n_systems, m.dropped_systems, m.coefficient) == (3, ["S3"], "kendall")


def test_meta_correlation_uses_the_same_coefficient():
    f = frame_from(JUDGE, HUMAN)
    m = meta_correlation(f, coefficient="pearson")
    t = per_system(f, coefficient="pearson").set_index("system_id")
    ok = t["defined"]
    assert m.statistic == pytest.approx(st.pearsonr(t.loc[ok, "quality"], t.loc[ok, "correlation"]).statistic)


def test_correct_preferences_by_hand():
    # S1 vs S2 over 4 documents. judge: d0 S2 (3>1), d1 tie, d2 S1 (3>1), d3 tie -> S1 gets 0+.5+1+.5 = 2 = n/2: tie.
    # human: d0 S2, d1 tie, d2 S2, d3 S2 -> S1 gets 0.5: "b".
    f = frame_from({"S1": JUDGE["S1"], "S2": JUDGE["S2"]}, {"S1": HUMAN["S1"], "S2": HUMAN["S2"]})
    r = correct_preferences(f)
    row = r.table.iloc[0]
    assert (row.system_a, row.system_b, row.n_docs) == ("S1", "S2", 4)
    assert (row.judge_points_a, row.human_points_a) == (2.0, 0.5)
    assert (row.judge_preference, row.human_preference, bool(row.correct)) == ("tie", "b", False)
    assert (r.correct, r.total) == (0, 1)


def test_correct_preferences_ties_at_exactly_half_of_100_documents():
    # 100 documents. Pair (A, B): the judge gives A 50 wins and 50 losses -> 50 points; the humans give A 40 wins,
    # 20 ties, 40 losses -> 40 + 10 = 50 points: both exactly at 50, a correct "tie".
    # Pair (A, C): judge 50 points again, humans 51 (51 wins, 49 losses): judge tie vs human "a" -> incorrect.
    n = 100
    judge = {"A": [3] * n, "B": [2] * 50 + [4] * 50, "C": [2] * 50 + [4] * 50}
    human = {"A": [3] * n, "B": [2] * 40 + [3] * 20 + [4] * 40, "C": [2] * 51 + [4] * 49}
    r = correct_preferences(frame_from(judge, human), pairs=[("A", "B"), ("A", "C")])
    t = r.table.set_index(["system_a", "system_b"])
    assert t.loc[("A", "B"), "judge_points_a"] == 50 and t.loc[("A", "B"), "human_points_a"] == 50
    assert t.loc[("A", "B"), "judge_preference"] == "tie" and bool(t.loc[("A", "B"), "correct"])
    assert t.loc[("A", "C"), "human_points_a"] == 51 and t.loc[("A", "C"), "human_preference"] == "a"
    assert not bool(t.loc[("A", "C"), "correct"])
    assert (r.correct, r.total) == (1, 2)


def test_correct_preferences_default_pairs_and_unknown_system():
    f = frame_from(JUDGE, HUMAN)
    r = correct_preferences(f)
    first = next(r.table[["system_a", "system_b"]].itertuples(index=False, name=None))
    assert r.total == 6 and first == ("S1", "S2")
    # S4's NaN judge value on d2 removes d2 from S4's pairs, on both sides
    assert set(r.table.loc[r.table.system_b == "S4", "n_docs"]) == {3}
    with pytest.raises(ValueError, match="S9"):
        correct_preferences(f, pairs=[("S1", "S9")])


@settings(max_examples=25, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(1, 3), hs.integers(1, 3), hs.integers(1, 3), hs.integers(1, 3)),
                min_size=1, max_size=12))
def test_correct_preferences_symmetric_under_swapping_a_and_b(docs):
    judge = {"A": [d[0] for d in docs], "B": [d[1] for d in docs]}
    human = {"A": [d[2] for d in docs], "B": [d[3] for d in docs]}
    f = frame_from(judge, human)
    ab = correct_preferences(f, pairs=[("A", "B")])
    ba = correct_preferences(f, pairs=[("B", "A")])
    assert ab.correct == ba.correct
    n = len(docs)
    assert ab.table.judge_points_a[0] + ba.table.judge_points_a[0] == n
    assert ab.table.human_points_a[0] + ba.table.human_points_a[0] == n
    flip = {"a": "b", "b": "a", "tie": "tie"}
    assert flip[ab.table.judge_preference[0]] == ba.table.judge_preference[0]


def test_challenge_pairs_follow_003_appendix_e():
    # 003 App. E: M22 4.57, then M23 4.55, then M17 4.52 -> "M22-M23" and "M23-M17".
    means = pd.Series({"M17": 4.52, "M22": 4.57, "M23": 4.55, "M8": 3.0})
    assert challenge_pairs(means) == [("M22", "M23"), ("M23", "M17"), ("M17", "M8")]
    # ties keep natural order (M8 before M10), deterministic
    assert challenge_pairs(pd.Series({"M10": 1.0, "M8": 1.0, "M9": 2.0})) == [("M9", "M8"), ("M8", "M10")]


def test_reliability_indicator_eq4():
    rng = np.random.default_rng(0)
    systems = [f"M{i}" for i in range(6)]
    human = {s: list(rng.integers(1, 6, 20).astype(float)) for s in systems}
    rts = {s: list(np.clip(np.array(human[s]) + rng.normal(0, 0.5 + i / 3, 20), 1, 5).round())
           for i, s in enumerate(systems)}
    mcq = {s: list(np.clip(np.array(human[s]) + rng.normal(0, 0.5 + i / 3, 20), 1, 5).round())
           for i, s in enumerate(systems)}
    fr, fm = frame_from(rts, human), frame_from(mcq, human)
    r = reliability(fr, fm, coefficient="kendall")
    t = r.table.set_index("system_id")
    for s in systems:
        assert t.loc[s, "reliability"] == pytest.approx(st.kendalltau(rts[s], mcq[s]).statistic)
        assert t.loc[s, "p_rts"] == pytest.approx(st.kendalltau(rts[s], human[s]).statistic)
    ref = st.kendalltau(t["reliability"], t["p_rts"])
    assert r.corr_r_p_rts == pytest.approx(ref.statistic) and r.pvalue_rts == pytest.approx(ref.pvalue)
    assert r.corr_r_p_mcq == pytest.approx(st.kendalltau(t["reliability"], t["p_mcq"]).statistic)
