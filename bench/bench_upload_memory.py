"""Upload memory and time, before and after the import was bounded by the upload budget: the red team's four cases
at full size, each imported through the CLI in a fresh process (the Data page runs the same import), today's
checkout beside an older commit (extracted with ``git archive`` into a temporary directory).

    python bench/bench_upload_memory.py [--scale 1.0] [--old-rev ab99f69] [--skip-old] [--cases pairs,cell,...]

Cases (written in a temporary directory, never committed):
  pairs     1,000,000 distinct pairs, one vote each (26 MB CSV) through ``import-pairs``
  cell      a CSV with one 200 MB cell through ``import-dataset``
  repeated  3,000,000 rows of one 200-character text, dictionary-encoded Parquet (0.1 MB)
  distinct  3,000,000 distinct items, Parquet (0.05 MB)

Prints per case and checkout: outcome, seconds, peak resident memory (VmHWM) and working memory (the peak over the
process's resting size after a tiny file of the same kind was imported first), and the budget's estimate for the file
(``UploadBudget.memory_needed``): the budget bounds the import when working memory stays under the estimate.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "hardening"))

import _upload_cases as cases  # noqa: E402

OLD_REV = "ab99f69"  # main before the upload budget bounded an import's memory
MiB = 1 << 20


def write_cases(tmp: Path, scale: float) -> dict[str, tuple[Path, list[str], Path, int]]:
    """name -> (file, CLI arguments, warm-up file, the file's cells)."""
    warm_pairs = cases.many_pairs_csv(tmp / "warm_pairs.csv", 10)
    warm_parquet = cases.distinct_items_parquet(tmp / "warm.parquet", 10)
    warm_csv = tmp / "warm.csv"
    warm_csv.write_text("doc_id,system_id,output,coherence\nd1,s1,one,1\nd2,s1,two,2\n")
    n_pairs, n_rows = int(1_000_000 * scale), int(3_000_000 * scale)
    return {
        "pairs": (cases.many_pairs_csv(tmp / "pairs.csv", n_pairs), ["import-pairs"], warm_pairs, n_pairs * 4),
        "cell": (cases.single_cell_csv(tmp / "cell.csv", int(200_000_000 * scale)), ["import-dataset"], warm_csv, 1),
        "repeated": (cases.repeated_text_parquet(tmp / "repeated.parquet", n_rows), ["import-dataset"], warm_parquet,
                     n_rows * 4),
        "distinct": (cases.distinct_items_parquet(tmp / "distinct.parquet", n_rows), ["import-dataset"], warm_parquet,
                     n_rows * 4),
    }


def text_bytes(path: Path) -> int:
    """The bytes the file's cells decode to, as the reader counts them (Parquet: on the dictionaries)."""
    if path.suffix != ".parquet":
        return path.stat().st_size
    import pyarrow.parquet as pq

    from evalcore.importers.budget import arrow_decoded_bytes

    texts = [f.name for f in pq.ParquetFile(path).schema_arrow if str(f.type) in ("string", "large_string")]
    return arrow_decoded_bytes(pq.read_table(path, read_dictionary=texts))


def outcome(report: dict, err: str) -> str:
    """"imported", or "refused: " and the start of the first problem's message."""
    if report["code"] == 0:
        return "imported"
    first = next((x.strip()[2:] for x in err.splitlines() if x.strip().startswith("- ")), err.strip())
    message = first.split("column ", 1)[-1].split(": ", 1)[-1]
    return f"refused: {message[:40]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the full-size cases")
    ap.add_argument("--old-rev", default=OLD_REV)
    ap.add_argument("--skip-old", action="store_true", help="measure today's checkout only")
    ap.add_argument("--cases", default="pairs,cell,repeated,distinct")
    args = ap.parse_args()
    from evalcore.importers.budget import UploadBudget

    budget = UploadBudget.from_env()
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        checkouts = [("today", ROOT)]
        if not args.skip_old:
            old = tmp / "old"
            old.mkdir()
            archive = subprocess.run(["git", "archive", args.old_rev], cwd=ROOT, capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
            checkouts.append((f"before ({args.old_rev})", old))
        written = write_cases(tmp, args.scale)
        for name in args.cases.split(","):
            path, command, warm, cells = written[name]
            estimate = UploadBudget.memory_needed(cells, text_bytes(path))
            for label, root in checkouts:
                db = tmp / f"{name}-{label.split()[0]}.db"
                report, err = cases.run_import([command[0], str(path), "--name", name, "--json"], db, warm=warm,
                                               root=root, timeout=3600)
                rows.append((name, path.stat().st_size, label, outcome(report, err), report, estimate))
                for extra in (db, Path(str(db) + ".warm")):
                    if extra.exists():
                        extra.unlink()
    print(f"budget: EVALCORE_MAX_UPLOAD_MEMORY = {budget.max_memory / MiB:,.0f} MiB; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall time stretches on a busy machine)")
    print(f"{'case':<10}{'file MB':>9}  {'checkout':<18}{'outcome':<51}{'seconds':>9}{'peak MiB':>10}"
          f"{'working MiB':>13}{'estimate MiB':>14}")
    for name, size, label, what, r, estimate in rows:
        print(f"{name:<10}{size / 1e6:>9.2f}  {label:<18}{what:<51}{r['seconds']:>9.1f}{r['peak_mib']:>10,.0f}"
              f"{r['working_mib']:>13,.0f}{estimate / MiB:>14,.0f}")
    today = [r for r in rows if r[2] == "today"]
    worst = max(r[4]["peak_mib"] for r in today) if today else 0
    print(f"\ntoday's largest peak: {worst:,.0f} MiB; an admitted import stays under the interpreter (~150 MiB) + "
          f"its estimate <= the budget ({budget.max_memory / MiB:,.0f} MiB): four at once "
          f"<= {4 * (budget.max_memory / MiB + 150) / 1024:,.1f} GiB")
    for name, size, label, what, r, estimate in today:
        if what == "imported" and r["working_mib"] > estimate / MiB:
            print(f"WARNING: {name} took {r['working_mib']:,.0f} MiB, over its estimate {estimate / MiB:,.0f} MiB")


if __name__ == "__main__":
    main()
