"""The store's schema, versioned by ``PRAGMA user_version`` (PostgreSQL: the row of ``evalcore_schema_version``),
and the ordered migrations that bring a store to it, the same steps on both backends.

Version 0 is a file written before the schema had a version (releases up to f83ee0d): its core tables were created
when a store opened, three more (``probe_failures``, ``batches``, ``labels``) by their first user. Version 1 is the
same tables and columns, all created when a store opens, with the version recorded. Version 2 adds ``meta``
(key, value) holding ``store_id``, a random id that tells a writer its file was replaced. Version 3 keys ``batches``
by (endpoint, batch_id), the endpoint being the run's base URL. Version 4 records who wrote a row on a server with
sign-in (evalcore.identity): ``owner`` (the signed-in user's name; NULL for a row written without sign-in, which
everyone sees) and ``shared`` (1: shared with the lab) at the end of ``datasets``, ``runs`` and ``criteria``,
``owner`` at the end of ``labels`` with a ``label_shares`` table (a user's labels on a dataset, shared), and
``steps_by`` at the end of ``criteria`` (the model that generated the evaluation steps; '' when a person wrote them).
Version 5 adds ``splits`` and ``final_checks`` (evalcore.store.splits: the development / test split of a dataset's
documents for judge alignment, and every final check made on a split's test part, so that looking at the test part
again is counted). Version 6 adds ``owner`` at the end of ``final_checks`` (whose check or look it is: counted per
user) and the ``spending`` table (what each user, or everyone not signed in together, started on the operator's key:
the cap of evalcore.judge.spending holds across sessions). Version 7 adds ``draws``: a judge sampled K times per
item keeps every draw (its index, reply and parsed value) beside the judgments row that aggregates them. Version 8
records the Improve loop's old test-part runs as such. Version 9 adds labelling campaigns: ``campaigns``,
``campaign_assignments``, ``campaign_locks``, ``campaign_labels`` and ``campaign_adjudications``
(evalcore.store.campaigns).

Opening a store runs the migrations it lacks in place, in ONE transaction, after a backup copy of the file next to
it (``<name>.bak-v<old>-<UTC timestamp>``) when the file already held tables: a failed migration rolls back and the
backup stays. A file whose version is above :data:`SCHEMA_VERSION` (a newer release wrote it) is refused with
:class:`StoreTooNew` and not written to at all.

A PostgreSQL store (evalcore.store.dialect) runs the same steps, each statement translated by
:func:`evalcore.store.postgres.ddl` (types, ``AUTOINCREMENT``, ``INSERT OR IGNORE``), in one transaction under the
store's write lock; a step using SQLite's own functions (``json_extract``, ...) has its PostgreSQL statements in
:data:`PG_STEPS`. No copy is made before migrating a PostgreSQL store: take one with ``pg_dump`` before upgrading.

To change the schema: append a ``(version, why, statements)`` step to :data:`MIGRATIONS`; never edit a step that a
release has shipped. Write portable SQL (the DDL the translation knows), or add the step's PostgreSQL version to
:data:`PG_STEPS`; tests/test_store_backends.py migrates a PostgreSQL store through every step.

Tables
------
cache          key (sha256 of canonical JSON of endpoint identity + model + request.params()), endpoint, model,
               request, response (JSON), usage (JSON), latency_s, created_at
runs           run_id, dataset_id, method, model, label, config (JSON), parser, created_at, updated_at, status, stats
judgments      run_id, item_id, dimension, criteria_hash, raw, value, status, reason, estimator, detail (JSON)
comparisons    run_id, pair_id, doc_id, item_first, item_second, dimension, order, criteria_hash, raw, verdict, value,
               status, reason, estimator, detail (JSON)
answers        which endpoint answered each request a run sent (several endpoints: evalcore.judge.routing)
criteria       dataset_id, dimension, hash, task_introduction, definition, scale_min, scale_max, steps, note, created_at
datasets       id, name, task, description, citation, origin, dimensions (JSON), meta (JSON), created_at,
               + the frames (documents, items, human_scores, annotations, preferences) as parquet blobs
leases         run_id, pid, host, started, since, token: the one process scoring a run
labels         human labels made on the Label page, one row per label or skip (evalcore.store.labels)
probe_failures capability-probe requests an endpoint rejected (evalcore.judge.probes)
batches        the Batch API batches of a run (evalcore.judge.batch), keyed by (endpoint, batch_id) (version 3)
meta           key, value: ``store_id`` (version 2)
label_shares   dataset_id, owner, shared_at: a user's labels on a dataset that the lab sees (version 4)
(version 4: datasets, runs, criteria + owner, shared; criteria + steps_by; labels + owner)
splits         dataset_id, split_id, dimension, seed, test_share, strata, dev_docs (JSON), test_docs (JSON),
               created_at: a document-level development / test split (version 5)
final_checks   check_id, dataset_id, split_id, dimension, method, baseline_hash, chosen_hash, baseline_run,
               chosen_run, result (JSON), created_at: one row per final check on a split's test part (version 5)
               + owner (version 6): the user whose check (or look at the test part's agreement) it is
draws          run_id, item_id, dimension, criteria_hash, draw, raw, value, status, reason, created_at: the K
               draws of an item whose judgments row is their aggregate (version 7)
spending       spend_id, spender (a user's name, '' for visitors not signed in), usd, calls, what, created_at:
               what was started on the operator's key (version 6)
campaigns      campaign_id, dataset_id, dimension, name, creator, k, selection, seed, lock_ttl_s, threshold,
               created_at: a labelling campaign (evalcore.store.campaigns; version 9)
campaign_assignments  campaign_id, item_id, slot, annotator, position, assigned_at: the k annotators of each item
campaign_locks campaign_id, item_id, slot, annotator, expires_at (seconds since the epoch): an item open (version 9)
campaign_labels label_id (a row of labels), campaign_id, slot: which campaign a label was given in (version 9)
campaign_adjudications adjudication_id, campaign_id, item_id, value, adjudicator, note, created_at: the final label
               of an item the annotators disagree on, appended (the latest wins) (version 9)
"""

