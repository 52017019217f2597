"""Campaigns page: making a labelling campaign (which items: all, a random sample, or a sample a judge's analysis
picks), an annotator's queue and the item they have open, the agreement among the annotators (shown before any judge
is compared with them), the items they disagree on and their adjudication, and every label with who gave it, when."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from evalcore import campaigns, labels
from evalcore.campaigns import CampaignStore, Clock, Task
from evalcore.model import Dataset, Run, counted
from evalcore.views.blocks import Block, Metric, Metrics, Note, Table
from evalcore.views.format import esc, fmt

SELECTIONS = {
    "all": "Every item",
    "random": "A random sample of n items",
    "unstable": "The n items whose judge draws spread most (a run with several draws)",
    "disagree": "The n items two judges disagree on most",
    "abstained": "The items a judge abstained on (selective evaluation, alpha 0.1)",
}


# ------------------------------------------------------------------------------------------------ which items
def _one_run(runs: list[Run], run_id: str | None, what: str) -> Run:
    run = next((r for r in runs if r.run_id == run_id), None)
    if run is None:
        raise campaigns.CampaignError(f"{what}: pick a run in the sidebar, then name it here")
    return run


def _unstable(dataset: Dataset, run: Run, dimension: str, n: int) -> list[str]:
    from evalcore.meta.draw_reliability import item_spread

    if run.n_draws < 2:
        raise campaigns.CampaignError(f"run {run.label or run.run_id} has one draw per item: no spread to rank")
    spread = item_spread(run.draw_scores(dimension))
    spread = spread[spread["sd"] > 0]
    return [str(i) for i in spread["item_id"].head(n)]


def _abstained(dataset: Dataset, run: Run, dimension: str) -> list[str]:
    from evalcore.views import guarantees

    _, abstained = guarantees.selective_table(dataset, [run], {run.run_id: run.run_id}, dimension)
    return guarantees.label_queues(dataset, abstained).get(run.run_id, [])


def select_items(dataset: Dataset, how: str, dimension: str, *, n: int = 20, seed: int = 0,
                 runs: list[Run] | None = None, run_a: str | None = None,
                 run_b: str | None = None) -> tuple[list[str], str]:
    """The items a campaign takes and how they were chosen, as recorded ("all", "random:n=20:seed=0",
    "unstable:<run>", "disagree:<run a>:<run b>", "abstained:<run>"): the selectors the Alignment page's
    reliability and Guarantees sections and the Label page's judge-uncertainty order already compute."""
    ids = [str(i) for i in dataset.items["item_id"]]
    runs = runs or []
    if how == "all":
        return ids, "all"
    if how == "random":
        k = max(1, min(int(n), len(ids)))
        pick = np.random.default_rng(seed).choice(len(ids), size=k, replace=False)
        return [ids[i] for i in sorted(pick)], f"random:n={k}:seed={seed}"
    if how == "unstable":
        run = _one_run(runs, run_a, "unstable items")
        out = _unstable(dataset, run, dimension, int(n))
        sel = f"unstable:{run.run_id}"
    elif how == "disagree":
        a, b = _one_run(runs, run_a, "judge disagreements"), _one_run(runs, run_b, "judge disagreements")
        if a.run_id == b.run_id:
            raise campaigns.CampaignError("judge disagreements: pick two different runs")
        gap = labels.run_disagreement(a, b, dimension).sort_values(ascending=False, kind="stable")
        out, sel = [str(i) for i in gap[gap > 0].index[: int(n)]], f"disagree:{a.run_id}:{b.run_id}"
    elif how == "abstained":
        run = _one_run(runs, run_a, "abstained items")
        out, sel = _abstained(dataset, run, dimension), f"abstained:{run.run_id}"
    else:
        raise campaigns.CampaignError(f"unknown item selection {how!r}")
    if not out:
        raise campaigns.CampaignError(f"{SELECTIONS[how]}: the run(s) picked give no such item on {dimension}")
    return out, sel


def create(store: CampaignStore, dataset: Dataset, *, how: str, dimension: str, annotators: str, k: int,
           creator: str | None, name: str = "", n: int = 20, seed: int = 0, threshold: float = 1.0,
           runs: list[Run] | None = None, run_a: str | None = None, run_b: str | None = None) -> tuple[str, str]:
    """Make the campaign the form describes: (its id, the sentence to show); CampaignError says what is wrong."""
    items, selection = select_items(dataset, how, dimension, n=n, seed=seed, runs=runs, run_a=run_a, run_b=run_b)
    people = campaigns.annotator_names(annotators)
    cid = campaigns.create(store, dataset, dimension, items, people, k, creator=creator or "", name=name,
                           selection=selection, seed=seed, threshold=threshold)
    return cid, (f"Campaign made: {counted(len(items), 'item')}, {k} annotator(s) each, spread over "
                 f"{', '.join(people)}.")


