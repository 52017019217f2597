"""Pairwise preference files (MT-Bench human judgments, Chatbot Arena, PandaLM, AlpacaEval-style annotations) and
a judge's pairwise verdicts from another tool.

Preferences, long or wide. One row per pair (or per vote): the prompt (``prompt`` / ``question`` / ``instruction``,
plus ``input`` appended when present), the two outputs (``output_a`` / ``answer_a`` / ``response1``, ...), optional
``model_a`` / ``model_b``, ``pair_id``, ``turn`` and ``annotator`` (``judge``), and the vote: one winner column
(``winner`` / ``label`` / ``preference``) in the long form, or several, one per annotator, in the wide form
(PandaLM's ``annotator1..3``; the column name is the annotator). Winner values: ``a`` / ``b`` / ``tie``,
``model_a`` / ``model_b``, ``1`` / ``2`` with ``0`` or ``tie`` for a tie, and MT-Bench's ``tie (bothbad)`` and
``tie (inconsistent)`` (ties; the variant is kept in the preferences' ``tie_variant`` column: MT-Bench writes
"tie (inconsistent)" where its GPT-4 judge gave different verdicts in the two presentation orders, read here as a
tie like theirs, and "tie (bothbad)" where a human found both answers bad).

MT-Bench's published human judgments (``question_id, model_a, model_b, winner, judge, conversation_a,
conversation_b, turn``, as JSON Lines or Parquet) give each model's whole conversation instead of a prompt and two
outputs: :mod:`evalcore.importers.conversations` turns each record into the question and the two answers of its
turn. A prompt id column (MT-Bench's ``question_id``) is kept as the document id, with the turn ("81-turn-2").

The prompt (with its turn) is the document; the same (prompt, model, output) under several pairs is one item; a pair
is the two items, whichever was shown as A (a vote on the swapped pair is flipped onto the first orientation seen),
except that a record repeating a pair with its outputs swapped, by an annotator who already voted on it in the other
order, is kept as a pair of its own, as the source lists it (see :func:`_read_rows`). The file is read column-wise:
texts are compared and hashed once per distinct value, ids held in Arrow arrays. Every problem (unknown winner value, identical outputs, a missing column) is reported with file, row and column and
nothing is imported.

Verdicts: one row per pair and presentation order: ``pair_id``, ``order`` (``ab``: output A shown first; ``ba``),
``verdict`` naming the output (``a`` / ``b`` / ``tie`` or ``1`` / ``2`` / ``0``; blank = the judge's reply could not
be read: a counted failure, never a guess), optional ``raw`` (the reply).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evalcore.importers.cells import blank_mask, by_unique, is_string_column
from evalcore.importers.pair_mapping import PairMapping
from evalcore.importers.problems import Problems
from evalcore.identity import upload_id
from evalcore.importers.readers import Source, open_upload
from evalcore.model import COMPARISON_COLUMNS, PREFERENCE_COLUMNS, Dataset, Dimension, Run, counted, is_missing

if TYPE_CHECKING:
    import pyarrow as pa

    from evalcore.store import Store

PROMPT_NAMES = ("prompt", "question", "instruction", "query", "user_prompt")
INPUT_NAMES = ("input", "context")
OUTPUT_A_NAMES = ("output_a", "answer_a", "response_a", "response1", "response_1", "output_1", "output1",
                  "completion_a", "text_a")
OUTPUT_B_NAMES = ("output_b", "answer_b", "response_b", "response2", "response_2", "output_2", "output2",
                  "completion_b", "text_b")
MODEL_A_NAMES = ("model_a", "model1", "model_1", "system_a", "generator_a")
MODEL_B_NAMES = ("model_b", "model2", "model_2", "system_b", "generator_b")
PAIR_ID_NAMES = ("pair_id",)
PROMPT_ID_NAMES = ("question_id", "prompt_id", "qid")
TURN_NAMES = ("turn",)
# MT-Bench's published human judgments (and Chatbot Arena's conversations): each model's whole conversation, a list
# of {role, content} messages, instead of a prompt and two outputs
CONVERSATION_A_NAMES = ("conversation_a", "messages_a")
CONVERSATION_B_NAMES = ("conversation_b", "messages_b")
ANNOTATOR_NAMES = ("annotator", "judge", "rater", "evaluator", "worker", "annotator_id", "judge_id", "rater_id")
WINNER_NAMES = ("winner", "label", "preference", "preferred", "choice", "vote")
# LMSYS Chatbot Arena's published layout (the Kaggle "lmsys-chatbot-arena" train.csv: id, model_a, model_b, prompt,
# response_a, response_b, winner_model_a, winner_model_b, winner_tie): the vote is three one-hot columns, one 1 per row
ONEHOT_NAMES = ("winner_model_a", "winner_model_b", "winner_tie")
WIDE_WINNER = re.compile(r"^(annotator|rater|judge|human|worker)[ _-]?\d+$", re.IGNORECASE)

# Winner values -> (preferred, tie variant). Matched after lower-casing and stripping.
WINNER_VALUES: dict[str, tuple[str, str]] = {
    "a": ("a", ""), "b": ("b", ""), "tie": ("tie", ""),
    "model_a": ("a", ""), "model_b": ("b", ""),
    "1": ("a", ""), "2": ("b", ""), "0": ("tie", ""),
    "a>b": ("a", ""), "b>a": ("b", ""), "a=b": ("tie", ""),  # JudgeBench's label
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


# The Data page's role menu for a pairwise file: role name -> PairMapping field ("winner" may name several columns,
# one per annotator)
PAIR_ROLES: dict[str, str] = {
    "prompt": "prompt", "extra input": "input", "output A": "output_a", "output B": "output_b",
    "conversation A": "conversation_a", "conversation B": "conversation_b", "model A": "model_a",
    "model B": "model_b", "prompt id": "prompt_id", "pair id": "pair_id", "turn": "turn", "annotator": "annotator",
    "winner": "winners", "A wins (0/1)": "win_a", "B wins (0/1)": "win_b", "tie (0/1)": "win_tie",
    "chosen (preferred)": "chosen", "rejected": "rejected", "preference -3..3 (negative: A)": "signed",
    "annotators' preferences (list)": "individual", "ignored": "",
}


def mapping_from_roles(roles: dict[str, str]) -> PairMapping:
    """The PairMapping a role per column describes (column -> a key of :data:`PAIR_ROLES`); ValueError naming the
    columns when a role that takes one column is given several, or a role is unknown."""
    m = PairMapping(prompt=None, output_a=None, output_b=None)
    for role in PAIR_ROLES:
        cols = [c for c, r in roles.items() if r == role]
        if role == "winner":
            m.winners = cols
        elif role != "ignored" and cols:
            if len(cols) > 1:
                raise ValueError(f"{len(cols)} columns are given the role {role!r} ({', '.join(map(repr, cols))}); "
                                 "one column can hold it")
            setattr(m, PAIR_ROLES[role], cols[0])
    unknown = sorted({r for r in roles.values() if r not in PAIR_ROLES})
    if unknown:
        raise ValueError(f"unknown pairwise role(s) {', '.join(map(repr, unknown))}; known: {', '.join(PAIR_ROLES)}")
    return m


def pair_roles(m: PairMapping, columns: Iterable[object]) -> dict[str, str]:
    """Each column's role in ``m`` (the inverse of :func:`mapping_from_roles`): what the role menu is prefilled with."""
    by_column = {col: role for role, f in PAIR_ROLES.items() if f and f != "winners"
                 for col in [getattr(m, f)] if col}
    by_column.update({w: "winner" for w in m.winners})
    return {str(c): by_column.get(str(c), "ignored") for c in columns}


