"""The command that resumes a stopped or interrupted run: what the Score page shows and ``evalcore.cli`` checks.

The arguments are built here, in the library, so that a page shows them without importing the command line;
``evalcore.cli.resume_command`` parses them back with ``python -m evalcore``'s own parser and compares
(tests/test_views_score.py runs that check on every kind of run), so an option renamed there fails in the tests
rather than in the user's shell.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from evalcore.model import Run


def resume_args(run: Run) -> list[str]:
    """The ``score`` arguments that resume ``run`` (interrupted or stopped) where it stopped: its dataset, method,
    model and recorded endpoint, and ``--run``. A run that recorded its spec resumes as recorded (documents
    included); an older one is described by its flags (dimensions, ``--limit``, without which the resume would
    score the whole dataset, and its method config)."""
    cfg, ep = run.config, run.config.endpoint or {}
    args = ["score", "--dataset", run.dataset_id, "--method", run.method, "--model", run.model,
            "--provider", ep.get("provider", "openai"), "--base-url", ep.get("base_url", "")]
    if not cfg.spec:
        for dim in (cfg.criteria or {}):
            args += ["--dimension", dim]
        if cfg.limit:
            args += ["--limit", str(cfg.limit)]
        if cfg.requested_config:
            args += ["--config", json.dumps(cfg.requested_config)]
    if _draws(run) > 1:  # the recorded spec says it too; shown so the command says what the run costs
        args += ["--draws", str(_draws(run))]
    return args + ["--run", run.run_id]


def _draws(run: Run) -> int:
    """The draws per item ``run`` was scored with (1 for a run of one draw or one that recorded no spec)."""
    return int((run.config.spec or {}).get("draws", 1) or 1)


def resumed_as(run: Run) -> dict[str, Any]:
    """What ``score`` must read from the resume command of ``run`` (its parsed arguments, ``config`` as JSON)."""
    cfg, ep = run.config, run.config.endpoint or {}
    wanted = {"command": "score", "dataset": run.dataset_id, "method": run.method, "model": run.model,
              "provider": ep.get("provider", "openai"), "base_url": [ep.get("base_url", "")], "run": run.run_id,
              "dimension": None, "limit": None, "config": None, "draws": _draws(run)}
    if not cfg.spec:
        wanted |= {"dimension": list(cfg.criteria or {}) or None, "limit": int(cfg.limit or 0) or None,
                   "config": cfg.requested_config or None}
    return wanted


def sampling_reason(run: Run) -> str | None:
    """Why ``run``'s judge samples (a rerun would give other scores), in words; None for a greedy judge. Read from
    what the run recorded: the engine's variant note when it turned greedy requests into samples (a reasoning model
    held at its default temperature, ``evalcore.judge.contract.variant_notes``), else the temperature or decoding
    of its planned config (a published run's own temperature)."""
    cfg = run.config
    if "greedy replies became samples" in (cfg.variant or ""):
        return ("its endpoint accepts only its default temperature (a reasoning model), so the engine sent its "
                "greedy requests as samples at that temperature")
    planned = cfg.method_config or {}
    temperature = planned.get("temperature", cfg.temperature)
    if isinstance(temperature, (int, float)) and temperature > 0:
        return f"it samples its replies at temperature {temperature:g}"
    if planned.get("decoding") == "sampling" or planned.get("probs_source") == "samples":
        return "it samples its replies"
    return None


def second_draw_args(run: Run, dimension: str, *, documents: int = 10) -> list[str] | None:
    """The ``score`` arguments of a new run that asks ``run``'s judge twice (``--draws 2``) on ``documents`` whole
    documents drawn at random: the noise of its draws measured at the cost of 2 x those documents' items. The same
    dataset, method, model, endpoint and method config; the method's default criteria (pass
    ``--criteria-version`` for a saved version). None when ``run`` was not scored by a method ``score`` runs."""
    from evalcore import registry

    if run.method not in registry.METHODS:
        return None
    cfg, ep = run.config, run.config.endpoint or {}
    args = ["score", "--dataset", run.dataset_id, "--method", run.method, "--model", run.model,
            "--provider", ep.get("provider", "openai")]
    if ep.get("base_url"):
        args += ["--base-url", ep["base_url"]]
    args += ["--dimension", dimension, "--sample-docs", str(int(documents)), "--draws", "2"]
    spec = cfg.spec or {}
    config = spec.get("config") if cfg.spec else cfg.requested_config
    if config:
        args += ["--config", json.dumps(config, sort_keys=True)]
    if spec.get("reasoning_effort"):
        args += ["--reasoning-effort", str(spec["reasoning_effort"])]
    if spec.get("max_completion_tokens"):
        args += ["--max-completion-tokens", str(int(spec["max_completion_tokens"]))]
    return args + ["--label", f"two draws: {run.label or run.run_id}"]


def shell_line(args: list[str]) -> str:
    """``python -m evalcore`` with ``args``, as one shell command line."""
    return " ".join(shlex.quote(a) for a in ["python", "-m", "evalcore", *args])


def resume_command(run: Run) -> str:
    """``resume_args`` as one shell command line."""
    return " ".join(shlex.quote(a) for a in ["python", "-m", "evalcore", *resume_args(run)])
