"""Scoring methods: one module per paper's method, prompts visible (``paper_prompts.py``, ``presets.py``) and
editable (every template is a config field or a ``Criteria``).

    geval     G-Eval, 000                  explicit  Explicit Score, 002     implicit  Implicit Score, 002
    rts       Reason-then-Score, 003       mcq       MCQ scoring, 003        pairwise  Pairwise Comparison, 002
    h2h       Head-to-head, 003            gptscore  GPTScore, 004
    mtbench   MT-Bench pairwise judge (Zheng et al. 2023), with or without a reference answer

``get_method(name)`` returns the method object (see ``base.Method``); ``render_prompt`` the full prompt text. A new
method is one module that registers itself (``evalcore.registry.register_method``), here or in an installed package
(docs/extending.md).
"""

from __future__ import annotations

from typing import Any

from evalcore import registry
from evalcore.types import Criteria, ItemTask, PairTask
from evalcore.methods.base import Method, PromptLabels, placeholder_pair, placeholder_task, request_text
from evalcore.methods.geval import parse_steps, steps_request

# Each module registers its method on import (evalcore.registry.register_method); this order is the menus' order.
from evalcore.methods import geval, explicit, implicit, rts, mcq, pairwise, h2h, gptscore, mtbench  # noqa: E402,F401,I001

# name -> Method: the built-ins above and every installed plugin's (entry-point group judgescope.methods), read lazily
METHODS = registry.METHODS


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f"unknown method {name!r}; known: {sorted(METHODS)}") from None


def render_prompt(method: str | Method, task: ItemTask | PairTask | None, criteria: Criteria,
                  config: PromptLabels | dict[str, Any] | None = None) -> str:
    """The full text the judge is sent for one task (a placeholder task when ``task`` is None).

    Several distinct prompts (GPTScore ref->hypo, one per reference) are shown one after the other under a
    "--- request i of n ---" line; identical ones (n samples spread over requests) once.
    """
    m = get_method(method) if isinstance(method, str) else method
    if config is None:
        config = m.default_config()
    elif isinstance(config, dict):
        config = m.load_config(config)
    if task is None:
        task = placeholder_pair(criteria.dimension) if m.pairwise else placeholder_task(criteria.dimension)
    texts = list(dict.fromkeys(request_text(r) for r in m.build_requests(task, criteria, config)))
    if len(texts) == 1:
        return texts[0]
    return "\n\n".join(f"--- request {i} of {len(texts)} ---\n{t}" for i, t in enumerate(texts, 1))


__all__ = ["METHODS", "Method", "get_method", "parse_steps", "render_prompt", "steps_request"]
