"""Ratings written as words (pass/fail, yes/no, A/B/tie): which labels a dimension has, their order, and the codes.

A binary or nominal (or ordinal) dimension whose cells hold words keeps the words as ``Dimension.labels`` and its
values as the codes 0..K-1 (evalcore.model, "Label kinds"). The labels are the user's (``ColumnMapping.labels``,
CLI ``--labels DIM=fail,pass``: the order given; for a binary dimension the last label is the positive class) or
else the distinct words of the column, ordered by :func:`evalcore.model.labels_from_values` (negative first for
yes/no, true/false, pass/fail; natural order otherwise). Cells are matched to labels by ``Dimension.encode``:
exactly, then ignoring case and surrounding spaces; spellings folded that way are reported (``Pass``, ``pass ``).
Every function works on the distinct cells of a column, never cell by cell over a long file.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore.importers.cells import by_unique, is_blank, parse_rating
from evalcore.model import CATEGORICAL_KINDS, Dimension, labels_from_values

# A guessed word-rating column holds at most this many distinct words (case and spaces folded).
MAX_GUESSED_LABELS = 6
_MAX_LABEL_CHARS = 24
# Words that say a column holds verdicts or preferences, when its name does not (the guess stays conservative).
VERDICT_WORDS = frozenset({
    "yes", "no", "true", "false", "pass", "fail", "passed", "failed", "correct", "incorrect", "good", "bad", "ok",
    "a", "b", "tie", "draw", "both", "neither", "left", "right", "first", "second", "win", "lose", "loss",
    "faithful", "unfaithful", "consistent", "inconsistent", "acceptable", "unacceptable", "safe", "unsafe",
    "relevant", "irrelevant", "positive", "negative", "accept", "reject", "y", "n", "t", "f",
})


def label_text(v: object) -> str | None:
    """A rating cell as the word it holds: None when blank; booleans as "true"/"false"; 1.0 as "1"."""
    if is_blank(v):
        return None
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer():
        return str(int(v))
    return v if isinstance(v, str) else str(v)


def fold(word: str) -> str:
    """What two spellings of one label share (Dimension.encode's second try): no surrounding spaces, lower case."""
    return word.strip().lower()


def is_word(v: object) -> bool:
    """A non-blank cell that holds no number (booleans are words here: true/false). "inf", "nan" and 1e400 read as
    numbers, not words: such a cell is a bad rating, which the import reports with its row."""
    if is_blank(v):
        return False
    if isinstance(v, (bool, np.bool_)):
        return True
    if parse_rating(v)[1] is None:
        return False
    try:
        float(str(v).strip())
    except ValueError:
        return True
    return False


def word_counts(column: pd.Series) -> Counter:
    """How often each non-blank spelling occurs (spelling = :func:`label_text`), from pandas' value counts."""
    try:
        counts = column.value_counts(dropna=True)
    except TypeError:  # unhashable cells (lists): no labels there
        return Counter()
    out: Counter = Counter()
    for v, n in counts.items():
        t = label_text(v)
        if t is not None:
            out[t] += int(n)
    return out


def holds_words(column: pd.Series) -> bool:
    """Whether any non-blank cell holds no number (computed once per distinct cell)."""
    if pd.api.types.is_bool_dtype(column.dtype):
        return bool(column.notna().any())
    if pd.api.types.is_numeric_dtype(column.dtype):
        return False
    if column.dtype == object:  # JSON cells: look at the distinct ones only
        try:
            column = pd.Series(pd.unique(column.dropna()), dtype=object)
        except TypeError:  # unhashable cells (lists)
            pass
    return bool(len(column)) and bool(by_unique(column, is_word).any())


def only_words(column: pd.Series) -> bool:
    """Whether the column has words and every non-blank cell is one: a column to GUESS as labels. Numbers with a
    stray word ("four") are numbers with a bad cell, not labels."""
    if pd.api.types.is_bool_dtype(column.dtype):
        return bool(column.notna().any())
    if pd.api.types.is_numeric_dtype(column.dtype):
        return False
    column = column.dropna()
    if column.dtype == object:  # JSON cells: look at the distinct ones only
        try:
            column = pd.Series(pd.unique(column), dtype=object)
        except TypeError:  # unhashable cells (lists): no labels there
            return False
    if not len(column):
        return False
    flags = by_unique(column, is_word).astype(bool)
    blank = by_unique(column, is_blank).astype(bool)
    return bool(flags.any()) and bool((flags | blank).all())


def spellings(counts: Counter) -> dict[str, list[str]]:
    """folded word -> its spellings, the most frequent first (ties: in sorted order)."""
    out: dict[str, list[str]] = {}
    for word, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        out.setdefault(fold(word), []).append(word)
    return out


def derived_labels(counts: Counter, kind: str) -> tuple[str, ...]:
    """The labels of a categorical dimension from its words: one per folded spelling (written as its most frequent
    spelling, stripped), ordered by ``labels_from_values``. Raises ValueError as that does (a binary column without
    exactly two words)."""
    return labels_from_values([s[0].strip() for s in spellings(counts).values()], kind)


def declared_problem(dimension: str, labels: list[str], kind: str) -> str | None:
    """What is wrong with labels the user declared for a dimension of ``kind``, or None."""
    if kind not in CATEGORICAL_KINDS:
        return (f"labels are declared for {dimension!r}, whose kind is {kind}: declare its kind as one of "
                f"{', '.join(CATEGORICAL_KINDS)}")
    if any(not str(x).strip() for x in labels):
        return f"labels of {dimension!r} include an empty name: {list(labels)}"
    folded = [fold(str(x)) for x in labels]
    if len(set(folded)) != len(folded):
        return f"labels of {dimension!r} repeat a name (case and spaces ignored): {list(labels)}"
    if kind == "binary" and len(labels) != 2:
        return (f"a binary dimension has 2 labels (negative, positive: the last is the positive class); "
                f"{dimension!r} declares {len(labels)}: {list(labels)}")
    if len(labels) < 2:
        return f"{dimension!r} needs at least 2 labels, got {list(labels)}"
    return None


def label_dimension(name: str, kind: str, labels: Iterable[str], description: str = "") -> Dimension:
    """A categorical dimension whose values are the codes of ``labels``."""
    labels = tuple(str(x).strip() for x in labels)
    return Dimension(name, 0.0, float(len(labels) - 1), description, kind, labels)


@dataclass
class Encoded:
    """One column's cells as codes: ``values`` (NaN where blank or unknown), ``blank``, ``unknown`` (a word that is
    no label), and the spellings folded into each label."""

    values: np.ndarray
    blank: np.ndarray
    unknown: np.ndarray
    folded: dict[str, set[str]] = field(default_factory=dict)


def encode_column(column: pd.Series, dimension: Dimension) -> Encoded:
    """The codes of a column's cells under ``dimension``'s labels (``Dimension.encode``, once per distinct cell)."""
    texts = by_unique(column, label_text)
    distinct = pd.unique(texts.dropna())
    codes: dict[str, float] = {}
    folded: dict[str, set[str]] = {}
    names = dimension.category_names
    for t in distinct:
        try:
            code = dimension.encode([t])[0]
        except ValueError:
            continue
        codes[t] = code
        label = names[int(code)]
        if t != label:
            folded.setdefault(label, set()).add(t)
    blank = texts.isna().to_numpy()
    values = texts.map(codes).to_numpy(dtype="float64", na_value=np.nan)
    return Encoded(values, blank, ~blank & np.isnan(values), folded)


def folded_warning(column: str, folded: dict[str, set[str]]) -> str | None:
    """The warning that spellings were read as one label (None when nothing was folded)."""
    if not folded:
        return None
    parts = [f"{' and '.join(map(repr, sorted(v)))} as {k!r}" for k, v in sorted(folded.items())]
    return f"column {column!r}: read {'; '.join(parts)} (labels match ignoring case and surrounding spaces)"


def looks_like_labels(counts: Counter, column_name: str = "") -> tuple[str, ...] | None:
    """The conservative guess: a column of short words with 2..6 distinct values (case and spaces folded), at least
    one of them not a number, that repeat, and either are verdict words (yes/no, pass/fail, A/B/tie, ...) or sit in
    a column named like a label (``label``, ``verdict``, ``judgment``, ``preference``, ``winner``...). The words as
    guessed labels (binary order for two, natural order else), or None."""
    groups = spellings(counts)
    words = list(groups)
    if not 2 <= len(words) <= MAX_GUESSED_LABELS or any(len(w) > _MAX_LABEL_CHARS for w in words):
        return None
    if all(parse_rating(w)[1] is None for w in words):
        return None  # numbers: the numeric guess decides
    if sum(counts.values()) < 2 * len(words):
        return None  # hardly a repeated value: more likely a text or an id
    named = any(tok in column_name.lower() for tok in ("label", "verdict", "judg", "prefer", "winner", "pass",
                                                       "decision", "rating", "grade", "class"))
    if not named and not all(w in VERDICT_WORDS for w in words):
        return None
    return derived_labels(counts, "binary" if len(words) == 2 else "nominal")
