"""A judge drawn K times per item: the requests of each draw, the draws' rows, and the judgment they make.

A judge that samples (a temperature above 0, a reasoning model held at its default temperature) gives another score
when asked again; how much is what ``evalcore.meta.draw_reliability`` measures. A run of ``ScoringSpec.draws`` = K
sends every item's requests K times:

* draw 0 is the request exactly as a one-draw run sends it (same body, same cache key), so an existing cache
  answers it and a run of one draw is unchanged;
* draw d > 0 carries ``draw = d`` in its cache key (``ChatRequest.draw``, never sent), so draw 2 is never served
  draw 1's reply, and a ``seed`` of its own (``draw_seed``) where the endpoint honours one; an endpoint that refuses
  seeds has them left out by its contract (``evalcore.judge.contract``, rule ``leave-out``), its draws are then
  independent samples that a rerun does not reproduce (the cache does).

A method that already samples (G-Eval's fallback of 20 samples, Explicit's ``n_samples`` > 1: estimators
``sample-mean(n=...)``) keeps each sample as a draw, scored alone by the method itself (``item_draws``); with K > 1
the samples of every draw are numbered on. The item's judgment is then the aggregate of its draws
(``evalcore.model.aggregate_draws``: the mean of the draws that parsed, the mode for a categorical label), except for
a one-draw run of a sampling method, whose judgment stays the method's own estimate (as before draws were kept).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

import pandas as pd

from evalcore.model import DRAW_COLUMNS, STATUS_FAILED, STATUS_OK, aggregate_draws
from evalcore.types import Outcome, Request, Response

# Seeds of draw d are ``d * DRAW_SEED_STRIDE`` on from the request's own: a method spreading its samples over
# several requests seeds them 0..n-1 (methods.base.sample_requests), n far below the stride.
DRAW_SEED_STRIDE = 1000


def draw_seed(request: Request, draw: int) -> int | None:
    """The seed draw ``draw`` of ``request`` is sent with (None for draw 0: its request is left as it was)."""
    if draw == 0:
        return request.seed
    return (request.seed or 0) + draw * DRAW_SEED_STRIDE


def draw_request(request: Request, draw: int) -> Request:
    """``request`` as draw ``draw`` sends it: itself for draw 0; its own cache key and seed for the others."""
    if draw == 0:
        return request
    return dataclasses.replace(request, draw=draw, seed=draw_seed(request, draw))


def is_sampled(outcome: Outcome, responses: list[Response]) -> bool:
    """Whether ``outcome`` is the mean of several sampled replies (each then a draw of its own)."""
    choices = sum(len(r.choices) for r in responses)
    return choices > 1 and str(outcome.estimator or "").startswith("sample-mean")


def item_draws(outcome: Outcome, responses: list[Response], score_alone: Callable[[list[Response]], Outcome],
               *, first: int = 0) -> list[dict[str, Any]]:
    """The draw rows (``draw``, ``raw``, ``value``, ``status``, ``reason``) one draw's replies make, numbered from
    ``first``: one row for the outcome, or one per sample of a sampling method, each sample scored alone by the
    method (``score_alone`` on a response holding that one choice)."""
    if not is_sampled(outcome, responses):
        return [_row(first, outcome)]
    rows: list[dict[str, Any]] = []
    for r in responses:
        for c in r.choices:
            one = score_alone([dataclasses.replace(r, choices=[c])])
            rows.append(_row(first + len(rows), one))
    return rows


def _row(draw: int, outcome: Outcome) -> dict[str, Any]:
    ok = outcome.status == STATUS_OK and outcome.value is not None
    value = float(outcome.value) if ok and outcome.value is not None else None
    return {"draw": int(draw), "raw": outcome.raw or "", "value": value,
            "status": STATUS_OK if ok else STATUS_FAILED, "reason": "" if ok else (outcome.reason or "no value")}


def aggregate_outcome(rows: list[dict[str, Any]], outcomes: list[Outcome], *, categorical: bool = False) -> Outcome:
    """The judgment of an item judged in ``len(outcomes)`` draws (``rows``: their draw rows): the draws' aggregate
    (``model.aggregate_draws``), failed only when no draw parsed; ``raw`` the draws' replies as a JSON list."""
    frame = pd.DataFrame([{"item_id": "", "dimension": "", **r} for r in rows], columns=DRAW_COLUMNS)
    agg = aggregate_draws(frame, categorical=categorical).iloc[0]
    first = outcomes[0].estimator if outcomes else ""
    rule = "mode" if categorical else "mean"
    estimator = f"{rule}-of-draws(k={len(outcomes)})" + (f": {first}" if first else "")
    detail = {"draws": len(outcomes), "draw_rows": int(agg["n_draws"]), "draw_rows_ok": int(agg["n_ok"])}
    raw = json.dumps([o.raw or "" for o in outcomes], ensure_ascii=False)
    if agg["status"] != STATUS_OK:
        reasons = sorted({o.reason for o in outcomes if o.reason})
        return Outcome(value=None, status=STATUS_FAILED, estimator=estimator, raw=raw, detail=detail,
                       reason=f"no draw of {len(outcomes)} gave a value" + (f": {reasons[0]}" if reasons else ""))
    return Outcome(value=float(agg["value"]), status=STATUS_OK, estimator=estimator, raw=raw, detail=detail)


__all__ = ["DRAW_SEED_STRIDE", "draw_seed", "draw_request", "is_sampled", "item_draws", "aggregate_outcome"]
