"""Inspect AI logs (``.eval`` and ``.json``) as a dataset and a judge run, read with inspect_ai's own
``read_eval_log`` (the format's owner: its layout changes with its versions, its reader follows them).

What is read, per sample of the log:

- an item per sample id; the log's epochs are the judge's draws of that item (``Run.draws``), the judgment their
  aggregate (``evalcore.model.aggregate_draws``);
- the judge's score per scorer (a dimension named as the scorer): a number as it is, Inspect's letter grades
  (C / P / I ...) as inspect_ai's own ``value_to_float`` maps them; a value that maps to no number is a failed
  judgment with its reason, never a 0. A score that people edited keeps the judge's value first in its history;
- the judge: ``model_roles["grader"]`` when the task names one, else the evaluated model (a task whose model is the
  judge); the raw reply is the score's explanation, else the sample's output;
- the human rating (``human``): ``target`` (the sample's target), ``metadata:KEY`` (a sample metadata value), or
  ``edits`` (a score's edits with a provenance author, as ``inspect_ai.log.edit_score`` writes them: each author an
  annotator, the item's human score their mean);
- documents and systems from the sample metadata keys named (``document_key``, ``system_key``; else each sample is
  its own document and the evaluated model the system); :func:`metadata_keys` proposes them.

A log that lacks what is needed raises one :class:`InspectLogError` naming the field and what to pass instead.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from evalcore.identity import upload_id
from evalcore.importers.judge_scores import run_id_for
from evalcore.model import (
    ANNOTATION_COLUMNS,
    DRAW_COLUMNS,
    JUDGMENT_COLUMNS,
    STATUS_FAILED,
    STATUS_OK,
    Dataset,
    Dimension,
    Run,
    aggregate_draws,
)

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.scorer import Score

    from evalcore.importers.api import ImportResult

T = TypeVar("T")

METHOD = "inspect"
EXTENSIONS = (".eval", ".json")
HUMAN_SOURCES = ("target", "metadata:KEY", "edits")
INSTALL = "pip install inspect_ai"


class InspectLogError(ValueError):
    """A log that cannot be imported as asked: one message naming the field and what to pass instead."""


@dataclass
class Sample:
    """What one sample of one epoch gives: its keys and texts, the judge's value per scorer, the human's."""

    item_id: str
    epoch: int
    doc_id: str
    system_id: str
    output: str
    source: str
    judge: dict[str, tuple[float, str, str]]  # scorer -> (value or NaN, raw reply, reason when NaN)
    human: dict[str, list[tuple[str, float]]]  # scorer -> [(annotator, value)]


def _inspect() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError:
        raise InspectLogError(f"reading Inspect logs needs inspect_ai, which is not installed: {INSTALL}") from None
    return log


def read_log(path: str | Path) -> EvalLog:
    """The log as inspect_ai reads it (an ``EvalLog``)."""
    log = _inspect().read_eval_log(str(path))
    if not log.samples:
        raise InspectLogError(f"{Path(path).name}: the log holds no samples (status {log.status!r}); import a log "
                              "written with its samples (inspect eval --log-samples)")
    return log


def metadata_keys(log: EvalLog) -> list[str]:
    """The sample metadata keys present in the log, the candidates for ``document_key`` and ``system_key``."""
    return list(dict.fromkeys(k for s in log.samples or [] for k in (s.metadata or {})))


def judge_model(log: EvalLog) -> str:
    """The grader role's model when the task names one, else the evaluated model."""
    roles = getattr(log.eval, "model_roles", None) or {}
    grader = roles.get("grader")
    return str(grader.model) if grader is not None else str(log.eval.model)


