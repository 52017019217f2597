"""Score page: what a run would ask for (requests, tokens, cost), how a run goes, and what a scored run holds (its
cost, batches, endpoints and failures), as view blocks (evalcore.views.blocks). How a finished run went is
``evalcore.runs.run_outcome``: the command line says the same."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from evalcore.model import STATUS_FAILED, STATUS_OK, Dataset, Run, counted
from evalcore.runs import FEW, RunOutcome, run_outcome  # noqa: F401 - the page reads them here
from evalcore.views.blocks import Action, Block, Expander, Metric, Metrics, Note, Table
from evalcore.views.format import esc
from evalcore.views.provenance import fingerprint_blocks

if TYPE_CHECKING:
    from evalcore.judge.client import Endpoint
    from evalcore.judge.job import ScoringJob
    from evalcore.judge.runner import Estimate, Progress
    from evalcore.spec import ScoringSpec
    from evalcore.store import Store


def failures_table(run: Run, *, shared: bool = False) -> pd.DataFrame:
    """The judgments (or comparisons) whose reply could not be read, with the raw reply and the reason. On a lab
    server (``shared``, evalcore.judge.trust.shared_server) a request that failed says only its short status line
    (redact.status_line: "HTTP 403"), never the endpoint's error body: an internal service's words are not read
    back through a page."""
    if not run.judgments.empty:
        j = run.judgments[run.judgments["status"] != STATUS_OK]
        out = j[["item_id", "dimension", "reason", "raw"]].reset_index(drop=True)
    elif not run.comparisons.empty:
        c = run.comparisons[run.comparisons["status"] != STATUS_OK]
        out = c[["pair_id", "dimension", "order", "reason", "raw"]].reset_index(drop=True)
    else:
        return pd.DataFrame(columns=["item_id", "dimension", "reason", "raw"])
    if shared:
        out = _status_only(out, (j if not run.judgments.empty else c)["status"].reset_index(drop=True))
    return out


def _status_only(table: pd.DataFrame, status: pd.Series) -> pd.DataFrame:
    """The failures of requests (status "failed": what the endpoint answered instead of a reply) as status lines;
    a reply that could not be read keeps its reason and raw text (the judge's own answer)."""
    from evalcore.judge.redact import status_line

    sent = status == STATUS_FAILED
    table = table.copy()
    table.loc[sent, "reason"] = [status_line(r) + " (the endpoint's message is not shown on a shared server)"
                                 for r in table.loc[sent, "reason"]]
    table.loc[sent, "raw"] = ""
    return table


def default_method(dataset: Dataset) -> str:
    """The method the Score page opens on for a dataset. Humans who voted on pairs are compared with a pairwise judge:
    on summaries Shen et al.'s head-to-head (``h2h``, 003: two summaries of one article), on chat and instruction
    following MT-Bench's judge (``mtbench``, Zheng et al. 2023: two assistants' answers to one question); per-item
    ratings with G-Eval (``geval``, 000), the first method."""
    from evalcore.methods import presets

    if dataset.preferences.empty:
        return "geval"
    return "h2h" if presets.task_kind(dataset.id, dataset.task) == "summarization" else "mtbench"


_EXCEPTION_NAME = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning)\s*:\s*")


def plain_error(error: BaseException | str | None) -> str:
    """An error as a reader is told it: its message without Python's class name ("ValueError: ..." reads as a
    crash); the class name in words only when the message is empty."""
    if error is None:
        return ""
    if isinstance(error, BaseException):
        text = str(error).strip()
        return text or f"unexpected {type(error).__name__}"
    return _EXCEPTION_NAME.sub("", str(error), count=1)


def error_note(prefix: str, error: BaseException | str | None, kind: str = "error") -> Note:
    """``prefix`` and the error in plain words, escaped (an endpoint's message may quote anything)."""
    return Note(esc(prefix + plain_error(error)), kind)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ what to score
@dataclass(frozen=True)
class Sample:
    """What a run scores: the dataset (restricted to the drawn documents, if any), those documents, the item limit
    left (0 where the documents decide), and what the page says about it."""

    dataset: Dataset
    documents: tuple[str, ...] | None
    limit: int
    notes: tuple[Block, ...] = ()


