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
draws        item_id, dimension, draw, raw, value, status, reason
             (optional) a judge sampled K times per item: one row per draw (``draw`` 0..K-1). The judgments row
             of an item is then the draws' aggregate (``aggregate_draws``: the mean of the draws that parsed, the
             mode for a categorical label), so every analysis that reads judgments reads that; the reliability of
             the draws themselves is evalcore.meta.draw_reliability's. A run of one draw has no draws table.
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

import dataclasses
import functools
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Self

import pandas as pd

DOCUMENT_COLUMNS = ["doc_id", "source", "references", "context"]
ITEM_COLUMNS = ["item_id", "doc_id", "system_id", "output"]
HUMAN_SCORE_COLUMNS = ["item_id", "dimension", "score"]
ANNOTATION_COLUMNS = ["item_id", "dimension", "annotator", "group", "value"]
PREFERENCE_COLUMNS = ["pair_id", "doc_id", "item_a", "item_b", "dimension", "annotator", "preferred"]
JUDGMENT_COLUMNS = ["item_id", "dimension", "raw", "value", "status", "reason", "estimator"]
DRAW_COLUMNS = ["item_id", "dimension", "draw", "raw", "value", "status", "reason"]
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

    def encode(self, values: Iterable[object]) -> list[float]:
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


def labels_from_values(values: Iterable[object], kind: str) -> tuple[str, ...]:
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


@functools.cache
def _typed_keys(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls) if f.name not in ("extra", "key_order"))


