"""One kind of registry for every pluggable thing: unique names, and an unknown name is one line listing the
choices."""

from __future__ import annotations

import pytest

from expmrc.errors import ExpmrcError
from expmrc.registry import Registry


def test_names_are_unique_and_an_unknown_one_lists_the_choices():
    shapes = Registry.of("shape", {"circle": 1, "square": 4}, aliases={"round": "circle"})
    assert shapes.get("oval") is None
    assert shapes.lookup("round") == 1 and shapes.canonical("round") == "circle" and list(shapes) == ["circle", "square"]
    with pytest.raises(ValueError, match="shape 'square' is registered twice"):
        shapes.add("square", 5)
    with pytest.raises(ExpmrcError, match=r"^--shape: unknown shape 'oval'; choose one of circle, square, round$"):
        shapes.lookup("oval", "--shape: ")
    with pytest.raises(ExpmrcError, match=r"unknown shape \['x'\]"):  # a name read from a file may be anything
        shapes.lookup(["x"])


def test_every_pluggable_thing_sits_in_one_kind_of_registry():
    from expmrc.cli import COMMANDS
    from expmrc.evidence.extract import METHODS
    from expmrc.evidence.pseudo import PRESETS
    from expmrc.llm.backends import BACKENDS
    from expmrc.llm.forms import FORMS
    from expmrc.llm.prompts import TEMPLATES
    from expmrc.metrics.registry import METRICS
    from expmrc.tasks import TASKS
    from expmrc.text.locate import POLICIES

    registries = {"metric": METRICS, "prompt template": TEMPLATES, "text-location policy": POLICIES, "task": TASKS,
                  "command": COMMANDS, "preset": PRESETS, "backend": BACKENDS, "evidence method": METHODS,
                  "evidence form": FORMS}
    for kind, registry in registries.items():
        assert isinstance(registry, Registry) and registry.kind == kind and len(registry) >= 2
    assert METHODS.lookup("best") is METHODS.lookup("idf-window")
    assert METHODS["answer-sentence"].tasks == ("span",) and METHODS["gold-evidence-sentence"].needs_evidence
