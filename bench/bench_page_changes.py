"""How long the app takes to settle after each page change a researcher makes on SummEval, cold and warm.

    python bench/bench_page_changes.py [--warm 2] [--repo PATH] [--compare PATH] [--resamples N]

In headless chromium, on the bundled SummEval with the app's default runs (Shen et al.'s GPT-4 and ChatGPT RTS):

  first open     ``/alignment`` in a new tab (a new Streamlit session)
  tab switch     the Alignment tabs "Per system & meta-correlation", then back to "Correlations"
  level change   the Level selector to "system", then back to "dataset"
  dataset change the sidebar's Dataset to Topical-Chat, then back to SummEval
  share link     a URL carrying the whole view (level system, the per-system tab) opened in a new tab

Each figure is the time from the action (the click on the option or tab, or ``page.goto``) until the Streamlit
script stopped running for good: the moment the page turned idle and stayed so for ``SETTLE_MS``. The page's state
is sampled inside the browser every 20 ms (``data-test-script-state`` on ``stApp`` and the status widget, the same
signals as tests/browser/conftest.py's ``wait_for_idle``), so the settle wait itself is not counted.

Where the time goes, printed beside: for an open, when Streamlit's page was drawn and when its first script run
started (before that it is the browser loading the app, not the app's Python); for every change, how much of it the
browser's own main thread spent in long tasks (> 50 ms: script evaluation, layout, charts drawn), from the
``longtask`` PerformanceObserver; and how much was the server's: the seconds the page's script state said
``running`` (Streamlit's script run on the server, from the click to idle). Profile the server side separately
(py-spy on the server's pid, or AppTest).

A round is one new browser tab doing all of the above in order. On each fresh server the first round is COLD (new
process, every st.cache empty, the first time each view is computed); the next ``--warm`` rounds are WARM (server
caches filled, each round a new Streamlit session in the same browser profile), reported as their median.

``--repo PATH`` times the app of another checkout (e.g. ``git worktree add /tmp/before <commit>``): its own
tests/browser/conftest.py starts its own app.py, against a temporary store of its own (``EVALCORE_DB``).
``--compare PATH`` times this checkout and PATH one after the other on the same machine and prints them side by
side. Targets: every change under 2 s warm, the first open under 6 s; every warm change under 1 s of server time.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_CHANGE_S = 2.0
TARGET_OPEN_S = 6.0
TARGET_SERVER_S = 1.0  # a warm change's script run on the server
SETTLE_MS = 600
NO_RERUN_S = 8.0
TIMEOUT_S = 180.0
# by the start of the option shown: the name ("Topical-Chat (USR turn-level)"), or the id in older checkouts
OTHER_DATASET = re.compile(r"^topical.chat", re.IGNORECASE)
SUMMEVAL = re.compile(r"^summeval", re.IGNORECASE)
STEPS = ["first open", "tab: per system", "tab: back to correlations", "level: system", "level: back to dataset",
         "dataset: Topical-Chat", "dataset: back to SummEval", "share link"]

# Samples (epoch ms, busy) into window.__busy whenever the page's busy state changes; installed before any page
# script so that a navigation's first run is seen too.
BUSY_PROBE = """
(() => {
  window.__busy = [];
  window.__states = [];
  const sample = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app ? app.getAttribute('data-test-script-state') : null;
    const states = window.__states;
    if (!states.length || states[states.length - 1][1] !== state)
      states.push([performance.timeOrigin + performance.now(), state]);
    const busy = !app || state !== 'notRunning' || !!document.querySelector('[data-testid="stStatusWidget"]');
    const log = window.__busy;
    if (!log.length || log[log.length - 1][1] !== busy) log.push([performance.timeOrigin + performance.now(), busy]);
  };
  setInterval(sample, 20);
  // the browser's own work (script evaluation, layout, charts drawn): tasks over 50 ms on its main thread
  window.__long = [];
  try {
    new PerformanceObserver(list => list.getEntries().forEach(e =>
      window.__long.push([performance.timeOrigin + e.startTime, e.duration]))).observe({type: 'longtask', buffered: true});
  } catch (e) {}
})();
"""


def _browser_helpers(repo: Path):
    """``repo``'s browser-test conftest, loaded by path: its ``start_app`` starts that checkout's app.py."""
    path = repo / "tests" / "browser" / "conftest.py"
    name = f"judgescope_browser_conftest_{abs(hash(str(repo)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def settled_after(page, t0_ms: float) -> float | None:
    """Seconds from ``t0_ms`` (epoch ms) until the page was last seen turning idle, once a rerun has been seen busy
    after ``t0_ms`` and the page has stayed idle for SETTLE_MS since. A change that shows no busy sample within
    NO_RERUN_S is None (not counted): a rerun answered between two samples, or a click the page did not take."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        log = page.evaluate("window.__busy || []")
        now = now_ms(page)
        if not log:
            page.wait_for_timeout(50)
            continue
        ran = any(busy and t >= t0_ms for t, busy in log) or (log and log[0][1] and log[0][0] >= t0_ms - 50)
        if ran and not log[-1][1] and now - log[-1][0] >= SETTLE_MS:
            long_ms = sum(d for t, d in page.evaluate("window.__long || []") if t0_ms <= t < log[-1][0])
            BROWSER_BUSY.append(long_ms / 1000)
            SERVER_RUN.append(running_s(page.evaluate("window.__states || []"), t0_ms, log[-1][0]))
            return max(0.0, (log[-1][0] - t0_ms) / 1000)
        if not ran and not log[-1][1] and now - t0_ms >= NO_RERUN_S * 1000:
            print(f"    (no rerun seen within {NO_RERUN_S:.0f} s of the change: not counted)", flush=True)
            return None
        if time.monotonic() > deadline:
            raise TimeoutError(f"the page was still busy {TIMEOUT_S:.0f} s after the change")
        page.wait_for_timeout(50)


