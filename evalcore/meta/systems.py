"""System-wise meta-evaluation of Shen et al. (003): per-system correlation, meta-correlation, correct preferences,
and the RTS-MCQ reliability indicator.

All functions take score frames (item_id, doc_id, system_id, judge, human; see evalcore.meta.correlation). Items whose
judge value is missing are dropped (and counted in the ``n`` columns) before anything is computed from the judge.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from evalcore.meta.arrays import FloatArray
from evalcore.meta.coefficients import COEFFICIENTS, scipy_correlation
from evalcore.meta.results import Estimate
from evalcore.meta.scoreframe import REQUIRED_COLUMNS
from evalcore.meta.validation import check_choice
from evalcore.model import natural_key


def _check_frame(frame: pd.DataFrame, name: str = "score frame") -> pd.DataFrame:
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}; a score frame needs {list(REQUIRED_COLUMNS)}")
    out = frame.copy()
    for col in ("judge", "human"):
        num = pd.to_numeric(out[col], errors="coerce")
        bad = num.isna() & out[col].notna()
        if bad.any():
            row = bad.to_numpy().nonzero()[0][0]
            raise ValueError(f"{name}: column {col!r} row {row} holds {out[col].iloc[row]!r}, which is not a number")
        out[col] = num.astype(float)
    if out["human"].isna().any():
        row = out["human"].isna().to_numpy().nonzero()[0][0]
        raise ValueError(f"{name}: column 'human' row {row} is missing; every item needs a human score")
    return out


def _systems_sorted(values: pd.Series) -> list[str]:
    return sorted(pd.unique(values), key=natural_key)


# --------------------------------------------------------------------------------------------------------------------
# 003 Eq. 1-3


def system_quality(frame: pd.DataFrame) -> pd.Series:
    """Q_i (003 Eq. 1): mean human score of system i, over all its items (the human score does not depend on whether
    the judge's reply parsed). Indexed by system_id in natural order."""
    f = _check_frame(frame)
    q = f.groupby("system_id", sort=False)["human"].mean()
    q = q.reindex(_systems_sorted(q.index))
    q.name = "quality"
    return q


def per_system(frame: pd.DataFrame, *, coefficient: str = "kendall") -> pd.DataFrame:
    """P_i (003 Eq. 2): correlation of judge and human over system i's items.

    Columns: system_id, correlation (NaN when undefined: fewer than 2 items or a constant side), pvalue (scipy), n
    (items used), dropped (items whose judge value is missing), quality (Q_i, Eq. 1), defined.
    """
    check_choice(coefficient, COEFFICIENTS, "coefficient")
    f = _check_frame(frame)
    quality = system_quality(f)
    rows = []
    for sid in quality.index:
        g = f[f["system_id"] == sid]
        ok = g["judge"].notna()
        stat, pv = scipy_correlation(g.loc[ok, "judge"].to_numpy(), g.loc[ok, "human"].to_numpy(), coefficient)
        rows.append({"system_id": sid, "correlation": stat, "pvalue": pv, "n": int(ok.sum()),
                     "dropped": int((~ok).sum()), "quality": float(quality[sid]), "defined": not np.isnan(stat)})
    return pd.DataFrame(rows, columns=["system_id", "correlation", "pvalue", "n", "dropped", "quality", "defined"])


@dataclass(frozen=True)
class MetaCorrelationResult:
    """M as an Estimate (``n``: the systems whose P_i is defined; no interval), the systems left out, the
    coefficient, and the per-system table it was computed from."""

    estimate: Estimate
    dropped_systems: list[str]
    coefficient: str
    table: pd.DataFrame = field(repr=False)

    @property
    def statistic(self) -> float:
        return self.estimate.statistic

    @property
    def pvalue(self) -> float:
        p = self.estimate.pvalue
        return math.nan if p is None else p  # always computed here; NaN reads as no p-value

    @property
    def n_systems(self) -> int:
        return self.estimate.n


def meta_correlation(frame: pd.DataFrame, *, coefficient: str = "kendall") -> MetaCorrelationResult:
    """M (003 Eq. 3) = corr([Q_1..Q_k], [P_1..P_k]) with the same coefficient as P_i (003 footnote 3).

    Ideal M is near 0: the judge's agreement with humans should not depend on how good the systems are. Systems whose
    P_i is undefined are left out and listed in ``dropped_systems``. ``table`` is per_system's table.
    """
    table = per_system(frame, coefficient=coefficient)
    ok = table["defined"].to_numpy()
    stat, pv = scipy_correlation(table.loc[ok, "quality"].to_numpy(), table.loc[ok, "correlation"].to_numpy(),
                                 coefficient)
    return MetaCorrelationResult(estimate=Estimate(stat, n=int(ok.sum()), pvalue=pv),
                                 dropped_systems=[str(s) for s in table.loc[~ok, "system_id"]],
                                 coefficient=coefficient, table=table)


# --------------------------------------------------------------------------------------------------------------------
# #CP, 003 4.2.1


@dataclass(frozen=True)
class CorrectPreferencesResult:
    correct: int
    total: int
    table: pd.DataFrame = field(repr=False)

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else float("nan")


CP_COLUMNS = ["system_a", "system_b", "n_docs", "judge_points_a", "human_points_a", "judge_preference",
              "human_preference", "correct"]


def preference_side(points_a: float, n_docs: int) -> str:
    """"a" when a's points are above half the documents, "b" below, "tie" exactly at half (003 4.2.1).

    Points are multiples of 0.25 (H2H) or 0.5 (scores), so comparing with n/2 is exact in floating point.
    """
    half = n_docs / 2
    if points_a > half:
        return "a"
    if points_a < half:
        return "b"
    return "tie"


def points(a: FloatArray, b: FloatArray) -> FloatArray:
    """003 4.2.1: 1 point to the higher value, 0.5 each on a tie; returns a's points per document."""
    return np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5))


