"""Alignment page: correlation with the humans (levels x coefficients, CIs), the human ceiling, per-system
correlations and the meta-correlation (003), #CP, RTS-MCQ reliability, pairwise agreement by difficulty (002)."""

from __future__ import annotations

import itertools
from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from evalcore import runs as runs_mod
from evalcore.model import Dataset, Run
from evalcore.views.common import frames_for, run_label


def alignment_table(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000,
                    systems: list[str] | None = None) -> pd.DataFrame:
    """Correlation of each run with the humans: level x coefficient, with CI, n, skipped and dropped counts."""
    from evalcore.meta.correlation import correlation_table

    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        t = correlation_table(frame, n_resamples=n_resamples)
        t.insert(0, "run", labels[run_id])
        t.insert(1, "run_id", run_id)
        parts.append(t)
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    keep = ["run", "level", "coefficient", "statistic", "ci_low", "ci_high", "n", "skipped", "dropped", "pvalue",
            "run_id"]
    return table[[c for c in keep if c in table.columns]]


def alignment_figure(table: pd.DataFrame, coefficient: str) -> go.Figure:
    """Correlation per level with its CI for one coefficient, one bar per run."""
    t = table[table["coefficient"] == coefficient]
    fig = go.Figure()
    for run, sub in t.groupby("run", sort=False):
        fig.add_trace(go.Bar(
            x=sub["level"], y=sub["statistic"], name=str(run),
            error_y=dict(type="data", symmetric=False, array=(sub["ci_high"] - sub["statistic"]).tolist(),
                         arrayminus=(sub["statistic"] - sub["ci_low"]).tolist()),
        ))
    fig.update_layout(barmode="group", title=f"{coefficient.title()} correlation with human ratings (95% CI)",
                      yaxis_title=coefficient, xaxis_title="level")
    return fig


def ceiling_table(dataset: Dataset, dimension: str, *, level: str, coefficient: str) -> pd.DataFrame:
    """Each expert against the mean of the others (the human ceiling), at the same level and coefficient."""
    from evalcore.meta.agreement import human_ceiling

    ann = dataset.annotations
    if ann.empty or not (ann["dimension"] == dimension).any():
        return pd.DataFrame()
    groups = list(ann.loc[ann["dimension"] == dimension, "group"].dropna().unique())
    group = "expert" if "expert" in groups else (groups[0] if groups else None)
    sub = ann[(ann["dimension"] == dimension) & (ann["group"] == group)] if group is not None else ann
    if sub["annotator"].nunique() < 2:
        return pd.DataFrame()
    t = human_ceiling(ann, dataset.items, dimension, group=group, level=level, coefficient=coefficient)
    t = t.copy()
    t.insert(0, "group", group)
    return t


def per_system_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *, coefficient: str,
                     systems: list[str] | None = None) -> pd.DataFrame:
    """P_i (003 Eq. 2) and Q_i (Eq. 1) for every run, dimension and system."""
    from evalcore.meta.systems import per_system

    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for dim in dimensions:
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            if frame["system_id"].nunique() < 2:
                continue
            t = per_system(frame, coefficient=coefficient).copy()
            t.insert(0, "run", labels[run_id])
            t.insert(1, "dimension", dim)
            parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def per_system_box(table: pd.DataFrame, coefficient: str) -> go.Figure:
    """003 Fig. 1: the spread of per-system correlations in each dimension (one box per run and dimension)."""
    fig = px.box(table, x="dimension", y="correlation", color="run", points="all",
                 hover_data=["system_id"] if "system_id" in table.columns else None,
                 title=f"Per-system {coefficient} correlation (003 Fig. 1)")
    fig.update_layout(yaxis_title=f"{coefficient} per system (P_i)")
    return fig


def meta_correlation_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *, coefficient: str,
                           systems: list[str] | None = None) -> pd.DataFrame:
    """M (003 Eq. 3) per run and dimension, with its p-value and the systems dropped as undefined."""
    from evalcore.meta.systems import meta_correlation

    labels = {r.run_id: run_label(r) for r in runs}
    rows = []
    for dim in dimensions:
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            if frame["system_id"].nunique() < 3:
                continue
            r = meta_correlation(frame, coefficient=coefficient)
            rows.append({"run": labels[run_id], "dimension": dim, "M": r.statistic, "pvalue": r.pvalue,
                         "n_systems": r.n_systems, "dropped_systems": ", ".join(map(str, r.dropped_systems))})
    return pd.DataFrame(rows)


def meta_scatter(per_system: pd.DataFrame, meta_table: pd.DataFrame, dimension: str, coefficient: str) -> go.Figure:
    """003 Fig. 2-3: system quality Q_i against the judge's per-system correlation P_i; M and p in the legend."""
    t = per_system[per_system["dimension"] == dimension].copy()
    fig = go.Figure()
    for run, sub in t.groupby("run", sort=False):
        m = meta_table[(meta_table["run"] == run) & (meta_table["dimension"] == dimension)]
        tag = f" (M={m['M'].iloc[0]:.3f}, p={m['pvalue'].iloc[0]:.3g})" if len(m) else ""
        fig.add_trace(go.Scatter(x=sub["quality"], y=sub["correlation"], mode="markers+text",
                                 text=sub["system_id"].astype(str), textposition="top center",
                                 name=f"{run}{tag}"))
    fig.update_layout(title=f"Meta-correlation on {dimension}: Q_i vs P_i (003 Fig. 2-3)",
                      xaxis_title="system quality Q_i (mean human score)",
                      yaxis_title=f"judge-human {coefficient} on the system (P_i)")
    return fig


