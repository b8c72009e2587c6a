"""Every list of choices a user reads comes from its registry: `expmrc evidence --help` and docs/evidence.md list
each evidence method with its `summary`, `expmrc llm --help` each backend, evidence form (docs/llm.md too) and
subset, so a method, backend, form or subset added to its registry is listed, and a summary edited in one place is
edited everywhere."""

from __future__ import annotations

from pathlib import Path

from helpers.hostile import run_cli

from expmrc.data import subsets
from expmrc.evidence.extract import METHODS
from expmrc.llm.backends import BACKENDS

ROOT = Path(__file__).resolve().parents[2]


def flat(text: str) -> str:
    """Text with every run of whitespace one space (help pages wrap lines where they like)."""
    return " ".join(text.split())


def help_page(command: str) -> str:
    status, out, err = run_cli([command, "--help"])
    assert status == 0, err
    return flat(out)


def test_evidence_help_lists_every_registered_method_with_its_summary():
    page = help_page("evidence")
    for name, method in METHODS.items():
        assert flat(f"{name} {method.summary}") in page or flat(f"{name} (= best) {method.summary}") in page, name
    assert "idf-window (= best)" in page  # an alias beside what it stands for


def test_the_docs_method_table_is_the_registry():
    text = (ROOT / "docs" / "evidence.md").read_text(encoding="utf-8")
    table = text.split("| method | evidence |\n| --- | --- |\n", 1)[1].split("\n\n", 1)[0].splitlines()
    rows = [tuple(cell.strip() for cell in line.strip("|").split(" | ", 1)) for line in table]
    expected = [(f"`{name}`" + "".join(f" (`{alias}`)" for alias in METHODS.aliases if METHODS.canonical(alias) == name),
                 method.summary) for name, method in METHODS.items()]
    assert rows == expected


def test_llm_help_lists_every_backend_with_its_summary_and_every_subset():
    page = help_page("llm")
    for name, kind in BACKENDS.items():
        assert flat(f"{name}: {kind.summary}") in page, name
    assert f"SUBSET {', '.join(subsets.names())} (the dev set)" in page


def test_llm_help_and_docs_list_every_evidence_form_with_its_summary():
    from expmrc.llm.forms import FORMS
    from expmrc.llm.prompts import TEMPLATES

    page = help_page("llm")
    assert "--evidence-form {" + ",".join(FORMS.names()) + "}" in page
    for name, form in FORMS.items():
        assert flat(f"{name}: {form.summary}") in page, name
    for name, template in TEMPLATES.items():
        assert f"in {template.language}, evidence {FORMS[template.evidence_form].phrase}" in page, name
    text = (ROOT / "docs" / "llm.md").read_text(encoding="utf-8")
    table = text.split("| form | evidence |\n| --- | --- |\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [tuple(cell.strip() for cell in line.strip("|").split(" | ", 1)) for line in table] == \
        [(f"`{name}`", form.summary) for name, form in FORMS.items()]


def test_judge_help_lists_every_judge_and_statement_template_and_the_other_commands_their_judges():
    from expmrc.llm.judges import JUDGES
    from expmrc.scoring.support import STATEMENTS

    page = help_page("judge")
    for name, kind in JUDGES.items():
        assert flat(f"{name} {kind.summary}") in page, name
    for name, template in STATEMENTS.items():
        assert flat(f"{name} {template.language}: {template.text}") in page, name
    for command in ("evaluate", "compare", "llm"):
        listed = help_page(command)
        assert all(flat(f"{name}: {kind.summary}") in listed for name, kind in JUDGES.items()), command
