"""Chapter 4's public call without per-call costs (issue 30): `out=` (the caller's array, filled
and returned), results that no later call overwrites, clear errors for a wrong `out`.

On the simulator the public calls run the simulator's default variant (radix4_shared, 32-key
tiles) on keys of few significant bits (one or three 4-bit passes: each simulated pass costs
about a second); on a GPU onesweep on both backends too, at the edges of their tiles.
"""

import numpy as np
import pytest
from numba import cuda

import gpulab.radix as rx
from gpulab.errors import DtypeError, GpulabError, ShapeError
from gpulab.radix.variants import REGISTRY
from tests.conftest import ON_SIMULATOR, device_only, from_gpu, gpu_library, on_gpu, skip_unless_runnable

SIM = ("radix4_shared", "numba")
CASES = [SIM] if ON_SIMULATOR else [SIM, ("onesweep", "numba"), ("onesweep", "cuda-c")]


def variant(name, backend):
    v = REGISTRY.get(name, backend)
    skip_unless_runnable(v)
    return v


def edge_sizes(v):
    """1, a tile less one, a tile, a tile and one, and a prime between one and two tiles."""
    p = v.launch_params()
    tile = p["BLOCK"] * p.get("ITEMS", 1)
    prime = next(m for m in range(tile + 2, 2 * tile) if all(m % d for d in range(2, int(m**0.5) + 1)))
    return [1, tile - 1, tile, tile + 1, prime]


def small_keys(rng, n, bits=4):
    """Keys below 2**bits (4 bits: one pass of the simulator's 4-bit digits)."""
    return rng.integers(0, 2**bits, n, dtype=np.uint64).astype(np.uint32)


def shared_low_byte(rng, n):
    """Keys that all share their low byte (a random one), with repeats: the low passes move
    nothing, the sort is decided by bits 8 to 11."""
    return (rng.integers(0, 16, n, dtype=np.uint32) << np.uint32(8)) | np.uint32(rng.integers(0, 256))


@pytest.mark.parametrize("name,backend", CASES)
def test_out_is_filled_and_returned_at_tile_edges(name, backend, rng):
    v = variant(name, backend)
    # on a GPU 1, 2, 3 and 4 passes of 8-bit digits (onesweep: the queued pass alone, or more)
    for n, bits in zip(edge_sizes(v), [4] * 5 if ON_SIMULATOR else [32, 8, 16, 32, 20]):
        keys = small_keys(rng, n, bits)
        out = cuda.device_array(n, np.uint32)
        got = rx.sort(device_only(keys), name, backend, out=out)
        assert got is out, "sort(out=...) did not return the caller's array"
        assert np.array_equal(out.copy_to_host(), np.sort(keys)), f"n={n}"


@pytest.mark.parametrize("name,backend", CASES)
def test_in_place_sort_of_keys_sharing_their_low_byte(name, backend, rng):
    """out=keys: the sort reads the keys where they lie, so the result goes through the plan."""
    v = variant(name, backend)
    n = edge_sizes(v)[-1]
    keys = shared_low_byte(rng, n)
    d = cuda.to_device(keys)
    assert rx.sort(d, name, backend, out=d) is d
    assert np.array_equal(d.copy_to_host(), np.sort(keys))


def test_numpy_out_and_pairs_out(rng):
    name, backend = SIM
    n = edge_sizes(variant(name, backend))[3]
    keys = small_keys(rng, n)
    out = np.full(n, 12345, np.uint32)
    assert rx.sort(keys, name, backend, out=out) is out and np.array_equal(out, np.sort(keys))
    # pairs: numpy keys, float32 values; the keys' out on the device, the values' on the host
    vals = rng.standard_normal(n).astype(np.float32)
    ko, vo = cuda.device_array(n, np.uint32), np.empty(n, np.float32)
    k, w = rx.sort_pairs(keys, vals, name, backend, out=(ko, vo))
    order = np.argsort(keys, kind="stable")
    assert k is ko and w is vo
    assert np.array_equal(ko.copy_to_host(), keys[order]) and np.array_equal(vo, vals[order])


