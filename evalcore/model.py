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

# What kind of label a dimension holds: ``interval`` (a Likert or continuous score: the default), ``ordinal``
# (ordered categories), ``binary`` (pass/fail, yes/no, 0/1) or ``nominal`` (unordered categories such as A/B/tie).
LABEL_KINDS = ("interval", "ordinal", "binary", "nominal")

STATUS_OK = "ok"
STATUS_FAILED = "failed"


def empty_frame(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


@dataclass(frozen=True)
class Dimension:
    """A quality dimension humans rated, with the scale they rated it on."""

    name: str
    scale_min: float
    scale_max: float
    description: str = ""
    kind: str = "interval"  # one of LABEL_KINDS

    def __post_init__(self) -> None:
        if self.kind not in LABEL_KINDS:
            raise ValueError(f"dimension {self.name!r}: kind must be one of {', '.join(LABEL_KINDS)}, "
                             f"not {self.kind!r}")

    @property
    def scale(self) -> tuple[float, float]:
        return (self.scale_min, self.scale_max)


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


def _natural_key(s: Any) -> tuple:
    """Sort "M8" before "M10"."""
    import re

    parts = re.split(r"(\d+)", str(s))
    return tuple(int(p) if p.isdigit() else p for p in parts)


def is_missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))
