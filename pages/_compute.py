"""Cached analyses: every result is computed once per (dataset, runs, parameters) and kept by ``st.cache_data``.

Arguments are ids and plain values (tuples, not lists) so they hash; the objects are fetched from the resource
caches in ``_loaders``. Each function is a one-line call into ``evalcore.views``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import time

import pandas as pd
import streamlit as st

from evalcore.meta import fastboot

from evalcore.views import alignment as alignment_views
from evalcore.views import bias as bias_views
from evalcore.views import common as common_views
from evalcore.views import compare as compare_views
from evalcore.views import data as data_views
from pages import _loaders as loaders
from pages import _streamlit_internals as internals


def _stop_if_asked() -> None:
    """Between blocks of bootstrap replicates: stop when this session asked to stop (the app's Stop, the browser tab
    closed) or to rerun (a widget changed), as Streamlit itself does at every st.* call, which a long numpy
    computation never makes."""
    internals.stop_or_rerun_requested()


def stoppable(f):
    """Run a cached computation under ``_stop_if_asked`` (evalcore.meta.fastboot.stop_point). An abandoned
    computation raises, so nothing half-done is cached; the next session asking computes it afresh."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        with fastboot.stop_point(_stop_if_asked):
            return f(*args, **kwargs)
    return wrapper


# A run's figures are cached under the run's version as well as its id (evalcore.runs.run_version), and under the
# dataset's labels version (evalcore.runs.dataset_version): a resumed or rescored run, or a new label, is a new key
# everywhere, so no list of caches to clear by hand can miss one.
_RUN_ARGS = ("run_ids", "run_id", "run_a", "run_b", "rts_id", "mcq_id")


def cached_for_runs(**cache_kw):
    """``st.cache_data`` whose key also holds the version of every run the call names (arguments ``run_ids``,
    ``run_id``, ``run_a``, ``run_b``, ``rts_id``, ``mcq_id``) and of its ``dataset_id``'s labels."""
    def deco(f):
        sig = inspect.signature(f)
        names = [n for n in sig.parameters if n in _RUN_ARGS]

        def keyed(versions: tuple[str, ...], *args, **kwargs):
            return f(*args, **kwargs)

        # the cache's own key: this function's module and qualified name (each decorated function its own cache)
        keyed.__module__, keyed.__qualname__, keyed.__name__ = f.__module__, f.__qualname__, f.__name__
        cached = st.cache_data(show_spinner=False, **cache_kw)(keyed)

        @functools.wraps(f)
        def call(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            ids: list[str] = []
            for name in names:
                value = bound.arguments.get(name)
                ids += list(value) if isinstance(value, (tuple, list)) else [value] if value else []
            dataset_id = bound.arguments.get("dataset_id")
            versions = loaders.run_versions(tuple(ids)) + ((loaders.dataset_version(dataset_id),) if dataset_id else ())
            return cached(versions, *args, **kwargs)

        call.clear = cached.clear  # type: ignore[attr-defined]
        return call
    return deco


# ------------------------------------------------------------------------------------- progress and Stop (issue 19)

# A computation that has run this long (a cache miss on a large study) gets a progress bar and a Stop button; a
# cached result, or a computation of a small dataset, shows neither.
PROGRESS_AFTER_S = 0.5
_REDRAW_S = 0.25  # the bar is redrawn at most this often


@contextlib.contextmanager
def _outside_cache():
    """Draw while a cached computation runs without recording it for replay: the progress bar and the Stop button
    belong to this run of this session, not to the cached result (replaying them on a cache hit would draw a
    finished bar, or fail on a container that no longer exists)."""
    with internals.outside_cache():
        yield


def stopped() -> set[str]:
    """The computations this session stopped (their ``work_key``s)."""
    return st.session_state.setdefault("_stopped_work", set())


def _stop(key: str) -> None:
    """The Stop button's callback: it runs at the start of the rerun its click asks for, after the computation
    was abandoned at its next block (``stoppable``), so that rerun knows not to start it again."""
    stopped().add(key)


def work_key(*parts) -> str:
    """A short stable widget key for one computation (its parameters)."""
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:12]


