"""Argument checks shared by the statistics of evalcore.meta, in one place (as scikit-learn's ``validate_params``):
each raises ValueError naming the argument, the value given and what it may be, before any work is done."""

from __future__ import annotations

from collections.abc import Collection


def check_choice(value: object, choices: Collection[object], what: str) -> None:
    """``value`` must be one of ``choices`` (``what`` names the argument in the message)."""
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of {list(choices)}")


def check_n_resamples(n_resamples: int) -> None:
    """A bootstrap's resample count: 0 (no interval) or more."""
    if n_resamples < 0:
        raise ValueError(f"n_resamples must be >= 0, got {n_resamples}")


def check_confidence_level(confidence_level: float) -> None:
    """A confidence level strictly between 0 and 1."""
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be between 0 and 1, got {confidence_level}")
