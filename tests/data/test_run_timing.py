"""Where a run's time goes: each phase's seconds add up over its spans, the process's own start-up and wall time are
kept beside them, and records written before phases were kept (tests/fixtures/old_runs) read as having none."""

from __future__ import annotations

import time

from expmrc.data.runs import Phases, RunRecord, process_seconds, recorded_phases
from helpers.common import FIXTURES


def test_phases_add_up_their_spans_and_the_wall_holds_them_all():
    phases = Phases()
    for _ in range(2):
        with phases.phase("load"):
            time.sleep(0.02)
    try:
        with phases.phase("fail"):
            raise ValueError
    except ValueError:
        pass
    kept = phases.as_dict()
    assert kept["load"] >= 0.04 and "fail" in kept
    assert kept["wall"] >= kept["startup"] + kept["load"] > 0  # the process's start-up (Linux) is the first phase
    assert process_seconds() >= kept["startup"]


def test_old_records_have_no_phases_and_odd_values_are_left_out():
    assert recorded_phases(RunRecord.read(FIXTURES / "old_runs" / "train-run")) == {}
    record = RunRecord("baseline", {"timing": {"phases": {"training": 2, "wall": 3.5, "odd": "x", "flag": True}}})
    assert recorded_phases(record) == {"training": 2.0, "wall": 3.5}
    assert recorded_phases(RunRecord("baseline", {"timing": [1]})) == {}
