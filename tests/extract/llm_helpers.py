"""Answers for the fake LLM servers, built from the test threads."""

from __future__ import annotations

import re
from typing import Any

from reprodiag.schema import Thread
from tests.extract.threads import make_thread


def llm_thread(i: int) -> Thread:
    return make_thread(f"Thread {i}: cannot reproduce BLEU", f"I get 2{i % 10}.4 BLEU vs 32.7 in the paper.",
                       [("maint", "MEMBER", "Did you use sacrebleu with the 13a tokenizer? The paper used it."),
                        ("asker", "NONE", "That fixed it, thanks.")], number=i)


def answer_for(t: Thread, **over: Any) -> dict[str, Any]:
    paper_quote = t.body.strip()
    doc = {
        "is_reproduction": True, "error_type": "evaluation_protocol",
        "problem_statement": t.title, "metric": "BLEU", "paper_value": 32.7,
        "obtained_value": float(re.search(r"I get ([\d.]+)", t.body).group(1)),
        "hypotheses": [{"text": "sacrebleu 13a tokenizer", "comment_id": t.comments[0].id, "outcome": "confirmed"}],
        "root_cause": "The paper used sacrebleu with the 13a tokenizer.", "resolution": "Use sacrebleu 13a.",
        "is_resolved": True, "diagnostic_depth": 2, "environment": None, "paper": None, "tried": None,
        "evidence": [
            {"field": "symptom.paper_value", "comment_id": None, "quote": paper_quote},
            {"field": "symptom.obtained_value", "comment_id": None, "quote": paper_quote},
            {"field": "root_cause", "comment_id": t.comments[0].id, "quote": "The paper used it."},
            {"field": "resolution", "comment_id": t.comments[1].id, "quote": "That fixed it"},
        ],
        "injection_suspected": False,
    }
    doc.update(over)
    return doc


def thread_number(prompt: str) -> int:
    return int(re.search(r"Title: Thread (\d+):", prompt).group(1))
