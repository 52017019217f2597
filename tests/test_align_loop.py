"""The alignment loop end to end against a loopback judge whose quality depends on the prompt (issue 22).

SummEval, 24 documents (16 systems each), G-Eval through the engine. The judge (evalcore.testing.loopback_align)
tracks the human score when the prompt holds RUBRIC_PHRASE (which the LLM proposal adds) and is weak otherwise, so:
the loop must find the proposal; the test-part difference, its CI and p-value must equal an independent computation
from the stored judgments with scipy; a candidate tuned to the development items' noise must show a development
gain and no test gain (large optimism); a judge no prompt improves must not come out "improved"; and no test-part
text or label may reach the proposal prompt or the few-shot examples (checked on the requests the judge received).
"""

from __future__ import annotations

import json
import itertools
import re

import numpy as np
import pytest
import scipy.stats as st

from evalcore import datasets
from evalcore.align import AlignSettings, Settings, align, make_split, split_dataset
from evalcore.align.candidates import FEWSHOT_HEADING
from evalcore.judge.client import Endpoint
from evalcore.judge.spec import EngineOptions
from evalcore.sampling import documents_subset
from evalcore.store import Store
from evalcore.testing.loopback import serve
from evalcore.testing.loopback_align import MEMORISED_PHRASE, PROPOSAL_MARKER, RUBRIC_PHRASE, PromptQualityJudge

DIM = "coherence"
RESAMPLES = 400

# every test here runs the loop (about 1,500 judge requests through HTTP) or a 200-study simulation: 35-105 s each on
# two shared cores. Run by CI (python -m pytest -m slow); the quick pass has the loop's parts (test_align_split,
# test_align_candidates, test_align_queue, test_views_improve) and its CLI errors.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ds():
    full = datasets.load_dataset("summeval")
    return documents_subset(full, list(dict.fromkeys(full.items["doc_id"]))[:24])


def options(url: str) -> EngineOptions:
    return EngineOptions(Endpoint(base_url=url, model="loopback-judge", provider="vllm", api_key_env="VLLM_API_KEY"),
                         concurrency=16)


def prompts_of(srv) -> list[str]:
    out = []
    for _path, body in srv.bodies:
        req = json.loads(body)
        out.append("\n".join(str(m.get("content", "")) for m in req.get("messages", [])) or str(req.get("prompt")))
    return out


@pytest.fixture(scope="module")
def improvable(ds, tmp_path_factory):
    """One loop on a judge the rubric phrase improves: (report, store, the prompts the judge received)."""
    store = Store(tmp_path_factory.mktemp("align") / "s.db")
    with serve(scorer=PromptQualityJudge.for_dataset(ds, DIM), record_bodies=True) as srv:
        report = align(ds, DIM, "geval", options(srv.base_url),
                       AlignSettings(n_candidates=5, seed=0, agreement=Settings(n_resamples=RESAMPLES)), store=store)
        prompts = prompts_of(srv)
    return report, store, prompts


def test_the_loop_finds_the_better_candidate(improvable):
    report, _store, _ = improvable
    assert {c.candidate.source for c in report.candidates} == {"proposal", "fewshot"}
    assert report.chosen.candidate.source == "proposal"
    assert RUBRIC_PHRASE in report.chosen.candidate.criteria.definition
    assert "+" in report.chosen.candidate.diff and RUBRIC_PHRASE in report.chosen.candidate.diff
    others = [c.agreement.statistic for c in report.candidates if c.candidate.version != report.chosen.candidate.version]
    assert report.chosen.agreement.statistic > max(others + [report.baseline.agreement.statistic]) + 0.3
    t = report.test
    assert t.verdict == "improved" and t.difference.ci_low > 0 and t.difference.pvalue < 0.05
    assert t.check_number == 1
    assert t.optimism == pytest.approx(t.dev_gain - t.test_gain)
    assert t.dev_gain == pytest.approx(report.chosen.agreement.statistic - report.baseline.agreement.statistic)
    # the JSON the CLI prints carries the same figures
    j = report.to_json()
    assert j["chosen"]["version"] == report.chosen.candidate.version
    assert j["test"]["difference"]["statistic"] == t.difference.statistic
    assert [c["version"] for c in j["candidates"]] == [c.candidate.version for c in report.candidates]


