"""The Data page's upload forms: a human-rated file (every column gets a role; judge-score columns become runs), and a
judge-score file for the dataset in use. Thin: the guess, the checks and the import are ``evalcore.importers``.

An uploaded file is read once: the table is cached by the sha256 of its bytes (computed once per upload), so a
widget change reruns the page without reading or guessing again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from evalcore import importers
from evalcore.importers import inspect_log, pairs, promptfoo
from evalcore.model import LABEL_KINDS, counted
from pages import _handoff as handoff
from pages import _identity as identity
from pages import _shared as ui

ROLE_KEYS = list(importers.ROLES)
# widget keys that belong to one uploaded file: dropped when another file is uploaded
FILE_KEYS = ("role_", "dim_", "ann_", "run_", "scale_min_", "scale_max_", "kind_", "labels_", "_prefill_",
             "unrated_", "pairrole_", "upload_holds", "inspect_")
HOLDS = ("ratings of outputs", "pairwise preferences")
SCALE_LIMIT = 1e15  # the number inputs hold finite numbers a browser can show exactly


def _digest(upload: Any) -> str:
    """sha256 of the upload's bytes, computed once per uploaded file (not on every rerun)."""
    memo = st.session_state.setdefault("_upload_digests", {})
    key = getattr(upload, "file_id", None) or (upload.name, upload.size)
    if key not in memo:
        if len(memo) >= 8:  # uploads of this session: the dataset file and the judge-score file, a few past ones
            memo.pop(next(iter(memo)))
        memo[key] = hashlib.sha256(upload.getvalue()).hexdigest()
    return memo[key]


@st.cache_resource(show_spinner="Reading the file…", max_entries=4)
def read_upload(digest: str, name: str, _data: bytes) -> tuple[pd.DataFrame | None, Any]:
    """(table, None) or (None, DatasetValidationError): cached by content hash, shared read-only."""
    try:
        return importers.read_table(_data, filename=name), None
    except importers.DatasetValidationError as e:
        return None, e


@st.cache_resource(show_spinner="Looking at the columns…", max_entries=4)
def column_guess(digest: str, _frame: pd.DataFrame) -> list[importers.ColumnGuess]:
    return importers.guess_columns(_frame)


def show_problems(err: importers.DatasetValidationError, key: str = "upload_problems") -> None:
    """Every problem with file, row and column, inline (st.error), plus the table of them."""
    lines = [str(p) for p in err.problems[: importers.MAX_PROBLEMS_SHOWN]]
    total = getattr(err, "total", len(err.problems))  # past the first 1,000 problems the rest are counted, not kept
    more = total - len(lines)
    head = f"{counted(total, 'problem')} found, nothing was imported"
    if err.convention:
        head += f" ({err.convention})"
    st.error(head + ":\n\n" + "\n".join(f"- {ui.esc(x)}" for x in lines) + (f"\n- … and {more:,} more" if more else ""))
    frame = pd.DataFrame([{"file": p.file, "row": str(p.row), "column": p.column, "problem": p.message}
                          for p in err.problems])
    ui.table(frame, "upload problems", key)


def _forget_other_file(digest: str) -> None:
    if st.session_state.get("_upload_digest") != digest:
        for k in [k for k in st.session_state if isinstance(k, str) and k.startswith(FILE_KEYS)]:
            del st.session_state[k]
        st.session_state["_upload_digest"] = digest


# ------------------------------------------------------------------------------------------------ dataset upload


