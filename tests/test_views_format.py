"""evalcore.views.format (p-values, rates, blanks, citations), run colours, the Data page's histogram bins and the
Alignment page's human-score bins: values checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalcore.views import format as fmt
from evalcore.views.common import RUN_PALETTE, label_colors, run_colors


# ------------------------------------------------------------------------------------------------------ p-values


@pytest.mark.parametrize("p, shown", [
    (1e-59, "<0.001"), (0.0, "<0.001"), (0.000999, "<0.001"), (0.001, "0.001"), (0.9612, "0.961"),
    (1.0, "1.000"), (0.05, "0.050"), (None, "n/a"), (float("nan"), "n/a"), (np.float64(0.25), "0.250"),
])
def test_pvalues_read_as_decimals_never_scientific(p, shown):
    assert fmt.format_pvalue(p) == shown


@given(st.floats(min_value=0.0, max_value=1.0, allow_nan=False))
def test_pvalue_text_is_plain_and_close_to_the_value(p):
    s = fmt.format_pvalue(p)
    assert "e" not in s.lower()
    if s == "<0.001":
        assert p < 0.001
    else:
        assert abs(float(s) - p) <= 0.0005 + 1e-12


def test_rates_are_percentages_with_one_decimal():
    assert fmt.format_rate(0.32) == "32.0%"
    assert fmt.format_rate(0.35159090909) == "35.2%"
    assert fmt.format_rate(1) == "100.0%"
    assert fmt.format_rate(None) == "n/a"


def test_display_table_formats_pvalues_rates_and_blanks():
    frame = pd.DataFrame({
        "run": ["a", None], "statistic": [0.44393, math.nan], "n": [1200, 98], "pvalue": [4.1e-59, math.nan],
        "flip_rate": [0.32, 0.2945], "challenge total": [11.0, math.nan], "note": [None, "n/a: M undefined"],
        "full %": [81.81818, 100.0],
    })
    shown = fmt.display_table(frame)
    f = shown.frame
    assert f["pvalue"].tolist() == ["<0.001", ""]
    assert f["flip_rate"].tolist() == pytest.approx([32.0, 29.45])
    assert shown.formats["flip_rate"] == "%.1f%%"
    assert shown.formats["statistic"] == "%.3f"
    assert shown.formats["full %"] == "%.1f%%" and f["full %"].tolist() == [81.81818, 100.0]
    assert shown.formats["n"] == "%d" and shown.formats["challenge total"] == "%d"
    assert f["run"].tolist() == ["a", ""] and f["note"].tolist() == ["", "n/a: M undefined"]
    # missing numbers stay missing (shown blank by the page), they are not turned into the text "None"
    assert math.isnan(f["statistic"].iloc[1])
    assert "None" not in f.astype(str).replace("nan", "").to_numpy().ravel().tolist()
    assert frame["pvalue"].iloc[0] == 4.1e-59  # the raw frame (the CSV) is left alone
    # as text (a static table): the same formats applied by hand, missing numbers blank
    text = shown.as_text()
    assert text["statistic"].tolist() == ["0.444", ""] and text["n"].tolist() == ["1200", "98"]
    assert text["flip_rate"].tolist() == ["32.0%", "29.4%"]  # 29.45 in binary is just under 29.45
    assert text["challenge total"].tolist() == ["11", ""] and text["pvalue"].tolist() == ["<0.001", ""]
    assert text["run"].tolist() == ["a", ""] and text["full %"].tolist() == ["81.8%", "100.0%"]


def test_headings_name_the_paper():
    assert fmt.cite("000", "Fig. 2") == "Liu et al. 2023, Fig. 2"
    assert fmt.cite("003") == "Shen et al. 2023"
    key = fmt.sources_key(["003", "000", "003"])
    assert len(key) == 2 and key[0].startswith("Shen et al. 2023: ") and "G-Eval" in key[1]


@pytest.mark.parametrize("top, step", [(0, 1), (3, 1), (6, 1), (7, 2), (12, 2), (13, 5), (390, 100),
                                       (1306, 500)])
def test_count_axis_steps_are_whole_numbers(top, step):
    assert fmt.integer_dtick(top) == step


# ------------------------------------------------------------------------------------------------------ colours


class _R:
    def __init__(self, run_id, label="", created_at=""):
        self.run_id, self.label, self.method, self.model, self.created_at = run_id, label, "rts", "m", created_at


def test_a_run_keeps_its_colour_whatever_else_is_selected():
    every = [_R(f"ds/run-{i}") for i in range(5)]
    full = run_colors(every)
    assert len(set(full.values())) == 5 and set(full.values()) <= set(RUN_PALETTE)
    # the pages key colours over all of a dataset's runs, so the same run has the same colour in any order
    assert run_colors(list(reversed(every))) == full
    # a run scored later takes the next colour: the published runs (no creation time) keep theirs
    later = run_colors(every + [_R("ds/a-local", created_at="2026-11-23T09:00:00")])
    assert {k: later[k] for k in full} == full and later["ds/a-local"] == RUN_PALETTE[5]
    newer = run_colors(every + [_R("ds/a-local", created_at="2026-11-23T09:00:00"),
                                _R("ds/0-local", created_at="2026-11-23T10:00:00")])
    assert newer["ds/a-local"] == RUN_PALETTE[5] and newer["ds/0-local"] == RUN_PALETTE[6]
    labelled = [_R("ds/b", "B run"), _R("ds/a", "A run")]
    assert label_colors(labelled) == {"A run": RUN_PALETTE[0], "B run": RUN_PALETTE[1]}


# ----------------------------------------------------------------------------------------- Data page histogram


def test_integer_ratings_get_one_bar_per_integer_with_whole_counts():
    from evalcore.views.data import rating_bins

    b = rating_bins(pd.Series([1, 2, 2, 5, 5, 5]), 1, 5)
    assert b["score"].tolist() == [1, 2, 3, 4, 5]
    assert b["count"].tolist() == [1, 2, 0, 0, 3]
    assert b["count"].dtype.kind == "i"


def test_means_of_three_ratings_get_one_bar_per_value():
    from evalcore.views.data import rating_bins

    v = pd.Series([1.0, 4 / 3, 4 / 3, 5.0, 14 / 3])
    b = rating_bins(v, 1, 5)
    assert b["count"].sum() == 5 and b["count"].tolist() == [1, 2, 1, 1]
    assert b["width"].iloc[0] == pytest.approx(0.8 / 3)


def test_summeval_histogram_panels_have_their_own_ticked_count_axes():
    from evalcore import runs
    from evalcore.views.data import rating_histogram

    ds = runs.get_dataset("summeval")
    fig = rating_histogram(ds)
    tops = {t.name: int(max(t.y)) for t in fig.data}
    hs = ds.human_scores
    # the tallest bar of each panel, counted a second way
    for dim, top in tops.items():
        assert top == hs.loc[hs["dimension"] == dim, "score"].round(6).value_counts().max()
    assert tops["consistency"] == 1306 and tops["coherence"] == 270
    axes = [fig.layout[k] for k in fig.layout if k.startswith("yaxis")]
    assert len(axes) == 4
    assert all(a.showticklabels and a.title.text == "items" and a.matches is None for a in axes)
    assert all(float(a.dtick).is_integer() for a in axes)
    assert all(sum(t.y) == 1600 for t in fig.data)


# ------------------------------------------------------------------------------------------ human score bins


def test_human_scores_are_binned_on_whole_numbers_when_continuous():
    from evalcore.views.alignment import human_score_bins

    thirds = pd.Series([1, 4 / 3, 5 / 3, 2, 7 / 3, 8 / 3, 3, 10 / 3, 11 / 3, 4, 13 / 3, 14 / 3, 5])
    bins = human_score_bins(thirds, scale=(1, 5))
    assert bins.tolist() == ["[1, 2)"] * 3 + ["[2, 3)"] * 3 + ["[3, 4)"] * 3 + ["[4, 5]"] * 4
    few = human_score_bins(pd.Series([1, 2, 3, 3]), scale=(1, 3))
    assert few.tolist() == ["1", "2", "3", "3"]


# ------------------------------------------------------------------------------------- n/a with the reason


def _toy(judge_by_system: dict[str, list[float]], human_by_system: dict[str, list[float]]):
    from evalcore.model import Dataset, Dimension, Run

    rows, judg = [], []
    for sid, js in judge_by_system.items():
        for d, (j, h) in enumerate(zip(js, human_by_system[sid])):
            rows.append({"item_id": f"d{d}/{sid}", "doc_id": f"d{d}", "system_id": sid, "output": "x", "h": h})
            judg.append({"item_id": f"d{d}/{sid}", "dimension": "q", "raw": str(j), "value": j, "status": "ok",
                         "reason": "", "estimator": ""})
    items = pd.DataFrame(rows)
    human = pd.DataFrame({"item_id": items["item_id"], "dimension": "q", "score": items["h"]})
    docs = pd.DataFrame({"doc_id": sorted(items["doc_id"].unique())}).assign(source="s", references=[[]] * 3,
                                                                              context="")
    ds = Dataset(id="toy", name="toy", task="summarization", dimensions=[Dimension("q", 1, 5)], documents=docs,
                 items=items.drop(columns="h"), human_scores=human)
    return ds, Run(run_id="toy/r", dataset_id="toy", method="rts", model="m", judgments=pd.DataFrame(judg))


def test_undefined_meta_correlation_says_why():
    from evalcore.views.alignment import meta_correlation_table, per_system_table

    # every system's judge agrees perfectly with the humans: every P_i = 1, so M = corr(Q, P) is undefined
    ds, run = _toy({"A": [1, 2, 3], "B": [2, 3, 4], "C": [3, 4, 5]}, {"A": [1, 2, 3], "B": [2, 3, 4], "C": [3, 4, 5]})
    m = meta_correlation_table(ds, [run], ["q"], coefficient="spearman")
    assert math.isnan(m["M"].iloc[0]) and m["note"].iloc[0] == "n/a: M undefined, all P_i are equal"
    assert fmt.display_table(m).frame["pvalue"].iloc[0] == ""
    # a system whose judge gave one score to every item has no P_i
    ds, run = _toy({"A": [1, 2, 3], "B": [4, 4, 4], "C": [3, 4, 5]}, {"A": [1, 2, 3], "B": [2, 3, 4], "C": [5, 4, 3]})
    ps = per_system_table(ds, [run], ["q"], coefficient="spearman").set_index("system_id")
    assert ps.loc["B", "note"] == "n/a: the judge gave every item the same score" and ps.loc["A", "note"] == ""
    m = meta_correlation_table(ds, [run], ["q"], coefficient="spearman")
    assert m["n_systems"].iloc[0] == 2 and m["dropped_systems"].iloc[0] == "B" and m["note"].iloc[0] == ""


def test_small_upload_histogram_counts_whole_items():
    """Nine 1-5 ratings (a small upload): one bar per scale point, counts 0..3 on a 1-step axis, never 0.5."""
    from evalcore.model import Dataset, Dimension
    from evalcore.views.data import rating_histogram

    ids = [f"d{i // 3}/s{i % 3}" for i in range(9)]
    items = pd.DataFrame({"item_id": ids, "doc_id": [i.split("/")[0] for i in ids],
                          "system_id": [i.split("/")[1] for i in ids], "output": "x"})
    human = pd.DataFrame({"item_id": ids, "dimension": "coherence", "score": [1, 2, 3, 2, 3, 4, 3, 4, 5]})
    docs = pd.DataFrame({"doc_id": ["d0", "d1", "d2"], "source": "s", "references": [[], [], []], "context": ""})
    ds = Dataset(id="up", name="upload", task="summarization", dimensions=[Dimension("coherence", 1, 5)],
                 documents=docs, items=items, human_scores=human)
    fig = rating_histogram(ds)
    assert list(fig.data[0].x) == [1, 2, 3, 4, 5] and list(fig.data[0].y) == [1, 2, 3, 2, 1]
    assert fig.layout.yaxis.dtick == 1 and fig.layout.yaxis.tickformat == ",d"
    assert fig.layout.xaxis.title.text == "score (1-5)" and fig.layout.yaxis.title.text == "items"


def test_quantile_columns_are_not_percentages():
    """Issue 18.7: describe()'s "25%"/"50%"/"75%" hold judge scores, not percentages."""
    summary = pd.Series([1.0, 2.0, 2.0, 4.0, 5.0]).describe().to_frame().T
    shown = fmt.display_table(summary)
    assert not any(v.endswith("%%") for k, v in shown.formats.items() if k in ("25%", "50%", "75%"))
    assert shown.formats["25%"] == "%d" and shown.frame["75%"].tolist() == [4.0]
    assert fmt.is_percent_column("full %") and not fmt.is_percent_column("50%")


