"""Scoring through the OpenAI Batch API: half the price, no rate-limit pressure, results within the completion window.

``submit`` builds the same requests an online run would send (same method plan, same bodies), leaves out what the
cache already answers, writes them as JSONL (``custom_id`` = the request's cache key), uploads the file through the
Files API and creates one batch per API route (chat completions, completions). The batch ids are stored (table
``batches``) with the run, so the process may exit: ``collect`` (``python -m evalcore batch collect RUN_ID``, in any
later process) polls until the batches end, downloads the output and error files, stores every answered reply under
its cache key (exactly where an online run would have put it: a later online run of the same work costs nothing) and
then scores the run from the cache through the normal engine, so every item ends "ok" or "failed" with a reason:

* a line the batch answered with an error: ``batch: HTTP 400: <message>``;
* a line of an expired batch: ``batch expired: request not run within the completion window``;
* a line of a cancelled batch the server never ran: ``batch cancelled: request not run``;
* a batch that failed validation: ``batch failed: <errors>``.

Submitting again under the same run id (``--run``) sends only what is still missing: failed and unprocessed items.

Capabilities: a batch run sends no synchronous request, so it plans the method against the endpoint's cached probe
when an earlier run left one, else against what the OpenAI API is documented to support (chat log-probs with 20
alternatives, ``n``; no echo), noted in the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Iterator

import openai

from evalcore.judge import batch_anthropic, runner, trust
from evalcore.judge.contract import RequestOptions
from evalcore.judge.client import (  # request_body: the one builder of a request's JSON, online and batched
    Endpoint,
    JudgeClient,
    RequestFailed,
    RequestStats,
    chat_response,
    completion_response,
    request_body,
)
from evalcore.judge.spec import EngineOptions, ScoringSpec
from evalcore.spec import pairs_from_described
from evalcore.store import Store, default_store
from evalcore.types import Capabilities, ChatRequest, Criteria, ItemTask, PairTask, Request, Response
from evalcore.model import Dataset, Run

if TYPE_CHECKING:
    from evalcore.methods.base import Method, PromptLabels

log = logging.getLogger(__name__)

TERMINAL = ("completed", "failed", "expired", "cancelled")
ROUTES = {"chat": "/v1/chat/completions", "completion": "/v1/completions"}
MAX_LINES = 50_000  # the Batch API's limit of requests per batch
# what the OpenAI API supports for chat models, used when no probe is cached (a batch run sends no probe)
OPENAI_CAPABILITIES = Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=True, echo_logprobs=False)


# ------------------------------------------------------------------------------------------------ the store side
def batch_rows(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The batches of a run, oldest first."""
    return store.batch_rows(run_id)


# ------------------------------------------------------------------------------------------------ batch lines
def route_for(endpoint: Endpoint, request: Request) -> str:
    """The batch line's ``url`` and the batch's ``endpoint``: OpenAI's "/v1/..." routes; Azure OpenAI's batch
    takes them without the version prefix ("/chat/completions") and the deployment name as ``model``."""
    route = ROUTES[request.kind]
    return route.removeprefix("/v1") if endpoint.provider == "azure" else route


def jsonl_lines(endpoint: Endpoint, keyed: Iterable[tuple[str, Request]]) -> dict[str, list[str]]:
    """route -> JSONL lines (custom_id = cache key)."""
    out: dict[str, list[str]] = {}
    for key, req in keyed:
        route = route_for(endpoint, req)
        out.setdefault(route, []).append(json.dumps({"custom_id": key, "method": "POST", "url": route,
                                                     "body": request_body(endpoint, req)}, ensure_ascii=False))
    return out


def parse_reply(request: Request, body: dict[str, Any]) -> Response:
    """A batch output line's ``response.body`` -> Response (as the online client converts it)."""
    if isinstance(request, ChatRequest):
        return chat_response(openai.types.chat.ChatCompletion.model_validate(body))
    return completion_response(openai.types.Completion.model_validate(body),
                               prompt=request.prompt if request.echo else None)


# ------------------------------------------------------------------------------------------------ the run's work
def _dataset(dataset_id: str, store: Store) -> Dataset:
    from evalcore import runs

    return runs.get_dataset(dataset_id, store, with_labels=False)


