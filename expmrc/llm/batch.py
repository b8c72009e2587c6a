"""The OpenAI Batch JSONL format, which `vllm run-batch` also reads: one request per line out, one
response per line back, each tied to its question by `custom_id` (the question id)."""

from __future__ import annotations

import json
from typing import Any

from expmrc.data.io import write_text_atomic
from expmrc.errors import ExpmrcError
from expmrc.llm.backends import Reply, reply_from_completion

ENDPOINT = "/v1/chat/completions"


def export_batch(path: str, requests: dict[str, dict[str, Any]]) -> None:
    """Write one Batch request line per question: custom_id, method, url and the chat-completions body."""
    lines = [json.dumps({"custom_id": qid, "method": "POST", "url": ENDPOINT, "body": body}, ensure_ascii=False)
             for qid, body in requests.items()]
    write_text_atomic(path, "\n".join(lines) + "\n")


def import_batch(path: str, qids: set[str]) -> dict[str, Reply]:
    """Replies by question id from a Batch output file; a line that is not a response, or names a question
    the run does not ask, is refused in one line; a failed request becomes an empty reply."""
    replies: dict[str, Reply] = {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = list(f)
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpmrcError(f"{path}: cannot read the batch output: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            qid = record["custom_id"]
        except (ValueError, KeyError, TypeError):
            raise ExpmrcError(f"{path}: line {number}: not a Batch output record with a custom_id") from None
        if qid not in qids:
            raise ExpmrcError(f"{path}: line {number}: custom_id {qid!r} is no question of this run")
        response = record.get("response") or {}
        body = response.get("body") if isinstance(response, dict) else None
        if record.get("error") or not isinstance(body, dict) or response.get("status_code", 200) != 200:
            replies[qid] = Reply(text="", finish_reason="error")
        else:
            replies[qid] = reply_from_completion(body)
    return replies
