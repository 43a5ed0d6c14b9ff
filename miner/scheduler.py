"""The packing scheduler: many repositories' list pages and follow-ups share 1-point queries.

Work items (see :mod:`miner.queries`): *list segments* (1 request for up to 100 threads),
*fills* (a thread's labels/comments, 1 request per non-empty connection) and *replies*
(1 request per discussion comment with replies). The scheduler keeps up to
``concurrency`` queries in flight and dispatches work as soon as it exists (no phase
barriers): each query takes the ready list segments first (so the pipeline keeps
producing work) and then follow-ups, longest remaining chain of dependent rounds first
(the second and third comment pages of a long thread, a discussion's replies), until it
holds :data:`~miner.queries.QUERY_REQUESTS` requests. A query that is not full goes out
only when (a) nothing else is in flight, (b) it carries list segments and the queued
follow-ups cannot fill a query (a cold pipeline: its answers are the work), or (c) at
the tail, when every list is read and everything the queries in flight can still bring
back would fit in one query anyway, or (d) once every list is read, when it carries a
chain that needs more rounds after this one (a long thread's middle, a discussion whose
replies come next), one such query in flight at a time: the run's last rounds do not
wait to share queries. Otherwise it waits for the answers in flight, so almost every
query costs exactly 1 point for ~149 requests; each early flush costs at most one point
more than waiting, and (d) only happens in the last round trips of a run.

Commit semantics (what makes SIGKILL-resume exact): each list segment becomes a *page*;
a page is committed, in one transaction with the (repository, kind) checkpoint that
points past it, once all its threads are complete, and pages of one list are committed
strictly in order. A killed run resumes from the last committed page.

Failure handling: a 502/504 (after the client's own retries) lowers the node budget to half
the failed query's weight and its work is packed again under it; a query already within the
budget is split in two, by repository first; a single list segment halves its page size. The
lowered sizes grow back after answers (:class:`_Size`), and a checkpoint keeps the last page
size answered in full. A repository whose own smallest query still fails is marked
``failed`` (re-run to retry) without holding up the others.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from miner import queries as Q
from miner.convert import comment_from_gql, parse_time, thread_from_gql
from miner.graphql_client import GatewayError, GraphQLClient, GraphQLFailure, error_type
from reprodiag.schema import Thread, thread_id
from reprodiag.store import Checkpoint, Store, UpsertCounts

_GONE = {"NOT_FOUND": "not found (404)", "FORBIDDEN": "forbidden", "UNAUTHORIZED": "no access"}
#: Ready list segments never make a query "full" on their own; at most this many thread nodes per query.
LIST_NODES = 600
#: Thread nodes of list segments in a query sent while the follow-up queue is too short to fill one.
LIST_BURST_NODES = 3000
#: Stop listing further pages while this many follow-up requests per query slot are queued (bounds memory).
LOOKAHEAD_REQUESTS = Q.QUERY_REQUESTS
#: Repositories listed at the same time (default; see ``ClientSettings.repos_at_once``).
MAX_ACTIVE = 64
#: First page size of a pull-request/discussion list on an incremental pass (DESC, stops at the old).
INCREMENTAL_FIRST = 20
#: Starting node budget per query; halved on each 502/504 of a packed query, doubled back after answers.
NODE_BUDGET = 20_000
MIN_NODE_BUDGET = 500
#: Most answers in a row a lowered size waits for before it doubles again (see :class:`_Size`).
MAX_RECOVER_WAIT = 64
MAX_TRIES = 3
#: Follow-up requests the queries in flight may still bring back when that is unknown (a list page).
_UNBOUNDED = 1 << 30
_LIST_FIELDS = {"issue": "issues", "pull_request": "pullRequests", "discussion": "discussions"}
DISABLED = {"issue": "issues disabled", "discussion": "discussions disabled"}


def later(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if parse_time(a) >= parse_time(b) else b  # type: ignore[operator]


@dataclass
class _Size:
    """A size lowered on GitHub timeouts that grows back: a page size, a query's node budget.

    :meth:`lower` sets it to at most ``to`` (not below ``floor``); after ``wait`` answers in a row it
    doubles (not above ``top``). A timeout right after such a doubling doubles ``wait`` (up to
    :data:`MAX_RECOVER_WAIT`), so a size that really is too heavy is tried again less and less
    often, while a timeout now and then (GitHub's gateway also fails on light queries) costs a few
    smaller queries, not the rest of the crawl."""

    top: int
    floor: int
    now: int
    wait: int = 2
    calm: int = 0
    #: The size grew since the last timeout (a timeout now says the larger size is too heavy).
    grew: bool = False
    #: The last size answered in full (or lowered to): what a checkpoint keeps, never a size not yet tried.
    safe: int = 0

    def __post_init__(self) -> None:
        self.now = max(self.floor, min(self.now, self.top))
        self.safe = self.safe or self.now

    def lower(self, to: int) -> None:
        self.now = self.safe = max(self.floor, min(self.now, to))
        self.calm = 0
        if self.grew:
            self.wait = min(MAX_RECOVER_WAIT, self.wait * 2)
            self.grew = False

    def answered(self, full: bool = True) -> None:
        """One answer at this size (``full``: it asked the whole size, so it says the size works)."""
        if not full:
            return
        self.safe = self.now
        if self.now >= self.top:
            return
        self.calm += 1
        if self.calm >= self.wait:
            self.now = min(self.top, self.now * 2)
            self.calm = 0
            self.grew = True


@dataclass(eq=False)
class _CommentDraft:
    node: dict[str, Any]
    replies: list[dict[str, Any]] = field(default_factory=list)


@dataclass(eq=False)
class _Draft:
    """A thread being completed: its list node plus labels and comments fetched so far.

    ``comments`` are read forwards from the first; ``tail`` backwards from the last (a long
    thread read from both ends), each in chronological order; ``by_id`` holds every comment
    once, whichever end brought it."""

    node: dict[str, Any]
    labels: list[str] = field(default_factory=list)
    comments: list[_CommentDraft] = field(default_factory=list)
    tail: list[_CommentDraft] = field(default_factory=list)
    by_id: dict[str, _CommentDraft] = field(default_factory=dict)
    gone: bool = False

    def all_comments(self) -> list[_CommentDraft]:
        """Forward comments, then the tail's that the forward pages did not reach (chronological)."""
        if not self.tail:
            return self.comments
        head = {id(c) for c in self.comments}
        return self.comments + [c for c in self.tail if id(c) not in head]


@dataclass(eq=False)
class _Page:
    lst: _List
    drafts: list[_Draft]
    checkpoint: Checkpoint
    open: int = 0


@dataclass(eq=False)
class _List:
    repo: _Repo
    kind: str
    hw: str | None
    cursor: str | None
    run_hw: str | None
    #: Threads per page (halved on a timeout of this list's page alone, grows back; kept in the checkpoint).
    size: _Size
    started: bool = False
    busy: bool = False
    exhausted: bool = False
    listed: int = 0
    from_start: bool = True
    remaining: int | None = None
    pages: deque[_Page] = field(default_factory=deque)
    #: Answers with an error on this list's page so far (it fails the repository at MAX_TRIES).
    tries: int = 0
    #: The server was seen to honour ``orderBy`` on this incremental DESC pass (see :meth:`Scheduler._take_list`).
    ordered: bool = False
    #: Issues: ``updatedAt`` each thread had when first listed in this run's pass (by number), and the
    #: earliest such time of a thread listed twice (see :meth:`Scheduler._take_list`).
    first_seen: dict[int, str] = field(default_factory=dict)
    moved_from: str | None = None
    #: The server failed on the order probe: ask none (the pass then reads the list to its end).
    no_probe: bool = False
    #: Threads the page in flight asked for.
    asked: int = 0

    @property
    def page_size(self) -> int:
        return self.size.now

    def next_first(self) -> int:
        if self.remaining is not None:
            return max(1, min(self.page_size, self.remaining))
        if self.kind != "issue" and self.hw and self.cursor is None:
            return min(self.page_size, INCREMENTAL_FIRST)
        return self.page_size

    def segment(self) -> Q.ListSeg:
        self.asked = self.next_first()
        probe = self.kind != "issue" and bool(self.hw) and self.cursor is None and not self.no_probe
        return Q.ListSeg(self.kind, self.asked, self.cursor, self.hw if self.kind == "issue" else None,
                         probe=probe)


@dataclass
class RepoResult:
    """How one repository ended: ``status`` done/skipped/failed, ``note`` (disabled kinds, error)."""

    requested: str
    name: str
    status: str
    threads: int = 0
    points: int = 0
    requests: int = 0
    note: str | None = None
    upserts: UpsertCounts = field(default_factory=UpsertCounts)
    halvings: int = 0


@dataclass(eq=False)
class _Repo:
    requested: str
    name: str
    kinds: tuple[str, ...]
    lists: dict[str, _List] = field(default_factory=dict)
    state: str = "new"
    points: float = 0.0
    requests: int = 0
    halvings: int = 0
    upserts: UpsertCounts = field(default_factory=UpsertCounts)
    disabled: list[str] = field(default_factory=list)
    #: Answers whose repository block was nulled by an error below it (see ``Scheduler._block_lost``).
    lost: int = 0

    @property
    def owner_name(self) -> tuple[str, str]:
        o, n = self.name.split("/", 1)
        return o, n


def _pages(left: int | None, page: Q.Page | None) -> int:
    """Dependent requests still needed for a connection with ``left`` items (None: unknown, at least one)."""
    if page is None:
        return 0
    if left is None:
        return 1
    return max(1, math.ceil(left / page.first))


def _more(left: int | None, page: Q.Page | None) -> int:
    """1 when the answer to ``page`` may call for another page of the connection."""
    if page is None:
        return 0
    return 1 if left is None or left > page.first else 0


#: Comments (known from ``totalCount``) above which a thread is read from both ends.
BOTH_ENDS = Q.PAGE


def _tail_for(gap: int) -> Q.TailPage | None:
    """The backward page to ask with a forward page of 100 when ``gap`` comments lie between the ends.

    Sized so the two windows overlap by one comment when they can cover the gap (the overlap is the
    proof, by id, that they met); None when the forward page alone reaches the tail."""
    if gap < Q.PAGE:
        return None
    return Q.TailPage(None, min(Q.PAGE, gap - Q.PAGE + 1))


@dataclass(eq=False)
class _FillWork:
    """``labels_left``/``comments_left``: items not fetched yet, from ``totalCount`` (None: not said)."""

    page: _Page
    draft: _Draft
    fill: Q.Fill
    labels_left: int | None = None
    comments_left: int | None = None
    tries: int = 0
    #: Reading from both ends is allowed (off after an answer that did not look like a backward page).
    both_ends: bool = True
    #: Cursor before the tail's first comment (None with ``tail_started``: the tail reached the start).
    tail_before: str | None = None
    tail_started: bool = False

    @property
    def repo(self) -> _Repo:
        return self.page.lst.repo

    @property
    def requests(self) -> int:
        return self.fill.requests

    @property
    def nodes(self) -> int:
        return self.fill.nodes

    @property
    def depth(self) -> int:
        """Dependent rounds left for this thread (a discussion's replies come one round after its comments)."""
        f = self.fill
        reply_round = 1 if f.kind == "discussion" and f.comments is not None else 0
        comment_rounds = _pages(self.comments_left, f.comments)
        if f.tail is not None and self.comments_left is not None:
            # each round reads 100 from each end; the last one needs an overlap of one comment
            comment_rounds = max(1, math.ceil((self.comments_left + 1) / (2 * Q.PAGE)))
        return max(_pages(self.labels_left, f.labels), comment_rounds + reply_round)

    @property
    def bound(self) -> int:
        """Most follow-up requests its answer can add (a discussion comment page: one reply page per comment)."""
        f = self.fill
        out = _more(self.labels_left, f.labels) + _more(self.comments_left, f.comments)
        if f.tail is not None:
            out += 1
        if f.kind == "discussion" and f.comments is not None:
            per_round = f.comments.first + (f.tail.last if f.tail else 0)
            out += per_round if self.comments_left is None else min(per_round, self.comments_left)
        return out


@dataclass(eq=False)
class _ReplyWork:
    """``left``: replies not fetched yet (None: not said); ``number``: the discussion's (for a :class:`_WalkWork`)."""

    page: _Page
    comment: _CommentDraft
    replies: Q.Replies
    left: int | None = None
    tries: int = 0
    requests: int = 1
    number: int | None = None
    #: The discussion is read through its list (no single-thread lookups), after this cursor.
    via_list: bool = False
    list_after: str | None = None

    @property
    def repo(self) -> _Repo:
        return self.page.lst.repo

    @property
    def nodes(self) -> int:
        return self.replies.page.first

    @property
    def depth(self) -> int:
        return _pages(self.left, self.replies.page)

    @property
    def bound(self) -> int:
        return _more(self.left, self.replies.page)


@dataclass(eq=False)
class _WalkWork:
    """Replies of ``targets`` (comment id → its reply work) read through their discussion, window by window
    (a server that cannot look comments up by ``node(id:)``). The targets hold the page's open counts."""

    page: _Page
    walk: Q.ReplyWalk
    targets: dict[str, _ReplyWork] = field(default_factory=dict)
    tries: int = 0
    started: bool = False

    @property
    def repo(self) -> _Repo:
        return self.page.lst.repo

    @property
    def requests(self) -> int:
        return self.walk.requests

    @property
    def nodes(self) -> int:
        return self.walk.nodes

    @property
    def depth(self) -> int:
        return 2

    @property
    def bound(self) -> int:
        """The next window, and a further page of replies for each comment of this one."""
        return self.walk.requests + 2 * self.walk.first


@dataclass(eq=False)
class _LocateWork:
    """Cursors of ``targets`` (thread number → its fill) in their list, read 100 numbers at a time (a server
    without single-thread lookups); found fills go on as one-thread windows of the list."""

    repo: _Repo
    locate: Q.Locate
    targets: dict[int, _FillWork] = field(default_factory=dict)
    tries: int = 0
    started: bool = False
    requests: int = 1

    @property
    def nodes(self) -> int:
        return Q.PAGE

    @property
    def depth(self) -> int:
        return 3

    @property
    def bound(self) -> int:
        return 1 + sum(w.requests + 1 for w in self.targets.values())


_Work = _FillWork | _ReplyWork | _WalkWork | _LocateWork


class _WorkQueue:
    """Queued follow-ups by the dependent rounds they still need; the longest chains go first (they set the
    tail of a run), first in first out within a depth."""

    def __init__(self) -> None:
        self._levels: dict[int, deque[_Work]] = {}
        self.requests = 0

    def __bool__(self) -> bool:
        return self.requests > 0

    def push(self, w: _Work) -> None:
        self._levels.setdefault(w.depth, deque()).append(w)
        self.requests += w.requests

    def push_front(self, items: list[_Work]) -> None:
        """Put back items taken by :meth:`take` (in the order they were taken)."""
        for w in reversed(items):
            self._levels.setdefault(w.depth, deque()).appendleft(w)
            self.requests += w.requests

    def take(self, fits: Callable[[_Work], bool], keep: Callable[[_Work], bool]) -> list[_Work]:
        """Items in priority order while ``fits`` (stops at the first that does not); drops those not ``keep``."""
        took: list[_Work] = []
        for depth in sorted(self._levels, reverse=True):
            level = self._levels[depth]
            while level:
                w = level[0]
                if not keep(w):
                    level.popleft()
                    self.requests -= w.requests
                    continue
                if not fits(w):
                    return took
                level.popleft()
                self.requests -= w.requests
                took.append(w)
        return took


@dataclass(eq=False)
class _Batch:
    """One query's work: per repository block its list segments and fills, then top-level reply pages."""

    repos: list[_Repo] = field(default_factory=list)
    lists: list[list[_List]] = field(default_factory=list)
    fills: list[list[_FillWork]] = field(default_factory=list)
    replies: list[_ReplyWork] = field(default_factory=list)
    walks: list[list[_WalkWork]] = field(default_factory=list)
    locates: list[list[_LocateWork]] = field(default_factory=list)
    #: Sent before it was full by rule (d) of the module doc.
    early: bool = False

    def block(self, repo: _Repo) -> int:
        for i, r in enumerate(self.repos):
            if r is repo:
                return i
        self.repos.append(repo)
        self.lists.append([])
        self.fills.append([])
        self.walks.append([])
        self.locates.append([])
        return len(self.repos) - 1

    def add(self, w: _Work) -> None:
        if isinstance(w, _FillWork):
            self.fills[self.block(w.repo)].append(w)
        elif isinstance(w, _WalkWork):
            w.started = True
            self.walks[self.block(w.repo)].append(w)
        elif isinstance(w, _LocateWork):
            w.started = True
            self.locates[self.block(w.repo)].append(w)
        else:
            self.replies.append(w)

    def plan(self) -> Q.Plan:
        blocks = tuple(
            Q.RepoBlock(*r.owner_name, lists=tuple(lst.segment() for lst in ls), fills=tuple(f.fill for f in fs),
                        walks=tuple(w.walk for w in ws), locates=tuple(k.locate for k in ks))
            for r, ls, fs, ws, ks in zip(self.repos, self.lists, self.fills, self.walks, self.locates, strict=True))
        return Q.Plan(blocks, tuple(w.replies for w in self.replies))

    def bound(self) -> int:
        """Most follow-up requests its answer can add (unbounded while it reads a list)."""
        if any(self.lists):
            return _UNBOUNDED
        return (sum(w.bound for fs in self.fills for w in fs) + sum(w.bound for w in self.replies)
                + sum(w.bound for ws in self.walks for w in ws) + sum(k.bound for ks in self.locates for k in ks))

    def involved(self) -> list[_Repo]:
        out = list(self.repos)
        for w in self.replies:
            if all(r is not w.repo for r in out):
                out.append(w.repo)
        return out

    def split(self) -> list[_Batch]:
        """Two halves: by repository block when there are several, else by work item (lists stay together)."""
        units: list[Any] = []
        for i, r in enumerate(self.repos):
            if self.lists[i]:
                units.append((r, self.lists[i]))
            units.extend(self.fills[i])
            units.extend(self.walks[i])
            units.extend(self.locates[i])
        units.extend(self.replies)
        if len(units) < 2:
            return [self]
        by_repo = len(self.repos) > 1
        cut = len(self.repos) // 2 if by_repo else len(units) // 2
        halves = ([u for u in units if _unit_repo(u) in self.repos[:cut]],
                  [u for u in units if _unit_repo(u) not in self.repos[:cut]]) if by_repo \
            else (units[:cut], units[cut:])
        out = []
        for part in halves:
            b = _Batch()
            for u in part:
                if isinstance(u, tuple):
                    b.lists[b.block(u[0])].extend(u[1])
                else:
                    b.add(u)
            if b.repos or b.replies:
                out.append(b)
        return out


def _unit_repo(u: Any) -> _Repo:
    return u[0] if isinstance(u, tuple) else u.repo


def _error_type(errors: list[dict[str, Any]], *path: str) -> str | None:
    """The GitHub error type reported at ``path`` (or below it); "" when there is an untyped error."""
    for e in errors:
        p = e.get("path") or []
        if tuple(p[:len(path)]) == path:
            return error_type(e)
    return None


class Scheduler:
    """Mine ``repos`` (``(requested, name)`` pairs) over one :class:`GraphQLClient`; see the module doc."""

    def __init__(self, store: Store, gh: GraphQLClient, repos: Sequence[tuple[str, str]], kinds: Sequence[str],
                 *, concurrency: int, max_active: int = MAX_ACTIVE) -> None:
        self.store = store
        self.max_active = max(1, max_active)
        self.gh = gh
        self.kinds = tuple(kinds)
        self.concurrency = max(1, concurrency)
        self.waiting: deque[_Repo] = deque(_Repo(req, name, self.kinds) for req, name in repos)
        self.active: list[_Repo] = []
        self.by_name: dict[str, _Repo] = {}
        self.work = _WorkQueue()
        #: Nodes one query may ask for (lowered on timeouts, grows back).
        self.budget = _Size(NODE_BUDGET, MIN_NODE_BUDGET, NODE_BUDGET)
        #: Sum of :meth:`_Batch.bound` over the queries in flight.
        self.inflight_bound = 0
        #: Queries in flight sent early by rule (d) (at most one).
        self.early_inflight = 0
        #: Comments found by ``node(id:)`` in this run (0: the server may not offer that lookup).
        self.node_ok = 0
        #: Walks through discussions for replies, by (page, discussion number).
        self.walkers: dict[tuple[int, int], _WalkWork] = {}
        #: Threads found by ``issue(number:)`` (and the like) in this run (0: the server may not offer it).
        self.lookup_ok = 0
        #: Searches of lists for thread cursors, by (repository, kind).
        self.locators: dict[tuple[int, str], _LocateWork] = {}
        self.results: list[RepoResult] = []
        #: Called after each repository's result is appended (the caller records it at once).
        self.on_result: Callable[[], None] | None = None
        #: Long comment lists are also read backwards (``last``/``before``); off once the server refuses that.
        self.backwards = True

    # ------------------------------------------------------------------ activation

    def _activate(self, repo: _Repo) -> None:
        repo.state = "active"
        for kind in self.kinds:
            cp = self.store.get_checkpoint(repo.name, kind) or Checkpoint(repo.name, kind)
            cursor, run_hw = (None, None) if cp.complete else (cp.cursor, cp.run_high_water)
            repo.lists[kind] = _List(repo, kind, cp.high_water, cursor, run_hw,
                                     _Size(Q.PAGE, Q.MIN_PAGE, cp.page_size or Q.PAGE),
                                     from_start=cursor is None)
        self.active.append(repo)
        self.by_name[repo.name.lower()] = repo

    def _ready_lists(self) -> list[list[_List]]:
        """Ready list segments, grouped per repository."""
        self.active = [r for r in self.active if r.state == "active"]
        out: list[list[_List]] = []
        for repo in self.active:
            ready = [lst for lst in repo.lists.values() if not lst.busy and not lst.exhausted]
            if ready:
                out.append(ready)
        return out

    def _activate_more(self) -> None:
        """Open waiting repositories while the ready list segments run low.

        No separate probe round: a first list page says as much as a probe (canonical name, enabled
        kinds, ``totalCount``), one round trip sooner."""
        want = max(LIST_BURST_NODES, LIST_NODES * self.concurrency)
        ready = sum(lst.next_first() for ls in self._ready_lists() for lst in ls)
        while self.waiting and len(self.active) < self.max_active and ready < want:
            repo = self.waiting.popleft()
            if repo.name.lower() in self.by_name:
                self._duplicate(repo, self.by_name[repo.name.lower()].name)
                continue
            self._activate(repo)
            ready += sum(lst.next_first() for lst in repo.lists.values())

    def _lists_open(self) -> bool:
        """Some list is not read to its end yet (its pages will bring more threads)."""
        return bool(self.waiting) or any(not lst.exhausted or lst.busy for r in self.active if r.state == "active"
                                         for lst in r.lists.values())

    # ------------------------------------------------------------------ building queries

    def _build(self, inflight: int) -> _Batch | None:
        """The next query: ready list segments, then follow-ups up to 149 requests; None to wait.

        ``inflight``: queries in flight now. When the query would not be full it is only built in the
        cases (a)-(c) of the module doc."""
        self._activate_more()
        ready = self._ready_lists()
        batch = _Batch()
        requests = nodes = 0
        starving = self.work.requests < Q.QUERY_REQUESTS
        if self.work.requests < LOOKAHEAD_REQUESTS * max(8, self.concurrency):
            cap = LIST_BURST_NODES if starving else LIST_NODES
            list_nodes = 0
            for ls in ready:
                want = sum(lst.next_first() for lst in ls)
                if list_nodes and (list_nodes + want > cap or nodes + want > self.budget.now):
                    continue
                batch.lists[batch.block(ls[0].repo)].extend(ls)
                requests += len(ls)
                nodes += want
                list_nodes += want
                if list_nodes >= cap or requests >= Q.QUERY_REQUESTS:
                    break

        def fits(w: _Work) -> bool:
            nonlocal requests, nodes
            if requests + w.requests > Q.QUERY_REQUESTS or (requests and nodes + w.nodes > self.budget.now):
                return False
            requests += w.requests
            nodes += w.nodes
            return True

        took = self.work.take(fits, lambda w: w.repo.state == "active")
        if requests == 0:
            return None
        full = requests >= Q.QUERY_REQUESTS - 1 or nodes >= self.budget.now * 0.9 or bool(self.work)
        early = False
        if not full and inflight:
            lists_read = not self._lists_open()
            tail = lists_read and self.work.requests + requests + self.inflight_bound < Q.QUERY_REQUESTS
            # (d) the run's last chains: once every list is read, a chain that needs more rounds after this
            # one goes now rather than waiting to share a query; one such query in flight at a time
            early = lists_read and not self.early_inflight and any(w.depth >= 2 for w in took)
            if not (any(batch.lists) or tail or early):
                self.work.push_front(took)
                return None
        batch.early = early and not any(batch.lists)
        for w in took:
            batch.add(w)
        for ls in batch.lists:
            for lst in ls:
                lst.busy = True
        return batch

    # ------------------------------------------------------------------ running

    async def run(self) -> list[RepoResult]:
        """Run until every repository is done, skipped or failed; returns one result per repository."""
        inflight: set[asyncio.Task[None]] = set()
        try:
            while True:
                while len(inflight) < self.concurrency:
                    batch = self._build(len(inflight))
                    if batch is None:
                        break
                    inflight.add(asyncio.create_task(self._dispatch(batch)))
                if not inflight:
                    break
                done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    inflight.discard(t)
                    t.result()
        finally:
            for t in inflight:
                t.cancel()
            if inflight:
                await asyncio.gather(*inflight, return_exceptions=True)
        for repo in self.active:
            self._fail(repo, "mining stopped before this repository was complete")
        return self.results

    async def _dispatch(self, batch: _Batch) -> None:
        bound = batch.bound()
        self.inflight_bound += bound
        self.early_inflight += batch.early
        try:
            await self._run(batch)
        finally:
            self.inflight_bound -= bound
            self.early_inflight -= batch.early

    async def _run(self, batch: _Batch) -> None:
        plan = batch.plan()
        cost = Q.plan_cost(plan)
        try:
            ans = await self.gh.query(Q.build(plan), heavy=cost.nodes > Q.MIN_PAGE)
        except GatewayError:
            await self._gateway(batch, cost)
            return
        except GraphQLFailure as exc:
            if self._forwards_only(batch):  # a server that refuses ``last``/``before``: the same work forwards
                await self._run(batch)
                return
            lookups = [w for fs in batch.fills for w in fs if not w.fill.via_list]
            if lookups and not self.lookup_ok:  # a server without ``issue(number:)``: threads through their lists
                for w in lookups:
                    self._locate(w)
                batch.fills = [[w for w in fs if w.fill.via_list] for fs in batch.fills]
                if any(batch.lists) or any(batch.fills) or batch.replies or any(batch.walks) or any(batch.locates):
                    await self._run(batch)
                return
            if batch.replies and not self.node_ok:  # a server without ``node(id:)``: replies through discussions
                for w in batch.replies:
                    self._walk_for(w)
                batch.replies = []
                if batch.repos:
                    await self._run(batch)
                return
            if len(batch.involved()) > 1:
                await asyncio.gather(*(self._run(p) for p in batch.split()))
                return
            for repo in batch.involved():
                self._fail(repo, str(exc)[:300])
            return
        self.budget.answered(full=cost.nodes * 2 >= self.budget.now)  # an answer near the budget: it may grow
        self._charge(batch, ans.cost)
        self._absorb(batch, ans.data, ans.errors)

    def _forwards_only(self, batch: _Batch) -> bool:
        """Drop the backward pages of ``batch`` (and ask none from now on); False when it had none."""
        fills = [w for fs in batch.fills for w in fs if w.fill.tail is not None]
        if fills:
            self.backwards = False
        for w in fills:
            w.both_ends = False
            w.fill = replace(w.fill, tail=None)
        return bool(fills)

    async def _gateway(self, batch: _Batch, cost: Q.PlanCost) -> None:
        """GitHub timed out (502/504): ask for less (lower the node budget, split the query, halve pages).

        A query heavier than the lowered budget gives its work back to be packed again under it (split
        parts sent as they are would each cost a point); one already within it is split, by repository
        first, so a repository whose own query keeps failing is found without holding up the others."""
        self.budget.lower(cost.nodes // 2)
        for r in batch.involved():
            r.halvings += 1
        parts = batch.split()
        if cost.nodes > self.budget.now and len(parts) > 1:
            for ls in batch.lists:
                for lst in ls:
                    lst.busy = False
            self.work.push_front([w for fs in batch.fills for w in fs] + [w for ws in batch.walks for w in ws]
                                 + [w for ks in batch.locates for w in ks] + list(batch.replies))
            return
        if len(parts) > 1:
            await asyncio.gather(*(self._run(p) for p in parts))
            return
        lists = [lst for ls in batch.lists for lst in ls]
        if any(lst.next_first() > Q.MIN_PAGE for lst in lists):
            for lst in lists:
                lst.size.lower(lst.next_first() // 2)
                lst.remaining = None
            await self._run(batch)
            return
        smaller = False
        for ww in [w for ws in batch.walks for w in ws]:
            smaller = smaller or ww.walk.first > 1
            ww.walk = replace(ww.walk, first=max(1, ww.walk.first // 2))
        for w in [w for fs in batch.fills for w in fs] + list(batch.replies):
            if isinstance(w, _FillWork):
                f = w.fill
                lab = f.labels and replace(f.labels, first=_half(f.labels.first))
                com = f.comments and replace(f.comments, first=_half(f.comments.first))
                smaller = smaller or lab != f.labels or com != f.comments or f.tail is not None
                if f.tail is not None:  # lighter: forwards only from here
                    w.both_ends = False
                w.fill = replace(f, labels=lab, comments=com, tail=None)
            else:
                p = w.replies.page
                smaller = smaller or p.first > Q.MIN_PAGE
                w.replies = replace(w.replies, page=replace(p, first=_half(p.first)))
        if smaller:
            await self._run(batch)
            return
        for repo in batch.involved():
            self._fail(repo, "GitHub kept timing out (502/504) even on the smallest query")

    def _charge(self, batch: _Batch, points: int) -> None:
        """Attribute the query's points to its repositories by their share of its requests."""
        share: dict[int, list[Any]] = {}
        for r, ls, fs, ws, ks in zip(batch.repos, batch.lists, batch.fills, batch.walks, batch.locates, strict=True):
            share[id(r)] = [r, len(ls) + sum(f.requests for f in fs) + sum(w.requests for w in ws) + len(ks)]
        for w in batch.replies:
            share.setdefault(id(w.repo), [w.repo, 0])[1] += 1
        total = max(1, sum(n for _r, n in share.values()))
        for r, n in share.values():
            r.points += points * n / total
            r.requests += 1

    # ------------------------------------------------------------------ answers

    def _absorb(self, batch: _Batch, data: dict[str, Any], errors: list[dict[str, Any]]) -> None:
        for i, repo in enumerate(batch.repos):
            for lst in batch.lists[i]:
                lst.busy = False
            if repo.state != "active":
                continue
            block = data.get(f"r{i}")
            if block is None and any(len(e.get("path") or ()) > 1 and (e.get("path") or [None])[0] == f"r{i}"
                                     for e in errors):
                # the repository exists; an error inside it (a disabled feature, a deleted thread) nulled the
                # whole block: settle the items that failed, send the others again
                self._block_lost(repo, batch, i, errors)
                continue
            if block is None:
                kind = _error_type(errors, f"r{i}")
                msg = next((str(e.get("message")) for e in errors if (e.get("path") or [None])[0] == f"r{i}"),
                           "no data")
                if kind in _GONE and not any(lst.started for lst in repo.lists.values()):
                    self._skip(repo, _GONE[kind])
                else:
                    self._fail(repo, f"repository unavailable: {' '.join(msg.split())[:200]}")
                continue
            self._canonical(repo, block.get("nameWithOwner"))
            if repo.state != "active":
                continue
            for j, lst in enumerate(batch.lists[i]):
                conn = block.get(f"l{j}")
                if conn is None and not self._list_error(lst, errors, f"r{i}", f"l{j}"):
                    continue
                self._take_list(lst, block, conn, block.get(f"o{j}"))
            for j, w in enumerate(batch.fills[i]):
                if repo.state != "active":
                    break
                ans = block.get(f"f{j}")
                if w.fill.via_list:
                    self._take_list_window(w, ans, _error_type(errors, f"r{i}", f"f{j}"))
                else:
                    self._take_fill(w, ans, _error_type(errors, f"r{i}", f"f{j}"))
            for j, lw in enumerate(batch.locates[i]):
                if repo.state == "active":
                    self._take_locate(lw, block.get(f"k{j}"), _error_type(errors, f"r{i}", f"k{j}"))
            for j, ww in enumerate(batch.walks[i]):
                if repo.state == "active":
                    self._take_walk(ww, block.get(f"w{j}"), _error_type(errors, f"r{i}", f"w{j}"))
        for j, w in enumerate(batch.replies):
            if w.repo.state == "active":
                self._take_replies(w, data.get(f"n{j}"), _error_type(errors, f"n{j}"))
        for repo in batch.involved():
            if repo.state == "active":
                for lst in repo.lists.values():
                    self._commit_ready(lst)

    def _list_error(self, lst: _List, errors: list[dict[str, Any]], *path: str) -> bool:
        """A list page came back null: True to treat it as before (no error said why).

        An error on the first page of a list whose type says the feature is off or out of reach
        (``FORBIDDEN``, ``NOT_FOUND``, or a message saying "disabled") marks that kind unavailable for the
        repository; any other error leaves the page to be asked again (the repository fails after
        :data:`MAX_TRIES`)."""
        kind = _error_type(errors, *path)
        if kind is None:
            return True
        msg = next((" ".join(str(e.get("message") or "").split()) for e in errors
                    if tuple((e.get("path") or [])[:len(path)]) == path), "")
        repo = lst.repo
        if not lst.started and (kind in _GONE or "disabled" in msg.lower()):
            lst.started = lst.exhausted = True
            repo.disabled.append(DISABLED.get(lst.kind) or f"{_LIST_FIELDS[lst.kind]} unavailable: {msg[:120]}")
            return False
        lst.tries += 1
        if lst.tries >= MAX_TRIES:
            self._fail(repo, f"GitHub kept failing on the {_LIST_FIELDS[lst.kind]} list ({kind or msg[:120]})")
        return False

    def _block_lost(self, repo: _Repo, batch: _Batch, i: int, errors: list[dict[str, Any]]) -> None:
        """Repository block ``r<i>`` is null because of errors below it: settle each item by its own error."""
        repo.lost += 1
        if repo.lost > 4 * MAX_TRIES:
            msg = next((str(e.get("message")) for e in errors if (e.get("path") or [None])[0] == f"r{i}"), "")
            self._fail(repo, f"GitHub kept failing inside the repository: {' '.join(msg.split())[:200]}")
            return
        for j, lst in enumerate(batch.lists[i]):
            if _error_type(errors, f"r{i}", f"o{j}") is not None:
                lst.no_probe = True
            self._list_error(lst, errors, f"r{i}", f"l{j}")
        for j, w in enumerate(batch.fills[i]):
            err = _error_type(errors, f"r{i}", f"f{j}")
            if err is None:
                self.work.push(w)  # collateral: asked again, not a failed try
            elif repo.state == "active":
                self._take_fill(w, None, err)
        for lw in batch.locates[i]:
            self.work.push(lw)
        for j, ww in enumerate(batch.walks[i]):
            err = _error_type(errors, f"r{i}", f"w{j}")
            if err is None:
                self.work.push(ww)
            elif repo.state == "active":
                self._take_walk(ww, None, err)

    def _canonical(self, repo: _Repo, name: str | None) -> None:
        """GitHub answers for a renamed repository under its new ``nameWithOwner``: use that name."""
        if not name or name == repo.name:
            return
        other = self.by_name.get(name.lower())
        if other is not None and other is not repo:
            self._duplicate(repo, other.name)
            return
        self.by_name.pop(repo.name.lower(), None)
        repo.name = name
        self.by_name[name.lower()] = repo

    def _take_list(self, lst: _List, block: dict[str, Any], conn: dict[str, Any] | None,
                   probe: dict[str, Any] | None = None) -> None:
        repo = lst.repo
        if not lst.started:
            lst.started = True
            flag = {"issue": "hasIssuesEnabled", "discussion": "hasDiscussionsEnabled"}.get(lst.kind)
            if flag and block.get(flag) is False:
                repo.disabled.append(DISABLED[lst.kind])
                lst.exhausted = True
                return
        if conn is None:
            self._fail(repo, f"GitHub sent no {lst.kind} list")
            return
        nodes = [n for n in (conn.get("nodes") or []) if isinstance(n, dict)]
        keep, stop = nodes, False
        for n in nodes:
            lst.run_hw = later(lst.run_hw, n["updatedAt"])
        if lst.kind == "issue":
            # a thread listed twice in one ASC pass was updated meanwhile and moved to the end; with offset
            # cursors (not keyset ones) everything after its old place shifted by one, so a thread may have
            # been passed over: the next pass starts again from where it first was (a few threads re-read)
            for n in nodes:
                num, upd = int(n["number"]), str(n["updatedAt"])
                if num in lst.first_seen:
                    was = lst.first_seen[num]
                    lst.moved_from = was if lst.moved_from is None or parse_time(was) < parse_time(lst.moved_from) \
                        else lst.moved_from  # type: ignore[operator]
                else:
                    lst.first_seen[num] = upd
        if lst.kind != "issue" and lst.hw:
            # newest first: the first thread older than the high-water mark ends the pass (a server that
            # ignores orderBy is read to the end instead: nothing older is kept, nothing newer is missed)
            cut = parse_time(lst.hw)
            times = [parse_time(n["updatedAt"]) for n in nodes]
            keep = [n for n, t in zip(nodes, times, strict=True) if t >= cut]  # type: ignore[operator]
            if probe is not None:
                lst.ordered = _honours_order(nodes, probe)
            newest_first = all(a >= b for a, b in zip(times, times[1:], strict=False))  # type: ignore[operator]
            stop = lst.ordered and newest_first and len(keep) < len(nodes)
        info = conn.get("pageInfo") or {}
        done = stop or not info.get("hasNextPage")
        if not done and (not info.get("endCursor") or info.get("endCursor") == lst.cursor):
            self._fail(repo, f"GitHub's {_LIST_FIELDS[lst.kind]} list did not advance (hasNextPage without a new "
                             "endCursor)")
            return
        end = info.get("endCursor") or lst.cursor
        lst.listed += len(nodes)
        total = conn.get("totalCount")
        exact = lst.from_start and (lst.kind == "issue" or not lst.hw)
        lst.remaining = total - lst.listed if exact and isinstance(total, int) and total > lst.listed else None
        cp = Checkpoint(repo.name, lst.kind, cursor=None if done else end,
                        high_water=(lst.moved_from or later(lst.hw, lst.run_hw)) if done else lst.hw,
                        run_high_water=None if done else lst.run_hw, complete=done, page_size=lst.size.safe)
        lst.size.answered(full=lst.asked >= lst.page_size)
        page = _Page(lst, [], cp)
        stored = self._stored_updated(repo.name, lst.kind, keep)
        for n in keep:
            if _same_time(stored.get(int(n["number"])), n.get("updatedAt")):
                repo.upserts = repo.upserts + UpsertCounts(unchanged=1)
                continue
            d = _Draft(n)
            page.drafts.append(d)
            labels = _maybe_some(n.get("labels"))
            comments = _maybe_some(n.get("comments"))
            if labels or comments:
                page.open += 1
                total = _total(n.get("comments"))
                tail = Q.TailPage(None, min(Q.PAGE, total - Q.PAGE + 1)) \
                    if self.backwards and total and total > BOTH_ENDS else None
                # first pages sized to the counts: a query's node count says what it really asks, so packed
                # queries stay light (items added since the count come on a next page)
                n_labels = _total(n.get("labels"))
                fill = Q.Fill(lst.kind, int(n["number"]), Q.first_page(n_labels) if labels else None,
                              Q.first_page(total) if comments else None, tail)
                self.work.push(_FillWork(page, d, fill, n_labels, total))
        lst.pages.append(page)
        lst.cursor = end
        lst.exhausted = done

    def _stored_updated(self, repo: str, kind: str, nodes: list[dict[str, Any]]) -> dict[int, str]:
        """``updated_at`` of the listed threads already stored, by number (one query per list page).

        A stored thread with the same ``updatedAt`` is unchanged (GitHub bumps it on every new comment)."""
        ids = {thread_id(repo, int(n["number"]), kind): int(n["number"]) for n in nodes}
        out: dict[int, str] = {}
        keys = list(ids)
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            rows = self.store.query(f"SELECT id, updated_at FROM threads WHERE id IN ({','.join('?' * len(chunk))})",
                                    tuple(chunk))
            out.update({ids[r[0]]: r[1] for r in rows})
        return out

    def _missing(self, w: _Work, error: str | None, what: str) -> None:
        """A follow-up came back empty: gone for good (NOT_FOUND) or retried a few times."""
        w.tries += 1
        if error == "NOT_FOUND":
            return
        if w.tries >= MAX_TRIES:
            self._fail(w.repo, f"GitHub kept failing on {what} ({error or 'no data'})")
            return
        self.work.push(w)

    def _take_fill(self, w: _FillWork, obj: dict[str, Any] | None, error: str | None) -> None:
        page, d, f = w.page, w.draft, w.fill
        if obj is None and not f.via_list and (
                (not self.lookup_ok and error in (None, "NOT_FOUND"))
                or (error not in (None, "NOT_FOUND") and w.tries + 1 >= MAX_TRIES and f.tail is None)):
            # no thread looked up by number has been found in this run (a server without ``issue(number:)``
            # says NOT_FOUND or nothing), or this one keeps failing: read it through its list
            self._locate(w)
            return
        if obj is not None and not f.via_list:
            self.lookup_ok += 1
        if obj is None and f.tail is not None and error != "NOT_FOUND":
            # a server that cannot page backwards: the same fill again, forwards only (not a failed try)
            self.backwards = False
            w.both_ends = False
            w.fill = replace(f, tail=None)
            self.work.push(w)
            return
        if obj is None:
            self._missing(w, error, f"{w.repo.name}#{f.number}")
            if error == "NOT_FOUND":  # deleted or transferred since it was listed: not stored
                d.gone = True
                page.open -= 1
            return
        labels = comments = None
        if f.labels is not None:
            conn = obj.get("labels") or {}
            got = [lb["name"] for lb in conn.get("nodes") or [] if lb]
            d.labels.extend(got)
            w.labels_left = _less(w.labels_left, len(got))
            labels = _next(conn, f.labels)
        tail = None
        if f.comments is not None:
            comments, tail = self._take_comments(w, obj)
        if _stuck(f.labels, labels) or _stuck(f.comments, comments):
            self._fail(w.repo, f"GitHub repeated a page of {w.repo.name}#{f.number} (cursor did not advance)")
            return
        if labels or comments:
            w.fill = replace(f, labels=labels, comments=comments, tail=tail)
            self.work.push(w)
        else:
            page.open -= 1

    def _comment(self, w: _FillWork, c: dict[str, Any]) -> tuple[_CommentDraft, bool]:
        """The draft of comment ``c`` (new or already fetched from the other end) and whether it is new."""
        d = w.draft
        key = str(c.get("id"))
        cd = d.by_id.get(key)
        if cd is not None:
            return cd, False
        cd = d.by_id[key] = _CommentDraft(c)
        if w.fill.kind == "discussion" and _maybe_some(c.get("replies")):
            w.page.open += 1
            self.work.push(_ReplyWork(w.page, cd, Q.Replies(c["id"]), _total(c.get("replies")),
                                      number=w.fill.number, via_list=w.fill.via_list, list_after=w.fill.list_after))
        return cd, True

    def _take_comments(self, w: _FillWork, obj: dict[str, Any]) -> tuple[Q.Page | None, Q.TailPage | None]:
        """Absorb a forward page of comments (and the backward one, if asked); the next pages, (None, None) when done.

        Forward pages alone are authoritative: the thread is complete when they reach the end. With
        a tail, it is also complete when a forward page and the tail share a comment (both ends met):
        comments are only ever appended, so the two cover everything between. A tail that does not
        behave like a backward page (no ``hasPreviousPage`` while not reaching the start, or the same
        first comment as the forward pages) is distrusted: the thread goes on forwards only."""
        f, d = w.fill, w.draft
        assert f.comments is not None
        conn = obj.get("comments") or {}
        new_fwd = []
        for c in [c for c in conn.get("nodes") or [] if isinstance(c, dict)]:
            cd, _new = self._comment(w, c)
            d.comments.append(cd)
            new_fwd.append(cd)
        total = _total(conn)
        met = False
        if f.tail is not None:
            tconn = obj.get("ct") or {}
            tnodes = [c for c in tconn.get("nodes") or [] if isinstance(c, dict)]
            info = tconn.get("pageInfo") or {}
            total = total if total is not None else _total(tconn)
            first_round = not w.tail_started
            at_start = info.get("hasPreviousPage") is not True
            if first_round and tnodes and (
                    (at_start and (total is None or len(tnodes) < total))
                    or (d.comments and str(tnodes[0].get("id")) == str(d.comments[0].node.get("id")))):
                w.both_ends = False
            if w.both_ends:
                chunk = [self._comment(w, c)[0] for c in tnodes]
                tail_ids = {id(c) for c in d.tail}
                d.tail[:0] = [c for c in chunk if id(c) not in tail_ids]
                w.tail_started = True
                w.tail_before = None if at_start else info.get("startCursor")
                if not at_start and not w.tail_before:
                    w.both_ends = False
            else:
                for c in tnodes:  # keep what came (replies already queued); forward pages will place it
                    self._comment(w, c)
        if w.both_ends and d.tail:
            tail = {id(c) for c in d.tail}
            met = any(id(c) in tail for c in new_fwd) or (bool(d.comments) and id(d.comments[-1]) in tail)
        if total is not None:
            w.comments_left = max(0, total - len(d.by_id))
        else:
            w.comments_left = _less(w.comments_left, len(new_fwd))
        nxt = _next(conn, f.comments)
        if nxt is None or met:
            return None, None
        tail_page = None
        if self.backwards and w.both_ends and w.tail_started and w.tail_before and w.comments_left is not None:
            tail_page = _tail_for(w.comments_left)
            if tail_page is not None:
                tail_page = replace(tail_page, before=w.tail_before)
        return nxt, tail_page

    def _take_replies(self, w: _ReplyWork, obj: dict[str, Any] | None, error: str | None) -> None:
        if obj is None and w.number is not None and (
                not self.node_ok or (error != "NOT_FOUND" and w.tries + 1 >= MAX_TRIES)):
            # no comment looked up by id has been found in this run (a server without ``node(id:)`` says
            # NOT_FOUND or nothing), or this one keeps failing: read its replies through the discussion
            self._walk_for(w)
            return
        if obj is not None:
            self.node_ok += 1
        if obj is None:
            self._missing(w, error, f"replies of {w.replies.comment_id}")
            if error == "NOT_FOUND":  # the comment was deleted meanwhile: keep what we have
                w.page.open -= 1
            return
        conn = obj.get("replies") or {}
        nodes = conn.get("nodes") or []
        w.comment.replies.extend(nodes)
        w.left = _less(w.left, len(nodes))
        nxt = _next(conn, w.replies.page)
        if _stuck(w.replies.page, nxt):
            self._fail(w.repo, f"GitHub repeated a page of replies of {w.replies.comment_id} (cursor did not advance)")
            return
        if nxt is not None:
            w.replies = Q.Replies(w.replies.comment_id, nxt)
            self.work.push(w)
        else:
            w.page.open -= 1

    def _locate(self, w: _FillWork) -> None:
        """Hand ``w`` to a search of its list for its cursor (a new one unless a queued one has not started)."""
        repo = w.repo
        key = (id(repo), w.fill.kind)
        lw = self.locators.get(key)
        if lw is None or lw.started:
            lw = self.locators[key] = _LocateWork(repo, Q.Locate(w.fill.kind))
            self.work.push(lw)
        w.both_ends = False
        w.fill = replace(w.fill, tail=None)
        lw.targets[w.fill.number] = w

    def _take_locate(self, lw: _LocateWork, obj: dict[str, Any] | None, error: str | None) -> None:
        """Give each target found in this page of numbers the cursor before it; page on while some are missing."""
        if obj is None:
            lw.tries += 1
            if lw.tries >= MAX_TRIES:
                self._fail(lw.repo, f"GitHub kept failing on the {_LIST_FIELDS[lw.locate.kind]} list "
                                    f"({error or 'no data'})")
            else:
                self.work.push(lw)
            return
        prev = lw.locate.after
        for e in obj.get("edges") or []:
            if not isinstance(e, dict):
                continue
            node = e.get("node") if isinstance(e.get("node"), dict) else {}
            number = node.get("number")
            w = lw.targets.pop(number, None) if isinstance(number, int) else None
            if w is not None:
                w.fill = replace(w.fill, via_list=True, list_after=prev)
                w.tries = 0
                self.work.push(w)
            prev = e.get("cursor") or prev
        if not lw.targets:
            return
        info = obj.get("pageInfo") or {}
        nxt = info.get("endCursor")
        if info.get("hasNextPage") and nxt and nxt != lw.locate.after:
            lw.locate = replace(lw.locate, after=nxt)
            lw.tries = 0
            self.work.push(lw)
            return
        for w in lw.targets.values():  # not in the list any more: deleted or moved since it was listed
            w.draft.gone = True
            w.page.open -= 1
        lw.targets.clear()

    def _take_list_window(self, w: _FillWork, obj: dict[str, Any] | None, error: str | None) -> None:
        """A one-thread window of the list: the thread's labels and comments, if it is still the one there."""
        nodes = [n for n in (obj or {}).get("nodes") or [] if isinstance(n, dict)]
        if nodes and nodes[0].get("number") == w.fill.number:
            self._take_fill(w, nodes[0], None)
            return
        w.tries += 1
        if w.tries >= MAX_TRIES:
            self._fail(w.repo, f"GitHub kept failing on {w.repo.name}#{w.fill.number} ({error or 'not in its list'})")
            return
        # the list moved under the cursor (a thread deleted before it): find it again
        w.fill = replace(w.fill, via_list=False, list_after=None)
        self._locate(w)

    def _walk_for(self, w: _ReplyWork) -> None:
        """Hand ``w`` to a walk through its discussion (a new one unless a queued one has not started)."""
        assert w.number is not None
        key = (id(w.page), w.number)
        ww = self.walkers.get(key)
        if ww is None or ww.started:
            ww = self.walkers[key] = _WalkWork(w.page, Q.ReplyWalk(w.number, via_list=w.via_list,
                                                                   list_after=w.list_after))
            self.work.push(ww)
        w.comment.replies.clear()  # the walk reads them all from the first
        ww.targets[str(w.replies.comment_id)] = w

    def _take_walk(self, ww: _WalkWork, obj: dict[str, Any] | None, error: str | None) -> None:
        """Take the replies of the targets in this window; walk on while some are not found yet."""
        if obj is not None and ww.walk.via_list:  # a one-thread window of the list: the discussion, if still there
            nodes = [n for n in obj.get("nodes") or [] if isinstance(n, dict)]
            obj = nodes[0] if nodes and nodes[0].get("number") == ww.walk.number else None
            error = error or (None if obj is not None else "NOT_FOUND")
        if obj is None:
            ww.tries += 1
            if error == "NOT_FOUND":  # the discussion is gone: nothing more to read
                ww.page.open -= len(ww.targets)
                ww.targets.clear()
            elif ww.tries >= MAX_TRIES:
                self._fail(ww.repo, f"GitHub kept failing on the replies of discussion #{ww.walk.number} "
                                    f"({error or 'no data'})")
            else:
                self.work.push(ww)
            return
        conn = obj.get("comments") or {}
        prev = ww.walk.after
        for e in conn.get("edges") or []:
            if not isinstance(e, dict):
                continue
            node = e.get("node") if isinstance(e.get("node"), dict) else {}
            rw = ww.targets.pop(str(node.get("id")), None)
            if rw is not None:
                rconn = node.get("replies") or {}
                rw.comment.replies.extend(n for n in rconn.get("nodes") or [] if isinstance(n, dict))
                info = rconn.get("pageInfo") or {}
                if info.get("hasNextPage") and info.get("endCursor"):  # more replies: a window of this comment
                    self.work.push(_WalkWork(ww.page, replace(ww.walk, after=prev, first=1,
                                                              replies_after=info["endCursor"]),
                                             {str(node.get("id")): rw}, started=True))
                else:
                    ww.page.open -= 1
            prev = e.get("cursor") or prev
        if not ww.targets:
            return
        info = conn.get("pageInfo") or {}
        nxt = info.get("endCursor")
        if ww.walk.replies_after is None and info.get("hasNextPage") and nxt and nxt != ww.walk.after:
            ww.walk = replace(ww.walk, after=nxt)
            ww.tries = 0
            self.work.push(ww)
            return
        ww.page.open -= len(ww.targets)  # not in the discussion any more: deleted meanwhile
        ww.targets.clear()

    # ------------------------------------------------------------------ commits

    def _commit_ready(self, lst: _List) -> None:
        """Commit the list's leading complete pages, each with its checkpoint, in order."""
        repo = lst.repo
        while lst.pages and lst.pages[0].open == 0:
            page = lst.pages.popleft()
            threads = [_thread(repo.name, lst.kind, d) for d in page.drafts if not d.gone]
            with self.store.transaction():
                repo.upserts = repo.upserts + self.store.upsert_threads(threads)
                self.store.set_checkpoint(replace(page.checkpoint, repo=repo.name))
        if repo.state == "active" and all(x.exhausted and not x.pages and not x.busy for x in repo.lists.values()):
            self._done(repo)

    def _done(self, repo: _Repo) -> None:
        repo.state = "done"
        n = self.store.count("threads", "repo=?", (repo.name,))
        wanted = [k for k in repo.kinds if k != "pull_request"]
        all_off = bool(wanted) and len(repo.disabled) >= len(wanted) and n == 0
        self._result(RepoResult(repo.requested, repo.name, "skipped" if all_off else "done", threads=n,
                                       points=_round_points(repo), requests=repo.requests,
                                       note="; ".join(repo.disabled) or None, upserts=repo.upserts,
                                       halvings=repo.halvings))

    def _result(self, res: RepoResult) -> None:
        self.results.append(res)
        if self.on_result is not None:
            self.on_result()

    def _skip(self, repo: _Repo, reason: str) -> None:
        repo.state = "skipped"
        self._result(RepoResult(repo.requested, repo.name, "skipped", points=_round_points(repo),
                                       requests=repo.requests, note=reason))

    def _fail(self, repo: _Repo, reason: str) -> None:
        if repo.state != "active":
            return
        repo.state = "failed"
        self._result(RepoResult(repo.requested, repo.name, "failed", points=_round_points(repo),
                                       requests=repo.requests, note=reason, upserts=repo.upserts,
                                       halvings=repo.halvings))

    def _duplicate(self, repo: _Repo, other: str) -> None:
        repo.state = "duplicate"
        self._result(RepoResult(repo.requested, other, "duplicate", points=_round_points(repo),
                                       requests=repo.requests, note=f"same repository as {other}"))


def _honours_order(desc: list[dict[str, Any]], probe: dict[str, Any]) -> bool:
    """Whether a list asked ``UPDATED_AT DESC`` (first page ``desc``) really is in that order, judged by the
    same list asked ``ASC`` (``probe``, its first node): a server that ignores ``orderBy`` answers the same
    first thread both ways; one that honours it answers the oldest, no newer than anything on the page."""
    oldest = [n for n in (probe.get("nodes") or []) if isinstance(n, dict) and n.get("updatedAt")]
    if not desc:
        return True
    if not oldest:
        return False
    t_old = parse_time(oldest[0]["updatedAt"])
    if any(parse_time(n["updatedAt"]) < t_old for n in desc):  # type: ignore[operator]
        return False
    return oldest[0].get("number") != desc[0].get("number") or len(desc) == 1


def _round_points(repo: _Repo) -> int:
    """Whole points for the status table (at least 1 once the repository was in any query)."""
    return max(1, round(repo.points)) if repo.requests else 0


def _same_time(stored: str | None, listed: Any) -> bool:
    return stored is not None and isinstance(listed, str) and parse_time(stored) == parse_time(listed)


def _next(conn: dict[str, Any], page: Q.Page) -> Q.Page | None:
    """The page after ``page``: full (100) after a first page sized to a count (the connection grew since it was
    counted), the same size after one halved by a timeout."""
    info = conn.get("pageInfo") or {}
    if info.get("hasNextPage") and info.get("endCursor"):
        return Q.Page(info["endCursor"], Q.PAGE if page.first in Q.FIRST_SIZES else page.first)
    return None


def _stuck(page: Q.Page | None, nxt: Q.Page | None) -> bool:
    """The server said there is more but gave back the cursor it was asked from (paging would never end)."""
    return page is not None and nxt is not None and page.after is not None and nxt.after == page.after


def _thread(repo: str, kind: str, d: _Draft) -> Thread:
    node = dict(d.node)
    node["labels"] = {"nodes": [{"name": n} for n in d.labels]}
    comments = [comment_from_gql(c.node, [comment_from_gql(r) for r in c.replies]) for c in d.all_comments()]
    return thread_from_gql(repo, kind, node, comments)


def _total(conn: Any) -> int | None:
    """A connection's ``totalCount`` (None when the server left it out)."""
    total = conn.get("totalCount") if isinstance(conn, dict) else None
    return total if isinstance(total, int) and total >= 0 else None


def _less(left: int | None, got: int) -> int | None:
    return None if left is None else max(0, left - got)


def _half(first: int) -> int:
    """A page size halved after a timeout, not below :data:`~miner.queries.MIN_PAGE` (nor above ``first``)."""
    return min(first, max(Q.MIN_PAGE, first // 2))


def _maybe_some(conn: Any) -> bool:
    """A connection asked for ``totalCount`` may hold items: true unless the server said 0.

    A server that leaves ``totalCount`` out (null) is asked for the items: never skip data on a guess."""
    total = conn.get("totalCount") if isinstance(conn, dict) else None
    return not isinstance(total, int) or total > 0