def _plan_offline(m: Method, requested: PromptLabels, sender: runner.CachedSender,
                  capabilities: Capabilities | None) -> tuple[PromptLabels, str, Capabilities]:
    caps = capabilities
    how = ""
    if caps is None:
        caps = runner.cached_probe(sender)
        if caps is not None:
            how = "capabilities from the endpoint's cached probe"
        elif batch_anthropic.handles(sender.endpoint):
            caps = batch_anthropic.CAPABILITIES
            how = ("no cached probe: planned for Anthropic's documented compatibility (no log-probs, n exactly 1)")
        else:
            caps = OPENAI_CAPABILITIES
            how = "no cached probe: planned for the OpenAI API's documented capabilities (chat log-probs, n)"
    planned, note = m.plan(requested, caps)
    return planned, "; ".join(x for x in (note, how) if x), caps


def _requests_of(m: Method, crit: dict[str, Criteria], planned: PromptLabels,
                 tasks: Iterable[ItemTask | PairTask]) -> list[Request]:
    reqs: list[Request] = []
    for t in tasks:
        try:
            reqs += m.build_requests(t, crit[t.dimension], planned)
        except Exception:  # noqa: BLE001 - the engine records this task's method error when it scores
            continue
    return reqs


# ------------------------------------------------------------------------------------------------ submit
@dataclass
class Submitted:
    run_id: str
    batch_ids: list[str]
    requests: int  # lines submitted
    cached: int  # requests the cache already answered (not submitted)
    tasks: int
    note: str = ""


async def asubmit(spec: ScoringSpec, options: EngineOptions, *, store: Store | None = None,
                  completion_window: str = "24h", max_lines: int = MAX_LINES) -> Submitted:
    """Write the run's uncached requests as batches and create them; returns at once (see ``collect``)."""
    if getattr(spec, "draws", 1) > 1:  # a batch carries each item's requests once: draws are scored online
        raise ValueError(f"a batch sends one draw per item; score {spec.draws} draws per item without the Batch API")
    store = store or default_store()
    endpoint = options.first_endpoint  # a batch goes to one API
    dataset, limit, pairs, schedule = spec.dataset, spec.limit, spec.pairs, options.schedule
    m, dims, crit, requested = runner.resolve(spec.method, spec.dimensions, spec.criteria, spec.config)
    sender = runner.CachedSender(None, store, endpoint, options=runner.request_options(spec))
    planned, note, caps = _plan_offline(m, requested, sender, options.capabilities)
    tasks = runner.build_tasks(dataset, m, dims, limit=limit, pairs=pairs)
    run_id = spec.run_id or runner.new_run_id(dataset.id, m.name, endpoint.model)
    pending = [b for b in batch_rows(store, run_id) if not b["collected"]]
    if pending:
        raise RuntimeError(f"run {run_id} has batches not collected yet ({', '.join(b['batch_id'] for b in pending)})"
                           f": run `python -m evalcore batch collect {run_id}` first")
    done = store.done_keys(run_id, pairwise=m.pairwise) if store.run_exists(run_id) else {}
    todo = runner.pending_tasks(tasks, done, m, crit, planned, schedule)
    # each request as the endpoint's learned contract and the spec's reasoning options shape it: the line's body and
    # its custom_id (the cache key) name the same request, as online
    keyed = {sender.key(r): sender.shaped(r) for r in _requests_of(m, crit, planned, todo)}
    hits = store.cache_has(list(keyed))
    missing = [(k, r) for k, r in keyed.items() if k not in hits]
    run_config = runner.run_config(m, spec, runner.Plan(planned, requested, note, caps), endpoint=endpoint,
                                   crit=crit, schedule=schedule, run_id=run_id)
    run_config["mode"] = "batch"
    existed = store.run_exists(run_id)
    store.create_run(run_id=run_id, dataset_id=dataset.id, method=m.name, model=endpoint.model, label=spec.label,
                     config=run_config, parser=getattr(m, "parser", ""), status="batch-submitted",
                     owner=spec.owner)
    ids: list[str] = []
    if missing:
        create = _create_message_batches if batch_anthropic.handles(endpoint) else _create_batches
        await create(store, endpoint, options.api_key, run_id, missing, ids, max_lines=max_lines,
                     completion_window=completion_window, existed=existed)
    run_config["batch"] = {"batch_ids": [b["batch_id"] for b in batch_rows(store, run_id)], "submitted": len(missing),
                           "from_cache": len(keyed) - len(missing), "completion_window": completion_window}
    store.create_run(run_id=run_id, dataset_id=dataset.id, method=m.name, model=endpoint.model, label=spec.label,
                     config=run_config, parser=getattr(m, "parser", ""), status="batch-submitted",
                     owner=spec.owner)
    log.info("run %s: %d batch(es) submitted with %d requests (%d from the cache)", run_id, len(ids), len(missing),
             len(keyed) - len(missing))
    return Submitted(run_id=run_id, batch_ids=ids, requests=len(missing), cached=len(keyed) - len(missing),
                     tasks=len(tasks), note=note)


