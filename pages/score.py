"""Score: run a judge over the dataset (method, endpoint, cost estimate, progress, cancel and resume, failures).

The page wires widgets to library calls and lays out what evalcore.views.score computes."""

from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

from evalcore.judge import resume
from evalcore.judge.job import ScoringJob
from evalcore.judge.spec import ScoringSpec
from evalcore.methods import METHODS
from evalcore.views import criteria as criteria_views
from evalcore.views import score as score_views
from evalcore.views import sharing
from pages import _compute as compute
from pages import _handoff as handoff
from pages import _identity as identity
from pages import _render as render
from pages import _shared as ui
from pages import _spending
from pages import _url as url

SAMPLE_HOW = ("random", "stratified")
ORDERS = ["ab", "ba"]
EFFORTS = ["", "none", "minimal", "low", "medium", "high"]


def _what_to_score(ds, dimension: str) -> tuple[str, list[str], score_views.Sample, dict | None]:
    """Method, dimensions, items or whole documents, and (pairwise) the presentation orders."""
    st.subheader("What to score")
    names = list(METHODS)
    c1, c2, c3 = st.columns(3)
    method_name = c1.selectbox("Method", names, key=url.key("method", score_views.default_method(ds), options=names),
                               help=", ".join(f"{n}: {getattr(m, 'label', n)}" for n, m in METHODS.items()))
    dims = c2.multiselect("Dimensions to score", ds.dimension_names,
                          key=url.key("score_dims", [dimension], options=ds.dimension_names))
    pairwise = METHODS[method_name].pairwise
    most = max(len(ds.items), 1) * 10
    limit = c3.number_input("Pairs (0 = all)" if pairwise else "Items (0 = all)", min_value=0, max_value=most,
                            step=10, key=url.key("limit", 0, bounds=(0, most)))
    n_docs = int(ds.items["doc_id"].nunique())
    d1, d2, d3 = st.columns(3)
    docs = d1.number_input("Whole documents (0 = all)", min_value=0, max_value=n_docs, step=1,
                           key=url.key("sample_docs", 0, bounds=(0, n_docs)), disabled=pairwise,
                           help="Score K documents with every system's output for each, drawn at random (seeded): "
                                "every interval resamples documents, so a partial run should cover whole documents")
    seed = d2.number_input("Seed", min_value=0, max_value=2**31 - 1,
                           key=url.key("sample_seed", 0, bounds=(0, 2**31 - 1)), disabled=not docs)
    how = d3.selectbox("Documents drawn", SAMPLE_HOW, key=url.key("sample_how", "random", options=SAMPLE_HOW),
                       disabled=not docs,
                       help="stratified: one document from each of K strata of the documents' mean human score")
    picked = score_views.sample(ds, pairwise=pairwise, limit=int(limit), documents=int(docs), seed=int(seed),
                                how=how, dimension=(dims or [None])[0])
    render.blocks(picked.notes)
    return method_name, list(dims), picked, _pairs(ds) if pairwise else None


def _pairs(ds) -> dict:
    """Which presentation orders, and whether only the pairs the humans voted on."""
    o1, o2 = st.columns([1, 2])
    orders = o1.multiselect("Presentation orders", ORDERS, key=url.key("orders", ORDERS, options=ORDERS),
                            help="ab: output A shown first; ba: output B first. Both (default) give one verdict per "
                                 "pair as MT-Bench does, and measure position bias.")
    every = o2.checkbox("Also pairs nobody voted on", key=url.key("all_pairs", False),
                        disabled=ds.preferences.empty,
                        help="On a dataset of pairwise votes only the voted pairs are sent unless this is ticked.")
    return {"orders": orders or ORDERS, **({"annotated": False} if every else {})}


def _draws(pairwise: bool) -> int:
    """Draws per item: how many times the judge rates each item (1: once, as a run always did)."""
    return int(st.number_input(
        "Draws per item", min_value=1, max_value=50, step=1, key=url.key("draws", 1, bounds=(1, 50)),
        disabled=pairwise, help="Ask the judge K times per item (each draw cached under its own key, with a seed "
                                "where the endpoint takes one): the item's score is the draws' mean, and the "
                                "Alignment page's reliability section shows how much a rerun would move the figure. "
                                "The estimate counts every draw. Draws of a greedy judge (temperature 0) measure "
                                "only the endpoint's own nondeterminism.")) if not pairwise else 1


