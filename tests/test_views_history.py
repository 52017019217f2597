"""A judge's agreement over time (evalcore.views.history): runs written to a temporary store with distinct dates, read
back as the page reads them (the index without scores, then each run loaded), grouped by judge, and each run's
correlation checked against scipy on the same items."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.model import Dataset, Dimension, Run
from evalcore.store import Store
from evalcore.views import history
from evalcore.views.blocks import Figure, Note, Table

N = 30
HUMAN = np.random.default_rng(3).integers(1, 6, N).astype(float)
ITEMS = [f"d{i}/S" for i in range(N)]
CONFIG = {"method": "direct", "endpoint": {"provider": "openai", "base_url": "http://x/v1", "model": "judge-m"},
          "criteria": {"coh": {"hash": "h1"}}}


def _dataset() -> Dataset:
    items = pd.DataFrame({"item_id": ITEMS, "doc_id": [i.split("/")[0] for i in ITEMS], "system_id": "S",
                          "output": "o"})
    docs = pd.DataFrame({"doc_id": items["doc_id"], "source": "s", "references": [[]] * N, "context": ""})
    human = pd.DataFrame({"item_id": ITEMS, "dimension": "coh", "score": HUMAN})
    return Dataset(id="hist", name="hist", task="t", dimensions=[Dimension("coh", 1, 5)], documents=docs,
                   items=items, human_scores=human)


def _judge_scores(seed: int) -> np.ndarray:
    noise = np.random.default_rng(seed).normal(0, seed * 0.4, N)  # later seeds: noisier, so the figures differ
    return np.clip(np.round(HUMAN + noise), 1, 5)


def _run(run_id: str, created_at: str, seed: int, config: dict) -> Run:
    h = config["criteria"]["coh"]["hash"]
    j = pd.DataFrame({"item_id": ITEMS, "dimension": "coh", "criteria_hash": h, "raw": "", "value": _judge_scores(seed),
                      "status": "ok", "reason": "", "estimator": "", "detail": [{}] * N})
    return Run(run_id=run_id, dataset_id="hist", method="direct", model="judge-m", config=config,
               created_at=created_at, judgments=j)


@pytest.fixture
def store(tmp_path):
    st = Store(tmp_path / "s.db")
    # written out of date order: the history sorts by date, not by insertion
    st.save_imported_run(_run("r-march", "2026-03-01T09:00:00+00:00", 2, CONFIG))
    st.save_imported_run(_run("r-jan", "2026-01-05T09:00:00+00:00", 1, CONFIG))
    st.save_imported_run(_run("r-may", "2026-05-20T09:00:00+00:00", 3,
                              {**CONFIG, "reported_model": "judge-m-2026-05"}))  # a new snapshot: the same judge
    st.save_imported_run(_run("r-edited", "2026-04-01T09:00:00+00:00", 1,
                              {**CONFIG, "criteria": {"coh": {"hash": "h2"}}}))  # a prompt edit: another judge
    st.save_imported_run(_run("r-other", "2026-02-01T09:00:00+00:00", 1,
                              {**CONFIG, "endpoint": {**CONFIG["endpoint"], "model": "other-m"}}))
    return st


def test_the_runs_of_one_judge_by_date_with_the_headline_correlation(store):
    index = store.list_runs("hist")  # as the page's index: no scores
    found = history.judges(index)
    assert len(found) == 1  # the prompt edit and the other model have one run each: no history
    (label, runs), = found.items()
    assert label.startswith("judge-m · direct · ")
    assert [r.run_id for r in runs] == ["r-jan", "r-march", "r-may"]

    loaded = [store.load_run(r.run_id) for r in runs]
    frame = history.judge_history(_dataset(), loaded, "coh", level="dataset", coefficient="pearson",
                                  n_resamples=200)
    assert frame["run_id"].tolist() == ["r-jan", "r-march", "r-may"]
    assert frame["date"].dt.strftime("%Y-%m-%d").tolist() == ["2026-01-05", "2026-03-01", "2026-05-20"]
    assert frame["reported_model"].tolist() == ["", "", "judge-m-2026-05"]
    for row, seed in zip(frame.itertuples(), (1, 2, 3)):
        expected = stats.pearsonr(_judge_scores(seed), HUMAN).statistic  # by a second method
        assert row.statistic == pytest.approx(expected, abs=1e-9)
        assert row.ci_low <= row.statistic <= row.ci_high and row.n == N
    assert frame["statistic"].is_monotonic_decreasing  # noisier later: the drift the chart is for

    blocks = history.history_blocks(frame, loaded + [store.load_run("r-edited")], judge=label, level="dataset",
                                    coefficient="pearson")
    fig = next(b for b in blocks if isinstance(b, Figure)).figure
    assert fig.layout.xaxis.title.text == "run date (UTC)"
    assert fig.layout.yaxis.title.text == "pearson correlation with human ratings"
    trace = fig.data[0]
    assert list(trace.y) == pytest.approx(frame["statistic"].tolist())
    assert list(trace.error_y.array) == pytest.approx((frame["ci_high"] - frame["statistic"]).tolist())
    assert list(trace.error_y.arrayminus) == pytest.approx((frame["statistic"] - frame["ci_low"]).tolist())
    assert any(isinstance(b, Table) for b in blocks)
    assert any(isinstance(b, Note) and "r-edited" in b.text for b in blocks)


def test_no_history_without_two_dated_runs_of_one_judge(store):
    one_each = [r for r in store.list_runs("hist") if r.run_id in ("r-jan", "r-edited", "r-other")]
    assert history.judges(one_each) == {}
    assert any(isinstance(b, Note) for b in history.intro({}))
    undated = [Run(run_id=f"u{i}", dataset_id="hist", method="direct", model="judge-m", config=CONFIG)
               for i in range(3)]
    assert history.judges(undated) == {}
    empty = history.history_frame([], pd.DataFrame())
    assert history.history_blocks(empty, [], judge="j", level="dataset", coefficient="pearson")[0].text.startswith(
        "No run")


def test_the_alignment_page_draws_the_history_when_asked(first_start):
    """Under AppTest: three runs of one judge on SummEval's coherence, stored with distinct dates, drawn on the
    Alignment page's Correlations tab once its toggle is on: the chart and the table, oldest first."""
    from streamlit.testing.v1 import AppTest

    from evalcore import runs as runs_mod

    ds = runs_mod.get_dataset("summeval")
    human = ds.human_scores[ds.human_scores["dimension"] == "coherence"].groupby("item_id")["score"].mean()
    human = human.iloc[:80]
    st = Store(first_start)
    config = {**CONFIG, "criteria": {"coherence": {"hash": "h1"}}}
    for k, date in enumerate(["2026-02-01", "2026-01-01", "2026-03-01"], start=1):
        noise = np.random.default_rng(k).normal(0, k * 0.3, len(human))
        j = pd.DataFrame({"item_id": human.index, "dimension": "coherence", "criteria_hash": "h1", "raw": "",
                          "value": np.clip(human.to_numpy() + noise, 1, 5), "status": "ok", "reason": "",
                          "estimator": "", "detail": [{}] * len(human)})
        st.save_imported_run(Run(run_id=f"hist-{date}", dataset_id="summeval", method="direct", model="judge-m",
                                 config=config, created_at=f"{date}T00:00:00+00:00", judgments=j))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/alignment.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(history.HEADING in m.value for m in at.markdown)
    toggle = next(t for t in at.toggle if t.label == "Show a judge's runs by date")
    toggle.set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    charts = [c for c in at.get("plotly_chart")]
    assert charts, "no plotly chart drawn"
    # st.table's cells are Markdown-escaped (pages._shared.markdown_safe): read without the backslashes
    tables = [t.value for t in at.table if {"date", "statistic"} <= set(t.value.columns)]
    assert len(tables) == 1 and len(tables[0]) == 3
    dates = [str(d).replace("\\", "")[:10] for d in tables[0]["date"]]
    assert dates == ["2026-01-01", "2026-02-01", "2026-03-01"]
