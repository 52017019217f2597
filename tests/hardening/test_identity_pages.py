"""The pages with sign-in by a trusted proxy header (issue 21, items 6, 8 and 13), under AppTest: the request's
headers are this test's (pages/_identity._request_headers, what ``st.context.headers`` gives a real session; the
browser test tests/browser/test_identity_browser.py sends them for real)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from evalcore.store import Store  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
HEADER = "X-Forwarded-User"

pytestmark = pytest.mark.usefixtures("first_start")  # tests/conftest.py: a fresh store, empty caches


@pytest.fixture
def signed_in_as(monkeypatch):
    """Sign-in by header on; ``signed_in_as(name)`` makes the next sessions' requests carry that user (None: none)."""
    from pages import _identity

    monkeypatch.setenv("EVALCORE_USER_HEADER", HEADER)
    who = {"name": None}
    monkeypatch.setattr(_identity, "_request_headers",
                        lambda: {HEADER: who["name"]} if who["name"] else {"Accept": "*/*"})

    def sign(name: str | None) -> None:
        who["name"] = name

    return sign


def page(path: str, at: AppTest | None = None, **query) -> AppTest:
    """``path`` opened in a new session (or in ``at``, prepared by the caller) with ``query`` as the link's."""
    at = AppTest.from_file(APP, default_timeout=90) if at is None else at
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_link_naming_alice_labels_as_bob_and_bobs_undo_leaves_alices_labels(first_start, signed_in_as):
    store = Store(first_start)
    dim = "coherence"
    from evalcore.datasets import load_dataset

    items = load_dataset("summeval").items["item_id"].astype(str).tolist()
    for item in items[:3]:
        store.save_label("summeval", item, dim, "alice", 4.0, owner="alice")
    signed_in_as("bob")
    at = page("pages/label.py", annotator="alice", label_dims=dim)
    field = at.text_input(key="annotator_signed_in")
    assert (field.value, field.disabled) == ("bob", True)
    assert any("Labelling as bob" in c.value for c in at.caption)
    at.button(key="label_rate_2").click().run()
    at.button(key="label_rate_3").click().run()
    assert not at.exception, [e.value for e in at.exception]
    rows = store.label_rows("summeval")
    assert rows.groupby("annotator").size().to_dict() == {"alice": 3, "bob": 2}
    for _ in range(4):  # more Undos than bob has labels
        at.button(key="label_undo").click().run()
    rows = store.label_rows("summeval")
    assert rows["annotator"].tolist() == ["alice"] * 3
    assert any("Nothing to undo" in c.value for c in at.caption)


def test_a_visitor_not_signed_in_cannot_label(first_start, signed_in_as):
    signed_in_as(None)
    at = page("pages/label.py", annotator="alice")
    assert at.text_input(key="annotator_signed_in").value == ""
    assert any("Sign in to label" in i.value for i in at.info)
    assert not [b for b in at.button if b.key and b.key.startswith("label_rate_")]
    assert Store(first_start).label_rows("summeval").empty


def test_alices_private_upload_is_not_in_bobs_dataset_list_until_shared(first_start, signed_in_as):
    from tests.hardening._judging import dataset

    store = Store(first_start)
    store.save_dataset(dataset(dataset_id="alice-upload"), owner="alice")
    signed_in_as("bob")
    at = page("pages/data.py", dataset="alice-upload")
    assert "alice-upload" not in at.sidebar.selectbox(key="dataset").options
    assert at.sidebar.selectbox(key="dataset").value == "summeval"  # the link's dataset is not his to open
    signed_in_as("alice")
    at = page("pages/data.py", dataset="alice-upload")
    assert at.sidebar.selectbox(key="dataset").value == "alice-upload"
    assert any(t.value == "Uploaded by alice, private" for t in at.text)
    at.toggle(key="share_dataset").set_value(True).run()
    assert store.owner_of("datasets", ("alice-upload",)) == ("alice", True)
    signed_in_as("bob")
    at = page("pages/data.py", dataset="alice-upload")
    assert at.sidebar.selectbox(key="dataset").value == "alice-upload"
    assert not [t for t in at.toggle if t.key == "share_dataset"]  # not his to unshare


