"""Fixtures shared by the AppTest modules."""

from __future__ import annotations

import os

import pytest


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
