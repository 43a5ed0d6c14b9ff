from __future__ import annotations

import pytest

from extract.relevance import classify
from tests.extract.threads import NEGATIVE, POSITIVE, REPLY, make_thread


@pytest.mark.parametrize(("title", "body"), POSITIVE)
def test_reproduction_threads_are_kept(title: str, body: str) -> None:
    d = classify([make_thread(title, body, REPLY)])[0]
    assert d.is_reproduction, d.signals
    assert d.thread_id == "lab/model#1" and 0.5 < d.score <= 1


@pytest.mark.parametrize(("title", "body"), NEGATIVE)
def test_bug_reports_and_help_requests_are_dropped(title: str, body: str) -> None:
    d = classify([make_thread(title, body, REPLY)])[0]
    assert not d.is_reproduction, d.signals


def test_no_reply_is_dropped_with_signal_and_bots_do_not_count() -> None:
    title, body = POSITIVE[0]
    bot = [("github-actions[bot]", "NONE", "This issue has been automatically marked as stale.")]
    for comments in (None, bot):
        d = classify([make_thread(title, body, comments)])[0]
        assert not d.is_reproduction and "no_reply" in d.signals
        assert "repro_intent" in d.signals  # the content signal is still recorded


def test_order_and_ids_follow_input() -> None:
    threads = [make_thread(t, b, REPLY, number=i) for i, (t, b) in enumerate(POSITIVE[:2] + NEGATIVE[:2])]
    got = classify(threads)
    assert [d.thread_id for d in got] == [t.id for t in threads]
    assert [d.is_reproduction for d in got] == [True, True, False, False]