def test_a_version_another_user_saved_is_not_the_prompt_of_a_new_session(first_start, signed_in_as):
    from evalcore.datasets import load_dataset
    from evalcore.judge import spec
    from evalcore.types import Criteria

    ds = load_dataset("summeval")
    paper = spec.default_criteria(ds, "coherence", "geval", None)
    store = Store(first_start)
    store.save_criteria(ds.id, Criteria("coherence", paper.task_introduction, "alice's definition", 1, 5,
                                        "1. Trust the judge."), owner="alice", steps_by="m-gen")
    signed_in_as("bob")
    at = page("pages/criteria.py", dimension="coherence")
    assert at.text_area(key="crit_definition").value == paper.definition
    assert any("No saved version" in i.value for i in at.info)  # alice's version is private
    signed_in_as("alice")
    at = page("pages/criteria.py", dimension="coherence")
    assert at.text_area(key="crit_definition").value == "alice's definition"  # her own choice
    versions = next(d.value for d in at.dataframe if "saved by" in d.value.columns)
    assert versions[["saved by", "steps"]].values.tolist() == [["alice", "generated by m-gen (19 chars)"]]


def test_without_sign_in_a_version_saved_by_another_session_is_not_the_default(first_start, monkeypatch):
    from evalcore.datasets import load_dataset
    from evalcore.judge import spec
    from evalcore.types import Criteria

    monkeypatch.delenv("EVALCORE_USER_HEADER", raising=False)
    ds = load_dataset("summeval")
    paper = spec.default_criteria(ds, "coherence", "geval", None)
    Store(first_start).save_criteria(ds.id, Criteria("coherence", paper.task_introduction, "another session's", 1,
                                                     5, ""))
    at = page("pages/criteria.py", dimension="coherence")
    assert at.text_area(key="crit_definition").value == paper.definition
    versions = next(d.value for d in at.dataframe if "saved by" in d.value.columns)
    assert versions["saved by"].tolist() == ["(no sign-in)"]  # listed, to load explicitly
    at.button(key="load_version").click().run()
    assert at.text_area(key="crit_definition").value == "another session's"


AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32, "client_id": "judgescope",
        "client_secret": "s", "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration"}


def oidc_page(path: str, user: dict, **query) -> AppTest:
    """A session of an app whose operator configured ``[auth]`` (st.login), as ``user`` (AppTest's st.user)."""
    at = AppTest.from_file(APP, default_timeout=90)
    at.secrets["auth"] = AUTH
    if user.get("is_logged_in") and not hasattr(at, "user"):
        pytest.skip("this Streamlit's AppTest cannot seed st.user (AppTest.user: newer than the 1.56 floor)")
    at.user = user
    return page(path, at, **query)


def test_with_oidc_a_visitor_is_offered_sign_in_and_cannot_label(first_start, monkeypatch):
    """Before signing in: the sidebar offers "Sign in", and the Label page takes no typed or linked name."""
    monkeypatch.delenv("EVALCORE_USER_HEADER", raising=False)
    at = oidc_page("pages/label.py", {"is_logged_in": False}, annotator="alice")
    assert at.sidebar.button(key="sign_in").label == "Sign in"
    assert any("Not signed in" in c.value for c in at.sidebar.caption)
    assert at.text_input(key="annotator_signed_in").value == ""
    assert any("Sign in to label" in i.value for i in at.info)
    assert Store(first_start).label_rows("summeval").empty


def test_with_oidc_the_signed_in_email_is_the_annotator(first_start, monkeypatch):
    monkeypatch.delenv("EVALCORE_USER_HEADER", raising=False)
    at = oidc_page("pages/label.py", {"is_logged_in": True, "email": "carol@lab.org", "sub": "1"},
                   annotator="alice", label_dims="coherence")
    assert any(t.value == "Signed in as carol@lab.org" for t in at.sidebar.text)
    assert at.sidebar.button(key="sign_out").label == "Sign out"
    assert at.text_input(key="annotator_signed_in").value == "carol@lab.org"
    at.button(key="label_rate_4").click().run()
    rows = Store(first_start).label_rows("summeval")
    assert rows[["annotator", "value"]].values.tolist() == [["carol@lab.org", 4.0]]
