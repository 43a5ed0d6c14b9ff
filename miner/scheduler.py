"""The packing scheduler: many repositories' list pages and follow-ups share 1-point queries.

Work items (see :mod:`miner.queries`): *list segments* (1 request for up to 100 threads),
*fills* (a thread's labels/comments, 1 request per non-empty connection) and *replies*
(1 request per discussion comment with replies). The scheduler keeps up to
``concurrency`` queries in flight; each query takes the ready list segments first (so
the pipeline keeps producing work) and then follow-ups until it holds
:data:`~miner.queries.QUERY_REQUESTS` requests. A query that is not full waits while
other queries are in flight (their answers bring more work), so almost every query
costs exactly 1 point for ~149 requests.

Commit semantics (what makes SIGKILL-resume exact): each list segment becomes a *page*;
a page is committed, in one transaction with the (repository, kind) checkpoint that
points past it, once all its threads are complete, and pages of one list are committed
strictly in order. A killed run resumes from the last committed page.

Failure handling: a 502/504 on a packed query splits it in two (and lowers the node
budget of later queries); a single list segment halves its page size (kept in the
checkpoint). A query that keeps failing is split by repository; a repository whose
own query still fails is marked ``failed`` (re-run to retry) without holding up the others.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from miner import queries as Q
from miner.convert import comment_from_gql, parse_time, thread_from_gql
from miner.graphql_client import GatewayError, GraphQLClient, GraphQLFailure
from reprodiag.schema import Thread, thread_id
from reprodiag.store import Checkpoint, Store, UpsertCounts

_GONE = {"NOT_FOUND": "not found (404)", "FORBIDDEN": "forbidden", "UNAUTHORIZED": "no access"}
#: Ready list segments never make a query "full" on their own; at most this many thread nodes per query.
LIST_NODES = 600
#: Stop listing further pages while this many follow-up requests are queued (bounds memory).
LOOKAHEAD_REQUESTS = 8 * Q.QUERY_REQUESTS
#: Repositories listed at the same time.
MAX_ACTIVE = 64
#: First page size of a pull-request/discussion list on an incremental pass (DESC, stops at the old).
INCREMENTAL_FIRST = 20
#: Starting node budget per query; halved on each 502/504 of a packed query.
NODE_BUDGET = 20_000
MIN_NODE_BUDGET = 500
MAX_TRIES = 3
#: Repositories per probe query (a full sync probes for 0 requests; incremental ones for 2 each).
PROBE_REPOS = 50
_LIST_FIELDS = {"issue": "issues", "pull_request": "pullRequests", "discussion": "discussions"}
DISABLED = {"issue": "issues disabled", "discussion": "discussions disabled"}


def later(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if parse_time(a) >= parse_time(b) else b  # type: ignore[operator]


@dataclass(eq=False)
class _CommentDraft:
    node: dict[str, Any]
    replies: list[dict[str, Any]] = field(default_factory=list)


@dataclass(eq=False)
class _Draft:
    """A thread being completed: its list node plus labels and comments fetched so far."""

    node: dict[str, Any]
    labels: list[str] = field(default_factory=list)
    comments: list[_CommentDraft] = field(default_factory=list)
    gone: bool = False


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
    page_size: int
    started: bool = False
    busy: bool = False
    exhausted: bool = False
    listed: int = 0
    from_start: bool = True
    remaining: int | None = None
    pages: deque[_Page] = field(default_factory=deque)

    def next_first(self) -> int:
        if self.remaining is not None:
            return max(1, min(self.page_size, self.remaining))
        if self.kind != "issue" and self.hw and self.cursor is None:
            return min(self.page_size, INCREMENTAL_FIRST)
        return self.page_size

    def segment(self) -> Q.ListSeg:
        return Q.ListSeg(self.kind, self.next_first(), self.cursor, self.hw if self.kind == "issue" else None)


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
    probed: bool = False

    @property
    def owner_name(self) -> tuple[str, str]:
        o, n = self.name.split("/", 1)
        return o, n


@dataclass(eq=False)
class _FillWork:
    page: _Page
    draft: _Draft
    fill: Q.Fill
    tries: int = 0

    @property
    def repo(self) -> _Repo:
        return self.page.lst.repo

    @property
    def requests(self) -> int:
        return self.fill.requests

    @property
    def nodes(self) -> int:
        f = self.fill
        return (f.labels.first if f.labels else 0) + (f.comments.first if f.comments else 0)


@dataclass(eq=False)
class _ReplyWork:
    page: _Page
    comment: _CommentDraft
    replies: Q.Replies
    tries: int = 0
    requests: int = 1

    @property
    def repo(self) -> _Repo:
        return self.page.lst.repo

    @property
    def nodes(self) -> int:
        return self.replies.page.first


_Work = _FillWork | _ReplyWork


@dataclass(eq=False)
class _Batch:
    """One query's work: per repository block its list segments and fills, then top-level reply pages."""

    repos: list[_Repo] = field(default_factory=list)
    lists: list[list[_List]] = field(default_factory=list)
    fills: list[list[_FillWork]] = field(default_factory=list)
    replies: list[_ReplyWork] = field(default_factory=list)
    probes: list[_Repo] = field(default_factory=list)

    def block(self, repo: _Repo) -> int:
        for i, r in enumerate(self.repos):
            if r is repo:
                return i
        self.repos.append(repo)
        self.lists.append([])
        self.fills.append([])
        return len(self.repos) - 1

    def add(self, w: _Work) -> None:
        if isinstance(w, _FillWork):
            self.fills[self.block(w.repo)].append(w)
        else:
            self.replies.append(w)

    def plan(self) -> Q.Plan:
        blocks = tuple(
            Q.RepoBlock(*r.owner_name, lists=tuple(lst.segment() for lst in ls), fills=tuple(f.fill for f in fs))
            for r, ls, fs in zip(self.repos, self.lists, self.fills, strict=True))
        return Q.Plan(blocks, tuple(w.replies for w in self.replies))

    def involved(self) -> list[_Repo]:
        out = list(self.repos) + list(self.probes)
        for w in self.replies:
            if all(r is not w.repo for r in out):
                out.append(w.repo)
        return out

    def split(self) -> list[_Batch]:
        """Two halves: by repository block when there are several, else by work item (lists stay together)."""
        if self.probes:
            h = len(self.probes) // 2
            return [_Batch(probes=self.probes[:h]), _Batch(probes=self.probes[h:])] if h else [self]
        units: list[Any] = []
        for i, r in enumerate(self.repos):
            if self.lists[i]:
                units.append((r, self.lists[i]))
            units.extend(self.fills[i])
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
            return str(e.get("type") or "")
    return None


