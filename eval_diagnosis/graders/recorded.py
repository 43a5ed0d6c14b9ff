"""The LLM judge by batch, and recorded verdicts as an instrument.

``grade --grader llm:PROVIDER:MODEL --batch FILE`` writes one Batch API request per answer to grade (the
judge's system prompt and the request of :func:`eval_diagnosis.graders.llm.judge_request`, first order, in
OpenAI's or Anthropic's Batch format by the provider); ``--collect RESULTS`` grades the answers from the
provider's results file (OpenAI or Anthropic format) with :class:`RecordedJudge`. A failed or unparsable line is
an error grade (reported apart from misses), never fatal; answers the file holds no verdict for are errors too
("no verdict"), so a rerun of ``--batch`` for those alone costs only what is left (the requests of answers
already judged can be left out with ``--collect`` of the earlier results, see :func:`write_judge_batch`).

A *recorded* verdict set is a folder with ``manifest.json`` (model, date, ``judge_prompt_version``, method)
and one results file per labeled answer set (``test.results.jsonl``, ``dev.results.jsonl``): verdicts of a
capable model to the exact judge requests of the project's labeled answers, the model given only each request.
Verdicts made for another judge prompt are *stale* (:func:`verdicts_staleness`) and not scored as current.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_diagnosis.graders.base import Grade
from eval_diagnosis.graders.llm import (
    JUDGE_PROMPT_VERSION,
    judge_request,
    parse_verdict,
    verdict_grade,
)
from eval_diagnosis.providers import chat_batch_line
from reprodiag.atomic_write import replacing
from reprodiag.errors import UserError
from reprodiag.manifests import read_manifest_doc
from reprodiag.schema import EvalItem

MANIFEST = "manifest.json"
#: The recorded verdicts shipped with the project.
VERDICTS_DIR = Path(__file__).resolve().parents[1] / "data" / "verdicts"


@dataclass(frozen=True)
class VerdictManifest:
    model: str
    date: str
    judge_prompt_version: str
    method: str
    parts: dict[str, int]
    notes: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "date": self.date, "judge_prompt_version": self.judge_prompt_version,
                "method": self.method, "parts": dict(self.parts), "notes": self.notes}


def read_verdict_manifest(folder: Path) -> VerdictManifest | None:
    """The manifest of a recorded verdict set (None when the folder has none); malformed: one-line UserError."""
    path = folder / MANIFEST
    if not path.exists():
        return None
    doc, parts = read_manifest_doc(path, "recorded-verdicts manifest", ("model", "date", "judge_prompt_version",
                                                                        "method"))
    return VerdictManifest(doc["model"], doc["date"], doc["judge_prompt_version"], doc["method"], parts,
                           str(doc.get("notes") or ""))


def verdicts_staleness(m: VerdictManifest | None) -> str | None:
    if m is None or m.judge_prompt_version == JUDGE_PROMPT_VERSION:
        return None
    return f"judge prompt {m.judge_prompt_version}, current {JUDGE_PROMPT_VERSION}"


def judge_spec(grader: str) -> tuple[str, str]:
    """(provider, model) of a reference-judge grader spec ``llm:openai:MODEL`` / ``llm:anthropic:MODEL``."""
    if not grader.startswith("llm:"):
        raise UserError(f"--batch/--collect need the reference judge, --grader llm:openai:MODEL or "
                        f"llm:anthropic:MODEL (got {grader!r})")
    provider, _, model = grader[len("llm:"):].partition(":")
    if provider not in ("openai", "anthropic") or not model:
        raise UserError(f"--batch/--collect need a Batch API provider, llm:openai:MODEL or llm:anthropic:MODEL "
                        f"(got {grader!r})")
    return provider, model


def write_judge_batch(pairs: Iterable[tuple[EvalItem, str]], grader: str, path: Path,
                      done: set[str] | None = None) -> dict[str, int]:
    """Write the judge requests of ``pairs`` (item, answer) to ``path`` (JSONL), once per distinct request;
    ``done``: custom ids already judged (left out). Returns counts: requests, nothing to ask, left out."""
    provider, model = judge_spec(grader)
    seen: set[str] = set()
    counts = {"batch_requests": 0, "no_request_needed": 0, "already_judged": 0}
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as fh:
        for item, answer in pairs:
            req = judge_request(item, answer)
            if isinstance(req, Grade):
                counts["no_request_needed"] += 1
                continue
            if req.custom_id in seen:
                continue
            seen.add(req.custom_id)
            if done and req.custom_id in done:
                counts["already_judged"] += 1
                continue
            line = chat_batch_line(provider, model, req.custom_id, req.system, req.prompt)
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            counts["batch_requests"] += 1
    return counts


class RecordedJudge:
    """The reference judge answering from a Batch API results file (or a recorded verdict set's part):
    ``grade(item, answer)`` looks the verdict up by the request's custom id. A missing, failed or unparsable
    verdict is an error grade (``error`` set), which reports count apart from misses."""

    def __init__(self, results: Path, name: str = "llm:recorded") -> None:
        from extract.recorded import read_results

        if not results.exists():
            raise UserError(f"no judge results at {results}")
        self.results = read_results(results)
        self.name = name
        self.missing = 0
        self.failed = 0

    def known(self) -> set[str]:
        """Custom ids the file holds a usable verdict for."""
        return {k for k, (c, err) in self.results.items() if c is not None and not err}

    def grade(self, item: EvalItem, answer: str) -> Grade:
        req = judge_request(item, answer)
        if isinstance(req, Grade):
            return req.model_copy(update={"grader": self.name})
        comp, err = self.results.get(req.custom_id, (None, "no verdict for this answer"))
        if comp is None or err:
            self.missing += comp is None and err == "no verdict for this answer"
            self.failed += not (comp is None and err == "no verdict for this answer")
            return Grade(id=item.id, error=err or "no verdict", reason="error: judge verdict unavailable",
                         grader=self.name)
        text = comp.text if comp.text is not None else json.dumps(comp.data)
        verdict = parse_verdict(text or "", req)
        if verdict is None:
            self.failed += 1
            return Grade(id=item.id, error="judge reply was not the requested JSON",
                         reason="error: judge reply was not the requested JSON", grader=self.name)
        return verdict_grade(item, req, verdict, self.name)


def recorded_part(folder: Path, labels: Path) -> Path:
    """The results file of a recorded verdict set for the labeled answer set ``labels`` (``test.jsonl`` →
    ``test.results.jsonl``)."""
    return folder / f"{labels.stem}.results.jsonl"
