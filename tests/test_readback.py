"""`gpulab.device.Readback`: a small device result copied into pinned host memory, on the
default stream or behind a stream's work, waited for through its event (simulator or GPU)."""

import numpy as np
import pytest

from gpulab.device import Readback

from numba import cuda  # noqa: E402  (after gpulab)

DTYPES = (np.int32, np.uint32, np.float64, np.uint8)


@cuda.jit
def _fill(a, v):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = v


def _random(rng, shape, dtype):
    """Random values of `dtype` in [0, 100) (so that 200 is none of them)."""
    return rng.integers(0, 100, shape).astype(dtype)


def _streams():
    """The default stream (as 0 and as None) and a created stream."""
    return (0, None, cuda.stream())


@pytest.mark.parametrize("which", ("fetch", "start"))
def test_copies_the_device_array_into_the_pinned_buffer_on_any_stream(rng, which):
    for stream in _streams():
        dtype = DTYPES[int(rng.integers(len(DTYPES)))]
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 7)))
        x = _random(rng, shape, dtype)
        back = Readback(shape, dtype)
        assert back.host.shape == shape and back.host.dtype == dtype
        d = cuda.to_device(x)
        got = back.fetch(d, stream) if which == "fetch" else back.start(d, stream)()
        assert got is back.host and np.array_equal(got, x)


def test_start_copies_behind_earlier_work_and_before_later_work(rng):
    for stream in _streams():
        n = int(rng.integers(2, 40))
        x = _random(rng, n, np.int32)
        back = Readback(n, np.int32)
        d = cuda.to_device(np.full(n, 200, np.int32))
        d2 = cuda.to_device(x)
        _fill[1, 64, stream or 0](d, np.int32(-1))  # queued before the copy: the copy sees it
        back.start(d, stream)()
        assert np.all(back.host == -1)
        wait = back.start(d2, stream)
        _fill[1, 64, stream or 0](d2, np.int32(200))  # queued after the copy: it must not see this
        assert np.array_equal(wait(), x)
        cuda.synchronize()
        assert np.all(d2.copy_to_host() == 200)  # (the later work did run)


def test_the_same_buffer_and_event_serve_every_call(rng):
    n = int(rng.integers(1, 30))
    back = Readback(n, np.float64)
    host, event = back.host, back.arrived
    stream = cuda.stream()
    for i in range(4):
        x = rng.random(n)
        got = back.fetch(cuda.to_device(x), stream if i % 2 else 0)
        assert got is host and back.arrived is event and np.array_equal(got, x)


def test_two_copies_into_views_of_the_buffer_behind_one_event(rng):
    """The distinct pipeline's read: two 1-element copies into the halves of an int32[2]."""
    back = Readback(2, np.int32)
    halves = back.host[:1], back.host[1:]
    for stream in _streams():
        a, b = _random(rng, 2, np.int32)
        da, db = cuda.to_device(np.array([a], np.int32)), cuda.to_device(np.array([b], np.int32))
        back.start(da, stream, into=halves[0])
        got = back.start(db, stream, into=halves[1])()
        assert list(got) == [a, b]


class _Spy:
    """Stands in for the copy (`gpulab.device._copy_back`, called with the device array) and for
    the event: records what they were asked to do."""

    def __init__(self):
        self.calls = []

    def copy(self, d_src, ary, stream):
        self.calls.append(("copy", ary, stream))

    def record(self, stream):
        self.calls.append(("record", stream))


