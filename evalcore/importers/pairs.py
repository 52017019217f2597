"""Pairwise preference files (MT-Bench human judgments, Chatbot Arena, PandaLM, AlpacaEval-style annotations) and
a judge's pairwise verdicts from another tool.

Preferences, long or wide. One row per pair (or per vote): the prompt (``prompt`` / ``question`` / ``instruction``,
plus ``input`` appended when present), the two outputs (``output_a`` / ``answer_a`` / ``response1``, ...), optional
``model_a`` / ``model_b``, ``pair_id``, ``turn`` and ``annotator`` (``judge``), and the vote: one winner column
(``winner`` / ``label`` / ``preference``) in the long form, or several, one per annotator, in the wide form
(PandaLM's ``annotator1..3``; the column name is the annotator). Winner values: ``a`` / ``b`` / ``tie``,
``model_a`` / ``model_b``, ``1`` / ``2`` with ``0`` or ``tie`` for a tie, and MT-Bench's ``tie (bothbad)`` and
``tie (inconsistent)`` (ties; the variant is kept in the preferences' ``tie_variant`` column).

The prompt (with its turn) is the document; the same (prompt, model, output) under several pairs is one item; a pair
is the two items, whichever was shown as A (a vote on the swapped pair is flipped onto the first orientation seen).
Every problem (unknown winner value, identical outputs, a missing column) is reported with file, row and column and
nothing is imported.

Verdicts: one row per pair and presentation order: ``pair_id``, ``order`` (``ab``: output A shown first; ``ba``),
``verdict`` naming the output (``a`` / ``b`` / ``tie`` or ``1`` / ``2`` / ``0``; blank = the judge's reply could not
be read: a counted failure, never a guess), optional ``raw`` (the reply).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from evalcore.importers.problems import Problems
from evalcore.importers.readers import open_upload
from evalcore.model import COMPARISON_COLUMNS, PREFERENCE_COLUMNS, Dataset, Dimension, Run, is_missing

PROMPT_NAMES = ("prompt", "question", "instruction", "query", "user_prompt")
INPUT_NAMES = ("input", "context")
OUTPUT_A_NAMES = ("output_a", "answer_a", "response_a", "response1", "response_1", "output_1", "output1",
                  "completion_a", "text_a")
OUTPUT_B_NAMES = ("output_b", "answer_b", "response_b", "response2", "response_2", "output_2", "output2",
                  "completion_b", "text_b")
MODEL_A_NAMES = ("model_a", "model1", "model_1", "system_a", "generator_a")
MODEL_B_NAMES = ("model_b", "model2", "model_2", "system_b", "generator_b")
PAIR_ID_NAMES = ("pair_id",)
TURN_NAMES = ("turn",)
ANNOTATOR_NAMES = ("annotator", "judge", "rater", "evaluator", "worker", "annotator_id", "judge_id", "rater_id")
WINNER_NAMES = ("winner", "label", "preference", "preferred", "choice", "vote")
WIDE_WINNER = re.compile(r"^(annotator|rater|judge|human|worker)[ _-]?\d+$", re.IGNORECASE)

# Winner values -> (preferred, tie variant). Matched after lower-casing and stripping.
WINNER_VALUES: dict[str, tuple[str, str]] = {
    "a": ("a", ""), "b": ("b", ""), "tie": ("tie", ""),
    "model_a": ("a", ""), "model_b": ("b", ""),
    "1": ("a", ""), "2": ("b", ""), "0": ("tie", ""),
    "tie (bothbad)": ("tie", "bothbad"), "tie (inconsistent)": ("tie", "inconsistent"),
}
VERDICT_VALUES = {"a": "a", "b": "b", "tie": "tie", "1": "a", "2": "b", "0": "tie"}
DEFAULT_DIMENSION = "preference"


def _find(columns: list[str], names: tuple[str, ...]) -> str | None:
    lower = {c.strip().lower(): c for c in columns}
    for n in names:
        if n in lower:
            return lower[n]
    return None


@dataclass
class PairMapping:
    """Which column plays which role (None: absent)."""

    prompt: str | None
    output_a: str | None
    output_b: str | None
    input: str | None = None
    model_a: str | None = None
    model_b: str | None = None
    pair_id: str | None = None
    turn: str | None = None
    annotator: str | None = None
    winners: list[str] = field(default_factory=list)

    @property
    def wide(self) -> bool:
        return len(self.winners) > 1

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def guess_pair_mapping(columns, winners: list[str] | None = None) -> PairMapping:
    """The roles guessed from the column names (``winners`` given: those columns hold the votes)."""
    cols = [str(c) for c in columns]
    prompt = _find(cols, PROMPT_NAMES)
    extra = _find([c for c in cols if c != prompt], INPUT_NAMES) if prompt else None
    if winners:
        wins = list(winners)
    else:
        wide = [c for c in cols if WIDE_WINNER.match(c.strip())]
        one = _find(cols, WINNER_NAMES)
        wins = wide if len(wide) > 1 else ([one] if one else [])
    annotator = _find(cols, ANNOTATOR_NAMES)
    if annotator in wins:
        annotator = None
    return PairMapping(prompt=prompt, output_a=_find(cols, OUTPUT_A_NAMES), output_b=_find(cols, OUTPUT_B_NAMES),
                       input=extra, model_a=_find(cols, MODEL_A_NAMES), model_b=_find(cols, MODEL_B_NAMES),
                       pair_id=_find(cols, PAIR_ID_NAMES), turn=_find(cols, TURN_NAMES),
                       annotator=None if len(wins) > 1 else annotator, winners=wins)


def looks_pairwise(columns) -> bool:
    """Whether a table reads as pairwise preferences: a prompt, two outputs and at least one winner column."""
    m = guess_pair_mapping(columns)
    return bool(m.prompt and m.output_a and m.output_b and m.winners)


@dataclass
class PairImport:
    dataset: Dataset
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The CLI's --json document."""
        p = self.dataset.preferences
        models = sorted({s for s in self.dataset.items["system_id"] if s})
        return {"dataset": self.dataset.id, "pairs": int(p["pair_id"].nunique()), "votes": int(len(p)),
                "annotators": sorted(p["annotator"].unique().tolist()), "models": models,
                "warnings": list(self.warnings)}


