"""Human labels made in the workbench: saving, undo, which item next, how labels join the dataset, export.

Labels live in the store's ``labels`` table (evalcore.store, "human labels"): one row per label or skip,
append-only, the latest row of (dataset, item, dimension, annotator) winning. This module reads those rows and turns
them into what the rest of evalcore uses:

* ``merge_labels``: the dataset's per-annotator ratings (``annotations``, group ``"labels"``) gain every label, and
  an item with no gold human score on a dimension gets the mean of its labels as its ``human_scores`` entry (random
  part only, see below). ``evalcore.runs.get_dataset`` applies it, so every page sees the labels.
* ``labels_view``: the dataset ``<id>@labels`` (listed next to a dataset whose items already have gold scores):
  the labelled items of the random part, the label means as human scores, the labels as the only annotations. On it
  the Data and Alignment pages show the labels' alpha and a run's correlation with the labels.
* Final labels (``adjudicated``): where a campaign's adjudicator set the final label of an item its annotators
  disagreed on (evalcore.campaigns.adjudicate; the latest per item and dimension in force), that value, not the
  mean of the labels, is the item's human score wherever the labels become one (``label_means`` given the
  adjudications: both views above, the agreement frame, the plan). The annotators' own labels stay the annotations,
  unchanged: alpha and every other agreement among people is taken on them, never on the final label (it is not an
  independent rating, and would count the resolved disagreement as agreement).

Which item next (``item_order``), the same order for every annotator so that they rate the same items (alpha needs
items rated by several people):

* ``random`` (default): one fixed uniformly random permutation of the items, seeded by the dataset id. The items an
  annotator has labelled along it are a simple random sample of the dataset.
* ``stratified``: the same permutation interleaved across systems with proportional allocation (an item's key is
  (its rank within its system + 1/2) / the system's size), so every prefix holds each system in proportion. Equal
  inclusion probabilities: treated as self-weighting, like the random order.
* ``uncertain``: where the judge is least certain first: the standard deviation of G-Eval's score distribution
  (``geval_width``) or the disagreement of two runs (``run_disagreement``); or only the items a judge abstained on
  under selective evaluation (``handed_order``, strategy ``uncertain:abstained:<run>``). Deliberately not
  representative.

Honest statistics: every label records the strategy that chose its item. Estimates (human scores from labels, the
sample-size plan, alpha on the Label page by default) use the *random part only*: items with at least one label
drawn by the random or stratified order. Items chosen for judge uncertainty are over-represented among hard items;
they stay in the annotations but no estimate of agreement with a judge is taken from them. The random queue does not
skip an item the annotator labelled under "uncertain": it shows it again, so the random part stays a random sample.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evalcore.identity import Viewer
from evalcore.model import (
    ANNOTATION_COLUMNS,
    HUMAN_SCORE_COLUMNS,
    Dataset,
    Dimension,
    Run,
    counted,
)

if TYPE_CHECKING:
    from evalcore.store import Store

LABEL_GROUP = "labels"
STRATEGIES = ("random", "stratified", "uncertain")
REPRESENTATIVE = ("random", "stratified")
VIEW_SUFFIX = "@labels"
MAX_BUTTON_POINTS = 11  # scales with more points than this are rated with a number field, not buttons

EXPORT_COLUMNS = ["dataset_id", "item_id", "doc_id", "system_id", "source", "output", "dimension", "annotator",
                  "value", "strategy", "position", "shown_at", "created_at"]


# ----------------------------------------------------------------------------------------------- dataset views


def view_id(dataset_id: str) -> str:
    return f"{dataset_id}{VIEW_SUFFIX}"


def is_view(dataset_id: str) -> bool:
    return str(dataset_id).endswith(VIEW_SUFFIX)


def base_id(dataset_id: str) -> str:
    return dataset_id[: -len(VIEW_SUFFIX)] if is_view(dataset_id) else dataset_id


def strategy_kind(strategy: str) -> str:
    """"uncertain:geval-width:RUN" -> "uncertain"."""
    return str(strategy).split(":", 1)[0]


def latest_labels(rows: pd.DataFrame) -> pd.DataFrame:
    """The label in force for each (item, dimension, annotator): the latest non-skip row (skips never erase a label).
    Columns of the store's rows, sorted by label_id."""
    if rows is None or rows.empty:
        return _empty_rows(rows)
    lab = rows[rows["skipped"] == 0].sort_values("label_id")
    return lab.drop_duplicates(["item_id", "dimension", "annotator"], keep="last").reset_index(drop=True)


