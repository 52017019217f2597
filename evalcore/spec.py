"""What to score and how to reach the judge, as two values: :class:`ScoringSpec` and :class:`EngineOptions`.

Plain dataclasses that every door into the engine builds (the command line, the Score page, a batch submission) and
that a run bundle carries (``evalcore.bundles``). They live below both the engine (``evalcore.judge``) and the
bundles so that either may hold one; the rule that fills a spec with its default criteria and config needs the
methods and the engine, and stays in ``evalcore.judge.spec`` (which re-exports these two classes).

A spec is recorded with the run it made (``ScoringSpec.to_dict``: JSON, versioned by ``SPEC_VERSION``) and read back
with ``ScoringSpec.from_dict``: the same dataset (and documents), method, dimensions, criteria, config, limit, pairs
and parse mode, so scoring the run again (a resume, here or in the store a bundle was imported into) builds the same
requests, byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from evalcore.model import Dataset
from evalcore.types import Capabilities, Criteria

SPEC_VERSION = 1  # of ScoringSpec.to_dict's form; a newer one is refused by name, never half-read


class SpecError(ValueError):
    """A recorded spec that cannot be read here (a newer version, another dataset, a criteria hash that differs)."""


def _plain(x: object) -> object:
    """JSON's own shapes: tuples as lists, dict keys as strings (so a spec equals itself read back)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def pairs_plain(pairs: object) -> Any:
    """The pairwise selection as the engine takes it (``None``, "all", "annotated", [(a, b), ...] or a dict with
    "sample"/"seed" or "systems", "orders", "annotated"), in JSON's shapes. A selection object (the engine's
    ``PairSelection``) is read through its ``describe()``."""
    if hasattr(pairs, "describe"):
        return pairs_from_described(pairs.describe())
    return _plain(pairs)


def pairs_from_described(p: dict[str, Any] | None) -> Any:
    """The selection back from a run's recorded ``pairs`` (``PairSelection.describe()``: mode, systems, k, seed,
    annotated, orders), as the engine takes it."""
    if not p:
        return None
    # the presentation orders and the annotated-pairs choice, when the run recorded them (older runs did not)
    extra = {k: p[k] for k in ("orders", "annotated") if p.get(k) is not None}
    if p.get("mode") == "systems":
        systems = [list(x) for x in p.get("systems") or []]
        return {"systems": systems, **extra} if extra else systems
    if p.get("mode") == "sample":
        return {"sample": p.get("k", 0), "seed": p.get("seed", 0), **extra}
    return extra or None


