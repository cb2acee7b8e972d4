"""`out=` of `gpulab.radix.sort` / `sort_pairs` for every key dtype (uint32, int32, float32) and
every value dtype (uint32, int32, float32): numpy and device `out`, `out` that is the input (an
in-place sort), and a wrong `out` (one `GpulabError` naming the argument, `out` untouched).

Each `out` is poisoned first with bits no correct result holds; results are checked bit for bit
against numpy's stable argsort, with what the module promises for floats: -0.0 and +0.0 equal
(input order kept, returned as +0.0), NaNs of any sign and payload last, after +inf, in input
order, returned as the NaN 0x7FFFFFFF; values moved bit for bit (NaN payloads included).

On the simulator the public sort runs radix4_shared (32-key tiles, 4-bit digits) and stops after
the highest digit of its largest ordered key: a simulated pass costs about a second per tile, so
integer keys here have few significant ordered bits (int32 keys near -2**31: negative, 1 to 3
passes) and only float keys, whose order needs the top bit, pay all 8 passes, at one tile.
On a GPU both backends' default (onesweep) runs.
"""

import numpy as np
import pytest
from numba import cuda

import gpulab.radix as rx
from gpulab.errors import DtypeError, GpulabError, ShapeError
from gpulab.radix.variants import REGISTRY
from tests.conftest import ON_SIMULATOR, device_only, skip_unless_runnable

BACKENDS = ["numba"] if ON_SIMULATOR else ["numba", "cuda-c"]
INT32_MIN = np.int32(-2**31)
POISON = np.uint32(0xFFFFFFFF)  # a NaN with a payload as float32, -1 as int32: held by no result below


def runnable(backend):
    """Skip (naming the reason) where the backend's default variant cannot run."""
    skip_unless_runnable(REGISTRY.get(REGISTRY.default(backend), backend))


# ----------------------------------------------------------------------------- inputs


def uint32_keys(rng, n, kind):
    """`"ties"`: 4-bit keys (one simulated pass) with repeats; `"low_byte"`: keys sharing one
    random low byte, decided by bits 8 to 11 (three passes, the first two move nothing)."""
    if kind == "ties":
        return rng.integers(0, 16, n, dtype=np.uint32)
    return (rng.integers(0, 16, n, dtype=np.uint32) << np.uint32(8)) | np.uint32(rng.integers(0, 256))