def _frame(ds, store, run_id, docs):
    """item_id, doc_id, judge, human of a stored run on these documents, read straight from its judgments."""
    run = store.load_run(run_id)
    j = run.judgments[(run.judgments["dimension"] == DIM) & (run.judgments["status"] == "ok")]
    h = ds.human_scores[ds.human_scores["dimension"] == DIM][["item_id", "score"]]
    f = ds.items[["item_id", "doc_id"]].merge(h, on="item_id").merge(j[["item_id", "value"]], on="item_id")
    return f[f["doc_id"].astype(str).isin(set(docs))].rename(columns={"value": "judge", "score": "human"})


def test_the_test_difference_ci_and_pvalue_equal_an_independent_computation(improvable, ds):
    """Recomputed with scipy from the stored judgments: Spearman per judge, the documents resampled with
    numpy's default_rng(0) (the paired bootstrap's draw), BCa by hand (Efron & Tibshirani 1993, 14.10-14.15),
    the two-sided bootstrap p-value with the observed sample counted."""
    report, store, _ = improvable
    docs = report.split.test_docs
    a = _frame(ds, store, report.test.chosen.run_id, docs)
    b = _frame(ds, store, report.test.baseline.run_id, docs)
    m = a.merge(b[["item_id", "judge"]], on="item_id", suffixes=("_a", "_b"))
    doc_ids = sorted(m["doc_id"].unique())
    rows = {d: np.flatnonzero(m["doc_id"].to_numpy() == d) for d in doc_ids}
    ja, jb, h = (m[c].to_numpy(dtype=float) for c in ("judge_a", "judge_b", "human"))

    def diff(sel):
        return st.spearmanr(ja[sel], h[sel]).statistic - st.spearmanr(jb[sel], h[sel]).statistic

    est = diff(np.arange(len(m)))
    draws = np.random.default_rng(0).integers(0, len(doc_ids), size=(RESAMPLES, len(doc_ids)))
    boot = np.array([diff(np.concatenate([rows[doc_ids[i]] for i in row])) for row in draws])
    jack = np.array([diff(np.concatenate([rows[d] for d in doc_ids if d != out])) for out in doc_ids])
    z0 = st.norm.ppf((np.sum(boot < est) + 0.5 * np.sum(np.isclose(boot, est, rtol=0, atol=1e-12))) / len(boot))
    d = jack.mean() - jack
    acc = np.sum(d ** 3) / (6 * np.sum(d ** 2) ** 1.5)
    z = st.norm.ppf(0.025)
    levels = [st.norm.cdf(z0 + (z0 + zz) / (1 - acc * (z0 + zz))) for zz in (z, -z)]
    lo, hi = np.quantile(boot, levels)
    p_boot = min(1.0, 2 * min((np.sum(boot <= 0) + 1) / (RESAMPLES + 1), (np.sum(boot >= 0) + 1) / (RESAMPLES + 1)))
    # the permutation test, exactly: every one of the 2^D ways of swapping the two prompts on whole documents
    swaps = np.array(list(itertools.product([False, True], repeat=len(doc_ids))))
    doc_of = np.searchsorted(doc_ids, m["doc_id"].to_numpy())
    perm = np.array([st.spearmanr(np.where(s[doc_of], jb, ja), h).statistic
                     - st.spearmanr(np.where(s[doc_of], ja, jb), h).statistic for s in swaps])
    tol = 1e-12 * max(1.0, abs(est))  # scipy counts ties with the observed value within a relative tolerance
    p_perm = min(1.0, 2 * min(np.mean(perm <= est + tol), np.mean(perm >= est - tol)))

    got = report.test.difference
    assert got.n == len(m) == 16 * len(docs)
    assert got.statistic == pytest.approx(est, abs=1e-12)
    assert (got.ci_low, got.ci_high) == pytest.approx((lo, hi), abs=1e-9)
    assert got.ci_method == "bca"
    assert got.pvalue_bootstrap == pytest.approx(p_boot, abs=1e-12)
    assert got.pvalue_permutation == pytest.approx(p_perm, abs=1e-12)
    assert got.pvalue == max(p_boot, p_perm)  # the verdict's test: both must reject
    # and each judge's own test agreement is scipy's Spearman on its items
    assert report.test.chosen.agreement.statistic == pytest.approx(st.spearmanr(a["judge"], a["human"]).statistic)
    assert report.test.baseline.agreement.statistic == pytest.approx(st.spearmanr(b["judge"], b["human"]).statistic)


