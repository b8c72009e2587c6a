"""The package as users get it: `python -m build` (offline, without isolation) makes a wheel and an sdist
holding the templates, the lm-eval task files, the samples and NLTK's English Punkt tables; the wheel, installed
offline into a fresh venv that sees only the core dependencies (no torch, no transformers), scores the packaged
samples without NLTK_DATA with the same figures as this checkout, and answers `--version` and `python -m expmrc`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from helpers.common import ROOT, needs_punkt
from packaging.requirements import Requirement

from expmrc import __version__
from expmrc.data.datasets import load_dataset
from expmrc.scoring.scorer import score_files

pytestmark = needs_punkt
SAMPLES = [("expmrc-squad-sample.json", "squad-sample-predictions.json"),
           ("expmrc-c3-sample.json", "c3-sample-predictions.json")]
PACKAGE_DATA = ["expmrc/reports/templates/report.html.j2", "expmrc/llm/lm_eval_tasks/expmrc.yaml",
                "expmrc/llm/lm_eval_tasks/_expmrc_template_yaml", "expmrc/samples/expmrc-squad-sample.json",
                "expmrc/__main__.py", "expmrc/metrics/nltk_data/tokenizers/punkt_tab/english/ortho_context.tab",
                "expmrc/metrics/nltk_data/LICENSE.txt", "expmrc/metrics/nltk_data/NOTICE.md"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The wheel and sdist, built from a copy of the sources (so the checkout gets no build folders)."""
    root = tmp_path_factory.mktemp("build")
    source = root / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "expmrc", source / "expmrc", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PIP_NO_INDEX="1")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(root / "dist"),
                           str(source)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return root / "dist"


def core_requirements(wheel: Path) -> list[Requirement]:
    """The wheel's Requires-Dist that hold without any extra."""
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"expmrc-{__version__}.dist-info/METADATA").decode("utf-8")
    requirements = [Requirement(line.split(":", 1)[1].strip()) for line in text.splitlines()
                    if line.startswith("Requires-Dist:")]
    return [r for r in requirements if r.marker is None or r.marker.evaluate({"extra": ""})]


def closure(requirements: list[Requirement]) -> list[metadata.Distribution]:
    """The installed distributions these requirements pull in, transitively (extras not taken)."""
    found: dict[str, metadata.Distribution] = {}
    pending = list(requirements)
    while pending:
        requirement = pending.pop()
        name = requirement.name.lower().replace("_", "-")
        if name in found or (requirement.marker is not None and not requirement.marker.evaluate({"extra": ""})):
            continue
        found[name] = metadata.distribution(requirement.name)
        pending += [Requirement(r) for r in found[name].requires or []]
    return list(found.values())