async def _create_batches(store: Store, endpoint: Endpoint, api_key: str | None, run_id: str,
                          missing: list[tuple[str, Request]], ids: list[str], *, max_lines: int,
                          completion_window: str, existed: bool) -> None:
    """Upload the JSONL files and create the batches (at most ``max_lines`` lines each), recording each batch id
    in ``ids`` and the store as it is made. A failure before the first batch leaves no new run behind."""
    client = JudgeClient(endpoint, api_key=api_key, concurrency=4)
    try:
        with _no_half_made_run(store, run_id, ids, existed):
            try:
                api = client.sdk()
                for route, lines in jsonl_lines(endpoint, missing).items():
                    for i in range(0, len(lines), max_lines):
                        await _create_one_batch(api, client, store, endpoint, run_id, route, lines[i:i + max_lines],
                                                ids, completion_window)
            except openai.APIStatusError as e:
                hint = " (this server has no Batch API: score online instead)" if e.status_code in (404, 405) else ""
                raise RuntimeError(f"{endpoint.base_url}: the Batch API (files, batches) answered HTTP "
                                   f"{e.status_code}{hint}; {len(ids)} batch(es) were submitted before") from None
    finally:
        await client.aclose()


async def _create_one_batch(api: openai.AsyncOpenAI, client: JudgeClient, store: Store, endpoint: Endpoint,
                            run_id: str, route: str, chunk: list[str], ids: list[str], completion_window: str) -> None:
    data = ("\n".join(chunk) + "\n").encode()
    f = await api.files.create(file=(f"evalcore-{len(ids)}.jsonl", io.BytesIO(data)), purpose="batch")
    # the SDK types name OpenAI's own routes and window only: Azure's routes have no "/v1" (route_for), and the
    # window is the caller's, sent as given
    b = await api.batches.create(input_file_id=f.id, endpoint=route,  # type: ignore[arg-type]
                                 completion_window=completion_window,  # type: ignore[arg-type]
                                 metadata={"evalcore_run": run_id[:500]})
    store.add_batch(run_id, b.id, endpoint=endpoint.identity()["base_url"], route=route, input_file_id=f.id,
                    api_key_env=endpoint.api_key_env, status=b.status, total=len(chunk),
                    output_file_id=b.output_file_id, error_file_id=b.error_file_id, errors=_errors_text(b, client))
    ids.append(b.id)


@contextlib.contextmanager
def _no_half_made_run(store: Store, run_id: str, ids: list[str], existed: bool) -> Iterator[None]:
    """Submitting batches (either route): a failure before the first batch was made leaves no new run behind."""
    try:
        yield
    except BaseException:
        if not ids and not existed:
            store.delete_run(run_id)
        raise


async def _create_message_batches(store: Store, endpoint: Endpoint, api_key: str | None, run_id: str,
                                  missing: list[tuple[str, Request]], ids: list[str], *, max_lines: int,
                                  completion_window: str, existed: bool) -> None:
    """Anthropic's Message Batches (evalcore.judge.batch_anthropic): one batch per ``max_lines`` requests, recorded
    as they are made (route ``batch_anthropic.ROUTE``; no files). A failure before the first leaves no new run."""
    import anthropic

    client = batch_anthropic.api(endpoint, api_key)
    step = min(max_lines, batch_anthropic.MAX_REQUESTS)
    try:
        with _no_half_made_run(store, run_id, ids, existed):
            try:
                for i in range(0, len(missing), step):
                    chunk = missing[i:i + step]
                    b = await batch_anthropic.create(client, endpoint, chunk)
                    store.add_batch(run_id, b.id, endpoint=endpoint.identity()["base_url"],
                                    route=batch_anthropic.ROUTE, input_file_id="", api_key_env=endpoint.api_key_env,
                                    total=len(chunk), status=batch_anthropic.status_fields(b)["status"])
                    ids.append(b.id)
            except anthropic.APIStatusError as e:
                raise RuntimeError(f"{endpoint.base_url}: Message Batches answered HTTP {e.status_code}; {len(ids)} "
                                   f"batch(es) were submitted before") from None
    finally:
        await client.close()


