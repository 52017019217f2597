"""Label kinds in the app (issue 7.4), under AppTest: a user dataset with a binary dimension and a judge run, both
created through the store API, shows kappa & co with CIs, the confusion matrix as a labelled heatmap and the
reliability diagram on Alignment, and nominal-level alpha on the Data page; every number equals the library's."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from evalcore.store import Store  # noqa: E402
from evalcore.testing.labels import save_label_example  # noqa: E402

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 60
RESAMPLES = 20


@pytest.fixture(autouse=True)
def first_start_env(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "evalcore.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", str(RESAMPLES))
    for k in list(os.environ):
        if k.startswith(("OPENAI_", "AZURE_OPENAI")):
            monkeypatch.delenv(k)
    # the app's dataset list and loaded datasets are cached per process: a store of an earlier test must not show
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()


def _frame_with(at: AppTest, *columns: str):
    for d in [*at.dataframe, *at.table]:  # grids and static tables (the Data page's dimension tables)
        if all(c in d.value.columns for c in columns):
            return d.value
    shown = [list(d.value.columns) for d in [*at.dataframe, *at.table]]
    raise AssertionError(f"no table with columns {columns}; tables: {shown}")


def _clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_binary_dataset_shows_kappa_confusion_matrix_and_calibration():
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    from evalcore.meta.classification import label_agreement

    ds, run = save_label_example(Store(os.environ["EVALCORE_DB"]), kind="binary")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["dataset"] = ds.id
    at.run()
    _clean(at)
    assert at.sidebar.selectbox(key="dataset").value == ds.id
    assert at.sidebar.multiselect(key="runs").value == [run.run_id]

    # Data page: the label kinds and alpha at the nominal level
    kinds = _frame_with(at, "kind", "categories", "alpha level")
    assert kinds.iloc[0]["kind"] == "binary" and kinds.iloc[0]["positive class"] == "pass"
    at.session_state["data_section"] = "Human agreement"  # the agreement tab runs when opened
    at.run()
    alpha = _frame_with(at, "alpha", "level")
    assert alpha.iloc[0]["level"] == "nominal"

    at.switch_page("pages/alignment.py").run()
    _clean(at)
    table = _frame_with(at, "run", "statistic", "value", "ci_low", "ci_high")
    kappa_row = table[table["statistic"] == "Cohen's kappa"].iloc[0]
    # independent: majority of the three raters vs the judge's p(yes) >= 0.5, through scikit-learn directly
    ann = ds.annotations.pivot(index="item_id", columns="annotator", values="value")
    majority = (ann.sum(axis=1) >= 2).astype(int)  # three raters, two labels: never a tie
    j = run.judgments.set_index("item_id")
    judge = np.array([int(d["p_yes"] >= 0.5) for d in j.loc[majority.index, "detail"]])
    assert kappa_row["value"] == pytest.approx(cohen_kappa_score(majority.to_numpy(), judge), abs=1e-12)
    assert kappa_row["ci_low"] <= kappa_row["value"] <= kappa_row["ci_high"]
    assert set(table["statistic"]) >= {"Cohen's kappa", "accuracy", "precision (pass)", "recall (pass)", "F1 (pass)"}

    charts = [c for c in at.get("plotly_chart")]
    import json

    figs = [json.loads(c.proto.spec) for c in charts]
    heat = [f for f in figs if f["data"] and f["data"][0].get("type") == "heatmap"]
    assert heat, "no confusion-matrix heatmap"
    h = heat[0]
    assert h["layout"]["xaxis"]["title"]["text"] == "judge label"
    assert h["layout"]["yaxis"]["title"]["text"] == "human label"
    assert h["data"][0]["x"] == ["fail", "pass"] and h["data"][0]["y"] == ["fail", "pass"]
    assert np.array_equal(np.array(h["data"][0]["z"]), confusion_matrix(majority.to_numpy(), judge))
    assert all(str(v) in t for row_z, row_t in zip(h["data"][0]["z"], h["data"][0]["text"])
               for v, t in zip(row_z, row_t))  # counts written in the cells

    reliability = [f for f in figs if "Reliability" in f["layout"]["title"]["text"]]
    assert reliability and reliability[0]["layout"]["xaxis"]["title"]["text"]
    cal = _frame_with(at, "statistic", "value", "target")
    rep = label_agreement(ds, run, "faithful", n_resamples=0)
    brier = cal[cal["statistic"] == "Brier score"].iloc[0]["value"]
    assert brier == pytest.approx(rep.calibration.brier.statistic, abs=1e-12)
    per_annotator = _frame_with(at, "annotator", "cohen_kappa")
    assert list(per_annotator["annotator"]) == ["rater1", "rater2", "rater3"]
    from evalcore.views.data import agreement_table

    alpha = agreement_table(ds, n_resamples=RESAMPLES).iloc[0]["alpha"]
    shown = [c.value.replace("\\", "") for c in at.caption]  # captions are Markdown-escaped
    assert any("Krippendorff's alpha (nominal)" in c and f"{alpha:.3f}" in c for c in shown), shown


def test_interval_dataset_shows_no_label_section():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/alignment.py").run()
    _clean(at)
    assert not any("Agreement on" in s.value for s in at.subheader)
    assert not any(f["data"] and f["data"][0].get("type") == "heatmap"
                   for f in (__import__("json").loads(c.proto.spec) for c in at.get("plotly_chart")))


def test_ordinal_dataset_shows_weighted_kappa_beside_the_correlations():
    ds, _ = save_label_example(Store(os.environ["EVALCORE_DB"]), kind="ordinal", dataset_id="user-ordinal")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["dataset"] = ds.id
    at.run()
    assert at.sidebar.selectbox(key="dataset").value == ds.id
    at.switch_page("pages/alignment.py").run()
    _clean(at)
    table = _frame_with(at, "run", "statistic", "value", "ci_low", "ci_high")
    assert "quadratic-weighted kappa" in set(table["statistic"])
    assert "precision (macro)" in set(table["statistic"])
    assert any(s.value == "Agreement on ordinal labels" for s in at.subheader)
    _frame_with(at, "level", "coefficient", "statistic")  # the correlations are still there


@pytest.mark.parametrize("kind", ["binary", "nominal"])
def test_every_page_renders_on_a_categorical_dataset(kind):
    ds, _ = save_label_example(Store(os.environ["EVALCORE_DB"]), kind=kind, dataset_id=f"user-{kind}")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["dataset"] = ds.id
    at.run()
    _clean(at)
    for page in ("criteria", "score", "alignment", "bias", "compare", "data"):
        at.switch_page(f"pages/{page}.py").run()
        _clean(at)
        if page == "alignment":
            assert any(s.value == f"Agreement on {kind} labels" for s in at.subheader)
            shown = _frame_with(at, "run", "statistic", "value")
            assert shown["value"].notna().all()  # undefined statistics are listed in a caption, not as "None"
            tables = [list(d.value.columns) for d in at.dataframe]
            if kind == "nominal":  # issue 18.7: no correlation or ceiling of unordered codes
                assert not any("coefficient" in cols for cols in tables), tables
                assert any("no correlations" in i.value for i in at.info)
            else:
                assert any("coefficient" in cols for cols in tables), tables


def test_two_runs_each_have_their_confusion_matrix():
    import json

    from evalcore.testing.labels import label_run

    store = Store(os.environ["EVALCORE_DB"])
    ds, run = save_label_example(store, kind="binary", dataset_id="user-two")
    truth = ds.human_scores["score"].to_numpy().astype(int)
    other = label_run(ds, truth, seed=99, judge_accuracy=0.95, run_id="user-two/second")
    store.create_run(run_id=other.run_id, dataset_id=ds.id, method="implicit", model="m2", label="second judge")
    for row in other.judgments.to_dict(orient="records"):
        store.save_judgment(other.run_id, row)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["dataset"] = ds.id
    at.query_params["runs"] = [run.run_id, other.run_id]
    at.run()
    at.switch_page("pages/alignment.py").run()
    _clean(at)
    table = _frame_with(at, "run", "statistic", "value")
    assert set(table["run"]) == {"synthetic judge", "second judge"}
    kappas = table[table["statistic"] == "Cohen's kappa"].set_index("run")["value"]
    assert kappas["second judge"] > kappas["synthetic judge"]  # the more accurate judge agrees more

    def heatmap_title():
        figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
        return next(f["layout"]["title"]["text"] for f in figs if f["data"][0].get("type") == "heatmap")

    assert heatmap_title().startswith("Confusion matrix: synthetic judge")
    at.selectbox(key="confusion_run").set_value("second judge").run()
    _clean(at)
    assert heatmap_title().startswith("Confusion matrix: second judge")
