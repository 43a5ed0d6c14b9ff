"""Loopback fakes of the OpenAI and Anthropic HTTP APIs for tests.

Real aiohttp servers on ``127.0.0.1`` (random port, background thread) that speak
the providers' wire protocol, so the official ``openai`` and ``anthropic`` SDKs
run unchanged against them via ``base_url``::

    srv = OpenAIServer().start()
    client = openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)
    srv.script(Reply.error(429, retry_after=0.1), Reply.json({"a": 1}))
    ...
    srv.requests          # log of RecordedRequest, in arrival order
    srv.stop()

What each request gets back: the next queued :class:`Reply` (``script``), else
``responder(request)`` if set, else ``default`` (a plain text "ok"). A
responder may also return a list of replies, which are queued and the first
one served.

Endpoints. OpenAI: ``POST /v1/chat/completions`` (``response_format`` text,
json_object and json_schema; tools; usage), ``POST /v1/files`` (multipart),
``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``, ``POST /v1/batches``
(processed at once, through the same script), ``GET /v1/batches/{id}``,
``GET /v1/models``. Anthropic: ``POST /v1/messages`` (text, tools/tool_use,
usage), ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
``GET /v1/messages/batches/{id}/results``.

Usage figures are deterministic: ``prompt_tokens`` = characters of the prompt
text // 4 (at least 1), ``completion_tokens`` = characters of the answer // 4,
unless the reply sets them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

ReplyKind = Literal["text", "json", "tool", "error", "raw", "truncated"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``text``: assistant text. ``json``: the object serialised as the answer
    (OpenAI: message content; Anthropic: a ``tool_use`` input when the request
    offered tools, else text). ``tool``: a tool call with ``data`` as its input
    (OpenAI: ``tool_calls``). ``error``: HTTP ``status`` with the provider's
    error body and ``headers`` (e.g. ``retry-after``). ``raw``: ``body`` sent
    verbatim with ``status`` (e.g. a broken JSON document). ``truncated``: the
    ``text`` cut off with finish_reason ``length`` / stop_reason ``max_tokens``.
    ``delay_s``: seconds to wait before answering.
    """

    kind: ReplyKind
    text: str = ""
    data: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    content_type: str = "application/json"
    input_tokens: int | None = None
    output_tokens: int | None = None
    delay_s: float = 0.0
    tool_name: str | None = None

    @classmethod
    def of_text(cls, text: str, **kw: Any) -> Reply:
        return cls("text", text=text, **kw)

    @classmethod
    def json(cls, data: Any, **kw: Any) -> Reply:
        return cls("json", data=data, **kw)

    @classmethod
    def tool(cls, data: Any, name: str | None = None, **kw: Any) -> Reply:
        return cls("tool", data=data, tool_name=name, **kw)

    @classmethod
    def error(cls, status: int, message: str = "fake error", *, retry_after: float | None = None,
              headers: dict[str, str] | None = None, **kw: Any) -> Reply:
        h = dict(headers or {})
        if retry_after is not None:
            h["retry-after"] = f"{retry_after:g}"
        return cls("error", status=status, text=message, headers=h, **kw)

    @classmethod
    def raw(cls, body: str, status: int = 200, content_type: str = "application/json", **kw: Any) -> Reply:
        return cls("raw", body=body, status=status, content_type=content_type, **kw)

    @classmethod
    def truncated(cls, text: str, **kw: Any) -> Reply:
        return cls("truncated", text=text, **kw)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it. ``json``: the parsed body (None if not JSON); header names lowercase."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    raw: bytes
    at: float

    @property
    def model(self) -> str | None:
        return self.json.get("model") if isinstance(self.json, dict) else None

    @property
    def prompt_text(self) -> str:
        """System prompt and all message texts, joined by newlines."""
        return prompt_text_of(self.json if isinstance(self.json, dict) else {})


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") == "tool_result":
                    parts.append(_content_text(block.get("content")))
                elif block.get("type") == "tool_use":
                    parts.append(json.dumps(block.get("input")))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def prompt_text_of(body: dict[str, Any]) -> str:
    parts: list[str] = []
    if "system" in body:
        parts.append(_content_text(body["system"]))
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            parts.append(_content_text(m.get("content")))
            for tc in m.get("tool_calls") or []:
                parts.append(str((tc.get("function") or {}).get("arguments", "")))
    return "\n".join(p for p in parts if p)


Responder = Callable[[RecordedRequest], "Reply | list[Reply]"]


