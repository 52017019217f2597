"""The Improve page's queues as jobs (evalcore.improve_jobs), on PostgreSQL with the loopback judge: a two-candidate
queue enqueued (each run recorded "queued", its scoring job deferred under the queue's one lock), a worker in this
process scores both, and the runs' judgments equal those of the same queue run in-process on a SQLite store, as the
page always has; a later tab's queue follows the same runs (nothing queued or sent again). On SQLite the queue
is refused (it runs in the page's session). Nothing depends on speed: the worker runs until the queue is empty.
The PostgreSQL half is skipped without a server (``EVALCORE_TEST_POSTGRES``; tests/store_backends.py)."""

from __future__ import annotations

import asyncio
import time

import pandas as pd
import pytest

from evalcore import datasets, improve_jobs, workers
from evalcore.align import make_split
from evalcore.align import queue as aq
from evalcore.align.candidates import Candidate, baseline_candidate
from evalcore.judge.client import Endpoint
from evalcore.judge.spec import EngineOptions
from evalcore.sampling import documents_subset
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.types import Criteria
from tests.store_backends import pg_schemas  # noqa: F401
from tests.test_workers import priced_judge  # noqa: F401

DIM = "coherence"
NAMES = ["baseline", "edit"]


def _crit(definition: str) -> Criteria:
    return Criteria(dimension=DIM, task_introduction="Rate the summary.", definition=definition, scale_min=1,
                    scale_max=5, steps="1. Read the summary.\n2. Rate it.")


def _plan(store: Store, base_url: str) -> aq.ScoringQueue:
    full = datasets.load_dataset("summeval")
    ds = documents_subset(full, list(dict.fromkeys(full.items["doc_id"]))[:4])
    split = make_split(ds, DIM, test_share=0.5, seed=0)
    cands = [baseline_candidate(_crit("Coherence.")), Candidate(_crit("Coherence, sentence by sentence."), "edit")]
    endpoint = Endpoint(base_url=base_url, model="loopback-judge", provider="vllm", api_key_env="VLLM_API_KEY")
    return aq.plan("dev", ds, split, "dev", DIM, "geval", cands, NAMES, endpoint, EngineOptions(endpoint), store,
                   owner="ann")


def _run_here(q: aq.ScoringQueue) -> None:
    q.advance()
    while q.busy():
        q.job.wait(60)


def _judgments(store: Store, run_id: str) -> pd.DataFrame:
    rows = store.conn.execute("SELECT item_id, dimension, value, status FROM judgments WHERE run_id = ? "
                              "ORDER BY item_id, dimension", (run_id,)).fetchall()
    return pd.DataFrame([tuple(r) for r in rows], columns=["item_id", "dimension", "value", "status"])


def test_a_queue_on_sqlite_runs_in_the_pages_session(tmp_path):
    store = Store(tmp_path / "s.db")
    with serve() as srv:
        q = _plan(store, srv.base_url)
        with pytest.raises(ValueError, match="SQLite file"):
            improve_jobs.enqueue_queue(q)
    assert not any(store.run_exists(it.run_id) for it in q.items)  # nothing recorded


def test_a_worker_finishes_an_enqueued_queue_as_the_page_would(pg_schemas, tmp_path):  # noqa: F811
    url = pg_schemas.new("improve")
    store, here = Store(url), Store(tmp_path / "here.db")
    try:
        with serve() as srv:
            q = _plan(store, srv.base_url)
            ids = improve_jobs.enqueue_queue(q)
            assert all(i is not None for i in ids) and len(ids) == 2
            assert [store.run_row(it.run_id)["status"] for it in q.items] == ["queued", "queued"]
            assert improve_jobs.enqueue_queue(q) == [None, None]  # their jobs wait: not queued again
            with workers.opened(url) as app:  # one lock for the queue: its jobs run one after another, in order
                jobs = [app.job_manager.list_jobs(id=i)[0] for i in ids]
                assert {j.lock for j in jobs} == {improve_jobs.queue_lock(q)} and ids == sorted(ids)
            asyncio.run(workers.work(url, heartbeat_s=0.5, wait=False))
            with workers.opened(url) as app:
                assert [app.job_manager.get_job_status(i).value for i in ids] == ["succeeded", "succeeded"]

            # the same queue in the page's session, on SQLite: the same runs, the same judgments
            local = _plan(here, srv.base_url)
            _run_here(local)
            assert local.outcome() is None and local.finished() == NAMES
            for it, mine in zip(q.items, local.items):
                assert it.run_id == mine.run_id and store.run_row(it.run_id)["status"] == "done"
                queued = _judgments(store, it.run_id)
                assert len(queued) > 0 and (queued["status"] == "ok").all()
                pd.testing.assert_frame_equal(queued, _judgments(here, mine.run_id))

            # a tab opened later follows the same runs: done, nothing queued or sent again
            sent = srv.requests_seen
            later = _plan(store, srv.base_url)
            assert improve_jobs.enqueue_queue(later) == [None, None]
            improve_jobs.follow(later)
            _run_here(later)
            assert later.outcome() is None and later.finished() == NAMES
            assert [r["state"] for r in later.status()] == ["done", "done"] and srv.requests_seen == sent
    finally:
        store.close()
        here.close()


