"""An editable price table for cost estimates (USD per million tokens).

The figures below are list prices copied by hand and WILL go stale: check your provider's pricing page. Override or
extend them without editing code with a JSON file, ``{"model-name": {"input": 2.5, "output": 10.0}, ...}``,
at ``$EVALCORE_PRICES`` (or ``~/.evalcore/prices.json``), or pass ``prices=`` to ``estimate``.
A model is priced by its exact name, or by a dated snapshot name the provider documents as the same model at the
same price (:data:`ALIASES`: "gpt-4o-mini-2024-07-18" -> "gpt-4o-mini"). Never by a prefix: "gpt-4.5-preview" is no
"gpt-4", nor is "gpt-4-32k" (priced twice as high). Local providers (vLLM, Ollama, llama.cpp) cost 0; any other
model gives ``None`` (unknown, not free), and the spending rule for an unknown price applies
(evalcore.judge.spending: confirm first; refused under a cap).

Two discounts (OpenAI's published rules; override per model with "cached_input", "batch_input", "batch_output"):
prompt tokens served from the provider's prompt cache cost ``cached_input`` (gpt-4.1 family: 25 % of input; gpt-4o
family and o-series: 50 %); the Batch API halves input and output prices (``BATCH_DISCOUNT``), cached input too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalcore import settings
from evalcore.judge.trust import LOCAL_PROVIDERS

# USD per 1M tokens: {"input": ..., "output": ...}
PRICES: dict[str, dict[str, float]] = {
    "gpt-4.1-nano": {"input": 0.10, "output": 0.40, "cached_input": 0.025},
    "gpt-4.1-mini": {"input": 0.40, "output": 1.60, "cached_input": 0.10},
    "gpt-4.1": {"input": 2.00, "output": 8.00, "cached_input": 0.50},
    "gpt-4o-mini": {"input": 0.15, "output": 0.60, "cached_input": 0.075},
    "gpt-4o": {"input": 2.50, "output": 10.00, "cached_input": 1.25},
    "gpt-4-turbo": {"input": 10.00, "output": 30.00},
    "gpt-4": {"input": 30.00, "output": 60.00},
    "gpt-3.5-turbo-instruct": {"input": 1.50, "output": 2.00},
    "gpt-3.5-turbo": {"input": 0.50, "output": 1.50},
    "davinci-002": {"input": 2.00, "output": 2.00},
    "babbage-002": {"input": 0.40, "output": 0.40},
    "o3-mini": {"input": 1.10, "output": 4.40, "cached_input": 0.55},
    "o4-mini": {"input": 1.10, "output": 4.40, "cached_input": 0.275},
    # retired snapshots, at their list prices when the bundled runs were made (see PRICE_SOURCES): they price the
    # usage Shen et al. released with their replies, for the Jury page's cost-agreement chart
    "gpt-4-0314": {"input": 30.00, "output": 60.00},
    "gpt-3.5-turbo-0301": {"input": 2.00, "output": 2.00},
}

# Where a built-in price comes from, and when, for the models whose price is no longer on the pricing page.
PRICE_SOURCES: dict[str, str] = {
    "gpt-4-0314": "OpenAI's list price for GPT-4 (8K context) at its release, 14 March 2023: $0.03 per 1K prompt "
                  "tokens, $0.06 per 1K completion tokens (https://openai.com/research/gpt-4, the API pricing page "
                  "of that date)",
    "gpt-3.5-turbo-0301": "OpenAI's list price for gpt-3.5-turbo at its release, 1 March 2023: $0.002 per 1K "
                          "tokens, prompt and completion alike "
                          "(https://openai.com/blog/introducing-chatgpt-and-whisper-apis)",
}

# Dated snapshots priced as their model, as OpenAI's model pages list them (https://platform.openai.com/docs/models:
# "gpt-4o" points to "gpt-4o-2024-08-06", ...) and its pricing page prices them
# (https://platform.openai.com/docs/pricing). A snapshot priced differently (gpt-4o-2024-05-13: $5 / $15,
# gpt-3.5-turbo-1106: $1 / $2) is not here: unknown until the price file names it.
ALIASES: dict[str, str] = {
    "gpt-4.1-2025-04-14": "gpt-4.1",
    "gpt-4.1-mini-2025-04-14": "gpt-4.1-mini",
    "gpt-4.1-nano-2025-04-14": "gpt-4.1-nano",
    "gpt-4o-2024-08-06": "gpt-4o",
    "gpt-4o-2024-11-20": "gpt-4o",
    "gpt-4o-mini-2024-07-18": "gpt-4o-mini",
    "gpt-4-turbo-2024-04-09": "gpt-4-turbo",
    "gpt-4-0613": "gpt-4",
    "gpt-3.5-turbo-0125": "gpt-3.5-turbo",
    "o3-mini-2025-01-31": "o3-mini",
    "o4-mini-2025-04-16": "o4-mini",
}

BATCH_DISCOUNT = 0.5  # the Batch API: half price for input and output
OPTIONAL_PRICES = ("cached_input", "batch_input", "batch_output")

FREE_PROVIDERS = LOCAL_PROVIDERS  # a local server costs nothing per token (evalcore.judge.trust.LOCAL_PROVIDERS)


def load_prices(path: str | Path | None = None) -> dict[str, dict[str, float]]:
    """The built-in table updated with the JSON override file (if any). Raises ValueError naming the file when the
    override is not a mapping of model name -> {"input": number, "output": number}."""
    table = {k: dict(v) for k, v in PRICES.items()}
    if path is None:
        path = settings.current().prices_path()  # $EVALCORE_PRICES or ~/.evalcore/prices.json
        if not Path(path).exists():
            return table
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"price table {p}: cannot read JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"price table {p}: expected an object of model name -> prices")
    for model, entry in data.items():
        if not (isinstance(entry, dict) and all(isinstance(entry.get(k), (int, float)) for k in ("input", "output"))):
            raise ValueError(f"price table {p}: entry {model!r} needs numeric 'input' and 'output' (USD per 1M tokens)")
        table[model] = {"input": float(entry["input"]), "output": float(entry["output"])}
        for k in OPTIONAL_PRICES:
            if k in entry:
                if not isinstance(entry[k], (int, float)):
                    raise ValueError(f"price table {p}: entry {model!r}: {k!r} must be a number (USD per 1M tokens)")
                table[model][k] = float(entry[k])
    return table


def price_for(model: str, *, provider: str = "openai", prices: dict[str, Any] | None = None) -> dict[str, float] | None:
    """The prices of ``model``: its own entry, else the entry of the model a documented snapshot name stands for
    (:data:`ALIASES`); None (unknown) for any other name. A local provider's model is free."""
    if provider in FREE_PROVIDERS:
        return {"input": 0.0, "output": 0.0}
    table = prices if prices is not None else load_prices()
    name = str(model).strip()
    if name in table:
        return table[name]
    alias = ALIASES.get(name)
    return table.get(alias) if alias is not None else None


