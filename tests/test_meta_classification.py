"""Label kinds (issue 7.4): kappa, weighted kappa, accuracy, P/R/F1, confusion matrix, calibration, gold labels,
alpha at the matching level. Every figure is checked against a hand computation or a second method (formula vs
scikit-learn, vectorised bootstrap vs explicit resampling, alpha vs Krippendorff's published example), plus
hypothesis properties."""

from __future__ import annotations

import os

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from sklearn.calibration import calibration_curve
from sklearn.metrics import (
    accuracy_score, brier_score_loss, cohen_kappa_score, confusion_matrix, precision_recall_fscore_support,
)

from evalcore.meta.agreement import krippendorff_alpha
from evalcore.meta.classification import (
    STATISTICS, agreement_dict, calibration, classify, confusion_from_counts, gold_labels, judge_codes,
    judge_probabilities, label_agreement, prepare_labels, sklearn_statistics, stats_from_confusion,
)
from evalcore.meta.correlation import bootstrap_indices, resample_counts
from evalcore.model import Dimension, labels_from_values
from evalcore.testing.labels import label_dataset, label_run, save_label_example

REPO = Path(__file__).resolve().parents[1]


def frame(human, judge, docs=None):
    n = len(human)
    return pd.DataFrame({"item_id": [f"i{k}" for k in range(n)],
                         "doc_id": docs if docs is not None else [f"d{k}" for k in range(n)],
                         "system_id": "s", "human": np.asarray(human, float), "judge": np.asarray(judge, float)})


# ------------------------------------------------------------------------------------------------ by hand


def test_binary_statistics_by_hand():
    # confusion (rows human, columns judge) [[3, 1], [1, 3]]: p_o = 6/8, p_e = (4*4 + 4*4) / 64 = 1/2
    human = [0, 0, 0, 0, 1, 1, 1, 1]
    judge = [0, 0, 0, 1, 0, 1, 1, 1]
    r = classify(frame(human, judge), categories=(0, 1), kind="binary", labels=("fail", "pass"), n_resamples=0)
    assert r.confusion.tolist() == [[3, 1], [1, 3]]
    assert r.cohen_kappa.statistic == pytest.approx((0.75 - 0.5) / (1 - 0.5))
    assert r.accuracy.statistic == pytest.approx(6 / 8)
    assert r.precision.statistic == pytest.approx(3 / 4)  # 3 of the 4 "pass" verdicts are right
    assert r.recall.statistic == pytest.approx(3 / 4)
    assert r.f1.statistic == pytest.approx(0.75)
    assert r.weighted_kappa is None and r.average == "binary"


def test_binary_unbalanced_by_hand():
    # [[5, 0], [2, 1]]: judge says pass once (right), misses two passes
    human = [0] * 5 + [1] * 3
    judge = [0] * 5 + [0, 0, 1]
    r = classify(frame(human, judge), categories=(0, 1), kind="binary", n_resamples=0)
    po, pe = 6 / 8, (5 * 7 + 3 * 1) / 64
    assert r.cohen_kappa.statistic == pytest.approx((po - pe) / (1 - pe))
    assert r.precision.statistic == pytest.approx(1.0)
    assert r.recall.statistic == pytest.approx(1 / 3)
    assert r.f1.statistic == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))


def test_ordinal_weighted_kappa_by_hand():
    # confusion [[2,1,0],[0,2,1],[1,0,2]]; w = (i-j)^2; E = 3*3/9 = 1 per cell
    # sum w*O = 1 + 1 + 4 = 6, sum w*E = 12 -> 1 - 6/12 = 0.5
    pairs = [(0, 0), (0, 0), (0, 1), (1, 1), (1, 1), (1, 2), (2, 2), (2, 2), (2, 0)]
    h, j = zip(*pairs)
    r = classify(frame(h, j), categories=(0, 1, 2), kind="ordinal", n_resamples=0)
    assert r.weighted_kappa.statistic == pytest.approx(0.5)
    assert r.cohen_kappa.statistic == pytest.approx((6 / 9 - 1 / 3) / (1 - 1 / 3))
    # macro P/R/F1: each class has 2 right of 3 on both sides
    assert r.precision.statistic == pytest.approx(2 / 3) and r.recall.statistic == pytest.approx(2 / 3)


