"""`expmrc llm` parses its flags once into an `LLMConfig`, whose defaults are the flags' own."""

from __future__ import annotations

import argparse

from expmrc.cli.llm import add_arguments
from expmrc.llm.config import LLMConfig


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
    assert names <= {f for f in LLMConfig.__dataclass_fields__}  # a flag without a field would be lost
    config = parse("c3", "--model", "m", "--backend", "transformers", "--top-p", "0.5", "--price", "1,2", "--limit", "3")
    assert (config.backend, config.top_p, config.price, config.limit) == ("transformers", 0.5, (1.0, 2.0), 3)
