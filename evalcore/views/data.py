"""Data page: the dataset, its rating distributions, inter-annotator agreement."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from evalcore import registry
from evalcore.identity import Viewer
from evalcore.model import Dataset, counted
from evalcore.views.blocks import Block, Figure, Heading, Metric, Metrics, Note, Table
from evalcore.views.format import esc

if TYPE_CHECKING:
    from evalcore.store import Store


def dataset_overview(dataset: Dataset) -> pd.DataFrame:
    """One row per dimension: scale, items rated, mean and sd of the gold human score."""
    rows = []
    prefs = dataset.preferences
    for d in dataset.dimensions:
        s = dataset.human_scores.loc[dataset.human_scores["dimension"] == d.name, "score"].astype(float)
        votes = prefs[prefs["dimension"] == d.name] if not prefs.empty else prefs
        if s.empty and len(votes):  # a pairwise dimension: votes on pairs, no score per item
            rows.append({"dimension": d.name, "scale": "pairwise: A / B / tie",
                         "items": int(pd.unique(votes[["item_a", "item_b"]].to_numpy().ravel()).size),
                         "mean": math.nan, "sd": math.nan,
                         "description": f"{votes['pair_id'].nunique():,} pairs, {len(votes):,} votes. "
                                        + (d.description or "")})
            continue
        rows.append({
            "dimension": d.name,
            "scale": f"{d.scale_min:g}-{d.scale_max:g}",
            "items": int(s.notna().sum()),
            "mean": float(s.mean()) if len(s) else math.nan,
            "sd": float(s.std()) if len(s) > 1 else math.nan,
            "description": d.description,
        })
    return pd.DataFrame(rows)


def preview_frame(dataset: Dataset, n: int = 50) -> pd.DataFrame:
    """The first items with their source and output text (shown in a dataframe: text, never HTML)."""
    texts = dataset.texts()
    cols = [c for c in ["item_id", "doc_id", "system_id", "output", "source", "context"] if c in texts.columns]
    extra = [c for c in dataset.items.columns if c not in cols and c not in ("references",)]
    return texts[cols + extra].head(n).reset_index(drop=True)


def rating_bins(values: pd.Series, scale_min: float, scale_max: float) -> pd.DataFrame:
    """Counts of one dimension's gold scores: ``score`` (bar centre), ``width``, ``count`` (whole numbers).

    Integer ratings get one bar per integer of the scale (zeros included); means of a few annotators (1-5 means of 3
    experts: steps of 1/3) get one bar per value taken, when there are at most 25; anything else 20 equal bins
    over the scale. Counts are counted here, so an axis never shows a fractional count."""
    v = pd.to_numeric(values, errors="coerce").dropna().astype(float)
    if v.empty:
        return pd.DataFrame(columns=["score", "width", "count"])
    lo = min(float(scale_min), float(v.min()))
    hi = max(float(scale_max), float(v.max()))
    if (v == v.round()).all() and hi - lo <= 100:
        centres = np.arange(math.floor(lo), math.floor(hi) + 1, dtype=float)
        counts = v.round().value_counts().reindex(centres, fill_value=0)
        return pd.DataFrame({"score": centres, "width": 0.8, "count": counts.to_numpy().astype(int)})
    distinct = np.sort(v.round(9).unique())
    if len(distinct) <= 25:
        gap = float(np.diff(distinct).min()) if len(distinct) > 1 else 1.0
        counts = v.round(9).value_counts().reindex(distinct, fill_value=0)
        return pd.DataFrame({"score": distinct, "width": 0.8 * gap, "count": counts.to_numpy().astype(int)})
    counts, edges = np.histogram(v, bins=20, range=(lo, hi))
    return pd.DataFrame({"score": (edges[:-1] + edges[1:]) / 2, "width": 0.95 * (edges[1] - edges[0]),
                         "count": counts.astype(int)})


def rating_histogram(dataset: Dataset) -> go.Figure:
    """Distribution of the gold human score, one panel per dimension, each with its own count axis and ticks."""
    from plotly.subplots import make_subplots

    from evalcore.views.common import HUMAN_COLOR
    from evalcore.views.format import integer_dtick

    if dataset.dimensions and all(d.is_categorical for d in dataset.dimensions):
        hs = dataset.human_scores.copy()
        hs["score"] = hs["score"].astype(float)
        return label_histogram(dataset, hs)
    dims = [d for d in dataset.dimensions
            if (dataset.human_scores["dimension"] == d.name).any()] or list(dataset.dimensions)
    ncols = min(4, max(1, len(dims)))
    nrows = max(1, math.ceil(len(dims) / ncols))
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=[d.name for d in dims],
                        horizontal_spacing=0.07, vertical_spacing=0.22 if nrows > 1 else 0.1)
    hs = dataset.human_scores
    for i, d in enumerate(dims):
        row, col = i // ncols + 1, i % ncols + 1
        bins = rating_bins(hs.loc[hs["dimension"] == d.name, "score"], d.scale_min, d.scale_max)
        fig.add_trace(go.Bar(x=bins["score"].tolist(), y=bins["count"].tolist(), width=bins["width"].tolist(),
                             marker_color=HUMAN_COLOR,
                             name=d.name, showlegend=False,
                             hovertemplate="score %{x:.3g}: %{y} items<extra>" + d.name + "</extra>"),
                      row=row, col=col)
        top = int(bins["count"].max()) if len(bins) else 1
        fig.update_yaxes(title_text="items", dtick=integer_dtick(top), tickformat=",d", rangemode="tozero",
                         showticklabels=True, row=row, col=col)
        fig.update_xaxes(title_text=f"score ({d.scale_min:g}-{d.scale_max:g})", row=row, col=col)
    fig.update_layout(title=f"Human ratings on {dataset.name}", bargap=0.1, height=max(320, 300 * nrows))
    return fig


def agreement_table(dataset: Dataset, *, n_resamples: int = 1000) -> pd.DataFrame:
    """Krippendorff's alpha per dimension and annotator group, with a bootstrap CI, at the level that matches the
    dimension's kind (interval, ordinal, or nominal for binary/nominal labels; column ``level``).

    Empty when the dataset has no per-annotator ratings."""
    from evalcore.meta.agreement import krippendorff_alpha

    ann = dataset.annotations
    if ann.empty:
        return pd.DataFrame(columns=["dimension", "group", "alpha", "ci_low", "ci_high", "n_items", "n_annotators",
                                     "level"])
    rows = []
    groups = [g for g in ann["group"].dropna().unique()] or [None]
    for dim in dataset.dimension_names:
        if not (ann["dimension"] == dim).any():
            continue
        for g in groups:
            sub = ann[(ann["dimension"] == dim) & (ann["group"] == g)] if g is not None else ann
            if sub.empty or sub["annotator"].nunique() < 2:
                continue
            level = dataset.dimension(dim).alpha_level  # nominal for binary/nominal labels, ordinal, interval
            r = krippendorff_alpha(ann, dim, group=g, n_resamples=n_resamples, level_of_measurement=level)
            rows.append({"dimension": dim, "group": g if g is not None else "all", "alpha": r.statistic,
                         "ci_low": r.ci_low, "ci_high": r.ci_high, "n_items": r.n,
                         "n_annotators": r.n_annotators, "level": level})
    return pd.DataFrame(rows)


def agreement_figure(table: pd.DataFrame) -> go.Figure:
    t = table.copy()
    fig = go.Figure()
    for g, sub in t.groupby("group", sort=False):
        fig.add_trace(go.Bar(
            x=sub["dimension"], y=sub["alpha"], name=str(g),
            error_y=dict(type="data", symmetric=False, array=(sub["ci_high"] - sub["alpha"]).tolist(),
                         arrayminus=(sub["alpha"] - sub["ci_low"]).tolist()),
        ))
    levels = sorted(set(t["level"])) if "level" in t.columns else ["interval"]
    fig.update_layout(barmode="group", title=f"Inter-annotator agreement (Krippendorff's alpha, {', '.join(levels)})",
                      yaxis_title="alpha", xaxis_title="dimension")
    return fig


def scale_guess(raw: pd.DataFrame, value_columns: list[str]) -> tuple[float, float]:
    """The usual rating scale that the numeric values of ``value_columns`` fit in: 1-5, 0-1, 1-3, 1-10, 0-100, else
    the data's own range. Used only to prefill the upload form; the user confirms it."""
    values = pd.concat([pd.to_numeric(raw[c], errors="coerce") for c in value_columns if c in raw.columns]
                       or [pd.Series(dtype=float)]).dropna()
    if values.empty:
        return 1.0, 5.0
    lo, hi = float(values.min()), float(values.max())
    for a, b in ((1, 5), (0, 1), (1, 3), (1, 10), (0, 100)):
        if a <= lo and hi <= b:
            return float(a), float(b)
    return float(np.floor(lo)), float(np.ceil(hi))


