"""`gpulab.launch.launch_numba`: numba's launch with the arguments flattened by gpulab after
the first call. Every call must do what ``kernel[grid, block, stream, shared](*args)`` does:
the same results for arrays of every layout it takes (1-D, 2-D C and F order, slices that
start inside their buffer, empty arrays), scalars of every width, on the default stream and
another; and numba's own launch for what it does not flatten (host arrays, which numba copies
back). On the simulator it is numba's launch; on a GPU the second and later calls take the
fast path, which these tests check by calling each case three times with fresh inputs."""

import weakref

import numpy as np
import pytest

from gpulab import launch
from gpulab.device import on_simulator

from numba import cuda  # noqa: E402  (after gpulab)


@cuda.jit
def _mix(out, a, b2, f2, n, scale, shift, flag, k8):
    """out[i] = a[i] * scale + shift + row sums of b2 and f2 (2-D, C and F order) + k8, or
    -out[i] when flag is False; threads past n write nothing."""
    i = cuda.grid(1)
    if i < n:
        s = a[i] * scale + shift + k8
        for j in range(b2.shape[1]):
            s += b2[i, j]
        for j in range(f2.shape[1]):
            s += f2[i, j]
        out[i] = s if flag else -s


@cuda.jit
def _count(x, out):
    """out[0] = x.size, out[1] = x[0] if any (an empty array's launch must not fault)."""
    if cuda.grid(1) == 0:
        out[0] = x.size
        out[1] = x[0] if x.size else -1


def _case(rng, n):
    a = rng.random(n + 7)
    b2 = rng.random((n, 3))
    f2 = np.asfortranarray(rng.random((n, 2)))
    return a, b2, f2


@pytest.mark.parametrize("n", [1, 31, 32, 33, 257])
@pytest.mark.parametrize("stream_kind", ["default", "stream"])
def test_every_call_matches_numbas_launch(rng, n, stream_kind):
    stream = 0 if stream_kind == "default" else cuda.stream()
    for call in range(3):  # the first call is numba's launch; later ones the flattened arguments (on a GPU)
        a, b2, f2 = _case(rng, n)
        off = int(rng.integers(1, 7))  # a slice starting inside its buffer: the pointer must carry the offset
        d_a = cuda.to_device(a)[off:off + n]
        d_b2, d_f2 = cuda.to_device(b2), cuda.to_device(f2)
        d_out = cuda.to_device(np.full(n + 1, np.nan))  # poisoned, one element past n to see overruns
        scale, shift, flag = np.float32(rng.random() + 0.5), float(rng.random()), bool(call % 2 == 0)
        k8 = np.int8(rng.integers(-100, 100))
        launch.launch_numba(_mix, (n + 31) // 32, 32, d_out, d_a, d_b2, d_f2, np.int32(n), scale, shift, flag, k8,
                            stream=stream)
        if stream:
            stream.synchronize()
        want = a[off:off + n] * np.float64(scale) + shift + k8 + b2.sum(axis=1) + f2.sum(axis=1)
        got = d_out.copy_to_host()
        np.testing.assert_allclose(got[:n], want if flag else -want, rtol=1e-6)
        assert np.isnan(got[n]), "a thread past n wrote"


def test_empty_and_one_element_arrays(rng):
    for x in (np.zeros(0, np.int64), rng.integers(1, 99, 1), np.zeros(0, np.int64), rng.integers(1, 99, 5)):
        out = cuda.to_device(np.full(2, -7, np.int64))
        launch.launch_numba(_count, 1, 32, cuda.to_device(x), out)
        assert out.copy_to_host().tolist() == [x.size, x[0] if x.size else -1]


def test_host_arrays_take_numbas_launch_and_come_back(rng):
    """A numpy argument is numba's to copy to the device and back: never flattened."""
    for _ in range(3):
        n = int(rng.integers(1, 50))
        a, b2, f2 = _case(rng, n)
        out = np.full(n, np.nan)
        launch.launch_numba(_mix, 1, 64, out, a, b2, f2, n, 1.0, 0.0, True, 0)
        np.testing.assert_allclose(out, a[:n] + b2.sum(axis=1) + f2.sum(axis=1), rtol=1e-12)


@cuda.jit
def _store(out, v):
    if cuda.grid(1) == 0:
        out[0] = v


