"""Labelling campaigns (evalcore.campaigns): the assignment (k distinct annotators per item, balanced, seeded), each
annotator's queue, locks that lapse on a virtual clock, agreement (Krippendorff's alpha against the ``krippendorff``
package, Fleiss' kappa against statsmodels and a worked example by hand), disagreements and adjudication."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from evalcore import campaigns, labels
from evalcore.meta.agreement import fleiss_kappa
from evalcore.model import Dataset, Dimension
from evalcore.store import Store
from evalcore.testing.clock import VirtualClock


pytest_plugins = ["tests.store_backends"]  # the store fixture on SQLite and on PostgreSQL


@pytest.fixture
def store(store_at):
    s = Store(store_at("campaigns.db"))
    yield s
    s.close()


def dataset(n: int = 6) -> Dataset:
    docs = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n)], "source": [f"source {i}" for i in range(n)],
                         "references": [[] for _ in range(n)], "context": ["" for _ in range(n)]})
    items = pd.DataFrame({"item_id": [f"i{k}" for k in range(n)], "doc_id": [f"d{k}" for k in range(n)],
                          "system_id": ["A"] * n, "output": [f"output {k}" for k in range(n)]})
    dims = [Dimension("quality", 1, 5), Dimension("verdict", 0, 2, kind="nominal", labels=("bad", "ok", "good"))]
    return Dataset(id="camp", name="Camp", task="summarization", dimensions=dims, documents=docs, items=items,
                   human_scores=pd.DataFrame())


# ----------------------------------------------------------------------------------------------------- assignment
@settings(max_examples=60, deadline=None)
@given(n=hs.integers(1, 40), m=hs.integers(1, 7), k=hs.integers(1, 7), seed=hs.integers(0, 2**16))
def test_each_item_gets_k_distinct_annotators_and_loads_are_balanced(n, m, k, seed):
    people = [f"u{j}" for j in range(m)]
    items = [f"i{j}" for j in range(n)]
    if k > m:
        with pytest.raises(campaigns.CampaignError, match="k distinct annotators"):
            campaigns.assign(items, people, k, seed)
        return
    plan = campaigns.assign(items, people, k, seed)
    by_item: dict[str, list[str]] = {}
    for a in plan:
        by_item.setdefault(a.item_id, []).append(a.annotator)
    assert set(by_item) == set(items)
    assert all(len(v) == k and len(set(v)) == k for v in by_item.values())
    load = Counter(a.annotator for a in plan)
    counts = [load.get(p, 0) for p in people]
    assert max(counts) - min(counts) <= 1 and sum(counts) == n * k
    assert {math.floor(n * k / m), math.ceil(n * k / m)} >= set(counts)
    for p in people:  # each queue numbered 1..load
        assert sorted(a.position for a in plan if a.annotator == p) == list(range(1, load.get(p, 0) + 1))
    assert campaigns.assign(items, people, k, seed) == plan  # seeded


def test_the_seed_changes_the_assignment_and_names_are_read_from_text():
    assert campaigns.annotator_names(" alice, bob\ncarol,,bob ") == ["alice", "bob", "carol"]
    items = [f"i{j}" for j in range(12)]
    a = campaigns.assign(items, "alice, bob, carol", 2, seed=1)
    b = campaigns.assign(items, "alice, bob, carol", 2, seed=2)
    assert a != b
    with pytest.raises(campaigns.CampaignError, match="at least one item"):
        campaigns.assign([], ["a", "b"], 1)


def test_create_checks_the_dimension_items_and_creator(store):
    ds = dataset()
    with pytest.raises(campaigns.CampaignError, match="not a dimension"):
        campaigns.create(store, ds, "nope", ["i0"], ["a", "b"], 2, creator="a")
    with pytest.raises(campaigns.CampaignError, match="not items of 'camp': zz"):
        campaigns.create(store, ds, "quality", ["i0", "zz"], ["a", "b"], 2, creator="a")
    with pytest.raises(campaigns.CampaignError, match="creator"):
        campaigns.create(store, ds, "quality", ["i0"], ["a", "b"], 2, creator=" ")
    assert store.campaign_rows() == []


# --------------------------------------------------------------------------------------------------- queue, locks
def _campaign(store, k=2, people=("alice", "bob"), dim="quality", n=6, selection="all", ttl=60.0, threshold=1.0):
    ds = dataset(n)
    cid = campaigns.create(store, ds, dim, list(ds.items["item_id"]), list(people), k, creator="alice",
                           selection=selection, ttl_s=ttl, threshold=threshold, seed=3)
    return ds, store.campaign_row(cid)


def test_queues_hold_each_annotators_unlabelled_items_in_order(store):
    ds, c = _campaign(store, k=1, people=("alice", "bob", "carol"))
    a = store.campaign_assignments(c["campaign_id"])
    q = {p: campaigns.queue(a, p) for p in ("alice", "bob", "carol")}
    assert sorted(t.item_id for v in q.values() for t in v) == sorted(ds.items["item_id"])
    assert all([t.position for t in v] == [1, 2] for v in q.values())
    clock = VirtualClock(1000.0)
    first = q["bob"][0]
    campaigns.save(store, c, ds.dimension("quality"), first, "bob", 4, clock=clock.now)
    after = campaigns.queue(store.campaign_assignments(c["campaign_id"]), "bob")
    assert after == q["bob"][1:]
    with pytest.raises(campaigns.CampaignError, match="already labelled"):
        campaigns.save(store, c, ds.dimension("quality"), first, "bob", 3, clock=clock.now)
    with pytest.raises(campaigns.CampaignError, match="not in alice's queue"):
        campaigns.save(store, c, ds.dimension("quality"), q["bob"][1], "alice", 3, clock=clock.now)
    with pytest.raises(campaigns.CampaignError, match="not a label"):
        campaigns.save(store, c, ds.dimension("quality"), q["bob"][1], "bob", 7, clock=clock.now)
    with pytest.raises(campaigns.CampaignError, match="signed in as carol"):
        campaigns.save(store, c, ds.dimension("quality"), q["bob"][1], "bob", 3, owner="carol", clock=clock.now)


def test_a_lock_keeps_a_reassigned_slot_and_lapses_on_the_clock(store):
    ds, c = _campaign(store, k=1, people=("alice", "bob", "carol"), ttl=60.0)
    clock = VirtualClock(1000.0)
    task = campaigns.queue(store.campaign_assignments(c["campaign_id"]), "bob")[0]
    assert campaigns.open_item(store, c, task, "bob", clock=clock.now) == 1060.0
    campaigns.reassign(store, c, task.item_id, task.slot, "carol", by="alice")
    moved = next(t for t in campaigns.queue(store.campaign_assignments(c["campaign_id"]), "carol")
                 if t.item_id == task.item_id)
    with pytest.raises(campaigns.Locked) as e:
        campaigns.open_item(store, c, moved, "carol", clock=clock.now)
    assert e.value.holder == "bob" and e.value.expires_at == 1060.0
    got, until, met = campaigns.next_open(store, c, [moved], "carol", clock=clock.now)
    assert got is None and [m.holder for m in met] == ["bob"]
    clock.advance(59.0)
    with pytest.raises(campaigns.Locked):
        campaigns.save(store, c, ds.dimension("quality"), moved, "carol", 2, clock=clock.now)
    clock.advance(1.0)  # at expires_at the lock has lapsed: free again
    assert campaigns.open_item(store, c, moved, "carol", clock=clock.now) == 1120.0
    assert [(r["annotator"], r["expires_at"]) for r in store.campaign_locks(c["campaign_id"], now=clock.now())] \
        == [("carol", 1120.0)]
    campaigns.save(store, c, ds.dimension("quality"), moved, "carol", 2, clock=clock.now)
    assert store.campaign_locks(c["campaign_id"], now=clock.now()) == []  # a label releases its lock
    with pytest.raises(campaigns.CampaignError, match="only the campaign's creator"):
        campaigns.reassign(store, c, moved.item_id, moved.slot, "bob", by="bob")
    with pytest.raises(campaigns.CampaignError, match="labelled already"):
        campaigns.reassign(store, c, moved.item_id, moved.slot, "bob", by="alice")


def test_releasing_frees_the_item_and_reopening_renews_the_lock(store):
    ds, c = _campaign(store, k=1, people=("alice", "bob"), ttl=30.0)
    clock = VirtualClock(0.0)
    task = campaigns.queue(store.campaign_assignments(c["campaign_id"]), "bob")[0]
    campaigns.open_item(store, c, task, "bob", clock=clock.now)
    clock.advance(20)
    assert campaigns.open_item(store, c, task, "bob", clock=clock.now) == 50.0  # renewed from now
    assert campaigns.release(store, c, task, "bob") and not campaigns.release(store, c, task, "bob")
    assert store.campaign_locks(c["campaign_id"], now=clock.now()) == []


# ------------------------------------------------------------------------------------------------------ agreement
def _label_all(store, ds, c, values: dict[str, dict[str, float]], clock=None):
    """values: annotator -> item -> label, for the annotator's assigned items."""
    clock = clock or VirtualClock()
    for person, by_item in values.items():
        for task in campaigns.queue(store.campaign_assignments(c["campaign_id"]), person):
            if task.item_id in by_item:
                campaigns.save(store, c, ds.dimension(c["dimension"]), task, person, by_item[task.item_id],
                               clock=clock.now)


