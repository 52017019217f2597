"""A one-draw run of a judge that samples says so on the reliability section, and offers a command that draws it
twice on a few documents: the command parses with the command line's own parser and asks for what it says."""

from __future__ import annotations

import json
import shlex
from types import SimpleNamespace

import pandas as pd

from evalcore import cli
from evalcore.judge import resume
from evalcore.model import Run
from evalcore.views import reliability as rv
from evalcore.views.blocks import Note, Text
from tests.test_judge_runner import tiny_dataset

ENDPOINT = {"provider": "vllm", "base_url": "http://gpu1:8000/v1", "model": "gpt-5-mini"}
HELD = ("G-Eval: greedy replies became samples at the judge's default temperature 1: this judge accepts no other")


def _run(config: dict, draws: pd.DataFrame | None = None) -> Run:
    run = Run(run_id="tiny/geval-1", dataset_id="tiny", method="geval", model="gpt-5-mini", config=config,
              label="my judge")
    run.judgments = pd.DataFrame({"item_id": ["d0/S0"], "dimension": ["coherence"], "raw": ["3"], "value": [3.0],
                                  "status": ["ok"], "reason": [""]})
    if draws is not None:
        run.draws = draws
    return run


def test_why_a_judge_samples_is_read_from_what_the_run_recorded():
    assert "default temperature" in resume.sampling_reason(_run({"variant": HELD}))
    assert "temperature 0.7" in resume.sampling_reason(_run({"method_config": {"temperature": 0.7}}))
    assert resume.sampling_reason(_run({"method_config": {"probs_source": "samples"}})) == "it samples its replies"
    assert resume.sampling_reason(_run({"method_config": {"temperature": 0}})) is None
    assert resume.sampling_reason(_run({})) is None


def test_a_one_draw_run_of_a_sampling_judge_warns_and_offers_two_draws_of_a_few_documents():
    ds = tiny_dataset(5, 2)
    spec = {"method": "geval", "config": {"n_samples": 20}, "reasoning_effort": "low"}
    run = _run({"variant": HELD, "endpoint": ENDPOINT, "spec": spec})
    out = rv.blocks(ds, "my judge", "coherence", SimpleNamespace(draws=1), coefficient="spearman", run=run)
    warning = [b for b in out if isinstance(b, Note)]
    assert warning[0].kind == "warning" and "one draw of a judge that samples" in warning[0].text
    assert "leaves out the judge's own noise" in warning[0].text
    command = next(b for b in out if isinstance(b, Text)).text
    args = cli.parse_checked(shlex.split(command)[3:])  # after "python -m evalcore"
    assert (args.command, args.dataset, args.method, args.model) == ("score", "tiny", "geval", "gpt-5-mini")
    assert args.base_url == [ENDPOINT["base_url"]] and args.provider == "vllm"
    assert (args.draws, args.sample_docs, args.dimension) == (2, 5, ["coherence"])  # 5: all the dataset has
    assert json.loads(args.config) == {"n_samples": 20} and args.reasoning_effort == "low"
    assert args.run is None  # a new run, not the one-draw run resumed


def test_a_greedy_judge_or_a_run_with_draws_gets_no_such_warning():
    ds = tiny_dataset(3, 2)
    greedy = _run({"method_config": {"temperature": 0}, "endpoint": ENDPOINT})
    assert rv.one_draw_of_a_sampler(ds, greedy, "coherence") == []
    out = rv.blocks(ds, "g", "coherence", SimpleNamespace(draws=1), coefficient="spearman", run=greedy)
    assert [b.kind for b in out if isinstance(b, Note)] == ["info"]
    drawn = _run({"variant": HELD}, pd.DataFrame({"item_id": ["d0/S0"] * 2, "dimension": ["coherence"] * 2,
                                                  "draw": [0, 1], "raw": ["3", "4"], "value": [3.0, 4.0],
                                                  "status": ["ok"] * 2, "reason": [""] * 2}))
    assert rv.one_draw_of_a_sampler(ds, drawn, "coherence") == []
    unknown = Run(run_id="x", dataset_id="tiny", method="not-a-method", model="m", config={"variant": HELD})
    assert resume.second_draw_args(unknown, "coherence") is None


def test_the_alignment_page_names_the_one_draw_samplers_above_the_section():
    sampler = _run({"variant": HELD, "endpoint": ENDPOINT})
    greedy = Run(run_id="tiny/greedy", dataset_id="tiny", method="geval", model="m",
                 config={"method_config": {"temperature": 0}}, judgments=sampler.judgments)
    note = rv.one_draw_samplers_note([sampler, greedy], {"tiny/geval-1": "my judge", "tiny/greedy": "greedy"},
                                     "coherence")
    assert note.kind == "warning" and note.text.startswith("my judge: one draw of a judge that samples")
    assert "greedy" not in note.text
    assert rv.one_draw_samplers_note([greedy], {}, "coherence") is None
    assert rv.one_draw_samplers_note([sampler], {}, "fluency") is None  # it did not score that dimension