def test_ordinal_judge_values_round_to_nearest_category():
    # G-Eval's probability-weighted 3.6 on a 1-5 scale is a 4; 2.5 goes up to 3; 0.2 clips to the lowest
    assert judge_codes([3.6, 2.5, 0.2, 7, np.nan], (1, 2, 3, 4, 5), "ordinal").tolist() == [3, 2, 0, 4, -1]
    # nominal has no nearest: 0.5 is no category (-2), counted as invalid
    assert judge_codes([0, 1, 0.5, 2], (0, 1, 2), "nominal").tolist() == [0, 1, -2, 2]
    p = prepare_labels(frame([0, 1, 2, 0], [0, 0.5, np.nan, 2]), (0, 1, 2), "nominal")
    assert (p.dropped, p.invalid, len(p.human)) == (1, 1, 2)


def test_undefined_statistics_are_nan_not_zero():
    # the judge never says pass: precision of "pass" is undefined; humans never say pass: recall undefined too
    r = classify(frame([0, 0, 0], [0, 0, 0]), categories=(0, 1), kind="binary", n_resamples=0)
    assert np.isnan(r.precision.statistic) and np.isnan(r.recall.statistic) and np.isnan(r.f1.statistic)
    assert np.isnan(r.cohen_kappa.statistic)  # one category on both sides: chance agreement is certain
    assert r.accuracy.statistic == 1.0


def test_bad_human_label_names_the_row():
    with pytest.raises(ValueError, match=r"column 'human' row 1 is 3, which is no category \(0, 1\)"):
        prepare_labels(frame([0, 3], [0, 1]), (0, 1), "binary")
    with pytest.raises(ValueError, match=r"column 'judge' row 0 holds 'yes'"):
        prepare_labels(pd.DataFrame({"doc_id": ["d"], "human": [1.0], "judge": ["yes"]}), (0, 1), "binary")


# --------------------------------------------------------------------------------------- second method


def _random_labels(rng, n, k, agree=0.6):
    h = rng.integers(0, k, n)
    j = np.where(rng.random(n) < agree, h, rng.integers(0, k, n))
    return h, j


@pytest.mark.parametrize("k,average", [(2, "binary"), (3, "macro"), (5, "macro")])
def test_formula_from_confusion_equals_sklearn(k, average):
    rng = np.random.default_rng(k)
    for _ in range(20):
        h, j = _random_labels(rng, 60, k)
        C = confusion_matrix(h, j, labels=list(range(k)))
        mine = stats_from_confusion(C, average=average)
        theirs = sklearn_statistics(h, j, k, average=average)
        for s in STATISTICS:
            np.testing.assert_allclose(mine[s][0], theirs[s], rtol=1e-12, atol=1e-12, err_msg=s)


def test_vectorised_bootstrap_equals_sklearn_on_each_resample():
    rng = np.random.default_rng(3)
    n_docs, k = 15, 3
    docs = np.repeat([f"d{i:02d}" for i in range(n_docs)], 4)
    h, j = _random_labels(rng, len(docs), k)
    p = prepare_labels(frame(h, j, docs), (0, 1, 2), "nominal")
    idx = bootstrap_indices(n_docs, 25, random_state=7)
    C = confusion_from_counts(p, resample_counts(idx, n_docs))
    boot = stats_from_confusion(C, average="macro")
    for b in range(25):
        # explicit resample: every item of every drawn document, as often as the document was drawn
        take = np.concatenate([np.nonzero(p.doc == d)[0] for d in idx[b]])
        ref = sklearn_statistics(p.human[take], p.judge[take], k, average="macro")
        np.testing.assert_array_equal(C[b], confusion_matrix(p.human[take], p.judge[take], labels=[0, 1, 2]))
        for s in STATISTICS:
            np.testing.assert_allclose(boot[s][b], ref[s], rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=s)
        # and the same through sample weights (how often each item is in the resample)
        w = np.bincount(take, minlength=len(p.human)).astype(float)
        assert sklearn_statistics(p.human, p.judge, k, average="macro", sample_weight=w)["cohen_kappa"] == \
            pytest.approx(ref["cohen_kappa"])


def test_confidence_interval_resamples_documents():
    # items of one document move together: with perfectly agreeing documents and perfectly disagreeing ones, the
    # interval comes from the document mix, and the per-cell interval of the confusion counts covers the counts
    ds, truth = label_dataset(n_docs=30, seed=4)
    run = label_run(ds, truth, seed=5)
    rep = label_agreement(ds, run, "faithful", n_resamples=400)
    r = rep.result
    for e in r.estimates().values():
        assert e.ci_low <= e.statistic <= e.ci_high
        assert e.ci_high - e.ci_low > 0
    assert (r.confusion_low <= r.confusion).all() and (r.confusion <= r.confusion_high).all()


# ------------------------------------------------------------------------------------------- gold labels


