"""Improve the judge: split the documents, see why the judge disagrees on development, make candidate prompts,
select on development, and check the chosen one once on the held-out test part (evalcore.align, issue 22).

The test part's human labels are shown nowhere on this page until the final check has been run. What the page shows
is computed by evalcore.views.improve (a Workspace over the store, blocks laid out by pages/_render.py); the scoring
queue is evalcore.align.queue's, kept here in the session state; spending goes through pages/_spending.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from evalcore.align import candidates as cand
from evalcore.align import loop
from evalcore.align.split import DEV, TEST, list_splits
from evalcore.judge.spec import EngineOptions
from evalcore.views import improve as views
from pages import _identity as identity
from pages import _render as render
from pages import _shared as ui
from pages import _spending
from pages import _url as url

QUEUE = "_align_queue"  # the evalcore.align.queue.ScoringQueue running for this page, one job after another
CANDS = "_align_candidates"


# ------------------------------------------------------------------------------------------------- wiring
@st.cache_data(show_spinner=False, max_entries=64)
def _agreement(run_id: str, updated_at: str, part: str, key: tuple, *, _ws: views.Workspace) -> loop.Agreement:
    return _ws.agreement(run_id, part)


@st.cache_data(show_spinner=False, max_entries=32, ttl=60)
def _estimate(part: str, versions: tuple[str, ...], key: tuple, *, _ws: views.Workspace, _cands) -> views.PartEstimate:
    return _ws.estimate(part, _cands)


def estimate(ws: views.Workspace, part: str, cands: list[cand.Candidate]) -> views.PartEstimate | None:
    try:
        return _estimate(part, tuple(c.version for c in cands), ws.estimate_key, _ws=ws, _cands=cands)
    except Exception as e:  # noqa: BLE001 - e.g. the method cannot score this dataset
        render.blocks([views.no_estimate_note(e)])
        return None


def may_spend(ws: views.Workspace, may_act: bool, est: views.PartEstimate | None, key: str) -> bool:
    """The spending rule of every page (pages/_spending.py: evalcore.judge.spending.gate), for this very plan."""
    split, method = ws.split, ws.method
    if est is None:
        return False
    if not may_act:
        st.caption("Sign in to score: runs and candidates are yours until you share them with the lab.")
        return False
    sig = (key, split.split_id, method, ws.endpoint.base_url, est.calls, est.cost_usd)
    return _spending.consent(key, sig, est.cost_usd, est.calls, ws.endpoint)


def offer(ws: views.Workspace, may_act: bool, kind: str, part: str, cands: list, what: str, label: str, key: str,
          spend_key: str, *, anyway: str | None = None, primary: bool = True, chosen: str | None = None) -> None:
    """The estimate, the spending consent and the button that queues ``cands`` on ``part``; charged at the click."""
    ds, dim = ws.dataset, ws.dimension
    est = estimate(ws, part, cands)
    if est is not None:
        render.blocks([views.estimate_note(est, what, ws.endpoint)])
    ok = may_spend(ws, may_act, est, spend_key)
    if anyway is not None:
        ok = st.checkbox(anyway, key="align_test_anyway") and ok
    if not (st.button(label, key=key, type="primary" if primary else "secondary", disabled=not ok or busy()) and ok):
        return
    try:
        q = ws.queue(kind, part, cands, chosen=chosen, charged_usd=est.cost_usd if est.calls else 0.0)
    except loop.RunNotReusable as e:
        st.error(ui.esc(str(e)))
        return
    if _spending.charge(est.cost_usd, est.calls, ws.endpoint, f"improve {ds.id} {dim} {kind}"):
        st.session_state[QUEUE] = q
        q.advance()


@st.fragment(run_every=1.0)
def live_progress() -> None:
    q = st.session_state.get(QUEUE)
    if q is None:
        return
    q.advance()
    frac, text = q.progress()
    st.progress(frac, text=text)
    if q.done:
        st.rerun(scope="app")
    elif st.button("Cancel", key="cancel_align"):
        q.cancel()


def queue_panel(kind: str, split) -> None:
    """Progress of the page's queue when it scores step ``kind`` on this split, or how it ended."""
    q = st.session_state.get(QUEUE)
    if q is None or not q.shown_for(kind, split.split_id):
        return
    if q.done:
        render.blocks(views.queue_notes(q))
    else:
        live_progress()