def expose(distributions: list[metadata.Distribution], folder: Path) -> None:
    """Symbolic links in `folder` to the top-level files and folders (metadata included) of each distribution."""
    folder.mkdir()
    for distribution in distributions:
        site = Path(str(distribution.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in distribution.files or [] if not str(f).startswith("..")}
        for top in tops:
            if (site / top).exists() and not (folder / top).exists():
                (folder / top).symlink_to(site / top)


@pytest.fixture(scope="module")
def venv(built, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed offline; it sees the core dependencies of this environment only."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    wheel = next(built.glob("*.whl"))
    expose(closure(core_requirements(wheel)), root / "deps")
    Path(site, "core-dependencies.pth").write_text(str(root / "deps") + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index",
                    "--no-deps", str(wheel)], check=True, timeout=300, env=isolated(root))
    return root / "venv" / "bin"


def isolated(tmp_path: Path) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH leading back to this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EXPMRC_DATA")}
    return dict(env, PIP_NO_INDEX="1", HOME=str(tmp_path))


def test_wheel_and_sdist_hold_the_package_data(built):
    wheel, sdist = next(built.glob("*.whl")), next(built.glob("*.tar.gz"))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    with tarfile.open(sdist) as archive:
        sdist_names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for name in PACKAGE_DATA:
        assert name in names and name in sdist_names, name


def test_the_core_leaves_out_the_extras(built):
    names = {r.name for r in core_requirements(next(built.glob("*.whl")))}
    assert names.isdisjoint({"torch", "transformers", "accelerate", "openai", "datasets", "pyarrow", "lm-eval"})


def test_the_installed_wheel_scores_the_samples_as_this_checkout(venv, tmp_path):
    samples = subprocess.run([str(venv / "python"), "-c", "import importlib.resources as r; print(r.files('expmrc') / 'samples')"],
                             capture_output=True, text=True, check=True, cwd=tmp_path, env=isolated(tmp_path)).stdout.strip()
    assert str(venv.parent) in samples  # the installed copy, not this checkout
    argv = [str(venv / "expmrc"), "evaluate"]
    for dataset, predictions in SAMPLES:
        argv += [f"{samples}/{dataset}", f"{samples}/{predictions}"]
    no_nltk_data = {k: v for k, v in isolated(tmp_path).items() if k != "NLTK_DATA"}  # the shipped Punkt tables
    done = subprocess.run(argv + ["--json"], capture_output=True, text=True, cwd=tmp_path, env=no_nltk_data,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    installed = json.loads(done.stdout)["results"]
    for result, (dataset, predictions) in zip(installed, SAMPLES):
        here = score_files(load_dataset(str(ROOT / "expmrc" / "samples" / dataset)),
                           str(ROOT / "expmrc" / "samples" / predictions)).summary()
        assert [result[k] for k in ("ALL_F1", "ANS_F1", "EVI_F1", "TOTAL")] == \
            [here[k] for k in ("ALL_F1", "ANS_F1", "EVI_F1", "TOTAL")]
        assert 0 < result["ALL_F1"] < 100


def test_version_python_m_and_no_torch_in_the_venv(venv, tmp_path):
    env = isolated(tmp_path)
    version = subprocess.run([str(venv / "expmrc"), "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert version.stdout.strip() == f"expmrc {__version__}"
    path = subprocess.run([str(venv / "python"), "-m", "expmrc", "lm-eval-path"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, check=True).stdout.strip()
    assert Path(path, "expmrc.yaml").is_file() and str(venv.parent) in path
    torch = subprocess.run([str(venv / "python"), "-c", "import torch"], capture_output=True, env=env, cwd=tmp_path)
    assert torch.returncode != 0


def test_a_command_needing_an_extra_says_which(venv, tmp_path):
    env = isolated(tmp_path)
    done = subprocess.run([str(venv / "expmrc"), "export", "squad", "--output", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "pip install 'expmrc[export]'" in done.stderr


RACE = {"version": "expmrc-race-dev", "data": [
    {"id": "r1", "article": "Tom walked to the old library on Monday. He borrowed two books about birds. Then he went "
                            "home and read until dinner.",
     "questions": ["What did Tom borrow?"], "options": [["two books", "a bike", "a map", "some food"]],
     "answers": ["A"], "evidences": [["He borrowed two books about birds."]]}]}


@pytest.mark.parametrize("script", ["run_se_mrc.py", "run_mc_mrc.py"])
def test_a_baseline_script_in_a_core_install_says_which_extra_in_one_line(venv, tmp_path, script):
    done = subprocess.run([str(venv / "python"), str(ROOT / "baseline" / script), "--help"], capture_output=True,
                          text=True, env=isolated(tmp_path), cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and done.stdout == "", done.stderr
    assert done.stderr.startswith("error: ") and "pip install 'expmrc[train]'" in done.stderr


def test_an_evidence_method_needing_an_extra_says_so_before_announcing_any_work(venv, tmp_path):
    dataset, output = tmp_path / "race.json", tmp_path / "race-best.json"
    dataset.write_text(json.dumps(RACE), encoding="utf-8")
    done = subprocess.run([str(venv / "expmrc"), "evidence", "--method", "idf-window", str(dataset), "--output",
                           str(output)], capture_output=True, text=True, env=isolated(tmp_path), cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr  # no "answers: ..." line first
    assert "pip install 'expmrc[train]'" in done.stderr and not output.exists()


def readme_commands() -> list[list[str]]:
    """Every `expmrc ...`, `python eval_expmrc.py ...` and `python baseline/...` line of the README's shell blocks."""
    import re
    import shlex

    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    commands = []
    for line in re.sub(r"\\\n\s*", " ", "".join(blocks)).splitlines():
        words = shlex.split(line, comments=True)
        if words and (words[0] == "expmrc" or (words[0] == "python" and words[1].endswith(".py"))):
            commands.append(words)
    return commands


@pytest.mark.slow
def test_a_core_install_runs_every_command_the_readme_lists_without_a_traceback(venv, tmp_path):
    """Each command the README shows, in a core install (no extra), on small dev sets in $EXPMRC_DATA and data/, the
    network out of reach: it runs, or says in one line what is missing (the extra to install, the file to give).
    The local chat judge, which the README does not show, too."""
    from helpers.llm_data import DATASETS

    for subset, doc in DATASETS.items():
        (tmp_path / "data" / subset).mkdir(parents=True)
        (tmp_path / "data" / subset / f"expmrc-{subset}-dev.json").write_text(json.dumps(doc), encoding="utf-8")
    for name in ("sample_submission", "baseline", "tests", "eval_expmrc.py"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "preds.json").write_text(json.dumps({"sq-1": {"answer": "near Rotterdam", "evidence": "x"},
                                                     "sq-2": {"answer": "the Swiss Alps", "evidence": "y"}}))
    judge = ["expmrc", "judge", "squad", "preds.json", "--judge", "chat", "--backend", "transformers", "--judge-model",
             "Qwen/Qwen2.5-0.5B-Instruct"]
    env = {**isolated(tmp_path), "EXPMRC_DATA": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1",
           "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9", "no_proxy": ""}
    commands = readme_commands()
    assert len(commands) >= 15 and any("--backend" in c for c in commands)
    needing_train = []
    for words in [*commands, judge]:
        argv = [str(venv / words[0]) if words[0] == "expmrc" else str(venv / "python"), *words[1:]]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        lines = done.stderr.splitlines()
        assert "Traceback" not in done.stderr, f"{shlex_join(words)}:\n{done.stderr[-2000:]}"
        assert done.returncode == 0 or (done.returncode == 2 and lines and lines[-1].startswith("error: ")
                                        and sum(line.startswith("error: ") for line in lines) == 1), \
            f"{shlex_join(words)}: exit {done.returncode}\n{done.stderr[-2000:]}"
        if "--backend" in words:
            needing_train.append(lines[-1])
    assert needing_train and all("pip install 'expmrc[train]'" in line for line in needing_train), needing_train


def shlex_join(words: list[str]) -> str:
    import shlex

    return shlex.join(words)
