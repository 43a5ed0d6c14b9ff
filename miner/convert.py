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
    """The author's login as REST and the web spell it: GraphQL's ``Bot.login`` lacks the ``[bot]`` suffix
    (``dependabot`` in GraphQL is ``dependabot[bot]`` in REST). None for a deleted (ghost) author."""
    if not isinstance(actor, dict):
        return None
    login = actor.get("login")
    if isinstance(login, str) and actor.get("__typename") == "Bot" and not login.endswith("[bot]"):
        return login + "[bot]"
    return login if isinstance(login, str) else None


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


def _raw(obj: Any) -> dict[str, Any]:
    """The JSON of a REST object: a dict as is, a PyGithub object's raw data *without* completing it
    (PyGithub fetches the whole object again when an attribute the listing omitted is read)."""
    if isinstance(obj, dict):
        return obj
    raw = getattr(obj, "_rawData", None)
    return raw if isinstance(raw, dict) else {}


def _rest_login(user: Any) -> str | None:
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else None


def _rest_reactions(value: Any) -> int:
    total = value.get("total_count") if isinstance(value, dict) else None
    return int(total) if isinstance(total, int) else 0


def comment_from_rest(c: Any) -> Comment:
    """A REST issue comment (JSON, or a PyGithub ``IssueComment``); ``node_id`` is the id (GraphQL's ``id``)."""
    r = _raw(c)
    return Comment(
        id=str(r.get("node_id") or r.get("id")), author=_rest_login(r.get("user")),
        author_association=r.get("author_association") or "NONE", body=r.get("body"),
        created_at=parse_time(r.get("created_at")), reactions=_rest_reactions(r.get("reactions")),
    )


def is_pull_request(issue: Any) -> bool:
    """Pull requests are issues with a ``pull_request`` key (read from the JSON, never a lazy completion)."""
    return _raw(issue).get("pull_request") is not None


def thread_from_rest(repo: str, issue: Any, comments: list[Comment]) -> Thread:
    """A REST issue (JSON, or a PyGithub ``Issue``); fields the server left out stay empty (no extra request)."""
    r = _raw(issue)
    kind = "pull_request" if is_pull_request(r) else "issue"
    reason = r.get("state_reason") if kind == "issue" else None
    labels = [lb.get("name") if isinstance(lb, dict) else lb for lb in r.get("labels") or []]
    return Thread(
        repo=repo, number=int(r["number"]), kind=kind, url=r.get("html_url") or "", title=r.get("title"),
        body=r.get("body"), author=_rest_login(r.get("user")),
        author_association=r.get("author_association") or "NONE",
        state="closed" if r.get("state") == "closed" else "open",
        state_reason=reason if isinstance(reason, str) else None,
        created_at=parse_time(r.get("created_at")), updated_at=parse_time(r.get("updated_at")),
        closed_at=parse_time(r.get("closed_at")), labels=[str(x) for x in labels if x],
        reactions=_rest_reactions(r.get("reactions")), comments=comments,
    )
