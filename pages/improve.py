"""Improve the judge: split the documents, see why the judge disagrees on development, make candidate prompts,
select on development, and check the chosen one once on the held-out test part (evalcore.align, issue 22).

The test part's human labels are shown nowhere on this page until the final check has been run.
"""

from __future__ import annotations

import dataclasses
import json

import streamlit as st

from evalcore.align import candidates as cand
from evalcore.align import loop
from evalcore.align.disagreement import disagreements
from evalcore.align.split import DEV, TEST, list_splits, make_split, save_split
from evalcore.judge import spending, trust
from evalcore.store import StoreError, store_message
from evalcore.judge.job import ScoringJob
from evalcore.judge.spec import EngineOptions
from evalcore.methods import METHODS
from evalcore.views import improve as views
from pages import _identity as identity
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
me = identity.owner()  # the signed-in user (None: sign-in off or not signed in)
# on a server with sign-in, candidates and runs belong to who made them: nothing is scored or saved without a name
may_act = not identity.sign_in_configured() or me is not None
ds = ctx.dataset
dim = ctx.dimension
store = ui.store_or_none()
st.title("Improve the judge")
st.caption(f"Dataset **{ui.esc(ds.id)}** · dimension **{ui.esc(dim)}** (change them in the sidebar). Split the "
           "documents, learn from the judge's disagreements on the development part, try candidate prompts there, "
           "and check the chosen one once on held-out documents it never saw.")
if store is None:
    st.info("The loop needs the local store (splits, criteria versions and every judge call are kept there): see "
            "the message above.")
    st.stop()
QUEUE = "_align_queue"  # the scoring jobs running for this page, one after another

# ----------------------------------------------------------------------------------------------------- split
st.subheader("1. Split the documents")
n_all = int(ds.items["doc_id"].nunique())
c1, c2, c3 = st.columns(3)
split_seed = int(c1.number_input("Split seed", min_value=0, max_value=2**31 - 1,
                                 key=url.key("split_seed", 0, bounds=(0, 2**31 - 1))))
test_share = float(c2.number_input("Test share", min_value=0.05, max_value=0.95, step=0.05, format="%.2f",
                                   key=url.key("test_share", 0.3, bounds=(0.05, 0.95)),
                                   help="The share of documents held out for the final check."))
loop_docs = int(c3.number_input("Documents in the loop (0 = all)", min_value=0, max_value=n_all,
                                key=url.key("loop_docs", 0, bounds=(0, n_all)),
                                help="Work on K whole documents drawn at random (seeded by the split seed), then "
                                     "split them: a cheaper loop, with wider intervals."))
if st.button("Make the split", key="make_split", help="Documents, not items, are split (every output of a document "
             "falls on the same side), stratified by system (and by label for a categorical dimension). Saved "
             "with the dataset."):
    from evalcore.sampling import documents_subset, sample_documents

    sub = ds if not loop_docs else documents_subset(ds, sample_documents(ds, loop_docs, seed=split_seed,
                                                                         how="random", dimension=dim))
    try:
        made = make_split(sub, dim, test_share=test_share, seed=split_seed)
    except ValueError as e:
        st.error(ui.esc(str(e)))
    else:
        save_split(store, made)
        st.session_state["align_split"] = made.split_id  # the widget below is drawn after this: it shows it

saved = list_splits(store, ds.id, dim, viewer=identity.viewer())  # final checks: this user's own
if not saved:
    st.info("No split yet for this dataset and dimension: choose the seed and test share, then **Make the split**.")
    st.stop()
splits = {s.split_id: s for s in saved}
split_id = st.selectbox("Split in use", list(splits), format_func=lambda i: views.split_label(splits[i]),
                        key=url.key("align_split", saved[0].split_id, options=list(splits)))
split = splits[split_id]
s1, s2 = st.columns([1, 2])
with s1:
    ui.static_table(views.split_overview(split), f"split {split_id[:8]} parts", "split_parts")
    st.caption(f"Stratified by {ui.esc(split.strata)}; the test part's human scores stay hidden here until the "
               "final check.")
with s2:
    ui.table(views.split_by_system(ds, split), f"split {split_id[:8]} by system", "split_systems", height=240)
