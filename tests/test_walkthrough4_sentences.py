"""A researcher's walkthrough, round 4: sentences that were false or ungrammatical, and a list that went stale.

Each test names what was seen: "1 documents"; "(000 §3.1)" and "for an estimated unknown" on the Score page;
check-judge predicting a completion budget the run then raised; "Runs scored here" not listing a run scored a moment
ago elsewhere; the README silent on where the store lives.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from evalcore.model import counted

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------------ counts


def test_counted_agrees_the_noun_with_the_count():
    assert counted(1, "document") == "1 document"
    assert counted(0, "document") == "0 documents"
    assert counted(2, "document") == "2 documents"
    assert counted(np.int64(1), "item") == "1 item"  # numpy's integers too
    assert counted(1234, "item") == "1,234 items"
    assert counted(3, "reply") == "3 replies" and counted(2, "day") == "2 days"  # consonant + y, vowel + y
    assert counted(2, "analysis", "analyses") == "2 analyses"


def _one_document_frames():
    """Two judges on one document of 6 outputs: what a one-document test part or run gives."""
    import pandas as pd

    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, 6).astype(float)
    base = pd.DataFrame({"item_id": [f"d0-s{i}" for i in range(6)], "doc_id": "d0",
                         "system_id": [f"s{i}" for i in range(6)], "human": human})
    return base.assign(judge=human + rng.normal(0, 1, 6)), base.assign(judge=rng.normal(3, 1, 6))


def test_messages_about_few_documents_say_1_document():
    from evalcore.align.split import Split
    from evalcore.meta.compare import few_documents_warning, paired_difference
    from evalcore.meta.inference import Support, support_warnings
    from evalcore.views import improve as views

    a, b = _one_document_frames()
    words = support_warnings(Support(n_documents=1, n_systems=6))
    assert any("1 document" in w for w in words) and not any(re.search(r"\b1 documents|document\(s\)", w)
                                                             for w in words)
    res = paired_difference(a, b, n_resamples=50, method="bootstrap")
    said = few_documents_warning(res)
    assert "rests on 1 document:" in said and "1 documents" not in said
    split = Split(dataset_id="x", dimension="d", seed=0, test_share=0.5, strata="system", dev_docs=("a", "b"),
                  test_docs=("c",))
    text = " ".join(n.text for n in views.split_section(_tiny_dataset(), split).warnings)
    assert "holds 1 document:" in text and "1 documents" not in text
    assert "1 test document" in views.split_label(split) and "1 test documents" not in views.split_label(split)


def _tiny_dataset():
    from evalcore import datasets
    from evalcore.sampling import documents_subset

    ds = datasets.load_dataset("summeval")
    return documents_subset(ds, list(dict.fromkeys(ds.items["doc_id"]))[:3])


# --------------------------------------------------------------------------------------------- Score page


def test_the_spending_box_says_an_unknown_price_as_unknown_never_as_an_amount():
    from evalcore.views.format import consent_label

    unknown = consent_label(1, "api.example.com", None, "this model's price is unknown").replace("\\", "")
    assert "estimated unknown" not in unknown and "1 request to" in unknown and "1 requests" not in unknown
    assert "price is unknown" in unknown and unknown.endswith("I confirm")
    known = consent_label(12, "api.example.com", 1.5, "the estimate is above $1.00").replace("\\", "")
    assert "12 requests to api.example.com for an estimated $1.50 (the estimate is above $1.00)" in known


def test_the_g_eval_fallback_note_cites_the_paper_not_its_file_number():
    from evalcore.methods import METHODS
    from evalcore.types import Capabilities

    m = METHODS["geval"]
    _, note = m.plan(m.default_config(), Capabilities(chat_logprobs=False, top_logprobs=0, honours_n=True))
    assert "20-sample fallback (Liu et al. 2023, §3.1)" in note and "000" not in note


def test_check_judge_predicts_the_reasoning_budget_the_run_then_gives(tmp_path):
    """A judge that writes its reasoning in the content (<think>...): the capability probe's one-token replies show
    "<" only; check-judge's prediction then said 5 tokens per G-Eval item where the run raised every request to the
    reasoning budget. Both now come from the engine's one rule (contract.reasoning_room)."""
    from evalcore import datasets
    from evalcore.judge import runner
    from evalcore.judge.check import check_judge
    from evalcore.judge.client import Endpoint
    from evalcore.judge.contract import REASONING_BUDGET
    from evalcore.judge.spec import EngineOptions, default_spec
    from evalcore.store import Store
    from evalcore.testing.loopback import serve
    from evalcore.testing.loopback_profiles import PROFILES

    store = Store(tmp_path / "s.db")
    with serve(profile=PROFILES["vllm-think-in-content"]) as srv:
        ep = Endpoint(base_url=srv.base_url, model="qwen3", provider="vllm", api_key_env="VLLM_API_KEY")
        check = {m.method: m for m in check_judge(ep, store=store).methods}
        run = runner.score_dataset(default_spec(datasets.load_dataset("summeval"), "geval", ["coherence"], limit=2),
                                   EngineOptions(endpoint=ep), store=Store(tmp_path / "fresh.db"))
    assert check["geval"].completion_tokens_per_item == REASONING_BUDGET
    assert f"raised to {REASONING_BUDGET:,} tokens" in check["geval"].variant
    assert f"raised to {REASONING_BUDGET:,} tokens" in run.config["variant"]  # the run, from a fresh store
    with serve() as plain:  # a judge that does not reason keeps the methods' own budgets
        ep = Endpoint(base_url=plain.base_url, model="plain", provider="vllm", api_key_env="VLLM_API_KEY")
        check = {m.method: m for m in check_judge(ep, store=Store(tmp_path / "p.db")).methods}
    assert check["geval"].completion_tokens_per_item < REASONING_BUDGET and "raised" not in check["geval"].variant


