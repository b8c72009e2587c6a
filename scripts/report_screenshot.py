"""Make the README's screenshot of an `expmrc report` page: the real page, in headless Chromium.

    python scripts/report_screenshot.py [--output docs/img/report.png]

Needs $EXPMRC_DATA and Chromium. The page compares SQuAD's sample submission
(most-similar-question evidence, A) with answer-sentence evidence made on the spot by `expmrc evidence`
(B); the script sorts the questions by B − A evidence through the page's own header button, opens the
first one and photographs the question list. The PNG is reduced to 64 colours to keep the checkout small.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the headless-browser driver lives with the tests

from expmrc.cli import run_guarded  # noqa: E402
from expmrc.data.datasets import resolve_dataset_path  # noqa: E402
from expmrc.data.io import atomic_file, check_output_path  # noqa: E402
from expmrc.errors import ExpmrcError, OneLineParser  # noqa: E402
from expmrc.reports.html import build_report  # noqa: E402
from expmrc.reports.pages import write_page  # noqa: E402
from helpers.browser import Browser  # noqa: E402


def pixels(text: str) -> int:
    """A window side in pixels: a whole number from 200 to 8000."""
    if not text.isdigit() or not 200 <= int(text) <= 8000:
        raise argparse.ArgumentTypeError(f"must be a whole number of pixels from 200 to 8000, got {text!r}")
    return int(text)


def refuse(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    sys.exit(2)


def main() -> None:
    parser = OneLineParser(prog="report_screenshot.py", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default=str(ROOT / "docs" / "img" / "report.png"))
    parser.add_argument("--width", type=pixels, default=1200)
    parser.add_argument("--height", type=pixels, default=820)
    args = parser.parse_args()
    check_output_path(args.output, "file")  # before the browser starts: one line where it cannot be written
    resolve_dataset_path("squad")  # SQuAD's dev set likewise
    with tempfile.TemporaryDirectory() as tmp:
        other = str(Path(tmp) / "squad-answer-sentence.json")
        made = subprocess.run([sys.executable, "-m", "expmrc.cli", "evidence", "--method", "answer-sentence", "squad",
                               "--output", other], cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        if made.returncode:  # its own one line (no $EXPMRC_DATA, no Punkt, ...)
            refuse((made.stderr.strip().splitlines() or [f"error: expmrc evidence failed (exit {made.returncode})"])[-1])
        html, _ = build_report("squad", [str(ROOT / "sample_submission" / "squad.json"), other],
                               names=["most-similar-question", "answer-sentence"])
        page = str(Path(tmp) / "report.html")
        write_page(page, html)
        with Browser(width=args.width, height=args.height) as browser:
            browser.open(page)
            browser.wait_for("document.documentElement.dataset.ready === 'true'")
            browser.click('button.sort[data-key="B-A:evidence"]')
            browser.click('button.sort[data-key="B-A:evidence"]')  # descending: B's biggest gains first
            browser.click("#question-table tr.qrow button.open")
            browser.evaluate("window.scrollTo(0, document.getElementById('questions').offsetTop - 8)")
            shot = str(Path(tmp) / "shot.png")
            browser.screenshot(shot)
            if browser.errors:
                sys.exit(f"the page reported errors: {browser.errors}")
        try:
            with atomic_file(args.output) as png:
                Image.open(shot).convert("RGB").quantize(colors=64).save(png, format="PNG", optimize=True)
        except (OSError, ValueError, ExpmrcError) as exc:
            refuse(f"error: {args.output}: cannot write the screenshot ({exc})")
    print(f"wrote {args.output} ({Path(args.output).stat().st_size:,d} bytes)")


if __name__ == "__main__":
    sys.exit(run_guarded(lambda _: main(), None))  # bad input one line, exit 2; Ctrl-C 130
