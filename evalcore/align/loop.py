"""Selection on development, verdict on test: the alignment loop.

1. Every candidate (and the starting criteria, the baseline) is scored on the development part's documents only,
   through the engine (``evalcore.judge.runner.score_dataset`` on ``split_dataset(ds, split, "dev")``), cached in
   the store; :func:`estimate_dev` gives the cost first (``runner.estimate``, nothing sent).
2. Its development agreement with the humans is the correlation the Alignment page shows (``evalcore.meta.correlate``:
   level and coefficient from :class:`Settings`, by default the page's defaults, dataset level and Spearman, with
   the 95% BCa interval over documents), or on a categorical dimension a statistic of the confusion matrix the
   Alignment page's label agreement shows (``Settings.coefficient`` one of ``LABEL_STATISTICS``: Cohen's kappa,
   quadratic-weighted kappa, accuracy; ``evalcore.meta.classify``, the same interval over documents). A nominal
   dimension has no order, so only these measure agreement on it.
3. One candidate is chosen: by the rule "best development agreement" (ties: the earlier candidate), or a given
   version (the researcher's pick).
4. The baseline and the chosen candidate are scored ONCE on the test part and compared with the paired test the
   Compare page uses (``evalcore.meta.compare.paired_difference``, chosen - baseline: the paired bootstrap over
   documents, BCa interval, two-sided bootstrap p-value; for a label statistic
   ``evalcore.meta.compare_labels.paired_label_difference``, the same design on confusion matrices). ``optimism`` = development gain - test gain: how much of
   what the development part promised did not carry over (selection on development noise shows up here).
5. Every final check is recorded in the store (``final_checks``); ``check_number`` says which look at that test part
   this is (1 = the first). Looking again after seeing the test part is allowed, counted and reported. On a server
   with sign-in the count is the user's own (``owner``), and a look at a test part's run on another page (Compare,
   Alignment) is counted too (:func:`count_look`).

Runs get deterministic ids (dataset, split, part, criteria version, method, endpoint, owner), so running the loop
again resumes the same runs and sends nothing the cache already answered. The id ends with the full SHA-256 of all
of these: no one can make a run under another user's or another endpoint's id by a hash collision, and a run is
reused only when its recorded owner and endpoint are this loop's (:func:`check_reuse`): anything else is refused,
never silently taken as this loop's baseline.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, cast

import pandas as pd

from evalcore.align.candidates import Candidate
from evalcore.align.split import DEV, TEST, Split, split_dataset
from evalcore.meta.results import Estimate, to_json
from evalcore.model import Dataset, Dimension, Run, counted

if TYPE_CHECKING:  # types only: the engine and the store load where the loop scores
    from evalcore.judge.client import Endpoint
    from evalcore.judge.spec import ScoringSpec
    from evalcore.meta.compare import PairedComparisonResult
    from evalcore.spec import EngineOptions
    from evalcore.store import Store

CHOOSE_BEST_DEV = "best-dev"
# The final check's permutation test swaps the two prompts on whole documents (scipy.stats.permutation_test needs two
# or more), and a bootstrap over one document resamples nothing: below this many test documents no check can run.
MIN_TEST_DOCUMENTS = 2


class FinalCheckUnavailable(ValueError):
    """A final check that cannot be computed (a test part too small, or the comparison failed): nothing is recorded,
    so it is not a look at the test part."""


@dataclass(frozen=True)
class Settings:
    """How agreement is measured: the Alignment page's defaults (dataset level, Spearman, 1,000 resamples, 95%)."""

    level: str = "dataset"
    coefficient: str = "spearman"
    n_resamples: int = 1000
    random_state: int = 0
    confidence_level: float = 0.95

    def as_dict(self) -> dict[str, Any]:
        return {"level": self.level, "coefficient": self.coefficient, "n_resamples": self.n_resamples,
                "random_state": self.random_state, "confidence_level": self.confidence_level}

    @property
    def on_labels(self) -> bool:
        """Agreement measured on the labels (a kappa or accuracy), not by a correlation."""
        from evalcore.meta.compare_labels import LABEL_STATISTICS  # here: the CLI starts without scikit-learn

        return self.coefficient in LABEL_STATISTICS

    def check(self, dim: Dimension) -> None:
        """ValueError when this agreement cannot be measured on ``dim`` (a label statistic on a non-categorical
        dimension, the weighted kappa on an unordered one, a correlation on a nominal one)."""
        from evalcore.meta.compare_labels import LABEL_STATISTICS, check_statistic

        if self.on_labels:
            if not dim.is_categorical:
                raise ValueError(f"{self.coefficient} compares labels: dimension {dim.name!r} is {dim.kind}, "
                                 "measure agreement on it by a correlation (spearman, kendall, pearson)")
            check_statistic(self.coefficient, dim.kind)
        elif dim.kind == "nominal":
            raise ValueError(f"dimension {dim.name!r} is nominal: its codes have no order, so no correlation can "
                             f"measure agreement on it; use a label statistic ({', '.join(LABEL_STATISTICS)})")


