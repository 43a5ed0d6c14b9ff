"""Small hand-written threads for the extract tests (fictional, written for these tests)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from reprodiag.schema import Thread

_T0 = datetime(2023, 3, 1, tzinfo=UTC)


def make_thread(title: str, body: str, comments: list[tuple[str, str, str]] | None = None, *,
                number: int = 1, repo: str = "lab/model", author: str = "asker", state: str = "closed",
                state_reason: str | None = None, kind: str = "issue", labels: list[str] | None = None,
                answer: int | None = None, year: int = 2023, **extra: Any) -> Thread:
    """``comments``: (author, author_association, body); the asker's login is ``author``."""
    t0 = _T0.replace(year=year)
    cs = []
    for i, (who, assoc, text) in enumerate(comments or [], start=1):
        cs.append({"id": f"c{number}-{i}", "author": who, "author_association": assoc, "body": text,
                   "created_at": (t0 + timedelta(hours=i)).isoformat(), "is_answer": answer == i})
    doc = {"repo": repo, "number": number, "kind": kind, "title": title, "body": body, "author": author,
           "author_association": "NONE", "state": state, "state_reason": state_reason,
           "created_at": t0.isoformat(), "updated_at": (t0 + timedelta(days=3)).isoformat(),
           "labels": labels or [], "comments": cs,
           "answer_id": f"c{number}-{answer}" if answer else None, **extra}
    return Thread.model_validate(doc)


REPLY = [("helper", "CONTRIBUTOR", "Thanks for the report, looking into it.")]

POSITIVE = [
    ("Cannot reproduce the BLEU score", "I get 28.4 BLEU on newstest2014 vs 32.7 in the paper. What am I missing?"),
    ("Lower accuracy than reported", "The paper reports 81.8 top-1, I get 79.8 with the default config."),
    ("mAP gap", "Following the README I trained the R50 model and only got 38.1 mAP, the model zoo says 40.2."),
    ("How to reach the results in Table 2?", "My reproduction gives F1 = 85.3 while Table 2 lists 88.9."),
    ("复现结果对不上", "按照论文的设置训练，我的结果是 76.1，论文中是 78.5，差距有点大。"),
    ("FID much worse", "We obtained FID 12.3 compared to 6.1 reported in your paper. Same dataset and config."),
    ("Results don't match the paper", "I trained with 8 GPUs and my results are ~2 points lower than reported."),
]
NEGATIVE = [
    ("Crash when loading model", "Steps to reproduce:\n1. run train.py\n2. see error\n\nTraceback (most recent "
     "call last):\nKeyError: 'model'"),
    ("Feature request: support for ViT", "Would be nice to add ViT backbones. Is there any plan?"),
    ("CUDA install fails", "pip install fails with nvcc error, CUDA toolkit 11.3, driver 465."),
    ("CUDA out of memory", "I get CUDA out of memory with batch size 64 on a 12GB GPU."),
    ("Pretrained weights link broken", "The google drive link for the pretrained weights is dead."),
    ("Which equation is the loss?", "In section 3 which equation corresponds to the contrastive loss?"),
    ("License", "Can I use this model for commercial use? What is the license?"),
    ("Bug: reproduce the error", "I can reproduce the bug on master. Expected behavior: no crash."),
]
