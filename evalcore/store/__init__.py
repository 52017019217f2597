"""The store: response cache, runs and their judgments, criteria versions, user datasets, labels, leases, Batch API
batches, rejected probes, development / test splits and their final checks, spending on the operator's key. One
SQLite file (default ``$EVALCORE_DB`` or ``~/.evalcore/evalcore.db``), or a PostgreSQL database shared by a lab's
servers (``EVALCORE_DB=postgresql://...``; what differs goes through :mod:`evalcore.store.dialect`).

One module per concern, each a class over the shared :class:`~evalcore.store.connection.Connection`; :class:`Store`
composes them. The schema and its versioned migrations are in :mod:`evalcore.store.schema`; opening a store brings
an older file to the current version (after a backup) and refuses one a newer release wrote. Nothing outside this
package writes SQL against the store. Nothing here ever holds an API key. On a server with sign-in, uploads, runs,
criteria versions and labels record their owner, and listings take a ``viewer`` (:mod:`evalcore.store.owners`).
"""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

from evalcore import settings
from evalcore.store import schema
from evalcore.store.batches import BatchesStore
from evalcore.store.cache import CacheStore, request_key
from evalcore.store.connection import (
    BUSY_TIMEOUT_S,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreReadOnly,
    StoreReplaced,
    StoreTooNew,
    StoreUnreadable,
    canonical_json,
    configured_location,
    default_path,
    guarded,
    now,
    store_error,
    store_message,
)
from evalcore.store.campaigns import CampaignsStore
from evalcore.store.dialect import location_name
from evalcore.store.criteria import CriteriaStore, criteria_diff
from evalcore.store.datasets import FRAMES, DatasetsStore
from evalcore.store.labels import LABEL_COLUMNS, LabelsStore
from evalcore.store.leases import LeasesStore, RunLeased, process_alive
from evalcore.store.owners import OwnersStore
from evalcore.store.probes import ProbeFailuresStore
from evalcore.store.runs import RunsStore
from evalcore.store.spending import SpendingStore
from evalcore.store.splits import SplitsStore


class Store(RunsStore, CacheStore, CriteriaStore, DatasetsStore, CampaignsStore, LabelsStore, LeasesStore,
            BatchesStore, ProbeFailuresStore, SplitsStore, OwnersStore, SpendingStore):
    """The store: opened (and migrated to the current schema) on construction."""

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__(path)
        self.backup = schema.open_store(self)  # the pre-migration copy of a SQLite file, when one was made
        self.identify()  # every later write checks that the file at the path is still this one


def _guard_all(cls: type) -> None:
    """Every public method (and the connection properties) turns a sqlite error of a broken or locked store into
    the StoreError that names the file and the way out."""
    for name in dir(cls):
        if name.startswith("_") and name != "__init__":
            continue
        value = inspect.getattr_static(cls, name)
        if isinstance(value, property) and value.fget is not None and name in ("conn", "db"):  # the first statement
            setattr(cls, name, property(guarded(value.fget)))
        elif inspect.isfunction(value):
            setattr(cls, name, guarded(value))


_guard_all(Store)

_default: Store | None = None
_default_lock = threading.Lock()


def default_store() -> Store:
    """The one global handle (``$EVALCORE_DB`` or ``~/.evalcore/evalcore.db``)."""
    global _default
    with _default_lock:
        if _default is None or (settings.current().db and location_name(configured_location()) != _default.path):
            _default = Store()
        return _default


def store_problem(path: str | Path | None = None) -> str | None:
    """None when the store at ``path`` (default: the default store's) opens and passes its check (SQLite:
    ``PRAGMA quick_check``), else the one-line message to show (the app's banner)."""
    st = None
    try:
        st = Store(path) if path is not None else default_store()
        st.check()
    except StoreError as e:
        return str(e)
    finally:
        if st is not None and path is not None:
            st.close()
    return None


__all__ = ["Store", "default_store", "default_path", "request_key", "canonical_json", "criteria_diff", "now",
           "StoreError", "StoreUnreadable", "StoreLocked", "StoreTooNew", "StoreReplaced", "StoreReadOnly", "StoreFull",
           "RunLeased", "store_problem", "store_error", "store_message",
           "process_alive", "BUSY_TIMEOUT_S", "FRAMES", "LABEL_COLUMNS"]
