"""promptfoo results (``promptfoo eval -o results.json``) as a dataset and judge runs.

The layout read (promptfoo's JSON output, https://www.promptfoo.dev/docs/configuration/outputs): the top level holds
``results``, whose ``results`` list (or, in an exported eval, the top-level ``results`` list itself) has one entry per
test and prompt (and provider): ``testIdx``, ``promptIdx``, ``testCase.vars`` (or ``vars``), ``prompt.raw`` /
``prompt.label``, ``provider.id``, ``response.output``, and ``gradingResult.componentResults``: one result per
assertion, each with ``score``, ``reason`` and its ``assertion`` (``type``, ``metric``, ``provider``).

- An item per entry: the test is the document, the provider and prompt label the system, the test's vars item
  attributes (columns ``var_<name>``).
- Each graded assertion (``llm-rubric``, ``g-eval``, ``model-graded-closedqa``, ``factuality``, ``select-best``)
  is a judge's score on the dimension its ``metric`` names (else its type); its grading provider is the judge's
  model (promptfoo's default grader when none is named). One run per dimension and grading provider.
- An assertion of type ``human`` (the rating the web viewer writes) is the human rating of the dimension its
  ``metric`` names, or of the only graded dimension.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from evalcore.identity import upload_id
from evalcore.importers.judge_scores import run_id_for
from evalcore.model import JUDGMENT_COLUMNS, STATUS_FAILED, STATUS_OK, Dataset, Dimension, Run

if TYPE_CHECKING:
    from evalcore.importers.api import ImportResult

GRADED = ("llm-rubric", "g-eval", "model-graded-closedqa", "factuality", "select-best")
DEFAULT_GRADER = "promptfoo default grader"


class PromptfooError(ValueError):
    """A results file that lacks what is needed: one message naming the field."""


def entries(doc: object, name: str) -> list[dict]:
    """The per-test results of a promptfoo results document."""
    res = doc.get("results") if isinstance(doc, dict) else None
    rows = res.get("results") if isinstance(res, dict) else res
    if not isinstance(rows, list) or not rows:
        raise PromptfooError(f"{name}: no 'results.results' list of test results; write the file with "
                             "promptfoo eval -o results.json")
    return rows


def looks_like_results(data: bytes) -> bool:
    head = data[:4096]
    return head.lstrip().startswith(b"{") and b'"results"' in head and (b'"evalId"' in head or b'"testIdx"' in data)


def _provider(value: object) -> str:
    if isinstance(value, dict):
        return str(value.get("id") or value.get("label") or DEFAULT_GRADER)
    return str(value) if value else DEFAULT_GRADER


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _rows(rows: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """items, judge scores (dimension, grader, value, reason), human ratings (dimension or "", value)."""
    items, judged, human = [], [], []
    for r in rows:
        test, prompt = r.get("testIdx", 0), r.get("promptIdx", 0)
        provider = _provider(r.get("provider"))
        item = f"test{test}/prompt{prompt}/{provider}"
        vars_ = (r.get("testCase") or {}).get("vars") or r.get("vars") or {}
        label = (r.get("prompt") or {}).get("label") or f"prompt {prompt}"
        items.append({"item_id": item, "doc_id": f"test{test}", "system_id": f"{provider} | {label}",
                      "output": _text((r.get("response") or {}).get("output", "")),
                      "source": (r.get("prompt") or {}).get("raw", ""),
                      **{f"var_{k}": _text(v) for k, v in vars_.items()}})
        for c in (r.get("gradingResult") or {}).get("componentResults") or []:
            a = c.get("assertion") or {}
            kind = a.get("type", "")
            if kind in GRADED:
                judged.append({"item_id": item, "dimension": a.get("metric") or kind, "grader": _provider(
                    a.get("provider")), "score": c.get("score"), "reason": c.get("reason") or ""})
            elif kind == "human":
                human.append({"item_id": item, "dimension": a.get("metric") or "", "score": c.get("score")})
    return items, judged, human


def _judgments(frame: pd.DataFrame) -> pd.DataFrame:
    value = pd.to_numeric(frame["score"], errors="coerce").astype(float)
    ok = value.map(math.isfinite)
    return pd.DataFrame({"item_id": frame["item_id"], "dimension": frame["dimension"], "raw": frame["reason"],
                         "value": value.where(ok), "status": ok.map({True: STATUS_OK, False: STATUS_FAILED}),
                         "reason": ok.map({True: "", False: "the assertion's score is not a number"}),
                         "estimator": "score as given"})[JUDGMENT_COLUMNS]


def import_results(path: str | Path, *, name: str | None = None, owner: str | None = None,
                   filename: str | None = None) -> ImportResult:
    """A promptfoo results file as an :class:`evalcore.importers.ImportResult`."""
    path = Path(path)
    return import_bytes(path.read_bytes(), filename or path.name, name=name, owner=owner)


def import_bytes(data: bytes, fname: str, *, name: str | None = None, owner: str | None = None) -> ImportResult:
    """:func:`import_results` of a file's bytes (an upload)."""
    from evalcore.importers.api import ImportResult

    items, judged, human = _rows(entries(json.loads(data), fname))
    if not judged:
        raise PromptfooError(f"{fname}: no graded assertion ({', '.join(GRADED)}) in 'gradingResult."
                             "componentResults'; add one to the tests, or import the outputs as a table")
    judged_f = pd.DataFrame(judged)
    dims = list(dict.fromkeys(judged_f["dimension"]))
    human_f = pd.DataFrame(human, columns=["item_id", "dimension", "score"])
    if (human_f["dimension"] == "").any():
        if len(dims) > 1:
            raise PromptfooError(f"{fname}: a 'human' assertion names no metric and the graded assertions rate "
                                 f"{', '.join(dims)}; give the human ratings the metric they rate")
        human_f.loc[human_f["dimension"] == "", "dimension"] = dims[0]
    human_f["score"] = pd.to_numeric(human_f["score"], errors="coerce")
    human_f = human_f.dropna().groupby(["item_id", "dimension"], as_index=False, sort=False)["score"].mean()
    dataset_id = upload_id(hashlib.sha256(data).hexdigest(), owner)
    frame = pd.DataFrame(items).drop_duplicates("item_id")
    values = pd.concat([pd.to_numeric(judged_f["score"], errors="coerce"), human_f["score"]]).dropna()
    lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    ds = Dataset(id=dataset_id, name=name or Path(fname).stem, task="promptfoo eval",
                 dimensions=[Dimension(d, lo, hi if hi > lo else lo + 1) for d in dims],
                 documents=frame.groupby("doc_id", as_index=False, sort=False)["source"].first().assign(
                     references=lambda f: [[] for _ in range(len(f))], context=""),
                 items=frame.drop(columns="source"), human_scores=human_f,
                 description=f"Imported from the promptfoo results {fname}: {len(frame)} outputs",
                 origin=f"promptfoo results {fname} (sha256 {hashlib.sha256(data).hexdigest()})",
                 meta={"source_file": fname, "format": "promptfoo"})
    runs = [Run(run_id=run_id_for(dataset_id, f"{grader}-{dim}"), dataset_id=dataset_id, method="promptfoo",
                model=grader, label=f"{grader} ({dim})", judgments=_judgments(g),
                config={"imported_from": fname, "kind": "promptfoo", "model": grader})
            for (dim, grader), g in judged_f.groupby(["dimension", "grader"], sort=False)]
    return ImportResult(ds, runs, [])
