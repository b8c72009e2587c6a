"""Datasets of many small questions in each subset's format for the support judge's tests (the check of the judge
needs enough questions for its rates to mean something), submissions made from them, and scripted chat judges
for FakeChatServer: one that says `supported` exactly for the gold evidence, one that answers at random."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]
ZH_NAMES = ["王明", "李华", "张伟", "刘洋", "陈静", "杨帆", "赵磊", "黄丽", "周杰", "吴芳"]


def _squad(n: int) -> dict:
    paragraphs = []
    for k in range(n):
        name = NAMES[k % len(NAMES)]
        evidence = f"The mayor of town {k} is {name}."
        context = f"Town {k} lies on a river. {evidence} The town has a market every week."
        paragraphs.append({"context": context, "qas": [{
            "id": f"sq-{k}", "question": f"Who is the mayor of town {k}?",
            "answers": [{"text": name, "answer_start": context.index(name)}], "evidences": [evidence]}]})
    return {"version": "expmrc-squad-dev", "data": [{"title": "Towns", "paragraphs": paragraphs}]}


def _cmrc(n: int) -> dict:
    paragraphs = []
    for k in range(n):
        name = ZH_NAMES[k % len(ZH_NAMES)]
        evidence = f"城市{k}的市长是{name}。"
        context = f"城市{k}在河边。{evidence}这个城市每周有集市。"
        paragraphs.append({"context": context, "qas": [{
            "id": f"cm-{k}", "question": f"城市{k}的市长是谁？",
            "answers": [{"text": name, "answer_start": context.index(name)}], "evidences": [evidence]}]})
    return {"version": "expmrc-cmrc2018-dev", "data": [{"title": "城市", "paragraphs": paragraphs}]}


def _race(n: int) -> dict:
    data = []
    for k in range(n):
        count, right = 3 + k % 5, k % 4
        evidence = f"He bought {count} apples in town {k}."
        options = [f"{count + d} apples" for d in range(4)]
        options[0], options[right] = options[right], options[0]
        data.append({"id": f"r{k}", "article": f"Tom went to town {k} on Sunday. {evidence} On the way home it "
                                               "began to rain, so he ran.",
                     "questions": [f"How many apples did Tom buy in town {k}?"], "options": [options],
                     "answers": ["ABCD"[right]], "evidences": [[evidence]]})
    return {"version": "expmrc-race-dev", "data": data}


def _c3(n: int) -> dict:
    data = []
    for k in range(n):
        hour, right = 5 + k % 4, k % 3
        evidence = f"小明每天早上{hour}点起床。"
        options = [f"{hour + d}点" for d in range(3)]
        options[0], options[right] = options[right], options[0]
        data.append({"id": f"c{k}", "article": f"{evidence}他先跑步半小时，然后吃早饭。吃完早饭后，他骑自行车去学校。",
                     "questions": ["小明几点起床？"], "options": [options], "answers": ["ABC"[right]],
                     "evidences": [[evidence]]})
    return {"version": "expmrc-c3-dev", "data": data}


MAKERS = {"squad": _squad, "cmrc2018": _cmrc, "race": _race, "c3": _c3}


def write_many(folder: Path, subset: str, n: int) -> str:
    """Write a dataset of `n` questions of `subset` into `folder`; return its path."""
    path = folder / f"expmrc-{subset}-many-{n}.json"
    path.write_text(json.dumps(MAKERS[subset](n), ensure_ascii=False), encoding="utf-8")
    return str(path)


def submission(dataset_path: str, evidence: str = "gold") -> dict:
    """The gold answers with the gold evidence (`gold`), the passage's last sentence (`other`) or none (`empty`)."""
    from expmrc.data.datasets import ChoiceQuestion, load_dataset, passage_of
    from expmrc.text.sentences import split_sentences

    out = {}
    for q in load_dataset(dataset_path).questions:
        answer = q.answer if isinstance(q, ChoiceQuestion) else q.answers[0]
        text = {"gold": q.evidences[0], "other": split_sentences(passage_of(q))[-1].text, "empty": ""}[evidence]
        out[q.qid] = {"answer": answer, "evidence": text}
    return out


def write_submission(folder: Path, dataset_path: str, evidence: str = "gold", name: str = "sub.json") -> str:
    path = folder / name
    path.write_text(json.dumps(submission(dataset_path, evidence), ensure_ascii=False), encoding="utf-8")
    return str(path)


_PROMPT = re.compile(r"(?:Evidence: |证据：)(?P<premise>.*?)\n\n(?:Statement: |陈述：)(?P<hypothesis>.*?)\n\n", re.S)


def asked(body: dict) -> tuple[str, str]:
    """The (premise, hypothesis) a chat judge's request asks about."""
    match = _PROMPT.search(body["messages"][-1]["content"])
    assert match, body
    return match["premise"], match["hypothesis"]


def gold_judge(dataset_path: str):
    """A scripted judge that knows the gold evidence: `supported` for it, `unsupported` for anything else (in
    the dataset's language, with some reasoning before the verdict)."""
    from expmrc.data.datasets import load_dataset

    dataset = load_dataset(dataset_path)
    golds = {str(e).strip() for q in dataset.questions for e in q.evidences}  # evidence is judged stripped

    def reply(body: dict) -> str:
        premise, _ = asked(body)
        if dataset.language == "zh":
            return "分析：……\n答案：" + ("支持" if premise in golds else "不支持")
        return "The evidence mentions it. Supported." if premise in golds else "Verdict: unsupported"
    return reply


def random_judge(body: dict) -> str:
    """A scripted judge that labels at random (seeded by the pair, so the same pair gets the same verdict)."""
    premise, hypothesis = asked(body)
    return random.Random(premise + hypothesis).choice(["supported", "unsupported", "contradicted"])
