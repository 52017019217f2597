"""Published rating sets whose records nest their ratings: UltraFeedback (openbmb/UltraFeedback, its dataset card:
one record per instruction, ``source, instruction, models, completions``; each completion ``{model, principle,
custom_system_prompt, response, annotations, fine-grained_score, overall_score, critique}`` and its ``annotations``
one entry per aspect, ``instruction_following``, ``honesty``, ``truthfulness``, ``helpfulness``, each ``{Rating,
Rationale}`` with Rating "1".."5" or "N/A").

Such a file is read as the flat table every ratings import takes: one row per completion (``doc_id`` the record's
number, ``instruction``, ``model``, ``response``, one column per aspect), so the roles are then guessed by name as for
any file (the instruction the source, the model the system, the response the output, each aspect a dimension). A
rating "N/A" is left blank (no rating), never a 0. UltraFeedback's ratings were written by GPT-4 following the
aspects' rubrics, not by people: the import says so.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

ULTRAFEEDBACK = "ultrafeedback"
ASPECTS = ("instruction_following", "honesty", "truthfulness", "helpfulness")
NOTE = ("UltraFeedback's layout: one row per completion, a column per aspect rating; its ratings were written by "
        "GPT-4 following the aspects' rubrics, not by people")


def _as_list(v: object) -> object:
    """A nested cell as Python values (the JSON readers keep a nested value as its JSON text)."""
    if isinstance(v, str) and v.lstrip().startswith(("[", "{")):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v.tolist() if isinstance(v, np.ndarray) else v


def is_ultrafeedback(frame: pd.DataFrame) -> bool:
    """Records with a ``completions`` list of objects each holding a ``response`` or ``annotations``."""
    if "completions" not in frame.columns or not len(frame):
        return False
    cells = [_as_list(v) for v in frame["completions"].head(20)]
    return any(isinstance(c, list) and c and all(isinstance(x, dict) and ("response" in x or "annotations" in x)
                                                 for x in c) for c in cells)


def _rating(v: object) -> float | None:
    rating: Any = v.get("Rating") if isinstance(v, dict) else v  # float() says whether it is a number
    try:
        x = float(rating)
    except (TypeError, ValueError):
        return None  # "N/A": no rating
    return x


def ultrafeedback_frame(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[int | str, str, str]]]:
    """(the flat table, problems as (record, field, message)): each field the format needs and a record lacks is
    named once, with what to give instead."""
    problems: list[tuple[int | str, str, str]] = []
    if "instruction" not in frame.columns:
        problems.append(("-", "instruction", "UltraFeedback's layout: no 'instruction' field (the prompt each "
                                             "record's completions answer): add it to every record"))
    rows: list[dict[str, object]] = []
    missing: dict[str, int | str] = {}  # field -> the first record lacking it
    for rec, cell in zip(frame.index, frame["completions"]):
        comps = _as_list(cell)
        if not isinstance(comps, list):
            missing.setdefault("completions", rec)
            continue
        for c in comps:
            for need in ("model", "response", "annotations"):
                if not isinstance(c, dict) or need not in c:
                    missing.setdefault(need, rec)
            ann = c.get("annotations") if isinstance(c, dict) else None
            ann = ann if isinstance(ann, dict) else {}
            rows.append({"doc_id": str(rec),
                         "instruction": frame.at[rec, "instruction"] if "instruction" in frame.columns else "",
                         "model": c.get("model", "") if isinstance(c, dict) else "",
                         "response": c.get("response", "") if isinstance(c, dict) else "",
                         **{a: _rating(ann.get(a)) for a in ASPECTS}})
    for need, rec in missing.items():
        problems.append((rec, f"completions.{need}", _MISSING[need]))
    out = pd.DataFrame(rows, columns=["doc_id", "instruction", "model", "response", *ASPECTS])
    out = out.dropna(axis=1, how="all")  # an aspect no completion rates is no dimension
    out.index = pd.Index(range(1, len(out) + 1), name="completion", dtype="int64")
    out.attrs["layout"] = ULTRAFEEDBACK
    out.attrs["notes"] = [NOTE]
    return out, problems


_MISSING = {
    "completions": "UltraFeedback's layout: 'completions' is not a list of completions in this record",
    "model": "UltraFeedback's layout: a completion has no 'model' (the system that wrote it): add it to each "
             "completion, or convert the file to a table with a system column",
    "response": "UltraFeedback's layout: a completion has no 'response' (the text rated): add it to each completion",
    "annotations": "UltraFeedback's layout: a completion has no 'annotations' (its per-aspect ratings, "
                   f"{', '.join(ASPECTS)}, each with a Rating): add them, or import a table with a column per "
                   "aspect",
}
