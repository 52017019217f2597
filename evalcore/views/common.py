"""What every page view shares: which runs a dataset opens on, how a run is named (evalcore.analyses.common), one
colour per run."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from evalcore.analyses.common import frames_for, run_label, run_names  # noqa: F401  (how runs are named)
from evalcore.model import Run

# Which bundled runs the app opens on (the issue: SummEval with Shen et al.'s GPT-4 and ChatGPT RTS judgments).
DEFAULT_DATASET = "summeval"
DEFAULT_RUNS = ("summeval/shen-gpt-4-0314-rts", "summeval/shen-gpt-3.5-turbo-0301-rts")


def default_run_ids(dataset_id: str, available: list[str]) -> list[str]:
    """The runs preselected when a dataset opens: Shen's GPT-4 and ChatGPT RTS runs on SummEval, otherwise the
    first run there is (so every analysis page has something to show)."""
    if dataset_id == DEFAULT_DATASET:
        chosen = [r for r in DEFAULT_RUNS if r in available]
        if chosen:
            return chosen
    return available[:1]


# One colour per run in every chart of a page and of the report. The palette is Plotly's default (its second pink,
# #FF97FF, too close to #FF6692, replaced by brown: issue 18.10) followed by darker hues chosen so that no two
# colours share a hue (within 0.04) at a similar lightness (within 0.12), so a dataset's runs (SummEval ships ten)
# get distinct colours; the human ratings are drawn in
# HUMAN_COLOR, which no run gets.
RUN_PALETTE = (
    "#636EFA", "#EF553B", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880", "#8C564B", "#FECB52",
    "#1F77B4", "#BCBD22", "#2CA02C", "#7F3C8D", "#000080", "#808000",
)
HUMAN_COLOR = "#555555"


def run_colors(runs: Iterable[Run | str]) -> dict[str, str]:
    """{run_id: colour}: the palette taken in turn, published runs first (by id), then local runs in the order they
    were created, so a run scored later takes the next colour and never shifts the others'.

    Pass every run of the dataset (the sidebar's index), not just the selected ones: a run then keeps its colour
    whichever others are selected, on every page and in the report. Keyed by id; ``label_colors`` keys the same
    colours by the run labels that tables and legends carry. Run ids alone (strings) are taken as published."""
    def order(r: Run | str) -> tuple[str, str]:
        if isinstance(r, str):
            return "", r
        return str(getattr(r, "created_at", "") or ""), r.run_id

    ids = list(dict.fromkeys(order(r)[1] for r in sorted(runs, key=order)))
    return {rid: RUN_PALETTE[i % len(RUN_PALETTE)] for i, rid in enumerate(ids)}


def label_colors(runs: Sequence[Run]) -> dict[str, str]:
    """{run label: colour} for the runs given (Run objects), with the colours of ``run_colors``."""
    by_id = run_colors(runs)
    return {run_label(r): by_id[r.run_id] for r in runs}
