"""The system-level analyses of Shen et al. 2023 (003): per-system correlations P_i (Eq. 2), the meta-correlation M
(Eq. 3), correct preferences #CP on the full and the challenge pair sets (Sec. 4.2.1, App. E) and RTS-MCQ
reliability (Eq. 4); and Chen et al. 2023's (002) pairwise Kendall tau by difficulty.

``system_level`` is one run's P_i, M and #CP on one dimension (``SystemLevel``); the page's and the report's tables
(``per_system_table``, ``meta_correlation_table``, ``correct_preferences_table``) and ``meta --json`` are built from
it, with the pair sets of ``pair_sets``."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from evalcore import runs as runs_mod
from evalcore.analyses.common import frames_for, has_correlations, run_label
from evalcore.meta.systems import CorrectPreferencesResult, MetaCorrelationResult, ReliabilityResult
from evalcore.model import Dataset, Run


def pair_sets(dataset: Dataset, systems: list[str] | None = None) -> dict[str, list[tuple[str, str]]]:
    """The system pairs #CP is counted on (003 4.2.1): all pairs of the abstractive systems (SummEval) or of every
    system, and the challenge pairs: the dataset's own where it ships them (SummEval: 003's 11) and the view is not
    restricted to some systems, else the pairs adjacent in average human score over all dimensions (003 App. E)."""
    from evalcore.meta.systems import challenge_pairs

    pool = list(dataset.meta.get("abstractive_systems") or dataset.systems)
    if systems is not None:
        pool = [s for s in pool if s in systems]
    full = list(itertools.combinations(sorted(pool, key=str), 2))
    if dataset.meta.get("challenge_pairs") and systems is None:
        challenge = [tuple(p) for p in dataset.meta["challenge_pairs"]]
    else:
        hs = dataset.human_scores.merge(dataset.items[["item_id", "system_id"]], on="item_id")
        hs = hs[hs["system_id"].isin(pool)]
        means = hs.groupby("system_id")["score"].mean() if not hs.empty else pd.Series(dtype=float)
        challenge = challenge_pairs(means) if len(means) > 1 else []
    return {"full": full, "challenge": challenge}


@dataclass(frozen=True)
class SystemLevel:
    """One run's system-level figures on one dimension: per coefficient its meta-correlation M (whose ``table`` is
    the per-system table P_i, Q_i); per pair set (``pair_sets``) #CP on the pairs of that set both of whose systems
    the run scored (``total`` says how many: a partial run is counted on the pairs it covers)."""

    meta_correlation: dict[str, MetaCorrelationResult]
    correct_preferences: dict[str, CorrectPreferencesResult | None]

    def per_system(self, coefficient: str) -> pd.DataFrame:
        return self.meta_correlation[coefficient].table


def correct_preference_counts(frame: pd.DataFrame, sets: dict[str, list[tuple[str, str]]]
                              ) -> dict[str, CorrectPreferencesResult | None]:
    """#CP of one score frame on each pair set, on the pairs whose two systems the judge scored (None: no such
    pair)."""
    from evalcore.meta.systems import correct_preferences

    scored = set(frame.loc[frame["judge"].notna(), "system_id"])
    out: dict[str, CorrectPreferencesResult | None] = {}
    for name, pairs in sets.items():
        covered = [p for p in pairs if p[0] in scored and p[1] in scored]
        out[name] = correct_preferences(frame, pairs=covered) if covered else None
    return out


def system_level(frame: pd.DataFrame, coefficients: Iterable[str], sets: dict[str, list[tuple[str, str]]]
                 ) -> SystemLevel:
    from evalcore.meta.systems import meta_correlation

    return SystemLevel({c: meta_correlation(frame, coefficient=c) for c in coefficients},
                       correct_preference_counts(frame, sets))


def _dimensions(dataset: Dataset, dimensions: list[str]) -> list[str]:
    return [d for d in dimensions if has_correlations(dataset, d)]


def per_system_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *, coefficient: str,
                     systems: list[str] | None = None) -> pd.DataFrame:
    """P_i (003 Eq. 2) and Q_i (Eq. 1) for every run, dimension (with ordered values) and system."""
    from evalcore.meta.systems import per_system

    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for dim in _dimensions(dataset, dimensions):
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            if frame["system_id"].nunique() < 2:
                continue
            t = per_system(frame, coefficient=coefficient).copy()
            t.insert(0, "run", labels[run_id])
            t.insert(1, "dimension", dim)
            t["note"] = [_undefined_p_i(frame, sid) if not ok else "" for sid, ok in zip(t["system_id"], t["defined"])]
            parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _undefined_p_i(frame: pd.DataFrame, system_id: object) -> str:
    """Why P_i is undefined for a system: too few scored items, or one side constant."""
    g = frame[(frame["system_id"] == system_id) & frame["judge"].notna()]
    if len(g) < 2:
        return f"n/a: {len(g)} scored item(s)"
    if g["judge"].nunique() < 2:
        return "n/a: the judge gave every item the same score"
    if g["human"].nunique() < 2:
        return "n/a: the humans gave every item the same score"
    return "n/a: undefined"


def meta_correlation_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *, coefficient: str,
                           systems: list[str] | None = None) -> pd.DataFrame:
    """M (003 Eq. 3) per run and dimension, with its p-value and the systems dropped as undefined."""
    from evalcore.meta.systems import meta_correlation

    labels = {r.run_id: run_label(r) for r in runs}
    rows = []
    for dim in _dimensions(dataset, dimensions):
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            if frame["system_id"].nunique() < 3:
                continue
            r = meta_correlation(frame, coefficient=coefficient)
            rows.append({"run": labels[run_id], "dimension": dim, "M": r.statistic, "pvalue": r.pvalue,
                         "n_systems": r.n_systems, "dropped_systems": ", ".join(map(str, r.dropped_systems)),
                         "note": _undefined_m(r) if pd.isna(r.statistic) else ""})
    return pd.DataFrame(rows)


def _undefined_m(r: MetaCorrelationResult) -> str:
    """Why M (a correlation over systems of Q_i and P_i) is undefined."""
    t = r.table[r.table["defined"]]
    if len(t) < 3:
        return f"n/a: P_i is defined for {len(t)} system(s), fewer than 3"
    if t["correlation"].nunique() < 2:
        return "n/a: M undefined, all P_i are equal"
    if t["quality"].nunique() < 2:
        return "n/a: M undefined, all Q_i are equal"
    return "n/a: undefined"


def _cp_row(row: dict, counts: dict[str, CorrectPreferencesResult | None]) -> dict:
    for name, r in counts.items():
        if r is not None:  # no pair of the set covered: no figure
            row[f"{name} correct"] = r.correct
            row[f"{name} total"] = r.total
    return row


def correct_preferences_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *,
                              systems: list[str] | None = None) -> pd.DataFrame:
    """#CP per run and dimension on the full and the challenge pair sets (``pair_sets``)."""
    sets = pair_sets(dataset, systems)
    labels = {r.run_id: run_label(r) for r in runs}
    dims = _dimensions(dataset, dimensions)
    rows = [_cp_row({"run": labels[run_id], "dimension": dim}, correct_preference_counts(frame, sets))
            for dim in dims for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items()]
    # Pairwise (H2H) runs: the judge's points come from its verdicts, not from per-item scores.
    for run in runs:
        if run.comparisons.empty:
            continue
        for dim in dims:
            comps = run.comparisons[run.comparisons["dimension"] == dim]
            if not comps.empty:
                rows.append(_cp_row({"run": labels[run.run_id], "dimension": dim},
                                    {name: h2h_cp(dataset, comps, dim, pairs) if pairs else None
                                     for name, pairs in sets.items()}))
    table = pd.DataFrame(rows)
    if not table.empty:
        for name in ("full", "challenge"):
            if f"{name} correct" in table.columns:
                table[f"{name} %"] = 100.0 * table[f"{name} correct"] / table[f"{name} total"]
    return table


