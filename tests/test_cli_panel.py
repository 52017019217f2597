"""``meta --reliability``, ``meta --agreement-matrix`` and ``jury`` on the command line: their JSON keys, the
Topical-Chat figures on Chiang & Lee's 20 released draws per item (the table of one draw against the mean of 20,
counted independently here with scipy), and a jury of Shen et al.'s five SummEval judges stored as a run that
``meta`` then reads like any other."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as st

from evalcore import runs
from evalcore.cli import main

TC = "topical_chat/chiang-lee-gpt-3.5-geval"
SHEN = [f"summeval/shen-{m}-rts" for m in ("gpt-4-0314", "gpt-3.5-turbo-0301", "llama-2-7b-chat",
                                          "llama-2-13b-chat", "llama-2-70b-chat")]
# dimension: one draw min / median / max, mean of 20 draws, share of draw pairs that differ, ICC(1,1)
TOPICAL_CHAT_TABLE = {
    "coherence": (0.242, 0.315, 0.369, 0.466, 0.35, 0.45),
    "engagingness": (0.277, 0.361, 0.436, 0.561, 0.33, 0.40),
    "naturalness": (0.113, 0.200, 0.272, 0.413, 0.37, 0.22),
}


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def tc_report():
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["meta", "--dataset", "topical_chat", "--run", TC, "--level", "dataset", "--coefficient",
                     "spearman", "--resamples", "100", "--reliability", "--json"]) == 0
    return json.loads(buf.getvalue())


@pytest.mark.parametrize("dim", sorted(TOPICAL_CHAT_TABLE))
def test_meta_reliability_reproduces_the_topical_chat_table(tc_report, dim):
    lo, med, hi, mean, differ, icc = TOPICAL_CHAT_TABLE[dim]
    r = tc_report["dimensions"][dim]["reliability"]
    assert set(r) >= {"draws", "items", "icc1", "icc1k", "alpha", "disagreement", "single_draw", "mean_of_draws",
                      "projected", "draws_needed"}
    assert r["draws"] == 20 and r["items"] >= 356
    s = r["single_draw"]
    # the table was computed outside the app; the largest gap to it is 0.006 (engagingness, max)
    assert (s["min"], s["median"], s["max"]) == pytest.approx((lo, med, hi), abs=0.007)
    assert r["mean_of_draws"]["statistic"] == pytest.approx(mean, abs=0.002)
    assert r["disagreement"] == pytest.approx(differ, abs=0.005)
    assert r["icc1"]["statistic"] == pytest.approx(icc, abs=0.005)
    assert r["icc1"]["ci_low"] < r["icc1"]["statistic"] < r["icc1"]["ci_high"]
    m = r["mean_of_draws"]
    assert m["resampling"] == "documents" and m["ci_low"] < m["statistic"] < m["ci_high"]
    h = tc_report["dimensions"][dim]["correlations"][0]
    assert m["statistic"] == pytest.approx(h["statistic"], abs=1e-12)  # the run's judgments are the draws' mean
    assert (m["ci_low"], m["ci_high"]) == pytest.approx((h["ci_low"], h["ci_high"]), abs=1e-12)
    assert sorted(map(int, r["projected"])) == list(range(1, 41))
    assert r["projected"]["20"] == pytest.approx(m["statistic"], abs=1e-12)
    assert isinstance(r["draws_needed"], int) and r["draws_needed"] > 1


def test_single_draws_and_their_mean_counted_with_scipy():
    ds, run = runs.get_dataset("topical_chat"), runs.load_run(TC)
    human = ds.human_table("coherence").set_index("item_id")["human"]
    d = run.draw_scores("coherence").pivot(index="item_id", columns="draw", values="judge")
    h = human.reindex(d.index).to_numpy()
    each = [st.spearmanr(d[j].to_numpy(), h, nan_policy="omit").statistic for j in d.columns]
    assert (min(each), float(np.median(each)), max(each)) == pytest.approx((0.242, 0.315, 0.369), abs=5e-4)
    assert st.spearmanr(d.mean(axis=1), h).statistic == pytest.approx(0.466, abs=5e-4)


def test_a_run_of_one_draw_says_its_noise_is_unmeasured(capsys):
    out = run_json(capsys, "meta", "--dataset", "summeval", "--run", SHEN[0], "--dimension", "coherence",
                   "--level", "dataset", "--coefficient", "spearman", "--resamples", "50", "--reliability")
    r = out["dimensions"]["coherence"]["reliability"]
    assert r["draws"] == 1 and r["icc1"]["statistic"] is None and r["draws_needed"] is None
    assert any("one draw per item" in n for n in r["notes"])
    assert r["mean_of_draws"]["resampling"] == "documents"  # the usual interval: nothing within items to resample
    assert r["mean_of_draws"]["statistic"] == pytest.approx(out["dimensions"]["coherence"]["correlations"][0][
        "statistic"], abs=1e-12)


def test_jury_of_shens_five_judges_is_a_run_that_meta_reads(capsys):
    args = ["jury", "--dataset", "summeval"] + [x for r in SHEN for x in ("--run", r)]
    made = run_json(capsys, *args, "--aggregate", "mean", "--name", "five")
    assert made["run_id"] == "summeval/jury-five" and made["members"] == SHEN and made["judgments"] == 4800
    out = run_json(capsys, "meta", "--dataset", "summeval", "--run", made["run_id"], "--dimension", "coherence",
                   "--level", "dataset", "--coefficient", "spearman", "--resamples", "50")
    jury_rho = out["dimensions"]["coherence"]["correlations"][0]["statistic"]
    ds = runs.get_dataset("summeval")
    members = [runs.load_run(r) for r in SHEN]
    table = ds.human_table("coherence").set_index("item_id")["human"]
    values = np.column_stack([m.scores("coherence").set_index("item_id")["judge"].reindex(table.index) for m in members])
    keep = ~np.isnan(values).all(axis=1)
    mean = np.nanmean(values[keep], axis=1)
    assert jury_rho == pytest.approx(st.spearmanr(mean, table.to_numpy()[keep]).statistic, abs=1e-9)


def test_calibrated_jury_reports_only_the_documents_it_did_not_learn_on(capsys):
    args = ["jury", "--dataset", "summeval"] + [x for r in SHEN for x in ("--run", r)]
    made = run_json(capsys, *args, "--weights", "calibrated", "--calibration-docs", "30", "--seed", "1",
                    "--name", "cal")
    w = made["learned"]["coherence"]["weights"]
    assert sum(w.values()) == pytest.approx(1.0) and min(w.values()) >= 0
    run = runs.load_run(made["run_id"])
    docs = set(runs.get_dataset("summeval").items.set_index("item_id").loc[run.judgments["item_id"], "doc_id"])
    assert not docs & set(made["calibration_docs"]) and len(made["calibration_docs"]) == 30


def test_agreement_matrix_keys_and_symmetry(capsys):
    out = run_json(capsys, "meta", "--dataset", "summeval", "--run", SHEN[0], "--run", SHEN[1], "--run", SHEN[4],
                   "--dimension", "coherence", "--level", "dataset", "--coefficient", "spearman",
                   "--resamples", "50", "--agreement-matrix")
    a = out["dimensions"]["coherence"]["agreement_matrix"]
    assert a["runs"] == [SHEN[0], SHEN[1], SHEN[4]] and len(a["matrix"]) == 3 and len(a["humans"]) == 3
    m = [[c["statistic"] for c in row] for row in a["matrix"]]
    assert m[0][0] == 1.0 and m[0][1] == pytest.approx(m[1][0], abs=1e-12)
    h = out["dimensions"]["coherence"]["correlations"][0]["statistic"]
    assert a["humans"][0]["statistic"] == pytest.approx(h, abs=1e-12)


def test_several_runs_without_the_matrix_are_refused():
    with pytest.raises(SystemExit, match="--agreement-matrix"):
        main(["meta", "--dataset", "summeval", "--run", SHEN[0], "--run", SHEN[1], "--resamples", "0"])
