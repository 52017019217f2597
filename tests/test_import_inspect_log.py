"""Inspect AI logs: a real log written by inspect_ai (a ``mockllm`` model with fixed outputs, a model-graded scorer
whose grader is another ``mockllm`` model, two epochs; human edits written with ``inspect_ai.log.edit_score``),
imported through the CLI and through the library functions the Data page calls (``import_log``, ``save_import``).
The correlation the app computes equals one computed by hand from the log as ``read_eval_log`` reads it (scipy).

The log is tests/fixtures/importers/inspect_mockllm.eval, written by :func:`write_log` (inspect_ai's ``eval``) and
committed: the first ``eval`` of a process imports the model providers' SDKs (anthropic, openai, acp), about 15 s,
too long for the quick pass. The slow test writes the log again with the installed inspect_ai and checks that it
imports as the committed one does. To write the committed log again (after a change to :func:`write_log`):
``python -c "from tests.test_import_inspect_log import write_fixture; write_fixture()"``."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
from scipy import stats

from tests.test_byo_import import cli

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "importers" / "inspect_mockllm.eval"

# looked up, not imported: importing inspect_ai takes about 3 s, which every collection (each xdist worker's) would pay
pytestmark = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="inspect_ai is not installed")

GRADES = ["C", "I", "P", "C", "I", "C", "P", "C", "I", "I", "C", "P"]  # the grader's verdicts, 6 samples x 2 epochs
TARGETS = ["1", "0", "0.5", "1", "0", "0.5"]
RATINGS = [0.9, 0.2, 0.6, 0.7, 0.1, 0.4]


def write_log(directory: Path, *, epochs: int = 2) -> Path:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    def reply(text: str) -> ModelOutput:
        # usage given: mockllm would otherwise count tokens with tiktoken, which downloads its encoding
        out = ModelOutput.from_content("mockllm/model", text)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    n = len(TARGETS) * epochs
    samples = [Sample(id=f"s{i}", input=f"question {i}", target=TARGETS[i],
                      metadata={"doc": f"d{i // 2}", "system": "sysA" if i % 2 else "sysB", "rating": RATINGS[i]})
               for i in range(len(TARGETS))]
    model = get_model("mockllm/model", custom_outputs=[reply(f"answer {k}") for k in range(n)])
    grader = get_model("mockllm/model", custom_outputs=[reply(f"GRADE: {g}") for g in GRADES[:n]])
    task = Task(dataset=samples, solver=generate(), scorer=model_graded_qa(partial_credit=True), epochs=epochs)
    [log] = eval(task, model=model, model_roles={"grader": grader}, log_dir=str(directory), display="none",
                 max_connections=1, max_samples=1)
    assert log.status == "success", log.error
    return Path(log.location)


def write_fixture() -> Path:
    """The committed log written again with :func:`write_log`."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copyfile(write_log(Path(tmp)), FIXTURE)
    return FIXTURE


def add_edits(path: Path) -> dict[tuple[str, int], dict[str, float]]:
    """Two annotators edit some scores (edit_score with a provenance author); returns what each wrote."""
    from inspect_ai.log import ProvenanceData, edit_score, read_eval_log, write_eval_log
    from inspect_ai.scorer import ScoreEdit

    log = read_eval_log(str(path))
    scorer = next(iter(log.samples[0].scores))
    written: dict[tuple[str, int], dict[str, float]] = {}
    for k, s in enumerate(log.samples):
        for who, value in (("alice", RATINGS[k % 6]), ("bob", round(0.8 * RATINGS[k % 6] + 0.1 * (k % 3), 2))):
            edit_score(log, s.id, scorer, ScoreEdit(value=value, provenance=ProvenanceData(author=who, reason="review")),
                       epoch=s.epoch)
            written.setdefault((str(s.id), s.epoch), {})[who] = value
    write_eval_log(log, str(path))
    return written


def by_hand(path: Path, human: str) -> float:
    """Pearson r of the judge's per-sample mean over epochs with the human rating, from read_eval_log's values."""
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    log = read_eval_log(str(path))
    to_float = value_to_float()
    judge: dict[str, list[float]] = {}
    humans: dict[str, list[float]] = {}
    for s in log.samples:
        score = next(iter(s.scores.values()))
        original = score.history[0].value if score.history else score.value
        judge.setdefault(str(s.id), []).append(to_float(original))
        if human == "target":
            humans[str(s.id)] = [float(s.target)]
        elif human == "metadata:rating":
            humans[str(s.id)] = [s.metadata["rating"]]
        else:  # the annotators' mean of each one's mean over epochs
            per = {h.provenance.author: h.value for h in score.history if h.provenance is not None}
            for who, v in per.items():
                humans.setdefault(str(s.id), {}).setdefault(who, []).append(v)
    ids = sorted(judge)
    j = [sum(judge[i]) / len(judge[i]) for i in ids]
    if human == "edits":
        h = [sum(sum(v) / len(v) for v in humans[i].values()) / len(humans[i]) for i in ids]
    else:
        h = [humans[i][0] for i in ids]
    return float(stats.pearsonr(j, h).statistic)


@pytest.fixture(scope="module")
def log_path() -> Path:
    """The committed log (inspect_ai's eval wrote it: see the module's note); the tests that edit it edit a copy."""
    return FIXTURE


def _item_pearson(dataset_id: str, run_id: str) -> float:
    from evalcore.analyses.correlations import alignment_table
    from evalcore.runs import get_dataset, load_run

    ds = get_dataset(dataset_id)
    run = load_run(run_id)
    table = alignment_table(ds, [run], ds.dimension_names[0], n_resamples=0, levels=("dataset",),
                            coefficients=("pearson",))
    return float(table.iloc[0]["statistic"])


