"""The package's floors (docs/design.md): every import runs down, never up, no modules import each other round a
loop, the `expmrc llm` run is the command's alone, no command module imports another, and the tests have a folder
per floor."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- floors: read by tests/cli/test_floors.py -->"


def floors(root: Path) -> dict[str, int]:
    """Each floor's folders and top-level modules (`data/`, `tasks.py`) -> its number, from docs/design.md."""
    text = (root / "docs" / "design.md").read_text(encoding="utf-8")
    block = text.split(MARK, 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    found: dict[str, int] = {}
    for line in block.splitlines():
        number, *words = line.split()
        for word in words:
            if not re.fullmatch(r"[a-z_]+(/|\.py)", word):
                break
            found[word] = int(number)
    return found


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each package module -> the package modules it imports, at its top or inside functions (lazy ones too)."""
    paths = {module_name(root, path): path for path in sorted((root / "expmrc").rglob("*.py"))}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base for alias in node.names}
        graph[name] = {target for target in found if target in paths and target != name}
    return graph


def floor_of(module: str, table: dict[str, int]) -> int:
    """The floor of a module: its folder's, or its own as a top-level module (`expmrc` itself: __init__.py)."""
    parts = module.split(".")
    if len(parts) == 1:
        return table["__init__.py"]
    key = f"{parts[1]}/" if len(parts) > 2 or f"{parts[1]}/" in table else f"{parts[1]}.py"
    assert key in table, f"{module} is on no floor: add {key} to the floors in docs/design.md"
    return table[key]


def upward_imports(root: Path) -> list[str]:
    table = floors(root)
    return [f"{name} -> {target}" for name, targets in sorted(import_graph(root).items()) for target in sorted(targets)
            if floor_of(target, table) > floor_of(name, table)]


def cycles(root: Path) -> list[str]:
    """The modules that can reach themselves by following imports."""
    graph, found = import_graph(root), []
    for start in graph:
        seen, stack = set(), list(graph[start])
        while stack:
            node = stack.pop()
            if node == start:
                found.append(start)
                break
            if node not in seen:
                seen.add(node)
                stack.extend(graph[node])
    return found


def test_every_import_runs_down_the_floors():
    table = floors(ROOT)
    assert table["cli/"] > table["reports/"] > table["training/"] > table["inference/"] > table["tasks.py"] \
        > table["decoding/"] > table["data/"] > table["errors.py"]
    assert upward_imports(ROOT) == []


def test_no_module_imports_itself_round_a_loop():
    assert cycles(ROOT) == []


def test_an_upward_import_and_a_loop_are_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "design.md", tmp_path / "docs" / "design.md")
    for folder in ("data", "training"):
        (tmp_path / "expmrc" / folder).mkdir(parents=True)
        (tmp_path / "expmrc" / folder / "__init__.py").write_text("")
    (tmp_path / "expmrc" / "__init__.py").write_text("")
    (tmp_path / "expmrc" / "data" / "io.py").write_text("def f():\n    from expmrc.training.loop import train\n")
    (tmp_path / "expmrc" / "training" / "loop.py").write_text("from expmrc.data import io\n")
    assert upward_imports(tmp_path) == ["expmrc.data.io -> expmrc.training.loop"]
    assert cycles(tmp_path) == ["expmrc.data.io", "expmrc.training.loop"]


LLM_RUN = "expmrc.llm.run"  # the `expmrc llm` run: only its command imports it


def command_modules() -> set[str]:
    """The command modules of cli/: those the command registry names (the rest of cli/ are shared helpers)."""
    from expmrc.cli import COMMANDS

    return {module for module, _ in COMMANDS.values()}


def command_imports(root: Path, commands: set[str]) -> list[str]:
    """Imports of a command module by any module of cli/ but itself: by another command, or by a shared helper
    (through which one command would reach another)."""
    return [f"{name} -> {target}" for name, targets in sorted(import_graph(root).items())
            if name == "expmrc.cli" or name.startswith("expmrc.cli.") for target in sorted(targets) if target in commands]


def importers(root: Path, module: str) -> list[str]:
    return [name for name, targets in sorted(import_graph(root).items()) if module in targets]


def test_the_llm_run_is_imported_by_its_command_alone():
    assert importers(ROOT, LLM_RUN) == ["expmrc.cli.llm"]


def test_no_command_module_imports_another():
    commands = command_modules()
    assert {"expmrc.cli.judge", "expmrc.cli.evaluate", "expmrc.cli.llm"} <= commands
    assert "expmrc.cli.args" not in commands and "expmrc.cli.judge_flags" not in commands
    assert command_imports(ROOT, commands) == []


def test_a_command_reaching_another_and_a_second_importer_of_the_run_are_caught(tmp_path):
    for folder in ("cli", "llm"):
        (tmp_path / "expmrc" / folder).mkdir(parents=True)
        (tmp_path / "expmrc" / folder / "__init__.py").write_text("")
    (tmp_path / "expmrc" / "__init__.py").write_text("")
    files = {"cli/judge.py": "", "cli/args.py": "", "cli/llm.py": "from expmrc.llm import run\n",
             "cli/evaluate.py": "from expmrc.cli.args import x\ndef run():\n    from expmrc.cli.judge import y\n",
             "cli/flags.py": "from expmrc.cli import judge\n", "llm/run.py": "", "llm/judges.py": "from . import run\n"}
    for name, text in files.items():
        (tmp_path / "expmrc" / name).write_text(text)
    commands = {"expmrc.cli.judge", "expmrc.cli.llm", "expmrc.cli.evaluate"}
    assert command_imports(tmp_path, commands) == ["expmrc.cli.evaluate -> expmrc.cli.judge",
                                                   "expmrc.cli.flags -> expmrc.cli.judge"]
    assert importers(tmp_path, LLM_RUN) == ["expmrc.cli.llm", "expmrc.llm.judges"]


# docs/design.md: metrics/ is tested with the scorer, in tests/scoring/; these folders cross the floors
TESTED_WITH = {"metrics": "scoring"}
ACROSS = {"fuzz", "contract", "benchmarks", "helpers", "fixtures"}


def test_the_tests_have_a_folder_per_floor():
    """Each floor that is a folder has a test folder of its name holding tests (metrics/ apart, as design.md says),
    and no other test folder exists but those that cross the floors."""
    floor_folders = {key.rstrip("/") for key in floors(ROOT) if key.endswith("/")}
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert folders == (floor_folders - set(TESTED_WITH)) | set(TESTED_WITH.values()) | ACROSS
    assert [f for f in sorted(folders - ACROSS) if not any((ROOT / "tests" / f).glob("test_*.py"))] == []


def test_the_namespace_stops_at_the_command_line():
    """No function past the command line and the baseline flag parser takes an argparse Namespace: each run
    takes its typed configuration."""
    allowed = {"expmrc/training/flags.py"}
    takers = []
    for path in sorted((ROOT / "expmrc").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith("expmrc/cli/") or name in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                annotations = [a.annotation for a in [*node.args.args, *node.args.kwonlyargs] if a.annotation]
                if any("Namespace" in ast.unparse(a) for a in annotations):
                    takers.append(f"{name}: {node.name}")
    assert takers == []
