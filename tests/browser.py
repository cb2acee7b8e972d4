"""A headless Chromium driven through the DevTools protocol, to check the built book as a reader
sees it: every page loads with no console error and no request leaving the site, math is
typeset, code tabs switch.

Only Debian's `chromium` and the `websocket-client` package are needed (no driver). Every
request the page makes is paused by the browser and let through only when it goes to the
local server; anything else is failed before it leaves the machine and reported. Host names
other than 127.0.0.1 do not even resolve (`--host-resolver-rules`).
"""

from __future__ import annotations

import functools
import http.server
import itertools
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--mute-audio", "--window-size=1280,900",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]


def chromium_path() -> str | None:
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


class Server:
    """The built site on 127.0.0.1 (a random free port), served from a thread."""

    def __init__(self, root: Path):
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@dataclass
class PageReport:
    """What happened while one page loaded."""

    url: str
    console_errors: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        return ([f"console: {m}" for m in self.console_errors]
                + [f"request leaving the site (blocked): {u}" for u in self.outside_requests]
                + [f"failed request: {u}" for u in self.failed_requests])


class Browser:
    """One headless Chromium and one tab, spoken to over the DevTools protocol."""

    def __init__(self, executable: str, site_url: str, timeout: float = 30.0):
        import websocket  # websocket-client

        self.site_url = site_url
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="gpulab-chromium-")
        self.proc = subprocess.Popen([executable, *FLAGS, f"--user-data-dir={self.profile}",
                                      "--remote-debugging-port=0", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"Chromium did not start ({executable}, exit status {self.proc.poll()})")
            time.sleep(0.05)
        port, path = port_file.read_text().split()[:2]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=timeout, suppress_origin=True)
        self._ids = itertools.count(1)
        self._replies: dict[int, queue.Queue] = {}
        self._events: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self.report: PageReport | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call("Fetch.enable", session=True, patterns=[{"urlPattern": "*"}])

    # ------------------------------------------------------------------ protocol

    def _read(self):
        while True:
            try:
                msg = json.loads(self.ws.recv())
            except Exception:
                return
            if "id" in msg:
                q = self._replies.get(msg["id"])
                if q is not None:
                    q.put(msg)
            else:
                try:
                    self._on_event(msg)
                except Exception as exc:  # keep reading: a lost event must not hang the test
                    if self.report is not None:
                        self.report.console_errors.append(f"(test harness: {type(exc).__name__}: {exc})")

    def _send(self, method, session, params):
        i = next(self._ids)
        msg = {"id": i, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        q = self._replies[i] = queue.Queue()
        with self._lock:
            self.ws.send(json.dumps(msg))
        return i, q

    def call(self, method, session=False, **params):
        i, q = self._send(method, session, params)
        try:
            msg = q.get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"no answer to {method} within {self.timeout} s") from None
        finally:
            self._replies.pop(i, None)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg.get("result", {})

    def _on_event(self, msg):
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Fetch.requestPaused":  # every request stops here first
            url = p["request"]["url"]
            if url.startswith(self.site_url) or url.startswith(("data:", "blob:", "about:")):
                self._send("Fetch.continueRequest", True, {"requestId": p["requestId"]})
            else:
                if self.report is not None:
                    self.report.outside_requests.append(url)
                self._send("Fetch.failRequest", True, {"requestId": p["requestId"], "errorReason": "BlockedByClient"})
            return
        r = self.report
        if r is not None:
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                r.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                r.console_errors.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
            elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
                e = p["entry"]
                if "ERR_BLOCKED_BY_CLIENT" not in e.get("text", "") or not r.outside_requests:
                    r.console_errors.append(f"{e.get('text', '')} {e.get('url', '')}".strip())
            elif method == "Network.responseReceived" and p["response"]["status"] >= 400:
                r.failed_requests.append(f"{p['response']['url']} ({p['response']['status']})")
        self._events.put(msg)

    # ------------------------------------------------------------------ pages

    def open(self, url: str, settle: float = 0.3) -> PageReport:
        """Load `url`, wait for its load event (and a moment for scripts), report what happened."""
        self.report = PageReport(url)
        while not self._events.empty():
            self._events.get_nowait()
        self.call("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                msg = self._events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"{url} did not finish loading within {self.timeout} s") from None
            if msg.get("method") == "Page.loadEventFired":
                break
        time.sleep(settle)
        return self.report

    def evaluate(self, expression: str, await_promise: bool = False):
        res = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                        awaitPromise=await_promise)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression[:80]}: {res['exceptionDetails'].get('text')}")
        return res["result"].get("value")

    def click(self, selector_js: str) -> None:
        """A real mouse click (pressed, released) at the centre of the element `selector_js` finds,
        after opening the collapsed notes (`<details>`) around it, as a reader would."""
        box = self.evaluate(f"(() => {{ const e = {selector_js};"
                            "for (let d = e.closest('details'); d; d = d.parentElement.closest('details')) d.open = true;"
                            "e.scrollIntoView({block: 'center'});"
                            "const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, path: str | os.PathLike) -> None:
        import base64

        Path(path).write_bytes(base64.b64decode(self.call("Page.captureScreenshot", session=True)["data"]))

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


# ---------------------------------------------------------------------- what a page must show

MATH_JS = """(async () => {
  const n = document.querySelectorAll('.arithmatex').length;
  if (!n) return [0, 0, 0];
  if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return [n, 0, 0];
  await MathJax.startup.promise;
  if (MathJax.typesetPromise) await MathJax.typesetPromise();
  return [n, document.querySelectorAll('.arithmatex mjx-container').length, document.querySelectorAll('mjx-merror').length];
})()"""


def math_problems(browser: Browser) -> list[str]:
    """Every `\\(...\\)` / `\\[...\\]` the page has is typeset by MathJax, without errors."""
    n, typeset, errors = browser.evaluate(MATH_JS, await_promise=True)
    out = []
    if typeset < n:
        out.append(f"math: {typeset} of {n} formulas typeset by MathJax")
    if errors:
        out.append(f"math: {errors} MathJax errors")
    return out


TABS_JS = """(() => {
  const sets = [...document.querySelectorAll('.tabbed-set')].filter(
      s => [...s.querySelectorAll(':scope > .tabbed-labels > label')].some(l => l.textContent.trim() === %(label)s));
  return sets.map(s => {
    const labels = [...s.querySelectorAll(':scope > .tabbed-labels > label')];
    const inputs = [...s.querySelectorAll(':scope > input')];
    const i = labels.findIndex(l => l.textContent.trim() === %(label)s);
    return inputs[i] ? inputs[i].checked : false;
  });
})()"""


def tab_states(browser: Browser, label: str) -> list[bool]:
    """For every tab set that has a tab `label`: is that tab the selected one?"""
    return browser.evaluate(TABS_JS % {"label": json.dumps(label)})


def click_tab(browser: Browser, label: str) -> None:
    browser.click("[...document.querySelectorAll('.tabbed-labels > label')].find(l => l.textContent.trim() === "
                  f"{json.dumps(label)})")


TAB_SETS_JS = """[...document.querySelectorAll('.tabbed-set')].map(
    s => [...s.querySelectorAll(':scope > .tabbed-labels > label')].map(l => l.textContent.trim()))"""

TAB_SHOWN_JS = """(() => {
  const s = document.querySelectorAll('.tabbed-set')[%(set)d];
  const inputs = [...s.querySelectorAll(':scope > input')];
  const blocks = [...s.querySelectorAll(':scope > .tabbed-content > .tabbed-block')];
  const shown = blocks.map((b, i) => [i, b]).filter(([i, b]) => getComputedStyle(b).display !== 'none'
                                                        && b.getBoundingClientRect().height > 0);
  return {checked: inputs.map((x, i) => [i, x.checked]).filter(([i, c]) => c).map(([i]) => i),
          shown: shown.map(([i]) => i),
          code: shown.map(([i, b]) => [...b.querySelectorAll('pre code')].map(c => c.textContent.trim().length)
                                                                        .reduce((a, n) => a + n, 0)),
          text: shown.map(([i, b]) => b.textContent.trim().length)};
})()"""

TAB_LABEL_JS = ("document.querySelectorAll('.tabbed-set')[%(set)d]"
                ".querySelectorAll(':scope > .tabbed-labels > label')[%(tab)d]")


def tab_sets(browser: Browser) -> list[list[str]]:
    """The labels of every tab set on the page, in page order."""
    return browser.evaluate(TAB_SETS_JS)


def tab_problems(browser: Browser, settle: float = 0.5) -> list[str]:
    """Click every tab of every tab set on the open page, one after the other (a real mouse
    click on its label), and check that the tab clicked is the one selected, that its own panel
    (and only it) is shown, and that the panel is not empty. A panel of a code tab set (one with a
    "numba" or a "CUDA C" tab) must hold code. No tab set repeats a label."""
    out = []
    for s, labels in enumerate(tab_sets(browser)):
        where = f"tab set {s + 1} {labels}"
        code_set = bool({"numba", "CUDA C"} & set(labels))
        if len(set(labels)) < len(labels):
            out.append(f"{where}: repeated labels")
        for j, label in enumerate(labels):
            browser.click(TAB_LABEL_JS % {"set": s, "tab": j})
            deadline = time.monotonic() + settle
            while True:  # the switch is synchronous, but give the page's scripts a moment if it is not
                state = browser.evaluate(TAB_SHOWN_JS % {"set": s})
                ok = state["checked"] == [j] and state["shown"] == [j]
                if ok or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if not ok:
                out.append(f"{where}: clicked tab {j + 1} ({label!r}), but tab(s) "
                           f"{[i + 1 for i in state['checked']]} selected and panel(s) "
                           f"{[i + 1 for i in state['shown']]} shown")
            elif code_set and not state["code"][0]:
                out.append(f"{where}: tab {j + 1} ({label!r}) shows a panel with no code")
            elif not state["text"][0]:
                out.append(f"{where}: tab {j + 1} ({label!r}) shows an empty panel")
    return out
