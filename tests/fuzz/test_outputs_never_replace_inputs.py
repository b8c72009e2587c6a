"""No writer replaces or deletes one of its own inputs: an output folder that is, or holds, an input is refused in
one line (exit 2) before any work, whether or not the folder exists yet, and so is a folder replaced whole that
is the current folder or one above it (data/io.py's check_output_path and check_output_folder, which every
writer uses)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.common import FIXTURES, SPAN_DATA
from helpers.fake_openai import FakeChatServer
from helpers.hostile import assert_refused, files_under, run_cli
from helpers.llm_data import gold_reply, write_dataset

from expmrc.data.io import atomic_directory, check_output_folder
from expmrc.errors import ExpmrcError


def test_a_folder_output_that_is_or_holds_an_input_is_refused_by_the_one_check(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "data.json").write_text("{}", encoding="utf-8")
    for output, source, says in [("out", "out/data.json", "holds out/data.json"), ("out", "out", "is out"),
                                 ("new", "new/cache.sqlite", "holds new/cache.sqlite"),  # not there yet
                                 ("./out/", str(tmp_path / "out" / "data.json"), "holds")]:
        with pytest.raises(ExpmrcError, match="an input of this command") as refused:
            check_output_folder(output, [source], overwrite=True)
        assert says in str(refused.value)
    for output in (".", str(tmp_path), ".."):
        with pytest.raises(ExpmrcError, match="current folder or one above it"):
            check_output_folder(output, [], overwrite=True)
    check_output_folder("elsewhere", ["out/data.json"])  # beside the input: fine
    with pytest.raises(ExpmrcError, match="current folder"), atomic_directory(".", overwrite=True):
        pass
    assert files_under(tmp_path) == {"out", "out/data.json"}


def test_export_into_the_folder_holding_its_dataset_deletes_nothing(tmp_path, tmp_path_factory, monkeypatch):
    pytest.importorskip("datasets")
    folder = tmp_path / "dir"
    folder.mkdir()
    data = folder / "data.json"
    data.write_text(json.dumps(SPAN_DATA), encoding="utf-8")
    before = data.read_bytes()
    status, _, err = run_cli(["export", str(data), "--output", str(folder), "--overwrite"])
    assert_refused(status, err, f"holds {data}, an input of this command")
    monkeypatch.chdir(folder)
    status, _, err = run_cli(["export", "data.json", "--output", "."])
    assert_refused(status, err, ".: is the current folder or one above it")
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "data.json"
    shutil.copy(data, elsewhere)
    status, _, err = run_cli(["export", str(elsewhere), "--output", str(tmp_path)])  # one above the current folder
    assert_refused(status, err, "current folder or one above it")
    assert data.read_bytes() == before and files_under(tmp_path) == {"dir", "dir/data.json"}


@pytest.mark.parametrize("existing", [False, True], ids=["new-folder", "empty-folder"])
def test_llm_refuses_a_cache_inside_its_run_folder_before_any_request(tmp_path, existing):
    path = write_dataset(tmp_path, "cmrc2018")
    run = tmp_path / "run"
    if existing:
        run.mkdir()
    with FakeChatServer(gold_reply(path)) as server:
        status, _, err = run_cli(["llm", path, "--model", "fake-model", "--base-url", server.url, "--output", str(run),
                                  "--cache", str(run / "cache.sqlite"), "--overwrite", "--quiet"])
        assert server.requests == []
    assert_refused(status, err, f"holds {run / 'cache.sqlite'}, an input of this command")
    assert run.exists() == existing and not (run.exists() and any(run.iterdir()))


def test_convert_checkpoint_into_its_own_release_folder_is_refused(tmp_path):
    release = tmp_path / "release"
    shutil.copytree(FIXTURES / "tiny_tf_bert", release)
    before = files_under(release)
    status, _, err = run_cli(["convert-checkpoint", str(release), str(tmp_path), "--overwrite"])
    assert_refused(status, err, f"holds {release}, an input of this command")
    status, _, err = run_cli(["convert-checkpoint", str(release), str(release), "--overwrite"])
    assert_refused(status, err, f"is {release}, an input of this command")
    assert files_under(release) == before and Path(release, "vocab.txt").is_file()
