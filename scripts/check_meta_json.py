"""Prove ``meta --json`` output unchanged across a refactor: run ``python -m evalcore meta --dataset D --run R --json``
for every bundled run (data/runs/manifest.json) with fixed settings, and write or compare a snapshot.

    python scripts/check_meta_json.py --write SNAPSHOT.json   # on the code before the change
    python scripts/check_meta_json.py --check SNAPSHOT.json   # after: exit 1 and name each run whose bytes differ

The bootstrap uses the CLI's fixed seed; ``--resamples`` is passed explicitly so both sides use identical settings.
Each run is a fresh process on an empty store (EVALCORE_DB in a temporary directory), so nothing local leaks in.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bundled_runs() -> list[tuple[str, str]]:
    manifest = json.loads((ROOT / "data" / "runs" / "manifest.json").read_text())
    return [(r["dataset_id"], r["run_id"]) for r in manifest["runs"]]


def meta_json(dataset: str, run: str, resamples: int, db: Path) -> str:
    cmd = [sys.executable, "-m", "evalcore", "meta", "--dataset", dataset, "--run", run, "--json",
           "--resamples", str(resamples)]
    env = {**os.environ, "EVALCORE_DB": str(db)}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    # a run meta refuses (a pairwise run has no per-item judgments) is snapshotted too: its exit status and message
    return done.stdout if done.returncode == 0 else f"exit {done.returncode}: {done.stderr}"


def snapshot(resamples: int) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        return {f"{d} {r}": meta_json(d, r, resamples, Path(tmp) / "evalcore.db") for d, r in bundled_runs()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", type=Path, help="write the snapshot here")
    mode.add_argument("--check", type=Path, help="compare with the snapshot here")
    ap.add_argument("--resamples", type=int, default=200)
    args = ap.parse_args(argv)
    snap = snapshot(args.resamples)
    if args.write:
        args.write.write_text(json.dumps({"resamples": args.resamples, "runs": snap}, indent=1, sort_keys=True))
        print(f"wrote {len(snap)} runs' meta --json to {args.write}")
        return 0
    saved = json.loads(args.check.read_text())
    if saved["resamples"] != args.resamples:
        raise SystemExit(f"the snapshot used --resamples {saved['resamples']}; pass the same")
    differ = [k for k in sorted(set(saved["runs"]) | set(snap)) if saved["runs"].get(k) != snap.get(k)]
    for k in differ:
        print(f"DIFFERS: {k}")
    print(f"{len(snap) - len(differ)}/{len(snap)} runs byte-identical")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