class Scheduler:
    """Mine ``repos`` (``(requested, name)`` pairs) over one :class:`GraphQLClient`; see the module doc."""

    def __init__(self, store: Store, gh: GraphQLClient, repos: Sequence[tuple[str, str]], kinds: Sequence[str],
                 *, concurrency: int) -> None:
        self.store = store
        self.gh = gh
        self.kinds = tuple(kinds)
        self.concurrency = max(1, concurrency)
        self.waiting: deque[_Repo] = deque(_Repo(req, name, self.kinds) for req, name in repos)
        self.active: list[_Repo] = []
        self.by_name: dict[str, _Repo] = {}
        self.work: deque[_Work] = deque()
        self.node_budget = NODE_BUDGET
        self.probing = False
        self.results: list[RepoResult] = []
        #: Called after each repository's result is appended (the caller records it at once).
        self.on_result: Callable[[], None] | None = None

    # ------------------------------------------------------------------ activation

    def _activate(self, repo: _Repo) -> None:
        repo.state = "active"
        for kind in self.kinds:
            cp = self.store.get_checkpoint(repo.name, kind) or Checkpoint(repo.name, kind)
            cursor, run_hw = (None, None) if cp.complete else (cp.cursor, cp.run_high_water)
            repo.lists[kind] = _List(repo, kind, cp.high_water, cursor, run_hw,
                                     min(cp.page_size or Q.PAGE, Q.PAGE), from_start=cursor is None)
        self.active.append(repo)
        self.by_name[repo.name.lower()] = repo

    def _ready_lists(self) -> list[list[_List]]:
        """Ready list segments, grouped per repository (only probed repositories)."""
        self.active = [r for r in self.active if r.state == "active"]
        out: list[list[_List]] = []
        for repo in self.active:
            if repo.probed:
                ready = [lst for lst in repo.lists.values() if not lst.busy and not lst.exhausted]
                if ready:
                    out.append(ready)
        return out

    def _probe_batch(self, ready: list[list[_List]]) -> _Batch | None:
        """Probe the next waiting repositories when the ready lists run low (one probe in flight).

        Only repositories with a list to read from the start are probed; the others become ready at once.
        """
        if self.probing or not self.waiting:
            return None
        if sum(lst.next_first() for ls in ready for lst in ls) >= LIST_NODES * self.concurrency:
            return None
        batch = _Batch()
        while self.waiting and len(batch.probes) < PROBE_REPOS and len(self.active) < MAX_ACTIVE:
            repo = self.waiting.popleft()
            if repo.name.lower() in self.by_name:
                self._duplicate(repo, self.by_name[repo.name.lower()].name)
                continue
            self._activate(repo)
            if any(lst.from_start and not lst.hw for lst in repo.lists.values()):
                batch.probes.append(repo)
            else:  # incremental or resuming: small first pages tell as much as a probe, one round trip sooner
                repo.probed = True
        if not batch.probes:
            return None
        self.probing = True
        return batch

    # ------------------------------------------------------------------ building queries

    def _build(self, allow_partial: bool) -> _Batch | None:
        """The next query: ready list segments, then follow-ups up to 149 requests; None to wait.

        A query that is not full is only built when ``allow_partial`` (nothing else in flight).
        """
        ready = self._ready_lists()
        probe = self._probe_batch(ready)
        if probe is not None:
            return probe
        ready = self._ready_lists()  # repositories activated without a probe are ready now
        batch = _Batch()
        requests = nodes = 0
        if sum(w.requests for w in self.work) < LOOKAHEAD_REQUESTS:
            list_nodes = 0
            for ls in ready:
                want = sum(lst.next_first() for lst in ls)
                if list_nodes and (list_nodes + want > LIST_NODES or nodes + want > self.node_budget):
                    continue
                batch.lists[batch.block(ls[0].repo)].extend(ls)
                requests += len(ls)
                nodes += want
                list_nodes += want
                if list_nodes >= LIST_NODES:
                    break
        took: list[_Work] = []
        while self.work:
            w = self.work[0]
            if w.repo.state != "active":
                self.work.popleft()
                continue
            if requests + w.requests > Q.QUERY_REQUESTS or (requests and nodes + w.nodes > self.node_budget):
                break
            took.append(self.work.popleft())
            requests += w.requests
            nodes += w.nodes
        if requests == 0:
            return None
        full = requests >= Q.QUERY_REQUESTS - 1 or nodes >= self.node_budget * 0.9 or \
            (self.work and requests + self.work[0].requests > Q.QUERY_REQUESTS)
        if not full and not allow_partial:
            self.work.extendleft(reversed(took))
            return None
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
                    batch = self._build(allow_partial=not inflight)
                    if batch is None:
                        break
                    inflight.add(asyncio.create_task(self._run(batch)))
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

    async def _run(self, batch: _Batch) -> None:
        if batch.probes:
            try:
                await self._run_probe(batch)
            finally:
                self.probing = False
            return
        plan = batch.plan()
        cost = Q.plan_cost(plan)
        try:
            ans = await self.gh.query(Q.build(plan), heavy=cost.nodes > Q.MIN_PAGE)
        except GatewayError:
            await self._gateway(batch, cost)
            return
        except GraphQLFailure as exc:
            if len(batch.involved()) > 1:
                await asyncio.gather(*(self._run(p) for p in batch.split()))
                return
            for repo in batch.involved():
                self._fail(repo, str(exc)[:300])
            return
        self._charge(batch, ans.cost)
        self._absorb(batch, ans.data, ans.errors)

    def _probe_of(self, repo: _Repo) -> Q.Probe:
        issues = repo.lists.get("issue")
        newest = tuple(k for k, lst in repo.lists.items() if k != "issue" and lst.hw and lst.from_start)
        return Q.Probe(*repo.owner_name, since=issues.hw if issues else None, newest=newest)

    async def _run_probe(self, batch: _Batch) -> None:
        probes = [self._probe_of(r) for r in batch.probes]
        try:
            ans = await self.gh.query(Q.probe_query(probes))
        except (GatewayError, GraphQLFailure) as exc:
            parts = batch.split()
            if len(parts) > 1:
                for part in parts:
                    await self._run_probe(part)
                return
            for repo in batch.probes:
                self._fail(repo, str(exc)[:300])
            return
        for repo in batch.probes:
            repo.points += ans.cost / len(batch.probes)
            repo.requests += 1
        for i, repo in enumerate(batch.probes):
            block = ans.data.get(f"r{i}")
            if block is None:
                kind = _error_type(ans.errors, f"r{i}")
                msg = next((str(e.get("message")) for e in ans.errors if (e.get("path") or [None])[0] == f"r{i}"),
                           "no data")
                if kind in _GONE:
                    self._skip(repo, _GONE[kind])
                else:
                    self._fail(repo, f"repository unavailable: {' '.join(msg.split())[:200]}")
                continue
            self._canonical(repo, block.get("nameWithOwner"))
            if repo.state == "active":
                self._sized(repo, block)

    def _sized(self, repo: _Repo, block: dict[str, Any]) -> None:
        """Apply a probe's answer: disabled kinds, exact list sizes, unchanged lists."""
        repo.probed = True
        for kind, lst in repo.lists.items():
            lst.started = True
            flag = {"issue": "hasIssuesEnabled", "discussion": "hasDiscussionsEnabled"}.get(kind)
            if flag and block.get(flag) is False:
                repo.disabled.append(DISABLED[kind])
                lst.exhausted = True
                continue
            if not lst.from_start:
                continue  # resuming mid-pass: sizes unknown, read pages until GitHub says there is no more
            raw_total = (block.get(_LIST_FIELDS[kind]) or {}).get("totalCount")
            if kind != "issue" and lst.hw:
                nodes = ((block.get(f"n{Q.KINDS.index(kind)}") or {}).get("nodes")) or []
                newest = nodes[0].get("updatedAt") if nodes and isinstance(nodes[0], dict) else None
                if newest is None or parse_time(newest) <= parse_time(lst.hw):  # type: ignore[operator]
                    lst.exhausted = True  # nothing changed since the last complete pass
                continue
            if not isinstance(raw_total, int):
                continue  # a server that does not count: read pages until it says there is no more
            total = raw_total
            lst.remaining = total
            if total == 0:  # nothing to list: the pass is complete
                lst.pages.append(_Page(lst, [], Checkpoint(repo.name, kind, high_water=lst.hw, complete=True,
                                                           page_size=lst.page_size)))
                lst.exhausted = True
        for lst in repo.lists.values():
            self._commit_ready(lst)

    async def _gateway(self, batch: _Batch, cost: Q.PlanCost) -> None:
        """GitHub timed out (502/504): ask for less (split the query, lower the node budget, halve pages)."""
        self.node_budget = max(MIN_NODE_BUDGET, min(self.node_budget, cost.nodes // 2))
        for r in batch.involved():
            r.halvings += 1
        parts = batch.split()
        if len(parts) > 1:
            await asyncio.gather(*(self._run(p) for p in parts))
            return
        lists = [lst for ls in batch.lists for lst in ls]
        if any(lst.next_first() > Q.MIN_PAGE for lst in lists):
            for lst in lists:
                lst.page_size = max(Q.MIN_PAGE, lst.next_first() // 2)
                lst.remaining = None
            await self._run(batch)
            return
        smaller = False
        for w in [w for fs in batch.fills for w in fs] + list(batch.replies):
            if isinstance(w, _FillWork):
                f = w.fill
                lab = f.labels and replace(f.labels, first=max(Q.MIN_PAGE, f.labels.first // 2))
                com = f.comments and replace(f.comments, first=max(Q.MIN_PAGE, f.comments.first // 2))
                smaller = smaller or lab != f.labels or com != f.comments
                w.fill = replace(f, labels=lab, comments=com)
            else:
                p = w.replies.page
                smaller = smaller or p.first > Q.MIN_PAGE
                w.replies = replace(w.replies, page=replace(p, first=max(Q.MIN_PAGE, p.first // 2)))
        if smaller:
            await self._run(batch)
            return
        for repo in batch.involved():
            self._fail(repo, "GitHub kept timing out (502/504) even on the smallest query")

    def _charge(self, batch: _Batch, points: int) -> None:
        """Attribute the query's points to its repositories by their share of its requests."""
        share: dict[int, list[Any]] = {}
        for r, ls, fs in zip(batch.repos, batch.lists, batch.fills, strict=True):
            share[id(r)] = [r, len(ls) + sum(f.requests for f in fs)]
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
                self._take_list(lst, block, block.get(f"l{j}"))
            for j, w in enumerate(batch.fills[i]):
                self._take_fill(w, block.get(f"f{j}"), _error_type(errors, f"r{i}", f"f{j}"))
        for j, w in enumerate(batch.replies):
            if w.repo.state == "active":
                self._take_replies(w, data.get(f"n{j}"), _error_type(errors, f"n{j}"))
        for repo in batch.involved():
            if repo.state == "active":
                for lst in repo.lists.values():
                    self._commit_ready(lst)

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

    def _take_list(self, lst: _List, block: dict[str, Any], conn: dict[str, Any] | None) -> None:
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
        if lst.kind == "issue":
            for n in nodes:
                lst.run_hw = later(lst.run_hw, n["updatedAt"])
        else:
            if lst.cursor is None and nodes:
                lst.run_hw = nodes[0]["updatedAt"]
            if lst.hw:
                cut = parse_time(lst.hw)
                keep = [n for n in nodes if parse_time(n["updatedAt"]) >= cut]  # type: ignore[operator]
                stop = len(keep) < len(nodes)
        info = conn.get("pageInfo") or {}
        done = stop or not info.get("hasNextPage")
        end = info.get("endCursor") or lst.cursor
        lst.listed += len(nodes)
        total = conn.get("totalCount")
        exact = lst.from_start and (lst.kind == "issue" or not lst.hw)
        lst.remaining = total - lst.listed if exact and isinstance(total, int) and total > lst.listed else None
        cp = Checkpoint(repo.name, lst.kind, cursor=None if done else end,
                        high_water=later(lst.hw, lst.run_hw) if done else lst.hw,
                        run_high_water=None if done else lst.run_hw, complete=done, page_size=lst.page_size)
        page = _Page(lst, [], cp)
        for n in keep:
            if self._unchanged(repo.name, lst.kind, n):
                repo.upserts = repo.upserts + UpsertCounts(unchanged=1)
                continue
            d = _Draft(n)
            page.drafts.append(d)
            labels = _maybe_some(n.get("labels"))
            comments = _maybe_some(n.get("comments"))
            if labels or comments:
                page.open += 1
                self.work.append(_FillWork(page, d, Q.Fill(lst.kind, int(n["number"]), Q.Page() if labels else None,
                                                           Q.Page() if comments else None)))
        lst.pages.append(page)
        lst.cursor = end
        lst.exhausted = done

    def _unchanged(self, repo: str, kind: str, node: dict[str, Any]) -> bool:
        """The stored copy has the same ``updatedAt`` (GitHub bumps it on every new comment)."""
        rows = self.store.query("SELECT updated_at FROM threads WHERE id=?", (thread_id(repo, node["number"], kind),))
        return bool(rows) and parse_time(rows[0][0]) == parse_time(node["updatedAt"])

    def _missing(self, w: _Work, error: str | None, what: str) -> None:
        """A follow-up came back empty: gone for good (NOT_FOUND) or retried a few times."""
        w.tries += 1
        if error == "NOT_FOUND":
            return
        if w.tries >= MAX_TRIES:
            self._fail(w.repo, f"GitHub kept failing on {what} ({error or 'no data'})")
            return
        self.work.append(w)

    def _take_fill(self, w: _FillWork, obj: dict[str, Any] | None, error: str | None) -> None:
        page, d, f = w.page, w.draft, w.fill
        if obj is None:
            self._missing(w, error, f"{w.repo.name}#{f.number}")
            if error == "NOT_FOUND":  # deleted or transferred since it was listed: not stored
                d.gone = True
                page.open -= 1
            return
        labels = comments = None
        if f.labels is not None:
            conn = obj.get("labels") or {}
            d.labels.extend(lb["name"] for lb in conn.get("nodes") or [] if lb)
            labels = _next(conn, f.labels)
        if f.comments is not None:
            conn = obj.get("comments") or {}
            for c in conn.get("nodes") or []:
                cd = _CommentDraft(c)
                d.comments.append(cd)
                if f.kind == "discussion" and _maybe_some(c.get("replies")):
                    page.open += 1
                    self.work.append(_ReplyWork(page, cd, Q.Replies(c["id"])))
            comments = _next(conn, f.comments)
        if labels or comments:
            w.fill = Q.Fill(f.kind, f.number, labels, comments)
            self.work.append(w)
        else:
            page.open -= 1

    def _take_replies(self, w: _ReplyWork, obj: dict[str, Any] | None, error: str | None) -> None:
        if obj is None:
            self._missing(w, error, f"replies of {w.replies.comment_id}")
            if error == "NOT_FOUND":  # the comment was deleted meanwhile: keep what we have
                w.page.open -= 1
            return
        conn = obj.get("replies") or {}
        w.comment.replies.extend(conn.get("nodes") or [])
        nxt = _next(conn, w.replies.page)
        if nxt is not None:
            w.replies = Q.Replies(w.replies.comment_id, nxt)
            self.work.append(w)
        else:
            w.page.open -= 1

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


def _round_points(repo: _Repo) -> int:
    """Whole points for the status table (at least 1 once the repository was in any query)."""
    return max(1, round(repo.points)) if repo.requests else 0


def _next(conn: dict[str, Any], page: Q.Page) -> Q.Page | None:
    info = conn.get("pageInfo") or {}
    if info.get("hasNextPage") and info.get("endCursor"):
        return Q.Page(info["endCursor"], page.first)
    return None


def _thread(repo: str, kind: str, d: _Draft) -> Thread:
    node = dict(d.node)
    node["labels"] = {"nodes": [{"name": n} for n in d.labels]}
    comments = [comment_from_gql(c.node, [comment_from_gql(r) for r in c.replies]) for c in d.comments]
    return thread_from_gql(repo, kind, node, comments)


def _maybe_some(conn: Any) -> bool:
    """A connection asked for ``totalCount`` may hold items: true unless the server said 0.

    A server that leaves ``totalCount`` out (null) is asked for the items: never skip data on a guess."""
    total = conn.get("totalCount") if isinstance(conn, dict) else None
    return not isinstance(total, int) or total > 0
