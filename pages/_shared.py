"""What every page of the app shares: cached loaders, the sidebar context, tables with a CSV download, plain text.

Conventions the pages keep:

* Every piece of view state is a widget created with ``key=url.key(name, default, ...)`` (pages/_url.py) and no
  default of its own: the key IS the query parameter, every run writes the whole state to the URL (defaults too),
  so a copied URL reopens the same view. The API key field is the one exception: never in the URL, never stored.
* Dataset texts and judge replies are shown with ``st.text`` / ``st.code`` / ``st.dataframe`` only, never through
  Markdown or HTML.
* Results are cached by ids and parameters (``st.cache_data``); loaded datasets and runs are cached as resources
  (they are read-only here).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from evalcore.model import Dataset, Run
from pages import _nav
from pages import _url as url
from pages._loaders import (  # noqa: F401 - the pages reach the loaders through this module
    Context, dataset_list, default_resamples, esc, forget_runs, load_dataset, load_run, run_index, runs_by_ids)


def context() -> Context:
    """The sidebar's shared state (dataset, runs, dimension, parse mode, resamples): every page's first call."""
    return _nav.context()


# ------------------------------------------------------------------------------------------------------ display


def table(frame: pd.DataFrame, name: str, key: str, *, height: int | str = "auto", **kw: Any) -> None:
    """A dataframe with its CSV download right beside it (file name from ``name``)."""
    if frame is None or frame.empty:
        st.caption(esc(f"{name}: nothing to show."))
        return
    # p-values span many orders of magnitude (1e-59 at dataset level): scientific notation keeps them readable
    config = {c: st.column_config.NumberColumn(format="scientific") for c in frame.columns
              if str(c).startswith("pvalue") or str(c).startswith("p_value")}
    config.update(kw.pop("column_config", None) or {})
    left, right = st.columns([12, 2], vertical_alignment="top")
    with left:
        st.dataframe(frame, hide_index=True, height=height, key=f"df_{key}", column_config=config or None, **kw)
    with right:
        st.download_button("CSV", data=frame.to_csv(index=False).encode("utf-8"), file_name=f"{_slug(name)}.csv",
                           mime="text/csv", key=f"csv_{key}", help=f"Download {name} as CSV", icon=":material/download:")


def chart(fig: Any, key: str) -> None:
    st.plotly_chart(fig, key=f"chart_{key}", width="stretch")


def plain(label: str, text: str, key: str | None = None) -> None:
    """A dataset text or judge reply: shown verbatim as text, never interpreted as Markdown or HTML."""
    st.caption(label)
    st.code(text if text else "(empty)", language=None, wrap_lines=True)


def _slug(name: str) -> str:
    s = "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")
    while "--" in s:
        s = s.replace("--", "-")
    return s or "table"


def need_runs(runs: list[Run], what: str = "per-item scores") -> bool:
    """Say what to do when the selection holds no usable run; True when the page can go on."""
    if runs:
        return True
    st.info(f"No selected run has {what}. Pick runs in the sidebar (**Runs**), or score the dataset on the "
            "**Score** page.")
    return False


def fmt(x: Any, digits: int = 3) -> str:
    try:
        if x is None or pd.isna(x):
            return "n/a"
        return f"{float(x):.{digits}f}"
    except (TypeError, ValueError):
        return str(x)


# ------------------------------------------------------------------------------------------------ judge endpoint


@dataclass
class EndpointChoice:
    """What the endpoint fields say. ``endpoint`` is None until a model is named; ``problems`` says what is missing."""

    endpoint: Any  # evalcore.judge.client.Endpoint | None
    api_key: str | None  # from the password field only (the client reads the env var itself)
    problems: list[str]

    @property
    def ready(self) -> bool:
        return self.endpoint is not None and not self.problems


HOW_TO_CONFIGURE = (
    "No judge endpoint is configured. Either start the app with the environment variables set, e.g.\n\n"
    "    export OPENAI_API_KEY=sk-...                      # the key (never stored by the app)\n"
    "    export OPENAI_BASE_URL=https://api.openai.com/v1  # optional: any OpenAI-compatible server\n"
    "    streamlit run app.py\n\n"
    "or fill in the fields above: endpoint preset (openai, azure, vllm, ollama, llamacpp), base URL, model and "
    "API key. Local servers (vllm, ollama, llamacpp) need no key. Every analysis page works without a judge."
)


def endpoint_form(where: str = "main") -> EndpointChoice:
    """Preset, base URL, model, API key. Bound to the URL except the key, which is never stored anywhere."""
    from evalcore.judge.client import LOCAL_PROVIDERS, PRESETS, endpoint_from_preset

    presets = list(PRESETS)
    c1, c2, c3 = st.columns([1, 2, 1])
    preset = c1.selectbox("Endpoint preset", presets, key=url.key("endpoint", presets[0], options=presets))
    env_base = os.environ.get("OPENAI_BASE_URL", "")
    preset_base = env_base if (preset == "openai" and env_base) else PRESETS[preset].base_url
    base_url = c2.text_input("Base URL", key=url.key("base_url", ""), placeholder=preset_base,
                             help="Empty: the preset's URL (for openai, $OPENAI_BASE_URL when set)")
    model = c3.text_input("Model", key=url.key("model", os.environ.get("OPENAI_MODEL", "")),
                          placeholder="e.g. gpt-4o-mini", help="Azure: the deployment name")
    key_env = PRESETS[preset].api_key_env
    api_key = st.text_input("API key", type="password", key="api_key",
                            help=f"Kept in this browser session's memory only: never saved, never in the URL. "
                                 f"Empty: read from ${key_env}.")
    problems = []
    endpoint = None
    if not model.strip():
        problems.append("no model named")
    else:
        endpoint = endpoint_from_preset(preset, model=model.strip(), base_url=(base_url.strip() or preset_base))
    if not api_key and not os.environ.get(key_env) and PRESETS[preset].provider not in LOCAL_PROVIDERS:
        problems.append(f"no API key (field empty and ${key_env} not set)")
    return EndpointChoice(endpoint=endpoint, api_key=api_key or None, problems=problems)


# ----------------------------------------------------------------------------------------------------- criteria


def preset_options(ds: Dataset, dimension: str) -> dict[str, Any]:
    """The papers' criteria for ``dimension`` (evalcore.methods.presets), by a readable name."""
    from evalcore.methods import presets

    out: dict[str, Any] = {}
    for family, dims in presets.PRESETS.items():
        if dimension in dims:
            out[f"G-Eval (000): {family}"] = dims[dimension]
    for family, dims in presets.SHEN_CRITERIA.items():
        if dimension in dims:
            out[f"Shen et al. (003): {family}"] = dims[dimension]
    if ds.id == "fed_dialogue":
        c = presets.criteria_for("explicit", ds.id, dimension)
        if c is not None:
            out["Chen et al. (002): FED"] = c
    return out


