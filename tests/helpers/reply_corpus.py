"""A corpus of realistic chat-model replies, English and Chinese, span and multiple choice: every dress a model
puts its answer and evidence in (JSON clean, fenced, repaired, nested; labelled lines; headings; LaTeX;
Chinese 选D forms; reasoning first; answers revised mid-reply). Each style is a template filled from a
question below; `case` gives the reply and what must be read from it.

The parser was tuned on STYLES; reply_corpus_heldout.HELD_OUT was written apart and is reported apart.
Placeholders: <ANS> span answer, <WANS> a wrong span of the same passage, <EVI> the evidence sentence,
<LET>/<TXT> the right option's letter and text, <WLET>/<WTXT> a wrong option's, <OPTLIST> the options
as `A. text` lines.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

LETTERS = "ABCDEFGH"


@dataclass(frozen=True)
class Item:
    """One question the corpus answers: its passage, gold answer (span text or option index) and evidence."""

    passage: str
    question: str
    answer: str  # span text, or the letter of the right option
    evidence: str
    wrong: str = ""  # another span of the passage (span items)
    options: tuple[str, ...] = ()
    evidence2: str = ""  # a second sentence of the passage, for replies that quote two as a list


ITEMS = {
    "span-en": [
        Item("The Rhine rises in the Swiss Alps. It flows north through Germany and the Netherlands. It reaches the "
             "North Sea near Rotterdam, after a course of about 1,230 kilometres.", "Where does the Rhine reach the sea?",
             "near Rotterdam", "It reaches the North Sea near Rotterdam, after a course of about 1,230 kilometres.",
             "the Swiss Alps", evidence2="It flows north through Germany and the Netherlands."),
        Item("The Rhine rises in the Swiss Alps. It flows north through Germany and the Netherlands. It reaches the "
             "North Sea near Rotterdam, after a course of about 1,230 kilometres.", "Where does the Rhine rise?",
             "the Swiss Alps", "The Rhine rises in the Swiss Alps.", "near Rotterdam",
             evidence2="It flows north through Germany and the Netherlands."),
        Item("The Eiffel Tower was built for the 1889 World's Fair. It was designed by the company of Gustave Eiffel. "
             "For 41 years it was the tallest man-made structure in the world.",
             "Whose company designed the Eiffel Tower?", "Gustave Eiffel",
             "It was designed by the company of Gustave Eiffel.", "the 1889 World's Fair",
             evidence2="The Eiffel Tower was built for the 1889 World's Fair."),
        Item("The Eiffel Tower was built for the 1889 World's Fair. It was designed by the company of Gustave Eiffel. "
             "For 41 years it was the tallest man-made structure in the world.",
             "For how many years was it the tallest man-made structure?", "41 years",
             "For 41 years it was the tallest man-made structure in the world.", "1889",
             evidence2="The Eiffel Tower was built for the 1889 World's Fair."),
    ],
    "span-zh": [
        Item("长江是中国第一长河，全长约6300公里。它发源于青藏高原，最终在上海注入东海。长江流域是中国经济最发达的地区之一。",
             "长江在哪里注入东海？", "上海", "它发源于青藏高原，最终在上海注入东海。", "青藏高原",
             evidence2="长江是中国第一长河，全长约6300公里。"),
        Item("长江是中国第一长河，全长约6300公里。它发源于青藏高原，最终在上海注入东海。长江流域是中国经济最发达的地区之一。",
             "长江全长约多少公里？", "6300公里", "长江是中国第一长河，全长约6300公里。", "上海",
             evidence2="长江流域是中国经济最发达的地区之一。"),
        Item("北京故宫始建于明朝永乐四年，即1406年。它是世界上现存规模最大的木质结构古建筑群之一。1987年，故宫被列为世界文化遗产。",
             "故宫哪一年被列为世界文化遗产？", "1987年", "1987年，故宫被列为世界文化遗产。", "1406年",
             evidence2="北京故宫始建于明朝永乐四年，即1406年。"),
        Item("北京故宫始建于明朝永乐四年，即1406年。它是世界上现存规模最大的木质结构古建筑群之一。1987年，故宫被列为世界文化遗产。",
             "故宫始建于哪个朝代？", "明朝", "北京故宫始建于明朝永乐四年，即1406年。", "1987年",
             evidence2="它是世界上现存规模最大的木质结构古建筑群之一。"),
    ],
    "choice-en": [
        Item("Tom went to the market on Sunday. He bought three apples and a loaf of bread. On the way home it began "
             "to rain, so he ran.", "What did Tom buy?", "B", "He bought three apples and a loaf of bread.",
             options=("Three pears", "Three apples and bread", "Only bread", "Nothing"),
             evidence2="Tom went to the market on Sunday."),
        Item("Mary has worked at the city hospital for ten years. She is a doctor who looks after children. Every "
             "morning she walks to work with her dog.", "What is Mary's job?", "C",
             "She is a doctor who looks after children.", options=("A clerk.", "A teacher.", "A doctor.", "A farmer."),
             evidence2="Mary has worked at the city hospital for ten years."),
        Item("Tom went to the market on Sunday. He bought three apples and a loaf of bread. On the way home it began "
             "to rain, so he ran.", "Why did Tom run home?", "B", "On the way home it began to rain, so he ran.",
             options=("He was late", "It began to rain", "He was hungry", "A dog chased him"),
             evidence2="He bought three apples and a loaf of bread."),
        Item("Mary has worked at the city hospital for ten years. She is a doctor who looks after children. Every "
             "morning she walks to work with her dog.", "Who goes to work with Mary?", "A",
             "Every morning she walks to work with her dog.", options=("Her dog.", "A friend.", "Her son.", "A nurse."),
             evidence2="She is a doctor who looks after children."),
    ],
    "choice-zh": [
        Item("小明每天早上七点起床。他先跑步半小时，然后吃早饭。吃完早饭后，他骑自行车去学校。", "小明怎么去学校？", "C",
             "吃完早饭后，他骑自行车去学校。", options=("走路", "坐公交车", "骑自行车", "坐地铁"),
             evidence2="他先跑步半小时，然后吃早饭。"),
        Item("王阿姨在超市工作了二十年。她每天坐地铁上班，周末喜欢去公园跳舞。", "王阿姨周末喜欢做什么？", "B",
             "她每天坐地铁上班，周末喜欢去公园跳舞。", options=("去超市", "跳舞", "坐地铁", "看电影"),
             evidence2="王阿姨在超市工作了二十年。"),
        Item("小明每天早上七点起床。他先跑步半小时，然后吃早饭。吃完早饭后，他骑自行车去学校。", "小明几点起床？", "B",
             "小明每天早上七点起床。", options=("六点", "七点", "八点"), evidence2="他先跑步半小时，然后吃早饭。"),
        Item("王阿姨在超市工作了二十年。她每天坐地铁上班，周末喜欢去公园跳舞。", "王阿姨在哪里工作？", "C",
             "王阿姨在超市工作了二十年。", options=("公园", "学校", "超市", "医院"),
             evidence2="她每天坐地铁上班，周末喜欢去公园跳舞。"),
    ],
}

STYLES = [  # (name, kind, template, flags): flags "revised" when the reply states two different answers
    # English span
    ("span-en-json", "span-en", '{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("span-en-fenced", "span-en", '```json\n{\n  "answer": "<ANS>",\n  "evidence": "<EVI>"\n}\n```', ""),
    ("span-en-prose-around", "span-en",
     'Here is my answer in the requested format:\n\n{"answer": "<ANS>", "evidence": "<EVI>"}\n\nLet me know!', ""),
    ("span-en-think", "span-en",
     '<think>The question asks where. {"answer": "<WANS>"} would be wrong.</think>\n'
     '{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("span-en-bold-lines", "span-en", '**Answer:** <ANS>\n**Evidence:** "<EVI>"', ""),
    ("span-en-answer-is", "span-en", "The answer is <ANS>.\nEvidence: <EVI>", ""),
    ("span-en-capital-keys-list", "span-en", '{"Answer": "<ANS>", "Evidence": ["<EVI>"]}', ""),
    ("span-en-single-quoted", "span-en", "{'answer': '<ANS>', 'evidence': '<EVI>'}", ""),
    ("span-en-trailing-comma", "span-en", '{"answer": "<ANS>", "evidence": "<EVI>",}', ""),
    ("span-en-nested-result", "span-en", '{"result": {"answer": "<ANS>", "evidence": "<EVI>"}}', ""),
    ("span-en-nested-evidence-outside", "span-en", '{"output": {"answer": "<ANS>"}, "supporting_sentence": "<EVI>"}', ""),
    ("span-en-headings", "span-en", "### Answer\n<ANS>\n\n### Evidence\n<EVI>", ""),
    ("span-en-labels-own-line", "span-en", "Answer:\n<ANS>\n\nEvidence:\n<EVI>", ""),
    ("span-en-boxed", "span-en", "The answer is $\\boxed{\\text{<ANS>}}$.\n\nEvidence: <EVI>", ""),
    ("span-en-final-answer", "span-en", "Final Answer: <ANS>\nSupporting evidence: <EVI>", ""),
    ("span-en-unclosed", "span-en", '{"answer": "<ANS>", "evidence": "<EVI>"', ""),
    ("span-en-unquoted-keys", "span-en", '{answer: "<ANS>", evidence: "<EVI>"}', ""),
    ("span-en-json-twice", "span-en",
     '{"answer": "<WANS>", "evidence": "<EVI>"}\nOn reflection that is wrong.\n{"answer": "<ANS>", "evidence": "<EVI>"}',
     "revised"),
    ("span-en-text-correction", "span-en", "Answer: <WANS>\nCorrection: the answer is <ANS>.\nEvidence: <EVI>", "revised"),
    ("span-en-cot", "span-en",
     'Let\'s think step by step. The question asks about the passage. The passage says "<EVI>" So the answer is '
     '<ANS>.\n\n{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("span-en-quote-key", "span-en", '{"answer": "<ANS>", "quote": "<EVI>"}', ""),
    ("span-en-quoted-lines", "span-en", 'Answer: "<ANS>"\nEvidence: "<EVI>"', ""),
    ("span-en-pipe", "span-en", "Answer: <ANS> | Evidence: <EVI>", ""),
    ("span-en-spaced-keys", "span-en", '{"Final Answer": "<ANS>", "Supporting Evidence": "<EVI>"}', ""),
    ("span-en-passage-says", "span-en", 'The passage says: "<EVI>" Therefore, the answer is <ANS>.', ""),
    ("span-en-comment-in-json", "span-en", '{\n  "answer": "<ANS>", // the shortest span\n  "evidence": "<EVI>"\n}', ""),
    # Chinese span
    ("span-zh-json", "span-zh", '{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("span-zh-fenced-zh-keys", "span-zh", '```\n{"答案": "<ANS>", "证据": "<EVI>"}\n```', ""),
    ("span-zh-lines", "span-zh", "答案：<ANS>\n证据：“<EVI>”", ""),
    ("span-zh-answer-is", "span-zh", "根据文章，答案是<ANS>。\n原文：<EVI>", ""),
    ("span-zh-prose-json", "span-zh", '好的，以下是回答：{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("span-zh-fullwidth-json", "span-zh", "{“答案”：“<ANS>”，“证据”：“<EVI>”}", ""),
    ("span-zh-fullwidth-colons", "span-zh", '{"答案"："<ANS>"，"证据"："<EVI>"}', ""),
    ("span-zh-yuanwen-yiju", "span-zh", '{"answer": "<ANS>", "原文依据": "<EVI>"}', ""),
    ("span-zh-brackets-one-line", "span-zh", "【答案】<ANS>【证据】<EVI>", ""),
    ("span-zh-heading", "span-zh", "### 答案\n<ANS>\n### 证据\n<EVI>", ""),
    ("span-zh-labels-own-line", "span-zh", "答案：\n<ANS>\n证据：\n<EVI>", ""),
    ("span-zh-nested", "span-zh", '{"结果": {"答案": "<ANS>", "证据": "<EVI>"}}', ""),
    ("span-zh-single-quoted", "span-zh", "{'答案': '<ANS>', '证据': '<EVI>'}", ""),
    ("span-zh-trailing-comma", "span-zh", '{"answer": "<ANS>", "evidence": "<EVI>",}', ""),
    ("span-zh-correction", "span-zh", "答案：<WANS>。\n更正：答案是<ANS>。\n证据：<EVI>", "revised"),
    ("span-zh-cot", "span-zh",
     '让我们一步一步思考。文中说“<EVI>”所以答案是<ANS>。\n\n{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("span-zh-final", "span-zh", "最终答案：<ANS>\n依据：<EVI>", ""),
    ("span-zh-huida", "span-zh", "回答：<ANS>\n原文依据：<EVI>", ""),
    ("span-zh-boxed", "span-zh", "\\boxed{<ANS>}\n证据：<EVI>", ""),
    ("span-zh-wenzhong", "span-zh", "文中提到：“<EVI>”因此答案为<ANS>。", ""),
    ("span-zh-evidence-list", "span-zh", '{"答案": "<ANS>", "证据": ["<EVI>"]}', ""),
    # English multiple choice
    ("choice-en-json", "choice-en", '{"answer": "<LET>", "evidence": "<EVI>"}', ""),
    ("choice-en-json-paren", "choice-en", '{"answer": "(<LET>)", "evidence": "<EVI>"}', ""),
    ("choice-en-json-letter-text", "choice-en", '{"answer": "<LET>. <TXT>", "evidence": "<EVI>"}', ""),
    ("choice-en-json-text", "choice-en", '{"answer": "<TXT>", "evidence": "<EVI>"}', ""),
    ("choice-en-json-lower-text", "choice-en", '{"answer": "<txt>", "evidence": "<EVI>"}', ""),
    ("choice-en-lines", "choice-en", "Answer: (<LET>)\nEvidence: <EVI>", ""),
    ("choice-en-after-reading", "choice-en", "After reading the passage carefully, the answer is <LET>.", ""),
    ("choice-en-option-paren-text", "choice-en", "The correct answer is option <LET>) <TXT>", ""),
    ("choice-en-think-then-line", "choice-en", "<think>Maybe <WLET>? no.</think>\nAnswer: <LET>", ""),
    ("choice-en-fenced-lower", "choice-en", '```json\n{"answer": "<let>", "evidence": "<EVI>"}\n```', ""),
    ("choice-en-bare", "choice-en", "<LET>", ""),
    ("choice-en-bare-stop", "choice-en", "<LET>.", ""),
    ("choice-en-boxed", "choice-en", "\\boxed{<LET>}", ""),
    ("choice-en-boxed-text", "choice-en", "Therefore the final answer is $\\boxed{\\text{<LET>}}$.", ""),
    ("choice-en-label-own-line", "choice-en", "<LET>\n\nEvidence: <EVI>", ""),
    ("choice-en-headings", "choice-en", "### Answer\n<LET>\n\n### Evidence\n<EVI>", ""),
    ("choice-en-bold-own-line", "choice-en", "**Answer:**\n\n**<LET>**\n\n**Evidence:** <EVI>", ""),
    ("choice-en-single-quoted", "choice-en", "{'answer': '<LET>', 'evidence': '<EVI>'}", ""),
    ("choice-en-trailing-comma", "choice-en", '{"answer": "<LET>", "evidence": "<EVI>",}', ""),
    ("choice-en-nested-result", "choice-en", '{"result": {"answer": "<LET>", "evidence": "<EVI>"}}', ""),
    ("choice-en-text-line", "choice-en", "Answer: <TXT>\nEvidence: <EVI>", ""),
    ("choice-en-option-is-correct", "choice-en", "Option <LET> is correct.\nEvidence: <EVI>", ""),
    ("choice-en-letter-is-correct-answer", "choice-en", "<LET> is the correct answer.", ""),
    ("choice-en-i-choose", "choice-en", "I choose <LET>.", ""),
    ("choice-en-my-answer", "choice-en", "My answer: <LET>\nQuote: <EVI>", ""),
    ("choice-en-json-twice", "choice-en",
     '{"answer": "<WLET>", "evidence": "<EVI>"}\nHmm, re-reading the passage:\n{"answer": "<LET>", "evidence": "<EVI>"}',
     "revised"),
    ("choice-en-text-revised", "choice-en", "Answer: <WLET>\nActually, the answer is <LET>.\nEvidence: <EVI>", "revised"),
    ("choice-en-text-then-json-revised", "choice-en",
     'The answer is <WLET>.\n\n{"answer": "<LET>", "evidence": "<EVI>"}', "revised"),
    ("choice-en-cot-options", "choice-en",
     "Let's look at each option.\n<OPTLIST>\nThe passage says \"<EVI>\" So the answer is <LET>.\n"
     '{"answer": "<LET>", "evidence": "<EVI>"}', ""),
    ("choice-en-answer-is-colon", "choice-en", "The answer is: <LET>) <TXT>\nQuote: \"<EVI>\"", ""),
    ("choice-en-correct-option", "choice-en", "Correct option: (<LET>)", ""),
    ("choice-en-answer-object", "choice-en", '{"answer": {"letter": "<LET>", "text": "<TXT>"}, "evidence": "<EVI>"}', ""),
    ("choice-en-option-key", "choice-en", '{"option": "<LET>", "supporting_sentence": "<EVI>"}', ""),
    ("choice-en-answer-list", "choice-en", '{"answer": ["<LET>"], "evidence": "<EVI>"}', ""),
    ("choice-en-answer-dash", "choice-en", "Answer - <LET>", ""),
    ("choice-en-fullwidth-letter", "choice-en", '{"answer": "<FWLET>", "evidence": "<EVI>"}', ""),
    ("choice-en-unclosed", "choice-en", '{"answer": "<LET>", "evidence": "<EVI>', ""),
    ("choice-en-bold-letter-text", "choice-en", "**<LET>) <TXT>**\n\nEvidence: \"<EVI>\"", ""),
    # Chinese multiple choice
    ("choice-zh-lines", "choice-zh", "答案：<LET>\n证据：<EVI>", ""),
    ("choice-zh-answer-is-paren", "choice-zh", "答案是（<LET>）。", ""),
    ("choice-zh-json-text", "choice-zh", '{"answer": "<TXT>", "evidence": "<EVI>"}', ""),
    ("choice-zh-json-letter-xuanxiang", "choice-zh", '{"答案": "<LET>选项", "证据": "<EVI>"}', ""),
    ("choice-zh-correct-option-line", "choice-zh", "正确答案：选项<LET>", ""),
    ("choice-zh-xuan", "choice-zh", "选<LET>", ""),
    ("choice-zh-guxuan", "choice-zh", "故选<LET>。", ""),
    ("choice-zh-daan-xuan", "choice-zh", "答案选<LET>", ""),
    ("choice-zh-wo-xuanze", "choice-zh", "我选择<LET>。\n证据：<EVI>", ""),
    ("choice-zh-zhengque-xuanxiang-wei", "choice-zh", "正确选项为<LET>", ""),
    ("choice-zh-yingxuan", "choice-zh", "应选<LET>。", ""),
    ("choice-zh-suoyi-xuan", "choice-zh", "文中说“<EVI>”所以选<LET>。", ""),
    ("choice-zh-benti-xuan", "choice-zh", "因此，本题选<LET>。", ""),
    ("choice-zh-xiang-zhengque", "choice-zh", "<LET>项正确。", ""),
    ("choice-zh-xuanxiang-zhengque", "choice-zh", "选项<LET>正确。\n原文：<EVI>", ""),
    ("choice-zh-shi-zhengque-de", "choice-zh", "<LET>是正确的。", ""),
    ("choice-zh-yinggai-shi", "choice-zh", "答案应该是<LET>", ""),
    ("choice-zh-wei-colon", "choice-zh", "答案为：<LET>", ""),
    ("choice-zh-brackets", "choice-zh", "【答案】<LET>\n【解析】原文“<EVI>”说明了这一点。", ""),
    ("choice-zh-label-own-line", "choice-zh", "<LET>\n证据：<EVI>", ""),
    ("choice-zh-heading", "choice-zh", "### 答案\n<LET>\n\n### 证据\n<EVI>", ""),
    ("choice-zh-fullwidth-json", "choice-zh", "{“答案”：“<LET>”，“证据”：“<EVI>”}", ""),
    ("choice-zh-fullwidth-colons", "choice-zh", '{"答案"："<LET>"，"证据"："<EVI>"}', ""),
    ("choice-zh-nested", "choice-zh", '{"result": {"答案": "<LET>", "证据": "<EVI>"}}', ""),
    ("choice-zh-single-quoted", "choice-zh", "{'答案': '<LET>', '证据': '<EVI>'}", ""),
    ("choice-zh-trailing-comma", "choice-zh", '{"答案": "<LET>", "证据": "<EVI>",}', ""),
    ("choice-zh-revised", "choice-zh", "选<WLET>。\n不对，应选<LET>。\n证据：<EVI>", "revised"),
    ("choice-zh-cot-options", "choice-zh",
     '我们逐项分析：\n<OPTLIST>\n文中说“<EVI>”所以答案是<LET>。\n{"answer": "<LET>", "evidence": "<EVI>"}', ""),
    ("choice-zh-boxed", "choice-zh", "所以答案是 $\\boxed{<LET>}$", ""),
    ("choice-zh-yuanwen-key", "choice-zh", '{"answer": "<LET>", "原文": "<EVI>"}', ""),
    ("choice-zh-wo-xuan-text", "choice-zh", "我选<LET>：<TXT>。", ""),
    ("choice-zh-text-line", "choice-zh", "答案：<TXT>\n依据：<EVI>", ""),
    ("choice-zh-zhengque-de-shi", "choice-zh", "正确的是<LET>。", ""),
    ("choice-zh-json-then-text-revised", "choice-zh",
     '{"答案": "<WLET>", "证据": "<EVI>"}\n再想一想，答案应为<LET>。', "revised"),
]

STYLES += [  # issue 30: tags, reasoning left open, tables, evidence lists, framed fields, analyses, notes, nesting
    # English span
    ("span-en-tags-quote", "span-en", "<answer><ANS></answer>\n<quote><EVI></quote>", ""),
    ("span-en-tags-quotes-first", "span-en", "<quotes>\n<EVI>\n</quotes>\n\n<answer>\n<ANS>\n</answer>", ""),
    ("span-en-tags-attributes", "span-en", '<answer type="span"><ANS></answer>\n<evidence source="passage"><EVI></evidence>', ""),
    ("span-en-tag-left-open", "span-en", "<evidence><EVI></evidence>\n<answer><ANS>", ""),
    ("span-en-think-open-none", "span-en", '<think>\nThe passage says "<EVI>" so it is <ANS>', "none"),
    ("span-en-think-open-answer-tag", "span-en", "<think>\nHmm, <WANS> or <ANS>?\n<answer><ANS></answer>", ""),
    ("span-en-begin-of-thought", "span-en",
     "<|begin_of_thought|>\nIt may be <WANS>.\n<|end_of_thought|>\n<|begin_of_solution|>\nAnswer: <ANS>\nEvidence: <EVI>\n"
     "<|end_of_solution|>", ""),
    ("span-en-reasoning-tag", "span-en", "<reasoning>The answer is not <WANS>.</reasoning>\nAnswer: <ANS>", ""),
    ("span-en-think-closed-by-thinking", "span-en",
     '<think>Perhaps <WANS>.</thinking>\n{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("span-en-table", "span-en", "| Answer | Supporting sentence |\n|---|---|\n| <ANS> | <EVI> |", ""),
    ("span-en-table-key-value", "span-en", "| Key | Value |\n| :-- | :-- |\n| **Answer** | <ANS> |\n| **Evidence** | <EVI> |", ""),
    ("span-en-table-no-header", "span-en", '| Answer | <ANS> |\n| Quote | "<EVI>" |', ""),
    ("span-en-evidence-numbered", "span-en", "Answer: <ANS>\nEvidence:\n1) <EVI>\n2) <EVI2>", ""),
    ("span-en-evidence-bullets-heading", "span-en", "### Answer\n<ANS>\n\n### Evidence\n- <EVI>\n- <EVI2>", ""),
    ("span-en-evidence-paren-numbers", "span-en", 'Answer: <ANS>\nSupporting sentences:\n(1) "<EVI>"\n\n(2) "<EVI2>"', ""),
    ("span-en-json-framed", "span-en", '{"answer": "The final answer is <ANS>", "evidence": "<EVI>"}', ""),
    ("span-en-json-framed-evidence", "span-en",
     '{"answer": "<ANS>", "evidence": "According to the passage, \\"<EVI>\\""}', ""),
    ("span-en-json-evidence-lines", "span-en", '{"answer": "<ANS>", "evidence": "1. <EVI>\\n2. <EVI2>"}', ""),
    ("span-en-paren-source", "span-en", 'The answer is <ANS> (source: "<EVI>").', ""),
    ("span-en-best-answer-colon", "span-en", "The best answer is: <ANS>", ""),
    ("span-en-final-answer-restated", "span-en", "Final Answer: The final answer is <ANS>. I hope it is correct.", ""),
    ("span-en-caps", "span-en", "QUOTE: <EVI>\nANSWER: <ANS>", ""),
    ("span-en-most-likely", "span-en", "Based on the passage, the most likely answer is <ANS>.", ""),
    ("span-en-tags-revised", "span-en", "<answer><WANS></answer>\n<answer><ANS></answer>\n<evidence><EVI></evidence>",
     "revised"),
    # Chinese span
    ("span-zh-tags", "span-zh", "<答案><ANS></答案><原文依据><EVI></原文依据>", ""),
    ("span-zh-en-tags-lines", "span-zh", "<answer>\n<ANS>\n</answer>\n<evidence>\n<EVI>\n</evidence>", ""),
    ("span-zh-think-open-none", "span-zh", "<think>\n原文提到“<EVI>”，那么答案应该是<ANS>", "none"),
    ("span-zh-think-open-answer-tag", "span-zh", "<think>\n可能是<WANS>？不对。\n<答案><ANS></答案>\n<证据><EVI></证据>", ""),
    ("span-zh-table", "span-zh", "| 答案 | 原文依据 |\n|:--:|:--:|\n| <ANS> | <EVI> |", ""),
    ("span-zh-table-key-value", "span-zh", "| 字段 | 内容 |\n| --- | --- |\n| **答案** | <ANS> |\n| **证据** | <EVI> |", ""),
    ("span-zh-evidence-numbered", "span-zh", "答案：<ANS>\n证据：\n1、<EVI>\n2、<EVI2>", ""),
    ("span-zh-evidence-circled", "span-zh", "【答案】<ANS>\n【证据】\n① <EVI>\n② <EVI2>", ""),
    ("span-zh-evidence-chinese-numbers", "span-zh", "答案：<ANS>\n原文依据：\n一、<EVI>\n二、<EVI2>", ""),
    ("span-zh-json-framed", "span-zh", '{"答案": "答案是<ANS>。", "证据": "<EVI>"}', ""),
    ("span-zh-json-framed-both", "span-zh", '{"answer": "答：<ANS>", "evidence": "原文：<EVI>"}', ""),
    ("span-zh-paren-note", "span-zh", "答案：<ANS>（依据：<EVI>）", ""),
    ("span-zh-paren-note-quoted", "span-zh", "答案为<ANS>（原文：“<EVI>”）。", ""),
    ("span-zh-paren-note-see", "span-zh", "答案：<ANS>（见第二句）", ""),
    ("span-zh-nested-quote", "span-zh", "原文说“<EVI>”所以答案是<ANS>。", "inner-quote"),
    ("span-zh-nested-quote-line", "span-zh", "答案：<ANS>\n证据：“<EVI>”", "inner-quote"),
    ("span-zh-nested-quote-genju", "span-zh", "根据“<EVI>”可知，答案是<ANS>。", "inner-quote"),
    ("span-zh-best", "span-zh", "最佳答案：<ANS>", ""),
    ("span-zh-tags-revised", "span-zh", "<答案><WANS></答案>\n再看原文，应改为：\n<答案><ANS></答案>", "revised"),
    # English multiple choice
    ("choice-en-tags-quote", "choice-en", "<answer><LET></answer>\n<quote><EVI></quote>", ""),
    ("choice-en-tag-letter-text", "choice-en", "<answer><LET>. <TXT></answer>", ""),
    ("choice-en-think-open-none", "choice-en", '<think>\nThe passage says "<EVI>", so <LET>.', "none"),
    ("choice-en-think-open-answer-tag", "choice-en", "<think>\nNot <WLET>.\n<answer>\n<LET>\n</answer>", ""),
    ("choice-en-think-bracket", "choice-en", "[THINK]Maybe <WLET>. No.[/THINK]\nAnswer: <LET>", ""),
    ("choice-en-analysis-best", "choice-en", "<ANALYSIS>\n\nThe best answer is <LET>.", ""),
    ("choice-en-analysis2-correct-colon", "choice-en", "<ANALYSIS2>\nThe correct answer is: (<LET>)", ""),
    ("choice-en-table", "choice-en", '| Answer | Quote |\n| --- | --- |\n| (<LET>) | "<EVI>" |', ""),
    ("choice-en-table-key-value", "choice-en", "| Answer | <LET> |\n|---|---|\n| Evidence | <EVI> |", ""),
    ("choice-en-option-table-then-answer", "choice-en",
     "| Option | Analysis |\n|---|---|\n| A | not stated |\n| <LET> | stated |\n\nAnswer: <LET>", ""),
    ("choice-en-evidence-numbered", "choice-en", "The answer is (<LET>).\n\nEvidence:\n1. <EVI>\n2. <EVI2>", ""),
    ("choice-en-evidence-bullets", "choice-en", 'Answer: <LET>\nQuotes:\n• "<EVI>"\n• "<EVI2>"', ""),
    ("choice-en-json-framed", "choice-en", '{"answer": "The answer is (<LET>)", "evidence": "<EVI>"}', ""),
    ("choice-en-json-framed-text", "choice-en", '{"answer": "Answer: <LET>. <TXT>", "evidence": "<EVI>"}', ""),
    ("choice-en-best-answer-is", "choice-en", "The best answer is <LET>", ""),
    ("choice-en-final-answer-restated", "choice-en", "Final Answer: The final answer is (<LET>). I hope it is correct.", ""),
    ("choice-en-caps", "choice-en", "ANSWER: <LET>\nQUOTE: <EVI>", ""),
    ("choice-en-paren-evidence", "choice-en", 'Answer: <LET> (evidence: "<EVI>")', ""),
    ("choice-en-most-appropriate", "choice-en", "Considering every option, the most appropriate answer is (<LET>).", ""),
    ("choice-en-tags-revised", "choice-en", "<answer><WLET></answer>\nNo, wait.\n<answer><LET></answer>\n<quote><EVI></quote>",
     "revised"),
    # Chinese multiple choice
    ("choice-zh-tags", "choice-zh", "<答案><LET></答案>\n<依据><EVI></依据>", ""),
    ("choice-zh-tags-lines", "choice-zh", "<答案>\n<LET>\n</答案>", ""),
    ("choice-zh-think-open-none", "choice-zh", "<think>\n应该选<LET>，因为原文说“<EVI>”", "none"),
    ("choice-zh-think-open-answer-tag", "choice-zh", "<think>\n排除<WLET>。\n<answer><LET></answer>", ""),
    ("choice-zh-analysis", "choice-zh", "<ANALYSIS>\n所以正确答案是：<LET>", ""),
    ("choice-zh-table", "choice-zh", "| 答案 | 证据 |\n|---|---|\n| <LET> | <EVI> |", ""),
    ("choice-zh-table-key-value", "choice-zh", "| 答案 | <LET> |\n| 原文 | <EVI> |", ""),
    ("choice-zh-evidence-numbered", "choice-zh", "答案：<LET>\n依据：\n1. <EVI>\n2. <EVI2>", ""),
    ("choice-zh-json-framed", "choice-zh", '{"答案": "正确答案是<LET>", "证据": "<EVI>"}', ""),
    ("choice-zh-json-framed-xuan", "choice-zh", '{"answer": "选<LET>", "evidence": "<EVI>"}', ""),
    ("choice-zh-paren-note", "choice-zh", "答案：<LET>（依据：<EVI>）", ""),
    ("choice-zh-paren-text-note", "choice-zh", "正确答案是<LET>（<TXT>）。", ""),
    ("choice-zh-nested-quote", "choice-zh", "原文说“<EVI>”，所以选<LET>。", "inner-quote"),
    ("choice-zh-nested-quote-line", "choice-zh", "答案：<LET>\n原文依据：“<EVI>”", "inner-quote"),
    ("choice-zh-only-xiang", "choice-zh", "只有<LET>项正确。", ""),
    ("choice-zh-gu-da", "choice-zh", "故答<LET>", ""),
    ("choice-zh-tags-revised", "choice-zh", "<答案><WLET></答案>\n再检查一遍。\n<答案><LET></答案>\n<证据><EVI></证据>", "revised"),
]


STYLES += [  # issue 38: self-corrections, reasoning left open before a final statement, YAML block scalars, HTML
    # English span
    ("span-en-actually-no-should-be", "span-en", "Answer: <WANS>\nActually, no — it should be <ANS>.\nEvidence: <EVI>",
     "revised"),
    ("span-en-on-second-thought-none", "span-en", "The answer is <WANS>.\n\nOn second thought, I'm not sure about that.",
     "none"),
    ("span-en-wait-noun-in-note", "span-en", 'Answer: <ANS>\nEvidence: "<EVI>"\nNote: nothing here is about a long wait.',
     ""),
    ("span-en-think-open-final-json", "span-en",
     '<think>\nThe question asks where. I should find the sentence first.\n\n{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("span-en-think-open-draft-json", "span-en",
     '<think>\nA draft: {"answer": "<WANS>"}. Hmm, let me keep checking the passage', "none"),
    ("span-en-think-open-final-heading", "span-en",
     "<think>\nIt is not <WANS>; the passage says otherwise.\n\n### Answer\n<ANS>\n\n### Evidence\n<EVI>", ""),
    ("span-en-yaml-folded", "span-en", "answer: <ANS>\nevidence: >-\n  <EVI>\n  <EVI2>", ""),
    ("span-en-yaml-answer-block", "span-en", 'answer: >-\n  <ANS>\nevidence: "<EVI>"', ""),
    ("span-en-html", "span-en", "<p><b>Answer:</b> <ANS></p>\n<p><b>Evidence:</b> <i><EVI></i></p>", ""),
    ("span-en-html-table", "span-en",
     "<table><thead><tr><th>Answer</th><th>Evidence</th></tr></thead><tbody><tr><td><ANS></td><td><EVI></td></tr>"
     "</tbody></table>", ""),
    # Chinese span
    ("span-zh-dengyixia-yinggaishi", "span-zh", "答案：<WANS>。等一下，应该是<ANS>。\n证据：<EVI>", "revised"),
    ("span-zh-buddui-none", "span-zh", "答案：<WANS>\n不对，我再想想。", "none"),
    ("span-zh-think-open-final-lines", "span-zh", "<think>\n先找到相关的句子……\n\n答案：<ANS>\n证据：<EVI>", ""),
    ("span-zh-yaml-literal-fenced", "span-zh", "```yaml\n答案: <ANS>\n证据: |\n  <EVI>\n```", ""),
    ("span-zh-html-strong", "span-zh", "<p><strong>答案：</strong><ANS></p><p><strong>证据：</strong>“<EVI>”</p>", ""),
    ("span-zh-dengdeng-etc", "span-zh", "答案：<ANS>\n证据：<EVI>\n解析：原文还提到了别的地名等等。", ""),
    # English multiple choice
    ("choice-en-wait-actually", "choice-en", "Answer: <WLET> … wait, actually <LET>", "revised"),
    ("choice-en-retracted-wrong", "choice-en", "Answer: <WLET>\nWait, that's wrong.", "none"),
    ("choice-en-scratch-that", "choice-en",
     'I\'d pick <WLET>. Scratch that — the passage says "<EVI>", so it should be <LET>.', "revised"),
    ("choice-en-hold-on-confirms", "choice-en",
     "Answer: <LET>\nHold on, let me re-read... Yes, the answer is <LET>.\nEvidence: <EVI>", ""),
    ("choice-en-among-options", "choice-en", "Among options A, B, C and D, the correct one is <LET>.", ""),
    ("choice-en-correct-one-would-be", "choice-en", "The correct one would be <LET>.", ""),
    ("choice-en-think-open-fenced-json", "choice-en",
     '<think>\nCheck each option against the passage.\n```json\n{"answer": "<LET>", "evidence": "<EVI>"}\n```', ""),
    ("choice-en-yaml-strip", "choice-en", "answer: <LET>\nevidence: |-\n  <EVI>", ""),
    ("choice-en-html-list", "choice-en",
     "<ul>\n<li><strong>Answer:</strong> <LET></li>\n<li><strong>Evidence:</strong> &ldquo;<EVI>&rdquo;</li>\n</ul>", ""),
    ("choice-en-html-headings-blockquote", "choice-en",
     "<h2>Answer</h2><p><LET></p><h2>Evidence</h2><blockquote><p><EVI></p></blockquote>", ""),
    # Chinese multiple choice
    ("choice-zh-dengdeng-yinggaishi", "choice-zh", "答案：<WLET>。等等，再看一遍原文，应该是<LET>。", "revised"),
    ("choice-zh-cuole-none", "choice-zh", "答案：<WLET>\n哦不，错了。", "none"),
    ("choice-zh-think-open-final-lines", "choice-zh", "<think>\n逐一排除选项……\n答案：<LET>\n证据：<EVI>", ""),
    ("choice-zh-think-open-final-then-doubt", "choice-zh", "<think>\n先看原文。\n\n答案：<WLET>\n\n等等，再想想", "none"),
    ("choice-zh-yaml-folded-keep", "choice-zh", "answer: <LET>\nevidence: >+\n  <EVI>\n", ""),
    ("choice-zh-html-strong", "choice-zh", "<p><strong>答案：</strong><LET></p>\n<p><strong>证据：</strong><EVI></p>", ""),
    ("choice-zh-analysis-budui-after", "choice-zh", "答案：<LET>\n解析：<WLET>项不对，原文没有提到。", ""),
]

# Passages whose evidence sentence holds a quotation of its own in the same marks (`“…“诚”字…”`), as Chinese
# text often does: a style flagged "inner-quote" takes its item from here.
INNER_QUOTED = {
    "span-zh": [
        Item("黄山被誉为“天下第一奇山”。它位于安徽省南部，以奇松、怪石、云海和温泉闻名。1990年，黄山被列入世界遗产名录。",
             "黄山被誉为什么？", "天下第一奇山", "黄山被誉为“天下第一奇山”。", "安徽省南部",
             evidence2="它位于安徽省南部，以奇松、怪石、云海和温泉闻名。"),
        Item("孔子非常重视“信”，他说“人而无信，不知其可也”。他认为一个人不讲信用就无法立足。后人把这句话当作做人的准则。",
             "孔子非常重视什么？", "信", "孔子非常重视“信”，他说“人而无信，不知其可也”。", "无法立足",
             evidence2="他认为一个人不讲信用就无法立足。"),
    ],
    "choice-zh": [
        Item("奶奶常说“早睡早起身体好”。她每天晚上九点睡觉，早上五点起床。起床后她先去公园散步。", "奶奶常说什么？", "A",
             "奶奶常说“早睡早起身体好”。", options=("早睡早起身体好", "多吃水果身体好", "饭后散步身体好", "多喝热水身体好"),
             evidence2="她每天晚上九点睡觉，早上五点起床。"),
        Item("这家小店的招牌上写着“老王面馆”。店里的牛肉面最受欢迎，每天能卖出三百碗。老王说，秘诀在于汤要熬八个小时。",
             "这家店叫什么名字？", "B", "这家小店的招牌上写着“老王面馆”。", options=("老李面馆", "老王面馆", "老王饭店", "牛肉面馆"),
             evidence2="店里的牛肉面最受欢迎，每天能卖出三百碗。"),
    ],
}


@dataclass(frozen=True)
class Case:
    """One reply and what a parser must read from it."""

    style: str
    kind: str
    item: Item
    reply: str
    answer: str  # span text or letter; "" where the reply states no answer outside its reasoning
    evidence: str | None  # None: the reply carries no evidence
    revised: bool


def _analysis(item: Item, right: int, language: str, form: int) -> str:
    """An option-by-option analysis as chat models write one before their verdict (`form` picks the dress)."""
    lines = []
    for i, text in enumerate(item.options):
        letter, good = LETTERS[i], i == right
        if language == "zh":
            verdict = f"符合原文，原文说“{item.evidence}”" if good else "与原文不符"
            lines.append(f"{letter}项：{text}。{verdict}。")
        elif form == 1:
            verdict = f'Correct. The passage says "{item.evidence}"' if good else "Incorrect; the passage does not say this."
            lines.append(f"- **{letter}. {text}**: {verdict}")
        else:
            lines.append(f"Option {letter} ({text}) is {'consistent' if good else 'inconsistent'} with the passage.")
    return "\n".join(lines)


def _fill(template: str, item: Item) -> str:
    values = {"<EVI>": item.evidence, "<EVI2>": item.evidence2, "<ANS>": item.answer, "<WANS>": item.wrong}
    if item.options:
        right = LETTERS.index(item.answer)
        wrong = (right + 1) % len(item.options)
        language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in item.passage) else "en"
        values.update({"<LET>": item.answer, "<let>": item.answer.lower(), "<TXT>": item.options[right],
                       "<txt>": item.options[right].lower(), "<WLET>": LETTERS[wrong], "<WTXT>": item.options[wrong],
                       "<FWLET>": chr(ord(item.answer) - ord("A") + ord("Ａ")),
                       "<OPTLIST>": "\n".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(item.options)),
                       "<ANALYSIS>": _analysis(item, right, language, 1),
                       "<ANALYSIS2>": _analysis(item, right, language, 2)})
    return re.sub("|".join(re.escape(k) for k in values), lambda m: values[m.group(0)], template)


def case(style: tuple[str, str, str, str], item: Item) -> Case:
    """The reply a style gives for one item, and the answer and evidence it states (flag "none": no answer
    outside the reasoning; "reasoned": the evidence is quoted inside the reasoning only, so none is stated; a
    template with <EVI2> quotes two sentences, read as one evidence joined by a space)."""
    name, kind, template, flags = style
    evidence = None
    if "<EVI>" in template and not {"none", "reasoned"} & set(flags.split()):
        evidence = f"{item.evidence} {item.evidence2}" if "<EVI2>" in template else item.evidence
    answer = "" if "none" in flags.split() else item.answer
    return Case(name, kind, item, _fill(template, item), answer, evidence, "revised" in flags.split())


def cases(styles: list[tuple[str, str, str, str]]) -> list[Case]:
    """Every style applied to one item of its kind, the items taken in turn (from INNER_QUOTED for a style
    flagged "inner-quote")."""
    turn = {f"{kind}{quoted}": 0 for kind in ITEMS for quoted in ("", "+q")}
    found = []
    for style in styles:
        kind, quoted = style[1], "inner-quote" in style[3].split()
        pool = INNER_QUOTED[kind] if quoted else ITEMS[kind]
        key = kind + ("+q" if quoted else "")
        found.append(case(style, pool[turn[key] % len(pool)]))
        turn[key] += 1
    return found


def same_quote(read: str, stated: str) -> bool:
    """Whether the evidence read is the stated quote, up to surrounding quote marks, spaces and a final stop."""
    def bare(text: str) -> str:
        text = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()
        return text.strip("\"'“”‘’「」*> ").rstrip("。.").strip()
    return bare(read) == bare(stated)


def misread(answer: str, evidence: str, status: str, case: Case) -> bool:
    """Whether a reply was read to another answer or quote than it states without being refused (status
    `failed`): an answer other than its own (any answer where it states none), or a quote other than its own."""
    if status == "failed":
        return False
    wrong_quote = case.evidence is not None and evidence.strip() and not same_quote(evidence, case.evidence)
    return answer != case.answer or bool(wrong_quote)
