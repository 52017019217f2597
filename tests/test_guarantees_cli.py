"""``meta --selective``: the selective block's keys, and its figures recomputed from the verdicts with
evalcore.meta.selective directly (LLMBar's GPT-4 run, both presentation orders as the confidence)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalcore import cli
from evalcore import runs as R
from evalcore.analyses import guarantees as G
from evalcore.meta import selective as sel

RUN = "llmbar_natural/llmbar-gpt-4-vanilla"
KEYS = {"threshold", "confidence", "coverage", "agreement_kept", "guarantee", "calibration_docs", "test_docs",
        "abstained"}


def test_meta_selective_json(capsys):
    rc = cli.main(["meta", "--dataset", "llmbar_natural", "--run", RUN, "--selective", "--alpha", "0.2",
                   "--delta", "0.1", "--calibration-docs", "60", "--seed", "3", "--resamples", "20", "--json"])
    assert rc in (0, None)
    s = json.loads(capsys.readouterr().out)["dimensions"]["preference"]["selective"]
    assert KEYS <= set(s)
    assert s["confidence"] == "orders" and s["guarantee"] == {"alpha": 0.2, "delta": 0.1}
    assert s["calibration_docs"] == 60 and s["test_docs"] == 40
    # recompute: same split, same verdicts, the threshold by the library's function
    v = G.verdicts(R.get_dataset("llmbar_natural"), R.load_run(RUN), "preference").frame
    cal_docs, _ = sel.split_documents(v["doc_id"], 60, 3)
    is_cal = v["doc_id"].isin(cal_docs).to_numpy()
    c, a = v["confidence"].to_numpy(float), v["agree"].to_numpy(bool)
    t = sel.choose_threshold(c[is_cal], a[is_cal], alpha=0.2, delta=0.1).threshold
    assert s["threshold"] == t
    kept = ~is_cal & (c >= t) if t is not None else np.zeros(len(c), bool)
    assert s["coverage"]["n"] == int((~is_cal).sum())
    assert s["coverage"]["statistic"] == pytest.approx(kept.sum() / (~is_cal).sum())
    assert s["agreement_kept"]["statistic"] == pytest.approx(a[kept].mean())
    assert len(s["abstained"]) == int((~is_cal).sum() - kept.sum())


def test_no_confidence_keeps_nothing_and_says_why():
    d = R.get_dataset("pandalm")
    run = R.load_run("pandalm/pandalm-gpt-3.5-turbo")  # one presentation order: no confidence per pair
    res = G.selective(d, run, "preference", alpha=0.1, delta=0.1, calibration_docs=50)
    out = res.as_dict()
    assert out["threshold"] is None and out["confidence"] is None
    assert "no confidence per item" in out["sentence"] and "keeps nothing" in out["sentence"]


def test_bad_alpha_is_a_message():
    with pytest.raises(SystemExit, match="--alpha and --delta"):
        cli.main(["meta", "--dataset", "llmbar_natural", "--run", RUN, "--selective", "--alpha", "1.5", "--json",
                  "--resamples", "20"])


def test_meta_conformal_and_isotonic_json(capsys):
    run = "summeval/shen-gpt-4-0314-rts"
    cli.main(["meta", "--dataset", "summeval", "--run", run, "--dimension", "fluency", "--resamples", "20",
              "--conformal", "0.9", "--calibrate", "isotonic", "--calibration-docs", "50", "--seed", "1", "--json"])
    e = json.loads(capsys.readouterr().out)["dimensions"]["fluency"]
    c, k = e["conformal"], e["calibration"]
    assert {"coverage", "mean_width", "midpoint_correlation"} <= set(c) and c["test_docs"] == 50
    # recomputed directly: each of the experts' 1/3-grid points kept when its smoothed p-value (ties broken by one
    # uniform per held-out item, drawn with the seed) exceeds 1 - level; coverage and width
    from sklearn.isotonic import IsotonicRegression

    d = R.get_dataset("summeval")
    f = R.score_frame(d, R.load_run(run), "fluency")
    cal_docs, _ = sel.split_documents(f["doc_id"], 50, 1)
    cal = f[f["doc_id"].isin(cal_docs)]
    test = f[~f["doc_id"].isin(cal_docs)]
    r = np.abs(cal["human"] - cal["judge"]).dropna().to_numpy()
    u = np.random.default_rng(1).uniform(size=(len(test), 1))[:, 0]
    grid = [1 + k / 3 for k in range(13)]
    lo, hi = [], []
    for j, uj in zip(test["judge"], u):
        kept = [y for y in grid if (np.sum(r > abs(y - j) + 1e-9)
                                    + uj * (np.sum(np.abs(r - abs(y - j)) <= 1e-9) + 1)) / (len(r) + 1) > 0.1]
        kept = kept or [min(grid, key=lambda y: abs(y - j))]
        lo.append(min(kept))
        hi.append(max(kept))
    lo, hi = np.array(lo), np.array(hi)
    h = test["human"].to_numpy()
    assert c["coverage"] == pytest.approx(float(((h >= lo - 1e-9) & (h <= hi + 1e-9)).mean()))
    assert c["mean_width"] == pytest.approx(float((hi - lo).mean()))
    iso = IsotonicRegression(out_of_bounds="clip").fit(cal["judge"], cal["human"])
    assert k["mae_mapped"] == pytest.approx(float(np.abs(iso.predict(test["judge"]) - h).mean()))
    assert set(k["transfer"]) == set(f["system_id"])


def test_meta_cascade(capsys):
    cli.main(["meta", "--dataset", "llmbar_natural", "--run", "llmbar_natural/llmbar-gpt-3.5-turbo-0301-vanilla",
              "--selective", "--cascade", RUN, "--stage-costs", "0.001,0.02,0.5", "--resamples", "20", "--json"])
    k = json.loads(capsys.readouterr().out)["dimensions"]["preference"]["selective"]["cascade"]
    first, second = k["stages"]
    assert first["reached"] == k["test_items"] == 50 and second["reached"] == 50 - first["kept"]
    assert k["to_humans"] == second["reached"] - second["kept"]
    assert k["cost_per_item"] == pytest.approx(
        (0.001 * 50 + 0.02 * second["reached"] + 0.5 * k["to_humans"]) / 50)


def test_cascade_costs_must_match():
    with pytest.raises(SystemExit, match="needs 3 numbers"):
        cli.main(["meta", "--dataset", "llmbar_natural", "--run", RUN, "--selective", "--cascade", RUN,
                  "--stage-costs", "1,2", "--resamples", "20", "--json"])


def test_cross_fitted_map_never_sees_its_own_label():
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 200
    frame = pd.DataFrame({"item_id": [f"i{i}" for i in range(n)], "doc_id": [f"d{i // 2}" for i in range(n)],
                          "system_id": "s", "judge": rng.integers(1, 6, n).astype(float)})
    frame["human"] = np.clip(frame["judge"] + rng.normal(0, 1, n), 1, 5)
    labelled = np.arange(n) < 120
    base = G.cross_fitted_map(frame, labelled)
    changed = frame.copy()
    changed.loc[0, "human"] = 100.0  # item 0 is labelled: its own prediction must not move
    assert G.cross_fitted_map(changed, labelled)[0] == base[0]
    assert not np.isnan(base).any()


def test_meta_stratified_plan_json(capsys):
    """``--stratified-plan N`` on a binary dimension: the strata and the saving against simple random sampling,
    recomputed by hand (tests/test_views_guarantees.py's helpers), saved to the test's own store first."""
    from evalcore.importers.api import save_import
    from tests.test_views_guarantees import binary_study, expected_saving

    res = binary_study()
    save_import(res)
    d, run = res.dataset, res.runs[0]
    rc = cli.main(["meta", "--dataset", d.id, "--run", run.run_id, "--stratified-plan", "30",
                   "--calibration-docs", "40", "--seed", "2", "--resamples", "20", "--json"])
    assert rc in (0, None)
    p = json.loads(capsys.readouterr().out)["dimensions"]["ok"]["stratified_plan"]
    sizes, saving = expected_saving(d, run, 40, seed=2)
    assert {s["stratum"]: s["items"] for s in p["strata"]} == sizes
    assert p["n_labels"] == 30 and p["n_allocated"] == sum(s["labels"] for s in p["strata"])
    assert p["saving"] == pytest.approx(saving)
    assert p["test_docs"] == 60 and p["calibration_docs"] == 40
