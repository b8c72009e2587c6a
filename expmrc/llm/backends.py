"""Where replies come from: any OpenAI-compatible chat-completions endpoint (the official `openai` client),
or a local Hugging Face causal LM (transformers, the tokenizer's chat template, batched generation).

A request is a plain dict (the chat-completions body, which is also the Batch-file body). A backend says
what it would send for a request (`as_sent`: the OpenAI backend drops `response_format` once the server
refused it), what besides the body decides a reply (`identity`, part of the cache key: the server's URL,
or the weights' fingerprint, dtype and generation settings), and turns bodies into `Reply`s. The OpenAI
backend retries rate limits (429), server errors (5xx), timeouts and refused connections with exponential
backoff, and nothing else: any other 4xx is the user's to fix and ends the run in one line. Setting
`stop` abandons the retries still waiting.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from expmrc.errors import ExpmrcError, warn
from expmrc.llm.completion import Reply, read_body
from expmrc.llm.config import LLMConfig
from expmrc.registry import Registry

SMALL_FILE = 1 << 20  # model files up to this size are fingerprinted by content, larger ones by size and mtime
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Backend(Protocol):
    """What a run asks for replies (`BACKENDS` makes one from the run's settings; `make_backend` checks it)."""

    name: str  # recorded in the run, and part of a version-1 cache key
    batch_size: int  # bodies per `complete` call
    parallel: bool  # `complete` may run in several threads at once (--concurrency)
    stop: threading.Event  # set when the run stops: retries still waiting are abandoned
    device: str | None  # where a local model runs (the run record's environment); None for a server

    def identity(self) -> dict[str, Any]: ...  # what besides the body decides a reply (part of the cache key)

    def as_sent(self, request: dict[str, Any]) -> dict[str, Any]: ...  # the body sent for a request now

    def check(self, body: dict[str, Any]) -> None: ...  # refuse, before any request, a body it cannot take

    def complete(self, bodies: list[dict[str, Any]]) -> list[Reply]: ...  # one reply per body, in order


CONTRACT = (*Backend.__annotations__, *(n for n, v in vars(Backend).items() if callable(v) and not n.startswith("_")))


class FormatRefused(Exception):
    """The server refused `response_format`: build the request again (`as_sent`) and send it without."""


class Abandoned(Exception):
    """The run is stopping: a retry was not sent."""


def public_url(url: str) -> str:
    """A URL normalised (lower-case scheme and host, no default port, no trailing slash) and without user
    info, query or fragment: fit to print, record and key the cache by (no secret rides along)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # an unclosed IPv6 bracket, say: nothing of it is fit to print
        return "(not a URL)"
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: kept out (check_base_url refuses such a URL)
        port = None
    if port and port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/"), "", ""))


def check_api_key(key: str, name: str) -> None:
    """Refuse, in one line that shows neither the key nor anything of it, a key an HTTP header cannot carry (a line
    break, a space, a control or non-ASCII character: the HTTP client would fail on it, echoing the header), and a
    --api-key-env that names no variable of the environment but looks like a key given in its place."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or (name not in os.environ and name != "OPENAI_API_KEY"):
        raise ExpmrcError("--api-key-env takes the name of an environment variable that holds the key, and no variable "
                          "of the name given is set (the name is not shown, in case it is the key itself)")
    bad = next((i for i, ch in enumerate(key) if not "!" <= ch <= "~"), None)
    if bad is not None:
        raise ExpmrcError(f"${name} holds a character an API key cannot have (a line break, space, control or "
                          f"non-ASCII character, at position {bad + 1} of {len(key)}); set it again to the key alone")


class OpenAIBackend:
    """Chat completions over HTTP; one request per call, run concurrently by the caller."""

    name = "openai"
    batch_size = 1
    parallel = True  # calls may run in threads at once (--concurrency)
    device: str | None = None  # the model runs at the server

    def __init__(self, base_url: str, api_key: str, retries: int = 5, timeout: float = 600.0,
                 backoff: float = 1.0, key_name: str = "OPENAI_API_KEY") -> None:
        check_api_key(api_key, key_name)
        import openai

        self.url = public_url(base_url)
        self.retries = retries
        self.backoff = backoff
        self.key_name = key_name  # the environment variable the key came from, named in errors
        self.structured = True  # set False once the server refuses `response_format`
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._round = 0  # the last retry round announced since a reply came: one line per round, not per request
        self._openai = openai
        self._key = api_key  # only to keep it out of every message (`_hidden`)
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0, timeout=timeout)

    def identity(self) -> dict[str, Any]:
        """What besides the request body decides a reply: the backend and the server."""
        return {"backend": self.name, "server": self.url}

    def as_sent(self, request: dict[str, Any]) -> dict[str, Any]:
        """The body this backend sends for `request` now (without `response_format` once the server refused it)."""
        return request if self.structured else {k: v for k, v in request.items() if k != "response_format"}

    def check(self, body: dict[str, Any]) -> None:
        """Nothing to refuse beforehand: the server says what it cannot take, in the first reply."""

    def complete(self, bodies: list[dict[str, Any]]) -> list[Reply]:
        return [self._one(body) for body in bodies]

    def _one(self, body: dict[str, Any]) -> Reply:
        errors, attempt = self._openai, 0
        while True:
            if self.stop.is_set():
                raise Abandoned()
            start = time.perf_counter()
            try:  # the raw response: a 200 that is no chat completion is read here, not by the client
                raw = self.client.chat.completions.with_raw_response.create(**body)
                self._round = 0
                return read_body(raw.content, raw.headers.get("content-type", ""), time.perf_counter() - start)
            except (errors.RateLimitError, errors.InternalServerError, errors.APIConnectionError) as exc:
                if attempt == self.retries:
                    raise ExpmrcError(self._gave_up(exc)) from None
                delay = self._delay(attempt, exc)
                self._announce(attempt + 1, exc, delay)
                if self.stop.wait(delay):
                    raise Abandoned() from None
                attempt += 1
            except errors.APIStatusError as exc:
                if self._drop_response_format(exc, body):
                    raise FormatRefused() from None
                raise ExpmrcError(self._refused(exc, body)) from None

    def _delay(self, attempt: int, exc: Exception) -> float:
        """Exponential backoff with jitter; a server's Retry-After (seconds) is honoured up to a minute."""
        response = getattr(exc, "response", None)
        after = response.headers.get("retry-after") if response is not None else None
        if after and after.replace(".", "", 1).isdigit():
            return min(float(after), 60.0)
        return self.backoff * (2 ** attempt) * (0.5 + random.random() / 2)

    def _drop_response_format(self, exc: Any, body: dict[str, Any]) -> bool:
        """True (and warn once) when the server refused the JSON schema: the request goes again as plain text."""
        text = str(getattr(exc, "message", exc)).lower()
        if "response_format" in body and exc.status_code in (400, 422) and (
                "response_format" in text or "json_schema" in text):
            with self._lock:
                if self.structured:
                    self.structured = False
                    warn(f"{self.url} does not take response_format with a JSON schema; replies are parsed as text")
            return True
        return False

    def _announce(self, round_: int, exc: Exception, delay: float) -> None:
        """`warning: URL: what failed; retry N of M in S s`, once per round however many requests are in it."""
        with self._lock:
            if round_ <= self._round:
                return
            self._round = round_
        warn(f"{self.url}: {self._failure(exc)}; retry {round_} of {self.retries} in {delay:.1f} s")

    def _hidden(self, text: str) -> str:
        """`text` (a server's or the HTTP client's words) with the API key, should it hold it, masked."""
        return text.replace(self._key, "***") if len(self._key) >= 4 else text

    def _failure(self, exc: Exception) -> str:
        status = getattr(exc, "status_code", None)
        if status:
            return f"status {status}"
        if isinstance(exc, self._openai.APITimeoutError):
            return "timed out; raise --timeout?"
        cause = exc.__cause__  # the HTTP client's own error says why ("[Errno 111] Connection refused")
        return f"cannot connect: {self._hidden(_message(cause if cause is not None and str(cause) else exc)).rstrip('.')}"

    def _gave_up(self, exc: Exception) -> str:
        return f"{self.url}: no reply after {self.retries} retries ({self._failure(exc)})"

    def _refused(self, exc: Any, body: dict[str, Any]) -> str:
        detail, model = self._hidden(_message(exc)), body.get("model")
        if exc.status_code in (401, 403):
            return f"{self.url} refused the API key ({exc.status_code}): {detail}; check ${self.key_name} (--api-key-env)"
        if exc.status_code == 404:
            return f"{self.url}: model {model!r} not found, or no chat-completions endpoint there (404): {detail}"
        hint = no_system_hint(body["messages"], detail)
        return f"{self.url} refused the request for model {model!r} ({exc.status_code}): {detail}{hint}"