def busy() -> bool:
    q = st.session_state.get(QUEUE)
    return q is not None and q.busy()


@dataclass(frozen=True)
class _Loop:
    """What the candidate tabs work with: the loop's workspace, whether this user may score and save, the
    baseline's criteria and this session's list of candidates."""

    ws: views.Workspace
    may_act: bool
    base: Any
    cands: list


def keep(lp: _Loop, c: cand.Candidate) -> None:
    render.blocks([lp.ws.keep(lp.cands, c, lp.base, may_act=lp.may_act)])


def split_form(ds, dim: str, store) -> None:
    """The split's seed, test share and documents, and the button that makes it (evalcore.views.improve)."""
    n_all = int(ds.items["doc_id"].nunique())
    c1, c2, c3 = st.columns(3)
    split_seed = int(c1.number_input("Split seed", min_value=0, max_value=2**31 - 1,
                                     key=url.key("split_seed", 0, bounds=(0, 2**31 - 1))))
    test_share = float(c2.number_input("Test share", min_value=0.05, max_value=0.95, step=0.05, format="%.2f",
                                       key=url.key("test_share", 0.3, bounds=(0.05, 0.95)), help=views.HELP["test_share"]))
    loop_docs = int(c3.number_input("Documents in the loop (0 = all)", min_value=0, max_value=n_all,
                                    key=url.key("loop_docs", 0, bounds=(0, n_all)), help=views.HELP["loop_docs"]))
    if st.button("Make the split", key="make_split", help=views.HELP["make_split"]):
        try:  # the picker below is drawn after this: it shows the new split
            st.session_state["align_split"] = views.make_loop_split(store, ds, dim, docs=loop_docs, seed=split_seed,
                                                                    test_share=test_share).split_id
        except ValueError as e:
            st.error(ui.esc(str(e)))


def judge_form(ds, dim: str) -> tuple:
    """The judge endpoint, the method, the requests at once and the agreement measure."""
    choice = ui.endpoint_form("improve")
    ui.endpoint_help(choice)
    methods = views.loop_methods()
    m1, m2 = st.columns(2)
    method = m1.selectbox("Method", methods, key=url.key("align_method", "geval", options=methods),
                          help=views.methods_help(methods))
    concurrency = int(m2.number_input("Concurrent requests", min_value=1, max_value=128,
                                      key=url.key("align_concurrency", 8, bounds=(1, 128))))
    measures = views.agreement_choices(ds.dimension(dim))
    measure = st.selectbox("Agreement with the humans", measures, format_func=views.agreement_name,
                           key=url.key("align_agreement", measures[0], options=measures), help=views.HELP["agreement"])
    return choice, method, concurrency, measure


def disagreement_reader(dis) -> None:
    """The largest development disagreements, one of them read closely, the two figures."""
    top_n = int(st.number_input("Largest disagreements shown", min_value=5, max_value=200, step=5,
                                key=url.key("align_top", 20, bounds=(5, 200))))
    shown_items = views.disagreement_table(dis, top_n)
    ui.table(shown_items, "development disagreements", "align_disagreements", height=320)
    if not shown_items.empty:
        ids = shown_items["item_id"].tolist()
        said, judged, reply = views.item_view(dis, st.selectbox("Read one of them", ids,
                                                                key=url.key("align_item", ids[0], options=ids)))
        render.blocks([said])
        for col, text in zip(st.columns(2), (judged, reply)):
            with col:
                render.blocks([text])
    for col, fig in zip(st.columns(2), views.disagreement_figures(dis)):
        with col:
            render.blocks([fig])


