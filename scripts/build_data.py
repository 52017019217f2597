"""Build the compact bundled data under ``data/`` from the reference copies of the papers' data releases.

This is the ONLY part of the project that reads the reference copies (default ``/work/shared/data``, override with
``--shared``); the app, the library and the tests read only what this script writes:

    data/README.md                               attribution: origin repository, snapshot commit, license, citation
    data/datasets/<id>/dataset.json              dimensions, description, citation, origin, meta, row counts
    data/datasets/<id>/<table>.parquet           documents, items, human_scores, annotations, preferences (zstd)
    data/runs/manifest.json                      every published run: label, method, model, parser, config, origin
    data/runs/<dataset>__<run>.parquet           raw replies only (judgments: item_id, dimension, raw;
                                                 comparisons: pair_id, doc_id, item_first, item_second, dimension,
                                                 order, raw). Values/verdicts are NOT stored: evalcore.datasets
                                                 derives them at load time with evalcore.parsers under the parse
                                                 mode asked for, so the paper's rule and the robust rule can be
                                                 compared on the very same replies.

The output is deterministic: the same inputs give byte-identical files (``--check`` verifies that the files on disk
are what this script would write, without touching them). Every cross-check the data allows is an assertion here,
so a bad or changed input stops the build with a message naming the file and record instead of shipping quietly.

Usage: python scripts/build_data.py [--shared DIR] [--out DIR] [--check]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import shutil
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE_DIR = Path("/work/shared/data")
ZSTD_LEVEL = 19

SUMMEVAL_DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
SHEN_SCALE = (1, 5)

# --------------------------------------------------------------------------------------------------------------------
# Where each source comes from. Commits and licenses as recorded in the reference copies' SOURCES.md.
# --------------------------------------------------------------------------------------------------------------------

SOURCES: dict[str, dict[str, str]] = {
    "neulab__BARTScore": {
        "repo": "neulab/BARTScore",
        "commit": "248f511cb34ae3753fc81f7d7a945de5bfe33458",
        "license": "Apache-2.0",
    },
    "DAMO-NLP-SG__LLM_summeval": {
        "repo": "DAMO-NLP-SG/LLM_summeval",
        "commit": "bd7dde15817a88940c17574973ff03e750356daa",
        "license": "none stated (no LICENSE file; README silent)",
    },
    "maszhongming__UniEval": {
        "repo": "maszhongming/UniEval",
        "commit": "d33e7b6cfebe97b2bafe435adbd818230d5a416a",
        "license": "MIT",
    },
    "MilkWhite__LLMs_for_Reference_Free_Text_Quality_Evaluation": {
        "repo": "MilkWhite/LLMs_for_Reference_Free_Text_Quality_Evaluation",
        "commit": "ff6a35859673d60e332179409f3454d9e63dbda5",
        "license": "none stated (no LICENSE file; README silent)",
    },
    "Tiiiger__benchmark_llm_summarization": {
        "repo": "Tiiiger/benchmark_llm_summarization",
        "commit": "4e87890ed070c7db3dd5c1125adb5bde0ccd2eb1",
        "license": "none stated (no LICENSE file; README silent)",
    },
    "d223302__A-Closer-Look-To-LLM-Evaluation": {
        "repo": "d223302/A-Closer-Look-To-LLM-Evaluation",
        "commit": "90084422bb32e89f77109dce578d0bd1db3912c4",
        "license": "none stated (no LICENSE file; README silent)",
    },
    "WeOpenML__PandaLM": {
        "repo": "WeOpenML/PandaLM",
        "commit": "3871806e72b4832f815ecafd24d3503c73403f48",
        "license": "Apache-2.0",
    },
    "princeton-nlp__LLMBar": {
        "repo": "princeton-nlp/LLMBar",
        "commit": "900616bff90b6c6c8e1681f7d079250637c55992",
        "license": "MIT",
    },
}

CITATIONS: dict[str, str] = {
    "summeval": (
        "Fabbri, A. R., Kryściński, W., McCann, B., Xiong, C., Socher, R., & Radev, D. (2021). SummEval: Re-evaluating "
        "Summarization Evaluation. Transactions of the Association for Computational Linguistics, 9, 391-409."
    ),
    "bartscore": (
        "Yuan, W., Neubig, G., & Liu, P. (2021). BARTScore: Evaluating Generated Text as Text Generation. "
        "Advances in Neural Information Processing Systems 34 (NeurIPS 2021)."
    ),
    "shen": (
        "Shen, C., Cheng, L., Nguyen, X.-P., You, Y., & Bing, L. (2023). Large Language Models are Not Yet Human-Level "
        "Evaluators for Abstractive Summarization. Findings of the Association for Computational Linguistics: "
        "EMNLP 2023."
    ),
    "usr": (
        "Mehri, S., & Eskenazi, M. (2020). USR: An Unsupervised and Reference Free Evaluation Metric for Dialog "
        "Generation. Proceedings of ACL 2020."
    ),
    "topical_chat": (
        "Gopalakrishnan, K., Hedayatnia, B., Chen, Q., Gottardi, A., Kwatra, S., Venkatesh, A., Gabriel, R., & "
        "Hakkani-Tür, D. (2019). Topical-Chat: Towards Knowledge-Grounded Open-Domain Conversations. Interspeech 2019."
    ),
    "unieval": (
        "Zhong, M., Liu, Y., Yin, D., Mao, Y., Jiao, Y., Liu, P., Zhu, C., Ji, H., & Han, J. (2022). Towards a Unified "
        "Multi-Dimensional Evaluator for Text Generation. Proceedings of EMNLP 2022."
    ),
    "qags": (
        "Wang, A., Cho, K., & Lewis, M. (2020). Asking and Answering Questions to Evaluate the Factual Consistency of "
        "Summaries. Proceedings of ACL 2020."
    ),
    "fed": (
        "Mehri, S., & Eskenazi, M. (2020). Unsupervised Evaluation of Interactive Dialog with DialoGPT. "
        "Proceedings of SIGDIAL 2020."
    ),
    "chen": (
        "Chen, Y., Wang, R., Jiang, H., Shi, S., & Xu, R. (2023). Exploring the Use of Large Language Models for "
        "Reference-Free Text Quality Evaluation: An Empirical Study. Findings of IJCNLP-AACL 2023."
    ),
    "zhang": (
        "Zhang, T., Ladhak, F., Durmus, E., Liang, P., McKeown, K., & Hashimoto, T. B. (2024). Benchmarking Large "
        "Language Models for News Summarization. Transactions of the Association for Computational Linguistics, 12, "
        "39-57. (arXiv:2301.13848, 2023)"
    ),
    "chiang_lee": (
        "Chiang, C.-H., & Lee, H.-y. (2023). A Closer Look into Using Large Language Models for Automatic Evaluation. "
        "Findings of the Association for Computational Linguistics: EMNLP 2023."
    ),
    "pandalm": (
        "Wang, Y., Yu, Z., Zeng, Z., Yang, L., Wang, C., Chen, H., Jiang, C., Xie, R., Wang, J., Xie, X., Ye, W., "
        "Zhang, S., & Zhang, Y. (2024). PandaLM: An Automatic Evaluation Benchmark for LLM Instruction Tuning "
        "Optimization. International Conference on Learning Representations (ICLR 2024)."
    ),
    "llmbar": (
        "Zeng, Z., Yu, J., Gao, T., Meng, Y., Goyal, T., & Chen, D. (2024). Evaluating Large Language Models at "
        "Evaluating Instruction Following. International Conference on Learning Representations (ICLR 2024)."
    ),
    "geval": (
        "Liu, Y., Iter, D., Xu, Y., Wang, S., Xu, R., & Zhu, C. (2023). G-Eval: NLG Evaluation using GPT-4 with Better "
        "Human Alignment. Proceedings of EMNLP 2023."
    ),
}


class BuildError(RuntimeError):
    """An input file does not look the way this script expects (the message names the file and record)."""


def check(condition: bool, message: str) -> None:
    # An explicit check rather than `assert`, so it still runs under `python -O`.
    if not condition:
        raise BuildError(message)


def origin_of(folder: str, path: str) -> dict[str, str]:
    src = SOURCES[folder]
    return {"repo": src["repo"], "path": path, "commit": src["commit"], "license": src["license"]}


def origin_text(*origins: dict[str, str]) -> str:
    return "; ".join(f"{o['repo']}@{o['commit'][:12]}:{o['path']} (license: {o['license']})" for o in origins)


def natural_key(s: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))


def read_json(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise BuildError(f"{path}: cannot read JSON: {exc}") from exc


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise BuildError(f"{path}, line {lineno}: not JSON: {exc}") from exc
    return rows


def dims_json(dims: list[tuple[str, float, float, str]]) -> list[dict[str, Any]]:
    return [{"name": n, "scale_min": lo, "scale_max": hi, "description": d} for n, lo, hi, d in dims]


# --------------------------------------------------------------------------------------------------------------------
# Output collection: everything is built in memory first, then written in one go (nothing is half-written).
# --------------------------------------------------------------------------------------------------------------------


class Bundle:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def parquet(self, relpath: str, frame: pd.DataFrame) -> None:
        table = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
        sink = io.BytesIO()
        pq.write_table(table, sink, compression="zstd", compression_level=ZSTD_LEVEL, use_dictionary=True)
        self.files[relpath] = sink.getvalue()

    def json(self, relpath: str, obj: Any) -> None:
        self.files[relpath] = (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    def text(self, relpath: str, text: str) -> None:
        self.files[relpath] = text.encode("utf-8")


def add_dataset(bundle: Bundle, manifest: dict[str, Any], tables: dict[str, pd.DataFrame]) -> None:
    ds = manifest["id"]
    written = []
    for name, frame in tables.items():
        if frame is None or frame.empty:
            continue
        bundle.parquet(f"datasets/{ds}/{name}.parquet", frame)
        written.append(name)
    items = tables["items"]
    ann = tables.get("annotations")
    prefs = tables.get("preferences")
    annotators = set()
    if ann is not None and not ann.empty:
        annotators |= set(ann["annotator"])
    if prefs is not None and not prefs.empty:
        annotators |= set(prefs["annotator"])
    manifest["tables"] = written
    manifest["counts"] = {
        "documents": int(len(tables["documents"])),
        "items": int(len(items)),
        "systems": int(items["system_id"].nunique()),
        "human_scores": int(len(tables["human_scores"])),
        "annotations": int(0 if ann is None else len(ann)),
        "preferences": int(0 if prefs is None else len(prefs)),
        "annotators": len(annotators),
    }
    bundle.json(f"datasets/{ds}/dataset.json", manifest)


# --------------------------------------------------------------------------------------------------------------------
# 1. SummEval (BARTScore's 16-system expert means + Shen et al.'s per-annotator ratings for the 12 abstractive)
# --------------------------------------------------------------------------------------------------------------------

ABSTRACTIVE = ("M8", "M9", "M10", "M11", "M12", "M13", "M14", "M15", "M17", "M20", "M22", "M23")


def _summeval_bart(root: Path) -> tuple[list[dict], pd.DataFrame, pd.DataFrame]:
    """Documents, items and gold scores (the expert means) from BARTScore's SummEval table."""
    bart_path = root / "neulab__BARTScore/SUM/SummEval/data.json"
    bart = read_json(bart_path)
    check(len(bart) == 100, f"{bart_path}: expected 100 documents, found {len(bart)}")

    documents, items, human = [], [], []
    for doc_id, doc in bart.items():
        refs = list(doc["ref_summs"])
        check(refs and refs[0] == doc["ref_summ"], f"{bart_path}: {doc_id}: ref_summs[0] is not ref_summ")
        documents.append({"doc_id": doc_id, "source": doc["src"], "references": refs, "context": ""})
        check(len(doc["sys_summs"]) == 16, f"{bart_path}: {doc_id}: expected 16 systems")
        for system_id in sorted(doc["sys_summs"], key=natural_key):
            s = doc["sys_summs"][system_id]
            item_id = f"{doc_id}/{system_id}"
            items.append({
                "item_id": item_id, "doc_id": doc_id, "system_id": system_id, "output": s["sys_summ"],
                "system_type": "abstractive" if system_id in ABSTRACTIVE else "extractive",
            })
            for dim in SUMMEVAL_DIMENSIONS:
                score = float(s["scores"][dim])
                check(1.0 <= score <= 5.0, f"{bart_path}: {item_id}: {dim} score {score} outside 1-5")
                human.append({"item_id": item_id, "dimension": dim, "score": score})
    return documents, pd.DataFrame(items), pd.DataFrame(human)


