"""Throughput of `expmrc llm`'s request path, of grounding and of reply parsing.

    python benchmarks/bench_llm.py [--requests 24] [--latency 0.1] [--no-serve] [--parse-only] [--against REF]

1. Requests/s at concurrency 1, 4 and 16 (ratio to 1, measured in the same run) against two servers on
   127.0.0.1: `transformers serve` with a tiny random chat model (generation-bound, one CPU process) and
   a scripted server that waits --latency seconds per request, as a remote API does. Every request is
   distinct and the cache is off, so each one is really sent.
2. The cost of a cache hit: the same requests answered from the SQLite cache, per request.
3. Grounding throughput (quotes/s) on the four dev sets ($EXPMRC_DATA): every question's first gold
   evidence dressed as a model quotes it (doubled spaces, full-/half-width punctuation swapped, a framing
   sentence), grounded with `expmrc.text.grounding.ground_submission`.
4. Reply parsing (`expmrc.llm.parsing.parse_reply`, CPU seconds): hostile replies of 0.25, 0.5 and 1 MB
   in many shapes, with the ratio of the 1 MB time to the 0.25 MB time measured in the same run (4 means
   linear, 16 quadratic); a reply nested 50,000 deep, XML-style tags left open 100,000 deep and a table of
   100,000 rows; the realistic replies of the test corpus (tests/helpers/reply_corpus*.py), per reply; and
   how many of the corpus's answers and quotes are read as the replies state them, per corpus (tuned,
   held-out, held-out shapes), language and task. With --against REF (a git commit or branch) the parser
   of REF (its parsing.py, jsonscan.py and markup.py, read with `git show`) is timed and scored on the same
   replies in the same run, beside the working tree's.
"""

from __future__ import annotations

import argparse
import importlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from helpers.fake_openai import FakeChatServer
from helpers.tiny_chat import make_tiny_chat_model

from expmrc.data import subsets
from expmrc.data.datasets import load_dataset, passage_of
from expmrc.llm.backends import OpenAIBackend
from expmrc.llm.cache import ResponseCache
from expmrc.llm.fetch import fetch
from expmrc.llm import parsing
from expmrc.text.grounding import ground_submission


def requests_for(model: str, count: int, max_tokens: int) -> dict[str, dict]:
    """`count` distinct chat requests (never a cache hit for one another)."""
    return {f"q{n}": {"model": model, "max_tokens": max_tokens, "temperature": 0.0, "top_p": 1.0, "seed": 0,
                      "messages": [{"role": "user", "content": f"question {n}: what is the answer ?"}]}
            for n in range(count)}


def rate(url: str, model: str, count: int, concurrency: int, max_tokens: int) -> float:
    backend = OpenAIBackend(url, "none", retries=0)
    started = time.perf_counter()
    fetch(requests_for(model, count, max_tokens), backend, None, concurrency, progress=False)
    return count / (time.perf_counter() - started)


def concurrency_table(name: str, url: str, model: str, count: int, max_tokens: int) -> None:
    rate(url, model, 2, 1, max_tokens)  # warm-up: the model is loaded, the connection pool made
    rates = {c: rate(url, model, count, c, max_tokens) for c in (1, 4, 16)}
    cells = "  ".join(f"c={c}: {r:7.2f} req/s (x{r / rates[1]:.2f})" for c, r in rates.items())
    print(f"{name:<34} {cells}")


