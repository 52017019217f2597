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