def default_settings(dim: Dimension, *, level: str = "dataset", n_resamples: int = 1000, random_state: int = 0,
                     confidence_level: float = 0.95) -> Settings:
    """The loop's default agreement for a dimension: Spearman, or Cohen's kappa on a nominal dimension."""
    return Settings(level=level, coefficient="cohen_kappa" if dim.kind == "nominal" else "spearman",
                    n_resamples=n_resamples, random_state=random_state, confidence_level=confidence_level)


@dataclass(frozen=True)
class Agreement(Estimate):
    """A judge's agreement with the humans on one part: an Estimate (the correlation or kappa with its interval;
    ``n`` as the statistic's, items at the dataset level) and ``failed``, the judgments that could not be read
    (dropped)."""

    failed: int = 0

    def as_dict(self, *names: str, missing_as_none: bool = False) -> dict:
        """``align --json``'s keys (statistic, ci_low, ci_high) unless others are named."""
        return super().as_dict(*(names or ("statistic", "ci_low", "ci_high")), missing_as_none=missing_as_none)


@dataclass(frozen=True)
class Scored:
    """A candidate scored on one part ("dev" or "test"): its run and its agreement there."""

    candidate: Candidate
    part: str
    run_id: str
    agreement: Agreement


PVALUE_METHOD = "the larger of the paired bootstrap's and the document-swap permutation test's"


@dataclass(frozen=True)
class Difference:
    """chosen - baseline on the test part: the difference, the paired bootstrap's CI over documents, and the p-value
    of the verdict's test (see :func:`compare_on_test`): the larger of the paired bootstrap's p-value (null: equal
    correlation) and the document-swap permutation test's (null: the two prompts are exchangeable judges; exact,
    by enumeration, on up to 13 documents)."""

    estimate: Estimate  # the difference, its CI (method: how), the verdict's p-value; n: the paired items
    pvalue_bootstrap: float = float("nan")
    pvalue_permutation: float = float("nan")
    alpha: float = 0.05
    n_documents: int = 0

    statistic = property(lambda self: self.estimate.statistic)
    ci_low = property(lambda self: self.estimate.ci_low)
    ci_high = property(lambda self: self.estimate.ci_high)
    pvalue = property(lambda self: self.estimate.pvalue)
    n = property(lambda self: self.estimate.n)
    ci_method = property(lambda self: self.estimate.method)

    @classmethod
    def of(cls, statistic: float, ci_low: float, ci_high: float, pvalue: float, n: int, ci_method: str = "bca",
           *, pvalue_bootstrap: float = float("nan"), pvalue_permutation: float = float("nan"),
           alpha: float = 0.05, n_documents: int = 0) -> "Difference":
        """The difference from its parts, as the fields were before they became an Estimate."""
        return cls(Estimate(statistic, ci_low, ci_high, n=n, method=ci_method, pvalue=pvalue,
                            pvalue_method=PVALUE_METHOD, confidence_level=1.0 - alpha),
                   pvalue_bootstrap, pvalue_permutation, alpha, n_documents)

    def as_dict(self) -> dict[str, float]:
        return {"statistic": self.statistic, "ci_low": self.ci_low, "ci_high": self.ci_high, "pvalue": self.pvalue,
                "pvalue_bootstrap": self.pvalue_bootstrap, "pvalue_permutation": self.pvalue_permutation}


