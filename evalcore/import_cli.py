"""``python -m evalcore import-dataset / import-run / export-run``: bringing a researcher's own work in and moving runs.

    python -m evalcore import-dataset FILE --name NAME [--role COLUMN=ROLE]... [--scale DIM=LO:HI]... [--kind DIM=KIND]...
                                      [--labels DIM=L1,L2,...]... [--dimension DIM[=LO:HI]]...
                                      [--judge COLUMN[=DIM]]... [--allow-missing-ratings] [--json]
    python -m evalcore import-run FILE --dataset ID --name NAME [--dimension DIM] [--score COLUMN] [--json]
    python -m evalcore export-run RUN_ID --out FILE.jsonl [--with-dataset | --without-dataset] [--json]
    python -m evalcore import-pairs FILE --name NAME [--winner COLUMN]... [--one-hot A,B,TIE] [--dimension DIM]
                                    [--json]
    python -m evalcore import-pairs --hf-dataset NAME [--split S] --name NAME [...]
    python -m evalcore import-verdicts FILE --dataset ID --name NAME [--dimension DIM] [--json]
    python -m evalcore import-log PATH [--human SOURCE] [--name NAME] [--document-key K] [--system-key K] [--json]
    python -m evalcore import-traces FILE.json [--name NAME] [--json]

Ratings written as words (pass/fail, yes/no, A/B/tie) import as labels of a binary or nominal dimension (guessed
for a column of a few verdict words, or ``--kind``); ``--labels`` sets their order (a binary dimension's last label is
its positive class). ``--dimension`` declares a dimension with no rating column (texts to label on the Label page).

``import-run`` takes a judge-score file (keyed by item_id or doc_id + system_id) or a run bundle written by
``export-run``. Mistakes (a bad file, an unknown column or dataset) print one message and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING, Any, TypeAlias

from evalcore.model import LABEL_KINDS, counted

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.importers.mapping import ColumnGuess, ColumnMapping
    from evalcore.importers.readers import Source
    from evalcore.model import Dimension


class CommandError(ValueError):
    """A mistake in the command line (unknown column, malformed option): printed as one line, exit status 2."""


def _pair(text: str, what: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"{what} must look like DIM=VALUE, got {text!r}")
    k, v = text.rsplit("=", 1)
    if not k.strip():
        raise argparse.ArgumentTypeError(f"{what} needs a dimension name before '=', got {text!r}")
    return k.strip(), v.strip()


def scale_arg(text: str) -> tuple[str, tuple[float, float]]:
    dim, value = _pair(text, "--scale")
    try:
        lo, hi = (float(x) for x in value.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--scale {text!r}: the scale must look like LO:HI, e.g. coherence=1:5")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise argparse.ArgumentTypeError(f"--scale {text!r}: need finite LO < HI")
    return dim, (lo, hi)


def kind_arg(text: str) -> tuple[str, str]:
    dim, kind = _pair(text, "--kind")
    if kind not in LABEL_KINDS:
        raise argparse.ArgumentTypeError(f"--kind {text!r}: the kind must be one of {', '.join(LABEL_KINDS)}")
    return dim, kind


def labels_arg(text: str) -> tuple[str, list[str]]:
    dim, value = _pair(text, "--labels")
    labels = [x.strip() for x in value.split(",")]
    if len(labels) < 2 or not all(labels):
        raise argparse.ArgumentTypeError(f"--labels {text!r}: give at least two non-empty labels separated by "
                                         "commas, e.g. verdict=fail,pass (binary: negative first, positive last)")
    return dim, labels


def dimension_arg(text: str) -> tuple[str, tuple[float, float] | None]:
    """``DIM`` or ``DIM=LO:HI``: a dimension with no rating column (texts to label), with its scale."""
    if "=" not in text:
        if not text.strip():
            raise argparse.ArgumentTypeError("--dimension needs a dimension name")
        return text.strip(), None
    dim, scale = scale_arg(text)
    return dim, scale


def onehot_arg(text: str) -> tuple[str, str, str]:
    cols = [c.strip() for c in text.split(",")]
    if len(cols) != 3 or not all(cols):
        raise argparse.ArgumentTypeError(f"--one-hot {text!r}: give three columns separated by commas (A wins, B "
                                         "wins, tie), e.g. winner_model_a,winner_model_b,winner_tie")
    return cols[0], cols[1], cols[2]


def judge_arg(text: str) -> tuple[str, str | None]:
    if "=" in text:
        col, dim = text.rsplit("=", 1)
        return col, dim or None
    return text, None


# ---------------------------------------------------------------------------------------------------- import-dataset


def mapping_for_cli(frame: pd.DataFrame, judges: list[tuple[str, str | None]], scales: dict[str, tuple[float, float]],
                    kinds: dict[str, str], labels: dict[str, list[str]] | None = None,
                    declared: list[tuple[str, tuple[float, float] | None]] | None = None,
                    roles: list[tuple[str, str]] | None = None) -> tuple[ColumnMapping, list[str]]:
    """The guessed mapping with the command line's column roles, judge columns, scales, kinds, labels and declared
    (unrated) dimensions applied (+ notes on what was guessed or changed)."""
    from evalcore.importers import (
        JudgeColumn,
        guess_columns,
        mapping_from_guesses,
        suggest_mapping,
    )

    mapping = suggest_mapping(frame.columns, frame.head(1000))
    guesses = guess_columns(frame, mapping)
    by_col = {g.column: g for g in guesses}
    notes: list[str] = _given_roles(guesses, by_col, roles or [])
    if judges:
        for col, dim in judges:
            if col not in by_col:
                raise CommandError(f"--judge {col!r}: no such column; the columns are "
                                   f"{', '.join(map(repr, by_col))}")
        named = {c for c, _ in judges}
        for g in guesses:
            if g.role == "judge" and g.column not in named:
                g.role = "ignored"
                notes.append(f"column {g.column!r} looks like a judge score but is not named by --judge: ignored")
        for col, dim in judges:
            g = by_col[col]
            g.dimension = dim or (g.dimension if g.role in ("judge", "human") else "")
            g.role, g.annotator = "judge", ""
            if not g.dimension and mapping.shape == "wide":
                humans = {h.dimension or h.column for h in guesses if h.role == "human"}
                g.dimension = next(iter(humans)) if len(humans) == 1 else ""
    for dim, kind in kinds.items():  # --kind names a word column the guess left aside: it is a rating (issue 18.14)
        found = by_col.get(dim)
        if found is not None and found.role not in ("human", "judge") and kind != "interval":
            notes.append(f"column {dim!r} (guessed {found.role}) is imported as {kind} ratings, as --kind says")
            found.role, found.dimension, found.annotator = "human", dim, ""
    try:
        out = mapping_from_guesses(guesses, scales=dict(scales), kinds=dict(kinds), labels=dict(labels or {}))
    except ValueError as e:
        raise CommandError(str(e)) from None
    out.judges = [JudgeColumn(j.column, j.dimension, j.name) for j in out.judges]
    notes += _declared_dimensions(out, declared or [])
    notes += _word_kinds(frame, out)
    notes += _default_scales(frame, out)
    return out, notes


def role_arg(text: str) -> tuple[str, str]:
    """``COLUMN=ROLE``: the role by its name (doc_id, source, human, ...) or as the Data page names it ("document
    id", "source text", "human rating", ...)."""
    from evalcore.importers import ROLES

    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--role must look like COLUMN=ROLE, got {text!r}")
    col, role = (x.strip() for x in text.rsplit("=", 1))
    by_word = {**{k: k for k in ROLES}, **{v.lower(): k for k, v in ROLES.items()}}
    if not col or role.lower() not in by_word:
        raise argparse.ArgumentTypeError(f"--role {text!r}: the role must be one of "
                                         f"{', '.join(f'{k} ({v})' for k, v in ROLES.items())}")
    return col, by_word[role.lower()]


def _given_roles(guesses: list[ColumnGuess], by_col: dict[str, ColumnGuess], roles: list[tuple[str, str]]) -> list[str]:
    """``--role COLUMN=ROLE`` applied to the guess: a role one column holds (document id, system, output, ...)
    leaves the column guessed for it ignored, said in a note; a human rating rates the dimension named as the
    column."""
    from evalcore.importers import ROLES
    from evalcore.importers.mapping import SINGLE_ROLES

    notes = []
    named = {c for c, _ in roles}
    for col, role in roles:
        if col not in by_col:
            raise CommandError(f"--role {col}={role}: no such column; the columns are {', '.join(map(repr, by_col))}")
        for g in by_col.values():
            if role in SINGLE_ROLES and g.role == role and g.column not in named:
                g.role = "ignored"
                notes.append(f"column {g.column!r} (guessed {ROLES[role]}) is ignored: --role gives that role to "
                             f"{col!r}")
        g = by_col[col]
        g.role, g.annotator = role, ""
        g.dimension = (g.dimension or col) if role in ("human", "judge") else ""
    return notes


def _declared_dimensions(mapping: ColumnMapping, declared: list[tuple[str, tuple[float, float] | None]]) -> list[str]:
    """``--dimension DIM[=LO:HI]``: a dimension without a rating column becomes unrated (texts to label); for one
    the file rates, it only declares the scale."""
    notes = []
    for dim, scale in declared:
        if dim in mapping.dimensions:
            notes.append(f"--dimension {dim!r}: the file rates it (columns {mapping.rating_columns()[dim]}); "
                         "its ratings are imported")
        elif dim not in mapping.unrated:
            mapping.unrated.append(dim)
        if scale is not None:
            mapping.scales[dim] = scale
    return notes


def _word_kinds(frame: pd.DataFrame, mapping: ColumnMapping) -> list[str]:
    """A dimension rated in words with no --kind gets the kind the Data page would prefill (binary for two words,
    nominal for more) and says which labels, in which order, it found."""
    from evalcore.importers import kind_prefill, label_prefill

    kinds, labels = kind_prefill(frame, mapping), label_prefill(frame, mapping)
    notes = []
    for dim, found in labels.items():
        if dim in mapping.kinds:
            continue
        mapping.kinds[dim] = kinds[dim]
        where = "" if mapping.labels.get(dim) else f"; set the order with --labels {dim}={','.join(found)}"
        positive = f", positive class {found[-1]!r}" if kinds[dim] == "binary" else ""
        notes.append(f"the ratings of {dim!r} are words: imported as {kinds[dim]} labels {', '.join(found)} (codes "
                     f"0-{len(found) - 1}{positive}){where}")
    return notes


def _default_scales(frame: pd.DataFrame, mapping: ColumnMapping) -> list[str]:
    """A dimension without --scale gets the scale the Data page would prefill (inferred from its human ratings,
    mapping.usual_scale), so the CLI and the page import the same file as the same dataset. Not when its ratings are all equal (or
    absent): then the importer asks for the scale rather than guess one."""
    import numpy as np

    from evalcore.importers import usual_scale
    from evalcore.importers.mapping import human_values

    notes = []
    for dim, values in human_values(frame, mapping).items():
        finite = values[np.isfinite(values)]
        if dim in mapping.scales or not dim.strip() or len(np.unique(finite)) < 2:
            continue
        lo, hi = usual_scale(finite)
        mapping.scales[dim] = (lo, hi)
        notes.append(f"no --scale for {dim!r}: {lo:g}-{hi:g}, inferred from its ratings ({finite.min():g} to "
                     f"{finite.max():g}); declare it with --scale {dim}=LO:HI if the scale is wider")
    return notes


def cmd_import_dataset(args: argparse.Namespace) -> int:
    from evalcore.importers import import_table, read_table, save_import

    frame = read_table(args.file)
    mapping, notes = mapping_for_cli(frame, args.judge or [], dict(args.scale or []), dict(args.kind or []),
                                     dict(args.labels or []), list(args.dimension or []), list(args.role or []))
    mapping.allow_missing_ratings = bool(args.allow_missing_ratings)
    result = import_table(args.file, mapping, name=args.name, table=frame)  # the table read above: not read twice
    del frame
    save_import(result)
    summary = result.summary()
    summary["warnings"] = notes + summary["warnings"]
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    ds = result.dataset
    print(f"imported {ds.name!r} as {ds.id}: {counted(len(ds.items), 'item')}, {counted(len(ds.systems), 'system')}, dimensions "
          f"{', '.join(_dimension_text(d) for d in ds.dimensions)}")
    for r in result.runs:
        ok = int((r.judgments["status"] == "ok").sum())
        print(f"run {r.run_id}: {ok} of {len(r.judgments)} judge scores")
    for n in ds.meta.get("import_notes", []):
        print(f"note: {n}")
    for w in summary["warnings"]:
        print(f"warning: {w}")
    return 0


def _dimension_text(d: Dimension) -> str:
    if d.labels:
        return f"{d.name} ({d.kind}: {', '.join(d.labels)})"
    return f"{d.name} ({d.scale_min:g}-{d.scale_max:g}, {d.kind})"


# ---------------------------------------------------------------------------------------------------- import-run


def cmd_import_run(args: argparse.Namespace) -> int:
    from evalcore import bundles

    if bundles.is_bundle(args.file):
        out = bundles.import_bundle(args.file, dataset_id=args.dataset, name=args.name)
    else:
        out = _import_scores(args)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    for one in out.get("runs") or [out]:
        print(f"run {one['run']}: {one['judgments']} judgments imported"
              + (f" (dataset {out['dataset']} imported from the bundle)" if out.get("dataset_imported") else ""))
        for w in one.get("warnings", []):
            print(f"warning: {w}")
    return 0


def _import_scores(args: argparse.Namespace) -> dict[str, Any]:
    from evalcore import runs as runs_mod
    from evalcore.importers import annotator_sources, load_run_scores
    from evalcore.store import default_store

    if not args.dataset or not args.name:
        raise CommandError("a judge-score file needs --dataset ID (the dataset it scores) and --name NAME (the run)")
    dataset = runs_mod.get_dataset(args.dataset)
    # annotations as {annotator: {item: label}} with several keys (the Alt-Test authors' llm_annotations.json, one
    # key per LLM): a run per key, named NAME-KEY, all checked before any is saved
    by_annotator = annotator_sources(args.file)
    parts: list[tuple[str | None, Source]] = [*by_annotator] if by_annotator else [(None, args.file)]
    imported = [load_run_scores(src, dataset, name=args.name if who is None else f"{args.name}-{who}",
                                dimension=args.dimension, score_column=args.score) for who, src in parts]
    store = default_store()
    with store.write():
        for one in imported:
            store.save_imported_run(one.run)
    outs = [{"run": one.run.run_id, "judgments": len(one.run.judgments), "unmatched": 0, "dataset": dataset.id,
             "coverage": one.coverage, "warnings": one.warnings} for one in imported]
    return outs[0] if len(outs) == 1 else {"runs": outs, "dataset": dataset.id}


# ---------------------------------------------------------------------------------------------------- pairwise


def cmd_import_pairs(args: argparse.Namespace) -> int:
    from evalcore.importers.pairs import import_pairs, save_pairs

    if bool(args.file) == bool(args.hf_dataset):
        raise CommandError("import-pairs: give a FILE or --hf-dataset NAME (one of them)")
    source = args.file
    if args.hf_dataset:  # a published set by name, through the datasets library (needs a network or its cache)
        from evalcore.importers.preference_sets import hub_source

        source = hub_source(args.hf_dataset, args.split)
    result = import_pairs(source, name=args.name, winners=args.winner or None, dimension=args.dimension,
                          onehot=args.one_hot)
    save_pairs(result)
    summary = result.summary()
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    print(f"imported {args.name!r} as {summary['dataset']}: {counted(summary['pairs'], 'pair')}, "
          f"{counted(summary['votes'], 'vote')} by {counted(len(summary['annotators']), 'annotator')}, "
          f"{counted(len(summary['models']), 'model')}; votes {result.outcome_text()}")
    for w in summary["warnings"]:
        print(f"warning: {w}")
    return 0


def cmd_import_verdicts(args: argparse.Namespace) -> int:
    from evalcore import runs as runs_mod
    from evalcore.importers.pairs import import_verdicts
    from evalcore.store import default_store

    dataset = runs_mod.get_dataset(args.dataset)
    if dataset.preferences.empty:
        raise CommandError(f"dataset {args.dataset!r} has no pairwise preferences: import them with import-pairs")
    run = import_verdicts(args.file, dataset, name=args.name, dimension=args.dimension)
    default_store().save_imported_run(run)
    failed = int((run.comparisons["status"] != "ok").sum())
    out = {"run": run.run_id, "verdicts": len(run.comparisons), "unmatched": 0, "unreadable": failed}
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    print(f"run {out['run']}: {out['verdicts']} verdicts imported ({failed} unreadable, counted as failures)")
    return 0


# ------------------------------------------------------------------------------------------------ delete-dataset


def cmd_delete_dataset(args: argparse.Namespace) -> int:
    """Delete an imported dataset and everything the store keeps for it (Store.delete_dataset). The command line is
    the operator's, as on a lab server: it may delete any upload (the Data page lets only the uploader)."""
    from evalcore.store import Store, default_store
    from evalcore.views.data import footprint_sentence

    store = Store(args.db) if args.db else default_store()
    found = store.find_datasets(args.dataset)
    if len(found) != 1:
        raise CommandError(f"no imported dataset has the id or name {args.dataset!r} in {store.path} (a bundled "
                           "dataset cannot be deleted; `datasets` lists them all)" if not found else
                           f"{len(found)} imported datasets are named {args.dataset!r}: give one id of "
                           f"{', '.join(found)}")
    dataset_id, name = found[0], store.dataset_name(found[0])
    if not args.yes:
        raise CommandError(footprint_sentence(repr(name), dataset_id, store.dataset_footprint(dataset_id))
                           + " Run again with --yes to delete it.")
    gone = store.delete_dataset(dataset_id)
    if args.json:
        print(json.dumps({"deleted": dataset_id, "name": name, **gone}, indent=2, ensure_ascii=False))
        return 0
    print(f"deleted dataset {name!r} ({dataset_id}): " + ", ".join(f"{n} {what.replace('_', ' ')}"
                                                                    for what, n in gone.items()))
    return 0


# ---------------------------------------------------------------------------------------------------- export-run


def cmd_export_run(args: argparse.Namespace) -> int:
    from evalcore import bundles

    out = bundles.export_run(args.run_id, args.out, with_dataset=args.with_dataset)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(f"wrote {out['out']}: run {out['run']}, {out['judgments']} judgments, {out['comparisons']} comparisons"
              + (f", with dataset {out['dataset']}" if out["carries_dataset"] else ""))
    return 0


def cmd_import_log(args: argparse.Namespace) -> int:
    from pathlib import Path

    from evalcore.importers import promptfoo, save_import
    from evalcore.importers.inspect_log import InspectLogError, import_log, looks_like_log

    head = Path(args.path).read_bytes()[:65536]
    try:
        if not looks_like_log(args.path, head) and promptfoo.looks_like_results(head):
            result = promptfoo.import_results(args.path, name=args.name)
        else:
            result = import_log(args.path, human=args.human, name=args.name, document_key=args.document_key,
                                system_key=args.system_key)
    except (InspectLogError, promptfoo.PromptfooError) as e:
        raise CommandError(str(e)) from None
    save_import(result)
    summary = {**result.summary(), "human_source": args.human or "",
               "metadata_keys": result.dataset.meta.get("metadata_keys", []),
               "draws": {r.run_id: r.n_draws for r in result.runs}}
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    ds = result.dataset
    print(f"imported {ds.name!r} as {ds.id}: {counted(len(ds.items), 'item')}, runs {', '.join(summary['runs'])}")
    return 0


def cmd_import_traces(args: argparse.Namespace) -> int:
    from evalcore.importers import save_import
    from evalcore.importers.traces import TraceFormatError, import_traces

    try:
        result = import_traces(args.file, name=args.name)
    except TraceFormatError as e:
        raise CommandError(str(e)) from None
    save_import(result)
    summary = {**result.summary(), "format": result.dataset.meta["trace_format"]}
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    ds = result.dataset
    print(f"imported {ds.name!r} as {ds.id} ({summary['format']}): {counted(len(ds.items), 'trace')}, runs "
          f"{', '.join(summary['runs'])}")
    for w in result.warnings:
        print(f"note: {w}")
    return 0


# what ArgumentParser.add_subparsers returns: each command adds its parser to it
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(sub: Subparsers) -> None:
    _register_import_traces(sub)
    _register_import_log(sub)
    _register_import_dataset(sub)
    _register_import_run(sub)
    _register_import_pairs(sub)
    _register_import_verdicts(sub)
    _register_export_run(sub)
    _register_delete_dataset(sub)


def _register_import_traces(sub: Subparsers) -> None:
    tr = sub.add_parser("import-traces", help="import judge and human scores kept on traces: MLflow assessments "
                                              "(mlflow.search_traces saved as JSON records or to_parquet) or Langfuse "
                                              "score pages "
                                              "(GET /api/public/scores saved as JSON, or the scores table exported as CSV)")
    tr.add_argument("file")
    tr.add_argument("--name", help="the dataset's name (default: the file's)")
    tr.add_argument("--json", action="store_true")
    tr.set_defaults(func=cmd_import_traces)


def _register_import_log(sub: Subparsers) -> None:
    lg = sub.add_parser("import-log", help="import an Inspect AI log (.eval or .json: its samples as items, the "
                                           "scorers' values as a judge run, its epochs as draws) or promptfoo "
                                           "results (promptfoo eval -o results.json: graded assertions as runs, "
                                           "human ratings as the humans')")
    lg.add_argument("path")
    lg.add_argument("--human", metavar="SOURCE", help="where the human ratings are: target, metadata:KEY, or edits "
                                                      "(scores edited with a provenance author)")
    lg.add_argument("--name", help="the dataset's name (default: the file's)")
    lg.add_argument("--document-key", metavar="K", help="the sample metadata key naming each sample's document")
    lg.add_argument("--system-key", metavar="K", help="the sample metadata key naming each sample's system")
    lg.add_argument("--json", action="store_true")
    lg.set_defaults(func=cmd_import_log)


def _register_import_dataset(sub: Subparsers) -> None:
    d = sub.add_parser("import-dataset", help="import a human-rated file (and its judge-score columns as runs)")
    d.add_argument("file")
    d.add_argument("--name", required=True, help="the dataset's name")
    d.add_argument("--scale", type=scale_arg, action="append", metavar="DIM=LO:HI",
                   help="a dimension's rating scale (else inferred from the ratings, with a note)")
    d.add_argument("--kind", type=kind_arg, action="append", metavar="DIM=KIND",
                   help=f"a dimension's label kind: {', '.join(LABEL_KINDS)} (default interval)")
    d.add_argument("--labels", type=labels_arg, action="append", metavar="DIM=L1,L2,...",
                   help="a categorical dimension's labels in order (words in the file are matched ignoring case and "
                        "surrounding spaces); for a binary dimension: negative first, the last is the positive class")
    d.add_argument("--dimension", type=dimension_arg, action="append", metavar="DIM[=LO:HI]",
                   help="a dimension with no rating column (texts to label on the Label page), with its scale; or "
                        "give --kind DIM=binary|nominal and --labels DIM=... instead of a scale")
    d.add_argument("--role", type=role_arg, action="append", metavar="COLUMN=ROLE",
                   help="a column's role, as the Data page's role menu gives it: doc_id (document id), system_id "
                        "(system), output, source (source text), item_id, annotator, human (human rating: the "
                        "dimension is the column's name), judge, ignored, ... (default: guessed from names and "
                        "values)")
    d.add_argument("--judge", type=judge_arg, action="append", metavar="COLUMN[=DIM]",
                   help="a judge-score column, imported as a run (default: the columns guessed as judge scores)")
    d.add_argument("--allow-missing-ratings", action="store_true",
                   help="a blank rating cell means 'not rated' (humans rated only some items), not a mistake")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_import_dataset)


