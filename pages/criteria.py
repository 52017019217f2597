"""Criteria: what the judge is asked (task introduction, definition, scale, evaluation steps), versioned."""

from __future__ import annotations

import dataclasses

import streamlit as st

from evalcore.judge.redact import redact
from evalcore.views import criteria as criteria_views
from evalcore.types import Criteria
from evalcore.methods import METHODS
from pages import _identity as identity
from pages import _shared as ui
from pages import _url as url

ctx = ui.context()
ds = ctx.dataset
dim = ctx.dimension
store = ui.store_or_none()  # None: the store cannot be read (the banner says why); presets still work
me = identity.owner()  # the signed-in user (None: sign-in off or not signed in)
may_save = not identity.sign_in_configured() or me is not None
st.title("Criteria")
st.caption(f"Dataset **{ui.esc(ds.id)}** · dimension **{ui.esc(dim)}** (change it in the sidebar)")

FIELDS = ("crit_intro", "crit_definition", "crit_min", "crit_max", "crit_steps")


def load_into_fields(c: Criteria) -> None:
    """Put a Criteria into the text fields (only before they are drawn in this run)."""
    st.session_state["crit_intro"] = c.task_introduction
    st.session_state["crit_definition"] = c.definition
    st.session_state["crit_min"] = int(c.scale_min)
    st.session_state["crit_max"] = int(c.scale_max)
    st.session_state["crit_steps"] = c.steps
    st.session_state["_crit_for"] = (ds.id, dim)
    steps_by().pop((ds.id, dim), None)  # a person's, until generated steps are taken (below)


def steps_by() -> dict:
    """(dataset, dimension) -> the model whose generated steps are in the field (recorded with a saved version)."""
    return st.session_state.setdefault("_crit_steps_by", {})


pending = st.session_state.pop("_crit_pending", None)
if pending is not None and pending.dimension == dim:
    load_into_fields(pending)
    generated = st.session_state.pop("_crit_steps_model", None)
    if generated is not None and generated[:2] == (ds.id, dim):
        steps_by()[(ds.id, dim)] = generated[2]
elif st.session_state.get("_crit_for") != (ds.id, dim) or any(f not in st.session_state for f in FIELDS):
    load_into_fields(ui.current_criteria(ds, dim, st.session_state.get("method") or "geval"))

# ------------------------------------------------------------------------------------------------------ presets
options = ui.preset_options(ds, dim)
if options:
    names = list(options)
    p1, p2 = st.columns([3, 1], vertical_alignment="bottom")
    preset = p1.selectbox("Preset from the papers", names, key=url.key("preset", names[0], options=names),
                          help="G-Eval's Appendix A prompts (SummEval, Topical-Chat), Shen et al.'s definitions, "
                               "Chen et al.'s FED definitions")
    if p2.button("Load preset", key="load_preset"):
        st.session_state["_crit_pending"] = options[preset]
        st.rerun()
else:
    st.caption(ui.esc(f"No paper preset defines {dim!r}: the criteria start from the dataset's description."))

# ------------------------------------------------------------------------------------------------------- fields
st.text_area("Task introduction", key="crit_intro", height=120)
st.text_area("Evaluation criteria (definition)", key="crit_definition", height=140)
s1, s2 = st.columns(2)
s1.number_input("Scale min", step=1, key="crit_min")
s2.number_input("Scale max", step=1, key="crit_max")
st.text_area("Evaluation steps", key="crit_steps", height=200,
             help="G-Eval's auto chain-of-thought: generate them with the judge below, then edit freely.")

criteria = Criteria(dimension=dim, task_introduction=st.session_state["crit_intro"],
                    definition=st.session_state["crit_definition"], scale_min=int(st.session_state["crit_min"]),
                    scale_max=int(st.session_state["crit_max"]), steps=st.session_state["crit_steps"])
ui.remember_criteria(ds, criteria)  # the Score page uses what is here
if criteria.scale_min >= criteria.scale_max:
    st.error("Scale min must be below scale max.")

b1, b2 = st.columns([1, 3], vertical_alignment="bottom")
note = b2.text_input("Version note", key="version_note", placeholder="what changed (optional)")
if b1.button("Save version", key="save_criteria", type="primary",
             disabled=criteria.scale_min >= criteria.scale_max or store is None or not may_save,
             help=None if may_save else "Sign in to save a version."):
    from evalcore.store import StoreError, store_message

    by = steps_by().get((ds.id, dim), "") if criteria.steps.strip() else ""
    try:
        h = store.save_criteria(ds.id, criteria, note=note, owner=me, steps_by=by)
    except StoreError as e:  # read-only, full, locked: said plainly, without the server's file path
        st.error(ui.esc(store_message(e)))
    else:
        st.success(f"Saved version {h}.")

