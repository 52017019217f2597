"""One result type (evalcore.meta.results.Estimate) for every statistic, and the public argument checks
(evalcore.meta.validation): the values each statistic returns are checked against scipy / scikit-learn /
krippendorff or by hand, and each --json block keeps its documented keys."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
from scipy import stats as sps
import pandas as pd
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hst
from sklearn.metrics import cohen_kappa_score

from evalcore.meta import correlation as corr
from evalcore.meta import ppi, preference
from evalcore.meta.agreement import krippendorff_alpha
from evalcore.meta.classification import ESTIMATE_KEYS, agreement_dict, classify
from evalcore.meta.results import Estimate, missing, to_dict
from evalcore.meta.validation import check_choice, check_confidence_level, check_n_resamples

RNG = np.random.default_rng(3)
FRAME = pd.DataFrame({"item_id": [f"i{k}" for k in range(40)], "doc_id": [f"d{k // 4}" for k in range(40)],
                      "system_id": [f"s{k % 4}" for k in range(40)], "judge": RNG.integers(1, 6, 40).astype(float),
                      "human": RNG.integers(1, 6, 40).astype(float)})


def test_correlate_returns_an_estimate_with_scipy_point_and_the_table_row():
    r = corr.correlate(FRAME, level="dataset", coefficient="spearman", n_resamples=50)
    assert isinstance(r, Estimate)
    assert r.statistic == pytest.approx(st.spearmanr(FRAME["judge"], FRAME["human"]).statistic, abs=1e-12)
    assert (r.n, r.dropped, r.skipped, r.n_resamples, r.resampling) == (40, 0, 0, 50, "documents")
    assert r.ci_low <= r.statistic <= r.ci_high and r.method in ("bca", "percentile")
    row = corr.correlation_table(FRAME, levels=("dataset",), coefficients=("spearman",), n_resamples=50).iloc[0]
    assert list(row.index) == list(corr.TABLE_COLUMNS)
    assert (row.statistic, row.ci_low, row.ci_high, row.ci_method, row.level, row.coefficient) == (
        r.statistic, r.ci_low, r.ci_high, r.method, "dataset", "spearman")


def test_krippendorff_alpha_is_an_estimate_over_items():
    values = RNG.integers(1, 6, size=(3, 12)).astype(float)
    ann = pd.DataFrame([{"item_id": f"i{j}", "dimension": "d", "annotator": f"a{i}", "group": "g", "value": v}
                        for i, row in enumerate(values) for j, v in enumerate(row)])
    r = krippendorff_alpha(ann, "d")
    assert isinstance(r, Estimate)
    assert r.statistic == pytest.approx(krippendorff.alpha(reliability_data=values, level_of_measurement="interval"),
                                        abs=1e-9)
    assert (r.n, r.n_annotators) == (12, 3)
    assert not hasattr(r, "alpha")  # one vocabulary: the statistic is `statistic`, whatever it measures


def test_classification_estimates_and_their_json_keys():
    f = FRAME.assign(judge=(FRAME["judge"] > 3).astype(float), human=(FRAME["human"] > 3).astype(float))
    res = classify(f, categories=[0.0, 1.0], kind="binary", n_resamples=30)
    assert all(isinstance(e, Estimate) for e in res.estimates().values())
    assert res.cohen_kappa.statistic == pytest.approx(cohen_kappa_score(f["human"], f["judge"]), abs=1e-12)
    assert res.cohen_kappa.n == 40
    assert set(res.cohen_kappa.as_dict(*ESTIMATE_KEYS)) == {"statistic", "ci_low", "ci_high"}


def test_a_preference_figure_is_an_estimate_written_with_its_documented_keys():
    docs = ["d1", "d1", "d2", "d3", "d3"]
    e = preference.ratio_stat(docs, [1, 0, 1, 1, 0], n_resamples=40)
    assert isinstance(e, Estimate) and e.statistic == pytest.approx(3 / 5) and e.n == 5
    assert (e.method, e.resampling) == ("percentile", "documents")
    assert list(preference.stat_dict(e)) == ["statistic", "ci_low", "ci_high", "n"]
    gone = preference.no_figure(4, "no readable verdict")
    assert preference.stat_dict(gone) == {"statistic": None, "ci_low": None, "ci_high": None, "n": 4,
                                          "reason": "no readable verdict"}
    assert gone.note == "no readable verdict"
    nested = preference.to_json({"per_model": [{"model": "m1", "win": e}]})
    assert nested["per_model"][0]["win"]["statistic"] == pytest.approx(3 / 5)


def test_ppi_classical_mean_is_an_estimate():
    x = np.array([1.0, 2.0, 4.0, 5.0])
    e = ppi._mean_estimate(x, None, 0.95, None)
    assert isinstance(e, Estimate) and e.statistic == 3.0 and e.n == 4
    half = sps.t.ppf(0.975, 3) * np.std(x, ddof=1) / 2  # four items: Student t, as every PPI interval below 30
    assert (e.ci_low, e.ci_high) == (pytest.approx(3 - half), pytest.approx(3 + half))
    assert to_dict(e, ppi.MEAN_KEYS) == {"estimate": 3.0, "ci_low": pytest.approx(3 - half), "ci_high": pytest.approx(3 + half),
                                "n": 4}


def test_as_dict_names_fields_in_order_and_writes_missing_as_none():
    e = Estimate(np.float64(0.25), math.nan, 0.5, n=3, notes=("a", "b"))
    assert list(e.as_dict()) == [f for f in Estimate.__dataclass_fields__]
    assert e.as_dict("n", "statistic") == {"n": 3, "statistic": 0.25}
    d = e.as_dict("statistic", "ci_low", "notes", missing_as_none=True)
    assert d == {"statistic": 0.25, "ci_low": None, "notes": ["a", "b"]} and type(d["statistic"]) is float
    assert e.note == "a; b"
    gone = missing(2, "why")
    assert math.isnan(gone.statistic) and (gone.n, gone.notes) == (2, ("why",))


def test_agreement_dict_keeps_its_keys():
    f = FRAME.assign(judge=(FRAME["judge"] > 3).astype(float), human=(FRAME["human"] > 3).astype(float))
    from evalcore.meta.classification import LabelAgreement

    rep = LabelAgreement(dimension="d", kind="binary", labels=("no", "yes"), positive="yes", gold="human_scores",
                         ties=0, result=classify(f, categories=[0.0, 1.0], kind="binary", n_resamples=0),
                         per_annotator=pd.DataFrame(), human_alpha=None, calibration=None)
    assert agreement_dict(rep)["cohen_kappa"].keys() == {"statistic", "ci_low", "ci_high"}


@settings(max_examples=60, deadline=None)
@given(hst.lists(hst.text(min_size=1, max_size=5), min_size=1, max_size=6, unique=True), hst.text(max_size=5))
def test_check_choice_accepts_exactly_the_choices(choices, value):
    for c in choices:
        check_choice(c, tuple(choices), "thing")
    if value not in choices:
        with pytest.raises(ValueError, match=r"unknown thing .*choose one of"):
            check_choice(value, tuple(choices), "thing")


def test_numeric_checks_name_the_argument():
    check_n_resamples(0)
    check_confidence_level(0.9)
    with pytest.raises(ValueError, match="n_resamples must be >= 0, got -1"):
        check_n_resamples(-1)
    for bad in (0, 1, 1.5):
        with pytest.raises(ValueError, match="confidence_level must be between 0 and 1"):
            check_confidence_level(bad)
    with pytest.raises(ValueError, match="unknown level 'item'"):
        corr.correlate(FRAME, level="item")


# ----------------------------------------------------------------------- one serialiser, one percentile interval


def test_to_json_writes_estimates_numpy_and_missing_numbers_as_json_holds_them():
    import json

    from evalcore.meta.results import Estimate, none_if_missing, to_json

    e = Estimate(0.5, float("nan"), 0.9, n=3, notes=("a",))
    doc = to_json({"e": e, "xs": (np.float64(1.5), np.int64(2), float("inf"), None), "flag": np.bool_(True)})
    assert doc["e"] == {**e.as_dict(), "ci_low": None, "notes": ["a"]}
    assert doc["xs"] == [1.5, 2, None, None] and type(doc["xs"][1]) is int and doc["flag"] is True
    json.dumps(doc, allow_nan=False)  # nothing left that JSON cannot hold
    assert [none_if_missing(x) for x in (None, float("nan"), -float("inf"), np.float32(0.25), 3)] == [
        None, None, None, 0.25, 3.0]


@settings(max_examples=50, deadline=None)
@given(hst.lists(hst.one_of(hst.floats(-1e6, 1e6), hst.just(float("nan")), hst.just(float("inf"))), max_size=40),
       hst.floats(0.5, 0.99))
def test_percentile_ends_are_numpys_percentiles_of_the_finite_values(values, level):
    from evalcore.meta.intervals import percentile_ends, tail_percent

    x = np.array(values, dtype=float)
    a = tail_percent(level)
    lo, hi = percentile_ends(x, a, 100 - a)
    finite = x[np.isfinite(x)]
    if len(finite) == 0:
        assert math.isnan(lo) and math.isnan(hi)
    else:
        assert (lo, hi) == tuple(float(v) for v in np.percentile(finite, [a, 100 - a]))
        assert lo <= hi


# ----------------------------------------------------------------------- composite results through one serialiser

NAN = float("nan")


def _composites():
    """One of each composite result, built by hand, with the keys ``meta --json`` / ``plan --json`` document for
    it (README), in order."""
    from evalcore.meta import alt_test, bradley_terry as bt, planning

    e = Estimate(0.5, 0.25, 0.75, n=10)
    score = bt.Score("m1", Estimate(1010.0, NAN, 1020.0, n=7))
    length = bt.LengthEffect(Estimate(0.3, 0.1, 0.5, n=9), (score,))
    ranking = bt.Ranking("human", (score,), 9, 1, 0, 0, "", length)
    pair = bt.PairSeparation("m1", "m2", True, False, 0.9, NAN)
    system = ppi.SystemEstimate("s1", e, 0.4, 10, 30, Estimate(0.6, 0.5, 0.7, n=10), Estimate(0.55, NAN, NAN, n=40),
                                end_share=NAN)
    annotator = alt_test.AnnotatorTest("a", Estimate(1.5, n=31, pvalue=NAN, pvalue_method="t-test"), 0.8, 0.7, True)
    return [
        (score, ["model", "score", "ci_low", "ci_high", "n_battles"]),
        (length, ["coefficient", "ci_low", "ci_high", "controlled_scores"]),
        (ranking, ["source", "scores", "n_battles", "ties", "self_battles", "dropped_resamples", "problem", "length"]),
        (pair, ["model_a", "model_b", "human_separated", "judge_separated", "human_share_a_above",
                "judge_share_a_above"]),
        (bt.RankingComparison(ranking, ranking, 0.5, NAN, 3, (pair,), 100),
         ["scale", "ties", "resampling", "n_resamples", "human", "judge", "kendall_tau", "spearman_rho", "n_models",
          "pairs"]),
        (system, ["system", "estimate", "ci_low", "ci_high", "lambda", "n_labelled", "n_unlabelled", "human_only",
                  "judge_only", "interval", "rated_documents", "spread_floored", "clustered", "share_at_scale_end",
                  "effective_labels", "label_saving", "saving_note"]),
        (ppi.Difference("s1", "s2", e), ["system_a", "system_b", "estimate", "ci_low", "ci_high"]),
        (ppi.Rank("s1", 1, 1.0, NAN), ["system", "rank", "rank_low", "rank_high"]),
        (ppi.PPIResult("ppi++", 0.95, (system,), (), (), 50, 0),
         ["method", "confidence_level", "per_system", "differences", "ranking", "n_resamples", "lambda_in_resamples",
          "judge_failed"]),
        (ppi.PlanRow("s1", 40, 30, None, NAN), ["system", "n_documents", "human_only", "ppi", "lambda"]),
        (annotator, ["annotator", "n", "test", "statistic", "p_value", "advantage_probability", "annotator_advantage",
                     "rejected"]),
        (alt_test.AltTestResult(0.2, "accuracy", 0.05, 1.0, 0.8, True, 2, 0, 40, (annotator,), skipped=(("b", 3),)),
         ["epsilon", "scoring", "q", "winning_rate", "advantage_probability", "passed", "dropped_items",
          "items_without_judge", "n_items", "per_annotator", "small_sample", "min_items", "skipped"]),
        (planning.PlanResult(Estimate(0.4, 0.3, 0.5, n=50, method="fisher"), 0.1, 200, 0.05, "spearman", 0.95, 0.95,
                             0.35),
         ["n_now", "statistic", "ci_low", "ci_high", "half_width_now", "n_needed", "target_half_width", "coefficient",
          "confidence", "assurance", "planning_value", "method"]),
    ]


def test_every_composite_result_is_written_by_the_one_serialiser_with_its_documented_keys():
    import json

    from evalcore.meta.results import to_dict

    for result, keys in _composites():
        d = to_dict(result)
        assert list(d) == keys, type(result).__name__
        json.dumps(d, allow_nan=False)  # a missing number is null, never NaN


def test_composite_values_are_read_from_their_estimates_missing_as_null():
    from evalcore.meta.results import to_dict

    by_type = {type(r).__name__: to_dict(r) for r, _ in _composites()}
    assert by_type["Score"] == {"model": "m1", "score": 1010.0, "ci_low": None, "ci_high": 1020.0, "n_battles": 7}
    s = by_type["SystemEstimate"]
    assert (s["estimate"], s["lambda"], s["share_at_scale_end"]) == (0.5, 0.4, None)
    assert s["human_only"] == {"estimate": 0.6, "ci_low": 0.5, "ci_high": 0.7, "n": 10}  # ppi.MEAN_KEYS only
    assert s["judge_only"] == {"estimate": 0.55, "ci_low": None, "ci_high": None, "n": 40}
    assert s["effective_labels"] == pytest.approx(10 * (0.2 / 0.5) ** 2) and s["spread_floored"] is False
    a = by_type["AltTestResult"]
    assert a["per_annotator"][0]["p_value"] is None and a["per_annotator"][0]["test"] == "t-test"
    assert (a["min_items"], a["skipped"]) == (30, [{"annotator": "b", "n": 3}])
    assert by_type["PPIResult"]["lambda_in_resamples"] == "re-estimated"
    assert by_type["RankingComparison"]["human"]["length"]["controlled_scores"][0]["model"] == "m1"
    assert by_type["PlanResult"]["n_now"] == 50 and by_type["PlanResult"]["method"] == "fisher"


def test_to_json_walks_other_dataclasses_writes_keys_as_json_does_and_refuses_what_json_cannot_hold():
    import json
    from dataclasses import dataclass

    from evalcore.meta.results import to_json

    @dataclass
    class Plain:
        a: float
        b: tuple[int, ...]

    assert to_json(Plain(NAN, (1, 2))) == {"a": None, "b": [1, 2]}
    assert json.dumps(to_json({1: "x", 2.5: "y", None: "z"})) == json.dumps({1: "x", 2.5: "y", None: "z"})
    with pytest.raises(TypeError, match="no JSON form"):
        to_json({"x": object()})


def test_no_result_of_the_statistics_writes_itself():
    """One serialiser: no class of evalcore.meta keeps its own ``as_dict`` (Estimate's field view aside), and the
    package's NaN-to-None rule is none_if_missing alone."""
    import inspect
    import pkgutil
    from importlib import import_module

    import evalcore.meta as meta_pkg

    own = []
    for info in pkgutil.iter_modules(meta_pkg.__path__):
        module = import_module(f"evalcore.meta.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and cls is not Estimate and "as_dict" in vars(cls):
                own.append(f"{info.name}.{name}")
    assert own == []