def _role_row(g: importers.ColumnGuess, has_long: bool) -> importers.ColumnGuess:
    """One column's row of the form: name and what it holds, its role, and what the role needs."""
    c = st.columns([3, 2, 2, 2], vertical_alignment="bottom")
    rng = f" · {g.lo:g} to {g.hi:g}" if g.lo is not None else f" · words: {', '.join(g.labels)}" if g.labels else ""
    c[0].text(f"{g.column}\n{g.numbers} numbers{rng} · {g.distinct} distinct · {g.blanks} blank")
    role = c[1].selectbox(ui.esc(f"Role of {g.column}"), ROLE_KEYS, index=ROLE_KEYS.index(g.role),
                          key=f"role_{g.column}", format_func=importers.ROLES.get, label_visibility="collapsed")
    out = importers.ColumnGuess(g.column, role)
    if role == "human":
        out.dimension = c[2].text_input("Dimension", value=g.dimension or g.column, key=f"dim_{g.column}",
                                        placeholder="dimension")
        out.annotator = c[3].text_input("Annotator (optional)", value=g.annotator, key=f"ann_{g.column}",
                                        placeholder="one rating per row")
    elif role == "judge":
        if not has_long:
            out.dimension = c[2].text_input("Dimension it scores", value=g.dimension, key=f"dim_{g.column}",
                                            placeholder="dimension")
        out.run_name = c[3].text_input("Run name", value=g.run_name or g.column, key=f"run_{g.column}")
    return out


@st.cache_resource(show_spinner=False, max_entries=64)
def near_duplicates(digest: str, column: str, what: str, _raw: pd.DataFrame) -> list[str]:
    return importers.near_duplicates(_raw[column].astype("str").where(_raw[column].notna()), what)


def _id_warnings(raw: pd.DataFrame, mapping: importers.ColumnMapping, digest: str) -> None:
    """Ids that differ only by whitespace, case or leading zeros, said before the import (they would become
    different systems, documents or annotators)."""
    for what in ("system_id", "doc_id", "item_id", "annotator"):
        col = getattr(mapping, what)
        if col in raw.columns:
            for w in near_duplicates(digest, col, what, raw):
                st.warning(ui.esc(w))


@st.cache_resource(show_spinner=False, max_entries=32)
def prefills(digest: str, mapping_json: str, _raw: pd.DataFrame, _mapping: importers.ColumnMapping
             ) -> tuple[dict, dict, dict]:
    """Scale, kind and (for ratings written as words) label prefill per dimension, once per file and choice of
    columns."""
    return (importers.scale_prefill(_raw, _mapping), importers.kind_prefill(_raw, _mapping),
            importers.label_prefill(_raw, _mapping))


def _labels_input(dim: str, words: tuple[str, ...]) -> list[str]:
    """The categories of a dimension rated in words, in order (the last one of a binary dimension is its positive
    class), prefilled from the file: the --labels of the CLI."""
    typed = st.text_input(ui.esc(f"Labels in order · {dim}"), key=f"labels_{dim}",
                          help="Comma-separated, in order: the codes are 0, 1, … For a binary dimension the last "
                               "label is the positive class (precision, recall and F1 are about it). Spelling "
                               "variants in the file (Pass, pass ) are read as the label they fold to.")
    return [w.strip() for w in typed.split(",") if w.strip()] or list(words)


def _scale_inputs(raw: pd.DataFrame, mapping: importers.ColumnMapping, digest: str) -> None:
    """Per dimension: label kind and rating scale, prefilled from its own human-rating columns. When the columns
    behind a dimension change, its prefill (and the inputs) follow."""
    prefill, kinds, words = prefills(digest, mapping.to_json(), raw, mapping)
    if not prefill:
        return
    st.markdown("**Rating scale and label kind per dimension** (inferred from the human ratings given: widen a "
                "scale they do not reach; judge scores need no scale)")
    for dim, (lo, hi) in prefill.items():
        if not dim.strip():
            continue
        lo, hi = max(-SCALE_LIMIT, lo), min(SCALE_LIMIT, hi)
        sig = (lo, hi, kinds.get(dim), words.get(dim))
        if st.session_state.get(f"_prefill_{dim}") != sig:  # the columns changed: prefill again
            st.session_state[f"_prefill_{dim}"] = sig
            st.session_state[f"scale_min_{dim}"], st.session_state[f"scale_max_{dim}"] = float(lo), float(hi)
            st.session_state[f"kind_{dim}"] = kinds.get(dim, "interval")
            st.session_state[f"labels_{dim}"] = ", ".join(words.get(dim, ()))
        c = st.columns([3, 2, 2, 2], vertical_alignment="bottom")
        c[0].text(dim)
        kind = c[1].selectbox(ui.esc(f"Kind · {dim}"), LABEL_KINDS, key=f"kind_{dim}")
        smin = c[2].number_input(ui.esc(f"Scale min · {dim}"), key=f"scale_min_{dim}", min_value=-SCALE_LIMIT,
                                 max_value=SCALE_LIMIT)
        smax = c[3].number_input(ui.esc(f"Scale max · {dim}"), key=f"scale_max_{dim}", min_value=-SCALE_LIMIT,
                                 max_value=SCALE_LIMIT)
        mapping.scales[dim] = (float(smin), float(smax))
        mapping.kinds[dim] = kind
        if dim in words:  # rated in words: the categories and their order
            labels = _labels_input(dim, words[dim])
            mapping.labels[dim] = labels
            mapping.scales[dim] = (0.0, float(len(labels) - 1))  # the codes of the labels