def dimension_kinds(dataset: Dataset) -> pd.DataFrame:
    """Label kind of each dimension: kind, its categories (labels with their codes) and alpha's level."""
    rows = []
    for d in dataset.dimensions:
        cats = ", ".join(f"{n} = {c:g}" if d.labels else n for n, c in zip(d.category_names, d.categories))
        rows.append({"dimension": d.name, "kind": d.kind,
                     "categories": cats or f"numbers {d.scale_min:g}-{d.scale_max:g}",
                     "positive class": d.positive or "", "alpha level": d.alpha_level})
    return pd.DataFrame(rows)


def label_histogram(dataset: Dataset, hs: pd.DataFrame) -> go.Figure:
    """Categorical dimensions: how many items have each label (labels on the axis, not their codes)."""
    parts = []
    for d in dataset.dimensions:
        sub = hs[hs["dimension"] == d.name]
        names = dict(zip(d.categories, d.category_names))
        counts = sub["score"].map(names).value_counts()
        parts.append(pd.DataFrame({"dimension": d.name, "label": list(d.category_names),
                                   "items": [int(counts.get(n, 0)) for n in d.category_names]}))
    t = pd.concat(parts, ignore_index=True)
    fig = px.bar(t, x="label", y="items", facet_col="dimension", facet_col_wrap=4, text="items",
                 title=f"Human labels on {dataset.name}")
    fig.update_xaxes(matches=None, type="category", title_text="label")
    fig.update_yaxes(title_text="items", showticklabels=True, tickformat=",d")
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    return fig


