"""How long until the Alignment page for SummEval is ready in a browser: cold (fresh server) and warm (second visit).

    python bench/bench_app_ready.py [--cold 2] [--warm 3] [--resamples N]

"Ready" is the moment the correlation table (the table beside the ``csv_correlations`` download button) holds its
first row, measured in headless chromium from ``page.goto`` on. The app opens on SummEval with Shen et al.'s GPT-4
and ChatGPT RTS runs preselected, so the plain ``/alignment`` URL is the view a user lands on. The time until the
whole page has finished its script run (per-system, #CP, reliability, difficulty below the table) is printed beside.

COLD: the first visit after the server starts (new process: imports, data loading and every st.cache empty).
WARM: a second visit in a new browser context (a new Streamlit session; the server's caches are filled).
The store is a temporary file and no OPENAI_* variable is passed, as in the browser tests; bootstrap resamples are
the app's default (1000) unless --resamples says otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_WARM_S = 3.0
TARGET_COLD_S = 10.0


def _browser_helpers():
    """The browser tests' conftest, loaded by path (it is not a package): same app start, same chromium flags."""
    path = REPO_ROOT / "tests" / "browser" / "conftest.py"
    spec = importlib.util.spec_from_file_location("judgescope_browser_conftest", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def visit(browser, helpers, url: str, context=None) -> tuple[float, float]:
    """Seconds from navigation to (correlation table shown, script run finished), in a new tab of ``context``
    (a browser profile whose HTTP cache holds the app's scripts from an earlier visit) or of a new, empty one."""
    own = context is None
    if own:
        context = browser.new_context(viewport=helpers.VIEWPORT)
        context.set_default_timeout(180_000)
    try:
        page = context.new_page()
        block = page.locator('[data-testid="stHorizontalBlock"]').filter(
            has=page.locator(".st-key-csv_correlations"))
        # st.dataframe keeps an accessible table inside its canvas; st.table is a plain HTML table
        first_row = block.locator('[data-testid="stDataFrame"] tbody tr, [data-testid="stTable"] tbody tr').first
        t0 = time.perf_counter()
        page.goto(f"{url}/alignment")
        first_row.wait_for(state="attached", timeout=180_000)
        table_s = time.perf_counter() - t0
        helpers.wait_for_idle(page, timeout_ms=180_000, settle_ms=300)
        # the settle period is part of the wait, not of the page's work
        done_s = time.perf_counter() - t0 - 0.3
        problems = helpers.AppPage(page, url).problems()
        if problems:
            raise RuntimeError(f"the Alignment page shows errors: {[p[:200] for p in problems]}")
        page.close()
        return table_s, max(done_s, table_s)
    finally:
        if own:
            context.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cold", type=int, default=2, help="fresh servers to time (default 2)")
    ap.add_argument("--warm", type=int, default=3, help="warm visits per server (default 3)")
    ap.add_argument("--resamples", type=int, default=None, help="bootstrap resamples (default: the app's, 1000)")
    args = ap.parse_args(argv)

    helpers = _browser_helpers()
    reason = helpers.chromium_missing_reason()
    if reason:
        print(f"cannot run: {reason}")
        return 2
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = helpers.launch_chromium(pw)
        try:
            timings = measure(browser, helpers, args)
        finally:
            browser.close()
    print_report(args, *timings)
    return 0


def measure(browser, helpers, args: argparse.Namespace):
    """(cold, warm, warm_fresh, starts): each visit's (table shown, script finished) seconds, and each server's
    time to healthy."""
    cold: list[tuple[float, float]] = []
    warm: list[tuple[float, float]] = []  # server warm, browser cache warm: a researcher coming back to the page
    warm_fresh: list[tuple[float, float]] = []  # server warm, a new empty browser profile (every script re-fetched)
    starts: list[float] = []
    warmup = browser.new_page()  # chromium's own first-page costs are not the app's
    warmup.goto("about:blank")
    warmup.close()
    for i in range(args.cold):
        with tempfile.TemporaryDirectory(prefix="judgescope-bench-") as tmp:
            t0 = time.perf_counter()
            server = helpers.start_app(Path(tmp), resamples=args.resamples)
            starts.append(time.perf_counter() - t0)
            profile = browser.new_context(viewport=helpers.VIEWPORT)
            profile.set_default_timeout(180_000)
            try:
                cold.append(visit(browser, helpers, server.url, profile))
                for _ in range(args.warm):
                    warm.append(visit(browser, helpers, server.url, profile))
                for _ in range(args.warm):
                    warm_fresh.append(visit(browser, helpers, server.url))
            finally:
                profile.close()
                helpers.stop_app(server)
        print(f"  server {i + 1}: healthy after {starts[-1]:.2f} s; cold table {cold[-1][0]:.2f} s; "
              f"warm tables {', '.join(f'{w[0]:.2f}' for w in warm[-args.warm:])} s", flush=True)
    return cold, warm, warm_fresh, starts


def print_report(args: argparse.Namespace, cold, warm, warm_fresh, starts) -> None:
    resamples = args.resamples if args.resamples is not None else "app default (1000)"
    print()
    print(f"Alignment page, SummEval, 2 preselected runs, bootstrap resamples: {resamples}")
    print(f"{'':6} {'table shown (median)':>21} {'target':>8} {'ratio':>7} {'all runs (s)':>24} "
          f"{'script finished (median)':>26}")
    for name, values, target in (("COLD", cold, TARGET_COLD_S), ("WARM", warm, TARGET_WARM_S),
                                 ("WARM*", warm_fresh, TARGET_WARM_S)):
        tables = [v[0] for v in values]
        done = [v[1] for v in values]
        med = statistics.median(tables)
        verdict = "ok" if med < target else "MISSED"
        every = ", ".join(f"{t:.2f}" for t in tables)
        print(f"{name:6} {med:>19.2f} s {target:>6.1f} s {med / target:>7.2f} {every:>24} "
              f"{statistics.median(done):>24.2f} s   {verdict}")
    print(f"(server start to /_stcore/health, not counted above: median {statistics.median(starts):.2f} s)")
    print("COLD: fresh server, empty browser profile. WARM: server caches warm, a new tab in the same browser "
          "(its HTTP cache holds the app's scripts). WARM*: server warm, a new empty browser profile every time.")


if __name__ == "__main__":
    raise SystemExit(main())
