"""Write docs/cli.md from the command line's own parser, so the reference lists every command and option.

    python scripts/cli_reference.py            # print the page
    python scripts/cli_reference.py --write    # write docs/cli.md
    python scripts/cli_reference.py --check    # exit 1 when docs/cli.md is not what the parser gives

Each command's summary, options and their help come from ``evalcore.cli.build_parser()``; only the grouping and one
example per command are written here. A command the groups do not name still appears, under "Other commands".
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore.cli import build_parser  # noqa: E402

PAGE = ROOT / "docs" / "cli.md"

GROUPS: list[tuple[str, str, list[str]]] = [
    ("Look at the data", "", ["datasets", "runs"]),
    ("Meta-evaluate a run", "What each figure means, and every `--json` key: [statistics.md](statistics.md).",
     ["meta", "bias", "plan", "jury", "gate"]),
    ("Score with an LLM judge", "Methods, the engine, caching, batch and costs: [scoring.md](scoring.md); what each "
     "provider supports: [providers.md](providers.md).", ["check-judge", "score", "steps", "batch", "export",
                                                                          "worker"]),
    ("Bring your own data, move runs between stores", "Formats, column roles, pairwise files and the `--json` keys: "
     "[data.md](data.md).", ["import-dataset", "import-run", "import-pairs", "import-verdicts", "import-log",
                             "import-traces", "export-run", "labels", "delete-dataset"]),
    ("Improve the judge", "The loop, its steps and `--json` keys: [improve.md](improve.md).", ["align"]),
]

EXAMPLES: dict[str, str] = {
    "datasets": "python -m evalcore datasets --json",
    "runs": "python -m evalcore runs --dataset summeval",
    "meta": "python -m evalcore meta --dataset summeval --run summeval/shen-gpt-3.5-turbo-0301-rts \\\n"
            "       --dimension coherence --level summary --coefficient kendall --json",
    "bias": "python -m evalcore bias --dataset summeval --run summeval/shen-gpt-3.5-turbo-0301-h2h --json",
    "jury": "python -m evalcore jury --dataset summeval --run summeval/shen-gpt-4-0314-rts \\\n"
            "       --run summeval/shen-gpt-3.5-turbo-0301-rts --run summeval/shen-llama-2-70b-chat-rts \\\n"
            "       --aggregate mean --name three --json",
    "plan": "python -m evalcore plan --dataset summeval --run summeval/shen-gpt-3.5-turbo-0301-rts \\\n"
            "       --dimension coherence --coefficient spearman --half-width 0.05 --json",
    "check-judge": "python -m evalcore check-judge --provider vllm --base-url http://localhost:8000/v1 --model M",
    "score": "python -m evalcore score --dataset summeval --dimension coherence --method geval \\\n"
             "       --provider openai --model gpt-4o-mini --sample-docs 10 --estimate-only",
    "steps": "python -m evalcore steps --dataset summeval --dimension coherence --provider openai --model gpt-4o-mini",
    "batch": "python -m evalcore batch collect RUN_ID --json",
    "export": "python -m evalcore export --run RUN_ID --format csv --out judgments.csv",
    "worker": "EVALCORE_DB=postgresql://judgescope@db.lab.example/judgescope python -m evalcore worker",
    "import-dataset": "python -m evalcore import-dataset examples/my_ratings.csv --name \"my study\" \\\n"
                      "       --scale coherence=1:5 --json",
    "import-run": "python -m evalcore import-run scores.csv --dataset DATASET_ID --name \"my judge\" "
                  "--dimension coherence --json",
    "import-pairs": "python -m evalcore import-pairs votes.jsonl --name \"my preferences\" --json",
    "import-verdicts": "python -m evalcore import-verdicts verdicts.csv --dataset DATASET_ID --name \"my judge\" --json",
    "gate": "python -m evalcore gate --dataset summeval --run RUN_ID --baseline BASELINE_RUN_ID --json",
    "import-log": "python -m evalcore import-log logs/my-task.eval --human metadata:rating --document-key doc --json",
    "import-traces": "python -m evalcore import-traces mlflow_traces.json --name \"support bot\" --json",
    "export-run": "python -m evalcore export-run RUN_ID --out run.jsonl --json",
    "labels": "python -m evalcore labels export labels.csv --dataset summeval",
    "delete-dataset": "python -m evalcore delete-dataset \"my study\" --yes",
    "align": "python -m evalcore align --dataset summeval --dimension coherence --method geval \\\n"
             "       --provider openai --model gpt-4o-mini --sample-docs 24 --json",
}

# What an option with no help of its own means: (command, option) first, then the option in any command.
MEANINGS: dict[tuple[str, str] | str, str] = {
    ("meta", "--level"): "one correlation level (default: every level)",
    ("meta", "--coefficient"): "one coefficient (default: every coefficient)",
    ("meta", "--dimension"): "one dimension (default: every dimension the run judged)",
    ("align", "--level"): "the level of the agreement",
    ("labels", "action"): "list the labels per annotator, write the export CSV, or read one back onto the dataset",
    ("batch", "action"): "where the run's batches are (asks the API); wait, store the replies and score the run; "
                         "cancel unfinished batches (collect records the rest)",
    ("export-run", "--out"): "the bundle file to write (JSONL)",
    ("import-dataset", "file"): "a CSV (comma or semicolon), TSV, JSON, JSONL or Parquet file",
    ("import-run", "file"): "a judge-score file, or a run bundle written by export-run",
    ("import-pairs", "file"): "a file of pairwise votes, long or wide",
    ("import-verdicts", "file"): "one row per pair and order: pair_id, order, verdict[, raw]",
    ("import-log", "path"): "an Inspect AI log, .eval or .json (read with inspect_ai, which must be installed), or a "
                            "promptfoo results JSON file",
    ("import-traces", "file"): "MLflow traces with their assessments, or Langfuse score pages, as JSON",
    "--json": "print one JSON document on stdout",
    "--dataset": "a dataset id (`datasets` lists them)",
    "--run": "a run id (`runs --dataset D` lists them)",
    "--dimension": "a dimension of the dataset",
    "run_id": "a run id",
    "--parse": "robust (failures excluded and counted) or the paper's own parse rule",
    "--concurrency": "requests in flight at once, per endpoint",
    "--timeout": "seconds per HTTP attempt",
    "--max-retries": "retries of a request that failed for a transient reason",
    "--pair-seed": "seed of --pair-sample",
}

HEAD = """# Command line reference

