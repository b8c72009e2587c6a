"""A backend of one's own: registered in `BACKENDS`, it needs exactly the members of the `Backend` contract
(expmrc/llm/backends.py) and runs `expmrc llm` end to end; one that lacks a member is one line naming it,
before any request and with nothing written."""

from __future__ import annotations

import threading

from helpers.common import needs_punkt
from helpers.hostile import assert_refused, run_cli
from helpers.llm_data import gold_reply, read_run, write_dataset

from expmrc.llm.backends import BACKENDS, CONTRACT, BackendKind
from expmrc.llm.completion import Reply


class GoldBackend:
    """The contract's members and nothing else, answering every question from the gold data."""

    name = "gold"
    batch_size = 2
    parallel = False
    device = "cpu"

    def __init__(self, dataset: str) -> None:
        self.stop = threading.Event()
        self.reply = gold_reply(dataset)
        self.checked: list[dict] = []

    def identity(self) -> dict:
        return {"backend": self.name}

    def as_sent(self, request: dict) -> dict:
        return request

    def check(self, body: dict) -> None:
        self.checked.append(body)

    def complete(self, bodies: list[dict]) -> list[Reply]:
        return [Reply(self.reply(body), prompt_tokens=10, completion_tokens=5, finish_reason="stop") for body in bodies]


class NoCheckBackend(GoldBackend):
    """A backend written before `check` and `device` were part of the contract."""

    def __getattribute__(self, name: str):
        if name in ("check", "device"):
            raise AttributeError(name)
        return super().__getattribute__(name)


def run_with(monkeypatch, tmp_path, name: str, backend: object) -> tuple[int, str]:
    """`expmrc llm --backend NAME` on the CMRC-2018-like dataset, `backend` registered as NAME: (status, stderr)."""
    monkeypatch.setitem(BACKENDS, name, BackendKind(lambda settings: backend, remote=False, summary=f"{name} replies"))
    status, _, err = run_cli(["llm", str(tmp_path / "expmrc-cmrc2018-dev.json"), "--model", "m", "--backend", name,
                              "--no-cache", "--quiet", "--output", str(tmp_path / "run")])
    return status, err


def test_the_contract_is_the_protocols_members():
    assert set(CONTRACT) == {"name", "batch_size", "parallel", "stop", "device", "identity", "as_sent", "check",
                             "complete"}


@needs_punkt
def test_a_backend_with_the_contracts_members_runs_end_to_end(tmp_path, monkeypatch):
    backend = GoldBackend(write_dataset(tmp_path, "cmrc2018"))
    status, err = run_with(monkeypatch, tmp_path, "gold", backend)
    assert status == 0, err
    assert len(backend.checked) == 1  # the first request, checked before any is sent
    scores = read_run(tmp_path / "run", "scores.json")
    assert scores["grounded"]["ALL_F1"] == 100.0 and scores["parse"]["json"] == 2
    record = read_run(tmp_path / "run", "run_info.json")
    assert record["backend"] == "gold" and record["environment"]["device"] == "cpu"


def test_a_backend_missing_a_member_is_one_line_before_any_request(tmp_path, monkeypatch):
    status, err = run_with(monkeypatch, tmp_path, "partial", NoCheckBackend(write_dataset(tmp_path, "cmrc2018")))
    assert_refused(status, err, "--backend partial: NoCheckBackend lacks device, check, which every backend has")
    assert not (tmp_path / "run").exists()