# ------------------------------------------------------------------------------------------------ status / collect
@dataclass
class BatchStatus:
    run_id: str
    batches: list[dict[str, Any]]  # batch_id, status, total, completed, failed, collected

    @property
    def done(self) -> bool:
        return all(b["status"] in TERMINAL for b in self.batches)

    @property
    def counts(self) -> dict[str, int]:
        return {k: sum(int(b.get(k) or 0) for b in self.batches) for k in ("total", "completed", "failed")}

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "done": self.done, **self.counts, "batches": self.batches}


def _errors_text(b: openai.types.Batch, client: JudgeClient) -> str | None:
    """A batch's validation errors as stored: each message redacted (a server may echo the key in it)."""
    errs = getattr(getattr(b, "errors", None), "data", None)
    return json.dumps([client.redact(e.message) for e in errs]) if errs else None


def _endpoint_of(store: Store, run_id: str, api_key_env: str | None = None,
                 confirmed_base_url: str | None = None) -> Endpoint:
    """The endpoint the run's batches were submitted to, as recorded. The server's key goes there only when the
    operator configured it, or confirmed it by naming it again (``confirmed_base_url``, the command line's
    ``--base-url``): a recorded URL may be another user's host (evalcore.judge.trust)."""
    row = store.run_row(run_id)
    ident = row["config"].get("endpoint") or {}
    rows = batch_rows(store, run_id)
    env = api_key_env or (rows[0]["api_key_env"] if rows else None) or "OPENAI_API_KEY"
    base = ident.get("base_url", "")
    confirmed = confirmed_base_url is not None and trust.normalize(confirmed_base_url) == trust.normalize(base)
    return Endpoint(base_url=base, model=ident.get("model", row["model"]), api_key_env=env,
                    provider=ident.get("provider", "openai"), api_version=ident.get("api_version"),
                    operator_configured=confirmed)


async def astatus(run_id: str, *, store: Store | None = None, api_key: str | None = None,
                  api_key_env: str | None = None, confirmed_base_url: str | None = None) -> BatchStatus:
    """Ask the API where the run's batches are (and record it)."""
    store = store or default_store()
    rows = batch_rows(store, run_id)
    if not rows:
        if not store.run_exists(run_id):
            raise KeyError(f"no run {run_id!r} in the store {store.path}")
        return BatchStatus(run_id, [])
    endpoint = _endpoint_of(store, run_id, api_key_env, confirmed_base_url)
    client = JudgeClient(endpoint, api_key=api_key, concurrency=4)
    out = []
    try:
        api = client.sdk()
        for r in rows:
            if r["collected"] or r["status"] in TERMINAL:
                out.append(_public(r))
                continue
            if r["route"] == batch_anthropic.ROUTE:
                fields = await _message_batch_status(endpoint, api_key, r["batch_id"])
                store.update_batch(r["endpoint"], r["batch_id"], **fields)
                out.append(_public(r | fields))
                continue
            b = await api.batches.retrieve(r["batch_id"])
            rc = b.request_counts
            fields = dict(status=b.status, completed=int(getattr(rc, "completed", 0) or 0),
                          failed=int(getattr(rc, "failed", 0) or 0), output_file_id=b.output_file_id,
                          error_file_id=b.error_file_id, errors=_errors_text(b, client))
            if rc is not None and getattr(rc, "total", None):
                fields["total"] = int(rc.total)
            store.update_batch(r["endpoint"], r["batch_id"], **fields)
            out.append(_public(r | fields))
    finally:
        await client.aclose()
    return BatchStatus(run_id, out)


async def _message_batch_status(endpoint: Endpoint, api_key: str | None, batch_id: str,
                                cancel: bool = False) -> dict[str, Any]:
    client = batch_anthropic.api(endpoint, api_key)
    try:
        if cancel:
            await client.messages.batches.cancel(batch_id)
        return batch_anthropic.status_fields(await client.messages.batches.retrieve(batch_id))
    finally:
        await client.close()


def _public(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r.get(k) for k in ("batch_id", "route", "status", "total", "completed", "failed", "collected",
                                  "output_file_id", "error_file_id", "errors")}


