"""Typed contracts shared by every stage (see ARCHITECTURE.md, "Contracts").

All models are pydantic v2 and round-trip through JSON:
``Model.model_validate(obj.model_dump(mode="json")) == obj``.

Enumerations are ``Literal`` types, so an unknown value is a validation error,
never silently accepted. Timestamps are timezone-aware ``datetime`` values;
naive inputs are taken as UTC. ``parse_thread`` / ``parse_record`` wrap
pydantic's errors in :class:`SchemaError`, whose message names the thread id
and the dotted path of the offending field.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

ThreadKind = Literal["issue", "pull_request", "discussion"]
ThreadState = Literal["open", "closed"]
ErrorType = Literal[
    "hyperparameter",
    "data",
    "evaluation_protocol",
    "framework_version",
    "seed_hardware",
    "other",
]
#: The five root-cause types of SPEC.md, without the catch-all ``other``.
ERROR_TYPES: tuple[str, ...] = (
    "hyperparameter",
    "data",
    "evaluation_protocol",
    "framework_version",
    "seed_hardware",
)
Outcome = Literal["confirmed", "refuted", "untested"]
ResolutionType = Literal["resolved", "unresolved_valuable", "unresolved"]
Tier = Literal["current", "historical", "filtered"]
TaskType = Literal["deterministic", "nlp_generation", "rl", "generative"]
VerdictKind = Literal[
    "confirmed",
    "symptom_not_reproduced",
    "fix_not_confirmed",
    "unstable",
    "error",
    "timeout",
    "skipped",
]
Phase = Literal["setup", "before", "fix", "after"]

#: GitHub author associations that speak for the repository.
MAINTAINER_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


class SchemaError(ValueError):
    """A document does not match a contract. ``str(err)`` is one line."""


def _utc(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


#: Optional GitHub fields that exports write as ``null``: a null reads as the field's default.
NULLABLE_DEFAULTS = frozenset({"author_association", "labels", "reactions", "is_answer", "replies", "comments",
                               "url", "title", "body"})


def _null_to_default(data: Any) -> Any:
    if isinstance(data, dict) and any(data.get(k, 0) is None for k in NULLABLE_DEFAULTS):
        return {k: v for k, v in data.items() if not (v is None and k in NULLABLE_DEFAULTS)}
    return data


# --------------------------------------------------------------------------- threads


class Comment(_Model):
    """One comment of an issue/PR, or one discussion comment with its replies."""

    id: str
    author: str | None = None
    author_association: str = "NONE"
    body: str = ""
    created_at: datetime
    reactions: int = 0
    is_answer: bool = False
    replies: list[Comment] = Field(default_factory=list)

    _utc_created = field_validator("created_at", mode="after")(_utc)
    _nulls = model_validator(mode="before")(_null_to_default)


class Thread(_Model):
    """An issue, pull request or discussion with all its comments."""

    repo: str
    number: int
    kind: ThreadKind
    url: str = ""
    title: str = ""
    body: str = ""
    author: str | None = None
    author_association: str = "NONE"
    state: ThreadState
    state_reason: str | None = None
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None
    labels: list[str] = Field(default_factory=list)
    reactions: int = 0
    category: str | None = None
    answer_id: str | None = None
    comments: list[Comment] = Field(default_factory=list)

    _utc_dates = field_validator("created_at", "updated_at", "closed_at", mode="after")(_utc)
    _nulls = model_validator(mode="before")(_null_to_default)

    @field_validator("repo")
    @classmethod
    def _repo_shape(cls, v: str) -> str:
        if v.count("/") != 1 or not all(v.split("/")):
            raise ValueError(f"repo must be 'owner/name', got {v!r}")
        return v

    @property
    def id(self) -> str:
        """``owner/name#number``; discussions ``owner/name#d<number>``."""
        return thread_id(self.repo, self.number, self.kind)

    def all_comments(self) -> list[Comment]:
        """Comments and discussion replies, flattened in reading order."""
        out: list[Comment] = []
        for c in self.comments:
            out.append(c)
            out.extend(c.replies)
        return out

    def content_hash(self) -> str:
        """SHA-256 of the canonical JSON document (stable across key order)."""
        return content_hash(self.model_dump(mode="json"))


def thread_id(repo: str, number: int, kind: str) -> str:
    return f"{repo}#d{number}" if kind == "discussion" else f"{repo}#{number}"


def content_hash(doc: Any) -> str:
    raw = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- records


class Symptom(_Model):
    """The reported gap. ``gap`` is ``obtained_value - paper_value`` in the metric's unit."""

    metric: str | None = None
    paper_value: float | None = None
    obtained_value: float | None = None
    gap: float | None = None


