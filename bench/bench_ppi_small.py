"""Prediction-powered estimates from few ratings, on the bundled data as the population: does the interval cover the
superpopulation mean, does re-estimating lambda in the resamples matter, and does clustering by prompt?

    python bench/bench_ppi_small.py [--studies 300] [--seed 0] [--part 1|2|3]

(--studies is part 3's; part 1 runs half as many, part 2 a third. About 1 minute per part on one quiet core.)

1. Small samples (SummEval, the GPT-4 RTS run, 12 systems x 100 documents per dimension). The 100 documents are the
   population and each system's mean human score over them the truth (the superpopulation mean). A study draws 100
   documents with replacement, humans rate n of them (drawn at random), and PPI++ estimates each system's mean. The
   share of (study, system) intervals that cover the truth, and the share of zero width, for the interval before
   (normal, population variances, no bound on a zero spread: ppi_py's) and now (evalcore.meta.ppi.ppi_interval:
   Student t below 30 rated documents, the spread bound, clipped to the 1-5 scale), and the humans-only interval now.
2. lambda in the resamples (SummEval coherence and consistency, 20 rated documents). The document-bootstrap interval
   of every difference between two systems (66 pairs; 200 resamples) with PPI++'s lambda held at the full-data value
   against re-estimated in each resample: how often each covers the true difference, and how many intervals change
   whether they exclude 0.
3. Prompt clusters (PandaLM, 170 prompts, each model's win rate, ties 0.5). A model meets several opponents on a
   prompt with the same response. A study draws 170 prompts with replacement; the truth is the model's mean human
   points over the population's pairs. Coverage of the humans-only interval and of PPI++ (40 prompts rated), with the
   pairs treated as independent against clustered by prompt, and the ratio of the standard errors.
"""

from __future__ import annotations

import argparse
import time
from itertools import combinations

import numpy as np
import pandas as pd

from evalcore import runs as runs_mod
from evalcore.meta import ppi

Z = 1.959963984540054