def test_the_default_stream_fetch_is_one_synchronous_copy_and_start_queues_on_a_stream_object(monkeypatch):
    """`fetch` on stream 0 is one synchronous copy (no stream, no event: the subset and GP
    reads stay one driver call); `start` on stream 0/None copies asynchronously on the default
    stream's object (numba would copy synchronously on 0) and records the event there."""
    from gpulab import device

    back = Readback(3, np.int32)
    back.arrived = event = _Spy()
    src = _Spy()
    monkeypatch.setattr(device, "_copy_back", src.copy)
    back.fetch(src)
    back.fetch(src, None)
    assert src.calls == [("copy", back.host, 0)] * 2 and event.calls == []
    for stream in (0, None):
        src.calls.clear()
        event.calls.clear()
        back.start(src, stream)
        (_, ary, s), = src.calls
        assert ary is back.host and s and not isinstance(s, int) and event.calls == [("record", s)]
    created = cuda.stream()
    src.calls.clear()
    event.calls.clear()
    back.start(src, created)
    assert src.calls == [("copy", back.host, created)] and event.calls == [("record", created)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_upload_copies_the_pinned_array_behind_earlier_work(rng, dtype):
    """`upload` queues its copy on the default stream: a kernel launched before it that fills
    the destination runs first, so the uploaded values are what remain."""
    from gpulab.device import upload

    n = int(rng.integers(1, 300))
    d = cuda.device_array(n, dtype)
    pinned = cuda.pinned_array(n, dtype)
    pinned[:] = _random(rng, n, dtype)
    _fill[(n + 127) // 128, 128](d, 200)
    upload(d, pinned)
    assert np.array_equal(d.copy_to_host(), pinned)


def test_upload_queues_on_the_default_streams_object_not_on_stream_0():
    """numba copies synchronously on stream 0 (waiting for the device first): `upload` passes
    the default stream's object, which makes the copy asynchronous."""
    from gpulab.device import upload

    class Dst:
        calls = []

        def copy_to_device(self, ary, stream=0):
            self.calls.append((ary, stream))

    dst, pinned = Dst(), np.zeros(3, np.int32)
    upload(dst, pinned)
    (ary, s), = dst.calls
    assert ary is pinned and s and not isinstance(s, int)


def test_upload_of_nbytes_copies_only_the_first_bytes(rng):
    """`upload(..., nbytes)` (a buffer's used part): the bytes after it keep what was there."""
    from gpulab.device import upload

    n = int(rng.integers(2, 300))
    k = int(rng.integers(1, n))
    d = cuda.to_device(np.full(n, 200, np.uint8))
    pinned = cuda.pinned_array(n, np.uint8)
    pinned[:] = _random(rng, n, np.uint8)
    upload(d, pinned, k)
    got = d.copy_to_host()
    assert np.array_equal(got[:k], pinned[:k]) and np.all(got[k:] == 200)


def test_a_readback_of_another_size_or_a_strided_array_is_refused(rng):
    """The copy is one driver call of the host buffer's bytes, without numba's per-call checks:
    its own check refuses a device array of another size or one that is not contiguous
    (never a partial or overrunning copy)."""
    n = int(rng.integers(2, 50))
    back = Readback(n, np.int32)
    for bad in (cuda.to_device(np.zeros(n + 1, np.int32)), cuda.to_device(np.zeros(n - 1, np.int32)),
                cuda.to_device(np.zeros(n, np.int64)), cuda.to_device(np.zeros(2 * n, np.int32))[::2],
                cuda.to_device(np.zeros(n, np.float32)), cuda.to_device(np.zeros(2 * n, np.int16))):  # (same bytes)
        with pytest.raises(ValueError, match="must match"):
            back.start(bad)
        with pytest.raises(ValueError, match="must match"):
            back.fetch(bad)
    good = _random(rng, n, np.int32)
    assert np.array_equal(back.fetch(cuda.to_device(good)), good)


def test_a_view_that_starts_inside_its_buffer_is_read_from_there(rng):
    """The callers read views such as ``offsets[2P:]`` or ``pos[n-1:n]``: the copy starts at the
    view's first element, on the default stream and on a created one."""
    for stream in _streams():
        n, k = int(rng.integers(1, 20)), int(rng.integers(1, 30))
        big = _random(rng, n + k + int(rng.integers(0, 5)), np.int32)
        back = Readback(n, np.int32)
        back.host[:] = 200  # (no value of _random)
        got = back.fetch(cuda.to_device(big)[k:k + n], stream)
        assert np.array_equal(got, big[k:k + n])
