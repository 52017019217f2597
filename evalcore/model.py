"""The data model every part of evalcore shares.

A *dataset* is a set of generated texts (items) with human ratings. A *run* is one configured LLM judge applied to a
dataset; it leaves *judgments* (one per item and dimension, raw reply kept) or *comparisons* (one per ordered pair of
items, for pairwise methods).

Tables are pandas DataFrames with fixed column sets (the ``*_COLUMNS`` constants below) because every statistic works
on whole columns at once; the seams between modules are the dataclasses that hold them.

Column conventions
------------------
documents    doc_id, source, references (list[str]), context (str, may be "")
             ``source`` is what the text was generated from (article, dialogue history); ``context`` is extra
             conditioning such as Topical-Chat's fact.
items        item_id, doc_id, system_id, output, + optional attribute columns (e.g. ``written_by``)
human_scores item_id, dimension, score                 the gold score of an item (expert mean unless stated)
annotations  item_id, dimension, annotator, group, value   per-annotator ratings (may be empty)
preferences  pair_id, doc_id, item_a, item_b, dimension, annotator, preferred ("a" | "b" | "tie")
             human pairwise preferences (Zhang et al. 2023 writer-vs-LLM pairs)
judgments    item_id, dimension, raw, value, status, reason, estimator
             raw is the judge's reply (a JSON list of strings when several samples were drawn);
             value is NaN unless status == "ok"; status is "ok" or "failed"; reason says why it failed.
comparisons  pair_id, doc_id, item_first, item_second, dimension, order, raw, verdict, status, reason
             one row per presentation order; ``order`` is "ab" or "ba"; verdict is "first" | "second" | "tie"
             (NaN/None when the reply could not be read; status then says "failed").

Label kinds
-----------
Every dimension has a ``kind`` (``Dimension.kind``, saved with the dataset):

interval  (default) a rating scale read as numbers: Likert means, correlations, interval-level alpha.
ordinal   ordered categories (e.g. bad < ok < good, or a 1-5 scale whose steps are not equal): correlations plus
          quadratic-weighted kappa; ordinal-level alpha.
binary    two categories (pass/fail, yes/no, 0/1): kappa, accuracy, precision/recall/F1 of the positive class,
          the confusion matrix; nominal-level alpha.
nominal   unordered categories (e.g. A / B / tie): kappa, accuracy, macro precision/recall/F1, confusion matrix.

How categorical values are stored. Every value column stays numeric (human_scores.score, annotations.value,
judgments.value are floats), so every existing table, store blob and statistic keeps working. A dimension whose
labels are words carries them in ``Dimension.labels`` and its values are the *codes* 0..K-1 (``labels[code]`` is
the label; the scale is then 0..K-1). Binary labels are ordered (negative, positive), so code 1 is the positive
class: ``("fail", "pass")``, ``("no", "yes")``. A categorical dimension without labels uses its numbers as the
categories: binary = {scale_min, scale_max} (positive = scale_max), ordinal/nominal = the integers from scale_min to
scale_max. ``Dimension.encode`` turns labels (or numbers written as text) into codes and says which value is not a
label; ``Dimension.categories`` / ``category_names`` give the categories and what to call them.

For a categorical dimension, ``human_scores.score`` is one category per item (or, when the dataset has
per-annotator ``annotations``, the statistics take the annotators' majority; see evalcore.meta.classification).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

DOCUMENT_COLUMNS = ["doc_id", "source", "references", "context"]
ITEM_COLUMNS = ["item_id", "doc_id", "system_id", "output"]
HUMAN_SCORE_COLUMNS = ["item_id", "dimension", "score"]
ANNOTATION_COLUMNS = ["item_id", "dimension", "annotator", "group", "value"]
PREFERENCE_COLUMNS = ["pair_id", "doc_id", "item_a", "item_b", "dimension", "annotator", "preferred"]
JUDGMENT_COLUMNS = ["item_id", "dimension", "raw", "value", "status", "reason", "estimator"]
COMPARISON_COLUMNS = [
    "pair_id", "doc_id", "item_first", "item_second", "dimension", "order", "raw", "verdict", "status", "reason",
]

STATUS_OK = "ok"
STATUS_FAILED = "failed"


def empty_frame(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


# What kind of label a dimension holds (see "Label kinds" above).
LABEL_KINDS = ("interval", "ordinal", "binary", "nominal")
KINDS = LABEL_KINDS
CATEGORICAL_KINDS = ("ordinal", "binary", "nominal")
# Krippendorff's alpha at the level that matches each kind (binary categories have no distance but "differ").
ALPHA_LEVEL = {"interval": "interval", "ordinal": "ordinal", "binary": "nominal", "nominal": "nominal"}


@dataclass(frozen=True)
class Dimension:
    """A quality dimension humans rated, with the scale they rated it on and the kind of label it is.

    ``kind``: "interval" (default), "ordinal", "binary" or "nominal" (see the module docstring, "Label kinds").
    ``labels``: the names of categories stored as codes 0..K-1 (empty: the values are the categories).
    """

    name: str
    scale_min: float
    scale_max: float
    description: str = ""
    kind: str = "interval"
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"dimension {self.name!r}: kind must be one of {', '.join(LABEL_KINDS)}, "
                             f"not {self.kind!r}")
        labels = tuple(str(x) for x in (self.labels or ()))
        object.__setattr__(self, "labels", labels)  # lists (from JSON) become tuples: the dataclass stays hashable
        if not labels:
            if self.kind != "interval" and self.scale_max <= self.scale_min:
                raise ValueError(f"dimension {self.name!r}: a {self.kind} dimension needs scale_min < scale_max, "
                                 f"got {self.scale_min:g}..{self.scale_max:g}")
            return
        if self.kind == "interval":
            raise ValueError(f"dimension {self.name!r}: labels {list(labels)} need a categorical kind "
                             f"({', '.join(CATEGORICAL_KINDS)}), not interval")
        if len(set(labels)) != len(labels):
            raise ValueError(f"dimension {self.name!r}: labels {list(labels)} repeat a name")
        if self.kind == "binary" and len(labels) != 2:
            raise ValueError(f"dimension {self.name!r}: a binary dimension has 2 labels (negative, positive), "
                             f"got {list(labels)}")
        if len(labels) < 2:
            raise ValueError(f"dimension {self.name!r}: a {self.kind} dimension needs at least 2 labels")
        if (self.scale_min, self.scale_max) != (0, len(labels) - 1):
            raise ValueError(f"dimension {self.name!r}: labels are stored as codes 0..{len(labels) - 1}, so the scale "
                             f"must be 0-{len(labels) - 1}, got {self.scale_min:g}-{self.scale_max:g}")

    @property
    def scale(self) -> tuple[float, float]:
        return (self.scale_min, self.scale_max)

    @property
    def is_categorical(self) -> bool:
        return self.kind in CATEGORICAL_KINDS

    @property
    def alpha_level(self) -> str:
        """Krippendorff's level of measurement that matches this kind."""
        return ALPHA_LEVEL[self.kind]

    @property
    def categories(self) -> tuple[float, ...]:
        """The category values (codes when there are labels), in order; () for an interval dimension."""
        if self.kind == "interval":
            return ()
        if self.labels:
            return tuple(float(i) for i in range(len(self.labels)))
        if self.kind == "binary":
            return (float(self.scale_min), float(self.scale_max))
        lo, hi = math.ceil(self.scale_min), math.floor(self.scale_max)
        return tuple(float(v) for v in range(lo, hi + 1))

    @property
    def category_names(self) -> tuple[str, ...]:
        """What to call each category: its label, else its number (1, not 1.0)."""
        return self.labels or tuple(f"{v:g}" for v in self.categories)

    @property
    def positive(self) -> str | None:
        """The positive class of a binary dimension (the second label, or scale_max); None otherwise."""
        return self.category_names[1] if self.kind == "binary" else None

    def encode(self, values) -> list[float]:
        """Category values for labels or numbers (as text or numbers); NaN for a missing value.

        Labels match exactly, then ignoring case and surrounding spaces. Raises ValueError naming the first value
        that is no category of this dimension (its position in ``values``)."""
        cats = self.categories
        if not cats:
            raise ValueError(f"dimension {self.name!r} is interval: its values are numbers, there is nothing to encode")
        names = {n: c for n, c in zip(self.category_names, cats)}
        folded = {n.strip().lower(): c for n, c in names.items()}
        out = []
        for i, v in enumerate(values):
            if is_missing(v) or (isinstance(v, str) and not v.strip()):
                out.append(float("nan"))
                continue
            key = str(v)
            if key in names:
                out.append(names[key])
                continue
            if key.strip().lower() in folded:
                out.append(folded[key.strip().lower()])
                continue
            try:
                num = float(key)
            except ValueError:
                num = None
            if num is not None and not self.labels and num in cats:
                out.append(num)
                continue
            raise ValueError(f"dimension {self.name!r} ({self.kind}): value {v!r} at position {i} is not one of its "
                             f"categories {list(self.category_names)}")
        return out


