"""Fixtures shared by the test modules: every test gets its own store; the AppTest modules' first start."""

from __future__ import annotations

import os
import sys

import pytest

# Each collection rewrites the asserts of every test module (pytest's assertion rewriting) and compiles evalcore; both
# are cached as .pyc in __pycache__ (git-ignored), unless PYTHONDONTWRITEBYTECODE is set, as it is on the shared
# development machine: then every collection, in each xdist worker, redoes it (about 8 s of the 17 s a collection
# took there). The cache is always written for the test run; the files are checked against their sources' mtimes.
sys.dont_write_bytecode = False


@pytest.fixture(autouse=True)
def own_store(tmp_path_factory, monkeypatch):
    """Each test its own store (EVALCORE_DB in a fresh directory), whatever the environment says: a test never
    reads or writes the user's ~/.evalcore/evalcore.db, nor a store another test filled. A test that needs a
    particular file sets EVALCORE_DB itself (monkeypatch), after this."""
    path = tmp_path_factory.mktemp("store") / "evalcore.db"
    monkeypatch.setenv("EVALCORE_DB", str(path))
    return path


@pytest.fixture
def first_start(tmp_path, monkeypatch):
    """What a first start of the app looks like: a fresh store (``tmp_path / "evalcore.db"``), a small bootstrap, no
    judge credentials, and empty Streamlit caches (AppTest runs the app in this process: datasets and runs cached by
    an earlier test were read from another store)."""
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "evalcore.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "20")
    for k in list(os.environ):
        if k.startswith("OPENAI_") or k.startswith("AZURE_OPENAI"):
            monkeypatch.delenv(k)
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield tmp_path / "evalcore.db"
    st.cache_data.clear()
    st.cache_resource.clear()