@dataclass(frozen=True)
class FinalCheck:
    """The verdict on the test part. ``dev_gain`` = chosen - baseline agreement on development; ``test_gain`` =
    the paired difference on test; ``optimism`` = dev_gain - test_gain; ``check_number``: which look at this test
    part it is (1 = the first); ``verdict`` (:func:`verdict_of`): "improved", "worse" or "no
    significant difference"."""

    baseline: Scored
    chosen: Scored
    difference: Difference
    dev_gain: float
    test_gain: float
    optimism: float
    check_number: int
    verdict: str


@dataclass
class AlignReport:
    """One run of the loop, end to end (what ``align --json`` prints: :meth:`to_json`)."""

    split: Split
    baseline: Scored
    candidates: list[Scored]
    chosen: Scored
    rule: str
    test: FinalCheck
    settings: Settings
    dataset_id: str = ""
    dimension: str = ""
    method: str = ""
    model: str = ""
    estimate: PartEstimate | None = None

    def to_json(self) -> dict[str, Any]:
        split = self.split.summary()
        split.update(final_checks=self.test.check_number)
        t = self.test
        return {
            "split": split,
            "baseline": _scored_json(self.baseline),
            "candidates": [_scored_json(c) for c in self.candidates],
            "chosen": {"version": self.chosen.candidate.version, "source": self.chosen.candidate.source,
                       "rule": self.rule},
            "test": {"baseline": t.baseline.agreement.as_dict(), "chosen": t.chosen.agreement.as_dict(),
                     "difference": t.difference.as_dict(), "optimism": t.optimism, "dev_gain": t.dev_gain,
                     "test_gain": t.test_gain, "verdict": t.verdict, "final_check": t.check_number,
                     "n_documents": len(self.split.test_docs), "n_items": t.difference.n},
            "settings": {"dataset": self.dataset_id, "dimension": self.dimension, "method": self.method,
                         "model": self.model, **self.settings.as_dict(), "estimate": self.estimate.as_dict() if self.estimate else {}},
        }


def _scored_json(s: Scored) -> dict[str, Any]:
    return {"version": s.candidate.version, "source": s.candidate.source, "note": s.candidate.note,
            "dev": s.agreement.as_dict(), "run_id": s.run_id}


# ---------------------------------------------------------------------------------------------------- runs
def run_id_for(dataset_id: str, split: Split, part: str, candidate: Candidate, method: str, endpoint: Endpoint,
               owner: str | None = None) -> str:
    """The deterministic run id of a candidate on one part for ``owner`` (the signed-in user; None without sign-in):
    re-running resumes it, the cache answers the rest. Readable fields first, then the full SHA-256 of everything
    the run depends on (a prefix of it could be matched by brute force: a 24-bit one was, in minutes)."""
    from evalcore.store.connection import canonical_json

    what = {"dataset": dataset_id, "split": split.split_id, "part": part, "criteria": candidate.version,
            "method": str(method), "endpoint": endpoint.identity(), "owner": owner or None}
    digest = hashlib.sha256(canonical_json(what).encode()).hexdigest()
    model = re.sub(r"[^A-Za-z0-9._-]+", "-", endpoint.model).strip("-") or "model"
    return f"{dataset_id}/align-{split.split_id[:8]}-{part}-{candidate.version[:8]}-{method}-{model}-{digest}"


class RunNotReusable(ValueError):
    """A run under the loop's id exists but was made by someone else or against another endpoint."""


def check_reuse(store: Store, run_id: str, owner: str | None, endpoint: Endpoint) -> bool:
    """True when ``run_id`` exists and may be resumed by ``owner`` against ``endpoint``; False when there is no such
    run. RunNotReusable when it exists with another owner or another recorded endpoint (provider, base URL, model,
    API version): its judgments are not this loop's, and resuming it would overwrite what it records."""
    if not store.run_exists(run_id):
        return False
    row = store.run_row(run_id)
    if (row.get("owner") or None) != (owner or None):
        raise RunNotReusable(f"a run with the id {run_id!r} exists and was made by another user: it is not reused "
                             "as this loop's run, and nothing was scored")
    recorded = (row.get("config") or {}).get("endpoint")
    if recorded != endpoint.identity():
        raise RunNotReusable(f"a run with the id {run_id!r} exists and was scored against another endpoint "
                             f"({json.dumps(recorded, sort_keys=True)}): it is not reused as this loop's run")
    return True


