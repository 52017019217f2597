"""Criteria versions: every edit of a dimension's criteria is kept, keyed by its hash."""

from __future__ import annotations

import difflib
from dataclasses import asdict
from typing import Any, Mapping, Sequence

from evalcore.identity import Viewer
from evalcore.store.connection import Connection, now
from evalcore.store.owners import visible_sql
from evalcore.types import Criteria

_COLUMNS = ("dataset_id", "dimension", "hash", "task_introduction", "definition", "scale_min", "scale_max", "steps",
            "note", "created_at", "owner", "steps_by")


def _criteria_from_row(d: dict[str, Any]) -> Criteria:
    return Criteria(dimension=d["dimension"], task_introduction=d["task_introduction"], definition=d["definition"],
                    scale_min=int(d["scale_min"]), scale_max=int(d["scale_max"]), steps=d["steps"] or "")


def criteria_diff(a: Criteria, b: Criteria, *, name_a: str = "a", name_b: str = "b") -> str:
    def lines(c: Criteria) -> list[str]:
        out = []
        for k, v in asdict(c).items():
            out.append(f"[{k}]")
            out.extend(str(v).splitlines() or [""])
        return [x + "\n" for x in out]

    return "".join(difflib.unified_diff(lines(a), lines(b), fromfile=name_a, tofile=name_b))


class CriteriaStore(Connection):
    def save_criteria(self, dataset_id: str, criteria: Criteria, *, note: str = "", owner: str | None = None,
                      steps_by: str = "") -> str:
        """Keep a version; ``owner``: the signed-in user saving it (None without sign-in); ``steps_by``: the model
        that generated its evaluation steps ('' when a person wrote them)."""
        h = criteria.version_hash()
        self.add_criteria_rows([{"dataset_id": dataset_id, "dimension": criteria.dimension, "hash": h,
                                 "task_introduction": criteria.task_introduction, "definition": criteria.definition,
                                 "scale_min": criteria.scale_min, "scale_max": criteria.scale_max,
                                 "steps": criteria.steps, "note": note, "created_at": now(), "owner": owner,
                                 "steps_by": steps_by}])
        return h

    def add_criteria_rows(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Criteria rows (a bundle's, or one new version) kept as they are; a hash already stored is left alone.
        A row without owner/steps_by (a bundle's) gets none: everyone sees it."""
        with self.write():
            self._insert("criteria", [{k: r.get(k, "" if k == "steps_by" else None) for k in _COLUMNS} for r in rows],
                         ignore=True)

    def list_criteria_versions(self, dataset_id: str, dimension: str, *, viewer: Viewer | None = None,
                               owner: str | None = None) -> list[dict[str, Any]]:
        """The versions ``viewer`` sees (None: all; ``owner``: only that user's), newest first:
        {"hash", "created_at", "note", "owner", "shared", "steps_by", "criteria": Criteria}."""
        where, args = visible_sql(viewer)
        if owner is not None:
            where, args = f"{where} AND owner = ?", [*args, owner]
        rows = self.rows(f"SELECT * FROM criteria WHERE dataset_id = ? AND dimension = ? AND {where}"
                         " ORDER BY created_at DESC, rowid DESC", (dataset_id, dimension, *args))
        return [{"hash": d["hash"], "created_at": d["created_at"], "note": d["note"] or "",
                 "owner": d["owner"] or "", "shared": bool(d["shared"]), "steps_by": d["steps_by"] or "",
                 "criteria": _criteria_from_row(d)} for d in rows]

    def load_criteria(self, dataset_id: str, dimension: str, version: str | None = None, *,
                      viewer: Viewer | None = None, owner: str | None = None) -> Criteria | None:
        """A saved version by hash (prefix allowed), or the newest one (``owner``: that user's newest); None when
        there is none."""
        versions = self.list_criteria_versions(dataset_id, dimension, viewer=viewer, owner=owner)
        if version is None:
            return versions[0]["criteria"] if versions else None
        for v in versions:
            if v["hash"].startswith(version):
                return v["criteria"]
        raise KeyError(f"no criteria version {version!r} for {dataset_id}/{dimension}")

    def diff_criteria(self, dataset_id: str, dimension: str, hash_a: str, hash_b: str) -> str:
        """A unified diff of two saved versions, field by field."""
        a = self.load_criteria(dataset_id, dimension, hash_a)
        b = self.load_criteria(dataset_id, dimension, hash_b)
        assert a is not None and b is not None  # a version asked for by hash is found or raises KeyError
        return criteria_diff(a, b, name_a=hash_a, name_b=hash_b)