class _FakeServer:
    """Shared plumbing: background loop, script queue, request log."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self.responder: Responder | None = None
        self.default: Reply = Reply.of_text("ok")
        self._seen_prefixes: set[str] = set()
        self._requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port: int = 0

    # ------------------------------------------------------------------ public API

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def api_requests(self, path: str) -> list[RecordedRequest]:
        """Logged requests to one path (e.g. ``/v1/chat/completions``)."""
        return [r for r in self.requests if r.path == path]

    def script(self, *replies: Reply) -> None:
        """Queue replies; each request consumes one (before ``responder``/``default``)."""
        with self._lock:
            self._queue.extend(replies)

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._seen_prefixes.clear()
        self.responder = None
        self.default = Reply.of_text("ok")

    def start(self) -> _FakeServer:
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup() if self._runner else asyncio.sleep(0))
            loop.close()

        self._thread = threading.Thread(target=run, name=f"{type(self).__name__}", daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise errors[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    def __enter__(self) -> _FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals

    def _routes(self, app: web.Application) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    async def _start_site(self) -> None:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        self._routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _record(self, request: web.Request) -> RecordedRequest:
        raw = await request.read()
        doc: Any = None
        if raw and (request.content_type or "").endswith("json"):
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = None
        rec = RecordedRequest(request.method, request.path, {k.lower(): v for k, v in request.headers.items()}, doc, raw, time.time())
        with self._lock:
            self._requests.append(rec)
        return rec

    def _next_reply(self, rec: RecordedRequest) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            got = self.responder(rec)
            if isinstance(got, list):
                if not got:
                    return self.default
                with self._lock:
                    self._queue.extend(got[1:])
                return got[0]
            return got
        return self.default

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    async def _get_batch(self, request: web.Request) -> web.StreamResponse:
        """``GET …/batches/{id}`` for both APIs (subclasses keep ``batches`` and ``_error_body``)."""
        b = self.batches.get(request.match_info["bid"])  # type: ignore[attr-defined]
        if b is None:
            return web.json_response(self._error_body(404, "no such batch"), status=404)  # type: ignore[attr-defined]
        return web.json_response(b)


def _strict_schema_problem(node: Any, root: dict[str, Any], where: tuple[str, ...]) -> str | None:
    """What OpenAI's strict structured outputs refuse: an object without ``additionalProperties: false`` or
    whose ``required`` does not list every property, and a root that is not an object."""
    if not where and (not isinstance(node, dict) or node.get("type") != "object"):
        return "the root schema must be an object"
    if not isinstance(node, dict):
        return None
    if "$ref" in node:
        return None
    types = node.get("type")
    if types == "object" or (isinstance(types, list) and "object" in types) or "properties" in node:
        props = node.get("properties") or {}
        if node.get("additionalProperties") is not False:
            return f"In context={where}, 'additionalProperties' is required to be supplied and to be false."
        missing = [k for k in props if k not in (node.get("required") or [])]
        if missing:
            return (f"In context={where}, 'required' is required to be supplied and to be an array including every "
                    f"key in properties. Missing '{missing[0]}'.")
        for k, v in props.items():
            got = _strict_schema_problem(v, root, (*where, "properties", k))
            if got:
                return got
    for key in ("items",):
        if isinstance(node.get(key), dict):
            got = _strict_schema_problem(node[key], root, (*where, key))
            if got:
                return got
    for key in ("anyOf",):
        for i, sub in enumerate(node.get(key) or []):
            got = _strict_schema_problem(sub, root, (*where, key, str(i)))
            if got:
                return got
    for name, sub in (node.get("$defs") or {}).items():
        got = _strict_schema_problem(sub, root, (*where, "$defs", name))
        if got:
            return got
    return None


def _tool_shape_problem(body: dict[str, Any]) -> str | None:
    """What Anthropic's Messages API refuses in tool use: a tool without a name or an object input_schema,
    and a forced ``tool_choice`` naming no defined tool."""
    tools = body.get("tools") or []
    names = set()
    for i, t in enumerate(tools):
        if not isinstance(t, dict) or not t.get("name"):
            return f"tools.{i}.name: Field required"
        sch = t.get("input_schema")
        if not isinstance(sch, dict) or sch.get("type") != "object":
            return f"tools.{i}.input_schema.type: Input should be 'object'"
        names.add(t["name"])
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool" and choice.get("name") not in names:
        return f"tool_choice.name: Tool '{choice.get('name')}' not found in tools"
    return None


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _answer_text(reply: Reply) -> str:
    if reply.kind in ("json", "tool"):
        return json.dumps(reply.data, ensure_ascii=False)
    return reply.text


# ============================================================================ OpenAI


class OpenAIServer(_FakeServer):
    """Fake OpenAI API. Point the SDK at :attr:`base_url` (``…/v1``)."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{fid}", self._file_meta)
        app.router.add_get("/v1/files/{fid}/content", self._file_content)
        app.router.add_post("/v1/batches", self._create_batch)
        app.router.add_get("/v1/batches/{bid}", self._get_batch)
        app.router.add_get("/v1/models", self._models)

    @staticmethod
    def _error_body(status: int, message: str) -> dict[str, Any]:
        kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                429: "rate_limit_exceeded"}.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def _cached_prefix(self, body: dict[str, Any], prompt_tokens: int, schema: str = "") -> int:
        """OpenAI's automatic prompt caching: a request whose prompt is at least 1,024 tokens and whose
        prefix (schema and leading system message) was seen before gets that prefix (in 128-token steps)
        reported as cached."""
        msgs = body.get("messages") or []
        first = msgs[0] if msgs and isinstance(msgs[0], dict) and msgs[0].get("role") == "system" else None
        if first is None or prompt_tokens < 1024:
            return 0
        text = schema + _content_text(first.get("content"))
        with self._lock:
            seen = text in self._seen_prefixes
            self._seen_prefixes.add(text)
        return (min(_tokens(text), prompt_tokens) // 128) * 128 if seen else 0

    #: Model names served as reasoning models (OpenAI's o-series and gpt-5 family): they refuse
    #: ``max_tokens`` and non-default sampling parameters, as the real API documents.
    reasoning_models = re.compile(r"^(?:o\d|gpt-5)(?![\w.-]*-chat)")

    def parameter_error(self, body: dict[str, Any]) -> str | None:
        """The message the real API gives for a parameter this model does not take, or for a strict JSON
        schema it rejects (None: acceptable)."""
        rf = body.get("response_format")
        if isinstance(rf, dict) and rf.get("type") == "json_schema":
            js = rf.get("json_schema") or {}
            if js.get("strict"):
                problem = _strict_schema_problem(js.get("schema") or {}, js.get("schema") or {}, ())
                if problem:
                    return f"Invalid schema for response_format '{js.get('name', '')}': {problem}"
        model = str(body.get("model", ""))
        if self.reasoning_models.match(model):
            if "max_tokens" in body:
                return ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                        "Use 'max_completion_tokens' instead.")
            for k in ("temperature", "top_p"):
                if k in body and body[k] != 1:
                    return (f"Unsupported value: '{k}' does not support {body[k]} with this model. "
                            "Only the default (1) value is supported.")
        elif "reasoning_effort" in body:
            return "Unrecognized request argument supplied: reasoning_effort"
        return None

    def completion(self, body: dict[str, Any], reply: Reply) -> tuple[int, dict[str, str], Any]:
        """(status, headers, JSON body or raw str) for one chat request: shared by HTTP and batches."""
        refused = self.parameter_error(body)
        if refused is not None:
            return 400, {}, self._error_body(400, refused)
        if reply.kind == "error":
            return reply.status, reply.headers, self._error_body(reply.status, reply.text)
        if reply.kind == "raw":
            return reply.status, reply.headers, reply.body or ""
        prompt = prompt_text_of(body)
        answer = _answer_text(reply)
        message: dict[str, Any] = {"role": "assistant", "content": answer, "refusal": None}
        finish = "stop"
        if reply.kind == "tool":
            tools = body.get("tools") or []
            name = reply.tool_name or (tools[0]["function"]["name"] if tools else "answer")
            message["content"] = None
            message["tool_calls"] = [{"id": self._new_id("call_"), "type": "function",
                                      "function": {"name": name, "arguments": answer}}]
            finish = "tool_calls"
        elif reply.kind == "truncated":
            finish = "length"
        schema = json.dumps(body.get("response_format") or body.get("tools") or "", sort_keys=True)
        # the structured-output schema (or tool list) counts as prompt tokens, as the real API bills it
        usage_in = reply.input_tokens if reply.input_tokens is not None else _tokens(prompt) + _tokens(schema)
        usage_out = reply.output_tokens if reply.output_tokens is not None else _tokens(answer)
        cached = self._cached_prefix(body, usage_in, schema)
        doc = {
            "id": self._new_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "unknown"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out,
                      "total_tokens": usage_in + usage_out, "prompt_tokens_details": {"cached_tokens": cached}},
            "system_fingerprint": "fp_fake",
        }
        return 200, reply.headers, doc

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request)
        if not isinstance(rec.json, dict) or "messages" not in rec.json or "model" not in rec.json:
            return web.json_response(self._error_body(400, "body must hold 'model' and 'messages'"), status=400)
        refused = self.parameter_error(rec.json)
        if refused is not None:  # refused before any scripted reply is consumed, as a real server would
            return web.json_response(self._error_body(400, refused), status=400)
        reply = self._next_reply(rec)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        status, headers, doc = self.completion(rec.json, reply)
        if isinstance(doc, str):
            return web.Response(status=status, body=doc.encode(), headers=headers, content_type=reply.content_type)
        return web.json_response(doc, status=status, headers=headers)

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        up = form.get("file")
        purpose = str(form.get("purpose", ""))
        if up is None or not hasattr(up, "file"):
            return web.json_response(self._error_body(400, "missing file"), status=400)
        data = up.file.read()
        with self._lock:
            self._requests.append(RecordedRequest(request.method, request.path, {k.lower(): v for k, v in request.headers.items()},
                                                  {"purpose": purpose}, data, time.time()))
        fid = self._new_id("file-")
        meta = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": up.filename or "upload.jsonl", "purpose": purpose, "status": "processed"}
        self.files[fid] = {"meta": meta, "data": data}
        return web.json_response(meta)

    async def _file_meta(self, request: web.Request) -> web.StreamResponse:
        f = self.files.get(request.match_info["fid"])
        if f is None:
            return web.json_response(self._error_body(404, "no such file"), status=404)
        return web.json_response(f["meta"])

    async def _file_content(self, request: web.Request) -> web.StreamResponse:
        f = self.files.get(request.match_info["fid"])
        if f is None:
            return web.json_response(self._error_body(404, "no such file"), status=404)
        return web.Response(body=f["data"], content_type="application/octet-stream")

    async def _create_batch(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request)
        body = rec.json if isinstance(rec.json, dict) else {}
        f = self.files.get(str(body.get("input_file_id")))
        if f is None:
            return web.json_response(self._error_body(400, "unknown input_file_id"), status=400)
        out_lines = []
        for line in f["data"].decode("utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            sub = RecordedRequest("POST", item.get("url", "/v1/chat/completions"), {}, item.get("body"),
                                  json.dumps(item.get("body")).encode(), time.time())
            with self._lock:
                self._requests.append(sub)
            status, _h, doc = self.completion(item.get("body") or {}, self._next_reply(sub))
            out_lines.append({"id": self._new_id("batch_req_"), "custom_id": item.get("custom_id"),
                              "response": {"status_code": status, "request_id": self._new_id("req_"),
                                           "body": doc}, "error": None})
        out_id = self._new_id("file-")
        data = "".join(json.dumps(x) + "\n" for x in out_lines).encode()
        self.files[out_id] = {"meta": {"id": out_id, "object": "file", "bytes": len(data),
                                       "created_at": int(time.time()), "filename": "batch_output.jsonl",
                                       "purpose": "batch_output", "status": "processed"}, "data": data}
        bid = self._new_id("batch_")
        now = int(time.time())
        batch = {"id": bid, "object": "batch", "endpoint": body.get("endpoint", "/v1/chat/completions"),
                 "input_file_id": body["input_file_id"], "completion_window": body.get("completion_window", "24h"),
                 "status": "completed", "output_file_id": out_id, "error_file_id": None, "created_at": now,
                 "completed_at": now, "request_counts": {"total": len(out_lines), "completed": len(out_lines),
                                                         "failed": 0}, "metadata": body.get("metadata")}
        self.batches[bid] = batch
        return web.json_response(batch)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model",
                                                              "created": 0, "owned_by": "fake"}]})


