"""evalcore.api.evaluate returns what the analyses give for the same data imported as a file, and figures recomputed
with scipy / scikit-learn; the example in docs/api.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from evalcore.analyses.evaluation import Settings, dimension_analysis
from evalcore.api import evaluate
from evalcore.importers import ColumnMapping, DatasetValidationError, import_table
from evalcore.importers.mapping import JudgeColumn

DOCS = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def frame(seed: int = 0, annotators: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(15):
        for s in ("s1", "s2", "s3"):
            q = rng.normal()
            j = round(q + rng.normal(scale=0.5), 2)
            for a in range(annotators):
                rows.append({"document": f"d{d}", "system": s, "annotator": f"a{a}", "judge": j,
                             "human": int(np.clip(round(3 + q + rng.normal(scale=0.7)), 1, 5))})
    return pd.DataFrame(rows)


def test_the_estimates_are_the_analyses_of_the_same_data_imported_as_a_file(tmp_path):
    f = frame()
    ev = evaluate(f, annotator="annotator", dimension="quality", scale=(1, 5), n_resamples=100)
    # the Data page's route: the same rows as a CSV file, imported, then the Alignment page's analysis
    path = tmp_path / "ratings.csv"
    f.assign(dim="quality").to_csv(path, index=False)
    m = ColumnMapping(doc_id="document", system_id="system", annotator="annotator", dimension="dim", value="human",
                      judges=[JudgeColumn("judge", None, "judge")], scales={"quality": (1.0, 5.0)})
    res = import_table(path, m, name="ratings")
    want = dimension_analysis(res.dataset, res.runs[0], "quality",
                              Settings(levels=("dataset", "summary", "system"),
                                       coefficients=("pearson", "spearman", "kendall"), n_resamples=100))
    assert ev.correlations.cells.keys() == want.correlations.cells.keys()
    for k, e in want.correlations.cells.items():
        got = ev.correlations.cells[k]
        assert (got.statistic, got.ci_low, got.ci_high, got.n) == pytest.approx((e.statistic, e.ci_low, e.ci_high, e.n))


def test_dataset_level_pearson_is_scipys_on_item_means():
    f = frame(1)
    ev = evaluate(f, annotator="annotator", dimension="quality", scale=(1, 5), n_resamples=50)
    items = f.groupby(["document", "system"]).agg(judge=("judge", "first"), human=("human", "mean"))
    r = ev.correlation("dataset", "pearson")
    assert r.statistic == pytest.approx(stats.pearsonr(items["judge"], items["human"])[0])
    assert r.n == len(items) == 45
    assert ev.alt_test.error == "" and ev.alt_test.as_dict()["n_items"] == 45
    per_system = {p["system"]: p for p in ev.ppi.as_dict()["per_system"]}
    assert per_system["s1"]["estimate"] == pytest.approx(items.loc[(slice(None), "s1"), "human"].mean())


def test_kappa_on_a_binary_dimension_is_scikit_learns():
    rng = np.random.default_rng(3)
    n = 60
    human = rng.integers(0, 2, n)
    judge = np.where(rng.random(n) < 0.8, human, 1 - human)
    f = pd.DataFrame({"document": [f"d{i // 2}" for i in range(n)], "system": ["x", "y"] * (n // 2),
                      "human": human, "judge": judge})
    ev = evaluate(f, dimension="ok", kind="binary", scale=(0, 1), n_resamples=50)
    assert ev.kappa is ev.agreement.result.cohen_kappa
    assert ev.kappa.statistic == pytest.approx(cohen_kappa_score(human, judge))
    assert ev.alt_test.error  # one rating per item: no annotators to test against, said
    assert "two annotators" in ev.alt_test.error


def test_a_bad_cell_is_said_with_its_row_and_column():
    f = frame(annotators=1).drop(columns="annotator")
    f["human"] = f["human"].astype(object)
    f.loc[4, "human"] = "great"
    with pytest.raises(DatasetValidationError) as e:
        evaluate(f, dimension="quality", scale=(1, 5))
    assert "'human'" in str(e.value) and "great" in str(e.value)
    with pytest.raises(KeyError, match="no column 'score'"):
        evaluate(f, judge="score")


def test_the_docs_example_runs(capsys):
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], str(DOCS), "exec"), {})
    out = capsys.readouterr().out
    assert "dataset-level Pearson" in out and "on 60 items" in out and "PPI++ mean" in out
