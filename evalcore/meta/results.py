"""The one result type of evalcore.meta: an ``Estimate`` is a statistic with its confidence interval, the number of
units it counts, how the interval was computed and the caveats a reader is owed.

Every statistic returns one, as every scipy.stats test returns a result with ``statistic`` and ``pvalue``:
correlations (evalcore.meta.correlation.correlate), Krippendorff's alpha (agreement.krippendorff_alpha), kappa / F1 /
calibration (classification), the pairwise preference figures (preference) and the counts-based figures of the
Alt-Test, prediction-powered inference and Bradley-Terry modules. The optional fields are filled by the statistics
that have them (a p-value, how many resamples were undefined, items dropped as unreadable) and keep their defaults
elsewhere. What a statistic *was asked* (the level, the coefficient, the scale's level of measurement) is the
caller's argument, not part of the result, as with scipy.

``as_dict()`` gives the fields as a dict, or only those named, in the order named. ``to_json`` is the one serialiser
of the package's results: it makes any result (a composite result, nested dicts and lists of numbers, numpy scalars,
Estimates) ready for ``json.dumps``. A composite result (a dataclass holding Estimates) names its documented
``--json`` keys (README "meta --json") in a class attribute ``json_keys``: each key with the attribute it is read
from, a dotted path into a held Estimate where the key is one of its fields, and where a held Estimate is written
with fewer keys, those keys; a dataclass without ``json_keys`` is written field by field. ``to_dict`` is
``to_json`` of a result that is written as an object; ``none_if_missing`` is the rule for one number.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields, is_dataclass
from typing import TypeAlias, Union

# What ``to_json`` gives: values ``json.dumps`` writes as they are.
Json: TypeAlias = Union[None, bool, int, float, str, list["Json"], dict[str, "Json"]]
# One key of a result's JSON form: (key, attribute path), or (key, attribute path, the keys to write that value with)
JsonKey: TypeAlias = Union[tuple[str, str], tuple[str, str, "JsonKeys"]]
JsonKeys: TypeAlias = tuple[JsonKey, ...]

NAN = float("nan")


@dataclass(frozen=True)
class Estimate:
    """A statistic and its interval (NaN where none was asked for or it is undefined).

    - ``n``: the units the statistic counts (items, documents, systems, votes: the statistic's docstring says which).
    - ``method``: how the interval was computed ("bca", "percentile", ...); "" without an interval.
    - ``notes``: caveats in words (an estimate outside its own interval; why a figure is missing).
    """

    statistic: float
    ci_low: float = NAN
    ci_high: float = NAN
    n: int = 0
    method: str = ""
    notes: tuple[str, ...] = ()
    # Optional: set by the statistics that have them.
    pvalue: float | None = None
    pvalue_method: str = ""  # how the p-value was computed ("exact permutation", "asymptotic", ...)
    confidence_level: float = 0.95
    n_resamples: int = 0
    undefined_resamples: int = 0  # bootstrap resamples whose statistic was undefined, left out of the interval
    resampling: str = ""  # what the bootstrap resampled: "documents", "both" (systems and documents), "items"
    dropped: int = 0  # units left out because the judge's value is missing (a failed parse)
    skipped: int = 0  # units on which the statistic is undefined, left out (summary level: constant documents)
    n_annotators: int | None = None  # the raters an agreement among annotators rests on

    def as_dict(self, *names: str, missing_as_none: bool = False) -> dict[str, object]:
        """The fields (all, or those named, in that order); ``missing_as_none`` writes a NaN number as None (and
        every other float as a plain Python float)."""
        keys = names or tuple(f.name for f in fields(self))
        out: dict[str, object] = {}
        for k in keys:
            v = getattr(self, k)
            if missing_as_none and isinstance(v, float):
                v = None if math.isnan(v) else float(v)
            out[k] = list(v) if isinstance(v, tuple) else v
        return out

    @property
    def note(self) -> str:
        """The notes as one sentence ("" without any)."""
        return "; ".join(self.notes)


class HoldsEstimate:
    """A composite whose figure is its ``estimate`` (an across-systems correlation, a model's score): the interval's
    ends under their flat names, read from it."""

    estimate: Estimate

    @property
    def ci_low(self) -> float:
        return self.estimate.ci_low

    @property
    def ci_high(self) -> float:
        return self.estimate.ci_high


def missing(n: int, reason: str) -> Estimate:
    """A statistic that cannot be computed, with its reason (``n``: the units it would have counted)."""
    return Estimate(NAN, n=int(n), notes=(reason,) if reason else ())


def none_if_missing(x: float | None) -> float | None:
    """A number as a JSON document holds it: None for a missing one (None, NaN) and for an infinite one (JSON has
    neither), else a plain float. The one such helper of the package."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _path(obj: object, path: str) -> object:
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


def _key(k: object) -> str:
    """A dict key as ``json.dumps`` writes it (a number or None as its JSON text)."""
    return k if isinstance(k, str) else json.dumps(to_json(k))


def to_json(x: object, keys: JsonKeys | None = None) -> Json:
    """``x`` ready for ``json.dumps``, the one serialiser of results: a result naming ``json_keys`` (or written with
    ``keys``) as those keys, read from their attribute paths; an ``Estimate`` as its ``as_dict()``; another dataclass
    field by field; dicts, lists and tuples element by element; numpy scalars as Python values; a float that is not
    finite as None."""
    keys = keys if keys is not None else getattr(type(x), "json_keys", None)
    if keys is not None:
        out: dict[str, Json] = {}
        for key in keys:
            match key:
                case (name, path, sub):  # a held Estimate written with fewer keys
                    out[name] = to_json(_path(x, path), sub)
                case (name, path):
                    out[name] = to_json(_path(x, path))
        return out
    if isinstance(x, Estimate):
        return to_json(x.as_dict())
    if is_dataclass(x) and not isinstance(x, type):
        return {f.name: to_json(getattr(x, f.name)) for f in fields(x)}
    if isinstance(x, dict):
        return {_key(k): to_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_json(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        try:
            x = x.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if x is None or isinstance(x, (bool, int, str)):
        return x
    raise TypeError(f"to_json: {type(x).__name__} has no JSON form")


def to_dict(x: object, keys: JsonKeys | None = None) -> dict[str, Json]:
    """``to_json`` of a result written as an object (a composite result, an Estimate, a dict)."""
    out = to_json(x, keys)
    if not isinstance(out, dict):
        raise TypeError(f"to_dict: {type(x).__name__} is not written as an object")
    return out
