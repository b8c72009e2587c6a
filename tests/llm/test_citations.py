"""Evidence cited by sentence number (`expmrc llm --evidence-form ids`): the citations models write are read,
hostile ones are a counted status, the prompt numbers the passage's sentences as the splitter cuts them, and a
run against a scripted server on 127.0.0.1 scores the cited sentences' exact text, records the form, keeps its
replies apart from the quote form's in the cache, and gives the figures lm-eval's `process_results` gives."""

from __future__ import annotations

import json

import pytest
from helpers.common import needs_punkt
from helpers.fake_openai import FakeChatServer
from helpers.llm_data import cached_rows, official_scores, read_run, run_llm, write_dataset, write_training

from expmrc.cli import main
from expmrc.data.datasets import load_dataset, passage_of
from expmrc.data.rows import dataset_rows
from expmrc.llm.citations import Citation, cite, passage_sentences, read_citations, strip_citations
from expmrc.llm.harness import process_results, prompt_columns
from expmrc.llm.parsing import Parsed, parse_reply
from expmrc.llm.prompts import TEMPLATES, choose_template, default_template, render_user, shot_reply
from expmrc.text.sentences import split_sentences


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize(("text", "cited"), [
    ("[3]", (3,)), ("[3][4]", (3, 4)), ("[3, 4]", (3, 4)), ("[3,4]", (3, 4)), ("[2] and [4]", (2, 4)),
    ("[3-5]", (3, 4, 5)), ("【3】", (3,)), ("［３］", (3,)), ("[S3]", (3,)), ("[Sentence 3]", (3,)),
    ("S3", (3,)), ("S3, S4", (3, 4)), ("S3-S5", (3, 4, 5)), ("Sentence 3", (3,)), ("sentences 2 and 3", (2, 3)),
    ("Sentences 1-2", (1, 2)), ("第3句", (3,)), ("第三句", (3,)), ("第3、4句", (3, 4)), ("第3句和第5句", (3, 5)),
    ("第2至3句", (2, 3)), ("句子3", (3,)), ("句子3和句子4", (3, 4)), ("3", (3,)), ("3, 4", (3, 4)), ("3 4", (3, 4)),
    ("2 and 3", (2, 3)), ("(2), (3)", (2, 3)), ("3、4", (3, 4)), ("[3] S4", (3, 4)), ("[4][3][4]", (3, 4)),
    ("[3] It reaches the North Sea near Rotterdam.", (3,)), ("Sentence 2: It flows north.", (2,)),
    # issue 38: numbers in parentheses, lists of them, ranges in every dress, Chinese numerals
    ("(3)", (3,)), ("（3）", (3,)), ("(2), (3)", (2, 3)), ("（3）、（5）", (3, 5)), ("(3)(4)", (3, 4)), ("(3-5)", (3, 4, 5)),
    ("(3) It reaches the North Sea near Rotterdam. (5) It ends.", (3, 5)), ("Sentences (3) and (4)", (3, 4)),
    ("3-5", (3, 4, 5)), ("3–5", (3, 4, 5)), ("S3–S5", (3, 4, 5)), ("S3 to S5", (3, 4, 5)), ("[3]-[5]", (3, 4, 5)),
    ("sentences 3 through 5", (3, 4, 5)), ("Sentences 3 thru 4", (3, 4)), ("from sentence 3 to sentence 5", (3, 4, 5)),
    ("第3至5句", (3, 4, 5)), ("第三至五句", (3, 4, 5)), ("第三句到第五句", (3, 4, 5)), ("第3句至第5句", (3, 4, 5)),
    ("第3~5句", (3, 4, 5)), ("第三、第五句", (3, 5)), ("第二句", (2,)), ("第五句话", (5,)),
])
def test_the_citations_models_write_are_read(text, cited):
    citation = read_citations(text, 5)
    assert (citation.cited, citation.invalid_count, citation.status) == (cited, 0, "exact")


