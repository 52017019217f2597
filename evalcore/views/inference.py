"""What a study may conclude from its judge: the Alternative Annotator Test (may the judge replace the annotators?),
prediction-powered estimates of each system's mean from few human labels, and Bradley-Terry rankings of pairwise
data, as tables, sentences and plotly figures for the Alignment page and the report (no Streamlit here).

The statistics are evalcore.meta.alt_test, evalcore.meta.ppi and evalcore.meta.bradley_terry
(docs/statistics-alt-test-ppi-bt.md); this module only picks their inputs from a dataset and a run and words the
results. Every function takes loaded objects (``Dataset``, ``Run``); caching is the app's business.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go

from evalcore.model import Dataset, Run
from evalcore.views.blocks import Block, Figure, Heading, Note, Table, tables
from evalcore.views.common import HUMAN_COLOR, run_label
from evalcore.views.format import esc

if TYPE_CHECKING:  # the statistics load where they are computed
    from evalcore.meta.alt_test import AltTestResult
    from evalcore.meta.bradley_terry import Ranking, RankingComparison
    from evalcore.meta.ppi import PPIResult, SystemEstimate

# Calderon, Reichart & Dror (ACL 2025), README FAQ: the cost-benefit margin epsilon by who the annotators are.
EPSILON_GUIDANCE = {0.2: "experts", 0.15: "skilled annotators", 0.1: "crowd workers"}
EPSILON_HELP = ("Epsilon is the margin granted to the judge for being cheaper and faster than a person: the judge "
                "wins against an annotator when the share of items on which that annotator represents the others "
                "at least as well as the judge exceeds the judge's own share by significantly less than epsilon. "
                "The authors suggest 0.2 when the annotators are experts, 0.15 for skilled "
                "annotators and 0.1 for crowd workers (smaller when the annotators agree little).")
SCORING_WORDS = {"accuracy": "accuracy (the share of the other annotators' labels the label equals)",
                 "neg_rmse": "negative RMSE (minus the root mean squared difference from the other annotators' "
                             "ratings)"}
METHOD_NAMES = {"ppi": "PPI", "ppi++": "PPI++"}
MIN_RATED_DOCUMENTS = 10
MIN_ITEMS = 30  # evalcore.meta.alt_test.MIN_ITEMS_T_TEST: the authors' least number of items per annotator
SMALL_SAMPLE = 30  # evalcore.meta.ppi.SMALL_SAMPLE: fewer rated documents, a Student t interval
SMALL_SAMPLE_LABELS = {"skip": "leave out (the authors' rule)", "exact": "exact test of the mean"}
SMALL_SAMPLE_HELP = ("An annotator who rated fewer than 30 items the test can use: the authors leave them out of the "
                     "winning rate (their t-test's normal approximation is not trusted there). The exact test "
                     "includes them with a test of the mean that is valid at any number of items (it assumes only "
                     "that the items are independent draws); it is conservative, so a judge wins less often.")
RATED_SHARE = 0.2  # the default "rated documents" on a fully rated dataset: a fifth of them, at least 10


def epsilon_label(epsilon: float) -> str:
    """"0.2 (experts)" for the epsilon selector."""
    who = EPSILON_GUIDANCE.get(round(float(epsilon), 2))
    return f"{epsilon:g} ({who})" if who else f"{epsilon:g}"


def is_pairwise(run: Run) -> bool:
    return run.judgments.empty and not run.comparisons.empty


def inference_runs(dataset: Dataset, runs: list[Run], dimension: str) -> list[Run]:
    """The runs these analyses apply to: per-item runs that scored ``dimension``, and pairwise runs with verdicts on
    it where the dataset has human votes on it."""
    votes = not dataset.preferences.empty and (dataset.preferences["dimension"] == dimension).any()
    out = []
    for r in runs:
        if not r.judgments.empty and dimension in r.dimensions:
            out.append(r)
        elif votes and not r.comparisons.empty and (r.comparisons["dimension"] == dimension).any():
            out.append(r)
    return out


def rating_coverage(dataset: Dataset, runs: list[Run], dimension: str) -> tuple[bool, int]:
    """(whether every judged item of every run has a human rating, the fewest rated documents of a run): what the
    "rated documents" choice needs. (False, 0) when no run has a PPI input."""
    full, fewest = [], []
    for r in runs:
        try:
            f = ppi_frame(dataset, r, dimension)
        except ValueError:
            continue
        full.append(fully_rated(f))
        fewest.append(rated_documents(f))
    if not full:
        return False, 0
    return all(full), min(fewest)


# ------------------------------------------------------------------------------------------------- Alt-Test


@dataclass(frozen=True)
class AltTestView:
    """One run's Alt-Test, or why there is none (``error``)."""

    run: str
    result: AltTestResult | None
    group: str | None       # the annotator group tested against (score datasets)
    error: str = ""


def alt_test_for_run(dataset: Dataset, run: Run, dimension: str, *, epsilon: float,
                     scoring: str | None = None, small_sample: str = "skip") -> AltTestView:
    """The Alt-Test of ``run`` on ``dimension`` as evalcore.analyses.inference.alt_test computes it (``meta
    --alt-test``'s): per-item ratings against the annotators of the group the human ceiling uses ("expert" where
    there is one), pairwise verdicts against the votes (accuracy); ``small_sample``: an annotator with fewer than 30
    items left out ("skip", the authors' rule) or tested exactly ("exact")."""
    from evalcore.analyses import inference as ai

    name = run_label(run)
    if not is_pairwise(run) and dimension not in run.dimensions:
        return AltTestView(name, None, None, f"{name} did not score {dimension!r}")
    o = ai.alt_test(dataset, run, dimension, epsilon=epsilon, scoring=scoring, small_sample=small_sample)
    return AltTestView(name, o.result, o.extra.get("group"), o.error)