@dataclass
class ScoringSpec:
    """What to score: the dataset, the method, the dimensions with their criteria, the method's config, which items
    (``documents``: the whole documents drawn for a partial run, the dataset is then restricted to them; ``limit``:
    the first N; ``pairs``: pairwise selection, see ``runner.score_dataset``) and how replies are parsed.
    ``run_id`` names the run (an existing id resumes it); ``label`` is shown next to it.
    ``evalcore.judge.spec.default_spec`` fills one with the default criteria and config."""

    dataset: Dataset
    method: Any  # a name in evalcore.methods.METHODS, or a Method object
    dimensions: list[str] | None  # None: those of ``criteria``
    criteria: dict[str, Criteria]
    config: Any = None
    limit: int | None = None
    pairs: Any = None
    parse_mode: str = "robust"
    label: str = ""
    run_id: str | None = None
    documents: tuple[str, ...] | None = None  # a sample of whole documents (None: the dataset's items as given)
    # who asks, not what to score: the signed-in user starting the run, recorded as the run's owner (None: no sign-in;
    # evalcore.identity). Not part of to_dict: a recorded spec scores the same for whoever resumes it.
    owner: str | None = None
    # reasoning judges: the effort asked for ("none", "minimal", "low", "medium", "high"; sent as reasoning_effort)
    # and the completion budget that replaces each method's own (room for the reasoning before the answer). Both
    # change the requests, so both are recorded and part of the cache key (evalcore.judge.contract.RequestOptions).
    reasoning_effort: str | None = None
    max_completion_tokens: int | None = None
    # K draws per item: each item's requests sent K times (draw 0 as a one-draw run sends them, draw d > 0 with its
    # own cache key and seed; evalcore.judge.draws), the judgment the draws' aggregate (model.aggregate_draws)
    draws: int = 1
    # the Improve loop's run: which split and which part of it it scores ({"split": split id, "part": "dev" or
    # "test"}), so that a held-out part's run is known by its record (evalcore.align.loop.test_part_of), not its id
    align: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.draws, bool) or not isinstance(self.draws, int) or self.draws < 1:
            raise ValueError(f"draws must be a whole number of draws per item, 1 or more, not {self.draws!r}")
        if self.max_completion_tokens is not None and int(self.max_completion_tokens) < 1:
            raise ValueError(f"max_completion_tokens must be a positive number of tokens, not "
                             f"{self.max_completion_tokens!r}")

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON (the dataset by id and documents; criteria with their version hash; the config as the
        dict the method's ``load_config`` reads back)."""
        config = self.config
        if dataclasses.is_dataclass(config) and not isinstance(config, type):
            config = asdict(config)
        return {
            "version": SPEC_VERSION,
            "dataset_id": self.dataset.id,
            "documents": None if self.documents is None else [str(d) for d in self.documents],
            "method": self.method if isinstance(self.method, str) else getattr(self.method, "name", str(self.method)),
            "dimensions": None if self.dimensions is None else list(self.dimensions),
            "criteria": {d: {"hash": c.version_hash(), **asdict(c)} for d, c in self.criteria.items()},
            "config": _plain(config),
            "limit": self.limit,
            "pairs": pairs_plain(self.pairs),
            "parse_mode": self.parse_mode,
            "label": self.label,
            "run_id": self.run_id,
            # only when set: a spec without reasoning options reads as it always did
            **({"reasoning_effort": self.reasoning_effort} if self.reasoning_effort else {}),
            **({"max_completion_tokens": int(self.max_completion_tokens)} if self.max_completion_tokens else {}),
            **({"draws": int(self.draws)} if self.draws > 1 else {}),
            **({"align": dict(self.align)} if self.align else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], dataset: Dataset) -> "ScoringSpec":
        """The spec ``to_dict`` wrote, on ``dataset`` (the whole dataset of that id: restricted here to the recorded
        documents). Raises :class:`SpecError` for a newer version, another dataset or a criteria hash that differs."""
        version = d.get("version")
        if not isinstance(version, int) or version > SPEC_VERSION:
            raise SpecError(f"scoring spec version {version!r}: this evalcore reads versions up to {SPEC_VERSION} "
                            "(upgrade evalcore to read it)")
        if d.get("dataset_id") != dataset.id:
            raise SpecError(f"the spec was recorded on dataset {d.get('dataset_id')!r}, not {dataset.id!r}")
        criteria = {}
        for dim, c in (d.get("criteria") or {}).items():
            crit = Criteria(**{k: v for k, v in c.items() if k != "hash"})
            if c.get("hash") and crit.version_hash() != c["hash"]:
                raise SpecError(f"criteria of {dim!r}: recorded hash {c['hash']}, but its texts hash to "
                                f"{crit.version_hash()}")
            criteria[dim] = crit
        documents = d.get("documents")
        if documents is not None:
            from evalcore.sampling import documents_subset

            documents = tuple(str(x) for x in documents)
            wanted = set(documents)  # ids compared as text: JSON keeps no column type
            dataset = documents_subset(dataset, [x for x in dataset.items["doc_id"].unique() if str(x) in wanted])
        return cls(dataset, d["method"], d.get("dimensions"), criteria, d.get("config"), limit=d.get("limit"),
                   pairs=d.get("pairs"), parse_mode=d.get("parse_mode", "robust"), label=d.get("label", ""),
                   run_id=d.get("run_id"), documents=documents, reasoning_effort=d.get("reasoning_effort"),
                   max_completion_tokens=d.get("max_completion_tokens"), draws=int(d.get("draws", 1)),
                   align=d.get("align"))

    @classmethod
    def from_run_config(cls, config: Mapping[str, Any], dataset: Dataset, *, run_id: str | None = None,
                        label: str = "") -> "ScoringSpec":
        """The spec of a run recorded before runs recorded their spec, from what its config says (method, requested
        config, criteria, limit, pairs, parse mode). Such a run's document sample was not recorded: a run scored on
        sampled documents is read as one on the whole dataset. ``run_id`` and ``label``: the run's own now (an
        import may have renamed or relabelled it), over the recorded ones."""
        if config.get("spec"):
            spec = cls.from_dict(config["spec"], dataset)
            return dataclasses.replace(spec, run_id=run_id or spec.run_id, label=label or spec.label)
        crit = {dim: {k: v for k, v in c.items()} for dim, c in (config.get("criteria") or {}).items()}
        return cls.from_dict({"version": SPEC_VERSION, "dataset_id": dataset.id, "documents": None,
                              "method": config["method"], "dimensions": list(crit), "criteria": crit,
                              "config": config.get("requested_config") or config.get("method_config"),
                              "limit": config.get("limit"), "pairs": pairs_from_described(config.get("pairs")),
                              "parse_mode": config.get("parse_mode", "robust"), "label": label, "run_id": run_id},
                             dataset)


@dataclass
class EngineOptions:
    """How to reach the judge: the endpoint (or replicas serving one model), the API key (None: the endpoint's
    environment variable, read by the client), concurrency, request ordering, retries and the per-attempt timeout."""

    endpoint: Any  # Endpoint | list[Endpoint]
    api_key: str | None = None
    concurrency: int = 16
    schedule: str = "prefix"
    max_retries: int = 6
    timeout_s: float = 60.0
    reprobe: bool = False
    capabilities: Capabilities | None = None

    @property
    def first_endpoint(self) -> Any:
        return self.endpoint[0] if isinstance(self.endpoint, (list, tuple)) else self.endpoint


__all__ = ["ScoringSpec", "EngineOptions", "SpecError", "SPEC_VERSION", "pairs_plain", "pairs_from_described"]
