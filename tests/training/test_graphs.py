"""--cuda_graphs: where it resolves on and off, one line where `on` cannot be, and everything a graphed run does but
the capture and the replay, run on the CPU as the very same steps uncaptured (`GRAPHED_DEVICES` widened to the CPU):
a tiny run predicts what the unpadded run predicts, records its token buckets (the plan its own batches give), re-
predicts its own predictions byte for byte; steps warm up, then each key is captured once; the learning rate is a
device tensor that follows the schedule; accumulation and multiple choice train as eagerly; a crashed run resumes to
the weights of an uninterrupted one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoTokenizer

from expmrc.cli import run_guarded
from expmrc.data.datasets import load_dataset
from expmrc.errors import ExpmrcError
from expmrc.features.span import build_span_features
from expmrc.features.windows import WindowDataset
from expmrc.data.submissions import write_predictions
from expmrc.inference import buckets, rerun
from expmrc.inference.buckets import BucketPlan, choose_buckets
from expmrc.models.backbones import load_task_model, resolve_source
from expmrc.models.heads import LossSettings
from expmrc.models.span import SpanModel
from expmrc.training import graphs
from expmrc.training.flags import build_parser, parse_config
from expmrc.training.graphs import resolve_graphs
from expmrc.training.loop import BatchStream, TrainConfig, make_accelerator, train
from expmrc.training.span_task import run_span
from helpers.span_runs import run_flags, tiny_span_files
from helpers.unpadded_models import largest_difference, loaded


@pytest.fixture
def on_the_cpu(monkeypatch):
    """The CPU counted among the devices whose steps are graphed: the same steps, run uncaptured."""
    monkeypatch.setattr(graphs, "GRAPHED_DEVICES", ("cuda", "cpu"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_span_files(tmp_path_factory.mktemp("graphs"))


def read(run: Path, name: str):
    return json.loads((run / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("requested, device, attention, extra, used", [
    ("auto", "cpu", "unpadded", {}, False), ("off", "cuda", "unpadded", {}, False),
    ("auto", "xla", "padded", {}, False), ("auto", "mps", "unpadded", {}, False),
])
def test_graphs_are_off_where_steps_are_not_captured(requested, device, attention, extra, used):
    chosen, why = resolve_graphs(requested, device, "bf16", attention, **extra)
    assert chosen is used and why and "\n" not in why
    assert why.startswith("auto: CUDA graphs need a CUDA GPU; this run is on") or requested == "off"


@pytest.mark.parametrize("extra, message", [
    ({}, None), ({"attention": "padded"}, "replay the unpadded step"),
    ({"torch_compile": True}, "--torch_compile True compiles the model instead"),
    ({"fused_kernels": True}, "--fused_kernels True runs compiled regions"),
    ({"processes": 2}, "one process only (this run has 2)"),
])
def test_what_can_be_graphed_on_a_graphed_device(on_the_cpu, extra, message):
    attention = extra.pop("attention", "unpadded")
    used, why = resolve_graphs("auto", "cpu", "no", attention, **extra)
    assert used is (message is None) and (message is None or message in why)
    if message:
        with pytest.raises(ExpmrcError, match="^--cuda_graphs on: ") as error:
            resolve_graphs("on", "cpu", "no", attention, **extra)
        assert message in str(error.value) and "\n" not in str(error.value)


def parsed(*argv: str):
    return parse_config("span", build_parser("span"), ["--output_dir", "out", "--do_predict", "--predict_file=d",
                                                        *argv])


@pytest.mark.parametrize("argv, message", [
    (["--cuda_graphs=on", "--attention=padded"], "it does not combine with --attention padded"),
    (["--cuda_graphs=on", "--torch_compile"], "it does not combine with --torch_compile True"),
    (["--cuda_graphs=on", "--fused_kernels"], "it does not combine with --fused_kernels True"),
])
def test_on_with_a_path_that_cannot_be_graphed_is_one_line_at_the_flags(argv, message):
    with pytest.raises(ExpmrcError, match=message):
        parsed(*argv)
    assert parsed().training.cuda_graphs == "auto" and parsed("--cuda_graphs=off").training.cuda_graphs == "off"


def test_on_without_cuda_is_one_line_and_writes_nothing(tiny, capsys):
    output = tiny["root"] / "refused"
    assert run_guarded(run_span, run_flags(tiny, output, "--cuda_graphs=on", "--attention=unpadded")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("error: --cuda_graphs on: CUDA graphs need a CUDA GPU; this run is on cpu (use --cuda_graphs "
                       "auto or off)")
    assert not output.exists()  # the run directory it made is gone with it


def test_a_refused_run_keeps_a_directory_that_was_there(tiny, capsys):
    output = tiny["root"] / "kept"
    output.mkdir()
    (output / "notes.txt").write_text("mine", encoding="utf-8")
    assert run_guarded(run_span, run_flags(tiny, output, "--cuda_graphs=on", "--attention=unpadded")) == 2
    assert [p.name for p in output.iterdir()] == ["notes.txt"]


def test_a_graphed_tiny_run_predicts_what_the_unpadded_run_predicts(tiny, on_the_cpu, monkeypatch):
    runs = {name: tiny["root"] / name for name in ("unpadded", "graphed")}
    assert run_guarded(run_span, run_flags(tiny, runs["unpadded"], "--attention=unpadded", "--cuda_graphs=off",
                                           "--max_steps=8")) == 0
    assert run_guarded(run_span, run_flags(tiny, runs["graphed"], "--attention=unpadded", "--max_steps=8")) == 0
    assert read(runs["graphed"], "dev_predictions.json") == read(runs["unpadded"], "dev_predictions.json")
    logged = {name: [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
              for name, run in runs.items()}
    assert [r["learning_rate"] for r in logged["graphed"]] == [r["learning_rate"] for r in logged["unpadded"]]
    record = read(runs["graphed"], "run_info.json")["cuda_graphs"]
    assert record["used"] is True and record["requested"] == "auto" and record["why"].startswith("auto on cpu:")
    assert record["graphs"] >= 1 and record["eager_steps"] >= graphs.WARMUP_STEPS
    assert read(runs["unpadded"], "run_info.json")["cuda_graphs"] == {"requested": "off", "used": False,
                                                                       "why": "asked for off"}
    timing = read(runs["graphed"], "run_info.json")["timing"]  # where the run's time went, training and the rest
    assert {"inputs", "model_load", "train_features", "training", "save_model", "predict_features", "prediction",
            "writing", "scoring", "wall"} <= timing["phases"].keys()
    assert timing["phases"]["training"] >= timing["train_seconds"] and timing["phases"]["wall"] >= sum(
        v for k, v in timing["phases"].items() if k != "wall") - 0.01
    # the plan is the one the run's own forward passes give, recorded in the run and its model
    plan = BucketPlan.from_record(record["buckets"], "run_info.json")
    assert plan == expected_plan(tiny) and read(runs["graphed"] / "model", "config.json")["expmrc"][
        "graph_buckets"] == plan.as_dict()
    # a predict-only run of the graphed model lays its batches out in the same buckets: the same files, byte for byte
    argv = [a for a in run_flags(tiny, runs["graphed"]) if not a.startswith(("--do_train", "--train_file"))]
    assert run_guarded(run_span, argv) == 0
    for name in ("dev_predictions.json", "dev_nbest.json"):
        assert (runs["graphed"] / "predict-only" / name).read_bytes() == (runs["graphed"] / name).read_bytes()
    # and so does FineTuned (what `expmrc faithfulness` predicts with) where graphs run
    monkeypatch.setattr(rerun, "graphs_unavailable", lambda device, precision, attention: None)
    monkeypatch.setattr(rerun, "resolve_attention", lambda *args: ("unpadded", "as the run"))
    again = rerun.FineTuned(str(runs["graphed"]))
    assert again.predictor.buckets == plan
    predicted = again.predict(load_dataset(str(tiny["dev"])).questions)
    write_predictions(str(tiny["root"] / "again"), predicted.predictions, predicted.nbest)
    for name in ("dev_predictions.json", "dev_nbest.json"):
        assert (tiny["root"] / "again" / name).read_bytes() == (runs["graphed"] / name).read_bytes()


def expected_plan(tiny) -> BucketPlan:
    """The plan of run_flags' 8 training steps of the tiny model, from the batch stream alone."""
    tokenizer = AutoTokenizer.from_pretrained(str(tiny["model"]))
    table, _ = build_span_features(load_dataset(str(tiny["train"]), "squad").questions, tokenizer, 64, 16, 16, True,
                                   True)
    data = WindowDataset(table, True, 0, 1, 64)
    stream = BatchStream(len(data), 8, 5, data.lengths())
    tokens = data.fixed().real_tokens()
    return choose_buckets([int(tokens[stream.indices(s)].sum()) for s in range(8)], TrainConfig("").graph_buckets, 64)


