"""A workspace for the review tests: the hand-made scored records of ``tests/eval_diagnosis/corpus.py`` with
the threads they were read from (posts with ids, an asker and a maintainer) and evidence quotes that point
into them; one thread carries hostile markup and a token."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from reprodiag.schema import Comment, Evidence, Participant, Record, Thread, ThreadStats
from reprodiag.store import Store
from tests.eval_diagnosis.corpus import make_records

#: Text in the first thread's opening post that a page must show as text, never run.
HOSTILE = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
           '</textarea><b id=injected>bold</b>')


def _when(i: int) -> datetime:
    return datetime(2024, 1 + i % 12, 3, tzinfo=UTC)


def thread_of(r: Record, i: int) -> Thread:
    repo, _, num = r.thread_id.rpartition("#")
    s = r.symptom
    body = r.problem_statement + (f"\n\n{HOSTILE}" if i == 0 else "")
    comments = [Comment(id="c1", author="maint-bob", author_association="OWNER", created_at=_when(i),
                        body=f"Could it be that {r.hypothesis_chain[0].text}? Please check."),
                Comment(id="c2", author="maint-bob", author_association="OWNER", created_at=_when(i),
                        body=f"Thanks @alice-asker. I think I found it: {r.root_cause or 'no idea yet'}"),
                Comment(id="c3", author="alice-asker", created_at=_when(i), body="That was it, thank you!")]
    return Thread(repo=repo, number=int(num), kind="issue", url=f"https://github.com/{r.thread_id.replace('#', '/issues/')}",
                  title=f"{s.metric} {s.obtained_value} vs {s.paper_value} in the paper", body=body,
                  author="alice-asker", state="closed", created_at=_when(i), updated_at=_when(i), comments=comments)


def records_with_evidence(n_repos: int) -> list[Record]:
    out = []
    for r in make_records(n_repos):
        ev = [Evidence(field="symptom.paper_value", comment_id=None, quote=f"the paper reports {r.symptom.paper_value}")]
        if r.root_cause:
            ev.append(Evidence(field="root_cause", comment_id="c2", quote=" ".join(r.root_cause.split()[:8])))
        out.append(r.model_copy(update={
            "evidence": ev, "stats": ThreadStats(participants=[Participant(login="alice-asker", role="asker"),
                                                               Participant(login="maint-bob", role="maintainer")])}))
    return out


def make_review_workspace(root: Path, n_repos: int = 6) -> Path:
    """A workspace with ``n_repos`` repositories of three scored records each, and their threads."""
    ws = root / "ws"
    recs = records_with_evidence(n_repos)
    with Store(ws) as s:
        s.upsert_threads(thread_of(r, i) for i, r in enumerate(recs))
        s.put_records(recs)
        s.put_scored(recs)
    return ws
