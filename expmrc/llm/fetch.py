"""Getting every reply of a run: from the cache where it holds one, else from the backend, `concurrency`
requests at a time.

Requests run in daemon worker threads, and each reply is cached by its worker the moment it arrives, so
neither a kill nor Ctrl-C loses a reply that was paid for. On Ctrl-C no new request starts; the requests
in flight are waited for (at most `wait` seconds; a second Ctrl-C stops waiting) and cached; then
`Interrupted` says how many replies are cached. SIGTERM does the same but waits at most `TERM_WAIT` seconds.
A failed request (a refused key, say) stops the run at once. Retries still waiting are abandoned, and no
thread keeps the process alive.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from expmrc.errors import Terminated, warn
from expmrc.llm.backends import Backend, FormatRefused
from expmrc.llm.cache import ResponseCache, old_request_key, request_key
from expmrc.llm.completion import Reply

NOTICE_AFTER = 2.0  # seconds of waiting for requests in flight after Ctrl-C before saying so
TERM_WAIT = 5.0  # the longest SIGTERM waits for requests in flight


@dataclass
class Fetched:
    """Replies by request id, which came from the cache (no request paid), and which asked for a JSON schema."""

    replies: dict[str, Reply] = field(default_factory=dict)
    cached: set[str] = field(default_factory=set)
    old_key: set[str] = field(default_factory=set)  # of `cached`, those found under a version-1 key
    structured: set[str] = field(default_factory=set)  # asked (or cached) with `response_format`


class Interrupted(Exception):
    """Ctrl-C (status 130) or SIGTERM (143) during the requests; `cached`: replies of the run now in the cache."""

    def __init__(self, status: int, cached: int, total: int) -> None:
        super().__init__(f"{'interrupted' if status == 130 else 'terminated'}: {cached} of {total} replies cached")
        self.status, self.cached, self.total = status, cached, total


def lookup(requests: dict[str, dict[str, Any]], backend: Backend, cache: ResponseCache | None,
           old_keys: bool) -> Fetched:
    """The replies the cache already holds, under the current key (or, with `old_keys`, a version-1 key)."""
    fetched = Fetched()
    if cache is None:
        return fetched
    identity = backend.identity()
    for rid, request in requests.items():
        body = backend.as_sent(request)
        hit = cache.get(request_key(identity, body))
        if hit is None and old_keys and (hit := cache.get_old(old_request_key(backend.name, request))) is not None:
            fetched.old_key.add(rid)
        if hit is not None:
            fetched.replies[rid] = hit
            fetched.cached.add(rid)
            if "response_format" in body:
                fetched.structured.add(rid)
    missing = [rid for rid in requests if rid not in fetched.replies]
    if not old_keys and (old := cache.count_old([old_request_key(backend.name, requests[rid]) for rid in missing])):
        warn(f"{cache.path}: {old} replies cached before the cache key named the server are not used (they may "
             "come from another server or weights); pass --cache-old-keys to use them")
    if cache.damaged:
        warn(f"{cache.path}: {len(cache.damaged)} damaged cache rows skipped (first key {cache.damaged[0][:12]}...); "
             "their requests are sent again")
    return fetched


class _Pool:
    """Daemon threads taking chunks of request ids from a queue and putting (chunk, results or error) on another."""

    def __init__(self, chunks: list[list[str]], workers: int, ask: Any) -> None:
        self.tasks: queue.Queue = queue.Queue()
        self.results: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.active = 0
        self._lock = threading.Lock()
        self._ask = ask
        for chunk in chunks:
            self.tasks.put(chunk)
        for _ in range(min(workers, len(chunks))):
            threading.Thread(target=self._work, daemon=True).start()

    def _work(self) -> None:
        while not self.stop.is_set():
            try:
                chunk = self.tasks.get_nowait()
            except queue.Empty:
                return
            with self._lock:
                self.active += 1
            try:
                self.results.put((chunk, self._ask(chunk)))
            except BaseException as exc:  # handed to the main thread, which raises it
                self.stop.set()
                self.results.put((chunk, exc))
            finally:
                with self._lock:
                    self.active -= 1

    def wait_in_flight(self, seconds: float, notice: bool) -> None:
        """Wait until no request is in flight, at most `seconds` (a second signal stops waiting); with `notice`,
        say so when it takes a while."""
        start, told = time.monotonic(), not notice
        try:
            while self.active and time.monotonic() - start < seconds:
                if not told and time.monotonic() - start > NOTICE_AFTER:
                    print(f"interrupted: waiting up to {seconds:g} s for {self.active} requests in flight "
                          "(Ctrl-C again to leave them)", file=sys.stderr)
                    told = True
                time.sleep(0.05)
        except (KeyboardInterrupt, Terminated):
            pass


def _asker(requests: dict[str, dict[str, Any]], backend: Backend, cache: ResponseCache | None,
           stored: set[str]) -> Callable[[list[str]], list[tuple[str, Reply, bool, bool]]]:
    """What a worker runs on a chunk of ids: (id, reply, from the cache, asked with response_format) for each.
    Each body is looked up in the cache just before it is sent (once the server has refused `response_format`,
    the plain request may be there), and each real reply is cached at once and its id added to `stored`."""
    identity = backend.identity()

    def ask(chunk: list[str]) -> list[tuple[str, Reply, bool, bool]]:
        done: list[tuple[str, Reply, bool, bool]] = []
        todo = list(chunk)
        while todo:
            bodies = {rid: backend.as_sent(requests[rid]) for rid in todo}
            keys = {rid: request_key(identity, body) for rid, body in bodies.items()}
            if cache is not None:
                hits = {rid: hit for rid in todo if (hit := cache.get(keys[rid])) is not None}
                done += [(rid, hit, True, "response_format" in bodies[rid]) for rid, hit in hits.items()]
                todo = [rid for rid in todo if rid not in hits]
                if not todo:
                    break
            try:
                replies = backend.complete([bodies[rid] for rid in todo])
            except FormatRefused:
                continue
            for rid, reply in zip(todo, replies):
                if cache is not None and reply.cacheable:
                    cache.put(keys[rid], reply)
                    stored.add(rid)
                done.append((rid, reply, False, "response_format" in bodies[rid]))
            todo = []
        return done
    return ask


def fetch(requests: dict[str, dict[str, Any]], backend: Backend, cache: ResponseCache | None, concurrency: int,
          progress: bool = True, wait: float = 600.0, old_keys: bool = False) -> Fetched:
    """Every reply by request id: from the cache where present, else from the backend; each new real reply is
    cached the moment it arrives. Ctrl-C or SIGTERM raise `Interrupted` (see the module's docstring)."""
    fetched = lookup(requests, backend, cache, old_keys)
    missing = [rid for rid in requests if rid not in fetched.replies]
    chunks = [missing[i:i + backend.batch_size] for i in range(0, len(missing), backend.batch_size)]
    stored: set[str] = set()  # ids whose reply a worker put in the cache
    backend.stop.clear()
    bar = tqdm(total=len(missing), desc="llm", unit="request", disable=not progress or not missing, dynamic_ncols=True)
    pool = _Pool(chunks, concurrency if backend.parallel else 1, _asker(requests, backend, cache, stored))
    start, tokens, finished = time.perf_counter(), 0, 0
    try:
        while finished < len(chunks):
            try:
                chunk, outcome = pool.results.get(timeout=0.2)
            except queue.Empty:
                continue
            finished += 1
            if isinstance(outcome, BaseException):
                raise outcome
            for rid, reply, from_cache, structured in outcome:
                fetched.replies[rid] = reply
                if from_cache:
                    fetched.cached.add(rid)
                if structured:
                    fetched.structured.add(rid)
                tokens += reply.completion_tokens
            bar.update(len(chunk))
            bar.set_postfix_str(f"{tokens / max(time.perf_counter() - start, 1e-9):.1f} tokens/s")
    except (KeyboardInterrupt, Terminated) as exc:
        pool.stop.set()
        backend.stop.set()
        bar.close()
        ctrl_c = isinstance(exc, KeyboardInterrupt)
        pool.wait_in_flight(wait if ctrl_c else min(wait, TERM_WAIT), notice=ctrl_c)
        if cache is not None:
            cache.close()  # a reply arriving from now on is not counted, so it is not stored either
        raise Interrupted(130 if ctrl_c else 143, len(fetched.cached) + len(stored), len(requests)) from None
    finally:
        pool.stop.set()
        backend.stop.set()
        bar.close()
    return fetched
