"""Inputs that contradict each other or match nothing, flag typos, and where error lines start."""

import json
import re
import subprocess
import sys

import pytest
from helpers.common import CHOICE_DATA, ROOT, SPAN_DATA, environment, needs_punkt
from helpers.hostile import assert_refused, run_cli
from tqdm import tqdm

from expmrc.cli import run_guarded
from expmrc.errors import ExpmrcError, warn

pytestmark = needs_punkt
SPAN_PREDS = {"q1": {"answer": "Melbourne", "evidence": "Melbourne is the sporting capital of Australia."}}
RACE_IDS = {f"00052cc8-{i}": {"answer": "A", "evidence": "x"} for i in range(3)}


def write(path, obj):
    path.write_text(json.dumps(obj), encoding="utf-8")
    return str(path)


def test_a_subset_contradicting_the_version_is_one_line(tmp_path):
    dataset = write(tmp_path / "dev.json", SPAN_DATA)
    preds = write(tmp_path / "p.json", SPAN_PREDS)
    status, _, err = run_cli(["evaluate", dataset, preds, "--subset", "cmrc2018"])
    assert_refused(status, err, "contradicts the file's version 'expmrc-squad-dev'")


@pytest.mark.parametrize("command", ["evaluate", "report"])
def test_a_submission_matching_no_question_is_refused_naming_its_subset(tmp_path, command):
    dataset = write(tmp_path / "dev.json", SPAN_DATA)
    preds = write(tmp_path / "race.json", RACE_IDS)
    extra = ["--output", str(tmp_path / "r.html")] if command == "report" else []
    status, _, err = run_cli([command, dataset, preds, *extra])
    assert_refused(status, err, "look like race ids")
    assert "Unanswered" not in err and not (tmp_path / "r.html").exists()


def test_the_official_script_keeps_its_line_and_says_why_on_stderr(tmp_path):
    dataset = write(tmp_path / "dev.json", SPAN_DATA)
    preds = write(tmp_path / "race.json", RACE_IDS)
    out = subprocess.run([sys.executable, str(ROOT / "eval_expmrc.py"), dataset, preds], check=False,
                         capture_output=True, text=True, env=environment(), timeout=300)
    assert out.returncode == 0 and json.loads(out.stdout)["ALL_F1"] == "0.000"
    assert "look like race ids" in out.stderr.splitlines()[-1]


@pytest.mark.parametrize("argv, flag", [
    (["evidence", "--method", "answer-sentence", "DATA", "--answers", "", "--output", "OUT"], "--answers"),
    (["llm", "DATA", "--model", "", "--base-url", "http://127.0.0.1:9/v1", "--output", "OUT"], "--model"),
    (["judge", "DATA", "PREDS", "--judge", "chat", "--judge-model", "m", "--cache", ""], "--cache"),
    (["evaluate", "", "PREDS"], "DATASET"),
], ids=["evidence --answers", "llm --model", "judge --cache", "evaluate DATASET"])
def test_an_empty_value_is_refused_naming_the_flag_not_read_as_left_out(tmp_path, argv, flag):
    """`--answers "$PREDS"` with the variable unset: refused, where it used to explain the gold answers instead
    (and an empty --cache used the default cache); nothing is written."""
    files = {"DATA": write(tmp_path / "dev.json", SPAN_DATA), "PREDS": write(tmp_path / "p.json", SPAN_PREDS),
             "OUT": str(tmp_path / "out.json")}
    status, _, err = run_cli([files.get(word, word) for word in argv])
    assert_refused(status, err, f"argument {flag}")
    assert "is empty" in err and not (tmp_path / "out.json").exists()


def test_metrics_given_empty_still_means_no_extra_metrics(tmp_path):
    """The one flag whose empty value means something (docs/scoring.md): the leaderboard's figures alone."""
    status, out, _ = run_cli(["evaluate", write(tmp_path / "dev.json", SPAN_DATA), write(tmp_path / "p.json", SPAN_PREDS),
                              "--metrics", ""])
    assert status == 0 and "ALL_F1" in out and "LOCA" not in out


def test_a_partly_matching_submission_is_still_scored(tmp_path):
    dataset = write(tmp_path / "dev.json", SPAN_DATA)
    preds = write(tmp_path / "p.json", {**SPAN_PREDS, **RACE_IDS})
    status, _, err = run_cli(["evaluate", dataset, preds])
    assert status == 0 and "not in the dataset" in err


