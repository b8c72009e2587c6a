"""`expmrc llm`: run a chat model on an ExpMRC subset and score it, raw and grounded."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time

from expmrc.cli.args import integer_in, number_in
from expmrc.cli.judge_flags import add_judge_arguments
from expmrc.data import subsets
from expmrc.llm.backends import BACKENDS
from expmrc.llm.forms import DEFAULT_FORM, FORMS
from expmrc.llm.config import LLMConfig
from expmrc.llm.prompts import TEMPLATES

DESCRIPTION = """\
Ask a chat model every question of a subset (a subset name or a dataset file) for the answer and a
verbatim evidence quote as JSON, parse its replies, tie the quotes to the passage (grounding) and
score the result raw and grounded. The model is reached through any OpenAI-compatible endpoint
(--base-url: vLLM, SGLang, llama.cpp, Ollama, `transformers serve`, an API; the key is read from the
environment variable --api-key-env names, never from a flag), or loaded locally with --backend
transformers. Replies are cached on disk (SQLite) as they arrive, keyed by the server (or the local
weights) and the request as sent, so a rerun, or a run resumed after a kill or Ctrl-C, pays for no
request twice. Ctrl-C sends no new request, waits for those in flight (at most --timeout), and prints
how many replies are cached and the command that resumes (exit 130).

RUN_DIR receives predictions.json (a complete submission the official scorer reads: letters for
multiple choice, empty where a reply could not be parsed), grounded.json (evidence and span answers
replaced by the passage text they were located at), responses.jsonl (per question: messages, raw
reply and reasoning, parsed fields and parse status, grounding, tokens, latency, finish reason, whether
it came from the cache), run_info.json (model, backend, URL without secrets, the server's own model id
and system_fingerprint, template and its hash, system prompt, shots, sampling, versions, tokens, cost)
and scores.json; with --limit also dataset.json, exactly the questions asked, for eval_expmrc.py.

--judge nli|chat --judge-model NAME asks, after grounding, whether each grounded evidence supports its
answer (as `expmrc judge` does, with the check of the judge): scores.json gets the support rate,
responses.jsonl each question's label, run_info.json the judge's signature. The same judge splits the
reworded and altered evidence by entailment against the passage text it covers (as `expmrc ground
--judge` does): paraphrase, unsupported, contradicted, in scores.json and run_info.json (`entailment`)
and each question's grounding in responses.jsonl.

--samples N (with --temperature above 0) asks N replies per question and keeps the majority answer,
with the evidence of its best-grounded reply; the agreement rate goes in the record (self-consistency).

