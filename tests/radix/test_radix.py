"""Chapter 4: scan, split, and every radix-sort variant against numpy's stable sort.

On the simulator the variants run with small compile-time blocks (their sim_params) so that tiles,
multi-level scans and partial tiles all occur at a few dozen keys; on a GPU they run with the
registry's parameters at sizes up to millions of keys.
"""

from contextlib import contextmanager

import numpy as np
import pytest
from numba import cuda

import gpulab.radix as rx
from gpulab import device
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.launch import KeptLaunches
from gpulab.radix import bench, host
from gpulab.radix.variants import REGISTRY, WARP
from tests.conftest import ON_SIMULATOR, device_only, from_gpu, gpu_library, on_gpu, skip_unless_runnable

GPU_VARIANTS = [v for v in REGISTRY if v.backend != "cpu"]


def params_for(variant):
    p = variant.launch_params()  # on the simulator its sim_params: small tiles
    if ON_SIMULATOR:  # a pairs-only shape (PAIRS_*) is tested on its own below
        p = {k: v for k, v in p.items() if not k.startswith("PAIRS_")}
    return p


def tile_keys(variant, p):
    """Keys per tile of a variant: the sizes whose edges matter (block-1, block, block+1)."""
    if "ITEMS" in p:
        return p["BLOCK"] * p["ITEMS"]
    return p.get("BLOCK", 2 * p["SCAN_BLOCK"])


# --------------------------------------------------------------------------- key distributions


