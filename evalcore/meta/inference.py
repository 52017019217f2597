"""Small-n inference for correlations: permutation p-values, the boot-both interval at the system level, and the
warnings a figure owes its reader when it rests on few documents or systems.

Why a permutation p-value: at the system level n is the number of systems (4 to 16 in the bundled data). scipy's
default p-values for Pearson and Spearman come from a t approximation, which at n = 4 gives "p = 0" for a perfect
ranking while the exact two-sided minimum is 2 / 4! = 1/12 (no ranking of 4 systems can be rarer than the identity
and its reverse). Below ``PERMUTATION_MAX_N`` pairs the p-value comes from ``scipy.stats.permutation_test``, pairing
the judge's values with every ordering of the human ones: exact (every one of the n! orderings) up to
``EXACT_MAX_N`` pairs, else ``PERMUTATION_RESAMPLES`` seeded random orderings (p = (hits + 1) /
(resamples + 1), never 0).
Two-sided as scipy defines it: twice the smaller one-sided p, at most 1. Kendall's scipy p-value is already exact
without ties (its ``method="auto"``); with ties it goes through the same permutation test.

Boot-both (Deutsch, Dror & Roth 2021, "Statistical Analysis of Summarization Evaluation Metrics using Resampling
Methods", TACL 9, Sec. 4: BOOT-BOTH): a system-level correlation has two sources of sampling error, the documents
and the systems. The document bootstrap (the default everywhere else) holds the systems fixed: its interval answers
"how would this figure move with other documents for *these* systems?". Boot-both draws systems and documents
with replacement together: its interval answers "how would it move with other documents *and other systems* like
these?", the question a p-value over systems answers too, and is wider. Percentile interval, as in the paper.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.stats as st

from evalcore.meta.arrays import FloatArray, IntArray, Seed
from evalcore.meta.coefficients import rows_correlation, scipy_correlation, snap_ties
from evalcore.meta.intervals import percentile_interval
from evalcore.meta.scoreframe import PreparedFrame
from evalcore.model import counted

# What a correlation's interval resamples (correlation.correlate's ``ci_resampling``): see CI_RESAMPLING_HELP.
CI_RESAMPLING = ("documents", "both")

# Pairs below this count get a permutation p-value (system level: systems; dataset level: items).
PERMUTATION_MAX_N = 30
PERMUTATION_RESAMPLES = 9999
# Up to this many pairs every ordering is enumerated (9! = 362,880 orderings, well under a second vectorised).
EXACT_MAX_N = 9

CI_RESAMPLING_HELP = {
    "documents": "documents resampled, systems held fixed: how the figure moves with other documents for these "
                 "systems",
    "both": "systems and documents resampled together (Deutsch et al. 2021 boot-both): how it moves with other "
            "documents and other systems like these; system level only",
}

MIN_DOCUMENTS = 10
MIN_SYSTEMS = 5
# Below this many documents the 95% interval over documents covers the truth less often than it says: the
# dataset-level Spearman BCa interval covered it in 0.862 of simulated studies at 10 documents, 0.905 at 15-30,
# 0.92-0.93 at 50-75 and 0.935-0.948 from 100 on (16 outputs per document, scores clustered by document; with 4
# outputs per document 0.896 at 10, 0.924 at 20, 0.94 from 30): bench/bench_ci_coverage.py, 1,000-2,000 studies
# per size. 100 is where the worse of the two designs stops falling under 0.93.
FEW_DOCUMENTS_FOR_COVERAGE = 100


def _permutation_rows(coefficient: str, y: FloatArray) -> Callable[..., FloatArray]:
    """A vectorised statistic for scipy.stats.permutation_test: the correlation of each permuted x with y."""
    def statistic(x: npt.ArrayLike, axis: int = -1) -> FloatArray:
        x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
        shape = x.shape[:-1]
        X = x.reshape(-1, x.shape[-1])
        Y = np.broadcast_to(y, X.shape).copy()
        return rows_correlation(X, Y, coefficient).reshape(shape)
    return statistic


def scipy_pvalue_method(x: FloatArray, y: FloatArray, coefficient: str, statistic: float) -> str:
    """How scipy's default p-value of this correlation is computed, in words.

    - Pearson: ``scipy.stats.pearsonr`` uses the exact distribution of r under bivariate normality (a beta
      distribution; its Notes): "exact under normality".
    - Kendall: ``scipy.stats.kendalltau(method="auto")`` is exact without ties when n <= 33 or when at most one pair
      is discordant (or concordant); else the normal approximation. The rule is scipy's own (its source,
      ``_stats_py.kendalltau``); with no ties the discordant pairs are (1 - tau) / 2 of all n(n-1)/2 pairs.
    - Spearman: the t approximation, "asymptotic".
    """
    if coefficient == "pearson":
        return "exact under normality"
    n = len(x)
    if coefficient == "kendall" and len(np.unique(x)) == n and len(np.unique(y)) == n:
        pairs = n * (n - 1) / 2
        discordant = round(pairs * (1 - statistic) / 2)
        if n <= 33 or min(discordant, pairs - discordant) <= 1:
            return "exact"
    return "asymptotic"


def correlation_pvalue(x: npt.ArrayLike, y: npt.ArrayLike, coefficient: str, *,
                       random_state: Seed = 0) -> tuple[float, str]:
    """(p-value, how it was computed) for the correlation of x with y: "exact permutation", "permutation (9999
    resamples)", or from n >= PERMUTATION_MAX_N scipy's default p-value labelled by the method scipy used
    (scipy_pvalue_method: "exact" for Kendall without ties up to 33 pairs, "exact under normality" for Pearson,
    else "asymptotic"); below, "exact" for Kendall without ties (scipy's exact null). (nan, "") where the
    correlation is undefined."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    stat, pv = scipy_correlation(x, y, coefficient)
    n = len(x)
    if math.isnan(stat):
        return float("nan"), ""
    if n >= PERMUTATION_MAX_N:
        return pv, scipy_pvalue_method(x, y, coefficient, stat)
    if coefficient == "kendall" and len(np.unique(x)) == n and len(np.unique(y)) == n:
        return float(st.kendalltau(x, y, method="exact").pvalue), "exact"
    exact = n <= EXACT_MAX_N
    kwargs = dict(permutation_type="pairings", vectorized=True, alternative="two-sided",
                  n_resamples=np.inf if exact else PERMUTATION_RESAMPLES)
    try:  # scipy >= 1.15 names the generator rng; older releases random_state
        res = st.permutation_test((x,), _permutation_rows(coefficient, y), rng=np.random.default_rng(random_state),
                                  **kwargs)
    except TypeError:
        res = st.permutation_test((x,), _permutation_rows(coefficient, y),
                                  random_state=np.random.default_rng(random_state), **kwargs)
    return float(min(1.0, res.pvalue)), ("exact permutation" if exact else
                                         f"permutation ({PERMUTATION_RESAMPLES} resamples)")


# ---------------------------------------------------------------------------------------------------- boot-both


def doc_system_sums(p: PreparedFrame) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(docs x systems) sums of judge values, of human values, and item counts."""
    shape = (p.n_docs, p.n_systems)
    sx = np.zeros(shape)
    sy = np.zeros(shape)
    cnt = np.zeros(shape)
    np.add.at(sx, (p.doc, p.system), p.x)
    np.add.at(sy, (p.doc, p.system), p.y)
    np.add.at(cnt, (p.doc, p.system), 1.0)
    return sx, sy, cnt


def boot_both_draws(n_docs: int, n_systems: int, n_resamples: int, random_state: Seed = 0
                    ) -> tuple[IntArray, IntArray]:
    """(documents drawn: resamples x n_docs, systems drawn: resamples x n_systems), both with replacement, from one
    generator in that order (the test redraws them the same way)."""
    rng = np.random.default_rng(random_state)
    docs = rng.integers(0, n_docs, size=(n_resamples, n_docs))
    systems = rng.integers(0, n_systems, size=(n_resamples, n_systems))
    return docs, systems


def boot_both_distribution(p: PreparedFrame, coefficient: str, n_resamples: int, random_state: Seed = 0) -> FloatArray:
    """The system-level correlation in every boot-both resample (NaN where undefined: e.g. one distinct system
    drawn, or a drawn system with no item in the drawn documents). For the rank coefficients the drawn means are
    tie-snapped (coefficients.snap_ties) as on every other system-level path: two systems whose means are equal
    (4.216666666666666 and 4.216666666666668 are the same 253/60 summed in another order) are a tie, not an order
    decided by rounding."""
    sx, sy, cnt = doc_system_sums(p)
    docs, systems = boot_both_draws(p.n_docs, p.n_systems, n_resamples, random_state)
    C = np.zeros((n_resamples, p.n_docs))
    np.add.at(C, (np.repeat(np.arange(n_resamples), p.n_docs), docs.ravel()), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (C @ sx) / (C @ cnt)  # resamples x systems: each system's mean over the drawn documents
        my = (C @ sy) / (C @ cnt)
    rows = np.arange(n_resamples)[:, None]
    X = mx[rows, systems]
    Y = my[rows, systems]
    if coefficient != "pearson":
        X, Y = snap_ties(X), snap_ties(Y)
    out = np.full(n_resamples, np.nan)
    ok = ~np.isnan(X).any(axis=1)
    if ok.any():
        out[ok] = rows_correlation(X[ok], Y[ok], coefficient)
    return out


def boot_both_interval(p: PreparedFrame, coefficient: str, *, n_resamples: int, confidence_level: float = 0.95,
                       random_state: Seed = 0) -> tuple[float, float, int]:
    """(low, high, undefined resamples): the boot-both percentile interval of the system-level correlation."""
    dist = boot_both_distribution(p, coefficient, n_resamples, random_state)
    return percentile_interval(dist, confidence_level)


# ---------------------------------------------------------------------------------------------------- warnings


@dataclass(frozen=True)
class Support:
    """What a run's figures rest on: documents and systems with at least one scored item."""

    n_documents: int
    n_systems: int


def support_warnings(support: Support, *, levels: Collection[str] = ("dataset", "summary", "system")) -> list[str]:
    """The sentences a reader is owed: an interval on fewer than MIN_DOCUMENTS documents (unreliable) or fewer than
    FEW_DOCUMENTS_FOR_COVERAGE (narrower than it says, as simulated), a system figure on fewer than MIN_SYSTEMS
    systems."""
    out = []
    if support.n_documents < MIN_DOCUMENTS:
        out.append(f"every interval rests on {counted(support.n_documents, 'document')} (fewer than {MIN_DOCUMENTS}): "
                   + ("a bootstrap over one document has nothing to resample, so there is no interval"
                      if support.n_documents == 1 else
                      "the bootstrap resamples documents, so the intervals are unreliable"))
    elif support.n_documents < FEW_DOCUMENTS_FOR_COVERAGE:
        out.append(f"the intervals rest on {support.n_documents} documents (fewer than "
                   f"{FEW_DOCUMENTS_FOR_COVERAGE}): on so few a 95% interval over documents can be too narrow "
                   "(simulated with 16 outputs per document, the dataset-level Spearman interval held the truth 86% "
                   "of the time at 10 documents, 90% at 20-30, 92-93% at 50-75; with 4 outputs per document 90% at "
                   "10, 92% at 20, 94% from 30)")
    if "system" in levels and support.n_systems < MIN_SYSTEMS:
        extra = " (with 2 systems a correlation is always +1 or -1)" if support.n_systems <= 2 else ""
        out.append(f"the system level rests on {counted(support.n_systems, 'system')} (fewer than {MIN_SYSTEMS})"
                   f"{extra}")
    return out