def running_s(states: list, t0_ms: float, t1_ms: float) -> float:
    """Seconds within [t0_ms, t1_ms] during which the page's script state was ``running`` (the server's script)."""
    total, since = 0.0, None
    for t, state in list(states) + [[t1_ms, None]]:
        t = min(max(t, t0_ms), t1_ms)
        if since is not None:
            total += t - since
        since = t if state == "running" else None
    return total / 1000


def now_ms(page) -> float:
    return page.evaluate("performance.timeOrigin + performance.now()")


BROWSER_BUSY: list[float] = []  # per timed change: seconds of the browser's long tasks within it
SERVER_RUN: list[float] = []  # per timed change: seconds the script ran on the server within it
PHASES: dict[str, list[tuple[float, float, float]]] = {}  # step -> [(app shown, script started, total) s]


def timed_goto(page, url: str, step: str) -> float:
    """Seconds from ``page.goto`` to idle; the phases (Streamlit's page drawn, its first script run started) are kept
    in PHASES: what comes before the run is the browser loading the app, not the app's Python."""
    t0 = time.time() * 1000  # the page's clock starts with the navigation; epoch ms on both sides
    page.goto(url)
    total = settled_after(page, t0)
    states = page.evaluate("window.__states")
    shown = next((t for t, s in states if s is not None), t0)
    started = next((t for t, s in states if s == "running"), shown)
    PHASES.setdefault(step, []).append(((shown - t0) / 1000, (started - t0) / 1000, total))
    return total


def timed_click(page, locator) -> float | None:
    locator.wait_for(timeout=TIMEOUT_S * 1000)
    t0 = now_ms(page)
    locator.click()
    return settled_after(page, t0)


def timed_choose(page, label: str, option: str | re.Pattern) -> float | None:
    page.get_by_role("combobox", name=label, exact=True).click()
    exact = None if isinstance(option, re.Pattern) else True
    return timed_click(page, page.get_by_role("option", name=option, exact=exact).first)


def one_round(context, helpers, base: str) -> tuple[dict[str, float | None], dict[str, tuple[float, float]]]:
    """One new tab through every change: ({step: seconds}, {step: (seconds of the browser's long tasks, of the server's script run)})."""
    page = context.new_page()
    tab = lambda name: page.get_by_role("tab", name=name, exact=True)  # noqa: E731
    out: dict[str, float | None] = {}
    busy: dict[str, tuple[float, float]] = {}

    def timed(step: str, action) -> None:
        before = len(BROWSER_BUSY)
        out[step] = action()
        if out[step] is not None and len(BROWSER_BUSY) > before:
            busy[step] = (BROWSER_BUSY[-1], SERVER_RUN[-1])

    timed("first open", lambda: timed_goto(page, f"{base}/alignment", "first open"))
    timed("tab: per system", lambda: timed_click(page, tab("Per system & meta-correlation")))
    timed("tab: back to correlations", lambda: timed_click(page, tab("Correlations")))
    timed("level: system", lambda: timed_choose(page, "Level", "system"))
    timed("level: back to dataset", lambda: timed_choose(page, "Level", "dataset"))
    timed("dataset: Topical-Chat", lambda: timed_choose(page, "Dataset", OTHER_DATASET))
    timed("dataset: back to SummEval", lambda: timed_choose(page, "Dataset", SUMMEVAL))
    # the view a researcher would share: the system level on the per-system tab (not timed here)
    timed_choose(page, "Level", "system")
    timed_click(page, tab("Per system & meta-correlation"))
    link = page.url
    print(f"    share link: {link}", flush=True)
    _check(helpers, page, base)
    page.close()
    page = context.new_page()
    timed("share link", lambda: timed_goto(page, link, "share link"))
    _check(helpers, page, base)
    page.close()
    return out, busy


def _check(helpers, page, base: str) -> None:
    problems = helpers.AppPage(page, base).problems()
    if problems:
        raise RuntimeError(f"the page shows errors: {[p[:200] for p in problems]}")