def long_work(what: str, key: str, call):
    """``call()`` (a cached, ``stoppable`` computation) under a progress bar and a Stop button, shown once it has run
    for PROGRESS_AFTER_S; None when this session stopped it: then a note says so, with a button to compute it after
    all. A stopped computation keeps nothing half-done; another session asking for it computes it."""
    if key in stopped():
        box = st.container()
        box.info(f"Stopped: {what}. Nothing of it was kept.")
        if box.button("Compute it", key=f"resume_{key}", icon=":material/play_arrow:"):
            stopped().discard(key)
            st.rerun()
        return None
    slot = st.empty()
    started = time.monotonic()
    shown: dict = {}

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if not shown and now - started < PROGRESS_AFTER_S:
            return
        if shown and now - shown["at"] < _REDRAW_S and done < total:
            return
        text = f"{what}: {done:,} of {total:,} bootstrap and jackknife replicates"
        with _outside_cache():
            if not shown:
                box = slot.container()
                shown["bar"] = box.progress(0.0, text=text)
                # one Stop per computation on the page (the filled cells share a key to stop them all at once)
                box.button("Stop", key=f"stop_{key}_{work_key(what)}", on_click=_stop, args=(key,),
                           icon=":material/stop_circle:",
                           help="Stop this computation (the server stops working on it at once).")
            shown["bar"].progress(min(1.0, done / total) if total else 0.0, text=text)
            shown["at"] = now

    try:
        # the spinner shows from the start, also to a session waiting for another's computation of the same thing
        # (Streamlit's cache computes it once); the bar and Stop belong to the session computing it
        with fastboot.progress_point(report), st.spinner(f"{what}…"):
            return call()
    finally:
        if shown:
            with _outside_cache():
                slot.empty()


def _runs(run_ids: tuple[str, ...], parse: str):
    return [loaders.load_run(r, parse) for r in run_ids]


def _systems(systems: tuple[str, ...] | None) -> list[str] | None:
    return list(systems) if systems else None


@cached_for_runs(max_entries=128)
@stoppable
def alignment_cell(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int,
                   systems: tuple[str, ...] | None, level: str, coefficient: str, ci_resampling: str = "documents",
                   skip_constant: bool = True) -> pd.DataFrame:
    """The rows of ``alignment`` for one level and coefficient: what the Alignment page shows, computed alone (the
    full table costs nine cells; on 200,000 items that is the difference between seconds and a minute). Shared by
    every session asking for the same cell (st.cache_data), never repeated per rerun."""
    return alignment_views.alignment_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                           n_resamples=n_resamples, systems=_systems(systems), levels=(level,),
                                           coefficients=(coefficient,), ci_resampling=ci_resampling,
                                           skip_constant=skip_constant)


# Below this many items every cell is computed in well under a second when it is asked for: no filling ahead.
FILL_MIN_ITEMS = 20_000
FILL_PAUSE_S = 2.0


