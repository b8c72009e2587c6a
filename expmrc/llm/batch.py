"""The OpenAI Batch JSONL format, which `vllm run-batch` also reads: one request per line out, one
response per line back, each tied to its request by `custom_id` (the question id, or `ID#i` for the i-th
of --samples).

A response body that is no chat completion (a string, an array, `choices` or `content` of another type,
a failed request) becomes a counted per-question failure, as from a server; a line that is not a Batch
record, names a request the run does not make, or answers one a second time is refused in one line.
"""

from __future__ import annotations

import json
from typing import Any

from expmrc.data.io import write_text_atomic
from expmrc.errors import ExpmrcError
from expmrc.llm.completion import Reply, failed, kind_of, read_completion

ENDPOINT = "/v1/chat/completions"


def export_batch(path: str, requests: dict[str, dict[str, Any]]) -> None:
    """Write one Batch request line per request: custom_id, method, url and the chat-completions body."""
    lines = [json.dumps({"custom_id": rid, "method": "POST", "url": ENDPOINT, "body": body}, ensure_ascii=False)
             for rid, body in requests.items()]
    write_text_atomic(path, "\n".join(lines) + "\n")


def _record(path: str, number: int, line: str) -> tuple[str, dict[str, Any]]:
    """The custom_id and record of one output line; anything else is one line naming the file and line."""
    try:
        record = json.loads(line)
    except RecursionError:
        raise ExpmrcError(f"{path}: line {number}: JSON nested too deeply to read") from None
    except ValueError:
        raise ExpmrcError(f"{path}: line {number}: not JSON (truncated or damaged Batch output?)") from None
    if not isinstance(record, dict) or not isinstance(record.get("custom_id"), str):
        got = kind_of(record.get("custom_id")) if isinstance(record, dict) else kind_of(record)
        raise ExpmrcError(f"{path}: line {number}: not a Batch output record with a custom_id (got {got})")
    return record["custom_id"], record


def _samples(rids: set[str] | dict[str, Any]) -> int:
    """How many samples per question these request ids hold (`ID#0` ... `ID#N-1`; 1 for bare ids)."""
    return max((int(r.rpartition("#")[2]) + 1 for r in rids if r.rpartition("#")[2].isdigit()), default=1)


def _samples_hint(rid: str, rids: set[str]) -> str:
    """Where an unknown custom_id is a question's request under another --samples (`ID` or `ID#i`): says so."""
    samples = _samples(rids)
    now = f"this run asks {samples} per question (--samples {samples})" if samples > 1 else "this run asks one"
    qid, sample, index = rid.rpartition("#")
    if sample and index.isdigit() and (qid in rids or f"{qid}#0" in rids):
        return f": it is sample {index} of question {qid}; {now}: give the --samples the requests were exported with"
    if f"{rid}#0" in rids:
        return f": it is question {rid}'s only request, exported without --samples; {now}: drop --samples"
    return ""


def _reply(record: dict[str, Any]) -> Reply:
    """The reply a Batch output record holds, or a failed one saying why there is none."""
    error, response = record.get("error"), record.get("response")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        return failed(f"the Batch request failed: {' '.join(str(message).split())[:200]}")
    if not isinstance(response, dict):
        return failed(f"`response` is {kind_of(response)}, not a response")
    status = response.get("status_code", 200)
    if status != 200:
        return failed(f"the Batch request got status {json.dumps(status)}")
    return read_completion(response.get("body"))


def import_batch(path: str, rids: set[str]) -> dict[str, Reply]:
    """Replies by request id from a Batch output file (see the module's docstring)."""
    replies: dict[str, Reply] = {}
    first_line: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = list(f)
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpmrcError(f"{path}: cannot read the batch output: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        rid, record = _record(path, number, line)
        if rid not in rids:
            raise ExpmrcError(f"{path}: line {number}: custom_id {rid!r} is no request of this run{_samples_hint(rid, rids)}")
        if rid in first_line:
            raise ExpmrcError(f"{path}: line {number}: custom_id {rid!r} answered a second time (first on line "
                              f"{first_line[rid]}); a Batch output holds one response per request")
        first_line[rid] = number
        replies[rid] = _reply(record)
    samples, answered = _samples(rids), _samples(replies)
    if replies and answered < samples:  # exported with fewer --samples: the votes would count missing replies
        raise ExpmrcError(f"{path}: answers {answered} sample(s) per question, this run asks {samples} (--samples "
                          f"{samples}); give the --samples the requests were exported with")
    return replies