def start_serve(model: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [str(Path(sys.executable).parent / "transformers"), "serve", model, "--host", "127.0.0.1",
               "--port", str(port), "--device", "cpu"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return process, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("transformers serve did not start")


def cache_hit_cost(count: int) -> None:
    with tempfile.TemporaryDirectory() as folder, FakeChatServer(lambda body: '{"answer": "A"}') as server:
        cache = ResponseCache(Path(folder) / "cache.sqlite")
        backend = OpenAIBackend(server.url, "none", retries=0)
        requests = requests_for("fake-model", count, 16)
        fetch(requests, backend, cache, 4, progress=False)
        started = time.perf_counter()
        fetched = fetch(requests, backend, cache, 4, progress=False)
        seconds = time.perf_counter() - started
        assert len(fetched.cached) == count and len(server.requests) == count
        print(f"cache hit: {1e6 * seconds / count:.0f} µs per request ({count} requests, key hash + SQLite read)")


def dressed(evidence: str) -> str:
    """A gold evidence as a chat model tends to quote it."""
    text = evidence.replace(" ", "  ").replace("，", ",").replace("。", ".").replace(",", "，", 1)
    return f'The passage says: "{text}"'


def grounding_rates() -> None:
    if not os.environ.get("EXPMRC_DATA"):
        print("grounding: skipped (set EXPMRC_DATA)")
        return
    for subset in subsets.names():
        dataset = load_dataset(subset)
        submission = {}
        for q in dataset.questions:
            evidence = next((e for e in q.evidences or [] if isinstance(e, str) and e.strip()), passage_of(q)[:50])
            answer = q.answers[0] if hasattr(q, "answers") and q.answers else "A"
            submission[q.qid] = {"answer": answer, "evidence": dressed(evidence)}
        started = time.perf_counter()
        result = ground_submission(dataset, submission)
        seconds = time.perf_counter() - started
        counts = ", ".join(f"{k} {v}" for k, v in result.counts.items())
        print(f"grounding {subset:<9} {len(submission):5d} quotes in {seconds:6.2f} s = "
              f"{len(submission) / seconds:7.0f} quotes/s  ({counts})")


OPTIONS = ["Three pears", "Three apples and bread", "Only bread", "Nothing"]
HOSTILE = {  # name: (unit repeated to the size, multiple choice?)
    "open braces": ("{", False),
    "open brackets in an object": ("[", False),
    "open quoted keys": ('{"', False),
    "prose with answer sentences": ("The answer is B. ", True),
    "answer lines": ("Answer: B\n", True),
    "answer headings": ("Answer:\n", True),
    "evidence lines": ("Evidence: It began to rain.\n", False),
    "label lines": ("A\n", True),
    "JSON objects": ('{"answer": "B"}', True),
    "broken JSON objects": ("{'answer': 'B',}", True),
    "stray closers": ("]}", False),
    "LaTeX boxes left open": ("\\boxed{", True),
    "think tags left open": ("<think>", False),
    "Chinese statements": ("答案是", True),
    "选 without a letter": ("选", True),
    "quote marks": ('"', False),
}


HOSTILE.update({  # the markup read since issue 30
    "XML tags left open": ("<answer>", True),
    "mismatched XML tags": ("<answer>B</evidence>", True),
    "think left open, answers in it": ("<think>Answer: B ", True),
    "table rows": ("| Answer | B |\n", True),
    "table rows under a header": ("| Answer | Evidence |\n| B | x |\n", True),
    "evidence list items": ("Evidence:\n1. x\n\n", False),
    "nested Chinese quotes": ("原文“", False),
    "notes in parentheses": ("答案：B（原文：", True),
})


def reference_parser(ref: str) -> Callable[..., Any]:
    """`parse_reply` as it stands at git REF: its parsing.py, jsonscan.py and markup.py (where REF has one)
    read with `git show`, imported under other names so both parsers live in this process."""
    folder = Path(tempfile.mkdtemp(prefix="bench-parse-ref-"))
    for name in ("parsing", "jsonscan", "markup"):
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:expmrc/llm/{name}.py"], capture_output=True,
                               text=True, check=False)
        if shown.returncode == 0:
            source = shown.stdout.replace("expmrc.llm.jsonscan", "ref_jsonscan").replace("expmrc.llm.markup", "ref_markup")
            (folder / f"ref_{name}.py").write_text(source, encoding="utf-8")
        elif name == "parsing":
            raise SystemExit(f"git show {ref}:expmrc/llm/parsing.py failed: {shown.stderr.strip()}")
    sys.path.insert(0, str(folder))
    return importlib.import_module("ref_parsing").parse_reply


def cpu_seconds(parse: Callable[..., Any], reply: str, options: list[str] | None) -> float:
    started = time.process_time()
    parse(reply, options)
    return time.process_time() - started


def parsing_costs(parsers: dict[str, Callable[..., Any]]) -> None:
    sizes = (250_000, 500_000, 1_000_000)
    for name, (unit, choice) in HOSTILE.items():
        prefix = '{"a": ' if unit == "[" else ""
        for label, parse in parsers.items():
            times = [cpu_seconds(parse, prefix + unit * (size // len(unit)), OPTIONS if choice else None)
                     for size in sizes]
            cells = "  ".join(f"{size / 1e6:.2f} MB {t:6.2f} s" for size, t in zip(sizes, times, strict=True))
            print(f"parse {name:<32} {label:<8} {cells}   1 MB / 0.25 MB: x{times[-1] / max(times[0], 1e-9):.1f}")
    deep = "{" * 50_000 + '"answer": "B"' + "}" * 50_000
    shapes = {"JSON nested 50,000 deep": deep, "XML tags left open 100,000 deep": "<answer><evidence>" * 50_000,
              "table of 100,000 rows": "| Answer | Evidence |\n|---|---|\n" + "| B | It began to rain. |\n" * 100_000}
    for name, reply in shapes.items():
        for label, parse in parsers.items():
            read = parse(reply, OPTIONS)
            print(f"parse {name:<32} {label:<8} {cpu_seconds(parse, reply, OPTIONS):6.2f} s (answer {read.answer!r}; "
                  f"{read.note or 'no note'})")
    for label, parse in parsers.items():
        corpus = [case for _, found in corpora() for case in found]
        started = time.process_time()
        for _ in range(10):
            for case in corpus:
                parse(case.reply, list(case.item.options) or None)
        per_reply = (time.process_time() - started) / (10 * len(corpus))
        print(f"parse realistic replies ({len(corpus)} styles) {label:<8} {1e6 * per_reply:.0f} µs per reply")


def corpora() -> list[tuple[str, list[Any]]]:
    from helpers.reply_corpus import STYLES, cases
    from helpers.reply_corpus_heldout import HELD_OUT
    from helpers.reply_corpus_heldout_shapes import HELD_OUT_SHAPES

    return [("tuned", cases(STYLES)), ("held-out", cases(HELD_OUT)), ("held-out shapes", cases(HELD_OUT_SHAPES))]


def corpus_rates(parsers: dict[str, Callable[..., Any]]) -> None:
    """Answers and quotes read as the corpus's replies state them, per corpus, language and task (the
    HTTP test tests/llm/test_reply_corpus.py checks the same through `expmrc llm`)."""
    from helpers.reply_corpus import same_quote

    for label, parse in parsers.items():
        for corpus, found in corpora():
            counts: dict[str, list[int]] = {}
            for case in found:
                read = parse(case.reply, list(case.item.options) or None)
                row = counts.setdefault(case.kind, [0, 0, 0, 0])
                row[0] += read.answer == case.answer
                row[1] += 1
                if case.evidence is not None:
                    row[2] += same_quote(read.evidence, case.evidence)
                    row[3] += 1
            total = [sum(row[i] for row in counts.values()) for i in range(4)]
            cells = "  ".join(f"{kind} {r[0]}/{r[1]} {r[2]}/{r[3]}" for kind, r in sorted(counts.items()))
            print(f"read {corpus:<16} {label:<8} answers {total[0]}/{total[1]} = {total[0] / total[1]:6.1%}  quotes "
                  f"{total[2]}/{total[3]} = {total[2] / total[3]:6.1%}   ({cells}: answers, quotes)")


def main() -> None:
    from expmrc.errors import OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=24, help="requests per concurrency level")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the scripted server waits per request")
    parser.add_argument("--max-tokens", type=int, default=16, help="reply length asked of the tiny model")
    parser.add_argument("--no-serve", action="store_true", help="leave out transformers serve")
    parser.add_argument("--parse-only", action="store_true", help="measure reply parsing only")
    parser.add_argument("--against", metavar="REF", help="also time and score the parser of this git commit or branch")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    parsers: dict[str, Callable[..., Any]] = {"now": parsing.parse_reply}
    if args.against:
        parsers[args.against[:8]] = reference_parser(args.against)
    if args.parse_only:
        corpus_rates(parsers)
        parsing_costs(parsers)
        return
    if not args.no_serve:
        with tempfile.TemporaryDirectory() as folder:
            model = str(make_tiny_chat_model(Path(folder) / "tiny"))
            process, url = start_serve(model)
            try:
                concurrency_table("transformers serve, tiny model", url, model, args.requests, args.max_tokens)
            finally:
                process.terminate()
                process.wait()
    with FakeChatServer(lambda body: '{"answer": "A", "evidence": "x"}', delay=args.latency) as server:
        concurrency_table(f"scripted server, {args.latency:g} s latency", server.url, "fake-model", args.requests,
                          args.max_tokens)
    cache_hit_cost(200)
    grounding_rates()
    corpus_rates(parsers)
    parsing_costs(parsers)


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