def random_part(rows: pd.DataFrame) -> set[tuple[str, str]]:
    """(item_id, dimension) pairs with a (non-skip) label of an item drawn by the random or stratified order."""
    if rows is None or rows.empty:
        return set()
    r = rows[(rows["skipped"] == 0) & rows["strategy"].map(strategy_kind).isin(REPRESENTATIVE)]
    return set(zip(r["item_id"].astype(str), r["dimension"]))


def as_annotations(rows: pd.DataFrame, *, random_only: bool = False) -> pd.DataFrame:
    """The labels in force as a Dataset's annotations table (group "labels")."""
    lab = latest_labels(rows)
    if random_only and not lab.empty:
        keep = random_part(rows)
        lab = lab[[(str(i), d) in keep for i, d in zip(lab["item_id"].tolist(), lab["dimension"].tolist())]]
    out = pd.DataFrame({"item_id": lab["item_id"].astype(str), "dimension": lab["dimension"],
                        "annotator": lab["annotator"], "group": LABEL_GROUP, "value": lab["value"].astype(float)})
    return out[ANNOTATION_COLUMNS].reset_index(drop=True)


def campaign_of(strategy: str) -> str | None:
    """"random:campaign:<id>" -> "<id>" (evalcore.campaigns.strategy_of); None for a label given outside a
    campaign."""
    parts = str(strategy).split(":")
    return parts[2] if len(parts) >= 3 and parts[1] == "campaign" else None


def adjudicated(rows: pd.DataFrame, adjudications: pd.DataFrame | None) -> pd.DataFrame:
    """item_id, dimension, score (the final label), campaign_id: the adjudication in force per (item, dimension),
    the latest (``adjudications`` as the store gives them, oldest first: Store.dataset_adjudications). One counts only
    where ``rows`` hold a label in force of its campaign on that item and dimension: it settles those labels, and a
    viewer who sees none of them (labels not shared) gets no final label from it either."""
    if adjudications is None or adjudications.empty or rows is None or rows.empty:
        return pd.DataFrame({"item_id": pd.Series(dtype=object), "dimension": pd.Series(dtype=object),
                             "score": pd.Series(dtype=float), "campaign_id": pd.Series(dtype=object)})
    lab = latest_labels(rows)
    seen = set(zip(lab["strategy"].map(campaign_of), lab["item_id"].astype(str), lab["dimension"]))
    adj = adjudications.assign(item_id=adjudications["item_id"].astype(str))
    adj = adj[[k in seen for k in zip(adj["campaign_id"], adj["item_id"], adj["dimension"])]]
    adj = adj.drop_duplicates(["item_id", "dimension"], keep="last")
    return adj.rename(columns={"value": "score"})[["item_id", "dimension", "score", "campaign_id"]] \
        .astype({"score": float}).reset_index(drop=True)


def final_labels_meta(means: pd.DataFrame) -> dict[str, dict[str, float]]:
    """dimension -> item_id -> final label, of the adjudicated rows of ``label_means``: kept in the dataset's
    ``meta["final_labels"]`` so that a categorical dimension's gold label (the annotators' majority,
    evalcore.meta.classification.label_frame) is the final label there too, not a tie left out."""
    final = means[means["adjudicated"]] if "adjudicated" in means else means.iloc[0:0]
    out: dict[str, dict[str, float]] = {}
    for item, dim, score in zip(final["item_id"].astype(str), final["dimension"], final["score"]):
        out.setdefault(str(dim), {})[item] = float(score)
    return out


def label_means(rows: pd.DataFrame, *, random_only: bool = True,
                adjudications: pd.DataFrame | None = None) -> pd.DataFrame:
    """item_id, dimension, score, n_annotators, adjudicated: the score is the mean of the annotators' labels, or,
    where an adjudication is in force (``adjudicated``, given the store's ``adjudications``), the final label."""
    ann = as_annotations(rows, random_only=random_only)
    if ann.empty:
        return pd.DataFrame({"item_id": pd.Series(dtype=object), "dimension": pd.Series(dtype=object),
                             "score": pd.Series(dtype=float), "n_annotators": pd.Series(dtype=int),
                             "adjudicated": pd.Series(dtype=bool)})
    g = ann.groupby(["item_id", "dimension"], sort=False)["value"]
    means = pd.DataFrame({"score": g.mean(), "n_annotators": g.size()}).reset_index()
    final = adjudicated(rows, adjudications).rename(columns={"score": "final"})[["item_id", "dimension", "final"]]
    means = means.merge(final, on=["item_id", "dimension"], how="left")
    means["adjudicated"] = means["final"].notna()
    means["score"] = means["final"].where(means["adjudicated"], means["score"]).astype(float)
    return means.drop(columns="final")