def gen(dist, rng, n, bits=32):
    hi = 2**bits
    if dist == "random":
        return rng.integers(0, hi, n, dtype=np.uint64).astype(np.uint32)
    if dist == "equal":
        return np.full(n, rng.integers(0, hi), dtype=np.uint32)
    if dist == "sorted":
        return np.sort(rng.integers(0, hi, n, dtype=np.uint64)).astype(np.uint32)
    if dist == "reverse":
        return np.sort(rng.integers(0, hi, n, dtype=np.uint64))[::-1].astype(np.uint32)
    if dist == "few":
        return rng.choice(rng.integers(0, hi, 3, dtype=np.uint64), n).astype(np.uint32)
    if dist == "max":  # the largest key: every bit significant, no early exit
        k = rng.integers(0, hi, n, dtype=np.uint64).astype(np.uint32)
        k[rng.integers(0, n, max(1, n // 5))] = np.uint32(0xFFFFFFFF)
        return k
    raise ValueError(dist)


def sim_cases(variant, p):
    """Few sorts per variant: each simulated launch costs about a second, whatever n is."""
    t = tile_keys(variant, p)
    # (distribution, n, significant bits). Few bits keep the passes few (the early exit);
    # the 4-bit variants also sort one set of full 32-bit keys.
    small = 4 if variant.name.startswith("split1") else 7
    cases = [("random", 0, small), ("random", 1, small), ("few", t + 1, small), ("reverse", 2 * t - 1, small),
             ("equal", t, small)]
    if variant.name == "radix4_shared":
        cases += [("max", t - 1, 32), ("sorted", 3 * t + 2, small)]
    if variant.name == "onesweep":  # several tiles (the look-back), and all 32 bits (7 passes of 5 bits here)
        cases += [("random", 4 * t + 1, 12), ("max", t + 3, 32)]
    return cases


def gpu_cases(variant, p):
    t = tile_keys(variant, p)
    out = []
    for n in (0, 1, 2, t - 1, t, t + 1, 3 * t + 7, 65_537, 1_000_003, 2**22 + 17):
        out.append(("random", n, 32))
    for dist in ("equal", "sorted", "reverse", "few", "max"):
        out += [(dist, 1_000_003, 32), (dist, t + 1, 32)]
    out += [("random", 999_983, 7), ("random", 2**20, 20)]
    return out


CASES = [pytest.param(v, c, id=f"{v.key}-{c[0]}-{c[1]}-{c[2]}b")
         for v in GPU_VARIANTS for c in (sim_cases(v, params_for(v)) if ON_SIMULATOR else gpu_cases(v, params_for(v)))]


def run_plan(variant, keys, p, values=None, iota=True):
    """Sort through the registry entry, on poisoned work buffers; return (keys, values)."""
    plan = variant.run(keys.size, True, p)
    for buf in plan.keys + plan.vals:
        buf[:] = np.uint32(0xDEADBEEF)
    d_vals = cuda.to_device(values) if values is not None else None
    dk, dv = plan.sort(cuda.to_device(keys), d_vals, iota=values is None and iota)
    return dk.copy_to_host(), dv.copy_to_host(), plan


@pytest.mark.parametrize("variant,case", CASES)
def test_variant_sorts_stably(variant, case, rng):
    skip_unless_runnable(variant)
    dist, n, bits = case
    p = params_for(variant)
    keys = gen(dist, rng, n, bits)
    ks, perm, plan = run_plan(variant, keys, p)
    ref = np.sort(keys, kind="stable")
    assert np.array_equal(ks, ref), f"{variant.key} {case}: keys differ from numpy.sort"
    ok, detail = bench.check_argsort(keys, perm, ref)
    assert ok, f"{variant.key} {case}: {detail}"
    assert np.array_equal(perm, np.argsort(keys, kind="stable"))
    if n > 1:  # the early exit: only the significant bits are sorted
        assert plan.passes_run == bench.passes_for(variant.policy, p, keys)


@pytest.mark.parametrize("name", WARP)
def test_ballot_ranking_of_the_numba_kernels(name, rng):
    """Both rankings of the numba kernels, whichever the registry uses: BITS ballots (BALLOT=1)
    here. Its first build crashed on the H200: numba-cuda types ballot_sync's mask as int32, and
    mixed with uint32 a mask with lane 31 set widened with its sign copied into 32 high bits
    (popc counted 32 lanes too many). The simulator now types the mask the same way
    (gpulab.simwarp), so the "few" case below -- lane 31 holding digit 255 -- caught it here too."""
    v = REGISTRY.get(name, "numba")
    skip_unless_runnable(v)
    p = {**params_for(v), "BALLOT": 1}
    t = p["BLOCK"] * p["ITEMS"]
    for dist, n, bits in (("random", 2 * t + 5, 10), ("few", t - 1, 32)):
        keys = gen(dist, rng, n, bits)
        if dist == "random":  # lane 31 of every warp step holds digit 255 in the first pass
            keys[31::32] |= np.uint32(0xFF)
        ks, perm, _ = run_plan(v, keys, p)
        assert np.array_equal(ks, np.sort(keys)), (dist, n)
        assert np.array_equal(perm, np.argsort(keys, kind="stable")), (dist, n)


class _Recorder:
    """A plan's kernel provider that notes the name of every launch it makes in `launched`,
    kept launches (`K.kept`, on a GPU) at each of their calls too; `plain` holds the names
    launched the usual way, through the provider."""

    def __init__(self, K, launched):
        self.K, self.launched, self.plain = K, launched, set()

    def __call__(self, name, *a, **k):
        self.launched.append(name)
        self.plain.add(name)
        return self.K(name, *a, **k)

    def kept(self, name, *a):
        go = self.K.kept(name, *a)
        if go is None:
            return None

        def noted(*addresses):
            self.launched.append(name)
            go(*addresses)

        return noted


@contextmanager
def recorded(plan):
    """The names of the launches of `plan`'s sorts while inside, in order: its provider wrapped
    in a `_Recorder`, its kept launches made anew through it. On a GPU every one-sweep kernel
    and zeroing must then have gone through a kept launch (`SortPlan.kept`)."""
    K, kept, launched = plan.K, plan.kept, []
    plan.K, plan.kept = _Recorder(K, launched), KeptLaunches(enabled=kept.enabled)
    try:
        yield launched
        if not ON_SIMULATOR and device.raw_driver() is not None:  # (kept launches can be made here)
            assert not {k for k in plan.K.plain if k.startswith("onesweep") or k == "zero_i32"}, plan.K.plain
    finally:
        plan.K, plan.kept = K, kept


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_onesweep_zeroes_behind_each_sort(backend, rng, monkeypatch):
    """A onesweep plan's sort queues the zeroing of its counters and status tables behind its
    last pass (`SortPlan.rezero`: one launch, the counters lying between the two tables), so the next sort launches no zeroing before pass 0; a fresh
    plan, and one whose last sort stopped between two launches, zero them in the preamble; every
    sort is right, also after a stopped one left counts and tables poisoned."""
    v = REGISTRY.get("onesweep", backend)
    skip_unless_runnable(v)
    p = params_for(v)
    t, R = p["BLOCK"] * p["ITEMS"], 1 << p["BITS"]
    n = t + int(rng.integers(1, t))  # two tiles, the last partial
    plan = v.run(n, False, p)
    with recorded(plan) as launched:
        _zeroes_behind_each_sort(plan, launched, n, R, rng, monkeypatch)


def _zeroes_behind_each_sort(plan, launched, n, R, rng, monkeypatch):
    p = plan.params

    def sort(keys):
        launched.clear()
        dk, _ = plan.sort(cuda.to_device(keys))
        assert np.array_equal(dk.copy_to_host(), np.sort(keys)), launched
        return launched[: launched.index("onesweep_first")]

    def keys_of_two_digits():  # two passes that move keys, whatever the draw
        k = rng.integers(0, R * R, n, dtype=np.uint32)
        k[:2] = [0, R * R - 1]
        return k

    assert sort(keys_of_two_digits()).count("zero_i32") == 2, "a fresh plan zeroes in its preamble"
    # one launch behind the last pass zeroes the counters and the last pass's table (one range)
    assert launched[-1] == "zero_i32" and launched[-2].startswith("onesweep") and plan.zeroed, launched
    assert not plan.ctl.copy_to_host().any() and not plan.status.copy_to_host().any(), "left zero behind"
    assert "zero_i32" not in sort(keys_of_two_digits()), "the sort after a whole one zeroes nothing before pass 0"
    # one pass; a first pass that moves nothing (every key shares the low digit); a given max_key:
    # each leaves every counter and table zero, and the sort after it is right
    one_digit = rng.integers(0, R, n, dtype=np.uint32)
    one_digit[:2] = [0, R - 1]
    shared_low = (rng.integers(0, R, n, dtype=np.uint32) << np.uint32(p["BITS"])) | np.uint32(rng.integers(0, R))
    shared_low[:2] = shared_low[:2] & np.uint32(R - 1) | np.array([0, (R - 1) << p["BITS"]], np.uint32)
    for keys, max_key, first_moves in ((one_digit, None, True), (shared_low, None, False),
                                       (keys_of_two_digits(), R * R - 1, True)):
        launched.clear()
        dk, _ = plan.sort(cuda.to_device(keys), max_key=max_key)
        assert np.array_equal(dk.copy_to_host(), np.sort(keys)), (max_key, launched)
        assert "zero_i32" not in launched[: launched.index("onesweep_scan")], launched
        assert plan.first_moved == first_moves, "premise: the first pass moves keys or not"
        assert not plan.ctl.copy_to_host().any() and not plan.status.copy_to_host().any(), (max_key, launched)
    assert "zero_i32" not in sort(keys_of_two_digits())
    # a sort that stops between two launches: the next one zeroes before pass 0 again
    calls = []

    def failing_pass(*a, _orig=plan.one_pass, **k):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("stopped")
        return _orig(*a, **k)

    monkeypatch.setattr(plan, "one_pass", failing_pass)
    with pytest.raises(RuntimeError, match="stopped"):
        plan.sort(cuda.to_device(keys_of_two_digits()))
    monkeypatch.undo()
    assert not plan.zeroed
    plan.ctl[:] = np.int32(-7)  # what a stopped sort may leave, and worse
    plan.status[:] = np.uint32(0xDEADBEEF)
    assert sort(keys_of_two_digits()).count("zero_i32") == 2, "a stopped sort's plan zeroes in its preamble"


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_onesweep_lookback_prefix(backend, rng):
    """The look-back's cross-tile prefix, read back from the status table after one pass over
    many tiles: every word of every tile is PREFIX | (keys of that digit in tiles 0..t); the
    pass zeroed the next pass's table (poisoned here); and a two-pass sort over the same tables
    (the second pass uses the table the first zeroed) is a stable argsort."""
    from gpulab.radix import kernels_numba as kn

    v = REGISTRY.get("onesweep", backend)
    skip_unless_runnable(v)
    p = params_for(v)
    t, R = p["BLOCK"] * p["ITEMS"], 1 << p["BITS"]
    n = (5 if ON_SIMULATOR else 300) * t + 3  # several tiles, the last one partial
    keys = rng.integers(0, R, n, dtype=np.uint32)  # one digit: one pass
    keys[: t] = np.uint32(R - 1)  # a whole tile of the largest digit, ...
    keys[keys == 0] = 1
    keys[-2:] = 0  # ... and digit 0 in the last (partial) tile only
    plan = v.run(n, False, p)
    plan.status[:] = np.uint32(0xDEADBEEF)
    plan.keys[0][:] = np.uint32(0xDEADBEEF)
    # the preamble and the one pass, without the zeroing a whole sort queues behind its last pass
    assert plan.queue_first_pass(cuda.to_device(keys), plan.vals[1]) == [0] and plan.first_moved
    cuda.synchronize()
    assert np.array_equal(plan.keys[0].copy_to_host(), np.sort(keys))
    words = plan.tables[0].copy_to_host().reshape(plan.nb, R)
    counts = np.stack([np.bincount(keys[i * t:(i + 1) * t], minlength=R) for i in range(plan.nb)])
    assert np.all(words & np.uint32(0xC0000000) == np.uint32(kn.FLAG_PREFIX)), "a tile did not publish its prefix"
    assert np.array_equal(words & np.uint32(kn.VALUE_MASK), np.cumsum(counts, axis=0)), "wrong cross-tile prefix"
    assert not plan.tables[1].copy_to_host().any(), "the next pass's status table was not zeroed"
    keys2 = rng.integers(0, R * R, n, dtype=np.uint32)  # two passes
    ks, perm, plan2 = run_plan(v, keys2, p)
    assert plan2.passes_run == 2 and np.array_equal(ks, np.sort(keys2))
    assert np.array_equal(perm, np.argsort(keys2, kind="stable"))
    # the queued first pass (onesweep_first) when every key shares its digit: it writes nothing,
    # yet zeroes the table the next pass uses
    keys3 = (rng.integers(0, R, n, dtype=np.uint32) << np.uint32(p["BITS"])) | np.uint32(rng.integers(0, R))
    assert len(np.unique(keys3 >> np.uint32(p["BITS"]))) > 1, "premise: the second digit moves keys"
    d3 = cuda.to_device(keys3)
    plan.status[:] = np.uint32(0xDEADBEEF)
    plan.keys[0][:] = np.uint32(0xDEADBEEF)
    plan.queue_first_pass(d3, plan.vals[1])
    cuda.synchronize()
    assert not plan.first_moved
    assert np.all(plan.keys[0].copy_to_host() == 0xDEADBEEF), "the first pass wrote keys though none move"
    assert not plan.tables[1].copy_to_host().any(), "the skipped pass did not zero the next pass's status table"
    plan.status[:] = np.uint32(0xDEADBEEF)
    dk, _ = plan.sort(d3)
    assert np.array_equal(dk.copy_to_host(), np.sort(keys3))


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("early", [0, 1])
def test_onesweep_early_counts(backend, early, rng):
    """onesweep with each tile's digits counted before ranking (EARLY_COUNTS=1: the counts are
    published first and each key is ranked straight to its place in the tile) and counted by the
    ranking (0), whichever one the registry uses on this backend: sizes 1, a tile (keys-only and key-value) -1, +0, +1 and
    several tiles with a partial last one; random keys, and keys drawn from three values, so that
    every pass runs with at most three digits and the lanes of a warp collide on a digit's
    counter; keys only and with values (a stable argsort), on poisoned buffers. On the simulator
    (slow per pass) only the way the registry does not use, two sizes and 10-bit keys (2 passes)."""
    v = REGISTRY.get("onesweep", backend)
    skip_unless_runnable(v)
    p = {**params_for(v), "EARLY_COUNTS": early}
    t, tp = p["BLOCK"] * p["ITEMS"], p["BLOCK"] * p.get("PAIRS_ITEMS", p["ITEMS"])  # keys' and pairs' tiles
    cases = [(n, d) for n in sorted({1, t - 1, t, t + 1, tp - 1, tp, tp + 1, 3 * t + 7}) for d in ("random", "three values")]
    bits = 32
    if ON_SIMULATOR:
        if early == v.params.get("EARLY_COUNTS", 0):
            pytest.skip("the registry's way: every onesweep test on the simulator runs it")
        cases, bits = [(t - 1, "random"), (3 * t + 7, "three values")], 10
    for n, dist in cases:
        if dist == "random":
            keys = rng.integers(0, 2**bits, n, dtype=np.uint64).astype(np.uint32)
        else:  # three distinct values: with n >= 2 some pass moves keys, with at most three digits
            keys = rng.choice(rng.choice(2**bits, 3, replace=False).astype(np.uint32), n)
        plan = v.run(n, False, p)
        assert plan.params.get("EARLY_COUNTS", 0) == early
        for buf in plan.keys:
            buf[:] = np.uint32(0xDEADBEEF)
        dk, _ = plan.sort(cuda.to_device(keys))
        assert np.array_equal(dk.copy_to_host(), np.sort(keys)), (n, dist, "keys")
        ks, perm, _ = run_plan(v, keys, p)
        assert np.array_equal(ks, np.sort(keys)), (n, dist, "pairs")
        assert np.array_equal(perm, np.argsort(keys, kind="stable")), (n, dist, "pairs")


@pytest.mark.parametrize("name", WARP)
@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_keys_only_and_pairs_shapes(name, backend, rng):
    """Keys-only plans build tiles without the shared value buffer (PAIRS=0); key-value plans
    take the PAIRS_* shape when the registry gives one. Both sort; onesweep skips the passes
    whose digit all keys share (here the middle one) and keeps its status tables in step."""
    v = REGISTRY.get(name, backend)
    skip_unless_runnable(v)
    p = params_for(v)
    R = 1 << p["BITS"]
    small = {**p, "PAIRS_ITEMS": max(1, p["ITEMS"] // 2)}
    t = p["BLOCK"] * p["ITEMS"]
    n = 3 * t + 7
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    if name == "onesweep":  # the second digit is the same for every key: that pass moves nothing
        keys = (keys & ~np.uint32((R - 1) << p["BITS"])) | np.uint32(5 << p["BITS"])
    plan = v.run(n, False, small)
    assert plan.params["ITEMS"] == p["ITEMS"]
    dk, _ = plan.sort(cuda.to_device(keys))
    assert np.array_equal(dk.copy_to_host(), np.sort(keys))
    assert plan.passes_run == bench.passes_for(v.policy, p, keys)
    if name == "onesweep":
        assert plan.passes_run == -(-32 // p["BITS"]) - 1
    ks, perm, plan = run_plan(v, keys, small)
    assert plan.params["ITEMS"] == small["PAIRS_ITEMS"]
    assert np.array_equal(ks, np.sort(keys)) and np.array_equal(perm, np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_onesweep_queued_first_pass(backend, rng):
    """onesweep launches its first pass before the offsets reach the host; when all keys share
    its digit, that pass's blocks see it in the offsets and write nothing (`first_moved` False:
    the next pass reads the input). One plan sorts key sets that each lead to
    another pass decision (stale offsets would run the wrong passes), with and without `out`;
    the result lands where the caller asked: `out` (also when the queued pass was the only one,
    or no pass ran), else the plan's buffers. The argsort's positions are made up by the passes
    that read the input (`onesweep_iota`, `onesweep_first_iota`; no `iota` launch), and written
    by `iota` only when no pass moved a key.
    The plan's buffers and `out` are poisoned before each sort, so a result left elsewhere
    fails; poisoning the plan's buffers after it shows that the result returned without `out`
    is theirs, not the input. The max-key path (which launches every pass up to the key's top
    digit, and where each must write) and n = 1 (nothing to sort) go through the same result
    handling, `out` holding the input keys included."""
    v = REGISTRY.get("onesweep", backend)
    skip_unless_runnable(v)
    p = params_for(v)
    bits, R = p["BITS"], 1 << p["BITS"]
    all_passes = -(-32 // bits)
    n = p["BLOCK"] * p["ITEMS"] + 3
    spread = lambda: rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)  # noqa: E731
    # (label, keys, passes launched, give out)
    sequence = [("low digit shared", spread() & ~np.uint32(R - 1), all_passes, True),
                ("one digit", rng.integers(0, R, n, dtype=np.uint32), 1, False),
                ("all equal", np.full(n, rng.integers(0, 2**32, dtype=np.uint64), np.uint32), 1, True),
                ("one digit", rng.integers(0, R, n, dtype=np.uint32), 1, True),
                ("all equal", np.full(n, 7, np.uint32), 1, False),
                ("low digit shared", spread() & ~np.uint32(R - 1), all_passes, False)]
    plan = v.run(n, True, p)
    poison = lambda m: cuda.to_device(np.full(m, 0xDEADBEEF, np.uint32))  # noqa: E731

    def check(plan, keys, runs, out, label, in_place=False, **kw):
        for buf in plan.keys + plan.vals:
            buf[:] = np.uint32(0xDEADBEEF)
        d_keys = cuda.to_device(keys)
        if in_place:  # the keys sorted where they are, the positions into a poisoned array
            out = (d_keys, poison(len(keys)))
        with recorded(plan) as launched:
            dk, dv = plan.sort(d_keys, iota=True, out=out, **kw)
        want_k, want_v = np.sort(keys), np.argsort(keys, kind="stable")
        assert plan.passes_run == runs, label
        low_shared = len(np.unique(keys & np.uint32(R - 1))) == 1
        assert plan.first_moved == (not low_shared or "max_key" in kw or len(keys) == 1), label
        moved = runs > 1 or (runs == 1 and plan.first_moved)
        assert launched.count("iota") == (0 if moved else 1), (label, launched)
        passes = [k for k in launched if k.startswith("onesweep") and k not in ("onesweep_hist", "onesweep_scan")]
        reads_input = 1 if plan.first_moved else 2  # the passes up to the first that moves keys
        assert all(k.endswith("_iota") == (i < reads_input) for i, k in enumerate(passes)), (label, launched)
        assert np.array_equal(dk.copy_to_host(), want_k) and np.array_equal(dv.copy_to_host(), want_v), label
        if out is not None:
            assert np.array_equal(out[0].copy_to_host(), want_k), label
            assert np.array_equal(out[1].copy_to_host(), want_v), label
        else:
            for buf in plan.keys + plan.vals:
                buf[:] = np.uint32(0xDEADBEEF)
            assert np.all(dk.copy_to_host() == 0xDEADBEEF) and np.all(dv.copy_to_host() == 0xDEADBEEF), label
        if not in_place:
            assert np.array_equal(d_keys.copy_to_host(), keys), f"{label}: the input was modified"

    for label, keys, runs, give_out in sequence:
        check(plan, keys, runs, (poison(n), poison(n)) if give_out else None, label)
    # in place, every pass moving keys (the last writes `out`, which is the input): queued, and
    # with the max key given
    keys = spread()
    keys[:2] = [0, 2**32 - 1]  # every digit moves keys, whatever the draw
    check(plan, keys, all_passes, None, "in place, queued", in_place=True)
    keys = rng.integers(0, R * R, n, dtype=np.uint32)
    keys[:2] = [1, R * R - 1]  # both digits move keys, whatever the draw
    check(plan, keys, 2, None, "in place, max key given", in_place=True, max_key=R * R - 1)
    # the max-key path: every pass up to the key's top digit, none at all for keys of 0
    keys = rng.integers(0, R, n, dtype=np.uint32)
    check(plan, keys, 1, (poison(n), poison(n)), "max key given", max_key=R - 1)
    check(plan, np.zeros(n, np.uint32), 0, None, "max key 0", max_key=0)
    keys = rng.integers(0, R * R, n, dtype=np.uint32) & ~np.uint32(R - 1)  # pass 0 moves nothing, runs anyway
    check(plan, keys, 2, None, "max key given, low digit shared", max_key=R * R - 1)
    # in place, the queued pass moving nothing and one pass after it: that pass reads the input
    # and is the last, so it may not write `out` (the input) directly
    keys = (rng.integers(0, R, n, dtype=np.uint32) << np.uint32(bits)) | np.uint32(rng.integers(0, R))
    assert len(np.unique(keys >> np.uint32(bits))) > 1, "premise: the second digit moves keys"
    d_keys, vals_out = cuda.to_device(keys), poison(n)
    dk, dv = plan.sort(d_keys, iota=True, out=(d_keys, vals_out))
    assert plan.passes_run == 2 and not plan.first_moved
    assert np.array_equal(d_keys.copy_to_host(), np.sort(keys))
    assert np.array_equal(vals_out.copy_to_host(), np.argsort(keys, kind="stable"))
    # one key: nothing to sort, the result still copied where asked; `out` may hold the input keys
    one = host.SortPlan(v.policy, backend, 1, True, p)
    key = rng.integers(0, 2**32, 1, dtype=np.uint64).astype(np.uint32)
    check(one, key, 0, None, "one key")
    d_key, vals_out = cuda.to_device(key), poison(1)
    dk, dv = one.sort(d_key, iota=True, out=(d_key, vals_out))
    assert dk.copy_to_host()[0] == key[0] and vals_out.copy_to_host()[0] == 0 and dv.copy_to_host()[0] == 0


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_onesweep_public_calls_on_a_stream(backend, rng):
    """The public calls on onesweep's queued path, on a stream of the caller's: int32 keys over
    the whole range (every pass runs) and keys sharing their low digit (the queued pass writes
    nothing); the results are read after that stream alone is synchronized. (The simulator
    runs one call on one case: its streams are not concurrent, and each 8-bit pass takes
    seconds there.)"""
    v = REGISTRY.get("onesweep", backend)
    skip_unless_runnable(v)
    p = params_for(v)
    n = p["BLOCK"] * p["ITEMS"] + 5 if ON_SIMULATOR else 1_000_003
    spread = rng.integers(-2**31, 2**31, n).astype(np.int32)
    cases = {"low digit shared": spread & ~np.int32((1 << p["BITS"]) - 1)}
    if not ON_SIMULATOR:
        cases["whole range"] = spread
    for label, keys in cases.items():
        vals = rng.standard_normal(n).astype(np.float32)
        order = np.argsort(keys, kind="stable")
        s = cuda.stream()
        pk, pv = rx.sort_pairs(device_only(keys), device_only(vals), "onesweep", backend, params=p, stream=s)
        s.synchronize()
        assert np.array_equal(_device(pk), keys[order]) and np.array_equal(_device(pv), vals[order]), label
        if ON_SIMULATOR:
            continue
        d_keys = device_only(keys)
        ks = rx.sort(d_keys, "onesweep", backend, params=p, stream=s)
        perm = rx.argsort(d_keys, "onesweep", backend, params=p, stream=s)
        s.synchronize()
        assert np.array_equal(_device(ks), keys[order]) and np.array_equal(_device(perm), order), label


def test_onesweep_limit():
    with pytest.raises(LimitError, match="30 bits"):
        v = REGISTRY.get("onesweep", "numba")
        host.SortPlan(v.policy, "numba", 2**30 + 1, False, v.params)


# --------------------------------------------------------------------------- public API, signed and float keys


def sim_variant():
    """The variant the public-API tests use: the fast one where it runs, else radix4_shared."""
    name = "radix4_shared" if ON_SIMULATOR else "local"
    v = REGISTRY.get(name, "numba")
    return name, params_for(v)


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_signed_and_float_keys(backend, rng):
    skip_unless_runnable(REGISTRY.get("radix4_shared", backend))
    name, p = sim_variant()
    n = 45 if ON_SIMULATOR else 1_000_003
    ints = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    ints[:3] = [-2**31, 2**31 - 1, -1]
    ints[3:6] = ints[6:9]  # equal keys, so stability shows
    ks, vs = rx.sort_pairs(ints, np.arange(n, dtype=np.uint32), name, backend, p)
    assert np.array_equal(ks, np.sort(ints, kind="stable"))
    assert np.array_equal(vs, np.argsort(ints, kind="stable"))
    fl = rng.standard_normal(n).astype(np.float32) * 1e3
    specials = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -np.nan, 1e-45, -1e-45, np.float32(3.4e38)], np.float32)
    fl[rng.choice(np.arange(4, n), specials.size, replace=False)] = specials
    fl[:4] = fl[4:8]  # equal keys, so stability shows
    vals = np.arange(n, dtype=np.float32)  # exact up to 2**24: the positions, as float32 values
    ks, vs = rx.sort_pairs(fl, vals, name, backend, p)
    assert np.array_equal(ks, np.sort(fl, kind="stable"), equal_nan=True)
    assert np.isnan(ks[-2:]).all(), "NaNs sort last"
    assert vs.dtype == np.float32 and np.array_equal(vs, np.argsort(fl, kind="stable").astype(np.float32))
    if not ON_SIMULATOR:
        assert np.array_equal(rx.argsort(fl, name, backend, p), np.argsort(fl, kind="stable"))
        assert np.array_equal(rx.sort(ints, name, backend, p), np.sort(ints))


@pytest.mark.parametrize("n", [0, 1, 70, "2 scan blocks - 1", "2 scan blocks"])
def test_distinct_matches_numpy_unique(n, rng):
    """Sizes 0, 1, 70, and where the scan of the n + 1 flags (one extra, 0: its last element is
    the count) just fits one scan block and just crosses into a second."""
    name, p = sim_variant()
    skip_unless_runnable(REGISTRY.get(name, "numba"))
    if isinstance(n, str):  # a scan block takes 2 * SCAN_BLOCK values (Blelloch)
        per_block = 2 * REGISTRY.get(name, "numba").launch_params(p)["SCAN_BLOCK"]
        n = per_block - 1 if n.endswith("- 1") else per_block
    keys = rng.integers(0, max(n // 3, 1), n, dtype=np.uint32)
    assert np.array_equal(rx.distinct(keys, name, params=p), np.unique(keys))
    if n > 1:
        fl = rng.choice(np.array([np.nan, -0.0, 0.0, 1.5, -2.0, np.inf], np.float32), n)
        assert np.array_equal(rx.distinct(fl, name, params=p), np.unique(fl), equal_nan=True)


@pytest.mark.skipif(ON_SIMULATOR, reason="millions of keys: GPU only")
@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=lambda v: v.key)
def test_distinct_every_variant_gpu(variant, rng):
    skip_unless_runnable(variant)
    keys = rng.integers(0, 500_000, 2_000_003, dtype=np.uint32)
    assert np.array_equal(rx.distinct(keys, variant.name, variant.backend), np.unique(keys))


def test_cpu_baseline_is_numpy(rng):
    keys = rng.integers(0, 50, 101, dtype=np.uint32)
    assert np.array_equal(rx.sort(keys, "numpy", "cpu"), np.sort(keys))
    assert np.array_equal(rx.distinct(keys, "numpy", "cpu"), np.unique(keys))


# --------------------------------------------------------------------------- scan and split on their own


SCAN_SIZES = [0, 1, 7, 8, 9, 8 * 8 + 3] if ON_SIMULATOR else [0, 1, 1023, 1024, 1025, 1_000_003, 2**24 + 1]


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("method", ["blelloch", "hillis_steele"])
@pytest.mark.parametrize("n", SCAN_SIZES)
def test_scan(backend, method, n, rng):
    skip_unless_runnable(REGISTRY.get("split1_global", backend))
    block = 4 if ON_SIMULATOR else 512  # small blocks: several levels of block sums at small n
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    for inclusive in (False, True):
        got = rx.scan(x, inclusive=inclusive, method=method, backend=backend, block=block)
        assert np.array_equal(got, rx.scan_reference(x, inclusive)), (n, inclusive)


def test_scan_wraps_like_uint32(rng):
    x = np.full(20, 2**31 + 5, np.uint32)
    assert np.array_equal(rx.scan(x, inclusive=True, block=4), np.cumsum(x, dtype=np.uint32))


def test_split_worked_example():
    """GPU Gems 3, ch. 39: the 8-element example, split on bit 0."""
    keys = np.array([1, 0, 1, 1, 0, 0, 1, 0], np.uint32) | (np.arange(8, dtype=np.uint32) << 4)
    out = rx.split(keys, 0, block=4)
    # flags e = [0 1 0 0 1 1 0 1], scan = [0 0 1 1 1 2 3 3], totalFalses = 4:
    # zeros go to 0..3 in input order, ones to 4..7 in input order.
    assert list(out) == [0x10, 0x40, 0x50, 0x70, 0x01, 0x21, 0x31, 0x61]


@pytest.mark.parametrize("n,bit", [(1, 0), (33, 31), (70, 5)])
def test_split_random(n, bit, rng):
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    assert np.array_equal(rx.split(keys, bit, block=4), rx.split_reference(keys, bit))


# --------------------------------------------------------------------------- transforms, errors, registry


def test_key_transforms_preserve_order(rng):
    ints = rng.integers(-2**31, 2**31, 10_000, dtype=np.int64).astype(np.int32)
    u = host.to_ordered(ints)
    assert np.array_equal(np.argsort(u, kind="stable"), np.argsort(ints, kind="stable"))
    assert np.array_equal(host.from_ordered(u, np.int32), ints)
    fl = np.concatenate([rng.standard_normal(10_000).astype(np.float32) * 10.0 ** rng.integers(-40, 38, 10_000),
                         np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)]).astype(np.float32)
    u = host.to_ordered(fl)
    assert np.array_equal(np.argsort(u, kind="stable"), np.argsort(fl, kind="stable"))
    back = host.from_ordered(u, np.float32)
    assert np.array_equal(back, fl, equal_nan=True)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(DtypeError, match="uint32, int32 and float32"):
        rx.sort(np.ones(4, np.float64))
    with pytest.raises(ShapeError, match="1-D"):
        rx.sort(np.ones((2, 2), np.uint32))
    with pytest.raises(ShapeError, match="one value per key"):
        rx.sort_pairs(np.ones(4, np.uint32), np.ones(3, np.uint32))
    with pytest.raises(DtypeError, match="4-byte"):
        rx.sort_pairs(np.ones(4, np.uint32), np.ones(4, np.float64))
    with pytest.raises(LimitError, match="1024 threads"):
        rx.sort(np.ones(4, np.uint32), "radix4_shared", params={"BLOCK": 2048})
    with pytest.raises(LimitError, match="power-of-two"):
        rx.scan(np.ones(4, np.int32), block=48)
    with pytest.raises(LimitError, match="49152"):
        rx.sort(np.ones(4, np.uint32), "local", params={"ITEMS": 64}) if not ON_SIMULATOR else \
            host.check_params({"BLOCK": 256, "ITEMS": 64, "BITS": 8, "SCAN_BLOCK": 512})
    with pytest.raises(LimitError, match="bits 0 to 31"):
        rx.split(np.ones(4, np.uint32), 32)


def test_every_step_has_both_backends():
    numba_names = set(REGISTRY.names("numba"))
    assert numba_names == set(REGISTRY.names("cuda-c"))
    assert {"split1_global", "split1_shared", "radix4_shared", "local"} <= numba_names


@pytest.mark.skipif(not ON_SIMULATOR, reason="checks the simulator's skip reason")
def test_warp_variants_run_on_the_simulator_unless_the_shim_is_off(monkeypatch):
    from gpulab import simwarp

    assert REGISTRY.get("local", "numba").unavailable_reason() is None
    monkeypatch.setattr(simwarp, "_installed", False)
    reason = REGISTRY.get("local", "numba").unavailable_reason()
    assert reason and "warp intrinsics" in reason and "GPULAB_SIM_WARP=0" in reason


def test_unsorted_output_is_caught(rng):
    """The checks can fail: one pass of a 4-bit sort leaves 8-bit keys unsorted."""
    v = REGISTRY.get("radix4_shared", "numba")
    skip_unless_runnable(v)
    keys = rng.integers(0, 256, 40, dtype=np.uint32)
    plan = v.run(keys.size, True, params_for(v))
    plan.passes = lambda max_key: 1
    dk, dv = plan.sort(cuda.to_device(keys), iota=True)
    ok, _ = bench.check_argsort(keys, dv.copy_to_host(), np.sort(keys))
    assert not ok and not np.array_equal(dk.copy_to_host(), np.sort(keys))


# --------------------------------------------------------------------------- device arrays in, device arrays out


def _keys_of(dtype, rng, n):
    if dtype == np.uint32:
        k = rng.integers(0, 300, n, dtype=np.uint32)
    elif dtype == np.int32:
        k = rng.integers(-150, 150, n).astype(np.int32)
    else:
        k = (rng.integers(-40, 40, n) / 4).astype(np.float32)
        specials = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -np.nan], np.float32)
        k[rng.choice(n, min(n, specials.size), replace=False)] = specials[:min(n, specials.size)]
    return k


def _device(x):
    out = x.copy_to_host() if not isinstance(x, np.ndarray) else None
    assert out is not None, "a device input gave a numpy result"
    return out


def test_device_keys_are_sorted_where_they_lie(rng):
    """numba device keys (host copies refused): device results equal to numpy's, the input left
    unchanged. Every entry point on uint32 keys; float32 keys (whose ordered form has all 32
    bits significant: 8 simulated passes) through one sort of pairs. (int32 keys take the same
    path with the other transform, checked in test_order_keys_on_the_device_is_to_ordered.)"""
    name, p = sim_variant()
    keys = _keys_of(np.uint32, rng, 45)
    d_keys = device_only(keys)
    ks = _device(rx.sort(d_keys, name, params=p, stream=cuda.stream()))
    assert ks.dtype == np.uint32 and np.array_equal(ks, np.sort(keys, kind="stable"))
    perm = _device(rx.argsort(d_keys, name, params=p))
    assert perm.dtype == np.int64 and np.array_equal(perm, np.argsort(keys, kind="stable"))
    assert np.array_equal(_device(rx.distinct(d_keys, name, params=p)), np.unique(keys))
    assert np.array_equal(d_keys._ary if ON_SIMULATOR else d_keys.copy_to_host(), keys), "the input was modified"

    fl = _keys_of(np.float32, rng, 20)
    vals = np.arange(20, dtype=np.float32) * 0.5
    pk, pv = rx.sort_pairs(device_only(fl), device_only(vals), name, params=p)
    assert _device(pk).dtype == np.float32 and np.array_equal(_device(pk), np.sort(fl, kind="stable"), equal_nan=True)
    assert _device(pv).dtype == np.float32 and np.array_equal(_device(pv), vals[np.argsort(fl, kind="stable")])


def test_device_keys_edge_sizes_and_the_cpu_baseline(rng):
    name, p = sim_variant()
    for n in (0, 1):
        keys = _keys_of(np.float32, rng, n)
        assert np.array_equal(_device(rx.sort(device_only(keys), name, params=p)), np.sort(keys), equal_nan=True)
        assert _device(rx.argsort(device_only(keys), name, params=p)).dtype == np.int64
        assert _device(rx.distinct(device_only(keys), name, params=p)).size == n
    keys = _keys_of(np.int32, rng, 30)
    assert np.array_equal(_device(rx.sort(cuda.to_device(keys), "numpy", "cpu")), np.sort(keys))
    assert np.array_equal(_device(rx.argsort(cuda.to_device(keys), "numpy", "cpu")), np.argsort(keys, kind="stable"))
    assert np.array_equal(_device(rx.distinct(cuda.to_device(keys), "numpy", "cpu")), np.unique(keys))


def test_device_scan_and_split(rng):
    x = rng.integers(-1000, 1000, 37).astype(np.int32)
    got = _device(rx.scan(device_only(x), inclusive=True, block=4))
    assert got.dtype == np.int32 and np.array_equal(got, rx.scan_reference(x, True))
    u = np.full(20, 2**31 + 5, np.uint32)
    assert np.array_equal(_device(rx.scan(device_only(u), block=4)), rx.scan_reference(u, False))
    keys = rng.integers(0, 2**32, 33, dtype=np.uint64).astype(np.uint32)
    assert np.array_equal(_device(rx.split(device_only(keys), 7, block=4)), rx.split_reference(keys, 7))
    assert _device(rx.scan(device_only(np.zeros(0, np.int32)))).size == 0


def test_device_inputs_are_validated_from_the_interface():
    with pytest.raises(DtypeError, match="uint32, int32 and float32"):
        rx.sort(device_only(np.ones(4, np.float64)))
    with pytest.raises(ShapeError, match="1-D"):
        rx.sort(device_only(np.ones((2, 2), np.uint32)))
    with pytest.raises(ShapeError, match="one value per key"):
        rx.sort_pairs(device_only(np.ones(4, np.uint32)), device_only(np.ones(3, np.uint32)))
    with pytest.raises(DtypeError, match="int32 and uint32"):
        rx.scan(device_only(np.ones(4, np.float32)))


def test_order_keys_on_the_device_is_to_ordered(rng):
    """The device transform and its inverse against the numpy statement of it, on every special."""
    fl = np.concatenate([rng.standard_normal(50).astype(np.float32) * 10.0 ** rng.integers(-40, 38, 50),
                         np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45], np.float32)])
    fl = fl.astype(np.float32)
    ints = np.concatenate([rng.integers(-2**31, 2**31, 50, dtype=np.int64), [-2**31, 2**31 - 1, -1, 0]]).astype(np.int32)
    for keys in (fl, ints):
        out = cuda.device_array(keys.size, np.uint32)
        d = host.order_on_device(cuda.to_device(keys), keys.dtype, out)
        assert np.array_equal(d.copy_to_host(), host.to_ordered(keys))
        back = host.unorder_on_device(d, keys.dtype).copy_to_host()
        assert np.array_equal(back.view(np.uint32), host.from_ordered(host.to_ordered(keys), keys.dtype).view(np.uint32))


@pytest.mark.parametrize("lib_name", ["cupy", "torch"])
@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_cupy_and_torch_inputs(lib_name, backend, rng):
    """GPU only: every entry point on the caller's arrays, results in the caller's library."""
    lib = gpu_library(lib_name)
    skip_unless_runnable(REGISTRY.get("local", backend))
    n = 1_000_003
    same_lib = lambda x: type(x).__module__.split(".")[0] == lib_name  # noqa: E731
    for dtype in (np.int32, np.float32) + ((np.uint32,) if lib_name == "cupy" else ()):
        keys = _keys_of(dtype, rng, n) if dtype != np.uint32 else rng.integers(0, 2**32, n, dtype=np.uint32)
        d = on_gpu(lib, keys)
        for name in ("local", "radix4_shared"):
            ks = rx.sort(d, name, backend)
            assert same_lib(ks) and np.array_equal(from_gpu(ks), np.sort(keys, kind="stable"), equal_nan=True)
            perm = rx.argsort(d, name, backend)
            assert same_lib(perm) and np.array_equal(from_gpu(perm), np.argsort(keys, kind="stable"))
        assert np.array_equal(from_gpu(rx.distinct(d, backend=backend)), np.unique(keys), equal_nan=True)
        assert np.array_equal(from_gpu(d), keys, equal_nan=True), "the input was modified"
    vals = rng.standard_normal(n).astype(np.float32)
    keys = _keys_of(np.int32, rng, n)
    stream = lib.cuda.Stream()
    k, v = rx.sort_pairs(on_gpu(lib, keys), on_gpu(lib, vals), backend=backend, stream=stream)
    stream.synchronize()
    order = np.argsort(keys, kind="stable")
    assert np.array_equal(from_gpu(k), keys[order]) and np.array_equal(from_gpu(v), vals[order])
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    assert np.array_equal(from_gpu(rx.scan(on_gpu(lib, x), backend=backend)), rx.scan_reference(x))


def test_plans_are_reused_but_results_are_not(rng):
    """The public functions keep the last plan's buffers; each call still gets its own result
    (the last pass writes it), for 1, 2 and 3 passes, with values and without."""
    name, p = sim_variant()
    rx.clear_plan_cache()
    for iota in (True, False):
        results, plans = [], set()
        for bits in (4, 8, 12):  # 1, 2 and 3 passes of 4-bit digits
            keys = rng.integers(0, 2**bits, 30, dtype=np.uint32)
            out = rx.argsort(cuda.to_device(keys), name, params=p) if iota else rx.sort(cuda.to_device(keys), name, params=p)
            results.append((keys, out))
            plans |= {id(plan) for plan in rx._PLANS.values()}
        assert len(plans) == 1, "the plan was not reused"
        for keys, out in results:  # earlier results survive the later sorts on the same plan
            ref = np.argsort(keys, kind="stable") if iota else np.sort(keys)
            assert np.array_equal(out.copy_to_host(), ref)
    rx.clear_plan_cache()
    assert not rx._PLANS
