"""What one page hands the sidebar for the next script run: the only session-state keys two page modules share,
each written and read here.

The sidebar's dataset and runs pickers exist only once pages/_nav.py draws them, which is before the page runs: a
page that has just imported a dataset or finished a run cannot set them in the same run. It leaves the ids here, and
the sidebar takes them before drawing its pickers on the next run.
"""

from __future__ import annotations

import streamlit as st

_RUNS = "_pending_runs"
_DATASET = "_pending_dataset"
_REFUSAL_SAID = "_sign_in_refusal_said"


def open_runs(run_ids: list[str]) -> None:
    """These runs join the sidebar's selection on the next run (an import, a finished scoring run)."""
    st.session_state.setdefault(_RUNS, []).extend(run_ids)


def take_runs() -> list[str]:
    """The runs pages asked to open since the sidebar last looked (once: taken, they are gone)."""
    return list(st.session_state.pop(_RUNS, []))


def open_dataset(dataset_id: str) -> None:
    """The sidebar opens this dataset on the next run (an upload)."""
    st.session_state[_DATASET] = dataset_id


def take_dataset() -> str | None:
    return st.session_state.pop(_DATASET, None)


_LABEL_QUEUE = "_label_queue"


def queue_for_label(dataset_id: str, dimension: str, run_id: str, run_name: str, item_ids: list[str]) -> None:
    """Items the Label page offers as its queue (the items a run's judge abstained on, from the Alignment page's
    Guarantees section). Kept, not taken once: the Label page reads it on every run until another queue replaces
    it."""
    st.session_state[_LABEL_QUEUE] = {"dataset": dataset_id, "dimension": dimension, "run": run_id,
                                      "run_name": run_name, "items": list(item_ids)}


def label_queue(dataset_id: str) -> dict | None:
    """The queue handed over for this dataset (``queue_for_label``'s fields), or None."""
    q = st.session_state.get(_LABEL_QUEUE)
    return q if q and q.get("dataset") == dataset_id else None


def first_refusal() -> bool:
    """True the first time a script run asks: a refused sign-in is said once per run, however many times the page
    asks who is signed in."""
    if st.session_state.get(_REFUSAL_SAID):
        return False
    st.session_state[_REFUSAL_SAID] = True
    return True


def new_script_run() -> None:
    """Called by the navigation at the start of every script run."""
    st.session_state.pop(_REFUSAL_SAID, None)
