"""A shared lab server, fourth review: an ownerless run is not taken over by a signed-in user's import, nor resumed
(rewritten, added to) by a signed-in user's scoring; user-written strings stay text on every page, the score parser
stays linear on hostile replies, CSV cells holding any locale's separator are quoted, ``runs --json`` counts a run's
judgments, and proxy-header sign-in can require the proxy's secret."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.identity import Viewer
from evalcore.store import Store
from tests import judge_calls

from _judging import CAPS, CRITERIA, KEY_ENV, SECRET, dataset, endpoint

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


# ----------------------------------------------------------- an ownerless scored run is not resumed by a user

@pytest.fixture
def operators_run(tmp_path, monkeypatch):
    """The operator's scored run (the command line: no owner) on a priced loopback judge: (store, endpoint, run,
    server). The judge's price is the test's own (10 USD per million tokens), so that a click is charged."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"loop-model": {"input": 10.0, "output": 10.0}}))
    monkeypatch.setenv("EVALCORE_PRICES", str(prices))
    monkeypatch.setenv(KEY_ENV, SECRET)
    from evalcore.testing.loopback import serve

    store = Store(tmp_path / "lab.db")
    with serve() as srv:
        ep = endpoint(srv)
        run = judge_calls.score_dataset(dataset(4), method="geval", criteria_by_dim=CRITERIA, endpoint=ep,
                                        store=store, capabilities=CAPS, label="the operator's")
        assert store.owner_of("runs", (run.run_id,)) == (None, False)
        yield store, ep, run, srv


def _as_it_was(store, rid):
    row = store.run_row(rid)
    return (row["label"], row["config"], row["owner"], len(store.load_run(rid).judgments),
            store.run_version(rid))


def test_a_signed_in_user_never_resumes_the_operators_ownerless_run_from_the_score_page(operators_run,
                                                                                         monkeypatch):
    """Bob's "Start scoring" on the Score page (its own code path: the estimate charged at the click, then
    evalcore.views.score.new_job and the job's thread) lands on the id of the operator's ownerless run: refused
    before anything is sent, the run's label, config, judgments and ownerlessness as they were, the estimate given
    back, and no "Resume" offered (resuming it refused the same way). The message says to use a new run name."""
    from evalcore.judge import runner, spending
    from evalcore.judge.spec import EngineOptions, ScoringSpec
    from evalcore.views import score as score_views

    store, ep, run, srv = operators_run
    before, seen = _as_it_was(store, run.run_id), srv.requests_seen
    spec = ScoringSpec(dataset(6), "geval", ["coherence"], CRITERIA, None, label="bob's")  # 2 items not cached
    est = runner.estimate(spec, EngineOptions(ep), store=store)
    assert spending.charge(est.cost_usd, est.calls, local=False, spender="bob", store=store, what="score").allowed
    assert est.cost_usd and store.spent_usd("bob") == pytest.approx(est.cost_usd)  # charged at the click
    monkeypatch.setattr(runner, "new_run_id", lambda *a: run.run_id)  # the new run's id is the operator's
    job = score_views.new_job(spec, ep, use_batch=False, api_key=None, concurrency=2, reprobe=True, store=store,
                              owner="bob", charged_usd=est.cost_usd)
    assert job.meter is not None  # a priced judge: the run would be metered
    job.start()
    assert job.wait(60) and job.refused
    assert job.run_id == run.run_id and job.thread is None
    assert "shared by everyone" in job.error and "new run name" in job.error
    said = score_views.finished_blocks(job)
    assert said[0].text.replace("\\", "").startswith("Not started: ") and said[0].kind == "error"
    assert score_views.resume_offer(job, ready=True, typed_for=None) is None
    job.resume(None)  # as a page holding the job would: refused again
    assert job.refused and job.thread is None
    assert srv.requests_seen == seen  # no probe, no request
    assert _as_it_was(store, run.run_id) == before
    assert store.spent_usd("bob") == pytest.approx(0.0)  # the estimate given back: nothing was sent


