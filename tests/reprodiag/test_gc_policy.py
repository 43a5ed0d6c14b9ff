"""The batch-loop collector policy: off inside, cycles freed at batch boundaries, restored on exit."""

from __future__ import annotations

import gc
import weakref

import pytest

from reprodiag.gc_policy import batch_collection


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_inside_the_block_only_the_batch_boundary_collects() -> None:
    assert gc.isenabled()
    with batch_collection() as collect:
        assert not gc.isenabled()
        assert gc.get_freeze_count() > 0  # what was alive before the loop is never scanned again
        ref = _cycle()
        for _ in range(10_000):
            _Node()  # allocations alone do not collect the cycle
        assert ref() is not None
        collect()
        assert ref() is None
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_the_policy_is_restored_after_an_error_and_when_it_was_off() -> None:
    with pytest.raises(RuntimeError), batch_collection():
        raise RuntimeError("boom")
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        with batch_collection():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_fewer_collections_raises_the_young_threshold_and_restores_it() -> None:
    from reprodiag.gc_policy import fewer_collections

    before = gc.get_threshold()
    with fewer_collections(40_000):
        assert gc.get_threshold()[0] == max(before[0], 40_000) and gc.isenabled()
    assert gc.get_threshold() == before