def _unrated_inputs(mapping: importers.ColumnMapping, texts_only: bool) -> None:
    """Dimensions with no rating column yet, to be rated on the Label page: a file of texts only, or one more
    dimension beside the rated ones (the CLI's --dimension, --kind and --labels)."""
    with st.expander("Dimensions to rate in the app (no rating column yet)", expanded=texts_only):
        st.caption("Texts to label on the Label page: name each dimension and give its scale (interval or ordinal) "
                   "or its labels in order (binary and nominal, e.g. 'fail, pass': the last label of a binary "
                   "dimension is its positive class).")
        n = int(st.number_input("Dimensions to add", min_value=0, max_value=12, value=1 if texts_only else 0,
                                key="unrated_n"))
        for i in range(n):
            c = st.columns([3, 2, 1, 1, 3], vertical_alignment="bottom")
            dim = c[0].text_input(f"Dimension {i + 1}", key=f"unrated_dim_{i}", placeholder="e.g. faithfulness")
            kind = c[1].selectbox(f"Kind {i + 1}", LABEL_KINDS, key=f"unrated_kind_{i}")
            lo = c[2].number_input(f"Min {i + 1}", value=1.0, key=f"unrated_min_{i}",
                                   disabled=kind in ("binary", "nominal"))
            hi = c[3].number_input(f"Max {i + 1}", value=5.0, key=f"unrated_max_{i}",
                                   disabled=kind in ("binary", "nominal"))
            typed = c[4].text_input(f"Labels in order {i + 1}", key=f"unrated_labels_{i}",
                                    placeholder="e.g. fail, pass", disabled=kind not in ("binary", "nominal"))
            dim = dim.strip()
            if not dim:
                continue
            mapping.unrated.append(dim)
            mapping.kinds[dim] = kind
            labels = [w.strip() for w in typed.split(",") if w.strip()] if kind in ("binary", "nominal") else []
            if labels:
                mapping.labels[dim] = labels
                mapping.scales[dim] = (0.0, float(len(labels) - 1))
            elif kind not in ("binary", "nominal"):
                mapping.scales[dim] = (float(lo), float(hi))


def dataset_form(upload: Any) -> None:
    digest = _digest(upload)
    _forget_other_file(digest)
    if inspect_log.looks_like_log(upload.name, upload.getvalue()):
        inspect_form(upload, digest)
        return
    if upload.name.lower().endswith(".json") and promptfoo.looks_like_results(upload.getvalue()):
        promptfoo_form(upload)
        return
    raw, err = read_upload(digest, upload.name, upload.getvalue())
    if err is not None:
        show_problems(err)
        return
    delim = raw.attrs.get("delimiter")
    st.text(f"{upload.name}: {counted(len(raw), 'row')}, {counted(len(raw.columns), 'column')}"
            + (f", fields separated by {delim!r}" if delim and delim != "," else ""))
    done = st.session_state.get("_imported_digest") == digest
    guessed = pairs.looks_pairwise(raw.columns)
    holds = st.radio("The file holds", HOLDS, index=1 if guessed else 0, key="upload_holds", horizontal=True,
                     help="Guessed from the column names: ratings (a score per output) or pairwise preferences (two "
                          "outputs, or two conversations, and a vote per row, as MT-Bench's and Chatbot Arena's "
                          "human judgments). Correct it here, then each column's role below.")
    if holds == HOLDS[1]:
        with st.expander("Pairwise preferences: preview, roles and import" + (" (imported)" if done else ""),
                         expanded=not done):
            _pairs_form(upload, raw, digest)
        return
    # once imported, the form folds away (open it to import the file again with other roles)
    with st.expander("Preview, column roles, scales and import" + (" (imported)" if done else ""), expanded=not done):
        _form(upload, raw, digest)


