"""A dataset in English (SQuAD format) and one in Chinese (CMRC 2018 format) whose questions share one passage,
a submission quoting its key sentence in every way grounding tells apart (verbatim, a word swapped, framed, a
number changed, a negation added, a word added, a list of two quotes), the label the entailment split should
give each, and a scripted chat judge that decides entailment by rule (a synonym table, numbers, negations and
word sets), so the split's figures are known in advance."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers.judge_data import asked

EN_PASSAGE = ("The river town holds a market every week. The old stone bridge over the river was built by the town "
              "council in the spring of 1890 after a long debate. Many visitors come to see it every summer.")
EN_KEY = "The old stone bridge over the river was built by the town council in the spring of 1890 after a long debate."
ZH_PASSAGE = "这座城市每周都有集市。城东那座古老的石桥是市议会在一八九零年春天经过长时间讨论之后修建的。每年夏天都有很多游客来参观。"
ZH_KEY = "城东那座古老的石桥是市议会在一八九零年春天经过长时间讨论之后修建的。"

# name -> (evidence, the label the split gives it: None when it is verbatim and not split)
EN_QUOTES = {
    "verbatim": (EN_KEY, None),
    "swapped": (EN_KEY.replace(" over ", " across "), "paraphrase"),
    "framed": ('The passage says: "' + EN_KEY.replace(" over ", " across ") + '"', "paraphrase"),
    "listed": ([EN_KEY.replace(" over ", " across "), "Many visitors come to see it every summer."], "paraphrase"),
    "number": (EN_KEY.replace("1890", "1891"), "contradicted"),
    "negated": (EN_KEY.replace("was built", "was not built"), "contradicted"),
    "added": (EN_KEY.replace("a long debate", "a long public debate"), "unsupported"),
}
ZH_QUOTES = {
    "verbatim": (ZH_KEY, None),
    "swapped": (ZH_KEY.replace("长时间", "很长时间"), "paraphrase"),
    "number": (ZH_KEY.replace("一八九零", "一八九一"), "contradicted"),
    "negated": (ZH_KEY.replace("石桥是", "石桥不是"), "contradicted"),
    "added": (ZH_KEY.replace("讨论", "公开讨论"), "unsupported"),
}
SYNONYMS = {" across ": " over ", "很长时间": "长时间"}  # what the scripted judge reads as the same
NEGATED = re.compile(r"It is not true that|这个说法是错误的")


def quotes(language: str) -> dict[str, tuple[object, str | None]]:
    return EN_QUOTES if language == "en" else ZH_QUOTES


def write_dataset(folder: Path, language: str) -> str:
    """One passage, one question per quote (question texts distinct, none inside another)."""
    names = list(quotes(language))
    if language == "en":
        qas = [{"id": f"en-{name}", "question": f"Question {k}: when was the bridge over the river built?",
                "answers": [{"text": "1890", "answer_start": EN_PASSAGE.index("1890")}], "evidences": [EN_KEY]}
               for k, name in enumerate(names)]
        doc = {"version": "expmrc-squad-dev", "data": [{"title": "Bridge", "paragraphs": [
            {"context": EN_PASSAGE, "qas": qas}]}]}
    else:
        qas = [{"id": f"zh-{name}", "question": f"第{k}题：城东的石桥是哪一年修建的？",
                "answers": [{"text": "一八九零年", "answer_start": ZH_PASSAGE.index("一八九零年")}], "evidences": [ZH_KEY]}
               for k, name in enumerate(names)]
        doc = {"version": "expmrc-cmrc2018-dev", "data": [{"title": "石桥", "paragraphs": [
            {"context": ZH_PASSAGE, "qas": qas}]}]}
    path = folder / f"reworded-{language}.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return str(path)


def write_quotes(folder: Path, language: str, name: str = "quotes.json") -> str:
    """The submission: every question's answer and its quote."""
    answer = "1890" if language == "en" else "一八九零年"
    entries = {f"{language}-{key}": {"answer": answer, "evidence": evidence}
               for key, (evidence, _) in quotes(language).items()}
    path = folder / name
    path.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
    return str(path)


def expected(language: str) -> dict[str, str]:
    """The label each split question gets, by question id."""
    return {f"{language}-{key}": label for key, (_, label) in quotes(language).items() if label is not None}


def _canonical(text: str) -> str:
    for word, same in SYNONYMS.items():
        text = text.replace(word, same)
    return text.strip().rstrip(".。")


def _units(text: str) -> set[str]:
    """Words (English) or characters (Chinese), lower case, without punctuation."""
    return set(re.findall(r"[A-Za-z]+|\d+|[\u4e00-\u9fff]", text.lower()))


def entails(premise: str, hypothesis: str) -> str:
    """The scripted judge's verdict: a negation template or an added `not`/`不是` against none, or other numbers,
    contradict; the same text (synonyms aside), or every unit of the hypothesis in the premise, supports; else
    unsupported."""
    p, h = _canonical(premise), _canonical(hypothesis)
    if p == h:
        return "supported"
    negations = [bool(NEGATED.search(t) or re.search(r"\bnot\b|不是", t)) for t in (p, h)]
    numbers = [set(re.findall(r"\d+|[零一二三四五六七八九]{4}", t)) for t in (p, h)]
    if negations[0] != negations[1] or (numbers[0] and numbers[1] and numbers[0] != numbers[1]):
        return "contradicted"
    return "supported" if _units(h) <= _units(p) else "unsupported"


def rule_judge(body: dict) -> str:
    """A chat judge replying by `entails`, with some reasoning before its verdict word."""
    premise, hypothesis = asked(body)
    verdict = entails(premise, hypothesis)
    if "证据：" in body["messages"][-1]["content"]:
        return "分析：……\n答案：" + {"supported": "支持", "contradicted": "矛盾", "unsupported": "不支持"}[verdict]
    return f"Reading the evidence closely. Verdict: {verdict}"


def answering(dataset_path: str, language: str):
    """A server script answering each question of `write_dataset` with its quote as JSON."""
    table = {f"Question {k}:" if language == "en" else f"第{k}题": key for k, key in enumerate(quotes(language))}

    def reply(body: dict) -> str:
        content = body["messages"][-1]["content"]
        key = next(name for mark, name in table.items() if mark in content)
        evidence = quotes(language)[key][0]
        evidence = " ".join(evidence) if isinstance(evidence, list) else evidence  # a reply quotes one text
        answer = "1890" if language == "en" else "一八九零年"
        return json.dumps({"answer": answer, "evidence": evidence}, ensure_ascii=False)
    return reply
