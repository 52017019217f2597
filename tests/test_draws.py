"""Draws in the data model: a run holds K draws per item, its judgments are their aggregate (mean; mode for a
categorical label), and a run of one draw is unchanged. The bundled Topical-Chat G-Eval run carries the 20 samples
Chiang & Lee released per item, parsed one by one."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from evalcore import datasets
from evalcore.model import aggregate_draws

TC = "topical_chat/chiang-lee-gpt-3.5-geval"


def _draws(values, status=None):
    n = len(values)
    return pd.DataFrame({"item_id": ["i"] * n, "dimension": ["d"] * n, "draw": list(range(n)), "raw": [""] * n,
                         "value": values, "status": status or ["ok"] * n, "reason": [""] * n})


def test_the_aggregate_is_the_mean_of_the_draws_that_parsed():
    agg = aggregate_draws(_draws([1.0, 2.0, math.nan, 4.0], ["ok", "ok", "failed", "ok"]))
    assert agg["value"].tolist() == [7 / 3] and agg["n_draws"].tolist() == [4] and agg["n_ok"].tolist() == [3]
    assert agg["status"].tolist() == ["ok"]
    none = aggregate_draws(_draws([math.nan], ["failed"]))
    assert none["status"].tolist() == ["failed"] and math.isnan(none["value"].iloc[0])


def test_the_aggregate_of_a_categorical_label_is_its_mode_ties_to_the_lowest_code():
    assert aggregate_draws(_draws([1.0, 0.0, 1.0]), categorical=True)["value"].tolist() == [1.0]
    assert aggregate_draws(_draws([2.0, 0.0, 2.0, 0.0]), categorical=True)["value"].tolist() == [0.0]


def test_the_bundled_topical_chat_run_holds_20_draws_whose_mean_is_its_judgment():
    run = datasets.load_bundled_run(TC)
    assert run.n_draws == 20 and len(run.draws) == 20 * len(run.judgments)
    raw = pd.read_parquet(datasets.DATA_DIR / "runs" / "topical_chat__chiang-lee-gpt-3.5-geval.parquet")
    first = raw.iloc[0]
    mine = run.draws[(run.draws["item_id"] == first["item_id"]) & (run.draws["dimension"] == first["dimension"])]
    assert mine["raw"].tolist() == json.loads(first["raw"]) and mine["draw"].tolist() == list(range(20))
    m = run.judgments.merge(aggregate_draws(run.draws), on=["item_id", "dimension"])
    assert np.allclose(m["value_x"], m["value_y"], rtol=0, atol=1e-12, equal_nan=True)


def test_a_run_of_one_draw_has_no_draws_table_and_reads_its_judgments_as_draw_0():
    run = datasets.load_bundled_run("summeval/shen-gpt-4-0314-rts")
    assert run.draws.empty and run.n_draws == 1
    d = run.draw_scores("coherence")
    assert d["draw"].eq(0).all() and d["judge"].tolist() == run.scores("coherence")["judge"].tolist()


def test_the_label_pages_uncertain_order_ranks_items_by_the_spread_of_their_draws():
    from evalcore import labels

    run = datasets.load_bundled_run(TC)
    u = labels.geval_width(run, "coherence")
    d = run.draw_scores("coherence").pivot(index="item_id", columns="draw", values="judge")
    assert len(u) == len(d) and u.loc[d.index[0]] == pytest.approx(float(np.nanstd(d.iloc[0].to_numpy())))
    order, n = labels.order_for(datasets.load_dataset("topical_chat"), "uncertain", ("geval", TC), (run,),
                                "coherence")
    assert n == len(u) and u.loc[order[0]] == u.max()
