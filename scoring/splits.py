"""Repository-level train/validation/test splits, stratified by error type.

A repository's records always share one split, so no repository leaks across
splits. Repositories are grouped by their dominant ``error_type`` (most
records; ties by name order of the type) and, within each group, visited in a
seed-determined pseudo-random order; each goes to the split whose record
count is furthest below its target share of that group. Same input and seed →
same splits, whatever the input order. ``holdout_repos`` always go to
``test`` (e.g. the repositories the eval set is carved from).

Time-based mode (``split_date``): records created before the date go to
``train``, the rest (and records of unknown date) to ``test``; this measures
contamination, and a repository can then appear in both splits.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from reprodiag.errors import UserError
from reprodiag.schema import Record

SPLITS = ("train", "validation", "test")


def _order_key(seed: int, repo: str) -> str:
    return hashlib.sha256(f"{seed}:{repo}".encode()).hexdigest()


def assign_repo_splits(repo_types: Iterable[tuple[str, str]], seed: int,
                       ratios: Sequence[float] = (0.8, 0.1, 0.1),
                       holdout_repos: Iterable[str] | None = None) -> dict[str, str]:
    """repo → split from (repo, error_type) pairs, one pair per record."""
    if len(ratios) != 3 or any(r < 0 for r in ratios) or abs(sum(ratios) - 1.0) > 1e-6:
        raise UserError(f"split ratios must be three non-negative shares summing to 1, got {tuple(ratios)}")
    per_repo: dict[str, Counter[str]] = defaultdict(Counter)
    for repo, etype in repo_types:
        per_repo[repo][etype] += 1
    holdout = set(holdout_repos or ())
    out: dict[str, str] = {r: "test" for r in per_repo if r in holdout}
    strata: dict[str, list[str]] = defaultdict(list)
    for repo, types in per_repo.items():
        if repo in holdout:
            continue
        dominant = min(types.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        strata[dominant].append(repo)
    for _, repos in sorted(strata.items()):
        repos.sort(key=lambda r: _order_key(seed, r))
        total = sum(sum(per_repo[r].values()) for r in repos)
        have = [0.0, 0.0, 0.0]
        for repo in repos:
            size = sum(per_repo[repo].values())
            deficit = [ratios[i] * total - have[i] for i in range(3)]
            best = max(range(3), key=lambda i: (deficit[i] if ratios[i] > 0 else float("-inf"), -i))
            out[repo] = SPLITS[best]
            have[best] += size
    return out


def assign_splits(records: Sequence[Record], seed: int, ratios: Sequence[float] = (0.8, 0.1, 0.1),
                  holdout_repos: Iterable[str] | None = None,
                  split_date: datetime | None = None) -> list[Record]:
    """Copies of ``records`` with ``split`` set (see module docstring); order preserved."""
    if split_date is not None:
        cut = split_date if split_date.tzinfo else split_date.replace(tzinfo=UTC)
        holdout = set(holdout_repos or ())
        return [r.model_copy(update={"split": "train" if (
            r.repo not in holdout and r.stats.created_at is not None and r.stats.created_at < cut) else "test"})
            for r in records]
    mapping = assign_repo_splits(((r.repo, r.error_type) for r in records), seed, ratios, holdout_repos)
    return [r.model_copy(update={"split": mapping[r.repo]}) for r in records]