class Hypothesis(_Model):
    text: str
    comment_id: str | None = None
    outcome: Outcome = "untested"
    #: What in the thread ruled it in or out, in the thread's terms (LLM readers; None when untested or unknown).
    basis: str | None = None


class Evidence(_Model):
    """A verbatim quote (whitespace-normalised match) backing ``field``."""

    field: str
    comment_id: str | None = None  # None: the thread body
    quote: str


def _map_field(value: Any) -> Any:
    """A map field as Parquet exports hold it (a JSON object string, or a struct with nulls) → a dict."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    return value


class TemporalTag(_Model):
    created_year: int | None = None
    framework_versions: dict[str, str] = Field(default_factory=dict)

    _map_versions = field_validator("framework_versions", mode="before")(_map_field)
    tier: Tier = "current"
    still_relevant: bool = True
    historical_value: bool = False
    weight: float = 1.0


class Quality(_Model):
    score: int = 0
    components: dict[str, int] = Field(default_factory=dict)

    _map_components = field_validator("components", mode="before")(_map_field)
    keep: bool = True
    drop_reason: str | None = None


class ExtractorInfo(_Model):
    backend: str
    model: str | None = None
    prompt_version: str | None = None


class Participant(_Model):
    login: str
    role: Literal["asker", "maintainer", "contributor", "bot"] = "contributor"


class ThreadStats(_Model):
    """Facts about the source thread that scoring needs, so it runs on records alone."""

    kind: ThreadKind = "issue"
    state: ThreadState = "open"
    state_reason: str | None = None
    created_at: datetime | None = None
    comments: int = 0
    reactions: int = 0
    labels: list[str] = Field(default_factory=list)
    participants: list[Participant] = Field(default_factory=list)
    referenced: bool = False
    bot_only: bool = False
    has_answer: bool = False

    _utc_created = field_validator("created_at", mode="after")(_utc)


class Step(_Model):
    """One executed command of a replay: an execution-trajectory step."""

    phase: Phase
    command: str
    exit_code: int | None = None
    duration_s: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""
    metric: float | None = None
    seed: int | None = None
    timed_out: bool = False


class Measurement(_Model):
    values: list[float] = Field(default_factory=list)
    mean: float | None = None
    std: float | None = None


class Verdict(_Model):
    """Outcome of replaying one case. Tolerance is relative: |x - ref| <= tol * |ref|."""

    case_id: str
    verdict: VerdictKind
    before: Measurement = Field(default_factory=Measurement)
    after: Measurement = Field(default_factory=Measurement)
    tolerance: float | None = None
    direction_ok: bool | None = None
    backend: str | None = None
    gpu: str | None = None
    reason: str = ""
    steps: list[Step] = Field(default_factory=list)
    thread_id: str | None = None
    error_type: ErrorType | None = None
    expected: str | None = None
    #: The command whose output gave the after-metric (``[run] command`` or the fix's run command).
    after_command: str | None = None
    #: How the fix was read, when it was not taken literally (e.g. a fix command read as the after-run).
    fix_note: str | None = None


class SourceSpec(_Model):
    """Where the case's code comes from: a directory next to the spec, or a git URL."""

    path: str | None = None
    git: str | None = None
    ref: str | None = None


class SetupSpec(_Model):
    commands: list[str] = Field(default_factory=list)
    network: bool = False
    timeout_s: float = 600


class RunSpec(_Model):
    command: str
    metric_regex: str | None = None
    metric_json: str | None = None
    seeds: int = Field(default=1, ge=1, le=32)
    timeout_s: float = Field(default=120, gt=0)


class FixSpec(_Model):
    """The fix. ``patch`` (a unified diff, or a file holding one) and ``command`` change the tree, once,
    before the after-run; ``run`` replaces ``[run] command`` for the after-run (the fix is a different way to
    run or evaluate). A ``command`` that runs the same program as ``[run] command`` (e.g. ``python eval.py
    --average macro``), or that prints the metric and changes no file, is read as ``run``."""

    command: str | None = None
    patch: str | None = None
    run: str | None = None


class LimitsSpec(_Model):
    memory_mb: int = Field(default=2048, ge=16)
    cpus: float = Field(default=1, gt=0)
    gpus: int = Field(default=0, ge=0)
    pids: int = Field(default=256, ge=8)
    disk_mb: int = Field(default=1024, ge=1)


class ReplaySpec(_Model):
    """A replay case (TOML). Values are in the metric's own unit; tolerance is relative."""

    id: str
    error_type: ErrorType = "other"
    task_type: TaskType = "deterministic"
    metric: str = "metric"
    paper_value: float
    reported_value: float | None = None
    tolerance: float | None = Field(default=None, gt=0, lt=1)
    higher_is_better: bool = True
    expected: VerdictKind | None = None
    thread_id: str | None = None
    description: str = ""
    source: SourceSpec = Field(default_factory=SourceSpec)
    setup: SetupSpec = Field(default_factory=SetupSpec)
    run: RunSpec
    fix: FixSpec = Field(default_factory=FixSpec)
    limits: LimitsSpec = Field(default_factory=LimitsSpec)