def _register_import_run(sub: Subparsers) -> None:
    r = sub.add_parser("import-run", help="import a judge-score file or a run bundle as a run")
    r.add_argument("file")
    r.add_argument("--dataset", help="the dataset the scores are for")
    r.add_argument("--name", help="the run's name")
    r.add_argument("--dimension", help="the dimension scored (when the file has no dimension column)")
    r.add_argument("--score", help="the column holding the scores (default: score, value, judge, ...)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_import_run)


def _register_import_pairs(sub: Subparsers) -> None:
    pp = sub.add_parser("import-pairs", help="import pairwise human preferences (MT-Bench, Chatbot Arena, PandaLM "
                                                      "style)")
    pp.add_argument("file", nargs="?", help="one row per vote: a prompt and two outputs (question, answer_a, answer_b, ...), or "
                                 "MT-Bench's published human judgments (question_id, model_a, model_b, winner, judge, "
                                 "conversation_a, conversation_b, turn: each record one turn of two conversations), or "
                                 "LMSYS Chatbot Arena's (id, model_a, model_b, prompt, response_a, response_b, "
                                 "winner_model_a, winner_model_b, winner_tie: one-hot votes, JSON lists of turns)")
    pp.add_argument("--name", required=True, help="the dataset's name")
    pp.add_argument("--hf-dataset", metavar="NAME",
                    help="instead of a FILE, a published preference set by its dataset name (allenai/reward-bench, "
                         "nvidia/HelpSteer3, ...), read with the datasets library (pip install datasets; needs a "
                         "network or its cache) and recognised as its file would be")
    pp.add_argument("--split", default="train", help="the split read with --hf-dataset (default: train)")
    pp.add_argument("--winner", action="append", metavar="COLUMN",
                    help="a column holding votes (several: one per annotator, the column name naming the annotator)")
    pp.add_argument("--one-hot", type=onehot_arg, metavar="A_COL,B_COL,TIE_COL",
                    help="the votes are three 0/1 columns (A wins, B wins, tie), as Chatbot Arena's winner_model_a, "
                         "winner_model_b, winner_tie (recognised by those names without this option)")
    pp.add_argument("--dimension", default="preference", help="what the votes judge (default: preference)")
    pp.add_argument("--json", action="store_true")
    pp.set_defaults(func=cmd_import_pairs)


def _register_import_verdicts(sub: Subparsers) -> None:
    v = sub.add_parser("import-verdicts", help="import a judge's pairwise verdicts (pair_id, order, verdict[, raw])")
    v.add_argument("file")
    v.add_argument("--dataset", required=True, help="the pairwise dataset the verdicts are for")
    v.add_argument("--name", required=True, help="the run's name")
    v.add_argument("--dimension", help="the dimension judged (default: preference, or the dataset's only one)")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=cmd_import_verdicts)


def _register_export_run(sub: Subparsers) -> None:
    e = sub.add_parser("export-run", help="write a run (judgments, replies, config, criteria) to a bundle file")
    e.add_argument("run_id")
    e.add_argument("--out", required=True)
    g = e.add_mutually_exclusive_group()
    g.add_argument("--with-dataset", dest="with_dataset", action="store_true", default=None,
                   help="carry the dataset (default for uploaded datasets)")
    g.add_argument("--without-dataset", dest="with_dataset", action="store_false")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_export_run)


def _register_delete_dataset(sub: Subparsers) -> None:
    x = sub.add_parser("delete-dataset", help="delete an imported dataset and everything kept for it (its runs, "
                                              "labels, criteria versions, splits); not a bundled one")
    x.add_argument("dataset", help="the imported dataset's id, or its name when no other upload has it")
    x.add_argument("--yes", action="store_true", help="delete (without it: say what would be deleted, delete nothing)")
    x.add_argument("--db", help="the store: a SQLite file or a postgresql:// URL (default $EVALCORE_DB or ~/.evalcore/evalcore.db)")
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=cmd_delete_dataset)
