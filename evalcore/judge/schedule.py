"""Prompt-cache friendly scheduling: send requests that share a long prefix one after another.

Servers cache the computation of a prompt's prefix: vLLM's automatic prefix caching keeps the KV blocks of recent
prompts (evicting least-recently-used blocks), OpenAI's prompt caching reuses a prefix of 1,024 tokens or more
(in 128-token steps) seen in the last few minutes, billed at a discount. Both pay off only when a prompt's prefix is
still hot, i.e. when the requests that share it are sent close together.

The methods' templates put what is shared first (instructions, criteria, steps, the source document) and the text
judged last, so every item of one document shares the prefix up to the end of the source. ``order_tasks`` with
``schedule="prefix"`` sorts tasks by their first request's prompt text: lexicographic order puts prompts with the
longest common prefixes next to each other (the order of a depth-first walk of the prompts' trie), which schedules
the items of one document together and, across documents, the ones sharing the same instructions and criteria.
``schedule="as-given"`` keeps the dataset's order.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from typing import Callable, Iterable, TypeVar

from evalcore.types import ChatRequest, Request

SCHEDULES = ("prefix", "as-given")
_Task = TypeVar("_Task")  # a task of the engine (an item or a pair): ordered by the prompts of its requests
CHARS_PER_TOKEN = 4


def prompt_text(request: Request) -> str:
    """The text a server tokenises, in order (chat: the messages' contents, joined)."""
    if isinstance(request, ChatRequest):
        return "\n".join(f"{role}\x1f{content}" for role, content in request.messages)
    return request.prompt


def order_tasks(tasks: list[_Task], build: Callable[[_Task], list[Request]], schedule: str = "prefix") -> list[_Task]:
    """``tasks`` in the order to send them (stable; a task whose requests cannot be built keeps its place first)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, not {schedule!r}")
    if schedule == "as-given" or len(tasks) < 2:
        return list(tasks)

    def key(t: _Task) -> str:
        try:
            reqs = build(t)
        except Exception:  # noqa: BLE001 - the engine reports the method's error for this task when it runs
            return ""
        return prompt_text(reqs[0]) if reqs else ""

    keyed = [(key(t), i, t) for i, t in enumerate(tasks)]
    keyed.sort(key=lambda x: (x[0], x[1]))
    return [t for _, _, t in keyed]


def common_prefix_len(a: str, b: str) -> int:
    """The length of the longest common prefix, by halving: each step compares two slices in C, so a pair of long
    prompts costs O(n log n) character comparisons at C speed instead of a Python loop over characters."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def repeated_prefix_tokens(prompts: Iterable[str], *, min_tokens: int = 0, step_tokens: int = 1,
                           window: int = 64) -> tuple[int, int]:
    """(prompt tokens in a prefix repeated from one of the ``window`` previous prompts, all prompt tokens), in
    characters / 4. ``min_tokens``/``step_tokens`` model a provider's rule (OpenAI: 1,024 and 128).

    The window is also kept sorted: of a set of strings, the one sharing the longest prefix with ``p`` is a neighbour
    of ``p`` in lexicographic order, so two comparisons per prompt give the maximum over the whole window (the Score
    page's estimate of a 6,000-request plan took tens of seconds comparing every prompt with 64 others)."""
    recent: deque[str] = deque()  # the window in send order, for eviction
    ordered: list[str] = []  # the same prompts, sorted
    shared = total = 0
    for p in prompts:
        toks = math.ceil(len(p) / CHARS_PER_TOKEN)
        total += toks
        i = bisect.bisect_left(ordered, p)
        best = max((common_prefix_len(p, ordered[j]) for j in (i - 1, i) if 0 <= j < len(ordered)), default=0)
        t = best // CHARS_PER_TOKEN
        if toks >= min_tokens and t >= min_tokens:
            shared += (t // step_tokens) * step_tokens
        recent.append(p)
        bisect.insort(ordered, p)
        if len(recent) > window:
            old = recent.popleft()
            del ordered[bisect.bisect_left(ordered, old)]
    return shared, total


__all__ = ["SCHEDULES", "order_tasks", "prompt_text", "common_prefix_len", "repeated_prefix_tokens"]
