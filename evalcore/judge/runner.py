"""The engine: a method applied to a dataset through the cache and the judge client.

``score_dataset(spec, options)`` (what to score, how to reach the judge: the two values of ``evalcore.judge.spec``)
builds the tasks (``ItemTask`` per item and dimension; for pairwise methods a ``PairTask`` per pair of items of the
same document, in BOTH orders), probes the endpoint, lets the method ``plan`` its config for
what the endpoint supports, and sends every request through the SQLite cache and the client with bounded
concurrency. Each judgment is written (with the cache entries of its responses, in one transaction) the moment it
completes, so a run that is cancelled or killed resumes, under the same ``run_id``, without repeating any request
that was answered: those come back from the cache.

Judgments are keyed by the criteria's version hash: editing one dimension's steps and re-running the same run_id
re-judges only that dimension (the other dimensions' judgments are still current and are skipped).

Every item ends "ok" or "failed" with a reason: the HTTP error after retries, a refusal, an unparseable or
truncated reply (the method's parse failure, annotated by the engine), or a method error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
import logging
import math
import random
import re
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar, cast

from evalcore.judge import cost as cost_mod
from evalcore.judge.client import (
    Endpoint,
    EndpointUnusable,
    JudgeClient,
    RequestFailed,
    RequestStats,
    hostile_numbers,
    response_from_dict,
    response_to_dict,
)
from evalcore.judge.contract import (
    CAPABILITY,
    NO_SUBSTITUTE,
    Contract,
    RequestOptions,
    Rule,
    pause_message,
    read_refusal,
    reasoning_room,
    variant_notes,
)
from evalcore.judge.draws import aggregate_outcome, draw_request, item_draws
from evalcore.judge.probes import ProbeSender
from evalcore.judge.redact import redact
from evalcore.judge.routing import make_client
from evalcore.judge.schedule import order_tasks, prompt_text, repeated_prefix_tokens
from evalcore.store import Store, canonical_json, default_store, request_key
from evalcore.types import (
    Capabilities,
    ChatRequest,
    CompletionRequest,
    Criteria,
    ItemTask,
    Outcome,
    PairTask,
    Request,
    Response,
    UnsupportedByEndpoint,
)
from evalcore.model import STATUS_FAILED, STATUS_OK, Dataset, Run

if TYPE_CHECKING:  # the engine reads the two values; evalcore.judge.spec builds them (and imports the engine lazily)
    import pandas as pd

    from evalcore.methods.base import Method, PromptLabels
    from evalcore.spec import EngineOptions, ScoringSpec

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4  # rough token count for estimates: len(text) / 4 (OpenAI's rule of thumb for English)

T = TypeVar("T")
Task = ItemTask | PairTask


RowPair = tuple["TextRow", "TextRow"]  # two item rows of one document


class TextRow(Protocol):
    """One row of ``Dataset.texts()`` as ``itertuples`` gives it: an item with its document's texts."""

    @property
    def item_id(self) -> object: ...

    @property
    def doc_id(self) -> object: ...

    @property
    def system_id(self) -> object: ...

    @property
    def output(self) -> object: ...

    @property
    def source(self) -> object: ...


class Transport(Protocol):
    """What the engine sends its requests through: a ``JudgeClient``, an ``EndpointPool`` (evalcore.judge.routing)
    or a finished batch's results (evalcore.judge.batch)."""

    @property
    def stats(self) -> RequestStats: ...

    async def send(self, request: Request) -> Response: ...

    async def aclose(self) -> None: ...


class ProbingTransport(Transport, Protocol):
    """A transport that can also probe its endpoint's capabilities (a client or a pool; not a batch's results)."""

    @property
    def endpoint(self) -> Endpoint: ...

    async def probe(self, send: Callable[[Request], Awaitable[Response]] | None = None) -> Capabilities: ...


class SpendingMeter(Protocol):
    """What the engine asks of a run's spending meter (``evalcore.judge.spending.Meter``, which imports this
    module): told the run's token totals, it says when the operator's cap is reached."""

    reached: str | None

    def begin(self) -> None: ...

    def observe(self, prompt_tokens: int, completion_tokens: int, cached_prompt_tokens: int = 0) -> None: ...

    def settle(self) -> None: ...

    def stop_error(self, run_id: str) -> Exception: ...

    def count_reply(self, stats: RequestStats) -> None: ...


@dataclass
class Progress:
    total: int
    done: int
    cached: int
    failed: int
    retrying: int
    eta_s: float | None
    elapsed_s: float = 0.0


@dataclass
class Estimate:
    calls: int  # requests that would go to the network (cache hits excluded)
    cached: int  # requests already in the cache
    prompt_tokens: int  # for the uncached calls: characters / 4
    completion_tokens: int  # upper bound for the uncached calls: max_tokens x samples
    cost_usd: float | None  # None when the model's price is unknown
    tasks: int = 0  # items (or ordered pairs) x dimensions
    note: str = ""
    # prompt tokens expected to be served from the provider's prompt cache (a prefix repeated from a recent request
    # in the scheduled order; OpenAI's rule: prompts of >= 1,024 tokens, in 128-token steps); part of prompt_tokens
    cached_prompt_tokens: int = 0
    cost_usd_batch: float | None = None  # the same work through the Batch API
    cost_rows: list = dataclasses.field(default_factory=list)  # evalcore.judge.cost.cost_table rows
    requests: int = 0  # every request the run builds (calls + cached)
    duplicates: int = 0  # requests identical to an earlier one of the same run: sent once, the rest read back
    cache_hits: int = 0  # distinct requests whose reply an earlier run left in the cache (cached = duplicates + these)


@dataclass(frozen=True)
class PairSelection:
    """Which pairs of items of the same document a pairwise method judges, and in which presentation orders.

    mode "all": every pair of items per document; "systems": the pairs whose systems are a given (system_a,
    system_b); "sample": ``k`` pairs drawn at random (``seed``) from all same-document pairs of the dataset.
    ``annotated``: judge only the pairs humans voted on (the dataset's ``preferences`` on that dimension), so no
    pair the humans did not judge is sent; None (default) = yes when the dataset has votes on the dimension.
    ``orders``: "ab" (item a shown first) and/or "ba"; both by default (position bias needs both)."""

    mode: str = "all"
    systems: tuple[tuple[str, str], ...] = ()
    k: int = 0
    seed: int = 0
    annotated: bool | None = None
    orders: tuple[str, ...] = ("ab", "ba")

    def __post_init__(self) -> None:
        bad = [o for o in self.orders if o not in ("ab", "ba")]
        if bad or not self.orders:
            raise ValueError(f"orders must be 'ab' and/or 'ba', got {list(self.orders)}")

    @classmethod
    def from_arg(cls, pairs: PairsArg) -> "PairSelection":
        if pairs is None or pairs == "all":
            return cls()
        if pairs == "annotated":
            return cls(annotated=True)
        if isinstance(pairs, PairSelection):
            return pairs
        if isinstance(pairs, dict):
            extra = {k: pairs[k] for k in ("annotated",) if k in pairs}
            if "orders" in pairs:
                extra["orders"] = tuple(pairs["orders"])
            if "sample" in pairs:
                sel = cls(mode="sample", k=int(pairs["sample"]), seed=int(pairs.get("seed", 0)))
            elif "systems" in pairs:
                sel = cls(mode="systems", systems=tuple((str(a), str(b)) for a, b in pairs["systems"]))
            else:
                sel = cls()
            return dataclasses.replace(sel, **extra)
        if isinstance(pairs, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
            return cls(mode="systems", systems=tuple((str(a), str(b)) for a, b in pairs))
        raise ValueError(f"pairs must be 'all', 'annotated', a list of (system_a, system_b), or {{'sample': k, "
                         f"'seed': s}} (optionally with 'orders' and 'annotated'); got {pairs!r}")

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "systems": [list(p) for p in self.systems], "k": self.k, "seed": self.seed,
                "annotated": self.annotated, "orders": list(self.orders)}


# what a spec's ``pairs`` may be (``PairSelection.from_arg``): None or "all", "annotated", a selection, a mapping
# read from JSON ({"sample": k, "seed": s, "orders": [...], "annotated": bool} or {"systems": [[a, b], ...]}), or
# the (system_a, system_b) pairs
PairsArg = PairSelection | str | Mapping[str, Any] | Sequence[Sequence[str]] | None


# ---------------------------------------------------------------------------------------------------- tasks
def method_of(method: str | Method) -> Method:
    """The Method object for a name (or the object itself)."""
    if isinstance(method, str):
        from evalcore.methods import get_method

        return get_method(method)
    return method


def method_config_of(m: Method, config: PromptLabels | dict[str, Any] | None) -> PromptLabels:
    """The method's config from None (its default), a dict (a stored run's, through its loader) or a config."""
    if config is None:
        return m.default_config()
    if isinstance(config, dict):
        loader = getattr(m, "load_config", None)
        if loader is None:
            return dataclasses.replace(m.default_config(), **config)
        return loader(config)
    return config


def _config_dict(config: PromptLabels | Mapping[str, Any]) -> dict[str, Any]:
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return asdict(config)
    return dict(cast("Mapping[str, Any]", config))  # a config given as its dict


def _text(x: object) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return str(x)


def _refs(x: str | Iterable[object] | None) -> tuple[str, ...]:  # or NaN: a missing cell
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ()
    if isinstance(x, str):
        return (x,) if x else ()
    return tuple(str(r) for r in list(x))


def item_tasks(dataset: Dataset, dimension: str, *, limit: int | None = None, rows: pd.DataFrame | None = None
               ) -> list[ItemTask]:
    """One task per item (the first ``limit``), or per row of ``rows`` (a slice of ``dataset.texts()``)."""
    texts = dataset.texts() if rows is None else rows
    if limit is not None:
        texts = texts.head(limit)
    return [ItemTask(item_id=str(r.item_id), doc_id=str(r.doc_id), system_id=str(r.system_id), dimension=dimension,
                     source=_text(getattr(r, "source", "")), output=_text(r.output),
                     references=_refs(getattr(r, "references", None)), context=_text(getattr(r, "context", "")))
            for r in texts.itertuples(index=False)]