few = [name for name, docs in (("development", split.dev_docs), ("test", split.test_docs)) if len(docs) < 10]
if few:
    st.warning(f"The {' and '.join(few)} part{'s' * (len(few) > 1)} of this split {'hold' if len(few) > 1 else 'holds'} "
               "fewer than 10 documents: every interval resamples documents, and on so few it is too narrow to "
               "trust; the final check's verdict also needs the permutation test that swaps the two prompts on whole "
               "documents, exact on so few.")
if len(split.test_docs) < 6:
    st.warning(f"The test part holds {len(split.test_docs)} documents: swapping two prompts on whole documents gives "
               f"{2 ** len(split.test_docs)} arrangements, so no p-value can fall below "
               f"{2 / 2 ** len(split.test_docs):.3f} and no final check can come out significant at 5%. Hold out more "
               "documents (a larger test share or more documents in the loop).")

# -------------------------------------------------------------------------------------------- judge and method
st.subheader("2. Judge and method")
choice = ui.endpoint_form("improve")
ui.endpoint_help(choice)
methods = [n for n, m in METHODS.items() if not m.pairwise]
m1, m2 = st.columns(2)
method = m1.selectbox("Method", methods, key=url.key("align_method", "geval", options=methods),
                      help=", ".join(f"{n}: {getattr(METHODS[n], 'label', n)}" for n in methods))
concurrency = int(m2.number_input("Concurrent requests", min_value=1, max_value=128,
                                  key=url.key("align_concurrency", 8, bounds=(1, 128))))
measures = views.agreement_choices(ds.dimension(dim))
measure = st.selectbox("Agreement with the humans", measures, format_func=views.agreement_name,
                       key=url.key("align_agreement", measures[0], options=measures),
                       help="How each prompt's agreement is measured, on development and in the final check. A "
                            "correlation at the dataset level; on a categorical dimension also Cohen's kappa, the "
                            "quadratic-weighted kappa (ordinal) or accuracy of the judge's labels (a nominal "
                            "dimension has no order: only those).")
settings = loop.Settings(coefficient=measure, n_resamples=int(ctx.n_resamples))
base = cand.baseline_criteria(ds, dim, method, store, owner=me)
baseline = cand.baseline_candidate(base)
st.caption(f"Baseline: criteria version {base.version_hash()} (what the Score page would use, the loop's own "
           f"saved candidates aside). Agreement = {views.agreement_name(measure)}, 95% BCa interval over documents "
           f"({settings.n_resamples} resamples, set in the sidebar).")
if not choice.ready:
    st.info("The next steps score on the development part: configure the judge endpoint above.")
    st.stop()
endpoint = choice.endpoint
options = EngineOptions(endpoint, api_key=choice.api_key, concurrency=concurrency)


# ------------------------------------------------------------------------------------------------ helpers
@st.cache_data(show_spinner=False, max_entries=64)
def _agreement(run_id: str, updated_at: str, part: str, split_id: str, dimension: str, coefficient: str,
               n_resamples: int, *, _ds, _split, _store) -> loop.Agreement:
    measure = loop.Settings(coefficient=coefficient, n_resamples=n_resamples)
    frame = loop.part_frame(_ds, _store.load_run(run_id), dimension, _split, part, labels=measure.on_labels)
    return loop.agreement_of(frame, measure, _ds.dimension(dimension))


def scored_on(part: str, c: cand.Candidate) -> loop.Scored | None:
    """The candidate's finished run on ``part`` (from the store: cached, resumable), or None. This user's own run on
    this endpoint only (loop.own_run): another user's run is never read here, whatever its id."""
    rid = loop.run_id_for(ds.id, split, part, c, method, endpoint, me)
    row = loop.own_run(store, rid, me, endpoint)
    if row is None or row["status"] != "done":
        return None
    a = _agreement(rid, str(row["updated_at"]), part, split.split_id, dim, settings.coefficient, settings.n_resamples,
                   _ds=ds, _split=split, _store=store)
    return loop.Scored(candidate=c, part=part, run_id=rid, agreement=a)


@st.cache_data(show_spinner=False, max_entries=32, ttl=60)
def _estimate(part: str, split_id: str, dimension: str, versions: tuple[str, ...], method: str, endpoint_key: str, *,
              _ds, _split, _cands, _options) -> dict:
    return loop.estimate_part(_ds, _split, part, dimension, method, _cands, _options, store=store)