def test_gold_labels_majority_ties_and_ordinal_median():
    ann = pd.DataFrame({
        "item_id": ["a", "a", "a", "b", "b", "c", "c", "c", "c"],
        "dimension": "d", "annotator": ["r1", "r2", "r3", "r1", "r2", "r1", "r2", "r3", "r4"], "group": "expert",
        "value": [1, 1, 0, 0, 1, 0, 2, 2, 1],
    })
    g = gold_labels(ann, "d", (0, 1, 2), "nominal").set_index("item_id")
    assert g.loc["a", "human"] == 1 and not g.loc["a", "tie"]
    assert np.isnan(g.loc["b", "human"]) and g.loc["b", "tie"]  # 1 vote each: no majority
    assert g.loc["c", "human"] == 2
    o = gold_labels(ann, "d", (0, 1, 2), "ordinal").set_index("item_id")
    # lower median: a {0,1,1} -> 1; b {0,1} -> 0; c {0,1,2,2} -> 1
    assert o["human"].tolist() == [1, 0, 1] and not o["tie"].any()
    with pytest.raises(ValueError, match="row 0"):
        gold_labels(ann.assign(value=[7] + [0] * 8), "d", (0, 1, 2), "nominal")


def test_label_agreement_equals_independent_computation():
    ds, truth = label_dataset(n_docs=20, n_annotators=4, seed=11)  # 4 raters: ties happen
    run = label_run(ds, truth, seed=12, failures=3)
    rep = label_agreement(ds, run, "faithful", n_resamples=0)
    votes = ds.annotations.pivot(index="item_id", columns="annotator", values="value")
    yes = votes.sum(axis=1)
    majority = (yes > 2).astype(float).where(yes != 2)  # 2 of 4: tie, left out
    ok = run.judgments[run.judgments["status"] == "ok"].set_index("item_id")
    judge = pd.Series({i: float(d["p_yes"] / (d["p_yes"] + d["p_no"]) >= 0.5) for i, d in ok["detail"].items()})
    both = majority.dropna().index.intersection(judge.index)
    h, j = majority[both].to_numpy(), judge[both].to_numpy()
    assert rep.ties == int(majority.isna().sum()) and rep.result.n == len(both)
    failed = set(run.judgments.loc[run.judgments["status"] != "ok", "item_id"])
    assert rep.result.dropped == len(failed & set(majority.dropna().index))
    assert rep.result.cohen_kappa.statistic == pytest.approx(cohen_kappa_score(h, j))
    assert rep.result.accuracy.statistic == pytest.approx(accuracy_score(h, j))
    p, r, f, _ = precision_recall_fscore_support(h, j, average="binary", pos_label=1)
    assert (rep.result.precision.statistic, rep.result.recall.statistic, rep.result.f1.statistic) == \
        pytest.approx((p, r, f))
    # per annotator: the judge against rater2 alone
    r2 = votes["rater2"]
    common = judge.index.intersection(r2.index)
    row = rep.per_annotator.set_index("annotator").loc["rater2"]
    assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(r2[common].to_numpy(), judge[common].to_numpy()))
    # calibration: p(yes) renormalised over yes/no, against the majority label
    pyes = pd.Series({i: d["p_yes"] / (d["p_yes"] + d["p_no"]) for i, d in ok["detail"].items()})
    assert rep.calibration.brier.statistic == pytest.approx(brier_score_loss(h, pyes[both].to_numpy()))


def test_failed_judgments_are_counted_not_scored():
    ds, truth = label_dataset(n_docs=10, seed=2)
    run = label_run(ds, truth, seed=3, failures=4)
    rep = label_agreement(ds, run, "faithful", n_resamples=0)
    assert rep.result.dropped == 4 and rep.result.n == len(ds.items) - 4 - rep.ties


# ------------------------------------------------------------------------------------------- calibration


def test_calibration_by_hand_and_against_sklearn():
    y = np.array([0, 0, 1, 1, 1])
    p = np.array([0.1, 0.3, 0.35, 0.8, 0.9])
    c = calibration(y, p, n_resamples=0, n_bins=2)
    # Brier by hand: (0.01 + 0.09 + 0.4225 + 0.04 + 0.01) / 5
    assert c.brier.statistic == pytest.approx((0.01 + 0.09 + 0.4225 + 0.04 + 0.01) / 5)
    # two bins [0, .5) and [.5, 1]: bin 1 = {.1, .3, .35} with 1 positive, bin 2 = {.8, .9} with 2 positives
    ece = 3 / 5 * abs(1 / 3 - 0.25) + 2 / 5 * abs(1.0 - 0.85)
    assert c.ece.statistic == pytest.approx(ece)
    frac, mean = calibration_curve(y, p, n_bins=2)
    np.testing.assert_allclose(c.bins["fraction_positive"], frac)
    np.testing.assert_allclose(c.bins["mean_predicted"], mean)
    assert c.bins["count"].tolist() == [3, 2]


