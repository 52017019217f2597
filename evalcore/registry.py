"""What JudgeScope can be extended with, and how: scoring methods, import formats, judge providers and analyses, each
kept in one registry that every menu, command-line choice, upload filter and generated docs table reads.

A built-in registers itself where it is defined, by decorator (as inspect_ai's ``@scorer`` / ``@modelapi``)::

    @register_method
    class Brief: ...                      # an evalcore.methods.base.Method; its instance is registered

    @register_format("tsvgz", extensions=(".tsv.gz",), unit="line", convention="rows are ...", label="gzipped TSV")
    def read_tsvgz(name: str, data: bytes, unit: str): ...   # -> (table or None, [Problem, ...])

    register_provider("mylab", base_url="https://judge.mylab.org/v1", api_key_env="MYLAB_API_KEY", label="My lab")

    @register_analysis("mad", label="Mean absolute difference", as_dict=lambda r: {"mad": r.as_dict()})
    def mad(data): ...                    # data: evalcore.analyses.evaluation.AnalysisInput -> result or None

An installed package adds its own through an entry-point group, read the first time a registry is read (so importing
the library loads no plugin)::

    [project.entry-points."judgescope.methods"]
    brief = "my_pkg.brief"           # a module: importing it runs its decorators
    brief2 = "my_pkg.brief:Brief"    # or an object, registered as if decorated

A plugin that fails to load (an import error, a name already taken, an object of the wrong kind) is skipped with a
warning naming it, its distribution and why (``failures()``); whatever it had registered before failing is taken
out again, and the application goes on without it. Set ``JUDGESCOPE_NO_PLUGINS=1`` to load the built-ins only (the
committed docs are generated that way).

This module imports nothing of evalcore at import time: a registry imports its built-ins' package by name when it
is first read, so every layer may read any registry.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, TypeVar

from evalcore import settings

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., object])

if TYPE_CHECKING:  # types only: this module imports nothing heavy at import time
    import pandas as pd

NO_PLUGINS_ENV = "JUDGESCOPE_NO_PLUGINS"
BUILTIN = "built-in"


class PluginWarning(UserWarning):
    """A plugin could not be loaded; the application goes on without it."""


@dataclass(frozen=True)
class PluginFailure:
    """One entry point that could not be loaded, and why."""

    group: str
    name: str
    value: str  # "module:attribute" as the entry point declares it
    distribution: str
    error: str

    def message(self) -> str:
        return (f"plugin {self.name!r} ({self.value}, from {self.distribution}) in entry-point group {self.group!r} "
                f"was not loaded: {self.error}. JudgeScope goes on without it.")


_SCANNED: dict[tuple[str, ...], Any] = {}


def _entry_points(group: str) -> Any:
    """The entry points of ``group``: the installed distributions are read once for every group (each read costs
    about 0.1 s), again only when sys.path changed."""
    key = tuple(sys.path)
    if key not in _SCANNED:
        _SCANNED.clear()
        _SCANNED[key] = entry_points()
    return _SCANNED[key].select(group=group)


class Registry(Mapping[str, Any]):
    """Name -> registered object for one kind. A read-only mapping: reading it first imports the built-ins' package,
    then the entry points of ``group`` (once)."""

    def __init__(self, kind: str, group: str, builtins: str, check: Callable[[object], tuple[str, object]]):
        self.kind, self.group, self._builtins, self._check = kind, group, builtins, check
        self._items: dict[str, Any] = {}
        self._origin: dict[str, str] = {}
        self._failures: list[PluginFailure] = []
        self._plugin_modules: set[str] = set()  # the modules entry points named, forgotten by reload_plugins
        self._loading: str = BUILTIN  # whose code is registering now: "built-in" or a distribution's name
        self._loaded = False

    # -- registration
    def register(self, obj: object) -> Any:
        """Add ``obj`` (checked and named by the kind's check); returns what is registered."""
        name, value = self._check(obj)
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"a {self.kind} needs a non-empty name, got {name!r}")
        if name in self._items and self._items[name] is not value:
            raise ValueError(f"{self.kind} {name!r} is already registered (by {self._origin[name]})")
        self._items[name] = value
        self._origin[name] = self._loading
        return value

    # -- loading
    def load(self) -> None:
        if self._loaded:
            return
        self._loaded = True  # first: a plugin that reads the registry while loading must not load it again
        importlib.import_module(self._builtins)
        if settings.current().no_plugins:  # $JUDGESCOPE_NO_PLUGINS (NO_PLUGINS_ENV)
            return
        for ep in _entry_points(self.group):
            self._load_entry_point(ep)

    def _load_entry_point(self, ep: EntryPoint) -> None:
        dist = getattr(getattr(ep, "dist", None), "name", None) or "an unknown distribution"
        before = dict(self._items)
        self._loading = dist
        self._plugin_modules.add(ep.module)
        try:
            obj = ep.load()
            if ep.attr:  # an object: registered here unless its own decorator already did on import
                name, _ = self._check(obj)
                if not (name in self._items and name not in before):
                    self.register(obj)
        except Exception as exc:  # noqa: BLE001 - any failure of third-party code is reported, never fatal
            self._items, self._origin = before, {k: v for k, v in self._origin.items() if k in before}
            failure = PluginFailure(self.group, ep.name, ep.value, dist, f"{type(exc).__name__}: {exc}")
            self._failures.append(failure)
            warnings.warn(failure.message(), PluginWarning, stacklevel=2)  # stderr of the CLI and the server
        finally:
            self._loading = BUILTIN

    # -- reading
    def __getitem__(self, name: str) -> Any:
        self.load()
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(list(self._items))

    def __len__(self) -> int:
        self.load()
        return len(self._items)

    def origin(self, name: str) -> str:
        """"built-in", or the distribution that registered ``name``."""
        self.load()
        return self._origin[name]

    def failures(self) -> list[PluginFailure]:
        self.load()
        return list(self._failures)

    # -- tests
    def snapshot(self) -> tuple:
        return dict(self._items), dict(self._origin), list(self._failures), self._loaded, set(self._plugin_modules)

    def restore(self, state: tuple) -> None:
        """Back to a snapshot's plugins; the built-ins registered since stay (their modules run once)."""
        items, origin, failures, loaded, modules = state
        builtin = [k for k, o in self._origin.items() if o == BUILTIN]
        plugins = [k for k, o in origin.items() if o != BUILTIN and k not in builtin]
        self._items = {k: (self._items if k in builtin else items)[k] for k in builtin + plugins}
        self._origin = {k: (self._origin if k in builtin else origin)[k] for k in builtin + plugins}
        self._failures, self._loaded, self._plugin_modules = list(failures), loaded, set(modules)

    def reload_plugins(self) -> None:
        """Forget the plugins (their modules too, so that their decorators run again) and read the entry points
        again: tests put a plugin on sys.path, then call this."""
        keep = {k for k, o in self._origin.items() if o == BUILTIN}
        self._items = {k: v for k, v in self._items.items() if k in keep}
        self._origin = {k: v for k, v in self._origin.items() if k in keep}
        for module in self._plugin_modules:
            sys.modules.pop(module, None)
        self._plugin_modules, self._failures, self._loaded = set(), [], False
        self.load()