def int32_keys(rng, n, bits):
    """Negative keys within 2**bits of -2**31 (ordered: sign bit flipped, `bits` significant bits),
    -2**31 itself among them, drawn from few values (ties)."""
    pool = INT32_MIN + rng.choice(2**bits, max(2, n // 4), replace=False).astype(np.int32)
    pool[0] = INT32_MIN
    k = rng.choice(pool, n)
    k[rng.integers(0, n)] = INT32_MIN
    return k


NAN_BITS = [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF, 0x7FC0BEEF]  # quiet, negative, signalling, payloads


def float32_keys(rng, n):
    """At least two -0.0 and two +0.0, three NaNs of different bits, +-inf, and the rest from
    few values of both signs (ties); shuffled."""
    assert n >= 9
    special = np.array([0x80000000, 0, 0x80000000, 0, 0x7F800000, 0xFF800000], np.uint32).view(np.float32)
    nans = np.array(rng.choice(NAN_BITS, 3, replace=False), np.uint32).view(np.float32)
    pool = np.concatenate([-(rng.integers(1, 5, 3)), rng.integers(1, 5, 3)]).astype(np.float32) * np.float32(1.5)
    k = np.concatenate([special, nans, rng.choice(pool, n - 9)]).astype(np.float32)
    return k[rng.permutation(n)]


def keys_of(dtype, rng, n):
    """Keys of `dtype` (few ordered bits for the integer ones) whose premises are asserted."""
    if n == 1:  # one key whose result is not its input bits (floats) or not its ordered bits (int32)
        return {"uint32": np.array([rng.integers(1, 2**32 - 1)], np.uint32),
                "int32": np.array([rng.integers(-2**31, 0)], np.int32),
                "float32": np.array([rng.choice([0x80000000, *NAN_BITS])], np.uint32).view(np.float32)}[dtype]
    low_byte = n <= 64  # over several tiles the keys take one pass (4-bit ties)
    k = {"uint32": lambda: uint32_keys(rng, n, "low_byte" if low_byte else "ties"), "int32": lambda: int32_keys(rng, n, 8),
         "float32": lambda: float32_keys(rng, n)}[dtype]()
    assert len(np.unique(k)) < n, "premise: ties among the keys"
    if dtype == "uint32" and low_byte:
        assert len(np.unique(k & 0xFF)) == 1 and len(np.unique(k)) > 1, "premise: one low byte, several keys"
    if dtype == "int32":
        assert (k < 0).all() and (k == INT32_MIN).any()
    if dtype == "float32":
        bits = k.view(np.uint32)
        assert (bits == 0x80000000).sum() >= 2 and (bits == 0).sum() >= 2 and np.isnan(k).sum() >= 3
        assert (k < 0).any() and (k > 0).any()
    return k


def values_of(vdtype, rng, n):
    """Distinct values of `vdtype` (so a wrong permutation shows), none with the poison's bits;
    float32 values include NaNs whose payloads must travel unchanged."""
    bits = rng.choice(2**32 - 1, n, replace=False).astype(np.uint32)  # never 0xFFFFFFFF
    if vdtype == "float32":
        m = min(n, len(NAN_BITS))
        bits[rng.choice(n, m, replace=False)] = NAN_BITS[:m]
        assert len(np.unique(bits)) == n, "premise: distinct values"
    return bits.view(vdtype)


# ----------------------------------------------------------------------------- the reference


def expected(keys, values=None):
    """numpy's stable order; the keys' bits as `sort` returns them (-0.0 as +0.0, NaN as 0x7FFFFFFF)."""
    order = np.argsort(keys, kind="stable")
    k = keys[order].copy()
    if k.dtype == np.float32:
        bits = k.view(np.uint32)
        bits[np.isnan(k)] = 0x7FFFFFFF
        bits[k == 0] = 0
    return k.view(np.uint32), None if values is None else values[order].view(np.uint32)


def poisoned(where, n, dtype):
    """An `out` of `n` elements of `dtype`, every byte 0xFF (POISON): numpy, or a device array
    (numba's; the simulator's there)."""
    host = np.empty(n, dtype)
    host.view(np.uint8)[:] = 0xFF
    return host if where == "numpy" else cuda.to_device(host)


def bits_of(a):
    return (a if isinstance(a, np.ndarray) else a.copy_to_host()).view(np.uint32)


def check(got, want, what):
    assert not (want == POISON).any(), "premise: no result holds the poison's bits"
    bad = np.nonzero(got != want)[0]
    assert not bad.size, (f"{what}: {bad.size} of {want.size} differ, first at {bad[0]}: "
                          f"{got[bad[0]]:#010x} instead of {want[bad[0]]:#010x}")


# ----------------------------------------------------------------------------- sort(out=)

# (key dtype, out on, n): every key dtype with a numpy and a device `out`, at one key and at a
# tile's edges (31, 32, 33) or over several tiles (97, cheap keys only)
SORT_CASES = [(d, w, 1) for d in ("uint32", "int32", "float32") for w in ("numpy", "device")] + [
    ("uint32", "numpy", 97), ("uint32", "device", 32), ("int32", "numpy", 33), ("int32", "device", 31)]
# (float keys past one: the pairs below, at 31 and 33; every float sort takes all 8 passes here)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,where,n", SORT_CASES)
def test_sort_out_is_filled_and_returned(dtype, where, n, backend, rng):
    runnable(backend)
    keys = keys_of(dtype, rng, n)
    before = keys.copy()
    out = poisoned(where, n, dtype)
    # a numpy `out` with numpy keys (the plan's result copied to the host), a device `out` with
    # device keys (the last pass writes it, the keys' transform undone there)
    got = rx.sort(keys if where == "numpy" else device_only(keys), backend=backend, out=out)
    assert got is out, "sort(out=...) did not return the caller's array"
    check(bits_of(out), expected(keys)[0], f"{dtype} keys, {where} out, n={n}")
    assert np.array_equal(keys.view(np.uint32), before.view(np.uint32)), "the input changed"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,where,n", [("int32", "device", 32), ("int32", "numpy", 31), ("float32", "numpy", 1)])
def test_in_place_sort(dtype, where, n, backend, rng):
    """`out=keys`: for int32 / float32 keys the first pass reads their ordered copy, so the last
    pass may write the keys (device); numpy keys are copied in first."""
    runnable(backend)
    keys = keys_of(dtype, rng, n)
    if dtype == "int32":  # 12 significant ordered bits: three passes on the simulator
        keys = int32_keys(rng, n, 12)
    want = expected(keys)[0]
    assert not np.array_equal(keys.view(np.uint32), want), "premise: the keys are not already sorted"
    buf = keys.copy() if where == "numpy" else cuda.to_device(keys)
    assert rx.sort(buf, backend=backend, out=buf) is buf
    check(bits_of(buf), want, f"in-place {dtype}, {where}, n={n}")


# ----------------------------------------------------------------------------- sort_pairs(out=)

# (key dtype, value dtype, out on, n): each value dtype with each kind of `out`
PAIRS_CASES = [
    ("uint32", "int32", "numpy", 33),      # numpy keys and values, numpy outs
    ("uint32", "int32", "in-place", 33),   # uint32 keys: the first pass reads both inputs where they lie
    ("int32", "float32", "device", 33),    # device inputs, device outs written by the last pass
    ("uint32", "uint32", "mixed", 32),     # device keys' out, numpy values' out
    ("float32", "uint32", "in-place", 31),  # out=(keys, values) on the device: the values are read where they lie
    ("uint32", "float32", "in-place-numpy", 32),  # numpy arrays as their own outs
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kdtype,vdtype,where,n", PAIRS_CASES)
def test_sort_pairs_out_is_filled_and_returned(kdtype, vdtype, where, n, backend, rng):
    runnable(backend)
    keys = keys_of(kdtype, rng, n) if kdtype != "uint32" or n == 1 else uint32_keys(rng, n, "ties")
    vals = values_of(vdtype, rng, n)
    want_k, want_v = expected(keys, vals)
    if where.startswith("in-place"):
        assert not np.array_equal(keys.view(np.uint32), want_k), "premise: the keys are not already sorted"
    if where == "in-place":
        ko, vo = cuda.to_device(keys), cuda.to_device(vals)
        args = (ko, vo)
    elif where == "in-place-numpy":
        ko, vo = keys.copy(), vals.copy()
        args = (ko, vo)
    else:
        ko = poisoned("numpy" if where == "numpy" else "device", n, kdtype)
        vo = poisoned("device" if where == "device" else "numpy", n, vdtype)
        args = (keys, vals) if where == "numpy" else (device_only(keys), device_only(vals))
    got = rx.sort_pairs(*args, backend=backend, out=(ko, vo))
    assert got[0] is ko and got[1] is vo, "sort_pairs(out=...) did not return the caller's pair"
    check(bits_of(ko), want_k, f"{kdtype} keys, {where} out, n={n}")
    check(bits_of(vo), want_v, f"{vdtype} values, {where} out, n={n}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,bits", [("split1_global", 1), ("local4", 4)])
def test_in_place_pairs_where_one_pass_reads_and_writes(name, bits, backend, rng):
    """out=(keys, values) with keys of one digit: the only pass of these variants reads the
    inputs and scatters in the same kernel, so writing `out` there would overwrite keys not yet
    read; the sort must see the overlap and go through its own buffers. (radix4_shared and
    onesweep never write `out` from a pass that reads the input: the cases above cannot tell.)"""
    v = REGISTRY.get(name, backend)
    skip_unless_runnable(v)
    lp = v.launch_params()  # (split1_global has no BLOCK: its scan's block sets the tiles)
    n = 97 if ON_SIMULATOR else 3 * lp.get("BLOCK", lp.get("SCAN_BLOCK", 256)) * lp.get("ITEMS", 1) + 11
    keys = rng.integers(0, 2**bits, n, dtype=np.uint32)  # one pass of `bits`-bit digits
    vals = values_of("float32", rng, n)
    want_k, want_v = expected(keys, vals)
    assert not np.array_equal(keys, want_k), "premise: the keys are not already sorted"
    dk, dv = cuda.to_device(keys), cuda.to_device(vals)
    got = rx.sort_pairs(dk, dv, name, backend, out=(dk, dv))
    assert got[0] is dk and got[1] is dv
    check(bits_of(dk), want_k, f"{name}: in-place keys, n={n}")
    check(bits_of(dv), want_v, f"{name}: in-place values, n={n}")


# ----------------------------------------------------------------------------- a wrong out


def test_wrong_out_is_one_error_naming_the_argument(rng):
    """Checked before any launch, for int32 / float32 keys and int32 / float32 values (the
    same-size dtypes a bit copy would silently accept): shape, dtype, contiguity, writability.
    The error names `out` / `out[0]` / `out[1]` and what was expected; `out` keeps its poison."""
    n = 12
    ik, fk = int32_keys(rng, n, 8), float32_keys(rng, n)
    iv, fv = values_of("int32", rng, n), values_of("float32", rng, n)
    dev = lambda n_, dt: poisoned("device", n_, dt)  # noqa: E731
    host = lambda n_, dt: poisoned("numpy", n_, dt)  # noqa: E731
    readonly = host(n, np.float32)
    readonly.flags.writeable = False
    cases = [  # (call, out arrays, error class, the argument named, the text)
        (lambda o: rx.sort(ik, out=o), dev(n, np.uint32), DtypeError, "out must be", "dtype int32"),
        (lambda o: rx.sort(device_only(fk), out=o), dev(n, np.int32), DtypeError, "out must be", "dtype float32"),
        (lambda o: rx.sort(fk, out=o), host(n, np.float64), DtypeError, "out must be", "got dtype float64"),
        (lambda o: rx.sort(device_only(ik), out=o), dev(n - 1, np.int32), ShapeError, "out must be", f"shape ({n},)"),
        (lambda o: rx.sort(fk, out=o), host(n + 1, np.float32), ShapeError, "out must be", f"got shape ({n + 1},)"),
        (lambda o: rx.sort(ik, out=o), host(2 * n, np.int32)[::2], ShapeError, "out must be", "non-contiguous"),
        (lambda o: rx.sort(device_only(fk), out=o), dev(2 * n, np.float32)[::2], ShapeError, "out must be",
         "non-contiguous"),
        (lambda o: rx.sort(fk, out=o), readonly, ShapeError, "out must be", "read-only"),
        (lambda o: rx.sort_pairs(ik, fv, out=o), (host(n, np.int32), host(n, np.int32)), DtypeError, "out[1] must be",
         "dtype float32"),
        (lambda o: rx.sort_pairs(device_only(fk), device_only(iv), out=o), (dev(n, np.uint32), dev(n, np.int32)),
         DtypeError, "out[0] must be", "dtype float32"),
        (lambda o: rx.sort_pairs(ik, iv, out=o), (dev(2 * n, np.int32)[::2], dev(n, np.int32)), ShapeError,
         "out[0] must be", "non-contiguous"),
        (lambda o: rx.sort_pairs(fk, iv, out=o), (host(n, np.float32), dev(n + 1, np.int32)), ShapeError,
         "out[1] must be", f"shape ({n},)"),
    ]
    for call, o, kind, name, text in cases:
        with pytest.raises(kind) as info:
            call(o)
        msg = str(info.value)
        assert isinstance(info.value, GpulabError) and "\n" not in msg, msg
        assert msg.startswith(name) and text in msg, msg
        for a in (o if isinstance(o, tuple) else (o,)):
            assert (bits_of(np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a) == POISON).all(), \
                f"{msg}: out was written before the error"


# ----------------------------------------------------------------------------- numba's arrays in device_input


@pytest.mark.skipif(ON_SIMULATOR, reason="the simulator's arrays are not numba's DeviceNDArray: device_input "
                                         "returns them as they are before this path")
def test_device_input_takes_numba_arrays_as_they_are_unless_asked_to_wait():
    """GPU only: a C-contiguous numba array is not re-wrapped (the `out=` and inputs above go
    through this in `_take`), except where a wait is asked for and it is bound to a stream:
    then it is wrapped (`cuda.as_cuda_array`, which waits on that stream) as before."""
    from gpulab.arrays import device_input

    plain = cuda.to_device(np.arange(8, dtype=np.uint32))
    s = cuda.stream()
    bound = cuda.to_device(np.arange(8, dtype=np.uint32), stream=s)
    s.synchronize()
    taken = device_input(plain, "x")
    assert taken.array is plain and taken.on_device and taken.library == "numba"
    assert device_input(bound, "x", sync=False).array is bound
    wrapped = device_input(bound, "x").array
    assert wrapped is not bound and wrapped.device_ctypes_pointer.value == bound.device_ctypes_pointer.value
    with pytest.raises(ShapeError, match="x is a non-contiguous device array"):
        device_input(cuda.device_array(16, np.uint32)[::2], "x")