def merge_labels(dataset: Dataset, rows: pd.DataFrame, adjudications: pd.DataFrame | None = None) -> Dataset:
    """The dataset with its labels: every label joins ``annotations`` (group "labels"); where an item has no gold
    human score on a dimension, the mean of its random-part labels becomes its human score, or the final label where
    an adjudication is in force (``adjudicated``). Says what it did in ``meta["labels"]`` and the description."""
    rows = _known(dataset, rows)
    ann = as_annotations(rows)
    if ann.empty:
        return dataset
    means = label_means(rows, random_only=True, adjudications=adjudications)
    gold = dataset.human_scores[["item_id", "dimension"]].astype({"item_id": str}).drop_duplicates()
    new = means.merge(gold, on=["item_id", "dimension"], how="left", indicator=True)  # an anti-join, vectorised
    new = new[new["_merge"] == "left_only"].drop(columns="_merge")
    human = pd.concat([dataset.human_scores, new[HUMAN_SCORE_COLUMNS]], ignore_index=True) if len(new) \
        else dataset.human_scores
    if len(new):
        human = human.astype({"score": float})
    annotations = pd.concat([dataset.annotations, ann], ignore_index=True) if not dataset.annotations.empty else ann
    n_final = int(new["adjudicated"].sum()) if len(new) else 0
    info: dict[str, Any] = {"annotators": sorted(ann["annotator"].unique()), "labels": len(ann),
            "human_scores_from_labels": len(new), "adjudicated": n_final, "gold_kept": int(len(means) - len(new))}
    note = (f"Labels made here: {info['labels']} by {counted(len(info['annotators']), 'annotator')}, in the annotations as "
            f"group '{LABEL_GROUP}'. " + (f"{info['human_scores_from_labels']} item-dimension human scores are the "
                                          "mean of their labels (random part only; no gold score existed)"
                                          + (f", {n_final} of them an adjudicator's final label instead." if n_final
                                             else ".")
                                          if len(new) else "Human scores are the dataset's gold ratings; the labels "
                                          f"are compared with judges on the dataset '{view_id(dataset.id)}'."))
    finals = final_labels_meta(new) if len(new) else {}
    return replace(dataset, annotations=annotations[ANNOTATION_COLUMNS], human_scores=human,
                   meta={**dataset.meta, "labels": info, **({"final_labels": finals} if finals else {})},
                   description=(dataset.description + "\n" if dataset.description else "") + note)


def labels_view(dataset: Dataset, rows: pd.DataFrame, adjudications: pd.DataFrame | None = None) -> Dataset:
    """``<id>@labels``: the random part's labelled items, the mean of their labels (the final label where an
    adjudication is in force) as the human scores, the labels as the only per-annotator ratings. Runs of the dataset
    apply to it unchanged (same item ids)."""
    rows = _known(dataset, rows)
    means = label_means(rows, random_only=True, adjudications=adjudications)
    ann = as_annotations(rows, random_only=True)
    ids = set(means["item_id"])
    items = dataset.items[dataset.items["item_id"].astype(str).isin(ids)].reset_index(drop=True)
    docs = dataset.documents[dataset.documents["doc_id"].isin(set(items["doc_id"]))].reset_index(drop=True)
    meta = {k: v for k, v in dataset.meta.items() if k not in ("challenge_pairs", "system_mean_expert_score")}
    n_all = len(latest_labels(rows))
    n_final = int(means["adjudicated"].sum())
    meta["labels"] = {"annotators": sorted(ann["annotator"].unique()) if not ann.empty else [],
                      "labels": len(ann), "left_out_not_random": int(n_all - len(ann)), "adjudicated": n_final}
    if n_final:
        meta["final_labels"] = final_labels_meta(means)
    final = f", or on {counted(n_final, 'item')} an adjudicator's final label" if n_final else ""
    desc = (f"Labels made in this workbench on {dataset.name}: human scores are the mean of the labels{final} (the "
            f"dataset's gold ratings are not used). {counted(len(items), 'item')} of the random part (drawn by the random or "
            f"stratified order); {counted(n_all - len(ann), 'label')} of items chosen for judge uncertainty are left "
            "out, since they do "
            "not represent the dataset.")
    dims = [d for d in dataset.dimensions if d.name in set(means["dimension"])] or list(dataset.dimensions)
    return replace(dataset, id=view_id(dataset.id), name=f"{dataset.name} · labels", dimensions=dims,
                   documents=docs, items=items, human_scores=means[HUMAN_SCORE_COLUMNS].astype({"score": float}),
                   annotations=ann, preferences=dataset.preferences.iloc[0:0], meta=meta, description=desc)