def estimate(part: str, cands: list[cand.Candidate]) -> dict | None:
    try:
        return _estimate(part, split.split_id, dim, tuple(c.version for c in cands), method,
                         json.dumps(endpoint.identity(), sort_keys=True), _ds=ds, _split=split, _cands=cands,
                         _options=options)
    except Exception as e:  # noqa: BLE001 - e.g. the method cannot score this dataset
        st.warning(ui.esc(f"No estimate: {e or 'no reason given'}"))
        return None


def show_estimate(est: dict, what: str) -> None:
    from evalcore.judge.cost import FREE_PROVIDERS

    if est["calls"] == 0:
        st.caption(ui.esc(f"Estimate for {what}: nothing to send (its {est['cached']:,} requests are repeats or "
                          "already in the cache)."))
        return
    cost = ("a local server: no price" if endpoint.provider in FREE_PROVIDERS else
            "unknown price (the model is not in the price table)" if est["cost_usd"] is None else
            f"about {spending.usd(est['cost_usd'])}")
    st.caption(ui.esc(f"Estimate for {what}: {est['calls']:,} request(s) to send ({est['cached']:,} more are repeats "
                      f"or already in the cache), about {est['prompt_tokens']:,} prompt tokens, {cost}."))


def may_spend(est: dict | None, key: str) -> bool:
    """The spending rule of every page (pages/_spending.py, evalcore.judge.spending.gate): a costly or unknown-price
    run needs a confirmation naming cost, requests and host; the operator's cap (per user, kept in the store)
    refuses what would pass it."""
    from pages import _spending

    if est is None:
        return False
    if not may_act:
        st.caption("Sign in to score: runs and candidates are yours until you share them with the lab.")
        return False
    sig = (key, split.split_id, method, endpoint.base_url, est["calls"], est["cost_usd"])
    return _spending.consent(key, sig, est["cost_usd"], est["calls"], endpoint)


def start_queue(kind: str, part: str, cands: list[cand.Candidate], est: dict, **extra) -> None:
    """Score the candidates on ``part`` one after another through the Score page's job (evalcore.judge.job): this
    user's own runs on this endpoint (a run under the same id made by anyone else is refused, never reused), once
    the spending is charged."""
    from pages import _spending

    specs = [(views.candidate_name(c.source, c.version), loop.spec_for(ds, split, part, dim, method, c, endpoint,
                                                                        owner=me))
             for c in cands]
    try:
        for _name, spec in specs:
            loop.check_reuse(store, spec.run_id, me, endpoint)
    except loop.RunNotReusable as e:
        st.error(ui.esc(str(e)))
        return
    if not _spending.charge(est["cost_usd"], est["calls"], endpoint, f"improve {ds.id} {dim} {kind}"):
        return
    st.session_state[QUEUE] = {"kind": kind, "split": split.split_id, "items": specs, "i": 0, "job": None,
                               "done": False, "absorbed": False, **extra}
    _advance(st.session_state[QUEUE])


def _advance(q: dict) -> None:
    job = q["job"]
    if job is not None and job.running:
        return
    if job is not None and (job.error or job.cancel.is_set()):
        q["done"] = True
        return
    if q["i"] >= len(q["items"]):
        q["done"] = True
        return
    _name, spec = q["items"][q["i"]]
    q["i"] += 1
    q["job"] = ScoringJob(run_id=spec.run_id, spec=dataclasses.replace(spec, owner=me), engine=options, store=store)
    q["job"].start()


@st.fragment(run_every=1.0)
def live_progress() -> None:
    q = st.session_state.get(QUEUE)
    if q is None:
        return
    _advance(q)
    job, (name, _spec) = q["job"], q["items"][q["i"] - 1]
    p = job.progress
    frac = 0.0 if p is None or not p.total else min(p.done / p.total, 1.0)
    text = "starting (probing the endpoint)…" if p is None else (
        f"{p.done:,} / {p.total:,} done · {p.cached:,} from cache · {p.failed:,} failed")
    st.progress(frac, text=f"{name} ({q['i']} of {len(q['items'])}): {text}")
    if q["done"]:
        st.rerun(scope="app")
    elif st.button("Cancel", key="cancel_align"):
        job.cancel.set()


