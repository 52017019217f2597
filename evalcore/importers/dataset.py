"""A checked table -> :class:`evalcore.model.Dataset`, column by column (no Python loop over rows).

:class:`TableCheck` runs the checks in named steps over whole columns: identifiers, texts, the same item and document
repeated consistently, annotators, every rating cell, duplicates. Each step adds :class:`Problem` s with the row
(as a person counts it) and column; they are sorted back into reading order at the end. Only a table without a
single problem is built into a Dataset.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np
import pandas as pd

from evalcore.importers.cells import (
    blank_mask,
    by_unique,
    fmt,
    id_column,
    rating_column,
    references,
    text_column,
)
from evalcore.importers.categories import (
    declared_problem,
    derived_labels,
    encode_column,
    folded_warning,
    holds_words,
    is_word,
    label_dimension,
    spellings,
    word_counts,
)
from evalcore.importers.mapping import PREFERRED_GROUP, ROLES, ColumnMapping
from evalcore.importers.problems import Problems
from evalcore.model import (
    ANNOTATION_COLUMNS,
    DOCUMENT_COLUMNS,
    HUMAN_SCORE_COLUMNS,
    ITEM_COLUMNS,
    CATEGORICAL_KINDS,
    LABEL_KINDS,
    Dimension,
)

# words in an interval dimension's cells are hinted to be labels when there are at most this many distinct ones
MAX_HINTED_LABELS = 20
# the roles as the Data page names them (mapping.ROLES), in messages instead of the mapping's field names
WORDS = {k: ROLES[k] for k in ("doc_id", "system_id", "item_id")}
# the order of the checks within one row, as problems are listed
_STR_KEEPS_MISSING = bool(pd.Series([np.nan], dtype=object).astype("str").isna().iloc[0])
PHASE = {"doc_id": 0, "system_id": 1, "item_id": 2, "output": 3, "item": 4, "source": 5.0, "references": 5.1,
         "context": 5.2, "annotator": 6, "dimension": 7, "rating": 8}


# reports a whole-file problem: (column, message)
Whole: TypeAlias = Callable[[str, str], None]


def valid_scale(scale: Sequence[float]) -> tuple[float, float] | None:
    try:
        lo, hi = float(scale[0]), float(scale[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) and lo < hi and len(scale) == 2 else None


def check_mapping(mapping: ColumnMapping, columns: list[str], problems: Problems) -> None:
    """Every problem of the mapping itself (roles, shape, scales, kinds, labels, unrated dimensions, columns absent
    from the file), each a whole-file problem that blocks the read."""
    def whole(column: str, message: str) -> None:
        problems.add("-", column, message, block=Problems.READ)

    shape = mapping.shape
    _check_roles_and_shape(mapping, shape, whole)
    declared = set(mapping.dimensions) | set(mapping.unrated)
    known = ", ".join(map(repr, list(mapping.dimensions) + list(mapping.unrated))) or "none"
    _check_scales_and_kinds(mapping, shape, declared, known, whole)
    _check_labels(mapping, shape, declared, known, whole)
    _check_unrated(mapping, whole)
    _check_columns(mapping, columns, whole)


def _check_roles_and_shape(mapping: ColumnMapping, shape: str, whole: Whole) -> None:
    """The roles every dataset needs, one shape (wide or long) with what it needs, annotators and groups."""
    if mapping.doc_id is None and mapping.source is None and mapping.item_id is None:
        whole("-", "no column says which document (the prompt or source text) each row is about: give a column the "
                   "role 'document id', 'source text' or 'item id' (CLI: --role COLUMN=ROLE)")
    if shape == "unknown":
        if mapping.dimensions:
            whole("-", "both dimension columns (wide) and a dimension/value column pair (long) are mapped; "
                       "choose one shape")
        else:
            whole("-", "no ratings are mapped: map dimension columns (wide) or a dimension and a value column (long); "
                       "for texts with no ratings yet (to label in the app), declare the dimensions to label, each "
                       "with its scale or kind and labels (CLI: --dimension helpfulness=1:5, or --dimension safe "
                       "--kind safe=binary --labels safe=unsafe,safe; library: ColumnMapping.unrated and scales, or "
                       "kinds and labels)")
    elif shape == "long":
        if mapping.dimension is None:
            whole("-", "long shape needs a dimension column (which quality each row rates)")
        if mapping.value is None:
            whole("-", "long shape needs a value column (the rating)")
    if any(isinstance(s, dict) for s in mapping.dimensions.values()) and mapping.annotator is not None:
        whole(mapping.annotator, "per-annotator dimension columns and an annotator column cannot be combined")
    if mapping.group is not None and mapping.annotator is None:
        whole(mapping.group, "a group column is mapped but no annotator column")
    for dim, spec in mapping.dimensions.items():
        if isinstance(spec, dict) and not spec:
            whole("-", f"dimension {dim!r} maps no annotator columns")


def _check_scales_and_kinds(mapping: ColumnMapping, shape: str, declared: set[str], known: str, whole: Whole) -> None:
    """Declared scales are (min < max) numbers and kinds are label kinds, each of a mapped dimension."""
    for dim, scale in mapping.scales.items():
        try:
            lo, hi = float(scale[0]), float(scale[1])
        except (TypeError, ValueError, IndexError):
            whole("-", f"scale for {dim!r} must be (min, max) numbers, got {scale!r}")
            continue
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            whole("-", f"scale for {dim!r} must have min < max, got ({fmt(lo)}, {fmt(hi)})")
        if shape != "long" and dim not in declared:
            whole("-", f"a scale is declared for {dim!r}, which is not a mapped dimension ({known}); a dimension "
                       "without a rating column is declared as unrated (CLI: --dimension)")
    for dim, kind in mapping.kinds.items():
        if kind not in LABEL_KINDS:
            whole("-", f"kind of {dim!r} must be one of {', '.join(LABEL_KINDS)}, not {kind!r}")
        elif shape != "long" and dim not in declared:
            whole("-", f"a kind is declared for {dim!r}, which is not a mapped dimension ({known})")


def _check_columns(mapping: ColumnMapping, columns: list[str], whole: Whole) -> None:
    """Every mapped column is in the file, and no column is mapped as a judge score and as something else."""
    present = set(columns)
    seen: dict[str, str] = {}
    for role, col in mapping.column_fields():
        if col not in present:
            shown = ", ".join(map(repr, columns[:30])) + (" ..." if len(columns) > 30 else "")
            whole(col, f"column {col!r} (mapped as {role}) is not in the file; its columns are: {shown}")
        elif role.startswith("judge") and col in seen:
            whole(col, f"column {col!r} is mapped as {seen[col]} and as {role}")
        seen.setdefault(col, role)


def _check_labels(mapping: ColumnMapping, shape: str, declared: set[str], known: str, whole: Whole) -> None:
    for dim, labels in mapping.labels.items():
        if shape != "long" and dim not in declared:
            whole("-", f"labels are declared for {dim!r}, which is not a mapped dimension ({known})")
            continue
        kind = mapping.kind_of(dim)
        why = declared_problem(dim, list(labels), kind) if kind in LABEL_KINDS else None
        if why:
            whole("-", why)


def _check_unrated(mapping: ColumnMapping, whole: Whole) -> None:
    """Dimensions declared without a rating column: a name, not also mapped, and a scale or kind + labels."""
    for dim in mapping.unrated:
        if not str(dim).strip():
            whole("-", "a dimension declared without ratings has an empty name")
        elif dim in mapping.dimensions:
            whole("-", f"dimension {dim!r} is declared as unrated and also mapped to rating columns; choose one")
        elif dim not in mapping.scales and not mapping.labels.get(dim):
            whole("-", f"dimension {dim!r} has no rating column, so its scale cannot be inferred: declare its scale "
                       f"(CLI: --dimension {dim}=1:5) or a categorical kind and its labels (CLI: --kind {dim}=binary "
                       f"--labels {dim}=no,yes; the last label of a binary dimension is the positive class)")
    if len(set(mapping.unrated)) != len(mapping.unrated):
        whole("-", f"a dimension is declared twice: {list(mapping.unrated)}")


def first_index(codes: np.ndarray, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the selected rows: (the distinct codes, the row index where each first occurs)."""
    idx = np.flatnonzero(sel)
    u, first = np.unique(codes[idx], return_index=True)
    return u, idx[first]