def test_argsort_out_is_stable_int64(rng):
    name, backend = SIM
    n = edge_sizes(variant(name, backend))[1]
    keys = small_keys(rng, n, 2)  # 4 distinct keys in a tile: long runs of equal keys
    out = cuda.device_array(n, np.int64)
    assert rx.argsort(device_only(keys), name, backend, out=out) is out
    assert np.array_equal(out.copy_to_host(), np.argsort(keys, kind="stable"))


def test_two_calls_return_independent_arrays(rng):
    """Without out= each call's result is the caller's: the second sort (same size, same plan)
    does not overwrite the first's result, on the device and on the host."""
    name, backend = SIM
    n = edge_sizes(variant(name, backend))[2]
    a, b = small_keys(rng, n), small_keys(rng, n)
    while np.array_equal(np.sort(a), np.sort(b)):  # the premise: the two results differ
        b = small_keys(rng, n)
    first = rx.sort(device_only(a), name, backend)
    second = rx.sort(device_only(b), name, backend)
    assert first is not second
    assert np.array_equal(first.copy_to_host(), np.sort(a)) and np.array_equal(second.copy_to_host(), np.sort(b))
    h1 = rx.sort(a, name, backend)
    h2 = rx.sort(b, name, backend)
    assert np.array_equal(h1, np.sort(a)) and np.array_equal(h2, np.sort(b))


