"""The chat requests of a run: each question's messages (the template, few-shot turns, the system prompt as a
system turn or merged into the first user turn) and its chat-completions body, one per sample, with the
sampling parameters. The body is what is sent, exported to a Batch file, and part of the cache key."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expmrc.data.datasets import ChoiceQuestion, Question
from expmrc.errors import ExpmrcError
from expmrc.llm.prompts import PromptTemplate, answer_schema, build_messages
from expmrc.llm.samples import request_ids
from expmrc.llm.shots import Shot


@dataclass
class Sampling:
    """The sampling parameters sent with every request (and part of the cache key); `samples` per question."""

    temperature: float
    top_p: float
    max_tokens: int
    seed: int
    samples: int


@dataclass(frozen=True)
class SystemPrompt:
    """The system message: the template's (`text` None) or the user's, sent as a system turn or merged into
    the first user turn (`merge`, for chat templates without a system role)."""

    text: str | None = None
    source: str = "template"  # "template", "text" or "file:PATH"
    merge: bool = False


# A value with no space that has a folder separator, starts with ~ or ends in a file extension is a path, not a
# message: naming no regular file, it is refused rather than sent as the system text.
_PATH_LIKE = re.compile(r"~\S*|\S*[/\\]\S*|\S+\.[A-Za-z0-9]{1,8}")


def read_system_prompt(value: str | None, merge: bool) -> SystemPrompt:
    """--system-prompt TEXT|FILE: a regular file that exists is read; something else that exists (a folder, a
    FIFO, a device), a broken link, or a path-like word naming nothing is refused; anything else is the text."""
    if value is None:
        return SystemPrompt(merge=merge)
    if os.path.lexists(value) or _PATH_LIKE.fullmatch(value):
        text, source = _system_file(value), f"file:{value}"
    else:
        text, source = value, "text"
    if not text.strip():
        raise ExpmrcError(f"--system-prompt {value!r}: empty; give the text of a system message (or a file holding "
                          "it), or leave the flag out for the template's own")
    return SystemPrompt(text, source, merge)


def _system_file(path: str) -> str:
    """The text of the system-prompt file `path`, or one line saying why it cannot be one."""
    if os.path.isdir(path):
        raise ExpmrcError(f"--system-prompt {path}: is a folder; give a file holding the system message, or the text")
    if os.path.islink(path) and not os.path.exists(path):
        raise ExpmrcError(f"--system-prompt {path}: is a broken symbolic link (to {os.readlink(path)})")
    if not os.path.exists(path):
        raise ExpmrcError(f"--system-prompt {path}: no such file (give the text itself, or a file that exists)")
    if not os.path.isfile(path):
        raise ExpmrcError(f"--system-prompt {path}: is not a regular file (a FIFO, device or socket); give a file "
                          "holding the system message, or the text")
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpmrcError(f"{path}: cannot read the system prompt: {exc}") from None


def with_system(messages: list[dict[str, str]], system: SystemPrompt) -> list[dict[str, str]]:
    """The messages with the chosen system text, as a system turn or merged into the first user turn."""
    has_system = bool(messages) and messages[0]["role"] == "system"
    text = system.text if system.text is not None else (messages[0]["content"] if has_system else "")
    rest = messages[1:] if has_system else messages
    if not system.merge:
        return [{"role": "system", "content": text}, *rest] if text else list(rest)
    merged = [dict(m) for m in rest]
    first = next((m for m in merged if m["role"] == "user"), None)
    if first is not None and text:
        first["content"] = f"{text}\n\n{first['content']}"
    return merged


def render(template: PromptTemplate, question: Question, language: str, shots: list[Shot]) -> list[dict[str, str]]:
    """The messages of one question; any error of a user's template (an {% include %}, a division by zero) is one line."""
    try:
        return build_messages(template, question, language, shots)
    except ExpmrcError:
        raise
    except Exception as exc:
        detail = " ".join(str(exc).split())[:200]
        raise ExpmrcError(f"prompt template {template.name}: cannot render question {question.qid}: "
                          f"{type(exc).__name__}: {detail}") from None


def build_requests(questions: list[Question], template: PromptTemplate, language: str, shots: list[Shot],
                   model: str, sampling: Sampling, structured: bool, system: SystemPrompt) -> dict[str, dict[str, Any]]:
    """The chat-completions body of every request, by request id (see samples.request_ids); template errors
    surface here, before any request."""
    requests = {}
    for question in questions:
        body: dict[str, Any] = {"model": model,
                                "messages": with_system(render(template, question, language, shots), system),
                                "temperature": sampling.temperature, "top_p": sampling.top_p,
                                "max_tokens": sampling.max_tokens}
        if structured:
            n_options = len(question.options) if isinstance(question, ChoiceQuestion) else 0
            schema = answer_schema(template.task, n_options, template.reasoning, template.evidence_form)
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "expmrc_reply", "schema": schema, "strict": True}}
        for i, rid in enumerate(request_ids(question.qid, sampling.samples)):
            requests[rid] = {**body, "seed": sampling.seed + i}
    return requests