from __future__ import annotations

import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from evalcore.store import postgres
from evalcore.store.connection import BUSY_TIMEOUT_S, Connection, StoreTooNew
from evalcore.store.dialect import DbConnection
from evalcore.store.postgres import PgConnection

# The tables exactly as the unversioned release wrote them (sqlite-utils' DDL), so a version-0 file and a fresh
# version-1 file have the same schema.
_V1_TABLES = [
    """CREATE TABLE IF NOT EXISTS "cache" ("key" TEXT PRIMARY KEY, "endpoint" TEXT, "model" TEXT, "request" TEXT,
       "response" TEXT, "usage" TEXT, "latency_s" REAL, "created_at" TEXT)""",
    """CREATE TABLE IF NOT EXISTS "runs" ("run_id" TEXT PRIMARY KEY, "dataset_id" TEXT, "method" TEXT, "model" TEXT,
       "label" TEXT, "config" TEXT, "parser" TEXT, "created_at" TEXT, "updated_at" TEXT, "status" TEXT,
       "stats" TEXT)""",
    """CREATE TABLE IF NOT EXISTS "judgments" ("run_id" TEXT, "item_id" TEXT, "dimension" TEXT, "criteria_hash" TEXT,
       "raw" TEXT, "value" REAL, "status" TEXT, "reason" TEXT, "estimator" TEXT, "detail" TEXT, "created_at" TEXT,
       PRIMARY KEY ("run_id", "item_id", "dimension", "criteria_hash"))""",
    """CREATE TABLE IF NOT EXISTS "comparisons" ("run_id" TEXT, "pair_id" TEXT, "doc_id" TEXT, "item_first" TEXT,
       "item_second" TEXT, "dimension" TEXT, "order" TEXT, "criteria_hash" TEXT, "raw" TEXT, "verdict" TEXT,
       "value" REAL, "status" TEXT, "reason" TEXT, "estimator" TEXT, "detail" TEXT, "created_at" TEXT,
       PRIMARY KEY ("run_id", "pair_id", "order", "dimension", "criteria_hash"))""",
    """CREATE TABLE IF NOT EXISTS "criteria" ("dataset_id" TEXT, "dimension" TEXT, "hash" TEXT,
       "task_introduction" TEXT, "definition" TEXT, "scale_min" INTEGER, "scale_max" INTEGER, "steps" TEXT,
       "note" TEXT, "created_at" TEXT, PRIMARY KEY ("dataset_id", "dimension", "hash"))""",
    """CREATE TABLE IF NOT EXISTS "datasets" ("id" TEXT PRIMARY KEY, "name" TEXT, "task" TEXT, "description" TEXT,
       "citation" TEXT, "origin" TEXT, "dimensions" TEXT, "meta" TEXT, "created_at" TEXT, "documents" BLOB,
       "items" BLOB, "human_scores" BLOB, "annotations" BLOB, "preferences" BLOB)""",
    'CREATE INDEX IF NOT EXISTS "idx_runs_dataset_id" ON "runs" ("dataset_id")',
    """CREATE TABLE IF NOT EXISTS "leases" ("run_id" TEXT PRIMARY KEY, "pid" INTEGER, "host" TEXT, "started" TEXT,
       "since" TEXT, "token" TEXT)""",
    """CREATE TABLE IF NOT EXISTS "answers" ("run_id" TEXT, "key" TEXT, "task" TEXT, "dimension" TEXT,
       "answered_by" TEXT, "prompt_tokens" INTEGER, "cached_tokens" INTEGER, "latency_s" REAL, "created_at" TEXT,
       PRIMARY KEY ("run_id", "key", "task"))""",
    """CREATE TABLE IF NOT EXISTS "probe_failures" ("key" TEXT PRIMARY KEY, "endpoint" TEXT, "request" TEXT,
       "reason" TEXT, "created_at" TEXT)""",
    """CREATE TABLE IF NOT EXISTS "batches" ("run_id" TEXT, "batch_id" TEXT PRIMARY KEY, "route" TEXT,
       "input_file_id" TEXT, "api_key_env" TEXT, "status" TEXT, "total" INTEGER, "completed" INTEGER,
       "failed" INTEGER, "output_file_id" TEXT, "error_file_id" TEXT, "errors" TEXT, "collected" INTEGER,
       "created_at" TEXT, "updated_at" TEXT)""",
    'CREATE INDEX IF NOT EXISTS "idx_batches_run_id" ON "batches" ("run_id")',
    # Append-only, the latest row of (dataset, item, dimension, annotator) winning (evalcore.labels.latest_labels).
    """CREATE TABLE IF NOT EXISTS labels (label_id INTEGER PRIMARY KEY AUTOINCREMENT, dataset_id TEXT NOT NULL,
       item_id TEXT NOT NULL, dimension TEXT NOT NULL, annotator TEXT NOT NULL, value REAL,
       skipped INTEGER NOT NULL DEFAULT 0, strategy TEXT NOT NULL DEFAULT 'random', position INTEGER NOT NULL,
       shown_at TEXT, created_at TEXT NOT NULL, session TEXT)""",
    "CREATE INDEX IF NOT EXISTS labels_by_annotator ON labels (dataset_id, annotator, label_id)",
    "CREATE INDEX IF NOT EXISTS labels_by_item ON labels (dataset_id, dimension, item_id)",
]