@pytest.mark.parametrize("lib_name", ["cupy", "torch"])
def test_out_of_another_library(lib_name, rng):
    """A CuPy array or PyTorch tensor as `out` (GPU only): filled, returned, the same object."""
    lib = gpu_library(lib_name)
    keys = small_keys(rng, 5000, 32)
    out = on_gpu(lib, np.zeros(5000, np.int64))
    assert rx.argsort(on_gpu(lib, keys), out=out) is out
    assert np.array_equal(from_gpu(out), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("lib_name", ["cupy", "torch"])
def test_results_from_the_callers_pool_stay_the_callers(lib_name, rng):
    """A CuPy or PyTorch caller's result comes from its library's pool (GPU only): of that
    library, right, and never shared with a later call's result while the caller holds it —
    for sort, argsort and the pairs, with a result dropped in between so the pool reuses it."""
    lib = gpu_library(lib_name)
    n = 5000
    a, b, c = (small_keys(rng, n, 32) for _ in range(3))
    keys_a = on_gpu(lib, a)
    pooled = (lambda: lib.get_default_memory_pool().used_bytes()) if lib_name == "cupy" else lib.cuda.memory_allocated
    before = pooled()
    first = rx.sort(keys_a)
    assert pooled() - before >= 4 * n  # the result came from the library's own allocator
    dropped = rx.sort(on_gpu(lib, c))
    del dropped  # its block goes back to the pool: the next results may take it, never `first`'s
    pos = rx.argsort(on_gpu(lib, b))
    ks, vs = rx.sort_pairs(on_gpu(lib, b), on_gpu(lib, np.arange(n, dtype=np.uint32)))
    for r in (first, pos, ks, vs):
        assert type(r).__module__.split(".")[0] == lib_name
    uniq = rx.distinct(on_gpu(lib, b))
    assert type(uniq).__module__.split(".")[0] == lib_name
    ptrs = [r.__cuda_array_interface__["data"][0] for r in (first, pos, ks, vs, uniq)]
    assert len(set(ptrs)) == 5
    assert np.array_equal(from_gpu(uniq), np.unique(b))
    assert np.array_equal(from_gpu(first), np.sort(a))
    assert np.array_equal(from_gpu(pos), np.argsort(b, kind="stable"))
    assert np.array_equal(from_gpu(ks), np.sort(b)) and np.array_equal(from_gpu(vs), np.argsort(b, kind="stable"))
    # keys and values of other dtypes: each result in its input's dtype, twice (the second call
    # takes its blocks, and their kept views, from the pool the first call's results went back to)
    for _ in range(2):
        fk = rng.standard_normal(n).astype(np.float32)
        iv = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
        sk, sv = rx.sort_pairs(on_gpu(lib, fk), on_gpu(lib, iv))
        assert type(sk).__module__.split(".")[0] == lib_name and type(sv).__module__.split(".")[0] == lib_name
        order = np.argsort(fk, kind="stable")
        assert np.array_equal(from_gpu(sk), fk[order]) and np.array_equal(from_gpu(sv), iv[order])
        assert from_gpu(sk).dtype == np.float32 and from_gpu(sv).dtype == np.int32
        fu = rx.distinct(on_gpu(lib, fk))
        assert type(fu).__module__.split(".")[0] == lib_name and from_gpu(fu).dtype == np.float32
        assert np.array_equal(from_gpu(fu), np.unique(fk))
        del sk, sv, fu


def test_a_new_result_takes_the_kept_view_of_its_pool_block(monkeypatch, rng):
    """A device caller's new result (`_target` without `out`) is its library's array
    (`gpulab.arrays.device_result`); the kernels write a numba view of its memory kept by
    pointer, shape and dtype, so a later call that gets the same block from the pool makes no new
    view (a CuPy stand-in and a stand-in pool here); the result goes back as the library's array
    itself, in its dtype, and a numba caller's result is numba's own allocation."""
    from gpulab import arrays

    made, pool = [], []

    def unbound_view(cai, owner):
        made.append((cai["data"][0], tuple(cai["shape"]), cai["typestr"]))
        return cuda.to_device(np.zeros(cai["shape"], np.dtype(cai["typestr"])))

    class Pooled:  # a CuPy stand-in: what the pool hands out
        __module__ = "cupy._core.core"

        def __init__(self, n, dtype, ptr):
            self.shape, self.dtype, self.ptr = (n,), np.dtype(dtype), ptr

        @property
        def __cuda_array_interface__(self):
            return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "strides": None,
                    "version": 3}

    monkeypatch.setattr(arrays, "_unbound_view", unbound_view)
    monkeypatch.setattr(arrays, "_caller_empty",
                        lambda n, dtype, like, stream: Pooled(n, dtype, pool.pop(0)) if like.library == "cupy" else None)
    arrays.clear_views()
    try:
        n, ptr = int(rng.integers(2, 1000)), int(rng.integers(1, 2**40)) * 256
        like = arrays.DeviceInput(None, True, "cupy", Pooled(n, np.uint32, ptr + 2**20))
        pool.extend([ptr, ptr, ptr + 4096])
        first, second, third = (rx._target(None, n, np.uint32, like, 0, ()) for _ in range(3))
        assert first[0] is second[0] and third[0] is not first[0], "the view kept by pointer"
        assert [t[1] for t in (first, second, third)] == [True] * 3  # the last pass writes them
        assert [t[2]().ptr for t in (first, second, third)] == [ptr, ptr, ptr + 4096]
        assert made == [(ptr, (n,), "<u4"), (ptr + 4096, (n,), "<u4")]
        # a float32 result: a float32 view kept, the kernels write its uint32 bits, the caller gets float32
        pool.append(ptr)
        arr, writes, give = rx._target(None, n, np.float32, like, 0, ())
        result = give()
        assert arr.dtype == np.uint32 and result.dtype == np.float32 and made[-1] == (ptr, (n,), "<f4")
        assert isinstance(result, Pooled)
        assert rx._deliver(arr, np.float32, None, arr, True, like, 0, give) is result
        # a numba caller: numba allocates, no view, the caller gets a numba array of its dtype
        numba_like = arrays.DeviceInput(None, True, "numba", None)
        arr, writes, give = rx._target(None, n, np.int32, numba_like, 0, ())
        assert not isinstance(give(), Pooled) and len(made) == 3
        got = rx._deliver(arr, np.int32, None, arr, True, numba_like, 0, give)
        assert isinstance(got, type(arr)) and got.dtype == np.int32 and got.shape == (n,)
    finally:
        arrays.clear_views()