def own_run(store: Store, run_id: str, owner: str | None, endpoint: Endpoint) -> dict[str, Any] | None:
    """The stored row of the loop's run ``run_id`` when it may be shown to ``owner`` as theirs (see
    :func:`check_reuse`), else None: another user's run, or one made against another endpoint, is never read."""
    try:
        return store.run_row(run_id) if check_reuse(store, run_id, owner, endpoint) else None
    except RunNotReusable:
        return None


def test_part_of(store: Store, run_id: str) -> tuple[str, str] | None:
    """(dataset id, split id) when ``run_id`` is a run the loop scored on a test part, else None: read from the run's
    record (its spec's ``align``, evalcore.spec.ScoringSpec), never from its id."""
    if not store.run_exists(run_id):  # a published run, or none
        return None
    spec = (store.run_row(run_id).get("config") or {}).get("spec") or {}
    align = spec.get("align") or {}
    if align.get("part") != TEST or not align.get("split") or not spec.get("dataset_id"):
        return None
    return str(spec["dataset_id"]), str(align["split"])


def count_look(store: Store, run_id: str, owner: str | None, page: str) -> int | None:
    """Record a look at the agreement of a test part's run outside the loop's final check (on the Compare or the
    Alignment page) as a final check of ``owner`` on that test part: seeing a test part is what counts, whatever
    page shows it. The viewer's number of checks on it, this one included; None when ``run_id`` is no test part's
    run (or its split is unknown)."""
    found = test_part_of(store, run_id)
    if found is None:
        return None
    dataset_id, split_id = found
    rows = [r for r in store.list_split_rows(dataset_id) if r["split_id"] == split_id]
    number = None
    for r in rows:
        number = store.record_final_check(dataset_id, r["split_id"], dimension=r["dimension"], method="look",
                                          baseline_hash="", chosen_hash="", baseline_run="", chosen_run=run_id,
                                          result={"look": page, "run": run_id}, owner=owner)
    return number


def check_method(method: str) -> None:
    """ValueError for a method the loop cannot measure (a pairwise one: it gives no per-item score)."""
    from evalcore.judge.runner import method_of

    if method_of(method).pairwise:
        raise ValueError(f"method {method!r} compares pairs of texts: the alignment loop measures agreement with a "
                         "per-item score (geval, explicit, implicit, rts, mcq, gptscore)")


def spec_for(dataset: Dataset, split: Split, part: str, dimension: str, method: str, candidate: Candidate,
             endpoint: Endpoint, *, config_overrides: dict[str, Any] | None = None, owner: str | None = None
             ) -> ScoringSpec:
    """The engine's ScoringSpec for one candidate on one part: the part's documents only, the candidate's
    criteria, the method's config for the dataset (the one default rule of evalcore.judge.spec); ``owner``'s run."""
    from evalcore.judge.spec import ScoringSpec, method_config

    check_method(method)
    sub = split_dataset(dataset, split, part)
    # the part's documents named in the spec: the run's record then says what it scored, and a resume from that
    # record (``score --run``, a worker) scores the part again, not the whole dataset
    documents = tuple(str(d) for d in dict.fromkeys(sub.items["doc_id"]))
    return ScoringSpec(sub, method, [dimension], {dimension: candidate.criteria},
                       method_config(method, dataset, config_overrides),
                       label=f"align {part} · {candidate.source} · {candidate.version[:8]}",
                       run_id=run_id_for(dataset.id, split, part, candidate, method, endpoint, owner), owner=owner,
                       align={"split": split.split_id, "part": part}, documents=documents)


def spec_run_id(spec: ScoringSpec) -> str:
    """The run id :func:`spec_for` gave ``spec`` (every spec of the loop names its run)."""
    if spec.run_id is None:
        raise ValueError("the loop's scoring spec names no run")
    return spec.run_id


@dataclass(frozen=True)
class PartEstimate:
    """What scoring candidates on one part would send and cost: requests to send, those the cache already holds,
    tokens, and the cost in USD (None when the model's price is unknown). The same attribute names as the engine's
    estimate (``runner.Estimate``), which the spending decision reads on every page."""

    part: str
    candidates: int
    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)  # ``align --json``'s "estimate" block, keys in this order