def test_the_pages_queue_goes_to_the_workers_when_it_starts_and_follows_them(pg_schemas):  # noqa: F811
    """``to_workers``: nothing is queued until the page advances the queue; then both runs are, a worker (on a
    thread here) scores them in order while the page's queue follows, and it ends as the in-session queue does."""
    import threading

    url = pg_schemas.new("page")
    store = Store(url)
    try:
        with serve() as srv:
            q = improve_jobs.to_workers(_plan(store, srv.base_url))
            assert not any(store.run_exists(it.run_id) for it in q.items)  # planned only: nothing recorded
            q.advance()  # the click: both runs queued (on the first job's thread), the first one followed
            deadline = time.monotonic() + 120
            while q.job.queued_at is None:
                assert time.monotonic() < deadline and q.job.error is None, q.job.error
                time.sleep(0.05)
            assert [store.run_row(it.run_id)["status"] for it in q.items] == ["queued", "queued"]
            worker = threading.Thread(target=lambda: asyncio.run(workers.work(url, heartbeat_s=0.5, wait=False)))
            worker.start()
            _run_here(q)
            worker.join(300)
            assert not worker.is_alive()
            assert q.outcome() is None and q.finished() == NAMES
            assert [store.run_row(it.run_id)["status"] for it in q.items] == ["done", "done"]
            assert all(len(_judgments(store, it.run_id)) > 0 for it in q.items)
    finally:
        store.close()


def test_cancelling_the_pages_queue_drops_its_waiting_runs(pg_schemas):  # noqa: F811
    url = pg_schemas.new("cancel")
    store = Store(url)
    try:
        with serve() as srv:
            q = improve_jobs.to_workers(_plan(store, srv.base_url))
            q.advance()  # no worker runs: both jobs wait
            q.cancel()
            q.job.wait(60)
            assert not q.busy() and q.outcome()[0] == "warning" and q.pending() == NAMES
            assert [store.run_row(it.run_id)["status"] for it in q.items] == ["cancelled", "cancelled"]
            with workers.opened(url) as app:
                assert app.job_manager.list_jobs(queue=workers.QUEUE, status="todo") == []
            # started again (a new click): queued again, and resumed
            again = improve_jobs.to_workers(_plan(store, srv.base_url))
            again.advance()
            deadline = time.monotonic() + 120
            while again.job.queued_at is None:
                assert time.monotonic() < deadline and again.job.error is None, again.job.error
                time.sleep(0.05)
            assert [store.run_row(it.run_id)["status"] for it in again.items] == ["queued", "queued"]
            again.cancel()
            again.job.wait(60)
    finally:
        store.close()


def test_a_queue_on_sqlite_is_left_to_the_pages_session(tmp_path):
    store = Store(tmp_path / "s.db")
    with serve() as srv:
        q = _plan(store, srv.base_url)
        make = q.make_job
        assert improve_jobs.to_workers(q) is q and q.make_job is make


# ------------------------------------------------------------------------------- a queue under a spending budget
def test_shares_split_the_reservation_by_the_estimate_else_evenly():
    assert improve_jobs.shares(0.9, {"a": 1.0, "b": 2.0}) == pytest.approx({"a": 0.3, "b": 0.6})
    assert improve_jobs.shares(0.9, {"a": 0.0, "b": 0.0, "c": 0.0}) == pytest.approx({"a": 0.3, "b": 0.3, "c": 0.3})
    assert improve_jobs.shares(0.9, {}) == {}


