"""Loading ReplaySpec TOML files (see :class:`reprodiag.schema.ReplaySpec`).

A spec's ``[source] path`` is relative to the directory holding the TOML file;
``[fix] patch`` is either a path (relative to the same directory) to a unified
diff, or the diff text itself. Both must stay inside the spec's directory once
resolved (``..``, absolute paths and symlinks leading out are rejected), so a
case cannot make the host read, copy or apply its files from elsewhere. A
``[source] git`` URL must be https://, http://, git://, file:// or an absolute
local path (no ``ext::`` transports, no ssh with the host's keys). Default
tolerances are relative deviations per ``task_type`` (SPEC.md, "Replay in a
sandbox").
"""

from __future__ import annotations

import os
import re
import stat
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
#: Largest patch file read, in bytes.
MAX_PATCH_BYTES = 16 * 1024 * 1024
#: Git sources accepted: these URL schemes, or an absolute local path.
_GIT_URL = re.compile(r"(?i)(https?|git|file)://[^\s]+")


def git_is_local(url: str) -> bool:
    """A ``file://`` URL or a local path (git's ``file`` protocol)."""
    return url.lower().startswith("file://") or url.startswith("/")


def spec_file(spec_path: str | Path) -> Path:
    p = Path(spec_path)
    return p / "case.toml" if p.is_dir() else p


def inside_case_dir(spec_path: str | Path, rel: str, key: str) -> Path:
    """``rel`` resolved against the spec's directory; a one-line :class:`UserError` naming ``key``
    when the result (after ``..`` and symlinks) is outside that directory."""
    p = spec_file(spec_path)
    base = p.parent.resolve()
    try:
        target = (base / rel).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise UserError(f"{p}: key '{key}': cannot resolve {rel!r} ({exc})") from None
    if target != base and base not in target.parents:
        raise UserError(f"{p}: key '{key}': {_one_line(repr(rel), 80)} points outside the case directory {base}")
    return target


def patch_is_path(raw: str) -> bool:
    return "\n" not in raw.strip()


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
        spec = ReplaySpec.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "(document)"
        msg = first.get("msg", "invalid")
        got = first.get("input")
        got_txt = "" if isinstance(got, dict) or first.get("type") == "missing" else f", got {_one_line(repr(got), 60)}"
        more = f" (+{len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
        raise UserError(f"{origin}: key '{loc}': {_one_line(msg)}{got_txt}{more}") from None
    commands = [("setup.commands", c) for c in spec.setup.commands] + [("run.command", spec.run.command),
                                                                        ("fix.command", spec.fix.command or ""),
                                                                        ("fix.run", spec.fix.run or "")]
    for key, cmd in commands:
        if "\x00" in cmd:
            raise UserError(f"{origin}: key '{key}': a command cannot contain a NUL byte")
    if spec.fix.run is not None and not spec.fix.run.strip():
        raise UserError(f"{origin}: key 'fix.run': an empty command; remove the key or write the command "
                        "that runs the fixed experiment")
    return spec


def same_program(a: str, b: str) -> bool:
    """Whether two shell commands start the same program on the same script (``python eval.py`` and
    ``python eval.py --average macro``): after leading ``VAR=value`` words, the words up to the first
    option, redirection or separator agree (at most three)."""
    def head(cmd: str) -> list[str]:
        words: list[str] = []
        for w in cmd.strip().split():
            if not words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", w):
                continue
            if w.startswith(("-", ">", "<", "|", "&", ";", "2>")):
                break
            words.append(w)
            if len(words) == 3:
                break
        return words
    ha = head(a)
    return bool(ha) and ha == head(b)


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
        src = inside_case_dir(p, spec.source.path, "source.path")
        if not src.is_dir():
            raise UserError(f"{p}: key 'source.path': directory {src} does not exist")
    if spec.source.git is not None:
        url = spec.source.git
        if "\x00" in url or not (_GIT_URL.fullmatch(url) or (url.startswith("/") and "\n" not in url)) \
                or "::" in url.split("/", 1)[0]:
            raise UserError(f"{p}: key 'source.git': expected an https://, http://, git:// or file:// URL or an "
                            f"absolute path, got {_one_line(repr(url), 80)}")
    if spec.source.ref is not None and (not spec.source.ref.strip() or spec.source.ref.startswith("-")
                                        or any(c.isspace() or ord(c) < 32 for c in spec.source.ref)):
        raise UserError(f"{p}: key 'source.ref': expected a branch, tag or commit name, got "
                        f"{_one_line(repr(spec.source.ref), 80)}")
    if spec.fix.patch is not None and patch_is_path(spec.fix.patch):
        inside_case_dir(p, spec.fix.patch.strip(), "fix.patch")
    return spec


def source_dir(spec: ReplaySpec, spec_path: str | Path) -> Path | None:
    """The case's source directory for a ``path`` source (None for git sources); raises
    :class:`UserError` when it is outside the spec's directory."""
    if spec.source.path is None:
        return None
    return inside_case_dir(spec_path, spec.source.path, "source.path")


def patch_text(spec: ReplaySpec, spec_path: str | Path) -> str | None:
    """The fix's unified diff: the file named by ``[fix] patch`` (one line: a path inside the spec's
    directory, else :class:`UserError`), or the multi-line text itself."""
    if spec.fix.patch is None:
        return None
    p = spec_file(spec_path)
    raw = spec.fix.patch
    if patch_is_path(raw):
        candidate = inside_case_dir(p, raw.strip(), "fix.patch")
        try:
            fd = os.open(candidate, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise UserError(f"{p}: key 'fix.patch': cannot read {candidate}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UserError(f"{p}: key 'fix.patch': {candidate} is not a regular file")
            if st.st_size > MAX_PATCH_BYTES:
                raise UserError(f"{p}: key 'fix.patch': {candidate} is {st.st_size} bytes, over the "
                                f"{MAX_PATCH_BYTES}-byte limit")
            data = fh.read(MAX_PATCH_BYTES + 1)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(f"{p}: key 'fix.patch': {candidate} is not UTF-8 text (byte {exc.start})") from None
    return raw
