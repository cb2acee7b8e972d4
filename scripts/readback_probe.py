"""How long the host spends queueing a small device-to-host readback, with the GPU idle and busy.

Chapter 4's onesweep copies 4 KB of digit offsets back before it decides which passes run
(`gpulab.device.Readback.start`: numba's `device_to_host` into page-locked memory, then an
event). `scripts/radix_call_probe.py --readback` saw that queueing take 15-24 us of host time
with the GPU idle and 46-66 us right after a sort was queued. This separates the pieces, each
the median host us over --calls calls, idle (after a synchronization) and busy (behind a kernel
that sleeps for about --busy-us):

  numba copy     gpulab.device._copy_back (numba's device_to_host, cuMemcpyDtoHAsync)
  cupy copy      cupy.cuda.runtime.memcpyAsync of the same bytes into the same pinned buffer
  event          recording the Readback's event alone
  readback       Readback.start (copy and event), as the sort queues it
  mapped write   a one-block kernel that writes the bytes into mapped host memory, then the event

    python scripts/readback_probe.py --json readback.json
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gpulab import device  # noqa: F401  (before numba)
from numba import cuda  # noqa: E402
from gpulab.benchmark import write_record  # noqa: E402


@cuda.jit
def _spin(micros, out):
    for _ in range(micros):  # about a microsecond each (nanosleep's wait is approximate)
        cuda.nanosleep(1000)
    out[0] = 1


@cuda.jit
def _write(src, dst):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = src[i]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=1028, help="int32 words read back (onesweep: 4 x 257)")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--busy-us", type=float, default=500.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    try:
        import cupy
    except ImportError:  # (the simulator's dry run)
        cupy = None

    d_src = cuda.to_device(np.arange(a.words, dtype=np.int32))
    back = device.Readback(a.words, np.int32)
    mapped = cuda.mapped_array(a.words, np.int32)
    flag = cuda.device_array(1, np.int32)
    cycles = np.int32(a.busy_us)
    s0 = cuda.default_stream()
    nbytes = d_src.nbytes

    def numba_copy():
        device._copy_back(d_src, back.host, s0)

    def cupy_copy():
        cupy.cuda.runtime.memcpyAsync(back.host.ctypes.data, d_src.device_ctypes_pointer.value, nbytes,
                                      cupy.cuda.runtime.memcpyDeviceToHost, 0)

    def event():
        back.arrived.record(s0)

    def readback():
        back.start(d_src, s0)

    def mapped_write():
        _write[(a.words + 255) // 256, 256](d_src, mapped)
        back.arrived.record(s0)

    steps = {"numba copy": numba_copy, "cupy copy": cupy_copy, "event": event, "readback": readback,
             "mapped write": mapped_write}
    if cupy is None or device.on_simulator():
        del steps["cupy copy"]
    for f in steps.values():  # compile and warm
        f()
    _spin[1, 1](cycles, flag)
    cuda.synchronize()
    rows = []
    for name, f in steps.items():
        row = {"step": name}
        for busy in (False, True):
            times = []
            for _ in range(a.calls):
                cuda.synchronize()
                if busy:
                    _spin[1, 1](cycles, flag)
                t = time.perf_counter()
                f()
                times.append(1e6 * (time.perf_counter() - t))
                cuda.synchronize()  # (not every step records the event)
            row["busy us" if busy else "idle us"] = statistics.median(times)
        rows.append(row)
        print(f"{name:14} idle {row['idle us']:7.1f} us   busy {row['busy us']:7.1f} us", flush=True)
    cuda.synchronize()
    mapped[:] = -1
    mapped_write()
    back.arrived.synchronize()
    ok = bool(np.array_equal(np.asarray(mapped), np.arange(a.words, dtype=np.int32)))
    print(f"mapped write seen by the host after the event: {ok}")
    if a.json:
        write_record(a.json, "gpulab-readback-probe/1", rows + [{"step": "mapped write checked", "ok": ok}])


if __name__ == "__main__":
    main()