# ------------------------------------------------------------------------------------------- generate the steps
with st.expander("Generate evaluation steps with the judge (G-Eval auto-CoT)"):
    choice = ui.endpoint_form("criteria")
    ui.endpoint_help(choice)
    may_generate = False
    if choice.ready and store is not None:
        # the same spending rule as a Score run (pages/_spending.py): on a server with sign-in, signed in only;
        # a costly or unknown-price request confirmed first; the operator's cap counted per user in the store
        from evalcore.judge import spending
        from evalcore.methods.geval import steps_request
        from pages import _spending

        steps_req = steps_request(dataclasses.replace(criteria, steps=""))
        calls, cost = spending.requests_cost([steps_req], choice.endpoint, store)
        if not may_save:
            st.caption("Sign in to generate steps: the request is sent on this server's key, as a scoring run is.")
        else:
            may_generate = _spending.consent("steps", (ds.id, dim, choice.endpoint.base_url, choice.endpoint.model,
                                                       hash(steps_req.messages)), cost, calls, choice.endpoint)
    if st.button("Generate evaluation steps", key="generate_steps", disabled=not may_generate) and may_generate and \
            _spending.charge(cost, calls, choice.endpoint, f"criteria {ds.id} {dim} steps"):
        from evalcore.judge.runner import generate_steps

        try:
            with st.spinner(f"Asking {choice.endpoint.model} for evaluation steps…"):
                # not saved here (dataset_id=None): the steps are shown first, and kept only when the user takes
                # them and saves a version (issue 18.12)
                new = generate_steps(dataclasses.replace(criteria, steps=""), endpoint=choice.endpoint,
                                     api_key=choice.api_key, store=store, dataset_id=None)
        except Exception as e:  # noqa: BLE001 - shown to the user with its reason; nothing is saved
            st.error(ui.esc(redact(f"Could not generate steps: {e or 'the request failed without a message'}", [choice.api_key])))
        else:
            st.session_state["_crit_preview"] = (dim, new.steps)
            st.rerun()
    preview = st.session_state.get("_crit_preview")
    if preview is not None and preview[0] == dim:
        # the preview's text through session state, not value=: Streamlit 1.56 (the floor) registers no state for
        # a disabled widget given only value=, and reading it back fails there
        st.session_state["crit_preview_text"] = preview[1]
        st.text_area("Generated steps (preview: not saved, not in the field yet)", disabled=True, height=160,
                     key="crit_preview_text")
        problem = criteria_views.steps_problem(preview[1])
        if problem:
            st.warning(ui.esc(f"Look before using them: {problem}."))
        u1, u2 = st.columns(2)
        if u1.button("Use these steps", key="use_steps"):
            st.session_state["_crit_pending"] = dataclasses.replace(criteria, steps=preview[1])
            st.session_state["_crit_steps_model"] = (ds.id, dim, choice.endpoint.model)
            st.session_state.pop("_crit_preview", None)
            st.session_state["_crit_msg"] = "Generated steps put in the field: edit them, then press Save version."
            st.rerun()
        if u2.button("Discard", key="discard_steps"):
            st.session_state.pop("_crit_preview", None)
            st.rerun()
msg = st.session_state.pop("_crit_msg", None)
if msg:
    st.success(msg)

# ----------------------------------------------------------------------------------------------------- versions
st.subheader("Saved versions")
versions = store.list_criteria_versions(ds.id, dim, viewer=identity.viewer()) if store is not None else []
if store is None:
    st.caption("Saved versions are kept in the local store, which cannot be read (see the message above).")
elif not versions:
    st.info("No saved version of these criteria yet: press **Save version**.")
else:
    st.caption("A saved version is used only when you load it (below): a new session starts from the paper's "
               "criteria" + (", or the newest version you saved." if me else "."))
    ui.table(criteria_views.versions_table(versions), f"criteria versions {ds.id} {dim}", "versions")
    hashes = [v["hash"] for v in versions]
    seen = st.session_state.get("_versions_seen")
    if seen is not None and seen != (ds.id, dim, tuple(hashes)):
        # a version was added (or another dimension picked): compare the newest with the one before it
        st.session_state["diff_b"] = hashes[0]
        st.session_state["diff_a"] = hashes[min(1, len(hashes) - 1)]
    st.session_state["_versions_seen"] = (ds.id, dim, tuple(hashes))
    v1, v2, v3 = st.columns([2, 2, 1], vertical_alignment="bottom")
    old = v1.selectbox("Diff from version", hashes,
                       key=url.key("diff_a", hashes[min(1, len(hashes) - 1)], options=hashes))
    new = v2.selectbox("to version", hashes, key=url.key("diff_b", hashes[0], options=hashes))
    chosen = next(v for v in versions if v["hash"] == new)
    if v3.button("Load this version", key="load_version"):
        st.session_state["_crit_pending"] = chosen["criteria"]
        if chosen["steps_by"]:  # a version saved again from it keeps who wrote its steps
            st.session_state["_crit_steps_model"] = (ds.id, dim, chosen["steps_by"])
        st.rerun()
    diff = store.diff_criteria(ds.id, dim, old, new)
    st.code(diff or "(no difference)", language="diff")
    if me and chosen["owner"] == me:
        def share(on: bool) -> None:
            store.share("criteria", (ds.id, dim, new), me, on)

        identity.share_toggle(f"version {new[:8]}", "criteria", chosen["shared"], share)

# --------------------------------------------------------------------------------------------- rendered prompt
st.subheader("Full prompt for one item")
method_names = list(METHODS)
m1, m2 = st.columns(2)
method_name = m1.selectbox("Method", method_names, key=url.key("method", method_names[0], options=method_names),
                           help=", ".join(f"{n}: {getattr(m, 'label', n)}" for n, m in METHODS.items()))
items = ds.items["item_id"].astype(str).tolist()[:200]
item = m2.selectbox("Item", items, key=url.key("prompt_item", items[0], options=items))
try:
    prompt = criteria_views.rendered_prompt(ds, method_name, item, criteria)
except Exception as e:  # noqa: BLE001 - a method that cannot render this item says why
    st.warning(ui.esc(f"{method_name} cannot render a prompt here: {e or 'no reason given'}"))
else:
    st.code(prompt, language=None, wrap_lines=True)

ui.sources("000", "003", "002")
