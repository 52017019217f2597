"""The import contracts (pyproject.toml [tool.importlinter], checked by lint-imports in .ci/run) cover every module:
a new package or top-level module of evalcore must be placed in a layer, or the no-cycles check would not see it."""

from __future__ import annotations

import sys
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


# Cycles among the modules of one package that are known and owned elsewhere, with why; the test fails when one of
# them is gone too, so that this list only shrinks. None is left.
KNOWN_MODULE_CYCLES: dict = {}


def module_cycles(graph, package: str) -> list[set[str]]:
    """Cycles among the children of ``package`` (a child subpackage stands for everything in it), from every import
    grimp sees, those inside functions included: a lazy import is still a dependency."""
    children = sorted(graph.find_children(package))
    owner = {}
    for child in children:
        owner[child] = child
        for descendant in graph.find_descendants(child) if child in graph.modules else ():
            owner[descendant] = child
    edges: dict[str, set[str]] = {child: set() for child in children}
    for module, child in owner.items():
        for imported in graph.find_modules_directly_imported_by(module):
            target = owner.get(imported)
            if target is not None and target != child:
                edges[child].add(target)
    return [set(c) for c in _code_shape().cycles(edges)]  # the one strongly-connected search, scripts/code_shape.py


def test_no_import_cycle_among_the_modules_of_any_package():
    import grimp

    graph = grimp.build_graph("evalcore")
    packages = ["evalcore"] + sorted(m for m in graph.modules if graph.find_children(m))
    cycles = {p: module_cycles(graph, p) for p in packages}
    cycles = {p: c for p, c in cycles.items() if c}
    assert cycles == KNOWN_MODULE_CYCLES, "modules that import each other: move the piece both need into a module below"


def test_the_cycle_check_sees_a_lazy_import():
    """The check itself on a made-up graph: a module-level import one way and a function-level one back is a cycle,
    a chain through three modules is one too, and a subpackage counts as one node of its parent."""
    import grimp

    graph = grimp.ImportGraph()
    for m in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.sub", "pkg.sub.x", "pkg.d"):
        graph.add_module(m)
    graph.add_import(importer="pkg.a", imported="pkg.b", line_number=1, line_contents="from pkg import b")
    graph.add_import(importer="pkg.b", imported="pkg.a", line_number=9, line_contents="from pkg import a")
    graph.add_import(importer="pkg.c", imported="pkg.sub.x", line_number=1, line_contents="from pkg.sub import x")
    graph.add_import(importer="pkg.sub.x", imported="pkg.d", line_number=1, line_contents="from pkg import d")
    graph.add_import(importer="pkg.d", imported="pkg.c", line_number=5, line_contents="from pkg import c")
    assert sorted(map(sorted, module_cycles(graph, "pkg"))) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d", "pkg.sub"]]


