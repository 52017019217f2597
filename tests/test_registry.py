"""Registration: a package outside JudgeScope (``tests/plugin_pkg``, found through its ``*.dist-info`` on sys.path, so
nothing is installed) adds a scoring method, an import format and an analysis through the entry-point groups; the
analysis then appears in ``meta --json``, the report, the Alignment page's blocks and the docs' table, its numbers
checked against a second computation; the method and the format appear in
the command line (``score --method``, scoring through the loopback server; ``import-dataset`` reading the new format),
on the Score and Data pages (the method in the menu, the extension accepted and the file read), and in the docs'
generated tables. A plugin that fails to load is named, skipped and taken out again; the rest works without it. A
plugin provider is offered (``--provider``, the presets) but trusted with no server key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from contextlib import contextmanager
from pathlib import Path

import pytest

from evalcore import registry
from evalcore.importers import DatasetValidationError, read_table

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "tests" / "plugin_pkg"
PSV = (b"doc_id|system|article|summary|coherence\n"
       b"d1|s1|An article.|A summary.|3\nd1|s2|An article.|Another summary.|4\n"
       b"d2|s1|Second article.|Third summary.|2\nd2|s2|Second article.|Fourth summary.|5\n")


@contextmanager
def plugins_from(*folders: Path):
    """The registries re-read with ``folders`` on sys.path (their ``*.dist-info`` entry points), then put back."""
    saved = {kind: r.snapshot() for kind, r in registry.REGISTRIES.items()}
    sys.path[:0] = [str(f) for f in folders]
    try:
        for r in registry.REGISTRIES.values():
            r.reload_plugins()
        yield
    finally:
        for f in folders:
            sys.path.remove(str(f))
        for kind, r in registry.REGISTRIES.items():
            r.restore(saved[kind])
        for name in [m for m in sys.modules if m.startswith(("judgescope_demo", "broken_plugin", "lab_judge"))]:
            del sys.modules[name]


@pytest.fixture
def demo_plugin():
    with plugins_from(PKG):
        yield


def _dist_info(folder: Path, name: str, version: str, entry_points: str) -> None:
    """An installed distribution as ``importlib.metadata`` finds it on sys.path: ``{name}-{version}.dist-info`` with
    its METADATA and ``entry_points.txt``."""
    dist = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def _extensions_reference():
    """scripts/extensions_reference.py, the generator of docs/extending.md's tables."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import extensions_reference
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return extensions_reference


