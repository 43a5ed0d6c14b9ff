"""``reprodiag review serve``: the review page on 127.0.0.1, for one reviewer.

The server binds the loopback address only and makes a random token (:func:`secrets.token_urlsafe`, 32
bytes) that every request must carry as ``?t=``; a request without it, or with another, gets 403. Pages are
rendered on the server (:mod:`reprodiag.review.page`); a decision is an HTML form POST to ``/decide``, stored
(:func:`reprodiag.review.decisions.put_decisions`, committed) before the response is sent, then answered
with a redirect to the next item: a decision whose response arrived survives a SIGKILL of the server. A
refused submission (an edit with a value that is not a number, a reject without a reason) is answered
with the same page, the typed values kept, and stores nothing.

Responses carry a Content-Security-Policy that allows only the page's own inline style and script (by a
per-response nonce), no images, frames or other origins; ``Referrer-Policy: no-referrer`` keeps the token
in the address bar from leaking through a link.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import signal
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from reprodiag.errors import UserError
from reprodiag.review.decisions import Decision, clean_reviewer, current_decisions, decide, put_decisions
from reprodiag.review.fields import TYPES, clean_fields, clean_reason
from reprodiag.review.items import ReviewItem, thread_view
from reprodiag.review.page import STATUSES, Filters, ItemPage, link, render_item, render_message
from reprodiag.store import Store

HOST = "127.0.0.1"
#: Largest form body accepted (bytes).
MAX_BODY = 256 * 1024


class ReviewServer:
    """The review page over ``items`` for ``reviewer``; :meth:`run` serves until stopped (the CLI),
    :meth:`start` / :meth:`stop` serve from a background thread (tests, notebooks)."""

    def __init__(self, store: Store, items: list[ReviewItem], *, reviewer: str, token: str | None = None) -> None:
        self.store = store
        self.reviewer = clean_reviewer(reviewer)
        self.token = token or secrets.token_urlsafe(32)
        self.items = items
        self.index = {it.item_id: it for it in items}
        self.queues = [q for q in ("eval", "sft") if any(it.queue == q for it in items)] or ["eval"]
        #: this reviewer's current decision per item (decisions on a record read again since are left out)
        self.mine: dict[str, Decision] = {
            d.item_id: d for d in current_decisions(store, self.reviewer)
            if d.item_id in self.index and self.index[d.item_id].digest == d.record_digest}
        self.decided = 0
        self.url = ""
        self._runner: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ plumbing

    def app(self) -> Any:
        from aiohttp import web

        app = web.Application(middlewares=[self._token_guard()], client_max_size=MAX_BODY)
        app.router.add_get("/", self._home)
        app.router.add_get("/item", self._item)
        app.router.add_post("/decide", self._decide)
        return app

    async def _open(self, port: int) -> str:
        from aiohttp import web

        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise UserError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc} (pass --port 0 for any free "
                            "port)") from None
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://{HOST}:{bound}/?t={self.token}"
        return self.url

    async def run(self, port: int, ready: Callable[[str], None]) -> None:
        """Serve on ``port`` (0: any free one) until SIGINT or SIGTERM; ``ready(url)`` once listening."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await self._open(port)
        ready(self.url)
        try:
            await stop.wait()
        finally:
            await self._runner.cleanup()

    def start(self, port: int = 0) -> str:
        """Serve from a background thread; returns the URL (with its token)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="review-server", daemon=True)
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self._open(port), self._loop).result(timeout=60)

    def stop(self) -> None:
        if self._loop is None:
            return
        try:
            if self._runner is not None:
                asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=60)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=30)
            self._loop.close()
            self._loop = None

    # ------------------------------------------------------------------ requests

    @staticmethod
    def _headers(resp: Any, nonce: str) -> Any:
        resp.headers["Content-Security-Policy"] = (
            f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; img-src 'none'; "
            "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["X-Frame-Options"] = "DENY"
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def _token_guard(self) -> Any:
        """The middleware that answers 403 to a request without this server's token."""
        from aiohttp import web

        @web.middleware
        async def guard(request: Any, handler: Any) -> Any:
            given = request.query.get("t", "")
            if not hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8")):
                resp = web.Response(status=403, text="forbidden: open the address `reprodiag review serve` printed "
                                    "(it carries the access token)\n")
                return self._headers(resp, secrets.token_urlsafe(8))
            return await handler(request)

        return guard

    def _html(self, html_: str, nonce: str, status: int = 200) -> Any:
        from aiohttp import web

        return self._headers(web.Response(text=html_, status=status, content_type="text/html", charset="utf-8"),
                             nonce)

    def _filters(self, q: Any) -> Filters:
        queue = q.get("queue", "") if q.get("queue", "") in self.queues else self.queues[0]
        typ = q.get("type", "") if q.get("type", "") in TYPES else ""
        status = q.get("status", "") if q.get("status", "") in STATUSES else ""
        return Filters(queue, typ, status)

    def status_of(self, item_id: str) -> str:
        """This reviewer's decision on an item (``accept`` | ``edit`` | ``reject``), or ``unreviewed``."""
        d = self.mine.get(item_id)
        return d.decision if d is not None else "unreviewed"

    def listed(self, f: Filters) -> list[ReviewItem]:
        """The items of ``f.queue`` that match the type (the reader's) and this reviewer's status."""
        return [it for it in self.items if it.queue == f.queue and (not f.type or it.before["error_type"] == f.type)
                and (not f.status or self.status_of(it.item_id) == f.status)]

    async def _home(self, request: Any) -> Any:
        from aiohttp import web

        f = self._filters(request.query)
        items = self.listed(f)
        if not items:
            nonce = secrets.token_urlsafe(16)
            return self._html(render_message("Nothing to review", "The workspace holds no eval candidates (kept "
                                             "records an LLM read, with a root cause); run score first, or pass "
                                             "--include-offline or --sample-sft.", nonce), nonce)
        first = next((it for it in items if self.status_of(it.item_id) == "unreviewed"), items[0])
        raise web.HTTPSeeOther(link("/item", id=first.item_id, **f.params(self.token)))

    def _page(self, item: ReviewItem, f: Filters, **extra: Any) -> ItemPage:
        items = self.listed(f)
        ids = [it.item_id for it in items]
        pos = ids.index(item.item_id) if item.item_id in ids else -1
        if pos >= 0:
            prev_id = ids[pos - 1] if pos > 0 else None
            next_id = ids[pos + 1] if pos + 1 < len(ids) else None
        else:  # not in the list (e.g. decided under a status filter): go on from the list's start
            prev_id, next_id = None, (ids[0] if ids else None)
        thread = self.store.get_thread(item.item_id)
        view = thread_view(thread, item.evidence) if thread is not None else None
        in_queue = [it.item_id for it in self.items if it.queue == f.queue]
        progress = Counter(self.mine[i].decision for i in in_queue if i in self.mine)
        return ItemPage(token=self.token, nonce=secrets.token_urlsafe(16), reviewer=self.reviewer, filters=f,
                        queues=self.queues, item=item, thread=view, position=pos, filtered=len(ids),
                        prev_id=prev_id, next_id=next_id, decision=self.mine.get(item.item_id), progress=progress,
                        total=len(in_queue), **extra)

    async def _item(self, request: Any) -> Any:
        from aiohttp import web

        f = self._filters(request.query)
        item = self.index.get(request.query.get("id", ""))
        if item is None or item.queue != f.queue:
            items = self.listed(f)
            if not items:
                nonce = secrets.token_urlsafe(16)
                return self._html(render_message("No item matches these filters", "Choose another type or status.",
                                                 nonce, back=link("/item", t=self.token, queue=f.queue)), nonce,
                                  status=404 if request.query.get("id") else 200)
            raise web.HTTPSeeOther(link("/item", id=items[0].item_id, **f.params(self.token)))
        page = self._page(item, f)
        return self._html(render_item(page), page.nonce)

    async def _decide(self, request: Any) -> Any:
        from aiohttp import web

        form = await request.post()
        item = self.index.get(str(form.get("id", "")))
        if item is None:
            nonce = secrets.token_urlsafe(16)
            return self._html(render_message("Unknown item", "This item is not served here.", nonce,
                                             back=link("/", t=self.token)), nonce, status=400)
        f = self._filters({"queue": item.queue, "type": form.get("type", ""), "status": form.get("status", "")})
        kind = str(form.get("decision", ""))
        draft = {k: str(v) for k, v in form.items() if isinstance(v, str)}
        common = {"item_id": item.item_id, "queue": item.queue, "reviewer": self.reviewer, "before": item.before,
                  "record_digest": item.digest, "source": "page"}
        try:
            if kind == "accept":
                d = decide(**common, after=None, reason=None)
            elif kind == "reject":
                reason = clean_reason(draft.get("reason"))
                if not reason:
                    raise ValueError("a reject needs a reason: say what is wrong with the item")
                d = decide(**common, after=None, reason=reason, reject=True)
            elif kind == "edit":
                after = clean_fields({
                    "error_type": draft.get("error_type", ""), "root_cause": draft.get("root_cause", ""),
                    "acceptable_directions": draft.get("acceptable_directions", ""),
                    "paper_value": draft.get("paper_value", ""), "obtained_value": draft.get("obtained_value", ""),
                    "is_resolved": {"yes": True, "no": False}.get(draft.get("is_resolved", ""), "?")})
                d = decide(**common, after=after, reason=draft.get("reason"))
            else:
                raise ValueError("the decision must be accept, edit or reject")
        except ValueError as exc:
            page = self._page(item, f, error=f"Not saved: {exc}", draft=draft,
                              open_panel="reject" if kind == "reject" else "edit" if kind == "edit" else None)
            return self._html(render_item(page), page.nonce, status=400)
        put_decisions(self.store, [d])  # committed before the answer leaves
        self.mine[item.item_id] = d
        self.decided += 1
        nxt = str(form.get("next", ""))
        target = nxt if nxt in self.index and self.index[nxt].queue == item.queue else item.item_id
        raise web.HTTPSeeOther(link("/item", id=target, **f.params(self.token)))


def serve(store: Store, *, port: int, reviewer: str, include_offline: bool = False, sample_sft: int = 0,
          seed: int = 0, ready: Callable[[str], None] | None = None) -> dict[str, int]:
    """``reprodiag review serve``: load the items, serve until Ctrl+C or SIGTERM, and return counts (items
    per queue, decisions made). ``ready(url)`` is called once the page listens (default: print it)."""
    from reprodiag.review.items import load_items

    try:
        name = clean_reviewer(reviewer)
    except ValueError as exc:
        raise UserError(f"--reviewer: {exc}") from None
    items = load_items(store, include_offline=include_offline, sample_sft=sample_sft, seed=seed)
    server = ReviewServer(store, items, reviewer=name)
    queues = Counter(it.queue for it in items)

    def announce(url: str) -> None:
        print(f"review: {url}", flush=True)
        print(f"review: {queues.get('eval', 0)} eval items, {queues.get('sft', 0)} SFT rows; reviewer {name}; "
              "listening on 127.0.0.1 only; Ctrl+C stops", flush=True)

    asyncio.run(server.run(port, ready or announce))
    return {"eval items": queues.get("eval", 0), "sft rows": queues.get("sft", 0), "decisions": server.decided}
