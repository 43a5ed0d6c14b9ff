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


def test_prefilter_never_changes_the_signals(sample_threads) -> None:  # noqa: ANN001
    from extract.bench import DEFAULT_DEV_SET, load_dev_set
    from extract.relevance import signals

    threads = [t for t, _, _ in load_dev_set(DEFAULT_DEV_SET)] + list(sample_threads)
    threads += [make_thread(t, b, REPLY) for t, b in POSITIVE + NEGATIVE]
    for t in threads:
        assert signals(t).names == signals(t, prefilter=False).names, t.id


@pytest.mark.parametrize("body", [
    "Table 1 lists 42.0 AP but the other paper reports 43.3. I haven't run anything, just want to cite it.",
    "README says 0.1545 while the paper's Table 2 says 0.1554, probably a typo in the README. Not trying to "
    "reproduce anything.",
])
def test_questions_without_an_own_run_are_dropped(body: str) -> None:
    assert not classify([make_thread("Number in your table differs from the paper?", body, REPLY)])[0].is_reproduction