def _known(dataset: Dataset, rows: pd.DataFrame) -> pd.DataFrame:
    """Rows whose item and dimension exist in the dataset (a dataset re-uploaded with other items keeps old rows)."""
    if rows is None or rows.empty:
        return _empty_rows(rows)
    ok = rows["item_id"].astype(str).isin(set(dataset.items["item_id"].astype(str))) & \
        rows["dimension"].isin(dataset.dimension_names)
    return rows[ok]


def _empty_rows(rows: pd.DataFrame | None) -> pd.DataFrame:
    from evalcore.store import Store

    cols = list(rows.columns) if rows is not None and len(rows.columns) else Store.LABEL_COLUMNS
    return pd.DataFrame({c: pd.Series(dtype=float if c == "value" else object) for c in cols})


# --------------------------------------------------------------------------------------------- which item next


def _seed(dataset_id: str) -> int:
    return int.from_bytes(hashlib.sha256(f"labels:{dataset_id}".encode()).digest()[:8], "big")


def random_order(dataset: Dataset) -> list[str]:
    """One fixed uniform permutation of the item ids, the same for every annotator (seeded by the dataset id)."""
    ids = dataset.items["item_id"].astype(str).to_numpy()
    return list(ids[np.random.default_rng(_seed(base_id(dataset.id))).permutation(len(ids))])


def stratified_order(dataset: Dataset) -> list[str]:
    """The random permutation interleaved across systems, proportional allocation: any prefix holds each system in
    proportion to its size (ties broken by the permutation)."""
    order = random_order(dataset)
    pos = {i: k for k, i in enumerate(order)}
    items = dataset.items.assign(item_id=dataset.items["item_id"].astype(str))
    items = items.assign(_pos=items["item_id"].map(pos)).sort_values("_pos")
    rank = items.groupby("system_id", sort=False).cumcount()
    size = items.groupby("system_id", sort=False)["item_id"].transform("size")
    items = items.assign(_key=(rank + 0.5) / size)
    return list(items.sort_values(["_key", "_pos"])["item_id"])


def geval_width(run: Run, dimension: str) -> pd.Series:
    """item_id -> standard deviation of G-Eval's score distribution (the judge's own uncertainty; Liu et al. 2023
    Eq. 1 weights the scores by these probabilities). A run that kept its K draws per item instead (sampled replies,
    e.g. Chiang & Lee's 20) gives the standard deviation of the draws, the empirical distribution of its samples.
    Empty when the run kept neither."""
    j = run.judgments
    if not run.draws.empty and dimension in set(run.draws["dimension"]):
        d = run.draw_scores(dimension).dropna(subset=["judge"])
        return d.groupby("item_id")["judge"].std(ddof=0).astype(float)
    if j.empty or "detail" not in j.columns:
        return pd.Series(dtype=float)
    j = j[(j["dimension"] == dimension) & (j["status"] == "ok")]
    out = {}
    for item, detail in zip(j["item_id"], j["detail"]):
        dist = (detail or {}).get("distribution") if isinstance(detail, dict) else None
        if not dist:
            continue
        v = np.array([float(k) for k in dist], dtype=float)
        p = np.array(list(dist.values()), dtype=float)
        if p.sum() <= 0:
            continue
        p = p / p.sum()
        mean = float((p * v).sum())
        out[str(item)] = float(np.sqrt((p * (v - mean) ** 2).sum()))
    return pd.Series(out, dtype=float)