def _how_to_send(choice, store) -> dict[str, Any]:
    """Concurrency, label, reasoning options, the judge check, replicas and the Batch API."""
    c4, c5 = st.columns([1, 3])
    opts: dict[str, Any] = {
        "concurrency": c4.number_input("Concurrent requests", min_value=1, max_value=128,
                                       key=url.key("concurrency", 8, bounds=(1, 128))),
        "label": c5.text_input("Run label", key="run_label", placeholder="e.g. G-Eval, my steps v2"),
        "reprobe": st.checkbox("Probe the endpoint's capabilities again", key="reprobe",
                               help="The capability probe (log-probs, n, echo) is cached like every call; probe again "
                                    "if the server's settings changed behind the same URL and model.")}
    r6, r7 = st.columns(2)
    opts["effort"] = r6.selectbox("Reasoning effort (reasoning judges)", EFFORTS, key="reasoning_effort",
                                  help="Sent as reasoning_effort (blank: the model's default); recorded with the run "
                                       "and part of its cache key.") or None
    opts["budget"] = int(r7.number_input(
        "Completion budget, reasoning included (0: each method's own)", min_value=0, max_value=200_000, step=256,
        key="max_completion_tokens", help="A reasoning judge reasons before it answers, out of this budget: too small "
                                          "a budget fails as such ('the budget ran out while the judge was "
                                          "reasoning').")) or None
    if st.button("Check this judge", key="check_judge",
                 disabled=not choice.ready or (identity.sign_in_configured() and identity.owner() is None),
                 help="A few cheap requests (cached, and learned from its refusals): what this endpoint and model "
                      "support, which variant of each method will run on it, the cost per item."):
        text, failed = score_views.judge_check(choice.endpoint, store=store, api_key=choice.api_key,
                                               reprobe=bool(opts["reprobe"]), effort=opts["effort"],
                                               budget=opts["budget"], shared=ui.shared_server())
        if failed is None:
            st.code(text, language=None)
        else:
            render.block(failed)
    c6, c7 = st.columns([2, 1])
    opts["replicas"] = c6.text_area(
        "More replicas of this model (optional, one base URL per line)", key="replicas", height=68,
        placeholder="http://gpu2:8000/v1", help="Several servers of the same model without a load balancer: each "
                                                "request goes to the one with the fewest outstanding requests; a "
                                                "failing one is drained. Each reply is cached under the server "
                                                "that gave it.")
    opts["use_batch"] = bool(c7.checkbox(
        "Use the OpenAI Batch API", key=url.key("use_batch", False),
        help="Half price; results within 24 hours. The batch ids are kept with the run: you may close the app and "
             "collect the results later (below, or `python -m evalcore batch collect`)."))
    render.blocks(score_views.replica_notes(opts["replicas"], use_batch=opts["use_batch"]))
    return opts


def _estimate(spec: ScoringSpec, endpoint, *, use_batch: bool):
    """The plan's estimate, shown (a large plan only once asked for); None when there is none."""
    try:
        n_requests = compute.request_count(spec, endpoint)
        key = compute.plan_key(spec, endpoint)
        large = score_views.large_plan(n_requests)
        if large is not None and st.session_state.get("_estimate_for") != key:
            st.subheader("Estimate")
            render.blocks(large[0])
            if not render.action(large[1]):
                return None
            st.session_state["_estimate_for"] = key
        with st.spinner("Estimating calls and cost…"):
            est = compute.score_estimate(spec, endpoint)
    except Exception as e:  # noqa: BLE001 - e.g. the method is unsupported by this endpoint
        render.block(score_views.error_note("No estimate: ", e, "warning"))
        return None
    st.subheader("Estimate")
    render.blocks(score_views.estimate_blocks(est, use_batch=use_batch))
    return est


@st.fragment(run_every=1.0)
def _live_progress() -> None:
    j: ScoringJob | None = st.session_state.get("_score_job")
    if j is None:
        return
    frac, text = score_views.progress_line(j.progress)
    st.progress(frac, text=text)
    render.blocks(score_views.queue_blocks(j))  # a run queued for a worker: who scores it, or that none runs
    if j.running:
        if st.button("Cancel", key="cancel_scoring"):
            j.cancel.set()
            st.caption("Cancelling: requests in flight finish, nothing half-written is kept.")
    else:
        st.rerun(scope="app")


def _progress(job: ScoringJob, choice) -> None:
    st.subheader("Progress")
    st.text(f"Run {job.run_id}")
    if job.running:
        _live_progress()
    elif not job.absorbed:
        # the thread has just finished: refresh the run lists everywhere (sidebar, Bias, Compare) once
        job.absorbed = True
        ui.forget_runs()
        st.session_state["local_run"] = job.run_id  # show the run just scored below
        if job.run is not None:  # and analyse it: it joins the sidebar's runs (pages/_nav.py adds it)
            handoff.open_runs([job.run_id])
        st.rerun()
    else:
        frac, text = score_views.progress_line(job.progress)
        st.progress(frac, text=text)
        render.blocks(score_views.finished_blocks(job))
        offer = score_views.resume_offer(job, ready=choice.ready, typed_for=choice.typed_for)
        if offer is not None:
            render.blocks(offer[0])
            if st.button(offer[1].label, key=offer[1].key, disabled=not offer[1].allowed,
                         help="Continue the same run: finished judgments are not requested again"):
                job.resume(choice.api_key)
                st.rerun()