def tally_preferences(rows: list[dict[str, Any]]) -> CorrectPreferencesResult:
    """Build the #CP result from per-pair rows holding system_a, system_b, n_docs, judge_points_a, human_points_a."""
    for r in rows:
        r["judge_preference"] = preference_side(r["judge_points_a"], r["n_docs"])
        r["human_preference"] = preference_side(r["human_points_a"], r["n_docs"])
        r["correct"] = bool(r["n_docs"] > 0 and r["judge_preference"] == r["human_preference"])
    table = pd.DataFrame(rows, columns=CP_COLUMNS)
    return CorrectPreferencesResult(correct=int(table["correct"].sum()), total=len(table), table=table)


def _resolve_pairs(pairs: Iterable[tuple[str, str]] | None, systems: list[str]) -> list[tuple[str, str]]:
    if pairs is None:
        return list(combinations(systems, 2))
    known = set(systems)
    out = []
    for pair in pairs:
        a, b = pair
        for s in (a, b):
            if s not in known:
                raise ValueError(f"pair {tuple(pair)!r}: system {s!r} is not in the score frame; it has {systems}")
        if a == b:
            raise ValueError(f"pair {tuple(pair)!r} compares a system with itself")
        out.append((a, b))
    return out


def correct_preferences(frame: pd.DataFrame, *,
                        pairs: Iterable[tuple[str, str]] | None = None) -> CorrectPreferencesResult:
    """#CP (003 4.2.1): on how many system pairs the judge prefers the same system as the humans (or a tie).

    For a pair (a, b), over the documents both systems have (and where the judge scored both outputs; the same
    documents on the human side so both sides count from the same n), a gets 1 point per document where its output
    scores higher, 0.5 on a tie. The judge and the humans agree when a's totals are on the same side of n/2 (above,
    below, or exactly at it). ``pairs`` None = all pairs of systems in the frame (003's full set: 66 pairs of the 12
    abstractive systems); pass ``challenge_pairs(...)`` or the dataset's ``meta["challenge_pairs"]`` for the
    challenge set (003 App. E).
    """
    f = _check_frame(frame)
    f = f[f["judge"].notna()]
    systems = _systems_sorted(f["system_id"])
    pair_list = _resolve_pairs(pairs, systems)
    judge = f.pivot_table(index="doc_id", columns="system_id", values="judge", aggfunc="mean")
    human = f.pivot_table(index="doc_id", columns="system_id", values="human", aggfunc="mean")
    rows = []
    for a, b in pair_list:
        ja, jb = judge[a].to_numpy(), judge[b].to_numpy()
        ha, hb = human[a].to_numpy(), human[b].to_numpy()
        shared = ~(np.isnan(ja) | np.isnan(jb))
        rows.append({"system_a": a, "system_b": b, "n_docs": int(shared.sum()),
                     "judge_points_a": float(points(ja[shared], jb[shared]).sum()),
                     "human_points_a": float(points(ha[shared], hb[shared]).sum())})
    return tally_preferences(rows)


