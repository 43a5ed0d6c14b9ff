"""The bundled sample corpus (reprodiag/data/sample) meets the constraints the demo and benchmarks rely on."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from reprodiag.sample import load_sample_labels, load_sample_threads, sample_dir, sample_links_path
from reprodiag.schema import ERROR_TYPES, MAINTAINER_ASSOCIATIONS, Thread, parse_thread

ASSOCIATIONS = {"OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "NONE", "FIRST_TIME_CONTRIBUTOR"}
ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
CJK = re.compile(r"[\u4e00-\u9fff]")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
GHP = re.compile(r"\bghp_[A-Za-z0-9]{36}\b")
SK = re.compile(r"\bsk-[A-Za-z0-9]{32,}\b")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
HOME = re.compile(r"/home/[a-z][\w.-]*/")
LABEL_KEYS = {"thread_id", "is_reproduction", "error_type", "resolution_type", "metric", "paper_value",
              "obtained_value", "root_cause", "acceptable_directions"}
LINK_KEYS = {"paper_url", "paper_title", "paper_arxiv_id", "repo_url", "is_official", "mentioned_in_paper",
             "mentioned_in_github", "framework"}


@pytest.fixture(scope="module")
def raw_docs() -> list[dict[str, Any]]:
    lines = (sample_dir() / "threads.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(line.strip() for line in lines), "blank line in threads.jsonl"
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def threads(raw_docs: list[dict[str, Any]]) -> list[Thread]:
    return [parse_thread(d) for d in raw_docs]


@pytest.fixture(scope="module")
def labels() -> dict[str, dict[str, Any]]:
    return load_sample_labels()


@pytest.fixture(scope="module")
def by_id(threads: list[Thread]) -> dict[str, Thread]:
    return {t.id: t for t in threads}


def _text(t: Thread) -> str:
    return "\n".join([t.title, t.body, *(c.body for c in t.all_comments())])


def _repro_ids(labels: dict[str, dict[str, Any]]) -> set[str]:
    return {tid for tid, lab in labels.items() if lab["is_reproduction"]}


def test_every_line_parses_and_loader_agrees(raw_docs: list[dict[str, Any]], threads: list[Thread]) -> None:
    assert len(threads) == len(raw_docs)
    assert [t.id for t in load_sample_threads()] == [t.id for t in threads]
    # Round trip: nothing in the file is dropped or coerced by the schema.
    for doc, t in zip(raw_docs, threads, strict=True):
        assert t.model_dump(mode="json")["comments"].__len__() == len(doc["comments"])
        assert set(doc) <= set(Thread.model_fields)


def test_size_and_repositories(threads: list[Thread]) -> None:
    assert len(threads) >= 70
    repos = Counter(t.repo for t in threads)
    assert len(repos) >= 10
    assert all(n >= 3 for n in repos.values()), repos
    assert len({t.id for t in threads}) == len(threads)


def test_dates_are_iso_z_in_range_and_ordered(raw_docs: list[dict[str, Any]], threads: list[Thread]) -> None:
    for doc in raw_docs:
        stamps = [doc["created_at"], doc["updated_at"]] + ([doc["closed_at"]] if doc["closed_at"] else [])
        stamps += [c["created_at"] for c in doc["comments"]]
        stamps += [r["created_at"] for c in doc["comments"] for r in c["replies"]]
        assert all(ISO_Z.match(s) for s in stamps), doc["url"]
    for t in threads:
        assert 2018 <= t.created_at.year <= 2026
        assert t.updated_at >= t.created_at
        assert all(c.created_at >= t.created_at for c in t.all_comments()), t.id
        assert all(t.updated_at >= c.created_at for c in t.all_comments()), t.id
        assert (t.closed_at is not None) == (t.state == "closed"), t.id
        if t.closed_at is not None:
            assert t.created_at <= t.closed_at <= t.updated_at
    years = {t.created_at.year for t in threads}
    assert min(years) <= 2019 and max(years) >= 2024  # every temporal tier has material


def test_github_shapes(threads: list[Thread]) -> None:
    segment = {"issue": "issues", "pull_request": "pull", "discussion": "discussions"}
    numbers = Counter((t.repo, t.number) for t in threads)
    assert max(numbers.values()) == 1, "number reused within a repository"
    for t in threads:
        assert t.url == f"https://github.com/{t.repo}/{segment[t.kind]}/{t.number}"
        assert t.author_association in ASSOCIATIONS
        assert all(c.author_association in ASSOCIATIONS for c in t.all_comments())
        assert t.state_reason in (None, "COMPLETED", "NOT_PLANNED")
        if t.state == "open":
            assert t.state_reason is None
        assert t.title and t.body and t.author
    ids = [c.id for t in threads for c in t.all_comments()]
    assert len(ids) == len(set(ids)), "comment ids must be unique across the corpus"
    assert all(re.fullmatch(r"(IC|DC)_kwDO[A-Za-z0-9]{6,}", i) for i in ids)


def test_labels_cover_every_thread_with_valid_values(threads: list[Thread], labels: dict[str, dict[str, Any]]) -> None:
    assert set(labels) == {t.id for t in threads}
    lines = (sample_dir() / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(threads), "one label line per thread, no duplicates"
    for tid, lab in labels.items():
        assert set(lab) == LABEL_KEYS, tid
        assert lab["error_type"] in (*ERROR_TYPES, "other")
        assert lab["resolution_type"] in ("resolved", "unresolved_valuable", "unresolved")
        if lab["is_reproduction"]:
            assert lab["error_type"] != "other", tid
            assert lab["metric"], tid
            assert lab["paper_value"] is not None and lab["obtained_value"] is not None, tid
            assert lab["paper_value"] != lab["obtained_value"], tid
            assert 2 <= len(lab["acceptable_directions"]) <= 4, tid
            if lab["resolution_type"] != "unresolved":
                root = lab["root_cause"]
                assert root and root.endswith(".") and len(root) <= 320, tid
                assert not re.search(r"[.!?] [A-Z]", re.sub(r"\b(et al|e\.g|i\.e|vs)\.", "", root)), tid
        else:
            assert lab["error_type"] == "other" and lab["root_cause"] is None, tid
            assert lab["paper_value"] is None and lab["obtained_value"] is None, tid


def test_reproduction_mix(labels: dict[str, dict[str, Any]]) -> None:
    repro = [lab for lab in labels.values() if lab["is_reproduction"]]
    other = [lab for lab in labels.values() if not lab["is_reproduction"]]
    assert len(repro) >= 45 and len(other) >= 20
    types = Counter(lab["error_type"] for lab in repro)
    minimum = {"hyperparameter": 10, "data": 8, "evaluation_protocol": 8, "framework_version": 6, "seed_hardware": 5}
    assert all(types[k] >= v for k, v in minimum.items()), types
    resolved = sum(lab["resolution_type"] == "resolved" for lab in repro) / len(repro)
    assert 0.6 <= resolved <= 0.8, resolved
    assert sum(lab["resolution_type"] == "unresolved_valuable" for lab in repro) >= 10
    assert len({lab["metric"] for lab in repro}) >= 10


def test_label_values_appear_literally_in_the_thread(by_id: dict[str, Thread],
                                                    labels: dict[str, dict[str, Any]]) -> None:
    for tid, lab in labels.items():
        numbers = {float(n) for n in NUMBER.findall(_text(by_id[tid]))}
        for key in ("paper_value", "obtained_value"):
            if lab[key] is not None:
                assert float(lab[key]) in numbers, f"{tid}: {key}={lab[key]} not in the thread text"


def test_resolved_threads_show_a_resolution(by_id: dict[str, Thread], labels: dict[str, dict[str, Any]]) -> None:
    for tid in _repro_ids(labels):
        t = by_id[tid]
        humans = [c for c in t.all_comments() if not (c.author or "").endswith("[bot]")]
        if labels[tid]["resolution_type"] == "resolved":
            assert t.state == "closed", tid
            assert len(humans) >= 2, tid
        elif labels[tid]["resolution_type"] == "unresolved_valuable":
            assert len(humans) >= 3, tid  # a real hypothesis chain
            assert t.state_reason != "COMPLETED", tid


def test_maintainers_answer_some_threads(by_id: dict[str, Thread], labels: dict[str, dict[str, Any]]) -> None:
    with_maintainer = [tid for tid in _repro_ids(labels)
                       if any(c.author_association in MAINTAINER_ASSOCIATIONS for c in by_id[tid].all_comments())]
    assert len(with_maintainer) >= 30


def test_chinese_threads(threads: list[Thread], labels: dict[str, dict[str, Any]]) -> None:
    zh = [t.id for t in threads if len(CJK.findall(t.title + t.body)) >= 20]
    assert len(zh) >= 4
    assert sum(labels[i]["is_reproduction"] for i in zh) >= 2
    assert sum(not labels[i]["is_reproduction"] for i in zh) >= 1


def test_discussions_with_accepted_answers(threads: list[Thread], labels: dict[str, dict[str, Any]]) -> None:
    discussions = [t for t in threads if t.kind == "discussion"]
    assert len(discussions) >= 6
    answered_repro = 0
    for t in threads:
        flagged = [c.id for c in t.all_comments() if c.is_answer]
        if t.kind != "discussion":
            assert t.category is None and t.answer_id is None and not flagged, t.id
            assert all(not c.replies for c in t.comments), t.id
            continue
        assert t.category
        assert flagged == ([t.answer_id] if t.answer_id else []), t.id
        if t.answer_id and labels[t.id]["is_reproduction"]:
            answered_repro += 1
    assert answered_repro >= 2
    assert any(c.replies for t in discussions for c in t.comments)


def test_pull_requests_fix_reproduction_problems(threads: list[Thread], labels: dict[str, dict[str, Any]]) -> None:
    prs = [t for t in threads if t.kind == "pull_request"]
    assert sum(labels[t.id]["is_reproduction"] for t in prs) >= 2
    assert any(not labels[t.id]["is_reproduction"] for t in prs)


def test_filter_has_hard_negatives_and_noise(threads: list[Thread], labels: dict[str, dict[str, Any]]) -> None:
    negatives = [t for t in threads if not labels[t.id]["is_reproduction"]]
    assert sum(bool(re.search(r"\breproduce\b", _text(t), re.I)) for t in negatives) >= 4
    assert sum(bool(re.search(r"\bpaper\b", _text(t), re.I)) for t in negatives) >= 5
    assert sum(not t.comments for t in threads) >= 2
    bots = {c.author for t in threads for c in t.all_comments() if (c.author or "").endswith("[bot]")}
    assert {"stale[bot]", "github-actions[bot]"} <= bots
    assert sum(t.reactions >= 5 for t in threads) >= 5
    assert any(re.search(r"^> ", c.body, re.M) for t in threads for c in t.all_comments())
    assert any(re.search(r"^On .+ wrote:$", c.body, re.M) for t in threads for c in t.all_comments())
    assert sum("```" in t.body for t in threads if labels[t.id]["is_reproduction"]) >= 35


def test_planted_fake_secrets(threads: list[Thread]) -> None:
    raw = (sample_dir() / "threads.jsonl").read_text(encoding="utf-8")
    for pattern in (GHP, SK, EMAIL, HOME):
        assert pattern.search(raw), pattern.pattern
    for match in (*GHP.findall(raw), *SK.findall(raw)):
        assert "FAKE" in match.upper(), "planted secrets must be obviously fake"
    holders = {t.id for t in threads if any(p.search(_text(t)) for p in (GHP, SK, EMAIL, HOME))}
    assert len(holders) >= 3


def _normalize_repo_url(url: str) -> str:
    url = re.sub(r"^https?://(www\.)?", "", url.strip().lower()).split("#")[0].rstrip("/")
    url = re.sub(r"\.git$", "", url)
    return "/".join(url.split("/")[:3])


def test_pwc_links_cover_every_repository(threads: list[Thread]) -> None:
    rows = json.loads(sample_links_path().read_text(encoding="utf-8"))
    assert isinstance(rows, list)
    for row in rows:
        assert set(row) == LINK_KEYS
        assert row["paper_arxiv_id"] is None or re.fullmatch(r"\d{4}\.\d{5}", row["paper_arxiv_id"])
    normalized = [_normalize_repo_url(r["repo_url"]) for r in rows]
    official = {n for n, r in zip(normalized, rows, strict=True) if r["is_official"]}
    assert {f"github.com/{t.repo}" for t in threads} <= official
    assert any(n.startswith("gitlab.com/") for n in normalized)
    assert any(n.startswith("bitbucket.org/") for n in normalized)
    raw_urls = {r["repo_url"] for r in rows}
    assert len(set(normalized)) < len(raw_urls), "duplicate spellings of the same repository"
    assert any(u.endswith(".git") for u in raw_urls) and any("/tree/" in u for u in raw_urls)
    assert any(u != u.lower() and u.startswith("https://github.com/") for u in raw_urls)