def test_calibration_bootstrap_equals_explicit_resampling():
    rng = np.random.default_rng(0)
    n_docs = 12
    docs = np.repeat(np.arange(n_docs), 3)
    p = rng.random(len(docs))
    y = (rng.random(len(docs)) < p).astype(float)
    c = calibration(y, p, docs, n_resamples=300, random_state=5)
    idx = bootstrap_indices(n_docs, 300, random_state=5)
    briers, eces = [], []
    for b in range(300):
        take = np.concatenate([np.nonzero(docs == d)[0] for d in idx[b]])
        briers.append(brier_score_loss(y[take], p[take]))
        eces.append(calibration(y[take], p[take], n_resamples=0).ece.statistic)
    assert (c.brier.ci_low, c.brier.ci_high) == pytest.approx(tuple(np.quantile(briers, [0.025, 0.975])))
    assert (c.ece.ci_low, c.ece.ci_high) == pytest.approx(tuple(np.quantile(eces, [0.025, 0.975])))


def test_judge_probabilities_from_implicit_and_geval_details():
    binary = Dimension("ok", 0, 1, kind="binary", labels=("no", "yes"))
    ordinal = Dimension("q", 1, 3, kind="ordinal")
    j = pd.DataFrame({"item_id": ["a", "b", "c", "d"], "status": ["ok", "ok", "failed", "ok"],
                      "detail": [{"p_yes": 0.6, "p_no": 0.2}, {"distribution": {"0": 0.25, "1": 0.75}},
                                 {"p_yes": 0.9, "p_no": 0.1}, {}]})
    pb = judge_probabilities(j, binary).set_index("item_id")
    assert pb.loc["a"].tolist() == pytest.approx([0.25, 0.75])  # 0.6 / (0.6 + 0.2)
    assert pb.loc["b"].tolist() == pytest.approx([0.25, 0.75])
    assert list(pb.index) == ["a", "b"]  # failed and detail-less judgments have none
    g = pd.DataFrame({"item_id": ["x", "y"], "status": "ok",
                      "detail": [{"distribution": {"1": 0.2, "2": 0.3, "3": 0.5}},
                                 {"sample_counts": {"3": 3, "1": 1, "unparsed": 2}}]})
    po = judge_probabilities(g, ordinal).set_index("item_id")
    assert po.loc["x"].tolist() == pytest.approx([0.2, 0.3, 0.5])
    assert po.loc["y"].tolist() == pytest.approx([0.25, 0.0, 0.75])


# ------------------------------------------------------------------------------------ alpha at the level


def test_alpha_matches_krippendorffs_published_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 observers x 12 units:
    # nominal alpha = 0.743, interval alpha = 0.849
    nan = np.nan
    data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
    rows = [{"item_id": f"u{u}", "dimension": "d", "annotator": f"o{o}", "group": "g", "value": v}
            for o, r in enumerate(data) for u, v in enumerate(r) if not np.isnan(v)]
    ann = pd.DataFrame(rows)
    assert krippendorff_alpha(ann, "d", level_of_measurement="nominal").statistic == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(ann, "d", level_of_measurement="interval").statistic == pytest.approx(0.849, abs=5e-4)


def test_data_view_alpha_uses_the_dimensions_level():
    import krippendorff

    from evalcore.views.data import agreement_table, dimension_kinds

    ds, _ = label_dataset(kind="binary", seed=6)
    t = agreement_table(ds, n_resamples=0)
    assert t.iloc[0]["level"] == "nominal"
    m = ds.annotations.pivot(index="annotator", columns="item_id", values="value").to_numpy(float)
    assert t.iloc[0]["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=m,
                                                                  level_of_measurement="nominal"))
    od, _ = label_dataset(kind="ordinal", seed=6)
    assert agreement_table(od, n_resamples=0).iloc[0]["level"] == "ordinal"
    k = dimension_kinds(ds).iloc[0]
    assert (k["kind"], k["categories"], k["positive class"]) == ("binary", "fail = 0, pass = 1", "pass")


# ---------------------------------------------------------------------------------------- the model


