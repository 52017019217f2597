"""A checked table -> :class:`evalcore.model.Dataset`, column by column (no Python loop over rows).

:class:`TableCheck` runs the checks in named steps over whole columns: identifiers, texts, the same item and document
repeated consistently, annotators, every rating cell, duplicates. Each step adds :class:`Problem` s with the row
(as a person counts it) and column; they are sorted back into reading order at the end. Only a table without a
single problem is built into a Dataset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalcore.importers.cells import blank_mask, by_unique, fmt, id_column, rating_column, references, text_column
from evalcore.importers.mapping import PREFERRED_GROUP, ColumnMapping
from evalcore.importers.problems import Problems
from evalcore.model import (
    ANNOTATION_COLUMNS,
    DOCUMENT_COLUMNS,
    HUMAN_SCORE_COLUMNS,
    ITEM_COLUMNS,
    LABEL_KINDS,
    Dimension,
)

# the order of the checks within one row, as problems are listed
PHASE = {"doc_id": 0, "system_id": 1, "item_id": 2, "output": 3, "item": 4, "source": 5.0, "references": 5.1,
         "context": 5.2, "annotator": 6, "dimension": 7, "rating": 8}


def valid_scale(scale: Any) -> tuple[float, float] | None:
    try:
        lo, hi = float(scale[0]), float(scale[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) and lo < hi and len(scale) == 2 else None


def check_mapping(mapping: ColumnMapping, columns: list[str], problems: Problems) -> None:
    def whole(column: str, message: str) -> None:
        problems.add("-", column, message, block=Problems.READ)

    for role, what in (("doc_id", "the document (source text) each output was generated from"),
                       ("system_id", "the system that produced each output"),
                       ("output", "the rated text")):
        if getattr(mapping, role) is None:
            whole("-", f"no column is mapped to {role} ({what})")
    shape = mapping.shape
    if shape == "unknown":
        if mapping.dimensions:
            whole("-", "both dimension columns (wide) and a dimension/value column pair (long) are mapped; "
                       "choose one shape")
        else:
            whole("-", "no ratings are mapped: map dimension columns (wide) or a dimension and a value column (long)")
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
    for dim, scale in mapping.scales.items():
        try:
            lo, hi = float(scale[0]), float(scale[1])
        except (TypeError, ValueError, IndexError):
            whole("-", f"scale for {dim!r} must be (min, max) numbers, got {scale!r}")
            continue
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            whole("-", f"scale for {dim!r} must have min < max, got ({fmt(lo)}, {fmt(hi)})")
        if shape == "wide" and dim not in mapping.dimensions:
            whole("-", f"a scale is declared for {dim!r}, which is not a mapped dimension "
                       f"({', '.join(map(repr, mapping.dimensions)) or 'none'})")
    for dim, kind in mapping.kinds.items():
        if kind not in LABEL_KINDS:
            whole("-", f"kind of {dim!r} must be one of {', '.join(LABEL_KINDS)}, not {kind!r}")
        elif shape == "wide" and dim not in mapping.dimensions:
            whole("-", f"a kind is declared for {dim!r}, which is not a mapped dimension "
                       f"({', '.join(map(repr, mapping.dimensions)) or 'none'})")
    present = set(columns)
    seen: dict[str, str] = {}
    for role, col in mapping.column_fields():
        if col not in present:
            shown = ", ".join(map(repr, columns[:30])) + (" ..." if len(columns) > 30 else "")
            whole(col, f"column {col!r} (mapped as {role}) is not in the file; its columns are: {shown}")
        elif role.startswith("judge") and col in seen:
            whole(col, f"column {col!r} is mapped as {seen[col]} and as {role}")
        seen.setdefault(col, role)


@dataclass
class Ratings:
    """Every rating cell that passed its checks: one row per (item, dimension, annotator)."""

    frame: pd.DataFrame  # pos, spec, item, dimension, annotator, group, value
    dimension_order: list[str]
    bad_dimensions: set[str] = field(default_factory=set)
    missing: int = 0


class TableCheck:
    """The checks and the build, step by step, over one read table."""

    def __init__(self, frame: pd.DataFrame, mapping: ColumnMapping, problems: Problems) -> None:
        self.frame, self.mapping, self.problems = frame, mapping, problems
        self.unit = problems.unit
        self.rows = frame.index.to_numpy()
        self.present = {str(c) for c in frame.columns}
        self.has_annotators = mapping.annotator is not None or any(
            isinstance(s, dict) for s in mapping.dimensions.values())
        self.scales = {d: sc for d, sc in ((d, valid_scale(s)) for d, s in mapping.scales.items()) if sc is not None}

    def col(self, c: str | None) -> str | None:
        return c if c is not None and c in self.present else None

    def report_rows(self, mask: np.ndarray, column: str, message: str | list[str], phase: float) -> None:
        rows = self.rows[mask]
        messages = [message] * len(rows) if isinstance(message, str) else message
        for r, m in zip(rows.tolist(), messages):
            self.problems.add(r, column, m, phase=phase)

    # ------------------------------------------------------------------------------------------------ identities
    def identities(self) -> None:
        m, f = self.mapping, self.frame
        n = len(f)
        none = pd.Series([pd.NA] * n, index=f.index, dtype="str")
        self.doc = id_column(f[m.doc_id]) if self.col(m.doc_id) else none
        self.system = id_column(f[m.system_id]) if self.col(m.system_id) else none
        for c, s, what in ((self.col(m.doc_id), self.doc, "doc_id"), (self.col(m.system_id), self.system, "system_id")):
            if c:
                self.report_rows(s.isna().to_numpy(), c, f"missing {what} (empty cell)", PHASE[what])
        if self.col(m.item_id):
            self.item = id_column(f[m.item_id])
            self.report_rows(self.item.isna().to_numpy(), m.item_id, "missing item_id (empty cell)", PHASE["item_id"])
        else:
            self.item = self.doc + "/" + self.system
        c_out = self.col(m.output)
        self.output = text_column(f[c_out]) if c_out else none
        if c_out:
            self.report_rows(blank_mask(f[c_out]), c_out, "empty output text", PHASE["output"])
        self.attributes = {c: f[c].where(~blank_mask(f[c])) for c in m.attributes if c in self.present}
        self.valid_item = (self.item.notna() & self.doc.notna() & self.system.notna()).to_numpy()

    def _conflicts(self, keys: pd.Series, values: pd.Series, ok: np.ndarray, *, first_of_key: bool
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Rows whose value differs from the first value given for their key: (mask, the row to compare with)."""
        sel = ok & values.notna().to_numpy() & keys.notna().to_numpy()
        if not sel.any():
            return np.zeros(len(keys), bool), np.zeros(len(keys), np.int64)
        k = keys[sel].to_numpy()
        v = values[sel].reset_index(drop=True)
        first_v = v.groupby(k, sort=False).transform("first")
        differs = (v != first_v).to_numpy()
        rows_src = self.rows[(ok & keys.notna().to_numpy()) if first_of_key else sel]
        key_src = keys[(ok & keys.notna().to_numpy()) if first_of_key else sel].to_numpy()
        first_row = pd.Series(rows_src).groupby(key_src, sort=False).first()
        mask = np.zeros(len(keys), bool)
        mask[np.flatnonzero(sel)[differs]] = True
        against = np.zeros(len(keys), np.int64)
        against[mask] = first_row.reindex(keys[mask].to_numpy()).to_numpy()
        return mask, against

    def item_consistency(self) -> None:
        m = self.mapping
        fields = [("output", self.col(m.output), self.output)]
        if self.col(m.item_id):
            fields = [("doc_id", self.col(m.doc_id), self.doc), ("system_id", self.col(m.system_id), self.system)] \
                + fields
        fields += [(f"attribute {a!r}", a, s) for a, s in self.attributes.items()]
        for i, (what, column, values) in enumerate(fields):
            if not column:
                continue
            mask, against = self._conflicts(self.item, values, self.valid_item, first_of_key=True)
            items = self.item[mask].tolist()
            self.report_rows(mask, column, [f"item {it!r} has a different {what} here than on {self.unit} {r}"
                                            for it, r in zip(items, against[mask].tolist())], PHASE["item"] + i / 100)

    # ------------------------------------------------------------------------------------------------ documents
    def documents(self) -> None:
        m, f = self.mapping, self.frame
        ok = self.doc.notna().to_numpy()
        self.source = self._doc_text(self.col(m.source), "source text", "source", ok)
        self.context = self._doc_text(self.col(m.context), "context", "context", ok)
        refs_cols = [c for c in m.references if c in self.present]
        self.refs = None
        if refs_cols:
            parts = [by_unique(f[c], references) for c in refs_cols]
            refs = parts[0] if len(parts) == 1 else pd.Series(
                [sum(t, ()) for t in zip(*parts)], index=f.index, dtype=object)
            refs = refs.where(refs.map(len) > 0)
            mask, against = self._conflicts(self.doc, refs, ok, first_of_key=False)
            docs = self.doc[mask].tolist()
            self.report_rows(mask, refs_cols[0], [f"document {d!r} has different references here than on "
                                                  f"{self.unit} {r}" for d, r in zip(docs, against[mask].tolist())],
                             PHASE["references"])
            self.refs = refs

    def _doc_text(self, column: str | None, what: str, phase: str, ok: np.ndarray) -> pd.Series | None:
        if not column:
            return None
        values = text_column(self.frame[column])
        values = values.where(values != "")
        mask, against = self._conflicts(self.doc, values, ok, first_of_key=False)
        docs = self.doc[mask].tolist()
        self.report_rows(mask, column, [f"document {d!r} has a different {what} here than on {self.unit} {r}"
                                        for d, r in zip(docs, against[mask].tolist())], PHASE[phase])
        return values

    # ------------------------------------------------------------------------------------------------ ratings
    def annotators(self) -> None:
        m, f = self.mapping, self.frame
        n = len(f)
        self.annotator = pd.Series([pd.NA] * n, index=f.index, dtype="str")
        self.group = pd.Series([m.default_group] * n, index=f.index, dtype="str")
        c_ann = self.col(m.annotator)
        if c_ann:
            self.annotator = id_column(f[c_ann])
            self.report_rows(self.annotator.isna().to_numpy(), c_ann, "missing annotator (empty cell)",
                             PHASE["annotator"])
            c_grp = self.col(m.group)
            if c_grp:
                self.group = id_column(f[c_grp]).fillna(m.default_group)

    def _cells(self) -> tuple[list[pd.DataFrame], list[str]]:
        """One frame per rating column: pos, spec, dimension, annotator, group, value, blank, why, column."""
        m, f = self.mapping, self.frame
        n = len(f)
        pos = np.arange(n)
        parts: list[pd.DataFrame] = []
        order: list[str] = []
        if m.shape == "wide":
            specs = [(dim, ann, c) for dim, spec in m.dimensions.items()
                     for ann, c in (spec.items() if isinstance(spec, dict) else [(None, spec)])]
            order = list(m.dimensions)
            for i, (dim, ann, c) in enumerate(specs):
                if c not in self.present:
                    continue
                values, blank, why = rating_column(f[c])
                fixed = ann is not None
                parts.append(pd.DataFrame({
                    "pos": pos, "spec": i, "dimension": dim, "column": c, "value": values, "blank": blank,
                    "why": why.to_numpy(),
                    "annotator": np.full(n, str(ann), dtype=object) if fixed else self.annotator.to_numpy(),
                    "group": np.full(n, m.default_group, dtype=object) if fixed else self.group.to_numpy()}))
        elif m.shape == "long" and self.col(m.dimension) and self.col(m.value):
            dims = id_column(f[m.dimension])
            missing = dims.isna().to_numpy()
            self.report_rows(missing, m.dimension, "missing dimension name (empty cell)", PHASE["dimension"])
            order = list(pd.unique(dims[~missing]))
            values, blank, why = rating_column(f[m.value])
            keep = ~missing
            parts.append(pd.DataFrame({
                "pos": pos[keep], "spec": 0, "dimension": dims.to_numpy()[keep], "column": m.value,
                "value": values[keep], "blank": blank[keep], "why": why.to_numpy()[keep],
                "annotator": self.annotator.to_numpy()[keep], "group": self.group.to_numpy()[keep]}))
        return parts, order

    def ratings(self) -> Ratings:
        parts, order = self._cells()
        if not parts:
            return Ratings(pd.DataFrame({c: pd.Series(dtype=t) for c, t in (
                ("pos", "int64"), ("spec", "int64"), ("item", object), ("dimension", object), ("annotator", object),
                ("group", object), ("value", "float64"))}), order)
        cells = pd.concat(parts, ignore_index=True)
        out = Ratings(cells, order)
        bad_why = cells["why"].notna().to_numpy()
        self._cell_problems(cells, bad_why, cells["why"].to_numpy())
        out.bad_dimensions |= set(cells.loc[bad_why, "dimension"])
        blank = cells["blank"].to_numpy(dtype=bool) & ~bad_why
        if self.mapping.allow_missing_ratings:
            out.missing = int(blank.sum())
        else:
            self._cell_problems(cells, blank, [
                f"empty rating for {d!r} (set allow_missing_ratings to treat a blank cell as not rated)"
                for d in cells.loc[blank, "dimension"]])
            out.bad_dimensions |= set(cells.loc[blank, "dimension"])
        good = ~bad_why & ~blank
        in_scale = self._scale_check(cells, good)
        out.bad_dimensions |= set(cells.loc[good & ~in_scale, "dimension"])
        good &= in_scale
        item = self.item.to_numpy()[cells["pos"].to_numpy()]
        known = pd.notna(item) & self.valid_item[cells["pos"].to_numpy()]
        if self.mapping.annotator is not None:
            known &= pd.notna(cells["annotator"].to_numpy())
        out.bad_dimensions |= set(cells.loc[good & ~known, "dimension"])
        good &= known
        cells = cells.assign(item=item)
        unique = self._duplicates(cells, good)
        out.bad_dimensions |= set(cells.loc[good & ~unique, "dimension"])
        good &= unique
        out.frame = cells[good][["pos", "spec", "item", "dimension", "annotator", "group", "value"]]
        return out

    def _cell_problems(self, cells: pd.DataFrame, mask: np.ndarray, messages: Any) -> None:
        if not mask.any():
            return
        sub = cells[mask]
        msgs = list(messages[mask]) if isinstance(messages, np.ndarray) else list(messages)
        for pos, spec, column, msg in zip(sub["pos"].tolist(), sub["spec"].tolist(), sub["column"].tolist(), msgs):
            self.problems.add(int(self.rows[pos]), column, msg, phase=PHASE["rating"] + spec / 10_000)

    def _scale_check(self, cells: pd.DataFrame, good: np.ndarray) -> np.ndarray:
        if not self.scales:
            return np.ones(len(cells), bool)
        lo = cells["dimension"].map({d: s[0] for d, s in self.scales.items()}).to_numpy(dtype=float)
        hi = cells["dimension"].map({d: s[1] for d, s in self.scales.items()}).to_numpy(dtype=float)
        v = cells["value"].to_numpy()
        outside = good & ~np.isnan(lo) & ((v < lo) | (v > hi))
        self._cell_problems(cells, outside, [
            f"rating {fmt(x)} is outside the declared scale {fmt(a)}-{fmt(b)} for {d!r}"
            for x, a, b, d in zip(v[outside], lo[outside], hi[outside], cells.loc[outside, "dimension"])])
        return ~outside

    def _duplicates(self, cells: pd.DataFrame, good: np.ndarray) -> np.ndarray:
        keys = ["item", "dimension"] + (["annotator"] if self.has_annotators else [])
        sub = cells[good].sort_values(["pos", "spec"], kind="stable")
        dup = sub.duplicated(keys, keep="first").to_numpy()
        if not dup.any():
            return np.ones(len(cells), bool)
        first_pos = sub.groupby(keys, sort=False)["pos"].transform("first").to_numpy()
        d = sub[dup]
        ann = d["annotator"].tolist() if self.has_annotators else [None] * len(d)
        msgs = [f"duplicate rating: item {i!r}, dimension {dim!r}"
                + (f", annotator {a!r}" if self.has_annotators else "")
                + f" was already rated on {self.unit} {int(self.rows[p])}"
                for i, dim, a, p in zip(d["item"], d["dimension"], ann, first_pos[dup])]
        mask = np.zeros(len(cells), bool)
        mask[d.index.to_numpy()] = True
        ordered = pd.Series(msgs, index=d.index).reindex(cells.index[mask]).tolist()
        self._cell_problems(cells, mask, ordered)
        return ~mask

    # ------------------------------------------------------------------------------------------------ dimensions
    def dimensions(self, ratings: Ratings, notes: list[str]) -> list[Dimension]:
        m = self.mapping
        if m.shape == "long" and len(self.frame):
            found = ", ".join(map(repr, ratings.dimension_order)) or "none"
            for dim in self.scales:
                if dim.strip() and dim not in ratings.dimension_order:
                    self.problems.add("-", "-", f"a scale is declared for {dim!r}, but no row rates that dimension "
                                                f"(dimensions found: {found})", block=Problems.AFTER)
        values = ratings.frame.groupby("dimension", sort=False)["value"].agg(["min", "max", "count"])
        out: list[Dimension] = []
        for dim in ratings.dimension_order:
            kind = m.kinds.get(dim, "interval")
            kind = kind if kind in LABEL_KINDS else "interval"
            if dim in self.scales:
                lo, hi = self.scales[dim]
                out.append(Dimension(dim, lo, hi, f"scale {fmt(lo)}-{fmt(hi)} (declared)", kind))
            elif dim in values.index and values.loc[dim, "min"] < values.loc[dim, "max"]:
                lo, hi = float(values.loc[dim, "min"]), float(values.loc[dim, "max"])
                notes.append(f"scale of {dim!r} inferred from the data as {fmt(lo)}-{fmt(hi)} (the lowest and highest "
                             "rating given); declare it if the scale is wider")
                out.append(Dimension(dim, lo, hi, f"scale {fmt(lo)}-{fmt(hi)} (inferred from the data)", kind))
            elif dim in values.index and dim not in ratings.bad_dimensions:
                spec = m.dimensions.get(dim)
                self.problems.add("-", spec if isinstance(spec, str) else (m.value or "-"),
                                  f"every rating of {dim!r} is {fmt(values.loc[dim, 'min'])} "
                                  f"({int(values.loc[dim, 'count'])} ratings), so its scale cannot be inferred from "
                                  f"them; declare the scale (e.g. 1-5)", block=Problems.AFTER)
            elif dim not in ratings.bad_dimensions and len(self.frame) and not self.problems.any_whole_file():
                spec = m.dimensions.get(dim)
                self.problems.add("-", spec if isinstance(spec, str) else "-",
                                  f"dimension {dim!r} has no ratings at all, so its scale cannot be inferred; "
                                  "declare it", block=Problems.AFTER)
        return out