def summeval_grid(dimension: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(human, judge) as systems x documents, and the systems."""
    ds, run = runs_mod.get_dataset("summeval"), runs_mod.load_run("summeval/shen-gpt-4-0314-rts")
    f = ppi.judged_frame(ds.items, ds.human_scores, run.scores(dimension), dimension).dropna()
    h = f.pivot(index="system_id", columns="doc_id", values="human").dropna(axis=1)
    j = f.pivot(index="system_id", columns="doc_id", values="judge")[h.columns]
    return h.to_numpy(), j.to_numpy(), list(h.index)


def old_interval(y, yhat, yu) -> tuple[float, float]:
    """The interval before: ppi_py's normal interval with PPI++'s lambda, no small-sample or zero-spread handling."""
    lam = ppi.power_tuned_lambda(y, yhat, yu)
    est = lam * yu.mean() + (y - lam * yhat).mean()
    half = Z * np.sqrt(np.var(y - lam * yhat) / len(y) + np.var(lam * yu) / len(yu))
    return est - half, est + half


def small_samples(studies: int, rng: np.random.Generator) -> None:
    print("1. PPI++ on SummEval (GPT-4 RTS judge): coverage of each system's superpopulation mean, "
          f"{studies} studies x 12 systems per cell", flush=True)
    print(f"   {'dimension':<12}{'rated':>6}{'before':>9}{'(0 width)':>10}{'now':>8}{'(0 width)':>10}"
          f"{'humans now':>12}{'width now/before':>18}")
    for dim in ("coherence", "consistency", "fluency", "relevance"):
        H, J, _ = summeval_grid(dim)
        truth = H.mean(axis=1)
        for n in (10, 20, 30, 50):
            hit = {"before": 0, "now": 0, "humans": 0}
            zero = {"before": 0, "now": 0}
            widths = {"before": [], "now": []}
            for _ in range(studies):
                docs = rng.integers(0, H.shape[1], H.shape[1])
                rated = np.zeros(len(docs), dtype=bool)
                rated[rng.choice(len(docs), n, replace=False)] = True
                for s in range(H.shape[0]):
                    # a document drawn twice is two independent draws from the population: no clusters here
                    y, yhat, yu = H[s, docs[rated]], J[s, docs[rated]], J[s, docs[~rated]]
                    lo, hi = old_interval(y, yhat, yu)
                    m = ppi.ppi_interval(y, yhat, yu, lam=None, scale=(1.0, 5.0))
                    h = ppi.ppi_interval(y, y, [], lam=0.0, scale=(1.0, 5.0))
                    for key, (a, b) in (("before", (lo, hi)), ("now", (m.ci_low, m.ci_high))):
                        hit[key] += a <= truth[s] <= b
                        zero[key] += b - a <= 1e-12
                        widths[key].append(b - a)
                    hit["humans"] += h.ci_low <= truth[s] <= h.ci_high
            k = studies * H.shape[0]
            ratio = np.mean(widths["now"]) / np.mean(widths["before"])
            print(f"   {dim:<12}{n:>6}{hit['before'] / k:>9.1%}{zero['before'] / k:>10.1%}{hit['now'] / k:>8.1%}"
                  f"{zero['now'] / k:>10.1%}{hit['humans'] / k:>12.1%}{ratio:>18.2f}", flush=True)


def lambda_in_resamples(studies: int, rng: np.random.Generator) -> None:
    print(f"\n2. Differences between SummEval systems (66 pairs), PPI++ with 20 rated documents, 200 document "
          f"resamples, {studies} studies: lambda held at its full-data value vs re-estimated in each resample",
          flush=True)
    print(f"   {'dimension':<12}{'covered, held':>15}{'covered, re-estimated':>23}{'exclude-0 changes':>19}")
    for dim in ("coherence", "consistency"):
        H, J, systems = summeval_grid(dim)
        truth = H.mean(axis=1)
        pairs = list(combinations(range(len(systems)), 2))
        hit_fixed = hit_new = changed = total = 0
        for _ in range(studies):
            docs = rng.integers(0, H.shape[1], H.shape[1])
            rated = np.zeros(len(docs), dtype=bool)
            rated[rng.choice(len(docs), 20, replace=False)] = True
            frame = pd.DataFrame({"item_id": np.arange(len(docs) * len(systems)),
                                  "doc_id": np.repeat(np.arange(len(docs)), len(systems)).astype(str),
                                  "system_id": np.tile(systems, len(docs)), "judge": J[:, docs].T.ravel(),
                                  "human": np.where(np.repeat(rated, len(systems)), H[:, docs].T.ravel(), np.nan)})
            lams = {p.system: p.lam for p in ppi.ppi_by_system(frame, n_resamples=0).per_system}
            seed = int(rng.integers(1 << 31))
            fixed = ppi.document_resamples(frame, systems, 200, seed, lams=lams)
            new = ppi.document_resamples(frame, systems, 200, seed, method="ppi++")
            for a, b in pairs:
                lf, hf = np.nanpercentile(fixed[:, a] - fixed[:, b], [2.5, 97.5])
                ln, hn = np.nanpercentile(new[:, a] - new[:, b], [2.5, 97.5])
                d = truth[a] - truth[b]
                hit_fixed += lf <= d <= hf
                hit_new += ln <= d <= hn
                changed += (lf > 0 or hf < 0) != (ln > 0 or hn < 0)
                total += 1
        print(f"   {dim:<12}{hit_fixed / total:>15.1%}{hit_new / total:>23.1%}{changed:>11} of {total}", flush=True)


def prompt_clusters(studies: int, rng: np.random.Generator) -> None:
    ds, run = runs_mod.get_dataset("pandalm"), runs_mod.load_run("pandalm/pandalm-gpt-3.5-turbo")
    f = ppi.pairwise_frame(ds.preferences, run.comparisons, ds.items, dimension="preference")
    f = f[f["judge"].notna() & f["human"].notna()].reset_index(drop=True)
    prompts = np.array(sorted(f["doc_id"].astype(str).unique()))
    rows_of = {p: idx for p, idx in f.groupby(f["doc_id"].astype(str)).indices.items()}
    models = sorted(f["system_id"].unique())
    truth = f.groupby("system_id")["human"].mean()
    per_prompt = f.groupby(["system_id", "doc_id"]).size().groupby("system_id").mean()
    print(f"\n3. PandaLM win rates ({len(prompts)} prompts; a model meets {per_prompt.min():.1f}-{per_prompt.max():.1f} "
          f"opponents per prompt), {studies} studies x {len(models)} models: coverage of the superpopulation win rate",
          flush=True)
    keys = ("humans, independent", "humans, clustered", "PPI++ 40 rated, independent", "PPI++ 40 rated, clustered")
    hit = dict.fromkeys(keys, 0)
    se_ratio = []
    for _ in range(studies):
        draw = rng.integers(0, len(prompts), len(prompts))
        idx = np.concatenate([rows_of[prompts[k]] for k in draw])
        cluster = np.concatenate([np.full(len(rows_of[prompts[k]]), i) for i, k in enumerate(draw)])
        g = f.iloc[idx].assign(doc_id=cluster.astype(str))
        rated_prompts = rng.choice(len(draw), 40, replace=False)
        for m in models:
            x = g[g["system_id"] == m]
            c = x["doc_id"].to_numpy()
            y, yhat = x["human"].to_numpy(), x["judge"].to_numpy()
            r = np.isin(c.astype(int), rated_prompts)
            for key, groups in (("independent", None), ("clustered", c)):
                h = ppi.ppi_interval(y, y, [], lam=0.0, groups=groups, scale=(0.0, 1.0))
                p = ppi.ppi_interval(y[r], yhat[r], yhat[~r], lam=None, scale=(0.0, 1.0),
                                     groups=None if groups is None else c[r],
                                     groups_unlabelled=None if groups is None else c[~r])
                hit[f"humans, {key}"] += h.ci_low <= truth[m] <= h.ci_high
                hit[f"PPI++ 40 rated, {key}"] += p.ci_low <= truth[m] <= p.ci_high
                if key == "independent":
                    w_ind = h.ci_high - h.ci_low
                else:
                    se_ratio.append((h.ci_high - h.ci_low) / w_ind)
    k = studies * len(models)
    for key in keys:
        print(f"   {key:<32}{hit[key] / k:>8.1%}")
    print(f"   clustered / independent standard error (humans): {np.mean(se_ratio):.2f} on average, "
          f"{np.min(se_ratio):.2f}-{np.max(se_ratio):.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=300, help="part 3's; part 1 runs half as many, part 2 a third")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--part", type=int, choices=(1, 2, 3), help="run one part only")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    for k, part in ((1, small_samples), (2, lambda_in_resamples), (3, prompt_clusters)):
        if args.part in (None, k):
            part({1: args.studies // 2, 2: args.studies // 3, 3: args.studies}[k], rng)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