# ------------------------------------------------------------------------------------------------ the campaign
def campaign_names(rows: list[dict[str, Any]]) -> dict[str, str]:
    """{campaign id: what the picker shows}."""
    return {r["campaign_id"]: f"{r['name']} · {r['dimension']} · k={r['k']} · by {r['creator']} "
                              f"({r['created_at'][:10]})" for r in rows}


@dataclass
class CampaignView:
    """What the page shows of one campaign, computed once per run."""

    campaign: dict[str, Any]
    assignments: pd.DataFrame
    labels: pd.DataFrame
    adjudications: pd.DataFrame
    status: list[Block] = field(default_factory=list)
    agreement: list[Block] = field(default_factory=list)
    disagreements: pd.DataFrame = field(default_factory=pd.DataFrame)
    adjudication: list[Block] = field(default_factory=list)
    history: list[Block] = field(default_factory=list)
    reassignable: dict[str, str] = field(default_factory=dict)  # "item::slot" -> what the picker shows


def view(store: CampaignStore, dataset: Dataset, campaign: dict[str, Any]) -> CampaignView:
    cid = campaign["campaign_id"]
    dim = dataset.dimension(campaign["dimension"])
    a, lab, adj = store.campaign_assignments(cid), store.campaign_labels(cid), store.adjudications(cid)
    out = CampaignView(campaign, a, lab, adj)
    out.status = status_blocks(campaign, a)
    out.agreement = agreement_blocks(campaign, campaigns.agreement(campaign, dim, lab))
    out.disagreements = campaigns.disagreements(campaign, dim, lab, adj)
    out.adjudication = disagreement_blocks(campaign, out.disagreements, dim.is_categorical)
    out.history = history_blocks(campaign, lab, adj)
    todo = a[a["label_id"].isna()]
    out.reassignable = {f"{i}::{s}": f"{i} (now {who}'s)" for i, s, who in
                        zip(todo["item_id"], todo["slot"], todo["annotator"])}
    return out


def open_now(store: CampaignStore, campaign: dict[str, Any], *, clock: Clock = time.time) -> list[Block]:
    """The items open just now: by whom, until when (UTC); a lapsed lock is not listed (it is free). Read after the
    page opened the user's own item, so theirs is among them."""
    return open_blocks(store.campaign_locks(campaign["campaign_id"], now=clock()))


def open_blocks(locks: list[dict[str, Any]]) -> list[Block]:
    if not locks:
        return [Note("No item is open just now.", "caption")]
    frame = pd.DataFrame({"item_id": [r["item_id"] for r in locks],
                          "open by": [r["annotator"] + (" (adjudicating)" if int(r["slot"]) < 0 else "")
                                      for r in locks],
                          "until (UTC)": [time.strftime("%H:%M:%S", time.gmtime(float(r["expires_at"])))
                                          for r in locks]})
    return [Note("Open just now (each until its lock lapses, or the item is labelled):", "caption"),
            Table(frame, "campaign open items", "campaign_open", static=True)]


def reassign(store: CampaignStore, campaign: dict[str, Any], key: str, to: str, *, by: str | None) -> str:
    """Give an unlabelled place (``key``: "item::slot") to another annotator; the sentence to show."""
    item, _, slot = key.rpartition("::")
    try:
        campaigns.reassign(store, campaign, item, int(slot), to.strip(), by=by or "")
    except campaigns.CampaignError as e:
        return f"Not reassigned: {e}"
    return f"Item {item} is now in {to.strip()}'s queue."


def status_blocks(campaign: dict[str, Any], assignments: pd.DataFrame) -> list[Block]:
    done = int(assignments["label_id"].notna().sum())
    per = assignments.groupby("annotator").agg(assigned=("item_id", "size"),
                                               labelled=("label_id", lambda s: int(s.notna().sum())))
    per = per.assign(left=per["assigned"] - per["labelled"]).reset_index()
    return [
        Metrics((Metric("Items", f"{assignments['item_id'].nunique():,}"),
                 Metric("Annotators per item", str(campaign["k"])),
                 Metric("Labels given", f"{done:,} of {len(assignments):,}"),
                 Metric("Adjudicator", campaign["creator"], help="who made the campaign: sets the final label "
                                                                 "where the annotators disagree"))),
        Note(esc(f"Items chosen: {describe_selection(campaign['selection'])}. Dimension {campaign['dimension']}. "
                 f"An item stays open for its annotator {campaign['lock_ttl_s'] / 60:g} minutes, then is free again."),
             "caption"),
        Table(per[["annotator", "assigned", "labelled", "left"]], f"campaign {campaign['name']} progress",
              "campaign_progress", static=True),
    ]


