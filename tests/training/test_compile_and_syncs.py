"""A compiled run pads its training batches to a few length buckets, compiles each once and predicts what the
eager run predicts; the training step reads nothing back from the device, and gives the numbers the textbook
loop gives."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, get_linear_schedule_with_warmup

from expmrc.cli import run_guarded
from expmrc.errors import ExpmrcError
from expmrc.features.span import build_span_features
from expmrc.data.datasets import load_dataset
from expmrc.features.windows import WindowDataset
from expmrc.models.backbones import load_task_model, resolve_source
from expmrc.models.heads import LossSettings
from expmrc.models.span import SpanModel
from expmrc.training.flags import build_parser, parse_config
from expmrc.inference.predictor import to_device
from expmrc.training.loop import (ADAM_EPSILON, LossWindow, TrainConfig, batch_indices, default_buckets,
                                  make_accelerator, parameter_groups, train)
from expmrc.training.span_task import run_span
from helpers.span_runs import run_flags, tiny_span_files


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_span_files(tmp_path_factory.mktemp("compile"))


class CountingBackend:
    """A torch.compile backend that runs the captured graphs eagerly and counts compilations per input length."""

    def __init__(self) -> None:
        self.lengths: list[int] = []

    def __call__(self, graph: torch.fx.GraphModule, inputs: list) -> object:
        ids = [x for x in inputs if isinstance(x, torch.Tensor) and x.dtype == torch.long and x.dim() == 2]
        self.lengths.append(int(ids[0].shape[-1]) if ids else -1)
        return graph.forward


def test_a_compiled_run_compiles_each_bucket_once_and_predicts_what_eager_predicts(tiny, monkeypatch, capsys):
    eager = tiny["root"] / "eager"
    assert run_guarded(run_span, run_flags(tiny, eager)) == 0
    backend, real_compile = CountingBackend(), torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, **kw: real_compile(model, **{**kw, "backend": backend}))
    compiled = tiny["root"] / "compiled"
    capsys.readouterr()
    assert run_guarded(run_span, run_flags(tiny, compiled, "--torch_compile=True", "--compile_buckets=32,48,64")) == 0
    err = capsys.readouterr().err
    met = sorted(set(backend.lengths))
    assert met and set(met) <= {32, 48, 64}  # only bucket lengths reach the compiled model
    assert all(backend.lengths.count(n) == backend.lengths.count(met[0]) for n in met)  # each bucket compiled once
    info = json.loads((compiled / "run_info.json").read_text(encoding="utf-8"))
    assert sorted(shape[-1] for shape in info["timing"]["compiled_shapes"]) == met
    assert info["timing"]["compile_seconds"] > 0 and "compiled for batches of 8x" in err
    assert "compiling" in err and "batch shapes" in err
    read = lambda run, name: json.loads((run / name).read_text(encoding="utf-8"))  # noqa: E731
    assert read(compiled, "dev_predictions.json") == read(eager, "dev_predictions.json")
    for qid, entry in read(eager, "dev_nbest.json").items():
        other = read(compiled, "dev_nbest.json")[qid]
        for kind in ("answer", "evidence"):
            assert [c["text"] for c in entry[kind][:3]] == [c["text"] for c in other[kind][:3]]
            assert np.allclose([c["score"] for c in entry[kind][:3]], [c["score"] for c in other[kind][:3]], atol=1e-3)


def test_bucketed_batches_hold_the_eager_windows_and_labels_padded_to_a_bucket(tiny):
    tokenizer = AutoTokenizer.from_pretrained(str(tiny["model"]))
    questions = load_dataset(str(tiny["train"]), "squad").questions
    table, _ = build_span_features(questions, tokenizer, 64, 16, 16, True, True)
    eager = WindowDataset(table, True, 0, 1, 64)
    buckets = eager.bucketed((24, 40, 64))
    lengths = eager.lengths()
    for start in range(0, len(eager), 5):
        windows = list(range(start, min(start + 5, len(eager))))
        plain, padded = eager.batch(windows), buckets.batch(windows)
        width = plain["input_ids"].shape[-1]
        assert padded["input_ids"].shape[-1] == min(b for b in (24, 40, 64) if b >= lengths[windows].max())
        for key, value in plain.items():
            if value.dim() == 2:
                assert torch.equal(padded[key][:, :width], value) and not padded[key][:, width:].any()
            else:
                assert torch.equal(padded[key], value)  # labels
    with pytest.raises(ExpmrcError, match="longer than the largest length bucket"):
        eager.bucketed((8,)).batch([int(np.argmax(lengths))])


def parse(*argv: str) -> TrainConfig:
    """The training part of a baseline command line's configuration."""
    return parse_config("span", build_parser("span"), ["--output_dir", "out", "--do_predict", "--predict_file=d",
                                                        *argv]).training


def test_default_buckets_stop_at_max_seq_length():
    assert default_buckets(512) == (128, 256, 384, 512)
    assert default_buckets(384) == (128, 256, 384)
    assert default_buckets(300) == (128, 256, 300)
    assert default_buckets(64) == (64,)
    assert parse("--torch_compile=True", "--max_seq_length=512").compile_buckets == (128, 256, 384, 512)
    assert parse("--torch_compile=True", "--max_seq_length=64", "--compile_buckets=32,64").compile_buckets == (32, 64)
    assert parse().compile_buckets == ()
    assert parse("--torch_compile", "--torch_compile_mode=reduce-overhead").compile_mode == "reduce-overhead"


