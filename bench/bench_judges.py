"""Every scoring method on every provider contract (evalcore.testing.loopback_profiles) through the engine: items
scored, how many are exact, refused requests, requests per item and the variant the run recorded.

    python bench/bench_judges.py [--items 8] [--pairs 4] [--profiles openai-reasoning ollama ...]

"exact": the item's score equals the reference, the same method with the variant the run used on the plain loopback,
whose answers are the profile's answers without reasoning (the reasoning holds a decoy score; a score read from it
would not be exact). G-Eval, RTS and MCQ on SummEval coherence (the first ``--items`` items); the pairwise methods on
PandaLM's annotated pairs (the first ``--pairs``, both orders). Reasoning profiles run with
--max-completion-tokens 512; each run is on a fresh store, then repeated on it (the repeat's requests and refusals
are shown: both should be 0).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.datasets import load_dataset  # noqa: E402
from evalcore.judge import runner  # noqa: E402
from evalcore.judge.client import Endpoint, EndpointUnusable  # noqa: E402
from evalcore.judge.spec import EngineOptions, default_spec  # noqa: E402
from evalcore.methods import METHODS  # noqa: E402
from evalcore.store import Store  # noqa: E402
from evalcore.testing.loopback import serve  # noqa: E402
from evalcore.testing.loopback_profiles import PROFILES  # noqa: E402
from evalcore.types import Capabilities  # noqa: E402

FULL = Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=True, echo_logprobs=True)
ITEM_METHODS, PAIR_METHODS = ("geval", "rts", "mcq"), ("pairwise", "h2h")
REASONING = {n for n, p in PROFILES.items() if p.reasoning}


def _frame(run):
    return run.comparisons if METHODS[run.method].pairwise else run.judgments


def _values(run):
    f = _frame(run)
    key = ["pair_id", "order"] if METHODS[run.method].pairwise else ["item_id"]
    return f.set_index(key)["value"].astype(float)


def cell(profile: str, method: str, data: dict, n_items: int, n_pairs: int, tmp: Path) -> dict:
    pairwise = METHODS[method].pairwise
    ds = data["pandalm"] if pairwise else data["summeval"]
    dim = ds.dimension_names[0] if pairwise else "coherence"
    spec = default_spec(ds, method, [dim], limit=n_pairs if pairwise else n_items,
                        max_completion_tokens=512 if profile in REASONING else None)
    store = Store(tmp / f"{profile}-{method}.db")
    with serve(profile=PROFILES[profile]) as srv:
        ep = Endpoint(srv.base_url, "judge", provider="local")
        try:
            run = runner.score_dataset(spec, EngineOptions(endpoint=ep, concurrency=8), store=store)
        except EndpointUnusable as e:
            return {"profile": profile, "method": method, "error": str(e)[:80]}
        again = runner.score_dataset(dataclasses.replace(spec, run_id=None), EngineOptions(endpoint=ep),
                                     store=store)
    ref_spec = dataclasses.replace(spec, config=run.config["method_config"], max_completion_tokens=None, run_id=None)
    with serve() as plain:
        ref = runner.score_dataset(ref_spec, EngineOptions(endpoint=Endpoint(plain.base_url, "judge",
                                                                               provider="local"),
                                                           capabilities=FULL, concurrency=8),
                                   store=Store(tmp / f"ref-{profile}-{method}.db"))
    got, want = _values(run), _values(ref)
    frame = _frame(run)
    ok = frame["status"].eq("ok")
    exact = int(((got - want.reindex(got.index)).abs() < 1e-12).sum())
    st = run.config["stats"]
    return {"profile": profile, "method": method, "tasks": len(frame), "scored": int(ok.sum()), "exact": exact,
            "refused": st["refused_requests"], "per_item": (st["requests"] - st["probe_requests"]) / len(frame),
            "again": f"{again.config['stats']['requests']}/{again.config['stats']['refused_requests']}",
            "variant": (run.config.get("variant") or "as configured").split(": ", 1)[-1]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--profiles", nargs="+", default=sorted(PROFILES))
    ap.add_argument("--methods", nargs="+", default=list(ITEM_METHODS + PAIR_METHODS))
    a = ap.parse_args(argv)
    data = {"summeval": load_dataset("summeval"), "pandalm": load_dataset("pandalm")}
    t0 = time.perf_counter()
    print(f"{'profile':<24}{'method':<10}{'scored':>8}{'exact':>7}{'refused':>8}{'req/item':>9}{'repeat':>8}  variant")
    with tempfile.TemporaryDirectory() as tmp:
        for profile in a.profiles:
            for method in a.methods:
                r = cell(profile, method, data, a.items, a.pairs, Path(tmp))
                if "error" in r:
                    print(f"{profile:<24}{method:<10}  {r['error']}")
                    continue
                print(f"{profile:<24}{method:<10}{r['scored']:>4}/{r['tasks']:<3}{r['exact']:>7}{r['refused']:>8}"
                      f"{r['per_item']:>9.1f}{r['again']:>8}  {r['variant']}", flush=True)
    print(f"({time.perf_counter() - t0:.1f} s; repeat = requests/refusals of the same run again on its store)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
