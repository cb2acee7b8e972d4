"""Chapter 4's call by addresses (issue 30): the public calls' short way for CuPy arrays
(`gpulab.radix._by_addresses`), the plan's kept launches (`SortPlan.kept`, `DistinctPlan.kept`,
`gpulab.launch.KeptLaunches`) and the pieces under them (`vector_address`, `i32`,
`Readback.kept`, `ScanPlan.kept`).

On any machine: which calls take the short way and what the plan is given (a CuPy stand-in,
a recording plan), and the kept launches' bookkeeping with a recording provider. On a GPU with
CuPy: the real short way against numpy, on outputs the pool hands back poisoned, at the edge
sizes and key sets where a sort's result must be copied into the caller's array."""

import sys
import types

import numpy as np
import pytest

import gpulab.radix as rx
from gpulab import launch
from gpulab.errors import ShapeError
from gpulab.launch import KeptLaunches, PlanCache, i32, vector_address
from gpulab.radix.variants import REGISTRY
from tests.conftest import ON_SIMULATOR, gpu_library, skip_unless_runnable
from tests.cupy_standin import Flags, Memory, addresses, module

# ----------------------------------------------------------------------------- any machine


def _standin(current_device=0, stream=0, own_flag=False):
    """A CuPy stand-in module with 1-D arrays: `ndarray` (`ndarray(n, dtype, memptr)`: over
    another array's memory, as CuPy's), `empty`, `cuda.runtime.getDevice`,
    `cuda.get_current_stream`; every array a new address (a slice or a view keeps its array's).
    `own_flag`: the arrays have CuPy's `_c_contiguous`, and reading `flags` fails the test
    (the short way reads the attribute where it exists)."""
    at = addresses()

    class ndarray:  # noqa: N801 (CuPy's name)
        def __init__(self, n, dtype=np.uint32, memptr=None, *, c=True, device=current_device, ptr=None, ndim=1):
            if memptr is not None:
                device, ptr = memptr.device_id, memptr.ptr
            self.size, self.shape, self.ndim, self.dtype = n, (n,) * ndim, ndim, np.dtype(dtype)
            self.itemsize = self.dtype.itemsize
            self._flags, self.data = Flags(c), Memory(next(at) if ptr is None else ptr, device)

        @property
        def flags(self):
            assert not own_flag, "flags read where the array has _c_contiguous"
            return self._flags

        def view(self, dtype):
            return ndarray(self.size, dtype, c=self._flags.c_contiguous, device=self.data.device_id,
                           ptr=self.data.ptr, ndim=self.ndim)

        def __getitem__(self, s):
            return ndarray(len(range(self.size)[s]), self.dtype, device=self.data.device_id, ptr=self.data.ptr)

    if own_flag:
        ndarray._c_contiguous = property(lambda self: self._flags.c_contiguous)
    ndarray.__module__ = "cupy"
    return module(ndarray, lambda n, dtype: ndarray(n, dtype, device=current_device), current_device, stream)


class _Plan:
    """A sort plan that notes what it is given and asks for its result as a real one does."""

    def __init__(self, log):
        self.log = log

    def sort(self, keys, values=None, out=None):
        made = out()
        self.log.append(("sort", keys, values, made))
        return made

    def run(self, keys, out=None):
        made = out()
        self.log.append(("distinct", keys, made))
        return made, min(3, keys.size)


@pytest.fixture
def short_way(request, monkeypatch):
    """(stand-in CuPy, log of the plans' calls, plans made) with `_plan` recording; CuPy's
    arrays with `_c_contiguous` where the test's parameter says so (indirect)."""
    log, made = [], []

    def plan(v, n, has_vals, p, pkey, stream, distinct=False, ctx=None, tag=None):
        made.append((v.name, v.backend, n, has_vals, stream, distinct))
        assert ctx == 0x5E55, "the plan is looked up in the current context"
        return _Plan(log)

    cupy = _standin(own_flag=getattr(request, "param", False))
    monkeypatch.setattr(rx, "_PLANS", PlanCache(maxsize=1))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(rx, "_plan", plan)
    monkeypatch.setattr(rx, "current_context", lambda: 0x5E55)  # (the simulator has no context)
    # the registry's default on a GPU is onesweep; the simulator resolves None to its fallback
    monkeypatch.setattr(rx, "_launch", lambda variant, backend, params: (
        REGISTRY.get(variant or "onesweep", backend), {}, ()))
    yield cupy, log, made