def queue_panel(kind: str) -> bool:
    """Progress of this page's scoring jobs of ``kind``, or how they ended; True while they run."""
    q = st.session_state.get(QUEUE)
    if q is None or q["kind"] != kind or q["split"] != split.split_id:
        return False
    if not q["done"]:
        live_progress()
        return True
    job = q["job"]
    if job is not None and job.error:
        st.error(ui.esc(f"Scoring stopped: {job.error}"))
    elif job is not None and job.cancel.is_set():
        st.warning("Cancelled. Finished judgments are kept: start again to score the rest.")
    return False


def absorb_finished() -> None:
    """Once the page's jobs have finished: the sidebar's run lists and the estimates are refreshed (what they
    scored is in the cache now, nothing of it is to send again)."""
    q = st.session_state.get(QUEUE)
    if q is None:
        return
    _advance(q)
    if q["done"] and not q["absorbed"]:
        q["absorbed"] = True
        ui.forget_runs()
        _estimate.clear()


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def busy() -> bool:
    """Whether this page's jobs are still scoring (a finished job hands over to the next one here too)."""
    q = st.session_state.get(QUEUE)
    if q is None:
        return False
    _advance(q)
    return not q["done"]


absorb_finished()

# ------------------------------------------------------------------------------------ baseline on development
st.subheader("3. Why the judge disagrees (development part)")
base_dev = scored_on(DEV, baseline)
if base_dev is None:
    st.caption("Score the baseline on the development part first: its disagreements are what the candidates "
               "learn from.")
    est = estimate(DEV, [baseline])
    if est is not None:
        show_estimate(est, "the baseline on the development part")
    ok = may_spend(est, "align_baseline")
    if st.button("Score the baseline on development", key="score_baseline", type="primary",
                 disabled=not ok or busy()) and ok:
        start_queue("baseline", DEV, [baseline], est)
    queue_panel("baseline")
    st.stop()

dis = disagreements(ds, store.load_run(base_dev.run_id), dim, split)
a = base_dev.agreement
d1, d2, d3 = st.columns(3)
d1.metric("Baseline agreement (development)", ui.fmt(a.statistic), help=f"95% CI {ui.fmt(a.ci_low)} to "
          f"{ui.fmt(a.ci_high)}")
d2.metric("Development items judged", f"{len(dis.items):,}")
d3.metric("Failed (unreadable replies)", f"{dis.failed:,}")
top_n = int(st.number_input("Largest disagreements shown", min_value=5, max_value=200, step=5,
                            key=url.key("align_top", 20, bounds=(5, 200))))
shown_items = views.disagreement_table(dis, top_n)
ui.table(shown_items, "development disagreements", "align_disagreements", height=320)
if not shown_items.empty:
    ids = shown_items["item_id"].tolist()
    item = st.selectbox("Read one of them", ids, key=url.key("align_item", ids[0], options=ids))
    row = dis.items[dis.items["item_id"].astype(str) == item].iloc[0]
    if dis.kind == "nominal":
        st.caption(ui.esc(f"System {row['system_id']} · human label {dis.label_names[round(row['human'])]} · "
                          f"judge label {dis.label_names[round(row['judge'])]}"))
    else:
        st.caption(ui.esc(f"System {row['system_id']} · human {row['human']:.2f} · judge {row['judge']:.3g} "
                          f"({row['judge_on_human_scale']:.2f} on the human scale)"))
    r1, r2 = st.columns(2)
    with r1:
        ui.plain("The text judged", str(row["output"]))
    with r2:
        ui.plain("The judge's reply", str(row["raw"] or ""))
g1, g2 = st.columns(2)
with g1:
    ui.chart(views.by_system_figure(dis), "align_by_system")
with g2:
    ui.chart(views.by_human_figure(dis), "align_by_human")
if dis.confusion is not None:
    st.markdown("**Confusion cells** (human label x judge label, development items)")
    ui.table(views.confusion_table(dis), "development confusion cells", "align_confusion")

# ------------------------------------------------------------------------------------------------- candidates
st.subheader("4. Candidates")
CANDS = "_align_candidates"
cands_key = (ds.id, dim, split.split_id, method, base.version_hash())
# the loop's candidates saved before that this viewer may see (signed in: their own and the lab's shared ones)
saved_before = [c for c in views.saved_candidates(store.list_criteria_versions(ds.id, dim, viewer=identity.viewer()))
                if c.version != base.version_hash()]
if cands_key not in st.session_state.setdefault(CANDS, {}):
    # a new session on this split: the candidates already scored on its development part come back from the store
    st.session_state[CANDS][cands_key] = [
        c for c in saved_before
        if loop.own_run(store, loop.run_id_for(ds.id, split, DEV, c, method, endpoint, me), me, endpoint) is not None]