# A random id kept inside the file: a writer that finds another id at its path knows the file was replaced
# (evalcore.store.connection.Connection.write, issue 21 item 10). A backup copy keeps the id of its store.
_V2_STORE_ID = [
    'CREATE TABLE IF NOT EXISTS "meta" ("key" TEXT PRIMARY KEY, "value" TEXT)',
    """INSERT OR IGNORE INTO "meta" ("key", "value") VALUES ('store_id', lower(hex(randomblob(16))))""",
]

# Batch ids are unique per server only: key batches by (endpoint, batch id), so the same id from two servers makes
# two rows (issue 21 item 4). A row's endpoint is its run's recorded base URL (runs.config.endpoint.base_url, as
# Endpoint.identity() writes it); the new column goes last so that every old column keeps its place.
_BATCH_COLUMNS = ('"run_id", "batch_id", "route", "input_file_id", "api_key_env", "status", "total", "completed", '
                  '"failed", "output_file_id", "error_file_id", "errors", "collected", "created_at", "updated_at"')
_V3_BATCHES_BY_ENDPOINT = [
    """CREATE TABLE "batches_v3" ("run_id" TEXT, "batch_id" TEXT NOT NULL, "route" TEXT, "input_file_id" TEXT,
       "api_key_env" TEXT, "status" TEXT, "total" INTEGER, "completed" INTEGER, "failed" INTEGER,
       "output_file_id" TEXT, "error_file_id" TEXT, "errors" TEXT, "collected" INTEGER, "created_at" TEXT,
       "updated_at" TEXT, "endpoint" TEXT NOT NULL DEFAULT '', PRIMARY KEY ("endpoint", "batch_id"))""",
    f"""INSERT INTO "batches_v3" ({_BATCH_COLUMNS}, "endpoint")
        SELECT {', '.join('b.' + c for c in _BATCH_COLUMNS.split(', '))},
               COALESCE((SELECT json_extract(r.config, '$.endpoint.base_url') FROM runs r
                         WHERE r.run_id = b.run_id AND json_valid(r.config)), '')
        FROM "batches" b""",
    'DROP TABLE "batches"',
    'ALTER TABLE "batches_v3" RENAME TO "batches"',
    'CREATE INDEX IF NOT EXISTS "idx_batches_run_id" ON "batches" ("run_id")',
]