def no_system_hint(messages: list[dict[str, Any]], detail: str) -> str:
    """`; pass --no-system ...` when a chat template refused the system message, else ""."""
    if messages and messages[0].get("role") == "system" and re.search(r"system", detail, re.IGNORECASE):
        return "; pass --no-system to merge the system message into the user turn"
    return ""


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("message") or (body.get("error") or {})
        if isinstance(detail, dict):
            detail = detail.get("message") or detail
        return " ".join(str(detail).split())[:300]
    return " ".join(str(getattr(exc, "message", exc)).split())[:300]


def weights_fingerprint(model: str) -> dict[str, Any]:
    """What identifies a local model's files: every file's name and size, with its content's hash when small
    (config, tokenizer, chat template) and its modification time when large (weights). A Hub id is read in
    the Hub cache's snapshot folder; where none is found, the id alone."""
    folder = model if os.path.isdir(model) else _hub_snapshot(model)
    if folder is None:
        return {"model": model, "files": None}
    listed = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            path = os.path.join(root, name)
            size = os.path.getsize(path)
            if size <= SMALL_FILE:
                with open(path, "rb") as f:
                    mark: Any = hashlib.sha256(f.read()).hexdigest()
            else:
                mark = os.stat(path).st_mtime_ns
            listed.append([os.path.relpath(path, folder), size, mark])
    digest = hashlib.sha256(json.dumps(listed).encode("utf-8")).hexdigest()
    return {"model": model if not os.path.isdir(model) else None, "files": digest}