def _resume_as(owner, ep, store, run_id, **kw):
    """The engine (evalcore.judge.runner.score_dataset) given ``run_id`` and ``owner`` (a signed-in user's spec)."""
    from evalcore.judge import runner
    from evalcore.judge.spec import EngineOptions, ScoringSpec

    spec = ScoringSpec(dataset(4), "geval", ["coherence"], CRITERIA, None, run_id=run_id, owner=owner,
                       label=f"{owner}'s")
    return runner.score_dataset(spec, EngineOptions(ep, **kw), store=store)


def test_the_engine_and_the_store_refuse_a_signed_in_resume_of_an_ownerless_run(operators_run):
    """Below the page: the engine given the ownerless run's id and a signed-in owner (alice or bob) refuses before
    its probe; the store refuses to rewrite the run's row for them; another user's run is refused the same way. The
    operator's command line (no owner) still resumes it, and it stays ownerless."""
    store, ep, run, srv = operators_run
    before, seen = _as_it_was(store, run.run_id), srv.requests_seen
    for user in ("alice", "bob"):
        with pytest.raises(ValueError, match="shared by everyone.*new run name"):
            _resume_as(user, ep, store, run.run_id)
        with pytest.raises(ValueError, match="shared by everyone.*new run name"):
            store.create_run(run_id=run.run_id, dataset_id="tiny", method="geval", model="m", label=f"{user}'s",
                             config={}, owner=user)
    assert srv.requests_seen == seen and _as_it_was(store, run.run_id) == before
    store.create_run(run_id="tiny/alices", dataset_id="tiny", method="geval", model="m", owner="alice")
    with pytest.raises(ValueError, match="belongs to another user.*new run name"):
        _resume_as("bob", ep, store, "tiny/alices")
    assert store.run_refusal("tiny/alices", "alice") is None and store.run_refusal("tiny/none", "bob") is None
    assert srv.requests_seen == seen
    # the operator (no sign-in) resumes their own run: answered from the cache, still ownerless
    again = judge_calls.score_dataset(dataset(4), method="geval", criteria_by_dim=CRITERIA, endpoint=ep, store=store,
                                      run_id=run.run_id, label="the operator's, again", capabilities=CAPS)
    assert store.owner_of("runs", (again.run_id,)) == (None, False)
    assert store.run_row(run.run_id)["label"] == "the operator's, again"


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


# ------------------------------------------------------------------------ the score parser stays linear

def _collect_051be06(text, patterns):
    """The candidate collection as it was (commit 051be06): per candidate, a copy of its line back to the previous
    line break and a regex over the 300 characters before it. The reference the linear one is held to."""
    import re

    from evalcore.parsers import _COUNTERFACTUAL, _Candidate, _to_float

    out = []
    for tier, pat in patterns:
        for m in pat.finditer(text):
            v = _to_float(m.group("v"))
            if v is None:
                continue
            d = m.groupdict().get("d")
            start = m.start("v")
            line = text[text.rfind("\n", 0, start) + 1: start]
            window = text[max(0, start - 300): start]
            sentence = re.split(r"[.!?](?:\s|$)|\n", window)[-1]
            out.append(_Candidate(v, tier, start, _to_float(d) if d else None,
                                  in_list=bool(re.match(r"^[ \t]*(?:\d+[.)]|[*\-•])[ \t]", line)),
                                  counterfactual=bool(_COUNTERFACTUAL.search(sentence))))
    return out


class _CountingStr(str):
    """A reply that counts the characters Python-level string operations copy or scan out of it."""

    copied = 0

    def __getitem__(self, key):
        piece = str.__getitem__(self, key)
        type(self).copied += len(piece)
        return piece

    def rfind(self, sub, start=None, end=None):
        found = str.rfind(self, sub, start, end)
        type(self).copied += (len(self) if end is None else end) - max(found, start or 0)
        return found

    def find(self, sub, start=None, end=None):
        found = str.find(self, sub, start, end)
        type(self).copied += (found if found >= 0 else (len(self) if end is None else end)) - (start or 0)
        return found


def _all_patterns():
    from evalcore import parsers

    return parsers._SCORE_PATTERNS + parsers._LABEL_LINE + parsers._LAST_RESORT + parsers._STAR_PATTERNS