# Who wrote a row, on a server with sign-in (issue 21, items 6, 8 and 13): new columns go last, so every old column
# keeps its place; an old row gets owner NULL (written without sign-in: everyone sees it, as before) and shared 0.
_V4_OWNERS = [
    *(f'ALTER TABLE "{t}" ADD COLUMN "owner" TEXT' for t in ("datasets", "runs", "criteria", "labels")),
    *(f'ALTER TABLE "{t}" ADD COLUMN "shared" INTEGER NOT NULL DEFAULT 0' for t in ("datasets", "runs", "criteria")),
    """ALTER TABLE "criteria" ADD COLUMN "steps_by" TEXT NOT NULL DEFAULT ''""",
    """CREATE TABLE IF NOT EXISTS "label_shares" ("dataset_id" TEXT NOT NULL, "owner" TEXT NOT NULL,
       "shared_at" TEXT, PRIMARY KEY ("dataset_id", "owner"))""",
]

# Judge alignment (issue 22): a split of a dataset's documents into a development and a held-out test part, kept
# with the dataset, and one row per final check on a test part (a second look at the same test part is counted).
_V5_SPLITS = [
    """CREATE TABLE IF NOT EXISTS "splits" ("dataset_id" TEXT NOT NULL, "split_id" TEXT NOT NULL,
       "dimension" TEXT NOT NULL, "seed" INTEGER NOT NULL, "test_share" REAL NOT NULL, "strata" TEXT NOT NULL,
       "dev_docs" TEXT NOT NULL, "test_docs" TEXT NOT NULL, "created_at" TEXT NOT NULL,
       PRIMARY KEY ("dataset_id", "split_id"))""",
    """CREATE TABLE IF NOT EXISTS "final_checks" ("check_id" INTEGER PRIMARY KEY AUTOINCREMENT,
       "dataset_id" TEXT NOT NULL, "split_id" TEXT NOT NULL, "dimension" TEXT NOT NULL, "method" TEXT,
       "baseline_hash" TEXT, "chosen_hash" TEXT, "baseline_run" TEXT, "chosen_run" TEXT, "result" TEXT,
       "created_at" TEXT NOT NULL)""",
    'CREATE INDEX IF NOT EXISTS "idx_final_checks_split" ON "final_checks" ("dataset_id", "split_id")',
]

