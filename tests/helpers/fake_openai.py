"""A small real OpenAI-compatible HTTP server on 127.0.0.1 for tests: it counts the requests it gets, answers
from a script, and can fail on purpose (status codes, slowness), so the client's retries, cache and error
lines can be checked against a server that behaves exactly as told."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class FakeChatServer:
    """Chat completions at http://127.0.0.1:PORT/v1; `reply(body) -> text`, `failures`: statuses to send first."""

    def __init__(self, reply: Callable[[dict], str], failures: list[int] | None = None, delay: float = 0.0,
                 key: str | None = None, model: str = "fake-model") -> None:
        self.reply, self.failures, self.delay, self.key, self.model = reply, list(failures or []), delay, key, model
        self.requests: list[dict] = []  # every body received, failed ones included
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _status(self, headers) -> tuple[int, dict]:
        if self.key is not None and headers.get("Authorization") != f"Bearer {self.key}":
            return 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
        with self.lock:
            if self.failures:
                status = self.failures.pop(0)
                return status, {"error": {"message": f"scripted failure {status}"}}
        return 200, {}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                status, error = server._status(self.headers)
                if status == 200 and body.get("model") != server.model:
                    status, error = 404, {"error": {"message": f"The model `{body.get('model')}` does not exist"}}
                time.sleep(server.delay)
                payload = error if status != 200 else {
                    "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": server.reply(body)}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

        return Handler