def alt_test_verdict(view: AltTestView) -> str:
    """The verdict in words: whether the judge can replace the annotators at this epsilon, and why."""
    r = view.result
    if r is None:
        return f"{view.run}: no Alt-Test ({view.error})."
    m = len(r.per_annotator)
    won = sum(a.rejected for a in r.per_annotator)
    who = f"the {view.group} annotators" if view.group else "the annotators"
    if r.passed:
        head = f"{view.run}: the judge can replace {who} at epsilon {r.epsilon:g}"
    else:
        head = f"{view.run}: the judge cannot replace {who} at epsilon {r.epsilon:g}"
    why = (f"leaving each annotator out in turn, the judge represents the others at least as well as that annotator "
           f"does, within the margin, for {won} of the {m} annotators tested (null rejected after Benjamini-Yekutieli "
           f"at q = {r.q:g}): winning rate {100 * r.winning_rate:.0f}%, and passing needs 50%")
    if r.skipped:
        why += f"; {len(r.skipped)} annotator(s) with fewer than {MIN_ITEMS} items left out (the authors' rule)"
    return f"{head}: {why}. Advantage probability rho = {r.advantage_probability:.3f}."


def describe_test(test: str, n: int) -> str:
    return "t-test" if test == "t-test" else f"exact test of the mean (fewer than {MIN_ITEMS} items: {n})"


def alt_test_summary(views: list[AltTestView]) -> pd.DataFrame:
    """One row per run: verdict, winning rate, rho, epsilon, scoring, items tested and dropped."""
    rows: list[dict[str, object]] = []
    for v in views:
        r = v.result
        if r is None:
            rows.append({"run": v.run, "verdict": f"no test: {v.error}"})
            continue
        rows.append({"run": v.run, "verdict": "passes" if r.passed else "does not pass", "epsilon": r.epsilon,
                     "scoring": r.scoring, "winning_rate": r.winning_rate, "rho": r.advantage_probability,
                     "annotators": len(r.per_annotator), "annotators_skipped": len(r.skipped), "items": r.n_items,
                     "dropped_items": r.dropped_items, "items_without_judge": r.items_without_judge})
    return pd.DataFrame(rows)


def alt_test_annotator_table(views: list[AltTestView]) -> pd.DataFrame:
    """Per run and annotator left out: n, the test used, its p-value, whether the judge wins (BY-adjusted), and how
    often the judge (rho_j) and the annotator are at least as good as the other."""
    rows = []
    for v in views:
        if v.result is None:
            continue
        for a in v.result.per_annotator:
            rows.append({"run": v.run, "annotator": a.annotator, "n": a.n, "test": describe_test(a.test, a.n),
                         "p_value": a.p_value, "judge_wins": "yes (H0 rejected)" if a.rejected else "no",
                         "rho_j": a.advantage_probability, "annotator_advantage": a.annotator_advantage})
    return pd.DataFrame(rows)


def alt_test_notes(views: list[AltTestView]) -> list[str]:
    """What was dropped, and an undefined p-value, in words."""
    notes = []
    for v in views:
        r = v.result
        if r is None:
            continue
        parts = []
        if r.dropped_items:
            parts.append(f"{r.dropped_items} item(s) rated by fewer than two annotators dropped")
        if r.items_without_judge:
            parts.append(f"{r.items_without_judge} item(s) rated by two or more annotators have no judge verdict "
                         "(unreadable reply or not judged) and are left out")
        if r.skipped:
            parts.append(f"left out of the winning rate and rho, with fewer than {MIN_ITEMS} items the test can use "
                         "(the authors' rule; the exact small-sample test would include them): "
                         + ", ".join(f"{a} ({n} items)" for a, n in r.skipped))
        undefined = [a.annotator for a in r.per_annotator if a.p_value is None or not math.isfinite(a.p_value)]
        if undefined:
            parts.append("no p-value against " + ", ".join(undefined) + " (every difference equals epsilon): "
                         "counted as not rejected")
        if parts:
            notes.append(f"{v.run}: " + "; ".join(parts) + ".")
    return notes


# ------------------------------------------------------------------------------------------------------- PPI


@dataclass(frozen=True)
class PPIView:
    run: str
    result: PPIResult | None
    pairwise: bool
    rated_documents: int | None  # documents whose ratings were kept (None: the data as it is)
    total_rated_documents: int   # documents with a human rating in the data
    documents: int               # documents the judge scored
    error: str = ""


def ppi_frame(dataset: Dataset, run: Run, dimension: str) -> pd.DataFrame:
    """PPI's input for a run (evalcore.analyses.inference.ppi_frame)."""
    from evalcore.analyses import inference as ai

    return ai.ppi_frame(dataset, run, dimension)


def rated_documents(frame: pd.DataFrame) -> int:
    return int(frame.loc[frame["human"].notna() & frame["judge"].notna(), "doc_id"].nunique())


def fully_rated(frame: pd.DataFrame) -> bool:
    """Every judged item has a human rating: PPI then has nothing unrated to use unless some ratings are hidden."""
    judged = frame[frame["judge"].notna()]
    return bool(len(judged)) and bool(judged["human"].notna().all())


def default_rated_documents(n_documents: int) -> int:
    """A fifth of the documents, at least MIN_RATED_DOCUMENTS (and no more than there are)."""
    return int(min(n_documents, max(MIN_RATED_DOCUMENTS, round(RATED_SHARE * n_documents))))


