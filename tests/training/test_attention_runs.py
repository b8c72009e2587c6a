"""--attention and --fused_kernels through the baseline: a tiny model trained on the padded path, the unpadded
path and the unpadded path with fused kernels writes the same dev_predictions.json; run_info.json records the
path taken and why; combinations that cannot run are one line before any work; an encoder without the unpadded
path says why and runs padded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from expmrc.cli import run_guarded
from expmrc.errors import ExpmrcError
from expmrc.training.flags import build_parser, parse_config
from expmrc.training.span_task import run_span
from helpers.span_data import make_span_file
from helpers.tiny_backbones import tiny_backbone
from helpers.span_runs import run_flags, tiny_span_files


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_span_files(tmp_path_factory.mktemp("attention"))


def read(run: Path, name: str):
    return json.loads((run / name).read_text(encoding="utf-8"))


@pytest.mark.slow
def test_padded_unpadded_and_fused_runs_write_the_same_predictions(tiny, monkeypatch):
    real_compile = torch.compile  # the fused regions compiled by the eager backend: the CPU test checks their maths
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: real_compile(fn, **{**kw, "backend": "eager"}))
    runs = {}
    for name, extra in (("padded", ["--attention=padded"]), ("unpadded", ["--attention=unpadded"]),
                        ("fused", ["--attention=unpadded", "--fused_kernels=True"])):
        runs[name] = tiny["root"] / name
        assert run_guarded(run_span, run_flags(tiny, runs[name], "--max_steps=15", *extra)) == 0
    predictions = {name: read(run, "dev_predictions.json") for name, run in runs.items()}
    assert predictions["unpadded"] == predictions["padded"] and predictions["fused"] == predictions["padded"]
    padded_windows = [w for entry in read(runs["padded"], "dev_nbest.json").values() for w in entry["answer"][:3]]
    unpadded_windows = [w for entry in read(runs["unpadded"], "dev_nbest.json").values() for w in entry["answer"][:3]]
    assert [w["text"] for w in padded_windows] == [w["text"] for w in unpadded_windows]
    assert max(abs(a["score"] - b["score"]) for a, b in zip(padded_windows, unpadded_windows)) < 1e-4
    records = {name: read(run, "run_info.json")["attention"] for name, run in runs.items()}
    assert records["padded"] == {"requested": "padded", "path": "padded", "why": "asked for", "fused_kernels": False}
    assert records["unpadded"] == {"requested": "unpadded", "path": "unpadded", "why": "asked for",
                                   "fused_kernels": False}
    assert records["fused"]["path"] == "unpadded" and records["fused"]["fused_kernels"] is True
    assert read(runs["fused"], "run_info.json")["flags"]["fused_kernels"] is True


def test_auto_records_the_measurement_it_followed(tiny, capsys):
    run = tiny["root"] / "auto"
    assert run_guarded(run_span, run_flags(tiny, run, "--max_steps=2", "--do_predict=False")) == 0
    record = read(run, "run_info.json")["attention"]
    assert record["requested"] == "auto" and record["path"] in ("padded", "unpadded")
    assert record["why"].startswith("auto on cpu: ")
    assert f"attention: {record['path']} ({record['why']})" in capsys.readouterr().err


def config(*argv: str):
    return parse_config("span", build_parser("span"), ["--output_dir", "out", "--do_predict", "--predict_file=d",
                                                        *argv])


@pytest.mark.parametrize("argv, message", [
    (["--attention=unpadded", "--torch_compile"], "--attention unpadded does not combine with --torch_compile True"),
    (["--fused_kernels", "--torch_compile"], "--fused_kernels True compiles regions of the eager model"),
    (["--fused_kernels", "--attention=padded"], "--fused_kernels True fuses the unpadded encoder's kernels"),
])
def test_combinations_that_cannot_run_are_one_line(argv, message):
    with pytest.raises(ExpmrcError, match=message):
        config(*argv)


def test_a_refused_combination_writes_nothing(tiny, capsys):
    output = tiny["root"] / "refused"
    assert run_guarded(run_span, run_flags(tiny, output, "--attention=unpadded", "--torch_compile=True")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --attention unpadded does not combine")
    assert not (output / "run_info.json").exists()


def test_flags_reach_the_training_configuration():
    training = config("--attention=unpadded", "--fused_kernels=True").training
    assert (training.attention, training.fused_kernels) == ("unpadded", True)
    assert (config().training.attention, config().training.fused_kernels) == ("auto", False)


def test_an_encoder_without_the_unpadded_path_says_why_and_runs_padded(tmp_path, capsys):
    dev = make_span_file(tmp_path / "dev.json", 4, seed=2)
    argv = ["--model_name_or_path", str(tiny_backbone("deberta-v2")), "--do_predict=True", f"--predict_file={dev}",
            f"--output_dir={tmp_path / 'run'}", "--max_seq_length=64", "--doc_stride=16", "--max_query_length=16",
            "--attention=unpadded", "--allow_unknown_tokens=True"]
    assert run_guarded(run_span, argv) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "keeps the padded path" in line]
    assert len(warned) == 1 and warned[0].endswith("attention: DebertaV2Model keeps the padded path: the unpadded one "
                                                   "reproduces BERT, RoBERTa, XLM-R and ELECTRA layers only "
                                                   "(softmax(QK^T)V attention over absolute positions)")
    record = read(tmp_path / "run", "run_info.json")["attention"]
    assert record["path"] == "padded" and record["why"].startswith("DebertaV2Model keeps the padded path")