# A shared server (issue 29, items 6 and 8): a final check, or a look at a test part's agreement on another page, is
# counted for the user who made it (``owner`` last; NULL for a row written without sign-in, as every row before), and
# what was spent on the operator's key is kept per user (a signed-in user's name; '' for everyone not signed in
# together), so that a cap holds across sessions.
_V6_VIEWERS_AND_SPENDING = [
    'ALTER TABLE "final_checks" ADD COLUMN "owner" TEXT',
    """CREATE TABLE IF NOT EXISTS "spending" ("spend_id" INTEGER PRIMARY KEY AUTOINCREMENT,
       "spender" TEXT NOT NULL, "usd" REAL NOT NULL, "calls" INTEGER NOT NULL, "what" TEXT NOT NULL,
       "created_at" TEXT NOT NULL)""",
    'CREATE INDEX IF NOT EXISTS "idx_spending_spender" ON "spending" ("spender")',
]

# A judge sampled K times per item (a temperature above 0, a reasoning model held at its default temperature, a
# panel's repeated draws) keeps every draw: the judgments row stays the one value every analysis reads (the draws'
# aggregate, evalcore.model.aggregate_draws), and the draws are what the reliability report reads.
_V7_DRAWS = [
    """CREATE TABLE IF NOT EXISTS "draws" ("run_id" TEXT, "item_id" TEXT, "dimension" TEXT, "criteria_hash" TEXT,
       "draw" INTEGER, "raw" TEXT, "value" REAL, "status" TEXT, "reason" TEXT, "created_at" TEXT,
       PRIMARY KEY ("run_id", "item_id", "dimension", "criteria_hash", "draw"))""",
]

# Which split and part a run of the Improve loop scored is read from its record (the spec's ``align``), no longer
# from its id. Runs a release wrote before recorded none; their ids (``{dataset}/align-{split[:8]}-test-...``,
# evalcore.align.loop.run_id_for) are read here once, so that opening an old test part's run is still a counted look.
# Only test parts matter to that count; a prefix that matches no split of the dataset, or more than one, is left.
_V8_ALIGN_RECORDS = [
    """UPDATE "runs" SET "config" = json_insert(json_set(COALESCE("config", '{}'), '$.spec.align',
           json_object('split', (SELECT s."split_id" FROM "splits" s WHERE s."dataset_id" = "runs"."dataset_id"
                                 AND substr(s."split_id", 1, 8) = substr("runs"."run_id", length("runs"."dataset_id") + 8, 8)),
                       'part', 'test')),
         '$.spec.dataset_id', "runs"."dataset_id")
       WHERE "run_id" LIKE "dataset_id" || '/align-________-test-%'
         AND json_valid(COALESCE("config", '{}'))
         AND json_extract(COALESCE("config", '{}'), '$.spec.align') IS NULL
         AND (SELECT count(*) FROM "splits" s WHERE s."dataset_id" = "runs"."dataset_id"
              AND substr(s."split_id", 1, 8) = substr("runs"."run_id", length("runs"."dataset_id") + 8, 8)) = 1""",
]

