"""What has a type carries it (docs/design.md, Principles: lint and types): no parameter or attribute that holds a
model, a tokenizer or an accelerator is annotated `Any` in the package, but the few kept below, each with its reason.
The types come from transformers, accelerate and the task model, imported under `TYPE_CHECKING` where a core install
lacks them."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOLDERS = {"model", "tokenizer", "accelerator", "selector", "answerer", "encoder"}  # and any name ending `_model`
KEPT = {  # where: why the value stays Any
    "expmrc/models/unpadded.py:encode_unpadded:encoder":
        "any BERT-family encoder, read by attribute; nn.Module types each attribute as Tensor | Module",
    "expmrc/models/unpadded.py:_embeddings:encoder": "the same encoder",
    "expmrc/text/dense.py:SentenceEncoder.__init__:self._model":
        "None until `_load` sets it on first use, which mypy cannot follow into `encode`",
}


def holds_a_model(name: str) -> bool:
    bare = name.removeprefix("self.").lstrip("_")
    return bare in HOLDERS or bare.endswith(("_model", "_tokenizer"))


def mentions_any(annotation: ast.expr) -> bool:
    """Whether `Any` is part of an annotation (`Any`, `Any | None`, `Callable[[], Any]`, or the same quoted)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    return any(isinstance(node, ast.Name) and node.id == "Any" or isinstance(node, ast.Attribute) and node.attr == "Any"
               for node in ast.walk(annotation))


def any_holders(root: Path) -> list[str]:
    """`path:function:name` of each parameter or annotated attribute named for a model, tokenizer or accelerator
    whose annotation mentions Any (`path:Class:name` for a class's field)."""
    found = []

    def visit(node: ast.AST, where: str, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = child.args
                for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                    if argument.annotation is not None and holds_a_model(argument.arg) \
                            and mentions_any(argument.annotation):
                        found.append(f"{where}:{inner}:{argument.arg}")
            elif isinstance(child, ast.AnnAssign):
                target = ast.unparse(child.target)
                if holds_a_model(target) and mentions_any(child.annotation):
                    found.append(f"{where}:{scope}:{target}")
            visit(child, where, inner)

    for path in sorted((root / "expmrc").rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")), path.relative_to(root).as_posix(), "")
    return found


def test_no_model_tokenizer_or_accelerator_travels_as_any_but_the_kept_ones():
    assert sorted(any_holders(ROOT)) == sorted(KEPT)


def test_an_any_model_tokenizer_or_accelerator_is_caught(tmp_path):
    (tmp_path / "expmrc").mkdir()
    (tmp_path / "expmrc" / "run.py").write_text(
        "from typing import Any\n"
        "class Run:\n"
        "    accelerator: 'Any | None' = None\n"
        "    model_name: str = ''\n"
        "    def __init__(self, tokenizer: Any, seed: Any) -> None:\n"
        "        self._model: Any = None\n"
        "def train(new_model: Callable[[], Any], data: Any, model: torch.nn.Module) -> None:\n"
        "    pass\n", encoding="utf-8")
    assert any_holders(tmp_path) == ["expmrc/run.py:Run:accelerator", "expmrc/run.py:Run.__init__:tokenizer",
                                     "expmrc/run.py:Run.__init__:self._model", "expmrc/run.py:train:new_model"]
