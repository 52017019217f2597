"""Pre-parse the bundled runs' replies into ``data/parsed/`` (see evalcore/parsed_cache.py for why and how a file is
trusted).

    python scripts/build_parsed.py           # (re)write every file that is missing or stale
    python scripts/build_parsed.py --check   # list missing or stale files; exit 1 if there are any

Run it after a change to ``evalcore/parsers.py`` or to the bundled runs (``scripts/build_data.py``). It reads only
``data/`` (not ``../shared``). A stale file is never used, so forgetting this costs load time, not correctness;
``tests/test_parsed_cache.py`` catches it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore import datasets, parsed_cache, parsers  # noqa: E402


def stale_files() -> list[tuple[dict, str, Path]]:
    """(manifest entry, mode, path) of every pre-parsed file that is missing or does not match this checkout."""
    out = []
    for entry in datasets._run_entries():
        columns = parsed_cache.parsed_columns(entry)
        n_rows = len(datasets._raw_replies(entry))
        for mode in parsers.PARSE_MODES:
            path = parsed_cache.parsed_path(datasets.DATA_DIR, entry, mode)
            if parsed_cache.read(path, datasets.parse_fingerprint(entry, mode), columns, n_rows) is None:
                out.append((entry, mode, path))
    return out


def expected_files() -> set[Path]:
    return {parsed_cache.parsed_path(datasets.DATA_DIR, e, m) for e in datasets._run_entries()
            for m in parsers.PARSE_MODES}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only list missing or stale files")
    args = ap.parse_args(argv)
    stale = stale_files()
    expected = expected_files()
    extra = sorted(p for p in (datasets.DATA_DIR / "parsed").glob("*.parquet") if p not in expected)
    if args.check:
        for _, mode, path in stale:
            print(f"missing or stale: {path.relative_to(datasets.DATA_DIR)}")
        for path in extra:
            print(f"not a bundled run's: {path.relative_to(datasets.DATA_DIR)}")
        return 1 if stale or extra else 0
    for entry, mode, path in stale:
        t0 = time.perf_counter()
        table = datasets.parse_bundled(entry, datasets._raw_replies(entry), mode)
        parsed_cache.write(path, table, parsed_cache.parsed_columns(entry), datasets.parse_fingerprint(entry, mode))
        print(f"{path.relative_to(datasets.DATA_DIR)}: {len(table)} rows parsed in {time.perf_counter() - t0:.2f} s")
    for path in extra:
        path.unlink()
        print(f"removed {path.relative_to(datasets.DATA_DIR)} (no bundled run)")
    print(f"{len(stale)} file(s) written, {len(expected) - len(stale)} already current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
