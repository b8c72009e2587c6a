"""A second draw of held-out reply shapes for issue 38, of the same families as reply_corpus_heldout_families.py
(reasoning as R1-style and Qwen3 models write it, closed or left open before a final statement; Llama, Gemma,
Mistral, GPT and Claude-like markdown; HTML and YAML block scalars in both languages; self-corrections that
commit to an answer or take one back) but other wording.

Written and committed before the parser was corrected for what the first draw showed, and never looked at
while the parser changed: once the first draw had been read to find the parser's faults, it was no longer
held out, and this draw is what `python benchmarks/bench_llm.py --parse-only` and the HTTP test report as
never tuned on. The text is our own. Placeholders and flags as in reply_corpus_heldout_families.py.
"""

from __future__ import annotations

HELD_OUT_FRESH = [  # (name, kind, template, flags)
    # English span
    ("x-span-en-r1-closed-answer-is", "span-en",
     "<think>\nAlright, the user wants a place. Scanning the passage...\n</think>\n\nThe answer is **<ANS>**.\n\n"
     "Evidence: \"<EVI>\"", ""),
    ("x-span-en-r1-open-pretty-json", "span-en",
     "<think>\nI need to answer in JSON. The relevant line: <EVI>\n\n```json\n{\n  \"answer\": \"<ANS>\",\n"
     "  \"evidence\": \"<EVI>\"\n}\n```", ""),
    ("x-span-en-r1-open-bold-lines", "span-en",
     "<think>\nThe question is about a detail near the end of the passage.\n\n**Answer:** <ANS>\n**Evidence:** <EVI>", ""),
    ("x-span-en-r1-open-none", "span-en",
     "<think>\nFirst, identify the sentence: \"<EVI>\". Hence the answer: <ANS>? Hmm, or", "none"),
    ("x-span-en-qwen3-empty-fenced", "span-en",
     "<think>\n\n</think>\n\n```json\n{\"answer\": \"<ANS>\", \"evidence\": \"<EVI>\"}\n```", ""),
    ("x-span-en-llama-supporting", "span-en", "**Answer:** <ANS>\n\n**Supporting Evidence:** <EVI>", ""),
    ("x-span-en-gemma-sign-off", "span-en",
     "Answer: <ANS>\nEvidence: \"<EVI>\"\n\nLet me know if you have other questions!", ""),
    ("x-span-en-gpt-headings-bold", "span-en", "### Answer\n**<ANS>**\n\n### Evidence\n\"<EVI>\"", ""),
    ("x-span-en-claude-from-passage", "span-en", "The answer is **<ANS>**.\n\nFrom the passage: \"<EVI>\"", ""),
    ("x-span-en-html-q", "span-en", "<p>Answer: <ANS></p>\n<p>Evidence: <q><EVI></q></p>", ""),
    ("x-span-en-html-ol", "span-en", "<ol><li>Answer: <ANS></li><li>Evidence: <EVI></li></ol>", ""),
    ("x-span-en-yaml-folded-fenced", "span-en", "```yaml\nanswer: \"<ANS>\"\nevidence: >\n  <EVI>\n```", ""),
    ("x-span-en-yaml-strip-deep", "span-en", "answer: <ANS>\nevidence: |-\n    <EVI>\n    <EVI2>", ""),
    ("x-span-en-oops-meant", "span-en", "Answer: <WANS>\nOops — I meant <ANS>.\nEvidence: <EVI>", "revised"),
    ("x-span-en-actually-no-none", "span-en",
     "The answer is <WANS>.\n\nActually, no. I'm not certain; the passage is ambiguous.", "none"),
    ("x-span-en-no-wait-its", "span-en", "Answer: <WANS>. No wait, it's <ANS>.\nEvidence: <EVI>", "revised"),
    ("x-span-en-verify-same", "span-en",
     "Answer: <ANS>\n\nHmm, let me verify: the passage says \"<EVI>\". Yes, the answer is <ANS>.", ""),
    # Chinese span
    ("x-span-zh-r1-closed-yiju", "span-zh", "<think>\n问题问的是……我看原文。\n</think>\n\n答案：<ANS>\n依据：<EVI>", ""),
    ("x-span-zh-r1-open-fenced", "span-zh",
     "<think>\n好的，我来分析一下。原文说“<EVI>”。\n\n```json\n{\"答案\": \"<ANS>\", \"证据\": \"<EVI>\"}\n```", ""),
    ("x-span-zh-r1-open-bold-lines", "span-zh", "<think>\n用户的问题是关于原文的一个细节。\n\n**答案**：<ANS>\n**证据**：<EVI>", ""),
    ("x-span-zh-r1-open-none", "span-zh", "<think>\n嗯，根据原文，答案可能是<ANS>，也可能是<WANS>，我需要再", "none"),
    ("x-span-zh-qwen-bullets", "span-zh", "好的，根据文章：\n\n- **答案**：<ANS>\n- **证据**：<EVI>", ""),
    ("x-span-zh-html-b-i", "span-zh", "<p>答案：<b><ANS></b></p><p>证据：<i><EVI></i></p>", ""),
    ("x-span-zh-html-ul", "span-zh", "<ul><li><strong>答案</strong>：<ANS></li><li><strong>证据</strong>：<EVI></li></ul>", ""),
    ("x-span-zh-yaml-folded-fenced", "span-zh", "```yaml\n答案: <ANS>\n证据: >\n  <EVI>\n```", ""),
    ("x-span-zh-yaml-strip", "span-zh", "answer: <ANS>\nevidence: |-\n  <EVI>", ""),
    ("x-span-zh-oh-buddui", "span-zh", "答案：<WANS>。哦不对，应该是<ANS>。\n证据：<EVI>", "revised"),
    ("x-span-zh-kancuo-none", "span-zh", "答案：<WANS>\n等等，我好像看错了。", "none"),
    ("x-span-zh-gengzheng", "span-zh", "答案是<WANS>……不，更正一下，答案是<ANS>。\n证据：<EVI>", "revised"),
    ("x-span-zh-my-reply", "span-zh", "我的回答：<ANS>\n原文依据：<EVI>", ""),
    ("x-span-zh-claude-xiedao", "span-zh", "**答案：** <ANS>\n\n**依据：** 原文写道：“<EVI>”", ""),
    # English multiple choice
    ("x-choice-en-a-through-d", "choice-en", "Looking at options A through D, the correct one is <LET>.", ""),
    ("x-choice-en-r1-closed-answer-is", "choice-en",
     "<think>\nLet me see. Option <WLET> is not mentioned anywhere.\n</think>\n\nThe answer is **<LET>**.", ""),
    ("x-choice-en-r1-open-fenced", "choice-en",
     "<think>\nOption <WLET> contradicts the passage.\n\n```json\n{\"answer\": \"<LET>\", \"evidence\": \"<EVI>\"}\n```", ""),
    ("x-choice-en-r1-open-answer-line", "choice-en", "<think>\nThe passage says \"<EVI>\"\n\nAnswer: <LET>", "reasoned"),
    ("x-choice-en-r1-open-none", "choice-en",
     "<think>\nHmm, is it <WLET> or <LET>? The passage says \"<EVI>\", which suggests <LET>, but", "none"),
    ("x-choice-en-llama-bold-text", "choice-en", "The correct answer is **<LET>) <TXT>**.", ""),
    ("x-choice-en-gemma-paren", "choice-en", "**Answer:** (<LET>) <TXT>\n\n**Evidence:** \"<EVI>\"", ""),
    ("x-choice-en-mistral-supported-by", "choice-en",
     "<LET>. <TXT>\n\nThis is supported by the sentence: \"<EVI>\"", ""),
    ("x-choice-en-gpt-bold", "choice-en", "**Answer: <LET>**\n\n**Evidence:** \"<EVI>\"", ""),
    ("x-choice-en-claude-sections", "choice-en", "## Answer\n\n**<LET>** — <TXT>\n\n## Evidence\n\n> \"<EVI>\"", ""),
    ("x-choice-en-html-quotes", "choice-en",
     "<p><b>Answer:</b> <LET></p>\n<p><b>Evidence:</b> &ldquo;<EVI>&rdquo;</p>", ""),
    ("x-choice-en-html-div", "choice-en", "<div class=\"answer\">The answer is <strong><LET></strong>.</div>", ""),
    ("x-choice-en-yaml-single-quoted", "choice-en", "answer: '<LET>'\nevidence: >-\n  <EVI>", ""),
    ("x-choice-en-yaml-literal-fenced", "choice-en", "```yaml\nanswer: <LET>\nevidence: |\n  <EVI>\n```", ""),
    ("x-choice-en-wait-no-its", "choice-en", "The answer is <WLET>. Wait — no, it's <LET>.", "revised"),
    ("x-choice-en-correction-line", "choice-en", "Answer: <WLET>\nCorrection: <LET>", "revised"),
    ("x-choice-en-unsure-none", "choice-en", "Answer: <WLET>\n\nHmm, actually I'm not sure about this one.", "none"),
    ("x-choice-en-double-check-right", "choice-en",
     "Answer: <LET>\n\nOops, let me double-check... yes, <LET> is right.", ""),
    ("x-choice-en-go-with", "choice-en", "I'll go with <LET>.", ""),
    # Chinese multiple choice
    ("x-choice-zh-four-options-shi", "choice-zh", "在这四个选项中，<LET>是正确的。", ""),
    ("x-choice-zh-r1-closed", "choice-zh", "<think>\n好的，我逐项看一下。\n</think>\n\n正确答案是<LET>。", ""),
    ("x-choice-zh-r1-open-lines", "choice-zh", "<think>\n分析：选项<WLET>与原文不符。\n\n答案：<LET>\n依据：<EVI>", ""),
    ("x-choice-zh-r1-open-fenced", "choice-zh",
     "<think>\n对比原文……\n\n```json\n{\"answer\": \"<LET>\", \"evidence\": \"<EVI>\"}\n```", ""),
    ("x-choice-zh-r1-open-none", "choice-zh", "<think>\n原文说“<EVI>”，所以答案应该是<LET>吧？再看看", "none"),
    ("x-choice-zh-html-strong", "choice-zh", "<p>答案：<strong><LET></strong></p>", ""),
    ("x-choice-zh-html-ul", "choice-zh", "<ul><li>答案：<LET></li><li>依据：<EVI></li></ul>", ""),
    ("x-choice-zh-yaml-literal", "choice-zh", "答案: <LET>\n证据: |\n  <EVI>", ""),
    ("x-choice-zh-yaml-quoted-fenced", "choice-zh", "```yaml\n答案: \"<LET>\"\n证据: >-\n  <EVI>\n```", ""),
    ("x-choice-zh-kancuo-yingxuan", "choice-zh", "选<WLET>。\n等等，看错了，应该选<LET>。", "revised"),
    ("x-choice-zh-gengzheng-line", "choice-zh", "答案：<WLET>\n更正：答案为<LET>。", "revised"),
    ("x-choice-zh-chongxin-none", "choice-zh", "答案是<WLET>。\n不对，我需要重新看一下题目。", "none"),
    ("x-choice-zh-queren-same", "choice-zh", "答案：<LET>\n\n等等，再确认一下：原文说“<EVI>”，确实选<LET>。", ""),
    ("x-choice-zh-bold-paren-text", "choice-zh", "**答案：** <LET>（<TXT>）\n\n**证据：** <EVI>", ""),
    ("x-choice-zh-gpt-yiju-key", "choice-zh", "```json\n{\"答案\": \"<LET>\", \"原文依据\": \"<EVI>\"}\n```", ""),
]