def _examples(prompt: str, heading: str, pattern: str) -> list[tuple[str, ...]]:
    section = prompt.split(heading, 1)[1] if heading in prompt else ""
    return re.findall(pattern, section)


def test_no_test_part_text_or_label_reaches_the_proposal_or_the_few_shot_examples(improvable, ds):
    report, _store, prompts = improvable
    split = report.split
    texts = ds.texts().assign(doc_id=lambda f: f["doc_id"].astype(str))
    human = ds.human_table(DIM).set_index("item_id")["human"]
    test_items = texts[texts["doc_id"].isin(split.test_docs)]
    dev_items = texts[texts["doc_id"].isin(split.dev_docs)]
    dev_outputs = {str(o).strip() for o in dev_items["output"]}
    test_outputs = {str(o).strip() for o in test_items["output"]} - dev_outputs  # a text both parts share is no leak
    test_sources = {str(s)[100:300] for s in test_items["source"].unique()}
    dev_scores = {(str(o).strip(), f"{human[i]:.2f}") for i, o in zip(dev_items["item_id"], dev_items["output"])}

    # the search is not blind: the final check's scoring requests do hold the test part's texts and articles
    scoring = [p for p in prompts if PROPOSAL_MARKER not in p]
    assert all(any(o in p for p in scoring) for o in test_outputs)
    assert all(any(s in p for p in scoring) for s in test_sources)
    proposals = [p for p in prompts if PROPOSAL_MARKER in p]
    assert len(proposals) == 2  # 5 candidates: two proposals (from two sets of development disagreements)
    for p in proposals:
        assert not any(o in p for o in test_outputs if len(o) > 30)
        assert not any(s in p for s in test_sources)
        shown = re.findall(r"Text: (.*?)\nHuman score: ([\d.]+)", p, flags=re.DOTALL)
        assert len(shown) == 8
        assert all((t.strip(), h) in dev_scores for t, h in shown)  # each example: a development item, its label

    fewshot_prompts = [p for p in prompts if FEWSHOT_HEADING in p]
    assert fewshot_prompts  # the few-shot candidates were scored (development, and test if chosen)
    # SummEval's coherence preset asks for 1-5, the humans' scale: an example's score is its human mean, 1 decimal
    dev_labels = {(str(o).strip(), f"{human[i]:.1f}") for i, o in zip(dev_items["item_id"], dev_items["output"])}
    for p in fewshot_prompts:
        shown = _examples(p, FEWSHOT_HEADING, r"Example \d+: (.*?)\nHuman score: ([\d.]+)")
        assert len(shown) == 4
        assert all((t.strip(), h) in dev_labels and t.strip() not in test_outputs for t, h in shown)
    for i, o in zip(test_items["item_id"], test_items["output"]):  # every test item, its text with its label
        if str(o).strip() in test_outputs:
            assert not any(f"{str(o).strip()}\nHuman score: " in p for p in proposals + fewshot_prompts), i
    for c in report.candidates:
        assert set(c.candidate.example_items) <= set(dev_items["item_id"])
        assert not any(o in c.candidate.criteria.definition for o in test_outputs if len(o) > 30)


def test_a_candidate_tuned_to_development_noise_shows_no_test_gain(ds, tmp_path):
    """The judge is good exactly on the development items when the prompt holds MEMORISED_PHRASE: a development
    gain, no test gain, and the optimism says how much of the gain was development noise."""
    split = make_split(ds, DIM, test_share=0.3, seed=0)
    dev_outputs = frozenset(split_dataset(ds, split, "dev").items["output"].astype(str))
    judge = PromptQualityJudge.for_dataset(ds, DIM, rubric_phrase=None, memorised_phrase=MEMORISED_PHRASE,
                                           memorised_outputs=dev_outputs)
    store = Store(tmp_path / "s.db")
    with serve(scorer=judge) as srv:
        report = align(ds, DIM, "geval", options(srv.base_url),
                       AlignSettings(split=split, n_candidates=0,
                                     edits=(f"How well the summary holds together. {MEMORISED_PHRASE}",),
                                     agreement=Settings(n_resamples=RESAMPLES)), store=store)
    t = report.test
    assert report.chosen.candidate.source == "edit"
    assert t.dev_gain > 0.5  # looks like a large improvement on development...
    assert t.verdict == "no significant difference" and t.difference.ci_low < 0 < t.difference.ci_high
    assert t.difference.pvalue > 0.05  # ...and is none on the held-out documents
    assert t.optimism > 0.4 and t.optimism == pytest.approx(t.dev_gain - t.test_gain)