def _pause(seconds: float) -> None:
    """Wait, still answering a click or a closed tab at once (``_stop_if_asked`` every tenth of a second)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        _stop_if_asked()
        time.sleep(0.1)


def other_cells(shown: tuple[str, str]) -> list[tuple[str, str]]:
    """Every (level, coefficient) of the correlation table but the one on show."""
    from evalcore.meta.correlation import COEFFICIENTS, LEVELS

    return [(lv, co) for lv in LEVELS for co in COEFFICIENTS if (lv, co) != tuple(shown)]


def fill_alignment_cells(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int,
                         systems: tuple[str, ...] | None, shown: tuple[str, str], status,
                         ci_resampling: str = "documents", skip_constant: bool = True) -> None:
    """After the Alignment page has drawn its cell: the other cells of the table, one cached cell at a time, each
    under ``long_work`` in ``status`` (progress bar and Stop), with the settings a visitor gets on switching: the
    shown level's own (``ci_resampling``, ``skip_constant``) for its other coefficients, the defaults (documents
    resampled, constant documents skipped) at the other levels. A large study only (FILL_MIN_ITEMS)."""
    if len(loaders.load_dataset(dataset_id).items) < FILL_MIN_ITEMS:
        return
    todo = other_cells(shown)
    # the page just drawn reaches the browser and is laid out before the cells take both cores (started at once,
    # they held the first table back by seconds: bench/bench_pages.py --big)
    _pause(FILL_PAUSE_S)

    def settings(lv: str) -> tuple[str, bool]:
        return (ci_resampling, skip_constant) if lv == shown[0] else ("documents", True)

    key = work_key("fill", dataset_id, run_ids, dimension, parse, n_resamples, systems)
    with status.container():
        note = st.empty()
        for i, (lv, co) in enumerate(todo):
            note.caption(f"The rest of the table is computed in the background ({i} of {len(todo)} cells ready; "
                         "switching level or coefficient shows a ready cell at once).")
            done = long_work(f"The rest of the table: {lv}-level {co} ({i + 1} of {len(todo)})", key,
                             # every argument spelled out: the page's own call's cache key
                             lambda: alignment_cell(dataset_id, run_ids, dimension, parse, n_resamples, systems,
                                                    lv, co, *settings(lv)))
            if done is None:
                note.empty()
                return
        note.caption(f"Every level and coefficient is ready ({len(todo) + 1} cells).")


@cached_for_runs(max_entries=4)
@stoppable
def report(dataset_id: str, run_ids: tuple[str, ...], dimension: str, level: str, coefficient: str, parse: str,
           n_resamples: int, systems: tuple[str, ...] | None) -> str:
    """The exported HTML report of a view, built from the cached cells of the correlation table and the cached paired
    comparison (what the Alignment page filled in the background and the Compare page computed are not computed
    again), under one progress plan: every cell's replicates and the comparison's; a cell already cached counts as
    done at once."""
    from evalcore.views import report as report_views
    from evalcore.meta.correlation import replicate_rows

    ds = loaders.load_dataset(dataset_id)
    runs = [r for r in _runs(run_ids, parse) if not r.judgments.empty or not r.comparisons.empty]
    item_ids = tuple(r.run_id for r in runs if not r.judgments.empty)  # the Alignment page's runs: same cache keys
    params = report_views.AnalysisParams(dataset_id=dataset_id, run_ids=list(run_ids), dimension=dimension,
                                         level=level, coefficient=coefficient, parse=parse, n_resamples=n_resamples,
                                         systems=_systems(systems))
    cells = [(level, coefficient)] + other_cells((level, coefficient))
    per_cell = alignment_views.cell_rows(ds, runs, dimension, n_resamples=n_resamples, systems=_systems(systems))
    pair = report_views.compare_pair(runs, dimension)
    pair_rows = 0
    if pair is not None:
        docs = alignment_views.documents_per_run(common_views.frames_for(ds, list(pair), dimension,
                                                                         systems=_systems(systems)))
        pair_rows = replicate_rows(min(docs.values(), default=0), n_resamples)

    def counted(rows: int, call):
        """``call()``, then whatever of its ``rows`` it did not report (a cached result) counted as done."""
        before = fastboot.rows_done()
        out = call()
        fastboot.advance(max(0, before + rows - fastboot.rows_done()))
        return out

    with fastboot.expecting(len(cells) * per_cell + pair_rows):
        table = alignment_views.merge_cells(
            [counted(per_cell, lambda lv=lv, co=co: alignment_cell(dataset_id, item_ids, dimension, parse,
                                                                  n_resamples, systems, lv, co, "documents", True))
             for lv, co in cells], runs)
        comparison = None
        if pair is not None:
            comparison = counted(pair_rows, lambda: paired(dataset_id, pair[0].run_id, pair[1].run_id, dimension,
                                                           level, coefficient, n_resamples, "bootstrap", parse,
                                                           systems))
    return report_views.analysis_report(ds, runs, params, report_views.Computed(table, comparison))


@st.cache_data(show_spinner=False, max_entries=32)
def _agreement(dataset_id: str, n_resamples: int, version: str) -> pd.DataFrame:
    return data_views.agreement_table(loaders.load_dataset(dataset_id), n_resamples=n_resamples)


def agreement(dataset_id: str, n_resamples: int) -> pd.DataFrame:
    """The annotators' agreement on the Data page, keyed by the dataset's labels version (labels join the
    annotations): recomputed when a label is saved anywhere, never per rerun."""
    return _agreement(dataset_id, n_resamples, loaders.dataset_version(dataset_id))


agreement.clear = _agreement.clear  # type: ignore[attr-defined]


@cached_for_runs(max_entries=64)
@stoppable
def alignment(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int,
              systems: tuple[str, ...] | None, ci_resampling: str = "documents",
              skip_constant: bool = True) -> pd.DataFrame:
    return alignment_views.alignment_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                 n_resamples=n_resamples, systems=_systems(systems), ci_resampling=ci_resampling,
                                 skip_constant=skip_constant)


@cached_for_runs(max_entries=32)
def registered_blocks(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int,
                      systems: tuple[str, ...] | None) -> list:
    """The blocks of the analyses installed packages register (evalcore.registry.ANALYSES; none without a plugin)."""
    return alignment_views.registered_blocks(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                             n_resamples=n_resamples, systems=_systems(systems))


@cached_for_runs(max_entries=64)
def support_notes(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str,
                  systems: tuple[str, ...] | None) -> list[str]:
    return alignment_views.support_notes(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                         systems=_systems(systems))


@cached_for_runs(max_entries=64)
def ceiling(dataset_id: str, run_ids: tuple[str, ...], dimension: str, level: str, coefficient: str, parse: str,
            n_resamples: int, systems: tuple[str, ...] | None, skip_constant: bool = True) -> pd.DataFrame:
    """The human ceiling on each run's items (issue 18.1), with its interval."""
    return alignment_views.run_ceilings(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension, level=level,
                                        coefficient=coefficient, systems=_systems(systems), n_resamples=n_resamples,
                                        skip_constant=skip_constant)