def test_wrong_out_is_one_clear_error(rng):
    """Checked before any launch: shape, dtype, contiguity, the pair of sort_pairs."""
    n = 10
    keys = device_only(small_keys(rng, n))
    cases = [
        (lambda: rx.sort(keys, out=cuda.device_array(n + 1, np.uint32)), ShapeError, f"shape ({n},)"),
        (lambda: rx.sort(keys, out=cuda.device_array(n, np.int32)), DtypeError, "dtype uint32"),
        (lambda: rx.sort(keys, out=np.empty((n, 1), np.uint32)), ShapeError, f"shape ({n},)"),
        (lambda: rx.sort(keys, out=np.empty(2 * n, np.uint32)[::2]), ShapeError, "non-contiguous"),
        (lambda: rx.sort(keys, out=[0] * n), ShapeError, "got list"),
        (lambda: rx.argsort(keys, out=cuda.device_array(n, np.uint32)), DtypeError, "dtype int64"),
        (lambda: rx.sort_pairs(keys, keys, out=cuda.device_array(n, np.uint32)), ShapeError, "pair"),
        (lambda: rx.sort_pairs(keys, keys, out=(cuda.device_array(n, np.uint32), np.empty(n, np.float32))),
         DtypeError, "out[1] must be"),
    ]
    for call, kind, text in cases:
        with pytest.raises(kind) as info:
            call()
        msg = str(info.value)
        assert isinstance(info.value, GpulabError) and text in msg and "\n" not in msg, msg


def test_out_on_the_cpu_baseline_and_empty_sorts(rng):
    """No kernel runs here: the numpy baseline and n = 0 fill `out` too."""
    keys = small_keys(rng, 25, 8)
    out = cuda.device_array(25, np.uint32)
    assert rx.sort(keys, "numpy", "cpu", out=out) is out and np.array_equal(out.copy_to_host(), np.sort(keys))
    idx = np.empty(25, np.int64)
    assert rx.argsort(keys, "numpy", "cpu", out=idx) is idx and np.array_equal(idx, np.argsort(keys, kind="stable"))
    empty = np.empty(0, np.float32)
    assert rx.sort(device_only(empty), out=cuda.device_array(0, np.float32)).shape == (0,)
    rx.clear_cache()
    assert not rx._PLANS


@pytest.mark.parametrize("name,backend", CASES)
def test_the_result_is_allocated_while_the_gpu_sorts(name, backend, rng, monkeypatch):
    """The call asks for its result array (`_target`: a new one, or the caller's `out` checked)
    once, when every pass but the last is queued: the allocation overlaps the work already on
    the GPU instead of delaying the first launch, or (onesweep) the launches that follow the
    host's wait for the offsets."""
    from gpulab.radix import host

    v = variant(name, backend)
    log = []
    for meth in ("max_key", "histograms", "one_pass", "passes_that_move"):
        orig = getattr(host.SortPlan, meth)
        monkeypatch.setattr(host.SortPlan, meth,
                            lambda self, *a, _o=orig, _m=meth, **k: (log.append(_m), _o(self, *a, **k))[1])
    target = rx._target
    monkeypatch.setattr(rx, "_target", lambda *a, **k: (log.append("target"), target(*a, **k))[1])
    n = edge_sizes(v)[-1]
    bits = 8 if ON_SIMULATOR else 32  # two passes of the simulator's 4-bit digits; four 8-bit passes on a GPU
    keys = small_keys(rng, n, bits)
    keys[rng.integers(n)] = 2**bits - 1  # the top digit is not 0: every pass runs
    for out in (None, cuda.device_array(n, np.uint32)):
        log.clear()
        got = rx.sort(device_only(keys), name, backend, out=out)
        assert np.array_equal(got.copy_to_host(), np.sort(keys))
        assert log.count("target") == 1, log
        t = log.index("target")
        assert t > 0, f"the result was made before the first launch: {log}"
        after = log[t + 1:]
        # several passes: the last one writes the result, launched right after it was made
        assert after == ["one_pass"], f"the result was not made just before the last pass: {log}"
        if name == "onesweep":  # after the host's wait for the offsets (which passes run)
            assert t > log.index("passes_that_move"), log


