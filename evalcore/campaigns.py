"""Labelling campaigns: a dataset's items (all, or a sample) spread over k annotators each, each annotator's queue, an
item locked while one annotator has it open, agreement among the annotators, and adjudication where they disagree.

* Assignment (:func:`assign`): the items in a seeded random order, dealt round the annotators (themselves in a seeded
  order) k at a time, so each item gets k distinct annotators and every annotator's load is within one of every
  other's (n items x k labels over m annotators: floor or ceil of n k / m each).
* Queue (:func:`queue`): an annotator's assigned items not yet labelled, in their dealt order. Opening one
  (:func:`open_item`) takes a lock on that item's slot until clock + ttl; nobody else can hold that slot (it was
  reassigned) or label the item while the adjudicator has it open, until the lock is released or lapses. The clock is
  injected (seconds since the epoch; ``time.time`` by default; a virtual clock in the tests,
  evalcore.testing.clock).
* A label (:func:`save`) is an ordinary row of the store's ``labels`` (annotator, time, owner), so the Label page's and
  Data page's analyses read it; the campaign and slot are kept beside it (``campaign_labels``). Its strategy is
  ``random:campaign:<id>`` for a campaign over all items or a uniform random sample (a random part, usable for
  estimates), ``uncertain:campaign:<id>`` for a sample chosen for the judge's uncertainty (kept out of estimates,
  as the Label page does with such items).
* Agreement (:func:`agreement`): Krippendorff's alpha at the dimension's level (interval for a numeric scale, nominal
  or ordinal for labels) on every item labelled at least twice, and Fleiss' kappa on a categorical dimension over the
  items labelled by all k annotators (Fleiss' design: the same number of raters per item), each with the items and
  annotators it rests on, or the reason it is not given.
* Adjudication (:func:`disagreements`, :func:`adjudicate`): an item whose labels differ (by more than the campaign's
  threshold on a numeric scale; at all on categories) is listed; the campaign's creator sets its final label,
  recorded with who and when.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import pandas as pd

from evalcore.meta.agreement import fleiss_kappa, krippendorff_alpha
from evalcore.meta.results import Estimate
from evalcore.model import Dataset, Dimension
from evalcore.store.campaigns import ADJUDICATION, LockHeld

Clock = Callable[[], float]
DEFAULT_TTL_S = 600.0  # ten minutes: long enough to read an item, short enough that a closed tab frees it soon
REPRESENTATIVE_SELECTIONS = ("all", "random")


class CampaignError(ValueError):
    """A campaign that cannot be made, an item that cannot be opened or labelled: ``str()`` says why."""


class Locked(CampaignError):
    """The item is open by someone else: ``holder`` until ``expires_at`` (seconds since the epoch)."""

    def __init__(self, holder: str, expires_at: float) -> None:
        super().__init__(f"{holder} has this item open until {_clock_text(expires_at)} (UTC)")
        self.holder = holder
        self.expires_at = expires_at


class CampaignStore(Protocol):
    """What this module needs of evalcore.store.Store."""

    def create_campaign(self, row: dict[str, Any], assignments: list[tuple[str, int, str, int]]) -> str: ...
    def campaign_row(self, campaign_id: str) -> dict[str, Any] | None: ...
    def campaign_rows(self, dataset_id: str | None = None, member: str | None = None) -> list[dict[str, Any]]: ...
    def campaign_assignments(self, campaign_id: str) -> pd.DataFrame: ...
    def campaign_labels(self, campaign_id: str) -> pd.DataFrame: ...
    def take_campaign_lock(self, campaign_id: str, item_id: str, slot: int, annotator: str, *, now: float,
                           ttl_s: float, blocking_slots: tuple[int, ...] = ()) -> float: ...
    def release_campaign_lock(self, campaign_id: str, item_id: str, slot: int, annotator: str) -> bool: ...
    def campaign_locks(self, campaign_id: str, *, now: float) -> list[dict[str, Any]]: ...
    def save_campaign_label(self, campaign: dict[str, Any], item_id: str, slot: int, annotator: str, value: float, *,
                            now: float, shown_at: str | None, strategy: str, owner: str | None) -> int: ...
    def reassign_campaign_slot(self, campaign_id: str, item_id: str, slot: int, annotator: str) -> None: ...
    def add_adjudication(self, campaign_id: str, item_id: str, value: float, adjudicator: str, note: str = "",
                         created_at: str | None = None) -> str: ...
    def adjudications(self, campaign_id: str) -> pd.DataFrame: ...


def _clock_text(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t))


# ------------------------------------------------------------------------------------------------------ assignment
@dataclass(frozen=True)
class Assignment:
    item_id: str
    slot: int  # 0..k-1: which of the item's k annotators
    annotator: str
    position: int  # the item's place in this annotator's queue (1 = first)


def annotator_names(text: str | Sequence[str]) -> list[str]:
    """Annotator names from a comma- or line-separated text (or a list): stripped, blanks dropped, each once in the
    order given."""
    parts = text.replace("\n", ",").split(",") if isinstance(text, str) else list(text)
    return list(dict.fromkeys(p.strip() for p in parts if p and p.strip()))


def assign(items: Sequence[str], annotators: Sequence[str], k: int, seed: int = 0) -> list[Assignment]:
    """Each item to k distinct annotators, loads balanced (within one), seeded: the items and the annotators each in a
    seeded random order, then the annotators dealt round k at a time (item i gets annotators i k, ..., i k + k - 1
    modulo m, distinct because k <= m)."""
    people = annotator_names(annotators)
    ids = list(dict.fromkeys(str(i) for i in items))
    if not ids:
        raise CampaignError("a campaign needs at least one item")
    if k < 1 or k > len(people):
        raise CampaignError(f"each item needs k distinct annotators: k = {k}, but {len(people)} annotator(s) named")
    rng = np.random.default_rng(seed)
    order = [ids[i] for i in rng.permutation(len(ids))]
    ring = [people[i] for i in rng.permutation(len(people))]
    out, load = [], dict.fromkeys(ring, 0)
    for n, item in enumerate(order):
        for slot in range(k):
            who = ring[(n * k + slot) % len(ring)]
            load[who] += 1
            out.append(Assignment(item, slot, who, load[who]))
    return out


def create(store: CampaignStore, dataset: Dataset, dimension: str, items: Sequence[str], annotators: Sequence[str],
           k: int, *, creator: str, name: str = "", selection: str = "all", seed: int = 0,
           ttl_s: float = DEFAULT_TTL_S, threshold: float = 1.0) -> str:
    """Make a campaign on ``dataset``'s ``dimension`` over ``items`` (ids of the dataset's items), k annotators each;
    its id. ``selection``: how the items were chosen ("all", "random", or what the sample is: it decides whether its
    labels count as a random part). ``threshold``: on a numeric scale, labels of an item differing by more than this
    are a disagreement to adjudicate."""
    if dimension not in dataset.dimension_names:
        raise CampaignError(f"{dimension!r} is not a dimension of {dataset.id!r}")
    known = set(dataset.items["item_id"].astype(str))
    unknown = [str(i) for i in items if str(i) not in known]
    if unknown:
        raise CampaignError(f"not items of {dataset.id!r}: {', '.join(unknown[:5])}")
    if not creator.strip():
        raise CampaignError("a campaign needs a creator (the adjudicator): sign in, or give your name")
    plan = assign(items, annotators, int(k), seed)
    row = {"dataset_id": dataset.id, "dimension": dimension, "name": name.strip() or f"{dimension} campaign",
           "creator": creator.strip(), "k": int(k), "selection": selection, "seed": int(seed),
           "lock_ttl_s": float(ttl_s), "threshold": float(threshold)}
    return store.create_campaign(row, [(a.item_id, a.slot, a.annotator, a.position) for a in plan])


def campaigns_for(store: CampaignStore, dataset_id: str, viewer: str | None, *, signed_in: bool) -> list[dict]:
    """The campaigns on the dataset this user takes part in (creator or annotator); every one without sign-in, none
    for a visitor not signed in."""
    if not signed_in:
        return store.campaign_rows(dataset_id)
    return [] if not viewer else store.campaign_rows(dataset_id, member=viewer)


def strategy_of(campaign: dict[str, Any]) -> str:
    """What a campaign's label records as its strategy (evalcore.labels reads its kind before the first colon)."""
    kind = "random" if campaign["selection"].split(":", 1)[0] in REPRESENTATIVE_SELECTIONS else "uncertain"
    return f"{kind}:campaign:{campaign['campaign_id']}"


