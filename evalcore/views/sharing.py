"""Who may share what with the lab, on a server with sign-in: the "Share ... with the lab" toggles a page offers (an
upload, the judge-score runs imported with it, a criteria version, a user's labels) and the store writes behind them.

A toggle is offered only on what the signed-in user owns; the store refuses another user's row anyway
(``Store.share`` changes only the owner's row), so an offer here is the page's courtesy, never the permission.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from evalcore.views.common import run_names
from evalcore.views.format import esc

if TYPE_CHECKING:
    from evalcore.model import Run
    from evalcore.store import Store


@dataclass(frozen=True)
class ShareOffer:
    """A share toggle: "Share ``what`` with the lab" (``what`` escaped: it is drawn as Markdown), its widget ``key``
    (``share_<key>``), whether the rows are ``shared`` now, and the keys of the rows it shares (``keys``)."""

    what: str
    key: str
    shared: bool
    keys: tuple = ()


# ---------------------------------------------------------------------------------------------------- datasets


def dataset_owner(entries: Iterable[dict[str, Any]], dataset_id: str) -> dict[str, Any] | None:
    """The dataset's entry in the list the session sees (``evalcore.runs.list_all_datasets``) when someone uploaded
    it (a bundled dataset has no owner: None)."""
    return next((d for d in entries if d["id"] == dataset_id and d.get("owner")), None)


def dataset_owner_line(entry: dict[str, Any]) -> str:
    """Who uploaded the dataset and whether the lab sees it (plain text)."""
    return f"Uploaded by {entry['owner']}" + (", shared with the lab" if entry["shared"] else ", private")


def dataset_offer(entry: dict[str, Any] | None, me: str | None) -> ShareOffer | None:
    """The dataset's toggle, for its uploader only."""
    if entry is None or not me or entry["owner"] != me:
        return None
    return ShareOffer("this dataset", "dataset", bool(entry["shared"]), (entry["id"],))


def share_dataset(store: Store, dataset_id: str, me: str, on: bool) -> bool:
    """Share (or unshare) ``me``'s upload; True when a row of theirs changed."""
    return store.share("datasets", (dataset_id,), me, on)


# -------------------------------------------------------------------------------------------------------- runs


def is_imported(run: Run) -> bool:
    """A run brought from a file (judge-score columns of an upload, a judge-score file), not scored here."""
    return run.method == "imported" or bool(run.config and run.config.get("imported_from"))


def imported_runs_offer(store: Store, runs: Iterable[Any], me: str | None) -> ShareOffer | None:
    """The judge scores imported in the same file as the dataset are runs of their own, private until shared:
    offered beside the dataset's toggle (so that sharing the dataset does not leave the lab without its judge
    scores), for the imported runs ``me`` owns; None when there is none."""
    if not me:
        return None
    owned = [(r, store.owner_of("runs", (r.run_id,))) for r in runs if is_imported(r)]
    mine = [(r, shared) for r, (owner, shared) in owned if owner == me]
    if not mine:
        return None
    names = run_names([r for r, _ in mine])
    what = ("its judge-score run " if len(mine) == 1 else "its judge-score runs ") + ", ".join(names.values())
    return ShareOffer(esc(what) + " (imported with it)", "dataset_runs", all(s for _, s in mine),
                      tuple(r.run_id for r, _ in mine))


def share_runs(store: Store, run_ids: Iterable[str], me: str, on: bool) -> int:
    """Share (or unshare) each of ``me``'s runs; how many rows changed (another user's run is left alone)."""
    return sum(bool(store.share("runs", (rid,), me, on)) for rid in run_ids)


# ------------------------------------------------------------------------------------------------ criteria


def criteria_offer(version: dict[str, Any], me: str | None) -> ShareOffer | None:
    """A saved criteria version's toggle (``Store.list_criteria_versions``' row), for the user who saved it."""
    if not me or version.get("owner") != me:
        return None
    return ShareOffer(f"version {version['hash'][:8]}", "criteria", bool(version.get("shared")), (version["hash"],))


def share_criteria(store: Store, dataset_id: str, dimension: str, version_hash: str, me: str, on: bool) -> bool:
    return store.share("criteria", (dataset_id, dimension, version_hash), me, on)


# -------------------------------------------------------------------------------------------------------- labels


def labels_offer(store: Store, dataset_id: str, me: str | None) -> ShareOffer | None:
    """A signed-in user's toggle for their labels on a dataset (those given later too)."""
    if not me:
        return None
    return ShareOffer("your labels on this dataset", "labels", store.labels_shared(dataset_id, me), (dataset_id,))


def share_labels(store: Store, dataset_id: str, me: str, on: bool) -> None:
    store.share_labels(dataset_id, me, on)