def guess_pair_mapping(columns: Iterable[object], winners: list[str] | None = None,
                       onehot: tuple[str, str, str] | None = None) -> PairMapping:
    """The roles guessed from the column names (``winners`` given: those columns hold the votes; ``onehot``: the
    three 0/1 columns of A wins, B wins, tie; Chatbot Arena's three are recognised by their names)."""
    cols = [str(c) for c in columns]
    prompt = _find(cols, PROMPT_NAMES)
    extra = _find([c for c in cols if c != prompt], INPUT_NAMES) if prompt else None
    found = tuple(_find(cols, (n,)) for n in ONEHOT_NAMES)
    hot: tuple[str | None, ...] = tuple(onehot) if onehot else (
        found if all(found) and not winners else (None, None, None))
    if winners or any(hot):
        wins = list(winners or [])
    else:
        wide = [c for c in cols if WIDE_WINNER.match(c.strip())]
        one = _find(cols, WINNER_NAMES)
        wins = wide if len(wide) > 1 else ([one] if one else [])
    annotator = _find(cols, ANNOTATOR_NAMES)
    if annotator in wins:
        annotator = None
    out_a, out_b = _find(cols, OUTPUT_A_NAMES), _find(cols, OUTPUT_B_NAMES)
    conv_a, conv_b = _find(cols, CONVERSATION_A_NAMES), _find(cols, CONVERSATION_B_NAMES)
    if not (conv_a and conv_b) or (out_a and out_b):
        conv_a = conv_b = None  # the outputs, when the file has them, are what was judged
    return _published_roles(cols, wins, PairMapping(prompt=prompt, output_a=out_a, output_b=out_b,
                       input=extra, model_a=_find(cols, MODEL_A_NAMES), model_b=_find(cols, MODEL_B_NAMES),
                       pair_id=_find(cols, PAIR_ID_NAMES), turn=_find(cols, TURN_NAMES),
                       annotator=None if len(wins) > 1 else annotator, winners=wins,
                       prompt_id=_find(cols, PROMPT_ID_NAMES), conversation_a=conv_a, conversation_b=conv_b,
                       win_a=hot[0], win_b=hot[1], win_tie=hot[2]))


def _published_roles(cols: list[str], wins: list[str], m: PairMapping) -> PairMapping:
    """RewardBench's chosen / rejected and HelpSteer3's signed preferences, recognised by their column names
    (:mod:`evalcore.importers.preference_sets`), when no winner column holds the vote."""
    from evalcore.importers import preference_sets as ps

    if wins or all(m.onehot):
        return m
    chosen, rejected = _find(cols, ps.CHOSEN_NAMES), _find(cols, ps.REJECTED_NAMES)
    if (chosen or rejected) and not (m.output_a and m.output_b):
        return replace(m, chosen=chosen, rejected=rejected, model_a=_find(cols, ps.CHOSEN_MODEL_NAMES),
                       model_b=_find(cols, ps.REJECTED_MODEL_NAMES), pair_id=m.pair_id or _find(cols, ("id",)))
    signed, individual = _find(cols, ps.SIGNED_NAMES), _find(cols, ps.INDIVIDUAL_NAMES)
    if signed or individual:
        prompt = m.prompt or _find(cols, ps.CONTEXT_NAMES)
        return replace(m, signed=signed, individual=individual, prompt=prompt,
                       input=None if m.input == prompt else m.input)
    return m


def looks_pairwise(columns: Iterable[object]) -> bool:
    """Whether a table reads as pairwise preferences: a prompt and two outputs (or two conversations, MT-Bench's
    published layout) and at least one winner column."""
    m = guess_pair_mapping(columns)
    return bool(((m.prompt and m.output_a and m.output_b) or m.conversations) and (m.winners or all(m.onehot))
                or (m.chosen and m.rejected) or (m.output_a and m.output_b and (m.signed or m.individual)))


PAIRWISE_ROUTE = ("its columns read as pairwise preferences (two outputs, or two conversations, and a winner per "
                  "row): import it as pairwise preferences instead: on the Data page choose 'pairwise preferences' "
                  "under 'The file holds', or run python -m evalcore import-pairs FILE --name NAME")


