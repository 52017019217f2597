"""Ratings written as words (pass/fail, A/B/tie), texts-only datasets to label, and save_import in one transaction.

Fixtures under tests/fixtures/words/ were written for these tests (a seeded script, kept in the commit that added
them): ``faithfulness_annotators.csv`` 8 documents x 3 systems x 2 annotators with a pass/fail faithfulness label
and a judge's pass/fail verdict per item (three cells spelled ``FAIL``, ``fail `` and ``Pass``);
``preference_ab.csv`` 24 items with a nominal A/B/tie human preference and a judge's; ``texts_only.csv`` 18 outputs
with no ratings; ``judge_yes_no.csv`` yes/no verdicts keyed by doc_id + system. Every figure is recomputed here from
the CSV with pandas and scikit-learn (kappa on the decoded words), or by hand.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from evalcore import labels as labels_mod
from evalcore import runs as runs_mod
from evalcore.importers import (
    ColumnMapping,
    DatasetValidationError,
    JudgeColumn,
    guess_columns,
    import_table,
    kind_prefill,
    label_prefill,
    load_run_scores,
    mapping_from_guesses,
    read_table,
    save_import,
    scale_prefill,
)
from evalcore.importers.categories import derived_labels, encode_column, word_counts
from evalcore.store import Store
from evalcore.meta.classification import agreement_dict, label_agreement
from evalcore.model import Dimension

ROOT = Path(__file__).resolve().parents[1]
WORDS = ROOT / "tests" / "fixtures" / "words"
FAITH = WORDS / "faithfulness_annotators.csv"
PREF = WORDS / "preference_ab.csv"
TEXTS = WORDS / "texts_only.csv"
YES_NO = WORDS / "judge_yes_no.csv"
FAITH_MAPPING = dict(doc_id="doc_id", system_id="system", output="summary", source="article", annotator="annotator",
                     dimensions={"faithfulness": "faithful"}, kinds={"faithfulness": "binary"},
                     judges=[JudgeColumn("gpt4_verdict", "faithfulness")])


def cli(*args: str, db: Path) -> tuple[int, str, str]:
    """``python -m evalcore ARGS`` in this process against the store ``db``: (exit status, stdout, stderr)."""
    from evalcore import cli as cli_mod

    old = os.environ.get("EVALCORE_DB")
    os.environ["EVALCORE_DB"] = str(db)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli_mod.main(list(args))
            except SystemExit as e:
                rc = int(e.code or 0)
    finally:
        if old is None:
            os.environ.pop("EVALCORE_DB", None)
        else:
            os.environ["EVALCORE_DB"] = old
    return rc, out.getvalue(), err.getvalue()


def raw_csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def stored_datasets(db: Path) -> list[str]:
    return [d["id"] for d in Store(db).list_datasets()] if db.exists() else []


# ---------------------------------------------------------------------------------------------- binary words


def test_pass_fail_words_become_binary_labels_with_codes_checked_against_the_csv():
    result = import_table(FAITH, ColumnMapping(**FAITH_MAPPING), name="faith")
    ds = result.dataset
    dim = ds.dimension("faithfulness")
    assert (dim.kind, dim.labels, dim.positive, dim.scale) == ("binary", ("fail", "pass"), "pass", (0.0, 1.0))
    raw = raw_csv(FAITH)
    # each annotation is the code of its word, read by hand: pass = 1, fail = 0 (case and spaces ignored)
    expected = raw.assign(item_id=raw["doc_id"] + "/" + raw["system"],
                          value=(raw["faithful"].str.strip().str.lower() == "pass").astype(float))
    got = ds.annotations.merge(expected[["item_id", "annotator", "value"]], on=["item_id", "annotator"],
                               suffixes=("", "_csv"))
    assert len(got) == len(raw) == 48
    assert (got["value"] == got["value_csv"]).all()
    means = expected.groupby("item_id")["value"].mean()
    hs = ds.human_scores.set_index("item_id")["score"]
    assert np.allclose(hs.loc[means.index], means)
    # the folded spellings are said, once per column
    folded = [w for w in result.warnings if "column 'faithful'" in w]
    assert folded == ["column 'faithful': read 'FAIL' and 'fail ' as 'fail' (labels match ignoring case and "
                      "surrounding spaces)"]
    # the judge's verdict words map through the same labels; its 'Pass' too
    run = result.runs[0]
    judged = run.judgments.set_index("item_id")["value"]
    verdict = raw.drop_duplicates("doc_id system".split()).assign(item_id=lambda f: f["doc_id"] + "/" + f["system"])
    assert (judged.loc[verdict["item_id"]].to_numpy()
            == (verdict["gpt4_verdict"].str.lower() == "pass").astype(float).to_numpy()).all()
    assert (run.judgments["status"] == "ok").all()


def test_declared_labels_set_the_order_and_the_positive_class():
    m = ColumnMapping(**{**FAITH_MAPPING, "labels": {"faithfulness": ["pass", "fail"]}})
    ds = import_table(FAITH, m).dataset
    dim = ds.dimension("faithfulness")
    assert dim.labels == ("pass", "fail") and dim.positive == "fail"
    raw = raw_csv(FAITH)
    codes = (raw["faithful"].str.strip().str.lower() == "fail").astype(float)  # fail is now code 1
    assert sorted(ds.annotations["value"].tolist()) == sorted(codes.tolist())


@pytest.mark.parametrize("words,expected", [
    (["yes", "no", "no"], ("no", "yes")), (["true", "false"], ("false", "true")), (["pass", "fail"], ("fail", "pass")),
    (["Yes", "NO", "no"], ("NO", "Yes")),  # written as spelled most often; still negative first
])
def test_default_binary_order_is_negative_first(words, expected):
    frame = pd.DataFrame({"d": [f"d{i}" for i in range(len(words))], "s": "A", "o": "text", "ok": words})
    m = ColumnMapping(doc_id="d", system_id="s", output="o", dimensions={"ok": "ok"}, kinds={"ok": "binary"})
    ds = import_table(csv_bytes(frame), m, filename="t.csv").dataset
    assert [x.lower() for x in ds.dimension("ok").labels] == [x.lower() for x in expected]


def test_a_word_outside_the_declared_labels_is_one_clear_error_and_nothing_is_imported(tmp_path):
    raw = raw_csv(FAITH)
    raw.loc[6, "faithful"] = "maybe"  # data row 7 = CSV line 8
    bad = tmp_path / "faith_bad.csv"
    bad.write_bytes(csv_bytes(raw))
    m = ColumnMapping(**{**FAITH_MAPPING, "labels": {"faithfulness": ["fail", "pass"]}})
    with pytest.raises(DatasetValidationError) as info:
        import_table(bad, m)
    (p,) = info.value.problems
    assert (p.file, p.row, p.column) == (str(bad), 8, "faithful")
    assert p.message == "rating 'maybe' is not one of the declared labels of 'faithfulness': 'fail', 'pass'"
    assert "nothing was imported" in str(info.value)
    db = tmp_path / "cli.db"
    rc, out, err = cli("import-dataset", str(bad), "--name", "bad", "--labels", "faithfulness=fail,pass", db=db)
    assert rc == 2 and "line 8, column 'faithful'" in err and "'fail', 'pass'" in err
    assert stored_datasets(db) == []


def test_a_binary_kind_over_three_words_names_them_and_asks_for_labels():
    frame = pd.DataFrame({"d": ["a", "b", "c", "e"], "s": "A", "o": "x", "v": ["pass", "fail", "unsure", "pass"]})
    m = ColumnMapping(doc_id="d", system_id="s", output="o", dimensions={"v": "v"}, kinds={"v": "binary"})
    with pytest.raises(DatasetValidationError) as info:
        import_table(csv_bytes(frame), m, filename="three.csv")
    (p,) = info.value.problems
    assert p.column == "v" and p.row == "-"
    assert "3 different words: 'pass' (2), 'fail' (1), 'unsure' (1)" in p.message and "--labels v=" in p.message


def test_words_in_an_interval_dimension_say_how_to_declare_the_kind():
    frame = pd.DataFrame({"d": ["a", "b", "c"], "s": "A", "o": "x", "v": ["yes", "no", "yes"]})
    m = ColumnMapping(doc_id="d", system_id="s", output="o", dimensions={"v": "v"})
    with pytest.raises(DatasetValidationError) as info:
        import_table(csv_bytes(frame), m, filename="w.csv")
    first = info.value.problems[0]
    assert first.row == "-" and "--kind v=binary" in first.message and "'yes' (2), 'no' (1)" in first.message
    assert [p.row for p in info.value.problems[1:]] == [2, 3, 4]  # and each cell as before


def test_bad_label_declarations_are_whole_file_problems():
    m = ColumnMapping(doc_id="doc_id", system_id="system", output="summary", dimensions={"f": "faithful"},
                      kinds={"f": "binary"}, labels={"f": ["fail", "pass", "unsure"], "ghost": ["a", "b"]})
    with pytest.raises(DatasetValidationError) as info:
        import_table(FAITH, m)
    msgs = [p.message for p in info.value.problems if p.row == "-"]
    assert any("binary dimension has 2 labels" in x and "'f' declares 3" in x for x in msgs)
    assert any("labels are declared for 'ghost', which is not a mapped dimension" in x for x in msgs)
    interval = ColumnMapping(doc_id="doc_id", system_id="system", output="summary", dimensions={"f": "faithful"},
                             kinds={"f": "interval"}, labels={"f": ["fail", "pass"]})
    with pytest.raises(DatasetValidationError, match="whose kind is interval"):
        import_table(FAITH, interval)


def test_a_declared_scale_that_is_not_the_codes_is_refused():
    m = ColumnMapping(**{**FAITH_MAPPING, "scales": {"faithfulness": (1.0, 5.0)}})
    with pytest.raises(DatasetValidationError, match="declared scale 1-5 does not apply"):
        import_table(FAITH, m)
    ok = ColumnMapping(**{**FAITH_MAPPING, "scales": {"faithfulness": (0.0, 1.0)}})  # as the Data page prefills
    assert import_table(FAITH, ok).dataset.dimension("faithfulness").labels == ("fail", "pass")


# ---------------------------------------------------------------------------------------------- the guess


def test_the_guess_shows_word_columns_as_human_labels_with_kind_and_labels():
    frame = read_table(FAITH)
    guesses = {g.column: g for g in guess_columns(frame)}
    g = guesses["faithful"]
    assert (g.role, g.dimension, g.kind, g.labels) == ("human", "faithfulness", "binary", ("fail", "pass"))
    row = g.stats_row()
    assert row["kind"] == "binary" and row["labels"] == "fail, pass" and row["range"] == "words"
    assert guesses["gpt4_verdict"].role == "judge" and guesses["gpt4_verdict"].dimension == "faithfulness"
    assert guesses["summary"].role == "output" and guesses["summary"].kind == ""  # texts are not labels
    mapping = mapping_from_guesses(list(guesses.values()))
    assert kind_prefill(frame, mapping) == {"faithfulness": "binary"}
    assert label_prefill(frame, mapping) == {"faithfulness": ("fail", "pass")}
    assert scale_prefill(frame, mapping) == {"faithfulness": (0.0, 1.0)}
    pref = read_table(PREF)
    pg = {g.column: g for g in guess_columns(pref)}
    assert (pg["preference"].role, pg["preference"].kind, pg["preference"].labels) == \
        ("human", "nominal", ("A", "B", "tie"))
    assert pg["judge_preference"].role == "judge"


def test_the_guess_is_conservative_about_free_words():
    frame = pd.DataFrame({"doc_id": [f"d{i}" for i in range(8)], "system": "A", "output": "x",
                          "split": ["train", "test"] * 4, "topic": ["sports", "news", "travel", "food"] * 2})
    roles = {g.column: g.role for g in guess_columns(frame)}
    assert roles["split"] == "ignored" and roles["topic"] == "ignored"


# ---------------------------------------------------------------------------------------------- nominal + meta


def test_nominal_a_b_tie_kappa_and_confusion_match_sklearn_on_the_words(tmp_path):
    db = tmp_path / "s.db"
    rc, out, err = cli("import-dataset", str(PREF), "--name", "pref", "--json", db=db)
    assert rc == 0, err
    summary = json.loads(out)
    assert summary["kinds"] == {"preference": "nominal"} and summary["labels"] == {"preference": ["A", "B", "tie"]}
    assert any("imported as nominal labels A, B, tie" in w for w in summary["warnings"])
    store = Store(db)
    ds, run = store.load_dataset(summary["dataset"]), store.load_run(summary["runs"][0])
    report = label_agreement(ds, run, "preference", n_resamples=0)
    raw = raw_csv(PREF)
    words = ["A", "B", "tie"]
    assert report.result.n == 24
    assert report.result.cohen_kappa.statistic == pytest.approx(
        cohen_kappa_score(raw["preference"], raw["judge_preference"], labels=words))
    d = agreement_dict(report)
    assert d["labels"] == words and d["confusion_matrix"]["labels"] == words
    assert d["confusion_matrix"]["statistic"] == confusion_matrix(raw["preference"], raw["judge_preference"],
                                                                  labels=words).tolist()
    # the CLI's meta --json says the same
    rc, out, err = cli("meta", "--dataset", ds.id, "--run", run.run_id, "--resamples", "50", "--json", db=db)
    assert rc == 0, err
    agreement = json.loads(out)["dimensions"]["preference"]["agreement"]
    assert agreement["labels"] == words and agreement["confusion_matrix"]["labels"] == words
    assert agreement["cohen_kappa"]["statistic"] == pytest.approx(d["cohen_kappa"]["statistic"])


def test_binary_meta_on_the_annotated_words_matches_sklearn_majority(tmp_path):
    result = import_table(FAITH, ColumnMapping(**FAITH_MAPPING))
    report = label_agreement(result.dataset, result.runs[0], "faithfulness", n_resamples=0)
    raw = raw_csv(FAITH).assign(word=lambda f: f["faithful"].str.strip().str.lower(),
                                judge=lambda f: f["gpt4_verdict"].str.lower())
    # gold = the annotators' majority; two annotators who disagree have none (left out)
    g = raw.groupby(["doc_id", "system"]).agg(words=("word", set), judge=("judge", "first"))
    agreed = g[g["words"].map(len) == 1]
    human = agreed["words"].map(lambda s: next(iter(s)))
    assert report.result.n == len(agreed) and report.ties == len(g) - len(agreed)
    assert report.result.cohen_kappa.statistic == pytest.approx(
        cohen_kappa_score(human, agreed["judge"], labels=["fail", "pass"]))
    assert report.result.confusion.tolist() == confusion_matrix(human, agreed["judge"],
                                                                labels=["fail", "pass"]).tolist()


# ---------------------------------------------------------------------------------------------- judge-score files


def test_a_judge_score_file_of_words_maps_through_the_dataset_labels(tmp_path):
    ds = import_table(FAITH, ColumnMapping(**FAITH_MAPPING)).dataset
    raw = raw_csv(FAITH).drop_duplicates(["doc_id", "system"])
    scores = pd.DataFrame({"doc_id": raw["doc_id"], "system": raw["system"],
                           "verdict": np.where(raw.index % 3 == 0, " PASS", "fail")})
    scores.loc[scores.index[1], "verdict"] = ""  # no verdict: a failed judgment, counted
    imported = load_run_scores(csv_bytes(scores), ds, name="words", filename="verdicts.csv")
    j = imported.run.judgments.set_index("item_id")
    ids = scores["doc_id"] + "/" + scores["system"]
    expected = scores["verdict"].str.strip().str.lower().map({"pass": 1.0, "fail": 0.0})
    assert np.array_equal(j.loc[ids, "value"].to_numpy(), expected.to_numpy(), equal_nan=True)
    assert (j["status"] == "failed").sum() == 1 and imported.coverage["faithfulness"]["failed"] == 1


def test_unknown_judge_words_are_errors_listing_rows(tmp_path):
    ds = import_table(FAITH, ColumnMapping(**FAITH_MAPPING)).dataset
    with pytest.raises(DatasetValidationError) as info:
        load_run_scores(YES_NO, ds, name="yes-no")
    problems = info.value.problems
    assert [p.row for p in problems] == list(range(2, 26)) and {p.column for p in problems} == {"verdict"}
    assert problems[0].message.startswith("judge verdict 'no' is not one of the labels of 'faithfulness': 'fail', "
                                          "'pass'")
    # and through the CLI: exit 2, no run stored
    db = tmp_path / "s.db"
    save_import(import_table(FAITH, ColumnMapping(**FAITH_MAPPING)), Store(db))
    rc, out, err = cli("import-run", str(YES_NO), "--dataset", ds.id, "--name", "yes-no", db=db)
    assert rc == 2 and "line 2, column 'verdict'" in err
    assert [r.run_id for r in Store(db).list_runs(ds.id)] == [f"{ds.id}/scores-gpt4_verdict"]


def test_an_unknown_word_in_a_judge_column_stops_the_dataset_import_too():
    raw = raw_csv(FAITH)
    raw.loc[4, "gpt4_verdict"] = "unsure"
    raw.loc[5, "gpt4_verdict"] = "unsure"  # the same item's other annotator row
    with pytest.raises(DatasetValidationError) as info:
        import_table(csv_bytes(raw), ColumnMapping(**FAITH_MAPPING), filename="f.csv")
    rows = [(p.row, p.column) for p in info.value.problems]
    assert rows == [(6, "gpt4_verdict"), (7, "gpt4_verdict")]


# ---------------------------------------------------------------------------------------------- long shape


def test_long_table_words_are_labels_per_dimension():
    raw = raw_csv(FAITH)
    long = pd.concat([
        raw.assign(dimension="faithfulness", value=raw["faithful"]),
        raw.assign(dimension="fluency", value=np.where(raw.index % 4 == 0, "2", "3")),
    ])[["doc_id", "system", "summary", "annotator", "dimension", "value"]]
    m = ColumnMapping(doc_id="doc_id", system_id="system", output="summary", annotator="annotator",
                      dimension="dimension", value="value", kinds={"faithfulness": "binary"},
                      scales={"fluency": (1.0, 3.0)})
    ds = import_table(csv_bytes(long), m, filename="long.csv").dataset
    assert ds.dimension("faithfulness").labels == ("fail", "pass")
    assert ds.dimension("fluency").kind == "interval" and ds.dimension("fluency").scale == (1.0, 3.0)
    a = ds.annotations
    assert sorted(a.loc[a["dimension"] == "faithfulness", "value"]) == \
        sorted((raw["faithful"].str.strip().str.lower() == "pass").astype(float))
    assert set(a.loc[a["dimension"] == "fluency", "value"]) == {2.0, 3.0}


# ---------------------------------------------------------------------------------------------- texts only


def test_texts_only_needs_a_declared_dimension_and_says_how(tmp_path):
    m = ColumnMapping(doc_id="doc_id", system_id="system", output="output", source="source")
    with pytest.raises(DatasetValidationError) as info:
        import_table(TEXTS, m)
    (p,) = info.value.problems
    assert "no ratings are mapped" in p.message and "--dimension helpfulness=1:5" in p.message
    rc, out, err = cli("import-dataset", str(TEXTS), "--name", "t", db=tmp_path / "s.db")
    assert rc == 2 and "--dimension" in err and stored_datasets(tmp_path / "s.db") == []
    no_scale = ColumnMapping(doc_id="doc_id", system_id="system", output="output", unrated=["helpfulness"])
    with pytest.raises(DatasetValidationError, match="'helpfulness' has no rating column, so its scale cannot"):
        import_table(TEXTS, no_scale)
    rc, out, err = cli("import-dataset", str(TEXTS), "--name", "t", "--scale", "helpfulness=1:5",
                       db=tmp_path / "s.db")
    assert rc == 2 and "declared as unrated (CLI: --dimension)" in err


def test_texts_only_import_is_labelled_in_the_app_and_its_labels_give_alpha(tmp_path):
    db = tmp_path / "s.db"
    rc, out, err = cli("import-dataset", str(TEXTS), "--name", "to label", "--dimension", "helpfulness=1:5",
                       "--dimension", "safe", "--kind", "safe=binary", "--labels", "safe=unsafe,safe", "--json",
                       db=db)
    assert rc == 0, err
    summary = json.loads(out)
    assert summary["dimensions"] == ["helpfulness", "safe"] and summary["unrated"] == ["helpfulness", "safe"]
    assert summary["kinds"] == {"helpfulness": "interval", "safe": "binary"}
    assert summary["labels"] == {"safe": ["unsafe", "safe"]} and summary["items"] == 18
    store = Store(db)
    ds = store.load_dataset(summary["dataset"])
    assert ds.human_scores.empty and ds.annotations.empty and len(ds.items) == 18
    assert ds.dimension("helpfulness").scale == (1.0, 5.0) and ds.dimension("safe").positive == "safe"
    assert labels_mod.point_names(ds.dimension("safe")) == ["unsafe", "safe"]
    assert labels_mod.scale_points(ds.dimension("helpfulness")) == [1.0, 2.0, 3.0, 4.0, 5.0]
    # two annotators label the first 10 items of the random order, as the Label page saves them
    order = labels_mod.item_order(ds, "random")
    assert sorted(order) == sorted(ds.items["item_id"])
    r1 = [1, 1, 0, 1, 0, 1, 1, 1, 0, 0]
    r2 = [1, 0, 0, 1, 0, 1, 1, 0, 0, 0]
    for item, a, b in zip(order[:10], r1, r2):
        store.save_label(ds.id, item, "safe", "ann1", float(a))
        store.save_label(ds.id, item, "safe", "ann2", float(b))
    rows = store.label_rows(ds.id)
    alpha = labels_mod.labels_alpha(rows, "safe", level=labels_mod.measurement_level(ds.dimension("safe")),
                                    n_resamples=0)
    assert alpha.statistic == pytest.approx(nominal_alpha_by_hand([r1, r2]))
    merged = runs_mod.get_dataset(ds.id, store)  # what every page sees
    hs = merged.human_scores[merged.human_scores["dimension"] == "safe"].set_index("item_id")["score"]
    assert len(hs) == 10
    assert hs.loc[order[:10]].tolist() == [(a + b) / 2 for a, b in zip(r1, r2)]


def nominal_alpha_by_hand(ratings: list[list[int]]) -> float:
    """Krippendorff's alpha, nominal, every unit rated by every coder (Krippendorff 2011, "Computing Krippendorff's
    alpha-reliability", the coincidence matrix: alpha = 1 - (n - 1) * sum_c o_cc' off-diagonal / sum e...)."""
    units = list(zip(*ratings))
    values = sorted({v for u in units for v in u})
    o = {(c, k): 0.0 for c in values for k in values}
    for u in units:
        m = len(u)
        for i, c in enumerate(u):
            for j, k in enumerate(u):
                if i != j:
                    o[(c, k)] += 1 / (m - 1)
    n_c = {c: sum(o[(c, k)] for k in values) for c in values}
    n = sum(n_c.values())
    observed = sum(o[(c, k)] for c in values for k in values if c != k)
    expected = sum(n_c[c] * n_c[k] for c in values for k in values if c != k) / (n - 1)
    return 1 - observed / expected