@pytest.mark.parametrize("text", ["It reaches the North Sea near Rotterdam.", "He was sentenced to 5 years.",
                                  "长江是中国第一长河，全长约6300公里。", "It is 3 km long.", "[]", "none", "", "[the passage]"])
def test_text_without_a_citation_cites_nothing(text):
    assert read_citations(text, 5) == Citation() and Citation().status == "missing"


@pytest.mark.parametrize(("text", "invalid"), [
    ("[0]", ("0",)), ("[999]", ("999",)), ("[-1]", ("-1",)), ("[3.5]", ("3.5",)), ("[6]", ("6",)),
    ("[4-9]", ("4-9",)), ("[5-3]", ("5-3",)), ("[1-1000000000]", ("1-1000000000",)), ("1990", ("1990",)),
    ("[" + "9" * 5000 + "]", ("9" * 24 + "…",)), ("第零句", ("零",)),
    ("(9)", ("9",)), ("（0）", ("0",)), ("sentences 4 through 9", ("4 through 9",)), ("第三至第九句", ("三至第九",)),
    ("第十二句", ("十二",)), ("S4–S6", ("4–S6",)),
])
def test_a_number_that_names_no_sentence_is_unverified_and_counted(text, invalid):
    citation = read_citations(text, 5)
    assert (citation.cited, citation.invalid, citation.invalid_count, citation.status) == ((), invalid, 1,
                                                                                           "unverified")


@pytest.mark.parametrize("text", ["It was founded (1990) in Paris.", "It is 3 km long (about 2 miles).",
                                  "他说了三句话。"])
def test_a_number_in_parentheses_inside_a_sentence_cites_nothing(text):
    assert read_citations(text, 5) == Citation()


@pytest.mark.parametrize(("subset", "reply", "cited"), [
    ("squad", '{"answer": "near Rotterdam", "evidence": "(3)"}', (3,)),
    ("squad", '{"answer": "near Rotterdam", "evidence": "（3）"}', (3,)),
    ("squad", '{"answer": "near Rotterdam", "evidence": "(2), (3)"}', (2, 3)),
    ("squad", '{"answer": "near Rotterdam", "evidence": ["(2)", "(3)"]}', (2, 3)),
    ("squad", '{"answer": "near Rotterdam", "evidence": "(3) It reaches the North Sea near Rotterdam."}', (3,)),
    ("squad", "Answer: near Rotterdam\nEvidence:\n(2) It flows north.\n(3) It reaches the North Sea.", (2, 3)),
    ("squad", "Answer: near Rotterdam (3)\nEvidence: sentences 2 through 3", (2, 3)),
    ("squad", '{"answer": "near Rotterdam", "evidence": "S2–S3"}', (2, 3)),
    ("squad", '{"answer": "near Rotterdam", "evidence": "3、2"}', (2, 3)),
    ("cmrc2018", "答案：上海\n证据：（2）、（3）", (2, 3)),
    ("cmrc2018", "答案：上海\n证据：第二句", (2,)),
    ("cmrc2018", "答案：上海\n证据：第2至3句", (2, 3)),
    ("c3", '{"答案": "C", "证据": "（3）"}', (3,)),
])
def test_every_citation_form_is_read_through_the_parser(tmp_path, subset, reply, cited):
    question = load_dataset(write_dataset(tmp_path, subset)).questions[0]
    options = getattr(question, "options", None)
    parsed, citation = cite(parse_reply(reply, options), reply, question)
    assert (citation.cited, citation.status, citation.source) == (cited, "exact", "evidence")
    assert parsed.answer == ("C" if options else "上海" if subset == "cmrc2018" else "near Rotterdam")
    sentences = passage_sentences(passage_of(question))
    assert parsed.evidence.replace(" ", "") == "".join(sentences[n - 1].text for n in cited).replace(" ", "")