@dataclass
class PairImport:
    dataset: Dataset
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The CLI's --json document."""
        p = self.dataset.preferences
        models = sorted({s for s in self.dataset.items["system_id"] if s})
        counts = p["preferred"].value_counts()
        return {"dataset": self.dataset.id, "pairs": int(p["pair_id"].nunique()), "votes": int(len(p)),
                "outcomes": {k: int(counts.get(k, 0)) for k in ("a", "b", "tie")},
                "annotators": sorted(p["annotator"].unique().tolist()), "models": models,
                "warnings": list(self.warnings)}

    def outcome_text(self) -> str:
        """The votes per outcome, as stored ("39 A, 35 B, 6 tie"): a vote on a pair seen the other way round
        counts for the output it names in the pair's first orientation."""
        o = self.summary()["outcomes"]
        return f"{o['a']} A, {o['b']} B, {o['tie']} tie"


def _text(v: object) -> str:
    if is_missing(v):
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _check_roles(m: PairMapping, problems: Problems, columns: list[str], door: str = "cli") -> None:
    """Every missing or unknown role, said in the words of the door the file came through: the command line's
    options, or the Data page's role menu (a page's message gives no command-line advice)."""
    page = door == "page"
    needed = ((("conversation A", m.conversation_a, CONVERSATION_A_NAMES),
               ("conversation B", m.conversation_b, CONVERSATION_B_NAMES)) if m.conversation_a or m.conversation_b
              else (("prompt", m.prompt, PROMPT_NAMES), ("output A", m.output_a, OUTPUT_A_NAMES),
                    ("output B", m.output_b, OUTPUT_B_NAMES)))
    for role, col, names in needed:
        if col is None:
            problems.add("-", "-", f"no column has the role {role!r}: choose it in the role menu above" if page
                         else f"no {role} column: name one of {', '.join(names)}", block=Problems.READ)
    for col in (m.prompt, m.output_a, m.output_b, m.input, m.model_a, m.model_b, m.pair_id, m.turn, m.annotator,
                m.prompt_id, m.conversation_a, m.conversation_b, *m.onehot, *m.winners):
        if col is not None and col not in columns:
            problems.add("-", col, f"no column {col!r} in the file (columns: {', '.join(columns)})",
                         block=Problems.READ)
    hot = [c for c in m.onehot if c]
    if hot and len(hot) < 3:
        problems.add("-", ",".join(hot), "a one-hot vote needs three 0/1 columns (A wins, B wins, tie), "
                     f"{len(hot)} given: " + (ONEHOT_ROLES_PAGE if page else ONEHOT_CLI), block=Problems.READ)
    if hot and m.winners:
        problems.add("-", ",".join(m.winners), "the votes are given twice, as a winner column and as three one-hot "
                     "columns: keep one of the two", block=Problems.READ)
    if not m.winners and not hot:
        problems.add("-", "-", ("no column has the role 'winner' (one per annotator for several), nor the three "
                                "one-hot roles of Chatbot Arena's layout ('A wins (0/1)', 'B wins (0/1)', 'tie (0/1)'):"
                                " choose them in the role menu above") if page else
                     (f"no winner column: name one {', '.join(WINNER_NAMES)}, or give --winner COLUMN (several for "
                      f"one column per annotator), or {ONEHOT_CLI}"), block=Problems.READ)


ONEHOT_CLI = ("--one-hot A_COLUMN,B_COLUMN,TIE_COLUMN for three 0/1 columns (Chatbot Arena's "
              "--one-hot winner_model_a,winner_model_b,winner_tie, recognised without it by those names)")
ONEHOT_ROLES_PAGE = ("give the three columns the roles 'A wins (0/1)', 'B wins (0/1)' and 'tie (0/1)' in the role "
                     "menu above (Chatbot Arena's winner_model_a, winner_model_b, winner_tie)")


def _binary_winners(frame: pd.DataFrame, m: PairMapping, problems: Problems, door: str) -> None:
    """Winner columns holding only 0 and 1, all of them together, are refused: read as winners (1 = A, 2 = B,
    0 = tie) every B win of a one-hot column would become a tie without a word (a Chatbot Arena file given
    ``winner_model_a`` as its winner column). One annotator's column of 0 and 1 beside another's 2 (the file's
    annotator1..k columns, chosen or not) is the 1 / 2 / 0 coding (PandaLM's); only 1s is no problem: both readings
    say A."""
    cols = [c for c in m.winners if c in frame.columns]
    siblings = cols + [str(c) for c in frame.columns if str(c) not in cols and WIDE_WINNER.match(str(c).strip())]
    values = set().union(*(set(_texts(frame, c).str.strip().unique()) for c in siblings)) - {""} if cols else set()
    if not ("0" in values and values <= {"0", "1"}):
        return
    for col in cols:
        problems.add("-", col, f"the winner column {col!r} holds only 0 and 1: it reads as one column of a "
                     "one-hot vote (Chatbot Arena's layout: winner_model_a, winner_model_b, winner_tie, one 1 "
                     "per row), where 0 means 'not this outcome', not a tie; read as a winner column its 0s "
                     "would all be ties and no vote would go to B. "
                     + (ONEHOT_ROLES_PAGE[0].upper() + ONEHOT_ROLES_PAGE[1:] + " instead of 'winner'" if door ==
                        "page" else "Give " + ONEHOT_CLI + " instead of --winner")
                     + "; or recode the column as a / b / tie (or 1 / 2 / 0)", block=Problems.READ)


_BOOL = {"0": 0, "1": 1, "0.0": 0, "1.0": 1, "false": 0, "true": 1}


