"""Score page: what a run failed on."""

from __future__ import annotations

import pandas as pd

from evalcore.model import STATUS_OK, Run


def failures_table(run: Run) -> pd.DataFrame:
    """The judgments (or comparisons) whose reply could not be read, with the raw reply and the reason."""
    if not run.judgments.empty:
        j = run.judgments[run.judgments["status"] != STATUS_OK]
        return j[["item_id", "dimension", "reason", "raw"]].reset_index(drop=True)
    if not run.comparisons.empty:
        c = run.comparisons[run.comparisons["status"] != STATUS_OK]
        return c[["pair_id", "dimension", "order", "reason", "raw"]].reset_index(drop=True)
    return pd.DataFrame(columns=["item_id", "dimension", "reason", "raw"])