def item_pairs(dataset: Dataset, selection: PairSelection, *, limit: int | None = None) -> list[RowPair]:
    """Unordered pairs of item rows of the same document, in a stable order (document, then system order)."""
    texts = dataset.texts()
    order = {s: i for i, s in enumerate(dataset.systems)}
    pairs: list[RowPair] = []
    wanted = None
    if selection.mode == "systems":
        wanted = {frozenset(p) for p in selection.systems}
        known = set(order)
        missing = sorted({s for p in selection.systems for s in p} - known)
        if missing:
            raise ValueError(f"dataset {dataset.id!r} has no system(s) {missing}; it has {sorted(known)}")
    for _, group in texts.groupby("doc_id", sort=False):
        rows = sorted(group.itertuples(index=False), key=lambda r: (order.get(r.system_id, 0), str(r.item_id)))
        for i in range(len(rows)):
            for j in range(i + 1, len(rows)):
                a, b = rows[i], rows[j]
                if wanted is not None and frozenset((a.system_id, b.system_id)) not in wanted:
                    continue
                pairs.append((a, b))
    if selection.mode == "sample":
        rng = random.Random(selection.seed)
        idx = sorted(rng.sample(range(len(pairs)), min(selection.k, len(pairs))))
        pairs = [pairs[i] for i in idx]
    if limit is not None:
        pairs = pairs[:limit]
    return pairs


def annotated_pairs(dataset: Dataset, dimension: str, selection: PairSelection, *, limit: int | None = None
                    ) -> list[RowPair]:
    """The pairs humans voted on for ``dimension`` (item_a, item_b as in the preferences), in the votes' order,
    narrowed by the selection's systems / sample and ``limit`` like :func:`item_pairs`."""
    p = dataset.preferences
    p = p[p["dimension"] == dimension].drop_duplicates("pair_id")
    rows = {str(r.item_id): r for r in dataset.texts().itertuples(index=False)}
    pairs = [(rows[a], rows[b]) for a, b in zip(p["item_a"].astype(str), p["item_b"].astype(str))
             if a in rows and b in rows]
    if selection.mode == "systems":
        wanted = {frozenset(x) for x in selection.systems}
        pairs = [(a, b) for a, b in pairs if frozenset((a.system_id, b.system_id)) in wanted]
    if selection.mode == "sample":
        rng = random.Random(selection.seed)
        idx = sorted(rng.sample(range(len(pairs)), min(selection.k, len(pairs))))
        pairs = [pairs[i] for i in idx]
    return pairs[:limit] if limit is not None else pairs


def _use_annotated(dataset: Dataset, dimension: str, selection: PairSelection) -> bool:
    has_votes = not dataset.preferences.empty and (dataset.preferences["dimension"] == dimension).any()
    if selection.annotated and not has_votes:
        raise ValueError(f"dataset {dataset.id!r} has no pairwise votes on {dimension!r} to judge")
    return has_votes if selection.annotated is None else bool(selection.annotated)


def pair_tasks(dataset: Dataset, dimension: str, selection: PairSelection, *, limit: int | None = None
               ) -> list[PairTask]:
    """The selected pairs in the selected presentation orders ("ab": a first, "ba": b first; both by default: 003
    H2H judges each pair twice with the order swapped, and position bias can only be measured that way). On a
    dataset with human votes on ``dimension``, only the voted pairs (unless ``selection.annotated`` is False)."""
    out = []
    for a, b in _chosen_pairs(dataset, dimension, selection, limit=limit):
        out += [_pair_task(a, b, order, dimension) for order in ("ab", "ba") if order in selection.orders]
    return out


def _chosen_pairs(dataset: Dataset, dimension: str, selection: PairSelection, *, limit: int | None = None
                  ) -> list[RowPair]:
    if _use_annotated(dataset, dimension, selection):
        return annotated_pairs(dataset, dimension, selection, limit=limit)
    return item_pairs(dataset, selection, limit=limit)


def _pair_task(a: TextRow, b: TextRow, order: str, dimension: str) -> PairTask:
    """The pair (a, b) of item rows shown in ``order`` ("ab": a first, "ba": b first)."""
    first, second = (a, b) if order == "ab" else (b, a)
    return PairTask(item_first=str(first.item_id), item_second=str(second.item_id),
                    output_first=_text(first.output), output_second=_text(second.output), order=order,
                    pair_id=f"{a.item_id}|{b.item_id}", doc_id=str(a.doc_id), dimension=dimension,
                    source=_text(a.source), references=_refs(getattr(a, "references", None)),
                    context=_text(getattr(a, "context", "")))


def count_requests(spec: ScoringSpec, planned: PromptLabels | None = None, *, reuse: bool = True) -> int:
    """How many requests a run of ``spec`` would send (duplicates and cache hits included: ``Estimate.requests``),
    counted without building them all (issue 21, item 2: a link to the largest plan, h2h on every pair and
    dimension of SummEval, is 96,000 requests). Per dimension and document: its number of tasks (items, or selected
    pairs x orders) times the requests ONE of its tasks needs. A method's request count per task depends on its
    config and the document (GPTScore ref->hypo sends one per reference), never on the output rated; the tests
    compare this count with the built plan for every method. ``planned``: the config as planned against the
    endpoint (default: as requested). Counted once per plan (:class:`PlanInputs`; ``reuse=False``: counted again):
    the Score page counts again whenever the model's name changes, and the count does not depend on the model."""
    m, dims, crit, requested = resolve(spec.method, spec.dimensions, spec.criteria, spec.config)
    inputs = PlanInputs.of(spec, m, dims, crit, requested if planned is None else planned, keyed=reuse)
    return _counted_once(inputs) if inputs.key is not None else _request_count(inputs)


@functools.lru_cache(maxsize=16)
def _counted_once(inputs: PlanInputs) -> int:
    return _request_count(inputs)


def _request_count(inputs: PlanInputs) -> int:
    m, total = inputs.method, 0
    for dim in inputs.dimensions:
        for n_tasks, task in _tasks_per_document(inputs.dataset, m, dim, inputs.limit, inputs.pairs):
            total += n_tasks * len(m.build_requests(task, inputs.criteria[dim], inputs.planned))
    return total * inputs.draws  # every draw sends the item's requests again


def _tasks_per_document(dataset: Dataset, m: Method, dimension: str, limit: int | None, pairs: PairsArg
                        ) -> Iterable[tuple[int, ItemTask | PairTask]]:
    """(number of tasks, the first task) for each document, as ``build_tasks`` would make them on ``dimension``."""
    if not m.pairwise:
        texts = dataset.texts()
        texts = texts.head(limit) if limit is not None else texts
        for _, group in texts.groupby("doc_id", sort=False):
            yield len(group), item_tasks(dataset, dimension, rows=group.head(1))[0]
        return
    selection = PairSelection.from_arg(pairs)
    orders = [o for o in ("ab", "ba") if o in selection.orders]
    by_doc: dict[str, list[RowPair]] = {}
    for a, b in _chosen_pairs(dataset, dimension, selection, limit=limit):
        by_doc.setdefault(str(a.doc_id), []).append((a, b))
    for chosen in by_doc.values():
        if orders:
            yield len(chosen) * len(orders), _pair_task(*chosen[0], orders[0], dimension)


def build_tasks(dataset: Dataset, method: str | Method, dimensions: Iterable[str], *, limit: int | None = None,
                pairs: PairsArg = None) -> list[ItemTask | PairTask]:
    m = method_of(method)
    tasks: list[ItemTask | PairTask] = []
    for dim in dimensions:
        if m.pairwise:
            tasks += pair_tasks(dataset, dim, PairSelection.from_arg(pairs), limit=limit)
        else:
            tasks += item_tasks(dataset, dim, limit=limit)
    return tasks


def _task_key(task: ItemTask | PairTask, criteria_hash: str) -> tuple:
    if isinstance(task, PairTask):
        return (task.pair_id, task.order, task.dimension, criteria_hash)
    return (task.item_id, task.dimension, criteria_hash)


