"""Upload bombs are refused from what the file says about itself, before they are materialised (issue 21, item 3).

Each bomb is imported in a child process (``import-dataset``, the path the Data page's upload takes too) whose peak
resident memory is read from the kernel (``VmHWM``): the refusal must come with a clear message naming the file
and the limit, nothing written to the store, and a peak far below what decoding would take."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.importers import DatasetValidationError, read_table
from evalcore.importers.budget import UploadBudget, arrow_decoded_bytes

from _judging import ROOT

CHILD = textwrap.dedent("""
    import json, os, sys
    os.environ["EVALCORE_DB"] = sys.argv[2]
    from evalcore.cli import main
    code = main(["import-dataset", sys.argv[1], "--name", "bomb", "--json"])
    # VmHWM, not ru_maxrss: ru_maxrss survives exec, so a child of a big pytest process would report the parent's
    peak_mib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM")) / 1024
    print(json.dumps({"code": code, "peak_mib": peak_mib}), file=sys.stderr)
""")


def _parquet_bomb(path, rows=3_000_000, width=1_000):
    """One text of ``width`` characters used by every row, dictionary-encoded: a few KB that decode to rows x
    width bytes (3 GB by default)."""
    text = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["x" * width]))
    table = pa.table({"item_id": pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)),
                                                                  pa.array(["a"])),
                      "output": text, "coherence": pa.array(np.ones(rows, dtype=np.float32))})
    pq.write_table(table, path, compression="zstd")
    return path


def _child(bomb, tmp_path):
    db = tmp_path / "store.db"
    p = subprocess.run([sys.executable, "-c", CHILD, str(bomb), str(db)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    report = json.loads(p.stderr.strip().splitlines()[-1])
    return report, p.stderr, db


def test_parquet_bomb_is_refused_from_its_dictionary_with_little_memory(tmp_path):
    bomb = _parquet_bomb(tmp_path / "bomb.parquet")
    assert bomb.stat().st_size < 1_000_000  # a sub-megabyte file ...
    report, err, db = _child(bomb, tmp_path)
    assert report["code"] == 2 and not db.exists()
    # read row group by row group: refused at the first of its three groups, whose texts (counted on the dictionary)
    # already put the import's memory past the budget
    assert "bomb.parquet" in err
    if "of memory" in err:
        assert "at most 4,096 MiB (EVALCORE_MAX_UPLOAD_MEMORY)" in err
        assert "counted on its first 1 of 3 row groups" in err
    else:  # pyarrow before 11 reports no dictionary page sizes: the decoded-size budget refuses it instead
        assert "(EVALCORE_MAX_UPLOAD_BYTES)" in err
    assert report["peak_mib"] < 600, report  # ... that decoded would take 3 GB; before the check, 2.7-3.9 GB
    print(f"parquet bomb: {bomb.stat().st_size:,} bytes on disk, refused at a peak RSS of {report['peak_mib']:.0f} MiB")


def test_csv_with_ten_thousand_columns_is_refused_at_its_header(tmp_path):
    bomb = tmp_path / "wide.csv"
    header = ",".join(f"c{i}" for i in range(10_003))
    bomb.write_text(header + "\n" + ",".join("1" for _ in range(10_003)) + "\n")
    assert bomb.stat().st_size < 1_000_000
    report, err, db = _child(bomb, tmp_path)
    assert report["code"] == 2 and "wide.csv" in err and "10,003 columns; an upload may have at most 1,000" in err
    assert report["peak_mib"] < 600, report
    with pytest.raises(DatasetValidationError, match="line 1"):
        read_table(bomb)


def test_dictionary_bytes_are_counted_without_decoding():
    """The count on the dictionary equals the decoded table's own size (by a second method: decode and measure)."""
    words = pa.array(["a", "bbb", "cccccc", ""])
    idx = pa.array(np.array([0, 1, 1, 2, 3, 2, 2], dtype=np.int32))
    table = pa.table({"t": pa.DictionaryArray.from_arrays(idx, words)})
    decoded = table.column("t").cast(pa.string())
    chars = sum(len(v.as_py()) for v in decoded)
    assert arrow_decoded_bytes(table) == chars + 8 * len(idx)


def test_limits_are_the_operators():
    b = UploadBudget(max_bytes=100, max_columns=3, max_cells=10)
    assert b.shape_problem(2, 3) is None and "4 columns" in b.shape_problem(1, 4)
    assert "12 cells" in b.shape_problem(4, 3).replace(",", "")
    assert b.bytes_problem(100) is None and "at most 0 MiB" in b.bytes_problem(101)


def test_an_ordinary_parquet_still_reads(tmp_path):
    path = tmp_path / "ok.parquet"
    pq.write_table(pa.table({"doc": ["d1", "d1"], "output": ["one", "two"], "coherence": [1.0, 2.0]}), path)
    frame = read_table(path)
    assert frame["output"].tolist() == ["one", "two"] and frame["coherence"].tolist() == [1.0, 2.0]
