"""Bringing your own work: judge-score columns as runs, judge-score files, run bundles, the guess and scale prefill.

The files under tests/fixtures/byo/ were written for these tests: 12 CNN-like documents x 4 systems, a human coherence
rating 1-5, an LLM judge's 1-5 score (``gpt4_score``) and a negative log-likelihood metric (``nll``, about -12 to 0);
the long file has two annotators, two dimensions and a judge column per row's dimension.

The same file goes through the library, the CLI (a subprocess, as a user runs it) and the Data page (AppTest): the
dataset id, its tables and the runs' judgments must be identical. Every correlation shown is recomputed here with
scipy straight from the CSV.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore import bundles
from evalcore.importers import (
    ColumnMapping,
    DatasetValidationError,
    guess_columns,
    import_table,
    load_run_scores,
    mapping_from_guesses,
    read_table,
    save_import,
    scale_prefill,
    suggest_mapping,
)
from evalcore.store import Store

ROOT = Path(__file__).resolve().parents[1]
BYO = ROOT / "tests" / "fixtures" / "byo"
WIDE = BYO / "wide_judges.csv"
LONG = BYO / "long_judges.csv"


def cli(*args: str, db: Path, check: bool = True, subprocess_: bool = False) -> subprocess.CompletedProcess:
    """``python -m evalcore ARGS`` against the store ``db``: in this process (fast), or as a user runs it."""
    if subprocess_:
        env = {**os.environ, "EVALCORE_DB": str(db), "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-m", "evalcore", *args], cwd=ROOT, env=env, capture_output=True,
                             text=True, check=False)
    else:
        import contextlib
        import io

        from evalcore import cli as cli_mod

        old = os.environ.get("EVALCORE_DB")
        os.environ["EVALCORE_DB"] = str(db)
        stdout, stderr = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    rc = cli_mod.main(list(args))
                except SystemExit as e:  # argparse
                    rc = int(e.code or 0)
        finally:
            if old is None:
                os.environ.pop("EVALCORE_DB", None)
            else:
                os.environ["EVALCORE_DB"] = old
        out = subprocess.CompletedProcess(args, rc, stdout.getvalue(), stderr.getvalue())
    if check:
        assert out.returncode == 0, out.stderr
    return out


def guessed_mapping(path: Path, **options) -> ColumnMapping:
    frame = read_table(path)
    return mapping_from_guesses(guess_columns(frame), **options)


def run_frame(store: Store, run_id: str) -> pd.DataFrame:
    j = store.load_run(run_id).judgments
    return j[["item_id", "dimension", "raw", "value", "status", "reason"]].sort_values("item_id").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------------- the guess


def test_the_guess_separates_human_ratings_from_judge_scores():
    frame = read_table(WIDE)
    guesses = {g.column: g for g in guess_columns(frame)}
    assert guesses["coherence"].role == "human"
    assert guesses["gpt4_score"].role == "judge" and guesses["gpt4_score"].dimension == "coherence"
    assert guesses["nll"].role == "judge" and guesses["nll"].dimension == "coherence"
    nll = frame["nll"].astype(float)
    assert (guesses["nll"].lo, guesses["nll"].hi) == (nll.min(), nll.max())
    assert guesses["nll"].lo < -10 and guesses["nll"].hi < 0
    assert guesses["system"].role == "system_id" and guesses["system"].distinct == 4
    assert guesses["summary"].role == "output" and guesses["doc_id"].distinct == 12
    # a negative metric without a telling name is a judge score too (human scales are rarely negative)
    renamed = frame.rename(columns={"nll": "m2"})
    assert {g.column: g.role for g in guess_columns(renamed)}["m2"] == "judge"


def test_scale_prefill_comes_from_human_columns_and_follows_the_choices():
    wide = read_table(WIDE)
    mapping = guessed_mapping(WIDE)
    assert scale_prefill(wide, mapping) == {"coherence": (1.0, 5.0)}  # not -12..5: judge columns play no part
    six = read_table(BYO / "ratings_1to6.csv")
    assert scale_prefill(six, guessed_mapping(BYO / "ratings_1to6.csv")) == {"overall": (1.0, 6.0)}  # not 1-10
    # the user maps the metric as a human rating of its own dimension: the prefill follows
    m = ColumnMapping(doc_id="doc_id", system_id="system", output="summary",
                      dimensions={"coherence": "coherence", "likelihood": "nll"})
    lo, hi = scale_prefill(wide, m)["likelihood"]
    assert lo == np.floor(wide["nll"].astype(float).min()) and hi == np.ceil(wide["nll"].astype(float).max())
    long = read_table(LONG)
    assert scale_prefill(long, guessed_mapping(LONG)) == {"coherence": (1.0, 5.0), "fluency": (1.0, 5.0)}


# ---------------------------------------------------------------------------------------------------- library/CLI/page


def _library_import(tmp_path: Path):
    mapping = guessed_mapping(WIDE, scales={"coherence": (1.0, 5.0)})
    result = import_table(WIDE, mapping, name="my study")
    store = Store(tmp_path / "lib.db")
    save_import(result, store)
    return result, store


def test_library_cli_and_data_page_give_the_same_dataset_and_runs(tmp_path, monkeypatch):
    result, lib_store = _library_import(tmp_path)
    ds = result.dataset
    assert [r.run_id for r in result.runs] == [f"{ds.id}/scores-gpt4_score", f"{ds.id}/scores-nll"]
    assert len(ds.items) == 48 and ds.systems == ["bart-large", "gpt-3.5-turbo", "pegasus", "t5-base"]
    assert ds.dimension("coherence").scale == (1.0, 5.0) and ds.dimension("coherence").kind == "interval"

    cli_db = tmp_path / "cli.db"
    out = json.loads(cli("import-dataset", str(WIDE), "--name", "my study", "--scale", "coherence=1:5",
                         "--json", db=cli_db, subprocess_=True).stdout)
    assert out == {"dataset": ds.id, "runs": [r.run_id for r in result.runs], "items": 48,
                   "dimensions": ["coherence"], "warnings": [], "kinds": {"coherence": "interval"}, "labels": {},
                   "unrated": []}
    # without --scale the CLI takes the scale the page prefills (and says so): the same dataset again
    again = json.loads(cli("import-dataset", str(WIDE), "--name", "my study", "--json", db=tmp_path / "c2.db").stdout)
    assert again["dataset"] == ds.id and again["runs"] == out["runs"]
    assert again["warnings"] == ["no --scale for 'coherence': 1-5, inferred from its ratings (1 to 5); declare it "
                                 "with --scale coherence=LO:HI if the scale is wider"]

    from streamlit.testing.v1 import AppTest

    page_db = tmp_path / "page.db"
    monkeypatch.setenv("EVALCORE_DB", str(page_db))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "20")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.file_uploader(key="upload").upload("wide_judges.csv", WIDE.read_bytes(), "text/csv")
    at.run()
    assert not at.exception
    assert at.selectbox(key="role_gpt4_score").value == "judge" and at.selectbox(key="role_nll").value == "judge"
    assert at.number_input(key="scale_min_coherence").value == 1.0
    assert at.number_input(key="scale_max_coherence").value == 5.0
    at.button(key="import_dataset").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.sidebar.selectbox(key="dataset").value == ds.id
    assert sorted(at.sidebar.multiselect(key="runs").value) == [r.run_id for r in result.runs]

    stores = {"library": lib_store, "cli": Store(cli_db), "page": Store(page_db)}
    for where, store in stores.items():
        got = store.load_dataset(ds.id)
        for table in ("items", "documents", "human_scores"):
            pd.testing.assert_frame_equal(getattr(got, table).astype(str), getattr(ds, table).astype(str),
                                          obj=f"{where} {table}")
        for run in result.runs:
            pd.testing.assert_frame_equal(run_frame(store, run.run_id), run_frame(lib_store, run.run_id),
                                          obj=f"{where} {run.run_id}")


def test_judge_runs_hold_the_file_values_and_meta_equals_scipy(tmp_path):
    from evalcore import meta
    from evalcore.runs import score_frame

    result, store = _library_import(tmp_path)
    ds = result.dataset
    csv = pd.read_csv(WIDE)
    csv["item_id"] = csv["doc_id"] + "/" + csv["system"]
    for run, column in zip(result.runs, ("gpt4_score", "nll")):
        j = run_frame(store, run.run_id).set_index("item_id")
        assert (j["status"] == "ok").all()
        np.testing.assert_array_equal(j.loc[csv["item_id"], "value"].to_numpy(), csv[column].to_numpy(dtype=float))
        frame = score_frame(ds, store.load_run(run.run_id), "coherence")
        table = meta.correlation_table(frame, n_resamples=50, random_state=0).set_index(["level", "coefficient"])
        x, h = csv[column].to_numpy(float), csv["coherence"].to_numpy(float)
        for coef, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr), ("kendall", stats.kendalltau)):
            assert table.loc[("dataset", coef), "statistic"] == pytest.approx(fn(x, h).statistic, abs=1e-12)
            sysm = csv.groupby("system")[[column, "coherence"]].mean()
            assert table.loc[("system", coef), "statistic"] == pytest.approx(
                fn(sysm[column], sysm["coherence"]).statistic, abs=1e-12)
            per_doc = [fn(g[column], g["coherence"]).statistic for _, g in csv.groupby("doc_id")
                       if g[column].nunique() > 1 and g["coherence"].nunique() > 1]
            assert table.loc[("summary", coef), "statistic"] == pytest.approx(np.mean(per_doc), abs=1e-12)


def test_long_file_judge_column_scores_each_rows_dimension(tmp_path):
    mapping = guessed_mapping(LONG)
    assert mapping.shape == "long" and mapping.annotator == "annotator"
    assert [j.column for j in mapping.judges] == ["gpt4_score"]
    mapping.scales = {"coherence": (1, 5), "fluency": (1, 5)}
    result = import_table(LONG, mapping)
    (run,) = result.runs
    csv = pd.read_csv(LONG)
    csv["item_id"] = csv["doc_id"] + "/" + csv["system"]
    expected = csv.drop_duplicates(["item_id", "dimension"]).set_index(["item_id", "dimension"])["gpt4_score"]
    got = run.judgments.set_index(["item_id", "dimension"])["value"]
    assert len(got) == 48 * 2 and got.sort_index().equals(expected.astype(float).sort_index())
    # human score = mean of the two annotators, by hand from the file
    hs = result.dataset.human_scores.set_index(["item_id", "dimension"])["score"]
    means = csv.groupby(["item_id", "dimension"])["rating"].mean()
    pd.testing.assert_series_equal(hs.sort_index(), means.sort_index(), check_names=False)


def test_judge_score_cells_without_a_number_are_counted_failures():
    data = b"doc,system,out,coh,judge\nd1,A,x,1,4\nd1,B,y,5,n/a\nd2,A,z,3,\nd2,B,w,2,-3.5e1\n"
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"coherence": "coh"},
                      scales={"coherence": (1, 5)})
    m.judges = suggest_mapping(["doc", "system", "out", "coh", "judge"]).judges or []
    from evalcore.importers import JudgeColumn

    m.judges = [JudgeColumn("judge", "coherence", "my judge")]
    result = import_table(data, m, filename="j.csv")
    j = result.runs[0].judgments.set_index("item_id")
    assert j.loc["d1/A", "value"] == 4.0 and j.loc["d2/B", "value"] == -35.0
    assert j.loc["d1/B", "status"] == "failed" and "'n/a' is not a number" in j.loc["d1/B", "reason"]
    assert j.loc["d2/A", "status"] == "failed" and "blank" in j.loc["d2/A", "reason"]
    assert np.isnan(j.loc["d1/B", "value"])  # never a silent 0
    assert any("2 of 4 cells hold no usable number" in w for w in result.warnings)


# ---------------------------------------------------------------------------------------------------- score files


def test_judge_score_file_partial_coverage_then_unmatched_keys(tmp_path):
    result, store = _library_import(tmp_path)
    ds = result.dataset
    imported = load_run_scores(BYO / "judge_scores.csv", ds, name="gpt-4 (file)")
    assert imported.coverage == {"coherence": {"scored": 40, "failed": 0, "items": 48}}
    assert any("40 of 48 items" in w for w in imported.warnings)
    j = imported.run.judgments.set_index("item_id")
    csv = pd.read_csv(BYO / "judge_scores.csv")
    assert j.loc[csv["doc_id"] + "/" + csv["system_id"], "value"].tolist() == csv["score"].astype(float).tolist()
    assert j["raw"].str.startswith("Rating: ").all()  # the raw column is kept as the reply

    bad = csv.copy()
    bad.loc[2, "system_id"] = "t5-base "
    bad.loc[5, "doc_id"] = "cnn-999"
    with pytest.raises(DatasetValidationError) as info:
        load_run_scores((bad.to_csv(index=False).encode(), "bad_scores.csv"), ds, name="x")
    got = [(p.row, p.column) for p in info.value.problems]
    assert got == [(4, "doc_id"), (7, "doc_id")]
    assert "system_id 't5-base '" in info.value.problems[0].message
    assert "the dataset has doc_id 'cnn-001' and system_id 't5-base'" in info.value.problems[0].message
    assert "doc_id 'cnn-999'" in info.value.problems[1].message

    db = tmp_path / "lib.db"
    out = cli("import-run", str(BYO / "judge_scores.csv"), "--dataset", ds.id, "--name", "gpt-4 (file)", "--json",
              db=db)
    doc = json.loads(out.stdout)
    assert doc["run"] == f"{ds.id}/scores-gpt-4-file" and doc["judgments"] == 40 and doc["unmatched"] == 0
    bad_path = tmp_path / "bad_scores.csv"
    bad.to_csv(bad_path, index=False)
    err = cli("import-run", str(bad_path), "--dataset", ds.id, "--name", "bad", db=db, check=False,
              subprocess_=True)
    assert err.returncode == 2 and "cnn-999" in err.stderr and "Traceback" not in err.stderr
    assert not Store(db).run_exists(f"{ds.id}/scores-bad")


# ---------------------------------------------------------------------------------------------------- bundles


def test_export_then_import_into_a_fresh_store_gives_identical_meta(tmp_path):
    db = tmp_path / "a.db"
    out = json.loads(cli("import-dataset", str(WIDE), "--name", "study", "--scale", "coherence=1:5", "--json",
                         db=db).stdout)
    run_id = out["runs"][1]
    bundle = tmp_path / "run.jsonl"
    cli("export-run", run_id, "--out", str(bundle), db=db)
    fresh = tmp_path / "fresh.db"
    imported = json.loads(cli("import-run", str(bundle), "--json", db=fresh).stdout)
    assert imported["run"] == run_id and imported["judgments"] == 48 and imported["unmatched"] == 0
    assert imported["dataset_imported"] is True  # the bundle carried the uploaded dataset
    meta_a = cli("meta", "--dataset", out["dataset"], "--run", run_id, "--resamples", "50", "--json", db=db).stdout
    meta_b = cli("meta", "--dataset", out["dataset"], "--run", run_id, "--resamples", "50", "--json",
                 db=fresh).stdout
    assert meta_a == meta_b and json.loads(meta_a)["dimensions"]["coherence"]["items"] == 48

    # without the dataset, a fresh store says which dataset to import first, and imports nothing
    lean = tmp_path / "lean.jsonl"
    cli("export-run", run_id, "--out", str(lean), "--without-dataset", db=db)
    empty = tmp_path / "empty.db"
    err = cli("import-run", str(lean), db=empty, check=False)
    assert err.returncode == 2 and out["dataset"] in err.stderr and "import that dataset first" in err.stderr
    assert "'study'" in err.stderr and "wide_judges.csv" in err.stderr
    assert not Store(empty).run_exists(run_id)


def test_bundle_keeps_replies_config_and_criteria_of_a_scored_run(tmp_path):
    from evalcore.types import Criteria

    store = Store(tmp_path / "s.db")
    crit = Criteria(dimension="coherence", task_introduction="Rate it.", definition="Coherence: ...", scale_min=1,
                    scale_max=5, steps="1. Read.\n2. Rate.")
    h = store.save_criteria("summeval", crit)
    store.create_run(run_id="summeval/geval-x", dataset_id="summeval", method="geval", model="m",
                     config={"criteria": {"coherence": {"hash": h}}, "temperature": 0})
    from evalcore.datasets import load_dataset

    items = load_dataset("summeval").items["item_id"].tolist()[:5]
    for i, item in enumerate(items):
        store.save_judgment("summeval/geval-x", {"item_id": item, "dimension": "coherence", "criteria_hash": h,
                                                "raw": f"Score: {i % 5 + 1}", "value": i % 5 + 1.0, "status": "ok",
                                                "estimator": "weighted", "detail": {"p": [0.1, 0.9]}})
    store.finish_run("summeval/geval-x", status="done", stats={"ok": 5})
    path = tmp_path / "b.jsonl"
    summary = bundles.export_run("summeval/geval-x", path, store=store)
    assert summary["carries_dataset"] is False and summary["criteria"] == 1
    other = Store(tmp_path / "o.db")
    bundles.import_bundle(path, store=other)
    a, b = store.load_run("summeval/geval-x"), other.load_run("summeval/geval-x")
    pd.testing.assert_frame_equal(a.judgments, b.judgments)
    assert b.config["temperature"] == 0 and b.config["criteria"] == {"coherence": {"hash": h}}
    assert other.load_criteria("summeval", "coherence", h).steps == "1. Read.\n2. Rate."
    # a published run exports too; importing it adds nothing (it ships with every installation)
    pub = tmp_path / "pub.jsonl"
    assert bundles.export_run("summeval/shen-gpt-3.5-turbo-0301-h2h", pub, store=store)["comparisons"] > 0
    res = bundles.import_bundle(pub, store=other)
    assert res["published"] is True and not other.run_exists("summeval/shen-gpt-3.5-turbo-0301-h2h")
    # a store whose dataset has other items refuses the bundle
    tampered = path.read_text().replace(bundles.items_sha256(load_dataset("summeval")), "0" * 64)
    (tmp_path / "t.jsonl").write_text(tampered)
    with pytest.raises(bundles.BundleError, match="other items"):
        bundles.import_bundle(tmp_path / "t.jsonl", store=Store(tmp_path / "t.db"))


# ---------------------------------------------------------------------------------------------------- scale


def test_semicolon_csv_gives_the_same_dataset_as_the_comma_one():
    m = guessed_mapping(WIDE, scales={"coherence": (1.0, 5.0)})
    a = import_table(WIDE, m).dataset
    b = import_table(BYO / "wide_semicolon.csv", m).dataset
    for t in ("items", "documents", "human_scores"):
        pd.testing.assert_frame_equal(getattr(a, t), getattr(b, t))
    assert any("';'" in n for n in b.meta["import_notes"])


def test_ids_differing_only_by_whitespace_case_or_leading_zeros_are_warned_about():
    data = (b"doc,system,out,coh\n"
            b"d1,gpt,x,1\nd1,gpt ,y,5\nd01,GPT,z,3\nd1,llama,w,2\n")
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"coherence": "coh"})
    result = import_table(data, m, filename="ids.csv")
    assert result.dataset.systems == ["GPT", "gpt", "gpt ", "llama"]  # imported as written...
    assert any("system_id: 'gpt' and 'gpt ' and 'GPT' differ only by whitespace, case or leading zeros" in w
               for w in result.warnings), result.warnings  # ...and said out loud
    assert any("doc_id: 'd1' and 'd01'" in w for w in result.warnings)


def test_a_ten_megabyte_text_cell_is_accepted():
    big = "word " * 2_000_000  # 10,000,000 characters
    data = f'doc,system,out,coh\nd1,A,"{big}",1\nd1,B,short,5\n'.encode()
    m = ColumnMapping(doc_id="doc", system_id="system", output="out", dimensions={"coherence": "coh"})
    ds = import_table(data, m, filename="big.csv").dataset
    assert len(ds.items.loc[0, "output"]) == len(big)


def test_label_kind_is_stored_with_the_dataset_and_travels_in_bundles(tmp_path):
    db = tmp_path / "k.db"
    out = json.loads(cli("import-dataset", str(WIDE), "--name", "k", "--scale", "coherence=1:5", "--kind",
                         "coherence=ordinal", "--json", db=db).stdout)
    assert Store(db).load_dataset(out["dataset"]).dimension("coherence").kind == "ordinal"
    bad = cli("import-dataset", str(WIDE), "--name", "k", "--kind", "coherence=likert", db=db, check=False)
    assert bad.returncode == 2 and "interval, ordinal, binary, nominal" in bad.stderr
    cli("export-run", out["runs"][0], "--out", str(tmp_path / "k.jsonl"), db=db)
    fresh = tmp_path / "k2.db"
    cli("import-run", str(tmp_path / "k.jsonl"), db=fresh)
    assert Store(fresh).load_dataset(out["dataset"]).dimension("coherence").kind == "ordinal"
    from evalcore.model import Dimension

    with pytest.raises(ValueError, match="kind must be one of"):
        Dimension("x", 1, 5, kind="likert")


def test_data_page_imports_a_judge_score_file_for_the_dataset_in_use(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "p.db"
    out = json.loads(cli("import-dataset", str(WIDE), "--name", "study", "--scale", "coherence=1:5", "--json",
                         db=db).stdout)
    monkeypatch.setenv("EVALCORE_DB", str(db))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "20")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params["dataset"] = out["dataset"]
    at.run()
    at.file_uploader(key="upload_scores").upload("judge_scores.csv", (BYO / "judge_scores.csv").read_bytes(),
                                                 "text/csv")
    at.run()
    at.text_input(key="scores_name").set_value("gpt-4 file").run()
    at.button(key="import_scores").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    run_id = f"{out['dataset']}/scores-gpt-4-file"
    picked = at.sidebar.multiselect(key="runs").value
    assert picked[-1] == run_id and len(picked) == 2  # added to the run already picked
    assert any("40 of 48 items" in w.value for w in at.warning)
    assert len(Store(db).load_run(run_id).judgments) == 40


def test_the_data_page_reads_an_uploaded_file_once(tmp_path, monkeypatch):
    """Widget changes rerun the page; the table comes from the cache (by content hash), not from the file again."""
    from streamlit.testing.v1 import AppTest

    from evalcore import importers

    calls = []
    real = importers.read_table
    monkeypatch.setattr(importers, "read_table", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "once.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "20")
    data = WIDE.read_bytes() + f"cnn-999,bart-large,a,b,3,3,-{tmp_path.name.__len__()}.5\n".encode()  # unseen
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.file_uploader(key="upload").upload("once.csv", data, "text/csv")
    at.run()
    at.selectbox(key="role_nll").set_value("ignored").run()
    at.selectbox(key="role_system").set_value("ignored").run()
    at.selectbox(key="role_system").set_value("system_id").run()
    at.text_input(key="upload_name").set_value("renamed").run()
    at.button(key="import_dataset").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(calls) == 1
    assert len(at.sidebar.multiselect(key="runs").value) == 1  # nll ignored: one judge run


# ---------------------------------------------------------------------------------------------------- the fast reader

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hst  # noqa: E402

from evalcore.importers import readers  # noqa: E402

# (no lone CR: Python's csv counts it as a line break, the fast reader counts lines by LF as editors today do)
cell_text = hst.lists(hst.sampled_from(list("ab ,;\"\n\té0") + ["  ", "x\r\ny"]), max_size=8).map("".join)


@settings(max_examples=60, deadline=None)
@given(rows=hst.lists(hst.lists(cell_text, min_size=3, max_size=3), min_size=1, max_size=8),
       delimiter=hst.sampled_from([",", ";"]), blank_lines=hst.booleans(), crlf=hst.booleans())
def test_fast_reader_matches_the_exact_reader(rows, delimiter, blank_lines, crlf):
    """pyarrow's table and the numpy line numbers equal what Python's csv module reads, record by record, for
    cells holding delimiters, quotes and line breaks, with blank lines and CRLF endings."""
    import csv as csvmod
    import io

    out = io.StringIO()
    writer = csvmod.writer(out, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n",
                           quoting=csvmod.QUOTE_MINIMAL)
    writer.writerow(["a", "b", "c"])
    for r in rows:
        writer.writerow(r)
        if blank_lines:
            out.write("\r\n" if crlf else "\n")
    data = out.getvalue().encode()
    fast = readers.read_delimited("t.csv", data, "csv", "line")[0]
    text = data.decode("utf-8-sig")
    exact = readers._read_delimited_exact("t.csv", text, delimiter, "line")[0]
    assert list(fast.columns) == ["a", "b", "c"]
    assert fast.index.tolist() == exact.index.tolist()
    pd.testing.assert_frame_equal(fast.reset_index(drop=True).astype(object),
                                  exact.reset_index(drop=True).astype(object), check_dtype=False)


def test_the_data_page_warns_about_near_duplicate_ids_before_the_import(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "nd.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "20")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.file_uploader(key="upload").upload("nd.csv", b"doc,system,output,coherence\nd1,gpt,x,1\nd1,gpt ,y,5\n"
                                                    b"d2,GPT,z,3\n", "text/csv")
    at.run()
    assert not at.exception
    said = "'gpt' and 'gpt ' and 'GPT' differ only by whitespace, case or leading zeros"
    assert any(said in w.value.replace("\\", "")
               for w in at.warning), [w.value for w in at.warning]
