"""promptfoo results through ``import-log``. The file follows the layout promptfoo's JSON output documents
(https://www.promptfoo.dev/docs/configuration/outputs: ``promptfoo eval --output results.json``; the entries of
``results.results`` with ``testIdx``, ``promptIdx``, ``testCase.vars``, ``prompt``, ``provider``, ``response.output``
and ``gradingResult.componentResults``, each with its ``assertion``); a human rating is a component result of
assertion type ``human``, as promptfoo's web viewer writes it (promptfoo/promptfoo pull request 6260: the thumbs
up / down "human assertion" in ``componentResults``). Its correlation equals scipy's on the file's own values."""

from __future__ import annotations

import json

import pytest
from scipy import stats

from tests.test_byo_import import cli

JUDGE = [0.9, 0.2, 0.6, 0.8, 0.1, 0.5]
HUMAN = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]


def results(human: bool = True, graded: bool = True) -> dict:
    rows = []
    for t, (j, h) in enumerate(zip(JUDGE, HUMAN)):
        comps = []
        if graded:
            comps.append({"pass": j >= 0.5, "score": j, "reason": f"rubric reason {t}",
                          "assertion": {"type": "llm-rubric", "value": "is helpful", "metric": "helpful",
                                        "provider": "openai:gpt-4o-mini"}})
        if human:
            comps.append({"pass": h == 1.0, "score": h, "reason": "Manual result",
                          "assertion": {"type": "human", "metric": "helpful"}})
        rows.append({"testIdx": t, "promptIdx": 0, "testCase": {"vars": {"question": f"q{t}"}},
                     "vars": {"question": f"q{t}"}, "prompt": {"raw": f"Answer: q{t}", "label": "Answer: {{question}}"},
                     "provider": {"id": "openai:gpt-4o", "label": ""}, "response": {"output": f"answer {t}"},
                     "success": True, "score": j, "gradingResult": {"pass": True, "score": j, "reason": "",
                                                                   "componentResults": comps}})
    return {"evalId": "eval-test", "results": {"version": 3, "timestamp": "2026-01-01T00:00:00Z", "prompts": [],
                                               "results": rows, "stats": {}}, "config": {}}


def test_promptfoo_results_import_with_human_ratings(tmp_path, own_store):
    from evalcore.analyses.correlations import alignment_table
    from evalcore.runs import get_dataset, load_run

    path = tmp_path / "results.json"
    path.write_text(json.dumps(results()))
    out = json.loads(cli("import-log", str(path), "--json", db=own_store).stdout)
    assert out["items"] == 6 and out["dimensions"] == ["helpful"]
    [run_id] = out["runs"]
    run = load_run(run_id)
    assert run.model == "openai:gpt-4o-mini" and run.judgments["value"].tolist() == JUDGE
    ds = get_dataset(out["dataset"])
    assert ds.items["var_question"].tolist() == [f"q{t}" for t in range(6)]
    table = alignment_table(ds, [run], "helpful", n_resamples=0, levels=("dataset",), coefficients=("pearson",))
    assert float(table.iloc[0]["statistic"]) == pytest.approx(stats.pearsonr(JUDGE, HUMAN).statistic)


def test_a_file_without_graded_assertions_is_one_error(tmp_path, own_store):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results(graded=False)))
    out = cli("import-log", str(path), db=own_store, check=False)
    assert out.returncode == 2 and "componentResults" in out.stderr and "llm-rubric" in out.stderr
    path.write_text(json.dumps({"evalId": "x", "results": {"version": 3}}))
    out = cli("import-log", str(path), db=own_store, check=False)
    assert out.returncode == 2 and "results.results" in out.stderr


@pytest.mark.usefixtures("first_start")
def test_the_data_page_imports_promptfoo_results():
    pytest.importorskip("streamlit")
    from evalcore.runs import get_dataset
    from tests.test_app_pages import assert_clean, new_app

    at = new_app()
    at.run()
    at.file_uploader(key="upload").upload("results.json", json.dumps(results()).encode(), "application/json")
    at.run()
    assert_clean(at)
    at.button(key="promptfoo_import").click().run()
    assert_clean(at)
    done = " ".join(str(s.value) for s in at.success).replace("\\", "")  # Markdown escapes
    assert "6 items" in done and "openai:gpt-4o-mini" in done, done
    ds_id = done.split(" as ")[1].split(":")[0]
    assert get_dataset(ds_id).human_scores["score"].tolist() == HUMAN
