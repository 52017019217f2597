"""The store's tests on both backends: fixtures that give a test a store location on SQLite (a file in its own
directory) and on PostgreSQL (a fresh schema of the server that ``EVALCORE_TEST_POSTGRES`` names, dropped after the
test). Without that variable the PostgreSQL half skips, saying how to run it (pytest's ``-ra`` summary lists it).

A test module imports the fixtures it uses: ``from tests.store_backends import backend, store_at  # noqa: F401``.
"""

from __future__ import annotations

import os
import re
import uuid
from urllib.parse import quote

import pytest

POSTGRES_ENV = "EVALCORE_TEST_POSTGRES"
SKIP_REASON = (f"the PostgreSQL half of the store tests: set {POSTGRES_ENV} to a server's URL, e.g. "
               f"postgresql://postgres@/evalcore_test?host=/tmp/pgsock (.ci/run starts one; docs/lab-server.md)")
BACKENDS = ("sqlite", "postgresql")


def postgres_url() -> str | None:
    return os.environ.get(POSTGRES_ENV) or None


def with_schema(url: str, schema: str) -> str:
    """``url`` landing in ``schema`` (libpq's ``options=-csearch_path=...``)."""
    option = "options=" + quote(f"-csearch_path={schema}", safe="")
    return url + ("&" if "?" in url else "?") + option


class PostgresSchemas:
    """Fresh schemas on the test server, each dropped (with all it holds) by :meth:`drop_all`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.made: list[str] = []

    def new(self, hint: str = "") -> str:
        import psycopg

        name = "t_" + re.sub(r"[^a-z0-9]", "_", hint.lower())[:20] + "_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url, autocommit=True) as c:
            c.execute(f'CREATE SCHEMA "{name}"')
        self.made.append(name)
        return with_schema(self.url, name)

    def drop_all(self) -> None:
        import psycopg

        if not self.made:
            return
        with psycopg.connect(self.url, autocommit=True) as c:
            for name in self.made:
                c.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        self.made = []


@pytest.fixture
def pg_schemas():
    """Fresh PostgreSQL schemas for one test (skipped without a server)."""
    url = postgres_url()
    if url is None:
        pytest.skip(SKIP_REASON)
    schemas = PostgresSchemas(url)
    yield schemas
    schemas.drop_all()


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """Each test that takes it runs twice: on SQLite, and on PostgreSQL (skipped without a server)."""
    if request.param == "postgresql" and postgres_url() is None:
        pytest.skip(SKIP_REASON)
    return request.param


@pytest.fixture
def store_at(backend, tmp_path):
    """``store_at(name)``: the location of a store for this test on its backend: ``tmp_path / name`` on SQLite, a
    fresh schema per name on PostgreSQL (the same name, the same store)."""
    schemas = PostgresSchemas(postgres_url() or "") if backend == "postgresql" else None
    given: dict[str, str] = {}

    def at(name: str = "evalcore.db") -> str:
        if schemas is None:
            return str(tmp_path / name)
        if name not in given:
            given[name] = schemas.new(name)
        return given[name]

    yield at
    if schemas is not None:
        schemas.drop_all()
