"""A slow stand-in for the warp intrinsics numba's simulator lacks (match_any_sync, syncwarp,
ballot_sync, popc is already there), so the warp-ranking kernels' *logic* can be checked on a
CPU. Every lane of a warp meets at a barrier per call, as the hardware's convergence would have
it. It is only a test aid: the real kernels still run on the GPU and compile to PTX in CI.
"""

from __future__ import annotations

import contextlib
import threading

_lock = threading.Lock()
_warps: dict = {}


def _warp_state():
    t = threading.current_thread()
    key = (id(t._manager), tuple(t.blockIdx), t.thread_id // 32)
    with _lock:
        st = _warps.get(key)
        if st is None:
            st = _warps[key] = {"barrier": threading.Barrier(32), "vals": [None] * 32}
    return st, t.thread_id % 32


def _exchange(value):
    st, lane = _warp_state()
    st["vals"][lane] = value
    st["barrier"].wait()
    vals = list(st["vals"])
    st["barrier"].wait()
    return vals, lane


def match_any_sync(self, mask, value):
    vals, lane = _exchange(value)
    return sum(1 << j for j, v in enumerate(vals) if v == vals[lane])


def ballot_sync(self, mask, pred):
    vals, _ = _exchange(bool(pred))
    return sum(1 << j for j, v in enumerate(vals) if v)


def shfl_sync(self, mask, value, src_lane):
    vals, _ = _exchange(value)
    return vals[src_lane % 32]


def syncwarp(self, mask=0xFFFFFFFF):
    st, _ = _warp_state()
    st["barrier"].wait()


@contextlib.contextmanager
def installed():
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    saved = {n: getattr(FakeCUDAModule, n, None) for n in ("match_any_sync", "ballot_sync", "syncwarp", "shfl_sync")}
    FakeCUDAModule.match_any_sync = match_any_sync
    FakeCUDAModule.ballot_sync = ballot_sync
    FakeCUDAModule.syncwarp = syncwarp
    FakeCUDAModule.shfl_sync = shfl_sync
    try:
        yield
    finally:
        _warps.clear()
        for n, f in saved.items():
            if f is None:
                delattr(FakeCUDAModule, n)
            else:
                setattr(FakeCUDAModule, n, f)