def onehot_frame(frame: pd.DataFrame, m: PairMapping, problems: Problems) -> tuple[pd.DataFrame, PairMapping]:
    """The table with one winner column (a / b / tie) decoded from the three one-hot columns, and the mapping that
    reads it. A cell that is not 0 or 1, or a row without exactly one 1, is a problem naming the row and columns;
    a row whose three cells are blank is no vote. The decoded column is named after the three, so a problem about a
    vote names the columns it came from."""
    cols = [c for c in m.onehot if c is not None]  # all three: the vote is one-hot
    cells = []
    for c in cols:
        text = _texts(frame, c).str.strip().str.lower()
        codes = text.map(_BOOL)
        bad = (text != "") & codes.isna()
        for r in frame.index[problems.first(bad.to_numpy())].tolist():
            problems.add(int(r), c, f"{frame.at[r, c]!r} is not 0 or 1 (a one-hot vote column)")
        cells.append((codes.fillna(-1).to_numpy(np.int64), (text == "").to_numpy()))
    ones = sum((v == 1).astype(int) for v, _ in cells)
    blank = np.logical_and.reduce([b for _, b in cells])
    wrong = (ones != 1) & ~blank & np.logical_and.reduce([(v >= 0) | b for v, b in cells])
    for r, k in zip(frame.index[problems.first(wrong)].tolist(), ones[problems.first(wrong)].tolist()):
        shown = ", ".join(f"{c} = {_text(frame.at[r, c]) or 'blank'}" for c in cols)
        problems.add(int(r), cols[0], f"a one-hot vote has exactly one 1 among {', '.join(cols)}; this row has "
                                      f"{k} ({shown})")
    name = "/".join(cols)
    pick = np.select([cells[0][0] == 1, cells[1][0] == 1, cells[2][0] == 1], ["a", "b", "tie"], "")
    out = frame.copy(deep=False)
    out[name] = pd.Series(np.where(ones == 1, pick, ""), index=frame.index, dtype="str")
    return out, replace(m, winners=[name], win_a=None, win_b=None, win_tie=None)


def _turns_text(cell: object) -> str | None:
    """A JSON list of turns (Chatbot Arena's prompt and response cells: '["first question", "follow-up"]') as
    readable text: one turn as itself, several as "Turn 1:" ... "Turn k:" (a null turn: "(no text)"); None when
    the cell is no such list."""
    if isinstance(cell, np.ndarray):
        cell = cell.tolist()
    if isinstance(cell, str):
        if not cell.lstrip().startswith("["):
            return None
        try:
            cell = json.loads(cell)
        except ValueError:
            return None
    if not isinstance(cell, list) or not cell or not all(t is None or isinstance(t, str) for t in cell):
        return None
    turns = ["(no text)" if t is None else t for t in cell]
    if len(turns) == 1:
        return turns[0]
    return "\n\n".join(f"Turn {k}:\n{t}" for k, t in enumerate(turns, start=1))


def decode_turn_lists(frame: pd.DataFrame, m: PairMapping, problems: Problems | None = None
                      ) -> tuple[pd.DataFrame, list[str]]:
    """The prompt and output columns whose every non-blank cell is a JSON list of turns, decoded to text (else the
    judge would read brackets, quotes and \\n escapes), and the names of the columns decoded. A column whose every
    cell opens with "[" but some cell is no such list is a problem naming its rows (left as it is, that column's
    other cells would keep their brackets without a word); a column with plain text cells is text, kept as it is."""
    decoded: list[str] = []
    out = frame
    for col in dict.fromkeys(c for c in (m.prompt, m.input, m.output_a, m.output_b)
                             if c is not None and c in frame.columns):
        cells = frame[col]
        filled = ~blank_mask(cells)
        if not filled.any():
            continue
        texts = by_unique(cells[filled], _turns_text)
        if texts.isna().any():
            opens = by_unique(cells[filled], lambda v: isinstance(v, (list, np.ndarray))
                              or (isinstance(v, str) and v.lstrip().startswith("[")))
            if problems is not None and opens.all() and texts.notna().any():
                for r in texts.index[problems.first(texts.isna().to_numpy())].tolist():
                    problems.add(int(r), col, "not a JSON list of turns (strings or null), as the column's other "
                                              "cells are: its text would be read with brackets and escapes")
            continue  # some cell is plain text: the column is text, kept as it is
        if out is frame:
            out = frame.copy(deep=False)
        full = pd.Series("", index=frame.index, dtype=object)
        full[filled] = texts.to_numpy()
        out[col] = full.astype("str")
        decoded.append(col)
    return out, decoded


def _texts(frame: pd.DataFrame, column: str | None) -> pd.Series:
    """A column's cells as text, as :func:`_text` reads one cell ("" where missing), the whole column at once."""
    if column is None:
        return pd.Series([""] * len(frame), index=frame.index, dtype="str")
    col = frame[column]
    if is_string_column(col):
        return col.fillna("")
    return pd.Series(by_unique(col, _text).to_numpy(), index=frame.index, dtype="str")