def tiny_model_and_data(tmp_path: Path, dropout: float = 0.1):
    """A tiny BERT span model on the unpadded path and the training windows of generated questions."""
    from helpers.span_data import make_span_file
    from helpers.tiny_bert import make_tiny_bert_folder

    source = resolve_source(str(make_tiny_bert_folder(tmp_path / "bert", seed=3, dropout=dropout)))
    questions = load_dataset(str(make_span_file(tmp_path / "train.json", 24, seed=4)), "squad").questions
    table, _ = build_span_features(questions, source.tokenizer, 64, 16, 16, True, True)
    return source, WindowDataset(table, True, 0, 1, 64)


def graphed_training(tmp_path: Path, data, source, name: str, **overrides):
    settings = dict(output_dir=str(tmp_path / name), learning_rate=3e-3, max_steps=10, train_batch_size=4,
                    save_checkpoints_steps=4, logging_steps=5, seed=7)
    config = TrainConfig(**{**settings, **overrides})
    accelerator = make_accelerator(config)
    model, _ = load_task_model(SpanModel, source, LossSettings(0.5))
    model.use_attention("unpadded")
    return model, train(model, data, config, accelerator), config, accelerator


def test_steps_warm_up_then_each_key_is_captured_once_and_train_as_the_eager_steps(tmp_path, on_the_cpu, monkeypatch):
    source, data = tiny_model_and_data(tmp_path, dropout=0.0)
    replayed = []
    real = graphs.Uncaptured.replay
    monkeypatch.setattr(graphs.Uncaptured, "replay",
                        lambda self, key, work: (replayed.append(key), real(self, key, work))[1])
    graphed, result, config, accelerator = graphed_training(tmp_path, data, source, "graphed")
    eager, eager_result, _, _ = graphed_training(tmp_path, data, source, "eager", cuda_graphs="off")
    assert result.graphs["used"] and not eager_result.graphs["used"]
    plan = BucketPlan.from_record(result.graphs["buckets"], "run_info.json")
    stream = BatchStream(len(data), config.train_batch_size, config.seed, data.lengths())
    tokens = data.fixed().real_tokens()
    met = [("step", 4, plan.place(int(tokens[stream.indices(step)].sum()))[0]) for step in range(10)]
    # eager: the run's first steps, and each key's first step (its warm-up); every other step replays its key
    assert replayed == [key for step, key in enumerate(met) if step >= graphs.WARMUP_STEPS and key in met[:step]]
    assert result.graphs["graphs"] == len(set(replayed)) and result.graphs["eager_steps"] == 10 - len(replayed)
    assert largest_difference(weights(graphed), weights(eager)) <= 1e-5
    # a graphed step logs the loss and its parts (the curves) as the eager step does
    logs = [[json.loads(line) for line in (tmp_path / name / "train_log.jsonl").read_text().splitlines()]
            for name in ("graphed", "eager")]
    assert [row["step"] for row in logs[0]] == [5, 10] and "evidence_loss" in logs[0][0]
    for graphed_row, eager_row in zip(*logs):
        assert graphed_row.keys() == eager_row.keys()
        assert all(abs(graphed_row[k] - eager_row[k]) <= 1e-4 for k in graphed_row if k != "examples_per_second")


