"""The server's settings from the environment: one frozen object, each variable read in one place.

:class:`Settings` names every environment variable the app and the command line read (API keys aside: a key is read
by the name its endpoint gives, ``Endpoint.api_key_env``, when a request needs it, and is never held here, so it can
never reach a repr or a log), with its default and what it sets. :func:`current` builds it from ``os.environ``, once
per distinct environment (a test that sets a variable gets a new one). docs/lab-server.md's table of variables is
generated from it (``python scripts/settings_reference.py --write``; tests/test_docs.py checks it is current).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def _text(raw: str) -> str:
    return raw.strip()


def _positive_int(raw: str) -> int | None:
    try:
        v = int(raw)
    except ValueError:
        return None
    return v if v > 0 else None


def _usd(raw: str) -> float | None:
    try:
        x = float(raw)
    except ValueError:
        return None
    return x if math.isfinite(x) and x >= 0 else None


def _flag(raw: str) -> bool:
    return raw.strip() not in ("", "0")


def _var(name: str, parse: Callable[[str], T], default: T, doc: str) -> T:
    """A field read from ``$name`` by ``parse`` (an unset, empty or unparseable value gives ``default``)."""
    return field(default=default, metadata={"env": name, "parse": parse, "doc": doc})


@dataclass(frozen=True)
class Settings:
    """Every setting the environment gives, parsed. Unset, empty or unparseable: the default."""

    openai_base_url: str = _var("OPENAI_BASE_URL", _text, "", "the operator's OpenAI-compatible endpoint (default "
                                "`https://api.openai.com/v1`); `$OPENAI_API_KEY` may go there")
    openai_model: str = _var("OPENAI_MODEL", _text, "", "the model the Score page and `align` start with")
    azure_openai_endpoint: str = _var("AZURE_OPENAI_ENDPOINT", _text, "", "an Azure OpenAI resource; "
                                      "`$AZURE_OPENAI_API_KEY` may go there (other providers: providers.md)")
    allowed_endpoints: str = _var("EVALCORE_ALLOWED_ENDPOINTS", _text, "", "more base URLs the operator's keys may "
                                  "go to (comma- or space-separated)")
    user_header: str = _var("EVALCORE_USER_HEADER", _text, "", "sign-in by a trusted reverse proxy: the header that "
                            "carries the user's name")
    proxy_secret: str = field(default="", repr=False, metadata={
        "env": "EVALCORE_PROXY_SECRET", "parse": _text,
        "doc": "with `EVALCORE_USER_HEADER`: the secret the proxy sends in `X-Evalcore-Proxy-Secret`"})
    confirm_usd: float | None = _var("EVALCORE_CONFIRM_USD", _usd, None, "a run estimated above this (default 1 "
                                     "USD) starts only once confirmed")
    max_cost_usd: float | None = _var("EVALCORE_MAX_COST_USD", _usd, None, "the most one signed-in user may start, "
                                      "and everyone not signed in together")
    prices: str = _var("EVALCORE_PRICES", _text, "", "a JSON price file overriding the built-in price table "
                       "(default `~/.evalcore/prices.json`)")
    db: str = _var("EVALCORE_DB", _text, "", "the store: a SQLite file or a `postgresql://` URL "
                  "(default `~/.evalcore/evalcore.db`)")
    max_upload_bytes: int | None = _var("EVALCORE_MAX_UPLOAD_BYTES", _positive_int, None, "the most bytes one "
                                        "upload may decode to")
    max_upload_columns: int | None = _var("EVALCORE_MAX_UPLOAD_COLUMNS", _positive_int, None, "the most columns "
                                          "one upload may have")
    max_upload_cells: int | None = _var("EVALCORE_MAX_UPLOAD_CELLS", _positive_int, None, "the most cells one "
                                        "upload may have")
    max_upload_memory: int | None = _var("EVALCORE_MAX_UPLOAD_MEMORY", _positive_int, None, "the memory one "
                                         "upload's import may take (bytes)")
    resamples: int | None = _var("EVALCORE_RESAMPLES", _positive_int, None, "the app's default number of bootstrap "
                                 "resamples (1000; at least 10)")
    data_dir: str = _var("EVALCORE_DATA_DIR", _text, "", "where the bundled data lives (default `<repo>/data`)")
    no_plugins: bool = _var("JUDGESCOPE_NO_PLUGINS", _flag, False, "set (not `0`): load no third-party plugin "
                            "(entry points)")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = environ.get(f.metadata["env"], "")
            parsed = f.metadata["parse"](raw) if raw.strip() else None
            values[f.name] = f.default if parsed is None or parsed == "" else parsed
        return cls(**values)

    def value(self, variable: str) -> Any:
        """The setting read from ``$variable`` (KeyError for a variable that is no setting)."""
        for f in fields(self):
            if f.metadata["env"] == variable:
                return getattr(self, f.name)
        raise KeyError(f"{variable} is not a setting of evalcore.settings.Settings")

    def store_path(self) -> Path:
        return Path(self.db) if self.db else Path.home() / ".evalcore" / "evalcore.db"

    def prices_path(self) -> Path:
        return Path(self.prices) if self.prices else Path.home() / ".evalcore" / "prices.json"


def variables() -> list[tuple[str, str]]:
    """(variable, what it sets) for each setting, in order: the documentation's table."""
    return [(f.metadata["env"], f.metadata["doc"]) for f in fields(Settings)]


@functools.lru_cache(maxsize=8)
def _built(values: tuple[tuple[str, str], ...]) -> Settings:
    return Settings.from_environ(dict(values))


def current(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of ``environ`` (default: this process's environment), built once per distinct set of values."""
    env = os.environ if environ is None else environ
    return _built(tuple((name, env.get(name, "")) for name, _doc in variables()))
