"""Keeping secrets out of what is stored, shown and linked.

Two ways a secret reaches text the product keeps:

* credentials in a base URL (``http://alice:s3cret@host/v1``): ``split_credentials`` takes the userinfo out before
  the URL becomes part of an endpoint identity (cache keys, run configs) or of the Score page's link;
* a server that echoes the key in an error body (``HTTP 401: Invalid key: Bearer sk-...``): ``redact`` replaces the
  key itself, any ``Bearer ...`` token, anything shaped like an OpenAI-style key (``sk-...``) and URL userinfo with
  ``[redacted]`` in every error text that is stored (``judgments.reason``), exported, logged or shown.
"""

from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "[redacted]"

_BEARER_RE = re.compile(r"\b([Bb]earer|BEARER|Basic)(\s+)([A-Za-z0-9._~+/=*\-]{4,})")
_SK_RE = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-*]{6,}")
_USERINFO_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]+@")


class CredentialsInUrl(ValueError):
    """A base URL that carries ``user:password@``: refused where it cannot be moved to the key safely."""


def split_credentials(url: str) -> tuple[str, str | None]:
    """(the URL without userinfo, the secret it carried or None). The secret is the password, else the user name
    (``http://sk-abc@host`` puts the key where a user name goes)."""
    if not url or "@" not in url:
        return url, None
    parts = urlsplit(url.strip())
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    secret = parts.password if parts.password else parts.username
    return clean, unquote(secret) if secret else None


def refuse_credentials(url: str, *, where: str = "the base URL") -> None:
    """Raise ``CredentialsInUrl`` (a message that does not repeat the secret) when ``url`` carries userinfo."""
    clean, secret = split_credentials(url)
    if secret is not None:
        raise CredentialsInUrl(
            f"{where} carries credentials (user:password@): {clean} without them is what would be stored. "
            "Put the key in the API key's environment variable (e.g. OPENAI_API_KEY, or the variable named by "
            "--api-key-env) and give the URL without user:password@.")


def redact(text: str | None, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret, Bearer/Basic token, sk-style key and URL userinfo replaced by a mask."""
    if not text:
        return text or ""
    out = str(text)
    for s in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        out = out.replace(s, MASK)
    out = _BEARER_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", out)
    out = _SK_RE.sub(MASK, out)
    out = _USERINFO_RE.sub(lambda m: f"{m.group(1)}{MASK}@", out)
    return out


# The engine's own words for how a request failed (evalcore.judge.client._describe_error), before any text the
# endpoint wrote (its error message, a redirect's location, an exception's text)
_STATUS = re.compile(r"HTTP \d{3}(?: after retries)?|HTTP timeout|connection failed|malformed response body|"
                     r"the endpoint returned (?:HTML|text), not JSON|the endpoint redirected this request")


def status_line(text: str | None) -> str:
    """A failure as a short status line holding nothing the endpoint wrote: "HTTP 403", "connection failed",
    "HTTP timeout", ... (an internal service's error body, "admin token ...", is not read back through a page)."""
    m = _STATUS.search(text or "")
    return m.group(0) if m else "no usable answer"


__all__ = ["MASK", "CredentialsInUrl", "split_credentials", "refuse_credentials", "redact", "status_line"]