def default_criteria(ds: Dataset, dimension: str, method: str = "geval"):
    """The criteria a dimension starts with: the newest saved version, else the method's paper preset for this
    dataset, else one written from the dataset's own dimension description."""
    from evalcore.judge.store import default_store
    from evalcore.judge.types import Criteria
    from evalcore.methods import presets

    saved = default_store().load_criteria(ds.id, dimension)
    if saved is not None:
        return saved
    preset = presets.criteria_for(method, ds.id, dimension)
    if preset is not None:
        return preset
    d = ds.dimension(dimension)
    lo, hi = int(d.scale_min), int(d.scale_max)
    if hi - lo < 2:
        # a human score that is a share or a binary label (zhang_pairs: preference share 0-1) gives the judge no
        # usable rating scale; G-Eval rated such texts 1-5 (000 Sec. 4) and rank correlations do not mind
        lo, hi = 1, 5
    return Criteria(dimension=dimension,
                    task_introduction=f"You will be given one {ds.task} output. Your task is to rate it on one "
                                      f"metric.",
                    definition=f"{dimension.replace('_', ' ').title()}: {d.description or dimension}",
                    scale_min=lo, scale_max=hi)


def current_criteria(ds: Dataset, dimension: str, method: str = "geval"):
    """What the Criteria page holds for this dimension (its edits in this session), else the default."""
    edits = st.session_state.get("_criteria", {}).get((ds.id, dimension))
    return edits if edits is not None else default_criteria(ds, dimension, method)


def remember_criteria(ds: Dataset, criteria) -> None:
    st.session_state.setdefault("_criteria", {})[(ds.id, criteria.dimension)] = criteria
