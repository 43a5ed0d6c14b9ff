"""Loading ReplaySpec TOML files (see :class:`reprodiag.schema.ReplaySpec`).

A spec's ``[source] path`` is relative to the directory holding the TOML file;
``[fix] patch`` is either a path (relative to the same directory) to a unified
diff, or the diff text itself. Default tolerances are relative deviations per
``task_type`` (SPEC.md, "Replay in a sandbox").
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from reprodiag.errors import UserError
from reprodiag.schema import ReplaySpec

#: Relative tolerance per task type when the spec gives none.
DEFAULT_TOLERANCE: dict[str, float] = {
    "deterministic": 0.05,
    "nlp_generation": 0.08,
    "rl": 0.15,
    "generative": 0.10,
}

#: Largest spec file read, in bytes (a spec is a few hundred bytes).
MAX_SPEC_BYTES = 1_000_000


def tolerance_for(spec: ReplaySpec) -> float:
    """The spec's own ``tolerance`` if set, else the task type's default (relative)."""
    return spec.tolerance if spec.tolerance is not None else DEFAULT_TOLERANCE[spec.task_type]


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_spec(doc: object, origin: str) -> ReplaySpec:
    """Validate a parsed TOML/JSON document; ``origin`` names it in the one-line error."""
    if not isinstance(doc, dict):
        raise UserError(f"{origin}: expected a TOML table, got {type(doc).__name__}")
    try:
        return ReplaySpec.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "(document)"
        msg = first.get("msg", "invalid")
        got = first.get("input")
        got_txt = "" if isinstance(got, dict) or first.get("type") == "missing" else f", got {_one_line(repr(got), 60)}"
        more = f" (+{len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
        raise UserError(f"{origin}: key '{loc}': {_one_line(msg)}{got_txt}{more}") from None


def load_spec(path: str | Path) -> ReplaySpec:
    """Read and validate one case TOML; a malformed file raises a one-line :class:`UserError`
    naming the file, the key and what was expected."""
    p = Path(path)
    try:
        if p.is_dir():
            p = p / "case.toml"
        size = p.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise UserError(f"{p}: spec is {size} bytes, larger than the {MAX_SPEC_BYTES}-byte limit")
        raw = p.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read case file {p}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{p}: invalid TOML: {_one_line(str(exc))}") from None
    spec = parse_spec(doc, str(p))
    if spec.source.path is None and spec.source.git is None:
        raise UserError(f"{p}: key 'source': expected 'path' (a directory next to the spec) or 'git' (a URL)")
    if spec.source.path is not None and spec.source.git is not None:
        raise UserError(f"{p}: key 'source': give either 'path' or 'git', not both")
    if spec.run.metric_regex is None and spec.run.metric_json is None:
        raise UserError(f"{p}: key 'run': expected 'metric_regex' or 'metric_json'")
    if spec.run.metric_regex is not None:
        import re

        try:
            rx = re.compile(spec.run.metric_regex)
        except re.error as exc:
            raise UserError(f"{p}: key 'run.metric_regex': not a valid regular expression ({exc})") from None
        if rx.groups < 1:
            raise UserError(f"{p}: key 'run.metric_regex': expected one capture group around the number")
    if spec.run.metric_json is not None:
        file_part, _, key = spec.run.metric_json.partition(":")
        if not file_part or not key:
            raise UserError(f"{p}: key 'run.metric_json': expected 'FILE:key.path', got {spec.run.metric_json!r}")
    if spec.source.path is not None:
        src = (p.parent / spec.source.path)
        if not src.is_dir():
            raise UserError(f"{p}: key 'source.path': directory {src} does not exist")
    return spec


def source_dir(spec: ReplaySpec, spec_path: str | Path) -> Path | None:
    """The case's source directory for a ``path`` source (None for git sources)."""
    p = Path(spec_path)
    if p.is_dir():
        p = p / "case.toml"
    return (p.parent / spec.source.path).resolve() if spec.source.path is not None else None


def patch_text(spec: ReplaySpec, spec_path: str | Path) -> str | None:
    """The fix's unified diff: the file named by ``[fix] patch`` if it exists, else the text itself."""
    if spec.fix.patch is None:
        return None
    p = Path(spec_path)
    if p.is_dir():
        p = p / "case.toml"
    raw = spec.fix.patch
    if "\n" not in raw.strip():
        candidate = p.parent / raw.strip()
        try:
            return candidate.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"{p}: key 'fix.patch': cannot read {candidate}: {exc.strerror or exc}") from None
    return raw
