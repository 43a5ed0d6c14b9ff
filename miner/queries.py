"""The GraphQL documents the miner sends, built as packed plans (validated against GitHub's schema in tests).

GitHub's cost formula (see :mod:`miner.github_schema`) adds, over every connection that
has ``first``/``last``, one request per parent node (up to 100 nodes per request), divides
the whole query's sum by 100 and rounds to the nearest integer (minimum 1). A query of up
to **149 requests costs 1 point**. The miner therefore works in two phases and packs
many small pieces of work from many repositories into one query of ~149 requests:

* **List segments** (``issues``/``pullRequests``/``discussions`` of one repository, up to 100
  threads) cost **1 request** each: the per-thread ``labels``/``comments`` connections are
  asked for ``totalCount`` only, which GitHub does not charge.
* **Fills** complete one thread with what it actually has: ``labels(first: 100)`` only when
  it has labels, ``comments(first: 100)`` only when it has comments (1 request each, again
  after the cursor when a list overflows 100). A thread with neither costs nothing more.
* **Replies** of one discussion comment that has any (``node(id:)``, 1 request).

:func:`build` renders a :class:`Plan` (repository blocks ``r<i>`` holding list segments
``l<j>`` and fills ``f<j>``, and top-level reply pages ``n<j>``) and :func:`plan_cost`
computes the requests/points/nodes GitHub will charge for it, without parsing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

#: Threads per list segment (GitHub's maximum page); halved on 502/504 down to MIN_PAGE.
PAGE = 100
MIN_PAGE = 5
#: Requests one query may hold for 1 point (149 / 100 rounds to 1).
QUERY_REQUESTS = 149

RATE = "rateLimit { cost remaining resetAt limit }"

_FRAGMENTS = {
    "IssueHead": """
fragment IssueHead on Issue {
  number url title body createdAt updatedAt closedAt authorAssociation state stateReason
  author { __typename login }
  reactions { totalCount }
  labels { totalCount }
  comments { totalCount }
}""",
    "PullHead": """
fragment PullHead on PullRequest {
  number url title body createdAt updatedAt closedAt authorAssociation state
  author { __typename login }
  reactions { totalCount }
  labels { totalCount }
  comments { totalCount }
}""",
    "DiscussionHead": """
fragment DiscussionHead on Discussion {
  number url title body createdAt updatedAt closed closedAt stateReason authorAssociation
  author { __typename login }
  reactions { totalCount }
  category { name }
  answer { id }
  labels { totalCount }
  comments { totalCount }
}""",
    "CommentFields": """
fragment CommentFields on IssueComment {
  id body createdAt authorAssociation
  author { __typename login }
  reactions { totalCount }
}""",
    "Replies": """
fragment Replies on DiscussionComment { replies(first: 100) { pageInfo { hasNextPage endCursor } nodes { ...DCommentFields } } }""",
    "DCommentFields": """
