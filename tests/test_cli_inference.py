"""``meta --alt-test / --ppi / --bradley-terry`` carry the library's figures under the documented keys, and only when
asked (the report without them is unchanged); ``import-dataset --allow-missing-ratings`` brings in a dataset whose
humans rated only some items, which PPI then uses."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.datasets import load_bundled_run, load_dataset
from evalcore.meta import alt_test as at
from evalcore.meta import ppi

GPT4 = "summeval/shen-gpt-4-0314-rts"
PANDALM = "pandalm/pandalm-gpt-3.5-turbo"
FAST = ["--dimension", "coherence", "--level", "dataset", "--coefficient", "kendall", "--resamples", "20"]
WIDE = Path(__file__).parent / "fixtures" / "byo" / "wide_judges.csv"


def run_json(capsys, *argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_meta_adds_nothing_unless_asked(capsys):
    entry = run_json(capsys, "meta", "--dataset", "summeval", "--run", GPT4, *FAST)["dimensions"]["coherence"]
    assert not {"alt_test", "ppi"} & set(entry)


def test_meta_alt_test_and_ppi_keys_and_values(capsys):
    out = run_json(capsys, "meta", "--dataset", "summeval", "--run", GPT4, *FAST, "--alt-epsilon", "0.15", "--ppi",
                   "ppi", "--ppi-rated-docs", "20")
    e = out["dimensions"]["coherence"]
    a = e["alt_test"]
    assert {"epsilon", "scoring", "q", "winning_rate", "advantage_probability", "passed", "dropped_items",
            "per_annotator"} <= set(a)
    assert (a["epsilon"], a["scoring"], a["q"], a["group"]) == (0.15, "neg_rmse", 0.05, "expert")
    assert all(set(r) >= {"annotator", "n", "p_value", "advantage_probability", "rejected"} for r in a["per_annotator"])
    dataset, run = load_dataset("summeval"), load_bundled_run(GPT4)
    lib = at.alt_test_scores(dataset.annotations, run.scores("coherence"), "coherence", group="expert",
                             scoring="neg_rmse", epsilon=0.15)
    assert a["winning_rate"] == lib.winning_rate and a["advantage_probability"] == lib.advantage_probability
    p = e["ppi"]
    assert (p["method"], p["rated_documents"]) == ("ppi", 20)
    assert {"method", "per_system", "differences", "ranking"} <= set(p)
    row = p["per_system"][0]
    assert {"system", "estimate", "ci_low", "ci_high", "lambda", "n_labelled", "n_unlabelled", "human_only",
            "judge_only"} <= set(row)
    assert (row["lambda"], row["n_labelled"], row["n_unlabelled"]) == (1.0, 20, 80)
    frame = ppi.hide_ratings(ppi.judged_frame(dataset.items, dataset.human_scores, run.scores("coherence"),
                                              "coherence"), 20, random_state=0)
    first = ppi.ppi_by_system(frame, method="ppi", n_resamples=0).per_system[0]
    assert (row["system"], row["estimate"]) == (first.system, pytest.approx(first.estimate, abs=1e-12))


def test_meta_text_says_the_verdict(capsys):
    assert main(["meta", "--dataset", "summeval", "--run", GPT4, *FAST, "--alt-test", "--alt-scoring",
                 "accuracy"]) == 0
    text = capsys.readouterr().out
    assert "Alt-Test (epsilon 0.2, accuracy): the judge" in text and "vs expert_1: n=" in text


def test_pairwise_meta_alt_test_ppi_and_bradley_terry(capsys):
    out = run_json(capsys, "meta", "--dataset", "pandalm", "--run", PANDALM, "--resamples", "10", "--alt-test",
                   "--ppi", "--bradley-terry")
    e = out["dimensions"]["preference"]
    assert e["alt_test"]["scoring"] == "accuracy" and len(e["alt_test"]["per_annotator"]) == 3
    assert e["ppi"]["method"] == "ppi++" and len(e["ppi"]["per_system"]) == 5
    b = e["pairwise"]["bradley_terry"]
    assert b["ties"] == "half a win for each side" and len(b["human"]["scores"]) == 5
    assert b["judge"]["length"]["coefficient"] is not None and -1 <= b["kendall_tau"] <= 1


def test_bad_inference_options_are_one_line_errors(capsys):
    assert main(["meta", "--dataset", "summeval", "--run", GPT4, *FAST, "--ppi-rated-docs", "0"]) == 2
    assert "--ppi-rated-docs must be 1 or more" in capsys.readouterr().err
    assert main(["meta", "--dataset", "summeval", "--run", GPT4, *FAST, "--alt-epsilon", "1.5"]) == 2
    assert "--alt-epsilon must be between 0 and 1" in capsys.readouterr().err


def test_import_dataset_allow_missing_ratings_then_ppi(capsys, tmp_path):
    with WIDE.open() as f:
        rows = list(csv.DictReader(f))
    for r in rows[12:]:  # humans rated the first three documents only
        r["coherence"] = ""
    path = tmp_path / "partly_rated.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    args = ["import-dataset", str(path), "--name", "partly rated", "--scale", "coherence=1:5", "--judge",
            "gpt4_score"]
    assert main(args) == 2
    assert "--allow-missing-ratings" in capsys.readouterr().err
    out = run_json(capsys, *args, "--allow-missing-ratings")
    meta = run_json(capsys, "meta", "--dataset", out["dataset"], "--run", out["runs"][0], "--resamples", "20",
                    "--ppi")
    p = meta["dimensions"]["coherence"]["ppi"]
    assert {(r["n_labelled"], r["n_unlabelled"]) for r in p["per_system"]} == {(3, 9)}
