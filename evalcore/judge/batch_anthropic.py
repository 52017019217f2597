"""Scoring through Anthropic's Message Batches (half price; https://docs.anthropic.com/en/docs/build-with-claude/batch-processing),
with the OpenAI Batch API's submit / status / collect / cancel / resume (``evalcore.judge.batch``).

A run on the ``anthropic`` preset (Anthropic's OpenAI SDK compatibility layer online) may be batched through the
native Messages API with the ``anthropic`` package. Each request is the one an online run sends, as the
compatibility layer documents its translation (https://docs.anthropic.com/en/api/openai-sdk): system messages
hoisted into ``system``, ``temperature`` capped at 1, ``n`` exactly 1, log-probs ignored; its ``custom_id`` is the
online request's cache key, and its reply is stored under that key in the chat-completions shape the online run
stores (the text blocks as the content, thinking blocks as the reasoning, ``stop_reason: max_tokens`` as
``finish_reason: length``), so the collected replies are scored by the engine exactly as online ones, and a later
online run of the same work sends nothing.

The key goes where the online client's would (``client.key_for``: the endpoint's documented URL or one the operator
configured), never to a ``results_url`` on another host: the results are read only from the endpoint's own host.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from evalcore.judge.client import Endpoint, key_for
from evalcore.types import Capabilities, ChatRequest, Request

if TYPE_CHECKING:  # an optional dependency: imported where a Message Batch is made (``api``)
    import anthropic
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from anthropic.types.messages import MessageBatch

ROUTE = "anthropic:/v1/messages/batches"  # the batches table's ``route`` of a Message Batch
MAX_REQUESTS = 100_000  # Anthropic's limit of requests per message batch
# what the compatibility layer documents: no log-probs (ignored), n exactly 1, no completions route
CAPABILITIES = Capabilities(chat_logprobs=False, top_logprobs=0, honours_n=False, echo_logprobs=False)
# the batch's processing_status -> the OpenAI batch statuses evalcore.judge.batch keeps
STATUS = {"in_progress": "in_progress", "canceling": "cancelling", "ended": "completed"}


def handles(endpoint: Endpoint) -> bool:
    return endpoint.provider == "anthropic"


def native_base(endpoint: Endpoint) -> str:
    """The Messages API's base URL: the compatibility layer's without its "/v1" (the SDK adds its own paths)."""
    return endpoint.base_url.rstrip("/").removesuffix("/v1")


def api(endpoint: Endpoint, api_key: str | None) -> anthropic.AsyncAnthropic:
    """``anthropic.AsyncAnthropic`` with the key the trust rules allow for this endpoint (redirects not followed)."""
    try:
        import anthropic
    except ImportError:  # pragma: no cover - an optional dependency
        raise RuntimeError("Anthropic's Message Batches need the anthropic package: pip install anthropic") from None
    return anthropic.AsyncAnthropic(api_key=key_for(endpoint, api_key), base_url=native_base(endpoint),
                                    max_retries=6, http_client=anthropic.DefaultAsyncHttpxClient(
                                        follow_redirects=False))


def message_params(endpoint: Endpoint, request: Request) -> dict[str, Any]:
    """One online chat request as Messages API parameters, translated as the compatibility layer documents."""
    if not isinstance(request, ChatRequest):
        raise ValueError("Anthropic's Message Batches take chat requests only (no completions route)")
    if request.n != 1:
        raise ValueError("a Message Batches request carries one sample (the compatibility layer: n must be 1)")
    system = "\n\n".join(c for r, c in request.messages if r in ("system", "developer"))
    messages = [{"role": r, "content": c} for r, c in request.messages if r not in ("system", "developer")]
    if not messages:  # a prompt sent in the system role alone: the Messages API needs a user turn
        messages, system = [{"role": "user", "content": system}], ""
    params: dict[str, Any] = {"model": endpoint.model, "max_tokens": request.max_tokens, "messages": messages}
    if system:
        params["system"] = system
    if "temperature" not in request.omit:
        params["temperature"] = min(float(request.temperature), 1.0)
    if "top_p" not in request.omit and request.top_p != 1.0:
        params["top_p"] = request.top_p
    if request.stop:
        params["stop_sequences"] = list(request.stop)
    return params


def chat_line(custom_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """One Message Batches result as the OpenAI batch output line ``evalcore.judge.batch`` reads: a succeeded
    message as a chat completion, an error with its message, a canceled or expired request as such."""
    kind = result.get("type")
    if kind == "succeeded":
        m = result.get("message") or {}
        blocks = m.get("content") or []
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        thinking = "".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking")
        finish = {"max_tokens": "length", "refusal": "content_filter"}.get(str(m.get("stop_reason")), "stop")
        u = m.get("usage") or {}
        p = int(u.get("input_tokens") or 0) + int(u.get("cache_read_input_tokens") or 0)
        message = {"role": "assistant", "content": text, **({"reasoning_content": thinking} if thinking else {})}
        body = {"id": m.get("id", custom_id), "object": "chat.completion", "created": 0, "model": m.get("model", ""),
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": p, "completion_tokens": int(u.get("output_tokens") or 0),
                          "total_tokens": p + int(u.get("output_tokens") or 0),
                          **({"prompt_tokens_details": {"cached_tokens": int(u["cache_read_input_tokens"])}}
                             if u.get("cache_read_input_tokens") else {})}}
        return {"custom_id": custom_id, "response": {"status_code": 200, "body": body}, "error": None}
    if kind in ("canceled", "expired"):
        code = "batch_cancelled" if kind == "canceled" else "batch_expired"
        return {"custom_id": custom_id, "response": None, "error": {"code": code, "message": kind}}
    err = ((result.get("error") or {}).get("error") or result.get("error") or {})
    return {"custom_id": custom_id, "response": {"status_code": 400, "body": {"error": {
        "message": str(err.get("message") or kind)}}}, "error": None}


async def create(client: anthropic.AsyncAnthropic, endpoint: Endpoint, keyed: list[tuple[str, Request]]) -> MessageBatch:
    """One message batch of ``keyed`` (cache key, request) pairs; the key is the request's custom_id."""
    return await client.messages.batches.create(
        # the parameters as the compatibility layer translates them, in the JSON shape the SDK types as its TypedDict
        requests=[{"custom_id": k, "params": cast("MessageCreateParamsNonStreaming", message_params(endpoint, r))}
                  for k, r in keyed])