def _form(upload: Any, raw: pd.DataFrame, digest: str) -> None:
    st.dataframe(importers.preview_frame(raw, 20), key="upload_preview")
    guesses = column_guess(digest, raw)
    st.markdown("**What each column holds, and its role** (a conservative guess from names and values: correct it)")
    ui.table(pd.DataFrame([g.stats_row() for g in guesses]), f"{upload.name} columns", "upload_columns")
    head = st.columns([3, 2, 2, 2])
    for col, text in zip(head, ("column: what it holds", "role", "dimension", "annotator / run name")):
        col.caption(text)
    has_long = any(g.role in ("dimension", "value") for g in guesses)
    chosen = [_role_row(g, has_long or any(st.session_state.get(f"role_{x.column}") == "dimension"
                                           for x in guesses)) for g in guesses]
    try:
        mapping = importers.mapping_from_guesses(chosen)
    except ValueError as e:
        st.error(ui.esc(str(e)))
        return
    _id_warnings(raw, mapping, digest)
    for note in importers.implicit_notes(mapping):  # what stands in for a column the file does not give
        st.info(ui.esc(note))
    _scale_inputs(raw, mapping, digest)
    _unrated_inputs(mapping, texts_only=not mapping.rating_columns())
    mapping.allow_missing_ratings = bool(st.checkbox("A blank rating means 'not rated'", key="map_allow_missing"))
    name = st.text_input("Dataset name", value=Path(upload.name).stem, key="upload_name")
    if st.button("Import dataset", key="import_dataset", type="primary"):
        if not mapping.rating_columns() and not mapping.unrated:
            st.error("No rating column is mapped and no dimension is declared: give a column the role 'human "
                     "rating', or name the dimensions to rate in the app (above, 'Dimensions to rate in the app') "
                     "to label these texts on the Label page. Nothing was imported.")
            return
        _import(upload, mapping, name or Path(upload.name).stem, raw)


def _import(upload: Any, mapping: importers.ColumnMapping, name: str, raw: pd.DataFrame) -> None:
    try:
        with st.spinner("Validating and importing…"):
            result = importers.import_table((upload.getvalue(), upload.name), mapping, name=name, table=raw,
                                            owner=identity.owner())
    except importers.DatasetValidationError as e:
        show_problems(e)
        return
    _save(upload, result)


def _save(upload: Any, result: importers.ImportResult) -> None:
    """Save an import, open its dataset and runs, and say what was imported (a table's or an Inspect log's)."""
    from evalcore.store import StoreError, store_message

    try:
        importers.save_import(result, owner=identity.owner())
    except (StoreError, ValueError) as e:  # a store that cannot be written, another user's id: said, not raised
        st.error(ui.esc(store_message(e) if isinstance(e, StoreError) else str(e)))  # no server path
        return
    ds = result.dataset
    ui.forget_runs()
    ui.load_dataset.clear()
    st.session_state["_imported_digest"] = _digest(upload)
    handoff.open_dataset(ds.id)
    handoff.open_runs([r.run_id for r in result.runs])
    runs = f" and {counted(len(result.runs), 'judge run')}: {', '.join(r.label for r in result.runs)}" \
        if result.runs else ""
    st.session_state["_imported"] = (f"Imported {ds.name!r} as {ds.id}: {counted(len(ds.items), 'item')}, dimensions "
                                     f"{', '.join(ds.dimension_names)}{runs}.")
    st.session_state["_import_warnings"] = result.warnings
    st.rerun()


