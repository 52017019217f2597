"""Fixtures for the end-to-end browser tests: the Streamlit app in a subprocess, the loopback judge, headless chromium.

One app server and one browser serve the whole session, because starting either costs seconds and the module must
stay within a couple of minutes on two cores. Each test gets its own browser context (cookies, storage and the
Streamlit session are per context), so tests do not see each other's widget state.

The app runs against a temporary store (``EVALCORE_DB``) and with every ``OPENAI_*`` variable removed: the only judge
it can reach is the loopback server, and nothing the tests do touches the developer's own database.

The helpers here (``start_app``, ``launch_chromium``, ``wait_for_idle``) are plain functions as well as fixtures so
that ``bench/bench_app_ready.py`` starts the app and the browser exactly the same way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT_DIR = REPO_ROOT / "artifacts" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")

# Playwright cannot download its own browser here, so Debian's chromium is launched. Without the
# background-networking flags chromium tries to reach Google's services and the closed network refuses it loudly.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

APP_START_TIMEOUT_S = 90.0
# Streamlit reruns the whole script on each interaction; on two busy cores a rerun of a statistics page can take
# several seconds, so waits are generous and always end on a specific condition, never a fixed sleep.
UI_TIMEOUT_MS = 60_000
TEST_RESAMPLES = 50


def chromium_missing_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (install Debian's chromium: apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


def require_chromium() -> None:
    """Skip the calling test module when chromium is missing, except in CI where .ci/run installs it: fail there."""
    reason = chromium_missing_reason()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason}", allow_module_level=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AppServer:
    """A running ``streamlit run app.py``: its URL, process and the temporary store it writes to."""

    url: str
    process: subprocess.Popen
    db_path: Path
    log_path: Path

    def log_tail(self, n_chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:]
        except OSError:
            return ""


def app_env(db_path: Path, *, resamples: int | None = None) -> dict[str, str]:
    """The environment the app runs in: a temporary store and no OpenAI credentials or endpoints.

    ``resamples`` sets the app's default number of bootstrap resamples (``EVALCORE_RESAMPLES``, read by
    pages/_shared.py); None keeps the app's own default (1000), which is what a user gets.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_") and not k.startswith("AZURE_OPENAI")}
    env.pop("EVALCORE_RESAMPLES", None)
    if resamples is not None:
        env["EVALCORE_RESAMPLES"] = str(resamples)
    env["EVALCORE_DB"] = str(db_path)
    env["PYTHONUNBUFFERED"] = "1"
    # The app must find evalcore from the checkout even when the package is not pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def start_app(workdir: Path, *, resamples: int | None = None, timeout_s: float = APP_START_TIMEOUT_S) -> AppServer:
    """Start the app from the repo root on a free port with a store under ``workdir``; return once it is healthy."""
    workdir.mkdir(parents=True, exist_ok=True)
    db_path = workdir / "evalcore.db"
    log_path = workdir / "streamlit.log"
    port = free_port()
    cmd = [
        sys.executable, "-m", "streamlit", "run", "app.py",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]
    log = open(log_path, "wb")
    process = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=app_env(db_path, resamples=resamples), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()  # the child holds its own handle
    server = AppServer(url=f"http://127.0.0.1:{port}", process=process, db_path=db_path, log_path=log_path)
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {process.returncode} before becoming healthy:\n"
                               f"{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=2) as resp:
                if resp.status == 200:
                    return server
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        if time.monotonic() > deadline:
            stop_app(server)
            raise RuntimeError(f"streamlit was not healthy after {timeout_s:.0f} s:\n{server.log_tail()}")
        time.sleep(0.25)


def stop_app(server: AppServer) -> None:
    """Stop the streamlit process this module started (by its own pid), escalating to SIGKILL if it lingers."""
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=10)


@contextlib.contextmanager
def running_app(workdir: Path | None = None, *, resamples: int | None = None) -> Iterator[AppServer]:
    own_dir = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="judgebench-app-")) if own_dir else workdir
    server = start_app(workdir, resamples=resamples)
    try:
        yield server
    finally:
        stop_app(server)
        if own_dir:
            shutil.rmtree(workdir, ignore_errors=True)


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


def wait_for_idle(page, *, timeout_ms: int = UI_TIMEOUT_MS, settle_ms: int = 400) -> None:
    """Wait until the Streamlit script is not running and has stayed so for ``settle_ms``.

    ``stApp`` carries ``data-test-script-state`` ("initial", "running", "notRunning", "rerunRequested"). Right after
    a click the state can still read "notRunning" for a moment before the rerun starts, hence the settle period: a
    rerun that begins within it resets the wait.
    """
    app = page.locator('[data-testid="stApp"]')
    deadline = time.monotonic() + timeout_ms / 1000
    quiet_since: float | None = None
    while True:
        state = app.get_attribute("data-test-script-state", timeout=timeout_ms) if app.count() else None
        status_widget = page.locator('[data-testid="stStatusWidget"]').count()
        now = time.monotonic()
        if state == "notRunning" and not status_widget:
            quiet_since = quiet_since or now
            if (now - quiet_since) * 1000 >= settle_ms:
                return
        else:
            quiet_since = None
        if now > deadline:
            raise TimeoutError(f"the Streamlit script was still busy (state {state!r}) after {timeout_ms} ms")
        page.wait_for_timeout(100)


def screenshot(page, name: str) -> Path:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOT_DIR / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# --------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def app_server(tmp_path_factory) -> Iterator[AppServer]:
    require_chromium()
    # Few bootstrap resamples: the tests check that tables render, not the width of the intervals.
    server = start_app(tmp_path_factory.mktemp("app"), resamples=TEST_RESAMPLES)
    try:
        yield server
    finally:
        stop_app(server)


@pytest.fixture(scope="session")
def loopback():
    """The OpenAI-compatible test double, in this process (its HTTP server runs on a thread), reachable by the app."""
    from evalcore.testing.loopback import serve

    with serve(host="127.0.0.1", port=0) as server:
        yield server


@pytest.fixture(scope="session")
def browser():
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = launch_chromium(pw)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.set_default_timeout(UI_TIMEOUT_MS)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def page(context):
    return context.new_page()