def test_alpha_equals_the_krippendorff_package_and_rests_on_the_items_labelled_twice(store):
    import krippendorff

    ds, c = _campaign(store, k=2, people=("alice", "bob"), n=6)
    rng = np.random.default_rng(5)
    truth = {f"i{j}": int(rng.integers(1, 6)) for j in range(6)}
    vals = {"alice": {i: v for i, v in truth.items()},
            "bob": {i: min(5, v + (j % 2)) for j, (i, v) in enumerate(truth.items()) if j < 5}}  # bob skips i5
    _label_all(store, ds, c, vals)
    lab = store.campaign_labels(c["campaign_id"])
    ag = campaigns.agreement(c, ds.dimension("quality"), lab)
    matrix = np.array([[vals[p].get(f"i{j}", np.nan) for j in range(6)] for p in ("alice", "bob")], dtype=float)
    want = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    assert ag.level == "interval" and ag.alpha.statistic == pytest.approx(want, abs=1e-12)
    assert ag.alpha.n == 5 and ag.alpha.n_annotators == 2 and ag.labelled_items == 6 and ag.labels == 11
    assert ag.fleiss is None and ag.fleiss_reason.startswith("not applicable: the scale is numeric")


def test_fleiss_kappa_on_a_nominal_campaign_equals_statsmodels(store):
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    ds, c = _campaign(store, k=3, people=("alice", "bob", "carol", "dan"), dim="verdict", n=6)
    rng = np.random.default_rng(11)
    a = store.campaign_assignments(c["campaign_id"])
    vals: dict[str, dict[str, float]] = {}
    for item, g in a.groupby("item_id"):
        base = int(rng.integers(0, 3))
        for n, person in enumerate(g["annotator"]):
            vals.setdefault(person, {})[item] = float(base if n < 2 or item < "i3" else (base + 1) % 3)
    _label_all(store, ds, c, vals)
    ag = campaigns.agreement(c, ds.dimension("verdict"), store.campaign_labels(c["campaign_id"]))
    table = np.array([[vals[p][i] for p in vals if i in vals[p]] for i in sorted(ds.items["item_id"])])
    counts, _ = aggregate_raters(table)
    assert ag.fleiss.statistic == pytest.approx(sm_fleiss(counts, method="fleiss"), abs=1e-12)
    assert ag.fleiss.n == 6 and ag.fleiss.n_annotators == 4 and ag.level == "nominal"