# ---------------------------------------------------------------------------------------------------------- queue
@dataclass(frozen=True)
class Task:
    item_id: str
    slot: int
    position: int


def queue(assignments: pd.DataFrame, annotator: str) -> list[Task]:
    """The annotator's assigned items not labelled yet, in their queue's order."""
    mine = assignments[(assignments["annotator"] == annotator) & assignments["label_id"].isna()]
    mine = mine.sort_values(["position", "slot"])
    return [Task(str(i), int(s), int(p)) for i, s, p in zip(mine["item_id"], mine["slot"], mine["position"])]


def open_item(store: CampaignStore, campaign: dict[str, Any], task: Task, annotator: str, *,
              clock: Clock = time.time) -> float:
    """Lock the task's item slot for the annotator (or renew the lock); until when. Locked while another user
    holds that slot or the adjudicator has the item open."""
    try:
        return store.take_campaign_lock(campaign["campaign_id"], task.item_id, task.slot, annotator, now=clock(),
                                        ttl_s=campaign["lock_ttl_s"], blocking_slots=(ADJUDICATION,))
    except LockHeld as e:
        raise Locked(e.holder, e.expires_at) from None


def next_open(store: CampaignStore, campaign: dict[str, Any], tasks: list[Task], annotator: str, *,
              clock: Clock = time.time) -> tuple[Task | None, float | None, list[Locked]]:
    """The first task of the queue the annotator can open, opened (its lock's expiry), and the locks met on the way
    (items someone else has open now: they come back once released or lapsed)."""
    met: list[Locked] = []
    for task in tasks:
        try:
            return task, open_item(store, campaign, task, annotator, clock=clock), met
        except Locked as e:
            met.append(e)
    return None, None, met