@pytest.mark.parametrize("short_way", [False, True], indirect=True, ids=["flags", "own_flag"])
@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_cupy_keys_go_by_address(backend, short_way):
    """uint32 CuPy keys (2 to 2^30: onesweep's limit) go to the plan as they are, with a new
    result of the keys' length from the pool, asked for by the plan; values keep their dtype."""
    cupy, log, made = short_way
    for n in (2, 3, 1000, 2**20 + 3):
        keys = cupy.ndarray(n)
        out = rx._by_addresses(keys, None, None, backend, None)
        (what, k, v, res) = log[-1]
        assert what == "sort" and k is keys and v is None and res is out and out[0].size == n and out[1] is None
        assert out[0].dtype == np.uint32 and out[0].data.ptr != keys.data.ptr
        vals = cupy.ndarray(n, np.float32)
        k_out, v_out = rx._by_addresses(keys, vals, None, backend, None)
        given = log[-1][2]  # the values as uint32 bits (the plan moves bits), the result in their dtype
        assert given.data.ptr == vals.data.ptr and given.dtype == np.uint32
        assert v_out.dtype == np.float32 and v_out.size == n and k_out.dtype == np.uint32
        assert v_out.data.ptr == log[-1][3][1].data.ptr
        u_vals = cupy.ndarray(n, np.uint32)
        rx._by_addresses(keys, u_vals, None, backend, None)
        assert log[-1][2] is u_vals, "uint32 values are given as they are"
        u = rx._by_addresses(keys, None, None, backend, None, distinct=True)
        assert log[-1][0] == "distinct" and log[-1][1] is keys and u.size == min(3, n)  # (the plan's count)
        assert u.data.ptr == log[-1][2].data.ptr and log[-1][2].size == n
    assert made[:4] == [("onesweep", backend, 2, False, 0, False), ("onesweep", backend, 2, True, 0, False),
                        ("onesweep", backend, 2, True, 0, False), ("onesweep", backend, 2, False, 0, True)]


@pytest.mark.parametrize("short_way", [False, True], indirect=True, ids=["flags", "own_flag"])
@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_every_other_call_takes_the_full_path(backend, short_way, monkeypatch):
    """Arrays the short way cannot take are left to the full path (None), which checks them
    and names what is wrong: other dtypes, dimensions, layouts, lengths, devices, a stream
    other than CuPy's null stream, values that do not match, another library, a variant of
    another family."""
    cupy, log, made = short_way
    n = 1000
    assert rx._by_addresses(cupy.ndarray(n), None, None, backend, None) is not None  # (the premise)
    refused = [(cupy.ndarray(n, np.int32), None), (cupy.ndarray(n, np.float32), None),
               (cupy.ndarray(n, ndim=2), None), (cupy.ndarray(n, c=False), None), (cupy.ndarray(1), None),
               (cupy.ndarray(0), None), (cupy.ndarray(n, device=1), None), (np.zeros(n, np.uint32), None),
               (cupy.ndarray(n), cupy.ndarray(n - 1)), (cupy.ndarray(n), cupy.ndarray(n, np.float64)),
               (cupy.ndarray(n), cupy.ndarray(n, c=False)), (cupy.ndarray(n), cupy.ndarray(n, device=1)),
               (cupy.ndarray(n), np.zeros(n, np.uint32)), (cupy.ndarray(rx._BY_ADDRESSES_MAX + 1), None)]
    for keys, values in refused:
        assert rx._by_addresses(keys, values, None, backend, None) is None, (keys, values)
    assert rx._by_addresses(cupy.ndarray(n), None, "local", backend, None) is None  # not one-sweep
    other = _standin(stream=0x5A)  # CuPy's current stream is not the null stream
    monkeypatch.setitem(sys.modules, "cupy", other)
    assert rx._by_addresses(other.ndarray(n), None, None, backend, None) is None
    assert not log[1:], "a refused call reached a plan"


