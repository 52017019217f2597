"""evalcore.views.inference: the Alignment page's Alt-Test, PPI and Bradley-Terry tables carry the library's figures
(evalcore.meta.alt_test / ppi / bradley_terry computed here directly, and ppi_py where installed) on SummEval's
GPT-4 RTS run and on PandaLM; the verdicts say what the result is; every figure's axes are labelled."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from evalcore import runs as runs_mod
from evalcore.meta import alt_test as at
from evalcore.meta import bradley_terry as bt
from evalcore.meta import ppi
from evalcore.views import inference as iv
from evalcore.views.alignment import ceiling_group

GPT4 = "summeval/shen-gpt-4-0314-rts"
PANDALM = "pandalm/pandalm-gpt-3.5-turbo"


@pytest.fixture(scope="module")
def summeval():
    return runs_mod.get_dataset("summeval"), runs_mod.load_run(GPT4)


@pytest.fixture(scope="module")
def pandalm():
    return runs_mod.get_dataset("pandalm"), runs_mod.load_run(PANDALM)


def _axes(fig) -> tuple[str, str]:
    return fig.layout.xaxis.title.text, fig.layout.yaxis.title.text


def test_alt_test_view_equals_the_library_on_summeval(summeval):
    ds, run = summeval
    v = iv.alt_test_for_run(ds, run, "coherence", epsilon=0.15)
    lib = at.alt_test_scores(ds.annotations, run.scores("coherence"), "coherence",
                             group=ceiling_group(ds, "coherence"), scoring="neg_rmse", epsilon=0.15)
    assert v.result == lib and v.group == "expert"
    row = iv.alt_test_summary([v]).iloc[0]
    assert row["winning_rate"] == lib.winning_rate and row["rho"] == lib.advantage_probability
    assert row["scoring"] == "neg_rmse" and row["items"] == 1200 and row["dropped_items"] == 0
    per = iv.alt_test_annotator_table([v])
    assert per["p_value"].tolist() == [a.p_value for a in lib.per_annotator]
    assert per["rho_j"].tolist() == [a.advantage_probability for a in lib.per_annotator]
    assert per["judge_wins"].tolist() == ["yes (H0 rejected)" if a.rejected else "no" for a in lib.per_annotator]
    assert set(per["test"]) == {"t-test"}
    won = sum(a.rejected for a in lib.per_annotator)
    text = iv.alt_test_verdict(v)
    assert ("the judge can replace" if lib.passed else "the judge cannot replace") in text
    assert f"for {won} of the 3 annotators" in text and f"rho = {lib.advantage_probability:.3f}" in text


def test_alt_test_verdict_when_the_judge_passes(summeval):
    ds, run = summeval
    v = iv.alt_test_for_run(ds, run, "consistency", epsilon=0.2)
    assert v.result.passed and v.result.winning_rate == 1.0
    assert "the judge can replace the expert annotators at epsilon 0.2" in iv.alt_test_verdict(v)
    assert iv.alt_test_summary([v]).iloc[0]["verdict"] == "passes"


def test_below_30_items_annotators_are_left_out_by_default_or_tested_exactly(summeval):
    ds, run = summeval
    few = set(run.scores("coherence")["item_id"][:24])
    small = dataclasses.replace(ds, annotations=ds.annotations[ds.annotations["item_id"].isin(few)])
    v = iv.alt_test_for_run(small, run, "coherence", epsilon=0.2)
    assert v.result is None and "fewer than 30 items" in v.error and "expert_1 (24)" in v.error
    v = iv.alt_test_for_run(small, run, "coherence", epsilon=0.2, small_sample="exact")
    assert set(iv.alt_test_annotator_table([v])["test"]) == {"exact test of the mean (fewer than 30 items: 24)"}
    # one annotator short of 30: left out, counted and named
    short = ds.annotations[~((ds.annotations["annotator"] == "expert_3") & ~ds.annotations["item_id"].isin(few))]
    v = iv.alt_test_for_run(dataclasses.replace(ds, annotations=short), run, "coherence", epsilon=0.2)
    assert [a.annotator for a in v.result.per_annotator] == ["expert_1", "expert_2"]
    assert iv.alt_test_summary([v]).iloc[0]["annotators_skipped"] == 1
    assert "expert_3 (24 items)" in " ".join(iv.alt_test_notes([v]))
    assert "1 annotator(s) with fewer than 30 items left out" in iv.alt_test_verdict(v)
    text = " ".join(b.text for b in iv.alt_test_blocks([v], "coherence") if hasattr(b, "text"))
    assert "Wilcoxon" not in text and "advice" not in text and "left out of the winning rate" in text
    assert iv.MIN_ITEMS == at.MIN_ITEMS_T_TEST


def test_no_alt_test_says_why(summeval):
    ds, _ = summeval
    topical = runs_mod.get_dataset("topical_chat")
    run = runs_mod.load_run("topical_chat/chiang-lee-gpt-3.5-geval")
    v = iv.alt_test_for_run(topical, run, "coherence", epsilon=0.2)
    assert v.result is None and "fewer than two annotators" in v.error
    assert iv.alt_test_summary([v]).iloc[0]["verdict"].startswith("no test: fewer than two annotators")
    assert iv.alt_test_annotator_table([v]).empty


def test_ppi_view_equals_the_library_and_ppi_py_on_summeval(summeval):
    ds, run = summeval
    frame = ppi.judged_frame(ds.items, ds.human_scores, run.scores("coherence"), "coherence")
    assert iv.fully_rated(frame) and iv.rated_documents(frame) == 100
    assert iv.default_rated_documents(100) == 20
    v = iv.ppi_for_run(ds, run, "coherence", method="ppi++", rated=20, n_resamples=50)
    lib = ppi.ppi_by_system(ppi.hide_ratings(frame, 20), method="ppi++", n_resamples=50, scale=(1.0, 5.0))
    t = iv.ppi_table([v])
    assert len(t) == 12 and set(t["n_labelled"]) == {20} and set(t["n_unlabelled"]) == {80}
    for row, s in zip(t.itertuples(index=False), lib.per_system):
        assert row.system == s.system
        assert (row.estimate, row.ci_low, row.ci_high, row[t.columns.get_loc("lambda")]) == \
            (s.estimate, s.ci_low, s.ci_high, s.lam)
        assert (row.human_only, row.judge_only) == (s.human_only.statistic, s.judge_only.statistic)
        assert math.isclose(row.judge_minus_ppi, s.judge_only.statistic - s.estimate)
    assert set(t["interval"]) == {"Student t, 19 df (fewer than 30 rated documents)"}
    assert any("fewer than 30 rated documents" in w for w in iv.ppi_warnings(v))
    # from 30 rated documents on, the interval is ppi_py's (clipped to the 1-5 scale, which it does not reach here)
    ppi_py = pytest.importorskip("ppi_py")
    v30 = iv.ppi_for_run(ds, run, "coherence", method="ppi++", rated=30, n_resamples=0)
    t30 = iv.ppi_table([v30])
    hidden = ppi.hide_ratings(frame, 30)
    g = hidden[hidden["system_id"] == t30["system"].iloc[0]]
    rated = g["human"].notna()
    y, yhat, yu = g.loc[rated, "human"].to_numpy(), g.loc[rated, "judge"].to_numpy(), g.loc[~rated, "judge"].to_numpy()
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=None)
    assert np.allclose([t30["ci_low"].iloc[0], t30["ci_high"].iloc[0]],
                       [float(np.ravel(lo)[0]), float(np.ravel(hi)[0])], atol=1e-10)
    assert set(t30["interval"]) == {"normal"} and not iv.ppi_warnings(v30)
    note = iv.ppi_note(v, "coherence")
    assert "only 20 of them" in note
    assert "over the population of documents" in note and "uniform random sample" in note  # target, condition
    ranking = iv.ppi_ranking_table(v)
    assert ranking["system"].tolist() == [r.system for r in lib.ranking]
    # the ranks' intervals hold whole ranks
    assert all(float(x).is_integer() for x in np.r_[ranking["rank_low"], ranking["rank_high"]])


def test_ppi_warns_where_ratings_pile_up_at_one_end_of_the_scale(summeval):
    ds, run = summeval
    v = iv.ppi_for_run(ds, run, "consistency", rated=50, n_resamples=0)
    frame = ppi.hide_ratings(ppi.judged_frame(ds.items, ds.human_scores, run.scores("consistency"), "consistency"), 50)
    for s in v.result.per_system:  # the share of rated values within 0.4 of 1 or 5, by hand
        y = frame.loc[(frame["system_id"] == s.system) & frame["human"].notna() & frame["judge"].notna(), "human"]
        assert s.end_share == pytest.approx(float(((y <= 1.4) | (y >= 4.6)).mean()))
    warned = [w for w in iv.ppi_warnings(v) if "one end of the scale" in w]
    assert len(warned) == 1 and "82-91%" in warned[0]
    assert not any("fewer than 30" in w for w in iv.ppi_warnings(v))


def test_ppi_without_hidden_ratings_is_the_humans_mean(summeval):
    ds, run = summeval
    v = iv.ppi_for_run(ds, run, "coherence", method="ppi", rated=None, n_resamples=0)
    t = iv.ppi_table([v])
    assert np.allclose(t["estimate"], t["human_only"]) and set(t["lambda"]) == {0.0}


def test_ppi_figure_axes_and_series(summeval):
    ds, run = summeval
    fig = iv.ppi_figure(iv.ppi_for_run(ds, run, "coherence", rated=20, n_resamples=0), "coherence")
    assert _axes(fig) == ("system", "mean human coherence score")
    assert [t.name for t in fig.data] == ["humans only (95% CI)", "judge only (95% CI)", "PPI++ (95% CI)"]
    assert all(t.error_y.array is not None for t in fig.data)


def test_pandalm_alt_test_ppi_and_bradley_terry_equal_the_library(pandalm):
    ds, run = pandalm
    v = iv.alt_test_for_run(ds, run, "preference", epsilon=0.2)
    assert v.result == at.alt_test_pairwise(ds.preferences, run.comparisons, dimension="preference", epsilon=0.2)
    assert "cannot replace the annotators" in iv.alt_test_verdict(v)
    assert any("no judge verdict" in n for n in iv.alt_test_notes([v]))

    frame = ppi.pairwise_frame(ds.preferences, run.comparisons, ds.items, dimension="preference")
    pv = iv.ppi_for_run(ds, run, "preference", rated=34, n_resamples=0)
    lib = ppi.ppi_by_system(ppi.hide_ratings(frame, 34), n_resamples=0, scale=(0.0, 1.0))
    pt = iv.ppi_table([pv])
    assert pt["estimate"].tolist() == [s.estimate for s in lib.per_system]
    assert pt["ci_low"].tolist() == [s.ci_low for s in lib.per_system]
    # a model meets several opponents per prompt: clustered by prompt, and the section speaks of prompts and pairs
    hidden = ppi.hide_ratings(frame, 34)
    per_model = hidden[hidden["human"].notna() & hidden["judge"].notna()].groupby("system_id")["doc_id"].nunique()
    assert all(s.clustered for s in lib.per_system)
    assert pt["rated_prompts"].tolist() == per_model.reindex(pt["system"]).tolist()  # each model's rated prompts
    assert {"rated_pairs", "unrated_pairs"} <= set(pt.columns) and "n_labelled" not in pt.columns
    assert all(i.endswith("clustered by prompt") for i in pt["interval"])
    note = iv.ppi_note(pv, "preference")
    assert "judged prompts" in note and "documents" not in note
    assert iv.rated_documents_label(True) == "Rated prompts" and "of the 169 prompts" in iv.rated_documents_help(169, True)
    fig = iv.ppi_figure(pv, "preference")
    assert _axes(fig) == ("model", "win rate (ties count 0.5)")
    assert fig.layout.yaxis.tickformat == ".0%"  # as the Alignment page's win-rate chart

    assert iv.bt_heading(iv.bt_resamples(1000)).text.endswith("(200 prompt resamples)")
    comp = iv.bradley_terry_for_run(ds, run, "preference", n_resamples=20)
    ref = bt.compare_rankings(ds.preferences, run.comparisons, ds.items, dimension="preference", n_resamples=20)
    t = iv.bt_table(comp).set_index("model")
    for s in ref.human.scores:
        assert t.loc[s.model, "human_score"] == s.score and t.loc[s.model, "human_ci_low"] == s.ci_low
    for s in ref.judge.scores:
        assert t.loc[s.model, "judge_score"] == s.score
    assert t["human_rank"].min() == 1 and sorted(t["human_rank"]) == [1, 2, 3, 4, 5]
    lt = iv.bt_length_table(comp)
    assert lt["length_coefficient"].tolist() == [ref.human.length.coefficient, ref.judge.length.coefficient]
    text = iv.bt_summary(comp)
    assert f"Kendall's tau {ref.kendall_tau:.3f}" in text and "Length: the judge's coefficient" in text
    assert len(iv.bt_pairs_table(comp)) == 10
    assert _axes(iv.bt_figure(comp, "run")) == ("Bradley-Terry score (Elo scale, mean 1000)", "model")
    assert _axes(iv.length_figure(comp, "run")) == ("whose preferences", "length coefficient (log-odds per SD)")


def test_inference_runs_and_coverage(summeval, pandalm):
    ds, run = summeval
    h2h = runs_mod.load_run("summeval/shen-gpt-3.5-turbo-0301-h2h")
    # SummEval has no human votes: its pairwise run has nothing to be tested against
    assert [r.run_id for r in iv.inference_runs(ds, [run, h2h], "coherence")] == [GPT4]
    assert iv.rating_coverage(ds, [run], "coherence") == (True, 100)
    pds, prun = pandalm
    assert iv.rating_coverage(pds, [prun], "preference") == (True, 169)


@pytest.mark.parametrize("n, expected", [(100, 20), (30, 10), (5, 5), (1000, 200)])
def test_default_rated_documents(n, expected):
    assert iv.default_rated_documents(n) == expected


def test_epsilon_labels_give_the_guidance():
    assert [iv.epsilon_label(e) for e in (0.2, 0.15, 0.1)] == ["0.2 (experts)", "0.15 (skilled annotators)",
                                                                 "0.1 (crowd workers)"]


def test_report_section_holds_the_verdict_and_the_ppi_table(summeval):
    ds, run = summeval
    [sec] = iv.report_sections(ds, [run], "coherence")
    assert "the judge cannot replace the expert annotators at epsilon 0.2" in sec.text
    assert "only 20 of them" in sec.text
    tables = {t.title: t.frame for t in sec.tables}
    ppi_frame = tables["Prediction-powered estimates (PPI++) per system"]
    assert len(ppi_frame) == 12 and set(ppi_frame["n_labelled"]) == {20}
    assert list(tables["Alt-Test per annotator left out"]["annotator"]) == ["expert_1", "expert_2", "expert_3"]
    assert _axes(sec.figures[0].figure) == ("system", "mean human coherence score")


def test_exported_report_includes_the_section(pandalm):
    from evalcore.views import report as report_views

    ds, run = pandalm
    html = report_views.analysis_report(ds, [run], report_views.AnalysisParams("pandalm", [PANDALM], "preference",
                                                                               n_resamples=10))
    assert "Can the judge replace the annotators" in html and "the judge cannot replace the annotators" in html
    assert "Prediction-powered estimates (PPI++) per system" in html


def test_improve_final_check_says_whether_the_chosen_prompt_passes_where_the_baseline_failed(summeval):
    from evalcore.views.improve import alt_test_check

    ds, gpt4 = summeval
    chatgpt = runs_mod.load_run("summeval/shen-gpt-3.5-turbo-0301-rts")
    # consistency: GPT-4's judge passes (winning rate 1.0), ChatGPT's fails (0.0)
    text, rows = alt_test_check(ds, chatgpt, gpt4, "consistency", epsilon=0.2)
    assert text.startswith("With the chosen prompt the judge passes the Alt-Test at epsilon 0.2 on the test part")
    assert "where the baseline failed" in text
    assert rows["prompt"].tolist() == ["baseline", "chosen"]
    assert rows["verdict"].tolist() == ["does not pass", "passes"]
    text, _ = alt_test_check(ds, gpt4, chatgpt, "consistency", epsilon=0.2)
    assert "FAILS" in text and "where the baseline passed" in text


def test_plan_table_says_the_library_figures(summeval):
    ds, run = summeval
    assert iv.default_target_width(ds, "coherence", False) == 0.4  # a tenth of the 1-5 scale
    t = iv.plan_table(ds, run, "coherence", 0.4, rated=20)
    frame = ppi.hide_ratings(ppi.judged_frame(ds.items, ds.human_scores, run.scores("coherence"), "coherence"), 20)
    lib = ppi.plan_rated_documents(frame, 0.4, method="ppi++")
    assert t["system"].tolist() == [r.system for r in lib]
    for row, r in zip(t.to_dict("records"), lib):
        assert row["judged"] == r.n_documents == 100
        for col, n in (("rated needed, humans only", r.human_only), ("rated needed, PPI++", r.ppi)):
            assert row[col] == (str(n) if n is not None else "not reached with all 100")