# ---------------------------------------------------------------------------------------------------- building


def items_frame(check: TableCheck) -> pd.DataFrame:
    ok = check.valid_item
    base = pd.DataFrame({"item_id": check.item[ok].to_numpy(), "doc_id": check.doc[ok].to_numpy(),
                         "system_id": check.system[ok].to_numpy(), "output": check.output[ok].to_numpy(),
                         **{a: s[ok].to_numpy() for a, s in check.attributes.items()}})
    items = base.groupby("item_id", sort=False).first().reset_index()
    items = items.astype(object).where(items.notna(), None)
    return items[ITEM_COLUMNS + list(check.attributes)].reset_index(drop=True)


def documents_frame(check: TableCheck) -> pd.DataFrame:
    ok = check.doc.notna().to_numpy()
    data = {"doc_id": check.doc[ok].to_numpy()}
    for name, values in (("source", check.source), ("references", check.refs), ("context", check.context)):
        data[name] = values[ok].to_numpy() if values is not None else np.full(ok.sum(), None, dtype=object)
    docs = pd.DataFrame(data).groupby("doc_id", sort=False).first().reset_index()
    docs = docs.astype(object)
    docs["source"] = [s if isinstance(s, str) else "" for s in docs["source"]]
    docs["context"] = [s if isinstance(s, str) else "" for s in docs["context"]]
    docs["references"] = [list(r) if isinstance(r, tuple) else [] for r in docs["references"]]
    return docs[DOCUMENT_COLUMNS]