# Labelling campaigns: a dataset's items (or a sample) spread over k signed-in annotators each, an item locked while
# one of them has it open (the lock lapses at expires_at), which campaign each label was given in (the label itself is
# an ordinary row of ``labels``, so every analysis of labels reads it), and the final label an adjudicator set where
# the annotators disagree. Portable SQL only (TEXT / INTEGER / REAL, explicit primary keys): the same step runs on
# PostgreSQL.
_V9_CAMPAIGNS = [
    """CREATE TABLE IF NOT EXISTS "campaigns" ("campaign_id" TEXT NOT NULL, "dataset_id" TEXT NOT NULL,
       "dimension" TEXT NOT NULL, "name" TEXT NOT NULL, "creator" TEXT NOT NULL, "k" INTEGER NOT NULL,
       "selection" TEXT NOT NULL, "seed" INTEGER NOT NULL, "lock_ttl_s" REAL NOT NULL, "threshold" REAL NOT NULL,
       "created_at" TEXT NOT NULL, PRIMARY KEY ("campaign_id"))""",
    """CREATE TABLE IF NOT EXISTS "campaign_assignments" ("campaign_id" TEXT NOT NULL, "item_id" TEXT NOT NULL,
       "slot" INTEGER NOT NULL, "annotator" TEXT NOT NULL, "position" INTEGER NOT NULL, "assigned_at" TEXT NOT NULL,
       PRIMARY KEY ("campaign_id", "item_id", "slot"))""",
    'CREATE INDEX IF NOT EXISTS "idx_campaign_assignments_annotator" ON "campaign_assignments" ("campaign_id", '
    '"annotator")',
    """CREATE TABLE IF NOT EXISTS "campaign_locks" ("campaign_id" TEXT NOT NULL, "item_id" TEXT NOT NULL,
       "slot" INTEGER NOT NULL, "annotator" TEXT NOT NULL, "expires_at" REAL NOT NULL,
       PRIMARY KEY ("campaign_id", "item_id", "slot"))""",
    """CREATE TABLE IF NOT EXISTS "campaign_labels" ("label_id" INTEGER NOT NULL, "campaign_id" TEXT NOT NULL,
       "slot" INTEGER NOT NULL, PRIMARY KEY ("label_id"))""",
    'CREATE INDEX IF NOT EXISTS "idx_campaign_labels_campaign" ON "campaign_labels" ("campaign_id")',
    """CREATE TABLE IF NOT EXISTS "campaign_adjudications" ("adjudication_id" TEXT NOT NULL,
       "campaign_id" TEXT NOT NULL, "item_id" TEXT NOT NULL, "value" REAL NOT NULL, "adjudicator" TEXT NOT NULL,
       "note" TEXT NOT NULL, "created_at" TEXT NOT NULL, PRIMARY KEY ("adjudication_id"))""",
]

# (version reached, why, statements), in order
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "every table created up front, the schema version recorded", _V1_TABLES),
    (2, "a store id in a meta table, to tell a replaced file", _V2_STORE_ID),
    (3, "batches keyed by (endpoint, batch id)", _V3_BATCHES_BY_ENDPOINT),
    (4, "owner and sharing of datasets, runs, criteria and labels; who generated criteria steps", _V4_OWNERS),
    (5, "development / test splits and the final checks made on their test parts", _V5_SPLITS),
    (6, "final checks counted per user; spending on the operator's key kept per user", _V6_VIEWERS_AND_SPENDING),
    (7, "every draw of a judge sampled several times per item", _V7_DRAWS),
    (8, "the Improve loop's old test-part runs recorded as such (read from their ids once)", _V8_ALIGN_RECORDS),
    (9, "labelling campaigns: assignments, item locks, which campaign a label was given in, adjudications",
     _V9_CAMPAIGNS),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]

# A safe JSON parse for the PostgreSQL versions of the steps below (SQLite's json_valid): a session-local function,
# made by each migration run and gone with its session, so the store's schema holds nothing of it.
_PG_JSON = """CREATE OR REPLACE FUNCTION pg_temp.evalcore_json(t text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RETURN t::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END $$"""

