"""GitHub answers (GraphQL nodes, PyGithub objects) → :class:`Thread` / :class:`Comment`.

State mapping: issues ``OPEN``/``CLOSED``; pull requests ``MERGED`` counts as closed
(``state_reason`` stays None, as in REST); discussions use ``closed``. ``stateReason``
is lower-cased to REST's spelling (``completed``, ``not_planned``, ``resolved``…).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from reprodiag.schema import Comment, Thread


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def _login(actor: dict[str, Any] | None) -> str | None:
    return actor.get("login") if isinstance(actor, dict) else None


def _total(conn: dict[str, Any] | None) -> int:
    return int((conn or {}).get("totalCount") or 0)


def comment_from_gql(node: dict[str, Any], replies: list[Comment] | None = None) -> Comment:
    return Comment(
        id=node["id"], author=_login(node.get("author")),
        author_association=node.get("authorAssociation") or "NONE", body=node.get("body"),
        created_at=parse_time(node["createdAt"]), reactions=_total(node.get("reactions")),
        is_answer=bool(node.get("isAnswer", False)), replies=replies or [],
    )


def thread_from_gql(repo: str, kind: str, node: dict[str, Any], comments: list[Comment]) -> Thread:
    if kind == "discussion":
        state = "closed" if node.get("closed") else "open"
    else:
        state = "open" if node.get("state") == "OPEN" else "closed"
    reason = node.get("stateReason") if kind != "pull_request" else None
    answer = node.get("answer")
    return Thread(
        repo=repo, number=node["number"], kind=kind, url=node.get("url") or "", title=node.get("title"),
        body=node.get("body"), author=_login(node.get("author")),
        author_association=node.get("authorAssociation") or "NONE", state=state,
        state_reason=reason.lower() if isinstance(reason, str) else None,
        created_at=parse_time(node["createdAt"]), updated_at=parse_time(node["updatedAt"]),
        closed_at=parse_time(node.get("closedAt")),
        labels=[lb["name"] for lb in ((node.get("labels") or {}).get("nodes") or []) if lb],
        reactions=_total(node.get("reactions")),
        category=(node.get("category") or {}).get("name") if kind == "discussion" else None,
        answer_id=answer.get("id") if isinstance(answer, dict) else None,
        comments=comments,
    )


def _aware(d: datetime | None) -> datetime | None:
    if d is None:
        return None
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def comment_from_rest(c: Any) -> Comment:
    """A PyGithub ``IssueComment``; its ``node_id`` is the id (equal to GraphQL's ``id``)."""
    user = c.user
    reactions = c.reactions if isinstance(c.reactions, dict) else {}
    return Comment(
        id=c.node_id, author=user.login if user is not None else None,
        author_association=c.author_association or "NONE", body=c.body,
        created_at=_aware(c.created_at), reactions=int(reactions.get("total_count") or 0),
    )


def is_pull_request(issue: Any) -> bool:
    """Read the listing's raw JSON: ``issue.pull_request`` would cost a request per plain issue
    (PyGithub lazily completes attributes that GitHub omits)."""
    return (getattr(issue, "_rawData", None) or {}).get("pull_request") is not None


def thread_from_rest(repo: str, issue: Any, comments: list[Comment]) -> Thread:
    """A PyGithub ``Issue`` (pull requests are issues with a ``pull_request`` key)."""
    kind = "pull_request" if is_pull_request(issue) else "issue"
    user = issue.user
    reactions = issue.reactions if isinstance(issue.reactions, dict) else {}
    return Thread(
        repo=repo, number=issue.number, kind=kind, url=issue.html_url or "", title=issue.title,
        body=issue.body, author=user.login if user is not None else None,
        author_association=issue.author_association or "NONE", state=issue.state,
        state_reason=issue.state_reason if kind == "issue" else None,
        created_at=_aware(issue.created_at), updated_at=_aware(issue.updated_at),
        closed_at=_aware(issue.closed_at), labels=[lb.name for lb in issue.labels],
        reactions=int(reactions.get("total_count") or 0), comments=comments,
    )