def test_a_texts_only_dataset_can_mix_rated_and_unrated_dimensions():
    m = ColumnMapping(**{**FAITH_MAPPING, "unrated": ["helpfulness"], "scales": {"helpfulness": (1.0, 7.0)}})
    result = import_table(FAITH, m)
    ds = result.dataset
    assert ds.dimension_names == ["faithfulness", "helpfulness"]
    assert set(ds.human_scores["dimension"]) == {"faithfulness"}
    assert result.summary()["unrated"] == ["helpfulness"]
    assert any("no ratings yet for 'helpfulness'" in n for n in ds.meta["import_notes"])


# ---------------------------------------------------------------------------------------------- one transaction


def test_save_import_is_one_transaction_a_failing_run_leaves_nothing(tmp_path, monkeypatch):
    store = Store(tmp_path / "s.db")
    result = import_table(FAITH, ColumnMapping(**FAITH_MAPPING), name="faith")

    def broken(run, **kw):
        raise RuntimeError("disk full while writing the run")

    monkeypatch.setattr(store, "save_imported_run", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        save_import(result, store)
    assert not store.has_dataset(result.dataset.id) and store.list_runs() == []
    monkeypatch.undo()
    save_import(result, store)  # the same import, written whole
    assert store.has_dataset(result.dataset.id) and len(store.list_runs(result.dataset.id)) == 1
    # a failing re-import keeps the earlier one as it was
    monkeypatch.setattr(store, "save_imported_run", broken)
    renamed = import_table(FAITH, ColumnMapping(**FAITH_MAPPING), name="renamed")
    with pytest.raises(RuntimeError):
        save_import(renamed, store)
    assert store.load_dataset(result.dataset.id).name == "faith"


# ---------------------------------------------------------------------------------------------- properties


_words = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6), min_size=2, max_size=5,
                  unique=True)