@cached_for_runs(max_entries=64)
def per_system(dataset_id: str, run_ids: tuple[str, ...], dimensions: tuple[str, ...], coefficient: str, parse: str,
               systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.per_system_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), list(dimensions),
                                  coefficient=coefficient, systems=_systems(systems))


@cached_for_runs(max_entries=64)
def meta_correlation(dataset_id: str, run_ids: tuple[str, ...], dimensions: tuple[str, ...], coefficient: str,
                     parse: str, systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.meta_correlation_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), list(dimensions),
                                        coefficient=coefficient, systems=_systems(systems))


@cached_for_runs(max_entries=64)
def correct_preferences(dataset_id: str, run_ids: tuple[str, ...], dimensions: tuple[str, ...], parse: str,
                        systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.correct_preferences_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), list(dimensions),
                                           systems=_systems(systems))


@cached_for_runs(max_entries=64)
def reliability(dataset_id: str, rts_id: str, mcq_id: str, dimension: str, coefficient: str, parse: str):
    return alignment_views.reliability_view(loaders.load_dataset(dataset_id), loaders.load_run(rts_id, parse),
                                  loaders.load_run(mcq_id, parse), dimension, coefficient=coefficient)


@cached_for_runs(max_entries=64)
def difficulty(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str,
               systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.difficulty_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                  systems=_systems(systems))


@cached_for_runs(max_entries=64)
def judge_by_human(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str,
                   systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.judge_by_human_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                                systems=_systems(systems))


@cached_for_runs(max_entries=64)
def writer_bias(dataset_id: str, run_id: str, dimension: str, parse: str) -> pd.DataFrame:
    return bias_views.writer_bias_table(loaders.load_dataset(dataset_id), loaders.load_run(run_id, parse), dimension)


@cached_for_runs(max_entries=64)
def writer_pairs(dataset_id: str, run_id: str, dimension: str, parse: str) -> pd.DataFrame:
    return bias_views.writer_bias_pairs(loaders.load_dataset(dataset_id), loaders.load_run(run_id, parse), dimension)


@cached_for_runs(max_entries=64)
def mean_scores(dataset_id: str, run_ids: tuple[str, ...], dimensions: tuple[str, ...], parse: str) -> pd.DataFrame:
    return bias_views.mean_scores_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), list(dimensions))


@cached_for_runs(max_entries=64)
def distributions(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str) -> pd.DataFrame:
    return bias_views.score_distribution_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension)


@cached_for_runs(max_entries=64)
def position_bias(run_ids: tuple[str, ...], parse: str) -> pd.DataFrame:
    return bias_views.position_bias_table(_runs(run_ids, parse))