def _summeval_annotations(root: Path, gold: dict[tuple[str, str], float]) -> pd.DataFrame:
    """Per-annotator ratings (12 abstractive systems only) from Shen et al.'s files, checked against the gold."""
    bart_path = root / "neulab__BARTScore/SUM/SummEval/data.json"
    ann_dir = root / "DAMO-NLP-SG__LLM_summeval/model_output_annotations"
    annotations = []
    seen: set[str] = set()
    for system_id in sorted(ABSTRACTIVE, key=natural_key):
        path = ann_dir / f"{system_id}_outputs_annotations.jsonl"
        rows = read_jsonl(path)
        check(len(rows) == 100, f"{path}: expected 100 records, found {len(rows)}")
        for lineno, r in enumerate(rows, 1):
            where = f"{path}, line {lineno}"
            check(r["model_id"] == system_id, f"{where}: model_id {r['model_id']!r} != {system_id!r}")
            item_id = f"{r['id']}/{system_id}"
            check((item_id, "coherence") in gold, f"{where}: {item_id} not in {bart_path}")
            check(item_id not in seen, f"{where}: duplicate {item_id}")
            seen.add(item_id)
            experts, turkers = r["expert_annotations"], r["turker_annotations"]
            check(len(experts) == 3 and len(turkers) == 5, f"{where}: expected 3 expert and 5 turker ratings")
            for dim in SUMMEVAL_DIMENSIONS:
                values = [e[dim] for e in experts]
                mean = sum(values) / 3
                # The gold score used everywhere is BARTScore's; it must be exactly this expert mean (003 §4.1:
                # "we use the average human scores as the reference scores").
                check(abs(mean - gold[(item_id, dim)]) < 1e-9,
                      f"{where}: {dim} expert mean {mean} != BARTScore score {gold[(item_id, dim)]}")
                for k, v in enumerate(experts, 1):
                    annotations.append({"item_id": item_id, "dimension": dim, "annotator": f"expert_{k}",
                                        "group": "expert", "value": float(v[dim])})
                for k, v in enumerate(turkers, 1):
                    annotations.append({"item_id": item_id, "dimension": dim, "annotator": f"crowd_{k}",
                                        "group": "crowd", "value": float(v[dim])})
    check(len(seen) == 1200, f"{ann_dir}: expected 1200 annotated summaries, found {len(seen)}")
    ann_df = pd.DataFrame(annotations)
    return ann_df.sort_values(["item_id", "dimension", "annotator"], kind="stable",
                              key=lambda c: c.map(natural_key) if c.name == "annotator" else c)


def _summeval_challenge_pairs(root: Path, human_df: pd.DataFrame,
                              items_df: pd.DataFrame) -> tuple[list[list[str]], pd.Series]:
    """Challenge pairs (003 App. E): the 12 abstractive systems sorted by average expert score over all four
    dimensions, best first; each adjacent pair (better, worse) is one challenge pair. Also the system means."""
    abstr = human_df.merge(items_df[["item_id", "system_id"]], on="item_id")
    abstr = abstr[abstr["system_id"].isin(ABSTRACTIVE)]
    means = abstr.groupby("system_id")["score"].mean().sort_values(ascending=False, kind="stable")
    ranked = list(means.index)
    challenge = [[ranked[i], ranked[i + 1]] for i in range(len(ranked) - 1)]
    # Cross-check against the pair names of Shen et al.'s H2H result files (their orientation is ours too).
    res_dir = root / "DAMO-NLP-SG__LLM_summeval/comp_res/gpt-3.5-turbo-0301"
    released = sorted({tuple(p.name.split("_")[0].split("-")) for p in res_dir.glob("*.result")})
    check(sorted(tuple(p) for p in challenge) == released,
          f"{res_dir}: challenge pairs {challenge} do not match the released H2H pairs {released}")
    return challenge, means


def build_summeval(root: Path, bundle: Bundle) -> dict[str, Any]:
    documents, items_df, human_df = _summeval_bart(root)
    gold = {(r.item_id, r.dimension): r.score for r in human_df.itertuples()}
    ann_df = _summeval_annotations(root, gold)
    challenge, means = _summeval_challenge_pairs(root, human_df, items_df)
    add_dataset(bundle, _summeval_manifest(challenge, means), {
        "documents": pd.DataFrame(documents), "items": items_df, "human_scores": human_df, "annotations": ann_df,
    })
    return {"items": set(items_df["item_id"]), "challenge_pairs": challenge}


def _summeval_manifest(challenge: list[list[str]], means: pd.Series) -> dict[str, Any]:
    origins = [
        origin_of("neulab__BARTScore", "SUM/SummEval/data.pkl (converted to JSON)"),
        origin_of("DAMO-NLP-SG__LLM_summeval", "model_output_annotations/M*_outputs_annotations.jsonl"),
    ]
    manifest = {
        "id": "summeval",
        "name": "SummEval (CNN/DailyMail, 16 systems)",
        "task": "summarization",
        "dimensions": dims_json([
            ("coherence", 1, 5, "The collective quality of all sentences: well structured and organised, "
                                 "not a heap of related information."),
            ("consistency", 1, 5, "The factual alignment between the summary and the source: no hallucinated facts."),
            ("fluency", 1, 5, "The quality of individual sentences: grammar, spelling, punctuation, word choice."),
            ("relevance", 1, 5, "Selection of important content from the source; no redundancy or excess."),
        ]),
        "description": (
            "100 CNN/DailyMail test articles, each summarised by 16 systems (M0, M1, M2, M5 extractive; M8-M23 "
            "abstractive): 1,600 summaries rated 1-5 on four dimensions. The gold human score is the mean of the 3 "
            "expert ratings, taken from BARTScore's SummEval table (texts there are tokenised and normal-cased). "
            "Per-annotator ratings (expert_1..3 in released order; crowd_1..5 = the 5 crowd ratings by position, "
            "not stable worker identities) exist only for the 12 abstractive systems (1,200 summaries), from Shen "
            "et al.'s annotation files; their expert means equal the gold scores exactly (checked at build time). "
            "Shen et al.'s LLM judges were shown SummEval's lower-cased summaries and untokenised articles, which "
            "differ from the texts here in case, tokenisation and quote characters, not in content. "
            "meta.challenge_pairs are the 11 pairs of "
            "abstractive systems adjacent in average expert score over all four dimensions (Shen et al. App. E), "
            "oriented (better, worse) as in their H2H file names."
        ),
        "citation": "\n".join([CITATIONS["summeval"], CITATIONS["bartscore"], CITATIONS["shen"]]),
        "origin": origin_text(*origins),
        "origins": origins,
        "meta": {
            "abstractive_systems": sorted(ABSTRACTIVE, key=natural_key),
            "extractive_systems": ["M0", "M1", "M2", "M5"],
            "challenge_pairs": challenge,
            "system_mean_expert_score": {s: round(float(m), 6) for s, m in means.items()},
            "annotation_groups": {"expert": "3 expert annotators (gold = their mean)",
                                  "crowd": "5 crowd workers per summary (position, not identity)"},
            "levels": ["dataset", "summary", "system"],
        },
    }
    return manifest