def test_fleiss_kappa_reproduces_the_worked_example_by_hand():
    """The worked example of Fleiss' kappa (Wikipedia's, also statsmodels' test table): 10 subjects, 14 raters each,
    5 categories; P_i of each subject, P-bar = 0.378, P_e = 0.213, kappa = 0.210."""
    rows = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    p_i = [1.000, 0.253, 0.308, 0.440, 0.330, 0.462, 0.242, 0.176, 0.286, 0.286]
    for row, want in zip(rows, p_i):  # the table's own P_i, by hand
        assert round(sum(n * (n - 1) for n in row) / (14 * 13), 3) == want
    # the counts as ratings (the raters of a subject need not be the same people)
    long = [(f"s{i}", f"r{r}", float(cat)) for i, row in enumerate(rows)
            for r, cat in enumerate(c for c, n in enumerate(row) for _ in range(n))]
    est = fleiss_kappa(pd.DataFrame(long, columns=["item_id", "annotator", "value"]))
    p_bar, p_e = sum(p_i) / 10, sum((sum(r[j] for r in rows) / 140) ** 2 for j in range(5))
    assert round(p_bar, 3) == 0.378 and round(p_e, 3) == 0.213
    assert round(est.statistic, 3) == 0.210 and est.n == 10 and est.n_annotators == 14


@settings(max_examples=60, deadline=None)
@given(n_items=hs.integers(1, 25), m=hs.integers(2, 6), n_cat=hs.integers(2, 5), seed=hs.integers(0, 2**16))
def test_fleiss_kappa_equals_statsmodels_on_any_table(n_items, m, n_cat, seed):
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    ratings = np.random.default_rng(seed).integers(0, n_cat, size=(n_items, m)).astype(float)
    frame = pd.DataFrame([(f"i{i}", f"r{(i + r) % (m + 2)}", ratings[i, r]) for i in range(n_items) for r in range(m)],
                         columns=["item_id", "annotator", "value"])  # raters differ between items
    ours = fleiss_kappa(frame).statistic
    counts, _ = aggregate_raters(ratings)
    if len(np.unique(ratings)) == 1:
        assert math.isnan(ours)  # chance agreement 1: undefined (statsmodels divides by zero)
    else:
        assert ours == pytest.approx(sm_fleiss(counts, method="fleiss"), abs=1e-12)


def test_fleiss_kappa_refuses_unequal_rater_counts_and_is_undefined_on_one_category():
    frame = pd.DataFrame({"item_id": ["a", "a", "b"], "annotator": ["x", "y", "x"], "value": [1.0, 1.0, 0.0]})
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa(frame)
    same = pd.DataFrame({"item_id": ["a", "a"], "annotator": ["x", "y"], "value": [1.0, 1.0]})
    assert math.isnan(fleiss_kappa(same).statistic)


def test_agreement_says_why_a_figure_is_missing(store):
    ds, c = _campaign(store, k=2, people=("alice", "bob"), dim="verdict", n=4)
    ag = campaigns.agreement(c, ds.dimension("verdict"), store.campaign_labels(c["campaign_id"]))
    assert ag.alpha is None and ag.alpha_reason == "no item has labels from two annotators yet"
    assert ag.fleiss is None and ag.fleiss_reason.startswith("no item has labels from all 2 annotators")
    _label_all(store, ds, c, {"alice": {"i0": 1.0}, "bob": {"i0": 1.0}})
    ag = campaigns.agreement(c, ds.dimension("verdict"), store.campaign_labels(c["campaign_id"]))
    assert math.isnan(ag.alpha.statistic) and "undefined" in ag.alpha_reason
    assert math.isnan(ag.fleiss.statistic) and "undefined" in ag.fleiss_reason