def describe_selection(selection: str) -> str:
    kind, _, rest = selection.partition(":")
    if kind == "all":
        return "every item of the dataset"
    if kind == "random":
        return f"a uniform random sample ({rest.replace(':', ', ')})"
    what = {"unstable": "the items whose judge draws spread most, run", "disagree": "the items two judges disagree "
            "on most, runs", "abstained": "the items a judge abstained on, run"}.get(kind, kind)
    return f"{what} {rest.replace(':', ' and ')} (not a random sample: its labels stay out of estimates)"


def agreement_blocks(campaign: dict[str, Any], ag: campaigns.Agreement) -> list[Block]:
    """Alpha and Fleiss' kappa, each with what it rests on or why it is not given."""
    def row(name: str, est: Any, reason: str) -> dict[str, str]:
        has = est is not None and math.isfinite(est.statistic)
        return {"statistic": name, "value": fmt(est.statistic, 3) if has else "not given",
                "items": f"{est.n:,}" if est is not None else "",
                "annotators": str(est.n_annotators) if est is not None else "",
                "note": reason or ("items labelled by at least two annotators" if name.startswith("Kripp")
                                   else f"items labelled by all {campaign['k']} annotators")}

    frame = pd.DataFrame([row(f"Krippendorff's alpha ({ag.level})", ag.alpha, ag.alpha_reason),
                          row("Fleiss' kappa", ag.fleiss, ag.fleiss_reason)])
    return [Note(esc(f"Agreement among the campaign's annotators, from {counted(ag.labels, 'label')} on "
                     f"{counted(ag.labelled_items, 'item')}. No judge is compared here: see how far the people "
                     "agree before holding a judge to them."), "caption"),
            Table(frame, f"campaign {campaign['name']} agreement", "campaign_agreement", static=True)]


def disagreement_blocks(campaign: dict[str, Any], frame: pd.DataFrame, categorical: bool) -> list[Block]:
    rule = "any difference" if categorical else f"labels more than {campaign['threshold']:g} apart"
    if frame.empty:
        return [Note(esc(f"No item has annotators who disagree ({rule}) yet."), "caption")]
    shown = frame.assign(final=[("" if pd.isna(v) else f"{v:g}") for v in frame["final"]],
                         spread=[f"{v:g}" for v in frame["spread"]])
    shown = shown.rename(columns={"spread": "distinct labels" if categorical else "spread (max - min)",
                                  "final": "final label", "adjudicated_at": "adjudicated at"})
    open_n = int(frame["final"].isna().sum())
    return [Note(esc(f"{counted(len(frame), 'item')} with annotators who disagree ({rule}); {open_n} without a final "
                     f"label yet. The adjudicator ({campaign['creator']}) sets it."), "caption"),
            Note(esc(final_label_rule(campaign)), "caption"),
            Table(shown, f"campaign {campaign['name']} disagreements", "campaign_disagreements", static=True)]


def final_label_rule(campaign: dict[str, Any]) -> str:
    """What a final label does to the analyses (evalcore.labels.label_means), in words."""
    if campaigns.strategy_of(campaign).startswith("random:"):
        return (f"An adjudicated item's human score on {campaign['dimension']} is its final label, in place of the mean "
                "of its labels, wherever labels become human scores (the Data and Alignment pages; on a dataset with "
                f"gold scores of its own those stay, and its labels view {labels.view_id(campaign['dataset_id'])} "
                "takes the final label). The annotators' own labels stay in the annotations: the agreement above "
                "and on the Data and Label pages is taken on them.")
    return ("This campaign's items were picked by a judge's uncertainty, not at random: its labels make no human "
            "score (they would bias the estimates) and stay in the annotations. A final label is the human score only "
            "of an item that also has labels from a random sample, in place of their mean.")


