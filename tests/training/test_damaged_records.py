"""A damaged run record is refused, never taken for no record: one line naming the file, exit status 2, and
nothing in the run folder written or replaced, unless --overwrite_output_dir True; a folder written by a newer
expmrc gets nothing written into it even then; what re-prediction needs again is recorded and reused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from expmrc.cli import run_guarded
from expmrc.data.runs import PREDICT_ONLY_DIR, SCHEMA
from expmrc.training.choice_task import run_choice
from expmrc.training.span_task import run_span
from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder

TRAIN = ["--do_train=True", "--do_predict=True", "--max_seq_length=48", "--doc_stride=16", "--max_query_length=12",
         "--train_batch_size=8", "--max_steps=4", "--learning_rate=3e-3"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A finished span training run of a tiny BERT, and its command line."""
    root = tmp_path_factory.mktemp("records")
    argv = ["--model_name_or_path", str(make_tiny_bert_folder(root / "bert")), *TRAIN,
            f"--train_file={make_span_file(root / 'train.json', 16, 1)}",
            f"--predict_file={make_span_file(root / 'dev.json', 6, 2)}", "--output_dir", str(root / "run")]
    assert run_span(argv) == 0
    return root / "run", argv


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every folder (None) under `folder`, by relative path."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


def copy_of(trained, tmp_path) -> tuple[Path, list[str]]:
    out, argv = trained
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    return copy, [a if a != str(out) else str(copy) for a in argv]


def predict_only(argv: list[str]) -> list[str]:
    keep = ("--model_name_or_path", "--predict_file", "--output_dir")
    words = []
    for i, word in enumerate(argv):
        if word.startswith(keep) or (i and argv[i - 1] in keep):
            words.append(word)
    return [*words, "--do_predict=True"]


def last_error(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


DAMAGE = {"truncated": lambda text: text[:40], "empty": lambda text: "", "an array": lambda text: "[]",
          "flags null": lambda text: json.dumps({**json.loads(text), "flags": None}),
          "status a number": lambda text: json.dumps({**json.loads(text), "status": 3}),
          "an llm run": lambda text: json.dumps({**json.loads(text), "kind": "llm"})}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_record_is_refused_and_the_folder_left_untouched(trained, tmp_path, capsys, damage):
    out, argv = copy_of(trained, tmp_path)
    record = out / "run_info.json"
    record.write_text(DAMAGE[damage](record.read_text(encoding="utf-8")), encoding="utf-8")
    before = snapshot(out)
    other_flags = [a for a in argv if not a.startswith("--learning_rate")] + ["--learning_rate=1e-3"]
    for command in (predict_only(argv), other_flags):
        assert run_guarded(run_span, command) == 2
        line = last_error(capsys)
        assert line.startswith(f"error: {record}: ") and "--overwrite_output_dir True" in line, line
        assert snapshot(out) == before

    assert run_guarded(run_span, predict_only(argv) + ["--overwrite_output_dir=True"]) == 0
    rewritten = json.loads(record.read_text(encoding="utf-8"))
    assert rewritten["status"] == "finished" and rewritten["flags"]["do_train"] is False
    assert not (out / PREDICT_ONLY_DIR).exists()


@pytest.mark.parametrize("where", ["run_info.json", "model/config.json"])
def test_a_folder_written_by_a_newer_expmrc_gets_nothing_written_into_it(trained, tmp_path, capsys, where):
    out, argv = copy_of(trained, tmp_path)
    doc = json.loads((out / where).read_text(encoding="utf-8"))
    (doc["expmrc"] if where.startswith("model") else doc)["schema"] = SCHEMA + 1
    (out / where).write_text(json.dumps(doc), encoding="utf-8")
    before = snapshot(out)
    for extra in ([], ["--overwrite_output_dir=True"]):
        assert run_guarded(run_span, predict_only(argv) + extra) == 2
        line = last_error(capsys)
        assert line.startswith(f"error: {out / where if where == 'run_info.json' else out / 'model'}") \
            and f"written by a newer expmrc (record schema {SCHEMA + 1}" in line, line
        assert snapshot(out) == before


def test_settings_re_prediction_needs_are_recorded_and_reused(trained, tmp_path, capsys):
    """Trained with --allow_unknown_tokens True on text the vocabulary does not know, the model predicts again
    without the flag; its recorded predict batch size is used too."""
    doc = {"version": "c3-dev", "data": [{"id": f"m{i}", "article": "天很蓝。草很绿。", "questions": ["天什么颜色？"],
                                          "options": [["红", "蓝"]], "answers": ["B"]} for i in range(8)]}
    data = tmp_path / "c3.json"
    data.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "choice"
    bert = trained[0].parent / "bert"
    argv = ["--model_name_or_path", str(bert), "--do_train=True", f"--train_file={data}", "--max_steps=2",
            "--train_batch_size=4", "--max_seq_length=32", "--max_query_length=8", "--predict_batch_size=3",
            "--output_dir", str(out), "--allow_unknown_tokens=True"]
    assert run_choice(argv) == 0
    recorded = json.loads((out / "model" / "config.json").read_text(encoding="utf-8"))["expmrc"]
    assert recorded["allow_unknown_tokens"] is True and recorded["predict_batch_size"] == 3
    again = ["--model_name_or_path", "unused", "--do_predict=True", f"--predict_file={data}", "--output_dir", str(out)]
    assert run_choice(again) == 0, capsys.readouterr().err
    record = json.loads((out / PREDICT_ONLY_DIR / "run_info.json").read_text(encoding="utf-8"))
    assert record["status"] == "finished" and record["kind"] == "baseline"
    assert record["command"][-2:] == ["--output_dir", str(out)] and record["environment"]["device"] == "cpu"
    assert run_guarded(run_choice, again + ["--allow_unknown_tokens=False"]) == 2  # given explicitly, it counts
    assert "are the tokenizer's unknown token" in last_error(capsys)
