"""Runs and what they hold: judgments (per item), comparisons (per pair and order), answers (which endpoint
answered each request)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pandas as pd

from evalcore.model import COMPARISON_COLUMNS, DRAW_COLUMNS, JUDGMENT_COLUMNS, Run, empty_frame
from evalcore.store.cache import cache_rows
from evalcore.identity import Viewer
from evalcore.store.connection import Connection, dumps, float_or_null, now
from evalcore.store.owners import visible_sql

# what an answers tuple holds, in its order (evalcore.judge.runner): which endpoint answered each request
_ANSWER_FIELDS = ("key", "task", "dimension", "answered_by", "prompt_tokens", "cached_tokens", "latency_s")


def _judgment_row(run_id: str, r: Mapping[str, Any], created_at: str) -> dict[str, Any]:
    return {"run_id": run_id, "item_id": r["item_id"], "dimension": r["dimension"],
            "criteria_hash": r.get("criteria_hash") or "", "raw": r.get("raw") or "",
            "value": float_or_null(r.get("value")), "status": r["status"], "reason": r.get("reason") or "",
            "estimator": r.get("estimator") or "", "detail": dumps(r.get("detail") or {}), "created_at": created_at}


def _comparison_row(run_id: str, r: Mapping[str, Any], created_at: str) -> dict[str, Any]:
    return {"run_id": run_id, "pair_id": r["pair_id"], "doc_id": r["doc_id"], "item_first": r["item_first"],
            "item_second": r["item_second"], "dimension": r["dimension"], "order": r["order"],
            "criteria_hash": r.get("criteria_hash") or "", "raw": r.get("raw") or "", "verdict": r.get("verdict"),
            "value": float_or_null(r.get("value")), "status": r["status"], "reason": r.get("reason") or "",
            "estimator": r.get("estimator") or "", "detail": dumps(r.get("detail") or {}), "created_at": created_at}


def _draw_row(run_id: str, r: Mapping[str, Any], created_at: str) -> dict[str, Any]:
    return {"run_id": run_id, "item_id": r["item_id"], "dimension": r["dimension"],
            "criteria_hash": r.get("criteria_hash") or "", "draw": int(r["draw"]), "raw": r.get("raw") or "",
            "value": float_or_null(r.get("value")), "status": r["status"], "reason": r.get("reason") or "",
            "created_at": created_at}


def _decoded(d: dict[str, Any]) -> dict[str, Any]:
    d["config"] = json.loads(d["config"] or "{}")
    d["stats"] = json.loads(d["stats"] or "{}")
    return d


def _current(frame: pd.DataFrame, hashes: dict[str, str | None], columns: list[str]) -> pd.DataFrame:
    """Keep rows under each dimension's current criteria hash; decode detail; the model's column order."""
    extra = [c for c in ("value", "estimator", "detail") if c not in columns]
    if frame.empty:
        return empty_frame(columns + extra)
    if hashes:
        keep = [hashes.get(d) in (None, h) for d, h in zip(frame["dimension"], frame["criteria_hash"])]
        frame = frame[keep]
    frame = frame.copy()
    frame["detail"] = [json.loads(x) if x else {} for x in frame["detail"]]
    frame["value"] = frame["value"].astype(float)
    return frame[columns + extra].reset_index(drop=True)


def _not_theirs(run_id: str, recorded: str | None, owner: str | None) -> str | None:
    """Why the signed-in ``owner`` may not resume, rewrite or add to the existing run ``run_id`` recorded as
    ``recorded``'s (None: they may). Without sign-in (``owner`` None: the operator's command line) nothing is
    refused here."""
    if not owner or recorded == owner:
        return None
    if recorded:
        return (f"a run with the id {run_id!r} belongs to another user: it is not resumed or rewritten; score yours "
                "under a new run name")
    # a run without an owner (the operator's command line, a store from before sign-in) is everyone's: a signed-in
    # user resuming it would rewrite its label and config and add their judgments to what the whole lab reads
    return (f"a run with the id {run_id!r} exists already, shared by everyone (scored without sign-in): a signed-in "
            "user does not resume, rewrite or add to it; score yours under a new run name")


class RunsStore(Connection):
    """Runs; composed in ``Store`` with ``LeasesStore`` (live_status) and ``CriteriaStore`` (add_criteria_rows)."""

    if TYPE_CHECKING:  # given by those classes in Store
        def live_status(self, run_id: str, status: str | None) -> str | None: ...

        def add_criteria_rows(self, rows: Sequence[Mapping[str, Any]]) -> None: ...

    def create_run(self, *, run_id: str, dataset_id: str, method: str, model: str, label: str = "",
                   config: dict[str, Any] | None = None, parser: str = "", status: str = "running",
                   owner: str | None = None) -> None:
        """Create the run row, or update the config/status of an existing one (resume keeps created_at and the
        owner). ``owner``: the signed-in user who started it (None without sign-in). A signed-in user never resumes
        (and so rewrites) a run that is not theirs, another user's or one without an owner
        (:meth:`run_refusal`): ValueError, nothing written."""
        cfg = dumps(config or {})
        with self.write() as c:
            existing = c.execute("SELECT created_at, owner FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if existing and (refused := _not_theirs(run_id, existing[1], owner)):
                raise ValueError(refused)
            if existing:
                c.execute("UPDATE runs SET dataset_id=?, method=?, model=?, label=?, config=?, parser=?, status=?,"
                          " updated_at=? WHERE run_id=?",
                          (dataset_id, method, model, label, cfg, parser, status, now(), run_id))
            else:
                stamp = now()
                self._insert("runs", [{"run_id": run_id, "dataset_id": dataset_id, "method": method, "model": model,
                                       "label": label, "config": cfg, "parser": parser, "created_at": stamp,
                                       "updated_at": stamp, "status": status, "stats": "{}", "owner": owner}])

    def run_refusal(self, run_id: str | None, owner: str | None) -> str | None:
        """Why the signed-in ``owner`` may not resume (rewrite, add to) the run ``run_id``, or None: no such run, one
        of theirs, or no sign-in. Asked before anything is sent (evalcore.judge.job, evalcore.judge.runner)."""
        if not run_id or not owner:
            return None
        row = self.conn.execute("SELECT owner FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else _not_theirs(run_id, row[0], owner)

    def finish_run(self, run_id: str, *, status: str, stats: dict[str, Any]) -> None:
        with self.write() as c:
            c.execute("UPDATE runs SET status=?, stats=?, updated_at=? WHERE run_id=?",
                      (status, dumps(stats), now(), run_id))

    def run_version(self, run_id: str) -> str:
        """What changes whenever the run's content does: its last write (created, resumed, finished) and status, and
        while it runs the count of its judgments and comparisons. Caches keyed by a run id alone go stale after a
        resume; keyed by (run id, version) they cannot. "" for a run the store does not hold."""
        row = self.conn.execute("SELECT updated_at, status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return ""
        version = f"{row[0]}|{row[1]}"
        if row[1] not in ("done", "failed", "stopped", "cancelled"):  # still written to: count what it holds now
            n = self.conn.execute("SELECT (SELECT count(*) FROM judgments WHERE run_id = ?) + "
                                  "(SELECT count(*) FROM comparisons WHERE run_id = ?)", (run_id, run_id)).fetchone()
            version += f"|{n[0]}"
        return version

    def runs_version(self, dataset_id: str) -> str:
        """What changes whenever the list of a dataset's runs does: a run created, resumed, finished, deleted or
        shared. A picker's cache keyed by it lists a run scored a moment ago, on any page or by the CLI."""
        n, last, shared = self.conn.execute("SELECT count(*), max(updated_at), COALESCE(SUM(shared), 0) FROM runs "
                                            "WHERE dataset_id = ?", (dataset_id,)).fetchone()
        return f"{n}|{last}|{int(shared)}"

    def run_exists(self, run_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    def run_row(self, run_id: str) -> dict[str, Any]:
        rows = self.rows("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise KeyError(f"no run {run_id!r} in the store {self.path}")
        return _decoded(rows[0])

    def run_stats(self, run_id: str) -> dict[str, Any]:
        return self.run_row(run_id)["stats"]

    def run_dimensions(self, run_id: str) -> list[str]:
        """The dimensions a stored run holds judgments or comparisons on, sorted."""
        rows = self.conn.execute("SELECT dimension FROM (SELECT DISTINCT dimension FROM judgments WHERE run_id = ?"
                                 " UNION SELECT DISTINCT dimension FROM comparisons WHERE run_id = ?) AS d"
                                 " ORDER BY dimension", (run_id, run_id)).fetchall()
        return [r[0] for r in rows]

    def save_judgment(self, run_id: str, row: Mapping[str, Any], *, cache: Sequence[Mapping[str, Any]] = (),
                      answers: Sequence[Sequence[object]] = (), draws: Sequence[Mapping[str, Any]] = ()) -> None:
        """One judgment (with its draws, when the judge was drawn several times, and the cache entries of the
        responses it came from) in one transaction. The item's earlier draws under the same criteria are replaced,
        so a failed item judged again keeps no draw of its first try."""
        values = {"run_id": run_id, "item_id": row["item_id"], "dimension": row["dimension"],
                  "criteria_hash": row.get("criteria_hash", ""), "raw": row.get("raw", ""),
                  "value": float_or_null(row.get("value")), "status": row["status"], "reason": row.get("reason", ""),
                  "estimator": row.get("estimator", ""), "detail": dumps(row.get("detail") or {}), "created_at": now()}
        self._save_with_cache(run_id, "judgments", values, cache, answers,
                              draws=[_draw_row(run_id, d, values["created_at"]) for d in draws])

    def save_comparison(self, run_id: str, row: Mapping[str, Any], *, cache: Sequence[Mapping[str, Any]] = (),
                        answers: Sequence[Sequence[object]] = ()) -> None:
        values = {"run_id": run_id, "pair_id": row["pair_id"], "doc_id": row["doc_id"],
                  "item_first": row["item_first"], "item_second": row["item_second"], "dimension": row["dimension"],
                  "order": row["order"], "criteria_hash": row.get("criteria_hash", ""), "raw": row.get("raw", ""),
                  "verdict": row.get("verdict"), "value": float_or_null(row.get("value")), "status": row["status"],
                  "reason": row.get("reason", ""), "estimator": row.get("estimator", ""),
                  "detail": dumps(row.get("detail") or {}), "created_at": now()}
        self._save_with_cache(run_id, "comparisons", values, cache, answers)

    def _save_with_cache(self, run_id: str, table: str, values: dict[str, Any], cache: Sequence[Mapping[str, Any]],
                         answers: Sequence[Sequence[object]], draws: Sequence[Mapping[str, Any]] = ()) -> None:
        """One judgment or comparison row with its responses' cache entries, answers rows and draws, in one
        transaction."""
        rows = cache_rows(list(cache))
        with self.write() as c:
            if table == "judgments":
                c.execute("DELETE FROM draws WHERE run_id = ? AND item_id = ? AND dimension = ? AND criteria_hash = ?",
                          (run_id, values["item_id"], values["dimension"], values["criteria_hash"]))
            if draws:
                self._insert("draws", list(draws), replace=True)
            if rows:
                self._insert("cache", rows, replace=True)
            if answers:
                self._insert("answers", [{"run_id": run_id, **dict(zip(_ANSWER_FIELDS, a, strict=True)),
                                          "created_at": now()} for a in answers], replace=True)
            self._insert(table, [values], replace=True)

    def answers(self, run_id: str) -> pd.DataFrame:
        """Which endpoint answered each request the run sent (cache hits are not listed)."""
        return self.frame("SELECT key, task, dimension, answered_by, prompt_tokens, cached_tokens, latency_s,"
                          " created_at FROM answers WHERE run_id = ? ORDER BY created_at", (run_id,))

    def done_keys(self, run_id: str, *, pairwise: bool) -> dict[tuple, str]:
        """What a run already holds: key -> status. Items: (item_id, dimension, criteria_hash);
        pairs: (pair_id, order, dimension, criteria_hash)."""
        if pairwise:
            q = 'SELECT pair_id, "order", dimension, criteria_hash, status FROM comparisons WHERE run_id = ?'
        else:
            q = "SELECT item_id, dimension, criteria_hash, status FROM judgments WHERE run_id = ?"
        return {tuple(r[:-1]): r[-1] for r in self.conn.execute(q, (run_id,))}

    def _run_from_row(self, d: dict[str, Any]) -> Run:
        cfg = dict(d["config"])
        cfg.setdefault("stats", d.get("stats") or {})
        cfg["status"] = self.live_status(d["run_id"], d.get("status"))
        if d.get("owner"):  # who started it, on a server with sign-in (schema version 4)
            cfg["owner"], cfg["shared"] = d["owner"], bool(d.get("shared"))
        return Run(run_id=d["run_id"], dataset_id=d["dataset_id"], method=d["method"], model=d["model"],
                   label=d["label"] or "", config=cfg, parser=d["parser"] or "", origin="local",
                   created_at=d["created_at"] or "")

    def list_runs(self, dataset_id: str | None = None, *, viewer: Viewer | None = None) -> list[Run]:
        """Runs ``viewer`` sees (None: all), newest first, WITHOUT their judgments: cheap enough for a picker."""
        where, args = visible_sql(viewer)
        if dataset_id:
            where, args = f"dataset_id = ? AND {where}", [dataset_id, *args]
        rows = self.rows(f"SELECT * FROM runs WHERE {where} ORDER BY created_at DESC, run_id", args)
        return [self._run_from_row(_decoded(d)) for d in rows]

    def load_run(self, run_id: str) -> Run:
        """A run with its judgments (or comparisons) under the criteria versions its config names, in a stable
        order (dimension, item), whatever order they completed in."""
        d = self.run_row(run_id)
        run = self._run_from_row(d)
        hashes = {dim: c.get("hash") for dim, c in (run.config.criteria or {}).items()}
        j = self.frame("SELECT * FROM judgments WHERE run_id = ? ORDER BY dimension, item_id", (run_id,))
        c = self.frame('SELECT * FROM comparisons WHERE run_id = ? ORDER BY dimension, pair_id, "order"', (run_id,))
        run.judgments = _current(j, hashes, JUDGMENT_COLUMNS)
        run.comparisons = _current(c, hashes, COMPARISON_COLUMNS)
        run.draws = self._draws(run_id, hashes)
        return run

    def _draws(self, run_id: str, hashes: dict[str, str | None]) -> pd.DataFrame:
        """A run's draws under the criteria versions its config names (empty for a run of one draw)."""
        d = self.frame("SELECT * FROM draws WHERE run_id = ? ORDER BY dimension, item_id, draw", (run_id,))
        if d.empty:
            return empty_frame(DRAW_COLUMNS)
        if hashes:
            d = d[[hashes.get(x) in (None, h) for x, h in zip(d["dimension"], d["criteria_hash"])]]
        d = d.assign(value=d["value"].astype(float), draw=d["draw"].astype(int))
        return d[DRAW_COLUMNS].reset_index(drop=True)

    def delete_run(self, run_id: str) -> None:
        with self.write() as c:
            for t in ("judgments", "comparisons", "draws", "answers", "runs"):
                c.execute(f"DELETE FROM {t} WHERE run_id = ?", (run_id,))

    def save_imported_run(self, run: Run, *, status: str = "done", criteria: Sequence[Mapping[str, Any]] = (),
                          owner: str | None = None) -> None:
        """A whole run brought from a file (judge scores, a run bundle) in one transaction: it replaces any run with
        the same id, so importing again never leaves a mix of old and new judgments; but never another user's run
        (``owner``: the signed-in user importing it, None without sign-in)."""
        stats, config = run.config.stats.to_dict(), run.config.stored()
        rows = [_judgment_row(run.run_id, r, r.get("created_at") or now())
                for r in run.judgments.to_dict("records")]
        comparisons = [_comparison_row(run.run_id, r, r.get("created_at") or now())
                       for r in run.comparisons.to_dict("records")]
        draws = [_draw_row(run.run_id, r, now()) for r in run.draws.to_dict("records")]
        with self.write() as c:
            old = c.execute("SELECT owner, shared FROM runs WHERE run_id = ?", (run.run_id,)).fetchone()
            if old is not None and old[0] and old[0] != owner:
                raise ValueError(f"a run with id {run.run_id!r} belongs to another user: import it under another "
                                 "name")
            if old is not None and not old[0] and owner:
                # a run without an owner (the operator's CLI import, a store from before sign-in) is everyone's: a
                # signed-in user replacing it would rewrite what the whole lab reads and become its owner
                raise ValueError(f"a run with id {run.run_id!r} exists already, shared by everyone (imported "
                                 "without sign-in): import yours under another name")
            for t in ("judgments", "comparisons", "draws", "runs"):
                c.execute(f"DELETE FROM {t} WHERE run_id = ?", (run.run_id,))
            self._insert("runs", [{"run_id": run.run_id, "dataset_id": run.dataset_id, "method": run.method,
                                   "model": run.model, "label": run.label, "config": dumps(config),
                                   "parser": run.parser, "created_at": run.created_at or now(), "updated_at": now(),
                                   "status": status, "stats": dumps(stats),
                                   "owner": old[0] if old is not None and old[0] else owner}])
            if old is not None and old[1]:
                c.execute("UPDATE runs SET shared = 1 WHERE run_id = ?", (run.run_id,))
            self.add_criteria_rows(criteria)
            self._insert("judgments", rows, replace=True)
            self._insert("comparisons", comparisons, replace=True)
            self._insert("draws", draws, replace=True)