@pytest.mark.parametrize("human", ["target", "metadata:rating"])
def test_cli_import_matches_the_log_by_hand(log_path, human, own_store):
    out = json.loads(cli("import-log", str(log_path), "--human", human, "--document-key", "doc", "--system-key",
                         "system", "--json", db=own_store).stdout)
    assert out["items"] == 6 and out["human_source"] == human
    assert set(out["metadata_keys"]) == {"doc", "system", "rating"}
    [run_id] = out["runs"]
    assert out["draws"] == {run_id: 2}
    assert _item_pearson(out["dataset"], run_id) == pytest.approx(by_hand(log_path, human), abs=1e-9)


def test_library_import_with_edits_as_the_page_does(log_path, tmp_path, own_store):
    from evalcore.importers import save_import
    from evalcore.importers.inspect_log import import_log, judge_model, read_log
    from evalcore.runs import load_run

    edited = tmp_path / log_path.name
    edited.write_bytes(log_path.read_bytes())
    written = add_edits(edited)
    result = import_log(edited, human="edits", name="edited")
    save_import(result)
    ds = result.dataset
    assert sorted(ds.annotators) == ["alice", "bob"]
    # alice's rating of s0: her two epochs' edits averaged
    mine = ds.annotations[(ds.annotations["item_id"] == "s0") & (ds.annotations["annotator"] == "alice")]
    assert mine["value"].item() == pytest.approx((written[("s0", 1)]["alice"] + written[("s0", 2)]["alice"]) / 2)
    [run] = result.runs
    assert run.model == judge_model(read_log(edited)) == "mockllm/model"
    stored = load_run(run.run_id)
    # the judge's values are its own, not the people's edits: C / P / I as value_to_float maps them
    draws = stored.draws.sort_values(["item_id", "draw"])
    assert set(draws["value"]) <= {0.0, 0.5, 1.0}
    assert _item_pearson(ds.id, run.run_id) == pytest.approx(by_hand(edited, "edits"), abs=1e-9)


def test_a_missing_field_is_one_error_naming_it(log_path, own_store):
    out = cli("import-log", str(log_path), "--human", "metadata:stars", "--json", db=own_store, check=False)
    assert out.returncode == 2 and "metadata:stars" in out.stderr and "rating" in out.stderr
    out = cli("import-log", str(log_path), "--human", "edits", db=own_store, check=False)
    assert out.returncode == 2 and "edit_score" in out.stderr
    out = cli("import-log", str(log_path), "--document-key", "page", db=own_store, check=False)
    assert out.returncode == 2 and "'page'" in out.stderr and "'doc'" in out.stderr


def test_letter_grades_as_inspect_maps_them():
    from evalcore.importers.inspect_log import to_number

    assert [to_number(g)[0] for g in ("C", "P", "I", 3, "4.5")] == [1.0, 0.5, 0.0, 3.0, 4.5]
    value, why = to_number("banana")
    assert math.isnan(value) and "banana" in why


@pytest.mark.usefixtures("first_start")
def test_the_data_page_imports_the_log(log_path):
    pytest.importorskip("streamlit")
    from evalcore.importers.inspect_log import import_log
    from tests.test_app_pages import assert_clean, new_app

    at = new_app()
    at.run()
    at.file_uploader(key="upload").upload(log_path.name, log_path.read_bytes(), "application/octet-stream")
    at.run()
    assert_clean(at)
    assert at.selectbox(key="inspect_human").options[-2:] == ["target", "(none: judge scores only)"]
    assert "metadata:rating" in at.selectbox(key="inspect_human").options  # proposed from the log's metadata
    at.selectbox(key="inspect_human").set_value("metadata:rating")
    at.selectbox(key="inspect_doc").set_value("doc")
    at.selectbox(key="inspect_system").set_value("system")
    at.button(key="inspect_import").click().run()
    assert_clean(at)
    expected = import_log(log_path, human="metadata:rating", document_key="doc", system_key="system")
    done = " ".join(str(s.value) for s in at.success).replace("\\", "")  # Markdown escapes
    assert expected.dataset.id in done and "6 items" in done, done
    [run] = expected.runs
    assert _item_pearson(expected.dataset.id, run.run_id) == pytest.approx(by_hand(log_path, "metadata:rating"))


@pytest.mark.slow  # the first eval of a process imports the providers' SDKs: about 15 s (the module's note)
def test_a_log_written_now_imports_as_the_committed_one(tmp_path):
    """The committed log is what write_log writes with the installed inspect_ai: a log written now imports to the
    same items, human ratings, judge values and draws (only the file's bytes, and so the ids, differ)."""
    from evalcore.importers.inspect_log import import_log

    fresh = write_log(tmp_path)
    options = {"human": "metadata:rating", "document_key": "doc", "system_key": "system"}
    now, committed = import_log(fresh, **options), import_log(FIXTURE, **options)

    def frame(table, columns):
        return table[columns].sort_values(columns[:2]).reset_index(drop=True)

    for table, columns in (("items", ["item_id", "doc_id", "system_id", "output"]),
                           ("human_scores", ["item_id", "dimension", "score"])):
        assert frame(getattr(now.dataset, table), columns).equals(frame(getattr(committed.dataset, table), columns))
    assert now.dataset.meta["metadata_keys"] == committed.dataset.meta["metadata_keys"]
    [run_now], [run_then] = now.runs, committed.runs
    for table, columns in (("judgments", ["item_id", "dimension", "value", "status"]),
                           ("draws", ["item_id", "draw", "value", "status"])):
        assert frame(getattr(run_now, table), columns).equals(frame(getattr(run_then, table), columns))
    assert by_hand(fresh, "metadata:rating") == pytest.approx(by_hand(FIXTURE, "metadata:rating"), abs=1e-12)
