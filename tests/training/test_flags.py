"""The baseline scripts' flags: original spellings and True/False strings, modern flags, defaults."""

from __future__ import annotations

import pytest
import torch
from helpers.span_data import make_span_file

from expmrc.cli import run_guarded
from expmrc.errors import ExpmrcError
from expmrc.training.span_task import run_span
from expmrc.training.baseline import train_config
from expmrc.training.flags import build_parser, check_flags


def parse(task, *argv):
    return build_parser(task).parse_args(["--output_dir", "out", *argv])


def test_original_boolean_spellings():
    for argv, expected in ((["--do_train=True"], True), (["--do_train", "False"], False), (["--do_train"], True),
                           (["--do_train=true"], True), ([], False)):
        assert parse("span", *argv).do_train is expected
    assert parse("span", "--use_tpu=False").use_tpu is False
    assert parse("span").do_lower_case is None  # the model folder decides
    assert parse("span", "--do_lower_case=False").do_lower_case is False


def test_bad_boolean_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        parse("span", "--do_train=maybe")
    assert "expected True or False" in capsys.readouterr().err


def test_paper_defaults_per_task():
    span, choice = parse("span"), parse("choice")
    assert (span.learning_rate, span.num_train_epochs, span.rand_seed) == (3e-5, 2.0, 12345)
    assert (span.warmup_proportion, span.weight_decay) == (0.1, 0.01)
    assert (span.max_seq_length, span.doc_stride) == (512, 128)
    assert span.loss_lambda == 0.01 and choice.loss_lambda == 0.1


def test_original_script_line_parses_into_a_train_config():
    args = parse("span", "--vocab_file=v.txt", "--bert_config_file=c.json", "--init_checkpoint=bert_model.ckpt",
                 "--do_train=True", "--train_file=t.json", "--do_predict=True", "--predict_file=d.json",
                 "--train_batch_size=16", "--predict_batch_size=4", "--num_train_epochs=3",
                 "--max_seq_length=384", "--max_answer_length=20", "--doc_stride=64", "--learning_rate=5e-5",
                 "--loss_lambda=0.05", "--rand_seed=7", "--save_checkpoints_steps=500", "--do_lower_case=True",
                 "--use_tpu=False", "--tpu_name=x", "--tpu_zone=y", "--task_name=cmrc2018",
                 "--train_tfrecord=t.pt", "--predict_tfrecord=p.pt", "--mixed_precision=bf16",
                 "--gradient_accumulation_steps=2", "--max_steps=10", "--logging_steps=5")
    check_flags(args)
    config = train_config(args)
    assert (config.train_batch_size, config.seed, config.learning_rate, config.max_steps) == (16, 7, 5e-5, 10)
    assert (config.mixed_precision, config.gradient_accumulation_steps, config.save_checkpoints_steps) == ("bf16", 2, 500)


@pytest.mark.parametrize("argv, message", [
    ([], "nothing to do"),
    (["--do_train"], "--do_train needs --train_file"),
    (["--do_predict"], "--do_predict needs --predict_file"),
    (["--do_predict", "--predict_file=d", "--train_batch_size=0"], "--train_batch_size must be at least 1"),
    (["--do_predict", "--predict_file=d", "--warmup_proportion=1.5"], "--warmup_proportion"),
])
def test_impossible_flag_combinations_are_refused(argv, message):
    with pytest.raises(ExpmrcError, match=message):
        check_flags(parse("span", *argv))


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
    args = parse("span", "--do_train=True", "--train_file=t.json", f"{flag}={value}")
    with pytest.raises(ExpmrcError, match=message.replace("[", r"\[").replace(")", r"\)").replace("+", r"\+")):
        check_flags(args)


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
    args = parse("choice", "--tf32", "False", "--group_by_length=False", "--per_device_micro_batch=4",
                 "--torch_compile", "--cache_dir=/tmp/c", "--keep_final_checkpoints=True")
    config = train_config(args)
    assert (config.tf32, config.group_by_length, config.per_device_micro_batch, config.torch_compile) == \
        (False, False, 4, True)
    assert (args.cache_dir, args.keep_final_checkpoints) == ("/tmp/c", True)
    with pytest.raises(ExpmrcError, match="--per_device_micro_batch must be 0"):
        check_flags(parse("span", "--do_predict", "--predict_file=d", "--per_device_micro_batch=-1"))