def history_blocks(campaign: dict[str, Any], lab: pd.DataFrame, adj: pd.DataFrame) -> list[Block]:
    """Every label with who gave it, when, in this campaign; and every adjudication."""
    if lab.empty:
        return [Note("No label given in this campaign yet.", "caption")]
    t = lab.assign(campaign=campaign["name"], value=[f"{v:g}" for v in lab["value"]])
    t = t[["item_id", "annotator", "value", "created_at", "campaign"]].rename(columns={"created_at": "labelled at"})
    out: list[Block] = [Table(t, f"campaign {campaign['name']} labels", "campaign_labels")]
    if not adj.empty:
        out.append(Note("Every final label the adjudicator set, oldest first (the latest per item is the one in "
                        "force):", "caption"))
        out.append(Table(adj.assign(value=[f"{v:g}" for v in adj["value"]]).rename(
            columns={"value": "final label", "created_at": "set at"}),
            f"campaign {campaign['name']} adjudications", "campaign_adjudications"))
    return out


# ------------------------------------------------------------------------------------------------------ queue
@dataclass(frozen=True)
class QueueView:
    """The annotator's part: the item open for them (None: nothing to label now), until when, and what to say."""

    task: Task | None
    until: float | None
    done: int
    total: int
    notes: list[Note]


def queue_view(store: CampaignStore, campaign: dict[str, Any], assignments: pd.DataFrame, user: str | None, *,
               clock: Clock = time.time) -> QueueView:
    """Open the first item of the user's queue they can open (a lock until clock + ttl) and say where they are."""
    if not user:
        return QueueView(None, None, 0, 0, [Note("Sign in (or give your name) to label your queue.")])
    mine = assignments[assignments["annotator"] == user]
    if mine.empty:
        return QueueView(None, None, 0, 0, [Note(esc(f"{user} has no item in this campaign."), "caption")])
    tasks = campaigns.queue(assignments, user)
    done = len(mine) - len(tasks)
    if not tasks:
        return QueueView(None, None, done, len(mine), [Note(esc(
            f"Your queue is done: {counted(done, 'item')} labelled."), "success")])
    task, until, met = campaigns.next_open(store, campaign, tasks, user, clock=clock)
    notes = [Note(esc(f"{counted(len(met), 'item')} of your queue {'is' if len(met) == 1 else 'are'} open by "
                      f"someone else just now ({'; '.join(str(m) for m in met[:3])}): back once closed."),
                  "caption")] if met else []
    if task is None:
        notes.insert(0, Note("Every item left in your queue is open by someone else just now: reload later."))
    return QueueView(task, until, done, len(mine), notes)


def open_caption(q: QueueView, user: str) -> str:
    until = time.strftime("%H:%M:%S", time.gmtime(q.until or 0))
    return (f"Item {q.done + 1} of {q.total} in {user}'s queue. Open for you until {until} UTC: nobody else can "
            "take your place on it meanwhile; it is free again after that time or once labelled.")


def save_label(store: CampaignStore, dataset: Dataset, campaign: dict[str, Any], task: Task, user: str, value: float,
               *, owner: str | None, shown_at: str | None, clock: Clock = time.time) -> str:
    """The label saved (the sentence to show), or why it was not."""
    try:
        campaigns.save(store, campaign, dataset.dimension(campaign["dimension"]), task, user, value, owner=owner,
                       shown_at=shown_at, clock=clock)
    except campaigns.CampaignError as e:
        return f"Not saved: {e}"
    return f"Saved {value:g} on item {task.item_id}."


def adjudicate(store: CampaignStore, dataset: Dataset, campaign: dict[str, Any], item_id: str, value: float, *,
               by: str | None, note: str = "", clock: Clock = time.time) -> str:
    try:
        campaigns.adjudicate(store, campaign, dataset.dimension(campaign["dimension"]), item_id, value,
                             by=by or "", note=note, clock=clock)
    except campaigns.CampaignError as e:
        return f"Not set: {e}"
    return f"Final label {value:g} set on item {item_id} by {by}."


def visible(store: CampaignStore, dataset_id: str, user: str | None, *, signed_in: bool) -> list[dict[str, Any]]:
    return campaigns.campaigns_for(store, labels.base_id(dataset_id), user, signed_in=signed_in)


def point_choices(dataset: Dataset, dimension: str) -> tuple[list[float], Callable[[float], str]] | None:
    """The values an adjudicator picks from (the scale's points or categories) and their names; None for a scale
    given as a number."""
    d = dataset.dimension(dimension)
    pts = labels.scale_points(d)
    if pts is None:
        return None
    names = dict(zip(pts, labels.point_names(d)))
    return pts, lambda v: names.get(v, f"{v:g}")
