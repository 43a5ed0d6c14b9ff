"""The cascade in front of an LLM reader: ``extract --backend openai`` (no ``--no-filter``) sends every thread
whose filter probability reaches the gate, answered or not, including threads the filter alone would drop; the
rules backend reads only the filter's reproductions that someone answered; ``--no-filter`` sends all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extract.cascade import LLM_GATE, passes
from extract.pipeline import run_extract
from extract.realcorpus import REAL_DIR, load_file
from extract.relevance import classify
from reprodiag.schema import Thread
from tests.extract.threads import make_thread
from tests.fakes.llm_fixtures import openai_server  # noqa: F401
from tests.fakes.llm_server import Reply

KEY = {"OPENAI_API_KEY": "sk-test-CASCADE0001"}


def _threads() -> list[Thread]:
    rows = load_file(REAL_DIR / "dev.jsonl")[:60]
    lonely = make_thread("Cannot reproduce the 32.7 BLEU", "I get 21.4 BLEU vs 32.7 in the paper.", [],
                         number=99001)
    return [r.thread for r in rows] + [lonely]


def _not_a_reproduction(t: Thread) -> dict:
    return {"is_reproduction": False, "error_type": "other", "problem_statement": t.title, "metric": None,
            "paper_value": None, "obtained_value": None, "hypotheses": [], "root_cause": None, "resolution": None,
            "verification": None, "open_questions": [], "is_resolved": False, "diagnostic_depth": 0,
            "environment": None, "paper": None, "tried": None, "evidence": [], "injection_suspected": False}


@pytest.fixture
def answering(openai_server):  # noqa: ANN001, ANN201, F811
    seen: list[str] = []
    by_title: dict[str, Thread] = {}

    def responder(req):  # noqa: ANN001, ANN202
        text = req.prompt_text
        t = next(t for title, t in by_title.items() if f"Title: {title}" in text)
        seen.append(t.id)
        return Reply.json(_not_a_reproduction(t))

    openai_server.responder = responder
    return openai_server, seen, by_title


def test_the_llm_reads_every_answered_thread_at_or_above_the_gate(store, answering, monkeypatch) -> None:  # noqa: ANN001
    srv, seen, by_title = answering
    monkeypatch.setenv("OPENAI_API_KEY", KEY["OPENAI_API_KEY"])
    threads = _threads()
    by_title.update({t.title: t for t in threads})
    store.upsert_threads(threads)
    dec = {d.thread_id: d for d in classify(threads)}
    expect = {i for i, d in dec.items() if passes(d)}
    filter_kept = {i for i, d in dec.items() if d.is_reproduction and "no_reply" not in d.signals}
    assert filter_kept < expect < set(dec), "the corpus slice must hold threads on each side of both cuts"
    lonely = threads[-1].id
    assert passes(dec[lonely]) and "no_reply" in dec[lonely].signals and lonely in expect  # sent all the same

    rep = run_extract(store, backend="openai", model="gpt-4o-mini", base_url=srv.base_url, concurrency=4)
    assert set(seen) == expect and len(seen) == len(expect)
    assert {r.thread_id for r in store.iter_records()} == expect
    c = rep.counts
    assert c["threads"] == len(expect) and c["no_reply"] >= 1
    assert c["below_gate"] == sum(not passes(d) for d in dec.values())
    assert any(f">= {LLM_GATE}" in n and "--no-filter" in n for n in rep.notes)

    again = run_extract(store, backend="openai", model="gpt-4o-mini", base_url=srv.base_url, concurrency=4)
    assert again.counts["skipped_unchanged"] == len(expect) and len(seen) == len(expect)

    seen.clear()
    everything = run_extract(store, backend="openai", model="gpt-4o-mini", base_url=srv.base_url, concurrency=4,
                             no_filter=True)
    assert everything.counts["threads"] == len(threads) and set(seen) == set(dec) - expect


def test_file_mode_applies_the_same_gate(tmp_path: Path, answering, monkeypatch) -> None:  # noqa: ANN001
    srv, seen, by_title = answering
    monkeypatch.setenv("OPENAI_API_KEY", KEY["OPENAI_API_KEY"])
    threads = _threads()
    by_title.update({t.title: t for t in threads})
    src = tmp_path / "threads.jsonl"
    src.write_text("".join(t.model_dump_json() + "\n" for t in threads), encoding="utf-8")
    dec = {d.thread_id: d for d in classify(threads)}
    expect = {i for i, d in dec.items() if passes(d)}
    rep = run_extract(None, input=src, output=tmp_path / "records.jsonl", backend="openai", model="gpt-4o-mini",
                      base_url=srv.base_url, concurrency=4)
    got = {json.loads(x)["thread_id"] for x in (tmp_path / "records.jsonl").read_text().splitlines()}
    assert got == expect == set(seen) and rep.counts["threads"] == len(expect)


def test_the_rules_reader_keeps_to_the_filter(store) -> None:  # noqa: ANN001
    threads = _threads()
    store.upsert_threads(threads)
    dec = {d.thread_id: d for d in classify(threads)}
    rep = run_extract(store, backend="rules")
    assert rep.counts["threads"] == sum(d.is_reproduction and "no_reply" not in d.signals for d in dec.values())
    assert "below_gate" not in rep.counts


def test_the_offline_reader_never_replaces_or_removes_an_llm_readers_record(store, answering, monkeypatch) -> None:  # noqa: ANN001
    srv, seen, by_title = answering
    monkeypatch.setenv("OPENAI_API_KEY", KEY["OPENAI_API_KEY"])
    threads = _threads()
    by_title.update({t.title: t for t in threads})
    store.upsert_threads(threads)
    run_extract(store, backend="openai", model="gpt-4o-mini", base_url=srv.base_url, concurrency=4)
    llm = {r.thread_id: r for r in store.iter_records()}
    dec = {d.thread_id: d for d in classify(threads)}
    below_rules = {i for i in llm if not dec[i].is_reproduction}
    assert llm and below_rules, "some LLM-read threads must lie below the offline filter's own threshold"

    rep = run_extract(store, backend="rules")
    after = {r.thread_id: r for r in store.iter_records()}
    assert {i: r.model_dump() for i, r in after.items() if i in llm} == {i: r.model_dump() for i, r in llm.items()}
    assert "records_removed" not in rep.counts and rep.counts["records"] == 0
    rules_reads = {i for i, d in dec.items() if d.is_reproduction and "no_reply" not in d.signals}
    assert rules_reads <= set(llm) and rep.counts["skipped_unchanged"] == len(rules_reads)
