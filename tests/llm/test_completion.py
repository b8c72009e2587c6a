"""Reading one chat-completions reply: the shapes servers really send are read, and any JSON value or byte string
at all gives a Reply (a failed one saying what came), never an exception; a damaged cache row is refused."""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import given, settings, strategies as st
from helpers.fake_openai import completion

from expmrc.llm.completion import Reply, read_body, read_completion, read_usage

FUZZ = settings(max_examples=int(os.environ.get("EXPMRC_FUZZ_EXAMPLES", "150")), deadline=None, database=None,
                derandomize=bool(os.environ.get("CI")))  # the same sequence under CI, as tests/fuzz does
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)
KEYS = st.sampled_from(["choices", "message", "content", "usage", "prompt_tokens", "completion_tokens", "text",
                        "type", "finish_reason", "model", "reasoning_content", "refusal", "error"])
SHAPED = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=5),
                      max_leaves=25)


@FUZZ
@given(st.one_of(JSON, SHAPED))
def test_any_json_value_gives_a_reply_never_an_exception(value):
    reply = read_completion(value)
    assert isinstance(reply.text, str) and reply.prompt_tokens >= 0 and reply.completion_tokens >= 0
    assert reply.error is None or not reply.cacheable
    json.dumps(reply.to_json(), allow_nan=False)  # a reply can always be stored


@FUZZ
@given(st.binary(max_size=200), st.sampled_from(["application/json", "text/html", "text/event-stream", ""]))
def test_any_body_gives_a_reply_never_an_exception(body, content_type):
    assert isinstance(read_body(body, content_type), Reply)


@FUZZ
@given(st.one_of(JSON, SHAPED))
def test_a_cache_row_either_reads_back_as_a_reply_or_is_refused(value):
    try:
        reply = Reply.from_json(value)
    except ValueError:
        return
    assert isinstance(reply.text, str) and reply.prompt_tokens >= 0


def test_realistic_shapes_are_read():
    reply = read_completion(completion("hi", model="served", system_fingerprint="fp_1", finish_reason="length",
                                       message={"reasoning": "think"}))
    assert (reply.text, reply.model, reply.system_fingerprint, reply.finish_reason, reply.reasoning) == (
        "hi", "served", "fp_1", "length", "think")
    assert (reply.prompt_tokens, reply.completion_tokens, reply.usage_note, reply.error) == (100, 20, None, None)
    parts = read_completion(completion(["a", {"type": "text", "text": "b"}, {"type": "output_text", "text": "c"},
                                        {"type": "image_url", "image_url": {}}]))
    assert parts.text == "abc" and parts.error is None
    assert read_completion(completion(None)).error is None and not read_completion(completion(None)).cacheable


@pytest.mark.parametrize(("usage", "trusted"), [
    ({"prompt_tokens": 5, "completion_tokens": 7}, (5, 7)),
    ({"prompt_tokens": 5.0, "completion_tokens": 7}, (5, 7)),  # a whole number written as a float
    ({"prompt_tokens": 5.5, "completion_tokens": 7}, None),
    ({"prompt_tokens": -1, "completion_tokens": 7}, None),
    ({"prompt_tokens": True, "completion_tokens": 7}, None),
    ({"prompt_tokens": math.nan, "completion_tokens": 7}, None),
    ({"prompt_tokens": math.inf, "completion_tokens": 7}, None),
    ({"prompt_tokens": 10**9, "completion_tokens": 7}, None),
    ({"completion_tokens": 7}, None),
    (None, None),
    ("12", None),
])
def test_usage_is_trusted_only_as_whole_token_counts(usage, trusted):
    prompt, completion_tokens, note = read_usage(usage)
    if trusted is None:
        assert (prompt, completion_tokens) == (0, 0) and note
    else:
        assert (prompt, completion_tokens, note) == (*trusted, None)