# ---------------------------------------------------------------------------------------------------- the cached sender
class CachedSender:
    """Cache lookup, then the client. New responses are handed back for the caller to store with its judgment.

    Every request is first shaped by the spec's reasoning options and the endpoint's learned contract
    (``evalcore.judge.contract``), and keyed as shaped: the key names the variant actually sent. A refusal naming
    a parameter teaches the contract (stored with the probe cache) and the request is sent again as the contract
    now shapes it. Until one request has gone through, requests go one at a time, so a refused parameter costs one
    refusal, not one per request in flight.

    Replicas (``replicas``: the endpoints after the first of an ``EndpointPool``): every reply and every refusal is
    stored under the endpoint that gave it (``source``), never under the first one's identity, and the cache and
    the contract are read from every member's. A user who adds his own server as a replica of the operator's
    endpoint therefore writes nothing a run on the operator's endpoint alone reads (its replies, its refusals, its
    probe's answers stay his server's)."""

    MAX_LEARNING = 4  # refusals one request may teach before it fails (max_tokens, temperature, top_p, one more)

    def __init__(self, client: Transport | None, store: Store, endpoint: Endpoint, *,
                 options: RequestOptions | None = None, replicas: Iterable[Endpoint] = ()) -> None:
        self.client = client
        self.store = store
        self.endpoint = endpoint
        self.identity = endpoint.identity()
        # each member's identity by the base URL a reply names (``Response.answered_by``); the first's first
        self.members: dict[str, dict[str, Any]] = {}
        self.identities: list[dict[str, Any]] = []
        for e in [endpoint, *replicas]:
            self.members.setdefault(e.base_url, e.identity())
            if e.identity() not in self.identities:
                self.identities.append(e.identity())
        self.options = options or RequestOptions()
        self.contract = Contract.from_rows([r for i in self.identities for r in store.contract_rules(i)])
        self.refusals = 0  # refusals met (each one taught the contract something)
        self.paused: str | None = None  # a refusal with no documented substitute: why the run pauses
        self._inflight: dict[str, asyncio.Future] = {}
        self._settled = False
        # a seeded request (a later draw, a method's spread samples) goes one at a time too until one seeded request
        # has gone through: a judge that refuses seeds refuses it once, not once per draw in flight
        self._seed_settled = False
        self._gate: asyncio.Lock | None = None

    def shaped(self, request: Request, *, probe: bool = False) -> Request:
        """The request as it is sent: the spec's reasoning options, then the endpoint's contract."""
        return self.contract.adapt(self.options.apply(request, probe=probe))

    def key(self, request: Request, *, probe: bool = False, identity: dict[str, Any] | None = None) -> str:
        """The request's cache key under ``identity`` (default: the first endpoint's)."""
        return request_key(identity or self.identity, self.shaped(request, probe=probe).params())

    def source(self, answer: Response | BaseException) -> dict[str, Any] | None:
        """The identity of the endpoint that gave ``answer`` (a reply or a ``RequestFailed``): where it is stored.
        A replica's own, never the first endpoint's; None for a replica set's failure that no member gave (a rule
        known before, all members drained): nothing to store."""
        url = getattr(answer, "answered_by", None)
        if url:
            return self.members.get(url) or dataclasses.replace(self.endpoint, base_url=url).identity()
        return None if len(self.identities) > 1 else self.identity

    def lookup(self, request: Request, *, probe: bool = False) -> Response | None:
        """A cached reply of any member (the first endpoint's first), or None."""
        for identity in self.identities:
            hit = self.store.cache_get(self.key(request, probe=probe, identity=identity))
            if hit is not None:
                return response_from_dict(hit["response"], latency_s=hit["latency_s"] or 0.0, cached=True)
        return None

    def hits(self, by_key: dict[str, Request]) -> set[str]:
        """The keys of ``by_key`` (``key``'s, under the first endpoint) whose request some member's cached reply
        answers."""
        found = self.store.cache_has(list(by_key))
        for identity in self.identities[1:]:
            other = {self.key(r, identity=identity): k for k, r in by_key.items() if k not in found}
            found |= {other[k] for k in self.store.cache_has(list(other))}
        return found

    def probe_failure(self, request: Request) -> str | None:
        """Why some member rejected this probe request before (``evalcore.judge.probes``), or None."""
        for identity in self.identities:
            reason = self.store.probe_failure(self.key(request, probe=True, identity=identity))
            if reason is not None:
                return reason
        return None

    def forget_contract(self) -> None:
        """Forget what every member was found to refuse (a re-probe)."""
        for identity in self.identities:
            self.store.forget_contract(identity)
        self.contract = Contract()

    async def fetch(self, request: Request, *, probe: bool = False) -> tuple[Response, dict[str, Any] | None]:
        """(response, cache entry to write or None when it came from the cache)."""
        key = self.key(request, probe=probe)
        hit = self.lookup(request, probe=probe)
        if hit is not None:
            return hit, None
        if self.client is None:
            raise RequestFailed("not in the cache and no client to ask")
        pending = self._inflight.get(key)
        if pending is not None:
            # the same request is already on its way (two systems wrote the same text): share its reply
            resp = await asyncio.shield(pending)
            return dataclasses.replace(resp, cached=True), None
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            resp, sent = await self._send(request, probe=probe)
        except BaseException as e:
            if not fut.done():
                fut.set_exception(e if isinstance(e, RequestFailed) else RequestFailed(f"{type(e).__name__}"))
                fut.exception()  # mark retrieved: nobody may be waiting
            raise
        finally:
            self._inflight.pop(key, None)
        fut.set_result(resp)
        return resp, self._entry(resp, sent)

    def _entry(self, resp: Response, sent: Request) -> dict[str, Any]:
        """The cache entry of a reply: under the endpoint that gave it."""
        identity = self.source(resp)
        if identity is None:
            raise RequestFailed("a replica's reply that names no endpoint: not stored")
        return {"key": request_key(identity, sent.params()), "endpoint": identity, "request": sent.params(),
                "response": response_to_dict(resp), "latency_s": resp.latency_s}

    async def _send(self, request: Request, *, probe: bool = False) -> tuple[Response, Request]:
        """Send the shaped request; learn from a refusal naming a parameter and send it again, reshaped.
        Returns the response and the request as finally sent (its key is the cache entry's)."""
        client = self.client
        if client is None:
            raise RequestFailed("no client to ask")
        for _ in range(self.MAX_LEARNING + 1):
            sent = self.shaped(request, probe=probe)
            known = self.contract.refuses(sent)
            if known is not None:  # refused before: not asked again (its rule is the method's fallback)
                raise RequestFailed(f"HTTP 400 (refused before, not asked again): {known.message}")
            try:
                if self._settled and (getattr(sent, "seed", None) is None or self._seed_settled):
                    resp = await client.send(sent)
                else:
                    if self._gate is None:
                        self._gate = asyncio.Lock()
                    async with self._gate:
                        sent = self.shaped(request, probe=probe)  # what the request before this one taught
                        resp = await client.send(sent)
                room = reasoning_room(resp, sent, self.options)
                if room is not None:  # the judge reasons: this and every later request get room for it
                    if self.contract.rules.get("reasoning") != room:
                        self._learn(room, probe=probe, source=self.source(resp))
                    if self.shaped(request, probe=probe) != sent:
                        continue
                self._settled = True
                self._seed_settled = self._seed_settled or getattr(sent, "seed", None) is not None
                return resp, sent
            except RequestFailed as e:
                rule = read_refusal(e.refusal)
                if rule is None:
                    self._settled = True  # not a contract question: nothing to learn by going one at a time
                    raise
                self.refusals += 1
                self._learn(rule, probe=probe, source=self.source(e))
                if rule.action in (CAPABILITY, NO_SUBSTITUTE) or self.shaped(request, probe=probe) == sent:
                    raise
        raise RequestFailed(f"the endpoint kept refusing the request after {self.MAX_LEARNING} adaptations")

    def _learn(self, rule: Rule, *, probe: bool, source: dict[str, Any] | None) -> None:
        """Shape this run's requests by ``rule`` from now on, and remember it for the endpoint that taught it
        (``source``; a replica's rule is its own, never the first endpoint's)."""
        if rule.action == NO_SUBSTITUTE:
            if not probe:  # a probe request that is refused only lacks that capability
                self.paused = self.paused or pause_message(rule, self.endpoint.model, self.endpoint.base_url)
            return
        if self.contract.learn(rule) and source is not None:
            self.store.remember_contract_rule(request_key(source, {"kind": "contract", "param": rule.param}),
                                              endpoint=source, rule=rule.as_dict())

    async def refresh(self, request: Request, *, probe: bool = False) -> Response:
        """Ask the endpoint even if the cache has an answer, and replace the cached one (a fresh capability probe)."""
        if self.client is None:
            raise RequestFailed("no client to ask")
        resp, sent = await self._send(request, probe=probe)
        e = self._entry(resp, sent)
        self.store.cache_put(e["key"], endpoint=e["endpoint"], request=e["request"], response=e["response"],
                             latency_s=e["latency_s"])
        return resp

    async def send_and_cache(self, request: Request, *, probe: bool = False) -> Response:
        resp, entry = await self.fetch(request, probe=probe)
        if entry is not None:
            self.store.cache_put(entry["key"], endpoint=entry["endpoint"], request=entry["request"],
                                 response=entry["response"], latency_s=entry["latency_s"])
        return resp


# ---------------------------------------------------------------------------------------------------- outcome checks
_REFUSAL_RE = re.compile(r"\b(I'?m sorry|I cannot|I can'?t|I am unable to|I'm unable to|as an AI)\b", re.IGNORECASE)


def explain_failure(outcome: Outcome, responses: list[Response]) -> Outcome:
    """Make a failed outcome's reason say what the engine saw: a refusal or a truncated reply."""
    if outcome.status == STATUS_OK:
        return outcome
    choices = [c for r in responses for c in r.choices]
    if not choices:
        return outcome
    refused = [c for c in choices if c.finish_reason == "refusal"]
    truncated = [c for c in choices if c.finish_reason == "length"]
    reason = outcome.reason or "no value"
    if refused and len(refused) == len(choices):
        reason = f"judge refused: {refused[0].text[:160]!r}"
    elif refused:
        reason += f" (refusals: {len(refused)} of {len(choices)} replies)"  # never "1 ... were refusals"
    elif truncated and len(truncated) == len(choices):
        reason = f"reply truncated (finish_reason=length; raise max_tokens?): {reason}"
    elif truncated:
        reason += f" ({len(truncated)} of {len(choices)} replies truncated)"
    elif len(choices) == 1 and _REFUSAL_RE.search(choices[0].text or ""):
        reason = f"reply looks like a refusal: {reason}"
    return dataclasses.replace(outcome, reason=reason)


def score_replies(m: Method, task: ItemTask | PairTask, criteria: Criteria, config: PromptLabels, responses: list[Response], *,
                  parse_mode: str = "robust", chat: list[bool] | None = None) -> Outcome:
    """The method's outcome from the replies' answers: the judge's reasoning is taken out first (a ``<think>`` block,
    the server's reasoning field; ``methods.base.separate_reasoning``), so no score is ever read from it; it is kept
    in the judgment's ``detail`` ("reasoning"). A reply whose reasoning never closed, or whose budget the reasoning
    spent, has no answer: when no reply has one, that is the failure's reason."""
    from evalcore.methods.base import separate_reasoning

    hostile = next((h for h in map(hostile_numbers, responses) if h), None)
    if hostile:  # a cached or batch reply (an online one failed as its request): a counted failure, not a value
        return Outcome(value=None, status=STATUS_FAILED, reason=hostile, estimator=getattr(config, "estimator", ""),
                       raw="\n".join(c.text or "" for r in responses for c in r.choices))
    sep = separate_reasoning(responses, chat)
    record = sep.record()
    if sep.failure:
        return Outcome(value=None, status=STATUS_FAILED, reason=sep.failure, estimator=getattr(config, "estimator", ""),
                       raw=sep.raw, detail=record)
    outcome = explain_failure(m.score(task, criteria, config, sep.responses, parse_mode=parse_mode), sep.responses)
    if record:  # the reply as written, reasoning first: what every view of the judge's reply shows
        outcome = dataclasses.replace(outcome, detail={**(outcome.detail or {}), **record}, raw=sep.raw)
    return outcome