@pytest.mark.parametrize("lib_name", ["cupy", "torch"])
def test_views_of_one_buffer_at_two_lengths(lib_name, rng):
    """Another library's arrays reach the kernels through numba views kept per (pointer, shape,
    dtype) (GPU only): two lengths of one buffer start at the same pointer and must get
    different views, and a sort of the longer one after the shorter one sees all its keys."""
    from gpulab import arrays

    lib = gpu_library(lib_name)
    n = 3001
    buf = on_gpu(lib, np.zeros(n, np.uint32))
    arrays.clear_views()
    for m in (n - 1000, n, n - 1000):  # short first: a view kept by pointer alone would be too short
        keys = small_keys(rng, m, 32)
        buf[:m] = on_gpu(lib, keys)
        view = buf[:m]
        assert view.__cuda_array_interface__["data"][0] == buf.__cuda_array_interface__["data"][0]
        assert rx._take(view, "keys", None, 0).shape == (m,)
        assert np.array_equal(from_gpu(rx.sort(view)), np.sort(keys)), f"m={m}"
        assert np.array_equal(from_gpu(rx.argsort(view)), np.argsort(keys, kind="stable")), f"m={m}"


@pytest.mark.parametrize("lib_name", ["cupy", "torch"])
def test_a_kept_view_lets_no_unchecked_array_through(lib_name, rng):
    """A call takes another library's array through the view kept for its memory without
    checking it again (GPU only; `argsort`, which takes no CuPy array by address). An array at
    the same pointer with the same shape and dtype but strided is still refused with one clear
    error, by `sort` too (whose call by addresses refuses it and leaves it to the full path),
    and a caller that asks for another number of dimensions is still told."""
    from gpulab import arrays

    lib = gpu_library(lib_name)
    n = 1001
    buf = on_gpu(lib, small_keys(rng, 2 * n, 32))
    arrays.clear_views()
    whole, strided = buf[:n], buf[::2]  # one pointer, shape (n,), uint32: only the strides differ
    assert strided.__cuda_array_interface__["data"][0] == whole.__cuda_array_interface__["data"][0]
    keys = from_gpu(whole)
    assert np.array_equal(from_gpu(rx.argsort(whole)), np.argsort(keys, kind="stable"))
    kept = dict(arrays._VIEWS)  # (the result's view is kept apart: arrays._RESULT_VIEWS)
    assert len(kept) == 1, "the call kept no view of the caller's keys"
    for call in (rx.argsort, rx.sort):
        with pytest.raises(ShapeError, match="non-contiguous") as info:
            call(strided)
        assert "\n" not in str(info.value)
    assert np.array_equal(from_gpu(rx.argsort(whole)), np.argsort(keys, kind="stable"))
    assert np.array_equal(from_gpu(rx.sort(whole)), np.sort(keys))
    assert arrays._VIEWS == kept, "a second call did not take the kept view"
    with pytest.raises(ShapeError, match="must be 2-D"):
        arrays.device_input_on(whole, "A", ndim=2)


class _CupyStandIn:
    """A CuPy array as gpulab sees it (its type's module and its interface; the simulator has no
    CuPy): `ptr` names its memory, whose numba view `_unbound_view` finds in `_StandIns.memory`."""

    __module__ = "cupy._core.core"

    def __init__(self, ptr, host_array, stream=1):
        self.ptr, self.shape, self.dtype, self.stream = ptr, host_array.shape, host_array.dtype, stream

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "strides": None,
                "stream": self.stream, "version": 3}


def test_distinct_past_its_limit_is_one_clear_error():
    """distinct's scan covers one element more than the keys: INT32_MAX keys are refused by
    name before any buffer is allocated (a stand-in sort plan: nothing is allocated for it)."""
    from types import SimpleNamespace

    from gpulab.errors import LimitError
    from gpulab.radix import host

    with pytest.raises(LimitError, match=f"at most {host.INT32_MAX - 1} keys"):
        host.DistinctPlan(SimpleNamespace(n=host.INT32_MAX, K=None, params={"SCAN_BLOCK": 64}))
    host.check_distinct_size(host.INT32_MAX - 1)  # the largest size it takes


