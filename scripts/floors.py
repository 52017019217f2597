"""Print a pip constraints file that pins every dependency of pyproject.toml at its floor (``name>=X`` -> ``name==X``).

    python scripts/floors.py [--extra test] > /tmp/floors.txt
    python -m venv /tmp/at-floors && /tmp/at-floors/bin/pip install -c /tmp/floors.txt -e ".[test]"

.ci/run does this and runs the tests there, which proves that the floors declared in pyproject.toml are versions the
code runs on. A dependency without a ``>=`` floor is an error: every one must say the oldest version it needs.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_FLOOR = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*)\s*(?:,[^;]*)?(;.*)?$")


def floors(pyproject: Path = ROOT / "pyproject.toml", extras: tuple[str, ...] = ("test",)) -> list[str]:
    """``name==floor`` for the project's dependencies and the named extras, in pyproject order, without duplicates."""
    project = tomllib.loads(pyproject.read_text())["project"]
    specs = list(project.get("dependencies", []))
    for extra in extras:
        specs += project.get("optional-dependencies", {}).get(extra, [])
    out: dict[str, str] = {}
    for spec in specs:
        m = _FLOOR.match(spec)
        if not m:
            raise ValueError(f"{pyproject}: dependency {spec!r} has no '>=' floor")
        name, version = m.group(1).lower(), m.group(3)
        out.setdefault(name, f"{name}=={version}{m.group(4) or ''}")
    return list(out.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--extra", action="append", default=None, help="optional-dependency groups (default: test)")
    args = ap.parse_args(argv)
    sys.stdout.write("\n".join(floors(extras=tuple(args.extra or ["test"]))) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