def weights(model) -> dict[str, torch.Tensor]:
    """The model's weights but the span heads' biases: a bias shared by every position of a softmax has a true
    gradient of 0, so AdamW turns its rounding noise (which the layouts sum in different orders) into steps."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if not n.endswith("_head.bias")}


def test_the_learning_rate_is_a_tensor_the_schedule_fills_in_place_and_checkpoints_keep_a_number():
    from transformers import get_linear_schedule_with_warmup

    module, reference = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    optimizer = torch.optim.AdamW(module.parameters(), lr=3e-5)
    plain = torch.optim.AdamW(reference.parameters(), lr=3e-5)
    scheduler, plain_scheduler = (get_linear_schedule_with_warmup(o, 3, 10) for o in (optimizer, plain))
    graphs.GraphedSteps(module, optimizer, scheduler, None, 1, 1, 1.0)  # type: ignore[arg-type]
    rate = optimizer.param_groups[0]["lr"]
    assert isinstance(rate, torch.Tensor) and rate.dtype == torch.float64  # float32 on CUDA, as the kernel reads it
    for _ in range(10):
        assert float(rate) == plain.param_groups[0]["lr"] and optimizer.param_groups[0]["lr"] is rate
        optimizer.step()  # no gradients: nothing moves, but the schedule follows an optimizer step
        plain.step()
        scheduler.step()
        plain_scheduler.step()
    with graphs.plain_learning_rates(optimizer):
        assert optimizer.state_dict()["param_groups"][0]["lr"] == plain.param_groups[0]["lr"]
    assert optimizer.param_groups[0]["lr"] is rate


def test_accumulated_passes_and_the_update_are_keys_of_their_own(tmp_path, on_the_cpu):
    source, data = tiny_model_and_data(tmp_path, dropout=0.0)
    graphed, result, _, _ = graphed_training(tmp_path, data, source, "graphed", gradient_accumulation_steps=2)
    eager, _, _, _ = graphed_training(tmp_path, data, source, "eager", gradient_accumulation_steps=2,
                                      cuda_graphs="off")
    assert result.graphs["used"] and result.graphs["graphs"] >= 2  # passes and the update
    assert largest_difference(weights(graphed), weights(eager)) <= 1e-5


def test_a_crashed_graphed_run_resumes_to_the_uninterrupted_weights(tmp_path, on_the_cpu, monkeypatch):
    source, data = tiny_model_and_data(tmp_path)  # dropout on: resuming must restore the random state too
    graphed_training(tmp_path, data, source, "straight", max_steps=8)
    real, calls = buckets.BucketedWindows.batch, []

    def crashing(self, windows):
        calls.append(1)
        if len(calls) > 6:
            raise RuntimeError("simulated crash")
        return real(self, windows)

    monkeypatch.setattr(buckets.BucketedWindows, "batch", crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        graphed_training(tmp_path, data, source, "broken", max_steps=8)
    monkeypatch.setattr(buckets.BucketedWindows, "batch", real)
    _, result, _, _ = graphed_training(tmp_path, data, source, "broken", max_steps=8)
    assert result.resumed_from == 4 and result.graphs["used"]
    final = lambda run: load_file(str(tmp_path / run / "checkpoints/step-00000008/model.safetensors"))  # noqa: E731
    for name, tensor in final("straight").items():
        assert torch.equal(tensor, final("broken")[name]), name


def test_a_graphed_choice_model_trains_as_the_eager_one(tmp_path, on_the_cpu):
    model, _, data = loaded("bert", "choice", with_data=True)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    trained = []
    for name, mode in (("graphed", "auto"), ("eager", "off")):
        model.load_state_dict(state)
        model.use_attention("unpadded")
        config = TrainConfig(output_dir=str(tmp_path / name), learning_rate=1e-3, max_steps=4, train_batch_size=2,
                             save_checkpoints_steps=100, logging_steps=2, cuda_graphs=mode, seed=2)
        result = train(model, data, config, make_accelerator(config))
        assert result.graphs["used"] is (mode == "auto")
        trained.append(weights(model))
    assert largest_difference(*trained) <= 1e-5
    assert np.isfinite(result.last_loss)


class FakeCuda:
    """torch.cuda's graph calls as a record of what CudaGraphs asks for (no GPU here): streams, waits, captures and
    replays."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail = fail
        fake = self

        class Graph:
            def replay(self) -> None:
                fake.calls.append(("replay", id(self)))

        class Capture:
            def __init__(self, graph, pool=None, stream=None) -> None:
                fake.calls.append(("capture", id(graph), pool, stream))

            def __enter__(self) -> None:
                return None

            def __exit__(self, *exc) -> None:
                if fake.fail:
                    raise RuntimeError("operation not permitted when stream is capturing")

        class Stream:
            def __init__(self, device=None) -> None:
                self.name = "side"

            def wait_stream(self, other) -> None:
                fake.calls.append(("wait", self.name, other.name))

        class Current(Stream):
            def __init__(self) -> None:
                self.name = "current"

        self.Graph, self.Capture, self.Stream, self.current = Graph, Capture, Stream, Current()

    def install(self, monkeypatch) -> None:
        from contextlib import nullcontext

        monkeypatch.setattr(torch.cuda, "Stream", self.Stream)
        monkeypatch.setattr(torch.cuda, "graph_pool_handle", lambda: "pool")
        monkeypatch.setattr(torch.cuda, "CUDAGraph", self.Graph)
        monkeypatch.setattr(torch.cuda, "graph", self.Capture)
        monkeypatch.setattr(torch.cuda, "current_stream", lambda: self.current)
        monkeypatch.setattr(torch.cuda, "stream", lambda s: (self.calls.append(("on", s.name)), nullcontext())[1])


