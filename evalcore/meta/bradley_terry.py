"""Bradley-Terry rankings of the models of a pairwise study, once from the humans' votes and once from the judge's
verdicts, on the Elo scale as Chatbot Arena reports them (Chiang et al., ICML 2024; FastChat's ``compute_mle_elo``).

Conventions:

- A battle is one human vote, or one combined judge verdict (evalcore.meta.preference.judge_outcomes), between the
  outputs of two different models on a prompt (document). Battles of a model against itself carry no information
  and are left out (counted).
- P(a beats b) = 1 / (1 + 10^((R_b - R_a) / 400)): scores on the Elo scale (scale 400, base 10), fitted by maximum
  likelihood with scikit-learn's LogisticRegression without penalty (C = inf) and without intercept, the design row
  of a battle holding +ln 10 for model a and -ln 10 for model b (Arena's construction). The scores are identified up
  to a constant: they are anchored at a mean of 1000.
- A tie counts as half a win for each side (Arena: a decisive battle enters with weight 2 for its winner, a tie
  with weight 1 in each direction).
- The maximum-likelihood scores exist only when every model has beaten, and lost to, the rest in a connected way
  (Zermelo 1929; Ford 1957: the "beat or tied" graph is strongly connected). Otherwise the scores are NaN and
  ``problem`` says which model never lost or never won.
- Intervals: percentile bootstrap over prompts (documents resampled with replacement, all their battles with them;
  numpy's default_rng(random_state) as evalcore.meta.resampling), the model refitted on each resample; a resample
  whose graph is not strongly connected is left out (``dropped_resamples``).
- Length control as Arena's style control (Li et al., LMSYS blog, Aug 2024): the normalised length difference
  (len_a - len_b) / (len_a + len_b), in characters, standardised over the battles, enters as a covariate; its
  coefficient (log-odds per standard deviation of the normalised difference in favour of the longer output) with
  its bootstrap interval is a verbosity figure: the judge's coefficient beside the humans' says whether the judge
  rewards length more than people do. The model scores of that fit are the length-controlled scores.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.sparse.csgraph import connected_components
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from evalcore.meta.arrays import FloatArray, IntArray, Seed
from evalcore.meta.intervals import percentile_ci
from evalcore.meta.results import Estimate, HoldsEstimate, JsonKeys
from evalcore.model import natural_key

SCALE, BASE, ANCHOR = 400.0, 10.0, 1000.0
BATTLE_COLUMNS = ["doc_id", "model_a", "model_b", "outcome", "len_a", "len_b"]


@dataclass(frozen=True)
class Score(HoldsEstimate):
    """A model's score on the Elo scale as an Estimate: its percentile interval over prompt resamples, ``n`` the
    model's battles."""

    model: str
    estimate: Estimate

    json_keys: ClassVar[JsonKeys] = (("model", "model"), ("score", "estimate.statistic"),
                                     ("ci_low", "estimate.ci_low"), ("ci_high", "estimate.ci_high"),
                                     ("n_battles", "estimate.n"))

    @property
    def score(self) -> float:
        return self.estimate.statistic

    @property
    def n_battles(self) -> int:
        return self.estimate.n


@dataclass(frozen=True)
class LengthEffect:
    """The style-control coefficient of the standardised normalised length difference (log-odds per SD) as an
    Estimate: its percentile interval over prompt resamples."""

    effect: Estimate
    controlled_scores: tuple[Score, ...]  # the model scores of the length-controlled fit

    json_keys: ClassVar[JsonKeys] = (("coefficient", "effect.statistic"), ("ci_low", "effect.ci_low"),
                                     ("ci_high", "effect.ci_high"), ("controlled_scores", "controlled_scores"))

    @property
    def coefficient(self) -> float:
        return self.effect.statistic

    @property
    def ci_low(self) -> float:
        return self.effect.ci_low

    @property
    def ci_high(self) -> float:
        return self.effect.ci_high


