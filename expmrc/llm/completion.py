"""Reading one chat-completions reply, whatever a server (or a Batch output file) sent.

A 200 reply that is no chat completion (an HTML login page, plain text, an event stream, a JSON string or
array, truncated or empty JSON, `choices`, `message` or `content` of another type) becomes a `Reply` with
an `error`: a counted per-question failure, never cached, never a traceback. Content given as a list of
parts (which the API allows) is read part by part. Token counts that are not whole numbers from 0 to
`MAX_REPORTED_TOKENS` (negative, fractional, NaN, huge) are not trusted: they count as 0 and the reply
says why, so no cost is computed from them.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

MAX_REPORTED_TOKENS = 10**8  # more tokens than any context window holds: a count above it is not believed
_TEXT_PARTS = ("text", "output_text")  # the `type` of a content part holding text


@dataclass
class Reply:
    """One reply: its text, token counts, seconds taken, why generation stopped, and what the server said of itself.

    `error` says why there is no usable reply (not a chat completion, a failed Batch line): such a reply is
    never cached. `usage_note` says why the token counts were not trusted (they are then 0)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency: float = 0.0
    finish_reason: str | None = None
    reasoning: str | None = None  # `reasoning_content` / `reasoning`, as reasoning models send it
    model: str | None = None  # the server's own model id
    system_fingerprint: str | None = None
    error: str | None = None
    usage_note: str | None = None

    @property
    def cacheable(self) -> bool:
        """Whether the reply may be stored: a real reply with text (a failed or empty one is asked again)."""
        return self.error is None and bool(self.text.strip())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Reply:
        """A Reply from `to_json`'s output (a cache row); ValueError when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise ValueError("not a reply record")
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        reply = cls(**fields)
        counts = (reply.prompt_tokens, reply.completion_tokens)
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
            raise ValueError("token counts are not whole numbers")
        if not isinstance(reply.latency, int | float) or not math.isfinite(reply.latency):
            raise ValueError("latency is not a number")
        for name in ("finish_reason", "reasoning", "model", "system_fingerprint", "error", "usage_note"):
            if not isinstance(getattr(reply, name), str | None):
                raise ValueError(f"{name} is not text")
        return reply


def failed(why: str, latency: float = 0.0) -> Reply:
    """A reply that is not one: empty text and the reason."""
    return Reply(text="", latency=latency, finish_reason="error", error=why)


def kind_of(value: Any) -> str:
    """What a JSON value is, in words (`a JSON array`)."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def read_body(content: bytes, content_type: str = "", latency: float = 0.0) -> Reply:
    """The Reply in an HTTP response body; a body that is no chat completion gives a failed Reply saying what it is."""
    text = content.decode("utf-8", errors="replace").strip()
    if not text:
        return failed("an empty body, not a chat completion", latency)
    if "event-stream" in content_type.lower() or text.startswith(("data:", "event:")):
        return failed("an event stream (as for stream: true), not a chat completion", latency)
    if text.startswith("<"):
        return failed(f"an HTML or XML page (a login or proxy page?), not a chat completion: {_start(text)}", latency)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text) - 1 or exc.msg.startswith("Unterminated"):
            return failed(f"truncated JSON ({len(text)} characters), not a whole chat completion", latency)
        return failed(f"plain text, not a chat completion: {_start(text)}", latency)
    except RecursionError:
        return failed("JSON nested too deeply to read, not a chat completion", latency)
    except ValueError:  # an integer of more digits than int() takes
        return failed("JSON holding an integer too long to read, not a chat completion", latency)
    return read_completion(data, latency)


def _start(text: str) -> str:
    return repr(" ".join(text[:80].split()))


def read_completion(data: Any, latency: float = 0.0) -> Reply:
    """The Reply of a chat completion given as parsed JSON; anything else is a failed Reply saying what it is."""
    if not isinstance(data, dict):
        return failed(f"{kind_of(data)} in JSON, not a chat completion", latency)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        if error is not None:
            return failed(f"an error from the server: {_error_text(error)}", latency)
        what = "no `choices`" if choices is None else f"`choices` is {kind_of(choices)}" + (
            "" if choices else " with nothing in it")
        return failed(f"{what}, not a chat completion", latency)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        where = "`choices[0]`" if not isinstance(choice, dict) else "`choices[0].message`"
        got = choice if not isinstance(choice, dict) else message
        return failed(f"{where} is {kind_of(got)}, not a message", latency)
    text, problem = content_text(message.get("content"))
    prompt, completion, note = read_usage(data.get("usage"))
    reply = Reply(text=text, prompt_tokens=prompt, completion_tokens=completion, latency=latency,
                  finish_reason=_text_or_none(choice.get("finish_reason")),
                  reasoning=_text_or_none(message.get("reasoning_content")) or _text_or_none(message.get("reasoning")),
                  model=_text_or_none(data.get("model")), system_fingerprint=_text_or_none(data.get("system_fingerprint")),
                  error=problem, usage_note=note)
    refusal = _text_or_none(message.get("refusal"))
    if refusal and not text.strip() and reply.error is None:
        reply.error = f"the model refused: {' '.join(refusal.split())[:200]}"
    return reply


def content_text(content: Any) -> tuple[str, str | None]:
    """A message's text: a string as is, a list of content parts joined (text parts only); and what is wrong."""
    if content is None or isinstance(content, str):
        return content or "", None
    if isinstance(content, list):
        texts = [part if isinstance(part, str) else part.get("text") for part in content
                 if isinstance(part, str) or (isinstance(part, dict) and part.get("type", "text") in _TEXT_PARTS)]
        if content and not any(isinstance(t, str) for t in texts):
            return "", "`content` is a list of parts none of which is text"
        return "".join(t for t in texts if isinstance(t, str)), None
    return "", f"`content` is {kind_of(content)}, not text"


def read_usage(usage: Any) -> tuple[int, int, str | None]:
    """Prompt and completion tokens from `usage`, and why they are not trusted (then both are 0)."""
    if usage is None:
        return 0, 0, "the server sent no usage"
    if not isinstance(usage, dict):
        return 0, 0, f"`usage` is {kind_of(usage)}"
    counts = []
    for name in ("prompt_tokens", "completion_tokens"):
        value = usage.get(name)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_REPORTED_TOKENS:
            shown = "missing" if name not in usage else json.dumps(value) if not isinstance(value, float) else repr(value)
            return 0, 0, f"usage.{name} is {shown}, not a token count from 0 to {MAX_REPORTED_TOKENS:,}"
        counts.append(value)
    return counts[0], counts[1], None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _error_text(error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else error
    return " ".join(str(message).split())[:200]
