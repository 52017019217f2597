"""Judging-engine speed: the engine against a bare AsyncOpenAI loop, both talking to the loopback server running as
a SEPARATE process (so the client's CPU time is the client's alone).

    python bench/bench_judge.py [--items 1600] [--concurrency 64] [--latency 1.0]

(a) wall time / ideal, ideal = items / concurrency x latency; target <= 1.25 (the engine's figure includes its
    capability probe, one extra round trip, and its SQLite writes), next to the bare loop's ratio;
(b) client CPU time per judgment (time.process_time of this process), engine vs bare loop; target <= 1.5x;
(c) a repeat run served wholly from the cache: requests made (must be 0) and wall time;
(d) requests and completion tokens per judgment: G-Eval log-prob path vs the 20-sample path;
(e) a rate-limited loopback (an RPM limit well below what concurrency 64 would send): the engine's throughput as a
    share of the limit and its share of requests answered 429 (targets >= 90 %, <= 2 %), beside a bare loop at a
    fixed concurrency of 64;
(f) two loopback endpoints (replicas) vs one, same per-endpoint concurrency: wall time ratio (target <= 0.6);
(g) the Batch API on the loopback: synchronous chat calls (must be 0) and scores identical to the online run;
(h) share of prompt tokens served from the server's prefix cache (a prefix repeated from an earlier request),
    SummEval listed system by system, sent as given vs grouped by shared prefix (documents together).
Items: SummEval (coherence) from evalcore.datasets, the G-Eval prompt of evalcore.methods.
    python bench/bench_judge.py --sections efgh     (only some sections; default: all)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai  # noqa: E402

from evalcore.datasets import load_dataset  # noqa: E402
from evalcore.judge import runner  # noqa: E402
from evalcore.judge.client import Endpoint  # noqa: E402
from evalcore.judge.spec import EngineOptions, ScoringSpec  # noqa: E402
from evalcore.store import Store  # noqa: E402
from evalcore.methods import get_method  # noqa: E402
from evalcore.methods.presets import PRESETS  # noqa: E402


def start_server(latency: float, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "evalcore.testing.loopback", "--port", "0", "--latency",
                             str(latency), *extra], stdout=subprocess.PIPE, text=True,
                            cwd=str(Path(__file__).resolve().parents[1]))
    line = proc.stdout.readline().strip()
    if not line.startswith("LISTENING "):
        proc.kill()
        raise RuntimeError(f"loopback server did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def server_requests(base_url: str) -> int:
    with urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + "/_stats") as r:
        return int(json.load(r)["requests"])


def server_stats(base_url: str) -> dict:
    with urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + "/_stats") as r:
        return json.load(r)


async def bare_loop(base_url: str, requests: list, concurrency: int) -> int:
    """What a researcher would write by hand: AsyncOpenAI + a semaphore, no cache, no store."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=6, timeout=60)
    sem = asyncio.Semaphore(concurrency)
    done = 0

    async def one(req) -> None:
        nonlocal done
        async with sem:
            r = await client.chat.completions.create(
                model="loop", messages=[{"role": a, "content": c} for a, c in req.messages],
                temperature=req.temperature, top_p=req.top_p, max_tokens=req.max_tokens, n=req.n,
                logprobs=req.logprobs or None, top_logprobs=req.top_logprobs)
            if r.choices:
                done += 1

    await asyncio.gather(*(one(r) for r in requests))
    await client.close()
    return done


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1600)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=1.0)
    ap.add_argument("--skip-samples", action="store_true", help="skip (d)'s 20-sample run")
    ap.add_argument("--sections", default="abcdefgh", help="which sections to run, e.g. 'efgh' (default: all)")
    a = ap.parse_args()
    if any(c in a.sections for c in "abcd"):
        sections_abcd(a)
    from bench_judge_scale import run_sections  # (e)-(h): rate limits, replicas, Batch API, prefix caching

    run_sections(a.sections)
    return 0


def sections_abcd(a: argparse.Namespace) -> int:
    """(a) wall time against the ideal and a bare loop, (b) client CPU per judgment, (c) a repeat from the cache,
    (d) the log-prob path against the 20-sample path: measured on a loopback server in its own process."""
    ds = load_dataset("summeval")
    crit = {"coherence": PRESETS["summeval"]["coherence"]}
    n = len(runner.item_tasks(ds, "coherence", limit=a.items))
    proc, base_url = start_server(a.latency)
    try:
        figures = measure_abcd(a, ds, crit, base_url)
    finally:
        proc.kill()
        proc.wait()
    print_abcd(a, figures, n, proc.pid)
    return 0


def engine_run(a: argparse.Namespace, ds, crit, endpoint, store, base_url: str, config=None) -> dict:
    """One run of the engine on the first ``a.items`` items: the run, its wall and CPU time, requests served."""
    r0 = server_requests(base_url)
    run, wall, cpu = timed(lambda: runner.score_dataset(
        ScoringSpec(ds, "geval", ["coherence"], crit, config, limit=a.items),
        EngineOptions(endpoint, concurrency=a.concurrency), store=store))
    return {"run": run, "wall": wall, "cpu": cpu, "requests": server_requests(base_url) - r0}


