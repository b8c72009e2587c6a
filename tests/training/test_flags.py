"""The baseline scripts' flags: original spellings and True/False strings, modern flags, defaults."""

from __future__ import annotations

import json

import pytest
import torch
from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder

from expmrc.cli import run_guarded
from expmrc.errors import ExpmrcError
from expmrc.models.heads import LossSettings
from expmrc.training.choice_task import run_choice
from expmrc.training.flags import build_parser, ignored_flags, parse_config
from expmrc.training.loop import TrainConfig
from expmrc.training.span_task import run_span


def parse(task, *argv):
    return build_parser(task).parse_args(["--output_dir", "out", *argv])


def config(task, *argv):
    """The typed configuration a command line parses into (the flags checked once, part by part)."""
    return parse_config(task, build_parser(task), ["--output_dir", "out", *argv])


def test_original_boolean_spellings():
    for argv, expected in ((["--do_train=True"], True), (["--do_train", "False"], False), (["--do_train"], True),
                           (["--do_train=true"], True), ([], False)):
        assert parse("span", *argv).do_train is expected
    assert parse("span", "--use_tpu=False").use_tpu is False
    assert parse("span").do_lower_case is None  # not given: the tokenizer's own casing, or False for a vocab.txt
    assert parse("span", "--do_lower_case=False").do_lower_case is False


def test_bad_boolean_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        parse("span", "--do_train=maybe")
    assert "expected True or False" in capsys.readouterr().err


# the defaults of the original release's run_se_mrc.py / run_mc_mrc.py (both 384 tokens per window)
ORIGINAL_DEFAULTS = {
    "span": {"loss_lambda": 0.1, "num_train_epochs": 3.0, "max_seq_length": 384, "max_query_length": 64,
             "predict_batch_size": 32, "do_lower_case": None, "learning_rate": 3e-5, "doc_stride": 128,
             "train_batch_size": 32, "max_answer_length": 30, "rand_seed": 12345, "save_checkpoints_steps": 1000,
             "use_tpu": False, "iterations_per_loop": 1000, "num_tpu_cores": 8, "verbose_logging": False,
             "tpu_name": None, "tpu_zone": None, "gcp_project": None, "master": None},
    "choice": {"loss_lambda": 0.1, "num_train_epochs": 3.0, "max_seq_length": 384, "max_query_length": 64,
               "predict_batch_size": 32, "do_lower_case": None},
}


@pytest.mark.parametrize("task", sorted(ORIGINAL_DEFAULTS))
def test_defaults_are_the_original_scripts(task):
    args = parse(task)
    assert {name: getattr(args, name) for name in ORIGINAL_DEFAULTS[task]} == ORIGINAL_DEFAULTS[task]
    assert (args.warmup_proportion, args.weight_decay) == (0.1, 0.01)


def test_the_training_configuration_defaults_are_the_flags_defaults():
    parsed = config("span", "--do_predict", "--predict_file=d")
    assert parsed.training == TrainConfig(output_dir="out")  # one set of defaults, not a second copy
    assert parsed.loss == LossSettings(0.1) and parsed.given == {"output_dir", "do_predict", "predict_file"}


def test_original_tpu_flags_parse_and_are_listed_as_ignored():
    args = parse("choice", "--iterations_per_loop=100", "--num_tpu_cores", "32", "--gcp_project=p",
                 "--master=grpc://10.0.0.2:8470", "--verbose_logging=True", "--tpu_name=t", "--tpu_zone=z",
                 "--max_query_length=16")
    assert ignored_flags(args) == ["--tpu_name=t", "--tpu_zone=z", "--gcp_project=p", "--master=grpc://10.0.0.2:8470",
                                   "--num_tpu_cores=32", "--iterations_per_loop=100", "--verbose_logging=True"]
    assert args.max_query_length == 16 and ignored_flags(parse("span")) == []


def test_original_script_line_parses_into_a_train_config():
    args = ("--vocab_file=v.txt", "--bert_config_file=c.json", "--init_checkpoint=bert_model.ckpt",
            "--do_train=True", "--train_file=t.json", "--do_predict=True", "--predict_file=d.json",
            "--train_batch_size=16", "--predict_batch_size=4", "--num_train_epochs=3",
            "--max_seq_length=384", "--max_answer_length=20", "--doc_stride=64", "--learning_rate=5e-5",
            "--loss_lambda=0.05", "--rand_seed=7", "--save_checkpoints_steps=500", "--do_lower_case=True",
            "--use_tpu=False", "--tpu_name=x", "--tpu_zone=y", "--task_name=cmrc2018",
            "--train_tfrecord=t.pt", "--predict_tfrecord=p.pt", "--mixed_precision=bf16",
            "--gradient_accumulation_steps=2", "--max_steps=10", "--logging_steps=5")
    parsed = parse_config("span", build_parser("span"), ["--output_dir", "out", *args])
    train = parsed.training
    assert (train.train_batch_size, train.seed, train.learning_rate, train.max_steps) == (16, 7, 5e-5, 10)
    assert (train.mixed_precision, train.gradient_accumulation_steps, train.save_checkpoints_steps) == ("bf16", 2, 500)
    assert (parsed.loss.loss_lambda, parsed.task.max_answer_length, parsed.paths.train_tfrecord) == (0.05, 20, "t.pt")