def estimate_part(dataset: Dataset, split: Split, part: str, dimension: str, method: str,
                  candidates: list[Candidate], options: EngineOptions, *, store: Store | None = None,
                  config_overrides: dict[str, Any] | None = None) -> PartEstimate:
    """What scoring these candidates on one part would send and cost (nothing is sent): requests to send, those the
    cache already holds, tokens and cost (None when the model's price is unknown)."""
    from evalcore.judge import runner

    calls = cached = prompt = completion = 0
    cost: float | None = 0.0
    for c in _unique(candidates):
        est = runner.estimate(spec_for(dataset, split, part, dimension, method, c, options.first_endpoint,
                                       config_overrides=config_overrides), options, store=store)
        calls, cached = calls + est.calls, cached + est.cached
        prompt, completion = prompt + est.prompt_tokens, completion + est.completion_tokens
        cost = None if cost is None or est.cost_usd is None else cost + est.cost_usd
    return PartEstimate(part, len(_unique(candidates)), calls, cached, prompt, completion, cost)


def estimate_dev(dataset: Dataset, split: Split, dimension: str, method: str, candidates: list[Candidate],
                 options: EngineOptions, *, store: Store | None = None,
                 config_overrides: dict[str, Any] | None = None) -> PartEstimate:
    """The cost of scoring every candidate on the development part (see :func:`estimate_part`)."""
    return estimate_part(dataset, split, DEV, dimension, method, candidates, options, store=store,
                         config_overrides=config_overrides)


def _unique(candidates: list[Candidate]) -> list[Candidate]:
    seen: dict[str, Candidate] = {}
    for c in candidates:
        seen.setdefault(c.version, c)
    return list(seen.values())


def part_frame(dataset: Dataset, run: Run, dimension: str, split: Split, part: str, *, labels: bool = False
               ) -> pd.DataFrame:
    """The score frame (item_id, doc_id, system_id, judge, human) of a run on one part's items only; ``labels``:
    the label frame the Alignment page's label agreement uses instead (``classification.label_frame``: the
    annotators' majority as the human label, a nominal judge's most probable category as its label)."""
    from evalcore.meta.classification import label_frame
    from evalcore.runs import score_frame

    frame = label_frame(dataset, run, dimension)[0] if labels else score_frame(dataset, run, dimension)
    return frame[frame["doc_id"].astype(str).isin(set(split.docs(part)))].reset_index(drop=True)


def agreement_of(frame: pd.DataFrame, settings: Settings, dim: Dimension | None = None) -> Agreement:
    """The agreement of the frame's judge with its humans, as the Alignment page computes it: the correlation, or
    for a label statistic (``dim`` needed: its categories and kind) that statistic of ``evalcore.meta.classify``."""
    from evalcore import meta
    from evalcore.meta.classification import classify

    if settings.on_labels:
        if dim is None:
            raise ValueError(f"{settings.coefficient} needs the dimension (its categories and kind)")
        settings.check(dim)
        res = classify(frame, categories=dim.categories, kind=dim.kind, n_resamples=settings.n_resamples,
                            random_state=settings.random_state, confidence_level=settings.confidence_level)
        e = getattr(res, settings.coefficient)
        # failed: replies that could not be read, and values that are no category of a nominal dimension
        return Agreement(statistic=float(e.statistic), ci_low=float(e.ci_low), ci_high=float(e.ci_high), n=int(res.n),
                         method=e.method, failed=int(res.dropped + res.invalid))
    r = meta.correlate(frame, level=settings.level, coefficient=settings.coefficient,
                       n_resamples=settings.n_resamples, random_state=settings.random_state,
                       confidence_level=settings.confidence_level)
    return Agreement(statistic=float(r.statistic), ci_low=float(r.ci_low), ci_high=float(r.ci_high), n=int(r.n),
                     method=r.method, failed=int(frame["judge"].isna().sum()))