def test_other_libraries_arrays_ask_cupy_nothing(monkeypatch):
    """CuPy may be imported where no GPU works: arrays of other libraries (and no arrays) are
    refused before CuPy is asked for its device or stream, which would raise there."""
    from gpulab.arrays import cupy_on_current_device

    cupy = _standin()

    def no_gpu():
        raise RuntimeError("cudaErrorNoDevice")

    cupy.cuda.runtime.getDevice = cupy.cuda.get_current_stream = no_gpu
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    for arrays in ((np.zeros(4, np.uint32),), (None, np.zeros(4, np.uint32)), (None,), ()):
        assert cupy_on_current_device(*arrays) is None
    assert rx._by_addresses(np.zeros(4, np.uint32), None, None, "numba", None) is None
    with pytest.raises(RuntimeError, match="NoDevice"):  # (a CuPy array is asked about: the premise)
        cupy_on_current_device(cupy.ndarray(4))
    stub = types.ModuleType("cupy")  # an ndarray and no `cuda` (a stub, an import half done)
    stub.ndarray = cupy.ndarray
    monkeypatch.setitem(sys.modules, "cupy", stub)
    assert cupy_on_current_device(np.zeros(4, np.uint32)) is None
    assert cupy_on_current_device(cupy.ndarray(4)) is None
    assert np.array_equal(rx.sort(np.array([3, 1, 2], np.uint32), backend="cpu"), [1, 2, 3])


def test_contiguity_is_read_from_an_attribute_only_where_it_is_one():
    """`own_contiguity_flag`: CuPy's `_c_contiguous` where the type has it as an attribute (a
    data descriptor: CuPy's field, a property); a method of that name (always true as an
    object) or none at all means `flags.c_contiguous`."""
    from gpulab.launch import own_contiguity_flag

    class Field:
        _c_contiguous = property(lambda self: True)

    class Below(Field):
        pass

    class Method:
        def _c_contiguous(self):
            return False

    assert own_contiguity_flag(Field) and own_contiguity_flag(Below)
    assert not own_contiguity_flag(Method) and not own_contiguity_flag(np.ndarray)


def test_no_context_in_this_thread_takes_the_full_path(short_way, monkeypatch):
    """Without a current CUDA context (a new thread) the call takes the full path, which makes
    one current; with one, the context is part of the plan's key (checked by the fixture)."""
    cupy, log, made = short_way
    asked = []
    monkeypatch.setattr(rx, "current_context", lambda: asked.append(1) or 0)
    assert rx._by_addresses(cupy.ndarray(10), None, None, "numba", None) is None and not log
    monkeypatch.setattr(rx, "current_context", lambda: asked.append(1) or 0x5E55)
    for _ in range(3):
        assert rx._by_addresses(cupy.ndarray(10), None, None, "numba", None) is not None
    assert len(asked) == 4


