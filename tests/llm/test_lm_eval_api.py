"""`pip install '.[test]'` gives what lm-eval's API models need: the test extra asks for `lm-eval[api]`, and
what `--model local-chat-completions` (the one docs/llm.md shows against a server) needs is installed here."""

from __future__ import annotations

import tomllib
from importlib import metadata

from helpers.common import ROOT
from packaging.requirements import Requirement


def test_the_test_extra_brings_lm_evals_api_models():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    lm_eval = next(Requirement(r) for r in extras["test"] if Requirement(r).name == "lm-eval")
    assert "api" in lm_eval.extras


def test_what_lm_evals_api_models_need_is_installed():
    """Every requirement lm-eval lists under its `api` extra (tenacity, aiohttp, tiktoken, ...) is installed:
    without tenacity, `local-chat-completions` loads but fails on its first request."""
    needed = [Requirement(r) for r in metadata.requires("lm-eval") or []]
    api = [r.name for r in needed if r.marker is not None and r.marker.evaluate({"extra": "api"})
           and not r.marker.evaluate({"extra": ""})]
    assert "tenacity" in api
    for name in api:
        assert metadata.version(name), name
