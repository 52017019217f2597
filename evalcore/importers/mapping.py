"""Which column holds what: :class:`ColumnMapping`, the guess that prefills it, and what the guess shows.

Every column gets a role: an identifier (item, document, system), a text (output, source, reference, context), an
annotator or group column, a human rating (per dimension, optionally per annotator), a judge score (which becomes a
run: it needs no scale, any real number is valid), a long table's dimension or value column, an item attribute, or
ignored. :func:`suggest_mapping` guesses from names and a sample of values, conservatively: a column becomes a judge
score when its name says so (``gpt4_score``, ``nll``, ``bleu``...) or when it holds negative numbers, which human
rating scales rarely do. :func:`guess_columns` shows the guess per column (role, range, distinct values) before
anything is imported, and :func:`scale_prefill` proposes each dimension's scale from its human-rating columns alone.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import numpy as np
import pandas as pd

from evalcore.importers.categories import derived_labels, looks_like_labels, only_words, word_counts
from evalcore.importers.cells import is_blank, parse_rating, rating_column
from evalcore.model import CATEGORICAL_KINDS

if TYPE_CHECKING:
    import pyarrow as pa

DEFAULT_GROUP = "annotator"
PREFERRED_GROUP = "expert"


@dataclass
class JudgeColumn:
    """A column of judge scores: it becomes a run named ``name`` (default: the column) scoring ``dimension``.
    In a long table the dimension comes from each row's dimension cell and ``dimension`` stays None."""

    column: str
    dimension: str | None = None
    name: str = ""

    @property
    def run_name(self) -> str:
        return self.name or self.column