# --------------------------------------------------------------------------------------------------------------------
# 2. Topical-Chat (USR turn-level ratings, UniEval's file)
# --------------------------------------------------------------------------------------------------------------------

TOPICAL_DIMS = [
    ("understandability", 0, 1, "Is the response understandable given the previous context? (0 no, 1 yes)"),
    ("naturalness", 1, 3, "Does the response seem like something a person would naturally say?"),
    ("coherence", 1, 3, "Does the response serve as a valid continuation of the conversation history?"),
    ("engagingness", 1, 3, "Is the response dull or interesting?"),
    ("groundedness", 0, 1, "Given the fact the response is conditioned on, does it use that fact? (0 no, 1 yes)"),
    ("overall", 1, 5, "The overall impression of the response."),
]


def topical_doc_id(source: str) -> str:
    # A stable id from the dialogue history itself (the file has no ids): same text -> same id on every build.
    return "tc-" + hashlib.sha1(source.encode("utf-8")).hexdigest()[:10]


def build_topical_chat(root: Path, bundle: Bundle) -> dict[str, Any]:
    path = root / "maszhongming__UniEval/reproduce/data/dialogue/topical_chat.json"
    rows = read_json(path)
    check(len(rows) == 360, f"{path}: expected 360 records, found {len(rows)}")
    documents: dict[str, dict[str, Any]] = {}
    items, human = [], []
    key_to_item: dict[tuple[str, str, str], str] = {}
    for i, r in enumerate(rows):
        doc_id = topical_doc_id(r["source"])
        if doc_id in documents:
            check(documents[doc_id]["context"] == r["context"], f"{path}[{i}]: same history, different fact")
            check(documents[doc_id]["source"] == r["source"], f"{path}[{i}]: doc id hash collision")
        else:
            documents[doc_id] = {"doc_id": doc_id, "source": r["source"], "references": [], "context": r["context"]}
        item_id = f"{doc_id}/{r['system_id']}"
        check(item_id not in key_to_item.values(), f"{path}[{i}]: duplicate item {item_id}")
        key_to_item[(r["source"], r["context"], r["system_id"])] = item_id
        items.append({"item_id": item_id, "doc_id": doc_id, "system_id": r["system_id"], "output": r["system_output"]})
        for name, lo, hi, _ in TOPICAL_DIMS:
            score = float(r["scores"][name])
            check(lo - 1e-9 <= score <= hi + 1e-9, f"{path}[{i}]: {name} = {score} outside {lo}-{hi}")
            human.append({"item_id": item_id, "dimension": name, "score": score})
    check(len(documents) == 60, f"{path}: expected 60 contexts, found {len(documents)}")
    human_df = pd.DataFrame(human)
    # The scales above are the USR questionnaire's; confirm the data reaches both ends of each.
    for name, lo, hi, _ in TOPICAL_DIMS:
        col = human_df.loc[human_df["dimension"] == name, "score"]
        check(abs(col.min() - lo) < 1e-6 and abs(col.max() - hi) < 1e-6,
              f"{path}: {name} ranges {col.min()}-{col.max()}, expected {lo}-{hi}")
    origin = origin_of("maszhongming__UniEval", "reproduce/data/dialogue/topical_chat.json")
    manifest = {
        "id": "topical_chat",
        "name": "Topical-Chat (USR turn-level)",
        "task": "dialogue response",
        "dimensions": dims_json(TOPICAL_DIMS),
        "description": (
            "USR's Topical-Chat turn-level set as released by UniEval: 60 dialogue contexts, each with 6 candidate "
            "next-turn responses (original human turn, a newly written human turn, argmax and nucleus p=0.3/0.5/0.7 "
            "decoding): 360 responses. The document is the dialogue history; the knowledge fact the response should "
            "use is the document's context. Scores are the means of 3 annotators (per-annotator ratings are not in "
            "the file); scales as in USR: understandability and groundedness 0-1, naturalness, coherence and "
            "engagingness 1-3, overall 1-5 (confirmed against the data's range). Document ids are a hash of the "
            "dialogue history (the file has none)."
        ),
        "citation": "\n".join([CITATIONS["usr"], CITATIONS["topical_chat"], CITATIONS["unieval"]]),
        "origin": origin_text(origin),
        "origins": [origin],
        # Which responses people wrote (USR: the original turn and a newly written one), for the human- vs
        # model-written comparison of Liu et al. 2023 Fig. 2
        "meta": {"levels": ["turn", "summary", "system"], "annotators_per_item": 3,
                 "human_written_systems": ["Original Ground Truth", "New Human Generated"]},
    }
    add_dataset(bundle, manifest, {
        "documents": pd.DataFrame(list(documents.values())), "items": pd.DataFrame(items), "human_scores": human_df,
    })
    return {"key_to_item": key_to_item}


# --------------------------------------------------------------------------------------------------------------------
# 3. QAGS-C and QAGS-X (UniEval's files)
# --------------------------------------------------------------------------------------------------------------------


def build_qags(root: Path, bundle: Bundle, which: str) -> None:
    rel = f"reproduce/data/fact/qags_{which}.json"
    path = root / "maszhongming__UniEval" / rel
    rows = read_json(path)
    expected = {"cnndm": 235, "xsum": 239}[which]
    check(len(rows) == expected, f"{path}: expected {expected} records, found {len(rows)}")
    documents, items, human = [], [], []
    for i, r in enumerate(rows):
        doc_id = f"{which}-{int(r['doc_id']):03d}"
        # UniEval copies the article into `reference` for factuality sets (BARTScore's convention); it is not a
        # reference summary, so it is not kept as one.
        check(r["reference"] == r["source"], f"{path}[{i}]: reference differs from source")
        documents.append({"doc_id": doc_id, "source": r["source"], "references": [], "context": ""})
        item_id = f"{doc_id}/{r['system_id']}"
        items.append({"item_id": item_id, "doc_id": doc_id, "system_id": str(r["system_id"]),
                      "output": r["system_output"]})
        score = float(r["scores"]["consistency"])
        check(0.0 <= score <= 1.0, f"{path}[{i}]: consistency {score} outside 0-1")
        human.append({"item_id": item_id, "dimension": "consistency", "score": score})
    check(len({d["doc_id"] for d in documents}) == len(documents), f"{path}: duplicate doc_id")
    origin = origin_of("maszhongming__UniEval", rel)
    label = {"cnndm": "QAGS-C (CNN/DailyMail)", "xsum": "QAGS-X (XSum)"}[which]
    manifest = {
        "id": f"qags_{which}",
        "name": label,
        "task": "summarization (factual consistency)",
        "dimensions": dims_json([
            ("consistency", 0, 1, "Share of summary sentences that crowd workers judged supported by the article "
                                  "(majority of 3 yes/no votes per sentence)."),
        ]),
        "description": (
            f"{label}: {expected} summaries, one per article, from a single system (the file names it 0). The "
            "human score is QAGS's factual-consistency score in 0-1: each summary sentence was judged by 3 crowd "
            "workers (is it supported by the article?), the majority vote taken, and the votes averaged over "
            "sentences" + (" (XSum summaries are one sentence, so the score is 0 or 1)." if which == "xsum" else ".")
            + " Texts as released by UniEval; only one system, so system-level correlation does not apply."
        ),
        "citation": "\n".join([CITATIONS["qags"], CITATIONS["unieval"]]),
        "origin": origin_text(origin),
        "origins": [origin],
        "meta": {"levels": ["dataset"]},
    }
    add_dataset(bundle, manifest, {
        "documents": pd.DataFrame(documents), "items": pd.DataFrame(items), "human_scores": pd.DataFrame(human),
    })


# --------------------------------------------------------------------------------------------------------------------
# 4. FED dialogue-level (Chen et al.'s copy with per-annotator ratings)
# --------------------------------------------------------------------------------------------------------------------

FED_DIMS = [
    # (name used here = Chen et al.'s reformat key, key in the raw file, min, max, description)
    ("coherent", "Coherent", 0, 2, "Throughout the dialogue, is the system coherent and maintaining a good "
                                   "conversation flow?"),
    ("error_recovery", "Error recovery", 0, 2, "Is the system able to recover from errors that it makes?"),
    ("consistent", "Consistent", 0, 1, "Is the system consistent in the information it provides throughout the "
                                       "conversation?"),
    ("diverse", "Diverse", 0, 2, "Is there diversity in the system's responses?"),
    ("depth", "Depth", 0, 2, "Does the system discuss topics in depth?"),
    ("likeable", "Likeable", 0, 2, "Does the system display a likeable personality?"),
    ("understanding", "Understanding", 0, 2, "Does the system understand the user well?"),
    ("flexible", "Flexible", 0, 2, "Is the system flexible and adaptable to the user and their interests?"),
    ("informative", "Informative", 0, 2, "Is the system informative throughout the conversation?"),
    ("inquisitive", "Inquisitive", 0, 2, "Is the system inquisitive throughout the conversation?"),
    ("overall", "Overall", 0, 4, "Overall impression of the dialogue."),
]


