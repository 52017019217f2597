"""Labels: how fast a label is saved (one annotator, and two tabs writing at once), how long merging the labels into
SummEval takes (every page pays it once per change), and how long a sample-size plan takes.

    python bench/bench_annotation.py [--labels 200]

Prints figures and ratios; asserts nothing. The store is a temporary file.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore import labels, runs  # noqa: E402
from evalcore.store import Store  # noqa: E402


def timed(f, repeat: int = 5) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labels", type=int, default=200, help="labels per annotator")
    n = ap.parse_args().labels
    path = Path(tempfile.mkdtemp()) / "bench.db"
    store = Store(path)
    ds = runs.get_dataset("summeval", store, with_labels=False)
    order = labels.random_order(ds)

    t = time.perf_counter()
    for k in range(n):
        store.save_label("summeval", order[k], "coherence", "solo", k % 5 + 1)
    one = (time.perf_counter() - t) / n
    print(f"save_label, one writer:         {one * 1000:7.2f} ms per label ({n} labels)")

    def tab(name: str) -> None:
        s = Store(path)
        for k in range(n):
            s.save_label("summeval", order[k], "coherence", name, k % 5 + 1)
        s.close()

    t = time.perf_counter()
    threads = [threading.Thread(target=tab, args=(f"tab{i}",)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    two = (time.perf_counter() - t) / (2 * n)
    rows = store.label_rows("summeval")
    print(f"save_label, two tabs at once:   {two * 1000:7.2f} ms per label; {len(rows)} rows kept "
          f"(expected {3 * n}); ratio to one writer {two / one:.2f}")

    plain = timed(lambda: runs.get_dataset("summeval", store, with_labels=False))
    merged = timed(lambda: runs.get_dataset("summeval", store))
    view = timed(lambda: runs.get_dataset("summeval@labels", store))
    print(f"get_dataset summeval, no labels: {plain * 1000:7.1f} ms")
    print(f"get_dataset summeval + {len(labels.latest_labels(rows))} labels: {merged * 1000:7.1f} ms "
          f"(ratio {merged / plain:.2f})")
    print(f"get_dataset summeval@labels:     {view * 1000:7.1f} ms")

    run = runs.load_run("summeval/shen-gpt-3.5-turbo-0301-rts")
    plan = timed(lambda: labels.plan(ds, run, rows, "coherence", coefficient="kendall"))
    print(f"plan (kendall, {n} labelled items): {plan * 1000:7.1f} ms")
    alpha = timed(lambda: labels.labels_alpha(rows, "coherence", n_resamples=1000), repeat=3)
    print(f"alpha with 1000 BCa resamples ({n} items, 3 annotators): {alpha * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
