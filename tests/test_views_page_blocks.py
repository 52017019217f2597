"""The view models of the Alignment, Bias and Compare pages (evalcore.views.<page>): the blocks each section shows,
checked on small hand-made data without Streamlit: which headings, notes and tables, in which order, with which
values."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from evalcore.model import Dataset, Dimension, Run
from evalcore.views import alignment as av
from evalcore.views import bias as bv
from evalcore.views import compare as cv
from evalcore.views import inference as iv
from evalcore.views.blocks import Expander, Figure, Heading, Metrics, Note, Table, Text, notes, tables
from evalcore.views.format import esc
from tests.test_app_views import judgments, pairs_dataset  # noqa: F401 - a fixture


def _kinds(blocks) -> list[str]:
    return [type(b).__name__ + (f":{b.kind}" if isinstance(b, Note) else "") for b in blocks]


def said(text: str, kind: str = "info") -> Note:
    """A note quoting user data: escaped for Markdown as the page shows it."""
    return Note(esc(text), kind)


def _plain(text: str) -> str:
    return text.replace("\\", "")


NO_SCORES = pd.DataFrame(columns=["item_id", "dimension", "score"])


def _run(run_id: str, values: dict, method: str = "rts", dimension: str = "overall") -> Run:
    return Run(run_id=run_id, dataset_id="toy", method=method, model="m", judgments=judgments(values, dimension))


# ------------------------------------------------------------------------------------------------------- Bias


def test_writer_section_says_what_to_do_before_it_has_a_run(pairs_dataset):  # noqa: F811
    plain = Dataset(id="p", name="p", task="t", dimensions=pairs_dataset.dimensions,
                    documents=pairs_dataset.documents, items=pairs_dataset.items.drop(columns="written_by"),
                    human_scores=pairs_dataset.human_scores)
    intro = bv.writer_intro(plain, [])
    assert intro[0] == Heading(bv.WRITER_HEADING) and "**zhang_pairs**" in intro[1].text
    intro = bv.writer_intro(pairs_dataset, [])
    assert "No judge has scored these texts yet" in intro[1].text
    run = _run("toy/r", {"d1/h": 4, "d1/l": 5})
    assert bv.writer_intro(pairs_dataset, [run]) == [Heading(bv.WRITER_HEADING)]
    h2h = Run(run_id="toy/h", dataset_id="toy", method="h2h", model="m")
    assert bv.scored_runs(pairs_dataset, [run, h2h]) == [run]
    assert bv.pairwise_bias_runs([run, h2h]) == [h2h]


def test_writer_blocks_show_the_table_and_how_pairs_were_grouped(pairs_dataset):  # noqa: F811
    run = _run("toy/r", {"d1/h": 4, "d1/l": 5, "d2/h": 2, "d2/l": 3})
    table = bv.writer_bias_table(pairs_dataset, run, "overall")
    pairs = bv.writer_bias_pairs(pairs_dataset, run, "overall")
    blocks = bv.writer_blocks(pairs_dataset, run, "judge r", "overall", table, pairs)
    assert _kinds(blocks) == ["Figure", "Table", "Note:caption", "Expander"]
    assert notes(blocks, "caption") == ["Pairs are grouped by the majority of the annotators' votes (a tie when the "
                                        "votes cancel)."]
    assert [t.key for t in tables(blocks)] == ["writer_bias", "writer_pairs"]
    assert bv.shown_table(blocks, "writer_bias")["difference"].tolist() == [-1.0, -1.0]
    # the CLI's form: no table of pairs
    assert [t.key for t in tables(bv.writer_blocks(pairs_dataset, run, "r", "overall", table))] == ["writer_bias"]
    # nothing parsed on this dimension: which dimensions the run did score
    empty = bv.writer_blocks(pairs_dataset, run, "judge r", "fluency", table.iloc[0:0])
    assert empty == [Note(esc("Run judge r has no parsed scores on 'fluency' for these pairs.") + " It scored: overall "
                          "(pick one as the sidebar's Dimension).")]
    assert bv.shown_table(empty, "writer_bias") is None


def test_mean_scores_and_position_blocks(pairs_dataset):  # noqa: F811
    assert bv.mean_scores_blocks(None, "overall") == [Note("The selected runs scored none of this dataset's "
                                                           "dimensions.")]
    assert bv.mean_scores_blocks(pd.DataFrame(), "overall") == [Note("No scores to compare.")]
    run = _run("toy/r", {"d1/h": 4, "d1/l": 5, "d2/h": 2, "d2/l": 3})
    ms = bv.mean_scores_table(pairs_dataset, [run], ["overall"])
    blocks = bv.mean_scores_blocks(ms, "overall")
    assert [b.key for b in blocks if isinstance(b, Figure)] == ["mean_scores", "mean_scores_system"]
    assert _kinds(bv.mean_scores_blocks(ms, "fluency")) == ["Figure", "Table", "Note:caption"]
    assert bv.position_intro([])[1].text.startswith("No pairwise run on this dataset.")
    assert bv.position_bias_blocks(pd.DataFrame(), []) == [Note("These runs hold no comparisons.")]
    assert bv.score_bias_blocks(pd.DataFrame(), "overall") == [said("No score run with human scores on 'overall'.")]
    votes_only = Dataset(id="v", name="v", task="t", dimensions=pairs_dataset.dimensions,
                         documents=pairs_dataset.documents, items=pairs_dataset.items, human_scores=NO_SCORES,
                         preferences=pairs_dataset.preferences)
    assert "only position bias (below) applies here" in bv.no_score_runs_note(votes_only).text
    assert "Pick runs in the sidebar" in bv.no_score_runs_note(pairs_dataset).text


# ---------------------------------------------------------------------------------------------------- Compare


def test_compare_defaults_and_shared_dimension():
    assert cv.default_pair(["b", "x", "c"], ["a", "b", "c"]) == ("b", "c")
    assert cv.default_pair([], ["a", "b"]) == ("a", "b")
    assert cv.default_pair(["b"], ["a", "b"]) == ("b", "a")
    a, b = _run("a", {"x": 1}), _run("b", {"x": 2}, dimension="fluency")
    assert cv.shared_dimension_note(a, a, "overall") == []
    assert cv.shared_dimension_note(a, b, "overall") == [
        said("The two runs do not both score 'overall'; dimensions they share: none. Pick one in the sidebar.")]
    assert cv.difference_heading("kendall", "summary", "a_b") == Heading("Difference in kendall (summary level) on "
                                                                         "a\\_b")


def test_compare_headline_and_notes():
    res = SimpleNamespace(statistic_a=0.5, statistic_b=0.25, difference=0.25, ci_low=0.1, ci_high=0.4, pvalue=0.0004,
                          n=30, n_documents=5, level="dataset", coefficient="kendall", method="bootstrap")
    m = cv.headline(res, "bootstrap")
    assert [(x.label, x.value, x.help) for x in m.items] == [
        ("Run A", "0.500", None), ("Run B", "0.250", None), ("A − B", "0.250", "95% CI [0.100, 0.400]"),
        ("p-value", "<0.001", "equal correlation (paired bootstrap), n = 30")]
    assert cv.headline(res, "permutation", "computing…").items[3].value == "computing…"
    assert cv.headline(res, "bootstrap", "stopped").items[2].help == "95% CI stopped"
    note = cv.test_note("bootstrap", "summary", ["s1", "s2"])
    assert note.kind == "caption" and "of the systems s1, s2)" in _plain(note.text)
    assert "summary level" in note.text and "interchangeable" in cv.test_note("permutation", "dataset", None).text
    summary = cv.result_blocks(res, "A", "B", "overall")  # 5 documents: the bootstrap's interval is too narrow
    assert _kinds(summary) == ["Note:warning", "Table"] and "rests on 5 documents" in _plain(summary[0].text)
    assert tables(summary)[0].name == "paired difference overall dataset kendall"
    assert tables(summary)[0].frame[["run_a", "difference", "pvalue"]].values.tolist() == [["A", 0.25, 0.0004]]


def test_compare_item_blocks(pairs_dataset):  # noqa: F811
    a, b = _run("a", {"d1/h": 1, "d1/l": 2, "d2/h": 3, "d2/l": 4}), _run("b", {"d1/h": 9, "d1/l": 2, "d2/h": 3})
    dis = cv.disagreements(pairs_dataset, a, b, "overall", top=3)
    blocks = cv.disagreement_blocks(dis, "overall")
    assert _kinds(blocks) == ["Table", "Note:caption"]
    assert cv.disagreement_blocks(dis.iloc[0:0], "overall")[0].kind == "info"
    assert cv.scores_line(dis, "d1/h") == "Run A: 1   Run B: 9   human: 0.6"
    item = cv.item_blocks(pairs_dataset, "d1/h", {"A": a, "B": b}, {"a": "judge a", "b": "judge b"}, "overall")
    assert item[:2] == [Text("Evaluated output", "a"), Text("Source", "s1")]
    replies = item[-1]
    assert isinstance(replies, Expander) and replies.blocks == (Text("Run A (judge a)", "Score: 1"),
                                                                Text("Run B (judge b)", "Score: 9"))


# -------------------------------------------------------------------------------------------------- Alignment


def test_correlations_intro_by_dimension_kind(pairs_dataset):  # noqa: F811
    run = _run("a", {"d1/h": 1})
    assert av.correlations_intro(pairs_dataset, "overall", [run]) == [Heading("Correlation with human ratings")]
    assert _kinds(av.correlations_intro(pairs_dataset, "overall", [])) == ["Heading", "Note:info"]
    nominal = Dataset(id="n", name="n", task="t", dimensions=[Dimension("overall", 0, 2, kind="nominal")],
                      documents=pairs_dataset.documents, items=pairs_dataset.items, human_scores=NO_SCORES)
    assert notes(av.correlations_intro(nominal, "overall", [run]))[0].startswith("Nominal labels have no order")
    assert not av.has_correlations(nominal, "overall", [run]) and av.has_correlations(pairs_dataset, "overall",
                                                                                       [run])


def test_correlations_view_and_ceiling(pairs_dataset):  # noqa: F811
    assert av.correlations_view(pd.DataFrame(), "overall", level="dataset", coefficient="kendall").table == [
        said("None of the selected runs scored 'overall'.")]
    table = pd.DataFrame({"run": ["r", "r"], "dimension": "overall", "level": ["dataset", "system"],
                          "coefficient": "kendall", "statistic": [0.4, 0.9]})
    view = av.correlations_view(table, "overall", level="dataset", coefficient="kendall")
    assert tables(view.table)[0].frame["statistic"].tolist() == [0.4]
    assert _kinds(view.notes) == ["Note:caption", "Note:markdown"]
    assert av.ceiling_blocks(table, pd.DataFrame(), "overall", level="dataset", coefficient="kendall") == [
        Note("No per-annotator ratings for this dimension: no human ceiling.")]
    assert av.headline_notes(pd.DataFrame()) == []
    assert av.support_blocks(["few items"]) == [Note("few items", "warning")]


def test_label_agreement_view_says_why_there_is_none():
    view = av.label_agreement_view(ValueError("label 'x' is no category"), "overall", lambda: pd.DataFrame())
    assert view.top == [said("No label agreement for 'overall': label 'x' is no category", "warning")]
    assert view.confusion == {} and view.bottom == []
    assert av.label_agreement_view({}, "overall", lambda: pd.DataFrame()).top[0].kind == "info"


def test_judge_by_human_summary_counts_each_bin():
    items = pd.DataFrame({"item_id": ["x", "y", "z"], "run": "r", "human": [1.0, 1.0, 2.0], "human_bin": ["1", "1", "2"], "bin_order": [0, 0, 1], "judge": [1.0, 3.0, 5.0]})
    s = av.judge_by_human_summary(items)
    assert s[["human_bin", "items", "mean", "median"]].values.tolist() == [["1", 2.0, 2.0, 2.0], ["2", 1.0, 5.0, 5.0]]
    assert "bin_order" not in s.columns
    blocks = av.judge_by_human_blocks(items, "overall")
    assert _kinds(blocks) == ["Figure", "Note:caption", "Table"]


def test_cp_dimensions_and_pairwise_intro(pairs_dataset):  # noqa: F811
    run = _run("a", {"d1/h": 1})
    assert av.cp_dimensions(pairs_dataset, [run], []) == ("overall",)
    assert av.cp_dimensions(pairs_dataset, [], []) is None
    assert av.cp_blocks(pd.DataFrame()) == [Note("No system pairs to compare.")]
    h2h = Run(run_id="h", dataset_id="toy", method="h2h", model="m")
    assert "No selected run gave pairwise verdicts on 'overall'" in av.pairwise_intro(pairs_dataset, [], "overall",
                                                                                       None)[0].text
    assert av.pairwise_intro(pairs_dataset, [h2h], "overall", None) == []
    assert av.pairwise_intro(pairs_dataset, [h2h], "overall", ["s"])[0].kind == "caption"
    scores_only = Dataset(id="s", name="s", task="t", dimensions=pairs_dataset.dimensions,
                          documents=pairs_dataset.documents, items=pairs_dataset.items,
                          human_scores=pairs_dataset.human_scores)
    assert "no pairwise human votes" in av.pairwise_intro(scores_only, [h2h], "overall", None)[0].text
    assert av.pairwise_only(scores_only) is False


def test_reliability_blocks_hide_the_p_value_under_a_filter():
    ci = SimpleNamespace(statistic=0.5, ci_low=0.1, ci_high=0.8, n_systems=3)
    rel = SimpleNamespace(pvalue_rts=0.02, pvalue_mcq=0.5)
    table = pd.DataFrame({"system_id": ["a", "b", "c"], "reliability": [1, 2, 3]})
    view = av.reliability_blocks(rel, table, {"rts": ci, "mcq": ci}, "overall", coefficient="kendall",
                                 n_resamples=100, filtered=False)
    first = view.columns[0]
    assert isinstance(first[0], Metrics) and first[0].items[0].help == "p = 0.020, 3 systems"
    assert first[1] == Note("no interval: fewer than 4 systems", "caption")
    assert isinstance(view.rest[1], Table) and "100 resamples" in view.rest[0].text
    filtered = av.reliability_blocks(rel, table, {"rts": ci, "mcq": ci}, "overall", coefficient="kendall",
                                     n_resamples=100, filtered=True)
    assert filtered.columns[1][0].items[0].help == "3 systems"
    assert av.reliability_rows(table, ["a"])["system_id"].tolist() == ["a"]


def test_page_colors_key_every_run_once():
    a, b, c = (Run(run_id=i, dataset_id="toy", method="rts", model=f"model-{i}") for i in "abc")
    colors = av.page_colors([a, b], [b, c])
    assert len(colors) == 3 and len(set(colors.values())) == 3


# -------------------------------------------------------------------------------------------------- inference


def test_inference_blocks_say_why_there_is_nothing():
    assert iv.intro_blocks([], "overall", False) == [said("No selected run judged 'overall' against human ratings "
                                                          "or votes: pick one in the sidebar.")]
    run = _run("a", {"x": 1})
    assert iv.intro_blocks([run], "overall", True) == [iv.FILTER_NOTE]
    assert iv.intro_blocks([run], "overall", False) == []
    assert iv.bt_blocks("fewer than two models", "r", "overall", 10) == [
        said("No Bradley-Terry ranking: fewer than two models")]
    view = iv.PPIView(run="r", result=None, pairwise=False, rated_documents=None, total_rated_documents=3,
                      documents=3, error="no ratings")
    assert iv.planning_blocks(ValueError("too wide"), view, "overall", 0.4, None) == [said("No planning: too wide")]
    assert iv.ppi_missing_blocks([view], "overall") == [said("r: no prediction-powered estimate (no ratings).")]
    assert _plain(iv.sources_note(True).text).endswith("(LMSYS, 2024).")
    assert "Chiang" not in iv.sources_note(False).text
    failed = iv.AltTestView("r", None, None, "one annotator")
    blocks = iv.alt_test_blocks([failed], "overall")
    assert blocks[0] == said("r: no Alt-Test (one annotator).")
    assert [t.key for t in tables(blocks)] == ["alt_test", "alt_test_annotators"]


@pytest.mark.parametrize("n", [10, 100])
def test_rated_documents_help_names_the_count(n):
    assert f"of the {n} documents" in iv.rated_documents_help(n)
