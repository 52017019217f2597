"""Frames and figures for pairwise preferences (the Alignment page's "Pairwise preferences" tab and the report):
thin layouts of what :func:`evalcore.analyses.preferences.summaries` computes."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import plotly.graph_objects as go

from evalcore.analyses.preferences import pairwise_runs, summaries  # noqa: F401  (computed there, laid out here)
from evalcore.model import Dataset

TABLE_COLUMNS = ["run", "statistic", "value", "ci_low", "ci_high", "n", "note"]

# (key in the summary, what to call it), in the order the field reports them.
STATISTICS = (
    ("agreement.with_ties", "judge vs every vote, with ties (S1)"),
    ("agreement.without_ties", "judge vs every vote, without ties (S2)"),
    ("accuracy", "judge vs majority: accuracy"),
    ("cohen_kappa", "judge vs majority: Cohen's kappa"),
    ("accuracy_ab", "accuracy, A shown first"),
    ("accuracy_ba", "accuracy, B shown first"),
    ("both_orders_correct", "right in both orders"),
    ("positional_agreement", "positional agreement (same winner in both orders)"),
    ("positional_agreement_llmbar", "positional agreement, LLMBar's count (unreadable in both orders agrees)"),
)
HUMAN_STATISTICS = (("human_human.with_ties", "human vs human, with ties"),
                    ("human_human.without_ties", "human vs human, without ties"))
BIAS_STATISTICS = (("bias.position_first_win_rate", "position: share of decisive verdicts for the first shown"),
                   ("bias.judge_prefers_longer", "verbosity: judge's decisive verdicts for the longer output"),
                   ("bias.humans_prefer_longer", "verbosity: humans' decisive votes for the longer output"),
                   ("bias.self_preference.judge_win_rate_own", "self-preference: judge's win rate for its family"),
                   ("bias.self_preference.human_win_rate_own", "self-preference: humans' win rate for that family"))


def _get(summary: dict, key: str) -> dict | None:
    x: object = summary
    for part in key.split("."):
        if not isinstance(x, dict) or part not in x:
            return None
        x = x[part]
    return x if isinstance(x, dict) and "statistic" in x else None


def _rows(run: str, summary: dict, stats: Iterable[tuple[str, str]]) -> list[dict]:
    """A row per statistic the summary holds; one with no figure (no readable verdict) keeps its row, blank, with
    the reason in ``note``: never a 0."""
    out = []
    for key, label in stats:
        x = _get(summary, key)
        if x is not None and (x["statistic"] is not None or x.get("reason")):
            out.append({"run": run, "statistic": label, "value": x["statistic"], "ci_low": x["ci_low"],
                        "ci_high": x["ci_high"], "n": x["n"], "note": x.get("reason", "")})
    return out


def agreement_table(sums: dict[str, dict]) -> pd.DataFrame:
    """One row per run and statistic, then the humans among themselves (once: they do not depend on the run)."""
    rows = [r for run, s in sums.items() for r in _rows(run, s, STATISTICS)]
    if sums:
        rows += _rows("humans", next(iter(sums.values())), HUMAN_STATISTICS)
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def bias_table(sums: dict[str, dict]) -> pd.DataFrame:
    return pd.DataFrame([r for run, s in sums.items() for r in _rows(run, s, BIAS_STATISTICS)], columns=TABLE_COLUMNS)


def counts_table(sums: dict[str, dict]) -> pd.DataFrame:
    cols = ["run", "pairs", "votes", "annotators", "judged_pairs", "with_verdict", "unreadable", "missing_order",
            "orders"]
    rows = [{"run": run, **{k: (", ".join(v) if isinstance(v, list) else v) for k, v in s["counts"].items()}}
            for run, s in sums.items()]
    for r in rows:
        r["annotators"] = len(r["annotators"].split(", ")) if r["annotators"] else 0
    return pd.DataFrame(rows, columns=cols)


def annotator_kappa_table(summary: dict) -> pd.DataFrame:
    return pd.DataFrame([{"annotator_1": k["a"], "annotator_2": k["b"], "cohen_kappa": k["kappa"], "pairs": k["n"],
                          "note": k.get("note", "")} for k in summary.get("annotator_kappa", [])],
                        columns=["annotator_1", "annotator_2", "cohen_kappa", "pairs", "note"])


def annotators_agreement_table(preferences: pd.DataFrame) -> pd.DataFrame:
    """Cohen's kappa for each pair of annotators from the votes alone: what a dataset of pairwise votes shows before
    any judge run is chosen (evalcore.meta.preference.annotator_kappas)."""
    from evalcore.meta.preference import annotator_kappas

    return annotator_kappa_table({"annotator_kappa": annotator_kappas(preferences)})


def per_annotator_table(sums: dict[str, dict]) -> pd.DataFrame:
    rows = []
    for run, s in sums.items():
        for a in s.get("per_annotator", []):
            rows.append({"run": run, "annotator": a["annotator"], "with_ties": a["with_ties"]["statistic"],
                         "without_ties": a["without_ties"]["statistic"], "cohen_kappa": a["cohen_kappa"]["statistic"],
                         "n": a["with_ties"]["n"]})
    return pd.DataFrame(rows, columns=["run", "annotator", "with_ties", "without_ties", "cohen_kappa", "n"])


# A rate's interval ends are named after it (``<rate>_ci_low``) so a table shows them in its unit (percent).
MODEL_COLUMNS = ["run", "model", "human_win_rate", "human_win_rate_ci_low", "human_win_rate_ci_high", "judge_win_rate",
                 "judge_win_rate_ci_low", "judge_win_rate_ci_high", "human_votes", "judge_verdicts"]


def model_table(sums: dict[str, dict]) -> pd.DataFrame:
    rows = []
    for run, s in sums.items():
        for m in (s.get("models") or {}).get("per_model", []):
            h, j = m["human_win_rate"], m["judge_win_rate"]
            rows.append({"run": run, "model": m["model"], "human_win_rate": h["statistic"],
                         "human_win_rate_ci_low": h["ci_low"], "human_win_rate_ci_high": h["ci_high"],
                         "judge_win_rate": j["statistic"], "judge_win_rate_ci_low": j["ci_low"],
                         "judge_win_rate_ci_high": j["ci_high"], "human_votes": h["n"], "judge_verdicts": j["n"]})
    return pd.DataFrame(rows, columns=MODEL_COLUMNS)


def agreement_figure(table: pd.DataFrame, colors: dict[str, str] | None = None) -> go.Figure:
    """Each statistic as a dot with its 95% CI, one colour per run (humans in grey). A statistic with no figure is not
    drawn; a note under the chart names it and says why."""
    fig = go.Figure()
    missing = table[table["value"].isna()]
    table = table[table["value"].notna()]
    for run, sub in table.groupby("run", sort=False):
        color = "#7f7f7f" if run == "humans" else (colors or {}).get(run)
        fig.add_trace(go.Scatter(
            x=sub["value"], y=sub["statistic"], mode="markers", name=str(run),
            marker={"size": 10, "color": color},
            error_x={"type": "data", "symmetric": False, "array": (sub["ci_high"] - sub["value"]).tolist(),
                     "arrayminus": (sub["value"] - sub["ci_low"]).tolist()},
            hovertemplate="%{y}: %{x:.3f}<extra>" + str(run) + "</extra>"))
    fig.update_layout(xaxis_title="value (95% bootstrap CI over prompts)", yaxis_title="statistic",
                      yaxis={"autorange": "reversed"}, height=140 + 34 * table["statistic"].nunique(),
                      legend_title_text="run", margin={"l": 10, "r": 10, "t": 30, "b": 10})
    if len(missing):
        _note(fig, "Not drawn: " + "; ".join(f"{r.run}: {r.statistic} ({r.note or 'undefined'})"
                                             for r in missing.itertuples()), y=-0.12)
        fig.update_layout(margin={"b": 40 + 18 * len(missing)})
    return fig


def _note(fig: go.Figure, text: str, y: float = 0.5) -> None:
    """Words on a chart in place of data (or under it): what is not drawn and why."""
    fig.add_annotation(text=text, xref="paper", yref="paper", x=0.5 if y == 0.5 else 0, y=y, showarrow=False,
                       xanchor="center" if y == 0.5 else "left", yanchor="top" if y < 0 else "middle",
                       font={"color": "#555555"})


def confusion_figure(summary: dict, run: str) -> go.Figure:
    cm = summary["confusion_matrix"]
    labels = cm["labels"]
    if cm.get("counts") is None:  # no readable verdict: an all-zero matrix would be drawn as data
        fig = go.Figure()
        _note(fig, cm.get("reason") or "no readable verdict")
        fig.update_layout(title=f"{run}: judge vs majority vote", xaxis={"visible": False}, yaxis={"visible": False},
                          height=360)
        return fig
    fig = go.Figure(go.Heatmap(z=cm["counts"], x=labels, y=labels, colorscale="Blues", showscale=False,
                               text=cm["counts"], texttemplate="%{text}",
                               hovertemplate="majority %{y}, judge %{x}: %{z}<extra></extra>"))
    # the run's name on a line of its own: in a half-width column "<run>: judge vs majority vote" was cut off
    fig.update_layout(title=f"Judge vs majority vote<br><sup>{run}</sup>", xaxis_title="judge's verdict",
                      yaxis_title="humans' majority vote", yaxis={"autorange": "reversed"}, height=360)
    return fig


def win_rate_figure(models: pd.DataFrame, run: str) -> go.Figure:
    """Per model: the humans' win rate against the judge's (ties count 0.5); the diagonal is perfect agreement."""
    sub = models[models["run"] == run]
    fig = go.Figure()
    if sub["judge_win_rate"].isna().all():  # nothing to place on the judge's axis
        _note(fig, "no readable verdict: the judge's win rates rest on no verdict")
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot", "color": "#bbbbbb"},
                             showlegend=False, hoverinfo="skip"))
    fig.add_trace(go.Scatter(
        x=sub["human_win_rate"], y=sub["judge_win_rate"], mode="markers+text", text=sub["model"],
        textposition=label_positions(sub["human_win_rate"], sub["judge_win_rate"]), showlegend=False,
        marker={"size": 10},
        error_x={"type": "data", "symmetric": False,
                 "array": (sub["human_win_rate_ci_high"] - sub["human_win_rate"]).tolist(),
                 "arrayminus": (sub["human_win_rate"] - sub["human_win_rate_ci_low"]).tolist()},
        error_y={"type": "data", "symmetric": False,
                 "array": (sub["judge_win_rate_ci_high"] - sub["judge_win_rate"]).tolist(),
                 "arrayminus": (sub["judge_win_rate"] - sub["judge_win_rate_ci_low"]).tolist()},
        hovertemplate="%{text}: humans %{x:.1%}, judge %{y:.1%}<extra></extra>"))
    # percent, as the table beside it shows the same rates
    fig.update_layout(title=f"{run}: win rate per model", xaxis_title="humans' win rate (ties 0.5)",
                      yaxis_title="judge's win rate (ties 0.5)", xaxis={"range": [0, 1], "tickformat": ".0%"},
                      yaxis={"range": [0, 1], "tickformat": ".0%"}, height=420)
    return fig


# where a point's name goes, as (dx, dy) of its anchor in axis units (0-1 axes), in order of preference
_LABEL_SPOTS = {"top center": (0.0, 0.04), "bottom center": (0.0, -0.04), "middle right": (0.08, 0.0),
                "middle left": (-0.08, 0.0), "top right": (0.06, 0.035), "bottom left": (-0.06, -0.035),
                "top left": (-0.06, 0.035), "bottom right": (0.06, -0.035)}


def label_positions(x: Iterable[object], y: Iterable[object], *, clearance: float = 0.06) -> list[str]:
    """A text position per point so that names of nearby points do not sit on each other (models with similar win
    rates drew their names on one spot): each point takes the first spot, in ``_LABEL_SPOTS`` order, whose anchor
    is at least ``clearance`` from every name placed so far, else the spot farthest from them."""
    placed: list[tuple[float, float]] = []
    out = []
    for px, py in zip(pd.to_numeric(pd.Series(list(x)), errors="coerce").fillna(0.5),
                      pd.to_numeric(pd.Series(list(y)), errors="coerce").fillna(0.5)):
        def gap(spot: str) -> float:
            ax, ay = px + _LABEL_SPOTS[spot][0], py + _LABEL_SPOTS[spot][1]
            return min((((ax - qx) / 2) ** 2 + (ay - qy) ** 2) ** 0.5 for qx, qy in placed) if placed else 1.0

        spot = next((sp for sp in _LABEL_SPOTS if gap(sp) >= clearance), None) or max(_LABEL_SPOTS, key=gap)
        placed.append((px + _LABEL_SPOTS[spot][0], py + _LABEL_SPOTS[spot][1]))
        out.append(spot)
    return out


def votes_overview(dataset: Dataset) -> pd.DataFrame:
    """Per dimension of pairwise votes: pairs, votes, annotators and the share of each outcome (the Data page)."""
    p = dataset.preferences
    rows = []
    for dim, g in p.groupby("dimension", sort=False):
        shares = g["preferred"].value_counts(normalize=True)
        row = {"dimension": dim, "pairs": g["pair_id"].nunique(), "votes": len(g),
               "annotators": g["annotator"].nunique(), "votes_per_pair": len(g) / g["pair_id"].nunique(),
               "a_share": shares.get("a", 0.0), "b_share": shares.get("b", 0.0), "tie_share": shares.get("tie", 0.0)}
        if "tie_variant" in g.columns:
            variants = g.loc[g["tie_variant"].fillna("") != "", "tie_variant"].value_counts()
            row["tie_variants"] = ", ".join(f"{k}: {v}" for k, v in variants.items()) or "-"
        rows.append(row)
    return pd.DataFrame(rows)