def ppi_for_run(dataset: Dataset, run: Run, dimension: str, *, method: str = "ppi++",
                rated: int | None = None, n_resamples: int = 1000, random_state: int = 0) -> PPIView:
    """Per system (pairwise: per model's win rate) PPI or PPI++ beside human-only and judge-only estimates, as
    evalcore.analyses.inference.ppi computes them (``meta --ppi``'s); ``rated`` keeps the human ratings of that many
    documents drawn at random (at most as many as are rated) and treats the rest as unrated, None uses the data as
    it is."""
    from evalcore.analyses import inference as ai

    name, pairwise = run_label(run), is_pairwise(run)
    if not pairwise and dimension not in run.dimensions:
        return PPIView(name, None, False, None, 0, 0, f"{name} did not score {dimension!r}")
    if dataset.dimension(dimension).kind == "nominal" and not pairwise:
        return PPIView(name, None, False, None, 0, 0, f"{dimension!r} is nominal: its categories have no mean")
    try:
        frame = ppi_frame(dataset, run, dimension)
    except ValueError as e:
        return PPIView(name, None, pairwise, None, 0, 0, str(e))
    total, docs = rated_documents(frame), int(frame.loc[frame["judge"].notna(), "doc_id"].nunique())
    if total == 0:
        return PPIView(name, None, pairwise, None, 0, docs, "no judged item has a human rating")
    o = ai.ppi(dataset, run, dimension, method=method, rated=rated, cap_rated=True, n_resamples=n_resamples,
               random_state=random_state, frame=frame)
    if o.error:
        return PPIView(name, None, pairwise, None, 0, 0, o.error)
    return PPIView(name, o.result, pairwise, o.extra.get("rated_documents"), total, docs)


def human_scale(dataset: Dataset, dimension: str, pairwise: bool) -> tuple[float, float] | None:
    """The (lowest, highest) human score (evalcore.analyses.inference.human_scale)."""
    from evalcore.analyses import inference as ai

    return ai.human_scale(dataset, dimension, pairwise)


def interval_words(s: SystemEstimate, pairwise: bool) -> str:
    """How a system's interval was made, in a few words (the table's ``interval`` column)."""
    unit = "prompts" if pairwise else "documents"
    text = ("normal" if s.interval == "normal" else
            f"Student t, {s.rated_documents - 1} df (fewer than {SMALL_SAMPLE} rated {unit})")
    if s.rated_documents < 2:
        text = f"none: one rated {unit[:-1]}"
    if s.floored and s.rated_documents >= 2:
        text += "; spread bounded (the rated values are all alike)"
    if s.clustered:
        text += f"; clustered by {unit[:-1]}"
    return text


def ppi_table(views: list[PPIView]) -> pd.DataFrame:
    """Per run and system: the PPI estimate with its 95% CI, lambda, how the interval was made, rated and unrated
    items (pairwise: pairs) and the documents (prompts) rated, and beside it the humans-only and the judge-only
    means with theirs; judge_minus_ppi is the judge's bias in the dimension's units."""
    rows = []
    for v in views:
        if v.result is None:
            continue
        method = METHOD_NAMES[v.result.method]
        counts = ("rated_pairs", "unrated_pairs", "rated_prompts") if v.pairwise else \
            ("n_labelled", "n_unlabelled", "rated_documents")
        for s in v.result.per_system:
            h, j = s.human_only, s.judge_only
            rows.append({"run": v.run, "system": s.system, "method": method, "estimate": s.estimate,
                         "ci_low": s.ci_low, "ci_high": s.ci_high, "lambda": s.lam,
                         "interval": interval_words(s, v.pairwise), counts[0]: s.n_labelled,
                         counts[1]: s.n_unlabelled, counts[2]: s.rated_documents, "human_only": h.statistic,
                         "human_ci_low": h.ci_low, "human_ci_high": h.ci_high, "judge_only": j.statistic,
                         "judge_ci_low": j.ci_low, "judge_ci_high": j.ci_high,
                         "judge_minus_ppi": j.statistic - s.estimate, "effective_labels": s.effective_labels,
                         "label_saving": s.label_saving})
    return pd.DataFrame(rows)


def ppi_warnings(view: PPIView) -> list[str]:
    """Where the interval's 95% is known to fall short: few rated documents, rated values piled up at one end of the
    scale (simulated in bench/bench_ppi_small.py), or no spread at all."""
    r = view.result
    if r is None:
        return []
    unit = "prompts" if view.pairwise else "documents"
    few = [s.system for s in r.per_system if s.rated_documents < SMALL_SAMPLE]
    piled = [s.system for s in r.per_system if s.end_share >= 0.5]
    alike = [s.system for s in r.per_system if s.floored and s.rated_documents >= 2]
    out = []
    if few:
        out.append(f"{view.run}: fewer than {SMALL_SAMPLE} rated {unit} for {_names(few)}: the interval is a Student t "
                   "one, and its coverage can still fall short of 95% (simulated from SummEval's coherence and "
                   "relevance ratings at 10 and 20 rated documents: 92-94%).")
    if piled:
        out.append(f"{view.run}: most rated values sit at one end of the scale for {_names(piled)}: a normal or t "
                   "interval is known to cover less than 95% there (simulated from SummEval's consistency and "
                   "fluency ratings, most of them 5: 82-91% at 10 to 50 rated documents).")
    if alike:
        out.append(f"{view.run}: every rated value is alike for {_names(alike)}: the sample shows no spread, so the "
                   "interval rests on a bound of it (a variable that differs on an unseen share of documents), not "
                   "on the data.")
    return out


