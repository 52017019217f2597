"""The exported HTML report on a large study (issue 19): what it costs, and what is left of it once the pages have
computed their parts.

    python bench/bench_report.py [--items 200000] [--resamples 1000]

Data: bench/bench_meta_scale.py's seeded generator (items / 10 documents x 10 systems, 1-5 human ratings), imported
as bench/bench_pages.py --big does, with its two judge columns as two runs (a continuous G-Eval-like score and a 1-5
score). Times, on that dataset, for the report of the default view (dataset level, Spearman, both runs):

- from scratch: ``evalcore.views.report.analysis_report`` computing everything (the full correlation table of both
  runs: 9 cells with 1,000-resample BCa intervals each, and the paired comparison of the two runs);
- its parts: the correlation table, the paired comparison, and the rest (per-system correlations, #CP, figures,
  HTML);
- in the app: the report from the correlation cells the Alignment page fills after its first chart and the paired
  comparison the Compare page computed (``Computed``), i.e. what "Export report" costs after those visits: the rest.

The size of the file is printed too (plotly.js, inlined once, is about 4.7 MB of it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=200_000)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="judgescope-report-") as tmp:
        from bench_pages import import_big_dataset

        dataset_id = import_big_dataset(Path(tmp), args.items)
        os.environ["EVALCORE_DB"] = str(Path(tmp) / "evalcore.db")
        from evalcore import runs as runs_mod
        from evalcore.views import alignment as av
        from evalcore.views import report as rv
        from evalcore.views.compare import paired_comparison

        ds = runs_mod.get_dataset(dataset_id)
        ids = [r.run_id for r in runs_mod.list_runs(ds.id)]
        runs = [runs_mod.load_run(r, parse="robust") for r in ids]
        dim = ds.dimension_names[0]
        p = rv.AnalysisParams(dataset_id=ds.id, run_ids=ids, dimension=dim, n_resamples=args.resamples)
        rv.analysis_report(ds, runs, rv.AnalysisParams(dataset_id=ds.id, run_ids=ids, dimension=dim,
                                                       n_resamples=10))  # imports and first calls, not timed
        t0 = time.perf_counter()
        html = rv.analysis_report(ds, runs, p)
        scratch = time.perf_counter() - t0
        t0 = time.perf_counter()
        table = av.alignment_table(ds, runs, dim, n_resamples=args.resamples)
        t_table = time.perf_counter() - t0
        t0 = time.perf_counter()
        comparison = paired_comparison(ds, runs[0], runs[1], dim, level="dataset", coefficient="spearman",
                                       n_resamples=args.resamples)
        t_paired = time.perf_counter() - t0
        t0 = time.perf_counter()
        html_app = rv.analysis_report(ds, runs, p, rv.Computed(table, comparison))
        rest = time.perf_counter() - t0
    print(f"report of {args.items:,} items, 2 runs, {args.resamples} resamples ({os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f}):")
    print(f"  from scratch                          {scratch:7.1f} s   {len(html) / 1e6:5.1f} MB")
    print(f"    correlation table (2 runs x 9 cells) {t_table:6.1f} s")
    print(f"    paired comparison                    {t_paired:6.1f} s")
    print(f"    the rest (tables, figures, HTML)     {rest:6.1f} s")
    print(f"  in the app after Alignment's fill and Compare's test: {rest:.1f} s "
          f"({scratch / rest:.1f}x less), {len(html_app) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
