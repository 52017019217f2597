"""What the hardening catalogue's judge cases share: a tiny dataset, a one-request method, an endpoint on the
loopback server, and the checks every case ends with (store intact, no secret in any file)."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from evalcore.judge.client import Endpoint
from evalcore.types import Capabilities, ChatRequest, Criteria, Outcome
from evalcore.model import Dataset, Dimension

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-hardening-TOPSECRET-4242"
KEY_ENV = "EVALCORE_HARDENING_KEY"
CAPS = Capabilities(chat_logprobs=True, top_logprobs=20, honours_n=True, echo_logprobs=True)


@dataclass(frozen=True)
class OneShotConfig:
    max_tokens: int = 8


class OneShot:
    """One chat request per item asking for a 1-5 score; the first digit of the reply is the score."""

    name = "oneshot"
    pairwise = False
    parser = "first-digit"

    def default_config(self):
        return OneShotConfig()

    def load_config(self, data):
        return OneShotConfig(**(data or {}))

    def plan(self, config, caps):
        return config, ""

    def build_requests(self, task, criteria, config):
        prompt = f"Text: {task.output}\nRate the {criteria.dimension} from 1 to 5."
        return [ChatRequest(messages=(("user", prompt),), max_tokens=config.max_tokens)]

    def score(self, task, criteria, config, responses, *, parse_mode="robust"):
        text = responses[0].choices[0].text
        m = re.search(r"[1-5]", text)
        if not m:
            return Outcome(value=None, status="failed", reason="no score found in reply", raw=text)
        return Outcome(value=float(m.group()), status="ok", raw=text, estimator="first-digit")


def dataset(n_items: int = 4, *, dataset_id: str = "tiny", system: str = "S", item_prefix: str = "d") -> Dataset:
    ids = [f"{item_prefix}{i}" for i in range(n_items)]
    items = pd.DataFrame({"item_id": ids, "doc_id": ids, "system_id": [system] * n_items,
                          "output": [f"summary {i} of the article" for i in ids]})
    documents = pd.DataFrame({"doc_id": ids, "source": [f"article {i}" for i in ids],
                              "references": [[] for _ in ids], "context": [""] * n_items})
    human = pd.DataFrame({"item_id": ids, "dimension": "coherence", "score": [3.0] * n_items})
    return Dataset(id=dataset_id, name="Tiny", task="summarization", dimensions=[Dimension("coherence", 1, 5)],
                   documents=documents, items=items, human_scores=human)


CRITERIA = {"coherence": Criteria("coherence", "Rate a summary.", "coherence definition", 1, 5, "1. Read.")}


def endpoint(srv, **kw) -> Endpoint:
    """The loopback as the operator's own endpoint (a library caller's, like the command line's): the environment's
    key may go there (evalcore.judge.trust). tests/hardening/test_trust.py covers endpoints that are not."""
    kw.setdefault("operator_configured", True)
    return Endpoint(kw.pop("base_url", srv.base_url), "loop-model", api_key_env=KEY_ENV, provider="openai", **kw)


def integrity_ok(path: Path) -> bool:
    con = sqlite3.connect(str(path))
    try:
        return con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        con.close()


def files_bytes(*dirs: Path) -> bytes:
    """Every file under ``dirs`` (the store with its -wal/-shm, exports, logs), concatenated."""
    out = b""
    for d in dirs:
        for p in sorted(Path(d).rglob("*")):
            if p.is_file():
                out += p.read_bytes()
    return out