def test_distinct_refuses_past_its_limit_before_planning(monkeypatch):
    """The public call names the limit before it makes a sort plan for that many keys (a CuPy
    stand-in of INT32_MAX uint32 keys: its memory is never touched)."""
    from gpulab.errors import LimitError

    monkeypatch.setattr(rx, "_plan", lambda *a, **k: pytest.fail("a plan was made past the limit"))
    huge = _CupyStandIn(2**20, np.zeros(0, np.uint32), stream=None)
    huge.shape = (rx.host.INT32_MAX,)
    with pytest.raises(LimitError, match="distinct takes at most"):
        rx.distinct(huge, "radix4_shared")


def test_distinct_finds_its_result_while_the_gpu_sorts(rng, monkeypatch):
    """`distinct` on device keys asks for its result once, after the sort, the head flags and
    their scan are queued and before the host reads the count back, its one read
    (`DistinctPlan.run` with a function for `out`), and writes the caller's new array: two
    calls on one plan (the same length) return arrays that share no memory, each `numpy.unique`
    of its keys in their dtype, and the first survives the second. A host caller's result is
    numpy, and no device result is made for it."""
    from gpulab import device
    from gpulab.radix import host

    name, backend = SIM
    log = []
    rx.clear_cache()  # (plans made before this test keep launches made before the logging below)
    for obj, meth, label in ((rx, "device_result", "result"), (device.Readback, "start", "read"),
                             (device.Readback, "fetch", "read"), (host.ScanPlan, "run", "scan")):
        orig = getattr(obj, meth)  # (a scan run by `ScanPlan.kept`, which names its launcher, is not one)
        monkeypatch.setattr(obj, meth, lambda *a, _o=orig, _l=label, **k: (
            log.append(_l) if k.get("K") is None else None, _o(*a, **k))[1])
    for obj, meth, label in ((device.Readback, "kept", "read"), (host.ScanPlan, "kept", "scan")):
        orig = getattr(obj, meth)  # kept (on a GPU): noted at each call of what they return

        def make(*a, _o=orig, _l=label, **k):
            go = _o(*a, **k)
            return None if go is None else (lambda *x, _go=go, _l=_l: (log.append(_l), _go(*x))[1])

        monkeypatch.setattr(obj, meth, make)
    sort = host.SortPlan.sort  # logged when it returns: the sort is queued (it may read back on its way)
    monkeypatch.setattr(host.SortPlan, "sort", lambda *a, **k: (sort(*a, **k), log.append("sorted"))[0])
    n = edge_sizes(variant(name, backend))[-1]
    # uint32 keys twice (one simulated pass each); int32 keys once, at fewer keys (their ordered
    # form sets the top bit: 8 simulated passes), transformed back in the caller's memory
    for dtype, calls, m in ((np.uint32, 2, n), (np.int32, 1, 20)):
        got = []
        for _ in range(calls):
            keys = small_keys(rng, m)
            keys[:3] = (0, 15, 15)  # the premise: more than one distinct key, and a repeat
            keys = (keys.astype(np.int64) - (0 if dtype == np.uint32 else 7)).astype(dtype)
            log.clear()
            u = rx.distinct(device_only(keys), name, backend)
            # (the head flags are launched between "sorted" and their scan, whose levels nest);
            # then one read, the count
            after = log[log.index("sorted") + 1:]
            assert log.count("result") == 1 and after[0] == "scan" and after[-2:] == ["result", "read"], log
            assert after.count("read") == 1, log
            got.append((keys, u))
        if calls == 2:
            (_, u1), (_, u2) = got
            assert u1 is not u2 and not host.overlap(u1, u2), "two calls' results share memory"
        for keys, u in got:  # the first result survives the second call
            assert u.dtype == dtype and np.array_equal(u.copy_to_host(), np.unique(keys))
    keys = small_keys(rng, n)
    log.clear()
    u = rx.distinct(keys, name, backend)
    assert isinstance(u, np.ndarray) and np.array_equal(u, np.unique(keys))
    assert "result" not in log, log