`python -m evalcore` mirrors the library and the app: every page's figures, scoring, imports and the alignment loop
have a command. This page is written from the parser itself by `python scripts/cli_reference.py --write`; each
command also answers `--help`.

- `--json` prints one JSON document on stdout (progress and estimates go to stderr).
- A mistake in the command or its setting (an unknown dataset, a bad file, an endpoint that refuses, a broken
  store) is one line on stderr and exit code 2, never a traceback; nothing is written.
- Commands that use the store take `--db FILE` (default `$EVALCORE_DB`, else `~/.evalcore/evalcore.db`).
- The command line is the operator's: its flags may send the environment's key to the `--base-url` they name, and it
  records no owner ([lab-server.md](lab-server.md)).
"""


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """name -> (its one-line help, its parser), in the order the parser registers them."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {name: (helps.get(name, ""), sub) for name, sub in action.choices.items()}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option_row(command: str, action: argparse.Action) -> str | None:
    if isinstance(action, argparse._HelpAction):
        return None
    names = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
    if action.choices is not None:
        value = " \\| ".join(f"`{c}`" for c in action.choices)
    elif action.nargs == 0:
        value = ""
    else:
        value = f"`{action.metavar or action.dest.upper()}`"
    notes = []
    if action.required and action.option_strings:
        notes.append("required")
    if action.nargs in ("*", "+") or isinstance(action, argparse._AppendAction):
        notes.append("repeatable")
    key = action.option_strings[0] if action.option_strings else action.dest
    help_text = (action.help or MEANINGS.get((command, key)) or MEANINGS.get(key, "")).replace("%%", "%")
    if action.default not in (None, False, argparse.SUPPRESS) and "default" not in help_text:
        notes.append(f"default `{action.default}`")
    text = "; ".join(x for x in (help_text, ", ".join(notes)) if x)
    return f"| {names} | {value} | {_cell(text)} |"


def _command(name: str, help_line: str, sub: argparse.ArgumentParser) -> list[str]:
    rows = [r for r in (_option_row(name, a) for a in sub._actions) if r]
    out = [f"### `{name}`", "", _cell(help_line[:1].upper() + help_line[1:]) + ".", ""]
    example = EXAMPLES.get(name)
    if example:
        out += ["```bash", example, "```", ""]
    if rows:
        out += ["| option | value | meaning |", "|---|---|---|", *rows, ""]
    return out


def render() -> str:
    commands = _subcommands(build_parser())
    lines = [HEAD]
    groups = list(GROUPS)
    rest = [name for name in commands if not any(name in names for _, _, names in groups)]
    if rest:
        groups.append(("Other commands", "", rest))
    lines.append("Commands: " + " · ".join(f"[{title}](#{_anchor(title)})" for title, _, _ in groups) + "\n")
    for title, intro, names in groups:
        lines += [f"## {title}", ""]
        if intro:
            lines += [intro, ""]
        for name in names:
            if name in commands:
                lines += _command(name, *commands[name])
    return "\n".join(lines).rstrip() + "\n"


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -")
    return kept.replace(" ", "-")


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = args.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write {PAGE.relative_to(ROOT)}")
    mode.add_argument("--check", action="store_true", help=f"exit 1 when {PAGE.relative_to(ROOT)} is stale")
    opts = args.parse_args(argv)
    if opts.write or opts.check:  # the committed page: the built-in methods and providers, whatever is installed here
        os.environ["JUDGESCOPE_NO_PLUGINS"] = "1"
    page = render()
    if opts.write:
        PAGE.write_text(page, encoding="utf-8")
    elif opts.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != page:
            print(f"{PAGE.relative_to(ROOT)} is stale: run python scripts/cli_reference.py --write", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