def test_runs_scored_here_lists_a_run_scored_elsewhere_at_once(first_start):
    """A run scored by the CLI (or another session) while the Score page is open is listed on its next rerun: the
    run list is keyed by the store's runs version, not kept for 30 s."""
    pytest.importorskip("streamlit")
    from evalcore.store import Store
    from tests.test_app_pages import assert_clean, goto, new_app

    at = new_app(dataset="summeval", dimension="coherence")
    at.run()
    goto(at, "score")
    assert any("No local run on this dataset yet" in i.value for i in at.info)
    store = Store(first_start)
    store.create_run(run_id="summeval/cli-run", dataset_id="summeval", method="geval", model="m", label="from the CLI",
                     config={"method": "geval", "model": "m"}, status="running")
    store.finish_run("summeval/cli-run", status="done", stats={})
    at.run()
    assert_clean(at)
    assert "from the CLI" in at.selectbox(key="local_run").options  # shown by its label


# ---------------------------------------------------------------------------------------------------- README


def test_the_readme_says_where_the_store_lives_and_how_to_choose_it():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("python -m streamlit run app.py")
    near = readme[start:start + 600]
    assert "EVALCORE_DB" in near and "~/.evalcore/evalcore.db" in near


# -------------------------------------------------------------------------------------------- Alignment page


def test_a_one_document_run_has_no_interval_and_says_so():
    """Resampling one document gives that document back: the interval drawn was the estimate itself (zero width).
    None is given now, and the note says why; a paired comparison on one document has no bootstrap p-value, and its
    permutation p-value is exactly 1 (swapping the judges only flips the difference's sign)."""
    from evalcore.meta import correlate
    from evalcore.meta.compare import paired_difference

    a, b = _one_document_frames()
    e = correlate(a, n_resamples=50)
    assert np.isnan(e.ci_low) and np.isnan(e.ci_high)
    assert e.notes == ("no interval: a bootstrap over one document has nothing to resample",)
    two = correlate(a.assign(doc_id=["d0", "d0", "d0", "d1", "d1", "d1"]), n_resamples=50)
    assert two.ci_low < two.ci_high and two.notes == ()  # two documents: an interval as before
    boot = paired_difference(a, b, n_resamples=50, method="bootstrap")
    perm = paired_difference(a, b, n_resamples=50, method="permutation")
    assert np.isnan(boot.ci_low) and np.isnan(boot.pvalue) and perm.pvalue == 1.0