def test_cupy_arrays_seen_before_take_the_short_way_and_nothing_unchecked_gets_through(monkeypatch, rng):
    """A public call on CuPy arrays whose views are kept (`gpulab.arrays.kept_view`) checks and
    takes them in one look-up each (no `validate_keys`, no `_take`), and sorts them right; an array
    whose kept view does not fit the sort (2-D, int64, values of another length or item size) goes
    the full way and gets its one clear error (CuPy stand-ins on the simulator)."""
    from gpulab import arrays
    from gpulab.errors import DtypeError, ShapeError

    memory = {}

    def standin(host_array, kind=None):
        ptr = (len(memory) + 1) * 2**20 + int(rng.integers(0, 2**10)) * 256
        memory[ptr] = cuda.to_device(host_array)
        return (kind or _CupyStandIn)(ptr, host_array)

    sliced = []

    class Pooled(_CupyStandIn):  # a new result from the pool: its slice is read back from its memory
        def __getitem__(self, index):
            sliced.append(index)
            return memory[self.ptr].copy_to_host()[index]

    def pooled(host_array):
        return standin(host_array, lambda ptr, a: Pooled(ptr, a, stream=None))

    monkeypatch.setattr(arrays, "_unbound_view", lambda cai, owner: memory[cai["data"][0]])
    monkeypatch.setattr(arrays, "_caller_empty", lambda n, dtype, like, stream: None)  # numba allocates
    monkeypatch.setattr(rx, "to_caller", lambda a, like, stream=0: a.copy_to_host() if hasattr(a, "copy_to_host") else a)
    calls = []
    orig_take = rx._take
    monkeypatch.setattr(rx, "_take", lambda *a, **k: calls.append("_take") or orig_take(*a, **k))
    orig_validate = rx.host.validate_keys
    monkeypatch.setattr(rx.host, "validate_keys", lambda *a, **k: calls.append("validate_keys") or orig_validate(*a, **k))
    arrays.clear_views()
    try:
        n = int(rng.integers(2, 200))
        keys = small_keys(rng, n)  # one simulated pass a sort
        vals = rng.standard_normal(n).astype(np.float32)
        k, v = standin(keys), standin(vals)
        order = np.argsort(keys, kind="stable")
        for turn in ("first", "kept"):
            calls.clear()
            got_k, got_v = rx.sort_pairs(k, v)
            assert np.array_equal(got_k, keys[order]) and np.array_equal(got_v, vals[order]), turn
            assert (calls == []) == (turn == "kept"), f"{turn} call: {calls}"
        assert np.array_equal(rx.sort(k), np.sort(keys, kind="stable"))
        assert np.array_equal(rx.distinct(k), np.unique(keys))
        assert calls == [], calls
        # distinct's result from the caller's pool: the caller gets its own array's first
        # `count` elements (a stand-in whose slice reads its memory back here)
        monkeypatch.setattr(arrays, "_caller_empty", lambda n, dtype, like, stream: pooled(np.zeros(n, dtype)))
        dup = np.concatenate([keys, keys[:3]])  # the premise: repeated keys, so count < n
        got = rx.distinct(standin(dup))
        assert isinstance(got, np.ndarray) and np.array_equal(got, np.unique(dup)) and got.size < dup.size
        assert sliced == [slice(None, got.size)], "the caller's own array was not what came back"
        # views kept for arrays the sort must refuse: each still gets its error
        square = standin(np.zeros((4, 4), np.uint32))
        arrays.device_input_on(square, "A", ndim=2)
        wide = standin(np.zeros(n, np.int64))
        arrays.device_input_on(wide, "x")
        short = standin(vals[:-1])
        arrays.device_input_on(short, "x")
        assert all(arrays.kept_view(x) is not None for x in (square, wide, short))
        with pytest.raises(ShapeError, match="must be 1-D"):
            rx.sort(square)
        with pytest.raises(DtypeError, match="int64"):
            rx.sort(wide)
        with pytest.raises(ShapeError, match="one value per key"):
            rx.sort_pairs(k, short)
        with pytest.raises(DtypeError, match="4-byte values"):
            rx.sort_pairs(k, wide)
        with pytest.raises(ShapeError, match="values must be"):
            rx.sort_pairs(k, None)
        # the same memory named on another stream: not the kept view's way (the full way waits for it)
        assert arrays.kept_view(_CupyStandIn(k.ptr, keys, stream=7)) is None
        assert arrays.kept_view(k) is not None and arrays.kept_view(k, stream=0) is not None
    finally:
        arrays.clear_views()
