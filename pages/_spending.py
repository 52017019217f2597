"""The spending rule on every page that sends on a paid endpoint (Score, Improve, Criteria): one decision
(evalcore.judge.spending.gate: the confirmation threshold, the operator's cap per user or for everyone not signed in,
counted in the store) shown the same way, and one charge at the click (spending.charge: checked again and recorded)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from evalcore.judge import spending, trust
from evalcore.views.format import consent_label
from pages import _identity as identity
from pages import _shared as ui


def _local(endpoint: Any) -> bool:
    from evalcore.judge.client import LOCAL_PROVIDERS

    return endpoint.provider in LOCAL_PROVIDERS


def consent(key: str, sig: tuple, cost_usd: float | None, calls: int, endpoint: Any) -> bool:
    """True when sending ``calls`` requests costing ``cost_usd`` to ``endpoint`` may start now: the cap refuses
    (shown as an error), a costly or unknown-price plan needs the box ``confirm_<key>`` ticked for this very plan
    (``sig``: a new plan asks again, a confirmation is never carried over)."""
    d = spending.gate(cost_usd, calls, local=_local(endpoint), spender=identity.owner(), store=ui.store_or_none())
    if not d.allowed or not d.needs_confirmation:
        st.session_state.pop(f"_sig_{key}", None)
        if not d.allowed:
            st.error(ui.esc(d.reason))
        return d.allowed
    if st.session_state.get(f"_sig_{key}") != sig:
        st.session_state[f"_sig_{key}"] = sig
        st.session_state[f"confirm_{key}"] = False
    return st.checkbox(consent_label(calls, trust.host_of(endpoint.base_url), cost_usd, d.reason),
                       key=f"confirm_{key}")


def charge(cost_usd: float | None, calls: int, endpoint: Any, what: str) -> bool:
    """At the click: the cap checked again and the cost recorded for this user (or for everyone not signed in);
    False (shown as an error) when it is refused now."""
    d = spending.charge(cost_usd, calls, local=_local(endpoint), spender=identity.owner(), store=ui.store_or_none(),
                        what=what)
    if not d.allowed:
        st.error(ui.esc(d.reason))
    return d.allowed
