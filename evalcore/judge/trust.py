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
The address compared is read by the HTTP client's own parser and by ``urllib``, and a URL the two could read
differently is refused outright (``AmbiguousURL``): Python's ``int()`` reads a port written ``86_32``, ``+8632`` or
in Arabic-Indic digits, which ``urllib`` rejects, so a comparison on urllib's reading alone would judge one address
and connect to another. The client is then given the checked address itself (``canonical_base_url``).

The operator's environment is input too (``operator_entries``): an entry with ``user:password@`` or in an ambiguous
form is ignored and reported (``configuration_problems``), never trusted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from evalcore import settings
from evalcore.judge.redact import redact

ALLOWED_ENV = "EVALCORE_ALLOWED_ENDPOINTS"
OPENAI_DEFAULT = "https://api.openai.com/v1"

# The providers that are servers on the operator's own machines (vLLM, Ollama, llama.cpp, any other local one): they
# usually need no key (sent the placeholder ``not-needed``) and cost nothing per token. The one list: the client,
# the prices and the pages read it.
LOCAL_PROVIDERS = ("vllm", "ollama", "llamacpp", "local")

# The preset address each local server's key variable belongs to (evalcore.judge.client.PRESETS).
_LOCAL_DEFAULTS = {"VLLM_API_KEY": "http://localhost:8000/v1", "OLLAMA_API_KEY": "http://localhost:11434/v1",
                   "LLAMACPP_API_KEY": "http://localhost:8080/v1"}


class UntrustedEndpoint(RuntimeError):
    """The server's key would go to an endpoint its operator did not configure: refused, nothing sent."""


class AmbiguousURL(UntrustedEndpoint):
    """A base URL that URL parsers may read differently (a port written ``86_32``, ``+8632`` or in other digits, a
    space or a non-ASCII character in the address): refused for every key, since the address the trust rule checks
    must be the one the HTTP client connects to."""


@dataclass(frozen=True)
class Address:
    """Where a base URL sends requests, as the HTTP client reads it: scheme, host, port (None: the scheme's default),
    path. ``normal`` is the form compared with the operator's configuration."""

    scheme: str
    host: str
    port: int | None
    path: str

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"

    @property
    def normal(self) -> str:
        return f"{self.scheme}://{self.authority}{self.path.rstrip('/')}"


_DEFAULT_PORTS = {"http": 80, "https": 443}
# What an endpoint's address may be written with: a DNS name or IPv4 address, or a bracketed IPv6 literal, then an
# optional port of ASCII digits. Python's int() (which the HTTP client applies to the port) also reads "86_32",
# "+8632", " 8632" and non-ASCII digits, which urllib refuses and the old comparison then dropped.
_AUTHORITY_RE = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?")


def _client_url(url: str) -> Any:
    """The URL as the HTTP client under openai-python parses it (httpx2 in recent releases, httpx before)."""
    try:
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - older openai
        import httpx  # type: ignore[no-redef]
    return httpx.URL(url)


def address(url: str) -> Address:
    """The address ``url`` sends to, read by the HTTP client's own parser and by ``urllib``; ``AmbiguousURL`` when
    the URL is written in a form the two may read differently, or they do. Userinfo, query and fragment are no part
    of an address (credentials are refused elsewhere: evalcore.judge.redact)."""
    raw = (url or "").strip()
    why = _unusual_form(raw)
    if why:
        raise AmbiguousURL(f"The base URL {redact(raw)!r} is refused: {why}. Write it as scheme://host[:port]/path in "
                           "plain ASCII, e.g. http://localhost:8000/v1.")
    ours = urlsplit(raw)
    try:
        theirs = _client_url(raw)
        port_ours = ours.port
    except Exception as err:  # noqa: BLE001 - any parser's refusal is a refusal here
        raise AmbiguousURL(f"The base URL {redact(raw)!r} is refused: it cannot be parsed ({type(err).__name__})") from None
    scheme = ours.scheme.lower()
    a = Address(scheme, (ours.hostname or "").lower(), _explicit(scheme, port_ours), ours.path)
    b = Address(str(theirs.scheme).lower(), str(theirs.host).lower(), _explicit(scheme, theirs.port),
                theirs.raw_path.decode("ascii", "replace").split("?", 1)[0])
    if (a.scheme, a.host, a.port, a.path.rstrip("/")) != (b.scheme, b.host, b.port, b.path.rstrip("/")):
        raise AmbiguousURL(f"The base URL {redact(raw)!r} is refused: URL parsers read it differently "
                           f"({a.scheme}://{a.authority}{a.path} or {b.scheme}://{b.authority}{b.path})")
    return a


def _explicit(scheme: str, port: int | None) -> int | None:
    return None if port is None or _DEFAULT_PORTS.get(scheme) == port else port


