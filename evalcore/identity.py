"""Who is using a shared server, and what they may see (issue 21, items 6 and 13). No Streamlit here: the pages read
the request's headers or the OIDC claims and hand them to these functions.

Two ways to sign in, both the operator's choice, neither on by default:

* a trusted reverse proxy (oauth2-proxy, Apache/nginx auth, ...) that authenticates the visitor and puts their name
  in a header; the operator names that header in ``EVALCORE_USER_HEADER`` (e.g. ``X-Forwarded-User``). Only that
  header is read, and only when the variable is set: the app must sit behind the proxy, which overwrites whatever
  the visitor sent under that name. Any process that can reach the app's port directly (another user's job on the
  lab host) could send that header too; with ``EVALCORE_PROXY_SECRET`` set, the header is believed only from a
  request that also carries the proxy's secret in ``X-Evalcore-Proxy-Secret`` (the proxy adds it; a visitor never
  sees it).
* Streamlit's own OIDC sign-in (``st.login``), when the operator configured ``[auth]`` in ``secrets.toml``.

Without either (one researcher on a laptop) nothing is scoped: every row is everyone's, as before.

Visibility (:class:`Viewer`): a row written by a signed-in user (``owner``) is seen by that user only until they
share it with the lab; a row without an owner (written without sign-in, a store from an older release) and a shared
row are seen by everyone; bundled datasets and published runs are always seen.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from evalcore import settings

USER_HEADER_ENV = "EVALCORE_USER_HEADER"
PROXY_SECRET_ENV = "EVALCORE_PROXY_SECRET"
PROXY_SECRET_HEADER = "X-Evalcore-Proxy-Secret"
MIN_SECRET_CHARS = 16  # e.g. `openssl rand -hex 32`: long enough that guessing it is no way in

# what a user name may be: an e-mail address, a login or an OIDC subject (letters, digits, . _ @ + | : -), at most 128 characters. Anything
# else from a header is refused (not cleaned), so two spellings never become one user.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+|:-]{0,127}$")
# an HTTP header name (RFC 9110 token)
_HEADER = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


class IdentityError(ValueError):
    """A sign-in that cannot be used (a malformed header name or user name); ``str()`` says which and why."""


class UntrustedRequest(IdentityError):
    """A request naming a user without the proxy's secret: it did not come through the proxy. ``str()`` never holds
    the secret, nor what the request sent in its place."""


@dataclass(frozen=True)
class User:
    """A signed-in user: ``name`` is what the store records as owner and annotator; ``via``: "header" or "oidc"."""

    name: str
    via: str


@dataclass(frozen=True)
class Viewer:
    """Whose listing this is on a server with sign-in: ``user`` None for a visitor who has not signed in (they see
    what has no owner and what is shared). A function given no Viewer (None) scopes nothing: the CLI, a laptop."""

    user: str | None = None

    def sees(self, owner: str | None, shared: bool | int | None = False) -> bool:
        """The one visibility rule, as the store's SQL applies it (evalcore.store.owners.visible_sql)."""
        return not owner or bool(shared) or (self.user is not None and owner == self.user)


def valid_name(name: object) -> str:
    """``name`` stripped, when it is a usable user name; else IdentityError."""
    text = str(name or "").strip()
    if not _NAME.fullmatch(text):
        raise IdentityError(f"user name {text[:40]!r} is not usable: letters, digits and . _ @ + | : - only, starting "
                            "with a letter or digit, at most 128 characters")
    return text


def header_name(environ: Mapping[str, str]) -> str | None:
    """The trusted header the operator named in ``EVALCORE_USER_HEADER``, or None when sign-in by header is off."""
    raw = settings.current(environ).user_header  # $EVALCORE_USER_HEADER
    if not raw:
        return None
    if not _HEADER.fullmatch(raw):
        raise IdentityError(f"{USER_HEADER_ENV}={raw!r} is not an HTTP header name")
    return raw


