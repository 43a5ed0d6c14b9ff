"""Recorded answers: a capable model's answers to the project's own batch requests, kept as an instrument.

A recorded set is a folder holding ``manifest.json`` and one Batch API results file per labeled part
(``test.results.jsonl``, ``dev.results.jsonl``, ``sample.results.jsonl``), in the OpenAI or Anthropic
results format that ``extract --collect`` reads. The manifest says which model answered, when, how, and
for which prompt (``prompt_version``) and answer schema (``schema_hash``): answers made for another prompt
or schema are *stale* and are not scored as current (:func:`staleness`).

How a set is made (``scripts/record_answers.py``): ``extract --batch`` writes the requests of a part;
the requests are cut into chunks of a few dozen (:func:`chunk_text`: the system prompt, the strict
schema, then each request's user message under its custom_id); the answering model reads each chunk and
writes one ``{"custom_id", "answer"}`` line per request; :func:`results_lines` wraps those answers as
Batch API result lines, with token usage estimated at 4 characters per token where the answering
channel reported none.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extract.base import Extractor
from reprodiag.errors import UserError, read_user_text
from reprodiag.manifests import read_manifest_doc
from reprodiag.schema import Record, Thread

#: The recorded set shipped with the project.
RECORDED_DIR = Path(__file__).with_name("data") / "recorded"
MANIFEST = "manifest.json"
#: How many ``dev`` threads a recording covers, and the seed that picks them (:func:`dev_subset`).
DEV_SUBSET = 400
DEV_SEED = 2026
#: Characters per token of the estimated usage (the project's estimate, :mod:`extract.compaction`).
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Manifest:
    """What a recorded set is. ``parts``: part name → number of answers."""

    model: str
    date: str
    prompt_version: str
    schema_hash: str
    method: str
    parts: dict[str, int]
    usage: str = "estimated"
    notes: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "date": self.date, "prompt_version": self.prompt_version,
                "schema_hash": self.schema_hash, "method": self.method, "parts": dict(self.parts),
                "usage": self.usage, "notes": self.notes}


def read_manifest(folder: Path) -> Manifest:
    """The manifest of a recorded set; a missing or malformed one is a one-line UserError."""
    doc, parts = read_manifest_doc(folder / MANIFEST, "recorded-answers manifest",
                                   ("model", "date", "prompt_version", "schema_hash", "method"))
    return Manifest(doc["model"], doc["date"], doc["prompt_version"], doc["schema_hash"], doc["method"], parts,
                    str(doc.get("usage") or "estimated"), str(doc.get("notes") or ""))


def find_manifest(answers: Path) -> Manifest | None:
    """The manifest beside a results file (or in a folder), if there is one."""
    folder = answers if answers.is_dir() else answers.parent
    return read_manifest(folder) if (folder / MANIFEST).exists() else None


def staleness(manifest: Manifest | None) -> str | None:
    """Why answers of ``manifest`` are not current (another prompt version or schema), or None."""
    from extract.answer import SCHEMA_HASH
    from extract.prompts import PROMPT_VERSION

    if manifest is None:
        return None
    why = []
    if manifest.prompt_version != PROMPT_VERSION:
        why.append(f"prompt {manifest.prompt_version}, current {PROMPT_VERSION}")
    if manifest.schema_hash != SCHEMA_HASH:
        why.append(f"schema {manifest.schema_hash}, current {SCHEMA_HASH}")
    return "; ".join(why) or None


def results_path(folder: Path, part: str) -> Path:
    return folder / f"{part}.results.jsonl"


def dev_subset(rows: Sequence[Any], n: int = DEV_SUBSET, seed: int = DEV_SEED) -> list[Any]:
    """The ``n`` dev rows a recording covers: a seeded sample of the rows ordered by thread id (rows keep
    their file order). Rows are :class:`extract.realcorpus.Labeled`."""
    ids = sorted(r.thread.id for r in rows)
    chosen = set(random.Random(seed).sample(ids, min(n, len(ids))))
    return [r for r in rows if r.thread.id in chosen]


def request_messages(line: dict[str, Any]) -> tuple[str, str]:
    """(system, user) of one batch request line, OpenAI or Anthropic format."""
    body = line.get("body") or line.get("params") or {}
    msgs = body.get("messages") or []
    system = body.get("system")
    if isinstance(system, list):  # Anthropic content blocks
        system = "".join(b.get("text", "") for b in system if isinstance(b, dict))
    user = ""
    for m in msgs:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        if m.get("role") == "system":
            system = content
        elif m.get("role") == "user":
            user = content or ""
    return str(system or ""), str(user)


def chunk_text(lines: Sequence[dict[str, Any]], schema: dict[str, Any]) -> str:
    """One chunk for the answering model: the system prompt (once: every request of a file shares it), the
    strict schema, then each request's user message under its custom_id."""
    if not lines:
        return ""
    system = request_messages(lines[0])[0]
    out = ["# SYSTEM PROMPT (applies to every request)", "", system, "", "# JSON SCHEMA of the answer", "",
           json.dumps(schema, indent=1, ensure_ascii=False), "", f"# REQUESTS ({len(lines)})", ""]
    for line in lines:
        s, user = request_messages(line)
        if s != system:
            raise UserError(f"request {line.get('custom_id')} has another system prompt: write one chunk per prompt")
        out += [f"## REQUEST custom_id={line.get('custom_id')}", "", user, ""]
    return "\n".join(out)