def test_campaign_labels_are_ordinary_labels_the_label_page_reads(store):
    ds, c = _campaign(store, k=2, people=("alice", "bob"), n=4)
    _label_all(store, ds, c, {"alice": {f"i{j}": 3.0 for j in range(4)}, "bob": {f"i{j}": 4.0 for j in range(4)}})
    rows = labels.rows_of(store, "camp")
    assert len(rows) == 8 and set(rows["annotator"]) == {"alice", "bob"}
    assert set(rows["strategy"]) == {f"random:campaign:{c['campaign_id']}"}
    assert labels.random_part(rows) == {(f"i{j}", "quality") for j in range(4)}  # a campaign over all items
    means = labels.label_means(rows)
    assert means["score"].tolist() == [3.5] * 4


def test_a_sample_chosen_for_uncertainty_stays_out_of_the_random_part(store):
    ds = dataset(4)
    cid = campaigns.create(store, ds, "quality", ["i0", "i1"], ["alice", "bob"], 2, creator="alice",
                           selection="unstable:run-1")
    c = store.campaign_row(cid)
    _label_all(store, ds, c, {"alice": {"i0": 3.0, "i1": 2.0}, "bob": {"i0": 3.0}})
    rows = labels.rows_of(store, "camp")
    assert set(rows["strategy"]) == {f"uncertain:campaign:{cid}"} and labels.random_part(rows) == set()


# --------------------------------------------------------------------------------------------------- adjudication
def test_disagreements_over_the_threshold_are_listed_and_the_creator_adjudicates(store):
    ds, c = _campaign(store, k=2, people=("alice", "bob"), n=4, threshold=1.0, ttl=60)
    _label_all(store, ds, c, {"alice": {"i0": 1.0, "i1": 3.0, "i2": 5.0, "i3": 2.0},
                              "bob": {"i0": 3.0, "i1": 4.0, "i2": 5.0}})
    dim = ds.dimension("quality")
    d = campaigns.disagreements(c, dim, store.campaign_labels(c["campaign_id"]), store.adjudications(c["campaign_id"]))
    assert d["item_id"].tolist() == ["i0"] and d["spread"].tolist() == [2.0]  # i1 differs by 1: not over 1
    assert sorted(d["labels"].iloc[0].split(", ")) == ["1", "3"] and d["final"].isna().all()
    clock = VirtualClock(500.0)
    with pytest.raises(campaigns.CampaignError, match="only the campaign's creator"):
        campaigns.adjudicate(store, c, dim, "i0", 2.0, by="bob", clock=clock.now)
    with pytest.raises(campaigns.CampaignError, match="do not disagree"):
        campaigns.adjudicate(store, c, dim, "i1", 2.0, by="alice", clock=clock.now)
    campaigns.adjudicate(store, c, dim, "i0", 2.0, by="alice", note="read the source", clock=clock.now)
    adj = store.adjudications(c["campaign_id"])
    assert adj[["item_id", "value", "adjudicator", "note"]].values.tolist() == [["i0", 2.0, "alice", "read the source"]]
    assert adj["created_at"].iloc[0]
    d = campaigns.disagreements(c, dim, store.campaign_labels(c["campaign_id"]), adj)
    assert d[["final", "adjudicator"]].values.tolist() == [[2.0, "alice"]]
    assert store.campaign_locks(c["campaign_id"], now=clock.now()) == []  # the adjudicator's lock released


def test_an_item_open_by_an_annotator_cannot_be_adjudicated_and_the_other_way_round(store):
    ds = dataset(2)
    cid = campaigns.create(store, ds, "verdict", ["i0", "i1"], ["alice", "bob", "carol"], 3, creator="alice")
    c = store.campaign_row(cid)
    clock = VirtualClock(0.0)
    _label_all(store, ds, c, {"alice": {"i0": 0.0}, "bob": {"i0": 2.0}}, clock)
    carol = campaigns.queue(store.campaign_assignments(cid), "carol")
    i0 = next(t for t in carol if t.item_id == "i0")
    campaigns.open_item(store, c, i0, "carol", clock=clock.now)
    with pytest.raises(campaigns.Locked, match="carol has this item open"):
        campaigns.adjudicate(store, c, ds.dimension("verdict"), "i0", 1.0, by="alice", clock=clock.now)
    clock.advance(campaigns.DEFAULT_TTL_S)
    campaigns.adjudicate(store, c, ds.dimension("verdict"), "i0", 1.0, by="alice", clock=clock.now)
    # the adjudicator's lock blocks an annotator's label while it is held
    store.take_campaign_lock(cid, "i0", -1, "alice", now=clock.now(), ttl_s=60)
    with pytest.raises(campaigns.Locked, match="alice has this item open"):
        campaigns.save(store, c, ds.dimension("verdict"), i0, "carol", 1.0, clock=clock.now)