def _hub_snapshot(model: str) -> str | None:
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "config.json")
    except Exception:  # not a repo id the Hub library takes
        return None
    return os.path.dirname(found) if isinstance(found, str) else None


def hub_source(model: str, timeout: float = 10.0) -> bool:
    """Whether `model` (a folder, else a Hub id) must load from the Hugging Face cache alone; refused in one line when
    neither the cache nor the Hub can give it. The Hub is asked once, without retries: transformers retries every
    file for about a minute before failing, even for a model it holds in its cache."""
    if os.path.isdir(model):
        return False
    if not re.fullmatch(r"(?:[\w.-]+/)?[\w.-]{1,96}", model) or re.search(r"--|\.\.|^[.-]|[.-]$|/[.-]|[.-]/", model):
        raise ExpmrcError(f"{model}: no such folder (and no Hugging Face Hub id, which is NAME or ORG/NAME)")
    import transformers  # noqa: F401 - the train extra first: where it is missing, that is the line (not huggingface_hub)
    from huggingface_hub import HfApi, constants

    cached = _hub_snapshot(model) is not None
    get = f"download it where the network is reachable (`hf download {model}`), or give the model's folder"
    if constants.HF_HUB_OFFLINE:
        if not cached:
            raise ExpmrcError(f"{model}: no such folder, and not in the Hugging Face cache while HF_HUB_OFFLINE is "
                              f"set; {get}")
        return False  # transformers reads the cache without asking the Hub
    try:
        HfApi().model_info(model, timeout=timeout)
    except Exception as exc:  # connection and timeout errors of the HTTP client; others are transformers' to say
        if not any(kind.__name__ == "TransportError" for kind in type(exc).__mro__):
            return False
        reason = _message(exc) or type(exc).__name__
        if not cached:
            raise ExpmrcError(f"{model}: no such folder, not in the Hugging Face cache, and the Hub "
                              f"({constants.ENDPOINT}) cannot be reached ({reason}); {get}") from None
        warn(f"the Hub ({constants.ENDPOINT}) cannot be reached ({reason}); {model} is loaded from the Hugging Face "
             "cache")
        return True
    return False


