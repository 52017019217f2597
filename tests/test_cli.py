"""The CLI mirrors the library: its JSON carries the same numbers the library computes."""

import json
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats as st

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


def test_meta_json_counts_challenge_pairs_from_human_means_where_the_dataset_ships_none(capsys):
    # Topical-Chat ships no challenge pairs: as on the Alignment page, they are the systems adjacent in mean human
    # score over all dimensions (003 App. E), here recomputed by hand from the human scores
    run = "topical_chat/chiang-lee-gpt-3.5-geval"
    out = run_json(capsys, "meta", "--dataset", "topical_chat", "--run", run, "--level", "system",
                   "--coefficient", "kendall", "--resamples", "0")
    dataset = load_dataset("topical_chat")
    means = (dataset.human_scores.merge(dataset.items[["item_id", "system_id"]], on="item_id")
             .groupby("system_id")["score"].mean().sort_values(ascending=False, kind="stable"))
    ranked = list(means.index)
    pairs = list(zip(ranked, ranked[1:]))
    assert means.is_unique  # no tie, so the order (hence the pairs) is the same whichever tie rule
    for dim, entry in out["dimensions"].items():
        frame = score_frame(dataset, load_bundled_run(run), dim)
        expected = meta.correct_preferences(frame, pairs=pairs)
        assert entry["correct_preferences"]["challenge"] == {"correct": expected.correct, "total": len(pairs)}


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
        def list_datasets(self, *, viewer=None):
            raise OSError("disk I/O error")

        def list_runs(self, dataset_id, *, viewer=None):
            raise OSError("disk I/O error")

    with caplog.at_level("WARNING"):
        assert {d["id"] for d in list_all_datasets(store=Broken())} >= {"summeval"}
        assert list_runs("summeval", store=Broken())
    assert caplog.text.count("disk I/O error") == 2


def test_meta_on_four_systems_gives_exact_pvalue_warning_and_a_ceiling_on_the_same_items(capsys):
    """Issue 18.1/18.2: --systems filters the run and its ceiling; 4 systems get an exact p-value and a warning."""
    four = ["M8", "M9", "M10", "M11"]
    out = run_json(capsys, "meta", "--dataset", "summeval", "--run", SHEN_RTS, "--dimension", "coherence",
                   "--coefficient", "spearman", "--systems", ",".join(four), "--resamples", "30")
    entry = out["dimensions"]["coherence"]
    assert entry["items"] == 400 and out["systems"] == four
    system = next(r for r in entry["correlations"] if r["level"] == "system")
    assert system["n"] == 4 and system["pvalue_method"] == "exact permutation"
    assert system["pvalue"] >= 1 / 12 - 1e-12  # no p below the exact minimum of 4 systems
    assert any("4 systems" in w for w in entry["warnings"])
    # the ceiling by hand: each expert against the mean of the other two on the 400 items of these systems
    ds = load_dataset("summeval")
    ann = ds.annotations[(ds.annotations["dimension"] == "coherence") & (ds.annotations["group"] == "expert")]
    items = ds.items[ds.items["system_id"].isin(four)]["item_id"]
    wide = ann[ann["item_id"].isin(items)].pivot(index="item_id", columns="annotator", values="value")
    by_hand = np.mean([st.spearmanr(wide[a], wide.drop(columns=a).mean(axis=1)).statistic for a in wide.columns])
    ceiling = {r["level"]: r for r in entry["human_ceiling"]}
    assert ceiling["dataset"]["statistic"] == pytest.approx(by_hand, abs=1e-12)
    assert ceiling["dataset"]["n"] == 400 and ceiling["system"]["n"] == 4
    assert ceiling["dataset"]["ci_low"] < ceiling["dataset"]["statistic"] < ceiling["dataset"]["ci_high"]
    assert set(ceiling["dataset"]) >= {"level", "coefficient", "statistic", "ci_low", "ci_high", "n"}


def test_meta_bad_numbers_are_one_line_errors(capsys):
    assert main(["meta", "--dataset", "summeval", "--run", SHEN_RTS, "--resamples", "-5"]) == 2
    assert "--resamples must be 0 or more" in capsys.readouterr().err
    assert main(["meta", "--dataset", "summeval", "--run", SHEN_RTS, "--systems", "M8,NOPE"]) == 2
    assert "no system 'NOPE'" in capsys.readouterr().err