# ------------------------------------------------------------------------------------------------ Inspect logs


@st.cache_data(show_spinner="Reading the Inspect log…", max_entries=4)
def _log_preview(digest: str, name: str, _data: bytes) -> tuple[Any, str]:
    try:
        return inspect_log.preview_bytes(_data, name), ""
    except (inspect_log.InspectLogError, ValueError) as e:
        return None, str(e)


def inspect_form(upload: Any, digest: str) -> None:
    """An Inspect AI log: where the human ratings are, the documents' and systems' metadata keys (proposed from what
    the log holds), a preview of its samples, and the import (evalcore.importers.inspect_log)."""
    preview, error = _log_preview(digest, upload.name, upload.getvalue())
    if preview is None:
        st.error(ui.esc(f"{upload.name}: {error}"))
        return
    st.text(f"{upload.name}: Inspect log of task {preview.task}, {counted(len(preview.samples), 'sample')} shown, "
            f"judge {preview.judge}")
    st.dataframe(preview.samples, key="inspect_preview")
    none = "(none)"
    human = st.selectbox("Human ratings", preview.human_sources + ["(none: judge scores only)"], key="inspect_human",
                         help="target: each sample's target; metadata:KEY: a sample metadata value; edits: scores "
                              "people edited (inspect_ai.log.edit_score), each author an annotator")
    doc = st.selectbox("Document key", [none] + preview.keys, key="inspect_doc",
                       help="the sample metadata key naming each sample's document (none: each sample its own)")
    system = st.selectbox("System key", [none] + preview.keys, key="inspect_system",
                          help="the sample metadata key naming the system that wrote the output (none: the model)")
    name = st.text_input("Dataset name", value=Path(upload.name).stem, key="inspect_name")
    if st.button("Import log", key="inspect_import", type="primary"):
        try:
            result = inspect_log.import_bytes(
                upload.getvalue(), upload.name, human=None if human.startswith("(none") else human,
                name=name or None, document_key=None if doc == none else doc,
                system_key=None if system == none else system, owner=identity.owner())
        except inspect_log.InspectLogError as e:
            st.error(ui.esc(str(e)))
            return
        _save(upload, result)


def promptfoo_form(upload: Any) -> None:
    """promptfoo results: its graded assertions become judge runs, its human assertions the human ratings."""
    st.text(f"{upload.name}: promptfoo results (graded assertions as judge runs, 'human' assertions as the human "
            "ratings)")
    name = st.text_input("Dataset name", value=Path(upload.name).stem, key="promptfoo_name")
    if st.button("Import results", key="promptfoo_import", type="primary"):
        try:
            result = promptfoo.import_bytes(upload.getvalue(), upload.name, name=name or None,
                                            owner=identity.owner())
        except (promptfoo.PromptfooError, ValueError) as e:
            st.error(ui.esc(str(e)))
            return
        _save(upload, result)


# ------------------------------------------------------------------------------------------------ pairwise


PAIR_ROLE_KEYS = list(pairs.PAIR_ROLES)


def _pair_roles(raw: pd.DataFrame) -> pairs.PairMapping | None:
    """Each column's pairwise role (prefilled from the names: MT-Bench's conversation_a / conversation_b, question_id,
    judge...), as a mapping; None (said) when a role is given twice."""
    guess = pairs.pair_roles(pairs.guess_pair_mapping(raw.columns), raw.columns)
    st.markdown("**Read as pairwise preferences: the role of each column** (guessed from the names: correct it). "
                "Either a prompt and two outputs, or two conversations (lists of {role, content} messages, each "
                "record judging one turn); one winner column, or one per annotator, or Chatbot Arena's three 0/1 "
                "columns (A wins, B wins, tie).")
    chosen = {}
    for col, role in guess.items():
        c = st.columns([3, 2], vertical_alignment="bottom")
        c[0].text(col)
        chosen[col] = c[1].selectbox(ui.esc(f"Pairwise role of {col}"), PAIR_ROLE_KEYS, index=PAIR_ROLE_KEYS.index(role),
                                     key=f"pairrole_{col}", label_visibility="collapsed")
    try:
        return pairs.mapping_from_roles(chosen)
    except ValueError as e:
        st.error(ui.esc(str(e)))
        return None