def build_fed(root: Path, bundle: Bundle) -> None:
    folder = "MilkWhite__LLMs_for_Reference_Free_Text_Quality_Evaluation"
    rel = "FedDial/model_annotations/fed-dial_eval.json"
    path = root / folder / rel
    rows = read_json(path)
    ref_path = root / folder / "FedDial/model_annotations/fed-dial_eval_reformat.json"
    reformat = {r["dialogue_id"]: r for r in read_json(ref_path)}
    check(len(rows) == 125, f"{path}: expected 125 dialogues, found {len(rows)}")
    documents, items, human, annotations = [], [], [], []
    max_raters = 0
    for i, r in enumerate(rows):
        doc_id = r["dialogue_id"]
        # The whole dialogue is the evaluated output, rendered exactly as in Chen et al.'s prompts (their reformat
        # file): "Human: "/"AI: " turns joined by newlines, outer whitespace stripped.
        text = "\n".join(("Human: " if t["speaker"] == "human" else "AI: ") + t["text"] for t in r["dialog"]).strip()
        check(text == reformat[doc_id]["dialog"], f"{path}[{i}] ({doc_id}): dialogue text differs from {ref_path}")
        documents.append({"doc_id": doc_id, "source": "", "references": [], "context": ""})
        item_id = f"{doc_id}/{r['model']}"
        items.append({"item_id": item_id, "doc_id": doc_id, "system_id": r["model"], "output": text})
        for name, raw_key, lo, hi, _ in FED_DIMS:
            values = r["annotations"][raw_key]
            max_raters = max(max_raters, len(values))
            for k, v in enumerate(values, 1):
                check(lo <= v <= hi, f"{path}[{i}] ({doc_id}): {raw_key} rating {v} outside {lo}-{hi}")
                annotations.append({"item_id": item_id, "dimension": name, "annotator": f"crowd_{k}",
                                    "group": "crowd", "value": float(v)})
            if not values:  # no rating at all: no gold score (one dialogue for error recovery)
                continue
            mean = sum(values) / len(values)
            check(abs(mean - reformat[doc_id]["annotations"][name]) < 1e-9,
                  f"{path}[{i}] ({doc_id}): {name} mean {mean} != {ref_path}")
            human.append({"item_id": item_id, "dimension": name, "score": float(mean)})
    origin = origin_of(folder, rel)
    manifest = {
        "id": "fed_dialogue",
        "name": "FED (dialogue level)",
        "task": "dialogue",
        "dimensions": dims_json([(n, lo, hi, d) for n, _, lo, hi, d in FED_DIMS]),
        "description": (
            "FED dialogue-level ratings as released by Chen et al.: 125 whole conversations between a person and "
            "Meena, Mitsuku or another person (system_id), each rated by crowd workers (usually 5) on 11 "
            "dialogue-level qualities: 0-2 for most, consistent 0-1, overall 0-4. The evaluated output is the "
            "dialogue itself, rendered as 'Human: ...' / 'AI: ...' lines as in Chen et al.'s prompts; documents "
            "carry no source text. The human score is the mean of the available ratings (error recovery has 0-5 "
            "ratings per dialogue and none for one dialogue, which therefore has no gold score for it). Annotator "
            "names crowd_1..crowd_5 are positions in the released lists, not stable worker identities."
        ),
        "citation": "\n".join([CITATIONS["fed"], CITATIONS["chen"]]),
        "origin": origin_text(origin),
        "origins": [origin],
        "meta": {"levels": ["dataset", "system"], "max_annotators_per_item": max_raters},
    }
    add_dataset(bundle, manifest, {
        "documents": pd.DataFrame(documents), "items": pd.DataFrame(items), "human_scores": pd.DataFrame(human),
        "annotations": pd.DataFrame(annotations),
    })


# --------------------------------------------------------------------------------------------------------------------
# 5. Zhang et al. writer-vs-LLM pairs
# --------------------------------------------------------------------------------------------------------------------

ZHANG_DIMS = {"overall": "overall_writer_better", "informative": "informative_writer_better"}
ZHANG_LLM = "text-davinci-002"


def _zhang_preference(path: Path, i: int, key: str, v: Any) -> str:
    """A released vote: True = the writer's summary, False = the LLM's, "Equally Good" = tie."""
    if v is True:
        return "a"
    if v is False:
        return "b"
    if v == "Equally Good":
        return "tie"
    raise BuildError(f"{path}[{i}]: {key} = {v!r}, expected True, False or 'Equally Good'")


def _zhang_judgments(path: Path, rows: list[dict]) -> tuple[dict[str, dict[str, Any]], list[dict], dict[str, str]]:
    """The released judgments grouped by (article, writer) pair, every vote as a preference row, and the
    evaluators' short ids (first 8 hex digits) with their full ids."""

    def short(full: str, kind: str, registry: dict[str, str]) -> str:
        s = full.replace("-", "")[:8]
        check(registry.setdefault(s, full) == full, f"{path}: {kind} id prefix {s} is ambiguous")
        return s

    articles: dict[str, str] = {}
    writers: dict[str, str] = {}
    evaluators: dict[str, str] = {}
    pairs: dict[str, dict[str, Any]] = {}
    preferences = []
    seen_judgment: set[tuple[str, str]] = set()
    for i, r in enumerate(rows):
        a, w = short(r["article_id"], "article", articles), short(r["writer_id"], "writer", writers)
        ev = "evaluator_" + short(r["evaluator_id"], "evaluator", evaluators)
        # One document per (article, writer) comparison: exactly the two summaries the evaluators compared.
        doc_id = f"{a}/{w}"
        writer_item, llm_item = f"{doc_id}/writer-{w}", f"{doc_id}/{ZHANG_LLM}"
        p = pairs.setdefault(doc_id, {
            "article": r["article_text"], "writer_summary": r["writer_summary"],
            "llm_summary": r["text-davinci-002_summary"], "article_id": r["article_id"], "writer_id": r["writer_id"],
            "writer": w, "votes": defaultdict(list),
        })
        check(p["article"] == r["article_text"] and p["writer_summary"] == r["writer_summary"]
              and p["llm_summary"] == r["text-davinci-002_summary"],
              f"{path}[{i}]: texts differ between judgments of the same (article, writer) pair")
        check((doc_id, ev) not in seen_judgment, f"{path}[{i}]: evaluator judged the same pair twice")
        seen_judgment.add((doc_id, ev))
        for dim, key in ZHANG_DIMS.items():
            pref = _zhang_preference(path, i, key, r[key])
            p["votes"][dim].append(pref)
            preferences.append({"pair_id": doc_id, "doc_id": doc_id, "item_a": writer_item, "item_b": llm_item,
                                "dimension": dim, "annotator": ev, "preferred": pref})
    return pairs, preferences, evaluators


def _zhang_tables(pairs: dict[str, dict[str, Any]]) -> tuple[list[dict], list[dict], list[dict]]:
    """Documents, items (writer and LLM summary per pair) and the derived preference-share scores."""
    documents, items, human = [], [], []
    for doc_id in sorted(pairs):
        p = pairs[doc_id]
        documents.append({"doc_id": doc_id, "source": p["article"], "references": [], "context": ""})
        writer_item, llm_item = f"{doc_id}/writer-{p['writer']}", f"{doc_id}/{ZHANG_LLM}"
        items.append({"item_id": writer_item, "doc_id": doc_id, "system_id": f"writer-{p['writer']}",
                      "output": p["writer_summary"], "written_by": "human",
                      "article_id": p["article_id"], "writer_id": p["writer_id"]})
        items.append({"item_id": llm_item, "doc_id": doc_id, "system_id": ZHANG_LLM, "output": p["llm_summary"],
                      "written_by": "llm", "article_id": p["article_id"], "writer_id": p["writer_id"]})
        for dim in ZHANG_DIMS:
            votes = p["votes"][dim]
            # Preference share: 1 per evaluator preferring the summary, 0.5 per tie, averaged over evaluators.
            share_a = sum(1.0 if v == "a" else 0.5 if v == "tie" else 0.0 for v in votes) / len(votes)
            human.append({"item_id": writer_item, "dimension": dim, "score": share_a})
            human.append({"item_id": llm_item, "dimension": dim, "score": 1.0 - share_a})
    return documents, items, human


def build_zhang(root: Path, bundle: Bundle) -> None:
    folder = "Tiiiger__benchmark_llm_summarization"
    rel = "pairwise_evaluation_results.json"
    path = root / folder / rel
    rows = read_json(path)
    check(len(rows) == 599, f"{path}: expected 599 judgments, found {len(rows)}")
    pairs, preferences, evaluators = _zhang_judgments(path, rows)
    documents, items, human = _zhang_tables(pairs)
    pref_df = pd.DataFrame(preferences).sort_values(["pair_id", "dimension", "annotator"], kind="stable")
    origin = origin_of(folder, rel)
    manifest = {
        "id": "zhang_pairs",
        "name": "Zhang et al. 2023: freelance writers vs text-davinci-002",
        "task": "summary pairs",
        "dimensions": dims_json([
            ("overall", 0, 1, "Share of evaluators who preferred this summary overall (tie = 0.5)."),
            ("informative", 0, 1, "Share of evaluators who judged this summary more informative (tie = 0.5)."),
        ]),
        "description": (
            "Zhang et al.'s pairwise human evaluation of news summaries: 599 judgments by 6 evaluators of 112 "
            "(article, freelance writer) pairs over 76 articles; each judgment compares the writer's summary with "
            "text-davinci-002's summary of the same article, overall and for informativeness (writer better / LLM "
            "better / equally good). Each (article, writer) pair is one document holding those two summaries "
            "(written_by = human | llm); the davinci summary therefore appears once per writer it was compared "
            "with. The preferences table holds every judgment as released (item_a = writer, item_b = LLM). The "
            "human_scores are DERIVED here, not released: per summary and dimension, the share of the pair's "
            "evaluators (1, 5 or 6) who preferred it, ties counting 0.5 - so the two summaries of a pair sum to 1 "
            "and the scores are only comparable within a pair. Ids are the first 8 hex digits of the released ids "
            "(full ids in article_id / writer_id)."
        ),
        "citation": CITATIONS["zhang"],
        "origin": origin_text(origin),
        "origins": [origin],
        "meta": {
            "levels": ["summary"],
            "llm_system": ZHANG_LLM,
            "human_scores_derivation": "preference share per item: (prefers + 0.5 * ties) / evaluators of the pair",
            "evaluator_ids": {("evaluator_" + k): v for k, v in sorted(evaluators.items())},
        },
    }
    add_dataset(bundle, manifest, {
        "documents": pd.DataFrame(documents), "items": pd.DataFrame(items), "human_scores": pd.DataFrame(human),
        "preferences": pref_df,
    })