# Words that name the negative class of a binary label, so that e.g. {"pass", "fail"} is coded fail=0, pass=1.
_NEGATIVE_WORDS = ("0", "fail", "failed", "no", "false", "f", "n", "negative", "neg", "bad", "incorrect", "wrong",
                   "unfaithful", "inconsistent", "unacceptable", "reject", "rejected", "irrelevant", "unsafe")


def labels_from_values(values, kind: str) -> tuple[str, ...]:
    """The label tuple for a categorical dimension from the distinct text values of a column.

    binary: (negative, positive), the negative one recognised by name (fail, no, false, 0, bad, ...; else the first
    in natural order); nominal/ordinal: natural sort order (an ordinal's order should then be checked by the user).
    Raises ValueError when a binary column does not hold exactly 2 distinct values."""
    distinct = sorted({str(v).strip() for v in values if not is_missing(v) and str(v).strip()}, key=_natural_key)
    if kind == "binary":
        if len(distinct) != 2:
            raise ValueError(f"a binary dimension needs exactly 2 distinct values, found {len(distinct)}: "
                             f"{distinct[:10]}")
        a, b = distinct
        if b.lower() in _NEGATIVE_WORDS and a.lower() not in _NEGATIVE_WORDS:
            a, b = b, a
        return (a, b)
    if kind not in CATEGORICAL_KINDS:
        raise ValueError(f"kind {kind!r} has no labels; categorical kinds are {list(CATEGORICAL_KINDS)}")
    return tuple(distinct)