@pytest.mark.parametrize(("reply", "cited", "invalid"), [
    ('{"answer": "near Rotterdam", "evidence": "(9)"}', (), ("9",)),
    ('{"answer": "near Rotterdam", "evidence": "(2), (9)"}', (2,), ("9",)),
    ('{"answer": "near Rotterdam", "evidence": "(0) It begins."}', (), ("0",)),
    ('{"answer": "near Rotterdam", "evidence": "sentences 2 through 7"}', (), ("2 through 7",)),
    ("Answer: near Rotterdam\nEvidence: 第三至第五句", (), ("三至第五",)),
])
def test_a_cited_number_out_of_range_stays_unverified_in_every_form(tmp_path, reply, cited, invalid):
    question = load_dataset(write_dataset(tmp_path, "squad")).questions[0]
    _, citation = cite(parse_reply(reply), reply, question)
    assert (citation.cited, citation.invalid, citation.status) == (cited, invalid, "unverified")


def test_a_span_answer_loses_a_citation_in_parentheses(tmp_path):
    question = load_dataset(write_dataset(tmp_path, "squad")).questions[0]
    for answer in ("near Rotterdam (3)", "near Rotterdam (2), (3).", "near Rotterdam（3）"):
        parsed, _ = cite(Parsed(answer, "[3]", "text"), None, question)
        assert parsed.answer == "near Rotterdam"
    assert strip_citations("41 years (from 1889)") == "41 years (from 1889)" and strip_citations("(3)") == "(3)"


def test_a_citation_naming_one_sentence_and_one_number_too_many_keeps_the_sentence_and_is_unverified():
    citation = read_citations("[2][999][0]", 5)
    assert (citation.cited, citation.invalid, citation.status) == ((2,), ("999", "0"), "unverified")


def test_a_huge_list_is_read_and_counted_never_expanded():
    listed = read_citations(", ".join(str(n) for n in range(1, 40_000)), 12)
    assert listed.cited == tuple(range(1, 13)) and listed.invalid_count == 40_000 - 13 and len(listed.invalid) == 20
    ranged = read_citations("[1-99999999999999999999]", 12)
    assert ranged.invalid_count == 1 and not ranged.cited
    for hostile in ("第1、" * 50_000, "[" + "1 " * 100_000, "S1 " * 60_000, "[[[[" * 40_000, "句子1和" * 40_000):
        assert read_citations(hostile, 12).invalid_count == 0  # read without a traceback, however long


@pytest.mark.parametrize(("answer", "bare"), [("near Rotterdam [3]", "near Rotterdam"), ("near Rotterdam [2][3]",
                                                                                           "near Rotterdam"),
                                              ("上海（第2句）", "上海"), ("上海【2】", "上海"), ("Rotterdam (S3)", "Rotterdam"),
                                              ("1,230 kilometres", "1,230 kilometres"), ("[3]", "[3]"),
                                              ("the 1990s", "the 1990s")])
def test_a_span_answer_loses_the_citations_written_into_it(answer, bare):
    assert strip_citations(answer) == bare


@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_the_prompt_numbers_the_passage_sentences_as_the_splitter_cuts_them(tmp_path, subset):
    dataset = load_dataset(write_dataset(tmp_path, subset))
    question = dataset.questions[0]
    template = choose_template(None, dataset.kind, dataset.language, "ids")
    assert template.name == f"{dataset.kind}-{dataset.language}-ids-v1" and template.evidence_form == "ids"
    message = render_user(template, question, dataset.language)
    sentences = split_sentences(passage_of(question), "refined")
    assert len(sentences) == 3
    lines = [f"[{n}] {s.text}" for n, s in enumerate(sentences, 1)]
    assert "\n".join(lines) in message and question.question in message
    assert passage_of(question) not in message  # shown only as numbered sentences


