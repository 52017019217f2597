"""The Improve loop's queue: candidates scored on one part of a split one after another, each run through the Score
page's job (:class:`evalcore.judge.job.ScoringJob`, on a background thread).

Plain Python, no Streamlit: the page keeps the queue object in its session state and calls :meth:`ScoringQueue.advance`
on each rerun (a finished job hands over to the next one there); the queue says what is done, what is running, what
is pending, and how it ended. :func:`plan` builds one from the candidates, refusing a run id that exists with another
owner or endpoint (``loop.check_reuse``) before anything is charged or sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

from evalcore.align.candidates import Candidate
from evalcore.align.loop import check_reuse, spec_for, spec_run_id
from evalcore.align.split import Split
from evalcore.model import Dataset

if TYPE_CHECKING:
    from evalcore.judge.client import Endpoint
    from evalcore.judge.job import ScoringJob
    from evalcore.judge.spending import Meter
    from evalcore.spec import ScoringSpec
    from evalcore.spec import EngineOptions
    from evalcore.store import Store

KINDS = ("baseline", "dev", "test")  # which step started the queue: the baseline, the candidates, the final check


def _scoring_job(spec: ScoringSpec, engine: EngineOptions, store: Store) -> ScoringJob:
    from evalcore.judge.job import ScoringJob

    return ScoringJob(run_id=spec_run_id(spec), spec=spec, engine=engine, store=store)


@dataclass
class Item:
    """One candidate's run in the queue: how the page names it, and the engine's spec (its ``run_id``)."""

    name: str
    spec: Any

    @property
    def run_id(self) -> str:
        return self.spec.run_id


@dataclass
class ScoringQueue:
    """Runs ``items`` one after another through ``engine`` into ``store``. ``job`` is the current (or last) job; a
    job that failed or was cancelled ends the queue (the items after it stay pending: starting again resumes them,
    the runs keep what was judged). ``make_job(spec, engine, store)`` makes a started-later job (tests pass a fake)."""

    kind: str
    split_id: str
    items: list[Item]
    engine: EngineOptions
    store: Store
    chosen: str | None = None  # the final check's chosen candidate (its criteria version)
    make_job: Callable[[Any, Any, Any], Any] = _scoring_job
    started: int = 0  # how many items have had a job started
    job: Any = None
    done: bool = False
    absorbed: bool = False  # the page has refreshed its run lists and estimates since the queue ended
    checked: bool = False  # the final check has been computed from this queue's test runs
    ended_by: str | None = None  # why it ended early: "error" or "cancelled"
    # what its runs' replies cost, charged to who queued them (evalcore.judge.spending.Meter, its reservation held
    # for every run: the estimate charged at the click covers them all); each job stops at the operator's cap, a
    # run stopped so ends the queue; None: nothing to count (a local server)
    meter: Any = None

    def advance(self) -> None:
        """Start the next job once the current one has finished; end the queue when none is left, or when the
        current job failed or was cancelled. Idempotent while a job runs (every rerun may call it)."""
        if self.done:
            return
        job = self.job
        if job is not None and job.running:
            return
        if job is not None and (job.error or job.cancel.is_set()):
            self._end("error" if job.error else "cancelled")
            return
        if self.started >= len(self.items):
            self._end(None)
            return
        item = self.items[self.started]
        self.started += 1
        self.job = self.make_job(item.spec, self.engine, self.store)
        if self.meter is not None:  # every run counted by the queue's one meter
            self.meter.held = True
            self.job.meter = self.meter
        self.job.start()

    def _end(self, ended_by: str | None) -> None:
        self.ended_by, self.done = ended_by, True
        if self.meter is not None:  # the record settled to what the runs' replies cost
            self.meter.release()

    def busy(self) -> bool:
        """Whether the queue is still scoring (advancing it first)."""
        self.advance()
        return not self.done

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel.set()

    @property
    def current(self) -> Item | None:
        """The item whose job is (or was last) running."""
        return self.items[self.started - 1] if self.started else None

    def finished(self) -> list[str]:
        """The names of the items whose runs finished, in order."""
        n = self.started - (0 if self._current_ok_and_over() else 1) if self.started else 0
        return [it.name for it in self.items[:max(n, 0)]]

    def pending(self) -> list[str]:
        """The names of the items not finished, in order: the current one (running, failed or cancelled) first."""
        return [it.name for it in self.items[len(self.finished()):]]

    def _current_ok_and_over(self) -> bool:
        job = self.job
        return job is not None and not job.running and not job.error and not job.cancel.is_set() and \
            bool(getattr(job, "finished", True))

    def progress(self) -> tuple[float, str]:
        """The current job's share done and the line under the progress bar."""
        item, job = self.current, self.job
        p = None if job is None else job.progress
        frac = 0.0 if p is None or not p.total else min(p.done / p.total, 1.0)
        text = "starting (probing the endpoint)…" if p is None else (
            f"{p.done:,} / {p.total:,} done · {p.cached:,} from cache · {p.failed:,} failed")
        return frac, f"{item.name if item else ''} ({self.started} of {len(self.items)}): {text}"

    def outcome(self) -> tuple[Literal["error", "warning"], str] | None:
        """How an ended queue stopped early, as (kind, sentence): ("error", ...) or ("warning", ...); else None."""
        if not self.done or self.ended_by is None:
            return None
        if self.ended_by == "error":
            return "error", f"Scoring stopped: {self.job.error}"
        return "warning", "Cancelled. Finished judgments are kept: start again to score the rest."

    def shown_for(self, kind: str, split_id: str) -> bool:
        """Whether this queue belongs to the page's step ``kind`` on the split in use."""
        return self.kind == kind and self.split_id == split_id

    def absorb(self) -> bool:
        """True once, when the queue has ended: the page then refreshes what the finished runs changed."""
        self.advance()
        if self.done and not self.absorbed:
            self.absorbed = True
            return True
        return False

    def claim_check(self, split_id: str) -> bool:
        """True once, when a final check's queue on ``split_id`` has scored both prompts on test without error or
        cancel: the check is then computed (from the stored runs: nothing is sent again)."""
        if self.kind != "test" or not self.done or self.split_id != split_id or self.checked \
                or self.ended_by is not None or self.job is None:
            return False
        self.checked = True
        return True

    def status(self) -> list[dict[str, str]]:
        """One row per item, in order: its name, run id and state ("done", "running", "failed", "cancelled",
        "pending")."""
        done = len(self.finished())
        rows = []
        for n, it in enumerate(self.items):
            state = "done" if n < done else "pending"
            if n == self.started - 1 and n >= done:
                state = {"error": "failed", "cancelled": "cancelled"}.get(self.ended_by or "", "running")
            rows.append({"name": it.name, "run_id": it.run_id, "state": state})
        return rows


