"""A seventh draw of held-out reply shapes for issue 38, of the same families as the six before it (reasoning
closed or left open before a final statement; Llama, Gemma, Mistral, GPT and Claude-like markdown; HTML and YAML
block scalars in both languages; self-corrections that commit to an answer, doubts that take one back in words
of every kind, checks that confirm it), in other wording again.

Written and committed after the sixth draw had been measured once untouched and before the parser was changed
for what it showed (doubts are said in too many words for a list of phrases), and never looked at while the
parser changed: this draw is what `python benchmarks/bench_llm.py --parse-only` and the HTTP test report as
never tuned on. The text is our own. Placeholders and flags as in reply_corpus_heldout_families.py.
"""

from __future__ import annotations

HELD_OUT_DRAW7 = [  # (name, kind, template, flags)
    # English span
    ("m-span-en-r1-closed-md", "span-en",
     "<think>\nThe third sentence answers it.\n</think>\n\n**Answer**: <ANS>\n**Evidence**: \"<EVI>\"", ""),
    ("m-span-en-r1-open-json", "span-en",
     "<think>\nAlright, I have it.\n\n{\"answer\": \"<ANS>\", \"evidence\": \"<EVI>\"}", ""),
    ("m-span-en-r1-open-none", "span-en", "<think>\nSo it's probably <ANS>, since \"<EVI>\" — but maybe", "none"),
    ("m-span-en-gemma-quote-label", "span-en", "**Answer:** <ANS>\n\n**Quote from the passage:** \"<EVI>\"", ""),
    ("m-span-en-gpt-fenced-pretty", "span-en",
     "```json\n{\n  \"answer\": \"<ANS>\",\n  \"evidence\": \"<EVI>\"\n}\n```", ""),
    ("m-span-en-html-p", "span-en", "<p>Answer: <ANS></p><p>Evidence: <EVI></p>", ""),
    ("m-span-en-yaml-folded", "span-en", "answer: <ANS>\nevidence: >-\n  <EVI>", ""),
    ("m-span-en-wait-its", "span-en", "Answer: <WANS>\n\nWait, no. It's <ANS>.\nEvidence: <EVI>", "revised"),
    ("m-span-en-rather", "span-en", "The answer is <WANS>, or rather, <ANS>.\nEvidence: <EVI>", "revised"),
    ("m-span-en-not-right-none", "span-en", "Answer: <WANS>\n\nThat can't be right, though.", "none"),
    ("m-span-en-uncertain-none", "span-en", "Answer: <WANS> (uncertain)", "none"),
    ("m-span-en-low-confidence-none", "span-en", "Answer: <WANS>\n\nMy confidence in this is low; I may be wrong.", "none"),
    ("m-span-en-still", "span-en", "Answer: <ANS>\n\nLet me double-check... the answer is still <ANS>.", ""),
    ("m-span-en-answer-dash-evidence", "span-en", "Answer: <ANS>\n\nEvidence — \"<EVI>\"", ""),
    ("m-span-en-claude-blockquote", "span-en", "**Answer:** <ANS>\n\n> <EVI>", ""),
    ("m-span-en-html-table-rows", "span-en",
     "<table><tr><td>Answer</td><td><ANS></td></tr><tr><td>Evidence</td><td><EVI></td></tr></table>", ""),
    # Chinese span
    ("m-span-zh-r1-closed-md", "span-zh", "<think>\n第三句回答了这个问题。\n</think>\n\n**答案**：<ANS>\n**证据**：“<EVI>”", ""),
    ("m-span-zh-r1-open-json", "span-zh", "<think>\n好了，我找到了。\n\n{\"答案\": \"<ANS>\", \"证据\": \"<EVI>\"}", ""),
    ("m-span-zh-r1-open-none", "span-zh", "<think>\n所以大概是<ANS>，因为“<EVI>”——不过也许", "none"),
    ("m-span-zh-yuanwen-yinyong", "span-zh", "**答案：** <ANS>\n\n**原文引用：** “<EVI>”", ""),
    ("m-span-zh-fenced-pretty", "span-zh", "```json\n{\n  \"答案\": \"<ANS>\",\n  \"证据\": \"<EVI>\"\n}\n```", ""),
    ("m-span-zh-html-p", "span-zh", "<p>答案：<ANS></p><p>证据：<EVI></p>", ""),
    ("m-span-zh-yaml-folded", "span-zh", "答案: <ANS>\n证据: >-\n  <EVI>", ""),
    ("m-span-zh-dengdeng-shi", "span-zh", "答案：<WANS>\n\n等等，不是，是<ANS>。\n证据：<EVI>", "revised"),
    ("m-span-zh-huozhe-shuo", "span-zh", "答案是<WANS>，或者说，应该是<ANS>。\n证据：<EVI>", "revised"),
    ("m-span-zh-buke-neng-none", "span-zh", "答案：<WANS>\n\n不过这不太可能是对的。", "none"),
    ("m-span-zh-bu-queding-paren-none", "span-zh", "答案：<WANS>（不确定）", "none"),
    ("m-span-zh-xinxin-none", "span-zh", "答案：<WANS>\n\n我对此信心不足，可能有错。", "none"),
    ("m-span-zh-reng-shi", "span-zh", "答案：<ANS>\n\n再检查一下……答案仍然是<ANS>。", ""),
    ("m-span-zh-zhengju-dash", "span-zh", "答案：<ANS>\n\n证据——“<EVI>”", ""),
    ("m-span-zh-blockquote", "span-zh", "**答案：** <ANS>\n\n> <EVI>", ""),
    ("m-span-zh-html-table-rows", "span-zh",
     "<table><tr><td>答案</td><td><ANS></td></tr><tr><td>证据</td><td><EVI></td></tr></table>", ""),
    # English multiple choice
    ("m-choice-en-r1-closed-md", "choice-en", "<think>\nOnly one option is supported.\n</think>\n\n**Answer**: <LET>", ""),
    ("m-choice-en-r1-open-json", "choice-en", "<think>\nAlright, I have it.\n\n{\"answer\": \"<LET>\", \"evidence\": \"<EVI>\"}", ""),
    ("m-choice-en-r1-open-none", "choice-en", "<think>\nSo it's probably <LET>, since \"<EVI>\" — but maybe", "none"),
    ("m-choice-en-quote-label", "choice-en", "**Answer:** <LET>\n\n**Quote from the passage:** \"<EVI>\"", ""),
    ("m-choice-en-fenced-pretty", "choice-en", "```json\n{\n  \"answer\": \"<LET>\",\n  \"evidence\": \"<EVI>\"\n}\n```", ""),
    ("m-choice-en-html-p", "choice-en", "<p>Answer: <LET></p><p>Evidence: <EVI></p>", ""),
    ("m-choice-en-yaml-folded", "choice-en", "answer: <LET>\nevidence: >-\n  <EVI>", ""),
    ("m-choice-en-wait-its", "choice-en", "Answer: <WLET>\n\nWait, no. It's <LET>.", "revised"),
    ("m-choice-en-rather", "choice-en", "The answer is <WLET>, or rather, <LET>.", "revised"),
    ("m-choice-en-not-right-none", "choice-en", "Answer: <WLET>\n\nThat can't be right, though.", "none"),
    ("m-choice-en-uncertain-none", "choice-en", "Answer: <WLET> (uncertain)", "none"),
    ("m-choice-en-low-confidence-none", "choice-en", "Answer: <WLET>\n\nMy confidence in this is low; I may be wrong.", "none"),
    ("m-choice-en-still", "choice-en", "Answer: <LET>\n\nLet me double-check... the answer is still <LET>.", ""),
    ("m-choice-en-other-options-wrong", "choice-en", "Answer: <LET>\n\nThe other options are wrong because the passage never mentions them.", ""),
    ("m-choice-en-option-incorrect", "choice-en", "Answer: <LET>\n\nOption <WLET> is incorrect: the passage does not say so.", ""),
    ("m-choice-en-html-table-rows", "choice-en",
     "<table><tr><td>Answer</td><td><LET></td></tr><tr><td>Evidence</td><td><EVI></td></tr></table>", ""),
    # Chinese multiple choice
    ("m-choice-zh-r1-closed-md", "choice-zh", "<think>\n只有一个选项有依据。\n</think>\n\n**答案**：<LET>", ""),
    ("m-choice-zh-r1-open-json", "choice-zh", "<think>\n好了，我找到了。\n\n{\"答案\": \"<LET>\", \"证据\": \"<EVI>\"}", ""),
    ("m-choice-zh-r1-open-none", "choice-zh", "<think>\n所以大概是<LET>，因为“<EVI>”——不过也许", "none"),
    ("m-choice-zh-yuanwen-yinyong", "choice-zh", "**答案：** <LET>\n\n**原文引用：** “<EVI>”", ""),
    ("m-choice-zh-fenced-pretty", "choice-zh", "```json\n{\n  \"答案\": \"<LET>\",\n  \"证据\": \"<EVI>\"\n}\n```", ""),
    ("m-choice-zh-html-p", "choice-zh", "<p>答案：<LET></p><p>证据：<EVI></p>", ""),
    ("m-choice-zh-yaml-folded", "choice-zh", "答案: <LET>\n证据: >-\n  <EVI>", ""),
    ("m-choice-zh-dengdeng-shi", "choice-zh", "答案：<WLET>\n\n等等，不是，是<LET>。", "revised"),
    ("m-choice-zh-huozhe-shuo", "choice-zh", "答案是<WLET>，或者说，应该是<LET>。", "revised"),
    ("m-choice-zh-buke-neng-none", "choice-zh", "答案：<WLET>\n\n不过这不太可能是对的。", "none"),
    ("m-choice-zh-bu-queding-paren-none", "choice-zh", "答案：<WLET>（不确定）", "none"),
    ("m-choice-zh-xinxin-none", "choice-zh", "答案：<WLET>\n\n我对此信心不足，可能有错。", "none"),
    ("m-choice-zh-reng-shi", "choice-zh", "答案：<LET>\n\n再检查一下……答案仍然是<LET>。", ""),
    ("m-choice-zh-qita-cuowu", "choice-zh", "答案：<LET>\n\n其他选项都是错误的，原文没有提到。", ""),
    ("m-choice-zh-xiang-bu-fuhe", "choice-zh", "答案：<LET>\n\n<WLET>项不正确，与原文不符。", ""),
    ("m-choice-zh-html-table-rows", "choice-zh",
     "<table><tr><td>答案</td><td><LET></td></tr><tr><td>证据</td><td><EVI></td></tr></table>", ""),
]