async def acancel(run_id: str, *, store: Store | None = None, api_key: str | None = None,
                  api_key_env: str | None = None, confirmed_base_url: str | None = None) -> BatchStatus:
    """Ask the API to cancel the run's unfinished batches (``collect`` then records what was not run)."""
    store = store or default_store()
    endpoint = _endpoint_of(store, run_id, api_key_env, confirmed_base_url)
    client = JudgeClient(endpoint, api_key=api_key, concurrency=4)
    try:
        api = client.sdk()
        for r in batch_rows(store, run_id):
            if r["status"] not in TERMINAL and not r["collected"] and r["route"] == batch_anthropic.ROUTE:
                fields = await _message_batch_status(endpoint, api_key, r["batch_id"], cancel=True)
                store.update_batch(r["endpoint"], r["batch_id"], status=fields["status"])
            elif r["status"] not in TERMINAL and not r["collected"]:
                b = await api.batches.cancel(r["batch_id"])
                store.update_batch(r["endpoint"], r["batch_id"], status=b.status)
    finally:
        await client.aclose()
    return await astatus(run_id, store=store, api_key=api_key, api_key_env=api_key_env,
                         confirmed_base_url=confirmed_base_url)


class BatchResults:
    """Stands in for the client when a run is scored from its batches: every answered line is in the cache by then;
    a request that is not gets its batch's reason (``send`` raises it), so the item fails with that reason."""

    def __init__(self, reasons: dict[str, str], default: str, sender_key: Callable[[Request], str],
                 extra: dict[str, Any]) -> None:
        self.reasons = reasons
        self.default = default
        self.key = sender_key
        self.stats = RequestStats()
        self.endpoint = None
        self._extra = extra

    async def send(self, request: Request) -> Response:
        raise RequestFailed(self.reasons.get(self.key(request), self.default), recorded=True)

    # capabilities are always given: a batch run probes nothing
    async def probe(self, send: Callable[[Request], Awaitable[Response]] | None = None) -> Capabilities:  # pragma: no cover
        raise RequestFailed("a batch run sends no probe")

    def extra_stats(self) -> dict[str, Any]:
        return dict(self._extra)

    async def aclose(self) -> None:
        return None


EXPIRED = "batch expired: request not run within the completion window"
CANCELLED = "batch cancelled: request not run"


def _reason_for(line: dict[str, Any]) -> str:
    err = line.get("error")
    if err:
        code = err.get("code") or ""
        msg = err.get("message") or ""
        if code == "batch_expired":
            return EXPIRED
        if code == "batch_cancelled":
            return CANCELLED
        return f"batch error {code}: {msg[:200]}".strip()
    resp = line.get("response") or {}
    body = resp.get("body") or {}
    msg = ""
    if isinstance(body, dict):
        msg = str((body.get("error") or {}).get("message") or "")
    return f"batch: HTTP {resp.get('status_code')}" + (f": {msg[:200]}" if msg else "")


def _not_run_reason(batch: dict[str, Any]) -> str:
    """Why a line of ``batch`` that is in neither its output nor its error file has no reply."""
    return {"expired": EXPIRED, "cancelled": CANCELLED,
            "failed": f"batch failed: {batch.get('errors') or 'rejected by the API'}"}.get(
        batch["status"], f"batch {batch['status']}: request missing from its output")


async def _spool(api: openai.AsyncOpenAI, file_id: str | None, path: Path) -> Path | None:
    """The file's content streamed to ``path`` chunk by chunk (an output file may be hundreds of MB: it is never
    held in memory whole); None when the batch has no such file."""
    if not file_id:
        return None
    async with api.files.with_streaming_response.content(file_id) as resp:
        with open(path, "wb") as out:
            async for chunk in resp.iter_bytes():
                out.write(chunk)
    return path


def _lines(path: Path | None) -> Iterator[dict[str, Any]]:
    """The JSON lines of a spooled batch file, one at a time (a line that is not JSON is logged and skipped)."""
    if path is None:
        return
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, ln in enumerate(f):
            if not ln.strip():
                continue
            try:
                line = json.loads(ln)
            except json.JSONDecodeError:
                log.warning("batch file %s line %d is not JSON; skipped", path.name, i + 1)
                continue
            if isinstance(line, dict):
                yield line


def _custom_ids(*paths: Path | None) -> Counter[str]:
    """How many lines of the files carry each custom_id."""
    return Counter(str(line.get("custom_id") or "") for p in paths for line in _lines(p))


@dataclass
class Collected:
    run: Run | None
    status: BatchStatus