# --------------------------------------------------------------------------------------------------------------------
# 6. Pairwise preference sets: PandaLM's test set (3 annotators, ties) and LLMBar Natural (gold label)
# --------------------------------------------------------------------------------------------------------------------

PREFERENCE_DIM = ("preference", 0, 1, "Which of two outputs for the same prompt is better (a / b / tie); the votes "
                  "are in the preferences table. There are no per-item scores: see the pairwise statistics.")


def prompt_doc_id(prefix: str, prompt: str) -> str:
    # A stable id from the prompt text (the same prompt under several pairs is one document).
    return f"{prefix}-" + hashlib.sha1(prompt.encode("utf-8")).hexdigest()[:10]


class PairTables:
    """Documents and items of a pairwise set, the same (prompt, system, output) becoming one item."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.documents: dict[str, str] = {}
        self.items: dict[str, dict[str, Any]] = {}
        self.text_of: dict[tuple[str, str, str], str] = {}

    def item(self, path: Path, where: str, prompt: str, system: str, output: str) -> tuple[str, str]:
        # Keyed by system too: two models that happen to write the same text (e.g. "True") stay two items, so
        # per-model win rates keep their attribution.
        doc_id = prompt_doc_id(self.prefix, prompt)
        self.documents.setdefault(doc_id, prompt)
        key = (doc_id, system, output)
        if key not in self.text_of:
            digest = hashlib.sha1(f"{system}\x1f{output}".encode("utf-8")).hexdigest()[:8]
            item_id = f"{doc_id}/{digest}"
            check(item_id not in self.items, f"{path}{where}: item id collision {item_id}")
            self.text_of[key] = item_id
            self.items[item_id] = {"item_id": item_id, "doc_id": doc_id, "system_id": system, "output": output}
        return doc_id, self.text_of[key]

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        docs = pd.DataFrame([{"doc_id": d, "source": s, "references": [], "context": ""}
                             for d, s in sorted(self.documents.items())])
        items = pd.DataFrame([self.items[k] for k in sorted(self.items)])
        return docs, items


def pandalm_prompt(r: dict[str, Any]) -> str:
    return r["instruction"] + ("\n\n" + r["input"] if r["input"] else "")


PANDALM_VOTE = {0: "tie", 1: "a", 2: "b"}


def pandalm_text(v: Any) -> str:
    # Six responses (idx 157-164) are JSON booleans in the release, the models having answered "True": kept as text.
    return str(v) if isinstance(v, bool) else v


def _pandalm_pairs(path: Path, rows: list[dict]) -> tuple[PairTables, list[dict], list[dict]]:
    tables = PairTables("pl")
    pairs, prefs = [], []
    for i, r in enumerate(rows):
        check(r["idx"] == i, f"{path}[{i}]: idx {r['idx']} out of sequence")
        models = r["cmp_key"].split("_")
        check(len(models) == 2, f"{path}[{i}]: cmp_key {r['cmp_key']!r} does not name two models")
        out1, out2 = pandalm_text(r["response1"]), pandalm_text(r["response2"])
        check(isinstance(out1, str) and isinstance(out2, str), f"{path}[{i}]: a response is not text")
        check(out1 != out2, f"{path}[{i}]: identical responses")
        prompt = pandalm_prompt(r)
        doc_id, item_a = tables.item(path, f"[{i}]", prompt, models[0], out1)
        _, item_b = tables.item(path, f"[{i}]", prompt, models[1], out2)
        pair_id = f"pandalm-{i:04d}"
        pairs.append({"pair_id": pair_id, "doc_id": doc_id, "item_a": item_a, "item_b": item_b})
        for k in (1, 2, 3):
            v = r[f"annotator{k}"]
            check(v in PANDALM_VOTE, f"{path}[{i}]: annotator{k} = {v!r}, expected 0, 1 or 2")
            prefs.append({"pair_id": pair_id, "doc_id": doc_id, "item_a": item_a, "item_b": item_b,
                          "dimension": "preference", "annotator": f"annotator{k}", "preferred": PANDALM_VOTE[v]})
    return tables, pairs, prefs


def build_pandalm(root: Path, bundle: Bundle) -> dict[str, Any]:
    folder = "WeOpenML__PandaLM"
    rel = "data/testset-v1.json"
    path = root / folder / rel
    rows = read_json(path)
    check(len(rows) == 999, f"{path}: expected 999 pairs, found {len(rows)}")
    tables, pairs, prefs = _pandalm_pairs(path, rows)
    docs, items = tables.frames()
    origin = origin_of(folder, rel)
    manifest = {
        "id": "pandalm",
        "name": "PandaLM test set (999 pairs, 3 annotators)",
        "task": "instruction following pairs",
        "dimensions": dims_json([PREFERENCE_DIM]),
        "description": (
            "PandaLM's human-annotated test set: 999 pairs of responses by two of five instruction-tuned 7B models "
            "(bloom-7b, cerebras-gpt-6.7B, llama-7b, opt-7b, pythia-6.9b; 10 model pairs) to the same "
            "self-instruct task, each judged by 3 annotators: response 1 better, response 2 better or a tie "
            "(released codes 1 / 2 / 0, stored as a / b / tie). The prompt (document) is the instruction followed "
            "by the input; item_a is response 1, written by the first model of cmp_key (as PandaLM's README says). The "
            "same (prompt, model, response) under several pairs is one item. Six responses released as JSON booleans "
            "are kept as the text 'True'. No per-item scores: the preferences table holds every vote."
        ),
        "citation": CITATIONS["pandalm"],
        "origin": origin_text(origin),
        "origins": [origin],
        "meta": {"levels": ["pair"], "pairs": len(pairs), "annotators": ["annotator1", "annotator2", "annotator3"],
                 "published_annotator_kappa": {"annotator1-annotator2": 0.85, "annotator1-annotator3": 0.88,
                                               "annotator2-annotator3": 0.86}},
    }
    add_dataset(bundle, manifest, {"documents": docs, "items": items,
                                   "human_scores": pd.DataFrame(columns=["item_id", "dimension", "score"]),
                                   "preferences": pd.DataFrame(prefs)})
    return {"pairs": pairs}


def build_pandalm_gpt(root: Path, bundle: Bundle, pandalm: dict[str, Any]) -> dict[str, Any]:
    folder = "WeOpenML__PandaLM"
    rel = "data/gpt-3.5-turbo-testset-v1.json"
    path = root / folder / rel
    rows = read_json(path)
    check(len(rows) == len(pandalm["pairs"]), f"{path}: expected {len(pandalm['pairs'])} verdicts, found {len(rows)}")
    out = []
    for i, (r, p) in enumerate(zip(rows, pandalm["pairs"])):
        check(r["idx"] == i, f"{path}[{i}]: idx {r['idx']} does not follow the test set")
        check(r["gpt_result"] in ("1", "2", "Tie", "garbage"), f"{path}[{i}]: gpt_result {r['gpt_result']!r}")
        # Shown once, response 1 first: order "ab". "garbage" stays as released: the parser counts it as unreadable.
        out.append({"pair_id": p["pair_id"], "doc_id": p["doc_id"], "item_first": p["item_a"],
                    "item_second": p["item_b"], "dimension": "preference", "order": "ab", "raw": r["gpt_result"]})
    run_id = "pandalm/pandalm-gpt-3.5-turbo"
    frame = pd.DataFrame(out)
    bundle.parquet(run_file(run_id), frame)
    return {
        "run_id": run_id, "dataset_id": "pandalm", "method": "pairwise", "model": "gpt-3.5-turbo",
        "label": "PandaLM authors · gpt-3.5-turbo · pairwise (one order)", "parser": "pairwise",
        "origin": "published", "created_at": "", "kind": "comparisons", "file": run_file(run_id), "rows": len(frame),
        "config": {
            "origin": origin_of(folder, rel), "paper": "PandaLM (Wang et al. 2024)", "citation": CITATIONS["pandalm"],
            "model": "gpt-3.5-turbo", "method": "pairwise", "parser": "pairwise", "n": 1,
            "orders": {"ab": "response 1 shown first (the only order released)"},
            "raw": "gpt_result as released: '1', '2', 'Tie' or 'garbage' (unreadable, counted as a failure)",
        },
    }


LLMBAR_RUNS = [("GPT-4", "gpt-4"), ("ChatGPT-0301", "gpt-3.5-turbo-0301")]
LLMBAR_VARIANTS = {"Vanilla_NoRules": "Vanilla", "Vanilla": "Vanilla+Rules"}


def build_llmbar(root: Path, bundle: Bundle) -> dict[str, Any]:
    folder = "princeton-nlp__LLMBar"
    rel = "Dataset/LLMBar/Natural/dataset.json"
    path = root / folder / rel
    rows = read_json(path)
    check(len(rows) == 100, f"{path}: expected 100 pairs, found {len(rows)}")
    tables = PairTables("lb")
    pairs, prefs = [], []
    for i, r in enumerate(rows):
        check(r["label"] in (1, 2), f"{path}[{i}]: label {r['label']!r}, expected 1 or 2")
        check(r["output_1"] != r["output_2"], f"{path}[{i}]: identical outputs")
        doc_id, item_a = tables.item(path, f"[{i}]", r["input"], "unknown", r["output_1"])
        _, item_b = tables.item(path, f"[{i}]", r["input"], "unknown", r["output_2"])
        pair_id = f"llmbar-natural-{i:03d}"
        pairs.append({"pair_id": pair_id, "doc_id": doc_id, "item_a": item_a, "item_b": item_b,
                      "input": r["input"], "output_1": r["output_1"]})
        prefs.append({"pair_id": pair_id, "doc_id": doc_id, "item_a": item_a, "item_b": item_b,
                      "dimension": "preference", "annotator": "gold", "preferred": "a" if r["label"] == 1 else "b"})
    docs, items = tables.frames()
    origin = origin_of(folder, rel)
    manifest = {
        "id": "llmbar_natural",
        "name": "LLMBar Natural (100 pairs, gold label)",
        "task": "instruction following pairs",
        "dimensions": dims_json([PREFERENCE_DIM]),
        "description": (
            "LLMBar's Natural set: 100 instructions, each with two outputs of which exactly one follows the "
            "instruction (the gold label, checked by the authors; no ties). item_a is output_1. The systems that "
            "wrote the outputs are not released (system_id 'unknown'). The published runs hold GPT-4's and "
            "ChatGPT-0301's verdicts with the Vanilla and Vanilla+Rules prompts in both orders."
        ),
        "citation": CITATIONS["llmbar"],
        "origin": origin_text(origin),
        "origins": [origin],
        "meta": {"levels": ["pair"], "pairs": len(pairs), "annotators": ["gold"]},
    }
    add_dataset(bundle, manifest, {"documents": docs, "items": items,
                                   "human_scores": pd.DataFrame(columns=["item_id", "dimension", "score"]),
                                   "preferences": pd.DataFrame(prefs)})
    return {"pairs": pairs}


def _llmbar_run(root: Path, bundle: Bundle, llmbar: dict[str, Any], evaluator: str, model: str,
                variant: str) -> dict[str, Any]:
    folder = "princeton-nlp__LLMBar"
    rel = f"Dataset/LLMBar/Natural/evaluators/{evaluator}/{variant}/result.json"
    path = root / folder / rel
    rows = read_json(path)
    check(len(rows) == len(llmbar["pairs"]), f"{path}: expected {len(llmbar['pairs'])} records, found {len(rows)}")
    out = []
    for i, (r, p) in enumerate(zip(rows, llmbar["pairs"])):
        check(r["input"] == p["input"] and r["output_1"] == p["output_1"], f"{path}[{i}]: not the dataset's pair")
        sample = r["results"][0]  # statistics.json counts the first sample
        for key, order in (("swap = False", "ab"), ("swap = True", "ba")):
            first, second = (p["item_a"], p["item_b"]) if order == "ab" else (p["item_b"], p["item_a"])
            out.append({"pair_id": p["pair_id"], "doc_id": p["doc_id"], "item_first": first, "item_second": second,
                        "dimension": "preference", "order": order, "raw": sample[key]["completion"][0]})
    slug = variant.lower().replace("_", "-")
    run_id = f"llmbar_natural/llmbar-{model}-{slug}"
    frame = pd.DataFrame(out)
    bundle.parquet(run_file(run_id), frame)
    return {
        "run_id": run_id, "dataset_id": "llmbar_natural", "method": "pairwise", "model": model,
        "label": f"LLMBar authors · {model} · {LLMBAR_VARIANTS[variant]} (both orders)", "parser": "pairwise",
        "origin": "published", "created_at": "", "kind": "comparisons", "file": run_file(run_id), "rows": len(frame),
        "config": {
            "origin": origin_of(folder, rel), "paper": "LLMBar (Zeng et al. 2024)", "citation": CITATIONS["llmbar"],
            "model": model, "method": "pairwise", "parser": "pairwise", "n": 1, "prompt_strategy": variant,
            "orders": {"ab": "swap = False: output_1 shown as Output (a)", "ba": "swap = True: output_2 shown first"},
            "raw": "the completion of the first sample ('Output (a)' / 'Output (b)')",
        },
    }


def build_llmbar_runs(root: Path, bundle: Bundle, llmbar: dict[str, Any]) -> list[dict[str, Any]]:
    return [_llmbar_run(root, bundle, llmbar, evaluator, model, variant)
            for evaluator, model in LLMBAR_RUNS for variant in LLMBAR_VARIANTS]


# --------------------------------------------------------------------------------------------------------------------
# Published runs
# --------------------------------------------------------------------------------------------------------------------

SHEN_ITEM_RUNS = [
    # (evaluator folder, file method suffix, run slug, method, parser, label suffix)
    ("gpt-4-0314", "rts", "gpt-4-0314-rts", "rts", "rts", "RTS"),
    ("gpt-3.5-turbo-0301", "rts", "gpt-3.5-turbo-0301-rts", "rts", "rts", "RTS"),
    ("gpt-3.5-turbo-0301", "mcq", "gpt-3.5-turbo-0301-mcq", "mcq", "mcq", "MCQ"),
    ("gpt-3.5-turbo-0301", "stareval", "gpt-3.5-turbo-0301-stareval", "stareval", "stars", "StarEval"),
    ("gpt-3.5-turbo-0301", "altrts", "gpt-3.5-turbo-0301-altrts", "rts", "rts", "RTS2 (alt. prompt)"),
    ("gpt-3.5-turbo-0301", "altmcq", "gpt-3.5-turbo-0301-altmcq", "mcq", "mcq", "MCQ2 (alt. prompt)"),
    ("llama-2-7b-chat-hf", "rts", "llama-2-7b-chat-rts", "rts", "rts", "RTS"),
    ("llama-2-13b-chat-hf", "rts", "llama-2-13b-chat-rts", "rts", "rts", "RTS"),
    ("llama-2-70b-chat-hf", "rts", "llama-2-70b-chat-rts", "rts", "rts", "RTS"),
]

SHEN_PROMPT_NOTES = {
    "rts": "Reason-then-Score prompt (003 Table 1); dimension definitions supplemented with ChatGPT-generated phrases",
    "mcq": "Multiple-choice prompt (003 Table 2), options A-E each with a fixed reason, A = 1 .. E = 5",
    "stareval": "StarEval: the exact prompts of Wang et al. (2023a), one to five stars (003 App. B)",
    "altrts": "RTS2: RTS with the full SummEval dimension definitions (003 App. A) instead of ChatGPT phrases",
    "altmcq": "MCQ2: MCQ with the full SummEval dimension definitions (003 App. A) instead of ChatGPT phrases",
}


def run_file(run_id: str) -> str:
    return "runs/" + run_id.replace("/", "__") + ".parquet"


def read_reply_file(path: Path) -> tuple[dict[str, str], int]:
    """id -> reply, last line per id winning (Shen et al.'s code fills a dict line by line); + duplicates dropped."""
    replies: dict[str, str] = {}
    lines = 0
    for lineno, r in enumerate(read_jsonl(path), 1):
        check("id" in r and "resp" in r, f"{path}, record {lineno}: missing 'id' or 'resp'")
        check(isinstance(r["resp"], str), f"{path}, record {lineno}: resp is not text")
        replies[r["id"]] = r["resp"]
        lines += 1
    return replies, lines - len(replies)



def read_reply_usage(path: Path) -> dict[str, tuple[int, int]]:
    """id -> (prompt tokens, completion tokens) of the lines that carry Shen et al.'s ``prompt_len`` / ``total_len``
    (the OpenAI runs' files; the Llama files have none), last line per id winning as for the replies. Completion is
    total_len - prompt_len: the counts the authors' script recorded from each API reply."""
    usage: dict[str, tuple[int, int]] = {}
    for lineno, r in enumerate(read_jsonl(path), 1):
        if "prompt_len" not in r and "total_len" not in r:
            usage.pop(r.get("id"), None)  # the last line is the reply kept: a count of an earlier one is not its
            continue
        p, t = r.get("prompt_len"), r.get("total_len")
        check(isinstance(p, int) and isinstance(t, int) and 0 <= p <= t,
              f"{path}, record {lineno}: prompt_len / total_len are not token counts ({p!r}, {t!r})")
        usage[r["id"]] = (p, t - p)
    return usage


def _hundred_replies(base: Path, rel: str, dup_files: dict[str, int]) -> tuple[Path, dict[str, str]]:
    """One of Shen et al.'s reply files (100 SummEval documents), its duplicate lines counted in ``dup_files``."""
    path = base / rel
    check(path.is_file(), f"{path}: missing")
    replies, dups = read_reply_file(path)
    if dups:
        dup_files[rel] = dups
    check(len(replies) == 100, f"{path}: expected 100 distinct ids, found {len(replies)}")
    return path, replies

def build_shen_runs(root: Path, bundle: Bundle, summeval: dict[str, Any]) -> list[dict[str, Any]]:
    folder = "DAMO-NLP-SG__LLM_summeval"
    known_items = summeval["items"]
    runs = []
    for evaluator, suffix, slug, method, parser, label_suffix in SHEN_ITEM_RUNS:
        rows, dup_files = _shen_replies(root / folder, evaluator, suffix, known_items)
        usage = [r.pop("usage") for r in rows]
        frame = pd.DataFrame(rows).sort_values(["dimension", "item_id"], kind="stable")
        run_id = f"summeval/shen-{slug}"
        bundle.parquet(run_file(run_id), frame)
        entry = _shen_run_entry(folder, run_id, evaluator, suffix, method, parser, label_suffix, len(frame),
                                dup_files)
        entry["config"].update(_shen_usage(usage))
        runs.append(entry)
    return runs


def _shen_usage(usage: list[tuple[int, int] | None]) -> dict[str, Any]:
    """The run's recorded usage (its stats' token counts) when every reply carries Shen et al.'s counts, with where
    they come from; nothing when any reply lacks them (the Llama runs: no count was released)."""
    if not usage or any(u is None for u in usage):
        return {}
    prompt, completion = sum(u[0] for u in usage), sum(u[1] for u in usage)
    return {"stats": {"requests": len(usage), "prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
            "usage_source": "the prompt_len and total_len Shen et al. released with each reply (the API's token "
                            "counts as their script recorded them; completion = total_len - prompt_len), summed "
                            "over the replies kept (last line per id)"}


def _shen_replies(base: Path, evaluator: str, suffix: str,
                  known_items: Any) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One Shen et al. item run's replies (item_id, dimension, raw) from its per-system, per-dimension files, and
    the files whose duplicate lines were dropped (file -> lines)."""
    rows = []
    dup_files: dict[str, int] = {}
    for system_id in sorted(ABSTRACTIVE, key=natural_key):
        for dim in SUMMEVAL_DIMENSIONS:
            # Only <dim>_<method>.txt; `*_old` drafts and the empty fluency_cap.txt are not part of any run.
            rel = f"eval_model_generations/{evaluator}/eval_{system_id}_generations/{dim}_{suffix}.txt"
            path, replies = _hundred_replies(base, rel, dup_files)
            usage = read_reply_usage(path)
            for doc_id, resp in replies.items():
                item_id = f"{doc_id}/{system_id}"
                check(item_id in known_items, f"{path}: id {doc_id} is not a SummEval document")
                rows.append({"item_id": item_id, "dimension": dim, "raw": resp, "usage": usage.get(doc_id)})
    return rows, dup_files


def _shen_run_entry(folder: str, run_id: str, evaluator: str, suffix: str, method: str, parser: str,
                    label_suffix: str, n_rows: int, dup_files: dict[str, int]) -> dict[str, Any]:
    """The manifest entry of one Shen et al. item run: what it is, where it came from, how it is read."""
    model = evaluator.removesuffix("-hf")
    script = "llama_eval_multi_gpu.py" if evaluator.startswith("llama") else "eval_with_rts_or_mcq.py"
    return {
        "run_id": run_id,
        "dataset_id": "summeval",
        "method": method,
        "model": model,
        "label": f"Shen et al. · {model} · {label_suffix}",
        "parser": parser,
        "origin": "published",
        "created_at": "",
        "kind": "judgments",
        "file": run_file(run_id),
        "rows": n_rows,
        "config": {
            "origin": origin_of(folder, f"eval_model_generations/{evaluator}/eval_<system>_generations/"
                                        f"<dimension>_{suffix}.txt"),
            "paper": "003 (Shen et al. 2023)",
            "citation": CITATIONS["shen"],
            "model": model,
            "method": method,
            "prompt_variant": suffix,
            "prompt": SHEN_PROMPT_NOTES[suffix],
            "prompt_files": [f"{d}_{suffix}.txt" for d in SUMMEVAL_DIMENSIONS],
            "prompt_source": f"{script} in {SOURCES[folder]['repo']} (prompt text lives in that script; "
                             "the project copies no code)",
            "temperature": 0,
            "n": 1,
            "estimator": "single",
            "parser": parser,
            "scale": list(SHEN_SCALE),
            "options": "ABCDE" if parser == "mcq" else None,
            "systems": sorted(ABSTRACTIVE, key=natural_key),
            "items": 1200,
            "duplicate_lines_dropped": sum(dup_files.values()),
            "files_with_duplicate_lines": dup_files,
            "duplicate_rule": "last line per id wins (what the authors' dict-overwrite code does)",
            "note": "Replies to SummEval's lower-cased summaries; values are parsed at load time.",
        },
    }


def _shen_h2h_verdicts(base: Path, res_rel: str,
                       summeval: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The H2H run's replies, one row per challenge pair, dimension and presentation order, and the files whose
    duplicate lines were dropped (file -> lines)."""
    known_items = summeval["items"]
    rows = []
    dup_files: dict[str, int] = {}
    for a, b in summeval["challenge_pairs"]:
        for dim in SUMMEVAL_DIMENSIONS:
            for toggle, order in (("", "ab"), ("_toggle", "ba")):
                rel = f"{res_rel}/{a}-{b}_{dim}{toggle}.result"
                path, replies = _hundred_replies(base, rel, dup_files)
                for doc_id, resp in replies.items():
                    item_a, item_b = f"{doc_id}/{a}", f"{doc_id}/{b}"
                    check(item_a in known_items and item_b in known_items, f"{path}: unknown document {doc_id}")
                    # The plain file shows system a's summary first; `_toggle` swaps the positions (its
                    # human_score_1 still belongs to a), so there the first-shown summary is b's.
                    first, second = (item_a, item_b) if order == "ab" else (item_b, item_a)
                    rows.append({"pair_id": f"{doc_id}/{a}-{b}", "doc_id": doc_id, "item_first": first,
                                 "item_second": second, "dimension": dim, "order": order, "raw": resp})
    return rows, dup_files


def build_shen_h2h(root: Path, bundle: Bundle, summeval: dict[str, Any]) -> dict[str, Any]:
    folder = "DAMO-NLP-SG__LLM_summeval"
    res_rel = "comp_res/gpt-3.5-turbo-0301"
    rows, dup_files = _shen_h2h_verdicts(root / folder, res_rel, summeval)
    # M11-M12 inputs exist in comp_data (consistency, fluency) but no replies were released for them.
    extra = sorted(p.name for p in (root / folder / res_rel).glob("*.result")
                   if tuple(p.name.split("_")[0].split("-")) not in {tuple(x) for x in summeval["challenge_pairs"]})
    check(not extra, f"{root / folder / res_rel}: unexpected result files {extra}")
    extra_inputs = sorted(p.name for p in (root / folder / "comp_data").glob("M11-M12_*.txt"))
    frame = pd.DataFrame(rows).sort_values(["dimension", "pair_id", "order"], kind="stable")
    run_id = "summeval/shen-gpt-3.5-turbo-0301-h2h"
    bundle.parquet(run_file(run_id), frame)
    return {
        "run_id": run_id,
        "dataset_id": "summeval",
        "method": "h2h",
        "model": "gpt-3.5-turbo-0301",
        "label": "Shen et al. · gpt-3.5-turbo-0301 · H2H",
        "parser": "pairwise",
        "origin": "published",
        "created_at": "",
        "kind": "comparisons",
        "file": run_file(run_id),
        "rows": len(frame),
        "config": {
            "origin": origin_of(folder, f"{res_rel}/<a>-<b>_<dimension>[_toggle].result"),
            "paper": "003 (Shen et al. 2023)",
            "citation": CITATIONS["shen"],
            "model": "gpt-3.5-turbo-0301",
            "method": "h2h",
            "prompt": "Head-to-head prompt (003 Table 3): Summary #1 vs Summary #2, answer A (#1), B (#2) or C (tie)",
            "prompt_files": [f"<a>-<b>_{d}[_toggle].result" for d in SUMMEVAL_DIMENSIONS],
            "prompt_source": f"eval_with_h2h.py in {SOURCES[folder]['repo']} (prompt text lives in that script; "
                             "the project copies no code)",
            "temperature": 0,
            "n": 1,
            "parser": "pairwise",
            "verdict_letters": {"A": "first", "B": "second", "C": "tie"},
            "orders": {"ab": "plain file: system a shown first", "ba": "_toggle file: system b shown first"},
            "pairs": summeval["challenge_pairs"],
            "pair_set": "challenge (003 App. E)",
            "duplicate_lines_dropped": sum(dup_files.values()),
            "files_with_duplicate_lines": dup_files,
            "not_included": (
                f"comp_data also holds M11-M12 inputs ({', '.join(extra_inputs) or 'none'}), which are not among the "
                "11 challenge pairs; no replies for them were released, so nothing of them is bundled."
            ),
        },
    }


CHIANG_DIMS = {"coh": "coherence", "eng": "engagingness", "gro": "groundedness", "nat": "naturalness"}


def build_chiang_lee(root: Path, bundle: Bundle, topical: dict[str, Any]) -> dict[str, Any]:
    folder = "d223302__A-Closer-Look-To-LLM-Evaluation"
    key_to_item = topical["key_to_item"]
    scales = {name: [lo, hi] for name, lo, hi, _ in TOPICAL_DIMS}
    rows = []
    per_dim = {}
    templates = {}
    for short_name, dim in CHIANG_DIMS.items():
        rel = f"results/topical_chat/gpt3.5_{short_name}_geval.json"
        path = root / folder / rel
        records = read_json(path)
        seen = set()
        for i, r in enumerate(records):
            key = (r["source"], r["context"], r["system_id"])
            check(key in key_to_item, f"{path}[{i}]: record matches no Topical-Chat item")
            item_id = key_to_item[key]
            check(item_id not in seen, f"{path}[{i}]: duplicate record for {item_id}")
            seen.add(item_id)
            samples = r["all_responses"]
            check(isinstance(samples, list) and len(samples) == 20 and all(isinstance(s, str) for s in samples),
                  f"{path}[{i}]: all_responses is not a list of 20 replies")
            rows.append({"item_id": item_id, "dimension": dim, "raw": json.dumps(samples, ensure_ascii=False)})
        per_dim[dim] = len(seen)
        tpath = root / folder / f"prompts/topical_chat/{short_name}_geval.txt"
        templates[dim] = tpath.read_text(encoding="utf-8")
    frame = pd.DataFrame(rows).sort_values(["dimension", "item_id"], kind="stable")
    run_id = "topical_chat/chiang-lee-gpt-3.5-geval"
    bundle.parquet(run_file(run_id), frame)
    return {
        "run_id": run_id,
        "dataset_id": "topical_chat",
        "method": "geval",
        "model": "gpt-3.5-turbo",
        "label": "Chiang & Lee · gpt-3.5-turbo · G-Eval (n=20)",
        "parser": "form",
        "origin": "published",
        "created_at": "",
        "kind": "judgments",
        "file": run_file(run_id),
        "rows": len(frame),
        "config": {
            "origin": origin_of(folder, "results/topical_chat/gpt3.5_<dim>_geval.json"),
            "paper": "Chiang & Lee 2023 (G-Eval prompts of 000 on Topical-Chat)",
            "citation": "\n".join([CITATIONS["chiang_lee"], CITATIONS["geval"]]),
            "model": "gpt-3.5-turbo",
            "model_note": "the released files do not record the snapshot",
            "method": "geval",
            "prompt_files": [f"prompts/topical_chat/{s}_geval.txt" for s in CHIANG_DIMS],
            "prompt_templates": templates,
            "n": 20,
            "temperature": 1,
            "estimator": "sample-mean(n=20)",
            "parser": "form",
            "scales": scales,
            "records_per_dimension": per_dim,
            "note": ("raw is a JSON list of the 20 sampled replies; value = mean of the parsed samples (000 Eq. 1 "
                     "with empirical probabilities). A few failed calls were dropped by the authors, so some items "
                     "have no judgment for some dimensions (360 items per dimension in the dataset)."),
        },
    }


# --------------------------------------------------------------------------------------------------------------------
# README (the attribution file)
# --------------------------------------------------------------------------------------------------------------------

README_HEAD = """# Bundled data

Compact copies of public human-rating datasets and of LLM-judge replies released by their authors, built by
`python scripts/build_data.py` (deterministic; `--check` verifies these files). This file is the attribution: every
dataset and run below names its origin repository, the snapshot commit it was taken from, the license stated there
and what to cite. **Cite the original papers when you use these data.** Sources marked "none stated" carry no
license in their repositories (research data releases meant to be cited); check redistribution terms before
shipping them in a product of your own.

Layout: `datasets/<id>/dataset.json` (dimensions, description, citation, origin, meta, counts) and
`datasets/<id>/<table>.parquet` (zstd) with the column conventions of `evalcore/model.py`; `runs/manifest.json`
(every published run and its configuration) and `runs/<dataset>__<run>.parquet` holding the judges' raw replies only.
Scores and verdicts are derived: `evalcore.datasets.load_bundled_run(run_id, parse=...)` parses the replies with
`evalcore.parsers` under the requested mode ("robust" default, or "paper" to reproduce a paper's rule).
`parsed/<dataset>__<run>.<mode>.parquet`, written by `python scripts/build_parsed.py` (not by this script), holds
those parsed columns ahead of time, each file with a fingerprint of the parser and the replies it was made from; a
file that does not match is ignored and the replies are parsed again (evalcore/parsed_cache.py).
"""


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def render_readme(dataset_manifests: list[dict[str, Any]], runs: list[dict[str, Any]], sizes: dict[str, int]) -> str:
    out = [README_HEAD]
    out.append("\n## Sources\n")
    out.append("| repository | snapshot commit | license |\n|---|---|---|")
    for s in SOURCES.values():
        out.append(f"| https://github.com/{s['repo']} | `{s['commit']}` | {s['license']} |")
    out.append("\n## Datasets\n")
    for m in dataset_manifests:
        c = m["counts"]
        out.append(f"### `{m['id']}` - {m['name']}\n")
        out.append(f"{m['description']}\n")
        out.append(f"- Size: {plural(c['items'], 'item')}, {plural(c['documents'], 'document')}, "
                   f"{plural(c['systems'], 'system')}, {plural(len(m['dimensions']), 'dimension')}"
                   + (f", {c['annotations']} per-annotator ratings" if c["annotations"] else "")
                   + (f", {c['preferences']} pairwise judgments" if c["preferences"] else "") + ".")
        out.append("- Dimensions: " + ", ".join(f"{d['name']} ({d['scale_min']:g}-{d['scale_max']:g})"
                                                 for d in m["dimensions"]) + ".")
        for o in m["origins"]:
            out.append(f"- Origin: https://github.com/{o['repo']} at `{o['commit']}`, `{o['path']}`; "
                       f"license: {o['license']}.")
        out.append("- Cite:")
        for line in m["citation"].split("\n"):
            out.append(f"  - {line}")
        out.append("")
    out.append("## Published runs (raw replies)\n")
    out.append("| run id | label | replies | origin path | commit |\n|---|---|---|---|---|")
    for r in runs:
        o = r["config"]["origin"]
        out.append(f"| `{r['run_id']}` | {r['label']} | {r['rows']} | `{o['repo']}/{o['path']}` | "
                   f"`{o['commit'][:12]}` |")
    out.append("")
    out.append("Shen et al.'s runs: cite " + CITATIONS["shen"] + " Reply files with duplicate lines keep the last "
               "line per id, as the authors' code does (counts in each run's config). Their `*_old` drafts and the "
               "empty `fluency_cap.txt` are not included. H2H replies exist for the 11 challenge pairs only (the "
               "M11-M12 inputs in `comp_data/` have no released replies).\n")
    out.append("Chiang & Lee's run: cite " + CITATIONS["chiang_lee"] + " and " + CITATIONS["geval"] + " 20 samples "
               "per item at temperature 1; a few items per dimension are absent because the authors dropped "
               "failed calls.\n")
    out.append("PandaLM's run: cite " + CITATIONS["pandalm"] + " ChatGPT's verdicts were released for one order "
               "(response 1 first); 25 verdicts read 'garbage' and are counted as unreadable, never as a tie.\n")
    out.append("LLMBar's runs: cite " + CITATIONS["llmbar"] + " Both orders of the first sample of each record, "
               "which is what the authors' statistics.json counts.\n")
    out.append("## Files\n")
    out.append("| file | bytes |\n|---|---|")
    for path in sorted(sizes):
        out.append(f"| `{path}` | {sizes[path]} |")
    out.append(f"| total (excluding this README) | {sum(sizes.values())} |")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------------------------


def build(root: Path) -> dict[str, bytes]:
    check((root / "neulab__BARTScore").is_dir(), f"{root}: not the reference data folder (no neulab__BARTScore/)")
    bundle = Bundle()
    summeval = build_summeval(root, bundle)
    topical = build_topical_chat(root, bundle)
    build_qags(root, bundle, "cnndm")
    build_qags(root, bundle, "xsum")
    build_fed(root, bundle)
    build_zhang(root, bundle)
    runs = build_shen_runs(root, bundle, summeval)
    runs.append(build_shen_h2h(root, bundle, summeval))
    runs.append(build_chiang_lee(root, bundle, topical))
    pandalm = build_pandalm(root, bundle)
    runs.append(build_pandalm_gpt(root, bundle, pandalm))
    runs += build_llmbar_runs(root, bundle, build_llmbar(root, bundle))
    bundle.json("runs/manifest.json", {"runs": runs})
    manifests = [json.loads(bundle.files[f"datasets/{d}/dataset.json"]) for d in
                 ("summeval", "topical_chat", "qags_cnndm", "qags_xsum", "fed_dialogue", "zhang_pairs", "pandalm",
                  "llmbar_natural")]
    sizes = {k: len(v) for k, v in bundle.files.items()}
    bundle.text("README.md", render_readme(manifests, runs, sizes))
    return bundle.files


def managed(out: Path) -> list[Path]:
    """Files under `out` that this script owns (and may therefore delete when stale)."""
    found = [p for p in (out / "datasets").rglob("*") if p.is_file()] if (out / "datasets").exists() else []
    found += [p for p in (out / "runs").rglob("*") if p.is_file()] if (out / "runs").exists() else []
    if (out / "README.md").exists():
        found.append(out / "README.md")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=DEFAULT_SOURCE_DIR, help="reference data folder (read only)")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "data", help="output folder (default: <repo>/data)")
    ap.add_argument("--check", action="store_true", help="verify the files on disk instead of writing them")
    args = ap.parse_args(argv)
    try:
        files = build(args.shared)
    except BuildError as exc:
        print(f"build_data: {exc}", file=sys.stderr)
        return 1
    out: Path = args.out
    if args.check:
        bad = [rel for rel, data in sorted(files.items())
               if not (out / rel).is_file() or (out / rel).read_bytes() != data]
        stale = sorted(str(p.relative_to(out)) for p in managed(out) if str(p.relative_to(out)) not in files)
        for rel in bad:
            print(f"differs or missing: {out / rel}", file=sys.stderr)
        for rel in stale:
            print(f"not produced by the build: {out / rel}", file=sys.stderr)
        if bad or stale:
            return 1
        print(f"ok: {len(files)} files in {out} are what the build produces")
        return 0
    # Write next to the target, then swap in, so a failure never leaves a half-written data folder.
    staging = out.parent / (out.name + ".staging")
    if staging.exists():
        shutil.rmtree(staging)
    for rel, data in files.items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    out.mkdir(parents=True, exist_ok=True)
    for p in managed(out):
        if str(p.relative_to(out)) not in files:
            p.unlink()
    for rel in files:
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).replace(target)
    shutil.rmtree(staging)
    total = sum(len(v) for v in files.values())
    print(f"wrote {len(files)} files, {total / 1e6:.2f} MB, to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
