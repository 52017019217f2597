"""Published preference sets whose vote is not a winner column: RewardBench's chosen / rejected pairs and HelpSteer3's
signed preference score with its annotators' own scores. Each is turned into the table :mod:`evalcore.importers.pairs`
reads (a prompt, output A, output B, one winner column per annotator) before the pairs are read; JudgeBench's
``label`` ("A>B" / "B>A") and LMSYS's one-hot columns need no such step (their values are read by pairs.py).

RewardBench (allenai/reward-bench, its dataset card: ``prompt, chosen, rejected, chosen_model, rejected_model,
subset, id``): the chosen response is the preferred one. Shown always as A, a judge's position bias would read as
accuracy, so each pair's chosen response is placed as A or B by the parity of the first byte of the sha256 of its
texts (prompt, chosen, rejected): the same file always gives the same positions, about half each way, and the import
says how many went each way.

HelpSteer3 (nvidia/HelpSteer3, its dataset card: ``context`` a list of {role, content} turns ending with the user's,
``response1``, ``response2``, ``overall_preference`` an integer -3..3 where a negative score prefers response1, 0
neither, and ``individual_preference`` a list of each annotator's {score, reasoning, ...} on the same scale): each
annotator's score is that annotator's vote (annotator-1, annotator-2, ... in the list's order); the overall score, the
annotators' aggregate, is the vote only when the file has no individual scores (counting both would count each
annotator twice). The strength (1, 2, 3) is not kept: a vote is a / b / tie.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from evalcore.importers.pair_mapping import PairMapping
from evalcore.importers.problems import Problems

CHOSEN_NAMES = ("chosen",)
REJECTED_NAMES = ("rejected",)
CHOSEN_MODEL_NAMES = ("chosen_model",)
REJECTED_MODEL_NAMES = ("rejected_model",)
SIGNED_NAMES = ("overall_preference",)
INDIVIDUAL_NAMES = ("individual_preference",)
CONTEXT_NAMES = ("context",)
REWARDBENCH = "RewardBench's layout (prompt, chosen, rejected)"
HELPSTEER3 = "HelpSteer3's layout (context, response1, response2, overall_preference)"
# pairs.py's column reader: a column's cells as text ("" where missing, or for no column)
Texts: TypeAlias = Callable[[pd.DataFrame, "str | None"], pd.Series]


def layout_of(m: PairMapping) -> str | None:
    """Which published layout a pair mapping reads (None: a winner column or one-hot columns hold the vote)."""
    if m.chosen or m.rejected:
        return REWARDBENCH
    if m.signed or m.individual:
        return HELPSTEER3
    return None


def check_layout(m: PairMapping, columns: list[str], problems: Problems, door: str) -> None:
    """The one field a file of a published layout lacks, named with what to give instead."""
    page = door == "page"
    if layout_of(m) == REWARDBENCH:
        for role, col, names in (("prompt", m.prompt, ("prompt",)), ("chosen (preferred)", m.chosen, CHOSEN_NAMES),
                                 ("rejected", m.rejected, REJECTED_NAMES)):
            if col is None:
                problems.add("-", "-", f"{REWARDBENCH}: no {names[0]!r} column ({_WHAT[role]}): " + (
                    f"give a column the role {role!r} in the role menu above" if page else
                    f"rename the column that holds it to {names[0]!r}"), block=Problems.READ)
    elif layout_of(m) == HELPSTEER3:
        for role, col, name in (("prompt", m.prompt, "context"), ("output A", m.output_a, "response1"),
                                ("output B", m.output_b, "response2")):
            if col is None:
                problems.add("-", "-", f"{HELPSTEER3}: no {name!r} column ({_WHAT[role]}): " + (
                    f"give a column the role {role!r} in the role menu above" if page else
                    f"rename the column that holds it to {name!r}"), block=Problems.READ)
    for col in (m.chosen, m.rejected, m.signed, m.individual):
        if col is not None and col not in columns:
            problems.add("-", col, f"no column {col!r} in the file (columns: {', '.join(columns)})",
                         block=Problems.READ)


_WHAT = {"prompt": "the prompt, or the conversation before the responses",
         "chosen (preferred)": "the preferred response", "rejected": "the response not preferred",
         "output A": "the first response", "output B": "the second response"}


def chosen_as_b(prompt: str, chosen: str, rejected: str) -> bool:
    """Whether the chosen response is shown as B: the parity of the sha256's first byte of the pair's texts."""
    digest = hashlib.sha256("\x00".join((prompt, chosen, rejected)).encode("utf-8")).digest()
    return bool(digest[0] & 1)


def chosen_frame(frame: pd.DataFrame, m: PairMapping, texts: Texts) -> tuple[pd.DataFrame, PairMapping, list[str]]:
    """RewardBench's chosen / rejected rows as output A / output B and a winner column naming the chosen one's
    position (see the module's note); the models follow their responses. ``texts``: pairs.py's column reader."""
    p, c, r = texts(frame, m.prompt), texts(frame, m.chosen), texts(frame, m.rejected)
    as_b = np.array([chosen_as_b(*t) for t in zip(p, c, r)], dtype=bool)
    out = pd.DataFrame({"prompt": p, "output_a": np.where(as_b, r, c), "output_b": np.where(as_b, c, r),
                        "chosen": np.where(as_b, "b", "a")}, index=frame.index).astype("str")
    cols: dict[str, Any] = {"prompt": "prompt", "output_a": "output_a", "output_b": "output_b", "winners": ["chosen"],
            "chosen": None, "rejected": None}
    if m.model_a and m.model_b:
        ma, mb = texts(frame, m.model_a), texts(frame, m.model_b)
        out["model_a"], out["model_b"] = np.where(as_b, mb, ma), np.where(as_b, ma, mb)
        cols.update(model_a="model_a", model_b="model_b")
    if m.pair_id:
        out["pair_id"] = texts(frame, m.pair_id).to_numpy()
        cols["pair_id"] = "pair_id"
    n_b = int(as_b.sum())
    note = (f"{REWARDBENCH}: the chosen response is the preferred one; it is placed as A or B by the parity of the "
            f"sha256 of the pair's texts (the same file gives the same positions): {len(out) - n_b} as A, {n_b} "
            "as B")
    return out, replace(m, **cols), [note]


def _messages_text(cell: object) -> str | None:
    """HelpSteer3's context (a list of {role, content}) as text: one user turn as itself, more as "User: ..." /
    "Assistant: ..." paragraphs; None when the cell is no such list."""
    if isinstance(cell, np.ndarray):
        cell = cell.tolist()
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except ValueError:
            return None
    if not isinstance(cell, list) or not cell or not all(isinstance(t, dict) and "content" in t for t in cell):
        return None
    if len(cell) == 1:
        return str(cell[0]["content"])
    return "\n\n".join(f"{str(t.get('role', '')).capitalize()}: {t['content']}" for t in cell)


def _signed_vote(v: object) -> str | None:
    """A -3..3 preference as a / b / tie (negative: the first response); None when it is no such integer."""
    number: Any = v  # whatever the cell holds: float() says whether it is a number
    try:
        x = float(number)
    except (TypeError, ValueError):
        return None
    if not x.is_integer() or not -3 <= x <= 3:
        return None
    return "a" if x < 0 else "b" if x > 0 else "tie"


def _individual_scores(cell: object) -> list[object] | None:
    if isinstance(cell, np.ndarray):
        cell = cell.tolist()
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except ValueError:
            return None
    if not isinstance(cell, list) or not all(isinstance(t, dict) and "score" in t for t in cell):
        return None
    return [t["score"] for t in cell]


def signed_frame(frame: pd.DataFrame, m: PairMapping, problems: Problems, texts: Texts
                 ) -> tuple[pd.DataFrame, PairMapping, list[str]]:
    """HelpSteer3's rows with the context decoded and one winner column per annotator (or the overall score's)."""
    prompt, signed = m.prompt, m.signed
    assert prompt is not None, "check_layout has reported a HelpSteer3 file without a context column"
    out = frame.copy(deep=False)
    notes = []
    decoded = [_messages_text(v) for v in frame[prompt]]
    if any(d is not None for d in decoded):
        for row, d, v in zip(frame.index, decoded, frame[prompt]):
            if d is None and texts(frame.loc[[row]], prompt).iloc[0].strip():
                problems.add(int(row), prompt, "not a list of {role, content} turns, as the column's other cells "
                                               "are")
        out[prompt] = pd.Series([d or "" for d in decoded], index=frame.index, dtype="str")
        notes.append(f"{HELPSTEER3}: the context's turns decoded to text ('User: ...', 'Assistant: ...')")
    if m.individual:
        votes = _individual_columns(frame, m.individual, problems)
        notes.append(f"each annotator's score in {m.individual!r} is that annotator's vote (negative: response1); "
                     f"{m.signed or 'the overall preference'!s}, their aggregate, is not counted again")
    else:
        assert signed is not None, "layout_of reads HelpSteer3's layout from a signed or an individual column"
        votes = {signed: [_signed(frame, r, signed, v, problems) for r, v in zip(frame.index, frame[signed])]}
        notes.append(f"the vote is {signed!r}: -3..3, negative prefers response1, 0 neither (the strength is not "
                     "kept)")
    for name, cells in votes.items():
        out[name] = pd.Series(cells, index=frame.index, dtype="str")
    wins = list(votes)
    return out, replace(m, winners=wins, annotator=None if len(wins) > 1 else m.annotator, signed=None,
                        individual=None), notes


def _signed(frame: pd.DataFrame, row: int, col: str, v: object, problems: Problems) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, str) and not v.strip()):
        return ""
    vote = _signed_vote(v)
    if vote is None:
        problems.add(int(row), col, f"{v!r} is not an integer from -3 to 3 (negative: response1 is better)")
    return vote or ""


def _individual_columns(frame: pd.DataFrame, col: str, problems: Problems) -> dict[str, list[str]]:
    """annotator-k -> each row's vote by the k-th annotator of the row's list ("" where the list is shorter)."""
    lists = []
    for row, cell in zip(frame.index, frame[col]):
        scores = _individual_scores(cell)
        if scores is None:
            problems.add(int(row), col, "not a list of {score, ...} records (one per annotator)")
            scores = []
        lists.append([_signed(frame, row, col, s, problems) for s in scores])
    k = max((len(s) for s in lists), default=0)
    return {f"annotator-{j + 1}": [s[j] if j < len(s) else "" for s in lists] for j in range(k)}


class HubUnavailable(ValueError):
    """A preference set asked for by name cannot be read here: the ``datasets`` library is not installed."""


def hub_source(name: str, split: str = "train") -> tuple[bytes, str]:
    """A published preference set by its dataset name (e.g. ``allenai/reward-bench``), read with the ``datasets``
    library (the network, and its cache), as the bytes of a JSON-lines file named after it: it is then read as that
    file would be, through the same layout recognition (RewardBench, HelpSteer3, JudgeBench, LMSYS, ...). JSON lines
    keep a record's lists and nested turns as they are. ``datasets`` is imported only here, so it stays optional."""
    try:
        import datasets
    except ImportError:
        raise HubUnavailable(f"reading {name!r} by name needs the datasets library: pip install datasets "
                             "(or download the set's file and import that)") from None
    frame = datasets.load_dataset(name, split=split).to_pandas()
    data = frame.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")
    return data, f"{name.replace('/', '_')}-{split}.jsonl"