def estimate(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def results_lines(requests: Iterable[dict[str, Any]], answers: dict[str, Any], *, model: str,
                  created: int) -> list[dict[str, Any]]:
    """OpenAI Batch result lines for ``requests`` in their order: the recorded answer of each custom_id as
    the message content (a request without an answer becomes an error line). Usage estimated from the
    request's and the answer's characters."""
    out = []
    for i, req in enumerate(requests):
        cid = str(req.get("custom_id"))
        system, user = request_messages(req)
        ans = answers.get(cid)
        if ans is None:
            out.append({"id": f"batch_req_{i:06d}", "custom_id": cid, "response": None,
                        "error": {"code": "no_answer", "message": "no recorded answer for this request"}})
            continue
        content = ans if isinstance(ans, str) else json.dumps(ans, ensure_ascii=False)
        schema = json.dumps((req.get("body") or {}).get("response_format") or {})
        pt, ct = estimate(system + user + schema), estimate(content)
        out.append({"id": f"batch_req_{i:06d}", "custom_id": cid, "error": None, "response": {
            "status_code": 200, "request_id": f"req_{i:06d}",
            "body": {"id": f"chatcmpl-recorded-{i:06d}", "object": "chat.completion", "created": created,
                     "model": model,
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}}}})
    return out


def result_answer(line: dict[str, Any]) -> tuple[str, Any, str | None]:
    """(custom_id, :class:`extract.llm.Completion` or None, error) of one results line, either provider's
    format (Anthropic lines carry ``result``, OpenAI lines ``response``)."""
    if "result" in line:
        from extract.anthropic_backend import result_answer as anthropic_result

        return anthropic_result(line)
    from extract.openai_backend import result_answer as openai_result

    return openai_result(line)


def read_results(path: Path) -> dict[str, tuple[Any, str | None]]:
    """custom_id → (completion or None, error) of a Batch API results file; a line that is not a JSON
    object is a one-line UserError naming file and line."""
    out: dict[str, tuple[Any, str | None]] = {}
    for no, line in enumerate(read_user_text(path, "batch results").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise ValueError
        except ValueError:
            raise UserError(f"{path}:{no}: not a JSON object") from None
        cid, comp, err = result_answer(doc)
        out[cid] = (comp, err)
    return out


class RecordedExtractor(Extractor):
    """Records from recorded answers (a Batch API results file) instead of a provider: the same parsing,
    schema validation and grounding as ``extract --collect``; no re-ask (a recorded answer is final).

    ``failures``: thread id → reason for answers that are unusable (failed request, truncated, not JSON,
    schema violation); ``unanswered``: threads the file holds no answer for; ``truncated``: how many of the
    failures were truncated answers; ``dropped``: thread id → the fields its record lost for want of a verbatim
    quote."""

    backend = "recorded"

    def __init__(self, path: Path, *, model: str | None = None, backend: str = "recorded") -> None:
        from extract.pricing import Usage

        self.path = path
        self.model = model
        self.backend = backend
        self.results = read_results(path)
        self.failures: dict[str, str] = {}
        self.unanswered: list[str] = []
        self.truncated = 0
        self.usage = Usage()
        self.answers: dict[str, dict[str, Any]] = {}
        self.dropped: dict[str, list[str]] = {}

    def answered(self, thread_id: str) -> bool:
        from extract.llm import custom_id

        return custom_id(thread_id) in self.results

    def extract(self, threads: list[Thread]) -> list[Record]:
        from extract.answer import dropped_fields, to_record
        from extract.llm import AnswerError, custom_id, parse_answer
        from extract.prompts import PROMPT_VERSION

        out: list[Record] = []
        for t in threads:
            got = self.results.get(custom_id(t.id))
            if got is None:
                self.unanswered.append(t.id)
                continue
            comp, err = got
            if comp is None:
                self.failures[t.id] = err or "batch request failed"
                continue
            self.usage = self.usage + comp.usage
            try:
                if comp.truncated:
                    self.truncated += 1
                    raise AnswerError("answer was truncated (output token limit)")
                answer = parse_answer(comp.text, comp.data)
            except AnswerError as exc:
                self.failures[t.id] = str(exc)
                continue
            self.answers[t.id] = answer.model_dump(mode="json")
            if bad := dropped_fields(t, answer):
                self.dropped[t.id] = bad
            out.append(to_record(t, answer, backend=self.backend, model=self.model, prompt_version=PROMPT_VERSION))
        return out

    def cost_summary(self) -> str:
        from extract.pricing import cost_line

        return cost_line(self.model, self.usage)
