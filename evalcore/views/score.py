"""Score page: what a run failed on, and how a finished run went (the command line says the same)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from evalcore.model import STATUS_OK, Dataset, Run


def failures_table(run: Run) -> pd.DataFrame:
    """The judgments (or comparisons) whose reply could not be read, with the raw reply and the reason."""
    if not run.judgments.empty:
        j = run.judgments[run.judgments["status"] != STATUS_OK]
        return j[["item_id", "dimension", "reason", "raw"]].reset_index(drop=True)
    if not run.comparisons.empty:
        c = run.comparisons[run.comparisons["status"] != STATUS_OK]
        return c[["pair_id", "dimension", "order", "reason", "raw"]].reset_index(drop=True)
    return pd.DataFrame(columns=["item_id", "dimension", "reason", "raw"])


@dataclass(frozen=True)
class RunOutcome:
    """How a finished run went: ``level`` "success" (every judgment scored), "warning" (some failed) or "error"
    (none, or fewer than half, scored: the run says little), and the sentence that says it."""

    level: str
    text: str
    scored: int
    total: int


def default_method(dataset: Dataset) -> str:
    """The method the Score page opens on for a dataset. Humans who voted on pairs are compared with a pairwise judge:
    on summaries Shen et al.'s head-to-head (``h2h``, 003: two summaries of one article), on chat and instruction
    following MT-Bench's judge (``mtbench``, Zheng et al. 2023: two assistants' answers to one question); per-item
    ratings with G-Eval (``geval``, 000), the first method."""
    from evalcore.methods import presets

    if dataset.preferences.empty:
        return "geval"
    return "h2h" if presets.task_kind(dataset.id, dataset.task) == "summarization" else "mtbench"


FEW = 0.5  # below this share of judgments scored, a run is reported as a failure, with its commonest reason


def run_outcome(run: Run | None) -> RunOutcome:
    """How many items a finished run scored out of how many; when none or few, the commonest failure reason."""
    frame, unit = _judged(run)
    total = len(frame)
    ok = int((frame["status"] == STATUS_OK).sum()) if total else 0
    if total == 0:
        return RunOutcome("error", "Nothing was scored: the run holds no judgment.", 0, 0)
    text = f"{ok:,} of {total:,} {unit} scored"
    if ok == total:
        return RunOutcome("success", text + ".", ok, total)
    reasons = frame.loc[frame["status"] != STATUS_OK, "reason"].fillna("").astype(str).str.strip()
    reasons = reasons[reasons != ""]
    failed = total - ok
    why = ""
    if len(reasons):
        top = reasons.value_counts()
        why = f" Commonest reason ({int(top.iloc[0]):,} of {failed:,} failures): {top.index[0]}"
        why += "" if why.endswith(".") else "."
    if ok / total < FEW:
        head = "No item was scored" if ok == 0 else f"Only {ok:,} of {total:,} {unit} were scored"
        return RunOutcome("error", f"{head}: {failed:,} of {total:,} {unit} failed.{why} The failures and their "
                                   "raw replies are listed below.", ok, total)
    return RunOutcome("warning", f"{text}; {failed:,} failed.{why}", ok, total)


def _judged(run: Run | None) -> tuple[pd.DataFrame, str]:
    """The run's judgments (or comparisons) and what one of them is called."""
    if run is None:
        return pd.DataFrame(columns=["status", "reason"]), "items"
    if not run.judgments.empty:
        j = run.judgments
        return j, ("items" if j["dimension"].nunique() <= 1 else "item-dimension judgments")
    if not run.comparisons.empty:
        return run.comparisons, "pairwise verdicts"
    return pd.DataFrame(columns=["status", "reason"]), "items"


_EXCEPTION_NAME = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning)\s*:\s*")


def plain_error(error: BaseException | str | None) -> str:
    """An error as a reader is told it: its message without Python's class name ("ValueError: ..." reads as a
    crash); the class name in words only when the message is empty."""
    if error is None:
        return ""
    if isinstance(error, BaseException):
        text = str(error).strip()
        return text or f"unexpected {type(error).__name__}"
    return _EXCEPTION_NAME.sub("", str(error), count=1)
