"""Headless Chromium over the DevTools protocol, for the tests of the HTML pages and the README's screenshot.

The browser is started with `--remote-debugging-pipe`: it reads protocol messages (JSON, each ended
by a NUL byte) from file descriptor 3 and writes its answers and events to descriptor 4, so nothing
listens on a port and no package beyond the standard library is needed. The page is driven as a user
would: mouse clicks at an element's place and typed text go through `Input.*`, and the test then reads
the DOM after the page's scripts ran, and takes a screenshot.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
         "--disable-extensions", "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe")


# Run by a short-lived Python: put the two pipe ends at descriptors 3 and 4, where the browser expects
# them, and become the browser.
_PLACE_PIPES = """\
import os, sys
reads, writes = int(sys.argv[1]), int(sys.argv[2])
os.dup2(reads, 3)
os.dup2(writes, 4)
os.close(reads)
os.close(writes)
os.execv(sys.argv[3], sys.argv[3:])
"""


class BrowserError(RuntimeError):
    """The browser failed to start, answered with an error, or a page did not do what was waited for."""


def find_browser() -> str | None:
    """The Chromium to use: $EXPMRC_CHROMIUM, else the first of BROWSERS on PATH, else None."""
    chosen = os.environ.get("EXPMRC_CHROMIUM")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


def _high_fd(fd: int) -> int:
    """A close-on-exec copy of `fd` numbered 10 or above (clear of 3 and 4), closing the original."""
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return copy


class Browser:
    """One headless Chromium with one page (tab), closed by `close()` or on leaving a `with` block. `mobile` lays pages
    out as a phone's browser does (the page's viewport tag counts, and a page wider than the screen is zoomed out)."""

    def __init__(self, executable: str | None = None, width: int = 1280, height: int = 900,
                 timeout: float = 30.0, mobile: bool = False) -> None:
        executable = executable or find_browser()
        if executable is None:
            raise BrowserError(f"no Chromium found (looked for {', '.join(BROWSERS)}; or set EXPMRC_CHROMIUM)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="expmrc-chromium-")
        self.errors: list[str] = []  # exceptions thrown by the page's scripts
        self.requests: list[str] = []  # every URL the page asked for
        self._answers: dict[int, dict[str, Any]] = {}
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._next_id = 0
        self._loaded = False
        self._lock = threading.Lock()
        browser_reads, self._to_browser = os.pipe()
        self._from_browser, browser_writes = os.pipe()
        browser_reads, browser_writes = _high_fd(browser_reads), _high_fd(browser_writes)
        self._log = open(Path(self.profile) / "stderr.log", "wb")
        command = [executable, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
                   "about:blank"]
        self.process = subprocess.Popen([sys.executable, "-c", _PLACE_PIPES, str(browser_reads), str(browser_writes),
                                         *command], pass_fds=(browser_reads, browser_writes),
                                        stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log)
        os.close(browser_reads)
        os.close(browser_writes)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Network"):
                self.call(f"{domain}.enable", session=True)
            self.call("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, session=True)
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- the protocol
    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self._events.put({"method": "_closed"})
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        self._answers[message["id"]] = message
                self._events.put(message)

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        """Send one command (to the page's session when `session`) and return its result."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        answer = self._wait(lambda: self._answers.get(ident), f"an answer to {method}")
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def _wait(self, ready, what: str) -> Any:
        deadline = time.monotonic() + self.timeout
        while True:
            with self._lock:
                value = ready()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError(f"timed out after {self.timeout:.0f} s waiting for {what}")
            try:
                event = self._events.get(timeout=min(remaining, 0.1))
            except queue.Empty:
                continue
            if event.get("method") == "_closed":
                raise BrowserError(f"the browser closed while waiting for {what}; see {self._log.name}")
            self._note(event)

    def _note(self, event: dict[str, Any]) -> None:
        method = event.get("method")
        params = event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(details.get("exception", {}).get("description") or details.get("text", "error"))
        elif method == "Network.requestWillBeSent":
            self.requests.append(params.get("request", {}).get("url", ""))
        elif method == "Page.loadEventFired":
            self._loaded = True

    # ---------------------------------------------------------------- what a test does with a page
    def open(self, path_or_url: str) -> None:
        """Load a file (or URL) and wait for its load event."""
        url = path_or_url if "://" in path_or_url else Path(path_or_url).resolve().as_uri()
        self._loaded = False
        self.call("Page.navigate", {"url": url}, session=True)
        self._wait(lambda: self._loaded, f"{url} to load")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise BrowserError(f"{expression[:80]}: {details.get('exception', {}).get('description', details)}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float | None = None) -> Any:
        """Poll a JavaScript expression until it is truthy, and return its value."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression[:80]}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """Click the middle of the first element matching `selector`, as a mouse would."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height}; })()")
        if not box or not box["w"] or not box["h"]:
            raise BrowserError(f"nothing visible to click at {selector}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box["x"], "y": box["y"], "button": "left",
                                                   "clickCount": 1}, session=True)

    def type(self, selector: str, text: str) -> None:
        """Click into a text field, select what it holds and type `text` over it."""
        self.click(selector)
        self.evaluate(f"document.querySelector({json.dumps(selector)}).select()")
        self.call("Input.insertText", {"text": text}, session=True)

    def screenshot(self, path: str, full_page: bool = False) -> int:
        """Save a PNG of the viewport (or the whole page); returns its size in bytes."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
            params["captureBeyondViewport"] = True
        data = base64.b64decode(self.call("Page.captureScreenshot", params, session=True)["data"])
        Path(path).write_bytes(data)
        return len(data)

    # ---------------------------------------------------------------- ending
    def close(self) -> None:
        """Close the browser, wait for it, and remove its profile folder."""
        try:
            if self.process.poll() is None:
                try:
                    os.write(self._to_browser, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
                except OSError:
                    pass
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            self._reader.join(timeout=5)
            for fd in (self._to_browser, self._from_browser):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