def test_cuda_graphs_warm_up_on_the_side_stream_capture_each_key_once_into_one_pool_and_replay(monkeypatch):
    fake = FakeCuda()
    fake.install(monkeypatch)
    runner = graphs.CudaGraphs(torch.device("cuda"))
    work = []
    runner.eager(lambda: work.append("eager"))
    assert fake.calls == [("wait", "side", "current"), ("on", "side"), ("wait", "current", "side")]
    fake.calls.clear()
    for key in ("a", "a", "b", "a"):
        runner.replay(key, lambda k=key: work.append(k))
    captures = [c for c in fake.calls if c[0] == "capture"]
    assert len(captures) == 2 and all(c[2] == "pool" and c[3] is runner.stream for c in captures)
    assert [c[0] for c in fake.calls] == ["capture", "replay", "replay", "capture", "replay", "replay"]
    assert work == ["eager", "a", "b"] and runner.captured == ["a", "b"]  # a capture records the work, runs nothing


def test_a_failed_capture_ends_the_run_in_one_line(monkeypatch):
    FakeCuda(fail=True).install(monkeypatch)
    runner = graphs.CudaGraphs(torch.device("cuda"))
    with pytest.raises(ExpmrcError, match="^capturing a training step as a CUDA graph failed \\(operation not "
                                          "permitted when stream is capturing\\); run the same command with "
                                          "--cuda_graphs off: it resumes from the last checkpoint$"):
        runner.replay("a", lambda: None)


