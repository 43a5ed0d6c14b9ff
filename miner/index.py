"""``reprodiag index``: the repository index from a Papers-with-Code links dump or a list.

Dumps: one JSON array (the real ``links-between-papers-and-code.json(.gz)``), JSON Lines,
or Parquet, with ``paper_url, paper_title, paper_arxiv_id, repo_url, is_official,
mentioned_in_paper, mentioned_in_github, framework``. Rows without a usable
``repo_url`` are counted; the first few are reported with their row number (1-based
array index, or line number for JSON Lines). Non-GitHub hosts are dropped and counted.
``--min-stars`` asks GraphQL for stars, archived and enabled flags, totals and the
current ``nameWithOwner`` (renames) of 100 repositories per query (1 point each).
"""

from __future__ import annotations

import asyncio
import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import queries as Q
from miner.graphql_client import ClientSettings, GraphQLClient
from miner.repo_names import parse_repo
from miner.tokens import TokenPool
from reprodiag.config import ApiUrls, Secret, github_tokens
from reprodiag.errors import UserError
from reprodiag.schema import StageReport
from reprodiag.store import Store

MAX_REPORTED = 5


@dataclass
class _Collected:
    links: list[dict[str, Any]] = field(default_factory=list)
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: int = 0
    malformed: int = 0
    non_github: int = 0
    not_official: int = 0
    problems: list[str] = field(default_factory=list)

    def problem(self, where: str, why: str) -> None:
        self.malformed += 1
        if len(self.problems) < MAX_REPORTED:
            self.problems.append(f"{where}: {why}")


def _read_rows(path: Path) -> list[tuple[str, Any]]:
    """``(where, row)`` pairs from a JSON array, JSON Lines (optionally gzip) or Parquet file."""
    if not path.exists():
        raise UserError(f"dump {path} does not exist")
    name = path.name.lower()
    if name.endswith(".parquet"):
        import polars as pl

        try:
            df = pl.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - polars raises many kinds
            raise UserError(f"cannot read Parquet dump {path}: {' '.join(str(exc).split())[:200]}") from None
        return [(f"row {i}", r) for i, r in enumerate(df.iter_rows(named=True), start=1)]
    try:
        raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
        text = raw.decode("utf-8-sig")
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise UserError(f"cannot read dump {path}: {exc}") from None
    except UnicodeDecodeError:
        raise UserError(f"dump {path} is not UTF-8 text") from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"dump {path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") \
                from None
        return [(f"row {i}", r) for i, r in enumerate(doc, start=1)]
    rows: list[tuple[str, Any]] = []
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"line {no}", json.loads(line)))
        except json.JSONDecodeError as exc:
            rows.append((f"line {no}", _Bad(f"invalid JSON ({exc.msg})")))
    return rows


@dataclass(frozen=True)
class _Bad:
    why: str


def _truthy(v: Any) -> bool | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "t")
    return bool(v)


def _collect_dump(path: Path, official_only: bool, acc: _Collected) -> None:
    for where, row in _read_rows(path):
        acc.rows += 1
        if isinstance(row, _Bad):
            acc.problem(where, row.why)
            continue
        if not isinstance(row, dict):
            acc.problem(where, f"expected an object, got {type(row).__name__}")
            continue
        url = row.get("repo_url")
        if not isinstance(url, str) or not url.strip():
            acc.problem(where, "missing repo_url")
            continue
        parsed = parse_repo(url)
        if parsed.non_github:
            acc.non_github += 1
            continue
        if parsed.name is None:
            acc.problem(where, f"repo_url {url[:80]!r}: {parsed.reason}")
            continue
        official = _truthy(row.get("is_official"))
        if official_only and not official:
            acc.not_official += 1
            continue
        key = parsed.name.lower()
        repo = acc.repos.setdefault(key, {"repo": parsed.name, "official": False, "framework": None})
        repo["official"] = repo["official"] or bool(official)
        fw = row.get("framework")
        if isinstance(fw, str) and fw and fw != "none" and not repo["framework"]:
            repo["framework"] = fw
        paper = row.get("paper_url")
        acc.links.append({
            "paper_url": paper if isinstance(paper, str) else "", "repo": repo["repo"],
            "paper_title": row.get("paper_title") if isinstance(row.get("paper_title"), str) else None,
            "paper_arxiv_id": row.get("paper_arxiv_id") if isinstance(row.get("paper_arxiv_id"), str) else None,
            "is_official": official, "mentioned_in_paper": _truthy(row.get("mentioned_in_paper")),
            "mentioned_in_github": _truthy(row.get("mentioned_in_github")), "framework": fw,
        })


def _collect_names(names: list[tuple[str, str]], acc: _Collected) -> None:
    for where, raw in names:
        acc.rows += 1
        parsed = parse_repo(raw)
        if parsed.non_github:
            acc.non_github += 1
        elif parsed.name is None:
            acc.problem(where, f"{raw.strip()[:80]!r}: {parsed.reason}")
        else:
            acc.repos.setdefault(parsed.name.lower(), {"repo": parsed.name, "official": None, "framework": None})


