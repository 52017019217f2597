"""Development disagreements and candidates (issue 22), on small hand-made data: the scale mapping, the ranking and
the groupings by hand, the confusion cells against scikit-learn, proposals read back (or refused), few-shot examples
chosen as asked, and nothing from the test part accepted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import confusion_matrix

from evalcore.align import candidates as cand
from evalcore.align.disagreement import disagreements, to_human_scale
from evalcore.align.split import Split
from evalcore.model import Dataset, Dimension, Run
from evalcore.store import Store
from evalcore.types import Criteria


def dataset(kind: str = "interval") -> Dataset:
    """4 documents x 2 systems; human scores 1..5 (binary: 0/1)."""
    rows, scores = [], []
    human = [1, 2, 3, 4, 5, 4, 3, 2] if kind == "interval" else [0, 1, 1, 0, 1, 1, 0, 0]
    for n, (d, s) in enumerate((d, s) for d in range(4) for s in ("A", "B")):
        item = f"d{d}{s}"
        rows.append({"item_id": item, "doc_id": f"d{d}", "system_id": s, "output": f"summary {item} " + "x" * n})
        scores.append({"item_id": item, "dimension": "q", "score": float(human[n])})
    dim = Dimension("q", 0, 1, kind="binary") if kind == "binary" else Dimension("q", 1, 5)
    docs = pd.DataFrame({"doc_id": [f"d{d}" for d in range(4)], "source": [f"article {d}" for d in range(4)],
                         "references": None, "context": ""})
    return Dataset(id="toy", name="toy", task="summarization", dimensions=[dim], documents=docs,
                   items=pd.DataFrame(rows), human_scores=pd.DataFrame(scores))


SPLIT = Split(dataset_id="toy", dimension="q", seed=0, test_share=0.25, strata="system",
              dev_docs=("d0", "d1", "d2"), test_docs=("d3",))


def run_of(values: dict[str, float | None], scale=(1, 3)) -> Run:
    j = pd.DataFrame([{"item_id": i, "dimension": "q", "raw": f"reason for {i}", "value": v,
                       "status": "ok" if v is not None else "failed", "reason": "", "estimator": "greedy"}
                      for i, v in values.items()])
    return Run(run_id="r", dataset_id="toy", method="rts", model="m", judgments=j,
               config={"criteria": {"q": {"scale_min": scale[0], "scale_max": scale[1]}}})


def test_disagreements_rank_items_on_the_human_scale_and_never_show_the_test_part():
    ds = dataset()
    # judge on 1-3: 1 -> 1, 2 -> 3, 3 -> 5 on the human scale; the test document's items are judged too
    values = {"d0A": 3, "d0B": 2, "d1A": 2, "d1B": 1, "d2A": None, "d2B": 2, "d3A": 1, "d3B": 3}
    dis = disagreements(ds, run_of(values), "q", SPLIT)
    assert dis.judge_scale == (1, 3) and dis.human_scale == (1, 5)
    assert set(dis.items["doc_id"]) <= {"d0", "d1", "d2"} and dis.failed == 1
    # by hand: d0A |5-1|=4, d0B |3-2|=1, d1A |3-3|=0, d1B |1-4|=3, d2B |3-2|=1
    assert list(dis.items["item_id"]) == ["d0A", "d1B", "d0B", "d2B", "d1A"]
    assert list(dis.items["gap"]) == [4, 3, 1, 1, 0]
    assert dis.items.loc[0, "raw"] == "reason for d0A" and dis.items.loc[0, "output"].startswith("summary d0A")
    by_sys = dis.by_system.set_index("system_id")
    assert by_sys.loc["A", "n"] == 2 and by_sys.loc["A", "mean_gap"] == pytest.approx((4 + 0) / 2)
    assert by_sys.loc["B", "mean_gap"] == pytest.approx((1 + 3 + 1) / 3)
    assert dis.by_human.set_index("human_score").loc[4.0, "n"] == 2  # d1B and d2B (d2A failed: not counted)
    assert dis.confusion is None
    assert list(to_human_scale([1, 2, 3], (1, 3), (1, 5))) == [1, 3, 5]


def test_confusion_cells_of_a_categorical_dimension_are_scikit_learns():
    ds = dataset("binary")
    values = {"d0A": 1, "d0B": 1, "d1A": 0, "d1B": 0, "d2A": 1, "d2B": 1}
    dis = disagreements(ds, run_of(values, scale=(0, 1)), "q", SPLIT)
    human = ds.human_table("q").set_index("item_id")["human"]
    ids = list(values)
    expected = confusion_matrix([human[i] for i in ids], [values[i] for i in ids], labels=[0, 1])
    got = dis.confusion.pivot(index="human_label", columns="judge_label", values="count")
    assert np.array_equal(got.loc[["0", "1"], ["0", "1"]].to_numpy(), expected)
    cell = dis.confusion[(dis.confusion["human_label"] == "0") & (dis.confusion["judge_label"] == "1")]
    assert list(cell["item_ids"].iloc[0]) == ["d0A"]


BASE = Criteria(dimension="q", task_introduction="Rate it.", definition="How good it is.", scale_min=1, scale_max=3,
                steps="1. Read.")


def test_a_proposal_is_read_from_its_tags_or_refused():
    new = cand.parse_proposal(BASE, "Sure.\n<criteria>\nHow well it reads.\n</criteria>\n<steps>1. Read twice.</steps>")
    assert new.definition == "How well it reads." and new.steps == "1. Read twice."
    assert cand.parse_proposal(BASE, "<CRITERIA>Only this.</CRITERIA>").steps == BASE.steps
    with pytest.raises(ValueError, match="no <criteria>"):
        cand.parse_proposal(BASE, "I think the definition is fine as it is.")


def test_an_edit_is_a_new_version_with_its_diff():
    c = cand.edit_candidate(BASE, definition="How well it holds together.")
    assert c.source == "edit" and c.version != BASE.version_hash()
    assert "-How good it is." in c.diff and "+How well it holds together." in c.diff
    with pytest.raises(ValueError):
        cand.Candidate(criteria=BASE, source="magic")


def test_the_meta_prompt_shows_development_items_only():
    ds = dataset()
    values = {i: 2 for i in ds.items["item_id"]}
    dis = disagreements(ds, run_of(values), "q", SPLIT)
    prompt, ids = cand.build_meta_prompt(BASE, dis, SPLIT, dataset=ds, n_examples=3)
    assert len(ids) == 3 and all(i[:2] in ("d0", "d1", "d2") for i in ids)
    assert "summary d3" not in prompt and "How good it is." in prompt and cand.META_PROMPT[:40] in prompt
    assert len({i[:2] for i in ids}) == 3  # one per document first
    leaky = Split(dataset_id="toy", dimension="q", seed=0, test_share=0.25, strata="system",
                  dev_docs=("d0", "d1"), test_docs=("d2", "d3"))
    with pytest.raises(ValueError, match="test part"):
        cand.build_meta_prompt(BASE, dis, leaky, dataset=ds)  # a table made under another split is refused
    custom, _ = cand.build_meta_prompt(BASE, dis, SPLIT, dataset=ds, template="Fix {dimension}:\n{examples}")
    assert custom.startswith("Fix q:\nExample 1")


def test_few_shot_examples_come_from_development_as_asked():
    ds = dataset()
    dis = disagreements(ds, run_of({i: 1 for i in ds.items["item_id"]}), "q", SPLIT)
    pool = cand.example_pool(ds, "q", SPLIT, dis)
    assert set(pool["doc_id"]) == {"d0", "d1", "d2"}
    cover = cand.choose_examples(pool, k=2, how="coverage", human_scale=(1, 5))
    assert list(cover["human"]) == [1.0, 5.0]  # the ends of the scale
    worst = cand.choose_examples(pool, k=2, how="disagreement")
    assert list(worst["item_id"]) == ["d2A", "d1B"]  # human 5 and 4 against a judge at 1
    r1 = cand.choose_examples(pool, k=3, how="random", seed=1)
    assert r1.equals(cand.choose_examples(pool, k=3, how="random", seed=1))
    assert any(not cand.choose_examples(pool, k=3, how="random", seed=s).equals(r1) for s in range(2, 8))
    c = cand.fewshot_candidate(BASE, pool, SPLIT, k=2, how="coverage", human_scale=(1, 5))
    assert c.source == "fewshot" and set(c.example_items) == set(cover["item_id"])
    text = c.criteria.definition
    assert text.startswith(BASE.definition) and cand.FEWSHOT_HEADING in text
    assert "Human score: 1.0" in text and "Human score: 3.0" in text  # 1 and 5 on the judge's 1-3 scale
    with pytest.raises(ValueError, match="test part"):
        cand.fewshot_candidate(BASE, cand.example_pool(ds, "q", SPLIT).assign(doc_id="d3"), SPLIT)


def test_saved_candidates_do_not_become_the_next_baseline(tmp_path):
    ds = dataset()
    store = Store(tmp_path / "s.db")
    first = cand.baseline_criteria(ds, "q", "geval", store)
    c = cand.edit_candidate(first, definition="Something else.")
    cand.save_candidate(store, ds.id, c)
    assert store.load_criteria(ds.id, "q") == c.criteria  # the newest saved version...
    assert cand.baseline_criteria(ds, "q", "geval", store) == first  # ...is not where the loop starts again
    mine = Criteria("q", "Rate.", "My own words.", 1, 5)
    store.save_criteria(ds.id, mine, note="edited on the Criteria page")
    assert cand.baseline_criteria(ds, "q", "geval", store) == mine
    assert cand.baseline_criteria(ds, "q", "geval", store, version=c.version[:8]) == c.criteria


def test_a_proposal_goes_through_the_judge_clients_trust_rules(monkeypatch, tmp_path):
    """The server's key never goes to an endpoint its operator did not configure, proposals included."""
    from evalcore.judge.client import Endpoint
    from evalcore.judge.trust import UntrustedEndpoint

    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-secret")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("EVALCORE_ALLOWED_ENDPOINTS", raising=False)
    visitor = Endpoint(base_url="http://127.0.0.1:9/v1", model="m", provider="openai")
    with pytest.raises(UntrustedEndpoint):
        cand.propose(BASE, "<current_criteria> ...", endpoint=visitor, store=Store(tmp_path / "s.db"))