@cached_for_runs(max_entries=64)
@stoppable
def paired(dataset_id: str, run_a: str, run_b: str, dimension: str, level: str, coefficient: str, n_resamples: int,
           method: str, parse: str, systems: tuple[str, ...] | None = None):
    return compare_views.paired_comparison(loaders.load_dataset(dataset_id), loaders.load_run(run_a, parse), loaders.load_run(run_b, parse),
                                   dimension, level=level, coefficient=coefficient, n_resamples=n_resamples,
                                   method=method, systems=_systems(systems))


@cached_for_runs(max_entries=64)
def paired_estimates(dataset_id: str, run_a: str, run_b: str, dimension: str, level: str, coefficient: str,
                     parse: str, systems: tuple[str, ...] | None = None):
    """The two runs' correlations on their shared items and the difference, without resampling: what the Compare
    page shows first while the paired bootstrap runs."""
    return compare_views.paired_comparison(loaders.load_dataset(dataset_id), loaders.load_run(run_a, parse),
                                           loaders.load_run(run_b, parse), dimension, level=level,
                                           coefficient=coefficient, n_resamples=0, systems=_systems(systems))


@cached_for_runs(max_entries=64)
def disagreements(dataset_id: str, run_a: str, run_b: str, dimension: str, parse: str, top: int,
                  systems: tuple[str, ...] | None = None) -> pd.DataFrame:
    return compare_views.disagreements(loaders.load_dataset(dataset_id), loaders.load_run(run_a, parse), loaders.load_run(run_b, parse),
                               dimension, top=top, systems=_systems(systems))


@cached_for_runs(max_entries=64)
def label_agreements(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int,
                     systems: tuple[str, ...] | None) -> dict:
    """Kappa, confusion matrix and calibration per run on a binary / nominal / ordinal dimension (issue 7.4)."""
    return alignment_views.label_agreements(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                            n_resamples=n_resamples, systems=_systems(systems))


def plan_key(spec, endpoint) -> tuple:
    """What a plan's estimate depends on, as hashable values (the cache key of ``score_estimate``)."""
    import hashlib
    import json

    crit_key = tuple(sorted((d, c.version_hash()) for d, c in spec.criteria.items()))
    # a sample of whole documents (score --sample-docs) is the same dataset id with fewer items: keyed by its items
    ds = spec.dataset
    items_key = hashlib.sha256("\x1f".join(map(str, ds.items["item_id"])).encode()).hexdigest()
    draws = f"|draws={spec.draws}" if getattr(spec, "draws", 1) > 1 else ""  # K draws: K times the requests
    return (f"{ds.id}:{items_key}", spec.method, crit_key, repr(spec.config) + draws,
            json.dumps(endpoint.identity(), sort_keys=True), spec.limit, tuple(spec.dimensions),
            json.dumps(spec.pairs, sort_keys=True))


def score_estimate(spec, endpoint):
    """The Score page's estimate, planned once per plan and shared by every session for a minute (issue 21,
    item 2): a link to the largest plan (h2h on every dimension, every pair) builds its requests once, not on every
    rerun of every visitor. The minute keeps the cache hits it counts close to the store's."""
    return _score_estimate(*plan_key(spec, endpoint), _spec=spec, _endpoint=endpoint)


def request_count(spec, endpoint) -> int:
    """How many requests the plan sends, counted without building them (evalcore.judge.runner.count_requests): what
    the Score page shows before it is asked to build a large plan's estimate."""
    return _request_count(*plan_key(spec, endpoint), _spec=spec)


@st.cache_data(show_spinner=False, max_entries=64, ttl=60)
def _request_count(dataset_id: str, method: str, criteria_key: tuple, config_key: str, endpoint_key: str,
                   limit: int | None, dimensions: tuple[str, ...], pairs_key: str, *, _spec) -> int:
    from evalcore.judge.runner import count_requests

    return count_requests(_spec)


@st.cache_data(show_spinner=False, max_entries=32, ttl=60)
def _score_estimate(dataset_id: str, method: str, criteria_key: tuple, config_key: str, endpoint_key: str,
                    limit: int | None, dimensions: tuple[str, ...], pairs_key: str, *, _spec, _endpoint):
    from evalcore.judge.runner import estimate
    from evalcore.judge.spec import EngineOptions

    return estimate(_spec, EngineOptions(_endpoint), store=loaders.store_or_none())


