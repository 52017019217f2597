"""The OpenAI Files and Batch APIs in the loopback test double (never a real judge).

Served routes: ``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``,
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``.

A batch runs on the server's loop in the background: validating -> in_progress (one line after another, each
answered by the same code as the synchronous endpoints, ``line_delay_s`` apart) -> finalizing -> completed, with
an output file (one ``{"custom_id", "response": {"status_code": 200, "body": ...}}`` line per answered request) and an
error file (failed lines: ``status_code`` 400 with an error body; expired lines: ``error.code == "batch_expired"``).
``BatchSwitches`` inject what real batches do: failed lines (by substring or a seeded share of prompts), expiry after
N lines, a cancel (the API call) that stops after the current line, a batch already completed when the create call
answers, output lines repeated (one custom_id answered twice), ids that two servers both hand out; a cancelled batch's unprocessed lines
appear in neither file, as older OpenAI batches did, so a client must handle both shapes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from evalcore.testing.loopback_limits import PrefixCache

TERMINAL = ("completed", "failed", "expired", "cancelled")


class BatchHost(Protocol):
    """What the batch routes use of the loopback server (``evalcore.testing.loopback.LoopbackServer``, which imports
    this module): its lock and per-path counts, its prefix cache, and the answers of its synchronous routes."""

    @property
    def _lock(self) -> threading.Lock: ...

    @property
    def by_path(self) -> dict[str, int]: ...

    @property
    def prefix_cache(self) -> PrefixCache | None: ...

    def _chat(self, req: dict[str, Any], prompt: str, fault: None) -> dict[str, Any]: ...

    def _completion(self, req: dict[str, Any], prompt: str, fault: None) -> dict[str, Any]: ...


@dataclass
class BatchSwitches:
    line_delay_s: float = 0.0  # time per processed line
    start_delay_s: float = 0.0  # time spent "validating"
    fail_match: str | None = None  # lines whose prompt contains this substring fail (HTTP 400 in the error file)
    fail_fraction: float = 0.0  # a share of lines fail, decided by the prompt's hash
    expire_after: int | None = None  # the batch expires after processing this many lines
    echo_key: bool = False  # the batch fails validation with an error text that repeats the caller's Authorization
    complete_at_create: bool = False  # the batch is processed before the create call answers: it comes back completed
    repeat_lines: int = 0  # the output file holds its first N answered lines twice (a custom_id answered twice)
    plain_ids: bool = False  # ids are a bare counter (batch-000001), so two such servers hand out the same ids
    sleep: Any = None  # how the delays pass: asyncio.sleep, or a test's SteppedClock.sleep (evalcore.testing.clock)


def _frac(*parts: object) -> float:
    return int(hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:12], 16) / float(16 ** 12)


def parse_multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """name -> (filename, bytes) of a multipart/form-data body."""
    boundary = None
    for part in content_type.split(";"):
        k, _, v = part.strip().partition("=")
        if k.lower() == "boundary":
            boundary = v.strip('"')
    if not boundary:
        raise ValueError("multipart body without a boundary")
    out: dict[str, tuple[str | None, bytes]] = {}
    for chunk in body.split(b"--" + boundary.encode()):
        chunk = chunk.strip(b"\r\n")
        if not chunk or chunk == b"--":
            continue
        head, _, data = chunk.partition(b"\r\n\r\n")
        name = filename = None
        for line in head.decode("utf-8", "replace").split("\r\n"):
            if line.lower().startswith("content-disposition"):
                for item in line.split(";")[1:]:
                    k, _, v = item.strip().partition("=")
                    if k == "name":
                        name = v.strip('"')
                    elif k == "filename":
                        filename = v.strip('"')
        if name:
            out[name] = (filename, data)
    return out


def _error(code: int, msg: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    return code, {"error": {"message": msg, "type": "invalid_request_error"}}, {}


class BatchService:
    def __init__(self, server: BatchHost, switches: BatchSwitches | None = None) -> None:
        self.server = server
        self.switches = switches or BatchSwitches()
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._cancel: set[str] = set()
        self._n = 0

    @staticmethod
    def handles(path: str) -> bool:
        return path.startswith("/v1/files") or path.startswith("/v1/batches")

    def _id(self, prefix: str) -> str:
        self._n += 1
        if self.switches.plain_ids:
            return f"{prefix}-{self._n:06d}"
        return f"{prefix}-{self._n:06d}-{hashlib.sha256(f'{time.time()}{self._n}'.encode()).hexdigest()[:8]}"

    def _count(self, path: str) -> None:
        with self.server._lock:
            self.server.by_path[path] = self.server.by_path.get(path, 0) + 1

    def _file(self, data: bytes, purpose: str, filename: str) -> dict[str, Any]:
        fid = self._id("file")
        self.files[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                           "filename": filename, "purpose": purpose, "status": "processed", "_data": data}
        return self.files[fid]

    @staticmethod
    def _public(obj: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in obj.items() if not k.startswith("_")}

    async def route(self, method: str, path: str, headers: dict[str, str], body: bytes):
        """(status, JSON or bytes, headers) for one request to /v1/files... or /v1/batches..."""
        parts = path.strip("/").split("/")  # v1, files|batches, id?, action?
        self._count("/" + "/".join(parts[:2]))
        if parts[1] == "files":
            return self._files_route(method, path, parts, headers, body)
        if method == "POST" and len(parts) == 2:
            return await self._create_batch(headers, body)
        b = self.batches.get(parts[2]) if len(parts) > 2 else None
        if b is None:
            return _error(404, f"no batch {path}")
        if method == "GET" and len(parts) == 3:
            return 200, dict(b), {}
        if method == "POST" and len(parts) == 4 and parts[3] == "cancel":
            if b["status"] not in TERMINAL:
                self._cancel.add(b["id"])
                b["status"] = "cancelling"
                b["cancelling_at"] = int(time.time())
            return 200, dict(b), {}
        return _error(404, f"no route {method} {path}")

    def _files_route(self, method: str, path: str, parts: list[str], headers: dict[str, str], body: bytes):
        """Upload a file (multipart POST), read its record or its content."""
        if method == "POST" and len(parts) == 2:
            try:
                form = parse_multipart(headers.get("content-type", ""), body)
            except ValueError as e:
                return _error(400, str(e))
            if "file" not in form:
                return _error(400, "no file in the upload")
            purpose = form.get("purpose", (None, b"batch"))[1].decode()
            return 200, self._public(self._file(form["file"][1], purpose, form["file"][0] or "upload.jsonl")), {}
        f = self.files.get(parts[2]) if len(parts) > 2 else None
        if f is None:
            return _error(404, f"no file {path}")
        if method == "GET" and len(parts) == 4 and parts[3] == "content":
            return 200, f["_data"], {}
        if method == "GET" and len(parts) == 3:
            return 200, self._public(f), {}
        return _error(404, f"no route {method} {path}")

    async def _create_batch(self, headers: dict[str, str], body: bytes):
        """A new batch over an uploaded input file: processed now (``complete_at_create``) or in the background."""
        try:
            req = json.loads(body or b"{}")
        except json.JSONDecodeError:
            return _error(400, "body is not JSON")
        f = self.files.get(req.get("input_file_id", ""))
        if f is None:
            return _error(400, f"no input file {req.get('input_file_id')!r}")
        if req.get("endpoint") not in ("/v1/chat/completions", "/v1/completions", "/v1/embeddings"):
            return _error(400, f"unsupported endpoint {req.get('endpoint')!r}")
        bid = self._id("batch")
        now = int(time.time())
        lines = [ln for ln in f["_data"].decode().splitlines() if ln.strip()]
        b = {"id": bid, "object": "batch", "endpoint": req["endpoint"], "errors": None,
             "input_file_id": f["id"], "completion_window": req.get("completion_window", "24h"),
             "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": now,
             "in_progress_at": None, "expires_at": now + 86400, "finalizing_at": None, "completed_at": None,
             "failed_at": None, "expired_at": None, "cancelling_at": None, "cancelled_at": None,
             "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
             "metadata": req.get("metadata") or {}}
        self.batches[bid] = b
        if self.switches.echo_key:  # a hostile or careless server: the key comes back in the batch's errors
            b.update(status="failed", failed_at=now, errors={"object": "list", "data": [
                {"code": "invalid_auth", "message": f"rejected {headers.get('authorization', '')}"}]})
            return 200, dict(b), {}
        if self.switches.complete_at_create:
            await self._process(bid, lines)
        else:
            asyncio.get_running_loop().create_task(self._process(bid, lines))
        return 200, dict(b), {}

    async def _process(self, bid: str, lines: list[str]) -> None:
        b = self.batches[bid]
        sw = self.switches
        out: list[str] = []
        errs: list[str] = []
        sleep = sw.sleep or asyncio.sleep
        try:
            if sw.start_delay_s:
                await sleep(sw.start_delay_s)
            if b["status"] == "validating":
                b["status"] = "in_progress"
                b["in_progress_at"] = int(time.time())
            ended = None
            for i, line in enumerate(lines):
                if bid in self._cancel:
                    ended = "cancelled"
                    break
                if sw.expire_after is not None and i >= sw.expire_after:
                    ended = "expired"
                    for rest in lines[i:]:
                        cid = json.loads(rest).get("custom_id")
                        errs.append(json.dumps({"id": self._id("batch_req"), "custom_id": cid, "response": None,
                                                "error": {"code": "batch_expired", "message": "This request could "
                                                          "not be executed before the completion window expired."}}))
                    break
                if sw.line_delay_s:
                    await sleep(sw.line_delay_s)
                ok, row = self._answer(line)
                (out if ok else errs).append(json.dumps(row))
                b["request_counts"]["completed" if ok else "failed"] += 1
            b["status"] = "finalizing"
            b["finalizing_at"] = int(time.time())
            out += out[:sw.repeat_lines]
            if out:
                b["output_file_id"] = self._file(("\n".join(out) + "\n").encode(), "batch_output", "output.jsonl")["id"]
            if errs:
                b["error_file_id"] = self._file(("\n".join(errs) + "\n").encode(), "batch_output", "errors.jsonl")["id"]
            final = ended or "completed"
            b["status"] = final
            b[f"{final}_at"] = int(time.time())
        except Exception as e:  # noqa: BLE001 - a malformed input file fails the batch, as the real API does
            b["status"] = "failed"
            b["failed_at"] = int(time.time())
            b["errors"] = {"object": "list", "data": [{"code": "invalid_file", "message": str(e)[:200]}]}

    def _answer(self, line: str) -> tuple[bool, dict[str, Any]]:
        item = json.loads(line)
        cid = item.get("custom_id")
        body = item.get("body") or {}
        url = item.get("url", "")
        srv = self.server
        chat = url == "/v1/chat/completions"
        prompt = ("\n".join(str(m.get("content", "")) for m in body.get("messages", [])) if chat
                  else str(body.get("prompt") or ""))
        rid = self._id("req")
        fail = (self.switches.fail_match is not None and self.switches.fail_match in prompt) or (
            self.switches.fail_fraction > 0 and _frac(prompt, "batch-fail") < self.switches.fail_fraction)
        if fail:
            return False, {"id": self._id("batch_req"), "custom_id": cid,
                           "response": {"status_code": 400, "request_id": rid,
                                        "body": {"error": {"message": "Invalid request (loopback batch switch)",
                                                           "type": "invalid_request_error"}}}, "error": None}
        if srv.prefix_cache is not None:
            body = dict(body, _cached_tokens=srv.prefix_cache.lookup_insert(prompt))
        payload = srv._chat(body, prompt, None) if chat else srv._completion(body, prompt, None)
        return True, {"id": self._id("batch_req"), "custom_id": cid,
                      "response": {"status_code": 200, "request_id": rid, "body": payload}, "error": None}


__all__ = ["BatchService", "BatchSwitches", "parse_multipart", "TERMINAL"]