def run_disagreement(run_a: Run, run_b: Run, dimension: str) -> pd.Series:
    """item_id -> |percentile rank under run A - percentile rank under run B|: disagreement of two judges on
    different scales (ranks make 1-5 and 0-100 comparable). Items either run failed on are left out."""
    a = run_a.scores(dimension).dropna(subset=["judge"]).set_index("item_id")["judge"]
    b = run_b.scores(dimension).dropna(subset=["judge"]).set_index("item_id")["judge"]
    both = a.index.intersection(b.index)
    if len(both) == 0:
        return pd.Series(dtype=float)
    ra = a.loc[both].rank(pct=True)
    rb = b.loc[both].rank(pct=True)
    out = (ra - rb).abs()
    out.index = out.index.astype(str)
    return out


def uncertain_order(dataset: Dataset, uncertainty: pd.Series) -> list[str]:
    """Items by decreasing judge uncertainty (ties by the random permutation); items without a value come last in
    random order."""
    order = random_order(dataset)
    pos = {i: k for k, i in enumerate(order)}
    known = [i for i in order if i in uncertainty.index and not pd.isna(uncertainty[i])]
    rest = [i for i in order if i not in set(known)]
    known.sort(key=lambda i: (-float(uncertainty[i]), pos[i]))
    return known + rest


def handed_order(dataset: Dataset, item_ids: Iterable[object]) -> list[str]:
    """The items of ``item_ids`` that the dataset holds (the items a judge abstained on, handed over as a queue),
    in the random order's sequence, so every annotator follows the same one. Others (a pair's id) are left out."""
    handed = {str(i) for i in item_ids}
    return [i for i in random_order(dataset) if i in handed]


def item_order(dataset: Dataset, strategy: str, uncertainty: pd.Series | None = None) -> list[str]:
    kind = strategy_kind(strategy)
    if kind == "random":
        return random_order(dataset)
    if kind == "stratified":
        return stratified_order(dataset)
    if kind == "uncertain":
        if uncertainty is None or uncertainty.empty:
            raise ValueError("the 'uncertain' order needs the judge's uncertainty per item (a G-Eval run with score "
                             "distributions, or two runs to compare)")
        return uncertain_order(dataset, uncertainty)
    raise ValueError(f"unknown strategy {strategy!r}; choose one of {STRATEGIES}")


def next_task(order: list[str], rows: pd.DataFrame, annotator: str, dimensions: list[str], strategy: str
              ) -> tuple[str, str] | None:
    """The first (item, dimension) along ``order`` (item-major, dimensions in the given order) that this annotator
    has not done. Done means: any row (label or skip) for the uncertain order; a row chosen by the random or
    stratified order for those, so an item labelled under "uncertain" is shown again and the random part stays a
    random sample."""
    mine = rows[rows["annotator"] == annotator] if rows is not None and not rows.empty else _empty_rows(rows)
    if strategy_kind(strategy) in REPRESENTATIVE and not mine.empty:
        mine = mine[mine["strategy"].map(strategy_kind).isin(REPRESENTATIVE)]
    done = set(zip(mine["item_id"].astype(str), mine["dimension"]))
    for item in order:
        for dim in dimensions:
            if (item, dim) not in done:
                return item, dim
    return None


@dataclass(frozen=True)
class Progress:
    labelled: int  # (item, dimension) pairs this annotator has a label for
    skipped: int  # pairs whose latest row is a skip and that have no label
    total: int  # items x dimensions
    random_part: int  # labelled pairs in the random part (any annotator)
    last_position: int  # the annotator's rows so far


def annotator_progress(rows: pd.DataFrame, annotator: str, dimensions: list[str], n_items: int) -> Progress:
    sub = rows[(rows["annotator"] == annotator) & rows["dimension"].isin(dimensions)] \
        if rows is not None and not rows.empty else _empty_rows(rows)
    lab = latest_labels(sub)
    labelled = set(zip(lab["item_id"], lab["dimension"]))
    skips = set(zip(sub.loc[sub["skipped"] == 1, "item_id"], sub.loc[sub["skipped"] == 1, "dimension"])) - labelled
    rp = random_part(sub) & labelled
    pos = int(rows.loc[rows["annotator"] == annotator, "position"].max()) \
        if rows is not None and not rows.empty and (rows["annotator"] == annotator).any() else 0
    return Progress(labelled=len(labelled), skipped=len(skips), total=n_items * len(dimensions),
                    random_part=len(rp), last_position=pos)


