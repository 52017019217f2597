"""Score: run a judge over the dataset (method, endpoint, cost estimate, progress, cancel and resume, failures)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import streamlit as st

from evalcore.judge import trust
from evalcore.judge.job import ScoringJob
from evalcore.judge.spec import EngineOptions, ScoringSpec
from evalcore.views import common as common_views
from evalcore.views import criteria as criteria_views
from evalcore.views import score as score_views
from evalcore.methods import METHODS
from pages import _compute as compute
from pages import _identity as identity
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset
store = ui.store_or_none()
st.title("Score")
if store is None:
    st.info("Scoring needs the local store (every judge call is cached there): see the message above.")
    st.stop()


def cost_frame(rows: list[dict[str, Any]]):
    """The estimate's cost table for display: numbers formatted, 'unknown' where the model's price is unknown."""
    import pandas as pd

    def usd(x: Any, digits: int) -> str:
        return "unknown" if x is None else f"{x:,.{digits}f}"

    return pd.DataFrame([{"Tokens": r["tokens"], "Count": f"{r['count']:,}",
                          "USD per 1M (online)": "" if r["tokens"] == "total" else usd(r["usd_per_1m"], 3),
                          "USD (online)": usd(r["usd"], 4),
                          "USD per 1M (Batch API)": "" if r["tokens"] == "total" else usd(r["batch_usd_per_1m"], 3),
                          "USD (Batch API)": usd(r["batch_usd"], 4)} for r in rows])


# --------------------------------------------------------------------------------------------------- settings
st.subheader("Judge endpoint")
choice = ui.endpoint_form("score")
ui.endpoint_help(choice)

st.subheader("What to score")
method_names = list(METHODS)
c1, c2, c3 = st.columns(3)
method_name = c1.selectbox("Method", method_names, key=url.key("method", score_views.default_method(ds),
                                                                options=method_names),
                           help=", ".join(f"{n}: {getattr(m, 'label', n)}" for n, m in METHODS.items()))
dims = c2.multiselect("Dimensions to score", ds.dimension_names,
                      key=url.key("score_dims", [ctx.dimension], options=ds.dimension_names))
method = METHODS[method_name]
limit = c3.number_input("Pairs (0 = all)" if method.pairwise else "Items (0 = all)", min_value=0,
                        max_value=max(len(ds.items), 1) * 10, step=10,
                        key=url.key("limit", 0, bounds=(0, max(len(ds.items), 1) * 10)))
n_docs = int(ds.items["doc_id"].nunique())
d1, d2, d3 = st.columns(3)
sample_docs = d1.number_input("Whole documents (0 = all)", min_value=0, max_value=n_docs, step=1,
                              key=url.key("sample_docs", 0, bounds=(0, n_docs)), disabled=method.pairwise,
                              help="Score K documents with every system's output for each, drawn at random (seeded): "
                                   "every interval resamples documents, so a partial run should cover whole documents")
sample_seed = d2.number_input("Seed", min_value=0, max_value=2**31 - 1, key=url.key("sample_seed", 0,
                                                                                     bounds=(0, 2**31 - 1)),
                              disabled=not sample_docs)
SAMPLE_HOW = ("random", "stratified")
sample_how = d3.selectbox("Documents drawn", SAMPLE_HOW, key=url.key("sample_how", "random", options=SAMPLE_HOW),
                          disabled=not sample_docs,
                          help="stratified: one document from each of K strata of the documents' mean human score")
score_ds, documents = ds, None
if sample_docs and not method.pairwise:
    from evalcore.sampling import documents_subset, sample_documents

    picked = sample_documents(ds, int(sample_docs), seed=int(sample_seed), how=sample_how,
                              dimension=(dims or [None])[0])
    score_ds, documents = documents_subset(ds, picked), tuple(str(d) for d in picked)
    limit = 0  # the documents decide the items
    st.caption(ui.esc(f"Scoring {len(picked)} whole documents ({len(score_ds.items)} items, {sample_how}, seed "
                      f"{int(sample_seed)})" + ("; fewer than 10 documents: every interval will be unreliable."
                                                if len(picked) < 10 else ".")))
elif limit and not method.pairwise:
    st.caption("Items = N scores the first N rows: a few documents only. Prefer whole documents (above).")
pairs = None
if method.pairwise:  # which presentation orders, and whether only the pairs the humans voted on
    o1, o2 = st.columns([1, 2])
    ORDERS = ["ab", "ba"]
    orders = o1.multiselect("Presentation orders", ORDERS, key=url.key("orders", ORDERS, options=ORDERS),
                            help="ab: output A shown first; ba: output B first. Both (default) give one verdict per "
                                 "pair as MT-Bench does, and measure position bias.")
    has_votes = not ds.preferences.empty
    every = o2.checkbox("Also pairs nobody voted on", key=url.key("all_pairs", False), disabled=not has_votes,
                        help="On a dataset of pairwise votes only the voted pairs are sent unless this is ticked.")
    pairs = {"orders": orders or ORDERS, **({"annotated": False} if every else {})}
c4, c5 = st.columns([1, 3])
concurrency = c4.number_input("Concurrent requests", min_value=1, max_value=128,
                              key=url.key("concurrency", 8, bounds=(1, 128)))
label = c5.text_input("Run label", key="run_label", placeholder="e.g. G-Eval, my steps v2")
reprobe = st.checkbox("Probe the endpoint's capabilities again", key="reprobe",
                      help="The capability probe (log-probs, n, echo) is cached like every call; probe again if the "
                           "server's settings changed behind the same URL and model.")
r6, r7 = st.columns(2)
effort = r6.selectbox("Reasoning effort (reasoning judges)", ["", "none", "minimal", "low", "medium", "high"],
                      key="reasoning_effort", help="Sent as reasoning_effort (blank: the model's default); recorded "
                                                   "with the run and part of its cache key.")
budget = r7.number_input("Completion budget, reasoning included (0: each method's own)", min_value=0,
                         max_value=200_000, step=256, key="max_completion_tokens",
                         help="A reasoning judge reasons before it answers, out of this budget: too small a budget "
                              "fails as such ('the budget ran out while the judge was reasoning').")
if st.button("Check this judge", key="check_judge", disabled=not choice.ready or store is None or (
        identity.sign_in_configured() and identity.owner() is None),
             help="A few cheap requests (cached, and learned from its refusals): what this endpoint and model "
                  "support, which variant of each method will run on it, the cost per item."):
    from evalcore.judge.check import check_judge, format_check
    from evalcore.judge.contract import RequestOptions

    try:
        st.code(format_check(check_judge(choice.endpoint, store=store, api_key=choice.api_key, reprobe=bool(reprobe),
                                         options=RequestOptions(effort or None, int(budget) or None))),
                language=None)
    except Exception as e:  # noqa: BLE001 - the endpoint's own message (redacted by the client), not a traceback
        st.error(ui.esc(f"The check failed: {e}"))
c6, c7 = st.columns([2, 1])
replica_text = c6.text_area("More replicas of this model (optional, one base URL per line)", key="replicas",
                            height=68, placeholder="http://gpu2:8000/v1",
                            help="Several servers of the same model without a load balancer: each request goes to the "
                                 "one with the fewest outstanding requests; a failing one is drained. The first URL "
                                 "(above) keys the cache.")
use_batch = c7.checkbox("Use the OpenAI Batch API", key=url.key("use_batch", False),
                        help="Half price; results within 24 hours. The batch ids are kept with the run: you may close "
                             "the app and collect the results later (below, or `python -m evalcore batch collect`).")
replicas = [u.strip() for u in replica_text.splitlines() if u.strip()]
endpoints = None
if choice.endpoint is not None:
    from dataclasses import replace as _replace

    endpoints = [choice.endpoint] + [_replace(choice.endpoint, base_url=u) for u in replicas]
if use_batch and replicas:
    st.caption("The Batch API sends one batch to the first endpoint; the replicas are used by online runs only.")
criteria = {d: ui.current_criteria(ds, d, method_name) for d in dims}
config = criteria_views.method_config(method_name, ds)
with st.expander("Criteria used (edit them on the Criteria page)"):
    for d, c in criteria.items():
        st.text(f"{d}: version {c.version_hash()}")
        ui.plain("Definition", c.definition)

# --------------------------------------------------------------------------------------------------- estimate
def show_estimate(est, *, use_batch: bool = False) -> None:
    """What a run would ask for: requests (duplicates and cache hits apart from what goes out), then tokens and cost
    of the calls that go out (online, or through the Batch API)."""
    st.subheader("Estimate")
    st.markdown("**Requests**")
    r1, r2, r3, r4 = st.columns(4)
    r1.metric("Requests", f"{est.requests:,}", help="items (or ordered pairs) x dimensions x requests per task")
    r2.metric("Duplicate outputs", f"{est.duplicates:,}",
              help="requests identical to another one of this run (the same text to rate): sent once, the copies "
                   "read the reply back")
    r3.metric("Cache hits", f"{est.cache_hits:,}", help="replies an earlier run already stored: not sent again")
    r4.metric("Calls to send", f"{est.calls:,}", help="requests - duplicate outputs - cache hits")
    st.markdown("**Tokens and cost** (of the calls to send)")
    t1, t2, t3, _ = st.columns(4)
    t1.metric("Prompt tokens", f"{est.prompt_tokens:,}", help="characters / 4: a rough count")
    t2.metric("Completion tokens (max)", f"{est.completion_tokens:,}", help="max_tokens x samples: an upper bound")
    cost = est.cost_usd_batch if use_batch else est.cost_usd
    t3.metric("Cost, Batch API (USD)" if use_batch else "Cost (USD)",
              "unknown" if cost is None else f"{cost:,.2f}" if cost >= 1 else f"{cost:.4f}",
              help="unknown when the model's price is not in the price list")
    if est.note:
        st.caption(ui.esc(est.note))
    with st.expander("Cost by kind of token: cached prompt tokens, online vs Batch API"):
        ui.table(cost_frame(est.cost_rows), "cost estimate", "cost_table")
        st.caption("Cached prompt tokens: the expected prefix repeated from a recent request in the scheduled "
                   "order (the provider's prompt cache: OpenAI caches prompts of 1,024 tokens or more). Completion "
                   "tokens are an upper bound (max_tokens x samples).")


# what to score: the one value the estimate and the run both read
spec = ScoringSpec(score_ds, method_name, list(dims), criteria, config, limit=int(limit) or None, pairs=pairs,
                   label=label, documents=documents, reasoning_effort=effort or None,
                   max_completion_tokens=int(budget) or None)
# A plan above this many requests is estimated (its requests built, their tokens and cache hits counted) only when
# asked, not on opening a link to it (issue 21, item 2: h2h on every pair and dimension of SummEval is 96,000).
EAGER_ESTIMATE_REQUESTS = 5_000


def lazy_estimate_wanted(n_requests: int, key: tuple) -> bool:
    """For a large plan: its request count, and a button that builds the estimate. True once asked for this plan."""
    if n_requests <= EAGER_ESTIMATE_REQUESTS or st.session_state.get("_estimate_for") == key:
        return True
    st.subheader("Estimate")
    st.metric("Requests", f"{n_requests:,}", help="items (or ordered pairs) x dimensions x requests per task")
    st.caption(f"A large plan (over {EAGER_ESTIMATE_REQUESTS:,} requests): its calls, tokens and cost are worked out "
               "when you ask, not on opening the page. Nothing is sent either way.")
    if st.button("Estimate calls and cost", key="estimate_now"):
        st.session_state["_estimate_for"] = key
        return True
    return False


est = None
if choice.endpoint is not None and dims:
    try:
        n_requests = compute.request_count(spec, choice.endpoint)
        if lazy_estimate_wanted(n_requests, compute.plan_key(spec, choice.endpoint)):
            with st.spinner("Estimating calls and cost…"):
                est = compute.score_estimate(spec, choice.endpoint)
    except Exception as e:  # noqa: BLE001 - e.g. the method is unsupported by this endpoint
        st.warning(ui.esc(f"No estimate: {score_views.plain_error(e)}"))
    else:
        if est is not None:
            show_estimate(est, use_batch=bool(use_batch))


def spending_gate(est) -> bool:
    """Issue 21, item 12: a costly (or unknown-cost) run starts only once confirmed, naming cost, requests and host;
    the operator's cap (per user, kept in the store) refuses what would pass it. True when the run may start. The
    one rule of every page that spends (pages/_spending.py, evalcore.judge.spending.gate)."""
    from pages import _spending

    if est is None:
        return False  # no estimate, no run: the reason is shown above
    cost = est.cost_usd_batch if use_batch else est.cost_usd
    sig = (ds.id, method_name, tuple(dims), int(limit), bool(use_batch), choice.endpoint.base_url, est.calls, cost)
    return _spending.consent("spend", sig, cost, est.calls, choice.endpoint)

# ------------------------------------------------------------------------------------------------------- run
job: ScoringJob | None = st.session_state.get("_score_job")
if job is not None and job.dataset_id != ds.id:
    job = None if not job.running else job

# on a server with sign-in a run belongs to who started it: no run without a name to record
may_run = not identity.sign_in_configured() or identity.owner() is not None
if not may_run:
    st.caption("Sign in to score: a run is yours until you share it with the lab.")
may_spend = may_run and choice.ready and bool(dims) and spending_gate(est)
start_clicked = st.button("Start scoring", key="start_scoring", type="primary",
                          disabled=not may_spend or (job is not None and job.running))
if start_clicked:
    from pages import _spending

    cost = est.cost_usd_batch if use_batch else est.cost_usd
    start_clicked = may_spend and _spending.charge(cost, est.calls, choice.endpoint, f"score {ds.id} {method_name}")
if start_clicked:
    from evalcore.judge.runner import new_run_id

    several = endpoints is not None and len(endpoints) > 1 and not use_batch
    job = ScoringJob(run_id=new_run_id(ds.id, method_name, choice.endpoint.model),
                     spec=dataclasses.replace(spec, owner=identity.owner()),  # recorded as the run's owner
                     engine=EngineOptions(endpoints if several else choice.endpoint, api_key=choice.api_key,
                                          concurrency=int(concurrency), reprobe=bool(reprobe)),
                     store=store, batch=bool(use_batch))
    st.session_state["_score_job"] = job
    job.start()


def progress_line(job: ScoringJob) -> tuple[float, str]:
    p = job.progress
    if p is None:
        return 0.0, "starting (probing the endpoint)…"
    frac = p.done / p.total if p.total else 0.0
    eta = "" if p.eta_s is None else f" · ETA {p.eta_s:,.0f} s"
    return min(frac, 1.0), (f"{p.done:,} / {p.total:,} done · {p.cached:,} from cache · {p.failed:,} failed · "
                            f"{p.retrying:,} retrying{eta}")


@st.fragment(run_every=1.0)
def live_progress() -> None:
    j: ScoringJob | None = st.session_state.get("_score_job")
    if j is None:
        return
    frac, text = progress_line(j)
    st.progress(frac, text=text)
    if j.running:
        if st.button("Cancel", key="cancel_scoring"):
            j.cancel.set()
            st.caption("Cancelling: requests in flight finish, nothing half-written is kept.")
    else:
        st.rerun(scope="app")


if job is not None:
    st.subheader("Progress")
    st.text(f"Run {job.run_id}")
    if job.running:
        live_progress()
    elif not job.absorbed:
        # the thread has just finished: refresh the run lists everywhere (sidebar, Bias, Compare) once
        job.absorbed = True
        ui.forget_runs()
        st.session_state["local_run"] = job.run_id  # show the run just scored below
        if job.run is not None:  # and analyse it: it joins the sidebar's runs (pages/_nav.py adds it)
            st.session_state.setdefault("_pending_runs", []).append(job.run_id)
        st.rerun()
    else:
        frac, text = progress_line(job)
        st.progress(frac, text=text)
        if job.error:
            st.error(ui.esc(f"The run stopped: {score_views.plain_error(job.error)}"))
        elif job.cancel.is_set():
            st.warning("Cancelled. Finished judgments are kept; resume to score the rest.")
        else:
            outcome = score_views.run_outcome(job.run)  # how many scored; when none or few, why (in red)
            if outcome.level == "success":
                st.success("Done.")
                st.caption(outcome.text)
            else:
                getattr(st, outcome.level)(ui.esc(outcome.text))
        if job.error or job.cancel.is_set():
            first = job.params["endpoint"]
            elsewhere = trust.typed_key_elsewhere((first[0] if isinstance(first, list) else first).base_url,
                                                  choice.typed_for)
            if elsewhere:
                st.caption(ui.esc(elsewhere))
            if st.button("Resume", key="resume_scoring", disabled=not choice.ready or bool(elsewhere),
                         help="Continue the same run: finished judgments are not requested again"):
                job.resume(choice.api_key)
                st.rerun()

# ------------------------------------------------------------------------------------------------ local runs
def _resume_command(run) -> str:
    import shlex

    cfg, ep = run.config, run.config.get("endpoint") or {}
    args = ["python", "-m", "evalcore", "score", "--dataset", run.dataset_id, "--method", run.method,
            "--model", run.model, "--provider", ep.get("provider", "openai"), "--base-url", ep.get("base_url", "")]
    if cfg.get("spec"):  # the run recorded its spec: `score --run` resumes it as recorded (documents included)
        return " ".join(shlex.quote(str(a)) for a in args + ["--run", run.run_id])
    for dim in (cfg.get("criteria") or {}):
        args += ["--dimension", dim]
    if cfg.get("limit"):
        args += ["--limit", cfg["limit"]]  # without it the resume would score the whole dataset
    if cfg.get("requested_config"):
        args += ["--config", json.dumps(cfg["requested_config"])]
    return " ".join(shlex.quote(str(a)) for a in args + ["--run", run.run_id])


def _status_note(run) -> str:
    """Only what needs saying: a run whose process is gone is "interrupted" (resume it), not "running" forever."""
    status = run.config.get("status")
    return f"  [{status}]" if status in ("interrupted", "running", "cancelled", "stopped") else ""


st.subheader("Runs scored here")
local = [r for r in ctx.all_runs if r.origin != "published"]
if not local:
    st.info("No local run on this dataset yet.")
else:
    names = common_views.run_names(local)
    labels = {r.run_id: names[r.run_id] + _status_note(r) for r in local}
    rid = st.selectbox("Run", list(labels), key=url.key("local_run", list(labels)[0], options=labels),
                       format_func=labels.get)
    st.text(f"{labels[rid]}  (id {rid})")
    picked = next(r for r in local if r.run_id == rid)
    if picked.config.get("owner"):
        st.text(f"Started by {picked.config['owner']}"
                + (", shared with the lab" if picked.config.get("shared") else ", private"))
        if picked.config["owner"] == identity.owner():
            def _share(on: bool) -> None:
                store.share("runs", (rid,), picked.config["owner"], on)
                ui.forget_runs()

            identity.share_toggle("this run", "run", bool(picked.config.get("shared")), _share)
    if picked.config.get("status") in ("interrupted", "stopped"):
        st.caption(f"This run is {picked.config['status']}: its finished judgments are kept. Resume it from the "
                   "command line (answered requests come from the cache):")
        st.code(_resume_command(picked), language="bash", wrap_lines=True)
    run = ui.load_run(rid, "robust")
    info = run.summary()
    from evalcore.judge import batch as batch_mod

    batches = batch_mod.batch_rows(store, rid)
    if batches:
        import pandas as pd

        st.markdown("**Batches of this run (OpenAI Batch API)**")
        ui.table(pd.DataFrame([{"batch": b["batch_id"], "status": b["status"], "requests": b["total"] or 0,
                                "answered": b["completed"] or 0, "failed": b["failed"] or 0,
                                "collected": "yes" if b["collected"] else "no"} for b in batches]),
                 f"batches {rid}", "batches")
        if any(not b["collected"] for b in batches) and not (job is not None and job.running):
            recorded = (run.config.get("endpoint") or {}).get("base_url", "")
            mismatch = trust.typed_key_elsewhere(recorded, choice.typed_for)
            if mismatch:
                st.caption(ui.esc(mismatch))
            if st.button("Check and collect batch results", key="collect_batches",
                         disabled=not choice.ready or bool(mismatch)):
                try:
                    col = batch_mod.collect(rid, store=store, api_key=choice.api_key, wait=False)
                except Exception as e:  # noqa: BLE001 - shown with its reason
                    st.error(ui.esc(f"Could not collect: {score_views.plain_error(e)}"))
                else:
                    if col.run is None:
                        c = col.status.counts
                        st.info(f"Still running: {c['completed']:,} of {c['total']:,} answered. Check again later.")
                    else:
                        ui.forget_runs()
                        st.rerun()
    stats = run.config.get("stats") or {}
    used = stats.get("batch") if isinstance(stats.get("batch"), dict) and "prompt_tokens" in stats["batch"] else stats
    if used.get("prompt_tokens"):
        from evalcore.judge.cost import cost_table

        ident = run.config.get("endpoint") or {}
        with st.expander("Tokens and cost of this run (as the endpoint reported them)"):
            ui.table(cost_frame(cost_table(int(used.get("prompt_tokens", 0)), int(used.get("completion_tokens", 0)),
                                           cached_prompt_tokens=int(used.get("cached_prompt_tokens", 0)),
                                           model=ident.get("model", run.model),
                                           provider=ident.get("provider", "openai"))),
                     f"cost {rid}", "run_cost")
            st.caption(("Scored through the Batch API: the Batch API columns apply. " if used is not stats else "")
                       + "Requests answered from the cache cost nothing and are not counted.")
    if stats.get("endpoints"):
        import pandas as pd

        st.markdown("**Endpoints of this run** (requests answered by each, the capability probe included; "
                    "`Store.answers` lists every scoring request with the endpoint that answered it)")
        ui.table(pd.DataFrame([{"base URL": e["base_url"], "answered": e["answered"],
                                "failed attempts": e["failed_attempts"], "answered 429": e.get("rate_limited", 0),
                                "drained": "yes" if e["drained"] else "no", "why drained": e["drain_reason"] or "-"}
                               for e in stats["endpoints"]]), f"endpoints {rid}", "endpoints")
    if run.config.get("variant"):  # what the judge's contract changed in the method (evalcore.judge.contract)
        st.caption(ui.esc("As it ran on this judge: " + run.config["variant"]))
    r1, r2, r3 = st.columns(3)
    r1.metric("Judgments", info["judgments"])
    r2.metric("Failed", info["failed"])
    r3.metric("Dimensions", ui.esc(", ".join(info["dimensions"]) or "-"))
    st.markdown("**Failures with their raw replies**")
    fails = score_views.failures_table(run)
    if fails.empty:
        st.caption("No failures.")
    else:
        ui.table(fails, f"failures {rid}", "failures")