def request_options(spec: ScoringSpec) -> RequestOptions:
    """The spec's reasoning options (``reasoning_effort``, ``max_completion_tokens``; absent on older specs)."""
    return RequestOptions(reasoning_effort=getattr(spec, "reasoning_effort", None),
                          max_completion_tokens=getattr(spec, "max_completion_tokens", None))


# ---------------------------------------------------------------------------------------------------- planning
async def _plan(m: Method, config: PromptLabels, sender: CachedSender, capabilities: Capabilities | None,
                client: Transport | None, reprobe: bool = False) -> tuple[PromptLabels, str, Capabilities]:
    caps = capabilities
    if caps is None:
        if client is None:
            raise ValueError("no capabilities given and no client to probe with")
        # The probe's replies are cached like any request (a repeated run costs nothing); ``reprobe`` asks again,
        # for a server whose settings changed behind the same URL and model.
        # A rejected probe request (no echo, no completions route) is remembered too (evalcore.judge.probes).
        if reprobe:  # the server's settings may have changed: what it refused is asked again too
            sender.forget_contract()
        # a client that must probe is the run's own (a JudgeClient or an EndpointPool, both probe): a batch's
        # results, which cannot, always come with the capabilities the batch was planned for
        caps = await probe_or_explain(cast(ProbingTransport, client), ProbeSender(sender, refresh=reprobe))
    caps = sender.contract.restrict(caps)  # what the endpoint refused outright (evalcore.judge.contract)
    planned, note = m.plan(config, caps)  # raises UnsupportedByEndpoint when there is no fallback
    return planned, note, caps


async def probe_or_explain(client: ProbingTransport, send: Callable[[Request], Awaitable[Response]]) -> Capabilities:
    """The capability probe, or ``EndpointUnusable`` (one line, no traceback) when the endpoint is down or every
    probe request failed for a reason other than a rejected parameter."""
    failures: list[str] = []
    answered = [0]

    async def recording(req: Request) -> Response:
        try:
            resp = await send(req)
        except RequestFailed as e:
            failures.append(e.reason)
            raise
        answered[0] += 1
        return resp

    where = f"the endpoint {client.endpoint.base_url} (model {client.endpoint.model})"
    try:
        caps = await client.probe(send=recording)
    except RequestFailed as e:
        raise EndpointUnusable(f"{where} did not answer the capability probe: {e.reason}{_url_hint(e.reason)}") \
            from None
    rejected = [f for f in failures if f.startswith(("HTTP 400", "HTTP 422"))]
    if failures and not answered[0] and not rejected:
        raise EndpointUnusable(f"{where} failed every probe request: {failures[0]}{_url_hint(failures[0])}")
    return caps


def _url_hint(reason: str) -> str:
    if reason.startswith(("HTTP 404", "HTTP 405")):
        return " (is the base URL right? OpenAI-compatible APIs usually end in /v1)"
    return ""


FAIL_FAST_AFTER = 8  # a run stops when its first N requests all fail the same way and none succeeded


class _FailFast:
    """Stop early when every request fails the same way (endpoint down, wrong key or model, a web page at the URL):
    N identical failures in a row from the start, with no success, end the run instead of failing every item."""

    def __init__(self, window: int) -> None:
        self.window = max(1, window)
        self.kinds: set[str] = set()
        self.seen = 0
        self.succeeded = False
        self.tripped: str | None = None

    @staticmethod
    def kind(reason: str) -> str:
        m = re.match(r"HTTP \d{3}", reason)
        return m.group() if m else re.split(r"[(:]", reason, maxsplit=1)[0].strip()

    def failure(self, reason: str) -> None:
        if self.succeeded or self.tripped:
            return
        self.kinds.add(self.kind(reason))
        self.seen += 1
        if self.seen >= self.window and len(self.kinds) == 1:
            self.tripped = reason

    def success(self) -> None:
        self.succeeded = True


def _release(store: Store, lease: dict[str, Any] | None) -> None:
    try:
        store.release_lease(lease)
    except Exception as e:  # noqa: BLE001 - a store that broke mid-run: the lease's process is gone soon anyway
        log.warning("could not release the lease of run %s: %s", (lease or {}).get("run_id"), e)


def _criteria_for(m: Method, dimensions: list[str], criteria_by_dim: dict[str, Criteria]) -> dict[str, Criteria]:
    missing = [d for d in dimensions if d not in criteria_by_dim]
    if missing:
        raise KeyError(f"no criteria for dimension(s) {missing}: pass criteria_by_dim with an entry for each "
                       f"(presets: evalcore.methods.presets.PRESETS)")
    return {d: criteria_by_dim[d] for d in dimensions}


