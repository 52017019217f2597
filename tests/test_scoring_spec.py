"""One scoring rule for the CLI and the Score page: the same run sent from ``python -m evalcore score`` and through
the page's code path reaches the judge as the same requests, byte for byte (issue 20: they used to differ in
criteria and prompts for RTS on SummEval)."""

from __future__ import annotations

import json
from pathlib import Path

from evalcore.datasets import load_dataset
from evalcore.judge import runner, spec
from evalcore.judge.client import endpoint_from_preset
from evalcore.methods import paper_prompts as pp
from evalcore.methods import presets
from evalcore.store import Store
from evalcore.testing.loopback import serve

SCORING_PATHS = ("/v1/chat/completions", "/v1/completions")


def cli_score(srv, db: Path, *extra: str) -> dict:
    from evalcore.cli import main

    argv = ["score", "--dataset", "summeval", "--dimension", "coherence", "--method", "rts", "--limit", "3",
            "--model", "loopback-judge", "--provider", "vllm", "--base-url", srv.base_url, "--db", str(db),
            "--quiet", "--concurrency", "1", *extra]
    assert main(argv) == 0
    return Store(db).list_runs("summeval")[0].config


def page_score(srv, db: Path) -> dict:
    """What pages/score.py does: its criteria (pages/_shared.current_criteria -> default_criteria), its config
    (evalcore.views.criteria.method_config), then the scoring job's library call."""
    import pages._shared as ui
    from evalcore.views import criteria as criteria_views

    ds = load_dataset("summeval")
    store = Store(db)
    criteria = {"coherence": ui.default_criteria(ds, "coherence", "rts")}
    config = criteria_views.method_config("rts", ds)
    endpoint = endpoint_from_preset("vllm", model="loopback-judge", base_url=srv.base_url)
    job_spec = spec.ScoringSpec(ds, "rts", ["coherence"], criteria, config, limit=3)
    run = runner.score_dataset(job_spec, spec.EngineOptions(endpoint, concurrency=1), store=store)
    return run.config


def scoring_bodies(srv) -> list[tuple[str, bytes]]:
    return [(p, b) for p, b in srv.bodies if p in SCORING_PATHS]


def test_cli_and_page_send_the_same_requests_byte_for_byte(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "page.db"))  # the page's default store (saved criteria: none)
    with serve(record_bodies=True) as srv:
        cli_config = cli_score(srv, tmp_path / "cli.db")
        cli_bodies = scoring_bodies(srv)
        srv.reset()
        page_config = page_score(srv, tmp_path / "page.db")
        page_bodies = scoring_bodies(srv)
    assert cli_bodies and len(cli_bodies) == len(page_bodies)
    assert cli_bodies == page_bodies  # same order too: concurrency 1, the same schedule
    assert cli_config["criteria"] == page_config["criteria"]
    # and it is the paper's prompt: Shen et al.'s RTS wording for SummEval coherence
    sent = json.loads(cli_bodies[-1][1])
    text = "\n".join(m["content"] for m in sent["messages"])
    assert presets.SHEN_CRITERIA["summeval"]["coherence"].definition.split("\n")[0][:40] in text
    assert pp.SHEN_RTS  # the preset table the config took its prompts from


def test_zhang_pairs_share_scale_is_rated_one_to_five_from_both_doors():
    ds = load_dataset("zhang_pairs")
    dim = ds.dimension_names[0]
    c = spec.default_criteria(ds, dim, "geval")
    assert (c.scale_min, c.scale_max) == (1, 5)  # the human score is a 0-1 share: no usable scale for the judge
    assert ds.dimension(dim).scale_max - ds.dimension(dim).scale_min < 2


def test_a_saved_version_is_used_when_chosen_and_the_cli_can_pick_any(tmp_path):
    """The newest saved version is no longer everyone's default (issue 21, item 8): a saved version is used when
    named (the CLI's --criteria-version) or when it is the signed-in user's own."""
    ds = load_dataset("summeval")
    store = Store(tmp_path / "s.db")
    base = spec.default_criteria(ds, "coherence", "rts", store)
    older = store.save_criteria(ds.id, base.__class__(**{**base.__dict__, "definition": "old"}))
    newer_criteria = base.__class__(**{**base.__dict__, "definition": "new"})
    newer = store.save_criteria(ds.id, newer_criteria, owner="alice")
    assert spec.default_criteria(ds, "coherence", "rts", store) == base
    assert spec.default_criteria(ds, "coherence", "rts", store, owner="alice").definition == "new"
    assert spec.default_criteria(ds, "coherence", "rts", store, version=newer[:8]).definition == "new"
    assert spec.default_criteria(ds, "coherence", "rts", store, version=older[:8]).definition == "old"
    assert spec.default_criteria(ds, "coherence", "rts", None) == base  # no store: the preset


def test_config_overrides_keep_the_papers_prompts():
    ds = load_dataset("summeval")
    paper = spec.method_config("mcq", ds)
    assert paper.prompts  # Shen et al.'s own MCQ prompts for SummEval
    config = spec.method_config("mcq", ds, {"temperature": 0.7, "max_tokens": 8})
    assert (config.temperature, config.max_tokens) == (0.7, 8)
    assert config.prompts == paper.prompts and config.template == paper.template
