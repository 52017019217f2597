"""Candidate prompts: every candidate is a criteria version (``evalcore.types.Criteria``), made one of three ways.

* ``edit``: the researcher's own edit of the definition, steps or task introduction (:func:`edit_candidate`);
* ``proposal``: a revision an LLM proposes from the development part's disagreements. The META-PROMPT is a visible,
  editable template (:data:`META_PROMPT`); :func:`build_meta_prompt` fills it from development items only (it
  refuses a frame holding a test-part document); :func:`propose` sends the text as given through the judge client
  (so the endpoint trust rules of ``evalcore.judge.trust`` apply), cached in the store like every request, and
  returns the revision with a unified diff against the current criteria. A proposal is NOT saved: the caller shows
  it and saves it with :func:`save_candidate` (the page after the researcher accepts it; the CLI because
  ``align`` unattended is explicit);
* ``fewshot``: examples from the development part appended to the definition (:func:`fewshot_candidate`), chosen
  by largest disagreement, by coverage of the human scale, or at random (seeded).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evalcore.align.disagreement import Disagreement, to_human_scale
from evalcore.align.split import Split, check_dev_only, split_dataset
from evalcore.model import Dataset
from evalcore.types import ChatRequest, Criteria

if TYPE_CHECKING:  # types only: the engine and the store load where a proposal is sent
    from evalcore.judge.client import Endpoint
    from evalcore.judge.spending import Meter
    from evalcore.store import Store

SOURCES = ("baseline", "edit", "proposal", "fewshot")
FEWSHOT_HOW = ("disagreement", "coverage", "random")
FEWSHOT_HEADING = "Examples rated by humans"

# The meta-prompt (editable: pass your own ``template`` with the same {fields}). It asks for the revised definition
# (and, optionally, steps) between tags so the reply can be read back without guessing.
META_PROMPT = """You are helping a researcher improve the instructions an LLM judge follows when it rates texts.

The judge rates one {task} output at a time on "{dimension}", on a scale from {scale_min} to {scale_max}.
Its current instructions are:

<current_criteria>
Task introduction: {task_introduction}

Definition of {dimension}: {definition}

Evaluation steps:
{steps}
</current_criteria>

On the examples below the judge disagreed most with the human raters. Each shows the text, the human score, the
judge's score (both on the human scale, {human_min} to {human_max}) and the judge's reply.

{examples}

Propose a revised definition of {dimension} (and, if it helps, revised evaluation steps) that would bring the
judge's scores closer to the human scores on texts like these. Describe what humans reward and penalise in general
terms; do not quote or mention the example texts.

Reply with the revised definition between <criteria> and </criteria>, and the revised steps, if any, between
<steps> and </steps>."""

EXAMPLE_TEMPLATE = """Example {n} (system {system_id}):
Text: {output}
Human score: {human:.2f}
Judge score: {judge:.2f}
Judge's reply: {raw}"""


@dataclass(frozen=True)
class Candidate:
    """One candidate prompt: a criteria version and where it came from.

    ``source``: "baseline" (the starting criteria), "edit", "proposal" or "fewshot"; ``note``: how it was made, in
    words (stored as the criteria version's note); ``diff``: unified diff against the criteria it started from;
    ``example_items``: the development items it was built from (proposal, few-shot)."""

    criteria: Criteria
    source: str
    note: str = ""
    diff: str = ""
    example_items: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"a candidate's source is one of {list(SOURCES)}, got {self.source!r}")

    @property
    def version(self) -> str:
        """The criteria version hash (what the store and the runs key judgments by)."""
        return self.criteria.version_hash()


@dataclass(frozen=True)
class Proposal:
    """An LLM's proposed revision: the meta-prompt text sent, the reply, and the candidate read from it (with its
    diff against the current criteria). Not saved until :func:`save_candidate` is called."""

    prompt: str
    reply: str
    candidate: Candidate
    model: str = ""

    @property
    def diff(self) -> str:
        return self.candidate.diff


def _diff(base: Criteria, new: Criteria) -> str:
    from evalcore.store import criteria_diff

    return criteria_diff(base, new, name_a=f"current ({base.version_hash()})", name_b=f"candidate "
                                                                                      f"({new.version_hash()})")


