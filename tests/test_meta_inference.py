"""Issue 18, items 1-3 and 5: exact small-n p-values (checked against scipy's exact tests and a by-hand enumeration),
the boot-both interval (checked by explicit resampling on a small frame), the human ceiling on a run's items with
its interval (checked by explicit resampling), and the warnings a figure on few documents or systems carries."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from evalcore.meta import human_ceiling
from evalcore.meta.ceiling import mean_ceiling_interval
from evalcore.meta.correlation import correlate, prepare_frame
from evalcore.meta.inference import (
    Support, boot_both_draws, boot_both_interval, correlation_pvalue, support_warnings,
)


def systems_frame(n_docs=20, qualities=(1.0, 2.0, 3.0, 4.0), noise=1.0, seed=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        for s, q in enumerate(qualities):
            rows.append({"item_id": f"d{d}/S{s}", "doc_id": f"d{d:02d}", "system_id": f"S{s}",
                         "judge": q + noise * rng.normal(), "human": q + noise * rng.normal()})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------- exact p-values


@pytest.mark.parametrize("coefficient", ["pearson", "spearman", "kendall"])
def test_four_systems_ranked_perfectly_give_the_exact_one_in_twelve(coefficient):
    # the system means of this frame are ordered the same way on both sides (checked below)
    r = correlate(systems_frame(noise=0.3), level="system", coefficient=coefficient, n_resamples=0)
    expected = st.kendalltau([1, 2, 3, 4], [1, 2, 3, 4], method="exact").pvalue  # scipy's exact null: 2/4!
    assert expected == pytest.approx(1 / 12)
    assert r.pvalue == pytest.approx(expected, abs=1e-12)
    assert r.pvalue_method in ("exact", "exact permutation")
    if coefficient != "pearson":
        assert r.statistic == 1.0


def test_permutation_pvalue_equals_enumerating_every_ordering_by_hand():
    x = np.array([0.3, 1.2, 0.9, 2.5, 1.7, 3.1])
    y = np.array([1.0, 0.8, 2.2, 2.0, 3.5, 2.9])
    r_obs = st.pearsonr(x, y).statistic
    perms = np.array([st.pearsonr(x, y[list(p)]).statistic for p in itertools.permutations(range(6))])
    tol = 1e-12
    greater = np.mean(perms >= r_obs - tol)
    less = np.mean(perms <= r_obs + tol)
    by_hand = min(1.0, 2 * min(greater, less))  # scipy's two-sided rule
    pv, method = correlation_pvalue(x, y, "pearson")
    assert method == "exact permutation"
    assert pv == pytest.approx(by_hand, abs=1e-12)
    assert pv > 1 / math.factorial(6)


def test_kendall_with_ties_goes_through_the_permutation_test_and_large_n_stays_asymptotic():
    x = np.array([1, 1, 2, 3, 4.0])
    y = np.array([1, 2, 2, 4, 3.0])
    perms = np.array([st.kendalltau(x, y[list(p)]).statistic for p in itertools.permutations(range(5))])
    t = st.kendalltau(x, y).statistic
    by_hand = min(1.0, 2 * min(np.mean(perms >= t - 1e-12), np.mean(perms <= t + 1e-12)))
    pv, method = correlation_pvalue(x, y, "kendall")
    assert (pv, method) == (pytest.approx(by_hand), "exact permutation")
    rng = np.random.default_rng(0)
    big_x, big_y = rng.normal(size=40), rng.normal(size=40)
    assert correlation_pvalue(big_x, big_y, "spearman") == (pytest.approx(st.spearmanr(big_x, big_y).pvalue),
                                                             "asymptotic")


def test_twelve_systems_get_a_seeded_permutation_pvalue_never_zero():
    f = systems_frame(qualities=tuple(float(q) for q in range(12)), noise=0.2)
    r = correlate(f, level="system", coefficient="spearman", n_resamples=0)
    assert r.pvalue_method == "permutation (9999 resamples)"
    # a perfect ranking of 12: no random ordering reaches it (12! >> 9999), so p is (0 + 1) / (9999 + 1), twice
    assert r.pvalue == pytest.approx(2 / 10000)


# ----------------------------------------------------------------------------------------------- boot-both


def boot_both_by_hand(frame: pd.DataFrame, coefficient: str, n_resamples: int, seed: int) -> tuple[float, float]:
    docs = sorted(frame["doc_id"].unique())
    systems = sorted(frame["system_id"].unique())
    draws_d, draws_s = boot_both_draws(len(docs), len(systems), n_resamples, seed)
    fn = {"pearson": st.pearsonr, "spearman": st.spearmanr, "kendall": st.kendalltau}[coefficient]
    values = []
    for dd, ss in zip(draws_d, draws_s):
        picked = pd.concat([frame[frame["doc_id"] == docs[i]] for i in dd])  # documents with their multiplicity
        means = picked.groupby("system_id")[["judge", "human"]].mean()
        chosen = means.reindex([systems[j] for j in ss])  # systems with their multiplicity
        if chosen.isna().any().any() or chosen["judge"].nunique() < 2 or chosen["human"].nunique() < 2:
            continue
        values.append(fn(chosen["judge"], chosen["human"]).statistic)
    return tuple(np.quantile(values, [0.025, 0.975]))


@pytest.mark.parametrize("coefficient", ["pearson", "kendall"])
def test_boot_both_interval_equals_explicit_resampling_of_systems_and_documents(coefficient):
    f = systems_frame(n_docs=6, qualities=(1.0, 1.5, 2.5, 3.0, 4.0), noise=1.0, seed=3)
    lo, hi, _ = boot_both_interval(prepare_frame(f), coefficient, n_resamples=150, random_state=5)
    assert (lo, hi) == pytest.approx(boot_both_by_hand(f, coefficient, 150, 5), abs=1e-9)
    r = correlate(f, level="system", coefficient=coefficient, n_resamples=150, random_state=5,
                  ci_resampling="both")
    assert (r.ci_low, r.ci_high, r.resampling, r.method) == (pytest.approx(lo), pytest.approx(hi), "both",
                                                              "percentile")
    # the document bootstrap holds the systems fixed: it answers another question and is narrower here
    d = correlate(f, level="system", coefficient=coefficient, n_resamples=150, random_state=5)
    assert d.resampling == "documents" and (d.ci_high - d.ci_low) < (hi - lo)
    # other levels always resample documents
    assert correlate(f, level="dataset", n_resamples=20, ci_resampling="both").resampling == "documents"
    with pytest.raises(ValueError, match="ci_resampling"):
        correlate(f, level="system", ci_resampling="systems")


# -------------------------------------------------------------------------------------------- human ceiling


def ceiling_data(n_docs=8, n_sys=4, n_ann=3, seed=2):
    rng = np.random.default_rng(seed)
    items, ann = [], []
    for d in range(n_docs):
        for s in range(n_sys):
            iid = f"d{d}/M{s}"
            items.append({"item_id": iid, "doc_id": f"d{d}", "system_id": f"M{s}"})
            truth = s + rng.normal()
            for a in range(n_ann):
                ann.append({"item_id": iid, "dimension": "coherence", "annotator": f"e{a + 1}", "group": "expert",
                            "value": float(np.clip(np.round(truth + rng.normal()), 0, 5))})
    return pd.DataFrame(ann), pd.DataFrame(items)


def test_ceiling_on_a_runs_items_is_computed_on_those_items_only():
    ann, items = ceiling_data()
    keep = items[items["system_id"].isin(["M1", "M2", "M3"]) & (items["doc_id"] != "d0")]["item_id"]
    t = human_ceiling(ann, items, "coherence", level="dataset", coefficient="spearman", item_ids=keep)
    wide = ann[ann["item_id"].isin(keep)].pivot(index="item_id", columns="annotator", values="value")
    for a in ["e1", "e2", "e3"]:
        others = wide.drop(columns=a).mean(axis=1)
        row = t[t["annotator"] == a].iloc[0]
        assert row["statistic"] == pytest.approx(st.spearmanr(wide[a], others).statistic)
        assert row["n"] == len(keep) == 21
    everything = human_ceiling(ann, items, "coherence", level="dataset", coefficient="spearman")
    assert everything["n"].iloc[0] == 32 and everything["statistic"].iloc[-1] != t["statistic"].iloc[-1]


def test_ceiling_mean_interval_equals_explicit_resampling_of_documents():
    ann, items = ceiling_data(n_docs=7)
    wide = ann.pivot(index="item_id", columns="annotator", values="value").join(items.set_index("item_id"))
    frames = []
    for a in ["e1", "e2", "e3"]:
        frames.append(pd.DataFrame({"item_id": wide.index, "doc_id": wide["doc_id"], "system_id": wide["system_id"],
                                    "judge": wide[a], "human": wide[[o for o in ["e1", "e2", "e3"] if o != a]]
                                    .mean(axis=1)}).reset_index(drop=True))
    est = np.mean([st.pearsonr(f["judge"], f["human"]).statistic for f in frames])
    lo, hi, used = mean_ceiling_interval(frames, est, level="dataset", coefficient="pearson", n_resamples=120,
                                         random_state=4, ci_method="percentile")
    docs = sorted(items["doc_id"].unique())
    draws = np.random.default_rng(4).integers(0, len(docs), size=(120, len(docs)))
    values = []
    for dd in draws:
        rs = []
        for f in frames:
            pick = pd.concat([f[f["doc_id"] == docs[i]] for i in dd])
            rs.append(st.pearsonr(pick["judge"], pick["human"]).statistic)
        values.append(np.mean(rs))
    assert (lo, hi) == pytest.approx(tuple(np.quantile(values, [0.025, 0.975])), abs=1e-9)
    t = human_ceiling(ann, items, "coherence", level="dataset", coefficient="pearson", n_resamples=200)
    mean = t[t["annotator"] == "mean"].iloc[0]
    assert mean["ci_low"] < mean["statistic"] < mean["ci_high"]


# ------------------------------------------------------------------------------------------------- warnings


def test_support_warnings_name_documents_and_systems():
    assert support_warnings(Support(100, 12)) == []
    w = support_warnings(Support(2, 2))
    assert len(w) == 2 and "2 documents" in w[0] and "always +1 or -1" in w[1]
    assert support_warnings(Support(150, 3), levels=("dataset",)) == []


# ---------------------------------------------------------------------------------------------- properties

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(hs.integers(4, 7), hs.integers(0, 10_000))
def test_permutation_pvalues_agree_with_scipys_exact_kendall_and_never_go_below_the_exact_minimum(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.permutation(n).astype(float)
    y = rng.permutation(n).astype(float)
    pk, method = correlation_pvalue(x, y, "kendall")
    assert method == "exact" and pk == pytest.approx(st.kendalltau(x, y, method="exact").pvalue)
    # Spearman on distinct ranks: enumerating every ordering is exact, and at least two orderings (the observed and
    # its mirror) are as extreme, so p >= 2 / n!
    ps, method = correlation_pvalue(x, y, "spearman")
    assert method == "exact permutation" and 2 / math.factorial(n) - 1e-12 <= ps <= 1
    perms = np.array([st.spearmanr(x, y[list(p)]).statistic for p in itertools.permutations(range(n))])
    rho = st.spearmanr(x, y).statistic
    by_hand = min(1.0, 2 * min(np.mean(perms >= rho - 1e-12), np.mean(perms <= rho + 1e-12)))
    assert ps == pytest.approx(by_hand, abs=1e-12)
