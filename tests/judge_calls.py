"""The engine's calls with the keywords the tests were written in (``method=``, ``criteria_by_dim=``, ``endpoint=``,
``concurrency=`` ...), split into the two values the engine takes: the :class:`ScoringSpec` (what to score) and the
:class:`EngineOptions` (how to reach the judge). Everything else (store, progress, cancel, prices, wait ...) is
passed through as the engine's own keywords."""

from __future__ import annotations

from typing import Any

from evalcore.judge import batch, runner
from evalcore.judge.spec import EngineOptions, ScoringSpec

SPEC_KEYS = {"method": "method", "dimensions": "dimensions", "criteria_by_dim": "criteria", "config": "config",
             "limit": "limit", "pairs": "pairs", "parse_mode": "parse_mode", "label": "label", "run_id": "run_id"}
OPTION_KEYS = ("endpoint", "api_key", "concurrency", "schedule", "max_retries", "timeout_s", "reprobe",
               "capabilities")


def split(dataset: Any, **kw: Any) -> tuple[ScoringSpec, EngineOptions, dict[str, Any]]:
    """(spec, options, the remaining keywords)."""
    spec_kw = {SPEC_KEYS[k]: kw.pop(k) for k in list(kw) if k in SPEC_KEYS}
    options_kw = {k: kw.pop(k) for k in list(kw) if k in OPTION_KEYS}
    spec_kw.setdefault("dimensions", None)
    spec = ScoringSpec(dataset, **spec_kw)
    return spec, EngineOptions(**options_kw), kw


def score_dataset(dataset: Any, **kw: Any) -> Any:
    spec, options, rest = split(dataset, **kw)
    return runner.score_dataset(spec, options, **rest)


def estimate(dataset: Any, **kw: Any) -> Any:
    spec, options, rest = split(dataset, **kw)
    return runner.estimate(spec, options, **rest)


def submit(dataset: Any, **kw: Any) -> Any:
    spec, options, rest = split(dataset, **kw)
    return batch.submit(spec, options, **rest)


def score_dataset_batch(dataset: Any, **kw: Any) -> Any:
    spec, options, rest = split(dataset, **kw)
    return batch.score_dataset_batch(spec, options, **rest)