def plan(kind: str, dataset: Dataset, split: Split, part: str, dimension: str, method: str,
         candidates: list[Candidate], names: list[str], endpoint: Endpoint, engine: EngineOptions, store: Store, *,
         owner: str | None = None, chosen: str | None = None,
         make_job: Callable[[Any, Any, Any], Any] = _scoring_job, meter: Meter | None = None) -> ScoringQueue:
    """The queue scoring ``candidates`` (named ``names`` on the page) on ``part``: ``owner``'s runs on ``endpoint``.
    Raises ``loop.RunNotReusable`` when a run under one of their ids exists with another owner or endpoint (it is
    never reused); nothing starts until :meth:`ScoringQueue.advance`. ``meter`` (evalcore.judge.spending.Meter):
    what the runs' replies cost, counted against ``owner``'s budget; each run stops at the operator's cap."""
    if kind not in KINDS:
        raise ValueError(f"unknown queue kind {kind!r}: one of {', '.join(KINDS)}")
    items = [Item(name, spec_for(dataset, split, part, dimension, method, c, endpoint, owner=owner))
             for name, c in zip(names, candidates)]
    for it in items:
        check_reuse(store, it.run_id, owner, endpoint)
    return ScoringQueue(kind=kind, split_id=split.split_id, items=items, engine=engine, store=store, chosen=chosen,
                        make_job=make_job, meter=meter)


__all__ = ["KINDS", "Item", "ScoringQueue", "plan"]