fragment DCommentFields on DiscussionComment {
  id body createdAt authorAssociation isAnswer
  author { __typename login }
  reactions { totalCount }
}""",
}

_TYPE = {"issue": "Issue", "pull_request": "PullRequest", "discussion": "Discussion"}
_PAGE_INFO = "pageInfo { hasNextPage endCursor }"


def _labels_sel(args: str) -> str:
    return f"labels({args}) {{ {_PAGE_INFO} nodes {{ name }} }}"


def _comments_sel(kind: str, args: str, head: str = "", page_info: str = _PAGE_INFO) -> str:
    """A page of comments; ``totalCount`` (uncharged) tells the scheduler how many are left."""
    nodes = "...DCommentFields replies { totalCount }" if kind == "discussion" else "...CommentFields"
    return f"{head}comments({args}) {{ totalCount {page_info} nodes {{ {nodes} }} }}"


_TAIL_INFO = "pageInfo { hasPreviousPage startCursor }"


#: First-page sizes that have a fill fragment (a first page is sized to the connection's ``totalCount``
#: rounded up to one of these: most threads have a few comments and labels, so the query asks ~10 nodes for
#: them, not 100, and its text stays short).
FIRST_SIZES = (10, PAGE)

# Fill fragments for first pages: ``L<kind><n>`` labels, ``C<kind><n>`` comments (n in FIRST_SIZES).
for _kind, _type in _TYPE.items():
    for _n in FIRST_SIZES:
        _FRAGMENTS[f"L{_type}{_n}"] = f"\nfragment L{_type}{_n} on {_type} {{ {_labels_sel(f'first: {_n}')} }}"
        _FRAGMENTS[f"C{_type}{_n}"] = (f"\nfragment C{_type}{_n} on {_type} "
                                       f"{{ {_comments_sel(_kind, f'first: {_n}')} }}")

_LIST_FIELD = {"issue": "issues", "pull_request": "pullRequests", "discussion": "discussions"}
_ONE_FIELD = {"issue": "issue", "pull_request": "pullRequest", "discussion": "discussion"}
_HEAD_FRAGMENT = {"issue": "IssueHead", "pull_request": "PullHead", "discussion": "DiscussionHead"}
KINDS = tuple(_LIST_FIELD)


def _lit(value: str) -> str:
    """A GraphQL string literal (JSON escaping is a subset GraphQL accepts)."""
    return json.dumps(value, ensure_ascii=True)


@dataclass(frozen=True)
class Page:
    """One page of a nested connection: ``first`` items after ``after`` (None: from the start)."""

    after: str | None = None
    first: int = PAGE

    def args(self) -> str:
        return f"first: {int(self.first)}" + (f", after: {_lit(self.after)}" if self.after else "")


def first_page(total: int | None) -> Page:
    """The first page of a connection of ``total`` items (None: unknown), sized up to a fragment's size."""
    if total is None:
        return Page()
    return Page(first=next((n for n in FIRST_SIZES if total <= n), PAGE))


@dataclass(frozen=True)
class TailPage:
    """The ``last`` items of a connection ``before`` a cursor (None: up to its end), read backwards."""

    before: str | None = None
    last: int = PAGE

    def args(self) -> str:
        return f"last: {int(self.last)}" + (f", before: {_lit(self.before)}" if self.before else "")


@dataclass(frozen=True)
class ListSeg:
    """A segment of one repository's thread list.

    Issues are read ``UPDATED_AT ASC`` with ``filterBy: {since}``; pull requests and
    discussions ``UPDATED_AT DESC`` (GitHub offers no ``since`` for them).
    """

    kind: str
    first: int
    after: str | None = None
    since: str | None = None
    #: Also ask the list's oldest thread (``o<j>``: ``first: 1``, ``UPDATED_AT ASC``; 1 request): on the first
    #: page of an incremental DESC pass it shows whether the server honours ``orderBy`` before the pass
    #: stops at the first old thread.
    probe: bool = False


@dataclass(frozen=True)
class Fill:
    """Complete one thread: its labels and/or comments from the given pages (None: not needed).

    ``tail``: also a page of comments read backwards from the end (answered under the alias ``ct``).
    ``via_list``: for servers without single-thread lookups (``issue(number:)``), the thread is read as
    the one-thread window of its list (oldest first) after ``list_after`` (+1 request)."""

    kind: str
    number: int
    labels: Page | None = None
    comments: Page | None = None
    tail: TailPage | None = None
    via_list: bool = False
    list_after: str | None = None

    @property
    def requests(self) -> int:
        return (self.labels is not None) + (self.comments is not None) + (self.tail is not None) + self.via_list

    @property
    def nodes(self) -> int:
        return (sum(p.first for p in (self.labels, self.comments) if p) + (self.tail.last if self.tail else 0)
                + self.via_list)


@dataclass(frozen=True)
class Locate:
    """A page of 100 numbers of one list, oldest first, with each thread's cursor (1 request): where the
    one-thread windows of :class:`Fill` ``via_list`` start."""

    kind: str
    after: str | None = None


@dataclass(frozen=True)
class Replies:
    """A page of replies of one discussion comment (by node id)."""

    comment_id: str
    page: Page = Page()


