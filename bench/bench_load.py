"""N users at once: concurrent sessions opening the Alignment and Data pages on SummEval, and what they cost the server.

    python bench/bench_load.py                          # rounds of 1, 10 and 20 sessions, websocket clients
    python bench/bench_load.py --sessions 20 --client browser   # 20 headless chromium sessions
    python bench/bench_load.py --sessions 1,4 --no-profile      # a quick look on a busy machine
    python bench/bench_load.py --postgres start --sessions 50,100 --compare-sqlite   # several app servers

Several app servers (``--postgres URL``, or ``start`` for a throwaway server in a temporary directory as .ci/run starts
one): docker-compose.yml's topology as processes here: ``--servers`` app servers (default 2) on that store, signing
users in from ``X-Forwarded-User`` with the proxy's secret, ``--workers`` scoring workers (default 2, heartbeat 0.5 s,
stalled after 3 s), and nginx in front with deploy/nginx/judgescope.conf.template (basic auth, sticky by user; its
app servers' addresses put in) where nginx is installed; session i signs in as ``bench<i>``. Without nginx
(``--no-proxy``) session i goes to server i mod the number of servers. Each round prints the sessions served (every
page load with its first content and no error), first-content times (median, p95, max) and each server's CPU. Then a
scoring job of ``--job-items`` judgments (2,000: SummEval coherence and fluency, 1,000 items each, geval) on the
loopback judge (evalcore.testing.loopback, 5 ms a reply), queued as tests/test_workers.py queues one, one request at a
time; once a fifth is judged, the worker that is scoring it (the one that used the most CPU) is SIGKILLed and the
other takes the job over. It prints the judgments lost and duplicated, the requests asked again after the kill: the
one in flight at the kill (sent, its reply never received: asked again, as tests/test_workers.py explains) apart
from any other, which would be a request paid twice. ``--compare-sqlite``: then the same rounds on one app server
over a SQLite file. The exit status is 1 on any error, lost judgment or request paid twice.

The app starts as the browser tests start it (tests/browser/conftest.py ``start_app``: ``streamlit run app.py`` on a
free loopback port, an empty temporary store in ``EVALCORE_DB``, no ``OPENAI_*`` variable, the app's default 1000
bootstrap resamples). One session first opens each page on the fresh server (COLD: imports, SummEval loaded, every
cache empty). Then, for each N of ``--sessions``, N sessions start at the same moment; each opens both pages one
after the other as fresh page loads (a new Streamlit session each, like a reload or a shared link), half of them
Alignment first and half Data first. Every page is the app's default view (SummEval, Shen et al.'s GPT-4 and
ChatGPT RTS runs).

Clients (``--client``):
  ws       (default) Streamlit's own websocket protocol (``/_stcore/stream``, the protobuf messages its frontend
           sends): cheap enough that the clients barely compete with the server for the CPU, but no JavaScript runs
           and no static file is fetched.
  browser  headless Debian chromium through Playwright, one browser context per session (chromium's flags are the
           browser tests'): what a user sees, but chromium's own CPU on a 2-core machine is several times the
           server's, so it is measured and printed apart.

"First content" is the page's first table a researcher came for, the moment its CSV button (which is sent right after
the table) reaches the client: Alignment's correlation table (``csv_correlations``), Data's dimensions table
(``csv_dimensions``); in the browser, that table attached in the DOM (bench/bench_pages.py's locators). "Done" is the
end of the script run (websocket: ``script_finished``; browser: the app idle again). An error is an exception or error
box on the page, a page not found, a run that ends without its first content, a lost connection or a timeout.

``--file-watcher none`` starts the server with ``server.fileWatcherType = "none"``: every new session's first run
otherwise walks all of sys.modules to register file watches (streamlit/watcher/local_sources_watcher.py
``update_watched_modules``), which is CPU per page load that a server not editing its own code does not need.

Measured from /proc, never from the app: the server's CPU seconds (the streamlit process and any child), its peak
resident memory (sampled every 0.2 s over the process tree, and the kernel's own high-water mark VmHWM), the clients'
CPU (this process and its children other than the server: Playwright's driver and chromium) and what the rest of the
machine used meanwhile (busy time in /proc/stat less server and clients), which says how quiet the figures are.

Last, where the time goes: a WARM Alignment page run (``--profile-page``) under Streamlit's AppTest in this process
(the same script the server runs; a first run fills the caches, a second gives the script thread's CPU time, five
more are profiled in the script thread by sampling its stack every millisecond, or with ``--cprofile`` by cProfile),
top 15 functions by cumulative share, the app's own top 10, and the top 10 by own share.

Where the time went when this was written (websocket clients): a warm page load cost the server about 0.3-0.45 CPU s
(Alignment) and 0.3 (Data), a third to a half of it the file watcher's registration above, which runs on the
server's event loop and so holds back every session's messages while it runs; the Alignment script's own CPU went
mostly to evalcore.runs.run_version (see the profile). The server stays under one core (the GIL), so N concurrent
loads take about N times the CPU of one. In chromium, a page load cost the browser about eight times what it cost
the server.

Goal (a 2-core lab server): 20 sessions on SummEval, no error, every first content under 10 s on a quiet machine.
Everything runs on 127.0.0.1; every wait has a timeout, so the script ends by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
GOAL_SESSIONS = 20
GOAL_FIRST_S = 10.0
SAMPLE_EVERY_S = 0.2
PROFILED_RUNS = 5
CLK_TCK = os.sysconf("SC_CLK_TCK")

# page -> (Streamlit page name the frontend sends for its URL path, key of the CSV button beside its first table,
#          CSS locator of that table in the browser: bench/bench_pages.py's FIRST_CONTENT)
PAGES = {
    "alignment": ("alignment", "csv_correlations",
                  '[data-testid="stHorizontalBlock"]:has(.st-key-csv_correlations) [data-testid="stDataFrame"] tbody tr'),
    "data": ("", "csv_dimensions",
             '[data-testid="stHorizontalBlock"]:has(.st-key-csv_dimensions) [data-testid="stTable"] tbody tr'),
}


def _browser_helpers():
    """The browser tests' conftest, loaded by path (it is not a package): same app start, same chromium flags."""
    path = REPO_ROOT / "tests" / "browser" / "conftest.py"
    spec = importlib.util.spec_from_file_location("judgescope_browser_conftest", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------- /proc accounting
def _proc_stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of a live process, from /proc/<pid>/stat (proc(5))."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the command name may hold spaces; fields from "state" on
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK  # ppid, utime + stime


def _rss_kb(pid: int, key: str = "VmRSS") -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (all cores), from the first line of /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return (sum(values[:8]) - idle) / CLK_TCK  # user..steal; guest time is already inside user


def _descendants(root: int, parents: dict[int, int]) -> set[int]:
    tree, frontier = {root}, [root]
    while frontier:
        kids = [p for p, pp in parents.items() if pp in frontier and p not in tree]
        tree.update(kids)
        frontier = kids
    return tree


@dataclass
class Usage:
    """Cumulative CPU seconds at one moment, and peak resident memory since the last ``reset_peaks``."""

    server_cpu: float
    clients_cpu: float
    machine_busy: float
    server_peak_mb: float
    clients_peak_mb: float


class ProcSampler:
    """Samples the server's process tree and this process's other descendants (the clients) every SAMPLE_EVERY_S.

    A process's CPU is its last sampled utime + stime, kept after it exits, so a child that ended between two samples
    is counted up to its last sample. This process's own CPU (the websocket clients, Playwright's calls) is read
    with os.times()."""

    def __init__(self, server_pid: int, *more_pids: int) -> None:
        self.server_pid = server_pid
        self.roots = (server_pid, *more_pids)  # a cluster: every app server (and the proxy) counts as "server"
        self.me = os.getpid()
        self.cpu: dict[int, tuple[str, float]] = {}  # pid -> ("server" | "clients", CPU seconds)
        self.peak = {"server": 0.0, "clients": 0.0}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="proc-sampler", daemon=True)

    def __enter__(self) -> ProcSampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            self.sample()

    def sample(self) -> None:
        parents, cpu = {}, {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (st := _proc_stat(int(entry))) is not None:
                parents[int(entry)], cpu[int(entry)] = st
        server = set().union(*(_descendants(r, parents) for r in self.roots))
        clients = _descendants(self.me, parents) - server - {self.me}
        rss = {"server": sum(_rss_kb(p) for p in server) / 1024, "clients": sum(_rss_kb(p) for p in clients) / 1024}
        with self._lock:
            for group, pids in (("server", server), ("clients", clients)):
                for p in pids:
                    if p in cpu:
                        self.cpu[p] = (group, cpu[p])
                self.peak[group] = max(self.peak[group], rss[group])

    def reset_peaks(self) -> None:
        with self._lock:
            self.peak = {"server": 0.0, "clients": 0.0}

    def usage(self) -> Usage:
        self.sample()
        t = os.times()
        with self._lock:
            server = sum(c for g, c in self.cpu.values() if g == "server")
            children = sum(c for g, c in self.cpu.values() if g == "clients")
            return Usage(server, children + t.user + t.system, _machine_busy_s(), self.peak["server"],
                         self.peak["clients"])

    def server_hwm_mb(self) -> float:
        return _rss_kb(self.server_pid, "VmHWM") / 1024


# ------------------------------------------------------------------------------------------------- page loads
@dataclass
class Load:
    """One page load: seconds from the request to first content and to the end of the script run."""

    session: int
    page: str
    first_s: float | None = None
    done_s: float | None = None
    errors: list[str] = field(default_factory=list)


async def ws_load(url: str, session: int, page: str, timeout_s: float, headers: dict[str, str] | None = None) -> Load:
    """Open ``page`` as the Streamlit frontend does on a fresh page load: connect to /_stcore/stream, send one
    ``rerun_script`` with the page's name and an empty query string, read ForwardMsgs until the run has finished."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    page_name, csv_key, _ = PAGES[page]
    load = Load(session, page)
    t0 = time.perf_counter()
    deadline = t0 + timeout_s
    try:
        async with websockets.connect(url.replace("http://", "ws://") + "/_stcore/stream", subprotocols=["streamlit"],
                                      max_size=None, open_timeout=timeout_s, ping_interval=None,
                                      additional_headers=headers) as ws:
            msg = BackMsg()
            msg.rerun_script.query_string = ""
            msg.rerun_script.page_name = page_name
            await ws.send(msg.SerializeToString())
            while True:  # bounded by the deadline
                raw = await asyncio.wait_for(ws.recv(), timeout=max(0.1, deadline - time.perf_counter()))
                fwd = ForwardMsg()
                fwd.ParseFromString(raw)
                kind = fwd.WhichOneof("type")
                if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                    _read_element(fwd.delta.new_element, csv_key, load, t0)
                elif kind == "page_not_found":
                    load.errors.append(f"page not found: {fwd.page_not_found.page_name!r}")
                elif kind == "script_finished":
                    status = fwd.script_finished
                    if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                        continue  # the app asked for a rerun (st.rerun, st.switch_page): its next run follows
                    if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                        load.errors.append("the script did not compile")
                    load.done_s = time.perf_counter() - t0
                    break
    except (asyncio.TimeoutError, TimeoutError):
        load.errors.append(f"timeout after {timeout_s:.0f} s")
    except (OSError, websockets.WebSocketException) as e:
        load.errors.append(f"connection: {type(e).__name__}: {e}")
    if load.done_s is not None and load.first_s is None and not load.errors:
        load.errors.append("the run ended without its first table")
    return load


def _read_element(element, csv_key: str, load: Load, t0: float) -> None:
    from streamlit.proto.Alert_pb2 import Alert

    kind = element.WhichOneof("type")
    if kind == "download_button" and element.download_button.id.endswith("-" + csv_key) and load.first_s is None:
        load.first_s = time.perf_counter() - t0
    elif kind == "exception":
        load.errors.append(f"exception {element.exception.type}: {element.exception.message[:200]}")
    elif kind == "alert" and element.alert.format == Alert.ERROR:
        load.errors.append(f"error box: {element.alert.body[:200]}")


IDLE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector('[data-testid="stStatusWidget"]');
}"""
PROBLEMS = '[data-testid="stException"], [data-testid="stAlertContentError"]'


async def browser_load(context, url: str, session: int, page: str, timeout_s: float) -> Load:
    """Open ``page`` in a new tab of the session's browser context (a new Streamlit session); first content is its
    table attached in the DOM, done is the app idle for 300 ms (tests/browser/conftest.py ``wait_for_idle``)."""
    page_name, _, locator = PAGES[page]
    load = Load(session, page)
    tab = await context.new_page()
    t0 = time.perf_counter()
    try:
        await tab.goto(f"{url}/{page_name}", timeout=timeout_s * 1000)
        # the table, or an error box instead of it (a broken page must not cost the whole timeout)
        await tab.locator(f"{locator}, {PROBLEMS}").first.wait_for(state="attached", timeout=timeout_s * 1000)
        if await tab.locator(locator).count():
            load.first_s = time.perf_counter() - t0
        while time.perf_counter() - t0 < timeout_s:  # idle, and still idle 300 ms later (a rerun may start)
            await tab.wait_for_function(IDLE_JS, timeout=max(100, (timeout_s - (time.perf_counter() - t0)) * 1000))
            idle_at = time.perf_counter()
            await tab.wait_for_timeout(300)
            if await tab.evaluate(IDLE_JS):
                load.done_s = idle_at - t0
                break
        else:
            load.errors.append(f"still running after {timeout_s:.0f} s")
        problems = await tab.locator(PROBLEMS).all_inner_texts()
        load.errors += [f"on the page: {p[:200]}" for p in problems]
        if load.first_s is None and not load.errors:
            load.errors.append("the run ended without its first table")
    except Exception as e:  # Playwright's TimeoutError and a closed page alike: a counted failure of this load
        load.errors.append(f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
    finally:
        await tab.close()
    return load


# ------------------------------------------------------------------------------------------------------ rounds
@dataclass
class Round:
    n: int
    loads: list[Load]
    wall_s: float
    before: Usage
    after: Usage
    loadavg: float

    @property
    def server_cpu(self) -> float:
        return self.after.server_cpu - self.before.server_cpu

    @property
    def clients_cpu(self) -> float:
        return self.after.clients_cpu - self.before.clients_cpu

    @property
    def others_cpu(self) -> float:
        busy = self.after.machine_busy - self.before.machine_busy
        return max(0.0, busy - self.server_cpu - self.clients_cpu)

    @property
    def errors(self) -> int:
        return sum(bool(ld.errors) for ld in self.loads)


def order_of(session: int, pages: list[str]) -> list[str]:
    """Half the sessions open the pages in the given order, half in reverse: both pages are asked for at once."""
    return pages if session % 2 == 0 else pages[::-1]


async def run_round(n: int, pages: list[str], url: str, args, sampler: ProcSampler, browser=None) -> Round:
    viewport = {"width": 1600, "height": 1000}

    async def one_session(i: int) -> list[Load]:
        context = await browser.new_context(viewport=viewport) if browser is not None else None
        try:
            loads = []
            for page in order_of(i, pages):
                if context is None:
                    headers = args.auth(i) if getattr(args, "auth", None) else None
                    target = args.url_of(i) if getattr(args, "url_of", None) else url
                    loads.append(await ws_load(target, i, page, args.timeout, headers))
                else:
                    loads.append(await browser_load(context, url, i, page, args.timeout))
            return loads
        finally:
            if context is not None:
                await context.close()

    loadavg = os.getloadavg()[0]
    sampler.reset_peaks()
    before = sampler.usage()
    t0 = time.perf_counter()
    per_session = await asyncio.gather(*(one_session(i) for i in range(n)))
    wall = time.perf_counter() - t0
    after = sampler.usage()
    return Round(n, [ld for s in per_session for ld in s], wall, before, after, loadavg)


def _fmt(v: float | None) -> str:
    return "   -  " if v is None else f"{v:6.2f}"


def print_loads(title: str, rnd: Round) -> None:
    print(f"\n{title}: {rnd.n} session(s), wall {rnd.wall_s:.1f} s, load average at start {rnd.loadavg:.1f}")
    print(f"  {'session':>7}  {'page':<10} {'first (s)':>9} {'done (s)':>9}  errors")
    for ld in sorted(rnd.loads, key=lambda x: (x.session, x.page)):
        print(f"  {ld.session:>7}  {ld.page:<10} {_fmt(ld.first_s):>9} {_fmt(ld.done_s):>9}  "
              f"{'; '.join(ld.errors) if ld.errors else 'none'}")
    clients_mem = (f"peak RSS {rnd.after.clients_peak_mb:.0f} MB" if rnd.after.clients_peak_mb
                   else "in this process")
    print(f"  server: {rnd.server_cpu:.1f} CPU s ({rnd.server_cpu / rnd.wall_s:.2f} of a core), peak RSS "
          f"{rnd.after.server_peak_mb:.0f} MB; clients: {rnd.clients_cpu:.1f} CPU s, {clients_mem}; "
          f"rest of the machine: {rnd.others_cpu:.1f} CPU s "
          f"({rnd.others_cpu / rnd.wall_s:.2f} cores)")


def _stats(values: list[float]) -> str:
    if not values:
        return f"{'-':>6} {'-':>6} {'-':>6}"
    q = statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]
    return f"{statistics.median(values):6.2f} {q:6.2f} {max(values):6.2f}"


def print_table(rounds: list[Round], pages: list[str], hwm_mb: float) -> None:
    print("\nSummary (warm server; seconds; median / 90th percentile / max over the page loads of the round; server "
          "CPU in seconds, in all and per page load; core: the share of one core the server got; peak MB: the "
          "server's resident memory)")
    head = "".join(f" | {p + ' first':^20} | {p + ' done':^20}" for p in pages)
    print(f"{'N':>3} {'loads':>5} {'err':>4}{head} | {'wall':>6} {'server CPU':>10} {'/load':>5} {'core':>5} "
          f"{'peak MB':>7} "
          f"| {'clients CPU':>11} {'others CPU':>10}")
    for r in rounds:
        cells = ""
        for p in pages:
            mine = [ld for ld in r.loads if ld.page == p]
            cells += (f" | {_stats([ld.first_s for ld in mine if ld.first_s is not None])}"
                      f" | {_stats([ld.done_s for ld in mine if ld.done_s is not None])}")
        print(f"{r.n:>3} {len(r.loads):>5} {r.errors:>4}{cells} | {r.wall_s:6.1f} {r.server_cpu:10.1f} "
              f"{r.server_cpu / len(r.loads):5.2f} {r.server_cpu / r.wall_s:5.2f} {r.after.server_peak_mb:7.0f} | "
              f"{r.clients_cpu:11.1f} "
              f"{r.others_cpu:10.1f}")
    print(f"Server's memory high-water mark over the whole run (VmHWM of the streamlit process): {hwm_mb:.0f} MB")
    goal = [r for r in rounds if r.n >= GOAL_SESSIONS]
    for r in goal:
        worst = max((ld.first_s for ld in r.loads if ld.first_s is not None), default=float("inf"))
        met = r.errors == 0 and worst < GOAL_FIRST_S
        print(f"Goal ({GOAL_SESSIONS} sessions, no error, every first content < {GOAL_FIRST_S:.0f} s): "
              f"{'met' if met else 'MISSED'} at N={r.n} (errors {r.errors}, slowest first content {worst:.2f} s); "
              f"the rest of the machine used {r.others_cpu / r.wall_s:.2f} cores meanwhile"
              + ("" if r.others_cpu / r.wall_s < 0.2 else ": NOT a quiet machine, the times include that contention"))
    if not goal:
        print(f"(no round of {GOAL_SESSIONS} sessions: the goal is not judged)")


# ---------------------------------------------------------------------------------------------------- profile
class StackSampler:
    """A sampling profiler of one thread: every ``interval_s`` the thread's stack (sys._current_frames) is recorded.

    A function's cumulative share is the fraction of samples with it anywhere on the stack, its own share the
    fraction with it on top. Unlike cProfile (whose cost per call made a warm Alignment run five times slower here,
    most of it on pandas' many small calls), sampling leaves the run's proportions as they are. A process descheduled
    by other work on the machine is not sampled either, so the shares follow the thread's own running time."""

    def __init__(self, interval_s: float = 0.001) -> None:
        self.interval_s = interval_s
        self.cumulative: dict[str, int] = {}
        self.own: dict[str, int] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def enable(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=(threading.get_ident(),), daemon=True)
        self._thread.start()

    def disable(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self, ident: int) -> None:
        while not self._stop.wait(self.interval_s):
            frame = sys._current_frames().get(ident)
            seen = set()
            top = True
            while frame is not None:
                code = frame.f_code
                name = f"{_short_path(code.co_filename)}:{code.co_firstlineno}({code.co_name})"
                if top:
                    self.own[name] = self.own.get(name, 0) + 1
                    top = False
                if name not in seen:  # a recursive function counts once per sample
                    self.cumulative[name] = self.cumulative.get(name, 0) + 1
                    seen.add(name)
                frame = frame.f_back
            self.samples += 1

    def print_top(self, cpu_s: float, top: int = 15) -> None:
        """Top functions by cumulative share, the app's own (pages/, evalcore/) by cumulative share, and all by own
        share; seconds are the shares of ``cpu_s`` (the CPU time of one unprofiled run)."""
        if not self.samples:
            print("  (no sample)")
            return
        whole = [n for n, c in self.cumulative.items() if c >= 0.98 * self.samples]
        print(f"  {self.samples} samples; {len(whole)} frames span the whole run (Streamlit's script runner, left out)")
        app = {f: c for f, c in self.cumulative.items() if f.startswith(("pages", "evalcore", "app.py"))}
        for title, counts, n in (("cumulative share", self.cumulative, top), ("cumulative share, the app's own "
                                 "functions", app, 10), ("own share", self.own, 10)):
            rows = sorted(((c, f) for f, c in counts.items() if f not in whole), reverse=True)[:n]
            print(f"  top {n} by {title}:\n  {'share':>8} {'~CPU s':>8}  function")
            for c, f in rows:
                print(f"  {c / self.samples:8.1%} {c / self.samples * cpu_s:8.3f}  {f}")


def _short_path(path: str) -> str:
    for prefix in (str(REPO_ROOT) + os.sep, os.path.dirname(os.__file__) + os.sep):
        if path.startswith(prefix):
            return path[len(prefix):]
    return path.split("site-packages" + os.sep, 1)[-1]


def profile_warm_page(helpers, workdir: Path, resamples: int | None, page: str, use_cprofile: bool) -> None:
    """Where a warm run of ``page`` spends its time, under AppTest in this process (the same script the server runs),
    profiled in the script thread (ScriptRunner._run_script, the script thread's body, is wrapped). The first run
    fills the caches (st.cache_data / st.cache_resource are process-wide); the second, unprofiled, gives the script
    thread's CPU time; the third is profiled: by StackSampler, or by cProfile on the thread's CPU clock."""
    import cProfile
    import pstats

    os.environ.clear()
    os.environ.update(helpers.app_env(workdir / "profile.db", resamples=resamples))
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    cold = _script_run(page)
    warm = _script_run(page)
    profiler = cProfile.Profile(time.thread_time) if use_cprofile else StackSampler()
    profiled_runs = [_script_run(page, profiler) for _ in range(PROFILED_RUNS)]  # more samples of a short run
    profiled = (statistics.mean(r[0] for r in profiled_runs), statistics.mean(r[1] for r in profiled_runs), [])
    problems = cold[2] + warm[2] + [p for r in profiled_runs for p in r[2]]
    print(f"\nWhere the time goes: the {page.capitalize()} page's script under AppTest in this process (resamples: "
          f"{resamples or 'app default'}). First run (caches empty): {cold[0]:.2f} s wall, {cold[1]:.2f} CPU s; "
          f"warm run: {warm[0]:.2f} s wall, {warm[1]:.3f} CPU s of the script thread; {PROFILED_RUNS} profiled warm "
          f"runs: {profiled[1]:.3f} CPU s each ({'cProfile, thread CPU seconds' if use_cprofile else 'sampled'})"
          + (f"; problems: {problems}" if problems else ""))
    if use_cprofile:
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(15)
        stats.sort_stats("tottime").print_stats(10)
    else:
        profiler.print_top(warm[1])


def _script_run(page: str, profiler=None) -> tuple[float, float, list[str]]:
    """A new AppTest session opening ``page``: (wall seconds, CPU seconds of the script thread, errors shown)."""
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    from streamlit.testing.v1 import AppTest

    cpu = []
    original = ScriptRunner._run_script

    def measured(self, rerun_data):
        t0 = time.thread_time()
        if profiler is not None:
            profiler.enable()
        try:
            return original(self, rerun_data)
        finally:
            if profiler is not None:
                profiler.disable()
            cpu.append(time.thread_time() - t0)

    at = AppTest.from_file(str(REPO_ROOT / "app.py"), default_timeout=600)
    ScriptRunner._run_script = measured
    try:
        t0 = time.perf_counter()
        at.switch_page(f"pages/{page}.py").run()
        wall = time.perf_counter() - t0
    finally:
        ScriptRunner._run_script = original
    return wall, sum(cpu), [str(e.value)[:200] for e in list(at.exception) + list(at.error)]


# --------------------------------------------------------------------------- several app servers on PostgreSQL
NGINX_TEMPLATE = REPO_ROOT / "deploy" / "nginx" / "judgescope.conf.template"
SCORE_ITEMS = 2000  # --job-items: SummEval, coherence and fluency, 1,000 items each
KILL_AFTER = 0.2  # the share of the judgments written before the busy worker is killed
# the throwaway server's connection limit: an app server holds one store connection per script thread it ever ran
# (evalcore.store.connection keeps each thread's), i.e. per page load, until it stops; the rounds print how many
PG_MAX_CONNECTIONS = 1000


def nginx_conf(servers: list[str], listen: int, htpasswd: Path, secret: str, workdir: Path) -> str:
    """docker-compose.yml's proxy config (deploy/nginx/judgescope.conf.template) run outside Docker: the secret the
    image's envsubst would fill in, these app servers instead of app1/app2, a loopback port, files under workdir."""
    body = NGINX_TEMPLATE.read_text().replace("${EVALCORE_PROXY_SECRET}", secret)
    body = body.replace("listen 80;", f"listen 127.0.0.1:{listen};").replace("/etc/nginx/htpasswd", str(htpasswd))
    upstream = "".join(f"    server {s} max_fails=0;\n" for s in servers)
    body = body.replace("    server app1:8501 max_fails=0;\n    server app2:8501 max_fails=0;\n", upstream)
    temp = "".join(f"{k}_temp_path {workdir / k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    user = "user root;\n" if os.getuid() == 0 else ""  # its workers read the htpasswd under a root-only directory
    return (f"{user}pid {workdir / 'nginx.pid'};\nworker_processes 1;\nevents {{ worker_connections 4096; }}\n"
            f"http {{\naccess_log off;\n{temp}{body}}}\n")


def _as_postgres(cmd: list[str], check: bool = True) -> None:
    """A PostgreSQL binary, as the postgres user when this is root (initdb refuses root), as .ci/run runs it."""
    import shlex
    import subprocess

    if os.getuid() == 0:
        cmd = ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(cmd)]
    subprocess.run(cmd, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)


class ThrowawayPostgres:
    """A PostgreSQL cluster in a temporary directory on a Unix socket only, as .ci/run starts one; removed on exit."""

    def __enter__(self) -> str:
        import shutil

        self.dir = Path(tempfile.mkdtemp(prefix="judgescope-pg-"))
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.bin = max(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
        _as_postgres([str(self.bin / "initdb"), "-D", str(self.dir / "data"), "-U", "postgres", "--auth=trust",
                      "-E", "UTF8"])
        _as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-l", str(self.dir / "log"), "-w",
                      "-o", f"-k {self.dir} -c listen_addresses='' -c max_connections={PG_MAX_CONNECTIONS}", "start"])
        _as_postgres([str(self.bin / "createdb"), "-h", str(self.dir), "-U", "postgres", "judgescope"])
        return f"postgresql://postgres@/judgescope?host={self.dir}"

    def __exit__(self, *exc) -> None:
        import shutil

        _as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "stop"], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class Cluster:
    """The compose file's topology as processes here: app servers, workers and (when nginx is installed) the proxy."""

    url: str  # where the sessions connect: the proxy, or None when the clients spread over the servers themselves
    servers: list
    workers: list
    proxy: object | None
    urls: list[str]

    def pids(self) -> list[int]:
        return [s.process.pid for s in self.servers] + ([self.proxy.pid] if self.proxy is not None else [])