def _text(v: Any) -> str:
    if is_missing(v):
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _winner(v: Any) -> tuple[str, str] | None:
    """(preferred, variant), or None for a blank cell; KeyError for a value that is no winner."""
    t = _text(v).strip().lower()
    if not t:
        return None
    return WINNER_VALUES[t]


def _check_roles(m: PairMapping, problems: Problems, columns: list[str]) -> None:
    for role, col, names in (("prompt", m.prompt, PROMPT_NAMES), ("output A", m.output_a, OUTPUT_A_NAMES),
                             ("output B", m.output_b, OUTPUT_B_NAMES)):
        if col is None:
            problems.add("-", "-", f"no {role} column: name one of {', '.join(names)}", block=Problems.READ)
    if not m.winners:
        problems.add("-", "-", f"no winner column: name one {', '.join(WINNER_NAMES)}, or give --winner COLUMN "
                               "(several for one column per annotator)", block=Problems.READ)
    for w in m.winners:
        if w not in columns:
            problems.add("-", w, f"--winner names no column of the file (columns: {', '.join(columns)})",
                         block=Problems.READ)


class _Builder:
    """Documents, items and pairs as the rows are read."""

    def __init__(self) -> None:
        self.documents: dict[str, str] = {}
        self.items: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.pairs: dict[tuple, tuple[str, str, str]] = {}  # key -> (pair_id, item_a, item_b)
        self.named_pairs: dict[str, tuple[str, frozenset]] = {}

    def doc(self, prompt: str, turn: str) -> str:
        doc_id = "doc-" + hashlib.sha1(f"{prompt}\x1f{turn}".encode("utf-8")).hexdigest()[:10]
        self.documents.setdefault(doc_id, prompt if not turn else f"{prompt}\n\n[turn {turn}]")
        return doc_id

    def item(self, doc_id: str, model: str, output: str) -> str:
        key = (doc_id, model, output)
        if key not in self.items:
            digest = hashlib.sha1(f"{model}\x1f{output}".encode("utf-8")).hexdigest()[:8]
            self.items[key] = {"item_id": f"{doc_id}/{digest}", "doc_id": doc_id, "system_id": model,
                               "output": output}
        return self.items[key]["item_id"]

    def pair(self, doc_id: str, a: str, b: str, given_id: str) -> tuple[str, bool]:
        """(pair id, flipped): the same two items are one pair whichever was shown as A."""
        key = (doc_id, frozenset((a, b)))
        if key not in self.pairs:
            pid = given_id or f"{doc_id}/{len(self.pairs) + 1:05d}"
            self.pairs[key] = (pid, a, b)
        pid, first_a, _ = self.pairs[key]
        return pid, first_a != a


