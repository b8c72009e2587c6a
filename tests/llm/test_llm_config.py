"""`expmrc llm` parses its flags once into an `LLMConfig`, and every command's judge flags into a `JudgeConfig`;
each configuration's defaults are its flags' own."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, field, fields, make_dataclass

import pytest

from expmrc.cli.judge_flags import add_judge_arguments
from expmrc.cli.llm import add_arguments
from expmrc.errors import ExpmrcError
from expmrc.llm.config import LLMConfig
from expmrc.llm.judges import JudgeConfig


def parse(*argv: str) -> LLMConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return LLMConfig.from_flags(vars(parser.parse_args(list(argv))))


def test_the_flags_defaults_are_the_configurations():
    assert parse("squad", "--model", "m") == LLMConfig("squad", "m")


def test_every_flag_reaches_the_configuration():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    names = {action.dest for action in parser._actions if action.dest != "help"}
    judge = {name for name in names if name == "judge" or name.startswith("judge_")}  # --judge: the judge's own
    assert names - judge <= {f for f in LLMConfig.__dataclass_fields__}  # a flag without a field would be lost
    assert {name.removeprefix("judge_") for name in judge} <= set(JudgeConfig.__dataclass_fields__)
    config = parse("c3", "--model", "m", "--backend", "transformers", "--top-p", "0.5", "--price", "1,2", "--limit", "3")
    assert (config.backend, config.top_p, config.price, config.limit) == ("transformers", 0.5, (1.0, 2.0), 3)


def test_the_flags_read_their_defaults_from_the_configuration(monkeypatch):
    """A default changed in `LLMConfig` alone is the flag's default and what --help says (one set of defaults)."""
    import expmrc.cli.llm as cli_llm

    changed = {f.name: other_value(f.default) for f in fields(LLMConfig)
               if f.default is not MISSING and f.default is not None and not isinstance(f.default, bool)}
    moved = make_dataclass("Moved", [(name, type(value), field(default=value)) for name, value in changed.items()],
                           bases=(LLMConfig,), frozen=True)
    monkeypatch.setattr(cli_llm, "LLMConfig", moved)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = {action.dest for action in parser._actions}
    assert {name: parser.get_default(name) for name in changed if name in flags} == \
        {name: value for name, value in changed.items() if name in flags}
    assert set(changed) - flags == set()  # every such setting is a flag
    text = " ".join(parser.format_help().split())
    for name in ("max_tokens", "base_url", "backend", "timeout"):
        assert f"(default {changed[name]:g})" in text if isinstance(changed[name], float) else \
            f"(default {changed[name]})" in text, name


def judge_flags(own: bool, *argv: str) -> dict:
    parser = argparse.ArgumentParser()
    add_judge_arguments(parser, own)
    return vars(parser.parse_args(list(argv)))


@pytest.mark.parametrize("own", [True, False], ids=["judge", "elsewhere"])
def test_the_judge_flags_build_the_judge_configuration_with_its_defaults(own):
    """`expmrc judge`'s flags and the --judge-NAME ones of evaluate, compare and llm give one `JudgeConfig`; a
    setting a command does not offer keeps the configuration's default."""
    assert JudgeConfig.from_flags(judge_flags(own, "--judge", "chat", "--judge-model", "m")) == JudgeConfig("chat", "m")
    given = ["--batch-size", "3", "--no-cache"] if own else ["--judge-batch-size", "3", "--judge-no-cache"]
    config = JudgeConfig.from_flags({**judge_flags(own, "--judge", "nli", "--judge-model", "m", *given), "quiet": True})
    assert (config.judge, config.model, config.batch_size, config.no_cache, config.quiet) == ("nli", "m", 3, True, True)
    with pytest.raises(ExpmrcError, match=r"^--judge nli needs --judge-model"):
        JudgeConfig.from_flags(judge_flags(own, "--judge", "nli"))


def test_the_judge_flags_read_their_defaults_from_the_judge_configuration(monkeypatch):
    """A default changed in `JudgeConfig` alone is the judge flag's default and what --help says."""
    import expmrc.cli.judge_flags as flags

    changed = {f.name: other_value(f.default) for f in fields(JudgeConfig)
               if f.default is not MISSING and f.default is not None and not isinstance(f.default, bool)}
    moved = make_dataclass("Moved", [(name, type(value), field(default=value)) for name, value in changed.items()],
                           bases=(JudgeConfig,), frozen=True)
    monkeypatch.setattr(flags, "JudgeConfig", moved)
    parser = argparse.ArgumentParser()
    add_judge_arguments(parser, own=True)
    offered = {name: parser.get_default("judge_" + name) for name in changed if "judge_" + name in
               {action.dest for action in parser._actions}}
    assert offered == {name: value for name, value in changed.items() if name in offered}
    assert {"base_url", "batch_size", "timeout", "max_tokens"} <= set(offered)
    text = " ".join(parser.format_help().split())
    assert f"(default {changed['base_url']})" in text and f"(default {changed['timeout']:g})" in text


def other_value(value: object) -> object:
    """A value of the same type, other than `value`."""
    if isinstance(value, str):
        return value + "x"
    return value + 1