def test_expmrc_flags_take_no_abbreviation(tmp_path):
    dataset = write(tmp_path / "dev.json", SPAN_DATA)
    preds = write(tmp_path / "p.json", SPAN_PREDS)
    status, _, err = run_cli(["evaluate", dataset, preds, "--detail", str(tmp_path / "d.jsonl")])
    assert_refused(status, err, "unrecognized arguments: --detail")
    assert not (tmp_path / "d.jsonl").exists()


@pytest.mark.parametrize("script", ["run_se_mrc.py", "run_mc_mrc.py"])
@pytest.mark.parametrize("flags", [["--output_dir", "o", "--do_trai", "True"], ["--output_dir", "o", "--bogus"],
                                   ["--outpu", "o"]])
def test_a_baseline_usage_error_is_one_line(script, flags):
    out = subprocess.run([sys.executable, str(ROOT / "baseline" / script), *flags], check=False,
                         capture_output=True, text=True, env=environment(), timeout=300)
    assert_refused(out.returncode, out.stderr, f"error: {script}:")
    assert out.stderr.count("\n") == 1


def test_the_report_labels_every_option(tmp_path):
    data = json.loads(json.dumps(CHOICE_DATA))
    data["data"][1]["options"] = [[f"option {k}" for k in range(12)]]
    dataset = write(tmp_path / "c3.json", data)
    preds = write(tmp_path / "p.json", {"m1-0": {"answer": "A", "evidence": "小明去北京。"},
                                         "m2-0": {"answer": "L", "evidence": "天很蓝。"}})
    status, _, err = run_cli(["report", dataset, preds, "--output", str(tmp_path / "r.html")])
    assert status == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "ABCDEFGHIJKLMNOPQRSTUVWXYZ" in page


def test_an_error_mid_progress_bar_starts_its_own_line(capsys):
    def body(args):
        for i in tqdm(range(10), file=sys.stderr):
            if i == 5:
                raise ExpmrcError("x.json: question q5 is bad")

    assert run_guarded(body, None) == 2
    err = capsys.readouterr().err
    assert err.endswith("\nerror: x.json: question q5 is bad\n")


def test_a_warning_mid_progress_bar_starts_its_own_line(capsys):
    for i in tqdm(range(10), file=sys.stderr):
        if i == 5:
            warn("x.json: odd but accepted")
    err = capsys.readouterr().err
    assert re.search(r"(^|[\r\n])warning: x.json: odd but accepted\n", err), err


def test_half_second_of_a_one_passage_set_is_one_line(tmp_path):
    dataset = write(tmp_path / "dev.json", SPAN_DATA)
    status, _, err = run_cli(["evidence", "--method", "best", dataset, "--half", "second", "--output", str(tmp_path / "e.json")])
    assert_refused(status, err, "--half second holds no question")
    assert not (tmp_path / "e.json").exists()


def finished_run(tmp_path, farm4):
    dataset = write(tmp_path / "dev.json", SPAN_DATA)
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    write(run / "run_info.json", {"task": "span", "predict_file": dataset, "loss_lambda": 0.1, "rand_seed": 1,
                                  "model": "m", "status": "finished", "flags": {}})
    write(run / "dev_predictions.json", SPAN_PREDS)
    farm = [{"k": k, "farm": farm4 if k == 4 else 0.5} for k in (1, 2, 3, 4)]
    (run / "faithfulness.json").write_text(json.dumps({"questions": 3, "farm": farm}))
    return run


@pytest.mark.parametrize("value", [-3.5, 7, 1e308, True, "0.75", None, [0.5], {"v": 0.5}])
def test_collect_refuses_a_farm_value_that_is_not_a_ratio(tmp_path, value):
    run = finished_run(tmp_path, value)
    out = tmp_path / "out"
    status, _, err = run_cli(["collect", str(tmp_path / "runs"), "--output-dir", str(out), "--farm", "--quiet"])
    assert_refused(status, err, str(run / "faithfulness.json"))
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("value", [["dev.json"], 3])
def test_a_predict_file_of_the_wrong_type_is_named(tmp_path, value):
    run = finished_run(tmp_path, 0.5)
    info = json.loads((run / "run_info.json").read_text())
    (run / "run_info.json").write_text(json.dumps({**info, "predict_file": value}))
    status, _, err = run_cli(["collect", str(tmp_path / "runs"), "--output-dir", str(tmp_path / "o"), "--quiet"])
    assert status == 2 and "Traceback" not in err
    assert "predict_file must be a path or a subset name" in err


@pytest.mark.parametrize("name, outside", [("a/b/../x.json", False), ("a/./x.json", False), ("a/../../x.json", True),
                                           ("../x.json", True), ("x/../y/../../z", True)])
