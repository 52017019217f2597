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
VIEWPORT = {"width": 1600, "height": 1000}


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


def app_env(db_path: Path, *, resamples: int | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
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
    env.update(extra or {})  # e.g. a canary OPENAI_API_KEY (tests/browser/test_hardening_e2e.py)
    return env


def start_app(workdir: Path, *, resamples: int | None = None, timeout_s: float = APP_START_TIMEOUT_S,
              extra_env: dict[str, str] | None = None) -> AppServer:
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
        cmd, cwd=REPO_ROOT, env=app_env(db_path, resamples=resamples, extra=extra_env), stdout=log, stderr=subprocess.STDOUT,
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
    workdir = Path(tempfile.mkdtemp(prefix="judgescope-app-")) if own_dir else workdir
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


def screenshot(page, name: str, *, max_height: int = 6000) -> Path:
    """Save the whole page to artifacts/screenshots/<name>.png.

    Streamlit scrolls inside its main container, not the document, so ``full_page`` alone would stop at the
    viewport: the viewport is stretched to the content's height for the shot, then put back.
    """
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOT_DIR / f"{name}.png"
    size = page.viewport_size
    height = page.evaluate(
        """() => Math.max(0, ...[...document.querySelectorAll('[data-testid="stMain"], [data-testid="stMain"] *')]
                 .filter(e => e.scrollHeight > e.clientHeight).map(e => e.scrollHeight))"""
    )
    if size and height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(int(height) + 80, max_height)})
        page.wait_for_timeout(500)  # let charts and grids re-layout to the new size
    try:
        page.screenshot(path=str(path), full_page=True)
    finally:
        if size:
            page.set_viewport_size(size)
    return path


class AppPage:
    """A browser page on the app, with the few gestures the tests need, each ending when Streamlit is idle again.

    Locators follow what a user sees: widget labels (``aria-label`` on Streamlit's inputs), headings, option names.
    """

    def __init__(self, page, base_url: str) -> None:
        self.page = page
        self.base_url = base_url

    # -- navigation
    def open(self, path: str = "", heading: str | None = None) -> None:
        """Load ``/<path>`` (a new Streamlit session) and wait for its h1 ``heading`` and the end of the run."""
        self.page.goto(f"{self.base_url}/{path.lstrip('/')}")
        if heading:
            self.heading(heading).wait_for()
        self.idle()

    def nav(self, title: str) -> None:
        """Go to a page through the sidebar navigation: the same Streamlit session, its state kept."""
        self.page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
        self.heading(title).wait_for()
        self.idle()

    def heading(self, name: str, level: int = 1):
        return self.page.get_by_role("heading", name=name, exact=True, level=level)

    def idle(self) -> None:
        wait_for_idle(self.page)

    # -- widgets
    def choose(self, label: str, option: str) -> None:
        """Pick ``option`` in the selectbox labelled ``label`` (a combobox whose value is the shown option)."""
        box = self.page.get_by_role("combobox", name=label, exact=True)
        box.click()
        self.page.get_by_role("option", name=option, exact=True).click()
        self.idle()

    def add_to_multiselect(self, label: str, option: str) -> None:
        box = self.page.get_by_role("combobox", name=label, exact=True)
        box.click()
        box.fill(option)  # filter the list: long option lists are virtualised, the wanted one may be off-screen
        self.page.get_by_role("option", name=option, exact=True).click()
        self.page.keyboard.press("Escape")
        self.idle()

    def remove_from_multiselect(self, option: str) -> None:
        self.page.get_by_role("button", name=f"Remove {option}", exact=True).click()
        self.idle()

    def multiselect_values(self, label: str) -> list[str]:
        widget = self.page.locator('[data-testid="stMultiSelect"]').filter(
            has=self.page.get_by_role("combobox", name=label, exact=True))
        return widget.locator('[data-tag] span[title]').evaluate_all("els => els.map(e => e.title)")

    def selected_runs(self) -> list[str]:
        """The run ids selected in the sidebar, read from the URL (the chips show the runs' names, not their ids)."""
        from urllib.parse import parse_qs, urlparse

        return [r for r in parse_qs(urlparse(self.page.url).query, keep_blank_values=True).get("runs", []) if r]

    def select_only_run(self, run_id: str, name: str) -> None:
        """Drop every selected run, then pick ``run_id`` by the name its chip and option show."""
        for chip in self.multiselect_values("Runs"):
            self.remove_from_multiselect(chip)
        self.add_to_multiselect("Runs", name)
        assert self.selected_runs() == [run_id], (self.selected_runs(), run_id)

    def selected(self, label: str) -> str:
        return self.page.get_by_role("combobox", name=label, exact=True).input_value()

    def selected_dataset(self) -> str:
        """The id of the dataset in use, read from the URL (the picker shows the dataset's name, not its id)."""
        from urllib.parse import parse_qs, urlparse

        return (parse_qs(urlparse(self.page.url).query).get("dataset") or [""])[0]

    def type_into(self, label: str, text: str) -> None:
        """Fill a text or number input and commit it (Streamlit sends the value on Enter)."""
        field = self.page.get_by_label(label, exact=True)
        field.fill(text)
        field.press("Enter")
        self.idle()

    # -- reading
    def grid(self, locator) -> list[dict[str, str]]:
        """The cells an ``st.dataframe`` shows, read from the accessible table glide-data-grid keeps in its canvas.

        That table is virtualised: only rows and columns inside the grid's viewport are in it, so a row may lack
        its right-most columns. Cells are matched to headers by ``aria-colindex``.
        """
        locator.locator("tbody tr").first.wait_for(state="attached")  # the grid fills its table after mounting
        return locator.evaluate(
            """el => {
                const heads = {};
                el.querySelectorAll('thead th').forEach(th => {
                    heads[th.getAttribute('aria-colindex')] = th.textContent;
                });
                return [...el.querySelectorAll('tbody tr')].map(tr => {
                    const row = {};
                    tr.querySelectorAll('td').forEach(td => {
                        const i = td.getAttribute('aria-colindex');
                        row[heads[i] ?? i] = td.textContent;
                    });
                    return row;
                });
            }"""
        )

    def start_scoring(self) -> None:
        """Press "Start scoring", first ticking the spending confirmation when the page asks for one (a paid
        provider's model of unknown price, or an estimate above $EVALCORE_CONFIRM_USD: evalcore.judge.spending)."""
        confirm = self.page.get_by_text("I confirm", exact=False)
        if confirm.count():
            confirm.first.click()
            self.idle()
        self.page.get_by_role("button", name="Start scoring").click()

    def problems(self) -> list[str]:
        """Texts of Streamlit exception boxes and error alerts on the page (there should be none)."""
        boxes = self.page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
        # Streamlit's own "Page not found" modal (a URL path it could not resolve to a page).
        not_found = self.page.get_by_role("dialog").filter(has_text="Page not found")
        return boxes.all_inner_texts() + not_found.all_inner_texts()

    def screenshot(self, name: str) -> Path:
        return screenshot(self.page, name)