def test_the_last_plan_is_found_by_the_calls_own_arguments(monkeypatch):
    """A call by addresses like the last one (variant, backend, length, values or not, sort or
    distinct, context; no `params`) gets the last plan without resolving its variant or making
    a key (`PlanCache.last`); any difference, `params` given (a dict may change and stay the
    same object) or a cleared cache go the usual way (`_launch`, `_plan`), which finds or
    builds the plan."""
    cupy = _standin()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    ctx = [0x5E55]
    monkeypatch.setattr(rx, "current_context", lambda: ctx[0])
    monkeypatch.setattr(rx, "_PLANS", PlanCache(maxsize=1))
    monkeypatch.setattr(rx.host, "distinct_plan", lambda plan: plan)
    one_sweep = REGISTRY.get("onesweep", "numba")
    resolved, built = [], []

    class Variant:  # what `_plan` reads of a registry entry; its `run` makes a recording plan
        name, policy = one_sweep.name, one_sweep.policy

        def __init__(self, backend):
            self.backend = backend

        def run(self, n, has_vals, p, stream=0):
            built.append((n, has_vals))
            return _Plan([])

    def launch(variant, backend, params):  # (None and "onesweep" resolve alike: one key)
        resolved.append(variant)
        return Variant(backend), dict(params or {}), tuple(sorted((params or {}).items()))

    monkeypatch.setattr(rx, "_launch", launch)

    def call(n=1000, variant=None, params=None, values=False, distinct=False, backend="numba"):
        keys = cupy.ndarray(n)
        vals = cupy.ndarray(n) if values else None
        assert rx._by_addresses(keys, vals, variant, backend, params, distinct=distinct) is not None
        return len(resolved), len(built)

    assert call() == (1, 1)
    assert call() == (1, 1), "the same call resolved its variant again"
    assert call(params={}) == (2, 1)  # resolved: params given; the same key finds the same plan
    assert call(params={}) == (3, 1)
    assert call() == (3, 1), "a call without params after one with empty params (same key, same plan)"
    # each argument of the tag by itself: resolved again; a new plan where the key differs too
    steps = ((dict(variant="onesweep"), (4, 1)), ({}, (5, 1)), (dict(n=1001), (6, 2)), ({}, (7, 3)),
             (dict(values=True), (8, 4)), ({}, (9, 5)), (dict(distinct=True), (10, 6)), ({}, (11, 7)),
             (dict(backend="cuda-c"), (12, 8)), ({}, (13, 9)), ({}, (13, 9)))
    for change, counts in steps:
        assert call(**change) == counts, change
    ctx[0] = 0x7777  # another context
    assert call() == (14, 10)
    rx.clear_cache()
    assert call() == (15, 11)
    assert call() == (15, 11)


class _Array:
    """A device array as `vector_address` reads it (its kept address)."""

    def __init__(self, ptr):
        self._gpulab_vector = ptr


class _Provider:
    """A kernel provider that notes its launches: ("K", name, args) through the usual way,
    ("kept", name, addresses) through a kept launch (made by `kept`, noted in `made`)."""

    def __init__(self, can_keep=True):
        self.log, self.made, self.can_keep = [], [], can_keep

    def __call__(self, name, grid, block, *args):
        self.log.append(("K", name, args))

    def kept(self, name, grid, block, pointers, *args):
        self.made.append((name, grid, block, pointers, args))
        if not self.can_keep:
            return None
        return lambda *addresses: self.log.append(("kept", name, addresses))