def new_run_id(dataset_id: str, method: str, model: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-") or "model"
    return f"{dataset_id}/{method}-{safe}-{stamp}-{uuid.uuid4().hex[:6]}"


# ---------------------------------------------------------------------------------------------------- scoring
def resolve(method: str | Method, dimensions: Iterable[str] | None, criteria_by_dim: dict[str, Criteria],
            config: PromptLabels | dict[str, Any] | None
            ) -> tuple[Method, list[str], dict[str, Criteria], PromptLabels]:
    """(method object, dimensions, their criteria, the requested config): what a run, an estimate and a batch
    submission all start from."""
    m = method_of(method)
    dims = list(dimensions) if dimensions is not None else list(criteria_by_dim)
    return m, dims, _criteria_for(m, dims, criteria_by_dim), method_config_of(m, config)


def _requests_by_task(m: Method, crit: dict[str, Criteria], planned: PromptLabels) -> Callable[[Task], list[Request]]:
    return lambda t: m.build_requests(t, crit[t.dimension], planned)


def pending_tasks(tasks: list[Task], done: dict[tuple, str], m: Method, crit: dict[str, Criteria], planned: PromptLabels,
                  schedule: str) -> list[Task]:
    """The tasks without a current "ok" judgment in ``done`` (``Store.done_keys``), in the ``schedule``'s order:
    "prefix" puts the longest shared prompt prefix first (one document's items together, while the server's prefix
    cache is hot)."""
    hashes = {d: c.version_hash() for d, c in crit.items()}
    todo = [t for t in tasks if done.get(_task_key(t, hashes[t.dimension])) != STATUS_OK]
    return order_tasks(todo, _requests_by_task(m, crit, planned), schedule)


class Plan(NamedTuple):
    """The method's config as requested and as planned against the endpoint's capabilities, with the plan's note."""

    planned: PromptLabels
    requested: PromptLabels
    note: str
    caps: Capabilities


def run_config(m: Method, spec: ScoringSpec, plan: Plan, *, endpoint: Endpoint, crit: dict[str, Criteria],
               schedule: str, run_id: str | None = None) -> dict[str, Any]:
    """What a run records about how it was made (the online and the batch runs alike): ``spec`` gives the parse
    mode, the pairs and the limit; ``crit`` the resolved criteria of its dimensions. ``spec`` itself is recorded
    whole (``spec.to_dict()``, under the run's id): a bundle carries it and a resume reads it back
    (``evalcore.judge.spec.recorded_spec``)."""
    planned, requested, note, caps = plan
    parse_mode, pairs, limit = spec.parse_mode, spec.pairs, spec.limit
    recorded = dataclasses.replace(spec, dimensions=list(crit), criteria=crit, run_id=run_id or spec.run_id)
    return {
        "method": m.name,
        "method_config": _config_dict(planned),
        "requested_config": _config_dict(requested),
        "plan_note": note,
        "capabilities": asdict(caps),
        "endpoint": endpoint.identity(),
        "criteria": {d: {"hash": c.version_hash(), **asdict(c)} for d, c in crit.items()},
        "parse_mode": parse_mode,
        "pairs": PairSelection.from_arg(pairs).describe() if m.pairwise else None,
        "limit": limit,
        "estimator": getattr(planned, "estimator", ""),
        "schedule": schedule,
        "spec": recorded.to_dict(),
    }


@dataclass
class _Counts:
    """Tasks of this run so far (``done`` and ``ok`` include the ones judged in earlier sessions)."""

    done: int = 0
    ok: int = 0
    cached: int = 0  # tasks whose every response came from the cache
    failed: int = 0
    session_done: int = 0
    cached_prompt_tokens: int = 0  # prompt tokens the server served from its prefix cache
    reasoning_tokens: int = 0  # hidden reasoning tokens the judge reported (part of its completion tokens)


@dataclass
class _Replies:
    """What one task's requests brought back: the responses, their new cache entries and answers rows, the errors."""

    responses: list[Response] = dataclasses.field(default_factory=list)
    entries: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    answers: list[tuple] = dataclasses.field(default_factory=list)
    errors: list[BaseException] = dataclasses.field(default_factory=list)


class ScoringRun:
    """One ``ascore_dataset`` call, step by step: ``plan`` (probe the endpoint, fit the method's config),
    ``open`` (create or resume the run record under its lease), ``select`` (what is left to judge, in schedule
    order), ``dispatch`` (workers judge tasks through the cached sender and the client: one endpoint, a replica
    pool, or a batch's results), ``finish`` (stats and final status: done, cancelled, or stopped by fail-fast)."""

    def __init__(self, spec: ScoringSpec, options: EngineOptions, *, store: Store | None = None,
                 progress: Callable[[Progress], None] | None = None, cancel: threading.Event | None = None,
                 client: Transport | None = None, extra_config: dict[str, Any] | None = None,
                 meter: SpendingMeter | None = None) -> None:
        self.t_start = time.perf_counter()
        self.meter = meter  # the spending meter (evalcore.judge.spending.Meter), or None: nothing counted
        self.reported_models: set[str] = set()  # the models the endpoint said answered this session
        self.spec, self.dataset, self.store = spec, spec.dataset, store or default_store()
        self.m, self.dims, self.crit, self.requested = resolve(spec.method, spec.dimensions, spec.criteria,
                                                               spec.config)
        endpoint = options.endpoint
        self.endpoints = list(endpoint) if isinstance(endpoint, (list, tuple)) else [endpoint]
        if client is None:  # several endpoints: an EndpointPool (evalcore.judge.routing)
            self.endpoint, self.client = make_client(self.endpoints, api_key=options.api_key,
                                                     concurrency=options.concurrency,
                                                     max_retries=options.max_retries, timeout_s=options.timeout_s)
        else:
            self.endpoint, self.client = self.endpoints[0], client
        self.sender = CachedSender(self.client, self.store, self.endpoint, options=request_options(spec),
                                   replicas=self.endpoints[1:] if client is None else ())
        self.concurrency, self.limit, self.pairs = options.concurrency, spec.limit, spec.pairs
        self.schedule, self.max_retries, self.timeout_s = options.schedule, options.max_retries, options.timeout_s
        self.capabilities, self.reprobe = options.capabilities, options.reprobe
        self.progress, self.cancel, self.run_id = progress, cancel, spec.run_id
        self.parse_mode, self.label, self.extra_config = spec.parse_mode, spec.label, extra_config
        self.hashes = {d: c.version_hash() for d, c in self.crit.items()}
        self.draws = max(1, int(getattr(spec, "draws", 1) or 1))  # draws per item (evalcore.judge.draws)
        if self.draws > 1 and self.m.pairwise:
            raise ValueError(f"{self.m.name} compares pairs: draws per item apply to methods that rate items")
        self.cancelled = False
        self._last_emit = 0.0

    async def run(self) -> Run:
        if refusal := self.store.run_refusal(self.run_id, self.spec.owner):  # not theirs: refused before the probe
            if self.meter is not None:
                self.meter.settle()  # nothing was sent: what was reserved for it is returned
            await self.client.aclose()
            raise ValueError(refusal)
        lease = self.store.acquire_lease(self.run_id) if self.run_id else None  # one writer per run
        if self.meter is not None:
            self.meter.begin()
        try:
            await self.plan()
            lease = self.open(lease)
            self.select()
            await self.dispatch()
            return self.finish()
        finally:
            if self.meter is not None:  # whatever ended the run: its record made what its replies cost
                self.meter.settle()
            _release(self.store, lease)
            await self.client.aclose()

    # ------------------------------------------------------------------------------------------ set-up steps
    async def plan(self) -> None:
        self.planned, self.note, self.caps = await _plan(self.m, self.requested, self.sender, self.capabilities,
                                                         self.client, self.reprobe)
        self.probe_stats = dataclasses.replace(self.client.stats)
        self.observe_cost()

    def observe_cost(self) -> None:
        """Tell the spending meter what the replies so far cost (the probe's included)."""
        if self.meter is not None:
            st, counts = self.client.stats, getattr(self, "counts", None)
            self.meter.observe(st.prompt_tokens, st.completion_tokens,
                               counts.cached_prompt_tokens if counts is not None else 0)

    @property
    def over_budget(self) -> str | None:
        """Why the run must stop for money (the operator's cap reached), or None."""
        return self.meter.reached if self.meter is not None else None

    @property
    def opened_id(self) -> str:
        """The run's id: the spec's, or the one :meth:`open` named it by."""
        if self.run_id is None:
            raise RuntimeError("the run has no id until it is opened")
        return self.run_id

    def open(self, lease: dict[str, Any] | None) -> dict[str, Any]:
        """Build the tasks, name the run, take its lease (a second process stops here), write its record."""
        m, store = self.m, self.store
        self.tasks = build_tasks(self.dataset, m, self.dims, limit=self.limit, pairs=self.pairs)
        self.run_id = self.run_id or new_run_id(self.dataset.id, m.name, self.endpoint.model)
        lease = lease or store.acquire_lease(self.run_id)
        config = run_config(m, self.spec, Plan(self.planned, self.requested, self.note, self.caps),
                            endpoint=self.endpoint, crit=self.crit, schedule=self.schedule, run_id=self.run_id)
        config.update(concurrency=self.concurrency, max_retries=self.max_retries, timeout_s=self.timeout_s)
        config.update(self._variant())
        if len(self.endpoints) > 1:
            config["endpoints"] = [e.identity() for e in self.endpoints]
        config.update(self.extra_config or {})
        self.resumed = store.run_exists(self.run_id)
        store.create_run(run_id=self.run_id, dataset_id=self.dataset.id, method=m.name, model=self.endpoint.model,
                         label=self.label, config=config, parser=getattr(m, "parser", ""), status="running",
                         owner=self.spec.owner)
        log.info("run %s: %d tasks, method %s on %s (%s)%s", self.run_id, len(self.tasks), m.name,
                 self.endpoint.identity(), self.note or "as configured", " (resumed)" if self.resumed else "")
        return lease

    def _variant(self) -> dict[str, Any]:
        """The method's variant as it runs on this judge (the plan's fallback, what the endpoint's contract changed
        in the requests), the learned contract and the spec's reasoning options: recorded with the run."""
        notes = [self.note] if self.note else []
        if self.tasks:
            t = self.tasks[0]
            before = self.m.build_requests(t, self.crit[t.dimension], self.planned)
            before = [draw_request(r, min(1, self.draws - 1)) for r in before]  # a later draw's: its seed too
            notes += variant_notes(before, [self.sender.shaped(r) for r in before], self.sender.contract)
        label = getattr(self.m, "label", self.m.name)
        out: dict[str, Any] = {"variant": f"{label}: {'; '.join(notes)}" if notes else "",
                               "contract": self.sender.contract.as_dict()}
        opts = self.sender.options
        if opts.reasoning_effort or opts.max_completion_tokens:
            out["reasoning_options"] = dataclasses.asdict(opts)
        if self.reported_models:  # what the endpoint said answered (a resume that asked nothing keeps the record's)
            out["reported_model"] = ", ".join(sorted(self.reported_models))
        return out

    def select(self) -> None:
        """What is left: tasks without a current "ok" judgment (a resumed run skips the rest)."""
        done = self.store.done_keys(self.opened_id, pairwise=self.m.pairwise)
        self.todo = pending_tasks(self.tasks, done, self.m, self.crit, self.planned, self.schedule)
        self.already = len(self.tasks) - len(self.todo)
        self.counts = _Counts(done=self.already, ok=self.already)
        self.failfast = _FailFast(min(FAIL_FAST_AFTER, len(self.todo)))

    def emit(self, force: bool = False) -> None:
        """Report progress (at most every 0.1 s unless ``force``)."""
        if self.progress is None:
            return
        t = time.perf_counter()
        if not force and t - self._last_emit < 0.1:
            return
        self._last_emit = t
        c, total = self.counts, len(self.tasks)
        elapsed = t - self.t_start
        remaining = total - c.done
        rate = c.session_done / elapsed if elapsed > 0 and c.session_done else 0.0
        eta = remaining / rate if rate > 0 else (0.0 if remaining == 0 else None)
        self.progress(Progress(total=total, done=c.done, cached=c.cached, failed=c.failed,
                               retrying=max(0, self.client.stats.retrying_now), eta_s=eta, elapsed_s=elapsed))

    # ------------------------------------------------------------------------------------------ dispatch
    async def dispatch(self) -> None:
        """Judge the remaining tasks with bounded concurrency until done, cancelled or stopped by fail-fast."""
        queue: asyncio.Queue = asyncio.Queue()
        for t in self.todo:
            queue.put_nowait(t)

        async def worker() -> None:
            while not ((self.cancel is not None and self.cancel.is_set()) or self.failfast.tripped
                       or self.sender.paused or self.over_budget):
                try:
                    t = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                await self.judge(t)

        self.emit(force=True)
        n_workers = max(1, min(getattr(self.client, "total_concurrency", self.concurrency), len(self.todo)))
        workers = [asyncio.ensure_future(worker()) for _ in range(n_workers)]
        watcher = asyncio.ensure_future(self._watch_cancel(workers)) if self.cancel is not None else None
        try:
            results = await asyncio.gather(*workers, return_exceptions=True)
        finally:
            if watcher is not None:
                watcher.cancel()
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                raise r
        if self.cancel is not None and self.cancel.is_set():
            self.cancelled = True
        self.emit(force=True)

    async def _watch_cancel(self, workers: Sequence[asyncio.Future[None]]) -> None:
        cancel = self.cancel
        if cancel is None:  # pragma: no cover - watched only when there is one
            return
        while True:
            await asyncio.sleep(0.05)
            if cancel.is_set():
                self.cancelled = True
                for w in workers:
                    w.cancel()
                return

    # ------------------------------------------------------------------------------------------ one task
    async def judge(self, task: ItemTask | PairTask) -> None:
        """Send one task's requests, score the replies, store the judgment with its cache entries, count it."""
        replies = _Replies()
        draws: list[dict[str, Any]] = []
        try:
            requests = self.m.build_requests(task, self.crit[task.dimension], self.planned)
            if self.draws > 1 and isinstance(task, ItemTask):  # draws are refused for pairs (__init__)
                outcome, draws = await self._judge_draws(task, requests, replies)
            else:
                await self._fetch(task, requests, replies)
                outcome = self._score(task, requests, replies)
                draws = self._samples(task, outcome, replies, 0) if isinstance(task, ItemTask) else []
                draws = draws if len(draws) > 1 else []  # one value: the judgment is the run's only draw
        except asyncio.CancelledError:
            raise
        except UnsupportedByEndpoint:
            raise
        except Exception as e:  # noqa: BLE001 - a method bug must fail this item with a reason, not the run
            log.warning("method error on %s: %s", getattr(task, "item_id", getattr(task, "pair_id", "?")), e)
            outcome = Outcome(value=None, status=STATUS_FAILED, reason=f"method error: {type(e).__name__}: {e}")
        outcome = _checked(outcome)
        self._save(task, outcome, replies, draws)
        self._count(outcome, replies.responses)
        self.observe_cost()

    async def _fetch(self, task: ItemTask | PairTask, requests: list[Request], replies: _Replies) -> None:
        task_label = f"{task.pair_id}|{task.order}" if isinstance(task, PairTask) else task.item_id
        results = await asyncio.gather(*(self.sender.fetch(r) for r in requests), return_exceptions=True)
        for res in results:
            if isinstance(res, BaseException):
                if isinstance(res, asyncio.CancelledError):
                    raise res
                replies.errors.append(res)
                continue
            resp, entry = res
            replies.responses.append(resp)
            if entry is not None:
                replies.entries.append(entry)
                cached_toks = int(resp.usage.get("cached_tokens", 0) or 0)
                self.counts.cached_prompt_tokens += cached_toks
                self.counts.reasoning_tokens += int(resp.usage.get("reasoning_tokens", 0) or 0)
                replies.answers.append((entry["key"], task_label, task.dimension,
                                        resp.answered_by or self.endpoint.base_url,
                                        int(resp.usage.get("prompt_tokens", 0) or 0), cached_toks, resp.latency_s))

    async def _judge_draws(self, task: ItemTask, requests: list[Request], replies: _Replies
                           ) -> tuple[Outcome, list[dict[str, Any]]]:
        """The item judged in ``self.draws`` draws, each its own requests (``draws.draw_request``): the aggregate
        outcome and every draw's row (a sampling method's samples each a row). ``replies`` gathers all draws'."""
        per = [_Replies() for _ in range(self.draws)]
        sent = [[draw_request(r, d) for r in requests] for d in range(self.draws)]
        await asyncio.gather(*(self._fetch(task, sent[d], per[d]) for d in range(self.draws)))
        rows: list[dict[str, Any]] = []
        outcomes = []
        for d, one in enumerate(per):
            outcome = _checked(self._score(task, sent[d], one))
            outcomes.append(outcome)
            rows += self._samples(task, outcome, one, len(rows))
            replies.responses += one.responses
            replies.entries += one.entries
            replies.answers += one.answers
        dim = self.dataset.dimension(task.dimension) if task.dimension in self.dataset.dimension_names else None
        outcome = aggregate_outcome(rows, outcomes, categorical=bool(dim and dim.is_categorical))
        failed = next((d for d, one in enumerate(per) if one.errors), None)
        if failed is not None:  # a request that failed (not a reply that did not parse): the item is judged again on
            # resume, its answered draws from the cache, so no item keeps fewer draws for an endpoint's hiccup
            outcome = dataclasses.replace(outcome, value=None, status=STATUS_FAILED,
                                          reason=f"draw {failed} of {self.draws}: {outcomes[failed].reason}")
        return outcome, rows

    def _samples(self, task: ItemTask, outcome: Outcome, replies: _Replies, first: int) -> list[dict[str, Any]]:
        """One draw's rows (``draws.item_draws``): each sample of a sampling method scored alone by the method."""
        if replies.errors:
            return item_draws(outcome, [], lambda rs: outcome, first=first)
        return item_draws(_checked(outcome), replies.responses, lambda rs: _checked(score_replies(
            self.m, task, self.crit[task.dimension], self.planned, rs, parse_mode=self.parse_mode)), first=first)

    def _score(self, task: ItemTask | PairTask, requests: list[Request], replies: _Replies) -> Outcome:
        if replies.errors:
            e = replies.errors[0]
            reason = e.reason if isinstance(e, RequestFailed) else f"{type(e).__name__}: {e}"
            if len(requests) > 1:
                reason += f" ({len(replies.errors)} of {len(requests)} requests failed)"
            if not getattr(e, "recorded", False):  # a batch's recorded failure is no sign of the endpoint's health
                self.failfast.failure(reason)
            return Outcome(value=None, status=STATUS_FAILED, reason=reason,
                           estimator=getattr(self.planned, "estimator", ""))
        self.failfast.success()
        return score_replies(self.m, task, self.crit[task.dimension], self.planned, replies.responses,
                             parse_mode=self.parse_mode, chat=[isinstance(r, ChatRequest) for r in requests])

    def _save(self, task: ItemTask | PairTask, outcome: Outcome, replies: _Replies,
              draws: Sequence[dict[str, Any]] = ()) -> None:
        """The judgment (or comparison) row, its draws and its responses' cache entries, in one transaction."""
        row = {"dimension": task.dimension, "criteria_hash": self.hashes[task.dimension],
               "raw": _raw_text(outcome, replies.responses), "value": outcome.value, "status": outcome.status,
               "reason": _redact(self.client, outcome.reason), "estimator": outcome.estimator,
               "detail": outcome.detail}
        if isinstance(task, PairTask):
            row.update(pair_id=task.pair_id, doc_id=task.doc_id, item_first=task.item_first,
                       item_second=task.item_second, order=task.order, verdict=outcome.verdict)
            self.store.save_comparison(self.opened_id, row, cache=replies.entries, answers=replies.answers)
        else:
            row.update(item_id=task.item_id)
            self.store.save_judgment(self.opened_id, row, cache=replies.entries, answers=replies.answers,
                                     draws=[{**d, "item_id": task.item_id, "dimension": task.dimension,
                                             "criteria_hash": row["criteria_hash"],
                                             "reason": _redact(self.client, d["reason"])} for d in draws])

    def _count(self, outcome: Outcome, responses: list[Response]) -> None:
        c = self.counts
        self.client.stats.cached += sum(1 for r in responses if r.cached)
        self.reported_models.update(r.model for r in responses if r.model and not r.cached)  # the fingerprint's
        c.done += 1
        c.session_done += 1
        if responses and all(r.cached for r in responses):
            c.cached += 1
        if outcome.status != STATUS_OK:
            c.failed += 1
        else:
            c.ok += 1
        self.emit()

    # ------------------------------------------------------------------------------------------ the end
    def finish(self) -> Run:
        """Record the run's stats and status; a fail-fast stop raises ``EndpointUnusable`` after recording it."""
        stats = self._stats()
        paused = self.sender.paused
        broke = self.over_budget if self.counts.session_done < len(self.todo) else None  # tasks left unjudged
        status = "cancelled" if self.cancelled else "stopped" if (self.failfast.tripped or paused or broke) else "done"
        variant = self._variant()
        row = self.store.run_row(self.opened_id)
        if {k: row["config"].get(k) for k in variant} != variant:  # the contract learned more during the run
            self.store.create_run(run_id=self.opened_id, dataset_id=row["dataset_id"], method=row["method"],
                                  model=row["model"], label=row.get("label") or "", config={**row["config"], **variant},
                                  parser=row.get("parser") or "", status=status, owner=self.spec.owner)
        self.store.finish_run(self.opened_id, status=status, stats=stats)
        if broke and not self.cancelled and self.meter is not None:  # broke: the meter's cap
            self.meter.settle()
            raise self.meter.stop_error(self.opened_id)
        if paused and not self.cancelled:
            raise EndpointUnusable(f"run {self.run_id} paused: {paused}. Change the method's settings or the judge, "
                                   f"then resume the run (CLI: --run {self.run_id}): what was answered is not asked "
                                   f"again.")
        ff = self.failfast
        if ff.tripped:
            raise EndpointUnusable(
                f"run {self.run_id} stopped: its first {ff.seen} request{'s' * (ff.seen != 1)} all failed the "
                f"same way and none succeeded: {ff.tripped}{_url_hint(ff.tripped)}. Fix the endpoint, "
                f"then resume the run (CLI: --run {self.run_id}).")
        log.info("run %s %s: %s", self.run_id, status, {k: stats[k] for k in ("requests", "cached", "retries",
                                                                               "failures", "wall_s")})
        return self.store.load_run(self.opened_id)

    def _stats(self) -> dict[str, Any]:
        client, c = self.client, self.counts
        client.stats.wall_s = time.perf_counter() - self.t_start
        stats = client.stats.as_dict() | {
            "probe_requests": self.probe_stats.requests,
            "tasks": len(self.tasks),
            "skipped_already_done": self.already,
            "judged_this_session": c.session_done,
            "tasks_from_cache": c.cached,
            "ok": c.ok,
            "failed": c.failed,
            "resumed": self.resumed,
            "cached_prompt_tokens": c.cached_prompt_tokens,
            "refused_requests": self.sender.refusals,
            "reasoning_tokens": c.reasoning_tokens,
        }
        extra = getattr(client, "extra_stats", None)  # a replica pool's or a batch's own figures
        stats.update(extra() if callable(extra) else client.limiter.stats.as_dict()
                     if hasattr(client, "limiter") else {})
        return stats


def _checked(outcome: Outcome) -> Outcome:
    """An outcome the engine can store: status "ok" or "failed", and an "ok" always with a value."""
    if outcome.status not in (STATUS_OK, STATUS_FAILED):
        outcome = dataclasses.replace(outcome, status=STATUS_FAILED,
                                      reason=f"method returned status {outcome.status!r}")
    if outcome.status == STATUS_OK and (outcome.value is None or
                                        (isinstance(outcome.value, float) and math.isnan(outcome.value))):
        outcome = dataclasses.replace(outcome, status=STATUS_FAILED, value=None,
                                      reason=outcome.reason or "method gave no value")
    return outcome


def _raw_text(outcome: Outcome, responses: list[Response]) -> str:
    """What the judgment stores as the judge's reply: the method's own, else the reply, else all replies as JSON."""
    if outcome.raw:
        return outcome.raw
    if sum(len(r.choices) for r in responses) > 1:
        return json.dumps([c.text for r in responses for c in r.choices], ensure_ascii=False)
    return responses[0].choices[0].text if responses else ""


async def ascore_dataset(spec: ScoringSpec, options: EngineOptions, *, store: Store | None = None,
                         progress: Callable[[Progress], None] | None = None, cancel: threading.Event | None = None,
                         client: Transport | None = None, extra_config: dict[str, Any] | None = None,
                         meter: SpendingMeter | None = None) -> Run:
    """The async form of ``score_dataset`` (same arguments; ``client`` replaces the endpoint's client, e.g. a
    batch's results; ``extra_config`` is merged into the run's recorded config)."""
    run = ScoringRun(spec, options, store=store, progress=progress, cancel=cancel, client=client,
                     extra_config=extra_config, meter=meter)
    return await run.run()


def run_sync(coro_factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine from sync code, also when this thread already runs an event loop (Jupyter, some apps)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_factory())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro_factory())
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    th = threading.Thread(target=target, name="evalcore-judge")
    th.start()
    th.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def score_dataset(spec: ScoringSpec, options: EngineOptions, *, store: Store | None = None,
                  progress: Callable[[Progress], None] | None = None,
                  cancel: threading.Event | None = None, meter: SpendingMeter | None = None) -> Run:
    """Score ``spec.dataset`` on ``spec.dimensions`` with ``spec.method`` (a name or a Method object) through the
    judge ``options`` describe, and return the stored Run.

    From the spec: ``config``, the method's config (dataclass or dict; default ``method.default_config()``), planned
    against the endpoint's probed capabilities (or ``options.capabilities``), the plan's note recorded in the run
    config; ``limit``, the first N items (pairwise: the first N pairs, each in both orders); ``pairs``, the pairwise
    selection, "all" | [(system_a, system_b), ...] | {"sample": k, "seed": s}; ``run_id``, an existing id resumes
    that run. From the options: ``reprobe`` probes the endpoint's capabilities again instead of reusing the cached
    probe; ``endpoint`` may be a list of endpoints serving the same model (replicas): requests are routed to the one
    with the fewest outstanding requests, a failing one is drained (``evalcore.judge.routing``), each reply is
    cached under the replica that gave it; ``schedule`` "prefix" (default) sends the requests sharing the longest prompt prefix together (one
    document's items while the server's prefix cache is hot), "as-given" keeps the dataset's order.
    ``cancel``: set it to stop; finished judgments are kept and the run is marked "cancelled".
    ``meter`` (``evalcore.judge.spending.Meter``): the run's cost counted from each reply's usage and charged to its
    spender; the run stops (status "stopped", ``CapReached`` raised) once the operator's cap is reached.
    Raises ``UnsupportedByEndpoint`` when the method needs a capability the endpoint lacks and has no fallback."""
    return run_sync(lambda: ascore_dataset(spec, options, store=store, progress=progress, cancel=cancel,
                                           meter=meter))