def proxy_secret(environ: Mapping[str, str]) -> str | None:
    """The secret the proxy must send (``EVALCORE_PROXY_SECRET``), or None when the operator set none. A secret under
    MIN_SECRET_CHARS characters raises IdentityError (its value is not quoted)."""
    raw = settings.current(environ).proxy_secret  # $EVALCORE_PROXY_SECRET
    if not raw:
        return None
    if len(raw) < MIN_SECRET_CHARS:
        raise IdentityError(f"{PROXY_SECRET_ENV} is {len(raw)} characters long: use at least {MIN_SECRET_CHARS} "
                            "(e.g. openssl rand -hex 32)")
    return raw


def _values(headers: Mapping[str, str] | Iterable[tuple[str, str]], header: str) -> list[str]:
    """Every value of ``header`` in the request (matched case-insensitively, as HTTP does), repeats included."""
    if hasattr(headers, "get_all"):  # Streamlit's st.context.headers: its mapping view keeps one value of a repeat
        return [str(v) for v in headers.get_all(header)]
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return [str(v) for k, v in pairs if str(k).lower() == header.lower()]


def _from_the_proxy(headers: Mapping[str, str] | Iterable[tuple[str, str]], secret: str) -> bool:
    """The request carries the proxy's secret, once (compared in constant time)."""
    sent = _values(headers, PROXY_SECRET_HEADER)
    return len(sent) == 1 and hmac.compare_digest(sent[0].strip().encode("utf-8"), secret.encode("utf-8"))


def user_from_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]], header: str | None,
                      secret: str | None = None) -> User | None:
    """The user the trusted proxy named in ``header`` (matched case-insensitively, as HTTP does), or None when
    ``header`` is None (not configured) or absent from the request. ``headers``: a mapping, or the request's
    (name, value) pairs with repeats (a mapping keeps one value of a repeated header: say which). A header present
    with an unusable value raises IdentityError: a proxy that sends garbage is a misconfiguration to show, not an
    anonymous visitor. So does a request carrying the header more than once: a proxy that appends its header
    rather than replacing the visitor's (RFC 9110 5.3 allows a repeated field only for list-valued ones) would
    otherwise let the visitor's own value, first or last, decide who is signed in. ``secret``
    (:func:`proxy_secret`): the header is believed only from a request carrying it in PROXY_SECRET_HEADER; one
    naming a user without it raises UntrustedRequest (a local process that reached the app's port directly)."""
    if header is None:
        return None
    values = _values(headers, header)
    if secret is not None and any(v.strip() for v in values) and not _from_the_proxy(headers, secret):
        raise UntrustedRequest(f"the request names a user in {header} but does not carry the proxy's secret "
                               f"({PROXY_SECRET_HEADER}): it did not come through the sign-in proxy")
    if len(values) > 1:
        raise IdentityError(f"the request carries {header} {len(values)} times: the proxy must replace the "
                            "visitor's header, not add its own beside it")
    if not values or not values[0].strip():
        return None
    return User(valid_name(values[0]), "header")


def upload_id(digest: str, owner: str | None = None) -> str:
    """The id of an upload whose content (file bytes and how they are read) hashes to ``digest`` (hex): ``user-``
    and 12 hex digits. Without sign-in (``owner`` None) the content's own digest, as before (re-uploading the same
    file finds the same dataset); a signed-in user's upload is keyed by their name too, so one user's private upload
    never blocks another user's import of the same file, and no refusal tells them it exists."""
    if not owner:
        return f"user-{digest[:12]}"
    return "user-" + hashlib.sha256(f"{owner}\n{digest}".encode("utf-8")).hexdigest()[:12]


def user_from_claims(claims: Mapping[str, object]) -> User | None:
    """The user of an OIDC sign-in (``st.user``'s claims): the e-mail address, else the preferred user name, else the
    subject; None unless the claims say ``is_logged_in``."""
    if not claims or claims.get("is_logged_in") is not True:
        return None
    for key in ("email", "preferred_username", "sub"):
        value = claims.get(key)
        if value:
            return User(valid_name(value), "oidc")
    return None


__all__ = ["USER_HEADER_ENV", "PROXY_SECRET_ENV", "PROXY_SECRET_HEADER", "IdentityError", "UntrustedRequest", "User",
           "Viewer", "valid_name", "header_name", "proxy_secret", "user_from_headers", "user_from_claims", "upload_id"]
