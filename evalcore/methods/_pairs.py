"""What the two pairwise methods share: one request per presentation order, verdict -> value for the first text."""

from __future__ import annotations

from evalcore import parsers
from evalcore.types import Outcome, Response
from evalcore.methods.base import failed, ok, raw_of, reply_texts

# value of the FIRST text presented: a win 1, a loss 0, a tie 0.5 (003 App. E: each verdict worth 0.5 per order)
VERDICT_VALUE = {"first": 1.0, "second": 0.0, "tie": 0.5}


def pair_outcome(responses: list[Response], estimator: str, parse_mode: str) -> Outcome:
    texts = reply_texts(responses)
    if not texts:
        return failed("no reply from the endpoint", estimator)
    raw = raw_of(texts[:1])
    verdict = parsers.parse_pairwise(texts[0], mode=parse_mode)
    if not verdict.ok or verdict.verdict not in VERDICT_VALUE:
        return failed(verdict.reason or "no verdict found in reply", estimator, raw=raw)
    return ok(VERDICT_VALUE[verdict.verdict], estimator, raw=raw, reason=verdict.reason, verdict=verdict.verdict)
