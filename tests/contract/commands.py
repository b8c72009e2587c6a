"""The table of every command the contract test runs (tests/contract/test_contract.py): each `expmrc` command of
the CLI's registry (`expmrc.cli.COMMANDS`), `eval_expmrc.py`, the two baselines, every script in scripts/ and every
benchmark that reads a file. A command added anywhere without a row here fails `test_every_command_has_a_row`.

A row is one run of the command that would work, over placeholders (`{dev}`, `{out}`, ...) the sandbox fills
with files (`SANDBOX` below), and says which placeholders are its inputs, outputs and model folders, which flags
need another flag, and where Ctrl-C can find it working. The classes of hostile input that apply follow from that
(docs/bad-input.md, "The contract test"); `later` lists a class a row still fails, with the issue that owns it: the
test expects the failure (strict), so the fix shows as an unexpected pass until the line is removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contract.harness import CLASSES, INPUT_CLASSES


@dataclass(frozen=True)
class Row:
    """One command of the table (see the module's docstring)."""

    runner: str  # "expmrc", a Python script's path from the checkout's root, or a shell script's (`.sh`)
    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # environment variables the command reads (templates too)
    inputs: tuple[str, ...] = ()  # placeholders of JSON files read (every input class applies)
    dir_inputs: tuple[str, ...] = ()  # placeholders of folders read (missing; a file where the folder goes)
    outputs: tuple[str, ...] = ()  # placeholders of files written
    dir_outputs: tuple[str, ...] = ()  # placeholders of folders written
    models: tuple[str, ...] = ()  # placeholders of model folders read
    lone: tuple[tuple[str, ...], str] | None = None  # a whole argv giving a flag without the flag it needs, the flag
    prints: bool = False  # a cheap run that works prints on stdout: a full and a closed stdout apply
    interrupt: str | None = None  # the input made a FIFO that Ctrl-C finds the command reading
    only: tuple[str, ...] | None = None  # the classes that apply, where the rest are another row's
    later: dict[str, str] = field(default_factory=dict)  # class -> who fixes it (a strict expected failure)
    accepts: dict[str, str] = field(default_factory=dict)  # "class:placeholder" -> why it is read, with a warning
    keeps: tuple[str, ...] = ()  # placeholders a run that got going keeps even when it fails (a reply cache)
    heavy: bool = False  # starts slowly (torch, a baseline): its classes are sampled by the seed
    copy: bool = False  # run a copy of scripts/ in the sandbox (setup.sh works on the checkout it sits in)


SPAN_RUN = ("--do_train=True", "--train_file={train}", "--do_predict=True", "--predict_file={dev}",
            "--output_dir={outdir}", "--max_seq_length=64", "--doc_stride=32", "--max_query_length=16",
            "--max_steps=1")
CHOICE_RUN = ("--do_train=True", "--train_file={ctrain}", "--do_predict=True", "--predict_file={cdev}",
              "--output_dir={outdir}", "--max_seq_length=64", "--max_steps=1", "--allow_unknown_tokens=True")
SUBSET_SCRIPT = {"PLM_PATH": "{bert}", "DATA_PATH": "{data}", "MODEL_PATH": "{outdir}", "TRAIN_FILE": "{train}",
                 "PREDICT_FILE": "{dev}", "EXTRA_ARGS": "--max_steps 1 --max_seq_length 64 --doc_stride 32"}
CHOICE_SCRIPT = {**SUBSET_SCRIPT, "TRAIN_FILE": "{ctrain}", "PREDICT_FILE": "{cdev}",
                 "EXTRA_ARGS": "--max_steps 1 --max_seq_length 64 --allow_unknown_tokens True"}
JUDGE_CHAT = ("--judge", "chat", "--judge-model", "fake-model", "--base-url", "{server}", "--cache", "{cache}")
GROUND_JUDGE = ("--judge", "chat", "--judge-model", "fake-model", "--judge-base-url", "{server}", "--judge-cache",
                "{cache}")

ROWS: dict[str, Row] = {
    # ---- the `expmrc` commands (expmrc.cli.COMMANDS)
    "evaluate": Row("expmrc", ("evaluate", "{dev}", "{preds}", "--details", "{details}"), inputs=("dev", "preds"),
                    outputs=("details",), lone=(("evaluate", "{dev}", "{preds}", "--seed", "3"), "--seed"),
                    prints=True, interrupt="preds"),
    "compare": Row("expmrc", ("compare", "{dev}", "{preds}", "{preds2}", "--ci-resamples", "50"),
                   inputs=("dev", "preds", "preds2"),
                   lone=(("compare", "{dev}", "{preds}", "{preds2}", "--trials", "50"), "--trials"),
                   prints=True, interrupt="preds2"),
    "human": Row("expmrc", ("human", "{dev}"), inputs=("dev",), prints=True, interrupt="dev"),
    "download": Row("expmrc", ("download", "--from", "{release}", "--dest", "{outdir}", "--subsets", "squad"),
                    inputs=("release",), dir_outputs=("outdir",), interrupt="release"),
    "evidence": Row("expmrc", ("evidence", "--method", "answer-sentence", "{dev}", "--answers", "{preds}",
                               "--output", "{out}"), inputs=("dev", "preds"), outputs=("out",), interrupt="dev"),
    "pseudo": Row("expmrc", ("pseudo", "--subset", "squad", "{train}", "--output", "{out}"), inputs=("train",),
                  outputs=("out",), lone=(("pseudo", "--subset", "squad", "{train}", "--output", "{out}",
                                           "--margin", "0.5"), "--margin"), interrupt="train"),
    "convert-checkpoint": Row("expmrc", ("convert-checkpoint", "{tf}", "{outdir}"), dir_outputs=("outdir",),
                              models=("tf",), heavy=True),
    # --output-dir is a folder written into (the tables beside whatever is there), not replaced whole
    "collect": Row("expmrc", ("collect", "{runs}", "--output-dir", "{outdir}", "--quiet", "--data", "{dev}"),
                   inputs=("dev",), dir_inputs=("runs",), interrupt="dev"),
    "faithfulness": Row("expmrc", ("faithfulness", "{finetuned}", "{dev}", "--output", "{out}", "--details",
                                   "{details}", "--quiet"), inputs=("dev",), outputs=("out", "details"),
                        models=("finetuned",), interrupt="dev", heavy=True,
                        only=tuple(c for c in CLASSES if c != "fifo")),  # no model that works: a FIFO read is moot
    "report": Row("expmrc", ("report", "{dev}", "{preds}", "--output", "{out}"), inputs=("dev", "preds"),
                  outputs=("out",), lone=(("report", "{dev}", "{preds}", "--output", "{out}", "--names", "a,b"),
                                          "--names"), interrupt="preds"),
    "ground": Row("expmrc", ("ground", "{dev}", "{preds}", "--output", "{out}", "--details", "{details}"),
                  inputs=("dev", "preds"), outputs=("out", "details"), interrupt="preds"),
    "ground --judge": Row("expmrc", ("ground", "{dev}", "{preds}", *GROUND_JUDGE, "--quiet", "--output", "{out}",
                                     "--details", "{details}"), inputs=("dev", "preds"), outputs=("out", "details"),
                          lone=(("ground", "{dev}", "{preds}", "--output", "{out}", "--judge-model", "fake-model"),
                                "--judge"), interrupt="preds", keeps=("cache",)),
    "judge": Row("expmrc", ("judge", "{dev}", "{preds}", *JUDGE_CHAT, "--quiet", "--output", "{out}", "--details",
                            "{details}"), inputs=("dev", "preds"), outputs=("out", "details"),
                 lone=(("judge", "{dev}", "{preds}", "--judge-model", "fake-model"), "--judge"), prints=True,
                 interrupt="preds", keeps=("cache",)),
    "llm": Row("expmrc", ("llm", "{dev}", "--model", "fake-model", "--base-url", "{server}", "--output", "{outdir}",
                          "--cache", "{cache}", "--quiet"), inputs=("dev",), dir_outputs=("outdir",),
               lone=(("llm", "{dev}", "--model", "fake-model", "--base-url", "{server}", "--output", "{outdir}",
                      "--shots", "2"), "--shots"), interrupt="dev", keeps=("cache",)),
    "llm --backend transformers": Row("expmrc", ("llm", "{dev}", "--backend", "transformers", "--model", "{chat}",
                                                 "--output", "{outdir}", "--no-cache", "--quiet"),
                                      models=("chat",), only=("no-model", "damaged-model"), heavy=True),
    "lm-eval-path": Row("expmrc", ("lm-eval-path",), prints=True),
    "export": Row("expmrc", ("export", "{dev}", "--output", "{outdir}", "--format", "jsonl"), inputs=("dev",),
                  dir_outputs=("outdir",), interrupt="dev"),
    # ---- the leaderboard's script and the baselines (--output_dir is a run folder written into, not replaced whole)
    "eval_expmrc.py": Row("eval_expmrc.py", ("{dev}", "{preds}"), inputs=("dev", "preds"), prints=True,
                          interrupt="preds", accepts={"foreign:preds": "the leaderboard's line for a submission "
                                                      "answering no question, then a warning (docs/bad-input.md)"}),
    "baseline/run_se_mrc.py": Row("baseline/run_se_mrc.py", ("--model_name_or_path", "{bert}", *SPAN_RUN),
                                  inputs=("train", "dev"), models=("bert",),
                                  lone=(("--do_train=True", "--output_dir={outdir}", "--model_name_or_path",
                                         "{bert}"), "--do_train"), interrupt="train", heavy=True),
    "baseline/run_mc_mrc.py": Row("baseline/run_mc_mrc.py", ("--model_name_or_path", "{bert}", *CHOICE_RUN),
                                  inputs=("ctrain", "cdev"), models=("bert",),
                                  lone=(("--do_predict=True", "--output_dir={outdir}", "--model_name_or_path",
                                         "{bert}"), "--do_predict"), interrupt="ctrain", heavy=True),
    # ---- scripts/
    "scripts/run_squad.sh": Row("scripts/run_squad.sh", env=SUBSET_SCRIPT, inputs=("train",), models=("bert",),
                                only=("unknown-flag", "no-model"), heavy=True),
    "scripts/run_cmrc2018.sh": Row("scripts/run_cmrc2018.sh", env=SUBSET_SCRIPT, inputs=("dev",), models=("bert",),
                                   only=("unknown-flag",)),
    "scripts/run_race.sh": Row("scripts/run_race.sh", env=CHOICE_SCRIPT, inputs=("ctrain",), models=("bert",),
                               only=("unknown-flag",)),
    "scripts/run_c3.sh": Row("scripts/run_c3.sh", env=CHOICE_SCRIPT, inputs=("cdev",), models=("bert",),
                             only=("unknown-flag", "ctrl-c"), interrupt="ctrain", heavy=True),
    "scripts/lambda_sweep.sh": Row("scripts/lambda_sweep.sh", env={
        "SUBSET": "squad", "PLM_PATH": "{bert}", "DATA_PATH": "{data}", "OUTPUT_ROOT": "{outdir}",
        "TRAIN_FILE": "{train}", "PREDICT_FILE": "{dev}", "SWEEP_RUNS": "0.1:1", "COLLECT": "0",
        "EXTRA_ARGS": "--max_steps 1 --max_seq_length 64 --doc_stride 32"}, inputs=("train",), models=("bert",),
        only=("missing", "wrong-kind", "unknown-flag", "no-model"), heavy=True),
    "scripts/reproduce_table4.sh": Row("scripts/reproduce_table4.sh", ("--subsets", "squad"),
                                       env={"EXPMRC_DATA": "{data}"}, dir_inputs=("data",), prints=True,
                                       only=("missing", "unknown-flag")),
    "scripts/launch_multi_gpu.sh": Row("scripts/launch_multi_gpu.sh", ("{script}",),
                                       env={"NUM_GPUS": "1", "DRY_RUN": "1"}, inputs=("script",),
                                       only=("missing", "wrong-kind", "unknown-flag")),
    "scripts/launch_tpu_vm.sh": Row("scripts/launch_tpu_vm.sh", ("{script}",), env={"DRY_RUN": "1"},
                                    inputs=("script",), only=("missing", "wrong-kind", "unknown-flag")),
    "scripts/setup.sh": Row("scripts/setup.sh", only=("unknown-flag",), copy=True),
    "scripts/report_screenshot.py": Row("scripts/report_screenshot.py", ("--output", "{out}"),
                                        env={"EXPMRC_DATA": "{data}"}, dir_inputs=("data",), outputs=("out",),
                                        only=("missing", "unknown-flag")),
    "scripts/cmrc2018_annotators.py": Row("scripts/cmrc2018_annotators.py", ("{dev}",), inputs=("dev",),
                                          only=(*INPUT_CLASSES, "unknown-flag")),
    # ---- benchmarks that read files (the rest: NO_FILES below)
    # no Ctrl-C case: it reads regular files only (a FIFO is refused unread, the `fifo` class), so it never waits
    "benchmarks/bench_sweep_model.py": Row("benchmarks/bench_sweep_model.py", ("--steps", "{steps}"),
                                           inputs=("steps",)),
    "benchmarks/bench_subset_steps.py": Row("benchmarks/bench_subset_steps.py", (
        "--tiny", "--subsets", "squad", "--dev", "squad={dev}", "--train", "squad={train}", "--json", "{out}"),
        inputs=("dev",), outputs=("out",), only=("missing", "damaged", "unknown-flag", "output-is-input"),
        heavy=True),
    "benchmarks/bench_sweep.py": Row("benchmarks/bench_sweep.py", ("--tiny", "--data", "squad={data}", "--json",
                                                                   "{out}"), dir_inputs=("data",), outputs=("out",),
                                     only=("missing", "unknown-flag"), heavy=True),
    "benchmarks/bench_gpu.py": Row("benchmarks/bench_gpu.py", ("--tiny", "--train", "{train}", "--dev", "{dev}"),
                                   inputs=("train",), only=("missing", "unknown-flag"), heavy=True),
    "benchmarks/bench_unpadded.py": Row("benchmarks/bench_unpadded.py", ("--tiny", "--train", "{train}"),
                                        inputs=("train",), only=("missing", "damaged", "unknown-flag"), heavy=True),
    "benchmarks/profile_step.py": Row("benchmarks/profile_step.py", ("--train", "{train}"), inputs=("train",),
                                      only=("missing", "damaged", "unknown-flag"), heavy=True),
    "benchmarks/bench_padding.py": Row("benchmarks/bench_padding.py", ("--tokenizer", "{bert}", "--json", "{out}"),
                                       env={"EXPMRC_DATA": "{data}"}, models=("bert",), outputs=("out",),
                                       only=("no-model", "unknown-flag"), heavy=True),
    "benchmarks/bench_feature_cache.py": Row("benchmarks/bench_feature_cache.py", ("--train", "{train}"),
                                             inputs=("train",), only=("missing", "damaged", "unknown-flag"),
                                             heavy=True),
    "benchmarks/bench_features.py": Row("benchmarks/bench_features.py", ("--span-train", "{train}",
                                                                         "--choice-train", "{ctrain}", "--no-full"),
                                        inputs=("train",), only=("missing", "wrong-kind", "unknown-flag"),
                                        heavy=True),
    "benchmarks/bench_judge.py": Row("benchmarks/bench_judge.py", ("--model", "{nli}"), env={"EXPMRC_DATA": "{data}"},
                                     models=("nli",), only=("no-model", "unknown-flag"), heavy=True),
    "benchmarks/bench_scoring.py": Row("benchmarks/bench_scoring.py", ("--official", "{script}"),
                                       env={"EXPMRC_DATA": "{data}"}, inputs=("script",), dir_inputs=("data",),
                                       only=("missing", "unknown-flag")),
    "benchmarks/bench_evidence.py": Row("benchmarks/bench_evidence.py", env={"EXPMRC_DATA": "{data}"},
                                        dir_inputs=("data",), only=("missing", "unknown-flag")),
    "benchmarks/bench_report.py": Row("benchmarks/bench_report.py", env={"EXPMRC_DATA": "{data}"},
                                      dir_inputs=("data",), only=("missing", "unknown-flag")),
    "benchmarks/bench_stats.py": Row("benchmarks/bench_stats.py", env={"EXPMRC_DATA": "{data}"},
                                     dir_inputs=("data",), only=("missing", "unknown-flag")),
    "benchmarks/bench_citations.py": Row("benchmarks/bench_citations.py", env={"EXPMRC_DATA": "{data}"},
                                         dir_inputs=("data",), only=("missing", "unknown-flag")),
    "benchmarks/bench_grounding.py": Row("benchmarks/bench_grounding.py", env={"EXPMRC_DATA": "{data}"},
                                         dir_inputs=("data",), only=("missing", "unknown-flag")),
    "benchmarks/bench_faithfulness.py": Row("benchmarks/bench_faithfulness.py", ("--questions", "0"),
                                            only=("unknown-flag",)),
    "benchmarks/bench_llm.py": Row("benchmarks/bench_llm.py", ("--parse-only",), only=("unknown-flag",)),
}

# files of scripts/ and benchmarks/ that are no command of their own, or read no file: why each has no row
NOT_COMMANDS = {
    "scripts/_common.sh": "sourced by the other scripts (their checks are theirs), never run",
    "scripts/_slurm.sh": "sourced by lambda_sweep.sh for SCHEDULER=slurm, never run",
    "scripts/check_flaky.sh": "a developer's loop over pytest: its arguments are pytest's, its inputs the tests",
    "benchmarks/_common.py": "imported by the benchmarks, never run",
}
NO_FILES = {
    "benchmarks/bench_crc32c.py": "times checksums of buffers it makes itself",
    "benchmarks/bench_task_models.py": "times random models on random batches it makes itself",
}
