"""Sections (e)-(h) of ``bench/bench_judge.py``: scoring at a study's scale (run through that script).

Every figure is measured here, in one run, against loopback servers in SEPARATE processes (so client CPU is the
client's alone), on SummEval coherence items with the G-Eval prompt.
"""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
import time
from pathlib import Path

import openai

from bench_judge import server_stats, start_server
from evalcore.datasets import load_dataset
from evalcore.judge import batch, runner
from evalcore.judge.client import Endpoint
from evalcore.judge.spec import EngineOptions, ScoringSpec
from evalcore.store import Store
from evalcore.types import Capabilities
from evalcore.methods import get_method
from evalcore.methods.presets import PRESETS

CRIT = {"coherence": PRESETS["summeval"]["coherence"]}
W = 52


def _score(ds, endpoint, store, *, limit=None, progress=None, **options):
    spec = ScoringSpec(ds, "geval", ["coherence"], CRIT, limit=limit)
    return runner.score_dataset(spec, EngineOptions(endpoint, **options), store=store, progress=progress)


def _requests(ds, n):
    geval = get_method("geval")
    planned, _ = geval.plan(geval.default_config(), Capabilities(True, 20, True, False))
    return [geval.build_requests(t, CRIT["coherence"], planned)[0] for t in runner.item_tasks(ds, "coherence",
                                                                                              limit=n)]


async def _bare(base_url: str, requests: list, concurrency: int) -> tuple[int, int]:
    """A bare AsyncOpenAI loop at a FIXED concurrency (openai's own retries honour retry-after): (ok, failed)."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=6, timeout=60)
    sem = asyncio.Semaphore(concurrency)
    ok = failed = 0

    async def one(req) -> None:
        nonlocal ok, failed
        async with sem:
            try:
                await client.chat.completions.create(
                    model="loop", messages=[{"role": a, "content": c} for a, c in req.messages],
                    temperature=req.temperature, top_p=req.top_p, max_tokens=req.max_tokens, n=req.n,
                    logprobs=req.logprobs or None, top_logprobs=req.top_logprobs)
                ok += 1
            except openai.APIError:
                failed += 1

    await asyncio.gather(*(one(r) for r in requests))
    await client.close()
    return ok, failed


def section_e(ds, tmp: Path, *, rpm: float = 1800, latency: float = 0.5, items: int = 900) -> None:
    """(e) rate-limited loopback: engine (pacing + AIMD) vs a bare loop at concurrency 64. Throughput is answered
    requests over the whole wall time, the engine's start-up (capability probe, first round trip) included."""
    limit_rps = rpm / 60
    rows = []
    first: list[float] = []
    for who in ("bare", "engine"):
        proc, url = start_server(latency, "--rpm", str(rpm), "--burst-s", "1")
        try:
            s0 = server_stats(url)
            t0 = time.perf_counter()
            if who == "bare":
                ok, failed = asyncio.run(_bare(url, _requests(ds, items), 64))
            else:
                run = _score(ds, Endpoint(url, "loop", provider="local"), Store(tmp / "e.db"), concurrency=64,
                             limit=items, progress=lambda p: first.append(time.perf_counter() - t0) if p.done and
                             not first else None)
                ok = int((run.judgments["status"] == "ok").sum())
                failed = len(run.judgments) - ok
            wall = time.perf_counter() - t0
            s1 = server_stats(url)
        finally:
            proc.kill()
            proc.wait()
        sent = s1["requests"] - s0["requests"]
        limited = s1["rate_limited"] - s0["rate_limited"]
        answered = sent - limited
        rows.append((who, wall, answered / wall, answered / wall / limit_rps, limited / sent, sent, ok, failed))
    print(f"\n(e) rate-limited loopback: {rpm:g} RPM ({limit_rps:g} req/s, bucket of 1 s), latency {latency:g} s, "
          f"{items} items; concurrency 64 would send {64 / latency:g} req/s")
    print(f"{'':<{W}}{'engine':>14}{'bare loop':>14}{'target':>12}")
    e, b = rows[1], rows[0]
    print(f"{'    wall time (s)':<{W}}{e[1]:>14.2f}{b[1]:>14.2f}")
    print(f"{'    throughput (answered requests / s)':<{W}}{e[2]:>14.2f}{b[2]:>14.2f}")
    print(f"{'(e) throughput / limit':<{W}}{e[3]:>14.1%}{b[3]:>14.1%}{'>= 90%':>12}")
    print(f"{'(e) share of requests answered 429':<{W}}{e[4]:>14.2%}{b[4]:>14.2%}{'<= 2%':>12}")
    print(f"{'    HTTP requests (429s included)':<{W}}{e[5]:>14d}{b[5]:>14d}")
    print(f"{'    items ok / failed':<{W}}{f'{e[6]}/{e[7]}':>14}{f'{b[6]}/{b[7]}':>14}")
    if first:
        print(f"{'    engine start-up: first answer after (s)':<{W}}{first[0]:>14.2f}")


