"""evalcore.views: the frames the app's pages show, checked on small hand-made data with values worked out by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from evalcore.views import alignment as alignment_views
from evalcore.views import bias as bias_views
from evalcore.views import common as common_views
from evalcore.views import compare as compare_views
from evalcore.views import criteria as criteria_views
from evalcore.views import score as score_views
from evalcore.model import Dataset, Dimension, Run


def judgments(values: dict[str, float | None], dimension: str = "overall") -> pd.DataFrame:
    rows = []
    for item, v in values.items():
        ok = v is not None
        rows.append({"item_id": item, "dimension": dimension, "raw": f"Score: {v}" if ok else "no idea",
                     "value": float(v) if ok else math.nan, "status": "ok" if ok else "failed",
                     "reason": "" if ok else "no score found", "estimator": "greedy"})
    return pd.DataFrame(rows)


@pytest.fixture
def pairs_dataset() -> Dataset:
    """Three articles, each with a human-written (h) and an LLM-written (l) summary and annotators' votes."""
    items = pd.DataFrame({
        "item_id": ["d1/h", "d1/l", "d2/h", "d2/l", "d3/h", "d3/l"],
        "doc_id": ["d1", "d1", "d2", "d2", "d3", "d3"],
        "system_id": ["writer", "llm", "writer", "llm", "writer", "llm"],
        "output": ["a", "b", "c", "d", "e", "f"],
        "written_by": ["human", "llm"] * 3,
    })
    votes = {"d1": ["a", "a", "b"],  # +1 +1 -1 -> human (a) preferred
             "d2": ["a", "b"],  # cancel -> equally good
             "d3": ["tie", "tie", "b"]}  # -> LLM (b) preferred
    prefs = [{"pair_id": d, "doc_id": d, "item_a": f"{d}/h", "item_b": f"{d}/l", "dimension": "overall",
              "annotator": f"e{i}", "preferred": p} for d, vs in votes.items() for i, p in enumerate(vs)]
    human = pd.DataFrame({"item_id": items["item_id"], "dimension": "overall", "score": [.6, .4, .5, .5, .3, .7]})
    docs = pd.DataFrame({"doc_id": ["d1", "d2", "d3"], "source": ["s1", "s2", "s3"], "references": [[], [], []],
                         "context": ["", "", ""]})
    return Dataset(id="toy", name="toy", task="summary pairs", dimensions=[Dimension("overall", 0, 1)],
                   documents=docs, items=items, human_scores=human, preferences=pd.DataFrame(prefs))


def test_majority_preference_per_pair(pairs_dataset):
    p = bias_views.human_preference_by_pair(pairs_dataset, "overall").set_index("pair_id")
    assert p.loc["d1", "preferred"] == "a" and p.loc["d1", "votes"] == 1
    assert p.loc["d2", "preferred"] == "tie"
    assert p.loc["d3", "preferred"] == "b"


def test_writer_bias_groups_by_human_preference(pairs_dataset):
    run = Run(run_id="toy/r", dataset_id="toy", method="rts", model="m",
              judgments=judgments({"d1/h": 4, "d1/l": 5, "d2/h": 2, "d2/l": 3, "d3/h": 1, "d3/l": None}))
    t = bias_views.writer_bias_table(pairs_dataset, run, "overall").set_index("group")
    # d3's LLM summary failed to parse: the pair is left out rather than compared on one side only
    assert list(t.index) == ["human preferred", "equally good"]
    assert t.loc["human preferred", "human_written"] == 4 and t.loc["human preferred", "llm_written"] == 5
    assert t.loc["equally good", "difference"] == -1
    assert t["pairs"].tolist() == [1, 1]


def test_disagreements_rank_items_by_percentile_gap(pairs_dataset):
    a = Run(run_id="a", dataset_id="toy", method="rts", model="m",
            judgments=judgments({"d1/h": 1, "d1/l": 2, "d2/h": 3, "d2/l": 4}))
    b = Run(run_id="b", dataset_id="toy", method="explicit", model="m",
            judgments=judgments({"d1/h": 90, "d1/l": 20, "d2/h": 30, "d2/l": 40}))
    d = compare_views.disagreements(pairs_dataset, a, b, "overall", top=2)
    # ranks (pct) under a: .25 .5 .75 1; under b: 1 .25 .5 .75 -> gaps .75 .25 .25 .25
    assert d["item_id"].tolist()[0] == "d1/h"
    assert d["rank_gap"].tolist()[0] == pytest.approx(0.75)
    assert d["rank_gap"].tolist()[1] == pytest.approx(0.25)
    assert d.loc[0, "human"] == pytest.approx(0.6)


