"""Cached loaders and the shared sidebar context: what pages/_nav.py (navigation, sidebar) needs, with no import of
pages/_shared.py, so that neither imports the other. Pages reach all of it through pages/_shared.py.

Loaded datasets and runs are cached as resources (they are read-only here); the lists of datasets and runs expire
after 30 s, and ``forget_runs()`` drops them at once after a scoring run or an upload.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from evalcore import settings
from evalcore import runs as runs_mod
from evalcore.model import Dataset, Run
from evalcore.views.format import esc  # the view models escape the same way (pages/_shared.py re-exports it)
from pages import _identity as identity


def default_resamples() -> int:
    """Bootstrap resamples: 1000 unless EVALCORE_RESAMPLES says otherwise (tests set a small number)."""
    return max(10, settings.current().resamples or 1000)


# ----------------------------------------------------------------------------------------------- cached loading


@st.cache_data(show_spinner=False, ttl=30, max_entries=64)
def _dataset_list(scope: str, version: str) -> list[dict]:
    # a labels view is listed when the labels every session may see make one: load_dataset merges those
    return runs_mod.list_all_datasets(viewer=identity.viewer_of(scope), labels_viewer=identity.lab_viewer())


def dataset_list() -> list[dict]:
    """The datasets this session may see (pages/_identity.py: every one without sign-in), keyed by the store's
    datasets version: an upload deleted or imported elsewhere (another session, the CLI) shows on the next rerun."""
    return _dataset_list(identity.scope_key(identity.viewer()), runs_mod.datasets_version())


dataset_list.clear = _dataset_list.clear  # type: ignore[attr-defined]


@st.cache_resource(show_spinner=False, max_entries=16)
def _load_dataset(dataset_id: str, version: str) -> Dataset:
    return runs_mod.get_dataset(dataset_id, viewer=identity.lab_viewer())


def dataset_version(dataset_id: str) -> str:
    """The store's version of the dataset's labels and final labels (evalcore.runs.dataset_version): part of the
    cache key of the dataset and its figures; '' when the store cannot be read (the banner says why; the bundled
    datasets still open)."""
    from evalcore.store import StoreError

    try:
        return runs_mod.dataset_version(dataset_id)
    except StoreError:
        return ""


def load_dataset(dataset_id: str) -> Dataset:
    """A dataset with the labels every session may see merged in (with sign-in on, a user's labels join the lab's
    datasets once shared: this cache serves every session). Keyed by the store's version of its labels, so a label
    or final label saved anywhere (another session, another app server on the same store) is read on the next
    rerun."""
    return _load_dataset(dataset_id, dataset_version(dataset_id))


def _clear_datasets(*_dataset_ids: str) -> None:
    _load_dataset.clear()  # every version of every dataset (rare: an upload, a deletion, a label saved here)


load_dataset.clear = _clear_datasets  # type: ignore[attr-defined]


@st.cache_resource(show_spinner=False, ttl=30, max_entries=64)
def _run_index(dataset_id: str, scope: str, version: str) -> list[Run]:
    return runs_mod.list_runs(dataset_id, viewer=identity.viewer_of(scope))


def run_index(dataset_id: str) -> list[Run]:
    """The runs of a dataset (bundled and local) this session may see, without their values: cheap, for pickers.
    Keyed by the store's runs version (evalcore.runs.runs_version): a run scored or finished anywhere (another page,
    another session, the CLI) is listed on the next rerun, not 30 s later."""
    return _run_index(dataset_id, identity.scope_key(identity.viewer()), runs_mod.runs_version(dataset_id))


run_index.clear = _run_index.clear  # type: ignore[attr-defined]


@st.cache_resource(show_spinner=False, max_entries=64)
def _load_run(run_id: str, parse: str, version: str) -> Run:
    return runs_mod.load_run(run_id, parse=parse)


def run_versions(run_ids: tuple[str, ...]) -> tuple[str, ...]:
    """Each run's version (evalcore.runs.run_version): part of every cache key of a run's figures."""
    return tuple(runs_mod.run_version(r) for r in run_ids)


def load_run(run_id: str, parse: str) -> Run:
    """A run (cached for every session), its id noted in this script run's list of runs shown: after the page,
    pages/_nav.main counts a run the Improve loop scored on a held-out test part as a look at that test part
    (pages/_identity.count_looks), whatever page loaded it. The loader itself writes nothing."""
    run = _load_run(run_id, parse, runs_mod.run_version(run_id))
    identity.note_shown(run_id)
    return run


load_run.clear = _load_run.clear  # type: ignore[attr-defined]


@st.cache_resource(show_spinner=False, max_entries=256)
def run_dimensions(run_id: str) -> tuple[str, ...]:
    """The dimensions a run scored, without parsing it (an unreadable run has none here; loading it says why)."""
    try:
        return tuple(runs_mod.run_dimensions(run_id))
    except Exception:  # noqa: BLE001 - runs_by_ids reports the error when the run is loaded
        return ()


def forget_runs() -> None:
    """After a scoring run or an upload: the run lists and local runs may have changed."""
    run_index.clear()
    load_run.clear()
    run_dimensions.clear()
    dataset_list.clear()


# --------------------------------------------------------------------------------------------- the shared context


@dataclass
class Context:
    """What the sidebar chose. The selected runs are loaded when a page first asks for ``runs`` (the Data page
    never does, so it shows without parsing them)."""

    dataset_id: str
    dataset: Dataset
    run_ids: list[str]
    dimension: str
    parse: str
    n_resamples: int
    all_runs: list[Run] = field(default_factory=list)  # every run of the dataset (index objects, no values)
    _runs: list[Run] | None = field(default=None, repr=False)

    @property
    def runs(self) -> list[Run]:
        if self._runs is None:
            with st.spinner("Loading runs…"):
                self._runs = runs_by_ids(self.run_ids, self.parse)
        return self._runs

    @property
    def runs_if_loaded(self) -> list[Run] | None:
        return self._runs

    @property
    def item_runs(self) -> list[Run]:
        return [r for r in self.runs if not r.judgments.empty]

    @property
    def pairwise_runs(self) -> list[Run]:
        return [r for r in self.runs if not r.comparisons.empty]


def runs_by_ids(run_ids: list[str], parse: str) -> list[Run]:
    out = []
    for rid in run_ids:
        try:
            out.append(load_run(rid, parse))
        except Exception as e:  # noqa: BLE001 - one unreadable run must not take the page down
            st.warning(esc(f"Run {rid} could not be loaded: {e}"))
    return out


# ------------------------------------------------------------------------------------------ a broken store


@st.cache_data(show_spinner=False, max_entries=8)
def _store_problem(path: str, stamp: tuple) -> str | None:
    from evalcore.store import store_problem

    return store_problem(path)


def store_problem() -> str | None:
    """Why the store cannot be used, or None. A SQLite file is checked again whenever it changes; a PostgreSQL
    database (no file to watch) is asked on every rerun, through the store handle the app uses anyway."""
    from evalcore.store import store_problem as problem
    from evalcore.store.connection import configured_location
    from evalcore.store.postgres import is_url

    location = configured_location()
    if is_url(location):  # never as a path: Path() would fold the URL's '//' and make it a relative file name
        return problem()
    path = Path(location)
    try:
        st_ = path.stat()
        stamp = (st_.st_size, st_.st_mtime_ns)
    except OSError:
        stamp = (None, None)
    return _store_problem(str(path), stamp)


def store_or_none():
    """The default store, or None when it cannot be used (the banner has said why)."""
    from evalcore.store import StoreError, default_store

    if store_problem():
        return None
    try:
        return default_store()
    except StoreError:
        return None
