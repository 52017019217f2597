"""A judge's agreement over time on one dataset (Alignment page): the runs of one judge, by date, each with its
correlation with the humans and its 95% interval, computed by the same analysis as the page's headline
(``evalcore.analyses.correlations.alignment_table``, one level and coefficient).

One judge is one fingerprint (``evalcore.fingerprint``) less the model snapshot the endpoint reported: the drift
this chart is for is the provider serving another snapshot under the same model name, which would otherwise split
the judge into series of one point each; the reported snapshot is shown on each point instead. A prompt edit, another
method or other parameters change the fingerprint, so they make another judge.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go

from evalcore.analyses.correlations import alignment_table
from evalcore.fingerprint import fingerprint
from evalcore.model import Dataset, Run
from evalcore.views.blocks import Block, Figure, Heading, Note, Table

HEADING = "Agreement over time"
COLUMNS = ["date", "run", "run_id", "statistic", "ci_low", "ci_high", "n", "reported_model"]


def judge_key(run: Run) -> str:
    """The judge a run belongs to: its fingerprint without ``reported_model`` (the module docstring says why)."""
    fp = {k: v for k, v in fingerprint(run).items() if k not in ("hash", "reported_model")}
    return hashlib.sha256(json.dumps(fp, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def judge_label(run: Run, key: str) -> str:
    fp = fingerprint(run)
    return f"{fp['model']} · {fp['method']} · {key[:8]}"


def judges(runs: list[Run]) -> dict[str, list[Run]]:
    """Each judge (by label) with its dated runs, oldest first: only judges with two dated runs or more, for
    whom there is a history to draw. ``runs`` may be index objects (no scores): the fingerprint is read from the
    record alone."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        if run.created_at:
            key = judge_key(run)
            groups.setdefault(judge_label(run, key), []).append(run)
    return {label: sorted(rs, key=lambda r: (r.created_at, r.run_id)) for label, rs in groups.items() if len(rs) > 1}


def history_frame(runs: list[Run], table: pd.DataFrame) -> pd.DataFrame:
    """One row per run of ``runs`` that ``table`` (an ``alignment_table`` of one level and coefficient) holds: its
    date, correlation and interval, oldest first."""
    if table is None or table.empty:
        return pd.DataFrame(columns=COLUMNS)
    by_id = {r.run_id: r for r in runs}
    t = table[table["run_id"].isin(list(by_id))].copy()
    t["date"] = pd.to_datetime([by_id[i].created_at for i in t["run_id"]], utc=True)  # ISO 8601 text, as the store writes it
    t["reported_model"] = [str((by_id[i].config.extra or {}).get("reported_model") or "") for i in t["run_id"]]
    return t.sort_values(["date", "run_id"], kind="stable")[COLUMNS].reset_index(drop=True)


def history_figure(frame: pd.DataFrame, *, judge: str, level: str, coefficient: str) -> go.Figure:
    """The judge's correlation per run by date, with each 95% interval as an error bar (none where the run has
    no interval)."""
    # a run without an interval gets no error bar (None), not a bar of length 0 that would read as exact
    hi = (frame["ci_high"] - frame["statistic"]).astype(object).where(frame["ci_high"].notna(), None)
    lo = (frame["statistic"] - frame["ci_low"]).astype(object).where(frame["ci_low"].notna(), None)
    fig = go.Figure(go.Scatter(
        x=frame["date"], y=frame["statistic"], mode="lines+markers", name=judge, customdata=frame[["run"]],
        error_y=dict(type="data", symmetric=False, array=hi.tolist(), arrayminus=lo.tolist()),
        hovertemplate="%{customdata[0]}<br>%{x}<br>" + coefficient + " %{y:.3f}<extra></extra>",
    ))
    fig.update_layout(title=f"{judge}: {level}-level {coefficient} correlation with the humans by date (95% CI)",
                      xaxis_title="run date (UTC)", yaxis_title=f"{coefficient} correlation with human ratings")
    return fig


def history_blocks(frame: pd.DataFrame, runs: list[Run], *, judge: str, level: str, coefficient: str) -> list[Block]:
    """The chart and its table, and a note on the judge's runs the table lacks (they did not score the dimension,
    or too few items were scored to correlate)."""
    if frame.empty:
        return [Note(f"No run of {judge} has a {level}-level {coefficient} correlation on this dimension.")]
    blocks: list[Block] = [
        Figure(history_figure(frame, judge=judge, level=level, coefficient=coefficient), key="chart_history"),
        Table(frame, name="history", key="table_history", static=True),  # run_id: runs of one judge share a name
    ]
    missing = [r.run_id for r in runs if r.run_id not in set(frame["run_id"])]
    if missing:
        blocks.append(Note(f"Without a correlation here (dimension not scored, or too few items): "
                           f"{', '.join(missing)}."))
    return blocks


def judge_history(dataset: Dataset, runs: list[Run], dimension: str, *, level: str, coefficient: str,
                  n_resamples: int = 1000,
                  table_fn: Callable[..., pd.DataFrame] | None = None) -> pd.DataFrame:
    """``history_frame`` of one judge's ``runs`` (loaded, with scores), the correlations computed here;
    ``table_fn`` (default ``alignment_table``) lets a caller pass its cached cell instead."""
    fn = table_fn or alignment_table
    table = fn(dataset, runs, dimension, n_resamples=n_resamples, levels=(level,), coefficients=(coefficient,))
    return history_frame(runs, table)


def intro(judges_found: dict[str, list[Run]]) -> list[Block]:
    """The section's heading, and why nothing is drawn when no judge has two dated runs."""
    head: list[Block] = [Heading(HEADING, level=3)]
    if not judges_found:
        return head + [Note("A judge's agreement over time needs two runs or more of the same judge (same model, "
                            "method, prompt and parameters) on this dataset.")]
    return head
