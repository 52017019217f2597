"""An import's memory is bounded by the upload budget (EVALCORE_MAX_UPLOAD_MEMORY): a file is refused from what it
says about itself when its import would take more, and an import the budget admits stays within it.

The cases are the red team's, scaled down so each test takes a few seconds (the full-size ones, with before/after
figures, are in ``bench/bench_upload_memory.py``): a file of many pairs through ``import-pairs``, a CSV of one huge
cell, a dictionary-encoded Parquet of one repeated text, a Parquet of many distinct items. Each runs in a child
process through the CLI (the Data page runs the same import); "working" memory is the child's peak over its resting
size after a tiny file of the same kind was imported first (``_upload_cases.run_import``)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from evalcore.importers import DatasetValidationError, import_table, read_table
from evalcore.importers.budget import UploadBudget, arrow_decoded_bytes
from evalcore.importers.problems import Problems
from evalcore.import_cli import mapping_for_cli

from _upload_cases import (
    distinct_items_parquet,
    many_pairs_csv,
    repeated_text_parquet,
    run_import,
    single_cell_csv,
)

MiB = 1 << 20


@pytest.fixture
def warm(tmp_path):
    """Tiny files of each kind, imported first so the modules an import loads are not counted as its memory."""
    pairs = many_pairs_csv(tmp_path / "warm_pairs.csv", 10)
    parquet = distinct_items_parquet(tmp_path / "warm.parquet", 10)
    csv = tmp_path / "warm.csv"
    csv.write_text("doc_id,system_id,output,coherence\nd1,s1,one,1\nd2,s1,two,2\n")
    return {"pairs": pairs, "parquet": parquet, "csv": csv}


def _parquet_estimate(path) -> int:
    """The estimate the reader makes: rows x columns from the metadata, the texts' size counted on the
    dictionaries."""
    meta = pq.ParquetFile(path).metadata
    texts = [f.name for f in pq.ParquetFile(path).schema_arrow if str(f.type) in ("string", "large_string")]
    decoded = arrow_decoded_bytes(pq.read_table(path, read_dictionary=texts))
    return UploadBudget.memory_needed(meta.num_rows * meta.num_columns, decoded)


def test_many_pairs_import_within_the_budget_that_admits_them(tmp_path, warm):
    """1,000,000 pairs took 435 s and 2.67 GB; here 100,000 pairs with a budget equal to the file's own estimate
    (before: 273 MiB of working memory against an estimate of 211 MiB, and 20 s)."""
    f = many_pairs_csv(tmp_path / "pairs.csv", 100_000)
    budget = UploadBudget.memory_needed(100_000 * 4, f.stat().st_size)
    report, err = run_import(["import-pairs", str(f), "--name", "pairs", "--json"], tmp_path / "s.db",
                             warm=warm["pairs"], env={"EVALCORE_MAX_UPLOAD_MEMORY": str(budget)})
    assert report["code"] == 0, err
    assert report["working_mib"] <= budget / MiB, report
    print(f"100,000 pairs: {report['working_mib']:.0f} MiB working memory (budget {budget / MiB:.0f} MiB), "
          f"{report['seconds']:.1f} s")


def test_a_single_cell_csv_is_refused_before_any_reader_copies_it(tmp_path, warm):
    """A 200 MB single-cell CSV peaked at 1.6 GB before it was refused; at 64 MB the old reader took 520 MiB (its
    text copy and the csv module's); now the line is measured on the bytes and refused."""
    f = single_cell_csv(tmp_path / "cell.csv", 64 * MiB)
    report, err = run_import(["import-dataset", str(f), "--name", "cell"], tmp_path / "s.db", warm=warm["csv"])
    assert report["code"] == 2 and not (tmp_path / "s.db").exists()
    assert "cell.csv, line 2, column -: physical line 2 is longer than 32 MB" in err
    # the file's own bytes (64 MiB, read by the CLI) and little more; the budget's estimate for it is 320 MiB
    assert report["working_mib"] <= UploadBudget.memory_needed(1, f.stat().st_size) / MiB, report
    assert report["working_mib"] < 2 * 64 + 32, report


def test_repeated_text_parquet_is_refused_from_its_dictionaries(tmp_path, warm):
    """3,000,000 rows of one 200-character text, dictionary-encoded (100 KB), passed the decoded-size budget and
    took 4.6 GB before it was refused for duplicates. 1,000,000 rows with a tenth of the default budget: refused
    from the metadata and the dictionaries, before anything is decoded (before: 1,494 MiB working memory)."""
    f = repeated_text_parquet(tmp_path / "repeated.parquet", 1_000_000)
    assert f.stat().st_size < 100_000
    budget = 410 * MiB
    report, err = run_import(["import-dataset", str(f), "--name", "rep"], tmp_path / "s.db", warm=warm["parquet"],
                             env={"EVALCORE_MAX_UPLOAD_MEMORY": str(budget)})
    assert report["code"] == 2 and not (tmp_path / "s.db").exists()
    assert "repeated.parquet, whole file, column -: importing it would take about 1,555 MiB of memory" in err
    assert "4,000,000 cells" in err and "at most 410 MiB (EVALCORE_MAX_UPLOAD_MEMORY)" in err
    assert report["working_mib"] < 100, report
    print(f"repeated-text Parquet ({f.stat().st_size:,} bytes, 1,000,000 rows): refused at a peak of "
          f"{report['peak_mib']:.0f} MiB ({report['working_mib']:.0f} MiB working)")


def test_distinct_items_parquet_is_refused_past_its_budget_and_imported_within_it(tmp_path, warm):
    """3,000,000 distinct items in a 2 MB Parquet imported at 2.8 GB with no limit. 300,000 here: one MiB under
    the file's estimate it is refused before it is decoded; at the estimate it imports within it."""
    f = distinct_items_parquet(tmp_path / "distinct.parquet", 300_000)
    budget = _parquet_estimate(f)
    report, err = run_import(["import-dataset", str(f), "--name", "d"], tmp_path / "refused.db",
                             warm=warm["parquet"], env={"EVALCORE_MAX_UPLOAD_MEMORY": str(budget - MiB)})
    assert report["code"] == 2 and not (tmp_path / "refused.db").exists(), err
    assert "distinct.parquet, whole file, column -: importing it would take about" in err
    assert report["working_mib"] < 64, report
    report, err = run_import(["import-dataset", str(f), "--name", "d"], tmp_path / "s.db", warm=warm["parquet"],
                             env={"EVALCORE_MAX_UPLOAD_MEMORY": str(budget)})
    assert report["code"] == 0, err
    assert report["working_mib"] <= budget / MiB, report
    print(f"distinct-items Parquet ({f.stat().st_size:,} bytes, 300,000 rows): imported at a peak of "
          f"{report['peak_mib']:.0f} MiB ({report['working_mib']:.0f} MiB working, budget {budget / MiB:.0f} MiB)")


def test_a_file_of_duplicates_keeps_its_first_problems_and_counts_the_rest(tmp_path):
    """Every row after the first rates the same item: the first Problems.KEEP problems in reading order are kept
    (the first 50 shown), the others counted, so a million duplicate rows do not hold a million messages."""
    n = 5_000
    f = tmp_path / "dups.csv"
    f.write_text("doc_id,system_id,output,coherence\n" + "".join(f"d1,s1,same,{1 + i % 5}\n" for i in range(n)))
    frame = read_table(f)
    mapping, _ = mapping_for_cli(frame, [], {"coherence": (1, 5)}, {})
    with pytest.raises(DatasetValidationError) as e:
        import_table(f, mapping, table=frame)
    err = e.value
    assert err.total == n - 1 and len(err.problems) == Problems.KEEP
    assert [p.row for p in err.problems[:3]] == [3, 4, 5]  # line 2 is the first rating; 3, 4, ... repeat it
    assert "was already rated on line 2" in err.problems[0].message
    assert f"{n - 1:,} problems found" in str(err) and f"... and {n - 1 - 50:,} more" in str(err)


def test_a_csv_is_refused_from_its_line_count_before_it_is_parsed(tmp_path):
    """The CSV estimate comes from the header and the number of lines, before pyarrow or the csv module runs."""
    f = many_pairs_csv(tmp_path / "pairs.csv", 1_000)
    need = UploadBudget.memory_needed(1_000 * 4, f.stat().st_size)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALCORE_MAX_UPLOAD_MEMORY", str(need - 1))
        with pytest.raises(DatasetValidationError, match=r"1,000 lines after the header x 4 columns: 4,000 cells"):
            read_table(f)
        mp.setenv("EVALCORE_MAX_UPLOAD_MEMORY", str(need))
        assert len(read_table(f)) == 1_000