def test_an_encoder_that_keeps_the_padded_path_runs_eagerly_and_on_is_one_line(tmp_path, on_the_cpu, capsys):
    from helpers.span_data import make_span_file
    from helpers.tiny_backbones import tiny_backbone

    dev = make_span_file(tmp_path / "dev.json", 4, seed=2)
    argv = ["--model_name_or_path", str(tiny_backbone("deberta-v2")), "--do_predict=True", f"--predict_file={dev}",
            "--max_seq_length=64", "--doc_stride=16", "--max_query_length=16", "--attention=unpadded",
            "--allow_unknown_tokens=True"]
    assert run_guarded(run_span, [*argv, f"--output_dir={tmp_path / 'auto'}"]) == 0
    record = read(tmp_path / "auto", "run_info.json")["cuda_graphs"]
    assert record["used"] is False and record["why"] == ("auto: CUDA graphs replay the unpadded step; this run takes "
                                                         "the padded path")
    capsys.readouterr()
    assert run_guarded(run_span, [*argv, f"--output_dir={tmp_path / 'on'}", "--cuda_graphs=on"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --cuda_graphs on: CUDA graphs replay the unpadded step; this run takes the padded path (use "
        "--cuda_graphs auto or off)")
    assert not (tmp_path / "on" / "run_info.json").exists()


def test_data_that_cannot_be_laid_out_trains_eagerly_or_is_one_line(tmp_path, on_the_cpu):
    class Plain:  # items with no fixed shape
        def __init__(self, data):
            self.data = data

        def __len__(self):
            return len(self.data)

        def batch(self, indices):
            return self.data.batch(indices)

    source, data = tiny_model_and_data(tmp_path, dropout=0.0)
    _, result, _, _ = graphed_training(tmp_path, Plain(data), source, "auto", max_steps=2)
    assert result.graphs == {"requested": "auto", "used": False,
                             "why": "auto: the training data cannot be laid out at a fixed shape"}
    with pytest.raises(ExpmrcError, match="^--cuda_graphs on: the training data cannot be laid out"):
        graphed_training(tmp_path, Plain(data), source, "on", max_steps=2, cuda_graphs="on")