def test_run_names_are_the_labels_people_gave_and_stay_distinct():
    """Issue 18.10: pickers show names, not ids; two runs of one name are told apart by the end of their ids; no two
    palette colours are near-identical (two pinks were)."""
    from types import SimpleNamespace

    from evalcore.views.common import run_names

    runs = [SimpleNamespace(run_id="summeval/geval-m-20261124-144845-ee30a6", label="G-Eval v2", method="geval",
                            model="m"),
            SimpleNamespace(run_id="summeval/geval-m-20261124-150000-ab12cd", label="G-Eval v2", method="geval",
                            model="m"),
            SimpleNamespace(run_id="summeval/rts-x", label="", method="rts", model="gpt-4")]
    names = run_names(runs)
    assert names == {"summeval/geval-m-20261124-144845-ee30a6": "G-Eval v2 (ee30a6)",
                     "summeval/geval-m-20261124-150000-ab12cd": "G-Eval v2 (ab12cd)", "summeval/rts-x": "rts · gpt-4"}
    import colorsys
    import itertools

    assert "#FF97FF" not in RUN_PALETTE and len(set(RUN_PALETTE)) == len(RUN_PALETTE)
    hls = {c: colorsys.rgb_to_hls(*(int(c[i:i + 2], 16) / 255 for i in (1, 3, 5))) for c in RUN_PALETTE}
    for a, b in itertools.combinations(RUN_PALETTE, 2):
        dh = abs(hls[a][0] - hls[b][0])
        assert min(dh, 1 - dh) >= 0.04 or abs(hls[a][1] - hls[b][1]) >= 0.12, (a, b)


def test_a_reply_that_is_no_evaluation_steps_is_flagged():
    """Issue 18.12: an endpoint that answers "4" to "write the evaluation steps" is caught before saving."""
    from evalcore.views.criteria import steps_problem

    assert "'4'" in steps_problem("4")
    assert steps_problem("") == "the judge returned nothing"
    assert steps_problem("1. Read the summary and the article.\n2. Rate coherence from 1 to 5.") is None