def score_candidate(dataset: Dataset, split: Split, part: str, dimension: str, method: str, candidate: Candidate,
                    options: EngineOptions, *, store: Store | None = None, settings: Settings = Settings(),
                    config_overrides: dict[str, Any] | None = None, progress: Callable | None = None,
                    cancel: threading.Event | None = None, owner: str | None = None) -> Scored:
    """Score one candidate on one part through the engine (cached, resumable: ``owner``'s own run against this
    endpoint only, see :func:`check_reuse`) and measure its agreement there."""
    from evalcore.judge import runner
    from evalcore.store import default_store

    store = store or default_store()
    spec = spec_for(dataset, split, part, dimension, method, candidate, options.first_endpoint,
                    config_overrides=config_overrides, owner=owner)
    check_reuse(store, spec_run_id(spec), owner, options.first_endpoint)
    run = runner.score_dataset(spec, options, store=store, progress=progress, cancel=cancel)
    # the run holds this version's judgments only
    frame = part_frame(dataset, run, dimension, split, part, labels=settings.on_labels)
    return Scored(candidate=candidate, part=part, run_id=run.run_id,
                  agreement=agreement_of(frame, settings, dataset.dimension(dimension)))


def score_on_dev(dataset: Dataset, split: Split, dimension: str, method: str, candidates: list[Candidate],
                 options: EngineOptions, *, store: Store | None = None, settings: Settings = Settings(),
                 config_overrides: dict[str, Any] | None = None,
                 progress: Callable | None = None, cancel: threading.Event | None = None,
                 owner: str | None = None) -> list[Scored]:
    """Every candidate scored on the development part (identical criteria are scored once)."""
    by_version = {c.version: score_candidate(dataset, split, DEV, dimension, method, c, options, store=store,
                                             settings=settings, config_overrides=config_overrides,
                                             progress=progress, cancel=cancel, owner=owner)
                  for c in _unique(candidates)}
    return [Scored(c, DEV, by_version[c.version].run_id, by_version[c.version].agreement) for c in candidates]


def choose(scored: list[Scored], rule: str = CHOOSE_BEST_DEV) -> Scored:
    """The candidate to test: ``rule`` "best-dev" (highest development agreement; ties: the earlier one; a
    candidate whose agreement is undefined is never chosen by the rule), or a criteria version (hash or prefix)."""
    if not scored:
        raise ValueError("no candidate to choose from")
    if rule == CHOOSE_BEST_DEV:
        defined = [s for s in scored if s.agreement.statistic == s.agreement.statistic]  # not NaN
        if not defined:
            raise ValueError("no candidate has a defined development agreement")
        return max(defined, key=lambda s: s.agreement.statistic)  # max keeps the first of equals
    hits = [s for s in scored if s.candidate.version.startswith(rule)]
    if not hits:
        raise KeyError(f"no candidate has criteria version {rule!r}; candidates: "
                       f"{', '.join(s.candidate.version for s in scored)}")
    return hits[0]


# ---------------------------------------------------------------------------------------------------- verdict
def compare_on_test(dataset: Dataset, split: Split, dimension: str, baseline_run: Run, chosen_run: Run,
                    settings: Settings) -> Difference:
    """chosen - baseline on the test part (``evalcore.meta.compare.paired_difference``, as on the Compare page).

    The verdict must not call an unimprovable prompt "improved" (issue 22), and a test part is often small: the
    paired bootstrap's interval resamples documents and is too narrow on 5-15 of them (two equally weak prompts came
    out "significantly" different in 4 of 5 small splits). So the p-value is an intersection-union test of both
    paired tests, the larger of their p-values: the paired bootstrap (null: equal correlation with the humans;
    holds its size with enough documents, tests/test_meta_compare.py) and the permutation test that swaps the two
    prompts' scores on whole documents (null: the prompts are exchangeable judges; exact by enumeration on few
    documents). Rejecting only when both reject keeps the size of each (tests/test_align_loop.py simulates it)."""
    a = part_frame(dataset, chosen_run, dimension, split, TEST, labels=settings.on_labels)
    b = part_frame(dataset, baseline_run, dimension, split, TEST, labels=settings.on_labels)
    return paired_verdict(a, b, settings, dataset.dimension(dimension))