cands: list[cand.Candidate] = st.session_state[CANDS][cands_key]


def keep(c: cand.Candidate) -> None:
    if c.version == base.version_hash():
        st.warning("This candidate is identical to the baseline: not added.")
        return
    if any(x.version == c.version for x in cands):
        st.info(f"Candidate {c.version[:8]} is already in the list.")
        return
    if not may_act:
        st.warning("Sign in to keep a candidate: it is saved as a criteria version in your name.")
        return
    try:
        cand.save_candidate(store, ds.id, c, owner=me)
    except StoreError as e:
        st.error(ui.esc(store_message(e)))
        return
    cands.append(c)
    st.success(ui.esc(f"Kept {views.candidate_name(c.source, c.version)} as a candidate (saved as a criteria "
                      "version)."))


not_listed = [c for c in saved_before if all(c.version != x.version for x in cands)]
if not_listed:
    with st.expander(f"Candidates kept earlier and not in this list: {len(not_listed)}"):
        st.caption("Kept in an earlier session (or for another split) and not scored on this split's development "
                   "part yet: add them back to score them here.")
        by_v = {c.version: c for c in not_listed}
        back = st.multiselect("Add back", list(by_v), key="align_add_back",
                              format_func=lambda v: f"{views.candidate_name(by_v[v].source, v)} · {by_v[v].note}")
        if st.button("Add them as candidates", key="add_back", disabled=not back):
            cands.extend(by_v[v] for v in back)
            del st.session_state["align_add_back"]  # its options are gone: a fresh widget on the next run
            st.rerun()

tab_edit, tab_llm, tab_few = st.tabs(["Your own edit", "LLM proposal", "Few-shot examples"])
with tab_edit:
    # Streamlit drops a widget's state after a run that did not draw it (a run stopped above while a job ran): the
    # fields are filled again whenever their state is gone, not only when the baseline changed.
    if (st.session_state.get("_align_edit_for") != cands_key or "align_edit_definition" not in st.session_state
            or "align_edit_steps" not in st.session_state):
        st.session_state["align_edit_definition"] = base.definition
        st.session_state["align_edit_steps"] = base.steps
        st.session_state["_align_edit_for"] = cands_key
    st.text_area("Definition", key="align_edit_definition", height=140)
    st.text_area("Evaluation steps", key="align_edit_steps", height=140)
    if st.button("Add as candidate", key="add_edit"):
        keep(cand.edit_candidate(base, definition=st.session_state["align_edit_definition"],
                                 steps=st.session_state["align_edit_steps"]))

with tab_llm:
    n_examples = int(st.number_input("Development examples in the prompt", min_value=1, max_value=40,
                                     key=url.key("align_examples", 8, bounds=(1, 40))))
    prompt, example_ids = cand.build_meta_prompt(base, dis, split, dataset=ds, n_examples=n_examples)
    fill = (cands_key, n_examples, base_dev.run_id)
    if st.session_state.get("_align_prompt_for") != fill or not st.session_state.get("align_meta_prompt"):
        st.session_state["align_meta_prompt"] = prompt
        st.session_state["_align_prompt_for"] = fill
    st.text_area("Meta-prompt (editable: it is sent as shown)", key="align_meta_prompt", height=320,
                 help="Built from development items only; the test part never reaches it.")
    st.caption(f"It shows {len(example_ids)} development items with the largest disagreement. \"Propose\" sends it "
               f"as one request to {ui.esc(trust.host_of(endpoint.base_url))} (cached).")
    from pages import _spending

    propose_calls, propose_cost = spending.requests_cost(
        [cand.proposal_request(st.session_state["align_meta_prompt"])], endpoint, store)
    if not may_act:
        st.caption("Sign in to ask for a proposal: it is sent on this server's key, as a scoring run is.")
    propose_ok = may_act and _spending.consent(
        "align_propose", (cands_key, endpoint.base_url, hash(st.session_state["align_meta_prompt"])), propose_cost,
        propose_calls, endpoint)
    if st.button("Propose", key="propose", disabled=not propose_ok) and propose_ok and _spending.charge(
            propose_cost, propose_calls, endpoint, f"improve {ds.id} {dim} proposal"):
        try:
            with st.spinner("Asking the judge for a revision…"):
                st.session_state["_align_proposal"] = (cands_key, cand.propose(
                    base, st.session_state["align_meta_prompt"], endpoint=endpoint, api_key=choice.api_key,
                    store=store, example_items=example_ids, timeout_s=options.timeout_s,
                    max_retries=options.max_retries))
        except Exception as e:  # noqa: BLE001 - shown with its reason (no <criteria> block, a refusal, ...)
            st.session_state.pop("_align_proposal", None)
            st.error(ui.esc(f"No proposal: {e or 'the request failed without a message'}"))
    held = st.session_state.get("_align_proposal")
    if held is not None and held[0] == cands_key:
        proposal = held[1]
        st.markdown("**The proposal, as a diff against the baseline** (not saved until you keep it)")
        st.code(proposal.diff or "(no change)", language="diff", wrap_lines=True)
        with st.expander("The judge's full reply"):
            ui.plain("Reply", proposal.reply)
        k1, k2, _ = st.columns([1, 1, 4])
        if k1.button("Keep as candidate", key="keep_proposal", type="primary"):
            keep(proposal.candidate)
            st.session_state.pop("_align_proposal", None)
        if k2.button("Discard", key="discard_proposal"):
            st.session_state.pop("_align_proposal", None)
            st.rerun()