def measure_abcd(a: argparse.Namespace, ds, crit, base_url: str) -> dict:
    """The bare loop's figures, the engine's on a fresh store, its repeat from the cache, and (unless
    --skip-samples) the 20-sample path's."""
    from evalcore.types import Capabilities

    geval = get_method("geval")
    tasks = runner.item_tasks(ds, "coherence", limit=a.items)
    tmp = Path(tempfile.mkdtemp(prefix="bench_judge_"))
    endpoint = Endpoint(base_url, "loop", provider="local")
    planned, _ = geval.plan(geval.default_config(), Capabilities(chat_logprobs=True, top_logprobs=20,
                                                                 honours_n=True, echo_logprobs=True))
    reqs = [geval.build_requests(t, crit["coherence"], planned)[0] for t in tasks]
    r0 = server_requests(base_url)
    _, bare_wall, bare_cpu = timed(lambda: asyncio.run(bare_loop(base_url, reqs, a.concurrency)))
    f = {"bare": {"wall": bare_wall, "cpu": bare_cpu, "requests": server_requests(base_url) - r0}}
    store = Store(tmp / "bench.db")
    f["engine"] = engine_run(a, ds, crit, endpoint, store, base_url)  # fresh store
    f["repeat"] = engine_run(a, ds, crit, endpoint, store, base_url)  # every reply from the cache
    f["samples"] = None
    if not a.skip_samples:
        f["samples"] = engine_run(a, ds, crit, endpoint, store, base_url, {"probs_source": "samples"})
    return f


def print_abcd(a: argparse.Namespace, f: dict, n: int, pid: int) -> None:
    bare, eng, rep, smp = f["bare"], f["engine"], f["repeat"], f["samples"]
    ideal = n / a.concurrency * a.latency
    ok = int((eng["run"].judgments["status"] == "ok").sum())
    st1 = eng["run"].config["stats"]
    lp_req_per = (st1["requests"] - st1["probe_requests"]) / n
    lp_tok_per = st1["completion_tokens"] / n  # probe replies are 1 token each: negligible, kept honest below
    print(f"bench_judge: {n} SummEval coherence items, G-Eval, concurrency {a.concurrency}, latency {a.latency:g} s, "
          f"loopback server in a separate process (pid {pid})")
    print(f"ideal wall time = items / concurrency x latency = {ideal:.2f} s\n")
    w = 44
    print(f"{'figure':<{w}}{'engine':>14}{'bare loop':>14}{'ratio':>10}{'target':>10}")
    print("-" * (w + 48))
    print(f"{'(a) wall time (s)':<{w}}{eng['wall']:>14.2f}{bare['wall']:>14.2f}{eng['wall'] / bare['wall']:>10.2f}"
          f"{'':>10}")
    print(f"{'(a) wall / ideal':<{w}}{eng['wall'] / ideal:>14.3f}{bare['wall'] / ideal:>14.3f}{'':>10}"
          f"{'<= 1.25':>10}")
    print(f"{'(a) requests to the server':<{w}}{eng['requests']:>14d}{bare['requests']:>14d}{'':>10}"
          f"{'':>10}")
    print(f"{'(b) client CPU per judgment (ms)':<{w}}{eng['cpu'] / n * 1e3:>14.3f}{bare['cpu'] / n * 1e3:>14.3f}"
          f"{eng['cpu'] / bare['cpu']:>10.2f}{'<= 1.5x':>10}")
    print(f"{'    judgments ok / total':<{w}}{f'{ok}/{n}':>14}")
    print(f"{'(c) repeat from cache: requests':<{w}}{rep['requests']:>14d}{'':>14}{'':>10}{'= 0':>10}")
    print(f"{'(c) repeat from cache: wall time (s)':<{w}}{rep['wall']:>14.2f}{'':>14}{rep['wall'] / eng['wall']:>10.3f}")
    print(f"{'(c) repeat from cache: CPU per judgment (ms)':<{w}}{rep['cpu'] / n * 1e3:>14.3f}")
    print()
    print(f"{'(d) per judgment':<{w}}{'requests':>14}{'compl. tokens':>14}{'wall (s)':>10}")
    print(f"{'    log-prob path (logprob-weighted)':<{w}}{lp_req_per:>14.2f}{lp_tok_per:>14.2f}{eng['wall']:>10.2f}")
    if smp is not None:
        st3 = smp["run"].config["stats"]
        estimator = sorted(set(smp["run"].judgments["estimator"]))
        print(f"{'    20-sample path (' + ', '.join(estimator) + ')':<{w}}{smp['requests'] / n:>14.2f}"
              f"{st3['completion_tokens'] / n:>14.2f}{smp['wall']:>10.2f}")
        print(f"{'    ratio samples / log-probs':<{w}}{(smp['requests'] / n) / lp_req_per:>14.2f}"
              f"{(st3['completion_tokens'] / n) / lp_tok_per:>14.2f}")
    keys = ("requests", "attempts", "retries", "failures", "probe_requests", "prompt_tokens", "completion_tokens")
    print(f"\nengine stats: {json.dumps({k: st1[k] for k in keys})}")


if __name__ == "__main__":
    raise SystemExit(main())
