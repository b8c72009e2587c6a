"""A small real OpenAI-compatible HTTP server on 127.0.0.1 for tests: it counts the requests it gets, answers
from a script, and can fail on purpose (status codes, slowness, refusals of `response_format` or of a system
turn, bodies that are no chat completion), so the client's retries, cache and error lines can be checked
against a server that behaves exactly as told."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Raw:
    """A reply sent exactly as given: body bytes, content type and status."""

    body: bytes
    content_type: str = "application/json"
    status: int = 200


def completion(content: Any, model: str = "fake-model", **extra: Any) -> dict:
    """A chat-completions payload with `content` as the message content; `extra` replaces top-level fields, and
    `message=`/`finish_reason=` the choice's."""
    message = {"role": "assistant", "content": content, **extra.pop("message", {})}
    choice = {"index": 0, "finish_reason": extra.pop("finish_reason", "stop"), "message": message}
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model, "choices": [choice],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}, **extra}


class FakeChatServer:
    """Chat completions at http://127.0.0.1:PORT/v1. `reply(body)` returns the content text, a whole payload
    (a dict, sent as JSON) or a `Raw` body; `failures`: statuses (or (status, message)) to send first."""

    def __init__(self, reply: Callable[[dict], Any], failures: list | None = None, delay: float = 0.0,
                 key: str | None = None, model: str = "fake-model", refuse_response_format: bool = False,
                 refuse_system: bool = False) -> None:
        self.reply, self.failures, self.delay, self.key, self.model = reply, list(failures or []), delay, key, model
        self.refuse_response_format, self.refuse_system = refuse_response_format, refuse_system
        self.requests: list[dict] = []  # every body received, failed ones included
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # closing never waits for a handler still sleeping (a scripted hang)
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

    def _status(self, headers, body: dict) -> tuple[int, dict]:
        if self.key is not None and headers.get("Authorization") != f"Bearer {self.key}":
            return 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
        with self.lock:
            if self.failures:
                failure = self.failures.pop(0)
                status, message = failure if isinstance(failure, tuple) else (failure, f"scripted failure {failure}")
                return status, {"error": {"message": message}}
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist"}}
        if self.refuse_response_format and "response_format" in body:
            return 400, {"error": {"message": "response_format of type json_schema is not supported"}}
        if self.refuse_system and any(m.get("role") == "system" for m in body.get("messages", [])):
            return 400, {"error": {"message": "System role not supported"}}
        return 200, {}

    def _answer(self, body: dict) -> Raw:
        answer = self.reply(body)
        if isinstance(answer, Raw):
            return answer
        payload = answer if isinstance(answer, dict) else completion(answer, model=body["model"])
        return Raw(json.dumps(payload).encode("utf-8"))

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                status, error = server._status(self.headers, body)
                time.sleep(server.delay)
                raw = server._answer(body) if status == 200 else Raw(json.dumps(error).encode("utf-8"), status=status)
                self.send_response(raw.status)
                self.send_header("Content-Type", raw.content_type)
                self.send_header("Content-Length", str(len(raw.body)))
                if raw.status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                try:
                    self.wfile.write(raw.body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a test's kill or Ctrl-C)
                    pass

        return Handler
