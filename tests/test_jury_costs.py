"""Cost beside agreement for the bundled judges: Shen et al.'s GPT-4 and ChatGPT runs carry the token counts their
authors released (converted by scripts/build_data.py), priced at the dated list prices of the price table; the Llama
runs released none and have no cost, said so."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.datasets import load_bundled_run
from evalcore.judge import cost
from evalcore.views import jury as jv
from evalcore.views.blocks import Figure, Note
from evalcore.views.format import esc

GPT4, GPT35, LLAMA = ("summeval/shen-gpt-4-0314-rts", "summeval/shen-gpt-3.5-turbo-0301-rts",
                      "summeval/shen-llama-2-70b-chat-rts")


@pytest.fixture(autouse=True)
def _builtin_prices(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALCORE_PRICES", str(tmp_path / "none.json"))  # the built-in table only


def test_the_released_usage_priced_by_hand():
    gpt4, gpt35, llama = (load_bundled_run(r) for r in (GPT4, GPT35, LLAMA))
    s = gpt4.config.stats
    assert (s.requests, s.prompt_tokens, s.completion_tokens) == (4800, 2_907_728, 162_958)
    # $30 / $60 per 1M tokens (GPT-4 8K, March 2023)
    assert jv.run_cost(gpt4) == pytest.approx(2_907_728 * 30e-6 + 162_958 * 60e-6, rel=1e-12)
    s = gpt35.config.stats
    assert jv.run_cost(gpt35) == pytest.approx((s.prompt_tokens + s.completion_tokens) * 2e-6, rel=1e-12)
    assert llama.config.stats.prompt_tokens == 0 and jv.run_cost(llama) is None
    assert "usage_source" in gpt4.config.extra and "prompt_len" in gpt4.config.extra["usage_source"]


def test_the_cost_chart_has_the_priced_judges_and_says_where_prices_come_from():
    runs = {r: load_bundled_run(r) for r in (GPT4, GPT35, LLAMA)}
    table = pd.DataFrame({"run": ["GPT-4", "ChatGPT", "Llama-2 70B"], "run_id": [GPT4, GPT35, LLAMA],
                          "spearman": [0.45, 0.40, 0.30]})
    t = jv.cost_table(table, runs, "spearman")
    assert t["cost_usd"].notna().tolist() == [True, True, False]
    assert t["pareto"].tolist() == [True, True, False]  # the dearer judge agrees better: both on the front
    out = jv.cost_blocks(t, "spearman", jv.price_sources(runs))
    assert any(isinstance(b, Figure) for b in out)
    said = " ".join(b.text for b in out if isinstance(b, Note))
    assert esc("Llama-2 70B") in said and "14 March 2023" in said and "1 March 2023" in said
    assert set(jv.price_sources(runs)) == {"gpt-4-0314", "gpt-3.5-turbo-0301"} <= set(cost.PRICE_SOURCES)