def release(store: CampaignStore, campaign: dict[str, Any], task: Task, annotator: str) -> bool:
    return store.release_campaign_lock(campaign["campaign_id"], task.item_id, task.slot, annotator)


def check_value(dimension: Dimension, value: float) -> float:
    """The value as a label on the dimension's scale (one of its categories), else CampaignError."""
    v = float(value)
    cats = dimension.categories
    if math.isnan(v) or not dimension.scale_min <= v <= dimension.scale_max or (cats and v not in cats):
        raise CampaignError(f"{value!r} is not a label on {dimension.name!r} "
                            f"({dimension.scale_min:g}-{dimension.scale_max:g})")
    return v


def save(store: CampaignStore, campaign: dict[str, Any], dimension: Dimension, task: Task, annotator: str,
         value: float, *, owner: str | None = None, shown_at: str | None = None, clock: Clock = time.time) -> int:
    """The annotator's label on the task's item (one of their assignments), its lock released; its label id."""
    assigned = store.campaign_assignments(campaign["campaign_id"])
    row = assigned[(assigned["item_id"] == task.item_id) & (assigned["slot"] == task.slot)]
    if row.empty or row["annotator"].iloc[0] != annotator:
        raise CampaignError(f"item {task.item_id} is not in {annotator}'s queue")
    if not pd.isna(row["label_id"].iloc[0]):
        raise CampaignError(f"{annotator} has already labelled item {task.item_id} in this campaign")
    if owner and owner != annotator:
        raise CampaignError(f"signed in as {owner}: a label cannot be saved as {annotator}")
    v = check_value(dimension, value)
    try:
        return store.save_campaign_label(campaign, task.item_id, task.slot, annotator, v, now=clock(),
                                         shown_at=shown_at, strategy=strategy_of(campaign), owner=owner)
    except LockHeld as e:
        raise Locked(e.holder, e.expires_at) from None


def reassign(store: CampaignStore, campaign: dict[str, Any], item_id: str, slot: int, to: str, *,
             by: str) -> None:
    """Give an unlabelled slot of an item to another annotator (the creator only; not one already on the item). The
    previous annotator's lock stays until it lapses or is released: the new one cannot open it meanwhile."""
    if by != campaign["creator"]:
        raise CampaignError(f"only the campaign's creator ({campaign['creator']}) reassigns items")
    assigned = store.campaign_assignments(campaign["campaign_id"])
    on_item = assigned[assigned["item_id"] == str(item_id)]
    row = on_item[on_item["slot"] == slot]
    if row.empty:
        raise CampaignError(f"item {item_id} has no slot {slot} in this campaign")
    if not pd.isna(row["label_id"].iloc[0]):
        raise CampaignError(f"item {item_id}'s slot {slot} is labelled already")
    if to in set(on_item["annotator"]):
        raise CampaignError(f"{to} is already one of item {item_id}'s annotators")
    store.reassign_campaign_slot(campaign["campaign_id"], str(item_id), slot, to)


# ------------------------------------------------------------------------------------------------------ agreement
@dataclass(frozen=True)
class Agreement:
    """Agreement among a campaign's annotators on its dimension: alpha (at ``level``) on the items labelled at least
    twice; Fleiss' kappa on a categorical dimension over the items labelled by all k annotators, else None with
    ``fleiss_reason`` saying why."""

    level: str
    alpha: Estimate | None
    alpha_reason: str
    fleiss: Estimate | None
    fleiss_reason: str
    labelled_items: int  # items with at least one label
    labels: int


def latest(labels: pd.DataFrame) -> pd.DataFrame:
    """The label in force per (item, slot): the latest given (an item relabelled after an undo keeps the last)."""
    return labels.sort_values("label_id").drop_duplicates(["item_id", "slot"], keep="last").reset_index(drop=True)