def votes_only_note(dataset: Dataset, section: str) -> str:
    """What the Data page's "Rating distributions" (``section`` "ratings") or "Human agreement" ("agreement") tab
    says on a dataset whose humans voted on pairs (A / B / tie) instead of rating items."""
    prefs = dataset.preferences
    n_ann = int(prefs["annotator"].nunique())
    who = f"The {n_ann} annotators" if n_ann > 1 else "The annotator"
    votes = (f"{who} voted on {counted(prefs['pair_id'].nunique(), 'pair')} of outputs ({counted(len(prefs), 'vote')}: "
             "A, B or tie)")
    if section == "ratings":
        return (f"{votes}; nobody rated a single output, so there is no rating distribution to draw. The shares of "
                "A, B and tie votes are in the Pairwise votes table above.")
    if n_ann < 2:
        return f"{votes}: agreement between annotators needs at least two of them."
    return (f"{votes}, not ratings per item, so Krippendorff's alpha over ratings does not apply. Their agreement "
            "with each other (Cohen's kappa for each pair of annotators, on the pairs both voted on) is on the "
            "Alignment page: on its own while no judge run is chosen, then in the Pairwise preferences tab beside "
            "the agreement of the judge runs selected in the sidebar with them.")


# ------------------------------------------------------------------------------------------- the page's blocks