def test_a_zip_entry_is_outside_only_when_it_climbs_out(name, outside):
    from pathlib import PurePosixPath

    from expmrc.data.download import _climbs_out

    assert _climbs_out(PurePosixPath(name).parts) is outside


def test_a_zip_entry_through_dot_dot_inside_is_not_called_outside(tmp_path):
    import zipfile

    archive = tmp_path / "dev.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("a/b/../expmrc-squad-dev.json", json.dumps(SPAN_DATA))
    status, _, err = run_cli(["download", "--subsets", "squad", "--from", str(archive), "--dest", str(tmp_path / "d")])
    assert status in (0, 2) and "outside" not in err and "Traceback" not in err


def test_coupling_constants_without_the_coupling_loss_are_warned_about(capsys):
    from expmrc.training.flags import build_parser, parse_config

    argv = ["--do_predict", "True", "--predict_file", "x", "--output_dir", "o", "--coupling_c1", "9"]
    parse_config("span", build_parser("span"), argv)
    assert "warning: --coupling_c1 given without --coupling_loss True" in capsys.readouterr().err
    parse_config("span", build_parser("span"), [*argv, "--coupling_loss", "True"])
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["file", "dir"])
def test_a_dangling_symlink_output_says_so(tmp_path, kind):
    from expmrc.data.io import check_output_path

    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(ExpmrcError, match="is a broken symbolic link"):
        check_output_path(str(link), kind)


@pytest.mark.parametrize("command", ["evaluate", "human", "evidence", "compare", "report", "ground"])
def test_a_subset_typo_lists_the_four_subsets(tmp_path, command):
    preds = write(tmp_path / "p.json", SPAN_PREDS)
    argv = {"evaluate": ["sqad", preds], "human": ["sqad"], "evidence": ["sqad", "--method", "best", "--output",
            str(tmp_path / "o.json")], "compare": ["sqad", preds, write(tmp_path / "q.json", SPAN_PREDS)], "report": ["sqad", preds, "--output",
            str(tmp_path / "r.html")], "ground": ["sqad", preds, "--output", str(tmp_path / "g.json")]}[command]
    status, _, err = run_cli([command, *argv])
    assert_refused(status, err, "sqad: unknown subset, and no such dataset file; the subsets are squad, cmrc2018, race, c3")


def test_a_training_set_giving_no_window_names_the_file(tmp_path, capsys):
    from expmrc.training.span_task import run_span
    from helpers.tiny_bert import make_tiny_bert_folder

    data = {**json.loads(json.dumps(SPAN_DATA)), "version": "expmrc-squad-train"}  # a copy: SPAN_DATA is shared
    for qa in data["data"][0]["paragraphs"][0]["qas"]:  # every answer elsewhere than its offset says
        qa["answers"] = [{"text": "Atlantis", "answer_start": 0}]
    train = write(tmp_path / "train.json", data)
    flags = ["--model_name_or_path", str(make_tiny_bert_folder(tmp_path / "bert")), "--do_train", "True",
             "--train_file", train, "--output_dir", str(tmp_path / "run"), "--max_seq_length", "64"]
    status = run_guarded(run_span, flags)
    assert_refused(status, capsys.readouterr().err, f"{train}: no training features: none of its 3 questions gave a window to train on")


@pytest.mark.parametrize("spelling", ["--max-k", "--max_k"])
def test_kebab_flags_with_the_old_spelling_hidden(spelling):
    from expmrc.cli import faithfulness
    from expmrc.cli.__init__ import OneLineParser

    parser = OneLineParser(prog="expmrc faithfulness")
    faithfulness.add_arguments(parser)
    assert parser.parse_args(["run", "squad", spelling, "2"]).max_k == 2
    assert parser.parse_args(["run", "squad"]).max_k == 4
    shown = parser.format_help()
    assert "--max-k" in shown and "--max_k" not in shown and "--batch_size" not in shown


@pytest.mark.parametrize("breaker", ["\x1e", "\x0c", "\u2028", "\x85"])
def test_an_id_holding_a_line_break_of_any_kind_stays_on_the_error_line(tmp_path, breaker):
    """Python's splitlines (and many terminals and log readers) break lines at more than \\n: an id holding one is
    shown escaped, so the refusal is still exactly one line."""
    dataset = write(tmp_path / "dev.json", SPAN_DATA)
    preds = write(tmp_path / "p.json", {f"a{breaker}b": {"answer": "x", "evidence": "y"}})
    status, _, err = run_cli(["evaluate", dataset, preds])
    assert_refused(status, err, "none of its 1 prediction ids")
    assert len(err.splitlines()) == 1 and breaker not in err
