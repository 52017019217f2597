"""Agreement on labels in the alignment loop: the paired kappa / accuracy test and the loop on a nominal dimension.

A nominal dimension has no order, so no correlation can measure a judge on it; the loop measures it by Cohen's
kappa (or accuracy) of the judge's labels, and compares two prompts by
evalcore.meta.compare_labels.paired_label_difference. Its figures are checked here against an independent
computation: scikit-learn's kappa on the items of each resample (sample weights = how often each document was
drawn), and the exact permutation p-value by enumerating every swap of the two judges on whole documents.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings as hyp_settings, strategies as hst
from sklearn.metrics import accuracy_score, cohen_kappa_score

from evalcore import datasets
from evalcore.align import AlignSettings, Settings, align
from evalcore.align import cli as align_cli
from evalcore.align import loop
from evalcore.judge.client import Endpoint
from evalcore.judge.spec import EngineOptions
from evalcore.meta.classification import label_frame
from evalcore.meta.compare_labels import LABEL_STATISTICS, paired_label_difference
from evalcore.meta.resampling import bootstrap_counts
from evalcore.model import Dataset, Dimension
from evalcore.sampling import documents_subset
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_align import PromptQualityJudge
from evalcore.views import improve as views

LABELS = ("incoherent", "partly coherent", "coherent")


def two_judges(n_docs: int, per_doc: int, k: int, seed: int, good: float = 0.8, weak: float = 0.4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        for s in range(per_doc):
            h = int(rng.integers(0, k))
            a = h if rng.random() < good else int(rng.integers(0, k))
            b = h if rng.random() < weak else int(rng.integers(0, k))
            rows.append({"item_id": f"d{d}-s{s}", "doc_id": f"d{d}", "system_id": f"s{s}", "human": h, "a": a,
                         "b": b})
    return pd.DataFrame(rows)


def frames(f: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    cols = ["item_id", "doc_id", "system_id", "human"]
    return f[cols].assign(judge=f["a"]), f[cols].assign(judge=f["b"])


STAT = {"cohen_kappa": lambda h, j, w=None: cohen_kappa_score(h, j, labels=[0, 1, 2], sample_weight=w),
        "weighted_kappa": lambda h, j, w=None: cohen_kappa_score(h, j, labels=[0, 1, 2], weights="quadratic",
                                                                 sample_weight=w),
        "accuracy": lambda h, j, w=None: accuracy_score(h, j, sample_weight=w)}


@pytest.mark.parametrize("statistic", LABEL_STATISTICS)
def test_the_paired_label_difference_equals_scikit_learn_on_every_resample(statistic):
    f = two_judges(12, 6, 3, seed=3)
    a, b = frames(f)
    kind = "ordinal" if statistic == "weighted_kappa" else "nominal"
    r = paired_label_difference(a, b, categories=[0, 1, 2], kind=kind, statistic=statistic, n_resamples=300,
                                ci_method="percentile", random_state=5)
    fn = STAT[statistic]
    assert r.statistic_a == pytest.approx(fn(f["human"], f["a"]), abs=1e-12)
    assert r.difference == pytest.approx(fn(f["human"], f["a"]) - fn(f["human"], f["b"]), abs=1e-12)
    # independently: each resample's documents as item weights, scikit-learn on the weighted items
    doc = pd.factorize(f["doc_id"], sort=True)[0]
    diffs = []
    for counts in bootstrap_counts(12, 300, 5):
        w = counts[doc].astype(float)
        keep = w > 0
        h, ja, jb, w = f["human"][keep], f["a"][keep], f["b"][keep], w[keep]
        diffs.append(fn(h, ja, w) - fn(h, jb, w))
    diffs = np.array(diffs)
    lo, hi = np.quantile(diffs[~np.isnan(diffs)], [0.025, 0.975])  # the percentile interval, linear quantiles
    assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi), abs=1e-9)
    d = diffs[~np.isnan(diffs)]
    p = min(1.0, 2 * min(((d <= 0).sum() + 1) / (len(d) + 1), ((d >= 0).sum() + 1) / (len(d) + 1)))
    assert r.pvalue == pytest.approx(p, abs=1e-12)
    assert r.n == len(f) and r.n_documents == 12 and r.coefficient == statistic


def test_the_document_swap_p_value_is_exact_by_enumeration():
    f = two_judges(9, 5, 3, seed=11)
    a, b = frames(f)
    r = paired_label_difference(a, b, categories=[0, 1, 2], kind="nominal", method="permutation", n_resamples=1000)
    observed = cohen_kappa_score(f["human"], f["a"]) - cohen_kappa_score(f["human"], f["b"])
    doc = pd.factorize(f["doc_id"], sort=True)[0]
    extreme = 0
    for swaps in itertools.product([False, True], repeat=9):
        sw = np.array(swaps)[doc]
        ja, jb = np.where(sw, f["b"], f["a"]), np.where(sw, f["a"], f["b"])
        v = cohen_kappa_score(f["human"], ja) - cohen_kappa_score(f["human"], jb)
        extreme += abs(v) >= abs(observed) * (1 - 1e-12)
    assert r.pvalue == pytest.approx(extreme / 2 ** 9, abs=1e-12)


def test_items_either_judge_could_not_label_are_left_out_of_both():
    f = two_judges(6, 4, 3, seed=2)
    a, b = (x.astype({"judge": float}) for x in frames(f))
    a.loc[0, "judge"] = np.nan  # a failed parse
    b.loc[1, "judge"] = 1.5  # no category of a nominal dimension
    r = paired_label_difference(a, b, categories=[0, 1, 2], kind="nominal", n_resamples=0)
    keep = ~f.index.isin([0, 1])
    assert r.dropped == 2 and r.n == len(f) - 2
    assert r.difference == pytest.approx(cohen_kappa_score(f["human"][keep], f["a"][keep])
                                         - cohen_kappa_score(f["human"][keep], f["b"][keep]), abs=1e-12)


def test_the_weighted_kappa_needs_an_order_and_a_correlation_is_refused_on_a_nominal_dimension():
    f = two_judges(4, 3, 3, seed=1)
    a, b = frames(f)
    with pytest.raises(ValueError, match="ordinal"):
        paired_label_difference(a, b, categories=[0, 1, 2], kind="nominal", statistic="weighted_kappa")
    nominal = Dimension("q", 0, 2, kind="nominal", labels=LABELS)
    with pytest.raises(ValueError, match="no order"):
        Settings(coefficient="spearman").check(nominal)
    with pytest.raises(ValueError, match="compares labels"):
        Settings(coefficient="cohen_kappa").check(Dimension("q", 1, 5))
    assert loop.default_settings(nominal).coefficient == "cohen_kappa"
    assert loop.default_settings(Dimension("q", 1, 5)).coefficient == "spearman"
    assert views.agreement_choices(nominal) == ["cohen_kappa", "accuracy"]
    assert "weighted_kappa" in views.agreement_choices(Dimension("q", 1, 5, kind="ordinal"))
    assert views.agreement_choices(Dimension("q", 1, 5)) == ["spearman", "kendall", "pearson"]
    assert views.agreement_name("cohen_kappa") == "Cohen's kappa with the human labels"
    # the CLI lists the statistics without importing scikit-learn: the same names
    assert align_cli.LABEL_STATISTICS == LABEL_STATISTICS


@hyp_settings(max_examples=30, deadline=None)
@given(seed=hst.integers(0, 10_000), statistic=hst.sampled_from(["cohen_kappa", "accuracy"]))
def test_swapping_the_judges_negates_the_difference_and_a_judge_equals_itself(seed, statistic):
    f = two_judges(5, 4, 3, seed=seed)
    a, b = frames(f)
    kw = dict(categories=[0, 1, 2], kind="nominal", statistic=statistic, n_resamples=50, ci_method="percentile")
    ab, ba = paired_label_difference(a, b, **kw), paired_label_difference(b, a, **kw)
    if np.isnan(ab.difference):
        return
    assert ba.difference == pytest.approx(-ab.difference, abs=1e-12)
    assert ba.ci_low == pytest.approx(-ab.ci_high, abs=1e-9) and ba.pvalue == pytest.approx(ab.pvalue, abs=1e-12)
    same = paired_label_difference(a, a, **kw)
    assert same.difference == 0 and same.pvalue == 1.0


# ------------------------------------------------------------------------------------------- the loop, nominal


@pytest.fixture(scope="module")
def nominal_ds() -> Dataset:
    """24 SummEval documents, coherence made a nominal label from the experts' mean (<= 2: incoherent, <= 3.5:
    partly coherent, else coherent)."""
    full = datasets.load_dataset("summeval")
    ds = documents_subset(full, list(dict.fromkeys(full.items["doc_id"]))[:24])
    h = ds.human_scores[ds.human_scores["dimension"] == "coherence"]
    codes = np.select([h["score"] <= 2, h["score"] <= 3.5], [0, 1], 2).astype(float)
    dim = Dimension("coherence", 0, 2, kind="nominal", labels=LABELS,
                    description="Is the summary coherent: incoherent (0), partly coherent (1) or coherent (2)?")
    return dataclasses.replace(ds, id="summeval_nominal", dimensions=[dim], human_scores=h.assign(score=codes),
                               annotations=ds.annotations.iloc[:0])


def test_the_loop_on_a_nominal_dimension_measures_cohens_kappa_and_finds_the_rubric(nominal_ds, tmp_path):
    store = Store(tmp_path / "s.db")
    judge = PromptQualityJudge.for_dataset(nominal_ds, "coherence", good_noise=0.2)
    with serve(scorer=judge) as srv:
        options = EngineOptions(Endpoint(base_url=srv.base_url, model="loopback-judge", provider="vllm",
                                         api_key_env="VLLM_API_KEY"), concurrency=16)
        report = align(nominal_ds, "coherence", "geval", options,
                       AlignSettings(n_candidates=2, seed=0,
                                     agreement=Settings(coefficient="cohen_kappa", n_resamples=300)), store=store)
    assert report.settings.coefficient == "cohen_kappa"
    assert report.chosen.candidate.source == "proposal"
    t = report.test
    assert t.verdict == "improved" and t.difference.ci_low > 0
    # the test-part difference is Cohen's kappa of each prompt's labels on the test items, by scikit-learn, on the
    # label frames the Alignment page uses (a nominal G-Eval judge's label: its most probable category)
    test_docs = set(report.split.test_docs)
    kappas = []
    for scored in (t.chosen, t.baseline):
        f = label_frame(nominal_ds, store.load_run(scored.run_id), "coherence")[0]
        f = f[f["doc_id"].astype(str).isin(test_docs)].dropna(subset=["judge"]).set_index("item_id")
        kappas.append(f)
    both = kappas[0].index.intersection(kappas[1].index)
    assert set(kappas[0]["judge"]) <= {0.0, 1.0, 2.0}
    expected = [cohen_kappa_score(k.loc[both, "human"], k.loc[both, "judge"], labels=[0, 1, 2]) for k in kappas]
    assert t.difference.statistic == pytest.approx(expected[0] - expected[1], abs=1e-12)
    assert t.chosen.agreement.statistic == pytest.approx(expected[0], abs=1e-12)
    j = report.to_json()
    assert j["settings"]["coefficient"] == "cohen_kappa" and j["test"]["verdict"] == "improved"


def test_the_loop_refuses_a_correlation_on_a_nominal_dimension_before_sending_anything(nominal_ds, tmp_path):
    options = EngineOptions(Endpoint(base_url="http://127.0.0.1:9/v1", model="m", provider="vllm",
                                     api_key_env="VLLM_API_KEY"))
    with pytest.raises(ValueError, match="no order"):
        align(nominal_ds, "coherence", "explicit", options, AlignSettings(agreement=Settings(coefficient="spearman")),
              store=Store(tmp_path / "s.db"))


def test_two_equally_good_labellers_are_rarely_called_different_on_a_small_test_part():
    """The verdict's size on labels: two judges each right 60% of the time (errors clustered by document: a
    document is hard for both), 200 simulated test parts of 8 documents x 6 systems. The verdict needs both paired
    tests (loop.paired_verdict); its rejection rate must stay within 0.05 + 2.5 Monte-Carlo SE. (Measured: the
    bootstrap interval alone excludes 0 in 15% of them, the permutation test and the verdict reject 3.5%.)"""
    dim = Dimension("q", 0, 2, kind="nominal", labels=LABELS)
    settings = Settings(coefficient="cohen_kappa", n_resamples=300)
    rejections = 0
    sims = 200
    for seed in range(sims):
        rng = np.random.default_rng(1000 + seed)
        rows = []
        for d in range(8):
            hard = rng.random() < 0.5  # both judges are worse on a hard document
            p_right = 0.4 if hard else 0.8
            for s in range(6):
                h = int(rng.integers(0, 3))
                a = h if rng.random() < p_right else int(rng.integers(0, 3))
                b = h if rng.random() < p_right else int(rng.integers(0, 3))
                rows.append({"item_id": f"d{d}-s{s}", "doc_id": f"d{d}", "system_id": f"s{s}", "human": h,
                             "a": a, "b": b})
        fa, fb = frames(pd.DataFrame(rows))
        d = loop.paired_verdict(fa, fb, settings, dim)
        rejections += loop.verdict_of(d) != "no significant difference"
    rate = rejections / sims
    assert rate <= 0.05 + 2.5 * (0.05 * 0.95 / sims) ** 0.5, rate


def test_disagreements_on_a_nominal_dimension_are_labels_that_differ():
    """The development disagreements of a nominal judge: its label and the annotators' majority as the agreement
    statistics read them (label_frame), gap 1 where they differ and 0 where they agree, label names in the table,
    and the charts say "share labelled differently" (no |judge - human| of unordered codes)."""
    from evalcore.align import make_split
    from evalcore.align.disagreement import disagreements
    from evalcore.testing.labels import LABELS as SYNTHETIC, label_dataset, label_run

    ds, truth = label_dataset(kind="nominal", n_docs=20, seed=4)
    run = label_run(ds, truth, seed=5, judge_accuracy=0.6)
    split = make_split(ds, "faithful", test_share=0.3, seed=1)
    dis = disagreements(ds, run, "faithful", split)
    labels = label_frame(ds, run, "faithful")[0].set_index("item_id")
    items = dis.items.set_index("item_id")
    assert set(items.index) <= set(labels.index) and not set(items["doc_id"].astype(str)) & set(split.test_docs)
    differ = (labels.loc[items.index, "judge"] != labels.loc[items.index, "human"]).astype(float)
    assert items["gap"].tolist() == differ.tolist() and set(items["gap"]) == {0.0, 1.0}
    assert dis.items["gap"].is_monotonic_decreasing  # the labels that differ first
    table = views.disagreement_table(dis, 200)
    assert {"human label", "judge label", "labels differ"} <= set(table.columns)
    assert set(table["human label"]) <= set(SYNTHETIC["nominal"]) and not table.isna().any().any()
    rate = dis.by_system.set_index("system_id")["mean_gap"]
    by_hand = items.groupby("system_id")["gap"].mean()
    assert rate.sort_index().tolist() == pytest.approx(by_hand.sort_index().tolist())
    sys_fig, human_fig = views.by_system_figure(dis), views.by_human_figure(dis)
    assert sys_fig.layout.yaxis.title.text == "Share of items labelled differently"
    assert human_fig.layout.xaxis.title.text == "Human label"
    assert list(human_fig.data[0].x) == [n for n in SYNTHETIC["nominal"] if n in set(table["human label"])]