def paired_verdict(a: pd.DataFrame, b: pd.DataFrame, settings: Settings, dim: Dimension | None = None) -> Difference:
    """A - B on two score frames of the same items (see :func:`compare_on_test` for the two tests); a label
    statistic needs ``dim`` and is compared by ``paired_label_difference`` (the same two tests on confusion
    matrices)."""
    from evalcore.meta.compare import paired_difference
    from evalcore.meta.compare_labels import paired_label_difference

    n, seed, level = settings.n_resamples, settings.random_state, settings.confidence_level
    if settings.on_labels:
        if dim is None:
            raise ValueError(f"{settings.coefficient} needs the dimension (its categories and kind)")
        settings.check(dim)
        labelled = dim

        def paired(method: str) -> PairedComparisonResult:
            return paired_label_difference(a, b, categories=labelled.categories, kind=labelled.kind,
                                           statistic=settings.coefficient, method=method, n_resamples=n,
                                           random_state=seed, confidence_level=level)
    else:
        def paired(method: str) -> PairedComparisonResult:
            return paired_difference(a, b, level=settings.level, coefficient=settings.coefficient, method=method,
                                     n_resamples=n, random_state=seed, confidence_level=level)
    boot = paired("bootstrap")
    perm = paired("permutation")
    return Difference.of(statistic=float(boot.difference), ci_low=float(boot.ci_low), ci_high=float(boot.ci_high),
                      pvalue=float(max(boot.pvalue, perm.pvalue)), n=int(boot.n), ci_method=boot.ci_method,
                      pvalue_bootstrap=float(boot.pvalue), pvalue_permutation=float(perm.pvalue),
                      alpha=1.0 - settings.confidence_level, n_documents=int(a["doc_id"].nunique()))


def verdict_of(d: Difference) -> str:
    """"improved" / "worse" when the interval lies on one side of 0 and the verdict's test rejects at its level;
    else "no significant difference"."""
    if d.pvalue < d.alpha and d.ci_low > 0:
        return "improved"
    if d.pvalue < d.alpha and d.ci_high < 0:
        return "worse"
    return "no significant difference"


def beat_baseline(baseline: Scored | None, scored: list[Scored]) -> list[Scored]:
    """The candidates whose development agreement is above the baseline's (strictly: a tie gains nothing; an
    undefined agreement never beats it)."""
    if baseline is None:
        return []
    return [s for s in scored if s.agreement.statistic > baseline.agreement.statistic]  # NaN compares False


def gain_sentence(dev_gain: float, test_gain: float, verdict: str) -> str:
    """What the development gain (chosen - baseline agreement on development) and the test gain (the paired
    difference on test, whose ``verdict`` is :func:`verdict_of`'s) say together. True for every sign of either gain
    and every verdict: a gain "carries over" only when there was one on development and the paired tests find the
    chosen prompt better on test (tests/test_improve_gain_sentences.py walks the table of cases)."""
    if dev_gain != dev_gain:  # NaN: a prompt's development agreement is undefined
        return ("The development gain is undefined (a prompt's agreement on the development part could not be "
                "computed): selection on development had nothing to go by.")
    if test_gain != test_gain:
        return ("The test gain is undefined (a prompt's agreement on the test part could not be computed): the "
                "held-out documents say nothing about the development gain.")
    on_test = {"improved": "significantly better than the baseline", "worse": "significantly worse than the baseline"
               }.get(verdict, "not significantly different from the baseline")
    if dev_gain <= 0:
        dev = "agreed no better" if dev_gain == 0 else "agreed worse"
        return (f"The chosen prompt {dev} with the humans than the baseline on the development part: there was no "
                f"development gain to carry over, and selection on development did not favour it. On the held-out "
                f"documents it is {on_test}" + (": a gain the development part did not predict, to confirm on "
                                                "fresh documents before relying on it." if verdict == "improved" else "."))
    if verdict == "improved":
        if test_gain >= 0.5 * dev_gain:
            return ("The development gain carried over to the held-out documents: the chosen prompt is significantly "
                    "better there too.")
        return ("Less than half of the development gain carried over to the held-out documents, where the chosen "
                "prompt is still significantly better than the baseline.")
    if verdict == "worse":
        return ("The development gain did not carry over to the held-out documents: there the chosen prompt is "
                "significantly worse than the baseline.")
    if test_gain <= 0:
        return ("The development gain did not carry over to the held-out documents: there the chosen prompt did no "
                "better than the baseline (not significantly different).")
    return ("The held-out documents do not confirm the development gain: the test gain is positive but not "
            "significantly different from zero" + (", and less than half of the development gain." if
                                                    test_gain < 0.5 * dev_gain else "."))


