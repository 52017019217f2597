"""Cached analyses: every result is computed once per (dataset, runs, parameters) and kept by ``st.cache_data``.

Arguments are ids and plain values (tuples, not lists) so they hash; the objects are fetched from the resource
caches in ``_shared``. Each function is a one-line call into ``evalcore.views``.
"""

from __future__ import annotations

import functools

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from evalcore.meta import fastboot

from evalcore.views import alignment as alignment_views
from evalcore.views import bias as bias_views
from evalcore.views import compare as compare_views
from evalcore.views import data as data_views
from pages import _shared as ui


def _stop_if_asked() -> None:
    """Between blocks of bootstrap replicates: stop when this session asked to stop (the app's Stop, the browser tab
    closed: the session's script runner is then told to stop) or to rerun (a widget changed), as Streamlit itself
    does at every st.* call, which a long numpy computation never makes."""
    ctx = get_script_run_ctx(suppress_warning=True)
    requests = getattr(ctx, "script_requests", None)
    if requests is None:
        return
    request = requests.on_scriptrunner_yield()
    if request is None:
        return
    if request.type == ScriptRequestType.RERUN:
        raise RerunException(request.rerun_data)
    raise StopException()


def stoppable(f):
    """Run a cached computation under ``_stop_if_asked`` (evalcore.meta.fastboot.stop_point). An abandoned
    computation raises, so nothing half-done is cached; the next session asking computes it afresh."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        with fastboot.stop_point(_stop_if_asked):
            return f(*args, **kwargs)
    return wrapper


def _runs(run_ids: tuple[str, ...], parse: str):
    return [ui.load_run(r, parse) for r in run_ids]


def _systems(systems: tuple[str, ...] | None) -> list[str] | None:
    return list(systems) if systems else None


@st.cache_data(show_spinner=False, max_entries=128)
@stoppable
def alignment_cell(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int,
                   systems: tuple[str, ...] | None, level: str, coefficient: str, ci_resampling: str = "documents",
                   skip_constant: bool = True) -> pd.DataFrame:
    """The rows of ``alignment`` for one level and coefficient: what the Alignment page shows, computed alone (the
    full table costs nine cells; on 200,000 items that is the difference between seconds and a minute). Shared by
    every session asking for the same cell (st.cache_data), never repeated per rerun."""
    return alignment_views.alignment_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                           n_resamples=n_resamples, systems=_systems(systems), levels=(level,),
                                           coefficients=(coefficient,), ci_resampling=ci_resampling,
                                           skip_constant=skip_constant)


@st.cache_data(show_spinner=False, max_entries=32)
def agreement(dataset_id: str, n_resamples: int) -> pd.DataFrame:
    return data_views.agreement_table(ui.load_dataset(dataset_id), n_resamples=n_resamples)


@st.cache_data(show_spinner=False, max_entries=64)
@stoppable
def alignment(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int,
              systems: tuple[str, ...] | None, ci_resampling: str = "documents",
              skip_constant: bool = True) -> pd.DataFrame:
    return alignment_views.alignment_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                 n_resamples=n_resamples, systems=_systems(systems), ci_resampling=ci_resampling,
                                 skip_constant=skip_constant)


@st.cache_data(show_spinner=False, max_entries=64)
def support_notes(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str,
                  systems: tuple[str, ...] | None) -> list[str]:
    return alignment_views.support_notes(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                         systems=_systems(systems))


@st.cache_data(show_spinner=False, max_entries=64)
def ceiling(dataset_id: str, run_ids: tuple[str, ...], dimension: str, level: str, coefficient: str, parse: str,
            n_resamples: int, systems: tuple[str, ...] | None, skip_constant: bool = True) -> pd.DataFrame:
    """The human ceiling on each run's items (issue 18.1), with its interval."""
    return alignment_views.run_ceilings(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension, level=level,
                                        coefficient=coefficient, systems=_systems(systems), n_resamples=n_resamples,
                                        skip_constant=skip_constant)


@st.cache_data(show_spinner=False, max_entries=64)
def per_system(dataset_id: str, run_ids: tuple[str, ...], dimensions: tuple[str, ...], coefficient: str, parse: str,
               systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.per_system_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), list(dimensions),
                                  coefficient=coefficient, systems=_systems(systems))


@st.cache_data(show_spinner=False, max_entries=64)
def meta_correlation(dataset_id: str, run_ids: tuple[str, ...], dimensions: tuple[str, ...], coefficient: str,
                     parse: str, systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.meta_correlation_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), list(dimensions),
                                        coefficient=coefficient, systems=_systems(systems))


@st.cache_data(show_spinner=False, max_entries=64)
def correct_preferences(dataset_id: str, run_ids: tuple[str, ...], dimensions: tuple[str, ...], parse: str,
                        systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.correct_preferences_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), list(dimensions),
                                           systems=_systems(systems))