def _local_run(picked, label: str, job: ScoringJob | None, choice, store) -> None:
    """One run scored here: owner and sharing, resume command, batches, cost, endpoints, counts, failures."""
    rid = picked.run_id
    st.text(f"{label}  (id {rid})")
    if owner_line := score_views.owner_line(picked):
        st.text(owner_line)
        if picked.config.owner == identity.owner():
            def _share(on: bool) -> None:
                sharing.share_runs(store, (rid,), picked.config.owner, on)
                ui.forget_runs()

            identity.share_toggle("this run", "run", picked.config.shared, _share)
    if resume_note := score_views.resume_note(picked):
        st.caption(resume_note)
        st.code(resume.resume_command(picked), language="bash", wrap_lines=True)
    run = ui.load_run(rid, "robust")
    batches, collect = score_views.batch_blocks(run, store=store, ready=choice.ready, typed_for=choice.typed_for,
                                                running=job is not None and job.running)
    render.blocks(batches)
    if collect is not None and render.action(collect):
        said = score_views.collect_batches(rid, store=store, api_key=choice.api_key)
        if said is None:
            ui.forget_runs()
            st.rerun()
        render.block(said)
    render.blocks(score_views.run_details(run, shared=ui.shared_server()))


ctx = ui.context()
ds = ctx.dataset
store = ui.store_or_none()
st.title("Score")
if store is None:
    st.info("Scoring needs the local store (every judge call is cached there): see the message above.")
    st.stop()

st.subheader("Judge endpoint")
choice = ui.endpoint_form("score")
ui.endpoint_help(choice)
method_name, dims, picked_items, pairs = _what_to_score(ds, ctx.dimension)
draws = _draws(METHODS[method_name].pairwise)
opts = _how_to_send(choice, store)
criteria = {d: ui.current_criteria(ds, d, method_name) for d in dims}
with st.expander("Criteria used (edit them on the Criteria page)"):
    for d, c in criteria.items():
        st.text(f"{d}: version {c.version_hash()}")
        ui.plain("Definition", c.definition)

# what to score: the one value the estimate and the run both read
spec = ScoringSpec(picked_items.dataset, method_name, dims, criteria, criteria_views.method_config(method_name, ds),
                   limit=picked_items.limit or None, pairs=pairs, label=opts["label"],
                   documents=picked_items.documents, reasoning_effort=opts["effort"],
                   max_completion_tokens=opts["budget"], draws=draws)
est = _estimate(spec, choice.endpoint, use_batch=opts["use_batch"]) if choice.endpoint is not None and dims else None

job: ScoringJob | None = st.session_state.get("_score_job")
if job is not None and job.dataset_id != ds.id:
    job = None if not job.running else job
# on a server with sign-in a run belongs to who started it: no run without a name to record
may_run = not identity.sign_in_configured() or identity.owner() is not None
if not may_run:
    st.caption("Sign in to score: a run is yours until you share it with the lab.")
start = score_views.start_action(est, use_batch=opts["use_batch"], running=job is not None and job.running)
# Issue 21, item 12: a costly (or unknown-cost) run starts only once confirmed, naming cost, requests and host; the
# operator's cap refuses what would pass it (the one rule of every page that spends: pages/_spending.py)
may_spend = may_run and choice.ready and bool(dims) and est is not None and _spending.consent(
    "spend", (ds.id, method_name, tuple(dims), spec.limit or 0, opts["use_batch"], choice.endpoint.base_url,
              start.calls, start.cost_usd), start.cost_usd, start.calls, choice.endpoint)
if render.action(start if may_spend else dataclasses.replace(start, allowed=False), type="primary") \
        and _spending.charge(start.cost_usd, start.calls, choice.endpoint, f"score {ds.id} {method_name}"):
    job = score_views.new_job(spec, choice.endpoint, replica_text=opts["replicas"], use_batch=opts["use_batch"],
                              api_key=choice.api_key, concurrency=int(opts["concurrency"]),
                              reprobe=bool(opts["reprobe"]), store=store, owner=identity.owner(),
                              charged_usd=start.cost_usd)
    st.session_state["_score_job"] = job
    job.start()
if job is not None:
    _progress(job, choice)

st.subheader("Runs scored here")
local = [r for r in ctx.all_runs if r.origin != "published"]
if not local:
    st.info("No local run on this dataset yet.")
else:
    labels = score_views.run_labels(local)
    rid = st.selectbox("Run", list(labels), key=url.key("local_run", list(labels)[0], options=labels),
                       format_func=labels.get)
    _local_run(next(r for r in local if r.run_id == rid), labels[rid], job, choice, store)