# ---------------------------------------------------------------------------------------------------------- views
def test_the_pages_view_of_a_campaign_says_what_each_figure_rests_on(store):
    from evalcore.views import campaigns as views
    from evalcore.views.blocks import Metrics, Note, Table

    ds, c = _campaign(store, k=2, people=("alice", "bob"), n=4, threshold=1.0)
    v = views.view(store, ds, c)
    agreement = next(b for b in v.agreement if isinstance(b, Table)).frame
    assert agreement["value"].tolist() == ["not given", "not given"]
    assert agreement["note"].tolist() == ["no item has labels from two annotators yet",
                                          "not applicable: the scale is numeric (Fleiss' kappa counts unordered "
                                          "categories)"]
    _label_all(store, ds, c, {"alice": {"i0": 1.0, "i1": 3.0, "i2": 5.0, "i3": 2.0},
                              "bob": {"i0": 3.0, "i1": 3.0, "i2": 4.0, "i3": 2.0}})
    v = views.view(store, ds, c)
    metrics = next(b for b in v.status if isinstance(b, Metrics))
    assert [m.value for m in metrics.items] == ["4", "2", "8 of 8", "alice"]
    progress = next(b for b in v.status if isinstance(b, Table)).frame
    assert progress.values.tolist() == [["alice", 4, 4, 0], ["bob", 4, 4, 0]]
    agreement = next(b for b in v.agreement if isinstance(b, Table)).frame
    alpha = campaigns.agreement(c, ds.dimension("quality"), store.campaign_labels(c["campaign_id"])).alpha
    assert agreement.iloc[0].tolist() == ["Krippendorff's alpha (interval)", f"{alpha.statistic:.3f}", "4", "2",
                                          "items labelled by at least two annotators"]
    for block in v.status + v.agreement + v.adjudication + v.history:  # no None, nan or "None" shown
        frame = block.frame if isinstance(block, Table) else None
        text = block.text if isinstance(block, Note) else frame.astype(str).to_string() if frame is not None else ""
        assert "None" not in text and "nan" not in text
    assert v.disagreements["item_id"].tolist() == ["i0"]


def test_the_queue_view_opens_the_first_item_and_says_when_it_is_done(store):
    from evalcore.views import campaigns as views
    from evalcore.views.format import esc

    ds, c = _campaign(store, k=1, people=("alice", "bob"), n=2, ttl=60)
    clock = VirtualClock(3600.0)
    q = views.queue_view(store, c, store.campaign_assignments(c["campaign_id"]), "bob", clock=clock.now)
    assert q.task is not None and q.until == 3660.0 and (q.done, q.total) == (0, 1)
    assert views.open_caption(q, "bob").startswith("Item 1 of 1 in bob's queue. Open for you until 01:01:00 UTC")
    assert views.save_label(store, ds, c, q.task, "bob", 4.0, owner="bob", shown_at=None, clock=clock.now) == \
        f"Saved 4 on item {q.task.item_id}."
    q = views.queue_view(store, c, store.campaign_assignments(c["campaign_id"]), "bob", clock=clock.now)
    assert q.task is None and q.notes[0].text == esc("Your queue is done: 1 item labelled.")
    q = views.queue_view(store, c, store.campaign_assignments(c["campaign_id"]), "carol", clock=clock.now)
    assert q.task is None and q.notes[0].text == esc("carol has no item in this campaign.")


def test_items_are_selected_as_the_form_says():
    from evalcore.views import campaigns as views

    ds = dataset(10)
    assert views.select_items(ds, "all", "quality") == ([f"i{k}" for k in range(10)], "all")
    ids, sel = views.select_items(ds, "random", "quality", n=4, seed=7)
    assert len(ids) == 4 and set(ids) <= set(ds.items["item_id"]) and sel == "random:n=4:seed=7"
    assert views.select_items(ds, "random", "quality", n=4, seed=7)[0] == ids
    with pytest.raises(campaigns.CampaignError, match="pick a run in the sidebar"):
        views.select_items(ds, "unstable", "quality", runs=[], run_a=None)
    assert views.describe_selection("random:n=4:seed=7") == "a uniform random sample (n=4, seed=7)"
    assert "not a random sample" in views.describe_selection("unstable:run-1")


def test_judge_disagreements_and_abstained_items_come_from_the_runs():
    from evalcore.testing.labels import label_dataset, label_run
    from evalcore.views import campaigns as views

    ds, truth = label_dataset(kind="ordinal", n_docs=12)
    a, b = label_run(ds, truth, seed=1, run_id="r-a"), label_run(ds, truth, seed=2, run_id="r-b")
    ids, sel = views.select_items(ds, "disagree", "faithful", n=5, runs=[a, b], run_a="r-a", run_b="r-b")
    ranks = pd.DataFrame({"a": a.scores("faithful").set_index("item_id")["judge"].rank(pct=True),
                          "b": b.scores("faithful").set_index("item_id")["judge"].rank(pct=True)})
    gap = (ranks["a"] - ranks["b"]).abs()  # the two runs' percentile ranks, by hand
    assert sel == "disagree:r-a:r-b" and len(ids) == 5
    assert min(gap[ids]) >= gap.drop(ids).max() and min(gap[ids]) > 0
    with pytest.raises(campaigns.CampaignError, match="two different runs"):
        views.select_items(ds, "disagree", "faithful", runs=[a], run_a="r-a", run_b="r-a")
    bds, btruth = label_dataset(kind="binary", n_docs=40)
    run = label_run(bds, btruth, seed=3, run_id="r-bin")
    try:
        ids, sel = views.select_items(bds, "abstained", "faithful", runs=[run], run_a="r-bin")
    except campaigns.CampaignError as e:  # the run certified no threshold: said, not an empty campaign
        assert "give no such item" in str(e)
    else:
        assert sel == "abstained:r-bin" and set(ids) <= set(bds.items["item_id"]) and ids


