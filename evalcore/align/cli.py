"""``python -m evalcore align``: the alignment loop unattended (evalcore.align.auto).

    python -m evalcore align --dataset summeval --dimension coherence --method geval --base-url URL [--model M]
        [--candidates N] [--test-share 0.3] [--seed S] [--sample-docs K] [--split ID] [--edit-definition TEXT]...
        [--criteria-version HASH] [--choose best-dev|VERSION] [--meta-prompt FILE] [--examples N] [--fewshot-k K]
        [--level L] [--coefficient C] [--resamples N] [--json]

The endpoint flags are ``score``'s: the command line is the operator's, so ``--base-url`` may receive the
environment's key (evalcore.judge.trust); the key itself is never a flag.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from evalcore import settings

if TYPE_CHECKING:
    from evalcore.model import Dataset
    from evalcore.store import Store

# evalcore.meta.compare_labels.LABEL_STATISTICS, written out so that the CLI starts without importing scikit-learn
# (tests/test_align_labels.py checks they are the same)
LABEL_STATISTICS = ("cohen_kappa", "weighted_kappa", "accuracy")


def _dataset(args: argparse.Namespace, store: Store) -> Dataset:
    from evalcore import runs
    from evalcore.sampling import documents_subset, sample_documents

    ds = runs.get_dataset(args.dataset, store, with_labels=False)
    if args.sample_docs is None:
        return ds
    if args.sample_docs < 2:  # said of the choice: the dataset itself may hold many more
        raise ValueError(f"--sample-docs {args.sample_docs}: a development / test split needs two or more documents "
                         f"(dataset {ds.id!r} has {ds.items['doc_id'].nunique():,})")
    docs = sample_documents(ds, args.sample_docs, seed=args.seed, how="random", dimension=args.dimension)
    return documents_subset(ds, docs)


def _options(args: argparse.Namespace):
    from evalcore.judge.cli_common import endpoint_of
    from evalcore.judge.spec import EngineOptions

    if not args.model:
        args.model = settings.current().openai_model
        if not args.model:
            raise ValueError("align needs the judge's model: --model M (or set OPENAI_MODEL)")
    args.base_url = [args.base_url] if args.base_url else None
    return EngineOptions(endpoint_of(args), concurrency=args.concurrency, max_retries=args.max_retries,
                         timeout_s=args.timeout)


def cmd_align(args: argparse.Namespace) -> int:
    from evalcore.align import auto, candidates, loop
    from evalcore.align.split import load_split
    from evalcore.judge.cli_common import json_safe, store_of

    store = store_of(args)
    dataset = _dataset(args, store)
    options = _options(args)
    dim = dataset.dimension(args.dimension)
    coefficient = args.coefficient or loop.default_settings(dim).coefficient
    agreement = loop.Settings(level=args.level, coefficient=coefficient, n_resamples=args.resamples,
                              random_state=args.seed)
    settings = auto.AlignSettings(
        test_share=args.test_share, seed=args.seed, n_candidates=args.candidates,
        split=load_split(store, dataset.id, args.split) if args.split else None,
        base=candidates.baseline_criteria(dataset, args.dimension, args.method, store, version=args.criteria_version),
        edits=tuple(args.edit_definition or ()), rule=args.choose,
        meta_prompt=open(args.meta_prompt, encoding="utf-8").read() if args.meta_prompt else candidates.META_PROMPT,
        n_examples=args.examples, fewshot_k=args.fewshot_k, agreement=agreement,
        config_overrides=json.loads(args.config) if args.config else None)
    report = auto.align(dataset, args.dimension, args.method, options, settings, store=store,
                        log=None if args.quiet else (lambda m: print(m, file=sys.stderr)))
    out = json_safe(report.to_json())
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(_text(out))
    return 0


def _fmt(d: dict[str, Any] | None) -> str:
    if not d or d.get("statistic") is None:
        return "undefined"
    return f"{d['statistic']:.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}]"


def _text(out: dict[str, Any]) -> str:
    s, t = out["split"], out["test"]
    lines = [f"split {s['split_id']}: {len(s['dev_documents'])} development / {len(s['test_documents'])} test "
             f"documents (seed {s['seed']}, stratified by {s['strata']})",
             f"baseline {out['baseline']['version']}: development {_fmt(out['baseline']['dev'])}"]
    lines += [f"  {c['source']:<9}{c['version']}: development {_fmt(c['dev'])}" for c in out["candidates"]]
    d = t["difference"]
    lines += [f"chosen {out['chosen']['version']} ({out['chosen']['source']}, rule {out['chosen']['rule']})",
              f"test: baseline {_fmt(t['baseline'])}, chosen {_fmt(t['chosen'])}",
              f"difference {_fmt(d)}, p = {d['pvalue']:.3g}: {t['verdict']}",
              f"development gain {t['dev_gain']:.3f}, test gain {t['test_gain']:.3f}, optimism {t['optimism']:.3f}",
              _gains(t),
              f"final check number {t['final_check']} on this test part" +
              (" (it had been looked at before)" if t["final_check"] > 1 else "")]
    return "\n".join(lines)


def _gains(t: dict[str, Any]) -> str:
    """The two gains in words, as the Improve page says them (loop.gain_sentence; None in the JSON: undefined)."""
    from evalcore.align.loop import gain_sentence

    def num(x: float | None) -> float:
        return float("nan") if x is None else float(x)

    return gain_sentence(num(t["dev_gain"]), num(t["test_gain"]), t["verdict"])


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from evalcore import registry
    from evalcore.align.loop import CHOOSE_BEST_DEV

    a = subparsers.add_parser("align", help="improve the judge's prompt on a development part, verdict on a "
                                            "held-out test part")
    a.add_argument("--dataset", required=True)
    a.add_argument("--dimension", required=True)
    a.add_argument("--method", required=True, help="a per-item scoring method: "
                   + ", ".join(n for n, m in registry.METHODS.items() if not m.pairwise))
    a.add_argument("--model", help="the judge's model (default $OPENAI_MODEL)")
    a.add_argument("--base-url", help="the endpoint's base URL (default: the provider preset's)")
    a.add_argument("--provider", default="openai", choices=sorted(registry.PROVIDERS),
                   help="the provider's preset (as score's --provider)")
    a.add_argument("--api-key-env", help="environment variable holding the API key (default: the provider's)")
    a.add_argument("--api-version", help="Azure OpenAI api_version")
    a.add_argument("--candidates", type=int, default=3, help="candidates to make (proposals and few-shot; default 3)")
    a.add_argument("--test-share", type=float, default=0.3, help="share of documents held out for test (0.3)")
    a.add_argument("--seed", type=int, default=0, help="seed of the split, the random few-shot draws, the bootstrap")
    a.add_argument("--split", help="a stored split id (or prefix) instead of a new one")
    a.add_argument("--sample-docs", type=int, metavar="K", help="work on K documents drawn at random (--seed)")
    a.add_argument("--edit-definition", action="append", metavar="TEXT",
                   help="your own definition of the dimension as a candidate (repeat for several)")
    a.add_argument("--criteria-version", help="the starting criteria (a saved version; default: what score uses)")
    a.add_argument("--choose", default=CHOOSE_BEST_DEV,
                   help="best-dev (highest development agreement, default) or a candidate's criteria version")
    a.add_argument("--meta-prompt", metavar="FILE", help="your own meta-prompt template (see candidates.META_PROMPT)")
    a.add_argument("--examples", type=int, default=8, help="development disagreements shown to a proposal (8)")
    a.add_argument("--fewshot-k", type=int, default=4, help="examples per few-shot candidate (4)")
    a.add_argument("--level", choices=["dataset", "summary", "system"], default="dataset")
    a.add_argument("--coefficient", choices=["pearson", "spearman", "kendall", *LABEL_STATISTICS],
                   help="how agreement with the humans is measured: a correlation (default spearman; --level applies), "
                        "or on a categorical dimension cohen_kappa (the default on a nominal one), weighted_kappa "
                        "(ordinal) or accuracy")
    a.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the CIs and the test")
    a.add_argument("--config", help="method config overrides as JSON")
    a.add_argument("--concurrency", type=int, default=16)
    a.add_argument("--timeout", type=float, default=60.0)
    a.add_argument("--max-retries", type=int, default=6)
    a.add_argument("--db", help="the store: a SQLite file or a postgresql:// URL (default $EVALCORE_DB or ~/.evalcore/evalcore.db)")
    a.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=cmd_align)


__all__ = ["register", "cmd_align"]
