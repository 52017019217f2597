"""What to score and how to reach the judge, as two values: :class:`ScoringSpec` and :class:`EngineOptions` (defined in
:mod:`evalcore.spec`, below the engine and the bundles; re-exported here), and the one rule that fills a spec.

The command line (``python -m evalcore score``), the Score page (through :mod:`evalcore.judge.job`) and a batch
submission build the same two values and hand them to the engine (``runner.score_dataset``, ``runner.estimate``,
``batch.submit``: each takes ``(spec, options)`` and the call's own store, progress and cancel), so a run's prompts
depend only on the spec, never on which door it came through. The spec's defaults (:func:`default_spec`) come from
ONE rule:

* :func:`default_criteria`: a saved criteria version only when chosen: named (``version``, the CLI's
  ``--criteria-version``) or the newest one the signed-in user saved themself (``owner``); else the method's paper
  preset for the dataset (Shen et al.'s exact definitions for RTS/MCQ/H2H on SummEval; Chen et al.'s for FED), else
  one written from the dataset's own description of the dimension, on its scale (a 0-1 share or a binary label
  gives the judge no usable rating scale: such texts are rated 1-5, as G-Eval rated them). Never the newest version
  anyone saved: on a shared server that made one user's prompt (or steps an attacker's judge wrote) everyone's
  default (issue 21, item 8). An overall preference the humans voted on between two answers of chat or
  instruction-following data gets MT-Bench's criterion (``presets.chat_criteria``), not the dataset's description
  of its votes;
* :func:`method_config`: the method's config adapted to the dataset (the paper's text labels, and its own
  per-dimension prompts where it published them: ``evalcore.methods.presets.config_for``), with any overrides.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from evalcore.model import Dataset
from evalcore.spec import EngineOptions, ScoringSpec, SpecError
from evalcore.types import Criteria

if TYPE_CHECKING:
    from evalcore.methods.base import Method, PromptLabels
    from evalcore.store import Store


def dataset_criteria(dataset: Dataset, dimension: str) -> Criteria:
    """Criteria written from the dataset's own description of ``dimension`` (no paper preset, nothing saved)."""
    d = dataset.dimension(dimension)
    lo, hi = int(d.scale_min), int(d.scale_max)
    definition = f"{dimension.replace('_', ' ').title()}: {d.description or dimension}"
    if d.is_categorical and d.labels:
        # a labelled dimension is rated by its codes (0..K-1, evalcore.model), each named in the prompt, so that the
        # judge's value is a category (a 1-5 rating of a yes/no question would all round to "yes")
        codes = "; ".join(f"{i} = {name}" for i, name in enumerate(d.labels))
        return Criteria(dimension=dimension,
                        task_introduction=f"You will be given one {dataset.task} output. Your task is to label it "
                                          f"on one metric.",
                        definition=f"{definition} Answer with the number of the label ({codes}).",
                        scale_min=lo, scale_max=hi)
    if hi - lo < 2:
        # a human score that is a share or a binary label (zhang_pairs: preference share 0-1) gives the judge no
        # usable rating scale; G-Eval rated such texts 1-5 (000 Sec. 4) and rank correlations do not mind
        lo, hi = 1, 5
    return Criteria(dimension=dimension,
                    task_introduction=f"You will be given one {dataset.task} output. Your task is to rate it on one "
                                      f"metric.",
                    definition=definition, scale_min=lo, scale_max=hi)


def default_criteria(dataset: Dataset, dimension: str, method: str, store: Store | None = None, *,
                     version: str | None = None, owner: str | None = None) -> Criteria:
    """The criteria a run of ``method`` on ``dimension`` uses unless told otherwise (see the module docstring).
    ``store`` None: the saved versions are not looked at; ``version``: that saved version (hash or prefix);
    ``owner``: the signed-in user, whose own newest saved version is their default."""
    from evalcore.methods import presets

    saved = None
    if store is not None and version is not None:
        saved = store.load_criteria(dataset.id, dimension, version)
    elif store is not None and owner:
        saved = store.load_criteria(dataset.id, dimension, owner=owner)
    if saved is not None:
        return saved
    preset = presets.criteria_for(method, dataset.id, dimension)
    if preset is None:  # an overall preference voted on chat data: MT-Bench's criterion, not the data's description
        voted = not dataset.preferences.empty and bool((dataset.preferences["dimension"] == dimension).any())
        preset = presets.chat_criteria(dataset.id, dataset.task, dimension, voted)
    return preset if preset is not None else dataset_criteria(dataset, dimension)


def method_config(method: str | Method, dataset: Dataset, overrides: dict[str, Any] | None = None) -> PromptLabels:
    """A method's config for a dataset: the paper's labels ("Article"/"Summary", ...) and, where the paper published
    them for this dataset, its own prompts; ``overrides`` (field -> value, the CLI's ``--config``) on top."""
    from evalcore.judge import runner  # the engine's name -> Method lookup (tests stand their own methods in there)
    from evalcore.methods import METHODS, presets

    m = runner.method_of(method)
    if isinstance(method, str) and method in METHODS:
        config = presets.config_for(method, dataset.id, task=dataset.task, dimensions=dataset.dimension_names)
    else:  # a method object, or a name only the engine knows: its own default
        config = m.default_config()
    if not overrides:
        return config
    loader = getattr(m, "load_config", None)  # JSON lists back to the config's tuples
    if loader is None:
        return dataclasses.replace(config, **overrides)
    return loader({**dataclasses.asdict(config), **overrides})


def default_spec(dataset: Dataset, method: str, dimensions: list[str] | None = None, *, store: Store | None = None,
                 criteria_versions: dict[str, str] | None = None, config_overrides: dict[str, Any] | None = None,
                 limit: int | None = None, pairs: object = None, parse_mode: str = "robust", label: str = "",
                 run_id: str | None = None, documents: tuple[str, ...] | None = None, owner: str | None = None,
                 reasoning_effort: str | None = None, max_completion_tokens: int | None = None, draws: int = 1,
                 align: dict[str, str] | None = None) -> ScoringSpec:
    """The spec with the one default rule's criteria and config (see the module docstring); the other arguments are
    the spec's fields of the same names (``pairs``: as ``ScoringSpec.pairs`` takes it)."""
    dims = list(dimensions or dataset.dimension_names)
    versions = criteria_versions or {}
    criteria = {d: default_criteria(dataset, d, method, store, version=versions.get(d)) for d in dims}
    return ScoringSpec(dataset, method, dims, criteria, method_config(method, dataset, config_overrides), limit=limit,
                       pairs=pairs, parse_mode=parse_mode, label=label, run_id=run_id, documents=documents,
                       owner=owner, reasoning_effort=reasoning_effort, max_completion_tokens=max_completion_tokens,
                       draws=draws, align=align)


def recorded_spec(run_id: str, store: Store, dataset: Dataset | None = None) -> ScoringSpec:
    """The spec a stored run was scored with: as the engine recorded it (a bundle carries it, an import restores
    it), else, for a run recorded before runs recorded their spec, as its config describes it. Scoring it again (a
    resume) sends the run's own requests. ``dataset``: the run's whole dataset, when the caller holds it."""
    row = store.run_row(run_id)  # KeyError naming the run and the store when there is none
    if dataset is None:
        from evalcore import runs

        dataset = runs.get_dataset(row["dataset_id"], store, with_labels=False)
    return ScoringSpec.from_run_config(row["config"], dataset, run_id=run_id, label=row.get("label") or "")


__all__ = ["ScoringSpec", "EngineOptions", "SpecError", "default_spec", "recorded_spec", "default_criteria",
           "dataset_criteria", "method_config"]