# ------------------------------------------------------------------------------------------ pages only lay out
def _code_shape():
    import importlib.util

    spec = importlib.util.spec_from_file_location("code_shape", ROOT / "scripts" / "code_shape.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["code_shape"] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_no_page_script_holds_more_than_150_lines_of_top_level_code():
    """A page lays out the view model the library computed (evalcore.views): what it computes belongs there, where it
    is tested without a browser. scripts/code_shape.py prints the same figures."""
    shape = _code_shape()
    pages = [shape.top_level_code(p, ROOT) for p in shape.page_scripts(ROOT)]
    assert len(pages) >= 9  # the eight pages and app.py
    assert [p.path for p in pages if p.lines > shape.PAGE_LIMIT] == []


def test_pages_call_no_store_method():
    """Pages hand the store to library functions; a store call in a page is logic the library's tests do not see."""
    assert _code_shape().store_calls(ROOT) == []


def test_the_page_measures_count_what_they_say(tmp_path):
    """The two measures on a made-up page: top-level statements counted without imports, definitions, the docstring,
    blank and comment lines; a store method called on a variable found, one called on an imported module not."""
    shape = _code_shape()
    (tmp_path / "pages").mkdir()
    (tmp_path / "evalcore" / "store").mkdir(parents=True)
    (tmp_path / "evalcore" / "store" / "x.py").write_text(
        "class RunsStore:\n    def load_run(self):\n        pass\n    def _private(self):\n        pass\n")
    (tmp_path / "app.py").write_text("x = 1\n")
    (tmp_path / "pages" / "p.py").write_text(
        '"""doc"""\nimport os\nfrom evalcore import runs\n\n# a comment\nx = 1\nif x:\n    y = store.load_run()\n'
        "z = runs.load_run()\n\ndef f():\n    return 1\n")
    page = shape.top_level_code(tmp_path / "pages" / "p.py", tmp_path)
    assert (page.lines, page.branches) == (4, 1)  # x = 1, if x:, y = ..., z = ...
    assert shape.store_calls(tmp_path) == ["pages/p.py:8  store.load_run"]


def test_no_import_cycle_among_the_modules_of_pages():
    """import-linter's root is ``evalcore``, and code_shape's group graph puts all of ``pages/`` in one node: the
    modules of ``pages/`` are checked here, each its own node, lazy imports included."""
    shape = _code_shape()
    assert shape.cycles(shape.page_module_graph(ROOT)) == []


def test_the_page_cycle_check_sees_a_lazy_import_round_three_modules(tmp_path):
    shape = _code_shape()
    (tmp_path / "pages").mkdir()
    (tmp_path / "app.py").write_text("from pages import _a\n")
    (tmp_path / "pages" / "_a.py").write_text("from pages import _b\n")
    (tmp_path / "pages" / "_b.py").write_text("import os\nfrom pages._c import f\n")
    (tmp_path / "pages" / "_c.py").write_text("def f():\n    from pages import _a\n")
    (tmp_path / "pages" / "_d.py").write_text("from pages import _a, _b\n")
    assert shape.cycles(shape.page_module_graph(tmp_path)) == [["pages._a", "pages._b", "pages._c"]]


def test_the_page_globals_measure_counts_what_it_says(tmp_path):
    """A page function reading a module-level variable is found; one reading its parameters, its own locals (or
    those of the function it is nested in), an import, another function, a class or an UPPER_CASE constant is not."""
    shape = _code_shape()
    (tmp_path / "pages").mkdir()
    (tmp_path / "app.py").write_text("")
    (tmp_path / "pages" / "p.py").write_text(
        "import streamlit as st\nfrom x import y\nLIMIT = 3\nctx = st.context()\nfor row in y:\n    pass\n\n"
        "def helper(ctx):\n    return ctx, LIMIT, st, y\n\n"
        "def section():\n    n = len(ctx)\n    return helper(n), n\n\n"
        "class K:\n    pass\n\n"
        "def other():\n    import os\n    row = 1\n    return K, os, row, section\n\n"
        "def looped():\n    return row\n\n"
        "def outer(ctx):\n    def inner():\n        return ctx\n    return inner\n")
    assert shape.page_globals(tmp_path) == ["pages/p.py:11  section: ctx", "pages/p.py:23  looped: row"]


def test_no_page_imports_the_command_line():
    """A page needs a library function, not the CLI module (argument parsing, every subcommand's imports)."""
    import ast

    found = []
    for path in sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n.split(".")[-1].endswith("cli")
                      or ".cli." in f"{n}." or n.startswith("evalcore.cli")]
    assert found == []


def test_no_page_function_reads_module_globals():
    """A page function takes what it needs as parameters (scripts/code_shape.py lists any that do not): what it
    draws then depends only on what it is given, not on which statements of the script ran before it."""
    assert _code_shape().page_globals(ROOT) == []


def test_the_type_checkers_list_of_modules_not_yet_clean_names_existing_modules():
    """pyproject.toml [tool.mypy]: the modules whose errors are still ignored each exist (a module renamed or removed
    leaves the list), and the strict section covers the statistics and the data model."""
    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    strict = next(o for o in overrides if o.get("disallow_untyped_defs"))
    assert set(strict["module"]) == {"evalcore.meta.*", "evalcore.model"}
    ignored = next((o["module"] for o in overrides if o.get("ignore_errors")), [])  # none left: every module checked
    missing = [m for m in ignored if not (ROOT / (m.replace(".", "/") + ".py")).exists()
               and not (ROOT / m.replace(".", "/") / "__init__.py").exists()]
    assert missing == [] and len(ignored) == len(set(ignored))


def test_the_parameter_type_count_counts_what_it_says(tmp_path):
    """``Any`` as a parameter's whole annotation (plain, ``typing.Any``, or as a string) counts; ``dict[str, Any]``,
    ``self`` and ``cls`` do not; a parameter without annotation is counted apart."""
    (tmp_path / "evalcore").mkdir()
    (tmp_path / "evalcore" / "m.py").write_text(
        "import typing\nfrom typing import Any\n\n"
        "def f(a: Any, b: typing.Any, c: 'Any', d: dict[str, Any], e, *args: Any, **kw) -> Any:\n    pass\n\n"
        "class K:\n    def m(self, x: int, y):\n        pass\n")
    assert _code_shape().parameter_types(tmp_path) == (4, 3, 9)  # a b c args; e kw y; all but self


def test_no_function_is_longer_than_a_screen():
    """A function fits on a screen: none in the library, the pages, the benches or the scripts runs past 60 lines
    (scripts/code_shape.py --list-over lists any that do)."""
    shape = _code_shape()
    over = [f"{f.path}:{f.line} {f.name} ({f.length} lines)" for f in shape.functions(ROOT, shape.DEFAULT_PATHS)
            if f.length > 60]
    assert over == []


def test_the_librarys_parameters_are_typed():
    """Every parameter of evalcore/ is annotated, and only a handful say no more than ``Any`` (the seams are typed;
    a JSON record's contents may stay open as ``dict[str, Any]``, which is not counted)."""
    n_any, n_bare, _ = _code_shape().parameter_types(ROOT)
    assert n_bare == 0 and n_any <= 5, (n_any, n_bare)