def _unusual_form(url: str) -> str | None:
    """Why ``url`` is not in the plain form both parsers agree on, or None."""
    if not url.isascii():
        return "it holds a non-ASCII character (write the host in punycode and %-encode the path)"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "it holds a space or a control character"
    m = re.match(r"(?i)([a-z][a-z0-9+.-]*)://([^/?#]*)", url)
    if not m:
        return "it has no scheme://host"
    if m.group(1).lower() not in _DEFAULT_PORTS:
        return f"the scheme {m.group(1)!r} is not http or https"
    host_port = m.group(2).rsplit("@", 1)[-1]  # after any userinfo (refused elsewhere, never compared)
    auth = _AUTHORITY_RE.fullmatch(host_port)
    if not auth:
        return f"its host and port {host_port!r} are not a host name or IP address with an optional port of digits"
    if auth.group(1) is not None and not 0 < int(auth.group(1)) <= 65535:
        return f"the port {auth.group(1)} is out of range"
    return None


def normalize(url: str) -> str:
    """``scheme://host[:port]/path`` lower-cased where URLs are case-blind, default port and trailing slash dropped;
    userinfo, query and fragment are not part of an endpoint's address. ``AmbiguousURL`` as ``address``."""
    return address(url).normal


def canonical_base_url(url: str) -> str:
    """The base URL the client is given: the checked address itself (with the query the URL carried), so the host
    and port the key was judged for are the ones connected to."""
    a = address(url)
    query = urlsplit((url or "").strip()).query
    return f"{a.scheme}://{a.authority}{a.path}" + (f"?{query}" if query else "")


def identity_url(url: str) -> str:
    """The base URL as an endpoint's identity (cache keys, the learned contract, run records): one spelling for every
    way of writing the same address, so that ``HTTP://Host:80/v1/#again`` is ``http://host/v1`` and is no new,
    "not yet probed" endpoint. Scheme and host lower-cased, the default port, a trailing slash and the fragment (never
    sent) dropped; the query kept (it is sent). A URL in a form parsers read differently keeps its spelling less a
    trailing slash: nothing is ever sent to it (``AmbiguousURL``)."""
    try:
        a = address(url)
    except AmbiguousURL:
        return (url or "").strip().rstrip("/")
    query = urlsplit((url or "").strip()).query
    return a.normal + (f"?{query}" if query else "")


class LocalPreset(Protocol):
    """What ``local_refusal`` reads of an endpoint (``evalcore.judge.client.Endpoint``, which imports this module)."""

    @property
    def provider(self) -> str: ...

    @property
    def base_url(self) -> str: ...

    @property
    def api_key_env(self) -> str: ...

    @property
    def operator_configured(self) -> bool: ...


def shared_server(sign_in: bool, environ: Mapping[str, str] | None = None) -> bool:
    """A lab server: sign-in is configured (``sign_in``: a proxy header or OIDC, read by the pages), or the operator
    listed the endpoints the lab may use (``$EVALCORE_ALLOWED_ENDPOINTS``)."""
    return bool(sign_in) or bool(settings.current(environ).allowed_endpoints)


def local_refusal(endpoint: LocalPreset, *, shared: bool, environ: Mapping[str, str] | None = None) -> str | None:
    """Why a local preset's endpoint may not be sent to from a page of a lab server (``shared``), or None. A local
    preset needs no key, so without this rule any visitor could have the server post to any host and port of its
    network ("Check this judge", a run) and read what comes back: on a lab server it goes only to an address the
    operator configured (the preset's own default, ``$EVALCORE_ALLOWED_ENDPOINTS``)."""
    if not shared or endpoint.provider not in LOCAL_PROVIDERS or endpoint.operator_configured:
        return None
    if server_key_allowed(endpoint.base_url, endpoint.api_key_env, environ):
        return None
    return (f"{host_of(endpoint.base_url)} is not an endpoint this server's operator configured: on a shared server "
            f"a local preset ({endpoint.provider}) sends only to its own default address or to one listed in "
            f"${ALLOWED_ENV} (operator: add its base URL there).")


def host_of(url: str) -> str:
    """What the page shows as "requests go to": ``host[:port]`` (``?`` when the URL has none or is refused)."""
    try:
        return address(url).authority or "?"
    except AmbiguousURL:
        return "?"