def scale_points(dimension: Dimension) -> list[float] | None:
    """The scale points a rating button stands for (1..5; 0/1; a categorical dimension's categories, as codes), or
    None for a scale rated with a number field."""
    cats = getattr(dimension, "categories", ())
    if cats:
        return [float(v) for v in cats] if len(cats) <= MAX_BUTTON_POINTS else None
    lo, hi = float(dimension.scale_min), float(dimension.scale_max)
    if not (lo.is_integer() and hi.is_integer()) or hi - lo + 1 > MAX_BUTTON_POINTS or hi <= lo:
        return None
    return [float(v) for v in range(int(lo), int(hi) + 1)]


def point_names(dimension: Dimension) -> list[str]:
    """What each rating button says: the category's label ("pass"), else its number."""
    pts = scale_points(dimension) or []
    names = list(getattr(dimension, "category_names", ()) or ())
    return names if len(names) == len(pts) else [f"{v:g}" for v in pts]


def measurement_level(dimension: Dimension) -> str:
    """Krippendorff's level for a dimension: the one its kind says (``Dimension.alpha_level``: interval, ordinal,
    nominal for binary and nominal), as on the Data page."""
    return getattr(dimension, "alpha_level", "interval")


# ---------------------------------------------------------------------------------------------------- statistics


def labels_alpha(rows: pd.DataFrame, dimension: str, *, level: str = "interval", random_only: bool = True,
                 n_resamples: int = 1000):
    """Krippendorff's alpha among the annotators' labels on one dimension, with a bootstrap CI over items
    (evalcore.meta.agreement.krippendorff_alpha); None while fewer than two annotators have labels there."""
    from evalcore.meta.agreement import krippendorff_alpha

    ann = as_annotations(rows, random_only=random_only)
    ann = ann[ann["dimension"] == dimension]
    if ann["annotator"].nunique() < 2:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):  # one value seen so far: alpha is NaN, not a warning
        return krippendorff_alpha(ann, dimension, level_of_measurement=level, n_resamples=n_resamples)


def agreement_frame(dataset: Dataset, run: Run, rows: pd.DataFrame | None, dimension: str, *,
                    reference: str = "labels", random_only: bool = True,
                    adjudications: pd.DataFrame | None = None) -> pd.DataFrame:
    """item_id, doc_id, system_id, judge, human: a run against the mean of the labels (the final label where an
    adjudication is in force; ``reference="labels"``) or the dataset's gold scores (``"gold"``). Items the judge
    failed on keep judge = NaN."""
    if reference == "labels":
        means = label_means(_known(dataset, rows), random_only=random_only, adjudications=adjudications)
        human = means[means["dimension"] == dimension][["item_id", "score"]].rename(columns={"score": "human"})
        base = dataset.items[["item_id", "doc_id", "system_id"]].assign(item_id=dataset.items["item_id"].astype(str))
        human = base.merge(human, on="item_id", how="inner")
    elif reference == "gold":
        human = dataset.human_table(dimension)
        human = human.assign(item_id=human["item_id"].astype(str))
    else:
        raise ValueError(f"reference must be 'labels' or 'gold', not {reference!r}")
    judged = run.scores(dimension)[["item_id", "judge"]]
    judged = judged.assign(item_id=judged["item_id"].astype(str))
    frame = human.merge(judged, on="item_id", how="inner")
    return frame[["item_id", "doc_id", "system_id", "judge", "human"]].reset_index(drop=True)