def _codes(*columns: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes (first appearance order) of the tuples the columns' cells form, and each code's first row."""
    key = np.zeros(len(columns[0]), np.int64)
    for col in columns:
        codes, uniques = pd.factorize(col)
        key = pd.factorize(key * max(len(uniques), 1) + codes)[0].astype(np.int64)  # stays below rows^2
    _, first = np.unique(key, return_index=True)  # codes are 0..k-1, so the k-th first index is code k's
    return key, first


def _sha(text: str, n: int) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:n]


@dataclass
class _Table:
    """The rows as integer codes: every text is read, compared and hashed once per distinct value, and the ids and
    texts are held in Arrow arrays, not as Python objects, so a file of 1,000,000 pairs is read in seconds and in
    bounded memory."""

    rows: np.ndarray  # row numbers as a person counts them
    doc: np.ndarray  # per row: document code
    item_a: np.ndarray  # per row: item codes
    item_b: np.ndarray
    doc_ids: pa.Array  # Arrow text array, per document code
    doc_texts: pa.Array
    item_ids: pa.Array  # Arrow text array, per item code
    items: pd.DataFrame  # item_id, doc_id, system_id, output (one row per item code)
    other_prompt: np.ndarray  # per row: its prompt id names another prompt on an earlier row


def _arrow(values: pd.Series | pa.Array | pa.ChunkedArray) -> pa.Array:
    """A text column (or array) as one Arrow array of large strings."""
    import pyarrow as pa

    if isinstance(values, pd.Series):
        to_arrow = getattr(values.array, "__arrow_array__", None)
        values = to_arrow() if to_arrow is not None else pa.array(values.to_numpy(dtype=object), pa.large_string())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values.cast(pa.large_string())


def _map_text(fn: Callable[..., str], *columns: pd.Series | pa.Array, size: int = 65_536) -> pa.Array:
    """``fn`` over the columns' values as one Arrow text array, built ``size`` values at a time (Python strings
    for one block only)."""
    import pyarrow as pa

    n = len(columns[0])
    parts = []
    for start in range(0, n, size):
        block = [c.slice(start, size).to_pylist() if isinstance(c, pa.Array) else c[start: start + size].tolist()
                 for c in columns]
        parts.append(pa.array([fn(*x) for x in zip(*block)], type=pa.large_string()))
    return pa.concat_arrays(parts) if parts else pa.array([], pa.large_string())


def _turn_note(prompt: str, turn: str) -> str:
    """A prompt as the judge reads it: a later turn of a conversation whose earlier turns the file does not give
    is said in words; turn 1 is the prompt alone (a bare "[turn 1]" at the end of a question was noise)."""
    return prompt if turn.strip() in ("", "1") else f"{prompt}\n\n(turn {turn.strip()} of a conversation)"


def _doc_ids(m: PairMapping, frame: pd.DataFrame, prompt: pd.Series, turn: pd.Series
             ) -> tuple[np.ndarray, np.ndarray, pa.Array, np.ndarray]:
    """(per row: document code; each code's first row; the documents' ids; per row: the prompt differs from its
    document's first row). With a prompt id column (MT-Bench's question_id) the id is the file's own, with the turn
    when there is one ("81-turn-2"); else a hash of the prompt and turn."""
    if m.prompt_id is None:
        doc, first = _codes(prompt, turn)
        pf, tf = _arrow(prompt).take(first), _arrow(turn).take(first)
        return doc, first, _map_text(lambda p, t: "doc-" + _sha(f"{p}\x1f{t}", 10), pf, tf), np.zeros(len(doc), bool)
    key = _texts(frame, m.prompt_id).str.strip()
    doc, first = _codes(key, turn)
    kf, tf = _arrow(key).take(first), _arrow(turn).take(first)
    ids = _map_text(lambda k, t: k if not t.strip() else f"{k}-turn-{t.strip()}", kf, tf)
    pcode = pd.factorize(prompt)[0]
    return doc, first, ids, pcode != pcode[first][doc]


def _encode(frame: pd.DataFrame, m: PairMapping, marker: bool = True) -> _Table:
    import pyarrow as pa

    prompt = _texts(frame, m.prompt)
    if m.input:
        extra = _texts(frame, m.input)
        has = ~blank_mask(extra)
        prompt = prompt.where(~has, prompt + "\n\n" + extra)
    turn = _texts(frame, m.turn)
    doc, doc_first, doc_ids, other = _doc_ids(m, frame, prompt, turn)
    pf, tf = _arrow(prompt).take(doc_first), _arrow(turn).take(doc_first)
    doc_texts = _map_text(_turn_note, pf, tf) if marker else pf
    del prompt, pf
    n = len(frame)
    # A's items, then B's, coded together: the same (document, model, output) is one item wherever it was shown
    models = pd.concat([_texts(frame, m.model_a), _texts(frame, m.model_b)], ignore_index=True)
    outputs = pd.concat([_texts(frame, m.output_a), _texts(frame, m.output_b)], ignore_index=True)
    both = np.concatenate([doc, doc])
    item, item_first = _codes(both, models, outputs)
    im, io_ = _arrow(models).take(item_first), _arrow(outputs).take(item_first)
    del models, outputs
    idoc = doc_ids.take(both[item_first])
    item_ids = _map_text(lambda d, mo, o: d + "/" + _sha(mo + "\x1f" + o, 8), idoc, im, io_)
    items = pa.table({"item_id": item_ids, "doc_id": idoc, "system_id": im, "output": io_}).to_pandas()
    return _Table(frame.index.to_numpy(), doc, item[:n], item[n:], doc_ids, doc_texts, item_ids, items, other)


def _winner_cells(frame: pd.DataFrame, col: str) -> tuple[np.ndarray, list[tuple[str, str] | str | None]]:
    """Per row: a code into the returned values, each (preferred, variant), None (blank) or the text of a value that
    is no winner (a str)."""
    codes, uniques = pd.factorize(_texts(frame, col).str.strip().str.lower())
    return codes, [None if not u else WINNER_VALUES.get(u, u) for u in uniques]


@dataclass
class _Votes:
    """Every readable vote, one per (row, winner column), in reading order."""

    pos: np.ndarray  # row position
    col: np.ndarray  # winner column index
    ann: np.ndarray  # annotator code (anonymous: -1 until numbered)
    preferred: np.ndarray  # "a" / "b" / "tie", as written (before flipping onto the pair's first orientation)
    variant: np.ndarray


def _vote_cells(frame: pd.DataFrame, m: PairMapping, ok: np.ndarray, problems: Problems
                ) -> tuple[_Votes, list[str]]:
    """The readable votes of the rows in ``ok`` and the annotator names; an unknown winner value is a problem."""
    names: list[str] = list(m.winners) if m.wide else []
    if m.annotator and not m.wide:
        ann_codes, ann_names = pd.factorize(_texts(frame, m.annotator))
        names = [str(x) for x in ann_names]
    parts = []
    for j, col in enumerate(m.winners):
        codes, values = _winner_cells(frame, col)
        unknown = np.array([isinstance(v, str) for v in values] + [False])[codes] & ok
        k = problems.first(unknown)
        for at, v in zip(np.flatnonzero(k).tolist(), codes[k].tolist()):
            problems.add(int(frame.index[at]), col, f"winner {values[v]!r} is not a known value (a, b, tie, model_a, "
                                                    "model_b, 1, 2, 0, tie (bothbad), tie (inconsistent))", phase=j)
        readable = np.array([isinstance(v, tuple) for v in values] + [False])[codes] & ok
        pos = np.flatnonzero(readable)
        pref = np.array([v[0] if isinstance(v, tuple) else "" for v in values] + [""], dtype=object)[codes[pos]]
        var = np.array([v[1] if isinstance(v, tuple) else "" for v in values] + [""], dtype=object)[codes[pos]]
        ann = np.full(len(pos), j) if m.wide else (ann_codes[pos] if m.annotator else np.full(len(pos), -1))
        parts.append((pos, np.full(len(pos), j), ann, pref, var))
    order_parts = [np.concatenate(x) if x else np.array([]) for x in zip(*parts)] if parts else [np.array([])] * 5
    positions, columns, annotators, preferred, variants = order_parts
    order = np.lexsort((columns, positions))  # reading order: row by row, winner columns left to right
    return _Votes(positions[order].astype(np.int64), columns[order].astype(np.int64),
                  annotators[order].astype(np.int64), preferred[order], variants[order]), names


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """For each element: the index of the first element with the same code (codes in reading order)."""
    _, first, inv = np.unique(codes, return_index=True, return_inverse=True)
    return first[inv] if len(codes) else np.zeros(0, np.int64)


def _apart(t: _Table, v: _Votes, key: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Rows kept as a pair of their own: they repeat a pair with its outputs swapped, voted on by an annotator who
    already voted on that pair in the other order. Decided row by row in reading order, only over the pairs where
    one annotator voted in both orders (usually none, or a few)."""
    apart = np.zeros(len(key), bool)
    if not len(v.pos) or (v.ann < 0).all():
        return apart
    both = pd.DataFrame({"k": key[v.pos], "ann": v.ann, "a": t.item_a[v.pos]}).groupby(["k", "ann"])["a"].nunique()
    suspect = np.unique(both[both > 1].index.get_level_values("k").to_numpy())
    if not len(suspect):
        return apart
    voters: dict[int, list[int]] = {}
    for pos, ann in zip(v.pos.tolist(), v.ann.tolist()):
        voters.setdefault(pos, []).append(ann)
    voted: dict[tuple, int] = {}  # (pair key, apart?, annotator) -> item shown as A on the first vote
    for pos in np.flatnonzero(ok & np.isin(key, suspect)).tolist():
        k, a = int(key[pos]), int(t.item_a[pos])
        apart[pos] = any(voted.get((k, False, ann), a) != a for ann in voters.get(pos, []))
        for ann in voters.get(pos, []):
            voted.setdefault((k, bool(apart[pos]), ann), a)
    return apart


