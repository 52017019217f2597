"""Which column of a pairwise preference file plays which role: :class:`PairMapping`, read by
:mod:`evalcore.importers.pairs` and by the layouts that turn a published file into the table it reads
(:mod:`evalcore.importers.conversations`, :mod:`evalcore.importers.preference_sets`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PairMapping:
    """Which column plays which role (None: absent)."""

    prompt: str | None
    output_a: str | None
    output_b: str | None
    input: str | None = None
    model_a: str | None = None
    model_b: str | None = None
    pair_id: str | None = None
    turn: str | None = None
    annotator: str | None = None
    winners: list[str] = field(default_factory=list)
    prompt_id: str | None = None  # MT-Bench's question_id: kept as the prompt's (document's) id
    conversation_a: str | None = None  # each model's whole conversation, in place of prompt and outputs
    conversation_b: str | None = None
    win_a: str | None = None  # one-hot votes (Chatbot Arena): 1 where A won, 0 elsewhere
    win_b: str | None = None
    win_tie: str | None = None
    chosen: str | None = None  # RewardBench: the preferred response, and the other (preference_sets.py)
    rejected: str | None = None
    signed: str | None = None  # HelpSteer3: a -3..3 preference (negative: output A), and each annotator's
    individual: str | None = None

    @property
    def wide(self) -> bool:
        return len(self.winners) > 1

    @property
    def onehot(self) -> tuple[str | None, str | None, str | None]:
        return self.win_a, self.win_b, self.win_tie

    @property
    def conversations(self) -> bool:
        return bool(self.conversation_a and self.conversation_b)

    def to_dict(self) -> dict[str, Any]:
        # the roles added later are left out while unused: the ids of files imported before them stay the same
        return {k: v for k, v in self.__dict__.items() if v is not None or k not in _LATER_ROLES}


_LATER_ROLES = ("prompt_id", "conversation_a", "conversation_b", "win_a", "win_b", "win_tie", "chosen", "rejected",
                "signed", "individual")