def agreement(campaign: dict[str, Any], dimension: Dimension, labels: pd.DataFrame) -> Agreement:
    lab = latest(labels)
    level = dimension.alpha_level
    alpha, alpha_reason = None, ""
    twice = lab.groupby("item_id")["annotator"].transform("size") >= 2 if not lab.empty else pd.Series(dtype=bool)
    if lab.empty or not twice.any():
        alpha_reason = "no item has labels from two annotators yet"
    else:
        ann = lab.assign(dimension=dimension.name)[["item_id", "dimension", "annotator", "value"]]
        with np.errstate(invalid="ignore", divide="ignore"):  # one value seen so far: alpha is NaN, not a warning
            alpha = krippendorff_alpha(ann, dimension.name, level_of_measurement=level)
        if math.isnan(alpha.statistic):
            alpha_reason = "every label so far is the same value: alpha is undefined"
    fleiss, fleiss_reason = None, ""
    k = int(campaign["k"])
    if not dimension.is_categorical:
        fleiss_reason = "not applicable: the scale is numeric (Fleiss' kappa counts unordered categories)"
    elif k < 2:
        fleiss_reason = "not applicable: one annotator per item"
    else:
        full = lab[lab.groupby("item_id")["annotator"].transform("size") == k] if not lab.empty else lab
        if full.empty:
            fleiss_reason = f"no item has labels from all {k} annotators yet (Fleiss' kappa needs {k} per item)"
        else:
            fleiss = fleiss_kappa(full)
            if math.isnan(fleiss.statistic):
                fleiss_reason = "every label so far is in one category: kappa is undefined"
    return Agreement(level, alpha, alpha_reason, fleiss, fleiss_reason, int(lab["item_id"].nunique()), len(lab))


# --------------------------------------------------------------------------------------------------- adjudication
DISAGREEMENT_COLUMNS = ["item_id", "labels", "annotators", "spread", "final", "adjudicator", "adjudicated_at"]


def disagreements(campaign: dict[str, Any], dimension: Dimension, labels: pd.DataFrame,
                  adjudications: pd.DataFrame) -> pd.DataFrame:
    """The items whose labels differ (by more than the campaign's threshold on a numeric scale, at all on
    categories), with their labels, who gave them, the spread (max - min; the number of distinct categories on a
    categorical dimension) and the final label where one was set."""
    lab = latest(labels)
    rows = []
    final = adjudications.drop_duplicates("item_id", keep="last").set_index("item_id") if not adjudications.empty \
        else None
    for item, g in lab.groupby("item_id", sort=False):
        values = g["value"].to_numpy(float)
        if len(values) < 2:
            continue
        if dimension.is_categorical:
            spread, differ = float(len(set(values))), len(set(values)) > 1
        else:
            spread = float(values.max() - values.min())
            differ = spread > float(campaign["threshold"])
        if not differ:
            continue
        adj = final.loc[str(item)] if final is not None and str(item) in final.index else None
        rows.append({"item_id": str(item), "labels": ", ".join(f"{v:g}" for v in values),
                     "annotators": ", ".join(g["annotator"]), "spread": spread,
                     "final": None if adj is None else float(adj["value"]),
                     "adjudicator": "" if adj is None else str(adj["adjudicator"]),
                     "adjudicated_at": "" if adj is None else str(adj["created_at"])})
    return pd.DataFrame(rows, columns=DISAGREEMENT_COLUMNS)


def adjudicate(store: CampaignStore, campaign: dict[str, Any], dimension: Dimension, item_id: str, value: float, *,
               by: str, note: str = "", clock: Clock = time.time) -> str:
    """The final label of an item its annotators disagree on, set by the campaign's creator and recorded with who and
    when; its id. Refused while an annotator has the item open (Locked), and for an item with no disagreement."""
    if by != campaign["creator"]:
        raise CampaignError(f"only the campaign's creator ({campaign['creator']}) adjudicates")
    v = check_value(dimension, value)
    cid = campaign["campaign_id"]
    listed = disagreements(campaign, dimension, store.campaign_labels(cid), store.adjudications(cid))
    if str(item_id) not in set(listed["item_id"]):
        raise CampaignError(f"item {item_id}: its annotators do not disagree (nothing to adjudicate)")
    try:
        store.take_campaign_lock(cid, str(item_id), ADJUDICATION, by, now=clock(), ttl_s=campaign["lock_ttl_s"],
                                 blocking_slots=tuple(range(int(campaign["k"]))))
    except LockHeld as e:
        raise Locked(e.holder, e.expires_at) from None
    try:
        return store.add_adjudication(cid, str(item_id), v, by, note)
    finally:
        store.release_campaign_lock(cid, str(item_id), ADJUDICATION, by)