@settings(max_examples=60, deadline=None)
@given(labels=_words, picks=st.lists(st.integers(0, 4), min_size=1, max_size=30),
       styles=st.lists(st.sampled_from(["as is", "upper", "title", "padded"]), min_size=30, max_size=30))
def test_encode_then_decode_gives_back_the_word_whatever_its_case_and_spaces(labels, picks, styles):
    kind = "binary" if len(labels) == 2 else "nominal"
    dim = Dimension("d", 0, len(labels) - 1, kind=kind, labels=tuple(labels))
    chosen = [labels[p % len(labels)] for p in picks]
    styled = [{"as is": w, "upper": w.upper(), "title": w.title(), "padded": f" {w}  "}[s]
              for w, s in zip(chosen, styles)]
    enc = encode_column(pd.Series(styled, dtype="str"), dim)
    assert not enc.unknown.any()
    assert [dim.labels[int(c)] for c in enc.values] == chosen
    # the labels derived from the styled words are the same set, whatever spellings were seen
    derived = derived_labels(word_counts(pd.Series(styled, dtype="str")), "nominal")
    assert sorted(x.lower() for x in derived) == sorted(set(chosen))


def test_kind_declares_a_word_column_of_any_name_a_rating(tmp_path):
    """Issue 18.14: ``--kind tone=nominal`` imports a word column the guess left aside (its name says neither label
    nor class), with codes checked against the CSV's words."""
    words = ["sharp", "vague", "mixed"]
    rows = [{"doc_id": f"d{d}", "system_id": f"S{s}", "summary": f"text {d} {s}", "tone": words[(d + s) % 3]}
            for d in range(4) for s in range(3)]
    path = tmp_path / "tone.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    db = tmp_path / "s.db"
    rc, out, err = cli("import-dataset", str(path), "--name", "tone", db=db)
    assert rc == 2 and "no ratings are mapped" in err
    rc, out, err = cli("import-dataset", str(path), "--name", "tone", "--kind", "tone=nominal", db=db)
    assert rc == 0, err
    assert "tone (nominal: mixed, sharp, vague)" in out and "as --kind says" in out + err
    ds = runs_mod.get_dataset(stored_datasets(db)[0], Store(db))
    dim = ds.dimension("tone")
    human = ds.human_scores.set_index("item_id")["score"]
    for r in rows:
        item = ds.items[(ds.items["doc_id"] == r["doc_id"]) & (ds.items["system_id"] == r["system_id"])]["item_id"]
        assert dim.labels[int(human[item.iloc[0]])] == r["tone"]
