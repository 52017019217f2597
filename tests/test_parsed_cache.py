"""data/parsed: the bundled runs' pre-parsed values are current, equal a fresh parse, and a stale file is ignored."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from evalcore import datasets, parsed_cache, parsers

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import build_parsed  # noqa: E402

# The default view's runs (robust RTS), a pairwise run, a run of sampled replies (G-Eval, n=20) and a cheap one.
CHECKED = ["summeval/shen-gpt-4-0314-rts", "summeval/shen-gpt-3.5-turbo-0301-h2h",
           "topical_chat/chiang-lee-gpt-3.5-geval", "summeval/shen-gpt-3.5-turbo-0301-mcq"]


@pytest.fixture(autouse=True)
def _fresh_caches():
    datasets._parsed_run.cache_clear()
    datasets._json.cache_clear()
    yield
    datasets._parsed_run.cache_clear()
    datasets._json.cache_clear()


def _table(run_id: str, mode: str) -> pd.DataFrame:
    run = datasets.load_bundled_run(run_id, parse=mode)
    return run.comparisons if datasets._run_entry(run_id)["kind"] == "comparisons" else run.judgments


def test_every_pre_parsed_file_is_current():
    stale = [str(p.relative_to(datasets.DATA_DIR)) for _, _, p in build_parsed.stale_files()]
    assert stale == [], f"run `python scripts/build_parsed.py` (parser or bundled runs changed): {stale}"
    assert build_parsed.main(["--check"]) == 0


@pytest.mark.parametrize("mode", parsers.PARSE_MODES)
@pytest.mark.parametrize("run_id", CHECKED)
def test_pre_parsed_run_equals_a_fresh_parse(run_id, mode):
    entry = datasets._run_entry(run_id)
    fresh = datasets.parse_bundled(entry, datasets._raw_replies(entry), mode)
    pd.testing.assert_frame_equal(_table(run_id, mode), fresh)


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A copy of data/ the test may damage, in use as the bundled data."""
    copy = tmp_path / "data"
    shutil.copytree(datasets.DATA_DIR, copy)
    monkeypatch.setattr(datasets, "DATA_DIR", copy)
    return copy


def _rewrite_values(path: Path, value: float, fingerprint: bytes | None = None) -> None:
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    if fingerprint is not None:
        meta[parsed_cache.FINGERPRINT_KEY] = fingerprint
    frame = table.to_pandas()
    frame["value"] = value
    parsed_cache.write(path, frame, parsed_cache.JUDGMENT_PARSED, meta[parsed_cache.FINGERPRINT_KEY].decode())


def test_a_current_file_is_what_loads(data_copy):
    """White box: with its fingerprint intact, the file's values are the ones loaded (no parse happens)."""
    run_id = "summeval/shen-gpt-4-0314-rts"
    path = parsed_cache.parsed_path(data_copy, datasets._run_entry(run_id), "robust")
    _rewrite_values(path, 9.0)
    assert (_table(run_id, "robust")["value"] == 9.0).all()


def test_a_stale_file_is_ignored(data_copy):
    """A file made by another parser (another fingerprint), or for other replies, is never used: the replies are
    parsed again and the values are the true ones."""
    run_id = "summeval/shen-gpt-4-0314-rts"
    entry = datasets._run_entry(run_id)
    truth = datasets.parse_bundled(entry, datasets._raw_replies(entry), "robust")
    path = parsed_cache.parsed_path(data_copy, entry, "robust")
    _rewrite_values(path, 9.0, fingerprint=b"0" * 64)
    pd.testing.assert_frame_equal(_table(run_id, "robust"), truth)
    assert [p for _, _, p in build_parsed.stale_files()] == [path]

    # the raw replies change (a rebuilt data/runs file): the old parse no longer matches them
    datasets._parsed_run.cache_clear()
    build_parsed.main([])
    raw_path = data_copy / entry["file"]
    raw = pq.read_table(raw_path).to_pandas()
    raw.loc[0, "raw"] = "Score: 1"
    raw.to_parquet(raw_path, index=False)
    got = _table(run_id, "robust")
    assert got.loc[0, "value"] == 1.0 and got.loc[0, "raw"] == "Score: 1"


def test_a_missing_directory_only_costs_time(data_copy):
    shutil.rmtree(data_copy / "parsed")
    run_id = "summeval/shen-gpt-3.5-turbo-0301-h2h"
    entry = datasets._run_entry(run_id)
    pd.testing.assert_frame_equal(_table(run_id, "robust"),
                                  datasets.parse_bundled(entry, datasets._raw_replies(entry), "robust"))