def test_python_ints_beyond_int64_arrive_as_numbas_own_launch_passes_them(rng):
    """numba types a Python int by its value: int64, or uint64 from 2**63. Small ints first,
    then large ones, then small again: every value arrives as numba's own launch of the same
    kernel passes it, right after (a plan made for int64 would carry 2**63 + x as the negative
    -2**63 + x; the kernel stores the value as a float64, so the two differ). On the simulator
    both are Python's exact value. (On an H100, numba-cuda 0.30.4's own launch passed such a
    value to the int64 overload compiled first, as -2**63 + x: gpulab's launch does the same,
    no more.)"""
    out, ref = cuda.to_device(np.zeros(1, np.float64)), cuda.to_device(np.zeros(1, np.float64))
    small = [int(x) for x in rng.integers(0, 2**62, 3)]
    large = [2**63 + int(x) for x in rng.integers(0, 2**62, 3)]
    for v in small + large + small:
        launch.launch_numba(_store, 1, 32, out, v)
        _store[1, 32](ref, v)
        assert out.copy_to_host()[0] == ref.copy_to_host()[0], v
        if v < 2**63 or on_simulator():
            assert out.copy_to_host()[0] == pytest.approx(float(v), rel=1e-12)


def test_strided_arrays_take_numbas_launch(rng):
    """A strided view (layout 'A') is numba's to pass: the same result on every call."""
    for _ in range(3):
        n = int(rng.integers(1, 60))
        a, b2, f2 = _case(rng, 2 * n)
        d_a = cuda.to_device(a)[: 2 * n: 2]
        out = cuda.to_device(np.full(n, np.nan))
        launch.launch_numba(_mix, 1, 128, out, d_a, cuda.to_device(b2[:n]), cuda.to_device(np.asfortranarray(f2[:n])),
                            np.int32(n), np.float32(1), 0.0, True, np.int8(0))
        np.testing.assert_allclose(out.copy_to_host(), a[: 2 * n: 2] + b2[:n].sum(axis=1) + f2[:n].sum(axis=1),
                                   rtol=1e-12)


def _plan(kernel, args):
    return launch._FAST_PLANS[kernel][tuple(map(launch._type_key, args))]


@pytest.mark.skipif(on_simulator(), reason="the flattened launch runs on a GPU; the simulator takes numba's")
def test_a_plan_is_kept_per_argument_types_and_none_where_numba_must_launch(rng):
    """After the first call with given types the fast path's plan is kept; a host array or a
    strided view in the same position has none (numba's launch, always)."""
    n = 40
    a, b2, f2 = _case(rng, n)
    args = (cuda.to_device(np.zeros(n)), cuda.to_device(a), cuda.to_device(b2), cuda.to_device(f2), np.int32(n),
            np.float32(1), 0.0, True, np.int8(0))
    for _ in range(2):
        launch.launch_numba(_mix, 2, 32, *args)
    plan = _plan(_mix, args)
    assert plan is not None
    # the driver's cuLaunchKernel with one packed buffer: the struct layout matched the
    # driver's offsets of the kernel's parameters (an int8, a bool and a float32 among them)
    assert plan.packer is not None and plan.function, "the flattened launch fell back to cuda.core"
    for other in (np.zeros(n), cuda.to_device(np.zeros(2 * n))[::2]):
        changed = (other,) + args[1:]
        launch.launch_numba(_mix, 2, 32, *changed)
        assert _plan(_mix, changed) is None


@pytest.mark.skipif(on_simulator(), reason="the flattened launch runs on a GPU; the simulator takes numba's")
def test_the_plans_hold_their_kernels_weakly():
    """The plans add no strong reference to a kernel: neither the table (weak in its keys) nor
    a plan (the compiled overload and the converters) refers to it, so a kernel its owner
    drops is kept alive by nothing of gpulab's. (numba-cuda 0.30.4 itself keeps a launched
    kernel alive: measured on an H100 host, with numba's own launch too.)"""
    import gc

    def body(out):
        if cuda.grid(1) == 0:
            out[0] = 7

    kern = cuda.jit(body)
    out = cuda.to_device(np.zeros(1, np.int64))
    for _ in range(2):
        launch.launch_numba(kern, 1, 32, out)
    assert out.copy_to_host()[0] == 7
    plans = launch._FAST_PLANS[kern]
    assert isinstance(launch._FAST_PLANS, weakref.WeakKeyDictionary) and plans
    for plan in plans.values():
        assert plan is not None
        assert all(x is not kern for x in gc.get_referents(plan.overload)) and kern not in plan.converters
    assert all(x is not kern for x in gc.get_referents(launch._FAST_PLANS.data))