def h2h_cp(dataset: Dataset, comparisons: pd.DataFrame, dimension: str, pairs: Sequence[tuple[str, str]] | None
           ) -> CorrectPreferencesResult | None:
    """#CP of a pairwise run (003 H2H), through evalcore.meta.pairwise; None when the run did not judge every pair
    of the set (Shen's H2H run covers only the 11 challenge pairs)."""
    from evalcore.meta import pairwise

    try:
        return pairwise.h2h_correct_preferences(comparisons, dataset.items, dataset.human_scores, dimension,
                                                pairs=pairs)
    except ValueError:
        return None


def reliability_pairs(runs: list[Run]) -> list[tuple[Run, Run]]:
    """(RTS run, MCQ run) pairs from the same judge model: the inputs of 003's reliability indicator (Eq. 4).

    When a model has several prompt variants of each (Shen's RTS/MCQ and RTS2/MCQ2), a run is paired with the MCQ
    run of the same model and the same prompt variant as its record gives it (``prompt_variant``: "altrts" with
    "altmcq"); otherwise with every MCQ run of the same model whose variant has no RTS run. Read from the runs'
    records, never from their ids."""
    rts = [r for r in runs if r.method == "rts"]
    mcq = [r for r in runs if r.method == "mcq"]
    rts_keys = {(r.model, _variant_family(r)) for r in rts}
    out = []
    for a in rts:
        twins = [b for b in mcq if (b.model, _variant_family(b)) == (a.model, _variant_family(a))]
        out += [(a, b) for b in twins] if twins else \
            [(a, b) for b in mcq if b.model == a.model and (b.model, _variant_family(b)) not in rts_keys]
    return out


def _variant_family(run: Run) -> str:
    """The prompt variant a run records (a published run's ``prompt_variant``: "rts", "altrts", "mcq", ...) without
    its method: "" for the first variant, "alt" for the second; "" for a run that records none."""
    variant = str(run.config.extra.get("prompt_variant") or "")
    return variant.removesuffix(run.method)


def reliability_view(dataset: Dataset, rts: Run, mcq: Run, dimension: str, *, coefficient: str
                     ) -> ReliabilityResult:
    """R_i per system with P_i of both methods, and corr(R_i, P_i) for each (003 Eq. 4)."""
    from evalcore.meta.systems import reliability

    a = runs_mod.score_frame(dataset, rts, dimension)
    b = runs_mod.score_frame(dataset, mcq, dimension)
    return reliability(a, b, coefficient=coefficient)


def reliability_intervals(table: pd.DataFrame, coefficient: str, n_resamples: int) -> dict:
    """corr(R_i, P_i) of RTS and MCQ with its 95% interval over systems (evalcore.meta.across_systems)."""
    from evalcore.meta.across_systems import across_systems_interval

    return {side: across_systems_interval(table["reliability"], table[f"p_{side}"], coefficient=coefficient,
                                          n_resamples=n_resamples) for side in ("rts", "mcq")}


def difficulty_table(dataset: Dataset, runs: list[Run], dimension: str, *, systems: list[str] | None = None,
                     n_resamples: int = 1000) -> pd.DataFrame:
    """002's pairwise tau by difficulty bucket (hard/medium/easy by the human score gap) for each run, with its 95%
    interval over documents (tau_ci_low, tau_ci_high)."""
    from evalcore.meta.pairwise import pairwise_kendall_by_difficulty

    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        t = pairwise_kendall_by_difficulty(frame, n_resamples=n_resamples).copy()
        t.insert(0, "run", labels[run_id])
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
