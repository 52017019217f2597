"""The Bias page's numbers: writer bias (Liu et al. 2023 Fig. 2) from a writer attribute or from human-written
systems, the pooled position-bias row, and ``python -m evalcore bias --json`` (the page's CLI mirror)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from evalcore import runs
from evalcore.model import Dataset, Dimension, Run
from evalcore.views import bias as bias_views

REPO = Path(__file__).resolve().parents[1]
TC_RUN = "topical_chat/chiang-lee-gpt-3.5-geval"
H2H = "summeval/shen-gpt-3.5-turbo-0301-h2h"


def _judgments(values: dict[str, float | None], dimension: str = "quality") -> pd.DataFrame:
    return pd.DataFrame([{"item_id": k, "dimension": dimension, "raw": str(v), "value": v,
                          "status": "ok" if v is not None else "failed", "reason": "", "estimator": ""}
                         for k, v in values.items()])


@pytest.fixture
def dialogue() -> Dataset:
    """Two contexts, each with a human turn (H), two model turns (M1, M2); no writer column: H is human-written
    because its system is declared so."""
    items = pd.DataFrame({"item_id": [f"{d}/{s}" for d in ("c1", "c2") for s in ("H", "M1", "M2")],
                          "doc_id": ["c1"] * 3 + ["c2"] * 3, "system_id": ["H", "M1", "M2"] * 2,
                          "output": ["x"] * 6})
    gold = {"c1/H": 3, "c1/M1": 2, "c1/M2": 3, "c2/H": 1, "c2/M1": 2, "c2/M2": 3}
    human = pd.DataFrame({"item_id": list(gold), "dimension": "quality", "score": list(gold.values())})
    docs = pd.DataFrame({"doc_id": ["c1", "c2"], "source": ["s1", "s2"], "references": [[], []], "context": ["", ""]})
    return Dataset(id="toy_dialogue", name="toy", task="dialogue response", dimensions=[Dimension("quality", 1, 3)],
                   documents=docs, items=items, human_scores=human, meta={"human_written_systems": ["H"]})


def test_writer_bias_from_human_written_systems(dialogue):
    run = Run(run_id="toy/r", dataset_id="toy_dialogue", method="geval", model="m",
              judgments=_judgments({"c1/H": 2.5, "c1/M1": 2.0, "c1/M2": 1.5, "c2/H": 1.0, "c2/M1": 2.0,
                                    "c2/M2": None}))
    pairs = bias_views.writer_pairs(dialogue, "quality").set_index("pair_id")
    # c1: H(3) > M1(2) human preferred, H(3) = M2(3) equally good; c2: H(1) < M1(2), H(1) < M2(3) LLM preferred
    assert pairs["group"].to_dict() == {"c1/H|c1/M1": "human preferred", "c1/H|c1/M2": "equally good",
                                        "c2/H|c2/M1": "LLM preferred", "c2/H|c2/M2": "LLM preferred"}
    t = bias_views.writer_bias_table(dialogue, run, "quality").set_index("group")
    # c2/M2 failed to parse: its pair is left out, never compared on one side only
    assert t["pairs"].to_dict() == {"human preferred": 1, "equally good": 1, "LLM preferred": 1}
    assert t.loc["human preferred", ["human_written", "llm_written"]].tolist() == [2.5, 2.0]
    assert t.loc["equally good", "difference"] == pytest.approx(1.0)
    assert t.loc["LLM preferred", ["human_written", "llm_written"]].tolist() == [1.0, 2.0]
    assert (t["basis"] == "human scores").all()
    # the same dataset with the systems named by the caller instead of the dataset's meta
    plain = Dataset(id=dialogue.id, name="toy", task=dialogue.task, dimensions=dialogue.dimensions,
                    documents=dialogue.documents, items=dialogue.items, human_scores=dialogue.human_scores)
    assert bias_views.writer_bias_table(plain, run, "quality").empty
    again = bias_views.writer_bias_table(plain, run, "quality", human_systems=["H"])
    pd.testing.assert_frame_equal(again, t.reset_index()[again.columns])


def test_topical_chat_writer_bias_matches_a_second_count():
    """Topical-Chat: 2 human-written systems x 4 model systems x 60 contexts = 480 pairs, grouped by the gold score;
    the judge's means per group recomputed from a wide (context x system) table."""
    ds = runs.get_dataset("topical_chat")
    run = runs.load_run(TC_RUN)
    assert bias_views.human_written_systems(ds) == ["Original Ground Truth", "New Human Generated"]
    human_sys = ["Original Ground Truth", "New Human Generated"]
    model_sys = [s for s in ds.systems if s not in human_sys]
    for dim in ("coherence", "engagingness"):
        t = bias_views.writer_bias_table(ds, run, dim).set_index("group")
        gold = ds.human_table(dim).pivot(index="doc_id", columns="system_id", values="human")
        scores = run.scores(dim)
        scores = scores[scores["status"] == "ok"].merge(ds.items[["item_id", "doc_id", "system_id"]], on="item_id")
        judge = scores.pivot(index="doc_id", columns="system_id", values="judge")
        expected: dict[str, list[tuple[float, float]]] = {}
        for h, m in itertools.product(human_sys, model_sys):
            ok = judge[h].notna() & judge[m].notna()
            diff = (gold[h] - gold[m])[ok]
            for name, mask in (("human preferred", diff > 1e-9), ("LLM preferred", diff < -1e-9),
                               ("equally good", diff.abs() <= 1e-9)):
                docs = diff.index[mask]
                expected.setdefault(name, []).extend(zip(judge.loc[docs, h], judge.loc[docs, m]))
        for name, pairs in expected.items():
            assert t.loc[name, "pairs"] == len(pairs)
            assert t.loc[name, "human_written"] == pytest.approx(sum(p[0] for p in pairs) / len(pairs))
            assert t.loc[name, "llm_written"] == pytest.approx(sum(p[1] for p in pairs) / len(pairs))
        assert t["pairs"].sum() <= 480


