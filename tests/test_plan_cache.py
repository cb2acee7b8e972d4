"""gpulab.launch.PlanCache: the plans the chapters keep between calls (radix, euler, gp's compiled kernels)."""

import pytest

from gpulab.launch import PlanCache


def test_a_kept_plan_is_reused_and_the_least_recently_used_goes_first():
    evicted = []
    cache = PlanCache(maxsize=2, after_evict=lambda: evicted.append(len(cache)))
    a = cache.get(("a",), object)
    b = cache.get(("b",), object)
    assert cache.get(("a",), lambda: pytest.fail("rebuilt a kept plan")) is a  # a is now the most recent
    c = cache.get(("c",), object)  # b goes, then after_evict runs before c is built
    assert evicted == [1]
    assert set(map(id, cache.values())) == {id(a), id(c)} and b not in cache.values()
    cache.clear()
    assert not cache and len(cache) == 0


def test_one_plan_at_a_time_goes_before_the_next_is_built_and_a_failed_build_is_not_kept():
    cache = PlanCache(maxsize=1)
    cache.get((1,), object)

    def build():
        assert not cache, "the kept plan must be gone before the next one allocates"
        raise MemoryError("no room")

    with pytest.raises(MemoryError):
        cache.get((2,), build)
    assert not cache


class _Key:
    """A key part that counts how often it is hashed (the last plan is found by comparing keys)."""

    hashed = 0

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, _Key) and other.v == self.v

    def __hash__(self):
        _Key.hashed += 1
        return hash(self.v)


def test_the_last_plan_is_found_by_comparing_keys_and_forgotten_when_dropped():
    cache = PlanCache(maxsize=2)
    a = cache.get((_Key(1),), object)
    before = _Key.hashed
    assert cache.get((_Key(1),), lambda: pytest.fail("rebuilt the last plan")) is a
    assert _Key.hashed == before  # compared, not hashed
    b = cache.get((_Key(2),), object)
    assert cache.get((_Key(2),), lambda: pytest.fail("rebuilt the last plan")) is b
    assert cache.get((_Key(1),), lambda: pytest.fail("rebuilt a kept plan")) is a  # by hash: a now the most recent
    c = cache.get((_Key(3),), object)  # b, the least recently used, goes
    assert set(map(id, cache.values())) == {id(a), id(c)}
    assert cache.get((_Key(2),), object) is not b  # rebuilt: the last plan was not b any more
    cache.clear()
    assert cache.get((_Key(3),), object) is not c  # clear forgets the last plan too


def test_an_evicted_plan_is_freed_before_the_next_is_built():
    """The last plan is not held past a miss: a one-plan cache frees it before `after_evict`
    and the next build run (two plans of a large graph need not fit together)."""
    import gc
    import weakref

    class Plan:
        pass

    seen = []
    cache = PlanCache(maxsize=1, after_evict=lambda: seen.append(("after_evict", gc.collect() >= 0 and old() is None)))
    old = weakref.ref(cache.get((1,), Plan))
    assert cache.get((1,), lambda: pytest.fail("rebuilt the last plan")) is old()

    def build():
        gc.collect()
        seen.append(("build", old() is None))
        return Plan()

    cache.get((2,), build)
    assert seen == [("after_evict", True), ("build", True)]


def test_a_build_that_returns_none_is_not_the_last_plan():
    cache = PlanCache(maxsize=1)
    calls = []
    for _ in range(2):
        assert cache.get((1,), lambda: calls.append(1)) is None
    assert len(calls) == 2


def test_the_last_plan_is_found_by_its_tag_until_another_is_returned():
    """`last(tag)`: the last plan returned where `get` was given that tag; a `get` of the same
    key without a tag keeps it (same key, same plan), a new tag replaces it; another plan
    returned, an eviction or `clear` forget it."""
    cache = PlanCache(maxsize=2)
    tag = ("variant", "backend", 1000)
    assert cache.last(tag) is None
    a = cache.get(("a",), object, tag)
    assert cache.last(tag) is a and cache.last(("variant", "backend", 1001)) is None
    assert cache.get(("a",), lambda: pytest.fail("rebuilt the last plan")) is a and cache.last(tag) is a
    assert cache.get(("a",), object, ("other",)) is a and cache.last(tag) is None and cache.last(("other",)) is a
    b = cache.get(("b",), object, tag)
    assert cache.last(tag) is b
    assert cache.get(("a",), lambda: pytest.fail("rebuilt a kept plan")) is a  # by hash: a is the last now
    assert cache.last(tag) is None, "the tag of a plan that is not the last one found it"
    cache.get(("b",), object, tag)
    cache.clear()
    assert cache.last(tag) is None
    one = PlanCache(maxsize=1)
    one.get((1,), object, tag)
    one.get((2,), object)  # evicts the tagged plan
    assert one.last(tag) is None


def test_a_new_tag_does_not_bring_back_a_plan_cleared_meanwhile():
    """A hit that brings a new tag writes it only over the same last plan: a `clear` (or an
    eviction) by another thread between the hit and the write leaves the cache empty."""
    cache = PlanCache(maxsize=1)

    class Key:  # (clears the cache while the hit compares it: the other thread's clear, in between)
        clearing = False

        def __eq__(self, other):
            if Key.clearing:
                cache.clear()
            return isinstance(other, Key)

        def __hash__(self):
            return 0

    plan = cache.get((Key(),), object, ("t1",))
    Key.clearing = True
    assert cache.get((Key(),), lambda: pytest.fail("rebuilt on a hit"), ("t2",)) is plan
    Key.clearing = False
    assert len(cache) == 0 and cache.last(("t2",)) is None and cache.last(("t1",)) is None
