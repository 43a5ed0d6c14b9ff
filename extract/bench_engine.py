"""``reprodiag bench extract --engine ray``: extraction throughput through an LLM backend, local vs Ray.

A loopback server speaking OpenAI's chat-completions protocol answers every request after a fixed
latency (default 300 ms, what a hosted model's short answer takes) with a valid, grounded answer for
the thread it was asked about; the official SDK runs unchanged against it. The same generated threads
are extracted by ``extract --backend openai`` in fresh workspaces with ``--engine local`` and ``--engine
ray`` (a local cluster, its start-up timed apart), and rows per second are printed with their ratio.
Each worker keeps ``--concurrency`` requests in flight, so with a latency-bound backend the limit is the
number of requests in flight (workers × concurrency), not the cores: the bench also runs local with the
concurrency Ray reached, to show it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from reprodiag.schema import StageReport, Thread
from reprodiag.store import Store

_NUMBER = re.compile(r"Title: Bench thread (\d+):")
_T0 = datetime(2024, 3, 1, tzinfo=UTC)


def bench_threads(n: int) -> list[Thread]:
    """``n`` short reproduction threads with a maintainer's cause and the asker's confirmation."""
    out = []
    for i in range(n):
        doc = {"repo": f"lab{i % 17}/model", "number": i + 1, "kind": "issue", "state": "closed",
               "title": f"Bench thread {i}: cannot reproduce BLEU",
               "body": f"I get 2{i % 10}.4 BLEU vs 32.7 in the paper.", "author": "asker",
               "created_at": _T0.isoformat(), "updated_at": (_T0 + timedelta(days=2)).isoformat(),
               "comments": [
                   {"id": f"b{i}-1", "author": "maint", "author_association": "MEMBER",
                    "body": "Did you use sacrebleu with the 13a tokenizer? The paper used it.",
                    "created_at": (_T0 + timedelta(hours=1)).isoformat()},
                   {"id": f"b{i}-2", "author": "asker", "author_association": "NONE",
                    "body": "That fixed it, thanks.", "created_at": (_T0 + timedelta(hours=2)).isoformat()}]}
        out.append(Thread.model_validate(doc))
    return out


def _answer(t: Thread) -> dict[str, Any]:
    quote = t.body.strip()
    return {"is_reproduction": True, "error_type": "evaluation_protocol", "problem_statement": t.title,
            "metric": "BLEU", "paper_value": 32.7, "obtained_value": float(quote.split()[2]),
            "hypotheses": [{"text": "sacrebleu 13a tokenizer", "comment_id": t.comments[0].id,
                            "outcome": "confirmed"}],
            "root_cause": "The paper used sacrebleu with the 13a tokenizer.", "resolution": "Use sacrebleu 13a.",
            "is_resolved": True, "diagnostic_depth": 2, "environment": None, "paper": None, "tried": None,
            "evidence": [{"field": "symptom.paper_value", "comment_id": None, "quote": quote},
                         {"field": "symptom.obtained_value", "comment_id": None, "quote": quote},
                         {"field": "root_cause", "comment_id": t.comments[0].id, "quote": "The paper used it."},
                         {"field": "resolution", "comment_id": t.comments[1].id, "quote": "That fixed it"}],
            "injection_suspected": False}


@contextmanager
def latency_server(threads: list[Thread], latency_s: float) -> Iterator[str]:
    """A loopback OpenAI chat-completions endpoint answering after ``latency_s``; yields its base URL."""
    from aiohttp import web

    answers = {i: json.dumps(_answer(t)) for i, t in enumerate(threads)}

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        prompt = "\n".join(str(m.get("content")) for m in body.get("messages", []))
        m = _NUMBER.search(prompt)
        await asyncio.sleep(latency_s)
        if m is None:
            return web.json_response({"error": {"message": "unknown thread", "type": "invalid_request_error"}},
                                     status=400)
        content = answers[int(m.group(1))]
        return web.json_response({
            "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "m"),
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": None}}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(content) // 4,
                      "total_tokens": (len(prompt) + len(content)) // 4}})

    loop = asyncio.new_event_loop()
    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)


def run_engine_bench(n: int = 400, latency_ms: float = 300.0, concurrency: int = 8,
                     workers: int | None = None) -> StageReport:
    """Time ``extract --backend openai`` on ``n`` threads, local and on a local Ray cluster of ``workers``
    CPUs (default: the cores)."""
    from extract.pipeline import run_extract
    from reprodiag.ray_engine import ray_session

    threads = bench_threads(n)
    workers = workers or os.cpu_count() or 1
    report = StageReport(stage="bench extract --engine ray")
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")  # the loopback server ignores it
    with tempfile.TemporaryDirectory(prefix="reprodiag-bench-engine-") as tmp, \
            latency_server(threads, latency_ms / 1000) as url:

        def timed(name: str, engine: str, conc: int) -> float:
            store = Store(Path(tmp) / name)
            store.upsert_threads(threads)
            t = time.perf_counter()
            rep = run_extract(store, backend="openai", model="gpt-4o-mini", base_url=url, no_filter=True,
                              concurrency=conc, engine=engine)
            wall = time.perf_counter() - t
            store.close()
            if rep.counts["records"] != n:
                raise RuntimeError(f"{name}: {rep.counts['records']} of {n} records ({rep.counts['failed']} failed)")
            report.counts[f"{name}_wall_ms"] = round(wall * 1000)
            report.counts[f"{name}_rows_per_s"] = round(n / wall, 1)
            return wall

        local = timed("local", "local", concurrency)
        t = time.perf_counter()
        with ray_session(num_cpus=workers):
            startup = time.perf_counter() - t
            remote = timed("ray", "ray", concurrency)
        local_same = timed("local_same_in_flight", "local", concurrency * workers)
    report.counts.update({"threads": n, "latency_ms": latency_ms, "concurrency_per_worker": concurrency,
                          "ray_workers": workers, "ray_startup_ms": round(startup * 1000)})
    report.notes += [
        f"local: {n / local:.1f} rows/s ({concurrency} requests in flight)",
        f"ray: {n / remote:.1f} rows/s ({workers} workers x {concurrency} in flight) = {local / remote:.2f}x local; "
        f"cluster start-up {startup:.1f} s (not in the ray figure)",
        f"local with {concurrency * workers} in flight: {n / local_same:.1f} rows/s: the limit of a latency-bound "
        "backend is the requests in flight, not the cores",
    ]
    return report
