"""The README's text as a newcomer reads it rendered: its inline code spans (and the docs') close where they
should, so the "Bad input" example shows the very line the scorer prints; and its install table lists exactly
the core dependencies pyproject.toml declares."""

from __future__ import annotations

import json
import re
import tomllib

from helpers.common import ROOT, SPAN_DATA
from helpers.hostile import run_cli
from packaging.requirements import Requirement

README = (ROOT / "README.md").read_text(encoding="utf-8")


def code_spans(paragraph: str) -> tuple[list[str], list[str]]:
    """The inline code spans of a Markdown paragraph as CommonMark renders them, and the backtick runs left as
    literal text: a run of N backticks opens a span that the next run of exactly N closes (one with no closer is
    literal); one space of padding on each side is stripped when both sides have it."""
    spans, literal = [], []
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", paragraph)]
    k = 0
    while k < len(runs):
        start, end = runs[k]
        closer = next((j for j in range(k + 1, len(runs)) if runs[j][1] - runs[j][0] == end - start), None)
        if closer is None:
            literal.append(paragraph[max(0, start - 30):end + 30])
            k += 1
            continue
        text = paragraph[end:runs[closer][0]].replace("\n", " ")
        if len(text) > 2 and text[0] == text[-1] == " " and text.strip():
            text = text[1:-1]
        spans.append(text)
        k = closer + 1
    return spans, literal


def paragraphs(text: str) -> list[str]:
    """A Markdown page's paragraphs and table rows, fenced code blocks left out."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.split(r"\n\s*\n|\n(?=\|)", text)


def section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_bad_input_example_is_the_line_the_scorer_prints(tmp_path):
    shown = next(s for s in code_spans(section("Bad input"))[0] if s.startswith("error: "))
    qid = re.search(r"question (\S+):", shown)[1]
    data = json.loads(json.dumps(SPAN_DATA))
    data["data"][0]["paragraphs"][0]["qas"][0]["id"] = qid
    (tmp_path / "dev.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "preds.json").write_text(json.dumps({qid: {"answer": "Melbourne"}}), encoding="utf-8")
    status, _, err = run_cli(["evaluate", str(tmp_path / "dev.json"), str(tmp_path / "preds.json")])
    assert status == 2 and err.replace(str(tmp_path / "preds.json"), "preds.json") == shown + "\n"


def test_the_install_table_lists_the_core_dependencies_of_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    row = next(line for line in section("Install").splitlines() if line.startswith("| `pip install .` |"))
    listed = [name.strip() for name in row.split("|")[2].split(",")]
    assert sorted(listed) == sorted(Requirement(d).name for d in declared)


def test_no_code_span_in_the_readme_or_the_docs_is_left_open():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for paragraph in paragraphs(page.read_text(encoding="utf-8")):
            assert code_spans(paragraph)[1] == [], f"{page.name}: a backtick run that closes nothing"