def test_the_ceiling_heading_says_on_which_items_it_is_computed():
    """A run correlated on 8 items of which two experts rated 4: the ceiling is on those 4, and the heading no
    longer claims "exactly the items the run is correlated on"."""
    import pandas as pd

    from evalcore.model import Run
    from evalcore.testing.labels import label_dataset
    from evalcore.views import alignment

    ds, _ = label_dataset(kind="ordinal", n_docs=4, n_systems=2, n_annotators=2, seed=3)
    rated = set(ds.items["item_id"][:4])
    ds.annotations = ds.annotations[ds.annotations["item_id"].isin(rated)].reset_index(drop=True)
    rng = np.random.default_rng(0)
    run = Run(run_id="x/run", dataset_id=ds.id, method="geval", model="m", judgments=pd.DataFrame(
        {"item_id": ds.items["item_id"], "dimension": "faithful", "raw": "", "value": rng.integers(0, 3, 8) * 1.0,
         "status": "ok", "reason": "", "estimator": ""}))
    ceiling = alignment.run_ceilings(ds, [run], "faithful", level="dataset", coefficient="spearman")
    assert set(ceiling["n_items"]) == {4}  # of the run's 8
    notes = alignment.correlations_view(pd.DataFrame({"level": ["dataset"], "coefficient": ["spearman"],
                                                      "statistic": [0.1]}), "faithful", level="dataset",
                                        coefficient="spearman").notes
    heading = notes[-1].text
    assert "exactly the items" not in heading and "at least one other rated" in heading and "n_items" in heading


def test_the_human_ceiling_on_one_document_has_no_interval_either():
    """The ceiling's mean row on a one-document run was drawn as [0.778, 0.778]: no interval now."""
    from evalcore import datasets
    from evalcore.meta.agreement import human_ceiling

    ds = datasets.load_dataset("summeval")
    one = ds.items[ds.items["doc_id"] == ds.items["doc_id"].iloc[0]]["item_id"]
    t = human_ceiling(ds.annotations, ds.items, "coherence", level="dataset", n_resamples=50, item_ids=one)
    mean = t[t["annotator"] == "mean"].iloc[0]
    assert np.isnan(mean["ci_low"]) and np.isnan(mean["ci_high"]) and 0 < mean["statistic"] < 1
    two = ds.items[ds.items["doc_id"].isin(ds.items["doc_id"].unique()[:2])]["item_id"]
    t = human_ceiling(ds.annotations, ds.items, "coherence", level="dataset", n_resamples=50, item_ids=two)
    mean = t[t["annotator"] == "mean"].iloc[0]
    assert mean["ci_low"] < mean["ci_high"]


def test_the_improve_page_says_no_interval_where_the_development_part_has_none():
    from evalcore.align.candidates import Candidate
    from evalcore.align.loop import Agreement, Scored, Settings
    from evalcore.types import Criteria
    from evalcore.views import improve as views

    crit = Criteria(dimension="coherence", task_introduction="Rate.", definition="d", scale_min=1, scale_max=5)
    base = Scored(Candidate(crit, "baseline"), "dev", "r1", Agreement(0.48, float("nan"), float("nan"), 16))
    blocks = views.candidates_blocks(base, [], [], None, Settings(), "abcdef12", "coherence")
    assert any("No 95% interval" in getattr(b, "text", "") for b in blocks)
    metrics = views.baseline_metrics(base, type("D", (), {"items": [1] * 16, "failed": 0})())
    assert "n/a" not in metrics.items[0].help and "No 95% interval" in metrics.items[0].help


def test_the_headline_chart_says_no_interval_instead_of_nan():
    import pandas as pd

    from evalcore.views import alignment

    table = pd.DataFrame({"run": ["one document"], "level": ["dataset"], "coefficient": ["spearman"],
                          "statistic": [0.36], "ci_low": [float("nan")], "ci_high": [float("nan")]})
    fig = alignment.headline_figure(table, pd.DataFrame(), level="dataset", coefficient="spearman")
    hover = fig.data[0].hovertemplate
    assert "(no interval)" in hover and "nan" not in hover


def test_label_agreement_on_one_document_has_no_interval():
    from evalcore.meta.classification import classify

    a, _ = _one_document_frames()
    labels = a.assign(human=(a["human"] > 3).astype(float), judge=(a["judge"] > 3).astype(float))
    est = classify(labels, categories=[0.0, 1.0], kind="binary", n_resamples=50)
    assert np.isnan(est.accuracy.ci_low) and np.isnan(est.accuracy.ci_high) and est.accuracy.statistic >= 0