@dataclass
class _Recorded:
    """A batch run as its record describes it: the method, its planned config, the criteria, the capabilities."""

    cfg: dict[str, Any]
    method: Method
    crit: dict[str, Criteria]
    caps: Capabilities
    planned: PromptLabels

    @classmethod
    def of(cls, cfg: dict[str, Any]) -> _Recorded:
        from evalcore.types import Criteria

        crit = {d: Criteria(**{k: v for k, v in c.items() if k != "hash"}) for d, c in cfg["criteria"].items()}
        caps = Capabilities(**cfg["capabilities"])
        m = runner.method_of(cfg["method"])
        return cls(cfg, m, crit, caps, runner.method_config_of(m, cfg["method_config"]))

    def requests(self, dataset: Dataset) -> list[Request]:
        """The requests of the run's whole work, as submitted (a batch line's custom_id is one of their keys)."""
        tasks = runner.build_tasks(dataset, self.method, list(self.crit), limit=self.cfg.get("limit"),
                                   pairs=_pairs(self.cfg))
        return _requests_of(self.method, self.crit, self.planned, tasks)


@dataclass
class _Tally:
    """What the batches' output and error lines said, line by line."""

    reasons: dict[str, str] = field(default_factory=dict)  # cache key -> why the request has no reply
    answered: int = 0
    failed_lines: int = 0
    duplicate_lines: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0,
                                                            "cached_prompt_tokens": 0})

    def duplicate(self, key: str, times: int) -> None:
        """A custom_id on several lines of one batch's files: a server that answers one request twice is trusted
        with neither reply (which one is right?), so every such line is a failed line and no token is counted."""
        self.reasons[key] = (f"batch: custom_id answered {times} times in one batch's output; none of the replies "
                             f"is used (submit again with --run to send it)")
        self.failed_lines += times
        self.duplicate_lines += times

    def reply(self, key: str, request: Request, line: dict[str, Any]) -> Response | None:
        """The line's reply, or None with the reason recorded (an error line, a malformed body)."""
        resp = line.get("response") or {}
        if resp.get("status_code") != 200 or line.get("error"):
            self.reasons[key] = _reason_for(line)
            self.failed_lines += 1
            return None
        try:
            r = parse_reply(request, resp.get("body") or {})
        except (ValueError, TypeError) as e:
            self.reasons[key] = f"batch: malformed response body ({type(e).__name__})"
            self.failed_lines += 1
            return None
        self.answered += 1
        self.tokens["prompt_tokens"] += int(r.usage.get("prompt_tokens", 0) or 0)
        self.tokens["completion_tokens"] += int(r.usage.get("completion_tokens", 0) or 0)
        self.tokens["cached_prompt_tokens"] += int(r.usage.get("cached_tokens", 0) or 0)
        return r

    def stats(self, st: BatchStatus) -> dict[str, Any]:
        """The run's ``batch`` stats (recorded with the run's own)."""
        return {"batch": {"batch_ids": [b["batch_id"] for b in st.batches],
                          "statuses": [b["status"] for b in st.batches], "answered_lines": self.answered,
                          "failed_lines": self.failed_lines, "duplicate_lines": self.duplicate_lines,
                          **self.tokens,
                          "not_run_lines": sum(1 for v in self.reasons.values() if "not run" in v or "missing" in v)}}


async def acollect(run_id: str, *, store: Store | None = None, api_key: str | None = None,
                   api_key_env: str | None = None, confirmed_base_url: str | None = None, wait: bool = True,
                   poll_s: float = 30.0,
                   progress: Callable[[BatchStatus], None] | None = None, dataset: Dataset | None = None) -> Collected:
    """Wait for the run's batches (unless ``wait=False``), store their replies in the cache and score the run.
    Returns the scored Run, or ``run=None`` with the status when the batches are still running and wait is off."""
    store = store or default_store()
    # the endpoint the caller confirmed goes to every call of this collection: the polls and the final status too
    confirmed = dict(api_key=api_key, api_key_env=api_key_env, confirmed_base_url=confirmed_base_url)
    st = await _await_batches(run_id, store=store, wait=wait, poll_s=poll_s, progress=progress, **confirmed)
    if not st.done:
        return Collected(None, st)
    row = store.run_row(run_id)
    endpoint = _endpoint_of(store, run_id, api_key_env, confirmed_base_url)
    ds = dataset if dataset is not None else _dataset(row["dataset_id"], store)
    recorded = _Recorded.of(row["config"])
    spec_rec = row["config"].get("spec") or {}
    sender = runner.CachedSender(None, store, endpoint, options=RequestOptions(
        reasoning_effort=spec_rec.get("reasoning_effort"), max_completion_tokens=spec_rec.get("max_completion_tokens")))
    by_key = {sender.key(r): sender.shaped(r) for r in recorded.requests(ds)}
    tally = _Tally()
    client = JudgeClient(endpoint, api_key=api_key, concurrency=4)
    try:
        api = client.sdk()
        for b in batch_rows(store, run_id):
            if not b["collected"] and b["route"] == batch_anthropic.ROUTE:
                await _collect_message_batch(store, b, endpoint, api_key, by_key, tally)
            elif not b["collected"]:
                await _collect_batch(api, store, b, endpoint, by_key, tally)
    finally:
        await client.aclose()
    results = BatchResults(tally.reasons, "not answered by the run's batches (submit again with --run to send it)",
                           sender.key, tally.stats(st))
    run = await _score_from_cache(store, run_id, row, ds, recorded, endpoint, results)
    return Collected(run, await astatus(run_id, store=store, **confirmed))