def challenge_pairs(system_means: pd.Series) -> list[tuple[str, str]]:
    """Pairs of systems adjacent in mean score (003 App. E), best first: [(1st, 2nd), (2nd, 3rd), ...].

    003 ranks the systems by their average expert score across all four dimensions; pass that Series. Equal means
    keep the systems' natural order so the result is deterministic.
    """
    s = pd.Series(system_means, dtype=float)
    if s.isna().any():
        raise ValueError(f"system_means has no value for {list(s.index[s.isna()])}")
    names = sorted(s.index, key=natural_key)
    ordered = sorted(names, key=lambda k: -s[k])  # stable: ties stay in natural order
    return [(str(a), str(b)) for a, b in zip(ordered, ordered[1:])]


# --------------------------------------------------------------------------------------------------------------------
# 003 Eq. 4


@dataclass(frozen=True)
class ReliabilityResult:
    """The per-system table and corr(R_i, P_i) of each method across systems as an Estimate (``n``: the systems
    where both are defined; its interval, over systems, is evalcore.meta.across_systems')."""

    table: pd.DataFrame
    rts: Estimate
    mcq: Estimate
    coefficient: str

    @property
    def corr_r_p_rts(self) -> float:
        return self.rts.statistic

    @property
    def pvalue_rts(self) -> float:
        p = self.rts.pvalue
        return math.nan if p is None else p  # always computed here; NaN reads as no p-value

    @property
    def corr_r_p_mcq(self) -> float:
        return self.mcq.statistic

    @property
    def pvalue_mcq(self) -> float:
        p = self.mcq.pvalue
        return math.nan if p is None else p  # always computed here; NaN reads as no p-value


def reliability(rts_frame: pd.DataFrame, mcq_frame: pd.DataFrame, *, coefficient: str = "kendall"
                ) -> ReliabilityResult:
    """R_i (003 Eq. 4) = corr(RTS scores, MCQ scores) over system i's items, validated (003 Table 7) by
    corr(R_i, P_i^RTS) and corr(R_i, P_i^MCQ) across systems.

    The two runs are joined on item_id; an item enters R_i when both judges scored it. Systems where R_i or the P_i
    in question is undefined are left out of that across-system correlation. Table columns: system_id, reliability,
    n, p_rts, p_mcq, quality.
    """
    check_choice(coefficient, COEFFICIENTS, "coefficient")
    rts = _check_frame(rts_frame, "rts_frame")
    mcq = _check_frame(mcq_frame, "mcq_frame")
    if "item_id" not in rts.columns or "item_id" not in mcq.columns:
        raise ValueError("reliability joins the RTS and MCQ frames on item_id; both need an item_id column")
    joined = rts[["item_id", "system_id", "judge"]].merge(mcq[["item_id", "judge"]], on="item_id",
                                                          suffixes=("_rts", "_mcq"), how="inner")
    p_rts = per_system(rts, coefficient=coefficient).set_index("system_id")
    p_mcq = per_system(mcq, coefficient=coefficient).set_index("system_id")
    rows = []
    for sid in _systems_sorted(joined["system_id"]):
        g = joined[(joined["system_id"] == sid) & joined["judge_rts"].notna() & joined["judge_mcq"].notna()]
        r, _ = scipy_correlation(g["judge_rts"].to_numpy(), g["judge_mcq"].to_numpy(), coefficient)
        rows.append({"system_id": sid, "reliability": r, "n": len(g),
                     "p_rts": p_rts["correlation"].get(sid, np.nan), "p_mcq": p_mcq["correlation"].get(sid, np.nan),
                     "quality": p_rts["quality"].get(sid, np.nan)})
    table = pd.DataFrame(rows, columns=["system_id", "reliability", "n", "p_rts", "p_mcq", "quality"])

    def across(col: str) -> Estimate:
        ok = table["reliability"].notna() & table[col].notna()
        stat, pv = scipy_correlation(table.loc[ok, "reliability"].to_numpy(), table.loc[ok, col].to_numpy(),
                                     coefficient)
        return Estimate(stat, n=int(ok.sum()), pvalue=pv)

    return ReliabilityResult(table=table, rts=across("p_rts"), mcq=across("p_mcq"), coefficient=coefficient)
