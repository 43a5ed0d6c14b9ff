"""Renamed repositories: GitHub answers for an old ``owner/name`` under its current one. The rename is
recorded in the index (``repos.renamed_from``) and followed on later runs, by the GraphQL miner
(:mod:`miner.sync`) and the REST one (:mod:`miner.rest`) alike."""

from __future__ import annotations

from reprodiag.store import Store


def known_renames(store: Store) -> dict[str, str]:
    """Old name (lower case) → current name, from renames recorded in the index."""
    return {r["renamed_from"].lower(): r["repo"] for r in store.repos() if r.get("renamed_from")}


def record_rename(store: Store, requested: str, name: str) -> bool:
    """GitHub answered for ``requested`` under ``name``: record the rename in the index (keeping what it
    knew) and mark the old name skipped. Only the case differs (or nothing): the requested name's
    pending status row is dropped in favour of GitHub's spelling. True for a real rename."""
    if name == requested:
        return False
    if name.lower() == requested.lower():
        with store.transaction() as c:
            c.execute("DELETE FROM repo_status WHERE repo=? AND status='pending'", (requested,))
        return False
    old = {r["repo"].lower(): r for r in store.repos()}.get(requested.lower(), {})
    keep = {k: old.get(k) for k in ("stars", "archived", "has_issues", "has_discussions", "official",
                                    "framework")}
    store.upsert_repo(name, renamed_from=requested, **keep, **old.get("meta", {}))
    store.set_repo_status(requested, "skipped", last_error=f"renamed to {name} (mined under that name)")
    return True