def test_unstable_items_are_those_whose_draws_spread_most():
    from evalcore.model import DRAW_COLUMNS, Run
    from evalcore.views import campaigns as views

    ds = dataset(5)
    draws = {"i0": [3, 3, 3], "i1": [1, 5, 3], "i2": [2, 3, 2], "i3": [4, 4, 5], "i4": [1, 5, 5]}
    rows = [{"item_id": i, "dimension": "quality", "criteria_hash": "h", "draw": d, "raw": str(v), "value": float(v),
             "status": "ok", "reason": ""} for i, vs in draws.items() for d, v in enumerate(vs)]
    frame = pd.DataFrame(rows)
    for c in DRAW_COLUMNS:
        if c not in frame:
            frame[c] = ""
    run = Run("r-draws", "camp", "geval", "m", draws=frame[DRAW_COLUMNS])
    ids, sel = views.select_items(ds, "unstable", "quality", n=3, runs=[run], run_a="r-draws")
    sd = {i: float(np.std(v, ddof=1)) for i, v in draws.items()}  # by hand: i1 2.0, i4 2.31, then i2 / i3 0.577
    assert ids[:2] == ["i4", "i1"] and ids[2] in ("i2", "i3") and sd["i0"] == 0 and sel == "unstable:r-draws"
    one = Run("r-one", "camp", "geval", "m")
    with pytest.raises(campaigns.CampaignError, match="one draw per item"):
        views.select_items(ds, "unstable", "quality", runs=[one], run_a="r-one")