def to_number(value: object) -> tuple[float, str]:
    """A score's value as a number, as inspect_ai's ``value_to_float`` maps it (C -> 1, P -> 0.5, I and N -> 0,
    yes / true / no / false, numbers and numeric strings), and "" or why it is no number. ``value_to_float`` gives 0
    with a logged warning for what it cannot read: that is a failed judgment here, never a 0."""
    from inspect_ai.scorer import value_to_float

    if not (isinstance(value, int | float | bool) or (
            isinstance(value, str) and (value in ("C", "P", "I", "N") or value.lower() in ("yes", "true", "no", "false")
                                        or _numeric(value)))):
        return math.nan, f"score {value!r} is not a number or a grade inspect_ai knows (C, P, I, N, yes, no)"
    out = float(value_to_float()(value))
    return (out, "") if math.isfinite(out) else (math.nan, f"score {value!r} is not a finite number")


def _numeric(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # chat messages or a list of targets
        return "\n".join(_text(getattr(m, "text", m)) for m in value)
    return str(value)


def _judge_value(score: Score) -> tuple[object, str]:
    """The judge's own value and explanation: the first history entry without a provenance when people edited it."""
    history = list(getattr(score, "history", None) or [])
    first = next((h for h in history if getattr(h, "provenance", None) is None), None)
    if history and first is not None:
        return first.value, (first.explanation or score.explanation or "")
    return score.value, score.explanation or ""


def _edits(score: Score) -> list[tuple[str, float]]:
    """The annotators' values: each author's last edit (its provenance's author)."""
    out: dict[str, float] = {}
    for h in getattr(score, "history", None) or []:
        prov = getattr(h, "provenance", None)
        if prov is not None and getattr(prov, "author", None) and h.value != "UNCHANGED":
            value, _ = to_number(h.value)
            if not math.isnan(value):
                out[str(prov.author)] = value
    return list(out.items())


def _human(sample: EvalSample, score: Score, human: str | None) -> list[tuple[str, float]]:
    if not human:
        return []
    if human == "edits":
        return _edits(score)
    if human == "target":
        value, _ = to_number(_text(sample.target).strip())
        return [] if math.isnan(value) else [("target", value)]
    key = human.split(":", 1)[1]
    raw = (sample.metadata or {}).get(key)
    value, _ = (math.nan, "") if raw is None else to_number(raw)
    return [] if math.isnan(value) else [(key, value)]


def _scores(sample: EvalSample, human: str | None
            ) -> tuple[dict[str, tuple[float, str, str]], dict[str, list[tuple[str, float]]]]:
    judge, humans = {}, {}
    for name, score in (sample.scores or {}).items():
        value, explanation = _judge_value(score)
        reply = explanation or (sample.output.completion if sample.output else "")
        parts = value.items() if isinstance(value, dict) else [("", value)]
        for key, v in parts:
            dim = f"{name}/{key}" if key else name
            number, why = to_number(v)
            judge[dim] = (number, reply, why)
            humans[dim] = _human(sample, score, human) if not key else []
    return judge, humans


def samples(log: EvalLog, *, human: str | None, document_key: str | None, system_key: str | None) -> list[Sample]:
    """One :class:`Sample` per sample and epoch of the log."""
    out = []
    for s in log.samples or []:
        meta = s.metadata or {}
        for key, what in ((document_key, "--document-key"), (system_key, "--system-key")):
            if key and key not in meta:
                raise InspectLogError(f"sample {s.id!r} (epoch {s.epoch}) has no metadata key {key!r} for {what}; the "
                                      f"keys are {', '.join(map(repr, metadata_keys(log))) or 'none'}")
        judge, humans = _scores(s, human)
        out.append(Sample(
            item_id=str(s.id), epoch=int(s.epoch), doc_id=str(meta[document_key]) if document_key else str(s.id),
            system_id=str(meta[system_key]) if system_key else str(log.eval.model),
            output=s.output.completion if s.output else "", source=_text(s.input), judge=judge, human=humans))
    return out


def _check(log: EvalLog, rows: list[Sample], human: str | None, name: str) -> None:
    if not any(r.judge for r in rows):
        raise InspectLogError(f"{name}: no sample has a score (field 'scores'); score the log first "
                              "(inspect score LOG) or import a log written with a scorer")
    if human and not any(v for r in rows for v in r.human.values()):
        hint = {"edits": "no score was edited with a provenance author (inspect_ai.log.edit_score)",
                "target": "no sample's target is a number or a grade"}.get(human, f"no sample has metadata {human!r}")
        keys = metadata_keys(log)
        raise InspectLogError(f"{name}: --human {human}: {hint}; pass --human target, edits or metadata:KEY"
                              + (f" (metadata keys: {', '.join(keys)})" if keys else ""))


def _human_frames(rows: list[Sample]) -> tuple[pd.DataFrame, pd.DataFrame]:
    ann = pd.DataFrame([(r.item_id, dim, who, "annotators", v) for r in rows for dim, pairs in r.human.items()
                        for who, v in pairs], columns=ANNOTATION_COLUMNS)
    # an annotator's rating of an item is the mean over the epochs they rated; the item's, the annotators' mean
    ann = ann.groupby(["item_id", "dimension", "annotator", "group"], sort=False, as_index=False)["value"].mean()
    human = ann.groupby(["item_id", "dimension"], sort=False, as_index=False)["value"].mean()
    return human.rename(columns={"value": "score"}), ann


def _draws(rows: list[Sample]) -> pd.DataFrame:
    epochs = sorted({r.epoch for r in rows})
    order = {e: i for i, e in enumerate(epochs)}
    return pd.DataFrame([(r.item_id, dim, order[r.epoch], raw, value, STATUS_FAILED if why else STATUS_OK, why)
                         for r in rows for dim, (value, raw, why) in r.judge.items()], columns=DRAW_COLUMNS)


def _dimensions(draws: pd.DataFrame, human: pd.DataFrame) -> list[Dimension]:
    out = []
    for dim in pd.unique(draws["dimension"]):
        values = pd.concat([pd.to_numeric(draws.loc[draws["dimension"] == dim, "value"]),
                            human.loc[human["dimension"] == dim, "score"]]).dropna()
        lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
        out.append(Dimension(str(dim), lo, hi if hi > lo else lo + 1, description=f"Inspect scorer {dim}"))
    return out


def _judgments(draws: pd.DataFrame) -> pd.DataFrame:
    agg = aggregate_draws(draws)
    first = draws[draws["draw"] == draws.groupby(["item_id", "dimension"])["draw"].transform("min")]
    out = agg.merge(first[["item_id", "dimension", "raw", "reason"]], on=["item_id", "dimension"], how="left")
    out["reason"] = out["reason"].where(out["status"] != STATUS_OK, "")
    out["estimator"] = "score as given" if draws["draw"].max() == 0 else "mean of the epochs"
    return out[JUDGMENT_COLUMNS]


def import_log(path: str | Path, *, human: str | None = None, name: str | None = None,
               document_key: str | None = None, system_key: str | None = None, owner: str | None = None,
               filename: str | None = None) -> ImportResult:
    """A log as an :class:`evalcore.importers.ImportResult` (a dataset, the judge's run), ready for ``save_import``.
    ``filename``: the name the user gave the file (an upload kept under another path)."""
    from evalcore.importers.api import ImportResult

    _check_human(human)
    path = Path(path)
    fname = filename or path.name
    log = read_log(path)
    rows = samples(log, human=human, document_key=document_key, system_key=system_key)
    _check(log, rows, human, fname)
    data = path.read_bytes()
    options = json.dumps({"human": human, "document_key": document_key, "system_key": system_key}, sort_keys=True)
    digest = hashlib.sha256(data + options.encode("utf-8")).hexdigest()
    dataset_id = upload_id(digest, owner)
    human_scores, annotations = _human_frames(rows)
    draws = _draws(rows)
    items = pd.DataFrame(_unique((r.item_id, r.doc_id, r.system_id, r.output) for r in rows),
                         columns=["item_id", "doc_id", "system_id", "output"])
    documents = pd.DataFrame(_unique((r.doc_id, r.source, [], "") for r in rows),
                             columns=["doc_id", "source", "references", "context"])
    ds = Dataset(id=dataset_id, name=name or Path(fname).stem, task=f"Inspect task {log.eval.task}",
                 dimensions=_dimensions(draws, human_scores), documents=documents, items=items,
                 human_scores=human_scores, annotations=annotations if human == "edits" else annotations.iloc[0:0],
                 description=f"Imported from the Inspect log {fname}: {len(items)} samples, "
                             f"{draws['draw'].max() + 1} epochs",
                 origin=f"Inspect log {fname} (sha256 {hashlib.sha256(data).hexdigest()})",
                 meta={"source_file": fname, "format": "inspect", "human_source": human or "",
                       "metadata_keys": metadata_keys(log)})
    return ImportResult(ds, [_run(log, draws, dataset_id, fname, data)], [])


def _run(log: EvalLog, draws: pd.DataFrame, dataset_id: str, fname: str, data: bytes) -> Run:
    model = judge_model(log)
    run = Run(run_id=run_id_for(dataset_id, model), dataset_id=dataset_id, method=METHOD, model=model,
              label=f"{model} ({log.eval.task})", judgments=_judgments(draws),
              config={"imported_from": fname, "kind": "inspect", "sha256": hashlib.sha256(data).hexdigest(),
                      "model": model, "extra": {"task": log.eval.task, "evaluated_model": str(log.eval.model)}},
              created_at=str(log.eval.created or ""))
    if draws["draw"].max() > 0:  # a run of one draw has no draws table
        run.draws = draws
    return run


def _unique(rows: Iterable[tuple]) -> list[tuple]:
    seen, out = set(), []
    for r in rows:
        if r[0] not in seen:
            seen.add(r[0])
            out.append(r)
    return out


def _check_human(human: str | None) -> None:
    if human and not (human in ("target", "edits") or (human.startswith("metadata:") and len(human) > 9)):
        raise InspectLogError(f"--human {human!r}: pass one of {', '.join(HUMAN_SOURCES)}")


# ------------------------------------------------------------------------------------------------ an upload's bytes


def looks_like_log(filename: str, data: bytes) -> bool:
    """An ``.eval`` file, or a ``.json`` file whose head holds an Inspect log's top-level keys."""
    low = filename.lower()
    if low.endswith(".eval"):
        return True
    head = data[:4096]
    return low.endswith(".json") and head.lstrip().startswith(b"{") and b'"eval"' in head and b'"version"' in head


def _with_file(data: bytes, filename: str, read: Callable[[Path], T]) -> T:
    """``read(path)`` on the upload's bytes written to a temporary file (inspect_ai reads logs from paths)."""
    import tempfile

    suffix = ".eval" if filename.lower().endswith(".eval") else ".json"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"upload{suffix}"
        path.write_bytes(data)
        return read(path)


@dataclass
class LogPreview:
    """What the upload form proposes: the metadata keys, the human sources the log offers, a table of samples."""

    keys: list[str]
    human_sources: list[str]
    samples: pd.DataFrame
    judge: str
    task: str


def preview_bytes(data: bytes, filename: str, rows: int = 20) -> LogPreview:
    """The Data page's preview of an uploaded log."""
    def read(path: Path) -> LogPreview:
        log = read_log(path)
        keys = metadata_keys(log)
        logged = log.samples or []  # read_log refuses a log without samples
        edited = any(_edits(sc) for s in logged for sc in (s.scores or {}).values())
        numeric = [k for k in keys if any(not math.isnan(to_number((s.metadata or {}).get(k, ""))[0])
                                          for s in logged[:50])]
        sources = (["edits"] if edited else []) + [f"metadata:{k}" for k in numeric] + ["target"]
        table = pd.DataFrame([{"id": str(s.id), "epoch": s.epoch, "target": _text(s.target)[:80],
                               **{f"score: {n}": str(v.value)[:40] for n, v in (s.scores or {}).items()},
                               "output": (s.output.completion if s.output else "")[:120]}
                              for s in logged[:rows]])
        return LogPreview(keys, sources, table, judge_model(log), str(log.eval.task))
    return _with_file(data, filename, read)


def import_bytes(data: bytes, filename: str, **options: str | None) -> ImportResult:
    """:func:`import_log` of an upload's bytes (``options``: human, name, document_key, system_key, owner)."""
    return _with_file(data, filename, lambda path: import_log(path, filename=filename, **options))
