"""Which endpoints may receive the server's API key.

On a shared lab server the key in the environment (``$OPENAI_API_KEY`` and friends) belongs to the operator. A
base URL that arrives from a share link or is typed by a visitor must never get it: one click would send
``Authorization: Bearer <server key>`` to any host. The rule, applied by ``JudgeClient`` to every request it makes
(scoring, step generation, batch submit, status, collect and cancel):

* a key the user typed in this session goes to the endpoint it was typed for;
* a key from the environment goes only to an endpoint the operator configured: ``$OPENAI_BASE_URL`` (or the
  OpenAI default ``https://api.openai.com/v1`` when unset) for ``$OPENAI_API_KEY``, ``$AZURE_OPENAI_ENDPOINT`` for
  ``$AZURE_OPENAI_API_KEY``, a local preset's own address for its variable (``$VLLM_API_KEY`` ->
  ``http://localhost:8000/v1``), and any URL listed in ``$EVALCORE_ALLOWED_ENDPOINTS`` (comma- or space-separated)
  for any of them; or to an endpoint built with ``operator_configured=True`` (the command line, whose flags and
  environment are the operator's own);
* otherwise a local server (vLLM, Ollama, llama.cpp) is sent the placeholder key ``not-needed``, and anything else
  is refused with ``UntrustedEndpoint`` before a connection is opened.

URLs are compared after normalisation (scheme and host lower-cased, default port dropped, trailing slash dropped):
the path must match exactly, so ``https://api.openai.com/v1.evil.example`` is not ``https://api.openai.com/v1``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from evalcore.judge.redact import split_credentials

ALLOWED_ENV = "EVALCORE_ALLOWED_ENDPOINTS"
OPENAI_DEFAULT = "https://api.openai.com/v1"

# The preset address each local server's key variable belongs to (evalcore.judge.client.PRESETS).
_LOCAL_DEFAULTS = {"VLLM_API_KEY": "http://localhost:8000/v1", "OLLAMA_API_KEY": "http://localhost:11434/v1",
                   "LLAMACPP_API_KEY": "http://localhost:8080/v1"}


class UntrustedEndpoint(RuntimeError):
    """The server's key would go to an endpoint its operator did not configure: refused, nothing sent."""


def normalize(url: str) -> str:
    """``scheme://host[:port]/path`` lower-cased where URLs are case-blind, default port and trailing slash dropped;
    userinfo, query and fragment are not part of an endpoint's address."""
    clean, _ = split_credentials((url or "").strip())
    parts = urlsplit(clean)
    scheme = (parts.scheme or "").lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and (scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    return f"{scheme}://{host}{parts.path.rstrip('/')}"


def host_of(url: str) -> str:
    """What the page shows as "requests go to": ``host[:port]`` (``?`` when the URL has none)."""
    n = normalize(url)
    return n.split("://", 1)[1].split("/", 1)[0] or "?"


def allowed_for(key_env: str, environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The normalised base URLs that the key in ``$key_env`` may be sent to."""
    env = os.environ if environ is None else environ
    urls = [u for u in re.split(r"[,\s]+", env.get(ALLOWED_ENV, "")) if u]
    if key_env == "OPENAI_API_KEY":
        urls.append(env.get("OPENAI_BASE_URL") or OPENAI_DEFAULT)
    elif key_env == "AZURE_OPENAI_API_KEY":
        if env.get("AZURE_OPENAI_ENDPOINT"):
            urls.append(env["AZURE_OPENAI_ENDPOINT"])
    elif key_env in _LOCAL_DEFAULTS:
        urls.append(_LOCAL_DEFAULTS[key_env])
    return frozenset(normalize(u) for u in urls)


def server_key_allowed(base_url: str, key_env: str, environ: Mapping[str, str] | None = None) -> bool:
    """True when the operator configured ``base_url`` for the key in ``$key_env``."""
    return normalize(base_url) in allowed_for(key_env, environ)


def refusal(base_url: str, key_env: str) -> str:
    """The one-line reason shown when the server's key may not go to ``base_url``."""
    return (f"{host_of(base_url)} is not an endpoint this server's operator configured, so the server's key "
            f"(${key_env}) is not sent there. Type your own API key to use it, or (operator) add its base URL to "
            f"${ALLOWED_ENV} or set it as $OPENAI_BASE_URL.")


def typed_key_elsewhere(recorded_url: str, typed_for_url: str | None) -> str | None:
    """A key typed for one endpoint never goes to another: the reason to refuse when a recorded endpoint (a batch
    run's, collected later) is not the one the key was typed for, else None."""
    if typed_for_url is None or normalize(recorded_url) == normalize(typed_for_url):
        return None
    return (f"This run's endpoint is {host_of(recorded_url)}, and the key you typed is for "
            f"{host_of(typed_for_url)}: a typed key is only sent to the endpoint it was typed for. To go on, set "
            f"the endpoint above to {recorded_url.rstrip('/')} and type that endpoint's key.")
