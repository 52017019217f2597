"""A judge's fingerprint and the hash of the human ratings a figure used: what must be equal for two figures to be
comparable (a CI gate refuses to compare runs whose fingerprints differ, or figures whose labels changed).

The fingerprint is derived from what a run records (``Run.config``, ``evalcore.model.RunConfig``), so it is the same
whenever the record is the same: a resumed run keeps its record and so its fingerprint; a prompt edit changes the
criteria's version hash and so the fingerprint. Its parts:

- ``model``: the model asked for; ``reported_model``: the model and snapshot the endpoint said answered (the
  responses' ``model`` field, recorded by the engine with the run: ``extra["reported_model"]``; "" for a run that
  does not record it, such as an import or a published run);
- ``endpoint``: the endpoint's identity (provider, base URL in one spelling, Azure's api_version; never a key),
  ``provider``;
- ``method``, ``variant`` (the method as it ran on this judge's contract, "" as asked);
- ``prompt_hash``: sha256 of every dimension's criteria version hash (its prompt texts and scale) and the method's
  template, when the method config names one;
- ``parameters``: the method's config as planned against the endpoint, with what the contract changed in the requests
  sent (``contract``), the parse mode and the reasoning options;
- ``hash``: sha256 of all of the above, in canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd

from evalcore.model import Dataset, Run

PARTS = ("model", "reported_model", "endpoint", "provider", "method", "variant", "prompt_hash", "parameters")


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha(value: object) -> str:
    return hashlib.sha256(_canonical(value).encode("utf-8")).hexdigest()


def prompt_hash(run: Run) -> str:
    """sha256 of the criteria's version hashes (by dimension) and the method's template, if any; "" when the run
    records neither (an imported run)."""
    c = run.config
    crit = {d: (v or {}).get("hash", "") for d, v in sorted((c.criteria or {}).items())}
    template = {k: v for k, v in (c.method_config or {}).items() if "template" in k or "prompt" in k}
    return _sha({"criteria": crit, "template": template}) if (crit or template) else ""


def fingerprint(run: Run) -> dict[str, Any]:
    """The run's fingerprint (the module docstring says what each part is), with its ``hash``."""
    c = run.config
    endpoint = dict(c.endpoint or {})
    parts = {
        "model": endpoint.get("model") or c.model or run.model,
        "reported_model": str((c.extra or {}).get("reported_model") or ""),
        "endpoint": {k: v for k, v in endpoint.items() if k != "model"},
        "provider": endpoint.get("provider", ""),
        "method": c.method or run.method,
        "variant": c.variant,
        "prompt_hash": prompt_hash(run),
        "parameters": {"method_config": c.method_config or {}, "contract": c.contract or {},
                       "parse_mode": c.parse_mode, "reasoning": c.reasoning_options or {},
                       "n": c.n, "temperature": c.temperature},
    }
    return {**parts, "hash": _sha(parts)}


def labels_hash(dataset: Dataset, dimensions: list[str] | None = None) -> str:
    """sha256 of the human ratings of ``dimensions`` (default: all): every gold score and every annotator's rating,
    in a canonical order, so the same ratings in another row order hash the same and any changed rating does not."""
    dims = set(dimensions or dataset.dimension_names)
    parts = []
    for frame, cols in ((dataset.human_scores, ["item_id", "dimension", "score"]),
                        (dataset.annotations, ["item_id", "dimension", "annotator", "value"])):
        f = frame[frame["dimension"].isin(dims)][cols] if not frame.empty else pd.DataFrame(columns=cols)
        f = f.astype({c: str for c in cols if c not in ("score", "value")})
        parts.append(sorted(tuple(r) for r in f.itertuples(index=False, name=None)))
    return _sha(parts)


def provenance(dataset: Dataset, run: Run, dimensions: list[str] | None = None) -> dict[str, Any]:
    """The keys ``meta --json`` adds at its top level: ``fingerprint`` and ``labels_hash``."""
    return {"fingerprint": fingerprint(run), "labels_hash": labels_hash(dataset, dimensions)}
