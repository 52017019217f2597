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


def resume_command(run: Run) -> str:
    """``resume_args`` as one shell command line."""
    return " ".join(shlex.quote(a) for a in ["python", "-m", "evalcore", *resume_args(run)])
