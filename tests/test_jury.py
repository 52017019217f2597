"""Juries (evalcore.jury): each aggregate and tie rule by hand, calibrated weights by a second method, and the
refusals a jury owes (one member, members that share no dimension)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import lsq_linear

from evalcore import jury

X = np.array([[1, 2, 2, 5], [3, 3, 1, 1], [4, np.nan, np.nan, 2], [np.nan] * 4], dtype=float)


def test_each_aggregate_by_hand():
    assert jury.aggregate(X, "mean")[:3].tolist() == [2.5, 2.0, 3.0] and math.isnan(jury.aggregate(X, "mean")[3])
    assert jury.aggregate(X, "median")[:3].tolist() == [2.0, 2.0, 3.0]
    assert jury.aggregate(X, "trimmed")[:3].tolist() == [2.0, 2.0, 3.0]  # [2, 2], [1, 3], two members: their mean


def test_majority_and_its_tie_rules():
    assert jury.aggregate(X, "majority", tie="low")[:3].tolist() == [2.0, 1.0, 2.0]
    assert jury.aggregate(X, "majority", tie="high")[:3].tolist() == [2.0, 3.0, 4.0]
    assert jury.aggregate(X, "majority", tie="first")[:3].tolist() == [2.0, 3.0, 4.0]
    assert math.isnan(jury.aggregate(X, "majority")[3])


def test_weights_left_out_where_a_member_did_not_score():
    w = np.array([0.5, 0.25, 0.25, 0.0])
    got = jury.aggregate(X, "mean", weights=w)
    assert got[0] == pytest.approx(0.5 * 1 + 0.25 * 2 + 0.25 * 2) and got[2] == pytest.approx(4.0)


def test_learned_weights_equal_a_bounded_least_squares_on_centred_values():
    rng = np.random.default_rng(0)
    h = rng.normal(size=200)
    M = np.column_stack([h + rng.normal(size=200) * s for s in (0.3, 1.0, 5.0)]) + np.array([1.0, -2.0, 0.5])
    w = jury.learn_weights(M, h)
    ref = lsq_linear(M - M.mean(axis=0), h - h.mean(), bounds=(0, np.inf)).x
    assert w == pytest.approx(ref / ref.sum(), abs=1e-6) and w[0] > w[1] > w[2] >= 0


def test_a_jury_needs_two_different_members_and_calibration_documents():
    with pytest.raises(ValueError, match="two or more different runs"):
        jury.JurySpec(("a",)).check()
    with pytest.raises(ValueError, match="calibration-docs"):
        jury.JurySpec(("a", "b"), weights="calibrated").check()
    with pytest.raises(ValueError, match="unknown tie rule"):
        jury.JurySpec(("a", "b"), tie="coin").check()


def test_agreement_matrix_on_a_label_is_cohens_kappa_as_scikit_learn_counts_it():
    from sklearn.metrics import cohen_kappa_score

    from evalcore.testing.labels import label_dataset, label_run

    ds, truth = label_dataset(kind="nominal", n_docs=30, seed=4)
    a = label_run(ds, truth, seed=5, run_id="x/a")
    b = label_run(ds, truth, seed=6, run_id="x/b", judge_accuracy=0.5)
    assert jury.agreement_measure(ds, "faithful", "spearman") == "cohen_kappa"
    matrix, humans = jury.agreement_matrix(ds, [a, b], "faithful", n_resamples=50)
    va = a.judgments["value"].to_numpy()
    vb = b.judgments["value"].to_numpy()
    assert matrix[0][1].statistic == pytest.approx(cohen_kappa_score(va, vb), abs=1e-12)
    assert matrix[1][0].statistic == pytest.approx(matrix[0][1].statistic, abs=1e-12) and matrix[0][0].statistic == 1
    human = ds.human_scores["score"].to_numpy()
    assert humans[1].statistic == pytest.approx(cohen_kappa_score(vb, human), abs=1e-12)
    assert humans[0].ci_low < humans[0].statistic < humans[0].ci_high