@st.cache_data(show_spinner=False, max_entries=64)
def reliability(dataset_id: str, rts_id: str, mcq_id: str, dimension: str, coefficient: str, parse: str):
    return alignment_views.reliability_view(ui.load_dataset(dataset_id), ui.load_run(rts_id, parse),
                                  ui.load_run(mcq_id, parse), dimension, coefficient=coefficient)


@st.cache_data(show_spinner=False, max_entries=64)
def difficulty(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str,
               systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.difficulty_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                  systems=_systems(systems))


@st.cache_data(show_spinner=False, max_entries=64)
def judge_by_human(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str,
                   systems: tuple[str, ...] | None) -> pd.DataFrame:
    return alignment_views.judge_by_human_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                                systems=_systems(systems))


@st.cache_data(show_spinner=False, max_entries=64)
def writer_bias(dataset_id: str, run_id: str, dimension: str, parse: str) -> pd.DataFrame:
    return bias_views.writer_bias_table(ui.load_dataset(dataset_id), ui.load_run(run_id, parse), dimension)


@st.cache_data(show_spinner=False, max_entries=64)
def writer_pairs(dataset_id: str, run_id: str, dimension: str, parse: str) -> pd.DataFrame:
    return bias_views.writer_bias_pairs(ui.load_dataset(dataset_id), ui.load_run(run_id, parse), dimension)


@st.cache_data(show_spinner=False, max_entries=64)
def mean_scores(dataset_id: str, run_ids: tuple[str, ...], dimensions: tuple[str, ...], parse: str) -> pd.DataFrame:
    return bias_views.mean_scores_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), list(dimensions))


@st.cache_data(show_spinner=False, max_entries=64)
def distributions(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str) -> pd.DataFrame:
    return bias_views.score_distribution_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension)


@st.cache_data(show_spinner=False, max_entries=64)
def position_bias(run_ids: tuple[str, ...], parse: str) -> pd.DataFrame:
    return bias_views.position_bias_table(_runs(run_ids, parse))


@st.cache_data(show_spinner=False, max_entries=64)
@stoppable
def paired(dataset_id: str, run_a: str, run_b: str, dimension: str, level: str, coefficient: str, n_resamples: int,
           method: str, parse: str):
    return compare_views.paired_comparison(ui.load_dataset(dataset_id), ui.load_run(run_a, parse), ui.load_run(run_b, parse),
                                   dimension, level=level, coefficient=coefficient, n_resamples=n_resamples,
                                   method=method)


@st.cache_data(show_spinner=False, max_entries=64)
def disagreements(dataset_id: str, run_a: str, run_b: str, dimension: str, parse: str, top: int) -> pd.DataFrame:
    return compare_views.disagreements(ui.load_dataset(dataset_id), ui.load_run(run_a, parse), ui.load_run(run_b, parse),
                               dimension, top=top)


def forget_results() -> None:
    """After a local run gained judgments (a scoring run finished or was resumed): results cached under its id are
    stale. Human agreement does not depend on runs and stays cached."""
    for f in (alignment, alignment_cell, per_system, meta_correlation, correct_preferences, reliability, difficulty, judge_by_human,
              writer_bias, writer_pairs, mean_scores, distributions, position_bias, paired, disagreements,
              label_agreements):
        f.clear()


@st.cache_data(show_spinner=False, max_entries=64)
def label_agreements(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int,
                     systems: tuple[str, ...] | None) -> dict:
    """Kappa, confusion matrix and calibration per run on a binary / nominal / ordinal dimension (issue 7.4)."""
    return alignment_views.label_agreements(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                            n_resamples=n_resamples, systems=_systems(systems))


def plan_key(spec, endpoint) -> tuple:
    """What a plan's estimate depends on, as hashable values (the cache key of ``score_estimate``)."""
    import hashlib
    import json

    crit_key = tuple(sorted((d, c.version_hash()) for d, c in spec.criteria.items()))
    # a sample of whole documents (score --sample-docs) is the same dataset id with fewer items: keyed by its items
    ds = spec.dataset
    items_key = hashlib.sha256("\x1f".join(map(str, ds.items["item_id"])).encode()).hexdigest()
    return (f"{ds.id}:{items_key}", spec.method, crit_key, repr(spec.config),
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

    return estimate(_spec, EngineOptions(_endpoint), store=ui.store_or_none())


@st.cache_data(show_spinner=False, max_entries=32)
def pairwise(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int) -> dict:
    from evalcore.views import preference as preference_views

    return preference_views.summaries(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                      n_resamples=n_resamples)


@st.cache_data(show_spinner=False, max_entries=32)
def score_bias(dataset_id: str, run_ids: tuple[str, ...], dimension: str, parse: str, n_resamples: int
               ) -> pd.DataFrame:
    return bias_views.score_bias_table(ui.load_dataset(dataset_id), _runs(run_ids, parse), dimension,
                                       n_resamples=n_resamples)
