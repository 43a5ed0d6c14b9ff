"""A seeded synthetic GitHub corpus for the benchmark and tests (fictional text, not copied).

Comment counts are heavy-tailed (a discrete Pareto: most threads have 0–5 comments, a
few have hundreds); about ``pr_share`` of issue-like threads are pull requests and
``discussion_share`` of all threads are discussions, with nested replies and some
accepted answers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from reprodiag.schema import Comment, Thread

_WORDS = ("reproduce", "BLEU", "paper", "table", "learning", "rate", "warmup", "seed", "fp16", "tokenizer",
          "checkpoint", "epoch", "batch", "accuracy", "top-1", "ImageNet", "beam", "size", "metric", "gap")


@dataclass(frozen=True)
class Corpus:
    threads: list[Thread]
    repos_meta: dict[str, dict[str, Any]]

    @property
    def comments(self) -> int:
        return sum(len(t.all_comments()) for t in self.threads)


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def heavy_tail(rng: random.Random, cap: int = 400) -> int:
    """0..cap, median ~1-2, mean ~6, P(>100) ~0.5% (a discrete Pareto, alpha 1.5)."""
    x = rng.paretovariate(1.5) - 1.0
    return min(cap, int(x * 3.0))


def synthetic_corpus(threads: int = 3000, repos: int = 20, *, seed: int = 0, pr_share: float = 0.3,
                     discussion_share: float = 0.08, big_threads: int = 3) -> Corpus:
    """``threads`` threads spread over ``repos`` repositories; ``big_threads`` get 150–260 comments."""
    rng = random.Random(seed)
    names = [f"lab{i % 7}/paper-{i}" for i in range(repos)]
    base = datetime(2021, 1, 1, tzinfo=UTC)
    out: list[Thread] = []
    numbers = {n: 0 for n in names}
    for i in range(threads):
        repo = names[i % repos]
        numbers[repo] += 1
        number = numbers[repo]
        r = rng.random()
        kind = "discussion" if r < discussion_share else ("pull_request" if r < discussion_share + pr_share
                                                           else "issue")
        created = base + timedelta(minutes=rng.randint(0, 3 * 365 * 24 * 60))
        n_comments = 150 + rng.randint(0, 110) if i < big_threads else heavy_tail(rng)
        comments = []
        t = created
        for j in range(n_comments):
            t = t + timedelta(minutes=rng.randint(1, 600))
            replies = []
            if kind == "discussion":
                for k in range(heavy_tail(rng, 30) if rng.random() < 0.5 else 0):
                    t = t + timedelta(minutes=rng.randint(1, 60))
                    replies.append(Comment(id=f"DC_{repo}_{number}_{j}_{k}", author=f"user{rng.randint(1, 500)}",
                                           body=_text(rng, rng.randint(3, 40)), created_at=t,
                                           author_association="NONE"))
            comments.append(Comment(
                id=f"{'DC' if kind == 'discussion' else 'IC'}_{repo}_{number}_{j}",
                author=None if rng.random() < 0.02 else f"user{rng.randint(1, 500)}",
                author_association=rng.choice(["NONE", "CONTRIBUTOR", "OWNER", "MEMBER"]),
                body=_text(rng, rng.randint(3, 60)), created_at=t, reactions=rng.randint(0, 3), replies=replies))
        answer_id = None
        if kind == "discussion" and comments and rng.random() < 0.5:
            pick = rng.randrange(len(comments))
            answer_id = comments[pick].id
            comments[pick] = comments[pick].model_copy(update={"is_answer": True})
        closed = rng.random() < 0.6
        updated = max(t, created) + timedelta(minutes=rng.randint(0, 60))
        out.append(Thread(
            repo=repo, number=number, kind=kind,
            url=f"https://github.com/{repo}/{'discussions' if kind == 'discussion' else 'issues'}/{number}",
            title=_text(rng, 6), body=_text(rng, rng.randint(10, 120)), author=f"user{rng.randint(1, 500)}",
            author_association="NONE", state="closed" if closed else "open",
            state_reason=("completed" if kind == "issue" else "resolved" if kind == "discussion" else None)
            if closed else None,
            created_at=created, updated_at=updated, closed_at=updated if closed else None,
            labels=rng.sample(["bug", "question", "reproduce", "help wanted"], rng.randint(0, 2)),
            reactions=rng.randint(0, 8), category="Q&A" if kind == "discussion" else None,
            answer_id=answer_id, comments=comments))
    meta = {n: {"stars": 50 + 37 * i, "has_issues": True, "has_discussions": True} for i, n in enumerate(names)}
    return Corpus(out, meta)
