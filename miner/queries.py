"""The GraphQL documents the miner sends (all validated against GitHub's schema in tests).

Page sizes are chosen under GitHub's cost formula (see :mod:`miner.github_schema`):
``issues(first: 74) { labels(first: 100) comments(first: 100) }`` asks for
1 + 74 + 74 = 149 requests → 1.49 → **1 point** for 74 complete issues with up to 100
comments each; ``first: 75`` would round to 2 points. Discussions nest replies, so
``discussions(first: 74) { labels(first: 100) comments(first: 100) { replies { totalCount } } }``
also costs 1 point (a connection without ``first`` adds nothing); the replies of comments
that have any are then fetched 100 comments per point. Follow-up queries for overflowing comment lists are
batched with aliases (one ``issue(number:)``/``node(id:)`` per alias), 1 request each.
"""

from __future__ import annotations

import json

ISSUE_PAGE = 74
PR_PAGE = 74
DISCUSSION_PAGE = 74
MIN_PAGE = 5

RATE = "rateLimit { cost remaining resetAt limit }"

COMMENT_FIELDS = """
fragment CommentFields on IssueComment {
  id body createdAt authorAssociation
  author { login }
  reactions { totalCount }
}
"""

DCOMMENT_FIELDS = """
fragment DCommentFields on DiscussionComment {
  id body createdAt authorAssociation isAnswer
  author { login }
  reactions { totalCount }
}
"""

_ISSUE_NODE = """
  number url title body createdAt updatedAt closedAt authorAssociation
  author { login }
  labels(first: 100) { nodes { name } }
  reactions { totalCount }
  comments(first: 100) { totalCount pageInfo { hasNextPage endCursor } nodes { ...CommentFields } }
"""

ISSUES = (
    """
query Issues($owner: String!, $name: String!, $first: Int!, $after: String, $since: DateTime) {
  @RATE@
  repository(owner: $owner, name: $name) {
    nameWithOwner hasIssuesEnabled
    issues(first: $first, after: $after, filterBy: {since: $since},
           orderBy: {field: UPDATED_AT, direction: ASC}) {
      totalCount
      pageInfo { hasNextPage endCursor }
      nodes { state stateReason @NODE@ }
    }
  }
}
"""
    .replace("@RATE@", RATE).replace("@NODE@", _ISSUE_NODE)
    + COMMENT_FIELDS
)

PULLS = (
    """
query Pulls($owner: String!, $name: String!, $first: Int!, $after: String) {
  @RATE@
  repository(owner: $owner, name: $name) {
    nameWithOwner
    pullRequests(first: $first, after: $after, orderBy: {field: UPDATED_AT, direction: DESC}) {
      totalCount
      pageInfo { hasNextPage endCursor }
      nodes { state @NODE@ }
    }
  }
}
"""
    .replace("@RATE@", RATE).replace("@NODE@", _ISSUE_NODE)
    + COMMENT_FIELDS
)

_DISCUSSION_NODE = """
  number url title body createdAt updatedAt closed closedAt stateReason authorAssociation
  author { login }
  labels(first: 100) { nodes { name } }
  reactions { totalCount }
  category { name }
  answer { id }
  comments(first: 100) {
    totalCount pageInfo { hasNextPage endCursor }
    nodes { ...DCommentFields replies { totalCount } }
  }
"""

DISCUSSIONS = (
    """
query Discussions($owner: String!, $name: String!, $first: Int!, $after: String) {
  @RATE@
  repository(owner: $owner, name: $name) {
    nameWithOwner hasDiscussionsEnabled
    discussions(first: $first, after: $after, orderBy: {field: UPDATED_AT, direction: DESC}) {
      totalCount
      pageInfo { hasNextPage endCursor }
      nodes { @NODE@ }
    }
  }
}
"""
    .replace("@RATE@", RATE).replace("@NODE@", _DISCUSSION_NODE)
    + DCOMMENT_FIELDS
)

REPO_META_FIELDS = """
  nameWithOwner stargazerCount isArchived hasIssuesEnabled hasDiscussionsEnabled
  issues { totalCount }
  pullRequests { totalCount }
  discussions { totalCount }
"""

#: Comments of one overflowing issue/PR page: 1 request per alias, up to 100 aliases per query.
ISSUE_ALIASES_PER_QUERY = 100
DISCUSSION_ALIASES_PER_QUERY = 100
REPLY_ALIASES_PER_QUERY = 100


def _lit(value: str) -> str:
    """A GraphQL string literal (JSON escaping is a subset GraphQL accepts)."""
    return json.dumps(value, ensure_ascii=True)


def repo_meta_query(repos: list[tuple[str, str]]) -> str:
    """Metadata for up to 100 repositories, one alias ``r<i>`` each (costs 1 point)."""
    parts = [
        f"r{i}: repository(owner: {_lit(o)}, name: {_lit(n)}) {{{REPO_META_FIELDS}}}"
        for i, (o, n) in enumerate(repos)
    ]
    return "query RepoMeta {\n  " + RATE + "\n  " + "\n  ".join(parts) + "\n}\n"


def issue_comments_query(owner: str, name: str, wants: list[tuple[str, int, str]]) -> str:
    """Next comment pages: ``wants`` is ``(kind, number, after)`` with kind ``issue``/``pull_request``."""
    parts = []
    for i, (kind, number, after) in enumerate(wants):
        field = "pullRequest" if kind == "pull_request" else "issue"
        parts.append(
            f"c{i}: {field}(number: {int(number)}) {{ comments(first: 100, after: {_lit(after)}) "
            "{ pageInfo { hasNextPage endCursor } nodes { ...CommentFields } } }"
        )
    return (
        "query MoreComments($owner: String!, $name: String!) {\n  " + RATE
        + "\n  repository(owner: $owner, name: $name) {\n    " + "\n    ".join(parts) + "\n  }\n}\n"
    ) + COMMENT_FIELDS


def discussion_comments_query(owner: str, name: str, wants: list[tuple[int, str]]) -> str:
    """Next discussion-comment pages (reply counts only): ``wants`` is ``(number, after)``."""
    parts = [
        f"d{i}: discussion(number: {int(number)}) {{ comments(first: 100, after: {_lit(after)}) "
        "{ pageInfo { hasNextPage endCursor } nodes { ...DCommentFields replies { totalCount } } } }"
        for i, (number, after) in enumerate(wants)
    ]
    return (
        "query MoreDiscussionComments($owner: String!, $name: String!) {\n  " + RATE
        + "\n  repository(owner: $owner, name: $name) {\n    " + "\n    ".join(parts) + "\n  }\n}\n"
    ) + DCOMMENT_FIELDS


def replies_query(wants: list[tuple[str, str | None]]) -> str:
    """Reply pages of discussion comments: ``wants`` is ``(comment node id, after or None)``."""
    parts = [
        f"n{i}: node(id: {_lit(cid)}) {{ ... on DiscussionComment {{ replies(first: 100"
        + (f", after: {_lit(after)}" if after else "") + ") "
        "{ pageInfo { hasNextPage endCursor } nodes { ...DCommentFields } } } }"
        for i, (cid, after) in enumerate(wants)
    ]
    return "query MoreReplies {\n  " + RATE + "\n  " + "\n  ".join(parts) + "\n}\n" + DCOMMENT_FIELDS


def count_query(owner: str, name: str) -> str:
    """totalCount of issues, pull requests and discussions (no page: costs 1 point, the minimum)."""
    return ("query Counts {\n  " + RATE + f"\n  repository(owner: {_lit(owner)}, name: {_lit(name)}) {{"
            + REPO_META_FIELDS + "}\n}\n")
