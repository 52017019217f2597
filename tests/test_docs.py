"""The README and docs/ stay true to the code: the README's two commands are the ones CI runs, every link and
anchor in them resolves, docs/cli.md names every command and option of the parser, docs/architecture.md names every
module, and no user-facing text (docs, the command line's help) cites an internal issue number."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from evalcore.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted([README, *DOCS.glob("*.md")])
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+|\(issue\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_anchor(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [m.group(1) for m in LINK.finditer(text) if not m.group(1).startswith(("http://", "https://", "mailto:"))]


def test_readme_gives_the_two_commands_ci_runs():
    readme = README.read_text(encoding="utf-8")
    assert 'pip install -e ".[test]" && python -m streamlit run app.py' in readme
    assert "\npython -m pytest\n" in readme
    assert "python -m pytest\n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_is_an_introduction():
    words = len(README.read_text(encoding="utf-8").split())
    assert words < 1200, f"README.md has {words} words: move reference material to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_and_anchors_resolve(page: Path):
    broken = []
    for link in _links(page):
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link}: no file {path.relative_to(ROOT)}")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{link}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_issue_numbers_in_user_facing_pages(page: Path):
    hits = [line for line in page.read_text(encoding="utf-8").splitlines() if ISSUE.search(line)]
    assert hits == []


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_cli_reference_names_every_command_and_option():
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = []
    for name, sub in _subparsers(build_parser()).items():
        if f"### `{name}`" not in page:
            missing.append(name)
        missing += [f"{name} {opt}" for a in sub._actions for opt in a.option_strings
                    if opt not in ("-h", "--help") and f"`{opt}`" not in page]
    assert missing == [], "run python scripts/cli_reference.py --write"


def test_cli_help_cites_no_issue_numbers():
    parser = build_parser()
    texts = [parser.description or ""]
    for sub in _subparsers(parser).values():
        texts += [sub.description or "", *(a.help or "" for a in sub._actions)]
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    texts += [c.help or "" for c in top._choices_actions]
    assert [t for t in texts if ISSUE.search(t)] == []


def _named(page: str, path: Path) -> bool:
    """A file is named by its path, or by its name on a line that names its folder (``pages/data.py, bias.py``)."""
    rel = path.relative_to(ROOT).as_posix()
    if rel in page:
        return True
    folder = path.parent.relative_to(ROOT).as_posix()
    in_folder_section = re.search(rf"(^#+ [^\n]*`{re.escape(folder)}/`[^\n]*$)(.*?)(?=^#+ |\Z)", page, flags=re.M | re.S)
    lines = [ln for ln in page.splitlines() if folder + "/" in ln]
    if in_folder_section:
        lines.append(in_folder_section.group(2))
    return any(f"`{path.name}`" in ln or f", {path.name}" in ln or f"`{path.name}," in ln for ln in lines)


def _modules() -> list[Path]:
    """The Python files of the checkout: git's list where there is one (work in progress not yet added is not
    asked for), else every file on disk."""
    tops = ("evalcore", "pages", "scripts", "bench", "tests")
    try:
        out = subprocess.run(["git", "ls-files", "--", *tops, "app.py"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout
        files = [ROOT / line for line in out.splitlines() if line.endswith(".py")]
    except (OSError, subprocess.CalledProcessError):
        files = [p for top in tops for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts]
        files.append(ROOT / "app.py")
    return [p for p in files if p.exists()]


def test_architecture_names_every_module():
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    missing = sorted(p.relative_to(ROOT).as_posix() for p in _modules() if not _named(page, p))
    assert not missing, f"add these to docs/architecture.md: {missing}"


def test_the_environment_variables_table_is_generated_from_the_settings():
    """docs/lab-server.md's table is evalcore.settings.Settings's (python scripts/settings_reference.py --write)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "settings_reference.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_environment_variable_the_code_reads_is_a_setting():
    """An environment variable named in evalcore/ or pages/ (EVALCORE_*, JUDGESCOPE_*, OPENAI_BASE_URL, ...) is a
    field of evalcore.settings.Settings, so it is in the documentation's table; the API keys are read by name."""
    import re

    from evalcore.settings import variables

    known = {name for name, _ in variables()}
    keys = {"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY"}
    named = set()
    for path in list((ROOT / "evalcore").rglob("*.py")) + list((ROOT / "pages").glob("*.py")):
        named |= set(re.findall(r"\b((?:EVALCORE|JUDGESCOPE)_[A-Z_]+[A-Z])\b", path.read_text(encoding="utf-8")))
    named -= {"EVALCORE_PROXY_SECRET_HEADER"}
    assert sorted(named - known - keys) == []