def test_kept_launches_are_made_once_per_role_and_take_addresses():
    """A role's kept launch is made once, from the templates and the fixed arguments, and then
    takes the arrays' addresses; an array without one (`vector_address` None) goes the usual
    way, as does every launch of a disabled set or of a role that cannot be kept."""
    K, kept = _Provider(), KeptLaunches()
    a, b, t = _Array(0x1000), _Array(0x2000), _Array(0x9000)
    for _ in range(3):
        kept.launch(K, "pass", (4,), (256,), (a, b), (7, 8), templates=(t, t), role=("pass", 0))
    assert K.made == [("pass", (4,), (256,), 2, (t, t, 7, 8))]
    assert K.log == [("kept", "pass", (0x1000, 0x2000))] * 3
    kept.launch(K, "pass", (4,), (256,), (b, a), (7, 8), templates=(t, t), role=("pass", 0))
    assert K.log[-1] == ("kept", "pass", (0x2000, 0x1000)) and len(K.made) == 1
    no_address = object()
    kept.launch(K, "pass", (4,), (256,), (a, no_address), (7, 8), templates=(t, t), role=("pass", 0))
    assert K.log[-1] == ("K", "pass", (a, no_address, 7, 8))
    kept.launch(K, "zero", (1,), (256,), (a,), (9,))  # the role defaults to the name; templates to the arrays
    assert K.made[-1] == ("zero", (1,), (256,), 1, (a, 9)) and K.log[-1] == ("kept", "zero", (0x1000,))
    K2 = _Provider(can_keep=False)
    for _ in range(2):
        kept2 = KeptLaunches()
        kept2.launch(K2, "scan", (1,), (256,), (a,))
        kept2.launch(K2, "scan", (1,), (256,), (a,))
        assert K2.log[-2:] == [("K", "scan", (a,))] * 2
    assert len(K2.made) == 2, "a role that cannot be kept is asked once per set"
    off = KeptLaunches(enabled=False)
    off.launch(K, "pass", (4,), (256,), (a, b), (7, 8))
    assert K.log[-1] == ("K", "pass", (a, b, 7, 8)) and not off.enabled and off.get("x", lambda: 1) is None


def test_a_kept_call_is_made_once_and_falls_back_where_it_cannot_be():
    """`KeptLaunches.call`: the role's kept callable (made once) called; where there is none
    (it cannot be made, or the set is disabled), the usual way with its arguments."""
    made, usual = [], []

    def make():
        made.append(1)
        return lambda: "kept"

    kept = KeptLaunches()
    assert [kept.call("back", make, lambda *a: usual.append(a)) for _ in range(3)] == ["kept"] * 3
    assert made == [1] and not usual
    assert kept.call("none", lambda: None, lambda *a: usual.append(a) or "usual", 1, 2) == "usual"
    assert KeptLaunches(enabled=False).call("back", make, lambda *a: usual.append(a) or "off", 3) == "off"
    assert usual == [(1, 2), (3,)] and made == [1]


@pytest.mark.parametrize("own_flag", [False, True])
def test_vector_address_takes_only_1d_contiguous_4_byte_arrays(own_flag):
    """CuPy arrays by their attributes (each call; C-contiguity from `_c_contiguous` where the
    type has it: the stand-in fails the test if `flags` is read then); anything else without
    an address is None."""
    cupy = _standin(own_flag=own_flag)
    a = cupy.ndarray(10)
    assert vector_address(a) == a.data.ptr
    assert vector_address(cupy.ndarray(10, np.float32)) is not None
    for bad in (cupy.ndarray(10, np.float64), cupy.ndarray(10, np.uint16), cupy.ndarray(10, c=False),
                cupy.ndarray(10, ndim=2), np.zeros(10, np.uint32), 3, None):
        assert vector_address(bad) is None, bad
    assert vector_address(_Array(0x7000)) == 0x7000


def test_i32_is_made_once_per_value():
    assert i32(5) is i32(5) and i32(5) == 5 and i32(5).dtype == np.int32
    assert i32(np.int64(6)) == 6 and i32(True) == 1 and i32(-2**31) == -2**31
    with pytest.raises(OverflowError):
        i32(2**31)
    assert np.array_equal(i32(np.array([1, 2])), [1, 2])  # (unhashable: numpy's conversion, not kept)
    assert len(launch._I32) <= 4096


# ----------------------------------------------------------------------------- on a GPU


def _cupy():
    if ON_SIMULATOR:
        pytest.skip("the call by addresses runs on a GPU with CuPy")
    return gpu_library("cupy")


def _poisoned_pool(cp, n, dtype):
    """Leave a block of n items of 0xDEADBEEF (or NaN bits) at the head of CuPy's free list,
    so that the next array of n items from the pool (`cupy.ndarray(n, dtype)`, as the call by
    addresses makes its result) is that block; returns its address."""
    block = cp.full(n, 0xDEADBEEF, np.uint32).view(dtype)
    ptr = block.data.ptr
    del block
    return ptr