SAVED_NOTE_PREFIX = "align "  # the note of every criteria version the loop saves ("align proposal: ...")


def baseline_candidate(base: Criteria) -> Candidate:
    return Candidate(criteria=base, source="baseline", note="the starting criteria")


def baseline_criteria(dataset: Dataset, dimension: str, method: str, store: Store, *, version: str | None = None,
                      owner: str | None = None) -> Criteria:
    """The criteria the loop starts from: ``version`` (a saved hash or prefix) when given, else what a ``score``
    run would use (``evalcore.judge.spec.default_criteria``: the method's preset, or the signed-in ``owner``'s own
    newest version; never a version someone else saved, issue 21 item 8), leaving aside the versions the loop
    itself saved as candidates, so that running the loop twice starts from the same place (the newest saved
    version would otherwise be the last candidate tried)."""
    from evalcore.judge.spec import default_criteria

    if version is not None or store is None or not owner:
        return default_criteria(dataset, dimension, method, store, version=version)
    for v in store.list_criteria_versions(dataset.id, dimension, owner=owner):  # newest first
        if not v["note"].startswith(SAVED_NOTE_PREFIX):
            return v["criteria"]
    return default_criteria(dataset, dimension, method, None)


def edit_candidate(base: Criteria, *, definition: str | None = None, steps: str | None = None,
                   task_introduction: str | None = None, note: str = "") -> Candidate:
    """The researcher's own edit: the fields given replace the base criteria's."""
    changes: dict[str, Any] = {k: v for k, v in (("definition", definition), ("steps", steps),
                                 ("task_introduction", task_introduction)) if v is not None}
    new = dataclasses.replace(base, **changes)
    return Candidate(criteria=new, source="edit", note=note or "researcher's edit", diff=_diff(base, new))


# ---------------------------------------------------------------------------------------------------- proposal
def _examples_text(items: pd.DataFrame, *, max_chars: int = 1200) -> str:
    blocks = []
    for n, r in enumerate(items.itertuples(index=False), start=1):
        raw = str(r.raw or "").strip() or "(no reply text)"
        blocks.append(EXAMPLE_TEMPLATE.format(n=n, system_id=r.system_id, output=str(r.output)[:max_chars],
                                              human=float(r.human), judge=float(r.judge_on_human_scale),
                                              raw=raw[:max_chars]))
    return "\n\n".join(blocks)


def proposal_examples(disagreement: Disagreement, split: Split, *, n_examples: int = 8, offset: int = 0
                      ) -> pd.DataFrame:
    """The development items a proposal is built from: the ``n_examples`` largest disagreements, at most one per
    document first (so one odd document does not fill the prompt), then the next largest; ``offset`` skips that
    many (a second proposal from the next examples)."""
    items = disagreement.items
    check_dev_only(items, split, what="the proposal's examples")
    first = items.drop_duplicates("doc_id")
    rest = items[~items["item_id"].isin(first["item_id"])]
    return pd.concat([first, rest]).iloc[offset:offset + n_examples].reset_index(drop=True)


def build_meta_prompt(base: Criteria, disagreement: Disagreement, split: Split, *, dataset: Dataset,
                      template: str = META_PROMPT, n_examples: int = 8, offset: int = 0
                      ) -> tuple[str, tuple[str, ...]]:
    """(the filled meta-prompt, the development item ids it shows). Only development items can reach it. The
    template's fields: {task}, {dimension}, {scale_min}, {scale_max}, {task_introduction}, {definition}, {steps},
    {examples}, {human_min}, {human_max} (a literal brace is written twice)."""
    examples = proposal_examples(disagreement, split, n_examples=n_examples, offset=offset)
    if examples.empty:
        raise ValueError("no development disagreement to build a proposal from (did the baseline score the "
                         "development part?)")
    hl, hh = disagreement.human_scale
    text = template.format(task=dataset.task, dimension=base.dimension, scale_min=base.scale_min,
                           scale_max=base.scale_max, task_introduction=base.task_introduction,
                           definition=base.definition, steps=base.steps or "(none)", examples=_examples_text(examples),
                           human_min=f"{hl:g}", human_max=f"{hh:g}")
    return text, tuple(str(i) for i in examples["item_id"])