def measure(browser, repo: Path, n_warm: int, n_servers: int, resamples: int | None) -> dict[str, dict[str, list]]:
    """{"cold"|"warm": {step: [seconds, ...]}} for the app of ``repo``."""
    helpers = _browser_helpers(repo)
    result: dict[str, dict[str, list]] = {k: {s: [] for s in STEPS}
                                          for k in ("cold", "warm", "busy_warm", "server_warm")}
    PHASES.clear()
    for i in range(n_servers):
        with tempfile.TemporaryDirectory(prefix="judgescope-bench-") as tmp:
            server = helpers.start_app(Path(tmp), resamples=resamples)
            context = browser.new_context(viewport=helpers.VIEWPORT)
            context.set_default_timeout(TIMEOUT_S * 1000)
            context.add_init_script(BUSY_PROBE)
            try:
                for r in range(1 + n_warm):
                    times, busy = one_round(context, helpers, server.url)
                    kind = "cold" if r == 0 else "warm"
                    for step, s in times.items():
                        if s is not None:
                            result[kind][step].append(s)
                    if kind == "warm":
                        for step, (b, srv) in busy.items():
                            result["busy_warm"][step].append(b)
                            result["server_warm"][step].append(srv)
                    phases = "; ".join(f"{k}: app shown {v[-1][0]:.2f}, run started {v[-1][1]:.2f}"
                                       for k, v in PHASES.items())
                    print(f"  {repo.name} server {i + 1} round {r + 1} ({kind}): "
                          + ", ".join(f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in times.items()) + f" ({phases})", flush=True)
            finally:
                context.close()
                helpers.stop_app(server)
    return result


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_table(results: list[tuple[str, dict]], load_note: str) -> None:
    print()
    print(f"Page changes on SummEval (Alignment page, default runs), seconds from the action to idle. {load_note}")
    header = f"{'change':28}" + "".join(f"{f'[{i}] cold':>12}{f'[{i}] warm':>12}" for i in range(len(results)))
    print(header + f"{'target warm':>13}")
    rows, server_rows = [], []
    for step in STEPS:
        target = TARGET_OPEN_S if step in ("first open", "share link") else TARGET_CHANGE_S
        cells = ""
        for _, res in results:
            cells += f"{_med(res['cold'][step]):>12.2f}{_med(res['warm'][step]):>12.2f}"
        verdict = "ok" if _med(results[0][1]["warm"][step]) < target else "MISSED"
        print(f"{step:28}{cells}{target:>11.1f} s  {verdict} ([0] warm)")
        rows.append(f"{step:28}" + "".join(f"{_med(res['busy_warm'][step]):>24.2f}" for _, res in results))
        srv = _med(results[0][1]["server_warm"][step])
        server_rows.append(f"{step:28}" + "".join(f"{_med(res['server_warm'][step]):>24.2f}" for _, res in results)
                           + ("" if step in ("first open", "share link")
                              else f"{TARGET_SERVER_S:>11.1f} s  {'ok' if srv < TARGET_SERVER_S else 'MISSED'}"))
    print("cold: the first round on a fresh server; warm: the median of the later rounds (new sessions, caches "
          "filled). The first open's target is 6 s; share link counts as an open.")
    print()
    print("Of the warm seconds above, the browser's own long tasks (main thread, > 50 ms each; median):")
    print(f"{'change':28}" + "".join(f"{f'[{i}] warm':>24}" for i in range(len(results))))
    print("\n".join(rows))
    print()
    print("Of the warm seconds above, the app's script running on the server (median; target for a change 1 s):")
    print(f"{'change':28}" + "".join(f"{f'[{i}] warm':>24}" for i in range(len(results))) + f"{'target':>13}")
    print("\n".join(server_rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path, default=REPO_ROOT, help="checkout whose app is timed (default: this one)")
    ap.add_argument("--compare", type=Path, default=None, help="a second checkout, timed after --repo")
    ap.add_argument("--warm", type=int, default=2, help="warm rounds per server (default 2)")
    ap.add_argument("--servers", type=int, default=1, help="fresh servers per checkout (default 1)")
    ap.add_argument("--resamples", type=int, default=None, help="bootstrap resamples (default: the app's, 1000)")
    ap.add_argument("--note", default="", help="what else the machine was doing, printed with the table")
    args = ap.parse_args(argv)

    repos = [args.repo.resolve()] + ([args.compare.resolve()] if args.compare else [])
    helpers = _browser_helpers(repos[0])
    reason = helpers.chromium_missing_reason()
    if reason:
        print(f"cannot run: {reason}")
        return 2
    from playwright.sync_api import sync_playwright

    results = []
    with sync_playwright() as pw:
        browser = helpers.launch_chromium(pw)
        try:
            warmup = browser.new_page()  # chromium's own first-page costs are not the app's
            warmup.goto("about:blank")
            warmup.close()
            for repo in repos:
                results.append((str(repo), measure(browser, repo, args.warm, args.servers, args.resamples)))
        finally:
            browser.close()
    for i, (label, _) in enumerate(results):
        print(f"[{i}] {label}")
    print_table(results, args.note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
