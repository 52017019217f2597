"""The import contracts (pyproject.toml [tool.importlinter], checked by lint-imports in .ci/run) cover every module:
a new package or top-level module of evalcore must be placed in a layer, or the no-cycles check would not see it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_evalcore_module_has_a_layer():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    placed = {name.strip() for layer in layers for name in layer.split("|")}
    package = ROOT / "evalcore"
    modules = {f"evalcore.{p.stem}" for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    modules |= {f"evalcore.{p.name}" for p in package.iterdir() if (p / "__init__.py").exists()}
    assert modules - placed == set(), "place these in a layer of pyproject.toml [tool.importlinter]"
    assert placed - modules == set(), "these layers name no module"