def add_back(saved_before: list, cands: list) -> None:
    """Candidates kept in an earlier session and not in this list, added back on request."""
    if not_listed := {c.version: c for c in saved_before if all(c.version != x.version for x in cands)}:
        with st.expander(f"Candidates kept earlier and not in this list: {len(not_listed)}"):
            st.caption("Kept in an earlier session (or for another split) and not scored on this split's development "
                       "part yet: add them back to score them here.")
            back = st.multiselect("Add back", list(not_listed), key="align_add_back",
                                  format_func=lambda v: f"{views.candidate_name(not_listed[v].source, v)} · "
                                                        f"{not_listed[v].note}")
            if st.button("Add them as candidates", key="add_back", disabled=not back):
                cands.extend(not_listed[v] for v in back)
                del st.session_state["align_add_back"]  # its options are gone: a fresh widget on the next run
                st.rerun()


def edit_tab(lp: _Loop, cands_key: tuple) -> None:
    """The researcher's own edit of the baseline's definition and steps."""
    base = lp.base
    # Streamlit drops a widget's state after a run that did not draw it (a run stopped above while a job ran): the
    # fields are filled again whenever their state is gone, not only when the baseline changed.
    if (st.session_state.get("_align_edit_for") != cands_key or "align_edit_definition" not in st.session_state
            or "align_edit_steps" not in st.session_state):
        st.session_state.update(align_edit_definition=base.definition, align_edit_steps=base.steps,
                                _align_edit_for=cands_key)
    st.text_area("Definition", key="align_edit_definition", height=140)
    st.text_area("Evaluation steps", key="align_edit_steps", height=140)
    if st.button("Add as candidate", key="add_edit"):
        keep(lp, cand.edit_candidate(base, definition=st.session_state["align_edit_definition"],
                                 steps=st.session_state["align_edit_steps"]))


def llm_tab(lp: _Loop, dis, base_dev, cands_key: tuple) -> None:
    """The meta-prompt from development disagreements, its proposal as a diff, kept on request."""
    ws, may_act, base = lp.ws, lp.may_act, lp.base
    ds, dim, split = ws.dataset, ws.dimension, ws.split
    n_examples = int(st.number_input("Development examples in the prompt", min_value=1, max_value=40,
                                     key=url.key("align_examples", 8, bounds=(1, 40))))
    prompt, example_ids = cand.build_meta_prompt(base, dis, split, dataset=ds, n_examples=n_examples)
    if st.session_state.get("_align_prompt_for") != (fill := (cands_key, n_examples, base_dev.run_id)) \
            or not st.session_state.get("align_meta_prompt"):
        st.session_state.update(align_meta_prompt=prompt, _align_prompt_for=fill)
    st.text_area("Meta-prompt (editable: it is sent as shown)", key="align_meta_prompt", height=320,
                 help="Built from development items only; the test part never reaches it.")
    render.blocks([views.meta_prompt_note(len(example_ids), ws.endpoint)])
    propose_calls, propose_cost = ws.proposal_cost(st.session_state["align_meta_prompt"])
    if not may_act:
        st.caption("Sign in to ask for a proposal: it is sent on this server's key, as a scoring run is.")
    propose_ok = may_act and _spending.consent(
        "align_propose", (cands_key, ws.endpoint.base_url, hash(st.session_state["align_meta_prompt"])),
        propose_cost, propose_calls, ws.endpoint)
    if st.button("Propose", key="propose", disabled=not propose_ok) and propose_ok and _spending.charge(
            propose_cost, propose_calls, ws.endpoint, f"improve {ds.id} {dim} proposal"):
        try:
            with st.spinner("Asking the judge for a revision…"):
                st.session_state["_align_proposal"] = (cands_key, ws.propose(
                    base, st.session_state["align_meta_prompt"], example_ids,
                    charged_usd=propose_cost if propose_calls else 0.0))
        except Exception as e:  # noqa: BLE001 - shown with its reason (no <criteria> block, a refusal, ...)
            st.session_state.pop("_align_proposal", None)
            st.error(ui.esc(f"No proposal: {e or 'the request failed without a message'}"))
    if (held := st.session_state.get("_align_proposal")) is not None and held[0] == cands_key:
        st.markdown("**The proposal, as a diff against the baseline** (not saved until you keep it)")
        st.code(held[1].diff or "(no change)", language="diff", wrap_lines=True)
        render.blocks([views.reply_expander(held[1])])
        k1, k2, _ = st.columns([1, 1, 4])
        if k1.button("Keep as candidate", key="keep_proposal", type="primary"):
            keep(lp, held[1].candidate)
            st.session_state.pop("_align_proposal", None)
        if k2.button("Discard", key="discard_proposal"):
            st.session_state.pop("_align_proposal", None)
            st.rerun()


