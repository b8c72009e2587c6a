"""What scripts/lambda_sweep.sh checks before it submits or starts a run: a model folder and a subset's two data
files. Runs driven by a stand-in trainer (LAUNCH) read none of them, so their contents are placeholders."""

from __future__ import annotations

import json
from pathlib import Path


def sweep_inputs(folder: Path, subset: str) -> dict[str, str]:
    """PLM_PATH (a Hugging Face folder: config.json and weights) and DATA_PATH (train-pseudo-SUBSET.json and
    expmrc-SUBSET-dev.json) under `folder`, as lambda_sweep.sh's environment."""
    model, data = folder / "model", folder / "data"
    model.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")
    (model / "model.safetensors").write_bytes(b"placeholder")
    for name in (f"train-pseudo-{subset}.json", f"expmrc-{subset}-dev.json"):
        (data / name).write_text(json.dumps({"version": subset, "data": []}), encoding="utf-8")
    return {"PLM_PATH": str(model), "DATA_PATH": str(data)}