def _readable_rows(frame: pd.DataFrame, m: PairMapping, t: _Table, problems: Problems) -> np.ndarray:
    """The rows that can be a pair: its two outputs differ, and its prompt id names the prompt of that id's first
    row; each other row a problem."""
    out_b = m.output_b
    assert out_b is not None, "_check_roles has reported a file without output columns"
    same = (_texts(frame, m.output_a) == _texts(frame, out_b)).to_numpy()
    for r in t.rows[problems.first(same)].tolist():
        problems.add(int(r), out_b, f"the two outputs are identical (column {m.output_a!r} holds the same text): "
                                    "a preference between them means nothing")
    if m.prompt_id is not None:  # else no row names another prompt
        for r in t.rows[problems.first(t.other_prompt)].tolist():
            problems.add(int(r), m.prompt_id, f"prompt id {frame.at[r, m.prompt_id]!r} names another prompt (or "
                                              "turn) than on its first row")
    return ~same & ~t.other_prompt


def _read_rows(frame: pd.DataFrame, m: PairMapping, problems: Problems, dimension: str, marker: bool = True
               ) -> tuple[_Table, pd.DataFrame, int]:
    """(the coded table, the preferences, how many records were kept apart as pairs of their own). The same two
    items under one prompt are one pair whichever was shown as A (a vote on the swapped orientation is flipped onto
    the first). A record that repeats a pair with its outputs swapped, voted on by an annotator who already voted on
    that pair in the other order, is kept as a pair of its own, as the source lists it: LLMBar's MT-Bench set has 5
    such records among its 200, and merging them would give the gold annotator two votes on one pair and not
    reproduce the source's 200 pairs. The same annotator voting twice in the same order is a problem."""
    t = _encode(frame, m, marker)
    n = len(frame)
    rows = t.rows
    ok = _readable_rows(frame, m, t, problems)
    key, _ = _codes(t.doc, np.minimum(t.item_a, t.item_b), np.maximum(t.item_a, t.item_b))
    given = _texts(frame, m.pair_id).str.strip().to_numpy(dtype=object) if m.pair_id else np.full(n, "", object)
    ok &= ~_pair_id_elsewhere(given, key, ok, rows, m, problems)
    v, names = _vote_cells(frame, m, ok, problems)
    apart = _apart(t, v, key, ok)
    slot = np.where(apart, key + n, key)  # a record kept apart: the pair's swapped twin
    idx = np.flatnonzero(ok)
    pair = np.full(n, -1, np.int64)
    pair[idx] = pd.factorize(slot[idx])[0]  # pairs numbered in order of first appearance, as the rows create them
    first_row = idx[np.unique(pair[idx], return_index=True)[1]]  # each pair's first row
    pid = _map_text(lambda g, d, p: g or f"{d}/{p + 1:05d}", given[first_row], t.doc_ids.take(t.doc[first_row]),
                    np.arange(len(first_row)))
    vp = pair[v.pos]
    ann = v.ann.copy()
    if not m.wide and not m.annotator:  # anonymous votes (Arena-style): the k-th vote on a pair is "vote-k"
        ann = pd.Series(vp).groupby(vp).cumcount().to_numpy()
        names = [f"vote-{k + 1}" for k in range(int(ann.max()) + 1 if len(ann) else 0)]
    dup_of = _first_rows(vp * (len(names) + 1) + ann)
    dup = dup_of != np.arange(len(vp))
    k = problems.first(dup)
    for i in np.flatnonzero(k).tolist():
        problems.add(int(rows[v.pos[i]]), m.winners[v.col[i]],
                     f"annotator {names[ann[i]]!r} already voted on this pair ({problems.unit} "
                     f"{int(rows[v.pos[dup_of[i]]])}, the same two outputs in the same order)", phase=int(v.col[i]))
    keep = ~dup
    vp, ann, pos = vp[keep], ann[keep], v.pos[keep]
    first_a, first_b = t.item_a[first_row], t.item_b[first_row]
    flipped = t.item_a[pos] != first_a[vp]
    pref = v.preferred[keep].copy()
    swap = flipped & (pref != "tie")
    pref[swap] = np.where(pref[swap] == "a", "b", "a")
    import pyarrow as pa

    prefs = pa.table({"pair_id": pid.take(vp), "doc_id": t.doc_ids.take(t.doc[first_row][vp]),
                      "item_a": t.item_ids.take(first_a[vp]), "item_b": t.item_ids.take(first_b[vp]),
                      "dimension": pa.array(np.full(len(vp), dimension, dtype=object), pa.large_string()),
                      "annotator": pa.array(names, pa.large_string()).take(ann),
                      "preferred": pa.array(pref, pa.large_string()),
                      "tie_variant": pa.array(v.variant[keep], pa.large_string())}).to_pandas()
    return t, prefs[PREFERENCE_COLUMNS + ["tie_variant"]], int(len(np.unique(slot[apart & ok])))


