"""The upload cases whose memory and time an import must bound, written at any size (the hardening tests use small
ones with a budget scaled to match; ``bench/bench_upload_memory.py`` writes them at full size). Nothing here is
committed as a file: each case is generated in a temporary directory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]

# One import in a fresh interpreter, through the CLI (the Data page's upload runs the same import): its exit code,
# stderr, seconds and memory read from the kernel. "working_mib" is what the import itself took: the peak (VmHWM)
# over the resident memory before it, after a tiny file of the same kind was imported first (so the modules the
# import loads are not counted) and the peak was reset (/proc/self/clear_refs, "5": reset the peak RSS).
CHILD = textwrap.dedent("""
    import json, os, sys, time
    db, warm, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    from evalcore.cli import main

    def kib(key):
        return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key))

    if warm != "-":
        os.environ["EVALCORE_DB"] = db + ".warm"
        main([args[0], warm] + args[2:])
    os.environ["EVALCORE_DB"] = db
    base = kib("VmRSS")
    open("/proc/self/clear_refs", "w").write("5")
    t0 = time.perf_counter()
    code = main(args)
    seconds = time.perf_counter() - t0
    peak = kib("VmHWM")
    print(json.dumps({"code": code, "peak_mib": peak / 1024, "working_mib": (peak - base) / 1024,
                      "seconds": seconds}), file=sys.stderr)
""")


def run_import(args: list[str], db: Path, *, warm: Path | None = None, env: dict[str, str] | None = None,
               timeout: float = 900, root: Path = ROOT) -> tuple[dict, str]:
    """(report, stderr) of ``python -m evalcore <args>`` run in a child process against the store ``db``, after
    importing ``warm`` (a tiny file of the same kind) into another store; with the checkout at ``root`` (the bench
    measures an older commit this way)."""
    import os

    p = subprocess.run([sys.executable, "-c", CHILD, str(db), str(warm or "-"), *args], cwd=root,
                       capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    report = json.loads(p.stderr.strip().splitlines()[-1])
    return report, p.stderr


def many_pairs_csv(path: Path, pairs: int) -> Path:
    """``pairs`` distinct pairs, one vote each, short texts (1,000,000 pairs: about 30 MB)."""
    i = np.arange(pairs)
    rows = np.char.add(np.char.add(np.char.add("q", (i // 4).astype(str)), ",a"), i.astype(str))
    rows = np.char.add(np.char.add(rows, ",b"), i.astype(str))
    rows = np.char.add(rows, np.where(i % 3 == 0, ",a", np.where(i % 3 == 1, ",b", ",tie")))
    with open(path, "w", encoding="utf-8") as f:
        f.write("prompt,output_a,output_b,winner\n")
        f.write("\n".join(rows.tolist()))
        f.write("\n")
    return path


def single_cell_csv(path: Path, size: int) -> Path:
    """A header and one cell of ``size`` bytes (no line break)."""
    with open(path, "wb") as f:
        f.write(b"output\n")
        chunk = b"x" * (1 << 20)
        for _ in range(size >> 20):
            f.write(chunk)
        f.write(b"x" * (size & ((1 << 20) - 1)))
        f.write(b"\n")
    return path


def _dict_column(rows: int, value: str) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array([value]))


def repeated_text_parquet(path: Path, rows: int, width: int = 200) -> Path:
    """``rows`` rows of one ``width``-character output for the same document and system, dictionary-encoded: a few
    KB on disk that pass the decoded-size budget (rows x width bytes) and are refused as duplicate ratings."""
    table = pa.table({"doc_id": _dict_column(rows, "d1"), "system_id": _dict_column(rows, "s1"),
                      "output": _dict_column(rows, "t" * width),
                      "coherence": pa.array(np.tile(np.arange(1, 6, dtype=np.float32), rows // 5 + 1)[:rows])})
    pq.write_table(table, path, compression="zstd")
    return path


def distinct_items_parquet(path: Path, rows: int) -> Path:
    """``rows`` distinct items (one document each, one system, a short output), a valid dataset (3,000,000 rows:
    about 2 MB)."""
    i = np.arange(rows, dtype=np.int64)
    table = pa.table({"doc_id": pa.array(i), "system_id": _dict_column(rows, "s1"),
                      "output": _dict_column(rows, "a short output"),
                      "coherence": pa.array((i % 5 + 1).astype(np.float32))})
    try:
        pq.write_table(table, path, compression="zstd", use_dictionary=["system_id", "output"],
                       column_encoding={"doc_id": "DELTA_BINARY_PACKED", "coherence": "BYTE_STREAM_SPLIT"})
    except OSError:  # pyarrow before 11 writes no delta encoding: the same rows, a larger file
        pq.write_table(table, path, compression="zstd", use_dictionary=["system_id", "output"])
    return path
