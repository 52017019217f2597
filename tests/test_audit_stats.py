"""The statistics audit's findings, each checked against an independent computation: boot-both ties between equal
system means (exact rational means), the document-swap permutation test's exact enumeration, LLMBar's positional
agreement convention (their published count), the few-documents warning, the p-value's method label and the human
ceiling's seed."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from evalcore.datasets import load_dataset
from evalcore.meta.correlation import prepare_frame
from evalcore.meta.inference import boot_both_distribution, boot_both_draws, boot_both_interval
from evalcore.runs import load_run, score_frame


@pytest.fixture(scope="module")
def gpt4_rts_coherence() -> pd.DataFrame:
    return score_frame(load_dataset("summeval"), load_run("summeval/shen-gpt-4-0314-rts"), "coherence")


# ---------------------------------------------------------------------------- boot-both: ties between equal means


def exact_ranks(sums: np.ndarray, counts: np.ndarray) -> list[int]:
    """Dense ranks of the means sums / counts compared as exact fractions (integer sums: no rounding anywhere)."""
    means = [Fraction(int(s), int(n)) for s, n in zip(sums, counts)]
    order = {m: r for r, m in enumerate(sorted(set(means)))}
    return [order[m] for m in means]


def boot_both_exact(frame: pd.DataFrame, coefficient: str, n_resamples: int, seed: int,
                    scale: tuple[int, int]) -> np.ndarray:
    """Boot-both by hand with every system mean an exact fraction: judge x scale[0] and human x scale[1] are whole
    numbers (SummEval's human score is the mean of 3 experts; the RTS judge gives halves), so the drawn documents'
    sums are integers and equal means compare equal. The rank coefficient of the exact ranks, from scipy."""
    docs = sorted(frame["doc_id"].unique())
    systems = sorted(frame["system_id"].unique())
    d = frame["doc_id"].map({x: i for i, x in enumerate(docs)}).to_numpy()
    s = frame["system_id"].map({x: i for i, x in enumerate(systems)}).to_numpy()
    tables = []
    for col, k in zip(("judge", "human"), scale):
        whole = np.rint(frame[col].to_numpy() * k)
        assert np.allclose(whole, frame[col].to_numpy() * k)
        t = np.zeros((len(docs), len(systems)), dtype=np.int64)
        np.add.at(t, (d, s), whole.astype(np.int64))
        tables.append(t)
    n = np.zeros((len(docs), len(systems)), dtype=np.int64)
    np.add.at(n, (d, s), 1)
    fn = {"spearman": st.spearmanr, "kendall": st.kendalltau}[coefficient]
    draws_d, draws_s = boot_both_draws(len(docs), len(systems), n_resamples, seed)
    out = np.full(n_resamples, np.nan)
    for r, (dd, ss) in enumerate(zip(draws_d, draws_s)):
        c = np.bincount(dd, minlength=len(docs))
        cnt = (c @ n)[ss]
        if (cnt == 0).any():
            continue
        jx = exact_ranks((c @ tables[0])[ss], cnt)
        hy = exact_ranks((c @ tables[1])[ss], cnt)
        if len(set(jx)) > 1 and len(set(hy)) > 1:
            out[r] = fn(jx, hy).statistic
    return out


@pytest.mark.parametrize("coefficient", ["kendall", "spearman"])
def test_boot_both_treats_equal_system_means_as_ties(gpt4_rts_coherence, coefficient):
    p = prepare_frame(gpt4_rts_coherence)
    ours = boot_both_distribution(p, coefficient, 1000, 0)
    exact = boot_both_exact(gpt4_rts_coherence, coefficient, 1000, 0, scale=(2, 3))
    assert np.array_equal(np.isnan(ours), np.isnan(exact))
    assert ours[~np.isnan(ours)] == pytest.approx(exact[~np.isnan(exact)], abs=1e-12)
    if coefficient == "kendall":
        # GPT-4 RTS coherence: the upper end was 1.0000 when rounding ordered tied means, 0.9834 with the ties kept
        lo, hi, _ = boot_both_interval(p, coefficient, n_resamples=1000, random_state=0)
        assert (lo, hi) == (pytest.approx(0.1934, abs=5e-5), pytest.approx(0.9834, abs=5e-5))


# ---------------------------------------------------------------- document-swap permutation test: exact to 13 documents


def two_judges(n_docs: int, n_sys: int = 4, seed: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows = [{"item_id": f"d{d}/S{s}", "doc_id": f"d{d:02d}", "system_id": f"S{s}", "human": float(rng.integers(1, 6))}
            for d in range(n_docs) for s in range(n_sys)]
    base = pd.DataFrame(rows)
    a = base.assign(judge=base["human"] + rng.normal(0, 1.0, len(base)))
    b = base.assign(judge=base["human"] + rng.normal(0, 1.3, len(base)))
    return a, b


def swap_pvalue_by_enumeration(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """Every one of the 2^documents swaps of the two judges on whole documents, Spearman over all items, and scipy's
    two-sided rule (twice the smaller tail share, with its relative tolerance for ties), written out."""
    docs = np.sort(a["doc_id"].unique())
    on_doc = (a["doc_id"].to_numpy()[None, :] == docs[:, None])  # documents x items
    S = np.array(list(np.ndindex(*(2,) * len(docs))), dtype=bool) @ on_doc  # arrangements x items: swapped items
    xa, xb, y = a["judge"].to_numpy(), b["judge"].to_numpy(), a["human"].to_numpy()

    def spearman_rows(X):
        rx = st.rankdata(X, axis=1)
        ry = st.rankdata(y)
        rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean()
        return (rx @ ry) / np.sqrt((rx ** 2).sum(axis=1) * (ry ** 2).sum())

    null = spearman_rows(np.where(S, xb, xa)) - spearman_rows(np.where(S, xa, xb))
    observed = st.spearmanr(xa, y).statistic - st.spearmanr(xb, y).statistic
    gamma = np.abs(np.finfo(float).eps * observed) * 100  # scipy.stats.permutation_test's tie tolerance
    return min(1.0, 2 * min(np.mean(null >= observed - gamma), np.mean(null <= observed + gamma)))


def test_twelve_document_swap_test_is_the_exact_enumeration_whatever_n_resamples():
    from evalcore.meta.compare import EXACT_SWAP_MAX_DOCUMENTS, paired_difference

    a, b = two_judges(12)
    exact = swap_pvalue_by_enumeration(a, b)
    for n_resamples in (200, 1000):
        r = paired_difference(a, b, level="dataset", coefficient="spearman", method="permutation",
                              n_resamples=n_resamples, random_state=3)
        assert r.pvalue == pytest.approx(exact, abs=1e-12)
    assert EXACT_SWAP_MAX_DOCUMENTS == 13


def test_label_swap_test_is_exact_on_twelve_documents_too():
    from evalcore.meta.compare_labels import paired_label_difference

    a, b = two_judges(12, seed=6)
    a, b = a.assign(judge=a["judge"].round().clip(1, 5)), b.assign(judge=b["judge"].round().clip(1, 5))
    docs = np.sort(a["doc_id"].unique())
    on_doc = a["doc_id"].to_numpy()[None, :] == docs[:, None]
    S = np.array(list(np.ndindex(*(2,) * len(docs))), dtype=bool) @ on_doc
    ha, hb = (a["judge"] == a["human"]).to_numpy(), (b["judge"] == b["human"]).to_numpy()  # right or not
    null = np.where(S, hb, ha).mean(axis=1) - np.where(S, ha, hb).mean(axis=1)  # accuracy A - B per arrangement
    observed = ha.mean() - hb.mean()
    gamma = np.abs(np.finfo(float).eps * observed) * 100
    exact = min(1.0, 2 * min(np.mean(null >= observed - gamma), np.mean(null <= observed + gamma)))
    r = paired_label_difference(a, b, categories=[1.0, 2.0, 3.0, 4.0, 5.0], kind="ordinal", statistic="accuracy",
                                method="permutation", n_resamples=300, random_state=1)
    assert r.pvalue == pytest.approx(exact, abs=1e-12)


# ------------------------------------------------------------------ pairwise: LLMBar's convention, no readable verdict


def pair_frames(pairs: dict[str, tuple[str | None, str | None]], gold: dict[str, str]):
    """Human votes (one annotator, the gold label) and both-order comparisons: pair -> (verdict shown ab, shown ba),
    None for an unreadable reply."""
    prefs = pd.DataFrame([{"pair_id": p, "doc_id": f"d{p}", "item_a": f"{p}/a", "item_b": f"{p}/b",
                           "dimension": "preference", "annotator": "gold", "preferred": g} for p, g in gold.items()])
    rows = []
    for p, verdicts in pairs.items():
        for order, verdict in zip(("ab", "ba"), verdicts):
            first, second = (f"{p}/a", f"{p}/b") if order == "ab" else (f"{p}/b", f"{p}/a")
            rows.append({"pair_id": p, "doc_id": f"d{p}", "item_first": first, "item_second": second,
                         "dimension": "preference", "order": order, "raw": str(verdict), "verdict": verdict,
                         "status": "ok" if verdict else "failed", "reason": "" if verdict else "no verdict found"})
    items = pd.DataFrame([{"item_id": f"{p}/{s}", "system_id": f"M{s}", "output": "x"} for p in gold for s in "ab"])
    return prefs, pd.DataFrame(rows), items


def llmbar_equal(comparisons: pd.DataFrame) -> int:
    """LLMBar's `equal`, written the way their statistics.json counts it: the winner parsed in each order (output 1 or
    2 of the pair as stored, or their sentinel for an unreadable reply) compared as it is."""
    winner = {}
    for r in comparisons.itertuples():
        w = None if r.status != "ok" else (r.item_first if r.verdict == "first" else r.item_second)
        winner.setdefault(r.pair_id, {})[r.order] = w
    return sum(w["ab"] == w["ba"] for w in winner.values())


def test_positional_agreement_beside_llmbar_convention():
    from evalcore.meta.preference import pairwise_summary

    # p1 same winner; p2 flips; p3 unreadable in both orders; p4 unreadable once
    prefs, comps, items = pair_frames({"p1": ("first", "second"), "p2": ("first", "first"), "p3": (None, None),
                                       "p4": ("first", None)}, {"p1": "a", "p2": "a", "p3": "b", "p4": "a"})
    s = pairwise_summary(prefs, comps, items, n_resamples=20)
    assert (s["positional_agreement"]["statistic"], s["positional_agreement"]["n"]) == (1 / 4, 4)
    assert s["positional_agreement_llmbar"]["statistic"] * 4 == llmbar_equal(comps) == 2


@pytest.mark.parametrize("run_id, equal", [("llmbar_natural/llmbar-gpt-4-vanilla", 95),
                                           ("llmbar_natural/llmbar-gpt-3.5-turbo-0301-vanilla-norules", 75)])
def test_llmbar_count_reproduces_their_statistics_json_on_the_bundled_runs(run_id, equal):
    from evalcore.meta import preference as P

    ds = load_dataset("llmbar_natural")
    run = load_run(run_id)
    s = P.both_order_stats(P.judge_outcomes(run.comparisons), P.majority_votes(ds.preferences), n_resamples=20)
    assert round(s["positional_agreement_llmbar"].statistic * 100) == llmbar_equal(run.comparisons) == equal


def unreadable_run(n_pairs: int = 36):
    gold = {f"p{i}": "ab"[i % 2] for i in range(n_pairs)}
    return pair_frames({p: (None, None) for p in gold}, gold)


def test_a_run_with_no_readable_verdict_has_no_figures_only_reasons():
    import json

    from evalcore.meta.preference import pairwise_summary

    prefs, comps, items = unreadable_run()
    s = json.loads(json.dumps(pairwise_summary(prefs, comps, items, n_resamples=20)))  # as meta --json prints it
    for key in ("accuracy_ab", "accuracy_ba", "both_orders_correct", "positional_agreement",
                "positional_agreement_llmbar", "accuracy", "cohen_kappa"):
        assert s[key]["statistic"] is None and s[key]["ci_low"] is None, key
        assert s[key]["reason"].startswith("no readable verdict"), key
    assert s["accuracy_ab"]["n"] == 36 and "all 36 verdicts in this order were unreadable" in s["accuracy_ab"]["reason"]
    assert s["agreement"]["with_ties"]["reason"] == "no readable verdict: 36 unreadable of the 36 judged pairs"
    assert s["confusion_matrix"]["counts"] is None and s["confusion_matrix"]["reason"]
    assert all(m["judge_win_rate"]["statistic"] is None and m["judge_win_rate"]["reason"]
               for m in s["models"]["per_model"])
    assert s["per_annotator"][0]["with_ties"]["reason"]


def test_views_say_no_readable_verdict_instead_of_drawing_zero():
    from evalcore.meta.preference import pairwise_summary
    from evalcore.views import preference as pv

    prefs, comps, items = unreadable_run()
    sums = {"mtbench": pairwise_summary(prefs, comps, items, n_resamples=20)}
    table = pv.agreement_table(sums)
    blank = table[table["run"] == "mtbench"]
    assert len(blank) and blank["value"].isna().all() and blank["note"].str.startswith("no readable verdict").all()
    fig = pv.agreement_figure(table)
    assert not any(len(t.x) for t in fig.data)  # nothing drawn at 0
    assert "Not drawn" in fig.layout.annotations[0].text
    conf = pv.confusion_figure(sums["mtbench"], "mtbench")
    assert not conf.data and "no readable verdict" in conf.layout.annotations[0].text
    wins = pv.win_rate_figure(pv.model_table(sums), "mtbench")
    assert "no readable verdict" in wins.layout.annotations[0].text


# ----------------------------------------------------------------------------- p-value labels, the ceiling's seed


def test_pvalue_label_is_the_method_scipy_used():
    from evalcore.meta.inference import correlation_pvalue

    rng = np.random.default_rng(7)
    x30, y30 = rng.permutation(30).astype(float), rng.permutation(30).astype(float)
    pv, method = correlation_pvalue(x30, y30, "kendall")  # no ties, 30 pairs: scipy's "auto" is exact
    assert (pv, method) == (pytest.approx(st.kendalltau(x30, y30, method="exact").pvalue, abs=1e-15), "exact")
    x40, y40 = rng.permutation(40).astype(float), rng.permutation(40).astype(float)
    assert correlation_pvalue(x40, y40, "kendall") == (
        pytest.approx(st.kendalltau(x40, y40, method="asymptotic").pvalue, abs=1e-15), "asymptotic")
    near = np.arange(40.0)
    near[[3, 4]] = near[[4, 3]]  # one discordant pair of 780: scipy goes exact at any n
    assert correlation_pvalue(np.arange(40.0), near, "kendall") == (
        pytest.approx(st.kendalltau(np.arange(40.0), near, method="exact").pvalue, abs=1e-15), "exact")
    tied = np.round(y40 / 4)
    assert correlation_pvalue(x40, tied, "kendall")[1] == "asymptotic"
    assert correlation_pvalue(x40, y40, "pearson")[1] == "exact under normality"
    assert correlation_pvalue(x40, y40, "spearman")[1] == "asymptotic"


def test_human_ceiling_in_meta_honours_the_callers_random_state(gpt4_rts_coherence):
    from evalcore.analyses.ceiling import run_ceiling
    from evalcore.meta import human_ceiling

    ds = load_dataset("summeval")
    got = {}
    for seed in (1, 2):
        [cell] = run_ceiling(ds, gpt4_rts_coherence, "coherence", levels=("dataset",), coefficients=("spearman",),
                             n_resamples=40, random_state=seed)
        row = cell.as_dict()  # meta --json's human_ceiling row
        t = human_ceiling(ds.annotations, ds.items, "coherence", group=row["group"], level="dataset",
                          coefficient="spearman", n_resamples=40, random_state=seed,
                          item_ids=gpt4_rts_coherence["item_id"])
        mean = t[t["annotator"] == "mean"].iloc[0]
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(mean["ci_low"]), pytest.approx(mean["ci_high"]))
        got[seed] = (row["ci_low"], row["ci_high"])
    assert got[1] != got[2]


# --------------------------------------------------------------------- one unit per table, a kappa on one pair


def test_a_rate_and_its_interval_share_one_unit_on_screen():
    from evalcore.meta.preference import pairwise_summary
    from evalcore.views import bias, preference as pv
    from evalcore.views.format import display_table

    prefs, comps, items = pair_frames({"p1": ("first", "second"), "p2": ("second", "first"), "p3": ("first", "first")},
                                      {"p1": "a", "p2": "b", "p3": "a"})
    models = pv.model_table({"run": pairwise_summary(prefs, comps, items, n_resamples=50)})
    shown = display_table(models)
    for col in ("human_win_rate", "human_win_rate_ci_low", "human_win_rate_ci_high", "judge_win_rate",
                "judge_win_rate_ci_low", "judge_win_rate_ci_high"):
        assert shown.formats[col] == "%.1f%%", col
        assert shown.frame[col].tolist() == pytest.approx((models[col] * 100).tolist()), col
    run = load_run("llmbar_natural/llmbar-gpt-4-vanilla")
    table = bias.position_bias_table([run], n_resamples=50)
    shown = display_table(table)
    row = shown.frame.iloc[-1]
    for rate in ("first_position_win_rate", "tie_rate", "flip_rate", "inconsistent_rate"):
        assert {shown.formats[c] for c in (rate, f"{rate}_ci_low", f"{rate}_ci_high")} == {"%.1f%%"}, rate
        assert row[f"{rate}_ci_low"] <= row[rate] <= row[f"{rate}_ci_high"] <= 100, rate
    fig = bias.position_bias_figure(table)  # every bar drawn with its interval
    assert fig.data and all(t.error_y.array is not None and t.error_y.arrayminus is not None for t in fig.data)


def test_a_kappa_over_one_shared_pair_carries_a_caveat():
    from evalcore.meta.preference import annotator_kappas
    from evalcore.views.preference import annotator_kappa_table

    votes = pd.DataFrame([{"pair_id": p, "annotator": a, "preferred": v} for p, a, v in [
        ("p1", "x", "a"), ("p1", "y", "b"), ("p2", "x", "a"), ("p3", "y", "b"), ("p4", "x", "b"), ("p4", "z", "b")]
        + [(f"q{i}", ann, "ab"[i % 2]) for i in range(12) for ann in ("y", "z")]])
    rows = {(k["a"], k["b"]): k for k in annotator_kappas(votes)}
    assert rows[("x", "y")]["n"] == 1 and rows[("x", "y")]["kappa"] == 0.0  # one disagreeing pair: kappa 0
    assert "over 1 shared pair only" in rows[("x", "y")]["note"]
    assert "note" not in rows[("y", "z")] and rows[("y", "z")]["n"] == 12
    table = annotator_kappa_table({"annotator_kappa": list(rows.values())})
    assert table.set_index(["annotator_1", "annotator_2"]).loc[("x", "y"), "note"].startswith("over 1 shared pair")


# ------------------------------------------------------------------------- intervals on few documents (simulated)


def test_intervals_under_the_simulated_coverage_threshold_are_called_too_narrow():
    from evalcore.meta.inference import FEW_DOCUMENTS_FOR_COVERAGE, Support, support_warnings

    # bench/bench_ci_coverage.py: the 95% dataset-level Spearman BCa interval held the truth in 0.904 of 1,000
    # simulated studies of 30 documents, 0.923-0.929 of 2,000 at 50-75, 0.935 at 100
    assert FEW_DOCUMENTS_FOR_COVERAGE == 100
    for n in (10, 30, 60, 99):
        [w] = support_warnings(Support(n, 12))
        assert f"rest on {n} documents" in w and "can be too narrow" in w
    assert support_warnings(Support(100, 12)) == []
    [w] = support_warnings(Support(9, 12))
    assert "unreliable" in w and "too narrow" not in w  # below 10 the stronger sentence alone


# ------------------------------------------------------------------------- position-bias rates with intervals


def position_frame(seed: int = 3, n_docs: int = 8, per_doc: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        for k in range(per_doc):
            for order in ("ab", "ba"):
                verdict = rng.choice(["first", "second", "tie", None], p=[0.45, 0.3, 0.15, 0.1])
                rows.append({"pair_id": f"p{d:02d}{k}", "doc_id": f"d{d:02d}", "dimension": "overall",
                             "order": order, "verdict": verdict, "status": "ok" if verdict else "failed"})
    return pd.DataFrame(rows)


def test_position_bias_intervals_equal_explicit_resampling_of_documents():
    from evalcore.meta.pairwise import position_bias, position_bias_intervals
    from evalcore.meta.resampling import bootstrap_indices

    c = position_frame()
    docs = sorted(c["doc_id"].unique())
    ok = c[c["status"] == "ok"]
    both = ok.groupby("pair_id")["order"].nunique() == 2
    # every document holds a decisive verdict and a pair read in both orders: every rate resamples the same units
    assert set(ok[ok["verdict"] != "tie"]["doc_id"]) == set(docs)
    assert set(ok[ok["pair_id"].isin(both[both].index)]["doc_id"]) == set(docs)
    got = position_bias_intervals(c, n_resamples=30, random_state=4)
    by_doc = {d: g for d, g in c.groupby("doc_id")}
    values = []
    for idx in bootstrap_indices(len(docs), 30, 4):
        copies = [by_doc[docs[i]].assign(pair_id=lambda g, k=k: g["pair_id"] + f"#{k}") for k, i in enumerate(idx)]
        values.append(position_bias(pd.concat(copies)))
    for rate in ("first_position_win_rate", "tie_rate", "flip_rate", "inconsistent_rate"):
        lo, hi = np.percentile([v[rate] for v in values], [2.5, 97.5])
        assert (got[rate].ci_low, got[rate].ci_high) == (pytest.approx(lo), pytest.approx(hi)), rate
        assert got[rate].statistic == pytest.approx(position_bias(c)[rate]), rate


def test_difficulty_tau_intervals_equal_explicit_resampling_of_documents(gpt4_rts_coherence):
    from evalcore.meta.pairwise import pairwise_kendall_by_difficulty
    from evalcore.meta.resampling import bootstrap_indices

    f = gpt4_rts_coherence[gpt4_rts_coherence["doc_id"].isin(sorted(gpt4_rts_coherence["doc_id"].unique())[:10])]
    got = pairwise_kendall_by_difficulty(f, n_resamples=30, random_state=2).set_index("bucket")
    cuts = (got.loc["hard", "high"], got.loc["medium", "high"])  # the data's tertile cuts, held fixed
    docs = sorted(f["doc_id"].unique())
    by_doc = {d: g for d, g in f.groupby("doc_id")}
    taus = []
    for idx in bootstrap_indices(len(docs), 30, 2):
        copy = pd.concat([by_doc[docs[i]].assign(doc_id=f"{docs[i]}#{k}") for k, i in enumerate(idx)])
        taus.append(pairwise_kendall_by_difficulty(copy, buckets=cuts).set_index("bucket")["tau"])
    taus = pd.DataFrame(taus)
    for bucket in ("hard", "medium", "easy", "all"):
        lo, hi = np.percentile(taus[bucket].dropna(), [2.5, 97.5])
        assert (got.loc[bucket, "tau_ci_low"], got.loc[bucket, "tau_ci_high"]) == (pytest.approx(lo),
                                                                                   pytest.approx(hi)), bucket
    from evalcore.views.alignment import difficulty_figure

    fig = difficulty_figure(got.reset_index().assign(run="GPT-4 RTS"))  # the bars carry their intervals
    assert fig.data[0].error_y.array is not None and "95% CIs" in fig.layout.title.text