def final_check_blocker(split: Split) -> str | None:
    """Why no final check can run on ``split``'s test part, in words (None: it can)."""
    n = len(split.test_docs)
    if n >= MIN_TEST_DOCUMENTS:
        return None
    return (f"No final check on this split: its test part holds {counted(n, 'document')}. The check compares the two "
            "prompts by swapping them on whole documents and by resampling documents, which needs "
            f"{MIN_TEST_DOCUMENTS} or more. Make a split that holds out more documents (a larger test share, or "
            "more documents in the loop).")


def final_check(dataset: Dataset, split: Split, dimension: str, method: str, baseline_dev: Scored,
                chosen_dev: Scored, options: EngineOptions, *, store: Store | None = None,
                settings: Settings = Settings(),
                config_overrides: dict[str, Any] | None = None, progress: Callable | None = None,
                cancel: threading.Event | None = None, owner: str | None = None) -> FinalCheck:
    """Score the baseline and the chosen candidate on the test part, compare them, record the check (counted as
    ``owner``'s, the signed-in user's; their own runs only, see :func:`check_reuse`). FinalCheckUnavailable, with
    nothing recorded, when the test part is too small (:func:`final_check_blocker`: nothing is scored either) or
    the comparison cannot be computed: only a check that shows a result is a look."""
    from evalcore.judge import runner
    from evalcore.store import default_store

    if (why := final_check_blocker(split)) is not None:
        raise FinalCheckUnavailable(why)
    store = store or default_store()
    runs = {}
    for name, s in (("baseline", baseline_dev), ("chosen", chosen_dev)):
        spec = spec_for(dataset, split, TEST, dimension, method, s.candidate, options.first_endpoint,
                        config_overrides=config_overrides, owner=owner)
        check_reuse(store, spec_run_id(spec), owner, options.first_endpoint)
        runs[name] = runner.score_dataset(spec, options, store=store, progress=progress, cancel=cancel)
    try:
        scored = {name: Scored(s.candidate, TEST, runs[name].run_id,
                               agreement_of(part_frame(dataset, runs[name], dimension, split, TEST,
                                                       labels=settings.on_labels), settings,
                                            dataset.dimension(dimension)))
                  for name, s in (("baseline", baseline_dev), ("chosen", chosen_dev))}
        diff = compare_on_test(dataset, split, dimension, runs["baseline"], runs["chosen"], settings)
    except (ValueError, ZeroDivisionError) as e:  # recorded only once computed: a failed check is no look
        raise FinalCheckUnavailable(f"The final check could not be computed on the test part ({e}); it is not "
                                    "counted as a look. The test runs are kept: nothing is sent again.") from e
    dev_gain = chosen_dev.agreement.statistic - baseline_dev.agreement.statistic
    result = {"difference": diff.as_dict(), "dev_gain": dev_gain, "test_gain": diff.statistic,
              "optimism": dev_gain - diff.statistic, "settings": settings.as_dict()}
    number = store.record_final_check(dataset.id, split.split_id, dimension=dimension, method=str(method),
                                      baseline_hash=baseline_dev.candidate.version,
                                      chosen_hash=chosen_dev.candidate.version,
                                      baseline_run=runs["baseline"].run_id, chosen_run=runs["chosen"].run_id,
                                      result=cast("dict[str, Any]", to_json(result)), owner=owner)
    return FinalCheck(baseline=scored["baseline"], chosen=scored["chosen"], difference=diff, dev_gain=dev_gain,
                      test_gain=diff.statistic, optimism=dev_gain - diff.statistic, check_number=number,
                      verdict=verdict_of(diff))


__all__ = ["Settings", "default_settings", "Agreement", "Scored", "Difference", "FinalCheck", "AlignReport", "CHOOSE_BEST_DEV",
           "check_method", "run_id_for", "RunNotReusable", "check_reuse", "own_run", "test_part_of", "count_look",
           "spec_for", "PartEstimate", "estimate_part", "estimate_dev", "part_frame", "agreement_of",
           "score_candidate", "score_on_dev", "choose", "compare_on_test", "verdict_of", "final_check",
           "beat_baseline", "gain_sentence", "MIN_TEST_DOCUMENTS", "FinalCheckUnavailable", "final_check_blocker"]