def test_a_judge_no_prompt_improves_is_not_significantly_improved_on_test(ds, tmp_path):
    judge = PromptQualityJudge.for_dataset(ds, DIM, rubric_phrase=None)  # the proposal's phrase does nothing
    store = Store(tmp_path / "s.db")
    with serve(scorer=judge) as srv:
        report = align(ds, DIM, "geval", options(srv.base_url),
                       AlignSettings(n_candidates=4, seed=0, agreement=Settings(n_resamples=RESAMPLES)), store=store)
    t = report.test
    assert t.verdict != "improved"
    assert t.difference.ci_low <= 0 and t.difference.pvalue > 0.05


def test_a_second_final_check_on_the_same_test_part_is_counted(improvable, ds):
    report, store, _ = improvable
    from evalcore.align import final_check, load_split

    with serve(scorer=PromptQualityJudge.for_dataset(ds, DIM)) as srv:
        # another endpoint address: the runs are scored again (nothing in the cache for it), the split is the same
        again = final_check(ds, report.split, DIM, "geval", report.baseline, report.chosen, options(srv.base_url),
                            store=store, settings=Settings(n_resamples=RESAMPLES))
    assert again.check_number == 2
    assert load_split(store, ds.id, report.split.split_id).final_checks == 2
    checks = store.final_checks(ds.id, report.split.split_id)
    assert [c["chosen_hash"] for c in checks] == [report.chosen.candidate.version] * 2
    assert again.difference.statistic == pytest.approx(report.test.difference.statistic)


def test_a_proposal_that_cannot_be_read_is_skipped_and_said(ds, tmp_path):
    from evalcore.testing.replies import Reply, plain_tokens

    judge = PromptQualityJudge.for_dataset(ds, DIM)

    def scorer(prompt, *, sample=0, temperature=0.0):
        if PROPOSAL_MARKER in prompt:  # an LLM that answers in prose, without the <criteria> block asked for
            return Reply(plain_tokens("The definition could mention the order of events."))
        return judge(prompt, sample=sample, temperature=temperature)

    said: list[str] = []
    with serve(scorer=scorer) as srv:
        report = align(ds, DIM, "geval", options(srv.base_url),
                       AlignSettings(n_candidates=2, agreement=Settings(n_resamples=50)), store=Store(tmp_path / "s.db"),
                       log=said.append)
    assert [c.candidate.source for c in report.candidates] == ["fewshot", "fewshot"]
    assert any("skipped" in m and "<criteria>" in m for m in said)


def test_an_unimprovable_judge_is_not_called_improved_on_a_small_test_part():
    """The size of the verdict, simulated: 200 test parts of 8 documents x 16 systems where the two prompts are
    equally weak. The paired bootstrap's interval alone excludes 0 far too often on so few documents (measured
    0.155 at 6 and 10 documents, 0.115 at 20, over 200 sets each); the verdict (both paired tests must reject,
    loop.compare_on_test) keeps its 5% (measured 0.035 / 0.065 / 0.045 at 6 / 10 / 20 documents)."""
    from evalcore.align.loop import Settings, paired_verdict, verdict_of
    from evalcore.testing.simulate import exchangeable_judges

    rng = np.random.default_rng(8)
    n = 200
    called, ci_alone = 0, 0
    for i in range(n):
        a, b = exchangeable_judges(8, rng)
        d = paired_verdict(a, b, Settings(n_resamples=300, random_state=i))
        called += verdict_of(d) != "no significant difference"
        ci_alone += d.ci_low > 0 or d.ci_high < 0
        assert d.pvalue == max(d.pvalue_bootstrap, d.pvalue_permutation) and d.n_documents == 8
    se = (0.05 * 0.95 / n) ** 0.5
    assert called / n <= 0.05 + 2.5 * se  # 0.089: the verdict's size holds
    assert ci_alone / n > called / n  # the interval alone is the anti-conservative one