def _rows(store: Store, spender: str) -> list[tuple[str, float]]:
    rows = store.conn.execute("SELECT what, usd FROM spending WHERE spender = ? ORDER BY rowid", (spender,))
    return [(str(w), float(u)) for w, u in rows.fetchall()]


def test_hand_over_shares_moves_the_clicks_charge_to_each_run_never_below_what_was_started(tmp_path):
    """The click charged 1.00; the probes cost 0.10 (counted by the meter); the runs' shares 0.30 and 0.60: each run's
    rows hold its share, the first the probe too, the total stays 1.00 at every row written, and the queue's meter,
    released at the queue's end, records nothing more. A run left out of the shares gives its part back."""
    from evalcore.judge import spending

    store = Store(tmp_path / "s.db")
    meter = spending.Meter(store, "ann", model="m", provider="openai", reserved=1.0, what="improve x", cap=None)
    store.charge("ann", 1.0, calls=3, what="improve x", cap=None)  # the click (spending.charge)
    meter.cost = 0.10
    before = len(_rows(store, "ann"))
    spending.hand_over_shares(meter, {"r1": 0.30, "r2": 0.60}, queue="Q")
    written = _rows(store, "ann")[before:]
    running = 1.0
    for _, usd in written:
        running += usd
        assert running >= 1.0 - 1e-12  # never below what was started
    assert store.spent_usd("ann") == pytest.approx(1.0)
    assert sum(u for _, u in spending.run_rows(store, "ann", "r1")) == pytest.approx(0.40)
    assert sum(u for _, u in spending.run_rows(store, "ann", "r2")) == pytest.approx(0.60)
    meter.release()
    assert store.spent_usd("ann") == pytest.approx(1.0)
    assert spending.holds_reservation(store, "ann", "r2") and not spending.holds_reservation(store, "ann", "r3")
    # r1's worker begins: r2's share, waiting behind it, is r1's to use (the queue's one reservation)
    assert spending.waiting_in_queue(store, "ann", "Q", "r1") == pytest.approx(0.60)
    assert spending.waiting_in_queue(store, "ann", "Q", "r2") == pytest.approx(0.30)  # r1's, less its probe
    # r2 cancelled while it waits: its share given back
    spending.give_back_queued(store, "ann", "r2")
    assert store.spent_usd("ann") == pytest.approx(0.40) and not spending.holds_reservation(store, "ann", "r2")
    # a run left out of the shares (done, or reserved by another tab): its part of a second click given back
    store.charge("ann", 0.5, calls=1, what="improve x", cap=None)
    again = spending.Meter(store, "ann", model="m", provider="openai", reserved=0.5, what="improve x", cap=None)
    spending.hand_over_shares(again, {}, queue="Q")
    assert store.spent_usd("ann") == pytest.approx(0.40)
    store.close()


def _workspace(store: Store, endpoint):
    """The Improve page's workspace on the four-document SummEval subset, the operator's priced judge (no key
    typed), one request at a time, for signed-in "ann"."""
    from evalcore.align.loop import Settings
    from evalcore.views import improve as improve_views

    full = datasets.load_dataset("summeval")
    ds = documents_subset(full, list(dict.fromkeys(full.items["doc_id"]))[:4])
    split = make_split(ds, DIM, test_share=0.5, seed=0)
    return improve_views.Workspace(ds, DIM, split, "geval", endpoint, EngineOptions(endpoint, concurrency=1), store,
                                   Settings(), owner="ann")


def _cands(n: int = 2) -> list[Candidate]:
    edits = ["Coherence, sentence by sentence.", "Coherence: does each sentence follow from the one before?"]
    return [baseline_candidate(_crit("Coherence."))] + [Candidate(_crit(e), "edit") for e in edits[:n - 1]]


def _click(ws, n: int = 2):
    """The page's "Score" (pages/improve.offer) for ``n`` candidates: the estimate, the queue
    (``Workspace.queue``), the charge at the click (evalcore.judge.spending.charge, the one the page makes):
    (queue, estimate, decision)."""
    from evalcore.judge import spending

    est = ws.estimate("dev", _cands(n))
    q = ws.queue("dev", "dev", _cands(n), charged_usd=est.cost_usd if est.calls else 0.0)
    d = spending.charge(est.cost_usd, est.calls, local=False, spender="ann", store=ws.store,
                        what=f"improve {ws.dataset.id} {DIM} dev")
    return q, est, d


