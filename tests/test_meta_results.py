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
from evalcore.meta.results import Estimate, missing
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
    assert ppi.mean_dict(e) == {"estimate": 3.0, "ci_low": pytest.approx(3 - half), "ci_high": pytest.approx(3 + half),
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