class TransformersBackend:
    """A local causal LM: the tokenizer's chat template, left-padded batches, `generate`."""

    name = "transformers"
    parallel = False  # one generate call at a time; batches give the speed

    def __init__(self, model: str, batch_size: int = 8, device: str = "auto", seed: int = 0) -> None:
        cache_only = hub_source(model)  # before loading: an unreachable Hub is one line, not a minute of retries
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.model_name = model
        self.batch_size = batch_size
        self.stop = threading.Event()
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=cache_only)
            loaded: Any = AutoModelForCausalLM.from_pretrained(model, dtype="auto", local_files_only=cache_only)
        except (OSError, ValueError) as exc:
            raise ExpmrcError(f"{model}: cannot load a causal language model: {' '.join(str(exc).split())[:300]}") from None
        if not getattr(self.tokenizer, "chat_template", None):
            raise ExpmrcError(f"{model}: its tokenizer has no chat template; use a chat (instruct) model")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = loaded.to(device).eval()
        self.device: str | None = device
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.seed = seed
        generation = {k: v for k, v in self.model.generation_config.to_diff_dict().items() if k != "transformers_version"}
        self._identity = {"backend": self.name, "weights": weights_fingerprint(model), "dtype": str(self.model.dtype),
                          "generation": json.loads(json.dumps(generation, sort_keys=True, default=str))}

    def identity(self) -> dict[str, Any]:
        """What besides the request body decides a reply: the weights, the dtype and the generation settings."""
        return self._identity

    def as_sent(self, request: dict[str, Any]) -> dict[str, Any]:
        return request

    def check(self, body: dict[str, Any]) -> None:
        """Refuse, before any generation, messages the chat template will not take (a system role, say)."""
        self._prompt(body["messages"])

    def _prompt(self, messages: list[dict[str, Any]]) -> str:
        try:
            return str(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
        except Exception as exc:  # the template's own raise_exception, or any error inside it
            detail = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise ExpmrcError(f"{self.model_name}: its chat template refused the messages: {detail}"
                              f"{no_system_hint(messages, detail)}") from None

    def complete(self, bodies: list[dict[str, Any]]) -> list[Reply]:
        """Replies in order; bodies with other sampling settings (or seeds: --samples) go in separate batches."""
        groups: dict[str, list[int]] = {}
        for i, body in enumerate(bodies):
            settings = json.dumps([body["temperature"], body["top_p"], body["max_tokens"], body.get("seed", self.seed)])
            groups.setdefault(settings, []).append(i)
        replies: list[Reply | None] = [None] * len(bodies)
        for indices in groups.values():
            for i, reply in zip(indices, self._generate([bodies[i] for i in indices])):
                replies[i] = reply
        return [r for r in replies if r is not None]

    def _generate(self, bodies: list[dict[str, Any]]) -> list[Reply]:
        prompts = [self._prompt(body["messages"]) for body in bodies]
        batch = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        first = bodies[0]
        sampling: dict[str, Any] = {"do_sample": first["temperature"] > 0, "max_new_tokens": first["max_tokens"]}
        if sampling["do_sample"]:
            sampling.update(temperature=first["temperature"], top_p=first["top_p"])
        self.torch.manual_seed(first.get("seed", self.seed))
        start = time.perf_counter()
        with self.torch.inference_mode():
            output = self.model.generate(**batch, **sampling, pad_token_id=self.tokenizer.pad_token_id)
        latency = (time.perf_counter() - start) / len(bodies)
        new = output[:, batch["input_ids"].shape[1]:]
        replies = []
        for row, mask in zip(new, batch["attention_mask"]):
            ids = [int(t) for t in row if int(t) != self.tokenizer.pad_token_id]
            stopped = self.tokenizer.eos_token_id in ids or len(ids) < sampling["max_new_tokens"]
            replies.append(Reply(text=str(self.tokenizer.decode(ids, skip_special_tokens=True)),
                                 prompt_tokens=int(mask.sum()), completion_tokens=len(ids), latency=latency,
                                 finish_reason="stop" if stopped else "length", model=self.model_name))
        return replies


@dataclass(frozen=True)
class BackendKind:
    """A registered backend: how it is made from the run's settings, whether it is a remote endpoint (then
    structured output may be asked for, and its URL and key variable are recorded), and one line for --help."""

    make: Callable[[LLMConfig], Backend]
    remote: bool
    summary: str


def check_base_url(url: str) -> None:
    """Refuse in one line a --base-url that is no http(s) URL with a host and a port from 0 to 65535 (the
    client's own URL parser would end in a traceback)."""
    try:
        parts = urlsplit(url.strip())
        _ = parts.port  # reading it checks it
    except ValueError as exc:
        raise ExpmrcError(f"--base-url {public_url(url)!r}: not a URL ({exc})") from None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise ExpmrcError(f"--base-url {public_url(url)!r}: expected an http:// or https:// URL with a host")


def _openai_backend(settings: LLMConfig) -> OpenAIBackend:
    """An endpoint at --base-url; the API key comes from the environment only."""
    check_base_url(settings.base_url)
    return OpenAIBackend(settings.base_url, os.environ.get(settings.api_key_env, ""), settings.retries,
                         settings.timeout, settings.backoff, settings.api_key_env)


def _transformers_backend(settings: LLMConfig) -> TransformersBackend:
    return TransformersBackend(settings.model, settings.batch_size, settings.device, settings.seed)


BACKENDS: Registry[BackendKind] = Registry.of("backend", {
    "openai": BackendKind(_openai_backend, remote=True, summary="any OpenAI-compatible chat-completions endpoint (--base-url)"),
    "transformers": BackendKind(_transformers_backend, remote=False,
                                summary="a local causal LM with a chat template (a folder or Hub id), run by transformers"),
})


def make_backend(args: LLMConfig) -> Backend:
    """The backend the flags name (a registered one, perhaps the user's own: one that lacks a member of the
    `Backend` contract is refused in one line); the API key comes from the environment only."""
    backend = BACKENDS.lookup(args.backend, "--backend: ").make(args)
    if missing := [name for name in CONTRACT if not hasattr(backend, name)]:
        raise ExpmrcError(f"--backend {args.backend}: {type(backend).__name__} lacks {', '.join(missing)}, which "
                          "every backend has (expmrc.llm.backends.Backend)")
    return backend