def _started(q: aq.ScoringQueue) -> None:
    """The page's advance at the click: its first job records and queues every run (on its thread)."""
    q.advance()
    deadline = time.monotonic() + 120
    while q.job.queued_at is None and not q.job.finished:
        assert time.monotonic() < deadline, "the queue's runs were not queued"
        time.sleep(0.05)
    assert q.job.error is None, q.job.error


def _work_until_empty(url: str) -> None:
    asyncio.run(workers.work(url, heartbeat_s=0.5, wait=False))


def _replies_cost(store: Store, run_id: str) -> float:
    from tests.test_workers import PRICE_PER_TOKEN

    st = store.run_stats(run_id)
    return (st["prompt_tokens"] + st["completion_tokens"]) * PRICE_PER_TOKEN


def _probe_cost(store: Store, q: aq.ScoringQueue) -> float:
    from evalcore.judge import spending

    return sum(u for it in q.items for w, u in spending.run_rows(store, "ann", it.run_id)
               if w.endswith(f"({spending.BEFORE})"))


def test_a_budgeted_queue_in_the_workers_costs_what_it_costs_in_the_pages_session(
        pg_schemas, priced_judge, monkeypatch, tmp_path):  # noqa: F811
    """Under the cap, a two-candidate queue goes to the workers with the click's reservation split among its runs;
    an in-process worker scores both; the user is charged what the same queue costs in the page's session on a
    SQLite store (its one meter), to the cent and closer, with the same judgments. A tab opened later, whose runs are
    done, reserves nothing again."""
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    url = pg_schemas.new("budget")
    store, here = Store(url), Store(tmp_path / "here.db")
    try:
        q, est, d = _click(_workspace(store, priced_judge))
        assert d.allowed and est.cost_usd > 0 and q.meter is not None
        _started(q)
        assert [store.run_row(it.run_id)["status"] for it in q.items] == ["queued", "queued"]
        from evalcore.judge import spending

        reserved = [sum(u for w, u in spending.run_rows(store, "ann", it.run_id) if w.endswith(f"({spending.RESERVED})"))
                    for it in q.items]
        assert all(r > 0 for r in reserved) and store.spent_usd("ann") == pytest.approx(est.cost_usd)
        _work_until_empty(url)
        _run_here(q)
        assert q.outcome() is None and [store.run_row(it.run_id)["status"] for it in q.items] == ["done", "done"]

        local, est_here, d_here = _click(_workspace(here, priced_judge))
        assert d_here.allowed and est_here.cost_usd == pytest.approx(est.cost_usd)
        assert not isinstance(local.make_job(local.items[0].spec, local.engine, here), improve_jobs.FollowedRun)
        _run_here(local)
        assert local.outcome() is None
        for it, mine in zip(q.items, local.items):
            pd.testing.assert_frame_equal(_judgments(store, it.run_id), _judgments(here, mine.run_id))
        spent = store.spent_usd("ann")
        assert spent > est.cost_usd  # the reasoning replies cost more than the estimate guessed
        assert spent == pytest.approx(here.spent_usd("ann"), rel=1e-9, abs=1e-9)
        assert spent == pytest.approx(_probe_cost(store, q) + sum(_replies_cost(store, it.run_id) for it in q.items))

        later, est_later, _ = _click(_workspace(store, priced_judge))  # a new tab: its runs are done
        _run_here(later)
        assert later.outcome() is None and store.spent_usd("ann") == pytest.approx(spent)
    finally:
        store.close()
        here.close()