def test_reliability_pairs_match_prompt_variants():
    """Paired by the prompt variant each run records, never by its id: ids that say nothing pair the same way."""
    def r(rid, method, model, variant=None):
        return Run(run_id=rid, dataset_id="s", method=method, model=model,
                   config={"prompt_variant": variant} if variant else {})

    runs = [r("s/x-rts", "rts", "gpt", "rts"), r("s/x-mcq", "mcq", "gpt", "mcq"),
            r("s/x-altrts", "rts", "gpt", "altrts"), r("s/x-altmcq", "mcq", "gpt", "altmcq"), r("s/y-rts", "rts", "llama")]
    pairs = {(a.run_id, b.run_id) for a, b in alignment_views.reliability_pairs(runs)}
    assert pairs == {("s/x-rts", "s/x-mcq"), ("s/x-altrts", "s/x-altmcq")}
    plain = [r("s/1", "rts", "gpt", "altrts"), r("s/2", "mcq", "gpt", "mcq"), r("s/3", "mcq", "gpt", "altmcq"),
             r("s/4", "rts", "gpt", "rts")]
    assert {(a.run_id, b.run_id) for a, b in alignment_views.reliability_pairs(plain)} == {("s/1", "s/3"),
                                                                                          ("s/4", "s/2")}
    # no variant recorded: an RTS run pairs with each MCQ run of its model
    local = [r("s/a", "rts", "m"), r("s/b", "mcq", "m"), r("s/c", "mcq", "other")]
    assert [(a.run_id, b.run_id) for a, b in alignment_views.reliability_pairs(local)] == [("s/a", "s/b")]


def test_default_runs_and_failures():
    assert common_views.default_run_ids("summeval", ["summeval/shen-gpt-3.5-turbo-0301-rts", "x",
                                              "summeval/shen-gpt-4-0314-rts"]) == list(common_views.DEFAULT_RUNS)
    assert common_views.default_run_ids("other", ["o/1", "o/2"]) == ["o/1"]
    run = Run(run_id="a", dataset_id="toy", method="rts", model="m", judgments=judgments({"x": 3, "y": None}))
    f = score_views.failures_table(run)
    assert f["item_id"].tolist() == ["y"] and f["raw"].tolist() == ["no idea"]


def test_rendered_prompt_holds_the_item_text():
    from evalcore import runs as runs_mod
    from evalcore.methods import presets

    ds = runs_mod.get_dataset("summeval")
    item = ds.items.iloc[0]
    criteria = presets.PRESETS["summeval"]["coherence"]
    prompt = criteria_views.rendered_prompt(ds, "geval", item["item_id"], criteria)
    assert item["output"].strip()[:80] in prompt
    pair_prompt = criteria_views.rendered_prompt(ds, "h2h", item["item_id"], criteria)
    assert item["output"].strip()[:80] in pair_prompt


def test_scale_guess_prefers_the_usual_scale_the_values_fit():
    import pandas as pd

    from evalcore.views.data import scale_guess

    raw = pd.DataFrame({"coh": ["2", "5", "3"], "flu": ["4", "4", "2"], "x": ["a", "b", "c"]})
    assert scale_guess(raw, ["coh", "flu"]) == (1.0, 5.0)  # ratings 2-5 are on a 1-5 scale
    assert scale_guess(pd.DataFrame({"c": [0.2, 0.9]}), ["c"]) == (0.0, 1.0)
    assert scale_guess(pd.DataFrame({"c": [7, 64]}), ["c"]) == (0.0, 100.0)
    assert scale_guess(pd.DataFrame({"c": [-3, 140]}), ["c"]) == (-3.0, 140.0)
    assert scale_guess(pd.DataFrame({"c": ["n/a"]}), ["c"]) == (1.0, 5.0)
