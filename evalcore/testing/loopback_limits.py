"""Two server-side behaviours of the loopback test double: an RPM/TPM rate limit and a prompt prefix cache.

``RateLimit``: token buckets for requests and tokens, refilled continuously at limit / 60 s with a burst capacity of
``burst_s`` seconds' worth (real providers enforce a per-minute limit over shorter windows too). An admitted request
costs one request and ``prompt tokens + max_tokens x n`` tokens (OpenAI counts max_tokens up front); a request over
either limit is answered 429 with ``retry-after``/``retry-after-ms``. Every reply carries OpenAI's headers
``x-ratelimit-limit-*``, ``x-ratelimit-remaining-*`` and ``x-ratelimit-reset-*``; ``enforce=False`` only announces
the limit (a test of the client's own pacing).

``PrefixCache``: vLLM-style automatic prefix caching over whitespace tokens in blocks of ``block`` tokens (a block is
reused only when every token before it matches too), with least-recently-used eviction once ``capacity_tokens`` are
held. ``lookup_insert`` returns how many leading prompt tokens were already cached, which the reply reports as
``usage.prompt_tokens_details.cached_tokens``.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass


@dataclass
class RateLimit:
    rpm: float | None = None  # requests per minute
    tpm: float | None = None  # tokens per minute
    burst_s: float = 1.0  # bucket capacity in seconds of the per-minute rate
    # False: the limit is announced in the headers but nothing is refused (an empty bucket stays at 0), as a
    # provider counting over a whole minute lets a short burst through: a test then sees the client's own pacing,
    # which 429s and their retry-after would otherwise mask
    enforce: bool = True

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        now = time.monotonic()
        self._r = self._cap_r
        self._t = self._cap_t
        self._at = now

    @property
    def _cap_r(self) -> float:
        return max(1.0, (self.rpm or 0) / 60.0 * self.burst_s)

    @property
    def _cap_t(self) -> float:
        return max(1.0, (self.tpm or 0) / 60.0 * self.burst_s)

    def _refill(self, now: float) -> None:
        dt = now - self._at
        self._at = now
        if self.rpm:
            self._r = min(self._cap_r, self._r + dt * self.rpm / 60.0)
        if self.tpm:
            self._t = min(self._cap_t, self._t + dt * self.tpm / 60.0)

    def admit(self, tokens: float) -> tuple[bool, dict[str, str]]:
        """(admitted?, headers to send). A refused request costs nothing."""
        with self._lock:
            now = time.monotonic()
            self._refill(now)
            tokens = min(tokens, self._cap_t)  # a request larger than the burst still runs when the bucket is full
            ok = (not self.rpm or self._r >= 1.0) and (not self.tpm or self._t >= tokens) or not self.enforce
            wait = 0.0
            if ok:
                if self.rpm:
                    self._r = max(0.0, self._r - 1.0)
                if self.tpm:
                    self._t = max(0.0, self._t - tokens)
            else:
                if self.rpm and self._r < 1.0:
                    wait = max(wait, (1.0 - self._r) / (self.rpm / 60.0))
                if self.tpm and self._t < tokens:
                    wait = max(wait, (tokens - self._t) / (self.tpm / 60.0))
            h: dict[str, str] = {}
            if self.rpm:
                h["x-ratelimit-limit-requests"] = f"{self.rpm:g}"
                h["x-ratelimit-remaining-requests"] = str(max(0, int(math.floor(self._r))))
                h["x-ratelimit-reset-requests"] = f"{(self._cap_r - self._r) / (self.rpm / 60.0):.3f}s"
            if self.tpm:
                h["x-ratelimit-limit-tokens"] = f"{self.tpm:g}"
                h["x-ratelimit-remaining-tokens"] = str(max(0, int(math.floor(self._t))))
                h["x-ratelimit-reset-tokens"] = f"{(self._cap_t - self._t) / (self.tpm / 60.0):.3f}s"
            if not ok:
                h["retry-after-ms"] = str(max(1, int(math.ceil(wait * 1000))))
                h["retry-after"] = f"{wait:.3f}"
            return ok, h


_WORD_RE = re.compile(r"\S+")


class PrefixCache:
    def __init__(self, capacity_tokens: int, block: int = 16) -> None:
        self.capacity_blocks = max(1, capacity_tokens // block)
        self.block = block
        self._blocks: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def lookup_insert(self, prompt: str) -> int:
        words = _WORD_RE.findall(prompt)
        h = hashlib.sha256()
        keys = []
        for i in range(0, len(words) - len(words) % self.block, self.block):
            h.update("\x1f".join(words[i:i + self.block]).encode())
            keys.append(h.copy().hexdigest())  # the hash of everything up to this block: a chained block key
        hit = 0
        with self._lock:
            for k in keys:
                if k in self._blocks:
                    hit += 1
                    self._blocks.move_to_end(k)
                else:
                    break
            for k in keys[hit:]:
                self._blocks[k] = None
            while len(self._blocks) > self.capacity_blocks:
                self._blocks.popitem(last=False)
        return hit * self.block


__all__ = ["RateLimit", "PrefixCache"]