@dataclass(frozen=True)
class Ranking:
    source: str  # "human" or "judge"
    scores: tuple[Score, ...]
    n_battles: int
    ties: int
    self_battles: int  # left out: both outputs from the same model
    dropped_resamples: int
    problem: str  # why there are no scores ("" when there are)
    length: LengthEffect | None


@dataclass(frozen=True)
class PairSeparation:
    model_a: str
    model_b: str
    human_separated: bool  # the two 95% intervals do not overlap
    judge_separated: bool
    human_share: float     # share of resamples where a scores above b
    judge_share: float

    json_keys: ClassVar[JsonKeys] = (("model_a", "model_a"), ("model_b", "model_b"),
                                     ("human_separated", "human_separated"), ("judge_separated", "judge_separated"),
                                     ("human_share_a_above", "human_share"), ("judge_share_a_above", "judge_share"))


@dataclass(frozen=True)
class RankingComparison:
    human: Ranking
    judge: Ranking
    kendall_tau: float
    spearman_rho: float
    n_models: int
    pairs: tuple[PairSeparation, ...]
    n_resamples: int

    # how the scores were made, written beside them (module docstring)
    scale: ClassVar[str] = "Elo (400 / ln 10 per logit, mean 1000)"
    tie_rule: ClassVar[str] = "half a win for each side"
    resampling: ClassVar[str] = "prompts (documents)"
    json_keys: ClassVar[JsonKeys] = (("scale", "scale"), ("ties", "tie_rule"), ("resampling", "resampling"),
                                     ("n_resamples", "n_resamples"), ("human", "human"), ("judge", "judge"),
                                     ("kendall_tau", "kendall_tau"), ("spearman_rho", "spearman_rho"),
                                     ("n_models", "n_models"), ("pairs", "pairs"))


# ------------------------------------------------------------------------------------------------ fitting


def design(battles: pd.DataFrame, models: list[str]) -> tuple[FloatArray, FloatArray, FloatArray, IntArray]:
    """(X, y, weight, battle of each row) in Arena's form: each decisive battle one row (weight 2), each tie two
    rows (y = 1 and y = 0, weight 1 each); X holds +ln 10 for model a and -ln 10 for model b."""
    idx = pd.Index(models)
    a, b = idx.get_indexer(battles["model_a"]), idx.get_indexer(battles["model_b"])
    outcome = battles["outcome"].to_numpy()
    tie = outcome == "tie"
    rows = np.concatenate([np.arange(len(battles)), np.flatnonzero(tie)])
    X = np.zeros((len(rows), len(models)))
    X[np.arange(len(rows)), a[rows]] = math.log(BASE)
    X[np.arange(len(rows)), b[rows]] = -math.log(BASE)
    y = np.concatenate([((outcome == "a") | tie).astype(float), np.zeros(int(tie.sum()))])
    w = np.where(np.concatenate([tie, np.ones(int(tie.sum()), dtype=bool)]), 1.0, 2.0)
    return X, y, w, rows


def _problem(X: FloatArray, y: FloatArray, w: FloatArray, models: list[str]) -> str:
    """"" when the beat-or-tied graph of the design rows with weight > 0 is strongly connected (the maximum-likelihood
    scores exist), else what is wrong."""
    k = len(models)
    on = w > 0
    a, b = np.argmax(X[on, :k], axis=1), np.argmin(X[on, :k], axis=1)
    win, lose = np.where(y[on] == 1, a, b), np.where(y[on] == 1, b, a)
    g = np.bincount(win * k + lose, minlength=k * k).reshape(k, k) > 0  # g[i, j]: i beat (or tied) j
    if connected_components(g, directed=True, connection="strong")[0] == 1:
        return ""
    never_lost = [m for i, m in enumerate(models) if not g[:, i].any()]
    never_won = [m for i, m in enumerate(models) if not g[i, :].any()]
    if never_lost:
        return f"model {never_lost[0]!r} never lost: its Bradley-Terry score is unbounded"
    if never_won:
        return f"model {never_won[0]!r} never won or tied: its Bradley-Terry score is unbounded"
    return "the battles split the models into groups that never beat one another: their scores are not comparable"


