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

import inspect
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from evalcore import settings
from evalcore.csvsafe import to_csv_safe
from evalcore.judge.redact import split_credentials
from evalcore.model import Dataset, Run
from pages import _nav
from pages._loaders import (  # noqa: F401 - the pages reach the loaders through this module
    Context, dataset_list, dataset_version, default_resamples, esc, forget_runs, load_dataset, load_run, run_index,
    run_versions, runs_by_ids, store_or_none, store_problem)


def context() -> Context:
    """The sidebar's shared state (dataset, runs, dimension, parse mode, resamples): every page's first call. A store
    that cannot be read is said here once, at the top of every page."""
    ctx = _nav.context()
    store_banner()
    return ctx


# ------------------------------------------------------------------------------------------------------ display


def table(frame: pd.DataFrame, name: str, key: str, *, height: int | str = "auto", **kw: Any) -> None:
    """A dataframe with its CSV download right beside it (file name from ``name``)."""
    if _nothing_to_show(frame, name):
        return
    # shown: p-values as "<0.001"/"0.961", rates as percentages, blanks for missing cells (evalcore.views.format);
    # the CSV keeps the raw numbers
    from evalcore.views.format import display_table

    shown = display_table(frame)
    config = {c: st.column_config.NumberColumn(format=f) for c, f in shown.formats.items()}
    config.update(kw.pop("column_config", None) or {})
    # one row that never wraps: the table takes the width the CSV button leaves (in a narrow column a fixed share of
    # the width cut the button's label to "C...")
    row = _button_row()
    with row:
        st.dataframe(shown.frame, hide_index=True, height=height, key=f"df_{key}", column_config=config or None,
                     placeholder="", width="stretch", **kw)
    _csv_button(row, frame, name, key)


# ``wrap`` arrived after the 1.56 floor (read once, not per table)
_NO_WRAP = {"wrap": False} if "wrap" in inspect.signature(st.container).parameters else {}


def _button_row() -> Any:
    """A horizontal row that keeps a table and its CSV button on one line. ``wrap`` arrived after the 1.56 floor:
    there the row may wrap the button under a narrow table, which is all the difference."""
    return st.container(horizontal=True, vertical_alignment="top", **_NO_WRAP)


def _nothing_to_show(frame: pd.DataFrame | None, name: str) -> bool:
    """An empty table is said in words, not drawn as an empty grid."""
    if frame is None or frame.empty:
        st.caption(esc(f"{name}: nothing to show."))
        return True
    return False


def _csv_button(container: Any, frame: pd.DataFrame, name: str, key: str) -> None:
    """The raw numbers of a shown table as CSV (formula-like cells quoted), beside it."""
    container.download_button("CSV", data=to_csv_safe(frame).encode("utf-8"), file_name=f"{_slug(name)}.csv",
                              mime="text/csv", key=f"csv_{key}", help=f"Download {esc(name)} as CSV",
                              icon=":material/download:", width="content")


def static_table(frame: pd.DataFrame, name: str, key: str) -> None:
    """A small table drawn as plain HTML (``st.table``), with its CSV download beside it. For a page's first table
    of a few rows: the browser draws it without loading the data grid, which is most of the time a visit takes before
    the Data page shows its dimensions (bench/bench_pages.py). Larger or sortable tables use ``table``."""
    if _nothing_to_show(frame, name):
        return
    from evalcore.views.format import display_table

    row = _button_row()  # as ``table``: the button whole
    row.table(markdown_safe(display_table(frame).as_text()), hide_index=True)
    _csv_button(row, frame, name, key)


