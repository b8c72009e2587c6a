"""Held-out reply styles: written before the parser was rewritten and never used to tune it; the HTTP test
reports their hit rates separately from the tuned corpus (reply_corpus.py).

Placeholders: <ANS> span answer, <WANS> a wrong span from the same passage, <EVI> the evidence sentence,
<LET>/<TXT> the right option's letter and text, <WLET>/<WTXT> a wrong option's.
"""

from __future__ import annotations

HELD_OUT = [  # (name, kind, template, flags)
    # English span
    ("h-span-en-pretty-4", "span-en", '{\n    "answer": "<ANS>",\n    "evidence": "<EVI>"\n}', ""),
    ("h-span-en-supporting-sentence", "span-en", "Answer: <ANS>\nSupporting sentence: <EVI>", ""),
    ("h-span-en-evidence-first", "span-en", '```json\n{"evidence": "<EVI>", "answer": "<ANS>"}\n```', ""),
    ("h-span-en-bold-blockquote", "span-en", "The answer is **<ANS>**.\n\n> <EVI>", ""),
    ("h-span-en-python-dict", "span-en", "{'answer': '<ANS>', 'evidence': '<EVI>'}", ""),
    ("h-span-en-bold-labels", "span-en", '**Answer**: <ANS>\n**Evidence**: "<EVI>"', ""),
    ("h-span-en-chatty-trailing-comma", "span-en",
     'Sure! Here\'s the JSON:\n\n```\n{\n  "answer": "<ANS>",\n  "evidence": "<EVI>",\n}\n```\nHope this helps.', ""),
    ("h-span-en-think-then-json", "span-en",
     '<think>\nThe question asks for a place. Let me look. The passage says "<EVI>"\n</think>\n\n'
     '{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("h-span-en-response-wrapper", "span-en", '{"response": {"answer": "<ANS>", "supporting_evidence": "<EVI>"}}', ""),
    ("h-span-en-final-answer-quote", "span-en", 'Final answer: <ANS>\nQuote from passage: "<EVI>"', ""),
    ("h-span-en-rereads", "span-en",
     "Answer: <WANS>\n\nWait, let me re-read the passage. Actually, the answer is <ANS>.\nEvidence: <EVI>", "revised"),
    ("h-span-en-evidence-list", "span-en", '{"answer":"<ANS>","evidence":["<EVI>"]}', ""),
    ("h-span-en-qa-dash", "span-en", 'A: <ANS>\nEvidence — "<EVI>"', ""),
    # Chinese span
    ("h-span-zh-yuanwen-yiju", "span-zh", '{"答案": "<ANS>", "原文依据": "<EVI>"}', ""),
    ("h-span-zh-yiju-line", "span-zh", "答案：<ANS>\n依据：“<EVI>”", ""),
    ("h-span-zh-unlabelled-answer", "span-zh", "根据文章，<ANS>。\n原文：“<EVI>”", ""),
    ("h-span-zh-fenced-pretty", "span-zh", '```json\n{\n  "answer": "<ANS>",\n  "evidence": "<EVI>"\n}\n```', ""),
    ("h-span-zh-lenticular", "span-zh", "【答案】<ANS>\n【证据】<EVI>", ""),
    ("h-span-zh-fullwidth-json", "span-zh", "{“answer”：“<ANS>”，“evidence”：“<EVI>”}", ""),
    ("h-span-zh-final-sentence", "span-zh", "最终答案是：<ANS>。\n文中原句：“<EVI>”", ""),
    ("h-span-zh-think", "span-zh", '<think>\n好的，我需要找到问题对应的句子。\n</think>\n{"answer": "<ANS>", "evidence": "<EVI>"}', ""),
    ("h-span-zh-corrects-itself", "span-zh", "答案：<WANS>\n不对，再看一遍原文，答案应该是<ANS>。\n证据：<EVI>", "revised"),
    ("h-span-zh-mixed-keys-comma", "span-zh", '{"answer": "<ANS>", "证据": "<EVI>",}', ""),
    ("h-span-zh-headings", "span-zh", "### 答案\n<ANS>\n\n### 证据\n<EVI>", ""),
    # English multiple choice
    ("h-choice-en-plain-json", "choice-en", '{"answer": "<LET>", "evidence": "<EVI>"}', ""),
    ("h-choice-en-paren-letter-text", "choice-en", 'The correct answer is (<LET>) <TXT>\n\nEvidence: "<EVI>"', ""),
    ("h-choice-en-label-then-states", "choice-en", '<LET>) <TXT>\n\nThe passage states: "<EVI>"', ""),
    ("h-choice-en-option-is-correct", "choice-en", 'Option <LET> is correct. The text says "<EVI>"', ""),
    ("h-choice-en-bold-label", "choice-en", "**<LET>. <TXT>**\n\nSupporting quote: <EVI>", ""),
    ("h-choice-en-python-dict-text", "choice-en", "{'answer': '<TXT>', 'evidence': '<EVI>'}", ""),
    ("h-choice-en-would-choose", "choice-en", "I would choose <LET>.\nEvidence: <EVI>", ""),
    ("h-choice-en-answer-only", "choice-en", "Answer: <LET>", ""),
    ("h-choice-en-boxed", "choice-en", "\\boxed{<LET>}", ""),
    ("h-choice-en-seems-then-json", "choice-en",
     "At first glance the answer seems to be <WLET>, but on closer reading the answer is <LET>.\n"
     '{"answer": "<LET>", "evidence": "<EVI>"}', ""),
    ("h-choice-en-result-choice-quote", "choice-en", '{"result": {"choice": "<LET>", "quote": "<EVI>"}}', ""),
    ("h-choice-en-explanation-quote", "choice-en",
     'Answer: <LET>\nExplanation: The passage says that "<EVI>", which matches option <LET>.', ""),
    ("h-choice-en-bare", "choice-en", "<LET>", ""),
    ("h-choice-en-option-text-sentence", "choice-en", "The answer is <TXT>", ""),
    # Chinese multiple choice
    ("h-choice-zh-lines", "choice-zh", "答案：<LET>\n证据：<EVI>", ""),
    ("h-choice-zh-quote-then-answer", "choice-zh", "根据原文“<EVI>”，可知正确答案为<LET>。", ""),
    ("h-choice-zh-guxuan", "choice-zh", "故选<LET>。", ""),
    ("h-choice-zh-yiju-json", "choice-zh", '{"答案": "<LET>", "依据": "<EVI>"}', ""),
    ("h-choice-zh-my-answer-text", "choice-zh", "我的答案是<LET>项：<TXT>。\n原文：<EVI>", ""),
    ("h-choice-zh-label-reason", "choice-zh", "<LET>. <TXT>\n理由：文中提到“<EVI>”", ""),
    ("h-choice-zh-correct-option-space", "choice-zh", "正确选项是 <LET>\n\n原文依据：“<EVI>”", ""),
    ("h-choice-zh-python-dict", "choice-zh", "{'答案': '<LET>', '证据': '<EVI>'}", ""),
    ("h-choice-zh-analysis-yingxuan", "choice-zh", "分析：文中说得很清楚。\n综上所述，本题应选<LET>。", ""),
    ("h-choice-zh-fenced-text", "choice-zh", '```json\n{"answer": "<TXT>", "evidence": "<EVI>"}\n```', ""),
    ("h-choice-zh-paren-letter-text", "choice-zh", "答案是：（<LET>）<TXT>", ""),
    ("h-choice-zh-checks-again", "choice-zh", "选<WLET>。\n等等，我再检查一下：原文说“<EVI>”，所以应该选<LET>。", "revised"),
    ("h-choice-zh-xiang-zhengque", "choice-zh", "<LET>项正确。依据：<EVI>", ""),
    ("h-choice-zh-json-then-explain", "choice-zh", '{"answer": "<LET>", "evidence": "<EVI>"}\n\n解释：文中明确提到了这一点。', ""),
]