@dataclass
class Ratings:
    """Every rating cell that passed its checks: one row per (item, dimension, annotator), as integer codes into
    the check's item, dimension, annotator and group names."""

    frame: pd.DataFrame  # pos, spec, item, dim, ann, grp, value
    dimension_order: list[str]
    bad_dimensions: set[str] = field(default_factory=set)
    missing: int = 0


class TableCheck:
    """The checks and the build, step by step, over one read table. Identifiers are factorized once into integer
    codes (first appearance order), so grouping and duplicate checks never hash strings twice."""

    def __init__(self, frame: pd.DataFrame, mapping: ColumnMapping, problems: Problems) -> None:
        self.frame, self.mapping, self.problems = frame, mapping, problems
        self.unit = problems.unit
        self.n = len(frame)
        self.rows = frame.index.to_numpy()
        self.present = {str(c) for c in frame.columns}
        self.has_annotators = mapping.annotator is not None or any(
            isinstance(s, dict) for s in mapping.dimensions.values())
        self.scales = {d: sc for d, sc in ((d, valid_scale(s)) for d, s in mapping.scales.items()) if sc is not None}
        self.labelled: dict[str, Dimension] = {}  # dimensions rated in words: their labels (categories.py)
        self.label_warnings: list[str] = []
        self.unlabelled: set[str] = set()  # categorical dimensions whose words give no labels (one problem says why)

    def col(self, c: str | None) -> str | None:
        return c if c is not None and c in self.present else None

    def report_rows(self, mask: np.ndarray, column: str, message: str | Callable[[np.ndarray], list[str]], phase: float) -> None:
        """One problem per row of ``mask``: ``message`` is the text, or a function of the (shortened) mask giving one
        text per row, called for the first Problems.KEEP rows only."""
        mask = self.problems.first(mask)
        rows = self.rows[mask]
        messages = [message] * len(rows) if isinstance(message, str) else message(mask)
        for r, m in zip(rows.tolist(), messages):
            self.problems.add(r, column, m, phase=phase)

    # ------------------------------------------------------------------------------------------------ identities
    def identities(self) -> None:
        m, f = self.mapping, self.frame
        self.implicit: list[str] = []  # what stands in for a document id, system or output the file does not give
        self.doc = self._documents()
        if c_sys := self.col(m.system_id):
            self.system = id_column(f[c_sys])
            self.report_rows(self.system.isna().to_numpy(), c_sys, f"missing {WORDS['system_id']} (empty cell)",
                             PHASE["system_id"])
        else:
            self.system = self._numbered_outputs()
        if c_item := self.col(m.item_id):
            self.item = id_column(f[c_item])
            self.report_rows(self.item.isna().to_numpy(), c_item, f"missing {WORDS['item_id']} (empty cell)",
                             PHASE["item_id"])
        else:
            self.item = self.doc + "/" + self.system
        c_out = self.col(m.output)
        self.output = text_column(f[c_out]) if c_out else self._none().fillna("")
        if c_out:
            self.report_rows(blank_mask(f[c_out]), c_out, "empty output text", PHASE["output"])
        elif m.output is None:
            self.implicit.append("no output column: the items have no text (the ratings and annotators are all the "
                                 "Alt-Test, agreement and label statistics need; a judge cannot score them here)")
        self.attributes = {c: f[c].where(~blank_mask(f[c])) for c in m.attributes if c in self.present}
        self.item_code, self.item_names = pd.factorize(self.item)
        self.doc_code, self.doc_names = pd.factorize(self.doc)
        self.valid_item = (self.item_code >= 0) & self.doc.notna().to_numpy() & self.system.notna().to_numpy()

    def _none(self) -> pd.Series:
        """An unmapped column: every cell missing."""
        missing = pd.Series(np.full(self.n, np.nan), index=self.frame.index, dtype=object)
        # pandas 3's "str" keeps a missing cell missing; before it, astype("str") wrote the text "nan"
        return missing.astype("str") if _STR_KEEPS_MISSING else missing

    def _documents(self) -> pd.Series:
        """Each row's document: the document id column; else one document per distinct source text (the prompt),
        numbered doc-1, doc-2, ... in file order; else the item id (each item a document of its own)."""
        m, f = self.mapping, self.frame
        if c_doc := self.col(m.doc_id):
            doc = id_column(f[c_doc])
            self.report_rows(doc.isna().to_numpy(), c_doc, f"missing {WORDS['doc_id']} (empty cell)",
                             PHASE["doc_id"])
            return doc
        if c_src := self.col(m.source):
            blank = blank_mask(f[c_src])
            self.report_rows(blank, c_src, "empty source text (with no document id column, the source text says "
                                           "which document a row is about)", PHASE["doc_id"])
            codes = pd.factorize(text_column(f[m.source]).where(~blank))[0]
            self.implicit.append(f"no document id column: each distinct text of {m.source!r} (the source) is a "
                                 "document, numbered doc-1, doc-2, ... in file order")
            return pd.Series(np.char.add("doc-", (codes + 1).astype(str)), index=f.index, dtype="str").where(codes >= 0)
        if self.col(m.item_id):
            self.implicit.append(f"no document id or source column: each item ({m.item_id!r}) is a document of its own")
            return id_column(f[m.item_id])
        return self._none()

    def _numbered_outputs(self) -> pd.Series:
        """No system column: the distinct outputs (item ids, else output texts) of each document numbered in file
        order, output-1, output-2, ... (HelpSteer2 gives two responses per prompt and no model), each number taken
        as a system, said in a note."""
        m, f = self.mapping, self.frame
        key = id_column(f[m.item_id]) if self.col(m.item_id) else (
            text_column(f[m.output]) if self.col(m.output) else pd.Series("", index=f.index, dtype="str"))
        first = pd.DataFrame({"d": self.doc.to_numpy(), "k": key.to_numpy()}).drop_duplicates()
        first["n"] = first.groupby("d", sort=False, dropna=False).cumcount() + 1
        number = pd.DataFrame({"d": self.doc.to_numpy(), "k": key.to_numpy()}).merge(first, how="left", on=["d", "k"])
        out = pd.Series(("output-" + number["n"].astype("Int64").astype("str")).to_numpy(), index=f.index,
                        dtype="str").where(self.doc.notna().to_numpy() & key.notna().to_numpy())
        most = int(first["n"].max()) if len(first) else 0
        self.implicit.append("no system column: " + ("one output per document, taken as one system 'output-1'"
                                                     if most <= 1 else
                                                     "the outputs of each document are numbered in file order "
                                                     f"(output-1 to output-{most}) and each number is taken as a "
                                                     "system: per-system figures compare positions, not models"))
        return out

    def _conflicts(self, codes: np.ndarray, values: pd.Series, ok: np.ndarray, *, first_of_key: bool
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Rows whose value differs from the first value given for their key: (mask, the row to compare with:
        the key's first row, or the row of the key's first value)."""
        mask = np.zeros(self.n, bool)
        against = np.zeros(self.n, np.int64)
        sel = ok & (codes >= 0) & values.notna().to_numpy()
        if not sel.any():
            return mask, against
        idx = np.flatnonzero(sel)
        u, first, inv = np.unique(codes[idx], return_index=True, return_inverse=True)
        first_row = idx[first][inv]
        value_code, _ = pd.factorize(values)  # compare codes, not long texts
        differs = value_code[idx] != value_code[first_row]
        if not differs.any():
            return mask, against
        mask[idx[differs]] = True
        if first_of_key:
            ku, kfirst = first_index(codes, ok & (codes >= 0))
            by_code = np.zeros(int(codes.max()) + 1, np.int64)
            by_code[ku] = self.rows[kfirst]
            against[mask] = by_code[codes[mask]]
        else:
            against[mask] = self.rows[first_row[differs]]
        return mask, against

    def item_consistency(self) -> None:
        m = self.mapping
        fields = [("output", self.col(m.output), self.output)]
        if self.col(m.item_id):
            fields = [(WORDS["doc_id"], self.col(m.doc_id), self.doc),
                      (WORDS["system_id"], self.col(m.system_id), self.system)] + fields
        fields += [(f"attribute {a!r}", a, s) for a, s in self.attributes.items()]
        for i, (what, column, values) in enumerate(fields):
            if not column:
                continue
            mask, against = self._conflicts(self.item_code, values, self.valid_item, first_of_key=True)

            def differ(k: np.ndarray, what: str = what, against: np.ndarray = against) -> list[str]:
                return [f"item {it!r} has a different {what} here than on {self.unit} {r}"
                        for it, r in zip(self.item[k].tolist(), against[k].tolist())]

            self.report_rows(mask, column, differ, PHASE["item"] + i / 100)

    # ------------------------------------------------------------------------------------------------ documents
    def documents(self) -> None:
        m, f = self.mapping, self.frame
        ok = self.doc_code >= 0
        self.source = self._doc_text(self.col(m.source), "source text", "source", ok)
        self.context = self._doc_text(self.col(m.context), "context", "context", ok)
        refs_cols = [c for c in m.references if c in self.present]
        self.refs = None
        if refs_cols:
            parts = [by_unique(f[c], references) for c in refs_cols]
            refs = parts[0] if len(parts) == 1 else pd.Series(
                [sum(t, ()) for t in zip(*parts)], index=f.index, dtype=object)
            refs = refs.where(refs.map(len) > 0)
            mask, against = self._conflicts(self.doc_code, refs, ok, first_of_key=False)
            self.report_rows(mask, refs_cols[0], lambda k: [
                f"document {d!r} has different references here than on {self.unit} {r}"
                for d, r in zip(self.doc[k].tolist(), against[k].tolist())], PHASE["references"])
            self.refs = refs

    def _doc_text(self, column: str | None, what: str, phase: str, ok: np.ndarray) -> pd.Series | None:
        if not column:
            return None
        values = text_column(self.frame[column])
        values = values.where(values != "")
        mask, against = self._conflicts(self.doc_code, values, ok, first_of_key=False)
        self.report_rows(mask, column, lambda k: [
            f"document {d!r} has a different {what} here than on {self.unit} {r}"
            for d, r in zip(self.doc[k].tolist(), against[k].tolist())], PHASE[phase])
        return values

    # ------------------------------------------------------------------------------------------------ ratings
    def annotators(self) -> None:
        m, f = self.mapping, self.frame
        self.ann_code = np.full(self.n, -1, np.int64)
        self.ann_names: list[str] = []
        self.grp_code = np.zeros(self.n, np.int64)
        self.grp_names: list[str] = [m.default_group]
        c_ann = self.col(m.annotator)
        if c_ann:
            ann = id_column(f[c_ann])
            self.report_rows(ann.isna().to_numpy(), c_ann, "missing annotator (empty cell)", PHASE["annotator"])
            self.ann_code, names = pd.factorize(ann)
            self.ann_names = [str(x) for x in names]
            c_grp = self.col(m.group)
            if c_grp:
                self.grp_code, names = pd.factorize(id_column(f[c_grp]).fillna(m.default_group))
                self.grp_names = [str(x) for x in names]

    def _code(self, names: list[str], name: str) -> int:
        if name not in names:
            names.append(name)
        return names.index(name)

    def _cells(self) -> tuple[list[pd.DataFrame], list[str]]:
        """One frame per rating column: pos, spec, dim, ann, grp, value, blank, why, column."""
        m, f = self.mapping, self.frame
        pos = np.arange(self.n)
        parts: list[pd.DataFrame] = []
        order: list[str] = []
        if m.shape == "wide":
            specs = [(dim, ann, c) for dim, spec in m.dimensions.items()
                     for ann, c in (spec.items() if isinstance(spec, dict) else [(None, spec)])]
            order = list(m.dimensions)
            for i, (dim, ann, c) in enumerate(specs):
                if c not in self.present:
                    continue
                values, blank, why = self._rating_cells(f[c], dim, c)
                fixed = ann is not None
                parts.append(pd.DataFrame({
                    "pos": pos, "spec": i, "dim": order.index(dim), "column": c, "value": values, "blank": blank,
                    "why": why.to_numpy(),
                    "ann": np.full(self.n, self._code(self.ann_names, str(ann))) if fixed else self.ann_code,
                    "grp": np.full(self.n, self._code(self.grp_names, m.default_group)) if fixed else self.grp_code}))
        elif m.shape == "long" and (c_dim := self.col(m.dimension)) and (c_val := self.col(m.value)):
            dim_code, names = self.long_dims
            missing = dim_code < 0
            self.report_rows(missing, c_dim, "missing dimension name (empty cell)", PHASE["dimension"])
            order = [str(x) for x in names]
            values, blank, why = rating_column(f[c_val])
            for code, dim in enumerate(order):
                if dim in self.labelled:
                    rows = dim_code == code
                    values[rows], blank[rows], why[rows] = \
                        (x.to_numpy() if isinstance(x, pd.Series) else x
                         for x in self._rating_cells(f[c_val][rows], dim, c_val))
            keep = ~missing
            parts.append(pd.DataFrame({
                "pos": pos[keep], "spec": 0, "dim": dim_code[keep], "column": c_val, "value": values[keep],
                "blank": blank[keep], "why": why.to_numpy()[keep], "ann": self.ann_code[keep],
                "grp": self.grp_code[keep]}))
        return parts, order

    # ------------------------------------------------------------------------------------------------ words
    def _dimension_cells(self) -> dict[str, list[tuple[str, pd.Series]]]:
        """dimension -> (column, its rating cells) pairs, as mapped."""
        m, f = self.mapping, self.frame
        if m.shape == "wide":
            return {dim: [(c, f[c]) for c in (spec.values() if isinstance(spec, dict) else [spec]) if c in self.present]
                    for dim, spec in m.dimensions.items()}
        c_dim, c_val = self.col(m.dimension), self.col(m.value)
        if m.shape != "long" or not (c_dim and c_val):
            return {}
        self.long_dims = pd.factorize(id_column(f[c_dim]))
        codes, names = self.long_dims
        return {str(d): [(c_val, f[c_val][codes == i])] for i, d in enumerate(names)}

    def label_plan(self) -> None:
        """Which dimensions are rated in words, and their labels: declared, or the words of a categorical
        dimension's cells. Words in an interval dimension get one hint (their cells are "not a number")."""
        m = self.mapping
        for dim, columns in self._dimension_cells().items():
            kind = m.kind_of(dim)
            declared = m.labels.get(dim)
            if kind in CATEGORICAL_KINDS and declared:
                if declared_problem(dim, list(declared), kind) is None:
                    self.labelled[dim] = label_dimension(dim, kind, declared, f"labels {', '.join(declared)} "
                                                                              "(declared)")
                continue
            worded = [c for c, cells in columns if holds_words(cells)]
            if not worded:
                continue
            counts = sum((word_counts(cells) for _, cells in columns), Counter())
            shown = ", ".join(f"{w!r} ({n})" for w, n in counts.most_common(8)) + (" ..." if len(counts) > 8 else "")
            if kind not in CATEGORICAL_KINDS:
                if any(is_word(w) is False for w in counts) or len(spellings(counts)) > MAX_HINTED_LABELS:
                    continue  # numbers with a stray word ("four"), or free text: the cells say "not a number"
                self.problems.add("-", worded[0], f"the ratings of {dim!r} are words ({shown}), not numbers: to "
                                                  f"import them as labels, declare its kind binary or nominal (CLI: "
                                                  f"--kind {dim}=binary, and --labels {dim}=NEGATIVE,POSITIVE to set "
                                                  "the order)", block=Problems.READ)
                continue
            try:
                labels = derived_labels(counts, kind)
            except ValueError:
                self.problems.add("-", worded[0], f"{dim!r} is declared {kind} but its ratings hold "
                                                  f"{len(counts)} different words: {shown}; declare its labels (the "
                                                  f"allowed words, e.g. --labels {dim}=fail,pass) or another kind",
                                  block=Problems.READ)
                self.unlabelled.add(dim)
                continue
            self.labelled[dim] = label_dimension(dim, kind, labels, f"labels {', '.join(labels)} (the words found)")

    def _rating_cells(self, column: pd.Series, dim: str, name: str) -> tuple[np.ndarray, np.ndarray, pd.Series]:
        """(values, blank, why) of one column's cells for ``dim``: numbers, or codes of its labels."""
        if dim not in self.labelled:
            return rating_column(column)
        d = self.labelled[dim]
        enc = encode_column(column, d)
        if (w := folded_warning(name, enc.folded)) is not None:
            self.label_warnings.append(w)
        why = pd.Series([None] * len(column), index=column.index, dtype=object)
        if enc.unknown.any():
            allowed = ", ".join(map(repr, d.labels))
            source = "declared labels" if self.mapping.labels.get(dim) else "labels"
            why[enc.unknown] = [f"rating {str(v)[:40]!r} is not one of the {source} of {dim!r}: {allowed}"
                                for v in column[enc.unknown]]
        return enc.values, enc.blank, why

    def ratings(self) -> Ratings:
        self.label_plan()
        self.declared_scales = dict(self.scales)
        self.scales = {d: sc for d, sc in self.scales.items() if d not in self.labelled}  # codes: checked as labels
        parts, order = self._cells()
        order = order + [d for d in self.mapping.unrated if d not in order]
        self.dimension_names = order
        if not parts:
            return Ratings(pd.DataFrame({c: pd.Series(dtype=t) for c, t in (
                ("pos", "int64"), ("spec", "int64"), ("item", "int64"), ("dim", "int64"), ("ann", "int64"),
                ("grp", "int64"), ("value", "float64"))}), order)
        cells = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        if self.unlabelled:  # their cells are not checked one by one: the whole-column problem says what to do
            cells = cells[~cells["dim"].isin([order.index(d) for d in self.unlabelled])].reset_index(drop=True)
        out = Ratings(cells, order, bad_dimensions=set(self.unlabelled))
        dims = np.asarray(order, dtype=object)
        dim = cells["dim"].to_numpy()
        why = cells["why"].to_numpy()
        bad_why = pd.notna(why)
        self._cell_problems(cells, bad_why, why)
        blank = cells["blank"].to_numpy(dtype=bool) & ~bad_why
        if self.mapping.allow_missing_ratings:
            out.missing = int(blank.sum())
        else:
            self._cell_problems(cells, blank, lambda k: [
                f"empty rating for {d!r} (to read a blank cell as 'not rated': --allow-missing-ratings on "
                f"import-dataset, or the Data page's box \"A blank rating means 'not rated'\")"
                for d in dims[dim[k]]])
        good = ~bad_why & ~blank
        bad = bad_why | (blank & (not self.mapping.allow_missing_ratings))
        in_scale = self._scale_check(cells, good, dims)
        bad |= good & ~in_scale
        good &= in_scale
        pos = cells["pos"].to_numpy()
        item = self.item_code[pos]
        known = self.valid_item[pos]
        if self.mapping.annotator is not None:
            known &= cells["ann"].to_numpy() >= 0
        bad |= good & ~known
        good &= known
        cells = cells.assign(item=item)
        unique = self._duplicates(cells, good, dims)
        bad |= good & ~unique
        out.bad_dimensions |= set(dims[np.unique(dim[bad])].tolist()) if len(dims) else set()
        good &= unique
        out.frame = cells[good][["pos", "spec", "item", "dim", "ann", "grp", "value"]]
        return out

    def _cell_problems(self, cells: pd.DataFrame, mask: np.ndarray,
                       messages: np.ndarray | Callable[[np.ndarray], list[str]]) -> None:
        """One problem per cell of ``mask``: ``messages`` holds a text per cell of ``cells``, or is a function of the
        (shortened) mask giving one per masked cell, called for the first Problems.KEEP cells only."""
        if not mask.any():
            return
        pos = cells["pos"].to_numpy()
        mask = self.problems.first(mask, pos * 10_000 + cells["spec"].to_numpy())
        sub = cells[mask]
        msgs = list(messages[mask]) if isinstance(messages, np.ndarray) else list(messages(mask))
        for pos, spec, column, msg in zip(sub["pos"].tolist(), sub["spec"].tolist(), sub["column"].tolist(), msgs):
            self.problems.add(int(self.rows[pos]), column, msg, phase=PHASE["rating"] + spec / 10_000)

    def _scale_check(self, cells: pd.DataFrame, good: np.ndarray, dims: np.ndarray) -> np.ndarray:
        if not self.scales or not len(dims):
            return np.ones(len(cells), bool)
        bounds = np.array([self.scales.get(d, (np.nan, np.nan)) for d in dims], dtype=float)
        code = cells["dim"].to_numpy()
        lo, hi = bounds[code, 0], bounds[code, 1]
        v = cells["value"].to_numpy()
        with np.errstate(invalid="ignore"):
            outside = good & ~np.isnan(lo) & ((v < lo) | (v > hi))
        self._cell_problems(cells, outside, lambda k: [
            f"rating {fmt(x)} is outside the declared scale {fmt(a)}-{fmt(b)} for {d!r}"
            for x, a, b, d in zip(v[k], lo[k], hi[k], dims[code[k]])])
        return ~outside

    def _duplicates(self, cells: pd.DataFrame, good: np.ndarray, dims: np.ndarray) -> np.ndarray:
        """The second and later ratings of one (item, dimension[, annotator]) in reading order are problems."""
        idx = np.flatnonzero(good)
        order = idx[np.lexsort((cells["spec"].to_numpy()[idx], cells["pos"].to_numpy()[idx]))]
        n_dims, n_ann = max(len(dims), 1), len(self.ann_names) + 1
        key = cells["item"].to_numpy()[order].astype(np.int64) * n_dims + cells["dim"].to_numpy()[order]
        if self.has_annotators:
            key = key * n_ann + (cells["ann"].to_numpy()[order] + 1)
        u, first, inv = np.unique(key, return_index=True, return_inverse=True)
        dup = np.ones(len(order), bool)
        dup[first] = False
        if not dup.any():
            return np.ones(len(cells), bool)
        first_pos = np.zeros(len(cells), np.int64)
        first_pos[order] = cells["pos"].to_numpy()[order[first[inv]]]  # per cell: where its key was first rated
        mask = np.zeros(len(cells), bool)
        mask[order[dup]] = True
        item_names = np.asarray(self.item_names, dtype=object)
        ann_names = np.asarray(self.ann_names + [""], dtype=object)

        def messages(k: np.ndarray) -> list[str]:
            return [f"duplicate rating: item {i!r}, dimension {dm!r}"
                    + (f", annotator {a!r}" if self.has_annotators else "")
                    + f" was already rated on {self.unit} {int(self.rows[p])}"
                    for i, dm, a, p in zip(item_names[cells["item"].to_numpy()[k]], dims[cells["dim"].to_numpy()[k]],
                                           ann_names[cells["ann"].to_numpy()[k]], first_pos[k])]

        self._cell_problems(cells, mask, messages)
        return ~mask

    # ------------------------------------------------------------------------------------------------ dimensions
    def dimensions(self, ratings: Ratings, notes: list[str]) -> list[Dimension]:
        m = self.mapping
        order = ratings.dimension_order
        if m.shape == "long" and self.n:
            found = ", ".join(map(repr, order)) or "none"
            for dim in self.scales:
                if dim.strip() and dim not in order and dim not in m.unrated:
                    self.problems.add("-", "-", f"a scale is declared for {dim!r}, but no row rates that dimension "
                                                f"(dimensions found: {found})", block=Problems.AFTER)
        values = ratings.frame.groupby("dim", sort=True)["value"].agg(["min", "max", "count"])
        out: list[Dimension] = []
        for code, dim in enumerate(order):
            kind = m.kind_of(dim)
            kind = kind if kind in LABEL_KINDS else "interval"
            column = m.dimensions.get(dim) if m.shape == "wide" else m.value
            column = column if isinstance(column, str) else "-"
            if dim in self.labelled:
                out.extend(self._labelled_dimension(dim, column))
            elif dim in m.unrated and code not in values.index:
                out.extend(self._unrated_dimension(dim, kind))
            elif dim in self.scales:
                lo, hi = self.scales[dim]
                out.append(Dimension(dim, lo, hi, f"scale {fmt(lo)}-{fmt(hi)} (declared)", kind))
            elif code in values.index and values.loc[code, "min"] < values.loc[code, "max"]:
                lo, hi = float(values.loc[code, "min"]), float(values.loc[code, "max"])
                notes.append(f"scale of {dim!r} inferred from the data as {fmt(lo)}-{fmt(hi)} (the lowest and highest "
                             "rating given); declare it if the scale is wider")
                out.append(Dimension(dim, lo, hi, f"scale {fmt(lo)}-{fmt(hi)} (inferred from the data)", kind))
            elif code in values.index and dim not in ratings.bad_dimensions:
                self.problems.add("-", column, f"every rating of {dim!r} is {fmt(values.loc[code, 'min'])} "
                                               f"({int(values.loc[code, 'count'])} ratings), so its scale cannot be "
                                               "inferred from them; declare the scale (e.g. 1-5)", block=Problems.AFTER)
            elif code not in values.index and dim not in ratings.bad_dimensions and self.n \
                    and not self.problems.any_whole_file():
                self.problems.add("-", column, f"dimension {dim!r} has no ratings at all, so its scale cannot be "
                                               "inferred; declare it", block=Problems.AFTER)
        return out


    def _labelled_dimension(self, dim: str, column: str) -> list[Dimension]:
        d = self.labelled[dim]
        scale = self.declared_scales.get(dim)
        if scale is not None and scale != d.scale:
            self.problems.add("-", column, f"{dim!r} is rated in words, stored as the codes of its labels "
                                           f"({', '.join(f'{n} = {i}' for i, n in enumerate(d.labels))}); its declared "
                                           f"scale {fmt(scale[0])}-{fmt(scale[1])} does not apply: leave it out",
                              block=Problems.AFTER)
            return []
        return [d]

    def _unrated_dimension(self, dim: str, kind: str) -> list[Dimension]:
        """A dimension declared without ratings (texts to label): from its labels, else its declared scale."""
        labels = self.mapping.labels.get(dim)
        try:
            if labels and kind in CATEGORICAL_KINDS:
                return [label_dimension(dim, kind, labels, f"labels {', '.join(labels)} (declared; no ratings yet)")]
            if dim in self.scales:
                lo, hi = self.scales[dim]
                return [Dimension(dim, lo, hi, f"scale {fmt(lo)}-{fmt(hi)} (declared; no ratings yet)", kind)]
        except ValueError as e:  # e.g. a binary kind over a scale of equal ends: the model says why
            self.problems.add("-", "-", str(e), block=Problems.AFTER)
        return []  # what is missing was reported by check_mapping


# ---------------------------------------------------------------------------------------------------- building
# (only a table without problems is built: every row has its item, document and system)


def _first_values(codes: np.ndarray, n_codes: int, values: pd.Series) -> pd.Series:
    """Per code, the first non-missing value (missing where the code has none), in the values' own dtype."""
    u, first = first_index(codes, values.notna().to_numpy() & (codes >= 0))
    pos = np.full(n_codes, -1, np.int64)
    pos[u] = first
    taken = values.iloc[np.where(pos >= 0, pos, 0)].reset_index(drop=True) if len(values) else values
    return taken.where(pos >= 0) if (pos < 0).any() else taken


def _column(series: pd.Series, positions: np.ndarray) -> pd.Series:
    return series.iloc[positions].reset_index(drop=True)


def items_frame(check: TableCheck) -> pd.DataFrame:
    u, first = first_index(check.item_code, check.item_code >= 0)
    items = pd.DataFrame({"item_id": _column(check.item, first), "doc_id": _column(check.doc, first),
                          "system_id": _column(check.system, first), "output": _column(check.output, first)})
    for a, s in check.attributes.items():
        items[a] = _first_values(check.item_code, len(u), s).astype(object).to_numpy()
    return items[ITEM_COLUMNS + list(check.attributes)]


def documents_frame(check: TableCheck) -> pd.DataFrame:
    u, first = first_index(check.doc_code, check.doc_code >= 0)
    docs = pd.DataFrame({"doc_id": _column(check.doc, first)})
    for name, values in (("source", check.source), ("context", check.context)):
        docs[name] = "" if values is None else _first_values(check.doc_code, len(u), values).fillna("")
    refs = None if check.refs is None else _first_values(check.doc_code, len(u), check.refs)
    docs["references"] = [[] for _ in range(len(docs))] if refs is None else [
        list(v) if isinstance(v, tuple) else [] for v in refs]
    return docs[DOCUMENT_COLUMNS]


def human_scores_frame(check: TableCheck, ratings: Ratings, notes: list[str]) -> pd.DataFrame:
    """Per item and dimension: the mean of the expert group's ratings when there are any, else of everyone's.
    The values of a cell are summed in sorted order, so the same ratings give bit-identical scores whatever the
    table's shape or row order. Rows come item by item (first appearance), dimension by dimension."""
    r = ratings.frame
    preferred_group = np.array([g.strip().lower() == PREFERRED_GROUP for g in check.grp_names] or [False])
    pref = preferred_group[r["grp"].to_numpy()]
    n_dims = max(len(ratings.dimension_order), 1)
    key = r["item"].to_numpy().astype(np.int64) * n_dims + r["dim"].to_numpy()
    u, inv = np.unique(key, return_inverse=True)
    has_pref = np.bincount(inv, weights=pref, minlength=len(u)) > 0
    use = pref | ~has_pref[inv]
    v, k = r["value"].to_numpy()[use], inv[use]
    order = np.lexsort((v, k))
    v, k = v[order], k[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    sums = np.add.reduceat(v, starts) if len(v) else np.array([])
    counts = np.diff(np.r_[starts, len(v)])
    item_ids = pd.Series(check.item_names).take(u // n_dims).reset_index(drop=True)
    scores = pd.DataFrame({"item_id": item_ids.to_numpy(),
                           "dimension": np.asarray(ratings.dimension_order, dtype=object)[u % n_dims]
                           if len(u) else np.array([], dtype=object),
                           "score": (sums / counts).astype("float64")})
    if check.has_annotators:
        any_preferred = bool(pref.any())
        if any_preferred:
            fallback = int((~has_pref).sum())
            notes.append(f"human scores are the mean of the {PREFERRED_GROUP!r} group's ratings"
                         + (f" ({fallback} item-dimension cells without expert ratings use all annotators)"
                            if fallback else ""))
        else:
            notes.append("human scores are the mean over all annotators' ratings")
    return scores[HUMAN_SCORE_COLUMNS]


def annotations_frame(check: TableCheck, ratings: Ratings) -> pd.DataFrame:
    if not check.has_annotators:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in ANNOTATION_COLUMNS})
    r = ratings.frame.sort_values(["pos", "spec"], kind="stable")
    out = pd.DataFrame({
        "item_id": pd.Series(check.item_names).take(r["item"].to_numpy()).to_numpy(),
        "dimension": np.asarray(ratings.dimension_order, dtype=object)[r["dim"].to_numpy()],
        "annotator": np.asarray(check.ann_names + [""], dtype=object)[r["ann"].to_numpy()],
        "group": np.asarray(check.grp_names, dtype=object)[r["grp"].to_numpy()],
        "value": r["value"].to_numpy(dtype="float64")})
    return out[ANNOTATION_COLUMNS]
