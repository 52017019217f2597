"""Spending needs consent: what a run may cost before it starts, on a server whose key is the operator's.

A link can prefill a run of any size (every method, every dimension, every item), and a visitor's one click on
"Start scoring" would spend the operator's money. The rule (issue 21, item 12), decided here and shown by the Score
page: nothing starts by opening a link (a run starts only on the button); a run whose estimate is above
``$EVALCORE_CONFIRM_USD`` (default 1 USD), or whose cost is unknown for a paid provider, needs an explicit
confirmation that names its cost, requests and host; and ``$EVALCORE_MAX_COST_USD``, when set, caps what one
browser session may start in total (a run that would pass it is refused, as is a paid run of unknown cost).
Local servers (vLLM, Ollama, llama.cpp) have no price: they need neither.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

CONFIRM_ENV = "EVALCORE_CONFIRM_USD"
CAP_ENV = "EVALCORE_MAX_COST_USD"
DEFAULT_CONFIRM_USD = 1.0


@dataclass(frozen=True)
class SpendDecision:
    """Whether a run may start: ``allowed`` (within the cap), ``needs_confirmation`` (ask first), ``reason``."""

    allowed: bool
    needs_confirmation: bool
    reason: str


def _env_usd(name: str, environ: Mapping[str, str], default: float | None) -> float | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        x = float(raw)
    except ValueError:
        return default
    return x if math.isfinite(x) and x >= 0 else default


def confirm_threshold(environ: Mapping[str, str] | None = None) -> float:
    env = os.environ if environ is None else environ
    return _env_usd(CONFIRM_ENV, env, DEFAULT_CONFIRM_USD)


def spending_cap(environ: Mapping[str, str] | None = None) -> float | None:
    env = os.environ if environ is None else environ
    return _env_usd(CAP_ENV, env, None)


def usd(x: float | None) -> str:
    return "unknown" if x is None else f"${x:,.2f}" if x >= 1 else f"${x:.4f}"


def decide(cost_usd: float | None, calls: int, *, local: bool, spent_usd: float = 0.0,
           confirm_over: float = DEFAULT_CONFIRM_USD, cap: float | None = None) -> SpendDecision:
    """The decision for a run whose calls to send cost ``cost_usd`` (None: the model's price is unknown), given what
    this session already started (``spent_usd``)."""
    if calls <= 0 or local:
        return SpendDecision(True, False, "nothing to pay: " + ("a local server" if local else "no call to send"))
    if cap is not None:
        if cost_usd is None:
            return SpendDecision(False, False, f"The operator capped spending at {usd(cap)} per session, and this "
                                               "model's price is unknown, so the run's cost cannot be checked.")
        if spent_usd + cost_usd > cap:
            return SpendDecision(False, False, f"This run's estimate ({usd(cost_usd)}) and the {usd(spent_usd)} "
                                               f"this session already started pass the operator's cap of "
                                               f"{usd(cap)} per session.")
    if cost_usd is None:
        return SpendDecision(True, True, "this model's price is unknown")
    if cost_usd > confirm_over:
        return SpendDecision(True, True, f"the estimate is above {usd(confirm_over)}")
    return SpendDecision(True, False, f"the estimate is at most {usd(confirm_over)}")
