"""Short functions (docs/design.md, Principles): none in the package runs past 60 lines, from its `def` to its
last line, unless its docstring says why with "Long because ..."."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60
MARKER = "Long because"


def _functions() -> dict[str, tuple[int, str]]:
    """Every function and method of the package: `path:name` (nested ones `path:outer.name`) -> (lines,
    docstring)."""
    found: dict[str, tuple[int, str]] = {}

    def visit(node: ast.AST, where: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                assert child.end_lineno is not None
                found[f"{where}:{name}"] = (child.end_lineno - child.lineno + 1, ast.get_docstring(child) or "")
                visit(child, where, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, where, prefix + child.name + ".")
            else:
                visit(child, where, prefix)

    for path in sorted((ROOT / "expmrc").rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")), path.relative_to(ROOT).as_posix(), "")
    return found


def _long(functions: dict[str, tuple[int, str]]) -> dict[str, int]:
    return {name: lines for name, (lines, _) in functions.items() if lines > LIMIT}


def test_no_function_is_over_60_lines_without_a_reason_in_its_docstring():
    functions = _functions()
    unexplained = {name: lines for name, lines in _long(functions).items()
                   if MARKER.lower() not in functions[name][1].lower()}
    assert not unexplained, (f"over {LIMIT} lines: split them where the split names something, or say why in the "
                             f"docstring ({MARKER} ...): {unexplained}")


def test_the_walk_sees_methods_and_nested_functions():
    functions = _functions()
    assert "expmrc/inference/faithfulness_run.py:Faithfulness.text" in functions
    assert "expmrc/inference/faithfulness_run.py:Faithfulness.text.show" in functions
    assert functions["expmrc/data/datasets.py:passage_of"][0] == 3