def sample(ds: Dataset, *, pairwise: bool, limit: int, documents: int, seed: int, how: str,
           dimension: str | None) -> Sample:
    """``documents`` whole documents drawn (seeded, evalcore.sampling) with every system's output for each, or the
    first ``limit`` items; a pairwise method takes neither documents (its unit is the pair)."""
    if documents and not pairwise:
        from evalcore.sampling import documents_subset, sample_documents

        picked = sample_documents(ds, int(documents), seed=int(seed), how=how, dimension=dimension)
        sub = documents_subset(ds, picked)
        text = (f"Scoring {counted(len(picked), 'whole document')} ({counted(len(sub.items), 'item')}, {how}, seed "
                f"{int(seed)})" + ("; on one document there is no interval (a bootstrap over documents has nothing "
                                   "to resample)." if len(picked) == 1 else
                                   "; fewer than 10 documents: every interval will be unreliable."
                                   if len(picked) < 10 else "."))
        return Sample(sub, tuple(str(d) for d in picked), 0, (Note(esc(text), "caption"),))
    if limit and not pairwise:
        return Sample(ds, None, int(limit), (Note("Items = N scores the first N rows: a few documents only. Prefer "
                                                  "whole documents (above).", "caption"),))
    return Sample(ds, None, int(limit))


def replicas(text: str) -> list[str]:
    """The replicas' base URLs, one per line."""
    return [u.strip() for u in text.splitlines() if u.strip()]


def replica_notes(replica_text: str, *, use_batch: bool) -> list[Block]:
    if use_batch and replicas(replica_text):
        return [Note("The Batch API sends one batch to the first endpoint; the replicas are used by online runs "
                     "only.", "caption")]
    return []


def judge_check(endpoint: Endpoint, *, store: Store, api_key: str | None, reprobe: bool, effort: str | None,
                budget: int | None, shared: bool = False) -> tuple[str | None, Note | None]:
    """"Check this judge": a few cheap requests (cached) and what they found, as text; or why the check failed.
    The endpoint's own words are not shown: a failure is a short status line ("HTTP 403"), and on a lab server
    (``shared``, evalcore.judge.trust.shared_server) a local preset is sent only to an address the operator
    configured, and the refusals' messages are left out. The command line's ``check-judge`` (the operator's) prints
    them."""
    from evalcore.judge import trust
    from evalcore.judge.check import check_judge, format_check
    from evalcore.judge.client import MissingApiKey
    from evalcore.judge.contract import RequestOptions
    from evalcore.judge.redact import status_line

    refused = trust.local_refusal(endpoint, shared=shared)
    if refused:
        return None, Note(esc(f"The check was not sent: {refused}"), "error")
    try:
        report = check_judge(endpoint, store=store, api_key=api_key, reprobe=reprobe,
                             options=RequestOptions(effort or None, budget or None))
    except (trust.UntrustedEndpoint, MissingApiKey) as e:  # our own words: nothing was sent
        return None, Note(esc(f"The check failed: {e}"), "error")
    except Exception as e:  # noqa: BLE001 - what the endpoint answered, as a status line only
        return None, Note(esc(f"The check failed: {trust.host_of(endpoint.base_url)} answered {status_line(str(e))}"
                              " (the endpoint's own message is not shown here; the command line's check-judge "
                              "prints it)."), "error")
    if shared:
        report.contract = {p: {**r, "message": "(its message is not shown on a shared server)"}
                           for p, r in report.contract.items()}
    return format_check(report), None


# ----------------------------------------------------------------------------------------------------- estimate
# A plan above this many requests is estimated (its requests built, their tokens and cache hits counted) only when
# asked, not on opening a link to it (issue 21, item 2: h2h on every pair and dimension of SummEval is 96,000).
EAGER_ESTIMATE_REQUESTS = 5_000
REQUESTS_HELP = "items (or ordered pairs) x dimensions x requests per task"


