"""The CLI mirrors the library: its JSON carries the same numbers the library computes."""

import json
from pathlib import Path
import subprocess
import sys

import pytest

from evalcore import meta
from evalcore.cli import main
from evalcore.datasets import load_bundled_run, load_dataset
from evalcore.runs import score_frame

SHEN_RTS = "summeval/shen-gpt-3.5-turbo-0301-rts"


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_datasets_lists_bundled_data(capsys):
    rows = {r["id"]: r for r in run_json(capsys, "datasets")}
    assert rows["summeval"]["items"] == 1600
    assert rows["summeval"]["systems"] == 16
    assert rows["summeval"]["annotators"] == 8
    assert set(rows["summeval"]["dimensions"]) == {"coherence", "consistency", "fluency", "relevance"}
    assert {"topical_chat", "qags_cnndm", "qags_xsum", "fed_dialogue", "zhang_pairs"} <= set(rows)


def test_runs_lists_published_runs(capsys):
    ids = {r["run_id"] for r in run_json(capsys, "runs", "--dataset", "summeval")}
    assert {SHEN_RTS, "summeval/shen-gpt-4-0314-rts", "summeval/shen-gpt-3.5-turbo-0301-h2h"} <= ids


def test_meta_json_reproduces_shen_correct_preferences(capsys):
    # 003 Table 5: ChatGPT RTS #CP 54/56/62/62 of 66 with the paper's parse rule, 28 of 44 challenge pairs
    out = run_json(capsys, "meta", "--dataset", "summeval", "--run", SHEN_RTS, "--parse", "paper",
                   "--level", "system", "--resamples", "50")
    cps = {d: e["correct_preferences"] for d, e in out["dimensions"].items()}
    assert {d: c["full"]["correct"] for d, c in cps.items()} == {
        "coherence": 54, "consistency": 56, "fluency": 62, "relevance": 62}
    assert all(c["full"]["total"] == 66 for c in cps.values())
    assert sum(c["challenge"]["correct"] for c in cps.values()) == 28
    assert all(c["challenge"]["total"] == 11 for c in cps.values())


def test_meta_json_matches_the_library(capsys):
    out = run_json(capsys, "meta", "--dataset", "summeval", "--run", SHEN_RTS, "--dimension", "fluency",
                   "--resamples", "100")
    entry = out["dimensions"]["fluency"]
    assert entry["items"] == 1200
    by_cell = {(r["level"], r["coefficient"]): r for r in entry["correlations"]}
    assert len(by_cell) == 9
    frame = score_frame(load_dataset("summeval"), load_bundled_run(SHEN_RTS), "fluency")
    for (level, coef), row in by_cell.items():
        lib = meta.correlate(frame, level=level, coefficient=coef, n_resamples=100)
        assert row["statistic"] == pytest.approx(lib.statistic)
        assert row["ci_low"] == pytest.approx(lib.ci_low)
        assert row["n"] == lib.n and row["skipped"] == lib.skipped
        assert row["ci_low"] <= row["ci_high"]
    assert set(entry["meta_correlation"]) == {"pearson", "spearman", "kendall"}
    assert entry["meta_correlation"]["kendall"]["n_systems"] == 12
    assert len(entry["per_system"]["kendall"]) == 12


def test_module_entry_point_runs():
    done = subprocess.run([sys.executable, "-m", "evalcore", "datasets"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "summeval" in done.stdout and "1600" in done.stdout


def test_unknown_dataset_is_a_clear_error(capsys):
    assert main(["runs", "--dataset", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_missing_api_key_is_one_clear_line(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = main(["score", "--dataset", "summeval", "--dimension", "coherence", "--method", "rts", "--model", "m",
                 "--base-url", "http://127.0.0.1:9/v1", "--limit", "2", "--quiet", "--db", str(tmp_path / "s.db")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: no API key") and "OPENAI_API_KEY" in err and "Traceback" not in err


def test_runs_of_an_uploaded_dataset_come_from_the_store(tmp_path):
    from evalcore.importers import load_user_dataset, read_table, suggest_mapping
    from evalcore.store import Store
    from evalcore.runs import list_runs

    store = Store(tmp_path / "s.db")
    path = str(Path(__file__).resolve().parent.parent / "examples" / "my_ratings.csv")
    ds = load_user_dataset(path, suggest_mapping(read_table(path).columns))
    store.save_dataset(ds)
    assert list_runs(ds.id, store=store) == []
    assert list_runs("summeval", store=store)  # bundled runs still listed


def test_an_unreadable_store_is_reported_not_fatal_for_bundled_data(tmp_path, caplog):
    from evalcore.runs import list_all_datasets, list_runs

    class Broken:
        def list_datasets(self):
            raise OSError("disk I/O error")

        def list_runs(self, dataset_id):
            raise OSError("disk I/O error")

    with caplog.at_level("WARNING"):
        assert {d["id"] for d in list_all_datasets(store=Broken())} >= {"summeval"}
        assert list_runs("summeval", store=Broken())
    assert caplog.text.count("disk I/O error") == 2
