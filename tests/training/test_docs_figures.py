"""The smoke run docs/training.md shows gives the figures it prints (within a point: the float path of another
CPU may move a 20-step tiny model a little, while a stale figure is off by more)."""

import re
import subprocess
import sys

import pytest
from helpers.common import ROOT, dev_set, environment, needs_punkt

pytestmark = [needs_punkt, pytest.mark.slow, pytest.mark.data]
FIGURES = re.compile(r"answer F1 ([\d.]+), evidence F1 ([\d.]+), overall ([\d.]+) \(501 questions\)")


def test_the_tiny_tf_smoke_run_gives_the_documented_figures(tmp_path):
    doc = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    block = doc[doc.index("python baseline/run_se_mrc.py --vocab_file=tests/fixtures/tiny_tf_bert/vocab.txt"):]
    assert "--allow_unknown_tokens=True" in block.split("```")[0]  # the toy vocabulary leaves 69% unknown
    documented = [float(x) for x in FIGURES.search(block).groups()]
    squad = dev_set("squad")
    fixture = ROOT / "tests" / "fixtures" / "tiny_tf_bert"
    out = subprocess.run(
        [sys.executable, str(ROOT / "baseline" / "run_se_mrc.py"), f"--vocab_file={fixture / 'vocab.txt'}",
         f"--bert_config_file={fixture / 'bert_config.json'}", f"--init_checkpoint={fixture / 'bert_model.ckpt'}",
         "--do_lower_case=True", "--do_train=True", f"--train_file={squad}", "--do_predict=True",
         f"--predict_file={squad}", "--max_seq_length=64", "--doc_stride=32", "--max_query_length=16",
         "--train_batch_size=8", "--max_steps=20", "--save_checkpoints_steps=10", f"--output_dir={tmp_path / 'run'}",
         "--allow_unknown_tokens=True"],
        check=False, capture_output=True, text=True, env=environment(), timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    measured = [float(x) for x in FIGURES.findall(out.stderr)[-1]]
    assert all(abs(a - b) <= 1.0 for a, b in zip(measured, documented)), (measured, documented)