def plan(dataset: Dataset, run: Run, rows: pd.DataFrame | None, dimension: str, *, coefficient: str = "spearman",
         half_width: float = 0.05, reference: str = "auto", random_only: bool = True, confidence: float = 0.95,
         assurance: float = 0.95, adjudications: pd.DataFrame | None = None) -> dict[str, Any]:
    """How many labelled items a run's agreement with the labels needs for a CI of +/- ``half_width``
    (evalcore.meta.planning.plan_sample_size). ``reference="auto"``: the labels if this dimension has any in the
    random part, else the dataset's gold scores. ``adjudications``: final labels in force replace their items' label
    means (``label_means``). The CLI's ``plan --json`` document."""
    from evalcore.meta.planning import plan_sample_size
    from evalcore.meta.results import to_dict

    if reference == "auto":
        means = label_means(_known(dataset, rows), random_only=random_only)
        reference = "labels" if (means["dimension"] == dimension).any() else "gold"
    frame = agreement_frame(dataset, run, rows, dimension, reference=reference, random_only=random_only,
                            adjudications=adjudications)
    ok = frame.dropna(subset=["judge", "human"])
    res = plan_sample_size(ok["judge"].to_numpy(float), ok["human"].to_numpy(float), coefficient=coefficient,
                           half_width=half_width, confidence=confidence, assurance=assurance)
    out = to_dict(res)
    out.update({"dataset": dataset.id, "run": run.run_id, "dimension": dimension, "reference": reference,
                "sample": "random part" if reference == "labels" and random_only else
                ("all labels" if reference == "labels" else "all items with a gold score"),
                "dropped": int(frame["judge"].isna().sum())})
    return out


# ----------------------------------------------------------------------------------------------- export / import


def export_frame(dataset: Dataset, rows: pd.DataFrame) -> pd.DataFrame:
    """The labels in force, one row per (item, dimension, annotator), with the texts they were given for: a long
    table (EXPORT_COLUMNS) that ``import_labels`` reads back onto the same dataset and that the Data page's upload
    reads as a long-layout dataset with an annotator column."""
    lab = latest_labels(_known(dataset, rows))
    texts = dataset.texts()
    texts = texts.assign(item_id=texts["item_id"].astype(str))[["item_id", "doc_id", "system_id", "source", "output"]]
    out = lab.assign(item_id=lab["item_id"].astype(str)).merge(texts, on="item_id", how="left")
    out["dataset_id"] = base_id(dataset.id)
    return out[EXPORT_COLUMNS].reset_index(drop=True)


class LabelImportError(ValueError):
    pass


def import_labels(store: Store, dataset: Dataset, frame: pd.DataFrame, *, file: str = "labels file",
                  owner: str | None = None) -> int:
    """Read an ``export_frame`` table back into the store for ``dataset``: all rows or none. A problem names the
    file, row (1-based, after the header) and column. ``owner`` (signed in): only rows whose annotator is that user
    (a file naming another annotator is refused)."""
    need = ["item_id", "dimension", "annotator", "value"]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise LabelImportError(f"{file}: missing column(s) {', '.join(missing)}")
    items = set(dataset.items["item_id"].astype(str))
    dims = {d.name: d for d in dataset.dimensions}
    rows, problems = [], []
    for i, r in enumerate(frame.to_dict(orient="records"), start=1):
        where = f"{file}, row {i}"
        if "dataset_id" in frame.columns and str(r["dataset_id"]) != base_id(dataset.id):
            problems.append(f"{where}, column dataset_id: {r['dataset_id']!r} is not this dataset ({dataset.id!r})")
            continue
        if str(r["item_id"]) not in items:
            problems.append(f"{where}, column item_id: no item {r['item_id']!r} in {dataset.id!r}")
            continue
        if r["dimension"] not in dims:
            problems.append(f"{where}, column dimension: {r['dimension']!r} is not a dimension of {dataset.id!r}")
            continue
        try:
            v = float(r["value"])
        except (TypeError, ValueError):
            v = math.nan
        lo, hi = dims[r["dimension"]].scale
        cats = getattr(dims[r["dimension"]], "categories", ())
        if math.isnan(v) or not lo <= v <= hi or (cats and v not in cats):
            what = (f"one of the categories {', '.join(f'{c:g}' for c in cats)}" if cats else
                    f"a rating on the {lo:g}-{hi:g} scale")
            problems.append(f"{where}, column value: {r['value']!r} is not {what}")
            continue
        if pd.isna(r["annotator"]) or not str(r["annotator"]).strip():
            problems.append(f"{where}, column annotator: empty")
            continue
        if owner and str(r["annotator"]) != owner:
            problems.append(f"{where}, column annotator: {r['annotator']!r} is not you (signed in as {owner!r})")
            continue
        pos = r.get("position")
        rows.append({"dataset_id": base_id(dataset.id), "item_id": str(r["item_id"]), "dimension": r["dimension"],
                     "annotator": str(r["annotator"]), "value": v, "skipped": 0,
                     "strategy": str(r.get("strategy") or "random"),
                     "position": int(pos) if pos is not None and not pd.isna(pos) else i,
                     "shown_at": None if pd.isna(r.get("shown_at")) else r.get("shown_at"),
                     "created_at": None if pd.isna(r.get("created_at")) else r.get("created_at")})
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise LabelImportError("nothing was imported: " + "; ".join(problems[:10]) + more)
    return store.insert_labels(rows, owner=owner) if owner else store.insert_labels(rows)