async def _await_batches(run_id: str, *, store: Store, api_key: str | None, api_key_env: str | None,
                         confirmed_base_url: str | None, wait: bool, poll_s: float,
                         progress: Callable[[BatchStatus], None] | None) -> BatchStatus:
    """The batches' status, polled every ``poll_s`` until they all ended (once only when ``wait`` is off)."""
    while True:
        st = await astatus(run_id, store=store, api_key=api_key, api_key_env=api_key_env,
                           confirmed_base_url=confirmed_base_url)
        if progress is not None:
            progress(st)
        if st.done or not wait:
            return st
        await asyncio.sleep(poll_s)


async def _collect_batch(api: openai.AsyncOpenAI, store: Store, b: dict[str, Any], endpoint: Endpoint,
                         by_key: dict[str, Request], tally: _Tally) -> None:
    """Store one ended batch's replies under their cache keys (where an online run would have put them), note why
    each other line of it has none, and mark the batch collected. The output, error and input files are streamed to
    a temporary folder and read line by line; replies are stored in slices of ``_CACHE_SLICE``."""
    with tempfile.TemporaryDirectory(prefix="evalcore-batch-") as tmp:
        files = [await _spool(api, b[k], Path(tmp) / k) for k in ("output_file_id", "error_file_id")]
        times = _custom_ids(*files)
        rows: list[dict[str, Any]] = []
        for line in (line for p in files for line in _lines(p)):
            key = str(line.get("custom_id") or "")
            req = by_key.get(key)
            if req is None:
                continue  # a line of another version of the work (criteria edited since): not ours to store
            if times[key] > 1:
                if key not in tally.reasons:
                    tally.duplicate(key, times[key])
                continue
            reply = tally.reply(key, req, line)
            if reply is not None:
                rows.append({"key": key, "endpoint": endpoint.identity(), "request": req.params(),
                             "response": runner.response_to_dict(reply), "latency_s": 0.0})
            if len(rows) >= _CACHE_SLICE:
                store.cache_put_many(rows)
                rows = []
        store.cache_put_many(rows)
        not_run = _not_run_reason(b)
        for key in _custom_ids(await _spool(api, b["input_file_id"], Path(tmp) / "input_file_id")):
            if key not in times:
                tally.reasons.setdefault(key, not_run)
    store.update_batch(b["endpoint"], b["batch_id"], collected=1)


_CACHE_SLICE = 2000  # replies stored per write transaction while a batch is collected


async def _collect_message_batch(store: Store, b: dict[str, Any], endpoint: Endpoint, api_key: str | None,
                                 by_key: dict[str, Request], tally: _Tally) -> None:
    """An ended Message Batch: every request has a result line (succeeded, errored, canceled, expired), read as the
    OpenAI batch's lines are (``batch_anthropic.chat_line``) and stored under the online cache keys."""
    client = batch_anthropic.api(endpoint, api_key)
    rows: list[dict[str, Any]] = []
    seen: Counter[str] = Counter()
    try:
        async for line in batch_anthropic.results(client, endpoint, b["batch_id"]):
            key = line["custom_id"]
            seen[key] += 1
            req = by_key.get(key)
            if req is None:
                continue
            if seen[key] > 1:  # one request answered twice: neither reply is trusted
                if seen[key] == 2:
                    tally.duplicate(key, 2)
                rows = [r for r in rows if r["key"] != key]
                continue
            reply = tally.reply(key, req, line)
            if reply is not None:
                rows.append({"key": key, "endpoint": endpoint.identity(), "request": req.params(),
                             "response": runner.response_to_dict(reply), "latency_s": 0.0})
    finally:
        await client.close()
    store.cache_put_many(rows)
    store.update_batch(b["endpoint"], b["batch_id"], collected=1)