@pytest.mark.parametrize("argv, message", [
    (["--compile_buckets=128,256"], "--compile_buckets pads batches for --torch_compile True"),
    (["--torch_compile_mode=reduce-overhead"], "--torch_compile_mode needs --torch_compile True"),
    (["--torch_compile", "--max_seq_length=384", "--compile_buckets=128,256"],
     "--compile_buckets 128,256 does not reach --max_seq_length 384"),
    (["--torch_compile", "--max_seq_length=384", "--compile_buckets=128,512"], "goes beyond --max_seq_length 384"),
    (["--torch_compile", "--compile_buckets=256,128,384"], "must be ascending token counts"),
    (["--torch_compile", "--compile_buckets=0,384"], "must be ascending token counts"),
    (["--torch_compile", "--compile_buckets=big"], "must be ascending token counts"),
])
def test_bad_bucket_lists_are_refused_in_one_line(argv, message):
    with pytest.raises(ExpmrcError, match=message):
        parse(*argv)


def test_a_bucket_list_without_compiling_is_one_line_and_exit_2(tiny, capsys):
    argv = run_flags(tiny, tiny["root"] / "refused", "--compile_buckets=32,64")
    assert run_guarded(run_span, argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --compile_buckets pads batches for --torch_compile True")
    assert not (tiny["root"] / "refused" / "run_info.json").exists()


def tiny_span_setup(tiny, seed: int = 0):
    """A tiny SpanModel (dropout off) and the training windows of the generated file, padded as on a CPU."""
    tokenizer = AutoTokenizer.from_pretrained(str(tiny["model"]))
    questions = load_dataset(str(tiny["train"]), "squad").questions
    table, _ = build_span_features(questions, tokenizer, 64, 16, 16, True, True)
    torch.manual_seed(seed)
    model, _ = load_task_model(SpanModel, resolve_source(str(tiny["model"])), LossSettings(0.5))
    return model, WindowDataset(table, True, 0, 1, 64)


def test_the_loop_gives_the_numbers_of_the_textbook_loop(tiny, tmp_path):
    """train() (full masks dropped, padding masks passed ready-made, loss checks kept on the device) against
    the plain loop on the same batches with the masks as the library takes them: the same weights, bit for bit."""
    steps, batch_size = 16, 2
    model, data = tiny_span_setup(tiny)
    reference, _ = tiny_span_setup(tiny)
    config = TrainConfig(output_dir=str(tmp_path), learning_rate=3e-3, max_steps=steps, train_batch_size=batch_size,
                         save_checkpoints_steps=100, logging_steps=4, seed=2)
    lengths = data.lengths()
    train(model, data, config, make_accelerator(config))
    optimizer = torch.optim.AdamW(parameter_groups(reference, 0.01), lr=3e-3, eps=ADAM_EPSILON)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(steps * 0.1), steps)
    reference.train()
    padded_steps = 0
    for step in range(steps):
        batch = data.batch(batch_indices(step, len(data), batch_size, 2, lengths))
        padded_steps += int(not batch["attention_mask"].all())
        reference(**batch)["loss"].backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    assert 0 < padded_steps < steps  # batches with padding and without were met
    for (name, ours), theirs in zip(model.named_parameters(), reference.parameters()):
        assert torch.equal(ours, theirs), name


def scalar_reads(run) -> int:
    """How many times `run()` reads a tensor's value back to the host (`aten::_local_scalar_dense`, `is_nonzero`)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        run()
    return sum(e.count for e in profile.key_averages() if e.key in ("aten::_local_scalar_dense", "aten::is_nonzero"))


def test_a_training_step_reads_nothing_back_from_the_device(tiny):
    """Forward, backward, clipping and the loss window. (The optimizer is fused AdamW on CUDA, whose step
    counters live on the device; on a CPU they live on the host, where reading them is no sync.)"""
    model, data = tiny_span_setup(tiny)
    model.train()
    window = LossWindow(torch.zeros(()))
    lengths = data.lengths()
    padded = next(i for i in range(len(data)) if lengths[i] < lengths.max())
    batch = data.batch([padded, int(np.argmax(lengths))])  # one short, one long window: padding
    assert not batch["attention_mask"].all()

    def library_forward() -> None:  # the encoder deciding on its own whether the padding mask can be skipped
        model.library_masks = False
        model.encode(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        model.library_masks = True

    assert scalar_reads(library_forward) > 0  # the check can fail: the library reads the mask back
    moved = to_device(batch, torch.device("cpu"))

    def step() -> None:
        loss = model(**moved)["loss"]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        model.zero_grad(set_to_none=True)
        window.add(loss.detach(), 1)

    assert scalar_reads(step) == 0
    full = data.batch([int(np.argmax(lengths))])
    assert to_device(full, torch.device("cpu"))["attention_mask"] is None  # no padding: no mask at all
    assert to_device(full, torch.device("cpu"), keep_full_mask=True)["attention_mask"] is not None


def test_masks_given_ready_made_give_the_library_s_outputs(tiny):
    model, data = tiny_span_setup(tiny)
    model.eval()
    lengths = data.lengths()
    batch = data.batch([int(np.argmin(lengths)), int(np.argmax(lengths))])
    with torch.no_grad():
        ours = model(**to_device(batch, torch.device("cpu")))
        model.library_masks = False  # the 2D mask to the library, which builds the 4D one itself
        theirs = model(**batch)
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key


def test_a_loss_that_stops_being_finite_is_named_at_the_next_log_line(tmp_path):
    window = LossWindow(torch.zeros(()))
    config = TrainConfig(output_dir=str(tmp_path))
    accelerator = make_accelerator(config)
    for step, value in enumerate([1.0, 2.0, float("nan"), float("inf"), 3.0], 1):
        window.add(torch.tensor(value), step)
    with pytest.raises(ExpmrcError, match=r"^step 3: the loss is nan; training stopped"):
        window.check_finite(accelerator)