def _names(systems: list[str], k: int = 6) -> str:
    return ", ".join(systems[:k]) + (f" and {len(systems) - k} more" if len(systems) > k else "")


def ppi_ranking_table(view: PPIView) -> pd.DataFrame:
    """The systems ranked by the PPI estimate, with each rank's 95% interval over document resamples."""
    if view.result is None:
        return pd.DataFrame()
    est = {s.system: s.estimate for s in view.result.per_system}
    t = pd.DataFrame([{"rank": r.rank, "system": r.system, "estimate": est.get(r.system), "rank_low": r.rank_low,
                       "rank_high": r.rank_high} for r in view.result.ranking])
    return t.astype({"rank_low": "Int64", "rank_high": "Int64"})  # whole ranks (blank without resamples)


def ppi_note(view: PPIView, dimension: str) -> str:
    """What the estimates rest on, in words (the hidden ratings said as such)."""
    if view.result is None:
        return f"{view.run}: no prediction-powered estimate ({view.error})."
    r = view.result
    unit = "prompts" if view.pairwise else "documents"
    if view.pairwise:
        what, source = "each model's win rate (ties count 0.5)", "the judge's verdict on every judged pair"
    else:
        what, source = f"each system's mean human {dimension} score", "the judge's score of every judged output"
    text = (f"{METHOD_NAMES[r.method]} estimates {what} from {source} and the human votes or ratings where they "
            f"exist. The target is that mean over the population of {unit} these are drawn from, not over these "
            f"{unit} alone; the 95% interval holds, whatever the judge's bias, on one condition: the rated {unit} "
            f"are a uniform random sample of the judged ones (if people chose which to rate, it does not hold). It "
            f"is a normal approximation; below {SMALL_SAMPLE} rated {unit} a Student t one. lambda is the weight "
            "given to the judge (1: classic PPI; PPI++ estimates the weight that should make the interval narrowest, "
            "and being estimated from the same ratings, its interval is now and then a little wider than the "
            "humans-only one; 0: the humans alone). judge_minus_ppi: the judge-only figure minus the PPI estimate, "
            "the judge's bias in the same units.")
    if view.pairwise:
        text += " Each model meets several opponents on a prompt with one response: its intervals count prompts."
    if view.rated_documents is not None:
        text += (f" Humans rated all {view.total_rated_documents} judged {unit} here; only {view.rated_documents} "
                 "of them (drawn at random, seed 0) keep their ratings and the rest are treated as unrated, to show "
                 "what PPI would conclude with fewer labels. The humans-only column uses those "
                 f"{view.rated_documents} {unit} alone.")
    elif view.total_rated_documents < view.documents:
        text += (f" Humans rated {view.total_rated_documents} of the {view.documents} judged {unit}; the others "
                 "enter through the judge's scores alone.")
    narrower = interval_gain(view)
    if narrower is not None:
        text += (f" On average over the {'models' if view.pairwise else 'systems'}, the {METHOD_NAMES[r.method]} "
                 f"interval is {abs(narrower):.0f}% {'narrower' if narrower >= 0 else 'wider'} than the humans-only "
                 "one.")
    if r.judge_failed:
        text += (f" {r.judge_failed // 2} pair(s) without a readable verdict are left out." if view.pairwise
                 else f" {r.judge_failed} output(s) without a readable judge score are left out.")
    return text + saving_sentence(view)


def saving_sentence(view: PPIView) -> str:
    """effective_labels and label_saving in words; where the saving is below 2, Dorner, Nastl & Hardt's regime."""
    if view.result is None:
        return ""
    per = [s for s in view.result.per_system if math.isfinite(s.label_saving)]
    if not per:
        return ""
    text = (" effective_labels: the humans-only sample size whose interval would be as narrow; label_saving: that "
            "over the labels used.")
    low = [s.system for s in per if s.label_saving < 2]
    if low:
        text += (f" The saving is below 2 for {_names(low)}: the regime Dorner, Nastl & Hardt (ICLR 2025) describe, "
                 "where a judge no better than the evaluated model cannot more than halve the human labels.")
    return text


def interval_gain(view: PPIView) -> float | None:
    """How much narrower the PPI intervals are than the humans-only ones, in percent, averaged over the systems
    (None where no system has both)."""
    t = ppi_table([view])
    if t.empty:
        return None
    human = t["human_ci_high"] - t["human_ci_low"]
    ok = (human > 0) & (t["ci_high"] - t["ci_low"]).notna()
    if not ok.any():
        return None
    return float(100 * (1 - ((t["ci_high"] - t["ci_low"])[ok] / human[ok])).mean())


