"""A scoring run on a background thread, for an app that must stay responsive while the judge works: the Score
page starts a :class:`ScoringJob`, then only reads its fields (progress, error, the finished run) on each rerun.

The thread writes plain fields only; ``cancel`` stops it (online: requests in flight finish, nothing half-written
is kept, the run is marked cancelled; Batch API: the wait stops, the batches go on and can be collected later). An
error is kept as one line with the API key blanked out (``evalcore.judge.redact``).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from evalcore.judge.redact import redact
from evalcore.judge.spec import EngineOptions, ScoringSpec

if TYPE_CHECKING:
    from evalcore.judge.batch import BatchStatus
    from evalcore.store import Store


@dataclass
class ScoringJob:
    """One run of ``spec`` through ``engine`` into ``store`` (``batch``: through the Batch API, checking every
    ``poll_s`` seconds). ``run_id`` names the run; starting the job again resumes it."""

    run_id: str
    spec: ScoringSpec
    engine: EngineOptions
    store: Store
    batch: bool = False
    poll_s: float = 5.0
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: Any = None  # runner.Progress
    started: float = field(default_factory=time.monotonic)
    finished: bool = False
    error: str | None = None
    run: Any = None  # the stored Run when done
    thread: threading.Thread | None = None
    absorbed: bool = False  # the app has refreshed its run lists since the thread finished
    # what the run's replies cost, charged to who started it as they arrive; the run stops at the operator's cap
    # (evalcore.judge.spending.Meter; None: nothing to count, e.g. a local server)
    meter: Any = None
    # the store refused the start: the run is not this user's to resume (another user's, or one without an owner)
    refused: bool = False

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    @property
    def dataset_id(self) -> str:
        return self.spec.dataset.id

    def start(self) -> None:
        """Score on a new thread (again, after a cancel or an error: the run resumes where it stopped). A run that
        is not the signed-in user's to resume is refused here, before anything is sent (``error`` says why)."""
        self.spec = dataclasses.replace(self.spec, run_id=self.run_id)
        self.cancel.clear()
        self.absorbed = False
        self.finished = False
        self.error = None
        self.started = time.monotonic()
        if self._refuse():
            return
        target = self._score_batch if self.batch else self._score_online
        self.thread = threading.Thread(target=self._guarded, args=(target,), name=f"score-{self.run_id}",
                                       daemon=True)
        self.thread.start()

    def _refuse(self) -> bool:
        """True (the job finished, ``error`` set) when the store holds ``run_id`` as a run that ``spec.owner`` does
        not own (evalcore.store.runs: RunsStore.run_refusal); what was charged at the click is given back."""
        refusal = self.store.run_refusal(self.run_id, self.spec.owner)
        if refusal is None:
            return False
        self.refused, self.error, self.finished = True, refusal, True
        if self.meter is not None:  # nothing was sent: the estimate reserved at the click is returned
            self.meter.settle()
        return True

    def resume(self, api_key: str | None) -> None:
        """Start again with the key the user holds now (a run stopped by a bad key resumes with a good one)."""
        self.engine = dataclasses.replace(self.engine, api_key=api_key)
        self.start()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the thread ends (for scripts and tests); True when it has."""
        if self.thread is not None:
            self.thread.join(timeout_s)
        return not self.running

    def _guarded(self, target: Callable[[], object]) -> None:
        try:
            target()
        except Exception as e:  # noqa: BLE001 - reported by the app with its reason
            self.error = redact(f"{type(e).__name__}: {e}", [self.engine.api_key])
        finally:
            self.finished = True

    def _score_online(self) -> None:
        from evalcore.judge import runner

        self.run = runner.score_dataset(self.spec, self.engine, store=self.store,
                                        progress=lambda p: setattr(self, "progress", p), cancel=self.cancel,
                                        meter=self.meter)

    def _score_batch(self) -> None:
        """Submit (unless batches of the run are still out: then resume the wait), then check every ``poll_s``
        until the batches end or the job is cancelled, then score the run from the batches' replies."""
        from evalcore.judge import batch as batch_mod

        if not any(not b["collected"] for b in self.store.batch_rows(self.run_id)):
            batch_mod.submit(self.spec, self.engine, store=self.store)
        while not self.cancel.is_set():
            col = batch_mod.collect(self.run_id, store=self.store, api_key=self.engine.api_key, wait=False,
                                    progress=self._show_batch, dataset=self.spec.dataset)
            if col.run is not None:
                self.run = col.run
                if self.meter is not None:  # the estimate charged at the click settled to the replies' usage
                    self.meter.count_batch(col.run.config.batch)
                return
            self.cancel.wait(self.poll_s)

    def _show_batch(self, status: BatchStatus) -> None:
        from evalcore.judge.runner import Progress

        c = status.counts
        self.progress = Progress(total=c["total"], done=c["completed"] + c["failed"], cached=0, failed=c["failed"],
                                 retrying=0, eta_s=None, elapsed_s=time.monotonic() - self.started)


__all__ = ["ScoringJob"]