def status_fields(b: MessageBatch) -> dict[str, Any]:
    """What the batches table keeps of a message batch: its status in the OpenAI batch's words and its counts."""
    rc = b.request_counts
    done = int(rc.succeeded) + int(rc.errored) + int(rc.canceled) + int(rc.expired)
    status = STATUS.get(b.processing_status, b.processing_status)
    if status == "completed" and int(rc.canceled) and not int(rc.succeeded):
        status = "cancelled"
    return {"status": status, "completed": int(rc.succeeded), "failed": done - int(rc.succeeded),
            "total": done + int(rc.processing)}


async def results(client: anthropic.AsyncAnthropic, endpoint: Endpoint, batch_id: str
                  ) -> AsyncIterator[dict[str, Any]]:
    """The batch's result lines (as ``chat_line`` dicts), read only from the endpoint's own host."""
    b = await client.messages.batches.retrieve(batch_id)
    url = b.results_url or ""
    if urlsplit(url).netloc and urlsplit(url).netloc != urlsplit(native_base(endpoint)).netloc:
        raise RuntimeError(f"message batch {batch_id}: its results_url is on another host "
                           f"({urlsplit(url).netloc}): not sent the key; not collected")
    async for line in await client.messages.batches.results(batch_id):
        yield chat_line(line.custom_id, line.result.model_dump())


__all__ = ["ROUTE", "MAX_REQUESTS", "CAPABILITIES", "handles", "api", "message_params", "chat_line", "create",
           "status_fields", "results", "native_base"]