@pytest.mark.parametrize("task", ["span", "choice"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_ids_templates_exist_for_each_task_and_language_with_chain_of_thought_and_their_own_hash(task, language):
    plain, cot = TEMPLATES[f"{task}-{language}-ids-v1"], TEMPLATES[f"{task}-{language}-ids-cot-v1"]
    assert (plain.evidence_form, cot.evidence_form, plain.reasoning, cot.reasoning) == ("ids", "ids", False, True)
    assert default_template(task, language, "ids") is plain
    assert default_template(task, language) is TEMPLATES[f"{task}-{language}-v1"]  # quote stays the default
    hashes = {t.sha256 for t in TEMPLATES.values()}
    assert len(hashes) == len(TEMPLATES)


def test_help_lists_every_template_with_its_evidence_form(capsys):
    assert main(["llm", "--help"]) == 0
    out = capsys.readouterr().out
    for template in TEMPLATES.values():
        line = next(line for line in out.splitlines() if line.strip().startswith(template.name + " "))
        assert ("cited by sentence number" in line) == (template.evidence_form == "ids")
    assert "--evidence-form {quote,ids}" in out


@pytest.mark.parametrize(("flags", "says"), [
    (["--evidence-form", "quote", "--template", "span-en-ids-v1"], "asks for evidence as ids, but --evidence-form is quote"),
    (["--evidence-form", "ids", "--template", "span-en-v1"], "asks for evidence as quote, but --evidence-form is ids"),
    (["--evidence-form", "ids", "--template", "choice-en-ids-v1"], "is for choice questions"),
])
def test_a_template_of_the_other_form_is_one_line(tmp_path, capsys, flags, says):
    path = write_dataset(tmp_path, "squad")
    assert main(["llm", path, "--model", "m", "--no-cache", "--output", str(tmp_path / "run"), *flags]) == 2
    assert says in one_error_line(capsys)
    assert not (tmp_path / "run").exists()


def test_a_prompt_file_without_numbered_sentences_is_refused_for_the_ids_form(tmp_path, capsys):
    path = write_dataset(tmp_path, "squad")
    prompt = tmp_path / "mine.j2"
    prompt.write_text("{{ passage }}\n{{ question }}", encoding="utf-8")
    assert main(["llm", path, "--model", "m", "--no-cache", "--output", str(tmp_path / "run"), "--evidence-form", "ids",
                 "--prompt", str(prompt)]) == 2
    assert "shows no numbered sentences" in one_error_line(capsys)


# A reply per question, in the shapes models write: by question text.
REPLIES = {
    "Where does the Rhine reach the sea?": '{"answer": "near Rotterdam", "evidence": [3]}',
    "Where does the Rhine rise?": "The answer is the Swiss Alps [1][999].",
    "长江在哪里注入东海？": "答案：上海\n证据：第2句",
    "长江全长约多少公里？": '{"answer": "6300公里", "evidence": "长江是中国第一长河，全长约6300公里。"}',
    "What did Tom buy?": '{"answer": "B", "evidence": "S2, S3"}',
    "Why did Tom run home?": '```json\n{"answer": "B", "evidence": [0]}\n```',
    "小明怎么去学校？": '{"答案": "C", "证据": "[3]"}',
    "小明几点起床？": '{"answer": "B", "evidence": []}',
}
# per subset, per question in order: the evidence status, the cited sentences, the evidence F1 against the gold
EXPECTED = {"squad": [("exact", [3], 100.0), ("unverified", [1], 100.0)],
            "cmrc2018": [("exact", [2], 100.0), ("missing", [], 0.0)],
            "race": [("exact", [2, 3], None), ("unverified", [], 0.0)],
            "c3": [("exact", [3], 100.0), ("missing", [], 0.0)]}


def scripted(body: dict) -> str:
    return next(reply for text, reply in REPLIES.items() if f"Question: {text}" in body["messages"][-1]["content"]
                or f"问题：{text}" in body["messages"][-1]["content"])


def ids_run(tmp_path, subset, *extra):
    path = write_dataset(tmp_path, subset)
    with FakeChatServer(scripted) as server:
        assert run_llm(tmp_path, path, server.url, "--evidence-form", "ids", *extra) == 0
    return path, tmp_path / "run"


@pytest.mark.parametrize("subset", [pytest.param("squad", marks=needs_punkt), "cmrc2018",
                                    pytest.param("race", marks=needs_punkt), "c3"])
def test_an_ids_run_scores_the_cited_sentences_exact_text(tmp_path, subset):
    path, run = ids_run(tmp_path, subset)
    dataset = load_dataset(path)
    predictions, grounded = read_run(run, "predictions.json"), read_run(run, "grounded.json")
    records = read_run(run, "responses.jsonl")
    details = tmp_path / "details.jsonl"
    assert main(["evaluate", path, str(run / "predictions.json"), "--details", str(details)]) == 0
    scored = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    for question, record, detail, (status, cited, f1) in zip(dataset.questions, records, scored, EXPECTED[subset]):
        sentences = passage_sentences(passage_of(question))
        evidence = record["grounding"]["evidence"]
        assert (evidence["status"], evidence["cited"]) == (status, cited)
        text = predictions[question.qid]["evidence"]
        assert text == " ".join(sentences[n - 1].text for n in cited) == grounded[question.qid]["evidence"]
        if status == "exact":
            assert passage_of(question)[evidence["start"]:evidence["end"]] == text
        if f1 is not None:
            assert 100 * detail["evidence"] == f1
    scores, info = read_run(run, "scores.json"), read_run(run, "run_info.json")
    assert info["evidence_form"] == "ids" == scores["evidence_form"]
    assert info["template"]["name"] == f"{dataset.kind}-{dataset.language}-ids-v1"
    statuses = [s for s, _, _ in EXPECTED[subset]]
    assert scores["citations"] == {"questions": 2, "cited": statuses.count("exact"),
                                   "out_of_range": statuses.count("unverified"), "none": statuses.count("missing"),
                                   "mean_sentences": scores["citations"]["mean_sentences"]}
    assert scores["grounding"]["unverified"] == statuses.count("unverified")
    assert official_scores(path, str(run / "predictions.json"))["SKIP"] == 0


@needs_punkt
def test_an_ids_run_reads_out_of_range_and_inline_citations_as_the_notes_say(tmp_path):
    _, run = ids_run(tmp_path, "squad")
    second = read_run(run, "responses.jsonl")[1]
    assert second["parsed"]["answer"] == "the Swiss Alps"  # the [1][999] stripped from the span answer
    assert second["grounding"]["evidence"]["out_of_range"] == ["999"]
    assert "citations read from the reply's text" in second["parsed"]["note"]
    assert "1 cited number(s) name no sentence of the 3: 999" in second["parsed"]["note"]


def test_the_quote_form_stays_the_default_and_is_recorded(tmp_path):
    path = write_dataset(tmp_path, "c3")
    with FakeChatServer(lambda body: '{"answer": "C", "evidence": "吃完早饭后，他骑自行车去学校。"}') as server:
        assert run_llm(tmp_path, path, server.url) == 0
    assert read_run(tmp_path / "run", "run_info.json")["evidence_form"] == "quote"
    assert "citations" not in read_run(tmp_path / "run", "scores.json")


def test_the_cache_keeps_the_two_forms_apart(tmp_path):
    path = write_dataset(tmp_path, "c3")
    with FakeChatServer(scripted) as server:
        assert run_llm(tmp_path, path, server.url, out="quote") == 0
        assert run_llm(tmp_path, path, server.url, "--evidence-form", "ids", out="ids") == 0
        assert run_llm(tmp_path, path, server.url, "--evidence-form", "ids", out="again") == 0
    assert len(server.requests) == 4 and cached_rows(tmp_path / "cache.sqlite") == 4
    ids = read_run(tmp_path / "ids", "run_info.json")
    assert ids["replies"]["sent"] == 2 and ids["replies"]["cached"] == 0
    assert read_run(tmp_path / "again", "run_info.json")["replies"]["cached"] == 2
    body = server.requests[-1]
    assert body["response_format"]["json_schema"]["schema"]["properties"]["evidence"]["type"] == "array"


@pytest.mark.parametrize("subset", [pytest.param("squad", marks=needs_punkt), "cmrc2018",
                                    pytest.param("race", marks=needs_punkt), "c3"])
def test_lm_eval_process_results_gives_the_figures_of_the_run(tmp_path, subset):
    path, run = ids_run(tmp_path, subset)
    dataset = load_dataset(path)
    details = tmp_path / "details.jsonl"
    assert main(["evaluate", path, str(run / "predictions.json"), "--details", str(details)]) == 0
    scored = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    template = f"{dataset.kind}-{dataset.language}-ids-v1"
    docs = [{**row, **extra} for row, extra in zip(dataset_rows(dataset), prompt_columns(dataset, template))]
    records = read_run(run, "responses.jsonl")
    for doc, detail, record in zip(docs, scored, records):
        assert doc["prompt"] == record["messages"][-1]["content"]
        figures = process_results(doc, [REPLIES[doc["question"]]])
        assert (figures["ANS_F1"], figures["EVI_F1"], figures["ALL_F1"]) == (detail["answer"], detail["evidence"],
                                                                             detail["overall"])
        status = record["grounding"]["evidence"]["status"]
        assert figures["EVI_UNTRUSTWORTHY"] == (None if status == "missing" else float(status == "unverified"))


@pytest.mark.parametrize("name", ["span-en-ids-v1", "span-zh-ids-cot-v1", "choice-en-ids-cot-v1"])
def test_a_shot_cites_the_sentences_of_its_evidence_and_reads_back(tmp_path, name):
    template = TEMPLATES[name]
    dataset = load_dataset(write_dataset(tmp_path, "cmrc2018" if template.language == "zh" else "race"))
    question = dataset.questions[0]
    evidence = question.evidences[0]
    options = getattr(question, "options", None)
    answer = "B" if options else "上海"
    turn = shot_reply(template, answer, evidence, passage_of(question))
    number = next(n for n, s in enumerate(passage_sentences(passage_of(question)), 1) if s.text == evidence)
    assert f"[{number}]" in turn
    parsed, citation = cite(parse_reply(turn, options), turn, question)
    assert (parsed.answer, parsed.evidence, citation.cited) == (answer, evidence, (number,))


def test_an_ids_run_with_shots_shows_them_cited(tmp_path):
    path, training = write_dataset(tmp_path, "squad"), write_training(tmp_path)
    with FakeChatServer(scripted) as server:
        assert run_llm(tmp_path, path, server.url, "--evidence-form", "ids", "--shots", "2", "--shots-file",
                       training, "--no-cache") == 0
    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert json.loads(messages[2]["content"])["evidence"] == [2]  # `It was founded in year ...`: sentence 2
    assert "[2] It was founded in year" in messages[1]["content"]


def test_a_shot_whose_evidence_is_not_in_its_passage_is_one_line(tmp_path, capsys):
    path, training = write_dataset(tmp_path, "squad"), tmp_path / "shots.json"
    doc = json.loads(open(write_training(tmp_path), encoding="utf-8").read())
    for paragraph in doc["data"][0]["paragraphs"]:
        paragraph["qas"][0]["evidences"] = ["A sentence of another passage."]
    training.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["llm", path, "--model", "m", "--no-cache", "--output", str(tmp_path / "run"), "--evidence-form",
                 "ids", "--shots", "1", "--shots-file", str(training)]) == 2
    assert "its evidence is not in its passage" in one_error_line(capsys)


@needs_punkt
def test_samples_vote_with_each_samples_citation(tmp_path):
    replies = iter(['{"answer": "near Rotterdam", "evidence": [999]}', '{"answer": "near Rotterdam", "evidence": [3]}',
                    '{"answer": "the Swiss Alps", "evidence": [1]}'] * 2)
    path = write_dataset(tmp_path, "squad")
    with FakeChatServer(lambda body: next(replies)) as server:
        assert run_llm(tmp_path, path, server.url, "--evidence-form", "ids", "--samples", "3", "--temperature", "0.7",
                       "--concurrency", "1", "--no-cache") == 0
    for record in read_run(tmp_path / "run", "responses.jsonl"):
        samples = [s["evidence_grounding"]["status"] for s in record["samples"]]
        assert samples == ["unverified", "exact", "exact"]
        assert record["chosen_sample"] == 1 and record["grounding"]["evidence"]["cited"] == [3]


def test_cite_keeps_a_choice_letter_and_a_failed_parse(tmp_path):
    question = load_dataset(write_dataset(tmp_path, "c3")).questions[0]
    parsed, citation = cite(Parsed("", "[3]", "failed", "no answer"), '{"evidence": [3]}', question)
    assert (parsed.answer, parsed.status, citation.cited) == ("", "failed", (3,))
    assert parsed.evidence == "吃完早饭后，他骑自行车去学校。"
    parsed, _ = cite(Parsed("C", "", "text", ""), None, question)
    assert (parsed.answer, parsed.evidence) == ("C", "")


def test_a_report_shows_the_two_forms_of_one_model_side_by_side(tmp_path, capsys):
    path = write_dataset(tmp_path, "c3")
    with FakeChatServer(scripted) as server:
        assert run_llm(tmp_path, path, server.url, out="quote") == 0
        assert run_llm(tmp_path, path, server.url, "--evidence-form", "ids", out="ids") == 0
    page = tmp_path / "compare.html"
    assert main(["report", path, str(tmp_path / "quote" / "predictions.json"), str(tmp_path / "ids" / "predictions.json"),
                 "--names", "quote,ids", "--output", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "expmrc llm: fake-model, template choice-zh-v1, evidence quoted (--evidence-form quote)" in html
    assert ("expmrc llm: fake-model, template choice-zh-ids-v1, evidence cited by sentence number "
            "(--evidence-form ids)") in html
    assert '"cited sentences": "3"' in html and '"cited sentences": "none"' in html


HOSTILE = ['{"answer": "上海", "evidence": [0]}', '{"answer": "上海", "evidence": [999]}',
           '{"answer": "上海", "evidence": [-1]}', '{"answer": "上海", "evidence": [3.5]}',
           '{"answer": "上海", "evidence": "[1-99999999999999999999]"}',
           '{"answer": "上海", "evidence": [' + ", ".join(str(n) for n in range(1, 30_000)) + "]}",
           '{"answer": "上海", "evidence": "' + "[" * 50_000 + '"}', '{"answer": "上海", "evidence": [true, null]}']


def test_hostile_citations_end_a_run_as_counted_statuses(tmp_path, capsys):
    from helpers.llm_data import write_many

    path = write_many(tmp_path, len(HOSTILE))
    order = {f"（{n}）": reply for n, reply in enumerate(HOSTILE)}
    with FakeChatServer(lambda body: next(r for k, r in order.items() if k in body["messages"][-1]["content"])) as server:
        assert run_llm(tmp_path, path, server.url, "--evidence-form", "ids") == 0
    records = read_run(tmp_path / "run", "responses.jsonl")
    statuses = [r["grounding"]["evidence"]["status"] for r in records]
    assert statuses == ["unverified"] * 6 + ["missing"] * 2
    listed = records[5]["grounding"]["evidence"]
    assert listed["cited"] == [1, 2, 3] and listed["out_of_range_count"] == 29_999 - 3 and len(listed["out_of_range"]) == 20
    scores = read_run(tmp_path / "run", "scores.json")
    assert scores["citations"] == {"questions": 8, "cited": 0, "out_of_range": 6, "none": 2, "mean_sentences": 3.0}
    err = capsys.readouterr().err
    assert "citations: 0 questions cite passage sentences, 6 cite a number that is no sentence (unverified), 2 cite " \
           "none (missing)" in err and "Traceback" not in err
