"""The loopback judge's Anthropic Message Batches (https://docs.anthropic.com/en/docs/build-with-claude/batch-processing,
API reference https://docs.anthropic.com/en/api/creating-message-batches): what ``anthropic.AsyncAnthropic``'s
``messages.batches`` calls reach.

* ``POST /v1/messages/batches`` ``{"requests": [{"custom_id", "params": {model, max_tokens, messages, system,
  temperature, top_p, stop_sequences}}]}`` -> a ``message_batch`` (``processing_status`` "in_progress");
* ``GET /v1/messages/batches/{id}`` -> its ``request_counts`` (processing, succeeded, errored, canceled, expired),
  ``processing_status`` "ended" and a ``results_url`` once every request ended;
* ``GET /v1/messages/batches/{id}/results`` -> JSONL, one ``{"custom_id", "result": {"type": "succeeded",
  "message": {...}} | {"type": "canceled"} | {"type": "expired"} | {"type": "errored", "error": {...}}}`` per request;
* ``POST /v1/messages/batches/{id}/cancel`` -> "canceling", then "ended" with the requests not run "canceled".

Each request is answered by the server's own chat reply to the same messages (``LoopbackServer._chat``, under its
profile), so a batched reply is the one the OpenAI compatibility layer gives online.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Protocol

PREFIX = "/v1/messages/batches"


class MessageBatchHost(Protocol):
    """What the Message Batches routes use of the loopback server (``evalcore.testing.loopback.LoopbackServer``,
    which imports this module): its lock and counters, its address, and the answer of its chat route."""

    requests_seen: int

    @property
    def _lock(self) -> threading.Lock: ...

    @property
    def by_path(self) -> dict[str, int]: ...

    @property
    def base_url(self) -> str: ...

    def _chat(self, req: dict[str, Any], prompt: str, fault: None) -> dict[str, Any]: ...


def _error(code: int, message: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    return code, {"type": "error", "error": {"type": "not_found_error" if code == 404 else "invalid_request_error",
                                            "message": message}}, {}


def chat_body(params: dict[str, Any]) -> dict[str, Any]:
    """A Messages API request's parameters as the chat-completions body the compatibility layer makes of them."""
    messages = ([{"role": "system", "content": params["system"]}] if params.get("system") else []) + [
        {"role": m["role"], "content": m["content"]} for m in params.get("messages", [])]
    body: dict[str, Any] = {"model": params.get("model"), "messages": messages, "max_tokens": params.get("max_tokens"),
                            "n": 1}
    for k in ("temperature", "top_p"):
        if k in params:
            body[k] = params[k]
    if params.get("stop_sequences"):
        body["stop"] = params["stop_sequences"]
    return body


def message_of(chat: dict[str, Any], model: str) -> dict[str, Any]:
    """A chat-completions reply as a Messages API ``message`` (text block; stop_reason; usage)."""
    c = chat["choices"][0]
    stop = {"length": "max_tokens", "stop": "end_turn"}.get(c.get("finish_reason"), "end_turn")
    text = c["message"].get("content") or ""
    u = chat.get("usage") or {}
    return {"id": f"msg_{abs(hash(text)) % 10**12:012d}", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": int(u.get("prompt_tokens", 0)), "output_tokens": int(u.get("completion_tokens", 0))}}


class AnthropicBatches:
    """Message batches held in memory, answered one request at a time on the server's loop."""

    def __init__(self, server: MessageBatchHost, line_delay_s: float = 0.0) -> None:
        self.server = server
        self.line_delay_s = line_delay_s
        self.sleep = asyncio.sleep  # how the delays pass: a test sets its SteppedClock's (evalcore.testing.clock)
        self.batches: dict[str, dict[str, Any]] = {}
        self.results: dict[str, list[dict[str, Any]]] = {}
        self._cancel: set[str] = set()
        self._n = 0
        # a hostile server's results_url on another host (tests/hardening): None = the server's own
        self.results_base: str | None = None

    @staticmethod
    def handles(path: str) -> bool:
        return path.startswith(PREFIX)

    async def route(self, method: str, path: str, body: bytes):
        rest = path[len(PREFIX):].strip("/").split("/") if path != PREFIX else []
        with self.server._lock:
            self.server.by_path[PREFIX] = self.server.by_path.get(PREFIX, 0) + 1
        if method == "POST" and not rest:
            return self._create(json.loads(body or b"{}"))
        b = self.batches.get(rest[0]) if rest else None
        if b is None:
            return _error(404, f"no message batch {path}")
        if method == "GET" and len(rest) == 1:
            return 200, dict(b), {}
        if method == "GET" and rest[1:] == ["results"] and b["processing_status"] == "ended":
            lines = "".join(json.dumps(r) + "\n" for r in self.results[b["id"]])
            return 200, lines.encode(), {"Content-Type": "application/binary"}
        if method == "POST" and rest[1:] == ["cancel"]:
            if b["processing_status"] != "ended":
                self._cancel.add(b["id"])
                b["processing_status"] = "canceling"
                b["cancel_initiated_at"] = _now()
            return 200, dict(b), {}
        return _error(404, f"no route {method} {path}")

    def _create(self, req: dict[str, Any]):
        requests = req.get("requests") or []
        if not requests:
            return _error(400, "requests: at least one request is required")
        self._n += 1
        bid = f"msgbatch_{self._n:06d}"
        self.batches[bid] = {"id": bid, "type": "message_batch", "processing_status": "in_progress",
                             "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0,
                                                "canceled": 0, "expired": 0},
                             "created_at": _now(), "ended_at": None, "expires_at": _now(), "archived_at": None,
                             "cancel_initiated_at": None, "results_url": None}
        self.results[bid] = []
        asyncio.get_running_loop().create_task(self._process(bid, requests))
        return 200, dict(self.batches[bid]), {}

    async def _process(self, bid: str, requests: list[dict[str, Any]]) -> None:
        b, counts, srv = self.batches[bid], self.batches[bid]["request_counts"], self.server
        for r in requests:
            await self.sleep(self.line_delay_s)
            counts["processing"] -= 1
            if bid in self._cancel:
                self.results[bid].append({"custom_id": r["custom_id"], "result": {"type": "canceled"}})
                counts["canceled"] += 1
                continue
            params = r.get("params") or {}
            body = chat_body(params)
            prompt = "\n".join(str(m["content"]) for m in body["messages"])
            with srv._lock:
                srv.requests_seen += 1
            chat = srv._chat(body, prompt, None)
            self.results[bid].append({"custom_id": r["custom_id"], "result": {
                "type": "succeeded", "message": message_of(chat, str(params.get("model")))}})
            counts["succeeded"] += 1
        b["processing_status"] = "ended"
        b["ended_at"] = _now()
        b["results_url"] = f"{self.results_base or srv.base_url.removesuffix('/v1')}{PREFIX}/{bid}/results"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


__all__ = ["AnthropicBatches", "chat_body", "message_of"]