async def _score_from_cache(store: Store, run_id: str, row: dict[str, Any], ds: Dataset, recorded: _Recorded,
                            endpoint: Endpoint, results: BatchResults) -> Run:
    """Score the run through the normal engine: every reply is in the cache now; ``results`` fails the rest with
    their batch's reason."""
    cfg = recorded.cfg
    # the run's own spec (its document sample included), or for a run recorded before specs were, its config's
    spec = ScoringSpec.from_run_config(cfg, ds, run_id=run_id, label=row.get("label") or "")
    options = EngineOptions(endpoint, capabilities=recorded.caps, schedule="as-given")
    return await runner.ascore_dataset(
        spec, options, store=store, client=results,
        extra_config={"mode": "batch", "batch": {**(cfg.get("batch") or {}), **results.extra_stats()["batch"]},
                      "plan_note": cfg.get("plan_note", ""), "requested_config": cfg.get("requested_config")})


def _pairs(cfg: dict[str, Any]) -> Any:
    return pairs_from_described(cfg.get("pairs"))


# ------------------------------------------------------------------------------------------------ sync wrappers
def submit(spec: ScoringSpec, options: EngineOptions, *, store: Store | None = None, completion_window: str = "24h",
           max_lines: int = MAX_LINES) -> Submitted:
    """``asubmit`` from sync code."""
    return runner.run_sync(lambda: asubmit(spec, options, store=store, completion_window=completion_window,
                                           max_lines=max_lines))


def status(run_id: str, *, store: Store | None = None, api_key: str | None = None, api_key_env: str | None = None,
           confirmed_base_url: str | None = None) -> BatchStatus:
    return runner.run_sync(lambda: astatus(run_id, store=store, api_key=api_key, api_key_env=api_key_env,
                                           confirmed_base_url=confirmed_base_url))


def cancel(run_id: str, *, store: Store | None = None, api_key: str | None = None, api_key_env: str | None = None,
           confirmed_base_url: str | None = None) -> BatchStatus:
    return runner.run_sync(lambda: acancel(run_id, store=store, api_key=api_key, api_key_env=api_key_env,
                                           confirmed_base_url=confirmed_base_url))


def collect(run_id: str, *, store: Store | None = None, api_key: str | None = None, api_key_env: str | None = None,
            confirmed_base_url: str | None = None, wait: bool = True, poll_s: float = 30.0,
            progress: Callable[[BatchStatus], None] | None = None, dataset: Dataset | None = None) -> Collected:
    return runner.run_sync(lambda: acollect(run_id, store=store, api_key=api_key, api_key_env=api_key_env,
                                            confirmed_base_url=confirmed_base_url, wait=wait, poll_s=poll_s,
                                            progress=progress, dataset=dataset))


def score_dataset_batch(spec: ScoringSpec, options: EngineOptions, *, store: Store | None = None,
                        wait: bool = True, poll_s: float = 30.0,
                        progress: Callable[[BatchStatus], None] | None = None, completion_window: str = "24h",
                        max_lines: int = MAX_LINES) -> Collected:
    """``submit`` then (``wait``) ``collect``: the Batch API counterpart of ``runner.score_dataset``."""
    sub = submit(spec, options, store=store, completion_window=completion_window, max_lines=max_lines)
    ep = options.first_endpoint
    # the endpoint just submitted to, if the caller's own: the same one is asked again (not a recorded stranger's)
    confirmed = ep.base_url if ep.operator_configured else None
    if not wait and sub.batch_ids:  # nothing submitted (all cached): score it now
        return Collected(None, status(sub.run_id, store=store, api_key=options.api_key,
                                      confirmed_base_url=confirmed))
    return collect(sub.run_id, store=store, api_key=options.api_key, poll_s=poll_s, progress=progress,
                   dataset=spec.dataset, confirmed_base_url=confirmed)


__all__ = ["submit", "asubmit", "status", "astatus", "cancel", "acancel", "collect", "acollect",
           "score_dataset_batch", "BatchStatus", "Submitted", "Collected", "request_body", "jsonl_lines",
           "OPENAI_CAPABILITIES", "batch_rows"]