def _full_path_refused(monkeypatch):
    """Make the full path fail, so a call that reaches it is found out."""
    monkeypatch.setattr(rx, "_sorted", lambda *a, **k: pytest.fail("the call took the full path"))
    monkeypatch.setattr(rx, "_kept_inputs", lambda *a, **k: pytest.fail("the call took the full path"))


def _key_sets(rng, n, R=256):
    """(label, keys) whose sorts take every way a result reaches the caller's array: every pass
    moving keys, the first moving nothing (low byte shared), one pass (then copied into the
    result), no pass (all equal: copied)."""
    spread = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    spread[:2] = [0, 2**32 - 1]
    low = spread & ~np.uint32(R - 1)
    low[:2] = [0, 2**32 - R]
    one = rng.integers(0, R, n, dtype=np.uint32)
    one[:2] = [0, R - 1]
    return [("every pass", spread), ("low byte shared", low), ("one digit", one),
            ("all equal", np.full(n, rng.integers(0, 2**32, dtype=np.uint64), np.uint32))]


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_sorts_by_address_match_numpy(backend, rng, monkeypatch):
    """sort, sort_pairs (float32 values, NaN bit patterns among them, moved as bits) and
    distinct on CuPy arrays take the short way (the full path is made to fail) and equal
    numpy on every key set and at the sizes around a tile, a prime and 2^20 + 3; each result is
    a new array from the pool (handed out poisoned here) and the inputs are left unchanged."""
    cp = _cupy()
    v = REGISTRY.get("onesweep", backend)
    skip_unless_runnable(v)
    tile = v.params["BLOCK"] * v.params["ITEMS"]
    _full_path_refused(monkeypatch)
    for n in (2, tile - 1, tile, tile + 1, 65_537, 2**20 + 3):
        for label, keys in _key_sets(rng, n):
            if n < 4 and label != "every pass":
                continue
            c = cp.asarray(keys)
            vals = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
            vals[:1] = 0x7FC00001  # a NaN with a payload: moved as bits
            cv = cp.asarray(vals).view(np.float32)
            order = np.argsort(keys, kind="stable")
            ptr = _poisoned_pool(cp, n, np.uint32)
            got = rx.sort(c, None, backend)
            assert got.data.ptr == ptr, "premise: the result is the poisoned block"
            assert np.array_equal(cp.asnumpy(got), keys[order]), (n, label)
            _poisoned_pool(cp, n, np.uint32)
            gk, gv = rx.sort_pairs(c, cv, None, backend)
            assert gv.dtype == np.float32 and gk.dtype == np.uint32
            assert np.array_equal(cp.asnumpy(gk), keys[order]), (n, label)
            assert np.array_equal(cp.asnumpy(gv).view(np.uint32), vals[order]), (n, label)
            u = rx.distinct(c, None, backend)
            # its memory stays the result's: a block of n items from the pool now is another one
            assert _poisoned_pool(cp, n, np.uint32) != u.data.ptr
            assert np.array_equal(cp.asnumpy(u), np.unique(keys)), (n, label)
            assert np.array_equal(cp.asnumpy(c), keys) and np.array_equal(cp.asnumpy(cv).view(np.uint32), vals)


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_the_plan_keeps_its_launches_and_sorts_alike_without_them(backend, rng):
    """A onesweep plan on a GPU keeps its launches (made at the first sort); the same sorts
    with kept launches turned off give the same keys, values and distinct keys."""
    _cupy()
    from numba import cuda

    from gpulab.radix import host

    v = REGISTRY.get("onesweep", backend)
    skip_unless_runnable(v)
    n = 100_003
    for pairs in (False, True):
        plan = v.run(n, pairs, v.launch_params())
        assert plan.kept.enabled
        for label, keys in _key_sets(rng, n):
            d = cuda.to_device(keys)
            vals = cuda.to_device(np.arange(n, dtype=np.uint32)) if pairs else None
            results = []
            for enabled in (True, False, True):
                plan.kept = KeptLaunches(enabled=enabled)
                k, vv = plan.sort(d, vals)
                results.append((k.copy_to_host(), None if vv is None else vv.copy_to_host()))
            assert all(np.array_equal(r[0], np.sort(keys)) for r in results), label
            if pairs:
                assert all(np.array_equal(r[1], np.argsort(keys, kind="stable")) for r in results), label
        if not pairs:
            dp = host.distinct_plan(plan)
            keys = rng.integers(0, n // 2, n).astype(np.uint32)
            want = np.unique(keys)
            for enabled in (True, False):
                dp.kept = KeptLaunches(enabled=enabled)
                out, count = dp.run(cuda.to_device(keys))
                assert count == want.size and np.array_equal(out.copy_to_host()[:count], want)


def test_kept_readback_copies_and_refuses_another_shape():
    _cupy()
    from numba import cuda

    from gpulab import device

    back = device.Readback(5, np.int32)
    src = cuda.to_device(np.arange(5, dtype=np.int32) * 7)
    start = back.kept(src)
    assert start is not None
    assert np.array_equal(start()(), np.arange(5) * 7)
    src.copy_to_device(np.arange(5, dtype=np.int32) - 3)
    assert np.array_equal(start()(), np.arange(5) - 3), "a second copy from the same source"
    with pytest.raises(ValueError, match="must match"):
        back.kept(cuda.to_device(np.zeros(4, np.int32)))
    with pytest.raises(ValueError, match="must match"):
        back.kept(cuda.to_device(np.zeros(5, np.float32)))


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_what_the_short_way_refuses_still_works_or_is_named(backend, rng):
    """On a GPU: int32 keys, a named stream and an `out=` take the full path and are right;
    a strided array is one `ShapeError` naming the layout."""
    cp = _cupy()
    v = REGISTRY.get("onesweep", backend)
    skip_unless_runnable(v)
    n = 5003
    keys = rng.integers(-2**31, 2**31, n).astype(np.int32)
    assert np.array_equal(cp.asnumpy(rx.sort(cp.asarray(keys), None, backend)), np.sort(keys))
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    c = cp.asarray(u)
    s = cp.cuda.Stream(non_blocking=True)
    got = rx.sort(c, None, backend, stream=s)
    s.synchronize()
    assert np.array_equal(cp.asnumpy(got), np.sort(u))
    out = cp.empty(n, np.uint32)
    assert rx.sort(c, None, backend, out=out) is out and np.array_equal(cp.asnumpy(out), np.sort(u))
    wide = cp.asarray(np.repeat(u, 2))
    with pytest.raises(ShapeError, match="non-contiguous"):
        rx.sort(wide[::2], None, backend)


def test_kept_launches_run_in_another_thread(rng):
    """A plan made, and its launches kept, in one thread sorts in another thread that has never
    launched anything (numba: the kept launches and the kept copy make numba's context current
    there, as numba's own launch does); the public call there is right too. CUDA C is left
    out: pycuda's context belongs to the thread that made it, and a new thread could not launch
    through it before the kept launches either."""
    import threading

    cp = _cupy()
    from numba import cuda

    v = REGISTRY.get("onesweep", "numba")
    n = 300_007
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    d, c = cuda.to_device(keys), cp.asarray(keys)
    plan = v.run(n, False, v.launch_params())
    assert np.array_equal(plan.sort(d)[0].copy_to_host(), np.sort(keys))  # (the launches kept here)
    got = {}

    def work():
        try:
            got["plan"] = plan.sort(d)[0].copy_to_host()
            got["public"] = cp.asnumpy(rx.sort(c, None, "numba"))
        except Exception as e:  # noqa: BLE001 (reported below, with its type)
            got["error"] = e

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert "error" not in got, repr(got.get("error"))
    assert np.array_equal(got["plan"], np.sort(keys)) and np.array_equal(got["public"], np.sort(keys))