# ----------------------------------------------------------------------------------------- with the store
# The Label page's reads and writes: one label at a time, committed before the call returns (a reload or a crash
# loses nothing). ``viewer`` scopes the rows to what a signed-in user may see (None: all, sign-in off).


def rows_of(store: Store, dataset_id: str, *, viewer: Viewer | None = None) -> pd.DataFrame:
    """Every label row (skips included) on the dataset that ``viewer`` sees, in the order written."""
    return store.label_rows(base_id(dataset_id), viewer=viewer)


def adjudications_of(store: Store, dataset_id: str) -> pd.DataFrame:
    """The final labels set in the dataset's campaigns, oldest first (Store.dataset_adjudications): what
    ``label_means`` and the views above take as ``adjudications``."""
    return store.dataset_adjudications(base_id(dataset_id))


def version_of(store: Store, dataset_id: str) -> tuple[int, int]:
    """(row count, last label id) of the dataset's labels: changes with every label written or undone (cache keys)."""
    return store.labels_version(base_id(dataset_id))


def view_may_change(store: Store, dataset_id: str) -> bool:
    """After a label is written or undone: whether the dataset's labels view (``<id>@labels``) may have appeared or
    gone (it exists from the first label on), so the list of datasets is read again."""
    return version_of(store, dataset_id)[0] <= 1


def save(store: Store, dataset_id: str, item_id: str, dimension: str, annotator: str, value: float | None, *,
         strategy: str = "random", shown_at: str | None = None, owner: str | None = None) -> int:
    """One rating (``value`` None: a skip) by ``annotator`` on the item; its label id. ``owner`` (signed in): the
    user writing it."""
    return store.save_label(base_id(dataset_id), item_id, dimension, annotator, value, skipped=value is None,
                            strategy=strategy, shown_at=shown_at, owner=owner)


def undo(store: Store, dataset_id: str, annotator: str, *, dimensions: list[str] | None = None,
         owner: str | None = None) -> dict[str, Any] | None:
    """Take back the annotator's last label or skip (on ``dimensions`` if given); the row taken back, or None.
    ``owner`` (signed in): only a row that user wrote, whatever annotator name is asked for."""
    return store.undo_label(base_id(dataset_id), annotator, dimensions=dimensions, owner=owner)


def shown_now() -> str:
    """When an item was shown, as recorded with its label (UTC, milliseconds: the time spent on it is read back)."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds")


# ------------------------------------------------------------------------------------------ the item order


def order_strategy(kind: str, source: tuple = ()) -> str:
    """The strategy recorded with each label: the order's kind, and for "uncertain" where the uncertainty comes
    from ("uncertain:geval:<run>", "uncertain:disagree:<run a>:<run b>")."""
    return ":".join(("uncertain", *source)) if kind == "uncertain" else kind


def order_for(dataset: Dataset, kind: str, source: tuple = (), runs: tuple[Run, ...] = (),
              dimension: str = "") -> tuple[list[str], int]:
    """The items in the order every annotator follows, and how many of them the judge's uncertainty ranks (0 for
    the random and stratified orders). "uncertain" takes ``source`` ("geval", run) with that run in ``runs``, or
    ("disagree", run a, run b) with both; an empty order when they give no uncertainty on ``dimension``."""
    if kind != "uncertain":
        return item_order(dataset, kind), 0
    if source[0] == "geval":
        u = geval_width(runs[0], dimension)
    else:
        u = run_disagreement(runs[0], runs[1], dimension)
    if u.empty:
        return [], 0
    return item_order(dataset, "uncertain", u), len(u)


def digit_keys(dimension: Dimension) -> list[str | None]:
    """The keyboard shortcut of each scale point's button: the value itself on a numeric scale (1-5), the
    button's place for named categories (None past the ninth)."""
    points = scale_points(dimension) or []
    return [str(int(v)) if 0 <= v <= 9 and not dimension.labels else (str(i + 1) if i < 9 else None)
            for i, v in enumerate(points)]
