"""The alignment loop end to end (evalcore.align.align) against the loopback judge whose quality depends on the
prompt: wall time of a first run (everything sent) and of the same loop again (everything from the cache, the
final check counted again), with the requests the judge received and what the loop found.

    python bench/bench_align.py [--docs 24 100] [--candidates 3]

SummEval coherence, G-Eval (one request per item with log-probs), 16 systems per document, concurrency 16,
1,000 bootstrap resamples; a fresh store in a temporary folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore import datasets  # noqa: E402
from evalcore.align import AlignSettings, Settings, align  # noqa: E402
from evalcore.judge.client import Endpoint  # noqa: E402
from evalcore.judge.spec import EngineOptions  # noqa: E402
from evalcore.sampling import documents_subset  # noqa: E402
from evalcore.store import Store  # noqa: E402
from evalcore.testing.loopback import serve  # noqa: E402
from evalcore.testing.loopback_align import PromptQualityJudge  # noqa: E402


def one(full, n_docs: int, n_candidates: int) -> None:
    ds = documents_subset(full, list(dict.fromkeys(full.items["doc_id"]))[:n_docs])
    store = Store(Path(tempfile.mkdtemp()) / "s.db")
    with serve(scorer=PromptQualityJudge.for_dataset(ds, "coherence")) as srv:
        opts = EngineOptions(Endpoint(base_url=srv.base_url, model="loopback-judge", provider="vllm",
                                      api_key_env="VLLM_API_KEY"), concurrency=16)
        times, sent = [], []
        for _ in range(2):
            before = srv.requests_seen
            t = time.perf_counter()
            report = align(ds, "coherence", "geval", opts,
                           AlignSettings(n_candidates=n_candidates, agreement=Settings(n_resamples=1000)), store=store)
            times.append(time.perf_counter() - t)
            sent.append(srv.requests_seen - before)
    tst = report.test
    print(f"{n_docs:>5} docs {len(ds.items):>6} items  first {times[0]:6.1f} s ({sent[0]:>5} requests)  again "
          f"{times[1]:5.1f} s ({sent[1]} requests, check {tst.check_number})  ratio {times[0] / times[1]:4.1f}x  "
          f"chosen {report.chosen.candidate.source}: test diff {tst.difference.statistic:.3f} "
          f"[{tst.difference.ci_low:.3f}, {tst.difference.ci_high:.3f}] p={tst.difference.pvalue:.3g} "
          f"optimism {tst.optimism:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, nargs="+", default=[24, 100])
    ap.add_argument("--candidates", type=int, default=3)
    a = ap.parse_args()
    full = datasets.load_dataset("summeval")
    for n in a.docs:
        one(full, n, a.candidates)


if __name__ == "__main__":
    main()
