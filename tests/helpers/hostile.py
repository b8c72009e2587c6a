"""What the robustness tests share: running a command in-process with its output captured, the contract
every refusal must keep, and an independent reference of the leaderboard's scoring algorithm.

The reference walks a dataset's raw JSON exactly as the leaderboard's script does (its id lookups, its
str() of answers, the places where it crashes) and reuses only the token-level metric, so it checks the
matching and aggregation of `expmrc.scoring` against the leaderboard's own rules.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections import Counter
from pathlib import Path
from typing import Any

from expmrc import cli
from expmrc.metrics.leaderboard import normalize, tokenize


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """`expmrc ARGV` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    return status, out.getvalue(), err.getvalue()


def assert_refused(status: int, err: str, names: str | None = None) -> None:
    """The refusal contract: exit 2, exactly one stderr line (warnings aside) starting `error:`, no traceback,
    naming `names` when given."""
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert status == 2, f"exit {status}, stderr: {err[-500:]}"
    assert "Traceback" not in err, err
    assert len(errors) == 1 and lines[-1] == errors[0], err
    if names is not None:
        assert names in errors[0], errors[0]


def assert_ok_or_refused(status: int, err: str) -> None:
    """A command given odd input either runs (0) or refuses in one line; nothing else."""
    assert "Traceback" not in err, err
    if status != 0:
        assert_refused(status, err)


def files_under(folder: Path) -> set[str]:
    """Every file and folder below `folder` (hidden ones too), relative: what a command left behind."""
    return {str(Path(root, name).relative_to(folder)) for root, dirs, files in os.walk(folder) for name in dirs + files}


class LeaderboardCrash(Exception):
    """The leaderboard's script would stop with a traceback on this input (so there is no number to match)."""


def _f1(references: Any, prediction: Any) -> float:
    if not isinstance(references, list) or not references:
        raise LeaderboardCrash("max() of no references")
    pred = normalize(tokenize(str(prediction)))
    best = None
    for reference in references:
        gold = normalize(tokenize(str(reference)))
        if not gold or not pred:
            value = float(gold == pred)
        else:
            same = sum((Counter(gold) & Counter(pred)).values())
            value = 0.0 if same == 0 else 2 * (same / len(pred)) * (same / len(gold)) / (same / len(pred) + same / len(gold))
        best = value if best is None else max(best, value)
    return best


def _require(obj: Any, *keys: str) -> None:
    """Index `obj` by each key, as the leaderboard's script reads fields it then never uses."""
    for key in keys:
        obj[key]


def _entry(predictions: dict, key: Any) -> Any:
    try:
        found = key in predictions
    except TypeError:  # an unhashable id
        raise LeaderboardCrash("unhashable id") from None
    if not found:
        return None
    entry = predictions[key]
    if not isinstance(entry, dict) or "answer" not in entry or "evidence" not in entry:
        raise LeaderboardCrash("prediction without answer/evidence")
    return entry


def leaderboard_reference(dataset: Any, predictions: Any) -> dict[str, Any]:
    """ALL_F1, ANS_F1, EVI_F1 (as '%.3f' strings), TOTAL and SKIP as the leaderboard computes them, or
    LeaderboardCrash where its script would crash."""
    try:
        version = dataset["version"]
        kind = "span" if ("squad" in version or "cmrc2018" in version) else (
            "choice" if ("race" in version or "c3" in version) else None)
    except (KeyError, TypeError) as exc:
        raise LeaderboardCrash(f"version: {exc}") from None
    if kind is None or not isinstance(predictions, dict):
        raise LeaderboardCrash("unsupported version or submission")
    answer = evidence = overall = 0.0
    total = skipped = 0
    try:
        if kind == "span":
            for article in dataset["data"]:
                for para in article["paragraphs"]:
                    _require(para, "context")
                    for qa in para["qas"]:
                        total += 1
                        _require(qa, "question")
                        qid = qa["id"]
                        answers, evidences = [x["text"] for x in qa["answers"]], qa["evidences"]
                        entry = _entry(predictions, qid)
                        if entry is None:
                            skipped += 1
                            continue
                        a = _f1(answers, entry["answer"])
                        e = _f1(evidences, entry["evidence"])
                        answer, evidence, overall = answer + a, evidence + e, overall + a * e
        else:
            for sample in dataset["data"]:
                pid, questions, gold = sample["id"], sample["questions"], sample["answers"]
                _require(sample, "article", "options")
                total += len(questions)
                for j in range(len(gold)):
                    entry = _entry(predictions, pid + "-" + str(j))
                    if entry is None:
                        skipped += 1
                        continue
                    a = 1 if entry["answer"] == gold[j] else 0
                    e = _f1(sample["evidences"][j], entry["evidence"]) if "evidences" in sample else 0
                    answer, evidence, overall = answer + a, evidence + e, overall + a * e
        return {"ALL_F1": "%.3f" % (100.0 * overall / total), "ANS_F1": "%.3f" % (100.0 * answer / total),
                "EVI_F1": "%.3f" % (100.0 * evidence / total), "TOTAL": total, "SKIP": skipped}
    except (KeyError, TypeError, IndexError, ZeroDivisionError, AttributeError) as exc:
        raise LeaderboardCrash(f"{type(exc).__name__}: {exc}") from None
