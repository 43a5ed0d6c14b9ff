"""``mine --shard I/N``: disjoint parts of the repository list, so N machines with their own tokens mine
one crawl between them (then ``reprodiag merge`` folds their workspaces into one).

A repository belongs to part ``sha256(lower-cased owner/name) mod N``: stable across machines, runs and
Python versions (no ``hash()`` salt), independent of the order or the size of the index, and the same
for a repository written in another case (GitHub names are case-insensitive).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from reprodiag.errors import UserError

_SHARD = re.compile(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*")


@dataclass(frozen=True)
class Shard:
    """Part ``index`` (1-based) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/4"`` → the second of four parts; anything else is a one-line :class:`UserError`."""
        m = _SHARD.fullmatch(text or "")
        if m is None:
            raise UserError(f"--shard must be I/N (e.g. 2/4), got {text[:40]!r}")
        i, n = int(m.group(1)), int(m.group(2))
        if n < 1 or not 1 <= i <= n:
            raise UserError(f"--shard I/N needs 1 <= I <= N, got {i}/{n}")
        return cls(i, n)

    def holds(self, repo: str) -> bool:
        digest = hashlib.sha256(repo.strip().lower().encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"