def cost_usd(prompt_tokens: int, completion_tokens: int, *, model: str, provider: str = "openai",
             prices: dict[str, Any] | None = None) -> float | None:
    p = price_for(model, provider=provider, prices=prices)
    if p is None:
        return None
    return (prompt_tokens * p["input"] + completion_tokens * p["output"]) / 1e6


def unit_prices(model: str, *, provider: str = "openai", prices: dict[str, Any] | None = None,
                batch: bool = False) -> dict[str, float] | None:
    """USD per 1M tokens for prompt, cached prompt and completion tokens (None: unknown model).
    A model without a cached-input price is charged the full input price for cached tokens (no discount assumed)."""
    p = price_for(model, provider=provider, prices=prices)
    if p is None:
        return None
    inp, out = float(p["input"]), float(p["output"])
    cached = float(p.get("cached_input", inp))
    if batch:
        return {"input": float(p.get("batch_input", inp * BATCH_DISCOUNT)),
                "cached_input": cached * BATCH_DISCOUNT,
                "output": float(p.get("batch_output", out * BATCH_DISCOUNT))}
    return {"input": inp, "cached_input": cached, "output": out}


def cost_table(prompt_tokens: int, completion_tokens: int, *, cached_prompt_tokens: int = 0, model: str,
               provider: str = "openai", prices: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Rows of a cost table: uncached prompt, cached prompt and completion tokens, then the total, each with its
    price per 1M tokens and cost, online and through the Batch API (``None`` where the price is unknown).
    ``prompt_tokens`` includes the cached ones, as the APIs' ``usage.prompt_tokens`` does."""
    cached = max(0, min(int(cached_prompt_tokens), int(prompt_tokens)))
    parts = [("prompt tokens (not cached)", int(prompt_tokens) - cached, "input"),
             ("prompt tokens (cached)", cached, "cached_input"),
             ("completion tokens", int(completion_tokens), "output")]
    online = unit_prices(model, provider=provider, prices=prices)
    batch = unit_prices(model, provider=provider, prices=prices, batch=True)
    rows: list[dict[str, Any]] = []
    for label, n, k in parts:
        rows.append({"tokens": label, "count": n,
                     "usd_per_1m": None if online is None else online[k],
                     "usd": None if online is None else n * online[k] / 1e6,
                     "batch_usd_per_1m": None if batch is None else batch[k],
                     "batch_usd": None if batch is None else n * batch[k] / 1e6})
    total = {"tokens": "total", "count": sum(r["count"] for r in rows), "usd_per_1m": None,
             "usd": None if online is None else sum(r["usd"] for r in rows), "batch_usd_per_1m": None,
             "batch_usd": None if batch is None else sum(r["batch_usd"] for r in rows)}
    return rows + [total]
