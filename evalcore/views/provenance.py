"""What a figure rests on, shown with it: each run's judge fingerprint (``evalcore.fingerprint``) on the Score page's
run details and in the exported report, with the hash of the human ratings the report's figures used. Two figures are
comparable only when these are equal, so they are shown in full (the short hash is the first 12 hex digits)."""

from __future__ import annotations

import json

import pandas as pd

from evalcore.fingerprint import fingerprint, labels_hash
from evalcore.model import Dataset, Run
from evalcore.views.blocks import Block, Expander, Note, Table

SHORT = 12  # hex digits of a hash shown where the full one would not fit; the full one is in meta --json


def _text(value: object) -> str:
    """A fingerprint part as one cell: a mapping as canonical JSON (keys sorted, the bytes the hash is taken of)."""
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False, default=str) if value \
            else "-"
    return str(value) if value not in (None, "") else "-"


def fingerprint_row(run: Run) -> dict[str, str]:
    """One run's fingerprint as a table row: every part, and its hash shortened."""
    fp = fingerprint(run)
    return {"run": run.run_id, "model": _text(fp["model"]), "reported model": _text(fp["reported_model"]),
            "endpoint": _text(fp["endpoint"]), "provider": _text(fp["provider"]), "method": _text(fp["method"]),
            "variant": _text(fp["variant"]), "prompt hash": _text(fp["prompt_hash"][:SHORT]),
            "parameters": _text(fp["parameters"]), "fingerprint": fp["hash"][:SHORT]}


def fingerprint_table(runs: list[Run]) -> pd.DataFrame:
    """The runs' fingerprints, a row each."""
    return pd.DataFrame([fingerprint_row(r) for r in runs])


def fingerprint_blocks(run: Run) -> list[Block]:
    """The Score page's run details: the judge's fingerprint, one part a row."""
    row = fingerprint_row(run)
    frame = pd.DataFrame({"part": list(row)[1:], "value": list(row.values())[1:]})
    return [Expander(f"Judge's fingerprint {row['fingerprint']}", (
        Table(frame, f"fingerprint {run.run_id}", "fingerprint", static=True),
        Note("Two runs are the same judge only when their fingerprints are equal: a prompt edit, another model or "
             "endpoint, or other parameters change it; a resumed run keeps it. `meta --json` gives the full hash.",
             "caption")))]


def provenance_section(dataset: Dataset, runs: list[Run], dimension: str):
    """The report's section: each run's fingerprint and the hash of the human ratings of ``dimension`` used."""
    from evalcore.views.html_report import ReportSection, ReportTable

    sec = ReportSection(title="What these figures rest on",
                        text=f"Human ratings of {dimension}: labels hash {labels_hash(dataset, [dimension])}.\n"
                             "A judge's fingerprint (model, reported model, endpoint, provider, method, variant, "
                             "prompt hash, parameters sent) changes with any of them; figures compare only when "
                             "fingerprints and labels hash are equal.")
    if runs:
        sec.tables.append(ReportTable("Judge fingerprints", fingerprint_table(runs)))
    return sec
