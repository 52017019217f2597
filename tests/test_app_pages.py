"""The Streamlit app under AppTest: every page renders, its key widgets exist, state comes back from query params,
dataset texts are never rendered as Markdown/HTML, and the no-endpoint first start explains itself.

Bootstrap resamples are kept small through EVALCORE_RESAMPLES; the store is a temporary file (EVALCORE_DB) and no
OPENAI_* variable is visible, as on a first start.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 60  # seconds per script run: the first run imports scipy/plotly and loads SummEval on 2 busy cores

PAGES = {
    "data": "pages/data.py",
    "criteria": "pages/criteria.py",
    "score": "pages/score.py",
    "alignment": "pages/alignment.py",
    "bias": "pages/bias.py",
    "compare": "pages/compare.py",
}
GPT4_RTS = "summeval/shen-gpt-4-0314-rts"
CHATGPT_RTS = "summeval/shen-gpt-3.5-turbo-0301-rts"
CHATGPT_H2H = "summeval/shen-gpt-3.5-turbo-0301-h2h"


pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py


def new_app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def goto(at: AppTest, page: str) -> AppTest:
    at.switch_page(PAGES[page]).run()
    assert_clean(at)
    return at


def texts_rendered_as_markdown(at: AppTest) -> list[str]:
    """Everything that went through Markdown (markdown, caption, alerts, titles): where dataset text must not be."""
    out = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "title", "header", "subheader"):
        out += [str(e.value) for e in getattr(at, kind)]
    return out


def frame_with(at: AppTest, *columns: str):
    """The first shown table having these columns (AppTest does not expose a plain dataframe's key)."""
    for d in at.dataframe:
        v = d.value
        if all(c in v.columns for c in columns):
            return v
    raise AssertionError(f"no table with columns {columns}; tables: {[list(d.value.columns) for d in at.dataframe]}")


def plotly_charts(at: AppTest) -> list:
    return list(at.get("plotly_chart"))


# ---------------------------------------------------------------------------------------------- first start


def test_first_start_opens_on_summeval_with_shen_rts_runs():
    at = new_app()
    at.run()
    assert_clean(at)
    assert at.sidebar.selectbox(key="dataset").value == "summeval"
    assert at.sidebar.multiselect(key="runs").value == [GPT4_RTS, CHATGPT_RTS]
    assert at.sidebar.selectbox(key="dimension").value == "coherence"
    assert at.sidebar.radio(key="parse").value == "robust"
    assert at.sidebar.number_input(key="resamples").value == 20
    assert at.sidebar.button(key="export_report").label == "Export report"  # builds the report, then downloads
    # Data page: overview numbers of SummEval, preview and charts
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Items"] == "1600" and metrics["Systems"] == "16"
    assert at.file_uploader(key="upload") is not None
    # the dimensions table is a static table (drawn without the data grid), its numbers formatted as on every page
    dims = at.table[0].value.set_index("dimension")
    assert list(dims.index) == ["coherence", "consistency", "fluency", "relevance"]
    assert dims.loc["coherence", "scale"] == "1-5" and dims.loc["coherence", "items"] == "1600"
    assert dims.loc["coherence", "mean"] == "3.413" and dims.loc["consistency", "sd"] == "0.918"
    no_none_cells(at)
    # the charts and the agreement bootstrap run when their tab is opened (the first table shows without them)
    assert len(plotly_charts(at)) == 0 and frame_with(at, "item_id", "output") is not None
    at.session_state["data_section"] = "Rating distributions"
    at.run()
    assert_clean(at)
    assert len(plotly_charts(at)) == 1 and at.query_params["data_section"] in ("Rating distributions", ["Rating distributions"])
    at.session_state["data_section"] = "Human agreement"
    at.run()
    assert_clean(at)
    assert len(plotly_charts(at)) == 1 and len(frame_with(at, "dimension", "group", "alpha")) == 8  # 4 dimensions x (crowd, expert)
    # the source and citation are drawn when their expander is opened (st.code's highlighter would hold back the
    # first render), and the open state is in the URL like every other view setting
    assert not at.code and at.query_params["data_source_open"] in ("false", ["false"])
    at.session_state["data_source_open"] = True
    at.run()
    assert_clean(at)
    assert len(at.code) == 1 and "Fabbri" in at.code[0].value and at.query_params["data_source_open"] in ("true", ["true"])


def test_every_analysis_page_renders_with_real_numbers():
    at = new_app()
    at.run()
    goto(at, "alignment")
    assert at.selectbox(key="level").value == "dataset"
    assert at.selectbox(key="coefficient").value == "spearman"
    assert at.multiselect(key="systems").value == []
    # the default tab: correlations only (the other sections run when their tab is opened)
    assert [s.value for s in at.subheader][:1] == ["Correlation with human ratings"]
    corr = frame_with(at, "run_id", "level", "coefficient", "statistic")
    assert set(corr["run_id"]) == {GPT4_RTS, CHATGPT_RTS}
    # the Level and Coefficient selectors filter the table: one row per run
    assert len(corr) == 2 and set(corr["level"]) == {"dataset"} and set(corr["coefficient"]) == {"spearman"}
    assert (corr["n"] > 0).all()
    assert set(corr["pvalue"]) == {"<0.001"}  # 1e-59 reads as a p-value, not 1E-59
    # the headline chart is drawn by default: each run's correlation with its CI against the human ceiling
    # (Vega-Lite, not plotly: page speed, see evalcore.views.alignment.headline_spec)
    assert len(headline_specs(at)) == 1 and not plotly_charts(at)
    subheaders, n_charts, downloads = set(), 0, set()
    for section in ("Correlations", "Judge vs human scores", "Per system & meta-correlation", "#CP",
                    "RTS-MCQ reliability", "Difficulty"):
        at.session_state["section"] = section
        at.run()
        assert_clean(at)
        subheaders |= {s.value for s in at.subheader}
        n_charts += len(plotly_charts(at))
        # the user key ends the widget id ("$$ID-<hash>-<key>"); older AppTests do not expose .key for buttons
        downloads |= {b.key or b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button")}
    for expected in ("Correlation with human ratings", "Judge score per human score (items)",
                     "Per-system correlation (Shen et al. 2023, Fig. 1)",
                     "Meta-correlation (Shen et al. 2023, Fig. 2-3)",
                     "Correct preferences #CP (Shen et al. 2023, Sec. 4.2.1)",
                     "RTS-MCQ reliability (Shen et al. 2023, Eq. 4)",
                     "Pairwise agreement by difficulty (Chen et al. 2023)"):
        assert expected in subheaders
    assert n_charts >= 4  # judge per human score, per-system box plot, meta-correlation scatter, difficulty
    # every table has its CSV download beside it
    assert {"csv_correlations", "csv_judge_by_human", "csv_per_system", "csv_cp", "csv_difficulty"} <= downloads

    goto(at, "bias")
    assert "Mean judge score vs mean human score (Shen et al. 2023, Fig. 4)" in [s.value for s in at.subheader]
    assert at.multiselect(key="bias_pairwise").value == [CHATGPT_H2H]
    pb = frame_with(at, "run", "dimension", "n_pairs").set_index("dimension")
    assert (pb["run"].str.contains("H2H")).all() and len(pb) == 5
    assert pb.loc["all", "n_pairs"] == 4400 and pb.loc["all", "flip_rate"] == pytest.approx(32.0)  # percent

    goto(at, "compare")
    assert at.selectbox(key="run_a").value == GPT4_RTS
    assert at.selectbox(key="run_b").value == CHATGPT_RTS
    assert {m.label for m in at.metric} >= {"Run A", "Run B", "A − B", "p-value"}
    assert len(frame_with(at, "judge_a", "judge_b", "rank_gap")) == 20
    # issue 18.4: the test of equal correlation comes first; the permutation test is named for its null
    test = at.selectbox(key="test")
    assert test.options[0] == "equal correlation (paired bootstrap)"
    assert test.options[1] == "exchangeable judges (permutation)"
    assert any("correlate equally well" in c.value for c in at.caption)


def test_criteria_and_score_pages_without_endpoint():
    at = new_app()
    at.run()
    goto(at, "criteria")
    for key in ("crit_intro", "crit_definition", "crit_steps"):
        assert at.text_area(key=key).value
    assert at.button(key="generate_steps").disabled  # no endpoint configured
    assert at.selectbox(key="method").value in ("geval", "rts", "mcq", "explicit")
    prompt = "\n".join(c.value for c in at.code)
    assert "Coherence" in prompt or "coherence" in prompt

    goto(at, "score")
    info = "\n".join(i.value for i in at.info)
    assert "OPENAI_API_KEY" in info and "OPENAI_BASE_URL" in info
    assert at.button(key="start_scoring").disabled
    assert at.text_input(key="api_key").proto.type == at.text_input(key="api_key").proto.PASSWORD
    assert "api_key" not in at.query_params


# ------------------------------------------------------------------------------------------ query params


def test_state_is_restored_from_query_params():
    at = new_app(dataset="summeval", runs=[CHATGPT_RTS], dimension="fluency", level="system",
                 coefficient="kendall", parse="paper", resamples="30", systems=["M8", "M9", "M10", "M11"])
    goto(at, "alignment")  # the link names its page: /alignment?dataset=...
    assert at.sidebar.multiselect(key="runs").value == [CHATGPT_RTS]
    assert at.sidebar.selectbox(key="dimension").value == "fluency"
    assert at.sidebar.radio(key="parse").value == "paper"
    assert at.sidebar.number_input(key="resamples").value == 30
    assert at.selectbox(key="level").value == "system"
    assert at.selectbox(key="coefficient").value == "kendall"
    assert at.multiselect(key="systems").value == ["M8", "M9", "M10", "M11"]
    corr = frame_with(at, "run_id", "level", "coefficient", "statistic")
    system_row = corr[(corr["level"] == "system") & (corr["coefficient"] == "kendall")].iloc[0]
    assert system_row["n"] == 4  # the systems filter reached the statistics
    assert "parse mode **paper**" in at.caption[0].value


def test_other_dataset_from_query_params():
    at = new_app(dataset="topical_chat", dimension="engagingness")
    at.run()
    assert_clean(at)
    assert at.sidebar.selectbox(key="dataset").value == "topical_chat"
    assert at.sidebar.multiselect(key="runs").value == ["topical_chat/chiang-lee-gpt-3.5-geval"]
    goto(at, "alignment")
    corr = frame_with(at, "run_id", "level", "coefficient", "statistic")
    assert set(corr["run_id"]) == {"topical_chat/chiang-lee-gpt-3.5-geval"}


def test_bias_page_explains_how_to_score_zhang_pairs():
    at = new_app(dataset="zhang_pairs", dimension="overall")
    at.run()
    goto(at, "bias")
    info = "\n".join(i.value for i in at.info)
    assert "Score" in info and "No judge has scored these texts yet" in info


# ------------------------------------------------------------------------------------------- text safety


HOSTILE = '<script>alert("x")</script> **bold** <b>tag</b>'


def _hostile_csv() -> bytes:
    rows = ["doc_id,system_id,output,source,coherence"]
    for d in range(3):
        for s in range(3):
            rows.append(f'd{d},sys{s},"{HOSTILE.replace(chr(34), chr(34) * 2)} {d}{s}",source {d},{1 + (d + s) % 5}')
    return ("\n".join(rows) + "\n").encode()


def test_uploaded_dataset_texts_are_shown_as_text_and_saved_in_store():
    at = new_app()
    at.run()
    at.file_uploader(key="upload").upload("hostile.csv", _hostile_csv(), "text/csv")
    at.run()
    assert_clean(at)
    # every column has a role, guessed from its name and values
    assert at.selectbox(key="role_output").value == "output"
    assert at.selectbox(key="role_doc_id").value == "doc_id"
    assert at.selectbox(key="role_coherence").value == "human"
    at.button(key="import_dataset").click().run()
    assert_clean(at)
    new_id = at.sidebar.selectbox(key="dataset").value
    assert new_id.startswith("user-")
    # saved in the store, so its id works in a share link
    from evalcore.store import Store

    saved = Store(os.environ["EVALCORE_DB"]).load_dataset(new_id)
    assert saved.items["output"].str.contains("<script>").all()
    # ratings 1-5 present, 1-5 declared by the form's prefilled scale (not merely inferred)
    assert saved.dimension("coherence").scale == (1.0, 5.0)
    assert "inferred" not in saved.dimension("coherence").description
    preview = frame_with(at, "item_id", "output", "system_id")
    assert preview["output"].str.contains("<script>", regex=False).all()
    assert not any("<script>" in t for t in texts_rendered_as_markdown(at))

    # every page copes with a dataset that has no judge run yet, and shows its texts as text only
    for page in ("alignment", "bias", "compare", "criteria", "score"):
        goto(at, page)
        assert not any("<script>" in t for t in texts_rendered_as_markdown(at)), page
    goto(at, "criteria")
    assert any("<script>" in c.value for c in at.code)  # the rendered prompt holds the output verbatim

    # a new session opened from the share link finds the uploaded dataset
    link = new_app(dataset=new_id)
    link.run()
    assert_clean(link)
    assert link.sidebar.selectbox(key="dataset").value == new_id


def test_invalid_upload_lists_problems_with_row_and_column():
    at = new_app()
    at.run()
    bad = b"doc_id,system_id,output,coherence\nd1,s1,text,4\nd1,s2,text,not-a-number\n"
    at.file_uploader(key="upload").upload("bad.csv", bad, "text/csv")
    at.run()
    at.button(key="import_dataset").click().run()
    assert not at.exception
    problems = frame_with(at, "file", "row", "column", "problem")
    assert len(problems) >= 1
    first = problems.iloc[0]
    assert first["file"] == "bad.csv" and first["row"] == "3" and first["column"] == "coherence"
    assert at.error and "nothing was imported" in at.error[0].value
    assert at.sidebar.selectbox(key="dataset").value == "summeval"


# ------------------------------------------------------------------------------------- scoring end to end


def test_score_with_loopback_judge_then_bias_and_failures():
    """Configure the loopback judge in the fields, score 40 zhang_pairs texts on a background thread, then the run
    feeds the Bias page's human- vs LLM-written chart (000 Fig. 2)."""
    import time

    from evalcore.testing.loopback import serve

    with serve() as judge:
        at = new_app(dataset="zhang_pairs", dimension="overall")
        at.run()
        goto(at, "score")
        at.selectbox(key="endpoint").set_value("vllm").run()
        at.text_input(key="base_url").input(judge.base_url).run()
        at.text_input(key="model").input("loopback-judge").run()
        at.selectbox(key="method").set_value("rts").run()
        at.number_input(key="limit").set_value(40).run()
        assert_clean(at)
        assert not at.info or "No judge endpoint" not in "\n".join(i.value for i in at.info)
        est = {m.label: m.value for m in at.metric}
        # 40 requests (items x 1 dimension); identical prompts (the same LLM summary shown with several writers'
        # summaries) count once as calls, the repeats as duplicate outputs; nothing is cached yet
        calls, dups, hits = (int(est[k]) for k in ("Calls to send", "Duplicate outputs", "Cache hits"))
        assert int(est["Requests"]) == 40 and hits == 0 and dups > 0 and calls + dups == 40
        assert "Estimate" in [s.value for s in at.subheader]
        at.button(key="start_scoring").click().run()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            at.run()
            if any(s.value == "Done." for s in at.success):
                break
            time.sleep(0.5)
        assert_clean(at)
        assert any(s.value == "Done." for s in at.success), [w.value for w in at.warning]
        assert judge.requests_seen >= calls  # the calls (plus the capability probe)
        local = at.selectbox(key="local_run").value
        assert local.startswith("zhang_pairs/rts-loopback-judge")
        assert {m.label: m.value for m in at.metric}["Judgments"] == "40"
        # the finished run joined the sidebar's selection in the same session, and the URL says so (issue 8)
        assert local in at.sidebar.multiselect(key="runs").value
        assert local in at.query_params["runs"]

        goto(at, "bias")
        assert at.selectbox(key="bias_run").value == local
        wb = frame_with(at, "group", "human_written", "llm_written")
        assert set(wb["group"]) <= {"human preferred", "equally good", "LLM preferred"}
        assert wb["pairs"].sum() == 20  # the 40 texts are 20 human/LLM pairs


def test_alignment_page_reproduces_shen_published_cp():
    """003's ChatGPT RTS #CP on the 66 abstractive pairs (coherence 54, consistency 56, fluency 62, relevance 62;
    7 of 11 challenge pairs on average) under Shen's parse rule, with the H2H run beside it."""
    at = new_app(runs=[CHATGPT_RTS, CHATGPT_H2H], parse="paper", section="#CP")  # a share link to the #CP tab
    goto(at, "alignment")
    cp = frame_with(at, "run", "dimension", "full correct", "challenge correct").set_index(["run", "dimension"])
    rts = cp.loc[cp.index.get_level_values("run").str.contains("RTS")].droplevel("run")
    assert rts.loc[["coherence", "consistency", "fluency", "relevance"], "full correct"].tolist() == [54, 56, 62, 62]
    assert (rts["full total"] == 66).all()
    assert rts["challenge correct"].mean() == 7
    h2h = cp.loc[cp.index.get_level_values("run").str.contains("H2H")]
    assert len(h2h) == 4 and (h2h["challenge total"] == 11).all()


def test_criteria_versions_diff_and_generated_steps():
    from evalcore.testing.loopback import serve

    at = new_app(dimension="fluency")
    at.run()
    goto(at, "criteria")
    at.text_area(key="crit_steps").input("1. Read the summary.\n2. Rate fluency.").run()
    at.text_input(key="version_note").input("first").run()
    at.button(key="save_criteria").click().run()
    assert_clean(at)
    at.text_area(key="crit_steps").input("1. Read the summary aloud.\n2. Rate fluency.").run()
    at.button(key="save_criteria").click().run()
    assert_clean(at)
    versions = frame_with(at, "version", "saved", "note")
    assert len(versions) == 2 and "first" in versions["note"].tolist()
    diff = [c.value for c in at.code if c.language == "diff"][0]
    assert "-1. Read the summary." in diff and "+1. Read the summary aloud." in diff

    with serve() as judge:
        at.selectbox(key="endpoint").set_value("vllm").run()
        at.text_input(key="base_url").input(judge.base_url).run()
        at.text_input(key="model").input("loopback-judge").run()
        assert not at.button(key="generate_steps").disabled
        at.button(key="generate_steps").click().run()
        assert_clean(at)
        assert judge.requests_seen >= 1
    # issue 18.12: the generated steps are shown first, neither in the field nor saved
    preview = at.text_area(key="crit_preview_text").value
    assert preview and at.text_area(key="crit_steps").value == "1. Read the summary aloud.\n2. Rate fluency."
    assert len(frame_with(at, "version", "saved", "note")) == 2
    at.button(key="use_steps").click().run()
    assert_clean(at)
    assert at.text_area(key="crit_steps").value == preview
    at.button(key="save_criteria").click().run()
    versions = frame_with(at, "version", "saved", "note")
    assert len(versions) == 3  # saved when the user says so
    # each version says who wrote its steps (issue 21, item 8): the newest the judge's, the others a person's
    assert versions["steps"].tolist() == [f"generated by loopback-judge ({len(preview)} chars)",
                                          "written (43 chars)", "written (37 chars)"]
    assert versions["saved by"].tolist() == ["(no sign-in)"] * 3


@pytest.mark.parametrize("dataset", ["topical_chat", "qags_cnndm", "qags_xsum", "fed_dialogue", "zhang_pairs"])
def test_every_page_renders_on_every_bundled_dataset(dataset):
    at = new_app(dataset=dataset)
    at.run()
    assert_clean(at)
    assert at.sidebar.selectbox(key="dataset").value == dataset
    for page in ("alignment", "bias", "compare", "criteria", "score"):
        goto(at, page)


# ------------------------------------------------------------------------------ numbers and charts (issue 8)


def chart_specs(at: AppTest) -> list[dict]:
    import json

    return [json.loads(c.proto.spec) for c in plotly_charts(at)]


def headline_specs(at: AppTest) -> list[dict]:
    import json

    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def no_none_cells(at: AppTest) -> None:
    """No shown table has a cell that would read "None": text cells are blank instead, and numeric gaps are shown
    blank by ``placeholder=""``."""
    for d in at.dataframe:
        v = d.value
        for c in v.columns:
            if v[c].dtype == object:
                assert not v[c].map(lambda x: x is None or (isinstance(x, float) and x != x)).any(), (c, v)
        assert d.proto.placeholder == "" if hasattr(d.proto, "placeholder") else True
    for t in at.table:  # static tables hold text: no "None"/"nan" cell either
        cells = t.value.astype(str).to_numpy().ravel().tolist()
        assert not {"None", "nan", "NaN", "<NA>"} & set(cells), t.value


def test_alignment_selectors_filter_and_items_chart():
    # a link straight to the page (the Data page would drop the Alignment page's parameters from the URL)
    at = new_app(level="system", coefficient="kendall", section="Judge vs human scores")
    goto(at, "alignment")
    assert [s.value for s in at.subheader][:1] == ["Judge score per human score (items)"]
    specs = chart_specs(at)
    assert len(specs) == 1
    boxes = [t for t in specs[0]["data"] if t["type"] == "box"]
    assert len(boxes) == 2  # one per run, each with its run's colour
    colours = {t["name"]: t["marker"]["color"] for t in boxes}
    assert len(set(colours.values())) == 2
    assert specs[0]["layout"]["xaxis"]["title"]["text"] == "human score on coherence"
    assert specs[0]["layout"]["yaxis"]["title"]["text"] == "judge score"
    summary = frame_with(at, "run", "human_bin", "items")
    assert set(summary["human_bin"]) == {"[1, 2)", "[2, 3)", "[3, 4)", "[4, 5]"}
    assert summary.groupby("run")["items"].sum().tolist() == [1200, 1200]  # Shen: 12 systems x 100 articles
    at.toggle(key="items_points").set_value(True).run()
    assert_clean(at)
    assert chart_specs(at)[0]["data"][0]["boxpoints"] == "all"

    at.session_state["section"] = "Correlations"
    at.run()
    assert_clean(at)
    corr = frame_with(at, "run_id", "level", "coefficient", "statistic")
    assert set(corr["level"]) == {"system"} and set(corr["coefficient"]) == {"kendall"} and len(corr) == 2
    headline = headline_specs(at)[0]
    points = next(layer for layer in headline["layer"] if layer["mark"]["type"] == "point")
    scale = points["encoding"]["color"]["scale"]
    assert dict(zip(scale["domain"], scale["range"])) == colours  # the same run has the same colour in both charts
    assert {v["run"] for v in points["data"]["values"]} == set(colours)
    by_run = {v["run"]: v["statistic"] for v in points["data"]["values"]}
    shown = corr.set_index("run")["statistic"].to_dict()
    assert by_run == pytest.approx(shown)  # the chart draws the table's numbers
    assert "system level" in headline["title"]
    assert any(layer["mark"]["type"] == "rule" and "ceiling" in layer["encoding"]["x"]["field"]
               for layer in headline["layer"])
    no_none_cells(at)


def test_bias_page_writer_bias_on_topical_chat():
    """Liu et al. 2023 Fig. 2's view offline: Topical-Chat's human-written vs model-written responses, scored by
    Chiang & Lee's gpt-3.5 G-Eval run."""
    at = new_app(dataset="topical_chat", dimension="coherence")
    at.run()
    goto(at, "bias")
    assert "Human-written vs LLM-written texts (Liu et al. 2023, Fig. 2)" in [s.value for s in at.subheader]
    assert at.selectbox(key="bias_run").value == "topical_chat/chiang-lee-gpt-3.5-geval"
    wb = frame_with(at, "group", "pairs", "human_written", "llm_written")
    assert wb["group"].tolist() == ["human preferred", "equally good", "LLM preferred"]
    assert wb["pairs"].sum() <= 480
    pairs = frame_with(at, "human_item", "llm_item", "judge_human_written", "judge_llm_written")
    assert len(pairs) == wb["pairs"].sum()  # every pair behind the means, with a CSV
    means = pairs.groupby("group")[["judge_human_written", "judge_llm_written"]].mean()
    assert means.loc["human preferred"].tolist() == pytest.approx(
        wb.set_index("group").loc["human preferred", ["human_written", "llm_written"]].astype(float).tolist())
    assert "csv_writer_pairs" in {b.key or b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button")}
    spec = chart_specs(at)[0]
    assert spec["layout"]["xaxis"]["title"]["text"] == "which text the humans preferred"
    assert [t["name"] for t in spec["data"]] == ["human-written", "LLM-written"]
    assert any(e.label == "Sources cited on this page" for e in at.expander)
    no_none_cells(at)


def test_data_page_histograms_have_own_ticked_axes():
    at = new_app(data_section="Rating distributions")
    at.run()
    assert_clean(at)
    spec = chart_specs(at)[0]
    layout = spec["layout"]
    yaxes = [layout[k] for k in layout if k.startswith("yaxis")]
    assert len(yaxes) == 4
    assert all(a.get("showticklabels") is True and a["title"]["text"] == "items" for a in yaxes)
    assert max(max(t["y"]) for t in spec["data"]) == 1306  # consistency's tallest bar, on its own axis
    no_none_cells(at)


def test_alignment_boot_both_choice_and_few_systems_warning():
    """Issue 18.3/18.5: the system level says what its interval resamples and lets you pick boot-both; a run
    filtered to three systems carries a visible warning; the ceiling is per run, on the run's items."""
    at = new_app(level="system", coefficient="kendall", systems=["M8", "M9", "M10"])
    goto(at, "alignment")
    assert_clean(at)
    radio = at.radio(key="ci_resampling")
    assert radio.value == "documents"
    assert any("rests on 3 system" in w.value for w in at.warning)
    corr = frame_with(at, "run_id", "level", "ci_resampling")
    assert set(corr["ci_resampling"]) == {"documents"} and set(corr["pvalue_method"]) == {"exact"}
    ceiling = frame_with(at, "run", "annotator", "statistic")
    assert set(ceiling["run"]) == set(corr["run"]) and (ceiling["n"].astype(float) == 3).all()
    radio.set_value("both").run()
    assert_clean(at)
    assert set(frame_with(at, "run_id", "level", "ci_resampling")["ci_resampling"]) == {"both"}
    assert any("Deutsch" in c.value for c in at.caption)
    no_none_cells(at)


def test_score_page_samples_whole_documents():
    """Issue 18.5: the Score page scores K whole documents (seeded); Items = N says it covers few documents."""
    at = new_app()
    at.run()
    goto(at, "score")
    at.number_input(key="sample_docs").set_value(5).run()
    assert_clean(at)
    note = next(c.value for c in at.caption if "whole documents" in c.value)
    assert "Scoring 5 whole documents (80 items" in note.replace("\\", "") and "fewer than 10" in note
    at.number_input(key="sample_docs").set_value(0).run()
    at.number_input(key="limit").set_value(20).run()
    assert any("first N rows" in c.value for c in at.caption)


def test_score_page_shows_a_stopped_runs_resume_command_as_the_cli_reads_it(first_start):
    """A run stopped midway: the page says so and shows the command that resumes it, which the command line's own
    parser reads back as that run (evalcore.cli.resume_command)."""
    import shlex

    from evalcore import cli
    from evalcore.store import Store

    Store(first_start).create_run(run_id="summeval/rts-m-stopped", dataset_id="summeval", method="rts", model="m",
                                  config={"endpoint": {"provider": "vllm", "base_url": "http://gpu1:8000/v1"},
                                          "criteria": {"coherence": {}}, "limit": 20}, status="stopped")
    at = new_app()
    at.run()
    goto(at, "score")
    assert at.selectbox(key="local_run").value == "summeval/rts-m-stopped"
    assert any(c.value.startswith("This run is stopped: its finished judgments are kept.") for c in at.caption)
    (command,) = [c.value for c in at.code if c.language == "bash"]
    args = cli.parse_checked(shlex.split(command)[3:])
    assert (args.command, args.run, args.limit, args.dimension) == ("score", "summeval/rts-m-stopped", 20,
                                                                    ["coherence"])


def test_score_page_shares_a_run_with_the_lab_for_who_started_it(first_start, monkeypatch):
    """On a server with sign-in, who started a run sees its owner line and shares it (evalcore.views.sharing)."""
    from evalcore.store import Store
    from pages import _identity

    monkeypatch.setenv("EVALCORE_USER_HEADER", "X-Forwarded-User")
    monkeypatch.setattr(_identity, "_request_headers", lambda: {"X-Forwarded-User": "alice"})
    store = Store(first_start)
    store.create_run(run_id="summeval/rts-m-alice", dataset_id="summeval", method="rts", model="m",
                     config={"endpoint": {"provider": "vllm", "base_url": "http://gpu1:8000/v1"}}, status="done",
                     owner="alice")
    at = new_app()
    at.run()
    goto(at, "score")
    assert at.selectbox(key="local_run").value == "summeval/rts-m-alice"
    assert "Started by alice, private" in [t.value for t in at.text]
    at.toggle(key="share_run").set_value(True).run()
    assert_clean(at)
    assert store.owner_of("runs", ("summeval/rts-m-alice",)) == ("alice", True)
    assert "Started by alice, shared with the lab" in [t.value for t in at.text]


def test_alignment_summary_constant_choice():
    """Issue 18.6: at the summary level the page offers both rules for constant documents and applies them."""
    at = new_app(level="summary", coefficient="pearson", resamples="20")
    goto(at, "alignment")
    radio = at.radio(key="summary_constant")
    assert radio.value == "skip"
    skip = frame_with(at, "run_id", "level", "statistic").set_index("run_id")
    radio.set_value("zero").run()
    assert_clean(at)
    zero = frame_with(at, "run_id", "level", "statistic").set_index("run_id")
    assert (zero["n"].astype(int) >= skip["n"].astype(int)).all()
    assert (zero["statistic"] != skip["statistic"]).any()


def test_level_and_coefficient_are_kept_between_alignment_and_compare():
    """Issue 18.9: the level and coefficient picked on Alignment are Compare's too, and still there on return."""
    at = new_app(resamples="20")
    goto(at, "alignment")
    at.selectbox(key="level").set_value("system").run()
    at.selectbox(key="coefficient").set_value("kendall").run()
    goto(at, "compare")
    assert (at.selectbox(key="level").value, at.selectbox(key="coefficient").value) == ("system", "kendall")
    # issue 18.10: the pickers show the runs' names, not their ids
    assert at.selectbox(key="run_a").options[0] == "Shen et al. · gpt-4-0314 · RTS"
    assert not any("/" in o for o in at.selectbox(key="run_a").options)
    assert not any("/" in o for o in at.sidebar.multiselect(key="runs").options)
    goto(at, "alignment")
    assert (at.selectbox(key="level").value, at.selectbox(key="coefficient").value) == ("system", "kendall")


def test_first_open_says_what_is_loaded_and_where_the_answer_is():
    """Issue 18.15: the landing page says in two lines what is loaded, that the answer is on Alignment, and how to
    bring your own data or judge."""
    at = new_app()
    at.run()
    assert_clean(at)
    text = "\n".join(i.value for i in at.info)
    assert "SummEval" in text and "1,600 rated outputs of 16 systems" in text.replace("\\", "")
    assert "Alignment" in text and "Bring your own data" in text and "Score" in text