def ppi_figure(view: PPIView, dimension: str) -> go.Figure:
    """Each system's mean by humans only, by the judge only and by PPI, with their 95% intervals."""
    t = ppi_table([view])
    fig = go.Figure()
    if t.empty or view.result is None:
        return fig
    method = METHOD_NAMES[view.result.method]
    series = (("humans only", "human_only", "human_ci_low", "human_ci_high", HUMAN_COLOR, "circle"),
              ("judge only", "judge_only", "judge_ci_low", "judge_ci_high", "#EF553B", "x"),
              (method, "estimate", "ci_low", "ci_high", "#636EFA", "diamond"))
    for name, col, lo, hi, color, symbol in series:
        fig.add_trace(go.Scatter(
            x=t["system"].astype(str), y=t[col], mode="markers", name=f"{name} (95% CI)",
            marker=dict(color=color, size=10, symbol=symbol), offsetgroup=name,
            error_y=dict(type="data", symmetric=False, array=(t[hi] - t[col]).tolist(),
                         arrayminus=(t[col] - t[lo]).tolist(), color=color),
            hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>"))
    who = "model" if view.pairwise else "system"
    y_title = "win rate (ties count 0.5)" if view.pairwise else f"mean human {dimension} score"
    if view.pairwise:  # as the Alignment page's win-rate chart: percentages
        fig.update_yaxes(tickformat=".0%")
        for t in fig.data:
            t.hovertemplate = t.hovertemplate.replace("%{y:.3f}", "%{y:.1%}")
    fig.update_layout(title=f"{view.run}: each {who}'s {'win rate' if view.pairwise else 'mean'} by humans only, "
                            f"by the judge only and by {method} (95% CI)",
                      xaxis_title=who, yaxis_title=y_title, scattermode="group", legend_title_text="estimate",
                      legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, x=0),
                      margin=dict(b=110))
    fig.update_xaxes(type="category")
    return fig


def default_target_width(dataset: Dataset, dimension: str, pairwise: bool) -> float:
    """A planning target to start from: a tenth of the rating scale (0.1 of a win rate)."""
    if pairwise:
        return 0.1
    d = dataset.dimension(dimension)
    lo, hi = getattr(d, "scale_min", None), getattr(d, "scale_max", None)
    if lo is None or hi is None or not hi > lo:
        return 0.5
    return round(0.1 * (float(hi) - float(lo)), 2)


def plan_table(dataset: Dataset, run: Run, dimension: str, target_width: float, *, method: str = "ppi++",
               rated: int | None = None) -> pd.DataFrame:
    """Per system: how many rated documents an interval of ``target_width`` (full width, 95%) needs with humans alone
    and with PPI (evalcore.meta.ppi.plan_rated_documents; variances from the ratings kept). Counts as text: a
    target that rating every judged document would not reach is said so."""
    from evalcore.meta import ppi

    frame = ppi_frame(dataset, run, dimension)
    if rated is not None:
        frame = ppi.hide_ratings(frame, min(int(rated), rated_documents(frame)))
    rows = []
    for r in ppi.plan_rated_documents(frame, target_width, method=method):
        def need(n: int | None) -> str:
            return str(n) if n is not None else f"not reached with all {r.n_documents}"

        rows.append({"system": r.system, "judged": r.n_documents, "rated needed, humans only": need(r.human_only),
                     f"rated needed, {METHOD_NAMES[method]}": need(r.ppi)})
    return pd.DataFrame(rows)


# -------------------------------------------------------------------------------------------- Bradley-Terry


def bradley_terry_for_run(dataset: Dataset, run: Run, dimension: str, *, n_resamples: int = 200,
                          random_state: int = 0) -> RankingComparison | str:
    """The humans' and the judge's Bradley-Terry rankings side by side (evalcore.analyses.inference.bradley_terry,
    ``meta --bradley-terry``'s), or the reason there are none as a string."""
    from evalcore.analyses import inference as ai

    o = ai.bradley_terry(dataset, run, dimension, n_resamples=n_resamples, random_state=random_state)
    return o.error or o.result


def bt_table(comparison: RankingComparison) -> pd.DataFrame:
    """Per model: the humans' and the judge's Elo-scale scores with their 95% intervals and ranks."""
    def frame(ranking: Ranking, side: str) -> pd.DataFrame:
        cols = ["model", f"{side}_score", f"{side}_ci_low", f"{side}_ci_high", f"{side}_battles"]
        # columns named even without a score (every battle a model against itself, as in LLMBar): an empty table
        t = pd.DataFrame([dict(zip(cols, (s.model, s.score, s.ci_low, s.ci_high, s.n_battles)))
                          for s in ranking.scores], columns=cols)
        t[f"{side}_rank"] = t[f"{side}_score"].rank(ascending=False, method="min")
        return t

    t = frame(comparison.human, "human").merge(frame(comparison.judge, "judge"), on="model", how="outer")
    cols = ["model", "human_rank", "human_score", "human_ci_low", "human_ci_high", "judge_rank", "judge_score",
            "judge_ci_low", "judge_ci_high", "human_battles", "judge_battles"]
    return t[cols].sort_values(["human_rank", "model"], na_position="last").reset_index(drop=True)


def bt_pairs_table(comparison: RankingComparison) -> pd.DataFrame:
    """Each pair of models: whether each ranking separates them (95% intervals apart) and the share of resamples
    in which the first scores above the second."""
    return pd.DataFrame([{"model_a": p.model_a, "model_b": p.model_b,
                          "humans_separate": "yes" if p.human_separated else "no",
                          "judge_separates": "yes" if p.judge_separated else "no",
                          "humans_a_above_share": p.human_share, "judge_a_above_share": p.judge_share}
                         for p in comparison.pairs])


def bt_length_table(comparison: RankingComparison) -> pd.DataFrame:
    """The length coefficient (Arena's style control) of the humans' and the judge's fits: the verbosity figure."""
    rows = []
    for side, r in (("humans", comparison.human), ("judge", comparison.judge)):
        if r.length is not None:
            rows.append({"source": side, "length_coefficient": r.length.coefficient, "ci_low": r.length.ci_low,
                         "ci_high": r.length.ci_high, "battles": r.n_battles, "ties": r.ties})
    return pd.DataFrame(rows, columns=["source", "length_coefficient", "ci_low", "ci_high", "battles", "ties"])


def bt_summary(comparison: RankingComparison) -> str:
    """The rankings' agreement and the verbosity figures in words."""
    parts = []
    for side, r in (("humans", comparison.human), ("judge", comparison.judge)):
        if r.problem:
            parts.append(f"No {side} ranking: {r.problem}.")
    if math.isfinite(comparison.kendall_tau):
        sep_h = sum(p.human_separated for p in comparison.pairs)
        sep_j = sum(p.judge_separated for p in comparison.pairs)
        parts.append(f"Rank correlation between the humans' and the judge's scores over {comparison.n_models} models: "
                     f"Kendall's tau {comparison.kendall_tau:.3f}, Spearman's rho {comparison.spearman_rho:.3f}. "
                     f"Of {len(comparison.pairs)} model pairs, the humans' ranking separates {sep_h} and the "
                     f"judge's {sep_j} (95% intervals apart).")
    elif comparison.n_models < 3 and not parts:
        parts.append(f"No rank correlation: {comparison.n_models} model(s) ranked by both.")
    lt = bt_length_table(comparison)
    if len(lt) == 2:
        h, j = lt.iloc[0], lt.iloc[1]
        more = "more" if j["length_coefficient"] > h["length_coefficient"] else "less"
        apart = j["ci_low"] > h["ci_high"] or h["ci_low"] > j["ci_high"]
        parts.append(f"Length: the judge's coefficient {j['length_coefficient']:.2f} [{j['ci_low']:.2f}, "
                     f"{j['ci_high']:.2f}] against the humans' {h['length_coefficient']:.2f} [{h['ci_low']:.2f}, "
                     f"{h['ci_high']:.2f}] (log-odds of winning per SD of the normalised length difference): the "
                     f"judge rewards length {more} than the humans"
                     + (", the intervals apart." if apart else ", though the intervals overlap."))
    return " ".join(parts)


def bt_figure(comparison: RankingComparison, run: str) -> go.Figure:
    """The two rankings side by side: each model's Elo-scale score with its 95% interval, humans and judge."""
    t = bt_table(comparison)
    fig = go.Figure()
    for side, name, color, symbol in (("human", "humans' votes", HUMAN_COLOR, "circle"),
                                      ("judge", "judge's verdicts", "#636EFA", "diamond")):
        ok = t[f"{side}_score"].notna()
        s = t[ok]
        fig.add_trace(go.Scatter(
            x=s[f"{side}_score"], y=s["model"].astype(str), mode="markers", name=f"{name} (95% CI)",
            orientation="h", offsetgroup=side, marker=dict(size=11, color=color, symbol=symbol),
            error_x=dict(type="data", symmetric=False, array=(s[f"{side}_ci_high"] - s[f"{side}_score"]).tolist(),
                         arrayminus=(s[f"{side}_score"] - s[f"{side}_ci_low"]).tolist(), color=color),
            hovertemplate="%{y}: %{x:.0f}<extra>" + name + "</extra>"))
    tau = f"; Kendall's tau {comparison.kendall_tau:.2f}" if math.isfinite(comparison.kendall_tau) else ""
    fig.update_layout(title=f"{run}: Bradley-Terry scores, humans vs judge (Elo scale, 95% CI{tau})",
                      xaxis_title="Bradley-Terry score (Elo scale, mean 1000)", yaxis_title="model",
                      scattermode="group", legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, x=0),
                      height=max(320, 200 + 50 * len(t)), margin=dict(b=110))
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=t["model"].astype(str).tolist()[::-1],
                     automargin=True)
    ends = pd.concat([t[c] for c in ("human_ci_low", "judge_ci_low", "human_ci_high", "judge_ci_high",
                                     "human_score", "judge_score")]).dropna()
    if len(ends):  # the scores sit near 1000: an axis from 0 would squeeze them into its last tenth
        pad = max(10.0, 0.05 * float(ends.max() - ends.min()))
        fig.update_xaxes(range=[float(ends.min()) - pad, float(ends.max()) + pad])
    return fig


