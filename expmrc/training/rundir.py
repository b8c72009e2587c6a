"""The run directory's record, run_info.json: what ran, on what, and whether it finished.

`expmrc collect` trusts only runs whose status is "finished"; a run writes "running" when it starts,
"finished" (with its global step) when it ends, and "failed" with the error when it stops on one.
A killed run leaves "running" behind, which counts as not finished. Only the main process writes.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from expmrc.data.io import write_json_atomic

RUN_INFO = "run_info.json"


def run_info_base(task: str, args: Any, model: str) -> dict[str, Any]:
    """The fields of run_info.json known when a run starts, from the parsed flags."""
    from expmrc.training.flags import flag_values

    return {
        "task": task,
        "task_name": args.task_name,
        "predict_file": args.predict_file,
        "train_file": args.train_file,
        "loss_lambda": float(args.loss_lambda),
        "rand_seed": int(args.rand_seed),
        "model": model,
        "status": "running",
        "global_step": 0,
        "flags": flag_values(args),
    }


def write_run_info(output_dir: str, info: dict[str, Any]) -> None:
    """Write run_info.json atomically, keys sorted so the file diffs cleanly."""
    write_json_atomic(str(Path(output_dir) / RUN_INFO), dict(sorted(info.items())), indent=2)


@contextmanager
def recorded_run(output_dir: str, info: dict[str, Any], is_main_process: bool = True) -> Iterator[dict[str, Any]]:
    """Mark the run "running", hand `info` to the body to fill in, then mark it "finished" or "failed"."""
    if is_main_process:
        write_run_info(output_dir, {**info, "status": "running"})
    try:
        yield info
    except BaseException as exc:
        if is_main_process:
            message = str(exc) or type(exc).__name__
            write_run_info(output_dir, {**info, "status": "failed", "error": message})
        raise
    if is_main_process:
        info["status"] = "finished"
        info.pop("error", None)
        write_run_info(output_dir, info)