def pair_sets(dataset: Dataset, systems: list[str] | None = None) -> dict[str, list[tuple[str, str]] | None]:
    """The system pairs #CP is counted on (003 4.2.1): all pairs of the abstractive systems (SummEval) or of every
    system, and the challenge pairs (adjacent in average human score over all dimensions, 003 App. E)."""
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


def correct_preferences_table(dataset: Dataset, runs: list[Run], dimensions: list[str], *,
                              systems: list[str] | None = None) -> pd.DataFrame:
    """#CP per run and dimension on the full and the challenge pair sets."""
    from evalcore.meta.systems import correct_preferences

    sets = pair_sets(dataset, systems)
    labels = {r.run_id: run_label(r) for r in runs}
    rows = []
    for dim in dimensions:
        for run_id, frame in frames_for(dataset, runs, dim, systems=systems).items():
            row: dict[str, Any] = {"run": labels[run_id], "dimension": dim}
            scored = set(frame.loc[frame["judge"].notna(), "system_id"])
            for name, pairs in sets.items():
                # a run that scored only some systems (a first try on a few items) is counted on the pairs it
                # covers; "total" says how many that is
                pairs = [p for p in pairs if p[0] in scored and p[1] in scored]
                if not pairs:
                    continue
                r = correct_preferences(frame, pairs=pairs)
                row[f"{name} correct"] = r.correct
                row[f"{name} total"] = r.total
            rows.append(row)
    # Pairwise (H2H) runs: the judge's points come from its verdicts, not from per-item scores.
    for run in runs:
        if run.comparisons.empty:
            continue
        for dim in dimensions:
            comps = run.comparisons[run.comparisons["dimension"] == dim]
            if comps.empty:
                continue
            row = {"run": labels[run.run_id], "dimension": dim}
            for name, pairs in sets.items():
                if not pairs:
                    continue
                r = h2h_cp(dataset, comps, dim, pairs)
                if r is None:
                    continue
                row[f"{name} correct"] = r.correct
                row[f"{name} total"] = r.total
            rows.append(row)
    table = pd.DataFrame(rows)
    if not table.empty:
        for name in ("full", "challenge"):
            if f"{name} correct" in table.columns:
                table[f"{name} %"] = 100.0 * table[f"{name} correct"] / table[f"{name} total"]
    return table


def h2h_cp(dataset: Dataset, comparisons: pd.DataFrame, dimension: str, pairs):
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
    run whose id is its own with "rts" replaced by "mcq"; otherwise with every MCQ run of the same model."""
    rts = [r for r in runs if r.method == "rts"]
    mcq = [r for r in runs if r.method == "mcq"]
    by_id = {r.run_id: r for r in mcq}
    out = []
    for a in rts:
        twin = by_id.get(a.run_id.replace("rts", "mcq"))
        if twin is not None and twin.model == a.model:
            out.append((a, twin))
        else:
            out += [(a, b) for b in mcq if b.model == a.model and b.run_id.replace("mcq", "rts") not in
                    {r.run_id for r in rts}]
    return out


def reliability_view(dataset: Dataset, rts: Run, mcq: Run, dimension: str, *, coefficient: str):
    """R_i per system with P_i of both methods, and corr(R_i, P_i) for each (003 Eq. 4)."""
    from evalcore.meta.systems import reliability

    a = runs_mod.score_frame(dataset, rts, dimension)
    b = runs_mod.score_frame(dataset, mcq, dimension)
    return reliability(a, b, coefficient=coefficient)


def difficulty_table(dataset: Dataset, runs: list[Run], dimension: str, *, systems: list[str] | None = None
                     ) -> pd.DataFrame:
    """002's pairwise tau by difficulty bucket (hard/medium/easy by the human score gap) for each run."""
    from evalcore.meta.pairwise import pairwise_kendall_by_difficulty

    labels = {r.run_id: run_label(r) for r in runs}
    parts = []
    for run_id, frame in frames_for(dataset, runs, dimension, systems=systems).items():
        t = pairwise_kendall_by_difficulty(frame).copy()
        t.insert(0, "run", labels[run_id])
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def difficulty_figure(table: pd.DataFrame) -> go.Figure:
    fig = px.bar(table, x="bucket", y="tau", color="run", barmode="group",
                 hover_data=[c for c in ("n_pairs",) if c in table.columns],
                 title="Pairwise Kendall tau by difficulty (002)")
    return fig


# ------------------------------------------------------------------------------------ categorical labels (issue 7.4)