def section_f(ds, tmp: Path, *, latency: float = 1.0, items: int = 192, concurrency: int = 8) -> None:
    """(f) two replicas vs one at the same per-endpoint concurrency (a replica's capacity: 8 requests at a time,
    1 s each, as a judge model on one GPU), so the endpoints, not this client's CPU, bound the run. Both runs start
    from an empty store: their wall times include the capability probe and start-up."""
    procs = [start_server(latency) for _ in range(2)]
    try:
        urls = [u for _, u in procs]
        eps = [Endpoint(u, "loop", provider="local") for u in urls]
        t0 = time.perf_counter()
        one = _score(ds, eps[0], Store(tmp / "f1.db"), concurrency=concurrency, limit=items)
        w1 = time.perf_counter() - t0
        t0 = time.perf_counter()
        two = _score(ds, eps, Store(tmp / "f2.db"), concurrency=concurrency, limit=items)
        w2 = time.perf_counter() - t0
        answered = {e["base_url"]: e["answered"] for e in two.config["stats"]["endpoints"]}
    finally:
        for p, _ in procs:
            p.kill()
            p.wait()
    ok1 = int((one.judgments["status"] == "ok").sum())
    ok2 = int((two.judgments["status"] == "ok").sum())
    print(f"\n(f) replicas: {items} items, latency {latency:g} s, concurrency {concurrency} per endpoint "
          f"(ideal one endpoint: {items / concurrency * latency:.2f} s)")
    print(f"{'':<{W}}{'two':>14}{'one':>14}{'ratio':>10}{'target':>10}")
    print(f"{'(f) wall time (s)':<{W}}{w2:>14.2f}{w1:>14.2f}{w2 / w1:>10.2f}{'<= 0.6':>10}")
    print(f"{'    items ok':<{W}}{ok2:>14d}{ok1:>14d}")
    print(f"{'    requests answered per endpoint (two)':<{W}}{' / '.join(str(v) for v in answered.values()):>14}")


def section_g(ds, tmp: Path, *, items: int = 400) -> None:
    """(g) the Batch API: 0 synchronous chat calls, the same scores as online."""
    proc, url = start_server(0.05)
    try:
        ep = Endpoint(url, "loop", provider="local")
        online = _score(ds, ep, Store(tmp / "g_online.db"), concurrency=64, limit=items)
        s0 = server_stats(url)
        t0 = time.perf_counter()
        col = batch.score_dataset_batch(ScoringSpec(ds, "geval", ["coherence"], CRIT, limit=items), EngineOptions(ep),
                                        store=Store(tmp / "g_batch.db"), poll_s=0.1)
        wall = time.perf_counter() - t0
        s1 = server_stats(url)
    finally:
        proc.kill()
        proc.wait()
    chat = s1["by_path"].get("/v1/chat/completions", 0) - s0["by_path"].get("/v1/chat/completions", 0)
    sync_all = s1["requests"] - s0["requests"]
    a = online.judgments.set_index("item_id")["value"].sort_index()
    b = col.run.judgments.set_index("item_id")["value"].sort_index()
    same = bool(len(a) == len(b) and (a.index == b.index).all() and ((a == b) | (a.isna() & b.isna())).all())
    bst = col.run.config["batch"]
    print(f"\n(g) Batch API: {items} items through /v1/files + /v1/batches (loopback), then scored from the cache")
    print(f"{'(g) synchronous chat calls during the batch run':<{W}}{chat:>14d}{'':>14}{'':>10}{'= 0':>10}")
    print(f"{'    synchronous requests of any kind':<{W}}{sync_all:>14d}")
    print(f"{'(g) scores identical to the online run':<{W}}{str(same):>14}{'':>14}{'':>10}{'True':>10}")
    lines = f"{bst['answered_lines']}/{bst['failed_lines']}"
    print(f"{'    batch lines answered / failed':<{W}}{lines:>14}")
    print(f"{'    batch wall time incl. polling (s)':<{W}}{wall:>14.2f}")


def _system_major(ds):
    order = {s: i for i, s in enumerate(ds.systems)}
    items = ds.items.assign(_o=ds.items["system_id"].map(order)).sort_values(["_o", "doc_id"], kind="stable")
    return dataclasses.replace(ds, items=items.drop(columns="_o").reset_index(drop=True))


def section_h(ds, tmp: Path, *, items: int = 800, cache_tokens: int = 16384, concurrency: int = 64) -> None:
    """(h) share of prompt tokens in a prefix repeated from an earlier request: grouped vs as listed."""
    sub = dataclasses.replace(ds, items=ds.items.head(items))
    interleaved = _system_major(sub)
    rows = []
    for label, data, schedule in (("system by system, as given", interleaved, "as-given"),
                                  ("document by document, as given", sub, "as-given"),
                                  ("system by system, grouped by prefix", interleaved, "prefix")):
        proc, url = start_server(0.05, "--prefix-cache-tokens", str(cache_tokens))
        try:
            run = _score(data, Endpoint(url, "loop", provider="local"), Store(tmp / f"h{len(rows)}.db"),
                         concurrency=concurrency, schedule=schedule)
        finally:
            proc.kill()
            proc.wait()
        st = run.config["stats"]
        rows.append((label, schedule, st["cached_prompt_tokens"], st["prompt_tokens"]))
    print(f"\n(h) prefix cache: {items} items, server prefix cache of {cache_tokens:,} tokens (LRU, 16-token blocks), "
          f"concurrency {concurrency}")
    print(f"{'order of the items / schedule':<{W}}{'cached tok':>14}{'prompt tok':>14}{'share':>10}")
    for label, schedule, c, p in rows:
        print(f"{'(h) ' + label:<{W}}{c:>14,}{p:>14,}{c / p:>10.1%}")
    print(f"{'    grouped / as-given share (system-by-system list)':<{W}}{'':>14}{'':>14}"
          f"{(rows[2][2] / rows[2][3]) / max(rows[0][2] / rows[0][3], 1e-9):>10.2f}x")


def run_sections(sections: str) -> None:
    wanted = [c for c in "efgh" if c in sections]
    if not wanted:
        return
    ds = load_dataset("summeval")
    tmp = Path(tempfile.mkdtemp(prefix="bench_judge_scale_"))
    for c in wanted:
        {"e": section_e, "f": section_f, "g": section_g, "h": section_h}[c](ds, tmp)