@dataclass(frozen=True)
class ReplyWalk:
    """Replies read through their discussion, for servers that cannot look a comment up by ``node(id:)``:
    a window of ``first`` comments ``after`` a cursor, each with its first 100 replies (``replies_after``:
    the next page of replies instead, for a window of the one comment holding them). Costs 1 + ``first``."""

    number: int
    after: str | None = None
    first: int = 10
    replies_after: str | None = None
    #: The discussion read as the one-thread window of its list after ``list_after`` (see :class:`Fill`).
    via_list: bool = False
    list_after: str | None = None

    @property
    def requests(self) -> int:
        return 1 + self.first + self.via_list

    @property
    def nodes(self) -> int:
        return self.first + self.first * PAGE + self.via_list


@dataclass(frozen=True)
class RepoBlock:
    owner: str
    name: str
    lists: tuple[ListSeg, ...] = ()
    fills: tuple[Fill, ...] = ()
    walks: tuple[ReplyWalk, ...] = ()
    locates: tuple[Locate, ...] = ()


@dataclass(frozen=True)
class Plan:
    blocks: tuple[RepoBlock, ...] = ()
    replies: tuple[Replies, ...] = ()


@dataclass(frozen=True)
class PlanCost:
    """What GitHub charges: ``requests`` (the formula's sum), ``points``, and ``nodes`` (max nodes asked)."""

    requests: int
    points: int
    nodes: int


@dataclass
class _Doc:
    parts: list[str] = field(default_factory=list)
    fragments: set[str] = field(default_factory=set)


def _list_text(alias: str, seg: ListSeg) -> str:
    args = [f"first: {int(seg.first)}"]
    if seg.after:
        args.append(f"after: {_lit(seg.after)}")
    if seg.kind == "issue":
        if seg.since:
            args.append(f"filterBy: {{since: {_lit(seg.since)}}}")
        args.append("orderBy: {field: UPDATED_AT, direction: ASC}")
    else:
        args.append("orderBy: {field: UPDATED_AT, direction: DESC}")
    frag = _HEAD_FRAGMENT[seg.kind]
    text = (f"{alias}: {_LIST_FIELD[seg.kind]}({', '.join(args)}) "
            f"{{ totalCount pageInfo {{ hasNextPage endCursor }} nodes {{ ...{frag} }} }}")
    if seg.probe:
        text += (f" o{alias[1:]}: {_LIST_FIELD[seg.kind]}(first: 1, orderBy: {{field: UPDATED_AT, direction: ASC}}) "
                 "{ nodes { number updatedAt } }")
    return text


def _fill_text(alias: str, fill: Fill, doc: _Doc) -> str:
    inner = []
    t = _TYPE[fill.kind]
    for page, prefix, sel in ((fill.labels, "L", _labels_sel), (fill.comments, "C", None)):
        if page is None:
            continue
        if page.after is None and page.first in FIRST_SIZES:
            doc.fragments.add(f"{prefix}{t}{page.first}")
            inner.append(f"...{prefix}{t}{page.first}")
        else:
            inner.append(sel(page.args()) if sel else _comments_sel(fill.kind, page.args()))
        if prefix == "C":
            doc.fragments.add("DCommentFields" if fill.kind == "discussion" else "CommentFields")
    if fill.tail is not None:
        doc.fragments.add("DCommentFields" if fill.kind == "discussion" else "CommentFields")
        inner.append(_comments_sel(fill.kind, fill.tail.args(), "ct: ", _TAIL_INFO))
    if fill.via_list:
        after = f", after: {_lit(fill.list_after)}" if fill.list_after else ""
        return (f"{alias}: {_LIST_FIELD[fill.kind]}(first: 1{after}, {_OLDEST_FIRST}) "
                f"{{ nodes {{ number {' '.join(inner)} }} }}")
    return f"{alias}: {_ONE_FIELD[fill.kind]}(number: {int(fill.number)}) {{ {' '.join(inner)} }}"


_OLDEST_FIRST = "orderBy: {field: CREATED_AT, direction: ASC}"