def fewshot_tab(lp: _Loop, dis) -> None:
    """Few-shot examples from the development part."""
    ws, base = lp.ws, lp.base
    f1, f2, f3 = st.columns(3)
    k = int(f1.number_input("Examples (k)", min_value=1, max_value=20, key=url.key("fewshot_k", 4, bounds=(1, 20))))
    how = f2.selectbox("Chosen by", list(cand.FEWSHOT_HOW), help=views.HELP["fewshot_how"],
                       key=url.key("fewshot_how", "disagreement", options=cand.FEWSHOT_HOW))
    few_seed = int(f3.number_input("Seed", min_value=0, max_value=2**31 - 1,
                                   key=url.key("fewshot_seed", 0, bounds=(0, 2**31 - 1)), disabled=how != "random"))
    if st.button("Add few-shot candidate", key="add_fewshot"):
        try:
            keep(lp, ws.fewshot(base, dis, k=k, how=how, seed=few_seed))
        except ValueError as e:
            st.error(ui.esc(str(e)))


# ------------------------------------------------------------------------------------------------- the page
ctx = ui.context()
me = identity.owner()  # the signed-in user (None: sign-in off or not signed in)
# on a server with sign-in, candidates and runs belong to who made them: nothing is scored or saved without a name
may_act = not identity.sign_in_configured() or me is not None
ds, dim, store = ctx.dataset, ctx.dimension, ui.store_or_none()
st.title("Improve the judge")
render.blocks(views.intro(ds.id, dim, store is not None))
if store is None:
    st.stop()

st.subheader("1. Split the documents")
split_form(ds, dim, store)
saved = list_splits(store, ds.id, dim, viewer=identity.viewer())  # final checks: this user's own
if not saved:
    st.info("No split yet for this dataset and dimension: choose the seed and test share, then **Make the split**.")
    st.stop()
splits = {s.split_id: s for s in saved}
split = splits[st.selectbox("Split in use", list(splits), format_func=lambda i: views.split_label(splits[i]),
                            key=url.key("align_split", saved[0].split_id, options=list(splits)))]
shown_split = views.split_section(ds, split)
for col, part_blocks in zip(st.columns([1, 2]), (shown_split.parts, shown_split.systems)):
    with col:
        render.blocks(part_blocks)
render.blocks(shown_split.warnings)

st.subheader("2. Judge and method")
choice, method, concurrency, measure = judge_form(ds, dim)
settings = loop.Settings(coefficient=measure, n_resamples=int(ctx.n_resamples))
base = cand.baseline_criteria(ds, dim, method, store, owner=me)
baseline = cand.baseline_candidate(base)
render.blocks([views.baseline_caption(base, settings)])
if not choice.ready:
    st.info("The next steps score on the development part: configure the judge endpoint above.")
    st.stop()
ws = views.Workspace(ds, dim, split, method, choice.endpoint, EngineOptions(choice.endpoint, api_key=choice.api_key,
                     concurrency=concurrency), store, settings, owner=me)
ws.agreement_cache = lambda run_id, at, part: _agreement(run_id, at, part, ws.key, _ws=ws)
if (q := st.session_state.get(QUEUE)) is not None and q.absorb():  # what the queue scored is in the cache now
    ui.forget_runs()
    _estimate.clear()

