"""Criteria: what the judge is asked (task introduction, definition, scale, evaluation steps), versioned."""

from __future__ import annotations

import dataclasses

import streamlit as st

from evalcore.methods import METHODS
from evalcore.types import Criteria
from evalcore.views import criteria as criteria_views
from evalcore.views import sharing
from pages import _identity as identity
from pages import _render as render
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


def load_into_fields(c: Criteria, ds, dim: str) -> None:
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
    load_into_fields(pending, ds, dim)
    generated = st.session_state.pop("_crit_steps_model", None)
    if generated is not None and generated[:2] == (ds.id, dim):
        steps_by()[(ds.id, dim)] = generated[2]
elif st.session_state.get("_crit_for") != (ds.id, dim) or any(f not in st.session_state for f in FIELDS):
    load_into_fields(ui.current_criteria(ds, dim, st.session_state.get("method") or "geval"), ds, dim)

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
scale_problem = criteria_views.scale_problem(criteria)
if scale_problem:
    st.error(scale_problem)

b1, b2 = st.columns([1, 3], vertical_alignment="bottom")
note = b2.text_input("Version note", key="version_note", placeholder="what changed (optional)")
if b1.button("Save version", key="save_criteria", type="primary",
             disabled=bool(scale_problem) or store is None or not may_save,
             help=None if may_save else "Sign in to save a version."):
    render.blocks([criteria_views.save_version(store, ds.id, criteria, note=note, owner=me,
                                               steps_by=steps_by().get((ds.id, dim), ""))])


# ------------------------------------------------------------------------------------------- generate the steps
def generation(ds, dim: str, criteria: Criteria, store, may_save: bool) -> None:
    """Ask the judge for steps under the spending rule of a Score run (pages/_spending.py: on a server with sign-in,
    signed in only; a costly or unknown-price request confirmed first; the operator's cap counted per user in the
    store), then show them before they go into the field."""
    from pages import _spending

    choice = ui.endpoint_form("criteria")
    ui.endpoint_help(choice)
    plan = criteria_views.steps_plan(ds.id, criteria, choice.endpoint, store) if choice.ready and store is not None else None
    if plan is not None and not may_save:
        st.caption("Sign in to generate steps: the request is sent on this server's key, as a scoring run is.")
    may_generate = plan is not None and may_save and _spending.consent("steps", plan.sig, plan.cost_usd, plan.calls,
                                                                       choice.endpoint)
    if st.button("Generate evaluation steps", key="generate_steps", disabled=not may_generate) and may_generate and \
            _spending.charge(plan.cost_usd, plan.calls, choice.endpoint, f"criteria {ds.id} {dim} steps"):
        try:
            with st.spinner(f"Asking {choice.endpoint.model} for evaluation steps…"):
                new = criteria_views.generate_steps(plan, choice.endpoint, choice.api_key, store,
                                                    spender=identity.owner(), what=f"criteria {ds.id} {dim} steps")
        except Exception as e:  # noqa: BLE001 - shown to the user with its reason; nothing is saved
            st.error(criteria_views.generation_error(e, choice.api_key))
        else:
            st.session_state["_crit_preview"] = (dim, new.steps)
            st.rerun()
    preview = st.session_state.get("_crit_preview")
    if preview is not None and preview[0] == dim:
        steps_preview(preview[1], choice, ds, dim, criteria)


def steps_preview(steps: str, choice, ds, dim: str, criteria: Criteria) -> None:
    # the preview's text through session state, not value=: Streamlit 1.56 (the floor) registers no state for a
    # disabled widget given only value=, and reading it back fails there
    st.session_state["crit_preview_text"] = steps
    st.text_area("Generated steps (preview: not saved, not in the field yet)", disabled=True, height=160,
                 key="crit_preview_text")
    render.blocks([w for w in [criteria_views.preview_warning(steps)] if w is not None])
    u1, u2 = st.columns(2)
    if u1.button("Use these steps", key="use_steps"):
        st.session_state["_crit_pending"] = dataclasses.replace(criteria, steps=steps)
        st.session_state["_crit_steps_model"] = (ds.id, dim, choice.endpoint.model)
        st.session_state.pop("_crit_preview", None)
        st.session_state["_crit_msg"] = "Generated steps put in the field: edit them, then press Save version."
        st.rerun()
    if u2.button("Discard", key="discard_steps"):
        st.session_state.pop("_crit_preview", None)
        st.rerun()


with st.expander("Generate evaluation steps with the judge (G-Eval auto-CoT)"):
    generation(ds, dim, criteria, store, may_save)
msg = st.session_state.pop("_crit_msg", None)
if msg:
    st.success(msg)


# ----------------------------------------------------------------------------------------------------- versions
def versions_part(view: criteria_views.VersionsView, ds, dim: str, store, me) -> None:
    """The diff of two versions (the newest against the one before it when a version was added), loading one, and
    sharing it."""
    hashes = view.hashes
    old_default, new_default = view.diff_defaults()
    seen = st.session_state.get("_versions_seen")
    if seen is not None and seen != (ds.id, dim, tuple(hashes)):
        # a version was added (or another dimension picked): compare the newest with the one before it
        st.session_state["diff_b"], st.session_state["diff_a"] = new_default, old_default
    st.session_state["_versions_seen"] = (ds.id, dim, tuple(hashes))
    v1, v2, v3 = st.columns([2, 2, 1], vertical_alignment="bottom")
    old = v1.selectbox("Diff from version", hashes, key=url.key("diff_a", old_default, options=hashes))
    new = v2.selectbox("to version", hashes, key=url.key("diff_b", new_default, options=hashes))
    chosen = view.version(new)
    if v3.button("Load this version", key="load_version"):
        st.session_state["_crit_pending"] = chosen["criteria"]
        if chosen["steps_by"]:  # a version saved again from it keeps who wrote its steps
            st.session_state["_crit_steps_model"] = (ds.id, dim, chosen["steps_by"])
        st.rerun()
    st.code(criteria_views.version_diff(store, ds.id, dim, old, new), language="diff")
    offer = sharing.criteria_offer(chosen, me)
    if offer is not None:
        identity.offer_toggle(offer, lambda on: sharing.share_criteria(store, ds.id, dim, new, me, on))


st.subheader("Saved versions")
versions = criteria_views.versions_view(store, ds.id, dim, viewer=identity.viewer(), me=me)
render.blocks(versions.blocks)
if versions.versions:
    versions_part(versions, ds, dim, store, me)

# --------------------------------------------------------------------------------------------- rendered prompt
st.subheader("Full prompt for one item")
method_names = list(METHODS)
m1, m2 = st.columns(2)
method_name = m1.selectbox("Method", method_names, key=url.key("method", method_names[0], options=method_names),
                           help=criteria_views.methods_help())
items = ds.items["item_id"].astype(str).tolist()[:200]
item = m2.selectbox("Item", items, key=url.key("prompt_item", items[0], options=items))
prompt, problem = criteria_views.prompt_or_problem(ds, method_name, item, criteria)
if problem is not None:
    render.blocks([problem])
else:
    st.code(prompt, language=None, wrap_lines=True)

ui.sources("000", "003", "002")