def test_zhang_pairs_still_grouped_by_votes():
    ds = runs.get_dataset("zhang_pairs")
    pairs = bias_views.writer_pairs(ds, "overall")
    assert len(pairs) == 112 and (pairs["basis"] == "votes").all()
    assert pairs["human_item"].str.contains("/writer-").all()


def test_position_bias_table_pooled_row():
    t = bias_views.position_bias_table([runs.load_run(H2H)]).set_index("dimension")
    per_dim = t.drop(index="all")
    assert t.loc["all", "n_pairs"] == per_dim["n_pairs"].sum() == 4400
    assert t.loc["all", "flip_rate"] == pytest.approx(0.320, abs=5e-4)
    assert t.loc["all", "inconsistent_rate"] == pytest.approx(0.352, abs=5e-4)
    fig = bias_views.position_bias_figure(t.reset_index())
    assert fig.layout.yaxis.title.text == "% of verdicts or pairs"


def test_violins_stay_within_the_scores_seen():
    run = runs.load_run("summeval/shen-gpt-4-0314-rts")
    dist = bias_views.score_distribution_table(runs.get_dataset("summeval"), [run], "coherence")
    fig = bias_views.score_distribution_figure(dist, "coherence", {"x": "#000000"})
    assert all(t.spanmode == "hard" for t in fig.data)
    lo, hi = fig.layout.yaxis.range
    assert dist["judge"].min() - 0.25 <= lo and hi <= dist["judge"].max() + 0.25


def _cli(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "evalcore", *args], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_cli_bias_json_mirrors_the_bias_page():
    r = _cli("bias", "--dataset", "summeval", "--run", H2H, "--json")
    pb = r["position_bias"]
    assert set(pb) == {"coherence", "consistency", "fluency", "relevance", "all"}
    for entry in pb.values():
        assert {"first_position_win_rate", "tie_rate", "flip_rate", "inconsistent_rate", "n_pairs"} <= set(entry)
    assert pb["all"]["n_pairs"] == sum(pb[d]["n_pairs"] for d in pb if d != "all") == 4400
    assert pb["all"]["flip_rate"] == pytest.approx(0.32)
    assert pb["relevance"]["flip_rate"] == pytest.approx(0.2945, abs=5e-5)
    assert r["writer_bias"] == [] and r["mean_scores"] == []

    t = _cli("bias", "--dataset", "topical_chat", "--run", TC_RUN, "--dimension", "coherence", "--json")
    assert t["position_bias"] == {}
    groups = {row["group"]: row for row in t["writer_bias"]}
    assert set(groups) == {"human preferred", "equally good", "LLM preferred"}
    table = bias_views.writer_bias_table(runs.get_dataset("topical_chat"), runs.load_run(TC_RUN), "coherence")
    assert groups["human preferred"]["pairs"] == int(table.set_index("group").loc["human preferred", "pairs"])
    ms = pd.DataFrame(t["mean_scores"])
    assert set(ms["system_id"]) == set(runs.get_dataset("topical_chat").systems)
    assert {"dimension", "system_id", "judge", "human", "items", "failed"} <= set(ms.columns)


def test_cli_bias_says_what_is_wrong():
    bad = subprocess.run([sys.executable, "-m", "evalcore", "bias", "--dataset", "zhang_pairs", "--run", H2H],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "judged dataset 'summeval', not 'zhang_pairs'" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "evalcore", "bias", "--dataset", "summeval", "--run", H2H,
                          "--dimension", "nope"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "dimension 'nope' is not in summeval" in bad.stderr