def _pair_id_elsewhere(given: np.ndarray, key: np.ndarray, ok: np.ndarray, rows: np.ndarray, m: PairMapping,
                       problems: Problems) -> np.ndarray:
    """Rows whose pair id names another pair than on that id's first row (a pair id names one pair), each said."""
    bad = np.zeros(len(given), bool)
    named = ok & (given != "")
    if not named.any() or m.pair_id is None:  # (no pair id column: none named)
        return bad
    idx = np.flatnonzero(named)
    first = idx[_first_rows(pd.factorize(given[idx])[0])]
    bad[idx[key[idx] != key[first]]] = True
    k = problems.first(bad)
    for r, g in zip(rows[k].tolist(), given[k].tolist()):
        problems.add(int(r), m.pair_id, f"pair id {g!r} names another pair of outputs (or another prompt) than on "
                                        "its first row")
    return bad


def _published_frame(frame: pd.DataFrame, m: PairMapping, problems: Problems, columns: list[str], door: str
                     ) -> tuple[pd.DataFrame, PairMapping, list[str]]:
    """A published layout's table turned into a winner-column one (preference_sets.py), with what was done; the
    layout's one missing field a problem."""
    from evalcore.importers import preference_sets as ps

    layout = ps.layout_of(m)
    if layout is None:
        return frame, m, []
    ps.check_layout(m, columns, problems, door)
    if problems:
        return frame, m, []
    if layout == ps.REWARDBENCH:
        return ps.chosen_frame(frame, m, _texts)
    return ps.signed_frame(frame, m, problems, _texts)


def _pair_warnings(m: PairMapping, blank: int, decoded: list[str], published: list[str], apart: int) -> list[str]:
    """What a pairs import says of how it read the file: ``blank`` winner cells (or one-hot rows) taken as no vote,
    the columns of turn lists ``decoded``, a published layout's notes, and ``apart`` records kept as pairs of their
    own."""
    warnings = []
    if blank:
        warnings.append(f"{blank} blank winner cells were taken as no vote" if not all(m.onehot) else
                        f"{blank} rows with blank one-hot cells were taken as no vote")
    if all(m.onehot):
        warnings.append(f"votes read from the one-hot columns {', '.join(c for c in m.onehot if c)} (Chatbot "
                        "Arena's layout: a 1 marks A wins, B wins or a tie)")
    if decoded:
        warnings.append(f"the cells of {', '.join(map(repr, decoded))} are JSON lists of turns (Chatbot Arena's "
                        "layout): decoded to text, several turns marked 'Turn 1:', 'Turn 2:', ...")
    warnings += published
    if not m.wide and not m.annotator:
        warnings.append("no annotator column: the votes are anonymous, the k-th vote on a pair is counted as "
                        "annotator 'vote-k'")
    if apart:
        warnings.append(f"{apart} records repeat a pair with its outputs swapped and a vote by the same "
                        "annotator: each is kept as a pair of its own, as the file lists it (not merged into the "
                        "first, which would give that annotator two votes on one pair)")
    if not (m.model_a and m.model_b):
        warnings.append("no model_a / model_b columns: per-model win rates and self-preference need them")
    return warnings