with tab_few:
    f1, f2, f3 = st.columns(3)
    k = int(f1.number_input("Examples (k)", min_value=1, max_value=20, key=url.key("fewshot_k", 4, bounds=(1, 20))))
    how = f2.selectbox("Chosen by", list(cand.FEWSHOT_HOW), key=url.key("fewshot_how", "disagreement",
                                                                        options=cand.FEWSHOT_HOW),
                       help="disagreement: the development items the baseline got most wrong; coverage: items "
                            "spread over the human scale; random: seeded")
    few_seed = int(f3.number_input("Seed", min_value=0, max_value=2**31 - 1,
                                   key=url.key("fewshot_seed", 0, bounds=(0, 2**31 - 1)), disabled=how != "random"))
    if st.button("Add few-shot candidate", key="add_fewshot"):
        try:
            pool = cand.example_pool(ds, dim, split, dis)
            keep(cand.fewshot_candidate(base, pool, split, k=k, how=how, seed=few_seed, human_scale=dis.human_scale))
        except ValueError as e:
            st.error(ui.esc(str(e)))

# ------------------------------------------------------------------------------------- selection on development
st.subheader("5. Select on development")
scored, unscored = [], []
for c in cands:
    s = scored_on(DEV, c)
    (scored if s is not None else unscored).append(s if s is not None else c)
if not cands:
    st.info("No candidate yet: add one above (your own edit, an LLM proposal, or few-shot examples).")
if unscored:
    est = estimate(DEV, unscored)
    if est is not None:
        show_estimate(est, f"{len(unscored)} candidate(s) on the development part")
    ok = may_spend(est, "align_dev")
    if st.button(f"Score {len(unscored)} candidate(s) on development", key="score_candidates", type="primary",
                 disabled=not ok or busy()) and ok:
        start_queue("dev", DEV, unscored, est)
queue_panel("dev")

chosen_dev, no_gain = None, None
if scored:
    versions = [s.candidate.version for s in scored]
    # the default: the best of those that beat the baseline on development; when none did, the best of them all,
    # said to be no better than the baseline right below (never offered silently as if it had gained)
    best = views.default_choice(base_dev, scored) or (
        loop.choose(scored) if any(s.agreement.statistic == s.agreement.statistic for s in scored) else scored[0])
    by_version = {s.candidate.version: s for s in scored}
    chosen_version = st.selectbox(
        "Candidate to test (default: the best development agreement above the baseline's)", versions,
        key=url.key("align_chosen", best.candidate.version, options=versions),
        format_func=lambda v: views.choice_label(base_dev, by_version[v]))
    chosen_dev = by_version[chosen_version]
    no_gain = views.selection_sentence(base_dev, scored, chosen_dev)
    if no_gain is not None:
        st.warning(ui.esc(no_gain))
table = views.candidates_table(base_dev, scored, unscored, chosen_dev.candidate.version if chosen_dev else None)
ui.chart(views.candidates_figure(table, settings.coefficient, settings.level), "align_candidates")
ui.table(table, f"candidates {split.split_id[:8]} {dim}", "align_candidates_table")

