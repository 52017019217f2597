"""Import speed and memory: a 1,000,000-row long CSV through ``evalcore.importers`` (today's reader) beside the
reader this replaced (``git show <rev>:evalcore/importers.py``, the single-module version on main before the
importers package), which is timed on a smaller file and in a subprocess of its own so its memory is measured apart.

    python bench/bench_import.py [--rows 1000000] [--old-rows 100000] [--old-rev bee092b]

Prints seconds and peak RSS (VmHWM of a fresh subprocess per measurement) for: reading + checking + building the
Dataset, and saving it to a temporary store. The target: 1,000,000 rows under 10 s and under 1.5 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD_REV = "bee092b"  # main before the importers package: evalcore/importers.py, row-by-row csv module reader


def write_long_csv(path: Path, rows: int, *, systems: int = 8, dims: tuple[str, ...] = ("coherence", "consistency",
                                                                                      "fluency", "relevance")) -> None:
    """rows = items x dimensions; every item has an output text, its doc a source text repeated on each row."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    n_items = rows // len(dims)
    item = np.arange(n_items)
    doc = item // systems
    frame = pd.DataFrame({
        "doc_id": np.repeat([f"d{d}" for d in doc], len(dims)),
        "system": np.repeat([f"sys{s}" for s in item % systems], len(dims)),
        "summary": np.repeat([f"Summary {i}: the council approved the park, work starts in May." for i in item],
                             len(dims)),
        "article": np.repeat([f"Article {d}. The council met on Monday and approved a new park." for d in doc],
                             len(dims)),
        "dimension": np.tile(dims, n_items),
        "score": rng.integers(1, 6, size=n_items * len(dims)),
    })
    if path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    elif path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)


CHILD = r"""
import json, sys, time, importlib.util
from pathlib import Path
path, which, old_file, root = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
sys.path.insert(0, root)
if which == "old":
    spec = importlib.util.spec_from_file_location("old_importers", old_file)
    mod = importlib.util.module_from_spec(spec); sys.modules["old_importers"] = mod; spec.loader.exec_module(mod)
else:
    import evalcore.importers as mod
m = mod.ColumnMapping(doc_id="doc_id", system_id="system", output="summary", source="article",
                      dimension="dimension", value="score", scales={d: (1, 5) for d in
                      ("coherence", "consistency", "fluency", "relevance")})
t0, c0 = time.perf_counter(), time.process_time()
ds = mod.load_user_dataset(path, m)
t_load, c_load = time.perf_counter() - t0, time.process_time() - c0
from evalcore.store import Store
import tempfile, os
with tempfile.TemporaryDirectory() as tmp:
    t0 = time.perf_counter()
    Store(os.path.join(tmp, "b.db")).save_dataset(ds)
    t_save = time.perf_counter() - t0
# VmHWM: this process's own peak (ru_maxrss would carry over the parent's peak across fork + exec)
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
print(json.dumps({"load_s": t_load, "load_cpu_s": c_load, "save_s": t_save, "peak_rss_mb": rss, "items": len(ds.items),
                  "ratings": len(ds.human_scores)}))
"""


APP_CHILD = r"""
import json, os, sys, time
from streamlit.testing.v1 import AppTest
path, root = sys.argv[1], sys.argv[2]
at = AppTest.from_file(os.path.join(root, "app.py"), default_timeout=900)
at.run()
data = open(path, "rb").read()
t0 = time.perf_counter(); at.file_uploader(key="upload").upload("long.csv", data, "text/csv"); at.run()
first = time.perf_counter() - t0
t0 = time.perf_counter(); at.text_input(key="upload_name").set_value("renamed").run()
rerun = time.perf_counter() - t0
t0 = time.perf_counter(); at.button(key="import_dataset").click().run()
imported = time.perf_counter() - t0
assert not at.exception and not at.error, [e.value for e in list(at.exception) + list(at.error)]
print(json.dumps({"first_s": first, "rerun_s": rerun, "import_s": imported}))
"""


