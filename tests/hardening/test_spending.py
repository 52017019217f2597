"""Spending needs consent (evalcore.judge.spending; issue 21, item 12), and the Score page asks for it."""

from __future__ import annotations

import re

import pytest

from evalcore.judge import spending
from evalcore.judge.spending import decide

from _judging import ROOT


@pytest.mark.parametrize("cost,calls,local,spent,cap,allowed,confirm", [
    (0.5, 10, False, 0.0, None, True, False),   # under the default 1 USD: no question
    (1.0, 10, False, 0.0, None, True, False),   # at the threshold: still none
    (2434.92, 96_000, False, 0.0, None, True, True),  # a link's huge run: confirm first
    (None, 10, False, 0.0, None, True, True),   # unknown price of a paid provider: confirm first
    (None, 10, True, 0.0, 5.0, True, False),    # a local server: free, whatever the cap
    (3.0, 0, False, 0.0, 1.0, True, False),     # everything cached: nothing to pay
    (3.0, 10, False, 0.0, 5.0, True, True),     # under the cap, above the threshold
    (3.0, 10, False, 2.5, 5.0, False, False),   # 2.5 + 3.0 passes the cap of 5
    (None, 10, False, 0.0, 5.0, False, False),  # a cap and an unknown price: cannot be checked, refused
])
def test_decide(cost, calls, local, spent, cap, allowed, confirm):
    d = decide(cost, calls, local=local, spent_usd=spent, cap=cap)
    assert (d.allowed, d.needs_confirmation) == (allowed, confirm)


def test_environment_values(monkeypatch):
    assert spending.confirm_threshold({}) == 1.0 and spending.spending_cap({}) is None
    assert spending.confirm_threshold({"EVALCORE_CONFIRM_USD": "0.25"}) == 0.25
    assert spending.spending_cap({"EVALCORE_MAX_COST_USD": "10"}) == 10.0
    assert spending.spending_cap({"EVALCORE_MAX_COST_USD": "-3"}) is None  # unreadable: no cap, not a negative one
    assert spending.confirm_threshold({"EVALCORE_CONFIRM_USD": "nan"}) == 1.0


def _score_page(tmp_path, monkeypatch, **env):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "app.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "10")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update({"method": "geval", "limit": "0"})
    at.switch_page("pages/score.py").run()
    at.text_input(key="model").input("gpt-4o").run()
    at.text_input(key="api_key").input("typed-key").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_costly_run_needs_a_confirmation_naming_cost_requests_and_host(tmp_path, monkeypatch):
    at = _score_page(tmp_path, monkeypatch)
    assert at.button(key="start_scoring").disabled  # GPT-4o on all 1,600 items: about 3.4 USD, above 1 USD
    box = at.checkbox(key="confirm_spend")
    shown = re.sub(r"\\(.)", r"\1", box.label)  # the label as the reader sees it: its Markdown escapes drawn
    assert "1,546 requests" in shown and "api.openai.com" in shown and "$" in shown
    box.check().run()
    assert not at.button(key="start_scoring").disabled
    at.number_input(key="limit").set_value(20).run()  # 20 items: a few cents, nothing to confirm
    assert "confirm_spend" not in [c.key for c in at.checkbox] and not at.button(key="start_scoring").disabled
    at.number_input(key="limit").set_value(0).run()  # the big plan again: asked again, not remembered
    assert at.button(key="start_scoring").disabled and not at.checkbox(key="confirm_spend").value


def test_the_operators_cap_refuses_a_run_above_it(tmp_path, monkeypatch):
    at = _score_page(tmp_path, monkeypatch, EVALCORE_MAX_COST_USD="2")
    assert at.button(key="start_scoring").disabled
    assert any("cap of $2.00 per server for everyone not signed in" in e.value.replace("\\", "") for e in at.error)


def test_a_link_cannot_ask_for_unbounded_resamples(tmp_path, monkeypatch):
    """/alignment?resamples=100000 (12x the work of the default, issue 21 item 2): out of bounds, the default."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "app.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "10")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update({"resamples": "100000"})
    at.run()
    assert not at.exception
    assert at.number_input(key="resamples").value == 10 and at.query_params["resamples"] in ("10", ["10"])