def test_a_budgeted_queue_costing_more_than_estimated_stops_at_the_cap(
        pg_schemas, priced_judge, monkeypatch):  # noqa: F811
    """Three candidates; the replies cost about twice the estimate (reasoning tokens it does not guess), the cap 1.1
    times the click's estimate: the first run is scored whole, the second spends its share and the one waiting
    behind it (the click's one reservation, as the page's session spends it) and stops at the cap, within two
    requests' cost; the page ends the queue with the cap's message; the third run sends nothing and gives its
    share back."""
    url = pg_schemas.new("capped")
    store = Store(url)
    try:
        ws = _workspace(store, priced_judge)
        cap = 1.1 * ws.estimate("dev", _cands(3)).cost_usd
        monkeypatch.setenv("EVALCORE_MAX_COST_USD", repr(cap))
        q, est, d = _click(ws, 3)
        assert d.allowed
        _started(q)
        _work_until_empty(url)
        _run_here(q)
        kind, text = q.outcome()
        assert kind == "error" and f"spending cap of ${cap:.4f} per user was reached" in text
        first, second, third = (it.run_id for it in q.items)
        assert q.finished() == [q.items[0].name] and q.status()[1]["state"] == "failed"
        stats = store.run_stats(second)
        assert store.run_row(first)["status"] == "done" and store.run_row(second)["status"] == "stopped"
        assert 0 < stats["judged_this_session"] < len(_judgments(store, first))
        assert len(_judgments(store, third)) == 0 and store.run_row(third)["status"] in ("stopped", "cancelled")
        per_task = _replies_cost(store, second) / stats["judged_this_session"]
        spent = store.spent_usd("ann")
        assert cap <= spent <= cap + 2 * per_task  # one request in flight at a time
        assert spent == pytest.approx(_probe_cost(store, q) + sum(_replies_cost(store, r) for r in (first, second, third)))
    finally:
        store.close()


def test_cancelling_a_budgeted_queue_while_its_runs_wait_gives_their_reservation_back(
        pg_schemas, priced_judge, monkeypatch):  # noqa: F811
    """No worker runs: both runs wait with their shares; the page's Cancel drops them and gives the shares back,
    what the capability probe's replies cost stays charged: spent = what the replies cost."""
    monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
    url = pg_schemas.new("budgetcancel")
    store = Store(url)
    try:
        q, est, d = _click(_workspace(store, priced_judge))
        _started(q)
        assert store.spent_usd("ann") == pytest.approx(est.cost_usd)
        q.cancel()
        q.job.wait(60)
        assert not q.busy() and q.outcome()[0] == "warning"
        assert [store.run_row(it.run_id)["status"] for it in q.items] == ["cancelled", "cancelled"]
        probe = _probe_cost(store, q)
        assert store.spent_usd("ann") == pytest.approx(probe) and probe < est.cost_usd
    finally:
        store.close()


def test_a_second_click_past_the_cap_is_refused_while_the_first_queue_waits_and_a_new_tab_reserves_nothing_again(
        pg_schemas, priced_judge, monkeypatch):  # noqa: F811
    """The first queue's runs wait with their shares (the click's estimate): a second click whose estimate and the
    waiting runs' pass the cap is refused. Under a higher cap a new tab's click is taken, but its queue finds both
    runs already queued: it follows them and its charge is given back (what it would have reserved again)."""
    url = pg_schemas.new("secondclick")
    store = Store(url)
    try:
        ws = _workspace(store, priced_judge)
        r = ws.estimate("dev", _cands()).cost_usd
        monkeypatch.setenv("EVALCORE_MAX_COST_USD", repr(1.5 * r))
        q, est, d = _click(ws)
        assert d.allowed
        _started(q)
        held = store.spent_usd("ann")
        _, _, second = _click(_workspace(store, priced_judge))
        assert not second.allowed and "pass the operator's cap" in second.reason
        assert store.spent_usd("ann") == pytest.approx(held)

        monkeypatch.setenv("EVALCORE_MAX_COST_USD", "100")
        tab, _, taken = _click(_workspace(store, priced_judge))
        assert taken.allowed
        _started(tab)  # its runs' jobs wait already: nothing recorded, queued or reserved again
        assert store.spent_usd("ann") == pytest.approx(held)
        with workers.opened(url) as app:
            assert len(app.job_manager.list_jobs(queue=workers.QUEUE, status="todo")) == 2
        _work_until_empty(url)
        _run_here(q)
        _run_here(tab)
        assert q.outcome() is None and tab.outcome() is None
        assert store.spent_usd("ann") == pytest.approx(
            _probe_cost(store, q) + sum(_replies_cost(store, it.run_id) for it in q.items))
    finally:
        store.close()
