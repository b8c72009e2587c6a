"""The subsets: every fact about SQuAD, CMRC 2018, RACE+ and C3 that code depends on, in one table.

Every choice list of a command, display name, version rule, question-id check, dev-set checksum, default
metric list, the source an export's card cites and the paper's Table 4 cells read `TABLE`; a fifth subset is
one more `Subset` here plus its data (`$EXPMRC_DATA/<name>/expmrc-<name>-dev.json`) and its lm-evaluation-harness
task file (`expmrc/llm/lm_eval_tasks/expmrc_<name>.yaml`, listed in the `expmrc` group); tests/data/test_subsets.py
runs one through scoring, export and Table 4, and checks a task file per entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from expmrc.errors import ExpmrcError

KINDS = {"span": "span-extraction", "choice": "multiple-choice"}  # task kind -> how messages call its data


class PaperTable4(NamedTuple):
    """The paper's Table 4 cells of a dev set: evidence F1 (× 100) with the gold answers of the two sentence oracles."""

    answer_sentence: float  # "Ground Truth Answer Sent." (the `gold-answer-sentence` method)
    evidence_sentence: float  # "Ground Truth Evidence Sent." (the `gold-evidence-sentence` method)


@dataclass(frozen=True)
class Subset:
    """One subset: its names, task kind and language, and how its files and question ids are recognised."""

    name: str  # what commands take and run records keep
    display: str  # what tables and pages show
    kind: str  # "span" or "choice"
    language: str  # "en" or "zh"
    version_key: str  # a dataset whose `version` contains this is of the subset (the official scorer's rule)
    id_pattern: re.Pattern[str]  # how its question ids look (dev and training sets)
    dev_sha256: str | None  # the official dev set's checksum (`expmrc download`); None: no official release
    metrics: tuple[str, ...]  # the extra metrics computed beside the leaderboard's unless others are chosen
    source: str  # the dataset it is built on, as an export's dataset card cites it
    paper_table4: PaperTable4 | None  # None: the ExpMRC paper has no Table 4 row for it

    @property
    def dev_file(self) -> str:
        """The dev set's file name, as the official release names it."""
        return f"expmrc-{self.name}-dev.json"


TABLE: tuple[Subset, ...] = (
    Subset("squad", "SQuAD", "span", "en", "squad", re.compile(r"[0-9a-f]{24}"),
           "2a97b681de208927c886b0a60fd83599a304157b011fcb7b43031ca48104e6d7", ("squad", "loca", "grounding"),
           "SQuAD 1.1 (Rajpurkar et al., 2016)", PaperTable4(88.2, 91.6)),
    Subset("cmrc2018", "CMRC 2018", "span", "zh", "cmrc2018", re.compile(r"(?:DEV|TRAIN|TRIAL|TEST)_\d+_QUERY_\d+"),
           "189f494d86ca585990873fbb1fdc4626ec7ef3a86cfab38bc38fdedacdad896b", ("cmrc2018", "loca", "grounding"),
           "CMRC 2018 (Cui et al., 2019)", PaperTable4(82.1, 85.2)),
    Subset("race", "RACE+", "choice", "en", "race", re.compile(r"[0-9a-f]{8}-\d+"),
           "43819fee2096d40f8a209bd5bce82a47b663cb79804119c036de4655bd01f021", ("lexical-loca", "grounding"),
           "RACE (Lai et al., 2017)", PaperTable4(49.9, 86.9)),
    Subset("c3", "C3", "choice", "zh", "c3", re.compile(r"[a-z]\d+-\d+-\d+"),
           "b43356147cdd8228efdcd70f5953cf76b157d2c66724f2be308c7e5b965dfa8d", ("lexical-loca", "grounding"),
           "C3 (Sun et al., 2020)", PaperTable4(66.8, 89.1)),
)


def names() -> tuple[str, ...]:
    """Every subset's name, in table order (what `--subset` accepts)."""
    return tuple(s.name for s in TABLE)


def official() -> tuple[str, ...]:
    """The subsets with an official dev set to download (a pinned checksum)."""
    return tuple(s.name for s in TABLE if s.dev_sha256 is not None)


def names_of(kind: str) -> tuple[str, ...]:
    """The names of the subsets of one task kind, in table order."""
    return tuple(s.name for s in TABLE if s.kind == kind)


def subset(name: str) -> Subset:
    """The table entry of `name`; one line listing the names for an unknown one."""
    for entry in TABLE:
        if entry.name == name:
            return entry
    raise ExpmrcError(f"unknown subset {name!r}; choose one of {', '.join(names())}")


def from_version(version: str) -> str | None:
    """The subset a dataset `version` names (the first, in table order, whose key it contains), or None."""
    return next((s.name for s in TABLE if s.version_key in version), None)


def from_ids(ids: list[str]) -> str | None:
    """The subset most of `ids` look like (by `id_pattern`), or None."""
    counts: dict[str, int] = {}
    for qid in ids[:1000]:
        for entry in TABLE:
            if isinstance(qid, str) and entry.id_pattern.fullmatch(qid):
                counts[entry.name] = counts.get(entry.name, 0) + 1
    return max(counts, key=lambda name: counts[name]) if counts else None


def metric_defaults(metric: str) -> tuple[str, ...]:
    """The subsets a metric is computed on by default."""
    return tuple(s.name for s in TABLE if metric in s.metrics)