# ------------------------------------------------------------------------------------------------------ methods

_METHOD_ATTRS = ("name", "label", "pairwise", "default_config", "load_config", "requirements", "plan",
                 "build_requests", "score")


def _check_method(obj: object) -> tuple[str, object]:
    # a class is registered as its instance (a method holds no state; its config is passed to every call)
    value = obj() if isinstance(obj, type) else obj
    missing = [a for a in _METHOD_ATTRS if not hasattr(value, a)]
    if missing:
        raise TypeError(f"{value!r} is not a scoring method: it lacks {', '.join(missing)} "
                        "(see evalcore.methods.base.Method)")
    return getattr(value, "name"), value


METHODS = Registry("scoring method", "judgescope.methods", "evalcore.methods", _check_method)


def register_method(obj: T) -> T:
    """Decorator: register a scoring method (a class, instantiated once, or an instance); returns ``obj`` (an
    instance is registered as itself)."""
    METHODS.register(obj)
    return obj


# ------------------------------------------------------------------------------------------------------ formats

@dataclass(frozen=True)
class Format:
    """An upload format: the extensions it is recognised by, how its rows are counted in messages, and its reader
    ``reader(name, data, unit) -> (table or None, problems)``, the table's index being the row numbers a person
    finds in the file (``evalcore.importers.readers``)."""

    name: str
    extensions: tuple[str, ...]
    unit: str  # "line", "record", "row": what a row number in a message counts
    convention: str  # the sentence that says so
    label: str
    reader: Callable[[str, bytes, str], tuple[Any, list]] = field(compare=False)


def _check_format(obj: object) -> tuple[str, Format]:
    if not isinstance(obj, Format):
        raise TypeError(f"{obj!r} is not an import format: register it with @register_format(...)")
    bad = [e for e in obj.extensions if not (e.startswith(".") and len(e) > 1 and e == e.lower())]
    if not obj.extensions or bad:
        raise ValueError(f"format {obj.name!r}: extensions must be lower-case and start with '.', got {obj.extensions}")
    for other in FORMATS._items.values():
        clash = set(obj.extensions) & set(other.extensions) if other.name != obj.name else set()
        if clash:
            raise ValueError(f"format {obj.name!r}: extension {sorted(clash)[0]} is already format {other.name!r}'s")
    return obj.name, obj


FORMATS = Registry("import format", "judgescope.formats", "evalcore.importers.readers", _check_format)