def test_dimension_kind_validation_and_encoding():
    d = Dimension("v", 0, 2, kind="nominal", labels=["A", "B", "tie"])
    assert d.labels == ("A", "B", "tie") and d.categories == (0.0, 1.0, 2.0) and d.alpha_level == "nominal"
    assert d.encode(["B", " tie ", "a", None, ""]) == pytest.approx([1, 2, 0, np.nan, np.nan], nan_ok=True)
    with pytest.raises(ValueError, match=r"value 'C' at position 1 is not one of its categories"):
        d.encode(["A", "C"])
    assert Dimension("x", 1, 5).kind == "interval" and Dimension("x", 1, 5).categories == ()
    assert Dimension("x", 1, 5, kind="ordinal").categories == (1, 2, 3, 4, 5)
    assert Dimension("b", 0, 1, kind="binary").encode(["1", 0, "0.0"]) == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="kind must be one of interval, ordinal, binary, nominal, not 'likert'"):
        Dimension("x", 1, 5, kind="likert")
    with pytest.raises(ValueError, match="binary dimension has 2 labels"):
        Dimension("x", 0, 2, kind="binary", labels=("a", "b", "c"))
    with pytest.raises(ValueError, match="scale must be 0-1"):
        Dimension("x", 1, 2, kind="binary", labels=("no", "yes"))
    with pytest.raises(ValueError, match="need a categorical kind"):
        Dimension("x", 0, 1, labels=("no", "yes"))


def test_labels_from_values_orders_binary_negative_first():
    assert labels_from_values(["pass", "fail", "pass"], "binary") == ("fail", "pass")
    assert labels_from_values(["Yes", "No"], "binary") == ("No", "Yes")
    assert labels_from_values(["1", "0"], "binary") == ("0", "1")
    assert labels_from_values(["tie", "B", "A", None], "nominal") == ("A", "B", "tie")
    with pytest.raises(ValueError, match="exactly 2 distinct values, found 3"):
        labels_from_values(["a", "b", "c"], "binary")


def test_store_saves_and_loads_kind_and_labels(tmp_path):
    from evalcore.datasets import DATASET_IDS, load_dataset
    from evalcore.store import Store

    store = Store(tmp_path / "s.db")
    ds, _ = save_label_example(store, kind="nominal")
    assert ds.dimensions[0].kind == "nominal" and ds.dimensions[0].labels == ("A", "B", "tie")
    # a store written before label kinds: dimensions without "kind" load as interval
    store.conn.execute("UPDATE datasets SET dimensions = ? WHERE id = ?",
                       (json.dumps([{"name": "faithful", "scale_min": 0, "scale_max": 2, "description": ""}]), ds.id))
    assert store.load_dataset(ds.id).dimensions[0].kind == "interval"
    for did in DATASET_IDS:  # the bundled datasets are Likert ratings
        assert {d.kind for d in load_dataset(did).dimensions} == {"interval"}


# ---------------------------------------------------------------------------------------------- the CLI