@pytest.mark.parametrize("unit", ["Score: 3 ", "if Score: 3 ", "3 out of 5 and ", "1. rated it 4 because "])
def test_collecting_candidates_copies_nothing_per_candidate(unit):
    """The reply of the review ("Score: 3 " over and over, no line break): each candidate used to copy its line
    (quadratic in the reply) and its sentence. Counted, not timed: what Python-level string operations copy or scan
    out of the reply stays within the reply's own length, at 4,000 and at 16,000 candidates; the candidates are the
    reference's."""
    from evalcore.parsers import _collect

    for n in (4_000, 16_000):
        text = _CountingStr(unit * n)
        _CountingStr.copied = 0
        got = _collect(text, _all_patterns())
        assert len(got) >= n
        assert _CountingStr.copied <= len(text), f"{_CountingStr.copied:,} characters copied for a {len(text):,} reply"
    short = unit * 200  # the reference is quadratic: compared on a short reply
    assert _collect(short, _all_patterns()) == _collect_051be06(short, _all_patterns())


@pytest.mark.parametrize("n_spaces,expected", [(290, False), (291, True), (292, False)])
def test_a_sentence_cut_by_the_300_character_window_reads_as_before(n_spaces, expected):
    """The sentence before a number reaches back 300 characters; cut inside a word ("Zif"), the cut piece starts a
    word of its own ("if": counterfactual) as it did when the sentence was a string of its own."""
    from evalcore.parsers import _collect

    text = "Zif" + " " * n_spaces + "Score: 3"
    (cand,) = _collect(text, _all_patterns()[:2])
    assert cand.counterfactual is expected
    assert _collect(text, _all_patterns()) == _collect_051be06(text, _all_patterns())


_PIECES = ["if", "If", "xif", "not a", "n't a", "isn't be", "from being", "rom being", "would be", "rather than",
           "short of", "to get", " ", "  ", "\t", "\n", ".", ". ", "!", "?", "Score: 3", "score 4", "rating of 2",
           "1. ", "- ", "* ", "3", "five", "3.5", "out of 5", "/5", "/10", "(4)", "a", "word", "é", "'", "\u00a0",
           "I would rate it", "a perfect", "Coherence:", "stars", "scoring"]


@given(st.lists(st.sampled_from(_PIECES), max_size=160), st.lists(st.sampled_from(_PIECES[:13]), max_size=90))
@settings(max_examples=300, deadline=None)
def test_candidates_are_those_of_the_quadratic_reference(pieces, long_sentence):
    """Any reply, long sentences and window cuts included: the same candidates, flags and order as before."""
    from evalcore.parsers import _collect

    text = "".join(long_sentence) * 3 + "".join(pieces)
    assert _collect(text, _all_patterns()) == _collect_051be06(text, _all_patterns())


@given(st.lists(st.sampled_from(_PIECES + ["score", "scor", "one", "four", "six", "e.", "5 stars", "4 star"]),
                max_size=120))
@settings(max_examples=300, deadline=None)
def test_paper_rules_read_as_the_published_regexes(pieces):
    """Shen et al.'s RTS rules 3 and 4 and the StarEval reader, now linear, give what their regexes give."""
    import re

    from evalcore.parsers import _RTS_DIGIT, _RTS_N, _RTS_WORD, _STARS_PAPER, _after_score_in_sentence

    low = "".join(pieces).lower()
    word = r"(one|two|three|four|five)"
    for rx, first, whole in ((r"scor(?:e|ing)[^.]*?([1-5](?:\.\d)?)", _RTS_DIGIT, _RTS_N),
                             (r"scor(?:e|ing)[^.]*?\b" + word + r"\b", _RTS_WORD, _RTS_WORD)):
        m = re.search(rx, low)
        assert _after_score_in_sentence(low, first, whole) == (m.group(1) if m else None)
    m, mine = re.search(r"(\S+)\s+stars?\b", low), _STARS_PAPER.search(low)
    assert (m.group(1) if m else None) == (mine.group(1) if mine else None)