def _pairs_form(upload: Any, raw: pd.DataFrame, digest: str) -> None:
    """A file of pairwise votes (a prompt and two outputs, or two conversations; one winner column or one per
    annotator)."""
    st.dataframe(importers.preview_frame(raw, 20), key="upload_preview")
    mapping = _pair_roles(raw)
    c = st.columns(2)
    dimension = c[0].text_input("Dimension the votes judge", value=pairs.DEFAULT_DIMENSION, key="pairs_dimension")
    name = c[1].text_input("Dataset name", value=Path(upload.name).stem, key="upload_name")
    if st.button("Import pairwise preferences", key="import_pairs", type="primary", disabled=mapping is None):
        try:
            with st.spinner("Validating and importing…"):
                result = pairs.import_pairs((upload.getvalue(), upload.name), name=name or Path(upload.name).stem,
                                            mapping=mapping, dimension=dimension or pairs.DEFAULT_DIMENSION,
                                            table=raw, owner=identity.owner(), door="page")
        except importers.DatasetValidationError as e:
            show_problems(e)
            return
        from evalcore.store import StoreError, store_message

        try:
            pairs.save_pairs(result, owner=identity.owner())
        except (StoreError, ValueError) as e:
            st.error(ui.esc(store_message(e) if isinstance(e, StoreError) else str(e)))
            return
        s = result.summary()
        ui.forget_runs()
        ui.load_dataset.clear()
        st.session_state["_imported_digest"] = digest
        handoff.open_dataset(s["dataset"])
        st.session_state["_imported"] = (f"Imported {result.dataset.name!r} as {s['dataset']}: "
                                         f"{counted(s['pairs'], 'pair')}, {counted(s['votes'], 'vote')} by "
                                         f"{counted(len(s['annotators']), 'annotator')}, "
                                         f"{counted(len(s['models']), 'model')}; votes {result.outcome_text()}.")
        st.session_state["_import_warnings"] = result.warnings
        st.rerun()


def _verdicts_import(upload: Any, dataset: Any, name: str) -> None:
    try:
        run = pairs.import_verdicts((upload.getvalue(), upload.name), dataset, name=name)
    except importers.DatasetValidationError as e:
        show_problems(e, "scores_problems")
        return
    from evalcore.importers.api import save_runs
    from evalcore.store import StoreError, default_store

    try:
        save_runs([run], default_store(), owner=identity.owner())
    except (StoreError, ValueError) as e:
        st.error(ui.esc(str(e)))
        return
    ui.forget_runs()
    picked = [r for r in st.session_state.get("runs") or [] if r != run.run_id]
    handoff.open_runs([*picked, run.run_id])
    failed = int((run.comparisons["status"] != "ok").sum())
    st.session_state["_imported"] = (f"Imported run {run.label!r} ({run.run_id}): {len(run.comparisons)} pairwise "
                                     f"verdicts ({failed} unreadable).")
    st.rerun()


# ------------------------------------------------------------------------------------------------ judge scores


