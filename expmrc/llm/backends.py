"""Where replies come from: any OpenAI-compatible chat-completions endpoint (the official `openai` client),
or a local Hugging Face causal LM (transformers, the tokenizer's chat template, batched generation).

A request is a plain dict (the chat-completions body, which is also the cache key and the Batch-file
body); a backend turns a list of them into `Reply`s. The OpenAI backend retries rate limits (429),
server errors (5xx), timeouts and refused connections with exponential backoff, and nothing else: any
other 4xx is the user's to fix and ends the run in one line.
"""

from __future__ import annotations

import random
import time
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from expmrc.errors import ExpmrcError, warn
from expmrc.llm.config import LLMConfig
from expmrc.registry import Registry


@dataclass
class Reply:
    """One reply: its text, token counts, seconds taken and why generation stopped."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency: float = 0.0
    finish_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "latency": self.latency, "finish_reason": self.finish_reason}


def reply_from_completion(completion: Any, latency: float = 0.0) -> Reply:
    """A Reply from a chat-completions response (the client's object or its JSON as a dict)."""
    data = completion if isinstance(completion, dict) else completion.model_dump()
    choices = data.get("choices") or [{}]
    message = choices[0].get("message") or {}
    usage = data.get("usage") or {}
    return Reply(text=message.get("content") or "", prompt_tokens=int(usage.get("prompt_tokens") or 0),
                 completion_tokens=int(usage.get("completion_tokens") or 0), latency=latency,
                 finish_reason=choices[0].get("finish_reason"))


def public_url(url: str) -> str:
    """A URL without user info, query or fragment, fit to print and record (no secret rides along)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class OpenAIBackend:
    """Chat completions over HTTP; one request per call, run concurrently by the caller."""

    name = "openai"
    batch_size = 1
    parallel = True  # calls may run in threads at once (--concurrency)

    def __init__(self, base_url: str, api_key: str, retries: int = 5, timeout: float = 600.0,
                 backoff: float = 1.0, key_name: str = "OPENAI_API_KEY") -> None:
        import openai

        self.url = public_url(base_url)
        self.retries = retries
        self.backoff = backoff
        self.key_name = key_name  # the environment variable the key came from, named in errors
        self.structured = True  # set False once the server refuses `response_format`
        self._openai = openai
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0, timeout=timeout)

    def complete(self, requests: list[dict[str, Any]]) -> list[Reply]:
        return [self._one(request) for request in requests]

    def _one(self, request: dict[str, Any]) -> Reply:
        errors = self._openai
        for attempt in range(self.retries + 1):
            body = request if self.structured else {k: v for k, v in request.items() if k != "response_format"}
            start = time.perf_counter()
            try:
                completion = self.client.chat.completions.create(**body)
                return reply_from_completion(completion, time.perf_counter() - start)
            except (errors.RateLimitError, errors.InternalServerError, errors.APIConnectionError) as exc:
                if attempt == self.retries:
                    raise ExpmrcError(self._gave_up(exc)) from None
                time.sleep(self._delay(attempt, exc))
            except errors.APIStatusError as exc:
                if self._drop_response_format(exc, body):
                    continue
                raise ExpmrcError(self._refused(exc, request["model"])) from None
        raise AssertionError("unreachable")

    def _delay(self, attempt: int, exc: Exception) -> float:
        """Exponential backoff with jitter; a server's Retry-After (seconds) is honoured up to a minute."""
        response = getattr(exc, "response", None)
        after = response.headers.get("retry-after") if response is not None else None
        if after and after.replace(".", "", 1).isdigit():
            return min(float(after), 60.0)
        return self.backoff * (2 ** attempt) * (0.5 + random.random() / 2)

    def _drop_response_format(self, exc: Any, body: dict[str, Any]) -> bool:
        """True (and warn once) when the server refused the JSON schema: resend as plain text."""
        text = str(getattr(exc, "message", exc)).lower()
        if "response_format" in body and exc.status_code in (400, 422) and (
                "response_format" in text or "json_schema" in text):
            self.structured = False
            warn(f"{self.url} does not take response_format with a JSON schema; replies are parsed as text")
            return True
        return False

    def _gave_up(self, exc: Exception) -> str:
        status = getattr(exc, "status_code", None)
        if status:
            what = f"status {status}"
        elif isinstance(exc, self._openai.APITimeoutError):
            what = "timed out; raise --timeout?"
        else:
            what = f"cannot connect: {_message(exc)}"
        return f"{self.url}: no reply after {self.retries} retries ({what})"

    def _refused(self, exc: Any, model: str) -> str:
        detail = _message(exc)
        if exc.status_code in (401, 403):
            return f"{self.url} refused the API key ({exc.status_code}): {detail}; check ${self.key_name} (--api-key-env)"
        if exc.status_code == 404:
            return f"{self.url}: model {model!r} not found, or no chat-completions endpoint there (404): {detail}"
        return f"{self.url} refused the request for model {model!r} ({exc.status_code}): {detail}"


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("message") or (body.get("error") or {})
        if isinstance(detail, dict):
            detail = detail.get("message") or detail
        return " ".join(str(detail).split())[:300]
    return " ".join(str(getattr(exc, "message", exc)).split())[:300]


class TransformersBackend:
    """A local causal LM: the tokenizer's chat template, left-padded batches, `generate`."""

    name = "transformers"
    parallel = False  # one generate call at a time; batches give the speed

    def __init__(self, model: str, batch_size: int = 8, device: str = "auto", seed: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.batch_size = batch_size
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            loaded: Any = AutoModelForCausalLM.from_pretrained(model, dtype="auto")
        except (OSError, ValueError) as exc:
            raise ExpmrcError(f"{model}: cannot load a causal language model: {' '.join(str(exc).split())[:300]}") from None
        if not getattr(self.tokenizer, "chat_template", None):
            raise ExpmrcError(f"{model}: its tokenizer has no chat template; use a chat (instruct) model")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = loaded.to(device).eval()
        self.device = device
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        torch.manual_seed(seed)

    def complete(self, requests: list[dict[str, Any]]) -> list[Reply]:
        prompts = [self.tokenizer.apply_chat_template(r["messages"], add_generation_prompt=True, tokenize=False)
                   for r in requests]
        batch = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        first = requests[0]
        sampling: dict[str, Any] = {"do_sample": first["temperature"] > 0, "max_new_tokens": first["max_tokens"]}
        if sampling["do_sample"]:
            sampling.update(temperature=first["temperature"], top_p=first["top_p"])
        start = time.perf_counter()
        with self.torch.inference_mode():
            output = self.model.generate(**batch, **sampling, pad_token_id=self.tokenizer.pad_token_id)
        latency = (time.perf_counter() - start) / len(requests)
        new = output[:, batch["input_ids"].shape[1]:]
        replies = []
        for row, mask in zip(new, batch["attention_mask"]):
            ids = [int(t) for t in row if int(t) != self.tokenizer.pad_token_id]
            stopped = self.tokenizer.eos_token_id in ids or len(ids) < sampling["max_new_tokens"]
            replies.append(Reply(text=str(self.tokenizer.decode(ids, skip_special_tokens=True)),
                                 prompt_tokens=int(mask.sum()), completion_tokens=len(ids), latency=latency,
                                 finish_reason="stop" if stopped else "length"))
        return replies


@dataclass(frozen=True)
class BackendKind:
    """A registered backend: how it is made from the run's settings, and whether it is a remote endpoint (then
    structured output may be asked for, and its URL and key variable are recorded)."""

    make: Callable[[LLMConfig], Any]
    remote: bool


def _openai_backend(settings: LLMConfig) -> OpenAIBackend:
    """An endpoint at --base-url; the API key comes from the environment only."""
    if not settings.base_url.startswith(("http://", "https://")):
        raise ExpmrcError(f"--base-url {settings.base_url!r}: expected an http:// or https:// URL")
    return OpenAIBackend(settings.base_url, os.environ.get(settings.api_key_env, ""), settings.retries,
                         settings.timeout, settings.backoff, settings.api_key_env)


def _transformers_backend(settings: LLMConfig) -> TransformersBackend:
    return TransformersBackend(settings.model, settings.batch_size, settings.device, settings.seed)


BACKENDS: Registry[BackendKind] = Registry.of("backend", {
    "openai": BackendKind(_openai_backend, remote=True),
    "transformers": BackendKind(_transformers_backend, remote=False),
})