def _popen(cmd: list[str], env: dict[str, str], log: Path):
    import subprocess

    with log.open("wb") as out:
        return subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def start_cluster(helpers, db_url: str, args, tmp: Path) -> Cluster:
    import secrets
    import shutil
    import urllib.request

    secret = secrets.token_hex(32)
    env = {"EVALCORE_DB": db_url, "EVALCORE_USER_HEADER": "X-Forwarded-User", "EVALCORE_PROXY_SECRET": secret,
           "STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32)}
    if args.file_watcher != "configured":
        env["STREAMLIT_SERVER_FILE_WATCHER_TYPE"] = args.file_watcher
    servers = [helpers.start_app(tmp / f"app{i + 1}", resamples=args.resamples, extra_env=env)
               for i in range(args.servers)]
    wenv = helpers.app_env(tmp / "unused.db", extra={"EVALCORE_DB": db_url})
    workers = [_popen([sys.executable, "-m", "evalcore", "worker", "--heartbeat", "0.5", "--stalled-after", "3"],
                      wenv, tmp / f"worker{i + 1}.log") for i in range(args.workers)]
    cluster = Cluster(None, servers, workers, None, [s.url for s in servers])
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None or args.no_proxy:
        return cluster
    ngx = tmp / "nginx"
    ngx.mkdir()
    htpasswd = ngx / "htpasswd"  # nginx reads {PLAIN} passwords: bench users only
    htpasswd.write_text("".join(f"bench{i}:{{PLAIN}}bench\n" for i in range(max(args.sessions))))
    port = helpers.free_port()
    conf = ngx / "nginx.conf"
    conf.write_text(nginx_conf([u.removeprefix("http://") for u in cluster.urls], port, htpasswd, secret, ngx))
    cluster.proxy = _popen([nginx, "-p", str(ngx), "-c", str(conf), "-e", str(ngx / "error.log"), "-g",
                            "daemon off;"], os.environ.copy(), ngx / "stdout.log")
    cluster.url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(cluster.url + "/_stcore/health", timeout=2)
            return cluster
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nginx did not answer: {(ngx / 'error.log').read_text()[-2000:]}")


def stop_cluster(helpers, cluster: Cluster) -> None:
    import subprocess

    for p in ([cluster.proxy] if cluster.proxy is not None else []) + cluster.workers:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
    for s in cluster.servers:
        helpers.stop_app(s)


def _basic_auth(i: int) -> dict[str, str]:
    import base64

    return {"Authorization": "Basic " + base64.b64encode(f"bench{i}:bench".encode()).decode()}


def _queue_big_run(store, base_url: str, items: int) -> str:
    """tests/test_workers.py's queued run, larger: geval on SummEval coherence and fluency, 1,000 items each, one
    request at a time (so exactly one request can be in flight when a worker dies), on the loopback judge."""
    from evalcore import workers
    from evalcore.judge import cli as judge_cli

    parser = argparse.ArgumentParser()
    judge_cli.register(parser.add_subparsers(dest="command"))
    a = parser.parse_args(["score", "--dataset", "summeval", "--dimension", "coherence", "--dimension", "fluency",
                           "--method", "geval", "--model", "loop", "--base-url", base_url, "--provider", "vllm",
                           "--limit", str(items // 2), "--concurrency", "1", "--run", "bench/kill", "--quiet"])
    spec, engine = judge_cli.spec_from_args(a, judge_cli._dataset("summeval", store), store)
    return workers.queue_scoring(spec, engine, store=store)


def _wait(cond, what: str, deadline_s: float) -> None:
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise RuntimeError(f"waited {deadline_s:g} s for {what}")
        time.sleep(0.05)


def _busiest(procs: list) -> object:
    """The worker scoring the job: the one that used the most CPU (the others wait on LISTEN)."""
    return max(procs, key=lambda p: (_proc_stat(p.pid) or (0, 0.0))[1])


def kill_a_worker_job(db_url: str, cluster: Cluster, items: int) -> dict:
    """The 2,000-item job; the busy worker SIGKILLed after KILL_AFTER judgments; another takes the job over."""
    from evalcore.store import Store
    from evalcore.testing.loopback import serve

    store = Store(db_url)
    judged = lambda: int(store.conn.execute("SELECT count(*) FROM judgments WHERE run_id = ?",  # noqa: E731
                                            (run_id,)).fetchone()[0])
    with serve(latency_s=0.005) as srv:
        run_id = _queue_big_run(store, srv.base_url, items)
        queued_at, t0 = len(srv.prompt_log), time.perf_counter()
        _wait(lambda: judged() >= KILL_AFTER * items, f"{KILL_AFTER * items:.0f} judgments", 240)
        victim = _busiest(cluster.workers)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        t_kill, killed_at, at_kill = time.perf_counter(), len(srv.prompt_log), judged()
        _wait(lambda: judged() > at_kill, "another worker to take the job over", 120)
        t_resume = time.perf_counter()
        _wait(lambda: store.run_row(run_id)["status"] == "done", "the run to finish", 300)
        t_done, log = time.perf_counter(), list(srv.prompt_log)
    rows = store.conn.execute("SELECT count(*), count(DISTINCT item_id || '|' || dimension), "
                              "sum(CASE WHEN status = 'ok' THEN 1 ELSE 0 END) FROM judgments WHERE run_id = ?",
                              (run_id,)).fetchone()
    store.close()
    before, after = log[queued_at:killed_at], log[killed_at:]
    resent = set(after) & set(before)
    in_flight = {log[killed_at - 1]} if killed_at > queued_at else set()
    return {"items": items, "run": run_id, "rows": int(rows[0]), "distinct": int(rows[1]), "ok": int(rows[2] or 0),
            "at_kill": at_kill, "victim": victim.pid, "sent": len(log) - queued_at,
            "distinct_sent": len(set(log[queued_at:])), "resent_in_flight": len(resent & in_flight),
            "paid_twice": len(resent - in_flight) + (len(after) - len(set(after))),
            "to_kill_s": t_kill - t0, "takeover_s": t_resume - t_kill, "total_s": t_done - t0}


def print_job(job: dict) -> None:
    lost = job["items"] - job["distinct"]
    print(f"\nScoring job: {job['items']} judgments (SummEval coherence + fluency, geval, loopback judge, one request "
          f"at a time), the busy worker (pid {job['victim']}) SIGKILLed after {job['at_kill']} judgments "
          f"({job['to_kill_s']:.1f} s in)")
    print(f"  run {job['run']}: done after {job['total_s']:.1f} s; another worker resumed it {job['takeover_s']:.1f} s "
          f"after the kill (heartbeat 0.5 s, stalled after 3 s)")
    print(f"  judgments stored {job['rows']} ({job['ok']} ok), lost {lost}, duplicated {job['rows'] - job['distinct']}")
    print(f"  requests the judge received {job['sent']} ({job['distinct_sent']} distinct prompts; identical "
          f"SummEval summaries share a prompt and a cached reply); asked again after the kill: "
          f"{job['resent_in_flight']} (the one in flight at the kill, its reply never received), "
          f"paid twice: {job['paid_twice']}")


async def measure_cluster(args, cluster: Cluster) -> list[Round]:
    with ProcSampler(*cluster.pids()) as sampler:
        cold = await run_round(1, args.pages, cluster.url or cluster.urls[0], args, sampler)
        print_loads("COLD (one session's first visits: with several servers, the others stay cold until the round)", cold)
        rounds = []
        for n in args.sessions:
            cpu0 = [_tree_cpu(s.process.pid) for s in cluster.servers]
            rnd = await run_round(n, args.pages, cluster.url or cluster.urls[0], args, sampler)
            print_summary_line(f"{len(cluster.servers)} server(s), N={n}", rnd)
            by_server = [_tree_cpu(s.process.pid) - c for s, c in zip(cluster.servers, cpu0)]
            print("  CPU s by app server: " + ", ".join(f"{c:.1f}" for c in by_server)
                  + (f"; nginx {_tree_cpu(cluster.proxy.pid):.1f} in all" if cluster.proxy is not None else "")
                  + (f"; PostgreSQL connections open now: {_pg_connections(args.db_url)}" if args.db_url else ""))
            rounds.append(rnd)
        args.hwm_mb = max(_rss_kb(p, "VmHWM") for p in cluster.pids()) / 1024
    return rounds


def _pg_connections(db_url: str) -> str:
    """Client connections to the store's database now, by application (pg_stat_activity)."""
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as c:
        n = c.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()").fetchone()[0]
    return str(n - 1)  # less this one


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its live descendants (nginx's master and its worker)."""
    parents = {int(e): st[0] for e in os.listdir("/proc") if e.isdigit() and (st := _proc_stat(int(e)))}
    return sum((_proc_stat(p) or (0, 0.0))[1] for p in _descendants(pid, parents))


def print_summary_line(title: str, rnd: Round) -> None:
    firsts = sorted(ld.first_s for ld in rnd.loads if ld.first_s is not None)
    served = len({ld.session for ld in rnd.loads if ld.first_s is not None and not ld.errors})
    errs = [e for ld in rnd.loads for e in ld.errors]
    p95 = statistics.quantiles(firsts, n=20, method="inclusive")[-1] if len(firsts) > 1 else (firsts or [0.0])[0]
    spread = (f"{statistics.median(firsts):.2f} / {p95:.2f} / {firsts[-1]:.2f}" if firsts else "- / - / -")
    print(f"\n{title}: sessions served {served}/{rnd.n}, page loads {len(rnd.loads)}, errors {len(errs)}; first "
          f"content median / p95 / max {spread} s; wall {rnd.wall_s:.1f} s; servers' CPU "
          f"{rnd.server_cpu:.1f} s; rest of the machine {rnd.others_cpu / rnd.wall_s:.2f} cores")
    for e in sorted(set(errs))[:5]:
        print(f"  error: {e}")


def cluster_main(args, helpers) -> int:
    """``--postgres``: the compose file's topology here, sessions through the proxy, the kill-a-worker job, then
    (``--compare-sqlite``) the same sessions on one app server over a SQLite file."""
    import contextlib

    if str(REPO_ROOT) not in sys.path:  # run as a script from anywhere: the checkout's evalcore
        sys.path.insert(0, str(REPO_ROOT))
    from evalcore.store import Store

    with tempfile.TemporaryDirectory(prefix="judgescope-load-") as tmp, contextlib.ExitStack() as stack:
        db_url = stack.enter_context(ThrowawayPostgres()) if args.postgres == "start" else args.postgres
        args.db_url = db_url
        Store(db_url).close()  # the store's tables made once, before several processes open it at the same moment
        t0 = time.perf_counter()
        cluster = start_cluster(helpers, db_url, args, Path(tmp))
        job = None
        try:
            print(f"{len(cluster.servers)} app servers ({', '.join(cluster.urls)}), {len(cluster.workers)} workers, "
                  f"store on PostgreSQL; sessions through "
                  + (f"nginx at {cluster.url} (deploy/nginx/judgescope.conf.template: basic auth as bench<i>, "
                     f"sticky by user)" if cluster.proxy else "no proxy: session i goes to server i mod 2")
                  + f"; healthy after {time.perf_counter() - t0:.1f} s", flush=True)
            args.auth = _basic_auth if cluster.proxy is not None else None
            args.url_of = None if cluster.proxy is not None else (lambda i: cluster.urls[i % len(cluster.urls)])
            rounds = asyncio.run(measure_cluster(args, cluster))
            if not args.no_job:
                job = kill_a_worker_job(db_url, cluster, args.job_items)
        finally:
            stop_cluster(helpers, cluster)
        if job is not None:
            print_job(job)
        errors = sum(r.errors for r in rounds)
        if args.compare_sqlite:
            args.auth = args.url_of = args.db_url = None
            server = helpers.start_app(Path(tmp) / "sqlite", resamples=args.resamples,
                                       extra_env=_watcher_env(args))
            print(f"\nFor comparison: one app server on a SQLite file ({server.url})", flush=True)
            try:
                single = asyncio.run(measure_cluster(args, Cluster(server.url, [server], [], None, [server.url])))
            finally:
                helpers.stop_app(server)
            errors += sum(r.errors for r in single)
    lost_or_twice = job is not None and (job["distinct"] != args.job_items or job["paid_twice"])
    return 1 if errors or lost_or_twice else 0


def _watcher_env(args) -> dict[str, str]:
    return {} if args.file_watcher == "configured" else {"STREAMLIT_SERVER_FILE_WATCHER_TYPE": args.file_watcher}


# ------------------------------------------------------------------------------------------------------- main
async def measure(args, helpers, server) -> tuple[Round, list[Round]]:
    pw = browser = None
    if args.client == "browser":
        from playwright.async_api import async_playwright

        pw = await async_playwright().start()
        browser = await pw.chromium.launch(executable_path=str(helpers.CHROMIUM), args=helpers.CHROMIUM_ARGS,
                                           headless=True)
        warm = await browser.new_page()  # chromium's own first-page costs are not the app's
        await warm.goto("about:blank")
        await warm.close()
    try:
        with ProcSampler(server.process.pid) as sampler:
            cold = await run_round(1, args.pages, server.url, args, sampler, browser)
            print_loads("COLD (first visits after the server started)", cold)
            rounds = []
            for n in args.sessions:
                rnd = await run_round(n, args.pages, server.url, args, sampler, browser)
                print_loads(f"WARM round of N={n}", rnd)
                rounds.append(rnd)
            args.hwm_mb = sampler.server_hwm_mb()
        return cold, rounds
    finally:
        if browser is not None:
            await browser.close()
        if pw is not None:
            await pw.stop()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", default="1,10,20", help="comma-separated session counts, one round each "
                                                          "(default 1,10,20)")
    ap.add_argument("--pages", default="alignment,data", help="pages each session opens (default alignment,data)")
    ap.add_argument("--client", choices=("ws", "browser"), default="ws", help="websocket clients (default) or "
                                                                              "headless chromium")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds a page load may take before it counts "
                                                                 "as an error (default 180)")
    ap.add_argument("--resamples", type=int, default=None, help="bootstrap resamples (default: the app's, 1000)")
    ap.add_argument("--file-watcher", choices=("configured", "none", "auto", "poll", "watchdog"),
                    default="configured", help="the server's server.fileWatcherType (default: as the app's "
                                               ".streamlit/config.toml says; 'none' shows what the watcher costs)")
    ap.add_argument("--no-profile", action="store_true", help="skip the profile of a warm page run")
    ap.add_argument("--profile-page", choices=sorted(PAGES), default="alignment",
                    help="the page whose warm run is profiled (default alignment)")
    ap.add_argument("--cprofile", action="store_true", help="profile with cProfile (exact call counts, but its "
                                                           "cost per call inflates pandas-heavy code) instead of "
                                                           "sampling the script thread's stack every millisecond")
    ap.add_argument("--postgres", metavar="URL", help="several app servers and workers on this PostgreSQL store "
                    "(docker-compose.yml's topology, run here); 'start': a throwaway server, as .ci/run starts one")
    ap.add_argument("--servers", type=int, default=2, help="with --postgres: app servers (default 2)")
    ap.add_argument("--workers", type=int, default=2, help="with --postgres: scoring workers (default 2)")
    ap.add_argument("--no-proxy", action="store_true", help="with --postgres: no nginx; the clients spread the "
                                                           "sessions over the servers themselves")
    ap.add_argument("--job-items", type=int, default=SCORE_ITEMS, help="with --postgres: judgments in the "
                    "kill-a-worker job, half coherence, half fluency (default 2000; at most 3200)")
    ap.add_argument("--no-job", action="store_true", help="with --postgres: skip the kill-a-worker scoring job")
    ap.add_argument("--compare-sqlite", action="store_true", help="with --postgres: then the same sessions on one "
                                                                 "app server over a SQLite file")
    args = ap.parse_args(argv)
    if args.postgres and (args.servers < 1 or args.workers < 2):
        ap.error("--postgres: at least one server and two workers (one is killed)")
    try:
        args.sessions = [int(s) for s in args.sessions.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sessions: comma-separated whole numbers, e.g. 1,10,20 (got {args.sessions!r})")
    args.pages = [p.strip() for p in args.pages.split(",") if p.strip()]
    if not args.sessions or min(args.sessions) < 1 or max(args.sessions) > 200:
        ap.error("--sessions: counts between 1 and 200")
    unknown = [p for p in args.pages if p not in PAGES]
    if unknown or not args.pages:
        ap.error(f"--pages: choose among {', '.join(PAGES)} (got {', '.join(unknown) or 'none'})")
    return args


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally blocks: the server and chromium are stopped


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    helpers = _browser_helpers()
    if args.client == "browser" and (reason := helpers.chromium_missing_reason()):
        print(f"cannot run with --client browser: {reason}")
        return 2
    if args.postgres:
        if args.client != "ws":
            ap_error = "--postgres measures websocket clients only"
            print(ap_error)
            return 2
        print(f"bench_load: {args.servers} app servers + {args.workers} workers on PostgreSQL, sessions="
              f"{args.sessions}, pages={args.pages}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}",
              flush=True)
        return cluster_main(args, helpers)
    print(f"bench_load: client={args.client}, sessions={args.sessions}, pages={args.pages}, file watcher "
          f"{args.file_watcher}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    with tempfile.TemporaryDirectory(prefix="judgescope-load-") as tmp:
        t0 = time.perf_counter()
        extra = {} if args.file_watcher == "configured" else {"STREAMLIT_SERVER_FILE_WATCHER_TYPE": args.file_watcher}
        server = helpers.start_app(Path(tmp) / "app", resamples=args.resamples, extra_env=extra)
        print(f"server healthy after {time.perf_counter() - t0:.1f} s (pid {server.process.pid}, {server.url})")
        try:
            cold, rounds = asyncio.run(measure(args, helpers, server))
        finally:
            helpers.stop_app(server)
        print_table(rounds, args.pages, args.hwm_mb)
        if not args.no_profile:
            profile_warm_page(helpers, Path(tmp), args.resamples, args.profile_page, args.cprofile)
    return 1 if cold.errors or any(r.errors for r in rounds) else 0


if __name__ == "__main__":
    raise SystemExit(main())
