"""Settings resolved from flags, environment and defaults (flags win).

Secrets (GitHub tokens, LLM keys) are held in :class:`Secret`, whose ``repr``
and ``str`` never show the value, so they cannot leak into logs or errors.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from reprodiag.errors import UserError

DEFAULT_WORKSPACE = "./reprodiag-workspace"
GITHUB_API_URL = "https://api.github.com"


class Secret:
    """A secret string that prints as ``Secret(#n)`` (its position), never its value."""

    __slots__ = ("_value", "label")

    def __init__(self, value: str, label: str) -> None:
        self._value = value
        self.label = label

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({self.label})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def workspace_path(flag: str | None) -> Path:
    """``--workspace`` if given, else ``$REPRODIAG_WORKSPACE``, else ``./reprodiag-workspace``."""
    return Path(flag or os.environ.get("REPRODIAG_WORKSPACE") or DEFAULT_WORKSPACE)


def github_tokens(token_file: Path | None = None, env: dict[str, str] | None = None) -> list[Secret]:
    """Tokens from ``--token-file`` (one per line, ``#`` comments), else ``GITHUB_TOKENS`` (comma-separated),
    else ``GITHUB_TOKEN``. Labels are ``token #1``… in that order; duplicates are dropped."""
    env = dict(os.environ) if env is None else env
    raw: list[str] = []
    if token_file is not None:
        try:
            text = Path(token_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read token file {token_file}: {exc.strerror}") from None
        raw = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
        if not raw:
            raise UserError(f"token file {token_file} holds no token")
    elif env.get("GITHUB_TOKENS"):
        raw = [t.strip() for t in env["GITHUB_TOKENS"].split(",") if t.strip()]
    elif env.get("GITHUB_TOKEN"):
        raw = [env["GITHUB_TOKEN"].strip()]
    seen: list[str] = []
    for t in raw:
        if t not in seen:
            seen.append(t)
    return [Secret(t, f"token #{i}") for i, t in enumerate(seen, start=1)]


def api_key(name: str, env: dict[str, str] | None = None, *, required: bool = True) -> Secret | None:
    """An API key from the environment variable ``name`` (e.g. ``OPENAI_API_KEY``)."""
    env = dict(os.environ) if env is None else env
    value = env.get(name, "").strip()
    if not value:
        if required:
            raise UserError(f"{name} is not set; export it or choose an offline backend")
        return None
    return Secret(value, name)


@dataclass(frozen=True)
class ApiUrls:
    """REST and GraphQL endpoints. ``https://api.github.com`` → ``/graphql``; an Enterprise or fake
    server base ``http://host`` → ``http://host/api/v3`` and ``http://host/api/graphql``."""

    rest: str
    graphql: str

    @classmethod
    def from_base(cls, base: str | None) -> ApiUrls:
        base = (base or GITHUB_API_URL).rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise UserError(f"--api-url must start with http:// or https://, got {base!r}")
        if base == GITHUB_API_URL:
            return cls(GITHUB_API_URL, GITHUB_API_URL + "/graphql")
        for suffix in ("/api/v3", "/api/graphql"):  # the Enterprise layout, given by either endpoint
            if base.endswith(suffix):
                return cls(base[: -len(suffix)] + "/api/v3", base[: -len(suffix)] + "/api/graphql")
        if base.endswith("/graphql"):  # the api.github.com layout at another root: REST at the root
            return cls(base[: -len("/graphql")], base)
        return cls(base + "/api/v3", base + "/api/graphql")


@contextmanager
def temporary_env(name: str, value: str) -> Iterator[None]:
    """``name`` set to ``value`` in this process's environment for the block, then restored (unset again, or
    back to the value it had)."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