def proposal_request(prompt: str, *, max_tokens: int = 1024) -> ChatRequest:
    """The proposal's request: the meta-prompt as one user message, greedy (reproducible and cacheable)."""
    return ChatRequest(messages=(("user", prompt),), temperature=0.0, max_tokens=max_tokens)


_CRITERIA_RE = re.compile(r"<criteria>\s*(.*?)\s*</criteria>", re.DOTALL | re.IGNORECASE)
_STEPS_RE = re.compile(r"<steps>\s*(.*?)\s*</steps>", re.DOTALL | re.IGNORECASE)


def parse_proposal(base: Criteria, reply: str) -> Criteria:
    """The criteria a proposal's reply describes: its <criteria> block as the definition, its <steps> block (if
    any) as the steps. ValueError quoting the reply when it has no <criteria> block (nothing is guessed)."""
    m = _CRITERIA_RE.search(reply or "")
    if m is None or not m.group(1).strip():
        raise ValueError(f"the proposal has no <criteria>...</criteria> block; reply: {(reply or '')[:300]!r}")
    steps = _STEPS_RE.search(reply)
    return dataclasses.replace(base, definition=m.group(1).strip(),
                               steps=steps.group(1).strip() if steps and steps.group(1).strip() else base.steps)


def propose(base: Criteria, prompt: str, *, endpoint: Endpoint, api_key: str | None = None, store: Store | None = None,
            example_items: tuple[str, ...] = (), timeout_s: float = 60.0, max_retries: int = 6,
            meter: Meter | None = None) -> Proposal:
    """Send the meta-prompt ``prompt`` (as built by :func:`build_meta_prompt`, or as the researcher edited it)
    through the judge client and read the revision back. Cached like every request; nothing is saved. ``meter``
    (``evalcore.judge.spending.Meter``): the estimate charged at the click settled to what the reply costs."""
    from evalcore.judge.runner import run_sync

    reply = run_sync(lambda: _asend(proposal_request(prompt), endpoint=endpoint, api_key=api_key, store=store,
                                    timeout_s=timeout_s, max_retries=max_retries, meter=meter))
    new = parse_proposal(base, reply)
    cand = Candidate(criteria=new, source="proposal", diff=_diff(base, new), example_items=tuple(example_items),
                     note=f"proposed by {endpoint.model} from {len(example_items)} development disagreements")
    return Proposal(prompt=prompt, reply=reply, candidate=cand, model=endpoint.model)


async def _asend(request: ChatRequest, *, endpoint: Endpoint, api_key: str | None, store: Store | None,
                 timeout_s: float, max_retries: int, meter: Meter | None = None) -> str:
    from evalcore.judge.client import JudgeClient, RequestFailed
    from evalcore.judge.runner import CachedSender
    from evalcore.store import default_store

    client = JudgeClient(endpoint, api_key=api_key, concurrency=1, max_retries=max_retries, timeout_s=timeout_s)
    try:
        resp = await CachedSender(client, store or default_store(), endpoint).send_and_cache(request)
    finally:
        await client.aclose()
        if meter is not None:
            meter.count_reply(client.stats)
    choice = resp.choices[0]
    if choice.finish_reason == "refusal":
        raise RequestFailed(f"judge refused to propose a revision: {choice.text[:160]!r}")
    return choice.text or ""


# ---------------------------------------------------------------------------------------------------- few-shot
def example_pool(dataset: Dataset, dimension: str, split: Split, disagreement: Disagreement | None = None
                 ) -> pd.DataFrame:
    """The development items few-shot examples may come from: item_id, doc_id, system_id, human, output (+ gap when
    a disagreement table is given, from the baseline's development run)."""
    dev = split_dataset(dataset, split, "dev")
    pool = dev.human_table(dimension).merge(dev.items[["item_id", "output"]], on="item_id", how="left")
    if disagreement is not None:
        pool = pool.merge(disagreement.items[["item_id", "gap"]], on="item_id", how="left")
    check_dev_only(pool, split, what="the few-shot example pool")
    return pool.sort_values("item_id", kind="stable").reset_index(drop=True)