# --------------------------------------------------------------------------------------------------- fixtures


def pytest_itemcollected(item):
    """Every browser test is slow: each needs the app in its own server process and chromium beside the test's
    worker (30 of the 38 took over 20 s in a whole run on two shared cores, and their processes loaded the machine for
    the tests beside them). Left out of the quick pass, run by CI (python -m pytest -m slow)."""
    item.add_marker(pytest.mark.slow)


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


@pytest.fixture(scope="module")
def browser():
    # module scope, not session: Playwright's sync API keeps an asyncio loop running in this thread while it is
    # open, and the engine's tests (asyncio.run) that come after the browser tests would fail under it
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
    ctx = browser.new_context(viewport=VIEWPORT)
    ctx.set_default_timeout(UI_TIMEOUT_MS)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # Keep each phase's report on the test item, so the page fixture can tell whether the test failed.
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(context, request):
    page = context.new_page()
    yield page
    failed = getattr(request.node, "report_call", None)
    if failed is not None and failed.failed:
        # What the browser showed when the test failed: the first thing to look at in CI.
        with contextlib.suppress(Exception):
            screenshot(page, f"FAILED-{request.node.name}")


@pytest.fixture
def app(page, app_server) -> AppPage:
    """A fresh browser context's page on the session's app server."""
    return AppPage(page, app_server.url)


@pytest.fixture
def open_app(browser, app_server):
    """Factory: ``open_app()`` gives an AppPage in a NEW browser context (no cookies, no Streamlit session)."""
    contexts = []

    def make() -> AppPage:
        ctx = browser.new_context(viewport=VIEWPORT)
        ctx.set_default_timeout(UI_TIMEOUT_MS)
        contexts.append(ctx)
        return AppPage(ctx.new_page(), app_server.url)

    try:
        yield make
    finally:
        for ctx in contexts:
            ctx.close()


USER_HEADER = "X-Forwarded-User"  # the header the sign-in tests' app trusts (EVALCORE_USER_HEADER), as a proxy sends it


def as_user(browser, server: AppServer, name: str | None):
    """A new browser context that sends ``USER_HEADER: name`` on every request, the websocket's included, as the
    lab's proxy does (None: a visitor, no header), and an AppPage in it on ``server``: (context, page)."""
    ctx = browser.new_context(viewport=VIEWPORT, extra_http_headers={USER_HEADER: name} if name else {})
    ctx.set_default_timeout(UI_TIMEOUT_MS)
    return ctx, AppPage(ctx.new_page(), server.url)