def measure_app(path: Path, tmp: str) -> dict:
    """The Data page under Streamlit's AppTest: upload (read + guess), a widget change (a rerun), the import."""
    env = {**os.environ, "EVALCORE_DB": os.path.join(tmp, "app.db"), "EVALCORE_RESAMPLES": "20"}
    out = subprocess.run([sys.executable, "-c", APP_CHILD, str(path), str(ROOT)], capture_output=True, text=True,
                         cwd=ROOT, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(path: Path, which: str, old_file: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), which, old_file, str(ROOT)], capture_output=True,
                         text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--old-rows", type=int, default=100_000, help="rows for the old reader (it is slow)")
    ap.add_argument("--old-rev", default=OLD_REV)
    ap.add_argument("--app-rows", type=int, default=200_000, help="rows uploaded on the Data page (0: skip)")
    args = ap.parse_args()
    app = None
    with tempfile.TemporaryDirectory() as tmp:
        old_file = Path(tmp) / "old_importers.py"
        src = subprocess.run(["git", "show", f"{args.old_rev}:evalcore/importers.py"], cwd=ROOT, capture_output=True,
                             text=True)
        have_old = src.returncode == 0
        if have_old:
            old_file.write_text(src.stdout)
        results = []
        for rows in sorted({args.rows, args.old_rows}):
            path = Path(tmp) / f"long_{rows}.csv"
            write_long_csv(path, rows)
            size = path.stat().st_size / 1e6
            new = measure(path, "new", str(old_file))
            results.append(("today (pyarrow, column-wise)", rows, size, new))
            if have_old and rows == args.old_rows:
                results.append((f"before ({args.old_rev}, csv module, row loop)", rows, size,
                                measure(path, "old", str(old_file))))
        for ext in (".jsonl", ".parquet"):  # the other formats, at the smaller size, both readers
            path = Path(tmp) / f"long_{args.old_rows}{ext}"
            write_long_csv(path, args.old_rows)
            size = path.stat().st_size / 1e6
            results.append((f"today, {ext[1:]}", args.old_rows, size, measure(path, "new", str(old_file))))
            if have_old:
                results.append((f"before, {ext[1:]}", args.old_rows, size, measure(path, "old", str(old_file))))
        if args.app_rows:
            path = Path(tmp) / "app.csv"
            write_long_csv(path, args.app_rows)
            app = measure_app(path, tmp)
    print(f"load average (1 min) while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(wall time stretches on a busy machine; CPU time much less)")
    print(f"{'reader':<42}{'rows':>10}{'MB':>8}{'load s':>9}{'cpu s':>8}{'save s':>8}{'peak RSS MB':>13}"
          f"{'rows/s':>12}")
    for label, rows, size, r in results:
        print(f"{label:<42}{rows:>10,}{size:>8.1f}{r['load_s']:>9.2f}{r['load_cpu_s']:>8.2f}{r['save_s']:>8.2f}"
              f"{r['peak_rss_mb']:>13.0f}{rows / r['load_s']:>12,.0f}")
    by = {(label.split()[0], rows): r for label, rows, _, r in results}
    if ("today", args.old_rows) in by and ("before", args.old_rows) in by:
        a, b = by[("before", args.old_rows)], by[("today", args.old_rows)]
        print(f"\nat {args.old_rows:,} rows (CSV): {a['load_s'] / b['load_s']:.1f}x faster in wall time, "
              f"{a['load_cpu_s'] / b['load_cpu_s']:.1f}x less CPU, {a['peak_rss_mb'] / b['peak_rss_mb']:.1f}x less "
              "peak memory")
    print("(the issue measured the old reader at 1,000,000 rows: 55 s and 2.4 GB through the library, 94 s in the app "
          "with about 10 s per widget change)")
    if app:
        print(f"\nData page (AppTest), {args.app_rows:,} rows: upload, read and guess {app['first_s']:.2f} s; a widget "
              f"change afterwards {app['rerun_s']:.2f} s (the file is not read again); import {app['import_s']:.2f} s")
    big = by.get(("today", args.rows))
    if big:
        ok = big["load_s"] + big["save_s"] < 10 and big["peak_rss_mb"] < 1536
        print(f"{args.rows:,} rows: {big['load_s'] + big['save_s']:.2f} s load+save ({big['load_cpu_s']:.2f} s CPU to "
              f"load), {big['peak_rss_mb']:.0f} MB peak -> target (<10 s, <1.5 GB) {'met' if ok else 'NOT met'}"
              + ("" if ok else " on this machine at this load"))


if __name__ == "__main__":
    main()
