from __future__ import annotations

import asyncio

import pytest

from miner.tokens import TokenPool
from reprodiag.config import Secret


async def test_per_token_cap_spreads_requests_and_waits_for_a_release() -> None:
    pool = TokenPool([Secret("a", "token #1"), Secret("b", "token #2")], per_token=2)
    held = [await pool.acquire() for _ in range(4)]
    assert sorted(t.label for t in held) == ["token #1", "token #1", "token #2", "token #2"]
    waiter = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0.05)
    assert not waiter.done()  # both tokens are at their cap
    pool.release(held[0])
    tok = await asyncio.wait_for(waiter, timeout=2)
    assert tok is held[0] and tok.inflight == 2


async def test_without_cap_one_token_takes_everything() -> None:
    pool = TokenPool([Secret("a", "token #1")])
    held = [await pool.acquire() for _ in range(20)]
    assert {t.label for t in held} == {"token #1"}


def test_cap_must_be_positive() -> None:
    with pytest.raises(ValueError):
        TokenPool([Secret("a", "token #1")], per_token=0)
