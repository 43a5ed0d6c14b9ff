"""The diagnostic exchange and the resolution type."""

from __future__ import annotations

from extract.exchange import moved_toward, read_exchange, resolution_type
from extract.threadtext import posts
from tests.extract.threads import make_thread

BODY = "I get 79.8 top-1, the paper reports 81.8."
SUGGEST = ("maint", "MEMBER", "You need to scale the learning rate with the batch size.")


def _rt(comments: list[tuple[str, str, str]], **kw: object) -> str:
    t = make_thread("Lower top-1", BODY, comments, **kw)  # type: ignore[arg-type]
    ps = posts(t)
    return resolution_type(t, ps, read_exchange(t, ps, 81.8, 79.8))


def test_post_fix_number_counts_as_confirmation() -> None:
    assert moved_toward("with lr 0.4: 81.5", 81.8, 79.8)
    assert not moved_toward("with lr 0.4: 80.1", 81.8, 79.8)  # a small move is not the fix
    assert not moved_toward("still 79.8", 81.8, 79.8)
    assert moved_toward("FID 6.3 now", 6.0, 8.4)  # lower is better works the same way
    t = make_thread("x", BODY, [SUGGEST, ("asker", "NONE", "lr 0.4 -> 81.6")])
    ps = posts(t)
    ex = read_exchange(t, ps, 81.8, 79.8)
    assert ex.confirmation == 2 and ex.cause == 1 and 1 in ex.confirmed


def test_refutation_marks_the_reply() -> None:
    t = make_thread("x", BODY, [SUGGEST, ("asker", "NONE", "I already use the scaled lr, no difference.")])
    ex = read_exchange(t, posts(t), 81.8, 79.8)
    assert ex.refuted == {1} and ex.confirmation is None


def test_resolved_needs_completion() -> None:
    confirmed = [SUGGEST, ("asker", "NONE", "That fixed it, thanks!")]
    assert _rt(confirmed, state_reason="completed") == "resolved"
    # the same exchange on an open issue, or one closed as not planned, is not resolved
    assert _rt(confirmed, state="open") == "unresolved_valuable"
    assert _rt(confirmed, state_reason="not_planned") == "unresolved_valuable"
    # closed as completed after a maintainer's explanation, without a word from the asker
    assert _rt([SUGGEST], state_reason="completed") == "resolved"


def test_accepted_discussion_answer_is_resolved() -> None:
    t = make_thread("x", BODY, [SUGGEST], kind="discussion", state="open", answer=1, category="Q&A")
    ps = posts(t)
    assert resolution_type(t, ps, read_exchange(t, ps)) == "resolved"


def test_unresolved_valuable_needs_two_exchanges() -> None:
    one = [("helper", "NONE", "Maybe the warmup? I think the paper used 5 warmup epochs.")]
    assert _rt(one, state="open") == "unresolved"
    two = one + [("asker", "NONE", "Tried 5 warmup epochs: 80.0. Still 1.8 short.")]
    assert _rt(two, state="open") == "unresolved_valuable"
    bots = one + [("stale[bot]", "NONE", "This issue has been automatically marked as stale.")]
    assert _rt(bots, state_reason="not_planned") == "unresolved"


def test_one_line_maintainer_setting_resolves_a_closed_thread() -> None:
    one_liner = ("lead", "OWNER", "use `--lr 0.02` for 8 GPUs")
    assert _rt([one_liner], state_reason=None) == "resolved"  # closed without a reason (older GitHub)
    assert _rt([("lead", "OWNER", "no idea, sorry")], state_reason=None) == "unresolved"


def test_linked_pr_fix_resolves_unless_the_asker_objects() -> None:
    fixed = ("maint", "MEMBER", "Fixed the default in #212.")
    assert _rt([fixed], state_reason="completed") == "resolved"
    assert _rt([fixed, ("asker", "NONE", "Still 79.8 with main, no difference.")], state="open") != "resolved"


def test_plus_one_replies_are_corroboration_not_diagnosis() -> None:
    plus = [("u1", "NONE", "+1, I get 79.5 too (3 seeds)."), ("u2", "NONE", "same here 😢 79.6, maybe the seed?")]
    t = make_thread("Lower top-1", BODY, plus, state="open")
    ps = posts(t)
    assert [p.is_corroboration for p in ps] == [False, True, True]
    assert read_exchange(t, ps, 81.8, 79.8).diagnostic_posts == 0