# ------------------------------------------------------------------------------------------- the page, AppTest
def test_the_page_without_sign_in_labels_under_the_name_typed(first_start):
    """A laptop without sign-in: the page asks for a name; carol, one of the campaign's annotators, labels the item
    open for her, and the label is hers, in the campaign; a name that is no annotator's sees the campaign (nothing is
    scoped without sign-in) and has no queue."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from evalcore import runs
    from evalcore.store import default_store
    from evalcore.views.format import esc

    store = default_store()
    summeval = runs.get_dataset("summeval", store)
    items = list(summeval.items["item_id"].astype(str)[:2])
    cid = campaigns.create(store, summeval, "coherence", items, ["carol", "dave"], 2, creator="carol", name="pilot")
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=90)
    at.query_params["dataset"] = "summeval"
    at.switch_page("pages/campaigns.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Sign in (or give your name)" in " ".join(i.value for i in at.info)
    at.text_input(key="campaign_user").input("carol").run()
    assert not at.exception and not at.error, [e.value for e in at.exception]
    at.button(key="campaign_rate_4").click().run()
    lab = store.campaign_labels(cid)
    assert lab[["annotator", "value"]].values.tolist() == [["carol", 4.0]] and lab["item_id"].iloc[0] in items
    assert any("Saved 4 on item" in c.value for c in at.caption)
    at.text_input(key="campaign_user").input("erin").run()
    # without sign-in nothing is scoped: erin sees the campaign, and has no queue in it
    assert any(c.value == esc("erin has no item in this campaign.") for c in at.caption)


def test_the_open_items_and_a_reassignment_as_the_page_says_them(store):
    from evalcore.views import campaigns as views
    from evalcore.views.blocks import Note, Table

    ds, c = _campaign(store, k=1, people=("alice", "bob"), n=2, ttl=60)
    clock = VirtualClock(0.0)
    assert [b.text for b in views.open_now(store, c, clock=clock.now) if isinstance(b, Note)] == \
        ["No item is open just now."]
    q = views.queue_view(store, c, store.campaign_assignments(c["campaign_id"]), "bob", clock=clock.now)
    table = next(b for b in views.open_now(store, c, clock=clock.now) if isinstance(b, Table)).frame
    assert table.values.tolist() == [[q.task.item_id, "bob", "00:01:00"]]
    v = views.view(store, ds, c)
    key = f"{q.task.item_id}::{q.task.slot}"
    assert v.reassignable[key] == f"{q.task.item_id} (now bob's)"
    assert views.reassign(store, c, key, "carol", by="bob") == \
        "Not reassigned: only the campaign's creator (alice) reassigns items"
    assert views.reassign(store, c, key, " carol ", by="alice") == f"Item {q.task.item_id} is now in carol's queue."
    assert [t.item_id for t in campaigns.queue(store.campaign_assignments(c["campaign_id"]), "carol")] == \
        [q.task.item_id]
    clock.advance(60)  # bob's lock lapsed: not listed
    assert [b.text for b in views.open_now(store, c, clock=clock.now) if isinstance(b, Note)] == \
        ["No item is open just now."]


# ------------------------------------------------------------------------------------ final labels as human scores
def _scores(store, dataset_id: str = "camp") -> dict[str, float]:
    """item -> human score in the dataset the analyses read (evalcore.runs.get_dataset)."""
    from evalcore import runs

    hs = runs.get_dataset(dataset_id, store).human_scores
    return {str(i): float(v) for i, v in zip(hs["item_id"], hs["score"])}


def test_an_adjudicated_item_takes_the_final_label_as_its_human_score(store):
    from evalcore import runs
    from evalcore.views import campaigns as views
    from evalcore.views.blocks import Note
    from evalcore.views.format import esc

    ds, c = _campaign(store, k=2, people=("alice", "bob"), n=4, threshold=1.0)
    store.save_dataset(ds)
    _label_all(store, ds, c, {"alice": {"i0": 5.0, "i1": 2.0}, "bob": {"i0": 1.0, "i1": 3.0}})
    assert _scores(store) == {"i0": 3.0, "i1": 2.5}  # the means, (5 + 1) / 2 and (2 + 3) / 2
    before = runs.dataset_version("camp", store=store)
    campaigns.adjudicate(store, c, ds.dimension("quality"), "i0", 1.0, by="alice", clock=VirtualClock().now)
    assert runs.dataset_version("camp", store=store) != before  # cached figures are recomputed
    assert _scores(store) == {"i0": 1.0, "i1": 2.5}  # the final label; i1, not adjudicated, keeps its mean
    assert _scores(store, "camp@labels") == {"i0": 1.0, "i1": 2.5}
    merged = runs.get_dataset("camp", store)
    ann = merged.annotations[merged.annotations["item_id"] == "i0"]
    assert sorted(zip(ann["annotator"], ann["value"])) == [("alice", 5.0), ("bob", 1.0)]  # the labels stay
    assert merged.meta["labels"]["adjudicated"] == 1 and "1 of them an adjudicator's final label" in merged.description
    means = labels.label_means(labels.rows_of(store, "camp"), adjudications=labels.adjudications_of(store, "camp"))
    assert means.set_index("item_id")["adjudicated"].to_dict() == {"i0": True, "i1": False}
    notes = [b.text for b in views.view(store, ds, c).adjudication if isinstance(b, Note)]
    assert esc(views.final_label_rule(c)) in notes
    assert views.final_label_rule(c).startswith("An adjudicated item's human score on quality is its final label")


def test_a_later_adjudication_replaces_an_earlier_and_counts_only_over_its_campaigns_labels(store):
    ds, c = _campaign(store, k=2, people=("alice", "bob"), n=4, threshold=1.0)
    store.save_dataset(ds)
    _label_all(store, ds, c, {"alice": {"i0": 5.0}, "bob": {"i0": 1.0}})
    cid = c["campaign_id"]
    store.add_adjudication(cid, "i0", 1.0, "alice", created_at="2026-01-01T00:00:00.000+00:00")
    store.add_adjudication(cid, "i0", 4.0, "alice", created_at="2026-01-02T00:00:00.000+00:00")
    assert _scores(store) == {"i0": 4.0}
    # a final label of an item none of whose campaign labels the rows hold (not shared, say) does not count
    store.add_adjudication(cid, "i1", 2.0, "alice", created_at="2026-01-03T00:00:00.000+00:00")
    store.save_label("camp", "i1", "quality", "carol", 5.0)  # labelled on the Label page, not in the campaign
    assert _scores(store) == {"i0": 4.0, "i1": 5.0}
    rows = labels.rows_of(store, "camp")
    alice_only = rows[rows["annotator"] != "bob"]
    assert labels.label_means(alice_only, adjudications=store.dataset_adjudications("camp")) \
        .set_index("item_id")["score"].to_dict() == {"i0": 4.0, "i1": 5.0}
    carol_only = rows[rows["annotator"] == "carol"]
    assert labels.adjudicated(carol_only, store.dataset_adjudications("camp")).empty


def test_a_categorical_dimension_takes_the_adjudicated_category(store):
    ds, c = _campaign(store, k=3, people=("alice", "bob", "carol"), dim="verdict", n=3)
    store.save_dataset(ds)
    _label_all(store, ds, c, {"alice": {"i0": 0.0}, "bob": {"i0": 2.0}, "carol": {"i0": 2.0}})
    assert _scores(store)["i0"] == pytest.approx(4 / 3)  # labels' mean before (the mode would be 2)
    campaigns.adjudicate(store, c, ds.dimension("verdict"), "i0", 0.0, by="alice", clock=VirtualClock().now)
    assert _scores(store) == {"i0": 0.0}  # the adjudicated category, neither the mean nor the mode


def test_a_final_label_in_a_campaign_picked_by_judge_uncertainty_makes_no_human_score(store):
    from evalcore.views import campaigns as views

    ds = dataset(4)
    store.save_dataset(ds)
    cid = campaigns.create(store, ds, "quality", ["i0", "i1"], ["alice", "bob"], 2, creator="alice",
                           selection="unstable:run-1")
    c = store.campaign_row(cid)
    _label_all(store, ds, c, {"alice": {"i0": 5.0}, "bob": {"i0": 1.0}})
    campaigns.adjudicate(store, c, ds.dimension("quality"), "i0", 1.0, by="alice", clock=VirtualClock().now)
    assert _scores(store) == {}  # not a random sample: left out of the human scores, final label or not
    assert "make no human score" in views.final_label_rule(c)


def test_the_cli_plan_reads_the_final_labels_as_the_label_page_does(store_at, monkeypatch, capsys):
    """``plan --json`` takes an adjudicated item's final label as its human score, like the Label page's plan."""
    import json

    import numpy as np

    from evalcore import cli, labels, runs

    db = store_at("plan.db")
    s = Store(db)
    ds = runs.get_dataset("summeval", s, with_labels=False)
    run = runs.load_run("summeval/shen-gpt-4-0314-rts")
    judged = run.scores("coherence").set_index("item_id")["judge"]
    ids = [i for i in labels.random_order(ds) if i in judged.index][:30]
    cid = campaigns.create(s, ds, "coherence", ids, ["alice", "bob"], 2, creator="alice", seed=1)
    c = s.campaign_row(cid)
    dim = ds.dimension("coherence")
    clock = VirtualClock()
    for person in ("alice", "bob"):
        for task in campaigns.queue(s.campaign_assignments(cid), person):
            value = float(np.clip(round(judged[task.item_id]), 1, 5))
            if person == "bob" and ids.index(task.item_id) % 2:  # bob disagrees on every other item
                value = 1.0 if value >= 3 else 5.0
            campaigns.save(s, c, dim, task, person, value, clock=clock.now)
    split = campaigns.disagreements(c, dim, s.campaign_labels(cid), s.adjudications(cid))
    assert len(split) >= 3
    for item in split["item_id"][:3]:  # final labels far from the judge: the statistic must move
        campaigns.adjudicate(s, c, dim, item, 1.0 if judged[item] >= 3 else 5.0, by="alice", clock=clock.now)
    rows = s.label_rows(labels.base_id("summeval"))
    want = labels.plan(ds, run, rows, "coherence", adjudications=labels.adjudications_of(s, "summeval"))
    mean_only = labels.plan(ds, run, rows, "coherence")
    s.close()
    assert want["statistic"] != mean_only["statistic"]
    monkeypatch.setenv("EVALCORE_DB", str(db))
    capsys.readouterr()
    assert cli.main(["plan", "--dataset", "summeval", "--run", "summeval/shen-gpt-4-0314-rts", "--dimension",
                     "coherence", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["statistic"] == pytest.approx(want["statistic"], abs=1e-12) and got["n_now"] == want["n_now"]


def test_a_categorical_final_label_settles_a_tie_in_the_judge_vs_human_labels(store):
    """Two annotators who disagree on a nominal item tie (no majority: left out of the label agreement); the
    adjudicator's final label makes it that item's gold label."""
    from evalcore import runs
    from evalcore.meta.classification import label_frame
    from evalcore.model import JUDGMENT_COLUMNS, Run

    ds, c = _campaign(store, k=2, people=("alice", "bob"), dim="verdict", n=3)
    store.save_dataset(ds)
    _label_all(store, ds, c, {"alice": {"i0": 0.0, "i1": 1.0, "i2": 2.0}, "bob": {"i0": 2.0, "i1": 1.0, "i2": 2.0}})
    judgments = pd.DataFrame([{col: None for col in JUDGMENT_COLUMNS} | {"item_id": i, "dimension": "verdict",
                                                                     "value": v, "status": "ok"}
                              for i, v in (("i0", 2.0), ("i1", 1.0), ("i2", 0.0))])[JUDGMENT_COLUMNS]
    run = Run("r", "camp", "geval", "m", judgments=judgments)
    frame, who, ties, _ = label_frame(runs.get_dataset("camp", store), run, "verdict")
    assert ties == 1 and sorted(frame["item_id"]) == ["i1", "i2"] and "final label" not in who
    campaigns.adjudicate(store, c, ds.dimension("verdict"), "i0", 2.0, by="alice", clock=VirtualClock().now)
    frame, who, ties, _ = label_frame(runs.get_dataset("camp", store), run, "verdict")
    assert ties == 0 and dict(zip(frame["item_id"], frame["human"])) == {"i0": 2.0, "i1": 1.0, "i2": 2.0}
    assert who == "majority of the annotators (labels), or an adjudicator's final label on 1"


def test_final_labels_that_cannot_be_read_are_said_with_the_dataset(store, monkeypatch):
    """A store whose final labels cannot be read shows the labels' means, and the dataset's description says so
    (not only the server's log)."""
    from evalcore import runs
    from evalcore.store import StoreUnreadable

    ds, c = _campaign(store, k=2, people=("alice", "bob"), n=2)
    store.save_dataset(ds)
    _label_all(store, ds, c, {"alice": {"i0": 5.0, "i1": 2.0}, "bob": {"i0": 1.0, "i1": 2.0}})

    def broken(*_a, **_k):
        raise StoreUnreadable("the store cannot be read", path=store.path)

    monkeypatch.setattr(type(store), "dataset_adjudications", broken)
    got = runs.get_dataset("camp", store)
    assert "final labels could not be read" in got.description
    assert dict(zip(got.human_scores["item_id"], got.human_scores["score"]))["i0"] == 3.0