def label_agreements(dataset: Dataset, runs: list[Run], dimension: str, *, n_resamples: int = 1000,
                     systems: list[str] | None = None) -> dict:
    """run label -> evalcore.meta.classification.LabelAgreement for every per-item run that judged a binary,
    nominal or ordinal ``dimension``; {} for an interval dimension."""
    from evalcore.meta.classification import label_agreement

    if not dataset.dimension(dimension).is_categorical:
        return {}
    out = {}
    for run in runs:
        if run.judgments.empty or dimension not in run.dimensions:
            continue
        out[run_label(run)] = label_agreement(dataset, run, dimension, n_resamples=n_resamples, systems=systems,
                                              human_alpha=False)  # the page shows the Data page's alpha
    return out


STATISTIC_NAMES = {"cohen_kappa": "Cohen's kappa", "weighted_kappa": "quadratic-weighted kappa",
                   "accuracy": "accuracy", "precision": "precision", "recall": "recall", "f1": "F1"}


def label_agreement_table(reports: dict) -> pd.DataFrame:
    """One row per run and statistic: value, 95% CI, items compared, failed parses, ties left out."""
    rows = []
    for run, rep in reports.items():
        r = rep.result
        for key, e in r.estimates().items():
            what = STATISTIC_NAMES[key]
            if key in ("precision", "recall", "f1"):
                what += f" ({rep.positive})" if r.average == "binary" else " (macro)"
            rows.append({"run": run, "statistic": what, "value": e.statistic, "ci_low": e.ci_low,
                         "ci_high": e.ci_high, "n": r.n, "dropped": r.dropped + r.invalid, "ties": rep.ties + r.human_ties,
                         "gold": rep.gold})
    return pd.DataFrame(rows)


def per_annotator_kappa_table(reports: dict) -> pd.DataFrame:
    """The judge against each annotator on its own (kappa with CI, accuracy)."""
    parts = []
    for run, rep in reports.items():
        if rep.per_annotator.empty:
            continue
        t = rep.per_annotator.copy()
        t.insert(0, "run", run)
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def confusion_figure(report, run: str) -> go.Figure:
    """The confusion matrix as a heatmap: judge label across, human label down, each cell's count written in it."""
    r = report.result
    labels = [str(x) for x in r.labels]
    z = r.confusion.astype(int)
    share = z / z.sum(axis=1, keepdims=True).clip(min=1)
    text = [[f"{z[i, j]}<br>({100 * share[i, j]:.0f}% of row)" for j in range(len(labels))]
            for i in range(len(labels))]
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=labels, y=labels, text=text, texttemplate="%{text}", textfont={"size": 15},
        colorscale="Blues", zmin=0, showscale=True,
        colorbar=dict(title="items"),
        hovertemplate="human %{y}, judge %{x}: %{z} items<extra></extra>",
    ))
    fig.update_layout(title=f"Confusion matrix: {run} ({r.n} items)",
                      xaxis_title="judge label", yaxis_title="human label",
                      xaxis=dict(type="category", side="bottom"),
                      yaxis=dict(type="category", autorange="reversed"), height=360 + 40 * len(labels))
    return fig


def calibration_table(reports: dict) -> pd.DataFrame:
    """Brier score and ECE (with CIs) of every run that gave probabilities."""
    rows = []
    for run, rep in reports.items():
        c = rep.calibration
        if c is None:
            continue
        for name, e in (("Brier score", c.brier), ("ECE (10 bins)", c.ece)):
            rows.append({"run": run, "statistic": name, "value": e.statistic, "ci_low": e.ci_low,
                         "ci_high": e.ci_high, "n": c.n, "target": c.target})
    return pd.DataFrame(rows)


def reliability_figure(reports: dict) -> go.Figure:
    """The reliability diagram: mean predicted probability against the observed frequency per bin, one line per run,
    the diagonal is perfect calibration; marker size follows the bin's item count."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfectly calibrated",
                             line=dict(dash="dash", color="gray")))
    target = "positive class"
    for run, rep in reports.items():
        c = rep.calibration
        if c is None or c.bins.empty:
            continue
        target = c.target
        b = c.bins
        fig.add_trace(go.Scatter(
            x=b["mean_predicted"], y=b["fraction_positive"], mode="lines+markers", name=f"{run} (ECE {c.ece.statistic:.3f})",
            marker=dict(size=(6 + 14 * (b["count"] / b["count"].max()) ** 0.5).tolist()),
            customdata=b[["count", "lower", "upper"]].to_numpy(),
            hovertemplate="bin %{customdata[1]:.1f}-%{customdata[2]:.1f}: %{customdata[0]} items<br>"
                          "predicted %{x:.3f}, observed %{y:.3f}<extra></extra>",
        ))
    what = "positive (human) label" if target == "positive class" else "judge's label is right"
    fig.update_layout(title=f"Reliability diagram ({target})",
                      xaxis_title="judge's predicted probability (bin mean)",
                      yaxis_title=f"observed frequency: {what}",
                      xaxis={"range": [-0.02, 1.02]}, yaxis={"range": [-0.03, 1.05]})
    return fig