# ---------------------------------------------------------------------------------------------------- estimate
def request_tokens(request: Request) -> tuple[int, int]:
    """(prompt tokens ~ chars/4, completion tokens upper bound = max_tokens x n)."""
    if isinstance(request, ChatRequest):
        chars = sum(len(c) for _, c in request.messages)
        return math.ceil(chars / CHARS_PER_TOKEN), request.max_tokens * request.n
    assert isinstance(request, CompletionRequest)
    return math.ceil(len(request.prompt) / CHARS_PER_TOKEN), request.max_tokens * request.n


def estimate(spec: ScoringSpec, options: EngineOptions, *, store: Store | None = None,
             prices: dict[str, Any] | None = None, reuse: bool = True) -> Estimate:
    """Calls, tokens and cost a run would need, minus what the cache already holds. Makes no network call.

    Tokens are rough: prompt = characters / 4; completion = max_tokens x samples per uncached call (an upper
    bound: replies usually stop earlier). The config is planned against ``capabilities``, else against the
    endpoint's probe results if an earlier run left them in the cache, else taken as requested (noted).

    ``reuse``: the plan's requests as sent (built, shaped, told apart from their duplicates, their tokens counted:
    what depends on the spec, the planned config and the endpoint's learned contract, never on the model's name)
    come from a small cache (:func:`plan_requests`), so estimating the same plan for another model only keys,
    looks up and prices them (the Score page estimates again whenever the model's name changes). False: every
    request built here, as a first estimate does (``bench/bench_score_typing.py`` compares the two; the tests check
    that they give the same estimate)."""
    store = store or default_store()
    endpoint = options.first_endpoint
    replicas = list(options.endpoint[1:]) if isinstance(options.endpoint, (list, tuple)) else []
    m, dims, crit, requested = resolve(spec.method, spec.dimensions, spec.criteria, spec.config)
    # every member's cached replies count (a replica set reads them all); given the first endpoint alone, what a
    # replica answered is not counted: the estimate is then an upper bound
    sender = CachedSender(None, store, endpoint, options=request_options(spec), replicas=replicas)
    note = ""
    caps = options.capabilities if options.capabilities is not None else cached_probe(sender)
    caps = sender.contract.restrict(caps) if caps is not None else None
    if caps is not None:
        planned, plan_note = m.plan(requested, caps)
        note = plan_note
    else:
        planned = requested
        note = "endpoint not probed yet: estimate assumes it supports the method as configured"
    inputs = PlanInputs.of(spec, m, dims, crit, planned, schedule=options.schedule, sender=sender, keyed=reuse)
    hosted = endpoint.provider not in cost_mod.FREE_PROVIDERS
    n = _counted(plan_requests(inputs), sender, hosted=hosted) if reuse else _counted_afresh(inputs, sender, hosted)
    budget = getattr(spec, "max_completion_tokens", None)
    if budget:  # a reasoning judge's hidden reasoning is billed as completion tokens, out of the same budget
        note = "; ".join(x for x in (note, f"completion tokens counted at the budget of {budget} per reply, the "
                                           f"judge's reasoning included (billed as completion tokens)") if x)
    rows = cost_mod.cost_table(n.prompt_tokens, n.completion_tokens, cached_prompt_tokens=n.cached_prompt_tokens,
                               model=endpoint.model, provider=endpoint.provider, prices=prices)
    calls = n.unique - n.hits
    return Estimate(calls=calls, cached=n.requests - calls, prompt_tokens=n.prompt_tokens,
                    completion_tokens=n.completion_tokens, cost_usd=rows[-1]["usd"], tasks=n.tasks, note=note,
                    cached_prompt_tokens=n.cached_prompt_tokens, cost_usd_batch=rows[-1]["batch_usd"], cost_rows=rows,
                    requests=n.requests, duplicates=n.requests - n.unique, cache_hits=n.hits)


