"""Check a judge before a run: what this endpoint and model support, which variant of each method will run on it,
and what one item is expected to cost (``python -m evalcore check-judge --base-url URL --model M``).

It sends the capability probe's few tiny requests through the cache and the contract learner
(``runner.CachedSender``), so it survives every documented refusal (``evalcore.judge.contract``) and what it learns
is what the run will use; a repeated check costs nothing. The cost per item is the method's requests for a typical
item (a 2,000-character source, a 300-character output: tokens as characters / 4) at the model's price, the
completion budget counted in full (an upper bound)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore.judge import cost as cost_mod
from evalcore.judge.client import Endpoint, JudgeClient, RequestFailed
from evalcore.judge.contract import RequestOptions, variant_notes
from evalcore.judge.probes import ProbeSender
from evalcore.types import Capabilities, ChatRequest, Criteria, ItemTask, PairTask, UnsupportedByEndpoint

if TYPE_CHECKING:
    from evalcore.judge.runner import CachedSender
    from evalcore.methods.base import Method
    from evalcore.store import Store

TYPICAL_SOURCE_CHARS, TYPICAL_OUTPUT_CHARS = 2000, 300
# A request at the smallest budget a method gives (G-Eval's 5 tokens). The capability probe's one-token replies
# cannot show a judge that reasons (its first token is "<" of "<think>"); this one can, and the engine's own rule
# (contract.reasoning_room, applied by CachedSender to every reply) learns it here as it would from the run's first
# reply, so the budgets the check predicts are the ones the run sends.
REASONING_PROBE = ChatRequest(messages=(("user", "Reply with one digit from 1 to 5."),), max_tokens=5)
_CRITERIA = Criteria("coherence", "You will be given one summary written for a news article. Your task is to rate "
                     "the summary on one metric.", "Coherence - the collective quality of all sentences.", 1, 5)


@dataclass
class MethodCheck:
    method: str
    label: str
    available: bool
    variant: str = ""  # what changes on this judge ("" : as the paper ran it)
    estimator: str = ""
    requests_per_item: int = 0
    completion_tokens_per_item: int = 0
    usd_per_item: float | None = None


@dataclass
class JudgeCheck:
    endpoint: dict[str, Any]
    capabilities: Capabilities
    contract: dict[str, Any]
    refused_requests: int
    probe_requests: int
    methods: list[MethodCheck] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "capabilities": dataclasses.asdict(self.capabilities),
                "contract": self.contract, "refused_requests": self.refused_requests,
                "probe_requests": self.probe_requests, "methods": [dataclasses.asdict(m) for m in self.methods]}


def _typical(pairwise: bool) -> ItemTask | PairTask:
    source, output = "lorem ipsum " * (TYPICAL_SOURCE_CHARS // 12), "dolor sit amet " * (TYPICAL_OUTPUT_CHARS // 15)
    if pairwise:
        return PairTask("p", "d", "coherence", "a", "b", output, output, source)
    return ItemTask("i", "d", "s", "coherence", source, output, references=(output,))


def method_check(name: str, m: Method, caps: Capabilities, sender: CachedSender, endpoint: Endpoint,
                 prices: dict[str, Any] | None = None) -> MethodCheck:
    """One method on this judge: its planned variant, requests and expected cost for a typical item."""
    from evalcore.judge.runner import CHARS_PER_TOKEN

    label = getattr(m, "label", name)
    try:
        planned, note = m.plan(m.default_config(), caps)
    except UnsupportedByEndpoint as e:
        return MethodCheck(name, label, False, variant=f"not available on this judge: {e}")
    before = m.build_requests(_typical(m.pairwise), _CRITERIA, planned)
    after = [sender.shaped(r) for r in before]
    notes = ([note] if note else []) + variant_notes(before, after, sender.contract)
    prompt = sum(math.ceil(sum(len(c) for _, c in r.messages) / CHARS_PER_TOKEN) if isinstance(r, ChatRequest)
                 else math.ceil(len(r.prompt) / CHARS_PER_TOKEN) for r in after)
    completion = sum(r.max_tokens * r.n for r in after)
    usd = cost_mod.cost_usd(prompt, completion, model=endpoint.model, provider=endpoint.provider, prices=prices)
    return MethodCheck(name, label, True, variant="; ".join(notes), estimator=getattr(planned, "estimator", ""),
                       requests_per_item=len(after), completion_tokens_per_item=completion, usd_per_item=usd)


async def acheck_judge(endpoint: Endpoint, *, store: Store, api_key: str | None = None,
                       options: RequestOptions | None = None, reprobe: bool = False, timeout_s: float = 60.0,
                       prices: dict[str, Any] | None = None) -> JudgeCheck:
    from evalcore.judge.runner import CachedSender, probe_or_explain
    from evalcore.methods import METHODS

    client = JudgeClient(endpoint, api_key=api_key, concurrency=4, timeout_s=timeout_s)
    sender = CachedSender(client, store, endpoint, options=options)
    try:
        if reprobe:
            store.forget_contract(sender.identity)
            sender.contract = type(sender.contract)()
        probe = ProbeSender(sender, refresh=reprobe)
        caps = sender.contract.restrict(await probe_or_explain(client, probe))
        try:
            await probe(REASONING_PROBE)
        except RequestFailed:
            pass  # nothing learned: the methods' budgets stay as they are, as the run's would
    finally:
        await client.aclose()
    report = JudgeCheck(endpoint=endpoint.identity(), capabilities=caps, contract=sender.contract.as_dict(),
                        refused_requests=sender.refusals, probe_requests=probe.sent)
    report.methods = [method_check(n, m, caps, sender, endpoint, prices) for n, m in sorted(METHODS.items())]
    return report


def check_judge(endpoint: Endpoint, *, store: Store, api_key: str | None = None,
                options: RequestOptions | None = None, reprobe: bool = False, timeout_s: float = 60.0,
                prices: dict[str, Any] | None = None) -> JudgeCheck:
    """:func:`acheck_judge` from sync code."""
    from evalcore.judge.runner import run_sync

    return run_sync(lambda: acheck_judge(endpoint, store=store, api_key=api_key, options=options, reprobe=reprobe,
                                         timeout_s=timeout_s, prices=prices))


def format_check(report: JudgeCheck) -> str:
    """The check as lines of text (the CLI's output)."""
    c, ep = report.capabilities, report.endpoint
    lines = [f"judge {ep['model']} at {ep['base_url']} ({report.probe_requests} probe requests sent, "
             f"{report.refused_requests} refused)",
             f"  log-probs: {'yes, ' + str(c.top_logprobs) + ' alternatives' if c.chat_logprobs else 'no'}; "
             f"n > 1 in one request: {'yes' if c.honours_n else 'no'}; prompt log-probs (echo): "
             f"{'yes' if c.echo_logprobs else 'no'}"]
    for p, rule in report.contract.items():
        lines.append(f"  refused '{p}' ({rule['action']}"
                     + (f" -> {rule['value']}" if rule.get("value") is not None else "") + f"): {rule['message']}")
    lines.append("method      requests/item  cost/item   variant on this judge")
    for m in report.methods:
        usd = "?" if m.usd_per_item is None else f"${m.usd_per_item:.5f}"
        if not m.available:
            lines.append(f"{m.method:<11} {'-':>13}  {'-':>9}   {m.variant}")
            continue
        lines.append(f"{m.method:<11} {m.requests_per_item:>13}  {usd:>9}   {m.estimator or 'as configured'}"
                     + (f": {m.variant}" if m.variant else ""))
    return "\n".join(lines)


__all__ = ["JudgeCheck", "MethodCheck", "check_judge", "acheck_judge", "format_check", "method_check"]
