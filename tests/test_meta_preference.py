"""evalcore.meta.preference: every figure checked by hand or against scikit-learn / scipy on small hand-made
tables (ties, a missing order, an unreadable verdict, several annotators), and the published figures of the bundled
LLMBar and PandaLM data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from evalcore import datasets
from evalcore.meta import preference as P


def prefs(rows):
    """rows: (pair_id, doc_id, annotator, preferred); item_a/item_b are '<pair>/a' and '<pair>/b'."""
    return pd.DataFrame([{"pair_id": p, "doc_id": d, "item_a": f"{p}/a", "item_b": f"{p}/b",
                          "dimension": "preference", "annotator": a, "preferred": v} for p, d, a, v in rows])


def comps(rows):
    """rows: (pair_id, doc_id, order, verdict or None for unreadable)."""
    out = []
    for p, d, order, verdict in rows:
        first, second = (f"{p}/a", f"{p}/b") if order == "ab" else (f"{p}/b", f"{p}/a")
        out.append({"pair_id": p, "doc_id": d, "item_first": first, "item_second": second,
                    "dimension": "preference", "order": order, "raw": str(verdict), "verdict": verdict,
                    "status": "ok" if verdict else "failed", "reason": "" if verdict else "no verdict found"})
    return pd.DataFrame(out)


# Five pairs judged in both orders:
#   p1: first/second -> a in both orders -> a            p2: first/first -> a then b -> tie (Zheng: disagree = tie)
#   p3: tie/tie -> tie                                   p4: ab only -> missing order, no verdict
#   p5: ab unreadable -> no verdict (never a guess)
JUDGE = comps([("p1", "d1", "ab", "first"), ("p1", "d1", "ba", "second"),
               ("p2", "d1", "ab", "first"), ("p2", "d1", "ba", "first"),
               ("p3", "d2", "ab", "tie"), ("p3", "d2", "ba", "tie"),
               ("p4", "d2", "ab", "second"),
               ("p5", "d3", "ab", None), ("p5", "d3", "ba", "first")])
# Three annotators on every pair.
HUMANS = prefs([("p1", "d1", "x", "a"), ("p1", "d1", "y", "a"), ("p1", "d1", "z", "b"),
                ("p2", "d1", "x", "tie"), ("p2", "d1", "y", "b"), ("p2", "d1", "z", "b"),
                ("p3", "d2", "x", "tie"), ("p3", "d2", "y", "tie"), ("p3", "d2", "z", "a"),
                ("p4", "d2", "x", "b"), ("p4", "d2", "y", "b"), ("p4", "d2", "z", "b"),
                ("p5", "d3", "x", "a"), ("p5", "d3", "y", "b"), ("p5", "d3", "z", "tie")])


def test_one_verdict_per_pair_zheng_rule_missing_order_and_unreadable():
    j = P.judge_outcomes(JUDGE).set_index("pair_id")
    assert j.loc["p1", "verdict"] == "a" and j.loc["p1", "ab"] == "a" and j.loc["p1", "ba"] == "a"
    assert j.loc["p2", "verdict"] == "tie" and (j.loc["p2", "ab"], j.loc["p2", "ba"]) == ("a", "b")
    assert j.loc["p3", "verdict"] == "tie"
    assert pd.isna(j.loc["p4", "verdict"]) and j.loc["p4", "why"] == "missing order"
    assert pd.isna(j.loc["p5", "verdict"]) and j.loc["p5", "why"] == "unreadable"


def test_one_order_run_keeps_its_verdicts():
    j = P.judge_outcomes(comps([("p1", "d1", "ab", "second"), ("p2", "d1", "ab", "tie")])).set_index("pair_id")
    assert j["verdict"].tolist() == ["b", "tie"]


def test_bad_order_is_an_error():
    bad = comps([("p1", "d1", "ab", "first")])
    bad.loc[0, "order"] = "ba2"
    with pytest.raises(ValueError, match="'ba2'.*neither 'ab' nor 'ba'"):
        P.judge_outcomes(bad)


def test_judge_vs_every_vote_with_and_without_ties_by_hand():
    j = P.judge_outcomes(JUDGE)
    got = P.judge_vs_humans(HUMANS, j, n_resamples=50)
    # Verdicts: p1 a, p2 tie, p3 tie (p4, p5 none). Votes: p1 a,a,b -> 2 agree; p2 tie,b,b -> 1; p3 tie,tie,a -> 2.
    assert got["with_ties"].statistic == pytest.approx(5 / 9) and got["with_ties"].n == 9
    # Without ties (either side tie dropped): only p1's votes remain: a,a,b vs a -> 2 of 3.
    assert got["without_ties"].statistic == pytest.approx(2 / 3) and got["without_ties"].n == 3
    assert got["with_ties"].ci_low <= got["with_ties"].statistic <= got["with_ties"].ci_high


def test_majority_accuracy_kappa_and_confusion_against_sklearn():
    j = P.judge_outcomes(JUDGE)
    gold = P.majority_votes(HUMANS).set_index("pair_id")
    # p5's votes a, b, tie have no majority: tie. p3: tie, tie, a -> tie.
    assert gold["majority"].to_dict() == {"p1": "a", "p2": "b", "p3": "tie", "p4": "b", "p5": "tie"}
    vm = P.judge_vs_majority(gold.reset_index(), j, n_resamples=50)
    human, judge = ["a", "b", "tie"], ["a", "tie", "tie"]  # p1, p2, p3 (p4, p5 have no verdict)
    assert vm["accuracy"].statistic == pytest.approx(2 / 3) and vm["accuracy"].n == 3
    assert vm["cohen_kappa"].statistic == pytest.approx(cohen_kappa_score(human, judge))
    assert vm["confusion_matrix"]["counts"] == [[1, 0, 0], [0, 0, 1], [0, 0, 1]]


def test_human_human_agreement_and_annotator_kappas():
    hh = P.human_vs_human(HUMANS, n_resamples=50)
    # Vote pairs per pair (xy, xz, yz): p1 a,a,b -> 1 agree; p2 tie,b,b -> 1; p3 tie,tie,a -> 1; p4 -> 3; p5 -> 0.
    assert hh["with_ties"].statistic == pytest.approx(6 / 15) and hh["with_ties"].n == 15
    # Without ties: p1 3 pairs (1 agree), p2 yz (agree), p3 none, p4 3 (3), p5 xy (0) -> 5 of 8.
    assert hh["without_ties"].statistic == pytest.approx(5 / 8) and hh["without_ties"].n == 8
    wide = HUMANS.pivot(index="pair_id", columns="annotator", values="preferred")
    for row in P.annotator_kappas(HUMANS):
        assert row["kappa"] == pytest.approx(cohen_kappa_score(wide[row["a"]], wide[row["b"]]))
        assert row["n"] == 5
    assert [(r["a"], r["b"]) for r in P.annotator_kappas(HUMANS)] == [("x", "y"), ("x", "z"), ("y", "z")]


def test_both_order_figures_by_hand():
    j = P.judge_outcomes(JUDGE)
    gold = P.majority_votes(HUMANS)
    s = P.both_order_stats(j, gold, n_resamples=50)
    # ab: p1 a (gold a, right), p2 a (gold b), p3 tie (gold tie, right), p4 b (gold b, right), p5 unreadable -> 3/5.
    assert s["accuracy_ab"].statistic == pytest.approx(3 / 5) and s["accuracy_ab"].n == 5
    # ba: p1 a right, p2 b right, p3 tie right, p5 b (gold tie) -> 3/4 (p4 has no ba).
    assert s["accuracy_ba"].statistic == pytest.approx(3 / 4) and s["accuracy_ba"].n == 4
    # both orders present: p1, p2, p3, p5; right in both: p1, p3; same winner: p1, p3.
    assert s["both_orders_correct"].statistic == pytest.approx(2 / 4)
    assert s["positional_agreement"].statistic == pytest.approx(2 / 4) and s["positional_agreement"].n == 4


def test_model_win_rates_and_ranking_correlation():
    items = pd.DataFrame({"item_id": [f"p{i}/{s}" for i in range(1, 5) for s in "ab"],
                          "system_id": ["m1", "m2", "m1", "m3", "m2", "m3", "m1", "m2"],
                          "output": ["x"] * 8})
    h = prefs([("p1", "d1", "x", "a"), ("p2", "d2", "x", "a"), ("p3", "d3", "x", "tie"), ("p4", "d4", "x", "b")])
    judge = comps([("p1", "d1", "ab", "first"), ("p2", "d2", "ab", "second"), ("p3", "d3", "ab", "first"),
                   ("p4", "d4", "ab", "first")])
    m = P.model_win_rates(h, P.judge_outcomes(judge), items, n_resamples=50)
    per = {r["model"]: r for r in m["per_model"]}
    # Humans: m1 wins p1, wins p2, ties... m1 in p1 (1), p2 (1), p4 (0) -> 2/3; m2: p1 0, p3 0.5, p4 1 -> 1.5/3.
    assert per["m1"]["human_win_rate"].statistic == pytest.approx(2 / 3)
    assert per["m2"]["human_win_rate"].statistic == pytest.approx(0.5)
    assert per["m3"]["human_win_rate"].statistic == pytest.approx((0 + 0.5) / 2)
    # Judge: p1 a (m1), p2 b (m3), p3 a (m2), p4 a (m1) -> m1: 1, 0, 1 -> 2/3; m2: 0, 1, 0 -> 1/3; m3: 1, 0 -> 1/2.
    assert per["m1"]["judge_win_rate"].statistic == pytest.approx(2 / 3)
    assert per["m2"]["judge_win_rate"].statistic == pytest.approx(1 / 3)
    pair = {(r["model_a"], r["model_b"]): r for r in m["per_pair"]}
    assert pair[("m1", "m2")]["human_win_rate_a"].statistic == pytest.approx(0.5)  # p1 win, p4 loss
    hw = [2 / 3, 0.5, 0.25]
    jw = [per[k]["judge_win_rate"].statistic for k in ("m1", "m2", "m3")]
    expected = sps.spearmanr(hw, jw).statistic
    got = m["ranking_spearman"].statistic
    assert got == pytest.approx(expected) and expected == pytest.approx(0.5)


def test_bias_position_verbosity_and_self_preference():
    items = pd.DataFrame({"item_id": ["p1/a", "p1/b", "p2/a", "p2/b", "p3/a", "p3/b"],
                          "system_id": ["gpt-4", "llama", "gpt-3.5", "llama", "llama", "opt"],
                          "output": ["long answer", "short", "tiny", "much longer one", "aa", "bb"]})
    h = prefs([("p1", "d1", "x", "b"), ("p2", "d2", "x", "a"), ("p3", "d3", "x", "a")])
    judge = comps([("p1", "d1", "ab", "first"), ("p2", "d2", "ab", "second"), ("p3", "d3", "ab", "first")])
    j = P.judge_outcomes(judge)
    assert P.position_bias_stat(judge).statistic == pytest.approx(2 / 3)
    vb = P.verbosity_bias(h, j, items, n_resamples=50)
    # Equal-length p3 is left out. Judge: p1 a (longer), p2 b (longer) -> 1. Humans: p1 b (shorter), p2 a -> 0.
    assert vb["judge_prefers_longer"].statistic == 1.0 and vb["judge_prefers_longer"].n == 2
    assert vb["humans_prefer_longer"].statistic == 0.0
    sp = P.self_preference(h, j, items, "gpt-4-0613", n_resamples=50)
    # The gpt family's outputs (p1 a, p2 a) vs llama: judge gives p1 to gpt, p2 to llama -> 0.5; humans 0.5 too.
    assert sp["family"] == "gpt" and sp["judge_win_rate_own"].statistic == 0.5
    assert sp["human_win_rate_own"].statistic == 0.5
    assert P.self_preference(h, j, items, "claude-3") is None


def test_summary_keys_and_absent_blocks():
    items = pd.DataFrame({"item_id": [f"p{i}/{s}" for i in range(1, 6) for s in "ab"],
                          "system_id": ["m1", "m2"] * 5, "output": [f"text {k}" for k in range(10)]})
    s = P.pairwise_summary(HUMANS, JUDGE, items, n_resamples=50)
    for key in ("agreement", "human_human", "accuracy_ab", "accuracy_ba", "both_orders_correct",
                "positional_agreement", "cohen_kappa", "annotator_kappa", "confusion_matrix", "per_annotator",
                "models", "bias"):
        assert key in s, key
    assert s["counts"]["unreadable"] == 1 and s["counts"]["missing_order"] == 1
    one = P.pairwise_summary(HUMANS[HUMANS["annotator"] == "x"], JUDGE[JUDGE["order"] == "ab"], items,
                             n_resamples=50)
    assert "human_human" not in one and "annotator_kappa" not in one and "accuracy_ab" not in one


@settings(max_examples=40, deadline=None)
@given(hst.lists(hst.tuples(hst.sampled_from(P.OUTCOMES), hst.sampled_from(P.OUTCOMES), hst.integers(0, 4)),
                 min_size=1, max_size=30))
def test_agreement_properties(rows):
    human, judge, docs = zip(*rows)
    a = P.agreement(docs, human, judge, ties=True, n_resamples=20)
    assert a.statistic == pytest.approx(np.mean(np.array(human) == np.array(judge)))
    assert P.agreement(docs, judge, human, ties=True, n_resamples=20).statistic == a.statistic  # symmetric
    assert P.agreement(docs, human, human, ties=False, n_resamples=20).statistic in (1.0,) or all(
        h == "tie" for h in human)


# ---------------------------------------------------------------------------------------------- published figures

# LLMBar's Dataset/LLMBar/Natural/evaluators/<evaluator>/<variant>/statistics.json (princeton-nlp/LLMBar@900616bf):
# correct_False, correct_True, correct_both, equal, each "k / 100".
LLMBAR_STATISTICS = {
    "llmbar_natural/llmbar-gpt-4-vanilla-norules": (92, 95, 92, 97),
    "llmbar_natural/llmbar-gpt-4-vanilla": (95, 96, 93, 95),
    "llmbar_natural/llmbar-gpt-3.5-turbo-0301-vanilla-norules": (83, 82, 70, 75),
    "llmbar_natural/llmbar-gpt-3.5-turbo-0301-vanilla": (84, 84, 73, 78),
}


@pytest.mark.parametrize("run_id", sorted(LLMBAR_STATISTICS))
def test_llmbar_statistics_json_counts_reproduce(run_id):
    ds = datasets.load_dataset("llmbar_natural")
    run = datasets.load_bundled_run(run_id)
    s = P.both_order_stats(P.judge_outcomes(run.comparisons), P.majority_votes(ds.preferences), n_resamples=20)
    got = tuple(round(s[k].statistic * s[k].n) for k in ("accuracy_ab", "accuracy_ba", "both_orders_correct",
                                                          "positional_agreement"))
    assert got == LLMBAR_STATISTICS[run_id] and all(s[k].n == 100 for k in s)


def test_pandalm_annotator_kappas_and_majority_counts():
    # PandaLM README (WeOpenML/PandaLM@3871806e): Cohen's kappa 1-2 0.85, 1-3 0.88, 2-3 0.86; majority-label counts
    # 0 (tie): 105, 1: 422, 2: 472.
    ds = datasets.load_dataset("pandalm")
    kappas = {(r["a"], r["b"]): round(r["kappa"], 2) for r in P.annotator_kappas(ds.preferences)}
    assert kappas == {("annotator1", "annotator2"): 0.85, ("annotator1", "annotator3"): 0.88,
                      ("annotator2", "annotator3"): 0.86}
    assert P.majority_votes(ds.preferences)["majority"].value_counts().to_dict() == {"b": 472, "a": 422, "tie": 105}
    run = datasets.load_bundled_run("pandalm/pandalm-gpt-3.5-turbo")
    j = P.judge_outcomes(run.comparisons)
    assert (j["why"] == "unreadable").sum() == 25  # 'garbage' replies: counted, never read as a verdict


def test_a_run_naming_pairs_its_own_way_is_aligned_to_the_votes():
    # a run scored here names the pair "p1/b|p1/a" and shows p1/b first in its "ab": that is the votes' order ba
    own = pd.DataFrame([{"pair_id": "p1/b|p1/a", "doc_id": "d1", "item_first": "p1/b", "item_second": "p1/a",
                         "dimension": "preference", "order": "ab", "raw": "A", "verdict": "first", "status": "ok",
                         "reason": ""},
                        {"pair_id": "p1/b|p1/a", "doc_id": "d1", "item_first": "p1/a", "item_second": "p1/b",
                         "dimension": "preference", "order": "ba", "raw": "B", "verdict": "second", "status": "ok",
                         "reason": ""}])
    aligned = P.align_to_preferences(own, HUMANS)
    assert aligned["pair_id"].tolist() == ["p1", "p1"] and aligned["order"].tolist() == ["ba", "ab"]
    j = P.judge_outcomes(aligned).set_index("pair_id")
    assert j.loc["p1", "verdict"] == "b"  # p1/b won in both orders


def test_score_run_verbosity_and_self_preference():
    # the judge adds the output's length to the humans' score: its residual grows with length
    rng = np.random.default_rng(3)
    n = 60
    lengths = pd.Series(rng.integers(10, 400, n), index=[f"i{k}" for k in range(n)])
    human = rng.normal(3, 1, n)
    frame = pd.DataFrame({"item_id": lengths.index, "doc_id": [f"d{k // 3}" for k in range(n)],
                          "system_id": ["gpt-4" if k % 2 else "llama-2" for k in range(n)], "human": human,
                          "judge": human + lengths.to_numpy() / 100})
    v = P.score_verbosity(frame, lengths, n_resamples=100)
    res = P.score_residuals(frame)["residual"]
    assert v.statistic == pytest.approx(sps.spearmanr(res, lengths.to_numpy()).statistic) and v.statistic > 0.5
    assert v.ci_low <= v.statistic <= v.ci_high and v.n == n
    # a gpt judge: its own family's items get +1 on top
    frame["judge"] = human + np.where(frame["system_id"] == "gpt-4", 1.0, 0.0)
    sp = P.score_self_preference(frame, "gpt-4o-mini", n_resamples=50)
    res = P.score_residuals(frame).set_index("item_id")["residual"]
    own = frame.set_index("item_id")["system_id"] == "gpt-4"
    assert sp["family"] == "gpt" and sp["residual_own"].statistic == pytest.approx(res[own].mean())
    assert sp["residual_own"].statistic > sp["residual_other"].statistic
    assert P.score_self_preference(frame, "claude-3") is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_verbosity_bootstrap_equals_explicit_resampling(seed):
    """The verbosity interval's resamples (weighted multisets ranked once, issue 19) give, resample by resample, what
    scipy gives on the explicitly concatenated documents drawn as before: rng.integers(0, documents, documents) per
    resample, a resample with a constant side left out. Lengths tie often (whole characters), residuals never."""
    rng = np.random.default_rng(seed)
    n_docs, per_doc = 25, 4
    n = n_docs * per_doc
    lengths = pd.Series(rng.integers(50, 60, n), index=[f"i{k}" for k in range(n)])
    human = rng.integers(1, 6, n).astype(float)
    frame = pd.DataFrame({"item_id": lengths.index, "doc_id": [f"d{k // per_doc}" for k in range(n)],
                          "system_id": "s", "human": human, "judge": human + rng.normal(0, 1, n)})
    f = P.score_residuals(frame)
    r, ln = f["residual"].to_numpy(), lengths.reindex(f["item_id"]).to_numpy(float)
    codes, g = P._doc_codes(f["doc_id"])
    members = [np.flatnonzero(codes == k) for k in range(g)]
    draw = np.random.default_rng(7)
    expected = []
    for _ in range(200):
        idx = np.concatenate([members[k] for k in draw.integers(0, g, g)])
        expected.append(sps.spearmanr(r[idx], ln[idx]).statistic if np.ptp(r[idx]) > 0 and np.ptp(ln[idx]) > 0
                        else np.nan)
    got = P._spearman_document_bootstrap(r, ln, np.asarray(codes), g, 200, 7)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    v = P.score_verbosity(frame, lengths, n_resamples=200, random_state=7)
    lo, hi = np.percentile(np.array(expected)[np.isfinite(expected)], [2.5, 97.5])
    assert (v.ci_low, v.ci_high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