class _Tally(NamedTuple):
    """What an estimate counts of a plan for one endpoint and model."""

    tasks: int
    requests: int  # every request built, duplicates included
    unique: int  # distinct requests (duplicates are sent once)
    hits: int  # distinct requests the cache answers
    prompt_tokens: int  # of the requests to send
    completion_tokens: int
    cached_prompt_tokens: int


def _counted(plan: PlanRequests, sender: CachedSender, *, hosted: bool) -> _Tally:
    """The plan for this endpoint and model: its distinct requests' keys under them, the cache's answers, the
    tokens of the requests left to send."""
    keys = plan.keys(sender.identity)
    hits = sender.hits(dict(zip(keys, plan.unique)))
    sent = [i for i, k in enumerate(keys) if k not in hits]
    prompt_tokens = sum(plan.tokens[i][0] for i in sent)
    completion_tokens = sum(plan.tokens[i][1] for i in sent)
    cached_prompt = (_repeated_prefix((plan.unique[i] for i in sent), hosted=hosted) if hits
                     else plan.repeated_prefix(hosted))
    return _Tally(plan.tasks, plan.requests, len(keys), len(hits), prompt_tokens, completion_tokens,
                   min(cached_prompt, prompt_tokens))


def _counted_afresh(inputs: PlanInputs, sender: CachedSender, hosted: bool) -> _Tally:
    """The same counts with nothing reused: every task's requests built (once more for the schedule's order), each
    request shaped and keyed, duplicates found by their keys. What an estimate did before plans were cached."""
    m, crit, planned = inputs.method, inputs.criteria, inputs.planned
    tasks = build_tasks(inputs.dataset, m, inputs.dimensions, limit=inputs.limit, pairs=inputs.pairs)
    tasks = order_tasks(tasks, _requests_by_task(m, crit, planned), inputs.schedule)
    reqs: list[Request] = []
    for t in tasks:
        reqs += [sender.shaped(draw_request(r, d)) for d in range(inputs.draws)
                 for r in m.build_requests(t, crit[t.dimension], planned)]
    keys = [sender.key(r) for r in reqs]
    uniq = dict(zip(keys, reqs))  # identical requests are sent once (the second is a cache hit)
    hits = sender.hits(uniq)
    prompt_tokens = completion_tokens = 0
    for k, r in uniq.items():
        if k in hits:
            continue
        p, c = request_tokens(r)
        prompt_tokens += p
        completion_tokens += c
    cached_prompt = _repeated_prefix((r for k, r in uniq.items() if k not in hits), hosted=hosted)
    return _Tally(len(tasks), len(reqs), len(uniq), len(hits), prompt_tokens, completion_tokens,
                   min(cached_prompt, prompt_tokens))


def _repeated_prefix(requests: Iterable[Request], *, hosted: bool) -> int:
    """Prompt tokens expected from the provider's prompt cache, sending ``requests`` in order (OpenAI's rule on a
    hosted endpoint: prompts of >= 1,024 tokens, in 128-token steps)."""
    shared, _ = repeated_prefix_tokens((prompt_text(r) for r in requests), min_tokens=1024 if hosted else 0,
                                       step_tokens=128 if hosted else 16)
    return shared


