"""A shared lab server, fourth review: an ownerless run is not taken over by a signed-in user's import, user-written
strings stay text on every page, the score parser stays linear on hostile replies, CSV cells holding any locale's
separator are quoted, ``runs --json`` counts a run's judgments, and proxy-header sign-in can require the proxy's
secret."""

from __future__ import annotations


import pandas as pd
import pytest

from evalcore.identity import Viewer
from evalcore.store import Store

# ------------------------------------------------------------------------------- an ownerless run is everyone's


def _scores_csv(tmp_path, value: float, name: str = "gpt4.csv"):
    from evalcore import runs as runs_mod

    items = runs_mod.get_dataset("summeval").items["item_id"].head(5)
    path = tmp_path / name
    pd.DataFrame({"item_id": items, "score": value}).to_csv(path, index=False)
    return path


def test_a_signed_in_upload_never_replaces_the_operators_ownerless_run(tmp_path, own_store, capsys):
    """The operator imports judge scores with the command line (no owner); Bob uploads a file of the same name on
    the Data page (the page's own save path): refused, the operator's values and ownerlessness kept, Alice still
    sees the run; the operator's command line still replaces it."""
    from evalcore import importers, runs as runs_mod
    from evalcore.cli import main
    from evalcore.importers.api import save_runs

    assert main(["import-run", str(_scores_csv(tmp_path, 4.0)), "--dataset", "summeval", "--name", "gpt4", "--dimension", "coherence"]) == 0
    store = Store(own_store)
    rid = "summeval/scores-gpt4"
    assert store.owner_of("runs", (rid,)) == (None, False)

    bobs = importers.load_run_scores((_scores_csv(tmp_path, 1.0, "bob.csv").read_bytes(), "gpt4.csv"),
                                     runs_mod.get_dataset("summeval"), name="gpt4", dimension="coherence")
    assert bobs.run.run_id == rid
    with pytest.raises(ValueError, match="shared by everyone.*under another name"):
        save_runs([bobs.run], store, owner="bob")
    assert store.load_run(rid).judgments["value"].tolist() == [4.0] * 5
    assert store.owner_of("runs", (rid,)) == (None, False)
    assert rid in {r.run_id for r in store.list_runs("summeval", viewer=Viewer("alice"))}

    # the operator's CLI re-import keeps working (and the run stays ownerless)
    assert main(["import-run", str(_scores_csv(tmp_path, 2.0)), "--dataset", "summeval", "--name", "gpt4", "--dimension", "coherence"]) == 0
    assert store.load_run(rid).judgments["value"].tolist() == [2.0] * 5
    assert store.owner_of("runs", (rid,)) == (None, False)
    # Bob under another name: his own run, which he may replace
    bobs2 = importers.load_run_scores((_scores_csv(tmp_path, 1.0, "bob.csv").read_bytes(), "bob.csv"),
                                      runs_mod.get_dataset("summeval"), name="gpt4 (bob)", dimension="coherence")
    save_runs([bobs2.run], store, owner="bob")
    save_runs([bobs2.run], store, owner="bob")
    assert store.owner_of("runs", (bobs2.run.run_id,)) == ("bob", False)
    capsys.readouterr()


# ---------------------------------------------------------------------------- user-written strings stay text

HOSTILE = "rts ![x](http://attacker.example/b) [here](http://attacker.example/c) <img src=x> www.attacker.example"


def _no_link_or_image(markdown: str) -> bool:
    """``markdown`` as CommonMark draws it holds no link and no image, and nothing a GFM autolinker would link
    (Streamlit's Markdown links bare URLs and www. names)."""
    import re

    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(markdown)  # raw HTML kept: an <img> typed in the label would show
    return "<a " not in html and "<img" not in html and not re.search(r"(?i)https?://|www\.", markdown)


def _markdown_strings(at) -> list[str]:
    """Everything AppTest saw drawn through Markdown: messages, captions, headings, expander, metric, button and
    widget labels."""
    out = [str(e.value) for kind in ("markdown", "caption", "info", "warning", "error", "success", "title", "header",
                                     "subheader") for e in getattr(at, kind)]
    out += [str(e.label) for kind in ("expander", "metric", "button", "selectbox", "multiselect", "number_input",
                                      "text_input", "checkbox", "toggle", "radio") for e in getattr(at, kind)]
    return out


def test_a_hostile_run_label_is_text_on_compare(first_start):
    """A run whose label is Markdown (an image that every colleague's browser would fetch, a link, an autolinked
    name): the Compare page, its disagreement drill-down and the judge replies under it draw it as text."""
    from streamlit.testing.v1 import AppTest

    from evalcore import runs as runs_mod
    from evalcore.model import Run
    from tests.test_app_pages import APP, CHATGPT_RTS, GPT4_RTS, PAGES, TIMEOUT

    src = runs_mod.load_run(GPT4_RTS)
    hostile = Run(run_id="summeval/scores-hostile", dataset_id="summeval", method="imported", model="x",
                  label=HOSTILE, config={"imported_from": "x.csv"}, judgments=src.judgments.copy())
    Store(first_start).save_imported_run(hostile)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in {"dataset": "summeval", "runs": f"{hostile.run_id},{CHATGPT_RTS}", "dimension": "coherence",
                 "run_a": hostile.run_id, "run_b": CHATGPT_RTS}.items():
        at.query_params[k] = v
    at.switch_page(PAGES["compare"]).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _markdown_strings(at)
    assert any("Judge replies" in s for s in shown)
    quoting = [s for s in shown if "attacker" in s]
    assert quoting, "the label is shown somewhere through Markdown (the judge replies' caption)"
    assert [s for s in shown if not _no_link_or_image(s)] == []
