"""The Improve loop's final check on a test part too small for it: no check is offered that cannot run (the page
says why instead), and a check that could not be computed is no look (nothing recorded in ``final_checks``).

Small data: SummEval's first 2-4 documents (16 outputs each) against the loopback judge; a blocked check is refused
before anything is sent, so those tests need no judge at all.
"""

from __future__ import annotations

import pytest

from evalcore import datasets
from evalcore.align import AlignSettings, align, make_split, save_split
from evalcore.align import loop
from evalcore.align.candidates import baseline_candidate, baseline_criteria, edit_candidate
from evalcore.judge.client import Endpoint
from evalcore.judge.spec import EngineOptions
from evalcore.sampling import documents_subset
from evalcore.store import Store
from evalcore.views import improve as views
from evalcore.views.blocks import Note

DIM = "coherence"
# an address nothing listens on: a test that reached the network would fail on it, not pass silently
NOWHERE = "http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def summeval():
    return datasets.load_dataset("summeval")


def first_docs(ds, k: int):
    return documents_subset(ds, list(dict.fromkeys(ds.items["doc_id"]))[:k])


def options(url: str) -> EngineOptions:
    return EngineOptions(Endpoint(base_url=url, model="loopback-judge", provider="vllm", api_key_env="VLLM_API_KEY"),
                         concurrency=8, max_retries=0, timeout_s=2)


def dev_scored(ds, store):
    base = baseline_criteria(ds, DIM, "geval", store)
    agreement = loop.Agreement(0.1, -0.2, 0.4, 16)
    baseline = loop.Scored(baseline_candidate(base), "dev", "base-dev", agreement)
    chosen = loop.Scored(edit_candidate(base, definition=base.definition + " Judge the order of events."), "dev",
                         "chosen-dev", loop.Agreement(0.3, 0.0, 0.6, 16))
    return baseline, chosen


def test_a_one_document_test_part_is_refused_before_anything_is_scored_and_is_no_look(summeval, tmp_path):
    ds = first_docs(summeval, 2)
    split = make_split(ds, DIM, test_share=0.5, seed=0)
    assert len(split.test_docs) == 1
    store = Store(tmp_path / "s.db")
    save_split(store, split)
    why = loop.final_check_blocker(split)
    assert why is not None and "1 document." in why and "1 documents" not in why
    baseline, chosen = dev_scored(ds, store)
    with pytest.raises(loop.FinalCheckUnavailable, match="holds 1 document"):
        loop.final_check(ds, split, DIM, "geval", baseline, chosen, options(NOWHERE), store=store)
    assert store.final_checks(ds.id, split.split_id) == []  # not a look
    assert not store.run_exists(loop.run_id_for(ds.id, split, "test", baseline.candidate, "geval",
                                                options(NOWHERE).first_endpoint, None))  # nothing scored


def test_the_page_offers_no_check_on_such_a_split_and_says_why(summeval, tmp_path):
    ds = first_docs(summeval, 2)
    split = make_split(ds, DIM, test_share=0.5, seed=0)
    store = Store(tmp_path / "s.db")
    baseline, chosen = dev_scored(ds, store)
    offer = views.final_offer(chosen.candidate, 0, None, loop.final_check_blocker(split))
    assert offer.label is None  # no button
    assert offer.caption.kind == "warning" and "No final check on this split" in offer.caption.text
    # a split that can be checked still gets its button
    ok = make_split(first_docs(summeval, 4), DIM, test_share=0.5, seed=0)
    assert loop.final_check_blocker(ok) is None
    assert views.final_offer(chosen.candidate, 0, None, loop.final_check_blocker(ok)).label == \
        "Run the final check on test"
    # the workspace gives the page a note, not a raw exception, and nothing is recorded
    ws = views.Workspace(ds, DIM, split, "geval", options(NOWHERE).first_endpoint, options(NOWHERE), store,
                         loop.Settings(n_resamples=20))
    got = ws.final_check(baseline, chosen)
    assert isinstance(got, Note) and got.kind == "error"
    assert ws.final_blocks(got, baseline, chosen, 0.2) == [got]
    assert ws.checks(None) == []


def test_a_check_whose_comparison_fails_is_not_recorded(summeval, tmp_path, monkeypatch):
    """The test runs are scored (two documents held out), then the comparison fails: the error says so and no
    final check is recorded, so the button does not move on to "check 2"."""
    from evalcore.testing.loopback import serve
    from evalcore.testing.loopback_align import PromptQualityJudge

    ds = first_docs(summeval, 4)
    split = make_split(ds, DIM, test_share=0.5, seed=0)
    assert len(split.test_docs) == 2
    store = Store(tmp_path / "s.db")
    save_split(store, split)
    baseline, chosen = dev_scored(ds, store)

    def fails(*_a, **_k):
        raise ValueError("each sample in `data` must contain two or more observations along `axis`.")

    monkeypatch.setattr(loop, "compare_on_test", fails)
    with serve(scorer=PromptQualityJudge.for_dataset(ds, DIM)) as srv:
        with pytest.raises(loop.FinalCheckUnavailable, match="not counted as a look"):
            loop.final_check(ds, split, DIM, "geval", baseline, chosen, options(srv.base_url), store=store,
                             settings=loop.Settings(n_resamples=20))
    assert store.final_checks(ds.id, split.split_id) == []
    assert views.final_offer(chosen.candidate, len(store.final_checks(ds.id, split.split_id)), None).label == \
        "Run the final check on test"


def test_align_refuses_a_split_it_could_not_check_before_sending_anything(summeval, tmp_path):
    ds = first_docs(summeval, 2)
    with pytest.raises(loop.FinalCheckUnavailable, match="holds 1 document"):
        align(ds, DIM, "geval", options(NOWHERE), AlignSettings(test_share=0.5, n_candidates=1),
              store=Store(tmp_path / "s.db"))


def test_choosing_one_document_for_the_loop_is_said_of_the_choice(summeval, tmp_path):
    with pytest.raises(ValueError) as e:
        views.make_loop_split(Store(tmp_path / "s.db"), summeval, DIM, docs=1, seed=0, test_share=0.3)
    assert "1 of summeval's 100 documents" in str(e.value)
    assert "has 1 document(s)" not in str(e.value)


def test_align_sample_docs_one_is_said_of_the_choice(capsys):
    from evalcore.cli import main

    assert main(["align", "--dataset", "summeval", "--dimension", DIM, "--method", "geval", "--provider", "vllm",
                 "--base-url", NOWHERE, "--model", "m", "--sample-docs", "1"]) == 2
    err = capsys.readouterr().err
    assert "--sample-docs 1: a development / test split needs two or more documents" in err
    assert "has 1 document" not in err