@pytest.mark.parametrize("argv, message", [
    ([], "nothing to do"),
    (["--do_train"], "--do_train needs --train_file"),
    (["--do_predict"], "--do_predict needs --predict_file"),
    (["--do_predict", "--predict_file=d", "--train_batch_size=0"], "--train_batch_size must be at least 1"),
    (["--do_predict", "--predict_file=d", "--warmup_proportion=1.5"], "--warmup_proportion"),
])
def test_impossible_flag_combinations_are_refused(argv, message):
    with pytest.raises(ExpmrcError, match=message):
        config("span", *argv)


@pytest.mark.parametrize("flag, value, message", [
    ("--learning_rate", "inf", "--learning_rate must be a finite number, got inf"),
    ("--learning_rate", "nan", "--learning_rate must be a finite number, got nan"),
    ("--learning_rate", "5", "--learning_rate must be above 0 and at most 1, got 5.0"),
    ("--loss_lambda", "nan", "--loss_lambda must be a finite number, got nan"),
    ("--loss_lambda", "-inf", "--loss_lambda must be a finite number, got -inf"),
    ("--weight_decay", "nan", "--weight_decay must be a finite number, got nan"),
    ("--weight_decay", "1.5", "--weight_decay must be in [0, 1), got 1.5"),
    ("--num_train_epochs", "inf", "--num_train_epochs must be a finite number, got inf"),
    ("--num_train_epochs", "1e9", "--num_train_epochs must be at most 1000"),
    ("--warmup_proportion", "nan", "--warmup_proportion must be a finite number, got nan"),
])
def test_float_flags_must_be_finite_and_in_range_before_any_work(flag, value, message):
    with pytest.raises(ExpmrcError, match=message.replace("[", r"\[").replace(")", r"\)").replace("+", r"\+")):
        config("span", "--do_train=True", "--train_file=t.json", f"{flag}={value}")


def test_a_run_with_the_original_tpu_flags_logs_one_line_naming_them(tmp_path, capsys):
    data = tmp_path / "c3.json"
    data.write_text(json.dumps({"version": "c3-dev", "data": [{
        "id": "m1", "article": "天很蓝。草很绿。", "questions": ["天什么颜色？"], "options": [["红", "蓝"]],
        "answers": ["B"]}]}, ensure_ascii=False), encoding="utf-8")
    argv = ["--model_name_or_path", str(make_tiny_bert_folder(tmp_path / "bert")), "--do_predict", "--predict_file",
            str(data), "--output_dir", str(tmp_path / "run"), "--max_seq_length=64", "--max_query_length=8",
            "--iterations_per_loop=100", "--num_tpu_cores=8", "--master=grpc://x", "--verbose_logging=True",
            "--allow_unknown_tokens=True"]  # the tiny English vocabulary knows no Chinese
    assert run_guarded(run_choice, argv) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "ignored" in line]
    assert lines == ["ignored (original TPU-era flags, not needed here): --master=grpc://x --iterations_per_loop=100 "
                     "--verbose_logging=True"]
    info = json.loads((tmp_path / "run" / "run_info.json").read_text(encoding="utf-8"))
    assert info["flags"]["max_query_length"] == 8 and info["flags"]["iterations_per_loop"] == 100


@pytest.mark.skipif(torch.cuda.is_available(), reason="fp16 is refused only where there is no GPU")
def test_fp16_on_cpu_is_one_line_and_exit_2_before_any_work(tmp_path, capsys):
    data = make_span_file(tmp_path / "d.json", 2, seed=1)
    argv = ["--do_predict=True", f"--predict_file={data}", f"--output_dir={tmp_path / 'out'}",
            "--model_name_or_path=missing-model", "--mixed_precision", "fp16"]
    assert run_guarded(run_span, argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        "error: --mixed_precision fp16 needs a GPU; on CPU use no (FP32, what auto gives) or bf16"


def test_speed_and_memory_flags_reach_the_train_config():
    assert parse("span").mixed_precision == "auto" and parse("span").group_by_length is True
    parsed = config("choice", "--do_predict", "--predict_file=d", "--tf32", "False", "--group_by_length=False",
                    "--per_device_micro_batch=4", "--torch_compile", "--cache_dir=/tmp/c", "--keep_final_checkpoints=True")
    train = parsed.training
    assert (train.tf32, train.group_by_length, train.per_device_micro_batch, train.torch_compile) == \
        (False, False, 4, True)
    assert (parsed.paths.cache_dir, parsed.keep_final_checkpoints) == ("/tmp/c", True)
    with pytest.raises(ExpmrcError, match="--per_device_micro_batch must be 0"):
        config("span", "--do_predict", "--predict_file=d", "--per_device_micro_batch=-1")