def import_pairs(source: Source, *, name: str | None = None, winners: list[str] | None = None,
                 dimension: str = DEFAULT_DIMENSION, filename: str | None = None,
                 table: pd.DataFrame | None = None, owner: str | None = None,
                 mapping: PairMapping | None = None, onehot: tuple[str, str, str] | None = None,
                 door: str = "cli") -> PairImport:
    """Read a pairwise preference file into a Dataset (not saved), or raise DatasetValidationError listing every
    problem (file, row, column). ``owner``: the signed-in user importing it (evalcore.identity.upload_id).
    ``mapping``: the columns' roles as chosen (the Data page's role menu), else guessed from their names (with
    ``winners`` naming the vote columns, or ``onehot`` the three 0/1 columns of A wins, B wins, tie). A file of
    conversations (MT-Bench's human judgments) is read by :mod:`evalcore.importers.conversations`: a question and
    two answers per record's turn. ``door``: "cli" or "page", whose words the messages use."""
    upload = open_upload(source, filename, table=table)
    frame, problems = upload.frame, upload.problems
    columns = [str(c) for c in frame.columns]
    m = mapping if mapping is not None else guess_pair_mapping(columns, winners, onehot)
    frame, m, published = _published_frame(frame, m, problems, columns, door)
    upload.raise_if_problems()
    columns = [str(c) for c in frame.columns]
    _check_roles(m, problems, columns, door)
    _binary_winners(frame, m, problems, door)
    upload.raise_if_problems()
    read_frame, read_m = frame, m
    decoded: list[str] = []
    if m.conversations:
        from evalcore.importers.conversations import conversation_frame

        read_frame, read_m = conversation_frame(frame, m, problems)
        upload.raise_if_problems()
    else:
        read_frame, decoded = decode_turn_lists(frame, m, problems)
        upload.raise_if_problems()
    if all(m.onehot):
        read_frame, read_m = onehot_frame(read_frame, read_m, problems)
        upload.raise_if_problems()
    t, p, apart = _read_rows(read_frame, read_m, problems, dimension, marker=not m.conversations)
    if not len(p) and not problems:
        problems.add("-", ",".join(read_m.winners), "no votes: every winner cell is blank", block=Problems.AFTER)
    upload.raise_if_problems()
    digest = hashlib.sha256(upload.data + json.dumps(m.to_dict(), sort_keys=True).encode() + dimension.encode())
    dataset_id = upload_id(digest.hexdigest(), owner)
    items = t.items
    docs = pd.DataFrame({"doc_id": t.doc_ids.to_pandas(types_mapper=pd.ArrowDtype).astype("str"),
                         "source": t.doc_texts.to_pandas(types_mapper=pd.ArrowDtype).astype("str"),
                         "references": [[] for _ in range(len(t.doc_ids))], "context": ""})
    fname = Path(upload.name).name
    warnings = _pair_warnings(m, len(frame) * len(read_m.winners) - len(p), decoded, published, apart)
    ds = Dataset(
        id=dataset_id, name=name or Path(fname).stem, task="pairwise preferences",
        dimensions=[Dimension(dimension, 0, 1, f"Which of two outputs for the same prompt the annotators found better"
                                               f"{'' if dimension == DEFAULT_DIMENSION else ' in ' + dimension}"
                                               " (a / b / tie).")],
        documents=docs, items=items, human_scores=pd.DataFrame(columns=["item_id", "dimension", "score"]),
        preferences=p,
        description=f"Imported from {fname}: {counted(p['pair_id'].nunique(), 'pair')}, {counted(len(p), 'vote')} "
                    f"by {counted(p['annotator'].nunique(), 'annotator')} over {counted(len(docs), 'prompt')}.",
        origin=f"uploaded file {fname} (sha256 {hashlib.sha256(upload.data).hexdigest()})",
        meta={"source_file": fname, "format": upload.format, "shape": "pairwise", "pair_mapping": m.to_dict(),
              "import_warnings": warnings},
    )
    return PairImport(ds, warnings)


def save_pairs(result: PairImport, store: Store | None = None, *, owner: str | None = None) -> None:
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


def import_verdicts(source: Source, dataset: Dataset, *, name: str, dimension: str | None = None,
                    filename: str | None = None) -> Run:
    """A judge's pairwise verdicts on the pairs of ``dataset`` as a Run (not saved), or DatasetValidationError."""
    upload = open_upload(source, filename)
    frame, problems = upload.frame, upload.problems
    roles = _verdict_roles([str(c) for c in frame.columns], problems)
    upload.raise_if_problems()
    pid_col, order_col, verdict_col = (str(roles[k]) for k in ("pair_id", "order", "verdict"))  # each found
    dims = sorted(set(dataset.preferences["dimension"])) or dataset.dimension_names
    dim = dimension or (DEFAULT_DIMENSION if DEFAULT_DIMENSION in dims else dims[0])
    pairs = dataset.preferences[dataset.preferences["dimension"] == dim].drop_duplicates("pair_id")
    pairs = pairs.set_index("pair_id")
    rows: list[dict[str, Any]] = []
    unknown: dict[str, int] = {}
    for row_no, r in frame.iterrows():
        pid, order = _text(r[pid_col]).strip(), _text(r[order_col]).strip().lower()
        if pid not in pairs.index:
            unknown.setdefault(pid, row_no)
            continue
        if order not in ("ab", "ba"):
            problems.add(row_no, order_col, f"order {order!r} is neither 'ab' (output A shown first) nor 'ba'")
            continue
        text = _text(r[verdict_col]).strip().lower()
        if text and text not in VERDICT_VALUES:
            problems.add(row_no, verdict_col, f"verdict {text!r} is not a, b, tie, 1, 2 or 0 (leave it blank "
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
        problems.add("-", pid_col, f"{len(unknown)} pair ids are not pairs of dataset {dataset.id!r}: "
                                   f"{shown}{more}", block=Problems.AFTER)
    dup = pd.DataFrame(rows).duplicated(["pair_id", "order"]) if rows else pd.Series(dtype=bool)
    if dup.any():
        first_dup = rows[int(dup.to_numpy().nonzero()[0][0])]
        problems.add("-", pid_col, f"pair {first_dup['pair_id']!r} has two verdicts in order "
                                   f"{first_dup['order']!r}", block=Problems.AFTER)
    upload.raise_if_problems()
    digest = hashlib.sha256(upload.data).hexdigest()
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "verdicts"
    return Run(run_id=f"{dataset.id}/{slug}-{digest[:8]}", dataset_id=dataset.id, method="pairwise", model=name,
               label=name, parser="pairwise", origin="local",
               config={"method": "pairwise", "imported_from": Path(upload.name).name, "sha256": digest,
                       "orders": sorted({r["order"] for r in rows})},
               comparisons=pd.DataFrame(rows, columns=COMPARISON_COLUMNS))