def human_scores_frame(ratings: Ratings, items: pd.DataFrame, has_annotators: bool,
                       notes: list[str]) -> pd.DataFrame:
    """Per item and dimension: the mean of the expert group's ratings when there are any, else of everyone's.
    The values of a cell are summed in sorted order, so the same ratings give bit-identical scores whatever the
    table's shape or row order."""
    r = ratings.frame
    preferred = r["group"].astype("str").str.strip().str.lower().to_numpy() == PREFERRED_GROUP
    any_preferred = bool(preferred.any())
    item_pos = pd.Index(items["item_id"]).get_indexer(r["item"])
    dim_pos = pd.Index(ratings.dimension_order).get_indexer(r["dimension"])
    cell = pd.DataFrame({"i": item_pos, "d": dim_pos, "pref": preferred, "value": r["value"].to_numpy()})
    has_pref = cell.groupby(["i", "d"])["pref"].transform("any").to_numpy()
    use = cell[cell["pref"].to_numpy() | ~has_pref]
    use = use.iloc[np.lexsort((use["value"].to_numpy(), use["d"].to_numpy(), use["i"].to_numpy()))]
    agg = use.groupby(["i", "d"], sort=True)["value"].agg(["sum", "count"])
    scores = pd.DataFrame({"item_id": items["item_id"].to_numpy()[agg.index.get_level_values(0)],
                           "dimension": np.asarray(ratings.dimension_order, dtype=object)[
                               agg.index.get_level_values(1)],
                           "score": (agg["sum"] / agg["count"]).to_numpy(dtype="float64")})
    if has_annotators:
        fallback = int((~cell.groupby(["i", "d"])["pref"].any()).sum()) if any_preferred else 0
        if any_preferred:
            notes.append(f"human scores are the mean of the {PREFERRED_GROUP!r} group's ratings"
                         + (f" ({fallback} item-dimension cells without expert ratings use all annotators)"
                            if fallback else ""))
        else:
            notes.append("human scores are the mean over all annotators' ratings")
    return scores[HUMAN_SCORE_COLUMNS].reset_index(drop=True)


def annotations_frame(ratings: Ratings, has_annotators: bool) -> pd.DataFrame:
    if not has_annotators:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in ANNOTATION_COLUMNS})
    r = ratings.frame.sort_values(["pos", "spec"], kind="stable")
    out = pd.DataFrame({"item_id": r["item"].to_numpy(dtype=object), "dimension": r["dimension"].to_numpy(dtype=object),
                        "annotator": r["annotator"].to_numpy(dtype=object),
                        "group": r["group"].to_numpy(dtype=object), "value": r["value"].to_numpy(dtype="float64")})
    return out[ANNOTATION_COLUMNS]