def _read_rows(frame: pd.DataFrame, m: PairMapping, problems: Problems, dimension: str) -> tuple[_Builder, list]:
    b = _Builder()
    prefs: list[dict[str, Any]] = []
    seen_vote: dict[tuple[str, str], Any] = {}
    anonymous: dict[str, int] = {}
    for pos, (row_no, r) in enumerate(frame.iterrows()):
        prompt = _text(r[m.prompt])
        if m.input and _text(r[m.input]).strip():
            prompt += "\n\n" + _text(r[m.input])
        out_a, out_b = _text(r[m.output_a]), _text(r[m.output_b])
        if out_a == out_b:
            problems.add(row_no, m.output_b, f"the two outputs are identical (column {m.output_a!r} holds the same "
                                             "text): a preference between them means nothing")
            continue
        turn = _text(r[m.turn]) if m.turn else ""
        doc_id = b.doc(prompt, turn)
        ia = b.item(doc_id, _text(r[m.model_a]) if m.model_a else "", out_a)
        ib = b.item(doc_id, _text(r[m.model_b]) if m.model_b else "", out_b)
        given = _text(r[m.pair_id]).strip() if m.pair_id else ""
        if given and b.named_pairs.setdefault(given, (doc_id, frozenset((ia, ib)))) != (doc_id, frozenset((ia, ib))):
            problems.add(row_no, m.pair_id, f"pair id {given!r} names another pair of outputs (or another prompt) "
                                            "than on its first row")
            continue
        pid, flipped = b.pair(doc_id, ia, ib, given)
        for col in m.winners:
            try:
                w = _winner(r[col])
            except KeyError:
                problems.add(row_no, col, f"winner {_text(r[col])!r} is not a known value (a, b, tie, model_a, "
                                          "model_b, 1, 2, 0, tie (bothbad), tie (inconsistent))")
                continue
            if w is None:
                continue
            preferred, variant = w
            if flipped and preferred in ("a", "b"):
                preferred = "b" if preferred == "a" else "a"
            if m.wide:
                annotator = col
            elif m.annotator:
                annotator = _text(r[m.annotator])
            else:  # anonymous votes (Arena-style): the k-th vote on a pair is "vote-k"
                anonymous[pid] = anonymous.get(pid, 0) + 1
                annotator = f"vote-{anonymous[pid]}"
            if (pid, annotator) in seen_vote:
                problems.add(row_no, col, f"annotator {annotator!r} already voted on this pair "
                                          f"(row {seen_vote[(pid, annotator)]})")
                continue
            seen_vote[(pid, annotator)] = row_no
            a_id, b_id = b.pairs[(doc_id, frozenset((ia, ib)))][1:]
            prefs.append({"pair_id": pid, "doc_id": doc_id, "item_a": a_id, "item_b": b_id, "dimension": dimension,
                          "annotator": annotator, "preferred": preferred, "tie_variant": variant})
    return b, prefs


def import_pairs(source: Any, *, name: str | None = None, winners: list[str] | None = None,
                 dimension: str = DEFAULT_DIMENSION, filename: str | None = None,
                 table: pd.DataFrame | None = None) -> PairImport:
    """Read a pairwise preference file into a Dataset (not saved), or raise DatasetValidationError listing every
    problem (file, row, column)."""
    upload = open_upload(source, filename, table=table)
    frame, problems = upload.frame, upload.problems
    columns = [str(c) for c in frame.columns]
    m = guess_pair_mapping(columns, winners)
    _check_roles(m, problems, columns)
    upload.raise_if_problems()
    b, prefs = _read_rows(frame, m, problems, dimension)
    if not prefs and not problems:
        problems.add("-", ",".join(m.winners), "no votes: every winner cell is blank", block=Problems.AFTER)
    upload.raise_if_problems()
    digest = hashlib.sha256(upload.data + json.dumps(m.to_dict(), sort_keys=True).encode() + dimension.encode())
    dataset_id = f"user-{digest.hexdigest()[:12]}"
    p = pd.DataFrame(prefs, columns=PREFERENCE_COLUMNS + ["tie_variant"])
    items = pd.DataFrame(list(b.items.values()))
    docs = pd.DataFrame([{"doc_id": d, "source": s, "references": [], "context": ""} for d, s in b.documents.items()])
    fname = Path(upload.name).name
    warnings = []
    blank = len(frame) * len(m.winners) - len(p)
    if blank:
        warnings.append(f"{blank} blank winner cells were taken as no vote")
    if not m.wide and not m.annotator:
        warnings.append("no annotator column: the votes are anonymous, the k-th vote on a pair is counted as "
                        "annotator 'vote-k'")
    if not (m.model_a and m.model_b):
        warnings.append("no model_a / model_b columns: per-model win rates and self-preference need them")
    ds = Dataset(
        id=dataset_id, name=name or Path(fname).stem, task="pairwise preferences",
        dimensions=[Dimension(dimension, 0, 1, "Which of two outputs is better (a / b / tie): see the preferences.")],
        documents=docs, items=items, human_scores=pd.DataFrame(columns=["item_id", "dimension", "score"]),
        preferences=p,
        description=f"Imported from {fname}: {p['pair_id'].nunique()} pairs, {len(p)} votes by "
                    f"{p['annotator'].nunique()} annotators over {len(docs)} prompts.",
        origin=f"uploaded file {fname} (sha256 {hashlib.sha256(upload.data).hexdigest()})",
        meta={"source_file": fname, "format": upload.format, "shape": "pairwise", "pair_mapping": m.to_dict(),
              "import_warnings": warnings},
    )
    return PairImport(ds, warnings)