st.subheader("3. Why the judge disagrees (development part)")
base_dev = ws.scored_on(DEV, baseline)
if base_dev is None:
    st.caption("Score the baseline on the development part first: its disagreements are what the candidates "
               "learn from.")
    offer(ws, may_act, "baseline", DEV, [baseline], "the baseline on the development part",
          "Score the baseline on development", "score_baseline", "align_baseline")
    queue_panel("baseline", split)
    st.stop()
dis = ws.disagreements(base_dev)
render.blocks([views.baseline_metrics(base_dev, dis)])
disagreement_reader(dis)
render.blocks(views.confusion_blocks(dis))

st.subheader("4. Candidates")
cands_key = ws.candidates_key(base)
saved_before = ws.saved_candidates(identity.viewer(), base)
if cands_key not in st.session_state.setdefault(CANDS, {}):  # a new session: scored candidates come back
    st.session_state[CANDS][cands_key] = ws.resumed_candidates(saved_before)
cands: list[cand.Candidate] = st.session_state[CANDS][cands_key]
add_back(saved_before, cands)
tab_edit, tab_llm, tab_few = st.tabs(["Your own edit", "LLM proposal", "Few-shot examples"])
loop_state = _Loop(ws, may_act, base, cands)
with tab_edit:
    edit_tab(loop_state, cands_key)
with tab_llm:
    llm_tab(loop_state, dis, base_dev, cands_key)
with tab_few:
    fewshot_tab(loop_state, dis)

st.subheader("5. Select on development")
scored, unscored = ws.partition(cands)
if not cands:
    st.info("No candidate yet: add one above (your own edit, an LLM proposal, or few-shot examples).")
if unscored:
    offer(ws, may_act, "dev", DEV, unscored, f"{views.counted(len(unscored), 'candidate')} on the development part",
          f"Score {views.counted(len(unscored), 'candidate')} on development", "score_candidates", "align_dev")
queue_panel("dev", split)
chosen_dev, no_gain = None, None
if scored:
    pick = views.selection(base_dev, scored)
    chosen_dev = pick.by_version[st.selectbox(
        "Candidate to test (default: the best development agreement above the baseline's)", pick.versions,
        key=url.key("align_chosen", pick.default, options=pick.versions), format_func=pick.label)]
    if (no_gain := views.selection_sentence(base_dev, scored, chosen_dev)) is not None:
        st.warning(ui.esc(no_gain))
render.blocks(views.candidates_blocks(base_dev, scored, unscored, chosen_dev, settings, split.split_id, dim))

st.subheader("6. Final check on the held-out test part")
checks_before = len(ws.checks(identity.viewer()))
if chosen_dev is None:
    st.info("Score at least one candidate on development, then run the final check.")
    st.stop()
final_offer = views.final_offer(chosen_dev.candidate, checks_before, no_gain, loop.final_check_blocker(split))
render.blocks([final_offer.caption])
if final_offer.label is not None:  # None: no check can run on this split (the caption says why)
    offer(ws, may_act, "test", TEST, [baseline, chosen_dev.candidate],
          "the baseline and the chosen candidate on the test part", final_offer.label, "final_check", "align_test",
          anyway=final_offer.anyway, primary=final_offer.primary, chosen=chosen_dev.candidate.version)
queue_panel("test", split)
if (q := st.session_state.get(QUEUE)) is not None and q.claim_check(split.split_id):
    picked = views.picked(scored, q.chosen, chosen_dev)
    with st.spinner("Comparing on the test part…"):  # the runs are in the store: nothing is sent again
        st.session_state["_align_final"] = (split.split_id, ws.final_check(base_dev, picked), base_dev, picked,
                                            settings.coefficient)
    st.rerun()
final = st.session_state.get("_align_final")
if final is not None and (final[0], final[4]) != (split.split_id, settings.coefficient):
    final = None  # another split or another agreement measure: that check is listed below, not drawn
if final is not None:  # the verdict, or why the check could not be computed (then not counted)
    render.blocks(ws.final_blocks(*final[1:4], epsilon=st.session_state.get("alt_epsilon", 0.2)))
if checks_before or final is not None:
    render.blocks([views.checks_expander(ws.checks(identity.viewer()), split.split_id)])