@dataclass
class ColumnMapping:
    """Which column of the user's table holds what.

    Identity and text fields name one column each (``reference`` may name several: their references are
    concatenated). Ratings are either WIDE (``dimensions``: dimension name -> column, or dimension name ->
    {annotator name -> column}) or LONG (``dimension`` and ``value`` columns). ``annotator`` / ``group`` name columns
    of per-annotator rows; ``default_group`` is the group given to annotators without one. ``scales`` declares each
    dimension's rating scale; a dimension without one gets the min/max seen in the data (and the Dataset says so).
    ``kinds`` gives a dimension's label kind (interval by default; ordinal, binary, nominal). ``labels`` names a
    categorical dimension's categories in order (for binary: negative, positive; evalcore.importers.categories): its
    cells may then be words, imported as codes; a categorical dimension whose cells hold words gets them as labels
    without it. ``unrated`` declares dimensions that have no rating column yet (texts to label in the app): each
    needs a scale (``scales``) or a categorical kind with ``labels``. ``judges`` are judge-score columns, each imported
    as a run. ``allow_missing_ratings`` lets a blank rating cell mean "not rated".
    """

    doc_id: str | None = None
    system_id: str | None = None
    output: str | None = None
    source: str | None = None
    reference: str | list[str] | None = None
    context: str | None = None
    item_id: str | None = None
    dimensions: dict[str, str | dict[str, str]] = field(default_factory=dict)
    dimension: str | None = None
    value: str | None = None
    annotator: str | None = None
    group: str | None = None
    attributes: list[str] = field(default_factory=list)
    scales: dict[str, tuple[float, float]] = field(default_factory=dict)
    default_group: str = DEFAULT_GROUP
    allow_missing_ratings: bool = False
    kinds: dict[str, str] = field(default_factory=dict)
    judges: list[JudgeColumn] = field(default_factory=list)
    labels: dict[str, list[str]] = field(default_factory=dict)
    unrated: list[str] = field(default_factory=list)

    @property
    def shape(self) -> str:
        """"wide", "long", "texts" (no rating column, only ``unrated`` dimensions: texts to label), or "unknown" when
        neither (or both) kinds of rating column are mapped."""
        wide = bool(self.dimensions)
        long = self.dimension is not None or self.value is not None
        if wide and not long:
            return "wide"
        if long and not wide:
            return "long"
        if not wide and not long and self.unrated:
            return "texts"
        return "unknown"

    @property
    def references(self) -> list[str]:
        if self.reference is None:
            return []
        return [self.reference] if isinstance(self.reference, str) else list(self.reference)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scales"] = {k: [float(lo), float(hi)] for k, (lo, hi) in sorted(self.scales.items())}
        return d

    def to_json(self) -> str:
        """Canonical JSON (sorted keys) of what defines the human ratings: part of the dataset id, so the same upload
        and mapping give the same id. Judge columns are left out: the same human ratings are the same dataset
        whichever judge scores came with them, and their runs attach to it."""
        d = self.to_dict()
        d.pop("judges")
        d["kinds"] = {k: v for k, v in sorted(d["kinds"].items()) if v != "interval"}  # the default says nothing
        for key in ("kinds", "labels", "unrated"):
            if not d[key]:
                d.pop(key)  # ids of datasets imported before these options existed stay the same
        return json.dumps(d, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ColumnMapping:
        d = dict(d)
        d["scales"] = {k: (float(v[0]), float(v[1])) for k, v in (d.get("scales") or {}).items()}
        d["attributes"] = list(d.get("attributes") or [])
        d["dimensions"] = dict(d.get("dimensions") or {})
        d["kinds"] = dict(d.get("kinds") or {})
        d["labels"] = {k: [str(x) for x in v] for k, v in (d.get("labels") or {}).items()}
        d["unrated"] = list(d.get("unrated") or [])
        d["judges"] = [j if isinstance(j, JudgeColumn) else JudgeColumn(**j) for j in d.get("judges") or []]
        return cls(**d)

    def kind_of(self, dimension: str) -> str:
        """The dimension's label kind: declared, else binary for two declared labels, nominal for more, else
        interval."""
        if self.kinds.get(dimension):
            return self.kinds[dimension]
        labels = self.labels.get(dimension)
        return ("binary" if len(labels) == 2 else "nominal") if labels else "interval"

    def rating_columns(self) -> dict[str, list[str]]:
        """dimension -> the columns holding its human ratings (wide), or {"": [value column]} (long)."""
        if self.shape == "long":
            return {"": [self.value]} if self.value else {}
        return {dim: list(spec.values()) if isinstance(spec, dict) else [spec] for dim, spec in self.dimensions.items()}

    def column_fields(self) -> list[tuple[str, str]]:
        """(what it is mapped as, column name) for every mapped column."""
        out: list[tuple[str, str]] = []
        for name in ("item_id", "doc_id", "system_id", "output", "source", "context", "dimension", "value",
                     "annotator", "group"):
            col = getattr(self, name)
            if col is not None:
                out.append((name, col))
        out += [("reference", c) for c in self.references]
        out += [("attribute", c) for c in self.attributes]
        for dim, spec in self.dimensions.items():
            if isinstance(spec, dict):
                out += [(f"dimension {dim!r}, annotator {ann!r}", c) for ann, c in spec.items()]
            else:
                out.append((f"dimension {dim!r}", spec))
        out += [(f"judge score {j.run_name!r}", j.column) for j in self.judges]
        return out


# --------------------------------------------------------------------------------------------------------------------
# Guessing a mapping from column names


def column_key(name: object) -> str:
    """A column name compared without case, spaces or punctuation ("Judge Score" -> "judge_score")."""
    return re.sub(r"[^0-9a-z]+", "_", str(name).strip().lower()).strip("_")


# Ordered by preference: the first alias present wins.
_ALIASES: dict[str, list[str]] = {
    "item_id": ["item_id", "itemid", "item", "example_id", "sample_id", "instance_id", "uid"],
    "doc_id": ["doc_id", "docid", "document_id", "doc", "document", "id", "article_id", "source_id", "dialogue_id",
               "dialog_id", "conversation_id", "context_id", "input_id"],
    "system_id": ["system_id", "system", "model", "model_id", "model_name", "system_name", "sys", "sys_id",
                  "generator"],
    "output": ["output", "summary", "response", "system_output", "hypothesis", "hyp", "generation", "generated_text",
               "candidate", "prediction", "completion", "decoded"],
    "source": ["source", "article", "src", "document_text", "dialogue", "dialog", "source_text", "article_text",
               "input", "conversation", "dialogue_history", "history", "prompt", "instruction"],
    "reference": ["reference", "references", "ref", "refs", "reference_summary", "reference_summaries", "gold",
                  "target"],
    "context": ["context", "fact", "facts", "knowledge"],
    "attributes": ["written_by", "writer", "author_type", "system_type", "model_type", "model_family"],
    "annotator": ["annotator", "annotator_id", "rater", "rater_id", "worker", "worker_id", "annotator_name"],
    "group": ["group", "annotator_group", "annotator_type", "rater_group", "rater_type", "worker_type"],
    "dimension": ["dimension", "aspect", "criterion", "criteria", "metric", "quality_dimension"],
    "value": ["value", "score", "rating", "human_score", "human_rating"],
}

# canonical dimension name -> names and abbreviations seen in released datasets
_DIMENSION_ALIASES: dict[str, list[str]] = {
    "coherence": ["coherence", "coh", "coherent"],
    "consistency": ["consistency", "con", "cons", "consistent"],
    "fluency": ["fluency", "flu", "fluent"],
    "relevance": ["relevance", "rel", "relevant"],
    "naturalness": ["naturalness", "nat", "natural"],
    "engagingness": ["engagingness", "engaging", "eng"],
    "groundedness": ["groundedness", "grounded", "gro"],
    "understandability": ["understandability", "understandable", "und"],
    "maintains_context": ["maintains_context"],
    "interestingness": ["interestingness", "interesting"],
    "uses_knowledge": ["uses_knowledge"],
    "overall": ["overall", "overall_quality", "overall_score"],
    "informativeness": ["informativeness", "informative", "inf"],
    "faithfulness": ["faithfulness", "faithful"],
    "factuality": ["factuality", "factual", "factual_consistency", "factuality_score"],
    "grammaticality": ["grammaticality", "grammar", "grammatical"],
    "readability": ["readability"],
    "correctness": ["correctness", "correct"],
    "helpfulness": ["helpfulness", "helpful"],
    "harmlessness": ["harmlessness", "harmless"],
    "adequacy": ["adequacy"],
    "specificity": ["specificity", "specific"],
    "accuracy": ["accuracy"],
}
_DIMENSION_LOOKUP = {alias: canon for canon, aliases in _DIMENSION_ALIASES.items() for alias in aliases}


def _dimension_of(norm_name: str) -> str | None:
    """The canonical dimension a (normalised) column name denotes, allowing "_score"/"_rating"/"human_" around it."""
    candidates = [norm_name]
    for prefix in ("human_", "avg_", "mean_", "expert_"):
        if norm_name.startswith(prefix):
            candidates.append(norm_name[len(prefix):])
    for suffix in ("_score", "_rating", "_avg", "_mean"):
        candidates += [c[: -len(suffix)] for c in list(candidates) if c.endswith(suffix)]
    for c in candidates:
        if c in _DIMENSION_LOOKUP:
            return _DIMENSION_LOOKUP[c]
    return None


def _judge_dimension(norm_name: str) -> str | None:
    """The dimension a judge column scores, its judge or metric tokens set aside: ``gpt4_coherence``,
    ``coherence_gpt4``, ``geval_gpt_4_fluency_score`` (issue 18.14: ``gpt4_coherence`` was not mapped to
    ``coherence`` and the first import failed)."""
    tokens = norm_name.split("_")
    for i in range(1, len(tokens)):
        for part in ("_".join(tokens[i:]), "_".join(tokens[:-i])):
            dim = _dimension_of(part)
            if dim is not None:
                return dim
    return None


# Tags that mark a column as one annotator's rating: quality_ann1, fluency_rater_2, overall_worker3, helpful_a1
_ANNOTATOR_TAG = re.compile(r"(?P<head>[a-z][a-z0-9_]*?)_(?P<tag>(?:ann|annotator|rater|worker|expert|a|r)_?\d+)")


def _generic_annotator_column(norm_name: str) -> tuple[str, str] | None:
    """("quality", "ann1") for ``quality_ann1``: any dimension name followed by an annotator tag, so wide annotator
    columns group into one dimension whatever it is called (not only the known names _per_annotator_dimension
    reads)."""
    mt = _ANNOTATOR_TAG.fullmatch(norm_name)
    return (mt["head"], mt["tag"]) if mt else None


def _generic_annotator_groups(cols: list[str], used: set[str]) -> dict[str, tuple[str, str]]:
    """The columns that are one annotator's rating of a dimension of any name: at least two columns of plain names
    sharing the head (``quality_ann1``, ``quality_ann2``). One column, or a name that only normalises to that shape
    (``=cmd|' /C calc'!A0`` reads ``cmd_c_calc_a0``), stays a dimension of its own, named as in the file."""
    found = {c: _generic_annotator_column(column_key(c)) for c in cols
             if c not in used and re.fullmatch(r"[A-Za-z][A-Za-z0-9_ -]*", str(c))}
    heads = Counter(g[0] for g in found.values() if g is not None)
    return {c: g for c, g in found.items() if g is not None and heads[g[0]] >= 2}


def _per_annotator_dimension(norm_name: str) -> tuple[str, str] | None:
    """("coherence", "a1") for names like coherence_a1, coh_1, coherence2, coherence_expert_3."""
    # the longest leading part that names a dimension, followed by an annotator tag that ends in a number
    for cut in range(len(norm_name) - 1, 0, -1):
        head, tail = norm_name[:cut].rstrip("_"), norm_name[cut:].lstrip("_")
        if tail and re.fullmatch(r"(?:[a-z]+_?)?\d+", tail):
            dim = _dimension_of(head)
            if dim is not None:
                return dim, tail
    return None


def suggest_mapping(columns: Iterable[object], sample: pd.DataFrame | None = None) -> ColumnMapping:
    """Guess a ColumnMapping from column names (for prefilling a form; the user confirms it).

    Long shape is guessed when both a dimension-like column (dimension/aspect/criterion/metric) and a value-like
    column (value/score/rating) exist; otherwise columns named after known dimensions (coherence, coh, fluency, ...)
    become wide dimensions, names like ``coherence_a1`` / ``coh_2`` become per-annotator columns, and, given a
    ``sample`` of the table, any other unmapped column whose values are all numbers becomes a dimension too, or a
    judge score (``judges``) when its name says judge or metric (``gpt4_score``, ``nll``) or it holds negative
    numbers. Scales are not set here (see :func:`scale_prefill`).
    """
    cols = [str(c) for c in columns]
    by_norm: dict[str, str] = {}
    for c in cols:
        by_norm.setdefault(column_key(c), c)
    used: set[str] = set()
    m = _id_and_text_roles(by_norm, used)
    dim_col = next((by_norm[a] for a in _ALIASES["dimension"] if a in by_norm and by_norm[a] not in used), None)
    val_col = next((by_norm[a] for a in _ALIASES["value"] if a in by_norm and by_norm[a] not in used), None)
    if dim_col is not None and val_col is not None:
        m.dimension, m.value = dim_col, val_col
        used |= {dim_col, val_col}
        if sample is not None:  # a long table's judge columns score the dimension each row names
            for c in cols:
                if c not in used and c in sample.columns and is_judge_name(c) and _sample_numbers(sample, c):
                    m.judges.append(JudgeColumn(c))
                    used.add(c)
    else:
        m.dimensions = _wide_dimensions(cols, used, m, sample, val_col)
    if m.group is not None and m.annotator is None and not any(isinstance(s, dict) for s in m.dimensions.values()):
        m.group = None  # a group without annotators means nothing
    if m.shape == "wide":
        _judged_dimensions(m)
    return m


def _id_and_text_roles(by_norm: dict[str, str], used: set[str]) -> ColumnMapping:
    """A mapping with the id, text, annotator, group and attribute columns found by their names (``by_norm``:
    normalised name -> column); the columns taken are added to ``used``."""

    def pick(role: str) -> str | None:
        for alias in _ALIASES[role]:
            c = by_norm.get(alias)
            if c is not None and c not in used:
                used.add(c)
                return c
        return None

    m = ColumnMapping()
    # Order matters: the most specific roles claim their columns first ("document_text" is a source, "id" a doc_id).
    m.item_id = pick("item_id")
    m.doc_id = pick("doc_id")
    m.system_id = pick("system_id")
    m.output = pick("output")
    m.source = pick("source")
    m.context = pick("context")
    m.reference = pick("reference")
    m.annotator = pick("annotator")
    m.group = pick("group")
    m.attributes = [by_norm[a] for a in _ALIASES["attributes"] if a in by_norm and by_norm[a] not in used]
    used |= set(m.attributes)
    return m


def _judged_dimensions(m: ColumnMapping) -> None:
    """A wide table's judge columns without a dimension: the only one there is, else the one their name ends or
    begins with ("gpt4_quality" scores the dimension "quality" the annotator columns define)."""
    if len(m.dimensions) == 1:
        only = next(iter(m.dimensions))
        for j in m.judges:
            j.dimension = j.dimension or only
    for j in m.judges:
        if j.dimension is None:
            tokens = column_key(j.column).split("_")
            j.dimension = next((d for i in range(1, len(tokens))
                                for d in ("_".join(tokens[i:]), "_".join(tokens[:-i])) if d in m.dimensions),
                               None)


def _wide_dimensions(cols: list[str], used: set[str], m: ColumnMapping, sample: pd.DataFrame | None,
                     val_col: str | None) -> dict[str, str | dict[str, str]]:
    """Wide rating columns by name (``coh``, ``coherence_a1``), then by value: a numeric column is a human rating,
    unless its name says judge or metric, or it holds negative numbers (then it is a judge score, ``m.judges``)."""
    dims: dict[str, str | dict[str, str]] = {}
    generic = _generic_annotator_groups(cols, used)
    for c in cols:
        if c in used:
            continue
        n = column_key(c)
        dim = _dimension_of(n)
        if dim is None and is_judge_name(c):
            dim = _judge_dimension(n)
        if dim is not None and is_judge_name(c):
            m.judges.append(JudgeColumn(c, dim))  # "gpt4_coherence": a judge's coherence score
            used.add(c)
        elif dim is not None and dim not in dims:
            dims[dim] = c
            used.add(c)
        elif m.annotator is None and ((per := _per_annotator_dimension(n)) is not None
                                      or (per := generic.get(c)) is not None):
            d, ann = per
            spec = dims.get(d)
            if not isinstance(spec, dict):
                if isinstance(spec, str):
                    used.discard(spec)  # per-annotator columns carry more than a precomputed mean
                spec = {}
                dims[d] = spec
            spec[ann] = c
            used.add(c)
    if sample is not None:
        for c in cols:
            numbers = _sample_numbers(sample, c) if c not in used and c in sample.columns else None
            if numbers:
                if is_judge_name(c) or min(numbers) < 0:
                    m.judges.append(JudgeColumn(c))
                else:
                    dims[c] = c
                used.add(c)
            elif c not in used and c in sample.columns and looks_like_labels(word_counts(sample[c]), c):
                # a column of a few verdict words (pass/fail, A/B/tie): human labels, or a judge's when named so
                if is_judge_name(c):
                    m.judges.append(JudgeColumn(c))
                else:
                    dims[c] = c
                used.add(c)
    if not dims and val_col is not None:
        dims["overall"] = val_col  # a lone "score"/"rating" column is one overall judgement
        used.add(val_col)
    return dims


def _sample_numbers(sample: pd.DataFrame, column: str) -> list[float] | None:
    return _numeric_values([v for v in sample[column].tolist() if not is_blank(v)])


# --------------------------------------------------------------------------------------------------------------------
# Judge-score columns: named like a judge or a metric, or holding negative numbers

_JUDGE_TOKENS = {
    "judge", "gpt", "gpt4", "gpt35", "chatgpt", "llm", "claude", "llama", "mistral", "gemini", "qwen", "geval",
    "metric", "bleu", "rouge", "rouge1", "rouge2", "rougel", "bertscore", "bartscore", "nll", "loglik", "logprob",
    "loglikelihood", "perplexity", "ppl", "unieval", "comet", "moverscore", "chrf", "meteor", "factcc", "summac",
    "auto", "automatic", "predicted",
}


def is_judge_name(column: str) -> bool:
    n = column_key(column)
    tokens = set(n.split("_")) | {n.replace("_", "")}
    return bool(tokens & _JUDGE_TOKENS) or n.startswith(("g_eval", "log_prob", "log_lik", "bert_score", "bart_score"))


def _numeric_values(values: Sequence[object]) -> list[float] | None:
    """The numbers among non-blank cells, or None when any non-blank cell is not a number."""
    out = []
    for v in values:
        x, why = parse_rating(v)
        if why is not None:
            return None
        if x is not None:
            out.append(x)
    return out


# --------------------------------------------------------------------------------------------------------------------
# The guess, column by column, as the upload form shows it

ROLES: dict[str, str] = {
    "item_id": "item id", "doc_id": "document id", "system_id": "system", "output": "output (the rated text)",
    "source": "source text", "reference": "reference", "context": "context", "annotator": "annotator",
    "group": "annotator group", "attribute": "item attribute", "human": "human rating", "judge": "judge score",
    "dimension": "dimension name (long table)", "value": "rating value (long table)", "ignored": "ignored",
}
_SINGLE_ROLES = ("item_id", "doc_id", "system_id", "output", "source", "context", "annotator", "group", "dimension",
                 "value")


SINGLE_ROLES = _SINGLE_ROLES  # the roles one column holds (the CLI's --role gives them too)


@dataclass
class ColumnGuess:
    """One column: its role, what the role needs (dimension, annotator, run name), and what it holds."""

    column: str
    role: str = "ignored"
    dimension: str = ""  # human rating / judge score: the dimension it rates
    annotator: str = ""  # human rating: whose ratings the column holds ("" = one rating per row)
    run_name: str = ""  # judge score: the run it becomes
    numbers: int = 0  # cells holding a finite number
    blanks: int = 0
    distinct: int = 0
    lo: float | None = None
    hi: float | None = None
    example: str = ""
    kind: str = ""  # human rating / judge score of words: the guessed label kind (binary, nominal)
    labels: tuple[str, ...] = ()  # ... and its words, in code order (binary: negative, positive)

    def stats_row(self) -> dict[str, Any]:
        rng = ("words" if self.labels else "no numbers") if self.lo is None else f"{self.lo:g} to {self.hi:g}"
        return {"column": self.column, "guessed role": ROLES[self.role], "dimension": self.dimension,
                "kind": self.kind, "labels": ", ".join(self.labels), "numbers": self.numbers, "blank": self.blanks,
                "distinct values": self.distinct, "range": rng, "example": self.example}


# a text cell longer than this holds no rating: the guess does not try to read it as a number (nor copy it)
_NUMBER_CHARS = 64


def _text_stats(g: ColumnGuess, arr: pa.Array) -> None:
    """Counts and range of an Arrow text column without copying its long cells: a 3,000,000-row column of
    200-character texts is measured in place (blank flags, distinct count by hash), and only short cells are tried
    as numbers."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = pc.utf8_length(arr)
    blank = pc.fill_null(pc.or_kleene(pc.equal(lengths, 0), pc.utf8_is_space(arr)), True)
    g.blanks = int(pc.sum(blank).as_py() or 0)
    g.distinct = int(pc.count_distinct(arr, mode="only_valid").as_py() or 0)
    short = pc.utf8_trim_whitespace(pc.filter(arr, pc.and_(pc.invert(blank), pc.less_equal(lengths, _NUMBER_CHARS))))
    counted = pc.value_counts(short)  # each distinct short cell once
    distinct, counts = counted.field("values"), counted.field("counts").to_numpy()
    g.numbers, lo, hi = 0, math.inf, -math.inf
    for start in range(0, len(distinct), 100_000):  # Python strings for 100,000 cells at a time, not for all of them
        try:
            values = pc.cast(distinct.slice(start, 100_000), pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            cells = pd.Series(distinct.slice(start, 100_000).to_numpy(zero_copy_only=False), dtype=object)
            values = pd.to_numeric(cells, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
        finite = np.isfinite(values)
        if finite.any():
            g.numbers += int(counts[start: start + 100_000][finite].sum())
            lo, hi = min(lo, float(values[finite].min())), max(hi, float(values[finite].max()))
    if g.numbers:
        g.lo, g.hi = lo, hi
    head = arr.slice(0, 50).to_pylist()
    first = next((v for v in head if not is_blank(v)), None)
    g.example = "" if first is None else str(first)[:60]


def _column_stats(g: ColumnGuess, col: pd.Series) -> None:
    """Counts and range from pandas' C routines only (no per-cell Python: the file may have a million rows)."""
    to_arrow = getattr(col.array, "__arrow_array__", None)
    if to_arrow is not None and pd.api.types.is_string_dtype(col.dtype):
        return _text_stats(g, to_arrow())
    if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
        values = col.to_numpy(dtype="float64", na_value=np.nan)
    else:
        try:
            values = pd.to_numeric(col.astype("str").str.strip() if col.dtype == object else col.str.strip(),
                                   errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
        except (TypeError, ValueError, AttributeError):
            values = np.full(len(col), np.nan)
    finite = values[np.isfinite(values)]
    g.numbers = len(finite)
    if len(finite):
        g.lo, g.hi = float(finite.min()), float(finite.max())
    try:
        if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
            g.blanks = int(col.isna().sum())  # a number is never blank text: no need to write it out
        else:
            g.blanks = int(col.isna().sum() + (col.astype("str").str.strip() == "").sum()) if col.dtype != object \
                else int(sum(is_blank(v) for v in col))
        g.distinct = int(col.nunique(dropna=True))
    except TypeError:  # unhashable cells (lists)
        g.distinct = int(col.astype("str").nunique())
    first = next((v for v in col.head(50) if not is_blank(v) if not isinstance(v, list)), None)
    g.example = "" if first is None else str(first)[:60]


def guess_columns(frame: pd.DataFrame, mapping: ColumnMapping | None = None) -> list[ColumnGuess]:
    """Every column with its role (from ``mapping``, else the conservative guess) and what it holds."""
    mapping = mapping or suggest_mapping(frame.columns, frame.head(1000))
    roles: dict[str, ColumnGuess] = {str(c): ColumnGuess(str(c)) for c in frame.columns}
    for role in _SINGLE_ROLES:
        col = getattr(mapping, role)
        if col in roles:
            roles[col].role = role
    for c in mapping.references:
        if c in roles:
            roles[c].role = "reference"
    for c in mapping.attributes:
        if c in roles:
            roles[c].role = "attribute"
    for dim, spec in mapping.dimensions.items():
        for ann, c in (spec.items() if isinstance(spec, dict) else [("", spec)]):
            if c in roles:
                roles[c].role, roles[c].dimension, roles[c].annotator = "human", dim, ann
    for j in mapping.judges:
        if j.column in roles:
            roles[j.column].role, roles[j.column].dimension, roles[j.column].run_name = \
                "judge", j.dimension or "", j.run_name
    for c, g in roles.items():
        _column_stats(g, frame[c])
        if g.role in ("human", "judge", "value"):
            _word_guess(g, frame[c], mapping)
    return list(roles.values())


def _word_guess(g: ColumnGuess, col: pd.Series, mapping: ColumnMapping) -> None:
    """A rating column of words: its kind (as declared, else binary for two words, nominal for more) and labels."""
    if g.numbers == len(col) - g.blanks or not only_words(col):
        return
    counts = word_counts(col)
    dim = g.dimension or g.column
    kind = mapping.kinds.get(dim) if mapping.kinds.get(dim) in CATEGORICAL_KINDS else None
    declared = mapping.labels.get(dim)
    if declared:
        g.kind, g.labels = kind or ("binary" if len(declared) == 2 else "nominal"), tuple(declared)
        return
    n = len({w.strip().lower() for w in counts})
    kind = kind or ("binary" if n == 2 else "nominal")
    try:
        g.kind, g.labels = kind, derived_labels(counts, kind)
    except ValueError:  # a binary dimension with three words: shown as nominal, the import will say why
        g.kind, g.labels = "nominal", derived_labels(counts, "nominal")


class MappingOptions(TypedDict, total=False):
    """ColumnMapping's fields that are not a column's role: what :func:`mapping_from_guesses` takes beside them."""

    scales: dict[str, tuple[float, float]]
    kinds: dict[str, str]
    labels: dict[str, list[str]]
    unrated: list[str]
    allow_missing_ratings: bool
    default_group: str


def mapping_from_guesses(guesses: list[ColumnGuess], **options: Unpack[MappingOptions]) -> ColumnMapping:
    """The mapping the (possibly edited) column roles describe. ``options`` are ColumnMapping's other fields
    (scales, kinds, allow_missing_ratings, default_group). A role that takes one column and is given several
    raises ValueError naming them."""
    m = ColumnMapping(**options)
    refs: list[str] = []
    for role in _SINGLE_ROLES:
        cols = [g.column for g in guesses if g.role == role]
        if len(cols) > 1:
            raise ValueError(f"{len(cols)} columns are mapped as {ROLES[role]} ({', '.join(map(repr, cols))}); "
                             "one column can hold it")
        setattr(m, role, cols[0] if cols else None)
    for g in guesses:
        if g.role == "reference":
            refs.append(g.column)
        elif g.role == "attribute":
            m.attributes.append(g.column)
        elif g.role == "human":
            dim = g.dimension.strip() or g.column
            if g.annotator.strip():
                spec = m.dimensions.setdefault(dim, {})
                if isinstance(spec, str):
                    raise ValueError(f"dimension {dim!r} has both one column of ratings ({spec!r}) and per-annotator "
                                     f"columns ({g.column!r})")
                spec[g.annotator.strip()] = g.column
            elif dim in m.dimensions:
                raise ValueError(f"columns {m.dimensions[dim]!r} and {g.column!r} both rate {dim!r}; give each its "
                                 "annotator, or another dimension")
            else:
                m.dimensions[dim] = g.column
        elif g.role == "judge":
            m.judges.append(JudgeColumn(g.column, g.dimension.strip() or None, g.run_name.strip()))
    m.reference = refs[0] if len(refs) == 1 else (refs or None)
    return m


# --------------------------------------------------------------------------------------------------------------------
# Scale and kind prefill: from the human-rating columns alone

USUAL_SCALES = ((1, 5), (0, 1), (1, 3), (1, 4), (1, 6), (1, 7), (0, 5), (0, 10), (1, 10), (0, 100), (1, 100))


def usual_scale(values: np.ndarray) -> tuple[float, float]:
    """The scale the finite values suggest. Whole numbers from 0 to 10: from 0 (when a 0 is given) or 1 up to the
    highest rating given, so HelpSteer2's 0-4 ratings read 0-4, not 0-5 (a scale the data never reach would be put
    to the judge and drawn on every chart), and a column rated 0-2 reads 0-2 (the page shows it before the import,
    to widen). Else the first usual scale they fit in (1-5, 0-1, 1-3, 1-4, 1-6, 1-7, 0-5, 0-10, 1-10, 0-100,
    1-100), else their own range widened to whole numbers; 1-5 when there are none."""
    values = values[np.isfinite(values)]
    if not len(values):
        return 1.0, 5.0
    lo, hi = float(values.min()), float(values.max())
    if lo >= 0 and hi <= 10 and bool(np.all(values == np.round(values))) and hi > min(lo, 1):
        return (0.0 if lo == 0 else 1.0), hi
    for a, b in USUAL_SCALES:
        if a <= lo and hi <= b:
            return float(a), float(b)
    lo_i, hi_i = float(math.floor(lo)), float(math.ceil(hi))
    return (lo_i, hi_i) if lo_i < hi_i else (lo_i - 1, hi_i + 1)


def human_values(frame: pd.DataFrame, mapping: ColumnMapping) -> dict[str, np.ndarray]:
    """dimension -> the numbers in its human-rating cells (non-numbers, blanks and non-finite values left out)."""
    out: dict[str, np.ndarray] = {}
    if mapping.shape == "long":
        if mapping.dimension not in frame.columns or mapping.value not in frame.columns:
            return out
        values, _, _ = rating_column(frame[mapping.value])
        dims = frame[mapping.dimension].astype("str").str.strip()
        ok = (frame[mapping.dimension].notna() & (dims != "")).to_numpy()
        for dim, group in pd.Series(values[ok]).groupby(dims[ok].to_numpy(), sort=False):
            out[str(dim)] = group.to_numpy()
        return out
    for dim, cols in mapping.rating_columns().items():
        parts = [rating_column(frame[c])[0] for c in cols if c in frame.columns]
        out[dim] = np.concatenate(parts) if parts else np.array([])
    return out


def human_words(frame: pd.DataFrame, mapping: ColumnMapping) -> dict[str, Any]:
    """dimension -> how often each word occurs in its human-rating cells, for the dimensions whose cells hold words
    (a Counter of spellings; numbers-only dimensions are left out)."""
    from collections import Counter

    out: dict[str, Any] = {}
    if mapping.shape == "long":
        if mapping.dimension not in frame.columns or mapping.value not in frame.columns:
            return out
        dims = frame[mapping.dimension].astype("str").str.strip()
        for dim, rows in frame[mapping.value].groupby(dims.to_numpy(), sort=False):
            if str(dim) and only_words(rows):
                out[str(dim)] = word_counts(rows)
        return out
    for dim, cols in mapping.rating_columns().items():
        cols = [c for c in cols if c in frame.columns]
        if any(only_words(frame[c]) for c in cols):
            out[dim] = sum((word_counts(frame[c]) for c in cols), Counter())
    return out


def label_prefill(frame: pd.DataFrame, mapping: ColumnMapping) -> dict[str, tuple[str, ...]]:
    """The labels of each dimension whose human ratings are words: declared (``mapping.labels``), else the words in
    the order ``labels_from_values`` gives (negative first for yes/no, pass/fail, true/false)."""
    out = {}
    kinds = kind_prefill(frame, mapping)
    for dim, counts in human_words(frame, mapping).items():
        if mapping.labels.get(dim):
            out[dim] = tuple(mapping.labels[dim])
            continue
        try:
            out[dim] = derived_labels(counts, kinds[dim])
        except ValueError:  # a binary kind declared over three words: the import says so
            out[dim] = derived_labels(counts, "nominal")
    return out


def scale_prefill(frame: pd.DataFrame, mapping: ColumnMapping) -> dict[str, tuple[float, float]]:
    """Each dimension's usual scale from its own human ratings (judge scores play no part); for a dimension rated
    in words, the codes of its labels, 0..K-1."""
    out = {dim: usual_scale(v) for dim, v in human_values(frame, mapping).items()}
    for dim, labels in label_prefill(frame, mapping).items():
        out[dim] = (0.0, float(len(labels) - 1))
    return out


def kind_prefill(frame: pd.DataFrame, mapping: ColumnMapping) -> dict[str, str]:
    """"binary" for a dimension whose ratings are all 0 or 1, or two words (pass/fail); "nominal" for more words
    (A/B/tie); else "interval" (the user says ordinal). A categorical kind the mapping declares is kept."""
    out = {}
    for dim, v in human_values(frame, mapping).items():
        v = v[np.isfinite(v)]
        out[dim] = "binary" if len(v) and set(np.unique(v)) <= {0.0, 1.0} and len(np.unique(v)) == 2 else "interval"
    for dim, counts in human_words(frame, mapping).items():
        declared = mapping.kinds.get(dim)
        n = len(mapping.labels.get(dim) or {w.strip().lower() for w in counts})
        out[dim] = declared if declared in CATEGORICAL_KINDS else ("binary" if n == 2 else "nominal")
    return out


def implicit_notes(mapping: ColumnMapping) -> list[str]:
    """What the import will put in place of a document id, system or output column the mapping does not give, as
    the Data page says it before the import (the import's own notes then give the counts)."""
    out = []
    if mapping.doc_id is None and mapping.source is not None:
        out.append(f"No document id column: each distinct text of {mapping.source!r} (the source text) will be a "
                   "document, numbered doc-1, doc-2, ... in file order.")
    elif mapping.doc_id is None and mapping.item_id is not None:
        out.append(f"No document id or source text column: each item ({mapping.item_id!r}) will be a document of its "
                   "own.")
    if mapping.system_id is None:
        out.append("No system column: the outputs of each document will be numbered in file order (output-1, "
                   "output-2, ...) and each number taken as a system, so per-system figures compare positions, not "
                   "models (give a column the role 'system' if the file names them).")
    if mapping.output is None:
        out.append("No output column: the items will have no text; the Alt-Test, agreement and label statistics "
                   "need only the ratings, but a judge cannot score the items here.")
    return out
