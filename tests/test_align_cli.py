"""``python -m evalcore align``: the loop unattended, its --json keys, a second run counted as a second look."""

from __future__ import annotations

import json

import pytest

from evalcore import datasets
from evalcore.cli import main
from evalcore.sampling import documents_subset, sample_documents
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_align import RUBRIC_PHRASE, PromptQualityJudge

ARGS = ["align", "--dataset", "summeval", "--dimension", "coherence", "--method", "geval", "--model", "loopback-judge",
        "--provider", "vllm", "--sample-docs", "20", "--seed", "3", "--candidates", "2", "--resamples", "200",
        "--quiet"]


@pytest.fixture(scope="module")
def judge():
    full = datasets.load_dataset("summeval")
    docs = sample_documents(full, 20, seed=3, how="random")  # the documents --sample-docs 20 --seed 3 draws
    return PromptQualityJudge.for_dataset(documents_subset(full, docs), "coherence")


def test_align_json_has_the_documented_keys_and_a_second_run_is_counted(judge, tmp_path, capsys):
    db = str(tmp_path / "s.db")
    with serve(scorer=judge) as srv:
        assert main(ARGS + ["--base-url", srv.base_url, "--db", db, "--json"]) == 0
        first = json.loads(capsys.readouterr().out)
        assert main(ARGS + ["--base-url", srv.base_url, "--db", db, "--json"]) == 0
        second = json.loads(capsys.readouterr().out)
    assert set(first) == {"split", "baseline", "candidates", "chosen", "test", "settings"}
    s = first["split"]
    assert len(s["dev_documents"]) == 14 and len(s["test_documents"]) == 6  # 20 documents, 30% held out
    assert set(s["dev_documents"]).isdisjoint(s["test_documents"])
    assert set(first["baseline"]) >= {"version", "source", "dev"} and first["baseline"]["source"] == "baseline"
    assert [c["source"] for c in first["candidates"]] == ["proposal", "fewshot"]
    for c in first["candidates"] + [first["baseline"]]:
        assert set(c["dev"]) == {"statistic", "ci_low", "ci_high"}
        assert c["dev"]["ci_low"] <= c["dev"]["statistic"] <= c["dev"]["ci_high"]
    assert first["chosen"] == {"version": first["candidates"][0]["version"], "source": "proposal", "rule": "best-dev"}
    t = first["test"]
    assert set(t["difference"]) == {"statistic", "ci_low", "ci_high", "pvalue", "pvalue_bootstrap", "pvalue_permutation"}
    assert t["difference"]["pvalue"] == max(t["difference"]["pvalue_bootstrap"], t["difference"]["pvalue_permutation"])
    assert set(t["baseline"]) == set(t["chosen"]) == {"statistic", "ci_low", "ci_high"}
    assert t["difference"]["statistic"] == pytest.approx(t["chosen"]["statistic"] - t["baseline"]["statistic"])
    assert t["optimism"] == pytest.approx(t["dev_gain"] - t["test_gain"])
    assert t["verdict"] == "improved" and t["final_check"] == 1
    assert first["settings"]["level"] == "dataset" and first["settings"]["coefficient"] == "spearman"
    # the same command again: the same split, candidates and figures (all from the cache), counted as look 2
    assert second["split"]["split_id"] == s["split_id"]
    assert second["test"]["final_check"] == 2 and second["split"]["final_checks"] == 2
    assert second["test"]["difference"] == t["difference"]
    assert second["baseline"]["version"] == first["baseline"]["version"]  # saved candidates are not the new baseline
    assert second["settings"]["estimate"]["calls"] == 0


def test_align_text_output_an_edit_and_a_chosen_version(judge, tmp_path, capsys):
    db = str(tmp_path / "s.db")
    with serve(scorer=judge) as srv:
        code = main(ARGS[:-1] + ["--candidates", "0", "--edit-definition", f"Coherence. {RUBRIC_PHRASE}",
                                 "--edit-definition", "Coherence: the summary reads as one piece.",
                                 "--base-url", srv.base_url, "--db", db])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "development" in out.err and "estimate" in out.err  # progress lines: split, cost estimate, choice
    assert "edit" in out.out and "optimism" in out.out and "final check number 1" in out.out


def test_align_errors_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    args = ["align", "--dataset", "summeval", "--dimension", "coherence", "--method", "geval", "--provider", "vllm",
            "--base-url", "http://127.0.0.1:9/v1", "--db", str(tmp_path / "s.db")]
    assert main(args) == 2
    assert "--model" in capsys.readouterr().err
    assert main(args + ["--model", "m", "--test-share", "1.5"]) == 2
    assert "test-share" in capsys.readouterr().err
    assert main(args + ["--model", "m", "--split", "nope"]) == 2
    assert "no split" in capsys.readouterr().err
    assert main(args + ["--model", "m", "--method", "h2h"]) == 2
    assert "per-item score" in capsys.readouterr().err