def register_format(name: str, *, extensions: tuple[str, ...], unit: str, convention: str,
                    label: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator on a reader function ``(name, data, unit) -> (table or None, problems)``: register it as ``name``."""
    def decorate(reader: Callable) -> Callable:
        FORMATS.register(Format(name, tuple(extensions), unit, convention, label or name, reader))
        return reader
    return decorate


def format_of(filename: str) -> Format | None:
    """The registered format whose extension ends ``filename`` (the longest such extension), or None."""
    low = PurePath(filename).name.lower()
    found = [(len(e), f) for f in FORMATS.values() for e in f.extensions if low.endswith(e)]
    return max(found, key=lambda t: t[0])[1] if found else None


def upload_extensions() -> list[str]:
    """Every registered extension without its dot, as an upload widget's filter takes them."""
    return [e.lstrip(".") for f in FORMATS.values() for e in f.extensions]


# ---------------------------------------------------------------------------------------------------- providers

@dataclass(frozen=True)
class Provider:
    """A judge provider: an OpenAI-compatible endpoint's preset (address, the variable holding its key). Registering
    one widens no trust: the server's key goes to a plugin's address only where the operator allows it
    (``evalcore.judge.trust``)."""

    name: str
    base_url: str
    api_key_env: str
    label: str
    api_version: str | None = None  # Azure OpenAI only
    docs: str = ""


def _check_provider(obj: object) -> tuple[str, Provider]:
    if not isinstance(obj, Provider):
        raise TypeError(f"{obj!r} is not a judge provider: register it with register_provider(...)")
    if not obj.api_key_env.replace("_", "").isalnum():
        raise ValueError(f"provider {obj.name!r}: {obj.api_key_env!r} is not an environment variable's name")
    return obj.name, obj


PROVIDERS = Registry("judge provider", "judgescope.providers", "evalcore.judge.providers", _check_provider)


def register_provider(name: str, *, base_url: str, api_key_env: str, label: str | None = None,
                      api_version: str | None = None, docs: str = "") -> Provider:
    """Register an OpenAI-compatible provider preset; returns it."""
    return PROVIDERS.register(Provider(name, base_url, api_key_env, label or name, api_version, docs))


# ----------------------------------------------------------------------------------------------------- analyses

@dataclass(frozen=True)
class Analysis:
    """A statistic of one run on one dimension, set against the humans, that every door renders.

    ``compute(data)`` takes an ``evalcore.analyses.evaluation.AnalysisInput`` (the dataset, the run, the dimension,
    its score frame, the settings asked) and returns the analysis's result, or None where it does not apply;
    ``as_dict(result)`` is what ``meta --json`` prints of it under ``dimensions.<dim>`` (its keys, in order);
    ``tables(result)`` is what the exported report and the Alignment page show of it (a title -> table mapping,
    one row per run), None for the built-ins those render in sections of their own."""

    name: str
    label: str
    compute: Callable[..., object] = field(compare=False)
    as_dict: Callable[..., Mapping[str, object]] = field(compare=False)
    tables: Callable[..., Mapping[str, pd.DataFrame]] | None = field(default=None, compare=False)
    keys: tuple[str, ...] = ()  # the keys ``as_dict`` writes in meta --json (the docs table lists them)

    @property
    def module(self) -> str:
        return str(self.compute.__module__)


def _check_analysis(obj: object) -> tuple[str, Analysis]:
    if not isinstance(obj, Analysis):
        raise TypeError(f"{obj!r} is not an analysis: register it with @register_analysis(...)")
    return obj.name, obj


ANALYSES = Registry("analysis", "judgescope.analyses", "evalcore.analyses.evaluation", _check_analysis)


def register_analysis(name: str, *, label: str, as_dict: Callable[..., Mapping[str, object]],
                      tables: Callable[..., Mapping[str, pd.DataFrame]] | None = None, keys: tuple[str, ...] = ()
                      ) -> Callable[[F], F]:
    """Decorator on ``compute(data) -> result or None`` (``data``: an ``evalcore.analyses.evaluation
    .AnalysisInput``): register it as the analysis ``name``, rendered by ``as_dict`` in ``meta --json`` (under the
    ``keys`` it writes; default ``(name,)``) and by ``tables`` in the report and on the Alignment page."""
    def decorate(compute: F) -> F:
        ANALYSES.register(Analysis(name, label, compute, as_dict, tables, tuple(keys) or (name,)))
        return compute
    return decorate


REGISTRIES: dict[str, Registry] = {"methods": METHODS, "formats": FORMATS, "providers": PROVIDERS,
                                   "analyses": ANALYSES}


def plugin_failures() -> list[PluginFailure]:
    """Every plugin of every kind that could not be loaded (the app shows these, the CLI warns)."""
    return [f for r in REGISTRIES.values() for f in r.failures()]