def save_pairs(result: PairImport, store: Any = None, *, owner: str | None = None) -> None:
    if store is None:
        from evalcore.store import default_store

        store = default_store()
    store.save_dataset(result.dataset, overwrite=True, owner=owner)


# ---------------------------------------------------------------------------------------------- verdicts


def _verdict_roles(columns: list[str], problems: Problems) -> dict[str, str | None]:
    roles = {"pair_id": _find(columns, ("pair_id", "id")), "order": _find(columns, ("order",)),
             "verdict": _find(columns, ("verdict", "winner", "preferred")), "raw": _find(columns, ("raw", "reply"))}
    for k in ("pair_id", "order", "verdict"):
        if roles[k] is None:
            problems.add("-", "-", f"no {k!r} column (a verdict file has pair_id, order, verdict and optionally raw)",
                         block=Problems.READ)
    return roles


def import_verdicts(source: Any, dataset: Dataset, *, name: str, dimension: str | None = None,
                    filename: str | None = None) -> Run:
    """A judge's pairwise verdicts on the pairs of ``dataset`` as a Run (not saved), or DatasetValidationError."""
    upload = open_upload(source, filename)
    frame, problems = upload.frame, upload.problems
    roles = _verdict_roles([str(c) for c in frame.columns], problems)
    upload.raise_if_problems()
    dims = sorted(set(dataset.preferences["dimension"])) or dataset.dimension_names
    dim = dimension or (DEFAULT_DIMENSION if DEFAULT_DIMENSION in dims else dims[0])
    pairs = dataset.preferences[dataset.preferences["dimension"] == dim].drop_duplicates("pair_id")
    pairs = pairs.set_index("pair_id")
    rows, unknown = [], {}
    for row_no, r in frame.iterrows():
        pid, order = _text(r[roles["pair_id"]]).strip(), _text(r[roles["order"]]).strip().lower()
        if pid not in pairs.index:
            unknown.setdefault(pid, row_no)
            continue
        if order not in ("ab", "ba"):
            problems.add(row_no, roles["order"], f"order {order!r} is neither 'ab' (output A shown first) nor 'ba'")
            continue
        text = _text(r[roles["verdict"]]).strip().lower()
        if text and text not in VERDICT_VALUES:
            problems.add(row_no, roles["verdict"], f"verdict {text!r} is not a, b, tie, 1, 2 or 0 (leave it blank "
                                                   "for a reply that could not be read)")
            continue
        p = pairs.loc[pid]
        first, second = (p["item_a"], p["item_b"]) if order == "ab" else (p["item_b"], p["item_a"])
        named = VERDICT_VALUES.get(text)
        verdict = None if named is None else "tie" if named == "tie" else (
            "first" if (named == "a") == (order == "ab") else "second")
        raw = _text(r[roles["raw"]]) if roles["raw"] else text
        rows.append({"pair_id": pid, "doc_id": p["doc_id"], "item_first": first, "item_second": second,
                     "dimension": dim, "order": order, "raw": raw, "verdict": verdict,
                     "status": "ok" if verdict else "failed", "reason": "" if verdict else "no verdict in the file"})
    if unknown:
        shown = ", ".join(f"{k!r} ({problems.unit} {v})" for k, v in list(unknown.items())[:10])
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        problems.add("-", roles["pair_id"], f"{len(unknown)} pair ids are not pairs of dataset {dataset.id!r}: "
                                            f"{shown}{more}", block=Problems.AFTER)
    dup = pd.DataFrame(rows).duplicated(["pair_id", "order"]) if rows else pd.Series(dtype=bool)
    if dup.any():
        first_dup = rows[int(dup.to_numpy().nonzero()[0][0])]
        problems.add("-", roles["pair_id"], f"pair {first_dup['pair_id']!r} has two verdicts in order "
                                            f"{first_dup['order']!r}", block=Problems.AFTER)
    upload.raise_if_problems()
    digest = hashlib.sha256(upload.data).hexdigest()
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "verdicts"
    return Run(run_id=f"{dataset.id}/{slug}-{digest[:8]}", dataset_id=dataset.id, method="pairwise", model=name,
               label=name, parser="pairwise", origin="local",
               config={"method": "pairwise", "imported_from": Path(upload.name).name, "sha256": digest,
                       "orders": sorted({r["order"] for r in rows})},
               comparisons=pd.DataFrame(rows, columns=COMPARISON_COLUMNS))