_PG_V3_BATCHES_BY_ENDPOINT = [
    postgres.ddl(_V3_BATCHES_BY_ENDPOINT[0]),
    f"""INSERT INTO "batches_v3" ({_BATCH_COLUMNS}, "endpoint")
        SELECT {', '.join('b.' + c for c in _BATCH_COLUMNS.split(', '))},
               COALESCE((SELECT pg_temp.evalcore_json(r.config) #>> '{{endpoint,base_url}}' FROM runs r
                         WHERE r.run_id = b.run_id), '')
        FROM "batches" b""",
    *_V3_BATCHES_BY_ENDPOINT[2:],
]

_PG_SPLIT_OF_RUN = """(SELECT s."split_id" FROM "splits" s WHERE s."dataset_id" = r."dataset_id"
                       AND substr(s."split_id", 1, 8) = substr(r."run_id", length(r."dataset_id") + 8, 8))"""
_PG_V8_ALIGN_RECORDS = [
    f"""UPDATE "runs" r SET "config" = (
          SELECT jsonb_set(x.j, '{{spec}}', COALESCE(x.j -> 'spec', '{{}}'::jsonb)
                 || jsonb_build_object('align', jsonb_build_object('split', {_PG_SPLIT_OF_RUN}, 'part', 'test'))
                 || CASE WHEN (x.j -> 'spec') ? 'dataset_id' THEN '{{}}'::jsonb
                         ELSE jsonb_build_object('dataset_id', r."dataset_id") END)::text
          FROM (SELECT pg_temp.evalcore_json(COALESCE(r."config", '{{}}')) AS j) x)
       WHERE r."run_id" LIKE r."dataset_id" || '/align-________-test-%'
         AND jsonb_typeof(pg_temp.evalcore_json(COALESCE(r."config", '{{}}'))) = 'object'
         AND pg_temp.evalcore_json(COALESCE(r."config", '{{}}')) #>> '{{spec,align}}' IS NULL
         AND (SELECT count(*) FROM "splits" s WHERE s."dataset_id" = r."dataset_id"
              AND substr(s."split_id", 1, 8) = substr(r."run_id", length(r."dataset_id") + 8, 8)) = 1""",
]

# The PostgreSQL statements of the steps whose SQLite SQL uses SQLite's own functions; every other step's statements
# are translated by postgres.ddl.
PG_STEPS: dict[int, list[str]] = {3: _PG_V3_BATCHES_BY_ENDPOINT, 8: _PG_V8_ALIGN_RECORDS}


def pg_statements(target: int, statements: list[str]) -> list[str]:
    """A step's statements as a PostgreSQL store runs them."""
    return PG_STEPS.get(target) or [postgres.ddl(sql) for sql in statements]


def version(conn: DbConnection) -> int:
    """The store's schema version (0: nothing migrated yet)."""
    if isinstance(conn, PgConnection):
        if conn.execute("SELECT to_regclass(?)", (postgres.VERSION_TABLE,)).fetchone() in (None, (None,)):
            return 0
        row = conn.execute(f"SELECT max(version) FROM {postgres.VERSION_TABLE}").fetchone()
        return int(row[0]) if row and row[0] is not None else 0
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def open_store(store: Connection) -> Path | None:
    """Bring the store to :data:`SCHEMA_VERSION` (refusing one a newer release wrote); the pre-migration copy of a
    SQLite file when one was made, else None."""
    if store.file is None:
        c = store.conn
        assert isinstance(c, PgConnection)
        migrate_postgres(c, store)
        return None
    refuse_newer(store.file)
    c = store.conn
    assert isinstance(c, sqlite3.Connection)
    return migrate(c, store.file)


