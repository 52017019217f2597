"""The bundled datasets and published runs (evalcore.datasets over data/ built by scripts/build_data.py).

The key check reproduces a published figure: Shen et al. (003 §4.2.1, Table 5) report for ChatGPT
(gpt-3.5-turbo-0301) RTS the correct preferences #CP on all 66 pairs of the 12 abstractive SummEval systems as
coherence 54, consistency 56, fluency 62, relevance 62, and 7 of 11 on average (28 of 44) on the challenge pairs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from pathlib import Path

import pytest

from evalcore import datasets
from evalcore.model import (
    ANNOTATION_COLUMNS,
    COMPARISON_COLUMNS,
    DOCUMENT_COLUMNS,
    HUMAN_SCORE_COLUMNS,
    ITEM_COLUMNS,
    JUDGMENT_COLUMNS,
    PREFERENCE_COLUMNS,
)

REPO = Path(__file__).resolve().parent.parent
SUMMEVAL_DIMS = ["coherence", "consistency", "fluency", "relevance"]
SHEN_RTS = "summeval/shen-gpt-3.5-turbo-0301-rts"
# 003 App. E / the pair names of Shen et al.'s H2H files, in their orientation.
CHALLENGE_PAIRS = [["M22", "M23"], ["M23", "M17"], ["M17", "M12"], ["M12", "M13"], ["M13", "M15"], ["M15", "M14"],
                   ["M14", "M8"], ["M8", "M9"], ["M9", "M10"], ["M10", "M20"], ["M20", "M11"]]


# ----------------------------------------------------------------------------------------------------------------
# An independent #CP (003 §4.2.1), written here from the paper's definition
# ----------------------------------------------------------------------------------------------------------------


def _points_a(scores: dict[str, float], docs: list[str], a: str, b: str) -> float:
    """Points of system a over the shared documents: 1 when its summary scores higher, 0.5 each on a tie."""
    total = 0.0
    for doc in docs:
        x, y = scores[f"{doc}/{a}"], scores[f"{doc}/{b}"]
        total += 1.0 if x > y else 0.5 if x == y else 0.0
    return total


def _side(points: float, n_docs: int) -> int:
    half = n_docs / 2
    return (points > half) - (points < half)


def _correct_pairs(judge: dict[str, float], human: dict[str, float], docs: list[str], pairs) -> int:
    return sum(
        _side(_points_a(judge, docs, a, b), len(docs)) == _side(_points_a(human, docs, a, b), len(docs))
        for a, b in pairs
    )


def _score_maps(dataset, run, dim):
    human = dataset.human_table(dim)
    human = human[human["system_id"].isin(dataset.meta["abstractive_systems"])]
    judge = run.scores(dim)
    return (dict(zip(judge["item_id"], judge["judge"])), dict(zip(human["item_id"], human["human"])),
            sorted(human["doc_id"].unique()))


# ----------------------------------------------------------------------------------------------------------------
# Published figure
# ----------------------------------------------------------------------------------------------------------------


def test_shen_chatgpt_rts_correct_preferences_match_published_figures():
    ds = datasets.load_dataset("summeval")
    run = datasets.load_bundled_run(SHEN_RTS, parse="paper")
    systems = ds.meta["abstractive_systems"]
    full, challenge = {}, {}
    for dim in SUMMEVAL_DIMS:
        judge, human, docs = _score_maps(ds, run, dim)
        assert len(docs) == 100
        full[dim] = _correct_pairs(judge, human, docs, itertools.combinations(systems, 2))
        challenge[dim] = _correct_pairs(judge, human, docs, ds.meta["challenge_pairs"])
    assert full == {"coherence": 54, "consistency": 56, "fluency": 62, "relevance": 62}
    assert sum(full.values()) / 4 == 58.5
    assert sum(challenge.values()) == 28  # 7 of 11 on average


def test_correct_preferences_agree_with_library_version():
    systems_mod = pytest.importorskip("evalcore.meta.systems")
    ds = datasets.load_dataset("summeval")
    run = datasets.load_bundled_run(SHEN_RTS, parse="paper")
    for dim in ["coherence", "relevance"]:
        judge, human, docs = _score_maps(ds, run, dim)
        frame = ds.human_table(dim).merge(run.scores(dim)[["item_id", "judge"]], on="item_id")
        frame = frame[frame["system_id"].isin(ds.meta["abstractive_systems"])]
        pairs = [tuple(p) for p in ds.meta["challenge_pairs"]]
        lib = systems_mod.correct_preferences(frame, pairs=pairs)
        assert lib.total == 11
        assert lib.correct == _correct_pairs(judge, human, docs, pairs)
        lib_full = systems_mod.correct_preferences(frame)
        assert lib_full.total == 66
        assert lib_full.correct == _correct_pairs(judge, human, docs,
                                                  itertools.combinations(ds.meta["abstractive_systems"], 2))


# ----------------------------------------------------------------------------------------------------------------
# Datasets
# ----------------------------------------------------------------------------------------------------------------


def test_dataset_ids_and_listing():
    listed = datasets.list_datasets()
    assert [d["id"] for d in listed] == ["summeval", "topical_chat", "qags_cnndm", "qags_xsum", "fed_dialogue",
                                         "zhang_pairs", "pandalm", "llmbar_natural"]
    by_id = {d["id"]: d for d in listed}
    assert by_id["summeval"]["items"] == 1600 and by_id["summeval"]["systems"] == 16
    assert by_id["summeval"]["annotators"] == 8 and by_id["summeval"]["runs"] == 10
    assert by_id["topical_chat"]["runs"] == 1
    assert by_id["fed_dialogue"]["dimensions"][-1] == "overall"
    with pytest.raises(KeyError, match="no bundled dataset"):
        datasets.load_dataset("nope")


@pytest.mark.parametrize("dataset_id", datasets.DATASET_IDS)
def test_every_dataset_is_well_formed(dataset_id):
    ds = datasets.load_dataset(dataset_id)
    for frame, columns in [(ds.documents, DOCUMENT_COLUMNS), (ds.items, ITEM_COLUMNS),
                           (ds.human_scores, HUMAN_SCORE_COLUMNS), (ds.annotations, ANNOTATION_COLUMNS),
                           (ds.preferences, PREFERENCE_COLUMNS)]:
        assert set(columns) <= set(frame.columns)
    assert ds.items["item_id"].is_unique and ds.documents["doc_id"].is_unique
    assert set(ds.items["doc_id"]) == set(ds.documents["doc_id"])
    assert all(isinstance(r, list) for r in ds.documents["references"])
    assert ds.citation and ds.origin and ds.description
    if ds.human_scores.empty:  # a pairwise set: its votes are the preferences, over items it holds
        assert len(ds.preferences) and set(ds.preferences["item_a"]) | set(ds.preferences["item_b"]) == set(
            ds.items["item_id"])
        assert set(ds.preferences["preferred"]) <= {"a", "b", "tie"}
        return
    assert (ds.items["item_id"] == ds.items["doc_id"] + "/" + ds.items["system_id"]).all()
    assert set(ds.human_scores["item_id"]) <= set(ds.items["item_id"])
    assert not ds.human_scores.duplicated(["item_id", "dimension"]).any()
    for dim in ds.dimensions:
        s = ds.human_scores.loc[ds.human_scores["dimension"] == dim.name, "score"]
        assert len(s) > 0 and s.between(dim.scale_min, dim.scale_max).all(), dim.name
    assert ds.citation and ds.origin and ds.description


def test_summeval_counts_annotators_and_known_value():
    ds = datasets.load_dataset("summeval")
    assert len(ds.items) == 1600 and len(ds.documents) == 100 and len(ds.systems) == 16
    assert len(ds.human_scores) == 6400
    assert ds.annotations["item_id"].nunique() == 1200
    assert ds.annotators == ["crowd_1", "crowd_2", "crowd_3", "crowd_4", "crowd_5", "expert_1", "expert_2",
                             "expert_3"]
    assert set(ds.annotations.loc[ds.annotations["group"] == "expert", "annotator"]) == {"expert_1", "expert_2",
                                                                                         "expert_3"}
    assert all(len(r) == 11 for r in ds.documents["references"])
    assert ds.meta["abstractive_systems"] == ["M8", "M9", "M10", "M11", "M12", "M13", "M14", "M15", "M17", "M20",
                                              "M22", "M23"]
    # Known value: the first SummEval record (also the first of G-Eval's summeval.json).
    item = "dm-test-8764fb95bfad8ee849274873a92fb8d6b400eee2/M11"
    got = ds.human_scores[ds.human_scores["item_id"] == item].set_index("dimension")["score"]
    assert got["coherence"] == pytest.approx(4 / 3) and got["consistency"] == 1.0
    assert got["fluency"] == 3.0 and got["relevance"] == pytest.approx(5 / 3)


def test_summeval_gold_is_the_expert_mean():
    ds = datasets.load_dataset("summeval")
    experts = ds.annotations[ds.annotations["group"] == "expert"]
    mean = experts.groupby(["item_id", "dimension"])["value"].mean().rename("mean").reset_index()
    merged = mean.merge(ds.human_scores, on=["item_id", "dimension"])
    assert len(merged) == 4800
    assert (merged["mean"] - merged["score"]).abs().max() < 1e-9


def test_summeval_challenge_pairs_recomputed_from_human_scores():
    ds = datasets.load_dataset("summeval")
    assert ds.meta["challenge_pairs"] == CHALLENGE_PAIRS
    frame = ds.human_scores.merge(ds.items[["item_id", "system_id"]], on="item_id")
    frame = frame[frame["system_id"].isin(ds.meta["abstractive_systems"])]
    ranked = frame.groupby("system_id")["score"].mean().sort_values(ascending=False).index.tolist()
    assert [[a, b] for a, b in zip(ranked, ranked[1:])] == CHALLENGE_PAIRS
    # 003 App. E: M22 4.57, M23 4.55, M17 4.52 on average.
    means = ds.meta["system_mean_expert_score"]
    assert round(means["M22"], 2) == 4.57 and round(means["M23"], 2) == 4.55 and round(means["M17"], 2) == 4.52


def test_topical_chat_ids_scales_and_contexts():
    ds = datasets.load_dataset("topical_chat")
    assert len(ds.items) == 360 and len(ds.documents) == 60 and len(ds.systems) == 6
    assert ds.items.groupby("doc_id").size().eq(6).all()
    for _, doc in ds.documents.iterrows():
        assert doc["doc_id"] == "tc-" + hashlib.sha1(doc["source"].encode("utf-8")).hexdigest()[:10]
        assert doc["context"]  # the fact the response should use
    scales = {d.name: d.scale for d in ds.dimensions}
    assert scales == {"understandability": (0, 1), "naturalness": (1, 3), "coherence": (1, 3),
                      "engagingness": (1, 3), "groundedness": (0, 1), "overall": (1, 5)}


def test_qags_sets():
    for dataset_id, n in [("qags_cnndm", 235), ("qags_xsum", 239)]:
        ds = datasets.load_dataset(dataset_id)
        assert len(ds.items) == n and ds.dimension_names == ["consistency"]
        assert ds.documents["references"].map(len).eq(0).all()
    xsum = datasets.load_dataset("qags_xsum").human_scores["score"]
    assert set(xsum) <= {0.0, 1.0}  # one-sentence summaries


def test_fed_gold_is_mean_of_annotations():
    ds = datasets.load_dataset("fed_dialogue")
    assert len(ds.items) == 125 and set(ds.systems) == {"Human", "Meena", "Mitsuku"}
    assert len(ds.dimensions) == 11
    assert ds.dimension("consistent").scale == (0, 1) and ds.dimension("overall").scale == (0, 4)
    assert ds.dimension("depth").scale == (0, 2)
    mean = ds.annotations.groupby(["item_id", "dimension"])["value"].mean().rename("mean").reset_index()
    merged = mean.merge(ds.human_scores, on=["item_id", "dimension"], how="outer")
    assert len(merged) == 125 * 11 - 1  # one dialogue has no error-recovery rating at all
    assert (merged["mean"] - merged["score"]).abs().max() < 1e-12
    first = ds.items.iloc[0]["output"]
    assert first.startswith("Human: Hi!\nAI: ")


def test_zhang_pairs_preferences_and_derived_shares():
    ds = datasets.load_dataset("zhang_pairs")
    assert len(ds.documents) == 112 and len(ds.items) == 224
    assert ds.items["written_by"].value_counts().to_dict() == {"human": 112, "llm": 112}
    assert len(ds.preferences) == 599 * 2
    assert set(ds.preferences["preferred"]) == {"a", "b", "tie"}
    assert ds.preferences["annotator"].nunique() == 6
    hs = ds.human_scores.merge(ds.items[["item_id", "doc_id"]], on="item_id")
    sums = hs.groupby(["doc_id", "dimension"])["score"].sum()
    assert (sums - 1.0).abs().max() < 1e-12
    # One pair by hand from its released judgments.
    pair = ds.preferences["pair_id"].iloc[0]
    prefs = ds.preferences[(ds.preferences["pair_id"] == pair) & (ds.preferences["dimension"] == "overall")]
    expected = sum({"a": 1.0, "tie": 0.5, "b": 0.0}[p] for p in prefs["preferred"]) / len(prefs)
    writer_item = prefs["item_a"].iloc[0]
    got = hs[(hs["item_id"] == writer_item) & (hs["dimension"] == "overall")]["score"].item()
    assert got == pytest.approx(expected)
    assert "DERIVED" in ds.description


def test_loaded_frames_are_copies():
    a = datasets.load_dataset("summeval")
    a.items.loc[:, "output"] = "changed"
    a.meta["challenge_pairs"].clear()
    b = datasets.load_dataset("summeval")
    assert (b.items["output"] != "changed").all() and len(b.meta["challenge_pairs"]) == 11
    r = datasets.load_bundled_run(SHEN_RTS)
    r.judgments.loc[:, "value"] = -99.0
    assert (datasets.load_bundled_run(SHEN_RTS).judgments["value"] != -99.0).all()


# ----------------------------------------------------------------------------------------------------------------
# Published runs
# ----------------------------------------------------------------------------------------------------------------


def test_bundled_run_listing_is_cheap_and_labelled():
    runs = datasets.list_bundled_runs("summeval")
    ids = [r.run_id for r in runs]
    assert ids == [
        "summeval/shen-gpt-4-0314-rts", SHEN_RTS, "summeval/shen-gpt-3.5-turbo-0301-mcq",
        "summeval/shen-gpt-3.5-turbo-0301-stareval", "summeval/shen-gpt-3.5-turbo-0301-altrts",
        "summeval/shen-gpt-3.5-turbo-0301-altmcq", "summeval/shen-llama-2-7b-chat-rts",
        "summeval/shen-llama-2-13b-chat-rts", "summeval/shen-llama-2-70b-chat-rts",
        "summeval/shen-gpt-3.5-turbo-0301-h2h",
    ]
    assert all(r.judgments.empty and r.comparisons.empty and r.origin == "published" for r in runs)
    labels = {r.run_id: r.label for r in runs}
    assert labels[SHEN_RTS] == "Shen et al. · gpt-3.5-turbo-0301 · RTS"
    for r in runs:
        origin = r.config["origin"]
        assert origin["repo"] == "DAMO-NLP-SG/LLM_summeval" and len(origin["commit"]) == 40 and origin["path"]
        assert r.config["model"] == r.model and r.config["method"] == r.method and r.config["prompt_files"]
    [chiang] = datasets.list_bundled_runs("topical_chat")
    assert chiang.config["n"] == 20 and chiang.config["temperature"] == 1 and chiang.parser == "form"
    assert datasets.list_bundled_runs("qags_xsum") == []
    with pytest.raises(KeyError, match="no bundled run"):
        datasets.load_bundled_run("summeval/nope")
    with pytest.raises(ValueError, match="parse mode"):
        datasets.load_bundled_run(SHEN_RTS, parse="lenient")


@pytest.mark.parametrize("run_id", [r.run_id for r in datasets.list_bundled_runs("summeval") if r.method != "h2h"])
def test_shen_item_runs_cover_the_1200_summaries(run_id):
    ds_items = set(datasets.load_dataset("summeval").items["item_id"])
    run = datasets.load_bundled_run(run_id, parse="paper")
    j = run.judgments
    assert list(j.columns) == JUDGMENT_COLUMNS and len(j) == 4800
    assert j["item_id"].nunique() == 1200 and set(j["item_id"]) <= ds_items
    assert not j.duplicated(["item_id", "dimension"]).any()
    assert run.config["parse_mode"] == "paper"
    ok = j["status"] == "ok"
    assert j.loc[ok, "value"].notna().all() and j.loc[~ok, "value"].isna().all()
    assert (j.loc[~ok, "reason"] != "").all()


def test_duplicate_reply_lines_keep_the_last():
    run = datasets.load_bundled_run("summeval/shen-gpt-3.5-turbo-0301-mcq", parse="robust")
    dropped = run.config["files_with_duplicate_lines"]
    assert sum(dropped.values()) == run.config["duplicate_lines_dropped"] == 300  # 3 files x 100 repeated lines
    assert datasets.load_bundled_run("summeval/shen-gpt-3.5-turbo-0301-altmcq").config[
        "duplicate_lines_dropped"] == 12


def test_robust_and_paper_modes_parse_the_same_replies():
    robust = datasets.load_bundled_run(SHEN_RTS, parse="robust").judgments
    paper = datasets.load_bundled_run(SHEN_RTS, parse="paper").judgments
    assert robust["raw"].tolist() == paper["raw"].tolist()
    assert robust["status"].eq("ok").mean() > 0.99
    # A reply with one plain "Score: N" reads the same under both rules.
    simple = robust["raw"].str.fullmatch(r"[^0-9]*Score: [1-5]\.?")
    assert simple.sum() > 100
    assert (robust.loc[simple, "value"] == paper.loc[simple, "value"]).all()


def test_h2h_comparisons_orders_and_pairs():
    run = datasets.load_bundled_run("summeval/shen-gpt-3.5-turbo-0301-h2h", parse="paper")
    c = run.comparisons
    assert run.is_pairwise and list(c.columns) == COMPARISON_COLUMNS
    assert len(c) == 11 * 4 * 2 * 100
    assert c["order"].value_counts().to_dict() == {"ab": 4400, "ba": 4400}
    pair = c["pair_id"].str.rsplit("/", n=1).str[1]
    assert sorted(pair.unique().tolist()) == sorted(f"{a}-{b}" for a, b in CHALLENGE_PAIRS)
    a = c["doc_id"] + "/" + pair.str.split("-").str[0]
    b = c["doc_id"] + "/" + pair.str.split("-").str[1]
    ab = c["order"] == "ab"
    assert (c.loc[ab, "item_first"] == a[ab]).all() and (c.loc[ab, "item_second"] == b[ab]).all()
    assert (c.loc[~ab, "item_first"] == b[~ab]).all() and (c.loc[~ab, "item_second"] == a[~ab]).all()
    assert c["status"].eq("ok").all()  # paper mode: unreadable counts as a tie
    plain_a = c["raw"].str.strip() == "A"
    assert (c.loc[plain_a, "verdict"] == "first").all()
    plain_b = c["raw"].str.strip() == "B"
    assert (c.loc[plain_b, "verdict"] == "second").all()
    assert "M11-M12" in run.config["not_included"]


def test_chiang_lee_sample_mean_by_hand():
    ds = datasets.load_dataset("topical_chat")
    run = datasets.load_bundled_run("topical_chat/chiang-lee-gpt-3.5-geval", parse="robust")
    j = run.judgments
    assert set(j["dimension"]) == {"coherence", "engagingness", "groundedness", "naturalness"}
    assert j.groupby("dimension").size().to_dict() == {"coherence": 359, "engagingness": 356, "groundedness": 357,
                                                       "naturalness": 358}
    assert set(j["item_id"]) <= set(ds.items["item_id"])
    assert (j["estimator"] == "sample-mean(n=20)").all()
    samples = j["raw"].map(json.loads)
    assert samples.map(len).eq(20).all()
    # Items whose 20 replies are all bare digits: the value is their plain mean.
    plain = samples.map(lambda s: all(x.strip().isdigit() for x in s))
    assert plain.sum() > 100
    expected = samples[plain].map(lambda s: sum(float(x) for x in s) / 20)
    assert (j.loc[plain, "value"] - expected).abs().max() < 1e-12
    for dim, lo, hi in [("coherence", 1, 3), ("groundedness", 0, 1)]:
        v = j.loc[(j["dimension"] == dim) & (j["status"] == "ok"), "value"]
        assert v.between(lo, hi).all()


# ----------------------------------------------------------------------------------------------------------------
# The app never needs the reference copies; the bundle stays small
# ----------------------------------------------------------------------------------------------------------------


def test_datasets_module_reads_only_the_bundle():
    source = (REPO / "evalcore" / "datasets.py").read_text(encoding="utf-8")
    assert "shared" not in source.lower()
    if "EVALCORE_DATA_DIR" not in os.environ:
        assert datasets.DATA_DIR.resolve() == (REPO / "data").resolve()


def test_bundle_size_and_attribution():
    files = [p for p in (REPO / "data").rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    assert total < 15 * 1024 * 1024
    readme = (REPO / "data" / "README.md").read_text(encoding="utf-8")
    for repo, commit in [("neulab/BARTScore", "248f511cb34ae3753fc81f7d7a945de5bfe33458"),
                         ("DAMO-NLP-SG/LLM_summeval", "bd7dde15817a88940c17574973ff03e750356daa"),
                         ("maszhongming/UniEval", "d33e7b6cfebe97b2bafe435adbd818230d5a416a"),
                         ("Tiiiger/benchmark_llm_summarization", "4e87890ed070c7db3dd5c1125adb5bde0ccd2eb1"),
                         ("d223302/A-Closer-Look-To-LLM-Evaluation", "90084422bb32e89f77109dce578d0bd1db3912c4")]:
        assert repo in readme and commit in readme
