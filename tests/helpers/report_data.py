"""Two span submissions on the report tests' small SQuAD-style dataset: A, and B to compare with it."""

SPAN_PRED = {
    "q1": {"answer": "Melbourne", "evidence": "Melbourne is the sporting capital of Australia."},
    "q2": {"answer": "Sydney", "evidence": "It hosts the Open."},
}
SPAN_PRED_B = {
    "q1": {"answer": "Australia", "evidence": "It hosts the Open."},
    "q2": {"answer": "Sydney", "evidence": "Sydney is larger."},
    "q3": {"answer": "Open", "evidence": "It hosts the Open."},
}