def migrate_postgres(c: PgConnection, store: Connection, *, upto: int = SCHEMA_VERSION) -> None:
    """Run the steps a PostgreSQL store lacks (up to ``upto``), in ONE transaction under the store's write lock:
    processes opening an old store at once wait there, and those after the first find it migrated. Refuses a store
    a newer release wrote before writing anything."""
    found = version(c)
    if found > SCHEMA_VERSION:
        raise StoreTooNew(too_new_message(store.path, found), path=store.path)
    if found >= upto:
        return
    with store.write():
        found = version(c)  # again, under the lock
        if found >= upto:
            return
        c.script(f'CREATE TABLE IF NOT EXISTS {postgres.VERSION_TABLE} ("version" INTEGER NOT NULL)')
        c.script(_PG_JSON)
        for target, _why, statements in MIGRATIONS:
            if found < target <= upto:
                for sql in pg_statements(target, statements):
                    c.script(sql)
        c.script(f"DELETE FROM {postgres.VERSION_TABLE}")
        c.script(f"INSERT INTO {postgres.VERSION_TABLE} VALUES ({int(upto)})")


def too_new_message(path: Path | str, found: int) -> str:
    return (f"the local store {path} has schema version {found}, newer than this release knows ({SCHEMA_VERSION}): "
            f"a newer JudgeScope wrote it. Upgrade JudgeScope, or point EVALCORE_DB (CLI: --db) at another file; "
            f"the file was left untouched.")


def _backup(path: Path, conn: sqlite3.Connection, found: int) -> Path:
    """A consistent copy of the store next to it (sqlite's backup API: the WAL's pages included)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.bak-v{found}-{stamp}")
    dst = sqlite3.connect(str(target))
    try:
        conn.backup(dst)
    finally:
        dst.close()
    shutil.copymode(path, target)
    return target


def refuse_newer(path: Path) -> None:
    """Raise StoreTooNew when the file at ``path`` has a version above ours, reading it through a read-only
    connection so that a refused file stays byte-identical (a normal open would switch it to WAL first)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        ro = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return  # not openable: the normal open reports it
    try:
        found = version(ro)
    except sqlite3.Error:
        return  # not a database, corrupt: the normal open reports it
    finally:
        ro.close()
    if found > SCHEMA_VERSION:
        raise StoreTooNew(too_new_message(path, found), path=path)


def migrate(conn: sqlite3.Connection, path: Path) -> Path | None:
    """Bring the store on ``conn`` to :data:`SCHEMA_VERSION`; the backup's path when one was made, else None.

    ``conn`` is in autocommit mode (isolation_level None). The version is read again, the backup taken and the
    migrations run while a second connection holds the write lock (``BEGIN IMMEDIATE``): processes opening an old
    file at once wait there, and those that come after the first find it migrated, so the file is migrated and
    backed up ONCE (six openers wrote six backups when the copy was taken before the lock). The copy is read
    through ``conn``, which is not writing (sqlite's backup cannot read through a connection that is; in WAL mode
    a reader is not blocked by a writer that has not committed)."""
    if version(conn) > SCHEMA_VERSION:
        raise StoreTooNew(too_new_message(path, version(conn)), path=path)
    if version(conn) == SCHEMA_VERSION:
        return None
    writer = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        try:
            backup = _migrate_locked(conn, writer, path)
        except BaseException:
            if writer.in_transaction:
                writer.execute("ROLLBACK")
            raise
        if writer.in_transaction:
            writer.execute("COMMIT")
        return backup
    finally:
        writer.close()


def _migrate_locked(conn: sqlite3.Connection, writer: sqlite3.Connection, path: Path) -> Path | None:
    """:func:`migrate`'s work, ``writer`` holding the write lock."""
    found = version(writer)  # again, under the lock: another process may have migrated it meanwhile
    if found > SCHEMA_VERSION:
        raise StoreTooNew(too_new_message(path, found), path=path)
    if found == SCHEMA_VERSION:
        writer.execute("ROLLBACK")
        return None
    has_tables = writer.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0] > 0
    backup = _backup(path, conn, found) if has_tables else None
    for target, _why, statements in MIGRATIONS:
        if target > found:
            for sql in statements:
                writer.execute(sql)
    writer.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return backup