def upload_types() -> list[str]:
    """The extensions an upload accepts, without the dot: every registered format's (evalcore.registry), plugins'
    included."""
    # Inspect AI logs (.eval; their .json is a JSON upload, recognised by its content): evalcore.importers.inspect_log
    return list(dict.fromkeys([*registry.upload_extensions(), "eval"]))


def _plugin_formats() -> str:
    """"; also <label> (.ext)" for each format a plugin registered, or ""."""
    added = [f"{f.label} ({', '.join(f.extensions)})" for n, f in registry.FORMATS.items()
             if registry.FORMATS.origin(n) != registry.BUILTIN]
    return f"; also {', '.join(added)}" if added else ""


def orientation(dataset: Dataset, n_runs: int, *, may_upload: bool) -> Note:
    """What is loaded, where the answer is, how to bring your own (the note on first open)."""
    rated = not dataset.human_scores.empty or dataset.preferences.empty  # else pairwise votes: no output rated alone
    held = counted(len(dataset.items), "rated output") if rated else \
        f"{counted(len(dataset.items), 'output')} voted on in pairs"
    return Note(esc(f"Loaded: {dataset.name}, {held} of {counted(len(dataset.systems), 'system')}, with "
                    f"{counted(n_runs, 'judge run')} selected in the sidebar. How far each judge agrees with the humans, "
                    "against the human ceiling, is on the Alignment page.")
                + ("  \nTo use your own ratings, upload a file below (**Bring your own data**)" if may_upload else
                   "  \nTo use your own ratings, sign in, then upload a file below (**Bring your own data**)")
                + "; to judge with your own model, set its endpoint on the **Score** page.", "info")


def upload_notes(*, may_upload: bool) -> list[Block]:
    """The upload section's heading and how to read it."""
    out: list[Block] = [
        Heading("Bring your own data"),
        Note(f"CSV (comma or semicolon), TSV, JSON, JSONL or Parquet{esc(_plugin_formats())}: one row per item (a "
             "column per dimension) or "
             "one row per item and dimension; JSON also as {annotator: {item: label}} (the Alt-Test authors' "
             "files); pairwise votes (MT-Bench's, Chatbot Arena's one-hot winner columns) are recognised by their "
             "columns. Give each column its role: judge-score columns become runs, with no scale needed. Nothing is "
             "imported unless the whole file is valid.", "caption")]
    if not may_upload:
        out.append(Note("Sign in to upload: an upload is yours until you share it with the lab.", "caption"))
    # an installed plugin that could not be loaded: named here, the rest of the app works without it
    out += [Note(esc(f.message()), "warning") for f in registry.plugin_failures()]
    return out


def overview(dataset: Dataset) -> list[Block]:
    """The dataset's headline counts and its dimensions (with the pairwise votes and label kinds where it has them)."""
    prefs = dataset.preferences
    annotators = set(dataset.annotators) | set(prefs["annotator"]) if not prefs.empty else dataset.annotators
    out: list[Block] = [Metrics((Metric("Items", f"{len(dataset.items)}"),
                                 Metric("Documents", f"{dataset.items['doc_id'].nunique()}"),
                                 Metric("Systems", f"{len(dataset.systems)}"),
                                 Metric("Annotators", f"{len(annotators)}"))),
                        Heading("Dimensions"),
                        Table(dataset_overview(dataset), f"{dataset.id} dimensions", "dimensions", static=True)]
    if not prefs.empty:  # pairwise votes (A / B / tie): what the Alignment page's Pairwise tab compares with
        from evalcore.views.preference import votes_overview

        out += [Heading("Pairwise votes", level=3),
                Table(votes_overview(dataset), f"{dataset.id} pairwise votes", "pairwise_votes", static=True)]
    if any(d.is_categorical for d in dataset.dimensions):  # label kinds: categories, positive class, alpha level
        out.append(Table(dimension_kinds(dataset), f"{dataset.id} label kinds", "label_kinds", static=True))
    return out


