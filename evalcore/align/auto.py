"""The whole loop unattended (what ``python -m evalcore align`` runs): split, baseline on development,
disagreements, candidates, cost estimate, development scores, choice, one final check on test.

Candidates, in this order until ``n_candidates`` are made (identical criteria count once): an LLM proposal from the
largest development disagreements; few-shot examples by disagreement; by coverage of the scale; at random (seeded);
then further proposals from the next disagreements and further random few-shot draws. The researcher's own edits
(``edits``) come on top. Unattended, proposals are saved as criteria versions without being shown first: asking
for the loop is asking for that (the page shows each proposal's diff and saves it only when accepted).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypedDict

from evalcore.align import candidates as cand
from evalcore.align.disagreement import Disagreement, disagreements
from evalcore.align.loop import (
    CHOOSE_BEST_DEV, AlignReport, FinalCheckUnavailable, PartEstimate, Scored, Settings, beat_baseline, check_method,
    choose, default_settings, estimate_dev, final_check, final_check_blocker, score_candidate, score_on_dev,
)
from evalcore.align.split import DEV, Split, make_split, save_split
from evalcore.model import Dataset, counted
from evalcore.types import Criteria

if TYPE_CHECKING:  # types only: the store and the engine load where the loop runs
    from evalcore.spec import EngineOptions
    from evalcore.store import Store


@dataclass(frozen=True)
class AlignSettings:
    """What the loop does, beside which judge and which dimension (the ``align`` command's flags).

    ``test_share`` / ``seed``: the split made when ``split`` (a stored one) is not given; ``seed`` also draws the
    random few-shot examples. ``n_candidates``: candidates to make (proposals and few-shot); ``edits``: definitions
    the researcher wrote (each an "edit" candidate); ``extra``: candidates made elsewhere. ``rule``: how one is
    chosen (``loop.CHOOSE_BEST_DEV`` or a criteria version). ``meta_prompt``, ``n_examples`` (development
    disagreements shown to a proposal), ``fewshot_k`` (examples per few-shot candidate). ``agreement``: how
    agreement is measured (default: ``loop.default_settings`` for the dimension). ``config_overrides``: the
    method's config. ``base``: the starting criteria (default: ``candidates.baseline_criteria``, what ``score``
    would use, the loop's own saved candidates left aside)."""

    test_share: float = 0.3
    seed: int = 0
    split: Split | None = None
    n_candidates: int = 3
    edits: tuple[str, ...] = ()
    extra: tuple[cand.Candidate, ...] = ()
    rule: str = CHOOSE_BEST_DEV
    meta_prompt: str = cand.META_PROMPT
    n_examples: int = 8
    fewshot_k: int = 4
    agreement: Settings | None = None
    config_overrides: dict[str, Any] | None = None
    base: Criteria | None = None


def _generators(base: Criteria, dis: Disagreement, split: Split, dataset: Dataset, dimension: str,
                options: EngineOptions, store: Store, settings: AlignSettings
                ) -> Iterator[Callable[[], cand.Candidate]]:
    """Makers of candidates, in the order of the module docstring (endlessly: the caller stops)."""
    human_scale = dis.human_scale
    pool = cand.example_pool(dataset, dimension, split, dis)
    n_examples, seed = settings.n_examples, settings.seed

    def proposal(offset: int) -> Callable[[], cand.Candidate]:
        def make() -> cand.Candidate:
            prompt, ids = cand.build_meta_prompt(base, dis, split, dataset=dataset, template=settings.meta_prompt,
                                                 n_examples=n_examples, offset=offset)
            return cand.propose(base, prompt, endpoint=options.first_endpoint, api_key=options.api_key,
                                store=store, example_items=ids, timeout_s=options.timeout_s,
                                max_retries=options.max_retries).candidate
        return make

    def fewshot(how: str, s: int) -> Callable[[], cand.Candidate]:
        return lambda: cand.fewshot_candidate(base, pool, split, k=settings.fewshot_k, how=how, seed=s,
                                              human_scale=human_scale)

    yield proposal(0)
    yield fewshot("disagreement", seed)
    yield fewshot("coverage", seed)
    yield fewshot("random", seed)
    i = 1
    while True:
        yield proposal(i * n_examples)
        yield fewshot("random", seed + i)
        i += 1


def make_candidates(base: Criteria, dis: Disagreement, split: Split, dataset: Dataset, dimension: str,
                    options: EngineOptions, settings: AlignSettings = AlignSettings(), *, store: Store,
                    max_tries: int | None = None, log: Callable[[str], None] | None = None) -> list[cand.Candidate]:
    """Up to ``settings.n_candidates`` distinct candidates (none equal to the baseline), each saved as a criteria
    version. A maker that fails for a reason of its own (a proposal whose reply has no <criteria> block, too few
    development items for the examples) is skipped and said in ``log``; the next maker is tried (at most
    ``max_tries`` in all)."""
    out: dict[str, cand.Candidate] = {}
    tries = 0
    n = settings.n_candidates
    limit = max_tries if max_tries is not None else 3 * n + 4
    for make in _generators(base, dis, split, dataset, dimension, options, store, settings):
        if len(out) >= n or tries >= limit:
            break
        tries += 1
        try:
            c = make()
        except ValueError as e:
            if log is not None:
                log(f"candidate {tries} skipped: {e}")
            continue
        if c.version != base.version_hash() and c.version not in out:
            out[c.version] = c
            cand.save_candidate(store, dataset.id, c)
    return list(out.values())


def align(dataset: Dataset, dimension: str, method: str, options: EngineOptions,
          settings: AlignSettings = AlignSettings(), *, store: Store | None = None,
          log: Callable[[str], None] | None = None, cancel: threading.Event | None = None) -> AlignReport:
    """Run the loop end to end and return its report (see the module docstring and ``AlignSettings``). ``log``
    receives its progress lines; ``cancel``, when set, stops the scoring."""
    from evalcore.store import default_store

    from evalcore.judge.cost import FREE_PROVIDERS

    store = store or default_store()
    say = log or (lambda _msg: None)
    local = options.first_endpoint.provider in FREE_PROVIDERS
    check_method(method)
    agreement = settings.agreement or default_settings(dataset.dimension(dimension))
    agreement.check(dataset.dimension(dimension))  # before anything is sent
    split = settings.split or make_split(dataset, dimension, test_share=settings.test_share, seed=settings.seed)
    save_split(store, split)
    say(f"split {split.split_id}: {len(split.dev_docs)} development / {counted(len(split.test_docs), 'test document')} "
        f"(seed {split.seed}, stratified by {split.strata})")
    if (why := final_check_blocker(split)) is not None:  # before anything is sent: the loop would end on no check
        raise FinalCheckUnavailable(why)
    base = settings.base or cand.baseline_criteria(dataset, dimension, method, store)
    overrides = settings.config_overrides
    common: _Common = {"store": store, "settings": agreement, "config_overrides": overrides, "cancel": cancel}
    base_dev = _baseline_on_dev(dataset, split, dimension, method, base, options, common, say, local)
    dis = disagreements(dataset, store.load_run(base_dev.run_id), dimension, split)
    made = make_candidates(base, dis, split, dataset, dimension, options, settings, store=store, log=say)
    for text in settings.edits:
        c = cand.edit_candidate(base, definition=text)
        cand.save_candidate(store, dataset.id, c)
        made.append(c)
    made += list(settings.extra)
    if not made:
        raise ValueError("no candidate to try: ask for --candidates 1 or more, or give an edit")
    estimate = estimate_dev(dataset, split, dimension, method, made, options, store=store, config_overrides=overrides)
    say(_estimate_line(estimate, counted(estimate.candidates, "candidate"), local))
    scored = score_on_dev(dataset, split, dimension, method, made, options, **common)
    chosen = choose(scored, settings.rule)
    say(f"chosen: {chosen.candidate.version} ({chosen.candidate.source}), development agreement "
        f"{chosen.agreement.statistic:.3f} vs baseline {base_dev.agreement.statistic:.3f}")
    if not beat_baseline(base_dev, [chosen]):
        better = beat_baseline(base_dev, scored)
        say("note: " + ("no candidate beat the baseline on development" if not better else
                        "the chosen candidate did not beat the baseline on development") +
            ": the final check has no development gain to confirm, and it counts as a look at this test part")
    check = final_check(dataset, split, dimension, method, base_dev, chosen, options, **common)
    if check.check_number > 1:
        say(f"note: this is final check number {check.check_number} on this test part: it was looked at before")
    return AlignReport(split=split, baseline=base_dev, candidates=scored, chosen=chosen, rule=settings.rule,
                       test=check, settings=agreement, dataset_id=dataset.id, dimension=dimension,
                       method=str(method), model=options.first_endpoint.model, estimate=estimate)


class _Common(TypedDict):
    """What every scoring step of one loop shares (passed on as keyword arguments)."""

    store: Store
    settings: Settings
    config_overrides: dict[str, Any] | None
    cancel: threading.Event | None


def _baseline_on_dev(dataset: Dataset, split: Split, dimension: str, method: str, base: Criteria,
                     options: EngineOptions, common: _Common, say: Callable[[str], None], local: bool) -> Scored:
    """The baseline criteria scored on development, after saying what that costs."""
    baseline = cand.baseline_candidate(base)
    say(_estimate_line(estimate_dev(dataset, split, dimension, method, [baseline], options, store=common["store"],
                                    config_overrides=common["config_overrides"]), "the baseline", local))
    return score_candidate(dataset, split, DEV, dimension, method, baseline, options, **common)


def _estimate_line(est: PartEstimate, what: str, local: bool) -> str:
    cost = ("a local server: no price" if local else "unknown price (model not in the price table)"
            if est.cost_usd is None else f"~${est.cost_usd:.4f}")
    return (f"estimate for {what} on the development part: {counted(est.calls, 'request')} to send, {est.cached} "
            f"cached, ~{est.prompt_tokens} prompt tokens, {cost}")


__all__ = ["AlignSettings", "align", "make_candidates"]