class Recorded(Mapping[str, Any]):
    """A JSON object a run records, read into typed fields for the keys it knows and ``extra`` for the others.

    ``to_dict`` gives back exactly the dict ``from_dict`` read (the same keys in the same order, the same values):
    what is stored, and every hash of it, never changes by being read. It is also a read-only mapping over that dict
    (``rec["key"]``, ``rec.get("key")``, ``"key" in rec``, ``rec.items()``), so readers written for the dict work.
    A key is present when the record holds it, whatever its value (``None`` included); a typed field of a key the
    record lacks holds the field's default. Built in code (not ``from_dict``), the keys present are the typed fields
    given a value other than their default, in the fields' order, then ``extra``'s."""

    NESTED: ClassVar[dict[str, type[Recorded]]] = {}  # key -> the Recorded class a dict under that key is read into

    if TYPE_CHECKING:  # what every subclass (a frozen dataclass) holds, as the type checker should read it
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
        extra: dict[str, Any]
        key_order: tuple[str, ...] | None  # always a tuple once built (__post_init__)
        _present: frozenset[str]

        def __init__(self, *, extra: dict[str, Any] = ..., key_order: tuple[str, ...] | None = ...,
                     **typed: object) -> None: ...

    @classmethod
    def known(cls) -> frozenset[str]:
        """The keys with a typed field."""
        return _typed_keys(cls)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        known = cls.known()
        typed: dict[str, object] = {}
        extra: dict[str, Any] = {}
        for k, v in d.items():
            nested = cls.NESTED.get(k)
            if k in known and nested is not None and isinstance(v, nested):
                typed[k] = v
            elif k in known and (nested is None or isinstance(v, dict)):
                typed[k] = nested.from_dict(v) if nested is not None else v
            else:  # an unknown key, or a nested record that is no JSON object: kept as it is
                extra[k] = v
        return cls(**typed, extra=extra, key_order=tuple(d))

    def __post_init__(self) -> None:
        given = tuple(self.key_order or ())
        known = self.known()
        order = [k for k in given if k in self.extra or k in known]
        for f in fields(self):
            if f.name in known and f.name not in order and f.name not in self.extra:
                default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
                value = getattr(self, f.name)
                if value is not default and value != default:
                    order.append(f.name)
        order += [k for k in self.extra if k not in order]
        object.__setattr__(self, "key_order", tuple(order))
        object.__setattr__(self, "_present", frozenset(order))

    def __repr__(self) -> str:
        return f"{type(self).__name__}.from_dict({self.to_dict()!r})"

    def _value(self, key: str) -> Any:
        if key in self.extra:
            return self.extra[key]
        value = getattr(self, key)
        return value.to_dict() if isinstance(value, Recorded) else value

    def to_dict(self, *, without: tuple[str, ...] = ()) -> dict[str, Any]:
        """The recorded dict (less the keys ``without`` names)."""
        return {k: self._value(k) for k in self.key_order or () if k not in without}

    def replace(self, **values: object) -> Self:
        """A copy with these keys set, as ``dict.update`` would: a present key keeps its place, a new one comes last."""
        return type(self).from_dict({**self.to_dict(), **values})

    def __getitem__(self, key: str) -> Any:
        if key not in self._present:
            raise KeyError(key)
        return self._value(key)

    def __contains__(self, key: object) -> bool:
        return key in self._present

    def __iter__(self) -> Iterator[str]:
        return iter(self.key_order or ())

    def __len__(self) -> int:
        return len(self.key_order or ())


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class RunStats(Recorded):
    """What a run counted (``runs.stats``): the client's requests, the engine's tasks, the rate limiter's, a replica
    pool's or a batch's figures, an import's counts (evalcore.judge.runner ``ScoringRun._stats``)."""

    # the judge client's requests (evalcore.judge.client.RequestStats)
    requests: int = 0  # logical requests sent to the network (not cache hits)
    attempts: int = 0  # HTTP attempts, retries included
    retries: int = 0
    failures: int = 0  # logical requests that failed for good
    cached: int = 0  # requests answered from the cache
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0  # summed over successful requests
    wall_s: float = 0.0
    # the engine's tasks (items or ordered pairs x dimensions)
    probe_requests: int = 0  # requests the capability probe sent
    tasks: int = 0
    skipped_already_done: int = 0  # judged by an earlier session of the run (a resume)
    judged_this_session: int = 0
    tasks_from_cache: int = 0  # tasks whose every reply came from the cache
    ok: int = 0
    failed: int = 0
    resumed: bool = False
    cached_prompt_tokens: int = 0  # prompt tokens the server served from its prefix cache
    refused_requests: int = 0  # requests the endpoint's contract refused (evalcore.judge.contract)
    reasoning_tokens: int = 0  # hidden reasoning tokens (part of the completion tokens)
    # one endpoint's rate limiter (evalcore.judge.ratelimit.LimiterStats)
    rate_limited: int = 0  # attempts answered 429
    window_decreases: int = 0
    paced_wait_s: float = 0.0
    limit_requests_per_min: float | None = None
    limit_tokens_per_min: float | None = None
    min_window: float | None = None
    # a replica pool (evalcore.judge.routing): each endpoint's figures, requests moved to another replica
    endpoints: list[dict[str, Any]] | None = None
    failovers: int = 0
    batch: dict[str, Any] | None = None  # a batch's own figures (evalcore.judge.batch)
    total: int = 0  # an imported run's judgments (with ok and failed)
    extra: dict[str, Any] = field(default_factory=dict)
    key_order: tuple[str, ...] | None = None


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class RunConfig(Recorded):
    """What a run records about how it was made (``Run.config``, the store's ``runs.config`` JSON), with what the
    store says about it when it reads it back (``RUNTIME_KEYS``: its stats, status and owner).

    Keys the engine writes (evalcore.judge.runner ``run_config``), a batch's, an import's and a published run's
    (data/runs/manifest.json) have typed fields; any other key stays in ``extra``."""

    RUNTIME_KEYS: ClassVar[tuple[str, ...]] = ("stats", "status", "owner", "shared")  # not in runs.config
    NESTED: ClassVar[dict[str, type[Recorded]]] = {"stats": RunStats}

    # the engine (evalcore.judge.runner.run_config, ScoringRun.open)
    method: str = ""
    method_config: dict[str, Any] | None = None  # as planned against the endpoint's capabilities
    requested_config: dict[str, Any] | None = None  # as asked
    plan_note: str = ""  # what the plan changed ("" when nothing)
    capabilities: dict[str, Any] | None = None  # the endpoint's, as probed
    endpoint: dict[str, Any] | None = None  # the endpoint's identity (never a key)
    endpoints: list[dict[str, Any]] | None = None  # a replica pool's endpoints
    criteria: dict[str, dict[str, Any]] | None = None  # dimension -> {"hash", the criteria's fields}
    parse_mode: str = ""
    pairs: Any = None  # a pairwise run's PairSelection.describe() (a published run: its list of pairs)
    limit: int | None = None
    estimator: str = ""
    schedule: str = ""
    spec: dict[str, Any] | None = None  # evalcore.spec.ScoringSpec.to_dict()
    concurrency: int | None = None
    max_retries: int | None = None
    timeout_s: float | None = None
    variant: str = ""  # the method as it ran on this judge ("" as asked)
    contract: dict[str, Any] | None = None  # what the endpoint's contract changed in the requests
    reasoning_options: dict[str, Any] | None = None
    mode: str = ""  # "batch" for a run scored through a batch API
    batch: dict[str, Any] | None = None  # the batch's ids and counts
    # an import (evalcore.importers)
    imported_from: Any = None  # the file (a name, or a dict describing it)
    kind: str = ""
    sha256: str = ""
    orders: Any = None  # presentation orders of a pairwise import or published run
    # a published run (data/runs/manifest.json)
    origin: Any = None  # where it came from (a dict: repository, commit, license)
    paper: str = ""
    citation: str = ""
    model: str = ""
    parser: str = ""
    n: int | None = None  # samples per request
    temperature: float | None = None
    # what the store adds when it reads the run back
    stats: RunStats = field(default_factory=RunStats)
    status: str = ""  # running, done, cancelled, stopped, interrupted, batch-submitted, ...
    owner: str | None = None  # who started it, on a server with sign-in
    shared: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    key_order: tuple[str, ...] | None = None

    def stored(self) -> dict[str, Any]:
        """The dict the store keeps in ``runs.config``: the record less what the store says itself."""
        return self.to_dict(without=self.RUNTIME_KEYS)


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
    config: RunConfig = field(default_factory=RunConfig)  # a dict given here is read into a RunConfig
    parser: str = ""
    origin: str = "local"  # "published" for runs released by papers' authors
    created_at: str = ""
    judgments: pd.DataFrame = field(default_factory=lambda: empty_frame(JUDGMENT_COLUMNS))
    comparisons: pd.DataFrame = field(default_factory=lambda: empty_frame(COMPARISON_COLUMNS))
    # K > 1 draws per item (DRAW_COLUMNS); empty for a run of one draw, whose judgments are its only draw
    draws: pd.DataFrame = field(default_factory=lambda: empty_frame(DRAW_COLUMNS))

    if TYPE_CHECKING:  # the dataclass's own __init__, as the type checker should read it: config may be a mapping
        def __init__(self, run_id: str, dataset_id: str, method: str, model: str, label: str = "",
                     config: RunConfig | Mapping[str, Any] | None = None, parser: str = "", origin: str = "local",
                     created_at: str = "", judgments: pd.DataFrame = ..., comparisons: pd.DataFrame = ...,
                     draws: pd.DataFrame = ...) -> None: ...

    def __post_init__(self) -> None:
        if not isinstance(self.config, RunConfig):
            self.config = RunConfig.from_dict(self.config or {})

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

    @property
    def n_draws(self) -> int:
        """The most draws any item has (1 for a run without a draws table)."""
        if self.draws.empty:
            return 1
        return int(self.draws.groupby(["item_id", "dimension"]).size().max())

    def draw_scores(self, dimension: str) -> pd.DataFrame:
        """item_id, draw, judge (NaN where that draw failed to parse) for one dimension: every draw of every item,
        or the judgments as draw 0 for a run of one draw."""
        if self.draws.empty:
            j = self.scores(dimension)[["item_id", "judge"]].copy()
            j.insert(1, "draw", 0)
            return j.reset_index(drop=True)
        d = self.draws[self.draws["dimension"] == dimension]
        out = d[["item_id", "draw", "value"]].rename(columns={"value": "judge"})
        out["draw"] = out["draw"].astype(int)
        out["judge"] = pd.to_numeric(out["judge"], errors="coerce").astype(float)
        return out.reset_index(drop=True)

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