def test_meta_summary_constant_zero_counts_constant_documents_as_zero(capsys):
    """Issue 18.6: --summary-constant zero averages over every document, a constant one as 0 (by hand with scipy)."""
    args = ["meta", "--dataset", "summeval", "--run", SHEN_RTS, "--dimension", "consistency", "--level", "summary",
            "--coefficient", "pearson", "--resamples", "0"]
    skip = run_json(capsys, *args)["dimensions"]["consistency"]["correlations"][0]
    zero_out = run_json(capsys, *args, "--summary-constant", "zero")
    zero = zero_out["dimensions"]["consistency"]["correlations"][0]
    frame = score_frame(load_dataset("summeval"), load_bundled_run(SHEN_RTS), "consistency").dropna(subset=["judge"])
    per_doc = []
    for _, g in frame.groupby("doc_id"):
        constant = g["judge"].nunique() < 2 or g["human"].nunique() < 2
        per_doc.append(np.nan if constant else st.pearsonr(g["judge"], g["human"]).statistic)
    per_doc = np.array(per_doc)
    assert np.isnan(per_doc).sum() == skip["skipped"] > 0
    assert skip["statistic"] == pytest.approx(np.nanmean(per_doc), abs=1e-12)
    assert zero["statistic"] == pytest.approx(np.nan_to_num(per_doc).mean(), abs=1e-12)
    assert zero_out["summary_constant"] == "zero" and zero["skip_constant"] is False


def test_plan_bad_targets_are_one_line_errors(capsys):
    """Issue 18.7/18.14: plan --half-width 0 and --assurance 0.3 are refused with a reason, not a traceback."""
    base = ["plan", "--dataset", "summeval", "--run", SHEN_RTS, "--dimension", "coherence"]
    assert main([*base, "--half-width", "0"]) == 2
    assert "half-width must be between 0 and 1" in capsys.readouterr().err
    assert main([*base, "--assurance", "0.3"]) == 2
    err = capsys.readouterr().err
    assert "assurance must be at least 0.5" in err and "Traceback" not in err


def test_summary_ceiling_is_computed_on_the_documents_the_run_is_correlated_on(capsys):
    """Issue 18.1's example: GPT-4 RTS relevance on M8-M10, summary-level Kendall 0.729 on 37 documents (the judge
    is constant on 63). The ceiling, by hand: each expert against the mean of the other two, per document, on the
    same 37 documents (a document constant on either side skipped), averaged over documents, then over experts."""
    gpt4 = "summeval/shen-gpt-4-0314-rts"
    out = run_json(capsys, "meta", "--dataset", "summeval", "--run", gpt4, "--dimension", "relevance", "--systems",
                   "M8,M9,M10", "--level", "summary", "--coefficient", "kendall", "--resamples", "0")
    entry = out["dimensions"]["relevance"]
    run_row = entry["correlations"][0]
    assert run_row["n"] == 37 and run_row["statistic"] == pytest.approx(0.729, abs=5e-4)
    ds = load_dataset("summeval")
    frame = score_frame(ds, load_bundled_run(gpt4), "relevance", systems=["M8", "M9", "M10"])
    g = frame.groupby("doc_id")
    used = [d for d, sub in g if sub["judge"].nunique() > 1 and sub["human"].nunique() > 1]
    assert len(used) == 37
    ann = ds.annotations[(ds.annotations["dimension"] == "relevance") & (ds.annotations["group"] == "expert")]
    wide = ann[ann["item_id"].isin(frame[frame["doc_id"].isin(used)]["item_id"])].pivot(
        index="item_id", columns="annotator", values="value")
    wide["doc_id"] = frame.set_index("item_id").loc[wide.index, "doc_id"]
    per_expert = []
    for a in [c for c in wide.columns if c != "doc_id"]:
        others = wide.drop(columns=[a, "doc_id"]).mean(axis=1)
        taus = []
        for _, idx in wide.groupby("doc_id").groups.items():
            x, y = wide.loc[idx, a], others.loc[idx]
            if x.nunique() > 1 and y.nunique() > 1:
                taus.append(st.kendalltau(x, y).statistic)
        per_expert.append(np.mean(taus))
    ceiling = entry["human_ceiling"][0]
    assert ceiling["statistic"] == pytest.approx(np.mean(per_expert), abs=1e-12)
    assert ceiling["statistic"] == pytest.approx(0.596, abs=5e-4)  # not 0.439, the ceiling over all 12 systems