@cached_for_runs(max_entries=32)
def pairwise(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int) -> dict:
    from evalcore.views import preference as preference_views

    return preference_views.summaries(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                      n_resamples=n_resamples)


@cached_for_runs(max_entries=32)
@stoppable
def score_bias(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int
               ) -> pd.DataFrame:
    return bias_views.score_bias_table(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                       n_resamples=n_resamples)


# ------------------------------------------------------------ Alt-Test, prediction-powered estimates, Bradley-Terry


@cached_for_runs(max_entries=32)
def alt_tests(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, epsilon: float,
              small_sample: str = "skip") -> list:
    """The Alt-Test of each run (evalcore.views.inference.AltTestView)."""
    from evalcore.views import inference as inference_views

    ds = loaders.load_dataset(dataset_id)
    return [inference_views.alt_test_for_run(ds, r, dimension, epsilon=epsilon, small_sample=small_sample)
            for r in _runs(run_ids, parse)]


@cached_for_runs(max_entries=32)
def rating_coverage(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str) -> tuple[bool, int]:
    from evalcore.views import inference as inference_views

    return inference_views.rating_coverage(loaders.load_dataset(dataset_id), _runs(run_ids, parse), dimension)


def ppi_estimates(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, method: str,
                  rated: int | None, n_resamples: int, *, step=None) -> list:
    """PPI / PPI++ per system of each run (evalcore.views.inference.PPIView), each run cached under its own version
    (a rescored run recomputes only its own); ``step(i, n)`` is told before each run's (the page's progress)."""
    out = []
    for i, run_id in enumerate(run_ids):
        if step is not None:
            step(i, len(run_ids))
        out.append(ppi_estimate(dataset_id, run_id, dimension, parse, method, rated, n_resamples))
    return out


@cached_for_runs(max_entries=64)
@stoppable
def ppi_estimate(dataset_id: str, run_id: str, dimension: str, parse: str, method: str, rated: int | None,
                 n_resamples: int):
    """PPI / PPI++ per system of one run (evalcore.views.inference.PPIView)."""
    from evalcore.views import inference as inference_views

    return inference_views.ppi_for_run(loaders.load_dataset(dataset_id), loaders.load_run(run_id, parse), dimension,
                                       method=method, rated=rated, n_resamples=n_resamples)


@cached_for_runs(max_entries=16)
@stoppable
def bradley_terry(dataset_id: str, run_id: str, dimension: str, parse: str, n_resamples: int):
    """The humans' and the judge's Bradley-Terry rankings of one pairwise run, or why there are none (a string)."""
    from evalcore.views import inference as inference_views

    return inference_views.bradley_terry_for_run(loaders.load_dataset(dataset_id), loaders.load_run(run_id, parse), dimension,
                                                 n_resamples=n_resamples)


@cached_for_runs(max_entries=32)
def ppi_plan(dataset_id: str, run_id: str, dimension: str, parse: str, width: float, method: str,
             rated: int | None):
    """Rated documents per system for a PPI interval of ``width`` (evalcore.views.inference.plan_table)."""
    from evalcore.views import inference as inference_views

    return inference_views.plan_table(loaders.load_dataset(dataset_id), loaders.load_run(run_id, parse), dimension, width,
                                      method=method, rated=rated)


# ----------------------------------------------------------------------------------- the Alignment page's views


def label_agreement_view(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int,
                         systems: tuple[str, ...] | None):
    """The label-agreement part of the Alignment page (evalcore.views.alignment.label_agreement_view) over the
    cached reports, and the Data page's cached agreement table (same numbers, same cache)."""
    try:
        reports = label_agreements(dataset_id, run_ids, dimension, parse, n_resamples, systems)
    except ValueError as e:  # e.g. an annotator's value that is no category of the dimension: said on the page
        reports = e
    return alignment_views.label_agreement_view(reports, dimension, lambda: agreement(dataset_id, n_resamples))


@st.cache_data(show_spinner=False, max_entries=32)
def reliability_intervals(table: pd.DataFrame, coefficient: str, n_resamples: int) -> dict:
    """corr(R_i, P_i) of each run with its 95% interval over systems."""
    return alignment_views.reliability_intervals(table, coefficient, n_resamples)