# Each key variable of a provider preset (evalcore.judge.client.PRESETS) and the address its provider documents:
# the key may go there without further configuration, as $OPENAI_API_KEY may go to OpenAI's own API.
DOCUMENTED_DEFAULTS: dict[str, str] = {"OPENAI_API_KEY": OPENAI_DEFAULT, **_LOCAL_DEFAULTS}
DOCUMENTED_DEFAULTS["ANTHROPIC_API_KEY"] = "https://api.anthropic.com/v1"  # docs.anthropic.com/en/api/openai-sdk
DOCUMENTED_DEFAULTS["GEMINI_API_KEY"] = "https://generativelanguage.googleapis.com/v1beta/openai"  # gemini-api/docs/openai
DOCUMENTED_DEFAULTS["OPENROUTER_API_KEY"] = "https://openrouter.ai/api/v1"  # openrouter.ai/docs/api-reference
DOCUMENTED_DEFAULTS["LITELLM_API_KEY"] = "http://localhost:4000/v1"  # docs.litellm.ai/docs/proxy/quick_start
# The variables in which the operator names an endpoint for a key (besides $EVALCORE_ALLOWED_ENDPOINTS, for any key).
CONFIGURED_BY: dict[str, str] = {"OPENAI_API_KEY": "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY": "AZURE_OPENAI_ENDPOINT"}


@dataclass(frozen=True)
class OperatorEntry:
    """One endpoint the operator's environment names: the variable, the URL as written, and why it is not used
    (credentials in it, an ambiguous form), or None when it is."""

    variable: str
    url: str
    problem: str | None


def operator_entries(environ: Mapping[str, str] | None = None) -> list[OperatorEntry]:
    """Every endpoint named in the operator's environment, each checked. The configuration is input too: a URL with
    user:password@ would carry a secret wherever it is used (a replica field, a link), and a URL in a form parsers
    read differently would not be the endpoint the operator meant; neither is trusted."""
    s = settings.current(environ)
    named = [(ALLOWED_ENV, u) for u in re.split(r"[,\s]+", s.allowed_endpoints) if u]
    named += [(var, s.value(var)) for var in CONFIGURED_BY.values() if s.value(var)]
    out = []
    for var, url in named:
        problem = None
        if split_credentials_safely(url):
            problem = "it carries credentials (user:password@); give the key in its own variable"
        else:
            try:
                address(url)
            except AmbiguousURL as err:
                problem = str(err)
        out.append(OperatorEntry(var, redact(url), problem))
    return out


def configuration_problems(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per endpoint in the operator's environment that is ignored, and why (shown to the operator)."""
    return [f"${e.variable}: {e.url} is ignored: {e.problem}" for e in operator_entries(environ) if e.problem]


def allowed_for(key_env: str, environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The normalised base URLs that the key in ``$key_env`` may be sent to: the allow-list, the variable that
    configures this key's endpoint (or, when unset, the address its provider documents); entries with a problem
    (``operator_entries``) are left out."""
    own = CONFIGURED_BY.get(key_env)
    entries = [e for e in operator_entries(environ) if e.variable in (ALLOWED_ENV, own)]
    urls = {address(e.url).normal for e in entries if e.problem is None}
    if not (own and settings.current(environ).value(own)) and key_env in DOCUMENTED_DEFAULTS:
        urls.add(address(DOCUMENTED_DEFAULTS[key_env]).normal)
    return frozenset(urls)


def server_key_allowed(base_url: str, key_env: str, environ: Mapping[str, str] | None = None) -> bool:
    """True when the operator configured ``base_url`` for the key in ``$key_env`` (never for an ambiguous URL)."""
    try:
        return address(base_url).normal in allowed_for(key_env, environ)
    except AmbiguousURL:
        return False


def refusal(base_url: str, key_env: str) -> str:
    """The one-line reason shown when the server's key may not go to ``base_url``."""
    try:
        address(base_url)
    except AmbiguousURL as err:
        return f"{err} The server's key (${key_env}) is not sent there."
    return (f"{host_of(base_url)} is not an endpoint this server's operator configured, so the server's key "
            f"(${key_env}) is not sent there. Type your own API key to use it, or (operator) add its base URL to "
            f"${ALLOWED_ENV} or set it as $OPENAI_BASE_URL.")


def split_credentials_safely(url: str) -> bool:
    """True when ``url`` carries userinfo (``user:password@``), whatever else is wrong with it."""
    m = re.match(r"(?i)[a-z][a-z0-9+.-]*://([^/?#]*)", (url or "").strip())
    return bool(m and "@" in m.group(1))


def typed_key_elsewhere(recorded_url: str, typed_for_url: str | None) -> str | None:
    """A key typed for one endpoint never goes to another: the reason to refuse when a recorded endpoint (a batch
    run's, collected later) is not the one the key was typed for, else None."""
    if typed_for_url is None:
        return None
    try:
        if normalize(recorded_url) == normalize(typed_for_url):
            return None
    except AmbiguousURL as err:
        return str(err)
    return (f"This run's endpoint is {host_of(recorded_url)}, and the key you typed is for "
            f"{host_of(typed_for_url)}: a typed key is only sent to the endpoint it was typed for. To go on, set "
            f"the endpoint above to {recorded_url.rstrip('/')} and type that endpoint's key.")