def markdown_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``st.table`` renders every cell and header as Markdown: an uploaded dimension name ``![x](https://...)``
    would make every visitor's browser fetch the image. Every text cell and header escaped (``esc``): shown as typed,
    no image, link or autolink."""
    def safe(v: Any) -> Any:
        return esc(v) if isinstance(v, str) and _MARKUP.search(v) else v

    out = frame.copy()
    out.columns = [safe(c) for c in out.columns]
    for c in out.columns:
        if out[c].dtype == object:
            out[c] = [safe(v) for v in out[c]]
    return out


# what Markdown could read as markup, a link or an autolink in a cell; plain words and numbers ("1-5", "3.413") are
# left as they are (the table's copy and the tests read them as shown)
_MARKUP = re.compile(r"[\[\]()!<>*_`~#|$\\&]|://|www\.|@|^\s*[-+>=]\s|^\s*\d+[.)]\s", re.IGNORECASE)


def chart(fig: Any, key: str) -> None:
    """Every chart on every page: texts from the data shown as typed, never as links or markup."""
    from evalcore.chartsafe import plain_figure

    st.plotly_chart(plain_figure(fig), key=f"chart_{key}", width="stretch")


def sources(*codes: str) -> None:
    """The key to the papers a page's headings cite (evalcore.views.format.SOURCES)."""
    from evalcore.views.format import sources_key

    with st.expander("Sources cited on this page"):
        st.text("\n".join(sources_key(codes)))


def plain(label: str, text: str, key: str | None = None) -> None:
    """A dataset text or judge reply: shown verbatim as text, never interpreted as Markdown or HTML; its label too (a
    run's name in "Run A (name)" is the user's: escaped here, so no view has to remember it)."""
    st.caption(esc(label))
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


# ------------------------------------------------------------------------------------------------ judge endpoint


@dataclass
class EndpointChoice:
    """What the endpoint fields say. ``endpoint`` is None until a model is named; ``problems`` says what is missing."""

    endpoint: Any  # evalcore.judge.client.Endpoint | None
    api_key: str | None  # from the password field only (the client reads the env var itself)
    problems: list[str]
    base_url: str = ""  # where requests go (shown on the page), model named or not
    refused: str | None = None  # why the server's key may not go to base_url (evalcore.judge.trust)

    @property
    def typed_for(self) -> str | None:
        """The base URL the typed key belongs to (None when no key was typed): it is sent nowhere else."""
        return self.base_url if self.api_key else None

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


_ENDPOINT_FIELDS = ("endpoint", "base_url", "model", "api_key")
_SAVED = "_judge_endpoint"  # the fields' values, kept in this session's memory across pages


def _restore_endpoint_fields() -> None:
    """One endpoint per browser session, shared by every page (Score, Criteria): Streamlit drops a widget's state
    when a page without it runs, so the fields are copied to a plain session key and seeded from it. Session memory
    only: never in the URL (a link must not choose where requests, and a key, go), never stored."""
    saved = st.session_state.get(_SAVED, {})
    for k in _ENDPOINT_FIELDS:
        if k not in st.session_state and k in saved:
            st.session_state[k] = saved[k]


def endpoint_form(where: str = "main") -> EndpointChoice:
    """Preset, base URL, model, API key: this session's own, never in the URL (evalcore.judge.trust)."""
    from evalcore.judge.client import PRESETS, endpoint_from_preset, key_source

    presets = list(PRESETS)
    _restore_endpoint_fields()
    _move_typed_credentials()
    if st.session_state.get("endpoint") not in presets:
        st.session_state["endpoint"] = presets[0]
    st.session_state.setdefault("model", settings.current().openai_model)
    c1, c2, c3 = st.columns([1, 2, 1])
    preset = c1.selectbox("Endpoint preset", presets, key="endpoint")
    env_base = configured_openai_base()
    preset_base = env_base if (preset == "openai" and env_base) else PRESETS[preset].base_url
    base_url = c2.text_input("Base URL", key="base_url", placeholder=preset_base,
                             help="Empty: the preset's URL (for openai, $OPENAI_BASE_URL when set). Kept for this "
                                  "browser session, on every page; never in a link.")
    model = c3.text_input("Model", key="model", placeholder="e.g. gpt-4o-mini", help="Azure: the deployment name")
    key_env = PRESETS[preset].api_key_env
    api_key = st.text_input("API key", type="password", key="api_key",
                            help=f"Kept in this browser session's memory only: never saved, never in the URL. "
                                 f"Empty: the server's ${key_env}, sent only to an endpoint the server's operator "
                                 "configured.")
    st.session_state[_SAVED] = {k: st.session_state.get(k) for k in _ENDPOINT_FIELDS}
    if st.session_state.get("_credentials_moved") == base_url.strip() and base_url.strip():
        st.info("The base URL carried credentials (user:password@): they were taken out of the URL (which is "
                "kept in the run's record) and put in the API key field, which is never stored.")
    problems: list[str] = []
    endpoint = None
    if not model.strip():
        problems.append("no model named")
    else:
        endpoint = endpoint_from_preset(preset, model=model.strip(), base_url=(base_url.strip() or preset_base))
    target = endpoint or endpoint_from_preset(preset, model="-", base_url=(base_url.strip() or preset_base))
    source, problem = key_source(target, api_key or None, shared=shared_server())
    refused = problem if problem and ("operator configured" in problem or "is refused" in problem) else None
    if problem:
        problems.append(problem)
    else:
        shown = target.base_url.rstrip("/").replace("`", "%60")  # a code span: shown as typed, never a link
        st.caption(f"Requests go to `{shown}` ({esc(source)}).")
    return EndpointChoice(endpoint=endpoint, api_key=api_key or None, problems=problems, base_url=target.base_url,
                          refused=refused)


def configured_openai_base() -> str:
    """$OPENAI_BASE_URL when the operator set it usably; an entry with credentials or in an ambiguous form is
    ignored (evalcore.judge.trust.operator_entries) and said on the page, never used, its secret never sent."""
    from evalcore.judge import trust

    for problem in trust.configuration_problems():
        st.warning(esc(f"Server configuration: {problem}"), icon="⚠️")
    entries = [e for e in trust.operator_entries() if e.variable == "OPENAI_BASE_URL" and e.problem is None]
    return settings.current().openai_base_url if entries else ""


def endpoint_help(choice: EndpointChoice) -> None:
    """Under the endpoint fields when nothing can be sent yet: the refusal, or how to configure a judge."""
    if choice.ready:
        return
    if choice.refused:
        st.warning(esc(choice.refused))
        return
    st.info(HOW_TO_CONFIGURE)
    if choice.problems:
        st.caption("Missing: " + esc("; ".join(choice.problems)))


def shared_server() -> bool:
    """A lab server (sign-in configured, or the operator listed endpoints): evalcore.judge.trust.shared_server."""
    from evalcore.judge import trust
    from pages import _identity as identity

    return trust.shared_server(identity.sign_in_configured())


def _move_typed_credentials() -> None:
    """A base URL typed as ``http://user:key@host/v1``: take the userinfo out before the field is drawn, so it never
    reaches the cache key or the run record; the secret goes to the API key field (session memory only)."""
    clean, secret = split_credentials(st.session_state.get("base_url") or "")
    if secret is None:
        return
    st.session_state["base_url"] = clean
    if not st.session_state.get("api_key"):
        st.session_state["api_key"] = secret
    st.session_state["_credentials_moved"] = clean.strip()  # said while the field holds this URL


# ----------------------------------------------------------------------------------------------------- criteria


def preset_options(ds: Dataset, dimension: str) -> dict[str, Any]:
    """The papers' criteria for ``dimension`` (evalcore.methods.presets), by a readable name."""
    from evalcore.methods import presets

    out: dict[str, Any] = {}
    for family, dims in presets.PRESETS.items():
        if dimension in dims:
            out[f"G-Eval (Liu et al. 2023): {family}"] = dims[dimension]
    for family, dims in presets.SHEN_CRITERIA.items():
        if dimension in dims:
            out[f"Shen et al. 2023: {family}"] = dims[dimension]
    if ds.id == "fed_dialogue":
        c = presets.criteria_for("explicit", ds.id, dimension)
        if c is not None:
            out["Chen et al. 2023: FED"] = c
    return out


def default_criteria(ds: Dataset, dimension: str, method: str = "geval"):
    """The criteria a dimension starts with: the library's one rule (evalcore.judge.spec.default_criteria), which
    the CLI's ``score`` uses too: the paper's, or the signed-in user's own newest saved version; never a version
    someone else saved (issue 21, item 8)."""
    from evalcore.judge import spec
    from evalcore.store import StoreError, default_store
    from pages import _identity as identity

    try:
        return spec.default_criteria(ds, dimension, method, default_store(), owner=identity.owner())
    except StoreError:  # the banner says why; the presets still work
        return spec.default_criteria(ds, dimension, method, None)


def current_criteria(ds: Dataset, dimension: str, method: str = "geval"):
    """What the Criteria page holds for this dimension (its edits in this session), else the default."""
    edits = st.session_state.get("_criteria", {}).get((ds.id, dimension))
    return edits if edits is not None else default_criteria(ds, dimension, method)


def remember_criteria(ds: Dataset, criteria) -> None:
    st.session_state.setdefault("_criteria", {})[(ds.id, criteria.dimension)] = criteria


# ------------------------------------------------------------------------------------------ a broken store (issue 9)


def store_banner() -> None:
    """One banner at the top of every page while the store cannot be read: what it is, and the way out."""
    problem = store_problem()
    if problem:
        st.error(esc(problem[:1].upper() + problem[1:]) + "\n\nUntil then, datasets uploaded here and runs scored "
                 "here are not listed, and scoring and saving criteria are off; the bundled data and published runs "
                 "work as usual.", icon=":material/database:")