class Record(_Model):
    """A structured diagnosis of one reproduction thread."""

    thread_id: str
    repo: str
    is_reproduction: bool = True
    error_type: ErrorType = "other"
    problem_statement: str = ""
    symptom: Symptom = Field(default_factory=Symptom)
    hypothesis_chain: list[Hypothesis] = Field(default_factory=list)
    root_cause: str | None = None
    resolution: str | None = None
    is_resolved: bool = False
    resolution_type: ResolutionType = "unresolved"
    diagnostic_depth: int = 0
    has_code_snippet: bool = False
    evidence: list[Evidence] = Field(default_factory=list)
    temporal_tag: TemporalTag = Field(default_factory=TemporalTag)
    quality: Quality = Field(default_factory=Quality)
    extractor: ExtractorInfo = Field(default_factory=lambda: ExtractorInfo(backend="rules"))
    replay: Verdict | None = None
    # Extensions beyond the ARCHITECTURE contract (documented in the README):
    grounded: bool = False
    #: The offline filter's calibrated probability (0–1) that the thread is a paper-result reproduction
    #: (rules extractor); None where the extractor decided ``is_reproduction`` itself (LLM backends).
    #: ``reprodiag score`` drops records below ``--min-relevance`` (``low_relevance``).
    relevance: float | None = None
    environment: str | None = None
    paper: str | None = None
    tried: str | None = None
    #: How the thread verified the cause (a rerun with the fix and its number, a check of the logs); None
    #: unless it did. LLM readers only.
    verification: str | None = None
    #: For threads that are not resolved: what is still open and what the thread suggests checking next.
    open_questions: list[str] = Field(default_factory=list)
    stats: ThreadStats = Field(default_factory=ThreadStats)
    duplicate_of: str | None = None
    split: str | None = None


class FilterDecision(_Model):
    thread_id: str
    is_reproduction: bool
    score: float
    signals: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- eval


class EvalItem(_Model):
    id: str
    error_type: ErrorType
    environment: str = ""
    paper: str = ""
    symptom: str = ""
    tried: str = ""
    question: str = ""
    gold_root_cause: str
    acceptable_directions: list[str] = Field(default_factory=list)
    #: Cause concepts of the gold (ids of eval_diagnosis/data/taxonomy.json), derived at build time; empty
    #: in older rows, where graders derive them from the gold texts.
    gold_concepts: list[str] = Field(default_factory=list)
    source_thread: str = ""
    created_year: int | None = None


class StageReport(BaseModel):
    """What one stage did: counters, output paths and free-text notes."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    counts: dict[str, int] = Field(default_factory=dict)
    outputs: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- parsing


def _format_error(kind: str, ident: str, err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(document)"
    msg = first.get("msg", "invalid")
    more = f" (+{len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
    return f"{kind} {ident}: field '{loc}': {msg}{more}"


def _thread_ident(obj: Any) -> str:
    if isinstance(obj, dict):
        repo, number, kind = obj.get("repo"), obj.get("number"), obj.get("kind")
        if isinstance(repo, str) and isinstance(number, int):
            return thread_id(repo, number, kind if isinstance(kind, str) else "issue")
    return "<unknown id>"


def parse_thread(obj: Any) -> Thread:
    """Validate one thread document; raise :class:`SchemaError` naming id and field."""
    if not isinstance(obj, dict):
        raise SchemaError(f"thread: expected a JSON object, got {type(obj).__name__}")
    try:
        return Thread.model_validate(obj)
    except ValidationError as err:
        raise SchemaError(_format_error("thread", _thread_ident(obj), err)) from None


def parse_record(obj: Any) -> Record:
    """Validate one record document; raise :class:`SchemaError` naming id and field."""
    if not isinstance(obj, dict):
        raise SchemaError(f"record: expected a JSON object, got {type(obj).__name__}")
    try:
        return Record.model_validate(obj)
    except ValidationError as err:
        ident = obj.get("thread_id") if isinstance(obj.get("thread_id"), str) else "<unknown id>"
        raise SchemaError(_format_error("record", ident, err)) from None


def parse_model(model: type[BaseModel], obj: Any, what: str) -> Any:
    """Validate ``obj`` as ``model``; one-line :class:`SchemaError` on failure."""
    try:
        return model.model_validate(obj)
    except ValidationError as err:
        ident = ""
        if isinstance(obj, dict):
            ident = str(obj.get("id") or obj.get("thread_id") or obj.get("case_id") or "")
        raise SchemaError(_format_error(what, ident or "<unknown id>", err)) from None