def ratings_blocks(dataset: Dataset) -> list[Block]:
    """The "Rating distributions" tab."""
    if dataset.human_scores.empty and not dataset.preferences.empty:  # PandaLM, LLMBar, an MT-Bench upload
        return [Note(esc(votes_only_note(dataset, "ratings")))]
    return [Figure(rating_histogram(dataset), "ratings")]


def agreement_note(dataset: Dataset) -> Note | None:
    """Why the "Human agreement" tab has no alpha to compute, or None when it has."""
    if dataset.annotations.empty and not dataset.preferences.empty:
        return Note(esc(votes_only_note(dataset, "agreement")))
    if dataset.annotations.empty:
        return Note("This dataset has no per-annotator ratings, so inter-annotator agreement cannot be computed.")
    return None


def agreement_blocks(dataset_id: str, alpha: pd.DataFrame) -> list[Block]:
    """The "Human agreement" tab once alpha is computed (``evalcore.meta.agreement``, per annotator group)."""
    if alpha.empty:
        return [Note("No dimension has ratings from two or more annotators.")]
    return [Table(alpha, f"{dataset_id} krippendorff alpha", "agreement"),
            Figure(agreement_figure(alpha), "agreement"),
            Note("Alpha per annotator group at each dimension's level (column level: interval, ordinal, or nominal "
                 "for binary and nominal labels); 95% CIs resample items.", "caption")]


# ------------------------------------------------------------------------------------------------------- delete


@dataclass(frozen=True)
class DeleteOffer:
    """The Data page's "Delete this dataset" for an upload: what deleting it deletes (``what``, Markdown-escaped),
    whether this session may (``allowed``; ``why_not`` says why not), and the text to type to confirm."""

    what: Note
    allowed: bool
    confirm: str
    why_not: Note | None = None


def footprint_sentence(name: str, dataset_id: str, footprint: dict[str, int]) -> str:
    """What deleting a dataset deletes, in words (``Store.dataset_footprint``)."""
    f = footprint
    splits = counted(f["splits"], "development / test split")
    if f["splits"]:
        splits += f" (with {counted(f['final_checks'], 'final check')})"
    return (f"Deleting {name} (id {dataset_id}) deletes it and everything kept for it in the store: "
            f"{counted(f['runs'], 'judge run')} ({counted(f['judgments'] + f['comparisons'], 'judgment')}), "
            f"{counted(f['labels'], 'label')} made on the Label page, {counted(f['criteria'], 'criteria version')} "
            f"and {splits}. It cannot be undone; the bundled datasets are never deleted.")


def delete_offer(store: Store, dataset: Dataset, viewer: Viewer) -> DeleteOffer | None:
    """The offer for the dataset in use, or None when it is no upload (a bundled dataset). ``viewer``: the
    session's (``pages/_identity.viewer``): None without sign-in (the machine's user may delete any upload),
    else only the uploader, while no one else's work relies on it (``Store.delete_dataset``'s rule)."""
    try:
        footprint = store.dataset_footprint(dataset.id)
    except KeyError:
        return None
    what = Note(esc(footprint_sentence(dataset.name, dataset.id, footprint)), "warning")
    why_not = None
    if viewer is not None:
        try:
            store.may_delete_dataset(dataset.id, viewer)
        except PermissionError as e:
            why_not = Note(esc(str(e)[:1].upper() + str(e)[1:] + "."), "info")
    return DeleteOffer(what, why_not is None, dataset.id, why_not)


def delete_dataset(store: Store, dataset_id: str, viewer: Viewer) -> Note:
    """Delete the upload (``Store.delete_dataset``, checked again there), and say what was deleted or why not."""
    try:
        gone = store.delete_dataset(dataset_id, by=viewer)
    except (KeyError, PermissionError) as e:
        return Note(esc(str(e).strip("'\"")), "error")
    return Note(esc(f"Deleted dataset {dataset_id} with {counted(gone['runs'], 'judge run')} and "
                    f"{counted(gone['labels'], 'label')}."), "success")
