"""Client-side rate limits: token buckets with an injected clock (no sleeping, no timing)."""

from __future__ import annotations

import pytest

from extract.ratelimit import EXPECTED_OUTPUT_TOKENS, RateLimit, estimate_tokens


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_requests_per_minute_allow_one_second_of_burst_then_space_requests() -> None:
    clock = Clock()
    lim = RateLimit(rpm=120, clock=clock)  # 2 a second, burst 2
    waits = [lim.reserve(10) for _ in range(6)]
    assert waits[:2] == [0.0, 0.0]
    assert waits[2:] == pytest.approx([0.5, 1.0, 1.5, 2.0])  # queued: each waits for its own slot
    clock.t = 10.0  # idle refills the bucket, up to its capacity only
    assert [lim.reserve(1) for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_tokens_per_minute_wait_for_the_token_deficit() -> None:
    clock = Clock()
    lim = RateLimit(tpm=60_000, clock=clock)  # 1,000 tokens a second
    assert lim.reserve(1000) == 0.0
    assert lim.reserve(500) == pytest.approx(0.5)
    assert RateLimit(tpm=60, clock=clock).reserve(10) == 0.0  # capacity is at least one request's tokens


def test_both_limits_the_longer_wait_wins_and_no_limit_never_waits() -> None:
    clock = Clock()
    lim = RateLimit(rpm=60, tpm=6_000_000, clock=clock)
    assert lim.reserve(5) == 0.0 and lim.reserve(5) == pytest.approx(1.0)
    free = RateLimit(clock=clock)
    assert all(free.reserve(10**6) == 0.0 for _ in range(100))


@pytest.mark.parametrize("bad", [0, -1])
def test_a_non_positive_rate_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        RateLimit(rpm=bad)


def test_token_estimate_counts_the_prompt_and_the_expected_answer() -> None:
    assert estimate_tokens("x" * 400, [{"role": "user", "content": "y" * 800}]) == 300 + EXPECTED_OUTPUT_TOKENS