def _fit(X: FloatArray, y: FloatArray, w: FloatArray, n_models: int) -> FloatArray:
    """Coefficients of the unpenalised logistic regression (C = inf, no intercept), the model scores first and on
    the Elo scale, anchored at a mean of 1000 (the design is invariant to a shift of every score)."""
    lr = LogisticRegression(C=np.inf, fit_intercept=False, solver="newton-cg", tol=1e-10, max_iter=1000)
    on = w > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lr.fit(X[on], y[on], sample_weight=w[on])
    coef = lr.coef_[0].copy()
    coef[:n_models] = SCALE * (coef[:n_models] - coef[:n_models].mean()) + ANCHOR
    result: FloatArray = coef
    return result


def bt_scores(battles: pd.DataFrame, models: list[str] | None = None) -> FloatArray:
    """Bradley-Terry scores on the Elo scale (mean 1000), one per model (sorted names when ``models`` is None)."""
    models = models or _models(battles)
    X, y, w, _ = design(battles, models)
    return _fit(X, y, w, len(models))


def length_feature(battles: pd.DataFrame) -> FloatArray:
    """Arena's style-control feature for length: (len_a - len_b) / (len_a + len_b), standardised over the
    battles (all zero where every battle is between outputs of equal length)."""
    la, lb = battles["len_a"].to_numpy(dtype=float), battles["len_b"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(la + lb > 0, (la - lb) / (la + lb), 0.0)
    sd = d.std()
    return (d - d.mean()) / sd if sd > 0 else np.zeros_like(d)


def _models(battles: pd.DataFrame) -> list[str]:
    return sorted(set(battles["model_a"]) | set(battles["model_b"]), key=natural_key)


# ------------------------------------------------------------------------------------------------ bootstrap


@dataclass(frozen=True)
class _Design:
    """The distinct design rows and, per document, the weight each carries: a resample's weights are then
    (document counts) @ per_doc, and the fits run on a few hundred rows instead of every battle."""

    X: FloatArray
    y: FloatArray
    per_doc: FloatArray  # documents x distinct rows

    @property
    def weight(self) -> FloatArray:
        result: FloatArray = self.per_doc.sum(axis=0)
        return result


def _distinct(X: FloatArray, y: FloatArray, w: FloatArray, doc: IntArray, n_docs: int) -> _Design:
    key = np.column_stack([X, y])
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    per_doc = np.zeros((n_docs, len(uniq)))
    np.add.at(per_doc, (doc, np.asarray(inverse).ravel()), w)
    return _Design(uniq[:, :-1], uniq[:, -1], per_doc)


def _resample_weights(d: _Design, n_resamples: int, random_state: Seed) -> Iterator[FloatArray]:
    """Each resample's row weights: documents drawn with replacement by numpy's default_rng(random_state), the
    draws of evalcore.meta.resampling.bootstrap_indices."""
    n_docs = d.per_doc.shape[0]
    rng = np.random.default_rng(random_state)
    for _ in range(n_resamples):
        yield np.bincount(rng.integers(0, n_docs, size=n_docs), minlength=n_docs) @ d.per_doc


def _bootstrap(d: _Design, models: list[str], n_resamples: int, random_state: Seed) -> FloatArray:
    """(resamples x coefficients) refits; NaN rows where the resample's battles leave a score unbounded."""
    k = len(models)
    out = np.full((n_resamples, d.X.shape[1]), np.nan)
    for r, w in enumerate(_resample_weights(d, n_resamples, random_state)):
        if not _problem(d.X, d.y, w, models):
            out[r] = _fit(d.X, d.y, w, k)
    return out


def ranking(battles: pd.DataFrame, *, source: str, models: list[str] | None = None, length_control: bool = True,
            n_resamples: int = 1000, random_state: Seed = 0,
            confidence_level: float = 0.95) -> tuple[Ranking, FloatArray]:
    """Bradley-Terry scores with prompt-bootstrap intervals (and the length-controlled fit); also the
    (resamples x models) bootstrap scores (NaN rows: resamples left out)."""
    battles, self_battles = _clean(battles)
    models = models or _models(battles)
    ties = int((battles["outcome"] == "tie").sum())
    X, y, w, rows = design(battles, models)
    problem = _problem(X, y, w, models) if len(battles) else \
        f"no battle between two different models ({self_battles} of a model against itself)"
    if problem:
        scores = tuple(Score(m, Estimate(math.nan, n=_n(battles, m), notes=(problem,))) for m in models)
        return Ranking(source, scores, len(battles), ties, self_battles, n_resamples, problem, None), \
            np.full((n_resamples, len(models)), np.nan)
    docs, code = np.unique(battles["doc_id"].astype(str).to_numpy(), return_inverse=True)
    plain = _distinct(X, y, w, code[rows], len(docs))
    boot = _bootstrap(plain, models, n_resamples, random_state)
    scores = _scores(models, _fit(plain.X, plain.y, plain.weight, len(models)), boot, battles, confidence_level)
    length = None
    if length_control:
        styled = _distinct(np.column_stack([X, length_feature(battles)[rows]]), y, w, code[rows], len(docs))
        point, boot_l = _fit(styled.X, styled.y, styled.weight, len(models)), \
            _bootstrap(styled, models, n_resamples, random_state)
        effect = Estimate(float(point[-1]), *percentile_ci(boot_l[:, -1], confidence_level), n=len(battles),
                          method="percentile", confidence_level=confidence_level, n_resamples=n_resamples)
        length = LengthEffect(effect, _scores(models, point[:-1], boot_l[:, :-1], battles, confidence_level))
    dropped = int(np.isnan(boot).all(axis=1).sum())
    return Ranking(source, scores, len(battles), ties, self_battles, dropped, "", length), boot


def _clean(battles: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    missing = [c for c in BATTLE_COLUMNS if c not in battles.columns]
    if missing:
        raise ValueError(f"battles: missing column(s) {missing}; they need {BATTLE_COLUMNS}")
    bad = ~battles["outcome"].isin(["a", "b", "tie"])
    if bad.any():
        raise ValueError(f"battles: outcome {battles.loc[bad, 'outcome'].iloc[0]!r} is not a, b or tie")
    same = battles["model_a"] == battles["model_b"]
    return battles[~same].reset_index(drop=True), int(same.sum())


def _n(battles: pd.DataFrame, model: str) -> int:
    return int(((battles["model_a"] == model) | (battles["model_b"] == model)).sum())


def _scores(models: list[str], point: FloatArray, boot: FloatArray, battles: pd.DataFrame,
            confidence_level: float) -> tuple[Score, ...]:
    return tuple(Score(m, Estimate(float(point[i]), *percentile_ci(boot[:, i], confidence_level), n=_n(battles, m),
                                   method="percentile", confidence_level=confidence_level,
                                   n_resamples=len(boot), resampling="documents"))
                 for i, m in enumerate(models))


# ------------------------------------------------------------------------------------------------ inputs


def _with_models(frame: pd.DataFrame, label_col: str, items: pd.DataFrame) -> pd.DataFrame:
    it = items.drop_duplicates("item_id").set_index("item_id")
    system = it["system_id"].astype(str)
    length = it["output"].astype(str).str.len() if "output" in it.columns else pd.Series(0, index=it.index)
    out = pd.DataFrame({"doc_id": frame["doc_id"].to_numpy(),
                        "model_a": system.reindex(frame["item_a"]).to_numpy(),
                        "model_b": system.reindex(frame["item_b"]).to_numpy(),
                        "outcome": frame[label_col].to_numpy(),
                        "len_a": length.reindex(frame["item_a"]).to_numpy(dtype=float),
                        "len_b": length.reindex(frame["item_b"]).to_numpy(dtype=float)})
    unknown = out["model_a"].isna() | out["model_b"].isna()
    if unknown.any():
        raise ValueError(f"battles: item {frame.loc[unknown.to_numpy(), 'item_a'].iloc[0]!r} or its opponent is not "
                         "in the items table")
    return out


def battles_from_votes(preferences: pd.DataFrame, items: pd.DataFrame, *, dimension: str) -> pd.DataFrame:
    """Every human vote on ``dimension`` as a battle (BATTLE_COLUMNS; lengths of the outputs in characters)."""
    prefs = preferences[preferences["dimension"] == dimension]
    return _with_models(prefs, "preferred", items)


def battles_from_verdicts(comparisons: pd.DataFrame, preferences: pd.DataFrame, items: pd.DataFrame, *,
                          dimension: str) -> pd.DataFrame:
    """Every readable combined judge verdict on ``dimension`` as a battle (pairs nobody voted on included)."""
    from evalcore.meta.preference import align_to_preferences, judge_outcomes

    prefs = preferences[preferences["dimension"] == dimension]
    judged = judge_outcomes(align_to_preferences(comparisons, prefs), dimension)
    judged = judged[judged["verdict"].notna()] if len(judged) else judged
    return _with_models(judged, "verdict", items)


def compare_rankings(preferences: pd.DataFrame, comparisons: pd.DataFrame, items: pd.DataFrame, *,
                     dimension: str, length_control: bool = True, n_resamples: int = 1000, random_state: Seed = 0,
                     confidence_level: float = 0.95) -> RankingComparison:
    """The humans' and the judge's Bradley-Terry rankings side by side: Kendall's tau and Spearman's rho between
    their scores (on the models both rank), and for every pair of models whether each ranking separates them."""
    if n_resamples < 0:
        raise ValueError(f"n_resamples must be 0 or more, got {n_resamples}")
    def rank(battles: pd.DataFrame, source: str) -> tuple[Ranking, FloatArray]:
        return ranking(battles, source=source, length_control=length_control, n_resamples=n_resamples,
                       random_state=random_state, confidence_level=confidence_level)

    human, hb = rank(battles_from_votes(preferences, items, dimension=dimension), "human")
    judge, jb = rank(battles_from_verdicts(comparisons, preferences, items, dimension=dimension), "judge")
    h = {s.model: (i, s) for i, s in enumerate(human.scores) if math.isfinite(s.score)}
    j = {s.model: (i, s) for i, s in enumerate(judge.scores) if math.isfinite(s.score)}
    common = sorted(set(h) & set(j), key=natural_key)
    tau = rho = math.nan
    if len(common) >= 3:
        x, y = [h[m][1].score for m in common], [j[m][1].score for m in common]
        tau, rho = float(sps.kendalltau(x, y).statistic), float(sps.spearmanr(x, y).statistic)
    pairs = tuple(_separation(a, b, h, j, hb, jb) for a, b in combinations(common, 2))
    return RankingComparison(human=human, judge=judge, kendall_tau=tau, spearman_rho=rho, n_models=len(common),
                             pairs=pairs, n_resamples=int(n_resamples))


def _separation(a: str, b: str, h: dict[str, tuple[int, Score]], j: dict[str, tuple[int, Score]], hb: FloatArray,
                jb: FloatArray) -> PairSeparation:
    def apart(sa: Score, sb: Score) -> bool:
        return bool(sa.ci_low > sb.ci_high or sb.ci_low > sa.ci_high)

    def share(boot: FloatArray, ia: int, ib: int) -> float:
        ok = np.isfinite(boot[:, ia]) & np.isfinite(boot[:, ib])
        return float((boot[ok, ia] > boot[ok, ib]).mean()) if ok.any() else math.nan

    return PairSeparation(a, b, apart(h[a][1], h[b][1]), apart(j[a][1], j[b][1]), share(hb, h[a][0], h[b][0]),
                          share(jb, j[a][0], j[b][0]))