def cost_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A cost table (evalcore.judge.cost.cost_table) for display: numbers formatted, 'unknown' where the model's
    price is unknown."""
    def usd(x: float | None, digits: int) -> str:
        return "unknown" if x is None else f"{x:,.{digits}f}"

    return pd.DataFrame([{"Tokens": r["tokens"], "Count": f"{r['count']:,}",
                          "USD per 1M (online)": "" if r["tokens"] == "total" else usd(r["usd_per_1m"], 3),
                          "USD (online)": usd(r["usd"], 4),
                          "USD per 1M (Batch API)": "" if r["tokens"] == "total" else usd(r["batch_usd_per_1m"], 3),
                          "USD (Batch API)": usd(r["batch_usd"], 4)} for r in rows])


def estimate_cost(est: Estimate, *, use_batch: bool) -> float | None:
    """What the calls to send cost, online or through the Batch API (None: the model's price is unknown)."""
    return est.cost_usd_batch if use_batch else est.cost_usd


def estimate_blocks(est: Estimate, *, use_batch: bool) -> list[Block]:
    """What a run would ask for: requests (duplicates and cache hits apart from what goes out), then tokens and cost
    of the calls that go out (online, or through the Batch API)."""
    cost = estimate_cost(est, use_batch=use_batch)
    out: list[Block] = [
        Note("**Requests**", "markdown"),
        Metrics((Metric("Requests", f"{est.requests:,}", REQUESTS_HELP),
                 Metric("Duplicate outputs", f"{est.duplicates:,}",
                        "requests identical to another one of this run (the same text to rate): sent once, the "
                        "copies read the reply back"),
                 Metric("Cache hits", f"{est.cache_hits:,}", "replies an earlier run already stored: not sent again"),
                 Metric("Calls to send", f"{est.calls:,}", "requests - duplicate outputs - cache hits"))),
        Note("**Tokens and cost** (of the calls to send)", "markdown"),
        Metrics((Metric("Prompt tokens", f"{est.prompt_tokens:,}", "characters / 4: a rough count"),
                 Metric("Completion tokens (max)", f"{est.completion_tokens:,}",
                        "max_tokens x samples: an upper bound"),
                 Metric("Cost, Batch API (USD)" if use_batch else "Cost (USD)",
                        "unknown" if cost is None else f"{cost:,.2f}" if cost >= 1 else f"{cost:.4f}",
                        "unknown when the model's price is not in the price list"))),
    ]
    if est.note:
        out.append(Note(esc(est.note), "caption"))
    out.append(Expander("Cost by kind of token: cached prompt tokens, online vs Batch API", (
        Table(cost_frame(est.cost_rows), "cost estimate", "cost_table"),
        Note("Cached prompt tokens: the expected prefix repeated from a recent request in the scheduled order (the "
             "provider's prompt cache: OpenAI caches prompts of 1,024 tokens or more). Completion tokens are an "
             "upper bound (max_tokens x samples).", "caption"))))
    return out


def large_plan(n_requests: int) -> tuple[list[Block], Action] | None:
    """For a plan over ``EAGER_ESTIMATE_REQUESTS`` requests: its request count and the button that builds its
    estimate (None: a smaller plan is estimated at once)."""
    if n_requests <= EAGER_ESTIMATE_REQUESTS:
        return None
    return ([Metrics((Metric("Requests", f"{n_requests:,}", REQUESTS_HELP),)),
             Note(f"A large plan (over {EAGER_ESTIMATE_REQUESTS:,} requests): its calls, tokens and cost are worked "
                  "out when you ask, not on opening the page. Nothing is sent either way.", "caption")],
            Action("Estimate calls and cost", "estimate_now"))


def start_action(est: Estimate | None, *, use_batch: bool, running: bool) -> Action:
    """"Start scoring": the estimate's calls and cost; not while a run is going, nor without an estimate (the
    page says why above). The spending rule (evalcore.judge.spending) decides the rest."""
    if est is None:
        return Action("Start scoring", "start_scoring", allowed=False)
    return Action("Start scoring", "start_scoring", calls=int(est.calls),
                  cost_usd=estimate_cost(est, use_batch=use_batch), allowed=not running)


def new_job(spec: ScoringSpec, endpoint: Endpoint, *, replica_text: str = "", use_batch: bool, api_key: str | None,
            concurrency: int, reprobe: bool, store: Store, owner: str | None, charged_usd: float | None = None
            ) -> ScoringJob:
    """A scoring job (evalcore.judge.job) for ``spec`` on ``endpoint`` and its replicas (online runs only: the Batch
    API sends one batch to the first endpoint), recorded as ``owner``'s run. Not started. An online run on a paid
    endpoint counts what its replies cost against ``owner``'s budget (``charged_usd``: the estimate charged at the
    click) and stops at the operator's cap (evalcore.judge.spending.Meter); a Batch API run is charged what its
    replies cost, at the Batch API's rates, when this job collects it. On a PostgreSQL store an online run on the
    operator's key is queued for a worker (evalcore.workers.QueuedScoringJob), its meter too, and a Batch API run's
    collection is a worker's job (evalcore.workers.QueuedBatchJob); a key typed in the browser never leaves the
    session, so such a run is scored in the app's thread."""
    from evalcore.judge.job import ScoringJob
    from evalcore.judge.runner import new_run_id
    from evalcore.judge.spec import EngineOptions
    from evalcore.judge.spending import Meter

    urls = [] if use_batch else replicas(replica_text)
    target = [endpoint] + [dataclasses.replace(endpoint, base_url=u) for u in urls] if urls else endpoint
    run_id = new_run_id(spec.dataset.id, spec.method, endpoint.model)
    meter = Meter.for_run(store, owner, endpoint, reserved=charged_usd, batch=use_batch,
                          what=f"score {spec.dataset.id} {spec.method} ({run_id})")
    job_class = ScoringJob
    if api_key is None:  # the operator's key (a metered run's meter travels in the store)
        from evalcore import workers

        if workers.queued(store):  # PostgreSQL: a worker scores it, or collects its batches (lab-server.md#workers)
            job_class = workers.QueuedBatchJob if use_batch else workers.QueuedScoringJob
    return job_class(run_id=run_id, spec=dataclasses.replace(spec, owner=owner),
                      engine=EngineOptions(target, api_key=api_key, concurrency=int(concurrency),
                                           reprobe=bool(reprobe)),
                      store=store, batch=bool(use_batch), meter=meter)


# ----------------------------------------------------------------------------------------------------- progress
# a queued run no worker has taken after this long: the page says that none seems to be running
NO_WORKER_AFTER_S = 15.0
WORKER_COMMAND = "python -m evalcore worker"


def queue_blocks(job: ScoringJob, *, now: float | None = None) -> list[Block]:
    """What the page says of a run queued for a worker (evalcore.workers.QueuedScoringJob; nothing for a run scored
    in the app's thread): that a worker scores it, and, when none has taken it ``NO_WORKER_AFTER_S`` after it was
    queued, that no worker seems to be running, with the command that starts one. ``now``: time.monotonic()."""
    import time

    queued_at = getattr(job, "queued_at", None)
    if queued_at is None or not job.running:
        return []
    if getattr(job, "claimed", False):
        return [Note("A worker is scoring this run (the store's job queue): it goes on if you close this tab; "
                     "Cancel stops it wherever it runs.", "caption")]
    waited = (time.monotonic() if now is None else now) - queued_at
    out: list[Block] = [Note("This run is queued: a worker process scores it, not this page. It goes on if you "
                             "close this tab.", "info")]
    if waited >= NO_WORKER_AFTER_S:
        out.append(Note(f"No worker has taken it in {waited:,.0f} s: none seems to be running. On the server, "
                        f"start one with `{WORKER_COMMAND}` (with the app's EVALCORE_DB; see the lab-server "
                        "guide's Workers section).", "warning"))
    return out


def progress_line(progress: Progress | None) -> tuple[float, str]:
    """The progress bar's share done and its line (evalcore.judge.runner.Progress; None: not started yet)."""
    p = progress
    if p is None:
        return 0.0, "starting (probing the endpoint)…"
    frac = p.done / p.total if p.total else 0.0
    eta = "" if p.eta_s is None else f" · ETA {p.eta_s:,.0f} s"
    return min(frac, 1.0), (f"{p.done:,} / {p.total:,} done · {p.cached:,} from cache · {p.failed:,} failed · "
                            f"{p.retrying:,} retrying{eta}")


def finished_blocks(job: ScoringJob) -> list[Block]:
    """How a job that has stopped went: its refusal, its error, a cancel, or how many it scored (when none or few,
    why)."""
    if getattr(job, "refused", False):  # the run is not this user's: nothing was sent
        return [error_note("Not started: ", job.error)]
    if job.error:
        return [error_note("The run stopped: ", job.error)]
    if job.cancel.is_set():
        return [Note("Cancelled. Finished judgments are kept; resume to score the rest.", "warning")]
    outcome = run_outcome(job.run)
    if outcome.level == "success":
        return [Note("Done.", "success"), Note(outcome.text, "caption")]
    return [Note(esc(outcome.text), outcome.level)]  # type: ignore[arg-type]


def resume_offer(job: ScoringJob, *, ready: bool, typed_for: str | None) -> tuple[list[Block], Action] | None:
    """"Resume" for a job that stopped on an error or a cancel (None otherwise): refused while the key typed in
    this session is for another endpoint than the run's (evalcore.judge.trust), which the note says."""
    if getattr(job, "refused", False) or not (job.error or job.cancel.is_set()):
        return None  # a refused run is not resumed either: the note says to score under a new run name
    from evalcore.judge import trust

    elsewhere = trust.typed_key_elsewhere(job.engine.first_endpoint.base_url, typed_for)
    notes: list[Block] = [Note(esc(elsewhere), "caption")] if elsewhere else []
    return notes, Action("Resume", "resume_scoring", allowed=ready and not elsewhere)


# ---------------------------------------------------------------------------------------------- runs scored here
_SAID_STATUSES = ("interrupted", "running", "cancelled", "stopped")


def run_labels(runs: list[Run]) -> dict[str, str]:
    """Each local run's name, with its status where it needs saying: a run whose process is gone is "interrupted"
    (resume it), not "running" forever."""
    from evalcore.views.common import run_names

    names = run_names(runs)
    return {r.run_id: names[r.run_id] + (f"  [{r.config.status}]" if r.config.status in _SAID_STATUSES
                                         else "") for r in runs}


def owner_line(run: Run) -> str | None:
    """Who started the run and whether the lab sees it (None: a run without an owner, on a server without
    sign-in)."""
    owner = run.config.owner
    if not owner:
        return None
    return f"Started by {owner}" + (", shared with the lab" if run.config.shared else ", private")


def resume_note(run: Run) -> str | None:
    """What the page says above the resume command of an interrupted or stopped run (None: nothing to resume)."""
    status = run.config.status
    if status not in ("interrupted", "stopped"):
        return None
    return (f"This run is {status}: its finished judgments are kept. Resume it from the command line (answered "
            "requests come from the cache):")


def batch_blocks(run: Run, *, store: Store, ready: bool, typed_for: str | None, running: bool
                 ) -> tuple[list[Block], Action | None]:
    """The run's Batch API batches, and "Check and collect batch results" while one is uncollected and no run is
    going: refused while the key typed in this session is for another endpoint than the run's."""
    from evalcore.judge import batch as batch_mod
    from evalcore.judge import trust

    batches = batch_mod.batch_rows(store, run.run_id)
    if not batches:
        return [], None
    out: list[Block] = [
        Note("**Batches of this run** (the provider's Batch API: OpenAI's, or Anthropic's Message Batches)",
             "markdown"),
        # counts the provider has not reported yet stay blank: not 0 requests
        Table(pd.DataFrame([{"batch": b["batch_id"], "status": b["status"], "requests": b["total"],
                             "answered": b["completed"], "failed": b["failed"],
                             "collected": "yes" if b["collected"] else "no"} for b in batches]),
              f"batches {run.run_id}", "batches")]
    if all(b["collected"] for b in batches) or running:
        return out, None
    mismatch = trust.typed_key_elsewhere((run.config.endpoint or {}).get("base_url", ""), typed_for)
    if mismatch:
        out.append(Note(esc(mismatch), "caption"))
    return out, Action("Check and collect batch results", "collect_batches", allowed=ready and not mismatch)


def collect_batches(run_id: str, *, store: Store, api_key: str | None) -> Note | None:
    """Ask the Batch API once for the run's results (no wait): None when they are in (the run is complete), else
    what to say (still running, or why it could not collect)."""
    from evalcore.judge import batch as batch_mod

    try:
        col = batch_mod.collect(run_id, store=store, api_key=api_key, wait=False)
    except Exception as e:  # noqa: BLE001 - shown with its reason
        return error_note("Could not collect: ", e)
    if col.run is not None:
        return None
    c = col.status.counts
    return Note(f"Still running: {c['completed']:,} of {c['total']:,} answered. Check again later.", "info")


def run_details(run: Run, *, shared: bool = False) -> list[Block]:
    """A scored run: its tokens and cost as the endpoint reported them, the endpoints that answered, the method's
    variant on this judge, its counts, and its failures with their raw replies (on a lab server, ``shared``, a
    failed request as its status line only: :func:`failures_table`)."""
    info = run.summary()
    out = _run_cost(run) + _run_endpoints(run)
    if run.config.variant:  # what the judge's contract changed in the method (evalcore.judge.contract)
        out.append(Note(esc("As it ran on this judge: " + run.config.variant), "caption"))
    out += fingerprint_blocks(run)  # what must be equal for two runs to be the same judge
    drawn = (Metric("Draws per item", str(run.n_draws), help="each judgment is the mean of its draws (the mode for "
                    "a label); the Alignment page's reliability section reads them"),) if run.n_draws > 1 else ()
    out.append(Metrics((Metric("Judgments", str(info["judgments"])), Metric("Failed", str(info["failed"])),
                        Metric("Dimensions", esc(", ".join(info["dimensions"]) or "-")), *drawn)))
    out.append(Note("**Failures with their raw replies**", "markdown"))
    fails = failures_table(run, shared=shared)
    out.append(Note("No failures.", "caption") if fails.empty else Table(fails, f"failures {run.run_id}", "failures"))
    return out


def _run_cost(run: Run) -> list[Block]:
    """Tokens and cost of the run (Batch API prices when it went through the Batch API); none without token counts."""
    from evalcore.judge.cost import cost_table

    stats = run.config.stats
    batch = stats.get("batch")
    used: Mapping[str, Any] = batch if isinstance(batch, dict) and "prompt_tokens" in batch else stats
    if not used.get("prompt_tokens"):
        return []
    ident = run.config.endpoint or {}
    rows = cost_table(int(used.get("prompt_tokens", 0)), int(used.get("completion_tokens", 0)),
                      cached_prompt_tokens=int(used.get("cached_prompt_tokens", 0)),
                      model=ident.get("model", run.model), provider=ident.get("provider", "openai"))
    return [Expander("Tokens and cost of this run (as the endpoint reported them)", (
        Table(cost_frame(rows), f"cost {run.run_id}", "run_cost"),
        Note(("Scored through the Batch API: the Batch API columns apply. " if used is not stats else "")
             + "Requests answered from the cache cost nothing and are not counted.", "caption")))]


def _run_endpoints(run: Run) -> list[Block]:
    """The endpoints of the run with what each answered and whether it was drained."""
    endpoints = run.config.stats.endpoints
    if not endpoints:
        return []
    return [Note("**Endpoints of this run** (requests answered by each, the capability probe included; "
                 "`Store.answers` lists every scoring request with the endpoint that answered it)", "markdown"),
            Table(pd.DataFrame([{"base URL": e["base_url"], "answered": e["answered"],
                                 "failed attempts": e["failed_attempts"], "answered 429": e.get("rate_limited", 0),
                                 "drained": "yes" if e["drained"] else "no", "why drained": e["drain_reason"] or "-"}
                                for e in endpoints]), f"endpoints {run.run_id}", "endpoints")]
