"""A researcher's third walkthrough, under AppTest and against the views: one systems filter everywhere it is shown
(Compare, the report's Compare section and mean scores), a run that scored nothing said in red, the Data and Bias
pages on a dataset of pairwise votes, names instead of ids in the pickers, sharing the judge scores imported with a
dataset, a link to something the viewer may not see, the Label page's annotator field and planning tile, and the
polish items (runs listed once, one sign-in refusal per page, no upload invitation to a visitor who may not)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from evalcore.model import Run  # noqa: E402
from tests.test_app_pages import GPT4_RTS, CHATGPT_RTS, PAGES, assert_clean, frame_with, new_app, plotly_charts  # noqa: E402

pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py: a fresh store, empty caches

APP = str(Path(__file__).resolve().parents[1] / "app.py")
SYSTEMS = ["M8", "M9", "M10", "M11", "M12"]
HEADER = "X-Forwarded-User"


def page(name: str, **query) -> AppTest:
    at = new_app(**query)
    at.switch_page(PAGES.get(name, name)).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest, *kinds: str) -> str:
    """Every message of these kinds, as read (Markdown's escapes taken out)."""
    return "\n".join(str(e.value) for k in kinds for e in getattr(at, k)).replace("\\", "")


# ------------------------------------------------------------------------------------------- 3: systems filter


def test_report_compare_section_and_mean_scores_honour_the_systems_filter():
    """With systems M8-M12 the report's header said so while its Compare section and "Mean scores per system" used
    all 16 systems. The paired comparison here is checked against meta.compare run on frames filtered by hand."""
    from evalcore import runs as runs_mod
    from evalcore.datasets import load_dataset
    from evalcore.meta.compare import paired_difference
    from evalcore.views.report import AnalysisParams, bias_sections, compare_sections

    ds = load_dataset("summeval")
    a, b = runs_mod.load_run(GPT4_RTS), runs_mod.load_run(CHATGPT_RTS)
    p = AnalysisParams(dataset_id="summeval", run_ids=[GPT4_RTS, CHATGPT_RTS], dimension="coherence",
                       level="summary", coefficient="spearman", n_resamples=0, systems=SYSTEMS)
    (section,) = compare_sections(ds, [a, b], p)
    got = section.tables[0].frame.iloc[0]
    frames = [runs_mod.score_frame(ds, r, "coherence") for r in (a, b)]
    frames = [f[f["system_id"].isin(SYSTEMS)] for f in frames]  # the filter applied by hand
    want = paired_difference(*frames, level="summary", coefficient="spearman", n_resamples=0)
    everything = paired_difference(*(runs_mod.score_frame(ds, r, "coherence") for r in (a, b)), level="summary",
                                   coefficient="spearman", n_resamples=0)
    assert want.n < everything.n  # the filter changes the figure, so the check below can fail
    assert got["n"] == want.n and got["statistic_a"] == pytest.approx(want.statistic_a)
    assert "M8, M9, M10, M11, M12" in section.text
    (bias,) = bias_sections(ds, [a, b], p)
    means = next(t.frame for t in bias.tables if t.title == "Mean scores per system")
    assert set(means["system_id"]) == set(SYSTEMS)


def test_compare_page_keeps_the_systems_of_the_link_and_ranks_disagreements_among_them():
    at = page("compare", systems=SYSTEMS, resamples="20")
    assert_clean(at)
    assert at.multiselect(key="systems").value == SYSTEMS
    assert at.query_params["systems"] == SYSTEMS  # the link keeps them
    dis = frame_with(at, "item_id", "system_id", "rank_gap")
    assert set(dis["system_id"]) <= set(SYSTEMS) and len(dis) == 20
    assert "of the systems M8, M9, M10, M11, M12" in texts(at, "caption")


# ------------------------------------------------------------------------------------- 5: a run that failed


def _failed_run(n: int, reasons: list[str]) -> Run:
    j = pd.DataFrame({"item_id": [f"i{k}" for k in range(n)], "dimension": "coherence", "raw": "no score",
                      "value": math.nan, "status": "failed", "reason": reasons, "estimator": ""})
    return Run(run_id="x/y", dataset_id="x", method="rts", model="m", judgments=j)


def test_run_outcome_says_how_many_scored_and_the_commonest_reason():
    from evalcore.views.score import run_outcome

    out = run_outcome(_failed_run(4, ["no score found", "no score found", "HTTP 500", "no score found"]))
    assert out.level == "error" and (out.scored, out.total) == (0, 4)
    assert out.text.startswith("No item was scored: 4 of 4 items failed.")
    assert "Commonest reason (3 of 4 failures): no score found." in out.text
    ok = _failed_run(4, ["", "", "", "timeout"])
    ok.judgments.loc[:2, "status"] = "ok"
    out = run_outcome(ok)
    assert out.level == "warning" and out.text.startswith("3 of 4 items scored; 1 failed.")
    ok.judgments["status"] = "ok"
    assert run_outcome(ok).level == "success" and run_outcome(ok).text == "4 of 4 items scored."


def test_plain_error_drops_the_python_class_name():
    from evalcore.views.score import plain_error

    assert plain_error(ValueError("the model refused")) == "the model refused"
    assert plain_error("ValueError: bad things") == "bad things"
    assert plain_error("openai.APIConnectionError: no route") == "no route"
    assert plain_error(KeyError()) == "unexpected KeyError"


def test_a_run_whose_every_reply_is_unreadable_does_not_end_in_a_green_done():
    import time

    from evalcore.testing.loopback import Reply, serve

    def unreadable(prompt, **kw):
        text = "I would rather not say."
        return Reply(tokens=[(text, [(text, 0.0)])])

    with serve(scorer=unreadable) as judge:
        at = new_app(dataset="zhang_pairs", dimension="overall")
        at.run()
        at.switch_page(PAGES["score"]).run()
        at.selectbox(key="endpoint").set_value("vllm").run()
        at.text_input(key="base_url").input(judge.base_url).run()
        at.text_input(key="model").input("loopback-judge").run()
        at.selectbox(key="method").set_value("rts").run()
        at.number_input(key="limit").set_value(6).run()
        at.button(key="start_scoring").click().run()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            at.run()
            if at.success or any("scored" in str(e.value) for e in at.error):
                break
            time.sleep(0.5)
    assert not at.exception
    assert not [s for s in at.success if s.value == "Done."]
    said = texts(at, "error")
    assert "No item was scored: 6 of 6 items failed." in said and "Commonest reason (6 of 6 failures)" in said


# ------------------------------------------------------------------------------ 8: pairwise datasets elsewhere


def test_data_page_on_pairwise_votes_draws_no_empty_rating_chart_and_points_to_their_agreement():
    at = page("data", dataset="pandalm", data_section="Rating distributions")
    assert_clean(at)
    assert not plotly_charts(at)
    info = texts(at, "info")
    assert "The 3 annotators voted on 999 pairs of outputs (2,997 votes: A, B or tie)" in info
    at = page("data", dataset="pandalm", data_section="Human agreement")
    info = texts(at, "info")
    assert "no per-annotator ratings" not in info
    assert "Cohen's kappa for each pair of annotators" in info and "Alignment page" in info


def test_bias_page_on_a_one_order_pairwise_run_says_why_flip_rates_are_blank():
    at = page("bias", dataset="pandalm")
    assert_clean(at)
    heads = [s.value for s in at.subheader]
    assert not any(h.startswith(("Verbosity", "Score distributions", "Mean judge score")) for h in heads), heads
    assert "only position bias (below) applies here" in texts(at, "info")
    captions = texts(at, "caption")
    assert "Every pair is judged in both orders" not in captions
    assert "judged each pair in one order only (999 with A shown first)" in captions
    assert "flip_rate and inconsistent_rate need a pair's verdicts in both orders, so they are blank" in captions
    # 9: the picker shows the run's name, not its id
    picker = at.multiselect(key="bias_pairwise")
    assert picker.value == ["pandalm/pandalm-gpt-3.5-turbo"]
    assert picker.options == ["PandaLM authors · gpt-3.5-turbo · pairwise (one order)"]


def test_position_bias_chart_says_why_two_measures_have_no_bars():
    from evalcore import runs as runs_mod
    from evalcore.views.bias import position_bias_figure, position_bias_table

    one_order = position_bias_figure(position_bias_table([runs_mod.load_run("pandalm/pandalm-gpt-3.5-turbo")],
                                                         n_resamples=20))
    notes = [a.text for a in one_order.layout.annotations if "one order only" in a.text]
    assert notes == ["no bars for verdict follows the position and inconsistent verdicts: pairs judged in one order "
                     "only"]


def test_position_bias_note_for_runs_judged_in_both_orders():
    from evalcore import runs as runs_mod
    from evalcore.views.bias import position_bias_note

    note = position_bias_note([runs_mod.load_run("summeval/shen-gpt-3.5-turbo-0301-h2h")])
    assert note.startswith("Every pair is judged in both orders") and "one order only" not in note


# ------------------------------------------------------------------------------------ 9: names, not ids


def _upload(store, *, dataset_id: str, name: str, owner: str | None = None, shared: bool = False) -> Run:
    """A dataset as an upload makes it, with the judge-score run imported from the same file."""
    import dataclasses

    from tests.hardening._judging import dataset

    ds = dataclasses.replace(dataset(n_items=6, dataset_id=dataset_id), name=name)
    store.save_dataset(ds, owner=owner)
    j = pd.DataFrame({"item_id": ds.items["item_id"], "dimension": "coherence", "raw": "3", "value": 3.0,
                      "status": "ok", "reason": "", "estimator": ""})
    run = Run(run_id=f"{dataset_id}/my-judge", dataset_id=dataset_id, method="imported", model="my-judge",
              label="my-judge", config={"imported_from": "mine.csv"}, judgments=j)
    store.save_imported_run(run, owner=owner)
    if owner and shared:
        store.share("datasets", (dataset_id,), owner, True)
    return run


def test_sidebar_lists_an_upload_by_its_name(first_start):
    from evalcore.store import Store

    _upload(Store(first_start), dataset_id="user-6a61f3048b88", name="My ratings")
    at = page("data", dataset="user-6a61f3048b88")
    box = at.sidebar.selectbox(key="dataset")
    assert box.value == "user-6a61f3048b88"
    assert "My ratings" in box.options and "user-6a61f3048b88" not in box.options


def test_label_planning_picker_shows_run_names():
    at = page("pages/label.py", annotator="ann", label_dims="coherence")
    picker = at.selectbox(key="plan_run")
    assert picker.value and not any("/" in o for o in picker.options)


# ------------------------------------------------------------------------------ 10: sharing in a lab


@pytest.fixture
def signed_in_as(monkeypatch):
    from pages import _identity

    monkeypatch.setenv("EVALCORE_USER_HEADER", HEADER)
    who = {"name": None}
    monkeypatch.setattr(_identity, "_request_headers",
                        lambda: {HEADER: who["name"]} if who["name"] is not None else {"Accept": "*/*"})
    return lambda name: who.update(name=name)


def test_sharing_a_dataset_offers_its_imported_judge_scores_too(first_start, signed_in_as):
    from evalcore.store import Store

    store = Store(first_start)
    run = _upload(store, dataset_id="alice-data", name="Alice's ratings", owner="alice")
    signed_in_as("alice")
    at = page("data", dataset="alice-data")
    assert_clean(at)
    runs_toggle = at.toggle(key="share_dataset_runs")
    assert "my-judge (imported with it)" in runs_toggle.label.replace("\\", "") and runs_toggle.value is False
    runs_toggle.set_value(True).run()
    assert store.owner_of("runs", (run.run_id,)) == ("alice", True)


def test_a_link_to_an_unshared_dataset_says_so(first_start, signed_in_as):
    from evalcore.store import Store

    _upload(Store(first_start), dataset_id="alice-data", name="Alice's ratings", owner="alice")
    signed_in_as("bob")
    at = page("data", dataset="alice-data")
    assert at.sidebar.selectbox(key="dataset").value == "summeval"
    assert any("this link points to a dataset or run that is not shared with you" in w.value.lower()
               for w in at.warning)
    at = page("data", dataset="summeval")  # a link to what he may see: nothing said
    assert not any("not shared with you" in w.value for w in at.warning)


def test_a_link_naming_an_unshared_run_says_so(first_start, signed_in_as):
    signed_in_as("bob")
    at = page("criteria", dataset="summeval", runs=[GPT4_RTS, "summeval/alice-private-run"])
    assert at.sidebar.multiselect(key="runs").value == [GPT4_RTS]
    assert any("not shared with you" in w.value for w in at.warning)


# ---------------------------------------------------------------------------------------- 11: Label page


def test_annotator_field_gives_way_to_the_name_once_submitted():
    """The browser kept its focus in the name field after Enter, so the digit shortcuts typed into it: once a name
    is submitted the field is gone (the name shown as text, with a button to change it)."""
    at = page("pages/label.py", label_dims="coherence")
    at.text_input(key="annotator").input("bob")
    at.button(key="label_start").click().run()
    assert_clean(at)
    assert not [t for t in at.text_input if t.key == "annotator"]
    assert "Annotator: bob" in [t.value for t in at.text]
    at.button(key="label_rate_3").click().run()
    at.button(key="annotator_change").click().run()
    assert at.text_input(key="annotator").value == "bob"


def test_planning_tile_says_why_n_now_is_below_the_labels_and_why_a_figure_is_na():
    from evalcore.datasets import load_dataset
    from evalcore.labels import plan
    from evalcore.views.label import plan_notes

    ds = load_dataset("summeval")
    items = ds.items.sort_values("item_id")
    inside = items[items["system_id"].isin(["M8", "M9"])]["item_id"].astype(str).tolist()[:6]
    outside = items[~items["system_id"].isin(["M8", "M9"])]["item_id"].astype(str).tolist()[:4]
    j = pd.DataFrame({"item_id": inside, "dimension": "coherence", "raw": "3", "value": 3.0, "status": "ok",
                      "reason": "", "estimator": ""})
    run = Run(run_id="summeval/constant", dataset_id="summeval", method="rts", model="m", judgments=j)
    rows = pd.DataFrame({"label_id": range(10), "dataset_id": "summeval", "item_id": inside + outside,
                         "dimension": "coherence", "annotator": "ann", "value": [1, 2, 3, 4, 5, 1, 2, 3, 4, 5],
                         "skipped": 0, "strategy": "random", "shown_at": "", "created_at": "", "owner": None})
    p = plan(ds, run, rows, "coherence", reference="labels")
    assert p["n_now"] == 6 and p["statistic"] is None  # no figure: null, as plan --json writes it
    notes = plan_notes(ds, run, rows, "coherence", p)
    assert notes[0] == ("n now is 6 of the 10 items labelled on coherence (random part): 4 were not scored by "
                        "this run (outside its items or systems).")
    assert notes[1].startswith("spearman with the labels is n/a: the judge gave all 6 of these items the same score "
                               "(3), so there is no order to correlate with. n needed is planned as if the "
                               "correlation were 0")


# ------------------------------------------------------------------------------------------------- 13: polish


def test_runs_are_listed_once_in_the_sidebar():
    at = page("data")
    assert not [t for t in at.sidebar.text if "•" in str(t.value)]


def test_a_refused_sign_in_is_said_once_per_page(monkeypatch):
    from pages import _identity

    monkeypatch.setenv("EVALCORE_USER_HEADER", HEADER)
    monkeypatch.setattr(_identity, "_request_headers", lambda: [(HEADER, "alice"), (HEADER, "bob")])
    for name in ("data", "pages/label.py"):
        at = page(name)
        refusals = [e for e in at.error if "holds no usable user name" in e.value]
        assert len(refusals) == 1, [e.value for e in at.error]


def test_a_visitor_who_may_not_upload_is_not_told_to_upload(monkeypatch):
    from pages import _identity

    monkeypatch.setenv("EVALCORE_USER_HEADER", HEADER)
    monkeypatch.setattr(_identity, "_request_headers", lambda: {"Accept": "*/*"})
    at = page("data")
    info = texts(at, "info")
    assert "Sign in to upload" in texts(at, "caption")
    assert "To use your own ratings, sign in, then upload a file below" in info
    assert "To use your own ratings, upload a file below" not in info


# ------------------------------------------------------------------------------- 4: the two-annotator ceiling


def _headline_tables(judge: float, ceiling: float, annotators: int):
    table = pd.DataFrame([{"run": "J", "level": "dataset", "coefficient": "spearman", "statistic": judge,
                           "ci_low": judge - 0.05, "ci_high": judge + 0.05}])
    rows = [{"run": "J", "group": "expert", "annotator": f"a{k}", "statistic": ceiling, "ci_low": ceiling - 0.04,
             "ci_high": ceiling + 0.04} for k in range(annotators)]
    rows.append({"run": "J", "group": "expert", "annotator": "mean", "statistic": ceiling, "ci_low": ceiling - 0.04,
                 "ci_high": ceiling + 0.04})
    return table, pd.DataFrame(rows)


def test_a_judge_above_a_two_annotator_ceiling_is_told_what_that_ceiling_is():
    from evalcore.views.alignment import ceiling_note

    table, ceil = _headline_tables(0.626, 0.598, 2)
    note = ceiling_note(table, ceil, level="dataset", coefficient="spearman")
    assert note.startswith("With two annotators the human ceiling is one annotator against the other")
    assert "mean of two ratings has less noise than either rating" in note
    assert note.endswith("Above it here: J 0.626 vs ceiling 0.598.")
    assert "Above it" not in ceiling_note(*_headline_tables(0.5, 0.598, 2)[:2], level="dataset",
                                          coefficient="spearman")
    assert ceiling_note(*_headline_tables(0.7, 0.598, 3)[:2], level="dataset", coefficient="spearman") == ""


def test_the_ceiling_interval_is_drawn_beside_a_single_runs_not_under_it():
    from evalcore.views.alignment import headline_figure, headline_spec

    table, ceil = _headline_tables(0.626, 0.598, 2)
    spec = headline_spec(table, ceil, level="dataset", coefficient="spearman")
    ceiling_layers = [lay for lay in spec["layer"] if "ceiling" in lay["encoding"]["x"]["field"]]
    run_layers = [lay for lay in spec["layer"] if lay not in ceiling_layers]
    assert len(ceiling_layers) == 2 and all(lay["mark"].get("yOffset", 0) > 0 for lay in ceiling_layers)
    assert all(lay["mark"].get("yOffset", 0) == 0 for lay in run_layers)
    fig = headline_figure(table, ceil, level="dataset", coefficient="spearman")
    assert fig.layout.scattermode == "group" and {t.offsetgroup for t in fig.data} == {"run", "ceiling"}
    # the report's legend sits at the foot of the figure, below the axis title (not in the plot's fractions)
    assert fig.layout.legend.yref == "container" and fig.layout.margin.b >= 100


def test_alignment_page_explains_a_two_annotator_ceiling_a_judge_exceeds(first_start):
    """Two annotators, each the truth plus their own noise; the judge the truth plus less noise: the judge against
    their mean beats one annotator against the other, and the page says what that ceiling is."""
    import dataclasses

    import numpy as np

    from evalcore.store import Store
    from tests.hardening._judging import dataset

    rng = np.random.default_rng(0)
    base = dataset(n_items=60, dataset_id="two-raters")
    truth = rng.integers(1, 6, 60).astype(float)
    a1 = np.clip(truth + rng.normal(0, 1.0, 60), 1, 5).round()
    a2 = np.clip(truth + rng.normal(0, 1.0, 60), 1, 5).round()
    ids = base.items["item_id"].tolist()
    ann = pd.DataFrame({"item_id": ids * 2, "dimension": "coherence", "annotator": ["a1"] * 60 + ["a2"] * 60,
                        "group": "expert", "value": np.concatenate([a1, a2])})
    human = pd.DataFrame({"item_id": ids, "dimension": "coherence", "score": (a1 + a2) / 2})
    ds = dataclasses.replace(base, annotations=ann, human_scores=human)
    store = Store(first_start)
    store.save_dataset(ds)
    judge = np.clip(truth + rng.normal(0, 0.3, 60), 1, 5)
    j = pd.DataFrame({"item_id": ids, "dimension": "coherence", "raw": "x", "value": judge, "status": "ok",
                      "reason": "", "estimator": ""})
    store.save_imported_run(Run(run_id="two-raters/judge", dataset_id="two-raters", method="imported",
                                model="judge", label="judge", judgments=j))
    at = page("alignment", dataset="two-raters", runs=["two-raters/judge"], resamples="20")
    assert_clean(at)
    info = texts(at, "info")
    assert "With two annotators the human ceiling is one annotator against the other" in info
    corr = frame_with(at, "run_id", "statistic")["statistic"].iloc[0]
    ceiling = frame_with(at, "annotator", "statistic").set_index("annotator").loc["mean", "statistic"]
    assert corr > ceiling and f"Above it here: judge {corr:.3f} vs ceiling {ceiling:.3f}." in info


# -------------------------------------------------------------------------- 12: RTS-MCQ reliability intervals


def test_across_systems_interval_matches_explicit_resampling_of_systems():
    import numpy as np
    from scipy import stats

    from evalcore.meta.across_systems import across_systems_interval

    rng = np.random.default_rng(3)
    x = rng.normal(size=16)
    y = 0.6 * x + rng.normal(size=16)
    got = across_systems_interval(x, y, coefficient="kendall", n_resamples=2000)
    assert got.statistic == pytest.approx(stats.kendalltau(x, y)[0]) and got.n_systems == 16
    draws = []  # the same interval computed a second way: systems drawn with replacement by hand
    for _ in range(4000):
        i = rng.integers(0, 16, 16)
        if len(set(x[i])) > 1:
            draws.append(stats.kendalltau(x[i], y[i])[0])
    lo, hi = np.nanpercentile(draws, [2.5, 97.5])
    assert got.ci_low == pytest.approx(lo, abs=0.04) and got.ci_high == pytest.approx(hi, abs=0.04)
    assert math.isnan(across_systems_interval(x[:3], y[:3], n_resamples=100).ci_low)  # too few systems


def test_reliability_tab_gives_each_across_system_correlation_its_interval():
    at = page("alignment", section="RTS-MCQ reliability", resamples="20", coefficient="kendall")
    assert_clean(at)
    captions = texts(at, "caption")
    assert captions.count("95% CI [") == 2 and "over 12 systems" in captions  # SummEval: the 12 with both runs
    picker = at.selectbox(key="reliability_pair")
    assert not any("/" in o for o in picker.options)  # 9: names, not ids


# --------------------------------------------------------------------------------------- 13: win-rate labels


def test_win_rate_names_of_nearby_models_take_different_places():
    from evalcore.views.preference import label_positions

    spots = label_positions([0.50, 0.51, 0.505, 0.9], [0.50, 0.50, 0.52, 0.1])
    assert len(set(spots[:3])) == 3 and spots[3] == "top center"


def test_report_tables_keep_short_names_on_one_line_and_scroll_when_wide():
    from evalcore.views.html_report import table_html

    out = table_html(pd.DataFrame({"run": ["Shen et al. · gpt-4-0314 · RTS"], "statistic": [0.5],
                                   "note": ["n/a: the judge gave every item the same score, so " * 2]}))
    assert out.startswith('<div class="scroll"><table>')
    assert '<td class="short">Shen et al. · gpt-4-0314 · RTS</td>' in out and '<td class="num">' in out
    assert "<td>n/a: the judge" in out  # a long note still wraps


def test_report_pairwise_section_says_the_systems_filter_does_not_apply_to_votes():
    from evalcore import runs as runs_mod
    from evalcore.datasets import load_dataset
    from evalcore.views.report import AnalysisParams, pairwise_sections

    ds = load_dataset("pandalm")
    run = runs_mod.load_run("pandalm/pandalm-gpt-3.5-turbo")
    p = AnalysisParams(dataset_id="pandalm", run_ids=[run.run_id], dimension="preference", n_resamples=0,
                       systems=ds.systems[:2])
    (section,) = pairwise_sections(ds, [run], p)
    assert "The systems filter does not apply to this section: every annotated pair is counted." in section.text


def test_pairwise_confusion_title_keeps_its_words_in_a_half_width_column():
    from evalcore import runs as runs_mod
    from evalcore.datasets import load_dataset
    from evalcore.views import preference as pv

    ds = load_dataset("pandalm")
    sums = pv.summaries(ds, [runs_mod.load_run("pandalm/pandalm-gpt-3.5-turbo")], "preference", n_resamples=0)
    run, summary = next(iter(sums.items()))
    title = pv.confusion_figure(summary, run).layout.title.text
    assert title == f"Judge vs majority vote<br><sup>{run}</sup>"  # the run's long name on its own line


def test_label_page_says_why_alpha_is_blank(first_start):
    """Two annotators who labelled different items: the alpha row has no value, and the page says why."""
    from evalcore import labels
    from evalcore.datasets import load_dataset
    from evalcore.store import Store

    order = labels.item_order(load_dataset("summeval"), "random")
    store = Store(first_start)
    for k, item in enumerate(order[:4]):
        store.save_label("summeval", item, "coherence", "ann" if k < 2 else "bob", 3.0, strategy="random")
    at = page("pages/label.py", annotator="ann", label_dims="coherence")
    assert_clean(at)
    assert "Blank alpha on coherence: no item has labels from two annotators yet" in texts(at, "caption")


def test_bias_page_writer_bias_picker_shows_run_names():
    at = page("bias", dataset="topical_chat")
    assert_clean(at)
    picker = at.selectbox(key="bias_run")
    assert picker.value == "topical_chat/chiang-lee-gpt-3.5-geval" and not any("/" in o for o in picker.options)


def test_exported_report_of_a_filtered_view_compares_the_runs_on_those_systems():
    """The app's export (pages/_compute.report, what the sidebar's button builds) passes the filter to the cached
    paired comparison: the report's Compare table counts the filtered items."""
    import re

    from evalcore import runs as runs_mod
    from evalcore.datasets import load_dataset
    from evalcore.meta.compare import paired_difference
    from pages import _compute

    html = _compute.report("summeval", (GPT4_RTS, CHATGPT_RTS), "coherence", "dataset", "spearman", "robust", 20,
                           tuple(SYSTEMS))
    compare = html[html.index("<h2>Compare</h2>"):]
    compare = compare[:compare.index("</table>")]
    ds = load_dataset("summeval")
    frames = [runs_mod.score_frame(ds, runs_mod.load_run(r), "coherence", systems=SYSTEMS)
              for r in (GPT4_RTS, CHATGPT_RTS)]
    want = paired_difference(*frames, level="dataset", coefficient="spearman", n_resamples=0)
    header = re.findall(r"<th>([^<]*)</th>", compare)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", compare)
    assert int(cells[header.index("n")]) == want.n == 500  # 5 systems x 100 documents (unfiltered: 1,200)
    assert "(systems: M8, M9, M10, M11, M12)" in compare