@pytest.mark.skipif(on_simulator(), reason="the flattened launch runs on a GPU; the simulator takes numba's")
def test_without_the_drivers_entry_point_the_flattened_arguments_go_through_cuda_core(rng, monkeypatch):
    """Where `cuLaunchKernel` cannot be looked up, a plan has no packer and its flattened
    arguments go through `cuda.core.launch`: the same results, call after call."""
    monkeypatch.setattr(launch, "_DRIVER", [None])

    def body(out, a, n, scale, k8, flag):
        i = cuda.grid(1)
        if i < n:
            out[i] = a[i] * scale + k8 if flag else -a[i]

    kern = cuda.jit(body)
    for call in range(3):
        n = int(rng.integers(1, 200))
        a = rng.random(n)
        out = cuda.to_device(np.full(n + 1, np.nan))
        scale, k8, flag = np.float32(rng.random() + 0.5), np.int8(rng.integers(-100, 100)), bool(call % 2)
        launch.launch_numba(kern, (n + 31) // 32, 32, out, cuda.to_device(a), np.int32(n), scale, k8, flag)
        got = out.copy_to_host()
        np.testing.assert_allclose(got[:n], a * np.float64(scale) + k8 if flag else -a, rtol=1e-6)
        assert np.isnan(got[n])
    plan = _plan(kern, (out, cuda.to_device(a), np.int32(n), scale, k8, flag))
    assert plan is not None and plan.packer is None


@cuda.jit
def _padded(flag, k8, out, scale, n):
    """Small scalars before an array and a float32 before an int32: the packer must pad as the
    kernel's parameters are laid out."""
    i = cuda.grid(1)
    if i < n:
        out[i] = (i * scale + k8) if flag else -1.0


@pytest.mark.skipif(on_simulator(), reason="the flattened launch runs on a GPU; the simulator takes numba's")
def test_padding_before_an_array_and_the_stream_each_launch_names(rng, monkeypatch):
    """A bool and an int8 before an array: the plan's layout check passes (the packer pads
    them as the driver lays the parameters out) and the results are right; each packed launch
    goes to the stream it names (0 or the numba stream's own handle)."""
    stream = cuda.stream()
    seen = []
    real = launch._raw_launch
    monkeypatch.setattr(launch, "_raw_launch", lambda f, dims, s, buf, size: (seen.append(s), real(f, dims, s, buf, size)))
    for call in range(4):
        n = int(rng.integers(1, 300))
        out = cuda.to_device(np.full(n + 1, np.nan, np.float32))
        k8, scale = np.int8(rng.integers(-100, 100)), np.float32(rng.random() + 0.5)
        s = stream if call % 2 else 0
        launch.launch_numba(_padded, (n + 63) // 64, 64, True, k8, out, scale, np.int32(n), stream=s)
        if s:
            stream.synchronize()
        got = out.copy_to_host()
        np.testing.assert_allclose(got[:n], np.arange(n) * np.float64(scale) + k8, rtol=1e-6)
        assert np.isnan(got[n])
    plan = _plan(_padded, (True, k8, out, scale, np.int32(n)))
    assert plan is not None and plan.packer is not None
    h = int(stream.handle)
    assert seen == [h, 0, h]  # calls 1 to 3 (the first, which made the plan, was numba's own)


@pytest.mark.skipif(on_simulator(), reason="the flattened launch runs on a GPU; the simulator takes numba's")
def test_a_thread_that_never_launched_through_numba_uses_the_kept_plan(rng):
    """A plan made on the main thread, used first from a new thread on stream 0: the launch
    makes numba's context current there (a context-free kernel runs in the current context)."""
    import threading

    n = 97
    out = cuda.to_device(np.zeros(n + 1, np.float32))
    for _ in range(2):
        launch.launch_numba(_padded, 2, 64, True, np.int8(3), out, np.float32(2), np.int32(n))
    cuda.synchronize()
    errors = []

    def work():
        try:
            launch.launch_numba(_padded, 2, 64, True, np.int8(5), out, np.float32(1), np.int32(n))
            cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors, errors
    np.testing.assert_allclose(out.copy_to_host()[:n], np.arange(n) + 5.0)