@dataclass
class Dataset:
    """Items, their human ratings and where they came from."""

    id: str
    name: str
    task: str  # "summarization", "dialogue response", "dialogue", "summary pairs", ...
    dimensions: list[Dimension]
    documents: pd.DataFrame
    items: pd.DataFrame
    human_scores: pd.DataFrame
    annotations: pd.DataFrame = field(default_factory=lambda: empty_frame(ANNOTATION_COLUMNS))
    preferences: pd.DataFrame = field(default_factory=lambda: empty_frame(PREFERENCE_COLUMNS))
    description: str = ""
    citation: str = ""
    origin: str = ""  # where the data came from (repository, commit, license)
    meta: dict[str, Any] = field(default_factory=dict)  # e.g. {"challenge_pairs": [...], "levels": [...]}

    def dimension(self, name: str) -> Dimension:
        for d in self.dimensions:
            if d.name == name:
                return d
        raise KeyError(f"dataset {self.id!r} has no dimension {name!r}; it has {[d.name for d in self.dimensions]}")

    @property
    def dimension_names(self) -> list[str]:
        return [d.name for d in self.dimensions]

    @property
    def systems(self) -> list[str]:
        return sorted(self.items["system_id"].unique(), key=_natural_key)

    @property
    def annotators(self) -> list[str]:
        if self.annotations.empty:
            return []
        return sorted(self.annotations["annotator"].unique(), key=_natural_key)

    def human_table(self, dimension: str) -> pd.DataFrame:
        """items joined with their gold human score on one dimension: item_id, doc_id, system_id, human."""
        hs = self.human_scores[self.human_scores["dimension"] == dimension][["item_id", "score"]]
        out = self.items[["item_id", "doc_id", "system_id"]].merge(hs, on="item_id", how="inner")
        return out.rename(columns={"score": "human"})

    def texts(self) -> pd.DataFrame:
        """items joined with their document's source, references and context."""
        return self.items.merge(self.documents, on="doc_id", how="left")


@dataclass
class Run:
    """One judge configuration applied to one dataset.

    ``config`` holds everything needed to say what was done: method, model, endpoint identity (never a key),
    prompt template and its hash, sampling parameters, estimator, and for published runs their origin.
    ``parser`` names the evalcore parser that turns ``raw`` into ``value`` (so published replies can be re-parsed
    under the paper's rule or the robust one).
    """

    run_id: str
    dataset_id: str
    method: str
    model: str
    label: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    parser: str = ""
    origin: str = "local"  # "published" for runs released by papers' authors
    created_at: str = ""
    judgments: pd.DataFrame = field(default_factory=lambda: empty_frame(JUDGMENT_COLUMNS))
    comparisons: pd.DataFrame = field(default_factory=lambda: empty_frame(COMPARISON_COLUMNS))

    @property
    def dimensions(self) -> list[str]:
        frames = [f["dimension"] for f in (self.judgments, self.comparisons) if not f.empty]
        if not frames:
            return []
        return list(dict.fromkeys(pd.concat(frames).tolist()))

    @property
    def is_pairwise(self) -> bool:
        return not self.comparisons.empty and self.judgments.empty

    def scores(self, dimension: str) -> pd.DataFrame:
        """item_id, judge (float, NaN where the parse failed), status, reason for one dimension."""
        j = self.judgments[self.judgments["dimension"] == dimension]
        return j[["item_id", "value", "status", "reason"]].rename(columns={"value": "judge"})

    def summary(self) -> dict[str, Any]:
        j = self.judgments
        c = self.comparisons
        n = len(j) if not j.empty else len(c)
        frame = j if not j.empty else c
        failed = int((frame["status"] != STATUS_OK).sum()) if n else 0
        return {
            "run_id": self.run_id,
            "dataset": self.dataset_id,
            "method": self.method,
            "model": self.model,
            "label": self.label,
            "origin": self.origin,
            "dimensions": self.dimensions,
            "judgments": n,
            "failed": failed,
        }


def natural_key(s: Any) -> tuple:
    """Sort "M8" before "M10"."""
    import re

    parts = re.split(r"(\d+)", str(s))
    return tuple(int(p) if p.isdigit() else p for p in parts)


_natural_key = natural_key  # the name this module's own sorts use


def is_missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))