# ------------------------------------------------------------------------------------------- final check on test
st.subheader("6. Final check on the held-out test part")
# this user's own checks (and looks at this test part on other pages): another user's are not theirs to count, and
# their candidates' hashes and results are not listed here
my_checks = store.final_checks(ds.id, split.split_id, viewer=identity.viewer())
checks_before = len(my_checks)
if chosen_dev is None:
    st.info("Score at least one candidate on development, then run the final check.")
    st.stop()
st.caption(f"Scores the baseline and {ui.esc(views.candidate_name(chosen_dev.candidate.source, chosen_version))} "
           "once on the test part's documents and compares them by two paired tests over documents, both of which must "
           "reject for a verdict: the paired bootstrap (as on the Compare page) and the permutation test swapping the "
           "two prompts on whole documents (exact on few documents, where the bootstrap's interval is too narrow). Every final check is counted: " + (
               "this split's test part has not been looked at yet." if not checks_before else
               f"this split's test part has been looked at {_times(checks_before)} already; another check is "
               f"allowed and will be reported as check number {checks_before + 1}."))
est = estimate(TEST, [baseline, chosen_dev.candidate])
if est is not None:
    show_estimate(est, "the baseline and the chosen candidate on the test part")
ok = may_spend(est, "align_test")
label = "Run the final check on test" if not checks_before else f"Run the final check again (check {checks_before + 1})"
if no_gain is not None:  # nothing gained on development: a check only on an explicit request, never the invited step
    ok = st.checkbox(f"Check {views.candidate_name(chosen_dev.candidate.source, chosen_version)} on test anyway, "
                     "knowing it did not beat the baseline on development (a counted look at the test part)",
                     key="align_test_anyway") and ok
    label = label.replace("Run the final check", "Run the final check anyway")
if st.button(label, key="final_check", type="primary" if no_gain is None else "secondary",
             disabled=not ok or busy()) and ok:
    start_queue("test", TEST, [baseline, chosen_dev.candidate], est, chosen=chosen_dev.candidate.version)
running = queue_panel("test")
q = st.session_state.get(QUEUE)
if (q is not None and q["kind"] == "test" and q["done"] and q["split"] == split.split_id and not q.get("checked")
        and q["job"] is not None and not q["job"].error and not q["job"].cancel.is_set()):
    q["checked"] = True
    picked = next((s for s in scored if s.candidate.version == q["chosen"]), chosen_dev)
    with st.spinner("Comparing on the test part…"):  # the runs are in the store: nothing is sent again
        check = loop.final_check(ds, split, dim, method, base_dev, picked, options, store=store, settings=settings,
                                 owner=me)
    st.session_state["_align_final"] = (split.split_id, check, base_dev, picked, settings.coefficient)
    st.rerun()

final = st.session_state.get("_align_final")
if final is not None and (final[0], final[4]) != (split.split_id, settings.coefficient):
    final = None  # another split or another agreement measure: that check is listed below, not drawn
if final is not None:
    _sid, check, b_dev, c_dev, _measure = final
    lines = views.verdict_sentences(check)
    (st.success if check.verdict == "improved" else st.warning)(ui.esc(lines[0]))
    for line in lines[1:]:
        st.markdown(ui.esc(line))
    ui.chart(views.test_figure(check, b_dev, c_dev, settings.coefficient, settings.level), "align_test")
    ui.static_table(views.test_table(check, b_dev, c_dev), "final check agreement", "align_test_table")
    ui.static_table(views.difference_table(check), "final check difference", "align_difference")
    # may the judge now replace the annotators? the Alt-Test on the test part, at the Alignment page's epsilon
    from evalcore.align.split import split_dataset

    alt_text, alt_rows = views.alt_test_check(split_dataset(ds, split, TEST), store.load_run(check.baseline.run_id),
                                              store.load_run(check.chosen.run_id), dim,
                                              epsilon=st.session_state.get("alt_epsilon", 0.2))
    st.markdown(ui.esc(alt_text))
    ui.static_table(alt_rows, "final check alt-test", "align_alt_test")
if checks_before or final is not None:
    mine = store.final_checks(ds.id, split.split_id, viewer=identity.viewer())
    with st.expander(f"Final checks on this split's test part: {len(mine)}"):
        ui.table(views.final_checks_table(mine), f"final checks {split.split_id[:8]}", "align_checks")