# ============================================================================ Anthropic


class AnthropicServer(_FakeServer):
    """Fake Anthropic Messages API. Point the SDK at :attr:`base_url` (no ``/v1``)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_results: dict[str, list[dict[str, Any]]] = {}

    @property
    def base_url(self) -> str:
        return self.url

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/batches", self._create_batch)
        app.router.add_get("/v1/messages/batches/{bid}", self._get_batch)
        app.router.add_get("/v1/messages/batches/{bid}/results", self._results)

    @staticmethod
    def _error_body(status: int, message: str) -> dict[str, Any]:
        kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def message(self, body: dict[str, Any], reply: Reply) -> tuple[int, dict[str, str], Any]:
        if reply.kind == "error":
            return reply.status, reply.headers, self._error_body(reply.status, reply.text)
        if reply.kind == "raw":
            return reply.status, reply.headers, reply.body or ""
        prompt = prompt_text_of(body)
        tools = body.get("tools") or []
        choice = body.get("tool_choice") or {}
        forced = choice.get("name") if isinstance(choice, dict) else None
        answer = _answer_text(reply)
        stop = "end_turn"
        if reply.kind in ("json", "tool") and (tools or reply.kind == "tool"):
            name = reply.tool_name or forced or (tools[0]["name"] if tools else "answer")
            content: list[dict[str, Any]] = [{"type": "tool_use", "id": self._new_id("toolu_"), "name": name,
                                              "input": reply.data}]
            stop = "tool_use"
        elif reply.kind == "truncated":
            stop = "max_tokens"
            if tools:
                name = forced or tools[0]["name"]
                content = [{"type": "tool_use", "id": self._new_id("toolu_"), "name": name, "input": {}}]
            else:
                content = [{"type": "text", "text": answer}]
        else:
            content = [{"type": "text", "text": answer}]
        usage_in = reply.input_tokens if reply.input_tokens is not None else _tokens(prompt)
        usage_out = reply.output_tokens if reply.output_tokens is not None else _tokens(answer)
        write = read = 0
        system = body.get("system")
        if isinstance(system, list) and any(isinstance(b, dict) and b.get("cache_control") for b in system):
            # the cached prefix: tools, then the system blocks up to the marked one
            prefix = json.dumps(body.get("tools") or [], sort_keys=True) + _content_text(system)
            size = _tokens(prefix)
            if size >= 1024 and reply.input_tokens is None:
                with self._lock:
                    seen = prefix in self._seen_prefixes
                    self._seen_prefixes.add(prefix)
                read, write = (size, 0) if seen else (0, size)
                usage_in = max(usage_in - size, 1)  # Anthropic's input_tokens counts only the uncached part
        doc = {"id": self._new_id("msg_"), "type": "message", "role": "assistant",
               "model": body.get("model", "unknown"), "content": content, "stop_reason": stop,
               "stop_sequence": None,
               "usage": {"input_tokens": usage_in, "output_tokens": usage_out,
                         "cache_creation_input_tokens": write, "cache_read_input_tokens": read}}
        return 200, reply.headers, doc

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request)
        body = rec.json
        if not isinstance(body, dict) or "messages" not in body or "model" not in body or "max_tokens" not in body:
            return web.json_response(self._error_body(400, "body must hold 'model', 'messages', 'max_tokens'"),
                                     status=400)
        shape = _tool_shape_problem(body)
        if shape is not None:
            return web.json_response(self._error_body(400, shape), status=400)
        reply = self._next_reply(rec)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        status, headers, doc = self.message(body, reply)
        if isinstance(doc, str):
            return web.Response(status=status, body=doc.encode(), headers=headers, content_type=reply.content_type)
        return web.json_response(doc, status=status, headers=headers)

    async def _create_batch(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request)
        body = rec.json if isinstance(rec.json, dict) else {}
        results = []
        for item in body.get("requests") or []:
            params = item.get("params") or {}
            sub = RecordedRequest("POST", "/v1/messages", {}, params, json.dumps(params).encode(), time.time())
            with self._lock:
                self._requests.append(sub)
            status, _h, doc = self.message(params, self._next_reply(sub))
            if status == 200 and isinstance(doc, dict):
                result: dict[str, Any] = {"type": "succeeded", "message": doc}
            else:
                err = doc if isinstance(doc, dict) else self._error_body(500, "invalid response")
                result = {"type": "errored", "error": err}
            results.append({"custom_id": item.get("custom_id"), "result": result})
        bid = self._new_id("msgbatch_")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        ok = sum(r["result"]["type"] == "succeeded" for r in results)
        batch = {"id": bid, "type": "message_batch", "processing_status": "ended", "created_at": now,
                 "ended_at": now, "expires_at": now, "archived_at": None, "cancel_initiated_at": None,
                 "request_counts": {"processing": 0, "succeeded": ok, "errored": len(results) - ok,
                                    "canceled": 0, "expired": 0},
                 "results_url": f"{self.url}/v1/messages/batches/{bid}/results"}
        self.batches[bid] = batch
        self.batch_results[bid] = results
        return web.json_response(batch)

    async def _results(self, request: web.Request) -> web.StreamResponse:
        res = self.batch_results.get(request.match_info["bid"])
        if res is None:
            return web.json_response(self._error_body(404, "no such batch"), status=404)
        data = "".join(json.dumps(x) + "\n" for x in res).encode()
        return web.Response(body=data, content_type="application/x-jsonl")