def length_figure(comparison: RankingComparison, run: str) -> go.Figure:
    """The verbosity figure: the humans' and the judge's length coefficients with their 95% intervals."""
    t = bt_length_table(comparison)
    fig = go.Figure(go.Bar(
        x=t["source"], y=t["length_coefficient"], marker_color=[HUMAN_COLOR, "#636EFA"][:len(t)],
        error_y=dict(type="data", symmetric=False, array=(t["ci_high"] - t["length_coefficient"]).tolist(),
                     arrayminus=(t["length_coefficient"] - t["ci_low"]).tolist()),
        hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    fig.update_layout(title=f"{run}: reward for length, humans vs judge (95% CI)",
                      xaxis_title="whose preferences", yaxis_title="length coefficient (log-odds per SD)",
                      showlegend=False, height=360)
    return fig


# ---------------------------------------------------------------------------------------------------- report


def report_sections(dataset: Dataset, runs: list[Run], dimension: str, *, epsilon: float = 0.2,
                    method: str = "ppi++", systems: list[str] | None = None) -> list:
    """The Alt-Test's verdicts and the PPI table as one section of the exported report, at the page's defaults
    (epsilon 0.2; PPI++; on fully rated data the ratings of a fifth of the documents kept, at least 10). [] when no
    run applies."""
    from evalcore.views.html_report import ReportFigure, ReportSection, ReportTable

    chosen = inference_runs(dataset, runs, dimension)
    if not chosen:
        return []
    alts = [alt_test_for_run(dataset, r, dimension, epsilon=epsilon) for r in chosen]
    full, n = rating_coverage(dataset, chosen, dimension)
    rated = default_rated_documents(n) if full and n >= 3 else None
    # the per-system estimates and intervals need no resampling (only the differences and ranks would)
    ppis = [ppi_for_run(dataset, r, dimension, method=method, rated=rated, n_resamples=0) for r in chosen]
    lines = [alt_test_verdict(v) for v in alts] + alt_test_notes(alts)
    lines.append(f"Epsilon {epsilon_label(epsilon)}. " + EPSILON_HELP)
    lines += [ppi_note(v, dimension) for v in ppis] + [w for v in ppis for w in ppi_warnings(v)]
    if systems:
        lines.append("These figures cover every system the runs judged: the view's systems filter does not apply "
                     "to them.")
    sec = ReportSection(title=f"Can the judge replace the annotators, and what may be concluded from few labels: "
                              f"{dimension}", text="\n".join(lines))
    titles = {"alt_test": "Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025)",
              "alt_test_annotators": "Alt-Test per annotator left out"}
    # the page's Alt-Test tables, from its own blocks (an empty one is left out: the page says "nothing to show")
    sec.tables += [ReportTable(titles[t.key], t.frame) for t in tables(alt_test_blocks(alts, dimension))
                   if t.key in titles and not t.frame.empty]
    table = ppi_table(ppis)
    if not table.empty:
        shown = next(v for v in ppis if v.result is not None)
        sec.figures.append(ReportFigure(f"{METHOD_NAMES[method]}, humans only and judge only: {shown.run}",
                                        ppi_figure(shown, dimension)))
        sec.tables.append(ReportTable(f"Prediction-powered estimates ({METHOD_NAMES[method]}) per system", table))
    return [sec]


# ------------------------------------------------------------------------------------- the page's view model
# The Alignment page's two expanders (pages/_inference.py lays these blocks out between its widgets); the report's
# section takes its tables from the same functions.

ALT_TEST_SOURCE = ("Calderon, Reichart & Dror (2025). The Alternative Annotator Test for LLM-as-a-Judge: How to "
                   "Statistically Justify Replacing Human Annotators with LLMs. ACL 2025.")
PPI_SOURCES = ("Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023). Prediction-powered inference. Science 382. "
               "Angelopoulos, Duchi & Zrnic (2023). PPI++: Efficient prediction-powered inference. arXiv:2311.01453.")
BT_SOURCE = ("Chiang et al. (2024). Chatbot Arena: An Open Platform for Evaluating LLMs by Human Preference. ICML "
             "2024; length as a covariate as Arena's style control (LMSYS, 2024).")
ALT_TEST_TITLE = "Can the judge replace the annotators? (the Alternative Annotator Test)"
EPSILON_NOTE = Note(EPSILON_HELP, "caption")
FILTER_NOTE = Note("These figures cover every system the runs judged: the systems filter above does not apply here.",
                   "caption")
ESTIMATOR_LABELS = {"ppi++": "PPI++ (power-tuned)", "ppi": "PPI (classic)"}
ESTIMATOR_HELP = ("PPI: the judge's mean on the unrated items plus the mean of human - judge on the rated ones. PPI++: "
                  "the judge's weight lambda estimated to make the interval narrowest; estimated from the same "
                  "ratings, so its interval is now and then a little wider than the humans-only one.")
PLANNING_HEADING = Heading("Planning: how many rated documents for an interval this wide?", 3)


def planning_heading(pairwise: bool) -> Heading:
    """Pairwise planning counts a model's pairs (its rows), not prompts."""
    return Heading("Planning: how many rated pairs for an interval this wide?", 3) if pairwise else PLANNING_HEADING
BT_RESAMPLES_MAX = 200  # every resample refits two logistic regressions per source: at most 200 keep the page quick


def bt_heading(n_resamples: int) -> Heading:
    """The Bradley-Terry heading, naming its own resamples (the sidebar's count applies to the other intervals)."""
    return Heading(f"Bradley-Terry rankings: humans vs judge ({n_resamples} prompt resamples)", 3)


def bt_resamples(n_resamples: int) -> int:
    return min(int(n_resamples), BT_RESAMPLES_MAX)


def ppi_title(runs: list[Run]) -> str:
    """The second expander's title: Bradley-Terry named where a pairwise run applies."""
    return ("What may I conclude from few labels? (prediction-powered estimates"
            + (", Bradley-Terry rankings)" if any(is_pairwise(r) for r in runs) else ")"))


def intro_blocks(runs: list[Run], dimension: str, filtered: bool) -> list[Block]:
    """What either expander says first: that no run applies, or (``filtered``: the page's systems filter is set)
    that the filter does not apply here."""
    if not runs:
        return [Note(esc(f"No selected run judged {dimension!r} against human ratings or votes: pick one in the "
                         "sidebar."))]
    return [FILTER_NOTE] if filtered else []


def alt_test_blocks(views: list[AltTestView], dimension: str) -> list[Block]:
    """Each run's Alt-Test verdict, the tables, and how to read them."""
    out: list[Block] = [Note(esc(alt_test_verdict(v)), "success" if v.result is not None and v.result.passed
                             else "info") for v in views]
    scorings = sorted({v.result.scoring for v in views if v.result is not None})
    if scorings:
        out.append(Note(esc("Alignment score with the other annotators: "
                            + "; ".join(SCORING_WORDS[s] for s in scorings) + "."), "caption"))
    out += [Table(alt_test_summary(views), f"alt-test {dimension}", "alt_test"),
            Table(alt_test_annotator_table(views), f"alt-test per annotator {dimension}", "alt_test_annotators")]
    out += [Note(esc(n), "caption") for n in alt_test_notes(views)]
    return out + [
        Note("Each annotator is left out in turn: on every item they rated with at least one other annotator, the "
             "judge and the left-out annotator are each scored against the remaining annotators. H0: the share of "
             "items where the annotator does at least as well as the judge exceeds the judge's share (where the "
             "judge does at least as well as the annotator) by epsilon or more; a one-sided t-test on 30 items or "
             "more. An annotator with fewer than 30 items is left out of the winning rate, as the authors' code "
             "does, or, if asked, tested with an exact test of the mean (valid at any size, conservative); "
             "Benjamini-Yekutieli over the annotators at q = 0.05. judge_wins = that null rejected. winning_rate = "
             "the share of the annotators tested that the judge wins against (it passes at 50%). rho (the average "
             "advantage probability) = how often the judge is at least as good as an annotator, averaged over them: "
             "it does not depend on epsilon and is the figure to compare judges by. rho_j: the same against one "
             "annotator; annotator_advantage: how often that annotator is at least as good as the judge.",
             "caption"),
        Note(esc(f"Source: {ALT_TEST_SOURCE}"), "caption")]


def rated_documents_label(pairwise: bool) -> str:
    return "Rated prompts" if pairwise else "Rated documents"


def rated_documents_help(n: int, pairwise: bool = False) -> str:
    unit = "prompts" if pairwise else "documents"
    what = "pair" if pairwise else "item"
    return (f"Humans rated every judged {what} here. Keep the ratings of this many of the {n} {unit} (drawn at "
            f"random) and treat the rest as unrated, to see what PPI concludes from fewer labels. All {n}: PPI is "
            "then the humans' mean.")


def ppi_missing_blocks(views: list[PPIView], dimension: str) -> list[Block]:
    """Why a run has no estimate."""
    return [Note(esc(ppi_note(v, dimension))) for v in views if v.result is None]


def ppi_run_blocks(view: PPIView, shown: list[PPIView], dimension: str, n_resamples: int) -> list[Block]:
    """The chosen run's chart and note, where its coverage may fall short, every run's estimates, and the chosen
    run's ranking."""
    unit, who = ("prompts", "models") if view.pairwise else ("documents", "systems")
    lam = (" PPI++'s lambda is re-estimated on every resample, as on the data." if view.result is not None
           and view.result.method == "ppi++" else "")
    return [Figure(ppi_figure(view, dimension), "ppi"), Note(esc(ppi_note(view, dimension)), "caption"),
            *[Note(esc(w), "warning") for v in shown for w in ppi_warnings(v)],
            Table(ppi_table(shown), f"ppi {dimension}", "ppi"),
            Heading("Ranking by the PPI estimate", 3),
            Table(ppi_ranking_table(view), f"ppi ranking {dimension}", "ppi_ranking"),
            Note(esc(f"rank_low / rank_high: the 95% interval of each rank over {n_resamples} resamples of {unit} "
                     f"(the {who} share the {unit}, so the ranks move together), as whole ranks.{lam}"),
                 "caption")]


def planning_blocks(plan: pd.DataFrame | Exception, view: PPIView, dimension: str, width: float,
                    rated: int | None) -> list[Block]:
    """``plan_table``'s answer (or the ValueError it raised) and how to read it."""
    if isinstance(plan, Exception):
        return [Note(esc(f"No planning: {plan}"))]
    unit = "pairs of the model (a prompt holds several)" if view.pairwise else "documents of the system"
    return [Table(plan, f"ppi planning {dimension}", "ppi_plan"),
            Note(esc(f"{view.run}: rated {unit} needed for a 95% interval of width {width:g}, out of those judged, "
                     "with the humans alone and with the judge's scores on the rest; the variances are estimated "
                     "from the ratings " + ("kept." if rated is not None else "there are.")), "caption")]


def bt_blocks(comparison: RankingComparison | str, run_name: str, dimension: str, n_resamples: int) -> list[Block]:
    """The humans' and the judge's Bradley-Terry rankings (``bradley_terry_for_run``; a string: why there are
    none)."""
    if isinstance(comparison, str):
        return [Note(esc(f"No Bradley-Terry ranking: {comparison}"))]
    return [
        Figure(bt_figure(comparison, run_name), "bradley_terry"), Note(esc(bt_summary(comparison)), "caption"),
        Table(bt_table(comparison), f"bradley-terry {dimension}", "bradley_terry"),
        Figure(length_figure(comparison, run_name), "bt_length"),
        Table(bt_length_table(comparison), f"length coefficient {dimension}", "bt_length"),
        Table(bt_pairs_table(comparison), f"bradley-terry pairs {dimension}", "bt_pairs"),
        Note(esc(f"Scores on the Elo scale (400 points = ten-to-one odds; mean 1000), a tie half a win for each side; "
                 f"95% intervals from {n_resamples} resamples of prompts (at most {BT_RESAMPLES_MAX} here: each "
                 "resample refits both models; the sidebar's resamples apply to the other intervals). The length coefficient is the log-odds of "
                 "winning per standard deviation of the normalised length difference, fitted with the models "
                 "(Arena's style control): above 0 the longer output is favoured. separate: the two models' 95% "
                 "intervals do not overlap; a_above_share: the share of resamples where model_a scores above "
                 "model_b."), "caption")]


def sources_note(pairwise: bool) -> Note:
    return Note(esc(f"Sources: {PPI_SOURCES}" + (f" {BT_SOURCE}" if pairwise else "")), "caption")