def choose_examples(pool: pd.DataFrame, *, k: int, how: str = "coverage", seed: int = 0,
                    human_scale: tuple[float, float] = (1.0, 5.0)) -> pd.DataFrame:
    """k development items: "disagreement" (largest gap first; needs the pool's gap column), "coverage" (the item
    nearest each of k points spread evenly over the human scale, so the examples span it), "random" (seeded)."""
    if how not in FEWSHOT_HOW:
        raise ValueError(f"few-shot examples are chosen by one of {list(FEWSHOT_HOW)}, got {how!r}")
    pool = pool[pool["output"].astype(str).str.strip() != ""]
    k = min(int(k), len(pool))
    if k <= 0:
        return pool.head(0)
    rng = np.random.default_rng(seed)
    if how == "random":
        return pool.iloc[np.sort(rng.choice(len(pool), size=k, replace=False))].reset_index(drop=True)
    if how == "disagreement":
        if "gap" not in pool.columns or pool["gap"].isna().all():
            raise ValueError("few-shot by disagreement needs the baseline's development judgments (a gap per item)")
        return pool.dropna(subset=["gap"]).sort_values(["gap", "item_id"], ascending=[False, True]).head(k) \
            .reset_index(drop=True)
    shuffled = pool.iloc[rng.permutation(len(pool))].reset_index(drop=True)  # ties broken at random, seeded
    targets = np.linspace(human_scale[0], human_scale[1], k)
    taken: list[int] = []
    human = shuffled["human"].to_numpy(dtype=float)
    for t in targets:
        dist = np.abs(human - t)
        dist[taken] = np.inf
        taken.append(int(np.argmin(dist)))
    return shuffled.iloc[taken].sort_values("human", kind="stable").reset_index(drop=True)


def fewshot_text(examples: pd.DataFrame, base: Criteria, human_scale: tuple[float, float]) -> str:
    """The examples as they are appended to the definition, each human score put on the judge's scale."""
    scores = to_human_scale(examples["human"], human_scale, (base.scale_min, base.scale_max))
    lines = [f"{FEWSHOT_HEADING} (on the {base.scale_min}-{base.scale_max} scale):"]
    for n, (out, s) in enumerate(zip(examples["output"], scores), start=1):
        lines.append(f"Example {n}: {str(out).strip()}\nHuman score: {s:.1f}")
    return "\n\n".join(lines)


def fewshot_candidate(base: Criteria, pool: pd.DataFrame, split: Split, *, k: int = 4, how: str = "coverage",
                      seed: int = 0, human_scale: tuple[float, float] = (1.0, 5.0)) -> Candidate:
    """The base criteria with k development examples appended to the definition (see :func:`choose_examples`)."""
    check_dev_only(pool, split, what="the few-shot example pool")
    examples = choose_examples(pool, k=k, how=how, seed=seed, human_scale=human_scale)
    if examples.empty:
        raise ValueError("no development item to take few-shot examples from")
    new = dataclasses.replace(base, definition=f"{base.definition}\n\n{fewshot_text(examples, base, human_scale)}")
    note = f"few-shot: {len(examples)} development examples by {how}" + (f", seed {seed}" if how != "disagreement"
                                                                          else "")
    return Candidate(criteria=new, source="fewshot", note=note, diff=_diff(base, new),
                     example_items=tuple(str(i) for i in examples["item_id"]))


def save_candidate(store: Store, dataset_id: str, candidate: Candidate, *, owner: str | None = None) -> str:
    """Keep the candidate as a criteria version of the dataset (its note says where it came from; ``owner``: the
    signed-in user, None without sign-in); its hash."""
    return store.save_criteria(dataset_id, candidate.criteria, owner=owner,
                               note=f"{SAVED_NOTE_PREFIX}{candidate.source}: {candidate.note}")


__all__ = ["Candidate", "Proposal", "SOURCES", "SAVED_NOTE_PREFIX", "baseline_criteria", "FEWSHOT_HOW", "META_PROMPT", "EXAMPLE_TEMPLATE", "FEWSHOT_HEADING",
           "baseline_candidate", "edit_candidate", "proposal_examples", "build_meta_prompt", "proposal_request",
           "parse_proposal", "propose", "example_pool", "choose_examples", "fewshot_text", "fewshot_candidate",
           "save_candidate"]
