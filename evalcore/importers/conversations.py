"""Conversations as pairwise records: MT-Bench's published human judgments (Zheng et al. 2023, "Judging LLM-as-a-Judge
with MT-Bench and Chatbot Arena"; the ``lmsys/mt_bench_human_judgments`` layout: ``question_id, model_a, model_b,
winner, judge, conversation_a, conversation_b, turn``) give each model's whole conversation, a list of
``{role, content}`` messages, and the turn the vote is about.

A record becomes a question and two answers for its turn ``k`` (1-based; no turn column: the conversation's last):

* the question is the user's message of turn ``k``; from turn 2 on, the user's earlier messages come before it,
  each marked as context ("Turn 1 (earlier in the conversation, for context):"), and the judged one is marked
  "Turn k:". Both conversations must ask the same questions up to turn ``k`` (a problem otherwise);
* each answer is that model's reply to turn ``k``; from turn 2 on, preceded by the model's own earlier replies,
  marked as context. The two models' earlier replies differ, so they go with the answers, not with the question:
  MT-Bench's own multi-turn judge prompt likewise shows each assistant's whole conversation and asks about the
  second answer.

Messages of other roles (a system prompt) are left out. A cell that is not a list of ``{role, content}`` messages
(JSON text, as JSON Lines and CSV hold it, or a list, as Parquet does), a conversation without the judged turn, or
a turn that is not a whole number from 1 is a problem naming file, row and column.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd

from evalcore.importers.cells import by_unique
from evalcore.importers.pair_mapping import PairMapping
from evalcore.importers.problems import Problems

Messages = tuple[tuple[str, ...], tuple[str, ...]]  # (the user's messages, the assistant's replies), in order

CONTEXT_QUESTION = "Turn {k} (earlier in the conversation, for context):\n{text}"
CONTEXT_ANSWER = "Turn {k} (its earlier answer, for context):\n{text}"
JUDGED_TURN = "Turn {k}:\n{text}"


def read_messages(cell: object) -> Messages | None:
    """(user messages, assistant replies) of one conversation cell, or None when it is no list of {role, content}."""
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except ValueError:
            return None
    if isinstance(cell, np.ndarray):
        cell = cell.tolist()
    if not isinstance(cell, list) or not cell:
        return None
    users, replies = [], []
    for m in cell:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str) or not isinstance(m.get("role"), str):
            return None
        role = m["role"].strip().lower()
        if role in ("user", "human"):
            users.append(m["content"])
        elif role in ("assistant", "gpt", "bot", "model"):
            replies.append(m["content"])
    return tuple(users), tuple(replies)


def turn_text(texts: tuple[str, ...], k: int, earlier: str) -> str:
    """Turn ``k``'s text, after the earlier turns' texts marked as context (turn 1: the text alone)."""
    if k == 1:
        return texts[0]
    parts = [earlier.format(k=i + 1, text=t) for i, t in enumerate(texts[: k - 1])]
    return "\n\n".join(parts + [JUDGED_TURN.format(k=k, text=texts[k - 1])])


def _turns(frame: pd.DataFrame, column: str | None, conv: pd.Series, problems: Problems) -> np.ndarray:
    """Per row: the judged turn (0 where it cannot be read: a problem); no turn column: each conversation's last."""
    if column is None:
        return np.array([len(m[0]) if m else 0 for m in conv], dtype=np.int64)
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    good = np.isfinite(values) & (values >= 1) & (np.mod(values, 1) == 0)
    for r in frame.index[problems.first(~good)].tolist():
        problems.add(int(r), column, f"turn {frame.at[r, column]!r} is not a whole number from 1")
    return np.where(good, np.nan_to_num(values), 0).astype(np.int64)


def conversation_frame(frame: pd.DataFrame, m: PairMapping, problems: Problems) -> tuple[pd.DataFrame, PairMapping]:
    """The table with the question and the two answers of each record's turn in place of the conversations, and the
    mapping that reads it (prompt and outputs; the conversation columns then hold the answers, so that a problem
    with an answer names the column it came from)."""
    conv_a, conv_b = m.conversation_a, m.conversation_b
    assert conv_a is not None and conv_b is not None, "a mapping of two conversations (m.conversations)"
    question = f"question (from {conv_a})"
    conv = {side: by_unique(frame[col], read_messages) for side, col in (("a", conv_a), ("b", conv_b))}
    turn = _turns(frame, m.turn, conv["a"], problems)
    rows = frame.index.tolist()
    texts: dict[str, list[str]] = {"q": [], "a": [], "b": []}
    for i, r in enumerate(rows):
        k, ok = int(turn[i]), True
        for side, col in (("a", conv_a), ("b", conv_b)):
            msgs = conv[side].iat[i]
            if msgs is None:
                problems.add(int(r), col, "not a conversation: a list of {role, content} messages is expected (as "
                                          "MT-Bench's human judgments hold it)")
                ok = False
            elif k and (len(msgs[0]) < k or len(msgs[1]) < k):
                users, replies = len(msgs[0]), len(msgs[1])
                what = (f"user question for turn {k} (it holds {users} user message{'s' * (users != 1)})"
                        if users < k else
                        f"assistant reply for turn {k} (it holds {replies} repl{'ies' if replies != 1 else 'y'})")
                problems.add(int(r), col, f"the conversation has no {what}")
                ok = False
        if ok and k and conv["a"].iat[i][0][:k] != conv["b"].iat[i][0][:k]:
            problems.add(int(r), conv_b, f"the two conversations ask different questions up to turn {k}: "
                                         "a pair compares two answers to the same question")
            ok = False
        if not (ok and k):
            for column in texts.values():
                column.append("")
            continue
        texts["q"].append(turn_text(conv["a"].iat[i][0], k, CONTEXT_QUESTION))
        texts["a"].append(turn_text(conv["a"].iat[i][1], k, CONTEXT_ANSWER))
        texts["b"].append(turn_text(conv["b"].iat[i][1], k, CONTEXT_ANSWER))
    out = frame.copy(deep=False)
    out[question] = pd.Series(texts["q"], index=frame.index, dtype="str")
    out[conv_a] = pd.Series(texts["a"], index=frame.index, dtype="str")
    out[conv_b] = pd.Series(texts["b"], index=frame.index, dtype="str")
    read = replace(m, prompt=question, input=None, output_a=conv_a, output_b=conv_b,
                   conversation_a=None, conversation_b=None)
    return out, read