def test_paper_rules_read_each_sentence_once():
    """Rules 3 and 4 look in each sentence once, however many times it says "score": counted by the pattern they
    search with (a search per sentence, each over that sentence alone)."""
    from evalcore import parsers

    class Counting:
        def __init__(self):
            self.calls, self.scanned = 0, 0

        def search(self, text, pos, endpos):
            self.calls += 1
            self.scanned += endpos - pos
            return parsers._RTS_DIGIT.search(text, pos, endpos)

    low = ("score " * 20_000 + ". ") * 3
    probe = Counting()
    assert parsers._after_score_in_sentence(low, probe, parsers._RTS_N) is None
    assert probe.calls == 3 and probe.scanned <= len(low)


@pytest.mark.parametrize("name", ["form", "rts", "stars", "explicit", "mcq", "pairwise"])
@pytest.mark.parametrize("mode", ["robust", "paper"])
def test_a_reply_over_its_methods_bound_is_a_counted_failure_that_says_so(name, mode):
    """A reply longer than its parser reads (MAX_REPLY_CHARS) is a failure naming its length and the bound, in either
    mode (the paper modes' 0, -1 or tie are for replies read): never read in part, never a value."""
    from evalcore import parsers

    limit = parsers.MAX_REPLY_CHARS[name]
    fn = {"form": parsers.parse_form_score, "rts": parsers.parse_rts, "stars": parsers.parse_stars,
          "explicit": parsers.parse_explicit, "mcq": parsers.parse_mcq, "pairwise": parsers.parse_pairwise}[name]
    answer = {"mcq": "Answer: B", "pairwise": "Summary 1 is better."}.get(name, "4 stars. Score: 4")
    at_limit = answer + " " * (limit - len(answer))
    assert fn(at_limit, mode=mode).ok
    over = fn(at_limit + " ", mode=mode)
    assert not over.ok
    assert over.reason == (f"reply too long to read: {limit + 1:,} characters, over the {limit:,} a {name} reply may "
                           "have (a judge's answer is far shorter: a runaway reply?)")
    if name != "pairwise":
        assert parsers.parse_reply(name, at_limit + " ", mode=mode).reason == over.reason


