"""RunConfig / RunStats (evalcore.model): typed fields over what a run records, read and written back byte for byte.

Every bundled run's config (data/runs/manifest.json) and every run row of the store fixtures (config and stats
columns) gives back the same JSON text; random dicts (known keys with any JSON value, unknown keys) too; the
read-only mapping view answers as the dict did, so readers written for the dict keep working."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings as hyp_settings, strategies as hst

from evalcore import datasets
from evalcore.model import Run, RunConfig, RunStats
from evalcore.store import Store
from evalcore.store.connection import dumps

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "tests" / "fixtures").glob("store_v*.db"))


def manifest_configs() -> list[tuple[str, dict]]:
    manifest = json.loads((ROOT / "data" / "runs" / "manifest.json").read_text(encoding="utf-8"))
    return [(r["run_id"], r["config"]) for r in manifest["runs"]]


def stored_rows(path: Path) -> list[tuple[str, str, str]]:
    """(run_id, config text, stats text) of every run row, read-only."""
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return con.execute("SELECT run_id, config, stats FROM runs ORDER BY run_id").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("run_id,config", manifest_configs(), ids=[r for r, _ in manifest_configs()])
def test_every_bundled_run_config_round_trips_byte_for_byte(run_id, config):
    rec = RunConfig.from_dict(config)
    assert json.dumps(rec.to_dict(), ensure_ascii=False) == json.dumps(config, ensure_ascii=False)
    assert list(rec) == list(config) and dict(rec.items()) == config and len(rec) == len(config)
    assert rec.method == config["method"] and rec.model == config["model"] and rec.n == config["n"]
    run = next(r for r in datasets.list_bundled_runs(run_id.split("/")[0]) if r.run_id == run_id)
    assert isinstance(run.config, RunConfig) and run.config.to_dict() == config


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_every_fixture_store_row_round_trips_byte_for_byte(fixture):
    rows = stored_rows(fixture)
    assert rows
    for run_id, config_text, stats_text in rows:
        config = RunConfig.from_dict(json.loads(config_text or "{}"))
        assert dumps(config.to_dict()) == config_text, run_id
        stats = RunStats.from_dict(json.loads(stats_text or "{}"))
        assert dumps(stats.to_dict()) == stats_text, run_id


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_run_read_from_a_fixture_store_and_imported_again_keeps_its_config_text(fixture, tmp_path):
    path = tmp_path / "evalcore.db"
    shutil.copy(fixture, path)
    store = Store(path)
    before = {r: (c, s) for r, c, s in stored_rows(path)}
    for run in store.list_runs():
        config_text, stats_text = before[run.run_id]
        assert dumps(run.config.stored()) == config_text
        assert run.config.stats.to_dict() == json.loads(stats_text or "{}")
        store.save_imported_run(store.load_run(run.run_id), status=run.config.status)
        after = {r: (c, s) for r, c, s in stored_rows(path)}
        assert after[run.run_id] == (config_text, stats_text or "{}")


def test_typed_fields_read_an_engine_run_config():
    rec = RunConfig.from_dict({
        "method": "geval", "method_config": {"n_samples": 20}, "plan_note": "", "criteria": {"fluency": {"hash": "h"}},
        "parse_mode": "robust", "pairs": None, "limit": None, "variant": "", "my_key": [1, 2],
        "stats": {"requests": 4, "cached": 1, "ok": 3, "failed": 1, "resumed": True, "new_counter": 7},
        "status": "done", "owner": "alice", "shared": True})
    assert (rec.method, rec.method_config, rec.criteria["fluency"]["hash"]) == ("geval", {"n_samples": 20}, "h")
    assert rec.extra == {"my_key": [1, 2]} and rec["my_key"] == [1, 2]
    assert (rec.stats.requests, rec.stats.ok, rec.stats.resumed, rec.stats.extra) == (4, 3, True, {"new_counter": 7})
    assert rec["stats"] == {"requests": 4, "cached": 1, "ok": 3, "failed": 1, "resumed": True, "new_counter": 7}
    # present with the value None is not absent: the mapping says so, as the dict did
    assert "limit" in rec and rec.get("limit", 5) is None and "endpoint" not in rec and rec.get("endpoint") is None
    assert rec.stored() == {k: v for k, v in rec.to_dict().items() if k not in ("stats", "status", "owner", "shared")}
    with pytest.raises(KeyError):
        rec["endpoint"]
    # a key the record lacks reads as its field's default
    assert (rec.endpoint, rec.estimator, RunConfig().stats.requests, RunConfig().status) == (None, "", 0, "")


def test_a_run_given_a_dict_holds_a_run_config_and_replace_updates_as_a_dict_would():
    run = Run(run_id="d/r", dataset_id="d", method="rts", model="m", config={"b": 1, "parse_mode": "paper"})
    assert isinstance(run.config, RunConfig) and run.config.parse_mode == "paper"
    again = run.config.replace(parse_mode="robust", status="done")
    assert list(again.to_dict().items()) == [("b", 1), ("parse_mode", "robust"), ("status", "done")]
    assert run.config.parse_mode == "paper"  # the record is not changed in place
    with pytest.raises(AttributeError):
        run.config.parse_mode = "x"  # type: ignore[misc]
    assert RunConfig(method="m", status="done").to_dict() == {"method": "m", "status": "done"}
    assert RunConfig.from_dict({"a": 1}) == {"a": 1} and not RunConfig()


JSON_LEAF = hst.none() | hst.booleans() | hst.integers() | hst.floats(allow_nan=False) | hst.text(max_size=8)
JSON_VALUE = hst.recursive(JSON_LEAF, lambda inner: hst.lists(inner, max_size=3)
                           | hst.dictionaries(hst.text(max_size=6), inner, max_size=3), max_leaves=8)
CONFIG_KEYS = hst.sampled_from(sorted(RunConfig.known())) | hst.text(max_size=10)
STATS_KEYS = hst.sampled_from(sorted(RunStats.known())) | hst.text(max_size=10)


@hyp_settings(max_examples=200, deadline=None)
@given(config=hst.dictionaries(CONFIG_KEYS, JSON_VALUE, max_size=12),
       stats=hst.none() | hst.dictionaries(STATS_KEYS, JSON_VALUE, max_size=8),
       updates=hst.dictionaries(CONFIG_KEYS, JSON_VALUE, max_size=3))
def test_any_dict_round_trips_with_its_keys_in_order(config, stats, updates):
    if stats is not None:
        config = {**config, "stats": stats}
    rec = RunConfig.from_dict(config)
    assert json.dumps(rec.to_dict()) == json.dumps(config)
    assert list(rec.keys()) == list(config) and list(rec.items()) == list(config.items())
    assert all(rec.get(k) == v and k in rec for k, v in config.items())
    assert json.dumps(RunConfig.from_dict(json.loads(json.dumps(rec.to_dict()))).to_dict()) == json.dumps(config)
    assert json.dumps(rec.replace(**updates).to_dict()) == json.dumps({**config, **updates})
