"""The Data page's dimension table on a dataset of pairwise votes: counts of the votes, not "0 items"."""

from __future__ import annotations

import pandas as pd

from evalcore.datasets import load_dataset
from evalcore.views.data import dataset_overview


def test_pairwise_dimension_rows_count_pairs_votes_and_items():
    ds = load_dataset("llmbar_natural")
    row = dataset_overview(ds).iloc[0]
    prefs = ds.preferences
    items = set(prefs["item_a"]) | set(prefs["item_b"])  # counted a second way
    assert row["scale"] == "pairwise: A / B / tie" and row["items"] == len(items) == 200
    assert row["description"].startswith(f"{prefs['pair_id'].nunique():,} pairs, {len(prefs):,} votes.")
    assert pd.isna(row["mean"]) and pd.isna(row["sd"])
