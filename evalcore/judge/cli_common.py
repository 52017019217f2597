"""What both judge command lines (``score``/``export`` in :mod:`evalcore.judge.cli`, ``batch`` in
:mod:`evalcore.judge.batch_cli`) share, kept apart so that neither imports the other's module back."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from evalcore.judge.client import Endpoint
    from evalcore.store import Store


def store_of(args: argparse.Namespace) -> Store:
    """The store ``--db`` names, else the default one (``EVALCORE_DB``, else ~/.evalcore/evalcore.db)."""
    from evalcore.store import Store, default_store

    return Store(args.db) if getattr(args, "db", None) else default_store()


def endpoint_of(args: argparse.Namespace) -> Endpoint:
    """The endpoint the endpoint flags (``--provider``, ``--model``, ``--base-url``, ``--api-key-env``,
    ``--api-version``) describe."""
    import dataclasses

    from evalcore.judge.client import endpoint_from_preset

    base_url = args.base_url[0] if isinstance(args.base_url, list) else args.base_url  # --base-url repeats
    ep = endpoint_from_preset(args.provider, model=args.model, base_url=base_url,
                              api_key_env=args.api_key_env, api_version=args.api_version)
    # The command line is the operator's own: its --base-url may receive the environment's key
    # (evalcore.judge.trust). Pages never build an endpoint this way.
    return dataclasses.replace(ep, operator_configured=True)


@overload
def json_safe(x: dict[str, Any]) -> dict[str, Any]: ...


@overload
def json_safe(x: object) -> object: ...


def json_safe(x: object) -> object:
    """``x`` with NaN as None and numpy scalars as Python numbers, for ``json.dumps``: the one JSON-safe walk of
    the command line's documents (``meta --json``, ``plan --json``, ``score``'s summaries)."""
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        try:  # a numpy scalar first (a float32 NaN is no Python float until then)
            x = x.item()
        except (ValueError, AttributeError):  # an array of several values has .item() too: kept as it is
            pass
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


__all__ = ["store_of", "endpoint_of", "json_safe"]