def build(plan: Plan) -> str:
    """The query text of ``plan`` (aliases ``r<i>``, ``l<j>``, ``f<j>``, ``w<j>``, ``n<j>`` in plan order)."""
    doc = _Doc()
    for i, b in enumerate(plan.blocks):
        inner = ["nameWithOwner hasIssuesEnabled hasDiscussionsEnabled"]
        for j, seg in enumerate(b.lists):
            doc.fragments.add(_HEAD_FRAGMENT[seg.kind])
            inner.append(_list_text(f"l{j}", seg))
        for j, fill in enumerate(b.fills):
            inner.append(_fill_text(f"f{j}", fill, doc))
        for j, loc in enumerate(b.locates):
            after = f", after: {_lit(loc.after)}" if loc.after else ""
            inner.append(f"k{j}: {_LIST_FIELD[loc.kind]}(first: {PAGE}{after}, {_OLDEST_FIRST}) "
                         f"{{ {_PAGE_INFO} edges {{ cursor node {{ number }} }} }}")
        for j, walk in enumerate(b.walks):
            doc.fragments.add("DCommentFields")
            after = f", after: {_lit(walk.after)}" if walk.after else ""
            r_after = f", after: {_lit(walk.replies_after)}" if walk.replies_after else ""
            sel = (f"comments(first: {int(walk.first)}{after}) {{ {_PAGE_INFO} edges {{ cursor node {{ id "
                   f"replies(first: {PAGE}{r_after}) {{ totalCount {_PAGE_INFO} nodes {{ ...DCommentFields }} }} }} }} }}")
            if walk.via_list:
                l_after = f", after: {_lit(walk.list_after)}" if walk.list_after else ""
                inner.append(f"w{j}: discussions(first: 1{l_after}, {_OLDEST_FIRST}) {{ nodes {{ number {sel} }} }}")
            else:
                inner.append(f"w{j}: discussion(number: {int(walk.number)}) {{ {sel} }}")
        doc.parts.append(f"r{i}: repository(owner: {_lit(b.owner)}, name: {_lit(b.name)}) {{\n    "
                         + "\n    ".join(inner) + "\n  }")
    for j, rep in enumerate(plan.replies):
        doc.fragments.add("DCommentFields")
        if rep.page == Page():
            doc.fragments.add("Replies")
            doc.parts.append(f"n{j}: node(id: {_lit(rep.comment_id)}) {{ ...Replies }}")
        else:
            doc.parts.append(f"n{j}: node(id: {_lit(rep.comment_id)}) {{ ... on DiscussionComment {{ "
                             f"replies({rep.page.args()}) {{ {_PAGE_INFO} nodes {{ ...DCommentFields }} }} }} }}")
    return ("query Mine {\n  " + RATE + "\n  " + "\n  ".join(doc.parts) + "\n}\n"
            + "".join(_FRAGMENTS[f] for f in sorted(doc.fragments)) + "\n")


def points_for(requests: int) -> int:
    """GitHub's charge for a query whose connections need ``requests`` requests."""
    return max(1, math.floor(requests / 100 + 0.5))


def plan_cost(plan: Plan) -> PlanCost:
    """The cost GitHub computes for :func:`build` (``plan``), without parsing the text."""
    requests = nodes = 0
    for b in plan.blocks:
        for seg in b.lists:
            requests += 1 + seg.probe
            nodes += seg.first + seg.probe
        for fill in b.fills:
            requests += fill.requests
            nodes += fill.nodes
        for walk in b.walks:
            requests += walk.requests
            nodes += walk.nodes
        requests += len(b.locates)
        nodes += PAGE * len(b.locates)
    for rep in plan.replies:
        requests += 1
        nodes += rep.page.first
    return PlanCost(requests, points_for(requests), nodes)


# ---------------------------------------------------------------------- repository metadata

REPO_FLAGS = """
  nameWithOwner stargazerCount isArchived hasIssuesEnabled hasDiscussionsEnabled"""
REPO_META_FIELDS = REPO_FLAGS + """
  issues { totalCount }
  pullRequests { totalCount }
  discussions { totalCount }
"""


def repo_meta_query(repos: list[tuple[str, str]], *, counts: bool = True) -> str:
    """Metadata for up to 100 repositories, one alias ``r<i>`` each (costs 1 point); without the
    issue/PR/discussion totals when not ``counts``."""
    fields = REPO_META_FIELDS if counts else REPO_FLAGS + "\n"
    parts = [
        f"r{i}: repository(owner: {_lit(o)}, name: {_lit(n)}) {{{fields}}}"
        for i, (o, n) in enumerate(repos)
    ]
    return "query RepoMeta {\n  " + RATE + "\n  " + "\n  ".join(parts) + "\n}\n"