def scores_form(upload: Any, dataset: Any) -> None:
    """A judge-score file for the dataset in use: keyed by item_id or doc_id + system_id (+ dimension)."""
    digest = _digest(upload)
    raw, err = read_upload(digest, upload.name, upload.getvalue())
    if err is not None:
        show_problems(err, "scores_problems")
        return
    st.text(f"{upload.name}: {counted(len(raw), 'row')}, {counted(len(raw.columns), 'column')}")
    st.dataframe(importers.preview_frame(raw, 10), key="scores_preview")
    c = st.columns(2)
    name = c[0].text_input("Run name", value=Path(upload.name).stem, key="scores_name")
    dims = dataset.dimension_names
    dim = c[1].selectbox("Dimension (when the file has no dimension column)", dims, key="scores_dimension")
    verdicts = not dataset.preferences.empty and {"order", "verdict"} <= {str(x).strip().lower() for x in raw.columns}
    if verdicts:
        st.caption("Read as a judge's pairwise verdicts: pair_id, order (ab / ba), verdict (a / b / tie or 1 / 2 / 0).")
    parts = _annotator_parts(upload)
    if parts:
        st.caption(f"Annotations as {{annotator: {{item: label}}}} for {len(parts)} judges "
                   f"({', '.join(ui.esc(k) for k, _ in parts)}): each is imported as a run of its own.")
    if st.button("Import judge scores", key="import_scores", type="primary"):
        if verdicts:
            _verdicts_import(upload, dataset, name or upload.name)
            return
        if parts:
            _annotator_runs(parts, dataset, name or Path(upload.name).stem,
                            None if _has_dimension_column(upload) else dim)
            return
        try:
            imported = importers.load_run_scores((upload.getvalue(), upload.name), dataset, name=name or upload.name,
                                                 dimension=None if _has_dimension_column(upload) else dim)
        except importers.DatasetValidationError as e:
            show_problems(e, "scores_problems")
            return
        from evalcore.importers.api import save_runs
        from evalcore.store import StoreError, default_store

        try:
            save_runs([imported.run], default_store(), owner=identity.owner())
        except (StoreError, ValueError) as e:  # a store that cannot be written, another user's id: said, not raised
            st.error(ui.esc(str(e)))
            return
        ui.forget_runs()
        # the new run joins the runs already picked (all of this dataset)
        picked = [r for r in st.session_state.get("runs") or [] if r != imported.run.run_id]
        handoff.open_runs([*picked, imported.run.run_id])
        st.session_state["_imported"] = (f"Imported run {imported.run.label!r} ({imported.run.run_id}): "
                                         f"{counted(len(imported.run.judgments), 'judgment')}.")
        st.session_state["_import_warnings"] = imported.warnings
        st.rerun()


def _annotator_parts(upload: Any) -> list[tuple[str, Any]] | None:
    """The Alt-Test authors' llm_annotations.json layout, {judge: {item: label}} with several judges: one source
    per judge (None for any other file)."""
    memo = st.session_state.setdefault("_annotator_parts", {})
    digest = _digest(upload)
    if digest not in memo:
        memo.clear()
        memo[digest] = importers.annotator_sources((upload.getvalue(), upload.name))
    return memo[digest]


def _annotator_runs(parts: list[tuple[str, Any]], dataset: Any, name: str, dim: str | None) -> None:
    """A run per judge of the file, NAME-JUDGE, every one checked before any is saved."""
    try:
        imported = [importers.load_run_scores(src, dataset, name=f"{name}-{who}", dimension=dim)
                    for who, src in parts]
    except importers.DatasetValidationError as e:
        show_problems(e, "scores_problems")
        return
    from evalcore.importers.api import save_runs
    from evalcore.store import StoreError, default_store

    try:
        save_runs([i.run for i in imported], default_store(), owner=identity.owner())  # all or none
    except (StoreError, ValueError) as e:
        st.error(ui.esc(str(e)))
        return
    ui.forget_runs()
    ids = [i.run.run_id for i in imported]
    handoff.open_runs([*[r for r in st.session_state.get("runs") or [] if r not in ids], *ids])
    st.session_state["_imported"] = "Imported " + ", ".join(
        f"run {i.run.label!r} ({counted(len(i.run.judgments), 'judgment')})" for i in imported) + "."
    st.session_state["_import_warnings"] = [w for i in imported for w in i.warnings]
    st.rerun()


def _has_dimension_column(upload: Any) -> bool:
    raw, _ = read_upload(_digest(upload), upload.name, upload.getvalue())
    if raw is None:
        return False
    return any(importers.suggest_mapping(raw.columns).dimension == c for c in raw.columns) or any(
        str(c).strip().lower() in ("dimension", "aspect", "criterion") for c in raw.columns)


def messages() -> None:
    msg = st.session_state.pop("_imported", None)
    if msg:
        st.success(ui.esc(msg))
    for w in st.session_state.pop("_import_warnings", None) or []:
        st.warning(ui.esc(w))