def test_meta_json_agreement_block(tmp_path):
    from evalcore.store import Store

    db = tmp_path / "s.db"
    ds, run = save_label_example(Store(db), kind="binary", seed=21)
    env = {**__import__("os").environ, "EVALCORE_DB": str(db)}
    out = subprocess.run([sys.executable, "-m", "evalcore", "meta", "--dataset", ds.id, "--run", run.run_id,
                          "--resamples", "100", "--json"], cwd=REPO, env=env, capture_output=True, text=True,
                         check=True)
    a = json.loads(out.stdout)["dimensions"]["faithful"]["agreement"]
    lib = agreement_dict(label_agreement(ds, run, "faithful", n_resamples=100))
    for key in ("cohen_kappa", "accuracy", "precision", "recall", "f1"):
        assert set(a[key]) == {"statistic", "ci_low", "ci_high"}
        assert a[key]["statistic"] == pytest.approx(lib[key]["statistic"])
        assert a[key]["ci_low"] <= a[key]["statistic"] <= a[key]["ci_high"]
    assert "weighted_kappa" not in a  # ordinal only
    assert a["confusion_matrix"]["statistic"] == lib["confusion_matrix"]["statistic"]
    assert set(a["confusion_matrix"]) >= {"statistic", "ci_low", "ci_high", "labels"}
    assert a["labels"] == ["fail", "pass"] and a["positive"] == "pass"
    assert set(a["calibration"]) >= {"brier", "ece", "bins"} and a["calibration"]["brier"]["statistic"] > 0
    assert a["human_alpha"]["level"] == "nominal"
    text = subprocess.run([sys.executable, "-m", "evalcore", "meta", "--dataset", ds.id, "--run", run.run_id,
                           "--resamples", "50"], cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout
    assert "cohen_kappa" in text and "confusion (rows human, columns judge)" in text


def test_meta_json_ordinal_has_weighted_kappa_and_interval_has_no_agreement(tmp_path):
    from evalcore.cli import meta_report
    from evalcore.store import Store

    store = Store(os.environ["EVALCORE_DB"])  # the default store: each test's own (tests/conftest.py)
    ds, run = save_label_example(store, kind="ordinal", seed=8)
    rep = meta_report(ds.id, run.run_id, n_resamples=100)
    a = rep["dimensions"]["faithful"]["agreement"]
    assert a["weighted_kappa"]["statistic"] == pytest.approx(
        cohen_kappa_score(*_ordinal_gold_and_judge(ds, run), weights="quadratic"))
    assert "calibration" not in a  # the synthetic ordinal judge gives no probabilities
    summeval = meta_report("summeval", "summeval/shen-gpt-4-0314-rts", dimensions=["coherence"], n_resamples=0,
                           levels=("dataset",), coefficients=("spearman",))
    assert "agreement" not in summeval["dimensions"]["coherence"]


def _ordinal_gold_and_judge(ds, run):
    votes = ds.annotations.pivot(index="item_id", columns="annotator", values="value")
    gold = votes.apply(lambda r: sorted(r)[(len(r) - 1) // 2], axis=1)  # lower median
    judge = run.judgments.set_index("item_id")["value"]
    return gold.to_numpy(), judge[gold.index].to_numpy()


# ------------------------------------------------------------------------------------------ properties

labels_st = hst.integers(2, 5).flatmap(
    lambda k: hst.tuples(hst.just(k), hst.lists(hst.tuples(hst.integers(0, k - 1), hst.integers(0, k - 1)),
                                                min_size=2, max_size=60)))


@settings(max_examples=60, deadline=None)
@given(labels_st)
def test_kappa_properties(data):
    k, pairs = data
    h, j = map(np.array, zip(*pairs))
    kind = "binary" if k == 2 else "ordinal"
    r = classify(frame(h, j), categories=range(k), kind=kind, n_resamples=0)
    same = classify(frame(h, h), categories=range(k), kind=kind, n_resamples=0)
    flipped = classify(frame(j, h), categories=range(k), kind=kind, n_resamples=0)
    kappa = r.cohen_kappa.statistic
    if len(np.unique(h)) > 1:
        assert same.cohen_kappa.statistic == pytest.approx(1.0)  # identical labels agree perfectly
        assert same.accuracy.statistic == 1.0
    if not np.isnan(kappa):
        assert -1 - 1e-12 <= kappa <= 1 + 1e-12
        assert kappa <= r.accuracy.statistic + 1e-12 or r.accuracy.statistic == 1  # chance-corrected: never above
        assert flipped.cohen_kappa.statistic == pytest.approx(kappa)  # symmetric in judge and human
    wk = r.weighted_kappa
    if wk is not None and not np.isnan(wk.statistic):
        assert -1 - 1e-12 <= wk.statistic <= 1 + 1e-12
        assert flipped.weighted_kappa.statistic == pytest.approx(wk.statistic)
    assert 0 <= r.accuracy.statistic <= 1
    assert r.confusion.sum() == len(h) and np.trace(r.confusion) == (h == j).sum()
    for e in (r.precision, r.recall, r.f1):
        assert np.isnan(e.statistic) or 0 <= e.statistic <= 1
    # the vectorised formula agrees with scikit-learn everywhere
    mine = stats_from_confusion(r.confusion, average=r.average)
    ref = sklearn_statistics(h, j, k, average=r.average)
    for s in STATISTICS:
        np.testing.assert_allclose(mine[s][0], ref[s], rtol=1e-9, atol=1e-12, equal_nan=True)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=hst.integers(0, 10_000), accuracy=hst.floats(0.55, 0.95), kind=hst.sampled_from(["binary", "nominal"]))
def test_interval_contains_estimate_in_typical_cases(seed, accuracy, kind):
    ds, truth = label_dataset(kind=kind, n_docs=40, seed=seed)
    run = label_run(ds, truth, seed=seed + 1, judge_accuracy=accuracy)
    r = label_agreement(ds, run, "faithful", n_resamples=300, random_state=seed).result
    for name in ("cohen_kappa", "accuracy"):
        e = getattr(r, name)
        assert e.ci_low <= e.statistic <= e.ci_high, (name, e)


@settings(max_examples=100, deadline=None)
@given(hst.lists(hst.tuples(hst.integers(0, 1), hst.floats(0, 1)), min_size=1, max_size=80))
def test_calibration_properties(rows):
    y, p = map(np.array, zip(*rows))
    c = calibration(y, p, n_resamples=0)
    assert 0 <= c.brier.statistic <= 1 and 0 <= c.ece.statistic <= 1
    assert c.bins["count"].sum() == len(y)
    perfect = calibration(y, y.astype(float), n_resamples=0)
    assert perfect.brier.statistic == 0 and perfect.ece.statistic == 0


@settings(max_examples=60, deadline=None)
@given(hst.lists(hst.sampled_from(["A", "B", "tie"]), min_size=1, max_size=30))
def test_encode_round_trips(values):
    d = Dimension("v", 0, 2, kind="nominal", labels=("A", "B", "tie"))
    codes = d.encode(values)
    assert [d.category_names[int(c)] for c in codes] == values


def test_geval_distribution_on_a_binary_dimension_gives_labels_and_calibration():
    ds, truth = label_dataset(n_docs=12, seed=30)
    rng = np.random.default_rng(31)
    p1 = np.clip(np.where(truth == 1, 0.7, 0.3) + rng.normal(0, 0.2, len(truth)), 0.01, 0.99)
    rows = [{"item_id": i, "dimension": "faithful", "raw": "", "value": float(p), "status": "ok", "reason": "",
             "estimator": "logprob-weighted", "detail": {"distribution": {"0": 1 - p, "1": p}}}
            for i, p in zip(ds.items["item_id"], p1)]
    from evalcore.model import Run

    run = Run(run_id="g", dataset_id=ds.id, method="geval", model="m", judgments=pd.DataFrame(rows))
    rep = label_agreement(ds, run, "faithful", n_resamples=0)
    votes = ds.annotations.pivot(index="item_id", columns="annotator", values="value")
    human = (votes.sum(axis=1) >= 2).astype(int)
    p = pd.Series(p1, index=ds.items["item_id"])[human.index]
    assert rep.result.cohen_kappa.statistic == pytest.approx(cohen_kappa_score(human, (p >= 0.5).astype(int)))
    assert rep.calibration.target == "positive class"
    assert rep.calibration.brier.statistic == pytest.approx(brier_score_loss(human, p))


def test_html_report_has_the_label_section():
    from evalcore.views.report import AnalysisParams, analysis_report

    ds, truth = label_dataset(n_docs=8, seed=40)
    run = label_run(ds, truth, seed=41)
    html = analysis_report(ds, [run], AnalysisParams(dataset_id=ds.id, run_ids=[run.run_id], dimension="faithful",
                                                     n_resamples=20))
    assert "Agreement on binary labels: faithful" in html
    assert "Confusion matrix: synthetic judge" in html and "Reliability diagram" in html
    rep = label_agreement(ds, run, "faithful", n_resamples=0)
    from evalcore.views.html_report import format_cell

    assert f"<td>{format_cell(rep.result.cohen_kappa.statistic)}</td>" in html.replace(' class="num"', "")


def test_cli_alpha_equals_the_data_pages_alpha():
    from evalcore.views.data import agreement_table

    ds, truth = label_dataset(kind="ordinal", seed=50)
    run = label_run(ds, truth, seed=51)
    a = label_agreement(ds, run, "faithful", n_resamples=60).human_alpha
    b = agreement_table(ds, n_resamples=60).iloc[0]
    assert a["level"] == b["level"] == "ordinal"
    assert (a["statistic"], a["ci_low"], a["ci_high"]) == (b["alpha"], b["ci_low"], b["ci_high"])
    assert label_agreement(ds, run, "faithful", n_resamples=0, human_alpha=False).human_alpha is None


def test_nominal_distribution_gives_argmax_labels_and_top_label_calibration():
    from evalcore.model import Run

    ds, truth = label_dataset(kind="nominal", n_docs=15, seed=60)
    rng = np.random.default_rng(61)
    dists = rng.dirichlet([1, 1, 1], len(truth))
    dists[np.arange(len(truth)), truth] += 0.8  # mostly right
    dists /= dists.sum(axis=1, keepdims=True)
    rows = [{"item_id": i, "dimension": "faithful", "raw": "", "value": float(d @ [0, 1, 2]), "status": "ok",
             "reason": "", "estimator": "logprob-weighted",
             "detail": {"distribution": {"0": d[0], "1": d[1], "2": d[2]}}}
            for i, d in zip(ds.items["item_id"], dists)]
    run = Run(run_id="g", dataset_id=ds.id, method="geval", model="m", judgments=pd.DataFrame(rows))
    rep = label_agreement(ds, run, "faithful", n_resamples=0)
    votes = ds.annotations.pivot(index="item_id", columns="annotator", values="value")
    top = votes.apply(lambda r: r.value_counts(), axis=1).fillna(0)
    tie = (top.eq(top.max(axis=1), axis=0)).sum(axis=1) > 1
    human = top.idxmax(axis=1)[~tie].astype(int)
    d = pd.DataFrame(dists, index=ds.items["item_id"]).loc[human.index].to_numpy()
    choice = d.argmax(axis=1)  # the expected value of a nominal code means nothing: the most probable label
    assert rep.ties == int(tie.sum())
    assert rep.result.cohen_kappa.statistic == pytest.approx(cohen_kappa_score(human, choice))
    assert rep.calibration.target == "top label"
    assert rep.calibration.brier.statistic == pytest.approx(
        brier_score_loss((choice == human.to_numpy()).astype(int), d.max(axis=1)))


def test_human_means_round_to_the_majority_and_halfway_is_a_tie():
    # binary human means of three or two votes: 1/3 -> fail, 2/3 -> pass, 1/2 -> no majority (left out)
    f = frame([0, 1 / 3, 2 / 3, 1, 0.5], [0, 0, 1, 1, 1])
    r = classify(f, categories=(0, 1), kind="binary", n_resamples=0)
    assert (r.n, r.human_rounded, r.human_ties) == (4, 2, 0 + 1)
    assert r.confusion.tolist() == [[2, 0], [0, 2]]
    with pytest.raises(ValueError, match="row 1 is 0.5, which is no category"):
        classify(frame([0, 0.5], [0, 1]), categories=(0, 1, 2), kind="nominal", n_resamples=0)
    with pytest.raises(ValueError, match="row 0 is 7, which is no category"):
        classify(frame([7, 1], [0, 1]), categories=(1, 2, 3), kind="ordinal", n_resamples=0)


def test_meta_report_names_a_bad_label_instead_of_crashing(tmp_path):
    from evalcore.cli import meta_report
    from evalcore.store import Store

    store = Store(os.environ["EVALCORE_DB"])  # the default store: each test's own (tests/conftest.py)
    ds, truth = label_dataset(seed=70, dataset_id="user-bad")
    ds.annotations.loc[5, "value"] = 4.0  # no category of a fail/pass dimension
    store.save_dataset(ds)
    run = label_run(ds, truth, seed=71)
    store.create_run(run_id=run.run_id, dataset_id=ds.id, method="implicit", model="m")
    for row in run.judgments.to_dict(orient="records"):
        store.save_judgment(run.run_id, row)
    rep = meta_report(ds.id, run.run_id, n_resamples=0, levels=("dataset",), coefficients=("pearson",))
    assert rep["dimensions"]["faithful"]["agreement"] == {
        "error": "annotations: row 5 (annotator 'rater1', item 'doc01-sys2', dimension 'faithful') holds 4, which "
                 "is no category (0, 1)"}
    assert rep["dimensions"]["faithful"]["correlations"]


def test_graded_binary_values_are_read_as_probabilities():
    from evalcore.model import Run

    ds, truth = label_dataset(n_docs=10, seed=80)
    rng = np.random.default_rng(81)
    p = np.clip(np.where(truth == 1, 0.75, 0.3) + rng.normal(0, 0.15, len(truth)), 0, 1)
    rows = pd.DataFrame({"item_id": ds.items["item_id"], "dimension": "faithful", "raw": "", "value": p,
                         "status": "ok", "reason": "", "estimator": "imported"})  # no detail column at all
    run = Run(run_id="clf", dataset_id=ds.id, method="imported", model="classifier", judgments=rows)
    rep = label_agreement(ds, run, "faithful", n_resamples=0)
    votes = ds.annotations.pivot(index="item_id", columns="annotator", values="value")
    human = (votes.sum(axis=1) >= 2).astype(int)
    pp = pd.Series(p, index=ds.items["item_id"])[human.index]
    assert rep.result.cohen_kappa.statistic == pytest.approx(cohen_kappa_score(human, (pp >= 0.5).astype(int)))
    assert rep.calibration.brier.statistic == pytest.approx(brier_score_loss(human, pp))
    # a judge that only says 0 or 1 gives labels, not probabilities
    hard = Run(run_id="h", dataset_id=ds.id, method="imported", model="m",
               judgments=rows.assign(value=(p >= 0.5).astype(float)))
    assert label_agreement(ds, hard, "faithful", n_resamples=0).calibration is None


def test_without_annotators_the_gold_is_human_scores():
    from evalcore.model import ANNOTATION_COLUMNS

    ds, truth = label_dataset(n_docs=10, seed=90)
    run = label_run(ds, truth, seed=91)
    ds.annotations = pd.DataFrame(columns=ANNOTATION_COLUMNS)
    rep = label_agreement(ds, run, "faithful", n_resamples=0)
    assert rep.gold == "human_scores" and rep.per_annotator.empty and rep.human_alpha is None
    h = ds.human_scores.set_index("item_id")["score"]
    j = run.judgments.set_index("item_id")["detail"].map(lambda d: float(d["p_yes"] >= 0.5))
    assert rep.result.cohen_kappa.statistic == pytest.approx(cohen_kappa_score(h, j[h.index]))
