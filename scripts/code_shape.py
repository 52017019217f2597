"""The shape of the code, for a reader new to it: (a) which part of the package imports which, (b) the longest
functions, (c) the top-level code of each page script.

    python scripts/code_shape.py [--root DIR] [--top 15] [--over 60] [--paths evalcore pages app.py ...]

(a) The import graph between groups: ``evalcore.<name>`` for each subpackage or top-level module of the library,
``pages`` and ``app`` for the Streamlit side. Every import statement counts, also one inside a function or under
``TYPE_CHECKING`` (as import-linter counts them); groups that import each other, directly or round a loop, are
listed as cycles. (b) The ``--top`` longest functions (methods and nested functions included, each on its own; a
function's length runs from its ``def`` line to its last line) with file:line, and how many are longer than
``--over`` lines. (c) For each page script (``pages/*.py`` not starting with ``_``, and ``app.py``): its lines of
top-level code (module-level statements other than imports, ``def`` and ``class`` and the docstring; blank and
comment lines not counted) and the branches among them; a page is meant to lay out a view model the library
computed, so more than ``--page-limit`` (150) lines fails the run (exit status 1; tests/test_architecture.py runs the
same check in CI). (d) Import cycles among the modules of ``pages/`` (each module its own node), and the page
functions that read module-level variables rather than take them as parameters. (e) The parameters of evalcore/
annotated ``Any`` or not annotated. Reads files only (``ast``), imports nothing, so it runs on any checkout: an old commit in a
``git worktree`` as well as this one.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PATHS = ("evalcore", "pages", "app.py", "bench", "scripts")
GRAPH_PATHS = ("evalcore", "pages", "app.py")


@dataclass(frozen=True)
class Function:
    path: str
    line: int
    name: str
    length: int


def python_files(root: Path, paths: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        target = root / p
        if target.is_file() and target.suffix == ".py":
            out.append(target)
        elif target.is_dir():
            out += sorted(f for f in target.rglob("*.py") if "__pycache__" not in f.parts)
    return out


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def group_of(module: str) -> str | None:
    """The graph node a module belongs to: evalcore.<subpackage or module>, pages, app; None outside the product."""
    parts = module.split(".")
    if parts[0] == "evalcore":
        return "evalcore" if len(parts) == 1 else f"evalcore.{parts[1]}"
    if parts[0] in ("pages", "app"):
        return parts[0]
    return None


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every module an ``import`` or ``from ... import`` names, relative imports resolved."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            found.update(f"{prefix}.{a.name}" for a in node.names)  # `from evalcore import runs` names a module
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in python_files(root, GRAPH_PATHS):
        module = module_name(root, path)
        src = group_of(module)
        if src is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = {group_of(m) for m in imported_modules(tree, module, path.name == "__init__.py")}
        graph.setdefault(src, set()).update(t for t in targets if t and t != src and t != "evalcore")
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def page_module_graph(root: Path) -> dict[str, set[str]]:
    """The import graph among the modules of ``pages/`` (each module its own node, ``app.py`` too), every import
    counted, those inside functions included: ``pages._shared -> pages._nav -> pages._compute -> pages._shared`` is a
    cycle though all three sit in one group of :func:`import_graph`. Give it to :func:`cycles`."""
    graph: dict[str, set[str]] = {}
    for path in python_files(root, ("pages", "app.py")):
        module = module_name(root, path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found = imported_modules(tree, module, path.name == "__init__.py")
        targets = {m for m in found if m.startswith("pages.") and (root / (m.replace(".", "/") + ".py")).is_file()}
        graph[module] = targets - {module}
    return graph


def _is_constant_name(name: str) -> bool:
    return name.lstrip("_").isupper() or name.lstrip("_") == ""


def _module_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level by assignment (loop and ``with`` targets, walrus included): the
    module's globals other than imports, functions, classes and UPPER_CASE constants."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                break  # a definition nested in a top-level statement binds its own names
    return {n for n in names if not _is_constant_name(n)}


def _locals_of(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = fn.args
    names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    for sub in ast.walk(fn):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not fn:
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names.update((x.asname or x.name).split(".")[0] for x in sub.names)
    return names


def page_globals(root: Path) -> list[str]:
    """``file:line  function: names`` for every function of a page script (``pages/*.py`` not starting with ``_``,
    and ``app.py``) that reads a module-level name other than an import, a function, a class or an UPPER_CASE
    constant: a page function takes what it needs as parameters, so that what it draws depends on what it is given."""
    found: list[str] = []
    for path in page_scripts(root):
        if not path.exists():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module = _module_names(tree)
        rel = path.relative_to(root).as_posix()

        def visit(node: ast.AST, enclosing: set[str]) -> None:
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, enclosing)
                    continue
                local = enclosing | _locals_of(child)  # a nested function reads its enclosing function's names
                own = [n for n in ast.walk(child) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
                read = sorted({n.id for n in own if n.id in module and n.id not in local})
                if read:
                    found.append(f"{rel}:{child.lineno}  {child.name}: {', '.join(read)}")
                visit(child, local)

        visit(tree, set())
    return found


def page_functions(root: Path) -> int:
    return sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               for p in page_scripts(root) if p.exists() for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))


def _is_any(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a string annotation
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    return isinstance(annotation, ast.Name) and annotation.id == "Any" or \
        isinstance(annotation, ast.Attribute) and annotation.attr == "Any"


def parameter_types(root: Path, paths: tuple[str, ...] = ("evalcore",)) -> tuple[int, int, int]:
    """(parameters annotated exactly ``Any``, parameters with no annotation, all parameters) of every function in
    ``paths``; ``self`` and ``cls`` of methods not counted. ``Any`` inside a type (``dict[str, Any]``) is not counted:
    the seam is typed, its contents are open."""
    n_any = n_bare = n_all = 0
    for path in python_files(root, paths):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            params = [p for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if p is not None]
            params = [p for p in params if p.arg not in ("self", "cls")]
            n_all += len(params)
            n_any += sum(_is_any(p.annotation) for p in params)
            n_bare += sum(p.annotation is None for p in params)
    return n_any, n_bare, n_all


def functions(root: Path, paths: tuple[str, ...]) -> list[Function]:
    out: list[Function] = []
    for path in python_files(root, paths):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(root).as_posix()

        def walk(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = prefix + child.name
                    out.append(Function(rel, child.lineno, name, child.end_lineno - child.lineno + 1))
                    walk(child, name + ".")
                elif isinstance(child, ast.ClassDef):
                    walk(child, prefix + child.name + ".")
                else:
                    walk(child, prefix)

        walk(tree, "")
    return out


@dataclass(frozen=True)
class PageCode:
    path: str
    lines: int
    branches: int


PAGE_LIMIT = 150


def page_scripts(root: Path) -> list[Path]:
    return sorted(p for p in (root / "pages").glob("*.py") if not p.name.startswith("_")) + [root / "app.py"]


def _is_docstring(i: int, node: ast.stmt) -> bool:
    return i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def top_level_code(path: Path, root: Path) -> PageCode:
    """Lines (not blank, not comment) and branches (if, for, while, conditional expression) of a script's
    module-level statements, imports, definitions and the docstring left out: what runs on every rerun of a page."""
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines()
    tree = ast.parse(src, filename=str(path))
    n = branches = 0
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)) \
                or _is_docstring(i, node):
            continue
        n += sum(1 for ln in lines[node.lineno - 1:node.end_lineno] if ln.strip() and not ln.strip().startswith("#"))
        branches += sum(isinstance(s, (ast.If, ast.IfExp, ast.For, ast.While)) for s in ast.walk(node))
    return PageCode(path.relative_to(root).as_posix(), n, branches)


def store_methods(root: Path) -> set[str]:
    """The public method names of the store's classes (evalcore/store/*.py), read from the source."""
    names: set[str] = set()
    for path in sorted((root / "evalcore" / "store").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Store") or \
                    isinstance(node, ast.ClassDef) and node.name == "Connection":
                names.update(f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                             and not f.name.startswith("_"))
    return names


def store_calls(root: Path) -> list[str]:
    """``file:line  receiver.method`` for every call in ``pages/`` and ``app.py`` of a store method on something that
    is not an imported module: pages hand the store to library functions, they do not call it."""
    methods = store_methods(root)
    found: list[str] = []
    for path in python_files(root, ("pages", "app.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = {a.asname or a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                   for a in n.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods:
                recv = node.func.value
                if isinstance(recv, ast.Name) and recv.id in modules:
                    continue
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}  {ast.unparse(node.func)}")
    return found


def print_pages(pages: list[PageCode], limit: int) -> None:
    print(f"## Top-level code per page script (limit {limit} lines)")
    for p in pages:
        flag = "  OVER" if p.lines > limit else ""
        print(f"{p.lines:4d} lines {p.branches:3d} branches  {p.path}{flag}")
    print(f"{sum(p.lines for p in pages):4d} lines in all")


def print_graph(graph: dict[str, set[str]]) -> None:
    print("## Import graph (group -> the groups it imports)")
    width = max(map(len, graph), default=0)
    for src in sorted(graph):
        print(f"{src:<{width}} -> {', '.join(sorted(graph[src])) or '-'}")
    found = cycles(graph)
    print("cycles: " + ("; ".join(" <-> ".join(c) for c in found) if found else "none"))


def print_longest(funcs: list[Function], top: int, over: int) -> None:
    longest = sorted(funcs, key=lambda f: (-f.length, f.path, f.line))
    n_over = sum(1 for f in funcs if f.length > over)
    print(f"## The {top} longest functions ({len(funcs)} functions; {n_over} longer than {over} lines)")
    for f in longest[:top]:
        print(f"{f.length:4d}  {f.path}:{f.line}  {f.name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=".", help="the checkout to read (default: the current folder)")
    ap.add_argument("--top", type=int, default=15, help="how many of the longest functions to list")
    ap.add_argument("--over", type=int, default=60, help="count (and with --list-over, list) functions longer")
    ap.add_argument("--page-limit", type=int, default=PAGE_LIMIT, help="most lines of top-level code a page may hold")
    ap.add_argument("--list-over", action="store_true", help="list every function longer than --over lines")
    ap.add_argument("--paths", nargs="+", default=list(DEFAULT_PATHS),
                    help=f"files and folders whose functions are measured (default: {' '.join(DEFAULT_PATHS)})")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    if not (root / "evalcore").is_dir():
        print(f"{root}: no evalcore/ folder here (give the checkout with --root)", file=sys.stderr)
        return 2
    print_graph(import_graph(root))
    print()
    funcs = functions(root, tuple(args.paths))
    print_longest(funcs, args.top, args.over)
    print()
    pages = [top_level_code(p, root) for p in page_scripts(root) if p.exists()]
    print_pages(pages, args.page_limit)
    page_cycles = cycles(page_module_graph(root))
    print("## Import cycles among the modules of pages/: "
          + ("; ".join(" <-> ".join(c) for c in page_cycles) if page_cycles else "none"))
    closing = page_globals(root)
    print()
    print(f"## Page functions reading module-level variables ({len(closing)} of {page_functions(root)}; "
          "a page function takes what it needs as parameters)")
    for c in closing:
        print(c)
    n_any, n_bare, n_all = parameter_types(root)
    print()
    print(f"## Parameters in evalcore/: {n_any} annotated Any, {n_bare} not annotated, of {n_all}")
    calls = store_calls(root)
    print()
    print(f"## Store methods called by the app's pages ({len(calls)}; pages hand the store to library functions)")
    for c in calls:
        print(c)
    if args.list_over:
        print()
        print(f"## Every function longer than {args.over} lines")
        for f in sorted(funcs, key=lambda f: (-f.length, f.path, f.line)):
            if f.length > args.over:
                print(f"{f.length:4d}  {f.path}:{f.line}  {f.name}")
    return 1 if any(p.lines > args.page_limit for p in pages) or calls or page_cycles else 0


if __name__ == "__main__":
    raise SystemExit(main())