def test_the_reviews_reply_reads_the_same_under_the_bound():
    """'Score: 3 ' repeated up to the bound (no line break) reads 3, as the quadratic parser read it, and a
    megabyte of it is refused by its length alone."""
    from evalcore import parsers

    text = "Score: 3 " * (parsers.MAX_REPLY_CHARS["rts"] // 9)
    assert parsers.parse_rts(text) == parsers.Parsed(3.0, True)
    assert parsers.parse_rts(text, mode="paper").value == 3.0
    huge = parsers.parse_rts("Score: 3 " * 120_000)
    assert not huge.ok and huge.reason.startswith("reply too long to read: 1,080,000 characters")


def test_a_runaway_reply_through_the_engine_is_a_failure_saying_so(tmp_path, monkeypatch):
    """A judge answering "Score: 3 " over and over (the review's reply), past the bound, to every item: each item
    fails with the length in its reason, and the run finishes (the parse, between the engine's cancel checks, reads
    nothing over the bound: it cannot hold the loop the way a quadratic read of a megabyte did)."""
    from evalcore.testing.loopback import Reply, serve

    monkeypatch.setenv(KEY_ENV, SECRET)
    with serve(scorer=lambda prompt, **_: Reply([("Score: 3 " * 6_000, [])])) as srv:
        run = judge_calls.score_dataset(dataset(3), method="rts", criteria_by_dim=CRITERIA, endpoint=endpoint(srv),
                                        store=Store(tmp_path / "s.db"), capabilities=CAPS)
    j = run.judgments
    assert (j["status"] == "failed").all() and len(j) == 3
    assert j["reason"].str.startswith("reply too long to read: 54,000 characters, over the 50,000").all()


# ------------------------------------------------------------------- CSV: every locale's separator quoted

SEPARATOR_CELLS = ["ok;=1+2", "ok\t=1+2", "ok|=1+2", "ok,=1+2", "a;b", "x|@SUM(1,2)"]


def _cells_as_a_spreadsheet_reads(text: str, sep: str) -> list[str]:
    import csv
    import io

    return [f for row in csv.reader(io.StringIO(text, newline=""), delimiter=sep) for f in row]


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_no_locale_splits_a_cell_into_a_formula(sep):
    """``ok;=1+2`` was written unquoted: a spreadsheet splitting on ';' (German or French Excel) made '=1+2' a cell
    of its own, a formula. Every field holding a separator of a common locale is quoted, in the frames' CSV and
    the dict rows' alike; read with each locale's separator, no cell starts a formula."""
    from evalcore.csvsafe import rows_to_csv, to_csv_safe

    frame = pd.DataFrame({"system": SEPARATOR_CELLS, "score": [4.5] * len(SEPARATOR_CELLS)})
    for text in (to_csv_safe(frame),
                 rows_to_csv(["system", "score"], frame.to_dict("records"))):
        cells = _cells_as_a_spreadsheet_reads(text, sep)
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")], (sep, cells)
        assert all(f'"{c}"' in text for c in SEPARATOR_CELLS)


def test_the_csv_reads_back_as_written():
    """Quoting more changes no value: the frame's CSV reads back with pandas cell for cell (formula-like cells with
    their leading quote), and what needs no quotes is written as before."""
    import io

    from evalcore.csvsafe import rows_to_csv, to_csv_safe

    frame = pd.DataFrame({"system": [*SEPARATOR_CELLS, "plain", "=1+1", 'say "hi"', "", "two\nlines"],
                          "score": [1.5, -2.0, 3.0, 4.0, 5.0, float("nan"), 7.0, 8.0, 9.0, 10.0, 11.0]})
    back = pd.read_csv(io.StringIO(to_csv_safe(frame)), keep_default_na=False)
    assert back["system"].tolist() == [*SEPARATOR_CELLS, "plain", "'=1+1", 'say "hi"', "", "two\nlines"]
    assert back["score"].astype(str).tolist()[:5] == ["1.5", "-2.0", "3.0", "4.0", "5.0"]
    assert to_csv_safe(pd.DataFrame({"a": ["x"], "b": [1]})) == "a,b\r\nx,1\r\n"
    assert to_csv_safe(pd.DataFrame({"a": [""]})) == 'a\r\n""\r\n'
    assert rows_to_csv(["a", "b"], [{"a": "x;y", "b": None}, {"a": "z"}]) == 'a,b\r\n"x;y",\r\nz,\r\n'


# --------------------------------------------------------------------- runs --json counts a run's judgments

def test_runs_json_counts_each_runs_judgments_and_dimensions(tmp_path, own_store, capsys):
    """``runs --json`` said "judgments": 0 and "dimensions": [] for every run (the listing carries no judgments).
    A run imported here: the counts it was written with; a published run: one judgment per released reply."""
    from evalcore import datasets
    from evalcore.cli import main
    from evalcore.model import Run

    items = datasets.load_dataset("summeval").items["item_id"].head(3).tolist()
    j = pd.DataFrame({"item_id": items * 2, "dimension": ["coherence"] * 3 + ["fluency"] * 3,
                      "raw": ["4", "x", "3", "2", "5", "1"], "value": [4.0, None, 3.0, 2.0, 5.0, 1.0],
                      "status": ["ok", "failed", "ok", "ok", "ok", "ok"], "reason": ["", "no score found", "", "", "", ""],
                      "estimator": ""})
    Store(own_store).save_imported_run(Run(run_id="summeval/scores-mine", dataset_id="summeval", method="imported",
                                           model="mine", label="mine", judgments=j))
    capsys.readouterr()
    assert main(["runs", "--dataset", "summeval", "--json"]) == 0
    rows = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    mine = rows["summeval/scores-mine"]
    assert (mine["judgments"], mine["failed"], mine["dimensions"]) == (6, 1, ["coherence", "fluency"])
    entry = next(e for e in datasets._run_entries() if e["run_id"] == "summeval/shen-gpt-4-0314-rts")
    published = rows[entry["run_id"]]
    assert published["judgments"] == len(datasets._raw_replies(entry)) > 0
    assert published["dimensions"] == sorted(datasets._raw_replies(entry)["dimension"].unique().tolist())
    assert all(r["judgments"] > 0 and r["dimensions"] for r in rows.values())


# ------------------------------------------------------------- proxy-header sign-in needs the proxy's secret

PROXY_SECRET = "c2VjcmV0LXByb3h5LTQyNDI0MjQy"


@pytest.mark.parametrize("headers,expected", [
    ({"X-Forwarded-User": "alice", "X-Evalcore-Proxy-Secret": PROXY_SECRET}, "alice"),
    ({"x-forwarded-user": "alice", "x-evalcore-proxy-secret": f" {PROXY_SECRET} "}, "alice"),
    ({"Accept": "*/*"}, None),  # a visitor the proxy let through without a name: not signed in, not refused
    ({"X-Evalcore-Proxy-Secret": PROXY_SECRET}, None),
])
def test_the_proxy_header_is_believed_with_the_proxys_secret(headers, expected):
    from evalcore.identity import User, user_from_headers

    got = user_from_headers(headers, "X-Forwarded-User", PROXY_SECRET)
    assert got == (User(expected, "header") if expected else None)


@pytest.mark.parametrize("headers", [
    {"X-Forwarded-User": "alice"},  # a local process straight to the app's port
    {"X-Forwarded-User": "alice", "X-Evalcore-Proxy-Secret": "guess"},
    {"X-Forwarded-User": "alice", "X-Evalcore-Proxy-Secret": PROXY_SECRET[:-1]},
    [("X-Forwarded-User", "alice"), ("X-Evalcore-Proxy-Secret", PROXY_SECRET),
     ("X-Evalcore-Proxy-Secret", "guess")],  # sent twice: which one the proxy added cannot be told
])
def test_a_user_header_without_the_proxys_secret_is_refused(headers):
    from evalcore.identity import UntrustedRequest, User, user_from_headers

    with pytest.raises(UntrustedRequest, match="did not come through the sign-in proxy") as e:
        user_from_headers(headers, "X-Forwarded-User", PROXY_SECRET)
    assert PROXY_SECRET[:8] not in str(e.value) and "guess" not in str(e.value)
    assert user_from_headers(headers, "X-Forwarded-User") == User("alice", "header")  # no secret set: as before


@pytest.mark.parametrize("env,expected", [({}, None), ({"EVALCORE_PROXY_SECRET": "  "}, None),
                                          ({"EVALCORE_PROXY_SECRET": f" {PROXY_SECRET}\n"}, PROXY_SECRET)])
def test_the_proxy_secret_setting(env, expected):
    from evalcore.identity import proxy_secret

    assert proxy_secret(env) == expected


def test_a_short_proxy_secret_is_refused_without_quoting_it():
    from evalcore.identity import IdentityError, proxy_secret

    with pytest.raises(IdentityError, match="at least 16") as e:
        proxy_secret({"EVALCORE_PROXY_SECRET": "hunter2"})
    assert "hunter2" not in str(e.value)


def test_the_pages_sign_in_a_local_process_only_with_the_proxys_secret(first_start, monkeypatch):
    """The Data page with EVALCORE_PROXY_SECRET set: a request naming alice without the secret (any process on the
    lab host, straight to the app's port) is refused and not signed in; with it, alice is signed in."""
    from streamlit.testing.v1 import AppTest

    from pages import _identity
    from tests.test_app_pages import APP

    monkeypatch.setenv("EVALCORE_USER_HEADER", "X-Forwarded-User")
    monkeypatch.setenv("EVALCORE_PROXY_SECRET", PROXY_SECRET)
    sent = {"X-Forwarded-User": "alice"}
    monkeypatch.setattr(_identity, "_request_headers", lambda: dict(sent))

    def open_data():
        at = AppTest.from_file(APP, default_timeout=90)
        at.switch_page("pages/data.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return at, "\n".join(str(t.value) for t in at.sidebar.text)

    at, sidebar = open_data()
    assert any("did not come through the sign-in proxy" in e.value for e in at.error)
    assert "Signed in as" not in sidebar
    assert PROXY_SECRET not in "\n".join(str(t.value) for t in at.text)
    sent["X-Evalcore-Proxy-Secret"] = PROXY_SECRET
    at, sidebar = open_data()
    assert not at.error and "Signed in as alice" in sidebar
