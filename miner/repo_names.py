"""Repository names: ``owner/name`` from URLs, lists and dumps.

Accepted: ``owner/name``, ``https://github.com/owner/name(.git)(/tree/master/...)``,
``github.com/owner/name``, ``git@github.com:owner/name.git``, ``www.github.com/...``.
Other hosts (gitlab.com, bitbucket.org, …) are recognised and reported as non-GitHub.
Case is kept as written; deduplication is case-insensitive (GitHub names are).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

_OWNER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_GITHUB_HOSTS = {"github.com", "www.github.com"}


@dataclass(frozen=True)
class ParsedRepo:
    """``name`` is ``owner/name`` when usable; else ``reason`` says why (``non_github`` for other hosts)."""

    name: str | None = None
    reason: str | None = None
    non_github: bool = False


def parse_repo(raw: object) -> ParsedRepo:
    if not isinstance(raw, str):
        return ParsedRepo(reason="not a string")
    s = raw.strip()
    if not s:
        return ParsedRepo(reason="empty")
    is_url = True
    if s.startswith("git@"):
        host, _, path = s[4:].partition(":")
        if host.lower() not in _GITHUB_HOSTS:
            return ParsedRepo(reason=f"not a GitHub host: {host}", non_github=True)
    elif "://" in s or re.match(r"^[\w.-]+\.[a-z]{2,}/", s, re.I):
        url = urlsplit(s if "://" in s else "https://" + s)
        host = (url.hostname or "").lower()
        if host not in _GITHUB_HOSTS:
            return ParsedRepo(reason=f"not a GitHub host: {host or '?'}", non_github=True)
        path = url.path
    else:
        path, is_url = s, False
    parts = [p for p in path.split("/") if p]
    if len(parts) < 2:
        return ParsedRepo(reason="expected owner/name")
    if not is_url and len(parts) > 2:
        return ParsedRepo(reason="expected owner/name")
    owner, name = parts[0], parts[1]
    if name.lower().endswith(".git"):
        name = name[:-4]
    if not _OWNER.match(owner) or not _NAME.match(name) or name in (".", ".."):
        return ParsedRepo(reason="malformed owner or name")
    return ParsedRepo(name=f"{owner}/{name}")
