"""A headless Chromium driven over the DevTools protocol, with the standard library only.

The system's Chromium (the Debian package ``chromium``; ``.ci/run`` installs it when missing) is
started with ``--remote-debugging-pipe``: commands go to its fd 3 and replies come from its fd 4,
JSON messages ended by a NUL byte, so no websocket and no driver package are needed (and nothing
is downloaded). :class:`Browser` opens pages in fresh targets; :class:`Page` evaluates script,
collects console errors and uncaught exceptions, takes screenshots and prints PDFs.

    with Browser() as b:
        p = b.open("page.html")
        p.eval("document.title"); p.errors; p.screenshot("shot.png")
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

#: the names a Chromium binary goes by (Debian: chromium)
BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find() -> str | None:
    """The path of a Chromium on PATH, or None."""
    env = os.environ.get("LOOPSIM_CHROMIUM")
    if env:
        return env
    return next((p for p in map(shutil.which, BINARIES) if p), None)


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process; ``timeout`` seconds for any one reply."""

    def __init__(self, binary: str | None = None, timeout: float = 60.0):
        self.binary = binary or find()
        if self.binary is None:
            raise BrowserError("no Chromium found (apt-get install chromium)")
        self.timeout = timeout
        self._id = 0
        self._buf = b""
        self.events: list[dict] = []
        self._profile = tempfile.mkdtemp(prefix="loopsim-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds():  # the child's fd 3 reads our commands, its fd 4 writes the replies
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        args = [self.binary, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
                "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
                f"--user-data-dir={self._profile}", "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds, pass_fds=(3, 4))
        os.close(to_child_r)
        os.close(from_child_w)

    # -- protocol
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise BrowserError(f"Chromium exited (status {self.proc.poll()})")
                self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and wait for its reply (events that arrive meanwhile are kept)."""
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise BrowserError(f"{method}: {m['error'].get('message')}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, session: str, since: int = 0) -> dict:
        deadline = time.monotonic() + self.timeout
        i = since
        while True:
            for ev in self.events[i:]:
                if ev.get("method") == method and ev.get("sessionId") == session:
                    return ev
            i = len(self.events)
            self.events.append(self._read_message(deadline))

    def open(self, path: str | Path, width: int = 1280, height: int = 900) -> "Page":
        """Load a local file in a new tab and wait for its load event."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                  "deviceScaleFactor": 1, "mobile": False}, session=session)
        mark = len(self.events)
        url = Path(path).resolve().as_uri()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session, mark)
        return Page(self, session, target, mark)

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close")
                except BrowserError:
                    pass
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            for fd in (self._to_child, self._from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    """One loaded page."""

    def __init__(self, browser: Browser, session: str, target: str, mark: int):
        self.b, self.session, self.target, self.mark = browser, session, target, mark

    def eval(self, expression: str):
        """The value of a script expression (JSON-able), or BrowserError on an exception."""
        r = self.b.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression[:60]}: {r['exceptionDetails'].get('text')} "
                               f"{r['exceptionDetails'].get('exception', {}).get('description', '')}")
        return r["result"].get("value")

    @property
    def errors(self) -> list[str]:
        """Console errors and uncaught exceptions of this page since it was opened."""
        self.eval("0")  # flush pending events
        out = []
        for ev in self.b.events[self.mark:]:
            if ev.get("sessionId") != self.session:
                continue
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.error: " + " ".join(str(a.get("value", a.get("description")))
                                                        for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}")
        return out

    def screenshot(self, path: str | Path, full_page: bool = True) -> bytes:
        """A PNG of the page (the whole page with ``full_page``), written to ``path``."""
        params = {"format": "png"}
        if full_page:
            size = self.eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
            params["captureBeyondViewport"] = True
        data = base64.b64decode(self.b.send("Page.captureScreenshot", params, session=self.session)["data"])
        Path(path).write_bytes(data)
        return data

    def pdf(self, paper: str = "A4") -> bytes:
        """The page printed (print styles) on A4 or Letter paper, as PDF bytes."""
        w, h = {"A4": (8.27, 11.69), "Letter": (8.5, 11.0)}[paper]
        r = self.b.send("Page.printToPDF", {"paperWidth": w, "paperHeight": h,
                                            "preferCSSPageSize": False}, session=self.session)
        return base64.b64decode(r["data"])