def aggregate_draws(draws: pd.DataFrame, *, categorical: bool = False) -> pd.DataFrame:
    """One row per (item_id, dimension) from a draws table: ``value`` the mean of the draws that parsed (the mode
    for a categorical label: the commonest code, a tie going to the lowest code so that the rule is stated and
    repeatable), ``status`` failed only when no draw parsed, ``n_draws`` and ``n_ok`` the draws counted."""
    d = draws.assign(value=pd.to_numeric(draws["value"], errors="coerce").astype(float))
    ok = d[(d["status"] == STATUS_OK) & d["value"].notna()]
    keys = ["item_id", "dimension"]
    counts = d.groupby(keys, sort=False).size().rename("n_draws")
    if categorical:
        modes = (ok.groupby(keys + ["value"], sort=True).size().rename("k").reset_index()
                 .sort_values(keys + ["k", "value"], ascending=[True, True, False, True], kind="stable")
                 .drop_duplicates(keys).set_index(keys)["value"])
        value = modes
    else:
        value = ok.groupby(keys, sort=False)["value"].mean()
    n_ok = ok.groupby(keys, sort=False).size().rename("n_ok")
    out = counts.to_frame().join(value.rename("value")).join(n_ok).reset_index()
    out["n_ok"] = out["n_ok"].fillna(0).astype(int)
    out["status"] = [STATUS_OK if k > 0 else STATUS_FAILED for k in out["n_ok"]]
    return out[["item_id", "dimension", "value", "status", "n_draws", "n_ok"]]


def natural_key(s: object) -> tuple[int | str, ...]:
    """Sort "M8" before "M10"."""
    import re

    parts = re.split(r"(\d+)", str(s))
    return tuple(int(p) if p.isdigit() else p for p in parts)


_natural_key = natural_key  # the name this module's own sorts use


def is_missing(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """A count and its noun, agreeing: ``counted(1, "document")`` -> "1 document", ``counted(2, "reply")`` ->
    "2 replies", ``counted(1200, "item")`` -> "1,200 items"; ``plural`` where the noun's plural is irregular. The
    one way every sentence of the product says how many (never "1 documents" nor "document(s)")."""
    if plural is None:
        plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    try:
        shown = f"{n.__index__():,}"  # an int, numpy's too
    except (AttributeError, TypeError):
        shown = str(n)
    return f"{shown} {noun if n == 1 else plural}"
