"""Spending needs consent: what a run may cost before it starts, on a server whose key is the operator's.

A link can prefill a run of any size (every method, every dimension, every item), and a visitor's one click on
"Start scoring" would spend the operator's money. The rule (issue 21, item 12), decided here and shown by the Score
page: nothing starts by opening a link (a run starts only on the button); a run whose estimate is above
``$EVALCORE_CONFIRM_USD`` (default 1 USD), or whose cost is unknown for a paid provider, needs an explicit
confirmation that names its cost, requests and host; and ``$EVALCORE_MAX_COST_USD``, when set, caps what one
signed-in user may start in total, and what everyone not signed in may start together (the server's budget): the
spending is kept in the store (evalcore.store.spending), so a new browser session is no new budget. A run that
would pass the cap is refused, as is a paid run of unknown cost. Local servers (vLLM, Ollama, llama.cpp) have no
price: they need neither.

Everything the app sends on a paid endpoint goes through the same two calls, :func:`gate` (may it start, does it
need a confirmation) and :func:`charge` (at the click: checked again and recorded in one transaction): a Score run,
the Improve loop's runs and its "Propose", Criteria's "Generate evaluation steps".

An estimate is only an estimate: a judge nobody probed yet is estimated as the method asks (a one-token reply),
and a reasoning judge then spends thousands of tokens per reply. A Score run therefore carries a :class:`Meter`: the
estimate charged at the click is a reservation, the run's cost is counted from the usage each reply reports (at the
price table's rates), what passes the reservation is charged as it comes, and the run stops once the spender's total
reaches the cap (requests already in flight still finish: at most the concurrency's worth more). When the run ends
the record is settled to what its replies cost (an estimate above it is given back). The other paid paths use the
same meter: the Improve page's queue holds one for all its runs (:attr:`Meter.held`, settled when the queue ends),
a proposal or a step generation settles its one reply (:meth:`Meter.count_reply`), and a Batch API run is settled
at the Batch API's rates when its job collects it (:meth:`Meter.count_batch`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore import settings

if TYPE_CHECKING:
    from evalcore.judge.client import Endpoint, RequestStats
    from evalcore.store import Store
    from evalcore.types import Request

CONFIRM_ENV = "EVALCORE_CONFIRM_USD"
CAP_ENV = "EVALCORE_MAX_COST_USD"
DEFAULT_CONFIRM_USD = 1.0


@dataclass(frozen=True)
class SpendDecision:
    """Whether a run may start: ``allowed`` (within the cap), ``needs_confirmation`` (ask first), ``reason``."""

    allowed: bool
    needs_confirmation: bool
    reason: str


def confirm_threshold(environ: Mapping[str, str] | None = None) -> float:
    """``$EVALCORE_CONFIRM_USD`` (CONFIRM_ENV), read through evalcore.settings; DEFAULT_CONFIRM_USD when unset."""
    x = settings.current(environ).confirm_usd
    return DEFAULT_CONFIRM_USD if x is None else x


def spending_cap(environ: Mapping[str, str] | None = None) -> float | None:
    """``$EVALCORE_MAX_COST_USD`` (CAP_ENV), read through evalcore.settings; None when unset."""
    return settings.current(environ).max_cost_usd


def usd(x: float | None) -> str:
    return "unknown" if x is None else f"${x:,.2f}" if x >= 1 else f"${x:.4f}"


def decide(cost_usd: float | None, calls: int, *, local: bool, spent_usd: float = 0.0,
           confirm_over: float = DEFAULT_CONFIRM_USD, cap: float | None = None, per: str = "user") -> SpendDecision:
    """The decision for a run whose calls to send cost ``cost_usd`` (None: the model's price is unknown), given what
    was already started against the same cap (``spent_usd``; ``per``: whose budget, in words)."""
    if calls <= 0 or local:
        return SpendDecision(True, False, "nothing to pay: " + ("a local server" if local else "no call to send"))
    if cap is not None:
        if cost_usd is None:
            return SpendDecision(False, False, f"The operator capped spending at {usd(cap)} per {per}, and this "
                                               "model's price is unknown, so the cost cannot be checked.")
        if spent_usd + cost_usd > cap:
            return SpendDecision(False, False, f"This estimate ({usd(cost_usd)}) and the {usd(spent_usd)} "
                                               f"already started pass the operator's cap of {usd(cap)} per {per}.")
    if cost_usd is None:
        return SpendDecision(True, True, "this model's price is unknown")
    if cost_usd > confirm_over:
        return SpendDecision(True, True, f"the estimate is above {usd(confirm_over)}")
    return SpendDecision(True, False, f"the estimate is at most {usd(confirm_over)}")


def budget_name(spender: str | None) -> str:
    """Whose budget a cap counts, in words: a signed-in user's own, or the server's (everyone not signed in)."""
    return "user" if spender else "server for everyone not signed in"


def gate(cost_usd: float | None, calls: int, *, local: bool, spender: str | None, store: Store | None,
         environ: Mapping[str, str] | None = None) -> SpendDecision:
    """THE spending decision of the app, before anything is sent on a paid endpoint (a Score run, the Improve loop's
    runs and its proposal, Criteria's step generation): :func:`decide` with the operator's threshold and cap
    (``$EVALCORE_CONFIRM_USD``, ``$EVALCORE_MAX_COST_USD``) and what ``spender`` (a signed-in user's name; None:
    everyone not signed in, together) already started, as the store keeps it. With a cap and no store to count in,
    a paid call is refused: the cap could not hold."""
    cap = spending_cap(environ)
    spent = 0.0
    if cap is not None and calls > 0 and not local:
        if store is None:
            return SpendDecision(False, False, "The operator capped spending, and the local store that counts it "
                                               "cannot be used now: nothing is sent.")
        spent = store.spent_usd(spender)
    return decide(cost_usd, calls, local=local, spent_usd=spent, confirm_over=confirm_threshold(environ), cap=cap,
                  per=budget_name(spender))


def charge(cost_usd: float | None, calls: int, *, local: bool, spender: str | None, store: Store | None, what: str,
           environ: Mapping[str, str] | None = None) -> SpendDecision:
    """At the click that sends: the cap checked again and the estimate recorded against ``spender`` in one store
    transaction (two sessions of one user, or two visitors, cannot both pass the cap). Refused (``allowed``
    False, nothing recorded) when the cap would be passed, when the price is unknown under a cap, or when a cap
    cannot be counted (no store)."""
    d = gate(cost_usd, calls, local=local, spender=spender, store=store, environ=environ)
    if not d.allowed or calls <= 0 or local or store is None:
        return d
    cap = spending_cap(environ)
    if store.charge(spender, cost_usd or 0.0, calls=calls, what=what, cap=cap) is None:
        return SpendDecision(False, False, f"This estimate ({usd(cost_usd)}) and what was started meanwhile pass "
                                           f"the operator's cap of {usd(cap)} per {budget_name(spender)}.")
    return d


def requests_cost(requests: Iterable[Request], endpoint: Endpoint, store: Store | None) -> tuple[int, float | None]:
    """(calls to send, their cost in USD; None: the model's price is unknown) of one-off requests (a proposal, step
    generation), the cache's answers excluded, by the rule of ``runner.estimate``: prompt tokens = characters / 4,
    completion tokens = max_tokens (an upper bound)."""
    from evalcore.judge import cost as cost_mod
    from evalcore.judge.runner import CachedSender, request_tokens

    sender = CachedSender(None, store, endpoint) if store is not None else None
    keys = {sender.key(r) if sender is not None else str(i): r for i, r in enumerate(requests)}
    hits = store.cache_has(list(keys)) if store is not None else set()
    todo = [r for k, r in keys.items() if k not in hits]
    prompt = sum(request_tokens(r)[0] for r in todo)
    completion = sum(request_tokens(r)[1] for r in todo)
    return len(todo), cost_mod.cost_usd(prompt, completion, model=endpoint.model, provider=endpoint.provider)


class CapReached(RuntimeError):
    """A run stopped because its spender reached the operator's cap: what it answered is kept."""


# what passes the reservation is written to the store in steps of at least this much (not one row per reply); the
# cap is checked on every reply with what is not written yet counted in
METER_STEP_USD = 0.01


class Meter:
    """One run's cost counted from the usage its replies report, charged to ``spender``'s budget beyond the
    ``reserved`` estimate charged at the click (:func:`charge`). The engine calls :meth:`observe` with the run's
    token totals as replies arrive and stops the run while :attr:`reached` says why; :meth:`settle` records the
    difference between what the replies cost and what was charged when the run ends."""

    def __init__(self, store: Store, spender: str | None, *, model: str, provider: str, reserved: float, what: str,
                 cap: float | None, prices: dict[str, Any] | None = None, batch: bool = False) -> None:
        self.store, self.spender, self.what, self.cap = store, spender, what, cap
        self.model, self.provider, self.prices = model, provider, prices
        self.batch = batch  # replies of the Batch API: priced at its rates
        self.charged = max(float(reserved or 0.0), 0.0)  # what the store holds for this run so far
        self.reserved = self.charged  # the estimate charged at the click
        self.cost = 0.0  # what the replies cost so far, every session of the run
        self.earlier = 0.0  # what the sessions before this one cost (a run resumed with the same meter)
        self.reached: str | None = None
        self.settled = False
        # usage past the reservation is written in steps of this much (a worker's meter writes every reply's:
        # a worker killed mid-run leaves nothing it received uncounted)
        self.step = METER_STEP_USD
        # a reservation held for several runs (the Improve page's queue: one estimate charged for all its
        # candidates): a run's end gives back nothing, :meth:`release` settles once the last one ended
        self.held = False
        # what of the spender's total this run may use though it is recorded (the Improve queue's runs waiting
        # behind this one, queued to workers: their shares of the one estimate charged at the click; queued_meter)
        self.not_counted: Callable[[], float] | None = None

    @classmethod
    def for_run(cls, store: Store | None, spender: str | None, endpoint: Endpoint, *, reserved: float | None, what: str,
                environ: Mapping[str, str] | None = None, batch: bool = False) -> "Meter | None":
        """The meter of a run on ``endpoint``; None where there is nothing to count (a local server, a model whose
        price is unknown: without a cap such a run was confirmed as of unknown cost, under a cap it is refused)."""
        from evalcore.judge import cost as cost_mod

        if store is None or endpoint.provider in cost_mod.FREE_PROVIDERS:
            return None
        if cost_mod.price_for(endpoint.model, provider=endpoint.provider) is None:
            return None
        return cls(store, spender, model=endpoint.model, provider=endpoint.provider, reserved=reserved or 0.0,
                   what=what, cap=spending_cap(environ), batch=batch)

    def price(self, prompt_tokens: int, completion_tokens: int, cached_prompt_tokens: int = 0) -> float:
        from evalcore.judge.cost import cost_table

        usd = cost_table(prompt_tokens, completion_tokens, cached_prompt_tokens=cached_prompt_tokens,
                         model=self.model, provider=self.provider,
                         prices=self.prices)[-1]["batch_usd" if self.batch else "usd"]
        return float(usd or 0.0)

    def begin(self) -> None:
        """A session of the run starts (the first, or a resume: nothing is reserved for it, its usage is charged as
        it comes); it does not start past the cap."""
        self.earlier, self.settled, self.reached = self.cost, False, None
        # what this meter reserved and its replies did not spend yet is this run's own: it does not stop it
        spent = self._spent() - max(self.charged - self.cost, 0.0) if self.cap is not None else 0.0
        if self.cap is not None and spent >= self.cap - 1e-12:
            self._stop(spent)

    def observe(self, prompt_tokens: int, completion_tokens: int, cached_prompt_tokens: int = 0) -> None:
        """This session's token totals so far (every reply the endpoint gave, the capability probe's included)."""
        self.cost = self.earlier + self.price(prompt_tokens, completion_tokens, cached_prompt_tokens)
        pending = self.cost - self.charged
        if pending <= 0:
            return
        spent = self._spent() + pending if self.cap is not None else 0.0
        if pending >= self.step or (self.cap is not None and spent >= self.cap):
            self._record(pending, "usage past the estimate")
        if self.cap is not None and spent >= self.cap:
            self._stop(spent)

    def _spent(self) -> float:
        """The spender's total as the cap sees it for this run."""
        return float(self.store.spent_usd(self.spender)) - (self.not_counted() if self.not_counted else 0.0)

    def _stop(self, spent: float) -> None:
        if self.reached is None:
            self.reached = (f"the operator's spending cap of {usd(self.cap)} per {budget_name(self.spender)} was "
                            f"reached ({usd(spent)} spent, this run's replies {usd(self.cost)} of it)")

    def stop_error(self, run_id: str) -> CapReached:
        """What a run stopped by the cap raises (after recording its status and what it answered)."""
        return CapReached(f"run {run_id} stopped: {self.reached}. Its finished judgments are kept; the operator "
                          "can raise the cap ($" + CAP_ENV + ") and the run be resumed.")

    def settle(self) -> None:
        """At the end of the run: the record made equal to what the replies cost (once)."""
        if self.settled:
            return
        self.settled = True
        if self.held and self.cost <= self.charged:  # the rest of the reservation is the next runs'
            return
        if abs(self.cost - self.charged) > 1e-12:
            self._record(self.cost - self.charged, "settled to the replies' usage")

    def release(self) -> None:
        """The last run of a held reservation (:attr:`held`) ended: the record made equal to what the replies of
        all its runs cost."""
        self.held, self.settled = False, False
        self.settle()

    def count_batch(self, figures: Mapping[str, Any] | None) -> None:
        """A Batch API run collected: the record settled to what its replies cost at the Batch API's rates
        (``figures``: the run's batch figures, their token totals). The money was spent when the batch was
        submitted: the cap cannot stop it, it counts it."""
        f = figures or {}
        self.observe(int(f.get("prompt_tokens") or 0), int(f.get("completion_tokens") or 0),
                     int(f.get("cached_prompt_tokens") or 0))
        self.settle()

    def count_reply(self, stats: RequestStats) -> None:
        """A one-off request (a proposal, step generation) answered: its client's token totals (``RequestStats``)
        observed and the record settled to them (nothing is charged for a cached answer)."""
        self.begin()
        self.observe(int(stats.prompt_tokens or 0), int(stats.completion_tokens or 0))
        self.settle()

    def _record(self, amount: float, why: str) -> None:
        # recorded whatever the cap: the money is spent (the cap stops the run, it cannot undo a reply)
        self.store.charge(self.spender, amount, calls=0, what=f"{self.what} ({why})", cap=None)
        self.charged += amount


# ------------------------------------------------------------------------------------- a run scored by a worker
# A run queued on a PostgreSQL store (evalcore.workers) is scored by a worker process, which cannot hold the Meter the
# app made at the click: the meter travels through the store. Every spending row of such a run names it ("(run id)"
# in ``what``, as every row a run's Meter writes does), so the worker rebuilds it from the rows:
#   * the click's charge (spending.charge: the cap checked and the estimate recorded in one transaction) is the
#     reservation, made when the run is QUEUED, not when a worker takes it: a user's second click then counts the
#     first run still waiting, so two queued runs cannot pass the cap together (the second is refused at its
#     click, as in the app's thread), and nobody queues work that a worker would find over the cap hours later;
#   * :func:`hand_over` moves that reservation to a row naming the run when its job is queued; for a queue of
#     runs (the Improve page's, one click for all its candidates) :func:`hand_over_shares` splits it among them,
#     each run's rows naming the queue: a queue's run does not count the shares of the runs waiting behind it
#     (``Meter.not_counted``), so it may spend up to the cap as the page's one meter would, and they then stop;
#   * :meth:`Meter.for_queued_run` (the worker) rebuilds the meter: charged = the sum of the run's rows; a row
#     RESERVED marks a metered run (none: a run queued without a meter, nothing counted); a row SESSION per worker
#     session that began. When an earlier session began and never settled (its worker was killed), all it was
#     charged is taken as spent: what was reserved stays charged, and nothing is ever under-counted (the unspent
#     part of a killed session's reservation is the price of that). Requests in flight when a worker dies are the
#     one thing no record can hold: the reply never arrived.
RESERVED = "reserved at the click; scored by a worker"
BEFORE = "replies before it was queued: the capability probe"
SESSION = "a worker's session began"
GIVEN_BACK = "cancelled before a worker took it: the reservation given back"
QUEUE_TAG = "queue"  # "(run id) [queue Q]" in the rows of a queue's runs (hand_over_shares)
_QUEUE_RUN = re.compile(r"\(([^()]+)\) \[" + QUEUE_TAG + r" ([^\]]+)\]")


def run_rows(store: Store, spender: str | None, run_id: str) -> list[tuple[str, float]]:
    """(what, usd) of ``spender``'s spending rows that name run ``run_id``."""
    tag = f"({run_id})"
    rows = store.conn.execute("SELECT what, usd FROM spending WHERE spender = ?", (spender or "",)).fetchall()
    return [(str(w), float(u)) for w, u in rows if tag in str(w)]


def hand_over(meter: Meter, run_id: str) -> None:
    """The estimate charged at the click (held by the app's ``meter``, which recorded the run: its capability probe
    counted) made run ``run_id``'s own rows, for the worker that scores it (once: a resume hands over nothing):
    RESERVED what the probe left of the estimate, BEFORE what the probe's replies cost. The run's rows are written
    before the click's is balanced, so the spender's total never dips below what was started. Called once per
    run, after :func:`evalcore.workers.record_run` counted the probe with ``meter``."""
    reserved, before = meter.reserved, meter.cost
    meter.store.charge(meter.spender, reserved - before, calls=0, what=f"{meter.what} ({RESERVED})", cap=None)
    meter.store.charge(meter.spender, before, calls=0, what=f"{meter.what} ({BEFORE})", cap=None)
    meter.store.charge(meter.spender, -reserved, calls=0, cap=None,
                       what=f"the estimate charged at the click, moved to the record of run {run_id}")
    meter.settled = True  # the worker's meter counts the rest: nothing of this one is settled again


def hand_over_shares(meter: Meter, shares: Mapping[str, float], *, queue: str) -> None:
    """:func:`hand_over` for a queue of runs (the Improve page's, named ``queue``: one estimate charged at the
    click, held by ``meter`` for all of them, which counted their capability probes when they were recorded):
    RESERVED ``shares[run_id]`` made each run's own row, BEFORE what the probes' replies cost counted on the first
    run; what the click charged for runs left out of ``shares`` (done already, or holding a reservation of their
    own) is given back. Every row names the queue too (:func:`queued_meter` lets a run use what the runs behind it
    reserved, as the page's one meter does). The runs' rows are written before the click's charge is balanced, so
    the spender's total never dips below what was started. ``meter`` holds nothing afterwards: releasing it (the
    queue's end) records nothing. No share: nothing goes to a worker, ``meter`` is released (settled to the
    probes' replies)."""
    if not shares:
        meter.release()
        return
    for n, (run_id, share) in enumerate(shares.items()):
        base = f"{meter.what} ({run_id}) [{QUEUE_TAG} {queue}]"
        meter.store.charge(meter.spender, share, calls=0, what=f"{base} ({RESERVED})", cap=None)
        if n == 0:
            meter.store.charge(meter.spender, meter.cost, calls=0, what=f"{base} ({BEFORE})", cap=None)
    meter.store.charge(meter.spender, -meter.charged, calls=0, cap=None,
                       what=f"the estimate charged at the click, moved to the records of runs {', '.join(shares)}")
    meter.charged, meter.settled = meter.cost, True


def waiting_in_queue(store: Store, spender: str | None, queue: str, run_id: str) -> float:
    """What the runs of ``queue`` other than ``run_id`` hold reserved and no worker began yet (the runs waiting
    behind it: the queue's lock runs them one at a time, in order)."""
    tag = f"[{QUEUE_TAG} {queue}]"
    rows = store.conn.execute("SELECT what, usd FROM spending WHERE spender = ? AND what LIKE ?",
                              (spender or "", f"%{tag}%")).fetchall()
    runs: dict[str, list[tuple[str, float]]] = {}
    for w, u in rows:
        m = _QUEUE_RUN.search(str(w))
        if m is not None and m.group(1) != run_id:
            runs.setdefault(m.group(1), []).append((str(w), float(u)))
    return sum(max(sum(u for _, u in rr) - sum(u for w, u in rr if w.endswith(f" ({BEFORE})")), 0.0)
               for rr in runs.values() if not any(SESSION in w for w, _ in rr))


def holds_reservation(store: Store, spender: str | None, run_id: str) -> bool:
    """Whether run ``run_id`` holds a reservation already (one not given back), or a worker's session of it began
    (its meter then counts its replies as they come): a queue started again reserves nothing for it."""
    rows = run_rows(store, spender, run_id)
    held = sum(u for _, u in rows) - sum(u for w, u in rows if w.endswith(f" ({BEFORE})"))
    return any(SESSION in w for w, _ in rows) or held > 1e-12


def give_back_queued(store: Store, spender: str | None, run_id: str) -> None:
    """Run ``run_id`` was cancelled while it waited in the queue: no worker began it, its reservation is returned
    (what the capability probe's replies cost, BEFORE, stays charged: that money is spent)."""
    rows = run_rows(store, spender, run_id)
    held = sum(u for _, u in rows) - sum(u for w, u in rows if w.endswith(f" ({BEFORE})"))
    if rows and not any(SESSION in w for w, _ in rows) and abs(held) > 1e-12:
        base = next((w[: -len(f" ({RESERVED})")] for w, _ in rows if w.endswith(f" ({RESERVED})")), f"({run_id})")
        store.charge(spender, -held, calls=0, what=f"{base} ({GIVEN_BACK})", cap=None)


def queued_meter(store: Store, run_id: str, endpoint: Endpoint, *,
                 environ: Mapping[str, str] | None = None) -> Meter | None:
    """The worker's meter of run ``run_id``, rebuilt from the store's spending rows (see above); None for a run
    queued without one. Records that a session began; the cap is the worker's ``$EVALCORE_MAX_COST_USD`` (the
    operator runs workers with the app's settings)."""
    spender = store.run_row(run_id).get("owner") or None
    rows = run_rows(store, spender, run_id)
    base = next((w[: -len(f" ({RESERVED})")] for w, _ in rows if w.endswith(f" ({RESERVED})")), None)
    if base is None:
        return None
    meter = Meter.for_run(store, spender, endpoint, reserved=sum(u for _, u in rows), what=base, environ=environ)
    if meter is None:
        return None
    if (queued := _QUEUE_RUN.search(base)) is not None:  # a queue's run: the shares behind it are its to use
        queue = queued.group(2)
        meter.not_counted = lambda: waiting_in_queue(store, spender, queue, run_id)
    if any(SESSION in w for w, _ in rows):  # an earlier session: all it was charged counts as spent
        meter.cost = meter.charged
    else:
        meter.cost = sum(u for w, u in rows if w.endswith(f" ({BEFORE})"))
    meter.step = 0.0
    store.charge(spender, 0.0, calls=0, what=f"{base} ({SESSION})", cap=None)
    return meter


def cap_stop(store: Store, spender: str | None, run_id: str, *,
             environ: Mapping[str, str] | None = None) -> str | None:
    """Why run ``run_id``, stopped, was stopped for money: the operator's cap reached by ``spender`` (None: not)."""
    cap = spending_cap(environ)
    if cap is None:
        return None
    spent = store.spent_usd(spender)
    if spent < cap - 1e-12:
        return None
    return (f"run {run_id} stopped: the operator's spending cap of {usd(cap)} per {budget_name(spender)} was reached "
            f"({usd(spent)} spent). Its finished judgments are kept; the operator can raise the cap ($"
            f"{CAP_ENV}) and the run be resumed.")