async def fetch_repo_meta(repos: list[str], *, url: str, tokens: list[Secret],
                          settings: ClientSettings | None = None) -> dict[str, dict[str, Any] | None]:
    """Stars, flags, totals and ``nameWithOwner`` per repository (None: not found). 100 per query.

    A repository whose block came back null because of an error *inside* it (a server that answers a
    disabled feature's connection with an error) is asked again without the totals (counts None)."""
    pool = TokenPool(tokens, floor=(settings or ClientSettings()).floor)
    result: dict[str, dict[str, Any] | None] = {}
    async with GraphQLClient(url, pool, settings) as gh:
        async def one(chunk: list[str], counts: bool = True) -> None:
            ans = await gh.query(Q.repo_meta_query([tuple(r.split("/")) for r in chunk],  # type: ignore[misc]
                                                   counts=counts))
            again = []
            for i, repo in enumerate(chunk):
                d = ans.data.get(f"r{i}")
                if d is None and counts and any(len(e.get("path") or ()) > 1 and e["path"][0] == f"r{i}"
                                                for e in ans.errors):
                    again.append(repo)
                    continue
                result[repo] = None if not isinstance(d, dict) else {
                    "name_with_owner": d.get("nameWithOwner") or repo, "stars": d.get("stargazerCount"),
                    "archived": d.get("isArchived"), "has_issues": d.get("hasIssuesEnabled"),
                    "has_discussions": d.get("hasDiscussionsEnabled"),
                    "issues_count": _count(d, "issues"), "prs_count": _count(d, "pullRequests"),
                    "discussions_count": _count(d, "discussions"),
                }
            if again:
                await one(again, counts=False)
        await asyncio.gather(*(one(repos[i:i + 100]) for i in range(0, len(repos), 100)))
    return result


def _flag(value: Any) -> int | None:
    return None if value is None else int(bool(value))


def _count(d: dict[str, Any], field: str) -> int | None:
    total = (d.get(field) or {}).get("totalCount")
    return total if isinstance(total, int) else None


def run_index(store: Store, *, dump: Path | None, repos_file: Path | None, repos: list[str], official_only: bool,
              min_stars: int | None, api_url: str | None, token_file: Path | None,
              tokens: list[Secret] | None = None) -> StageReport:
    """Build the repository index; returns counts (repos, links, malformed, non_github, …)."""
    if dump is None and repos_file is None and not repos:
        raise UserError("nothing to index: pass --dump, --repos-file or --repo owner/name")
    acc = _Collected()
    if dump is not None:
        _collect_dump(Path(dump), official_only, acc)
        if not acc.repos:
            why = f"; first problems: {' | '.join(acc.problems)}" if acc.problems else ""
            raise UserError(f"dump {dump} has no usable GitHub repository rows ({acc.rows} rows, {acc.malformed} "
                            f"malformed, {acc.non_github} non-GitHub, {acc.not_official} not official){why}")
    if repos_file is not None:
        try:
            lines = Path(repos_file).read_text(encoding="utf-8-sig").splitlines()
        except OSError as exc:
            raise UserError(f"cannot read --repos-file {repos_file}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise UserError(f"--repos-file {repos_file} is not UTF-8 text") from None
        _collect_names([(f"line {i}", ln) for i, ln in enumerate(lines, start=1)
                        if ln.strip() and not ln.strip().startswith("#")], acc)
    _collect_names([(f"--repo {r!r}", r) for r in repos], acc)
    if not acc.repos:
        raise UserError("no usable GitHub repository given" + (f": {acc.problems[0]}" if acc.problems else ""))
    notes = [f"malformed {p}" for p in acc.problems]
    counts = {"rows": acc.rows, "repos": len(acc.repos), "malformed": acc.malformed, "non_github": acc.non_github}
    if official_only:
        counts["not_official"] = acc.not_official
    selected = list(acc.repos.values())
    metas: dict[str, dict[str, Any] | None] = {}
    if min_stars is not None:
        toks = list(tokens) if tokens else github_tokens(token_file)
        if not toks:
            raise UserError("--min-stars needs a GitHub token: set GITHUB_TOKEN (or GITHUB_TOKENS, or --token-file)")
        metas = asyncio.run(fetch_repo_meta([r["repo"] for r in selected], url=ApiUrls.from_base(api_url).graphql,
                                            tokens=toks))
        kept, missing, low = [], 0, 0
        for r in selected:
            m = metas.get(r["repo"])
            if m is None:
                missing += 1
                if missing <= MAX_REPORTED:
                    notes.append(f"not found on GitHub: {r['repo']}")
            elif (m["stars"] or 0) < min_stars:
                low += 1
            else:
                kept.append(r)
        counts.update(not_found=missing, below_min_stars=low)
        selected = kept
    renamed = 0
    keep_names: set[str] = set()
    for r in selected:
        m = metas.get(r["repo"])
        name, extra = r["repo"], {}
        if m is not None:
            if m["name_with_owner"].lower() != name.lower():
                renamed += 1
                extra["renamed_from"] = name
            name = m["name_with_owner"]
            extra.update(stars=m["stars"], archived=_flag(m["archived"]), has_issues=_flag(m["has_issues"]),
                         has_discussions=_flag(m["has_discussions"]), issues_count=m["issues_count"],
                         prs_count=m["prs_count"], discussions_count=m["discussions_count"])
        keep_names.add(r["repo"].lower())
        r["final"] = name
        store.upsert_repo(name, official=None if r["official"] is None else int(r["official"]),
                          framework=r["framework"], **extra)
    final = {r["repo"].lower(): r["final"] for r in selected}
    links = [{**lk, "repo": final[lk["repo"].lower()]} for lk in acc.links if lk["repo"].lower() in keep_names]
    counts["links"] = store.add_paper_links(links) if links else 0
    counts["indexed"] = len(selected)
    if min_stars is not None:
        counts["renamed"] = renamed
    counts["repos_total"] = store.count("repos")
    return StageReport(stage="index", counts=counts, notes=notes)