def _entry_points_txt(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    group = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            group = line.strip("[]")
        elif "=" in line:
            k, v = (s.strip() for s in line.split("=", 1))
            out.setdefault(group, {})[k] = v
    return out


def test_the_example_package_declares_what_its_installed_metadata_says():
    declared = tomllib.loads((PKG / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    assert _entry_points_txt(PKG / "judgescope_demo-0.1.dist-info" / "entry_points.txt") == declared


def test_the_builtins_are_registered_by_their_modules_and_load_no_plugin_on_import():
    assert list(registry.METHODS)[:3] == ["geval", "explicit", "implicit"]
    assert {registry.METHODS.origin(n) for n in registry.METHODS} == {registry.BUILTIN}
    assert registry.format_of("ratings.PQ").name == "parquet" and registry.format_of("notes.txt") is None
    assert "pq" in registry.upload_extensions() and "ndjson" in registry.upload_extensions()
    assert type(registry.METHODS["rts"]).__module__ == "evalcore.methods.rts"
    from evalcore.judge.client import PRESETS

    assert sorted(PRESETS) == sorted(registry.PROVIDERS)
    assert PRESETS["azure"].api_version == registry.PROVIDERS["azure"].api_version == "2024-10-21"


def test_the_plugin_adds_a_method_and_a_format_in_process(demo_plugin):
    from evalcore.methods import METHODS, get_method

    assert list(METHODS)[-1] == "brief" and get_method("brief").label.startswith("Score only")
    assert registry.METHODS.origin("brief") == registry.FORMATS.origin("psv") == "judgescope-demo"
    table = read_table((PSV, "study.psv"))
    assert list(table.index) == [2, 3, 4, 5] and table.loc[3, "summary"] == "Another summary."
    assert table.attrs["format"] == "psv" and "PSV line numbers" in table.attrs["row_convention"]
    with pytest.raises(DatasetValidationError) as err:
        read_table((PSV + b"d3|s1|too few\n", "study.psv"))
    assert "line 6" in str(err.value) and "3 cells where the header has 5" in str(err.value)


def _cli(*args: str, db: Path) -> subprocess.CompletedProcess:
    """``python -m evalcore`` in a fresh process that finds the plugin as an installed one would be found."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(PKG)]), "EVALCORE_DB": str(db)}
    env.pop(registry.NO_PLUGINS_ENV, None)
    return subprocess.run([sys.executable, "-m", "evalcore", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def test_the_cli_scores_with_the_plugin_method_and_imports_the_plugin_format(tmp_path):
    from evalcore.testing.loopback import serve

    db = tmp_path / "cli.db"
    help_text = _cli("score", "--help", db=db).stdout
    assert "brief" in help_text.split("--method")[-1]
    with serve() as srv:
        done = _cli("score", "--dataset", "summeval", "--dimension", "coherence", "--method", "brief", "--provider",
                    "vllm", "--base-url", srv.base_url, "--model", "m", "--limit", "3", "--quiet", "--json", db=db)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["method"] == "brief" and out["outcome"]["scored"] == out["judgments"] == 3 and out["failed"] == 0
    path = tmp_path / "study.psv"
    path.write_bytes(PSV)
    done = _cli("import-dataset", str(path), "--name", "pipes", "--scale", "coherence=1:5", "--json", db=db)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["items"] == 4
    path.write_bytes(PSV + b"d3|s1|too few\n")
    done = _cli("import-dataset", str(path), "--name", "pipes 2", "--json", db=db)
    assert done.returncode != 0 and "line 6" in done.stdout + done.stderr


def test_the_docs_tables_list_the_plugin_and_the_committed_page_lists_the_builtins(demo_plugin, monkeypatch):
    ref = _extensions_reference()
    tables = ref.tables()
    assert "| `brief` | Score only (a plugin's example) | one output | `judgescope_demo_method` (plugin: judgescope-demo) |" \
        in tables
    assert "| PSV (pipe-separated) | `.psv` |" in tables and "`.pq`" in tables
    monkeypatch.setenv(registry.NO_PLUGINS_ENV, "1")
    for r in registry.REGISTRIES.values():
        r.reload_plugins()
    assert "brief" not in ref.tables()
    assert ref.main(["--check"]) == 0, "run python scripts/extensions_reference.py --write"


RUN = "summeval/shen-gpt-4-0314-rts"


def _mad_by_hand(dataset_id: str, run_id: str, dimension: str, n_resamples: int) -> tuple[float, float, float, int]:
    """The demo analysis's figures computed another way: the mean over items of |judge - human| in plain Python, and
    each bootstrap resample's mean over the items of the documents drawn (numpy's generator with seed 0 drawing
    document positions, as every interval of JudgeScope does), item by item."""
    import numpy as np

    from evalcore import runs as runs_mod

    frame = runs_mod.score_frame(runs_mod.get_dataset(dataset_id), runs_mod.load_run(run_id), dimension)
    rows = [(str(d), abs(float(j) - float(h))) for d, j, h in zip(frame["doc_id"], frame["judge"], frame["human"])
            if j == j and h == h]
    docs = sorted({d for d, _ in rows})
    by_doc = {d: [x for dd, x in rows if dd == d] for d in docs}
    drawn = np.random.default_rng(0).integers(0, len(docs), size=(n_resamples, len(docs)))
    means = []
    for draw in drawn:
        values = [x for i in draw for x in by_doc[docs[i]]]
        means.append(sum(values) / len(values))
    low, high = np.percentile(means, [2.5, 97.5])
    return sum(x for _, x in rows) / len(rows), float(low), float(high), len(rows)


def test_the_plugin_analysis_is_in_meta_json_the_report_and_the_docs_with_its_numbers(demo_plugin):
    from evalcore import cli
    from evalcore import runs as runs_mod
    from evalcore.analyses.common import run_label
    from evalcore.views import report as report_views

    assert registry.ANALYSES.origin("mean_abs_difference") == "judgescope-demo"
    assert list(registry.ANALYSES)[-1] == "mean_abs_difference"  # after the built-ins, in the order meta prints
    statistic, low, high, n = _mad_by_hand("summeval", RUN, "coherence", 200)
    doc = cli.meta_report("summeval", RUN, dimensions=["coherence"], levels=("dataset",), coefficients=("pearson",),
                          n_resamples=200)
    entry = doc["dimensions"]["coherence"]
    assert list(entry)[-1] == "mean_abs_difference" and "correlations" in entry
    got = entry["mean_abs_difference"]
    assert got["n"] == n and got["method"] == "percentile" and got["resampling"] == "documents"
    for key, want in (("statistic", statistic), ("ci_low", low), ("ci_high", high)):
        assert abs(got[key] - want) < 1e-12, (key, got[key], want)
    assert low < statistic < high
    json.dumps(doc)  # what meta --json prints
    dataset, run = runs_mod.get_dataset("summeval"), runs_mod.load_run(RUN)
    p = report_views.AnalysisParams(dataset_id="summeval", run_ids=[RUN], dimension="coherence", n_resamples=200)
    sections = report_views.registered_sections(dataset, [run], p)
    assert [s.title for s in sections] == ["Mean absolute difference between judge and human scores: coherence"]
    assert "judgescope-demo" in sections[0].text
    table = sections[0].tables[0].frame
    assert list(table["run"]) == [run_label(run)] and table["n"].iloc[0] == n
    assert abs(table["statistic"].iloc[0] - statistic) < 1e-12 and abs(table["ci_high"].iloc[0] - high) < 1e-12
    html = report_views.analysis_report(dataset, [run], report_views.AnalysisParams(  # the whole report, quickly
        dataset_id="summeval", run_ids=[RUN], dimension="coherence", n_resamples=10))
    assert "Mean absolute difference between judge and human scores: coherence" in html
    from evalcore.views.alignment import registered_blocks
    from evalcore.views.blocks import tables

    page = tables(registered_blocks(dataset, [run], "coherence", n_resamples=200))
    assert len(page) == 1 and page[0].frame.equals(table)  # the page's blocks: the report's very table
    ref = _extensions_reference()
    assert ("| `mean_abs_difference` | Mean absolute difference between judge and human scores | "
            "`mean_abs_difference` | `judgescope_demo_analysis` (plugin: judgescope-demo) |") in ref.tables()


def test_a_plugin_analysis_that_raises_is_said_in_its_place_and_the_rest_stands(tmp_path):
    _dist_info(tmp_path, "raising-analysis", "1.0", "[judgescope.analyses]\nboom = broken_plugin_boom\n")
    (tmp_path / "broken_plugin_boom.py").write_text(
        "from evalcore.registry import register_analysis\n"
        "@register_analysis('boom', label='Boom', as_dict=lambda r: {'boom': r})\n"
        "def boom(data):\n    raise ZeroDivisionError('no items')\n", encoding="utf-8")
    from evalcore import cli

    with plugins_from(tmp_path):
        entry = cli.meta_report("summeval", RUN, dimensions=["coherence"], levels=("dataset",),
                                coefficients=("pearson",), n_resamples=10)["dimensions"]["coherence"]
    assert entry["boom"] == {"error": "analysis 'boom' (from raising-analysis) failed: ZeroDivisionError: no items"}
    assert entry["correlations"][0]["n"] > 0 and "boom" not in registry.ANALYSES


def test_without_the_plugin_meta_json_has_only_the_builtin_analyses():
    assert "mean_abs_difference" not in registry.ANALYSES
    assert list(registry.ANALYSES) == ["correlations", "human_ceiling", "warnings", "systems", "agreement"]
    from evalcore import cli

    doc = cli.meta_report("summeval", RUN, dimensions=["coherence"], levels=("dataset",), coefficients=("pearson",),
                          n_resamples=10)
    assert list(doc["dimensions"]["coherence"]) == ["items", "failed", "correlations", "human_ceiling", "warnings",
                                                    "per_system", "meta_correlation", "correct_preferences"]


def test_a_plugin_that_fails_is_named_skipped_and_taken_out_again(tmp_path, first_start):
    _dist_info(tmp_path, "broken-plugin", "2.0",
               "[judgescope.methods]\nmissing = broken_plugin_absent\nclash = broken_plugin_clash\n"
               "[judgescope.formats]\nhalf = broken_plugin_half\n")
    (tmp_path / "broken_plugin_clash.py").write_text(  # takes a built-in's name
        "from evalcore.registry import register_method\nfrom evalcore.methods.rts import RTS\n"
        "class Again(RTS):\n    name = 'geval'\nregister_method(Again())\n", encoding="utf-8")
    (tmp_path / "broken_plugin_half.py").write_text(  # registers one format, then fails on an extension taken
        "from evalcore.registry import register_format\n"
        "register_format('ok-half', extensions=('.half',), unit='row', convention='rows')(lambda n, d, u: (None, []))\n"
        "register_format('csv2', extensions=('.csv',), unit='row', convention='rows')(lambda n, d, u: (None, []))\n",
        encoding="utf-8")
    with pytest.warns(registry.PluginWarning) as caught, plugins_from(tmp_path):
        methods, formats = list(registry.METHODS), list(registry.FORMATS)
        failures = {f.name: f.message() for f in registry.plugin_failures()}
        geval = type(registry.METHODS["geval"]).__module__
        at = _app("pages/data.py")  # the app opens, and says which plugin it goes on without
        shown = [w.value.replace("\\", "") for w in at.warning]
        at.switch_page("pages/score.py").run()
        assert not at.exception, [e.value for e in at.exception]
    assert sum("plugin 'clash' (broken_plugin_clash, from broken-plugin)" in w for w in shown) == 1, shown
    assert set(failures) == {"missing", "clash", "half"}
    assert "plugin 'missing' (broken_plugin_absent, from broken-plugin)" in failures["missing"]
    assert "ModuleNotFoundError" in failures["missing"] and "goes on without it" in failures["missing"]
    assert "scoring method 'geval' is already registered (by built-in)" in failures["clash"]
    assert "extension .csv is already format 'csv'" in failures["half"]
    assert "ok-half" not in formats and "geval" in methods and geval == "evalcore.methods.geval"
    assert len(caught) == 3 and set(registry.METHODS) >= {"geval", "rts"}


def _app(page: str):
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.skipif(tuple(int(x) for x in __import__("streamlit").__version__.split(".")[:2]) < (1, 67),
                    reason="found at the dependency floors: streamlit 1.56's AppTest does not hand this test's "
                           "widget input to the page (passes on 1.67; the page's code path is the same)")
def test_the_score_and_data_pages_offer_the_plugin_method_and_format(demo_plugin, first_start):
    at = _app("pages/score.py")
    assert "brief" in at.selectbox(key="method").options
    at.selectbox(key="method").set_value("brief").run()
    assert not at.exception and at.selectbox(key="method").value == "brief"
    at.switch_page("pages/data.py").run()
    uploader = at.file_uploader(key="upload")
    assert ".psv" in list(uploader.proto.type) and ".pq" in list(uploader.proto.type)
    assert any("PSV (pipe-separated) (.psv)" in c.value.replace("\\", "") for c in at.caption)  # escaped Markdown
    uploader.upload("study.psv", PSV, "text/plain")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="role_doc_id").value == "doc_id"


def test_a_plugin_provider_is_offered_but_trusted_with_no_server_key(tmp_path):
    _dist_info(tmp_path, "lab-judge", "1.0", "[judgescope.providers]\nmylab = lab_judge_providers\n")
    (tmp_path / "lab_judge_providers.py").write_text(
        "from evalcore.registry import register_provider\n"
        "register_provider('mylab', base_url='https://judge.mylab.example/v1', api_key_env='OPENAI_API_KEY')\n",
        encoding="utf-8")
    from evalcore.cli import build_parser
    from evalcore.judge import trust
    from evalcore.judge.client import PRESETS

    with plugins_from(tmp_path):
        choices = next(a for a in build_parser()._subparsers._group_actions[0].choices["score"]._actions
                       if a.dest == "provider").choices
        preset = PRESETS["mylab"]
        sent = trust.server_key_allowed(preset.base_url, preset.api_key_env, environ={})
        openai_ok = trust.server_key_allowed("https://api.openai.com/v1", "OPENAI_API_KEY", environ={})
    assert "mylab" in choices and preset.provider == "mylab" and preset.base_url == "https://judge.mylab.example/v1"
    assert openai_ok and not sent  # the server's OpenAI key goes to OpenAI's address, never to the plugin's
    assert "mylab" not in PRESETS


def test_the_alignment_page_draws_the_plugin_analysis(demo_plugin, first_start):
    at = _app("pages/alignment.py")
    label = "Mean absolute difference between judge and human scores"
    shown = [e.value for kind in ("markdown", "subheader", "header") for e in getattr(at, kind)]
    assert any(label in str(v) for v in shown), shown[-5:]