@dataclass(frozen=True)
class PlanInputs:
    """What a plan's requests as sent depend on, as ``key`` (hashable: the dataset's texts and votes as a hash, the
    method, dimensions and criteria, the planned config, limit, pairs, schedule, draws, the spec's reasoning
    options and the endpoint's learned contract), and the values they are built from (not compared: ``key`` stands
    for them). Neither the model's name nor the endpoint's address is in it: a plan is the same for every model."""

    key: tuple[object, ...] | None  # None: not cached (asked so, or a value that cannot be hashed)
    dataset: Dataset = dataclasses.field(compare=False)
    method: Method = dataclasses.field(compare=False)
    dimensions: tuple[str, ...] = dataclasses.field(compare=False)
    criteria: dict[str, Criteria] = dataclasses.field(compare=False)
    planned: PromptLabels = dataclasses.field(compare=False)
    limit: int | None = dataclasses.field(compare=False)
    pairs: PairsArg = dataclasses.field(compare=False)
    schedule: str = dataclasses.field(compare=False)
    draws: int = dataclasses.field(compare=False)
    shape: Callable[[Request], Request] = dataclasses.field(compare=False)  # the request as sent

    @classmethod
    def of(cls, spec: ScoringSpec, m: Method, dims: list[str], crit: dict[str, Criteria], planned: PromptLabels, *,
           schedule: str = "", sender: CachedSender | None = None, keyed: bool = True) -> PlanInputs:
        """The inputs of ``spec``'s plan; without ``sender``, of its requests as built (what counting them needs);
        ``keyed=False``: without a key (not to be cached: nothing is hashed)."""
        draws = max(1, int(getattr(spec, "draws", 1) or 1))
        selection = PairSelection.from_arg(spec.pairs) if m.pairwise else None
        shaping = (sender.options, canonical_json(sender.contract.as_dict())) if sender is not None else None
        key: tuple[object, ...] | None = None
        if keyed:
            key = (dataset_fingerprint(spec.dataset), m, tuple(dims), tuple(crit[d] for d in dims), type(planned),
                   planned, spec.limit, selection, draws, schedule, shaping)
            try:
                hash(key)
            except TypeError:
                key = None
        return cls(key, spec.dataset, m, tuple(dims), crit, planned, spec.limit, spec.pairs, schedule, draws,
                   sender.shaped if sender is not None else _as_built)


def _as_built(request: Request) -> Request:
    return request


def dataset_fingerprint(dataset: Dataset) -> str:
    """The dataset's id, items, documents and pairwise votes as one hash: every text and vote a plan's requests are
    built from (pandas' hashes, column by column: milliseconds for SummEval's 1,600 items, where building their
    prompts takes seconds)."""
    from pandas.util import hash_pandas_object

    h = hashlib.sha256(dataset.id.encode())
    for frame in (dataset.items, dataset.documents, dataset.preferences):
        h.update(canonical_json([str(c) for c in frame.columns] + [len(frame)]).encode())
        for c in frame.columns:
            col = frame[c]
            if col.dtype == object:  # texts, and cells pandas cannot hash (a document's references, a list)
                col = col.map(_cell_text)
            h.update(hash_pandas_object(col, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _cell_text(x: object) -> str | None:
    """A cell as text for hashing: a list (or an array) of references as the list of its texts."""
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, Iterable) and not isinstance(x, (bytes, dict)):
        return repr([str(v) for v in x])
    return repr(x)


@dataclass(frozen=True, eq=False)
class PlanRequests:
    """A plan's requests as sent, in the schedule's order: how many tasks and requests it has, and its distinct
    requests (told apart by their cache parameters: two systems that wrote the same text make one), each with its
    parameters as canonical JSON (what its cache key hashes, with the endpoint) and its (prompt, completion) tokens
    (:func:`request_tokens`)."""

    tasks: int
    requests: int
    unique: tuple[Request, ...]
    params: tuple[str, ...]
    tokens: tuple[tuple[int, int], ...]
    # the prompt-cache prefix of every distinct request sent (none answered by the cache), per hosted or not:
    # worked out once, for the first model estimated
    _prefix: dict[bool, int] = dataclasses.field(default_factory=dict, repr=False)

    def keys(self, identity: dict[str, Any]) -> list[str]:
        """Each distinct request's cache key under ``identity`` (``evalcore.store.request_key``: the sha256 of the
        canonical JSON list [identity, model, parameters]), from the parameters' JSON made once for the plan."""
        head = "[" + canonical_json(identity) + "," + canonical_json(identity.get("model")) + ","
        return [hashlib.sha256((head + p + "]").encode()).hexdigest() for p in self.params]

    def repeated_prefix(self, hosted: bool) -> int:
        """:func:`_repeated_prefix` of every distinct request, in order."""
        if hosted not in self._prefix:
            self._prefix[hosted] = _repeated_prefix(self.unique, hosted=hosted)
        return self._prefix[hosted]


class _PlanCache:
    """The plans last estimated, least recently used out first, holding ``max_requests`` distinct requests at most
    in all (a request holds its prompt and its parameters' JSON: SummEval's about 7 kB); a larger plan is built each
    time, never kept."""

    def __init__(self, max_requests: int) -> None:
        self.max_requests = max_requests
        self._plans: OrderedDict[tuple[object, ...], PlanRequests] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...], build: Callable[[], PlanRequests]) -> PlanRequests:
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                return plan
        plan = build()  # outside the lock: two sessions may build one plan at once, neither waits for the other
        if len(plan.unique) <= self.max_requests:
            with self._lock:
                self._plans[key] = plan
                while sum(len(p.unique) for p in self._plans.values()) > self.max_requests:
                    self._plans.popitem(last=False)
        return plan

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()


PLAN_CACHE = _PlanCache(max_requests=12_000)  # SummEval's four dimensions (6,400) and a smaller plan


def plan_requests(inputs: PlanInputs) -> PlanRequests:
    """The plan's requests as sent: from the cache when the same plan (``inputs.key``) was built before."""
    if inputs.key is None:
        return _built_once(inputs)
    return PLAN_CACHE.get(inputs.key, lambda: _built_once(inputs))


def _built_once(inputs: PlanInputs) -> PlanRequests:
    """The plan's requests, each task's built once (the schedule's order reads the first of them)."""
    m, crit, planned = inputs.method, inputs.criteria, inputs.planned
    tasks = build_tasks(inputs.dataset, m, inputs.dimensions, limit=inputs.limit, pairs=inputs.pairs)
    built: dict[int, list[Request] | Exception] = {}
    for t in tasks:
        try:
            built[id(t)] = m.build_requests(t, crit[t.dimension], planned)
        except Exception as e:  # noqa: BLE001 - raised below, in the schedule's order, as a second build would
            built[id(t)] = e

    def requests_of(t: Task) -> list[Request]:
        out = built[id(t)]
        if isinstance(out, Exception):
            raise out
        return out

    unique: dict[str, Request] = {}  # by the request's parameters, what its cache key is made of with the endpoint
    n = 0
    for t in order_tasks(tasks, requests_of, inputs.schedule):
        for r in [inputs.shape(draw_request(r, d)) for d in range(inputs.draws) for r in requests_of(t)]:
            unique[canonical_json(r.params())] = r  # the last of identical requests, where the first one stood
            n += 1
    kept = tuple(unique.values())
    return PlanRequests(len(tasks), n, kept, tuple(unique), tuple(request_tokens(r) for r in kept))


class _ProbeOnly:
    """Stands in for a client in ``estimate``: the probe may only read the cache."""

    async def send(self, request: Request) -> Response:  # pragma: no cover - send is always given
        raise RequestFailed("not cached")


def cached_probe(sender: CachedSender) -> Capabilities | None:
    """The endpoint's capabilities from an earlier run's probe replies in the cache; None when there are none.
    Sends nothing (an estimate, a batch submission)."""
    try:
        return run_sync(lambda: JudgeClient.probe(cast(JudgeClient, _ProbeOnly()), send=ProbeSender(sender)))
    except RequestFailed:
        return None


# ---------------------------------------------------------------------------------------------------- G-Eval auto-CoT
async def agenerate_steps(criteria: Criteria, *, endpoint: Endpoint, api_key: str | None = None,
                          store: Store | None = None, dataset_id: str | None = None, timeout_s: float = 60.0,
                          max_retries: int = 6, meter: SpendingMeter | None = None) -> Criteria:
    from evalcore.methods.geval import parse_steps, steps_request

    store = store or default_store()
    client = JudgeClient(endpoint, api_key=api_key, concurrency=1, max_retries=max_retries, timeout_s=timeout_s)
    try:
        resp = await CachedSender(client, store, endpoint).send_and_cache(steps_request(criteria))
    finally:
        await client.aclose()
        if meter is not None:  # charged what the reply's usage costs, not the estimate (spending.Meter)
            meter.count_reply(client.stats)
    choice = resp.choices[0]
    if choice.finish_reason == "refusal":
        raise RequestFailed(f"judge refused to write evaluation steps: {choice.text[:160]!r}")
    steps = parse_steps(choice.text)
    out = dataclasses.replace(criteria, steps=steps)
    if dataset_id:
        store.save_criteria(dataset_id, out, note=f"auto-CoT steps by {endpoint.model}", steps_by=endpoint.model)
    return out


def generate_steps(criteria: Criteria, *, endpoint: Endpoint, api_key: str | None = None, store: Store | None = None,
                   dataset_id: str | None = None, timeout_s: float = 60.0, max_retries: int = 6,
                   meter: SpendingMeter | None = None) -> Criteria:
    """G-Eval auto-CoT (000 §2): ask the judge for evaluation steps; returns the criteria with ``steps`` filled
    (and saves that version under ``dataset_id`` when given). ``meter`` (``spending.Meter``): the estimate charged
    at the click settled to what the reply's usage costs."""
    return run_sync(lambda: agenerate_steps(criteria, endpoint=endpoint, api_key=api_key, store=store,
                                             dataset_id=dataset_id, timeout_s=timeout_s, max_retries=max_retries,
                                             meter=meter))


__all__ = [
    "Progress", "Estimate", "PairSelection", "score_dataset", "ascore_dataset", "estimate", "generate_steps",
    "agenerate_steps", "build_tasks", "item_tasks", "pair_tasks", "item_pairs", "CachedSender", "explain_failure",
    "new_run_id", "CHARS_PER_TOKEN", "ScoringRun", "pending_tasks", "run_config", "cached_probe",
]


def _redact(client: object, text: str | None) -> str | None:
    """A stored reason without the key or any Bearer token: the client's own ``redact`` when it has one (it knows its
    key), else the generic patterns (batch results, routed replicas)."""
    own = getattr(client, "redact", None)
    return own(text) if callable(own) else redact(text, [])