--evidence-form ids asks for the evidence by sentence number instead of as a quote: the prompt shows
the passage one numbered sentence a line (the project's sentence splitter, both languages), the model
cites them ([3], [3][4], S3, 第3句, ...), and the evidence is the cited sentences' exact passage text
(grounding status exact); a number that names no sentence makes it unverified, no citation missing.
It picks the -ids- template of the subset's task and language; run_info.json records the form.

Few-shot examples (--shots K) are drawn with --seed from --shots-file, a labelled file such as the
output of `expmrc pseudo` on training data. Examples from the dev set being scored are refused unless
--allow-dev-shots; such a run is then marked as using the dev set in its record and in every table.

prompt templates (--template; default: the newest for the subset's task, language and evidence form):
{templates}

examples:
  expmrc llm squad --model Qwen/Qwen2.5-7B-Instruct --base-url http://localhost:8000/v1 --output runs/llm-squad
  expmrc llm c3 --model gpt-4o-mini --shots 3 --shots-file data/c3/train-pseudo-c3.json --price 0.15,0.6 --output runs/c3-gpt
  expmrc llm race --backend transformers --model models/qwen2.5-0.5b-instruct --limit 100 --output runs/race-small
  expmrc llm cmrc2018 --model qwen2.5:7b --base-url http://localhost:11434/v1 --samples 5 --temperature 0.7 --output runs/sc5
  expmrc llm squad --evidence-form ids --model gpt-4o-mini --output runs/squad-ids      # evidence cited by sentence number
  expmrc llm squad --model gpt-4o-mini --export-batch squad-batch.jsonl          # then, with the provider's output:
  expmrc llm squad --model gpt-4o-mini --import-batch squad-batch-out.jsonl --output runs/squad-batch
""".format(templates="\n".join(f"  {t.name:<22}{t.task} questions in {t.language}, evidence "
                                         f"{FORMS[t.evidence_form].phrase}"
                                         f"{', reasoning first' if t.reasoning else ''}" for t in TEMPLATES.values()))


def price(text: str) -> tuple[float, float]:
    """`IN,OUT`: US dollars per million prompt and completion tokens."""
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected IN,OUT (dollars per million tokens), got {text!r}")
    parse = number_in(0.0, 1e6)
    return parse(parts[0]), parse(parts[1])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags, whose defaults are `LLMConfig`'s (one set of defaults, as the training flags read `TrainConfig`'s)."""
    config = LLMConfig(subset="", model="")
    parser.add_argument("subset", metavar="SUBSET", help=f"{', '.join(subsets.names())} (the dev set) or a dataset file")
    parser.add_argument("--model", required=True, help="model name at the endpoint, or a local folder (--backend transformers)")
    parser.add_argument("--output", metavar="RUN_DIR", help="the run folder to write (required unless --export-batch)")
    parser.add_argument("--overwrite", action="store_true", help="replace a RUN_DIR that exists")
    _add_endpoint_arguments(parser, config)
    _add_prompt_arguments(parser, config)
    _add_sampling_arguments(parser, config)
    _add_request_arguments(parser, config)
    _add_cache_arguments(parser)
    parser.add_argument("--limit", type=integer_in(1, 10**9), metavar="N",
                        help="only the first N questions (scores over those; RUN_DIR/dataset.json holds exactly them)")
    parser.add_argument("--price", type=price, metavar="IN,OUT", help="dollars per million prompt,completion tokens: adds the cost")
    parser.add_argument("--export-batch", metavar="FILE", help="write the requests as OpenAI Batch JSONL and stop")
    parser.add_argument("--import-batch", metavar="FILE", help="take the replies from an OpenAI Batch output file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_judge_arguments(parser)


def _add_endpoint_arguments(parser: argparse.ArgumentParser, config: LLMConfig) -> None:
    """Where the model is: the backend, the endpoint's URL and its key's variable."""
    parser.add_argument("--backend", choices=BACKENDS.names(), default=config.backend,
                        help="; ".join(f"{name}: {kind.summary}" for name, kind in BACKENDS.items())
                        + " (default %(default)s)")
    parser.add_argument("--base-url", default=config.base_url, help="the endpoint's URL, up to /v1 (default %(default)s)")
    parser.add_argument("--api-key-env", default=config.api_key_env, metavar="VAR",
                        help="environment variable holding the API key (default %(default)s; unset is fine for local servers)")


def _add_prompt_arguments(parser: argparse.ArgumentParser, config: LLMConfig) -> None:
    """What the model is asked: the template, evidence form, prompt, system turn, structured output and shots."""
    parser.add_argument("--template", choices=tuple(TEMPLATES), help="a registered prompt template (see above)")
    parser.add_argument("--evidence-form", choices=FORMS.names(),
                        help="; ".join(f"{name}: {form.summary}" for name, form in FORMS.items())
                        + f" (default: the --template's own, else {DEFAULT_FORM})")
    parser.add_argument("--prompt", metavar="FILE", help="a Jinja2 template of your own for the user message; "
                        "variables: passage, question, options (label, text), task, language")
    parser.add_argument("--system-prompt", metavar="TEXT|FILE",
                        help="the system message instead of the template's: a file that exists is read, else the text")
    parser.add_argument("--no-system", action="store_true",
                        help="send no system turn: its text goes at the head of the first user turn (for chat "
                             "templates without a system role)")
    parser.add_argument("--structured", choices=("auto", "off"), default=config.structured,
                        help="auto: ask for JSON by response_format and a JSON schema, dropped if the server "
                             "refuses it; off: never (default %(default)s)")
    parser.add_argument("--shots", type=integer_in(0, 64), default=config.shots, metavar="K",
                        help="few-shot examples (default %(default)s)")
    parser.add_argument("--shots-file", metavar="FILE", help="labelled examples to draw from (e.g. `expmrc pseudo` output)")
    parser.add_argument("--allow-dev-shots", action="store_true",
                        help="accept examples from the dev set being scored; the run is marked as using it")


def _add_sampling_arguments(parser: argparse.ArgumentParser, config: LLMConfig) -> None:
    """How replies are drawn: seed, temperature, samples per question, top-p and length."""
    parser.add_argument("--seed", type=integer_in(0, 2**31 - 1), default=config.seed,
                        help="seed for shots and sampling (default %(default)s)")
    parser.add_argument("--temperature", type=number_in(0.0, 2.0), default=config.temperature,
                        help="0 to 2, 0 being greedy (default %(default)g)")
    parser.add_argument("--samples", type=integer_in(1, 64), default=config.samples, metavar="N",
                        help="replies per question, 1 to 64, voted by majority (self-consistency; needs --temperature "
                             "above 0; default %(default)s)")
    parser.add_argument("--top-p", type=number_in(0.0, 1.0), default=config.top_p,
                        help="nucleus sampling, 0 to 1 (default %(default)g)")
    parser.add_argument("--max-tokens", type=integer_in(1, 131072), default=config.max_tokens,
                        help="reply length limit (default %(default)s)")


def _add_request_arguments(parser: argparse.ArgumentParser, config: LLMConfig) -> None:
    """How requests are sent: concurrency, batch size, device, retries, backoff and timeout."""
    parser.add_argument("--concurrency", type=integer_in(1, 1024), default=config.concurrency,
                        help="requests in flight at once, 1 to 1024 (default %(default)s; the transformers backend "
                             "batches instead)")
    parser.add_argument("--batch-size", type=integer_in(1, 1024), default=config.batch_size,
                        help="questions per generate call (transformers; default %(default)s)")
    parser.add_argument("--device", default=config.device,
                        help="device for --backend transformers (default %(default)s: cuda if there is one)")
    parser.add_argument("--retries", type=integer_in(0, 20), default=config.retries,
                        help="retries on 429, 5xx, timeouts and refused connections, with exponential backoff "
                             "(default %(default)s)")
    parser.add_argument("--backoff", type=number_in(0.0, 600.0), default=config.backoff, metavar="SECONDS",
                        help="first retry's wait, doubled for each further retry (default %(default)g; a Retry-After "
                             "header wins)")
    parser.add_argument("--timeout", type=number_in(1.0, 86400.0), default=config.timeout,
                        help="seconds per request, and the longest Ctrl-C waits for requests in flight "
                             "(default %(default)g)")


def _add_cache_arguments(parser: argparse.ArgumentParser) -> None:
    """Where replies are cached, and which cached replies count."""
    parser.add_argument("--cache", metavar="FILE", help="response cache (default $EXPMRC_CACHE/llm-responses.sqlite, "
                        "else ~/.cache/expmrc/llm-responses.sqlite)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    parser.add_argument("--cache-old-keys", action="store_true",
                        help="also use replies cached by expmrc before the key named the server (they may come from "
                             "another server or weights behind the same model name)")


def resume_command(args: argparse.Namespace) -> str:
    """The command line that reruns `args` (flags left at their defaults are left out), fit to paste."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    defaults = vars(parser.parse_args([args.subset, "--model", args.model]))
    words = ["expmrc", "llm", args.subset]
    for name, value in vars(args).items():
        if name == "subset" or name not in defaults or (value == defaults[name] and name != "model"):
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, tuple):
            words += [flag, ",".join(repr(v) for v in value)]
        else:
            words += [flag, repr(value) if isinstance(value, float) else str(value)]
    return shlex.join(words)


def stopped_line(args: argparse.Namespace, config: LLMConfig, status: int, cached: int, total: int) -> str:
    """The one line an interrupted run ends with: how many replies are cached and the command that resumes."""
    from expmrc.llm.cache import cache_path

    word = "interrupted" if status == 130 else "terminated"
    where = cache_path(config)
    if where is None:
        return f"{word}: no reply was kept (no response cache); rerun with: {resume_command(args)}"
    return f"{word}: {cached} of {total} replies are cached in {where}; resume with: {resume_command(args)}"


def run(args: argparse.Namespace) -> int:
    from expmrc.data.runs import LLM_GROUNDED
    from expmrc.errors import ExpmrcError, Terminated
    from expmrc.llm import run as llm
    from expmrc.llm.fetch import Interrupted
    from expmrc.llm.judges import JudgeConfig, grounded_judge

    start = time.time()
    config = LLMConfig.from_flags({**vars(args), "command": tuple(getattr(args, "command_line", ()) or ())})
    judge = JudgeConfig.from_flags(vars(args))
    if judge is not None and config.export_batch:
        raise ExpmrcError("--judge with --export-batch: nothing is judged until the replies are imported "
                          "(--import-batch)")
    prepared = llm.prepare(config)
    judged = grounded_judge(judge, os.path.join(config.run_dir, LLM_GROUNDED)) if judge is not None else None
    if config.export_batch:
        from expmrc.llm.batch import export_batch

        export_batch(config.export_batch, prepared.requests)
        print(f"wrote {len(prepared.requests)} requests to {config.export_batch}", file=sys.stderr)
        return 0
    try:
        fetched, backend = llm.replies(config, prepared)
    except Interrupted as stop:
        print(stopped_line(args, config, stop.status, stop.cached, stop.total), file=sys.stderr)
        return stop.status
    except (KeyboardInterrupt, Terminated) as exc:  # while the model loads or the cache is read: nothing sent
        word, status = ("interrupted", 130) if isinstance(exc, KeyboardInterrupt) else ("terminated", 143)
        print(f"{word} before any request was sent; rerun with: {resume_command(args)}", file=sys.stderr)
        return status
    try:
        lines = llm.finish(config, prepared, fetched, backend, start, judged)
    except Interrupted as stop:  # the chat judge's replies: every one received is cached
        print(f"{'interrupted' if stop.status == 130 else 'terminated'}: {stop.cached} of {stop.total} judge replies "
              f"cached; resume with: {resume_command(args)}", file=sys.stderr)
        return stop.status
    except (KeyboardInterrupt, Terminated) as exc:
        status = 130 if isinstance(exc, KeyboardInterrupt) else 143
        kept = sum(r.cacheable for r in fetched.replies.values())
        print(stopped_line(args, config, status, kept, len(prepared.requests)), file=sys.stderr)
        return status
    for line in lines:
        print(line, file=sys.stderr)
    return 0

